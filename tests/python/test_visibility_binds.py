"""Visibility labels, the rest of issue 13 item 6 (docs/visibility.md), through the Python
driver at protocol v4 and v5, against a Peregrine started here with PasswordAuthenticator +
CassandraAuthorizer:

  - `USING VISIBILITY ?` / `:name` in prepared statements (beside TTL and TIMESTAMP, in BATCH):
    the marker's metadata (`[visibility]`, text) lets the unchanged driver bind it; an unset
    value is no label, a null one is refused;
  - a list update by index (`l[i] = x`, `DELETE l[i]`) counts only the items its writer sees,
    so its out-of-bound error never tells how many hidden items the list holds;
  - secondary indexes and SAI on a labelled table: a lookup returns only rows whose indexed
    cell the reader sees (also counted and paged); a vector index is refused;
  - materialized views over a labelled table: a reader sees in a view what it sees in the
    base table (a view keyed by a labelled column shows a row only to readers of that cell);
  - the table option in `system_schema.tables.extensions`, so the driver's metadata holds it
    and a registered table extension puts it into `export_as_string`.
"""

import pytest
from cassandra import InvalidRequest
from cassandra.metadata import RegisteredTableExtension, protect_name
from cassandra.query import UNSET_VALUE, BatchStatement, SimpleStatement

from auth_support import AuthServer

KS = "CREATE KEYSPACE vb WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"
OPTION = "{'constraint': 'true', 'enabled': 'true'}"


@pytest.fixture(scope="module")
def server():
    s = AuthServer(extra_config="materialized_views_enabled: true\n")
    s.start()
    c = s.cluster("cassandra", "cassandra")
    su = c.connect()
    su.execute(KS)
    for role, auths in (("acme", "'acme'"), ("globex", "'globex'"), ("guest", None)):
        su.execute(f"CREATE ROLE {role} WITH PASSWORD = 'pw' AND LOGIN = true")
        su.execute(f"GRANT ALL PERMISSIONS ON KEYSPACE vb TO {role}")
        if auths:
            su.execute(f"GRANT AUTHORIZATIONS {auths} TO {role}")
    su.execute("GRANT AUTHORIZATIONS 'acme', 'globex' TO cassandra")
    c.shutdown()
    yield s
    s.stop()


@pytest.fixture(scope="module", params=[4, 5], ids=["v4", "v5"])
def sessions(request, server):
    """One session per role at the protocol version; each test makes its own tables, suffixed
    with the version."""
    clusters, out = [], {}
    for role, pw in (("cassandra", "cassandra"), ("acme", "pw"), ("globex", "pw"), ("guest", "pw")):
        c = server.cluster(role, pw, protocol_version=request.param)
        clusters.append(c)
        out[role] = c.connect("vb")
    out["v"] = request.param
    yield out
    for c in clusters:
        c.shutdown()


def keys(session, query, **kw):
    return sorted(tuple(r) for r in session.execute(query, **kw))


def test_bind_marker_for_visibility(sessions):
    su, t = sessions["cassandra"], f"binds{sessions['v']}"
    su.execute(f"CREATE TABLE {t} (k int, c int, v text, PRIMARY KEY (k, c)) "
               "WITH visibility = {'enabled': 'true'}")
    p = su.prepare(f"INSERT INTO {t} (k, c, v) VALUES (?, ?, ?) USING TTL ? AND VISIBILITY ?")
    meta = [(m.name, m.type.typename) for m in p.column_metadata]
    assert meta[3:] == [("[ttl]", "int"), ("[visibility]", "varchar")], meta
    su.execute(p, (1, 1, "a", 0, "acme"))
    su.execute(p, (1, 2, "g", 3600, "globex"))
    su.execute(p, (1, 3, "both", 0, "acme|globex"))
    su.execute(p, (1, 4, "all", 0, ""))
    su.execute(p, (1, 5, "unset", 0, UNSET_VALUE))
    with pytest.raises(InvalidRequest, match="Invalid null value of visibility"):
        su.execute(p, (1, 6, "null", 0, None))
    with pytest.raises(InvalidRequest, match="cannot be mixed without parentheses"):
        su.execute(p, (1, 7, "bad", 0, "a|b&c"))
    q = f"SELECT c FROM {t} WHERE k = 1"
    assert keys(sessions["acme"], q) == [(1,), (3,), (4,), (5,)]
    assert keys(sessions["globex"], q) == [(2,), (3,), (4,), (5,)]
    assert keys(sessions["guest"], q) == [(4,), (5,)]
    # Named markers, in another order of the clause, bound by name.
    named = su.prepare(f"UPDATE {t} USING VISIBILITY :lbl AND TIMESTAMP :ts SET v = :v "
                       "WHERE k = :k AND c = :c")
    assert [m.name for m in named.column_metadata][:2] == ["lbl", "ts"]
    su.execute(named, {"lbl": "globex", "ts": 4 * 10**15, "v": "secret", "k": 1, "c": 4})
    read = f"SELECT v FROM {t} WHERE k = 1 AND c = 4"
    assert sessions["globex"].execute(read).one().v == "secret"
    # The row's marker (from the unlabelled INSERT) stays visible; its labelled v does not.
    assert sessions["acme"].execute(read).one().v is None
    # A BATCH of prepared statements, each with its own label.
    batch = BatchStatement()
    batch.add(p, (2, 1, "a", 0, "acme"))
    batch.add(p, (2, 2, "g", 0, "globex"))
    su.execute(batch)
    assert keys(sessions["acme"], f"SELECT c FROM {t} WHERE k = 2") == [(1,)]
    assert keys(sessions["globex"], f"SELECT c FROM {t} WHERE k = 2") == [(2,)]
    # A BATCH's own marker labels its statements.
    own = su.prepare(f"BEGIN BATCH USING VISIBILITY ? INSERT INTO {t} (k, c) VALUES (3, 1); "
                     f"INSERT INTO {t} (k, c) VALUES (3, 2); APPLY BATCH")
    assert [m.name for m in own.column_metadata] == ["[visibility]"]
    su.execute(own, ["globex"])
    assert keys(sessions["globex"], f"SELECT c FROM {t} WHERE k = 3") == [(1,), (2,)]
    assert keys(sessions["acme"], f"SELECT c FROM {t} WHERE k = 3") == []
    # A table without labels refuses the marker at PREPARE.
    su.execute(f"CREATE TABLE plain{sessions['v']} (k int PRIMARY KEY)")
    with pytest.raises(InvalidRequest, match="does not take visibility labels"):
        su.prepare(f"INSERT INTO plain{sessions['v']} (k) VALUES (?) USING VISIBILITY ?")


def test_list_index_counts_only_visible_items(sessions):
    su, t = sessions["cassandra"], f"lists{sessions['v']}"
    su.execute(f"CREATE TABLE {t} (k int PRIMARY KEY, l list<text>) "
               "WITH visibility = {'enabled': 'true'}")
    su.execute(f"UPDATE {t} USING VISIBILITY 'acme' SET l = l + ['a0', 'a1', 'a2'] WHERE k = 1")
    su.execute(f"UPDATE {t} USING VISIBILITY 'globex' SET l = l + ['g0'] WHERE k = 1")
    globex = sessions["globex"]
    with pytest.raises(InvalidRequest, match=r'List index 1 out of bound, list has size 1"$'):
        globex.execute(f"UPDATE {t} SET l[1] = 'x' WHERE k = 1")
    with pytest.raises(InvalidRequest, match="List index 2 out of bound, list has size 1"):
        globex.execute(f"DELETE l[2] FROM {t} WHERE k = 1")
    with pytest.raises(InvalidRequest, match="list which is null"):
        sessions["guest"].execute(f"UPDATE {t} SET l[0] = 'x' WHERE k = 1")
    # globex's l[0] is its own item; acme's DELETE l[1] takes acme's second.
    globex.execute(f"UPDATE {t} USING VISIBILITY 'globex' SET l[0] = 'g0x' WHERE k = 1")
    sessions["acme"].execute(f"DELETE l[1] FROM {t} WHERE k = 1")
    assert su.execute(f"SELECT l FROM {t} WHERE k = 1").one().l == ["a0", "a2", "g0x"]
    assert sessions["acme"].execute(f"SELECT l FROM {t} WHERE k = 1").one().l == ["a0", "a2"]


def test_indexes_return_only_visible_matches(sessions):
    su, t = sessions["cassandra"], f"idx{sessions['v']}"
    su.execute(f"CREATE TABLE {t} (k int, c int, v int, w text, PRIMARY KEY (k, c)) "
               "WITH visibility = {'enabled': 'true'}")
    su.execute(f"CREATE INDEX ON {t} (v)")
    su.execute(f"CREATE CUSTOM INDEX ON {t} (w) USING 'StorageAttachedIndex'")
    ins = su.prepare(f"INSERT INTO {t} (k, c, v, w) VALUES (?, ?, ?, ?) USING VISIBILITY ?")
    for i in range(30):
        su.execute(ins, (i % 5, i, 7, "x", ["acme", "globex", ""][i % 3]))
    # A row whose indexed cell is hidden from acme, its other cells not.
    su.execute(f"UPDATE {t} USING VISIBILITY 'globex' SET v = 8 WHERE k = 9 AND c = 1")
    su.execute(f"UPDATE {t} USING VISIBILITY 'acme' SET w = 'y' WHERE k = 9 AND c = 1")
    acme, globex, guest = sessions["acme"], sessions["globex"], sessions["guest"]
    for q in (f"SELECT c FROM {t} WHERE v = 7", f"SELECT c FROM {t} WHERE w = 'x'"):
        expect = {"acme": {0, 2}, "globex": {1, 2}, "guest": {2}}
        for role, s in (("acme", acme), ("globex", globex), ("guest", guest)):
            # A small fetch size: pages filled with visible rows only, none twice.
            got = [r.c for r in s.execute(SimpleStatement(q, fetch_size=4))]
            assert len(got) == len(set(got)) == 10 * len(expect[role]), (q, role, got)
            assert {c % 3 for c in got} == expect[role], (q, role)
    assert acme.execute(f"SELECT count(*) FROM {t} WHERE v = 7").one()[0] == 20
    assert guest.execute(f"SELECT count(*) FROM {t} WHERE w = 'x'").one()[0] == 10
    assert keys(acme, f"SELECT k, c FROM {t} WHERE v = 8") == []
    assert keys(globex, f"SELECT k, c, w FROM {t} WHERE v = 8") == [(9, 1, None)]
    assert keys(acme, f"SELECT k, c, v FROM {t} WHERE w = 'y'") == [(9, 1, None)]
    assert keys(globex, f"SELECT k, c FROM {t} WHERE w = 'y'") == []
    su.execute(f"CREATE TABLE vec{sessions['v']} (k int PRIMARY KEY, e vector<float, 2>) "
               "WITH visibility = {'enabled': 'true'}")
    with pytest.raises(InvalidRequest, match="Vector indexes are not supported"):
        su.execute(f"CREATE CUSTOM INDEX ON vec{sessions['v']} (e) USING 'sai'")


def test_views_show_what_the_base_shows(sessions):
    su, v = sessions["cassandra"], sessions["v"]
    t = f"vbase{v}"
    su.execute(f"CREATE TABLE {t} (k int, c int, v int, w text, PRIMARY KEY (k, c)) "
               "WITH visibility = {'enabled': 'true'}")
    su.execute(f"CREATE MATERIALIZED VIEW {t}_by_v AS SELECT k, c, v, w FROM {t} "
               "WHERE k IS NOT NULL AND c IS NOT NULL AND v IS NOT NULL PRIMARY KEY (v, k, c)")
    su.execute(f"CREATE MATERIALIZED VIEW {t}_by_c AS SELECT k, c, v FROM {t} "
               "WHERE k IS NOT NULL AND c IS NOT NULL PRIMARY KEY (c, k)")
    upd = su.prepare(f"UPDATE {t} USING VISIBILITY ? SET v = ?, w = ? WHERE k = 1 AND c = ?")
    su.execute(f"INSERT INTO {t} (k, c, v) VALUES (1, 1, 10) USING VISIBILITY 'acme'")
    su.execute(f"UPDATE {t} USING VISIBILITY 'globex' SET w = 'g' WHERE k = 1 AND c = 1")
    su.execute(upd, ("globex", 20, None, 2))
    su.execute(f"INSERT INTO {t} (k, c, v, w) VALUES (1, 3, 30, 'x')")
    su.execute(f"UPDATE {t} SET v = 40 WHERE k = 1 AND c = 4")
    su.execute(f"UPDATE {t} USING VISIBILITY 'acme' SET w = 'a' WHERE k = 1 AND c = 4")
    by_v = f"SELECT v, c, w FROM {t}_by_v"
    assert keys(sessions["acme"], by_v) == [(10, 1, None), (30, 3, "x"), (40, 4, "a")]
    # globex sees w = 'g' of (1, 1) in the base but not its v: no view row keyed by it.
    assert keys(sessions["globex"], by_v) == [(20, 2, None), (30, 3, "x"), (40, 4, None)]
    assert keys(sessions["guest"], by_v) == [(30, 3, "x"), (40, 4, None)]
    for role in ("acme", "globex", "guest", "cassandra"):
        s = sessions[role]
        assert keys(s, f"SELECT c, v FROM {t}_by_c") == keys(s, f"SELECT c, v FROM {t} WHERE k = 1"), role
    stmt = SimpleStatement(f"SELECT c FROM {t}_by_c", fetch_size=1)
    assert len(list(sessions["guest"].execute(stmt))) == 2
    with pytest.raises(InvalidRequest, match="follows its base table"):
        su.execute(f"ALTER MATERIALIZED VIEW {t}_by_c WITH visibility = {{'enabled': 'true', 'constraint': 'true'}}")


class Visibility(RegisteredTableExtension):
    """How a client prints the option from the driver's metadata (docs/visibility.md)."""
    name = "visibility"

    @classmethod
    def after_table_cql(cls, table_meta, ext_key, ext_blob):
        return "ALTER TABLE %s.%s WITH visibility = %s;" % (
            protect_name(table_meta.keyspace_name), protect_name(table_meta.name),
            ext_blob.decode())


def test_option_in_driver_metadata_round_trips(sessions):
    su, v = sessions["cassandra"], sessions["v"]
    su.execute(f"CREATE TABLE meta{v} (k int PRIMARY KEY, x text) WITH visibility = {{'enabled': 'true', 'constraint': 'true'}}")
    su.execute(f"CREATE TABLE nometa{v} (k int PRIMARY KEY)")
    cluster = su.cluster
    cluster.refresh_schema_metadata()
    tables = cluster.metadata.keyspaces["vb"].tables
    assert tables[f"meta{v}"].extensions == {"visibility": OPTION.encode()}
    assert not tables[f"nometa{v}"].extensions
    dump = tables[f"meta{v}"].export_as_string()
    alter = f"ALTER TABLE vb.meta{v} WITH visibility = {OPTION};"
    assert alter in dump, dump
    # Replayed elsewhere, the dump makes a table that takes labels.
    su.execute(f"CREATE KEYSPACE copy{v} WITH replication = "
               "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    for stmt in dump.replace("vb.", f"copy{v}.").split(";"):
        if stmt.strip():
            su.execute(stmt)
    for role in ("acme", "guest"):
        su.execute(f"GRANT SELECT ON KEYSPACE copy{v} TO {role}")
    su.execute(f"INSERT INTO copy{v}.meta{v} (k, x) VALUES (1, 'a') USING VISIBILITY 'acme'")
    assert sessions["guest"].execute(f"SELECT * FROM copy{v}.meta{v}").one() is None
    assert sessions["acme"].execute(f"SELECT x FROM copy{v}.meta{v}").one().x == "a"
