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
        purge(&self.schema.get(), (self.clock)().secs, key, value)
    }

    /// The schema and the time, read once for the compaction: for every item they cost a
    /// lock and a reference count shared with the request threads, and a clock read.
    fn for_compaction(&self) -> Option<Arc<dyn CompactionFilter>> {
        Some(Arc::new(PurgeRun {
            schema: self.schema.get(),
            now: (self.clock)().secs,
        }))
    }
}

/// A [`PurgeFilter`] for one compaction: the schema and the time as it started. An older
/// schema keeps more (a table or index dropped since is purged by the next compaction; one
/// created since has an id at or past its `next_table_id`, which is kept), and so does an
/// earlier time (fewer cells expired, fewer tombstones past gc grace).
struct PurgeRun {
    schema: Arc<Schema>,
    now: u32,
}

impl CompactionFilter for PurgeRun {
    fn filter(&self, key: &[u8], value: &[u8], _last_level: bool) -> Decision {
        purge(&self.schema, self.now, key, value)
    }
}

/// What a compaction does with one stored item at `now` (seconds) by `schema`.
fn purge(schema: &Schema, now: u32, key: &[u8], value: &[u8]) -> Decision {
    if key.first() == Some(&index::INDEX_PREFIX) {
        let keep = index::keep_entry(schema, key, value, now);
        return if keep { Decision::Keep } else { Decision::Drop };
    }
    let (Some(d), Some(id)) = (keys::decode_key(key), keys::table_id(key)) else {
        return Decision::Keep;
    };
    let Some(t) = schema.tables.values().find(|t| t.id == id) else {
        // Ids below the counter that no table holds belong to dropped/truncated tables.
        return if id < schema.next_table_id {
            Decision::Drop
        } else {
            Decision::Keep
        };
    };
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
    // A partial row (a blind write) may still lie above older versions of its row that
    // this compaction does not hold: its tombstones must stay to shadow them, and so must
    // the value itself (the storage folds it into them, or completes it where nothing is
    // older). Expired cells may still become tombstones.
    let partial = row::is_partial(value);
    let gc_before = if partial { 0 } else { gc_before };
    // Most rows a compaction rewrites hold nothing to purge: read in place, they are kept
    // without the decode, clone and comparison below.
    if row::purge_keeps_as_is(value, now, gc_before) {
        return Decision::Keep;
    }
    let Ok(mut r) = row::Row::decode(value) else {
        return Decision::Keep;
    };
    let before = r.clone();
    if !r.purge(now, gc_before) {
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
