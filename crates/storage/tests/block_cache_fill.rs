//! A table written by a flush, or by a compaction while the store fits in the block cache, puts
//! its data blocks into the cache as it writes them: the reads after it find them there, and
//! what they find is what the disk holds.
//!
//! Its own test binary: it counts the store's block cache misses, and nothing else may read
//! through the store meanwhile.

use std::path::PathBuf;

use storage::{LsmStorage, Options, Storage, WriteBatch};

fn tmpdir(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!(
        "peregrine-block-cache-fill-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&p);
    p
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

/// A value of 300 bytes that names its key and the round that wrote it.
fn value(i: u32, round: u32) -> Vec<u8> {
    let mut v = format!("{i}/{round}/").into_bytes();
    v.resize(300, b'a' + (i % 26) as u8);
    v
}

fn write(s: &LsmStorage, keys: impl Iterator<Item = u32>, round: u32) {
    for chunk in keys.collect::<Vec<_>>().chunks(100) {
        let mut b = WriteBatch::new();
        for &i in chunk {
            b.put(key(i), value(i, round));
        }
        s.write(b).unwrap();
    }
}

/// Reads every key, checks the newest value of each (`round_of`), and returns how many block
/// loads missed the cache meanwhile.
fn misses_reading_all(s: &LsmStorage, n: u32, round_of: impl Fn(u32) -> u32) -> u64 {
    let before = s.stats().unwrap().block_cache_misses;
    for i in 0..n {
        let got = s
            .get_shared(&key(i))
            .unwrap()
            .expect("every key was written");
        assert_eq!(&got[..], &value(i, round_of(i))[..], "key {i}");
    }
    s.stats().unwrap().block_cache_misses - before
}

#[test]
fn flushed_and_compacted_tables_are_read_from_the_cache() {
    const N: u32 = 6_000;
    let dir = tmpdir("fill");
    let s = LsmStorage::open(
        &dir,
        Options {
            cache_bytes: 64 << 20,
            ..Options::default()
        },
    )
    .unwrap();

    // A flush: ~1.8 MB of rows in ~450 data blocks, every one of them read back.
    write(&s, 0..N, 1);
    s.flush().unwrap();
    assert_eq!(misses_reading_all(&s, N, |_| 1), 0, "after the flush");

    // A second table over every other key, then both merged into one: the merge's output is
    // new blocks at new offsets of a new table, read back without a miss.
    write(&s, (0..N).step_by(2), 2);
    s.flush().unwrap();
    s.compact().unwrap();
    let round = |i: u32| if i.is_multiple_of(2) { 2 } else { 1 };
    assert_eq!(misses_reading_all(&s, N, round), 0, "after the compaction");

    // Reopened, the cache is empty: the same reads now go to the disk (the counter counts).
    drop(s);
    let s = LsmStorage::open(&dir, Options::default()).unwrap();
    assert!(misses_reading_all(&s, N, round) > 0, "a cold cache misses");
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}
