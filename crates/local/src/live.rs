//! What `system_views` shows of this process ([`engine::virtual_tables::LiveData`]): the
//! connections (`server::clients`), the configuration, the store's cache and workers, the
//! per-table latencies and request counts `server::metrics` records, the node's uptime and
//! load (`gossip_info`), and the snapshots on disk with the manifest each carries.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use engine::virtual_tables::{
    CacheRow, ClientRow, Latency, LatencyKind, LiveData, NodeState, QueryRow, SnapshotRow,
    SstableTaskRow, StatementCounts, ThreadPoolRow,
};
use server::config::Config;
use server::metrics::{self, HistogramSnapshot, Op, LATENCY_BUCKETS_US};

pub(crate) struct Live {
    store: Arc<storage::LsmStorage>,
    settings: Vec<(String, String)>,
    started: Instant,
    /// Seconds since the epoch at the start (gossip's generation).
    generation: i32,
    /// With PasswordAuthenticator a connection without a role is still logging in.
    login: bool,
}

impl Live {
    pub(crate) fn new(config: &Config, store: Arc<storage::LsmStorage>) -> Live {
        Live {
            store,
            settings: settings(config),
            started: Instant::now(),
            generation: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| i32::try_from(d.as_secs()).unwrap_or(i32::MAX)),
            login: config.authenticator == server::config::Authenticator::PasswordAuthenticator,
        }
    }
}

/// The file in a snapshot's directory that names the tables it holds and when it was taken
/// (as Cassandra's snapshots carry a `manifest.json`; the store ignores files it does not
/// know in its directory).
const MANIFEST: &str = "manifest.json";

/// Writes `dir`'s manifest: `tables` (`keyspace.table`) and the time now.
pub(crate) fn write_manifest(dir: &Path, tables: &[String]) -> std::io::Result<()> {
    let created_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let text = serde_json::json!({ "created_at_ms": created_at, "tables": tables }).to_string();
    std::fs::write(dir.join(MANIFEST), text)
}

/// The tables and creation time a snapshot's manifest names; `None` without a readable one
/// (a snapshot taken before manifests were written).
fn read_manifest(dir: &Path) -> Option<(Vec<(String, String)>, i64)> {
    let text = std::fs::read(dir.join(MANIFEST)).ok()?;
    let v: serde_json::Value = serde_json::from_slice(&text).ok()?;
    let tables = v["tables"]
        .as_array()?
        .iter()
        .filter_map(|t| {
            let (k, t) = t.as_str()?.split_once('.')?;
            Some((k.to_string(), t.to_string()))
        })
        .collect();
    Some((tables, v["created_at_ms"].as_i64()?))
}

/// Flattens a serialized configuration value into `name = value` rows (nested keys joined
/// with `_`, as Cassandra names `client_encryption_options_enabled`).
fn flatten(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                let name = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}_{k}")
                };
                flatten(&name, v, out);
            }
        }
        serde_json::Value::Null => out.push((prefix.to_string(), "null".into())),
        serde_json::Value::String(s) => out.push((prefix.to_string(), s.clone())),
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

fn ms(d: std::time::Duration) -> String {
    format!("{}ms", d.as_millis())
}

fn mib(bytes: u64) -> String {
    format!("{}MiB", bytes >> 20)
}

/// The effective configuration: every key of ours, and Cassandra's names (with Cassandra's
/// value format) for the keys that mean the same thing.
pub(crate) fn settings(config: &Config) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Ok(v) = serde_json::to_value(config) {
        flatten("", &v, &mut out);
    }
    let cassandra = [
        ("native_transport_port", config.listen.port().to_string()),
        ("rpc_address", config.listen.ip().to_string()),
        (
            "data_file_directories",
            format!("[{}]", config.data_dir.display()),
        ),
        (
            "native_transport_max_frame_size",
            mib(config.max_frame_bytes as u64),
        ),
        (
            "native_transport_max_concurrent_connections",
            config.max_connections.to_string(),
        ),
        (
            "native_transport_idle_timeout",
            ms(config.native_transport_idle_timeout),
        ),
        ("request_timeout", ms(config.request_timeout)),
        ("commitlog_sync_period", ms(config.commitlog_sync_period)),
        (
            "commitlog_sync_period_in_ms",
            config.commitlog_sync_period.as_millis().to_string(),
        ),
        (
            "partitioner",
            "org.apache.cassandra.dht.Murmur3Partitioner".into(),
        ),
        ("start_native_transport", "true".into()),
    ];
    out.retain(|(k, _)| !cassandra.iter().any(|(c, _)| c == k));
    out.extend(cassandra.map(|(k, v)| (k.to_string(), v)));
    out.sort();
    out
}

/// Milliseconds of a histogram's quantile (bucket upper bounds, as `/metrics` has them).
fn latency_of(h: &HistogramSnapshot, uptime_s: f64) -> Latency {
    let max_us = h
        .buckets
        .iter()
        .rposition(|&n| n > 0)
        .map(|i| {
            LATENCY_BUCKETS_US
                .get(i)
                .copied()
                .unwrap_or(LATENCY_BUCKETS_US[LATENCY_BUCKETS_US.len() - 1])
        })
        .unwrap_or(0);
    let count = h.count();
    Latency {
        count: count as i64,
        p50th_ms: h.quantile_us(0.5) as f64 / 1000.0,
        p99th_ms: h.quantile_us(0.99) as f64 / 1000.0,
        max_ms: max_us as f64 / 1000.0,
        per_second: if uptime_s > 0.0 {
            count as f64 / uptime_s
        } else {
            0.0
        },
    }
}

impl LiveData for Live {
    fn clients(&self) -> Vec<ClientRow> {
        server::clients::list()
            .iter()
            .map(|c| {
                let role = c.role();
                let addr = c.client_addr();
                ClientRow {
                    address: Some(addr.ip()),
                    port: addr.port(),
                    client_options: c.startup_options().to_vec(),
                    connection_stage: if self.login && role.is_none() {
                        "authenticating".into()
                    } else {
                        "ready".into()
                    },
                    driver_name: c.startup_option("DRIVER_NAME").map(str::to_string),
                    driver_version: c.startup_option("DRIVER_VERSION").map(str::to_string),
                    // No reverse DNS lookup on the request path: the loopback address is
                    // `localhost` (what the lookup answers), others their address's text.
                    hostname: if addr.ip().is_loopback() {
                        "localhost".into()
                    } else {
                        addr.ip().to_string()
                    },
                    keyspace_name: c.keyspace().map(|k| k.to_string()),
                    protocol_version: i32::from(c.version().as_u8()),
                    request_count: c.request_count() as i64,
                    ssl: c.tls().cloned(),
                    username: role
                        .map(|r| r.to_string())
                        .unwrap_or_else(|| "anonymous".into()),
                }
            })
            .collect()
    }

    fn settings(&self) -> Vec<(String, String)> {
        self.settings.clone()
    }

    fn system_properties(&self) -> Vec<(String, String)> {
        let mut out = vec![
            ("os.arch".to_string(), std::env::consts::ARCH.to_string()),
            ("os.name".to_string(), std::env::consts::OS.to_string()),
            (
                "peregrine.version".to_string(),
                env!("CARGO_PKG_VERSION").to_string(),
            ),
        ];
        if let Ok(dir) = std::env::current_dir() {
            out.push(("user.dir".into(), dir.display().to_string()));
        }
        out
    }

    fn caches(&self) -> Vec<CacheRow> {
        // Cassandra's key, row and counter caches do not exist here: shown as Cassandra
        // shows a cache sized 0. The store's block cache is Cassandra's chunk cache.
        let mut out: Vec<CacheRow> = ["counters", "keys", "rows"]
            .into_iter()
            .map(|name| CacheRow {
                name: name.into(),
                ..Default::default()
            })
            .collect();
        if let Ok(s) = self.store.stats() {
            out.push(CacheRow {
                name: "chunks".into(),
                capacity_bytes: s.block_cache_capacity_bytes as i64,
                size_bytes: s.block_cache_bytes as i64,
                hit_count: s.block_cache_hits as i64,
                request_count: (s.block_cache_hits + s.block_cache_misses) as i64,
                ..Default::default()
            });
        }
        out
    }

    fn thread_pools(&self) -> Vec<ThreadPoolRow> {
        let m = metrics::global();
        let mut out = vec![ThreadPoolRow {
            name: "Native-Transport-Requests".into(),
            active_tasks: m.streams_in_flight.get().max(0) as i32,
            completed_tasks: m.requests_total() as i64,
            ..Default::default()
        }];
        if let Ok(s) = self.store.stats() {
            out.push(ThreadPoolRow {
                name: "CompactionExecutor".into(),
                active_tasks: s.active_compactions as i32,
                completed_tasks: s.compactions_completed as i64,
                ..Default::default()
            });
            out.push(ThreadPoolRow {
                name: "MemtableFlushWriter".into(),
                pending_tasks: s.pending_flushes as i32,
                ..Default::default()
            });
        }
        out
    }

    fn queries(&self) -> Vec<QueryRow> {
        let now = Instant::now();
        let mut out = Vec::new();
        for c in server::clients::list() {
            for r in c.running() {
                out.push(QueryRow {
                    thread_id: format!("connection-{}-stream-{}", c.id(), r.stream),
                    queued_micros: r.started_at.duration_since(r.read_at).as_micros() as i64,
                    running_micros: now.duration_since(r.started_at).as_micros() as i64,
                    task: r.task.to_string(),
                });
            }
        }
        out
    }

    fn sstable_tasks(&self) -> Vec<SstableTaskRow> {
        // The store's compactions are not attributed to tables (see docs/compatibility.md).
        Vec::new()
    }

    fn latency(&self, kind: LatencyKind, keyspace: &str, table: &str) -> Option<Latency> {
        // Requests are timed from arrival to answer, and this node is the coordinator and
        // the only replica: the local and coordinator tables show the same figures.
        let op = match kind {
            LatencyKind::Read | LatencyKind::CoordinatorRead => Op::Read,
            LatencyKind::Write | LatencyKind::CoordinatorWrite => Op::Write,
            LatencyKind::Scan | LatencyKind::CoordinatorScan => Op::RangeRead,
        };
        let uptime = self.started.elapsed().as_secs_f64();
        metrics::global()
            .tables()
            .into_iter()
            .find(|(k, t, _)| &**k == keyspace && &**t == table)
            .map(|(_, _, m)| latency_of(&m.snapshot(op), uptime))
    }

    fn table_size(&self, _keyspace: &str, _table: &str) -> Option<(u64, u64)> {
        // One store holds every table; it keeps no per-table sizes (docs/compatibility.md).
        None
    }

    fn statements(&self) -> StatementCounts {
        let m = metrics::global();
        StatementCounts {
            prepared: m.requests_of("execute") as i64,
            regular: m.requests_of("query") as i64,
        }
    }

    fn snapshots(&self) -> Vec<SnapshotRow> {
        let mut out = Vec::new();
        for s in self.store.list_snapshots().unwrap_or_default() {
            let Some((tables, created_at)) = read_manifest(&s.path) else {
                continue;
            };
            // One store holds all of a snapshot's tables: each row has the whole size.
            for (keyspace_name, table_name) in tables {
                out.push(SnapshotRow {
                    name: s.tag.clone(),
                    keyspace_name,
                    table_name,
                    created_at: Some(created_at),
                    size_on_disk: s.bytes as i64,
                    true_size: s.bytes as i64,
                });
            }
        }
        out
    }

    fn node_state(&self) -> Option<NodeState> {
        Some(NodeState {
            generation: self.generation,
            heartbeat: i32::try_from(self.started.elapsed().as_secs()).unwrap_or(i32::MAX),
            load_bytes: self.store.stats().map_or(0, |s| s.disk_bytes),
        })
    }
}
