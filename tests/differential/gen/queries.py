"""Grouped queries, JSON terms and masking functions (issues 9 and 10): forms neither the main
draw nor gen/extras.py make.

- `GROUP BY` the partition key and clustering prefixes (columns restricted by `=` left out at
  times, the last one through `floor(c, duration)` when it is a time), with aggregates of every
  type they accept, plain columns (the first row's value), `toJson()` of an aggregate, over one
  partition, a slice, an `IN` of partitions, a token range, a filter or the whole table, with
  `ORDER BY`, `DISTINCT`, `LIMIT` and `PER PARTITION LIMIT`, in pages of 1-5 rows (a group is
  never split or repeated across pages); and the forms Cassandra refuses (a regular or static
  column, a column skipped or out of order, part of the partition key, a function of the key).
- `fromJson()` as a term: in INSERT VALUES (keys too), UPDATE SET (map elements too), in WHERE
  relations of SELECT and DELETE (=, IN, a clustering slice), as a literal or a bound text, and
  its refusals (malformed JSON, a value of another type, a non-text argument, a null key, in a
  selection).
- `toJson()` in selectors: of columns of every type, of aggregates, casts, arithmetic,
  `token()`, other functions, literals, itself, with aliases; its arity errors.
- The masking functions `mask_null`, `mask_default`, `mask_replace`, `mask_inner`,
  `mask_outer`, `mask_hash` over every type they accept, nested, with null and out-of-range
  arguments, and with wrong argument types and counts (the error compared).

Drawn from a random stream of their own (`QueryForms.rng`), so the statements the seed drew
before stay what they were. The reference decides what is valid (expect=None) where the rules
are Cassandra's to check; a form known to be refused is drawn with expect="error".
"""

import json
import random

from .types import draw_value, json_text, literal

# The chance that a draw is one of these (from their own stream): about 90 in 1,500.
QUERY_CHANCE = 0.06

NUMBERS = ("tinyint", "smallint", "int", "bigint", "varint", "float", "double", "decimal", "counter")
TEXTS = ("text", "varchar", "ascii")
TIMES = ("timestamp", "date", "timeuuid")
# Durations floor() takes, by the type of the column it groups.
FLOOR_DURATIONS = {"timestamp": ["1h", "1d", "30m", "2s"], "date": ["1d", "7d", "2mo"],
                   "timeuuid": ["1h", "1d", "10m"]}


def _feature(s, feature):
    s.feature = feature
    return s


class QueryForms:
    def __init__(self, gen, seed):
        self.gen = gen
        self.rng = random.Random(f"queries-{seed}")
        # The variant of a GROUP BY function refusal, drawn apart so that the stream above
        # stays what it was for the seeds already run.
        self.variants = random.Random(f"queries-variants-{seed}")

    def maybe_draw(self):
        """A statement of this family, or None (then the other streams draw as before)."""
        if self.rng.random() >= QUERY_CHANCE:
            return None
        g = self.gen
        main, g.rng = g.rng, self.rng
        try:
            t = self.rng.choice(g.tables)
            kind = self.rng.choices(
                ["group_by", "group_by_refusal", "from_json", "from_json_refusal", "to_json",
                 "masking", "masking_refusal"],
                weights=[34, 6, 14, 6, 14, 18, 8])[0]
            if t.counter and kind in ("from_json", "from_json_refusal"):
                kind = "group_by"
            views = [v for b in g.tables for v in b.views if v.created]
            if views and kind in ("group_by", "to_json", "masking") and self.rng.random() < 0.3:
                # --views: a view read as a table (its key, its partitions, small pages).
                t = self.rng.choice(views)
                s = getattr(self, kind)(t)
                if s is not None:
                    s.feature = "view_" + s.feature
                    if s.projection:
                        s.projection = "view_" + s.projection
                return s
            return getattr(self, kind)(t)
        finally:
            g.rng = main

    # ------------------------------------------------------------ helpers

    def _stmt(self, text, term, feature, t, **kw):
        from .statements import Stmt
        s = Stmt(text, term.params if term is not None and term.bind else None, expect=kw.pop("expect", None),
                 feature=feature, table=t.name, order_types=tuple(c.type.family() for c in t.ck),
                 pk_types=tuple(c.type.family() for c in t.pk), counter_table=t.counter, **kw)
        return s

    def _terms(self, p=0.3):
        from .statements import Terms
        return Terms(self.rng.random() < p)

    # ------------------------------------------------------------ GROUP BY

    def _aggregate(self, t, c):
        """An aggregate of column c that Cassandra accepts for its type, or None."""
        rng, k = self.rng, c.type.kind
        fns = ["count"]
        if c.type.is_native or c.type.frozen or k in ("tuple", "counter"):
            fns += ["max", "min"]
        if k in NUMBERS:
            fns += ["sum", "avg", "sum", "avg"]
        if k == "timeuuid":
            # min()/max() of a timeuuid: typed with Cassandra's custom LegacyTimeUUIDType
            # (generated_known.txt, columns:aggregate), not a difference to look for here.
            fns = ["count"]
        return f"{rng.choice(fns)}({c.name})"

    def group_by(self, t):
        """SELECT <groups, aggregates, columns> ... GROUP BY <pk, ck prefix>, paged small."""
        rng, g = self.rng, self.gen
        term = self._terms()
        shape = rng.choice(["partition", "partition", "prefix", "slice", "scan", "scan", "in", "token", "filter"]
                           if t.ck else ["scan", "scan", "in", "token", "filter", "partition"])
        where, eq = [], set()
        if shape in ("partition", "prefix", "slice"):
            where.append(g.where_eq(t, t.pk, term))
            eq.update(c.name for c in t.pk)
        if shape == "prefix" and t.ck:
            cols = t.ck[:rng.randint(1, len(t.ck))]
            where.append(g.where_eq(t, cols, term))
            eq.update(c.name for c in cols)
        elif shape == "slice" and t.ck:
            c = t.ck[0]
            where.append(f"{c.name} {rng.choice(['>', '>=', '<', '<='])} {term(c.type, g.key_value(t, c))}")
        elif shape == "in":
            last = t.pk[-1]
            if t.pk[:-1]:
                where.append(g.where_eq(t, t.pk[:-1], term))
                eq.update(c.name for c in t.pk[:-1])
            vals = rng.sample(t.pools[last.name], min(len(t.pools[last.name]), rng.randint(1, 3)))
            where.append(f"{last.name} IN ({', '.join(term(last.type, v) for v in vals)})")
        elif shape == "token":
            where.append(f"token({', '.join(c.name for c in t.pk)}) {rng.choice(['>', '<='])} "
                         f"{rng.choice([-2**62, 0, 2**61])}")
        filtering = False
        inet_sai_range = False
        if shape == "filter":
            cands = [c for c in t.values if c.role == "reg" and c.type.is_native
                     and c.type.kind not in ("duration", "counter")]
            if not cands:
                return None
            c = rng.choice(cands)
            op = rng.choice(['=', '>', '<='])
            where.append(f"{c.name} {op} {term(c.type, draw_value(rng, c.type))}")
            filtering = True
            # A range on an inet column with an SAI index: paged, 5.0.9 loses rows (the SAI
            # inet class of generated_known.txt; plain seed 507, grouped).
            inet_sai_range = (c.type.kind == "inet" and op != "="
                              and any(i.sai and i.column == c.name and i.target == "simple"
                                      for i in t.indexes))
        # The groups: the partition key and a clustering prefix; a column restricted by `=`
        # may be left out (Cassandra allows it), the last clustering one grouped by floor().
        groups = t.pk + t.ck[:rng.randint(0, len(t.ck))]
        names = [c.name for c in groups if not (c.name in eq and rng.random() < 0.3)] or [groups[-1].name]
        last = groups[-1]
        if last.role == "ck" and last.type.kind in TIMES and names[-1] == last.name and rng.random() < 0.5:
            names[-1] = f"floor({last.name}, {rng.choice(FLOOR_DURATIONS[last.type.kind])})"
        parts = []
        for c in groups:
            if rng.random() < 0.5:
                parts.append(c.name)
        if names[-1].startswith("floor(") and rng.random() < 0.6:
            parts.append(names[-1])
        aggs = [self._aggregate(t, c) for c in rng.sample(t.cols, min(len(t.cols), rng.randint(0, 3)))]
        aggs = [a for a in aggs if a]
        if rng.random() < 0.6 or not aggs:
            aggs.insert(0, rng.choice(["count(*)", "count(*)", "count(1)"]))
        for a in aggs:
            r = rng.random()
            parts.append(f"toJson({a})" if r < 0.1 else (f"{a} AS a{len(parts)}" if r < 0.2 else a))
        if rng.random() < 0.3:
            # A column outside the groups: the first row's value of each group.
            others = [c for c in t.cols if c not in groups]
            if others:
                parts.insert(rng.randint(0, len(parts)), rng.choice(others).name)
        distinct = (rng.random() < 0.06 and shape in ("scan", "in", "token")
                    and [x for x in names if not x.startswith("floor(")] == [c.name for c in t.pk])
        if distinct:
            parts = [c.name for c in t.pk] + (["count(*)"] if rng.random() < 0.5 else [])
        text = f"SELECT {'DISTINCT ' if distinct else ''}{', '.join(parts)} FROM {t.name}"
        if where:
            text += " WHERE " + " AND ".join(where)
        text += " GROUP BY " + ", ".join(names)
        single = shape in ("partition", "prefix", "slice")
        mods = []
        if single and t.ck and rng.random() < 0.15:
            text += f" ORDER BY {t.ck[0].name} {rng.choice(['ASC', 'DESC'])}"
            mods.append("order")
        if rng.random() < 0.25 and not distinct:
            text += f" PER PARTITION LIMIT {rng.randint(1, 3)}"
            mods.append("ppl")
        if rng.random() < 0.3:
            text += f" LIMIT {rng.randint(1, 4)}"
            mods.append("limit")
        if filtering:
            text += " ALLOW FILTERING"
        s = self._stmt(text, term, "", t)
        s.fetch_size = rng.choice([1, 1, 2, 2, 3, 5, 5000])
        if not t.ck and shape in ("scan", "token", "filter"):
            # Cassandra 5.0.9 answers a grouped range read of a table without clustering
            # columns that needs a second page with a protocol error ("Invalid value for the
            # paging state") and drops the connection (docs/compatibility.md): one page.
            s.fetch_size = 5000
        if s.fetch_size < 100:
            mods.append("paged")
        # Partitions of an IN come in the order of their keys' tokens on both servers, but a
        # typed-order key would say otherwise: compared as a multiset unless limited.
        s.unordered = shape == "in" and "limit" not in mods
        s.feature = "grouped_" + ("_".join(mods) or "all") + ":" + shape
        if inet_sai_range and "paged" in mods:
            s.feature = "grouped_" + "_".join(mods) + ":allow_filtering:inet"
        s.projection = s.feature
        return s

    def group_by_refusal(self, t):
        """GROUP BY forms Cassandra refuses (its messages compared)."""
        rng, g = self.rng, self.gen
        pk, ck = [c.name for c in t.pk], [c.name for c in t.ck]
        regs = [c for c in t.values if c.role == "reg"]
        statics = [c for c in t.values if c.role == "static"]
        forms = ["regular", "unknown", "reversed", "duplicate", "function", "in_order_by", "partial_pk",
                 "skipped_ck", "static", "floor_not_time", "ck_only"]
        form = rng.choice(forms)
        where = ""
        if form == "regular" and regs:
            groups = pk + ck + [regs[0].name]
        elif form == "static" and statics:
            groups = pk + [statics[0].name]
        elif form == "unknown":
            groups = pk + ["nosuch"]
        elif form == "reversed" and len(pk + ck) > 1:
            groups = (pk + ck)[::-1]
        elif form == "duplicate":
            groups = pk + pk[-1:]
        elif form == "function":
            groups = self._refused_group_function(t, pk, ck)
            form = groups.pop()
        elif form == "in_order_by" and ck:
            last = t.pk[-1]
            term = self._terms(0)
            eqs = [g.where_eq(t, t.pk[:-1], term)] if t.pk[:-1] else []
            vals = ", ".join(term(last.type, v) for v in t.pools[last.name][:2])
            where = " WHERE " + " AND ".join(eqs + [f"{last.name} IN ({vals})"])
            groups = pk + ck[:1]
            where_tail = f" ORDER BY {ck[0]} DESC"
            text = f"SELECT count(*) FROM {t.name}{where} GROUP BY {', '.join(groups)}{where_tail}"
            s = self._stmt(text, None, "group_by_refusal:in_order_by", t)
            s.fetch_size = rng.choice([2, 5000])
            return s
        elif form == "partial_pk" and len(pk) > 1:
            groups = pk[:-1]
        elif form == "skipped_ck" and len(ck) > 1:
            groups = pk + ck[1:2]
        elif form == "floor_not_time" and ck and t.ck[-1].type.kind not in TIMES + NUMBERS + ("time",):
            # Not of a number: 5.0.9 resolves floor() of one through the time types
            # (docs/compatibility.md, not matched).
            groups = pk + ck[:-1] + [f"floor({ck[-1]}, 1h)"]
        elif form == "ck_only" and ck:
            groups = ck[:1]
        else:
            form, groups = "regular_only", [regs[0].name if regs else "nosuch"]
        text = f"SELECT count(*) FROM {t.name}{where} GROUP BY {', '.join(groups)}"
        return self._stmt(text, None, "group_by_refusal:" + form, t)

    def _refused_group_function(self, t, pk, ck):
        """A function GROUP BY refuses, and its form name last: token() of the partition key,
        an aggregate, an unknown function, or on the last clustering column (ascending, of a
        native type) a function that is not monotonic (a blob conversion, a negation or a sum of
        a number: "Only monotonic functions are supported in the GROUP BY clause. Got: ...")."""
        v = self.variants.choice(["token", "aggregate", "unknown", "not_monotonic", "not_monotonic"])
        last = t.ck[-1] if t.ck else None
        native = last is not None and last.type.is_native and last.order != "DESC"
        if v == "aggregate" and ck:
            return pk + ck[:-1] + [f"max({ck[-1]})", "function_aggregate"]
        if v == "unknown" and ck:
            return pk + ck[:-1] + [f"nosuchfn({ck[-1]})", "function_unknown"]
        if v == "not_monotonic" and native:
            kind = last.type.kind
            choices = [f"{kind}asblob({last.name})"]
            if kind in NUMBERS:
                choices += [f"-{last.name}", f"{last.name} + {last.name}"]
            return pk + ck[:-1] + [self.variants.choice(choices), "function_not_monotonic"]
        return [f"token({', '.join(pk)})", "function"]

    # ------------------------------------------------------------ fromJson()

    def _json_term(self, term, c, v):
        """fromJson() of v for column c (the plain term where v has no JSON form drawn); a
        collection, tuple or UDT now and then as a JSON string holding its JSON, which
        Cassandra decodes first."""
        text = json_text(c.type, v)
        if text is None or c.type.kind not in ("list", "set", "map", "tuple", "udt") or self.rng.random() >= 0.25:
            return term.from_json(c.type, v)
        text = json.dumps(text, ensure_ascii=False)
        if term.bind:
            term.params.append(text)
            return "fromJson(?)"
        return "fromJson('" + text.replace("'", "''") + "')"

    def from_json(self, t):
        rng, g = self.rng, self.gen
        term = self._terms(0.35)
        form = rng.choice(["insert", "update", "update", "select", "select", "delete"])
        if form == "insert":
            vals = [c for c in t.values if rng.random() < 0.6] or t.values[:1]
            terms = [self._json_term(term, c, g.key_value(t, c)) if rng.random() < 0.6
                     else term(c.type, g.key_value(t, c)) for c in t.keys]
            terms += [self._json_term(term, c, g.value_for(t, c)) for c in vals]
            names = ", ".join(c.name for c in t.keys + vals)
            text = f"INSERT INTO {t.name} ({names}) VALUES ({', '.join(terms)}){g.using(t)}"
            return self._stmt(text, term, "from_json_term:insert", t, write=True)
        if form == "update":
            targets = [c for c in t.values if c.role == "reg" and rng.random() < 0.5] or \
                [c for c in t.values if c.role == "reg"][:1]
            if not targets:
                return None
            sets = []
            for c in targets:
                if c.type.kind == "map" and c.type.multicell and c.type.args[0].is_native and rng.random() < 0.4:
                    kt, vt = c.type.args
                    sets.append(f"{c.name}[{term(kt, draw_value(rng, kt, True))}] = "
                                f"{term.from_json(vt, draw_value(rng, vt))}")
                elif c.type.multicell and c.type.kind in ("set", "map", "list") and rng.random() < 0.4:
                    sets.append(f"{c.name} = {c.name} + {term.from_json(c.type, g.cell_value(c.type))}")
                else:
                    sets.append(f"{c.name} = {self._json_term(term, c, g.value_for(t, c))}")
            using = g.using(t)
            where = " AND ".join(f"{c.name} = {self._json_term(term, c, g.key_value(t, c))}" for c in t.keys)
            text = f"UPDATE {t.name}{using} SET {', '.join(sets)} WHERE {where}"
            return self._stmt(text, term, "from_json_term:update", t, write=True)
        if form == "delete":
            where = " AND ".join(f"{c.name} = {self._json_term(term, c, g.key_value(t, c))}" for c in t.pk)
            text = f"DELETE FROM {t.name}{g.using(t, ttl_ok=False)} WHERE {where}"
            return self._stmt(text, term, "from_json_term:delete", t, write=True)
        # SELECT with fromJson() in =, IN and slice relations of the key.
        rel = []
        for c in t.pk[:-1]:
            rel.append(f"{c.name} = {self._json_term(term, c, g.key_value(t, c))}")
        last = t.pk[-1]
        if rng.random() < 0.3:
            vals = rng.sample(t.pools[last.name], min(2, len(t.pools[last.name])))
            rel.append(f"{last.name} IN ({', '.join(self._json_term(term, last, v) for v in vals)})")
        else:
            rel.append(f"{last.name} = {self._json_term(term, last, g.key_value(t, last))}")
        if t.ck and rng.random() < 0.5:
            c = t.ck[0]
            op = rng.choice(["=", ">", "<=", "IN"])
            if op == "IN":
                vals = rng.sample(t.pools[c.name], min(2, len(t.pools[c.name])))
                rel.append(f"{c.name} IN ({', '.join(self._json_term(term, c, v) for v in vals)})")
            else:
                rel.append(f"{c.name} {op} {self._json_term(term, c, g.key_value(t, c))}")
        text = f"SELECT * FROM {t.name} WHERE {' AND '.join(rel)}"
        s = self._stmt(text, term, "from_json_term:select", t)
        s.unordered = " IN (" in text
        s.fetch_size = rng.choice([2, 100])
        return s

    def _bad_json(self, ty):
        """JSON text that is not a valid value of type ty, or no JSON at all. Not malformed
        JSON, nor a string that is no JSON for a collection, tuple or UDT (which Cassandra
        decodes as JSON): Jackson's explanations are not matched (docs/compatibility.md,
        "Malformed JSON")."""
        k = ty.kind
        choices = ["", "1 2", "null"]
        if k in NUMBERS:
            choices += ['"x"', "true", "[1]", "1.5" if k not in ("float", "double", "decimal") else '"1e"',
                        "99999999999999999999999", '{"a": 1}']
        elif k in TEXTS:
            choices += ["5", "[1]", "true", "{}", '{"a": [1, 2]}']
        elif k in ("list", "set"):
            choices += ['"5"', "5", '{"a": 1}', '["a", [1]]', "true"]
        elif k in ("map", "udt"):
            choices += ["[1]", '"[2]"', '{"nosuch": 1}' if k == "udt" else "5"]
        elif k == "tuple":
            choices += ["[1, 2, 3, 4, 5]", '"7"', "{}"]
        elif k == "duration":
            # Not a string that is no duration: 5.0.9 refuses it as Invalid, not as the
            # function's failure (docs/compatibility.md).
            choices += ["5", "[1]", "true"]
        else:
            choices += ["5", '"not valid"', "[1]", "true"]
        return self.rng.choice(choices)

    def from_json_refusal(self, t):
        """fromJson() where Cassandra refuses it: bad JSON, a value of another type, a non-text
        argument, a null key, in a selection, the wrong number of arguments."""
        rng, g = self.rng, self.gen
        from .statements import Terms
        term = Terms(False)
        form = rng.choice(["bad_value", "bad_value", "bad_key", "not_text", "null_key", "selection", "arity"])
        c = rng.choice(t.values)
        if form == "bad_value":
            bad = self._bad_json(c.type).replace("'", "''")
            where = g.where_eq(t, t.pk if c.role == "static" else t.keys, term)
            text = f"UPDATE {t.name} SET {c.name} = fromJson('{bad}') WHERE {where}"
            return self._stmt(text, None, "from_json_refusal:bad_value", t, write=True)
        if form == "bad_key":
            k = rng.choice(t.pk)
            bad = self._bad_json(k.type).replace("'", "''")
            others = [x for x in t.pk if x is not k]
            rel = [f"{x.name} = {term(x.type, g.key_value(t, x))}" for x in others] + [f"{k.name} = fromJson('{bad}')"]
            return self._stmt(f"SELECT * FROM {t.name} WHERE {' AND '.join(rel)}", None,
                              "from_json_refusal:bad_key", t)
        if form == "not_text":
            arg = rng.choice(["1", "0x01", "true", "[1]", "(int) 3"])
            rel = g.where_eq(t, t.keys, term)
            return self._stmt(f"UPDATE {t.name} SET {c.name} = fromJson({arg}) WHERE {rel}", None,
                              "from_json_refusal:not_text", t, write=True)
        if form == "null_key":
            k = rng.choice(t.keys)
            names = ", ".join(x.name for x in t.keys)
            vals = ", ".join("fromJson('null')" if x is k else term(x.type, g.key_value(t, x)) for x in t.keys)
            return self._stmt(f"INSERT INTO {t.name} ({names}) VALUES ({vals})", None,
                              "from_json_refusal:null_key", t, write=True, expect="error")
        if form == "selection":
            return self._stmt(f"SELECT {rng.choice(['fromJson', 'fromjson', 'FROMJSON'])}('1') FROM {t.name}", None,
                              "from_json_refusal:selection", t, expect="error")
        rel = g.where_eq(t, t.keys, term)
        arg = rng.choice(["", "'1', '2'"])
        return self._stmt(f"UPDATE {t.name} SET {c.name} = fromJson({arg}) WHERE {rel}", None,
                          "from_json_refusal:arity", t, write=True, expect="error")

    # ------------------------------------------------------------ toJson()

    def _to_json_arg(self, t):
        rng = self.rng
        r = rng.random()
        nums = [c for c in t.cols if c.type.kind in NUMBERS and c.type.kind != "counter"]
        # Not an element of a DESC clustering column (5.0.9 refuses toJson() of it), not
        # ttl() (a NullPointerException in 5.0.9), not writetime() (a server's clock).
        if r < 0.55:
            return rng.choice(t.cols).name
        if r < 0.65:
            c = rng.choice(t.cols)
            return self._aggregate(t, c) if c.type.kind != "timeuuid" else "count(*)"
        if r < 0.72 and nums:
            c = rng.choice(nums)
            return f"{c.name} {rng.choice(['+', '-', '*'])} {rng.choice([1, 2])}"
        if r < 0.78:
            natives = [c for c in t.cols if c.type.is_native and c.type.kind != "counter"]
            if natives:
                return f"CAST({rng.choice(natives).name} AS text)"
        if r < 0.83:
            return f"token({', '.join(c.name for c in t.pk)})"
        if r < 0.88:
            return f"toJson({rng.choice(t.cols).name})"
        if r < 0.93:
            c = rng.choice([c for c in t.cols if c.type.kind != "timeuuid"] or t.cols)
            return f"mask_{rng.choice(['default', 'null', 'hash'])}({c.name})"
        return rng.choice(["1", "'a'", "(int) 1", "(bigint) 2", "[1, 2]", "(text) 'x'", "true", "1.5", "null",
                           "(list<int>) [1]", "{'k': 1}"])

    def to_json(self, t):
        rng, g = self.rng, self.gen
        term = self._terms()
        n = rng.randint(1, 4)
        parts = []
        for i in range(n):
            arg = self._to_json_arg(t)
            sel = f"toJson({arg})"
            if rng.random() < 0.2:
                sel += f" AS j{i}"
            parts.append(sel)
        if rng.random() < 0.05:
            # Alone: with other selectors, which error comes first is an order Peregrine does
            # not follow (docs/compatibility.md, an unknown column before any other error).
            parts = [rng.choice(["toJson()", "toJson(pk0, pk0)", "tojson(nosuch)"])]
        r = rng.random()
        where = ""
        if r < 0.5:
            where = " WHERE " + g.where_eq(t, t.pk, term)
        elif r < 0.65:
            where = " WHERE " + g.where_eq(t, t.keys, term)
        text = f"SELECT {', '.join(parts)} FROM {t.name}{where}"
        if rng.random() < 0.1 and where:
            text = f"SELECT JSON {', '.join(parts)} FROM {t.name}{where}"
        s = self._stmt(text, term, "to_json_selector", t)
        s.fetch_size = rng.choice([2, 100])
        return s

    # ------------------------------------------------------------ masking functions

    def _mask_call(self, t, c):
        """One masking function call over column c (a type it accepts), or None."""
        rng = self.rng
        k = c.type.kind
        fns = ["mask_null", "mask_default", "mask_hash", "mask_hash", "mask_replace"]
        if k in TEXTS:
            fns += ["mask_inner", "mask_outer"] * 3
        if k == "timeuuid":
            # Typed with Cassandra's custom LegacyTimeUUIDType (docs/compatibility.md).
            fns = ["mask_hash"]
        f = rng.choice(fns)
        if f in ("mask_inner", "mask_outer"):
            def n():
                return rng.choice(["0", "1", "2", "3", "10", "-1", "null"])
            args = [c.name, n(), n()]
            if rng.random() < 0.4:
                args.append(rng.choice(["'#'", "'x'", "'*'", "null", "'é'"]))
            return f"{f}({', '.join(args)})"
        if f == "mask_hash":
            return f"mask_hash({c.name}" + (", 'SHA-256'" if rng.random() < 0.2 else "") + ")"
        if f == "mask_replace":
            if k == "counter":
                return None
            v = draw_value(rng, c.type)
            replacement = literal(c.type, v) if rng.random() < 0.9 else "null"
            if c.order == "DESC" and not c.type.is_native:
                # 5.0.9 fails on a collection, tuple or UDT literal for a reversed type (server
                # errors, --views seed 148; docs/compatibility.md): a null there.
                replacement = "null"
            return f"mask_replace({c.name}, {replacement})"
        return f"{f}({c.name})"

    def masking(self, t):
        rng, g = self.rng, self.gen
        term = self._terms()
        parts = []
        for i in range(rng.randint(1, 3)):
            c = rng.choice(t.cols)
            call = self._mask_call(t, c)
            if call is None:
                continue
            r = rng.random()
            texts = [x for x in t.cols if x.type.kind in TEXTS]
            if r < 0.1:
                call = f"toJson({call})"
            elif r < 0.15 and texts and not call.startswith("mask_hash"):
                x = rng.choice(texts)
                call = f"mask_inner(mask_default({x.name}), 1, 1)"
            if rng.random() < 0.2:
                call += f" AS m{i}"
            parts.append(call)
        if not parts:
            return None
        where = ""
        if rng.random() < 0.5:
            where = " WHERE " + g.where_eq(t, t.pk, term)
        s = self._stmt(f"SELECT {t.keys[-1].name}, {', '.join(parts)} FROM {t.name}{where}", term,
                       "masking_fn", t)
        s.fetch_size = rng.choice([2, 100])
        return s

    def masking_refusal(self, t):
        """Masking functions with arguments of the wrong type or number (errors compared)."""
        rng = self.rng
        texts = [c for c in t.cols if c.type.kind in TEXTS]
        others = [c for c in t.cols if c.type.kind not in TEXTS]
        c = rng.choice(texts) if texts else None
        forms = ["inner_not_text", "inner_bad_bound", "inner_arity", "pad", "pad_type", "hash_algorithm_type",
                 "hash_algorithm", "replace_type", "null_arity", "default_arity"]
        form = rng.choice(forms)
        fn = rng.choice(["mask_inner", "mask_outer"])
        if form == "inner_not_text" and others:
            call = f"{fn}({rng.choice(others).name}, 1, 2)"
        elif form == "inner_bad_bound" and c:
            bad = rng.choice(["'a'", "1.5", "true", "(bigint) 1", "0x01"])
            call = f"{fn}({c.name}, {bad}, 1)" if rng.random() < 0.5 else f"{fn}({c.name}, 1, {bad})"
        elif form == "inner_arity" and c:
            call = rng.choice([f"{fn}({c.name})", f"{fn}({c.name}, 1)", f"{fn}({c.name}, 1, 2, '#', 3)"])
        elif form == "pad" and c:
            call = f"{fn}({c.name}, 1, 2, {rng.choice(['##', '', 'ab'])!r})".replace('"', "'")
        elif form == "pad_type" and c:
            call = f"{fn}({c.name}, 1, 2, {rng.choice(['3', 'true', '1.5'])})"
        elif form == "hash_algorithm_type":
            call = f"mask_hash({rng.choice(t.cols).name}, {rng.choice(['1', 'true', '0x01'])})"
        elif form == "hash_algorithm":
            call = f"mask_hash({rng.choice(t.cols).name}, {rng.choice(['nope', 'SHA-999', ''])!r})".replace('"', "'")
        elif form == "replace_type":
            x = rng.choice(t.cols)
            wrong = "'x'" if x.type.kind not in TEXTS else rng.choice(["1", "true", "1.5"])
            if x.type.kind in ("blob", "inet", "timestamp", "date", "time", "uuid", "timeuuid", "duration",
                               "counter") or not x.type.is_native:
                wrong = "1"
            call = f"mask_replace({x.name}, {wrong})"
        elif form == "default_arity":
            call = f"mask_default({rng.choice(t.cols).name}, 1)"
        else:
            form, call = "null_arity", rng.choice(["mask_null()", f"mask_null({t.keys[0].name}, 1)"])
        return self._stmt(f"SELECT {call} FROM {t.name}", None, "masking_refusal:" + form, t)
