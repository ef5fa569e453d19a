"""system_views in standalone mode: Cassandra 5.0.9's virtual tables with their columns, live
values of this process (connections, settings, latencies), writes and DDL refused with
Cassandra's messages, and cqlsh reading them. Starts its own peregrine (PEREGRINE_BIN)."""

import json
import os
import subprocess
import time

import pytest
from cassandra import InvalidRequest, Unauthorized
from cassandra.cluster import Cluster

from admin_support import Server

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "system_views_cassandra_5.0.9.json")
YAML = "cluster_name: vtables-test\nrequest_timeout: 7s\nmax_connections: 123\n"


@pytest.fixture(scope="module")
def server():
    s = Server(yaml=YAML, admin=False)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def session(server):
    cluster = Cluster(["127.0.0.1"], port=server.port, protocol_version=5, connect_timeout=10)
    sess = cluster.connect()
    yield sess
    cluster.shutdown()


def wait_for(cond, what, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


def test_tables_and_columns_match_cassandra(session):
    """Every table Cassandra 5.0.9 has (recorded in the fixture) with its comment, columns,
    kinds, positions, clustering order and types."""
    with open(FIXTURE) as f:
        expected = json.load(f)
    ks = [r.keyspace_name for r in session.execute("SELECT * FROM system_virtual_schema.keyspaces")]
    assert "system_views" in ks
    names = {r.table_name for r in session.execute(
        "SELECT table_name FROM system_virtual_schema.tables WHERE keyspace_name = 'system_views'")}
    assert names == set(expected)
    for table, want in expected.items():
        t = list(session.execute(
            "SELECT comment FROM system_virtual_schema.tables WHERE keyspace_name = 'system_views' AND table_name = %s",
            [table]))
        assert t[0].comment == want["comment"], table
        cols = [dict(column_name=r.column_name, clustering_order=r.clustering_order, kind=r.kind,
                     position=r.position, type=r.type)
                for r in session.execute(
                    "SELECT * FROM system_virtual_schema.columns WHERE keyspace_name = 'system_views' AND table_name = %s",
                    [table])]
        assert cols == want["columns"], table
    # Virtual keyspaces are not in system_schema.
    assert not list(session.execute(
        "SELECT * FROM system_schema.keyspaces WHERE keyspace_name = 'system_views'"))


def test_driver_metadata_has_the_tables(session):
    meta = session.cluster.metadata.keyspaces["system_views"]
    assert meta.virtual
    with open(FIXTURE) as f:
        expected = json.load(f)
    assert set(meta.tables) == set(expected)
    clients = meta.tables["clients"]
    assert [c.name for c in clients.partition_key] == ["address"]
    assert [c.name for c in clients.clustering_key] == ["port"]
    assert clients.columns["request_count"].cql_type == "bigint"


def clients_of(session):
    return list(session.execute("SELECT * FROM system_views.clients"))


def test_clients_shows_this_connection_and_a_second_one(server, session):
    rows = clients_of(session)
    assert rows, "no client listed"
    for r in rows:
        assert r.address == "127.0.0.1"
        assert r.driver_name.endswith("Python Driver")
        assert r.driver_version
        assert r.protocol_version == 5
        assert r.connection_stage == "ready"
        assert r.username == "anonymous"
        assert r.ssl_enabled is False and r.ssl_protocol is None
        assert r.client_options["DRIVER_NAME"] == r.driver_name
        assert r.request_count >= 1
    before = {(r.address, r.port) for r in rows}

    other = Cluster(["127.0.0.1"], port=server.port, protocol_version=4, connect_timeout=10)
    s2 = other.connect()
    s2.execute("USE system")
    try:
        def new_rows():
            return [r for r in clients_of(session) if (r.address, r.port) not in before]
        wait_for(lambda: any(r.protocol_version == 4 for r in new_rows()), "the second connection")
        v4 = [r for r in new_rows() if r.protocol_version == 4]
        assert any(r.keyspace_name == "system" for r in v4)
        # WHERE on the partition key and the clustering column.
        port = v4[0].port
        only = list(session.execute(
            "SELECT port, protocol_version FROM system_views.clients WHERE address = '127.0.0.1' AND port = %s",
            [port]))
        assert [(r.port, r.protocol_version) for r in only] == [(port, 4)]
    finally:
        other.shutdown()
    wait_for(lambda: not any(r.protocol_version == 4 for r in clients_of(session)),
             "the second connection to go")


def test_request_count_grows(session):
    def count():
        return max(r.request_count for r in clients_of(session))
    first = count()
    for _ in range(5):
        session.execute("SELECT * FROM system.local")
    assert count() >= first + 5


def test_settings_match_the_config(session):
    s = {r.name: r.value for r in session.execute("SELECT * FROM system_views.settings")}
    assert s["cluster_name"] == "vtables-test"
    assert s["request_timeout"] == "7000ms"
    assert s["native_transport_max_concurrent_connections"] == "123"
    assert s["partitioner"] == "org.apache.cassandra.dht.Murmur3Partitioner"
    one = list(session.execute("SELECT value FROM system_views.settings WHERE name = 'cluster_name'"))
    assert [r.value for r in one] == ["vtables-test"]
    # Filtering on a regular column needs no ALLOW FILTERING, as in Cassandra.
    by_value = list(session.execute("SELECT name FROM system_views.settings WHERE value = 'vtables-test'"))
    assert "cluster_name" in [r.name for r in by_value]


def test_read_latency_counts_reads(session):
    session.execute("CREATE KEYSPACE IF NOT EXISTS vt WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute("CREATE TABLE IF NOT EXISTS vt.t (k int PRIMARY KEY, v int)")
    # Writes are attributed to their table when prepared (unprepared text is not parsed here).
    session.execute(session.prepare("INSERT INTO vt.t (k, v) VALUES (?, ?)"), [1, 1])

    def row(table):
        rows = list(session.execute(
            f"SELECT * FROM system_views.{table} WHERE keyspace_name = 'vt' AND table_name = 't'"))
        assert len(rows) == 1
        return rows[0]
    before = row("local_read_latency").count
    for _ in range(7):
        session.execute("SELECT v FROM vt.t WHERE k = 1")
    after = row("local_read_latency")
    assert after.count == before + 7
    assert after.max_ms >= after.p99th_ms >= after.p50th_ms > 0
    assert row("local_write_latency").count >= 1
    # Every table is listed, measured or not.
    assert row("rows_per_read").count == 0
    assert row("disk_usage").mebibytes == 0


def test_caches_thread_pools_queries(session):
    caches = {r.name: r for r in session.execute("SELECT * FROM system_views.caches")}
    assert set(caches) == {"chunks", "counters", "keys", "rows"}
    assert caches["chunks"].capacity_bytes > 0
    assert caches["rows"].capacity_bytes == 0
    pools = {r.name for r in session.execute("SELECT * FROM system_views.thread_pools")}
    assert "Native-Transport-Requests" in pools
    # The query reading `queries` is itself running.
    tasks = [r.task for r in session.execute("SELECT * FROM system_views.queries")]
    assert any("system_views.queries" in t for t in tasks), tasks
    assert list(session.execute("SELECT * FROM system_views.sstable_tasks")) == []
    props = {r.name for r in session.execute("SELECT * FROM system_views.system_properties")}
    assert "os.name" in props


@pytest.mark.parametrize("stmt,exc,msg", [
    ("INSERT INTO system_views.clients (address, port) VALUES ('127.0.0.1', 1)", InvalidRequest,
     "Modification is not supported by table system_views.clients"),
    ("UPDATE system_views.settings SET value = 'x' WHERE name = 'cluster_name'", InvalidRequest,
     "Modification is not supported by table system_views.settings"),
    ("BEGIN BATCH INSERT INTO system_views.settings (name, value) VALUES ('a', 'b') APPLY BATCH",
     InvalidRequest, "Cannot include a virtual table statement in a logged batch"),
    ("TRUNCATE system_views.clients", InvalidRequest,
     "Truncation is not supported by table system_views.clients"),
    ("DROP TABLE system_views.clients", Unauthorized, "system_views keyspace is not user-modifiable."),
    ("CREATE TABLE system_views.x (a int PRIMARY KEY)", Unauthorized,
     "system_views keyspace is not user-modifiable."),
    ("CREATE KEYSPACE system_views WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
     InvalidRequest, "System keyspace 'system_views' is not user-modifiable"),
])
def test_writes_and_ddl_refused(session, stmt, exc, msg):
    with pytest.raises(exc) as e:
        session.execute(stmt)
    assert msg in str(e.value)


def test_cqlsh_select_and_describe(server, cqlsh_bin):
    base = [cqlsh_bin, "127.0.0.1", str(server.port), "--request-timeout=30", "--connect-timeout=20"]
    p = subprocess.run(base + ["-e", "SELECT * FROM system_views.clients"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "connection_stage" in p.stdout and "ready" in p.stdout
    p = subprocess.run(base + ["-e", "DESCRIBE KEYSPACE system_views"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "VIRTUAL KEYSPACE system_views;" in p.stdout
    assert "VIRTUAL TABLE system_views.clients (" in p.stdout
    assert "PRIMARY KEY (address, port)" in p.stdout
    assert ") WITH CLUSTERING ORDER BY (port ASC)\n    AND comment = 'currently connected clients';" in p.stdout
