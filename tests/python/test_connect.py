"""Connecting: protocol versions, what drivers read at connect, compression, schema agreement."""

import uuid

import pytest
from cassandra import ProtocolVersion


@pytest.mark.parametrize("version", [3, 4, 5])
def test_connect_with_explicit_protocol_version(make_cluster, version):
    c = make_cluster(protocol_version=version)
    s = c.connect()
    assert c.protocol_version == version
    row = s.execute("SELECT release_version, partitioner FROM system.local").one()
    assert row is not None
    assert row.partitioner == "org.apache.cassandra.dht.Murmur3Partitioner"
    # A round trip that uses the version-specific framing for a value-bearing result.
    rows = list(s.execute("SELECT keyspace_name FROM system_schema.keyspaces"))
    assert "system" in {r.keyspace_name for r in rows}


def test_default_negotiation_reaches_v5(make_cluster):
    c = make_cluster()
    c.connect()
    assert c.protocol_version == ProtocolVersion.V5


def test_system_local_has_what_drivers_read(session):
    row = session.execute("SELECT * FROM system.local").one()
    assert row is not None
    for col in ("key", "cluster_name", "release_version", "data_center", "rack", "partitioner",
                "host_id", "schema_version", "tokens", "cql_version", "native_protocol_version",
                "rpc_address", "broadcast_address", "listen_address"):
        assert hasattr(row, col), f"system.local lacks column {col}"
    assert row.key == "local"
    assert row.release_version.split(".")[0].isdigit() and int(row.release_version.split(".")[0]) >= 4
    assert isinstance(row.host_id, uuid.UUID)
    assert len(row.tokens) >= 1
    for t in row.tokens:
        assert -(2**63) <= int(t) < 2**63


def test_peers_tables_queryable(session):
    # Single node: empty, but both must exist with their columns.
    v2 = session.execute("SELECT peer, peer_port, native_address, native_port, host_id, tokens FROM system.peers_v2")
    assert list(v2) == []
    v1 = session.execute("SELECT peer, rpc_address, host_id, tokens FROM system.peers")
    assert list(v1) == []


def test_cluster_metadata_has_host_and_token_map(cluster, endpoint):
    hosts = cluster.metadata.all_hosts()
    assert len(hosts) == 1
    h = hosts[0]
    assert h.is_up
    assert h.release_version
    tm = cluster.metadata.token_map
    assert tm is not None and len(tm.ring) >= 1
    assert type(tm.ring[0]).__name__ == "Murmur3Token"


@pytest.mark.parametrize("compression,version", [("lz4", 4), ("lz4", 5), ("snappy", 4)])
def test_compression(make_cluster, compression, version):
    c = make_cluster(compression=compression, protocol_version=version)
    s = c.connect()
    conn = c.control_connection._connection
    assert conn._compression_type == compression
    assert conn.compressor is not None
    name = "t_" + uuid.uuid4().hex[:12]
    s.execute(f"CREATE KEYSPACE {name} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}")
    try:
        s.execute(f"CREATE TABLE {name}.t (k int PRIMARY KEY, v text)")
        big = "compressible " * 5000  # > 64 KiB: several segments in v5, one large frame in v4
        ins = s.prepare(f"INSERT INTO {name}.t (k, v) VALUES (?, ?)")
        for k in range(20):
            s.execute(ins, (k, big + str(k)))
        rows = sorted(s.execute(f"SELECT k, v FROM {name}.t"), key=lambda r: r.k)
        assert [r.k for r in rows] == list(range(20))
        assert all(r.v == big + str(r.k) for r in rows)
    finally:
        s.execute(f"DROP KEYSPACE {name}")


def test_schema_agreement(cluster, session, ks):
    rs = session.execute("CREATE TABLE agree (k int PRIMARY KEY, v int)")
    assert rs.response_future.is_schema_agreed
    assert cluster.control_connection.wait_for_schema_agreement(wait_time=10)
    versions = {r.schema_version for r in session.execute("SELECT schema_version FROM system.local")}
    assert len(versions) == 1 and isinstance(next(iter(versions)), uuid.UUID)


def test_schema_version_changes_with_ddl(session, ks):
    before = session.execute("SELECT schema_version FROM system.local").one().schema_version
    session.execute("CREATE TABLE sv (k int PRIMARY KEY)")
    after = session.execute("SELECT schema_version FROM system.local").one().schema_version
    assert before != after


def test_use_keyspace_and_connect_to_keyspace(make_cluster, session, ks):
    session.execute("CREATE TABLE u (k int PRIMARY KEY, v int)")
    session.execute("INSERT INTO u (k, v) VALUES (1, 10)")
    c = make_cluster(protocol_version=4)
    s = c.connect(ks)
    assert s.keyspace == ks
    assert s.execute("SELECT v FROM u WHERE k = 1").one().v == 10
    s2 = c.connect()
    s2.execute(f"USE {ks}")
    assert s2.keyspace == ks
    assert s2.execute("SELECT v FROM u WHERE k = 1").one().v == 10
