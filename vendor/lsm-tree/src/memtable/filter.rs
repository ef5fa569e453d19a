// PATCH (Peregrine, speed; see vendor/README.md): not in upstream lsm-tree.

//! A memtable's key filter: a blocked Bloom filter of the user keys inserted, so that a point
//! read of a key the memtable does not hold skips the skip list's search (in a memtable of
//! tens of thousands of keys, a chain of cache misses: 10.8% of the server's CPU samples in
//! YCSB C after a 200k-row load on a quiet machine, `perf` in
//! bench/results/2026-11-30/read-path-s26). As RocksDB's `memtable_whole_key_filtering`.
//!
//! Fixed size (1 MiB, 2^23 bits in 512-bit blocks), whatever the memtable holds: a 64 MiB
//! memtable of 300-byte rows (220k keys) gets about 38 bits a key. Past a few million keys it
//! only answers "maybe" more often; it never answers "no" for a key inserted.

use std::sync::atomic::{AtomicU64, Ordering};

/// 512-bit blocks (one cache line each).
const BLOCKS: usize = 1 << 14;
const WORDS_PER_BLOCK: usize = 8;
/// Bits set per key, all in one block.
const PROBES: u32 = 5;

pub struct KeyFilter {
    words: Box<[AtomicU64]>,
}

impl KeyFilter {
    pub fn new() -> Self {
        Self {
            words: (0..BLOCKS * WORDS_PER_BLOCK)
                .map(|_| AtomicU64::new(0))
                .collect(),
        }
    }

    /// The block (its first word) and the bits in it of the key whose hash is `hash`
    /// (`crate::hash::hash64` of the user key: the hash the tables' filters use too).
    fn probes(hash: u64) -> (usize, impl Iterator<Item = (usize, u64)>) {
        // The top 14 bits pick the block; nine bits each pick the probes' bits.
        let block = (hash >> 50) as usize * WORDS_PER_BLOCK;
        let bits = (0..PROBES).map(move |i| {
            let bit = ((hash >> (9 * i)) & 511) as usize;
            (block + bit / 64, 1u64 << (bit % 64))
        });
        (block, bits)
    }

    /// Records a key: before the memtable holds it, so a reader that can see the item sees
    /// its bits.
    pub fn insert(&self, hash: u64) {
        for (word, mask) in Self::probes(hash).1 {
            if self.words[word].load(Ordering::Relaxed) & mask == 0 {
                self.words[word].fetch_or(mask, Ordering::Release);
            }
        }
    }

    /// False when the key was never inserted.
    pub fn may_contain(&self, hash: u64) -> bool {
        Self::probes(hash)
            .1
            .all(|(word, mask)| self.words[word].load(Ordering::Acquire) & mask != 0)
    }
}
