"""`peregrine migrate` between standalone Peregrine and a real Cassandra 5.0.9, both ways.

Cassandra: $MIGRATE_CASSANDRA (`host:port` of one already running, e.g. test-all's), else one
started here with scripts/cassandra.sh on port $MIGRATE_CASSANDRA_PORT (default 9610) and stopped
at the end. Each test starts its own `peregrine serve` (PEREGRINE_BIN) on a free port and data
dir. The module is skipped only when the Cassandra jars are not installed.

The two-node target (`test_onto_a_two_node_cluster`) starts a second node on
$MIGRATE_CLUSTER_PORT (default 9620) joining the first, which takes a minute here: it runs only
with MIGRATE_CLUSTER=1 (and only against the Cassandra this module started).
"""

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import uuid

import pytest
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import Cluster

import proxy_support as ps
from auth_support import AuthServer
from conftest import _free_port, _port_open

OWN_PORT = int(os.environ.get("MIGRATE_CASSANDRA_PORT", "9610"))
CLUSTER_PORT = int(os.environ.get("MIGRATE_CLUSTER_PORT", "9620"))
KS_REPL = "{'class': 'SimpleStrategy', 'replication_factor': 1}"


@pytest.fixture(scope="module")
def cassandra():
    given = os.environ.get("MIGRATE_CASSANDRA")
    if given:
        host, port = given.rsplit(":", 1)
        yield host, int(port), False
        return
    # --clean when it is started here: a node left from the two-node test still lists its peer.
    ps.start_cassandra(OWN_PORT, clean=True)
    try:
        yield "127.0.0.1", OWN_PORT, True
    finally:
        ps.stop_cassandra(OWN_PORT)


@pytest.fixture(scope="module")
def cass(cassandra):
    host, port, _ = cassandra
    c = Cluster([host], port=port, connect_timeout=10)
    yield c.connect()
    c.shutdown()


class Peregrine:
    """`peregrine serve` on a free port and its own data dir (kept across `stop`/`start`)."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="peregrine-migrate-")
        self.data = os.path.join(self.dir, "data")
        self.proc = None
        self.clusters = []
        self.start()

    def start(self):
        self.port = _free_port()
        self.log = open(os.path.join(self.dir, "serve.log"), "ab")
        self.proc = subprocess.Popen(
            [ps.find_peregrine(), "serve", "--listen", f"127.0.0.1:{self.port}", "--data-dir",
             self.data, "--admin-listen", "127.0.0.1:0"], stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while not _port_open("127.0.0.1", self.port):
            assert self.proc.poll() is None and time.monotonic() < deadline, "peregrine did not start"
            time.sleep(0.05)

    @property
    def addr(self):
        return f"127.0.0.1:{self.port}"

    def session(self):
        c = Cluster(["127.0.0.1"], port=self.port, connect_timeout=10)
        self.clusters.append(c)
        return c.connect()

    def stop(self):
        for c in self.clusters:
            c.shutdown()
        self.clusters = []
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
        self.log.close()

    def remove(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def peregrine():
    p = Peregrine()
    yield p
    p.remove()


@pytest.fixture
def workdir():
    d = tempfile.mkdtemp(prefix="migrate-state-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def migrate(*args, timeout=180):
    return subprocess.run([ps.find_peregrine(), "migrate", *args], capture_output=True, text=True,
                          timeout=timeout)


def ok(r):
    assert r.returncode == 0, f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr[-4000:]}"
    assert "row counts and checksums equal" in r.stdout, r.stdout
    return r


# A schema with every kind of cell: native types, non-frozen collections and UDT, frozen and
# nested ones, tuples, vectors, statics, clustering order, a default TTL, counters.
SCHEMA = [
    "CREATE TYPE {ks}.addr (street text, n int, tags frozen<set<text>>)",
    """CREATE TABLE {ks}.everything (
        k int, c text, s text static,
        i int, bi bigint, vi varint, de decimal, d double, f float, b blob, bo boolean,
        tsc timestamp, dt date, tm time, u uuid, tu timeuuid, ip inet, du duration,
        sm smallint, ti tinyint, a ascii,
        l list<int>, st set<text>, m map<text, int>, ua addr, fa frozen<addr>,
        tup tuple<int, text, frozen<list<int>>>, nested frozen<map<text, frozen<list<int>>>>,
        vec vector<float, 3>,
        PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC)""",
    "CREATE TABLE {ks}.expiring (k int PRIMARY KEY, v text, w text) WITH default_time_to_live = 3600",
    "CREATE TABLE {ks}.hits (k text, day int, n counter, PRIMARY KEY (k, day))",
    "CREATE TABLE {ks}.bulk (k int, c int, v text, l list<int>, PRIMARY KEY (k, c))",
    "CREATE TABLE {ks}.keys_only (k int, c int, PRIMARY KEY (k, c))",
]

DATA = [
    """INSERT INTO {ks}.everything (k, c, s, i, bi, vi, de, d, f, b, bo, tsc, dt, tm, u, tu, ip, du,
        sm, ti, a, l, st, m, ua, fa, tup, nested, vec) VALUES (1, 'a', 'static one', 7, 9000000000,
        123456789012345678901234567890, 3.14159265358979323846, 2.5, 1.25, 0xcafebabe, true,
        '2024-02-29 12:34:56.789+0000', '2024-02-29', '12:34:56.123456789',
        123e4567-e89b-12d3-a456-426614174000, 50554d6e-29bb-11e5-b345-feff819cdc9f, '::1',
        1mo2d3h4m5s6ms7us8ns, -32768, 127, 'plain', [1, 2, 2], {{'x', 'y'}}, {{'p': 1, 'q': 2}},
        {{street: 'Main', n: 5, tags: {{'t1'}}}}, {{street: 'Frozen', n: 6, tags: {{}}}},
        (1, 'one', [1, 1]), {{'m': [1, 2], 'n': []}}, [0.5, -1.5, 3.25]) USING TIMESTAMP 1000""",
    # Cells of one row with other write times and TTLs.
    "UPDATE {ks}.everything USING TIMESTAMP 2000 SET i = 8, bi = 10 WHERE k = 1 AND c = 'a'",
    "UPDATE {ks}.everything USING TIMESTAMP 3000 AND TTL 5000 SET bo = false WHERE k = 1 AND c = 'a'",
    "UPDATE {ks}.everything USING TIMESTAMP 3000 SET st = st + {{'z'}}, m['r'] = 3 WHERE k = 1 AND c = 'a'",
    "UPDATE {ks}.everything USING TIMESTAMP 4000 AND TTL 6000 SET l = l + [9], ua.n = 50 WHERE k = 1 AND c = 'a'",
    "UPDATE {ks}.everything USING TIMESTAMP 5000 SET s = 'static later' WHERE k = 1",
    "INSERT INTO {ks}.everything (k, c, i) VALUES (1, 'b', 1) USING TIMESTAMP 1500",
    "INSERT INTO {ks}.everything (k, c, b, vi, de) VALUES (1, 'c', 0x, 0, 0.0) USING TIMESTAMP 1600",
    # A partition with only its static cell, a row with only its key.
    "INSERT INTO {ks}.everything (k, s) VALUES (2, 'static only') USING TIMESTAMP 700",
    "INSERT INTO {ks}.everything (k, c) VALUES (3, 'key only') USING TIMESTAMP 800",
    # Collections whose every element has a TTL (their ttl() lists have no nulls).
    "UPDATE {ks}.everything USING TIMESTAMP 600 AND TTL 6000 SET st = st + {{'e1', 'e2'}}, m = m + {{'k': 1}} WHERE k = 5 AND c = 'ttl'",
    # A UDT with a null field, written field by field.
    "UPDATE {ks}.everything USING TIMESTAMP 900 SET ua.street = 'Side' WHERE k = 4 AND c = 'u'",
    "INSERT INTO {ks}.expiring (k, v) VALUES (1, 'default ttl') USING TIMESTAMP 100",
    "INSERT INTO {ks}.expiring (k, v, w) VALUES (2, 'no ttl', 'short') USING TIMESTAMP 100 AND TTL 0",
    "UPDATE {ks}.expiring USING TTL 900 SET w = 'short' WHERE k = 2",
    "UPDATE {ks}.hits SET n = n + 5 WHERE k = 'a' AND day = 1",
    "UPDATE {ks}.hits SET n = n - 2 WHERE k = 'a' AND day = 2",
    "UPDATE {ks}.hits SET n = n + 1000000 WHERE k = 'b' AND day = 1",
    "INSERT INTO {ks}.keys_only (k, c) VALUES (1, 1)",
    "INSERT INTO {ks}.keys_only (k, c) VALUES (1, 2)",
]

COLLECTIONS = {"l", "st", "m"}
KEYS = {"everything": "k, c", "expiring": "k", "bulk": "k, c", "hits": "k, day", "keys_only": "k, c"}
OTHERS = {"everything": ["ua"], "hits": ["n"], "expiring": [], "bulk": [], "keys_only": []}
STAMPED = {  # per table: the non-key columns whose writetime()/ttl() are compared
    "everything": ["s", "i", "bi", "vi", "de", "d", "f", "b", "bo", "tsc", "dt", "tm", "u", "tu",
                   "ip", "du", "sm", "ti", "a", "l", "st", "m", "fa", "tup", "nested", "vec"],
    "expiring": ["v", "w"],
    "bulk": ["v", "l"],
    "hits": [],
    "keys_only": [],
}


def create(session, ks, bulk_rows=200):
    session.execute(f"CREATE KEYSPACE {ks} WITH replication = {KS_REPL}")
    for s in SCHEMA:
        session.execute(s.format(ks=ks))
    for s in DATA:
        session.execute(s.format(ks=ks))
    fill_bulk(session, ks, bulk_rows)


def fill_bulk(session, ks, rows):
    ins = session.prepare(f"INSERT INTO {ks}.bulk (k, c, v, l) VALUES (?, ?, ?, ?) USING TIMESTAMP ?")
    futures = [session.execute_async(ins, (i // 4, i % 4, f"v{i}", [i, i + 1], 10_000 + i))
               for i in range(rows)]
    for f in futures:
        f.result()


def dump(session, ks, table):
    """Every row with its cells' write times and TTLs, by primary key."""
    cols = STAMPED[table]
    # ttl() of a collection is a list with a null per element without TTL, which the Python
    # driver cannot decode: collections' TTLs are checked where all elements have one.
    extra = "".join(f", writetime({c})" + ("" if c in COLLECTIONS else f", ttl({c})") for c in cols)
    rows = {}
    names = ", ".join([KEYS[table]] + cols + OTHERS[table])
    for r in session.execute(f"SELECT {names}{extra} FROM {ks}.{table}"):
        d = r._asdict()
        key = tuple(d[c] for c in ("k", "c", "day") if c in d)
        rows[key] = d
    return rows


def assert_same_rows(table, da, db, slack=5):
    """Equal dumps, but for remaining TTLs, which keep falling between two reads: those may
    differ by `slack` seconds."""
    assert da.keys() == db.keys(), f"{table}: rows differ: {sorted(da.keys() ^ db.keys())}"
    for key in da:
        a, b = dict(da[key]), dict(db[key])
        for col in [c for c in a if c.startswith("ttl_")]:
            ta, tb = a.pop(col), b.pop(col)
            assert (ta is None) == (tb is None) and (ta is None or abs(ta - tb) <= slack), \
                f"{table} {key} {col}: {ta} != {tb}"
        assert a == b, f"{table} {key}:\nsource {a}\ntarget {b}"


def same_everywhere(a, b, ks_a, ks_b=None):
    ks_b = ks_b or ks_a
    for table in STAMPED:
        assert_same_rows(table, dump(a, ks_a, table), dump(b, ks_b, table))
    # The non-frozen UDT (writetime per field: the driver cannot decode a null field's in a list).
    ua = "SELECT k, c, ua FROM {ks}.everything"
    assert sorted(a.execute(ua.format(ks=ks_a))) == sorted(b.execute(ua.format(ks=ks_b)))


def check_reconciliation(a, b, ks):
    """The same later writes on both sides end the same way: older timestamps lose, newer win."""
    later = [
        "UPDATE {ks}.everything USING TIMESTAMP 1999 SET i = -1 WHERE k = 1 AND c = 'a'",   # loses to 2000
        "UPDATE {ks}.everything USING TIMESTAMP 2001 SET bi = -1 WHERE k = 1 AND c = 'a'",  # wins
        "DELETE st FROM {ks}.everything USING TIMESTAMP 2999 WHERE k = 1 AND c = 'a'",      # 'z' (3000) stays
        "UPDATE {ks}.everything USING TIMESTAMP 4999 SET s = 'older static' WHERE k = 1",   # loses to 5000
        "DELETE FROM {ks}.everything USING TIMESTAMP 1550 WHERE k = 1 AND c = 'b'",        # row at 1500 goes
        "DELETE FROM {ks}.everything USING TIMESTAMP 1550 WHERE k = 1 AND c = 'c'",        # row at 1600 stays
        "UPDATE {ks}.everything USING TIMESTAMP 950 SET ua.street = 'Older' WHERE k = 4 AND c = 'u'",
    ]
    for s in later:
        a.execute(s.format(ks=ks))
        b.execute(s.format(ks=ks))
    q = f"SELECT k, c, s, i, bi, st, ua FROM {ks}.everything"
    ra, rb = sorted(a.execute(q)), sorted(b.execute(q))
    assert ra == rb
    row = {(r.k, r.c): r for r in ra}
    assert row[(1, "a")].i == 8 and row[(1, "a")].bi == -1 and row[(1, "a")].st == {"z"}
    assert row[(1, "a")].s == "static later"
    assert (1, "b") not in row and (1, "c") in row
    assert row[(4, "u")].ua.street == "Older"


def cass_ks():
    return "mig_" + uuid.uuid4().hex[:10]


def test_standalone_to_cassandra(peregrine, cass, cassandra, workdir):
    ks = cass_ks()
    src = peregrine.session()
    create(src, ks)
    r = ok(migrate("--from", peregrine.addr, "--to", f"{cassandra[0]}:{cassandra[1]}",
                   "--keyspaces", ks, "--state", os.path.join(workdir, "s"), "--parallel", "3"))
    assert f"schema: keyspace {ks}" in r.stderr
    assert re.search(r"copied \d+ rows of 5 tables in 60 ranges", r.stdout), r.stdout
    same_everywhere(src, cass, ks)
    one = cass.execute(f"SELECT writetime(i), writetime(bo), ttl(bo), writetime(l), writetime(st), writetime(m) "
                       f"FROM {ks}.everything WHERE k = 1 AND c = 'a'").one()
    assert one.writetime_i == 2000 and one.writetime_bo == 3000
    assert 4980 <= one.ttl_bo <= 5000, one.ttl_bo
    assert one.writetime_l == [1000, 1000, 1000, 4000]
    assert one.writetime_st == [1000, 1000, 3000] and one.writetime_m == [1000, 1000, 3000]
    ttls = cass.execute(f"SELECT ttl(st), ttl(m) FROM {ks}.everything WHERE k = 5 AND c = 'ttl'").one()
    assert all(5980 <= t <= 6000 for t in ttls.ttl_st + ttls.ttl_m), ttls
    # No TTL stays no TTL in a table with a default TTL; the default TTL'd cell keeps its own.
    exp = {r.k: r for r in cass.execute(f"SELECT k, ttl(v), ttl(w) FROM {ks}.expiring")}
    assert exp[2].ttl_v is None and 880 <= exp[2].ttl_w <= 900
    assert 3580 <= exp[1].ttl_v <= 3600
    assert {(r.k, r.day, r.n) for r in cass.execute(f"SELECT * FROM {ks}.hits")} == \
        {("a", 1, 5), ("a", 2, -2), ("b", 1, 1000000)}
    check_reconciliation(src, cass, ks)
    # Running it again copies nothing more (the state file) and still verifies.
    r = ok(migrate("--from", peregrine.addr, "--to", f"{cassandra[0]}:{cassandra[1]}",
                   "--keyspaces", ks, "--state", os.path.join(workdir, "s"), "--parallel", "3"))
    assert "resuming: 60 of 60 ranges" in r.stderr, r.stderr
    cass.execute(f"DROP KEYSPACE {ks}")


def test_cassandra_to_standalone(peregrine, cass, cassandra, workdir):
    ks = cass_ks()
    create(cass, ks)
    dst = peregrine.session()
    # One table first: only it (and the keyspace's types) is created.
    r = ok(migrate("--from", f"{cassandra[0]}:{cassandra[1]}", "--to", peregrine.addr,
                   "--tables", f"{ks}.bulk", "--state", os.path.join(workdir, "one")))
    assert "copied 200 rows of 1 tables" in r.stdout, r.stdout
    made = {r.table_name for r in dst.execute(
        f"SELECT table_name FROM system_schema.tables WHERE keyspace_name = '{ks}'")}
    assert made == {"bulk"}
    assert_same_rows("bulk", dump(cass, ks, "bulk"), dump(dst, ks, "bulk"))
    ok(migrate("--from", f"{cassandra[0]}:{cassandra[1]}", "--to", peregrine.addr,
               "--keyspaces", ks, "--state", os.path.join(workdir, "s")))
    same_everywhere(cass, dst, ks)
    check_reconciliation(cass, dst, ks)
    cass.execute(f"DROP KEYSPACE {ks}")


def test_from_a_data_dir_of_a_stopped_server(peregrine, cass, cassandra, workdir):
    ks = cass_ks()
    src = peregrine.session()
    create(src, ks, bulk_rows=50)
    expected = {t: dump(src, ks, t) for t in STAMPED}
    dumped = time.monotonic()
    # While the server runs, its directory is refused with a message saying why.
    r = migrate("--from", peregrine.data, "--to", f"{cassandra[0]}:{cassandra[1]}",
                "--state", os.path.join(workdir, "s"))
    assert r.returncode == 1, r
    assert "in use by another process" in r.stderr and "give the server's address" in r.stderr, r.stderr
    peregrine.stop()
    ok(migrate("--from", peregrine.data, "--to", f"{cassandra[0]}:{cassandra[1]}",
               "--keyspaces", ks, "--state", os.path.join(workdir, "s")))
    for t, rows in expected.items():
        # TTLs fell while the copy ran since `expected` was read.
        assert_same_rows(t, rows, dump(cass, ks, t), slack=time.monotonic() - dumped + 3)
    cass.execute(f"DROP KEYSPACE {ks}")


def test_an_interrupted_run_resumes(peregrine, cass, cassandra, workdir):
    """Killed mid-way (SIGKILL), the copy is partial and the verification says so; the same
    command then copies only the rest, and lists are not doubled by the ranges copied twice."""
    ks = cass_ks()
    src = peregrine.session()
    src.execute(f"CREATE KEYSPACE {ks} WITH replication = {KS_REPL}")
    src.execute(SCHEMA[4].format(ks=ks))  # bulk
    fill_bulk(src, ks, 2000)
    state = os.path.join(workdir, "state")
    args = ["--from", peregrine.addr, "--to", f"{cassandra[0]}:{cassandra[1]}", "--keyspaces", ks,
            "--state", state, "--parallel", "2", "--ranges", "64", "--page-size", "50"]
    proc = subprocess.Popen([ps.find_peregrine(), "migrate", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120

    def done_lines():
        try:
            with open(state) as f:
                return sum(1 for line in f if line.startswith("done "))
        except FileNotFoundError:
            return 0

    while done_lines() < 8:
        assert proc.poll() is None, f"migrate ended before it could be interrupted: {proc.communicate()}"
        assert time.monotonic() < deadline
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    finished = done_lines()
    assert 8 <= finished < 64, finished
    r = migrate(*args, "--verify-only")
    assert r.returncode == 2, r
    assert "verification FAILED" in r.stderr, r.stderr
    r = ok(migrate(*args))
    assert f"resuming: {finished} of 64 ranges" in r.stderr, r.stderr
    rows = sorted(cass.execute(f"SELECT k, c, v, l, writetime(v) FROM {ks}.bulk"))
    assert len(rows) == 2000
    for row in rows:
        i = row.k * 4 + row.c
        assert (row.v, row.l, row.writetime_v) == (f"v{i}", [i, i + 1], 10_000 + i), row
    cass.execute(f"DROP KEYSPACE {ks}")


def test_verify_only_reports_what_differs_and_refuses_other_splits(peregrine, cass, cassandra, workdir):
    ks = cass_ks()
    src = peregrine.session()
    src.execute(f"CREATE KEYSPACE {ks} WITH replication = {KS_REPL}")
    src.execute(SCHEMA[4].format(ks=ks))  # bulk
    fill_bulk(src, ks, 20)
    state = os.path.join(workdir, "s")
    base = ["--from", peregrine.addr, "--to", f"{cassandra[0]}:{cassandra[1]}", "--keyspaces", ks]
    ok(migrate(*base, "--state", state))
    # A later write on the target alone: its range differs (same count, other checksum).
    cass.execute(f"UPDATE {ks}.bulk SET v = 'changed' WHERE k = 0 AND c = 1")
    r = migrate(*base, "--verify-only")
    assert r.returncode == 2, r
    lines = [l for l in r.stderr.splitlines() if l.startswith(f'"{ks}"."bulk"')]
    assert len(lines) == 1, r.stderr
    # A checkpoint written for another split is refused, not reinterpreted.
    r = migrate(*base, "--state", state, "--ranges", "7")
    assert r.returncode == 1 and "same --ranges" in r.stderr, r
    # Bad input: a name that is neither an address nor a directory, an unknown keyspace.
    r = migrate("--from", "nowhere", "--to", peregrine.addr)
    assert r.returncode == 1 and "neither host:port nor a directory" in r.stderr, r
    r = migrate("--from", peregrine.addr, "--to", f"{cassandra[0]}:{cassandra[1]}",
                "--keyspaces", "no_such_ks", "--state", os.path.join(workdir, "x"))
    assert r.returncode == 1 and "no keyspace no_such_ks" in r.stderr, r
    cass.execute(f"DROP KEYSPACE {ks}")


def test_logins_on_both_sides(peregrine, workdir):
    """A target with PasswordAuthenticator: without a login the command says why; with one
    it copies."""
    auth = AuthServer().start()
    try:
        ks = cass_ks()
        src = peregrine.session()
        src.execute(f"CREATE KEYSPACE {ks} WITH replication = {KS_REPL}")
        src.execute(SCHEMA[4].format(ks=ks))  # bulk
        fill_bulk(src, ks, 20)
        base = ["--from", peregrine.addr, "--to", f"127.0.0.1:{auth.port}", "--keyspaces", ks,
                "--state", os.path.join(workdir, "s")]
        r = migrate(*base)
        assert r.returncode == 1 and "cannot connect to the target" in r.stderr, r
        ok(migrate(*base, "--to-username", "cassandra", "--to-password", "cassandra"))
        c = Cluster(["127.0.0.1"], port=auth.port, auth_provider=PlainTextAuthProvider("cassandra", "cassandra"))
        try:
            assert len(c.connect().execute(f"SELECT * FROM {ks}.bulk").all()) == 20
        finally:
            c.shutdown()
    finally:
        auth.stop()
        shutil.rmtree(auth.root, ignore_errors=True)


@pytest.mark.skipif(os.environ.get("MIGRATE_CLUSTER") != "1",
                    reason="the two-node cluster takes a minute to start: set MIGRATE_CLUSTER=1")
def test_onto_a_two_node_cluster(peregrine, cass, cassandra, workdir):
    host, port, started_here = cassandra
    if not started_here:
        pytest.skip("the second node joins the Cassandra this module started (MIGRATE_CASSANDRA is set)")
    env = dict(os.environ, CASSANDRA_JOIN=str(port))
    r = subprocess.run([ps.SCRIPT, "start", "--port", str(CLUSTER_PORT), "--clean"],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    try:
        deadline = time.monotonic() + 90
        while len(cass.execute("SELECT peer FROM system.peers_v2").all()) != 1:
            assert time.monotonic() < deadline, "the second node did not join"
            time.sleep(0.5)
        ks = cass_ks()
        src = peregrine.session()
        create(src, ks, bulk_rows=400)
        # The keyspace made on the cluster first, with the replication it should have there.
        cass.execute(f"CREATE KEYSPACE {ks} WITH replication = "
                     "{'class': 'SimpleStrategy', 'replication_factor': 2}")
        # Both nodes hold that keyspace before the migration starts: the driver waits for
        # schema agreement only among the nodes it knows, and the second one joined moments
        # ago. Otherwise the migration's CREATE KEYSPACE IF NOT EXISTS can reach a node that
        # has not heard of it and create it again with the source's replication, the later
        # definition winning (seen once: replication_factor 1). The migration's own wait for
        # agreement before its schema copy (676d37b) did not prevent it in session 33's
        # test-all run, where this test relied on it alone: kept here until that is understood.
        deadline = time.monotonic() + 60
        while True:
            local = cass.execute("SELECT schema_version FROM system.local").one().schema_version
            peers = [r.schema_version for r in cass.execute("SELECT schema_version FROM system.peers_v2")]
            if peers and all(v == local for v in peers):
                break
            assert time.monotonic() < deadline, "the two nodes did not agree on the schema"
            time.sleep(0.2)
        ok(migrate("--from", peregrine.addr, "--to", f"{host}:{port},{host}:{CLUSTER_PORT}",
                   "--keyspaces", ks, "--state", os.path.join(workdir, "s")))
        rf = cass.execute(f"SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = '{ks}'").one()
        assert rf.replication["replication_factor"] == "2"
        c2 = Cluster([host], port=CLUSTER_PORT, connect_timeout=10)
        try:
            same_everywhere(src, c2.connect(), ks)
        finally:
            c2.shutdown()
        cass.execute(f"DROP KEYSPACE {ks}")
    finally:
        ps.stop_cassandra(CLUSTER_PORT)
