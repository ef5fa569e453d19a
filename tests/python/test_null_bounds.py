"""Null bound to a restriction of a SELECT, as Cassandra 5.0.9 answers it (every expectation was
read off 5.0.9; run with CQL_HOST/CQL_PORT against it): a one-column clustering slice bound to
null is the empty value, which sorts first (`c > null` keeps every row, `c < null` none); a
tuple bound or an equality with null is refused; a regular column filtered against null is
refused ("Unsupported null value for column v")."""

import pytest
from cassandra import InvalidRequest


@pytest.fixture
def s(session, ks):
    session.execute("CREATE TABLE t (k int, c int, d int, v int, PRIMARY KEY (k, c, d))")
    session.execute("INSERT INTO t (k, c, d, v) VALUES (1, 1, 1, 1)")
    session.execute("INSERT INTO t (k, c, d, v) VALUES (1, 2, 1, 2)")
    return session


@pytest.mark.parametrize("query,args,rows", [
    ("SELECT c FROM t WHERE k = 1 AND c > ?", [None], [1, 2]),
    ("SELECT c FROM t WHERE k = 1 AND c >= ?", [None], [1, 2]),
    ("SELECT c FROM t WHERE k = 1 AND c < ?", [None], []),
    ("SELECT c FROM t WHERE k = 1 AND c >= ? AND c < ?", [1, None], []),
    ("SELECT c FROM t WHERE k = 1 AND c > ? AND c <= ?", [None, 1], [1]),
    ("SELECT c FROM t WHERE k = 1 AND c = 1 AND d > ?", [None], [1]),
    ("SELECT c FROM t WHERE c > ? ALLOW FILTERING", [None], [1, 2]),
])
def test_a_null_slice_bound_is_the_empty_value(s, query, args, rows):
    got = [r.c for r in s.execute(s.prepare(query), args)]
    assert got == rows


@pytest.mark.parametrize("query,args,message", [
    ("SELECT c FROM t WHERE k = 1 AND (c, d) > (?, ?)", [1, None],
     "Invalid null value in condition for column d"),
    ("SELECT c FROM t WHERE k = 1 AND c = ?", [None], "Invalid null value in condition for column c"),
    ("SELECT c FROM t WHERE v = ? ALLOW FILTERING", [None], "Unsupported null value for column v"),
    ("SELECT c FROM t WHERE k = 1 AND v = ? ALLOW FILTERING", [None],
     "Unsupported null value for column v"),
    ("SELECT c FROM t WHERE v > ? ALLOW FILTERING", [None], "Unsupported null value for column v"),
    ("UPDATE t SET v = 3 WHERE k = 1 AND c = 1 AND d = ?", [None],
     "Invalid null value in condition for column d"),
])
def test_refused_nulls_carry_cassandras_message(s, query, args, message):
    with pytest.raises(InvalidRequest, match=message):
        s.execute(s.prepare(query), args)
