//! The compaction filter: what a compaction drops or rewrites (expired cells, tombstones past
//! `gc_grace_seconds`, data of dropped or truncated tables, stale index entries), by the
//! schema the engine shares with it.

use crate::catalog::Schema;
use crate::{index, keys, row, Now};
use std::sync::{Arc, RwLock};
use storage::{CompactionFilter, Decision};

/// The schema shared with the compaction filter.
pub(crate) struct SchemaCell(pub(crate) RwLock<Arc<Schema>>);

impl SchemaCell {
    pub(crate) fn get(&self) -> Arc<Schema> {
        self.0.read().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// Purges expired cells and old tombstones, and data of dropped or truncated tables.
pub struct PurgeFilter {
    schema: Arc<SchemaCell>,
    /// What time it is for expiry and gc grace: compaction runs with no request to bring a
    /// clock, so whoever opens the store gives one (the wall clock in the server).
    clock: fn() -> Now,
}

impl CompactionFilter for PurgeFilter {
    fn filter(&self, key: &[u8], value: &[u8], _last_level: bool) -> Decision {
        if key.first() == Some(&index::INDEX_PREFIX) {
            let keep = index::keep_entry(&self.schema.get(), key, value, (self.clock)().secs);
            return if keep { Decision::Keep } else { Decision::Drop };
        }
        let Some(d) = keys::decode_key(key) else {
            return Decision::Keep;
        };
        let schema = self.schema.get();
        let id = u32::from_be_bytes([key[1], key[2], key[3], key[4]]);
        let Some(t) = schema.tables.values().find(|t| t.id == id) else {
            // Ids below the counter that no table holds belong to dropped/truncated tables.
            return if id < schema.next_table_id {
                Decision::Drop
            } else {
                Decision::Keep
            };
        };
        let now = (self.clock)().secs;
        let gc_before = now.saturating_sub(t.options.gc_grace_seconds.max(0) as u32);
        if d.is_header {
            let Ok(mut h) = row::PartitionHeader::decode(value) else {
                return Decision::Keep;
            };
            let before = h.clone();
            if !h.purge(now, gc_before) {
                return Decision::Drop;
            }
            return if h == before {
                Decision::Keep
            } else {
                Decision::Replace(h.encode())
            };
        }
        let Ok(mut r) = row::Row::decode(value) else {
            return Decision::Keep;
        };
        // A partial row (a blind write) may still lie above older versions of its row that
        // this compaction does not hold: its tombstones must stay to shadow them, and so must
        // the value itself (the storage folds it into them, or completes it where nothing is
        // older). Expired cells may still become tombstones.
        let partial = row::is_partial(value);
        let before = r.clone();
        if !r.purge(now, if partial { 0 } else { gc_before }) {
            return if partial {
                Decision::Keep
            } else {
                Decision::Drop
            };
        }
        if r == before {
            Decision::Keep
        } else if partial {
            Decision::Replace(r.encode_partial())
        } else {
            Decision::Replace(r.encode())
        }
    }
}

/// Creates the compaction filter for a store that an [`Engine`](crate::Engine) will open,
/// purging by `clock`; pass the returned handle to
/// [`Engine::open_with_filter`](crate::Engine::open_with_filter).
pub fn purge_filter(clock: fn() -> Now) -> (Arc<PurgeFilter>, FilterHandle) {
    let handle = FilterHandle::new();
    let filter = PurgeFilter {
        schema: handle.0.clone(),
        clock,
    };
    (Arc::new(filter), handle)
}

/// The engine's side of a [`PurgeFilter`]: the schema the filter purges by.
pub struct FilterHandle(pub(crate) Arc<SchemaCell>);

impl FilterHandle {
    pub(crate) fn new() -> Self {
        FilterHandle(Arc::new(SchemaCell(RwLock::new(Arc::new(
            Schema::default(),
        )))))
    }
}
