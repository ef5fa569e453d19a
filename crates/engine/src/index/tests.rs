//! Model test: after random write sequences (every write path, with TTLs, old timestamps,
//! BATCH, LWT, restarts), every indexed query answers exactly what a full scan filtered in
//! the test answers, in the same order, paged or not.

use crate::tests::{node, values as decode};
use crate::{Engine, Now, Outcome, QueryOptions, Values};
use proto::types::Value;
use std::sync::Arc;

/// xorshift64*: a fixed seed gives the same sequence on every run.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> i64 {
        (self.next() % n) as i64
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent as i64
    }
}

fn now(secs: u32) -> Now {
    Now {
        micros: secs as i64 * 1_000_000,
        secs,
    }
}

pub(crate) fn run(
    e: &Engine,
    text: &str,
    secs: u32,
    page: Option<(i32, Option<Vec<u8>>)>,
) -> Outcome {
    let opts = QueryOptions {
        keyspace: Some("ks".into()),
        page_size: page.as_ref().map(|p| p.0),
        paging_state: page.and_then(|p| p.1),
        ..Default::default()
    };
    e.query(text, Values::Positional(vec![]), &opts, now(secs))
        .unwrap_or_else(|err| panic!("{text}: {err:?}"))
}

pub(crate) fn select(e: &Engine, text: &str, secs: u32) -> Vec<Vec<Value>> {
    decode(run(e, text, secs, None)).0
}

/// The same query fetched in pages of `size`.
pub(crate) fn select_paged(e: &Engine, text: &str, secs: u32, size: i32) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    let mut state = None;
    loop {
        let (rows, next) = decode(run(e, text, secs, Some((size, state))));
        out.extend(rows);
        match next {
            Some(s) => state = Some(s),
            None => return out,
        }
    }
}

fn int(v: &Value) -> Option<i32> {
    match v {
        Value::Int(i) => Some(*i),
        _ => None,
    }
}

fn list(v: &Value) -> Vec<i32> {
    match v {
        Value::List(items) => items.iter().filter_map(int).collect(),
        _ => Vec::new(),
    }
}

fn map(v: &Value) -> Vec<(i32, i32)> {
    match v {
        Value::Map(items) => items
            .iter()
            .filter_map(|(k, v)| Some((int(k)?, int(v)?)))
            .collect(),
        _ => Vec::new(),
    }
}

fn ttl(rng: &mut Rng) -> String {
    if rng.chance(20) {
        format!(" USING TTL {}", 1 + rng.below(3))
    } else if rng.chance(10) {
        // An older write: loses to what is stored, must leave the index as it was.
        format!(" USING TIMESTAMP {}", rng.below(1_000_000))
    } else {
        String::new()
    }
}

pub(crate) fn random_write(rng: &mut Rng) -> String {
    let (k, c) = (rng.below(6), rng.below(4));
    let (v, w) = (rng.below(5), rng.below(21) - 10);
    let elems: Vec<String> = (0..rng.below(3))
        .map(|_| rng.below(5).to_string())
        .collect();
    let entries: Vec<String> = (0..rng.below(3))
        .map(|_| format!("{}: {}", rng.below(4), rng.below(4)))
        .collect();
    match rng.below(14) {
        0..=2 => format!(
            "INSERT INTO t (k, c, v, w, l, m) VALUES ({k}, {c}, {v}, {w}, [{}], {{{}}}){}",
            elems.join(", "),
            entries.join(", "),
            ttl(rng)
        ),
        3 => format!("UPDATE t{} SET v = {v} WHERE k = {k} AND c = {c}", ttl(rng)),
        4 => format!("UPDATE t{} SET w = {w} WHERE k = {k} AND c = {c}", ttl(rng)),
        5 => format!("UPDATE t{} SET s = {} WHERE k = {k}", ttl(rng), rng.below(3)),
        6 => format!(
            "UPDATE t SET l = l + [{}] WHERE k = {k} AND c = {c}",
            rng.below(5)
        ),
        7 => format!(
            "UPDATE t SET l = l - [{}] WHERE k = {k} AND c = {c}",
            rng.below(5)
        ),
        8 => format!(
            "UPDATE t{} SET m[{}] = {} WHERE k = {k} AND c = {c}",
            ttl(rng),
            rng.below(4),
            rng.below(4)
        ),
        9 => format!("DELETE m[{}] FROM t WHERE k = {k} AND c = {c}", rng.below(4)),
        10 => format!("DELETE v, w FROM t WHERE k = {k} AND c = {c}"),
        11 => match rng.below(3) {
            0 => format!("DELETE FROM t WHERE k = {k} AND c = {c}"),
            1 => format!("DELETE FROM t WHERE k = {k} AND c >= {c}"),
            _ => format!("DELETE FROM t WHERE k = {k}"),
        },
        12 => format!(
            "BEGIN BATCH UPDATE t SET v = {v} WHERE k = {k} AND c = {c}; DELETE FROM t WHERE k = {} AND c = {}; APPLY BATCH",
            rng.below(6),
            rng.below(4)
        ),
        _ => format!(
            "UPDATE t SET v = {v} WHERE k = {k} AND c = {c} IF v = {}",
            rng.below(5)
        ),
    }
}

/// Every indexed query against the full scan, unpaged and in pages of 2.
fn check(e: &Engine, secs: u32, rng: &mut Rng, step: usize) {
    // The entries are exactly those of the stored rows: no stale one (writes delete the
    // entries of what they replace), none missing.
    assert_eq!(
        e.check_indexes().unwrap(),
        Vec::<String>::new(),
        "step {step}"
    );
    assert_eq!(
        e.stale_index_entries().unwrap(),
        Vec::<String>::new(),
        "step {step}"
    );
    // k, c, v, w, s, l, m of every row (a partition with only statics is one row with c
    // null: only a query on the static column can match it, as in Cassandra).
    let all: Vec<Vec<Value>> = select(e, "SELECT k, c, v, w, s, l, m FROM t", secs);
    assert!(
        step == 0 || !all.is_empty(),
        "step {step}: the table emptied out"
    );
    let (x, y) = (rng.below(5) as i32, rng.below(4) as i32);
    let (lo, hi) = (rng.below(21) as i32 - 10, rng.below(21) as i32 - 10);
    type Pred = Box<dyn Fn(&[Value]) -> bool>;
    let cases: Vec<(String, Pred)> = vec![
        (format!("v = {x}"), Box::new(move |r| int(&r[2]) == Some(x))),
        (
            format!("w > {lo}"),
            Box::new(move |r| int(&r[3]).is_some_and(|w| w > lo)),
        ),
        (
            format!("w >= {lo} AND w < {hi}"),
            Box::new(move |r| int(&r[3]).is_some_and(|w| w >= lo && w < hi)),
        ),
        (
            format!("s = {}", y % 3),
            Box::new(move |r| int(&r[4]) == Some(y % 3)),
        ),
        (
            format!("l CONTAINS {x}"),
            Box::new(move |r| list(&r[5]).contains(&x)),
        ),
        (
            format!("m CONTAINS KEY {y}"),
            Box::new(move |r| map(&r[6]).iter().any(|(k, _)| *k == y)),
        ),
        (
            format!("m[{y}] = {}", x % 4),
            Box::new(move |r| map(&r[6]).contains(&(y, x % 4))),
        ),
        (format!("c = {y}"), Box::new(move |r| int(&r[1]) == Some(y))),
    ];
    for (cond, pred) in cases {
        let want: Vec<(Value, Value)> = all
            .iter()
            .filter(|r| pred(r))
            .map(|r| (r[0].clone(), r[1].clone()))
            .collect();
        let text = format!("SELECT k, c FROM t WHERE {cond}");
        let got: Vec<(Value, Value)> = select(e, &text, secs)
            .into_iter()
            .map(|r| (r[0].clone(), r[1].clone()))
            .collect();
        assert_eq!(got, want, "step {step}: {text}");
        let paged: Vec<(Value, Value)> = select_paged(e, &text, secs, 2)
            .into_iter()
            .map(|r| (r[0].clone(), r[1].clone()))
            .collect();
        assert_eq!(paged, want, "step {step}, pages of 2: {text}");
    }
}

/// A store whose writes read their rows, and one that merges partial rows (the server's: row
/// writes that only set cells are blind, `exec.rs`).
fn reading_and_merging_stores() -> [Arc<dyn storage::Storage>; 2] {
    [
        Arc::new(storage::MemStorage::new()),
        Arc::new(storage::MemStorage::with_merge(Arc::new(
            crate::row::RowMerge,
        ))),
    ]
}

#[test]
fn indexed_queries_agree_with_a_full_scan_after_random_writes() {
    for store in reading_and_merging_stores() {
        queries_agree_with_a_full_scan_after_random_writes(store);
    }
}

fn queries_agree_with_a_full_scan_after_random_writes(store: Arc<dyn storage::Storage>) {
    let mut e = Engine::open(store.clone(), node()).unwrap();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut secs = 1_000;
    run(&e, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", secs, None);
    run(&e, "CREATE TABLE t (k int, c int, v int, w int, s int static, l list<int>, m map<int, int>, PRIMARY KEY (k, c))", secs, None);
    // Some data first: the indexes are built over it.
    for _ in 0..40 {
        run(&e, &random_write(&mut rng), secs, None);
    }
    for ddl in [
        "CREATE INDEX ON t (v)",
        "CREATE INDEX ON t (w) USING 'sai'",
        "CREATE INDEX ON t (s)",
        "CREATE INDEX ON t (l)",
        "CREATE INDEX ON t (keys(m)) USING 'sai'",
        "CREATE INDEX ON t (entries(m))",
        "CREATE INDEX ON t (c)",
    ] {
        run(&e, ddl, secs, None);
    }
    check(&e, secs, &mut rng, 0);
    for step in 1..=400 {
        secs += 1;
        run(&e, &random_write(&mut rng), secs, None);
        if step % 5 == 0 {
            check(&e, secs, &mut rng, step);
        }
        if step % 50 == 0 {
            // Nothing for a sweep to remove: the writes deleted what they made stale.
            assert_eq!(e.sweep_index_entries().unwrap().removed, 0, "step {step}");
            check(&e, secs, &mut rng, step);
        }
        if step % 150 == 0 {
            // A restart: the schema and every entry come back from storage.
            drop(e);
            e = Engine::open(store.clone(), node()).unwrap();
            check(&e, secs, &mut rng, step);
        }
    }
}

#[test]
fn overwrites_delete_the_entries_they_replace_and_losing_writes_keep_them() {
    for store in reading_and_merging_stores() {
        overwrites_delete_replaced_entries(store);
    }
}

fn overwrites_delete_replaced_entries(store: Arc<dyn storage::Storage>) {
    let e = Engine::open(store.clone(), node()).unwrap();
    run(&e, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", 1, None);
    run(
        &e,
        "CREATE TABLE t (k int PRIMARY KEY, v int, w int)",
        1,
        None,
    );
    run(&e, "CREATE INDEX ON t (v)", 1, None);
    for round in 0..5 {
        for k in 0..50 {
            run(
                &e,
                &format!(
                    "UPDATE t SET v = {}, w = {round} WHERE k = {k}",
                    (k + round) % 7
                ),
                1,
                None,
            );
            // A write of a column no index holds (blind on the merging store) changes no
            // entry.
            run(&e, &format!("UPDATE t SET w = {k} WHERE k = {k}"), 1, None);
        }
    }
    // Each row has had 5 values, and has one entry: each overwrite deleted the one before.
    assert_eq!(entry_count(store.as_ref()), 50);
    let keys_with = |v: i64| -> Vec<i64> {
        let mut got: Vec<i64> = select(&e, &format!("SELECT k FROM t WHERE v = {v}"), 1)
            .iter()
            .filter_map(|r| int(&r[0]).map(i64::from))
            .collect();
        got.sort_unstable();
        got
    };
    let want: Vec<i64> = (0..50).filter(|k| (k + 4) % 7 == 1).collect();
    assert_eq!(keys_with(1), want);
    // A write older than the stored value loses to it: the row keeps its value, so its entry
    // stays, and the losing value gets none.
    run(
        &e,
        "UPDATE t USING TIMESTAMP 1 SET v = 100 WHERE k = 3",
        1,
        None,
    );
    assert_eq!(entry_count(store.as_ref()), 50);
    assert_eq!(keys_with(100), Vec::<i64>::new());
    assert_eq!(keys_with(0), vec![3, 10, 17, 24, 31, 38, 45]);
    assert_eq!(e.stale_index_entries().unwrap(), Vec::<String>::new());
    let sweep = e.sweep_index_entries().unwrap();
    assert_eq!((sweep.entries, sweep.removed), (50, 0));
    // A row deletion and a cell deletion delete the row's entry.
    run(&e, "DELETE FROM t WHERE k = 3", 1, None);
    run(&e, "DELETE v FROM t WHERE k = 4", 1, None);
    assert_eq!(entry_count(store.as_ref()), 48);
    assert_eq!(keys_with(0), vec![10, 17, 24, 31, 38, 45]);
    // An entry no row has (as a store written before writes deleted what they replaced may
    // hold: here a row is removed under the engine's feet) is the sweep's.
    assert_eq!(remove_rows_underfoot(&e, &store, 1), 1);
    assert_eq!(e.stale_index_entries().unwrap().len(), 1);
    assert_eq!(e.sweep_index_entries().unwrap().removed, 1);
    assert_eq!(entry_count(store.as_ref()), 47);
    run(&e, "TRUNCATE t", 1, None);
    let rows = select(&e, "SELECT k FROM t WHERE v = 1", 1);
    assert!(rows.is_empty());
}

/// Deletes the first `n` rows of `ks.t` from the store under the engine's feet, leaving
/// their index entries stale, as a store written before writes deleted the entries they
/// replace may hold them. Returns how many it deleted.
pub(crate) fn remove_rows_underfoot(
    e: &Engine,
    store: &Arc<dyn storage::Storage>,
    n: usize,
) -> usize {
    let t = e.schema().table("ks", "t").unwrap().id;
    let start = crate::keys::table_prefix(t);
    let end = crate::keys::prefix_end(&start);
    let mut gone = storage::WriteBatch::new();
    let mut count = 0;
    for item in store.scan(
        std::ops::Bound::Included(start.as_slice()),
        std::ops::Bound::Excluded(end.as_slice()),
        false,
    ) {
        let key = item.unwrap().0;
        if count < n && crate::keys::decode_key(&key).is_some_and(|d| !d.is_header) {
            gone.delete(key);
            count += 1;
        }
    }
    store.write(gone).unwrap();
    count
}

/// An element a collection operation adds under an older timestamp than the row's deletion
/// is shadowed: it is not stored, so it has no entry, and a blind write of another column
/// (merged onto the row in the storage, which drops what the row's deletion shadows) leaves
/// the row's entries as they are. Found by `tests/blind_index_writes.rs` (a stale entry).
#[test]
fn a_shadowed_element_has_no_entry_and_a_blind_write_beside_it_changes_none() {
    for store in reading_and_merging_stores() {
        let e = Engine::open(store.clone(), node()).unwrap();
        run(&e, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", 1, None);
        run(
            &e,
            "CREATE TABLE t (k int, c int, x int, l list<int>, PRIMARY KEY (k, c))",
            1,
            None,
        );
        run(&e, "CREATE INDEX ON t (l)", 1, None);
        run(
            &e,
            "INSERT INTO t (k, c, l) VALUES (1, 0, [1]) USING TIMESTAMP 100",
            1,
            None,
        );
        run(
            &e,
            "DELETE FROM t USING TIMESTAMP 300 WHERE k = 1 AND c = 0",
            1,
            None,
        );
        run(
            &e,
            "UPDATE t USING TIMESTAMP 200 SET l = l + [2] WHERE k = 1 AND c = 0",
            1,
            None,
        );
        assert_eq!(entry_count(store.as_ref()), 0);
        run(&e, "UPDATE t SET x = 1 WHERE k = 1 AND c = 0", 1, None);
        assert_eq!(e.check_indexes().unwrap(), Vec::<String>::new());
        assert_eq!(e.stale_index_entries().unwrap(), Vec::<String>::new());
        assert!(select(&e, "SELECT k FROM t WHERE l CONTAINS 2", 1).is_empty());
        assert_eq!(select(&e, "SELECT k FROM t", 1).len(), 1);
    }
}

#[test]
fn a_sweep_is_due_after_start_up_and_not_right_after_a_sweep() {
    let e = Engine::open(Arc::new(storage::MemStorage::new()), node()).unwrap();
    assert!(e.index_builds().sweep_due());
    e.sweep_index_entries().unwrap();
    assert!(!e.index_builds().sweep_due());
}

/// The rows (by `k`) a query returns, sorted.
fn keys_of(e: &Engine, text: &str, secs: u32) -> Vec<i32> {
    let mut k: Vec<i32> = select(e, text, secs)
        .iter()
        .filter_map(|r| int(&r[0]))
        .collect();
    k.sort_unstable();
    k
}

#[test]
fn stale_entries_never_answer_back_and_forth_deletes_old_timestamps_ttls_collections() {
    for store in reading_and_merging_stores() {
        back_and_forth_deletes_old_timestamps_ttls_collections(store);
    }
}

fn back_and_forth_deletes_old_timestamps_ttls_collections(store: Arc<dyn storage::Storage>) {
    let mut e = Engine::open(store.clone(), node()).unwrap();
    run(&e, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", 1, None);
    run(&e, "CREATE TABLE t (k int, c int, v int, n text, s int static, l list<int>, m map<int, int>, PRIMARY KEY (k, c))", 1, None);
    for ddl in [
        "CREATE INDEX ON t (v) USING 'sai'",
        "CREATE INDEX ON t (n) USING 'sai' WITH OPTIONS = {'case_sensitive': 'false'}",
        "CREATE INDEX ON t (s) USING 'sai'",
        "CREATE INDEX ON t (l) USING 'sai'",
        "CREATE INDEX ON t (keys(m)) USING 'sai'",
        "CREATE INDEX ON t (entries(m))",
    ] {
        run(&e, ddl, 1, None);
    }
    let writes = [
        // A -> B -> A on one row; another row stays at B.
        "INSERT INTO t (k, c, v, n, l, m) VALUES (1, 0, 10, 'Abc', [1, 2], {1: 1}) USING TIMESTAMP 100",
        "INSERT INTO t (k, c, v, n) VALUES (2, 0, 20, 'xyz') USING TIMESTAMP 100",
        "UPDATE t USING TIMESTAMP 200 SET v = 20, n = 'Xyz', l = [3], m = {2: 2} WHERE k = 1 AND c = 0",
        "UPDATE t USING TIMESTAMP 300 SET v = 10, n = 'ABC' WHERE k = 1 AND c = 0",
        // An older write loses: the row keeps v = 10, its entry for 30 is never live.
        "UPDATE t USING TIMESTAMP 150 SET v = 30, l = l + [7] WHERE k = 1 AND c = 0",
        // The same without a collection operation (blind if it touched no index): the row
        // keeps v = 20 and n = 'xyz', and their entries.
        "UPDATE t USING TIMESTAMP 50 SET v = 30, n = 'lost' WHERE k = 2 AND c = 0",
        // A row whose value expires, and a row deleted.
        "INSERT INTO t (k, c, v) VALUES (3, 0, 40) USING TTL 5",
        "INSERT INTO t (k, c, v, l) VALUES (4, 0, 10, [1]) USING TIMESTAMP 100",
        "DELETE FROM t USING TIMESTAMP 400 WHERE k = 4 AND c = 0",
        // A static value changed; a map entry removed and one changed.
        "UPDATE t SET s = 1 WHERE k = 5",
        "INSERT INTO t (k, c, v) VALUES (5, 0, 50)",
        "UPDATE t SET s = 2 WHERE k = 5",
        "UPDATE t SET m = m + {3: 3, 4: 4} WHERE k = 6 AND c = 0",
        "UPDATE t SET m = m - {3} WHERE k = 6 AND c = 0",
        "UPDATE t SET m[4] = 5 WHERE k = 6 AND c = 0",
    ];
    for w in writes {
        run(&e, w, 1, None);
    }
    let cases: [(&str, Vec<i32>); 17] = [
        ("v = 10", vec![1]),
        ("v = 20", vec![2]),
        ("v = 30", vec![]),
        ("v = 40", vec![3]),
        ("v >= 10 AND v <= 30", vec![1, 2]),
        ("v > 0", vec![1, 2, 3, 5]),
        ("n = 'abc'", vec![1]),
        ("n = 'xyz'", vec![2]),
        ("n = 'lost'", vec![]),
        ("s = 1", vec![]),
        ("s = 2", vec![5]),
        ("l CONTAINS 1", vec![]),
        ("l CONTAINS 3", vec![1]),
        ("l CONTAINS 7", vec![]),
        ("m CONTAINS KEY 3", vec![]),
        ("m[4] = 4", vec![]),
        ("m[4] = 5", vec![6]),
    ];
    let verify = |e: &Engine, secs: u32, when: &str| {
        for (cond, want) in &cases {
            let want: Vec<i32> = want
                .iter()
                .copied()
                .filter(|k| *k != 3 || secs < 6)
                .collect();
            let text = format!("SELECT k FROM t WHERE {cond}");
            assert_eq!(keys_of(e, &text, secs), want, "{when}: {text}");
            let limited = format!("{text} LIMIT 1");
            let one = keys_of(e, &limited, secs);
            assert_eq!(one.len(), want.len().min(1), "{when}: {limited}");
            assert!(one.iter().all(|k| want.contains(k)), "{when}: {limited}");
        }
    };
    verify(&e, 1, "before the sweep");
    // Every write deleted the entries of what it replaced.
    assert_eq!(e.stale_index_entries().unwrap(), Vec::<String>::new());
    drop(e);
    e = Engine::open(store.clone(), node()).unwrap();
    verify(&e, 1, "after a restart");
    verify(&e, 10, "after the TTL");
    e.sweep_index_entries().unwrap();
    assert_eq!(e.stale_index_entries().unwrap(), Vec::<String>::new());
    assert_eq!(e.check_indexes().unwrap(), Vec::<String>::new());
    verify(&e, 1, "after the sweep");
    // B -> A again after the sweep: the entry the sweep removed is put back.
    run(&e, "UPDATE t SET v = 20 WHERE k = 1 AND c = 0", 2, None);
    run(&e, "UPDATE t SET v = 10 WHERE k = 1 AND c = 0", 3, None);
    drop(e);
    e = Engine::open(store, node()).unwrap();
    verify(&e, 4, "after a restart and the sweep");
    assert_eq!(e.check_indexes().unwrap(), Vec::<String>::new());
}

/// Keyspace `ks` and table `t (k, c, v)` with 30 rows, v = k % 3.
pub(crate) fn thirty_rows(e: &Engine) {
    run(e, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", 1, None);
    run(
        e,
        "CREATE TABLE t (k int, c int, v int, PRIMARY KEY (k, c))",
        1,
        None,
    );
    for k in 0..30 {
        run(
            e,
            &format!("INSERT INTO t (k, c, v) VALUES ({k}, 0, {})", k % 3),
            1,
            None,
        );
    }
}

/// What a crash in the middle of a build leaves of the keys in `[start, end)`: every other
/// one deleted. Returns how many there were.
pub(crate) fn lose_half(store: &Arc<dyn storage::Storage>, start: &[u8], end: &[u8]) -> usize {
    let keys: Vec<Vec<u8>> = store
        .scan(
            std::ops::Bound::Included(start),
            std::ops::Bound::Excluded(end),
            false,
        )
        .map(|i| i.unwrap().0)
        .collect();
    let mut b = storage::WriteBatch::new();
    for k in keys.iter().step_by(2) {
        b.delete(k.clone());
    }
    store.write(b).unwrap();
    keys.len()
}

#[test]
fn a_build_cut_short_by_a_crash_is_redone_at_open() {
    let store: Arc<dyn storage::Storage> = Arc::new(storage::MemStorage::new());
    let e = Engine::open(store.clone(), node()).unwrap();
    thirty_rows(&e);
    run(&e, "CREATE INDEX ON t (v)", 1, None);
    // What a crash in the middle of the build leaves: the index in the schema, not marked
    // built, and only some of its entries written.
    let mut schema = (*e.schema()).clone();
    let key = ("ks".to_string(), "t".to_string());
    let mut t = (**schema.tables.get(&key).unwrap()).clone();
    t.indexes[0].built = false;
    schema.tables.insert(key, Arc::new(t));
    e.install(schema).unwrap();
    lose_half(
        &store,
        &[crate::index::INDEX_PREFIX],
        &[crate::index::INDEX_PREFIX + 1],
    );
    assert!(!e.check_indexes().unwrap().is_empty());
    drop(e);

    let e = Engine::open(store.clone(), node()).unwrap();
    assert_eq!(e.check_indexes().unwrap(), Vec::<String>::new());
    assert!(e.schema().table("ks", "t").unwrap().indexes[0].built);
    let rows = select(&e, "SELECT k FROM t WHERE v = 1", 1);
    assert_eq!(rows.len(), 10);
}

#[test]
fn concurrent_writers_a_concurrent_build_and_sweeps_leave_no_entry_missing() {
    for store in reading_and_merging_stores() {
        concurrent_writers_build_and_sweeps(store);
    }
}

fn concurrent_writers_build_and_sweeps(store: Arc<dyn storage::Storage>) {
    let e = Arc::new(Engine::open(store.clone(), node()).unwrap());
    run(&e, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", 1, None);
    run(
        &e,
        "CREATE TABLE t (k int, c int, v int, l list<int>, PRIMARY KEY (k, c))",
        1,
        None,
    );
    run(&e, "CREATE INDEX ON t (l)", 1, None);
    // Writes leave no stale entry: these, of rows no writer touches, are for the sweeps.
    for k in 100..110 {
        run(
            &e,
            &format!("INSERT INTO t (k, c, l) VALUES ({k}, 0, [1, 2])"),
            1,
            None,
        );
    }
    assert_eq!(remove_rows_underfoot(&e, &store, 10), 10);
    assert_eq!(e.stale_index_entries().unwrap().len(), 20);
    let writers: Vec<_> = (0..4u64)
        .map(|w| {
            let e = e.clone();
            std::thread::spawn(move || {
                let mut rng = Rng(0x1234_5678 + w);
                for _ in 0..300 {
                    let (k, c, v) = (rng.below(8), rng.below(3), rng.below(4));
                    let text = match rng.below(4) {
                        0 => {
                            format!("UPDATE t SET v = {v}, l = l + [{v}] WHERE k = {k} AND c = {c}")
                        }
                        1 => format!("DELETE FROM t WHERE k = {k} AND c = {c}"),
                        2 => format!("UPDATE t SET l = l - [{v}] WHERE k = {k} AND c = {c}"),
                        _ => format!("INSERT INTO t (k, c, v) VALUES ({k}, {c}, {v})"),
                    };
                    run(&e, &text, 1, None);
                }
            })
        })
        .collect();
    // Built while the writers run, and swept while they run (a sweep must never delete an
    // entry a writer has just put back).
    run(&e, "CREATE INDEX ON t (v)", 1, None);
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sweeper = {
        let (e, done) = (e.clone(), done.clone());
        std::thread::spawn(move || {
            let mut removed = 0;
            loop {
                removed += e.sweep_index_entries().unwrap().removed;
                if done.load(std::sync::atomic::Ordering::Relaxed) {
                    return removed;
                }
            }
        })
    };
    for w in writers {
        w.join().unwrap();
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(
        sweeper.join().unwrap() > 0,
        "the sweeps ran against no stale entry"
    );
    assert_eq!(e.check_indexes().unwrap(), Vec::<String>::new());
    assert_eq!(e.stale_index_entries().unwrap(), Vec::<String>::new());
    let all = select(&e, "SELECT k, c, v FROM t", 1);
    for x in 0..4 {
        let want: Vec<_> = all
            .iter()
            .filter(|r| int(&r[2]) == Some(x))
            .map(|r| (r[0].clone(), r[1].clone()))
            .collect();
        let got: Vec<_> = select(&e, &format!("SELECT k, c FROM t WHERE v = {x}"), 1)
            .into_iter()
            .map(|r| (r[0].clone(), r[1].clone()))
            .collect();
        assert_eq!(got, want);
    }
}

/// What one query touches in a table of `rows` rows where it matches 10.
fn touched_by_queries(rows: i64) -> Vec<usize> {
    let store = Arc::new(crate::tests::CountingStore {
        inner: storage::MemStorage::new(),
        touched: Default::default(),
    });
    let e = Engine::open(store.clone(), node()).unwrap();
    run(&e, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", 1, None);
    run(
        &e,
        "CREATE TABLE t (k int, c int, v int, w int, PRIMARY KEY (k, c))",
        1,
        None,
    );
    run(&e, "CREATE INDEX ON t (v)", 1, None);
    run(&e, "CREATE INDEX ON t (w) USING 'sai'", 1, None);
    for k in 0..rows {
        run(
            &e,
            &format!(
                "INSERT INTO t (k, c, v, w) VALUES ({k}, 0, {}, {k})",
                k % (rows / 10)
            ),
            1,
            None,
        );
    }
    [
        "SELECT k FROM t WHERE v = 7",
        "SELECT k FROM t WHERE w >= 500 AND w < 510",
    ]
    .iter()
    .map(|q| {
        store.touched.store(0, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(select(&e, q, 1).len(), 10, "{q}");
        store.touched.load(std::sync::atomic::Ordering::Relaxed)
    })
    .collect()
}

#[test]
fn an_indexed_query_costs_what_it_returns_not_the_table_size() {
    let small = touched_by_queries(1_000);
    let large = touched_by_queries(20_000);
    assert_eq!(small, large);
    // 10 entries, then a header and a row read per match.
    assert!(large.iter().all(|n| *n <= 10 * 3 + 2), "{large:?}");
}

fn entry_count(store: &dyn storage::Storage) -> usize {
    store
        .scan(
            std::ops::Bound::Included(&[crate::index::INDEX_PREFIX][..]),
            std::ops::Bound::Excluded(&[crate::index::INDEX_PREFIX + 1][..]),
            false,
        )
        .count()
}

#[test]
fn compaction_drops_entries_of_dropped_indexes_and_truncated_tables() {
    let (filter, handle) = crate::purge_filter(crate::Now::system);
    let store: Arc<dyn storage::Storage> = Arc::new(storage::MemStorage::with_filter_and_merge(
        filter,
        Arc::new(crate::row::RowMerge),
    ));
    let e = Engine::open_with_filter(store.clone(), node(), handle).unwrap();
    run(&e, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", 1, None);
    run(
        &e,
        "CREATE TABLE t (k int PRIMARY KEY, v int, w int)",
        1,
        None,
    );
    run(&e, "CREATE INDEX ON t (v)", 1, None);
    run(&e, "CREATE INDEX ON t (w) USING 'sai'", 1, None);
    for k in 0..20 {
        run(
            &e,
            &format!("INSERT INTO t (k, v, w) VALUES ({k}, {k}, {k})"),
            1,
            None,
        );
    }
    assert_eq!(entry_count(store.as_ref()), 40);
    run(&e, "DROP INDEX t_v_idx", 1, None);
    e.compact().unwrap();
    assert_eq!(entry_count(store.as_ref()), 20);
    run(&e, "TRUNCATE t", 1, None);
    e.compact().unwrap();
    assert_eq!(entry_count(store.as_ref()), 0);
    assert_eq!(e.check_indexes().unwrap(), Vec::<String>::new());
}

/// The stored entries of two rows, byte for byte: `0x02 index_id enc(value) tail`, value
/// `expires_at len(enc)`, for a plain column (one value encoded into the key in place), a
/// text column through SAI's analyzer, and a list's elements (one entry per element).
#[test]
fn entries_are_stored_in_their_documented_format() {
    use proto::types::ColumnType;
    let store: Arc<dyn storage::Storage> = Arc::new(storage::MemStorage::new());
    let e = Engine::open(store.clone(), node()).unwrap();
    run(&e, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", 1, None);
    run(
        &e,
        "CREATE TABLE t (k int PRIMARY KEY, v int, s text, l list<int>)",
        1,
        None,
    );
    run(&e, "CREATE INDEX ON t (v)", 1, None);
    run(
        &e,
        "CREATE INDEX ON t (s) USING 'sai' WITH OPTIONS = {'case_sensitive': 'false'}",
        1,
        None,
    );
    run(&e, "CREATE INDEX ON t (l)", 1, None);
    // `MemStorage` has no merges: every write reads its row, and an entry expires with its
    // cell (at 10 + 100 s); a blind write's would never expire (see `maintain`).
    run(
        &e,
        "UPDATE t USING TTL 100 SET v = -5, s = 'AbC' WHERE k = 1",
        10,
        None,
    );
    run(&e, "UPDATE t SET l = [7, 8] WHERE k = 2", 10, None);
    let all = |from: u8| -> Vec<storage::KvPair> {
        store
            .scan(
                std::ops::Bound::Included(&[from][..]),
                std::ops::Bound::Excluded(&[from + 1][..]),
                false,
            )
            .map(Result::unwrap)
            .collect()
    };
    let schema = e.schema.get();
    let t = schema.indexed.values().next().unwrap();
    let base = |k: i32| {
        all(0x01)
            .into_iter()
            .map(|(key, _)| key)
            .find(|key| {
                crate::keys::decode_key(key)
                    .is_some_and(|d| !d.is_header && d.pk == k.to_be_bytes())
            })
            .unwrap()
    };
    let id = |column: &str| t.indexes.iter().find(|i| i.column == column).unwrap().id;
    let want_entry = |column: &str, ty: ColumnType, value: &[u8], k: i32, expires_at: u32| {
        let mut enc = Vec::new();
        crate::keys::encode_component(&mut enc, &ty, value, false);
        let mut key = vec![crate::index::INDEX_PREFIX];
        key.extend_from_slice(&id(column).to_be_bytes());
        key.extend_from_slice(&enc);
        key.extend_from_slice(&base(k)[5..]);
        let mut v = expires_at.to_be_bytes().to_vec();
        v.extend_from_slice(&(enc.len() as u32).to_be_bytes());
        (key, bytes::Bytes::from(v))
    };
    let mut want = vec![
        want_entry("v", ColumnType::Int, &(-5i32).to_be_bytes(), 1, 110),
        want_entry("s", ColumnType::Varchar, b"abc", 1, 110),
        want_entry("l", ColumnType::Int, &7i32.to_be_bytes(), 2, 0),
        want_entry("l", ColumnType::Int, &8i32.to_be_bytes(), 2, 0),
    ];
    want.sort();
    assert_eq!(all(crate::index::INDEX_PREFIX), want);
}

#[test]
fn a_value_a_collection_holds_twice_answers_while_its_longer_lived_element_lives() {
    // Generator seed 146: `l = l + [5, 0] USING TTL 1` over a list holding 0 for longer put
    // the shorter expiry over the entry of 0, and `l CONTAINS 0` lost the row once it passed.
    let store: Arc<dyn storage::Storage> = Arc::new(storage::MemStorage::new());
    let e = Engine::open(store, node()).unwrap();
    for ddl in [
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "CREATE TABLE t (k int, c int, l list<int>, m map<int, int>, PRIMARY KEY (k, c))",
        "CREATE INDEX ON t (values(l)) USING 'sai'",
        "CREATE INDEX ON t (values(m))",
    ] {
        run(&e, ddl, 1, None);
    }
    for w in [
        "UPDATE t USING TTL 100 SET l = [0], m = {1: 0} WHERE k = 0 AND c = 0",
        "UPDATE t USING TTL 1 SET l = l + [5, 0], m = m + {2: 0} WHERE k = 0 AND c = 0",
        "UPDATE t SET l = [7] WHERE k = 1 AND c = 0",
        "UPDATE t USING TTL 1 SET l = l + [7] WHERE k = 1 AND c = 0",
    ] {
        run(&e, w, 1, None);
    }
    for (secs, cond, want) in [
        (1, "l CONTAINS 5", vec![0]),
        (5, "l CONTAINS 5", vec![]),
        (5, "l CONTAINS 0", vec![0]),
        (5, "m CONTAINS 0", vec![0]),
        (5, "l CONTAINS 7", vec![1]),
        (200, "l CONTAINS 0", vec![]),
        (200, "l CONTAINS 7", vec![1]),
    ] {
        let text = format!("SELECT k FROM t WHERE {cond}");
        assert_eq!(keys_of(&e, &text, secs), want, "at {secs} s: {text}");
    }
}
