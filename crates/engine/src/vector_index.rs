//! An approximate-nearest-neighbour index over the float vectors of one column: what an SAI
//! vector index (`CREATE CUSTOM INDEX ... USING 'StorageAttachedIndex'`) holds, and what
//! `ORDER BY v ANN OF [...] LIMIT k` asks.
//!
//! It knows nothing of the catalog or the write path (`index::vector` wires it in: one per
//! SAI vector index, built, maintained and dropped there): it is a self-contained structure
//! keyed by the row's primary key (its storage key bytes, opaque here), with no I/O except
//! [`VectorIndex::save`] / [`VectorIndex::load`] / [`VectorIndex::spill`]. The graph is USearch's HNSW (see the workspace `Cargo.toml` for
//! why that library won); this module owns the mapping between primary keys and the graph's
//! 64-bit labels, growth, replacement, scores and the on-disk form.
//!
//! # Invariants
//! - One vector per primary key: [`VectorIndex::upsert`] replaces the previous one.
//! - Every label in the graph maps to exactly one primary key and back (`keys`/`labels`);
//!   a removed key's label is removed from the graph before the maps forget it.
//! - Scores are Cassandra's similarity scores (higher is closer), computed from the graph's
//!   distance; they may differ from `similarity_*` in the last bits (SIMD summation order),
//!   or by up to about 0.001 under `I8` (see [`VectorIndexConfig::candidates`]). A caller
//!   that must rank or print Cassandra's exact score recomputes it with
//!   [`crate::similarity::Similarity::score`] on the row's stored vector.
//! - Only vectors that pass [`check_indexable`] enter the graph or search it: finite
//!   components within ±1e17, and under cosine not all zero (no direction).
//! - Nothing here panics on bad input; every failure is a [`VectorIndexError`].
//!
//! # Persistence
//! (In the `persist` submodule, with [`VectorIndex::spill`], [`VectorIndex::merge_segments`]
//! and the key map's format.) [`VectorIndex::save`] writes the graph to a file of its own, then commits by renaming the
//! key map into place: settings, the caller's `covers` number, the graph file's name, length
//! and CRC, and every key with its label and a hash of its vector. A crash anywhere leaves the
//! previous save or the new one, whole. [`VectorIndex::load`] refuses anything that does not
//! match (settings, checksums, sizes): the caller then rebuilds from the base table, which is
//! always the source of truth. [`VectorIndex::holds`] (the vector hash) and
//! [`VectorIndex::retain`] let the caller bring a loaded index up to date with its table
//! (`index::vector`).
//!
//! # Memory
//! [`VectorIndex::memory_bytes`] is what the index holds on the heap. `quantization`
//! (`F16`, `I8`) halves or quarters the vectors' share. [`VectorIndex::spill`] moves an index
//! to disk: its graph is saved and served memory-mapped (USearch's `view`, paged by the OS),
//! and from then on it is a list of immutable mapped **segments** plus an in-memory **delta**
//! graph of the rows indexed since the last save. A save writes the delta as one more segment
//! (USearch cannot add to a mapped graph, nor build one on disk, so segments are never
//! rewritten); a search walks the delta and every segment and merges the hits by distance;
//! a row removed or replaced after its segment was saved stays in that segment's graph and is
//! skipped by the walk (a filtered search on the live labels). On the heap then: the key maps
//! (about 100 bytes a row), USearch's node table of each segment (16 bytes a row) and the
//! delta. [`VectorIndex::merge_segments`] merges the newest small segments into one (their
//! live rows, rebuilt in memory); larger ones stay: many of them cost search time, and dead
//! rows in them cost disk, until the index is rebuilt (TRUNCATE, a new index, damaged files).

//!
//! # Wiring (as planned; what was built is `index::vector`, `index::ann` and `read/ann.rs`:
//! a saved graph is caught up at open by a scan of its table rather than a replay after
//! `covers`, and TTL'd rows are filtered at read)
//! - `CREATE CUSTOM INDEX ... USING 'StorageAttachedIndex'` on column `c`:
//!   [`VectorIndexConfig::for_column`]`(&c.ty, options, name)` (`Ok(None)`: not a vector, a
//!   plain SAI index), then [`VectorIndex::new`] and a background build: for every live row
//!   [`VectorIndex::upsert_serialized`]`(storage_row_key, cell)`.
//! - Writes, under the partition's lock, after the batch is written: a live vector cell
//!   `upsert_serialized(row_key, cell)`; a deleted/expired/null cell, row or partition
//!   deletion `remove(row_key)` (for a range or partition delete: each row key it covers);
//!   TRUNCATE `clear()`; DROP INDEX / DROP TABLE: drop the value and its directory.
//!   A TTL'd cell: index it, and filter expired rows at read (the read re-checks liveness).
//! - `SELECT ... ORDER BY c ANN OF q LIMIT k`: `search_where(q, k', |row_key| keep)` where
//!   `keep` applies the partition-key restriction / other SAI predicates; read each hit's row
//!   from storage, drop rows no longer live or whose stored vector differs (a race with a
//!   write), and return rows in hit order. Over-fetch `k' = 2k` (or loop) when rows are
//!   dropped. Score selectors (`similarity_cosine(c, q)`) are computed by the function, so
//!   they are Cassandra's exact floats.
//! - Restart: [`VectorIndex::load`], then trust it only on a clean-shutdown mark, else
//!   catch it up by a scan; on `Unusable`/`Io`, rebuild from the table (never serve a
//!   partial index).
//!
//! Cassandra 5.0.9's answers the ANN planner must give (read off a running node):
//! no LIMIT: "Top-K queries must have a limit specified and the limit must be less than the
//! query page size"; LIMIT 1001: "Use of ANN OF in an ORDER BY clause requires a LIMIT that is
//! not greater than 1000. LIMIT was 1001"; no index: "ANN ordering by vector requires the
//! column to be indexed"; a non-indexed restriction (even with ALLOW FILTERING): "ANN ordering
//! by vector requires all restricted column(s) to be indexed"; `ANN OF` on a non-vector
//! column `t`: "Unexpected receiver type 'text'; only list and vector are expected"; another
//! ordering beside it: "ANN ordering does not support any other ordering"; PER PARTITION LIMIT:
//! "Top-K queries do not support per-partition limits"; aggregates: "Top-K queries can not be
//! run with aggregation"; a second SAI index on the column: "Cannot create more than one
//! storage-attached index on the same column: v"; unknown option: ConfigurationException
//! "Properties specified [source_model] are not understood by StorageAttachedIndex". A vector
//! an index cannot hold ([`check_indexable`]: a NaN or infinite component, one beyond ±1e17,
//! all zeros under cosine) written to an indexed column, or asked as an ANN query, fails there
//! with WriteFailure / ReadFailure (its replica refuses it); `index::vector` and `read/ann.rs`
//! answer the same.

mod persist;

use crate::similarity::Similarity;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::RwLock;
use usearch::ffi::{IndexOptions, MetricKind, ScalarKind};

/// How vectors are stored in the graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantization {
    F32,
    F16,
    /// bfloat16: f32's exponent with 8 bits of mantissa.
    BF16,
    I8,
}

/// Settings of one index. `Default`: M 16, ef_construction 128, ef_search 64 (`optimize_for`
/// LATENCY; RECALL is 256). On the bench's real 384-dim embeddings ef_search 64 gives recall@10
/// 0.988 at 1.5x the queries per CPU second of 128 (0.9966; bench/results/2026-11-29/vector);
/// on uniform random 64-dim vectors, the worst case for a graph, it gave 0.84 in session 17
/// (bench/results/2026-11-24/ann-cql.txt, where Cassandra 5.0.9's default gave 0.48), and the
/// recall floor of tests/python/test_ann.py (0.9 on 3,000 such vectors) holds.
#[derive(Debug, Clone, PartialEq)]
pub struct VectorIndexConfig {
    pub dimension: usize,
    pub similarity: Similarity,
    /// HNSW `M`: links per node.
    pub connectivity: usize,
    /// HNSW `ef_construction`.
    pub expansion_add: usize,
    /// HNSW `ef_search`; a search for more rows than this widens its beam to `k`.
    pub expansion_search: usize,
    pub quantization: Quantization,
}

impl VectorIndexConfig {
    pub fn new(dimension: usize, similarity: Similarity) -> Self {
        VectorIndexConfig {
            dimension,
            similarity,
            connectivity: 16,
            expansion_add: 128,
            expansion_search: 64,
            quantization: Quantization::F32,
        }
    }

    /// The settings of an SAI index on a column of type `ty` with the index's `options`
    /// (`similarity_function`, `optimize_for`), as `CREATE CUSTOM INDEX ... USING
    /// 'StorageAttachedIndex'` takes them: `Ok(None)` when the column is not a vector (a plain
    /// SAI index), `Err` with Cassandra 5.0.9's message for a vector of non-float elements or a
    /// bad option value. Options this does not know are left to the caller (Cassandra answers
    /// those with a ConfigurationException naming them).
    pub fn for_column<'o>(
        ty: &proto::types::ColumnType,
        options: impl IntoIterator<Item = (&'o str, &'o str)>,
        index_name: Option<&str>,
    ) -> Result<Option<VectorIndexConfig>, String> {
        if !matches!(ty, proto::types::ColumnType::Vector(..)) {
            return Ok(None);
        }
        let Some(dimension) = crate::similarity::float_dimension(ty) else {
            return Err(
                "SAI ANN indexes are only allowed on vector columns with float elements".into(),
            );
        };
        let index = index_name.unwrap_or("null");
        // Cassandra's default similarity for a vector index is cosine.
        let mut config = VectorIndexConfig::new(dimension as usize, Similarity::Cosine);
        for (key, value) in options {
            match key.to_ascii_lowercase().as_str() {
                "similarity_function" => {
                    config.similarity = Similarity::from_option(value).ok_or_else(|| {
                        format!(
                            "Similarity function {} was not recognized for index {index}. Valid values are: EUCLIDEAN, DOT_PRODUCT, COSINE",
                            value.to_ascii_uppercase()
                        )
                    })?
                }
                "optimize_for" => {
                    config.expansion_search = match value.to_ascii_uppercase().as_str() {
                        "LATENCY" => 64,
                        "RECALL" => 256,
                        other => {
                            return Err(format!(
                                "optimize_for '{other}' was not recognized for index {index}. Valid values are: LATENCY, RECALL"
                            ))
                        }
                    }
                }
                "maximum_node_connections" => {
                    return Err("Maximum node connections cannot be set without enabling SAI_VECTOR_ALLOW_CUSTOM_PARAMETERS".into())
                }
                "construction_beam_width" => {
                    return Err("Construction beam width cannot be set without enabling SAI_VECTOR_ALLOW_CUSTOM_PARAMETERS".into())
                }
                _ => {}
            }
        }
        // Under cosine the graph holds each vector as signed bytes scaled to its own largest
        // component ([`quantize_i8`]): a quarter of f32's bytes, and USearch's i8 angular kernel
        // (integer dot products, VNNI) instead of converting half-precision floats at every
        // comparison, which was 46% of an ANN query's server CPU. The rows' stored vectors
        // re-rank the candidates exactly ([`candidates`](Self::candidates)). Measured on the
        // bench's 20,000 real 384-dim embeddings (bench/results/2026-11-29/vector-i8). Not for
        // the other similarities: their vectors' scale counts.
        if config.similarity == Similarity::Cosine {
            config.quantization = Quantization::I8;
        }
        Ok(Some(config))
    }

    fn options(&self) -> IndexOptions {
        IndexOptions {
            dimensions: self.dimension,
            metric: match self.similarity {
                Similarity::Cosine if self.unit_vectors() => MetricKind::IP,
                Similarity::Cosine => MetricKind::Cos,
                Similarity::Euclidean => MetricKind::L2sq,
                Similarity::DotProduct => MetricKind::IP,
            },
            quantization: match self.quantization {
                Quantization::F32 => ScalarKind::F32,
                Quantization::F16 => ScalarKind::F16,
                Quantization::BF16 => ScalarKind::BF16,
                Quantization::I8 => ScalarKind::I8,
            },
            connectivity: self.connectivity,
            expansion_add: self.expansion_add,
            expansion_search: self.expansion_search,
            multi: false,
        }
    }

    /// How many of the graph's nearest rows to ask for so that an exact re-rank (by the rows'
    /// stored vectors) of those within [`rerank_margin`](Self::rerank_margin) of the `k`-th
    /// finds the `k` nearest: `2k` for an `I8` graph, whose scores are off by up to about
    /// 0.001 (so the true 10th can be its 11th or 12th), else `k`. On the bench's 20,000
    /// embeddings, brute force over the bytes: recall@10 0.9958 from the top 10 alone, 1.0
    /// from the top 20 re-ranked (bench/results/2026-11-29/vector-i8).
    pub fn candidates(&self, k: usize) -> usize {
        if self.own_i8() {
            k.saturating_mul(2)
        } else {
            k
        }
    }

    /// How far below the `k`-th candidate's graph score (Cassandra's score units, higher is
    /// closer) a candidate can be and still be among the `k` nearest by its exact score: 0
    /// unless the graph is `I8`. 0.003 is three times the largest error of the `I8` scores
    /// measured on the bench's 20,000 embeddings and 1,000 queries (0.0010; 0.0002 on
    /// average), so a query reads about 11.4 rows for LIMIT 10 rather than 20.
    pub fn rerank_margin(&self) -> f32 {
        if self.own_i8() {
            0.003
        } else {
            0.0
        }
    }

    /// Whether the graph holds unit-length copies of the vectors and ranks them by inner
    /// product: for cosine, which then is the inner product, at a third of the arithmetic
    /// of USearch's angular metric (it computes both norms at every comparison; measured:
    /// bench/results/2026-11-29/vector). Not under `I8`: [`quantize_i8`] scales each vector
    /// itself, and the graph ranks by cosine (its i8 kernel computes the norms in the same
    /// integer pass).
    fn unit_vectors(&self) -> bool {
        self.similarity == Similarity::Cosine && self.quantization != Quantization::I8
    }

    /// The settings as text, saved beside the graph and compared at load.
    fn fingerprint(&self) -> String {
        format!(
            "dimension={} similarity={:?} connectivity={} expansion_add={} quantization={:?}{}",
            self.dimension,
            self.similarity,
            self.connectivity,
            self.expansion_add,
            self.quantization,
            if self.unit_vectors() { " unit=ip" } else { "" }
        ) + if self.own_i8() { " i8=max127" } else { "" }
    }

    /// Whether the graph holds the vectors as signed bytes quantized here ([`quantize_i8`]):
    /// `I8` under cosine, which does not see each vector's scale.
    fn own_i8(&self) -> bool {
        self.quantization == Quantization::I8 && self.similarity == Similarity::Cosine
    }

    /// `v` as the graph holds it: scaled to unit length under [`unit_vectors`](Self::unit_vectors)
    /// (never zero there: cosine refuses zero vectors before this); under `I8` with cosine,
    /// quantized here ([`quantize_i8`]).
    fn graph_form<'v>(&self, v: &'v [f32]) -> GraphVector<'v> {
        if self.own_i8() {
            return GraphVector::I8(quantize_i8(v));
        }
        if !self.unit_vectors() {
            return GraphVector::F32(v.into());
        }
        let norm = v
            .iter()
            .map(|x| f64::from(*x) * f64::from(*x))
            .sum::<f64>()
            .sqrt();
        GraphVector::F32(
            v.iter()
                .map(|x| (f64::from(*x) / norm) as f32)
                .collect::<Vec<_>>()
                .into(),
        )
    }
}

/// `v` as signed bytes for a cosine graph, scaled so that its largest component is 127 and
/// rounded. Cosine does not see the scale, so each vector gets its own, and all 255 levels
/// go to the vector's own range. USearch's cast (which a float vector added to an `I8` graph
/// goes through) divides by the vector's length instead and truncates: a unit 384-dim
/// embedding's components (about 0.05 on average, 0.2 at most) then use about a fifth of the
/// range, and its rankings lose recall (0.951 against 0.988 for `F16` at ef 64 on the bench's
/// embeddings, bench/results/2026-11-29/vector). Non-finite components become 0 (no panic).
fn quantize_i8(v: &[f32]) -> Vec<i8> {
    let max = v
        .iter()
        .filter(|x| x.is_finite())
        .fold(0f64, |m, x| m.max(f64::from(x.abs())));
    let scale = if max > 0.0 { 127.0 / max } else { 0.0 };
    v.iter()
        .map(|x| match x.is_finite() {
            // Within [-127, 127] by the choice of scale; `as` saturates anyway.
            true => round_to_i8(f64::from(*x) * scale),
            false => 0,
        })
        .collect()
}

/// `y.round() as i8` (half away from zero, saturating, NaN to 0) without the call to libm's
/// `round` that x86-64's baseline instruction set needs for it: that call was 0.7% of an
/// index build's instructions and 1% of an ANN query's (bench/results/2026-11-29/vector-profile).
/// `y - trunc(y)` is exact below 2^52, so the halfway test is too.
fn round_to_i8(y: f64) -> i8 {
    // Far outside i8 (or NaN): the saturating cast, as `round` then `as` would give.
    if y.is_nan() || y.abs() >= 4096.0 {
        return y as i8;
    }
    let t = y as i64;
    let f = y - t as f64;
    let r = if f >= 0.5 {
        t + 1
    } else if f <= -0.5 {
        t - 1
    } else {
        t
    };
    r.clamp(i64::from(i8::MIN), i64::from(i8::MAX)) as i8
}

/// A vector as the graph holds it (the graph is told its scalar type by the slice's type).
enum GraphVector<'v> {
    F32(std::borrow::Cow<'v, [f32]>),
    I8(Vec<i8>),
}

impl GraphVector<'_> {
    fn add(&self, graph: &usearch::Index, label: u64) -> Result<(), VectorIndexError> {
        match self {
            GraphVector::F32(v) => graph.add(label, v),
            GraphVector::I8(v) => graph.add(label, v),
        }
        .map_err(lib)
    }

    fn search(
        &self,
        graph: &usearch::Index,
        k: usize,
    ) -> Result<usearch::ffi::Matches, VectorIndexError> {
        match self {
            GraphVector::F32(v) => graph.search(v, k),
            GraphVector::I8(v) => graph.search(v, k),
        }
        .map_err(lib)
    }

    fn filtered_search(
        &self,
        graph: &usearch::Index,
        k: usize,
        keep: impl Fn(u64) -> bool,
    ) -> Result<usearch::ffi::Matches, VectorIndexError> {
        match self {
            GraphVector::F32(v) => graph.filtered_search(v, k, keep),
            GraphVector::I8(v) => graph.filtered_search(v, k, keep),
        }
        .map_err(lib)
    }

    /// The vector `graph` holds for `label`, in the graph's own form (`None`: not there).
    fn of(
        config: &VectorIndexConfig,
        graph: &usearch::Index,
        label: u64,
    ) -> Result<Option<GraphVector<'static>>, VectorIndexError> {
        Ok(if config.own_i8() {
            let mut v = vec![0i8; config.dimension];
            (graph.get(label, &mut v).map_err(lib)? == 1).then_some(GraphVector::I8(v))
        } else {
            let mut v = vec![0f32; config.dimension];
            (graph.get(label, &mut v).map_err(lib)? == 1).then(|| GraphVector::F32(v.into()))
        })
    }
}

/// The largest component magnitude an index takes (Cassandra's `MAX_FLOAT32_COMPONENT`).
pub const MAX_COMPONENT: f32 = 1e17;

/// Whether an index can hold `v` or be searched with it, with Cassandra 5.0.9's reason when
/// not (`OnHeapGraph.validateIndexable`, which its replicas run on every indexed write and
/// ANN query): the first component that is NaN or infinite, or beyond ±[`MAX_COMPONENT`]; then,
/// under cosine, all components zero. One pass over `v` when it is fine.
pub fn check_indexable(similarity: Similarity, v: &[f32]) -> Result<(), VectorIndexError> {
    // False for NaN and the infinities too.
    if !v.iter().all(|x| x.abs() <= MAX_COMPONENT) {
        for (index, &value) in v.iter().enumerate() {
            if !value.is_finite() {
                return Err(VectorIndexError::NonFinite { index, value });
            }
            if value.abs() > MAX_COMPONENT {
                return Err(VectorIndexError::OutOfBounds { index, value });
            }
        }
    }
    if similarity == Similarity::Cosine && v.iter().all(|x| *x == 0.0) {
        return Err(VectorIndexError::ZeroVector);
    }
    Ok(())
}

/// Why an index operation failed.
#[derive(Debug, thiserror::Error)]
pub enum VectorIndexError {
    #[error("Invalid vector dimension: expected {expected} but got {got}")]
    Dimension { expected: usize, got: usize },
    #[error("Zero vectors cannot be indexed or queried with cosine similarity")]
    ZeroVector,
    #[error("non-finite value at vector[{index}]={}", crate::javafmt::java_float(*value))]
    NonFinite { index: usize, value: f32 },
    #[error("Out-of-bounds value at vector[{index}]={}", crate::javafmt::java_float(*value))]
    OutOfBounds { index: usize, value: f32 },
    #[error("Vector index library error: {0}")]
    Library(String),
    #[error("Vector index files in {dir} cannot be used ({reason}); rebuild from the table")]
    Unusable { dir: PathBuf, reason: String },
    #[error("Vector index I/O error on {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn lib(e: impl std::fmt::Display) -> VectorIndexError {
    VectorIndexError::Library(e.to_string())
}

/// One search result: the row's primary key and its similarity score (higher is closer).
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub primary_key: Vec<u8>,
    pub score: f32,
}

#[derive(Clone, Copy)]
struct Slot {
    label: u64,
    /// [`vector_hash`] of the vector the graph holds for the key: what a reconciling scan
    /// compares a stored row with ([`VectorIndex::holds`]), whatever the quantization.
    hash: u64,
}

/// FNV-1a over the vector's bits: stable across builds and versions (a saved key map holds
/// it), and cheap beside a graph insertion.
fn vector_hash(v: &[f32]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for x in v {
        for b in x.to_bits().to_le_bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

struct Inner {
    /// In memory: the whole graph. On disk ([`VectorIndex::spill`]): the rows indexed since
    /// the last save (the delta), the rest being in `segments`.
    graph: usearch::Index,
    /// Saved graph files served memory-mapped (USearch's `view`: read-only, paged by the OS,
    /// not on the heap), oldest first. Empty while the index is in memory.
    segments: Vec<Segment>,
    /// Serving from disk: a save writes `graph` as a new segment instead of rewriting the
    /// whole index.
    on_disk: bool,
    /// primary key -> graph label and the hash of the vector indexed for it.
    labels: HashMap<Vec<u8>, Slot>,
    /// graph label -> primary key. The only record of which labels are live: a segment is
    /// immutable, so a row removed or replaced after its save stays in the segment's graph
    /// and is filtered out of its searches by its label's absence here.
    keys: HashMap<u64, Vec<u8>>,
    next_label: u64,
    /// What the two maps take, kept as they change (measuring walks nothing).
    key_bytes: usize,
}

/// One saved graph file served memory-mapped.
struct Segment {
    file: String,
    len: u64,
    crc: u32,
    graph: usearch::Index,
}

/// Heap bytes one key takes in the two maps: the key twice, the slot, the label, and the
/// maps' own overhead per entry (estimated).
fn key_cost(pk: &[u8]) -> usize {
    2 * pk.len() + 64
}

impl Inner {
    /// Forgets `label`'s vector: removed from the in-memory graph when it is there; in a
    /// segment it stays, dead (no longer in `keys`, so searches skip it).
    fn drop_label(&mut self, label: u64) -> Result<(), VectorIndexError> {
        if self.graph.contains(label) {
            self.graph.remove(label).map_err(lib)?;
        }
        if let Some(pk) = self.keys.remove(&label) {
            self.key_bytes = self.key_bytes.saturating_sub(key_cost(&pk));
        }
        Ok(())
    }
}

/// An ANN index over one float-vector column. Thread-safe: searches share a read lock,
/// writes take the write lock.
pub struct VectorIndex {
    config: VectorIndexConfig,
    inner: RwLock<Inner>,
    gate: SearchGate,
}

/// Searches the graph runs at once: USearch keeps one search context per thread it was
/// reserved for and fails a search when none is free ("Reserve capacity ahead of searches"),
/// so more concurrent searches wait for one (see [`SearchGate`]).
const SEARCH_THREADS: usize = 16;

/// A counting semaphore bounding concurrent searches to [`SEARCH_THREADS`].
#[derive(Default)]
struct SearchGate {
    running: std::sync::Mutex<usize>,
    freed: std::sync::Condvar,
}

struct SearchSlot<'g>(&'g SearchGate);

impl SearchGate {
    fn enter(&self) -> SearchSlot<'_> {
        let mut n = self.running.lock().unwrap_or_else(|p| p.into_inner());
        while *n >= SEARCH_THREADS {
            n = self.freed.wait(n).unwrap_or_else(|p| p.into_inner());
        }
        *n += 1;
        SearchSlot(self)
    }
}

impl Drop for SearchSlot<'_> {
    fn drop(&mut self) {
        let mut n = self.0.running.lock().unwrap_or_else(|p| p.into_inner());
        *n -= 1;
        self.0.freed.notify_one();
    }
}

impl VectorIndex {
    /// An empty index.
    pub fn new(config: VectorIndexConfig) -> Result<VectorIndex, VectorIndexError> {
        let graph = usearch::Index::new(&config.options()).map_err(lib)?;
        Ok(VectorIndex {
            config,
            inner: RwLock::new(Inner {
                graph,
                segments: Vec::new(),
                on_disk: false,
                labels: HashMap::new(),
                keys: HashMap::new(),
                next_label: 0,
                key_bytes: 0,
            }),
            gate: SearchGate::default(),
        })
    }

    pub fn config(&self) -> &VectorIndexConfig {
        &self.config
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> Result<std::sync::RwLockWriteGuard<'_, Inner>, VectorIndexError> {
        Ok(self.inner.write().unwrap_or_else(|p| p.into_inner()))
    }

    fn check(&self, v: &[f32]) -> Result<(), VectorIndexError> {
        if v.len() != self.config.dimension {
            return Err(VectorIndexError::Dimension {
                expected: self.config.dimension,
                got: v.len(),
            });
        }
        check_indexable(self.config.similarity, v)
    }

    /// Indexes `vector` for the row `primary_key`, replacing the row's previous vector.
    pub fn upsert(&self, primary_key: &[u8], vector: &[f32]) -> Result<(), VectorIndexError> {
        self.check(vector)?;
        let mut inner = self.write()?;
        if let Some(old) = inner.labels.remove(primary_key) {
            inner.drop_label(old.label)?;
        }
        let size = inner.graph.size();
        if size + 1 > inner.graph.capacity() {
            inner
                .graph
                .reserve_capacity_and_threads((size + 1).max(1024) * 2, SEARCH_THREADS)
                .map_err(lib)?;
        }
        let label = inner.next_label;
        self.config.graph_form(vector).add(&inner.graph, label)?;
        inner.next_label += 1;
        let hash = vector_hash(vector);
        inner
            .labels
            .insert(primary_key.to_vec(), Slot { label, hash });
        inner.keys.insert(label, primary_key.to_vec());
        inner.key_bytes += key_cost(primary_key);
        Ok(())
    }

    /// The label under which the index holds exactly `vector` for `primary_key` (compared by
    /// hash), or `None`: what a scan that brings a loaded index up to date with its table asks
    /// of every stored row (and marks the answer, see [`retain`](Self::retain)).
    pub fn holds(&self, primary_key: &[u8], vector: &[f32]) -> Option<u64> {
        self.read()
            .labels
            .get(primary_key)
            .filter(|s| s.hash == vector_hash(vector))
            .map(|s| s.label)
    }

    /// Removes every key whose label `keep` refuses (rows a reconciling scan did not find);
    /// returns how many went. Labels, not keys, so that the caller's record of what it found
    /// can be one bit per label instead of a copy of every key.
    pub fn retain(&self, keep: impl Fn(u64) -> bool) -> Result<usize, VectorIndexError> {
        let gone: Vec<Vec<u8>> = self
            .read()
            .labels
            .iter()
            .filter(|(_, s)| !keep(s.label))
            .map(|(k, _)| k.clone())
            .collect();
        for k in &gone {
            self.remove(k)?;
        }
        Ok(gone.len())
    }

    /// [`upsert`](Self::upsert) from the column's stored cell: a serialized `vector<float, n>`
    /// (what the write path holds). An empty value (Cassandra's "empty", not null) removes.
    pub fn upsert_serialized(
        &self,
        primary_key: &[u8],
        raw: &[u8],
    ) -> Result<(), VectorIndexError> {
        if raw.is_empty() {
            return self.remove(primary_key).map(|_| ());
        }
        let v = crate::similarity::floats(raw).ok_or(VectorIndexError::Dimension {
            expected: self.config.dimension,
            got: raw.len() / 4,
        })?;
        self.upsert(primary_key, &v)
    }

    /// Forgets the row's vector; false when the row had none.
    pub fn remove(&self, primary_key: &[u8]) -> Result<bool, VectorIndexError> {
        let mut inner = self.write()?;
        let Some(Slot { label, .. }) = inner.labels.remove(primary_key) else {
            return Ok(false);
        };
        inner.drop_label(label)?;
        Ok(true)
    }

    /// Forgets every vector (TRUNCATE).
    pub fn clear(&self) -> Result<(), VectorIndexError> {
        let mut inner = self.write()?;
        inner.graph.reset().map_err(lib)?;
        inner.segments.clear();
        inner.on_disk = false;
        inner.labels.clear();
        inner.keys.clear();
        inner.key_bytes = 0;
        Ok(())
    }

    /// The `k` rows nearest to `query`, best first.
    pub fn search(&self, query: &[f32], k: usize) -> Result<Vec<Hit>, VectorIndexError> {
        self.search_inner(query, k, None::<fn(&[u8]) -> bool>)
    }

    /// The `k` nearest rows among those whose primary key passes `keep` (a partition
    /// restriction, another SAI predicate), best first. `keep` runs during the graph walk.
    pub fn search_where(
        &self,
        query: &[f32],
        k: usize,
        keep: impl Fn(&[u8]) -> bool,
    ) -> Result<Vec<Hit>, VectorIndexError> {
        self.search_inner(query, k, Some(keep))
    }

    fn search_inner(
        &self,
        query: &[f32],
        k: usize,
        keep: Option<impl Fn(&[u8]) -> bool>,
    ) -> Result<Vec<Hit>, VectorIndexError> {
        self.check(query)?;
        let inner = self.read();
        if k == 0 || inner.keys.is_empty() {
            return Ok(Vec::new());
        }
        // USearch widens its beam to `k` itself (expansion = max(ef, k)), so nothing here
        // changes the shared settings under the read lock.
        let keys = &inner.keys;
        let query = self.config.graph_form(query);
        let live = |label: u64| {
            keys.get(&label)
                .is_some_and(|pk| keep.as_ref().is_none_or(|f| f(pk)))
        };
        let _slot = self.gate.enter();
        // (distance, label) from the in-memory graph and from every segment, merged by
        // distance. Every label of the in-memory graph has its key (the two change together,
        // under the write lock): no filter to call at each node there unless `keep` asks.
        let mut found: Vec<(f32, u64)> = Vec::new();
        if inner.graph.size() > 0 {
            let m = match &keep {
                None => query.search(&inner.graph, k)?,
                Some(_) => query.filtered_search(&inner.graph, k, live)?,
            };
            found.extend(m.distances.iter().copied().zip(m.keys.iter().copied()));
        }
        for seg in &inner.segments {
            // A segment holds the rows removed or replaced since its save too: its walk skips
            // them (and whatever `keep` refuses).
            let m = query.filtered_search(&seg.graph, k, live)?;
            found.extend(m.distances.iter().copied().zip(m.keys.iter().copied()));
        }
        if !inner.segments.is_empty() {
            found.sort_by(|a, b| a.0.total_cmp(&b.0));
            found.truncate(k);
        }
        Ok(found
            .into_iter()
            .filter_map(|(d, label)| {
                Some(Hit {
                    primary_key: keys.get(&label)?.clone(),
                    score: self.score_of(d),
                })
            })
            .collect())
    }

    /// Cassandra's score from the graph's distance (cos and ip distances are `1 - x`).
    fn score_of(&self, distance: f32) -> f32 {
        match self.config.similarity {
            Similarity::Cosine | Similarity::DotProduct => 1.0 - distance / 2.0,
            Similarity::Euclidean => 1.0 / (1.0 + distance),
        }
    }

    /// Rows indexed.
    pub fn len(&self) -> usize {
        self.read().labels.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Heap bytes the index takes: the in-memory graph (with its vectors), the key maps, and
    /// what USearch keeps in memory for each mapped segment (its node table and search
    /// contexts; the mapped file itself is page cache, not counted).
    pub fn memory_bytes(&self) -> usize {
        let inner = self.read();
        let segments: usize = inner.segments.iter().map(|s| s.graph.memory_usage()).sum();
        inner.graph.memory_usage() + inner.key_bytes + segments
    }

    /// Whether the index is served from saved files ([`spill`](Self::spill)).
    pub fn is_on_disk(&self) -> bool {
        self.read().on_disk
    }

    /// Saved graph files the index is served from (0 in memory).
    pub fn segment_count(&self) -> usize {
        self.read().segments.len()
    }

    /// Rows in the in-memory graph: all of them in memory, those indexed since the last save
    /// on disk.
    pub fn in_memory_len(&self) -> usize {
        self.read().graph.size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixed-seed generator (xorshift), so the recall floor is a fact, not a chance.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn gauss(&mut self) -> f32 {
            let u = ((self.next() >> 40) as f32 / (1u64 << 24) as f32).max(1e-7);
            let v = (self.next() >> 40) as f32 / (1u64 << 24) as f32;
            (-2.0 * u.ln()).sqrt() * (std::f32::consts::TAU * v).cos()
        }
    }

    /// Clustered vectors (not uniform: real embeddings cluster), the first `n` the data and
    /// the rest queries.
    pub(super) fn data(n: usize, queries: usize, dim: usize, seed: u64) -> Vec<Vec<f32>> {
        let mut r = Rng(seed);
        let centers: Vec<Vec<f32>> = (0..20)
            .map(|_| (0..dim).map(|_| r.gauss()).collect())
            .collect();
        (0..n + queries)
            .map(|_| {
                let c = &centers[(r.next() % 20) as usize];
                c.iter().map(|x| x + 0.5 * r.gauss()).collect()
            })
            .collect()
    }

    pub(super) fn pk(i: usize) -> Vec<u8> {
        (i as u32).to_be_bytes().to_vec()
    }

    fn brute_force(f: Similarity, base: &[Vec<f32>], q: &[f32], k: usize) -> Vec<Vec<u8>> {
        let mut scored: Vec<(f32, usize)> = base
            .iter()
            .enumerate()
            .map(|(i, v)| (f.score(q, v), i))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        scored.iter().take(k).map(|(_, i)| pk(*i)).collect()
    }

    #[test]
    fn recall_at_10_is_at_least_095_for_every_similarity() {
        let (n, nq, dim) = (3000, 50, 48);
        let all = data(n, nq, dim, 0x5eed);
        let (base, queries) = all.split_at(n);
        for f in [
            Similarity::Cosine,
            Similarity::Euclidean,
            Similarity::DotProduct,
        ] {
            let index = VectorIndex::new(VectorIndexConfig::new(dim, f)).unwrap();
            for (i, v) in base.iter().enumerate() {
                index.upsert(&pk(i), v).unwrap();
            }
            let mut hits = 0;
            for q in queries {
                let truth = brute_force(f, base, q, 10);
                let got = index.search(q, 10).unwrap();
                assert_eq!(got.len(), 10);
                assert!(
                    got.windows(2).all(|w| w[0].score >= w[1].score),
                    "{f:?} best first"
                );
                hits += got
                    .iter()
                    .filter(|h| truth.contains(&h.primary_key))
                    .count();
            }
            let recall = hits as f64 / (10 * queries.len()) as f64;
            assert!(recall >= 0.95, "{f:?}: recall@10 {recall}");
        }
    }

    /// Signed bytes scaled per vector: the largest component becomes ±127 and the rest are
    /// rounded at that scale; non-finite components become 0.
    #[test]
    fn i8_rounding_rounds_half_away_from_zero() {
        let mut r = Rng(0x9e37_79b9);
        let mut ys = vec![
            0.5,
            -0.5,
            1.5,
            -1.5,
            2.5,
            126.5,
            -126.5,
            127.49999999999999,
            127.5,
            -127.5,
            128.0,
            -129.0,
            0.49999999999999994,
            -0.49999999999999994,
            1e300,
            -1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            0.0,
            -0.0,
            4095.5,
            4096.5,
            -4096.5,
        ];
        ys.extend((0..200_000).map(|i| {
            let u = (r.next() >> 11) as f64 / (1u64 << 53) as f64;
            // Mostly in the graph's range, some halfway points and some far outside it.
            match i % 4 {
                0 => (u * 300.0).round() / 2.0 - 75.0,
                _ => u * 280.0 - 140.0,
            }
        }));
        for y in ys {
            assert_eq!(round_to_i8(y), y.round() as i8, "{y:e}");
        }
    }

    #[test]
    fn i8_quantization_uses_the_whole_range() {
        assert_eq!(quantize_i8(&[0.25, -0.5, 0.125]), vec![64, -127, 32]);
        assert_eq!(
            quantize_i8(&[f32::NAN, 2.0, f32::INFINITY, -1.0]),
            vec![0, 127, 0, -64]
        );
        assert_eq!(quantize_i8(&[0.0; 3]), vec![0; 3]);
    }

    /// An `I8` cosine graph's `candidates(10)` nearest rows, re-ranked by their exact scores
    /// (what the read path does with the rows' stored vectors), hold the true top 10 (here
    /// 1.0 against 0.976 for the graph's own top 10).
    #[test]
    fn i8_cosine_candidates_reranked_exactly_keep_recall() {
        let (n, nq, dim) = (3000, 50, 96);
        let all = data(n, nq, dim, 0x1808);
        let (base, queries) = all.split_at(n);
        let mut config = VectorIndexConfig::new(dim, Similarity::Cosine);
        config.quantization = Quantization::I8;
        let want = config.candidates(10);
        assert!(want > 10);
        let index = VectorIndex::new(config).unwrap();
        for (i, v) in base.iter().enumerate() {
            index.upsert(&pk(i), v).unwrap();
        }
        let (mut raw, mut reranked) = (0, 0);
        for q in queries {
            let truth = brute_force(Similarity::Cosine, base, q, 10);
            let got = index.search(q, want).unwrap();
            assert_eq!(got.len(), want);
            raw += got[..10]
                .iter()
                .filter(|h| truth.contains(&h.primary_key))
                .count();
            let mut exact: Vec<(f32, Vec<u8>)> = got
                .into_iter()
                .map(|h| {
                    let i = u32::from_be_bytes(h.primary_key[..].try_into().unwrap()) as usize;
                    (Similarity::Cosine.score(q, &base[i]), h.primary_key)
                })
                .collect();
            exact.sort_by(|a, b| b.0.total_cmp(&a.0));
            reranked += exact[..10]
                .iter()
                .filter(|(_, pk)| truth.contains(pk))
                .count();
        }
        let recall = |hits: usize| hits as f64 / (10 * queries.len()) as f64;
        let (raw, reranked) = (recall(raw), recall(reranked));
        assert!(
            reranked >= 0.98 && reranked >= raw,
            "recall@10 {raw} -> {reranked}"
        );
    }

    /// Many more concurrent searches than USearch has search contexts: each waits for one
    /// instead of failing with "Reserve capacity ahead of searches".
    #[test]
    fn concurrent_searches_beyond_the_reserved_threads_all_succeed() {
        let (n, dim) = (500, 8);
        let all = data(n, 1, dim, 7);
        let index = VectorIndex::new(VectorIndexConfig::new(dim, Similarity::Euclidean)).unwrap();
        for (i, v) in all[..n].iter().enumerate() {
            index.upsert(&pk(i), v).unwrap();
        }
        let q = &all[n];
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..4 * SEARCH_THREADS)
                .map(|_| {
                    s.spawn(|| (0..20).all(|_| index.search(q, 10).is_ok_and(|h| h.len() == 10)))
                })
                .collect();
            for h in handles {
                assert!(h.join().unwrap());
            }
        });
    }

    #[test]
    fn scores_are_cassandras_similarities() {
        let a = [0.3f32, -1.0, 2.0, 0.5];
        let b = [1.0f32, 0.25, -0.5, 2.0];
        for f in [
            Similarity::Cosine,
            Similarity::Euclidean,
            Similarity::DotProduct,
        ] {
            let index = VectorIndex::new(VectorIndexConfig::new(4, f)).unwrap();
            index.upsert(b"b", &b).unwrap();
            let hit = &index.search(&a, 1).unwrap()[0];
            assert_eq!(hit.primary_key, b"b");
            assert!(
                (hit.score - f.score(&a, &b)).abs() < 1e-5,
                "{f:?} {}",
                hit.score
            );
        }
    }

    #[test]
    fn upsert_replaces_and_remove_forgets() {
        let index = VectorIndex::new(VectorIndexConfig::new(2, Similarity::Euclidean)).unwrap();
        index.upsert(b"a", &[0.0, 0.0]).unwrap();
        index.upsert(b"b", &[10.0, 10.0]).unwrap();
        index.upsert(b"a", &[20.0, 20.0]).unwrap();
        assert_eq!(index.len(), 2);
        assert_eq!(index.search(&[0.0, 0.0], 1).unwrap()[0].primary_key, b"b");
        assert!(index.remove(b"b").unwrap());
        assert!(!index.remove(b"b").unwrap());
        let left = index.search(&[0.0, 0.0], 5).unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].primary_key, b"a");
        index.clear().unwrap();
        assert!(index.search(&[0.0, 0.0], 5).unwrap().is_empty());
    }

    #[test]
    fn index_options_are_read_as_cassandra_reads_them() {
        use proto::types::ColumnType as T;
        let v3 = T::Vector(Box::new(T::Float), 3);
        let c = VectorIndexConfig::for_column(&v3, [], None)
            .unwrap()
            .unwrap();
        assert_eq!((c.dimension, c.similarity), (3, Similarity::Cosine));
        assert_eq!(c.quantization, Quantization::I8);
        let opts = [
            ("similarity_function", "dot_product"),
            ("optimize_for", "Recall"),
        ];
        let c = VectorIndexConfig::for_column(&v3, opts, Some("i"))
            .unwrap()
            .unwrap();
        assert_eq!(c.similarity, Similarity::DotProduct);
        assert_eq!(c.expansion_search, 256);
        assert_eq!(c.quantization, Quantization::F32);
        assert_eq!(VectorIndexConfig::for_column(&T::Int, [], None), Ok(None));
        assert_eq!(
            VectorIndexConfig::for_column(&T::Vector(Box::new(T::Int), 3), [], None),
            Err("SAI ANN indexes are only allowed on vector columns with float elements".into())
        );
        assert_eq!(
            VectorIndexConfig::for_column(&v3, [("similarity_function", "bogus")], None),
            Err("Similarity function BOGUS was not recognized for index null. Valid values are: EUCLIDEAN, DOT_PRODUCT, COSINE".into())
        );
        assert_eq!(
            VectorIndexConfig::for_column(&v3, [("optimize_for", "bogus")], None),
            Err("optimize_for 'BOGUS' was not recognized for index null. Valid values are: LATENCY, RECALL".into())
        );
        assert!(
            VectorIndexConfig::for_column(&v3, [("maximum_node_connections", "32")], None)
                .unwrap_err()
                .starts_with("Maximum node connections cannot be set")
        );
    }

    #[test]
    fn searches_run_beside_writes() {
        let dim = 16;
        let all = data(2000, 40, dim, 11);
        let index = VectorIndex::new(VectorIndexConfig::new(dim, Similarity::Euclidean)).unwrap();
        for (i, v) in all[..1000].iter().enumerate() {
            index.upsert(&pk(i), v).unwrap();
        }
        std::thread::scope(|s| {
            s.spawn(|| {
                for (i, v) in all[1000..2000].iter().enumerate() {
                    index.upsert(&pk(1000 + i), v).unwrap();
                }
            });
            for t in 0..3 {
                let (index, all) = (&index, &all);
                s.spawn(move || {
                    for q in &all[2000 + t * 10..2000 + t * 10 + 10] {
                        let hits = index.search(q, 20).unwrap();
                        assert_eq!(hits.len(), 20);
                    }
                });
            }
        });
        assert_eq!(index.len(), 2000);
    }

    #[test]
    fn stored_cells_index_as_their_floats() {
        let index = VectorIndex::new(VectorIndexConfig::new(2, Similarity::Euclidean)).unwrap();
        let raw: Vec<u8> = [3.0f32, -1.0]
            .iter()
            .flat_map(|x| x.to_be_bytes())
            .collect();
        index.upsert_serialized(b"a", &raw).unwrap();
        assert_eq!(index.search(&[3.0, -1.0], 1).unwrap()[0].score, 1.0);
        assert!(matches!(
            index.upsert_serialized(b"b", &raw[..7]),
            Err(VectorIndexError::Dimension { .. })
        ));
        index.upsert_serialized(b"a", &[]).unwrap();
        assert!(index.is_empty());
    }

    #[test]
    fn filters_and_refusals() {
        let index = VectorIndex::new(VectorIndexConfig::new(2, Similarity::Cosine)).unwrap();
        for i in 0..100u8 {
            index.upsert(&[i], &[1.0, f32::from(i)]).unwrap();
        }
        let even = index
            .search_where(&[1.0, 50.0], 5, |pk| pk[0] % 2 == 0)
            .unwrap();
        assert_eq!(even.len(), 5);
        assert!(even.iter().all(|h| h.primary_key[0] % 2 == 0));
        assert!(matches!(
            index.upsert(b"z", &[0.0, 0.0]),
            Err(VectorIndexError::ZeroVector)
        ));
        // Cassandra 5.0.9's reasons as its log prints them (Java's float text), first bad
        // component first.
        for (v, why) in [
            ([f32::NAN, 1.0], "non-finite value at vector[0]=NaN"),
            (
                [1.0, f32::NEG_INFINITY],
                "non-finite value at vector[1]=-Infinity",
            ),
            ([3e38, f32::NAN], "Out-of-bounds value at vector[0]=3.0E38"),
            (
                [1.0, -1.01e17],
                "Out-of-bounds value at vector[1]=-1.01000004E17",
            ),
        ] {
            assert_eq!(index.upsert(b"z", &v).unwrap_err().to_string(), why);
            assert_eq!(index.search(&v, 1).unwrap_err().to_string(), why);
        }
        // 1e17 itself is in bounds; zero is refused only under cosine.
        assert!(index.upsert(b"z", &[1e17, -1e17]).is_ok());
        assert!(check_indexable(Similarity::Euclidean, &[0.0, 0.0]).is_ok());
        assert!(check_indexable(Similarity::DotProduct, &[f32::INFINITY, 0.0]).is_err());
        assert!(index.remove(b"z").unwrap());
        assert!(matches!(
            index.search(&[1.0, 2.0, 3.0], 1),
            Err(VectorIndexError::Dimension {
                expected: 2,
                got: 3
            })
        ));
        assert!(index.search(&[1.0, 2.0], 0).unwrap().is_empty());
    }
}
