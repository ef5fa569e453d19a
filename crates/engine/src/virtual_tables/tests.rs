//! Unit tests of `system_views`: layouts, rows from a fake [`LiveData`], refusals.

use super::*;
use crate::tests::{engine, q, values};
use proto::types::Value as V;
use std::collections::BTreeMap;
use std::sync::Arc;

struct Fake;
impl LiveData for Fake {
    fn clients(&self) -> Vec<ClientRow> {
        vec![ClientRow {
            address: Some([127, 0, 0, 1].into()),
            port: 4242,
            connection_stage: "ready".into(),
            driver_name: Some("d".into()),
            protocol_version: 5,
            request_count: 3,
            username: "anonymous".into(),
            ..Default::default()
        }]
    }
    fn settings(&self) -> Vec<(String, String)> {
        vec![
            ("cluster_name".into(), "c".into()),
            ("x".into(), "y".into()),
        ]
    }
    fn system_properties(&self) -> Vec<(String, String)> {
        Vec::new()
    }
    fn caches(&self) -> Vec<CacheRow> {
        vec![CacheRow {
            name: "rows".into(),
            ..Default::default()
        }]
    }
    fn thread_pools(&self) -> Vec<ThreadPoolRow> {
        Vec::new()
    }
    fn queries(&self) -> Vec<QueryRow> {
        Vec::new()
    }
    fn sstable_tasks(&self) -> Vec<SstableTaskRow> {
        Vec::new()
    }
    fn latency(&self, kind: LatencyKind, ks: &str, t: &str) -> Option<Latency> {
        (kind == LatencyKind::Read && ks == "k" && t == "t").then_some(Latency {
            count: 9,
            p50th_ms: 0.1,
            p99th_ms: 0.5,
            max_ms: 1.0,
            per_second: 0.0,
        })
    }
    fn table_size(&self, _: &str, _: &str) -> Option<(u64, u64)> {
        Some((3 << 20, 1 << 20))
    }
    fn statements(&self) -> StatementCounts {
        StatementCounts {
            prepared: 1,
            regular: 3,
        }
    }
    fn node_state(&self) -> Option<NodeState> {
        Some(NodeState {
            generation: 1_700_000_000,
            heartbeat: 5,
            load_bytes: 1234,
        })
    }
    fn snapshots(&self) -> Vec<SnapshotRow> {
        vec![SnapshotRow {
            name: "s1".into(),
            keyspace_name: "k".into(),
            table_name: "t".into(),
            created_at: Some(1_700_000_000_000),
            size_on_disk: 10,
            true_size: 10,
        }]
    }
}

fn live_engine() -> crate::Engine {
    let e = engine();
    e.set_live_data(Arc::new(Fake));
    q(
        &e,
        None,
        "CREATE KEYSPACE k WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
    )
    .unwrap();
    q(&e, None, "CREATE TABLE k.t (a int PRIMARY KEY)").unwrap();
    e
}

#[test]
fn rows_come_from_the_live_data() {
    let e = live_engine();
    let (rows, _) = values(q(&e, None, "SELECT port, driver_name, request_count FROM system_views.clients WHERE address = '127.0.0.1'").unwrap());
    assert_eq!(
        rows,
        vec![vec![V::Int(4242), V::Varchar("d".into()), V::Bigint(3)]]
    );
    let (rows, _) = values(
        q(
            &e,
            None,
            "SELECT value FROM system_views.settings WHERE name = 'x'",
        )
        .unwrap(),
    );
    assert_eq!(rows, vec![vec![V::Varchar("y".into())]]);
    let (rows, _) = values(q(&e, None, "SELECT count, max_ms FROM system_views.local_read_latency WHERE keyspace_name = 'k' AND table_name = 't'").unwrap());
    assert_eq!(rows, vec![vec![V::Bigint(9), V::Double(1.0)]]);
    let (rows, _) = values(q(&e, None, "SELECT mebibytes FROM system_views.disk_usage WHERE keyspace_name = 'k' AND table_name = 't'").unwrap());
    assert_eq!(rows, vec![vec![V::Bigint(3)]]);
    // A cache never asked has a NaN hit ratio, as Cassandra's.
    let (rows, _) = values(q(&e, None, "SELECT hit_ratio FROM system_views.caches").unwrap());
    assert!(matches!(rows[0][0], V::Double(r) if r.is_nan()));
}

#[test]
fn filtering_is_implicit_and_limit_applies() {
    let e = live_engine();
    let (rows, _) = values(
        q(
            &e,
            None,
            "SELECT name FROM system_views.settings WHERE value = 'c'",
        )
        .unwrap(),
    );
    assert_eq!(rows, vec![vec![V::Varchar("cluster_name".into())]]);
    let (rows, _) = values(q(&e, None, "SELECT name FROM system_views.settings LIMIT 1").unwrap());
    assert_eq!(rows.len(), 1);
}

#[test]
fn without_live_data_the_tables_are_empty() {
    let e = engine();
    let (rows, _) = values(q(&e, None, "SELECT * FROM system_views.clients").unwrap());
    assert!(rows.is_empty());
}

#[test]
fn writes_and_truncate_are_refused_with_cassandras_messages() {
    let e = live_engine();
    let err = q(
        &e,
        None,
        "INSERT INTO system_views.settings (name, value) VALUES ('a', 'b')",
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Modification is not supported by table system_views.settings"
    );
    let err = q(
        &e,
        None,
        "BEGIN BATCH DELETE FROM system_views.settings WHERE name = 'a'; APPLY BATCH",
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Cannot include a virtual table statement in a logged batch"
    );
    let err = q(&e, None, "TRUNCATE system_views.clients").unwrap_err();
    assert_eq!(
        err.to_string(),
        "Truncation is not supported by table system_views.clients"
    );
    let err = q(&e, None, "DROP TABLE system_views.clients").unwrap_err();
    assert_eq!(
        err.to_string(),
        "system_views keyspace is not user-modifiable."
    );
}

#[test]
fn describe_shows_the_commented_structure() {
    let e = engine();
    let schema = e.schema();
    let t = schema.table("system_views", "sstable_tasks").unwrap();
    let text = crate::system::describe_table(t);
    assert!(text.starts_with("/*\nWarning: Table system_views.sstable_tasks is a virtual table"));
    assert!(text.contains("    PRIMARY KEY (keyspace_name, table_name, task_id)\n) WITH CLUSTERING ORDER BY (table_name ASC, task_id ASC)\n    AND comment = 'current sstable tasks';\n*/"));
}

/// Cassandra 5.0.9's own listing of `system_virtual_schema` for `system_views`, captured
/// from a running 5.0.9 (the Python tests check the same file through the driver).
const FIXTURE: &str =
    include_str!("../../../../tests/python/fixtures/system_views_cassandra_5.0.9.json");

#[test]
fn every_table_has_cassandras_columns_types_and_comment() {
    let e = engine();
    let want: serde_json::Value = serde_json::from_str(FIXTURE).unwrap();
    let want = want.as_object().unwrap();
    let (names, _) = values(q(&e, None, "SELECT table_name, comment FROM system_virtual_schema.tables WHERE keyspace_name = 'system_views'").unwrap());
    assert_eq!(names.len(), want.len());
    assert_eq!(want.len(), 43);
    for row in names {
        let (V::Varchar(name), V::Varchar(comment)) = (&row[0], &row[1]) else {
            panic!("{row:?}")
        };
        let table = &want[name.as_str()];
        assert_eq!(table["comment"], comment.as_str(), "{name}");
        let (cols, _) = values(q(&e, None, &format!("SELECT column_name, clustering_order, kind, position, type FROM system_virtual_schema.columns WHERE keyspace_name = 'system_views' AND table_name = '{name}'")).unwrap());
        let got: Vec<serde_json::Value> = cols
            .iter()
            .map(|c| match &c[..] {
                [V::Varchar(n), V::Varchar(o), V::Varchar(k), V::Int(p), V::Varchar(t)] => {
                    serde_json::json!({"column_name": n, "clustering_order": o, "kind": k, "position": p, "type": t})
                }
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(&serde_json::Value::Array(got), &table["columns"], "{name}");
    }
}

#[test]
fn engine_counts_fill_cql_and_batch_metrics() {
    let e = live_engine();
    q(&e, None, "CREATE TABLE k.c (a int PRIMARY KEY, n counter)").unwrap();
    e.prepare("SELECT a FROM k.t", None, crate::tests::at(1000))
        .unwrap();
    let (rows, _) =
        values(q(&e, None, "SELECT name, value FROM system_views.cql_metrics").unwrap());
    let m: BTreeMap<String, f64> = rows
        .into_iter()
        .map(|r| match &r[..] {
            [V::Varchar(n), V::Double(v)] => (n.clone(), *v),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(m["prepared_statements_count"], 1.0);
    assert_eq!(m["prepared_statements_executed"], 1.0);
    assert_eq!(m["regular_statements_executed"], 3.0);
    assert_eq!(m["prepared_statements_ratio"], 0.25);
    assert_eq!(m["prepared_statements_evicted"], 0.0);
    // Three partitions (two rows of a=1 are one), one logged batch of one partition, a
    // counter batch of two; a conditional batch is not counted, as in Cassandra.
    q(&e, None, "BEGIN UNLOGGED BATCH INSERT INTO k.t (a) VALUES (1); INSERT INTO k.t (a) VALUES (2); INSERT INTO k.t (a) VALUES (3); DELETE FROM k.t WHERE a = 1; APPLY BATCH").unwrap();
    q(
        &e,
        None,
        "BEGIN BATCH INSERT INTO k.t (a) VALUES (4); APPLY BATCH",
    )
    .unwrap();
    q(
        &e,
        None,
        "BEGIN BATCH INSERT INTO k.t (a) VALUES (5) IF NOT EXISTS; APPLY BATCH",
    )
    .unwrap();
    q(&e, None, "BEGIN COUNTER BATCH UPDATE k.c SET n = n + 1 WHERE a = 1; UPDATE k.c SET n = n + 1 WHERE a = 2; APPLY BATCH").unwrap();
    let (mut rows, _) = values(
        q(
            &e,
            None,
            "SELECT name, max, p50th, p99th, p999th FROM system_views.batch_metrics",
        )
        .unwrap(),
    );
    // Rows come in token order (docs/compatibility.md).
    rows.sort_by_key(|r| format!("{:?}", r[0]));
    assert_eq!(
        rows,
        vec![
            vec![
                V::Varchar("partitions_per_counter_batch".into()),
                V::Bigint(2),
                V::Double(2.0),
                V::Double(2.0),
                V::Double(2.0)
            ],
            vec![
                V::Varchar("partitions_per_logged_batch".into()),
                V::Bigint(1),
                V::Double(1.0),
                V::Double(1.0),
                V::Double(1.0)
            ],
            vec![
                V::Varchar("partitions_per_unlogged_batch".into()),
                V::Bigint(3),
                V::Double(3.0),
                V::Double(3.0),
                V::Double(3.0)
            ],
        ]
    );
}

#[test]
fn sai_column_indexes_describe_the_sai_indexes() {
    let e = live_engine();
    q(&e, None, "CREATE TABLE k.w (a int PRIMARY KEY, t text, n text, c int, m map<text, int>, l list<text>, b boolean, v vector<float, 2>, f frozen<set<int>>, s int)").unwrap();
    for stmt in [
        "CREATE INDEX w_t ON k.w (t) USING 'sai'",
        "CREATE INDEX w_n ON k.w (n) USING 'sai' WITH OPTIONS = {'case_sensitive': 'false'}",
        "CREATE INDEX w_c ON k.w (c) USING 'sai'",
        "CREATE INDEX w_mv ON k.w (values(m)) USING 'sai'",
        "CREATE INDEX w_mk ON k.w (keys(m)) USING 'sai'",
        "CREATE INDEX w_l ON k.w (l) USING 'sai'",
        "CREATE INDEX w_b ON k.w (b) USING 'sai'",
        "CREATE INDEX w_v ON k.w (v) USING 'sai'",
        "CREATE INDEX w_f ON k.w (full(f)) USING 'sai'",
        // A legacy secondary index is not an SAI index.
        "CREATE INDEX w_s ON k.w (s)",
    ] {
        q(&e, None, stmt).unwrap();
    }
    let (rows, _) = values(q(&e, None, "SELECT index_name, analyzer, column_name, is_building, is_queryable, is_string, table_name FROM system_views.sai_column_indexes WHERE keyspace_name = 'k'").unwrap());
    let got: Vec<(String, String, bool)> = rows
        .iter()
        .map(|r| match &r[..] {
            [V::Varchar(i), V::Varchar(a), V::Varchar(_), V::Boolean(false), V::Boolean(true), V::Boolean(s), V::Varchar(t)] if t == "w" => (i.clone(), a.clone(), *s),
            other => panic!("{other:?}"),
        })
        .collect();
    let noop = |i: &str, s: bool| (i.to_string(), "NoOpAnalyzer".to_string(), s);
    // What Cassandra 5.0.9 shows for the same indexes.
    assert_eq!(
        got,
        vec![
            noop("w_b", true),
            noop("w_c", false),
            noop("w_f", true),
            noop("w_l", true),
            noop("w_mk", true),
            noop("w_mv", false),
            (
                "w_n".into(),
                "NonTokenizingAnalyzer{caseSensitive=false, normalized=false, ascii=false}".into(),
                true
            ),
            noop("w_t", true),
            noop("w_v", true),
        ]
    );
}

#[test]
fn gossip_info_is_this_node() {
    let e = live_engine();
    let (rows, _) = values(q(&e, None, "SELECT address, port, dc, rack, host_id, generation, heartbeat, load, native_address_and_port, release_version, status, rpc_ready, x1 FROM system_views.gossip_info").unwrap());
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert_eq!(r[0], V::Inet([127, 0, 0, 1].into()));
    assert_eq!(r[1], V::Int(7000));
    assert_eq!(r[2], V::Varchar("datacenter1".into()));
    assert_eq!(r[3], V::Varchar("rack1".into()));
    let (local, _) = values(q(&e, None, "SELECT host_id FROM system.local").unwrap());
    let V::Uuid(host_id) = local[0][0] else {
        panic!("{local:?}")
    };
    assert_eq!(r[4], V::Varchar(crate::javafmt::format_uuid(&host_id)));
    assert_eq!(r[5], V::Int(1_700_000_000));
    assert_eq!(r[6], V::Int(17));
    assert_eq!(r[7], V::Varchar("1234.0".into()));
    assert_eq!(r[8], V::Varchar("127.0.0.1:9042".into()));
    assert_eq!(r[9], V::Varchar("5.0.9".into()));
    assert_eq!(r[10], V::Varchar("NORMAL,-9223372036854775808".into()));
    assert_eq!(r[11], V::Varchar("true".into()));
    assert_eq!(r[12], V::Null);
    let status = || {
        let (rows, _) = values(
            q(
                &e,
                None,
                "SELECT index_status FROM system_views.gossip_info",
            )
            .unwrap(),
        );
        rows[0][0].clone()
    };
    assert_eq!(status(), V::Null);
    q(&e, None, "CREATE TABLE k.i (a int PRIMARY KEY, b int)").unwrap();
    q(&e, None, "CREATE INDEX i_b ON k.i (b)").unwrap();
    assert_eq!(status(), V::Varchar(r#"{"k":{"i_b":3}}"#.into()));
}

#[test]
fn coordinator_latency_snapshots_and_constant_tables() {
    let e = live_engine();
    let (rows, _) = values(q(&e, None, "SELECT count, max_ms FROM system_views.coordinator_read_latency WHERE keyspace_name = 'k' AND table_name = 't'").unwrap());
    // The fake measures only local reads.
    assert_eq!(rows, vec![vec![V::Bigint(0), V::Double(0.0)]]);
    let (rows, _) = values(q(&e, None, "SELECT name, keyspace_name, table_name, ephemeral, size_on_disk, created_at FROM system_views.snapshots").unwrap());
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0][0], V::Varchar("s1".into()));
    assert_eq!(rows[0][3], V::Boolean(false));
    assert_eq!(rows[0][5], V::Timestamp(1_700_000_000_000));
    let (rows, _) = values(
        q(
            &e,
            None,
            "SELECT name FROM system_views.cidr_filtering_metrics_latencies",
        )
        .unwrap(),
    );
    assert_eq!(rows.len(), 3);
    let (rows, _) = values(q(&e, None, "SELECT max_sstable_duration FROM system_views.max_sstable_duration WHERE keyspace_name = 'k' AND table_name = 't'").unwrap());
    assert_eq!(rows, vec![vec![V::Bigint(0)]]);
    for empty in [
        "credentials_cache_keys",
        "internode_inbound",
        "internode_outbound",
        "pending_hints",
        "repairs",
        "repair_jobs",
        "repair_sessions",
        "repair_participates",
        "repair_validations",
        "streaming",
        "system_logs",
        "sai_sstable_indexes",
        "sai_sstable_index_segments",
    ] {
        let (rows, _) =
            values(q(&e, None, &format!("SELECT * FROM system_views.{empty}")).unwrap());
        assert!(rows.is_empty(), "{empty}");
    }
}

#[test]
fn describe_orders_clustering_columns_as_cassandra() {
    let e = engine();
    let schema = e.schema();
    let t = schema
        .table("system_views", "sai_sstable_index_segments")
        .unwrap();
    let text = crate::system::describe_table(t);
    assert!(text.contains("VIRTUAL TABLE system_views.sai_sstable_index_segments (\n    keyspace_name text,\n    index_name text,\n    sstable_name text,\n    segment_row_id_offset bigint,\n    cell_count bigint,"), "{text}");
    assert!(text.contains("    PRIMARY KEY (keyspace_name, index_name, sstable_name, segment_row_id_offset)\n) WITH CLUSTERING ORDER BY (index_name ASC, sstable_name ASC, segment_row_id_offset ASC)\n    AND comment = 'SSTable index segment metadata';"), "{text}");
}
