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
        return next(c for c in self.cols if c.name == name)


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


def draw_schema(rng, n_tables, views=False):
    """Returns (udts, tables, ddl statements in execution order). With `views` (both sides run
    with materialized_views_enabled) it also draws views (gen/views.py): each in its base's
    `views`, created in this DDL or later in the statement stream."""
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
    if sai is not legacy:
        out.append(Ddl(f"CREATE CUSTOM INDEX {t.name}_{sai.name}_sai ON {t.name} ({sai.name}) "
                       f"USING 'StorageAttachedIndex'", "create_sai_index", t.name))
        t.indexed.append(sai.name)
    if views:
        return out   # views are drawn by gen/views.py
    keys = " AND ".join(f"{c.name} IS NOT NULL" for c in t.keys + [legacy])
    view_key = ", ".join([f"({legacy.name}, {', '.join(c.name for c in t.pk)})"] + [c.name for c in t.ck])
    # Materialized views are disabled in Cassandra's default configuration: an error on both sides.
    out.append(Ddl(f"CREATE MATERIALIZED VIEW {t.name}_mv AS SELECT * FROM {t.name} WHERE {keys} "
                   f"PRIMARY KEY ({view_key})", "create_materialized_view", t.name, expect="error"))
    return out
