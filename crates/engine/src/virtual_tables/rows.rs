//! The rows of each `system_views` table: from the schema (SAI indexes), the node's identity
//! (gossip), and the process's [`LiveData`] (everything that moves).

use super::{EngineFacts, LatencyKind, LiveData, NodeState};
use crate::catalog::{Schema, TableDef};
use crate::index::{IndexDef, Target};
use crate::javafmt::format_uuid;
use crate::system::{row_by_names, NodeInfo};
use proto::request::BatchKind;
use proto::types::{ColumnType, Value};
use std::collections::BTreeMap;

/// The storage (gossip) port `system.local` names.
const STORAGE_PORT: i32 = 7000;

fn text(s: &str) -> Option<Vec<u8>> {
    Some(s.as_bytes().to_vec())
}
fn int(v: i32) -> Option<Vec<u8>> {
    Some(v.to_be_bytes().to_vec())
}
fn bigint(v: i64) -> Option<Vec<u8>> {
    Some(v.to_be_bytes().to_vec())
}
fn double(v: f64) -> Option<Vec<u8>> {
    Some(v.to_be_bytes().to_vec())
}

type Cells<'a> = Vec<(&'a str, Option<Vec<u8>>)>;

fn boolean(v: bool) -> Option<Vec<u8>> {
    Some(vec![v as u8])
}

/// A row of `sai_column_indexes` for the SAI index `idx` of `tb`.
fn sai_column_index<'a>(tb: &'a TableDef, idx: &'a IndexDef) -> Cells<'a> {
    let column = tb.columns.iter().find(|c| c.name == idx.column);
    let ty = column.map(|c| &c.ty);
    let frozen = column.is_some_and(|c| c.cql_type.starts_with("frozen<"));
    // The type of the indexed terms: an element, a key or a value of a collection.
    let term = match (idx.target, ty) {
        (Target::Values, Some(ColumnType::List(e) | ColumnType::Set(e))) => Some(&**e),
        (Target::Values, Some(ColumnType::Map(_, v))) => Some(&**v),
        (Target::Keys, Some(ColumnType::Map(k, _))) => Some(&**k),
        (Target::Keys, Some(ColumnType::Set(e))) => Some(&**e),
        (Target::Simple, t) => t,
        _ => None,
    };
    let textual = matches!(term, Some(ColumnType::Varchar | ColumnType::Ascii));
    // SAI compares these as bytes: strings, booleans, and whole composite values.
    let is_string = textual
        || matches!(
            term,
            Some(
                ColumnType::Boolean
                    | ColumnType::Vector(..)
                    | ColumnType::Tuple(_)
                    | ColumnType::Udt { .. }
            )
        )
        || matches!(idx.target, Target::Entries | Target::Full)
        || (frozen && idx.target == Target::Simple);
    let option = |k: &str| idx.options.get(k).map(|v| v.eq_ignore_ascii_case("true"));
    let analyzed = ["case_sensitive", "normalize", "ascii"]
        .iter()
        .any(|k| idx.options.contains_key(*k));
    let analyzer = if textual && analyzed {
        format!(
            "NonTokenizingAnalyzer{{caseSensitive={}, normalized={}, ascii={}}}",
            option("case_sensitive").unwrap_or(true),
            option("normalize").unwrap_or(false),
            option("ascii").unwrap_or(false),
        )
    } else {
        "NoOpAnalyzer".into()
    };
    vec![
        ("keyspace_name", text(&tb.keyspace)),
        ("index_name", text(&idx.name)),
        ("analyzer", text(&analyzer)),
        ("column_name", text(&idx.column)),
        ("is_building", boolean(!idx.built)),
        ("is_queryable", boolean(idx.built)),
        ("is_string", boolean(is_string)),
        ("table_name", text(&tb.name)),
    ]
}

/// The one row of `gossip_info`: this node's states as gossip would announce them. Its
/// states never change after the start, so their versions are fixed, in Cassandra's order
/// of announcing them; the heartbeat (and the load, refreshed with it) counts on from there.
fn gossip_row<'a>(node: &'a NodeInfo, schema: &Schema, s: NodeState) -> Cells<'a> {
    let status = format!("NORMAL,{}", i64::MIN);
    // Cassandra gossips each index's build status once there is one: 3 when built
    // (BUILD_SUCCEEDED), 1 while building (FULL_REBUILD_STARTED), by keyspace.
    let mut indexes: BTreeMap<&str, serde_json::Map<String, serde_json::Value>> = BTreeMap::new();
    for tb in schema.tables.values() {
        for idx in &tb.indexes {
            indexes
                .entry(tb.keyspace.as_str())
                .or_default()
                .insert(idx.name.clone(), (if idx.built { 3 } else { 1 }).into());
        }
    }
    let index_status = (!indexes.is_empty()).then(|| serde_json::json!(indexes).to_string());
    let heartbeat = 12 + s.heartbeat;
    let addr = node.rpc_address;
    vec![
        ("address", Some(proto::value::to_bytes(&Value::Inet(addr)))),
        ("port", int(STORAGE_PORT)),
        ("dc", text(&node.datacenter)),
        ("dc_version", int(6)),
        ("generation", int(s.generation)),
        ("heartbeat", int(heartbeat)),
        ("host_id", text(&format_uuid(&node.host_id))),
        ("host_id_version", int(2)),
        (
            "hostname",
            text(&if addr.is_loopback() {
                "localhost".to_string()
            } else {
                addr.to_string()
            }),
        ),
        ("index_status", index_status.as_deref().and_then(text)),
        ("index_status_version", index_status.as_ref().and(int(13))),
        ("load", text(&format!("{:.1}", s.load_bytes as f64))),
        ("load_version", int(heartbeat)),
        (
            "native_address_and_port",
            text(&std::net::SocketAddr::new(addr, node.rpc_port).to_string()),
        ),
        ("native_address_and_port_version", int(3)),
        ("net_version", text("12")),
        ("net_version_version", int(1)),
        ("rack", text(&node.rack)),
        ("rack_version", int(7)),
        ("release_version", text(&node.release_version)),
        ("release_version_version", int(5)),
        ("rpc_address", text(&addr.to_string())),
        ("rpc_address_version", int(4)),
        ("rpc_ready", text("true")),
        ("rpc_ready_version", int(12)),
        ("schema", text(&format_uuid(&schema.version))),
        ("schema_version", int(8)),
        ("status", text(&status)),
        ("status_version", int(11)),
        ("status_with_port", text(&status)),
        ("status_with_port_version", int(10)),
        ("tokens_version", int(9)),
    ]
}

/// The rows of the `system_views` table `t`, a value per column in `t`'s column order.
pub(crate) fn rows_of(
    t: &TableDef,
    schema: &Schema,
    node: &NodeInfo,
    live: Option<&dyn LiveData>,
    facts: &EngineFacts,
) -> Vec<Vec<Option<Vec<u8>>>> {
    let mut out = Vec::new();
    let mut push = |pairs: Cells| out.push(row_by_names(t, pairs));
    // What the schema alone says, with or without a provider.
    if t.name == "sai_column_indexes" {
        for tb in schema.tables.values() {
            for idx in tb.indexes.iter().filter(|i| i.is_sai()) {
                push(sai_column_index(tb, idx));
            }
        }
        return out;
    }
    let Some(live) = live else {
        return Vec::new();
    };
    // The tables Cassandra keeps metrics for: every table outside the virtual keyspaces.
    let tables = || {
        schema
            .tables
            .values()
            .filter(|t| !crate::system::VIRTUAL_KEYSPACES.contains(&t.keyspace.as_str()))
    };
    let named = |name: &str, value: &str| -> Cells<'static> {
        vec![("name", text(name)), ("value", text(value))]
    };
    match t.name.as_str() {
        "clients" => {
            for c in live.clients() {
                let options: BTreeMap<&str, &str> = c
                    .client_options
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect();
                let map = Value::Map(
                    options
                        .iter()
                        .map(|(k, v)| {
                            (Value::Varchar(k.to_string()), Value::Varchar(v.to_string()))
                        })
                        .collect(),
                );
                push(vec![
                    (
                        "address",
                        c.address.map(|a| proto::value::to_bytes(&Value::Inet(a))),
                    ),
                    ("port", int(c.port as i32)),
                    ("client_options", Some(proto::value::to_bytes(&map))),
                    ("connection_stage", text(&c.connection_stage)),
                    ("driver_name", c.driver_name.as_deref().and_then(text)),
                    ("driver_version", c.driver_version.as_deref().and_then(text)),
                    ("hostname", text(&c.hostname)),
                    ("keyspace_name", c.keyspace_name.as_deref().and_then(text)),
                    ("protocol_version", int(c.protocol_version)),
                    ("request_count", bigint(c.request_count)),
                    ("ssl_cipher_suite", c.ssl.as_ref().and_then(|s| text(&s.1))),
                    ("ssl_enabled", Some(vec![c.ssl.is_some() as u8])),
                    ("ssl_protocol", c.ssl.as_ref().and_then(|s| text(&s.0))),
                    ("username", text(&c.username)),
                ]);
            }
        }
        "settings" => {
            for (name, value) in live.settings() {
                push(named(&name, &value));
            }
        }
        "system_properties" => {
            for (name, value) in live.system_properties() {
                push(named(&name, &value));
            }
        }
        "caches" => {
            for c in live.caches() {
                // Cassandra divides hits by requests: NaN for a cache never asked.
                let ratio = c.hit_count as f64 / c.request_count as f64;
                push(vec![
                    ("name", text(&c.name)),
                    ("capacity_bytes", bigint(c.capacity_bytes)),
                    ("entry_count", int(c.entry_count)),
                    ("hit_count", bigint(c.hit_count)),
                    ("hit_ratio", double(ratio)),
                    (
                        "recent_hit_rate_per_second",
                        bigint(c.recent_hit_rate_per_second),
                    ),
                    (
                        "recent_request_rate_per_second",
                        bigint(c.recent_request_rate_per_second),
                    ),
                    ("request_count", bigint(c.request_count)),
                    ("size_bytes", bigint(c.size_bytes)),
                ]);
            }
        }
        "thread_pools" => {
            for p in live.thread_pools() {
                push(vec![
                    ("name", text(&p.name)),
                    ("active_tasks", int(p.active_tasks)),
                    ("active_tasks_limit", int(p.active_tasks_limit)),
                    ("blocked_tasks", bigint(p.blocked_tasks)),
                    ("blocked_tasks_all_time", bigint(p.blocked_tasks_all_time)),
                    ("completed_tasks", bigint(p.completed_tasks)),
                    ("pending_tasks", int(p.pending_tasks)),
                ]);
            }
        }
        "queries" => {
            for q in live.queries() {
                push(vec![
                    ("thread_id", text(&q.thread_id)),
                    ("queued_micros", bigint(q.queued_micros)),
                    ("running_micros", bigint(q.running_micros)),
                    ("task", text(&q.task)),
                ]);
            }
        }
        "sstable_tasks" => {
            for s in live.sstable_tasks() {
                let ratio = if s.total == 0 {
                    0.0
                } else {
                    s.progress as f64 / s.total as f64
                };
                push(vec![
                    ("keyspace_name", text(&s.keyspace_name)),
                    ("table_name", text(&s.table_name)),
                    ("task_id", Some(s.task_id.to_vec())),
                    ("completion_ratio", double(ratio)),
                    ("kind", text(&s.kind)),
                    ("progress", bigint(s.progress)),
                    ("sstables", int(s.sstables)),
                    ("total", bigint(s.total)),
                    ("unit", text(&s.unit)),
                ]);
            }
        }
        name @ ("local_read_latency"
        | "local_write_latency"
        | "local_scan_latency"
        | "coordinator_read_latency"
        | "coordinator_write_latency"
        | "coordinator_scan_latency") => {
            let kind = match name {
                "local_read_latency" => LatencyKind::Read,
                "local_write_latency" => LatencyKind::Write,
                "local_scan_latency" => LatencyKind::Scan,
                "coordinator_read_latency" => LatencyKind::CoordinatorRead,
                "coordinator_write_latency" => LatencyKind::CoordinatorWrite,
                _ => LatencyKind::CoordinatorScan,
            };
            for tb in tables() {
                let l = live
                    .latency(kind, &tb.keyspace, &tb.name)
                    .unwrap_or_default();
                push(vec![
                    ("keyspace_name", text(&tb.keyspace)),
                    ("table_name", text(&tb.name)),
                    ("count", bigint(l.count)),
                    ("max_ms", double(l.max_ms)),
                    ("p50th_ms", double(l.p50th_ms)),
                    ("p99th_ms", double(l.p99th_ms)),
                    ("per_second", double(l.per_second)),
                ]);
            }
        }
        name @ ("disk_usage" | "max_partition_size" | "max_sstable_size") => {
            for tb in tables() {
                let (all, largest) = live.table_size(&tb.keyspace, &tb.name).unwrap_or((0, 0));
                // The store's SSTables hold every table's data: none is one table's
                // (docs/compatibility.md), so no table has a largest SSTable.
                let bytes = match name {
                    "disk_usage" => all,
                    "max_partition_size" => largest,
                    _ => 0,
                };
                push(vec![
                    ("keyspace_name", text(&tb.keyspace)),
                    ("table_name", text(&tb.name)),
                    // Cassandra truncates to whole mebibytes.
                    ("mebibytes", bigint((bytes >> 20) as i64)),
                ]);
            }
        }
        // Nothing here counts rows or tombstones per read: every table shows Cassandra's
        // figures for a table not read yet (see docs/compatibility.md).
        "rows_per_read" | "tombstones_per_read" => {
            for tb in tables() {
                push(vec![
                    ("keyspace_name", text(&tb.keyspace)),
                    ("table_name", text(&tb.name)),
                    ("count", bigint(0)),
                    ("max", double(0.0)),
                    ("p50th", double(0.0)),
                    ("p99th", double(0.0)),
                ]);
            }
        }
        "max_sstable_duration" => {
            for tb in tables() {
                push(vec![
                    ("keyspace_name", text(&tb.keyspace)),
                    ("table_name", text(&tb.name)),
                    ("max_sstable_duration", bigint(0)),
                ]);
            }
        }
        "cql_metrics" => {
            let s = live.statements();
            let all = s.prepared + s.regular;
            let ratio = if all == 0 {
                0.0
            } else {
                s.prepared as f64 / all as f64
            };
            for (name, value) in [
                (
                    "prepared_statements_count",
                    facts.prepared_statements as f64,
                ),
                // Prepared statements stay until the process ends: none is evicted.
                ("prepared_statements_evicted", 0.0),
                ("prepared_statements_executed", s.prepared as f64),
                ("prepared_statements_ratio", ratio),
                ("regular_statements_executed", s.regular as f64),
            ] {
                push(vec![("name", text(name)), ("value", double(value))]);
            }
        }
        "batch_metrics" => {
            for (name, kind) in [
                ("partitions_per_counter_batch", BatchKind::Counter),
                ("partitions_per_logged_batch", BatchKind::Logged),
                ("partitions_per_unlogged_batch", BatchKind::Unlogged),
            ] {
                let d = facts.batch_sizes.distribution(kind);
                push(vec![
                    ("name", text(name)),
                    ("max", bigint(d.max)),
                    ("p50th", double(d.p50th)),
                    ("p999th", double(d.p999th)),
                    ("p99th", double(d.p99th)),
                ]);
            }
        }
        // No CIDR authorizer here: Cassandra's rows as it shows them with its CIDR
        // authorizer off (the default), nothing counted.
        "cidr_filtering_metrics_counts" => {
            push(vec![
                ("name", text("CIDR groups cache reload count")),
                ("value", bigint(0)),
            ]);
        }
        "cidr_filtering_metrics_latencies" => {
            for name in [
                "CIDR checks latency (ns)",
                "CIDR groups cache reload latency (ns)",
                "Lookup IP in CIDR groups cache latency (ns)",
            ] {
                push(vec![
                    ("name", text(name)),
                    ("max", double(0.0)),
                    ("p50th", double(0.0)),
                    ("p95th", double(0.0)),
                    ("p999th", double(0.0)),
                    ("p99th", double(0.0)),
                ]);
            }
        }
        "gossip_info" => {
            if let Some(state) = live.node_state() {
                push(gossip_row(node, schema, state));
            }
        }
        "snapshots" => {
            for s in live.snapshots() {
                push(vec![
                    ("name", text(&s.name)),
                    ("keyspace_name", text(&s.keyspace_name)),
                    ("table_name", text(&s.table_name)),
                    ("created_at", s.created_at.and_then(bigint)),
                    ("ephemeral", boolean(false)),
                    ("expires_at", None),
                    ("size_on_disk", bigint(s.size_on_disk)),
                    ("true_size", bigint(s.true_size)),
                ]);
            }
        }
        // What one node that never repaired, streamed, hinted or talked to another node
        // shows; Cassandra's auth caches and per-SSTable SAI components do not exist here,
        // and its log table is empty unless its logging sends lines there (off by default).
        _ => {}
    }
    out
}
