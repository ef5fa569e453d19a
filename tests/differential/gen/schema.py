"""Drawing a keyspace's schema: user types, tables (regular, counter, indexed) and their DDL.

Everything is drawn from one `random.Random`, so a seed fixes the schema and its DDL text.
"""

from dataclasses import dataclass, field

from .types import T, draw_native, draw_type, draw_value


@dataclass
class Column:
    name: str
    type: T
    role: str                 # "pk", "ck", "static", "reg"
    order: str = "ASC"        # clustering order, for "ck"


@dataclass
class Table:
    name: str
    cols: list
    counter: bool = False
    indexed: list = field(default_factory=list)   # columns the DDL puts an index on
    indexes: list = field(default_factory=list)   # every index of the table (Index), for gen/indexed.py
    extra_cols: list = field(default_factory=list)  # columns only gen/indexed.py writes (ALTER TABLE ADD)
    pools: dict = field(default_factory=dict)      # key column name -> the few values drawn for it
    server_ts: bool = False   # some write without USING TIMESTAMP was drawn: writetime() not exact
    views: list = field(default_factory=list)     # materialized views of this table (Tables)
    base: "Table" = None      # for a view: the table it follows
    created: bool = False     # for a view: its CREATE has been drawn (reads may name it)
    create_text: str = ""     # for a view: its CREATE MATERIALIZED VIEW
    select_all: bool = False  # for a view: SELECT * (it gains the columns added to its base)

    def role(self, *roles):
        return [c for c in self.cols if c.role in roles]

    @property
    def pk(self):
        return self.role("pk")

    @property
    def ck(self):
        return self.role("ck")

    @property
    def keys(self):
        return self.role("pk", "ck")

    @property
    def values(self):
        """Non-key columns."""
        return self.role("static", "reg")

    def col(self, name):
        return next(c for c in self.cols + self.extra_cols if c.name == name)


@dataclass
class Index:
    name: str
    column: str
    target: str               # "simple", "values", "keys", "entries", "full"
    sai: bool
    pool: list = field(default_factory=list)   # values a query names: of the column, element, key
    vpool: list = field(default_factory=list)  # entries(): the map values a query names

    def on(self):
        return self.column if self.target == "simple" else f"{self.target}({self.column})"


@dataclass
class Ddl:
    text: str
    feature: str
    table: str = None
    expect: str = "ok"        # "ok" or "error" on the reference


def draw_udts(rng, n):
    udts = []
    for i in range(n):
        fields = tuple((f"f{j}", draw_type(rng, udts, depth=1, frozen_ctx=True)) for j in range(rng.randint(2, 3)))
        udts.append(T("udt", fields, True, f"udt{i}"))
    return udts


def draw_table(rng, name, udts, counter=False):
    cols = []
    for i in range(rng.choice([1, 1, 1, 2, 2, 3])):
        cols.append(Column(f"pk{i}", _key_type(rng, udts), "pk"))
    for i in range(rng.choice([0, 1, 1, 2, 2, 3])):
        cols.append(Column(f"ck{i}", _key_type(rng, udts), "ck", rng.choice(["ASC", "DESC"])))
    if counter:
        cols += [Column(f"n{i}", T("counter"), "reg") for i in range(rng.randint(1, 2))]
    else:
        if cols[-1].role == "ck" and rng.random() < 0.5:
            cols.append(Column("s0", draw_type(rng, udts), "static"))
        for i in range(rng.randint(2, 5)):
            cols.append(Column(f"v{i}", draw_type(rng, udts), "reg"))
    t = Table(name, cols, counter)
    for c in t.keys:
        pool = []
        for _ in range(8):
            v = draw_value(rng, c.type, hashable=True)
            # Cassandra rejects an empty partition key ("Key may not be empty"), and 5.0.9 fails
            # a key column's empty map literal `{}` with a ClassCastException (it types the
            # literal as a set there), so neither is drawn.
            empty = (c.role == "pk" and v in ("", b"")) or (c.type.kind == "map" and not v)
            if v not in pool and not _has_null(v) and not empty:
                pool.append(v)
            if len(pool) == 3:
                break
        t.pools[c.name] = pool
    return t


def _has_null(v):
    return v is None or (isinstance(v, tuple) and any(_has_null(x) for x in v))


def _key_type(rng, udts):
    # Mostly native keys (the interesting orderings), sometimes a frozen/tuple key.
    return draw_type(rng, udts, keyable=True) if rng.random() < 0.2 else draw_native(rng, keyable=True)


def create_type(u):
    return f"CREATE TYPE {u.name} ({', '.join(f'{f} {t.cql()}' for f, t in u.args)})"


def create_table(t):
    defs = [f"{c.name} {c.type.cql()}" + (" STATIC" if c.role == "static" else "") for c in t.cols]
    pk = ", ".join(c.name for c in t.pk)
    pk = f"({pk})" if len(t.pk) > 1 else pk
    key = ", ".join([pk] + [c.name for c in t.ck])
    text = f"CREATE TABLE {t.name} ({', '.join(defs)}, PRIMARY KEY ({key}))"
    if t.ck:
        text += " WITH CLUSTERING ORDER BY (" + ", ".join(f"{c.name} {c.order}" for c in t.ck) + ")"
    return text


def draw_schema(rng, n_tables, views=False, index_rng=None):
    """Returns (udts, tables, ddl statements in execution order). With `views` (both sides run
    with materialized_views_enabled) it also draws views (gen/views.py): each in its base's
    `views`, created in this DDL or later in the statement stream. With `index_rng` it also
    draws, from that stream alone (so the rest stays what the seed gave), more indexes
    (`more_indexes`) for gen/indexed.py's queries."""
    udts = draw_udts(rng, rng.randint(1, 3))
    ddl = [Ddl(create_type(u), "ddl_type") for u in udts]
    # Invalid DDL: duration nested in a clustering column ("duration type is not supported for
    # PRIMARY KEY column 'c'").
    ddl.append(Ddl("CREATE TABLE bad_duration_key (k int, c frozen<list<duration>>, PRIMARY KEY (k, c))",
                   "duration_in_key", expect="error"))
    tables = []
    for i in range(n_tables):
        kind = "counter" if i % 5 == 4 else "indexed" if i % 7 == 3 else "plain"
        t = draw_table(rng, f"t{i}", udts, counter=kind == "counter")
        tables.append(t)
        ddl.append(Ddl(create_table(t), "ddl_table", t.name))
        if kind == "indexed":
            ddl += index_ddl(rng, t, views)
        if index_rng is not None and kind != "counter":
            ddl += more_indexes(index_rng, t)
    if views:
        from .views import draw_views, invalid_view_ddl
        _, _, view_ddl = draw_views(rng, tables)
        ddl += view_ddl + invalid_view_ddl(rng, tables)
    return udts, tables, ddl


def index_ddl(rng, t, views=False):
    """Index DDL on table t, and (views off) a view Cassandra refuses for that."""
    out = []
    natives = [c for c in t.values if c.type.is_native and c.role == "reg" and c.type.kind != "duration"]
    if not natives:
        return out
    legacy = natives[0]
    sai = next((c for c in reversed(natives) if c.type.kind != "blob"), legacy)   # SAI: "Unsupported type: blob"
    out.append(Ddl(f"CREATE INDEX {t.name}_{legacy.name}_idx ON {t.name} ({legacy.name})", "create_index", t.name))
    t.indexed.append(legacy.name)
    t.indexes.append(Index(f"{t.name}_{legacy.name}_idx", legacy.name, "simple", False))
    if sai is not legacy:
        out.append(Ddl(f"CREATE CUSTOM INDEX {t.name}_{sai.name}_sai ON {t.name} ({sai.name}) "
                       f"USING 'StorageAttachedIndex'", "create_sai_index", t.name))
        t.indexed.append(sai.name)
        t.indexes.append(Index(f"{t.name}_{sai.name}_sai", sai.name, "simple", True))
    if views:
        return out   # views are drawn by gen/views.py
    keys = " AND ".join(f"{c.name} IS NOT NULL" for c in t.keys + [legacy])
    view_key = ", ".join([f"({legacy.name}, {', '.join(c.name for c in t.pk)})"] + [c.name for c in t.ck])
    # Materialized views are disabled in Cassandra's default configuration: an error on both sides.
    out.append(Ddl(f"CREATE MATERIALIZED VIEW {t.name}_mv AS SELECT * FROM {t.name} WHERE {keys} "
                   f"PRIMARY KEY ({view_key})", "create_materialized_view", t.name, expect="error"))
    return out


# Element types an index on a collection is drawn for (SAI: "Unsupported type: blob"; no
# durations, which are not comparable).
def _indexable_native(t, sai):
    return t.is_native and t.kind not in ("duration", "counter") and not (sai and t.kind == "blob")


def more_indexes(rng, t):
    """1-3 more indexes on table t, about half the tables: SAI or legacy on regular, static,
    clustering and (compound) partition key columns, values()/keys()/entries() of non-frozen
    collections, full() of frozen ones. Each gets a pool of a few values its queries name
    (gen/indexed.py). Drawn from `rng` alone."""
    if rng.random() < 0.45:
        return []
    out = []
    if rng.random() < 0.4:
        # A collection of native values added for the indexes alone (the other statements do
        # not know it, so the seed's other statements stay as they were): tables draw few.
        key = T(rng.choice(["int", "text", "bigint", "timestamp", "inet", "double", "uuid"]))
        kind = rng.choice(["map", "map", "set", "list"])
        ty = T(kind, (key, T(rng.choice(["int", "text", "date", "boolean"]))) if kind == "map" else (key,))
        c = Column("ix_" + kind[0], ty, "reg")
        t.extra_cols.append(c)
        out.append(Ddl(f"ALTER TABLE {t.name} ADD {c.name} {ty.cql()}", "ddl_alter_add", t.name))
    taken = {(i.column, i.target) for i in t.indexes} | {(c, "simple") for c in t.indexed}
    cands = []
    for c in t.cols + t.extra_cols:
        ty, k = c.type, c.type.kind
        if "duration" in ty.cql():
            continue   # "Secondary indexes are not supported on collections containing durations"
        if c.role == "pk" and len(t.pk) == 1:
            continue   # SAI refuses the only partition key column; legacy serves nothing there
        if ty.is_native:
            cands.append((c, "simple"))
        elif k in ("list", "set") and ty.multicell and ty.args[0].is_native:
            cands.append((c, "values"))
        elif k == "map" and ty.multicell and ty.args[0].is_native and ty.args[1].is_native:
            cands += [(c, "keys"), (c, "values"), (c, "entries")]
        elif k in ("list", "set", "map") and ty.frozen and all(a.is_native for a in ty.args):
            cands.append((c, "full"))
    cands = [(c, tg) for c, tg in cands if (c.name, tg) not in taken]
    # Regular columns most, then collections; keys now and then.
    weights = [0.5 if c.role in ("pk", "ck") else 4.0 if c in t.extra_cols else 3.0 if c.type.kind == "map"
               else 2.0 if tg != "simple" else 1.5 for c, tg in cands]
    used = set()
    for _ in range(rng.randint(1, 3)):
        if not cands:
            break
        c, target = rng.choices(cands, weights)[0]
        i = cands.index((c, target))
        del cands[i], weights[i]
        # One index per column, except the several targets of one map.
        if c.name in used and target == "simple":
            continue
        elem = {"simple": c.type, "full": c.type, "keys": c.type.args[0] if c.type.args else None,
                "values": c.type.args[-1] if c.type.args else None,
                "entries": c.type.args[0] if c.type.args else None}[target]
        types = [elem] + ([c.type.args[1]] if target == "entries" else [])
        sai = rng.random() < 0.65 and all(_indexable_native(x, True) or target == "full" for x in types) \
            and not (target == "full" and any(a.kind in ("blob", "duration") for a in c.type.args))
        if not sai and not all(_indexable_native(x, False) or target == "full" for x in types):
            continue
        if c.type.is_native and not _indexable_native(c.type, sai):
            continue
        used.add(c.name)
        name = f"{t.name}_{c.name}_{target}_{'sai' if sai else 'ix'}"
        ix = Index(name, c.name, target, sai)
        ix.pool = _pool(rng, elem, target != "values" or c.type.kind != "list")
        if target == "entries":
            ix.vpool = _pool(rng, c.type.args[1], False)
        t.indexes.append(ix)
        using = " USING 'sai'" if sai else ""
        out.append(Ddl(f"CREATE INDEX {name} ON {t.name} ({ix.on()}){using}",
                       "create_sai_index" if sai else "create_index", t.name))
    return out


def _pool(rng, ty, hashable):
    pool = []
    for _ in range(8):
        v = draw_value(rng, ty, hashable=True)
        if v not in pool and not _has_null(v):
            pool.append(v)
        if len(pool) == 3:
            break
    return pool
