//! The `system_views` keyspace: Cassandra 5.0's virtual tables that mean something on one
//! Peregrine node (`clients`, `settings`, `caches`, `thread_pools`, `sstable_tasks`,
//! `disk_usage`, `local_*_latency`, `max_partition_size`, `rows_per_read`,
//! `tombstones_per_read`, `system_properties`, `queries`), with Cassandra 5.0.9's columns,
//! types, keys and comments.
//!
//! The engine knows no sockets, clocks or process state, so the rows' live values come from a
//! [`LiveData`] the embedding process hands to [`crate::Engine::set_live_data`] (the `local`
//! crate's backend: connections, configuration, metrics). Each SELECT asks it for one table's
//! rows and reads them with the ordinary SELECT executor (see `system::materialize`), so
//! WHERE, LIMIT and paging behave as on any table. Without a provider the tables are empty.
//!
//! **Not here:** Cassandra's other `system_views` tables (repairs, streaming, gossip, SAI
//! segments, ...) that describe a cluster or features this node does not have.

use crate::catalog::{Schema, TableDef};
use crate::system::row_by_names;
use proto::types::Value;
use std::collections::BTreeMap;
use std::net::IpAddr;

/// The `system_views` tables, as `CREATE TABLE` text with Cassandra 5.0.9's layout and comment.
pub(crate) const SYSTEM_VIEWS_TABLES: &[&str] = &[
    "CREATE TABLE system_views.caches (name text PRIMARY KEY, capacity_bytes bigint, entry_count int, hit_count bigint, hit_ratio double, recent_hit_rate_per_second bigint, recent_request_rate_per_second bigint, request_count bigint, size_bytes bigint) WITH comment = 'system caches'",
    "CREATE TABLE system_views.clients (address inet, port int, client_options frozen<map<text, text>>, connection_stage text, driver_name text, driver_version text, hostname text, keyspace_name text, protocol_version int, request_count bigint, ssl_cipher_suite text, ssl_enabled boolean, ssl_protocol text, username text, PRIMARY KEY (address, port)) WITH CLUSTERING ORDER BY (port ASC) AND comment = 'currently connected clients'",
    "CREATE TABLE system_views.disk_usage (keyspace_name text, table_name text, mebibytes bigint, PRIMARY KEY ((keyspace_name, table_name))) WITH comment = ''",
    "CREATE TABLE system_views.local_read_latency (keyspace_name text, table_name text, count bigint, max_ms double, p50th_ms double, p99th_ms double, per_second double, PRIMARY KEY ((keyspace_name, table_name))) WITH comment = ''",
    "CREATE TABLE system_views.local_scan_latency (keyspace_name text, table_name text, count bigint, max_ms double, p50th_ms double, p99th_ms double, per_second double, PRIMARY KEY ((keyspace_name, table_name))) WITH comment = ''",
    "CREATE TABLE system_views.local_write_latency (keyspace_name text, table_name text, count bigint, max_ms double, p50th_ms double, p99th_ms double, per_second double, PRIMARY KEY ((keyspace_name, table_name))) WITH comment = ''",
    "CREATE TABLE system_views.max_partition_size (keyspace_name text, table_name text, mebibytes bigint, PRIMARY KEY ((keyspace_name, table_name))) WITH comment = ''",
    "CREATE TABLE system_views.queries (thread_id text PRIMARY KEY, queued_micros bigint, running_micros bigint, task text) WITH comment = 'Lists currently running queries'",
    "CREATE TABLE system_views.rows_per_read (keyspace_name text, table_name text, count bigint, max double, p50th double, p99th double, PRIMARY KEY ((keyspace_name, table_name))) WITH comment = ''",
    "CREATE TABLE system_views.settings (name text PRIMARY KEY, value text) WITH comment = 'current settings'",
    "CREATE TABLE system_views.sstable_tasks (keyspace_name text, table_name text, task_id timeuuid, completion_ratio double, kind text, progress bigint, sstables int, target_directory text, total bigint, total_compressed bigint, unit text, PRIMARY KEY (keyspace_name, table_name, task_id)) WITH CLUSTERING ORDER BY (table_name ASC, task_id ASC) AND comment = 'current sstable tasks'",
    "CREATE TABLE system_views.system_properties (name text PRIMARY KEY, value text) WITH comment = 'Cassandra relevant system properties'",
    "CREATE TABLE system_views.thread_pools (name text PRIMARY KEY, active_tasks int, active_tasks_limit int, blocked_tasks bigint, blocked_tasks_all_time bigint, completed_tasks bigint, pending_tasks int) WITH comment = ''",
    "CREATE TABLE system_views.tombstones_per_read (keyspace_name text, table_name text, count bigint, max double, p50th double, p99th double, PRIMARY KEY ((keyspace_name, table_name))) WITH comment = ''",
];

/// One client connection (`system_views.clients`).
#[derive(Debug, Clone, Default)]
pub struct ClientRow {
    pub address: Option<IpAddr>,
    pub port: u16,
    /// The STARTUP options as sent.
    pub client_options: Vec<(String, String)>,
    /// `ready`, or `authenticating` while a login is pending.
    pub connection_stage: String,
    pub driver_name: Option<String>,
    pub driver_version: Option<String>,
    pub hostname: String,
    pub keyspace_name: Option<String>,
    pub protocol_version: i32,
    pub request_count: i64,
    /// TLS protocol and cipher suite when the connection is encrypted.
    pub ssl: Option<(String, String)>,
    pub username: String,
}

/// One cache (`system_views.caches`).
#[derive(Debug, Clone, Default)]
pub struct CacheRow {
    pub name: String,
    pub capacity_bytes: i64,
    pub entry_count: i32,
    pub hit_count: i64,
    pub request_count: i64,
    pub size_bytes: i64,
    pub recent_hit_rate_per_second: i64,
    pub recent_request_rate_per_second: i64,
}

/// One pool of workers (`system_views.thread_pools`).
#[derive(Debug, Clone, Default)]
pub struct ThreadPoolRow {
    pub name: String,
    pub active_tasks: i32,
    pub active_tasks_limit: i32,
    pub blocked_tasks: i64,
    pub blocked_tasks_all_time: i64,
    pub completed_tasks: i64,
    pub pending_tasks: i32,
}

/// One request running now (`system_views.queries`).
#[derive(Debug, Clone, Default)]
pub struct QueryRow {
    pub thread_id: String,
    pub queued_micros: i64,
    pub running_micros: i64,
    pub task: String,
}

/// One running compaction or other table task (`system_views.sstable_tasks`).
#[derive(Debug, Clone, Default)]
pub struct SstableTaskRow {
    pub keyspace_name: String,
    pub table_name: String,
    pub task_id: [u8; 16],
    pub kind: String,
    pub progress: i64,
    pub total: i64,
    pub sstables: i32,
    pub unit: String,
}

/// A latency distribution of one table, in milliseconds (`local_*_latency`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Latency {
    pub count: i64,
    pub p50th_ms: f64,
    pub p99th_ms: f64,
    pub max_ms: f64,
    pub per_second: f64,
}

/// Which `local_*_latency` table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatencyKind {
    Read,
    Write,
    Scan,
}

/// The live state of the process that `system_views` shows, asked for at each SELECT.
///
/// # Invariants
/// - Calls are quick and do not block on I/O: they run on the request's thread.
/// - Values are as of the call; nothing is cached between SELECTs.
pub trait LiveData: Send + Sync {
    fn clients(&self) -> Vec<ClientRow>;
    /// The effective configuration, (name, value) with Cassandra's names where they match.
    fn settings(&self) -> Vec<(String, String)>;
    fn system_properties(&self) -> Vec<(String, String)>;
    fn caches(&self) -> Vec<CacheRow>;
    fn thread_pools(&self) -> Vec<ThreadPoolRow>;
    fn queries(&self) -> Vec<QueryRow>;
    fn sstable_tasks(&self) -> Vec<SstableTaskRow>;
    /// The latency of `keyspace.table`, or `None` where nothing was measured yet.
    fn latency(&self, kind: LatencyKind, keyspace: &str, table: &str) -> Option<Latency>;
    /// Estimated bytes on disk of `keyspace.table` and of its largest partition.
    fn table_size(&self, keyspace: &str, table: &str) -> Option<(u64, u64)>;
}

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

/// The rows of the `system_views` table `t`, a value per column in `t`'s column order.
pub(crate) fn rows_of(
    t: &TableDef,
    schema: &Schema,
    live: Option<&dyn LiveData>,
) -> Vec<Vec<Option<Vec<u8>>>> {
    let Some(live) = live else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut push = |pairs: Cells| out.push(row_by_names(t, pairs));
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
        name @ ("local_read_latency" | "local_write_latency" | "local_scan_latency") => {
            let kind = match name {
                "local_read_latency" => LatencyKind::Read,
                "local_write_latency" => LatencyKind::Write,
                _ => LatencyKind::Scan,
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
        name @ ("disk_usage" | "max_partition_size") => {
            for tb in tables() {
                let (all, largest) = live.table_size(&tb.keyspace, &tb.name).unwrap_or((0, 0));
                let bytes = if name == "disk_usage" { all } else { largest };
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
        _ => {}
    }
    out
}

/// DESCRIBE text of a virtual keyspace, Cassandra's commented form.
pub(crate) fn describe_keyspace(name: &str) -> String {
    format!(
        "/*\nWarning: Keyspace {name} is a virtual keyspace and cannot be recreated with CQL.\nStructure, for reference:\nVIRTUAL KEYSPACE {name};\n*/"
    )
}

/// DESCRIBE text of a virtual table: its structure inside a comment, as Cassandra prints it.
pub(crate) fn describe_table(t: &TableDef, key_text: &str) -> String {
    let quote = |s: &str| cql::quote_identifier(s).into_owned();
    let single = t.partition_key().count() == 1 && t.clustering().count() == 0;
    let mut cols = Vec::new();
    for c in &t.columns {
        let mut line = format!("    {} {}", quote(&c.name), c.cql_type);
        if single && c.kind == crate::catalog::ColumnKind::PartitionKey {
            line.push_str(" PRIMARY KEY");
        }
        cols.push(line);
    }
    if !single {
        cols.push(format!("    PRIMARY KEY ({key_text})"));
    }
    let order: Vec<String> = t
        .clustering()
        .map(|c| format!("{} {}", quote(&c.name), if c.desc { "DESC" } else { "ASC" }))
        .collect();
    let comment = format!("comment = '{}'", t.options.comment.replace('\'', "''"));
    let with = if order.is_empty() {
        comment
    } else {
        format!(
            "CLUSTERING ORDER BY ({})\n    AND {comment}",
            order.join(", ")
        )
    };
    format!(
        "/*\nWarning: Table {ks}.{name} is a virtual table and cannot be recreated with CQL.\nStructure, for reference:\nVIRTUAL TABLE {ks}.{name} (\n{}\n) WITH {with};\n*/",
        cols.join(",\n"),
        ks = quote(&t.keyspace),
        name = quote(&t.name),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::{engine, q, values};
    use proto::types::Value as V;
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
    }

    fn live_engine() -> crate::Engine {
        let e = engine();
        e.set_live_data(Arc::new(Fake));
        q(&e, None, "CREATE KEYSPACE k WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}").unwrap();
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
        let (rows, _) =
            values(q(&e, None, "SELECT name FROM system_views.settings LIMIT 1").unwrap());
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
        assert!(
            text.starts_with("/*\nWarning: Table system_views.sstable_tasks is a virtual table")
        );
        assert!(text.contains("    PRIMARY KEY (keyspace_name, table_name, task_id)\n) WITH CLUSTERING ORDER BY (table_name ASC, task_id ASC)\n    AND comment = 'current sstable tasks';\n*/"));
    }
}
