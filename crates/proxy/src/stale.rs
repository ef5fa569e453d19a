//! Serving stale results when the upstream fails, for the tables listed in
//! `proxy.serve_stale_on_upstream_error`.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use proto::error::DbError;
use proto::response::Rows;

use crate::cache;

/// Errors that mean the upstream could not answer (as opposed to a bad request), after which
/// a `serve_stale_on_upstream_error` table may answer from its last result.
pub(crate) fn upstream_failure(e: &DbError) -> bool {
    matches!(
        e,
        DbError::Unavailable { .. }
            | DbError::ReadTimeout { .. }
            | DbError::ReadFailure { .. }
            | DbError::Overloaded { .. }
            | DbError::IsBootstrapping { .. }
            | DbError::ServerError { .. }
    )
}

/// The last results of `serve_stale_on_upstream_error` tables, kept apart from the cache so
/// that an entry past its `max_staleness` (or evicted) can still answer when the upstream
/// fails. Bounded in bytes (a quarter of `cache_bytes`; the row data is shared with the
/// cache's copy while both hold it); the least recently stored goes first. An entry is served
/// only while its generation ticket is current, so never after a write or schema change this
/// proxy saw.
pub(crate) struct StaleStore {
    budget: usize,
    inner: Mutex<StaleInner>,
}

#[derive(Default)]
struct StaleInner {
    map: HashMap<Box<[u8]>, StaleEntry>,
    order: BTreeMap<u64, Box<[u8]>>,
    seq: u64,
    bytes: usize,
}

struct StaleEntry {
    seq: u64,
    ticket: cache::Ticket,
    rows: Arc<Rows>,
    size: usize,
}

impl StaleStore {
    pub(crate) fn new(budget: usize) -> Self {
        StaleStore {
            budget,
            inner: Mutex::new(StaleInner::default()),
        }
    }

    pub(crate) fn put(&self, key: Box<[u8]>, ticket: cache::Ticket, rows: Rows) {
        let size = key.len() + rows.data.len() + rows.metadata.columns.len() * 48 + 128;
        if size > self.budget {
            return;
        }
        let mut s = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        s.remove(&key);
        while s.bytes + size > self.budget {
            let Some((_, oldest)) = s.order.pop_first() else {
                break;
            };
            s.remove(&oldest);
        }
        s.seq += 1;
        let seq = s.seq;
        s.order.insert(seq, key.clone());
        s.bytes += size;
        s.map.insert(
            key,
            StaleEntry {
                seq,
                ticket,
                rows: Arc::new(rows),
                size,
            },
        );
    }

    /// The kept result, if its ticket is still `current`.
    pub(crate) fn get(&self, key: &[u8], current: cache::Ticket) -> Option<Arc<Rows>> {
        let s = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        s.map
            .get(key)
            .filter(|e| e.ticket == current)
            .map(|e| e.rows.clone())
    }
}

impl StaleInner {
    fn remove(&mut self, key: &[u8]) {
        if let Some(e) = self.map.remove(key) {
            self.order.remove(&e.seq);
            self.bytes -= e.size;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use proto::frame::ProtocolVersion;
    use proto::request::Consistency;
    use proto::response::RowsMetadata;

    use crate::cache::Cache;

    fn rows(n: usize) -> Rows {
        Rows {
            metadata: RowsMetadata::default(),
            rows_count: 1,
            data: Bytes::from(vec![1u8; n]),
        }
    }

    #[test]
    fn stale_store_serves_only_current_tickets_within_its_budget() {
        let cache = Cache::new(1 << 20, 1 << 16);
        let key = |pk: &[u8]| cache::CacheKey::new(ProtocolVersion::V4, "ks", "t", pk, b"q");
        let stale_key = |pk: &[u8]| Box::<[u8]>::from(key(pk).bytes());
        let store = StaleStore::new(4096);
        let (a, b) = (stale_key(b"a"), stale_key(b"b"));
        store.put(a.clone(), cache.ticket(&key(b"a")), rows(100));
        let tb = cache.ticket(&key(b"b"));
        store.put(b.clone(), tb, rows(100));
        assert!(store.get(&a, cache.ticket(&key(b"a"))).is_some());
        // A write through the proxy to `a` bumps its generation: never served stale again.
        cache.invalidate_partition("ks", "t", b"a");
        assert!(store.get(&a, cache.ticket(&key(b"a"))).is_none());
        // `b` stays servable (unless it shares `a`'s stripe: a spurious miss, never stale).
        let current = cache.ticket(&key(b"b"));
        assert_eq!(store.get(&b, current).is_some(), current == tb);
        // The budget holds: the oldest entries go first.
        for i in 0..100u32 {
            let k = stale_key(&i.to_be_bytes());
            store.put(k, cache.ticket(&key(&i.to_be_bytes())), rows(500));
        }
        let inner = store.inner.lock().unwrap();
        assert!(inner.bytes <= 4096 && !inner.map.is_empty());
        assert!(!inner.map.contains_key(&b));
        // Too large for the budget: not kept.
        drop(inner);
        let big = stale_key(b"big");
        store.put(big.clone(), cache.ticket(&key(b"big")), rows(10_000));
        assert!(store.get(&big, cache.ticket(&key(b"big"))).is_none());
    }

    #[test]
    fn only_upstream_failures_fall_back_to_stale_results() {
        assert!(upstream_failure(&DbError::Unavailable {
            message: String::new(),
            consistency: Consistency::One,
            required: 1,
            alive: 0,
        }));
        assert!(upstream_failure(&DbError::server("x")));
        assert!(!upstream_failure(&DbError::invalid("bad query")));
    }
}
