//! Encryption at rest end to end through `LsmStorage`: nothing written in clear (journal before a
//! flush, tables after), reopening, refusal of a wrong or missing key, key rotation, and an
//! unencrypted directory taken over.
//!
//! Its own test binary (its own process) because the cipher is process-wide: the storage
//! crate's unit tests open stores without encryption in parallel. The tests here take `LOCK`
//! so one runs at a time.

use std::ops::Bound::Unbounded;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use storage::{KeySet, LsmStorage, Options, Storage, SyncMode, WriteBatch};

static LOCK: Mutex<()> = Mutex::new(());

fn tmpdir(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!(
        "peregrine-encryption-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&p);
    p
}

fn keys(list: &[(u32, u8)]) -> Option<KeySet> {
    let list: Vec<(u32, [u8; 32])> = list.iter().map(|(id, b)| (*id, [*b; 32])).collect();
    Some(KeySet::from_keys("test keys", &list).unwrap())
}

fn options(encryption: Option<KeySet>) -> Options {
    Options {
        sync: SyncMode::Batch,
        cache_bytes: 1 << 20,
        encryption,
        ..Options::default()
    }
}

fn put(s: &LsmStorage, key: &[u8], value: &[u8]) {
    let mut b = WriteBatch::new();
    b.put(key.to_vec(), value.to_vec());
    s.write(b).unwrap();
}

/// Every file under `dir` whose bytes contain `needle`.
fn files_containing(dir: &Path, needle: &[u8]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if std::fs::read(&p)
                .unwrap()
                .windows(needle.len())
                .any(|w| w == needle)
            {
                found.push(p);
            }
        }
    }
    found
}

fn file_count(dir: &Path) -> usize {
    let mut n = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                n += 1;
            }
        }
    }
    n
}

const KEY: &[u8] = b"pk-Zanzibar-4417";
const VALUE: &[u8] = b"value-Quetzalcoatl-9931";

#[test]
fn nothing_is_written_in_clear_and_the_data_reads_back() {
    let _g = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tmpdir("clear");
    {
        let s = LsmStorage::open(&dir, options(keys(&[(1, 7)]))).unwrap();
        for i in 0..200u32 {
            put(&s, &[KEY, &i.to_be_bytes()].concat(), VALUE);
        }
        // In the journal only (no flush yet).
        assert_eq!(files_containing(&dir, KEY), Vec::<PathBuf>::new());
        assert_eq!(files_containing(&dir, VALUE), Vec::<PathBuf>::new());
        s.flush().unwrap();
        s.compact().unwrap();
        assert!(file_count(&dir) > 3);
        assert_eq!(files_containing(&dir, KEY), Vec::<PathBuf>::new());
        assert_eq!(files_containing(&dir, VALUE), Vec::<PathBuf>::new());
    }
    // The same bytes written without encryption are found: the grep above can fail.
    let plain = tmpdir("clear-control");
    {
        let s = LsmStorage::open(&plain, options(None)).unwrap();
        put(&s, KEY, VALUE);
        assert!(!files_containing(&plain, VALUE).is_empty());
    }
    let s = LsmStorage::open(&dir, options(keys(&[(1, 7)]))).unwrap();
    let all: Vec<_> = s
        .scan(Unbounded, Unbounded, false)
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(all.len(), 200);
    assert!(all.iter().all(|(k, v)| k.starts_with(KEY) && v == VALUE));
    assert_eq!(
        s.get(&[KEY, &7u32.to_be_bytes()].concat())
            .unwrap()
            .as_deref(),
        Some(VALUE)
    );
}

#[test]
fn journal_only_writes_replay_after_a_crash_like_reopen() {
    let _g = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tmpdir("replay");
    {
        let s = LsmStorage::open(&dir, options(keys(&[(1, 7)]))).unwrap();
        put(&s, KEY, VALUE);
        // Dropped without a flush: the write lives only in the (encrypted) journal.
    }
    let s = LsmStorage::open(&dir, options(keys(&[(1, 7)]))).unwrap();
    assert_eq!(s.get(KEY).unwrap().as_deref(), Some(VALUE));
}

#[test]
fn a_wrong_missing_or_absent_key_refuses_to_open() {
    let _g = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tmpdir("wrong");
    {
        let s = LsmStorage::open(&dir, options(keys(&[(1, 7)]))).unwrap();
        put(&s, KEY, VALUE);
        s.flush().unwrap();
        put(&s, b"journal-only", VALUE);
    }
    let refused = |o: Options| match LsmStorage::open(&dir, o) {
        Ok(_) => panic!("opened"),
        Err(e) => e.to_string(),
    };
    let e = refused(options(keys(&[(1, 8)])));
    assert!(e.contains("does not authenticate with key 1"), "{e}");
    let e = refused(options(keys(&[(2, 7)])));
    assert!(e.contains("key id 1, which the key file"), "{e}");
    let e = refused(options(None));
    assert!(e.contains("is encrypted"), "{e}");
    // Nothing was cut or changed by the refusals.
    let s = LsmStorage::open(&dir, options(keys(&[(1, 7)]))).unwrap();
    assert_eq!(s.get(KEY).unwrap().as_deref(), Some(VALUE));
    assert_eq!(s.get(b"journal-only").unwrap().as_deref(), Some(VALUE));
}

#[test]
fn rotation_keeps_old_files_readable_until_compaction_rewrites_them() {
    let _g = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tmpdir("rotate");
    {
        let s = LsmStorage::open(&dir, options(keys(&[(1, 7)]))).unwrap();
        put(&s, b"old", b"under key 1");
        s.flush().unwrap();
    }
    {
        // Key 2 added (current); key 1 kept for the old table.
        let s = LsmStorage::open(&dir, options(keys(&[(1, 7), (2, 9)]))).unwrap();
        put(&s, b"new", b"under key 2");
        s.flush().unwrap();
        assert_eq!(s.get(b"old").unwrap().as_deref(), Some(&b"under key 1"[..]));
    }
    // Key 1 dropped too early: the table sealed under it refuses the start, by key id.
    match LsmStorage::open(&dir, options(keys(&[(2, 9)]))) {
        Ok(_) => panic!("opened without the key of an old table"),
        Err(e) => assert!(e.to_string().contains("key id 1"), "{e}"),
    }
    {
        let s = LsmStorage::open(&dir, options(keys(&[(1, 7), (2, 9)]))).unwrap();
        // A major compaction rewrites every table under the current key.
        s.compact().unwrap();
    }
    let s = LsmStorage::open(&dir, options(keys(&[(2, 9)]))).unwrap();
    assert_eq!(s.get(b"old").unwrap().as_deref(), Some(&b"under key 1"[..]));
    assert_eq!(s.get(b"new").unwrap().as_deref(), Some(&b"under key 2"[..]));
}

#[test]
fn an_unencrypted_directory_stays_readable_when_encryption_is_enabled() {
    let _g = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tmpdir("takeover");
    {
        let s = LsmStorage::open(&dir, options(None)).unwrap();
        put(&s, b"plain", VALUE);
        s.flush().unwrap();
    }
    {
        let s = LsmStorage::open(&dir, options(keys(&[(1, 7)]))).unwrap();
        assert_eq!(s.get(b"plain").unwrap().as_deref(), Some(VALUE));
        put(&s, b"sealed", VALUE);
        s.flush().unwrap();
        s.compact().unwrap();
    }
    // After the compaction (which also replaces the journal) no file holds the value in clear.
    assert_eq!(files_containing(&dir, VALUE), Vec::<PathBuf>::new());
    let s = LsmStorage::open(&dir, options(keys(&[(1, 7)]))).unwrap();
    assert_eq!(s.get(b"plain").unwrap().as_deref(), Some(VALUE));
    assert_eq!(s.get(b"sealed").unwrap().as_deref(), Some(VALUE));
    drop(s);
    // Now encrypted: opening without the key is refused.
    assert!(LsmStorage::open(&dir, options(None)).is_err());
}
