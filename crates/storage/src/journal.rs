//! A check of the write-ahead journal before the store opens, so damage is never silent.
//!
//! fjall replays its journal (`<data_dir>/<n>.jnl`) at open. Finding a batch it cannot read, it
//! either truncates the journal there without a word — every acknowledged batch written after
//! the damaged one is then lost — or refuses to open, depending on the kind of damage. So the
//! store reads the journal first and decides itself:
//!
//! - the bytes end inside a batch, or the last batch is unreadable and nothing readable follows
//!   it (a write torn by a crash): the torn batch was never acknowledged as durable in batch
//!   mode; it is cut off, with a warning naming the file and offset, and the store opens;
//! - a damaged batch with readable batches after it (zeros or a flipped byte in the middle):
//!   acknowledged writes would be lost, so the store refuses to open and says where and how many,
//!   unless the operator asked to cut the journal there (`journal_recovery: truncate`), which
//!   drops exactly the batches it reports.
//!
//! # The format read here (fjall 3.1's journal; little-endian)
//! ```text
//! batch  := start entry* end          (entry count = start.item_count)
//! start  := 0x01 item_count:u32 seqno:u64
//! entry  := 0x02 value_type:u8 compression:u8 keyspace:u64 key_len:u16 value_len:u32
//!                on_disk_len:u32 key value            (an item)
//!         | 0x04 keyspace:u64                         (a keyspace cleared)
//! end    := 0x03 xxh3_64(entry bytes):u64 "FJL" 0x03
//! ```
//! Journal files are preallocated with zeros, so a clean journal ends in zeros. Cargo.lock pins
//! fjall; the tests below write real journals through fjall, so a format change fails them.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};

const START: u8 = 1;
const ITEM: u8 = 2;
const END: u8 = 3;
const CLEAR: u8 = 4;
const MAGIC: &[u8] = b"FJL\x03";

/// What to do with a journal damaged before its last batch.
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
    /// Readable batches after it (acknowledged writes that cutting the journal drops), and the
    /// writes they hold.
    pub batches_after: usize,
    pub writes_after: usize,
}

impl Damage {
    /// A torn last write (nothing readable after it), not a loss of acknowledged data.
    pub fn is_torn_tail(&self) -> bool {
        self.batches_after == 0
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
        )
    }
}

/// Reads every journal in `dir` and applies `recovery`: torn tails are cut off (logged by the
/// caller from the returned list), damage before readable batches is an error unless
/// `recovery` is [`JournalRecovery::Truncate`]. Returns what was cut.
pub fn check_and_repair(dir: &Path, recovery: JournalRecovery) -> Result<Vec<Damage>, String> {
    let mut cut = Vec::new();
    let mut files: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "jnl"))
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(cut),
        Err(e) => return Err(format!("cannot list {}: {e}", dir.display())),
    };
    files.sort();
    for file in files {
        let bytes =
            std::fs::read(&file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        check_keyspaces(dir, &file, &bytes)?;
        let Some(damage) = find_damage(&file, &bytes) else {
            continue;
        };
        if !damage.is_torn_tail() && recovery == JournalRecovery::Refuse {
            return Err(format!(
                "{damage}. Opening would lose them. To drop them and start, set `journal_recovery: truncate` in the configuration (see docs/configuration.md); copy the data directory first to keep the damaged journal."
            ));
        }
        truncate(&file, damage.offset)?;
        cut.push(damage);
    }
    Ok(cut)
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

/// The first unreadable batch of a journal, if any (a clean end of file or preallocated zeros
/// is not damage).
pub fn find_damage(file: &Path, b: &[u8]) -> Option<Damage> {
    let mut pos = 0;
    while pos < b.len() {
        if b[pos..].iter().all(|&x| x == 0) {
            return None;
        }
        let reason = match batch_at(b, pos) {
            Ok((end, _)) => {
                pos = end;
                continue;
            }
            Err(Bad::Torn) => "the last batch is incomplete",
            Err(Bad::Invalid(why)) => why,
        };
        let (batches_after, writes_after) = readable_after(b, pos + 1);
        return Some(Damage {
            file: file.to_path_buf(),
            offset: pos as u64,
            reason,
            batches_after,
            writes_after,
        });
    }
    None
}

/// Readable batches anywhere after `from` (each found by its start tag and checked whole,
/// checksum included), and the writes they hold.
fn readable_after(b: &[u8], from: usize) -> (usize, usize) {
    let (mut batches, mut writes) = (0, 0);
    let mut i = from;
    while i < b.len() {
        if b[i] == START {
            if let Ok((end, n)) = batch_at(b, i) {
                batches += 1;
                writes += n;
                i = end;
                continue;
            }
        }
        i += 1;
    }
    (batches, writes)
}

enum Bad {
    /// The bytes end inside the batch.
    Torn,
    Invalid(&'static str),
}

/// Reads little-endian integers off a slice, `Bad::Torn` past its end.
struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], Bad> {
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

/// The batch starting at `pos`: its end and number of entries, or why it is not readable.
fn batch_at(b: &[u8], pos: usize) -> Result<(usize, usize), Bad> {
    batch_at_with(b, pos, &mut |_| {})
}

/// Writes per keyspace id in the readable batches at the start of a journal (up to the first
/// unreadable one).
fn writes_per_keyspace(b: &[u8]) -> BTreeMap<u64, usize> {
    let mut seen = BTreeMap::new();
    let mut pos = 0;
    loop {
        let mut batch = BTreeMap::new();
        match batch_at_with(b, pos, &mut |keyspace| {
            *batch.entry(keyspace).or_insert(0) += 1
        }) {
            Ok((end, _)) => {
                for (keyspace, n) in batch {
                    *seen.entry(keyspace).or_insert(0) += n;
                }
                pos = end;
            }
            Err(_) => return seen,
        }
    }
}

/// [`batch_at`], telling `keyspace` the keyspace id of each write it reads (a batch that turns
/// out unreadable may have told some).
fn batch_at_with(
    b: &[u8],
    pos: usize,
    keyspace: &mut dyn FnMut(u64),
) -> Result<(usize, usize), Bad> {
    let mut c = Cursor { b, pos };
    if c.u8()? != START {
        return Err(Bad::Invalid("no batch starts there"));
    }
    let count = c.le(4)? as usize;
    c.le(8)?; // seqno
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    for _ in 0..count {
        let entry_start = c.pos;
        match c.u8()? {
            ITEM => {
                c.u8()?; // value type
                if c.u8()? > 1 {
                    return Err(Bad::Invalid("unknown compression"));
                }
                keyspace(c.le(8)?);
                let key_len = c.le(2)? as usize;
                c.le(4)?; // value length
                let on_disk = c.le(4)? as usize;
                c.take(key_len)?;
                c.take(on_disk)?;
            }
            CLEAR => {
                c.le(8)?;
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
    Ok((c.pos, count))
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

    /// Offset of the `i`-th batch in a journal of identical batches.
    fn batch_offset(bytes: &[u8], i: usize) -> usize {
        let mut pos = 0;
        for _ in 0..i {
            pos = match batch_at(bytes, pos) {
                Ok((end, _)) => end,
                Err(_) => panic!("journal not readable before batch {i}"),
            };
        }
        pos
    }

    #[test]
    fn a_clean_journal_is_not_damaged() {
        let dir = crate::tests::tmpdir("journal-clean");
        written(dir.as_path(), 50);
        let bytes = std::fs::read(journal(dir.as_path())).unwrap();
        assert_eq!(find_damage(&journal(dir.as_path()), &bytes), None);
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
        let damage = find_damage(&path, &bytes).unwrap();
        assert!(damage.batches_after > 50, "{damage}");
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
        let damage = find_damage(&path, &bytes).unwrap();
        assert_eq!(damage.offset, at as u64);
        assert_eq!((damage.batches_after, damage.writes_after), (59, 59));
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
        assert!(find_damage(&path, &torn).unwrap().is_torn_tail());
        assert_eq!(count_rows(dir.as_path(), JournalRecovery::Refuse), Ok(29));
        let mut garbled = bytes.clone();
        garbled[end - 10] ^= 0xFF;
        std::fs::write(&path, &garbled).unwrap();
        let d = find_damage(&path, &garbled).unwrap();
        assert_eq!((d.offset, d.is_torn_tail()), (last as u64, true));
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
}
