"""Indexed reads (issue 11) and DESCRIBE of the drawn objects: statements the main draw does
not make (its one indexed read is `SELECT * FROM t WHERE c = value`).

Over the indexes gen/schema.py's `more_indexes` adds (SAI and legacy, on regular, static,
clustering and partition key columns, `values()` / `keys()` / `entries()` of collections,
`full()` of frozen ones) it draws:

- queries: equality, SAI ranges (`<`, `<=`, `>`, `>=`, both ends), `CONTAINS`, `CONTAINS KEY`,
  `m[k] = v`, `c = frozen value`; one to three of them with AND; with the partition key, a
  clustering slice, a `token()` range, a filter on a column no index serves (`ALLOW
  FILTERING`); `LIMIT`, `PER PARTITION LIMIT`, pages of 1-3 rows, `SELECT DISTINCT` of the
  partition key, `count(*)`;
- refusals: a relation that needs ALLOW FILTERING, `!=`, `IN`, `LIKE` or the wrong CONTAINS
  on an index, ORDER BY, an IN on the partition key (error class and message compared);
- writes that set, change and remove the indexed values (collection elements too), so the
  queries find rows and stale entries; now and then an episode of such writes with `USING TTL
  1`, a wait until they have expired, then indexed queries;
- `DESCRIBE TABLE / INDEX / TYPE / MATERIALIZED VIEW` (server-side in 5.0), compared as rows.

Drawn from a random stream of their own (`IndexReads.rng`), so the main stream's statements
stay what the seed drew before. The reference decides what is valid (expect=None) for the
queries: Cassandra's rules for which index combinations need ALLOW FILTERING are what is
compared. Rows are compared in order (an index read returns partitions in token order and rows
in clustering order on both servers), as a multiset where several partitions are read.
"""

import random

from .types import T, draw_value

# The chance that a draw is one of these (from their own stream): about 45 in CI's 1,500.
INDEX_CHANCE = 0.03
# Within them, the chance of an episode of expiring writes then reads (each waits 1-2.3 s).
EPISODE_CHANCE = 0.04

RANGE_TYPES = ("tinyint", "smallint", "int", "bigint", "varint", "decimal", "float", "double",
               "date", "time", "timestamp", "timeuuid", "inet", "text", "varchar", "ascii")


class IndexReads:
    def __init__(self, gen, seed):
        self.gen = gen
        self.rng = random.Random(f"indexed-{seed}")

    def maybe_draw(self):
        """A statement of this family, or None. An episode returns its first statement and
        leaves the rest in the generator's `pending`."""
        if self.rng.random() >= INDEX_CHANCE:
            return None
        g = self.gen
        main, g.rng = g.rng, self.rng
        try:
            tables = [t for t in g.tables if t.indexes]
            r = self.rng.random()
            if r < 0.12 or not tables:
                return self.describe()
            t = self.rng.choice(tables)
            if r < EPISODE_CHANCE + 0.12 and not t.views:
                first, *g.pending = self.episode(t)
                return first
            if r < 0.4:
                return self.write(t)
            if r < 0.5:
                return self.refusal(t)
            return self.query(t)
        finally:
            g.rng = main

    # ------------------------------------------------------------ values

    def _value(self, t, ix, entry_value=False):
        """A value for a relation or write on `ix` (with `entry_value`, an entries() index's
        map value): mostly one of its pool, so reads find rows."""
        col = t.col(ix.column)
        pool, ty = (ix.vpool, col.type.args[1]) if entry_value else (ix.pool, self.term_type(ix, col))
        if pool and self.rng.random() < 0.8:
            return self.rng.choice(pool)
        return draw_value(self.rng, ty, hashable=True)

    @staticmethod
    def term_type(ix, col):
        if ix.target in ("simple", "full"):
            return col.type
        if ix.target in ("keys", "entries"):
            return col.type.args[0]
        return col.type.args[-1]

    # ------------------------------------------------------------ relations

    def relation(self, t, ix, term):
        """One relation an index `ix` serves (most of the time), and its shape's name."""
        rng = self.rng
        c = t.col(ix.column)
        if ix.target == "simple":
            if c.type.kind in RANGE_TYPES and rng.random() < 0.55:
                op = rng.choice([">", ">=", "<", "<="])
                rel = f"{c.name} {op} {term(c.type, self._value(t, ix))}"
                if rng.random() < 0.4:
                    op2 = rng.choice(["<", "<="]) if op in (">", ">=") else rng.choice([">", ">="])
                    rel += f" AND {c.name} {op2} {term(c.type, self._value(t, ix))}"
                return rel, "range:" + c.type.family()
            return f"{c.name} = {term(c.type, self._value(t, ix))}", "eq:" + c.role
        if ix.target == "values":
            return f"{c.name} CONTAINS {term(c.type.args[-1], self._value(t, ix))}", "contains:" + c.type.kind
        if ix.target == "keys":
            return f"{c.name} CONTAINS KEY {term(c.type.args[0], self._value(t, ix))}", "contains_key"
        if ix.target == "entries":
            k = term(c.type.args[0], self._value(t, ix))
            v = term(c.type.args[1], self._value(t, ix, entry_value=True))
            return f"{c.name}[{k}] = {v}", "entry"
        return f"{c.name} = {term(c.type, self._value(t, ix))}", "full"

    def query(self, t):
        """An indexed SELECT: 1-3 indexed relations, sometimes with the partition key, a
        clustering slice, a token range, a filter on an unindexed column; LIMIT, PER
        PARTITION LIMIT, small pages, DISTINCT, count(*). Terms are drawn in text order (the
        bind values follow it)."""
        rng, g = self.rng, self.gen
        from .statements import Stmt, Terms
        term = Terms(rng.random() < 0.35)
        n = min(len(t.indexes), rng.choice([1, 1, 1, 2, 2, 3]))
        ixs = rng.sample(t.indexes, n)
        where, shapes = [], []
        r = rng.random()
        if r < 0.2:
            where.append(g.where_eq(t, t.pk, term))
        for ix in ixs:
            rel, shape = self.relation(t, ix, term)
            where.append(rel)
            shapes.append(shape)
        feature = "index_" + (shapes[0] if n == 1 else "and")
        if r < 0.2:
            feature = "index_with_partition"
            if t.ck and rng.random() < 0.5:
                c = t.ck[0]
                where.append(f"{c.name} {rng.choice(['>', '>=', '<', '<='])} {term(c.type, g.key_value(t, c))}")
                feature = "index_with_slice"
        elif r < 0.3:
            pks = ", ".join(c.name for c in t.pk)
            where.append(f"token({pks}) {rng.choice(['>', '<=', '>='])} {rng.choice([-2**62, 0, 2**61])}")
            feature = "index_token"
        filtering = rng.random() < 0.2
        if rng.random() < 0.2:
            plain = self._unindexed(t)
            if plain:
                c = rng.choice(plain)
                where.append(f"{c.name} {rng.choice(['=', '>', '<='])} {term(c.type, draw_value(rng, c.type))}")
                feature, filtering = "index_filtering", rng.random() < 0.9
        r = rng.random()
        if r < 0.55:
            sel = "*"
        elif r < 0.7:
            sel = ", ".join(dict.fromkeys(c.name for c in t.keys + [t.col(i.column) for i in ixs]))
        elif r < 0.8:
            sel, feature = "count(*)", feature + ":count"
        elif r < 0.9:
            sel, feature = "DISTINCT " + ", ".join(c.name for c in t.pk), feature + ":distinct"
        else:
            sel = ", ".join(c.name for c in t.keys)
        text = f"SELECT {sel} FROM {t.name} WHERE {' AND '.join(where)}"
        if rng.random() < 0.15 and not sel.startswith(("DISTINCT", "count")):
            text += f" PER PARTITION LIMIT {rng.randint(1, 2)}"
            feature += ":per_partition_limit"
        if rng.random() < 0.25:
            text += f" LIMIT {rng.randint(1, 4)}"
            feature += ":limit"
        if filtering:
            text += " ALLOW FILTERING"
        s = Stmt(text, term.params if term.bind else None, expect=None, feature=feature, table=t.name,
                 order_types=tuple(c.type.family() for c in t.ck), pk_types=tuple(c.type.family() for c in t.pk),
                 counter_table=t.counter)
        s.fetch_size = rng.choice([1, 2, 3, 100, 100])
        return s

    @staticmethod
    def _unindexed(t):
        indexed = {i.column for i in t.indexes}
        return [c for c in t.values if c.role == "reg" and c.type.is_native and c.name not in indexed
                and c.type.kind not in ("duration", "counter")]

    def refusal(self, t):
        """A query Cassandra refuses on an index, or accepts only with ALLOW FILTERING."""
        rng, g = self.rng, self.gen
        from .statements import Stmt, Terms
        term = Terms(rng.random() < 0.35)
        ix = rng.choice(t.indexes)
        c = t.col(ix.column)
        ty = self.term_type(ix, c)
        kind = rng.choice(["neq", "in", "like", "wrong_contains", "order_by", "pk_in", "unindexed",
                           "range_legacy", "contains_on_simple"])
        text = None
        if kind == "neq" and ix.target == "simple":
            text = f"{c.name} != {term(ty, self._value(t, ix))}"
        elif kind == "in" and ix.target == "simple":
            text = f"{c.name} IN ({term(ty, self._value(t, ix))}, {term(ty, self._value(t, ix))})"
        elif kind == "like" and ix.target == "simple" and c.type.kind in ("text", "varchar", "ascii"):
            text = f"{c.name} LIKE 'a%'"
        elif kind == "wrong_contains" and ix.target in ("keys", "values", "entries"):
            other = "CONTAINS" if ix.target == "keys" else "CONTAINS KEY"
            kt = c.type.args[0] if other == "CONTAINS KEY" and c.type.kind == "map" else c.type.args[-1]
            text = f"{c.name} {other} {term(kt, draw_value(rng, kt, True))}"
        elif kind == "order_by" and t.ck:
            head = g.where_eq(t, t.pk, term)
            text = f"{head} AND {self.relation(t, ix, term)[0]} ORDER BY {t.ck[0].name} DESC"
        elif kind == "pk_in":
            last = t.pk[-1]
            head = g.where_eq(t, t.pk[:-1], term) + " AND " if t.pk[:-1] else ""
            head += f"{last.name} IN ({', '.join(term(last.type, v) for v in t.pools[last.name][:2])})"
            text = f"{head} AND {self.relation(t, ix, term)[0]}"
        elif kind == "range_legacy" and ix.target == "simple" and not ix.sai:
            text = f"{c.name} > {term(ty, self._value(t, ix))}"
        elif kind == "contains_on_simple" and ix.target == "simple":
            text = f"{c.name} CONTAINS {term(ty, self._value(t, ix))}"
        if text is None:
            kind = "unindexed"
            text = self.relation(t, ix, term)[0]
            plain = self._unindexed(t)
            if plain:
                x = rng.choice(plain)
                text += f" AND {x.name} = {term(x.type, draw_value(rng, x.type))}"
        return Stmt(f"SELECT * FROM {t.name} WHERE {text}", term.params if term.bind else None, expect=None,
                    feature="index_refusal:" + kind, table=t.name, unordered=True)

    # ------------------------------------------------------------ writes

    def write(self, t, ttl=None):
        """A write that sets, changes or removes indexed values: a row's indexed columns from
        the indexes' pools, collection elements added and removed, a cell or row deleted."""
        rng, g = self.rng, self.gen
        from .statements import Stmt, Terms
        term = Terms(rng.random() < 0.35)
        ixs = rng.sample(t.indexes, min(len(t.indexes), rng.randint(1, 2)))
        # One assignment per column (two indexes of one map would set it twice).
        ixs = list({ix.column: ix for ix in ixs if t.col(ix.column).role not in ("pk", "ck")}.values())
        keys = t.keys if not all(t.col(ix.column).role == "static" for ix in ixs) or not ixs else t.pk
        r = rng.random()
        if ttl and not ixs:
            return None   # an expiring write sets indexed values; these are all key columns
        if ttl is None and (r < 0.15 or not ixs):
            # A row or partition deleted, or an indexed cell.
            using = g.using(t, ttl_ok=False)
            if ixs and rng.random() < 0.5:
                cols = ", ".join(ix.column for ix in ixs)
                return Stmt(f"DELETE {cols} FROM {t.name}{using} WHERE {g.where_eq(t, keys, term)}",
                            term.params if term.bind else None, feature="index_write:delete_cells",
                            table=t.name, write=True)
            where_cols = t.keys if rng.random() < 0.6 else t.pk
            return Stmt(f"DELETE FROM {t.name}{using} WHERE {g.where_eq(t, where_cols, term)}",
                        term.params if term.bind else None, feature="index_write:delete", table=t.name, write=True)
        sets, feature = [], "index_write:set"
        for ix in ixs:
            c = t.col(ix.column)
            k = c.type.kind
            if ix.target in ("simple", "full"):
                v = None if rng.random() < 0.1 else self._value(t, ix)
                if k in ("list", "set") and v is not None:
                    v = list(v) if k == "list" else set(v)
                elif k == "map" and v is not None:
                    v = dict(v)
                sets.append(f"{c.name} = {term(c.type, v)}")
                continue
            op, n = rng.random(), c.name
            # Elements added, removed, or the whole collection set (terms drawn when chosen).
            if k == "map":
                kt, vt = c.type.args
                key = self._value(t, ix) if ix.target != "values" else draw_value(rng, kt, True)
                val = self._value(t, ix, entry_value=True) if ix.target == "entries" else (
                    self._value(t, ix) if ix.target == "values" else draw_value(rng, vt))
                forms = (lambda: f"{n}[{term(kt, key)}] = {term(vt, val)}",
                         lambda: f"{n} = {n} - {term(T('set', (kt,), True), {key})}",
                         lambda: f"{n} = {term(c.type, {key: val})}")
            else:
                items = [self._value(t, ix) for _ in range(rng.randint(1, 2))]
                lit = items if k == "list" else set(items)
                forms = (lambda: f"{n} = {n} + {term(c.type, lit)}",
                         lambda: f"{n} = {n} - {term(c.type, lit)}",
                         lambda: f"{n} = {term(c.type, lit)}")
            chosen = 0 if op < 0.5 else 1 if op < 0.75 else 2
            sets.append(forms[chosen]())
            if chosen == 1:
                feature = "index_write:remove"
        if ttl:
            g.short_ttl = ttl
        try:
            using = g.using(t)
        finally:
            g.short_ttl = None
        text = f"UPDATE {t.name}{using} SET {', '.join(sets)} WHERE {g.where_eq(t, keys, term)}"
        s = Stmt(text, term.params if term.bind else None, feature=feature, table=t.name, write=True)
        if ttl:
            s.expires, s.feature = ttl, "expiring_" + feature
        return s

    def episode(self, t):
        """1-3 indexed writes with USING TTL 1 or 2, a wait until they have expired on both
        sides, then 1-2 indexed queries: the expired values must not be found."""
        from .statements import Stmt
        rng = self.rng
        writes = []
        for _ in range(rng.randint(1, 3)):
            s = self.write(t, ttl=rng.choice([1, 1, 2]))
            if s is not None and s.expires:
                writes.append(s)
        if not writes:
            return [self.query(t)]
        wait = Stmt("", feature="wait_expiry", table=t.name, wait_expiry=True)
        reads = [self.query(t) for _ in range(rng.randint(1, 2))]
        for s in reads:
            s.feature = "after_expiry:" + s.feature
        return writes + [wait] + reads

    # ------------------------------------------------------------ DESCRIBE

    def describe(self):
        from .statements import Stmt
        rng, g = self.rng, self.gen
        objs = [("TABLE", t.name) for t in g.tables]
        objs += [("INDEX", ix.name) for t in g.tables for ix in t.indexes]
        objs += [("TYPE", u.name) for u in g.udts]
        objs += [("MATERIALIZED VIEW", v.name) for t in g.tables for v in t.views if v.created]
        kind, name = rng.choice(objs)
        if rng.random() < 0.05:
            name = "nosuch"
        return Stmt(f"DESCRIBE {kind} {name}", expect=None, feature="describe_" + kind.split()[-1].lower())
