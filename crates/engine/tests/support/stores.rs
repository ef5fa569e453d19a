//! The merging store the blind-write tests run on.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

/// An LSM store in `dir` (emptied first) that merges partial rows (`row::RowMerge`), as the
/// server opens it; `dir` is removed when the returned guard drops, failed test or not (bind
/// it first, `let (_dir, lsm) = ..`, so that it drops after the store).
pub fn merging_lsm(dir: PathBuf) -> (RemoveOnDrop, Arc<storage::LsmStorage>) {
    let _ = std::fs::remove_dir_all(&dir);
    let guard = RemoveOnDrop(dir);
    let lsm = storage::LsmStorage::open(
        &guard.0,
        storage::Options {
            merge: Some(Arc::new(engine::row::RowMerge)),
            ..storage::Options::default()
        },
    )
    .unwrap();
    (guard, Arc::new(lsm))
}

/// Removes a directory when dropped.
pub struct RemoveOnDrop(pub PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
