"""Arithmetic over type-hinted bind markers in SET, WHERE, IF and VALUES terms, through the
driver with prepared statements at protocol v4 and v5: the bound variables' names and types in
the PREPARED metadata (the operator function's parameters, `arg0(system._add)`), the values
computed (in the type of the function Cassandra picks, e.g. int wrap-around, int / double),
null and unset values, and Cassandra's refusals. Also writetime/maxwritetime/ttl of a slice of
a set or map. Every expectation here is Cassandra 5.0.9's answer (run with CQL_HOST/CQL_PORT
against it)."""

import datetime

import pytest
from cassandra import FunctionFailure, InvalidRequest
from cassandra.query import UNSET_VALUE


@pytest.fixture(params=[4, 5], ids=["v4", "v5"])
def s(request, make_cluster, session, ks):
    session.execute("CREATE TABLE t (k int PRIMARY KEY, v int, b bigint, d double, tx text, "
                    "ts timestamp, f float, vi varint, sm smallint)")
    session.execute("CREATE TABLE tb (k bigint, c int, v int, PRIMARY KEY (k, c))")
    cluster = make_cluster(protocol_version=request.param)
    return cluster.connect(ks)


def _binds(prepared):
    return [(c.name, c.type.typename) for c in prepared.column_metadata]


def _row(s, cols, k=1):
    return tuple(s.execute(f"SELECT {cols} FROM t WHERE k = {k}").one())


@pytest.mark.parametrize("stmt,binds", [
    ("UPDATE t SET v = (int)? + 1 WHERE k = ?", [("arg0(system._add)", "int"), ("k", "int")]),
    ("UPDATE t SET v = 1 + (int)? WHERE k = ?", [("arg1(system._add)", "int"), ("k", "int")]),
    ("UPDATE t SET b = (bigint)? * 4 WHERE k = ?",
     [("arg0(system._multiply)", "bigint"), ("k", "int")]),
    ("UPDATE t SET d = (int)? / 2 WHERE k = ?", [("arg0(system._divide)", "int"), ("k", "int")]),
    ("UPDATE t SET v = -(int)? WHERE k = ?", [("arg0(system._negate)", "int"), ("k", "int")]),
    ("UPDATE t SET v = (int):x % 3 WHERE k = :k", [("x", "int"), ("k", "int")]),
    ("UPDATE t SET v = (int)? + (int)? * (int)? WHERE k = ?",
     [("arg0(system._add)", "int"), ("arg0(system._multiply)", "int"),
      ("arg1(system._multiply)", "int"), ("k", "int")]),
    ("UPDATE t SET vi = (bigint)? + 1 WHERE k = ?", [("arg0(system._add)", "bigint"), ("k", "int")]),
    ("UPDATE t SET ts = (timestamp)? + 1d WHERE k = ?",
     [("arg0(system._add)", "timestamp"), ("k", "int")]),
    ("UPDATE t SET tx = 'a' + (text)? WHERE k = ?", [("arg1(system._add)", "varchar"), ("k", "int")]),
    ("SELECT * FROM t WHERE k = (int)? + 1", [("arg0(system._add)", "int")]),
    ("SELECT * FROM t WHERE k = (smallint)? * 2", [("arg0(system._multiply)", "smallint")]),
    ("SELECT * FROM tb WHERE k = (bigint)? * 2 AND c IN ((int)? + 1, (int)? - 1)",
     [("arg0(system._multiply)", "bigint"), ("arg0(system._add)", "int"),
      ("arg0(system._substract)", "int")]),
    ("INSERT INTO t (k, v) VALUES ((int)? + 1, (int)? * 3)",
     [("arg0(system._add)", "int"), ("arg0(system._multiply)", "int")]),
    ("UPDATE t SET v = 1 WHERE k = 1 IF v = (int)? + 1", [("arg0(system._add)", "int")]),
])
def test_prepared_metadata_names_the_operator_arguments(s, stmt, binds):
    assert _binds(s.prepare(stmt)) == binds


def test_values_are_computed_in_the_picked_function_type(s):
    s.execute("INSERT INTO t (k, v, b, d) VALUES (1, 10, 100, 1.0)")
    s.execute(s.prepare("UPDATE t SET v = (int)? + 1 WHERE k = ?"), (5, 1))
    assert _row(s, "v") == (6,)
    # int + int wraps as Java's int does.
    s.execute(s.prepare("UPDATE t SET v = (int)? + 1 WHERE k = ?"), (2147483647, 1))
    assert _row(s, "v") == (-2147483648,)
    # int / 2 into a double runs as int / double.
    s.execute(s.prepare("UPDATE t SET d = (int)? / 2 WHERE k = ?"), (5, 1))
    assert _row(s, "d") == (2.5,)
    s.execute(s.prepare("UPDATE t SET f = (float)? + 1.5 WHERE k = ?"), (1.25, 1))
    assert _row(s, "f") == (2.75,)
    s.execute(s.prepare("UPDATE t SET v = ((int)? + 1) * 2, b = (bigint)? - 1 WHERE k = ?"),
              (4, 2, 1))
    assert _row(s, "v, b") == (10, 1)
    s.execute(s.prepare("UPDATE t SET vi = (bigint)? * 3 WHERE k = ?"), (9223372036854775807, 1))
    assert _row(s, "vi") == (9223372036854775805,)
    s.execute(s.prepare("UPDATE t SET tx = (text)? + 'x', ts = (timestamp)? + 1d WHERE k = ?"),
              ("ab", datetime.datetime(1970, 1, 1), 1))
    assert _row(s, "tx, ts") == ("abx", datetime.datetime(1970, 1, 2))
    s.execute(s.prepare("UPDATE t SET v = -(int)? WHERE k = ?"), (5, 1))
    assert _row(s, "v") == (-5,)


def test_where_and_conditions_use_the_computed_value(s):
    s.execute("INSERT INTO t (k, v) VALUES (1, 7)")
    s.execute("INSERT INTO t (k, v) VALUES (4, 8)")
    rows = s.execute(s.prepare("SELECT k, v FROM t WHERE k = (int)? - 1"), (2,))
    assert [tuple(r) for r in rows] == [(1, 7)]
    rows = s.execute(s.prepare("SELECT k, v FROM t WHERE k IN ((int)? - 1, (int)? * 2)"), (2, 2))
    assert sorted(tuple(r) for r in rows) == [(1, 7), (4, 8)]
    s.execute("INSERT INTO tb (k, c, v) VALUES (6, 4, 1)")
    rows = s.execute(s.prepare("SELECT v FROM tb WHERE k = (bigint)? * 2 AND c > (int)? + 1"),
                     (3, 2))
    assert [r.v for r in rows] == [1]
    p = s.prepare("UPDATE t SET v = (int)? + 1 WHERE k = ? IF v = (int)? * 2")
    assert s.execute(p, (1, 4, 3)).one()[0] is False
    assert s.execute(p, (1, 4, 4)).one()[0] is True
    assert _row(s, "v", k=4) == (2,)
    s.execute(s.prepare("DELETE FROM t WHERE k = (int)? + 1"), (3,))
    assert list(s.execute("SELECT * FROM t WHERE k = 4")) == []


def test_null_and_unset_arguments(s):
    s.execute("INSERT INTO t (k, v) VALUES (1, 10)")
    s.execute(s.prepare("UPDATE t SET v = (int)? + (int)? WHERE k = ?"), (1, None, 1))
    assert _row(s, "v") == (None,)
    for stmt, fn in [("UPDATE t SET v = (int)? + 1 WHERE k = ?", "_add"),
                     ("UPDATE t SET v = -(int)? WHERE k = ?", "_negate")]:
        with pytest.raises(InvalidRequest) as e:
            s.execute(s.prepare(stmt), (UNSET_VALUE, 1))
        assert f"Invalid unset value for argument in call to function {fn}" in str(e.value)
    with pytest.raises(FunctionFailure) as e:
        s.execute(s.prepare("UPDATE t SET v = (int)? / 0 WHERE k = ?"), (5, 1))
    assert "the operation 'int / int' failed: / by zero" in str(e.value)


@pytest.mark.parametrize("stmt,message", [
    ("UPDATE t SET b = (int)? * 2 WHERE k = ?",
     "Ambiguous '*' operation with args (int)? and 2: use type hint to disambiguate, "
     "example '(int) ?'"),
    ("UPDATE t SET v = ? + 1 WHERE k = ?",
     "Ambiguous '+' operation with args ? and 1: use type hint to disambiguate"),
    ("UPDATE t SET v = (bigint)? * 4 WHERE k = ?",
     "the '*' operation is not supported between (bigint)? and 4"),
    ("UPDATE t SET v = (smallint)? + (tinyint)? WHERE k = ?",
     "the '+' operation is not supported between (smallint)? and (tinyint)?"),
    ("UPDATE t SET v = (int)? + 2147483648 WHERE k = ?", "Unable to make int from '2147483648'"),
    ("UPDATE t SET v = (int)? + 1 - (text)? WHERE k = 1",
     "the '-' operation is not supported between system.\"_add\"((int)?, 1) and (text)?"),
    ("SELECT * FROM t WHERE k = (bigint)? * 2",
     "the '*' operation is not supported between (bigint)? and 2"),
])
def test_refused_forms(s, stmt, message):
    with pytest.raises(InvalidRequest) as e:
        s.prepare(stmt)
    assert message in str(e.value)


def test_times_of_a_set_or_map_slice(s):
    s.execute("CREATE TABLE e (k int PRIMARY KEY, s set<int>, m map<int, text>, "
              "fm frozen<map<int, text>>)")
    s.execute("INSERT INTO e (k, s, m, fm) VALUES (1, {1, 2, 3, 4}, {1: 'a', 2: 'b', 3: 'c', "
              "4: 'd'}, {1: 'a', 3: 'c'}) USING TIMESTAMP 1000 AND TTL 5000")
    s.execute("UPDATE e USING TIMESTAMP 2000 AND TTL 6000 SET m[2] = 'x' WHERE k = 1")
    r = s.execute("SELECT writetime(m[1..3]), writetime(m[2..]), maxwritetime(m[..2]), "
                  "writetime(s[2..3]), writetime(m[5..9]), writetime(fm[1..2]), "
                  "writetime(fm[4..]) FROM e WHERE k = 1").one()
    assert tuple(r) == ([1000, 2000, 1000], [2000, 1000, 1000], 2000, [1000, 1000], None, 1000,
                        None)
    assert r._fields[0] == "writetime_m_1__3"
    ttls = s.execute("SELECT ttl(m[1..2]) FROM e WHERE k = 1").one()[0]
    assert len(ttls) == 2 and 4990 <= ttls[0] <= 5000 and 5990 <= ttls[1] <= 6000
    p = s.prepare("SELECT writetime(m[1..2]) FROM e WHERE k = ?")
    assert [(c.name, c.type.typename) for c in p.column_metadata] == [("k", "int")]
    assert s.execute(p, (1,)).one()[0] == [1000, 2000]
    with pytest.raises(InvalidRequest) as e:
        s.execute("SELECT writetime(m[1..null]) FROM e WHERE k = 1")
    assert "Invalid null value for slice selection on m" in str(e.value)
