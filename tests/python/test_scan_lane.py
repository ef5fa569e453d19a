"""Scans in their own lane (issue 17 item 2), through the Python driver against a real
`peregrine serve`: a scan (a SELECT over a token range: whole table, token ranges, filtering,
count(*)) runs on the scan threads at a rows-per-second limit; point reads keep being answered
while the scan lane is full; the custom payload key `peregrine-scan-rate` lowers the limit of
one request; bad values in the config and the payload are refused with clear errors.

Peregrine-only (the scan lane and its keys are extensions: docs/extensions.md)."""

import os
import subprocess
import tempfile
import threading
import time

import pytest
from cassandra import InvalidRequest
from cassandra.cluster import NoHostAvailable
from cassandra.concurrent import execute_concurrent_with_args
from cassandra.query import SimpleStatement

from admin_support import Server, binary, parse_prometheus, value

RATE = 2000  # scan_rows_per_second of the module's server
ROWS = 3000  # rows of ks.big
SMALL = 300  # rows of ks.small
KEY = "peregrine-scan-rate"


@pytest.fixture(scope="module")
def server():
    s = Server(yaml=f"scan_threads: 1\nscan_queue: 1\nscan_rows_per_second: {RATE}\n")
    yield s
    s.cleanup()


@pytest.fixture(scope="module")
def session(server):
    c = server.cluster()
    s = c.connect()
    s.default_timeout = 60
    s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("CREATE TABLE ks.big (k int, c int, v text, PRIMARY KEY (k, c))")
    s.execute("CREATE TABLE ks.small (k int PRIMARY KEY, v int)")
    ins = s.prepare("INSERT INTO ks.big (k, c, v) VALUES (?, ?, 'x')")
    execute_concurrent_with_args(s, ins, [(i // 3, i % 3) for i in range(ROWS)], concurrency=64)
    ins = s.prepare("INSERT INTO ks.small (k, v) VALUES (?, ?)")
    execute_concurrent_with_args(s, ins, [(i, i) for i in range(SMALL)], concurrency=64)
    yield s
    c.shutdown()


def metrics(server):
    return parse_prometheus(server.scrape())


def wait_for(cond, what, timeout=30):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def timed(fn):
    t = time.monotonic()
    r = fn()
    return r, time.monotonic() - t


def test_a_paged_scan_keeps_to_the_rate(session):
    stmt = session.prepare("SELECT k, c, v FROM ks.big")
    stmt.fetch_size = 500
    rows, secs = timed(lambda: list(session.execute(stmt)))
    assert len(rows) == ROWS
    rate = ROWS / secs
    # At most the limit (the pacer never runs ahead of it), and not far below it.
    assert rate <= RATE * 1.05, f"{rate:.0f} rows/s over a {RATE} rows/s limit"
    assert rate >= RATE * 0.3, f"{rate:.0f} rows/s: throttled far below {RATE}"


def test_count_and_filtering_scans_are_paced_by_rows_read(session):
    # count(*) returns one row but reads every row: it is paced by the rows it reads.
    (row,), secs = timed(lambda: list(session.execute("SELECT count(*) FROM ks.big")))
    assert row[0] == ROWS
    assert secs >= ROWS / RATE * 0.95, f"count(*) over {ROWS} rows took {secs:.2f}s"
    # A filter that keeps nothing still reads (and is paced by) every row.
    rows, secs = timed(lambda: list(session.execute(
        "SELECT * FROM ks.big WHERE v = 'nothing' ALLOW FILTERING")))
    assert rows == []
    assert secs >= ROWS / RATE * 0.95, f"filtering {ROWS} rows took {secs:.2f}s"


def test_the_payload_key_lowers_the_limit_and_cannot_raise_it(session):
    slow = 200
    stmt = SimpleStatement("SELECT * FROM ks.small", fetch_size=100)
    rows, secs = timed(lambda: list(session.execute(stmt, custom_payload={KEY: str(slow).encode()})))
    assert len(rows) == SMALL
    assert secs >= SMALL / slow * 0.95, f"{SMALL} rows at {slow}/s took {secs:.2f}s"
    assert secs <= SMALL / slow * 4, f"{SMALL} rows at {slow}/s took {secs:.2f}s"
    # Asking for more than the server's limit gets the server's limit.
    rows, secs = timed(lambda: list(session.execute(
        SimpleStatement("SELECT * FROM ks.big", fetch_size=1000),
        custom_payload={KEY: b"1000000"})))
    assert len(rows) == ROWS
    assert secs >= ROWS / RATE * 0.95, f"{ROWS} rows took {secs:.2f}s with the limit at {RATE}"


def test_point_reads_are_answered_while_scans_fill_the_lane(server, session):
    point = session.prepare("SELECT v FROM ks.small WHERE k = ?")
    # One scan running (scan_threads: 1) and one waiting (scan_queue: 1), each ~3 s long.
    scan = SimpleStatement("SELECT * FROM ks.small")  # one page
    payload = {KEY: b"100"}
    running = session.execute_async(scan, custom_payload=payload)
    first_done = threading.Event()
    running.add_callbacks(lambda _: first_done.set(), lambda _: first_done.set())
    wait_for(lambda: value(metrics(server), "peregrine_scan_lane_running") == 1, "a running scan")
    waiting = session.execute_async(scan, custom_payload=payload)
    wait_for(lambda: value(metrics(server), "peregrine_scan_lane_queued") == 1, "a queued scan")
    # The lane is full: a third scan is refused at once, naming the bound.
    with pytest.raises(NoHostAvailable) as e:
        session.execute("SELECT count(*) FROM ks.small")
    assert "Too many scans: 1 running (scan_threads) and 1 waiting (scan_queue)" in str(e.value)
    # Point reads, prepared (inline) and unprepared, are answered meanwhile.
    for k in range(0, SMALL, 3):
        (r,), secs = timed(lambda: list(session.execute(point, (k,))))
        assert r.v == k
        assert secs < 1.0, f"a point read took {secs:.2f}s beside the scans"
        assert session.execute(f"SELECT v FROM ks.small WHERE k = {k}").one().v == k
    assert not first_done.is_set(), "the scans should still be running after the point reads"
    m = metrics(server)
    assert value(m, "peregrine_scan_lane_running") == 1
    assert value(m, "peregrine_scan_lane_rejected_total") >= 1
    assert len(list(running.result())) == SMALL
    assert len(list(waiting.result())) == SMALL
    wait_for(lambda: value(metrics(server), "peregrine_scan_lane_running") == 0, "an idle lane")


@pytest.mark.parametrize("bad", [b"", b"0", b"-1", b"fast", b"1.5", b"99999999999"])
def test_bad_payload_values_are_refused(session, bad):
    with pytest.raises(InvalidRequest) as e:
        session.execute("SELECT * FROM ks.small", custom_payload={KEY: bad})
    assert f"for custom payload key '{KEY}'" in str(e.value)
    assert "rows per second" in str(e.value)


def test_bad_config_values_stop_the_start_with_every_problem_named():
    with tempfile.TemporaryDirectory() as d:
        cfg = os.path.join(d, "bad.yaml")
        with open(cfg, "w") as f:
            f.write("scan_threads: 0\nscan_queue: 100000\nscan_rows_per_second: fast\n")
        r = subprocess.run([binary(), "serve", "--config", cfg, "--listen", "127.0.0.1:0",
                            "--data-dir", os.path.join(d, "data")],
                           capture_output=True, text=True, timeout=60)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert "`scan_threads` is 0 but must be between 1 and 256" in out, out
    assert "`scan_queue` is 100000 but must be at most 65536" in out, out
    assert "`scan_rows_per_second`" in out, out


def test_a_role_gets_its_own_limit():
    from auth_support import AuthServer
    srv = AuthServer("scan_role_rows_per_second: {etl: 200}\n").start()
    try:
        admin = srv.cluster("cassandra", "cassandra")
        s = admin.connect()
        s.default_timeout = 60
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
        ins = s.prepare("INSERT INTO ks.t (k, v) VALUES (?, ?)")
        execute_concurrent_with_args(s, ins, [(i, i) for i in range(SMALL)], concurrency=64)
        s.execute("CREATE ROLE etl WITH PASSWORD = 'etl' AND LOGIN = true")
        s.execute("GRANT SELECT ON KEYSPACE ks TO etl")
        # No global limit: the superuser's scan is not paced.
        rows, fast = timed(lambda: list(s.execute("SELECT * FROM ks.t")))
        assert len(rows) == SMALL
        etl = srv.cluster("etl", "etl")
        e = etl.connect()
        e.default_timeout = 60
        rows, slow = timed(lambda: list(e.execute("SELECT * FROM ks.t")))
        assert len(rows) == SMALL
        assert slow >= SMALL / 200 * 0.95, f"etl read {SMALL} rows in {slow:.2f}s at 200 rows/s"
        assert slow > fast * 2, (fast, slow)
        etl.shutdown()
        admin.shutdown()
    finally:
        srv.stop()
