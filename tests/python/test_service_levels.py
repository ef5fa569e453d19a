"""Workload priorities as ScyllaDB's service levels (issue 17 item 3), through the Python driver
against a real `peregrine serve` with PasswordAuthenticator and CassandraAuthorizer: every
statement (`CREATE / ALTER / DROP / ATTACH / DETACH / LIST ... SERVICE LEVEL`, both spellings,
`LIST EFFECTIVE SERVICE LEVEL OF`), ScyllaDB's result columns, its errors and their codes, the
permission check, the level a role runs at (attached, inherited through a grant: the lowest
shares win), the `timeout` option (a request running longer gets Cassandra's read or write
timeout), the records surviving a restart, and the scheduler counting each request under its
role's level in /metrics.

Peregrine-only: Cassandra has none of these statements (docs/extensions.md). No timing is
asserted: the split by shares is unit-tested in `local::scheduler` and measured by
`peregrine bench service-levels` (bench/results/2026-11-27/service_levels/)."""

import os
import shutil
import time

import pytest
from cassandra import InvalidRequest, ReadTimeout, Unauthorized, WriteTimeout
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import Cluster
from cassandra.query import SimpleStatement
from cassandra.protocol import SyntaxException

from admin_support import Server, parse_prometheus, value

# Each test starts its own Peregrine (with logins); only a run against another server skips.
pytestmark = pytest.mark.skipif(bool(os.environ.get("CQL_HOST"))
                                and os.environ.get("CQL_KIND") != "peregrine",
                                reason="service levels are Peregrine's (ScyllaDB's syntax)")

YAML = ("authenticator: PasswordAuthenticator\nauthorizer: CassandraAuthorizer\n"
        "role_manager: CassandraRoleManager\n")


class Env:
    def __init__(self):
        self.server = Server(yaml=YAML)
        self.clusters = []
        self.old_dirs = []

    def connect(self, user, password):
        c = Cluster(["127.0.0.1"], port=self.server.port, protocol_version=4, connect_timeout=10,
                    auth_provider=PlainTextAuthProvider(user, password))
        self.clusters.append(c)
        return c.connect()

    def restart(self):
        for c in self.clusters:
            c.shutdown()
        self.clusters = []
        data = self.server.data_dir
        self.server.stop()
        assert self.server.proc.returncode in (0, -15), self.server.log_tail()
        # The old server's directory holds the data: removed at the end.
        self.old_dirs.append(self.server.dir)
        self.server = Server(yaml=YAML, data_dir=data)

    def close(self):
        for c in self.clusters:
            c.shutdown()
        self.server.cleanup()
        for d in self.old_dirs:
            shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def env():
    e = Env()
    yield e
    e.close()


@pytest.fixture(scope="module")
def admin(env):
    s = env.connect("cassandra", "cassandra")
    s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
    for r in ("web", "spark", "bob"):
        s.execute(f"CREATE ROLE {r} WITH PASSWORD = 'pw' AND LOGIN = true")
    s.execute("GRANT SELECT ON ks.t TO web")
    s.execute("GRANT SELECT ON ks.t TO spark")
    return s


def rows(rs):
    return [tuple(r) for r in rs]


def test_create_alter_list_and_drop(admin):
    admin.execute("CREATE SERVICE LEVEL oltp")
    admin.execute("CREATE SERVICE_LEVEL IF NOT EXISTS OLAP WITH SHARES = 100")
    admin.execute("CREATE SERVICE LEVEL IF NOT EXISTS olap WITH SHARES = 900")  # no change
    admin.execute("CREATE SERVICE LEVEL tmp WITH shares = 10 AND workload_type = 'batch'")
    rs = admin.execute("LIST ALL SERVICE LEVELS")
    assert rs.column_names == ["service_level", "timeout", "workload_type", "shares",
                               "percentage of all service level shares"]
    assert rows(rs) == [("olap", None, None, 100, "9.01%"), ("oltp", None, None, 1000, "90.09%"),
                        ("tmp", None, "batch", 10, "0.90%")]
    admin.execute("ALTER SERVICE LEVEL olap WITH shares = 500")
    rs = admin.execute("LIST SERVICE LEVEL olap")
    assert rs.column_names == ["service_level", "timeout", "workload_type", "shares"]
    assert rows(rs) == [("olap", None, None, 500)]
    assert rows(admin.execute("LIST SERVICE_LEVEL nope")) == []
    admin.execute("ALTER SERVICE LEVEL olap WITH shares = 100")
    admin.execute("DROP SERVICE LEVEL tmp")
    admin.execute("DROP SERVICE LEVEL IF EXISTS tmp")
    assert [r.service_level for r in admin.execute("LIST ALL SERVICE LEVELS")] == ["olap", "oltp"]
    # Prepared statements work too.
    admin.execute(admin.prepare("LIST ALL SERVICE LEVELS"))


@pytest.mark.parametrize("text, error, message", [
    ("CREATE SERVICE LEVEL oltp", InvalidRequest, "The service level 'oltp' already exists."),
    ("ALTER SERVICE LEVEL nope WITH shares = 5", InvalidRequest,
     "The service level 'nope' doesn't exist."),
    ("DROP SERVICE LEVEL nope", InvalidRequest, "Service Level nope doesn't exists."),
    ("ATTACH SERVICE LEVEL nope TO web", InvalidRequest, "Service Level nope doesn't exists."),
    ("ATTACH SERVICE LEVEL oltp TO ghost", InvalidRequest, "Role ghost doesn't exist."),
    ("DETACH SERVICE LEVEL FROM ghost", InvalidRequest, "Role ghost doesn't exist."),
    ("CREATE SERVICE LEVEL \"$x\"", InvalidRequest, "Names starting with '$' are reserved"),
    ("CREATE SERVICE LEVEL x WITH shares = 0", SyntaxException,
     "'SHARES' can only take values of 1-1000 (given 0)"),
    ("CREATE SERVICE LEVEL x WITH shares = 1001", SyntaxException,
     "'SHARES' can only take values of 1-1000 (given 1001)"),
    ("CREATE SERVICE LEVEL x WITH shares = 'many'", SyntaxException,
     "Invalid integer value many for 'shares'"),
    ("CREATE SERVICE LEVEL x WITH speed = 1", SyntaxException, "Unknown property 'speed'"),
    ("CREATE SERVICE LEVEL x WITH workload_type = 'fast'", InvalidRequest,
     "Invalid workload type: fast"),
    ("CREATE SERVICE LEVEL x WITH timeout = 1d", InvalidRequest,
     "Timeout values cannot be expressed in days/months"),
    ("CREATE SERVICE LEVEL x WITH timeout = 10us", InvalidRequest,
     "Timeout values must be expressed in millisecond granularity"),
    ("CREATE SERVICE LEVEL x WITH timeout = -1s", InvalidRequest,
     "Timeout values must be nonnegative"),
    ("LIST EFFECTIVE SERVICE LEVEL OF ghost", InvalidRequest, "Role ghost doesn't exist."),
    ("LIST EFFECTIVE SERVICE LEVEL OF bob", InvalidRequest,
     "Role bob doesn't have assigned any service level"),
    ("ALTER SERVICE LEVEL oltp", SyntaxException, ""),
])
def test_errors(admin, text, error, message):
    with pytest.raises(error) as e:
        admin.execute(text)
    assert message in str(e.value)


def test_attach_detach_and_list_attached(admin):
    admin.execute("ATTACH SERVICE LEVEL oltp TO web")
    admin.execute("ATTACH SERVICE_LEVEL olap TO 'spark'")
    rs = admin.execute("LIST ALL ATTACHED SERVICE LEVELS")
    assert rs.column_names == ["role", "service_level"]
    assert rows(rs) == [("spark", "olap"), ("web", "oltp")]
    assert rows(admin.execute("LIST ATTACHED SERVICE LEVEL OF web")) == [("web", "oltp")]
    admin.execute("DETACH SERVICE LEVEL FROM web")
    assert rows(admin.execute("LIST ATTACHED SERVICE LEVEL OF web")) == []
    admin.execute("DETACH SERVICE LEVEL FROM web")  # nothing attached: no error
    admin.execute("ATTACH SERVICE LEVEL oltp TO web")


def test_a_role_without_the_permission_is_refused(env, admin):
    bob = env.connect("bob", "pw")
    for text, perm in [("CREATE SERVICE LEVEL b", "CREATE"),
                       ("ALTER SERVICE LEVEL oltp WITH shares = 1", "ALTER"),
                       ("DROP SERVICE LEVEL oltp", "DROP"),
                       ("ATTACH SERVICE LEVEL olap TO bob", "AUTHORIZE"),
                       ("DETACH SERVICE LEVEL FROM web", "AUTHORIZE"),
                       ("LIST ALL SERVICE LEVELS", "DESCRIBE"),
                       ("LIST ALL ATTACHED SERVICE LEVELS", "DESCRIBE")]:
        with pytest.raises(Unauthorized) as e:
            bob.execute(text)
        assert (f"User bob has no {perm} permission on <all service_levels> or any of its "
                f"parents") in str(e.value)
    assert [r.service_level for r in admin.execute("LIST ALL SERVICE LEVELS")] == ["olap", "oltp"]


def dispatched(env):
    fam = parse_prometheus(env.server.scrape())
    return {l["service_level"]: v
            for (n, l, v) in fam["peregrine_service_level_dispatched_total"]["samples"]}


def test_requests_run_at_their_roles_level_and_inherit_the_lowest_shares(env, admin):
    web, spark = env.connect("web", "pw"), env.connect("spark", "pw")
    read = "SELECT v FROM ks.t WHERE k = 1"
    before = dispatched(env)
    for _ in range(20):
        web.execute(read)
    for _ in range(7):
        spark.execute(spark.prepare(read))
    after = dispatched(env)
    assert after["oltp"] - before.get("oltp", 0) >= 20
    assert after["olap"] - before.get("olap", 0) >= 7
    # web inherits spark's level when granted spark: the lowest shares win (ScyllaDB's rule).
    admin.execute("GRANT spark TO web")
    before = dispatched(env)
    for _ in range(10):
        web.execute(read)
    after = dispatched(env)
    assert after["olap"] - before.get("olap", 0) >= 10
    assert after.get("oltp", 0) - before.get("oltp", 0) < 10
    admin.execute("REVOKE spark FROM web")


def test_list_effective_service_level(env, admin):
    """ScyllaDB's columns and rows; each option names the level it came from. web runs at oltp
    (1000 shares, interactive); granted spark (olap: 100 shares, batch, 5 s) it takes olap's
    shares and workload type and the timeout (oltp has none)."""
    admin.execute("ALTER SERVICE LEVEL oltp WITH workload_type = 'interactive'")
    admin.execute("ALTER SERVICE LEVEL olap WITH workload_type = 'batch' AND timeout = 5s")
    rs = admin.execute("LIST EFFECTIVE SERVICE LEVEL OF web")
    assert rs.column_names == ["service_level_option", "effective_service_level", "value"]
    assert rows(rs) == [("workload_type", "oltp", "interactive"), ("timeout", "oltp", None),
                        ("shares", "oltp", "1000")]
    admin.execute("GRANT spark TO web")
    try:
        assert rows(admin.execute("LIST EFFECTIVE SERVICE_LEVEL OF 'web'")) == [
            ("workload_type", "olap", "batch"), ("timeout", "olap", "5s"),
            ("shares", "olap", "100")]
        # Any logged-in role may ask (ScyllaDB checks no permission for it).
        bob = env.connect("bob", "pw")
        assert len(rows(bob.execute("LIST EFFECTIVE SERVICE LEVEL OF web"))) == 3
    finally:
        admin.execute("REVOKE spark FROM web")
        admin.execute("ALTER SERVICE LEVEL oltp WITH workload_type = null")
        admin.execute("ALTER SERVICE LEVEL olap WITH workload_type = null AND timeout = null")
    assert rows(admin.execute("LIST SERVICE LEVEL olap")) == [("olap", None, None, 100)]


def scan(session, rate):
    """A full scan of ks.big (120 rows) at most `rate` rows/s (the scan lane's payload key)."""
    return session.execute(SimpleStatement("SELECT * FROM ks.big"),
                           custom_payload={"peregrine-scan-rate": str(rate).encode()})


def test_timeout_answers_cassandras_timeouts_and_null_removes_it(env, admin):
    admin.execute("CREATE TABLE ks.big (k int PRIMARY KEY, v int)")
    for k in range(120):
        admin.execute("INSERT INTO ks.big (k, v) VALUES (%s, %s)", (k, k))
    admin.execute("CREATE ROLE slow WITH PASSWORD = 'pw' AND LOGIN = true")
    admin.execute("GRANT SELECT ON KEYSPACE ks TO slow")
    admin.execute("GRANT MODIFY ON KEYSPACE ks TO slow")
    admin.execute("CREATE SERVICE LEVEL tmo WITH timeout = 1s")
    admin.execute("ATTACH SERVICE LEVEL tmo TO slow")
    assert rows(admin.execute("LIST SERVICE LEVEL tmo"))[0][1].nanoseconds == 1_000_000_000
    slow = env.connect("slow", "pw")
    try:
        # Quick requests answer as usual.
        assert slow.execute("SELECT v FROM ks.big WHERE k = 7").one().v == 7
        # 120 rows at 40 rows/s take at least 3 s: answered at the 1 s deadline instead (the
        # margins leave room for a loaded machine).
        started = time.monotonic()
        with pytest.raises(ReadTimeout) as e:
            scan(slow, 40)
        elapsed = time.monotonic() - started
        assert "Operation timed out - received only 0 responses." in str(e.value)
        assert 1.0 <= elapsed < 2.8, elapsed
        # The admin (no level) scans the same way without a timeout.
        assert len(rows(scan(admin, 1000))) == 120
        # A timeout of 0 ms: every request of the level runs past it, writes included.
        admin.execute("ALTER SERVICE LEVEL tmo WITH timeout = 0ms")
        with pytest.raises(WriteTimeout) as e:
            slow.execute("INSERT INTO ks.big (k, v) VALUES (1000, 1)")
        assert "Operation timed out - received only 0 responses." in str(e.value)
        assert "'write_type': 'SIMPLE'" in str(e.value)
        with pytest.raises(ReadTimeout):
            slow.execute(slow.prepare("SELECT v FROM ks.big WHERE k = ?"), (7,))
        # The timed-out write may still apply (as with Cassandra's timeouts): removed again, a
        # later delete shadowing it whenever it lands (its timestamp was taken first).
        admin.execute("DELETE FROM ks.big WHERE k = 1000")
        # NULL removes it: the slow scan runs to its end (120 rows at 300 rows/s, 0.4 s).
        admin.execute("ALTER SERVICE LEVEL tmo WITH timeout = null")
        assert rows(admin.execute("LIST SERVICE LEVEL tmo")) == [("tmo", None, None, 1000)]
        assert len(rows(scan(slow, 300))) == 120
    finally:
        admin.execute("DROP SERVICE LEVEL tmo")
        admin.execute("DROP ROLE slow")


def test_the_records_survive_a_restart(env, admin):
    env.restart()
    s = env.connect("cassandra", "cassandra")
    assert rows(s.execute("LIST ALL SERVICE LEVELS")) == [
        ("olap", None, None, 100, "9.09%"), ("oltp", None, None, 1000, "90.91%")]
    assert rows(s.execute("LIST ALL ATTACHED SERVICE LEVELS")) == [("spark", "olap"),
                                                                   ("web", "oltp")]
    # Dropping a level detaches it; dropping a role forgets its level.
    s.execute("DROP ROLE spark")
    assert rows(s.execute("LIST ALL ATTACHED SERVICE LEVELS")) == [("web", "oltp")]
    s.execute("DROP SERVICE LEVEL oltp")
    assert rows(s.execute("LIST ALL ATTACHED SERVICE LEVELS")) == []
