"""The audit log (`audit_logging_options`, Cassandra 5.0's keys and FileAuditLogger lines) with
the Python driver and `peregrine nodetool`, against a Peregrine started here with logins on and
the audit log on: logins and failed logins, DDL, DML, SELECT, prepared statements, batches,
filters by keyspace, category and user, passwords never written, rotation by size and by roll
cycle, and enableauditlog / disableauditlog / getauditlog.

The expected lines were taken from a Cassandra 5.0.9 with the same settings (FileAuditLogger
lines in its system.log); only `host:` differs (Peregrine names its CQL address)."""

import os
import re
import shutil
import time
import uuid

import pytest
from cassandra import AuthenticationFailed, InvalidRequest
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import NoHostAvailable
from cassandra.query import BatchStatement, SimpleStatement

from admin_support import Server, fixture

KS = "{'class': 'SimpleStrategy', 'replication_factor': 1}"
PASSWORDS = ("s3cret-Alpha", "s3cret-Beta", "s3cret-Gamma", "wrong-Delta")

LINE = re.compile(
    r"^user:(?P<user>[^|]*)\|host:/127\.0\.0\.1:\d+\|source:/127\.0\.0\.1\|port:\d+"
    r"\|timestamp:(?P<ts>\d{13})\|type:(?P<type>[A-Z_]+)\|category:(?P<category>[A-Z]+)"
    r"(\|batch:(?P<batch>[0-9a-f-]{36}))?(\|ks:(?P<ks>[^|]+))?(\|scope:(?P<scope>[^|]+))?"
    r"(\|operation:(?P<operation>.*))?$")


def config(audit_dir, extra="", auth=True):
    logins = "authenticator: PasswordAuthenticator\nauthorizer: CassandraAuthorizer\n"
    return ((logins if auth else "") +
            "audit_logging_options:\n"
            "  enabled: true\n"
            "  logger:\n"
            "    - class_name: FileAuditLogger\n"
            f"  audit_logs_dir: {audit_dir}\n" + extra)


class AuditServer(Server):
    def __init__(self, extra="", auth=True, audit_dir=None):
        self.audit_dir = audit_dir or os.path.join(os.path.realpath("/tmp"),
                                                   f"peregrine-audit-{uuid.uuid4().hex[:8]}")
        super().__init__(yaml=config(self.audit_dir, extra, auth))

    def cleanup(self):
        super().cleanup()
        shutil.rmtree(self.audit_dir, ignore_errors=True)

    def login(self, user="cassandra", password="cassandra"):
        return self.cluster(auth_provider=PlainTextAuthProvider(user, password))

    def all_text(self):
        """Every audit file's text, current and rolled."""
        def order(name):
            if name == "audit.log":
                return ("~",)  # the current file holds the newest entries
            stamp, n = name[len("audit.log."):].rsplit(".", 1)
            return (stamp, int(n))
        out = ""
        for name in sorted(os.listdir(self.audit_dir), key=order):
            with open(os.path.join(self.audit_dir, name), errors="replace") as f:
                out += f.read()
        return out

    def entries(self):
        """The current file's entries; none while it does not exist (before the first entry,
        and for an instant when a roll has renamed it and not yet made the next one)."""
        try:
            with open(os.path.join(self.audit_dir, "audit.log")) as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return []
        out = []
        for line in lines:
            m = LINE.match(line)
            assert m, f"not a FileAuditLogger line: {line!r}"
            out.append(m.groupdict())
        return out

    def wait_for(self, operation, timeout=10):
        """The entries once one whose operation ends with `operation` is in the file."""
        deadline = time.time() + timeout
        while True:
            entries = self.entries()
            if any((e["operation"] or "").endswith(operation) for e in entries):
                return entries
            if time.time() > deadline:
                pytest.fail(f"no audit entry for {operation!r} within {timeout}s; file has "
                            f"{[e['operation'] for e in entries]}")
            time.sleep(0.05)

    def mark(self, session):
        """A statement whose entry shows that everything before it was written (the writer
        keeps order)."""
        token = f"mark_{uuid.uuid4().hex[:10]}"
        session.execute(f"SELECT * FROM system_auth.roles WHERE role = '{token}'")
        return self.wait_for(f"'{token}'")


def since(entries, start):
    return entries[start:]


def fields(e):
    return (e["type"], e["category"], e["ks"], e["scope"], e["operation"])


@pytest.fixture(scope="module")
def server():
    s = AuditServer()
    yield s
    s.cleanup()


@pytest.fixture(scope="module")
def admin(server):
    c = server.login()
    s = c.connect()
    yield s
    c.shutdown()


def test_off_by_default():
    s = Server()
    try:
        code, out, err = s.nodetool("getauditlog")
        assert code == 0, err
        assert re.search(r"^enabled\s+false\s*$", out, re.M), out
        assert re.search(r"^excluded_keyspaces\s+system,system_schema,system_virtual_schema\s*$",
                         out, re.M), out
    finally:
        s.cleanup()


def test_without_logins_the_user_is_anonymous():
    s = AuditServer(auth=False)
    try:
        c = s.cluster()
        session = c.connect()
        session.execute("SELECT * FROM system_auth.roles WHERE role = 'anon'")
        c.shutdown()
        entries = s.wait_for("'anon'")
        assert [(e["user"], e["type"]) for e in entries] == [("anonymous", "SELECT")], entries
        # getauditlog prints what Cassandra 5.0.9's nodetool printed for the same options.
        code, out, err = s.nodetool("getauditlog")
        assert code == 0, err
        want = fixture("getauditlog.txt").replace("AUDIT_LOGS_DIR", s.audit_dir)
        assert [l.rstrip() for l in out.splitlines()] == [l.rstrip() for l in want.splitlines()]
        assert out.splitlines()[0].startswith("enabled             true")
    finally:
        s.cleanup()


def test_logins_and_failed_logins(server):
    c = server.login()
    c.connect()
    c.shutdown()
    bad = server.login("cassandra", PASSWORDS[3])
    with pytest.raises(NoHostAvailable) as e:
        bad.connect()
    bad.shutdown()
    assert isinstance(list(e.value.errors.values())[0], AuthenticationFailed)
    entries = server.wait_for("LOGIN FAILURE; Provided username cassandra and/or password *******")
    assert ("cassandra", "LOGIN_SUCCESS", "AUTH", None, None, "LOGIN SUCCESSFUL") in [
        (e["user"], e["type"], e["category"], e["ks"], e["scope"], e["operation"]) for e in entries]
    failed = [e for e in entries if e["type"] == "LOGIN_ERROR"]
    assert failed and failed[-1]["user"] == "null" and failed[-1]["category"] == "AUTH"


def test_ddl_dml_select_prepare_and_batch_as_cassandra(server, admin):
    start = len(server.entries())
    ks = f"au_{uuid.uuid4().hex[:8]}"
    admin.execute(f"CREATE KEYSPACE {ks} WITH replication = {KS}")
    admin.execute(f"CREATE TABLE {ks}.t (k int PRIMARY KEY, v text)")
    admin.execute(f"INSERT INTO {ks}.t (k, v) VALUES (1, 'a')")
    admin.execute(f"UPDATE {ks}.t SET v = 'b' WHERE k = 1")
    admin.execute(f"SELECT * FROM {ks}.t WHERE k = 1")
    p = admin.prepare(f"SELECT v FROM {ks}.t WHERE k = ?")
    admin.execute(p, [1])
    b = BatchStatement()
    b.add(SimpleStatement(f"INSERT INTO {ks}.t (k, v) VALUES (2, 'c')"))
    b.add(admin.prepare(f"DELETE FROM {ks}.t WHERE k = ?"), [3])
    admin.execute(b)
    with pytest.raises(InvalidRequest):
        admin.execute(f"SELECT * FROM {ks}.nosuch")
    bad = BatchStatement()
    bad.add(SimpleStatement(f"INSERT INTO {ks}.t (k, v) VALUES (4, 'd')"))
    bad.add(SimpleStatement(f"INSERT INTO {ks}.t (k, nope) VALUES (5, 1)"))
    with pytest.raises(InvalidRequest):
        admin.execute(bad)
    admin.execute(f"ALTER TABLE {ks}.t ADD w int")
    admin.execute(f"TRUNCATE {ks}.t")
    admin.execute(f"DROP TABLE {ks}.t")
    got = [fields(e) for e in since(server.mark(admin), start)
           if e["ks"] == ks or (e["operation"] or "").startswith("BatchId")]
    batch = [e for e in since(server.entries(), start) if e["batch"]]
    assert len(batch) == 3 and len({e["batch"] for e in batch}) == 1, batch
    bid = batch[0]["batch"]
    assert got == [
        ("CREATE_KEYSPACE", "DDL", ks, None, f"CREATE KEYSPACE {ks} WITH replication = {KS}"),
        ("CREATE_TABLE", "DDL", ks, "t", f"CREATE TABLE {ks}.t (k int PRIMARY KEY, v text)"),
        ("UPDATE", "DML", ks, "t", f"INSERT INTO {ks}.t (k, v) VALUES (1, 'a')"),
        ("UPDATE", "DML", ks, "t", f"UPDATE {ks}.t SET v = 'b' WHERE k = 1"),
        ("SELECT", "QUERY", ks, "t", f"SELECT * FROM {ks}.t WHERE k = 1"),
        ("PREPARE_STATEMENT", "PREPARE", ks, "t", f"SELECT v FROM {ks}.t WHERE k = ?"),
        ("SELECT", "QUERY", ks, "t", f"SELECT v FROM {ks}.t WHERE k = ?"),
        ("PREPARE_STATEMENT", "PREPARE", ks, "t", f"DELETE FROM {ks}.t WHERE k = ?"),
        ("BATCH", "DML", None, None, f"BatchId:[{bid}] - BATCH of [2] statements"),
        ("UPDATE", "DML", ks, "t", f"INSERT INTO {ks}.t (k, v) VALUES (2, 'c')"),
        ("DELETE", "DML", ks, "t", f"DELETE FROM {ks}.t WHERE k = ?"),
        ("ALTER_TABLE", "DDL", ks, "t", f"ALTER TABLE {ks}.t ADD w int"),
        ("TRUNCATE", "DDL", ks, "t", f"TRUNCATE {ks}.t"),
        ("DROP_TABLE", "DDL", ks, "t", f"DROP TABLE {ks}.t"),
    ], got
    failures = [fields(e) for e in since(server.entries(), start) if e["type"] == "REQUEST_FAILURE"]
    assert ("REQUEST_FAILURE", "ERROR", None, None,
            f"SELECT * FROM {ks}.nosuch; table nosuch does not exist") in failures, failures
    assert [f for f in failures
            if f[4].startswith("BATCH of 2 statements at consistency LOCAL_ONE; ")], failures
    users = {e["user"] for e in since(server.entries(), start)}
    assert users == {"cassandra"}, users


def test_passwords_never_reach_the_audit_log_or_the_server_log(server, admin):
    start = len(server.entries())
    role = f"r_{uuid.uuid4().hex[:8]}"
    admin.execute(f"CREATE ROLE {role} WITH PASSWORD = '{PASSWORDS[0]}' AND LOGIN = true")
    admin.execute(f"ALTER ROLE {role} WITH PASSWORD = '{PASSWORDS[1]}'")
    user = f"u_{uuid.uuid4().hex[:8]}"
    admin.execute(f"CREATE USER {user} WITH PASSWORD '{PASSWORDS[2]}' NOSUPERUSER")
    with pytest.raises(Exception):
        admin.execute(f"CREAT ROLE x WITH PASSWORD = '{PASSWORDS[2]}'")
    c = server.login(role, PASSWORDS[1])
    c.connect()
    c.shutdown()
    got = [fields(e) for e in since(server.mark(admin), start) if e["category"] in ("DCL", "ERROR")]
    assert ("CREATE_ROLE", "DCL", None, None,
            f"CREATE ROLE {role} WITH PASSWORD = '*******' AND LOGIN = true") in got, got
    assert ("ALTER_ROLE", "DCL", None, None, f"ALTER ROLE {role} WITH PASSWORD = '*******'") in got
    assert ("CREATE_ROLE", "DCL", None, None,
            f"CREATE USER {user} WITH PASSWORD '*******' NOSUPERUSER") in got
    assert ("REQUEST_FAILURE", "ERROR", None, None,
            "CREAT ROLE x WITH PASSWORD *******; Syntax Exception. Obscured for security reasons.") in got
    text = server.all_text() + server.log_tail(10 ** 7)
    for p in PASSWORDS:
        assert p not in text, f"password {p} written to a log"


def test_a_statement_cannot_forge_a_line(server, admin):
    forged = "user:forged|host:/127.0.0.1:1|source:/127.0.0.1|port:1|timestamp:1795738237807|type:LOGIN_SUCCESS"
    admin.execute(f"SELECT * FROM system_auth.roles\nWHERE role = 'x\n{forged}'")
    entries = server.wait_for("type:LOGIN_SUCCESS'")
    assert all(e["user"] != "forged" for e in entries)
    assert entries[-1]["operation"] == f"SELECT * FROM system_auth.roles\\nWHERE role = 'x\\n{forged}'"


def test_unauthorized_attempts_and_filters_by_keyspace_category_and_user(server, admin):
    ks1, ks2 = f"fa_{uuid.uuid4().hex[:6]}", f"fb_{uuid.uuid4().hex[:6]}"
    user = f"f_{uuid.uuid4().hex[:8]}"
    for ks in (ks1, ks2):
        admin.execute(f"CREATE KEYSPACE {ks} WITH replication = {KS}")
        admin.execute(f"CREATE TABLE {ks}.t (k int PRIMARY KEY)")
    admin.execute(f"CREATE ROLE {user} WITH PASSWORD = 'pw-{user}' AND LOGIN = true")
    admin.execute(f"GRANT SELECT ON KEYSPACE {ks1} TO {user}")
    try:
        code, _, err = server.nodetool("enableauditlog", "--included-keyspaces", ks1,
                                       "--excluded-categories", "DDL")
        assert code == 0, err
        code, out, _ = server.nodetool("getauditlog")
        assert re.search(rf"^included_keyspaces\s+{ks1}\s*$", out, re.M), out
        start = len(server.entries())
        for ks in (ks1, ks2):
            admin.execute(f"INSERT INTO {ks}.t (k) VALUES (1)")
            admin.execute(f"SELECT * FROM {ks}.t")
            admin.execute(f"ALTER TABLE {ks}.t WITH comment = 'x'")
        c = server.login(user, f"pw-{user}")
        s = c.connect()
        s.execute(f"SELECT * FROM {ks1}.t")
        with pytest.raises(Exception):
            s.execute(f"INSERT INTO {ks1}.t (k) VALUES (2)")
        c.shutdown()
        admin.execute(f"SELECT * FROM {ks1}.t WHERE k = 99")
        entries = server.wait_for(f"SELECT * FROM {ks1}.t WHERE k = 99")[start:]
        got = [(e["user"], e["type"], e["ks"]) for e in entries]
        assert got == [
            ("cassandra", "UPDATE", ks1),
            ("cassandra", "SELECT", ks1),
            (user, "SELECT", ks1),
            ("cassandra", "SELECT", ks1),
        ], got
        # Only the user: their refused write is an UNAUTHORIZED_ATTEMPT (category AUTH).
        code, _, err = server.nodetool("enableauditlog", "--included-keyspaces", "",
                                       "--excluded-categories", "", "--included-users", user)
        assert code == 0, err
        start = len(server.entries())
        c = server.login(user, f"pw-{user}")
        s = c.connect()
        with pytest.raises(Exception):
            s.execute(f"INSERT INTO {ks1}.t (k) VALUES (3)")
        s.execute(f"SELECT * FROM {ks1}.t WHERE k = 98")
        admin.execute(f"SELECT * FROM {ks1}.t WHERE k = 97")
        entries = server.wait_for(f"SELECT * FROM {ks1}.t WHERE k = 98")[start:]
        c.shutdown()
        types = [(e["user"], e["type"], e["category"]) for e in entries]
        assert (user, "UNAUTHORIZED_ATTEMPT", "AUTH") in types, types
        assert (user, "LOGIN_SUCCESS", "AUTH") in types, types
        assert {e["user"] for e in entries} == {user}, types
        unauthorized = [e for e in entries if e["type"] == "UNAUTHORIZED_ATTEMPT"][0]
        assert unauthorized["operation"].startswith(f"INSERT INTO {ks1}.t (k) VALUES (3); User {user} has no MODIFY permission")
    finally:
        code, _, err = server.nodetool("enableauditlog", "--included-keyspaces", "",
                                       "--excluded-categories", "", "--included-users", "")
        assert code == 0, err


def test_disable_and_enable_with_nodetool(server, admin):
    code, _, err = server.nodetool("disableauditlog")
    assert code == 0, err
    code, out, _ = server.nodetool("getauditlog")
    assert re.search(r"^enabled\s+false\s*$", out, re.M), out
    quiet = f"quiet_{uuid.uuid4().hex[:8]}"
    admin.execute(f"SELECT * FROM system_auth.roles WHERE role = '{quiet}'")
    code, _, err = server.nodetool("enableauditlog")
    assert code == 0, err
    code, out, _ = server.nodetool("getauditlog")
    assert re.search(r"^enabled\s+true\s*$", out, re.M), out
    server.mark(admin)
    assert quiet not in server.all_text()
    # Bad options are refused as Cassandra's nodetool refuses them (exit 2), and the log stays on.
    code, _, err = server.nodetool("enableauditlog", "--logger", "BinAuditLogger")
    assert code == 2 and "BinAuditLogger" in err, err
    code, _, err = server.nodetool("enableauditlog", "--included-categories", "NOPE")
    assert code == 2 and "NOPE" in err, err
    code, _, err = server.nodetool("enableauditlog", "--bogus", "1")
    assert code == 1 and "--bogus" in err, err
    server.mark(admin)


def test_rotation_by_size_and_retention():
    s = AuditServer("  max_file_size: 2KiB\n  max_log_size: 8KiB\n")
    try:
        c = s.login()
        session = c.connect()
        for i in range(120):
            session.execute(f"SELECT * FROM system_auth.roles WHERE role = 'rot_{i:04d}_{'x' * 60}'")
        s.wait_for(f"'rot_0119_{'x' * 60}'")
        c.shutdown()
        names = os.listdir(s.audit_dir)
        rolled = [n for n in names if n.startswith("audit.log.")]
        assert "audit.log" in names and len(rolled) >= 3, names
        sizes = [os.path.getsize(os.path.join(s.audit_dir, n)) for n in rolled]
        assert all(size <= 2048 for size in sizes), sizes
        assert sum(sizes) <= 8192, sizes
        # The oldest were deleted; the newest are all there, in order, each line whole.
        text = s.all_text()
        assert f"rot_0000_" not in text
        kept = [int(m) for m in re.findall(r"'rot_(\d{4})_", text)]
        assert kept == list(range(kept[0], 120)), kept
    finally:
        s.cleanup()


def test_rotation_by_roll_cycle():
    s = AuditServer("  roll_cycle: TEST_SECONDLY\n")
    try:
        c = s.login()
        session = c.connect()
        for i in range(3):
            session.execute(f"SELECT * FROM system_auth.roles WHERE role = 'cyc_{i}'")
            s.wait_for(f"'cyc_{i}'")
            time.sleep(1.1)  # the cycle is one second: the next entry belongs to a new one
        session.execute("SELECT * FROM system_auth.roles WHERE role = 'cyc_last'")
        s.wait_for("'cyc_last'")
        c.shutdown()
        rolled = sorted(n for n in os.listdir(s.audit_dir) if n.startswith("audit.log."))
        assert len(rolled) >= 3, rolled
        for n in rolled:
            assert re.fullmatch(r"audit\.log\.\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d\.\d+", n), n
        # A restart appends to audit.log; its first entry in a later cycle rolls the old file.
        s.stop()
        time.sleep(1.1)
        s2 = AuditServer("  roll_cycle: TEST_SECONDLY\n", audit_dir=s.audit_dir)
        try:
            c = s2.login()
            c.connect().execute("SELECT * FROM system_auth.roles WHERE role = 'cyc_again'")
            c.shutdown()
            entries = s2.wait_for("'cyc_again'")
            assert "cyc_last" not in str(entries), entries
            assert "'cyc_last'" in s2.all_text()
        finally:
            s2.stop()
            shutil.rmtree(s2.dir, ignore_errors=True)
    finally:
        s.cleanup()


def test_bad_audit_options_stop_the_start_up(tmp_path):
    from admin_support import binary
    import subprocess
    cfg = tmp_path / "p.yaml"
    cfg.write_text("audit_logging_options:\n  enabled: true\n  logger: BinAuditLogger\n"
                   "  roll_cycle: WEEKLY\n  excluded_categories: DML,NOPE\n")
    r = subprocess.run([binary(), "serve", "--config", str(cfg), "--listen", "127.0.0.1:0",
                        "--data-dir", str(tmp_path / "data")], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode != 0
    out = r.stdout + r.stderr
    for word in ("BinAuditLogger", "WEEKLY", "NOPE"):
        assert word in out, out


def test_proxy_mode_logs_the_same_entries(tmp_path):
    """The hook is in the connection code both modes share: a proxy (here in front of a
    standalone Peregrine with logins on) logs logins and failed logins (the upstream's
    verdicts), DDL, prepared statements (classified by the text it remembers from the PREPARE
    it forwarded), cache hits and failures."""
    from admin_support import binary
    import subprocess
    from conftest import _free_port, _port_open
    upstream = Server(yaml="authenticator: PasswordAuthenticator\nauthorizer: CassandraAuthorizer\n")
    port = _free_port()
    audit_dir = str(tmp_path / "audit")
    cfg = tmp_path / "proxy.yaml"
    cfg.write_text(f"audit_logging_options:\n  enabled: true\n  audit_logs_dir: {audit_dir}\n")
    log = open(tmp_path / "proxy.log", "wb")
    proxy = subprocess.Popen([binary(), "serve", "--config", str(cfg), "--listen", f"127.0.0.1:{port}",
                              "--upstream", f"127.0.0.1:{upstream.port}",
                              "--data-dir", str(tmp_path / "data")],
                             stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 60
        while not _port_open("127.0.0.1", port):
            assert proxy.poll() is None and time.time() < deadline, "proxy did not start"
            time.sleep(0.05)
        from cassandra.cluster import Cluster
        bad = Cluster(["127.0.0.1"], port=port, protocol_version=4, connect_timeout=10,
                      auth_provider=PlainTextAuthProvider("cassandra", PASSWORDS[3]))
        with pytest.raises(NoHostAvailable):
            bad.connect()
        bad.shutdown()
        c = Cluster(["127.0.0.1"], port=port, protocol_version=4, connect_timeout=10,
                    auth_provider=PlainTextAuthProvider("cassandra", "cassandra"))
        s = c.connect()
        ks = f"px_{uuid.uuid4().hex[:8]}"
        s.execute(f"CREATE KEYSPACE {ks} WITH replication = {KS}")
        s.execute(f"CREATE TABLE {ks}.t (k int PRIMARY KEY, v int)")
        ins = s.prepare(f"INSERT INTO {ks}.t (k, v) VALUES (?, ?)")
        s.execute(ins, [1, 1])
        sel = s.prepare(f"SELECT * FROM {ks}.t WHERE k = ?")
        for _ in range(3):
            assert s.execute(sel, [1]).one().v == 1
        hits = {r.name: r.value for r in s.execute("SELECT * FROM system_views.peregrine_cache")}
        assert int(hits["cache_hits_total"]) >= 1, hits  # answered on the reader task
        with pytest.raises(InvalidRequest):
            s.execute(f"SELECT * FROM {ks}.nosuch")
        c.shutdown()
        path = os.path.join(audit_dir, "audit.log")
        want = f"SELECT * FROM {ks}.nosuch; table nosuch does not exist"
        deadline = time.time() + 10
        while not (os.path.exists(path) and want in open(path).read()):
            assert time.time() < deadline, "no audit entry for the failure"
            time.sleep(0.05)
        entries = []
        for line in open(path).read().splitlines():
            m = LINE.match(line)
            assert m, line
            entries.append(m.groupdict())
        got = [(e["user"], e["type"], e["ks"], e["scope"]) for e in entries
               if (e["operation"] or "").find(ks) >= 0]
        u = "cassandra"
        assert got == [
            (u, "CREATE_KEYSPACE", ks, None),
            (u, "CREATE_TABLE", ks, "t"),
            (u, "PREPARE_STATEMENT", ks, "t"),
            (u, "UPDATE", ks, "t"),
            (u, "PREPARE_STATEMENT", ks, "t"),
            (u, "SELECT", ks, "t"),
            (u, "SELECT", ks, "t"),
            (u, "SELECT", ks, "t"),
            (u, "REQUEST_FAILURE", None, None),
        ], got
        logins = [(e["user"], e["type"], e["operation"]) for e in entries if e["category"] == "AUTH"]
        assert logins[0] == ("null", "LOGIN_ERROR", "LOGIN FAILURE; Provided username cassandra "
                                                     "and/or password *******"), logins
        assert ("cassandra", "LOGIN_SUCCESS", "LOGIN SUCCESSFUL") in logins, logins
        assert PASSWORDS[3] not in open(path).read()
    finally:
        proxy.terminate()
        proxy.wait(timeout=30)
        log.close()
        upstream.cleanup()


def test_a_full_queue_drops_entries_counts_them_and_never_blocks():
    """`max_queue_weight` smaller than any entry: every entry is dropped, counted in /metrics,
    and requests are answered as usual."""
    s = AuditServer("  max_queue_weight: 1\n")
    try:
        c = s.login()
        session = c.connect()
        for i in range(20):
            assert session.execute(f"SELECT role FROM system_auth.roles WHERE role = 'cassandra'").one()
        c.shutdown()
        text = s.scrape()
        dropped = re.search(r"^peregrine_audit_log_dropped_total (\d+)", text, re.M)
        written = re.search(r"^peregrine_audit_log_entries_total (\d+)", text, re.M)
        assert dropped and int(dropped.group(1)) >= 22, text[-2000:]  # 2 logins + 20 SELECTs
        assert written and int(written.group(1)) == 0
        assert os.path.getsize(os.path.join(s.audit_dir, "audit.log")) == 0
        assert "audit log: the writer is behind" in s.log_tail(10 ** 6)
    finally:
        s.cleanup()
