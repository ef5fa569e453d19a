"""Native function calls over bind markers in WHERE, SET, VALUES and IF terms (`abs(?)`,
`textAsBlob(?)`, `blobAsInt(?)`, `token(?)`, nested `blobAsInt(textAsBlob(?))`), through the
driver with prepared statements at protocol v4 and v5: the bound variables' names and types in
the PREPARED metadata (the picked signature's parameter, `arg0(system.abs)`), the values
computed at EXECUTE, unset and null values, and Cassandra's refusals of an overloaded call a
marker leaves ambiguous. Every expectation here is Cassandra 5.0.9's answer (run with
CQL_HOST/CQL_PORT against it)."""

import re

import pytest
from cassandra import InvalidRequest
from cassandra.query import UNSET_VALUE


@pytest.fixture(params=[4, 5], ids=["v4", "v5"])
def s(request, make_cluster, session, ks):
    session.execute("CREATE TABLE t (k int PRIMARY KEY, v int, b blob, tx text, bi bigint, "
                    "d double, ts timestamp, u timeuuid, vi varint, m map<int, text>, l list<int>)")
    session.execute("CREATE TABLE tc (k int, c int, v int, PRIMARY KEY (k, c))")
    cluster = make_cluster(protocol_version=request.param)
    return cluster.connect(ks)


def _binds(prepared):
    return [(c.name, c.type.cql_parameterized_type()) for c in prepared.column_metadata]


@pytest.mark.parametrize("stmt,binds", [
    ("SELECT * FROM t WHERE k = abs(?)", [("arg0(system.abs)", "int")]),
    ("SELECT * FROM t WHERE k = abs(:x)", [("x", "int")]),
    ("UPDATE t SET b = textAsBlob(?) WHERE k = ?",
     [("arg0(system.textasblob)", "varchar"), ("k", "int")]),
    ("INSERT INTO t (k, v) VALUES (?, blobAsInt(?))", [("k", "int"), ("arg0(system.blobasint)", "blob")]),
    ("UPDATE t SET v = blob_as_int(?) WHERE k = 1", [("arg0(system.blob_as_int)", "blob")]),
    ("UPDATE t SET bi = abs(?) WHERE k = 1", [("arg0(system.abs)", "bigint")]),
    ("UPDATE t SET d = round(?) WHERE k = 1", [("arg0(system.round)", "double")]),
    ("UPDATE t SET vi = blobAsInt(?) WHERE k = 1", [("arg0(system.blobasint)", "blob")]),
    ("UPDATE t SET b = blobAsInt(?) WHERE k = 1", [("arg0(system.blobasint)", "blob")]),
    ("UPDATE t SET u = minTimeuuid(?) WHERE k = 1", [("arg0(system.mintimeuuid)", "timestamp")]),
    ("UPDATE t SET ts = toTimestamp((date)?) WHERE k = 1", [("arg0(system.totimestamp)", "date")]),
    ("UPDATE t SET ts = floor((timestamp)?, ?) WHERE k = 1",
     [("arg0(system.floor)", "timestamp"), ("arg1(system.floor)", "duration")]),
    ("SELECT * FROM t WHERE k = blobAsInt(textAsBlob(?))", [("arg0(system.textasblob)", "varchar")]),
    ("SELECT * FROM t WHERE token(k) = token(?)", [("arg0(system.token)", "int")]),
    ("SELECT * FROM t WHERE token(k) > token(abs(?))", [("arg0(system.abs)", "int")]),
    ("SELECT * FROM t WHERE token(k) = abs(?)", [("arg0(system.abs)", "bigint")]),
    ("SELECT * FROM tc WHERE k = 1 AND c IN (abs(?), abs(?))",
     [("arg0(system.abs)", "int"), ("arg0(system.abs)", "int")]),
    ("UPDATE t SET m[abs(?)] = 'x' WHERE k = 1", [("arg0(system.abs)", "int")]),
    ("UPDATE t SET v = 1 WHERE k = 1 IF v = abs(?)", [("arg0(system.abs)", "int")]),
    ("UPDATE t SET bi = abs(:a) WHERE k = :a", [("a", "bigint"), ("a", "int")]),
    # Collection and masking functions: a hinted marker, or the receiver's type where the
    # function infers it.
    ("UPDATE t SET v = collection_count((list<int>)?) WHERE k = 1",
     [("arg0(system.collection_count)", "list<int>")]),
    ("UPDATE t SET v = collection_count((set<text>)?) WHERE k = 1",
     [("arg0(system.collection_count)", "set<varchar>")]),
    ("SELECT * FROM t WHERE k = collection_max((list<int>)?)", [("arg0(system.collection_max)", "list<int>")]),
    ("UPDATE t SET tx = mask_inner(?, ?, ?, ?) WHERE k = 1",
     [("arg0(system.mask_inner)", "varchar"), ("arg1(system.mask_inner)", "int"),
      ("arg2(system.mask_inner)", "int"), ("arg3(system.mask_inner)", "varchar")]),
    ("UPDATE t SET tx = mask_inner((ascii)?, 1, 2) WHERE k = 1", [("arg0(system.mask_inner)", "ascii")]),
    ("UPDATE t SET v = mask_replace(?, ?) WHERE k = 1",
     [("arg0(system.mask_replace)", "int"), ("arg1(system.mask_replace)", "int")]),
    ("UPDATE t SET v = mask_default((int)?) WHERE k = 1", [("arg0(system.mask_default)", "int")]),
    ("UPDATE t SET b = mask_hash((int)?) WHERE k = 1", [("arg0(system.mask_hash)", "int")]),
])
def test_prepared_metadata_names_the_picked_parameter(s, stmt, binds):
    assert _binds(s.prepare(stmt)) == binds


def _sorted_signatures(message):
    head, _, rest = message.partition("signatures: ")
    sigs, _, tail = rest.partition("): use type casts")
    return head, sorted(sigs.split(", ")), tail


@pytest.mark.parametrize("stmt,message", [
    ("UPDATE t SET vi = abs(?) WHERE k = 1",
     "Ambiguous call to function abs (can be matched by following signatures: system.abs : "
     "(varint) -> varint, system.abs : (bigint) -> bigint, system.abs : (int) -> int): use type "
     "casts to disambiguate"),
    ("UPDATE t SET ts = toTimestamp(?) WHERE k = 1",
     "Ambiguous call to function totimestamp (can be matched by following signatures: "
     "system.totimestamp : (date) -> timestamp, system.totimestamp : (timeuuid) -> timestamp): "
     "use type casts to disambiguate"),
])
def test_ambiguous_overloads_are_refused(s, stmt, message):
    with pytest.raises(InvalidRequest) as e:
        s.prepare(stmt)
    got = str(e.value).split('message="', 1)[1].rstrip('"')
    assert _sorted_signatures(got) == _sorted_signatures(message)


@pytest.mark.parametrize("stmt,message", [
    ("UPDATE t SET bi = blobAsInt(?) WHERE k = 1",
     "Type error: cannot assign result of function system.blobasint (type int) to bi (type bigint)"),
    ("SELECT * FROM t WHERE k = token(?)",
     "Type error: cannot assign result of function system.token (type bigint) to k (type int)"),
    ("SELECT * FROM t WHERE token(k) = token(?, ?)",
     "Invalid number of arguments in call to function system.token: 1 required but 2 provided"),
    ("UPDATE t SET u = now(?) WHERE k = 1",
     "Invalid number of arguments in call to function system.now: 0 required but 1 provided"),
    ("UPDATE t SET tx = toJson(?) WHERE k = 1",
     "Cannot infer type of argument ? in call to function system.tojson(any): use type casts to "
     "disambiguate"),
    ("UPDATE t SET v = max(?) WHERE k = 1", "Aggregation function are not supported in the where clause"),
    ("UPDATE t SET v = nosuch(?) WHERE k = 1", "Unknown function nosuch called"),
    ("UPDATE t SET v = mask_null(?) WHERE k = 1",
     "Cannot infer type of argument ? in call to function system.mask_null(any): use type casts "
     "to disambiguate"),
    ("UPDATE t SET tx = mask_inner(?) WHERE k = 1",
     "Invalid number of arguments for function system.mask_inner([text|varchar|ascii], int, int, [text])"),
    ("UPDATE t SET v = mask_inner(?, 1, 2) WHERE k = 1",
     "Type error: cannot assign result of function system.mask_inner (type text) to v (type int)"),
    ("UPDATE t SET l = map_keys((map<int,text>)?) WHERE k = 1",
     "Type error: cannot assign result of function system.map_keys (type frozen<set<int>>) to l (type list<int>)"),
])
def test_refusals_name_the_function(s, stmt, message):
    with pytest.raises(InvalidRequest, match=re.escape(message)):
        s.prepare(stmt)


def _row(s, cols, k=1):
    return tuple(s.execute(f"SELECT {cols} FROM t WHERE k = {k}").one())


def test_values_are_computed_at_execute(s):
    s.execute("INSERT INTO t (k, v) VALUES (2, 2)")
    s.execute(s.prepare("UPDATE t SET v = abs(?) WHERE k = ?"), (-7, 1))
    assert _row(s, "v") == (7,)
    assert list(s.execute(s.prepare("SELECT k, v FROM t WHERE k = abs(?)"), (-2,))) == [(2, 2)]
    s.execute(s.prepare("UPDATE t SET b = textAsBlob(?) WHERE k = ?"), ("hé", 1))
    assert _row(s, "b") == (b"h\xc3\xa9",)
    s.execute(s.prepare("UPDATE t SET v = blobAsInt(textAsBlob(?)) WHERE k = ?"), ("abcd", 1))
    assert _row(s, "v") == (1633837924,)
    # An int result in a varint column keeps its four bytes, as Cassandra stores them.
    s.execute(s.prepare("UPDATE t SET vi = blobAsInt(?) WHERE k = ?"), (b"\x00\x00\x00\x09", 1))
    assert _row(s, "vi, varintAsBlob(vi)") == (9, b"\x00\x00\x00\x09")
    s.execute(s.prepare("UPDATE t SET l = [1, 2, 3], m[abs(?)] = 'x' WHERE k = ?"), (-5, 1))
    s.execute(s.prepare("UPDATE t SET l[abs(?)] = 9 WHERE k = ?"), (-1, 1))
    assert _row(s, "l, m") == ([1, 9, 3], {5: "x"})
    rows = s.execute(s.prepare("INSERT INTO t (k, v) VALUES (abs(?), abs(?)) IF NOT EXISTS"), (-4, -4))
    assert rows.one()[0] is True
    assert _row(s, "v", 4) == (4,)
    assert [r.k for r in s.execute(s.prepare("SELECT k FROM t WHERE token(k) = token(abs(?))"), (-1,))] == [1]


def test_collection_and_masking_functions_run_on_bound_values(s):
    s.execute("INSERT INTO t (k, v, tx) VALUES (1, 2, 'abcdef')")
    s.execute(s.prepare("UPDATE t SET tx = mask_inner(?, 1, 2) WHERE k = ?"), ("abcdef", 1))
    assert _row(s, "tx") == ("a***ef",)
    s.execute(s.prepare("UPDATE t SET tx = mask_inner(?, ?, ?) WHERE k = ?"), ("abcdef", 2, None, 1))
    assert _row(s, "tx") == ("ab****",)
    s.execute(s.prepare("UPDATE t SET v = mask_replace(?, 1) WHERE k = ?"), (5, 1))
    assert _row(s, "v") == (1,)
    s.execute(s.prepare("UPDATE t SET v = collection_count((list<int>)?) WHERE k = ?"), ([1, 2, 3], 1))
    assert _row(s, "v") == (3,)
    s.execute(s.prepare("UPDATE t SET v = collection_max((list<int>)?) WHERE k = ?"), ([1, 7, 3], 1))
    assert _row(s, "v") == (7,)
    s.execute(s.prepare("UPDATE t SET v = mask_default((int)?) WHERE k = ?"), (5, 1))
    assert _row(s, "v") == (0,)


def test_null_unset_and_invalid_arguments(s):
    s.execute("INSERT INTO t (k, v) VALUES (1, 1)")
    update = s.prepare("UPDATE t SET v = abs(?) WHERE k = ?")
    s.execute(update, (None, 1))
    assert _row(s, "v") == (None,)
    with pytest.raises(InvalidRequest, match="Invalid unset value for argument in call to function abs"):
        s.execute(update, (UNSET_VALUE, 1))
    with pytest.raises(InvalidRequest, match="Invalid unset value for argument in call to function textasblob"):
        s.execute(s.prepare("UPDATE t SET v = blobAsInt(textAsBlob(?)) WHERE k = ?"), (UNSET_VALUE, 1))
    with pytest.raises(InvalidRequest, match="Invalid null value in condition for column k"):
        s.execute(s.prepare("SELECT k FROM t WHERE k = abs(?)"), (None,))
    with pytest.raises(InvalidRequest, match="In call to function system.blobasint, value 0x0009 is not a "
                                             "valid binary representation for type int"):
        s.execute(s.prepare("UPDATE t SET v = blobAsInt(?) WHERE k = ?"), (b"\x00\x09", 1))
