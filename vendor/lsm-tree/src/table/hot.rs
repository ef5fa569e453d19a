// PATCH (Peregrine, a compaction keeps its hot blocks cached; see vendor/README.md)

//! The key ranges of a compaction's input blocks that were in the block cache when the
//! compaction read them (the blocks reads were using), and the output's data blocks over those
//! keys. Once the output is installed and the inputs' blocks have left the cache
//! (`Cache::retire`), the compaction reads those output blocks into the cache
//! (`Table::warm_data_block`), so the reads of those keys find them there instead of a burst
//! of misses, the hottest keys first, after every merge. Blocks nobody read are not put in, so
//! a tree larger than the cache does not push blocks in use out with a merge's cold output.
//!
//! Not put in as they are written: the cache then still holds the inputs' blocks, which the
//! reads use until the output is installed, and S3-FIFO evicts a block put in and not read
//! since first: in a full cache the filled blocks were the ones to go.

use crate::{
    table::{BlockHandle, TableId},
    UserKey,
};
use std::sync::{Mutex, PoisonError};

/// Key ranges (first and last key, inclusive) of input blocks found cached, noted as the input
/// tables' scanners read them, and the output's blocks that overlap one, noted by its writer.
///
/// A merge hands out keys in order, and a scanner reads its next block only once the merge
/// took every key of its current one; so when the writer finishes a block ending at key `k`,
/// every input block holding a key up to `k` has been read, and noted if it was cached.
#[derive(Debug, Default)]
pub struct HotRanges {
    ranges: Mutex<Vec<(UserKey, UserKey)>>,
    warm: Mutex<Vec<(TableId, BlockHandle)>>,
}

impl HotRanges {
    /// Notes a cached input block holding the keys `first..=last`.
    pub fn note(&self, first: UserKey, last: UserKey) {
        self.ranges
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((first, last));
    }

    /// Whether an output block holding the keys `first..=last` overlaps a noted input block.
    /// Output blocks come in key order, so the ranges ending before `first` are dropped: no
    /// later block can overlap them.
    pub fn overlaps(&self, first: &[u8], last: &[u8]) -> bool {
        let mut ranges = self.ranges.lock().unwrap_or_else(PoisonError::into_inner);
        ranges.retain(|(_, end)| end.as_ref() >= first);
        ranges.iter().any(|(start, _)| start.as_ref() <= last)
    }

    /// Notes an output block to read into the cache once the output is installed.
    pub fn warm_later(&self, table: TableId, block: BlockHandle) {
        self.warm
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((table, block));
    }

    /// The output blocks noted by [`HotRanges::warm_later`], in the order written.
    pub fn take_warm(&self) -> Vec<(TableId, BlockHandle)> {
        std::mem::take(&mut *self.warm.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

#[cfg(test)]
mod tests {
    use super::HotRanges;

    #[test]
    fn overlaps_drops_ranges_behind_the_output() {
        let hot = HotRanges::default();
        hot.note(b"c".into(), b"e".into());
        hot.note(b"m".into(), b"m".into());
        assert!(!hot.overlaps(b"a", b"b"));
        assert!(hot.overlaps(b"a", b"c"));
        assert!(hot.overlaps(b"d", b"d"));
        assert!(hot.overlaps(b"e", b"k"));
        // "c".."e" ends before "f": dropped.
        assert!(!hot.overlaps(b"f", b"l"));
        assert_eq!(hot.ranges.lock().unwrap().len(), 1);
        assert!(hot.overlaps(b"l", b"z"));
        assert!(hot.overlaps(b"m", b"m"));
        assert!(!hot.overlaps(b"n", b"z"));
        assert!(hot.ranges.lock().unwrap().is_empty());
    }
}
