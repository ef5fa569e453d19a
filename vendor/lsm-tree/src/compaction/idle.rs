// PATCH (Peregrine, idle compaction): a strategy of our own, not in upstream lsm-tree.

use super::{Choice, CompactionStrategy, Input};
use crate::{compaction::state::CompactionState, version::Version, Config};

/// Merges every L0 table into the level below it, whatever their number: what a store runs when
/// it has gone idle, so that reads stop probing the tables a burst of writes left in L0 below the
/// leveled strategy's threshold (see `Leveled::with_l0_threshold`).
///
/// The destination is the first non-empty level below L0 (the last level when all are empty),
/// as the leveled strategy's L0 compaction picks it, except when that level already holds more
/// than `base_size` (the leveled strategy's L1 size: its L0 threshold times its table size):
/// then the empty level above it, so an idle compaction rewrites at most L0 and `base_size`,
/// never a large last level.
pub struct Strategy {
    /// The leveled strategy's L1 size (its L0 threshold × its table target size).
    pub base_size: u64,
    /// Table target size of the written tables.
    pub target_size: u64,
}

impl CompactionStrategy for Strategy {
    fn get_name(&self) -> &'static str {
        "IdleL0Compaction"
    }

    fn choose(&self, version: &Version, _: &Config, state: &CompactionState) -> Choice {
        let l0 = version.l0();
        if l0.is_empty() || version.level_is_busy(0, state.hidden_set()) {
            return Choice::DoNothing;
        }
        let last = version.level_count() - 1;
        let first_non_empty = (1..=last)
            .find(|&idx| version.level(idx).is_some_and(|level| !level.is_empty()))
            .unwrap_or(last);
        let dest = match version.level(first_non_empty) {
            Some(level) if first_non_empty > 1 && level.size() > self.base_size => {
                first_non_empty - 1
            }
            _ => first_non_empty,
        };
        if version.level_is_busy(dest, state.hidden_set()) {
            return Choice::DoNothing;
        }
        let Some(dest_level) = version.level(dest) else {
            return Choice::DoNothing;
        };
        let key_range = l0.aggregate_key_range();
        let mut table_ids = l0.list_ids();
        table_ids.extend(
            dest_level
                .iter()
                .flat_map(|run| run.get_overlapping(&key_range))
                .map(crate::Table::id),
        );
        #[expect(
            clippy::cast_possible_truncation,
            reason = "level index is bounded by level count (7)"
        )]
        Choice::Merge(Input {
            table_ids,
            dest_level: dest as u8,
            canonical_level: 1,
            target_size: self.target_size,
        })
    }
}
