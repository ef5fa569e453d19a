// PATCH (Peregrine, blind writes): new file.
//
// Partial values ("merge operands"): a write may store only what it changes under a key; the
// versions below it complete it when the key is read, flushed or compacted. lsm-tree 3.1 has no
// merge operator, so reads stopped at the newest version and every update had to read the
// whole value first and write it back whole.

use crate::version::Version;
use crate::{InternalValue, TableId, UserValue};

/// Completes partial values with the older versions of their key.
///
/// A value is partial when [`MergeOperator::is_partial`] says so; every other value (and a
/// tombstone) is a base that hides all older versions, as without an operator. The tree calls
/// the operator wherever it picks the visible version of a key: point reads, range reads (both
/// directions), flushes and compactions.
///
/// The merge must be associative: merging `a` onto the merge of `b` onto `c` equals merging
/// the merge of `a` onto `b` onto `c`, since compactions fold whatever versions they happen to
/// hold. A merge of a partial value onto a base is a base; onto a partial value it stays partial.
pub trait MergeOperator: Send + Sync + std::panic::RefUnwindSafe + 'static {
    /// Whether `value`, stored under `key`, needs the older versions of `key` to be complete.
    fn is_partial(&self, key: &[u8], value: &[u8]) -> bool;

    /// `newer` (partial) merged onto `older` (partial or not).
    fn merge(&self, key: &[u8], newer: &[u8], older: &[u8]) -> UserValue;

    /// The base a partial value stands for when nothing older exists (below it is a tombstone,
    /// or nothing at all). Flushes, compactions and inserts store this; reads (`get`, ranges)
    /// return a partial value nothing older completes as it is, to be read as this.
    fn complete(&self, key: &[u8], partial: &[u8]) -> UserValue;

    // PATCH (Peregrine, write amplification; see vendor/README.md)
    /// Whether a partial value inserted onto the active memtable's partial version of its key
    /// is merged onto it and stays partial (`Tree::append_entry`), instead of being completed
    /// with a read of the key. The merged value holds every cell of the one below it, so a
    /// read still stops at a source's newest version.
    fn memtable_keeps_partial(&self) -> bool {
        false
    }
}

/// Merges the partial value `acc` onto `older`, the next older version of its key. Returns
/// whether `acc` is now complete (`older` was a base: a value that is not partial, or a
/// tombstone), so that no older version matters any more.
pub(crate) fn merge_onto(
    op: &dyn MergeOperator,
    key: &[u8],
    acc: &mut UserValue,
    older: &InternalValue,
) -> bool {
    if older.key.is_tombstone() {
        *acc = op.complete(key, acc);
        return true;
    }
    let base = !op.is_partial(key, &older.value);
    *acc = op.merge(key, acc, &older.value);
    base
}

/// Whether a table of `version` other than those in `except` may hold a version of `key`: its
/// key range and Bloom filter let the key through (or reading the filter fails). No data block
/// is read (a flush asking for every key it writes would read one per key that exists). A flush
/// or compaction completes a partial value no other table may complete instead: a row inserted
/// blind reads as one version from its first flush on, without a lookup in every level.
pub(crate) fn held_elsewhere(version: &Version, key: &[u8], except: &[TableId]) -> bool {
    let hash = crate::table::filter::standard_bloom::Builder::get_hash(key);
    version
        .iter_levels()
        .flat_map(|lvl| lvl.iter())
        .filter_map(|run| run.get_for_key(key))
        .filter(|t| !except.contains(&t.metadata.id))
        .any(|t| t.filter_may_contain(key, hash).unwrap_or(true))
}
