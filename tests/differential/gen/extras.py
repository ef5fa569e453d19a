"""Statements of issues 9 and 10 that the main draw does not make: arithmetic and casts in the
selection, math, blob-conversion and collection functions, literal selectors, UDT field
selection, SELECT JSON of a selection, INSERT JSON with DEFAULT NULL / UNSET, GROUP BY with
aggregates other than count, multi-column clustering relations (with literal tuples, or one
marker per tuple), ORDER BY over an IN on the partition key (unpaged), arithmetic in WHERE and
SET terms, conditional writes on collection elements, UDT fields, IN, !=, CONTAINS and
CONTAINS KEY, element and slice selections of sets and maps, and conditional BATCHes.

They are drawn from a random stream of their own (`Extras.rng`, seeded from the seed), so the
main stream's statements stay what the seed drew before; the extras only take some of the
statement count. Their outcome often depends on the data (a cast of a null, a division by a
zero column, a condition on an element of a null map), so most are drawn with expect=None:
the reference's answer is compared, whatever it is.
"""

import random

from .types import T, draw_value, json_text, literal

# The chance that a draw is an extra (from the extras' own stream).
EXTRA_CHANCE = 0.08

INTEGERS = ("tinyint", "smallint", "int", "bigint", "varint")
NUMBERS = INTEGERS + ("float", "double", "decimal")
# Types CAST accepts as a source, by target (Cassandra 5.0's CastFcts): numbers to each other
# and to text; timestamps/dates/timeuuids among themselves and to text.
CASTS = {
    "number": ["tinyint", "smallint", "int", "bigint", "varint", "float", "double", "decimal", "text", "ascii"],
    "timestamp": ["date", "text"],
    "date": ["timestamp", "text"],
    "timeuuid": ["timestamp", "date", "text"],
    "other": ["text"],
}


class Extras:
    def __init__(self, gen, seed):
        self.gen = gen
        self.rng = random.Random(f"extras-{seed}")

    def maybe_draw(self):
        """An extra statement, or None (then the main stream draws as before)."""
        if self.rng.random() >= EXTRA_CHANCE:
            return None
        g = self.gen
        main, g.rng = g.rng, self.rng
        try:
            t = self.rng.choice([t for t in g.tables if not t.counter] or g.tables)
            kind = self.rng.choice(["arith", "arith", "cast", "cast", "math", "blob_fn", "collection_fn",
                                    "literal_select", "udt_field", "select_json_cols", "insert_json",
                                    "group_by_agg", "multi_column", "lwt_condition", "lwt_condition",
                                    "order_by_in", "order_by_in", "multi_column_markers", "arith_term",
                                    "collection_slice", "collection_slice", "lwt_batch", "lwt_batch"])
            s = getattr(self, kind)(t)
            if s is None:
                return None
            if not s.feature:
                s.feature = kind
            return s
        finally:
            g.rng = main

    # ------------------------------------------------------------ selections

    def _select(self, t, sel, feature, bind=None, where_full=None):
        """SELECT sel FROM t over a partition (or the whole key), with its comparison fields."""
        g, rng = self.gen, self.rng
        from .statements import Stmt, Terms
        term = Terms(rng.random() < 0.35 if bind is None else bind)
        full = rng.random() < 0.4 if where_full is None else where_full
        where = g.where_eq(t, t.keys if full else t.pk, term)
        s = Stmt(f"SELECT {sel} FROM {t.name} WHERE {where}", term.params if term.bind else None,
                 expect=None, feature=feature, table=t.name,
                 order_types=tuple(c.type.family() for c in t.ck), pk_types=tuple(c.type.family() for c in t.pk),
                 projection=feature)
        s.fetch_size = rng.choice([2, 100])
        return s

    def _numbers(self, t):
        return [c for c in t.cols if c.type.kind in NUMBERS]

    def arith(self, t):
        rng = self.rng
        nums = self._numbers(t)
        if not nums:
            return None
        a = rng.choice(nums)
        op = rng.choice(["+", "-", "*", "/", "%"])
        r = rng.random()
        if r < 0.4:
            other = rng.choice(nums).name
        elif r < 0.8:
            other = str(rng.choice([1, 2, 3, 0, -1] if a.type.kind in INTEGERS else [1, 2, 0.5, 0, -1.5]))
        else:
            other = f"({rng.choice(['int', 'bigint', 'double', 'decimal', 'varint'])}) {rng.choice([1, 2, -3, 0])}"
        expr = f"{a.name} {op} {other}" if rng.random() < 0.7 else f"{other} {op} {a.name}"
        if rng.random() < 0.2:
            expr = f"-{a.name}" if rng.random() < 0.5 else f"{expr} * 2 + 1"
        alias = " AS x" if rng.random() < 0.3 else ""
        return self._select(t, f"{t.keys[-1].name}, {expr}{alias}", "arith")

    def cast(self, t):
        rng = self.rng
        c = rng.choice([c for c in t.cols if c.type.is_native] or t.cols)
        if not c.type.is_native:
            return None
        k = c.type.kind
        fam = "number" if k in NUMBERS else (k if k in CASTS else "other")
        target = rng.choice(CASTS[fam] + ["text"])
        return self._select(t, f"{t.keys[-1].name}, CAST({c.name} AS {target})", "cast")

    def math(self, t):
        nums = self._numbers(t)
        if nums:
            c, fn = self.rng.choice(nums), self.rng.choice(["abs", "exp", "log", "log10", "round"])
            return self._select(t, f"{fn}({c.name})", "math_fn")
        return None

    def blob_fn(self, t):
        rng = self.rng
        # Not timeuuid: Cassandra types blobAsTimeuuid() with its custom LegacyTimeUUIDType, a
        # documented difference (docs/compatibility.md).
        skip = ("blob", "varchar", "timeuuid")
        c = rng.choice([c for c in t.cols if c.type.is_native and c.type.kind not in skip] or t.cols)
        if not c.type.is_native or c.type.kind in skip:
            return None
        k = c.type.kind
        if rng.random() < 0.5:
            return self._select(t, f"blobAs{k.capitalize()}({k}AsBlob({c.name}))", "blob_fn")
        # A blob conversion of a literal term, checked for its length by the reference.
        lit = literal(c.type, draw_value(rng, c.type))
        return self._select(t, f"{k}AsBlob(({k}) {lit})", "blob_fn")

    def collection_fn(self, t):
        rng = self.rng
        cols = [c for c in t.cols if c.type.kind in ("list", "set", "map")]
        if not cols:
            return None
        c = rng.choice(cols)
        fns = ["collection_count"]
        if c.type.kind == "map":
            fns += ["map_keys", "map_values"]
        else:
            el = c.type.args[0].kind
            if el in NUMBERS or el in ("text", "ascii", "timestamp", "date", "uuid", "timeuuid"):
                fns += ["collection_min", "collection_max"]
            if el in NUMBERS:
                fns += ["collection_sum", "collection_avg"]
        return self._select(t, f"{rng.choice(fns)}({c.name})", "collection_fn")

    def collection_slice(self, t):
        """Element and slice selections of sets and maps, frozen or not (`m['a'..'b']`, `s[..3]`,
        `fm[k]`, bounds as markers at times), several in one selection, with an alias, inside
        toJson() or SELECT JSON, and writetime() of an element."""
        rng = self.rng
        # Not keyed by a UDT (Cassandra names a UDT literal's fields in its hash order) nor on a
        # key column (toJson() of a DESC clustering column's element is refused by 5.0.9).
        cols = [c for c in t.values if c.type.kind in ("map", "set") and c.type.args[0].is_native]
        if not cols:
            return None
        from .statements import Terms
        term = Terms(rng.random() < 0.3)
        parts, wt, lows, elements = [], [], set(), []
        for i in range(rng.randint(1, 3)):
            c = rng.choice(cols)
            kt = c.type.args[0]
            drawn = []
            bound = len(term.params) if term.bind else 0

            def key():
                drawn.append(draw_value(rng, kt, True))
                return term(kt, drawn[-1])
            form = rng.choices(["element", "both", "upper", "lower"], weights=[30, 25, 20, 25])[0]
            if form == "element":
                sel = f"{c.name}[{key()}]"
                elements.append((c.name, drawn[0]))
            else:
                lo = key() if form != "upper" else ""
                if c.name in lows or (drawn and (c.name, drawn[0]) in elements):
                    # A second slice of the column (maybe from the same lower bound), or a
                    # slice from the key of an element selected before it: 5.0.9 blanks or
                    # drops some values (docs/compatibility.md): not drawn (nor its
                    # lower bound's bound value).
                    if term.bind:
                        del term.params[bound:]
                    continue
                lows.add(c.name)
                sel = f"{c.name}[{lo}..{key() if form != 'lower' else ''}]"
            r = rng.random()
            if r < 0.15:
                sel = f"toJson({sel})"
            elif r < 0.25 and c.type.multicell and form == "element" and "?" not in sel:
                # writetime() of one element: exactly when every write so far carried USING
                # TIMESTAMP, else as null / not null. Not of `m[?]`: 5.0.9 fails it with a
                # server error (ClassCastException of Constants$Marker; --views seed 107).
                sel = f"writetime({sel}) AS wt{i}"
                wt.append(f"wt{i}")
            if rng.random() < 0.25 and not sel.startswith("writetime("):
                sel += f" AS e{i}"
            parts.append(sel)
        if not parts:
            return None
        json = not wt and rng.random() < 0.15
        s = self._select(t, ("JSON " if json else f"{t.keys[-1].name}, ") + ", ".join(parts), "collection_slice",
                         bind=term.bind)
        if term.bind:
            s.params = term.params + (s.params or [])
        if t.server_ts:
            s.nullness.update(wt)
        return s

    def literal_select(self, t):
        rng = self.rng
        lits = rng.sample(["1", "'a'", "(bigint) 2", "[1, 2]", "{'k': 1}", "(int) 1 + 2", "0x0102", "(text) 'x'",
                           "true", "1.5"], 2)
        return self._select(t, f"{t.keys[-1].name}, " + ", ".join(lits), "literal_select")

    def udt_field(self, t):
        rng = self.rng
        cols = [c for c in t.cols if c.type.kind == "udt"]
        if not cols:
            return None
        c = rng.choice(cols)
        f = rng.choice(c.type.args)[0]
        sel = f"{c.name}.{f}"
        if rng.random() < 0.3:
            sel = f"toJson({sel})"
        elif rng.random() < 0.3:
            sel = f"writetime({c.name}.{f}) AS wt" if c.type.multicell else f"{c.name}.{f} AS ff"
        s = self._select(t, f"{t.keys[-1].name}, {sel}", "udt_field_select")
        if t.server_ts and sel.endswith(" AS wt"):
            s.nullness.add("wt")   # a write without USING TIMESTAMP: its time is the server's
        return s

    def select_json_cols(self, t):
        rng = self.rng
        cols = rng.sample(t.cols, min(len(t.cols), rng.randint(1, 3)))
        parts = []
        for c in cols:
            r = rng.random()
            if r < 0.2 and c.role not in ("pk", "ck") and c.type.kind != "counter" and not t.server_ts:
                # writetime() exactly: every write to the table so far carried USING TIMESTAMP.
                parts.append(f"writetime({c.name}) AS w" if not c.type.multicell else f"toJson({c.name}) AS j")
            elif r < 0.4:
                parts.append(f"{c.name} AS \"Al{len(parts)}\"")
            else:
                parts.append(c.name)
        return self._select(t, "JSON " + ", ".join(parts), "select_json_selection")

    def group_by_agg(self, t):
        rng = self.rng
        if not t.ck:
            return None
        nums = [c for c in t.cols if c.type.kind in NUMBERS and c.role == "reg"]
        aggs = ["count(*)"] + [f"{rng.choice(['max', 'min', 'sum', 'avg'])}({c.name})" for c in nums[:2]]
        groups = t.pk + t.ck[:rng.randint(0, len(t.ck))]
        s = self._select(t, f"{groups[-1].name}, " + ", ".join(aggs), "group_by_aggregate", where_full=False)
        s.text += " GROUP BY " + ", ".join(c.name for c in groups)
        if rng.random() < 0.3:
            s.text += f" LIMIT {rng.randint(1, 3)}"
        # One partition: pages of 1-3 groups as well (a group never split or repeated). Over
        # several partitions 5.0.9 can fail paged GROUP BY (see statements.select).
        s.fetch_size = rng.choice([1, 2, 3, 5000, 5000])
        return s

    def multi_column(self, t):
        rng = self.rng
        if len(t.ck) < 2:
            return None
        from .statements import Stmt, Terms
        g = self.gen
        term = Terms(rng.random() < 0.35)
        where = g.where_eq(t, t.pk, term)
        cols = t.ck[:rng.randint(2, len(t.ck))]
        names = "(" + ", ".join(c.name for c in cols) + ")"
        if rng.random() < 0.3:
            tuples = ["(" + ", ".join(term(c.type, g.key_value(t, c)) for c in cols) + ")" for _ in range(2)]
            rel = f"{names} IN ({', '.join(tuples)})"
        else:
            tup = "(" + ", ".join(term(c.type, g.key_value(t, c)) for c in cols) + ")"
            rel = f"{names} {rng.choice(['>', '>=', '<', '<=', '='])} {tup}"
        return Stmt(f"SELECT * FROM {t.name} WHERE {where} AND {rel}", term.params if term.bind else None,
                    expect=None, feature="multi_column_relation", table=t.name,
                    order_types=tuple(c.type.family() for c in t.ck), pk_types=tuple(c.type.family() for c in t.pk))

    def order_by_in(self, t):
        """ORDER BY over an IN on the partition key (unpaged, as Cassandra requires; now and
        then paged, which both refuse): rows of several partitions merged in order."""
        rng, g = self.rng, self.gen
        if not t.ck:
            return None
        from .statements import Stmt, Terms
        term = Terms(rng.random() < 0.35)
        where = []
        if t.pk[:-1]:
            where.append(g.where_eq(t, t.pk[:-1], term))
        last = t.pk[-1]
        pool = t.pools[last.name]
        vals = rng.sample(pool, min(len(pool), rng.randint(1, 3)))
        where.append(f"{last.name} IN ({', '.join(term(last.type, v) for v in vals)})")
        ck0 = t.ck[0]
        r = rng.random()
        order_from = 0
        if r < 0.2 and len(t.ck) > 1:
            where.append(g.where_eq(t, [ck0], term))
            order_from = 1
        elif r < 0.4:
            where.append(f"{ck0.name} {rng.choice(['>', '>=', '<', '<='])} {term(ck0.type, rng.choice(t.pools[ck0.name]))}")
        elif r < 0.5:
            vs = t.pools[ck0.name][:rng.randint(1, 3)]
            where.append(f"{ck0.name} IN ({', '.join(term(ck0.type, v) for v in vs)})")
        # ORDER BY columns: a run of clustering columns, all in their declared order or all reversed.
        cols = t.ck[order_from:rng.randint(order_from + 1, len(t.ck))]
        flip = rng.random() < 0.5
        def direction(c):
            return ("DESC" if c.order == "ASC" else "ASC") if flip else c.order
        order = ", ".join(f"{c.name} {direction(c)}" for c in cols)
        sel = rng.choice(["*", ", ".join(c.name for c in t.keys),
                          ", ".join(c.name for c in t.keys + t.values[:1]),
                          ", ".join(c.name for c in t.ck[:1] + t.values[:1]) or "*",
                          "DISTINCT " + ", ".join(c.name for c in t.pk)])
        text = f"SELECT {sel} FROM {t.name} WHERE {' AND '.join(where)} ORDER BY {order}"
        if rng.random() < 0.15 and not sel.startswith("DISTINCT"):
            text += f" PER PARTITION LIMIT {rng.randint(1, 2)}"
        if rng.random() < 0.4:
            text += f" LIMIT {rng.randint(1, 5)}"
        s = Stmt(text, term.params if term.bind else None, expect=None, feature="order_by_in", table=t.name,
                 order_types=tuple(c.type.family() for c in t.ck), pk_types=tuple(c.type.family() for c in t.pk))
        s.fetch_size = 3 if rng.random() < 0.1 else None
        return s

    def multi_column_markers(self, t):
        """Multi-column relations with one marker per tuple (`(a, b) = ?`, `> ?`, `IN (?, ?)`,
        `IN ?`), now and then a null field or a null tuple."""
        rng, g = self.rng, self.gen
        if len(t.ck) < 2:
            return None
        from .statements import Stmt, Terms, bind_safe
        term = Terms(True)
        where = g.where_eq(t, t.pk, term)
        cols = t.ck[:rng.randint(2, len(t.ck))]
        names = "(" + ", ".join(c.name for c in cols) + ")"
        tt = T("tuple", tuple(c.type for c in cols), True)

        def tup():
            v = tuple(g.key_value(t, c) for c in cols)
            if rng.random() < 0.08:
                i = rng.randrange(len(v))
                v = v[:i] + (None,) + v[i + 1:]
            return v
        r = rng.random()
        if r < 0.35:
            tuples = [tup() for _ in range(rng.randint(1, 3))]
            rel = f"{names} IN ({', '.join('?' for _ in tuples)})"
            params = tuples
        elif r < 0.55:
            rel = f"{names} IN ?"
            params = [[tup() for _ in range(rng.randint(0, 3))]]
        else:
            op = rng.choice([">", ">=", "<", "<=", "="])
            rel = f"{names} {op} ?"
            params = [tup()]
            if rng.random() < 0.4 and op in (">", ">="):
                rel += f" AND {names} {rng.choice(['<', '<='])} ?"
                params.append(tup())
        if not all(bind_safe(tt, v) for v in (params[0] if rel.endswith("IN ?") else params)):
            return None
        delete = rng.random() < 0.15 and not t.counter
        verb = f"DELETE FROM {t.name}{g.using(t, ttl_ok=False)}" if delete else f"SELECT * FROM {t.name}"
        s = Stmt(f"{verb} WHERE {where} AND {rel}", term.params + params, expect=None,
                 feature="multi_column_markers", table=t.name, write=delete,
                 order_types=tuple(c.type.family() for c in t.ck), pk_types=tuple(c.type.family() for c in t.pk))
        s.fetch_size = rng.choice([2, 100])
        return s

    def arith_term(self, t):
        """Arithmetic in a WHERE or SET term (`SET n = 2 * 3`, `WHERE k = 1 + 1`)."""
        rng, g = self.rng, self.gen
        from .statements import Stmt, Terms
        ints = ("tinyint", "smallint", "int", "bigint", "varint")
        key_ints = [c for c in t.keys if c.type.kind in ints]
        regs = [c for c in t.values if c.role == "reg" and c.type.kind in NUMBERS]
        term = Terms(False)
        op = rng.choice(["+", "-", "*", "/", "%"])
        if key_ints and (not regs or rng.random() < 0.5):
            # A key value written as `(v - 1) + 1`-like arithmetic, the rest as drawn.
            c = rng.choice(key_ints)
            v = g.key_value(t, c)
            forms = [f"{v - 1} + 1", f"{v + 2} - 2", f"{v} * 1", f"{v} / 1"]
            if c.type.kind != "varint":
                # A negation for a varint receiver types as Cassandra's overloads do, not
                # matched yet (docs/compatibility.md, "Queries").
                forms.append(f"-({-v})")
            expr = rng.choice(forms)
            before = t.pk if c.role == "ck" else []
            if c.role == "ck":
                before = before + t.ck[:t.ck.index(c)]
            else:
                before = [x for x in t.pk if x is not c]
            parts = [g.where_eq(t, [x], term) for x in before] + [f"{c.name} = {expr}"]
            return Stmt(f"SELECT * FROM {t.name} WHERE {' AND '.join(parts)}", None, expect=None,
                        feature="arith_term", table=t.name,
                        order_types=tuple(x.type.family() for x in t.ck), pk_types=tuple(x.type.family() for x in t.pk))
        if not regs:
            return None
        c = rng.choice(regs)
        a, b = rng.choice([1, 2, 7, -3]), rng.choice([0, 1, 2, 3, -1])
        if c.type.kind in ("float", "double", "decimal") and rng.random() < 0.5:
            a = rng.choice([1.5, -0.25, 2.0])
        expr = f"{a} {op} {b}"
        if rng.random() < 0.2:
            expr = f"({rng.choice(['int', 'bigint', 'varint', 'double', 'decimal'])}) {a} {op} {b}"
        if c.type.kind == "varint" and any(i.column == c.name for i in t.indexes):
            # An int operation stores its 4 bytes in a varint column, which 5.0.9's indexes key
            # by those bytes (`v = 0` misses it; seed 228): not matched (docs/compatibility.md).
            expr = f"(varint) {a} {op} {b}"
        t.server_ts = True
        return Stmt(f"UPDATE {t.name} SET {c.name} = {expr} WHERE {g.where_eq(t, t.keys, term)}", None, expect=None,
                    feature="arith_term", table=t.name, write=True)

    # ------------------------------------------------------------ writes

    def insert_json(self, t):
        rng, g = self.rng, self.gen
        from .statements import Stmt
        obj = []
        for c in t.keys:
            j = json_text(c.type, g.key_value(t, c))
            if j is None:
                return None
            obj.append(f'"{c.name}": {j}')
        for c in t.values:
            if rng.random() < 0.5:
                j = json_text(c.type, g.value_for(t, c))
                if j is not None:
                    obj.append(f'"{c.name}": {j}')
        doc = "{" + ", ".join(obj) + "}"
        default = rng.choice(["", " DEFAULT NULL", " DEFAULT UNSET"])
        if rng.random() < 0.35:
            text = f"INSERT INTO {t.name} JSON ?{default}{g.using(t)}"
            params = [doc]
        else:
            text = f"INSERT INTO {t.name} JSON '{doc.replace(chr(39), chr(39) * 2)}'{default}{g.using(t)}"
            params = None
        return Stmt(text, params, expect=None, feature="insert_json", table=t.name, write=True)

    def lwt_batch(self, t):
        """A conditional BATCH on one partition: two or three INSERTs, UPDATEs and DELETEs of one
        or two of its rows (or its static row, or the whole partition), with IF EXISTS, IF NOT
        EXISTS, IF conditions on regular and static columns or none, now and then a batch
        timestamp or a second table (both refused)."""
        rng, g = self.rng, self.gen
        if t.counter or t.indexed:
            return None
        from .statements import Stmt, Terms
        term = Terms(rng.random() < 0.3)
        regs = [c for c in t.values if c.role == "reg" and not c.type.multicell]
        statics = [c for c in t.values if c.role == "static" and not c.type.multicell]
        if not regs:
            return None
        pk = {c.name: g.key_value(t, c) for c in t.pk}
        rows = [{c.name: g.key_value(t, c) for c in t.ck} for _ in range(2)]

        def where(row):
            keys = [(c, pk[c.name]) for c in t.pk] + [(c, row[c.name]) for c in t.ck if row is not None]
            return " AND ".join(f"{c.name} = {term(c.type, v)}" for c, v in keys)

        def condition():
            r = rng.random()
            if r < 0.25:
                return " IF EXISTS"
            if r < 0.45 and statics:
                c = rng.choice(statics)
                return f" IF {c.name} = {term(c.type, g.value_for(t, c))}" if rng.random() < 0.7 else f" IF {c.name} = null"
            if r < 0.8:
                c = rng.choice(regs)
                if rng.random() < 0.3:
                    return f" IF {c.name} != null"
                return f" IF {c.name} = {term(c.type, g.value_for(t, c))}"
            return ""
        parts = []
        for _ in range(rng.randint(2, 3)):
            row = rng.choice(rows)
            form = rng.choice(["update", "update", "insert", "delete", "static", "partition"])
            if form == "static" and statics:
                c = rng.choice(statics)
                text = f"UPDATE {t.name} SET {c.name} = {term(c.type, g.value_for(t, c))} WHERE {where(None)}"
                parts.append(text + rng.choice(["", " IF EXISTS", f" IF {c.name} = null"]))
            elif form == "insert":
                c = rng.choice(regs)
                names = [x.name for x in t.keys] + [c.name]
                vals = [term(x.type, pk[x.name] if x.role == "pk" else row[x.name]) for x in t.keys]
                vals.append(term(c.type, g.value_for(t, c)))
                ine = " IF NOT EXISTS" if rng.random() < 0.6 else ""
                parts.append(f"INSERT INTO {t.name} ({', '.join(names)}) VALUES ({', '.join(vals)}){ine}")
            elif form == "delete":
                cols = rng.choice(["", rng.choice(regs).name + " "])
                parts.append(f"DELETE {cols}FROM {t.name} WHERE {where(row)}" + condition())
            elif form == "partition" and t.ck:
                parts.append(f"DELETE FROM {t.name} WHERE {where(None)}")
            else:
                c = rng.choice(regs)
                text = f"UPDATE {t.name} SET {c.name} = {term(c.type, g.value_for(t, c))} WHERE {where(row)}"
                parts.append(text + condition())
        if not any(" IF " in p for p in parts):
            return None
        using = " USING TIMESTAMP 5" if rng.random() < 0.05 else ""
        if rng.random() < 0.05:
            other = rng.choice(self.gen.tables)
            if other is not t and not other.counter:
                parts.append(f"DELETE FROM {other.name} WHERE {g.where_eq(other, other.pk, term)}")
        t.server_ts = True
        text = f"BEGIN {rng.choice(['', 'UNLOGGED '])}BATCH{using} " + "; ".join(parts) + "; APPLY BATCH"
        return Stmt(text, term.params if term.bind else None, expect=None, feature="lwt_batch",
                    table=t.name, write=True)

    def lwt_condition(self, t):
        """UPDATE ... IF <a condition on an element, a field, IN, !=, CONTAINS ...>."""
        rng, g = self.rng, self.gen
        from .statements import Stmt, Terms
        term = Terms(rng.random() < 0.35)
        regs = [c for c in t.values if c.role == "reg"] or t.values
        target = rng.choice(regs)
        if target.type.multicell and target.type.kind != "udt":
            sets = f"{target.name} = {target.name} + {term(target.type, g.cell_value(target.type))}"
        elif target.type.multicell:
            f, ft = rng.choice(target.type.args)
            sets = f"{target.name}.{f} = {term(ft, draw_value(rng, ft))}"
        else:
            sets = f"{target.name} = {term(target.type, g.value_for(t, target))}"
        where = g.where_eq(t, t.keys, term)
        c = rng.choice(regs)
        k = c.type.kind
        n = c.name
        if k == "map" and rng.random() < 0.7:
            key = term(c.type.args[0], draw_value(rng, c.type.args[0], True))
            r = rng.random()
            if r < 0.3 and c.type.multicell:
                cond = f"{n} CONTAINS KEY {key}"
            elif r < 0.5 and c.type.multicell:
                cond = f"{n} CONTAINS {term(c.type.args[1], draw_value(rng, c.type.args[1]))}"
            elif not c.type.args[0].is_native or c.type.args[0].kind in ("float", "double", "decimal"):
                # Cassandra 5.0.9 fails a condition on an element of a map keyed by a frozen
                # collection, tuple or UDT, when the map holds elements, with a server error
                # (IndexOutOfBoundsException; --views seed 71), and so one keyed by a float,
                # double or decimal when the key is there (`IF m[-7.5] = 'a'` of a map<float,
                # text> holding -7.5; plain seed 382): no answer to compare with.
                cond = f"{n} CONTAINS KEY {key}" if c.type.multicell else f"{n} != null"
            else:
                vt = c.type.args[1]
                op = rng.choice(["=", "!="] + ([">", "<="] if vt.kind in NUMBERS else []))
                cond = f"{n}[{key}] {op} {term(vt, draw_value(rng, vt))}"
        elif k == "list" and rng.random() < 0.7:
            et = c.type.args[0]
            if rng.random() < 0.4 and c.type.multicell:
                cond = f"{n} CONTAINS {term(et, draw_value(rng, et))}"
            else:
                op = rng.choice(["=", "!="] + ([">", "<="] if et.kind in NUMBERS else []))
                cond = f"{n}[{rng.randint(0, 2)}] {op} {term(et, draw_value(rng, et))}"
        elif k == "set" and c.type.multicell and rng.random() < 0.7:
            cond = f"{n} CONTAINS {term(c.type.args[0], draw_value(rng, c.type.args[0], True))}"
        elif k == "udt" and rng.random() < 0.8:
            f, ft = rng.choice(c.type.args)
            op = rng.choice(["=", "!="] + ([">", "<"] if ft.kind in NUMBERS else []))
            cond = f"{n}.{f} {op} {term(ft, draw_value(rng, ft))}"
        elif c.type.kind != "counter":
            r = rng.random()
            if r < 0.4:
                vals = ", ".join(term(c.type, g.value_for(t, c)) for _ in range(rng.randint(1, 3)))
                cond = f"{n} IN ({vals})"
            elif r < 0.6:
                cond = f"{n} != {term(c.type, g.value_for(t, c))}"
            elif r < 0.8:
                cond = f"{n} = null"
            else:
                cond = f"{n} != null"
        else:
            return None
        if rng.random() < 0.2:
            cond += f" AND {n} != null"
        t.server_ts = True
        text = f"UPDATE {t.name} SET {sets} WHERE {where} IF {cond}"
        return Stmt(text, term.params if term.bind else None, expect=None, feature="lwt_condition",
                    table=t.name, write=True)
