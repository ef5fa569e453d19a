//! Model test: after random write sequences on the base (every write path, with TTLs, old
//! timestamps, BATCH, LWT, restarts), each view holds exactly the rows computed from a full
//! scan of the base, read whole or in pages.

use crate::index::tests::{lose_half, random_write, run, select, select_paged, thirty_rows, Rng};
use crate::tests::node;
use crate::Engine;
use proto::types::Value;
use std::sync::Arc;

fn sorted(mut rows: Vec<Vec<Value>>) -> Vec<String> {
    let mut out: Vec<String> = rows.drain(..).map(|r| format!("{r:?}")).collect();
    out.sort();
    out
}

/// The view query `q` reads `want` (as a multiset), whole and in pages of 2.
fn assert_view(e: &Engine, q: &str, want: Vec<Vec<Value>>, secs: u32, step: usize) {
    let want = sorted(want);
    assert_eq!(sorted(select(e, q, secs)), want, "step {step}: {q}");
    assert_eq!(
        sorted(select_paged(e, q, secs, 2)),
        want,
        "step {step}, pages of 2: {q}"
    );
}

/// Each view against the rows the base's full scan implies.
fn check(e: &Engine, secs: u32, step: usize) {
    assert_eq!(
        e.check_views(secs).unwrap(),
        Vec::<String>::new(),
        "step {step}"
    );
    let base = select(e, "SELECT k, c, v, w, l, m FROM t", secs);
    let is = |v: &Value| !matches!(v, Value::Null);
    // by_v: rows with v, keyed (v, k, c).
    let by_v: Vec<Vec<Value>> = base
        .iter()
        .filter(|r| is(&r[1]) && is(&r[2]))
        .map(|r| [2, 0, 1, 3, 4, 5].map(|i| r[i].clone()).to_vec())
        .collect();
    let mut vs: Vec<Vec<Value>> = by_v
        .iter()
        .map(|r: &Vec<Value>| vec![r[0].clone()])
        .collect();
    vs.dedup_by_key(|r| format!("{r:?}"));
    let mut distinct = sorted(vs);
    distinct.dedup();
    assert_eq!(
        sorted(select(e, "SELECT DISTINCT v FROM by_v", secs)),
        distinct,
        "step {step}: SELECT DISTINCT v FROM by_v"
    );
    assert_view(e, "SELECT v, k, c, w, l, m FROM by_v", by_v, secs, step);
    // by_c: rows with c >= 2, keyed (c, k).
    let by_c = base
        .iter()
        .filter(|r| matches!(r[1], Value::Int(c) if c >= 2))
        .map(|r| [1, 0, 3].map(|i| r[i].clone()).to_vec())
        .collect();
    assert_view(e, "SELECT c, k, w FROM by_c", by_c, secs, step);
}

fn open(store: &Arc<dyn storage::Storage>) -> Engine {
    let e = Engine::open(store.clone(), node()).unwrap();
    e.set_materialized_views_enabled(true);
    e
}

#[test]
fn views_agree_with_a_full_scan_of_the_base_after_random_writes() {
    let store: Arc<dyn storage::Storage> = Arc::new(storage::MemStorage::new());
    let mut e = open(&store);
    let mut rng = Rng(0x5851_F42D_4C95_7F2D);
    let mut secs = 1_000;
    run(&e, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", secs, None);
    run(&e, "CREATE TABLE t (k int, c int, v int, w int, s int static, l list<int>, m map<int, int>, PRIMARY KEY (k, c))", secs, None);
    // Some data first: the views are built over it.
    for _ in 0..40 {
        run(&e, &random_write(&mut rng), secs, None);
    }
    run(&e, "CREATE MATERIALIZED VIEW by_v AS SELECT k, c, v, w, l, m FROM t WHERE k IS NOT NULL AND c IS NOT NULL AND v IS NOT NULL PRIMARY KEY (v, k, c)", secs, None);
    run(&e, "CREATE MATERIALIZED VIEW by_c AS SELECT k, c, w FROM t WHERE k IS NOT NULL AND c IS NOT NULL AND c >= 2 PRIMARY KEY (c, k) WITH CLUSTERING ORDER BY (k DESC)", secs, None);
    check(&e, secs, 0);
    for step in 1..=400 {
        secs += 1;
        run(&e, &random_write(&mut rng), secs, None);
        if step % 5 == 0 {
            check(&e, secs, step);
        }
        if step % 150 == 0 {
            // A restart: the views' schema and rows come back from storage.
            drop(e);
            e = open(&store);
            check(&e, secs, step);
        }
    }
    // TRUNCATE of the base empties the views; new writes fill them again.
    run(&e, "TRUNCATE t", secs, None);
    check(&e, secs, 401);
    for step in 402..=450 {
        run(&e, &random_write(&mut rng), secs, None);
        check(&e, secs, step);
    }
}

#[test]
fn views_are_refused_while_disabled() {
    let store: Arc<dyn storage::Storage> = Arc::new(storage::MemStorage::new());
    let e = Engine::open(store, node()).unwrap();
    let opts = crate::QueryOptions::default();
    let now = crate::Now { micros: 1, secs: 1 };
    let q = |t: &str| e.query(t, crate::Values::Positional(vec![]), &opts, now);
    q("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}").unwrap();
    q("CREATE TABLE ks.t (k int PRIMARY KEY, v int)").unwrap();
    let err = q(
        "CREATE MATERIALIZED VIEW ks.v AS SELECT * FROM ks.t WHERE k IS NOT NULL PRIMARY KEY (k)",
    )
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(
        err.contains("Materialized views are disabled. Enable in cassandra.yaml to use."),
        "{err}"
    );
}

#[test]
fn a_build_cut_short_by_a_crash_is_redone_at_open() {
    let store: Arc<dyn storage::Storage> = Arc::new(storage::MemStorage::new());
    let e = open(&store);
    thirty_rows(&e);
    run(&e, "CREATE MATERIALIZED VIEW by_v AS SELECT k, c, v FROM t WHERE k IS NOT NULL AND c IS NOT NULL AND v IS NOT NULL PRIMARY KEY (v, k, c)", 1, None);
    // What a crash in the middle of the build leaves: the view in the schema, not marked
    // built, and only some of its rows written.
    let mut schema = (*e.schema()).clone();
    let key = ("ks".to_string(), "by_v".to_string());
    let mut v = (**schema.tables.get(&key).unwrap()).clone();
    v.view.as_mut().unwrap().built = false;
    let start = crate::keys::table_prefix(v.id);
    schema.tables.insert(key, Arc::new(v));
    e.install(schema).unwrap();
    assert_eq!(
        lose_half(&store, &start, &crate::keys::prefix_end(&start)),
        30
    );
    assert!(!e.check_views(1).unwrap().is_empty());
    drop(e);

    let e = open(&store);
    assert_eq!(e.check_views(1).unwrap(), Vec::<String>::new());
    let view = e.schema().table("ks", "by_v").unwrap().clone();
    assert!(view.view.as_ref().unwrap().built);
    assert_eq!(select(&e, "SELECT k FROM by_v WHERE v = 1", 1).len(), 10);
}

#[test]
fn concurrent_writers_and_a_concurrent_build_leave_the_views_exact() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let store: Arc<dyn storage::Storage> = Arc::new(storage::MemStorage::new());
    let e = Arc::new(open(&store));
    let secs = 1_000;
    run(&e, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", secs, None);
    run(&e, "CREATE TABLE t (k int, c int, v int, w int, s int static, l list<int>, m map<int, int>, PRIMARY KEY (k, c))", secs, None);
    // The writers stop as soon as the builds are done: a view row a build got wrong would
    // not be repaired by later writes.
    let built = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4u64)
        .map(|w| {
            let (e, built) = (e.clone(), built.clone());
            std::thread::spawn(move || {
                let mut rng = Rng(0x1234_5678 + w);
                while !built.load(Ordering::Acquire) {
                    run(&e, &random_write(&mut rng), secs, None);
                }
            })
        })
        .collect();
    while select(&e, "SELECT k FROM t LIMIT 1", secs).is_empty() {
        std::thread::yield_now();
    }
    run(&e, "CREATE MATERIALIZED VIEW by_v AS SELECT k, c, v, w, l, m FROM t WHERE k IS NOT NULL AND c IS NOT NULL AND v IS NOT NULL PRIMARY KEY (v, k, c)", secs, None);
    run(&e, "CREATE MATERIALIZED VIEW by_c AS SELECT k, c, w FROM t WHERE k IS NOT NULL AND c IS NOT NULL AND c >= 2 PRIMARY KEY (c, k)", secs, None);
    built.store(true, Ordering::Release);
    for w in writers {
        w.join().unwrap();
    }
    check(&e, secs, 0);
}
