//! SAI vector indexes: the in-memory HNSW graph ([`crate::vector_index::VectorIndex`]) of
//! each SAI index on a float-vector column, kept beside the schema.
//!
//! The base table is the source of truth; a graph only decides which rows an ANN query
//! reads first (`read.rs` checks every row it returns against the stored row, and orders by
//! the score of the stored vector). So a graph is:
//!
//! - **built** from the table when the index is created, when TRUNCATE gives the index a
//!   fresh id, and at open when no usable saved graph exists: [`Engine::build_vector_indexes`];
//! - **saved** (with a `vector_indexes` directory, `OpenOptions`) under `<dir>/<index id>/`
//!   in the background once enough rows changed ([`Engine::save_vector_indexes`]) and at a
//!   clean shutdown ([`Engine::close_vector_indexes`]; a graph whose files already hold it,
//!   nothing changed since they were loaded or saved, is kept as it is), and **loaded** at open
//!   ([`Engine::load_vector_indexes`]). There is no write sequence to replay from: the store
//!   has none the engine sees. Instead a saved graph is trusted as it is only when the store
//!   holds [`CLEAN_KEY`] with the token the clean shutdown saved it under (written after the
//!   save with every stripe lock held, deleted at the next open and by any vector write that
//!   still comes after it, in that write's batch); any other saved graph is made exact by one
//!   scan of its table comparing each row's vector with the graph's (by hash), which re-indexes
//!   only what changed since the save. So a loaded graph never misses a row;
//! - **kept exact** by every write: `exec::apply` computes the graph changes of the rows it
//!   rewrites ([`vector_updates`], which also refuses a zero vector under cosine before
//!   anything is written) and applies them after the batch is written, still under the
//!   partitions' stripe locks, so graph order matches storage order;
//! - **dropped** with its index and its saved files (DROP INDEX, DROP TABLE, TRUNCATE's old
//!   id), at the schema change ([`Engine::forget_dropped_vector_indexes`]).
//!
//! Memory: a graph that grows past `vector_index_memory_bytes` is spilled to disk
//! ([`VectorIndex::spill`]: saved, then served from its memory-mapped files plus an in-memory
//! delta of the rows since the last save, which is saved as one more file whenever it takes
//! the graph over the limit again). Everything above holds unchanged on disk (saves write the
//! delta, the catch-up re-indexes into it). Without a directory to save to (encryption at rest,
//! tests), a graph over the limit is freed and marked over budget; ANN queries on it then scan
//! the rows they may return (exact, slower) until the next restart rebuilds it.

use super::IndexDef;
use crate::catalog::{ColumnDef, ColumnKind, Schema, TableDef};
use crate::row::{CellValue, Row};
use crate::vector_index::{check_indexable, VectorIndex, VectorIndexConfig, VectorIndexError};
use crate::{keys, Engine, EngineError};
use proto::types::ColumnType;
use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Instant;

/// The graph settings of `idx` when it is an SAI index on a float-vector column. Only a
/// regular column has a graph (`has_graph`); ANN queries on a static one scan (exact).
pub(crate) fn vector_config(idx: &IndexDef, t: &TableDef) -> Option<VectorIndexConfig> {
    if !idx.is_sai() {
        return None;
    }
    let c = t.column(&idx.column)?;
    let options = idx.options.iter().map(|(k, v)| (k.as_str(), v.as_str()));
    VectorIndexConfig::for_column(&c.ty, options, Some(&idx.name))
        .ok()
        .flatten()
}

/// Whether `idx`, an index on column `c` of `t` (already looked up), keeps a graph
/// ([`vector_config`]): the type is looked at first, the options only for a vector column.
/// Writes ask it for every index of their table (`vector_config` alone looks the column up by
/// name and reads the options: ~1,200 instructions per UPDATE of a table with three indexes,
/// bench/results/2026-12-01/indexed-writes-s35).
pub(crate) fn keeps_graph(idx: &IndexDef, t: &TableDef, c: &ColumnDef) -> bool {
    matches!(c.ty, ColumnType::Vector(..)) && vector_config(idx, t).is_some()
}

/// One index's graph.
pub(crate) struct Graph {
    /// The index id (the name of its directory of saved files).
    id: u32,
    pub(crate) index: VectorIndex,
    /// The build over the table's rows finished: until then ANN queries scan.
    ready: AtomicBool,
    /// Grew past the memory budget with nowhere to spill to (no directory) or failed: freed,
    /// no longer maintained, ANN queries scan.
    over_budget: AtomicBool,
    /// Upserts since the memory was last measured.
    since_check: AtomicU64,
    /// Changes (upserts and removals) since the graph was last saved.
    unsaved: AtomicU64,
    /// The `covers` of the saved files that hold exactly what this graph held when they were
    /// written or loaded (`None`: no such files). With `unsaved` at 0 they still hold exactly
    /// this graph, so a clean shutdown keeps them instead of writing them again.
    on_disk: Mutex<Option<u64>>,
}

impl Graph {
    fn new(id: u32, index: VectorIndex) -> Graph {
        Graph {
            id,
            index,
            ready: AtomicBool::new(false),
            over_budget: AtomicBool::new(false),
            since_check: AtomicU64::new(0),
            unsaved: AtomicU64::new(0),
            on_disk: Mutex::new(None),
        }
    }

    fn remember_files(&self, covers: Option<u64>) {
        *self.on_disk.lock().unwrap_or_else(|p| p.into_inner()) = covers;
    }

    /// The `covers` of saved files that hold exactly this graph now, if there are any.
    fn unchanged_on_disk(&self) -> Option<u64> {
        let covers = *self.on_disk.lock().unwrap_or_else(|p| p.into_inner());
        covers.filter(|_| self.unsaved.load(Ordering::Acquire) == 0)
    }

    /// Whether ANN queries may use the graph.
    pub(crate) fn usable(&self) -> bool {
        self.ready.load(Ordering::Acquire) && !self.over_budget.load(Ordering::Acquire)
    }
}

/// The graphs of every vector index, by index id, and their settings.
pub(crate) struct VectorIndexes {
    graphs: RwLock<HashMap<u32, Arc<Graph>>>,
    /// `vector_index_memory_bytes`, fixed at open.
    memory_limit: usize,
    /// Below this many rows an ANN query reads every candidate row (exact) instead of the graph.
    exact_below: AtomicUsize,
    /// Where graphs are saved, one directory per index id (`<data_dir>/vector_indexes`), or
    /// `None`: not persisted (tests, encryption at rest).
    dir: Option<PathBuf>,
    /// Held by every save and by the removal of a dropped index's files, so that a save
    /// never writes the files of an index being dropped; held by a clean shutdown over all
    /// its saves and its mark, so that no background save comes between them.
    saves: Mutex<()>,
    /// A clean shutdown saved every graph and set [`CLEAN_KEY`]: a write of a vector after
    /// it deletes that key in its own batch (`exec::apply`), so the mark never outlives a write
    /// the saved graphs lack.
    sealed: AtomicBool,
}

/// The store's word that the graphs saved with `covers` equal to its value (a random token)
/// hold every vector in the tables: written by [`Engine::close_vector_indexes`] after the last
/// save of a clean shutdown, deleted at the next open before anything is served.
pub(crate) const CLEAN_KEY: &[u8] = b"\x00vector_graphs_clean";

/// The value of [`CLEAN_KEY`]: the token of the graphs the clean shutdown saved, then (id,
/// covers) of those it kept because their files already held them exactly (8 + 12 bytes each,
/// big-endian; a mark of 8 bytes, as older versions wrote, keeps none).
struct CleanMark {
    token: u64,
    kept: Vec<(u32, u64)>,
}

impl CleanMark {
    fn encode(&self) -> Vec<u8> {
        let mut out = self.token.to_be_bytes().to_vec();
        for (id, covers) in &self.kept {
            out.extend_from_slice(&id.to_be_bytes());
            out.extend_from_slice(&covers.to_be_bytes());
        }
        out
    }

    /// `None` for a value of another shape (then no saved graph is trusted as it is).
    fn decode(v: &[u8]) -> Option<CleanMark> {
        let (token, rest) = v.split_first_chunk::<8>()?;
        if rest.len() % 12 != 0 {
            return None;
        }
        let kept = rest
            .chunks_exact(12)
            .map(|c| {
                let (id, covers) = c.split_at(4);
                Some((
                    u32::from_be_bytes(id.try_into().ok()?),
                    u64::from_be_bytes(covers.try_into().ok()?),
                ))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(CleanMark {
            token: u64::from_be_bytes(*token),
            kept,
        })
    }

    /// The `covers` the saved files of graph `id` must have to be trusted as they are.
    fn covers_of(&self, id: u32) -> u64 {
        self.kept
            .iter()
            .find(|(k, _)| *k == id)
            .map_or(self.token, |(_, c)| *c)
    }
}
/// A graph is saved in the background once this many of its rows changed, or an eighth of
/// them if that is more (each save writes the whole graph: this keeps the cost per write
/// bounded, and the rows a restart after a kill -9 must re-index few).
pub const SAVE_AFTER_CHANGES: u64 = 1000;

/// Default of `vector_index_memory_bytes`: 1 GiB over all graphs of one index.
pub const DEFAULT_MEMORY_BYTES: usize = 1 << 30;
/// Default row count under which ANN queries are answered by an exact scan.
pub const DEFAULT_EXACT_BELOW: usize = 2048;
/// Memory is measured once per this many upserts.
const CHECK_EVERY: u64 = 1024;
/// The most bytes of graph files a merge takes in (it builds their live rows in memory).
const MERGE_BYTES: usize = 64 << 20;
/// A graph served from disk saves its delta as a segment once over the limit and holding at
/// least this many rows.
pub const MIN_SEGMENT_ROWS: usize = 1000;

impl Default for VectorIndexes {
    fn default() -> Self {
        VectorIndexes::new(None, DEFAULT_MEMORY_BYTES)
    }
}

impl VectorIndexes {
    /// Graphs saved under `dir` (loaded at open, saved in the background and at a clean
    /// shutdown), or never persisted with `None`; each freed above `memory_limit` bytes.
    pub(crate) fn new(dir: Option<PathBuf>, memory_limit: usize) -> Self {
        VectorIndexes {
            graphs: RwLock::new(HashMap::new()),
            memory_limit,
            exact_below: AtomicUsize::new(DEFAULT_EXACT_BELOW),
            dir,
            saves: Mutex::new(()),
            sealed: AtomicBool::new(false),
        }
    }

    /// Whether a clean shutdown's save happened ([`CLEAN_KEY`] must go with the next write).
    pub(crate) fn sealed(&self) -> bool {
        self.sealed.load(Ordering::Acquire)
    }

    fn all(&self) -> Vec<(u32, Arc<Graph>)> {
        self.graphs
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(id, g)| (*id, g.clone()))
            .collect()
    }

    /// Forgets the graphs whose ids `keep` refuses, and removes their saved files.
    fn forget(&self, keep: impl Fn(u32) -> bool) {
        let _saves = self.saves.lock().unwrap_or_else(|p| p.into_inner());
        self.graphs
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|id, _| keep(*id));
        let Some(root) = &self.dir else { return };
        let Ok(entries) = std::fs::read_dir(root) else {
            return;
        };
        for e in entries.flatten() {
            let id = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok());
            if id.is_none_or(|id| !keep(id)) {
                if let Err(err) = std::fs::remove_dir_all(e.path()) {
                    tracing::warn!(
                        "cannot remove the saved vector index {}: {err}",
                        e.path().display()
                    );
                }
            }
        }
    }

    /// The background save of graph `id`: skipped once a clean shutdown saved it (it would
    /// replace that save with one the next open must scan to trust). Whether it was saved.
    fn save(&self, id: u32, g: &Graph) -> Result<bool, VectorIndexError> {
        let saves = self.saves.lock().unwrap_or_else(|p| p.into_inner());
        if self.sealed() {
            return Ok(false);
        }
        let saved = self.save_held(&saves, id, g, 0, false)?;
        if saved {
            self.merge_held(&saves, id, g, 0);
        }
        Ok(saved)
    }

    /// On disk, merges the small graph files saves leave ([`VectorIndex::merge_segments`])
    /// while together they take at most [`MERGE_BYTES`] or half the limit, whichever is
    /// less (the merge builds them in memory, and a writer over the limit waits for the save
    /// lock meanwhile). After background and shutdown saves only, never in a write. A failure
    /// leaves the files as they were (they still serve), so it is only logged.
    fn merge_held(&self, _saves: &MutexGuard<'_, ()>, id: u32, g: &Graph, covers: u64) {
        let Some(root) = &self.dir else { return };
        let max = MERGE_BYTES.min(self.memory_limit / 2) as u64;
        match g
            .index
            .merge_segments(&root.join(id.to_string()), covers, max)
        {
            Ok(0) => {}
            Ok(n) => tracing::info!(
                "vector index graph {id}: {n} graph files merged into one ({} left)",
                g.index.segment_count()
            ),
            Err(e) => tracing::warn!("vector index graph {id}: merging its graph files: {e}"),
        }
    }

    /// Saves graph `id` with `covers` unless it was dropped meanwhile; the caller holds
    /// `saves` (a clean shutdown holds it over all its saves, so that no background save
    /// comes between them). Whether it was saved.
    fn save_held(
        &self,
        _saves: &MutexGuard<'_, ()>,
        id: u32,
        g: &Graph,
        covers: u64,
        spill: bool,
    ) -> Result<bool, VectorIndexError> {
        let Some(root) = &self.dir else {
            return Ok(false);
        };
        if self.get(id).is_none() {
            return Ok(false);
        }
        let changes = g.unsaved.load(Ordering::Acquire);
        let dir = root.join(id.to_string());
        if spill {
            g.index.spill(&dir, covers)?;
        } else {
            g.index.save(&dir, covers)?;
        }

        g.unsaved.fetch_sub(changes, Ordering::AcqRel);
        g.remember_files(Some(covers));
        Ok(true)
    }

    /// Makes `index` the graph of index `id` (not yet ready for queries).
    fn install(&self, id: u32, index: VectorIndex) -> Arc<Graph> {
        let graph = Arc::new(Graph::new(id, index));
        self.graphs
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, graph.clone());
        graph
    }

    pub(crate) fn get(&self, id: u32) -> Option<Arc<Graph>> {
        self.graphs
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .cloned()
    }

    pub(crate) fn exact_below(&self) -> usize {
        self.exact_below.load(Ordering::Relaxed)
    }

    fn upsert(&self, g: &Graph, key: &[u8], v: &[f32]) {
        if g.over_budget.load(Ordering::Acquire) {
            return;
        }
        match g.index.upsert(key, v) {
            Ok(()) => {
                g.unsaved.fetch_add(1, Ordering::Relaxed);
            }
            // Refused before the write (`vector_updates`), or stored before the index
            // existed: a vector the index cannot hold stays out, as Cassandra's build over
            // existing rows skips it (and its ANN queries never return the row).
            Err(
                VectorIndexError::ZeroVector
                | VectorIndexError::NonFinite { .. }
                | VectorIndexError::OutOfBounds { .. }
                | VectorIndexError::Dimension { .. },
            ) => return,
            // The graph would miss the row: stop using it rather than answer without it.
            Err(_) => {
                self.over(g);
                return;
            }
        }
        if g.since_check.fetch_add(1, Ordering::Relaxed) + 1 >= CHECK_EVERY {
            g.since_check.store(0, Ordering::Relaxed);
            self.check_budget(g);
        }
    }

    /// Keeps `g` within the limit, checked every [`CHECK_EVERY`] upserts and once a graph is
    /// loaded or built: a graph in memory that takes more is spilled (saved and served from
    /// its files, [`VectorIndex::spill`]); one on disk whose delta (the rows since its last
    /// save) makes it take more saves the delta as a segment, once the delta has
    /// [`MIN_SEGMENT_ROWS`] rows (so that key maps alone over a tiny limit do not make a
    /// segment per check). With nowhere to save (no directory), or if the save fails, the
    /// graph is freed and ANN queries on its index scan (exact, slower).
    fn check_budget(&self, g: &Graph) {
        if g.over_budget.load(Ordering::Acquire) || g.index.memory_bytes() <= self.memory_limit {
            return;
        }
        if self.dir.is_none() {
            self.over(g);
            return;
        }
        let on_disk = g.index.is_on_disk();
        if on_disk && g.index.in_memory_len() < MIN_SEGMENT_ROWS {
            return;
        }
        let saves = self.saves.lock().unwrap_or_else(|p| p.into_inner());
        let before = g.index.memory_bytes();
        match self.save_held(&saves, g.id, g, 0, !on_disk) {
            Ok(_) => {
                if !on_disk {
                    tracing::info!(
                        "vector index graph {}: {before} bytes, over vector_index_memory_bytes ({}): now served from disk ({} bytes in memory)",
                        g.id,
                        self.memory_limit,
                        g.index.memory_bytes()
                    );
                }
            }
            Err(e) => {
                tracing::warn!(
                    "vector index graph {}: over vector_index_memory_bytes and cannot be saved ({e}); ANN queries on it scan the table",
                    g.id
                );
                self.over(g);
            }
        }
    }

    fn over(&self, g: &Graph) {
        g.over_budget.store(true, Ordering::Release);
        let _ = g.index.clear();
    }
}

/// One graph change a write makes: the row's new vector, or `None` to forget the row.
pub(crate) struct VectorUpdate {
    graph: Arc<Graph>,
    key: Vec<u8>,
    vector: Option<Vec<f32>>,
}

/// The graph changes of the rows a write stores (`written`: key -> new stored value), for
/// the tables among `tables` with vector indexes. A vector the index cannot hold
/// ([`check_indexable`]) fails the whole write here, before anything is written, with
/// Cassandra 5.0.9's answer: WriteFailure from this node, reason UNKNOWN (its replica throws
/// while indexing the row); the reason goes to the log, as there.
pub(crate) fn vector_updates(
    engine: &Engine,
    tables: &[Arc<TableDef>],
    written: &BTreeMap<Vec<u8>, Option<Vec<u8>>>,
) -> Result<Vec<VectorUpdate>, EngineError> {
    let mut out = Vec::new();
    for t in tables {
        for idx in &t.indexes {
            let Some(c) = t.column(&idx.column) else {
                continue;
            };
            if !matches!(c.ty, ColumnType::Vector(..)) {
                continue;
            }
            let Some(config) = vector_config(idx, t) else {
                continue;
            };
            let Some(graph) = engine.vectors.get(idx.id) else {
                continue;
            };
            let start = keys::table_prefix(t.id);
            let end = keys::prefix_end(&start);
            for (key, stored) in written.range(start..end) {
                let Some(d) = keys::decode_key(key) else {
                    continue;
                };
                if d.is_header {
                    continue;
                }
                let vector = match stored {
                    Some(v) => live_vector(&Row::decode(v).map_err(EngineError::corrupt)?, c.id),
                    None => None,
                };
                if let Some(Err(why)) = vector
                    .as_deref()
                    .map(|v| check_indexable(config.similarity, v))
                {
                    tracing::warn!(
                        "write to {}.{} refused: {why} (vector index {}, column {})",
                        t.keyspace,
                        t.name,
                        idx.name,
                        c.name
                    );
                    return Err(super::unindexable_write(engine.node().rpc_address));
                }
                out.push(VectorUpdate {
                    graph: graph.clone(),
                    key: key.clone(),
                    vector,
                });
            }
        }
    }
    Ok(out)
}

impl Engine {
    /// Applies the graph changes of a write that has been written (under its stripe locks).
    pub(crate) fn apply_vector_updates(&self, updates: Vec<VectorUpdate>) {
        for u in updates {
            match u.vector {
                Some(v) => self.vectors.upsert(&u.graph, &u.key, &v),
                None => {
                    if let Ok(true) = u.graph.index.remove(&u.key) {
                        u.graph.unsaved.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
    }

    /// Tables with fewer indexed rows than this answer ANN queries by an exact scan.
    pub fn set_vector_exact_below(&self, rows: usize) {
        self.vectors.exact_below.store(rows, Ordering::Relaxed);
    }

    /// Forgets the graphs of indexes the schema no longer has, and builds one for every
    /// vector index without one (a new index, a fresh id after TRUNCATE, every index when
    /// the store opens). Runs under the DDL lock or at open.
    pub(crate) fn build_vector_indexes(&self) -> Result<(), EngineError> {
        let schema = self.schema.get();
        let wanted = wanted_graphs(&schema);
        self.vectors
            .forget(|id| wanted.iter().any(|(_, i, _)| i.id == id));
        for (t, idx, config) in wanted {
            if self.vectors.get(idx.id).is_some() {
                continue;
            }
            let started = Instant::now();
            let index = VectorIndex::new(config).map_err(|e| EngineError::server(e.to_string()))?;
            // Installed before the scan: every write from now on maintains it, and the scan
            // (partition by partition under the stripe locks) adds what was written before.
            let graph = self.vectors.install(idx.id, index);
            self.each_stored_vector(&t, &idx, |key, vector| {
                if let Some(v) = vector {
                    self.vectors.upsert(&graph, &key, &v);
                }
            })?;
            self.vectors.check_budget(&graph);
            graph.ready.store(true, Ordering::Release);
            tracing::info!(
                "vector index {}.{}: graph of {} rows built from the table in {:?}",
                t.keyspace,
                idx.name,
                graph.index.len(),
                started.elapsed()
            );
        }
        Ok(())
    }

    /// Calls `f` with every row of `t` and its vector in `idx`'s column (`None`: the row has
    /// none), partition by partition under the partition's stripe lock, so a write is either
    /// before the visit (seen here) or after it (it maintains the graph itself). The one
    /// loop behind a graph's build and its catch-up at open.
    fn each_stored_vector(
        &self,
        t: &TableDef,
        idx: &IndexDef,
        mut f: impl FnMut(Vec<u8>, Option<Vec<f32>>),
    ) -> Result<(), EngineError> {
        let Some(c) = t.column(&idx.column).map(|c| c.id) else {
            return Ok(());
        };
        self.each_partition_locked(t.id, |prefix, _| {
            let rows = keys::row_key(prefix, &[]);
            let end = keys::prefix_end(&rows);
            for item in self.storage.scan(
                Bound::Included(rows.as_slice()),
                Bound::Excluded(end.as_slice()),
                false,
            ) {
                let (key, stored) = item?;
                let row = Row::decode_shared(&stored).map_err(EngineError::corrupt)?;
                f(key, live_vector(&row, c));
            }
            Ok(())
        })
    }

    /// At open, before [`Engine::build_vector_indexes`]: takes up the graphs saved under
    /// `vector_indexes/<id>`. A graph saved by a clean shutdown whose token the store still
    /// holds ([`CLEAN_KEY`]) is served as loaded; any other saved graph (a background save,
    /// then a kill -9) is brought up to date by one scan of its table that re-indexes every row
    /// whose vector the graph does not hold and removes the keys no row has, so it ends exactly
    /// as a rebuild would, at the cost of reading the table but not of building the graph.
    /// Files that cannot be used are removed and the index is rebuilt.
    pub(crate) fn load_vector_indexes(&self) -> Result<(), EngineError> {
        let mark = self.storage.get(CLEAN_KEY)?;
        if mark.is_some() {
            // From here on the saved graphs may fall behind the table: the mark goes before
            // any write (the journal replays in order, so no later write survives without
            // this delete), also by an open that saves nothing (no directory), whose writes
            // the saved graphs would lack just the same.
            let mut b = storage::WriteBatch::new();
            b.delete(CLEAN_KEY.to_vec());
            self.storage.write(b)?;
        }
        let Some(root) = self.vectors.dir.clone() else {
            return Ok(());
        };
        let mark = mark.as_deref().and_then(CleanMark::decode);
        let wanted = wanted_graphs(&self.schema.get());
        self.vectors
            .forget(|id| wanted.iter().any(|(_, i, _)| i.id == id));
        for (t, idx, config) in wanted {
            let dir = root.join(idx.id.to_string());
            if !dir.exists() {
                continue;
            }
            let started = Instant::now();
            let (index, covers) = match VectorIndex::load(&dir, config, self.vectors.memory_limit) {
                Ok(loaded) => loaded,
                Err(e) => {
                    tracing::warn!(
                        "vector index {}.{}: {e}; rebuilding it from the table",
                        t.keyspace,
                        idx.name
                    );
                    let _ = std::fs::remove_dir_all(&dir);
                    continue;
                }
            };
            let graph = self.vectors.install(idx.id, index);
            graph.remember_files(Some(covers));
            // Saved under a larger limit: freed before the catch-up would add to it.
            self.vectors.check_budget(&graph);
            if mark.as_ref().is_some_and(|m| m.covers_of(idx.id) == covers) {
                tracing::info!(
                    "vector index {}.{}: graph of {} rows loaded from {}{} in {:?} (saved at a clean shutdown)",
                    t.keyspace,
                    idx.name,
                    graph.index.len(),
                    dir.display(),
                    where_served(&graph.index),
                    started.elapsed()
                );
            } else {
                let (changed, removed) = self.reconcile(&t, &idx, &graph)?;
                tracing::info!(
                    "vector index {}.{}: graph of {} rows loaded from {}{} and brought up to date with the table in {:?} ({changed} rows re-indexed, {removed} removed)",
                    t.keyspace,
                    idx.name,
                    graph.index.len(),
                    dir.display(),
                    where_served(&graph.index),
                    started.elapsed()
                );
            }
            graph.ready.store(true, Ordering::Release);
        }
        Ok(())
    }

    /// Makes `graph` hold exactly the vectors of `t`'s rows: upserts every row whose vector it
    /// does not hold, removes rows without one and keys no row has. Returns (re-indexed,
    /// removed). At open only (no write runs beside it).
    fn reconcile(
        &self,
        t: &TableDef,
        idx: &IndexDef,
        graph: &Arc<Graph>,
    ) -> Result<(u64, usize), EngineError> {
        let (mut changed, mut removed) = (0u64, 0usize);
        // The labels of the rows found, one bit each: what the graph holds beyond them is
        // removed after the scan.
        let mut seen: Vec<u64> = Vec::new();
        self.each_stored_vector(t, idx, |key, vector| match vector {
            Some(v) => {
                let label = graph.index.holds(&key, &v).or_else(|| {
                    self.vectors.upsert(graph, &key, &v);
                    changed += 1;
                    graph.index.holds(&key, &v)
                });
                if let Some(l) = label.and_then(|l| usize::try_from(l).ok()) {
                    if seen.len() <= l / 64 {
                        seen.resize(l / 64 + 1, 0);
                    }
                    seen[l / 64] |= 1 << (l % 64);
                }
            }
            None => {
                if let Ok(true) = graph.index.remove(&key) {
                    removed += 1;
                }
            }
        })?;
        removed += graph
            .index
            .retain(|l| {
                usize::try_from(l)
                    .ok()
                    .and_then(|l| seen.get(l / 64).map(|w| w & (1 << (l % 64)) != 0))
                    .unwrap_or(false)
            })
            .map_err(|e| EngineError::server(e.to_string()))?;
        // `upsert` counted each re-indexed row; the removals are counted here.
        graph.unsaved.fetch_add(removed as u64, Ordering::Relaxed);
        Ok((changed, removed))
    }

    /// The background save: every graph in use with at least [`SAVE_AFTER_CHANGES`] changed
    /// rows (or an eighth of its rows, if more) since its last save, or every graph with any
    /// change when `all`. Returns how many were saved. Writes wait only while each graph is
    /// copied to memory.
    pub fn save_vector_indexes(&self, all: bool) -> Result<usize, EngineError> {
        let mut saved = 0;
        for (id, g) in self.vectors.all() {
            let unsaved = g.unsaved.load(Ordering::Relaxed);
            let due = if all {
                unsaved > 0
            } else {
                // On disk each save adds a segment that every search then walks: fewer,
                // larger ones (the delta is also saved whenever it passes the memory limit).
                let share = if g.index.is_on_disk() { 2 } else { 8 };
                unsaved >= SAVE_AFTER_CHANGES.max(g.index.len() as u64 / share)
            };
            if !due || !g.usable() {
                continue;
            }
            if self
                .vectors
                .save(id, &g)
                .map_err(|e| EngineError::server(e.to_string()))?
            {
                saved += 1;
            }
        }
        Ok(saved)
    }

    /// The clean shutdown's save (after the server stopped taking requests): with every
    /// stripe lock held, so that no write is between its batch and its graph change, saves
    /// every graph in use under a fresh token, then writes the token as [`CLEAN_KEY`] and
    /// syncs. The next open then loads those graphs without a scan. A write that still comes
    /// after this deletes the key in its own batch ([`VectorIndexes::sealed`]).
    pub fn close_vector_indexes(&self) -> Result<(), EngineError> {
        if self.vectors.dir.is_none() {
            return Ok(());
        }
        let _stripes: Vec<_> = self
            .stripes
            .iter()
            .map(|s| s.lock().unwrap_or_else(|p| p.into_inner()))
            .collect();
        let saves = self.vectors.saves.lock().unwrap_or_else(|p| p.into_inner());
        // A second close (after writes that took the mark) saves again: the graphs it saves
        // are again all the store's vectors.
        self.vectors.sealed.store(false, Ordering::Release);
        let r = crate::scalar::random_uuid(0);
        let token = u64::from_be_bytes(r[..8].try_into().unwrap_or_default()).max(1);
        let mut mark = CleanMark {
            token,
            kept: Vec::new(),
        };
        let mut saved = 0;
        for (id, g) in self.vectors.all() {
            if !g.usable() {
                continue;
            }
            // Files that already hold exactly this graph (nothing changed since they were
            // loaded or saved) stay as they are, under their own `covers`.
            if let Some(covers) = g.unchanged_on_disk() {
                mark.kept.push((id, covers));
                continue;
            }
            match self.vectors.save_held(&saves, id, &g, token, false) {
                Ok(true) => {
                    saved += 1;
                    self.vectors.merge_held(&saves, id, &g, token);
                }
                Ok(false) => {}
                Err(e) => tracing::warn!("saving vector index graph {id} at shutdown: {e}"),
            }
        }
        if saved + mark.kept.len() > 0 {
            let mut b = storage::WriteBatch::new();
            b.put(CLEAN_KEY.to_vec(), mark.encode());
            self.storage.write(b)?;
            self.storage.sync()?;
            self.vectors.sealed.store(true, Ordering::Release);
            tracing::info!(
                "saved {saved} vector index graph(s) for the next start, {} kept as saved before",
                mark.kept.len()
            );
        }
        Ok(())
    }

    /// Forgets the graphs (and removes the saved files) of indexes the schema no longer has:
    /// after DROP INDEX, DROP TABLE, DROP KEYSPACE.
    pub(crate) fn forget_dropped_vector_indexes(&self) {
        let wanted = wanted_graphs(&self.schema.get());
        self.vectors
            .forget(|id| wanted.iter().any(|(_, i, _)| i.id == id));
    }
}

/// How a loaded graph is served, for the start-up log.
fn where_served(index: &VectorIndex) -> String {
    if index.is_on_disk() {
        format!(
            " (served from {} graph files on disk, {} bytes in memory)",
            index.segment_count(),
            index.memory_bytes()
        )
    } else {
        String::new()
    }
}

/// The row's stored vector in column `column`, if it has a non-empty one.
fn live_vector(row: &Row, column: u16) -> Option<Vec<f32>> {
    row.cells
        .iter()
        .find(|x| x.column == column)
        .and_then(|x| match &x.value {
            CellValue::Live { value, .. } if !value.is_empty() => crate::similarity::floats(value),
            _ => None,
        })
}

/// Whether the vector index `idx` keeps a graph: on a regular column (a static one's values
/// live in partition headers, and its ANN queries scan).
pub(crate) fn has_graph(idx: &IndexDef, t: &TableDef) -> bool {
    t.column(&idx.column)
        .is_some_and(|c| c.kind == ColumnKind::Regular)
}

fn wanted_graphs(schema: &Schema) -> Vec<(Arc<TableDef>, IndexDef, VectorIndexConfig)> {
    schema
        .tables
        .values()
        .flat_map(|t| {
            t.indexes
                .iter()
                .filter(move |i| has_graph(i, t))
                .filter_map(move |i| Some((t.clone(), i.clone(), vector_config(i, t)?)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::CLEAN_KEY;
    use crate::tests::{node, q, rows};
    use crate::Engine;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    fn keys(e: &Engine, text: &str) -> Vec<String> {
        rows(q(e, Some("ks"), text).unwrap_or_else(|err| panic!("{text}: {err:?}")))
            .into_iter()
            .map(|r| r[0].clone())
            .collect()
    }

    fn exec(e: &Engine, text: &str) {
        q(e, Some("ks"), text).unwrap_or_else(|err| panic!("{text}: {err:?}"));
    }

    const QUERY: &str = "SELECT k FROM t ORDER BY v ANN OF [0.5, 0.25, 0.1] LIMIT 5";

    /// An engine on `store` saving its graphs under `dir`, each bounded by `memory_bytes`,
    /// whose ANN queries use the graph whatever the table's size.
    fn open_saving(
        store: &Arc<dyn storage::Storage>,
        dir: &std::path::Path,
        memory_bytes: usize,
    ) -> Engine {
        let e = Engine::open_with_options(
            store.clone(),
            node(),
            crate::FilterHandle::new(),
            crate::OpenOptions {
                vector_index_dir: Some(dir.to_path_buf()),
                vector_index_memory_bytes: memory_bytes,
            },
        )
        .unwrap();
        e.set_vector_exact_below(0);
        e
    }

    /// The graph of the one index of `ks.t`.
    fn graph_of(e: &Engine) -> Arc<super::Graph> {
        let schema = e.schema.get();
        let t = schema.table("ks", "t").unwrap();
        e.vectors.get(t.indexes[0].id).expect("a graph")
    }

    /// `query`'s keys by an exact scan (the graph bypassed).
    fn exact_keys(e: &Engine, query: &str) -> Vec<String> {
        e.set_vector_exact_below(usize::MAX);
        let r = keys(e, query);
        e.set_vector_exact_below(0);
        r
    }

    /// A cosine graph holds its vectors as bytes, whose rounding can order two rows closer
    /// than a byte step the wrong way round: the read asks it for twice LIMIT candidates and
    /// ranks those by their stored vectors, so the answer is the exact one.
    #[test]
    fn cosine_graph_candidates_are_ranked_by_their_stored_vectors() {
        let store: Arc<dyn storage::Storage> = Arc::new(storage::MemStorage::new());
        let e = Engine::open(store, node()).unwrap();
        e.set_vector_exact_below(0);
        exec(&e, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
        exec(&e, "CREATE TABLE t (k int PRIMARY KEY, v vector<float, 3>)");
        exec(&e, "CREATE CUSTOM INDEX ON t (v) USING 'sai'");
        for k in 10..60 {
            let x = k as f32 * 0.1;
            exec(
                &e,
                &format!("INSERT INTO t (k, v) VALUES ({k}, [-1.0, {x}, 1.0])"),
            );
        }
        // Row 1 is 0.0049 rad from the query, row 2 0.0040; in the graph row 1 is [127, 0, 0]
        // (exactly the query's direction) and row 2 [127, 1, 0].
        exec(&e, "INSERT INTO t (k, v) VALUES (1, [1.0, 0.0035, 0.0035])");
        exec(&e, "INSERT INTO t (k, v) VALUES (2, [1.0, 0.004, 0.0])");
        let query = "SELECT k FROM t ORDER BY v ANN OF [1.0, 0.0, 0.0] LIMIT 1";
        assert_eq!(exact_keys(&e, query), ["2"]);
        assert_eq!(keys(&e, query), ["2"]);
    }

    /// A vector no index can hold fails its write as Cassandra 5.0.9 fails it (WriteFailure,
    /// reason UNKNOWN; SIMPLE for one mutation, BATCH / UNLOGGED_BATCH for several, as
    /// 5.0.9's write types read through the Python driver) and writes nothing of the batch;
    /// such a query fails with ReadFailure; rows stored before the index with such vectors
    /// are never ANN results, by the graph or by the exact scan.
    #[test]
    fn unindexable_vectors_fail_writes_and_queries_and_are_never_results() {
        use proto::error::{DbError, WriteType};
        let store: Arc<dyn storage::Storage> = Arc::new(storage::MemStorage::new());
        let e = Engine::open(store, node()).unwrap();
        exec(&e, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
        exec(&e, "CREATE TABLE t (k int PRIMARY KEY, v vector<float, 3>)");
        for (k, v) in [
            (1, "[1, 0, 0]"),
            (2, "[NaN, 1, 0]"),
            (3, "[0, 0, 0]"),
            (4, "[1, Infinity, 0]"),
            (5, "[2e17, 1, 0]"),
            (6, "[1, 1, 0]"),
        ] {
            exec(&e, &format!("INSERT INTO t (k, v) VALUES ({k}, {v})"));
        }
        exec(&e, "CREATE CUSTOM INDEX ON t (v) USING 'sai'");
        let write_type = |text: &str| match q(&e, Some("ks"), text) {
            Err(DbError::WriteFailure {
                write_type,
                num_failures: 1,
                reasons,
                ..
            }) if reasons[0].code == 0 => write_type,
            other => panic!("{text}: {other:?}"),
        };
        assert_eq!(
            write_type("INSERT INTO t (k, v) VALUES (7, [NaN, 0, 1])"),
            WriteType::Simple
        );
        assert_eq!(
            write_type("UPDATE t SET v = [0, 0, 0] WHERE k = 1"),
            WriteType::Simple
        );
        assert_eq!(
            write_type("BEGIN BATCH INSERT INTO t (k, v) VALUES (8, [1, 2, 3]); INSERT INTO t (k, v) VALUES (9, [1, -1e18, 3]); APPLY BATCH"),
            WriteType::Batch
        );
        assert_eq!(
            write_type("BEGIN UNLOGGED BATCH INSERT INTO t (k, v) VALUES (8, [1, 2, 3]); INSERT INTO t (k, v) VALUES (9, [1, -Infinity, 3]); APPLY BATCH"),
            WriteType::UnloggedBatch
        );
        assert!(keys(&e, "SELECT k FROM t WHERE k IN (7, 8, 9)").is_empty());
        assert_eq!(
            keys(&e, "SELECT v FROM t WHERE k = 1"),
            ["Vector([Float(1.0), Float(0.0), Float(0.0)])"]
        );
        let query = "SELECT k FROM t ORDER BY v ANN OF [1, 0.5, 0] LIMIT 10";
        for exact_below in [usize::MAX, 0] {
            e.set_vector_exact_below(exact_below);
            assert_eq!(keys(&e, query), ["6", "1"], "exact_below {exact_below}");
            for bad in ["[NaN, 0, 0]", "[0, 0, 0]", "[1, 1e18, 0]"] {
                let text = format!("SELECT k FROM t ORDER BY v ANN OF {bad} LIMIT 3");
                assert!(
                    matches!(
                        q(&e, Some("ks"), &text),
                        Err(DbError::ReadFailure { reasons, .. }) if reasons[0].code == 0
                    ),
                    "{text}"
                );
            }
        }
        assert_eq!(graph_of(&e).index.len(), 2);
    }

    /// The graph path (forced with `exact_below` 0) re-checks every hit: deleted, overwritten
    /// and expired rows never come back, the search goes deeper when they are dropped, and a
    /// reopened engine rebuilds the graph from the table.
    #[test]
    fn graph_answers_are_checked_against_the_table_and_rebuilt_at_open() {
        let store: Arc<dyn storage::Storage> = Arc::new(storage::MemStorage::new());
        let e = Engine::open(store.clone(), node()).unwrap();
        e.set_vector_exact_below(0);
        exec(&e, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
        exec(&e, "CREATE TABLE t (k int PRIMARY KEY, v vector<float, 3>)");
        exec(&e, "CREATE CUSTOM INDEX ON t (v) USING 'sai' WITH OPTIONS = {'similarity_function': 'euclidean'}");
        for k in 0..300 {
            let x = (k as f32 * 0.37).sin();
            let y = (k as f32 * 0.11).cos();
            exec(
                &e,
                &format!("INSERT INTO t (k, v) VALUES ({k}, [{x}, {y}, 0.1])"),
            );
        }
        let exact = |e: &Engine| {
            e.set_vector_exact_below(usize::MAX);
            let r = keys(e, QUERY);
            e.set_vector_exact_below(0);
            r
        };
        let first = keys(&e, QUERY);
        assert_eq!(first.len(), 5);
        let want = exact(&e);
        let overlap = first.iter().filter(|k| want.contains(k)).count();
        assert!(overlap >= 4, "graph {first:?} vs exact {want:?}");

        // Drop the best three hits three ways; none may come back and LIMIT is still met.
        exec(&e, &format!("DELETE FROM t WHERE k = {}", first[0]));
        exec(
            &e,
            &format!("UPDATE t SET v = [-9.0, -9.0, -9.0] WHERE k = {}", first[1]),
        );
        exec(&e, &format!("DELETE v FROM t WHERE k = {}", first[2]));
        let second = keys(&e, QUERY);
        assert_eq!(second.len(), 5);
        assert!(!second.iter().any(|k| first[..3].contains(k)), "{second:?}");

        // A row written with a TTL (at 1000 s) is found, then gone once expired.
        exec(
            &e,
            "INSERT INTO t (k, v) VALUES (1000, [0.5, 0.25, 0.1]) USING TTL 5",
        );
        assert_eq!(keys(&e, QUERY)[0], "1000");
        let later = crate::tests::at(1010);
        let opts = crate::QueryOptions {
            keyspace: Some("ks".into()),
            ..Default::default()
        };
        let out = e
            .query(QUERY, crate::Values::Positional(vec![]), &opts, later)
            .unwrap();
        let after = rows(out);
        assert_eq!(after.len(), 5);
        assert!(after.iter().all(|r| r[0] != "1000"));

        // Reopened on the same store: rebuilt from the table, same answers (at 1000 s the
        // TTL'd row is live again).
        let before = keys(&e, QUERY);
        assert_eq!(before[0], "1000");
        drop(e);
        let e = Engine::open(store, node()).unwrap();
        e.set_vector_exact_below(0);
        assert_eq!(keys(&e, QUERY), before);
        exec(&e, "TRUNCATE t");
        assert!(keys(&e, QUERY).is_empty());
        // TRUNCATE gave the index a fresh id with its own (empty, ready) graph, and freed the
        // old one: the graph serves again at once.
        let schema = e.schema.get();
        let t = schema.table("ks", "t").unwrap();
        let graph = e
            .vectors
            .get(t.indexes[0].id)
            .expect("a graph for the new id");
        assert!(graph.usable() && graph.index.is_empty());
        assert_eq!(e.vectors.graphs.read().unwrap().len(), 1);
        exec(&e, "INSERT INTO t (k, v) VALUES (7, [0.5, 0.25, 0.1])");
        assert_eq!(graph.index.len(), 1);
        assert_eq!(keys(&e, QUERY), vec!["7".to_string()]);
    }

    /// Graphs saved by a clean shutdown load without a scan; saved ones that fell behind
    /// (writes after the save, then no clean shutdown: a kill -9) are brought up to date by
    /// one scan; a write after the clean shutdown's save clears the clean mark; damaged files
    /// are rebuilt from; DROP INDEX removes the files.
    #[test]
    fn the_clean_mark_names_kept_graphs_and_reads_the_old_form() {
        let m = super::CleanMark {
            token: 7,
            kept: vec![(3, 0), (9, u64::MAX)],
        };
        let back = super::CleanMark::decode(&m.encode()).unwrap();
        assert_eq!((back.token, back.kept.clone()), (7, m.kept.clone()));
        assert_eq!(
            (back.covers_of(3), back.covers_of(9), back.covers_of(4)),
            (0, u64::MAX, 7)
        );
        // The 8-byte mark of earlier versions: one token for every graph.
        let old = super::CleanMark::decode(&5u64.to_be_bytes()).unwrap();
        assert_eq!((old.covers_of(1), old.kept.len()), (5, 0));
        assert!(super::CleanMark::decode(&[0; 7]).is_none());
        assert!(super::CleanMark::decode(&[0; 13]).is_none());
    }

    #[test]
    fn saved_graphs_load_clean_or_catch_up_and_never_miss_a_row() {
        let store: Arc<dyn storage::Storage> = Arc::new(storage::MemStorage::new());
        let dir = std::env::temp_dir().join(format!("pg-vgraphs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let open_with = |memory_bytes: usize| open_saving(&store, &dir, memory_bytes);
        let open = || open_with(super::DEFAULT_MEMORY_BYTES);
        let (graph, exact) = (graph_of, exact_keys);
        let insert = |e: &Engine, k: i32| {
            let x = (k as f32 * 0.37).sin();
            let y = (k as f32 * 0.11).cos();
            exec(
                e,
                &format!("INSERT INTO t (k, v) VALUES ({k}, [{x}, {y}, 0.1])"),
            );
        };
        let e = open();
        exec(&e, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
        exec(&e, "CREATE TABLE t (k int PRIMARY KEY, v vector<float, 3>)");
        exec(&e, "CREATE CUSTOM INDEX ON t (v) USING 'sai' WITH OPTIONS = {'similarity_function': 'euclidean'}");
        for k in 0..300 {
            insert(&e, k);
        }
        // A background save, then more writes, then no clean shutdown.
        assert_eq!(
            e.save_vector_indexes(false).unwrap(),
            0,
            "300 < SAVE_AFTER_CHANGES"
        );
        assert_eq!(e.save_vector_indexes(true).unwrap(), 1);
        assert_eq!(graph(&e).unsaved.load(Ordering::Relaxed), 0);
        exec(&e, "INSERT INTO t (k, v) VALUES (1000, [0.5, 0.25, 0.1])");
        exec(&e, "UPDATE t SET v = [-9.0, -9.0, -9.0] WHERE k = 1");
        exec(&e, "DELETE FROM t WHERE k = 2");
        let want = exact(&e, QUERY);
        drop(e);

        // Loaded, then one scan re-indexed the two rows written after the save and removed
        // the deleted one: the graph equals the table.
        let e = open();
        let g = graph(&e);
        assert_eq!(g.index.len(), 300);
        assert_eq!(
            g.unsaved.load(Ordering::Relaxed),
            3,
            "2 re-indexed + 1 removed"
        );
        assert!(g.usable());
        assert_eq!(keys(&e, QUERY)[0], "1000");
        assert_eq!(exact(&e, QUERY), want);
        assert!(g
            .index
            .holds(
                &g.index.search(&[-9.0, -9.0, -9.0], 1).unwrap()[0].primary_key,
                &[-9.0, -9.0, -9.0]
            )
            .is_some());

        // A clean shutdown: loaded as saved, no scan (nothing re-indexed).
        e.close_vector_indexes().unwrap();
        assert!(store.get(CLEAN_KEY).unwrap().is_some());
        drop(e);
        let e = open();
        assert!(
            store.get(CLEAN_KEY).unwrap().is_none(),
            "the mark holds for one open"
        );
        let g = graph(&e);
        assert_eq!((g.index.len(), g.unsaved.load(Ordering::Relaxed)), (300, 0));
        assert_eq!(keys(&e, QUERY)[0], "1000");

        // Closed again with nothing written: the files that hold the graph stay as they are
        // (none written again), and the next open still trusts them.
        let saved = {
            let schema = e.schema.get();
            dir.join(schema.table("ks", "t").unwrap().indexes[0].id.to_string())
        };
        let files = |dir: &std::path::Path| {
            let mut v: Vec<_> = std::fs::read_dir(dir)
                .unwrap()
                .flatten()
                .map(|f| (f.file_name(), f.metadata().unwrap().modified().unwrap()))
                .collect();
            v.sort();
            v
        };
        let before = files(&saved);
        e.close_vector_indexes().unwrap();
        assert_eq!(
            files(&saved),
            before,
            "an unchanged graph is not saved again"
        );
        assert!(store.get(CLEAN_KEY).unwrap().is_some());
        drop(e);
        let e = open();
        let g = graph(&e);
        assert_eq!((g.index.len(), g.unsaved.load(Ordering::Relaxed)), (300, 0));
        assert_eq!(keys(&e, QUERY)[0], "1000");

        // A write after the clean shutdown's save takes the mark with it.
        e.close_vector_indexes().unwrap();
        exec(&e, "INSERT INTO t (k, v) VALUES (1001, [0.5, 0.25, 0.1])");
        assert!(store.get(CLEAN_KEY).unwrap().is_none());
        drop(e);
        let e = open();
        assert_eq!(graph(&e).unsaved.load(Ordering::Relaxed), 1);
        assert!(keys(&e, QUERY)[..2].contains(&"1001".to_string()));

        // Closed, written, closed again: the second close saves again (the first one's seal
        // does not stop it), so the next open loads as saved, with that write.
        e.close_vector_indexes().unwrap();
        exec(&e, "INSERT INTO t (k, v) VALUES (1002, [-7.0, -7.0, -7.0])");
        e.close_vector_indexes().unwrap();
        assert!(store.get(CLEAN_KEY).unwrap().is_some());
        let n = graph(&e).index.len();
        drop(e);
        let e = open();
        let g = graph(&e);
        assert_eq!((g.index.len(), g.unsaved.load(Ordering::Relaxed)), (n, 0));
        let hit = &g.index.search(&[-7.0, -7.0, -7.0], 1).unwrap()[0];
        assert!(g
            .index
            .holds(&hit.primary_key, &[-7.0, -7.0, -7.0])
            .is_some());

        // Under a smaller `vector_index_memory_bytes` (the one given at open, not the
        // default) the saved graph is served from its file, mapped, not loaded; nothing was
        // saved meanwhile, so the next open under the default loads it into memory again.
        let want = exact(&e, QUERY);
        drop(e);
        let small = open_with(1);
        assert!(graph(&small).usable() && graph(&small).index.is_on_disk());
        assert_eq!(graph(&small).index.in_memory_len(), 0);
        assert_eq!(keys(&small, QUERY), want);
        drop(small);
        let e = open();
        assert!(graph(&e).usable() && !graph(&e).index.is_on_disk());
        assert_eq!(keys(&e, QUERY), want);

        // An open that saves nothing (no directory: encryption at rest) takes the mark too,
        // so a write it makes is caught up at the next open that loads.
        e.close_vector_indexes().unwrap();
        drop(e);
        let plain = Engine::open(store.clone(), node()).unwrap();
        assert!(store.get(CLEAN_KEY).unwrap().is_none());
        exec(
            &plain,
            "INSERT INTO t (k, v) VALUES (1003, [-8.0, -8.0, -8.0])",
        );
        drop(plain);
        let e = open();
        assert_eq!(graph(&e).unsaved.load(Ordering::Relaxed), 1);
        let hit = &graph(&e).index.search(&[-8.0, -8.0, -8.0], 1).unwrap()[0];
        assert!(graph(&e)
            .index
            .holds(&hit.primary_key, &[-8.0, -8.0, -8.0])
            .is_some());

        // Damaged files: rebuilt from the table (every row counted as unsaved).
        e.close_vector_indexes().unwrap();
        let n = graph(&e).index.len();
        drop(e);
        let sub = std::fs::read_dir(&dir)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let keys_file = sub.join("keys.bin");
        let mut raw = std::fs::read(&keys_file).unwrap();
        raw[20] ^= 0xff;
        std::fs::write(&keys_file, raw).unwrap();
        let e = open();
        let g = graph(&e);
        assert_eq!(g.index.len(), n);
        assert_eq!(g.unsaved.load(Ordering::Relaxed), n as u64);
        assert_eq!(keys(&e, QUERY)[..2].len(), 2);

        // TRUNCATE takes the old id's files; the fresh id's graph is saved under its own.
        e.save_vector_indexes(true).unwrap();
        assert!(sub.exists());
        exec(&e, "TRUNCATE t");
        assert!(!sub.exists());
        insert(&e, 1);
        assert_eq!(e.save_vector_indexes(true).unwrap(), 1);
        let saved = || std::fs::read_dir(&dir).unwrap().count();
        assert_eq!(saved(), 1);

        // DROP INDEX takes the files with it, and so does DROP TABLE.
        exec(&e, "DROP INDEX t_v_idx");
        assert_eq!(saved(), 0);
        assert!(e.vectors.all().is_empty());
        exec(&e, "CREATE CUSTOM INDEX ON t (v) USING 'sai'");
        assert_eq!(e.save_vector_indexes(true).unwrap(), 1);
        assert_eq!(saved(), 1);
        exec(&e, "DROP TABLE t");
        assert_eq!(saved(), 0);
        assert!(e.vectors.all().is_empty());
        drop(e);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Over `vector_index_memory_bytes` a graph is served from disk (segments mapped, the
    /// rows since the last save in memory) instead of freed: every write path stays exact
    /// (new rows found, deleted, moved and expired rows never back), a kill -9 (no clean
    /// close) is caught up at open, a clean close needs no scan, and TRUNCATE and DROP take
    /// the files.
    #[test]
    fn graph_over_the_memory_limit_is_served_from_disk_exactly() {
        let store: Arc<dyn storage::Storage> = Arc::new(storage::MemStorage::new());
        let dir = std::env::temp_dir().join(format!("pg-vdisk-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let open = || open_saving(&store, &dir, 64 * 1024);
        let (graph, exact) = (graph_of, exact_keys);
        let vec_of = |k: i32| {
            let x = (k as f32 * 0.37).sin();
            let y = (k as f32 * 0.11).cos();
            let z = (k as f32 * 0.07).sin();
            format!("[{x}, {y}, {z}, 0.1]")
        };
        let e = open();
        exec(&e, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
        exec(&e, "CREATE TABLE t (k int PRIMARY KEY, v vector<float, 4>)");
        exec(&e, "CREATE CUSTOM INDEX ON t (v) USING 'sai' WITH OPTIONS = {'similarity_function': 'euclidean'}");
        for k in 0..2100 {
            exec(
                &e,
                &format!("INSERT INTO t (k, v) VALUES ({k}, {})", vec_of(k)),
            );
        }
        let g = graph(&e);
        assert!(g.usable() && g.index.is_on_disk(), "spilled, not freed");
        assert!(g.index.segment_count() >= 1);
        assert!(
            g.index.in_memory_len() < 1100,
            "{}",
            g.index.in_memory_len()
        );
        let q = |v: &str| format!("SELECT k FROM t ORDER BY v ANN OF {v} LIMIT 5");
        // Each row is its own nearest neighbour (graph path), old or new.
        for k in [0, 500, 1500, 2099] {
            assert_eq!(keys(&e, &q(&vec_of(k)))[0], k.to_string());
        }
        // Rows in segments removed, moved, expired; a new row written with a TTL.
        exec(&e, "DELETE FROM t WHERE k = 10");
        exec(&e, "UPDATE t SET v = [9.0, 9.0, 9.0, 9.0] WHERE k = 20");
        exec(&e, "DELETE v FROM t WHERE k = 30");
        exec(
            &e,
            &format!(
                "INSERT INTO t (k, v) VALUES (5000, {}) USING TTL 5",
                vec_of(40)
            ),
        );
        for k in [10, 30] {
            assert!(
                !keys(&e, &q(&vec_of(k))).contains(&k.to_string()),
                "row {k} came back"
            );
        }
        assert!(!keys(&e, &q(&vec_of(20)))[..1].contains(&"20".to_string()));
        assert_eq!(keys(&e, &q("[9.0, 9.0, 9.0, 9.0]"))[0], "20");
        assert!(keys(&e, &q(&vec_of(40)))[..2].contains(&"5000".to_string()));
        let later = crate::tests::at(1010);
        let opts = crate::QueryOptions {
            keyspace: Some("ks".into()),
            ..Default::default()
        };
        let out = e
            .query(
                &q(&vec_of(40)),
                crate::Values::Positional(vec![]),
                &opts,
                later,
            )
            .unwrap();
        assert!(rows(out).iter().all(|r| r[0] != "5000"), "expired row");
        let probes: Vec<String> = [3, 10, 20, 30, 777, 2050]
            .iter()
            .map(|k| q(&vec_of(*k)))
            .collect();
        let want: Vec<_> = probes.iter().map(|p| exact(&e, p)).collect();
        let got: Vec<_> = probes.iter().map(|p| keys(&e, p)).collect();
        assert_eq!(got, want);

        // No clean close (a kill -9): the saved segments are loaded, the rows since the last
        // save re-indexed and the deleted ones dropped by the catch-up scan.
        drop(e);
        let e = open();
        let g = graph(&e);
        assert!(g.usable() && g.index.is_on_disk());
        assert_eq!(g.index.len(), 2100 - 2 + 1);
        let got: Vec<_> = probes.iter().map(|p| keys(&e, p)).collect();
        assert_eq!(got, want);
        // A clean close saves the delta as one more segment; the next open scans nothing.
        e.close_vector_indexes().unwrap();
        let segments = g.index.segment_count();
        assert_eq!(g.index.in_memory_len(), 0);
        drop(e);
        let e = open();
        let g = graph(&e);
        assert_eq!(
            (g.index.segment_count(), g.unsaved.load(Ordering::Relaxed)),
            (segments, 0)
        );
        let got: Vec<_> = probes.iter().map(|p| keys(&e, p)).collect();
        assert_eq!(got, want);
        // The heap it takes: the key maps, the segments' node tables, the delta (empty).
        assert!(
            g.index.memory_bytes() < 2100 * 200,
            "{}",
            g.index.memory_bytes()
        );

        // TRUNCATE: the old id's files go, the fresh graph starts in memory.
        let saved = || std::fs::read_dir(&dir).map_or(0, |d| d.count());
        assert_eq!(saved(), 1);
        exec(&e, "TRUNCATE t");
        assert_eq!(saved(), 0);
        assert!(keys(&e, &q(&vec_of(1))).is_empty());
        assert!(!graph(&e).index.is_on_disk());
        exec(&e, "INSERT INTO t (k, v) VALUES (1, [0.5, 0.25, 0.1, 0.0])");
        e.close_vector_indexes().unwrap();
        assert_eq!(saved(), 1);
        exec(&e, "DROP TABLE t");
        assert_eq!(saved(), 0);
        drop(e);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
