// Copyright (c) 2024-present, fjall-rs
// This source code is licensed under both the Apache 2.0 and MIT License
// (found in the LICENSE-* files in the repository)

use crate::file::MAGIC_BYTES;
use crate::table::{
    filter::{standard_bloom::StandardBloomFilterReader, FilterType},
    Block,
};

#[derive(Clone)]
pub struct FilterBlock(Block);

impl FilterBlock {
    #[must_use]
    pub fn new(block: Block) -> Self {
        Self(block)
    }

    pub fn maybe_contains_hash(&self, hash: u64) -> crate::Result<bool> {
        // PATCH (Peregrine, speed): new tables' filters are blocked (`blocked.rs`); those
        // written before are standard. The type byte follows the magic bytes in both.
        let data = &self.0.data;
        if data.get(MAGIC_BYTES.len()) == Some(&u8::from(FilterType::BlockedBloom)) {
            return super::blocked::contains_hash(data, hash);
        }
        Ok(StandardBloomFilterReader::new(data)?.contains_hash(hash))
    }

    // PATCH (Peregrine, speed): see `Table::touch_filter`.
    /// Starts fetching the line `maybe_contains_hash(hash)` will read (blocked filters).
    pub fn touch_hash(&self, hash: u64) {
        let data = &self.0.data;
        if data.get(MAGIC_BYTES.len()) == Some(&u8::from(FilterType::BlockedBloom)) {
            super::blocked::touch(data, hash);
        }
    }

    /// Returns the block size in bytes.
    #[must_use]
    pub fn size(&self) -> usize {
        self.0.size()
    }
}
