//! Model test: after random write sequences (every write path, with TTLs, old timestamps,
//! BATCH, LWT, restarts), every indexed query answers exactly what a full scan filtered in
//! the test answers, in the same order, paged or not.

use crate::tests::{node, values as decode};
use crate::{Engine, Now, Outcome, QueryOptions, Values};
use proto::types::Value;
use std::sync::Arc;

/// xorshift64*: a fixed seed gives the same sequence on every run.
struct Rng(u64);

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

fn run(e: &Engine, text: &str, secs: u32, page: Option<(i32, Option<Vec<u8>>)>) -> Outcome {
    let opts = QueryOptions {
        keyspace: Some("ks".into()),
        page_size: page.as_ref().map(|p| p.0),
        paging_state: page.and_then(|p| p.1),
        ..Default::default()
    };
    e.query(text, Values::Positional(vec![]), &opts, now(secs))
        .unwrap_or_else(|err| panic!("{text}: {err:?}"))
}

fn select(e: &Engine, text: &str, secs: u32) -> Vec<Vec<Value>> {
    decode(run(e, text, secs, None)).0
}

/// The same query fetched in pages of `size`.
fn select_paged(e: &Engine, text: &str, secs: u32, size: i32) -> Vec<Vec<Value>> {
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

fn random_write(rng: &mut Rng) -> String {
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
    // The entries are exactly those of the stored rows: no stale one, none missing.
    assert_eq!(
        e.check_indexes().unwrap(),
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

#[test]
fn indexed_queries_agree_with_a_full_scan_after_random_writes() {
    let store: Arc<dyn storage::Storage> = Arc::new(storage::MemStorage::new());
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
        if step % 150 == 0 {
            // A restart: the schema and every entry come back from storage.
            drop(e);
            e = Engine::open(store.clone(), node()).unwrap();
            check(&e, secs, &mut rng, step);
        }
    }
}

#[test]
fn an_index_query_reads_only_its_candidates() {
    // Stale entries are removed by the write that replaces a value, so after many overwrites
    // the index holds one entry per row.
    let store: Arc<dyn storage::Storage> = Arc::new(storage::MemStorage::new());
    let e = Engine::open(store.clone(), node()).unwrap();
    run(&e, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", 1, None);
    run(&e, "CREATE TABLE t (k int PRIMARY KEY, v int)", 1, None);
    run(&e, "CREATE INDEX ON t (v)", 1, None);
    for round in 0..5 {
        for k in 0..50 {
            run(
                &e,
                &format!("UPDATE t SET v = {} WHERE k = {k}", (k + round) % 7),
                1,
                None,
            );
        }
    }
    let entries = store
        .scan(
            std::ops::Bound::Included(&[crate::index::INDEX_PREFIX][..]),
            std::ops::Bound::Excluded(&[crate::index::INDEX_PREFIX + 1][..]),
            false,
        )
        .count();
    assert_eq!(entries, 50);
    run(&e, "DELETE FROM t WHERE k = 3", 1, None);
    run(&e, "TRUNCATE t", 1, None);
    let rows = select(&e, "SELECT k FROM t WHERE v = 1", 1);
    assert!(rows.is_empty());
}
