//! The point read's own path (`SelectRun::point`) answers exactly what the general one
//! answers: the same result bytes, row count, paging state, warnings and errors.

use super::{POINT_PATH_OFF, POINT_READS};
use crate::exec::BoundValue;
use crate::tests::{at, q, setup};
use crate::{Engine, Outcome, QueryOptions, Values};
use bytes::Bytes;
use proto::error::DbError;

fn int(v: i32) -> BoundValue {
    BoundValue::Bytes(Bytes::copy_from_slice(&v.to_be_bytes()))
}

fn text(v: &str) -> BoundValue {
    BoundValue::Bytes(Bytes::copy_from_slice(v.as_bytes()))
}

/// Tables with rows of every kind a point read meets: live, missing, with nulls,
/// collections, statics, expired cells (TTL 10 s written at 1000 s, read at 2000 s), deleted
/// cells, rows, ranges and partitions.
fn store() -> Engine {
    let e = setup();
    let ks = Some("ks");
    for s in [
        "CREATE TABLE kv (k text PRIMARY KEY, a int, b text, l list<int>, m map<text, int>, s set<int>)",
        "CREATE TABLE ck (k int, c1 int, c2 text, st int static, v int, w text, PRIMARY KEY (k, c1, c2)) WITH CLUSTERING ORDER BY (c1 ASC, c2 DESC)",
        "INSERT INTO kv (k, a, b, l, m, s) VALUES ('full', 1, 'one', [1, 2], {'x': 1}, {3, 4})",
        "INSERT INTO kv (k, a) VALUES ('nulls', 2)",
        "INSERT INTO kv (k, a, b) VALUES ('expiring', 3, 'gone') USING TTL 10",
        "INSERT INTO kv (k, a, b) VALUES ('half', 4, 'kept')",
        "UPDATE kv USING TTL 10 SET b = 'short' WHERE k = 'half'",
        "INSERT INTO kv (k, a, b) VALUES ('deleted', 5, 'x')",
        "DELETE FROM kv WHERE k = 'deleted'",
        "INSERT INTO kv (k, a, b, l) VALUES ('cells', 6, 'y', [7])",
        "DELETE b, l FROM kv WHERE k = 'cells'",
        "INSERT INTO kv (k, b) VALUES ('zero\u{0}byte', 'escaped')",
        "INSERT INTO ck (k, c1, c2, st, v, w) VALUES (1, 1, 'a', 10, 100, 'w1')",
        "INSERT INTO ck (k, c1, c2, v) VALUES (1, 1, 'b', 101)",
        "INSERT INTO ck (k, c1, c2, v, w) VALUES (1, 2, 'a', 102, 'w2')",
        "DELETE FROM ck WHERE k = 1 AND c1 = 2",
        "INSERT INTO ck (k, c1, c2, v) VALUES (1, 3, '', 103)",
        "INSERT INTO ck (k, st) VALUES (2, 20)",
        "INSERT INTO ck (k, c1, c2, v) VALUES (3, 1, 'a', 300) USING TTL 10",
        "INSERT INTO ck (k, c1, c2, v) VALUES (4, 1, 'a', 400)",
        "DELETE FROM ck WHERE k = 4",
        "INSERT INTO ck (k, c1, c2, v) VALUES (5, 1, 'a', 500)",
        "DELETE v FROM ck WHERE k = 5 AND c1 = 1 AND c2 = 'a'",
    ] {
        q(&e, ks, s).unwrap();
    }
    e
}

/// An outcome as it prints, a result's rows without the head room in front of them (its
/// bytes are checked: zeros).
fn shown(r: Result<Outcome, DbError>) -> String {
    match r {
        Ok(Outcome::Rows(mut rs)) => {
            let room = std::mem::take(&mut rs.head_room);
            assert!(rs.data[..room].iter().all(|b| *b == 0));
            if room > 0 {
                HEAD_ROOMS.set(HEAD_ROOMS.get() + 1);
            }
            rs.data.drain(..room);
            format!("{rs:?}")
        }
        other => format!("{other:?}"),
    }
}

thread_local! {
    /// Results that came with head room.
    static HEAD_ROOMS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Every statement with every set of values and page size, through `e` with the point
/// path on or off: the outcomes as they print (bytes included).
fn run_all(e: &Engine, point_path: bool) -> Vec<String> {
    POINT_PATH_OFF.set(!point_path);
    let keys_kv: Vec<Vec<BoundValue>> = [
        "full",
        "nulls",
        "expiring",
        "half",
        "deleted",
        "cells",
        "zero\0byte",
        "missing",
    ]
    .into_iter()
    .map(|k| vec![text(k)])
    .chain([
        vec![BoundValue::Null],
        vec![text("")],
        vec![BoundValue::Unset],
    ])
    .collect();
    let mut keys_ck: Vec<Vec<BoundValue>> = Vec::new();
    for k in 1..=6 {
        for (c1, c2) in [(1, "a"), (1, "b"), (2, "a"), (3, ""), (9, "z")] {
            keys_ck.push(vec![int(k), int(c1), text(c2)]);
        }
    }
    keys_ck.push(vec![int(1), BoundValue::Null, text("a")]);
    keys_ck.push(vec![int(1), int(1), BoundValue::Unset]);
    keys_ck.push(vec![BoundValue::Null, int(1), text("a")]);
    keys_ck.push(vec![
        int(1),
        BoundValue::Bytes(Bytes::from_static(b"xy")),
        text("a"),
    ]);
    let statements: Vec<(&str, &Vec<Vec<BoundValue>>)> = vec![
        ("SELECT * FROM kv WHERE k = ?", &keys_kv),
        (
            "SELECT a, b, writetime(a), ttl(b) FROM kv WHERE k = ?",
            &keys_kv,
        ),
        ("SELECT k, l, m, s FROM kv WHERE k = ?", &keys_kv),
        ("SELECT JSON * FROM kv WHERE k = ?", &keys_kv),
        (
            "SELECT * FROM ck WHERE k = ? AND c1 = ? AND c2 = ?",
            &keys_ck,
        ),
        (
            "SELECT st, v, w FROM ck WHERE k = ? AND c1 = ? AND c2 = ?",
            &keys_ck,
        ),
        (
            "SELECT v, writetime(v), ttl(v), st FROM ck WHERE k = ? AND c2 = ? AND c1 = ?",
            &keys_ck,
        ),
        (
            "SELECT c2, v FROM ck WHERE k = ? AND c1 = ? AND c2 = ? LIMIT 1",
            &keys_ck,
        ),
    ];
    let mut out = Vec::new();
    for (text, value_sets) in statements {
        let p = e.prepare(text, Some("ks"), at(1000)).unwrap();
        for values in value_sets {
            for page_size in [None, Some(1), Some(5000)] {
                let opts = QueryOptions {
                    keyspace: Some("ks".into()),
                    page_size,
                    result_head_room: 32,
                    ..Default::default()
                };
                let r = e.execute(&p.id, Values::Positional(values.clone()), &opts, at(2000));
                out.push(format!("{text} {values:?} {page_size:?}: {}", shown(r)));
            }
        }
    }
    // A literal key, and a read named by a constant row.
    for text in [
        "SELECT * FROM kv WHERE k = 'full'",
        "SELECT * FROM ck WHERE k = 1 AND c1 = 1 AND c2 = 'a'",
    ] {
        let p = e.prepare(text, Some("ks"), at(1000)).unwrap();
        let r = e.execute(
            &p.id,
            Values::Positional(vec![]),
            &QueryOptions::default(),
            at(2000),
        );
        out.push(format!("{text}: {}", shown(r)));
    }
    POINT_PATH_OFF.set(false);
    out
}

#[test]
fn point_reads_answer_the_bytes_of_the_general_path() {
    let e = store();
    // A tombstone warning at the first one met, so warnings are compared too.
    e.set_tombstone_thresholds(super::tombstones::TombstoneThresholds {
        warn: 0,
        fail: 1000,
    });
    let before = POINT_READS.get();
    let general = run_all(&e, false);
    assert_eq!(
        POINT_READS.get(),
        before,
        "the general path took no point read"
    );
    assert_eq!(HEAD_ROOMS.get(), 0, "the general path leaves no head room");
    let point = run_all(&e, true);
    let taken = POINT_READS.get() - before;
    assert!(taken > 300, "the point path was taken ({taken} times)");
    assert!(
        HEAD_ROOMS.get() > 50,
        "point reads left head room ({})",
        HEAD_ROOMS.get()
    );
    assert_eq!(general.len(), point.len());
    for (g, p) in general.iter().zip(&point) {
        assert_eq!(g, p);
    }
    // The comparison covers rows, misses, warnings, paging states and errors.
    let all = general.join("\n");
    assert!(
        all.contains("rows: 1,") && all.contains("rows: 0,"),
        "{all}"
    );
    assert!(all.contains("paging_state: Some("), "{all}");
    assert!(all.contains("warnings: [\""), "{all}");
    assert!(
        all.contains("Invalid null value") && all.contains("Key may not be empty"),
        "{all}"
    );
}
