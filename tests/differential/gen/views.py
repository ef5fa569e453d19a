"""Drawing materialized views over the generator's tables (the `--views` mode).

Both sides must run with `materialized_views_enabled: true`. A view is drawn the way Cassandra
5.0.9 accepts it (CreateViewStatement): its primary key holds every base key column plus at most
one non-key base column (native or frozen: no non-frozen collection, no duration), every view key
column restricted with `IS NOT NULL` (or by a filter), filters only on base key columns, no
static column selected. A drawn view is itself a `Table` (role "pk"/"ck"/"reg", pools for its key
columns), so the statement generator reads it like any table; `base` names the table it follows.

Views are created in the schema DDL (over an empty table) or later in the statement stream
(`late`: built over the data written so far). Invalid view DDL and writes to a view are drawn
too, with Cassandra's refusals (messages compared).
"""

from .schema import Column, Ddl, Table
from .types import draw_value, literal


def _keyable(c):
    return c.role == "reg" and c.type.keyable() and c.type.kind != "counter"


def draw_view(rng, t, name):
    """A valid view of base table t, as (view Table, CREATE text); None when t cannot have one."""
    if t.counter:
        return None
    statics = t.role("static")
    regs = [c for c in t.values if c.role == "reg"]
    key_reg = None
    cands = [c for c in regs if _keyable(c)]
    if cands and rng.random() < 0.6:
        key_reg = rng.choice(cands)
    keys = list(t.keys) + ([key_reg] if key_reg else [])
    # The view's partition key: one or two of its key columns, the rest clustering columns.
    order = keys[:]
    rng.shuffle(order)
    if key_reg and rng.random() < 0.6:
        order.remove(key_reg)
        order.insert(0, key_reg)
    n_pk = 1 if len(order) == 1 or rng.random() < 0.75 else 2
    vpk, vck = order[:n_pk], order[n_pk:]
    # Selected columns: `*` (not with static columns: Cassandra refuses them in a view), or the
    # key columns and some of the others.
    others = [c for c in regs if c is not key_reg]
    star = not statics and rng.random() < 0.4
    chosen = others if star else [c for c in others if rng.random() < 0.6]
    sel = "*" if star else ", ".join(c.name for c in keys + chosen)
    # WHERE: IS NOT NULL on each view key column; sometimes a filter on a base key column
    # instead of (or beside) its IS NOT NULL.
    where = []
    filt = None
    if rng.random() < 0.3:
        fc = rng.choice(t.keys)
        pool = t.pools[fc.name]
        shape = rng.choice(["=", "IN", "slice"] if fc.role == "ck" else ["=", "IN"])
        if shape == "=":
            filt = (fc, f"{fc.name} = {literal(fc.type, rng.choice(pool))}")
        elif shape == "IN":
            vals = pool[:rng.randint(1, len(pool))]
            filt = (fc, f"{fc.name} IN ({', '.join(literal(fc.type, v) for v in vals)})")
        else:
            filt = (fc, f"{fc.name} {rng.choice(['>', '>=', '<', '<='])} {literal(fc.type, rng.choice(pool))}")
    for c in keys:
        if filt and filt[0] is c and rng.random() < 0.5:
            continue
        where.append(f"{c.name} IS NOT NULL")
    if filt:
        where.insert(rng.randint(0, len(where)), filt[1])
    pk_text = ", ".join(c.name for c in vpk)
    pk_text = f"({pk_text})" if len(vpk) > 1 else pk_text
    key_text = ", ".join([pk_text] + [c.name for c in vck])
    text = f"CREATE MATERIALIZED VIEW {name} AS SELECT {sel} FROM {t.name} WHERE {' AND '.join(where)} PRIMARY KEY ({key_text})"
    # Clustering order: a base clustering column keeps its order unless given; a regular column
    # is ASC.
    orders = {c.name: (c.order if c.role == "ck" else "ASC") for c in vck}
    if vck and rng.random() < 0.3:
        orders = {c.name: rng.choice(["ASC", "DESC"]) for c in vck}
        text += " WITH CLUSTERING ORDER BY (" + ", ".join(f"{n} {o}" for n, o in orders.items()) + ")"
    # A view partition key column from a DESC base clustering column keeps the reversed type
    # (marked DESC here; Cassandra refuses toJson() of its elements, as for the base column).
    cols = ([Column(c.name, c.type, "pk", c.order if c.role == "ck" else "ASC") for c in vpk]
            + [Column(c.name, c.type, "ck", orders[c.name]) for c in vck]
            + [Column(c.name, c.type, "reg") for c in chosen])
    v = Table(name, cols)
    v.base = t
    v.select_all = star
    v.pools = {c.name: t.pools[c.name] for c in keys}
    if len(vpk) == 1:
        # A view row may have an empty partition key (from a base clustering column), but
        # Cassandra refuses to read one by it ("Key may not be empty"): scans only.
        v.pools[vpk[0].name] = [x for x in v.pools[vpk[0].name] if x not in ("", b"")]
    return v, text


def view_pool(rng, t, c):
    """A few values of regular column c of base t, written by most writes of it, so that rows
    meet under the same view key (as key pools do for table keys)."""
    pool = []
    for _ in range(12):
        v = draw_value(rng, c.type, hashable=True)
        # No empty value: a view partition key may not be empty (Cassandra then fails the
        # base write's view update); no nulls inside.
        if v in pool or v in ("", b"") or _has_null(v):
            continue
        pool.append(v)
        if len(pool) == 3:
            break
    return pool


def _has_null(v):
    return v is None or (isinstance(v, tuple) and any(_has_null(x) for x in v))


def draw_views(rng, tables):
    """Views over some tables: (views created in the schema DDL, views created later, ddl)."""
    early, late, ddl = [], [], []
    for t in tables:
        if t.counter or rng.random() < 0.35:
            continue
        # The regular columns a view key may take get value pools in the base.
        for c in t.values:
            if _keyable(c) and c.name not in t.pools:
                t.pools[c.name] = view_pool(rng, t, c)
        for j in range(rng.choice([1, 1, 2])):
            drawn = draw_view(rng, t, f"{t.name}_mv{j}")
            if drawn is None:
                continue
            v, text = drawn
            t.views.append(v)
            if rng.random() < 0.7:
                early.append(v)
                v.created = True
                ddl.append(Ddl(text, "create_materialized_view", v.name))
            else:
                late.append(v)
            v.create_text = text
    return early, late, ddl


def invalid_view_ddl(rng, tables):
    """View DDL Cassandra refuses, each named by its mistake."""
    out = []
    plain = [t for t in tables if not t.counter]
    counters = [t for t in tables if t.counter]
    for _ in range(4):
        t = rng.choice(plain)
        regs = [c for c in t.values if c.role == "reg"]
        keyable = [c for c in regs if _keyable(c)]
        nn = lambda cols: " AND ".join(f"{c.name} IS NOT NULL" for c in cols)   # noqa: E731
        pk = lambda cols: ", ".join(c.name for c in cols)                        # noqa: E731
        kind = rng.choice(["missing_base_key", "two_regular_in_key", "static_column", "counter_base",
                           "no_is_not_null", "filter_regular", "default_ttl", "duplicate_key", "token_filter",
                           "unknown_column", "collection_in_key", "view_of_view", "table_name", "no_base"])
        text = None
        keys, where_keys = pk(t.keys), nn(t.keys)
        if kind == "missing_base_key" and len(t.keys) > 1:
            text = _mv("*", t.name, where_keys, pk(t.keys[:-1]))
        elif kind == "two_regular_in_key" and len(keyable) > 1:
            ks = t.keys + keyable[:2]
            text = _mv(pk(ks), t.name, nn(ks), pk(ks))
        elif kind == "static_column" and t.role("static"):
            text = _mv(pk(t.keys + t.role("static")), t.name, where_keys, keys)
        elif kind == "counter_base" and counters:
            c = rng.choice(counters)
            text = _mv("*", c.name, nn(c.keys), pk(c.keys))
        elif kind == "no_is_not_null":
            text = _mv(keys, t.name, nn(t.keys[1:]) or f"token({pk(t.pk)}) > 0", keys)
            if len(t.keys) == 1:
                kind = "token_filter"
        elif kind == "filter_regular" and keyable:
            c = keyable[0]
            value = _lit(c, t.pools.get(c.name) or [draw_value(rng, c.type)])
            text = _mv(pk(t.keys + [c]), t.name, f"{where_keys} AND {c.name} = {value}", pk([c] + t.keys))
        elif kind == "default_ttl":
            text = _mv(keys, t.name, where_keys, keys, " WITH default_time_to_live = 5")
        elif kind == "duplicate_key":
            text = _mv(keys, t.name, where_keys, pk(t.keys + t.keys[:1]))
        elif kind == "token_filter":
            text = _mv(keys, t.name, f"{where_keys} AND token({pk(t.pk)}) > 0", keys)
        elif kind == "unknown_column":
            text = _mv(keys + ", nosuch", t.name, where_keys, keys)
        elif kind == "collection_in_key" and any(c.type.multicell and c.type.kind != "udt" for c in regs):
            c = next(c for c in regs if c.type.multicell and c.type.kind != "udt")
            text = _mv(pk(t.keys + [c]), t.name, nn(t.keys + [c]), pk([c] + t.keys))
        elif kind == "view_of_view" and any(v.created for v in t.views):
            v = next(v for v in t.views if v.created)
            text = _mv("*", v.name, nn(v.keys), pk(v.keys))
        elif kind == "table_name":
            text = _mv(keys, t.name, where_keys, keys, name=t.name)
        elif kind == "no_base":
            text = _mv("k", "nosuch_base", "k IS NOT NULL", "k")
        if text:
            out.append(Ddl(text, "bad_view:" + kind, t.name, expect="error"))
    return out


def _mv(sel, base, where, key, tail="", name="bad_mv"):
    return f"CREATE MATERIALIZED VIEW {name} AS SELECT {sel} FROM {base} WHERE {where} PRIMARY KEY ({key}){tail}"


def _lit(c, pool):
    return literal(c.type, pool[0])
