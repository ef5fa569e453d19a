//! Row and partition-header encoding: round trips, merges and corrupt input.

use super::*;

fn live(col: u16, ts: i64, v: &[u8]) -> Cell {
    Cell {
        column: col,
        ts,
        value: CellValue::Live {
            label: None,
            value: bytes::Bytes::copy_from_slice(v),
            expiry: None,
        },
    }
}
fn dead(col: u16, ts: i64) -> Cell {
    Cell {
        column: col,
        ts,
        value: CellValue::Tombstone { local_del: 5 },
    }
}

#[test]
fn higher_timestamp_wins_either_order() {
    let mut a = Row {
        cells: vec![live(1, 10, b"new")],
        ..Row::default()
    };
    a.merge(Row {
        cells: vec![live(1, 5, b"old")],
        ..Row::default()
    });
    assert_eq!(a.cells[0].raw_value(), b"new");
}

#[test]
fn tie_tombstone_wins_then_greater_value() {
    let mut a = Row {
        cells: vec![live(1, 10, b"zzz")],
        ..Row::default()
    };
    a.merge(Row {
        cells: vec![dead(1, 10)],
        ..Row::default()
    });
    assert!(a.cell(1, 0, None).is_none());
    let mut b = Row {
        cells: vec![live(1, 10, b"b")],
        ..Row::default()
    };
    b.merge(Row {
        cells: vec![live(1, 10, b"a")],
        ..Row::default()
    });
    assert_eq!(b.cell(1, 0, None).unwrap().raw_value(), b"b");
}

#[test]
fn tie_expiring_beats_non_expiring_then_later_expiry_then_value() {
    let expiring = |v: &[u8], expires_at| Cell {
        column: 1,
        ts: 10,
        value: CellValue::Live {
            label: None,
            value: bytes::Bytes::copy_from_slice(v),
            expiry: Some(Expiry {
                ttl: 100,
                expires_at,
            }),
        },
    };
    let merged = |first: Cell, second: Cell| {
        let mut r = Row {
            cells: vec![first],
            ..Row::default()
        };
        r.merge(Row {
            cells: vec![second],
            ..Row::default()
        });
        r.cells[0].value.raw_value().to_vec()
    };
    // Either order: the expiring cell wins even with the smaller value (Cassandra 5.0.9:
    // a batch setting a column twice at one timestamp, once USING TTL, keeps the TTL one).
    assert_eq!(merged(live(1, 10, b"z"), expiring(b"a", 500)), b"a");
    assert_eq!(merged(expiring(b"a", 500), live(1, 10, b"z")), b"a");
    // Two expiring cells: the later expiry, then the greater value.
    assert_eq!(merged(expiring(b"z", 400), expiring(b"a", 500)), b"a");
    assert_eq!(merged(expiring(b"a", 500), expiring(b"z", 400)), b"a");
    assert_eq!(merged(expiring(b"a", 500), expiring(b"z", 500)), b"z");
    // A tombstone still beats an expiring cell.
    let mut r = Row {
        cells: vec![expiring(b"a", 500)],
        ..Row::default()
    };
    r.merge(Row {
        cells: vec![dead(1, 10)],
        ..Row::default()
    });
    assert!(r.cell(1, 0, None).is_none());
}

#[test]
fn row_deletion_shadows_older_cells_not_newer() {
    let mut r = Row {
        marker: Some(Marker {
            ts: 5,
            expiry: None,
        }),
        cells: vec![live(1, 5, b"x"), live(2, 20, b"y")],
        ..Row::default()
    };
    r.merge(Row {
        deletion: Some(Deletion {
            ts: 10,
            local_del: 1,
        }),
        ..Row::default()
    });
    assert!(r.cell(1, 0, None).is_none());
    assert!(r.cell(2, 0, None).is_some());
    assert!(r.is_live(0, None));
    let outer = Some(Deletion {
        ts: 30,
        local_del: 1,
    });
    assert!(!r.is_live(0, outer));
}

#[test]
fn expired_cells_read_as_absent_and_purge() {
    let mut r = Row {
        cells: vec![Cell {
            column: 1,
            ts: 1,
            value: CellValue::Live {
                label: None,
                value: bytes::Bytes::from_static(b"v"),
                expiry: Some(Expiry {
                    ttl: 10,
                    expires_at: 100,
                }),
            },
        }],
        ..Row::default()
    };
    assert!(r.cell(1, 99, None).is_some());
    assert_eq!(r.cells[0].ttl_remaining(95), Some(5));
    assert!(r.cell(1, 100, None).is_none());
    assert!(r.purge(150, 50), "tombstone is kept until gc grace passes");
    assert!(!r.purge(150, 200));
}

#[test]
fn encoding_round_trips_and_rejects_garbage() {
    let r = Row {
        marker_label: None,
        clustering: vec![vec![1, 2], vec![]],
        marker: Some(Marker {
            ts: 7,
            expiry: Some(Expiry {
                ttl: 3,
                expires_at: 9,
            }),
        }),
        deletion: Some(Deletion {
            ts: 1,
            local_del: 2,
        }),
        cells: vec![live(1, 10, b"abc"), dead(3, 11)],
    };
    let enc = r.encode();
    assert_eq!(Row::decode(&enc).unwrap(), r);
    for cut in 0..enc.len() {
        assert!(Row::decode(&enc[..cut]).is_err());
    }
    let h = PartitionHeader {
        deletion: None,
        ranges: vec![RangeTombstone {
            start: vec![1],
            end: vec![],
            deletion: Deletion {
                ts: 4,
                local_del: 4,
            },
        }],
        statics: vec![live(9, 1, b"s")],
    };
    assert_eq!(PartitionHeader::decode(&h.encode()).unwrap(), h);
}

fn element(path: &[u8], ts: i64, v: &[u8]) -> Element {
    Element {
        path: path.to_vec(),
        ts,
        value: CellValue::Live {
            label: None,
            value: bytes::Bytes::copy_from_slice(v),
            expiry: None,
        },
    }
}

fn set_cell(deletion: Option<i64>, elements: Vec<Element>) -> Cell {
    let c = Complex {
        kind: CollectionKind::Set,
        deletion: deletion.map(|ts| Deletion { ts, local_del: 1 }),
        elements,
    };
    Cell {
        column: 1,
        ts: c.max_ts(),
        value: CellValue::Complex(c),
    }
}

fn set_of_ints() -> proto::types::ColumnType {
    proto::types::ColumnType::Set(Box::new(proto::types::ColumnType::Int))
}

/// The items of the `set<int>` in column 1 as read at `now` under `outer`.
fn set_items(r: &Row, now: LocalSecs, outer: Option<Deletion>) -> Vec<Vec<u8>> {
    let v = r
        .cell(1, now, outer)
        .and_then(|c| c.value(&set_of_ints(), now).map(|v| v.into_owned()))
        .unwrap_or_default();
    crate::exec::decode_list_elements(&v).unwrap_or_default()
}

/// Rows are written in the compact format (ROW_V2): every timestamp a delta from the row's
/// base, extreme and negative ones included, counts, lengths and column ids as varints. Its
/// partial twin differs in the format byte alone. A YCSB row (10 fields of 100 bytes sharing
/// one timestamp) takes 1,065 bytes, against 1,178 in the fixed-width format.
#[test]
fn compact_format_round_trips_extreme_values_and_is_smaller() {
    let mut set = set_cell(
        Some(i64::MIN + 1),
        vec![
            element(b"p", 12_345_678_901_234, b"v"),
            element(&[9; 130], -1, b""),
        ],
    );
    set.column = 70;
    let r = Row {
        clustering: vec![vec![7; 200], vec![]],
        marker: Some(Marker {
            ts: i64::MIN,
            expiry: None,
        }),
        marker_label: None,
        deletion: Some(Deletion {
            ts: i64::MAX,
            local_del: u32::MAX,
        }),
        cells: vec![
            live(1, -5, b"x"),
            live(300, 0, &[1; 300]),
            set,
            dead(u16::MAX, i64::MAX),
        ],
    };
    let enc = r.encode();
    assert_eq!(enc[0], ROW_V2);
    assert_eq!(Row::decode(&enc).unwrap(), r);
    for cut in 0..enc.len() {
        assert!(Row::decode(&enc[..cut]).is_err());
    }
    let partial = r.encode_partial();
    assert!(is_partial(&partial) && !is_partial(&enc));
    assert_eq!(Row::decode(&partial).unwrap(), r);
    assert_eq!(storage::Merge::complete(&RowMerge, b"", &partial), enc);
    // A varint longer than a u64 is corrupt, not a panic.
    let mut long = vec![ROW_V2];
    long.extend_from_slice(&0i64.to_be_bytes());
    long.extend_from_slice(&[0xff; 11]);
    assert!(Row::decode(&long).is_err());

    let ts = 1_700_000_000_000_000;
    let ycsb = Row {
        clustering: vec![],
        marker: Some(Marker { ts, expiry: None }),
        marker_label: None,
        deletion: None,
        cells: (0..10).map(|c| live(c, ts, &[b'a'; 100])).collect(),
    };
    assert_eq!(ycsb.encode().len(), 1_065);
    assert_eq!(Row::decode(&ycsb.encode()).unwrap(), ycsb);
}

/// A row holding an old-format set cell `{1, 2}` written at 10 with TTL: the bytes the
/// first format wrote (tag 0, the whole value), built by hand so they cannot drift.
fn old_format_row() -> Vec<u8> {
    let value = crate::literal::encode_collection(&[vec![0, 0, 0, 1], vec![0, 0, 0, 2]]);
    let mut b = vec![ROW_V1, 0, 0, 0, 0]; // no clustering, no marker, no deletion
    b.extend_from_slice(&1u32.to_be_bytes()); // one cell
    b.extend_from_slice(&1u16.to_be_bytes()); // column 1
    b.extend_from_slice(&10i64.to_be_bytes());
    b.push(0); // live
    b.push(1); // expiring: ttl 100, expires at 200
    b.extend_from_slice(&100u32.to_be_bytes());
    b.extend_from_slice(&200u32.to_be_bytes());
    b.extend_from_slice(&(value.len() as u32).to_be_bytes());
    b.extend_from_slice(&value);
    b
}

#[test]
fn an_old_format_collection_reads_as_elements_sharing_its_timestamp_and_ttl() {
    let mut r = Row::decode(&old_format_row()).unwrap();
    let ty = set_of_ints();
    let cell = r.cell(1, 150, None).unwrap();
    let want = crate::literal::encode_collection(&[vec![0, 0, 0, 1], vec![0, 0, 0, 2]]);
    assert_eq!(cell.value(&ty, 150).as_deref(), Some(want.as_slice()));
    let els = cell.live_elements(CollectionKind::Set, 150).unwrap();
    assert_eq!(els.elements.len(), 2);
    assert!(els
        .elements
        .iter()
        .all(|e| e.ts == 10 && e.expiry().is_some()));
    // An element written later merges with them one by one.
    r.merge(Row {
        cells: vec![set_cell(None, vec![element(&[0, 0, 0, 3], 20, b"")])],
        ..Row::default()
    });
    assert_eq!(set_items(&r, 150, None).len(), 3);
    // The old elements expire with the old cell's TTL; the new one stays.
    assert_eq!(set_items(&r, 250, None), vec![vec![0, 0, 0, 3]]);
    // And it is written back in the new format.
    assert_eq!(Row::decode(&r.encode()).unwrap(), r);
}

#[test]
fn collection_elements_reconcile_one_by_one_under_the_collection_deletion() {
    // {a@10, b@30}, then an overwrite {c} at 20: deletion at 19 removes a, keeps b.
    let mut r = Row {
        cells: vec![set_cell(
            None,
            vec![element(b"a", 10, b""), element(b"b", 30, b"")],
        )],
        ..Row::default()
    };
    r.merge(Row {
        cells: vec![set_cell(Some(19), vec![element(b"c", 20, b"")])],
        ..Row::default()
    });
    let CellValue::Complex(c) = &r.cells[0].value else {
        panic!("not a collection")
    };
    let paths: Vec<&[u8]> = c.elements.iter().map(|e| e.path.as_slice()).collect();
    assert_eq!(paths, vec![b"b".as_slice(), b"c"]);
    assert_eq!(r.cells[0].ts, 30);
    // An older write of an element loses to the deletion; a tombstone ties and wins.
    r.merge(Row {
        cells: vec![set_cell(None, vec![element(b"d", 15, b"")])],
        ..Row::default()
    });
    r.merge(Row {
        cells: vec![set_cell(
            None,
            vec![Element {
                path: b"b".to_vec(),
                ts: 30,
                value: CellValue::Tombstone { local_del: 1 },
            }],
        )],
        ..Row::default()
    });
    let CellValue::Complex(c) = &r.cells[0].value else {
        panic!("not a collection")
    };
    assert!(c.elements.iter().all(|e| e.path != b"d"));
    assert!(matches!(
        c.elements.iter().find(|e| e.path == b"b").map(|e| &e.value),
        Some(CellValue::Tombstone { .. })
    ));
    // A column tombstone (DELETE s) is a collection deletion.
    r.merge(Row {
        cells: vec![dead(1, 20)],
        ..Row::default()
    });
    assert!(
        r.cell(1, 0, None).is_none(),
        "c@20 is shadowed by the tombstone at 20"
    );
    let enc = r.encode();
    assert_eq!(Row::decode(&enc).unwrap(), r);
    for cut in 0..enc.len() {
        assert!(Row::decode(&enc[..cut]).is_err());
    }
    // Purge after gc grace drops element tombstones and the deletion, then the cell.
    assert!(!r.purge(100, 100));
}

#[test]
fn outer_deletions_hide_older_elements_only() {
    let r = Row {
        cells: vec![set_cell(
            None,
            vec![
                element(&[0, 0, 0, 1], 10, b""),
                element(&[0, 0, 0, 2], 30, b""),
            ],
        )],
        ..Row::default()
    };
    let outer = Some(Deletion {
        ts: 20,
        local_del: 1,
    });
    assert_eq!(set_items(&r, 0, outer), vec![vec![0, 0, 0, 2]]);
    assert!(r.is_live(0, outer));
    assert!(!r.is_live(
        0,
        Some(Deletion {
            ts: 30,
            local_del: 1
        })
    ));
}

/// A xorshift generator from `seed`: each call draws a number below its argument.
fn xorshift(mut seed: u64) -> impl FnMut(u64) -> u64 {
    move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    }
}

/// A random row of up to six cells (column ids 0-5, and 9 for a set) for the in-place
/// readers' tests: timestamp ties, TTLs expiring at 1,000 or 1,001, tombstones and markers;
/// one row in eight holds what only `Row` handles (a deletion, a label, a collection).
fn random_row(next: &mut dyn FnMut(u64) -> u64) -> Row {
    let ts = |t: u64| 1_700_000_000_000_000 + t as i64 - 2;
    let expiry = |next: &mut dyn FnMut(u64) -> u64| {
        (next(3) == 0).then(|| Expiry {
            ttl: 100,
            expires_at: 1_000 + next(2) as u32,
        })
    };
    let mut r = Row::default();
    if next(3) == 0 {
        r.clustering = vec![vec![next(2) as u8; 3]];
    }
    if next(2) == 0 {
        r.marker = Some(Marker {
            ts: ts(next(4)),
            expiry: expiry(next),
        });
    }
    for column in 0..6u16 {
        if next(2) == 0 {
            continue;
        }
        // One cell in four far (seconds) from the row's base: a multi-byte timestamp delta,
        // as a cell an UPDATE wrote after its row's INSERT.
        let t = match next(4) {
            0 => ts(next(4)) + 1_000_000 * (1 + next(3) as i64),
            _ => ts(next(4)),
        };
        r.cells.push(match next(4) {
            0 => Cell {
                column,
                ts: t,
                value: CellValue::Tombstone {
                    local_del: next(2) as u32,
                },
            },
            _ => Cell {
                column,
                ts: t,
                value: CellValue::Live {
                    // One value in eight 120-159 bytes long: its length a varint of one byte
                    // or of two (the in-place reads take a one-byte length at once).
                    value: bytes::Bytes::from(vec![
                        b'a' + next(2) as u8;
                        match next(8) {
                            0 => 120 + next(40) as usize,
                            _ => next(3) as usize,
                        }
                    ]),
                    expiry: expiry(next),
                    label: None,
                },
            },
        });
    }
    // One row in eight holds what the fast path leaves to `Row::merge`.
    match next(24) {
        0 => {
            r.deletion = Some(Deletion {
                ts: ts(1),
                local_del: 7,
            })
        }
        1 => {
            let mut set = set_cell(None, vec![element(b"p", ts(2), b"v")]);
            set.column = 9;
            r.cells.push(set);
        }
        2 => {
            if let Some(c) = r.cells.first_mut() {
                if let CellValue::Live { label, .. } = &mut c.value {
                    *label = Some(b"secret".to_vec().into());
                }
            }
        }
        _ => {}
    }
    r
}

/// A row written straight into the store's buffer (`encode_value`: its length counted, then
/// its bytes written) is byte for byte the row `encode` writes, complete and partial, on random
/// rows (markers, TTLs, tombstones, labels, collections, deletions, 1-2 byte lengths) and on
/// rows whose cell count or value length takes a varint of two or three bytes (a 4 KB value,
/// 200 cells, a 20,000-byte value).
#[test]
fn rows_written_into_the_stores_buffer_are_the_encoded_rows() {
    let mut next = xorshift(0x2545_f491_4f6c_dd1d);
    let mut rows: Vec<Row> = (0..5_000).map(|_| random_row(&mut next)).collect();
    for (n, len) in [(1, 4096), (200, 3), (1, 20_000), (0, 0)] {
        let cells = (0..n)
            .map(|c| live(c as u16, 1_700_000_000_000_000 + c as i64, &vec![b'x'; len]))
            .collect();
        rows.push(Row {
            cells,
            ..Row::default()
        });
    }
    for row in &rows {
        // Built in place, not the fallback's copy.
        let built = row.built_as(ROW_V2).expect("the two passes agree");
        assert_eq!(&*built, row.encode().as_slice());
        let built = row.built_as(ROW_PARTIAL_V2).expect("the two passes agree");
        assert_eq!(&*built, row.encode_partial().as_slice());
        assert_eq!(&*row.encode_value(), row.encode().as_slice());
        assert_eq!(
            &*row.encode_partial_value(),
            row.encode_partial().as_slice()
        );
    }
}

/// `RowMerge`'s fast path (`merge_simple`, rows of simple cells merged in their bytes) gives
/// the bytes the merge through `Row` gives, on random pairs of rows and partial rows with
/// timestamp ties, TTLs, tombstones and markers; rows with what only `Row::merge` handles
/// (a deletion, a label, a collection) take that path.
#[test]
fn merging_simple_rows_in_place_matches_merging_decoded_rows() {
    let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
    let (mut fast, mut slow) = (0, 0);
    for _ in 0..20_000 {
        let newer = random_row(&mut next).encode_partial();
        let older = match next(2) {
            0 => random_row(&mut next).encode(),
            _ => random_row(&mut next).encode_partial(),
        };
        let merged = storage::Merge::merge(&RowMerge, b"", &newer, &older);
        assert_eq!(merged, merge_rows(&newer, &older));
        match merge_simple(&newer, &older) {
            Some(_) => fast += 1,
            None => slow += 1,
        }
    }
    assert!(fast > 14_000 && slow > 2_000, "fast {fast}, slow {slow}");
}

/// The compaction filter's fast path (`purge_keeps_as_is`, a row read in its bytes) keeps a
/// row as it is exactly when purging the decoded row keeps it unchanged, for every row it
/// reads in place (no deletion, label or collection), on random rows and partial rows with
/// TTLs due or not, tombstones past gc or not and expiring markers; it fails if a due expiry,
/// a tombstone to drop or a marker to drop is missed.
#[test]
fn purging_rows_read_in_place_matches_purging_decoded_rows() {
    let mut next = xorshift(0x51_7cc1_b727_220a);
    let (mut as_is, mut changed) = (0, 0);
    for i in 0..20_000 {
        let row = random_row(&mut next);
        let bytes = match i % 2 {
            0 => row.encode(),
            _ => row.encode_partial(),
        };
        let now = 999 + next(3) as u32;
        let gc_before = [0, 1, 2, 1_001, 1_002][next(5) as usize];
        let decoded = Row::decode(&bytes).unwrap();
        let mut purged = decoded.clone();
        let kept_as_is = purged.purge(now, gc_before) && purged == decoded;
        let in_place = decoded.deletion.is_none()
            && decoded.marker_label.is_none()
            && decoded.cells.iter().all(|c| {
                matches!(
                    &c.value,
                    CellValue::Live { label: None, .. } | CellValue::Tombstone { .. }
                )
            });
        let fast = purge_keeps_as_is(&bytes, now, gc_before);
        assert_eq!(
            fast,
            in_place && kept_as_is,
            "{decoded:?} at {now}, gc before {gc_before}"
        );
        if fast {
            as_is += 1;
        } else if in_place {
            changed += 1;
        }
    }
    assert!(
        as_is > 4_000 && changed > 4_000,
        "as is {as_is}, changed {changed}"
    );
}

/// A plain read's in-place row (`PlainRow`) gives the values, clustering and liveness the
/// decoded `Row` gives, and is refused (the read decodes instead) for exactly the rows that
/// hold a deletion, a label, a collection, a tombstone, a value or marker expired at the read's
/// time, or nothing live.
#[test]
fn plain_rows_read_in_place_match_decoded_rows() {
    let mut next = xorshift(0x2545_f491_4f6c_dd1d);
    let (mut plain, mut decoded) = (0, 0);
    for i in 0..20_000 {
        let row = random_row(&mut next);
        let bytes = match i % 2 {
            0 => row.encode(),
            _ => row.encode_partial(),
        };
        let shared = bytes::Bytes::from(bytes.clone());
        let row = Row::decode_shared(&shared).unwrap();
        let now = 999 + next(3) as u32;
        let simple = row.deletion.is_none()
            && row.marker_label.is_none()
            && row.marker.is_none_or(|m| m.is_live(now))
            && row.cells.iter().all(|c| {
                matches!(&c.value, CellValue::Live { label: None, .. })
                    && c.live_value(now).is_some()
            });
        let expected = simple && row.is_live(now, None);
        let mut p = PlainRow::default();
        match p.read(&bytes, now) {
            true => {
                plain += 1;
                assert!(expected, "{row:?} at {now}");
                // Columns asked in stored order (the cursor's case), in reverse, and each
                // twice in a row (`SELECT a, a`), each with its own cursor.
                let orders = [
                    (0..10u16).collect::<Vec<_>>(),
                    (0..10u16).rev().collect(),
                    (0..10u16).flat_map(|c| [c, c]).collect(),
                ];
                for order in orders {
                    let mut cursor = 0;
                    for column in order {
                        let want = row.value(column, &proto::types::ColumnType::Blob, now, None);
                        assert_eq!(
                            p.value(column, &mut cursor),
                            want.as_deref(),
                            "{row:?} column {column}"
                        );
                    }
                }
                for (i, c) in row.clustering.iter().enumerate() {
                    assert_eq!(p.clustering(i), Some(c.as_slice()));
                }
                assert_eq!(p.clustering(row.clustering.len()), None);
                assert_eq!(
                    p.value_bytes(),
                    row.value_bytes() + row.clustering.iter().map(Vec::len).sum::<usize>()
                );
            }
            false => {
                decoded += 1;
                assert!(!expected, "{row:?} at {now}");
            }
        };
    }
    assert!(
        plain > 4_000 && decoded > 4_000,
        "plain {plain}, decoded {decoded}"
    );
}

/// A read naming some columns skips the cells of the others older than the row's marker, even
/// an expired one (Cassandra's `BTreeRow.filter`): such cells alone do not keep the row.
#[test]
fn cells_older_than_the_marker_count_only_for_the_columns_read() {
    let cell = |column: u16, ts: i64| Cell {
        column,
        ts,
        value: CellValue::Live {
            value: bytes::Bytes::from_static(b"v"),
            expiry: None,
            label: None,
        },
    };
    let expired = Marker {
        ts: 20,
        expiry: Some(Expiry {
            ttl: 1,
            expires_at: 100,
        }),
    };
    let row = Row {
        clustering: vec![vec![1]],
        marker: Some(expired),
        cells: vec![cell(1, 10)],
        ..Row::default()
    };
    assert!(row.is_live(200, None));
    assert!(row.is_live_for(200, None, |c| c == 1));
    assert!(!row.is_live_for(200, None, |c| c == 2));
    // Before the expiry the marker keeps the row.
    assert!(row.is_live_for(50, None, |c| c == 2));
    // A cell as new as the marker counts.
    let same = Row {
        cells: vec![cell(1, 20)],
        ..row.clone()
    };
    assert!(same.is_live_for(200, None, |c| c == 2));
    // A marker a range deletion shadows skips nothing.
    let outer = Some(Deletion {
        ts: 25,
        local_del: 0,
    });
    let newer = Row {
        cells: vec![cell(1, 30)],
        ..row.clone()
    };
    assert!(newer.is_live_for(200, outer, |c| c == 2));
    // Without a marker every live cell counts.
    let unmarked = Row {
        marker: None,
        ..row
    };
    assert!(unmarked.is_live_for(200, None, |c| c == 2));
}

/// The in-place reads' varint length (a word at a time where eight bytes are left) is the
/// first byte under 0x80 among the first ten, for varints of every length, cut short or not.
#[test]
fn varint_lengths_read_a_word_at_a_time_match_a_byte_search() {
    let by_bytes = |b: &[u8]| Some(1 + b.iter().take(10).position(|&x| x < 0x80)?);
    for len in 1..=11 {
        for tail in [&[][..], &[0x05], &[0xff, 0x01], &[0x80; 9]] {
            let mut bytes = vec![0x80u8; len - 1];
            bytes.push(0x7f);
            bytes.extend_from_slice(tail);
            for cut in 0..=bytes.len() {
                let b = &bytes[..cut];
                assert_eq!(super::in_place::varint_len(b), by_bytes(b), "{b:?}");
            }
        }
    }
}
