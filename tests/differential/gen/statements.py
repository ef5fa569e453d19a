"""Drawing DML and SELECT statements over a drawn schema, valid and deliberately invalid.

Each statement is a `Stmt`: its text, the values for its bind markers (None = run unprepared
with literals), what the generator expects the reference to do ("ok", "error", or None when the
outcome depends on data, e.g. `l[3] = v`), a `feature` naming what the statement exercises (used
in difference signatures), and how its result is compared (order, writetime exactness, TTL
tolerance, page size).

Drawing never looks at results, so a seed fixes the statement list.
"""

import random
import re
from dataclasses import dataclass, field

from .alter import SchemaChanges
from .clauses import ClauseBinds
from .extras import Extras
from .indexed import IndexReads
from .queries import QueryForms
from .schema import Column
from .types import T, bad_literal, draw_native, draw_value, json_text, literal
from .vectors import VectorForms

TTL_TOLERANCE = 5          # seconds; ttl() drifts with the time between the two sides' writes
TS_BASE = 1_600_000_000_000_000
# Expiring writes: the chance that a draw starts an episode of writes with USING TTL 1 or 2, then
# a wait until they have expired on both sides, then a read of the table. Drawn from a random
# stream of their own, so the rest of a seed's statements stay what they were. About 8 in
# CI's 1,500 statements, each waiting 1-2.3 s.
EXPIRY_EPISODE = 0.005
# Read-before-write operations: their outcome would depend on whether an earlier cell of the
# episode has expired yet, which an episode must not leave to the clock.
READS_BEFORE_WRITE = {"list_index_set", "list_remove", "delete_list_index"}


@dataclass
class Stmt:
    text: str
    params: list = None       # bind values; None = unprepared with literals
    expect: str = "ok"        # "ok" | "error" | None (depends on data)
    feature: str = ""
    table: str = None
    write: bool = False
    fetch_size: int = 100
    unordered: bool = False
    nullness: set = field(default_factory=set)     # result columns compared only as null / not null
    tolerance: dict = field(default_factory=dict)  # result column -> numeric tolerance
    order_types: tuple = ()   # type families of the table's clustering columns (for row order signatures)
    pk_types: tuple = ()      # type families of the partition key columns (they decide the token)
    counter_table: bool = False
    projection: str = ""      # the selection's own feature (writetime, count ...), if any
    expires: int = 0          # the TTL (seconds) of an expiring write: it must expire before a wait
    wait_expiry: bool = False  # not a statement: wait until every expiring write so far has expired
    index_built: str = ""     # an index this statement creates over data: wait until it is queryable


class Terms:
    """Renders values as literals or as bind markers, collecting the bound values."""

    def __init__(self, bind):
        self.bind = bind
        self.params = [] if bind else None

    def __call__(self, t, v):
        if self.bind and bind_safe(t, v):
            self.params.append(v)
            return "?"
        return literal(t, v)

    def from_json(self, t, v):
        """v written through fromJson(): a bound JSON text or a JSON string literal; the plain
        term where v has no JSON form drawn here."""
        text = json_text(t, v)
        if text is None:
            return self(t, v)
        if self.bind:
            self.params.append(text)
            return "fromJson(?)"
        return "fromJson('" + text.replace("'", "''") + "')"


def bind_safe(t, v, top=True):
    """Can v be bound as is? Cassandra stores a bound frozen set/map inside another value in
    the order the driver sent it (Python's order, not Cassandra's), so equal values would be
    different keys there; such values are written as literals, which Cassandra sorts."""
    if v is None:
        return True
    k = t.kind
    if k in ("set", "map"):
        if not (top and t.multicell) and len(v) > 1:
            return False
        items = list(v.items()) if k == "map" else [(x, None) for x in v]
        return all(bind_safe(t.args[0], a, False) and (k == "set" or bind_safe(t.args[1], b, False)) for a, b in items)
    if k == "list":
        return all(bind_safe(t.args[0], x, False) for x in v)
    if k in ("tuple", "udt"):
        types = t.args if k == "tuple" else [a for _, a in t.args]
        return all(bind_safe(a, x, False) for a, x in zip(types, v))
    return True


class StatementGen:
    def __init__(self, rng, tables, udts, seed=0, vectors=False):
        self.rng = rng
        self.tables = tables
        self.udts = udts
        self.ts = TS_BASE
        self.pending = []   # statements drawn as a group, handed out one by one
        self.expiry_rng = random.Random(f"expiry-{seed}")
        self.short_ttl = None   # while drawing an expiring write: its TTL
        self.extras = Extras(self, seed)   # issue 9/10 forms, from a random stream of their own
        self.indexed = IndexReads(self, seed)   # indexed reads and DESCRIBE, likewise
        self.queries = QueryForms(self, seed)   # GROUP BY, fromJson/toJson, masking, likewise
        self.clauses = ClauseBinds(self, seed)   # markers in USING/LIMIT/IN, unset values, likewise
        self.alters = SchemaChanges(self, seed)   # ALTER TABLE / ALTER TYPE episodes, likewise
        # Vector tables and statements (--vectors only; without it nothing is drawn from it).
        self.vectors = VectorForms(self, seed, vectors)

    # ------------------------------------------------------------ helpers

    def next_ts(self):
        """Mostly increasing write timestamps; sometimes an older one, so it must lose."""
        self.ts += 1000
        return self.ts if self.rng.random() < 0.85 else self.ts - self.rng.randint(1, 50) * 1000

    def cell_value(self, t):
        """A value to write to a column. Not an empty non-frozen collection: Cassandra stores
        that as null (and an UPDATE of only that leaves no row), Peregrine as an empty value;
        that difference is drawn on purpose by empty_collection(), not everywhere."""
        for _ in range(10):
            v = draw_value(self.rng, t)
            if not (t.multicell and t.kind != "udt" and len(v) == 0):
                return v
        return v

    def empty_collection(self, t, bind):
        """INSERT an empty non-frozen collection, then read it back (two statements)."""
        rng = self.rng
        c = rng.choice([c for c in t.values if c.type.multicell and c.type.kind != "udt"])
        empty = {"list": [], "set": set(), "map": {}}[c.type.kind]
        term = Terms(bind)
        names = ", ".join(x.name for x in t.keys + [c])
        vals = ", ".join([term(x.type, self.key_value(t, x)) for x in t.keys] + [literal(c.type, empty)])
        verb = rng.choice(["INSERT", "UPDATE"])
        if verb == "INSERT":
            text = f"INSERT INTO {t.name} ({names}) VALUES ({vals}) USING TIMESTAMP {self.next_ts()}"
        else:
            term = Terms(bind)
            text = (f"UPDATE {t.name} USING TIMESTAMP {self.next_ts()} SET {c.name} = {literal(c.type, empty)} "
                    f"WHERE {self.where_eq(t, t.pk if c.role == 'static' else t.keys, term)}")
        write = self._stmt(text, term, "empty_collection_write", t, write=True)
        read = Stmt(f"SELECT * FROM {t.name}", feature="empty_collection_write", table=t.name,
                    order_types=tuple(x.type.family() for x in t.ck))
        return [write, read]

    def value_for(self, t, c):
        """A value to write to column c of t: for a regular column a view key may take (it has
        a pool, views mode only), mostly one of its pool."""
        if c.role == "reg" and c.name in t.pools and self.rng.random() < 0.85:
            return self.rng.choice(t.pools[c.name])
        return self.cell_value(c.type)

    def key_value(self, t, c):
        return self.rng.choice(t.pools[c.name])

    def where_eq(self, t, cols, term):
        return " AND ".join(f"{c.name} = {term(c.type, self.key_value(t, c))}" for c in cols)

    def using(self, t, ttl_ok=True, allow_server_ts=True):
        if self.short_ttl:
            return f" USING TTL {self.short_ttl} AND TIMESTAMP {self.next_ts()}"
        parts = []
        if ttl_ok and self.rng.random() < 0.25:
            parts.append(f"TTL {self.rng.choice([3600, 86400, 100000])}")
        if not allow_server_ts or self.rng.random() < 0.85:
            parts.append(f"TIMESTAMP {self.next_ts()}")
        else:
            t.server_ts = True
        return (" USING " + " AND ".join(parts)) if parts else ""

    def _stmt(self, text, terms, feature, t, **kw):
        bind = terms.params if terms.bind else None
        return Stmt(text, bind, feature=feature, table=t.name, **kw)

    # ------------------------------------------------------------ writes

    def insert(self, t, bind, lwt=False):
        rng = self.rng
        term = Terms(bind)
        vals = [c for c in t.values if rng.random() < 0.6]
        names = [c.name for c in t.keys + vals]
        terms = [term(c.type, self.key_value(t, c)) for c in t.keys]
        # Some inserts write their values through fromJson() (its own feature, for signatures).
        via_json = rng.random() < 0.1
        write = term.from_json if via_json else term
        terms += [write(c.type, self.value_for(t, c)) for c in vals]
        text = f"INSERT INTO {t.name} ({', '.join(names)}) VALUES ({', '.join(terms)})"
        if via_json and not lwt:
            return self._stmt(text + self.using(t), term, "from_json", t, write=True)
        if lwt:
            t.server_ts = True
            ttl = f" USING TTL {rng.choice([3600, 7200])}" if rng.random() < 0.2 else ""
            return self._stmt(text + " IF NOT EXISTS" + ttl, term, "lwt_insert", t, write=True)
        return self._stmt(text + self.using(t), term, "insert", t, write=True)

    def assignment(self, t, c, term):
        """One SET clause for column c; returns (text, feature, expect)."""
        rng = self.rng
        k, n = c.type.kind, c.name
        if k == "counter":
            return f"{n} = {n} {rng.choice('+-')} {rng.randint(1, 9)}", "counter_update", "ok"
        if not c.type.multicell or rng.random() < 0.3:
            return f"{n} = {term(c.type, self.value_for(t, c))}", "update", "ok"
        el = c.type.args
        if k == "list":
            op = rng.choice(["append", "prepend", "remove", "index"])
            if op == "index":
                i = rng.randint(0, 2)
                return f"{n}[{i}] = {term(el[0], draw_value(rng, el[0]))}", "list_index_set", None
            v = term(c.type, draw_value(rng, c.type))
            return ({"append": f"{n} = {n} + {v}", "prepend": f"{n} = {v} + {n}", "remove": f"{n} = {n} - {v}"}[op],
                    f"list_{op}", "ok")
        if k == "set":
            op = rng.choice("+-")
            return f"{n} = {n} {op} {term(c.type, draw_value(rng, c.type))}", "set_" + ("add" if op == "+" else "remove"), "ok"
        if k == "map":
            op = rng.choice(["put", "elem", "remove"])
            if op == "elem":
                return (f"{n}[{term(el[0], draw_value(rng, el[0], True))}] = {term(el[1], draw_value(rng, el[1]))}",
                        "map_elem_set", "ok")
            if op == "remove":
                keys = T("set", (el[0],), True)
                return f"{n} = {n} - {term(keys, draw_value(rng, keys))}", "map_remove_keys", "ok"
            return f"{n} = {n} + {term(c.type, draw_value(rng, c.type))}", "map_put", "ok"
        f, ft = rng.choice(c.type.args)   # non-frozen UDT
        return f"{n}.{f} = {term(ft, draw_value(rng, ft))}", "udt_field_set", "ok"

    def update(self, t, bind, lwt=False):
        rng = self.rng
        term = Terms(bind)
        statics = t.role("static")
        targets = [c for c in t.values if rng.random() < 0.5] or t.values[:1]
        if statics and rng.random() < 0.2:
            targets = statics
        # Setting only static columns takes the partition key alone (Cassandra rejects a full key).
        only_static = all(c.role == "static" for c in targets)
        using = "" if lwt or t.counter else self.using(t)
        if lwt or t.counter:
            t.server_ts = True
        sets, feature, expect = [], "update", "ok"
        for c in targets:
            text, f, e = self.assignment(t, c, term)
            sets.append(text)
            # Name the statement after its riskiest assignment: l[i] = v can fail on data.
            if f != "update" and expect is not None:
                feature = f
            if e is None:
                expect = None
        where = self.where_eq(t, t.pk if only_static else t.keys, term)
        text = f"UPDATE {t.name}{using} SET {', '.join(sets)} WHERE {where}"
        if lwt:
            c = rng.choice(statics if only_static else t.values)
            if rng.random() < 0.4 or c.type.multicell:
                text += " IF EXISTS"
            else:
                text += f" IF {c.name} = {term(c.type, draw_value(rng, c.type))}"
            feature = "lwt_update"
        return self._stmt(text, term, feature, t, write=True, expect=expect)

    def delete(self, t, bind, lwt=False):
        rng = self.rng
        term = Terms(bind)
        using = "" if lwt or t.counter else self.using(t, ttl_ok=False)
        if lwt or t.counter:
            t.server_ts = True
        kinds = ["row", "cells", "element"] if lwt else ["partition", "row", "range", "cells", "element"]
        kind = rng.choice(kinds if t.ck else [k for k in kinds if k not in ("row", "range")] or ["cells"])
        cols, where_cols, feature, expect = "", t.keys, "delete_row", "ok"
        if kind == "partition":
            where_cols, feature = t.pk, "delete_partition"
        elif kind == "cells":
            chosen = rng.sample(t.values, rng.randint(1, min(2, len(t.values))))
            cols, feature = ", ".join(c.name for c in chosen) + " ", "delete_cells"
            if all(c.role == "static" for c in chosen):
                where_cols = t.pk   # static cells take the partition key alone
        elif kind == "element":
            multi = [c for c in t.values if c.type.multicell and c.type.kind in ("list", "map", "udt")]
            if multi:
                c = rng.choice(multi)
                if c.role == "static":
                    where_cols = t.pk
                if c.type.kind == "list":
                    cols, feature, expect = f"{c.name}[{rng.randint(0, 2)}] ", "delete_list_index", None
                elif c.type.kind == "map":
                    kt = c.type.args[0]
                    cols, feature = f"{c.name}[{term(kt, draw_value(rng, kt, True))}] ", "delete_map_elem"
                else:
                    cols, feature = f"{c.name}.{rng.choice(c.type.args)[0]} ", "delete_udt_field"
        if kind != "range":
            where = self.where_eq(t, where_cols, term)
        else:
            prefix = t.ck[:rng.randint(0, len(t.ck) - 1)]
            c = t.ck[len(prefix)]
            where = self.where_eq(t, t.pk + prefix, term)
            where += f" AND {c.name} {rng.choice(['>', '>=', '<', '<='])} {term(c.type, self.key_value(t, c))}"
            feature = "delete_range:" + c.type.family()
        text = f"DELETE {cols}FROM {t.name}{using} WHERE {where}"
        if lwt:
            text += " IF EXISTS"
            feature = "lwt_delete"
        return self._stmt(text, term, feature, t, write=True, expect=expect)

    def batch(self, bind):
        rng = self.rng
        counter = rng.random() < 0.2 and any(t.counter for t in self.tables)
        pool = [t for t in self.tables if t.counter == counter and not t.indexed]
        parts, params, expect = [], [] if bind else None, "ok"
        ts = f" USING TIMESTAMP {self.next_ts()}" if not counter and rng.random() < 0.5 else ""
        for _ in range(rng.randint(2, 4)):
            t = rng.choice(pool)
            if counter:
                s = self.update(t, bind)
            else:
                s = rng.choice([self.insert, self.update, self.delete])(t, bind)
                if ts:   # the batch's timestamp replaces the statements' own
                    s.text = _drop_timestamp(s.text)
            parts.append(s.text)
            if bind:
                params += s.params
            if s.expect is None:
                expect = None
        kind = "COUNTER " if counter else rng.choice(["", "UNLOGGED "])
        text = f"BEGIN {kind}BATCH{ts} " + "; ".join(parts) + "; APPLY BATCH"
        return Stmt(text, params, expect=expect, feature="counter_batch" if counter else "batch", write=True)

    # ------------------------------------------------------------ reads

    def select(self, t, bind):
        rng = self.rng
        term = Terms(bind)
        s = Stmt("", feature="select", table=t.name, order_types=tuple(c.type.family() for c in t.ck),
                 pk_types=tuple(c.type.family() for c in t.pk), counter_table=t.counter)
        s.fetch_size = rng.choice([1, 2, 3, 5, 100, 100])
        shape = rng.choice(["full", "partition", "partition", "slice", "in_ck", "in_pk", "scan", "scan", "filter", "token"]
                           if t.ck else ["full", "partition", "in_pk", "scan", "scan", "filter", "token"])
        where, feature, single_partition = [], None, shape in ("full", "partition", "slice", "in_ck")
        sai_filtered = False
        if shape in ("full", "partition", "slice", "in_ck"):
            where.append(self.where_eq(t, t.keys if shape == "full" else t.pk, term))
        if shape == "slice":
            prefix = t.ck[:rng.randint(0, len(t.ck) - 1)]
            c = t.ck[len(prefix)]
            if prefix:
                where.append(self.where_eq(t, prefix, term))
            lo, hi = rng.choice(t.pools[c.name]), rng.choice(t.pools[c.name])
            where.append(f"{c.name} {rng.choice(['>', '>='])} {term(c.type, lo)}")
            if rng.random() < 0.5:
                where.append(f"{c.name} {rng.choice(['<', '<='])} {term(c.type, hi)}")
            feature = "slice:" + c.type.family()
        elif shape == "in_ck":
            c = t.ck[0]
            where.append(f"{c.name} IN ({', '.join(term(c.type, v) for v in t.pools[c.name][:rng.randint(1, 3)])})")
            feature = "in_clustering"
        elif shape == "in_pk":
            last = t.pk[-1]
            if t.pk[:-1]:
                where.append(self.where_eq(t, t.pk[:-1], term))
            where.append(f"{last.name} IN ({', '.join(term(last.type, v) for v in t.pools[last.name])})")
            s.unordered, feature = True, "in_partition"
        elif shape == "filter":
            cands = [c for c in t.values if c.type.is_native and c.type.kind != "duration" and c.role == "reg"]
            if cands:
                c = rng.choice(cands)
                where.append(f"{c.name} {rng.choice(['=', '>', '<='])} {term(c.type, draw_value(rng, c.type))}")
                feature = "allow_filtering:" + c.type.family()
                sai_filtered = any(i.sai and i.column == c.name and i.target == "simple" for i in t.indexes)
        elif shape == "token":
            pks = ", ".join(c.name for c in t.pk)
            where.append(f"token({pks}) > {rng.choice([-2**62, 0, 2**61])}")
            feature = "token_range"
        sel, f2 = self.projection(t, s, single_partition, shape)
        restriction = feature or ("full_scan" if shape == "scan" else "select_" + shape)
        modifiers = []
        text = f"SELECT {sel} FROM {t.name}"
        if where:
            text += " WHERE " + " AND ".join(where)
        if f2 == "group_by":
            # Cassandra 5.0.9 answers some paged GROUP BY scans with a protocol error ("Invalid
            # value for the paging state") and drops the connection: no small pages here.
            s.fetch_size = 5000
            text += " GROUP BY " + ", ".join(c.name for c in (t.pk + t.ck[:rng.randint(0, len(t.ck))]))
        if single_partition and t.ck and rng.random() < 0.2 and f2 not in ("distinct", "group_by"):
            text += f" ORDER BY {t.ck[0].name} {rng.choice(['ASC', 'DESC'])}"
            modifiers.append("order_by")
        # (GROUP BY with PER PARTITION LIMIT and paging: Cassandra 5.0.9 fails with a protocol
        # error "Invalid value for the paging state", so that combination is not drawn.)
        if rng.random() < 0.15 and not single_partition and f2 not in ("distinct", "count", "aggregate", "group_by"):
            text += f" PER PARTITION LIMIT {rng.randint(1, 2)}"
            modifiers.insert(0, "per_partition_limit" + ("_paged" if s.fetch_size < 100 else ""))
        if rng.random() < 0.25:
            text += f" LIMIT {rng.randint(1, 4)}"
        if shape == "filter":
            text += " ALLOW FILTERING"
        # The signature names the most telling feature: paging across a PER PARTITION LIMIT,
        # then the selection, then a typed slice/filter, then ORDER BY / PER PARTITION LIMIT.
        paged = [m for m in modifiers if m.endswith("_paged")]
        typed = [restriction] if ":" in restriction else []
        feature = (paged + ([f2] if f2 else []) + typed + modifiers + [restriction])[0]
        if paged and restriction == "allow_filtering:inet" and sai_filtered:
            # Small pages over an SAI inet range lose rows on 5.0.9 whatever the PER PARTITION
            # LIMIT: the SAI inet class (seed 298; docs/compatibility.md).
            feature = restriction
        if f2 in ("count", "aggregate") and restriction == "allow_filtering:inet":
            # A count over an inet range is counted page by page: the SAI inet class when the
            # column has an SAI index (seed 197, pages of 3; docs/compatibility.md).
            feature = f"{f2}:{restriction}"
        s.text, s.params, s.feature, s.projection = text, term.params if bind else None, feature, f2 or ""
        return s

    def projection(self, t, s, single_partition, shape):
        """The selection clause; marks writetime/ttl columns for comparison. Returns (text, feature)."""
        rng = self.rng
        r = rng.random()
        vals = [c for c in t.values if c.type.kind != "counter"]
        if r < 0.35:
            return "*", None
        if r < 0.5:
            cols = rng.sample(t.cols, rng.randint(1, len(t.cols)))
            if all(c.role in ("pk", "static") for c in cols):
                cols.append(t.keys[-1])
            return ", ".join(c.name for c in cols), None
        if r < 0.62 and vals:
            c = rng.choice(vals)
            # ttl() of a non-frozen collection is a list<int> with nulls, which the Python driver
            # cannot decode (and toJson(ttl(..)) is a NullPointerException in Cassandra 5.0.9).
            # writetime() of a non-frozen UDT lists nulls for unset fields: also undecodable.
            if c.type.multicell and c.type.kind == "udt":
                return "*", None
            fn = rng.choice(["writetime", "maxwritetime"] + ([] if c.type.multicell else ["ttl", "ttl"]))
            alias = f"{fn}_{c.name}"
            if fn != "ttl" and t.server_ts:
                s.nullness.add(alias)
            if fn == "ttl":
                s.tolerance[alias] = TTL_TOLERANCE
            feature = ("collection_" if c.type.multicell and fn == "writetime" else "") + fn
            # The last key column: selecting only static and partition key columns forbids
            # clustering restrictions.
            return f"{t.keys[-1].name}, {c.name}, {fn}({c.name}) AS {alias}", feature
        if r < 0.7:
            return "count(*)", "count"
        nonstatic = [c for c in t.cols if c.role != "static"]
        if r < 0.76:
            c = rng.choice(nonstatic)
            fn = rng.choice(["max", "min"]) if c.type.is_native and c.type.kind != "duration" else "count"
            return f"{fn}({c.name})", "aggregate"
        if r < 0.8 and shape in ("scan", "partition", "in_pk", "token"):
            statics = [c.name for c in t.role("static")]
            s.nullness, s.tolerance = set(), {}
            return "DISTINCT " + ", ".join([c.name for c in t.pk] + statics[:1]), "distinct"
        if r < 0.86:
            return "JSON *", "select_json"
        if r < 0.9:
            return f"{t.keys[0].name}, count(*)", "group_by"
        if r < 0.95:
            c = rng.choice(nonstatic)
            # Not keyed by a UDT: Cassandra names a UDT literal's fields in its hash order.
            keyed = [x for x in nonstatic if x.type.kind in ("map", "set") and not _has_udt(x.type.args[0])]
            if keyed and rng.random() < 0.4:
                # Element or slice selection (5.0), inside toJson() at times.
                c = rng.choice(keyed)
                key = literal(c.type.args[0], draw_value(rng, c.type.args[0], True))
                sel = f"{c.name}[{key}]" if rng.random() < 0.6 else f"{c.name}[{key}..]"
                # Not wrapped for a clustering column: Cassandra 5.0.9 refuses toJson() of a
                # DESC clustering column's element or slice ("Cannot infer type of argument").
                wrap = rng.random() < 0.3 and c.role != "ck" and c.order != "DESC"
                return (f"toJson({sel})" if wrap else sel), "element_select"
            return f"toJson({c.name})", "to_json"
        c = rng.choice([c for c in nonstatic if c.type.is_native and c.type.kind not in ("counter", "blob")] or t.pk)
        pks = ", ".join(x.name for x in t.pk)
        # No xAsBlob() for a collection key (the fallback when no native column is left).
        conv = c.name if c.type.kind == "blob" or not c.type.is_native else f"{c.type.kind}AsBlob({c.name})"
        return f"token({pks}), {conv}", "functions"

    # ------------------------------------------------------------ invalid

    def invalid(self, t, bind):
        """A statement Cassandra must reject; feature names the mistake."""
        rng = self.rng
        term = Terms(bind)
        key = lambda: self.where_eq(t, t.keys, term)   # noqa: E731 - drawn only where used, in text order
        expect = "error"
        c = rng.choice(t.values)
        reg = [x for x in t.values if x.role == "reg"]
        natives = [x for x in t.values if x.type.is_native and x.type.kind not in ("counter", "text", "varchar", "ascii", "blob")]
        kind = rng.choice(["unknown_column", "unknown_column_where", "bad_literal", "missing_key", "partial_key_update",
                           "filter_without_allow", "set_primary_key", "negative_ttl", "lwt_with_timestamp",
                           "unknown_table", "syntax", "writetime_of_key", "order_by_without_partition",
                           "frozen_collection_op", "distinct_regular", "group_by_regular", "limit_zero",
                           "counter_on_regular", "non_counter_on_counter", "duplicate_column", "pk_slice",
                           "empty_partition_key"])
        if t.counter and kind in ("bad_literal", "missing_key", "duplicate_column", "lwt_with_timestamp"):
            kind = "non_counter_on_counter"   # any INSERT on a counter table fails for that first
        if kind == "unknown_column":
            text = f"SELECT nosuch FROM {t.name}"
        elif kind == "unknown_column_where":
            text = f"SELECT * FROM {t.name} WHERE nosuch = 1"
        elif kind == "bad_literal" and natives:
            c = rng.choice(natives)
            text = f"INSERT INTO {t.name} ({', '.join(x.name for x in t.keys)}, {c.name}) VALUES ({', '.join(literal(x.type, self.key_value(t, x)) for x in t.keys)}, {bad_literal(rng, c.type)})"
            term.params = None if not bind else []
            kind = f"bad_literal_{c.type.kind}"
            bind = False
        elif kind == "missing_key" and len(t.keys) > 1:
            keep = t.keys[1:] if rng.random() < 0.5 else t.keys[:-1]
            text = f"INSERT INTO {t.name} ({', '.join(x.name for x in keep)}) VALUES ({', '.join(term(x.type, self.key_value(t, x)) for x in keep)})"
        elif kind == "partial_key_update" and len(t.keys) > 1 and not t.role("static"):
            text = f"UPDATE {t.name} SET {self.assignment(t, c, term)[0]} WHERE {self.where_eq(t, t.keys[:-1], term)}"
        elif kind == "filter_without_allow" and reg and reg[0].type.is_native and reg[0].type.kind != "counter":
            x = reg[0]
            text = f"SELECT * FROM {t.name} WHERE {x.name} = {term(x.type, draw_value(rng, x.type))}"
            if x.name in t.indexed:
                kind = "index_query"   # valid on the reference: the column is indexed
            elif any(i.column == x.name for i in t.indexes):
                expect = None          # an index gen/schema.py's more_indexes drew may serve it
        elif kind == "set_primary_key":
            k = t.keys[-1]
            text = f"UPDATE {t.name} SET {k.name} = {term(k.type, self.key_value(t, k))} WHERE {key()}"
        elif kind == "negative_ttl" and not t.counter:
            text = f"UPDATE {t.name} USING TTL -5 SET {self.assignment(t, c, term)[0]} WHERE {key()}"
        elif kind == "lwt_with_timestamp" and not t.counter:
            names = ", ".join(x.name for x in t.keys)
            text = f"INSERT INTO {t.name} ({names}) VALUES ({', '.join(term(x.type, self.key_value(t, x)) for x in t.keys)}) IF NOT EXISTS USING TIMESTAMP 5"
        elif kind == "unknown_table":
            text = f"SELECT * FROM nosuch_table WHERE k = 1"
        elif kind == "syntax":
            text = rng.choice([f"SELEC * FROM {t.name}", f"SELECT * FROM {t.name} WHERE", f"INSERT INTO {t.name} VALUES (1)",
                               f"UPDATE {t.name} SET WHERE k = 1", f"SELECT * FROM {t.name} LIMIT"])
        elif kind == "writetime_of_key":
            text = f"SELECT writetime({t.keys[0].name}) FROM {t.name}"
        elif kind == "order_by_without_partition" and t.ck:
            text = f"SELECT * FROM {t.name} ORDER BY {t.ck[0].name} DESC"
        elif kind == "frozen_collection_op" and any(x.type.kind in ("list", "set") and x.type.frozen for x in t.values):
            x = next(x for x in t.values if x.type.kind in ("list", "set") and x.type.frozen)
            text = f"UPDATE {t.name} SET {x.name} = {x.name} + {term(x.type, draw_value(rng, x.type))} WHERE {key()}"
        elif kind == "distinct_regular" and reg:
            text = f"SELECT DISTINCT {reg[0].name} FROM {t.name}"
        elif kind == "group_by_regular" and reg:
            text = f"SELECT count(*) FROM {t.name} GROUP BY {reg[0].name}"
        elif kind == "limit_zero":
            text = f"SELECT * FROM {t.name} LIMIT 0"
        elif kind == "counter_on_regular" and not t.counter and reg:
            text = f"UPDATE {t.name} SET {reg[0].name} = {reg[0].name} + 1 WHERE {key()}"
        elif kind == "non_counter_on_counter" and t.counter:
            names = ", ".join(x.name for x in t.keys + reg[:1])
            text = f"INSERT INTO {t.name} ({names}) VALUES ({', '.join(term(x.type, self.key_value(t, x)) for x in t.keys)}, 1)"
        elif kind == "duplicate_column":
            text = f"INSERT INTO {t.name} ({', '.join(x.name for x in t.keys + t.keys[:1])}) VALUES ({', '.join(term(x.type, self.key_value(t, x)) for x in t.keys + t.keys[:1])})"
        elif kind == "pk_slice" and t.pk[0].type.is_native:
            x = t.pk[0]
            text = f"SELECT * FROM {t.name} WHERE {x.name} > {term(x.type, self.key_value(t, x))}"
            if any(i.column == x.name for i in t.indexes):
                expect = None          # an SAI index on a partition key column may serve it
        elif kind == "empty_partition_key" and len(t.pk) == 1 and t.pk[0].type.kind in ("text", "varchar", "ascii", "blob"):
            empty = "''" if t.pk[0].type.kind != "blob" else "0x"
            text = f"SELECT * FROM {t.name} WHERE {t.pk[0].name} = {empty}"
        else:
            text, kind, term = f"SELECT * FROM {t.name} WHERE {t.keys[0].name} = ", "syntax", Terms(False)
        expect = "ok" if kind == "index_query" else expect
        return Stmt(text, term.params if bind else None, expect=expect, feature=kind, table=t.name)

    # ------------------------------------------------------------ views

    def view_statement(self, views):
        """In views mode (the tables have views): a late CREATE MATERIALIZED VIEW, a read of a
        view, or a statement Cassandra refuses on a view; None to draw an ordinary statement."""
        rng = self.rng
        r = rng.random()
        late = [v for v in views if not v.created]
        if late and r < 0.01:
            v = late[0]
            v.created = True
            return Stmt(v.create_text, feature="create_materialized_view_late", table=v.name)
        created = [v for v in views if v.created]
        if not created or r > 0.3:
            return None
        v = rng.choice(created)
        if r < 0.015:
            # Dropped, and created again later (a build over the base's data).
            v.created = False
            return Stmt(f"DROP MATERIALIZED VIEW {v.name}", feature="drop_materialized_view", table=v.name)
        if r < 0.02:
            return Stmt(f"TRUNCATE {v.base.name}", feature="truncate_base", table=v.base.name, write=True)
        if r < 0.023 and len(v.base.cols) < 12:
            # A column added to a base: SELECT * views gain it (their rows show it as null
            # until written), the others do not.
            b = v.base
            c = Column(f"a{len(b.cols)}", draw_native(rng), "reg")
            b.cols.append(c)
            for x in b.views:
                if x.select_all:
                    x.cols.append(Column(c.name, c.type, "reg"))
            return Stmt(f"ALTER TABLE {b.name} ADD {c.name} {c.type.cql()}", feature="alter_base_add", table=b.name)
        if r < 0.27:
            # A read of the view: by its key, its partitions, slices, the whole view (small
            # pages), filtering, writetime/ttl of its cells.
            v.server_ts = v.base.server_ts
            s = self.select(v, rng.random() < 0.35)
            s.feature = "view_" + s.feature
            if s.projection:
                s.projection = "view_" + s.projection
            return s
        return self.invalid_view_statement(v)

    def invalid_view_statement(self, v):
        """A write to a view, an index on it, or a base change a view forbids."""
        rng = self.rng
        b = v.base
        term = Terms(False)
        kind = rng.choice(["insert", "update", "delete", "index", "drop_base", "drop_key_column"])
        if kind == "insert":
            text = (f"INSERT INTO {v.name} ({', '.join(c.name for c in v.keys)}) "
                    f"VALUES ({', '.join(term(c.type, self.key_value(v, c)) for c in v.keys)})")
        elif kind == "update" and v.values:
            c = v.values[0]
            text = f"UPDATE {v.name} SET {c.name} = {term(c.type, self.cell_value(c.type))} WHERE {self.where_eq(v, v.keys, term)}"
        elif kind == "index" and v.values:
            text = f"CREATE INDEX ON {v.name} ({v.values[0].name})"
        elif kind == "drop_base":
            text = f"DROP TABLE {b.name}"
        elif kind == "drop_key_column" and any(b.col(c.name).role == "reg" for c in v.keys):
            c = next(c for c in v.keys if b.col(c.name).role == "reg")
            text = f"ALTER TABLE {b.name} DROP {c.name}"
        else:
            kind = "delete"
            text = f"DELETE FROM {v.name} WHERE {self.where_eq(v, v.pk, term)}"
        return Stmt(text, expect="error", feature="bad_view:" + kind, table=v.name)

    def expiry_episode(self):
        """1-3 writes with USING TTL 1 or 2 to one table, a wait until they have expired on
        both sides (the runner waits for the clock, see `Stmt.wait_expiry`), then a read of
        the table. No read between them, and no write that reads what it changes, so nothing
        depends on when within the second a cell expires. Drawn from `expiry_rng` alone."""
        main, self.rng = self.rng, self.expiry_rng
        try:
            pool = [t for t in self.tables if not t.counter and not t.views]
            if not pool:
                return []
            t = self.rng.choice(pool)
            writes, n = [], self.rng.randint(1, 3)
            for _ in range(10 * n):
                if len(writes) == n:
                    break
                self.short_ttl = self.rng.choice([1, 1, 2])
                s = self.rng.choice([self.insert, self.update])(t, self.rng.random() < 0.35)
                s.expires, self.short_ttl = self.short_ttl, None
                if s.feature not in READS_BEFORE_WRITE and s.expect == "ok":
                    s.feature = "expiring_" + s.feature
                    writes.append(s)
            wait = Stmt("", feature="wait_expiry", table=t.name, wait_expiry=True)
            read = Stmt(f"SELECT * FROM {t.name}", feature="select_after_expiry", table=t.name,
                        order_types=tuple(x.type.family() for x in t.ck),
                        pk_types=tuple(x.type.family() for x in t.pk))
            return writes + [wait, read]
        finally:
            self.rng, self.short_ttl = main, None

    # ------------------------------------------------------------ mix

    def draw(self):
        if self.expiry_rng.random() < EXPIRY_EPISODE and not self.pending:
            self.pending = self.expiry_episode()
        rng = self.rng
        if self.pending:
            return self.pending.pop(0)
        # Vectors first (--vectors only): their own tables and stream, so the others' stay
        # what the seed drew.
        extra = self.vectors.maybe_draw()
        if extra is not None:
            return extra
        # Before the extras, as the expiry episodes: a draw of these leaves the sequence of
        # the other statements (extras and main stream) what the seed drew without them.
        # These families first: a draw of them consults no other stream, so theirs stay as
        # the seed drew them (the others' order predates them).
        episode = self.alters.maybe_draw()
        if episode:
            first, *self.pending = episode
            return first
        extra = self.clauses.maybe_draw()
        if extra is not None:
            return extra
        extra = self.indexed.maybe_draw()
        if extra is not None:
            return extra
        extra = self.queries.maybe_draw()
        if extra is not None:
            return extra
        extra = self.extras.maybe_draw()
        if extra is not None:
            return extra
        views = [v for t in self.tables for v in t.views]
        if views:
            s = self.view_statement(views)
            if s is not None:
                return s
        t = rng.choice(self.tables)
        if rng.random() < 0.02 and any(c.type.multicell and c.type.kind != "udt" for c in t.values):
            first, *self.pending = self.empty_collection(t, rng.random() < 0.35)
            return first
        bind = rng.random() < 0.35
        r = rng.random()
        if t.indexed and r < 0.25:
            c = rng.choice(t.indexed)
            col = t.col(c)
            term = Terms(bind)
            text = f"SELECT * FROM {t.name} WHERE {c} = {term(col.type, draw_value(rng, col.type))}"
            return Stmt(text, term.params if bind else None, feature="index_query", table=t.name,
                        fetch_size=rng.choice([2, 100]), unordered=True)
        if r < 0.12:
            return self.invalid(t, bind)
        if r < 0.42:
            return self.select(t, bind)
        if r < 0.47:
            return self.batch(bind)
        lwt = not t.counter and rng.random() < 0.1
        if t.counter:
            return rng.choice([self.update, self.update, self.update, self.delete])(t, bind)
        return rng.choice([self.insert, self.insert, self.update, self.update, self.delete])(t, bind, lwt)


def _drop_timestamp(text):
    text = re.sub(r" USING TTL (\d+) AND TIMESTAMP \d+", r" USING TTL \1", text)
    return re.sub(r" USING TIMESTAMP \d+", "", text)


def _has_udt(t):
    return t.kind == "udt" or any(_has_udt(a) for a in t._children())
