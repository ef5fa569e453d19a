"""Bind markers in a statement's clauses and unset values: the forms an application's prepared
statements use that the other draws do not make.

- writes with `USING TTL ?`, `USING TIMESTAMP ?` or both (INSERT, UPDATE, DELETE, BATCH), bound
  to a TTL, 0, null, unset (the table's default), a client timestamp, unset (the server's) or
  null, now and then a value Cassandra refuses (a negative TTL, one over 20 years, the minimum
  bigint timestamp, a TTL on a DELETE); on a counter table, refused (and a condition on a
  counter);
- reads with `LIMIT ?` and `PER PARTITION LIMIT ?` bound to 1-4, unset (no limit), now and then
  0 or null; with `writetime()` and `ttl()` of a column at times;
- `k IN ?` on the last partition key column and `c IN ?` on the first clustering column, bound
  to a list of the column's values (an empty list at times, a null element at times, which the
  driver sends empty), in SELECTs and DELETEs (conditional at times: refused);
- unset values where a driver skips a value: a SET term (whole columns, collection additions and
  removals, `m[k] = ?`, `l[i] = ?`), an INSERT value, a filter value, a condition's value, a key
  (refused).

Drawn from a random stream of their own (`ClauseBinds.rng`), so the statements the seed drew
before stay what they were. The reference decides what is valid (expect=None).
"""

import random

from cassandra.query import UNSET_VALUE

from .types import T, draw_value

# The chance that a draw is one of these (from their own stream): about 60 in CI's 1,500.
CLAUSE_CHANCE = 0.04
MIN_BIGINT = -2**63


class ClauseBinds:
    def __init__(self, gen, seed):
        self.gen = gen
        self.rng = random.Random(f"clauses-{seed}")

    def maybe_draw(self):
        """A statement of this family, or None (then the other streams draw as before)."""
        if self.rng.random() >= CLAUSE_CHANCE:
            return None
        g = self.gen
        main, g.rng = g.rng, self.rng
        try:
            t = self.rng.choice(g.tables)
            kind = self.rng.choices(["write_attrs", "limits", "in_marker", "unset"],
                                    weights=[30, 25, 25, 20])[0]
            if t.counter:
                kind = "counter_attrs" if kind == "write_attrs" else "limits"
            elif not t.values and kind in ("write_attrs", "unset"):
                kind = "limits"
            return getattr(self, kind)(t)
        finally:
            g.rng = main

    # ------------------------------------------------------------ helpers

    def _stmt(self, text, term, kind, t, **kw):
        from .statements import Stmt
        return Stmt(text, term.params, expect=None, feature="clause_bind:" + kind, table=t.name,
                    order_types=tuple(c.type.family() for c in t.ck),
                    pk_types=tuple(c.type.family() for c in t.pk), counter_table=t.counter, **kw)

    @staticmethod
    def _terms():
        """Bound values in text order: `term(type, value)` binds a value the driver sends as is
        (a literal otherwise, see statements.bind_safe), `mark(value)` binds any value."""
        from .statements import Terms
        term = Terms(True)

        def mark(v):
            term.params.append(v)
            return "?"
        return term, mark

    def _keys(self, t, cols, term):
        return " AND ".join(f"{c.name} = {term(c.type, self.gen.key_value(t, c))}" for c in cols)

    def _ttl(self):
        rng = self.rng
        r = rng.random()
        if r < 0.4:
            return rng.choice([3600, 86400, 100000])
        if r < 0.55:
            return 0
        if r < 0.7:
            return UNSET_VALUE
        if r < 0.8:
            return None
        return rng.choice([-1, 630720001])

    def _timestamp(self, t):
        r = self.rng.random()
        if r < 0.7:
            return self.gen.next_ts()
        if r < 0.9:
            t.server_ts = True
            return UNSET_VALUE
        return self.rng.choice([None, MIN_BIGINT])

    def _limit(self):
        r = self.rng.random()
        if r < 0.65:
            return self.rng.randint(1, 4)
        if r < 0.85:
            return UNSET_VALUE
        return self.rng.choice([0, None, -1])

    # ------------------------------------------------------------ USING TTL ? / TIMESTAMP ?

    def write_attrs(self, t):
        rng, g = self.rng, self.gen
        term, mark = self._terms()
        form = rng.choice(["insert", "insert", "update", "update", "delete", "batch"])
        attrs = rng.choice(["ttl", "timestamp", "both", "both_reversed"])
        if form == "delete" and attrs != "timestamp" and rng.random() < 0.8:
            attrs = "timestamp"   # a TTL on a DELETE is refused: now and then only
        ttl, ts = self._ttl(), self._timestamp(t)
        if attrs == "ttl":
            t.server_ts = True

        def using():
            if attrs == "ttl":
                return f"USING TTL {mark(ttl)}"
            if attrs == "timestamp":
                return f"USING TIMESTAMP {mark(ts)}"
            if attrs == "both":
                return f"USING TTL {mark(ttl)} AND TIMESTAMP {mark(ts)}"
            return f"USING TIMESTAMP {mark(ts)} AND TTL {mark(ttl)}"
        values = [c for c in t.values if c.role == "reg"] or t.values
        c = rng.choice(values)
        if form in ("insert", "batch"):
            batch_ts = form == "batch" and attrs == "timestamp" and rng.random() < 0.5
            head = f"BEGIN BATCH USING TIMESTAMP {mark(ts)} " if batch_ts else ""
            names = ", ".join(k.name for k in t.keys + [c])
            vals = [term(k.type, g.key_value(t, k)) for k in t.keys] + [term(c.type, g.value_for(t, c))]
            text = f"{head}INSERT INTO {t.name} ({names}) VALUES ({', '.join(vals)})"
            if form == "insert":
                return self._stmt(f"{text} {using()}", term, "write_attrs_insert", t, write=True)
            if batch_ts:
                return self._stmt(f"{text}; APPLY BATCH", term, "write_attrs_batch", t, write=True)
            return self._stmt(f"BEGIN UNLOGGED BATCH {text} {using()}; APPLY BATCH", term, "write_attrs_batch", t,
                              write=True)
        if form == "update":
            text = f"UPDATE {t.name} {using()} SET {c.name} = {term(c.type, g.value_for(t, c))}"
            where = self._keys(t, t.pk if c.role == "static" else t.keys, term)
            return self._stmt(f"{text} WHERE {where}", term, "write_attrs_update", t, write=True)
        cols = rng.choice(["", c.name + " "])
        text = f"DELETE {cols}FROM {t.name} {using()}"
        whole = rng.random() < 0.3 or (cols and c.role == "static")
        return self._stmt(f"{text} WHERE {self._keys(t, t.pk if whole else t.keys, term)}", term,
                          "write_attrs_delete", t, write=True)

    def counter_attrs(self, t):
        """A counter update with USING TTL ? or TIMESTAMP ?, or a condition on a counter:
        refused."""
        rng = self.rng
        term, mark = self._terms()
        c = rng.choice([c for c in t.values if c.type.kind == "counter"] or t.values)
        form = rng.choice(["ttl", "timestamp", "condition"])
        using = ""
        if form == "ttl":
            using = f" USING TTL {mark(self._ttl())}"
        elif form == "timestamp":
            using = f" USING TIMESTAMP {mark(self.gen.next_ts())}"
        text = f"UPDATE {t.name}{using} SET {c.name} = {c.name} + 1 WHERE {self._keys(t, t.keys, term)}"
        if form == "condition":
            text += f" IF {c.name} = {mark(rng.randint(0, 3))}"
        return self._stmt(text, term, "counter_attrs_" + form, t, write=True)

    # ------------------------------------------------------------ LIMIT ? / PER PARTITION LIMIT ?

    def limits(self, t):
        rng = self.rng
        term, mark = self._terms()
        shape = rng.choice(["partition", "scan", "scan"] if t.ck else ["scan", "in"])
        sel = "*"
        nullness, tolerance = set(), {}
        plain = [c for c in t.values if c.role == "reg" and (c.type.is_native or c.type.frozen)
                 and c.type.kind != "counter"]
        if plain and rng.random() < 0.3:
            c = rng.choice(plain)
            sel = f"{', '.join(k.name for k in t.keys)}, writetime({c.name}) AS wt, ttl({c.name}) AS tl"
            tolerance["tl"] = 5
            if t.server_ts:
                nullness.add("wt")
        text = f"SELECT {sel} FROM {t.name}"
        if shape == "partition":
            text += " WHERE " + self._keys(t, t.pk, term)
        elif shape == "in":
            where = self._in_pk(t, term, mark, nulls=False)   # a LIMIT follows: see in_marker
            if where is None:
                shape = "scan"
            else:
                text += " WHERE " + where
        if shape != "partition" and rng.random() < 0.5:
            text += f" PER PARTITION LIMIT {mark(self._limit())}"
        if rng.random() < 0.8 or "PER PARTITION" not in text:
            text += f" LIMIT {mark(self._limit())}"
        s = self._stmt(text, term, "limits_" + shape, t, nullness=nullness, tolerance=tolerance,
                       unordered=shape == "in")
        s.fetch_size = rng.choice([1, 2, 3, 100])
        return s

    # ------------------------------------------------------------ IN ?

    def _in_values(self, t, c, nulls=True):
        """A list of c's values to bind to `c IN ?`, or None when the driver would not send
        them as Cassandra stores them (see statements.bind_safe)."""
        from .statements import bind_safe
        rng = self.rng
        values = list(t.pools[c.name][:rng.randint(0, 3)])
        if not bind_safe(T("list", (c.type,)), values):
            return None
        if nulls and rng.random() < 0.1:
            values.append(None)   # the driver sends it as an empty value
        return values

    def _in_pk(self, t, term, mark, nulls=True):
        """`k IN ?` on the last partition key column (the others by `=`), or None."""
        last = t.pk[-1]
        values = self._in_values(t, last, nulls)
        if values is None:
            return None
        parts = [self._keys(t, t.pk[:-1], term)] if t.pk[:-1] else []
        return " AND ".join(parts + [f"{last.name} IN {mark(values)}"])

    def in_marker(self, t):
        rng = self.rng
        term, mark = self._terms()
        values = self._in_values(t, t.ck[0]) if t.ck and rng.random() < 0.5 else None
        if values is not None:
            where = f"{self._keys(t, t.pk, term)} AND {t.ck[0].name} IN {mark(values)}"
            shape, unordered = "clustering", False
        else:
            where, shape, unordered = self._in_pk(t, term, mark), "partition", True
            if where is None:
                return None
        if rng.random() < 0.2:
            # Now and then conditional: refused, whatever the list holds.
            cond = " IF EXISTS" if rng.random() < 0.3 else ""
            return self._stmt(f"DELETE FROM {t.name} WHERE {where}{cond}", term, "in_marker_delete", t, write=True)
        text = f"SELECT * FROM {t.name} WHERE {where}"
        fetch = rng.choice([2, 100])
        if shape == "clustering" and rng.random() < 0.3:
            text += f" ORDER BY {t.ck[0].name} {rng.choice(['ASC', 'DESC'])}"
        # Not beside a null element (sent empty): 5.0.9 checks a LIMIT before the list's
        # elements, Peregrine every bound value first (docs/compatibility.md).
        if rng.random() < 0.2 and None not in values_of(term):
            text += f" LIMIT {mark(self._limit())}"
        s = self._stmt(text, term, "in_marker_" + shape, t, unordered=unordered)
        s.fetch_size = fetch
        return s

    # ------------------------------------------------------------ unset values

    def unset(self, t):
        rng, g = self.rng, self.gen
        term, mark = self._terms()
        form = rng.choice(["set", "set", "collection", "insert", "filter", "condition", "key"])
        natives = [c for c in t.values if c.role == "reg" and c.type.is_native
                   and c.type.kind not in ("duration", "counter")]
        multi = [c for c in t.values if c.type.multicell and c.type.kind in ("list", "set", "map")]
        if form == "collection" and multi:
            c = rng.choice(multi)
            k, n = c.type.kind, c.name
            # Not `l = l + ?`: 5.0.9 fails it with a server error (docs/compatibility.md).
            op = rng.choice({"list": ["prepend", "remove", "index"], "set": ["add", "remove"],
                             "map": ["add", "remove", "index"]}[k])
            if op == "index":
                key = rng.randint(0, 2) if k == "list" else draw_value(rng, c.type.args[0], True)
                assign = f"{n}[{term(T('int') if k == 'list' else c.type.args[0], key)}] = {mark(UNSET_VALUE)}"
            elif op == "prepend":
                assign = f"{n} = {mark(UNSET_VALUE)} + {n}"
            else:
                assign = f"{n} = {n} {'+' if op == 'add' else '-'} {mark(UNSET_VALUE)}"
            where = self._keys(t, t.pk if c.role == "static" else t.keys, term)
            text = f"UPDATE {t.name} USING TIMESTAMP {g.next_ts()} SET {assign} WHERE {where}"
            return self._stmt(text, term, f"unset_collection_{k}_{op}", t, write=True)
        if form in ("set", "collection"):
            cols = rng.sample(t.values, min(len(t.values), rng.randint(1, 2)))
            if any(c.role == "static" for c in cols):
                cols = [c for c in cols if c.role == "static"]
            sets = [f"{c.name} = {mark(UNSET_VALUE) if i == 0 or rng.random() < 0.5 else term(c.type, g.value_for(t, c))}"
                    for i, c in enumerate(cols)]
            where = self._keys(t, t.pk if cols[0].role == "static" else t.keys, term)
            text = f"UPDATE {t.name} USING TIMESTAMP {g.next_ts()} SET {', '.join(sets)} WHERE {where}"
            return self._stmt(text, term, "unset_set", t, write=True)
        if form == "insert":
            cols = rng.sample(t.values, min(len(t.values), rng.randint(1, 3)))
            vals = [term(k.type, g.key_value(t, k)) for k in t.keys]
            vals += [mark(UNSET_VALUE) if rng.random() < 0.6 else term(c.type, g.value_for(t, c)) for c in cols]
            names = ", ".join(c.name for c in t.keys + cols)
            text = f"INSERT INTO {t.name} ({names}) VALUES ({', '.join(vals)}) USING TIMESTAMP {g.next_ts()}"
            return self._stmt(text, term, "unset_insert", t, write=True)
        if form == "filter" and natives:
            c = rng.choice(natives)
            op = rng.choice(["=", ">", "IN", "IN ()"])
            if op == "IN ()":
                rel = f"{c.name} IN ({term(c.type, draw_value(rng, c.type))}, {mark(UNSET_VALUE)})"
            else:
                rel = f"{c.name} {op} {mark(UNSET_VALUE)}"
            return self._stmt(f"SELECT * FROM {t.name} WHERE {rel} ALLOW FILTERING", term, "unset_filter", t)
        if form == "condition" and natives:
            c = rng.choice(natives)
            text = f"UPDATE {t.name} SET {c.name} = {term(c.type, g.value_for(t, c))} WHERE {self._keys(t, t.keys, term)}"
            cond = rng.choice(["=", "!=", "IN", "IN ()"])
            if cond == "IN ()":
                text += f" IF {c.name} IN ({term(c.type, draw_value(rng, c.type))}, {mark(UNSET_VALUE)})"
            else:
                text += f" IF {c.name} {cond} {mark(UNSET_VALUE)}"
            t.server_ts = True
            return self._stmt(text, term, "unset_condition", t, write=True)
        # An unset key: refused.
        k = rng.choice(t.keys)
        rel = [f"{x.name} = {mark(UNSET_VALUE) if x is k else term(x.type, g.key_value(t, x))}"
               for x in (t.pk if k.role == "pk" else t.keys)]
        return self._stmt(f"SELECT * FROM {t.name} WHERE {' AND '.join(rel)}", term, "unset_key", t)


def values_of(term):
    """The elements of the lists bound so far (the values of `IN ?` markers)."""
    return [x for p in term.params if isinstance(p, list) for x in p]
