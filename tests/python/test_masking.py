"""Dynamic data masking DDL (issue 13 item 4) through the Python driver and cqlsh, against a
Peregrine started here with `dynamic_data_masking_enabled: true`:

  - CREATE TABLE ... MASKED WITH, ALTER ... MASKED WITH / DROP MASKED through the driver;
  - the driver's schema metadata still loads with masked columns (it reads
    system_schema.column_masks on 5.0) and system_schema.column_masks lists the masks;
  - masks survive a restart (kept in the persisted schema);
  - cqlsh DESCRIBE prints them as Cassandra 5.0 does;
  - a Peregrine with the default configuration refuses MASKED WITH with Cassandra's message.

and, with PasswordAuthenticator + CassandraAuthorizer, what a role reads: masked values without
UNMASK (in plain columns, inside functions, in SELECT JSON and aggregates), clear values for a
superuser and after GRANT UNMASK, WHERE on a masked column refused without UNMASK or
SELECT_MASKED (allowed with SELECT_MASKED, results still masked), and REVOKE restoring masking.
"""

import signal
import subprocess

import pytest
from cassandra import InvalidRequest

from cassandra import Unauthorized

from auth_support import AuthServer
from test_indexes import own_server_lifetime

KS = "CREATE KEYSPACE IF NOT EXISTS dm WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"
TABLE = ("CREATE TABLE dm.users (id int MASKED WITH DEFAULT, c text MASKED WITH mask_outer(1, null), "
         "s int static MASKED WITH mask_null(), name text MASKED WITH mask_inner(1, null), email text, "
         "PRIMARY KEY (id, c))")


@pytest.fixture
def masking_server():
    yield from own_server_lifetime("peregrine-masking-", "dynamic_data_masking_enabled: true\n", start=True)


@pytest.fixture
def plain_server():
    yield from own_server_lifetime("peregrine-nomasking-", start=True)


def masks(session):
    return {(r.column_name, r.function_name, tuple(r.function_argument_values or ()),
             tuple(r.function_argument_nulls or ()))
            for r in session.execute("SELECT * FROM system_schema.column_masks WHERE keyspace_name = 'dm'")}


def test_masks_through_driver_restart_and_cqlsh(masking_server, cqlsh_bin):
    c, s = masking_server.session()
    try:
        s.execute(KS)
        s.execute(TABLE)
        s.execute("ALTER TABLE dm.users ALTER email MASKED WITH mask_replace('hidden')")
        s.execute("ALTER TABLE dm.users ALTER name DROP MASKED")
        s.execute("ALTER TABLE dm.users ALTER name MASKED WITH mask_inner(1, null)")
        s.execute("INSERT INTO dm.users (id, c, s, name, email) VALUES (1, 'abc', 2, 'alice', 'a@x')")
        # Authentication is off: the anonymous user holds every permission and reads clear values.
        row = s.execute("SELECT * FROM dm.users").one()
        assert (row.id, row.c, row.s, row.name, row.email) == (1, "abc", 2, "alice", "a@x")
        c.refresh_schema_metadata()
        table = c.metadata.keyspaces["dm"].tables["users"]
        assert set(table.columns) == {"id", "c", "s", "name", "email"}
        with pytest.raises(InvalidRequest, match="Not-masking function abs\\(\\) cannot be used"):
            s.execute("ALTER TABLE dm.users ALTER email MASKED WITH abs()")
        want = {("id", "mask_default", (), ()), ("c", "mask_outer", ("1", ""), (False, True)),
                ("s", "mask_null", (), ()), ("name", "mask_inner", ("1", ""), (False, True)),
                ("email", "mask_replace", ("hidden",), (False,))}
        assert masks(s) == want
    finally:
        c.shutdown()

    masking_server.stop(signal.SIGTERM)
    masking_server.start()
    c, s = masking_server.session()
    try:
        assert masks(s) == want
    finally:
        c.shutdown()

    out = subprocess.run([cqlsh_bin, "127.0.0.1", str(masking_server.port), "-e", "DESCRIBE TABLE dm.users"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    for line in ("    id int MASKED WITH system.mask_default(),\n",
                 "    c text MASKED WITH system.mask_outer(1, null),\n",
                 "    s int static MASKED WITH system.mask_null(),\n",
                 "    email text MASKED WITH system.mask_replace('hidden'),\n",
                 "    name text MASKED WITH system.mask_inner(1, null),\n",
                 "    PRIMARY KEY (id, c)\n"):
        assert line in out.stdout, out.stdout


def test_masking_disabled_by_default(plain_server):
    c, s = plain_server.session()
    try:
        s.execute(KS)
        with pytest.raises(InvalidRequest, match="Cannot mask columns because dynamic data masking is not enabled. "
                           "You can enable it with the dynamic_data_masking_enabled property on cassandra.yaml"):
            s.execute(TABLE)
        # The functions exist whatever the setting.
        s.execute("CREATE TABLE dm.p (k int PRIMARY KEY, v text)")
        s.execute("INSERT INTO dm.p (k, v) VALUES (1, 'secret')")
        row = s.execute("SELECT mask_inner(v, 1, 1) AS a, mask_default(v) AS b FROM dm.p").one()
        assert (row.a, row.b) == ("s****t", "****")
    finally:
        c.shutdown()


def test_roles_read_masked_values():
    server = AuthServer(extra_config="dynamic_data_masking_enabled: true\n").start()
    try:
        admin_c = server.cluster("cassandra", "cassandra")
        admin = admin_c.connect()
        admin.execute(KS)
        admin.execute(TABLE)
        admin.execute("INSERT INTO dm.users (id, c, s, name, email) VALUES (1, 'abc', 2, 'alice', 'a@x')")
        admin.execute("CREATE ROLE reader WITH PASSWORD = 'pw' AND LOGIN = true")
        admin.execute("GRANT SELECT ON dm.users TO reader")
        # A superuser reads clear values.
        row = admin.execute("SELECT * FROM dm.users").one()
        assert (row.id, row.c, row.s, row.name) == (1, "abc", 2, "alice")

        rc = server.cluster("reader", "pw")
        r = rc.connect()
        row = r.execute("SELECT * FROM dm.users").one()
        assert (row.id, row.c, row.s, row.name, row.email) == (0, "*bc", None, "a****", "a@x")
        row = r.execute("SELECT blobAsText(textAsBlob(name)) AS u, writetime(name) AS w, count(*) AS n FROM dm.users").one()
        assert row.u == "a****" and row.w is not None and row.n == 1
        # token() of the masked key (id masked to 0), as Cassandra 5.0.9 answers.
        assert r.execute("SELECT token(id) FROM dm.users").one()[0] == -3485513579396041028
        assert r.execute("SELECT JSON name FROM dm.users").one()[0] == '{"name": "a****"}'
        prepared = r.prepare("SELECT name FROM dm.users WHERE id = ? AND c = ?")
        with pytest.raises(Unauthorized, match=r"User reader has no UNMASK nor SELECT_MASKED permission on table "
                           r"dm.users, cannot query masked columns \[c, id\]"):
            r.execute(prepared, (1, "abc"))
        with pytest.raises(Unauthorized, match="cannot query masked columns"):
            r.execute("SELECT * FROM dm.users WHERE name = 'alice' ALLOW FILTERING")
        r.execute("SELECT email FROM dm.users WHERE email = 'a@x' ALLOW FILTERING")

        admin.execute("GRANT SELECT_MASKED ON dm.users TO reader")
        assert r.execute(prepared, (1, "abc")).one().name == "a****"
        assert r.execute("SELECT * FROM dm.users WHERE name = 'zzz' ALLOW FILTERING").one() is None

        admin.execute("GRANT UNMASK ON dm.users TO reader")
        assert r.execute(prepared, (1, "abc")).one().name == "alice"
        assert r.execute("SELECT * FROM dm.users").one().id == 1
        admin.execute("REVOKE UNMASK ON dm.users FROM reader")
        assert r.execute("SELECT name FROM dm.users").one().name == "a****"
        rc.shutdown()
        admin_c.shutdown()
    finally:
        server.stop()
