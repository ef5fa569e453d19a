//! The result cache: Rows results of single-partition prepared reads, bounded in bytes, in
//! two tiers: DRAM (LRU eviction behind a TinyLFU admission filter) over an optional SSD tier
//! (`ssd`), and coherent by generation numbers.
//!
//! The DRAM tier is synchronous and socket-free (time comes in as an argument), so it is
//! tested directly; [`Cache::lookup`] adds the SSD tier, whose reads run on tokio's blocking
//! pool.
//!
//! # Coherence
//!
//! Every entry remembers the generations that were current when its read *started* (a
//! [`Ticket`], taken before the request went upstream): its partition's stripe, its table, its
//! keyspace, and the global generation. Invalidating bumps a generation (one atomic add), and
//! an entry is served only while all four still match and it is younger than its
//! `max_staleness`. So a read that raced with a write (it read the old value upstream, the
//! write was acknowledged and invalidated, then the read's result arrived) is never served: its
//! ticket predates the bump. Stripes are a fixed array indexed by a hash of
//! (keyspace, table, partition key), so two partitions may share one. A stripe's word holds its
//! generation and a tag ([`StripeWord`]): a write acknowledged with no other change to the
//! stripe in between (the in-place update path, [`Cache::write_acknowledged`]) leaves the tag of
//! its partition, and every other bump clears it. An entry whose ticket is exactly that one
//! write behind, a write to another partition, is still valid (and takes the new word as its
//! ticket when next read); anything else is a miss, never a stale read. Without the tag, every
//! write invalidated the entries of the other partitions of its stripe: with 50k cached
//! partitions in 64k stripes, a third of the writes of an 80:20 load cost an extra miss.
//!
//! # Admission and eviction
//!
//! Each shard keeps its entries in insertion order with a CLOCK "referenced" bit (a hit only
//! sets the bit: no reordering on the read path), and a count-min sketch of 4-bit access
//! counters (halved every `10 x width` accesses: TinyLFU's aging). When an insert needs room,
//! the oldest entry not referenced since it was last passed over is the victim (referenced
//! ones get a second chance); it is evicted only if the newcomer's estimated frequency is
//! higher, otherwise the newcomer is rejected. Dead entries (stale generations or past their
//! staleness bound) are always evicted. A one-off scan therefore cannot flush a hot working
//! set.
//!
//! # Refresh ahead
//!
//! The first hit on an entry past its refresh point tells the caller to read it again upstream
//! in the background ([`Cache::get_with_refresh`]); that read fills the cache like a miss,
//! ticket and all. A hot entry is so replaced before it expires and its readers never wait on
//! the upstream: without it, entries filled together (a warm-up) expire together, and their
//! readers all miss at once. The refresh point lies between [`REFRESH_FROM`] and
//! [`REFRESH_TO`] of the entry's life (from its fill to its staleness bound), chosen by the
//! key's hash, so entries filled together are refreshed spread over that window instead of in
//! one burst that would load the upstream all at once. A cold entry is never refreshed: it
//! just expires. The staleness bound is unchanged (a refreshed entry's bound counts from its
//! refresh read).
//!
//! # What an entry holds
//!
//! A [`Cached`] result: the RESULT body for the protocol version the key names (as the
//! upstream sent it, [`Cached::from_body`]; encoded once only for a patched entry or one
//! promoted from the SSD tier), and the rows decoded from it when first needed (a patch, the
//! SSD tier; their data is a slice of the body, so it is stored once). A hit is answered with
//! the body as is: no per-hit encoding or copying of metadata; a miss stores the body without
//! decoding it.
//!
//! # The SSD tier
//!
//! With an SSD tier, what DRAM lets go of while still valid goes there (queued, written by the
//! tier's own thread): live entries evicted for room, newcomers admission declined, and
//! results too large for a DRAM shard (up to `max_entry_bytes`). Each SSD record carries the
//! entry's ticket and expiry, and [`Cache::lookup`] checks an SSD record exactly like a DRAM
//! entry: a record whose generations moved or that is past its staleness bound is a miss and
//! is deleted. So invalidation reaches the SSD tier with the same one atomic add. A valid
//! record is served and offered to DRAM (admission decides); an entry promoted from SSD is not
//! written again when DRAM evicts it, its SSD record being still there (unless the SSD tier's
//! FIFO budget eviction removed it meanwhile: then it is simply gone).

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use proto::error::DbError;
use proto::frame::ProtocolVersion;
use proto::response::{Response, ResultBody, Rows};

use super::ssd::SsdTier;

const SHARDS: usize = 16;
/// Partition stripes (8 bytes each, 2 MiB). A write costs the other cached partitions of its
/// stripe a miss only when one of them falls two writes behind without a read between (see
/// "Coherence"); with a quarter of a million stripes, 50k cached partitions have 0.19 mates
/// each, and an 80:20 load lost 3% of its reads to that with 65,536 stripes.
const STRIPES: usize = 1 << 18;
const TABLE_GENS: usize = 1 << 12;
const KEYSPACE_GENS: usize = 1 << 10;

/// A stripe's atomic word: its generation above [`TAG_BITS`] tag bits. Every change adds one
/// to the generation, so a generation names one state of the stripe. The tag is non-zero only
/// when the last change was the clean acknowledgement of an in-place write (its partition's
/// [`tag_of`]), zero after any other change.
type StripeWord = u64;
const TAG_BITS: u32 = 24;
const TAG_MASK: u64 = (1 << TAG_BITS) - 1;

/// The word after `w` for any change but a clean acknowledgement: the next generation, no tag.
fn next_generation(w: StripeWord) -> StripeWord {
    ((w >> TAG_BITS) + 1) << TAG_BITS
}

/// A partition's tag: bits of its hash the stripe index does not use, never zero. Two
/// partitions of one stripe with equal tags are taken for the same one (a miss, not an error).
fn tag_of(part: u64) -> u64 {
    ((part >> 40) & TAG_MASK) | 1
}

/// Whether a ticket taken for partition `part` is valid against the `current` one: its stripe
/// by [`stripe_fresh`], its table, keyspace and global generations unchanged.
fn fresh(part: u64, then: Ticket, current: Ticket) -> bool {
    stripe_fresh(part, then.0[0], current.0[0]) && then.0[1..] == current.0[1..]
}

/// Whether a cached result of partition `part` read when its stripe was `then` is still
/// valid now that the stripe is `now`: nothing changed, or exactly one write to another
/// partition of the stripe (its start and its clean acknowledgement, the tag naming it).
fn stripe_fresh(part: u64, then: StripeWord, now: StripeWord) -> bool {
    then == now
        || ((now >> TAG_BITS) == (then >> TAG_BITS) + 2
            && now & TAG_MASK != 0
            && now & TAG_MASK != tag_of(part))
}
/// Bookkeeping bytes charged per entry on top of its key and data.
const ENTRY_OVERHEAD: usize = 160;
/// The part of an entry's life after which a hit may ask for a refresh (see "Refresh ahead").
pub const REFRESH_FROM: f64 = 0.6;
/// The part of an entry's life after which a hit asks for a refresh.
pub const REFRESH_TO: f64 = 0.9;

/// When an entry of `key_hash` filled at `now` and valid until `expires` is due for a refresh.
fn refresh_point(key_hash: u64, now: Instant, expires: Instant) -> Instant {
    let spread = (key_hash >> 11) as f64 / (1u64 << 53) as f64; // uniform in [0, 1)
    let part = REFRESH_FROM + (REFRESH_TO - REFRESH_FROM) * spread;
    now + expires.saturating_duration_since(now).mul_f64(part)
}

/// The hash of key bytes, or of a prefix of them: xxh3 in one shot (the streaming hasher's
/// set-up and finish cost more than hashing a key of a hundred bytes).
fn hash(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

/// The shard maps are keyed by [`CacheKey::hash`], already a good hash: used as is.
#[derive(Default)]
struct IdentityHasher(u64);

impl Hasher for IdentityHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type ByHash<V> = HashMap<u64, V, BuildHasherDefault<IdentityHasher>>;

/// A cached result: the RESULT body encoded for one protocol version, and its rows (whose
/// `data` is a slice of `body`), decoded from the body the first time something needs them (a
/// patch, the SSD tier, the stale store): a miss stores and relays the body undecoded. Cheap to
/// clone.
#[derive(Debug, Clone)]
pub struct Cached {
    pub body: Bytes,
    version: ProtocolVersion,
    /// The result's column count (an entry's size counts a spec per column).
    columns: usize,
    /// `None` inside: the body does not decode as rows.
    rows: OnceLock<Option<Arc<Rows>>>,
}

impl Cached {
    /// Encodes `rows` as a RESULT body of `version` and keeps the rows over the same bytes.
    pub fn new(rows: Rows, version: ProtocolVersion) -> Self {
        let mut out = BytesMut::with_capacity(rows.data.len() + 64);
        let data_len = rows.data.len();
        let resp = Response::Result(ResultBody::Rows(rows));
        resp.encode_body(version, &mut out);
        let body = out.freeze();
        let Response::Result(ResultBody::Rows(mut rows)) = resp else {
            unreachable!("built as Rows above")
        };
        rows.data = body.slice(body.len() - data_len..);
        Cached {
            body,
            version,
            columns: rows.metadata.columns.len(),
            rows: OnceLock::from(Some(Arc::new(rows))),
        }
    }

    /// A result as the upstream sent it: a whole RESULT body of kind Rows for `version`, stored
    /// as received (not decoded and encoded again). Only its kind and column count are read
    /// here; the rows are decoded when needed ([`Cached::rows`]). The body is copied once into
    /// a buffer of its own: what arrives is a view into the upstream connection's read buffer,
    /// which a cached entry must not keep alive (the budget counts only the body's bytes).
    pub fn from_body(body: &[u8], version: ProtocolVersion) -> Result<Self, DbError> {
        // [int kind][int flags][int columns_count] (native protocol spec, 4.2.5.2).
        let int = |at: usize| {
            body.get(at..at + 4)
                .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        };
        let columns = match (int(0), int(8)) {
            (Some(ROWS_KIND), Some(n)) if (0..=65_535).contains(&n) => n as usize,
            _ => {
                return Err(DbError::protocol(
                    "Expected a Rows result with a valid column count",
                ))
            }
        };
        Ok(Cached {
            body: Bytes::copy_from_slice(body),
            version,
            columns,
            rows: OnceLock::new(),
        })
    }

    /// The rows, decoded over the body on first use; `None` when the body does not decode
    /// (the upstream's answer was relayed as sent, but nothing can be built on it).
    pub fn rows(&self) -> Option<Arc<Rows>> {
        self.rows
            .get_or_init(
                || match Rows::decode_result(self.version, self.body.clone()) {
                    Ok(rows) => Some(Arc::new(rows)),
                    Err(e) => {
                        tracing::debug!("cached rows do not decode: {e}");
                        None
                    }
                },
            )
            .clone()
    }
}

/// The RESULT kind of a Rows result.
const ROWS_KIND: i32 = 0x0002;

/// Where a cached read lives: its partition (for invalidation) and its exact request.
#[derive(Debug, Clone)]
pub struct CacheKey {
    version: ProtocolVersion,
    /// Hash of (keyspace, table, partition key): picks the stripe and the shard, so all
    /// entries of one partition live in one shard.
    part: u64,
    stripe: usize,
    table: usize,
    keyspace: usize,
    hash: u64,
    bytes: Vec<u8>,
}

/// The start of the key of every cached read of one table: its keyspace and table, each
/// length-prefixed, and the generation slots they pick. Made once per prepared statement, so
/// a key does not hash them again.
#[derive(Debug, Clone)]
pub struct TablePrefix {
    bytes: Box<[u8]>,
    table: usize,
    keyspace: usize,
}

impl TablePrefix {
    pub fn new(keyspace: &str, table: &str) -> Self {
        TablePrefix {
            bytes: len_prefixed(&[keyspace.as_bytes(), table.as_bytes()]).into(),
            table: table_slot(keyspace, table),
            keyspace: keyspace_slot(keyspace),
        }
    }
}

/// Writes a [`CacheKey`]'s bytes (the layout of [`len_prefixed`] over keyspace, table,
/// partition key and request) into one buffer as they are produced, and hashes prefixes of it:
/// a cache hit builds its key with one allocation and no intermediate copies.
pub struct KeyWriter {
    bytes: Vec<u8>,
    table: usize,
    keyspace: usize,
    partition_end: usize,
    /// Where the length of the part being written goes.
    open: usize,
}

/// The largest key allocation a thread keeps for its next key ([`CacheKey::recycle`]).
const SPARE_KEY_BYTES: usize = 1024;

thread_local! {
    /// The bytes of this thread's last key that a hit let go of ([`CacheKey::recycle`]), for
    /// the next key: a hit's key is not kept, and its allocation and free were 2% of a hit.
    static SPARE_KEY: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

impl KeyWriter {
    /// A key of `prefix`'s table, with room for `capacity` more bytes; the partition key's
    /// bytes are written next ([`KeyWriter::buf`]).
    pub fn new(prefix: &TablePrefix, capacity: usize) -> Self {
        let need = prefix.bytes.len() + 8 + capacity;
        let mut bytes = SPARE_KEY.take();
        if bytes.capacity() < need {
            bytes = Vec::with_capacity(need);
        }
        bytes.clear();
        bytes.extend_from_slice(&prefix.bytes);
        let open = bytes.len();
        bytes.extend_from_slice(&[0; 4]);
        KeyWriter {
            bytes,
            table: prefix.table,
            keyspace: prefix.keyspace,
            partition_end: 0,
            open,
        }
    }

    /// Where the part being written (the partition key, then the request) goes.
    pub fn buf(&mut self) -> &mut Vec<u8> {
        &mut self.bytes
    }

    /// Ends the partition key; what is written from here is the request.
    pub fn end_partition_key(&mut self) {
        self.close();
        self.partition_end = self.bytes.len();
        self.open = self.bytes.len();
        self.bytes.extend_from_slice(&[0; 4]);
    }

    /// The key, for a result encoded for `version`.
    pub fn finish(mut self, version: ProtocolVersion) -> CacheKey {
        self.close();
        let bytes = self.bytes;
        let part = hash(&bytes[..self.partition_end]);
        CacheKey {
            version,
            part,
            stripe: stripe_of_part(part),
            table: self.table,
            keyspace: self.keyspace,
            // The partition's bytes are hashed once: the rest is hashed seeded with theirs.
            hash: xxhash_rust::xxh3::xxh3_64_with_seed(&bytes[self.partition_end..], part),
            bytes,
        }
    }

    /// Writes the open part's length in front of it.
    fn close(&mut self) {
        let n = (self.bytes.len() - self.open - 4) as u32;
        self.bytes[self.open..self.open + 4].copy_from_slice(&n.to_be_bytes());
    }
}

impl CacheKey {
    /// `request` must identify everything the result depends on besides the partition
    /// (statement id, all bound values, paging, role, ...); `version` is the protocol version
    /// the result is encoded for (it must also be part of `request`).
    pub fn new(
        version: ProtocolVersion,
        keyspace: &str,
        table: &str,
        partition_key: &[u8],
        request: &[u8],
    ) -> Self {
        let prefix = TablePrefix::new(keyspace, table);
        let mut w = KeyWriter::new(&prefix, partition_key.len() + request.len());
        w.buf().extend_from_slice(partition_key);
        w.end_partition_key();
        w.buf().extend_from_slice(request);
        w.finish(version)
    }

    /// The key's bytes: equal for equal keys, and what the SSD tier stores records under.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// A key no longer needed (a hit's): its bytes' allocation serves this thread's next key
    /// (unless it is large: a thread does not hold on to an odd key's kilobytes).
    pub fn recycle(self) {
        if self.bytes.capacity() <= SPARE_KEY_BYTES {
            SPARE_KEY.set(self.bytes);
        }
    }
}

/// The parts, each prefixed by its length as a big-endian u32 (the layout of key bytes, which
/// [`key_parts`] reads back).
fn len_prefixed(parts: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(parts.iter().map(|p| p.len() + 4).sum());
    for p in parts {
        put_prefixed(&mut out, p);
    }
    out
}

/// Appends `part` prefixed by its length as a big-endian u32 (the layout of every part of a key).
pub(crate) fn put_prefixed(out: &mut Vec<u8>, part: &[u8]) {
    out.extend_from_slice(&(part.len() as u32).to_be_bytes());
    out.extend_from_slice(part);
}

/// The hash of a partition's key prefix, as [`KeyWriter::finish`] computes it.
fn part_of(keyspace: &str, table: &str, pk: &[u8]) -> u64 {
    hash(&partition_prefix(keyspace, table, pk))
}

fn stripe_of_part(part: u64) -> usize {
    (part as usize) % STRIPES
}

fn stripe_of(keyspace: &str, table: &str, pk: &[u8]) -> usize {
    stripe_of_part(part_of(keyspace, table, pk))
}

/// The start of the key bytes of every entry of this partition (see [`CacheKey::new`]).
fn partition_prefix(keyspace: &str, table: &str, pk: &[u8]) -> Vec<u8> {
    len_prefixed(&[keyspace.as_bytes(), table.as_bytes(), pk])
}

fn table_slot(keyspace: &str, table: &str) -> usize {
    (hash(&len_prefixed(&[keyspace.as_bytes(), table.as_bytes()])) as usize) % TABLE_GENS
}

fn keyspace_slot(keyspace: &str) -> usize {
    (hash(&len_prefixed(&[keyspace.as_bytes()])) as usize) % KEYSPACE_GENS
}

/// (keyspace, table, partition key) read back from an entry's key bytes.
fn key_parts(key_bytes: &[u8]) -> Option<(&str, &str, &[u8])> {
    let mut parts = Vec::with_capacity(3);
    let mut rest = key_bytes;
    while parts.len() < 3 {
        let n = u32::from_be_bytes(rest.get(..4)?.try_into().ok()?) as usize;
        parts.push(rest.get(4..4 + n)?);
        rest = &rest[4 + n..];
    }
    let ks = std::str::from_utf8(parts[0]).ok()?;
    let table = std::str::from_utf8(parts[1]).ok()?;
    Some((ks, table, parts[2]))
}

/// What [`Cache::write_started`] hands to [`Cache::write_acknowledged`].
#[derive(Debug)]
pub struct WriteTicket {
    part: u64,
    stripe: usize,
    /// The stripe's word right before the start bump (what entries valid before the write
    /// are checked against) and right after it (what the acknowledgement expects).
    before: StripeWord,
    after: StripeWord,
    prefix: Vec<u8>,
    /// The write's client timestamp (µs since the epoch), if it carried one.
    timestamp: Option<i64>,
    /// The wall clock when the write started: without a client timestamp, the coordinator's
    /// timestamp for it is later.
    started_micros: i64,
}

/// The generations current when a read started; see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket([u64; 4]);

/// Counters; all monotonic except the gauges computed on demand. The SSD tier's are in
/// [`super::ssd::SsdStats`].
#[derive(Debug, Default)]
pub struct CacheStats {
    /// Lookups answered from either tier.
    pub hits: AtomicU64,
    /// Lookups answered by neither tier.
    pub misses: AtomicU64,
    pub dram_hits: AtomicU64,
    pub dram_misses: AtomicU64,
    pub inserts: AtomicU64,
    pub rejected: AtomicU64,
    pub evictions: AtomicU64,
    pub too_large: AtomicU64,
    pub stale_fills: AtomicU64,
    pub invalidations: AtomicU64,
    /// Entries updated in place by a write that passed through.
    pub patched: AtomicU64,
}

struct Entry {
    key: Box<[u8]>,
    part: u64,
    version: ProtocolVersion,
    /// Result column names of a read a write may patch in place (`None`: invalidate only).
    shape: Option<Arc<[String]>>,
    value: Cached,
    ticket: Ticket,
    expires: Instant,
    /// From here on a hit asks for a refresh ([`Cache::get_with_refresh`]).
    refresh_at: Instant,
    /// A refresh was asked for (at most one per entry).
    refreshing: bool,
    size: usize,
    tick: u64,
    /// CLOCK bit: read since the eviction scan last passed it.
    referenced: bool,
    /// Promoted from the SSD tier, whose record is (probably) still there: not written again
    /// on eviction.
    on_ssd: bool,
    /// No cell of the cached result has a write timestamp above this (µs since the epoch):
    /// the wall clock when the entry was stored, raised by every write patched into it. A
    /// client-timestamped write patches only above it (see [`Cache::write_acknowledged`]).
    ts_floor: i64,
}

/// A valid entry DRAM let go of, on its way to the SSD tier (its rows are decoded there,
/// outside the shard's lock).
struct Spill {
    key: Box<[u8]>,
    ticket: Ticket,
    expires: Instant,
    value: Cached,
}

/// The wall clock in µs since the epoch, the unit of CQL write timestamps.
fn wall_clock_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

fn entry_size(key_len: usize, value: &Cached) -> usize {
    key_len + value.body.len() + value.columns * 48 + ENTRY_OVERHEAD
}

struct Shard {
    /// By [`CacheKey::hash`]; the entry's key bytes are compared on every lookup (two keys
    /// with one hash: the later insert replaces the earlier, a miss, never a wrong answer).
    map: ByHash<Entry>,
    /// Insertion order (CLOCK hand at the front): tick -> key hash.
    lru: BTreeMap<u64, u64>,
    /// Partition hash -> key hashes of its entries.
    parts: ByHash<Vec<u64>>,
    tick: u64,
    bytes: usize,
    sketch: Sketch,
}

/// The cache. Cheap to share (`Arc`); all methods take `&self`.
pub struct Cache {
    shard_budget: usize,
    max_entry_bytes: usize,
    shards: Box<[Mutex<Shard>]>,
    stripes: Box<[AtomicU64]>,
    tables: Box<[AtomicU64]>,
    keyspaces: Box<[AtomicU64]>,
    global: AtomicU64,
    ssd: Option<Arc<SsdTier>>,
    pub stats: CacheStats,
}

impl Cache {
    /// A DRAM-only cache of at most `budget_bytes` (keys, data and bookkeeping), caching
    /// results of up to `max_entry_bytes`.
    pub fn new(budget_bytes: usize, max_entry_bytes: usize) -> Self {
        Self::with_ssd(budget_bytes, max_entry_bytes, None)
    }

    /// The same, over an SSD tier when `ssd` is given.
    pub fn with_ssd(
        budget_bytes: usize,
        max_entry_bytes: usize,
        ssd: Option<Arc<SsdTier>>,
    ) -> Self {
        let shard_budget = budget_bytes / SHARDS;
        // Sketch width ~ entries a shard holds at 1 KiB each, within sane bounds.
        let width = (shard_budget / 1024)
            .next_power_of_two()
            .clamp(256, 1 << 20);
        let atomics = |n: usize| (0..n).map(|_| AtomicU64::new(0)).collect::<Box<[_]>>();
        Cache {
            shard_budget,
            max_entry_bytes,
            shards: (0..SHARDS)
                .map(|_| {
                    Mutex::new(Shard {
                        map: ByHash::default(),
                        parts: ByHash::default(),
                        lru: BTreeMap::new(),
                        tick: 0,
                        bytes: 0,
                        sketch: Sketch::new(width),
                    })
                })
                .collect(),
            stripes: atomics(STRIPES),
            tables: atomics(TABLE_GENS),
            keyspaces: atomics(KEYSPACE_GENS),
            global: AtomicU64::new(0),
            ssd,
            stats: CacheStats::default(),
        }
    }

    /// True when the cache can hold anything.
    pub fn enabled(&self) -> bool {
        self.shard_budget > 0 || self.ssd.is_some()
    }

    /// The SSD tier, when there is one.
    pub fn ssd(&self) -> Option<&SsdTier> {
        self.ssd.as_deref()
    }

    fn shard(&self, key: &CacheKey) -> std::sync::MutexGuard<'_, Shard> {
        self.shard_of_part(key.part)
    }

    fn shard_of_part(&self, part: u64) -> std::sync::MutexGuard<'_, Shard> {
        self.shards[(part >> 32) as usize % SHARDS]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes a ticket for `key`: call before sending the read upstream.
    pub fn ticket(&self, key: &CacheKey) -> Ticket {
        Ticket([
            self.stripes[key.stripe].load(Ordering::Acquire),
            self.tables[key.table].load(Ordering::Acquire),
            self.keyspaces[key.keyspace].load(Ordering::Acquire),
            self.global.load(Ordering::Acquire),
        ])
    }

    /// Whether `ticket` (taken for `key`) is still valid; see [`stripe_fresh`].
    fn current(&self, key: &CacheKey, ticket: Ticket) -> bool {
        fresh(key.part, ticket, self.ticket(key))
    }

    /// Bumps a stripe for anything but a clean acknowledgement: the next generation, tag
    /// cleared. Returns the word before.
    fn bump_stripe(&self, stripe: usize) -> StripeWord {
        let bumped = |w| Some(next_generation(w));
        match self.stripes[stripe].fetch_update(Ordering::AcqRel, Ordering::Acquire, bumped) {
            Ok(w) | Err(w) => w,
        }
    }

    /// The cached result for `key` from either tier: DRAM ([`Cache::get`]), then the SSD tier
    /// (read on the blocking pool), whose record passes the same checks as a DRAM entry and
    /// is then offered to DRAM. Counts an overall hit or miss.
    pub async fn lookup(&self, key: &CacheKey, now: Instant) -> Option<Cached> {
        if let Some(value) = self.get(key, now) {
            self.stats.hits.fetch_add(1, Ordering::Relaxed);
            return Some(value);
        }
        self.lookup_ssd(key, || now).await
    }

    /// The SSD half of [`Cache::lookup`], for a caller that already missed DRAM with
    /// [`Cache::get`]. Counts the overall hit or miss. `now` is read only for a record the
    /// SSD tier holds (without a tier, a miss reads no clock).
    pub async fn lookup_ssd(
        &self,
        key: &CacheKey,
        now: impl FnOnce() -> Instant + Send,
    ) -> Option<Cached> {
        let found = match &self.ssd {
            Some(ssd) => {
                let tier = ssd.clone();
                let k = key.bytes.clone();
                let record = tokio::task::spawn_blocking(move || tier.get(&k))
                    .await
                    .ok()
                    .flatten();
                match record {
                    Some(r) => self.ssd_record(key, r, now()),
                    None => {
                        ssd.stats().misses.fetch_add(1, Ordering::Relaxed);
                        None
                    }
                }
            }
            None => None,
        };
        let counter = if found.is_some() {
            &self.stats.hits
        } else {
            &self.stats.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Checks an SSD record read for `key`; a valid one is promoted (subject to admission), an
    /// invalid one deleted.
    fn ssd_record(&self, key: &CacheKey, r: super::ssd::SsdRecord, now: Instant) -> Option<Cached> {
        let ssd = self.ssd.as_ref()?;
        let ticket = Ticket(r.ticket);
        if now >= r.expires || !self.current(key, ticket) {
            ssd.delete(key.bytes.as_slice().into(), r.seq);
            ssd.stats().misses.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        ssd.stats().hits.fetch_add(1, Ordering::Relaxed);
        let value = Cached::new(r.rows, key.version);
        self.admit(
            key.clone(),
            ticket,
            value.clone(),
            r.expires,
            now,
            true,
            None,
        );
        Some(value)
    }

    /// The cached result for `key` in the DRAM tier, if present, not invalidated and not past
    /// its staleness bound at `now`. Counts a DRAM hit or miss, and the access for admission.
    pub fn get(&self, key: &CacheKey, now: Instant) -> Option<Cached> {
        self.get_with_refresh(key, now).map(|(value, _)| value)
    }

    /// [`Cache::get`], also saying whether the caller should refresh the entry: true for the
    /// first hit past the entry's refresh point (see "Refresh ahead"). The caller then reads the result
    /// upstream again and inserts it (with a ticket taken before that read, as for a miss), or
    /// calls [`Cache::refresh_abandoned`]. Hot entries are so replaced before they expire, and
    /// their readers never wait on the upstream.
    pub fn get_with_refresh(&self, key: &CacheKey, now: Instant) -> Option<(Cached, bool)> {
        let current = self.ticket(key);
        let mut shard = self.shard(key);
        shard.sketch.increment(key.hash);
        // A dead entry stays: a write in flight may revive it by patching it, the next
        // insert of the key replaces it, and eviction takes dead entries first.
        let found = match shard.map.get_mut(&key.hash) {
            Some(e)
                if *e.key == *key.bytes && now < e.expires && fresh(e.part, e.ticket, current) =>
            {
                // Valid after a write to another partition of its stripe: catch up, so that
                // the next such write leaves it valid too.
                e.ticket = current;
                e.referenced = true;
                let refresh = now >= e.refresh_at && !e.refreshing;
                e.refreshing |= refresh;
                Some((e.value.clone(), refresh))
            }
            _ => None,
        };
        drop(shard);
        let counter = match found {
            Some(_) => &self.stats.dram_hits,
            None => &self.stats.dram_misses,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// The refresh [`Cache::get_with_refresh`] asked for will not happen (too many in flight):
    /// a later hit may ask again.
    pub fn refresh_abandoned(&self, key: &CacheKey) {
        let mut shard = self.shard(key);
        if let Some(e) = shard.map.get_mut(&key.hash) {
            if *e.key == *key.bytes {
                e.refreshing = false;
            }
        }
    }

    /// Offers a result read with `ticket` (taken before the read went upstream). Not stored if
    /// an invalidation happened since, if it is too large, or if admission prefers what is
    /// cached (then it goes to the SSD tier, if any). `ttl` is the table's `max_staleness`,
    /// counted from `started` (when the read went upstream).
    pub fn insert(
        &self,
        key: CacheKey,
        ticket: Ticket,
        rows: Rows,
        started: Instant,
        ttl: Duration,
    ) {
        self.insert_shaped(key, ticket, rows, started, ttl, None);
    }

    /// [`Cache::insert`] of a read whose result a write may patch in place: `shape` names its
    /// result columns (see [`Cache::write_acknowledged`]).
    pub fn insert_shaped(
        &self,
        key: CacheKey,
        ticket: Ticket,
        rows: Rows,
        started: Instant,
        ttl: Duration,
        shape: Option<Arc<[String]>>,
    ) {
        let value = Cached::new(rows, key.version);
        self.insert_cached(key, ticket, value, started, ttl, shape);
    }

    /// [`Cache::insert_shaped`] of a result already encoded for the key's protocol version
    /// (the upstream's body as received, [`Cached::from_body`]).
    pub fn insert_cached(
        &self,
        key: CacheKey,
        ticket: Ticket,
        value: Cached,
        started: Instant,
        ttl: Duration,
        shape: Option<Arc<[String]>>,
    ) {
        self.admit(key, ticket, value, started + ttl, started, false, shape);
    }

    /// Stores an entry in DRAM if admission lets it in; what DRAM lets go of (evicted live
    /// entries, the rejected newcomer) is queued for the SSD tier, except entries that came
    /// from it (`from_ssd`).
    #[allow(clippy::too_many_arguments)]
    fn admit(
        &self,
        key: CacheKey,
        ticket: Ticket,
        value: Cached,
        expires: Instant,
        now: Instant,
        from_ssd: bool,
        shape: Option<Arc<[String]>>,
    ) {
        let size = entry_size(key.bytes.len(), &value);
        if size > self.max_entry_bytes.max(ENTRY_OVERHEAD) {
            self.stats.too_large.fetch_add(1, Ordering::Relaxed);
            return;
        }
        // Not needed for correctness (entries are validated on read), only to avoid storing
        // something already dead.
        if !self.current(&key, ticket) {
            self.stats.stale_fills.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let spill_to_ssd = self.ssd.is_some();
        let newcomer = |key: CacheKey, value: Cached| Spill {
            key: key.bytes.into(),
            ticket,
            expires,
            value,
        };
        if size > self.shard_budget {
            match (&self.ssd, from_ssd) {
                (Some(_), false) => self.spill(vec![newcomer(key, value)]),
                (Some(_), true) => {}
                (None, _) => {
                    self.stats.too_large.fetch_add(1, Ordering::Relaxed);
                }
            }
            return;
        }
        let mut spills = Vec::new();
        let mut shard = self.shard(&key);
        shard.remove(key.hash);
        let mut admitted = true;
        while shard.bytes + size > self.shard_budget {
            let Some((&tick, &vhash)) = shard.lru.first_key_value() else {
                break;
            };
            let s = &mut *shard;
            let Some(e) = s.map.get_mut(&vhash) else {
                s.lru.remove(&tick);
                continue;
            };
            let dead = e.expires <= now || !self.valid_entry(e);
            if !dead {
                if e.referenced {
                    // Second chance: to the back of the queue, unreferenced.
                    s.tick += 1;
                    e.referenced = false;
                    e.tick = s.tick;
                    s.lru.remove(&tick);
                    s.lru.insert(s.tick, vhash);
                    continue;
                }
                if shard.sketch.estimate(key.hash) <= shard.sketch.estimate(vhash) {
                    self.stats.rejected.fetch_add(1, Ordering::Relaxed);
                    admitted = false;
                    break;
                }
                self.stats.evictions.fetch_add(1, Ordering::Relaxed);
            }
            if let Some(e) = shard.remove(vhash) {
                if spill_to_ssd && !dead && !e.on_ssd {
                    spills.push(Spill {
                        key: e.key,
                        ticket: e.ticket,
                        expires: e.expires,
                        value: e.value,
                    });
                }
            }
        }
        if admitted {
            shard.tick += 1;
            let tick = shard.tick;
            shard.lru.insert(tick, key.hash);
            shard.bytes += size;
            shard.parts.entry(key.part).or_default().push(key.hash);
            shard.map.insert(
                key.hash,
                Entry {
                    key: key.bytes.into(),
                    part: key.part,
                    version: key.version,
                    shape,
                    value,
                    ticket,
                    expires,
                    refresh_at: refresh_point(key.hash, now, expires),
                    refreshing: false,
                    size,
                    tick,
                    referenced: false,
                    on_ssd: from_ssd,
                    ts_floor: wall_clock_micros(),
                },
            );
            self.stats.inserts.fetch_add(1, Ordering::Relaxed);
        } else if spill_to_ssd && !from_ssd {
            spills.push(newcomer(key, value));
        }
        drop(shard);
        self.spill(spills);
    }

    /// Queues entries for the SSD tier (never blocks).
    fn spill(&self, spills: Vec<Spill>) {
        let Some(ssd) = &self.ssd else {
            return;
        };
        for s in spills {
            if let Some(rows) = s.value.rows() {
                ssd.put(s.key, s.ticket.0, s.expires, rows);
            }
        }
    }

    /// Whether an entry's generations are all still current.
    fn valid_entry(&self, e: &Entry) -> bool {
        let now = self.stripes[stripe_of_part(e.part)].load(Ordering::Acquire);
        stripe_fresh(e.part, e.ticket.0[0], now)
            && self.valid_entry_ignoring_stripe(&e.key, e.ticket)
    }

    /// A write to this partition passed through.
    pub fn invalidate_partition(&self, keyspace: &str, table: &str, partition_key: &[u8]) {
        self.bump_stripe(stripe_of(keyspace, table, partition_key));
        self.stats.invalidations.fetch_add(1, Ordering::Relaxed);
    }

    /// A write to this partition that may patch cached results is about to go upstream:
    /// from now on nothing cached for the partition (or its stripe) is served, until
    /// [`Cache::write_acknowledged`] or [`Cache::write_failed`]. `timestamp` is the write's
    /// client timestamp, if it has one.
    pub fn write_started(
        &self,
        keyspace: &str,
        table: &str,
        partition_key: &[u8],
        timestamp: Option<i64>,
    ) -> WriteTicket {
        let part = part_of(keyspace, table, partition_key);
        let stripe = stripe_of_part(part);
        let before = self.bump_stripe(stripe);
        WriteTicket {
            part,
            stripe,
            before,
            after: next_generation(before),
            prefix: partition_prefix(keyspace, table, partition_key),
            timestamp,
            started_micros: wall_clock_micros(),
        }
    }

    /// The write of `w` was acknowledged. If nothing else moved the partition's stripe since
    /// [`Cache::write_started`] (no overlapping write, so the write is the only change since),
    /// every entry of the partition that was valid before the write and has a shape is
    /// replaced by `patch(rows, shape)` (kept with its original expiry) or dropped when that
    /// is `None`. Otherwise this is a plain invalidation of the partition.
    ///
    /// Last write wins by timestamp, so a patch must know the write beats every cell it
    /// replaces: its timestamp must be above the entry's `ts_floor` (ties go to the larger
    /// value upstream, so equal is not enough), else the entry is dropped. Without a client
    /// timestamp the coordinator stamps the write with its clock, later than the write's
    /// start here (clocks in sync, as Cassandra itself assumes). A patch raises the floor to
    /// the write's timestamp (without one, to now).
    pub fn write_acknowledged(
        &self,
        w: WriteTicket,
        patch: &dyn Fn(&Rows, &[String]) -> Option<Rows>,
    ) {
        let acked = next_generation(w.after) | tag_of(w.part);
        if self.stripes[w.stripe]
            .compare_exchange(w.after, acked, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            self.bump_stripe(w.stripe);
            self.stats.invalidations.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let lower = w.timestamp.unwrap_or(w.started_micros);
        let upper = w.timestamp.unwrap_or_else(wall_clock_micros);
        let mut shard = self.shard_of_part(w.part);
        let hashes = shard.parts.get(&w.part).cloned().unwrap_or_default();
        for h in hashes {
            let Some(e) = shard.map.get(&h) else {
                continue;
            };
            if !e.key.starts_with(&w.prefix) {
                continue; // another partition with the same 64-bit hash
            }
            let valid_before = stripe_fresh(w.part, e.ticket.0[0], w.before)
                && self.valid_entry_ignoring_stripe(&e.key, e.ticket);
            let ordered = lower > e.ts_floor;
            let patched = match (&e.shape, valid_before && ordered) {
                (Some(shape), true) => e.value.rows().and_then(|rows| patch(&rows, shape)),
                _ => None,
            };
            let Some(rows) = patched else {
                shard.remove(h);
                continue;
            };
            let value = Cached::new(rows, e.version);
            let size = entry_size(e.key.len(), &value);
            let Some(e) = shard.map.get_mut(&h) else {
                continue;
            };
            let old_size = e.size;
            e.value = value;
            e.size = size;
            e.ticket.0[0] = acked;
            e.ts_floor = e.ts_floor.max(upper);
            shard.bytes = shard.bytes - old_size + size;
            self.stats.patched.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The write of `w` failed or its outcome is unknown: the partition stays invalidated.
    pub fn write_failed(&self, w: WriteTicket) {
        self.bump_stripe(w.stripe);
        self.stats.invalidations.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether the table, keyspace and global generations of `ticket` are current (the key
    /// bytes hold keyspace and table).
    fn valid_entry_ignoring_stripe(&self, key_bytes: &[u8], ticket: Ticket) -> bool {
        let Some((ks, table, _)) = key_parts(key_bytes) else {
            return false;
        };
        ticket.0[1] == self.tables[table_slot(ks, table)].load(Ordering::Acquire)
            && ticket.0[2] == self.keyspaces[keyspace_slot(ks)].load(Ordering::Acquire)
            && ticket.0[3] == self.global.load(Ordering::Acquire)
    }

    /// A write whose partition is unknown, a TRUNCATE, or a schema change of the table.
    pub fn invalidate_table(&self, keyspace: &str, table: &str) {
        self.tables[table_slot(keyspace, table)].fetch_add(1, Ordering::AcqRel);
        self.stats.invalidations.fetch_add(1, Ordering::Relaxed);
    }

    /// A keyspace was dropped or altered.
    pub fn invalidate_keyspace(&self, keyspace: &str) {
        self.keyspaces[keyspace_slot(keyspace)].fetch_add(1, Ordering::AcqRel);
        self.stats.invalidations.fetch_add(1, Ordering::Relaxed);
    }

    /// Something that may have written anywhere passed through.
    pub fn invalidate_all(&self) {
        self.global.fetch_add(1, Ordering::AcqRel);
        self.stats.invalidations.fetch_add(1, Ordering::Relaxed);
    }

    /// (entries, bytes) held now.
    pub fn usage(&self) -> (u64, u64) {
        self.shards.iter().fold((0, 0), |(n, b), s| {
            let s = s.lock().unwrap_or_else(PoisonError::into_inner);
            (n + s.map.len() as u64, b + s.bytes as u64)
        })
    }
}

impl Shard {
    fn remove(&mut self, hash: u64) -> Option<Entry> {
        let e = self.map.remove(&hash)?;
        if let Some(list) = self.parts.get_mut(&e.part) {
            list.retain(|h| *h != hash);
            if list.is_empty() {
                self.parts.remove(&e.part);
            }
        }
        self.lru.remove(&e.tick);
        self.bytes -= e.size;
        Some(e)
    }
}

/// Count-min sketch with 4-bit counters (stored in bytes for simplicity), 4 rows.
struct Sketch {
    rows: [Vec<u8>; 4],
    mask: usize,
    additions: usize,
    sample: usize,
}

impl Sketch {
    fn new(width: usize) -> Self {
        Sketch {
            rows: std::array::from_fn(|_| vec![0; width]),
            mask: width - 1,
            additions: 0,
            sample: width * 10,
        }
    }

    fn index(&self, hash: u64, row: usize) -> usize {
        let h = hash
            .wrapping_mul(
                0x9E37_79B9_7F4A_7C15u64
                    .wrapping_add((row as u64).wrapping_mul(0x632B_E59B_D9B4_E019)),
            )
            .rotate_left(17 + row as u32 * 11);
        (h as usize) & self.mask
    }

    fn increment(&mut self, hash: u64) {
        for r in 0..4 {
            let i = self.index(hash, r);
            let c = &mut self.rows[r][i];
            if *c < 15 {
                *c += 1;
            }
        }
        self.additions += 1;
        if self.additions >= self.sample {
            self.additions /= 2;
            for row in &mut self.rows {
                for c in row.iter_mut() {
                    *c /= 2;
                }
            }
        }
    }

    fn estimate(&self, hash: u64) -> u8 {
        (0..4)
            .map(|r| self.rows[r][self.index(hash, r)])
            .min()
            .unwrap_or(0)
    }
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
