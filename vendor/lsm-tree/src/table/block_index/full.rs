// Copyright (c) 2024-present, fjall-rs
// This source code is licensed under both the Apache 2.0 and MIT License
// (found in the LICENSE-* files in the repository)

use crate::table::block_index::{iter::OwnedIndexBlockIter, BlockIndexIter};
use crate::table::{block::decoder::HeadWords, BlockHandle, IndexBlock, KeyedBlockHandle};
use crate::SeqNo;

/// Index that translates item keys to data block handles
///
/// The index is fully loaded into memory.
// PATCH (Peregrine, read path; see vendor/README.md): with the block's `HeadWords`, made
// once when the table opens, so that a point read's seek compares integers for most of its
// binary search instead of parsing a restart key per step (~3,000 instructions a seek), and
// each entry's block handle in an array, so that a point read the words decide
// (`block_of`) reads no entry of the index block (two cache misses in a large table).
pub struct FullBlockIndex(IndexBlock, HeadWords, Box<[BlockHandle]>);

impl FullBlockIndex {
    pub fn new(block: IndexBlock) -> Self {
        let words = block.head_words();
        let handles: Box<[BlockHandle]> = block
            .iter()
            .map(|entry| BlockHandle::new(entry.offset, entry.size))
            .collect();
        // One head per entry (the index's restart interval is 1), or no handles kept.
        let handles = if handles.len() == words.len() {
            handles
        } else {
            Box::default()
        };
        Self(block, words, handles)
    }

    /// Bytes the head words and handles take beside the block.
    pub fn head_words_size(&self) -> usize {
        self.1.size() + std::mem::size_of_val(&*self.2)
    }

    /// The only block that can hold `needle`, when the head words decide it: `Some(None)`
    /// when `needle` is past every block. `None` when the index's entries must be searched.
    pub fn block_of(&self, needle: &[u8]) -> Option<Option<&BlockHandle>> {
        if self.2.is_empty() {
            return None;
        }
        self.1.decided(needle).map(|i| self.2.get(i))
    }

    pub fn inner(&self) -> &IndexBlock {
        &self.0
    }

    // PATCH (Peregrine, read path; see vendor/README.md)
    /// The head words `forward_reader` narrows its seek with.
    pub fn head_words(&self) -> &HeadWords {
        &self.1
    }

    pub fn forward_reader(&self, needle: &[u8], seqno: SeqNo) -> Option<Iter> {
        let mut it = self.iter();
        if it.0.seek_lower_within(needle, seqno, &self.1) {
            Some(it)
        } else {
            None
        }
    }

    pub fn iter(&self) -> Iter {
        Iter(OwnedIndexBlockIter::new(self.0.clone(), IndexBlock::iter))
    }
}

pub struct Iter(OwnedIndexBlockIter);

impl BlockIndexIter for Iter {
    fn seek_lower(&mut self, key: &[u8], seqno: SeqNo) -> bool {
        self.0.seek_lower(key, seqno)
    }

    fn seek_upper(&mut self, key: &[u8], seqno: SeqNo) -> bool {
        self.0.seek_upper(key, seqno)
    }
}

impl Iterator for Iter {
    type Item = crate::Result<KeyedBlockHandle>;

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(Ok)
    }
}

impl DoubleEndedIterator for Iter {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back().map(Ok)
    }
}
