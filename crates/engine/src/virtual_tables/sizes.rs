//! Partitions per batch (`system_views.batch_metrics`), counted by the engine as each batch
//! runs: a relaxed add to a slot of the calling thread's own shard, no lock, no allocation
//! (the same scheme as the server's request metrics).

use super::Distribution;
use proto::request::BatchKind;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

const SHARDS: usize = 16;

thread_local! {
    static SHARD: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// This thread's shard, assigned round-robin on first use.
fn shard() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    SHARD.with(|s| {
        let mut i = s.get();
        if i == usize::MAX {
            i = NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS;
            s.set(i);
        }
        i
    })
}

/// Upper bounds of the buckets: every count to 32 exactly, then about 20% apart (as
/// Cassandra's estimated histograms) up to 2^20; larger counts go in the last bucket.
fn bounds() -> &'static [u64] {
    static BOUNDS: OnceLock<Vec<u64>> = OnceLock::new();
    BOUNDS.get_or_init(|| {
        let mut b: Vec<u64> = (1..=32).collect();
        let mut x = 32u64;
        while x < 1 << 20 {
            x = (x * 6).div_ceil(5);
            b.push(x);
        }
        b
    })
}

/// Buckets per histogram (see [`bounds`]); checked against it in the tests.
const BUCKETS: usize = 89;

#[repr(align(128))]
struct Shard {
    buckets: [AtomicU64; BUCKETS],
    max: AtomicU64,
}

impl Default for Shard {
    fn default() -> Self {
        Shard {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            max: AtomicU64::new(0),
        }
    }
}

/// One histogram of counts, sharded per thread.
#[derive(Default)]
struct Histogram {
    shards: [Shard; SHARDS],
}

impl Histogram {
    fn record(&self, n: u64) {
        let i = bounds().partition_point(|&b| b < n).min(BUCKETS - 1);
        let s = &self.shards[shard()];
        s.buckets[i].fetch_add(1, Ordering::Relaxed);
        s.max.fetch_max(n, Ordering::Relaxed);
    }

    fn distribution(&self) -> Distribution {
        let mut counts = [0u64; BUCKETS];
        let mut max = 0;
        for s in &self.shards {
            for (c, b) in counts.iter_mut().zip(&s.buckets) {
                *c += b.load(Ordering::Relaxed);
            }
            max = max.max(s.max.load(Ordering::Relaxed));
        }
        let total: u64 = counts.iter().sum();
        // The bucket bound under which the fraction `q` of the batches fall, never past the
        // largest count seen.
        let quantile = |q: f64| -> f64 {
            if total == 0 {
                return 0.0;
            }
            let want = ((total as f64) * q).ceil().max(1.0) as u64;
            let mut seen = 0;
            for (i, c) in counts.iter().enumerate() {
                seen += c;
                if seen >= want {
                    // The last bucket has no upper bound: its counts are at most the max.
                    let bound = bounds().get(i).copied().filter(|_| i + 1 < BUCKETS);
                    return bound.map_or(max, |b| b.min(max)) as f64;
                }
            }
            max as f64
        };
        Distribution {
            max: max as i64,
            p50th: quantile(0.5),
            p99th: quantile(0.99),
            p999th: quantile(0.999),
        }
    }
}

/// Partitions per batch of each kind since the process started.
#[derive(Default)]
pub struct BatchSizes {
    logged: Histogram,
    unlogged: Histogram,
    counter: Histogram,
}

impl BatchSizes {
    fn of(&self, kind: BatchKind) -> &Histogram {
        match kind {
            BatchKind::Logged => &self.logged,
            BatchKind::Unlogged => &self.unlogged,
            BatchKind::Counter => &self.counter,
        }
    }

    /// One batch of `kind` that wrote `partitions` partitions.
    pub fn record(&self, kind: BatchKind, partitions: usize) {
        self.of(kind).record(partitions as u64);
    }

    pub fn distribution(&self, kind: BatchKind) -> Distribution {
        self.of(kind).distribution()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_the_bounds() {
        assert_eq!(bounds().len(), BUCKETS);
        assert!(bounds().windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn small_counts_are_exact_and_large_ones_bounded() {
        let s = BatchSizes::default();
        assert_eq!(s.distribution(BatchKind::Logged), Distribution::default());
        for n in [3, 3, 3, 1] {
            s.record(BatchKind::Unlogged, n);
        }
        let d = s.distribution(BatchKind::Unlogged);
        assert_eq!((d.max, d.p50th, d.p99th), (3, 3.0, 3.0));
        s.record(BatchKind::Counter, 5_000_000);
        let d = s.distribution(BatchKind::Counter);
        assert_eq!((d.max, d.p50th), (5_000_000, 5_000_000.0));
        s.record(BatchKind::Logged, 100);
        let d = s.distribution(BatchKind::Logged);
        assert_eq!((d.max, d.p50th), (100, 100.0));
    }
}
