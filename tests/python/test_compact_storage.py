"""COMPACT STORAGE tables through the Python driver and cqlsh (issue 9 item 5).

What Cassandra 5.0.9 answers (checked there), asserted here against Peregrine:
- with the default configuration, `CREATE TABLE ... WITH COMPACT STORAGE` works and
  `ALTER TABLE ... DROP COMPACT STORAGE` is refused (`drop_compact_storage_enabled` off);
- on a server started here with `drop_compact_storage_enabled: true`, over protocol v4 and v5:
  - dense, dense-without-value and static tables take writes and read back, paged, with no
    row marker (a dense row goes with its value, a static one with its last cell);
  - the driver's metadata shows the declared columns only and `WITH COMPACT STORAGE`;
  - cqlsh's DESCRIBE prints the table inside Cassandra's "omitted" comment;
  - tables and rows survive a restart; DROP COMPACT STORAGE then makes the hidden columns
    (`column1`, `value`) real and the rows keep reading.
"""

import signal
import subprocess

import pytest
from cassandra.cluster import Cluster
from cassandra.query import SimpleStatement

from test_indexes import own_server_lifetime

DENSE = "CREATE TABLE {ks}.d (k int, c int, v text, PRIMARY KEY (k, c)) WITH COMPACT STORAGE"
STATIC = "CREATE TABLE {ks}.s (k int PRIMARY KEY, a int, b text) WITH COMPACT STORAGE"
EMPTY = "CREATE TABLE {ks}.e (k int, c int, PRIMARY KEY (k, c)) WITH COMPACT STORAGE"


def test_drop_compact_storage_is_disabled_by_default(session, ks):
    session.execute(DENSE.format(ks=ks))
    session.execute(f"INSERT INTO {ks}.d (k, c, v) VALUES (1, 1, 'a')")
    assert [tuple(r) for r in session.execute(f"SELECT * FROM {ks}.d")] == [(1, 1, "a")]
    with pytest.raises(Exception, match=r"DROP COMPACT STORAGE is disabled\. Enable in cassandra\.yaml to use\."):
        session.execute(f"ALTER TABLE {ks}.d DROP COMPACT STORAGE")


@pytest.fixture(scope="module")
def server():
    yield from own_server_lifetime("peregrine-compact-", "drop_compact_storage_enabled: true\n", start=True)


def connect(server, version):
    c = Cluster(["127.0.0.1"], port=server.port, protocol_version=version, connect_timeout=10)
    return c, c.connect()


def restart(server):
    """A clean stop and start; a new client of the restarted server."""
    server.stop(signal.SIGTERM)
    server.start()
    return connect(server, 4)


def paged(session, query, fetch_size):
    rs = session.execute(SimpleStatement(query, fetch_size=fetch_size))
    return [tuple(r) for r in rs]


@pytest.mark.parametrize("version", [4, 5])
def test_compact_tables_write_read_and_metadata(server, version):
    c, s = connect(server, version)
    ks = f"c{version}"
    try:
        s.execute(f"CREATE KEYSPACE {ks} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}")
        for ddl in (DENSE, STATIC, EMPTY):
            s.execute(ddl.format(ks=ks))
        ins_d = s.prepare(f"INSERT INTO {ks}.d (k, c, v) VALUES (?, ?, ?)")
        ins_s = s.prepare(f"INSERT INTO {ks}.s (k, a, b) VALUES (?, ?, ?)")
        ins_e = s.prepare(f"INSERT INTO {ks}.e (k, c) VALUES (?, ?)")
        for k in range(20):
            for cl in range(5):
                s.execute(ins_d, (k, cl, f"v{k}.{cl}"))
                s.execute(ins_e, (k, cl))
            s.execute(ins_s, (k, k * 10, f"b{k}"))
        want_d = sorted((k, cl, f"v{k}.{cl}") for k in range(20) for cl in range(5))
        for fetch in (3, 7, 1000):
            assert sorted(paged(s, f"SELECT * FROM {ks}.d", fetch)) == want_d
            assert sorted(paged(s, f"SELECT * FROM {ks}.e", fetch)) == sorted((k, cl) for k in range(20) for cl in range(5))
            assert sorted(paged(s, f"SELECT * FROM {ks}.s", fetch)) == sorted((k, k * 10, f"b{k}") for k in range(20))

        # No row marker: a dense row goes with its value, a static row with its last cell.
        s.execute(f"UPDATE {ks}.d SET v = null WHERE k = 0 AND c = 0")
        s.execute(f"DELETE v FROM {ks}.d WHERE k = 0 AND c = 1")
        assert paged(s, f"SELECT c FROM {ks}.d WHERE k = 0", 2) == [(2,), (3,), (4,)]
        s.execute(f"DELETE a, b FROM {ks}.s WHERE k = 0")
        s.execute(f"UPDATE {ks}.s SET a = null WHERE k = 1")
        assert paged(s, f"SELECT * FROM {ks}.s WHERE k IN (0, 1)", 10) == [(1, None, "b1")]
        with pytest.raises(Exception, match="Column v is mandatory for this COMPACT STORAGE table"):
            s.execute(f"INSERT INTO {ks}.d (k, c) VALUES (0, 9)")
        with pytest.raises(Exception, match="Some clustering keys are missing: column1"):
            s.execute(f"INSERT INTO {ks}.s (k) VALUES (99)")

        c.refresh_schema_metadata()
        tables = c.metadata.keyspaces[ks].tables
        assert list(tables["d"].columns) == ["k", "c", "v"]
        assert list(tables["s"].columns) == ["k", "a", "b"]
        assert [col.name for col in tables["s"].clustering_key] == []
        assert not any(col.is_static for col in tables["s"].columns.values())
        assert list(tables["e"].columns) == ["k", "c"]
        for t in ("d", "s", "e"):
            assert ") WITH COMPACT STORAGE" in tables[t].export_as_string()
        flags = {r.table_name: set(r.flags) for r in s.execute(
            "SELECT table_name, flags FROM system_schema.tables WHERE keyspace_name = %s", (ks,))}
        assert flags == {"d": {"dense"}, "e": {"dense"}, "s": set()}
    finally:
        c.shutdown()


def test_describe_through_cqlsh(server, cqlsh_bin):
    c, s = connect(server, 4)
    try:
        s.execute("CREATE KEYSPACE dsc WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute(STATIC.format(ks="dsc"))
    finally:
        c.shutdown()
    out = subprocess.run([cqlsh_bin, "127.0.0.1", str(server.port), "-e", "DESCRIBE TABLE dsc.s"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "Warning: Table dsc.s omitted because it has constructs not compatible with CQL (was created via legacy API)." in text
    assert "CREATE TABLE dsc.s (\n    k int,\n    a int,\n    b text,\n    PRIMARY KEY (k)\n) WITH COMPACT STORAGE\n    AND CLUSTERING ORDER BY (column1 ASC)\n" in text
    assert text.rstrip().endswith("*/")


def test_restart_then_drop_compact_storage(server):
    c, s = connect(server, 4)
    try:
        s.execute("CREATE KEYSPACE r WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        for ddl in (DENSE, STATIC, EMPTY):
            s.execute(ddl.format(ks="r"))
        s.execute("INSERT INTO r.d (k, c, v) VALUES (1, 1, 'a')")
        s.execute("INSERT INTO r.s (k, a, b) VALUES (1, 1, 'x')")
        s.execute("INSERT INTO r.s (k, a) VALUES (2, 2)")
        s.execute("INSERT INTO r.e (k, c) VALUES (1, 1)")
    finally:
        c.shutdown()
    c, s = restart(server)
    try:
        assert [tuple(r) for r in s.execute("SELECT * FROM r.s")] == [(1, 1, "x"), (2, 2, None)]
        with pytest.raises(Exception, match="Cannot add new column to a COMPACT STORAGE table"):
            s.execute("ALTER TABLE r.d ADD w int")
        for t in ("d", "s", "e"):
            s.execute(f"ALTER TABLE r.{t} DROP COMPACT STORAGE")
        with pytest.raises(Exception, match="Cannot DROP COMPACT STORAGE on table without COMPACT STORAGE"):
            s.execute("ALTER TABLE r.s DROP COMPACT STORAGE")
        # As Cassandra 5.0.9 answers after DROP COMPACT STORAGE.
        rs = s.execute("SELECT * FROM r.s")
        assert rs.column_names == ["k", "column1", "a", "b", "value"]
        assert [tuple(r) for r in rs] == [(1, None, 1, "x", None), (2, None, 2, None, None)]
        rs = s.execute("SELECT * FROM r.e")
        assert rs.column_names == ["k", "c", "value"]
        assert [tuple(r) for r in rs] == [(1, 1, None)]
        s.execute("INSERT INTO r.d (k, c) VALUES (1, 3)")
        assert [tuple(r) for r in s.execute("SELECT * FROM r.d")] == [(1, 1, "a"), (1, 3, None)]
        s.execute("INSERT INTO r.s (k, column1, value, a) VALUES (1, 'x', 0x01, 5)")
        assert [tuple(r) for r in s.execute("SELECT * FROM r.s WHERE k = 1")] == [(1, "x", 5, "x", b"\x01")]
        s.execute("ALTER TABLE r.d ADD w int")
        kinds = {(r.table_name, r.column_name): (r.kind, r.type) for r in s.execute(
            "SELECT table_name, column_name, kind, type FROM system_schema.columns WHERE keyspace_name = 'r'")}
        assert kinds[("s", "column1")] == ("clustering", "text")
        assert kinds[("s", "a")] == ("static", "int")
        assert kinds[("e", "value")] == ("regular", "empty")
        c.refresh_schema_metadata()
        assert "COMPACT STORAGE" not in c.metadata.keyspaces["r"].tables["s"].export_as_string()
    finally:
        c.shutdown()
    c, s = restart(server)
    try:
        assert [tuple(r) for r in s.execute("SELECT * FROM r.e")] == [(1, 1, None)]
        assert [tuple(r) for r in s.execute("SELECT k, column1, a FROM r.s")] == [(1, "x", 5), (2, None, 2)]
    finally:
        c.shutdown()
