"""A storage failure does not stop writes for good (issue 14, `disk_failure_policy: stop`): its
OWN peregrine with a hard limit of open files, run out by idle client sockets, so a memtable
flush cannot create its file. The write that meets the failure gets an error naming the cause;
the node then closes its client port and every client connection (as Cassandra's `stop` stops
its transports), which frees the descriptors the sockets held; the store reopens by itself,
the port opens again, the driver reconnects without being told, and every acknowledged write
is there.

Needs the peregrine binary (as test_durability.py).
"""

import os
import socket
import tempfile
import time

import pytest

from test_bad_input import STARTUP, STARTUP_BODY, frame, read_frame
from cassandra.policies import ConstantReconnectionPolicy

from test_durability import KS_REPLICATION, Server, _find_peregrine, wait_for_session

OPEN_FILES = 256


def closed_by_server(sock, timeout):
    """Whether the server closes `sock` (EOF or reset) within `timeout` seconds."""
    sock.settimeout(timeout)
    try:
        while True:
            if not sock.recv(4096):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def all_logs(server):
    """Every log line of every start of `server` (its `logs()` keeps only the tails)."""
    out = []
    for i in range(1, server.starts + 1):
        path = os.path.join(server.root, f"peregrine.{i}.log")
        if os.path.exists(path):
            out.append(open(path, errors="replace").read())
    return "\n".join(out)


def wait_for(condition, seconds, what):
    """Polls `condition` until it holds; fails saying `what` did not happen."""
    deadline = time.time() + seconds
    while not condition():
        assert time.time() < deadline, f"{what} within {seconds}s"
        time.sleep(0.05)


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


class Writes:
    """Numbered rows `f.t (k, v)` written one by one, remembering which were acknowledged."""

    def __init__(self, session, value):
        """Creates keyspace `f` and table `f.t` on `session`; rows will carry `value`."""
        session.execute(f"CREATE KEYSPACE f WITH replication = {KS_REPLICATION}")
        session.execute("CREATE TABLE f.t (k int PRIMARY KEY, v text)")
        self.session, self.value = session, value
        self.insert = session.prepare("INSERT INTO f.t (k, v) VALUES (?, ?)")
        self.k = 0
        self.acknowledged, self.failures = [], []

    def one(self):
        """Writes the next row; True when it was acknowledged."""
        k, self.k = self.k, self.k + 1
        try:
            self.session.execute(self.insert, (k, self.value))
        except Exception as e:  # ServerError surfaces as NoHostAvailable
            self.failures.append(str(e))
            return False
        self.acknowledged.append(k)
        return True

    def until_one_fails(self, at_most):
        while not self.failures and self.k < at_most:
            self.one()

    def until_one_succeeds(self, seconds):
        deadline = time.time() + seconds
        while not self.one():
            assert time.time() < deadline, f"writes did not resume: {self.failures[-1]}"
            time.sleep(0.2)

    def more(self, n):
        for _ in range(n):
            assert self.one(), self.failures[-1]

    def lost(self):
        got = {r.k for r in self.session.execute("SELECT k FROM f.t")}
        return [a for a in self.acknowledged if a not in got]

    def none_lost_after_a_restart(self, server):
        """Stops `server` (running) and starts it again: every acknowledged write is there."""
        self.session.cluster.shutdown()
        server.terminate()
        server.start()
        cluster = server.cluster()
        self.session = wait_for_session(cluster)
        lost = self.lost()
        assert not lost, f"{len(lost)} acknowledged writes lost after a restart, e.g. {lost[:5]}"
        cluster.shutdown()
        server.terminate()


def test_writes_resume_by_themselves_after_descriptors_ran_out():
    binary = _find_peregrine()
    if binary is None:
        pytest.skip("needs the peregrine binary")
    root = tempfile.mkdtemp(prefix="peregrine-diskfail-")
    server = Server(binary, root, sync="batch", open_files=OPEN_FILES,
                    extra_config="storage_memtable_bytes: 1048576\n")
    server.start()
    try:
        cluster = server.cluster(reconnection_policy=ConstantReconnectionPolicy(0.5))
        session = wait_for_session(cluster)
        writes = Writes(session, "x" * 2000)

        socks = hog_descriptors(server.port)
        assert len(socks) > 100, len(socks)
        # ~1 MiB memtables: a flush is due every ~500 writes, and cannot open its file.
        writes.until_one_fails(20000)
        assert writes.failures, "no write failed with every descriptor in use"
        assert "storage" in writes.failures[0], writes.failures[0]

        # The node closes its client connections, idle ones too, and with them the descriptors.
        still_open = [s for s in socks if not closed_by_server(s, 15)]
        assert not still_open, f"{len(still_open)} of {len(socks)} client connections left open"
        for s in socks:
            s.close()
        # The store reopens by itself, the port opens again, the same driver session reconnects
        # by itself: writes go through again, and go on through more flushes.
        writes.until_one_succeeds(60)
        writes.more(2000)
        lost = writes.lost()
        assert not lost, f"{len(lost)} acknowledged writes lost, e.g. {lost[:5]}"
        cluster.shutdown()
        server.terminate()
        logs = all_logs(server)
        for line in ("native transport stopped: storage failed", "reopened",
                     "native transport started again: the store serves again"):
            assert line in logs, f"{line!r} not logged:\n{logs[-3000:]}"
    finally:
        server.kill()


def test_best_effort_stops_writes_and_keeps_serving_reads_until_descriptors_come_back():
    """`disk_failure_policy: best_effort`: the flush that cannot open its file stops writes
    only. The client port and every connection stay open and acknowledged rows are read;
    writes are refused naming the policy; once the descriptors come back (the idle clients
    leave) writes resume by themselves, and nothing acknowledged is lost."""
    binary = _find_peregrine()
    if binary is None:
        pytest.skip("needs the peregrine binary")
    root = tempfile.mkdtemp(prefix="peregrine-besteffort-")
    server = Server(binary, root, sync="batch", open_files=OPEN_FILES,
                    extra_config="storage_memtable_bytes: 1048576\n"
                                 "disk_failure_policy: best_effort\n")
    server.start()
    try:
        cluster = server.cluster(reconnection_policy=ConstantReconnectionPolicy(0.5))
        session = wait_for_session(cluster)
        writes = Writes(session, "x" * 2000)
        select = session.prepare("SELECT v FROM f.t WHERE k = ?")

        socks = hog_descriptors(server.port)
        assert len(socks) > 100, len(socks)
        writes.until_one_fails(20000)
        assert writes.failures, "no write failed with every descriptor in use"
        assert "disk_failure_policy: best_effort" in writes.failures[0], writes.failures[0]
        acknowledged = len(writes.acknowledged)
        assert acknowledged > 0

        # Writes stay refused while the descriptors are held, and reads go on meanwhile: the
        # first, the last and a middle acknowledged row.
        for k in (writes.acknowledged[0], writes.acknowledged[acknowledged // 2],
                  writes.acknowledged[-1]):
            assert session.execute(select, (k,)).one().v == writes.value, k
        assert not writes.one(), "a write went through with the disk still failing"
        assert "writes are refused and reads go on" in writes.failures[-1], writes.failures[-1]
        # The idle connections were not closed by the server (the port stays up).
        still_open = [s for s in socks[:20] if not closed_by_server(s, 0.2)]
        assert len(still_open) == 20, "best_effort closed client connections"

        for s in socks:
            s.close()
        writes.until_one_succeeds(60)
        writes.more(2000)
        lost = writes.lost()
        assert not lost, f"{len(lost)} acknowledged writes lost, e.g. {lost[:5]}"
        writes.none_lost_after_a_restart(server)
        logs = all_logs(server)
        for line in ("writes stopped, reads go on (disk_failure_policy: best_effort)",
                     "serving writes again"):
            assert line in logs, f"{line!r} not logged:\n{logs[-3000:]}"
        assert "native transport stopped" not in logs, logs[-3000:]
    finally:
        server.kill()
