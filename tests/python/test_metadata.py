"""cluster.metadata as the driver builds it from system_schema after DDL."""


def _refresh(cluster):
    cluster.refresh_schema_metadata(max_schema_agreement_wait=10)
    return cluster.metadata


def test_keyspace_and_table_visible_after_ddl(cluster, session, ks):
    session.execute("""
        CREATE TABLE events (
            tenant text, day date, seq bigint, ts timestamp, payload blob, tags set<text>,
            attrs map<text, int>, score double, st text static,
            PRIMARY KEY ((tenant, day), seq, ts)
        ) WITH CLUSTERING ORDER BY (seq DESC, ts ASC) AND comment = 'events table'
          AND default_time_to_live = 3600 AND gc_grace_seconds = 3600""")
    md = _refresh(cluster)
    assert ks in md.keyspaces
    ksm = md.keyspaces[ks]
    assert ksm.replication_strategy.__class__.__name__ == "SimpleStrategy"
    assert ksm.durable_writes is True
    t = ksm.tables["events"]
    types = {name: col.cql_type for name, col in t.columns.items()}
    assert types == {
        "tenant": "text", "day": "date", "seq": "bigint", "ts": "timestamp", "payload": "blob",
        "tags": "set<text>", "attrs": "map<text, int>", "score": "double", "st": "text",
    }
    assert [c.name for c in t.partition_key] == ["tenant", "day"]
    assert [c.name for c in t.clustering_key] == ["seq", "ts"]
    assert [c.is_reversed for c in t.clustering_key] == [True, False]
    assert t.columns["st"].is_static
    assert not t.columns["score"].is_static
    assert t.options["comment"] == "events table"
    assert t.options["default_time_to_live"] == 3600
    assert t.options["gc_grace_seconds"] == 3600
    cql = t.export_as_string()
    assert f"CREATE TABLE {ks}.events" in cql
    assert "CLUSTERING ORDER BY (seq DESC, ts ASC)" in cql


def test_alter_and_drop_reflected(cluster, session, ks):
    session.execute("CREATE TABLE a (k int PRIMARY KEY, v int)")
    session.execute("ALTER TABLE a ADD w varint")
    md = _refresh(cluster)
    assert md.keyspaces[ks].tables["a"].columns["w"].cql_type == "varint"
    session.execute("ALTER TABLE a DROP v")
    md = _refresh(cluster)
    assert "v" not in md.keyspaces[ks].tables["a"].columns
    session.execute("DROP TABLE a")
    md = _refresh(cluster)
    assert "a" not in md.keyspaces[ks].tables


def test_network_topology_keyspace_metadata(cluster, session, ks):
    dc = session.execute("SELECT data_center FROM system.local").one().data_center
    name = ks + "_nts"
    session.execute(f"CREATE KEYSPACE {name} WITH replication = {{'class': 'NetworkTopologyStrategy', '{dc}': 1}} "
                    "AND durable_writes = false")
    try:
        md = _refresh(cluster)
        k = md.keyspaces[name]
        assert k.replication_strategy.__class__.__name__ == "NetworkTopologyStrategy"
        assert k.replication_strategy.dc_replication_factors == {dc: 1}
        assert k.durable_writes is False
    finally:
        session.execute(f"DROP KEYSPACE {name}")


def test_system_schema_rows(session, ks):
    session.execute("CREATE TABLE s (k int, c text, v boolean, PRIMARY KEY (k, c))")
    cols = {r.column_name: (r.kind, r.type, r.clustering_order, r.position)
            for r in session.execute("SELECT column_name, kind, type, clustering_order, position "
                                     "FROM system_schema.columns WHERE keyspace_name = %s AND table_name = 's'", (ks,))}
    assert cols == {
        "k": ("partition_key", "int", "none", 0),
        "c": ("clustering", "text", "asc", 0),
        "v": ("regular", "boolean", "none", -1),
    }
    tables = [r.table_name for r in session.execute(
        "SELECT table_name FROM system_schema.tables WHERE keyspace_name = %s", (ks,))]
    assert tables == ["s"]
