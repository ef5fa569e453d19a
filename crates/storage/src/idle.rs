//! Compaction when the store goes idle.
//!
//! The leveled compaction merges L0 (the tables flushes write) into the level below only once L0
//! holds `l0_threshold` tables (8 by default: fewer rewrites per byte written). A burst of writes
//! that stops below it leaves up to seven tables in L0 for as long as no more writes come, and a
//! point read probes each one's filter (a cache miss each) and a range read merges them all.
//! When the store has taken no write for a whole [`crate::Options::idle_compaction`] period and L0
//! holds two tables or more, the store flushes its memtable and merges L0 into the level below
//! (lsm-tree's `IdleL0` strategy, vendor/README.md): while writes keep coming, nothing changes.
//!
//! The merge runs on a thread of its own, one at a time, at the flushes' and compactions' lower
//! priority (`priority.rs`), so the background thread's journal syncs never wait behind it; the
//! store joins it when it closes. Its cost is bounded by the strategy: L0 and at most the
//! leveled strategy's first level (`l0_threshold × table_bytes`).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::{Open, Shared};

/// Tells, from the store's newest record number taken once a period, when a period passed with
/// no write.
#[derive(Default)]
pub(crate) struct IdleWatch {
    seen: Option<u64>,
}

impl IdleWatch {
    /// Whether nothing was written since the last call (none before the first).
    pub(crate) fn idle_since_last(&mut self, seqno: u64) -> bool {
        self.seen.replace(seqno) == Some(seqno)
    }
}

/// L0 tables from which an idle store merges them: one table is one probe, as the level below.
const IDLE_L0_TABLES: usize = 2;

impl Shared {
    /// Starts the idle compaction when L0 holds [`IDLE_L0_TABLES`] or more and none is running.
    pub(crate) fn maybe_compact_idle(self: &Arc<Self>, open: &Arc<Open>) {
        if open.data.l0_table_count() < IDLE_L0_TABLES {
            return;
        }
        let mut running = self
            .idle_compaction
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if running.as_ref().is_some_and(|h| !h.is_finished()) {
            return;
        }
        let (shared, open) = (self.clone(), open.clone());
        *running = std::thread::Builder::new()
            .name("storage-idle".into())
            .spawn(move || {
                shared.background.enter();
                shared.compact_idle(&open)
            })
            .ok();
    }

    /// Flushes the memtable and merges L0 into the level below (`IdleL0`), counted when L0 shrank.
    /// A strategy that finds L0 busy (a compaction already merging it, often the one the flush
    /// started) does nothing: the next idle period looks again.
    fn compact_idle(self: &Arc<Self>, open: &Arc<Open>) {
        let strategy = self.options.compaction.idle_strategy();
        let done = open.data.rotate_memtable_and_wait().and_then(|()| {
            let before = open.data.l0_table_count();
            open.data.compact_with(strategy)?;
            Ok(open.data.l0_table_count() < before)
        });
        match done {
            Ok(merged) => {
                if merged {
                    self.idle_compactions.fetch_add(1, Ordering::Relaxed);
                }
            }
            Err(e) => {
                tracing::warn!("compacting the idle store's L0 failed: {e}");
                let _ = self.failed(open, &e);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::IdleWatch;

    #[test]
    fn a_period_is_idle_when_no_record_was_numbered_in_it() {
        let mut watch = IdleWatch::default();
        assert!(
            !watch.idle_since_last(7),
            "the first look has nothing to compare"
        );
        assert!(watch.idle_since_last(7));
        assert!(!watch.idle_since_last(8), "a write came");
        assert!(watch.idle_since_last(8));
        assert!(watch.idle_since_last(8));
    }
}
