//! The `system_views` keyspace: Cassandra 5.0.9's 43 virtual tables with their columns,
//! types, keys, clustering order and comments (`defs`), and their rows on one Peregrine node
//! (`rows`).
//!
//! The engine knows no sockets, clocks or process state, so the rows' live values come from a
//! [`LiveData`] the embedding process hands to [`crate::Engine::set_live_data`] (the `local`
//! crate's backend: connections, configuration, metrics, snapshots). Each SELECT asks it for
//! one table's rows and reads them with the ordinary SELECT executor (see
//! `system::materialize`), so WHERE, LIMIT and paging behave as on any table. Without a
//! provider the tables are empty.
//!
//! Tables of things one Peregrine node never does (repairs, streaming, hints, internode
//! messaging, per-SSTable SAI components, Cassandra's auth caches) are empty, as Cassandra
//! shows them on a single node that never did them; docs/compatibility.md says what each
//! table means here.
//!
//! | module | what it holds |
//! |---|---|
//! | `defs` | the `CREATE TABLE` text of every table |
//! | `rows` | the rows of one table, from the schema, the node and the [`LiveData`] |
//! | `sizes` | partitions per batch, counted as batches run |

mod defs;
mod rows;
mod sizes;

pub(crate) use defs::SYSTEM_VIEWS_TABLES;
pub(crate) use rows::rows_of;
pub use sizes::BatchSizes;

/// What the engine itself counts for `system_views` (the rest comes from [`LiveData`]).
pub struct EngineFacts<'a> {
    /// Statements held prepared (`cql_metrics`).
    pub prepared_statements: usize,
    /// Partitions per batch (`batch_metrics`).
    pub batch_sizes: &'a BatchSizes,
}

use crate::catalog::TableDef;
use std::net::IpAddr;

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

/// Which `local_*_latency` / `coordinator_*_latency` table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatencyKind {
    Read,
    Write,
    Scan,
    CoordinatorRead,
    CoordinatorWrite,
    CoordinatorScan,
}

/// A distribution of counts (`batch_metrics`: partitions per batch).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Distribution {
    pub max: i64,
    pub p50th: f64,
    pub p99th: f64,
    pub p999th: f64,
}

/// Statements run since the process started (`cql_metrics`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatementCounts {
    /// EXECUTE requests.
    pub prepared: i64,
    /// QUERY requests.
    pub regular: i64,
}

/// What gossip would say of this node (`gossip_info`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeState {
    /// When the process started, seconds since the epoch (Cassandra's gossip generation).
    pub generation: i32,
    /// Seconds since the process started (gossip's heartbeat beats once a second).
    pub heartbeat: i32,
    /// Bytes of data on disk.
    pub load_bytes: u64,
}

/// One table in one snapshot (`system_views.snapshots`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SnapshotRow {
    pub name: String,
    pub keyspace_name: String,
    pub table_name: String,
    /// Milliseconds since the epoch.
    pub created_at: Option<i64>,
    pub size_on_disk: i64,
    pub true_size: i64,
}

/// The live state of the process that `system_views` shows, asked for at each SELECT.
///
/// # Invariants
/// - Calls are quick: they run on the request's thread. Only `snapshots` reads the disk (a
///   directory listing), and only when that table is read.
/// - Values are as of the call; nothing is cached between SELECTs.
/// - The methods with a default body have one meaning "nothing of this here".
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
    /// QUERY and EXECUTE requests answered so far.
    fn statements(&self) -> StatementCounts {
        StatementCounts::default()
    }
    /// This process as gossip would describe it, `None` when unknown.
    fn node_state(&self) -> Option<NodeState> {
        None
    }
    /// The snapshots on disk, a row per table each holds.
    fn snapshots(&self) -> Vec<SnapshotRow> {
        Vec::new()
    }
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
mod tests;
