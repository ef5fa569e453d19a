//! The entries of one stored row or partition header, their upkeep on every write
//! ([`maintain`]) and the build of an index over a table's existing data ([`build`]).

use super::{index_prefix, Analyzer, IndexDef, Target};
use crate::catalog::{ColumnKind, TableDef};
use crate::row::{Cell, CellValue, CollectionKind, PartitionHeader, Row};
use crate::{keys, Engine, EngineError};
use proto::types::ColumnType;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use storage::WriteBatch;

/// An entry: its key and its value, `expires_at:u32` (0: never) then the length of the
/// encoded value in the key (so a reader finds where the base key's tail starts).
pub(crate) type Entry = (Vec<u8>, Vec<u8>);

fn entry_value(expires_at: u32, value_len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(8);
    v.extend_from_slice(&expires_at.to_be_bytes());
    v.extend_from_slice(&(value_len as u32).to_be_bytes());
    v
}

/// The entry of one indexed value of the row whose key ends in `tail`: the key `0x02
/// index_id` `value` `tail`, where `encode` appends the encoded value to the key it is given
/// (written in place: no buffer of its own), and the value ([`entry_value`]).
fn entry(id: u32, tail: &[u8], expires_at: u32, encode: impl FnOnce(&mut Vec<u8>)) -> Entry {
    let mut k = Vec::with_capacity(5 + 16 + tail.len());
    k.push(super::INDEX_PREFIX);
    k.extend_from_slice(&id.to_be_bytes());
    encode(&mut k);
    let value_len = k.len() - 5;
    k.extend_from_slice(tail);
    (k, entry_value(expires_at, value_len))
}

fn is_text(ty: &ColumnType) -> bool {
    matches!(ty, ColumnType::Varchar | ColumnType::Ascii)
}

/// The order-preserving encoding of one indexed value (analyzed first when the index has an
/// analyzer and the value is text).
pub(crate) fn encode_value(out: &mut Vec<u8>, ty: &ColumnType, v: &[u8], analyzer: Analyzer) {
    let v = if is_text(ty) {
        analyzer.apply(v)
    } else {
        std::borrow::Cow::Borrowed(v)
    };
    keys::encode_component(out, ty, &v, false);
}

/// The type of the values an index holds (for `Entries`, the map's key and value types).
pub(crate) fn value_types(idx: &IndexDef, ty: &ColumnType) -> (ColumnType, Option<ColumnType>) {
    match (idx.target, ty) {
        (Target::Values, ColumnType::List(e) | ColumnType::Set(e)) => ((**e).clone(), None),
        (Target::Values, ColumnType::Map(_, v)) => ((**v).clone(), None),
        (Target::Keys, ColumnType::Map(k, _)) => ((**k).clone(), None),
        (Target::Entries, ColumnType::Map(k, v)) => ((**k).clone(), Some((**v).clone())),
        _ => (ty.clone(), None),
    }
}

/// The encoded values `idx` holds for one stored value `v` of a column of type `ty`.
fn encoded_values(idx: &IndexDef, ty: &ColumnType, v: &[u8]) -> Vec<Vec<u8>> {
    let ci = idx.analyzer();
    let one = |t: &ColumnType, x: &[u8]| {
        let mut out = Vec::new();
        encode_value(&mut out, t, x, ci);
        out
    };
    match (idx.target, ty) {
        (Target::Values, ColumnType::List(e) | ColumnType::Set(e)) => {
            crate::exec::decode_list_elements(v)
                .unwrap_or_default()
                .iter()
                .map(|x| one(e, x))
                .collect()
        }
        (Target::Values, ColumnType::Map(_, vt)) => crate::collections::map_entries(v)
            .unwrap_or_default()
            .iter()
            .map(|(_, x)| one(vt, x))
            .collect(),
        (Target::Keys, ColumnType::Map(kt, _)) => crate::collections::map_entries(v)
            .unwrap_or_default()
            .iter()
            .map(|(k, _)| one(kt, k))
            .collect(),
        (Target::Entries, ColumnType::Map(kt, vt)) => crate::collections::map_entries(v)
            .unwrap_or_default()
            .iter()
            .map(|(k, x)| {
                let mut out = one(kt, k);
                encode_value(&mut out, vt, x, ci);
                out
            })
            .collect(),
        _ => vec![one(ty, v)],
    }
}

fn expiry_of(c: &Cell) -> Option<u32> {
    match &c.value {
        CellValue::Live { expiry, .. } => Some(expiry.map_or(0, |e| e.expires_at)),
        CellValue::Tombstone { .. } => None,
        CellValue::Complex(x) => x
            .elements
            .iter()
            .filter(|e| matches!(e.value, CellValue::Live { .. }))
            .map(|e| e.expiry().map_or(0, |x| x.expires_at))
            .reduce(longer),
    }
}

/// The later of two expiries (0: never).
fn longer(a: u32, b: u32) -> u32 {
    if a == 0 || b == 0 {
        0
    } else {
        a.max(b)
    }
}

/// The encoded values `idx` holds for the elements of a non-frozen collection of type `ty`,
/// each with when its element expires (0: never): an entry follows its element's cell.
fn element_values(idx: &IndexDef, ty: &ColumnType, c: &crate::row::Complex) -> Vec<(Vec<u8>, u32)> {
    let ci = idx.analyzer();
    let one = |t: &ColumnType, x: &[u8]| {
        let mut out = Vec::new();
        encode_value(&mut out, t, x, ci);
        out
    };
    let mut values = c
        .elements
        .iter()
        .filter_map(|e| {
            let CellValue::Live { value, expiry, .. } = &e.value else {
                return None;
            };
            let v = match (idx.target, ty) {
                (Target::Values, ColumnType::List(t)) => one(t, value),
                (Target::Values, ColumnType::Set(t)) => one(t, &e.path),
                (Target::Values, ColumnType::Map(_, t)) => one(t, value),
                (Target::Keys, ColumnType::Map(t, _)) => one(t, &e.path),
                (Target::Entries, ColumnType::Map(kt, vt)) => {
                    let mut out = one(kt, &e.path);
                    encode_value(&mut out, vt, value, ci);
                    out
                }
                _ => return None,
            };
            Some((v, expiry.map_or(0, |x| x.expires_at)))
        })
        .collect::<Vec<_>>();
    // A list or a map may hold one value several times, each element with its own expiry
    // (`v = v + [0] USING TTL 1` over a longer-lived 0): the value's one entry lives as long
    // as the longest-lived of them, or a write would put the shorter expiry over the entry
    // and the value would stop answering while the collection still holds it (generator
    // seed 146).
    values.sort_by(|a, b| a.0.cmp(&b.0));
    values.dedup_by(|later, kept| {
        let same = later.0 == kept.0;
        if same {
            kept.1 = longer(kept.1, later.1);
        }
        same
    });
    values
}

/// When a row with this content stops existing by TTL (0: never); `None` if it holds
/// nothing live at all.
fn row_expiry(marker: Option<crate::row::Marker>, cells: &[Cell]) -> Option<u32> {
    marker
        .map(|m| m.expiry.map_or(0, |e| e.expires_at))
        .into_iter()
        .chain(cells.iter().filter_map(expiry_of))
        .reduce(longer)
}

/// A stored row or partition header, decoded once for the entries of every index of its
/// table ([`entries_in`]); borrowed when the writer has it decoded ([`row_entries`]).
pub(crate) enum Stored<'a> {
    Row(Cow<'a, Row>),
    Header(PartitionHeader),
}

impl Stored<'_> {
    /// `stored`, the value under `base_key` (a row or a partition header), decoded; `None`
    /// when it is absent or does not decode (it then has no entries).
    pub(crate) fn decode(
        d: &keys::DecodedKey<'_>,
        stored: Option<&[u8]>,
    ) -> Option<Stored<'static>> {
        let stored = stored?;
        if d.is_header {
            PartitionHeader::decode(stored).ok().map(Stored::Header)
        } else {
            Row::decode(stored).ok().map(|r| Stored::Row(Cow::Owned(r)))
        }
    }

    fn cells(&self) -> &[Cell] {
        match self {
            Stored::Row(r) => &r.cells,
            Stored::Header(h) => &h.statics,
        }
    }
}

/// The entries `idx` has for the value stored under `base_key` (a row or a partition
/// header of `t`); none for a value that holds nothing `idx` indexes.
pub(crate) fn entries_of(
    idx: &IndexDef,
    t: &TableDef,
    base_key: &[u8],
    stored: Option<&[u8]>,
) -> Vec<Entry> {
    let Some(d) = keys::decode_key(base_key) else {
        return Vec::new();
    };
    match Stored::decode(&d, stored) {
        Some(s) => entries_in(idx, t, base_key, &d, &s),
        None => Vec::new(),
    }
}

/// [`entries_of`] for a value already decoded (`d` is `base_key` decoded).
pub(crate) fn entries_in(
    idx: &IndexDef,
    t: &TableDef,
    base_key: &[u8],
    d: &keys::DecodedKey<'_>,
    stored: &Stored<'_>,
) -> Vec<Entry> {
    let Some(c) = t.column(&idx.column) else {
        return Vec::new();
    };
    // A vector index keeps a graph in memory (`index::vector`), no entries.
    if super::vector::keeps_graph(idx, t, c) {
        return Vec::new();
    }
    let tail = &base_key[5..];
    let one = |(v, exp): (Vec<u8>, u32)| entry(idx.id, tail, exp, |k| k.extend_from_slice(&v));
    match (c.kind, d.is_header) {
        (ColumnKind::Regular, false) | (ColumnKind::Static, true) => {
            let Some(cell) = stored.cells().iter().find(|x| x.column == c.id) else {
                return Vec::new();
            };
            match (&cell.value, expiry_of(cell)) {
                // A non-frozen UDT is indexed whole.
                (CellValue::Complex(x), Some(exp)) if x.kind == CollectionKind::Udt => {
                    crate::collections::whole_value(&c.ty, x, 0)
                        .map(|v| encoded_values(idx, &c.ty, &v))
                        .unwrap_or_default()
                        .into_iter()
                        .map(|v| one((v, exp)))
                        .collect()
                }
                (CellValue::Complex(x), _) => {
                    element_values(idx, &c.ty, x).into_iter().map(one).collect()
                }
                // The common case, one value of a column that is not a collection: encoded
                // straight into its entry's key.
                (CellValue::Live { value, .. }, Some(exp)) if idx.target == Target::Simple => {
                    vec![entry(idx.id, tail, exp, |k| {
                        encode_value(k, &c.ty, value, analyzer_for(idx, &c.ty))
                    })]
                }
                (CellValue::Live { value, .. }, Some(exp)) => encoded_values(idx, &c.ty, value)
                    .into_iter()
                    .map(|v| one((v, exp)))
                    .collect(),
                _ => Vec::new(),
            }
        }
        (ColumnKind::Clustering, false) | (ColumnKind::PartitionKey, _) => {
            let expiry = match stored {
                Stored::Header(h) => row_expiry(None, &h.statics),
                Stored::Row(r) => row_expiry(r.marker, &r.cells),
            };
            let Some(exp) = expiry else { return Vec::new() };
            let value = match stored {
                _ if c.kind == ColumnKind::PartitionKey => {
                    crate::token::split_partition_key(&d.pk, t.pk_count())
                        .and_then(|p| p.get(c.position as usize).map(|x| x.to_vec()))
                }
                Stored::Row(r) => r.clustering.get(c.position as usize).cloned(),
                Stored::Header(_) => None,
            };
            let Some(value) = value else {
                return Vec::new();
            };
            encoded_values(idx, &c.ty, &value)
                .into_iter()
                .map(|v| one((v, exp)))
                .collect()
        }
        _ => Vec::new(),
    }
}

/// The analyzer `idx` applies to values of type `ty`: its own for text, none otherwise
/// ([`encode_value`] applies one to text only; reading the options costs three map lookups).
fn analyzer_for(idx: &IndexDef, ty: &ColumnType) -> Analyzer {
    if is_text(ty) {
        idx.analyzer()
    } else {
        Analyzer::NONE
    }
}

/// Whether a write of the cells of `row` (a row of `t`, which has indexes) may be stored
/// blind, as a partial row ([`Row::encode_partial`]) without reading the row: only when it
/// changes no entry of any index, i.e. it touches no index. An index is touched by a row
/// deletion, by any write when it is on a clustering or partition key column (the row's
/// entry follows its liveness and expiry), and by a cell of its column. A write that touches
/// an index reads the row under its stripe lock so that [`maintain`] can put the entries it
/// gains and delete those it loses (a blind write cannot know what it replaces). Never with
/// a vector index (its graph update needs the row as it was).
pub(crate) fn writes_blind(t: &TableDef, row: &Row) -> bool {
    t.indexes.iter().all(|idx| {
        let Some(c) = t.column(&idx.column) else {
            return true;
        };
        !super::vector::keeps_graph(idx, t, c)
            && row.deletion.is_none()
            && !matches!(c.kind, ColumnKind::Clustering | ColumnKind::PartitionKey)
            && !row.cells.iter().any(|cell| cell.column == c.id)
    })
}

/// Adds to `batch` the changes to the entries of every key a write rewrites and read:
/// `originals` holds what was stored before the write (read under the stripe locks),
/// `written` what the write stores (`None`: removed). See [`upkeep`]. Exact for every kind
/// of write because both sides are the whole stored value: a cell that loses to a newer
/// stored one (USING TIMESTAMP older than the stored cell) leaves the merged row, and so its
/// entries, as they were; TTL'd cells give their entries their expiry (compaction drops an
/// entry once it expires, as it does the cell); row, range and partition deletions rewrite
/// the rows they cover (`originals` holds those too).
///
/// A key not in `originals` is skipped: a blind write ([`writes_blind`]: it touches no
/// index, so changes no entry), or a row the writer kept up itself from the rows it had
/// decoded ([`row_entries`], [`upkeep`]).
pub fn maintain(
    tables: &[Arc<TableDef>],
    originals: &BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    written: &BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    batch: &mut WriteBatch,
) {
    for (key, old) in originals {
        let Some(new) = written.get(key) else {
            continue;
        };
        let Some(t) = keys::table_id(key).and_then(|id| tables.iter().find(|t| t.id == id)) else {
            continue;
        };
        let Some(d) = keys::decode_key(key) else {
            continue;
        };
        // Each value decoded once for all the table's indexes.
        let old = Stored::decode(&d, old.as_deref());
        let new = Stored::decode(&d, new.as_deref());
        upkeep(
            by_index(t, key, &d, old.as_ref()),
            by_index(t, key, &d, new.as_ref()),
            batch,
        );
    }
}

/// The entries of each index of `t` (in `t.indexes` order) for `stored`, the value under
/// `key` (`d`, decoded); none for an absent value.
fn by_index(
    t: &TableDef,
    key: &[u8],
    d: &keys::DecodedKey<'_>,
    stored: Option<&Stored<'_>>,
) -> Vec<Vec<Entry>> {
    t.indexes
        .iter()
        .map(|idx| match stored {
            Some(s) => entries_in(idx, t, key, d, s),
            None => Vec::new(),
        })
        .collect()
}

/// [`by_index`] for a row the writer has decoded (the row as read, then as it will be
/// stored), for [`upkeep`]: a write that reads an indexed row keeps its entries from the rows
/// it decodes anyway, instead of [`maintain`] decoding both again (~2,400 instructions an
/// UPDATE: bench/results/2026-12-01/indexed-writes-s36).
pub(crate) fn row_entries(
    t: &TableDef,
    key: &[u8],
    d: &keys::DecodedKey<'_>,
    row: &Row,
) -> Vec<Vec<Entry>> {
    by_index(t, key, d, Some(&Stored::Row(Cow::Borrowed(row))))
}

/// Adds to `batch` what changes from `before` to `after`, the entries of one key by index
/// ([`by_index`]): an entry the new value has and the old one did not (or had with another
/// expiry) is put; one the old value had and the new one does not is deleted, in the same
/// atomic batch as the rows, so a write leaves no stale entry. Entries are per base key (the
/// key ends with the row's key), so no other row's entry is ever deleted.
pub(crate) fn upkeep(before: Vec<Vec<Entry>>, after: Vec<Vec<Entry>>, batch: &mut WriteBatch) {
    for (before, after) in before.into_iter().zip(after) {
        for (k, _) in &before {
            if !after.iter().any(|(a, _)| a == k) {
                batch.delete(k.clone());
            }
        }
        for (k, v) in after {
            if !before.iter().any(|(b, bv)| *b == k && *bv == v) {
                batch.put(k, v);
            }
        }
    }
}

/// Writes the entries of `idx` for every row of `t`, one partition at a time under that
/// partition's stripe lock, so a concurrent write cannot leave an entry of a value it
/// replaced. With `until`, stops at the first partition boundary past it: `Ok(false)` then
/// means the build is not complete (starting it again later is safe: entries are written
/// as the partition holds them).
pub(crate) fn build(
    engine: &Engine,
    t: &TableDef,
    idx: &IndexDef,
    until: Option<Instant>,
) -> Result<bool, EngineError> {
    // A vector index has no entries (`entries_of`): its graph is built by
    // `build_vector_indexes`, before this runs. Scanning the table again for nothing was a
    // second pass over every partition after each CREATE INDEX of a vector index
    // (bench/results/2026-11-29/vector-profile).
    if super::vector::vector_config(idx, t).is_some() {
        return Ok(true);
    }
    engine.each_partition_locked_until(t.id, until, |prefix, batch| {
        let pend = keys::prefix_end(prefix);
        for item in engine.storage.scan(
            Bound::Included(prefix),
            Bound::Excluded(pend.as_slice()),
            false,
        ) {
            let (key, value) = item?;
            for (e, v) in entries_of(idx, t, &key, Some(&value)) {
                batch.put(e, v);
            }
        }
        Ok(())
    })
}

impl Engine {
    /// Calls `f` with each partition prefix of table `table_id` while holding that
    /// partition's stripe lock, and writes the batch `f` fills before releasing it (so a
    /// concurrent write is either seen by `f` or comes after the batch).
    ///
    /// Called after the schema that needs the build is installed. A write that read the
    /// schema before that (and so keeps no entries or view rows) may still be running, and
    /// may be creating a partition the scan has already passed: taking every stripe lock
    /// once first waits for all such writes to land, so the scan sees them.
    pub(crate) fn each_partition_locked(
        &self,
        table_id: u32,
        f: impl FnMut(&[u8], &mut WriteBatch) -> Result<(), EngineError>,
    ) -> Result<(), EngineError> {
        self.each_partition_locked_until(table_id, None, f)
            .map(|_| ())
    }

    /// [`Engine::each_partition_locked`], stopping at the first partition boundary past
    /// `until`: `Ok(true)` when every partition was visited.
    pub(crate) fn each_partition_locked_until(
        &self,
        table_id: u32,
        until: Option<Instant>,
        mut f: impl FnMut(&[u8], &mut WriteBatch) -> Result<(), EngineError>,
    ) -> Result<bool, EngineError> {
        for stripe in &self.stripes {
            drop(stripe.lock().unwrap_or_else(|p| p.into_inner()));
        }
        let start = keys::table_prefix(table_id);
        let end = keys::prefix_end(&start);
        let mut cursor = start;
        loop {
            let first = self
                .storage
                .scan(
                    Bound::Included(cursor.as_slice()),
                    Bound::Excluded(end.as_slice()),
                    false,
                )
                .next()
                .transpose()?;
            let Some((k, _)) = first else { break };
            let Some(d) = keys::decode_key(&k) else { break };
            // Checked only once a partition is left: an empty table is always built at once.
            if until.is_some_and(|u| Instant::now() >= u) {
                return Ok(false);
            }
            let prefix = k[..d.prefix_len].to_vec();
            {
                let _g = self.stripes[self.stripe_of(&k)]
                    .lock()
                    .unwrap_or_else(|p| p.into_inner());
                let mut batch = WriteBatch::new();
                f(&prefix, &mut batch)?;
                // A graph's build or catch-up writes nothing: no write (with `commitlog_sync:
                // batch`, an fsync) per partition.
                if !batch.is_empty() {
                    self.storage.write(batch)?;
                }
            }
            cursor = keys::prefix_end(&prefix);
        }
        Ok(true)
    }
}

impl Engine {
    /// Builds every index not yet built, then records them as built. Runs at open, before
    /// any request.
    pub(crate) fn build_indexes(&self) -> Result<(), EngineError> {
        self.load_vector_indexes()?;
        self.build_vector_indexes()?;
        self.build_pending_indexes(None).map(|_| ())
    }

    /// After CREATE INDEX (under the DDL lock): builds what is not built yet for at most
    /// `index_build_wait` (default 5 s); what is left goes on in the background (see
    /// [`Engine::finish_index_builds`]), and queries that need such an index answer
    /// Cassandra's ReadFailure meanwhile (`index::query`).
    pub(crate) fn build_indexes_briefly(&self) -> Result<(), EngineError> {
        self.build_vector_indexes()?;
        let wait = self.index_build_wait_ms.load(Ordering::Relaxed);
        let until = Instant::now() + Duration::from_millis(wait);
        if !self.build_pending_indexes(Some(until))? {
            self.index_builds.request();
        }
        Ok(())
    }

    /// Builds what CREATE INDEX left to the background, and records it as built. Called by
    /// the server's index-build thread whenever [`IndexBuilds::wait`] says there is work.
    /// Other DDL goes on meanwhile: the DDL lock is taken only to record the result.
    pub fn finish_index_builds(&self) -> Result<(), EngineError> {
        let _one_builder = self
            .index_builds
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let (done, _) = self.build_unbuilt(None)?;
        let _g = self.ddl_lock.lock().unwrap_or_else(|p| p.into_inner());
        self.record_built(&done)
    }

    /// Builds the unbuilt indexes (until `until`, if given) and records the ones completed
    /// as built. `Ok(true)`: none is left unbuilt. The caller holds the DDL lock.
    fn build_pending_indexes(&self, until: Option<Instant>) -> Result<bool, EngineError> {
        let (done, all) = self.build_unbuilt(until)?;
        self.record_built(&done)?;
        Ok(all)
    }

    /// Builds the indexes the schema marks unbuilt (until `until`): the ids completed, and
    /// whether that is all of them.
    fn build_unbuilt(&self, until: Option<Instant>) -> Result<(Vec<u32>, bool), EngineError> {
        let schema = self.schema.get();
        let pending: Vec<(Arc<TableDef>, IndexDef)> = schema
            .tables
            .values()
            .flat_map(|t| {
                t.indexes
                    .iter()
                    .filter(|i| !i.built)
                    .map(move |i| (t.clone(), i.clone()))
            })
            .collect();
        let mut done = Vec::new();
        for (t, idx) in &pending {
            if build(self, t, idx, until)? {
                done.push(idx.id);
            }
        }
        let all = done.len() == pending.len();
        Ok((done, all))
    }

    /// Marks the indexes `done` names as built (those a DDL dropped meanwhile are gone from
    /// the schema and stay so). The caller holds the DDL lock.
    fn record_built(&self, done: &[u32]) -> Result<(), EngineError> {
        if done.is_empty() {
            return Ok(());
        }
        self.mark_built(
            |t| t.indexes.iter().any(|i| done.contains(&i.id) && !i.built),
            |t| {
                t.indexes
                    .iter_mut()
                    .filter(|i| done.contains(&i.id))
                    .for_each(|i| i.built = true)
            },
        )
    }
}

/// CREATE INDEX's hand-over to the background build, and whether the background sweep is
/// due: the server runs a thread that waits here and calls [`Engine::finish_index_builds`]
/// and, when [`IndexBuilds::sweep_due`], [`Engine::sweep_index_entries`].
pub struct IndexBuilds {
    wanted: Mutex<bool>,
    wake: Condvar,
    /// Held while a background build runs (one at a time).
    running: Mutex<()>,
    /// Whether a sweep has started since the engine opened.
    swept: std::sync::atomic::AtomicBool,
    /// While a sweep runs: hashes of the index entries writes put since it started (see
    /// [`Engine::sweep_index_entries`]). Read and filled under stripe locks.
    sweeping: std::sync::atomic::AtomicBool,
    written: Mutex<HashSet>,
}

impl Default for IndexBuilds {
    fn default() -> Self {
        IndexBuilds {
            wanted: Mutex::new(false),
            wake: Condvar::new(),
            running: Mutex::new(()),
            swept: Default::default(),
            sweeping: Default::default(),
            written: Default::default(),
        }
    }
}

impl IndexBuilds {
    /// Records the index entries a write puts (those in `batch`) while a sweep runs. The
    /// caller holds the stripe locks of the rows it writes.
    pub(crate) fn note_written(&self, batch: &WriteBatch) {
        if self.sweeping.load(Ordering::Acquire) {
            let mut w = self.written.lock().unwrap_or_else(|p| p.into_inner());
            w.extend(
                batch
                    .put_keys()
                    .filter(|k| k.first() == Some(&super::INDEX_PREFIX))
                    .map(entry_hash),
            );
        }
    }

    /// Whether no sweep has run since the engine opened. Writes leave no stale entry
    /// ([`maintain`] deletes the entries of the values a write replaces, in its batch), so
    /// one sweep after start-up removes what they cannot: entries left by a store written
    /// before that (whose blind writes left the entries of replaced values for a sweep that
    /// ran once per as many stale entries as live ones, ~40% of an indexed UPDATE's
    /// instructions at steady state: bench/results/2026-12-01/indexed-writes-s35). Writes
    /// are atomic batches, so a crash leaves none.
    pub fn sweep_due(&self) -> bool {
        !self.swept.load(Ordering::Relaxed)
    }

    fn request(&self) {
        *self.wanted.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.wake.notify_all();
    }

    /// Waits up to `timeout` for a build to be requested; `true` (and the request taken)
    /// when there is one.
    pub fn wait(&self, timeout: Duration) -> bool {
        let guard = self.wanted.lock().unwrap_or_else(|p| p.into_inner());
        let (mut wanted, _) = self
            .wake
            .wait_timeout_while(guard, timeout, |w| !*w)
            .unwrap_or_else(|p| p.into_inner());
        std::mem::take(&mut *wanted)
    }
}

/// What a sweep of the index entries did: entries it read, and stale ones it removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Sweep {
    pub entries: u64,
    pub removed: u64,
}

/// Every key under `prefix`, in order.
fn scan_prefix<'a>(
    store: &'a dyn storage::Storage,
    prefix: &[u8],
) -> impl Iterator<Item = storage::Result<storage::KvPair>> + 'a {
    let end = keys::prefix_end(prefix);
    store.scan(
        Bound::Included(prefix),
        Bound::Excluded(end.as_slice()),
        false,
    )
}

/// A 64-bit hash of a key, for the sweep's sets: foldhash with a fixed seed, several times
/// faster than SipHash on these ~40-byte keys (a sweep hashes every entry twice and every
/// key written while it runs). A collision only keeps a stale entry or re-reads a row.
fn entry_hash(key: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    foldhash::fast::FixedState::with_seed(0).hash_one(key)
}

/// A set of [`entry_hash`]es.
type HashSet = std::collections::HashSet<u64, foldhash::fast::RandomState>;

impl Engine {
    /// Removes the stale entries of every built index (those no stored row has any more:
    /// writes delete the ones they make stale, so these are what a store written before
    /// that holds, see [`IndexBuilds::sweep_due`]). Per table: one scan of its rows gathers a hash of
    /// every entry they have; one scan of each index then names as suspects the entries
    /// whose hash is not there (a hash collision only keeps a stale entry). Under the
    /// suspects' stripe locks, a suspect is deleted unless a write put that entry since the
    /// sweep started ([`IndexBuilds::note_written`]): an entry a concurrent write puts back
    /// is never lost, and no row is read again.
    ///
    /// Why that suffices: the row scan saw each row as some write left it, without the
    /// suspect. A row only comes to have an entry by a write that puts it: a blind write
    /// changes no entry ([`writes_blind`]), and [`maintain`] puts every entry the row has
    /// after the write and did not have before (the row as it was, read under the same lock,
    /// which lacked it). Entries depend on the stored bytes alone (an expiry is in the
    /// entry's value, not decided by the clock), and compaction only purges. A write under
    /// the suspect's stripe lock after the delete puts the entry after the tombstone. Checking
    /// the rows written meanwhile again cost a point read and a merge of their partial
    /// versions each (~8k instructions, a quarter of the suspects at 100k rows under writes,
    /// 21% of a sweep: bench/results/2026-12-01/indexed-writes-s35).
    pub fn sweep_index_entries(&self) -> Result<Sweep, EngineError> {
        let b = &self.index_builds;
        let _one_at_a_time = b.running.lock().unwrap_or_else(|p| p.into_inner());
        b.swept.store(true, Ordering::Relaxed);
        b.written.lock().unwrap_or_else(|p| p.into_inner()).clear();
        b.sweeping.store(true, Ordering::Release);
        // A write that read `sweeping` as false before the store above holds its stripe
        // locks until it has written: taking every lock once waits for it, so the scans
        // below see it, and every later write is recorded.
        for stripe in &self.stripes {
            drop(stripe.lock().unwrap_or_else(|p| p.into_inner()));
        }
        let result = self.sweep_tables();
        b.sweeping.store(false, Ordering::Release);
        b.written.lock().unwrap_or_else(|p| p.into_inner()).clear();
        result
    }

    fn sweep_tables(&self) -> Result<Sweep, EngineError> {
        let schema = self.schema.get();
        let mut total = Sweep::default();
        for t in schema.indexed.values() {
            let built: Vec<&IndexDef> = t.indexes.iter().filter(|i| i.built).collect();
            if built.is_empty() {
                continue;
            }
            let mut want = HashSet::default();
            for item in scan_prefix(self.storage.as_ref(), &keys::table_prefix(t.id)) {
                let (key, value) = item?;
                // Decoded once for every index (`entries_of` per index decoded it each time).
                let Some(d) = keys::decode_key(&key) else {
                    continue;
                };
                let Some(stored) = Stored::decode(&d, Some(&value)) else {
                    continue;
                };
                for idx in &built {
                    for (e, _) in entries_in(idx, t, &key, &d, &stored) {
                        want.insert(entry_hash(&e));
                    }
                }
            }
            for idx in built {
                self.sweep_index(t, idx, &want, &mut total)?;
            }
        }
        Ok(total)
    }

    fn sweep_index(
        &self,
        t: &TableDef,
        idx: &IndexDef,
        want: &HashSet,
        total: &mut Sweep,
    ) -> Result<(), EngineError> {
        // Suspects are checked (under their stripe locks) a chunk at a time.
        const CHUNK: usize = 256;
        let start = index_prefix(idx.id);
        let end = keys::prefix_end(&start);
        let mut cursor = start;
        loop {
            let mut suspects = Vec::new();
            let mut last = None;
            let mut done = true;
            for item in self.storage.scan(
                Bound::Included(cursor.as_slice()),
                Bound::Excluded(end.as_slice()),
                false,
            ) {
                let (k, v) = item?;
                total.entries += 1;
                if !want.contains(&entry_hash(&k)) {
                    if let Some(base) = super::scan::base_key(t.id, &k, &v) {
                        suspects.push((k.clone(), base));
                    }
                }
                last = Some(k);
                if suspects.len() >= CHUNK {
                    done = false;
                    break;
                }
            }
            total.removed += self.remove_stale(&suspects)?;
            match last {
                Some(mut k) if !done => {
                    k.push(0);
                    cursor = k;
                }
                _ => return Ok(()),
            }
        }
    }

    /// Deletes the entries among `suspects` (entry key, base key) that no write put since the
    /// sweep started, under the stripe locks of their rows.
    fn remove_stale(&self, suspects: &[(Vec<u8>, Vec<u8>)]) -> Result<u64, EngineError> {
        if suspects.is_empty() {
            return Ok(0);
        }
        let mut stripes: Vec<usize> = suspects.iter().map(|(_, b)| self.stripe_of(b)).collect();
        stripes.sort_unstable();
        stripes.dedup();
        let _guards: Vec<_> = stripes
            .iter()
            .map(|i| self.stripes[*i].lock().unwrap_or_else(|p| p.into_inner()))
            .collect();
        let written = self
            .index_builds
            .written
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let mut batch = WriteBatch::new();
        let mut removed = 0;
        for (entry, _) in suspects {
            if !written.contains(&entry_hash(entry)) {
                batch.delete(entry.clone());
                removed += 1;
            }
        }
        drop(written);
        if !batch.is_empty() {
            self.storage.write(batch)?;
        }
        Ok(removed)
    }

    /// The entries no stored row has (stale: writes leave none, a sweep removes those a
    /// store written before that holds), one line each.
    pub fn stale_index_entries(&self) -> Result<Vec<String>, EngineError> {
        Ok(self
            .compare_indexes()?
            .into_iter()
            .filter(|(missing, _)| !missing)
            .map(|(_, line)| line)
            .collect())
    }

    /// Compares every index with what its table's stored data says it should hold; returns
    /// one line per entry a stored row has and its index lacks (empty: every indexed read
    /// finds every row it should). Stale entries are allowed: see
    /// [`Engine::stale_index_entries`].
    pub fn check_indexes(&self) -> Result<Vec<String>, EngineError> {
        Ok(self
            .compare_indexes()?
            .into_iter()
            .filter(|(missing, _)| *missing)
            .map(|(_, line)| line)
            .collect())
    }

    /// Every difference between the indexes and the stored rows: `(true, ..)` an entry
    /// missing, `(false, ..)` a stale one.
    fn compare_indexes(&self) -> Result<Vec<(bool, String)>, EngineError> {
        let schema = self.schema.get();
        let mut problems = Vec::new();
        for t in schema.indexed.values() {
            for idx in &t.indexes {
                let mut want = BTreeMap::new();
                for item in scan_prefix(self.storage.as_ref(), &keys::table_prefix(t.id)) {
                    let (key, value) = item?;
                    want.extend(entries_of(idx, t, &key, Some(&value)));
                }
                let mut have = BTreeMap::new();
                for item in scan_prefix(self.storage.as_ref(), &index_prefix(idx.id)) {
                    let (k, v) = item?;
                    have.insert(k, v);
                }
                for k in want.keys().filter(|k| !have.contains_key(*k)) {
                    problems.push((true, format!("{}: missing entry {k:02x?}", idx.name)));
                }
                for k in have.keys().filter(|k| !want.contains_key(*k)) {
                    problems.push((false, format!("{}: stale entry {k:02x?}", idx.name)));
                }
            }
        }
        Ok(problems)
    }
}
