"""`thread_per_core: true` (issue 16 item 6): connections served on one pinned single-threaded
runtime per CPU. Real drivers do everything they do on the default runtime: several sessions at
once, prepared statements, paging through a scan (blocking work from a per-core thread), a
conditional write, a schema change event reaching the other sessions; and the server stops
cleanly on SIGTERM with connections open on its core threads.

Needs the peregrine binary (as test_durability.py); skipped without one.
"""

import os
import time

import pytest
from cassandra.cluster import Cluster
from cassandra.concurrent import execute_concurrent_with_args
from cassandra.query import SimpleStatement

from test_durability import KS_REPLICATION, Server, _find_peregrine


@pytest.fixture
def server(tmp_path):
    binary = _find_peregrine()
    if binary is None:
        pytest.skip("needs the peregrine binary")
    s = Server(binary, str(tmp_path), extra_config="thread_per_core: true\n")
    s.start()
    yield s
    s.kill()


def wait_for_cores(server, timeout=30):
    """The core threads start once the accept loop runs, just after the port opens: waits for
    the line that says they serve."""
    log = os.path.join(server.root, "peregrine.1.log")
    deadline = time.time() + timeout
    while time.time() < deadline:
        with open(log, errors="replace") as f:
            if "thread_per_core: connections served on" in f.read():
                return
        time.sleep(0.05)
    pytest.fail(f"no 'thread_per_core: connections served on' line in {timeout}s")


def core_threads(pid):
    names = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/comm") as f:
            names.append(f.read().strip())
    return sorted(n for n in names if n.startswith("peregrine-core"))


def test_drivers_work_on_per_core_runtimes(server):
    cpus = len(os.sched_getaffinity(server.proc.pid))
    wait_for_cores(server)
    assert len(core_threads(server.proc.pid)) == cpus
    clusters = [Cluster(["127.0.0.1"], port=server.port) for _ in range(3)]
    try:
        sessions = [c.connect() for c in clusters]
        first = sessions[0]
        first.execute(f"CREATE KEYSPACE tpc WITH replication = {KS_REPLICATION}")
        first.execute("CREATE TABLE tpc.kv (k int, c int, v text, PRIMARY KEY (k, c))")
        # Every session sees the table at once: the schema change reached their drivers.
        for s in sessions:
            s.cluster.refresh_schema_metadata()
            assert "kv" in s.cluster.metadata.keyspaces["tpc"].tables

        # Concurrent prepared writes from every session (requests in flight on each connection).
        for i, s in enumerate(sessions):
            insert = s.prepare("INSERT INTO tpc.kv (k, c, v) VALUES (?, ?, ?)")
            args = [(k, i, f"v{k}-{i}") for k in range(300)]
            results = execute_concurrent_with_args(s, insert, args, concurrency=64)
            assert all(ok for ok, _ in results)

        # Point reads on each session, prepared and unprepared.
        for i, s in enumerate(sessions):
            get = s.prepare("SELECT v FROM tpc.kv WHERE k = ? AND c = ?")
            assert s.execute(get, (42, i)).one().v == f"v42-{i}"
            assert s.execute("SELECT v FROM tpc.kv WHERE k = 7 AND c = %s", (i,)).one().v == f"v7-{i}"

        # A paged full scan (it runs off the core thread, on its blocking pool).
        rows = list(sessions[1].execute(SimpleStatement("SELECT k, c FROM tpc.kv", fetch_size=50)))
        assert len(rows) == 300 * len(sessions)

        # A conditional write and its outcome.
        lwt = sessions[2].execute("UPDATE tpc.kv SET v = 'x' WHERE k = 1 AND c = 0 IF v = 'v1-0'")
        assert lwt.one().applied
        again = sessions[0].execute("UPDATE tpc.kv SET v = 'y' WHERE k = 1 AND c = 0 IF v = 'v1-0'")
        assert not again.one().applied
        assert again.one().v == "x"
    finally:
        for c in clusters:
            c.shutdown()


def test_sigterm_with_open_connections_exits_cleanly(server):
    cluster = Cluster(["127.0.0.1"], port=server.port)
    try:
        session = cluster.connect()
        assert session.execute("SELECT release_version FROM system.local").one()
        server.terminate()
    finally:
        cluster.shutdown()
    with open(os.path.join(server.root, "peregrine.1.log"), errors="replace") as f:
        assert "thread_per_core: connections served on" in f.read()
