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
//!
//! A memtable of a few keys (a read-only phase: the store's journal sync point is the only
//! write) is answered by a 512-bit summary, one bit per 32 blocks, held beside the memtable's
//! other hot fields: the 1 MiB array's random line, a cache miss on every read (2.7% of the
//! server's cycles in YCSB C, session 39), is read only when the key's summary bit is set. A
//! busy memtable sets every summary bit within a few thousand keys, after which the summary
//! costs one cached load.

use std::sync::atomic::{AtomicU64, Ordering};

/// 512-bit blocks (one cache line each).
const BLOCKS: usize = 1 << 14;
const WORDS_PER_BLOCK: usize = 8;
/// Bits set per key, all in one block.
const PROBES: u32 = 5;

/// Blocks per summary bit: 2^14 blocks over 512 bits.
const BLOCKS_PER_SUMMARY_BIT: usize = BLOCKS / 512;

pub struct KeyFilter {
    words: Box<[AtomicU64]>,
    summary: Summary,
}

/// 512 bits, one cache line.
#[repr(align(64))]
struct Summary([AtomicU64; 8]);

impl KeyFilter {
    pub fn new() -> Self {
        Self {
            words: (0..BLOCKS * WORDS_PER_BLOCK)
                .map(|_| AtomicU64::new(0))
                .collect(),
            summary: Summary(Default::default()),
        }
    }

    /// The summary's word and bit of the block starting at word `block`.
    fn summary_bit(block: usize) -> (usize, u64) {
        let bit = block / WORDS_PER_BLOCK / BLOCKS_PER_SUMMARY_BIT;
        (bit / 64, 1u64 << (bit % 64))
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
        let (block, bits) = Self::probes(hash);
        let (word, mask) = Self::summary_bit(block);
        if self.summary.0[word].load(Ordering::Relaxed) & mask == 0 {
            self.summary.0[word].fetch_or(mask, Ordering::Release);
        }
        for (word, mask) in bits {
            if self.words[word].load(Ordering::Relaxed) & mask == 0 {
                self.words[word].fetch_or(mask, Ordering::Release);
            }
        }
    }

    /// False when the key was never inserted.
    pub fn may_contain(&self, hash: u64) -> bool {
        let (block, mut bits) = Self::probes(hash);
        let (word, mask) = Self::summary_bit(block);
        self.summary.0[word].load(Ordering::Acquire) & mask != 0
            && bits.all(|(word, mask)| self.words[word].load(Ordering::Acquire) & mask != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::KeyFilter;
    use crate::hash::hash64;

    #[test]
    fn inserted_keys_are_never_ruled_out_and_a_few_keys_rule_out_the_rest_by_the_summary() {
        let filter = KeyFilter::new();
        let keys: Vec<u64> = (0u32..4).map(|i| hash64(&i.to_be_bytes())).collect();
        for &k in &keys {
            filter.insert(k);
        }
        for &k in &keys {
            assert!(filter.may_contain(k));
        }
        // Four keys set at most four of the summary's 512 bits: other keys pass it about once
        // in 128 draws.
        let passing = (1000u32..101_000)
            .map(|i| hash64(&i.to_be_bytes()))
            .filter(|&h| {
                let (block, _) = KeyFilter::probes(h);
                let (word, mask) = KeyFilter::summary_bit(block);
                filter.summary.0[word].load(std::sync::atomic::Ordering::Relaxed) & mask != 0
            })
            .count();
        assert!(passing < 2_000, "{passing} of 100000 passed the summary");
        let maybe = (1000u32..101_000)
            .filter(|i| filter.may_contain(hash64(&i.to_be_bytes())))
            .count();
        assert!(maybe < 10, "{maybe} of 100000 absent keys not ruled out");
        // A full memtable's keys: all still answered, and the summary saturates.
        for i in 0u32..50_000 {
            filter.insert(hash64(&i.to_be_bytes()));
        }
        assert!((0u32..50_000).all(|i| filter.may_contain(hash64(&i.to_be_bytes()))));
        assert!(filter
            .summary
            .0
            .iter()
            .all(|w| w.load(std::sync::atomic::Ordering::Relaxed) == u64::MAX));
    }
}
