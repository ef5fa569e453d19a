//! `storage` — an ordered, durable byte map with atomic write batches.
//!
//! This is the one seam between Peregrine's engine and the bytes on disk. The engine sees
//! a sorted map of byte keys to byte values, written in atomic batches and read by point
//! look-ups and ordered range scans (forward and reverse). Two implementations exist:
//!
//! | type | what it is |
//! |---|---|
//! | [`LsmStorage`] | the real thing: the `fjall` LSM tree (WAL, memtable, SSTables, Bloom filters, compaction) |
//! | [`MemStorage`] | a `BTreeMap` reference model used by the engine's tests |
//!
//! [`LsmStorage`] also answers the operator (`ops`): statistics for `/metrics` ([`StorageStats`]),
//! flush, and consistent snapshots into `<data_dir>/snapshots/<tag>` that open as a data
//! directory.
//!
//! It is **not** a database: it knows nothing of CQL, cells, timestamps or TTLs. Those live in
//! `engine`, which hands a [`CompactionFilter`] down so that expired data and old tombstones
//! are purged as part of compaction rather than by a separate sweep.
//!
//! # Invariants
//! - A [`WriteBatch`] is applied atomically: after a crash either all or none of it is visible.
//! - With [`SyncMode::Batch`], `write` returns only after the batch is on stable storage.
//! - With [`SyncMode::Periodic`], `write` returns once the batch is in the OS page cache
//!   (it survives the process being killed, not the machine losing power); a background
//!   thread syncs every `period`. This mirrors Cassandra's `commitlog_sync: periodic`.
//! - After an I/O error on a write or sync (fjall then poisons itself), Cassandra's two policies
//!   decide ([`CommitFailurePolicy`] for the journal, [`FailurePolicy`] for table files;
//!   `failure.rs`): by default the store refuses requests while it reopens itself with
//!   backoff, and serves again once the cause is gone (the journal replays every acknowledged
//!   write).
//! - Every sync of the journal leaves a sync point in it (`journal.rs`), so that start-up can tell
//!   an unsynced tail torn by a power loss from damage to synced writes. The key `0x00` alone is
//!   the store's own (the sync points): the engine never writes it and scans never return it.
//! - Keys of any length are stored: fjall takes at most 65,535 bytes, so [`LsmStorage`]
//!   keeps longer keys in buckets under a shorter physical key (`long_keys`); the engine
//!   never sees the difference.

use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};

use arc_swap::ArcSwapOption;
use std::sync::mpsc::{RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

mod datafiles;
pub mod encryption;
mod failure;
mod idle;
mod journal;
mod long_keys;
mod mem;
mod ops;
mod priority;
pub use datafiles::DataFileCheck;
pub use encryption::KeySet;
use failure::Failure;
pub use failure::{CommitFailurePolicy, FailurePolicy};
use journal::{Claim, SYNC_POINT_KEY};
pub use journal::{Damage, JournalRecovery};
use long_keys::{Bucket, SPILL_AT};
pub use mem::MemStorage;
pub use ops::{SnapshotInfo, StorageStats};

/// Errors from the storage layer. The engine maps every one of them to a server error.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("storage I/O failure: {0}")]
    Io(String),
    #[error("storage is closed")]
    Closed,
    /// The store failed and is reopening itself (`FailurePolicy::Stop`).
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// A snapshot cannot be taken as asked (its name is taken or unusable).
    #[error("{0}")]
    Snapshot(String),
    /// Encryption at rest: an unusable key file, a wrong or missing key (`encryption.rs`).
    #[error("encryption at rest: {0}")]
    Encryption(String),
}

impl From<fjall::Error> for StorageError {
    fn from(e: fjall::Error) -> Self {
        StorageError::Io(e.to_string())
    }
}

pub type Result<T> = std::result::Result<T, StorageError>;

/// One key-value pair as returned by scans. The value shares the store's buffer where it can
/// (a block of a table or the memtable's entry): a scan hands rows on without copying them.
pub type KvPair = (Vec<u8>, bytes::Bytes);

/// A value as the store keeps it: fjall's buffer (a `ByteView`: its length, a reference count
/// and the bytes in one allocation, or the bytes inline up to 20). [`WriteBatch::put`] copies
/// a `Vec` into one; a writer that knows a value's length first builds it in place
/// ([`Value::build`]) and writes it with [`WriteBatch::put_value`], sparing that copy and an
/// allocation (a 4 KB row: ~1,000 instructions). Its buffer is exactly the value's length: one
/// cut out of a larger one would keep the rest alive, uncounted by the memtable's size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Value(fjall::Slice);

impl Value {
    /// A value of `len` bytes, written by `fill` straight into the store's buffer (of exactly
    /// `len` bytes, not zeroed first); `fill` answers how many it wrote. `None` if that is not
    /// `len` (no byte left unwritten is ever read).
    pub fn build(len: usize, fill: impl FnOnce(&mut [u8]) -> usize) -> Option<Value> {
        /// `fill` as a reader: `from_reader` hands it the whole buffer at once, and any
        /// shortfall fails its `read_exact` (the next read answers 0).
        struct Fill<F>(Option<F>);
        impl<F: FnOnce(&mut [u8]) -> usize> std::io::Read for Fill<F> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                match self.0.take().map_or(0, |f| f(buf)) {
                    n if n <= buf.len() => Ok(n),
                    _ => Err(std::io::ErrorKind::InvalidData.into()),
                }
            }
        }
        fjall::Slice::from_reader(&mut Fill(Some(fill)), len)
            .ok()
            .map(Value)
    }

    pub fn as_slice(&self) -> &[u8] {
        &self.0
    }
}

impl std::ops::Deref for Value {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl From<Vec<u8>> for Value {
    fn from(v: Vec<u8>) -> Self {
        Value(v.into())
    }
}

impl From<&[u8]> for Value {
    fn from(v: &[u8]) -> Self {
        Value(v.into())
    }
}

/// An atomic set of puts and deletes.
#[derive(Debug, Default, Clone)]
pub struct WriteBatch {
    ops: Vec<(Vec<u8>, Option<Value>)>,
}

impl WriteBatch {
    pub fn new() -> Self {
        Self::default()
    }
    /// A batch with room for `n` ops.
    pub fn with_capacity(n: usize) -> Self {
        Self {
            ops: Vec::with_capacity(n),
        }
    }
    /// Puts `value` (copied into the store's buffer, as it would be when the batch is
    /// applied).
    pub fn put(&mut self, key: Vec<u8>, value: Vec<u8>) {
        self.ops.push((key, Some(value.into())));
    }
    /// Puts a value already in the store's buffer ([`Value::build`]): no copy.
    pub fn put_value(&mut self, key: Vec<u8>, value: Value) {
        self.ops.push((key, Some(value)));
    }
    pub fn delete(&mut self, key: Vec<u8>) {
        self.ops.push((key, None));
    }
    pub fn len(&self) -> usize {
        self.ops.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
    /// The keys the batch puts (not those it deletes), in the order they were added.
    pub fn put_keys(&self) -> impl Iterator<Item = &[u8]> {
        self.ops
            .iter()
            .filter(|(_, v)| v.is_some())
            .map(|(k, _)| k.as_slice())
    }

    /// One op per key: a later op on a key already in the batch replaces it, a later partial
    /// value is merged onto it (completed when it is a deletion). The LSM tree gives every op of
    /// a batch the same sequence number, so two versions of a key in one batch would not
    /// stack; a batch with no partial value, or with distinct keys (the engine's), is left as
    /// it is.
    fn coalesce(&mut self, merge: &dyn Merge) {
        if self.ops.len() < 2
            || !self
                .ops
                .iter()
                .any(|(k, v)| v.as_deref().is_some_and(|v| merge.is_partial(k, v)))
        {
            return;
        }
        // The engine's batches never repeat a key (a row and its index entries): a small
        // batch is seen to be distinct by comparing each pair of keys (keys of different
        // kinds differ in their first bytes), without hashing every key (~3,800 instructions
        // per indexed UPDATE, bench/results/2026-11-29/indexed-blind-rows).
        let ops = &self.ops;
        if ops.len() <= 16 && (1..ops.len()).all(|i| ops[..i].iter().all(|(k, _)| *k != ops[i].0)) {
            return;
        }
        let mut at: std::collections::HashMap<Vec<u8>, usize> = Default::default();
        let mut out: Vec<(Vec<u8>, Option<Value>)> = Vec::with_capacity(self.ops.len());
        for (k, v) in self.ops.drain(..) {
            let Some(&i) = at.get(&k) else {
                at.insert(k.clone(), out.len());
                out.push((k, v));
                continue;
            };
            out[i].1 = written_onto(Some(merge), &k, v, out[i].1.as_deref());
        }
        self.ops = out;
    }
}

/// What a compaction filter decides for one stored item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Keep,
    /// Remove the item (leaves an LSM tombstone so older versions stay shadowed).
    Drop,
    /// Keep the key with a new value (e.g. with expired cells removed).
    Replace(Vec<u8>),
}

/// Hook run on every item that compaction rewrites.
///
/// `last_level` is true when nothing older can lie below the output, which is the only
/// time a tombstone may be dropped without risk of resurrecting shadowed data.
pub trait CompactionFilter: Send + Sync + std::panic::RefUnwindSafe + 'static {
    fn filter(&self, key: &[u8], value: &[u8], last_level: bool) -> Decision;

    /// The filter one compaction runs with, asked once as it starts (`make_filter`);
    /// `None`: this one. A filter that reads shared state for every item (a schema behind a
    /// lock the request threads take too, the clock) reads it once here instead: a
    /// compaction filters every item it rewrites. What it reads then must be safe to use for
    /// the whole compaction (an older schema or time may only keep more).
    fn for_compaction(&self) -> Option<Arc<dyn CompactionFilter>> {
        None
    }
}

/// Completes partial values: a write may store only what it changes under a key (a blind
/// write, [`Merge::is_partial`]), completed with the key's older versions wherever a value is
/// read, and folded into them by flushes and compactions (lsm-tree's `MergeOperator`, added by
/// the vendored patch). Reads (`get`, `scan`) return completed values, except that a partial
/// value nothing older completes is returned as written (without [`Merge::complete`], a copy):
/// it is to be read as the complete value it stands for.
///
/// `merge` must be associative (compactions fold whatever versions they hold); the merge of a
/// partial value onto a complete one is complete, onto a partial one partial.
/// With [`Options::memtable_partial_rows`] it must also be idempotent: merging a version onto
/// one that already holds it changes nothing (a scan meets both).
pub trait Merge: Send + Sync + std::panic::RefUnwindSafe + 'static {
    /// Whether `value`, written under `key`, needs the older versions of `key`.
    fn is_partial(&self, key: &[u8], value: &[u8]) -> bool;
    /// `newer` (partial) merged onto `older` (partial or not).
    fn merge(&self, key: &[u8], newer: &[u8], older: &[u8]) -> Vec<u8>;
    /// The complete value a partial one stands for when nothing older exists.
    fn complete(&self, key: &[u8], partial: &[u8]) -> Vec<u8>;
}

/// The value a write leaves under `key` where `older` is stored: a partial value merged onto
/// `older` (completed when nothing is stored), any other value (or a deletion) as it is.
fn written_onto(
    merge: Option<&dyn Merge>,
    key: &[u8],
    value: Option<Value>,
    older: Option<&[u8]>,
) -> Option<Value> {
    match (value, merge) {
        (Some(v), Some(m)) if m.is_partial(key, &v) => Some(Value::from(match older {
            Some(older) => m.merge(key, &v, older),
            None => m.complete(key, &v),
        })),
        (v, _) => v,
    }
}

/// When writes are made durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncMode {
    /// Every write batch is fsynced (fdatasync) before `write` returns.
    Batch,
    /// Writes reach the OS page cache at once; a background thread syncs every period.
    Periodic(Duration),
}

/// The ordered byte map the engine runs on.
pub trait Storage: Send + Sync + 'static {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// [`Storage::get`] without copying the value where the store can share its buffer.
    fn get_shared(&self, key: &[u8]) -> Result<Option<bytes::Bytes>> {
        Ok(self.get(key)?.map(bytes::Bytes::from))
    }
    /// Applies the batch atomically.
    fn write(&self, batch: WriteBatch) -> Result<()>;
    /// Items with keys in the range, in key order (descending when `reverse`).
    fn scan<'a>(
        &'a self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        reverse: bool,
    ) -> Box<dyn Iterator<Item = Result<KvPair>> + 'a>;
    /// Makes every acknowledged write durable.
    fn sync(&self) -> Result<()>;
    /// Forces compaction of everything written so far (tests and `nodetool compact`-like use).
    fn compact(&self) -> Result<()>;
    /// Whether partial values are completed ([`Merge`]): only then may a writer store one.
    fn merges(&self) -> bool {
        false
    }
}

/// Options for opening an [`LsmStorage`].
#[derive(Clone)]
pub struct Options {
    pub sync: SyncMode,
    /// fjall's background threads (flushes and compactions); `None`: one per core, at most
    /// four (fjall's default). With two or more, one of them takes flushes only, so a flush
    /// never waits behind a compaction (vendor/README.md, compaction hand-off). With one (one
    /// core) the memtable grows past its size while a compaction runs (to 131 MB of 64 under
    /// YCSB A); two on one core were measured and not kept: when both ran, the requests had
    /// too little of the core left (bench/results/2026-12-02/background-priority-s40).
    pub worker_threads: Option<usize>,
    /// How many nice steps below the thread that opens the store its flushes and compactions
    /// run (`priority.rs`); `0`: the same priority.
    pub background_nice: u8,
    pub cache_bytes: u64,
    /// Size at which the memtable is flushed to a table. Larger absorbs more overwrites of hot
    /// keys in memory (fewer tables, less compaction) at the cost of memory and recovery time.
    pub memtable_bytes: u64,
    pub filter: Option<Arc<dyn CompactionFilter>>,
    /// Completes partial values (blind writes); without it every value is complete.
    pub merge: Option<Arc<dyn Merge>>,
    /// What to do with a write-ahead journal damaged before its end (see `journal.rs`).
    pub journal_recovery: JournalRecovery,
    /// What to do when a table file fails (`disk_failure_policy`).
    pub failure_policy: FailurePolicy,
    /// What to do when the journal fails (`commit_failure_policy`).
    pub commit_failure_policy: CommitFailurePolicy,
    /// Whether opening verifies every data file against its recorded checksum.
    pub data_file_check: DataFileCheck,
    /// Encryption at rest (`encryption.rs`): the keys that seal table blocks and journal items,
    /// or `None` to write in clear. The cipher is process-wide (one key set per process).
    pub encryption: Option<KeySet>,
    /// The leveled compaction's shape (applied on every open).
    pub compaction: Compaction,
    /// Whether a partial value written onto the memtable's partial version of its key stays
    /// partial (the two merged) instead of being completed with a read of the key: flushes
    /// then write the cells updated, not whole rows, for keys updated more than once between
    /// flushes (see `vendor/README.md`, blind writes).
    pub memtable_partial_rows: bool,
    /// After how long without a write the store merges the tables left in L0 into the level
    /// below (`idle.rs`); `None`: never.
    pub idle_compaction: Option<Duration>,
}

/// fjall's leveled compaction, as the store opens it: a compaction from L0 is due at
/// `l0_threshold` tables, tables are cut at `table_bytes`, the first non-empty level below L0
/// may hold `l0_threshold × table_bytes` and each next one `level_ratio` times more.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Compaction {
    pub l0_threshold: u8,
    pub level_ratio: f32,
    pub table_bytes: u64,
}

impl Default for Compaction {
    fn default() -> Self {
        Compaction {
            l0_threshold: 8,
            level_ratio: 10.0,
            table_bytes: 64 << 20,
        }
    }
}

impl Compaction {
    fn strategy(&self) -> Arc<dyn lsm_tree::compaction::CompactionStrategy + Send + Sync> {
        Arc::new(
            fjall::compaction::Leveled::default()
                .with_l0_threshold(self.l0_threshold)
                .with_level_ratio_policy(vec![self.level_ratio])
                .with_table_target_size(self.table_bytes),
        )
    }

    /// The idle compaction's strategy (`idle.rs`): L0 merged into the level below, never into
    /// one over the leveled strategy's first-level size (`l0_threshold × table_bytes`).
    fn idle_strategy(&self) -> Arc<dyn lsm_tree::compaction::CompactionStrategy> {
        Arc::new(lsm_tree::compaction::IdleL0 {
            base_size: self.table_bytes * u64::from(self.l0_threshold),
            target_size: self.table_bytes,
        })
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            sync: SyncMode::Periodic(Duration::from_secs(10)),
            worker_threads: None,
            background_nice: 0,
            cache_bytes: 256 * 1024 * 1024,
            memtable_bytes: 64 * 1024 * 1024,
            filter: None,
            merge: None,
            journal_recovery: JournalRecovery::Refuse,
            failure_policy: FailurePolicy::Stop,
            commit_failure_policy: CommitFailurePolicy::Stop,
            data_file_check: DataFileCheck::Full,
            encryption: None,
            compaction: Compaction::default(),
            memtable_partial_rows: false,
            idle_compaction: Some(IDLE_AFTER),
        }
    }
}

const DATA_KEYSPACE: &str = "data";

/// How often the store drops the table versions no read needs any more (see
/// `LsmStorage::start_ticker`): tables a compaction replaced leave the disk this long after it.
const VERSION_COLLECTION: Duration = Duration::from_secs(5);

/// The default [`Options::idle_compaction`]: a period this long with no write makes a store idle.
const IDLE_AFTER: Duration = Duration::from_secs(5);

/// The open fjall database and its data keyspace; replaced as a whole when the store recovers.
struct Open {
    db: fjall::Database,
    data: fjall::Keyspace,
    /// What the first failure on this handle was (fjall answers `Poisoned` to everything after
    /// it): which policy applies (`failure.rs`).
    failure: OnceLock<Failure>,
    /// Writes stopped on this handle (`stop_commit`, `best_effort`) while reads go on.
    writes_stopped: AtomicBool,
}

impl Open {
    fn new(path: &Path, options: &Options, background: priority::Background) -> Result<Open> {
        // `max_write_buffer_size` is marked deprecated ("todo") in fjall 3.1 but is still the
        // only way to let memtables grow past its 64 MiB default budget.
        // The journal takes values as written: fjall compressed each of 4 KiB or more with LZ4,
        // ~27,800 instructions a 4 KB row (its hash table allocated zeroed per value), over half
        // of such a write's, for bytes the journal drops at the next flush (tables compress
        // their blocks; Cassandra's commit log is uncompressed by default). Journals written
        // compressed are still read: each item names its compression.
        #[allow(deprecated)]
        let mut builder = fjall::Database::builder(path)
            .cache_size(options.cache_bytes)
            .max_write_buffer_size(Some(options.memtable_bytes.saturating_mul(2)))
            .journal_compression(fjall::CompressionType::None);
        if let Some(n) = options.worker_threads {
            builder = builder.worker_threads(n.max(1));
        }
        builder = builder.on_worker_start(Arc::new(move |_| background.enter()));
        if let Some(filter) = options.filter.clone() {
            let factory: Arc<dyn fjall::compaction::filter::Factory> =
                Arc::new(FilterFactory(filter));
            builder = builder.with_compaction_filter_factories(Arc::new(move |name: &str| {
                (name == DATA_KEYSPACE).then(|| factory.clone())
            }));
        }
        if let Some(merge) = options.merge.clone() {
            let op: Arc<dyn lsm_tree::MergeOperator> =
                Arc::new(MergeOperator(merge, options.memtable_partial_rows));
            builder = builder.with_merge_operators(Arc::new(move |name: &str| {
                (name == DATA_KEYSPACE).then(|| op.clone())
            }));
        }
        let strategy = options.compaction.strategy();
        builder = builder.with_compaction_strategies(Arc::new(move |name: &str| {
            (name == DATA_KEYSPACE).then(|| strategy.clone())
        }));
        let db = builder.open()?;
        let memtable = options.memtable_bytes;
        // Every level's block index and Bloom filter whole and pinned in memory (fjall pins
        // indexes of L0 and L1 and filters of L0 only, and partitions both from L3 on, where a
        // settled store keeps its tables). A pinned whole index seeks by its head words
        // (vendor/README.md) where an unpinned or partitioned one fetches blocks from the cache
        // and parses a restart key per step; a pinned filter needs no cache lookup. The cost is
        // memory outside the block cache: about 1% of the data for indexes, 10 bits a key for
        // filters, as Cassandra keeps its filters (bench/results/2026-11-30/index-seek).
        // Each data block keeps every key as a restart point with a hash index over them (4
        // one-byte buckets a key): a point read goes from the key's hash to its entry where a
        // block of one restart point was scanned from its start (fjall's default of 16 keys a
        // restart), 1,727 -> 842 instructions a lookup in YCSB C, for 0.8% more disk with 1 KB
        // rows and 3.3% with 200-byte ones (bench/results/2026-12-01/block-hash-index). A store
        // keeps the options it was created with.
        let data = db.keyspace(DATA_KEYSPACE, move || {
            use fjall::config::{
                HashRatioPolicy, PartitioningPolicy, PinningPolicy, RestartIntervalPolicy,
            };
            fjall::KeyspaceCreateOptions::default()
                .max_memtable_size(memtable)
                .data_block_restart_interval_policy(RestartIntervalPolicy::all(1))
                .data_block_hash_ratio_policy(HashRatioPolicy::all(4.0))
                .index_block_pinning_policy(PinningPolicy::all(true))
                .index_block_partitioning_policy(PartitioningPolicy::all(false))
                .filter_block_pinning_policy(PinningPolicy::all(true))
                .filter_block_partitioning_policy(PartitioningPolicy::all(false))
        })?;
        sync_directories(path)
            .map_err(|e| StorageError::Io(format!("cannot sync {}: {e}", path.display())))?;
        // A sync point, fsynced: everything fjall wrote while opening is durable before the
        // first write, which `batch` mode's sync points (`Claim::Before`) rely on.
        let mut point = db.batch().durability(Some(fjall::PersistMode::SyncData));
        point.insert(&data, SYNC_POINT_KEY, Claim::Before.encode());
        point.commit()?;
        Ok(Open {
            db,
            data,
            failure: OnceLock::new(),
            writes_stopped: AtomicBool::new(false),
        })
    }
}

/// fsyncs the directories whose entries fjall creates without fsyncing them, so that no write
/// is acknowledged before the store's folders are durable: `keyspaces/` (fjall fsyncs it before
/// creating `keyspaces/0`, its meta keyspace, and never after creating `keyspaces/<id>` for a
/// keyspace; lsm-tree fsyncs only the tree's own folder), the data directory, and its parent
/// (the engine creates the data directory). Without it a power loss soon after a data directory
/// is created can drop the keyspace folders: every table is then gone and fjall's replay skips
/// the journal's writes for keyspaces it does not know, so acknowledged writes vanish without a
/// word (found by tests/python/test_power_loss.py). Returns the directories synced.
fn sync_directories(path: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut synced = Vec::new();
    for dir in [path.join("keyspaces"), path.to_path_buf()] {
        std::fs::File::open(&dir)?.sync_all()?;
        synced.push(dir);
    }
    // The parent may be unreadable to this process (a data directory given inside a
    // directory it may only traverse): best effort there.
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        if std::fs::File::open(parent)
            .and_then(|f| f.sync_all())
            .is_ok()
        {
            synced.push(parent.to_path_buf());
        }
    }
    Ok(synced)
}

/// What the store's handle and its background threads share.
struct Shared {
    path: PathBuf,
    options: Options,
    /// `None` while the store is down (failed and reopening).
    open: ArcSwapOption<Open>,
    /// Why the store is down.
    down: Mutex<Option<String>>,
    /// Why writes are stopped while reads go on (`stop_commit`, `best_effort`).
    writes_down: Mutex<Option<String>>,
    /// Serializes the read-modify-write of long-key buckets (only batches with long keys).
    buckets: Mutex<()>,
    /// Journal fsyncs done (periodic, explicit, and one per batch with `SyncMode::Batch`).
    journal_syncs: AtomicU64,
    /// What the last `periodic` sync point claimed (records numbered below it durable): a sync
    /// with only that sync point written since writes none, so an idle store's journal does
    /// not grow.
    last_sync_point: AtomicU64,
    /// The idle compaction's thread (`idle.rs`), joined when the store closes.
    idle_compaction: Mutex<Option<JoinHandle<()>>>,
    /// Idle compactions done.
    idle_compactions: AtomicU64,
    /// The priority of flushes and compactions, resolved when the store first opened.
    background: priority::Background,
}

/// The fjall-backed store.
pub struct LsmStorage {
    shared: Arc<Shared>,
    /// The background thread (`start_ticker`) and the channel whose sending end, dropped,
    /// stops it.
    ticker: RwLock<Option<(Sender<()>, JoinHandle<()>)>>,
}

impl LsmStorage {
    pub fn open(path: &Path, options: Options) -> Result<Self> {
        // Before anything is read: a wrong or missing key refuses here, by name.
        encryption::prepare(path, options.encryption.as_ref())?;
        // Before fjall replays the journal: damage is reported, never silently dropped.
        let cut =
            journal::check_and_repair(path, options.journal_recovery).map_err(StorageError::Io)?;
        for damage in &cut {
            if damage.is_unsynced_tail() {
                tracing::warn!(
                    "{damage}: an unsynced tail torn by a crash or power loss, cut off there (the later batches with it: none was fsynced)"
                );
            } else {
                tracing::warn!(
                    "{damage}: cut there as `journal_recovery: truncate` asks; {} batch(es) ({} write(s)) dropped",
                    damage.batches_after + 1,
                    damage.writes_after
                );
            }
        }
        let background = priority::Background::below_this_thread(options.background_nice);
        let open = Open::new(path, &options, background).map_err(|e| {
            let damaged = datafiles::unreadable_trailers(path);
            if damaged.is_empty() {
                return e;
            }
            StorageError::Io(format!(
                "{e}: {} damaged data file(s); acknowledged data in them would be lost, so the store does not open (restore the data directory from a snapshot or backup): {}",
                damaged.len(),
                damaged.join("; ")
            ))
        })?;
        if options.data_file_check == DataFileCheck::Full {
            let started = std::time::Instant::now();
            let damaged = datafiles::check(&open.data.tree);
            if !damaged.is_empty() {
                return Err(StorageError::Io(format!(
                    "{} damaged data file(s); acknowledged data in them would be lost, so the store does not open (restore the data directory from a snapshot or backup; `data_file_check: off` starts anyway, and every read touching a damaged block fails): {}",
                    damaged.len(),
                    damaged.join("; ")
                )));
            }
            tracing::info!("data files verified in {:?}", started.elapsed());
        }
        let sync = options.sync;
        let storage = LsmStorage {
            shared: Arc::new(Shared {
                path: path.to_path_buf(),
                options,
                open: ArcSwapOption::from_pointee(open),
                down: Mutex::new(None),
                writes_down: Mutex::new(None),
                buckets: Mutex::new(()),
                journal_syncs: AtomicU64::new(0),
                last_sync_point: AtomicU64::new(u64::MAX),
                idle_compaction: Mutex::new(None),
                idle_compactions: AtomicU64::new(0),
                background,
            }),
            ticker: RwLock::new(None),
        };
        storage.start_ticker(match sync {
            SyncMode::Periodic(period) => Some(period),
            SyncMode::Batch => None,
        });
        Ok(storage)
    }

    /// Why writes are stopped while reads go on (`commit_failure_policy: stop_commit`,
    /// `disk_failure_policy: best_effort`), or `None` while writes are served.
    pub fn writes_stopped(&self) -> Option<String> {
        reason(&self.shared.writes_down)
    }

    /// Why the store is down (failed and reopening), or `None` while it serves.
    pub fn down(&self) -> Option<String> {
        reason(&self.shared.down)
    }

    /// Starts the store's background thread: it syncs the journal every `sync` period
    /// (`periodic` mode) and drops table versions no read needs any more every
    /// [`VERSION_COLLECTION`] (`fjall::Database::collect_versions`; fjall drops them only when
    /// a memtable rotates, so the files of tables compacted after the last rotation stayed
    /// on disk while the store was idle), and, after an [`Options::idle_compaction`] period with
    /// no write, merges the tables left in L0 (`idle.rs`). It sleeps until the next task is due, or until
    /// the store drops the channel's sending end (closing): an idle store's thread wakes once
    /// per period, where a fixed 50 ms tick woke it 20 times a second.
    fn start_ticker(&self, sync: Option<Duration>) {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let shared = self.shared.clone();
        let handle = std::thread::Builder::new()
            .name("storage-tick".into())
            .spawn(move || {
                let started = Instant::now();
                let mut next_sync = sync.map(|period| started + period);
                let mut next_collection = started + VERSION_COLLECTION;
                let idle_after = shared.options.idle_compaction;
                let mut next_idle_check = idle_after.map(|period| started + period);
                let mut writes = idle::IdleWatch::default();
                loop {
                    let due = [next_sync, next_idle_check]
                        .into_iter()
                        .flatten()
                        .fold(next_collection, Instant::min);
                    let wait = due.saturating_duration_since(Instant::now());
                    if stopped.recv_timeout(wait) != Err(RecvTimeoutError::Timeout) {
                        return;
                    }
                    // All rescheduled before anything can fail, so a store that is down
                    // waits a period again instead of looping.
                    let now = Instant::now();
                    let sync_due = next_sync.is_some_and(|at| now >= at);
                    if sync_due {
                        next_sync = sync.map(|period| now + period);
                    }
                    let collection_due = now >= next_collection;
                    if collection_due {
                        next_collection = now + VERSION_COLLECTION;
                    }
                    let idle_check_due = next_idle_check.is_some_and(|at| now >= at);
                    if idle_check_due {
                        next_idle_check = idle_after.map(|period| now + period);
                    }
                    let Ok(open) = shared.current() else { continue };
                    if sync_due {
                        if let Err(e) = shared.sync_journal(&open) {
                            let _ = shared.failed(&open, &e);
                        }
                    }
                    if collection_due {
                        if let Err(e) = open.db.collect_versions() {
                            tracing::warn!("dropping unused table versions failed: {e}");
                        }
                    }
                    if idle_check_due && writes.idle_since_last(open.db.seqno()) {
                        shared.maybe_compact_idle(&open);
                    }
                }
            })
            .ok();
        if let (Some(handle), Ok(mut slot)) = (handle, self.ticker.write()) {
            *slot = Some((stop, handle));
        }
    }

    /// The value stored under a key of the data keyspace (not a spilled long key); a failed
    /// read is reported to the failure policy before it is returned.
    fn data_get(&self, open: &Arc<Open>, key: &[u8]) -> Result<Option<fjall::UserValue>> {
        open.data.get(key).map_err(|e| {
            self.shared.read_failed(open, &e);
            StorageError::from(e)
        })
    }
}

/// How much of a point read's value [`touch_lines`] reads ahead: a 4 KB row.
const TOUCH_BYTES: usize = 4096;

/// Reads one byte of each 64-byte line of the value's first [`TOUCH_BYTES`], so that a value
/// not in the CPU's caches (a block cached among gigabytes of others) is fetched with its
/// misses overlapping (independent loads issue together) instead of one after another as
/// its reader walks its cells in order (the row's first cell read was 7.5% of the server's
/// CPU samples in YCSB C, session 38). Safe code's stand-in for a prefetch.
fn touch_lines(value: &[u8]) {
    let mut x = 0u8;
    for b in value.iter().take(TOUCH_BYTES).step_by(64) {
        x ^= *b;
    }
    std::hint::black_box(x);
}

impl Shared {
    /// fsyncs the journal, then (`periodic` mode, when anything was written since the last
    /// one) writes a sync point saying what that made durable: every record fjall numbered
    /// before the sync began (fjall numbers and writes a record under its journal lock, which
    /// the sync takes too). The sync point is one small batch written to the OS at once and
    /// made durable by the next sync; `batch` mode needs none here (each write's batch holds
    /// one, see `Open::write`).
    fn sync_journal(&self, open: &Open) -> std::result::Result<(), fjall::Error> {
        self.journal_syncs.fetch_add(1, Ordering::Relaxed);
        let below = open.db.seqno();
        open.db.persist(fjall::PersistMode::SyncData)?;
        // The last sync point took record number `last`: nothing else was written since.
        let last = self.last_sync_point.load(Ordering::Relaxed);
        if self.options.sync == SyncMode::Batch || below == last.wrapping_add(1) {
            return Ok(());
        }
        let mut point = open.db.batch().durability(Some(fjall::PersistMode::Buffer));
        point.insert(&open.data, SYNC_POINT_KEY, Claim::Below(below).encode());
        point.commit()?;
        self.last_sync_point.store(below, Ordering::Relaxed);
        Ok(())
    }

    /// The open store, or the error saying why it is down.
    fn current(&self) -> Result<Arc<Open>> {
        self.open.load_full().ok_or_else(|| self.unavailable())
    }

    /// Runs `f` on the open store without taking a reference count (a short-lived arc-swap
    /// guard: no atomic write shared by every thread on the point read and write paths).
    fn with_open<T>(&self, f: impl FnOnce(&Arc<Open>) -> Result<T>) -> Result<T> {
        match self.open.load().as_ref() {
            Some(open) => f(open),
            None => Err(self.unavailable()),
        }
    }

    fn unavailable(&self) -> StorageError {
        StorageError::Unavailable(
            reason(&self.down).unwrap_or_else(|| "the store is reopening".into()),
        )
    }
}

/// The reason kept in `slot` (why the store or its writes are down), if any.
fn reason(slot: &Mutex<Option<String>>) -> Option<String> {
    slot.lock().unwrap_or_else(PoisonError::into_inner).clone()
}

impl Open {
    /// Writes the memtable out to a table file and waits for it. Unlike fjall's
    /// `rotate_memtable_and_wait`, which waits forever when the flush worker dies, a failed
    /// flush (fjall poisons itself) returns its error.
    fn flush_and_wait(&self) -> Result<()> {
        if self.data.rotate_memtable()? {
            while fjall::AbstractTree::sealed_memtable_count(&self.data.tree) > 0 {
                self.db.persist(fjall::PersistMode::Buffer)?;
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        Ok(())
    }

    /// The bucket stored under `prefix` (empty if none).
    fn bucket(&self, prefix: &[u8]) -> Result<Bucket> {
        match self.data.get(prefix)? {
            Some(v) => Bucket::decode(&v),
            None => Ok(Bucket::default()),
        }
    }

    fn write(
        &self,
        batch: WriteBatch,
        sync: SyncMode,
        buckets: &Mutex<()>,
        merge: Option<&dyn Merge>,
    ) -> std::result::Result<(), WriteError> {
        let durability = match sync {
            SyncMode::Batch => Some(fjall::PersistMode::SyncData),
            SyncMode::Periodic(_) => Some(fjall::PersistMode::Buffer),
        };
        // Sized for the batch (and a sync point): no growth of its item vector.
        let mut b = fjall::OwnedWriteBatch::with_capacity(self.db.clone(), batch.len() + 1)
            .durability(durability);
        if sync == SyncMode::Batch {
            // The sync point of `batch` mode, in the batch it syncs (31 journal bytes): fjall
            // writes and fsyncs each batch under its journal lock, so every byte before this one
            // was fsynced when it is written (journal.rs).
            b.insert(&self.data, SYNC_POINT_KEY, Claim::Before.encode());
        }
        let mut long = Vec::new();
        for (k, v) in batch.ops {
            if k.len() >= SPILL_AT {
                long.push((k, v));
                continue;
            }
            match v {
                Some(v) => b.insert(&self.data, k, v.0),
                None => b.remove(&self.data, k),
            }
        }
        if long.is_empty() {
            return b.commit().map_err(WriteError::Fjall);
        }
        // Buckets are read, changed and written back under one lock, committed in the same
        // atomic batch as the batch's other keys.
        let _guard = buckets.lock().unwrap_or_else(|p| p.into_inner());
        let mut touched: std::collections::BTreeMap<Vec<u8>, Bucket> = Default::default();
        for (k, v) in long {
            let (prefix, suffix) = k.split_at(SPILL_AT);
            if !touched.contains_key(prefix) {
                touched.insert(
                    prefix.to_vec(),
                    self.bucket(prefix).map_err(WriteError::Read)?,
                );
            }
            if let Some(bucket) = touched.get_mut(prefix) {
                // A bucket holds complete values only: a partial one is completed here, with
                // the entry it replaces (read under the bucket lock).
                let v = written_onto(merge, &k, v, bucket.get(suffix));
                bucket.set(suffix, v.map(|v| v.to_vec()));
            }
        }
        for (prefix, bucket) in touched {
            if bucket.is_empty() {
                b.remove(&self.data, prefix);
            } else {
                b.insert(&self.data, prefix, bucket.encode());
            }
        }
        b.commit().map_err(WriteError::Fjall)
    }
}

/// A scan's start bound moved past [`SYNC_POINT_KEY`], the smallest key, so no scan returns a
/// sync point and none pays a comparison per item for it.
fn after_sync_points(start: Bound<Vec<u8>>) -> Bound<Vec<u8>> {
    match start {
        Bound::Included(k) if k.as_slice() > SYNC_POINT_KEY => Bound::Included(k),
        Bound::Excluded(k) if k.as_slice() >= SYNC_POINT_KEY => Bound::Excluded(k),
        _ => Bound::Excluded(SYNC_POINT_KEY.to_vec()),
    }
}

/// Why a write failed: the store failing (a policy matter) or a read of a bucket.
enum WriteError {
    Fjall(fjall::Error),
    Read(StorageError),
}

impl Drop for LsmStorage {
    fn drop(&mut self) {
        if let Ok(mut slot) = self.ticker.write() {
            if let Some((stop, handle)) = slot.take() {
                drop(stop);
                let _ = handle.join();
            }
        }
        let idle = self.shared.idle_compaction.lock().map(|mut h| h.take());
        if let Ok(Some(handle)) = idle {
            let _ = handle.join();
        }
        if let Some(open) = self.shared.open.load_full() {
            let _ = open.db.persist(fjall::PersistMode::SyncAll);
        }
    }
}

impl Storage for LsmStorage {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.shared.with_open(|open| {
            if key.len() >= SPILL_AT {
                let bucket = open.bucket(&key[..SPILL_AT])?;
                return Ok(bucket.get(&key[SPILL_AT..]).map(<[u8]>::to_vec));
            }
            Ok(self.data_get(open, key)?.map(|v| v.to_vec()))
        })
    }

    fn get_shared(&self, key: &[u8]) -> Result<Option<bytes::Bytes>> {
        if key.len() >= SPILL_AT {
            return Ok(self.get(key)?.map(bytes::Bytes::from));
        }
        self.shared.with_open(|open| {
            let value = self.data_get(open, key)?;
            if let Some(v) = &value {
                touch_lines(v);
            }
            Ok(value.map(bytes::Bytes::from_owner))
        })
    }

    fn write(&self, batch: WriteBatch) -> Result<()> {
        self.shared.with_open(|open| {
            if self.shared.options.sync == SyncMode::Batch {
                // Next to an fsync, one relaxed add costs nothing measurable.
                self.shared.journal_syncs.fetch_add(1, Ordering::Relaxed);
            }
            let merge = self.shared.options.merge.as_deref();
            let mut batch = batch;
            if let Some(m) = merge {
                batch.coalesce(m);
            }
            match open.write(batch, self.shared.options.sync, &self.shared.buckets, merge) {
                Ok(()) => Ok(()),
                Err(WriteError::Read(e)) => Err(e),
                Err(WriteError::Fjall(e)) => Err(self.shared.failed(open, &e)),
            }
        })
    }

    fn scan<'a>(
        &'a self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        reverse: bool,
    ) -> Box<dyn Iterator<Item = Result<KvPair>> + 'a> {
        let open = match self.shared.current() {
            Ok(open) => open,
            Err(e) => return Box::new(std::iter::once(Err(e))),
        };
        let range = (
            after_sync_points(long_keys::physical(start)),
            long_keys::physical(end),
        );
        let iter = open.data.range::<Vec<u8>, _>(range);
        let shared = &self.shared;
        let map = move |g: fjall::Guard| match g.into_inner() {
            Ok((k, v)) => Ok((k.to_vec(), bytes::Bytes::from_owner(v))),
            Err(e) => {
                shared.read_failed(&open, &e);
                Err(StorageError::from(e))
            }
        };
        let inner: Box<dyn Iterator<Item = Result<KvPair>> + 'a> = if reverse {
            Box::new(iter.rev().map(map))
        } else {
            Box::new(iter.map(map))
        };
        Box::new(long_keys::Expand {
            inner,
            start: start.map(<[u8]>::to_vec),
            end: end.map(<[u8]>::to_vec),
            reverse,
            pending: Vec::new().into_iter(),
        })
    }

    fn sync(&self) -> Result<()> {
        let open = self.shared.current()?;
        if let Err(e) = self.shared.sync_journal(&open) {
            return Err(self.shared.failed(&open, &e));
        }
        Ok(())
    }

    fn compact(&self) -> Result<()> {
        let open = self.shared.current()?;
        open.data.rotate_memtable_and_wait()?;
        // A new journal, and the old one deleted now that its writes are flushed: after a key
        // rotation (or encryption newly enabled) nothing in the journal is left under the old
        // key (or in clear), as nothing in the tables is after the major compaction.
        open.db.rotate_journal()?;
        open.data.major_compact()?;
        // fjall's own keyspace of keyspace names and options (no user data) too, so that a
        // rotated-out key is needed by no file at all.
        open.db.rewrite_meta_keyspace()?;
        Ok(())
    }

    fn merges(&self) -> bool {
        self.shared.options.merge.is_some()
    }
}

/// [`Merge`] as lsm-tree's merge operator.
/// The store's merge, and whether the memtable keeps partial rows partial
/// ([`Options::memtable_partial_rows`]).
struct MergeOperator(Arc<dyn Merge>, bool);

impl lsm_tree::MergeOperator for MergeOperator {
    fn is_partial(&self, key: &[u8], value: &[u8]) -> bool {
        self.0.is_partial(key, value)
    }
    fn merge(&self, key: &[u8], newer: &[u8], older: &[u8]) -> lsm_tree::UserValue {
        self.0.merge(key, newer, older).into()
    }
    fn complete(&self, key: &[u8], partial: &[u8]) -> lsm_tree::UserValue {
        self.0.complete(key, partial).into()
    }
    fn memtable_keeps_partial(&self) -> bool {
        self.1
    }
}

struct FilterFactory(Arc<dyn CompactionFilter>);

impl fjall::compaction::filter::Factory for FilterFactory {
    fn name(&self) -> &str {
        "peregrine"
    }
    fn make_filter(
        &self,
        _ctx: &fjall::compaction::filter::Context,
    ) -> Box<dyn fjall::compaction::filter::CompactionFilter> {
        Box::new(FilterRun(
            self.0.for_compaction().unwrap_or_else(|| self.0.clone()),
        ))
    }
}

struct FilterRun(Arc<dyn CompactionFilter>);

impl fjall::compaction::filter::CompactionFilter for FilterRun {
    fn filter_item(
        &mut self,
        item: fjall::compaction::filter::ItemAccessor<'_>,
        ctx: &fjall::compaction::filter::Context,
    ) -> fjall::compaction::filter::CompactionFilterResult {
        use fjall::compaction::filter::Verdict;
        let key = item.key().clone();
        if &*key == SYNC_POINT_KEY {
            // Not the engine's: the newest version stays, older ones go as any key's do.
            return Ok(Verdict::Keep);
        }
        let value = item.value()?;
        if key.len() == SPILL_AT {
            return Ok(self.filter_bucket(&key, &value, ctx.is_last_level));
        }
        Ok(match self.0.filter(&key, &value, ctx.is_last_level) {
            Decision::Keep => Verdict::Keep,
            Decision::Drop => Verdict::Remove,
            Decision::Replace(v) => Verdict::ReplaceValue(v.into()),
        })
    }
}

impl FilterRun {
    /// The engine's filter applied to each entry of a bucket. A bucket is written whole, so
    /// its newest version holds the newest version of every entry and shadows all older ones:
    /// an entry may be dropped exactly when the filter would drop a key of its own.
    fn filter_bucket(
        &self,
        prefix: &[u8],
        value: &[u8],
        last_level: bool,
    ) -> fjall::compaction::filter::Verdict {
        use fjall::compaction::filter::Verdict;
        // A damaged bucket is kept as it is: reads report it, compaction must not lose it.
        let Ok(mut bucket) = Bucket::decode(value) else {
            return Verdict::Keep;
        };
        let mut key = prefix.to_vec();
        let changed = bucket.retain_map(|suffix, v| {
            key.truncate(SPILL_AT);
            key.extend_from_slice(suffix);
            match self.0.filter(&key, v, last_level) {
                Decision::Keep => Some(None),
                Decision::Drop => None,
                Decision::Replace(nv) => Some(Some(nv)),
            }
        });
        match (changed, bucket.is_empty()) {
            (false, _) => Verdict::Keep,
            (true, true) => Verdict::Remove,
            (true, false) => Verdict::ReplaceValue(bucket.encode().into()),
        }
    }
}

#[cfg(test)]
mod tests;
