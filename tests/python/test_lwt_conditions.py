"""Lightweight-transaction conditions through the driver with bind markers, at v4 and v5:
elements (`m[?]`, `l[?]`), UDT fields, `IN ?`, `CONTAINS ?`, static columns, and the columns a
refused condition shows. Every expectation is Cassandra 5.0.9's answer."""

import pytest
from cassandra import InvalidRequest


@pytest.fixture(params=[4, 5], ids=["v4", "v5"])
def s(request, make_cluster, session, ks):
    session.execute("CREATE TYPE addr (street text, zip int)")
    session.execute("CREATE TABLE t (k int, c int, v int, s int static, l list<int>, "
                    "m map<text, int>, u addr, PRIMARY KEY (k, c))")
    cluster = make_cluster(protocol_version=request.param)
    sess = cluster.connect(ks)
    sess.execute("INSERT INTO t (k, c, v, s, l, m, u) VALUES (1, 1, 10, 5, [1, 2], {'a': 1}, "
                 "{street: 'main', zip: 7})")
    return sess


def _applied(rs):
    row = rs.one()
    return row[0], dict(row._asdict())


def test_element_field_and_in_conditions_with_markers(s):
    upd = s.prepare("UPDATE t SET v = ? WHERE k = 1 AND c = 1 IF m[?] = ? AND l[?] > ? AND u.zip IN ?")
    applied, _ = _applied(s.execute(upd, (11, "a", 1, 0, 0, [6, 7])))
    assert applied is True
    applied, shown = _applied(s.execute(upd, (12, "a", 2, 0, 0, [7])))
    assert applied is False
    assert shown["m"] == {"a": 1} and shown["l"] == [1, 2] and shown["u"].zip == 7
    assert s.execute("SELECT v FROM t WHERE k = 1 AND c = 1").one().v == 11


def test_contains_conditions(s):
    upd = s.prepare("UPDATE t SET v = ? WHERE k = 1 AND c = 1 IF l CONTAINS ? AND m CONTAINS KEY ?")
    assert _applied(s.execute(upd, (20, 2, "a")))[0] is True
    applied, shown = _applied(s.execute(upd, (21, 3, "a")))
    assert applied is False and shown["l"] == [1, 2]


def test_static_condition_reads_the_partition(s):
    # The row (1, 2) does not exist; the static column does, and the condition sees it.
    upd = s.prepare("UPDATE t SET s = ? WHERE k = 1 IF s = ?")
    assert _applied(s.execute(upd, (6, 5)))[0] is True
    applied, shown = _applied(s.execute(s.prepare("UPDATE t SET v = 1 WHERE k = 1 AND c = 2 IF s = ?"), (3,)))
    assert applied is False and shown["s"] == 6


def test_refusals(s):
    with pytest.raises(InvalidRequest) as e:
        s.prepare("UPDATE t SET v = 1 WHERE k = 1 AND c = 1 IF k = 1")
    assert "PRIMARY KEY column 'k' cannot have IF conditions" in str(e.value)
    with pytest.raises(InvalidRequest) as e:
        s.execute("INSERT INTO t (k, c) VALUES (2, 2) IF NOT EXISTS USING TIMESTAMP 5")
    assert "Cannot provide custom timestamp for conditional updates" in str(e.value)
