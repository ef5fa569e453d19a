//! A table written by a flush puts its data blocks into the block cache as it writes them (the
//! reads after it find them there, and what they find is what the disk holds); a compaction puts
//! in the blocks over the keys whose input blocks were cached (the ones reads used), and only
//! those; a table deleted by a compaction takes its blocks out of the cache.
//!
//! Its own test binary: it counts the store's block cache misses and bytes, and nothing else
//! may read through the store meanwhile.

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
    misses_reading(s, 0..n, round_of)
}

/// [`misses_reading_all`] for the keys `keys`.
fn misses_reading(
    s: &LsmStorage,
    keys: std::ops::Range<u32>,
    round_of: impl Fn(u32) -> u32,
) -> u64 {
    let before = s.stats().unwrap().block_cache_misses;
    for i in keys {
        let got = s
            .get_shared(&key(i))
            .unwrap()
            .expect("every key was written");
        assert_eq!(&got[..], &value(i, round_of(i))[..], "key {i}");
    }
    s.stats().unwrap().block_cache_misses - before
}

const N: u32 = 6_000;
const HOT: u32 = N / 2;

/// The newest round of key `i` in the stores here (every key, then every other key).
fn two_rounds(i: u32) -> u32 {
    if i.is_multiple_of(2) {
        2
    } else {
        1
    }
}

#[test]
fn flushed_tables_are_read_from_the_cache_and_deleted_ones_leave_it() {
    let dir = tmpdir("deleted");
    let s = LsmStorage::open(
        &dir,
        Options {
            cache_bytes: 64 << 20,
            ..Options::default()
        },
    )
    .unwrap();

    // A flush puts its table's blocks into the cache as it writes them: ~1.8 MB of rows in ~450
    // data blocks, every key read back without a miss and right.
    write(&s, 0..N, 1);
    s.flush().unwrap();
    assert_eq!(misses_reading_all(&s, N, |_| 1), 0, "after the flush");

    // A second table over every other key, the same.
    write(&s, (0..N).step_by(2), 2);
    s.flush().unwrap();
    let round = two_rounds;
    assert_eq!(
        misses_reading_all(&s, N, round),
        0,
        "after the second flush"
    );
    let both = s.stats().unwrap().block_cache_bytes;

    // Both merged into one. Every key was read, so every block of the merge's output goes into
    // the cache as it is written: its reads miss nothing, and read back right.
    s.compact().unwrap();
    assert_eq!(misses_reading_all(&s, N, round), 0, "after the merge");
    // Once the two are deleted (the version that held them dropped, which the next flush
    // does), their blocks leave the cache at once instead of taking its room until they age
    // out: the output is two thirds of the two (the second held half the keys); with theirs
    // still in, the cache would hold more than it did before.
    write(&s, N..N + 1, 3);
    s.flush().unwrap();
    wait_for_cache_below(&s, both * 4 / 5);
    assert_eq!(misses_reading_all(&s, N, round), 0, "still from the cache");
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Waits until the block cache holds fewer than `bytes` (the deleted tables' blocks leave it
/// from a background thread), failing after 20 s.
fn wait_for_cache_below(s: &LsmStorage, bytes: u64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let now = s.stats().unwrap().block_cache_bytes;
        if now < bytes {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the merged tables' blocks stay cached: {now} bytes, {bytes} expected at most"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A store in `dir` with a `cache_bytes` cache holding two tables (every key, then every other
/// key), reopened (the cache empty) and then read over its first half of keys only, twice: the
/// second time from the cache.
fn two_tables_first_half_read(dir: &std::path::Path, cache_bytes: u64) -> LsmStorage {
    let options = || Options {
        cache_bytes,
        ..Options::default()
    };
    let s = LsmStorage::open(dir, options()).unwrap();
    write(&s, 0..N, 1);
    s.flush().unwrap();
    write(&s, (0..N).step_by(2), 2);
    s.flush().unwrap();
    drop(s);
    let s = LsmStorage::open(dir, options()).unwrap();
    assert!(
        misses_reading(&s, 0..HOT, two_rounds) > 0,
        "read from disk after the reopen"
    );
    assert_eq!(
        misses_reading(&s, 0..HOT, two_rounds),
        0,
        "then from the cache"
    );
    s
}

#[test]
fn a_merge_caches_the_blocks_reads_used_and_only_those() {
    let dir = tmpdir("hot");
    let s = two_tables_first_half_read(&dir, 64 << 20);
    // The merge reads the blocks over the first half into the cache: their keys read back
    // right without a miss.
    s.compact().unwrap();
    assert_eq!(
        misses_reading(&s, 0..HOT, two_rounds),
        0,
        "hot keys after the merge"
    );
    // Not the second half's: nothing read them, and a merge of a tree larger than the cache
    // would push blocks in use out with them. The output holds one version a key, ~13 rows of
    // ~310 bytes a 4 KiB block: ~230 blocks over the second half, of which at most the one
    // across the boundary was read in.
    let cold = misses_reading(&s, HOT..N, two_rounds);
    assert!(cold > 100, "cold keys after the merge: {cold} misses");
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_merge_in_a_full_cache_keeps_the_blocks_reads_used() {
    let dir = tmpdir("full");
    // Room for the hot half of the two tables' blocks, not for the merge's hot half beside it.
    let s = two_tables_first_half_read(&dir, 3 << 20);
    let full = s.stats().unwrap().block_cache_bytes;
    s.compact().unwrap();
    // The merge's hot blocks were read in once the merged tables' blocks had left: had they
    // gone in as they were written, the cache, full of the inputs' blocks the reads were
    // still using, would have evicted them first.
    let missed = misses_reading(&s, 0..HOT, two_rounds);
    let now = s.stats().unwrap().block_cache_bytes;
    assert_eq!(
        missed, 0,
        "hot keys after the merge ({full} bytes cached before, {now} after)"
    );
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}
