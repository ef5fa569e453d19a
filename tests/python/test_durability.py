"""Durability across restarts: each test runs its OWN peregrine processes on its own data dir.

- a clean restart (SIGTERM, start again on the same data dir) keeps schema, rows, and prepared
  statements made before it still execute (the driver re-prepares them);
- with `commitlog_sync: batch`, SIGKILL in the middle of concurrent writes loses no write that was
  acknowledged (writes not acknowledged may or may not be there), over several crash cycles;
- TTL'd data is gone after expiry across restarts, and deletions (row, partition, range, cell)
  stay deleted across SIGTERM and SIGKILL restarts.

These need the peregrine binary (PEREGRINE_BIN or the build under target/ or $CARGO_TARGET_DIR),
not an external endpoint: with none, they are skipped.
"""

import os
import random
import resource
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid

import pytest
from cassandra import ConsistencyLevel
from cassandra.cluster import Cluster
from cassandra.policies import ConstantReconnectionPolicy
from cassandra.query import SimpleStatement

try:  # tests/conftest.py is on sys.path when pytest loads it (rootdir conftest, no __init__.py)
    from conftest import _find_peregrine, _free_port, _port_open
except ImportError:  # pragma: no cover - same logic, kept minimal
    REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

    def _free_port():
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]

    def _port_open(host, port):
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return True
        except OSError:
            return False

    def _find_peregrine():
        if os.environ.get("PEREGRINE_BIN"):
            return os.environ["PEREGRINE_BIN"]
        roots = [os.path.join(REPO, "target")]
        if os.environ.get("CARGO_TARGET_DIR"):
            roots.insert(0, os.environ["CARGO_TARGET_DIR"])
        for root in roots:
            for profile in ("release", "debug"):
                p = os.path.join(root, profile, "peregrine")
                if os.path.isfile(p) and os.access(p, os.X_OK):
                    return p
        return None


START_TIMEOUT = float(os.environ.get("PEREGRINE_START_TIMEOUT", "60"))
KS_REPLICATION = "{'class': 'SimpleStrategy', 'replication_factor': 1}"


class Server:
    """One peregrine on a fixed port and data dir, started and stopped many times."""

    def __init__(self, binary, root, sync="periodic", extra_config="", open_files=None):
        self.binary = binary
        self.root = root
        self.data = os.path.join(root, "data")
        self.port = _free_port()
        self.config = os.path.join(root, "peregrine.yaml")
        with open(self.config, "w") as f:
            f.write(f"commitlog_sync: {sync}\n{extra_config}")
        self.proc = None
        self.log = None
        self.starts = 0
        # A hard limit on the process's open files (RLIMIT_NOFILE), or None.
        self.open_files = open_files

    def start(self):
        assert self.proc is None
        self.starts += 1
        log_path = os.path.join(self.root, f"peregrine.{self.starts}.log")
        self.log = open(log_path, "wb")
        self.proc = subprocess.Popen(
            [self.binary, "serve", "--config", self.config, "--listen", f"127.0.0.1:{self.port}",
             "--data-dir", self.data],
            stdout=self.log, stderr=subprocess.STDOUT, preexec_fn=self._limits)
        deadline = time.time() + START_TIMEOUT
        while not _port_open("127.0.0.1", self.port):
            if self.proc.poll() is not None:
                code = self.proc.returncode
                self._closed()
                pytest.fail(f"peregrine exited with {code} during start (start #{self.starts}):\n"
                            + open(log_path, errors="replace").read()[-4000:])
            if time.time() > deadline:
                self.kill()
                pytest.fail(f"peregrine did not open 127.0.0.1:{self.port} in {START_TIMEOUT}s")
            time.sleep(0.05)

    def _limits(self):
        if self.open_files is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (self.open_files, self.open_files))

    def _closed(self):
        self.proc = None
        if self.log:
            self.log.close()
            self.log = None

    def terminate(self, timeout=30):
        """SIGTERM; the server must exit cleanly (status 0) within `timeout`."""
        p = self.proc
        p.send_signal(signal.SIGTERM)
        try:
            code = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            self._closed()
            pytest.fail(f"peregrine did not exit within {timeout}s of SIGTERM")
        self._closed()
        assert code in (0, -signal.SIGTERM), f"peregrine exited with {code} after SIGTERM"

    def kill(self):
        """SIGKILL: no shutdown work at all."""
        p = self.proc
        if p is None:
            return
        p.send_signal(signal.SIGKILL)
        p.wait()
        self._closed()

    def logs(self):
        out = []
        for i in range(1, self.starts + 1):
            path = os.path.join(self.root, f"peregrine.{i}.log")
            if os.path.exists(path):
                out.append(f"--- start #{i} ---\n" + open(path, errors="replace").read()[-2000:])
        return "\n".join(out)

    def cluster(self, **kw):
        kw.setdefault("protocol_version", 4)
        kw.setdefault("connect_timeout", 10)
        return Cluster(["127.0.0.1"], port=self.port, **kw)


@pytest.fixture
def server_factory(request):
    binary = _find_peregrine()
    if os.environ.get("CQL_HOST") and not binary:
        pytest.skip("durability tests start their own peregrine: no binary found")
    if binary is None or not os.path.exists(binary):
        pytest.fail("build peregrine (cargo build) or set PEREGRINE_BIN")
    made = []
    failed_before = request.session.testsfailed

    def make(sync="periodic"):
        root = tempfile.mkdtemp(prefix="peregrine-durability-")
        s = Server(binary, root, sync)
        made.append(s)
        return s

    yield make
    failed = request.session.testsfailed > failed_before
    for s in made:
        s.kill()
        if failed:
            print(f"logs of {s.root}:\n{s.logs()}")
        shutil.rmtree(s.root, ignore_errors=True)


def wait_for_session(cluster, timeout=30):
    """The driver reconnects on its own; wait until a query goes through."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            s = cluster.connect()
            s.execute("SELECT key FROM system.local")
            return s
        except Exception as e:  # NoHostAvailable while the driver reconnects
            last = e
            time.sleep(0.2)
    raise AssertionError(f"no session within {timeout}s: {last!r}")


def schema_rows(session, ks):
    cols = session.execute(
        "SELECT table_name, column_name, kind, position, type, clustering_order "
        "FROM system_schema.columns WHERE keyspace_name = %s", (ks,))
    tables = session.execute(
        "SELECT table_name, default_time_to_live FROM system_schema.tables WHERE keyspace_name = %s",
        (ks,))
    return sorted(tuple(r) for r in cols), sorted(tuple(r) for r in tables)


# --------------------------------------------------------------------------------------------
# a. clean restart
# --------------------------------------------------------------------------------------------

def test_clean_restart_keeps_schema_rows_and_prepared_statements(server_factory):
    srv = server_factory()
    srv.start()
    ks = "dur_" + uuid.uuid4().hex[:10]
    # reprepare_on_up=False: after the restart, the old prepared ids reach a server that does not
    # know them, so the driver must handle UNPREPARED and re-prepare.
    cluster = srv.cluster(reconnection_policy=ConstantReconnectionPolicy(0.2), reprepare_on_up=False)
    try:
        s = cluster.connect()
        s.execute(f"CREATE KEYSPACE {ks} WITH replication = {KS_REPLICATION}")
        s.set_keyspace(ks)
        s.execute("CREATE TABLE t (p int, c text, v bigint, b blob, l list<int>, m map<text, int>, "
                  "st text static, PRIMARY KEY (p, c)) WITH CLUSTERING ORDER BY (c DESC)")
        s.execute("CREATE TABLE gone (k int PRIMARY KEY)")
        s.execute("CREATE TABLE altered (k int PRIMARY KEY, a int)")
        s.execute("ALTER TABLE altered ADD extra text")
        s.execute("DROP TABLE gone")
        s.execute("CREATE TABLE c (k int PRIMARY KEY, n counter)")
        ins = s.prepare("INSERT INTO t (p, c, v, b, l, m) VALUES (?, ?, ?, ?, ?, ?)")
        sel = s.prepare("SELECT c, v, b, l, m, st FROM t WHERE p = ?")
        want = {}
        for p in range(20):
            s.execute("UPDATE t SET st = %s WHERE p = %s", (f"static{p}", p))
            for i in range(25):
                row = (f"c{i:03d}", p * 1000 + i, bytes([p, i]), [i, p], {"k": i})
                s.execute(ins, (p,) + row)
                want.setdefault(p, []).append(row)
        s.execute("INSERT INTO altered (k, a, extra) VALUES (1, 2, 'x')")
        s.execute("UPDATE c SET n = n + 41 WHERE k = 1")
        s.execute("UPDATE c SET n = n + 1 WHERE k = 1")
        before = schema_rows(s, ks)
        assert ("gone",) not in [(t,) for t, *_ in before[1]]

        srv.terminate()
        srv.start()

        s = wait_for_session(cluster)
        s.set_keyspace(ks)
        assert schema_rows(s, ks) == before
        assert ks in [r.keyspace_name for r in s.execute("SELECT keyspace_name FROM system_schema.keyspaces")]
        with pytest.raises(Exception):
            s.execute("SELECT * FROM gone")

        # The statements prepared before the restart still execute (re-prepared by the driver).
        for p in range(20):
            rows = list(s.execute(sel, (p,)))
            got = [(r.c, r.v, r.b, r.l, dict(r.m)) for r in rows]
            assert got == sorted(want[p], reverse=True), f"partition {p}"
            assert all(r.st == f"static{p}" for r in rows)
        s.execute(ins, (99, "new", 1, b"", [], {}))
        assert s.execute(sel, (99,)).one().c == "new"
        # A fresh prepare works too, and plain queries see everything.
        assert s.execute(s.prepare("SELECT count(*) FROM t")).one()[0] == 20 * 25 + 1
        assert tuple(s.execute("SELECT k, a, extra FROM altered").one()) == (1, 2, "x")
        assert s.execute("SELECT n FROM c WHERE k = 1").one().n == 42
        s.execute("UPDATE c SET n = n + 1 WHERE k = 1")
        assert s.execute("SELECT n FROM c WHERE k = 1").one().n == 43

        # A second clean restart with a brand-new client.
        srv.terminate()
        srv.start()
        with srv.cluster() as c2:
            s2 = c2.connect(ks)
            assert s2.execute("SELECT count(*) FROM t").one()[0] == 20 * 25 + 1
            assert s2.execute("SELECT n FROM c WHERE k = 1").one().n == 43
    finally:
        cluster.shutdown()
        if srv.proc is not None:
            srv.terminate()


# --------------------------------------------------------------------------------------------
# b. SIGKILL under load with commitlog_sync: batch
# --------------------------------------------------------------------------------------------

ITERATIONS = 5
SYNC_WRITERS = 4          # threads doing one write at a time
ASYNC_IN_FLIGHT = 64      # plus one thread keeping this many async writes in flight


class Acked:
    """What the server acknowledged: row writes, and the last acknowledged value per writer."""

    def __init__(self):
        self.lock = threading.Lock()
        self.rows = {}        # (it, writer) -> {seq: val}
        self.latest = {}      # writer key -> (last acked seq, seq in flight or None)

    def row(self, it, w, seq, val):
        with self.lock:
            self.rows.setdefault((it, w), {})[seq] = val


def sync_writer(session, ins, upd, acked, it, w, stop, errors):
    key = f"{it}-{w}"
    seq = 0
    while not stop.is_set():
        val = f"{it}/{w}/{seq}/" + uuid.uuid4().hex
        try:
            session.execute(ins, (it, w, seq, val), timeout=5)
        except Exception as e:
            errors.append(e)
            return
        acked.row(it, w, seq, val)
        # The writer's own row, written one seq at a time: after a crash it holds the last
        # acknowledged seq or the one that was in flight.
        with acked.lock:
            last = acked.latest.get(key, (None, None))[0]
            acked.latest[key] = (last, seq)
        try:
            session.execute(upd, (seq, key), timeout=5)
        except Exception as e:
            errors.append(e)
            return
        with acked.lock:
            acked.latest[key] = (seq, None)
        seq += 1


def async_writer(session, ins, acked, it, w, stop, errors):
    sem = threading.Semaphore(ASYNC_IN_FLIGHT)
    failed = threading.Event()
    seq = 0
    while not stop.is_set() and not failed.is_set():
        if not sem.acquire(timeout=0.5):
            continue
        val = f"{it}/{w}/{seq}/" + uuid.uuid4().hex
        fut = session.execute_async(ins, (it, w, seq, val), timeout=5)

        def ok(_rows, seq=seq, val=val):
            acked.row(it, w, seq, val)
            sem.release()

        def bad(exc):
            errors.append(exc)
            failed.set()
            sem.release()

        fut.add_callbacks(ok, bad)
        seq += 1
    # Let outstanding callbacks finish (they fail fast once the server is gone).
    for _ in range(ASYNC_IN_FLIGHT):
        sem.acquire(timeout=10)


def verify(session, acked):
    sel = session.prepare("SELECT seq, val FROM w WHERE it = ? AND writer = ?")
    sel.consistency_level = ConsistencyLevel.ONE
    missing, wrong = [], []
    with acked.lock:
        rows = {k: dict(v) for k, v in acked.rows.items()}
        latest = dict(acked.latest)
    for (it, w), want in sorted(rows.items()):
        got = {r.seq: r.val for r in session.execute(sel, (it, w))}
        for seq, val in want.items():
            if seq not in got:
                missing.append((it, w, seq))
            elif got[seq] != val:
                wrong.append((it, w, seq, val, got[seq]))
    assert not missing, f"{len(missing)} acknowledged rows lost, e.g. {missing[:10]}"
    assert not wrong, f"{len(wrong)} acknowledged rows with another value, e.g. {wrong[:5]}"
    got_latest = {r.writer_key: r.seq for r in session.execute("SELECT writer_key, seq FROM latest")}
    for key, (last, inflight) in latest.items():
        allowed = {last, inflight} - {None}
        if last is None and inflight is not None:
            allowed.add(None)  # the very first update was not acknowledged: may be absent
        assert got_latest.get(key) in allowed, \
            f"latest[{key}] = {got_latest.get(key)!r}, acknowledged {last!r}, in flight {inflight!r}"
    return sum(len(v) for v in rows.values())


def test_sigkill_under_load_loses_no_acknowledged_write(server_factory):
    srv = server_factory(sync="batch")
    acked = Acked()
    ks = "crash_" + uuid.uuid4().hex[:10]
    rnd = random.Random(os.environ.get("DURABILITY_SEED", "peregrine"))
    t_end = time.time() + 75
    counts = []
    for it in range(ITERATIONS):
        srv.start()
        cluster = srv.cluster(reconnection_policy=ConstantReconnectionPolicy(60), executor_threads=4)
        try:
            s = cluster.connect()
            if it == 0:
                s.execute(f"CREATE KEYSPACE {ks} WITH replication = {KS_REPLICATION}")
                s.execute(f"CREATE TABLE {ks}.w (it int, writer int, seq int, val text, "
                          "PRIMARY KEY ((it, writer), seq))")
                s.execute(f"CREATE TABLE {ks}.latest (writer_key text PRIMARY KEY, seq int)")
            s.set_keyspace(ks)
            # Everything acknowledged in the earlier cycles survived their SIGKILLs.
            counts.append(verify(s, acked))

            ins = s.prepare("INSERT INTO w (it, writer, seq, val) VALUES (?, ?, ?, ?)")
            upd = s.prepare("UPDATE latest SET seq = ? WHERE writer_key = ?")
            stop = threading.Event()
            errors = []
            threads = [threading.Thread(target=sync_writer, args=(s, ins, upd, acked, it, w, stop, errors),
                                        daemon=True) for w in range(SYNC_WRITERS)]
            threads.append(threading.Thread(target=async_writer,
                                            args=(s, ins, acked, it, SYNC_WRITERS, stop, errors),
                                            daemon=True))
            for t in threads:
                t.start()
            time.sleep(rnd.uniform(0.5, 2.0))
            before_kill = sum(len(v) for k, v in acked.rows.items() if k[0] == it)
            srv.kill()
            stop.set()
            for t in threads:
                t.join(timeout=20)
                assert not t.is_alive(), "a writer did not stop after the server died"
            assert before_kill > 0, f"no write acknowledged in cycle {it}: {errors[:3]}"
        finally:
            cluster.shutdown()
            srv.kill()
        if time.time() > t_end:
            break
    srv.start()
    with srv.cluster() as cluster:
        s = cluster.connect(ks)
        counts.append(verify(s, acked))
    srv.terminate()
    assert counts[-1] > 0 and counts == sorted(counts), counts


# --------------------------------------------------------------------------------------------
# c. TTL expiry and deletions across restarts
# --------------------------------------------------------------------------------------------

def test_ttl_expires_across_restart(server_factory):
    srv = server_factory(sync="batch")
    srv.start()
    ks = "ttl_" + uuid.uuid4().hex[:10]
    try:
        with srv.cluster() as cluster:
            s = cluster.connect()
            s.execute(f"CREATE KEYSPACE {ks} WITH replication = {KS_REPLICATION}")
            s.set_keyspace(ks)
            s.execute("CREATE TABLE t (k int PRIMARY KEY, a text, b text)")
            s.execute("CREATE TABLE d (k int PRIMARY KEY, v text) WITH default_time_to_live = 3")
            s.execute("INSERT INTO t (k, a, b) VALUES (1, 'x', 'y') USING TTL 3")     # whole row
            s.execute("INSERT INTO t (k, a, b) VALUES (2, 'keep', 'keep')")
            s.execute("UPDATE t USING TTL 3 SET b = 'short' WHERE k = 2")             # one cell
            s.execute("INSERT INTO t (k, a) VALUES (3, 'forever')")
            s.execute("INSERT INTO d (k, v) VALUES (1, 'table ttl')")                 # table default
            s.execute("INSERT INTO d (k, v) VALUES (2, 'long') USING TTL 3600")
            written = time.time()
            assert s.execute("SELECT count(*) FROM t").one()[0] == 3
            ttl = s.execute("SELECT ttl(a) FROM t WHERE k = 1").one()[0]
            assert ttl is not None and 0 < ttl <= 3

        srv.terminate()
        srv.start()
        with srv.cluster() as cluster:
            s = cluster.connect(ks)
            if time.time() - written < 2.5:
                # Not expired yet: the TTL itself survived the restart.
                ttl = s.execute("SELECT ttl(a) FROM t WHERE k = 1").one()
                assert ttl is not None and ttl[0] is not None and 0 < ttl[0] <= 3, ttl
            time.sleep(max(0.0, written + 4.5 - time.time()))
            assert s.execute("SELECT * FROM t WHERE k = 1").one() is None
            assert tuple(s.execute("SELECT a, b FROM t WHERE k = 2").one()) == ("keep", None)
            assert s.execute("SELECT a FROM t WHERE k = 3").one().a == "forever"
            assert s.execute("SELECT * FROM d WHERE k = 1").one() is None
            assert s.execute("SELECT v FROM d WHERE k = 2").one().v == "long"
            assert sorted(r.k for r in s.execute("SELECT k FROM t")) == [2, 3]

        # Expired data stays gone after another restart (clean, then crash).
        for stop in (srv.terminate, srv.kill):
            stop()
            srv.start()
            with srv.cluster() as cluster:
                s = cluster.connect(ks)
                assert sorted(r.k for r in s.execute("SELECT k FROM t")) == [2, 3]
                assert s.execute("SELECT b FROM t WHERE k = 2").one().b is None
                assert [r.k for r in s.execute("SELECT k FROM d")] == [2]
    finally:
        if srv.proc is not None:
            srv.terminate()


def test_deletes_stay_deleted_across_restarts(server_factory):
    srv = server_factory(sync="batch")
    srv.start()
    ks = "del_" + uuid.uuid4().hex[:10]
    try:
        with srv.cluster() as cluster:
            s = cluster.connect()
            s.execute(f"CREATE KEYSPACE {ks} WITH replication = {KS_REPLICATION}")
            s.set_keyspace(ks)
            s.execute("CREATE TABLE t (p int, c int, v text, w text, PRIMARY KEY (p, c))")
            ins = s.prepare("INSERT INTO t (p, c, v, w) VALUES (?, ?, ?, ?)")
            for p in range(10):
                for c in range(10):
                    s.execute(ins, (p, c, f"v{p}.{c}", f"w{p}.{c}"))
        # Clean restart first, so the deletes below shadow data written in an earlier run.
        srv.terminate()
        srv.start()
        with srv.cluster() as cluster:
            s = cluster.connect(ks)
            s.execute("DELETE FROM t WHERE p = 1 AND c = 1")                 # row
            s.execute("DELETE FROM t WHERE p = 2")                           # partition
            s.execute("DELETE FROM t WHERE p = 3 AND c >= 5")                # range
            s.execute("DELETE v FROM t WHERE p = 4 AND c = 4")               # cell
            s.execute("UPDATE t SET w = null WHERE p = 5 AND c = 5")         # cell by null
            s.execute(SimpleStatement("DELETE FROM t WHERE p = 6 AND c = 6"))
            s.execute("INSERT INTO t (p, c, v) VALUES (6, 6, 'back')")       # re-insert after delete

        def check(s):
            rows = {(r.p, r.c): (r.v, r.w) for r in s.execute("SELECT p, c, v, w FROM t")}
            assert (1, 1) not in rows
            assert not [k for k in rows if k[0] == 2], "deleted partition came back"
            assert sorted(c for p, c in rows if p == 3) == [0, 1, 2, 3, 4]
            assert rows[(4, 4)] == (None, "w4.4")
            assert rows[(5, 5)] == ("v5.5", None)
            assert rows[(6, 6)] == ("back", None)
            assert len(rows) == 100 - 1 - 10 - 5
            assert s.execute("SELECT * FROM t WHERE p = 1 AND c = 1").one() is None
            assert s.execute("SELECT * FROM t WHERE p = 2").one() is None

        # SIGKILL right after the acknowledged deletes, then a clean restart.
        srv.kill()
        srv.start()
        with srv.cluster() as cluster:
            check(cluster.connect(ks))
        srv.terminate()
        srv.start()
        with srv.cluster() as cluster:
            check(cluster.connect(ks))
    finally:
        if srv.proc is not None:
            srv.terminate()
