//! Proxy mode's answers to `peregrine nodetool` and its part of `/metrics`: the cache's
//! counters per tier and the upstream's latency. Commands about the data itself (flush,
//! compact, snapshots, ...) belong to the upstream cluster and say so.

use serde_json::{json, Value};
use server::admin::{AdminError, AdminResult};
use server::metrics::Exposition;

use crate::ProxyBackend;

/// The commands that act on stored data: run them against the upstream nodes.
const UPSTREAM_COMMANDS: [&str; 16] = [
    "flush",
    "compact",
    "garbagecollect",
    "cleanup",
    "snapshot",
    "listsnapshots",
    "clearsnapshot",
    "tablestats",
    "tablehistograms",
    "compactionstats",
    "enableautocompaction",
    "disableautocompaction",
    "refreshsizeestimates",
    "getcompactionthroughput",
    "setcompactionthroughput",
    "stop",
];

impl ProxyBackend {
    pub(crate) fn admin_command(&self, command: &str) -> AdminResult {
        match command {
            "info" | "status" => Ok(self.cache_info()),
            "describecluster" => Ok(json!({
                "upstream": self.hosts.iter().map(|h| h.to_string()).collect::<Vec<_>>(),
            })),
            "invalidatekeycache" | "invalidaterowcache" | "invalidatecountercache" => {
                // The proxy's one result cache (both tiers) plays the row cache's part.
                self.cache.invalidate_all();
                Ok(json!({}))
            }
            c if UPSTREAM_COMMANDS.contains(&c) => Err(AdminError::not_here(format!(
                "{c} acts on stored data, which lives in the upstream cluster: run nodetool {c} against the upstream nodes ({}); this proxy holds only a cache",
                self.hosts.iter().map(|h| h.to_string()).collect::<Vec<_>>().join(", ")
            ))),
            _ => Err(AdminError::unknown(command)),
        }
    }

    fn cache_info(&self) -> Value {
        let snap: serde_json::Map<String, Value> = self
            .metrics
            .snapshot(&self.cache)
            .into_iter()
            .map(|(k, v)| (k, json!(v)))
            .collect();
        json!({
            "mode": "proxy",
            "upstream": self.hosts.iter().map(|h| h.to_string()).collect::<Vec<_>>(),
            "cache": snap,
        })
    }

    /// The cache and upstream metrics under Prometheus names: counters per tier with a `tier`
    /// label, the upstream latency as a histogram in seconds.
    pub(crate) fn export_cache_metrics(&self, out: &mut Exposition) {
        let snap = self.metrics.snapshot(&self.cache);
        let get = |n: &str| snap.iter().find(|(k, _)| k == n).map_or(0, |(_, v)| *v) as f64;
        for (family, kind, help, dram, ssd) in [
            (
                "peregrine_proxy_cache_hits_total",
                "counter",
                "Reads answered from a cache tier.",
                "cache_dram_hits_total",
                "cache_ssd_hits_total",
            ),
            (
                "peregrine_proxy_cache_misses_total",
                "counter",
                "Reads a cache tier did not hold.",
                "cache_dram_misses_total",
                "cache_ssd_misses_total",
            ),
            (
                "peregrine_proxy_cache_evictions_total",
                "counter",
                "Entries evicted from a cache tier.",
                "cache_evictions_total",
                "cache_ssd_evictions_total",
            ),
            (
                "peregrine_proxy_cache_bytes",
                "gauge",
                "Bytes held by a cache tier.",
                "cache_dram_bytes",
                "cache_ssd_bytes",
            ),
            (
                "peregrine_proxy_cache_entries",
                "gauge",
                "Entries held by a cache tier.",
                "cache_dram_entries",
                "cache_ssd_entries",
            ),
        ] {
            out.family(family, kind, help);
            out.sample(&[("tier", "dram")], get(dram));
            out.sample(&[("tier", "ssd")], get(ssd));
        }
        for (family, key, help) in [
            (
                "peregrine_proxy_requests_cache_hits_total",
                "cache_hits_total",
                "Cacheable reads answered from the cache (either tier).",
            ),
            (
                "peregrine_proxy_requests_cache_misses_total",
                "cache_misses_total",
                "Cacheable reads sent to the upstream.",
            ),
            (
                "peregrine_proxy_cache_invalidations_total",
                "cache_invalidations_total",
                "Cache invalidations by writes and schema changes.",
            ),
            (
                "peregrine_proxy_cache_stale_served_total",
                "cache_stale_served_total",
                "Stale results served after an upstream error.",
            ),
            (
                "peregrine_proxy_upstream_requests_total",
                "upstream_requests_total",
                "Requests sent to the upstream.",
            ),
            (
                "peregrine_proxy_upstream_errors_total",
                "upstream_errors_total",
                "Upstream requests that failed.",
            ),
            (
                "peregrine_proxy_upstream_timeouts_total",
                "upstream_timeouts_total",
                "Upstream requests that timed out.",
            ),
            (
                "peregrine_proxy_upstream_events_dropped_total",
                "upstream_events_dropped_total",
                "Upstream events dropped because the control connection's queue was full (each drop invalidates the whole cache).",
            ),
        ] {
            out.family(family, "counter", help);
            out.sample(&[], get(key));
        }
        out.family(
            "peregrine_proxy_upstream_pools_forgotten_total",
            "counter",
            "Upstream connection pools forgotten, least recently used first, at the bound of 256 pools.",
        );
        out.sample(&[], self.pools.evicted() as f64);
        self.metrics.export_latency(out);
    }
}
