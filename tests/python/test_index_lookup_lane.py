"""Indexed lookups by one value run on the request's thread within a budget of rows read, and
in the scan lane past it (issue 11 item 7; `engine::lane::within_budget`, `local`'s
`lookup_here`), through the Python driver: the answer is the same either way, a small lookup
never reaches the scan lane, and one that reads past the budget (64 rows read, index entries
counted: about 32 rows) is dropped and runs there in full (stale index entries count too: the
engine's `lane` tests); after that the statement's next 63 lookups skip the try. A server with a
scan rate keeps every lookup in the lane.

Peregrine-only (the scan lane's metrics are an extension: docs/extensions.md)."""

import pytest
from cassandra.concurrent import execute_concurrent_with_args
from cassandra.query import SimpleStatement

from admin_support import Server, parse_prometheus, value

MANY = 300  # rows with v = 1: past the budget
FEW = 5  # rows with v = 2


def completed(server):
    return value(parse_prometheus(server.scrape()), "peregrine_scan_lane_completed_total")


def make(yaml=""):
    server = Server(yaml=yaml)
    cluster = server.cluster()
    s = cluster.connect()
    s.default_timeout = 60
    s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("CREATE TABLE ks.t (k int, c int, v int, PRIMARY KEY (k, c))")
    s.execute("CREATE INDEX ON ks.t (v) USING 'sai'")
    ins = s.prepare("INSERT INTO ks.t (k, c, v) VALUES (?, ?, ?)")
    rows = [(i % 40, i, 1) for i in range(MANY)] + [(i, 1000 + i, 2) for i in range(FEW)]
    execute_concurrent_with_args(s, ins, rows, concurrency=32)
    return server, cluster, s


@pytest.fixture(scope="module")
def plain():
    server, cluster, s = make()
    yield server, s
    cluster.shutdown()
    server.cleanup()


def keys(s, stmt, args, fetch_size=None):
    stmt.fetch_size = fetch_size
    return sorted((r.k, r.c) for r in s.execute(stmt, args))


def test_a_small_lookup_runs_here_and_a_large_one_in_the_lane(plain):
    server, s = plain
    # Each step its own statement: a statement whose lookup went over the budget skips the
    # next tries (the test below).
    small = s.prepare("SELECT k, c FROM ks.t WHERE v = ?")
    before = completed(server)
    assert keys(s, small, (2,), fetch_size=5000) == [(i, 1000 + i) for i in range(FEW)]
    assert completed(server) == before, "a 5-row lookup went to the scan lane"
    # 300 rows in one page: over the budget, dropped and run again in the lane, in full.
    want = sorted((i % 40, i) for i in range(MANY))
    large = s.prepare("SELECT c, k FROM ks.t WHERE v = ?")
    assert keys(s, large, (1,), fetch_size=5000) == want
    assert completed(server) == before + 1
    # Pages of 20 rows each stay within the budget: every page runs here, none in the lane.
    paged = s.prepare("SELECT k, c, v FROM ks.t WHERE v = ?")
    assert keys(s, paged, (1,), fetch_size=20) == want
    assert completed(server) == before + 1
    # LIMIT within the budget runs here; LIMIT past it in the lane.
    limited = s.prepare("SELECT k, c FROM ks.t WHERE v = ? LIMIT ?")
    assert len(keys(s, limited, (1, 20), fetch_size=5000)) == 20
    assert completed(server) == before + 1
    assert len(keys(s, limited, (1, 100), fetch_size=5000)) == 100
    assert completed(server) == before + 2
    # The unprepared form (not offered here) and a range of values go to the lane as before.
    assert len(list(s.execute(SimpleStatement("SELECT k FROM ks.t WHERE v = 2")))) == FEW
    assert completed(server) == before + 3
    assert len(list(s.execute(s.prepare("SELECT k FROM ks.t WHERE v > ?"), (1,)))) == FEW
    assert completed(server) == before + 4


def test_a_statement_whose_lookup_went_over_skips_the_next_tries(plain):
    server, s = plain
    stmt = s.prepare("SELECT k, c FROM ks.t WHERE v = ? LIMIT 1000")
    before = completed(server)
    assert len(keys(s, stmt, (1,), fetch_size=5000)) == MANY
    assert completed(server) == before + 1
    # The next 63 lookups of that statement go to the lane without a try, small or not.
    for _ in range(63):
        assert len(keys(s, stmt, (2,), fetch_size=5000)) == FEW
    assert completed(server) == before + 64
    # Then it tries again, and a small lookup runs here.
    assert len(keys(s, stmt, (2,), fetch_size=5000)) == FEW
    assert completed(server) == before + 64


def test_a_scan_rate_keeps_lookups_in_the_lane():
    server, cluster, s = make("scan_rows_per_second: 100000\n")
    try:
        by_v = s.prepare("SELECT k, c FROM ks.t WHERE v = ?")
        before = completed(server)
        assert keys(s, by_v, (2,), fetch_size=5000) == [(i, 1000 + i) for i in range(FEW)]
        assert completed(server) == before + 1
    finally:
        cluster.shutdown()
        server.cleanup()
