// Copyright (c) 2024-present, fjall-rs
// This source code is licensed under both the Apache 2.0 and MIT License
// (found in the LICENSE-* files in the repository)

use crate::table::{block_index::BlockIndexImpl, Block, BlockOffset};
use std::sync::Arc;
use crate::{GlobalTableId, UserValue};
use quick_cache::sync::Cache as QuickCache;
use quick_cache::Weighter;

const TAG_BLOCK: u8 = 0;
const TAG_BLOB: u8 = 1;

#[derive(Clone)]
enum Item {
    Block(Block),
    Blob(UserValue),
}

#[derive(Eq, std::hash::Hash, PartialEq)]
struct CacheKey(u8, u64, u64, u64);

impl From<(u8, u64, u64, u64)> for CacheKey {
    fn from((tag, root_id, table_id, offset): (u8, u64, u64, u64)) -> Self {
        Self(tag, root_id, table_id, offset)
    }
}

#[derive(Clone)]
struct BlockWeighter;

impl Weighter<CacheKey, Item> for BlockWeighter {
    fn weight(&self, _: &CacheKey, item: &Item) -> u64 {
        use Item::{Blob, Block};

        // PATCH (Peregrine, memory budget; see vendor/README.md): a block is charged what its
        // allocation takes, not its length: the block's bytes live in one heap allocation (a
        // `ByteView`: an 8-byte reference count, then the bytes), rounded up by the allocator to its
        // size class. Charging the length undercounted each block by that rounding (up to a
        // quarter: a 4.2 KB block takes 5 KiB).
        // The entry itself (key, item, the slab's two links) is charged too.
        ENTRY_BYTES
            + match item {
                Block(b) => allocation_size(8 + u64::from(b.header.uncompressed_length)),
                Blob(b) => allocation_size(8 + b.len() as u64),
            }
    }
}

/// An entry's own bytes in the cache's slab: its key, its item and the slab's two links.
const ENTRY_BYTES: u64 = (std::mem::size_of::<CacheKey>() + std::mem::size_of::<Item>() + 8) as u64;

/// The bytes a heap allocation of `n` bytes takes: `n` rounded up to the size class of
/// mimalloc 3 (the binary's global allocator; `mi_bin` in its `page-queue.c`): whole words up
/// to 64 bytes, then four classes per doubling (80, 96, 112, 128, 160, ..., 4096, 5120, 6144,
/// 7168, 8192, 10240, ...) up to 512 KiB; above that, whole 4 KiB pages.
pub(crate) fn allocation_size(n: u64) -> u64 {
    let words = n.div_ceil(8).max(1);
    if words <= 8 {
        return words * 8;
    }
    if n > 512 << 10 {
        return n.div_ceil(4096) * 4096;
    }
    let w = words - 1;
    let b = 63 - u64::from(w.leading_zeros());
    let top = w >> (b - 2);
    ((top + 1) << (b - 2)) * 8
}

#[cfg(test)]
mod tests {
    use super::{allocation_size, Cache};

    #[test]
    fn pinned_bytes_shrink_the_block_capacity_down_to_a_quarter() {
        let cache = Cache::with_capacity_bytes(1 << 30);
        let near = |want: u64| {
            let got = cache.block_capacity();
            assert!(got.abs_diff(want) < 1024, "block capacity {got}, want {want}");
        };
        near(1 << 30);
        cache.charge_pinned(100 << 20);
        near((1 << 30) - (100 << 20));
        cache.charge_pinned(900 << 20);
        assert_eq!(cache.pinned_size(), 1000 << 20);
        near(1 << 28);
        cache.release_pinned(900 << 20);
        near((1 << 30) - (100 << 20));
        cache.release_pinned(100 << 20);
        near(1 << 30);
        assert_eq!(cache.pinned_size(), 0);
    }

    #[test]
    fn allocation_sizes_are_mimalloc_size_classes() {
        for (n, class) in [
            (1, 8),
            (8, 8),
            (9, 16),
            (24, 24),
            (64, 64),
            (65, 80),
            (80, 80),
            (81, 96),
            (129, 160),
            (4096, 4096),
            (4097, 5120),
            (4424, 5120),
            (5121, 6144),
            (8192, 8192),
            (8193, 10240),
            (512 << 10, 512 << 10),
            ((512 << 10) + 1, (512 << 10) + 4096),
        ] {
            assert_eq!(allocation_size(n), class, "{n}");
        }
    }
}

/// Cache, in which blocks or blobs are cached in-memory
/// after being retrieved from disk
///
/// This speeds up consecutive queries to nearby data, improving
/// read performance for hot data.
///
/// # Examples
///
/// Sharing cache between multiple trees
///
/// ```
/// # use lsm_tree::{Tree, Config, Cache};
/// # use std::sync::Arc;
/// #
/// // Provide 64 MB of cache capacity
/// let cache = Arc::new(Cache::with_capacity_bytes(64 * 1_000 * 1_000));
///
/// # let folder = tempfile::tempdir()?;
/// let tree1 = Config::new(folder, Default::default(), Default::default()).use_cache(cache.clone()).open()?;
/// # let folder = tempfile::tempdir()?;
/// let tree2 = Config::new(folder, Default::default(), Default::default()).use_cache(cache.clone()).open()?;
/// #
/// # Ok::<(), lsm_tree::Error>(())
/// ```
pub struct Cache {
    // NOTE: rustc_hash performed best: https://fjall-rs.github.io/post/fjall-2-1
    /// Concurrent cache implementation
    data: QuickCache<CacheKey, Item, BlockWeighter, rustc_hash::FxBuildHasher>,

    /// Capacity in bytes
    capacity: u64,

    // PATCH (Peregrine, memory budget; see vendor/README.md): the bytes of the tables' pinned
    // block indexes and filters, which live outside the cache but are charged to its capacity
    // (`charge_pinned`), so that the cache and the pinned metadata together stay within the
    // configured size. The lock also orders the resizes.
    pinned: std::sync::Mutex<u64>,

    // PATCH (Peregrine, deleted tables leave the cache; see vendor/README.md): the block indexes
    // of tables deleted and dropped, whose data blocks `remove_retired` takes out of the cache.
    retired: std::sync::Mutex<Vec<(GlobalTableId, Arc<BlockIndexImpl>)>>,
}

/// However much is pinned, the cache keeps at least this share of its capacity for blocks (a
/// quarter): a store whose indexes and filters outgrow the budget still caches blocks, and the
/// pinned bytes beyond it are logged.
const MIN_BLOCK_SHARE_DIVISOR: u64 = 4;

impl Cache {
    /// Creates a new block cache with roughly `n` bytes of capacity.
    #[must_use]
    pub fn with_capacity_bytes(bytes: u64) -> Self {
        use quick_cache::sync::DefaultLifecycle;

        #[expect(clippy::expect_used, reason = "nothing we can do if it fails")]
        let opts = quick_cache::OptionsBuilder::new()
            .weight_capacity(bytes)
            .hot_allocation(0.8)
            .estimated_items_capacity(10_000)
            .build()
            .expect("cache options should be valid");

        let quick_cache = QuickCache::with_options(
            opts,
            BlockWeighter,
            rustc_hash::FxBuildHasher,
            DefaultLifecycle::default(),
        );

        Self {
            data: quick_cache,
            capacity: bytes,
            pinned: std::sync::Mutex::new(0),
            retired: std::sync::Mutex::default(),
        }
    }

    /// Charges `bytes` held outside the cache (a table's pinned index and filter) to the cache's
    /// capacity: the blocks it holds are evicted down to the capacity left.
    pub fn charge_pinned(&self, bytes: u64) {
        if bytes == 0 {
            return;
        }
        self.repin(|pinned| pinned.saturating_add(bytes));
    }

    /// Returns what `charge_pinned` charged, when the table holding it is dropped.
    pub fn release_pinned(&self, bytes: u64) {
        if bytes == 0 {
            return;
        }
        self.repin(|pinned| pinned.saturating_sub(bytes));
    }

    fn repin(&self, change: impl FnOnce(u64) -> u64) {
        let mut pinned = self.pinned.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let floor = self.capacity / MIN_BLOCK_SHARE_DIVISOR;
        let was_over = self.capacity.saturating_sub(*pinned) < floor;
        *pinned = change(*pinned);
        let blocks = self.capacity.saturating_sub(*pinned);
        if blocks < floor && !was_over {
            log::warn!(
                "pinned block indexes and filters take {} of the {}-byte block cache: the cache \
                 keeps {floor} bytes for blocks, and memory exceeds its size by the rest",
                *pinned,
                self.capacity,
            );
        }
        self.data.set_capacity(blocks.max(floor));
    }

    /// Returns the bytes of pinned indexes and filters charged to the cache.
    #[must_use]
    pub fn pinned_size(&self) -> u64 {
        *self.pinned.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Returns the capacity left for blocks after the pinned charge.
    #[must_use]
    pub fn block_capacity(&self) -> u64 {
        self.data.capacity()
    }

    /// Returns the amount of cached bytes.
    #[must_use]
    pub fn size(&self) -> u64 {
        self.data.weight()
    }

    /// Returns the cache capacity in bytes.
    #[must_use]
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    #[doc(hidden)]
    #[must_use]
    pub fn get_block(&self, id: GlobalTableId, offset: BlockOffset) -> Option<Block> {
        let key: CacheKey = (TAG_BLOCK, id.tree_id(), id.table_id(), *offset).into();

        Some(match self.data.get(&key)? {
            Item::Block(block) => block,
            Item::Blob(_) => unreachable!("invalid cache item"),
        })
    }

    #[doc(hidden)]
    pub fn insert_block(&self, id: GlobalTableId, offset: BlockOffset, block: Block) {
        self.data.insert(
            (TAG_BLOCK, id.tree_id(), id.table_id(), *offset).into(),
            Item::Block(block),
        );
    }

    // PATCH (Peregrine, a compaction keeps its hot blocks cached; see vendor/README.md)
    /// Whether the cache holds a block; unlike [`Cache::get_block`], not a use of it.
    pub(crate) fn contains_block(&self, id: GlobalTableId, offset: BlockOffset) -> bool {
        self.data.contains_key(&CacheKey::from((
            TAG_BLOCK,
            id.tree_id(),
            id.table_id(),
            *offset,
        )))
    }

    // PATCH (Peregrine, deleted tables leave the cache; see vendor/README.md)
    /// Queues the data blocks of a deleted table (its block index says where they are) for
    /// [`Cache::remove_retired`]. Called where the table is dropped, which may be a thread
    /// serving reads (the last one holding the version): the removal itself, a few
    /// milliseconds for a large table, is left to a background thread.
    pub(crate) fn retire(&self, id: GlobalTableId, index: Arc<BlockIndexImpl>) {
        self.retired
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((id, index));
    }

    /// Removes from the cache the data blocks of the tables [`Cache::retire`] queued: nothing
    /// reads them again, and until they aged out they took the room of blocks still read.
    pub fn remove_retired(&self) {
        let retired = std::mem::take(
            &mut *self
                .retired
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        for (id, index) in retired {
            self.remove_table_blocks(id, &index);
        }
    }

    /// Removes from the cache the data blocks of the table `id` (its block index says where
    /// they are).
    pub(crate) fn remove_table_blocks(&self, id: GlobalTableId, index: &BlockIndexImpl) {
        if let BlockIndexImpl::Full(index) = index {
            for offset in index.data_block_offsets() {
                self.data.remove(&CacheKey::from((
                    TAG_BLOCK,
                    id.tree_id(),
                    id.table_id(),
                    *offset,
                )));
            }
        }
    }

    #[doc(hidden)]
    pub fn insert_blob(
        &self,
        vlog_id: crate::TreeId,
        vhandle: &crate::vlog::ValueHandle,
        value: UserValue,
    ) {
        self.data.insert(
            (TAG_BLOB, vlog_id, vhandle.blob_file_id, vhandle.offset).into(),
            Item::Blob(value),
        );
    }

    #[doc(hidden)]
    #[must_use]
    pub fn get_blob(
        &self,
        vlog_id: crate::TreeId,
        vhandle: &crate::vlog::ValueHandle,
    ) -> Option<UserValue> {
        let key: CacheKey = (TAG_BLOB, vlog_id, vhandle.blob_file_id, vhandle.offset).into();

        Some(match self.data.get(&key)? {
            Item::Blob(blob) => blob,
            Item::Block(_) => unreachable!("invalid cache item"),
        })
    }
}
