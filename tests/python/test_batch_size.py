"""Cassandra 5.0.9's batch size guard: a BATCH of more than one mutation (keyspace and partition
key) whose data size is over `batch_size_warn_threshold` (5 KiB) gets the client warning "Batch
for [tables] is of size N, exceeding specified threshold of 5120 by M." (the driver's
`ResponseFuture.warnings`), and over `batch_size_fail_threshold` (50 KiB) is refused with
Invalid "Batch too large", writing nothing. A LOGGED batch on a table with gc_grace_seconds 0
is warned about first; the unlogged-batch warning comes after the size warning. Every
expected text and size here was read from Cassandra 5.0.9 (run this file with CQL_PORT
pointing at one to check)."""

import os
import subprocess
import tempfile
import time

import pytest
from cassandra import InvalidRequest
from cassandra.cluster import Cluster
from cassandra.query import BatchStatement, BatchType

KS = "bsize"  # fixed: the order of several tables in a warning follows the hash of `ks.table`
UNLOGGED_TAIL = (". You should use a logged batch for atomicity, or asynchronous writes for "
                 "performance.")
GC_GRACE = ("Executing a LOGGED BATCH on table [bsize.z], configured with a gc_grace_seconds of "
            "0. The gc_grace_seconds is used to TTL batchlog entries, so setting "
            "gc_grace_seconds too low on tables involved in an atomic batch might cause "
            "batchlog entries to expire before being replayed.")


def size_warning(tables, size, threshold=5120):
    return (f"Batch for [{tables}] is of size {size}, exceeding specified threshold of "
            f"{threshold} by {size - threshold}.")


def batch(kind, statements):
    return f"BEGIN {kind}BATCH " + " ".join(s + ";" for s in statements) + " APPLY BATCH"


def u_rows(keys, length, table="u"):
    return [f"INSERT INTO {table} (k, v) VALUES ({k}, '{'x' * length}')" for k in keys]


@pytest.fixture
def s(make_cluster):
    s = make_cluster(protocol_version=5).connect()
    s.execute(f"DROP KEYSPACE IF EXISTS {KS}")
    s.execute(f"CREATE KEYSPACE {KS} WITH replication = "
              "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.set_keyspace(KS)
    s.execute("CREATE TABLE u (k int PRIMARY KEY, v text)")
    s.execute("CREATE TABLE w (k int PRIMARY KEY, v text)")
    s.execute("CREATE TABLE z (k int PRIMARY KEY, v text) WITH gc_grace_seconds = 0")
    s.execute("CREATE TABLE n (k int PRIMARY KEY, c counter)")
    s.execute("CREATE TABLE t (k int, c int, v text, m map<int, text>, l list<int>, "
              "PRIMARY KEY (k, c))")
    yield s
    s.execute(f"DROP KEYSPACE {KS}")


def warnings(s, query, params=None):
    f = s.execute_async(query, params)
    f.result()
    return f.warnings


def test_size_warning_past_the_threshold(s):
    # A partition of `u` with a value of n bytes is 29 + 21 + 20 + n bytes.
    assert warnings(s, batch("", u_rows([1, 2], 2490))) is None  # exactly 5120
    assert warnings(s, batch("", u_rows([1, 2], 2491))) == [size_warning("bsize.u", 5122)]
    assert warnings(s, batch("", u_rows([1, 2], 3000))) == [size_warning("bsize.u", 6140)]
    # One partition: no size check at all, however big.
    big_one = [f"INSERT INTO t (k, c, v) VALUES (1, {c}, '{'y' * 6000}')" for c in range(8)]
    assert warnings(s, batch("", big_one)) is None
    # The same key in two tables of one keyspace is one mutation.
    same_key = u_rows([1], 6000) + u_rows([1], 6000, table="w")
    assert warnings(s, batch("", same_key)) is None
    # Two tables, named as Cassandra's HashSet prints them.
    assert warnings(s, batch("", u_rows([1], 3000) + u_rows([2], 3000, table="w"))) == [
        size_warning("bsize.u, bsize.w", 6140)]


def test_collections_and_deletions_count_as_in_cassandra(s):
    s.execute("INSERT INTO t (k, c, l) VALUES (9, 1, [1, 2, 1, 3])")
    stmts = u_rows([1, 2], 2400) + [
        "UPDATE t SET m = m + {1: 'ab', 2: 'c'} WHERE k = 5 AND c = 1",
        "UPDATE t SET l = l + [7, 8] WHERE k = 5 AND c = 2",
        "UPDATE t SET l = l - [1] WHERE k = 9 AND c = 1",
        "DELETE FROM t WHERE k = 6 AND c > 3 AND c < 9",
        "DELETE FROM t WHERE k = 6 AND c = 1",
        "DELETE FROM t WHERE k = 7",
        "INSERT INTO u (k, v) VALUES (3, 'a') USING TTL 100",
    ]
    # u k=1, 2: 2 * 2470; t k=5: 29 + (25 + 12 + 26 + 25) + (25 + 12 + 2 * (20 + 16 + 4));
    # t k=9 (two tombstones of stored items): 29 + 25 + 12 + 2 * 36; t k=6 (a range and a
    # row deletion): 29 + 4 + 12 + 8 + 25; t k=7: 29; u k=3 (TTL): 29 + 21 + 12 + 21.
    assert warnings(s, batch("", stmts)) == [size_warning("bsize.t, bsize.u", 5502)]


@pytest.mark.parametrize("stmts,tables,size", [
    # A later range inside an earlier one adds nothing: 29 + 4 + 20.
    (["DELETE FROM t WHERE k = 1 AND c > 1 AND c < 5",
      "DELETE FROM t WHERE k = 1 AND c > 2 AND c < 4"], "bsize.t, bsize.u", 5193),
    # A later range around two earlier ones adds its three uncovered pieces: 29 + 4 + 5 * 20.
    (["DELETE FROM t WHERE k = 1 AND c > 2 AND c < 4",
      "DELETE FROM t WHERE k = 1 AND c > 6 AND c < 8",
      "DELETE FROM t WHERE k = 1 AND c > 1 AND c < 10"], "bsize.t, bsize.u", 5273),
    # Bounds naming every clustering column are a range, not a row: 29 + 4 + 3 * 20.
    (["DELETE FROM t WHERE k = 1 AND c >= 3 AND c <= 3",
      "DELETE FROM t WHERE k = 1 AND c >= 1 AND c <= 5"], "bsize.t, bsize.u", 5233),
    # On a descending column the ranges run the other way: 29 + 4 + 24 + 20.
    (["DELETE FROM dt WHERE k = 1 AND a = 3 AND b > 1",
      "DELETE FROM dt WHERE k = 1 AND a >= 3"], "bsize.dt, bsize.u", 5217),
    # Of different timestamps, a newer range takes what it covers from an older one, which
    # keeps its pieces outside: an older range around a newer one is three, 29 + 4 + 3 * 20;
    # a newer one around an older one keeps it all, 29 + 4 + 20.
    (["DELETE FROM t USING TIMESTAMP 5 WHERE k = 1 AND c >= 2 AND c <= 6",
      "DELETE FROM t USING TIMESTAMP 10 WHERE k = 1 AND c >= 3 AND c <= 4"], "bsize.t, bsize.u", 5233),
    (["DELETE FROM t USING TIMESTAMP 10 WHERE k = 1 AND c >= 2 AND c <= 6",
      "DELETE FROM t USING TIMESTAMP 5 WHERE k = 1 AND c >= 3 AND c <= 4"], "bsize.t, bsize.u", 5193),
], ids=["inside", "around", "narrow", "descending", "older-around-newer", "newer-around-older"])
def test_overlapping_range_deletions_count_as_in_cassandra(s, stmts, tables, size):
    s.execute("CREATE TABLE dt (k int, a int, b int, v int, PRIMARY KEY (k, a, b)) "
              "WITH CLUSTERING ORDER BY (a DESC, b ASC)")
    # u k=11, 12: 2 * (70 + 2500) bytes.
    assert warnings(s, batch("", u_rows([11, 12], 2500) + stmts)) == [
        size_warning(tables, size)]


@pytest.mark.parametrize("stmts,size", [
    # Appends and prepends: a cell per item with a 16-byte timeuuid path.
    (["UPDATE ls SET l = l + ['abc'] WHERE k = 1 AND c = 1",
      "UPDATE ls SET l = ['de', 'f'] + l WHERE k = 1 AND c = 1"], 5220),
    # By index: the stored item's path; by value: a tombstone per stored match.
    (["UPDATE ls SET l[1] = 'xyz' WHERE k = 2 AND c = 1",
      "UPDATE ls SET l = l - ['ab'] WHERE k = 3 AND c = 1",
      "DELETE l[0] FROM ls WHERE k = 4 AND c = 1"], 5385),
    # The same on a static list, read from the partition's static row.
    (["UPDATE ls SET sl[0] = 'q' WHERE k = 5",
      "UPDATE ls SET sl = sl - ['cd'] WHERE k = 6",
      "UPDATE ls SET sl = sl + ['e'] WHERE k = 7"], 5273),
], ids=["append_prepend", "index_and_value", "static_list"])
def test_list_operations_count_as_in_cassandra(s, stmts, size):
    s.execute("CREATE TABLE ls (k int, c int, sl list<text> static, l list<text>, "
              "PRIMARY KEY (k, c))")
    for k in range(1, 8):
        s.execute(f"INSERT INTO ls (k, c, sl, l) VALUES ({k}, 1, ['ab', 'cd'], ['ab', 'cd', 'ab'])")
    # u k=11, 12: 2 * (70 + 2450) bytes.
    assert warnings(s, batch("", u_rows([11, 12], 2450) + stmts)) == [
        size_warning("bsize.ls, bsize.u", size)]


def test_warning_order_with_the_unlogged_and_gc_grace_warnings(s):
    many = u_rows(range(12), 600)  # 12 * 670
    assert warnings(s, batch("UNLOGGED ", many)) == [
        size_warning("bsize.u", 8040),
        "Unlogged batch covering 12 partitions detected against table [bsize.u]" + UNLOGGED_TAIL]
    assert warnings(s, batch("", many)) == [size_warning("bsize.u", 8040)]
    # gc_grace_seconds 0: warned about in any logged batch, first.
    assert warnings(s, batch("", u_rows([1], 10, table="z"))) == [GC_GRACE]
    assert warnings(s, batch("", u_rows(range(12), 600, table="z"))) == [
        GC_GRACE, size_warning("bsize.z", 8040)]
    assert warnings(s, batch("UNLOGGED ", u_rows(range(2), 3000, table="z"))) == [
        size_warning("bsize.z", 6140)]
    # Counter batches: 29 + 21 + 20 + a 36-byte counter context per partition.
    counters = [f"UPDATE n SET c = c + {k} WHERE k = {k}" for k in range(60)]
    assert warnings(s, batch("COUNTER ", counters)) == [
        size_warning("bsize.n", 6360),
        "Unlogged batch covering 60 partitions detected against table [bsize.n]" + UNLOGGED_TAIL]


def test_batch_too_large_is_refused_and_writes_nothing(s):
    # 2 * (70 + 25530) = 51200: at the failure threshold, only warned about.
    assert warnings(s, batch("", u_rows([1, 2], 25530))) == [size_warning("bsize.u", 51200)]
    s.execute("TRUNCATE u")
    for kind in ("", "UNLOGGED "):
        with pytest.raises(InvalidRequest, match="Batch too large"):
            s.execute(batch(kind, u_rows([1, 2], 25531)))
    assert list(s.execute("SELECT k FROM u")) == []
    # Conditional batches (one partition) are never checked.
    cas = [f"INSERT INTO t (k, c, v) VALUES (1, {c}, '{'y' * 9000}') IF NOT EXISTS"
           for c in range(7)]
    assert s.execute(batch("", cas)).one()[0] is True


@pytest.mark.parametrize("protocol_version", [4, 5])
def test_prepared_batch_message(make_cluster, s, protocol_version):
    p = make_cluster(protocol_version=protocol_version).connect(KS)
    insert = p.prepare("INSERT INTO u (k, v) VALUES (?, ?)")
    b = BatchStatement(batch_type=BatchType.UNLOGGED)
    for k in range(2):
        b.add(insert, (k, "z" * 3000))
    assert warnings(p, b) == [size_warning("bsize.u", 6140)]
    b = BatchStatement(batch_type=BatchType.LOGGED)
    for k in range(2):
        b.add(insert, (k, "z" * 30000))
    with pytest.raises(InvalidRequest, match="Batch too large"):
        p.execute(b)


def test_thresholds_from_the_config(endpoint, tmp_path):
    """`batch_size_warn_threshold` / `batch_size_fail_threshold` in Cassandra 5.0's KiB form
    (Peregrine only: the test starts its own server with a config file)."""
    if endpoint.kind != "peregrine":
        pytest.skip("starts its own Peregrine")
    from conftest import _find_peregrine, _free_port, _port_open
    port = _free_port()
    config = tmp_path / "peregrine.yaml"
    config.write_text("batch_size_warn_threshold: 1KiB\nbatch_size_fail_threshold: 2KiB\n")
    log = open(tmp_path / "log", "wb")
    proc = subprocess.Popen([_find_peregrine(), "serve", "--config", str(config), "--listen",
                             f"127.0.0.1:{port}", "--data-dir", str(tmp_path / "data")],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 60
        while not _port_open("127.0.0.1", port):
            assert proc.poll() is None, (tmp_path / "log").read_text()
            assert time.time() < deadline, "peregrine did not start"
            time.sleep(0.1)
        c = Cluster(["127.0.0.1"], port=port, protocol_version=5)
        try:
            s = c.connect()
            s.execute(f"CREATE KEYSPACE {KS} WITH replication = "
                      "{'class': 'SimpleStrategy', 'replication_factor': 1}")
            s.set_keyspace(KS)
            s.execute("CREATE TABLE u (k int PRIMARY KEY, v text)")
            assert warnings(s, batch("", u_rows([1, 2], 442))) is None  # 1024
            assert warnings(s, batch("", u_rows([1, 2], 600))) == [
                size_warning("bsize.u", 1340, threshold=1024)]
            with pytest.raises(InvalidRequest, match="Batch too large"):
                s.execute(batch("", u_rows([1, 2], 1000)))
        finally:
            c.shutdown()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()
