//! Proxy counters and the upstream latency histogram, shown as the virtual table
//! `system_views.peregrine_cache` (columns `name text, value bigint`).

use rustc_hash::FxHashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use proto::response::{ColumnSpec, Rows, RowsBuilder, RowsMetadata};
use proto::types::{ColumnType, Value};

use super::cache::Cache;
use super::ssd::SsdStats;

/// Upper bounds of the latency buckets, in microseconds (the last bucket is unbounded).
const BUCKETS_US: [u64; 12] = [
    100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 1_000_000,
];

/// Nodes given a latency histogram of their own, at most: a cluster's nodes, bounded in case
/// the topology names addresses without end.
const MAX_NODES: usize = 256;

/// One latency histogram (microseconds).
#[derive(Debug, Default)]
struct Latency {
    sum_us: AtomicU64,
    buckets: [AtomicU64; BUCKETS_US.len() + 1],
}

impl Latency {
    fn observe(&self, us: u64) {
        self.sum_us.fetch_add(us, Ordering::Relaxed);
        let i = BUCKETS_US
            .iter()
            .position(|&b| us <= b)
            .unwrap_or(BUCKETS_US.len());
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
    }

    /// `(upper bound in seconds, count)` per bucket, and the sum in seconds.
    fn buckets(&self) -> (Vec<(f64, u64)>, f64) {
        let buckets = self
            .buckets
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let le = BUCKETS_US
                    .get(i)
                    .map_or(f64::INFINITY, |us| *us as f64 / 1e6);
                (le, b.load(Ordering::Relaxed))
            })
            .collect();
        (buckets, self.sum_us.load(Ordering::Relaxed) as f64 / 1e6)
    }
}

/// Upstream counters.
#[derive(Debug, Default)]
pub struct Metrics {
    pub upstream_requests: AtomicU64,
    pub upstream_errors: AtomicU64,
    pub upstream_timeouts: AtomicU64,
    pub unprepared_retries: AtomicU64,
    /// Results answered from `serve_stale_on_upstream_error` after an upstream failure.
    pub stale_served: AtomicU64,
    /// Background refreshes of hot entries answered by the upstream (see the cache's
    /// "Refresh ahead").
    pub refreshes: AtomicU64,
    /// Refreshes not sent because too many were in flight.
    pub refreshes_skipped: AtomicU64,
    /// Upstream events dropped because the control connection's queue was full
    /// (`upstream::EVENT_QUEUE`); each drop invalidated the whole cache.
    pub events_dropped: AtomicU64,
    /// Every upstream round trip, all nodes together.
    latency: Latency,
    /// The round trips of each upstream node (at most [`MAX_NODES`] of them).
    /// FxHash: SipHash of the address was ~230 instructions of every upstream round trip.
    per_node: RwLock<FxHashMap<SocketAddr, Arc<Latency>>>,
}

impl Metrics {
    /// Records one upstream round trip to `node`.
    pub fn observe(&self, node: SocketAddr, latency: Duration) {
        let us = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        self.latency.observe(us);
        let known = self
            .per_node
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&node)
            .cloned();
        let histogram = match known {
            Some(h) => Some(h),
            None => {
                let mut map = self
                    .per_node
                    .write()
                    .unwrap_or_else(PoisonError::into_inner);
                let len = map.len();
                match map.get(&node) {
                    Some(h) => Some(h.clone()),
                    None if len < MAX_NODES => Some(map.entry(node).or_default().clone()),
                    None => None,
                }
            }
        };
        if let Some(h) = histogram {
            h.observe(us);
        }
    }

    /// `(name, value)` for every metric, in a fixed order.
    pub fn snapshot(&self, cache: &Cache) -> Vec<(String, i64)> {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed) as i64;
        let s = &cache.stats;
        let (entries, bytes) = cache.usage();
        let mut out = vec![
            ("cache_hits_total".to_string(), load(&s.hits)),
            ("cache_misses_total".into(), load(&s.misses)),
            ("cache_inserts_total".into(), load(&s.inserts)),
            ("cache_admission_rejects_total".into(), load(&s.rejected)),
            ("cache_evictions_total".into(), load(&s.evictions)),
            ("cache_too_large_total".into(), load(&s.too_large)),
            ("cache_stale_fills_total".into(), load(&s.stale_fills)),
            ("cache_invalidations_total".into(), load(&s.invalidations)),
            ("cache_patched_total".into(), load(&s.patched)),
            ("cache_stale_served_total".into(), load(&self.stale_served)),
            ("cache_refreshes_total".into(), load(&self.refreshes)),
            (
                "cache_refreshes_skipped_total".into(),
                load(&self.refreshes_skipped),
            ),
            ("cache_dram_hits_total".into(), load(&s.dram_hits)),
            ("cache_dram_misses_total".into(), load(&s.dram_misses)),
            ("cache_dram_entries".into(), entries as i64),
            ("cache_dram_bytes".into(), bytes as i64),
        ];
        let ssd = cache.ssd().map(|t| t.stats());
        let ssd_load = |f: fn(&SsdStats) -> &AtomicU64| ssd.map_or(0, |s| load(f(s)));
        out.extend([
            ("cache_ssd_hits_total".to_string(), ssd_load(|s| &s.hits)),
            ("cache_ssd_misses_total".into(), ssd_load(|s| &s.misses)),
            ("cache_ssd_writes_total".into(), ssd_load(|s| &s.writes)),
            (
                "cache_ssd_evictions_total".into(),
                ssd_load(|s| &s.evictions),
            ),
            ("cache_ssd_dropped_total".into(), ssd_load(|s| &s.dropped)),
            ("cache_ssd_errors_total".into(), ssd_load(|s| &s.errors)),
            ("cache_ssd_entries".into(), ssd_load(|s| &s.entries)),
            ("cache_ssd_bytes".into(), ssd_load(|s| &s.bytes)),
        ]);
        out.extend([
            (
                "upstream_requests_total".into(),
                load(&self.upstream_requests),
            ),
            ("upstream_errors_total".into(), load(&self.upstream_errors)),
            (
                "upstream_timeouts_total".into(),
                load(&self.upstream_timeouts),
            ),
            (
                "upstream_unprepared_retries_total".into(),
                load(&self.unprepared_retries),
            ),
            (
                "upstream_events_dropped_total".into(),
                load(&self.events_dropped),
            ),
            ("upstream_latency_us_sum".into(), load(&self.latency.sum_us)),
        ]);
        for (i, b) in self.latency.buckets.iter().enumerate() {
            let name = match BUCKETS_US.get(i) {
                Some(le) => format!("upstream_latency_us_bucket_le_{le}"),
                None => "upstream_latency_us_bucket_le_inf".into(),
            };
            out.push((name, load(b)));
        }
        out
    }

    /// The upstream round trips as the histogram `peregrine_proxy_upstream_duration_seconds`,
    /// one per upstream node (label `node`, its address).
    pub fn export_latency(&self, out: &mut server::metrics::Exposition) {
        out.family(
            "peregrine_proxy_upstream_duration_seconds",
            "histogram",
            "Upstream round-trip time of forwarded requests, per upstream node.",
        );
        let mut nodes: Vec<(SocketAddr, Arc<Latency>)> = self
            .per_node
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(a, h)| (*a, h.clone()))
            .collect();
        nodes.sort_by_key(|(a, _)| *a);
        for (addr, h) in nodes {
            let (buckets, sum) = h.buckets();
            out.custom_histogram(&[("node", &addr.to_string())], &buckets, sum);
        }
    }

    /// The metrics as the Rows result of `SELECT * FROM system_views.peregrine_cache`.
    pub fn rows(&self, cache: &Cache) -> Rows {
        let spec = |name: &str, ty| ColumnSpec {
            keyspace: "system_views".into(),
            table: "peregrine_cache".into(),
            name: name.into(),
            ty,
        };
        let mut b = RowsBuilder::new();
        for (name, value) in self.snapshot(cache) {
            b.push_cell(Some(name.as_bytes()));
            b.push_value(&Value::Bigint(value));
            b.end_row();
        }
        b.finish(RowsMetadata {
            columns: vec![
                spec("name", ColumnType::Varchar),
                spec("value", ColumnType::Bigint),
            ]
            .into(),
            ..RowsMetadata::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_lands_in_its_bucket_and_rows_decode() {
        let m = Metrics::default();
        let (a, b) = (
            "127.0.0.1:9042".parse().unwrap(),
            "127.0.0.2:9042".parse().unwrap(),
        );
        m.observe(a, Duration::from_micros(700));
        m.observe(b, Duration::from_secs(5));
        let per_node = m.per_node.read().unwrap();
        assert_eq!(per_node[&a].buckets[3].load(Ordering::Relaxed), 1);
        assert_eq!(
            per_node[&b].buckets[BUCKETS_US.len()].load(Ordering::Relaxed),
            1
        );
        assert_eq!(
            per_node[&a].buckets[BUCKETS_US.len()].load(Ordering::Relaxed),
            0
        );
        drop(per_node);
        let snap = m.snapshot(&Cache::new(0, 0));
        let get = |n: &str| snap.iter().find(|(k, _)| k == n).unwrap().1;
        assert_eq!(get("upstream_latency_us_bucket_le_1000"), 1);
        assert_eq!(get("upstream_latency_us_bucket_le_inf"), 1);
        let rows = m.rows(&Cache::new(0, 0));
        let decoded = rows.decode_rows().unwrap();
        assert_eq!(decoded.len(), snap.len());
        assert_eq!(decoded[0][0], Value::Varchar("cache_hits_total".into()));
    }
}
