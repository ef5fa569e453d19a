// PATCH (Peregrine, a compaction keeps its hot blocks cached; see vendor/README.md)

//! The key ranges of a compaction's input blocks that were in the block cache when the
//! compaction read them: the blocks reads were using. The compaction's output blocks that
//! overlap one go into the cache as they are written (`Writer::use_block_cache_for`), so the reads
//! of those keys find the new table's blocks cached once the input tables are dropped (their
//! blocks leave the cache then: `Cache::retire`), instead of a burst of misses, the hottest
//! keys first, after every merge. Blocks nobody read are not put in, so a tree larger than
//! the cache does not push blocks in use out with a merge's cold output.

use crate::UserKey;
use std::sync::{Mutex, PoisonError};

/// Key ranges (first and last key, inclusive) of input blocks found cached, noted as the input
/// tables' scanners read them and asked by the output's writer as it writes blocks.
///
/// A merge hands out keys in order, and a scanner reads its next block only once the merge
/// took every key of its current one; so when the writer finishes a block ending at key `k`,
/// every input block holding a key up to `k` has been read, and noted if it was cached.
#[derive(Debug, Default)]
pub struct HotRanges(Mutex<Vec<(UserKey, UserKey)>>);

impl HotRanges {
    /// Notes a cached input block holding the keys `first..=last`.
    pub fn note(&self, first: UserKey, last: UserKey) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((first, last));
    }

    /// Whether an output block holding the keys `first..=last` overlaps a noted input block.
    /// Output blocks come in key order, so the ranges ending before `first` are dropped: no
    /// later block can overlap them.
    pub fn overlaps(&self, first: &[u8], last: &[u8]) -> bool {
        let mut ranges = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        ranges.retain(|(_, end)| end.as_ref() >= first);
        ranges.iter().any(|(start, _)| start.as_ref() <= last)
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
        assert_eq!(hot.0.lock().unwrap().len(), 1);
        assert!(hot.overlaps(b"l", b"z"));
        assert!(hot.overlaps(b"m", b"m"));
        assert!(!hot.overlaps(b"n", b"z"));
        assert!(hot.0.lock().unwrap().is_empty());
    }
}
