"""A storage failure does not stop writes for good (issue 14, `disk_failure_policy: stop`): its
OWN peregrine with a hard limit of open files, run out by idle client sockets, so a memtable
flush cannot create its file. Requests fail with an error naming the cause while the store is
down; once the sockets close it reopens by itself, without a restart, and every acknowledged
write is there.

Needs the peregrine binary (as test_durability.py).
"""

import socket
import tempfile
import time

import pytest

from test_bad_input import STARTUP, STARTUP_BODY, frame, read_frame
from test_durability import KS_REPLICATION, Server, _find_peregrine, wait_for_session

OPEN_FILES = 256


def hog_descriptors(port):
    """Idle connections that finished STARTUP until the server accepts no more (its
    descriptors are all in use)."""
    socks = []
    while len(socks) < OPEN_FILES:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.settimeout(1.5)
        try:
            s.sendall(frame(STARTUP, STARTUP_BODY))
            if read_frame(s) is None:
                raise OSError("closed")
        except OSError:
            s.close()
            break
        socks.append(s)
    return socks


def test_writes_resume_by_themselves_after_descriptors_ran_out():
    binary = _find_peregrine()
    if binary is None:
        pytest.skip("needs the peregrine binary")
    root = tempfile.mkdtemp(prefix="peregrine-diskfail-")
    server = Server(binary, root, sync="batch", open_files=OPEN_FILES,
                    extra_config="storage_memtable_bytes: 1048576\n")
    server.start()
    try:
        cluster = server.cluster()
        session = wait_for_session(cluster)
        session.execute(f"CREATE KEYSPACE f WITH replication = {KS_REPLICATION}")
        session.execute("CREATE TABLE f.t (k int PRIMARY KEY, v text)")
        insert = session.prepare("INSERT INTO f.t (k, v) VALUES (?, ?)")
        value = "x" * 2000

        socks = hog_descriptors(server.port)
        assert len(socks) > 100, len(socks)
        acknowledged, failures = [], []
        k = 0
        # ~1 MiB memtables: a flush is due every ~500 writes, and cannot open its file.
        while not failures and k < 20000:
            try:
                session.execute(insert, (k, value))
                acknowledged.append(k)
            except Exception as e:  # ServerError surfaces as NoHostAvailable
                failures.append(str(e))
            k += 1
        assert failures, "no write failed with every descriptor in use"
        assert "storage" in failures[0], failures[0]

        for s in socks:
            s.close()
        # The store reopens by itself: wait until a write goes through again.
        deadline = time.time() + 60
        while True:
            try:
                session.execute(insert, (k, value))
                acknowledged.append(k)
                break
            except Exception as e:  # ServerError surfaces as NoHostAvailable
                assert time.time() < deadline, f"writes did not resume: {e}"
                time.sleep(0.2)
        for j in range(k + 1, k + 2000):  # and go on, through more flushes
            session.execute(insert, (j, value))
            acknowledged.append(j)
        got = {r.k for r in session.execute("SELECT k FROM f.t")}
        missing = [a for a in acknowledged if a not in got]
        assert not missing, f"{len(missing)} acknowledged writes lost, e.g. {missing[:5]}"
        cluster.shutdown()
        server.terminate()
        assert "reopened" in server.logs(), server.logs()[-3000:]
    finally:
        server.kill()
