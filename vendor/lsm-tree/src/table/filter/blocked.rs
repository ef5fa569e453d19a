// PATCH (Peregrine, speed; see vendor/README.md): not in upstream lsm-tree.

//! A table's blocked Bloom filter: all of a key's bits lie in one 64-byte window, so a probe
//! touches one window (at most two adjacent cache lines: the block's buffer is not 64-byte
//! aligned) instead of `k` lines spread over the whole filter. A point read probes the filter of
//! every table whose key range holds the key (up to eight L0 tables, then one per level); with
//! the standard filter those probes were 7.7% of the server's CPU samples in YCSB C after a
//! 500k-row load (`bench/results/2026-11-30/row-cache`). As RocksDB's format_version 5 filters.
//!
//! Format (the filter block's data): the magic bytes, `FilterType::BlockedBloom`, a hash type
//! byte (0), the number of 64-byte windows (u64 LE), `k` (u8), then the windows. The key's hash
//! (`crate::hash::hash64`, the one the standard filter and the memtable's take) picks the window
//! from its low 32 bits; `k` 9-bit slices of its secondary hash (from its high 32 bits) pick
//! the bits. Filters written before this patch (`FilterType::StandardBloom`) are read as they
//! were: `FilterBlock` dispatches on the type byte.

use super::{standard_bloom::builder::secondary_hash, FilterType};
use crate::file::MAGIC_BYTES;

const WINDOW_BYTES: usize = 64;
const HEADER_BYTES: usize = MAGIC_BYTES.len() + 2 + 8 + 1;
/// Slices of the 64-bit secondary hash, 9 bits each.
const MAX_K: u32 = 7;

/// The window (its first byte) and the bits in it of the key whose hash is `h1`.
fn probes(h1: u64, windows: u64, k: u32) -> (usize, impl Iterator<Item = usize>) {
    #[expect(clippy::cast_possible_truncation, reason = "below `windows`, a usize")]
    let window = ((u128::from(h1 & 0xFFFF_FFFF) * u128::from(windows)) >> 32) as usize;
    let h2 = secondary_hash(h1);
    #[expect(clippy::cast_possible_truncation, reason = "nine bits")]
    let bits = (0..k).map(move |i| ((h2 >> (9 * i)) & 511) as usize);
    (window * WINDOW_BYTES, bits)
}

#[derive(Debug)]
pub struct Builder {
    windows: usize,
    k: u32,
    bytes: Vec<u8>,
}

impl Builder {
    /// A filter of `n` keys with `bpk` bits a key.
    #[must_use]
    pub fn with_bpk(n: usize, bpk: f32) -> Self {
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss,
            reason = "sizes of a filter"
        )]
        let (bits, k) = (
            (n as f64 * f64::from(bpk)).ceil() as usize,
            (f64::from(bpk) * std::f64::consts::LN_2).round() as u32,
        );
        let windows = bits.div_ceil(WINDOW_BYTES * 8).max(1);
        Self {
            windows,
            k: k.clamp(1, MAX_K),
            bytes: vec![0; windows * WINDOW_BYTES],
        }
    }

    /// A filter of `n` keys sized for a false positive rate of `fpr` (as a standard filter
    /// would be; a blocked one of the same size answers "maybe" a little more often).
    #[must_use]
    pub fn with_fp_rate(n: usize, fpr: f32) -> Self {
        let ln2 = std::f32::consts::LN_2;
        Self::with_bpk(n, -fpr.ln() / (ln2 * ln2))
    }

    pub fn set_with_hash(&mut self, h1: u64) {
        let (base, bits) = probes(h1, self.windows as u64, self.k);
        for b in bits {
            self.bytes[base + b / 8] |= 1 << (b % 8);
        }
    }

    #[must_use]
    pub fn build(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(HEADER_BYTES + self.bytes.len());
        v.extend_from_slice(&MAGIC_BYTES);
        v.push(FilterType::BlockedBloom.into());
        v.push(0);
        v.extend_from_slice(&(self.windows as u64).to_le_bytes());
        #[expect(clippy::cast_possible_truncation, reason = "at most MAX_K")]
        v.push(self.k as u8);
        v.extend_from_slice(&self.bytes);
        v
    }
}

/// Whether the filter in `data` (a blocked one: see `FilterBlock`) may hold the key whose hash
/// is `h1`; never false for a key it was built with.
pub fn contains_hash(data: &[u8], h1: u64) -> crate::Result<bool> {
    let bad = || crate::Error::InvalidHeader("BlockedBloomFilter");
    let header = data.get(..HEADER_BYTES).ok_or_else(bad)?;
    if header[..MAGIC_BYTES.len()] != MAGIC_BYTES {
        return Err(bad());
    }
    let at = MAGIC_BYTES.len() + 2;
    let windows = u64::from_le_bytes(header[at..at + 8].try_into().map_err(|_| bad())?);
    let k = u32::from(header[at + 8]);
    let bits = &data[HEADER_BYTES..];
    let size = windows.checked_mul(WINDOW_BYTES as u64);
    if windows == 0 || k == 0 || k > MAX_K || size != Some(bits.len() as u64) {
        return Err(bad());
    }
    let (base, mut probe) = probes(h1, windows, k);
    Ok(probe.all(|b| bits[base + b / 8] & (1 << (b % 8)) != 0))
}

/// Reads a byte of the line `contains_hash(data, h1)` reads its bits from, so that its cache
/// miss starts before the answer is asked for (`Table::touch_filter`).
pub fn touch(data: &[u8], h1: u64) {
    let at = MAGIC_BYTES.len() + 2;
    let Some(Ok(windows)) = data.get(at..at + 8).map(<[u8; 8]>::try_from) else {
        return;
    };
    let windows = u64::from_le_bytes(windows);
    if windows == 0 {
        return;
    }
    let (base, _) = probes(h1, windows, 0);
    std::hint::black_box(data.get(HEADER_BYTES + base).copied());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_false_negatives_and_few_false_positives() -> crate::Result<()> {
        let mut b = Builder::with_bpk(10_000, 10.0);
        for i in 0..10_000u64 {
            b.set_with_hash(crate::hash::hash64(&i.to_be_bytes()));
        }
        let data = b.build();
        for i in 0..10_000u64 {
            assert!(contains_hash(&data, crate::hash::hash64(&i.to_be_bytes()))?);
        }
        let fp = (10_000..110_000u64)
            .filter(|i| contains_hash(&data, crate::hash::hash64(&i.to_be_bytes())).unwrap_or(true))
            .count();
        assert!(fp < 2_000, "{fp} false positives in 100,000");
        Ok(())
    }
}
