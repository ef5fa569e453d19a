"""Statements through the driver: prepared, paging, batches, TTL, truncate, static, order, token scans."""

import time

import pytest
from cassandra import ConsistencyLevel
from cassandra.concurrent import execute_concurrent_with_args
from cassandra.metadata import Murmur3Token
from cassandra.query import BatchStatement, BatchType, SimpleStatement


def test_prepared_statement_metadata_and_execution(session, ks):
    session.execute("CREATE TABLE p (k int, c text, v double, PRIMARY KEY (k, c))")
    ins = session.prepare("INSERT INTO p (k, c, v) VALUES (?, ?, ?)")
    assert [c.name for c in ins.column_metadata] == ["k", "c", "v"]
    assert [c.type.typename for c in ins.column_metadata] == ["int", "varchar", "double"]
    assert ins.routing_key_indexes == [0]
    for i in range(5):
        session.execute(ins, (1, f"c{i}", i * 1.5))
    sel = session.prepare("SELECT c, v FROM p WHERE k = :key AND c >= :lo")
    assert [c[2] for c in sel.result_metadata] == ["c", "v"]  # (keyspace, table, name, type)
    rows = list(session.execute(sel, {"key": 1, "lo": "c2"}))
    assert [(r.c, r.v) for r in rows] == [("c2", 3.0), ("c3", 4.5), ("c4", 6.0)]
    # Re-preparing the same text gives the same id.
    assert session.prepare("INSERT INTO p (k, c, v) VALUES (?, ?, ?)").query_id == ins.query_id


def test_prepared_with_unset_and_null(session, ks):
    session.execute("CREATE TABLE n (k int PRIMARY KEY, a int, b int)")
    session.execute("INSERT INTO n (k, a, b) VALUES (1, 10, 20)")
    upd = session.prepare("UPDATE n SET a = ?, b = ? WHERE k = ?")
    from cassandra.query import UNSET_VALUE
    session.execute(upd, (None, UNSET_VALUE, 1))
    row = session.execute("SELECT a, b FROM n WHERE k = 1").one()
    assert row.a is None and row.b == 20


def test_paging_10000_rows_in_one_partition(session, ks):
    session.execute("CREATE TABLE big (k int, c int, v text, PRIMARY KEY (k, c))")
    ins = session.prepare("INSERT INTO big (k, c, v) VALUES (0, ?, ?)")
    results = execute_concurrent_with_args(session, ins, [(i, f"v{i}") for i in range(10000)], concurrency=64)
    assert all(ok for ok, _ in results)
    stmt = SimpleStatement("SELECT c, v FROM big WHERE k = 0", fetch_size=700)
    rs = session.execute(stmt)
    assert rs.has_more_pages
    first_page = rs.current_rows
    assert len(first_page) == 700
    seen = [r.c for r in rs]  # iterating fetches the remaining pages
    assert seen == list(range(10000))


def test_paging_across_partitions_and_paging_state(session, ks):
    session.execute("CREATE TABLE multi (k int, c int, PRIMARY KEY (k, c))")
    ins = session.prepare("INSERT INTO multi (k, c) VALUES (?, ?)")
    args = [(k, c) for k in range(100) for c in range(100)]
    assert all(ok for ok, _ in execute_concurrent_with_args(session, ins, args, concurrency=64))
    stmt = SimpleStatement("SELECT k, c FROM multi", fetch_size=333)
    rows = [(r.k, r.c) for r in session.execute(stmt)]
    assert len(rows) == 10000 and set(rows) == set(args)
    # Partitions come in token order, clustering rows in order within a partition.
    tokens = [Murmur3Token.from_key(k.to_bytes(4, "big", signed=True)).value for k, _ in rows]
    assert tokens == sorted(tokens)
    # Manual paging: resume with paging_state, pages do not overlap.
    prep = session.prepare("SELECT k, c FROM multi")
    prep.fetch_size = 1000
    rs = session.execute(prep)
    page1 = [(r.k, r.c) for r in rs.current_rows]
    rs2 = session.execute(prep, paging_state=rs.paging_state)
    page2 = [(r.k, r.c) for r in rs2.current_rows]
    assert len(page1) == 1000 and len(page2) == 1000
    assert page1 + page2 == rows[:2000]


@pytest.mark.parametrize("batch_type", [BatchType.LOGGED, BatchType.UNLOGGED])
def test_batches(session, ks, batch_type):
    session.execute("CREATE TABLE b (k int, c int, v text, PRIMARY KEY (k, c))")
    ins = session.prepare("INSERT INTO b (k, c, v) VALUES (?, ?, ?)")
    batch = BatchStatement(batch_type=batch_type)
    for k in range(3):
        for c in range(4):
            batch.add(ins, (k, c, f"{k}-{c}"))
    batch.add(SimpleStatement("DELETE FROM b WHERE k = %s AND c = %s"), (2, 3))
    batch.add("UPDATE b SET v = 'upd' WHERE k = 0 AND c = 0")
    session.execute(batch)
    rows = {(r.k, r.c): r.v for r in session.execute("SELECT k, c, v FROM b")}
    assert len(rows) == 11
    assert rows[(0, 0)] == "upd" and rows[(1, 2)] == "1-2" and (2, 3) not in rows


def test_cql_text_batch_with_timestamp(session, ks):
    session.execute("CREATE TABLE bt (k int PRIMARY KEY, v int)")
    session.execute("BEGIN BATCH USING TIMESTAMP 1000 INSERT INTO bt (k, v) VALUES (1, 1); "
                    "INSERT INTO bt (k, v) VALUES (2, 2); APPLY BATCH")
    rows = {r.k: (r.v, r.wt) for r in session.execute("SELECT k, v, writetime(v) AS wt FROM bt")}
    assert rows == {1: (1, 1000), 2: (2, 1000)}


def test_ttl_expiry(session, ks):
    session.execute("CREATE TABLE ttl (k int PRIMARY KEY, a int, b int)")
    session.execute("INSERT INTO ttl (k, a, b) VALUES (1, 1, 1) USING TTL 2")
    session.execute("INSERT INTO ttl (k, a) VALUES (2, 2) USING TTL 2")
    session.execute("UPDATE ttl USING TTL 100 SET b = 5 WHERE k = 2")
    row = session.execute("SELECT ttl(a) AS t FROM ttl WHERE k = 1").one()
    assert row.t in (1, 2)
    time.sleep(3.2)
    assert session.execute("SELECT * FROM ttl WHERE k = 1").one() is None
    row = session.execute("SELECT a, b FROM ttl WHERE k = 2").one()
    assert row is not None and row.a is None and row.b == 5


def test_default_time_to_live(session, ks):
    session.execute("CREATE TABLE dttl (k int PRIMARY KEY, v int) WITH default_time_to_live = 100")
    session.execute("INSERT INTO dttl (k, v) VALUES (1, 1)")
    t = session.execute("SELECT ttl(v) AS t FROM dttl WHERE k = 1").one().t
    assert 95 <= t <= 100


def test_writetime_and_last_write_wins(session, ks):
    session.execute("CREATE TABLE lww (k int PRIMARY KEY, v text)")
    session.execute("INSERT INTO lww (k, v) VALUES (1, 'new') USING TIMESTAMP 2000")
    session.execute("INSERT INTO lww (k, v) VALUES (1, 'old') USING TIMESTAMP 1000")
    row = session.execute("SELECT v, writetime(v) AS wt FROM lww WHERE k = 1").one()
    assert (row.v, row.wt) == ("new", 2000)
    # Same timestamp: the greater value wins.
    session.execute("INSERT INTO lww (k, v) VALUES (1, 'zzz') USING TIMESTAMP 2000")
    session.execute("INSERT INTO lww (k, v) VALUES (1, 'aaa') USING TIMESTAMP 2000")
    assert session.execute("SELECT v FROM lww WHERE k = 1").one().v == "zzz"
    # Same timestamp: a tombstone wins over a value.
    session.execute("DELETE v FROM lww USING TIMESTAMP 2000 WHERE k = 1")
    assert session.execute("SELECT v FROM lww WHERE k = 1").one().v is None


def test_truncate(session, ks):
    session.execute("CREATE TABLE tr (k int PRIMARY KEY, v int)")
    for k in range(50):
        session.execute("INSERT INTO tr (k, v) VALUES (%s, %s)", (k, k))
    assert session.execute("SELECT COUNT(*) FROM tr").one().count == 50
    session.execute("TRUNCATE tr")
    assert session.execute("SELECT COUNT(*) FROM tr").one().count == 0
    session.execute("INSERT INTO tr (k, v) VALUES (1, 1)")
    assert session.execute("SELECT COUNT(*) FROM TABLE tr" if False else "SELECT COUNT(*) FROM tr").one().count == 1
    session.execute(f"TRUNCATE TABLE {ks}.tr")
    assert list(session.execute("SELECT * FROM tr")) == []


def test_static_columns(session, ks):
    session.execute("CREATE TABLE st (k int, c int, s text static, v int, PRIMARY KEY (k, c))")
    session.execute("INSERT INTO st (k, c, s, v) VALUES (1, 1, 'one', 10)")
    session.execute("INSERT INTO st (k, c, v) VALUES (1, 2, 20)")
    session.execute("UPDATE st SET s = 'uno' WHERE k = 1")
    rows = [(r.c, r.s, r.v) for r in session.execute("SELECT c, s, v FROM st WHERE k = 1")]
    assert rows == [(1, "uno", 10), (2, "uno", 20)]
    # A partition with only the static column set shows one row with null clustering.
    session.execute("INSERT INTO st (k, s) VALUES (2, 'lonely')")
    rows = [(r.k, r.c, r.s, r.v) for r in session.execute("SELECT k, c, s, v FROM st WHERE k = 2")]
    assert rows == [(2, None, "lonely", None)]
    assert [r.s for r in session.execute("SELECT DISTINCT k, s FROM st WHERE k IN (1, 2)")] == ["uno", "lonely"]


def test_clustering_order_desc(session, ks):
    session.execute("CREATE TABLE d (k int, c int, v int, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC)")
    for c in range(10):
        session.execute("INSERT INTO d (k, c, v) VALUES (1, %s, %s)", (c, c * c))
    assert [r.c for r in session.execute("SELECT c FROM d WHERE k = 1")] == list(range(9, -1, -1))
    assert [r.c for r in session.execute("SELECT c FROM d WHERE k = 1 ORDER BY c ASC")] == list(range(10))
    assert [r.c for r in session.execute("SELECT c FROM d WHERE k = 1 AND c > 3 AND c <= 7")] == [7, 6, 5, 4]
    assert [r.c for r in session.execute("SELECT c FROM d WHERE k = 1 LIMIT 3")] == [9, 8, 7]


def test_token_range_scan_like_ycsb_e(session, ks):
    # YCSB's CQL binding: SELECT * FROM usertable WHERE token(y_id) >= token(?) LIMIT ?
    session.execute("CREATE TABLE usertable (y_id varchar PRIMARY KEY, field0 varchar, field1 varchar)")
    keys = [f"user{i * 7919 % 100003}" for i in range(300)]
    ins = session.prepare("INSERT INTO usertable (y_id, field0, field1) VALUES (?, ?, ?)")
    assert all(ok for ok, _ in execute_concurrent_with_args(session, ins, [(k, k + "a", k + "b") for k in keys]))
    by_token = sorted(keys, key=lambda k: Murmur3Token.from_key(k.encode()).value)
    scan = session.prepare("SELECT * FROM usertable WHERE token(y_id) >= token(?) LIMIT ?")
    scan.consistency_level = ConsistencyLevel.ONE
    for start_idx in (0, 17, 150, 290):
        rows = list(session.execute(scan, (by_token[start_idx], 20)))
        assert [r.y_id for r in rows] == by_token[start_idx:start_idx + 20]
        assert all(r.field0 == r.y_id + "a" for r in rows)
    # Walk the whole ring with token(k) > last, like a client-side full scan.
    nxt = session.prepare("SELECT y_id, token(y_id) AS t FROM usertable WHERE token(y_id) > ? LIMIT 37")
    last, walked = -(2**63), []
    while True:
        page = list(session.execute(nxt, (last,)))
        if not page:
            break
        walked += [r.y_id for r in page]
        last = page[-1].t
    assert walked == by_token
    rows = list(session.execute("SELECT y_id FROM usertable WHERE token(y_id) >= %s AND token(y_id) < %s",
                                (Murmur3Token.from_key(by_token[10].encode()).value,
                                 Murmur3Token.from_key(by_token[20].encode()).value)))
    assert [r.y_id for r in rows] == by_token[10:20]


def test_lightweight_transaction_applied_flag(session, ks):
    session.execute("CREATE TABLE lwt (k int PRIMARY KEY, v int)")
    assert session.execute("INSERT INTO lwt (k, v) VALUES (1, 1) IF NOT EXISTS").was_applied
    rs = session.execute("INSERT INTO lwt (k, v) VALUES (1, 2) IF NOT EXISTS")
    assert not rs.was_applied
    assert rs.one().v == 1
    assert session.execute("UPDATE lwt SET v = 3 WHERE k = 1 IF v = 1").was_applied
    assert not session.execute("UPDATE lwt SET v = 4 WHERE k = 1 IF v = 1").was_applied
    assert session.execute("SELECT v FROM lwt WHERE k = 1").one().v == 3


def test_counters(session, ks):
    session.execute("CREATE TABLE cnt (k int PRIMARY KEY, hits counter)")
    for _ in range(5):
        session.execute("UPDATE cnt SET hits = hits + 2 WHERE k = 1")
    session.execute("UPDATE cnt SET hits = hits - 3 WHERE k = 1")
    assert session.execute("SELECT hits FROM cnt WHERE k = 1").one().hits == 7


def test_select_aggregates_distinct_and_per_partition_limit(session, ks):
    session.execute("CREATE TABLE agg (k int, c int, v int, PRIMARY KEY (k, c))")
    for k in range(4):
        for c in range(5):
            session.execute("INSERT INTO agg (k, c, v) VALUES (%s, %s, %s)", (k, c, k * 10 + c))
    row = session.execute("SELECT COUNT(*) AS n, MIN(v) AS lo, MAX(v) AS hi, SUM(v) AS total FROM agg WHERE k = 2").one()
    assert (row.n, row.lo, row.hi, row.total) == (5, 20, 24, 110)
    assert sorted(r.k for r in session.execute("SELECT DISTINCT k FROM agg")) == [0, 1, 2, 3]
    rows = list(session.execute("SELECT k, c FROM agg PER PARTITION LIMIT 2"))
    assert len(rows) == 8 and all(r.c < 2 for r in rows)
    assert [r.c for r in session.execute("SELECT c FROM agg WHERE k IN (1, 3) AND c = 4")] == [4, 4]
