"""PasswordAuthenticator, roles and permissions with the Python driver, cqlsh and a bare
protocol client, against a Peregrine started here with authentication on (its own config file,
data directory and port)."""

import os
import subprocess
import uuid

import pytest
from cassandra import AuthenticationFailed, Unauthorized
from cassandra.cluster import NoHostAvailable

from auth_support import (OP_AUTH_SUCCESS, OP_AUTHENTICATE, OP_ERROR, OP_RESULT, AuthServer,
                          RawConnection, error_of)

KS = "{'class': 'SimpleStrategy', 'replication_factor': 1}"


@pytest.fixture(scope="module")
def server():
    s = AuthServer()
    s.start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def admin(server):
    c = server.cluster("cassandra", "cassandra")
    yield c.connect()
    c.shutdown()


def login_error(server, user, password):
    c = server.cluster(user, password)
    try:
        with pytest.raises(NoHostAvailable) as e:
            c.connect()
    finally:
        c.shutdown()
    (err,) = e.value.errors.values()
    assert isinstance(err, AuthenticationFailed), err
    return str(err)


def logs_in(server, user, password):
    """Connects as `user` (failing the test if it cannot) and disconnects."""
    c = server.cluster(user, password)
    try:
        c.connect()
    finally:
        c.shutdown()


def fresh(prefix):
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def test_default_superuser_logs_in_with_v4_and_v5_and_start_up_warns(server):
    for version in (4, 5):
        c = server.cluster("cassandra", "cassandra", protocol_version=version)
        try:
            row = c.connect().execute("SELECT release_version FROM system.local").one()
            assert row.release_version == "5.0.9"
        finally:
            c.shutdown()
    log = server.log()
    assert "Created default superuser role 'cassandra'" in log
    assert "still has the default password" in log


def test_wrong_password_and_unknown_role_get_cassandras_bad_credentials(server, admin):
    msg = login_error(server, "cassandra", "wrong-password-123")
    assert "code=0100 [Bad credentials]" in msg
    assert "Provided username cassandra and/or password are incorrect" in msg
    assert "Provided username ghost and/or password are incorrect" in login_error(server, "ghost", "x")
    # A role without LOGIN, with the right password.
    name = fresh("nologin")
    admin.execute(f"CREATE ROLE {name} WITH PASSWORD = 'pw'")
    assert f"{name} is not permitted to log in" in login_error(server, name, "pw")
    # Passwords never reach the log.
    assert "wrong-password-123" not in server.log()


def test_a_driver_without_credentials_is_refused(server):
    from cassandra.cluster import Cluster
    c = Cluster(["127.0.0.1"], port=server.port, protocol_version=4, connect_timeout=10)
    try:
        with pytest.raises(NoHostAvailable) as e:
            c.connect()
    finally:
        c.shutdown()
    assert "requires authentication" in str(e.value)


def test_requests_before_login_and_malformed_tokens(server):
    conn = RawConnection(server.port, source="127.0.0.5")
    try:
        op, body = conn.startup()
        assert op == OP_AUTHENTICATE
        assert b"org.apache.cassandra.auth.PasswordAuthenticator" in body
        op, body = conn.query("SELECT * FROM system.local")
        assert op == OP_ERROR
        assert error_of(body) == (0x000A, "Unexpected message QUERY, expecting SASL_RESPONSE")
        op, body = conn.auth_response(None)
        assert op == OP_ERROR and error_of(body) == (0x0100, "Password must not be null")
        op, body = conn.auth_response(b"\x00\x00pw")
        assert op == OP_ERROR and error_of(body) == (0x0100, "Authentication ID must not be null")
        op, body = conn.auth_response(b"x" * 20000)
        assert op == OP_ERROR and error_of(body)[0] == 0x0100 and "too long" in error_of(body)[1]
        # The connection lives on and can still log in.
        op, _ = conn.auth_response(b"\x00cassandra\x00cassandra")
        assert op == OP_AUTH_SUCCESS
        op, _ = conn.query("SELECT release_version FROM system.local")
        assert op == OP_RESULT
    finally:
        conn.close()


def test_failed_logins_are_throttled_per_client_address():
    server = AuthServer(extra_config="auth_login_max_failures: 3\nauth_login_failure_window: 60s\n")
    server.start()
    source = "127.0.0.7"

    def attempt(password, src=source):
        conn = RawConnection(server.port, source=src)
        try:
            assert conn.startup()[0] == OP_AUTHENTICATE
            return conn.auth_response(b"\x00cassandra\x00" + password)
        finally:
            conn.close()

    try:
        throttled(attempt)
    finally:
        server.stop()


def throttled(attempt):
    for _ in range(3):
        op, body = attempt(b"bad")
        assert op == OP_ERROR and "incorrect" in error_of(body)[1]
    # Over the limit: refused even with the right password, without checking it.
    op, body = attempt(b"cassandra")
    assert op == OP_ERROR
    code, message = error_of(body)
    assert code == 0x0100 and "Too many failed login attempts from 127.0.0.7" in message
    # Another address is not affected.
    op, _ = attempt(b"cassandra", src="127.0.0.8")
    assert op == OP_AUTH_SUCCESS


def test_permissions_are_checked_for_simple_prepared_and_batch_statements(server, admin):
    ks, user = fresh("ks"), fresh("app")
    admin.execute(f"CREATE KEYSPACE {ks} WITH replication = {KS}")
    admin.execute(f"CREATE TABLE {ks}.t (k int PRIMARY KEY, v int)")
    admin.execute(f"CREATE ROLE {user} WITH PASSWORD = 'pw' AND LOGIN = true")
    c = server.cluster(user, "pw")
    try:
        s = c.connect()
        with pytest.raises(Unauthorized) as e:
            s.execute(f"SELECT * FROM {ks}.t")
        assert f"User {user} has no SELECT permission on <table {ks}.t> or any of its parents" in str(e.value)
        select = s.prepare(f"SELECT v FROM {ks}.t WHERE k = ?")
        insert = s.prepare(f"INSERT INTO {ks}.t (k, v) VALUES (?, ?)")
        with pytest.raises(Unauthorized):
            s.execute(select, [1])
        admin.execute(f"GRANT SELECT ON KEYSPACE {ks} TO {user}")
        admin.execute(f"GRANT MODIFY ON TABLE {ks}.t TO {user}")
        # Granted: at once, on the connection already open.
        s.execute(insert, [1, 10])
        assert s.execute(select, [1]).one().v == 10
        from cassandra.query import BatchStatement
        b = BatchStatement()
        b.add(insert, [2, 20])
        b.add(f"UPDATE {ks}.t SET v = 21 WHERE k = 2")
        s.execute(b)
        assert s.execute(select, [2]).one().v == 21
        admin.execute(f"REVOKE SELECT ON KEYSPACE {ks} FROM {user}")
        with pytest.raises(Unauthorized):
            s.execute(select, [1])
        with pytest.raises(Unauthorized) as e:
            s.execute(f"DROP TABLE {ks}.t")
        assert "has no DROP permission" in str(e.value)
    finally:
        c.shutdown()
        admin.execute(f"DROP KEYSPACE {ks}")
        admin.execute(f"DROP ROLE {user}")


def test_list_statements_and_system_auth_tables(server, admin):
    a, b = fresh("a"), fresh("b")
    admin.execute(f"CREATE ROLE {a} WITH PASSWORD = 'pw' AND LOGIN = true")
    admin.execute(f"CREATE ROLE {b}")
    admin.execute(f"GRANT {b} TO {a}")
    admin.execute(f"GRANT DESCRIBE ON ALL ROLES TO {b}")
    rows = {r.role: r for r in admin.execute(f"LIST ROLES OF {a}")}
    assert set(rows) == {a, b} and rows[a].login and not rows[b].login
    perms = [(r.role, r.resource, r.permission) for r in admin.execute(f"LIST ALL PERMISSIONS OF {a}")]
    assert perms == [(b, "<all roles>", "DESCRIBE")]
    stored = admin.execute(f"SELECT * FROM system_auth.roles WHERE role = '{a}'").one()
    assert stored.can_login and not stored.is_superuser and set(stored.member_of) == {b}
    assert stored.salted_hash.startswith("$2a$10$")
    index = list(admin.execute("SELECT * FROM system_auth.resource_role_permissons_index WHERE resource = 'roles'"))
    assert (("roles", b) in [(r.resource, r.role) for r in index])
    admin.execute(f"DROP ROLE {b}")
    assert list(admin.execute(f"LIST ALL PERMISSIONS OF {a}")) == []
    admin.execute(f"DROP ROLE {a}")


def test_own_password_change_and_hashed_password(server, admin):
    user = fresh("pw")
    admin.execute(f"CREATE USER {user} WITH PASSWORD 'first'")
    c = server.cluster(user, "first")
    try:
        c.connect().execute(f"ALTER USER {user} WITH PASSWORD 'second'")
    finally:
        c.shutdown()
    assert "incorrect" in login_error(server, user, "first")
    logs_in(server, user, "second")
    # A hash copied from Cassandra (bcrypt of 'cassandra') logs in unchanged.
    hashed = fresh("hashed")
    admin.execute(f"CREATE ROLE {hashed} WITH LOGIN = true AND HASHED PASSWORD = "
                  "'$2a$10$SLEs4Jgz8Z4tYzqlm29ruOlqz1fbENt1tQlD8.u1aXO3vu1GKsXrO'")
    logs_in(server, hashed, "cassandra")
    for r in (user, hashed):
        admin.execute(f"DROP ROLE {r}")


def test_cqlsh_logs_in_with_u_and_p(server, cqlsh_bin):
    env = dict(os.environ, CQLSH_NO_BUNDLED="TRUE", TERM="dumb")
    base = [cqlsh_bin, "127.0.0.1", str(server.port), "--connect-timeout=20"]
    p = subprocess.run(base + ["-u", "cassandra", "-p", "cassandra", "-e", "LIST ROLES"],
                       capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stderr
    assert "cassandra" in p.stdout and "super" in p.stdout
    p = subprocess.run(base + ["-u", "cassandra", "-p", "nope", "-e", "LIST ROLES"],
                       capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode != 0
    assert "Provided username cassandra and/or password are incorrect" in p.stdout + p.stderr


def test_roles_and_permissions_survive_a_restart_and_the_default_is_not_recreated():
    s = AuthServer().start()
    try:
        c = s.cluster("cassandra", "cassandra")
        admin = c.connect()
        admin.execute(f"CREATE KEYSPACE kept WITH replication = {KS}")
        admin.execute("CREATE TABLE kept.t (k int PRIMARY KEY)")
        admin.execute("INSERT INTO kept.t (k) VALUES (1)")
        admin.execute("CREATE ROLE reader WITH PASSWORD = 'pw' AND LOGIN = true")
        admin.execute("GRANT SELECT ON TABLE kept.t TO reader")
        admin.execute("ALTER ROLE cassandra WITH PASSWORD = 'changed'")
        c.shutdown()
        s.stop()
        s.start()
        assert "still has the default password" not in s.log()
        c = s.cluster("reader", "pw")
        try:
            assert [r.k for r in c.connect().execute("SELECT k FROM kept.t")] == [1]
        finally:
            c.shutdown()
        assert "incorrect" in login_error(s, "cassandra", "cassandra")
        logs_in(s, "cassandra", "changed")
    finally:
        s.stop()


def test_the_initial_superuser_password_can_be_set_from_the_environment():
    s = AuthServer(env={"PEREGRINE_DEFAULT_SUPERUSER_PASSWORD": "from-env"}).start()
    try:
        assert "still has the default password" not in s.log()
        assert "incorrect" in login_error(s, "cassandra", "cassandra")
        logs_in(s, "cassandra", "from-env")
    finally:
        s.stop()
