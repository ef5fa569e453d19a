"""Key length limits as Cassandra 5.0.9 has them, and keys near them stored exactly.

Measured on Cassandra 5.0.9 (the answers below are its answers):
  * a partition key may be 65,535 bytes; its components' values add up (a compound key of two
    40,000-byte blobs is "Key length of 80000 ..."), and a compound key's composite form (each
    component with 2 length bytes and an end byte) must fit too, on reads and writes alike;
  * a written row's clustering values add up to at most 65,535 bytes too (INSERT, UPDATE,
    DELETE of a row or cell, counters, BATCH), but a conditional write (LWT) is not checked, and
    neither are clustering values in SELECT restrictions or range deletes;
  * the error is Invalid (0x2200): "Key length of N is longer than maximum of 65535".
Peregrine's storage library takes keys of at most 65,535 bytes, and escaped engine keys of
values within these limits are far longer: the rows here reach the storage's long-key buckets
(crates/storage/src/long_keys.rs). Before them such writes panicked the server.
"""

import pytest
from cassandra import InvalidRequest
from cassandra.query import BatchStatement

MAX = 65535


@pytest.fixture
def tables(session, ks):
    session.execute("CREATE TABLE t (k blob, c1 blob, c2 blob, v int, s int static, "
                    "PRIMARY KEY (k, c1, c2))")
    session.execute("CREATE TABLE p (k blob PRIMARY KEY, v int)")
    session.execute("CREATE TABLE pk2 (k1 blob, k2 blob, c blob, v int, PRIMARY KEY ((k1, k2), c))")
    session.execute("CREATE TABLE cn (k blob, c blob, n counter, PRIMARY KEY (k, c))")
    return session


def _key_error(session, query, args, length):
    with pytest.raises(InvalidRequest) as e:
        session.execute(session.prepare(query), args)
    assert f"Key length of {length} is longer than maximum of 65535" in str(e.value)
    assert "code=2200" in str(e.value)


def _lens(rows):
    return [tuple(len(x) if isinstance(x, bytes) else x for x in row) for row in rows]


def test_partition_key_at_the_limit_is_stored(tables):
    s, k = tables, b"k" * MAX
    s.execute(s.prepare("INSERT INTO p (k, v) VALUES (?, 1)"), (k,))
    assert _lens(s.execute(s.prepare("SELECT k, v FROM p WHERE k = ?"), (k,))) == [(MAX, 1)]
    s.execute(s.prepare("UPDATE p SET v = 2 WHERE k = ?"), (k,))
    assert _lens(s.execute("SELECT k, v FROM p")) == [(MAX, 2)]
    assert list(s.execute(s.prepare("INSERT INTO p (k, v) VALUES (?, 3) IF NOT EXISTS"), (k,)))[0][0] is False
    s.execute(s.prepare("UPDATE cn SET n = n + 5 WHERE k = ? AND c = ?"), (k, b"c"))
    assert _lens(s.execute("SELECT k, c, n FROM cn")) == [(MAX, 1, 5)]
    s.execute(s.prepare("DELETE FROM p WHERE k = ?"), (k,))
    assert list(s.execute("SELECT k FROM p")) == []


@pytest.mark.parametrize("n", [MAX + 1, 70000])
def test_partition_key_over_the_limit(tables, n):
    s, k = tables, b"k" * n
    for q in ("INSERT INTO p (k, v) VALUES (?, 1)", "SELECT * FROM p WHERE k = ?",
              "UPDATE p SET v = 2 WHERE k = ?", "DELETE FROM p WHERE k = ?",
              "INSERT INTO p (k, v) VALUES (?, 1) IF NOT EXISTS", "UPDATE t SET s = 1 WHERE k = ?"):
        _key_error(s, q, (k,), n)
    _key_error(s, "UPDATE cn SET n = n + 1 WHERE k = ? AND c = 0x00", (k,), n)
    assert list(s.execute("SELECT k FROM p")) == []


def test_compound_partition_key_components_add_up(tables):
    s, h = tables, b"h" * 40000
    _key_error(s, "INSERT INTO pk2 (k1, k2, c, v) VALUES (?, ?, ?, 1)", (h, h, b"c"), 80000)
    _key_error(s, "SELECT * FROM pk2 WHERE k1 = ? AND k2 = ?", (h, h), 80000)
    # The sum fits, the composite (+3 bytes a component) does not.
    a = b"a" * 30000
    _key_error(s, "INSERT INTO pk2 (k1, k2, c, v) VALUES (?, ?, ?, 1)", (a, b"b" * 35530, b"c"), 65536)
    _key_error(s, "SELECT * FROM pk2 WHERE k1 = ? AND k2 = ?", (a, b"b" * 35535), 65541)
    b = b"b" * 35529
    s.execute(s.prepare("INSERT INTO pk2 (k1, k2, c, v) VALUES (?, ?, ?, 1)"), (a, b, b"c"))
    assert _lens(s.execute(s.prepare("SELECT k1, k2, c, v FROM pk2 WHERE k1 = ? AND k2 = ?"), (a, b))) \
        == [(30000, 35529, 1, 1)]


def test_written_clustering_values_add_up(tables):
    s, big, h = tables, b"x" * (MAX + 1), b"h" * 40000
    _key_error(s, "UPDATE t SET v = 1 WHERE k = ? AND c1 = ? AND c2 = ?", (b"a", big, b"c"), MAX + 2)
    _key_error(s, "INSERT INTO t (k, c1, c2, v) VALUES (?, ?, ?, 1)", (b"a", h, h), 80000)
    _key_error(s, "DELETE FROM t WHERE k = ? AND c1 = ? AND c2 = ?", (b"a", big, b"c"), MAX + 2)
    _key_error(s, "DELETE v FROM t WHERE k = ? AND c1 = ? AND c2 = ?", (b"a", h, h), 80000)
    _key_error(s, "UPDATE cn SET n = n + 1 WHERE k = ? AND c = ?", (b"a", big), MAX + 1)
    _key_error(s, "UPDATE t SET v = 1 WHERE k = ? AND c1 IN (?, ?) AND c2 = ?",
               (b"a", b"ok", b"y" * 70000, b"c"), 70001)
    batch = BatchStatement()
    insert = s.prepare("INSERT INTO t (k, c1, c2, v) VALUES (?, ?, ?, 1)")
    batch.add(insert, (b"a", b"small", b"c"))
    batch.add(insert, (b"a", h, h))
    with pytest.raises(InvalidRequest) as e:
        s.execute(batch)
    assert "Key length of 80000 is longer than maximum of 65535" in str(e.value)
    # Nothing of the refused batch was applied.
    assert list(s.execute("SELECT * FROM t")) == []
    # Clustering values are not a composite: 65,535 bytes in two columns is fine.
    s.execute(insert, (b"a", b"a" * 30000, b"b" * 35535))
    s.execute(s.prepare("DELETE FROM t WHERE k = ?"), (b"a",))
    # Reads and range deletes do not check clustering values.
    assert list(s.execute(s.prepare("SELECT * FROM t WHERE k = ? AND c1 = ?"), (b"a", big))) == []
    s.execute(s.prepare("DELETE FROM t WHERE k = ? AND c1 = ?"), (b"a", big))


def test_conditional_write_of_a_long_clustering_is_applied(tables):
    """Cassandra 5.0.9 does not check the clustering length of an LWT: the row is stored."""
    s, h = tables, b"h" * 40000
    r = s.execute(s.prepare("INSERT INTO t (k, c1, c2, v) VALUES (?, ?, ?, 1) IF NOT EXISTS"), (b"a", h, h))
    assert list(r)[0][0] is True
    r = s.execute(s.prepare("UPDATE t SET v = 2 WHERE k = ? AND c1 = ? AND c2 = ? IF v = 1"), (b"a", h, h))
    assert list(r)[0][0] is True
    assert _lens(s.execute("SELECT k, c1, c2, v FROM t")) == [(1, 40000, 40000, 2)]


def test_many_rows_under_one_long_partition_key(tables):
    """Rows whose keys share a long prefix (one partition with a key at the limit): inserted
    out of order, read back in clustering order, sliced, paged and deleted."""
    s, k = tables, b"k" * MAX
    insert = s.prepare("INSERT INTO t (k, c1, c2, v) VALUES (?, ?, ?, ?)")
    order = [7, 3, 9, 0, 5, 1, 8, 2, 6, 4]
    for i in order:
        s.execute(insert, (k, bytes([i]) * 30000, bytes([i]), i))
    select = s.prepare("SELECT v FROM t WHERE k = ?")
    select.fetch_size = 3
    assert [r.v for r in s.execute(select, (k,))] == list(range(10))
    rev = s.prepare("SELECT v FROM t WHERE k = ? ORDER BY c1 DESC")
    assert [r.v for r in s.execute(rev, (k,))] == list(range(9, -1, -1))
    sl = s.prepare("SELECT v FROM t WHERE k = ? AND c1 > ? AND c1 <= ?")
    assert [r.v for r in s.execute(sl, (k, bytes([2]) * 30000, bytes([6]) * 30000))] == [3, 4, 5, 6]
    s.execute(s.prepare("DELETE FROM t WHERE k = ? AND c1 = ? AND c2 = ?"), (k, bytes([4]) * 30000, bytes([4])))
    s.execute(s.prepare("DELETE FROM t WHERE k = ? AND c1 >= ?"), (k, bytes([8]) * 30000))
    assert [r.v for r in s.execute(select, (k,))] == [0, 1, 2, 3, 5, 6, 7]
