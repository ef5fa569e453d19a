//! A check of the write-ahead journal before the store opens, so damage is never silent, and
//! the sync points that let it tell an unsynced tail from damage to synced batches.
//!
//! fjall replays its journal (`<data_dir>/<n>.jnl`) at open. Finding a batch it cannot read, it
//! either truncates the journal there without a word — every acknowledged batch written after
//! the damaged one is then lost — or refuses to open, depending on the kind of damage. So the
//! store reads the journal first and decides itself, by whether the damaged bytes were ever
//! fsynced:
//!
//! - **an unsynced tail** (nothing proves the damaged bytes were fsynced): a power loss or a
//!   crash tore what was written after the last sync — the end of a batch missing, or, as the
//!   kernel writes pages back in any order, a hole with later unsynced batches intact after it.
//!   Nothing written there was acknowledged as durable in `batch` mode (and in `periodic` mode
//!   only writes within the last period): it is cut off, the warning naming the file, the offset
//!   and the batches dropped, and the store opens;
//! - **damage to synced bytes** (a sync point proves them fsynced: zeros or a flipped byte in
//!   what the disk had acknowledged): acknowledged writes would be lost, so the store refuses to
//!   open and says where and how many, unless the operator asked to cut the journal there
//!   (`journal_recovery: truncate`), which drops exactly the batches it reports.
//!
//! # Sync points
//! Cassandra's commit log writes a sync marker at each sync so that its replay can tell a torn
//! unsynced tail from corruption; fjall's journal has per-batch checksums only. So the store
//! writes its own sync points into fjall's journal as ordinary items: the key [`SYNC_POINT_KEY`]
//! (`0x00` alone, below every key the engine writes and hidden from scans) in the data keyspace,
//! its value a claim about what was fsynced when it was written:
//!
//! - [`Claim::Before`] ("every journal byte before this batch was fsynced"): an item in every
//!   write batch in `commitlog_sync: batch` mode — fjall writes and fsyncs each batch under its
//!   journal lock, so a batch is written only after every earlier one was fsynced — and one
//!   batch written (and fsynced) when the store opens;
//! - [`Claim::Below`]`(c)` ("every record with a sequence number below `c` was fsynced"): a
//!   batch written after each sync of the journal in `periodic` mode (the syncer's and an
//!   explicit one), `c` read before that sync. fjall numbers journal records consecutively in
//!   file order (each takes its number under the journal lock) and a sync writes out everything
//!   numbered before it started.
//!
//! A sync point is itself written unsynced (the next sync makes it durable), so what it claims
//! was true before any of it reached the disk: an intact sync point is evidence whatever order
//! the pages went back in. At start-up, damage at offset D of the newest journal is damage to
//! synced bytes when (1) a `Before` sync point is intact after D, or (2) a record intact after
//! D has a number below the largest `Below` claim, or (3) numbers between the last record
//! intact before D and that claim are missing (they lay in the damaged bytes). A journal that is
//! not the newest was fsynced whole when fjall sealed it (its `rotate` syncs before creating the
//! next file), so any damage there is to synced bytes. A journal with no sync point at all (in
//! no file of the directory: written before sync points existed) keeps the rule it had: damage
//! with readable batches after it is refused.
//!
//! What this costs: `batch` mode, one 31-byte item in each write's batch (same write, same
//! fsync); `periodic`, one 57-byte batch (one `write(2)`, no fsync) per sync that had writes
//! before it; each also one memtable entry (a new version of the same key). Reads pay nothing per
//! item: scans start after the key.
//!
//! What it cannot tell: the last batches synced before a power loss whose sync point had not
//! reached the disk yet (`periodic`: synced by the last sync; `batch`: the last batch) are an
//! unsynced tail to it when they are damaged with nothing proving them synced after them — as
//! Cassandra, which accepts a damaged last section. Nor, when the damage starts at offset 0 of
//! the only journal left, the synced records it covers when no intact record after it was
//! synced (rule 3 needs a record before the damage).
//!
//! # The format read here (fjall 3.1's journal; little-endian)
//! ```text
//! batch  := start entry* end          (entry count = start.item_count)
//! start  := 0x01 item_count:u32 seqno:u64
//! entry  := 0x02 value_type:u8 compression:u8 keyspace:u64 key_len:u16 value_len:u32
//!                on_disk_len:u32 key value            (an item)
//!         | 0x04 keyspace:u64                         (a keyspace cleared)
//!         | 0x10 len:u32 sealed                       (an item, encrypted: see below)
//! end    := 0x03 xxh3_64(entry bytes):u64 "FJL" 0x03
//! ```
//! With encryption at rest (`encryption.rs`, the vendored fjall's patch) every item is sealed:
//! `sealed` opens to a whole `0x02 ...` item entry. The checksum covers the sealed bytes, so
//! damage is found without the key; a sealed item in an intact batch that the configured keys
//! do not open refuses the start (`check_keys`), never counts as damage to cut.
//! Journal files are preallocated with zeros, so a clean journal ends in zeros. Cargo.lock pins
//! fjall; the tests below write real journals through fjall, so a format change fails them.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};

const START: u8 = 1;
const ITEM: u8 = 2;
const END: u8 = 3;
const CLEAR: u8 = 4;
/// An item sealed by the encryption at rest patch: `0x10 len:u32 sealed` (`encryption.rs`).
const SEALED: u8 = 16;
const MAGIC: &[u8] = b"FJL\x03";

/// The key of the store's sync points: the smallest key there is, which the engine never writes
/// (its keys start with a prefix byte and a name or id).
pub(crate) const SYNC_POINT_KEY: &[u8] = &[0];
/// fjall's value type of a plain value (a sync point is written with `insert`).
const VALUE: u8 = 0;
const CLAIM_BEFORE: u8 = 1;
const CLAIM_BELOW: u8 = 2;

/// What a sync point says was fsynced when it was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Claim {
    /// Every journal byte before the batch holding it.
    Before,
    /// Every journal record numbered below this.
    Below(u64),
}

impl Claim {
    /// The value stored under [`SYNC_POINT_KEY`]: a kind byte and a little-endian number.
    pub(crate) fn encode(self) -> [u8; 9] {
        let (kind, n) = match self {
            Claim::Before => (CLAIM_BEFORE, 0),
            Claim::Below(c) => (CLAIM_BELOW, c),
        };
        let mut v = [0u8; 9];
        v[0] = kind;
        v[1..].copy_from_slice(&n.to_le_bytes());
        v
    }

    fn decode(v: &[u8]) -> Option<Claim> {
        let n = u64::from_le_bytes(v.get(1..9)?.try_into().ok()?);
        match (v.len(), v[0]) {
            (9, CLAIM_BEFORE) => Some(Claim::Before),
            (9, CLAIM_BELOW) => Some(Claim::Below(n)),
            _ => None,
        }
    }
}

/// What to do with a journal damaged in bytes that were synced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum JournalRecovery {
    /// Refuse to open, saying where the damage is and what would be lost (the default).
    #[default]
    Refuse,
    /// Cut the journal at the damage, dropping every batch from there on, and open.
    Truncate,
}

/// A journal's state where it stops being readable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    pub file: PathBuf,
    /// Where the first unreadable batch starts.
    pub offset: u64,
    /// Why it is unreadable.
    pub reason: &'static str,
    /// Readable batches of writes after it (that cutting the journal drops), and the writes
    /// they hold (sync points not counted).
    pub batches_after: usize,
    pub writes_after: usize,
    /// What proves the damaged bytes were fsynced (damage to acknowledged data); `None` for an
    /// unsynced tail.
    pub synced: Option<String>,
    /// Where the last intact sync point before the damage ends, if there is one.
    pub last_sync_point: Option<u64>,
}

impl Damage {
    /// Damage to bytes never fsynced (a tail torn by a crash or a power loss), not a loss of
    /// acknowledged durable data.
    pub fn is_unsynced_tail(&self) -> bool {
        self.synced.is_none()
    }
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "write-ahead journal {} is damaged at offset {} ({}); {} later batch(es) holding {} write(s) follow it",
            self.file.display(),
            self.offset,
            self.reason,
            self.batches_after,
            self.writes_after
        )?;
        match &self.synced {
            Some(why) => write!(f, "; the damaged bytes were fsynced ({why})"),
            None => match self.last_sync_point {
                Some(at) => write!(
                    f,
                    "; it lies after the last intact sync point (ending at offset {at}) and nothing after it was fsynced"
                ),
                None => write!(f, "; nothing after it was fsynced"),
            },
        }
    }
}

/// Reads every journal in `dir` and applies `recovery`: unsynced tails are cut off (logged by
/// the caller from the returned list), damage to synced bytes is an error unless `recovery` is
/// [`JournalRecovery::Truncate`]. Returns what was cut.
pub fn check_and_repair(dir: &Path, recovery: JournalRecovery) -> Result<Vec<Damage>, String> {
    let mut cut = Vec::new();
    let mut files: Vec<(u64, PathBuf)> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "jnl"))
            // fjall names journals by number and takes the largest as the active one.
            .map(|p| {
                let n = p
                    .file_stem()
                    .and_then(|s| s.to_str())
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(u64::MAX);
                (n, p)
            })
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(cut),
        Err(e) => return Err(format!("cannot list {}: {e}", dir.display())),
    };
    files.sort();
    let mut parsed = Vec::with_capacity(files.len());
    for (_, file) in &files {
        let bytes =
            std::fs::read(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        check_keys(file, &bytes)?;
        check_keyspaces(dir, file, &bytes)?;
        parsed.push(parse(&bytes));
    }
    let legacy = !parsed.iter().any(Parsed::has_sync_point);
    for (i, ((_, file), read)) in files.iter().zip(&parsed).enumerate() {
        let next = files.get(i + 1).map(|(_, p)| p.as_path());
        let Some(damage) = judge(file, read, next, legacy) else {
            continue;
        };
        if !damage.is_unsynced_tail() && recovery == JournalRecovery::Refuse {
            return Err(format!(
                "{damage}. Opening would lose them. To drop them and start, set `journal_recovery: truncate` in the configuration (see docs/configuration.md); copy the data directory first to keep the damaged journal."
            ));
        }
        truncate(file, damage.offset)?;
        cut.push(damage);
    }
    Ok(cut)
}

/// Refuses a journal whose intact batches hold items sealed under a key the configured keys
/// lack (or any sealed item with encryption off): judged as damage, such a batch could be cut
/// as an unsynced tail, dropping acknowledged writes for a key left out of the key file.
fn check_keys(file: &Path, bytes: &[u8]) -> Result<(), String> {
    let mut pos = 0;
    loop {
        match batch_at(bytes, pos) {
            Ok(batch) => pos = batch.end,
            Err(Bad::Key(why)) => {
                return Err(format!(
                    "write-ahead journal {}: the batch at offset {pos} cannot be decrypted: {why}; the server does not start",
                    file.display()
                ))
            }
            Err(_) => return Ok(()),
        }
    }
}

/// Refuses a journal holding writes for a keyspace whose folder is gone or unfinished: fjall's
/// replay skips such writes without a word (and deletes an unfinished folder). A power loss
/// could do that before the store fsynced `keyspaces/` (see `sync_directories`); an operator's
/// mistake can still. The meta keyspace (id 0) is fjall's own.
fn check_keyspaces(dir: &Path, file: &Path, bytes: &[u8]) -> Result<(), String> {
    for (id, writes) in writes_per_keyspace(bytes) {
        let folder = dir.join("keyspaces").join(id.to_string());
        if id != 0 && !folder.join("current").exists() {
            return Err(format!(
                "write-ahead journal {} holds {writes} write(s) for the keyspace stored in {}, which is missing or unfinished (no `current` file): opening would drop them without a word, so the store does not open (restore the data directory from a snapshot or backup)",
                file.display(),
                folder.display()
            ));
        }
    }
    Ok(())
}

fn truncate(file: &Path, len: u64) -> Result<(), String> {
    let f = OpenOptions::new()
        .write(true)
        .open(file)
        .map_err(|e| format!("cannot open {} to cut it: {e}", file.display()))?;
    f.set_len(len)
        .and_then(|()| f.sync_all())
        .map_err(|e| format!("cannot cut {} at {len}: {e}", file.display()))
}

/// What start-up needs of a run of readable batches (a summary, so a large journal costs no
/// memory per batch).
#[derive(Debug, Default)]
struct Summary {
    /// The number of the last batch.
    last_seqno: Option<u64>,
    /// Where the last batch holding a sync point ends.
    last_sync_point_end: Option<usize>,
    /// Where the first batch holding a `Before` sync point starts.
    first_before: Option<usize>,
    /// The largest `Below` claim, and where its batch starts.
    max_below: Option<(u64, usize)>,
    /// The smallest batch number, and where that batch starts.
    min_seqno: Option<(u64, usize)>,
    /// Batches holding writes, and their writes.
    batches: usize,
    writes: usize,
}

impl Summary {
    fn add(&mut self, x: &Batch) {
        self.last_seqno = Some(x.seqno);
        if self.min_seqno.is_none_or(|(s, _)| x.seqno < s) {
            self.min_seqno = Some((x.seqno, x.start));
        }
        if x.writes > 0 {
            self.batches += 1;
            self.writes += x.writes;
        }
        match x.claim {
            None => return,
            Some(Claim::Before) => {
                self.first_before.get_or_insert(x.start);
            }
            Some(Claim::Below(c)) => {
                if self.max_below.is_none_or(|(m, _)| c > m) {
                    self.max_below = Some((c, x.start));
                }
            }
        }
        self.last_sync_point_end = Some(x.end);
    }

    fn has_sync_point(&self) -> bool {
        self.last_sync_point_end.is_some()
    }
}

/// A journal read: its readable batches up to the first unreadable one, and if there is one,
/// where it starts, why it is unreadable, and the readable batches found after it.
struct Parsed {
    before: Summary,
    damage: Option<(usize, &'static str, Summary)>,
}

impl Parsed {
    fn has_sync_point(&self) -> bool {
        self.before.has_sync_point() || self.damage.as_ref().is_some_and(|d| d.2.has_sync_point())
    }
}

fn parse(b: &[u8]) -> Parsed {
    let mut pos = 0;
    let mut before = Summary::default();
    while pos < b.len() {
        if b[pos..].iter().all(|&x| x == 0) {
            break;
        }
        let reason = match batch_at(b, pos) {
            Ok(batch) => {
                pos = batch.end;
                before.add(&batch);
                continue;
            }
            Err(Bad::Torn) => "the last batch is incomplete",
            Err(Bad::Invalid(why)) => why,
            // `check_keys` refused such a journal before it is parsed.
            Err(Bad::Key(_)) => "a batch is sealed under a key the key file lacks",
        };
        return Parsed {
            before,
            damage: Some((pos, reason, intact_after(b, pos + 1))),
        };
    }
    Parsed {
        before,
        damage: None,
    }
}

/// The first unreadable batch of a journal, if any (a clean end of file or preallocated zeros
/// is not damage), and whether its bytes were synced (see the module docs). `next` is the
/// journal after this one, if any; `legacy`: no journal of the directory has a sync point.
#[cfg(test)]
fn find_damage(file: &Path, b: &[u8], next: Option<&Path>, legacy: bool) -> Option<Damage> {
    judge(file, &parse(b), next, legacy)
}

fn judge(file: &Path, read: &Parsed, next: Option<&Path>, legacy: bool) -> Option<Damage> {
    let (pos, reason, after) = read.damage.as_ref()?;
    let synced = if legacy {
        (after.last_seqno.is_some()).then(|| {
            "as far as can be told: readable batches follow it and no journal here has sync points (written by a version without them)".to_string()
        })
    } else {
        synced_evidence(&read.before, after, next)
    };
    Some(Damage {
        file: file.to_path_buf(),
        offset: *pos as u64,
        reason,
        batches_after: after.batches,
        writes_after: after.writes,
        synced,
        last_sync_point: read.before.last_sync_point_end.map(|e| e as u64),
    })
}

/// What proves the damaged bytes were fsynced, given the intact batches before and after them
/// (the rules of the module docs), or `None`: an unsynced tail.
fn synced_evidence(before: &Summary, after: &Summary, next: Option<&Path>) -> Option<String> {
    if let Some(next) = next {
        return Some(format!(
            "the journal was sealed, fsynced whole, before {} was created",
            next.display()
        ));
    }
    if let Some(at) = after.first_before {
        return Some(format!(
            "a sync point intact after it, in the batch at offset {at}, says every byte before that batch was fsynced"
        ));
    }
    let (below, point) = before.max_below.max(after.max_below)?;
    if let Some((seqno, at)) = after.min_seqno.filter(|(s, _)| *s < below) {
        return Some(format!(
            "the batch at offset {at} after it (record {seqno}) was fsynced, with every byte before it, as the sync point at offset {point} says of every record numbered below {below}"
        ));
    }
    let last = before.last_seqno?;
    (last + 1 < below).then(|| {
        format!(
            "records {} to {} lay in them (the last intact record before is {last}), fsynced as the sync point at offset {point} says of every record numbered below {below}",
            last + 1,
            below - 1
        )
    })
}

/// Readable batches anywhere after `from` (each found by its start tag and checked whole,
/// checksum included).
fn intact_after(b: &[u8], from: usize) -> Summary {
    let mut found = Summary::default();
    let mut i = from;
    while i < b.len() {
        if b[i] == START {
            if let Ok(batch) = batch_at(b, i) {
                i = batch.end;
                found.add(&batch);
                continue;
            }
        }
        i += 1;
    }
    found
}

enum Bad {
    /// The bytes end inside the batch.
    Torn,
    Invalid(&'static str),
    /// An intact batch (its checksum matches) holds a sealed item the configured keys do not
    /// open: not damage, a key missing from the key file.
    Key(String),
}

/// Reads little-endian integers off a slice, `Bad::Torn` past its end.
struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Bad> {
        let end = self.pos.checked_add(n).ok_or(Bad::Torn)?;
        let s = self.b.get(self.pos..end).ok_or(Bad::Torn)?;
        self.pos = end;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8, Bad> {
        Ok(self.take(1)?[0])
    }

    fn le(&mut self, n: usize) -> Result<u64, Bad> {
        let s = self.take(n)?;
        Ok(s.iter().rev().fold(0, |acc, &x| (acc << 8) | u64::from(x)))
    }
}

/// A readable batch.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Batch {
    start: usize,
    end: usize,
    seqno: u64,
    /// Its entries that are not sync points.
    writes: usize,
    /// What its sync point claims, if it holds one.
    claim: Option<Claim>,
}

/// The batch starting at `pos`, or why it is not readable.
fn batch_at(b: &[u8], pos: usize) -> Result<Batch, Bad> {
    batch_at_with(b, pos, &mut |_| {})
}

/// Writes per keyspace id in the readable batches at the start of a journal (up to the first
/// unreadable one), sync points not counted.
fn writes_per_keyspace(b: &[u8]) -> BTreeMap<u64, usize> {
    let mut seen = BTreeMap::new();
    let mut pos = 0;
    loop {
        let mut batch = BTreeMap::new();
        match batch_at_with(b, pos, &mut |keyspace| {
            *batch.entry(keyspace).or_insert(0) += 1
        }) {
            Ok(read) => {
                for (keyspace, n) in batch {
                    *seen.entry(keyspace).or_insert(0) += n;
                }
                pos = read.end;
            }
            Err(_) => return seen,
        }
    }
}

/// [`batch_at`], telling `keyspace` the keyspace id of each write it reads (a batch that turns
/// out unreadable may have told some).
fn batch_at_with(b: &[u8], pos: usize, keyspace: &mut dyn FnMut(u64)) -> Result<Batch, Bad> {
    let mut c = Cursor { b, pos };
    if c.u8()? != START {
        return Err(Bad::Invalid("no batch starts there"));
    }
    let count = c.le(4)? as usize;
    let seqno = c.le(8)?;
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    let (mut writes, mut claim) = (0, None);
    // Sealed items are opened once the batch's checksum (over the sealed bytes) matches, so
    // damage is told from a wrong key.
    let mut sealed = Vec::new();
    for _ in 0..count {
        let entry_start = c.pos;
        match c.u8()? {
            ITEM => match read_item(&mut c)? {
                (_, Some(p)) => claim = Some(p),
                (id, None) => {
                    keyspace(id);
                    writes += 1;
                }
            },
            SEALED => {
                let len = c.le(4)? as usize;
                sealed.push(c.take(len)?);
            }
            CLEAR => {
                c.le(8)?;
                writes += 1;
            }
            _ => return Err(Bad::Invalid("an entry of the batch is unreadable")),
        }
        hasher.update(&b[entry_start..c.pos]);
    }
    if c.u8()? != END {
        return Err(Bad::Invalid("the batch has more entries than it announces"));
    }
    let checksum = c.le(8)?;
    if c.take(MAGIC.len())? != MAGIC {
        return Err(Bad::Invalid("the batch's end marker is damaged"));
    }
    if hasher.digest() != checksum {
        return Err(Bad::Invalid(
            "the batch's checksum does not match its bytes",
        ));
    }
    for entry in sealed {
        let Some(cipher) = fjall::encryption::cipher() else {
            return Err(Bad::Key(
                "the journal is encrypted and encryption_at_rest is not enabled".into(),
            ));
        };
        let plain = cipher.decrypt(entry).map_err(Bad::Key)?;
        let mut inner = Cursor { b: &plain, pos: 0 };
        // Authenticated bytes that do not parse: written wrong, not damaged on disk.
        let parsed = match inner.u8() {
            Ok(ITEM) => read_item(&mut inner).ok(),
            _ => None,
        };
        match parsed.filter(|_| inner.pos == plain.len()) {
            Some((_, Some(p))) => claim = Some(p),
            Some((id, None)) => {
                keyspace(id);
                writes += 1;
            }
            None => return Err(Bad::Invalid("a sealed entry of the batch is not an item")),
        }
    }
    Ok(Batch {
        start: pos,
        end: c.pos,
        seqno,
        writes,
        claim,
    })
}

/// An item entry after its tag: its keyspace id, and what it claims if it is a sync point.
fn read_item(c: &mut Cursor) -> Result<(u64, Option<Claim>), Bad> {
    let value_type = c.u8()?;
    let compression = c.u8()?;
    if compression > 1 {
        return Err(Bad::Invalid("unknown compression"));
    }
    let id = c.le(8)?;
    let key_len = c.le(2)? as usize;
    c.le(4)?; // value length
    let on_disk = c.le(4)? as usize;
    let key = c.take(key_len)?;
    let value = c.take(on_disk)?;
    let point = (key == SYNC_POINT_KEY && value_type == VALUE && compression == 0)
        .then(|| Claim::decode(value))
        .flatten();
    Ok((id, point))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{LsmStorage, Options, Storage, SyncMode, WriteBatch};

    /// A store with `n` acknowledged single-row batches written in batch mode, closed.
    fn written(dir: &Path, n: usize) {
        let s = LsmStorage::open(
            dir,
            Options {
                sync: SyncMode::Batch,
                ..Options::default()
            },
        )
        .unwrap();
        for i in 0..n {
            let mut b = WriteBatch::new();
            b.put(format!("key{i:05}").into_bytes(), vec![b'v'; 100]);
            s.write(b).unwrap();
        }
    }

    fn journal(dir: &Path) -> PathBuf {
        dir.join("0.jnl")
    }

    fn count_rows(dir: &Path, recovery: JournalRecovery) -> Result<usize, String> {
        let s = LsmStorage::open(
            dir,
            Options {
                journal_recovery: recovery,
                ..Options::default()
            },
        )
        .map_err(|e| e.to_string())?;
        let n = s
            .scan(
                std::ops::Bound::Unbounded,
                std::ops::Bound::Unbounded,
                false,
            )
            .count();
        Ok(n)
    }

    /// Offset of the `i`-th batch of writes in a journal (batches holding only a sync point
    /// not counted).
    fn batch_offset(bytes: &[u8], i: usize) -> usize {
        let mut pos = 0;
        let mut seen = 0;
        loop {
            match batch_at(bytes, pos) {
                Ok(b) if b.writes == 0 => pos = b.end,
                Ok(_) if seen == i => return pos,
                Ok(b) => {
                    seen += 1;
                    pos = b.end;
                }
                Err(_) if seen == i => return pos,
                Err(_) => panic!("journal not readable before batch {i}"),
            }
        }
    }

    fn damage(path: &Path, bytes: &[u8]) -> Option<Damage> {
        find_damage(path, bytes, None, !parse(bytes).has_sync_point())
    }

    #[test]
    fn a_clean_journal_is_not_damaged() {
        let dir = crate::tests::tmpdir("journal-clean");
        written(dir.as_path(), 50);
        let bytes = std::fs::read(journal(dir.as_path())).unwrap();
        assert_eq!(damage(&journal(dir.as_path()), &bytes), None);
        assert_eq!(count_rows(dir.as_path(), JournalRecovery::Refuse), Ok(50));
    }

    #[test]
    fn zeros_in_the_middle_refuse_to_open_then_truncate_drops_what_it_says() {
        let dir = crate::tests::tmpdir("journal-zeros");
        written(dir.as_path(), 200);
        let path = journal(dir.as_path());
        let mut bytes = std::fs::read(&path).unwrap();
        let at = batch_offset(&bytes, 100);
        bytes[at..at + 4096].fill(0);
        std::fs::write(&path, &bytes).unwrap();
        let err = count_rows(dir.as_path(), JournalRecovery::Refuse).unwrap_err();
        assert!(err.contains(&format!("damaged at offset {at}")), "{err}");
        assert!(err.contains("journal_recovery: truncate"), "{err}");
        let found = damage(&path, &bytes).unwrap();
        assert!(found.batches_after > 50, "{found}");
        // Refusing changed nothing; truncating keeps exactly the batches before the damage.
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
        assert_eq!(
            count_rows(dir.as_path(), JournalRecovery::Truncate),
            Ok(100)
        );
    }

    #[test]
    fn a_flipped_byte_in_the_middle_is_found_by_the_checksum() {
        let dir = crate::tests::tmpdir("journal-flipped");
        written(dir.as_path(), 100);
        let path = journal(dir.as_path());
        let mut bytes = std::fs::read(&path).unwrap();
        let at = batch_offset(&bytes, 40);
        let value_byte = batch_offset(&bytes, 41) - 20; // inside batch 40's value
        bytes[value_byte] ^= 0x01;
        std::fs::write(&path, &bytes).unwrap();
        let found = damage(&path, &bytes).unwrap();
        assert_eq!(found.offset, at as u64);
        assert_eq!((found.batches_after, found.writes_after), (59, 59));
        assert!(count_rows(dir.as_path(), JournalRecovery::Refuse).is_err());
        assert_eq!(count_rows(dir.as_path(), JournalRecovery::Truncate), Ok(40));
    }

    #[test]
    fn a_torn_last_batch_is_cut_and_the_store_opens() {
        let dir = crate::tests::tmpdir("journal-torn");
        written(dir.as_path(), 30);
        let path = journal(dir.as_path());
        let bytes = std::fs::read(&path).unwrap();
        let last = batch_offset(&bytes, 29);
        let end = batch_offset(&bytes, 30);
        // Cut inside the last batch, then damage its end: both are torn tails.
        let mut torn = bytes.clone();
        torn.truncate(end - 3);
        std::fs::write(&path, &torn).unwrap();
        assert!(damage(&path, &torn).unwrap().is_unsynced_tail());
        assert_eq!(count_rows(dir.as_path(), JournalRecovery::Refuse), Ok(29));
        let mut garbled = bytes.clone();
        garbled[end - 10] ^= 0xFF;
        std::fs::write(&path, &garbled).unwrap();
        let d = damage(&path, &garbled).unwrap();
        assert_eq!((d.offset, d.is_unsynced_tail()), (last as u64, true));
    }

    /// A keyspace folder lost under journaled writes (a power loss before `keyspaces/` was
    /// fsynced did this): fjall would open and skip the writes without a word; the store refuses,
    /// naming the folder.
    #[test]
    fn journaled_writes_for_a_missing_keyspace_folder_are_refused() {
        let dir = crate::tests::tmpdir("journal-keyspace-gone");
        written(dir.as_path(), 20);
        assert_eq!(count_rows(dir.as_path(), JournalRecovery::Refuse), Ok(20));
        let keyspaces = dir.join("keyspaces");
        let data = std::fs::read_dir(&keyspaces)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| !p.ends_with("0"))
            .unwrap();
        let writes = writes_per_keyspace(&std::fs::read(journal(dir.as_path())).unwrap());
        let id: u64 = data.file_name().unwrap().to_str().unwrap().parse().unwrap();
        assert!(writes[&id] >= 20, "{writes:?}");
        std::fs::remove_dir_all(&data).unwrap();
        let err = count_rows(dir.as_path(), JournalRecovery::Refuse).unwrap_err();
        assert!(
            err.contains("missing or unfinished") && err.contains(&*data.to_string_lossy()),
            "{err}"
        );
    }

    /// A periodic-mode store (the syncer never fires): `rounds` of `n` rows each, the journal
    /// synced by an explicit sync (leaving a sync point) after every round but the last.
    fn written_periodic(dir: &Path, n: usize, rounds: usize) {
        let s = LsmStorage::open(
            dir,
            Options {
                sync: SyncMode::Periodic(std::time::Duration::from_secs(3600)),
                ..Options::default()
            },
        )
        .unwrap();
        for r in 0..rounds {
            for i in 0..n {
                let mut b = WriteBatch::new();
                b.put(format!("key{:05}", r * n + i).into_bytes(), vec![b'v'; 100]);
                s.write(b).unwrap();
            }
            if r + 1 < rounds {
                s.sync().unwrap();
            }
        }
    }

    /// Offsets of the batches holding a sync point.
    fn sync_points(bytes: &[u8]) -> Vec<(usize, Claim)> {
        let mut out = Vec::new();
        let mut pos = 0;
        while let Ok(b) = batch_at(bytes, pos) {
            if let Some(c) = b.claim {
                out.push((b.start, c));
            }
            pos = b.end;
        }
        out
    }

    /// The power loss this check was built for: `periodic` mode, the kernel wrote back later
    /// pages of the unsynced tail and not an earlier one. Everything before the hole was
    /// synced (or not) — nothing proves the hole was: the tail is cut and the store opens with
    /// every row before the hole, where the check used to refuse.
    #[test]
    fn a_hole_after_the_last_sync_point_is_an_unsynced_tail() {
        let dir = crate::tests::tmpdir("journal-hole-unsynced");
        written_periodic(dir.as_path(), 100, 2);
        let path = journal(dir.as_path());
        let mut bytes = std::fs::read(&path).unwrap();
        let points = sync_points(&bytes);
        assert!(
            matches!(points.last(), Some((_, Claim::Below(_)))),
            "{points:?}"
        );
        let at = batch_offset(&bytes, 150);
        bytes[at..at + 1000].fill(0);
        std::fs::write(&path, &bytes).unwrap();
        let found = damage(&path, &bytes).unwrap();
        assert!(found.is_unsynced_tail(), "{found}");
        assert_eq!(found.offset, at as u64);
        assert!(found.batches_after > 40, "{found}");
        assert!(
            found
                .to_string()
                .contains("after the last intact sync point"),
            "{found}"
        );
        assert_eq!(count_rows(dir.as_path(), JournalRecovery::Refuse), Ok(150));
    }

    /// Damage to a batch a later sync point proves was fsynced: refused, as before.
    #[test]
    fn damage_before_a_sync_point_is_refused() {
        let dir = crate::tests::tmpdir("journal-hole-synced");
        written_periodic(dir.as_path(), 100, 2);
        let path = journal(dir.as_path());
        let mut bytes = std::fs::read(&path).unwrap();
        let at = batch_offset(&bytes, 50);
        bytes[at..at + 1000].fill(0);
        std::fs::write(&path, &bytes).unwrap();
        let found = damage(&path, &bytes).unwrap();
        assert!(!found.is_unsynced_tail(), "{found}");
        assert!(found.to_string().contains("was fsynced"), "{found}");
        let err = count_rows(dir.as_path(), JournalRecovery::Refuse).unwrap_err();
        assert!(err.contains(&format!("damaged at offset {at}")), "{err}");
        assert_eq!(count_rows(dir.as_path(), JournalRecovery::Truncate), Ok(50));
    }

    /// Every batch between two sync points destroyed, the later sync point intact: no intact
    /// record after the damage is numbered below its claim, yet the records it claims are
    /// missing — synced bytes lost, refused.
    #[test]
    fn records_missing_below_a_later_sync_point_are_refused() {
        let dir = crate::tests::tmpdir("journal-between-points");
        written_periodic(dir.as_path(), 50, 3);
        let path = journal(dir.as_path());
        let mut bytes = std::fs::read(&path).unwrap();
        let points: Vec<usize> = sync_points(&bytes)
            .into_iter()
            .filter(|(_, c)| matches!(c, Claim::Below(_)))
            .map(|(at, _)| at)
            .collect();
        assert_eq!(points.len(), 2, "{points:?}");
        let from = batch_at(&bytes, points[0]).ok().unwrap().end;
        bytes[from..points[1]].fill(0);
        std::fs::write(&path, &bytes).unwrap();
        let found = damage(&path, &bytes).unwrap();
        assert!(!found.is_unsynced_tail(), "{found}");
        assert!(found.to_string().contains("lay in them"), "{found}");
        assert!(count_rows(dir.as_path(), JournalRecovery::Refuse).is_err());
    }

    /// In `batch` mode every batch is a sync point for all before it: a hole with an intact
    /// batch after it is refused; the last batch alone damaged is a torn tail (the tests above).
    /// A journal that is not the newest was fsynced whole: any damage there is refused.
    #[test]
    fn a_sealed_journal_was_synced_whole() {
        let dir = crate::tests::tmpdir("journal-sealed");
        written_periodic(dir.as_path(), 50, 1);
        let path = journal(dir.as_path());
        let mut bytes = std::fs::read(&path).unwrap();
        let at = batch_offset(&bytes, 49);
        bytes[at + 20] ^= 0xFF;
        assert!(damage(&path, &bytes).unwrap().is_unsynced_tail());
        let next = dir.join("1.jnl");
        let sealed = find_damage(&path, &bytes, Some(&next), false).unwrap();
        assert!(!sealed.is_unsynced_tail(), "{sealed}");
        assert!(sealed.to_string().contains("sealed"), "{sealed}");
    }

    /// A journal written without sync points (fjall alone, as before they existed): damage with
    /// readable batches after it is refused, as it was.
    #[test]
    fn a_journal_without_sync_points_keeps_the_old_rule() {
        let dir = crate::tests::tmpdir("journal-legacy");
        {
            let db = fjall::Database::builder(dir.as_path()).open().unwrap();
            let ks = db
                .keyspace("data", fjall::KeyspaceCreateOptions::default)
                .unwrap();
            for i in 0..100 {
                let mut b = db.batch().durability(Some(fjall::PersistMode::SyncData));
                b.insert(&ks, format!("key{i:05}"), vec![b'v'; 100]);
                b.commit().unwrap();
            }
        }
        let path = journal(dir.as_path());
        let mut bytes = std::fs::read(&path).unwrap();
        assert!(!parse(&bytes).has_sync_point());
        let at = batch_offset(&bytes, 50);
        bytes[at..at + 500].fill(0);
        std::fs::write(&path, &bytes).unwrap();
        let found = damage(&path, &bytes).unwrap();
        assert!(!found.is_unsynced_tail(), "{found}");
        assert!(count_rows(dir.as_path(), JournalRecovery::Refuse).is_err());
    }

    /// What sync points cost, in journal bytes: 31 per write in `batch` mode (an item in the
    /// write's own batch), 57 per sync in `periodic` mode (a batch of its own, none when nothing
    /// was written since the last); and no scan returns them.
    #[test]
    fn sync_points_cost_31_bytes_per_batch_write_and_57_per_periodic_sync() {
        let batch_dir = crate::tests::tmpdir("journal-cost-batch");
        written(batch_dir.as_path(), 3);
        let periodic_dir = crate::tests::tmpdir("journal-cost-periodic");
        written_periodic(periodic_dir.as_path(), 3, 1);
        let size = |dir: &Path, i| {
            let bytes = std::fs::read(journal(dir)).unwrap();
            let at = batch_offset(&bytes, i);
            batch_at(&bytes, at).ok().unwrap().end - at
        };
        assert_eq!(
            size(batch_dir.as_path(), 1) - size(periodic_dir.as_path(), 1),
            31
        );

        let dir = crate::tests::tmpdir("journal-cost-sync");
        let s = LsmStorage::open(
            dir.as_path(),
            Options {
                sync: SyncMode::Periodic(std::time::Duration::from_secs(3600)),
                ..Options::default()
            },
        )
        .unwrap();
        let len = || {
            let bytes = std::fs::read(journal(dir.as_path())).unwrap();
            bytes.len() - bytes.iter().rev().take_while(|&&x| x == 0).count()
        };
        let mut b = WriteBatch::new();
        b.put(b"k".to_vec(), b"v".to_vec());
        s.write(b).unwrap();
        let before = len();
        s.sync().unwrap();
        assert_eq!(len() - before, 57);
        s.sync().unwrap(); // nothing written since: no sync point
        s.sync().unwrap();
        assert_eq!(len() - before, 57);
        let all: Vec<_> = s
            .scan(
                std::ops::Bound::Unbounded,
                std::ops::Bound::Unbounded,
                false,
            )
            .chain(s.scan(
                std::ops::Bound::Included(&[][..]),
                std::ops::Bound::Unbounded,
                true,
            ))
            .map(|r| r.unwrap().0)
            .collect();
        assert_eq!(all, vec![b"k".to_vec(), b"k".to_vec()]);
        // Ranges ending at or before the sync point key stay empty (no inverted range).
        use std::ops::Bound::{Excluded, Included, Unbounded};
        for end in [
            Excluded(&[0u8][..]),
            Included(&[0u8][..]),
            Excluded(&[][..]),
        ] {
            for reverse in [false, true] {
                assert_eq!(s.scan(Unbounded, end, reverse).count(), 0, "{end:?}");
                assert_eq!(s.scan(Included(&[][..]), end, reverse).count(), 0);
            }
        }
    }
}
