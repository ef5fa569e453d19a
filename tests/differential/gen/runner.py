"""Running generated statements on both sides, comparing, and naming the differences.

A difference gets a signature `<what>:<feature>`:
  unsupported:F      the reference accepted it, Peregrine returned an error
  accepts_invalid:F  the reference rejected it, Peregrine accepted it
  code:F             both rejected it, with different error codes
  message:F          both rejected it with the same code, different message text
  columns:F          both answered, with different column names or CQL types
  rows:F             both answered, with different rows (order, count or values)
  driver_error_X:F   the Python driver itself failed on side X (bind types from a PREPARE,
                     undecodable result) and not on the other side
  cascade:F          statements on a table whose CREATE TABLE already differed (F = that signature)
F is the generator's feature name for the statement (e.g. group_by, list_append, unknown_column).
"""

import re
from dataclasses import dataclass, field

import run  # tests/differential/run.py: value normalization, error codes, row comparison

# The driver wraps a server error's message: `... message="..."` at the end, or inside the
# host map of a NoHostAvailable (`... message="...">})`).
_MESSAGE = re.compile(r'message="(.*)"', re.S)
_TABLE_REF = re.compile(r"\b(?:INTO|UPDATE|FROM)\s+(\w+)", re.I)
POSSIBLE_WHEN_OK = ("unsupported", "columns", "rows")
POSSIBLE_WHEN_ERROR = ("accepts_invalid", "code", "message")


def message(outcome):
    """The server's message text of an error outcome (the driver wraps it)."""
    m = _MESSAGE.search(outcome.error_text)
    return m.group(1) if m else outcome.error_text


def execute(session, stmt, ks):
    """Runs one Stmt (prepared when it has bind values) and returns a run.Outcome."""
    from cassandra.query import SimpleStatement, tuple_factory
    session.row_factory = tuple_factory
    try:
        if stmt.params is not None:
            prepared = session.prepare(stmt.text)
            query = prepared.bind(stmt.params)
            query.fetch_size = stmt.fetch_size
        else:
            query = SimpleStatement(stmt.text, fetch_size=stmt.fetch_size)
        rs = session.execute(query, timeout=30)
        names = rs.column_names or []
        types = [t.cql_parameterized_type() for t in (rs.column_types or [])]
        rows = [tuple(run.norm_value(v, ks) for v in row) for row in rs]  # fetches every page
    except Exception as e:  # noqa: BLE001 - every failure is an outcome to compare
        return run.Outcome(error=run._error_code(e), error_text=str(e))
    return run.Outcome(columns=list(zip(names, types)), rows=rows)


# What an expiring write's expiry is waited for beyond its TTL, counted from when both sides
# had answered it: the servers' clocks are this machine's, read at millisecond precision or
# coarser.
EXPIRY_MARGIN_S = 0.3


def wait_until(wall_time):
    """Returns once the wall clock reads `wall_time` or later."""
    import time
    while (left := wall_time - time.time()) > 0:
        time.sleep(left)


def wait_alive(session, limit_s=60):
    """Polls until the session answers a trivial query (the driver reconnects on its own)."""
    import time
    deadline = time.monotonic() + limit_s
    while True:
        try:
            session.execute("SELECT release_version FROM system.local", timeout=5)
            return
        except Exception:  # noqa: BLE001 - still reconnecting
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def wait_index_queryable(session, ks, index, limit_s=120):
    """Polls until `system_views.sai_column_indexes` says the SAI index is queryable: 5.0.9
    builds an index created over data in the background after CREATE INDEX has answered, and
    an ANN query before that fails with INDEX_NOT_AVAILABLE (not a difference to report)."""
    import time
    deadline = time.monotonic() + limit_s
    while True:
        rows = list(session.execute(
            "SELECT is_queryable FROM system_views.sai_column_indexes WHERE keyspace_name = %s "
            "AND index_name = %s ALLOW FILTERING", (ks, index), timeout=30))
        if rows and rows[0][0]:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"index {ks}.{index} not queryable after {limit_s} s")
        time.sleep(0.1)


def wait_view_built(session, ks, view, limit_s=120):
    """Polls until `system.built_views` lists the view: Cassandra builds a new view over the
    base's data in the background after CREATE MATERIALIZED VIEW has answered, and a read
    before the build has finished misses rows (not a difference to report)."""
    import time
    deadline = time.monotonic() + limit_s
    while True:
        rows = list(session.execute(
            "SELECT view_name FROM system.built_views WHERE keyspace_name = %s AND view_name = %s",
            (ks, view), timeout=30))
        if rows:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"view {ks}.{view} not built after {limit_s} s")
        time.sleep(0.1)


def differences(stmt, oa, ob):
    """(signature, detail lines) of a difference, or None when both sides agree."""
    directives = {"unordered": stmt.unordered, "nullness": stmt.nullness, "tolerance": stmt.tolerance}
    lines = run.compare(run.Statement(stmt.text, 0, directives), oa, ob)
    f = stmt.feature
    for side, o in (("a", oa), ("b", ob)):
        # The driver refused to bind or decode: wrong prepared metadata or result encoding.
        if str(o.error).startswith("client:") and str(oa.error) != str(ob.error):
            return f"driver_error_{side}:{f}", lines
    if (oa.error is None) != (ob.error is None):
        if oa.error is None:
            return "unsupported:" + _unsupported_class(message(ob), f), lines
        return "accepts_invalid:" + f, lines
    if oa.error is not None:
        if oa.error != ob.error:
            return "code:" + f, lines
        # As run.py compares them: a function's listed signatures sorted (Cassandra lists them
        # in a hash order that changes from one start of the node to the next).
        if run._comparable(oa.error_text) != run._comparable(ob.error_text):
            return "message:" + f, [f"a: {message(oa)}", f"b: {message(ob)}"]
        return None
    if not lines:
        return None
    if oa.columns != ob.columns:   # column types come from the selection, not from paging etc.
        return "columns:" + (stmt.projection or f), lines
    return "rows:" + rows_class(stmt, oa, ob), lines


# Types whose Cassandra order is typed comparison, not the order of their serialized bytes.
TYPED_ORDER = {"decimal", "tuple", "frozen_udt", "list", "set", "map"}
GENERIC = {"select", "full_scan", "select_partition", "select_full", "in_clustering", "in_partition",
           "allow_filtering", "token_range", "order_by", "per_partition_limit", "select_json", "index_query"}


def rows_class(stmt, oa, ob):
    """What kind of row difference, for the signature after `rows:`.

    nested_collection_order   same rows once maps/sets inside values are sorted
    row_order:F               same rows, different order
    counter                   a counter table's rows differ (values or which rows exist)
    empty_collection_vs_null  one side has an empty collection where the other has null
    java_double_digits        SELECT JSON: a double of 2^63 or more printed with other digits
    value:TYPE                same row count; the first differing cell is of CQL type TYPE
    limited_order:clustering_T  a LIMIT kept other rows (as many) of a table clustered by a typed-order type T
    row_count:F[:paged]       different numbers of rows (":paged": the answer spans pages)
    F                         statements whose result is the feature itself (count, writetime, LWT ...)
    """
    ra, rb = _comparable(stmt, oa), _comparable(stmt, ob)
    if len(ra) == len(rb) and sorted(map(_canon, ra), key=repr) == sorted(map(_canon, rb), key=repr):
        if sorted(ra, key=repr) != sorted(rb, key=repr):
            return "nested_collection_order"
        # Partitions come in token order; a collection/tuple key serialized in another element
        # order has another token.
        odd_pk = [f for f in stmt.pk_types if f in TYPED_ORDER]
        odd = [f for f in stmt.order_types if f in TYPED_ORDER]
        if odd_pk:
            return f"row_order:partition_key_{odd_pk[0]}"
        return "row_order:" + (f"clustering_{odd[0]}" if odd else stmt.feature)
    # A counter table first: its partitions differ after a DELETE (Cassandra drops later
    # increments of a deleted counter), whatever else the statement selects.
    if stmt.counter_table or (any(t == "counter" for _, t in oa.columns) and not stmt.feature.startswith("lwt")):
        return "counter"
    odd_pk = [f for f in stmt.pk_types if f in TYPED_ORDER]
    if odd_pk and any("token(" in name for name, _ in oa.columns):
        return "token:partition_key_" + odd_pk[0]
    if stmt.feature.split(":")[0] not in GENERIC | {"slice", "allow_filtering"}:
        return stmt.feature
    odd = [f for f in stmt.order_types if f in TYPED_ORDER]
    if odd and " LIMIT " in stmt.text and len(oa.rows) == len(ob.rows):
        # A LIMIT / PER PARTITION LIMIT keeps the first rows: another clustering order, other
        # rows, as many (a different count is not the order's doing: --seed 132's SAI inet
        # range under a LIMIT, on a table clustered by a set, is row_count:allow_filtering:inet).
        return "limited_order:clustering_" + odd[0]
    if len(oa.rows) != len(ob.rows):
        # ":paged" when the answer spans several pages: rows lost or repeated at page boundaries.
        paged = ":paged" if stmt.fetch_size and max(len(oa.rows), len(ob.rows)) > stmt.fetch_size else ""
        return "row_count:" + stmt.feature + paged
    if stmt.feature == "select_json":
        return _json_class(oa, ob)
    for ra, rb in zip(oa.rows, ob.rows):
        for (name, cql_type), x, y in zip(oa.columns, ra, rb):
            if x != y and not (name in stmt.nullness and (x is None) == (y is None)):
                if _empty_collection(x, y) or _empty_collection(y, x):
                    return "empty_collection_vs_null"
                if _canon(x) == _canon(y):
                    return "nested_collection_order"
                if x is None and isinstance(y, tuple) and all(f is None for f in y):
                    return "null_fields_udt_vs_null"
                return "value:" + cql_type.split("<")[0]
    return stmt.feature


def _comparable(stmt, o):
    """Rows as compared: null/not-null for nullness columns, tolerance columns left out."""
    idx = {i: name for i, (name, _) in enumerate(o.columns)}
    def cell(i, v):
        if idx[i] in stmt.nullness:
            return v is not None
        return None if idx[i] in stmt.tolerance else v
    return [tuple(cell(i, v) for i, v in enumerate(r)) for r in o.rows]


def _json_class(oa, ob):
    """SELECT JSON: the same rows once empty collections count as null / lists are sorted?"""
    import json
    try:
        ja = [json.loads(r[0]) for r in oa.rows]
        jb = [json.loads(r[0]) for r in ob.rows]
    except (ValueError, TypeError):
        return "value:select_json"
    if _java_double_digits(oa, ob):
        return "java_double_digits"
    if _json_norm(ja, False) == _json_norm(jb, False):
        return "empty_collection_vs_null"
    if _json_norm(ja, True) == _json_norm(jb, True):
        return "nested_collection_order"
    return "value:select_json"


class _Number(str):
    """The text of a JSON number with a fraction or exponent."""


def _java_double_digits(oa, ob):
    """The same JSON but for doubles of 2^63 and more that Cassandra prints with other
    digits: JDK 17's `Double.toString` is not always the shortest text of a double there
    (1e23 as `9.999999999999999E22`), Peregrine's is (docs/compatibility.md, "Digits of large
    doubles")."""
    import json
    try:
        ja = [json.loads(r[0], parse_float=_Number) for r in oa.rows]
        jb = [json.loads(r[0], parse_float=_Number) for r in ob.rows]
    except (ValueError, TypeError):
        return False
    seen = []

    def same(x, y):
        if isinstance(x, dict) and isinstance(y, dict):
            return x.keys() == y.keys() and all(same(x[k], y[k]) for k in x)
        if isinstance(x, list) and isinstance(y, list):
            return len(x) == len(y) and all(same(a, b) for a, b in zip(x, y))
        if x == y:
            return True
        if isinstance(x, _Number) and isinstance(y, _Number) and "E" in x and "E" in y:
            seen.append(x)
            return float(x) == float(y) and abs(float(x)) >= 2.0**63
        return False
    return same(ja, jb) and bool(seen)


def _json_norm(v, sort):
    if isinstance(v, dict):
        return {k: _json_norm(x, sort) for k, x in v.items()} or None
    if isinstance(v, list):
        items = [_json_norm(x, sort) for x in v]
        return (sorted(items, key=repr) if sort else items) or None
    return v


def _empty_collection(x, y):
    return x is None and isinstance(y, tuple) and len(y) == 2 and y[0] in ("list", "set", "map") and y[1] == ()


def _canon(v):
    """v with every map and set in a canonical order, to tell ordering from content differences."""
    if isinstance(v, tuple):
        if len(v) == 2 and v[0] in ("map", "set") and isinstance(v[1], tuple):
            return (v[0], tuple(sorted((_canon(x) for x in v[1]), key=repr)))
        return tuple(_canon(x) for x in v)
    return v


# Peregrine's "not supported" messages name the cause better than the statement's feature
# (an UPDATE that also sets a UDT field fails for the UDT field, whatever else it does).
_UNSUPPORTED = [
    (re.compile(r"Setting UDT fields individually"), "udt_field_set"),
    (re.compile(r"Deleting collection elements"), "delete_element"),
    (re.compile(r"GROUP BY is not supported"), "group_by"),
    (re.compile(r"MaxWriteTime"), "maxwritetime"),
]


def _unsupported_class(b_message, feature):
    for rx, name in _UNSUPPORTED:
        if rx.search(b_message):
            return name
    return feature


def tables_of(stmt, known_tables):
    return sorted({m for m in _TABLE_REF.findall(stmt.text) if m in known_tables})


def describe(o):
    if o.error is not None:
        return f"error {run._fmt_code(o.error)}: {message(o)}"
    if not o.columns:
        return "ok"
    return f"{len(o.rows)} row(s) {o.rows[:3]}" + (" ..." if len(o.rows) > 3 else "")


# ---------------------------------------------------------------- known differences

def load_known(path):
    """[(compiled regex, pattern text, reason)] from `<signature regex> :: <reason>` lines."""
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            pat, sep, reason = line.partition(" :: ")
            if not sep:
                raise ValueError(f"{path}:{n}: expected '<signature regex> :: <reason>'")
            out.append((re.compile(pat.strip()), pat.strip(), reason.strip()))
    return out


def match_known(known, sig):
    for rx, pat, reason in known:
        if rx.fullmatch(sig):
            return pat, reason
    return None


# ---------------------------------------------------------------- report

@dataclass
class Example:
    text: str
    params: list
    a: str
    b: str
    detail: list


@dataclass
class Tally:
    passed: int = 0
    generator: list = field(default_factory=list)          # (stmt, outcome a, why)
    diffs: dict = field(default_factory=dict)              # signature -> [count, [Example]]
    could_differ: set = field(default_factory=set)         # signatures a passing statement could have had

    def add_pass(self, stmt, oa):
        self.passed += 1
        kinds = POSSIBLE_WHEN_OK if oa.error is None else POSSIBLE_WHEN_ERROR
        self.could_differ.update(f"{k}:{stmt.feature}" for k in kinds)

    def add_diff(self, sig, stmt, oa, ob, detail, keep=3):
        entry = self.diffs.setdefault(sig, [0, []])
        entry[0] += 1
        if len(entry[1]) < keep:
            entry[1].append(Example(stmt.text, stmt.params, describe(oa), describe(ob), detail))
