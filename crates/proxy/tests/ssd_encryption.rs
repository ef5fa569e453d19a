//! The proxy's SSD cache tier with `encryption_at_rest`: cached rows are in no file of the tier
//! in clear (journal before a flush, tables after), and read back. Its own test binary because
//! the storage's cipher is process-wide and the crate's unit tests open tiers without one.

use std::sync::Arc;
use std::time::{Duration, Instant};

use proto::response::{ColumnSpec, RowsBuilder, RowsMetadata};
use proto::types::{ColumnType, Value};
use proxy::ssd::SsdTier;

const MARKER: &[u8] = b"cached-Tlaloc-5521";

fn files_containing(dir: &std::path::Path, needle: &[u8]) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if std::fs::read(&p)
                .unwrap()
                .windows(needle.len())
                .any(|w| w == needle)
            {
                found.push(p);
            }
        }
    }
    found
}

#[test]
fn cached_rows_are_sealed_on_the_ssd_tier() {
    let dir = std::env::temp_dir().join(format!("peregrine-ssd-enc-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let keys = storage::KeySet::from_keys("test", &[(1, [5; 32])]).unwrap();
    let tier = SsdTier::open(&dir, 1 << 24, Some(keys)).unwrap();
    let mut b = RowsBuilder::new();
    b.push_value(&Value::Int(7));
    b.push_cell(Some(MARKER));
    b.end_row();
    let rows = b.finish(RowsMetadata {
        columns: vec![
            ColumnSpec {
                keyspace: "ks".into(),
                table: "t".into(),
                name: "k".into(),
                ty: ColumnType::Int,
            },
            ColumnSpec {
                keyspace: "ks".into(),
                table: "t".into(),
                name: "v".into(),
                ty: ColumnType::Blob,
            },
        ]
        .into(),
        ..RowsMetadata::default()
    });
    let expires = Instant::now() + Duration::from_secs(60);
    for i in 0..50u8 {
        tier.put(
            [MARKER, &[i]].concat().into_boxed_slice(),
            [1, 2, 3, 4],
            expires,
            Arc::new(rows.clone()),
        );
    }
    tier.flush();
    assert!(dir
        .join("proxy-ssd-cache")
        .join("encryption.check")
        .exists());
    assert_eq!(
        files_containing(&dir, MARKER),
        Vec::<std::path::PathBuf>::new()
    );
    let got = tier.get(&[MARKER, &[3]].concat()).expect("cached");
    assert_eq!(got.rows, rows);
    drop(tier);
    assert_eq!(
        files_containing(&dir, MARKER),
        Vec::<std::path::PathBuf>::new()
    );
    // The control: without a key set the same rows are found in clear, so the grep can fail.
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let plain = SsdTier::open(&dir, 1 << 24, None).unwrap();
    plain.put(
        MARKER.to_vec().into_boxed_slice(),
        [1, 2, 3, 4],
        expires,
        Arc::new(rows),
    );
    plain.flush();
    assert!(!files_containing(&dir, MARKER).is_empty());
    drop(plain);
    let _ = std::fs::remove_dir_all(&dir);
}
