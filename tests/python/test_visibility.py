"""Cell-level visibility labels (issue 13 item 6, docs/visibility.md) through the Python driver,
against a Peregrine started here with PasswordAuthenticator + CassandraAuthorizer:

  - a multi-tenant table (`WITH visibility = {'enabled': 'true'}`) written with
    `USING VISIBILITY` (also with TTL/TIMESTAMP, in BATCH, in prepared statements; bind
    markers, list indexes, secondary indexes and the driver's metadata are
    test_visibility_binds.py's);
  - roles granted authorizations with GRANT AUTHORIZATIONS, each reading only its cells: rows
    with no visible cell vanish, count(*) and paging with a small fetch_size count only
    visible rows, writetime/ttl of a hidden cell are null;
  - the `peregrine-authorizations` custom payload narrows a request (and is refused when it
    names an authorization the role does not hold);
  - the write constraint, invalid expressions, and the refused vector index and LWT;
  - labels and authorizations survive a restart and `peregrine nodetool compact`.
"""

import pytest
from cassandra import InvalidRequest, Unauthorized
from cassandra.query import BatchStatement, SimpleStatement

from auth_support import AuthServer
from conftest import _free_port
from admin_support import nodetool

KEY = "peregrine-authorizations"
KS = "CREATE KEYSPACE tenants WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"
TABLE = ("CREATE TABLE tenants.docs (tenant text, id int, title text, body text, score int, "
         "PRIMARY KEY (tenant, id)) WITH visibility = {'enabled': 'true'}")


@pytest.fixture(scope="module")
def server():
    admin = _free_port()
    s = AuthServer(extra_config=f"admin_listen: 127.0.0.1:{admin}\n")
    s.admin_port = admin
    s.start()
    yield s
    s.stop()


def connect(server, user, password):
    c = server.cluster(user, password)
    return c, c.connect()


@pytest.fixture(scope="module")
def su(server):
    c, s = connect(server, "cassandra", "cassandra")
    s.execute(KS)
    s.execute(TABLE)
    for role, auths in (("acme", "'acme'"), ("globex", "'globex'"),
                        ("auditor", "'acme', 'globex', 'audit'"), ("guest", None)):
        s.execute(f"CREATE ROLE {role} WITH PASSWORD = 'pw' AND LOGIN = true")
        s.execute(f"GRANT SELECT ON KEYSPACE tenants TO {role}")
        s.execute(f"GRANT MODIFY ON KEYSPACE tenants TO {role}")
        if auths:
            s.execute(f"GRANT AUTHORIZATIONS {auths} TO {role}")
    s.execute("GRANT AUTHORIZATIONS 'acme', 'globex', 'audit' TO cassandra")
    # Each tenant's rows carry its label; the shared row is unlabelled; the audit note on an
    # acme row needs both acme and audit.
    for i in range(25):
        s.execute(f"INSERT INTO tenants.docs (tenant, id, title, score) VALUES ('acme', {i}, 'a{i}', {i}) "
                  "USING VISIBILITY 'acme'")
    for i in range(7):
        s.execute(f"INSERT INTO tenants.docs (tenant, id, title, score) VALUES ('globex', {i}, 'g{i}', 100) "
                  "USING TTL 86400 AND VISIBILITY 'globex'")
    s.execute("INSERT INTO tenants.docs (tenant, id, title) VALUES ('shared', 0, 'hello all')")
    s.execute("UPDATE tenants.docs USING VISIBILITY 'acme&audit' SET body = 'flagged' "
              "WHERE tenant = 'acme' AND id = 3")
    yield s
    c.shutdown()


@pytest.fixture(scope="module")
def sessions(server, su):
    out = {}
    clusters = []
    for role in ("acme", "globex", "auditor", "guest"):
        c, s = connect(server, role, "pw")
        clusters.append(c)
        out[role] = s
    yield out
    for c in clusters:
        c.shutdown()


def tenants_seen(session, **kw):
    rows = session.execute(SimpleStatement("SELECT tenant FROM tenants.docs", fetch_size=4), **kw)
    return sorted({r.tenant for r in rows}), len(list(session.execute(
        SimpleStatement("SELECT tenant FROM tenants.docs", fetch_size=4), **kw)))


def test_each_role_reads_only_its_cells(sessions):
    assert tenants_seen(sessions["acme"]) == (["acme", "shared"], 26)
    assert tenants_seen(sessions["globex"]) == (["globex", "shared"], 8)
    assert tenants_seen(sessions["auditor"]) == (["acme", "globex", "shared"], 33)
    assert tenants_seen(sessions["guest"]) == (["shared"], 1)
    # The audit note shows only to those holding both acme and audit.
    q = "SELECT title, body FROM tenants.docs WHERE tenant = 'acme' AND id = 3"
    assert tuple(sessions["acme"].execute(q).one()) == ("a3", None)
    assert tuple(sessions["auditor"].execute(q).one()) == ("a3", "flagged")
    assert sessions["globex"].execute(q).one() is None


def test_aggregates_and_paging_count_visible_rows(sessions):
    count = "SELECT count(*), sum(score) FROM tenants.docs"
    assert tuple(sessions["acme"].execute(count).one()) == (26, sum(range(25)))
    assert tuple(sessions["globex"].execute(count).one()) == (8, 700)
    assert tuple(sessions["guest"].execute(count).one()) == (1, 0)
    # Paging with a small fetch size: every page full but the last, no row twice.
    stmt = SimpleStatement("SELECT tenant, id FROM tenants.docs WHERE tenant = 'acme'", fetch_size=3)
    result = sessions["acme"].execute(stmt)
    pages = [len(result.current_rows)]
    while result.has_more_pages:
        result.fetch_next_page()
        pages.append(len(result.current_rows))
    assert sum(pages) == 25 and all(p == 3 for p in pages[:-1]), pages
    assert list(sessions["globex"].execute(stmt)) == []


def test_writetime_and_ttl_never_leak(sessions):
    q = "SELECT writetime(title), ttl(title), writetime(body) FROM tenants.docs WHERE tenant = 'globex' AND id = 1"
    wt, ttl, body_wt = sessions["globex"].execute(q).one()
    assert wt > 0 and 0 < ttl <= 86400 and body_wt is None
    assert sessions["acme"].execute(q).one() is None
    q = "SELECT writetime(body), ttl(body) FROM tenants.docs WHERE tenant = 'acme' AND id = 3"
    assert tuple(sessions["acme"].execute(q).one()) == (None, None)
    assert sessions["auditor"].execute(q).one()[0] > 0


def test_payload_narrows_and_never_widens(sessions):
    auditor = sessions["auditor"]
    assert tenants_seen(auditor, custom_payload={KEY: b"globex"}) == (["globex", "shared"], 8)
    assert tenants_seen(auditor, custom_payload={KEY: b""}) == (["shared"], 1)
    q = "SELECT body FROM tenants.docs WHERE tenant = 'acme' AND id = 3"
    assert auditor.execute(q, custom_payload={KEY: b"acme"}).one().body is None
    assert auditor.execute(q, custom_payload={KEY: b"acme, audit"}).one().body == "flagged"
    with pytest.raises(Unauthorized, match="does not hold the authorization 'audit'"):
        sessions["acme"].execute(q, custom_payload={KEY: b"acme,audit"})
    with pytest.raises(InvalidRequest, match=KEY):
        auditor.execute(q, custom_payload={KEY: b"acme|audit"})
    # Prepared statements read with the payload of each execution.
    p = auditor.prepare("SELECT count(*) FROM tenants.docs WHERE tenant = ?")
    assert auditor.execute(p, ["globex"], custom_payload={KEY: b"acme"}).one()[0] == 0
    assert auditor.execute(p, ["globex"]).one()[0] == 7


def test_writes_batches_and_refusals(server, su, sessions):
    su.execute("CREATE TABLE tenants.strict (k int PRIMARY KEY, v text) "
               "WITH visibility = {'enabled': 'true', 'constraint': 'true'}")
    acme = sessions["acme"]
    acme.execute("INSERT INTO tenants.strict (k, v) VALUES (1, 'ok') USING VISIBILITY 'acme'")
    with pytest.raises(Unauthorized, match="visibility constraint"):
        acme.execute("INSERT INTO tenants.strict (k, v) VALUES (2, 'no') USING VISIBILITY 'globex'")
    # A batch whose statements carry different labels; a prepared statement with one.
    batch = BatchStatement()
    batch.add("INSERT INTO tenants.strict (k, v) VALUES (3, 'a') USING VISIBILITY 'acme'")
    batch.add(acme.prepare("INSERT INTO tenants.strict (k, v) VALUES (?, ?) USING VISIBILITY 'acme|globex'"),
              (4, "b"))
    acme.execute(batch)
    rows = {r.k for r in sessions["globex"].execute("SELECT k FROM tenants.strict")}
    assert rows == {4}
    bad = BatchStatement()
    bad.add("INSERT INTO tenants.strict (k, v) VALUES (5, 'a') USING VISIBILITY 'acme'")
    bad.add("INSERT INTO tenants.strict (k, v) VALUES (6, 'b') USING VISIBILITY 'globex'")
    with pytest.raises(Unauthorized, match="visibility constraint"):
        acme.execute(bad)
    assert su.execute("SELECT k FROM tenants.strict WHERE k IN (5, 6)").one() is None
    with pytest.raises(InvalidRequest, match="cannot be mixed without parentheses"):
        su.execute("INSERT INTO tenants.docs (tenant, id) VALUES ('x', 1) USING VISIBILITY 'a|b&c'")
    with pytest.raises(InvalidRequest, match="unbalanced"):
        su.execute("INSERT INTO tenants.docs (tenant, id) VALUES ('x', 1) USING VISIBILITY 'a)'")
    su.execute("CREATE TABLE tenants.vec (k int PRIMARY KEY, e vector<float, 2>) "
               "WITH visibility = {'enabled': 'true'}")
    with pytest.raises(InvalidRequest, match="Vector indexes are not supported"):
        su.execute("CREATE CUSTOM INDEX ON tenants.vec (e) USING 'sai'")
    with pytest.raises(InvalidRequest, match="Conditional updates"):
        su.execute("INSERT INTO tenants.docs (tenant, id) VALUES ('x', 1) IF NOT EXISTS")
    with pytest.raises(Unauthorized):
        acme.execute("GRANT AUTHORIZATIONS 'globex' TO acme")
    # Plain Cassandra statements on a table without the option are untouched.
    su.execute("CREATE TABLE tenants.plain (k int PRIMARY KEY, visibility text)")
    su.execute("INSERT INTO tenants.plain (k, visibility) VALUES (1, 'x') USING TTL 100")
    with pytest.raises(InvalidRequest, match="does not take visibility labels"):
        su.execute("INSERT INTO tenants.plain (k) VALUES (2) USING VISIBILITY 'acme'")


def test_labels_and_authorizations_survive_restart_and_compaction(server, su, sessions):
    rc, out, err = nodetool("-h", "127.0.0.1", "-p", str(server.admin_port), "flush", "tenants")
    assert rc == 0, err
    rc, out, err = nodetool("-h", "127.0.0.1", "-p", str(server.admin_port), "compact", "tenants", "docs")
    assert rc == 0, err
    for s in sessions.values():
        s.cluster.shutdown()
    su.cluster.shutdown()
    server.stop()
    server.start()
    c, acme = connect(server, "acme", "pw")
    c2, auditor = connect(server, "auditor", "pw")
    try:
        assert tenants_seen(acme) == (["acme", "shared"], 26)
        assert tenants_seen(auditor) == (["acme", "globex", "shared"], 33)
        rows = list(auditor.execute("LIST AUTHORIZATIONS"))
        assert sorted(r.authorization for r in rows) == ["acme", "audit", "globex"]
        q = "SELECT body FROM tenants.docs WHERE tenant = 'acme' AND id = 3"
        assert acme.execute(q).one().body is None
        assert auditor.execute(q).one().body == "flagged"
    finally:
        c.shutdown()
        c2.shutdown()


def test_describe_shows_the_option_and_replays_it(server, su):
    """DESCRIBE TABLE names the `visibility` option (a schema dump restored keeps the labelled
    cells hidden), and the statement it prints creates a table with the same option."""
    # Its own session: the server may have restarted in an earlier test.
    c, su = connect(server, "cassandra", "cassandra")
    row = su.execute("DESCRIBE TABLE tenants.docs").one()
    text = row.create_statement
    assert "AND visibility = {'constraint': 'false', 'enabled': 'true'}" in text, text
    su.execute(text.replace("tenants.docs", "tenants.docs_copy"))
    su.execute("ALTER TABLE tenants.docs_copy WITH visibility = {'enabled': 'true', 'constraint': 'true'}")
    copy = su.execute("DESCRIBE TABLE tenants.docs_copy").one().create_statement
    assert "AND visibility = {'constraint': 'true', 'enabled': 'true'}" in copy, copy
    # A labelled write to the copy is refused without labels enabled: they are.
    su.execute("INSERT INTO tenants.docs_copy (tenant, id, title) VALUES ('acme', 1, 'x') "
               "USING VISIBILITY 'acme'")
    plain = su.execute("DESCRIBE TABLE tenants.docs").one().create_statement
    su.execute("DROP TABLE tenants.docs_copy")
    c.shutdown()
    assert plain == text
