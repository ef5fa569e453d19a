//! The SSD tier of the proxy cache: results the DRAM tier let go of, kept in an
//! [`LsmStorage`] under `proxy.cache_dir`, bounded by `proxy.ssd_cache_bytes`.
//!
//! It is a *victim cache*: it is fed by the DRAM tier (`cache`) with live entries evicted for
//! room, newcomers TinyLFU declined to admit, and results too large for a DRAM shard. A DRAM
//! miss reads it; a hit is promoted back to DRAM (subject to admission). It knows nothing of
//! coherence: each record carries the entry's generation ticket and expiry, and the DRAM tier
//! applies the very same checks to an SSD record as to a DRAM entry (a failing record is a
//! miss and is deleted).
//!
//! # What it is not
//! Not durable. The generations a ticket holds live in memory and restart at zero, so records
//! of a previous process could look valid; the directory is therefore **wiped at start-up**
//! and written with `SyncMode::Periodic` (no fsync on the write path). A crash loses nothing
//! that matters: the cache starts cold, as it does in DRAM.
//!
//! # Layout
//! | key | value |
//! |---|---|
//! | `d` + cache key bytes | `seq u64` · ticket `4 x u64` · expiry (ns since the tier opened) `u64` · the Rows result body (protocol v5 encoding) |
//! | `q` + `seq u64` (big-endian) | cache key bytes: the insertion order, oldest first |
//!
//! # Invariants
//! - All writes (puts, deletes, budget eviction) run on one writer thread, so the byte and
//!   entry counts need no locking and a `d` record and its `q` record change in one batch.
//! - Puts are queued without blocking; past [`MAX_QUEUED_BYTES`] of pending puts, new ones are
//!   dropped (counted), so a slow disk costs hits, never memory or latency.
//! - Reads ([`SsdTier::get`]) block on disk: callers run them off the async workers.
//! - Budget: when the bytes of live records exceed the budget, the oldest records (lowest
//!   `seq`) are deleted: FIFO. The count is of records (keys + values + a per-record
//!   overhead); the LSM's own space amplification (tombstones awaiting compaction) comes on top.

use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use proto::frame::{Opcode, ProtocolVersion};
use proto::response::{Response, ResultBody, Rows};
use storage::{LsmStorage, Options, Storage, StorageError, SyncMode, WriteBatch};

/// Pending puts (encoded or not) beyond this many bytes are dropped instead of queued.
pub const MAX_QUEUED_BYTES: u64 = 64 * 1024 * 1024;
/// Bytes charged per record on top of its key (twice: `d` and `q`) and value.
const RECORD_OVERHEAD: u64 = 64;
/// Header of a `d` value: seq, ticket, expiry.
const HEADER: usize = 8 + 4 * 8 + 8;
/// Sub-directory of `cache_dir` the tier owns (and wipes at start-up).
const SUBDIR: &str = "proxy-ssd-cache";
/// Block cache of the LSM: index and filter blocks mostly; the data is read once per hit.
const LSM_BLOCK_CACHE_BYTES: u64 = 32 * 1024 * 1024;

/// Errors opening the tier.
#[derive(Debug, thiserror::Error)]
pub enum SsdError {
    #[error("cannot prepare the SSD cache directory {path}: {source}")]
    Dir {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot open the SSD cache store: {0}")]
    Storage(#[from] StorageError),
    #[error("cannot start the SSD cache writer thread: {0}")]
    Thread(std::io::Error),
}

/// Counters and gauges of the tier.
#[derive(Debug, Default)]
pub struct SsdStats {
    /// Lookups answered with a record that passed the coherence checks (counted by `cache`).
    pub hits: AtomicU64,
    /// Lookups that found nothing, or a record that failed the checks (counted by `cache`).
    pub misses: AtomicU64,
    /// Records written.
    pub writes: AtomicU64,
    /// Records deleted to stay within the byte budget.
    pub evictions: AtomicU64,
    /// Puts dropped because too many bytes were already queued.
    pub dropped: AtomicU64,
    /// Storage errors (reads and writes); the tier answers misses meanwhile.
    pub errors: AtomicU64,
    /// Bytes of the records held now.
    pub bytes: AtomicU64,
    /// Records held now.
    pub entries: AtomicU64,
}

/// A record read back: what the DRAM tier needs to validate and promote it.
#[derive(Debug)]
pub struct SsdRecord {
    pub seq: u64,
    pub ticket: [u64; 4],
    pub expires: Instant,
    pub rows: Rows,
}

enum Op {
    Put {
        key: Box<[u8]>,
        ticket: [u64; 4],
        expires: Instant,
        rows: Arc<Rows>,
        queued: u64,
    },
    Delete {
        key: Box<[u8]>,
        seq: u64,
    },
    Flush(Sender<()>),
}

struct Inner {
    store: LsmStorage,
    base: Instant,
    budget: u64,
    queued: AtomicU64,
    closing: AtomicBool,
    stats: SsdStats,
}

/// The tier. Shared as `Arc<SsdTier>`; dropping the last handle stops the writer thread.
pub struct SsdTier {
    inner: Arc<Inner>,
    tx: Mutex<Option<Sender<Op>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
}

fn data_key(key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(key.len() + 1);
    k.push(b'd');
    k.extend_from_slice(key);
    k
}

fn queue_key(seq: u64) -> [u8; 9] {
    let mut k = [b'q'; 9];
    k[1..].copy_from_slice(&seq.to_be_bytes());
    k
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_be_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Bytes a record is charged for, from its key and value lengths.
fn record_bytes(key_len: usize, value_len: usize) -> u64 {
    (2 * key_len + value_len) as u64 + RECORD_OVERHEAD
}

impl SsdTier {
    /// Opens the tier in `<dir>/proxy-ssd-cache`, wiping whatever a previous process left
    /// there (see the module docs), with a budget of `budget_bytes`.
    pub fn open(
        dir: &Path,
        budget_bytes: u64,
        encryption: Option<storage::KeySet>,
    ) -> Result<Arc<Self>, SsdError> {
        let path = dir.join(SUBDIR);
        let dir_err = |source| SsdError::Dir {
            path: path.display().to_string(),
            source,
        };
        match std::fs::remove_dir_all(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(dir_err(e)),
        }
        std::fs::create_dir_all(&path).map_err(dir_err)?;
        let store = LsmStorage::open(
            &path,
            Options {
                sync: SyncMode::Periodic(Duration::from_secs(60)),
                cache_bytes: LSM_BLOCK_CACHE_BYTES,
                filter: None,
                encryption,
                ..Options::default()
            },
        )?;
        let inner = Arc::new(Inner {
            store,
            base: Instant::now(),
            budget: budget_bytes,
            queued: AtomicU64::new(0),
            closing: AtomicBool::new(false),
            stats: SsdStats::default(),
        });
        let (tx, rx) = channel();
        let w = inner.clone();
        let writer = std::thread::Builder::new()
            .name("proxy-ssd-writer".into())
            .spawn(move || Writer::new(w).run(rx))
            .map_err(SsdError::Thread)?;
        Ok(Arc::new(SsdTier {
            inner,
            tx: Mutex::new(Some(tx)),
            writer: Mutex::new(Some(writer)),
        }))
    }

    pub fn stats(&self) -> &SsdStats {
        &self.inner.stats
    }

    pub fn budget(&self) -> u64 {
        self.inner.budget
    }

    fn send(&self, op: Op) -> bool {
        self.tx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .is_some_and(|tx| tx.send(op).is_ok())
    }

    /// Queues a record for writing; never blocks. Dropped (counted) when the queue is full.
    pub fn put(&self, key: Box<[u8]>, ticket: [u64; 4], expires: Instant, rows: Arc<Rows>) {
        let queued = (key.len() + rows.data.len() + HEADER) as u64;
        let i = &self.inner;
        if i.queued.fetch_add(queued, Ordering::AcqRel) + queued > MAX_QUEUED_BYTES {
            i.queued.fetch_sub(queued, Ordering::AcqRel);
            i.stats.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let op = Op::Put {
            key,
            ticket,
            expires,
            rows,
            queued,
        };
        if !self.send(op) {
            i.queued.fetch_sub(queued, Ordering::AcqRel);
        }
    }

    /// Queues the deletion of the record of `key` written with `seq` (a newer record of the
    /// same key is left alone).
    pub fn delete(&self, key: Box<[u8]>, seq: u64) {
        self.send(Op::Delete { key, seq });
    }

    /// Waits until everything queued so far is written. Blocks: tests and shutdown only.
    pub fn flush(&self) {
        let (tx, rx) = channel();
        if self.send(Op::Flush(tx)) {
            let _ = rx.recv();
        }
    }

    /// The record of `key`, whatever its ticket and expiry (the caller checks them). Blocks on
    /// disk: call off the async workers. A storage or decoding error counts and is a miss.
    pub fn get(&self, key: &[u8]) -> Option<SsdRecord> {
        let i = &self.inner;
        let value = match i.store.get(&data_key(key)) {
            Ok(v) => v?,
            Err(_) => {
                i.stats.errors.fetch_add(1, Ordering::Relaxed);
                return None;
            }
        };
        let record = decode_record(i.base, &value);
        if record.is_none() {
            i.stats.errors.fetch_add(1, Ordering::Relaxed);
        }
        record
    }
}

impl Drop for SsdTier {
    fn drop(&mut self) {
        // Pending puts are skipped, not written: the directory is wiped at the next start.
        self.inner.closing.store(true, Ordering::Release);
        self.tx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(w) = self
            .writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            let _ = w.join();
        }
    }
}

fn encode_record(
    base: Instant,
    seq: u64,
    ticket: [u64; 4],
    expires: Instant,
    rows: &Rows,
) -> Vec<u8> {
    let mut out = BytesMut::with_capacity(HEADER + rows.data.len() + 128);
    out.extend_from_slice(&seq.to_be_bytes());
    for g in ticket {
        out.extend_from_slice(&g.to_be_bytes());
    }
    let ns = u64::try_from(expires.saturating_duration_since(base).as_nanos()).unwrap_or(u64::MAX);
    out.extend_from_slice(&ns.to_be_bytes());
    Response::Result(ResultBody::Rows(rows.clone())).encode_body(ProtocolVersion::V5, &mut out);
    out.to_vec()
}

fn decode_record(base: Instant, value: &[u8]) -> Option<SsdRecord> {
    let seq = u64_at(value, 0)?;
    let ticket = [
        u64_at(value, 8)?,
        u64_at(value, 16)?,
        u64_at(value, 24)?,
        u64_at(value, 32)?,
    ];
    let expires = base.checked_add(Duration::from_nanos(u64_at(value, 40)?))?;
    let body = Bytes::copy_from_slice(value.get(HEADER..)?);
    match Response::decode(ProtocolVersion::V5, Opcode::Result, body) {
        Ok(Response::Result(ResultBody::Rows(rows))) => Some(SsdRecord {
            seq,
            ticket,
            expires,
            rows,
        }),
        _ => None,
    }
}

/// The writer thread's state.
struct Writer {
    inner: Arc<Inner>,
    next_seq: u64,
    /// No `q` record below this sequence number exists: budget eviction scans from here, not
    /// over the tombstones of records it already deleted.
    oldest: u64,
    warned: bool,
}

impl Writer {
    fn new(inner: Arc<Inner>) -> Self {
        Writer {
            inner,
            next_seq: 1,
            oldest: 1,
            warned: false,
        }
    }

    fn run(mut self, rx: Receiver<Op>) {
        while let Ok(op) = rx.recv() {
            let closing = self.inner.closing.load(Ordering::Acquire);
            let result = match op {
                Op::Put {
                    key,
                    ticket,
                    expires,
                    rows,
                    queued,
                } => {
                    self.inner.queued.fetch_sub(queued, Ordering::AcqRel);
                    if closing {
                        Ok(())
                    } else {
                        self.put(&key, ticket, expires, &rows)
                    }
                }
                Op::Delete { key, seq } if !closing => self.delete(&key, Some(seq)),
                Op::Delete { .. } => Ok(()),
                Op::Flush(done) => {
                    let _ = done.send(());
                    Ok(())
                }
            };
            if let Err(e) = result {
                self.inner.stats.errors.fetch_add(1, Ordering::Relaxed);
                if !self.warned {
                    self.warned = true;
                    tracing::warn!("SSD cache tier: {e}; serving from DRAM only until it recovers");
                }
            }
        }
    }

    /// Removes the record of `key` from the counts and adds its deletion to `batch`, when it
    /// exists (and, with `seq`, was written with that sequence number).
    fn unlink(&self, key: &[u8], seq: Option<u64>, batch: &mut WriteBatch) -> storage::Result<u64> {
        let dkey = data_key(key);
        let Some(old) = self.inner.store.get(&dkey)? else {
            return Ok(0);
        };
        let old_seq = u64_at(&old, 0).unwrap_or(0);
        if seq.is_some_and(|s| s != old_seq) {
            return Ok(0);
        }
        batch.delete(dkey);
        batch.delete(queue_key(old_seq).to_vec());
        Ok(record_bytes(key.len(), old.len()))
    }

    fn forget(&self, bytes: u64) {
        if bytes > 0 {
            let s = &self.inner.stats;
            s.bytes.fetch_sub(bytes, Ordering::Relaxed);
            s.entries.fetch_sub(1, Ordering::Relaxed);
        }
    }

    fn put(
        &mut self,
        key: &[u8],
        ticket: [u64; 4],
        expires: Instant,
        rows: &Rows,
    ) -> storage::Result<()> {
        let mut batch = WriteBatch::new();
        let freed = self.unlink(key, None, &mut batch)?;
        let seq = self.next_seq;
        let value = encode_record(self.inner.base, seq, ticket, expires, rows);
        let size = record_bytes(key.len(), value.len());
        if size > self.inner.budget {
            // Bigger than the whole tier: drop the old record, store nothing.
            if !batch.is_empty() {
                self.inner.store.write(batch)?;
                self.forget(freed);
            }
            return Ok(());
        }
        self.next_seq += 1;
        batch.put(data_key(key), value);
        batch.put(queue_key(seq).to_vec(), key.to_vec());
        self.inner.store.write(batch)?;
        self.forget(freed);
        let s = &self.inner.stats;
        s.writes.fetch_add(1, Ordering::Relaxed);
        s.entries.fetch_add(1, Ordering::Relaxed);
        let total = s.bytes.fetch_add(size, Ordering::Relaxed) + size;
        if total > self.inner.budget {
            self.evict()?;
        }
        Ok(())
    }

    fn delete(&mut self, key: &[u8], seq: Option<u64>) -> storage::Result<()> {
        let mut batch = WriteBatch::new();
        let freed = self.unlink(key, seq, &mut batch)?;
        if !batch.is_empty() {
            self.inner.store.write(batch)?;
            self.forget(freed);
        }
        Ok(())
    }

    /// Deletes the oldest records until the tier is within its budget.
    fn evict(&mut self) -> storage::Result<()> {
        let s = &self.inner.stats;
        while s.bytes.load(Ordering::Relaxed) > self.inner.budget {
            let start = queue_key(self.oldest);
            let end = [b'r'];
            let oldest: Vec<_> = self
                .inner
                .store
                .scan(
                    Bound::Included(&start[..]),
                    Bound::Excluded(&end[..]),
                    false,
                )
                .take(64)
                .collect::<storage::Result<_>>()?;
            if oldest.is_empty() {
                // The counts drifted from the store (an earlier write error): trust the store.
                s.bytes.store(0, Ordering::Relaxed);
                s.entries.store(0, Ordering::Relaxed);
                return Ok(());
            }
            for (qkey, key) in oldest {
                let seq = u64_at(&qkey, 1).unwrap_or(self.oldest);
                self.oldest = seq + 1;
                let mut batch = WriteBatch::new();
                let freed = self.unlink(&key, Some(seq), &mut batch)?;
                if batch.is_empty() {
                    // A `q` record without its `d` record: remove it alone.
                    batch.delete(qkey);
                }
                self.inner.store.write(batch)?;
                if freed > 0 {
                    self.forget(freed);
                    s.evictions.fetch_add(1, Ordering::Relaxed);
                }
                if s.bytes.load(Ordering::Relaxed) <= self.inner.budget {
                    return Ok(());
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proto::response::{ColumnSpec, RowsBuilder, RowsMetadata};
    use proto::types::{ColumnType, Value};

    /// A fresh directory under the system temp dir, removed on drop.
    pub(crate) struct TempDir(pub std::path::PathBuf);

    impl TempDir {
        pub(crate) fn new(tag: &str) -> Self {
            static N: AtomicU64 = AtomicU64::new(0);
            let p = std::env::temp_dir().join(format!(
                "peregrine-ssd-{tag}-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&p).unwrap();
            TempDir(p)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn rows(v: i32, pad: usize) -> Rows {
        let spec = |name: &str, ty| ColumnSpec {
            keyspace: "ks".into(),
            table: "t".into(),
            name: name.into(),
            ty,
        };
        let mut b = RowsBuilder::new();
        b.push_value(&Value::Int(v));
        b.push_cell(Some(&vec![b'x'; pad]));
        b.end_row();
        b.finish(RowsMetadata {
            columns: vec![spec("k", ColumnType::Int), spec("v", ColumnType::Blob)].into(),
            paging_state: Some(Bytes::from_static(b"page")),
            ..RowsMetadata::default()
        })
    }

    #[test]
    fn record_round_trips_rows_ticket_and_expiry() {
        let dir = TempDir::new("rt");
        let t = SsdTier::open(&dir.0, 1 << 20, None).unwrap();
        let expires = Instant::now() + Duration::from_secs(5);
        let r = rows(42, 10);
        t.put(
            b"k1".to_vec().into(),
            [1, 2, 3, 4],
            expires,
            Arc::new(r.clone()),
        );
        t.flush();
        let got = t.get(b"k1").unwrap();
        assert_eq!(got.rows, r);
        assert_eq!(got.ticket, [1, 2, 3, 4]);
        let skew = got.expires.max(expires) - got.expires.min(expires);
        assert!(skew < Duration::from_micros(1), "{skew:?}");
        assert!(t.get(b"k2").is_none());
        assert_eq!(t.stats().entries.load(Ordering::Relaxed), 1);
        assert_eq!(t.stats().writes.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn overwrite_and_delete_keep_the_counts_right() {
        let dir = TempDir::new("ow");
        let t = SsdTier::open(&dir.0, 1 << 20, None).unwrap();
        let e = Instant::now() + Duration::from_secs(5);
        t.put(b"k".to_vec().into(), [0; 4], e, Arc::new(rows(1, 100)));
        t.put(b"k".to_vec().into(), [0; 4], e, Arc::new(rows(2, 100)));
        t.flush();
        let s = t.stats();
        assert_eq!(s.entries.load(Ordering::Relaxed), 1);
        let one = s.bytes.load(Ordering::Relaxed);
        let rec = t.get(b"k").unwrap();
        assert_eq!(rec.rows.decode_rows().unwrap()[0][0], Value::Int(2));
        // A delete naming an older sequence number leaves the newer record alone.
        t.delete(b"k".to_vec().into(), rec.seq - 1);
        t.flush();
        assert!(t.get(b"k").is_some());
        assert_eq!(s.bytes.load(Ordering::Relaxed), one);
        t.delete(b"k".to_vec().into(), rec.seq);
        t.flush();
        assert!(t.get(b"k").is_none());
        assert_eq!(s.entries.load(Ordering::Relaxed), 0);
        assert_eq!(s.bytes.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn budget_evicts_oldest_first() {
        let dir = TempDir::new("budget");
        let budget = 20 * 1024;
        let t = SsdTier::open(&dir.0, budget, None).unwrap();
        let e = Instant::now() + Duration::from_secs(5);
        for i in 0..100u32 {
            t.put(
                format!("key{i:03}").into_bytes().into(),
                [0; 4],
                e,
                Arc::new(rows(i as i32, 900)),
            );
        }
        t.flush();
        let s = t.stats();
        let bytes = s.bytes.load(Ordering::Relaxed);
        assert!(bytes <= budget, "{bytes} > {budget}");
        let held: Vec<u32> = (0..100)
            .filter(|i| t.get(format!("key{i:03}").as_bytes()).is_some())
            .collect();
        assert!(held.len() >= 15 && held.len() < 25, "{held:?}");
        // FIFO: what is held is exactly the newest records.
        let n = held.len() as u32;
        assert_eq!(held, (100 - n..100).collect::<Vec<_>>());
        assert_eq!(s.entries.load(Ordering::Relaxed), u64::from(n));
        assert_eq!(s.evictions.load(Ordering::Relaxed), u64::from(100 - n));
    }

    #[test]
    fn reopening_wipes_the_previous_contents() {
        let dir = TempDir::new("wipe");
        let e = Instant::now() + Duration::from_secs(5);
        {
            let t = SsdTier::open(&dir.0, 1 << 20, None).unwrap();
            t.put(b"k".to_vec().into(), [0; 4], e, Arc::new(rows(1, 10)));
            t.flush();
            assert!(t.get(b"k").is_some());
        }
        let t = SsdTier::open(&dir.0, 1 << 20, None).unwrap();
        assert!(t.get(b"k").is_none());
        assert_eq!(t.stats().entries.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn full_queue_drops_puts_instead_of_blocking() {
        let dir = TempDir::new("queue");
        let t = SsdTier::open(&dir.0, 1 << 30, None).unwrap();
        // Pretend the writer is far behind.
        t.inner.queued.fetch_add(MAX_QUEUED_BYTES, Ordering::AcqRel);
        let e = Instant::now() + Duration::from_secs(5);
        t.put(b"k".to_vec().into(), [0; 4], e, Arc::new(rows(1, 10)));
        t.flush();
        assert!(t.get(b"k").is_none());
        assert_eq!(t.stats().dropped.load(Ordering::Relaxed), 1);
        t.inner.queued.fetch_sub(MAX_QUEUED_BYTES, Ordering::AcqRel);
    }
}
