//! Operator actions on the open store, for `nodetool` and the metrics endpoint: flush,
//! statistics, and snapshots.
//!
//! None of this is on the request path: each call loads the open store once and asks fjall.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use fjall::{AbstractTree, Readable};

use crate::{Compaction, LsmStorage, Open, Result, StorageError};

/// A snapshot of the store's gauges and counters (see `docs/operations.md` for their meaning).
#[derive(Debug, Clone, Default)]
pub struct StorageStats {
    /// Bytes in the active memtable.
    pub memtable_bytes: u64,
    /// Memtables sealed and waiting to be flushed.
    pub sealed_memtables: usize,
    /// Table (SSTable) files per LSM level, level 0 first.
    pub tables_per_level: Vec<usize>,
    /// Bytes of table files on disk.
    pub disk_bytes: u64,
    /// Bytes of write-ahead journal files on disk.
    pub journal_bytes: u64,
    /// Write-ahead journal files on disk.
    pub journal_files: usize,
    /// Journal fsyncs since the process started.
    pub journal_syncs: u64,
    /// Compactions running now.
    pub active_compactions: usize,
    /// Compactions finished since the process started.
    pub compactions_completed: usize,
    /// Idle compactions (L0 merged down after a period without writes, `idle.rs`) since the
    /// store was opened.
    pub idle_compactions: u64,
    /// Time spent compacting since the process started, in seconds.
    pub compaction_seconds: f64,
    /// Memtable flushes queued.
    pub pending_flushes: usize,
    /// Messages waiting for fjall's background workers (flushes, memtable rotations,
    /// compactions).
    pub queued_worker_messages: usize,
    /// Compactions still to run and the bytes they rewrite, estimated from the levels' sizes
    /// ([`pending_compactions`]).
    pub pending_compactions: usize,
    pub pending_compaction_bytes: u64,
    /// Block cache capacity and bytes in use.
    pub block_cache_capacity_bytes: u64,
    pub block_cache_bytes: u64,
    /// Block loads answered from the block cache, and loads that read the disk.
    pub block_cache_hits: u64,
    pub block_cache_misses: u64,
    /// Approximate number of stored items (keys).
    pub approximate_items: u64,
    /// Heap bytes of the block indexes and Bloom filters pinned in memory (every table still
    /// held, of every keyspace), charged to the block cache: blocks and these together stay
    /// within `block_cache_capacity_bytes` (vendored lsm-tree, `Cache::charge_pinned`).
    pub pinned_bytes: u64,
    /// Point reads' probes of tables that do not hold the key (lsm-tree counts no probe that
    /// finds it), and those the table's Bloom filter ruled out; the rest are false positives
    /// (a block read for nothing). Since the store was opened.
    pub filter_queries: u64,
    pub filter_skips: u64,
    /// Bytes of table files flushes wrote since the store was opened.
    pub flushed_bytes: u64,
    /// Bytes of table files compactions wrote since the store was opened.
    pub compacted_bytes: u64,
}

/// One snapshot directory under `<data_dir>/snapshots`.
#[derive(Debug, Clone)]
pub struct SnapshotInfo {
    pub tag: String,
    pub path: PathBuf,
    /// Bytes of its files.
    pub bytes: u64,
}

/// The directory snapshots live in.
pub const SNAPSHOTS_DIR: &str = "snapshots";

/// An estimate of the compactions still to run and the bytes they have to rewrite (what
/// `nodetool compactionstats` calls pending tasks; Cassandra's is an estimate too), for the
/// store's leveled compaction ([`Compaction`]): for L0 at its threshold or more, one per
/// threshold's worth of tables and all its bytes; per level over its target size, one per table
/// size over it and the bytes over it (levels counted from the first non-empty one below L0,
/// as fjall's strategy does).
pub(crate) fn pending_compactions(tree: &fjall::AnyTree, shape: &Compaction) -> (usize, u64) {
    use fjall::AbstractTree;
    let version = tree.current_version();
    let sizes: Vec<(usize, u64)> = version
        .iter_levels()
        .map(|l| (l.iter().map(|run| run.len()).sum(), l.size()))
        .collect();
    estimate_pending(&sizes, shape)
}

/// [`pending_compactions`] of levels given as (tables, bytes), L0 first.
fn estimate_pending(sizes: &[(usize, u64)], shape: &Compaction) -> (usize, u64) {
    let l0 = usize::from(shape.l0_threshold.max(1));
    let (mut tasks, mut bytes) = match sizes.first() {
        Some(&(tables, size)) if tables >= l0 => (tables / l0, size),
        _ => (0, 0),
    };
    let Some(first) = (1..sizes.len()).find(|&i| sizes[i].1 > 0) else {
        return (tasks, bytes);
    };
    let table = shape.table_bytes.max(1);
    let mut target = table * l0 as u64;
    for (_, size) in &sizes[first..] {
        if *size > target {
            tasks += (size - target).div_ceil(table) as usize;
            bytes += size - target;
        }
        target = (target as f64 * f64::from(shape.level_ratio)) as u64;
    }
    (tasks, bytes)
}

impl LsmStorage {
    /// The store's gauges and counters.
    pub fn stats(&self) -> Result<StorageStats> {
        let open = self.shared.current()?;
        let tree = &open.data.tree;
        let levels = (0..7)
            .map(|i| tree.level_table_count(i).unwrap_or(0))
            .collect::<Vec<_>>();
        let m = tree.metrics();
        let pending = pending_compactions(tree, &self.shared.options.compaction);
        let hits = m.block_load_cached_count() as u64;
        let misses = m.block_load_io_count() as u64;
        Ok(StorageStats {
            memtable_bytes: tree.active_memtable().size(),
            sealed_memtables: tree.sealed_memtable_count(),
            tables_per_level: levels,
            disk_bytes: open.data.disk_space(),
            journal_bytes: open.db.journal_disk_space().unwrap_or(0),
            journal_files: open.db.journal_count(),
            journal_syncs: self.shared.journal_syncs.load(Ordering::Relaxed),
            active_compactions: open.db.active_compactions(),
            compactions_completed: open.db.compactions_completed(),
            idle_compactions: self.shared.idle_compactions.load(Ordering::Relaxed),
            compaction_seconds: open.db.time_compacting().as_secs_f64(),
            pending_flushes: open.db.outstanding_flushes(),
            queued_worker_messages: open.db.queued_worker_messages(),
            pending_compactions: pending.0,
            pending_compaction_bytes: pending.1,
            block_cache_capacity_bytes: open.db.cache_capacity(),
            block_cache_bytes: open.db.cache_size(),
            block_cache_hits: hits,
            block_cache_misses: misses,
            approximate_items: open.data.approximate_len() as u64,
            pinned_bytes: open.db.cache_pinned_size(),
            filter_queries: m.filter_queries() as u64,
            filter_skips: m.io_skipped_by_filter() as u64,
            flushed_bytes: m.flushed_bytes(),
            compacted_bytes: m.compacted_bytes(),
        })
    }

    /// Writes the memtable out to a table file and waits for it (`nodetool flush`).
    pub fn flush(&self) -> Result<()> {
        let open = self.shared.current()?;
        open.flush_and_wait()
    }

    /// Where snapshots are kept: `<data_dir>/snapshots`.
    pub fn snapshots_dir(&self) -> PathBuf {
        self.shared.path.join(SNAPSHOTS_DIR)
    }

    /// Writes a consistent snapshot named `tag` into `<data_dir>/snapshots/<tag>`: a complete
    /// store directory (open it as a data directory to restore). Every key for which
    /// `keep(key)` is true is copied as of one instant (an MVCC read snapshot), so writes
    /// running meanwhile are either wholly in it or not at all. Returns the snapshot's size.
    pub fn snapshot(&self, tag: &str, keep: &dyn Fn(&[u8]) -> bool) -> Result<SnapshotInfo> {
        check_tag(tag)?;
        let dir = self.snapshots_dir().join(tag);
        if dir.exists() {
            return Err(StorageError::Snapshot(format!(
                "Snapshot {tag} already exists."
            )));
        }
        let open = self.shared.current()?;
        let view = open.db.snapshot();
        std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
        let copy = || -> Result<()> {
            let target = Open::new(
                &dir,
                &crate::Options {
                    cache_bytes: 8 * 1024 * 1024,
                    ..crate::Options::default()
                },
                crate::priority::Background::below_this_thread(0),
            )?;
            let mut batch = target.db.batch();
            let mut n = 0usize;
            for item in view.iter(&open.data) {
                let (k, v) = item.into_inner()?;
                if !keep(&k) {
                    continue;
                }
                batch.insert(&target.data, k, v);
                n += 1;
                if n.is_multiple_of(4096) {
                    std::mem::replace(&mut batch, target.db.batch()).commit()?;
                }
            }
            batch.commit()?;
            target.data.rotate_memtable_and_wait()?;
            target.db.persist(fjall::PersistMode::SyncAll)?;
            Ok(())
        };
        // The snapshot was written under the process's cipher: its key check goes with it, so
        // restoring it asks for the same keys.
        let check = self.shared.path.join(crate::encryption::CHECK_FILE);
        let copied = copy().and_then(|()| {
            match std::fs::copy(&check, dir.join(crate::encryption::CHECK_FILE)) {
                Ok(_) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(io(&check, e)),
            }
        });
        if let Err(e) = copied {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(e);
        }
        Ok(SnapshotInfo {
            tag: tag.to_string(),
            bytes: dir_bytes(&dir),
            path: dir,
        })
    }

    /// The snapshots on disk, by tag.
    pub fn list_snapshots(&self) -> Result<Vec<SnapshotInfo>> {
        let root = self.snapshots_dir();
        let entries = match std::fs::read_dir(&root) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io(&root, e)),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| io(&root, e))?;
            if !entry.path().is_dir() {
                continue;
            }
            out.push(SnapshotInfo {
                tag: entry.file_name().to_string_lossy().into_owned(),
                bytes: dir_bytes(&entry.path()),
                path: entry.path(),
            });
        }
        out.sort_by(|a, b| a.tag.cmp(&b.tag));
        Ok(out)
    }

    /// Removes the snapshot `tag`, or every snapshot when `tag` is `None`; returns the tags
    /// removed.
    pub fn clear_snapshots(&self, tag: Option<&str>) -> Result<Vec<String>> {
        let mut removed = Vec::new();
        for s in self.list_snapshots()? {
            if tag.is_none_or(|t| t == s.tag) {
                std::fs::remove_dir_all(&s.path).map_err(|e| io(&s.path, e))?;
                removed.push(s.tag);
            }
        }
        Ok(removed)
    }
}

/// A tag becomes a directory name: no separators, no `.`/`..`, nothing empty.
fn check_tag(tag: &str) -> Result<()> {
    let bad = tag.is_empty()
        || tag == "."
        || tag == ".."
        || tag.contains(['/', '\\', '\0'])
        || tag.len() > 200;
    if bad {
        return Err(StorageError::Snapshot(format!(
            "Invalid snapshot name {tag:?}: it must be a non-empty file name without path separators"
        )));
    }
    Ok(())
}

fn io(path: &Path, e: std::io::Error) -> StorageError {
    StorageError::Io(format!("{}: {e}", path.display()))
}

/// Bytes of the files under `dir` (recursively); unreadable entries count 0.
fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => on_disk(&m),
            Err(_) => 0,
        })
        .sum()
}

/// Bytes a file takes on disk (the journal is preallocated sparse: its length is not its size).
#[cfg(unix)]
fn on_disk(m: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    m.blocks() * 512
}

#[cfg(not(unix))]
fn on_disk(m: &std::fs::Metadata) -> u64 {
    m.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Storage, WriteBatch};

    #[test]
    fn snapshot_copies_the_kept_keys_and_opens_as_a_store() {
        let dir = std::env::temp_dir().join(format!("storage-snap-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = LsmStorage::open(&dir, crate::Options::default()).unwrap();
        let mut b = WriteBatch::new();
        b.put(b"a1".to_vec(), b"x".to_vec());
        b.put(b"b1".to_vec(), b"y".to_vec());
        store.write(b).unwrap();
        let info = store.snapshot("t1", &|k| k.starts_with(b"a")).unwrap();
        assert!(info.bytes > 0);
        assert!(store.snapshot("t1", &|_| true).is_err(), "tags are unique");
        assert!(store.snapshot("../x", &|_| true).is_err());
        assert_eq!(store.list_snapshots().unwrap().len(), 1);
        let copy = LsmStorage::open(&info.path, crate::Options::default()).unwrap();
        assert_eq!(copy.get(b"a1").unwrap(), Some(b"x".to_vec()));
        assert_eq!(copy.get(b"b1").unwrap(), None);
        drop(copy);
        assert_eq!(store.clear_snapshots(None).unwrap(), vec!["t1".to_string()]);
        assert!(store.list_snapshots().unwrap().is_empty());
        let stats = store.stats().unwrap();
        assert!(stats.memtable_bytes > 0);
        store.flush().unwrap();
        assert!(
            store
                .stats()
                .unwrap()
                .tables_per_level
                .iter()
                .sum::<usize>()
                >= 1
        );
        drop(store);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[cfg(test)]
mod pending_tests {
    use super::estimate_pending;
    use crate::Compaction;

    #[test]
    fn pending_compactions_follow_the_leveled_targets() {
        let mib = 1u64 << 20;
        // fjall's own shape (the store's default L0 threshold is 8, tested below).
        let d = Compaction {
            l0_threshold: 4,
            level_ratio: 10.0,
            table_bytes: 64 * mib,
        };
        assert_eq!(estimate_pending(&[(0, 0); 7], &d), (0, 0));
        // L0 at 3 tables: nothing due; at 9: two merges of all of it.
        assert_eq!(estimate_pending(&[(3, 30 * mib), (0, 0)], &d), (0, 0));
        assert_eq!(
            estimate_pending(&[(9, 90 * mib), (0, 0)], &d),
            (2, 90 * mib)
        );
        // The first non-empty level below L0 holds 256 MiB: 300 MiB is one table over.
        let mut levels = vec![(0, 0); 7];
        levels[3] = (5, 300 * mib);
        assert_eq!(estimate_pending(&levels, &d), (1, 44 * mib));
        // The next level may hold 2,560 MiB: 2,700 MiB is 140 MiB, three tables, over.
        levels[4] = (40, 2_700 * mib);
        assert_eq!(estimate_pending(&levels, &d), (1 + 3, 184 * mib));
    }

    #[test]
    fn pending_compactions_follow_the_configured_shape() {
        let mib = 1u64 << 20;
        let shape = Compaction {
            l0_threshold: 8,
            level_ratio: 4.0,
            table_bytes: 32 * mib,
        };
        // L0 at 7 tables: nothing due; at 17: two merges.
        assert_eq!(estimate_pending(&[(7, 70 * mib), (0, 0)], &shape), (0, 0));
        assert_eq!(
            estimate_pending(&[(17, 170 * mib), (0, 0)], &shape),
            (2, 170 * mib)
        );
        // The first level below L0 holds 8 × 32 MiB, the next 4 times more (1,024 MiB).
        let mut levels = vec![(0, 0); 7];
        levels[1] = (9, 288 * mib);
        levels[2] = (40, 1_100 * mib);
        assert_eq!(
            estimate_pending(&levels, &shape),
            (1 + 3, 32 * mib + 76 * mib)
        );
    }
}
