"""Cassandra 5.0.9's tombstone thresholds on reads: a read that meets more than
`tombstone_warn_threshold` (1000) tombstones is answered with the client warning "Read N live
rows and M tombstone cells for query <Cassandra's rebuild of the read>; token T (see
tombstone_warn_threshold)" (the driver's `ResponseFuture.warnings`), and one past
`tombstone_failure_threshold` (100000) fails with ReadFailure, reason READ_TOO_MANY_TOMBSTONES
(0x0001). Every expected text and count here was read from Cassandra 5.0.9 with its default
thresholds (run this file with CQL_PORT pointing at one to check); the last test starts its
own Peregrine with lowered thresholds."""

import re
import subprocess
import time

import pytest
from cassandra import ReadFailure
from cassandra.cluster import Cluster
from cassandra.concurrent import execute_concurrent_with_args
from cassandra.query import SimpleStatement

KS = "tombw"  # fixed: the keyspace is part of the warning's text
TOKEN_1 = -4069959284402364209  # token(1) of an int key
TOKEN_2 = -3248873570005575792


def warning(live, tombstones, query, token=TOKEN_1):
    return (f"Read {live} live rows and {tombstones} tombstone cells for query {query}; "
            f"token {token} (see tombstone_warn_threshold)")


@pytest.fixture(params=[4, 5], ids=["v4", "v5"])
def s(request, make_cluster):
    s = make_cluster(protocol_version=request.param).connect()
    s.execute(f"DROP KEYSPACE IF EXISTS {KS}")
    s.execute(f"CREATE KEYSPACE {KS} WITH replication = "
              "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.set_keyspace(KS)
    s.execute("CREATE TABLE t (k int, c int, v int, w int, PRIMARY KEY (k, c))")
    yield s
    s.execute(f"DROP KEYSPACE {KS}")


def fill(s, statement, args):
    execute_concurrent_with_args(s, s.prepare(statement), args, concurrency=64)


def warnings(s, query, fetch_size=5000, params=None):
    f = s.execute_async(SimpleStatement(query, fetch_size=fetch_size), params)
    f.result()
    return f.warnings


def test_null_cells_past_the_threshold(s):
    fill(s, "INSERT INTO t (k, c, v) VALUES (1, ?, null)", [(c,) for c in range(1000)])
    # 1000 is the threshold itself: no warning.
    assert warnings(s, "SELECT * FROM t WHERE k = 1") is None
    fill(s, "INSERT INTO t (k, c, v, w) VALUES (1, ?, null, 1)", [(c,) for c in range(1000, 1001)])
    assert warnings(s, "SELECT * FROM t WHERE k = 1") == [
        warning(1001, 1001, f"SELECT * FROM {KS}.t WHERE k = 1 LIMIT 5000 ALLOW FILTERING")]
    # Unpaged: no LIMIT.
    assert warnings(s, "SELECT * FROM t WHERE k = 1", fetch_size=None) == [
        warning(1001, 1001, f"SELECT * FROM {KS}.t WHERE k = 1 ALLOW FILTERING")]


def test_the_rebuilt_query_of_common_shapes(s):
    fill(s, "INSERT INTO t (k, c, v) VALUES (1, ?, null)", [(c,) for c in range(1500)])
    q = f"SELECT * FROM {KS}.t"
    # Selected columns (statics, then regulars, by name), whatever the order written.
    assert warnings(s, "SELECT w, v FROM t WHERE k = 1") == [
        warning(1500, 1500, f"SELECT v, w FROM {KS}.t WHERE k = 1 LIMIT 5000 ALLOW FILTERING")]
    # Key columns only read as *.
    assert warnings(s, "SELECT c, k FROM t WHERE k = 1") == [
        warning(1500, 1500, f"{q} WHERE k = 1 LIMIT 5000 ALLOW FILTERING")]
    assert warnings(s, "SELECT * FROM t WHERE k = 1 AND c >= 10 AND c < 1200") == [
        warning(1190, 1190, f"{q} WHERE k = 1 AND c >= 10 AND c < 1200 LIMIT 5000 ALLOW FILTERING")]
    assert warnings(s, "SELECT * FROM t WHERE k = 1 AND c > 10 ORDER BY c DESC") == [
        warning(1489, 1489, f"{q} WHERE k = 1 AND c > 10 ORDER BY c DESC LIMIT 5000 ALLOW FILTERING")]
    # A filter counts every row it reads, matched or not.
    assert warnings(s, "SELECT * FROM t WHERE k = 1 AND v = 3 ALLOW FILTERING") == [
        warning(1500, 1500, f"{q} WHERE k = 1 AND v = 3 LIMIT 5000 ALLOW FILTERING")]
    assert warnings(s, "SELECT * FROM t WHERE k = 1 LIMIT 1200") == [
        warning(1200, 1200, f"{q} WHERE k = 1 LIMIT 1200 ALLOW FILTERING")]
    assert warnings(s, "SELECT count(*) FROM t WHERE k = 1") == [
        warning(1500, 1500, f"{q} WHERE k = 1 LIMIT 5000 ALLOW FILTERING")]
    assert warnings(s, "SELECT max(v) FROM t WHERE k = 1", fetch_size=None) == [
        warning(1500, 1500, f"SELECT v FROM {KS}.t WHERE k = 1  ALLOW FILTERING")]
    # A range read: one command over the whole ring.
    assert warnings(s, "SELECT * FROM t") == [warning(1500, 1500, f"{q} LIMIT 5000 ALLOW FILTERING")]
    assert warnings(s, "SELECT * FROM t WHERE token(k) < 0") == [
        warning(1500, 1500, f"{q} WHERE token(k) < 0 LIMIT 5000 ALLOW FILTERING")]


def test_aggregates_read_in_internal_pages(s):
    # Cassandra reads an aggregate in pages of the page size: each its own read, warned
    # about apart and named with where it resumes.
    s.execute("CREATE TABLE g (k int, c1 int, c2 int, v int, PRIMARY KEY (k, c1, c2))")
    fill(s, "INSERT INTO g (k, c1, c2, v) VALUES (1, ?, ?, null)",
         [(i // 10, i % 10) for i in range(2500)])
    q = f"SELECT * FROM {KS}.g"
    assert warnings(s, "SELECT count(*) FROM g WHERE k = 1 AND c1 > 3", fetch_size=1200) == [
        warning(1200, 1200, f"{q} WHERE k = 1 AND c1 > 3 LIMIT 1200 ALLOW FILTERING"),
        warning(1200, 1200, f"{q} WHERE k = 1 AND c1 > 123 AND c2 > 9 LIMIT 1200 ALLOW FILTERING")]
    # Unpaged: one read, limits that print as nothing.
    assert warnings(s, "SELECT count(*) FROM g WHERE k = 1", fetch_size=None) == [
        warning(2500, 2500, f"{q} WHERE k = 1  ALLOW FILTERING")]
    # GROUP BY: pages of rows (10000 unpaged), and the group limits.
    assert warnings(s, "SELECT k, c1, count(*) FROM g WHERE k = 1 GROUP BY c1",
                    fetch_size=None) == [
        warning(2500, 2500, f"{q} WHERE k = 1 LIMIT 10000 ALLOW FILTERING")]
    assert warnings(s, "SELECT k, c1, count(*) FROM g WHERE k = 1 GROUP BY c1 LIMIT 100") == [
        warning(1001, 1001, f"{q} WHERE k = 1 GROUP LIMIT 100 LIMIT 5000 ALLOW FILTERING")]
    # A range read's later pages resume at the partition the previous one ended in.
    fill(s, "INSERT INTO t (k, c, v) VALUES (?, ?, null)",
         [(k, c) for k in (1, 2) for c in range(1100)])
    assert warnings(s, "SELECT count(*) FROM t", fetch_size=1050)[1:] == [
        warning(1050, 1050, f"SELECT * FROM {KS}.t LIMIT 1050 ALLOW FILTERING"),
        warning(1050, 1050, f"SELECT * FROM {KS}.t WHERE token(k) >= token(1) LIMIT 1050 "
                            "ALLOW FILTERING", TOKEN_2)]
    # A multi-column slice prints column by column.
    assert warnings(s, "SELECT * FROM g WHERE k = 1 AND (c1, c2) > (5, 3)") == [
        warning(2446, 2446, f"{q} WHERE k = 1 AND c1 > 5 AND c2 > 3 LIMIT 5000 ALLOW FILTERING")]


def test_what_counts(s):
    s.execute("CREATE TABLE c (k int, c int, s set<int>, st int static, PRIMARY KEY (k, c))")
    # Row deletions: 1 each, with or without a row under them.
    fill(s, "DELETE FROM t WHERE k = 1 AND c = ?", [(c,) for c in range(1001)])
    assert warnings(s, "SELECT * FROM t WHERE k = 1") == [
        warning(0, 1001, f"SELECT * FROM {KS}.t WHERE k = 1 LIMIT 5000 ALLOW FILTERING")]
    # Range deletions: 2 each (500 are exactly the threshold).
    fill(s, "DELETE FROM t WHERE k = 2 AND c >= ? AND c < ?", [(2 * i, 2 * i + 1) for i in range(500)])
    assert warnings(s, "SELECT * FROM t WHERE k = 2") is None
    fill(s, "DELETE FROM t WHERE k = 2 AND c >= ? AND c < ?", [(1000, 1001)])
    assert warnings(s, "SELECT * FROM t WHERE k = 2") == [warning(
        0, 1002, f"SELECT * FROM {KS}.t WHERE k = 2 LIMIT 5000 ALLOW FILTERING", TOKEN_2)]
    # A partition deletion counts nothing, and hides what it shadows.
    fill(s, "INSERT INTO t (k, c, v) VALUES (3, ?, null)", [(c,) for c in range(1500)])
    s.execute("DELETE FROM t WHERE k = 3")
    assert warnings(s, "SELECT * FROM t WHERE k = 3") is None
    # Collections: removed elements 1 each; a collection's own deletion under a live row
    # nothing; without a live row 1.
    fill(s, "UPDATE c SET s = s - {1, 2} WHERE k = 1 AND c = ?", [(c,) for c in range(501)])
    assert warnings(s, "SELECT * FROM c WHERE k = 1") == [
        warning(0, 1002, f"SELECT * FROM {KS}.c WHERE k = 1 LIMIT 5000 ALLOW FILTERING")]
    fill(s, "INSERT INTO c (k, c, s) VALUES (2, ?, {1, 2})", [(c,) for c in range(1001)])
    assert warnings(s, "SELECT * FROM c WHERE k = 2") is None
    fill(s, "UPDATE c SET s = null WHERE k = 4 AND c = ?", [(c,) for c in range(1001)])
    assert warnings(s, "SELECT k, c FROM c WHERE k = 4") == [warning(
        0, 1001, f"SELECT * FROM {KS}.c WHERE k = 4 LIMIT 5000 ALLOW FILTERING",
        -2729420104000364805)]
    # Static cells are read with every partition, whatever is selected.
    s.execute("TRUNCATE c")
    fill(s, "INSERT INTO c (k, st) VALUES (?, null)", [(k,) for k in range(1001)])
    assert warnings(s, "SELECT s FROM c") == [warning(
        0, 1001, f"SELECT s FROM {KS}.c LIMIT 5000 ALLOW FILTERING", 9215045062550449386)]
    assert warnings(s, "SELECT DISTINCT k FROM c") == [warning(
        0, 1001, f"SELECT * FROM {KS}.c LIMIT 5000 PER PARTITION LIMIT 1 ALLOW FILTERING",
        9215045062550449386)]


def test_expired_cells_count(s):
    fill(s, "INSERT INTO t (k, c) VALUES (1, ?) USING TTL 1", [(c,) for c in range(1001)])
    fill(s, "UPDATE t USING TTL 1 SET v = 1, w = 1 WHERE k = 2 AND c = ?", [(c,) for c in range(501)])
    deadline = time.time() + 30
    while s.execute("SELECT count(*) FROM t").one()[0] != 0:
        assert time.time() < deadline, "the TTL did not expire"
        time.sleep(0.2)
    # An expired row marker alone: 1; expired cells: 1 each.
    assert warnings(s, "SELECT * FROM t WHERE k = 1") == [
        warning(0, 1001, f"SELECT * FROM {KS}.t WHERE k = 1 LIMIT 5000 ALLOW FILTERING")]
    assert warnings(s, "SELECT * FROM t WHERE k = 2") == [warning(
        0, 1002, f"SELECT * FROM {KS}.t WHERE k = 2 LIMIT 5000 ALLOW FILTERING", TOKEN_2)]


def test_each_partition_of_an_in_is_its_own_read(s):
    fill(s, "INSERT INTO t (k, c, v) VALUES (?, ?, null)",
         [(k, c) for k in (1, 2) for c in range(600)])
    assert warnings(s, "SELECT * FROM t WHERE k IN (1, 2)") is None
    # ... while a range read over both counts them together (the last partition's token).
    assert warnings(s, "SELECT * FROM t") == [
        warning(1200, 1200, f"SELECT * FROM {KS}.t LIMIT 5000 ALLOW FILTERING", TOKEN_2)]
    fill(s, "INSERT INTO t (k, c, v) VALUES (?, ?, null)",
         [(k, c) for k in (1, 2) for c in range(600, 1100)])
    # In token order, each with what is left of the page.
    assert warnings(s, "SELECT * FROM t WHERE k IN (2, 1)") == [
        warning(1100, 1100, f"SELECT * FROM {KS}.t WHERE k = 1 LIMIT 5000 ALLOW FILTERING"),
        warning(1100, 1100, f"SELECT * FROM {KS}.t WHERE k = 2 LIMIT 3900 ALLOW FILTERING",
                TOKEN_2)]


def test_a_page_stops_at_its_last_row(s):
    fill(s, "INSERT INTO t (k, c, v) VALUES (1, ?, 1)", [(c,) for c in range(10)])
    fill(s, "DELETE FROM t WHERE k = 1 AND c = ?", [(c,) for c in range(10, 1110)])
    fill(s, "INSERT INTO t (k, c, v) VALUES (1, ?, 1)", [(c,) for c in range(1110, 1120)])
    assert warnings(s, "SELECT * FROM t WHERE k = 1", fetch_size=10) is None
    assert warnings(s, "SELECT * FROM t WHERE k = 1 LIMIT 10") is None
    assert warnings(s, "SELECT * FROM t WHERE k = 1", fetch_size=11) == [
        warning(11, 1100, f"SELECT * FROM {KS}.t WHERE k = 1 LIMIT 11 ALLOW FILTERING")]
    # Every page of a paged read is a read of its own: the second page meets them.
    rs = s.execute(SimpleStatement("SELECT * FROM t WHERE k = 1", fetch_size=10))
    assert len(rs.current_rows) == 10
    f = s.execute_async(SimpleStatement("SELECT * FROM t WHERE k = 1", fetch_size=10),
                        paging_state=rs.paging_state)
    assert len(f.result().current_rows) == 10
    # ... named with where it resumes.
    assert f.warnings == [
        warning(10, 1100, f"SELECT * FROM {KS}.t WHERE k = 1 AND c > 9 LIMIT 10 ALLOW FILTERING")]
    # A range read's next page resumes at the partition the previous one ended in.
    fill(s, "INSERT INTO t (k, c, v) VALUES (2, ?, null)", [(c,) for c in range(2100)])
    rs = s.execute(SimpleStatement("SELECT * FROM t", fetch_size=1050))
    f = s.execute_async(SimpleStatement("SELECT * FROM t", fetch_size=1050),
                        paging_state=rs.paging_state)
    assert len(f.result().current_rows) == 1050
    assert f.warnings == [warning(1050, 1050, f"SELECT * FROM {KS}.t WHERE token(k) >= token(2) "
                                              "LIMIT 1050 ALLOW FILTERING", TOKEN_2)]


def test_past_the_failure_threshold_the_read_fails(s):
    s.execute("CREATE TABLE f (k int, c int, s set<int>, PRIMARY KEY (k, c))")
    remove = s.prepare("UPDATE f SET s = s - ? WHERE k = 1 AND c = ?")
    for c in range(3):
        s.execute(remove, (set(range(c * 40000, c * 40000 + 40000)), c))
    # One row's 40000 element tombstones: a warning.
    assert warnings(s, "SELECT * FROM f WHERE k = 1 AND c = 0") == [warning(
        0, 40000, f"SELECT * FROM {KS}.f WHERE k = 1 AND c = 0 LIMIT 5000 ALLOW FILTERING")]
    # 120000: past 100000.
    for query in ["SELECT * FROM f WHERE k = 1", "SELECT * FROM f", "SELECT count(*) FROM f"]:
        with pytest.raises(ReadFailure) as e:
            s.execute(query)
        err = e.value
        assert re.fullmatch(r"Error from server: code=1300 \[Replica\(s\) failed to execute read\] "
                            r"message=\"Operation failed - received 0 responses and 1 failures: "
                            r"READ_TOO_MANY_TOMBSTONES from /127\.0\.0\.1:\d+\".*", str(err)), err
        assert (err.consistency, err.received_responses, err.required_responses, err.failures) == (
            10, 0, 1, 1)  # LOCAL_ONE, the driver's default
        if s.cluster.protocol_version >= 5:
            assert err.error_code_map == {"127.0.0.1": 1}
        else:
            assert err.error_code_map is None


def test_thresholds_from_the_config(endpoint, tmp_path):
    """`tombstone_warn_threshold` / `tombstone_failure_threshold` lowered in the config file
    (Peregrine only: the test starts its own server with a config file)."""
    if endpoint.kind != "peregrine":
        pytest.skip("starts its own Peregrine")
    from conftest import _find_peregrine, _free_port, _port_open
    port = _free_port()
    config = tmp_path / "peregrine.yaml"
    config.write_text("tombstone_warn_threshold: 5\ntombstone_failure_threshold: 20\n")
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
            s.execute("CREATE TABLE t (k int, c int, v int, PRIMARY KEY (k, c))")
            fill(s, "DELETE FROM t WHERE k = 1 AND c = ?", [(c,) for c in range(5)])
            assert warnings(s, "SELECT * FROM t WHERE k = 1") is None
            fill(s, "DELETE FROM t WHERE k = 1 AND c = ?", [(5,)])
            assert warnings(s, "SELECT * FROM t WHERE k = 1") == [
                warning(0, 6, f"SELECT * FROM {KS}.t WHERE k = 1 LIMIT 5000 ALLOW FILTERING")]
            fill(s, "DELETE FROM t WHERE k = 1 AND c = ?", [(c,) for c in range(6, 21)])
            with pytest.raises(ReadFailure, match="READ_TOO_MANY_TOMBSTONES"):
                s.execute("SELECT * FROM t WHERE k = 1")
            # A page that ends before the tombstones never meets them.
            fill(s, "INSERT INTO t (k, c, v) VALUES (2, ?, 1)", [(c,) for c in range(3)])
            fill(s, "DELETE FROM t WHERE k = 2 AND c = ?", [(c,) for c in range(3, 40)])
            assert warnings(s, "SELECT * FROM t WHERE k = 2", fetch_size=3) is None
        finally:
            c.shutdown()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()
