//! Standalone mode's answers to `peregrine nodetool` (through the admin endpoint) and its part
//! of `/metrics`: the store's statistics, flush, compaction, snapshots.
//!
//! Every table lives in one LSM tree (`storage`), so flush and compaction act on the whole
//! store whatever keyspace or table is named (after the names are checked), and the storage
//! figures in `tablestats` are the store's. `docs/operations.md` says so for operators.

use std::collections::BTreeSet;

use serde_json::{json, Value};
use server::admin::{AdminError, AdminResult};
use server::metrics::{self, Exposition, Op};
use storage::Storage;

use crate::LocalBackend;

/// Storage key prefix of table data (`engine::keys`: `0x01 table_id:u32 ...`).
const TABLE_DATA: u8 = 0x01;

impl LocalBackend {
    pub(crate) async fn admin_command(&self, command: &str, args: Value) -> AdminResult {
        match command {
            "info" | "status" => self.info(),
            "describecluster" => Ok(self.describe_cluster()),
            "flush" | "compact" | "garbagecollect" | "cleanup" => {
                self.targets(&args)?;
                let store = self.store.clone();
                let compact = command != "flush";
                blocking(move || {
                    if compact {
                        store.flush()?;
                        store.compact()
                    } else {
                        store.flush()
                    }
                })
                .await?;
                Ok(json!({}))
            }
            "snapshot" => self.snapshot(&args).await,
            "listsnapshots" => {
                let list = self.store.list_snapshots().map_err(failed)?;
                let list: Vec<Value> = list
                    .iter()
                    .map(|s| json!({ "tag": s.tag, "bytes": s.bytes, "path": s.path }))
                    .collect();
                Ok(json!({ "snapshots": list }))
            }
            "clearsnapshot" => {
                let tag = args["tag"].as_str();
                let removed = self.store.clear_snapshots(tag).map_err(failed)?;
                Ok(json!({ "removed": removed }))
            }
            "tablestats" => self.table_stats(&args),
            "tablehistograms" => self.table_histograms(&args),
            "compactionstats" => {
                let s = self.store.stats().map_err(failed)?;
                Ok(json!({
                    "active": s.active_compactions,
                    "completed": s.compactions_completed,
                    "pending_flushes": s.pending_flushes,
                    "pending_compactions": s.pending_compactions,
                    "pending_compaction_bytes": s.pending_compaction_bytes,
                    "compaction_seconds": s.compaction_seconds,
                }))
            }
            "getcompactionthroughput" => Ok(json!({ "mib_per_second": 0 })),
            "setcompactionthroughput" => match args["value"].as_i64() {
                Some(0) => Ok(json!({})),
                _ => Err(AdminError::not_here(
                    "compaction cannot be throttled here: the storage engine (fjall) compacts unthrottled, which is what 0 means; only 0 is accepted",
                )),
            },
            "enableautocompaction" => {
                self.targets(&args)?;
                Ok(json!({}))
            }
            "disableautocompaction" => Err(AdminError::not_here(
                "automatic compaction cannot be turned off here: the storage engine (fjall) compacts in the background and purges expired data and tombstones as it does",
            )),
            "refreshsizeestimates" => {
                // system.size_estimates is computed when it is read: nothing is cached.
                Ok(json!({}))
            }
            "stop" => Ok(json!({ "stopped": 0 })),
            "invalidatekeycache" | "invalidaterowcache" | "invalidatecountercache" => {
                // Standalone mode keeps no key, row or counter cache (only the block cache).
                Ok(json!({}))
            }
            _ => Err(AdminError::unknown(command)),
        }
    }

    fn info(&self) -> AdminResult {
        // While the store is down (and the CQL port closed) `info` still answers, saying why:
        // the store's figures are zeros then.
        let s = match self.store.stats() {
            Ok(s) => s,
            Err(_) if self.store.down().is_some() => Default::default(),
            Err(e) => return Err(failed(e)),
        };
        let node = self.engine.node();
        Ok(json!({
            "mode": "standalone",
            "host_id": uuid_text(&node.host_id),
            "datacenter": node.datacenter,
            "rack": node.rack,
            "load_bytes": s.disk_bytes + s.memtable_bytes,
            "memtable_bytes": s.memtable_bytes,
            "block_cache_bytes": s.block_cache_bytes,
            "block_cache_capacity_bytes": s.block_cache_capacity_bytes,
            "pinned_bytes": s.pinned_bytes,
            "block_cache_hits": s.block_cache_hits,
            "block_cache_requests": s.block_cache_hits + s.block_cache_misses,
            "storage_down": self.store.down(),
            "storage_writes_stopped": self.store.writes_stopped(),
        }))
    }

    fn describe_cluster(&self) -> Value {
        let schema = self.engine.schema();
        let keyspaces: Vec<Value> = schema
            .keyspaces
            .values()
            .map(|k| json!({ "name": k.name, "replication": k.replication }))
            .collect();
        json!({
            "schema_version": uuid_text(&schema.version),
            "datacenter": self.engine.node().datacenter,
            "keyspaces": keyspaces,
        })
    }

    /// The tables `args` names (`keyspace`, optional `tables`), checked against the schema:
    /// all user tables without a keyspace, all of a keyspace's without tables.
    fn targets(&self, args: &Value) -> Result<Vec<(String, String, u32)>, AdminError> {
        let schema = self.engine.schema();
        let tables: Vec<&str> = args["tables"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let Some(ks) = args["keyspace"].as_str() else {
            return Ok(schema
                .tables
                .values()
                .map(|t| (t.keyspace.clone(), t.name.clone(), t.id))
                .collect());
        };
        if !schema.keyspaces.contains_key(ks) {
            return Err(AdminError::bad(format!("Keyspace [{ks}] does not exist.")));
        }
        let mut out = Vec::new();
        for t in &tables {
            match schema.tables.get(&(ks.to_string(), t.to_string())) {
                Some(def) => out.push((ks.to_string(), def.name.clone(), def.id)),
                None => {
                    return Err(AdminError::failed(format!(
                        "Unknown keyspace/cf pair ({ks}.{t})"
                    )))
                }
            }
        }
        if tables.is_empty() {
            out.extend(
                schema
                    .tables
                    .values()
                    .filter(|t| t.keyspace == ks)
                    .map(|t| (t.keyspace.clone(), t.name.clone(), t.id)),
            );
        }
        Ok(out)
    }

    async fn snapshot(&self, args: &Value) -> AdminResult {
        let tag = match args["tag"].as_str() {
            Some(t) => t.to_string(),
            None => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis().to_string())
                .unwrap_or_default(),
        };
        let keyspaces: Vec<String> = args["keyspaces"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        // Which tables' data to copy: all, or those of the named keyspaces / `table`.
        let ids: Option<BTreeSet<u32>> = if keyspaces.is_empty() {
            None
        } else {
            let mut ids = BTreeSet::new();
            for ks in &keyspaces {
                let tables: Vec<Value> = args["table"]
                    .as_str()
                    .map(|t| vec![json!(t)])
                    .unwrap_or_default();
                let targets = self.targets(&json!({ "keyspace": ks, "tables": tables }))?;
                ids.extend(targets.iter().map(|(_, _, id)| *id));
            }
            Some(ids)
        };
        // The tables it holds, for `system_views.snapshots` (see `crate::live`).
        let schema = self.engine.schema();
        let tables: Vec<String> = schema
            .tables
            .values()
            .filter(|t| !engine::system::is_virtual(t))
            .filter(|t| ids.as_ref().is_none_or(|ids| ids.contains(&t.id)))
            .map(|t| format!("{}.{}", t.keyspace, t.name))
            .collect();
        let store = self.store.clone();
        let name = tag.clone();
        let info = blocking(move || {
            let keep = |key: &[u8]| match (&ids, key) {
                (Some(ids), [TABLE_DATA, a, b, c, d, ..]) => {
                    ids.contains(&u32::from_be_bytes([*a, *b, *c, *d]))
                }
                _ => true,
            };
            let info = store.snapshot(&name, &keep)?;
            crate::live::write_manifest(&info.path, &tables).map_err(|e| {
                storage::StorageError::Snapshot(format!(
                    "cannot write the snapshot's manifest: {e}"
                ))
            })?;
            Ok(info)
        })
        .await?;
        Ok(json!({ "tag": tag, "path": info.path, "bytes": info.bytes, "keyspaces": keyspaces }))
    }

    fn table_stats(&self, args: &Value) -> AdminResult {
        let s = self.store.stats().map_err(failed)?;
        let schema = self.engine.schema();
        let names: Vec<&str> = args["targets"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut tables = Vec::new();
        for def in schema.tables.values() {
            let wanted = names.is_empty()
                || names.iter().any(|n| match n.split_once('.') {
                    Some((k, t)) => k == def.keyspace && t == def.name,
                    None => *n == def.keyspace,
                });
            if wanted {
                tables.push(def.clone());
            }
        }
        for n in &names {
            let ks = n.split_once('.').map_or(*n, |(k, _)| k);
            if !schema.keyspaces.contains_key(ks) {
                return Err(AdminError::bad(format!("Unknown keyspace: {ks}")));
            }
            if let Some((k, t)) = n.split_once('.') {
                if !schema.tables.contains_key(&(k.to_string(), t.to_string())) {
                    return Err(AdminError::bad(format!("Unknown table: {t}")));
                }
            }
        }
        let m = metrics::global();
        let list: Vec<Value> = tables
            .iter()
            .map(|t| {
                let tm = m.table(&t.keyspace, &t.name);
                let reads = merged(&tm, &[Op::Read, Op::RangeRead]);
                let writes = merged(&tm, &[Op::Write, Op::Batch, Op::Cas]);
                json!({
                    "keyspace": t.keyspace,
                    "table": t.name,
                    "read_count": reads.count(),
                    "read_latency_us_sum": reads.sum_us,
                    "write_count": writes.count(),
                    "write_latency_us_sum": writes.sum_us,
                })
            })
            .collect();
        Ok(json!({
            "tables": list,
            "sstable_count": s.tables_per_level.iter().sum::<usize>(),
            "tables_per_level": s.tables_per_level,
            "space_used_bytes": s.disk_bytes,
            "memtable_bytes": s.memtable_bytes,
            "pending_flushes": s.pending_flushes,
        }))
    }

    fn table_histograms(&self, args: &Value) -> AdminResult {
        let (Some(ks), Some(t)) = (args["keyspace"].as_str(), args["table"].as_str()) else {
            return Err(AdminError::bad(
                "tablehistograms requires keyspace and table name arguments",
            ));
        };
        let schema = self.engine.schema();
        if !schema.keyspaces.contains_key(ks) {
            return Err(AdminError::bad(format!("Unknown keyspace: {ks}")));
        }
        if !schema.tables.contains_key(&(ks.to_string(), t.to_string())) {
            return Err(AdminError::bad(format!("Unknown table: {t}")));
        }
        let tm = metrics::global().table(ks, t);
        let reads = merged(&tm, &[Op::Read, Op::RangeRead]);
        let writes = merged(&tm, &[Op::Write, Op::Batch, Op::Cas]);
        let q = |h: &metrics::HistogramSnapshot| -> Vec<u64> {
            [0.5, 0.75, 0.95, 0.98, 0.99, 0.0, 1.0]
                .iter()
                .map(|&p| {
                    if p == 0.0 {
                        h.quantile_us(f64::MIN_POSITIVE)
                    } else {
                        h.quantile_us(p)
                    }
                })
                .collect()
        };
        Ok(
            json!({ "read_us": q(&reads), "write_us": q(&writes), "reads": reads.count(), "writes": writes.count() }),
        )
    }

    /// The storage gauges for `/metrics`.
    pub(crate) fn export_storage(&self, out: &mut Exposition) {
        let Ok(s) = self.store.stats() else {
            out.family("peregrine_storage_up", "gauge", "1 while the store serves.");
            out.sample(&[], 0.0);
            return;
        };
        out.family("peregrine_storage_up", "gauge", "1 while the store serves.");
        out.sample(&[], f64::from(u8::from(self.store.down().is_none())));
        out.family(
            "peregrine_storage_writes_up",
            "gauge",
            "1 while the store takes writes (0 while they are stopped and reads go on: commit_failure_policy: stop_commit, disk_failure_policy: best_effort).",
        );
        out.sample(
            &[],
            f64::from(u8::from(self.store.writes_stopped().is_none())),
        );
        out.family(
            "peregrine_storage_tables",
            "gauge",
            "Table (SSTable) files per LSM level.",
        );
        for (level, n) in s.tables_per_level.iter().enumerate() {
            out.sample(&[("level", &level.to_string())], *n as f64);
        }
        const G: &str = "gauge";
        const C: &str = "counter";
        let single: [(&str, &str, &str, f64); 22] = [
            (
                "peregrine_storage_memtable_bytes",
                G,
                "Bytes in the active memtable.",
                s.memtable_bytes as f64,
            ),
            (
                "peregrine_storage_sealed_memtables",
                G,
                "Memtables sealed and waiting for a flush.",
                s.sealed_memtables as f64,
            ),
            (
                "peregrine_storage_live_bytes",
                G,
                "Bytes of table files on disk.",
                s.disk_bytes as f64,
            ),
            (
                "peregrine_storage_journal_bytes",
                G,
                "Bytes of write-ahead journal on disk.",
                s.journal_bytes as f64,
            ),
            (
                "peregrine_storage_journal_files",
                G,
                "Write-ahead journal files on disk.",
                s.journal_files as f64,
            ),
            (
                "peregrine_storage_compactions_active",
                G,
                "Compactions running now.",
                s.active_compactions as f64,
            ),
            (
                "peregrine_storage_compactions_pending",
                G,
                "Compactions still to run, estimated from the LSM levels' sizes.",
                s.pending_compactions as f64,
            ),
            (
                "peregrine_storage_compaction_pending_bytes",
                G,
                "Bytes the pending compactions have to rewrite, estimated from the LSM levels' sizes.",
                s.pending_compaction_bytes as f64,
            ),
            (
                "peregrine_storage_flushes_pending",
                G,
                "Memtable flushes queued.",
                s.pending_flushes as f64,
            ),
            (
                "peregrine_storage_block_cache_bytes",
                G,
                "Bytes held by the block cache.",
                s.block_cache_bytes as f64,
            ),
            (
                "peregrine_storage_block_cache_capacity_bytes",
                G,
                "Block cache capacity.",
                s.block_cache_capacity_bytes as f64,
            ),
            (
                "peregrine_storage_pinned_bytes",
                G,
                "Bytes of block indexes and Bloom filters pinned in memory, charged to the block cache capacity.",
                s.pinned_bytes as f64,
            ),
            (
                "peregrine_storage_journal_syncs_total",
                C,
                "Write-ahead journal fsyncs.",
                s.journal_syncs as f64,
            ),
            (
                "peregrine_storage_compactions_completed_total",
                C,
                "Compactions finished.",
                s.compactions_completed as f64,
            ),
            (
                "peregrine_storage_filter_queries_total",
                C,
                "Point reads' probes of tables that do not hold the key.",
                s.filter_queries as f64,
            ),
            (
                "peregrine_storage_filter_skips_total",
                C,
                "Of those, probes the table's Bloom filter ruled out (the rest read a block for nothing).",
                s.filter_skips as f64,
            ),
            (
                "peregrine_storage_idle_compactions_total",
                C,
                "Idle compactions: L0 merged into the level below after a period without writes.",
                s.idle_compactions as f64,
            ),
            (
                "peregrine_storage_compaction_seconds_total",
                C,
                "Time spent compacting.",
                s.compaction_seconds,
            ),
            (
                "peregrine_storage_flushed_bytes_total",
                C,
                "Bytes of table files memtable flushes wrote.",
                s.flushed_bytes as f64,
            ),
            (
                "peregrine_storage_compacted_bytes_total",
                C,
                "Bytes of table files compactions wrote.",
                s.compacted_bytes as f64,
            ),
            (
                "peregrine_storage_block_cache_hits_total",
                C,
                "Block loads answered from the block cache.",
                s.block_cache_hits as f64,
            ),
            (
                "peregrine_storage_block_cache_misses_total",
                C,
                "Block loads that read the disk.",
                s.block_cache_misses as f64,
            ),
        ];
        for (name, kind, help, v) in single {
            out.single(name, kind, help, v);
        }
    }
}

/// The histograms of `ops` added together.
fn merged(t: &metrics::TableMetrics, ops: &[Op]) -> metrics::HistogramSnapshot {
    let mut out = metrics::HistogramSnapshot::default();
    for op in ops {
        let h = t.snapshot(*op);
        for (o, n) in out.buckets.iter_mut().zip(h.buckets) {
            *o += n;
        }
        out.sum_us += h.sum_us;
    }
    out
}

fn failed(e: storage::StorageError) -> AdminError {
    AdminError::failed(e.to_string())
}

/// Runs storage work on the blocking pool.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> storage::Result<T> + Send + 'static,
) -> Result<T, AdminError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| AdminError::failed(format!("admin task failed: {e}")))?
        .map_err(failed)
}

fn uuid_text(b: &[u8; 16]) -> String {
    uuid::Uuid::from_bytes(*b).to_string()
}

/// Keeps the per-table series to the tables that exist (called after schema changes).
pub(crate) fn forget_dropped_tables(engine: &engine::Engine) {
    let schema = engine.schema();
    metrics::global()
        .retain_tables(|k, t| schema.tables.contains_key(&(k.to_string(), t.to_string())));
}
