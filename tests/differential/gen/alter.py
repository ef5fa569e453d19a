"""Schema changes in the middle of a run (issue 9's `ALTER TABLE` / `ALTER TYPE` with Cassandra's
checks): episodes the other draws do not make, each a group of statements handed out together
(`StatementGen.pending`), so nothing else touches the table while it is changed.

- a column added to a table (regular, static, a collection, now and then `IF NOT EXISTS`),
  written with client timestamps, read (`SELECT *`, the column, its `writetime()`), dropped
  (at times `USING TIMESTAMP` the newest of its writes'), read and named again (refused), then
  at times added back with the same or another type (Cassandra hides the cells older than the
  drop, and refuses an incompatible type) and read;
- a user type made for the episode (`CREATE TYPE`), a non-frozen column of it, field writes,
  `ALTER TYPE ... ADD` a field then `RENAME` one, reads of the column and its fields, the
  column dropped and `DROP TYPE`;
- a clustering or partition key column renamed, read by its new name, renamed back;
- `ALTER TABLE ... WITH` an option (valid or not), and the refused forms: dropping or
  re-adding a key column, adding an existing column, `ALTER ... TYPE`, renaming a regular
  column, a static column without clustering columns, a counter in a non-counter table,
  `IF EXISTS` / `IF NOT EXISTS` no-ops, an unknown table or type.

The columns, fields and types are named `z...` and known to no other stream (their tables'
`cols` stay as drawn), so every other statement is what the seed drew before; tables with
materialized views are left alone (gen/views.py draws their schema changes). Drawn from a
random stream of its own (`SchemaChanges.rng`); the reference decides what is valid
(expect=None).
"""

import random

from .types import T, draw_native, draw_value, literal

# The chance that a draw starts one of these episodes (from their own stream): about 25 in
# CI's 1,500 statements, 4-9 statements each.
ALTER_CHANCE = 0.017


class SchemaChanges:
    def __init__(self, gen, seed):
        self.gen = gen
        self.rng = random.Random(f"alter-{seed}")
        self.n = 0

    def maybe_draw(self):
        """The statements of one episode, or [] (then the other streams draw as before)."""
        if self.rng.random() >= ALTER_CHANCE:
            return []
        g = self.gen
        main, g.rng = g.rng, self.rng
        try:
            pool = [t for t in g.tables if not t.views and not t.counter]
            if not pool:
                return []
            t = self.rng.choice(pool)
            kind = self.rng.choices(["add_drop", "udt", "rename_key", "refusal"], weights=[40, 15, 15, 30])[0]
            self.n += 1
            return getattr(self, kind)(t)
        finally:
            g.rng = main

    # ------------------------------------------------------------ helpers

    def _stmt(self, text, kind, t, params=None, **kw):
        from .statements import Stmt
        return Stmt(text, params, expect=None, feature="alter:" + kind, table=t.name,
                    order_types=tuple(c.type.family() for c in t.ck),
                    pk_types=tuple(c.type.family() for c in t.pk), **kw)

    def _where(self, t, cols):
        return " AND ".join(f"{c.name} = {literal(c.type, self.gen.key_value(t, c))}" for c in cols)

    def _value(self, ty):
        v = draw_value(self.rng, ty)
        return literal(ty, v)

    def _col_type(self):
        rng = self.rng
        r = rng.random()
        if r < 0.7:
            while True:
                ty = draw_native(rng)
                if ty.kind != "counter":
                    return ty
        el = draw_native(rng, keyable=True)
        if r < 0.8:
            return T("set", (el,))
        if r < 0.9:
            return T("list", (el,))
        return T("map", (el, T(rng.choice(["int", "text", "boolean"]))))

    def _reads(self, t, name, ty, static):
        rng, out = self.rng, []
        keys = t.pk if static else t.keys
        sel = ", ".join(c.name for c in keys) + f", {name}"
        if ty.is_native:
            sel += f", writetime({name})"
        out.append(self._stmt(f"SELECT {sel} FROM {t.name} WHERE {self._where(t, t.pk)}", "read", t,
                              fetch_size=rng.choice([2, 100])))
        if rng.random() < 0.5:
            out.append(self._stmt(f"SELECT * FROM {t.name}", "read_all", t, fetch_size=rng.choice([3, 100]),
                                  unordered=True))
        return out

    # ------------------------------------------------------------ episodes

    def add_drop(self, t):
        g, rng = self.gen, self.rng
        name, ty = f"z{self.n}", self._col_type()
        static = bool(t.ck) and rng.random() < 0.2
        exists = " IF NOT EXISTS" if rng.random() < 0.2 else ""
        out = [self._stmt(f"ALTER TABLE {t.name} ADD{exists} {name} {ty.cql()}{' static' if static else ''}",
                          "add", t)]
        keys = t.pk if static else t.keys
        # A column that stays (a static one always): later SELECT * of the table show it.
        # One that is dropped is written by INSERTs, so its rows have a marker: Peregrine
        # still shows a row whose only live cells were a dropped column's (docs/
        # compatibility.md, COMPACT STORAGE's known differences; known_differences.txt).
        stays = static or rng.random() < 0.2
        stamps = []
        for _ in range(rng.randint(1, 3)):
            ts = g.next_ts()
            stamps.append(ts)
            where = self._where(t, keys)
            if not static and (not stays or rng.random() < 0.5):
                cols = ", ".join(c.name for c in t.keys) + f", {name}"
                vals = ", ".join(literal(c.type, g.key_value(t, c)) for c in t.keys) + f", {self._value(ty)}"
                text = f"INSERT INTO {t.name} ({cols}) VALUES ({vals}) USING TIMESTAMP {ts}"
            else:
                text = f"UPDATE {t.name} USING TIMESTAMP {ts} SET {name} = {self._value(ty)} WHERE {where}"
            out.append(self._stmt(text, "write", t, write=True))
        out += self._reads(t, name, ty, static)
        if stays:
            return out
        using = ""
        if rng.random() < 0.3:
            # Not older than the column's writes: a cell newer than the drop shows again in
            # Cassandra once the column is added back, and not in Peregrine (docs/
            # compatibility.md, "A dropped column added again"; 5.0.9 also fails some reads of
            # such a table, ReadFailure).
            using = f" USING TIMESTAMP {max(stamps) + rng.choice([0, 1000])}"
        drop = rng.choice([f"DROP {name}", f"DROP ({name})", f"DROP IF EXISTS {name}"])
        out.append(self._stmt(f"ALTER TABLE {t.name} {drop}{using}", "drop", t))
        out.append(self._stmt(f"SELECT {name} FROM {t.name} WHERE {self._where(t, t.pk)}", "dropped_read", t))
        if rng.random() < 0.6:
            again = ty if rng.random() < 0.6 else self._col_type()
            out.append(self._stmt(f"ALTER TABLE {t.name} ADD {name} {again.cql()}",
                                  "readd", t))
            out += self._reads(t, name, again, static)
            if rng.random() < 0.5:
                ts = g.next_ts()
                out.append(self._stmt(f"UPDATE {t.name} USING TIMESTAMP {ts} SET {name} = {self._value(again)} "
                                      f"WHERE {self._where(t, keys)}", "write", t, write=True))
                out += self._reads(t, name, again, static)
        return out

    def udt(self, t):
        g, rng = self.gen, self.rng
        ty_name, col = f"zt{self.n}", f"z{self.n}"
        f1, f2 = draw_native(rng), draw_native(rng)
        while "counter" in (f1.kind, f2.kind):
            f1, f2 = draw_native(rng), draw_native(rng)
        out = [self._stmt(f"CREATE TYPE {ty_name} (a {f1.cql()})", "create_type", t),
               self._stmt(f"ALTER TABLE {t.name} ADD {col} {ty_name}", "add_udt", t)]
        keys_where = self._where(t, t.keys)
        out.append(self._stmt(f"UPDATE {t.name} USING TIMESTAMP {g.next_ts()} SET {col} = {{a: {self._value(f1)}}} "
                              f"WHERE {keys_where}", "write_udt", t, write=True))
        out.append(self._stmt(f"ALTER TYPE {ty_name} ADD b {f2.cql()}", "alter_type_add", t))
        out.append(self._stmt(f"SELECT {col}, {col}.a, {col}.b FROM {t.name} WHERE {keys_where}", "read_udt", t))
        out.append(self._stmt(f"UPDATE {t.name} USING TIMESTAMP {g.next_ts()} SET {col}.b = {self._value(f2)} "
                              f"WHERE {keys_where}", "write_udt_field", t, write=True))
        if rng.random() < 0.5:
            out.append(self._stmt(f"ALTER TYPE {ty_name} RENAME a TO c", "alter_type_rename", t))
            out.append(self._stmt(f"SELECT {col}, {col}.c, toJson({col}) FROM {t.name} WHERE {keys_where}",
                                  "read_udt", t))
            out.append(self._stmt(f"SELECT {col}.a FROM {t.name} WHERE {keys_where}", "read_udt_old_field", t))
        else:
            bad = rng.choice([f"ALTER TYPE {ty_name} ADD a int", f"ALTER TYPE {ty_name} RENAME nosuch TO d",
                              f"ALTER TYPE {ty_name} ALTER a TYPE blob", f"ALTER TYPE {ty_name} RENAME a TO b",
                              f"ALTER TYPE IF EXISTS zt_none ADD d int", f"ALTER TYPE {ty_name} ADD IF NOT EXISTS a int",
                              f"DROP TYPE {ty_name}"])
            out.append(self._stmt(bad, "alter_type_refusal", t))
            out.append(self._stmt(f"SELECT * FROM {t.name} WHERE {self._where(t, t.pk)}", "read_udt", t))
        out.append(self._stmt(f"ALTER TABLE {t.name} DROP {col}", "drop", t))
        out.append(self._stmt(f"DROP TYPE {ty_name}", "drop_type", t))
        return out

    def rename_key(self, t):
        rng = self.rng
        c = rng.choice(t.keys)
        new = f"z{self.n}"
        out = [self._stmt(f"ALTER TABLE {t.name} RENAME {c.name} TO {new}", "rename", t)]
        other = [x for x in t.keys if x is not c]
        where = " AND ".join([f"{x.name} = {literal(x.type, self.gen.key_value(t, x))}" for x in other if x.role == "pk"]
                             + ([f"{new} = {literal(c.type, self.gen.key_value(t, c))}"] if c.role == "pk" else []))
        out.append(self._stmt(f"SELECT {new}, {', '.join(x.name for x in other) or new} FROM {t.name} WHERE {where}",
                              "renamed_read", t, fetch_size=rng.choice([2, 100])))
        out.append(self._stmt(f"SELECT {c.name} FROM {t.name} WHERE {where}", "renamed_old_name", t))
        if c.role == "ck" and rng.random() < 0.5:
            out.append(self._stmt(f"SELECT * FROM {t.name} WHERE {where} ORDER BY {new} DESC"
                                  if c is t.ck[0] else f"SELECT * FROM {t.name} WHERE {where}", "renamed_read", t))
        out.append(self._stmt(f"ALTER TABLE {t.name} RENAME {new} TO {c.name}", "rename_back", t))
        return out

    def refusal(self, t):
        rng = self.rng
        reg = [c for c in t.values if c.role == "reg"]
        cands = [f"ALTER TABLE {t.name} DROP {rng.choice(t.keys).name}",
                 f"ALTER TABLE {t.name} ADD {rng.choice(t.cols).name} int",
                 f"ALTER TABLE {t.name} DROP z_none",
                 f"ALTER TABLE {t.name} DROP IF EXISTS z_none",
                 f"ALTER TABLE {t.name} ADD IF NOT EXISTS {rng.choice(t.cols).name} text",
                 f"ALTER TABLE {t.name} ADD z{self.n} counter",
                 f"ALTER TABLE {t.name} ADD z{self.n} int, ADD z{self.n} text",
                 f"ALTER TABLE {t.name} ADD (z{self.n} int, y{self.n} set<text>)",
                 f"ALTER TABLE z_none ADD z int",
                 f"ALTER TABLE IF EXISTS z_none ADD z int",
                 f"ALTER TABLE {t.name} RENAME z_none TO z{self.n}",
                 f"ALTER TABLE {t.name} RENAME {rng.choice(t.keys).name} TO {rng.choice(t.cols).name}",
                 f"ALTER TABLE {t.name} WITH comment = 'changed {self.n}'",
                 # Not 0: 5.0.9 then purges a tombstone as soon as a compaction (four flushes,
                 # size-tiered) takes it, and a later write older than it shows (plain seed 431).
                 f"ALTER TABLE {t.name} WITH gc_grace_seconds = {rng.choice([864000, 3600, -1])}",
                 f"ALTER TABLE {t.name} WITH default_time_to_live = -5",
                 f"ALTER TABLE {t.name} WITH z_option = 1",
                 f"ALTER TABLE {t.name} WITH caching = {{'keys': 'NONE', 'rows_per_partition': 'ALL'}}",
                 f"ALTER TABLE {t.name} WITH CLUSTERING ORDER BY ({(t.ck or t.pk)[0].name} DESC)",
                 f"ALTER TABLE {t.name} WITH COMPACT STORAGE",
                 f"ALTER TABLE {t.name} DROP COMPACT STORAGE"]
        if reg:
            c = rng.choice(reg)
            cands += [f"ALTER TABLE {t.name} ALTER {c.name} TYPE blob",
                      f"ALTER TABLE {t.name} RENAME {c.name} TO z{self.n}"]
        if not t.ck:
            cands.append(f"ALTER TABLE {t.name} ADD z{self.n} int static")
        text = rng.choice(cands)
        out = [self._stmt(text, "refusal", t)]
        if " ADD " in text and "z_none" not in text:
            # If it was accepted: what the table looks like now.
            out.append(self._stmt(f"SELECT * FROM {t.name} WHERE {self._where(t, t.pk)}", "read", t))
        return out
