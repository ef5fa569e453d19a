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
DESCRIBE_FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures",
                                "system_views_describe_cassandra_5.0.9.txt")
YAML = "cluster_name: vtables-test\nrequest_timeout: 7s\nmax_connections: 123\n"


@pytest.fixture(scope="module")
def server():
    s = Server(yaml=YAML)
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
    """The driver's metadata of every table: column names and types, partition key and
    clustering columns in order, as Cassandra 5.0.9 has them."""
    meta = session.cluster.metadata.keyspaces["system_views"]
    assert meta.virtual
    with open(FIXTURE) as f:
        expected = json.load(f)
    assert len(expected) == 43
    assert set(meta.tables) == set(expected)
    for name, want in expected.items():
        t = meta.tables[name]
        assert {c: col.cql_type for c, col in t.columns.items()} == \
            {c["column_name"]: c["type"] for c in want["columns"]}, name

        def key(kind):
            cols = sorted((c for c in want["columns"] if c["kind"] == kind), key=lambda c: c["position"])
            return [c["column_name"] for c in cols]
        assert [c.name for c in t.partition_key] == key("partition_key"), name
        assert [c.name for c in t.clustering_key] == key("clustering"), name
        assert t.options.get("comment", "") == want["comment"], name


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


def metrics_of(session, table):
    return {r.name: r for r in session.execute(f"SELECT * FROM system_views.{table}")}


def test_cql_metrics_count_statements(session):
    before = {n: r.value for n, r in metrics_of(session, "cql_metrics").items()}
    assert set(before) == {"prepared_statements_count", "prepared_statements_evicted",
                           "prepared_statements_executed", "prepared_statements_ratio",
                           "regular_statements_executed"}
    for _ in range(3):
        session.execute("SELECT * FROM system.local")
    p = session.prepare("SELECT release_version FROM system.local WHERE key = 'local'")
    session.execute(p)
    session.execute(p)
    after = {n: r.value for n, r in metrics_of(session, "cql_metrics").items()}
    # The three SELECTs and the read of cql_metrics before them.
    assert after["regular_statements_executed"] >= before["regular_statements_executed"] + 4
    assert after["prepared_statements_executed"] == before["prepared_statements_executed"] + 2
    assert after["prepared_statements_count"] >= 1
    assert after["prepared_statements_evicted"] == 0
    assert 0 < after["prepared_statements_ratio"] < 1


def test_coordinator_latency_counts_reads_and_writes(session):
    session.execute("CREATE KEYSPACE IF NOT EXISTS vt WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute("CREATE TABLE IF NOT EXISTS vt.c (k int PRIMARY KEY, v int)")

    def row(table):
        rows = list(session.execute(
            f"SELECT * FROM system_views.{table} WHERE keyspace_name = 'vt' AND table_name = 'c'"))
        assert len(rows) == 1, table
        return rows[0]
    reads, writes = row("coordinator_read_latency").count, row("coordinator_write_latency").count
    ins = session.prepare("INSERT INTO vt.c (k, v) VALUES (?, ?)")
    for i in range(4):
        session.execute(ins, [i, i])
    for _ in range(6):
        session.execute("SELECT v FROM vt.c WHERE k = 1")
    r = row("coordinator_read_latency")
    assert r.count == reads + 6
    assert r.max_ms >= r.p99th_ms >= r.p50th_ms > 0
    assert row("coordinator_write_latency").count == writes + 4
    assert row("coordinator_scan_latency").count >= 0
    # Every table is listed in the SSTable tables, with nothing attributed.
    assert row("max_sstable_size").mebibytes == 0
    assert row("max_sstable_duration").max_sstable_duration == 0


def test_batch_metrics_count_partitions(session):
    from cassandra.query import BatchStatement, BatchType
    session.execute("CREATE KEYSPACE IF NOT EXISTS vt WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute("CREATE TABLE IF NOT EXISTS vt.b (k int, c int, PRIMARY KEY (k, c))")
    ins = session.prepare("INSERT INTO vt.b (k, c) VALUES (?, ?)")
    b = BatchStatement(batch_type=BatchType.UNLOGGED)
    # Five partitions, one of them twice.
    for k, c in [(1, 1), (2, 1), (3, 1), (4, 1), (5, 1), (5, 2)]:
        b.add(ins, (k, c))
    session.execute(b)
    m = metrics_of(session, "batch_metrics")
    assert set(m) == {"partitions_per_counter_batch", "partitions_per_logged_batch",
                      "partitions_per_unlogged_batch"}
    assert m["partitions_per_unlogged_batch"].max >= 5
    assert m["partitions_per_unlogged_batch"].p999th >= m["partitions_per_unlogged_batch"].p50th > 0
    session.execute("BEGIN BATCH INSERT INTO vt.b (k, c) VALUES (9, 1); INSERT INTO vt.b (k, c) VALUES (9, 2); APPLY BATCH")
    assert metrics_of(session, "batch_metrics")["partitions_per_logged_batch"].max >= 1


def test_gossip_info_is_the_node(session):
    local = list(session.execute("SELECT host_id, release_version, schema_version, data_center, rack FROM system.local"))[0]

    def gossip():
        rows = list(session.execute("SELECT * FROM system_views.gossip_info"))
        assert len(rows) == 1
        return rows[0]
    g = gossip()
    assert g.address == "127.0.0.1"
    assert g.host_id == str(local.host_id)
    assert g.release_version == local.release_version
    assert g.dc == local.data_center and g.rack == local.rack
    assert g.status.startswith("NORMAL,")
    assert g.rpc_ready == "true"
    assert g.generation > 1_600_000_000
    # The schema can change under other tests: compare with system.local read just before.
    schema = list(session.execute("SELECT schema_version FROM system.local"))[0].schema_version
    assert gossip().schema == str(schema)
    # The heartbeat beats once a second.
    wait_for(lambda: gossip().heartbeat > g.heartbeat, "the heartbeat to move", timeout=5)


def test_sai_column_indexes(session):
    session.execute("CREATE KEYSPACE IF NOT EXISTS vt WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute("CREATE TABLE IF NOT EXISTS vt.s (k int PRIMARY KEY, t text, n int)")
    session.execute("CREATE INDEX IF NOT EXISTS s_t ON vt.s (t) USING 'sai' WITH OPTIONS = {'case_sensitive': 'false'}")
    session.execute("CREATE INDEX IF NOT EXISTS s_n ON vt.s (n) USING 'sai'")
    rows = {r.index_name: r for r in session.execute(
        "SELECT * FROM system_views.sai_column_indexes WHERE keyspace_name = 'vt'")}
    assert rows["s_t"].analyzer == "NonTokenizingAnalyzer{caseSensitive=false, normalized=false, ascii=false}"
    assert rows["s_t"].is_string is True and rows["s_n"].is_string is False
    assert rows["s_n"].analyzer == "NoOpAnalyzer"
    for r in (rows["s_t"], rows["s_n"]):
        assert (r.table_name, r.is_queryable, r.is_building) == ("s", True, False)
    assert rows["s_t"].column_name == "t"
    # Gossip carries the indexes' build status, as Cassandra's (3: built).
    status = json.loads(list(session.execute("SELECT index_status FROM system_views.gossip_info"))[0].index_status)
    assert status["vt"]["s_t"] == 3 and status["vt"]["s_n"] == 3
    # No SSTable-attached index components here (docs/compatibility.md).
    assert list(session.execute("SELECT * FROM system_views.sai_sstable_indexes")) == []


def test_snapshots_lists_the_tables_of_a_snapshot(server, session):
    session.execute("CREATE KEYSPACE IF NOT EXISTS vs WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute("CREATE TABLE IF NOT EXISTS vs.a (k int PRIMARY KEY)")
    session.execute("CREATE TABLE IF NOT EXISTS vs.b (k int PRIMARY KEY)")
    session.execute("INSERT INTO vs.a (k) VALUES (1)")
    assert list(session.execute("SELECT * FROM system_views.snapshots WHERE name = 'vt-snap'")) == []
    rc, out, err = server.nodetool("snapshot", "-t", "vt-snap", "vs")
    assert rc == 0, err
    rows = list(session.execute("SELECT * FROM system_views.snapshots WHERE name = 'vt-snap'"))
    assert [(r.keyspace_name, r.table_name) for r in rows] == [("vs", "a"), ("vs", "b")]
    for r in rows:
        assert r.size_on_disk > 0 and r.true_size == r.size_on_disk
        assert r.ephemeral is False and r.expires_at is None and r.created_at is not None
    rc, out, err = server.nodetool("clearsnapshot", "-t", "vt-snap")
    assert rc == 0, err
    assert list(session.execute("SELECT * FROM system_views.snapshots WHERE name = 'vt-snap'")) == []


EMPTY = ["credentials_cache_keys", "internode_inbound", "internode_outbound",
         "jmx_permissions_cache_keys", "network_permissions_cache_keys", "pending_hints",
         "permissions_cache_keys", "repair_jobs", "repair_participates", "repair_sessions",
         "repair_validations", "repairs", "roles_cache_keys", "sai_sstable_index_segments",
         "streaming", "system_logs"]


@pytest.mark.parametrize("table", EMPTY)
def test_tables_of_what_one_node_never_does_are_empty(session, table):
    assert list(session.execute(f"SELECT * FROM system_views.{table}")) == []


def test_cidr_metrics_rows_as_cassandra_without_cidr_authorizer(session):
    counts = metrics_of(session, "cidr_filtering_metrics_counts")
    assert {n: r.value for n, r in counts.items()} == {"CIDR groups cache reload count": 0}
    lat = metrics_of(session, "cidr_filtering_metrics_latencies")
    assert set(lat) == {"CIDR checks latency (ns)", "CIDR groups cache reload latency (ns)",
                        "Lookup IP in CIDR groups cache latency (ns)"}


def test_cqlsh_reads_every_table(server, cqlsh_bin):
    """cqlsh SELECTs each of the 43 tables (its metadata check and its formatting of every
    column type) and DESCRIBEs the keyspace with Cassandra's text for the new tables."""
    with open(FIXTURE) as f:
        tables = sorted(json.load(f))
    base = [cqlsh_bin, "127.0.0.1", str(server.port), "--request-timeout=30", "--connect-timeout=20"]
    script = "".join(f"SELECT * FROM system_views.{t} LIMIT 3;\n" for t in tables)
    p = subprocess.run(base, input=script, capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr
    assert "rror" not in p.stderr, p.stderr
    assert p.stdout.count("rows)") + p.stdout.count("row)") == len(tables), p.stdout[-3000:]
    p = subprocess.run(base + ["-e", "DESCRIBE KEYSPACE system_views"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("VIRTUAL TABLE system_views.") == len(tables)
    # Byte for byte what cqlsh prints against Cassandra 5.0.9.
    with open(DESCRIBE_FIXTURE) as f:
        assert p.stdout == f.read()
    assert ("    PRIMARY KEY (keyspace_name, index_name, sstable_name, segment_row_id_offset)\n"
            ") WITH CLUSTERING ORDER BY (index_name ASC, sstable_name ASC, segment_row_id_offset ASC)\n"
            "    AND comment = 'SSTable index segment metadata';") in p.stdout
    assert "VIRTUAL TABLE system_views.gossip_info (\n    address inet,\n    port int,\n    dc text," in p.stdout
