// Copyright (c) 2024-present, fjall-rs
// This source code is licensed under both the Apache 2.0 and MIT License
// (found in the LICENSE-* files in the repository)

use super::{Block, DataBlock};
use crate::{
    cache::Cache,
    table::{
        block::{decoder::ParsedItem, BlockOffset, BlockType, Header},
        hot::HotRanges,
        iter::OwnedDataBlockIter,
        GlobalTableId,
    },
    CompressionType, InternalValue, SeqNo,
};
use std::{fs::File, io::BufReader, path::Path, sync::Arc};

/// Table reader that is optimized for consuming an entire table
pub struct Scanner {
    reader: BufReader<File>,
    iter: OwnedDataBlockIter,

    compression: CompressionType,
    block_count: usize,
    read_count: usize,

    global_seqno: SeqNo,

    // PATCH (Peregrine, a compaction keeps its hot blocks cached; see vendor/README.md)
    /// Where the blocks found in the block cache are noted (`Scanner::noting_cached`).
    noting: Option<Noting>,
}

/// A scanner's notes of its blocks found in the block cache ([`HotRanges`]).
struct Noting {
    cache: Arc<Cache>,
    table_id: GlobalTableId,
    hot: Arc<HotRanges>,
    /// The file offset of the block the scanner reads next.
    next_offset: u64,
}

impl Noting {
    /// Notes `block`, read at `self.next_offset`, if the cache holds it, and moves past it.
    fn block_read(&mut self, block: &DataBlock) {
        let offset = self.next_offset;
        self.next_offset +=
            Header::serialized_len() as u64 + u64::from(block.inner.header.data_length);
        if !self
            .cache
            .contains_block(self.table_id, BlockOffset(offset))
        {
            return;
        }
        let mut items = block.iter();
        let Some(first) = items.next() else {
            return;
        };
        let first = first.materialize(&block.inner.data).key.user_key;
        let last = match items.next_back() {
            Some(last) => last.materialize(&block.inner.data).key.user_key,
            None => first.clone(),
        };
        self.hot.note(first, last);
    }
}

impl Scanner {
    pub fn new(
        path: &Path,
        block_count: usize,
        compression: CompressionType,
        global_seqno: SeqNo,
    ) -> crate::Result<Self> {
        // TODO: a larger buffer size may be better for HDD, maybe make this configurable
        // TODO: benchmarks were inconclusive on SSD, not much difference between 4KB - 2MB
        let mut reader = BufReader::with_capacity(8 * 4_096, File::open(path)?);

        let block = Self::fetch_next_block(&mut reader, compression)?;
        let iter = OwnedDataBlockIter::new(block, DataBlock::iter);

        Ok(Self {
            reader,
            iter,

            compression,
            block_count,
            read_count: 1,

            global_seqno,

            noting: None,
        })
    }

    // PATCH (Peregrine, a compaction keeps its hot blocks cached; see vendor/README.md)
    /// Notes in `hot` the key ranges of the blocks (this one's and those read from now on)
    /// that `cache` holds for the table `table_id`.
    pub(crate) fn noting_cached(
        mut self,
        cache: Arc<Cache>,
        table_id: GlobalTableId,
        hot: Arc<HotRanges>,
    ) -> Self {
        let mut noting = Noting {
            cache,
            table_id,
            hot,
            next_offset: 0,
        };
        // The first block, read by `new`, starts the file.
        noting.block_read(self.iter.borrow_owner());
        self.noting = Some(noting);
        self
    }

    fn fetch_next_block(
        reader: &mut BufReader<File>,
        compression: CompressionType,
    ) -> crate::Result<DataBlock> {
        let block = Block::from_reader(reader, compression);

        match block {
            Ok(block) => {
                if block.header.block_type != BlockType::Data {
                    return Err(crate::Error::InvalidTag((
                        "BlockType",
                        block.header.block_type.into(),
                    )));
                }

                Ok(DataBlock::new(block))
            }
            Err(e) => Err(e),
        }
    }
}

impl Iterator for Scanner {
    type Item = crate::Result<InternalValue>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(mut item) = self.iter.next() {
                item.key.seqno += self.global_seqno;
                return Some(Ok(item));
            }

            if self.read_count >= self.block_count {
                return None;
            }

            // Init new block
            let block = fail_iter!(Self::fetch_next_block(&mut self.reader, self.compression));
            if let Some(noting) = &mut self.noting {
                noting.block_read(&block);
            }
            self.iter = OwnedDataBlockIter::new(block, DataBlock::iter);

            self.read_count += 1;
        }
    }
}
