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
//! - After an I/O error on write the store refuses further writes (fjall poisons itself)
//!   instead of going on silently.
//! - Keys of any length are stored: fjall takes at most 65,535 bytes, so [`LsmStorage`]
//!   keeps longer keys in buckets under a shorter physical key (`long_keys`); the engine
//!   never sees the difference.

use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

mod journal;
mod long_keys;
mod mem;
use long_keys::{Bucket, SPILL_AT};
pub use journal::{Damage, JournalRecovery};
pub use mem::MemStorage;

/// Errors from the storage layer. The engine maps every one of them to a server error.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("storage I/O failure: {0}")]
    Io(String),
    #[error("storage is closed")]
    Closed,
}

impl From<fjall::Error> for StorageError {
    fn from(e: fjall::Error) -> Self {
        StorageError::Io(e.to_string())
    }
}

pub type Result<T> = std::result::Result<T, StorageError>;

/// One key-value pair as returned by scans.
pub type KvPair = (Vec<u8>, Vec<u8>);

/// An atomic set of puts and deletes.
#[derive(Debug, Default, Clone)]
pub struct WriteBatch {
    ops: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

impl WriteBatch {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn put(&mut self, key: Vec<u8>, value: Vec<u8>) {
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
}

/// Options for opening an [`LsmStorage`].
#[derive(Clone)]
pub struct Options {
    pub sync: SyncMode,
    pub cache_bytes: u64,
    /// Size at which the memtable is flushed to a table. Larger absorbs more overwrites of hot
    /// keys in memory (fewer tables, less compaction) at the cost of memory and recovery time.
    pub memtable_bytes: u64,
    pub filter: Option<Arc<dyn CompactionFilter>>,
    /// What to do with a write-ahead journal damaged before its end (see `journal.rs`).
    pub journal_recovery: JournalRecovery,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            sync: SyncMode::Periodic(Duration::from_secs(10)),
            cache_bytes: 256 * 1024 * 1024,
            memtable_bytes: 64 * 1024 * 1024,
            filter: None,
            journal_recovery: JournalRecovery::Refuse,
        }
    }
}

const DATA_KEYSPACE: &str = "data";

/// The fjall-backed store.
pub struct LsmStorage {
    db: fjall::Database,
    data: fjall::Keyspace,
    sync: SyncMode,
    syncer: RwLock<Option<(Arc<AtomicBool>, JoinHandle<()>)>>,
    /// Serializes the read-modify-write of long-key buckets (only batches with long keys).
    buckets: Mutex<()>,
}

impl LsmStorage {
    pub fn open(path: &Path, options: Options) -> Result<Self> {
        // Before fjall replays the journal: damage is reported, never silently dropped.
        let cut = journal::check_and_repair(path, options.journal_recovery)
            .map_err(StorageError::Io)?;
        for damage in &cut {
            if damage.is_torn_tail() {
                tracing::warn!("{damage}: a write torn by a crash, cut off");
            } else {
                tracing::warn!(
                    "{damage}: cut there as `journal_recovery: truncate` asks; {} batch(es) ({} write(s)) dropped",
                    damage.batches_after + 1,
                    damage.writes_after
                );
            }
        }
        // `max_write_buffer_size` is marked deprecated ("todo") in fjall 3.1 but is still the
        // only way to let memtables grow past its 64 MiB default budget.
        #[allow(deprecated)]
        let mut builder = fjall::Database::builder(path)
            .cache_size(options.cache_bytes)
            .max_write_buffer_size(Some(options.memtable_bytes.saturating_mul(2)));
        if let Some(filter) = options.filter.clone() {
            let factory: Arc<dyn fjall::compaction::filter::Factory> =
                Arc::new(FilterFactory(filter));
            builder = builder.with_compaction_filter_factories(Arc::new(move |name: &str| {
                (name == DATA_KEYSPACE).then(|| factory.clone())
            }));
        }
        let db = builder.open()?;
        let memtable = options.memtable_bytes;
        let data = db.keyspace(DATA_KEYSPACE, move || {
            fjall::KeyspaceCreateOptions::default().max_memtable_size(memtable)
        })?;
        let storage = LsmStorage {
            db,
            data,
            sync: options.sync,
            syncer: RwLock::new(None),
            buckets: Mutex::new(()),
        };
        if let SyncMode::Periodic(period) = options.sync {
            storage.start_syncer(period);
        }
        Ok(storage)
    }

    fn start_syncer(&self, period: Duration) {
        let stop = Arc::new(AtomicBool::new(false));
        let db = self.db.clone();
        let stop2 = stop.clone();
        let handle = std::thread::Builder::new()
            .name("storage-sync".into())
            .spawn(move || {
                let tick = Duration::from_millis(50).min(period);
                let mut waited = Duration::ZERO;
                while !stop2.load(Ordering::Relaxed) {
                    std::thread::sleep(tick);
                    waited += tick;
                    if waited >= period {
                        waited = Duration::ZERO;
                        // An error here poisons the database; the next write reports it.
                        let _ = db.persist(fjall::PersistMode::SyncData);
                    }
                }
            })
            .ok();
        if let (Some(handle), Ok(mut slot)) = (handle, self.syncer.write()) {
            *slot = Some((stop, handle));
        }
    }
}

impl LsmStorage {
    /// The bucket stored under `prefix` (empty if none).
    fn bucket(&self, prefix: &[u8]) -> Result<Bucket> {
        match self.data.get(prefix)? {
            Some(v) => Bucket::decode(&v),
            None => Ok(Bucket::default()),
        }
    }
}

impl Drop for LsmStorage {
    fn drop(&mut self) {
        if let Ok(mut slot) = self.syncer.write() {
            if let Some((stop, handle)) = slot.take() {
                stop.store(true, Ordering::Relaxed);
                let _ = handle.join();
            }
        }
        let _ = self.db.persist(fjall::PersistMode::SyncAll);
    }
}

impl Storage for LsmStorage {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if key.len() >= SPILL_AT {
            let bucket = self.bucket(&key[..SPILL_AT])?;
            return Ok(bucket.get(&key[SPILL_AT..]).map(<[u8]>::to_vec));
        }
        Ok(self.data.get(key)?.map(|v| v.to_vec()))
    }

    fn write(&self, batch: WriteBatch) -> Result<()> {
        let durability = match self.sync {
            SyncMode::Batch => Some(fjall::PersistMode::SyncData),
            SyncMode::Periodic(_) => Some(fjall::PersistMode::Buffer),
        };
        let mut b = self.db.batch().durability(durability);
        let mut long = Vec::new();
        for (k, v) in batch.ops {
            if k.len() >= SPILL_AT {
                long.push((k, v));
                continue;
            }
            match v {
                Some(v) => b.insert(&self.data, k, v),
                None => b.remove(&self.data, k),
            }
        }
        if long.is_empty() {
            b.commit()?;
            return Ok(());
        }
        // Buckets are read, changed and written back under one lock, committed in the same
        // atomic batch as the batch's other keys.
        let _guard = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let mut touched: std::collections::BTreeMap<Vec<u8>, Bucket> = Default::default();
        for (k, v) in long {
            let (prefix, suffix) = k.split_at(SPILL_AT);
            if !touched.contains_key(prefix) {
                touched.insert(prefix.to_vec(), self.bucket(prefix)?);
            }
            if let Some(bucket) = touched.get_mut(prefix) {
                bucket.set(suffix, v);
            }
        }
        for (prefix, bucket) in touched {
            if bucket.is_empty() {
                b.remove(&self.data, prefix);
            } else {
                b.insert(&self.data, prefix, bucket.encode());
            }
        }
        b.commit()?;
        Ok(())
    }

    fn scan<'a>(
        &'a self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        reverse: bool,
    ) -> Box<dyn Iterator<Item = Result<KvPair>> + 'a> {
        let range = (long_keys::physical(start), long_keys::physical(end));
        let iter = self.data.range::<Vec<u8>, _>(range);
        let map = |g: fjall::Guard| match g.into_inner() {
            Ok((k, v)) => Ok((k.to_vec(), v.to_vec())),
            Err(e) => Err(StorageError::from(e)),
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
        self.db.persist(fjall::PersistMode::SyncData)?;
        Ok(())
    }

    fn compact(&self) -> Result<()> {
        self.data.rotate_memtable_and_wait()?;
        self.data.major_compact()?;
        Ok(())
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
        Box::new(FilterRun(self.0.clone()))
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
