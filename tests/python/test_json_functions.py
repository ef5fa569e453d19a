"""toJson() / fromJson() and SELECT JSON through the Python driver, protocol v4 and v5:
prepared `fromJson(?)` binds (their metadata, null, unset, bad JSON), `SELECT JSON` text decoded
with json.loads, and toJson of selectors. Expected answers are Cassandra 5.0.9's to the same
statements.
"""

import json
import time
from datetime import datetime, timezone
from decimal import Decimal

import pytest
from cassandra import FunctionFailure, InvalidRequest
from cassandra.query import UNSET_VALUE, BatchStatement


@pytest.fixture(params=[4, 5], ids=["v4", "v5"])
def js(request, make_cluster, ks):
    s = make_cluster(protocol_version=request.param).connect(ks)
    s.execute("CREATE TYPE IF NOT EXISTS addr (street text, zip int)")
    s.execute("CREATE TABLE IF NOT EXISTS j (k int PRIMARY KEY, v int, t text, de decimal, vi varint, "
              "b blob, du duration, l list<int>, m map<text, int>, a frozen<addr>, "
              "tp tuple<int, text>, vec vector<float, 2>)")
    return s


def _ms_now():
    return int(time.time() * 1000)


def _wait_past(ms):
    """Returns once the wall clock is past `ms` (a few milliseconds of busy waiting)."""
    while _ms_now() <= ms:
        pass


def _ms(ts):
    return int(ts.replace(tzinfo=timezone.utc).timestamp() * 1000)


def test_now_text_is_the_statement_time(js):
    """A timestamp written 'now' is the time of PREPARE for a literal of a prepared statement
    (Cassandra fixes literals there), and the execution's time for a bound JSON value."""
    t = f"tn_v{js.cluster.protocol_version}"
    js.execute(f"CREATE TABLE IF NOT EXISTS {t} (k int PRIMARY KEY, ts timestamp)")
    before = _ms_now()
    ins = js.prepare(f"INSERT INTO {t} (k, ts) VALUES (?, 'now')")
    prepared = _ms_now()
    _wait_past(prepared + 3)
    js.execute(ins, (1,))
    _wait_past(_ms_now() + 3)
    js.execute(ins, (2,))
    got = {r.k: _ms(r.ts) for r in js.execute(f"SELECT k, ts FROM {t}")}
    assert got[1] == got[2] and before <= got[1] <= prepared, (before, got, prepared)

    for k, (text, args) in enumerate([
        (f"INSERT INTO {t} JSON ?", lambda k: ('{"k": %d, "ts": "now"}' % k,)),
        (f"INSERT INTO {t} (k, ts) VALUES (?, fromJson(?))", lambda k: (k, '"now"')),
        (f"INSERT INTO {t} (k, ts) VALUES (%d, 'now')", None),
    ], start=3):
        stmt = js.prepare(text) if args else None
        _wait_past(_ms_now() + 3)
        start = _ms_now()
        js.execute(stmt, args(k)) if args else js.execute(text % k)
        end = _ms_now()
        ts = _ms(js.execute(f"SELECT ts FROM {t} WHERE k = {k}").one().ts)
        assert start <= ts <= end, (text, start, ts, end)


def test_prepared_from_json_binds_text_typed_by_its_receiver(js):
    ins = js.prepare("INSERT INTO j (k, v, l, a) VALUES (?, fromJson(?), fromJson(:lj), fromJson(?))")
    meta = [(c.name, c.type.typename) for c in ins.column_metadata]
    assert meta == [("k", "int"), ("arg0(system.fromjson)", "varchar"), ("lj", "varchar"),
                    ("arg0(system.fromjson)", "varchar")]
    js.execute(ins, (1, "5", "[3, 1]", '{"street": "Main", "zip": 7}'))
    row = js.execute("SELECT v, l, a FROM j WHERE k = 1").one()
    assert row.v == 5 and row.l == [3, 1]
    assert (row.a.street, row.a.zip) == ("Main", 7)


def test_from_json_null_and_unset(js):
    ins = js.prepare("INSERT INTO j (k, v) VALUES (?, fromJson(?))")
    js.execute(ins, (2, "8"))
    js.execute(ins, (2, None))
    assert js.execute("SELECT v FROM j WHERE k = 2").one().v is None
    js.execute(ins, (2, "null"))
    assert js.execute("SELECT v FROM j WHERE k = 2").one().v is None
    with pytest.raises(InvalidRequest, match="Invalid unset value for argument in call to function fromjson"):
        js.execute(ins, (2, UNSET_VALUE))


def test_from_json_bad_input_fails_the_function(js):
    ins = js.prepare("INSERT INTO j (k, v) VALUES (?, fromJson(?))")
    with pytest.raises(FunctionFailure, match="MarshalException: Unable to make int from 'x'"):
        js.execute(ins, (3, '"x"'))
    with pytest.raises(FunctionFailure, match="Could not decode JSON string '{'"):
        js.execute(ins, (3, "{"))
    assert js.execute("SELECT v FROM j WHERE k = 3").one() is None


def test_from_json_in_where_update_and_conditions(js):
    js.execute("INSERT INTO j (k, v, m) VALUES (4, 1, {'a': 1})")
    sel = js.prepare("SELECT v FROM j WHERE k = fromJson(?)")
    assert sel.column_metadata[0].type.typename == "varchar"
    assert js.execute(sel, ("4",)).one().v == 1
    upd = js.prepare("UPDATE j SET v = fromJson(?), m = m + fromJson(?) WHERE k = 4 IF v = fromJson(?)")
    assert js.execute(upd, ("2", '{"b": 2}', "1")).one()[0] is True
    assert js.execute(upd, ("3", '{"c": 3}', "1")).one()[0] is False
    row = js.execute("SELECT v, m FROM j WHERE k = 4").one()
    assert row.v == 2 and row.m == {"a": 1, "b": 2}


def test_to_json_of_selectors_names_columns_as_cassandra(js):
    js.execute("INSERT INTO j (k, v, t, de, vi, b, du, l, m, a, tp, vec) VALUES (5, 7, 'x\"y', 1.50, "
               "123456789012345678901, 0xcafe, 1y2mo3d4h, [1, 2], {'q': 1}, {street: 'S', zip: 9}, "
               "(1, 'z'), [1.5, -2])")
    rs = js.execute("SELECT toJson(v), toJson(t), toJson(de), toJson(vi), toJson(b), toJson(du), toJson(l), "
                    "toJson(m), toJson(a), toJson(tp), toJson(vec), toJson(intAsBlob(v)) AS ib FROM j WHERE k = 5")
    assert rs.column_names[:2] == ["system.tojson(v)", "system.tojson(t)"]
    assert rs.column_names[-1] == "ib"
    assert all(t.typename == "varchar" for t in rs.column_types)
    assert list(rs.one()) == ["7", '"x\\"y"', "1.50", "123456789012345678901", '"0xcafe"', '"1y2mo3d4h"',
                              "[1, 2]", '{"q": 1}', '{"street": "S", "zip": 9}', '[1, "z"]', "[1.5, -2.0]",
                              '"0x00000007"']
    assert js.execute("SELECT toJson(v) FROM j WHERE k = 999").one() is None
    js.execute("INSERT INTO j (k) VALUES (6)")
    assert js.execute("SELECT toJson(v) FROM j WHERE k = 6").one()[0] == "null"
    with pytest.raises(InvalidRequest, match=r"Cannot infer type of argument \? in call to function system.tojson"):
        js.prepare("SELECT toJson(?) FROM j")
    with pytest.raises(InvalidRequest, match="fromjson\\(\\) cannot be used in the selection clause"):
        js.execute("SELECT fromJson('1') FROM j")


def test_select_json_decodes_every_type(js):
    js.execute("INSERT INTO j JSON '{\"k\": 7, \"v\": 1, \"de\": 1.25E+3, \"vi\": 98765432109876543210, "
               "\"b\": \"0x0a\", \"du\": \"1h\", \"l\": [2, 1], \"m\": {\"z\": 3}, "
               "\"a\": {\"street\": \"T\", \"zip\": 2}, \"tp\": [4, \"w\"], \"vec\": [0.5, 1]}'")
    text = js.execute("SELECT JSON k, v, de, vi, b, du, l, m, a, tp, vec, toJson(v) FROM j WHERE k = 7").one()[0]
    doc = json.loads(text, parse_float=Decimal)
    assert doc == {"k": 7, "v": 1, "de": Decimal("1.25E+3"), "vi": 98765432109876543210, "b": "0x0a",
                   "du": "1h", "l": [2, 1], "m": {"z": 3}, "a": {"street": "T", "zip": 2}, "tp": [4, "w"],
                   "vec": [Decimal("0.5"), Decimal("1.0")], "system.tojson(v)": "1"}
    # A round trip: what SELECT JSON prints, INSERT JSON reads back to the same row.
    js.execute("INSERT INTO j JSON %s", (text.replace('"k": 7', '"k": 8').replace(', "system.tojson(v)": "1"', ""),))
    assert js.execute("SELECT JSON k, v, de, vi, b, du, l, m, a, tp, vec FROM j WHERE k = 8").one()[0] == \
        text.replace('"k": 7', '"k": 8').replace(', "system.tojson(v)": "1"', "")


def test_prepared_insert_json_binds_the_whole_row(js):
    ins = js.prepare("INSERT INTO j JSON ?")
    assert [(c.name, c.type.typename) for c in ins.column_metadata] == [("[json]", "varchar")]
    unset = js.prepare("INSERT INTO j JSON ? DEFAULT UNSET")
    js.execute(ins, ['{"k": 9, "v": 1, "t": "a", "l": [1, 2]}'])
    js.execute(unset, ['{"k": 9, "v": 2}'])
    row = js.execute("SELECT v, t, l FROM j WHERE k = 9").one()
    assert (row.v, row.t, row.l) == (2, "a", [1, 2])
    js.execute(ins, ['{"K": 9, "v": 3}'])
    row = js.execute("SELECT v, t, l FROM j WHERE k = 9").one()
    assert (row.v, row.t, row.l) == (3, None, None)
    with pytest.raises(InvalidRequest, match="JSON values map contains unrecognized column: x"):
        js.execute(ins, ['{"k": 9, "x": 1}'])
    with pytest.raises(InvalidRequest, match="Error decoding JSON value for v: Unable to make int from 'x'"):
        js.execute(ins, ['{"k": 9, "v": "x"}'])
    with pytest.raises(InvalidRequest, match="Got null for INSERT JSON values"):
        js.execute(ins, [None])
    with pytest.raises(InvalidRequest, match="Invalid null value in condition for column k"):
        js.execute(ins, ['{"v": 1}'])
    with pytest.raises(InvalidRequest, match="Invalid unset value for column k"):
        js.execute(unset, ['{"v": 1}'])


def test_prepared_insert_json_in_lwt_and_batch(js):
    js.execute("CREATE TABLE IF NOT EXISTS js (k int, c int, v int, s int static, PRIMARY KEY (k, c))")
    lwt = js.prepare("INSERT INTO js JSON ? IF NOT EXISTS")
    assert js.execute(lwt, ['{"k": 1, "c": 1, "v": 1}']).one()[0] is True
    row = js.execute(lwt, ['{"k": 1, "c": 1, "v": 2}']).one()
    assert row[0] is False and row.v == 1
    unset = js.prepare("INSERT INTO js JSON ? DEFAULT UNSET USING TTL 100")
    batch = BatchStatement()
    batch.add(unset, ['{"k": 2, "c": 1, "s": 5}'])
    batch.add(unset, ['{"k": 2, "c": 2, "v": 7}'])
    js.execute(batch)
    rows = [tuple(r) for r in js.execute("SELECT k, c, v, s FROM js WHERE k = 2")]
    assert rows == [(2, 1, None, 5), (2, 2, 7, 5)]
    assert js.execute("SELECT ttl(v) FROM js WHERE k = 2 AND c = 2").one()[0] > 0
