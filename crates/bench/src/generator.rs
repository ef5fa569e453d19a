//! YCSB's number generators, ported from `site.ycsb.generator` so that key popularity matches
//! YCSB's own definitions: the zipfian generator of Gray et al. (SIGMOD 1994) with constant 0.99,
//! the scrambled zipfian (popular items scattered by a 64-bit FNV hash), the skewed-latest
//! generator used by workload D, uniform, and the acknowledged insert counter.
//!
//! All generators are deterministic given the caller's RNG; they never read the clock.

use rand::Rng;

/// YCSB's zipfian constant.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;
/// `ScrambledZipfianGenerator.ITEM_COUNT`: the scrambled generator draws ranks from this many items.
pub const SCRAMBLED_ITEM_COUNT: u64 = 10_000_000_000_000_000;
/// `ScrambledZipfianGenerator.ZETAN`: zeta(ITEM_COUNT, 0.99), precomputed by YCSB.
pub const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;

const FNV_OFFSET_BASIS_64: u64 = 0xCBF2_9CE4_8422_2325;
const FNV_PRIME_64: u64 = 1_099_511_628_211;

/// YCSB's `Utils.fnvhash64`: FNV-1a over the 8 little-endian bytes, then `Math.abs`.
///
/// Java's `Math.abs(Long.MIN_VALUE)` is still negative; as an unsigned number that is 2^63,
/// which `wrapping_abs` reproduces.
pub fn fnvhash64(val: u64) -> u64 {
    let mut hash = FNV_OFFSET_BASIS_64;
    let mut v = val;
    for _ in 0..8 {
        let octet = v & 0xff;
        // Java shifts a signed long arithmetically; YCSB only hashes non-negative numbers,
        // for which the two shifts agree.
        v >>= 8;
        hash ^= octet;
        hash = hash.wrapping_mul(FNV_PRIME_64);
    }
    (hash as i64).wrapping_abs() as u64
}

/// YCSB's `CoreWorkload.buildKeyName` with `insertorder=hashed` and no zero padding:
/// `"user"` followed by the decimal FNV hash of the sequence number.
pub fn build_key_name(prefix: &str, keynum: u64, hashed: bool) -> String {
    let n = if hashed {
        fnvhash64(keynum) as i64
    } else {
        keynum as i64
    };
    format!("{prefix}{n}")
}

/// zeta(n) = sum_{i=st}^{n-1} 1/(i+1)^theta, added to `initial`.
fn zeta_range(st: u64, n: u64, theta: f64, initial: f64) -> f64 {
    let mut sum = initial;
    for i in st..n {
        sum += 1.0 / ((i + 1) as f64).powf(theta);
    }
    sum
}

/// zeta(n, theta) from scratch; O(n).
pub fn zeta(n: u64, theta: f64) -> f64 {
    zeta_range(0, n, theta, 0.0)
}

/// YCSB's `ZipfianGenerator`: item `base` is the most popular, `base + 1` the next, and so on.
#[derive(Debug, Clone)]
pub struct Zipfian {
    items: u64,
    base: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    zeta2theta: f64,
    count_for_zeta: u64,
}

impl Zipfian {
    /// Items `min..=max` with YCSB's constant; computes zeta in O(max - min).
    pub fn new(min: u64, max: u64) -> Self {
        let items = max - min + 1;
        Self::with_zetan(min, max, ZIPFIAN_CONSTANT, zeta(items, ZIPFIAN_CONSTANT))
    }

    /// Items `min..=max` with a precomputed zeta (as the scrambled generator does).
    pub fn with_zetan(min: u64, max: u64, theta: f64, zetan: f64) -> Self {
        let items = max - min + 1;
        let zeta2theta = zeta(2, theta);
        let eta = (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2theta / zetan);
        Zipfian {
            items,
            base: min,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta,
            zeta2theta,
            count_for_zeta: items,
        }
    }

    /// Number of items the generator was built for.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// The next item from the first `item_count` items (`nextLong(itemcount)` in YCSB). A larger
    /// count than before extends zeta incrementally; a smaller one keeps the old zeta, as YCSB does
    /// with `allowitemcountdecrease=false`. Like YCSB, `eta` keeps using the constructor's item count.
    pub fn next_with_count<R: Rng + ?Sized>(&mut self, rng: &mut R, item_count: u64) -> u64 {
        if item_count > self.count_for_zeta {
            self.zetan = zeta_range(self.count_for_zeta, item_count, self.theta, self.zetan);
            self.count_for_zeta = item_count;
            self.eta = (1.0 - (2.0 / self.items as f64).powf(1.0 - self.theta))
                / (1.0 - self.zeta2theta / self.zetan);
        }
        let u: f64 = rng.random();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return self.base;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return self.base + 1;
        }
        self.base + (item_count as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64
    }

    /// The next item from all items.
    pub fn next<R: Rng + ?Sized>(&mut self, rng: &mut R) -> u64 {
        self.next_with_count(rng, self.items)
    }
}

/// YCSB's `ScrambledZipfianGenerator`: zipfian ranks over 10^16 items, hashed with FNV onto
/// `min..=max`, so popular keys are spread over the key space instead of clustered at its start.
#[derive(Debug, Clone)]
pub struct ScrambledZipfian {
    gen: Zipfian,
    min: u64,
    item_count: u64,
}

impl ScrambledZipfian {
    /// Items `min..=max` with constant 0.99 (the only constant YCSB precomputed zeta for).
    pub fn new(min: u64, max: u64) -> Self {
        ScrambledZipfian {
            gen: Zipfian::with_zetan(0, SCRAMBLED_ITEM_COUNT, ZIPFIAN_CONSTANT, SCRAMBLED_ZETAN),
            min,
            item_count: max - min + 1,
        }
    }

    /// The next item in `min..=max`.
    pub fn next<R: Rng + ?Sized>(&mut self, rng: &mut R) -> u64 {
        let r = self.gen.next(rng);
        self.min + fnvhash64(r) % self.item_count
    }
}

/// YCSB's `SkewedLatestGenerator`: zipfian over the distance back from the newest acknowledged
/// insert, so recently inserted records are the most popular (workload D).
#[derive(Debug, Clone)]
pub struct SkewedLatest {
    zipfian: Zipfian,
}

impl SkewedLatest {
    /// `last` is the counter's current last value (the newest record's number).
    pub fn new(last: u64) -> Self {
        SkewedLatest {
            zipfian: Zipfian::new(0, last.max(1) - 1),
        }
    }

    /// The next item given the counter's current last value.
    pub fn next<R: Rng + ?Sized>(&mut self, rng: &mut R, last: u64) -> u64 {
        let back = self.zipfian.next_with_count(rng, last.max(1));
        last.saturating_sub(back)
    }
}

/// YCSB's `AcknowledgedCounterGenerator`: hands out insert sequence numbers and exposes, as
/// `last()`, the highest number below which every insert has been acknowledged, so readers only
/// choose keys that exist.
#[derive(Debug)]
pub struct AckCounter {
    next: u64,
    /// Highest contiguous acknowledged value.
    limit: u64,
    /// Acknowledged values above `limit` (completions arrive out of order).
    pending: std::collections::BTreeSet<u64>,
}

impl AckCounter {
    /// A counter whose first value is `start`; `last()` starts at `start - 1`.
    pub fn new(start: u64) -> Self {
        AckCounter {
            next: start,
            limit: start.wrapping_sub(1),
            pending: Default::default(),
        }
    }

    /// The next sequence number to insert.
    pub fn next_value(&mut self) -> u64 {
        let v = self.next;
        self.next += 1;
        v
    }

    /// Mark `value` as written (successfully or not: YCSB acknowledges in a `finally`).
    pub fn acknowledge(&mut self, value: u64) {
        self.pending.insert(value);
        while self.pending.remove(&self.limit.wrapping_add(1)) {
            self.limit = self.limit.wrapping_add(1);
        }
    }

    /// Highest number below which every value has been acknowledged.
    pub fn last(&self) -> u64 {
        self.limit
    }

    /// The first value not handed out yet.
    pub fn upcoming(&self) -> u64 {
        self.next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;
    use std::collections::HashMap;

    #[test]
    fn fnv_matches_ycsb_values() {
        // Reference: FNV-1a 64 of eight zero bytes, then Math.abs.
        let mut h = FNV_OFFSET_BASIS_64;
        for _ in 0..8 {
            h = h.wrapping_mul(FNV_PRIME_64);
        }
        assert_eq!(fnvhash64(0), (h as i64).wrapping_abs() as u64);
        assert!(fnvhash64(1) != fnvhash64(2));
        assert!(fnvhash64(12345) <= i64::MAX as u64 || fnvhash64(12345) == 1u64 << 63);
        assert!(build_key_name("user", 0, true).starts_with("user"));
        assert_eq!(build_key_name("user", 42, false), "user42");
    }

    #[test]
    fn zipfian_rank_frequencies_follow_theory() {
        let n = 1000;
        let mut z = Zipfian::new(0, n - 1);
        let mut rng = SmallRng::seed_from_u64(7);
        let samples = 1_000_000;
        let mut counts = vec![0u64; n as usize];
        for _ in 0..samples {
            let v = z.next(&mut rng);
            assert!(v < n);
            counts[v as usize] += 1;
        }
        let zn = zeta(n, ZIPFIAN_CONSTANT);
        for rank in [0usize, 1] {
            let expected = 1.0 / ((rank + 1) as f64).powf(ZIPFIAN_CONSTANT) / zn;
            let got = counts[rank] as f64 / samples as f64;
            assert!(
                (got - expected).abs() / expected < 0.03,
                "rank {rank}: {got} vs {expected}"
            );
        }
        // The head is heavier than the tail: the 10% most popular items take most draws.
        let head: u64 = counts[..100].iter().sum();
        assert!(head as f64 / samples as f64 > 0.6, "head share {head}");
        // Monotone-ish decline over decades.
        assert!(counts[0] > counts[9] && counts[9] > counts[99] && counts[99] > counts[999]);
    }

    #[test]
    fn scrambled_zipfian_spreads_the_popular_keys() {
        let n = 10_000u64;
        let mut z = ScrambledZipfian::new(0, n - 1);
        let mut rng = SmallRng::seed_from_u64(11);
        let samples = 1_000_000u64;
        let mut counts: HashMap<u64, u64> = HashMap::new();
        for _ in 0..samples {
            let v = z.next(&mut rng);
            assert!(v < n);
            *counts.entry(v).or_default() += 1;
        }
        let mut freq: Vec<(u64, u64)> = counts.into_iter().collect();
        freq.sort_by_key(|e| std::cmp::Reverse(e.1));
        // The most popular key takes 1/zeta(10^16) of the draws (plus a little from collisions).
        let top = freq[0].1 as f64 / samples as f64;
        let expected = 1.0 / SCRAMBLED_ZETAN;
        assert!(
            (top - expected).abs() / expected < 0.1,
            "top {top} vs {expected}"
        );
        // The ten most popular keys are scattered over the key space, not clustered at 0.
        let top10: Vec<u64> = freq[..10].iter().map(|e| e.0).collect();
        assert!(
            top10.iter().filter(|&&k| k < n / 10).count() < 5,
            "{top10:?}"
        );
        let spread = top10.iter().max().unwrap() - top10.iter().min().unwrap();
        assert!(spread > n / 4, "{top10:?}");
        // Most keys get drawn at least once.
        assert!(freq.len() as u64 > n * 8 / 10, "{} distinct", freq.len());
    }

    #[test]
    fn skewed_latest_prefers_recent_items() {
        let mut g = SkewedLatest::new(999);
        let mut rng = SmallRng::seed_from_u64(3);
        let mut newest = 0;
        let samples = 100_000;
        for _ in 0..samples {
            let v = g.next(&mut rng, 999);
            assert!(v <= 999);
            if v == 999 {
                newest += 1;
            }
        }
        let share = newest as f64 / samples as f64;
        let expected = 1.0 / zeta(999, ZIPFIAN_CONSTANT);
        assert!(
            (share - expected).abs() / expected < 0.05,
            "{share} vs {expected}"
        );
        // The key space grows: new items become the most popular.
        let mut hits_new = 0;
        for _ in 0..10_000 {
            if g.next(&mut rng, 1999) > 1000 {
                hits_new += 1;
            }
        }
        assert!(hits_new > 5_000);
    }

    #[test]
    fn ack_counter_exposes_contiguous_prefix() {
        let mut c = AckCounter::new(100);
        assert_eq!(c.last(), 99);
        let a = c.next_value();
        let b = c.next_value();
        let d = c.next_value();
        assert_eq!((a, b, d), (100, 101, 102));
        c.acknowledge(101);
        assert_eq!(c.last(), 99);
        c.acknowledge(100);
        assert_eq!(c.last(), 101);
        c.acknowledge(102);
        assert_eq!(c.last(), 102);
    }
}
