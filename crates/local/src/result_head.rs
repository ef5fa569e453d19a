//! The head of a ROWS result, written in front of its rows, kept per thread for the
//! statements answered last.
//!
//! A ROWS result's head (its kind, flags, column count, and each column's keyspace, table,
//! name and type) is the same for every read of one prepared statement: the columns are its
//! plan's, one shared `Arc` (`engine::SelectPlan::output`); only the row count after them
//! changes. Encoded afresh, the head cost about 300 instructions a YCSB read (11 columns,
//! Callgrind) when the client does not skip the metadata (the Rust driver's default). Each
//! thread keeps the heads of the last few statements it answered, keyed by that `Arc`, held
//! so its address cannot be reused while the entry lives, and copies them. A head with a
//! paging state or a new metadata id (they sit inside it) is encoded each time.

use std::cell::RefCell;
use std::sync::Arc;

use bytes::BytesMut;
use proto::frame::ProtocolVersion;
use proto::response::{ColumnSpec, RowsMetadata};

/// Heads kept per thread: a workload's few statements (YCSB A reads and updates, F's
/// read-modify-write) without a lookup longer than a few pointer comparisons.
const KEPT: usize = 4;

struct Kept {
    columns: Arc<[ColumnSpec]>,
    no_metadata: bool,
    version: ProtocolVersion,
    /// The head up to the row count, which follows it as the head's last 4 bytes.
    head: Vec<u8>,
}

#[derive(Default)]
struct Heads {
    kept: Vec<Kept>,
    /// The entry replaced next once `KEPT` are kept.
    next: usize,
    /// Where a head that is not kept is encoded (its allocation kept for the next).
    scratch: BytesMut,
}

thread_local! {
    static HEADS: RefCell<Heads> = RefCell::new(Heads::default());
}

/// Writes the RESULT head of `metadata` with `rows_count` for `version` into `data` just
/// before `room` (the rows start there) and returns where it starts; `None` if it does not
/// fit in `room`.
pub(crate) fn place(
    metadata: &RowsMetadata,
    version: ProtocolVersion,
    rows_count: i32,
    data: &mut [u8],
    room: usize,
) -> Option<usize> {
    HEADS.with_borrow_mut(|heads| {
        if metadata.paging_state.is_some() || metadata.new_metadata_id.is_some() {
            let scratch = &mut heads.scratch;
            scratch.clear();
            metadata.encode_rows_head(version, rows_count, scratch);
            let start = room.checked_sub(scratch.len())?;
            data[start..room].copy_from_slice(scratch);
            return Some(start);
        }
        let head = heads.head(metadata, version);
        let start = room.checked_sub(head.len() + 4)?;
        data[start..room - 4].copy_from_slice(head);
        data[room - 4..room].copy_from_slice(&rows_count.to_be_bytes());
        Some(start)
    })
}

impl Heads {
    /// The head of `metadata` (no paging state, no new metadata id) up to its row count.
    fn head(&mut self, metadata: &RowsMetadata, version: ProtocolVersion) -> &[u8] {
        let found = self.kept.iter().position(|k| {
            Arc::ptr_eq(&k.columns, &metadata.columns)
                && k.no_metadata == metadata.no_metadata
                && k.version == version
        });
        let i = match found {
            Some(i) => i,
            None => {
                let mut head = BytesMut::new();
                metadata.encode_rows_head(version, 0, &mut head);
                head.truncate(head.len() - 4);
                let kept = Kept {
                    columns: metadata.columns.clone(),
                    no_metadata: metadata.no_metadata,
                    version,
                    head: head.to_vec(),
                };
                if self.kept.len() < KEPT {
                    self.kept.push(kept);
                    self.kept.len() - 1
                } else {
                    let i = self.next;
                    self.next = (i + 1) % KEPT;
                    self.kept[i] = kept;
                    i
                }
            }
        };
        &self.kept[i].head
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use proto::types::ColumnType;

    fn columns(table: &str, n: usize) -> Arc<[ColumnSpec]> {
        (0..n)
            .map(|i| ColumnSpec {
                keyspace: "ks".into(),
                table: table.into(),
                name: format!("c{i}"),
                ty: if i % 2 == 0 {
                    ColumnType::Varchar
                } else {
                    ColumnType::Int
                },
            })
            .collect()
    }

    /// The head placed, kept or not, is byte for byte the one encoded directly, for more
    /// statements than are kept (so entries are replaced and found again), with and
    /// without metadata, paging state and a new metadata id, in v4 and v5.
    #[test]
    fn placed_heads_match_encoded_ones() {
        let sets: Vec<_> = (0..KEPT + 2)
            .map(|i| columns(&format!("t{i}"), i + 1))
            .collect();
        for round in 0..3 {
            for (i, cols) in sets.iter().enumerate() {
                for version in [ProtocolVersion::V4, ProtocolVersion::V5] {
                    for (no_metadata, paging, new_id) in [
                        (false, None, None),
                        (true, None, None),
                        (false, Some(Bytes::from_static(b"page")), None),
                        (false, None, Some(Bytes::from_static(b"0123456789abcdef"))),
                    ] {
                        let metadata = RowsMetadata {
                            columns: cols.clone(),
                            paging_state: paging,
                            no_metadata,
                            new_metadata_id: new_id,
                        };
                        let rows = (round * 100 + i) as i32;
                        let mut want = BytesMut::new();
                        metadata.encode_rows_head(version, rows, &mut want);
                        let mut data = vec![0xee; 300];
                        let start = place(&metadata, version, rows, &mut data, 256).unwrap();
                        assert_eq!(&data[start..256], &want[..], "set {i} round {round}");
                        assert!(data[256..].iter().all(|&b| b == 0xee));
                        // A head that does not fit is refused, not cut.
                        assert_eq!(place(&metadata, version, rows, &mut data, 8), None);
                    }
                }
            }
        }
    }
}
