// Copyright (c) 2024-present, fjall-rs
// This source code is licensed under both the Apache 2.0 and MIT License
// (found in the LICENSE-* files in the repository)

use crate::table::block_index::{iter::OwnedIndexBlockIter, BlockIndexIter};
use crate::table::{
    block::decoder::HeadWords, BlockHandle, BlockOffset, IndexBlock, KeyedBlockHandle,
};
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

/// Where the head words place a point read's key ([`FullBlockIndex::block_of`]).
pub enum BlockOf<'a> {
    /// Past every block: the table does not hold it.
    Past,
    /// In this block if in any.
    Only(&'a BlockHandle),
    /// In this block, whose last key shares the key's head word, unless the key sorts after
    /// that last key (then in the next block, found by searching the index's entries).
    Unless(&'a BlockHandle),
}

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

    /// The block that holds `needle` if any does, when the head words tell it without the
    /// index's entries: `None` when those must be searched.
    pub fn block_of(&self, needle: &[u8]) -> Option<BlockOf<'_>> {
        if self.2.is_empty() {
            return None;
        }
        let (i, decided) = self.1.candidate(needle)?;
        Some(match (self.2.get(i), decided) {
            (None, _) => BlockOf::Past,
            (Some(handle), true) => BlockOf::Only(handle),
            (Some(handle), false) => BlockOf::Unless(handle),
        })
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

    // PATCH (Peregrine, deleted tables leave the cache; see vendor/README.md)
    /// The offsets of the table's data blocks, in order.
    pub(crate) fn data_block_offsets(&self) -> impl Iterator<Item = BlockOffset> + '_ {
        self.0.iter().map(|entry| entry.offset)
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

// PATCH (Peregrine, read path): the placement by head words against a model.
#[cfg(test)]
mod tests {
    use crate::config::{BlockSizePolicy, RestartIntervalPolicy};
    use crate::{AbstractTree, Config, SeqNo, SequenceNumberCounter};
    use std::collections::BTreeMap;

    /// Point reads at every snapshot of a table whose blocks hold one to a few rows each (so
    /// most keys end their block and share their head's word), with keys that have several
    /// versions (a block boundary may fall between them) and keys sharing a head word across
    /// a block boundary, match a model; so do reads of absent keys just after, before and
    /// longer than present ones.
    #[test]
    fn point_reads_of_keys_ending_their_blocks_match_a_model() -> crate::Result<()> {
        let dir = tempfile::tempdir()?;
        let tree = Config::new(
            dir.path(),
            SequenceNumberCounter::default(),
            SequenceNumberCounter::default(),
        )
        .data_block_size_policy(BlockSizePolicy::all(1024))
        .data_block_restart_interval_policy(RestartIntervalPolicy::all(1))
        .open()?;
        let mut state = 0x5EED_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let key = |token: u64, rest: u8| {
            let mut k = b"t\x00".to_vec();
            k.extend(token.to_be_bytes());
            k.extend(std::iter::repeat_n(rest, 1 + usize::from(rest % 3)));
            k
        };
        let mut model: BTreeMap<Vec<u8>, Vec<(SeqNo, Vec<u8>)>> = BTreeMap::new();
        let mut tokens = Vec::new();
        let mut seqno: SeqNo = 1;
        for _ in 0..600 {
            let (t, r) = ((1 << 62) + next() % (1 << 62), (next() % 200) as u8 + 1);
            tokens.push((t, r));
            // A third of the tokens get a second key (rows of one partition: a key after a
            // block's last key with the same head word), a third of the keys two to four
            // versions, written in turn.
            let keys = if next() % 3 == 0 {
                vec![r, r + 50]
            } else {
                vec![r]
            };
            for r in keys {
                for _ in 0..if next() % 3 == 0 { 2 + next() % 3 } else { 1 } {
                    let v = vec![(seqno % 251) as u8; 100 + (next() % 900) as usize];
                    tree.insert(key(t, r), v.clone(), seqno);
                    model.entry(key(t, r)).or_default().push((seqno, v));
                    seqno += 1;
                }
            }
        }
        tree.flush_active_memtable(0)?;
        assert_eq!(1, tree.table_count());
        let mut probes: Vec<Vec<u8>> = model.keys().cloned().collect();
        for &(t, r) in &tokens {
            probes.push(key(t, r.wrapping_add(1)));
            probes.push(key(t + 1, r));
            probes.push(key(t - 1, r));
            let mut longer = key(t, r);
            longer.push(0);
            probes.push(longer);
            let mut shorter = key(t, r);
            shorter.pop();
            probes.push(shorter);
        }
        let reads = [1, 2, seqno / 3, seqno / 2, seqno - 1, seqno, SeqNo::MAX / 2];
        for probe in &probes {
            for &at in &reads {
                // Visible: written with a seqno below the read's.
                let want = model
                    .get(probe)
                    .and_then(|versions| versions.iter().rev().find(|(s, _)| *s < at))
                    .map(|(_, v)| v.clone());
                let got = tree.get(probe, at)?.map(|v| v.to_vec());
                assert_eq!(got, want, "key {probe:02x?} read at {at}");
            }
        }
        Ok(())
    }
}
