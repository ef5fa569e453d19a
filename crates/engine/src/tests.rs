//! Engine behaviour through CQL text, on the in-memory storage model.

use super::*;
use std::net::{IpAddr, Ipv4Addr};

pub(crate) fn node() -> NodeInfo {
    NodeInfo {
        cluster_name: "Test Cluster".into(),
        datacenter: "datacenter1".into(),
        rack: "rack1".into(),
        rpc_address: IpAddr::V4(Ipv4Addr::LOCALHOST),
        rpc_port: 9042,
        host_id: [0; 16],
        release_version: "5.0.9".into(),
    }
}

pub(crate) fn engine() -> Engine {
    // Merging, as the server's store: updates write blind.
    let store = storage::MemStorage::with_merge(Arc::new(crate::row::RowMerge));
    Engine::open(Arc::new(store), node()).unwrap()
}

pub(crate) fn at(secs: u32) -> Now {
    Now {
        micros: secs as i64 * 1_000_000,
        secs,
    }
}

pub(crate) fn q(e: &Engine, ks: Option<&str>, text: &str) -> Result<Outcome, DbError> {
    let opts = QueryOptions {
        keyspace: ks.map(Arc::from),
        ..Default::default()
    };
    e.query(text, Values::Positional(vec![]), &opts, at(1000))
}

/// Rows decoded by proto's decoder (null as `Value::Null`), and the paging state.
pub(crate) fn values(o: Outcome) -> (Vec<Vec<proto::types::Value>>, Option<Vec<u8>>) {
    let Outcome::Rows(rs) = o else {
        panic!("expected rows, got {o:?}")
    };
    let mut out = Vec::new();
    let mut pos = 0;
    for _ in 0..rs.rows {
        let mut row = Vec::new();
        for c in rs.columns.iter() {
            let len = i32::from_be_bytes(rs.data[pos..pos + 4].try_into().unwrap());
            pos += 4;
            if len < 0 {
                row.push(proto::types::Value::Null);
            } else {
                let v = &rs.data[pos..pos + len as usize];
                pos += len as usize;
                row.push(proto::value::decode_value(&c.ty, v).unwrap());
            }
        }
        out.push(row);
    }
    (out, rs.paging_state)
}

/// Rows as strings via proto's decoder, for assertions.
pub(crate) fn rows(o: Outcome) -> Vec<Vec<String>> {
    use proto::types::Value;
    values(o)
        .0
        .into_iter()
        .map(|row| {
            row.into_iter()
                .map(|v| match v {
                    Value::Null => "null".to_string(),
                    Value::Varchar(s) | Value::Ascii(s) => s,
                    Value::Int(i) => i.to_string(),
                    Value::Bigint(i) => i.to_string(),
                    Value::Boolean(b) => b.to_string(),
                    other => format!("{other:?}"),
                })
                .collect()
        })
        .collect()
}

pub(crate) fn setup() -> Engine {
    let e = engine();
    q(&e, None, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}").unwrap();
    e
}

#[test]
fn insert_select_round_trip() {
    let e = setup();
    q(&e, Some("ks"), "CREATE TABLE t (k int PRIMARY KEY, v text)").unwrap();
    q(&e, Some("ks"), "INSERT INTO t (k, v) VALUES (1, 'one')").unwrap();
    q(&e, Some("ks"), "INSERT INTO t (k, v) VALUES (2, 'two')").unwrap();
    let r = rows(q(&e, Some("ks"), "SELECT k, v FROM t WHERE k = 1").unwrap());
    assert_eq!(r, vec![vec!["1".to_string(), "one".to_string()]]);
    let all = rows(q(&e, Some("ks"), "SELECT * FROM t").unwrap());
    assert_eq!(all.len(), 2);
    // Token order: token(1) < token(2) for ints (both negative, -4069... < -3248...).
    assert_eq!(all[0][0], "1");
}

#[test]
fn clustering_slices_and_order() {
    let e = setup();
    q(&e, Some("ks"), "CREATE TABLE c (k int, c int, v int, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC)").unwrap();
    for i in 0..10 {
        q(
            &e,
            Some("ks"),
            &format!("INSERT INTO c (k, c, v) VALUES (1, {i}, {})", i * 10),
        )
        .unwrap();
    }
    let r = rows(
        q(
            &e,
            Some("ks"),
            "SELECT c FROM c WHERE k = 1 AND c > 3 AND c <= 6",
        )
        .unwrap(),
    );
    assert_eq!(
        r,
        vec![vec!["6"], vec!["5"], vec!["4"]]
            .into_iter()
            .map(|v| v.into_iter().map(String::from).collect::<Vec<_>>())
            .collect::<Vec<_>>()
    );
    let r = rows(
        q(
            &e,
            Some("ks"),
            "SELECT c FROM c WHERE k = 1 ORDER BY c ASC LIMIT 2",
        )
        .unwrap(),
    );
    assert_eq!(r, vec![vec!["0".to_string()], vec!["1".to_string()]]);
    let r = rows(q(&e, Some("ks"), "SELECT COUNT(*) FROM c WHERE k = 1").unwrap());
    assert_eq!(r, vec![vec!["10".to_string()]]);
}

#[test]
fn lww_and_tombstones() {
    let e = setup();
    q(&e, Some("ks"), "CREATE TABLE t (k int PRIMARY KEY, v text)").unwrap();
    q(
        &e,
        Some("ks"),
        "INSERT INTO t (k, v) VALUES (1, 'new') USING TIMESTAMP 20",
    )
    .unwrap();
    q(
        &e,
        Some("ks"),
        "INSERT INTO t (k, v) VALUES (1, 'old') USING TIMESTAMP 10",
    )
    .unwrap();
    assert_eq!(
        rows(q(&e, Some("ks"), "SELECT v FROM t WHERE k = 1").unwrap())[0][0],
        "new"
    );
    q(
        &e,
        Some("ks"),
        "DELETE FROM t USING TIMESTAMP 20 WHERE k = 1",
    )
    .unwrap();
    assert!(rows(q(&e, Some("ks"), "SELECT v FROM t WHERE k = 1").unwrap()).is_empty());
    q(
        &e,
        Some("ks"),
        "INSERT INTO t (k, v) VALUES (1, 'later') USING TIMESTAMP 21",
    )
    .unwrap();
    assert_eq!(
        rows(q(&e, Some("ks"), "SELECT v FROM t WHERE k = 1").unwrap())[0][0],
        "later"
    );
    // UPDATE writes no row marker: nulling the only column removes the row.
    q(&e, Some("ks"), "UPDATE t SET v = 'u' WHERE k = 5").unwrap();
    q(&e, Some("ks"), "UPDATE t SET v = null WHERE k = 5").unwrap();
    assert!(rows(q(&e, Some("ks"), "SELECT * FROM t WHERE k = 5").unwrap()).is_empty());
}

#[test]
fn errors_carry_cassandra_codes() {
    let e = setup();
    assert_eq!(
        q(&e, Some("ks"), "SELEC * FROM t").unwrap_err().code(),
        0x2000
    );
    assert_eq!(
        q(&e, Some("ks"), "SELECT * FROM nope").unwrap_err().code(),
        0x2200
    );
    q(&e, Some("ks"), "CREATE TABLE t (k int PRIMARY KEY, v text)").unwrap();
    assert_eq!(
        q(&e, Some("ks"), "CREATE TABLE t (k int PRIMARY KEY, v text)")
            .unwrap_err()
            .code(),
        0x2400
    );
    assert_eq!(
        q(&e, Some("ks"), "INSERT INTO t (k, v) VALUES ('x', 'y')")
            .unwrap_err()
            .code(),
        0x2200
    );
}

#[test]
fn system_tables_reflect_schema() {
    let e = setup();
    q(&e, Some("ks"), "CREATE TABLE t (k int PRIMARY KEY, v text)").unwrap();
    let r = rows(q(&e, None, "SELECT column_name, kind FROM system_schema.columns WHERE keyspace_name = 'ks' AND table_name = 't'").unwrap());
    assert_eq!(
        r,
        vec![
            vec!["k".to_string(), "partition_key".to_string()],
            vec!["v".to_string(), "regular".to_string()]
        ]
    );
    let r = rows(
        q(
            &e,
            None,
            "SELECT cluster_name FROM system.local WHERE key = 'local'",
        )
        .unwrap(),
    );
    assert_eq!(r[0][0], "Test Cluster");
}

#[test]
fn paging_walks_every_row_once() {
    let e = setup();
    q(
        &e,
        Some("ks"),
        "CREATE TABLE p (k int, c int, PRIMARY KEY (k, c))",
    )
    .unwrap();
    for k in 0..5 {
        for c in 0..7 {
            q(
                &e,
                Some("ks"),
                &format!("INSERT INTO p (k, c) VALUES ({k}, {c})"),
            )
            .unwrap();
        }
    }
    let mut seen = 0;
    let mut state: Option<Vec<u8>> = None;
    loop {
        let opts = QueryOptions {
            keyspace: Some("ks".into()),
            page_size: Some(4),
            paging_state: state.clone(),
            ..Default::default()
        };
        let Outcome::Rows(rs) = e
            .query(
                "SELECT * FROM p",
                Values::Positional(vec![]),
                &opts,
                at(1000),
            )
            .unwrap()
        else {
            panic!()
        };
        seen += rs.rows;
        state = rs.paging_state;
        if state.is_none() {
            break;
        }
    }
    assert_eq!(seen, 35);
}

#[test]
fn purged_partition_deletion_resurrects_nothing() {
    let (filter, handle) = purge_filter(Now::system);
    let store = Arc::new(storage::MemStorage::with_filter_and_merge(
        filter,
        Arc::new(crate::row::RowMerge),
    ));
    let e = Engine::open_with_filter(store, node(), handle).unwrap();
    q(&e, None, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}").unwrap();
    q(
        &e,
        Some("ks"),
        "CREATE TABLE t (k int, c int, v int, PRIMARY KEY (k, c)) WITH gc_grace_seconds = 0",
    )
    .unwrap();
    for c in 0..5 {
        q(
            &e,
            Some("ks"),
            &format!("INSERT INTO t (k, c, v) VALUES (1, {c}, {c}) USING TIMESTAMP 10"),
        )
        .unwrap();
    }
    q(
        &e,
        Some("ks"),
        "DELETE FROM t USING TIMESTAMP 20 WHERE k = 1 AND c >= 3",
    )
    .unwrap();
    assert_eq!(
        rows(q(&e, Some("ks"), "SELECT c FROM t WHERE k = 1").unwrap()).len(),
        3
    );
    q(
        &e,
        Some("ks"),
        "DELETE FROM t USING TIMESTAMP 30 WHERE k = 1",
    )
    .unwrap();
    assert!(rows(q(&e, Some("ks"), "SELECT c FROM t WHERE k = 1").unwrap()).is_empty());
    // gc_grace_seconds = 0: compaction drops the tombstones; the rows they covered must be gone too.
    e.compact().unwrap();
    assert!(rows(q(&e, Some("ks"), "SELECT * FROM t").unwrap()).is_empty());
    // A newer write after the purge is visible.
    q(
        &e,
        Some("ks"),
        "INSERT INTO t (k, c, v) VALUES (1, 9, 9) USING TIMESTAMP 40",
    )
    .unwrap();
    assert_eq!(
        rows(q(&e, Some("ks"), "SELECT c FROM t WHERE k = 1").unwrap()),
        vec![vec!["9".to_string()]]
    );
}

#[test]
fn ttl_expires_rows_and_compaction_purges() {
    let e = setup();
    q(
        &e,
        Some("ks"),
        "CREATE TABLE t (k int PRIMARY KEY, v text) WITH default_time_to_live = 100",
    )
    .unwrap();
    q(&e, Some("ks"), "INSERT INTO t (k, v) VALUES (1, 'a')").unwrap();
    q(
        &e,
        Some("ks"),
        "INSERT INTO t (k, v) VALUES (2, 'b') USING TTL 5000",
    )
    .unwrap();
    let later = |text: &str, secs: u32| {
        let opts = QueryOptions {
            keyspace: Some("ks".into()),
            ..Default::default()
        };
        rows(
            e.query(text, Values::Positional(vec![]), &opts, at(secs))
                .unwrap(),
        )
    };
    assert_eq!(later("SELECT k FROM t", 1050).len(), 2);
    assert_eq!(later("SELECT k FROM t", 1101), vec![vec!["2".to_string()]]);
    assert_eq!(
        later("SELECT ttl(v) FROM t WHERE k = 2", 2000),
        vec![vec!["4000".to_string()]]
    );
}

#[test]
fn range_scans_cover_small_and_large_partitions_with_paging() {
    let e = setup();
    q(
        &e,
        Some("ks"),
        "CREATE TABLE r (k int, c int, v int, PRIMARY KEY (k, c))",
    )
    .unwrap();
    // One partition larger than the scan's buffer, several small ones.
    for c in 0..1500 {
        q(
            &e,
            Some("ks"),
            &format!("INSERT INTO r (k, c, v) VALUES (0, {c}, {c})"),
        )
        .unwrap();
    }
    for k in 1..20 {
        for c in 0..3 {
            q(
                &e,
                Some("ks"),
                &format!("INSERT INTO r (k, c, v) VALUES ({k}, {c}, {c})"),
            )
            .unwrap();
        }
    }
    let all = rows(q(&e, Some("ks"), "SELECT k, c FROM r").unwrap());
    assert_eq!(all.len(), 1500 + 19 * 3);
    let mut seen = 0;
    let mut state: Option<Vec<u8>> = None;
    let mut pages = 0;
    loop {
        let opts = QueryOptions {
            keyspace: Some("ks".into()),
            page_size: Some(97),
            paging_state: state.clone(),
            ..Default::default()
        };
        let Outcome::Rows(rs) = e
            .query(
                "SELECT k, c FROM r",
                Values::Positional(vec![]),
                &opts,
                at(1000),
            )
            .unwrap()
        else {
            panic!()
        };
        seen += rs.rows;
        pages += 1;
        state = rs.paging_state;
        if state.is_none() {
            break;
        }
    }
    assert_eq!(seen, all.len());
    assert!(pages > 10);
    let limited = rows(q(&e, Some("ks"), "SELECT k FROM r PER PARTITION LIMIT 2").unwrap());
    assert_eq!(limited.len(), 20 * 2);
}

/// A partition or range deletion older than a row's own deletion must not drop that row
/// deletion: a later write with a timestamp between the two stays shadowed (generator, seed 1).
#[test]
fn older_partition_or_range_delete_keeps_a_newer_row_delete() {
    let e = setup();
    q(
        &e,
        Some("ks"),
        "CREATE TABLE t (k int, c int, v int, PRIMARY KEY (k, c))",
    )
    .unwrap();
    q(
        &e,
        Some("ks"),
        "DELETE FROM t USING TIMESTAMP 300 WHERE k = 1 AND c = 1",
    )
    .unwrap();
    q(
        &e,
        Some("ks"),
        "DELETE FROM t USING TIMESTAMP 100 WHERE k = 1",
    )
    .unwrap();
    q(
        &e,
        Some("ks"),
        "DELETE FROM t USING TIMESTAMP 100 WHERE k = 1 AND c >= 0",
    )
    .unwrap();
    q(
        &e,
        Some("ks"),
        "INSERT INTO t (k, c, v) VALUES (1, 1, 5) USING TIMESTAMP 200",
    )
    .unwrap();
    q(
        &e,
        Some("ks"),
        "INSERT INTO t (k, c, v) VALUES (1, 2, 6) USING TIMESTAMP 200",
    )
    .unwrap();
    let r = rows(q(&e, Some("ks"), "SELECT c, v FROM t WHERE k = 1").unwrap());
    assert_eq!(r, vec![vec!["2".to_string(), "6".to_string()]]);
}

/// `IN` on a clustering column with adjacent values (0 and 1 of an int encode as touching
/// intervals) reads every listed row (the generator's `rows:row_count:in_clustering`).
#[test]
fn in_on_clustering_with_adjacent_values_reads_each_row() {
    let e = setup();
    q(
        &e,
        Some("ks"),
        "CREATE TABLE t (k int, c int, v int, PRIMARY KEY (k, c))",
    )
    .unwrap();
    q(&e, Some("ks"), "INSERT INTO t (k, c, v) VALUES (1, 1, 10)").unwrap();
    q(&e, Some("ks"), "INSERT INTO t (k, c, v) VALUES (1, 2, 20)").unwrap();
    for query in [
        "SELECT c FROM t WHERE k = 1 AND c IN (1, 0)",
        "SELECT c FROM t WHERE k = 1 AND c IN (0, 1, 2)",
        "SELECT c FROM t WHERE k = 1 AND c IN (2, 1, 0, -1)",
    ] {
        let got: Vec<String> = rows(q(&e, Some("ks"), query).unwrap())
            .into_iter()
            .map(|r| r[0].clone())
            .collect();
        let want: Vec<&str> = if query.contains('2') {
            vec!["1", "2"]
        } else {
            vec!["1"]
        };
        assert_eq!(got, want, "{query}");
    }
}

/// `DELETE s[i]` of a static list reads the list as a SELECT would: without the items the
/// partition's deletion shadows, though the partition header still holds them (generator,
/// seed 55: Cassandra 5.0.9 answered "out of bound, list has size 2", Peregrine deleted).
#[test]
fn static_list_index_ignores_items_a_partition_deletion_shadows() {
    let e = setup();
    q(
        &e,
        Some("ks"),
        "CREATE TABLE t (k int, c int, s list<int> STATIC, PRIMARY KEY (k, c))",
    )
    .unwrap();
    q(&e, Some("ks"), "DELETE FROM t WHERE k = 1").unwrap();
    q(&e, Some("ks"), "UPDATE t SET s = s + [1, 2] WHERE k = 1").unwrap();
    // Older than the partition deletion: stored, never live.
    q(
        &e,
        Some("ks"),
        "UPDATE t USING TIMESTAMP 1 SET s = s + [5, 6] WHERE k = 1",
    )
    .unwrap();
    let statements = [
        "DELETE s[2] FROM t WHERE k = 1",
        "UPDATE t SET s[2] = 7 WHERE k = 1",
    ];
    assert_refused(
        &e,
        &statements,
        "List index 2 out of bound, list has size 2",
    );
    q(&e, Some("ks"), "DELETE s[1] FROM t WHERE k = 1").unwrap();
    let got = rows(q(&e, Some("ks"), "SELECT s FROM t WHERE k = 1").unwrap());
    assert_eq!(got.len(), 1);
    assert_eq!(got[0][0], "List([Int(1)])", "{got:?}");
}

/// A statement whose row list and static list operations both fail reports the row's error,
/// whichever is written first (generator, seed 72, `message:list_index_set`).
#[test]
fn a_rows_list_error_comes_before_the_static_lists() {
    let e = setup();
    q(
        &e,
        Some("ks"),
        "CREATE TABLE t (k int, c int, s list<int> STATIC, l list<int>, PRIMARY KEY (k, c))",
    )
    .unwrap();
    q(
        &e,
        Some("ks"),
        "INSERT INTO t (k, c, s, l) VALUES (1, 1, [1], [5])",
    )
    .unwrap();
    let statements = [
        "UPDATE t SET s[2] = 3, l[1] = 4 WHERE k = 1 AND c = 1",
        "UPDATE t SET l[1] = 4, s[2] = 3 WHERE k = 1 AND c = 1",
    ];
    assert_refused(
        &e,
        &statements,
        "List index 1 out of bound, list has size 1",
    );
}

/// Asserts each statement (in keyspace `ks`) fails with a message containing `want`.
fn assert_refused(e: &Engine, statements: &[&str], want: &str) {
    for stmt in statements {
        let err = q(e, Some("ks"), stmt).unwrap_err();
        assert!(err.to_string().contains(want), "{stmt}: {err}");
    }
}

/// Of several failing element operations in one BATCH, the first statement's error is
/// reported, whatever the order of their partitions (generator, `message:batch`).
#[test]
fn batch_reports_the_first_failing_statement() {
    let e = setup();
    q(
        &e,
        Some("ks"),
        "CREATE TABLE t (k int PRIMARY KEY, l list<int>)",
    )
    .unwrap();
    q(&e, Some("ks"), "INSERT INTO t (k, l) VALUES (1, [7])").unwrap();
    let out_of_bound = "DELETE l[1] FROM t WHERE k = 1";
    let null_list = "DELETE l[2] FROM t WHERE k = 2";
    for (first, second, want) in [
        (
            out_of_bound,
            null_list,
            "List index 1 out of bound, list has size 1",
        ),
        (
            null_list,
            out_of_bound,
            "Attempted to delete an element from a list which is null",
        ),
    ] {
        let err = q(
            &e,
            Some("ks"),
            &format!("BEGIN BATCH {first}; {second}; APPLY BATCH"),
        )
        .unwrap_err();
        assert!(err.to_string().contains(want), "{first}; {second}: {err}");
    }
}

#[test]
fn a_partitions_keys_share_the_stripe_of_its_prefix() {
    let e = engine();
    for (id, pk) in [(1u32, &b"k"[..]), (7, b"\x00\x00"), (9, b"a\x00b\xff")] {
        let prefix = keys::partition_prefix(id, crate::token::token(pk), pk);
        let s = e.stripe_of_prefix(&prefix);
        assert_eq!(e.stripe_of(&keys::header_key(&prefix)), s);
        assert_eq!(e.stripe_of(&keys::row_key(&prefix, b"\x01c")), s);
        let (held, _g) = e.lock_partitions([prefix.as_slice()]);
        assert_eq!(held, vec![s]);
    }
}

/// Partitions spread over the write path's lock stripes (a word-at-a-time hash of the
/// partition prefix): 4,096 keys of one table, named as YCSB names them, fill nearly every
/// one of the 1,024 stripes (~1,005 expected of a random function), and so do 4,096 prefixes
/// that differ only in their last four bytes (across a whole word and the zero-padded rest).
#[test]
fn partitions_spread_over_the_lock_stripes() {
    let e = engine();
    let spread = |keys: Vec<Vec<u8>>| {
        let mut used: Vec<usize> = keys
            .iter()
            .map(|pk| e.stripe_of_prefix(&keys::partition_prefix(3, crate::token::token(pk), pk)))
            .collect();
        used.sort_unstable();
        used.dedup();
        used.len()
    };
    let ycsb = (0..4096u64).map(|i| format!("user{}", i * 7919).into_bytes());
    assert!(spread(ycsb.collect()) > 950);
    let mut same_token = std::collections::HashSet::new();
    for i in 0..4096u32 {
        let prefix = [&b"\x01\x00\x00\x00\x03tokentok"[..], &i.to_be_bytes()].concat();
        same_token.insert(e.stripe_of_prefix(&prefix));
    }
    assert!(same_token.len() > 950, "{}", same_token.len());
}

/// Storage that counts what reads touch: point reads plus items a scan yields.
pub(crate) struct CountingStore {
    pub inner: storage::MemStorage,
    pub touched: std::sync::atomic::AtomicUsize,
}

impl storage::Storage for CountingStore {
    fn get(&self, key: &[u8]) -> storage::Result<Option<Vec<u8>>> {
        self.touched
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.get(key)
    }
    fn write(&self, batch: storage::WriteBatch) -> storage::Result<()> {
        self.inner.write(batch)
    }
    fn scan<'a>(
        &'a self,
        start: std::ops::Bound<&[u8]>,
        end: std::ops::Bound<&[u8]>,
        reverse: bool,
    ) -> Box<dyn Iterator<Item = storage::Result<storage::KvPair>> + 'a> {
        Box::new(self.inner.scan(start, end, reverse).inspect(|_| {
            self.touched
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }))
    }
    fn sync(&self) -> storage::Result<()> {
        self.inner.sync()
    }
    fn compact(&self) -> storage::Result<()> {
        self.inner.compact()
    }
    fn merges(&self) -> bool {
        self.inner.merges()
    }
}

/// An UPDATE or INSERT that only sets cells reads nothing (a blind write), and what it leaves
/// reads as the merge of every write; a collection operation still reads the row (it needs
/// it). A write to an indexed table is blind when it touches no index; one that writes an
/// indexed column reads the row (to delete the entries of the value it replaces), and so
/// does one to a table with a view.
#[test]
fn plain_writes_read_nothing_and_merge_on_read() {
    let store = Arc::new(CountingStore {
        inner: storage::MemStorage::with_merge(Arc::new(crate::row::RowMerge)),
        touched: Default::default(),
    });
    let e = Engine::open(store.clone(), node()).unwrap();
    q(&e, None, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}").unwrap();
    q(
        &e,
        Some("ks"),
        "CREATE TABLE t (k int, c int, a int, b text, l list<int>, PRIMARY KEY (k, c))",
    )
    .unwrap();
    let gets = || store.touched.load(std::sync::atomic::Ordering::Relaxed);
    let before = gets();
    q(
        &e,
        Some("ks"),
        "INSERT INTO t (k, c, a) VALUES (1, 1, 10) USING TIMESTAMP 10",
    )
    .unwrap();
    q(
        &e,
        Some("ks"),
        "UPDATE t USING TIMESTAMP 20 SET b = 'x' WHERE k = 1 AND c = 1",
    )
    .unwrap();
    q(
        &e,
        Some("ks"),
        "UPDATE t USING TIMESTAMP 5 SET a = 99 WHERE k = 1 AND c = 1",
    )
    .unwrap();
    q(
        &e,
        Some("ks"),
        "DELETE b FROM t USING TIMESTAMP 15 WHERE k = 1 AND c = 1",
    )
    .unwrap();
    assert_eq!(gets(), before, "plain writes read stored data");
    let got = rows(
        q(
            &e,
            Some("ks"),
            "SELECT a, b, writetime(a) FROM t WHERE k = 1 AND c = 1",
        )
        .unwrap(),
    );
    // a = 10 at 10 (the UPDATE at 5 lost), b = 'x' at 20 (the DELETE at 15 lost).
    assert_eq!(
        got,
        vec![vec!["10".to_string(), "x".to_string(), "10".to_string()]]
    );
    let before = gets();
    q(
        &e,
        Some("ks"),
        "UPDATE t SET l[0] = 1 WHERE k = 1 AND c = 1",
    )
    .unwrap_err();
    assert!(gets() > before, "a list index operation reads the list");
    q(&e, Some("ks"), "CREATE INDEX ON t (a)").unwrap();
    let before = gets();
    q(&e, Some("ks"), "UPDATE t SET b = 'x' WHERE k = 1 AND c = 1").unwrap();
    assert_eq!(
        gets(),
        before,
        "a write of no indexed column of an indexed table reads nothing"
    );
    q(&e, Some("ks"), "UPDATE t SET a = 11 WHERE k = 1 AND c = 1").unwrap();
    assert_eq!(
        gets(),
        before + 1,
        "a write of an indexed column reads its row, once"
    );
    let got = rows(q(&e, Some("ks"), "SELECT k, c, b FROM t WHERE a = 11").unwrap());
    assert_eq!(
        got,
        vec![vec!["1".to_string(), "1".to_string(), "x".to_string()]]
    );
    assert!(rows(q(&e, Some("ks"), "SELECT k FROM t WHERE a = 10").unwrap()).is_empty());
    e.set_materialized_views_enabled(true);
    q(
        &e,
        Some("ks"),
        "CREATE MATERIALIZED VIEW v AS SELECT * FROM t WHERE k IS NOT NULL AND c IS NOT NULL \
         AND a IS NOT NULL PRIMARY KEY (a, k, c)",
    )
    .unwrap();
    let before = gets();
    q(&e, Some("ks"), "UPDATE t SET a = 12 WHERE k = 1 AND c = 1").unwrap();
    assert!(
        gets() > before,
        "a write to a table with a view reads the row"
    );
    let got = rows(q(&e, Some("ks"), "SELECT k, c FROM v WHERE a = 12").unwrap());
    assert_eq!(got, vec![vec!["1".to_string(), "1".to_string()]]);
}

#[test]
fn a_readded_column_never_shows_cells_up_to_its_drop() {
    let (filter, handle) = purge_filter(Now::system);
    let store = Arc::new(storage::MemStorage::with_filter_and_merge(
        filter,
        Arc::new(crate::row::RowMerge),
    ));
    let e = Engine::open_with_filter(store.clone(), node(), handle).unwrap();
    q(&e, None, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}").unwrap();
    let run = |e: &Engine, text: &str| q(e, Some("ks"), text).unwrap();
    run(&e, "CREATE TABLE t (k int PRIMARY KEY, v int, w int)");
    run(
        &e,
        "INSERT INTO t (k, v, w) VALUES (1, 1, 1) USING TIMESTAMP 10",
    );
    run(&e, "ALTER TABLE t DROP v USING TIMESTAMP 100");
    run(&e, "ALTER TABLE t ADD v int");
    run(&e, "UPDATE t USING TIMESTAMP 50 SET v = 2 WHERE k = 2");
    run(&e, "UPDATE t USING TIMESTAMP 150 SET v = 3 WHERE k = 3");
    let read = |e: &Engine, k: i32| {
        rows(run(
            e,
            &format!("SELECT v, writetime(v) FROM t WHERE k = {k}"),
        ))
    };
    let null = || vec![vec!["null".to_string(), "null".to_string()]];
    let three = || vec![vec!["3".to_string(), "150".to_string()]];
    // Compaction brings back neither the cell from before the drop nor the older write.
    e.compact().unwrap();
    assert_eq!(read(&e, 1), null());
    assert!(read(&e, 2).is_empty());
    assert_eq!(read(&e, 3), three());
    // The drop time outlives a restart: a write older than it is still not shown.
    drop(e);
    let e = Engine::open(store, node()).unwrap();
    run(&e, "UPDATE t USING TIMESTAMP 60 SET v = 4 WHERE k = 3");
    run(&e, "DELETE v FROM t USING TIMESTAMP 70 WHERE k = 3");
    assert_eq!(read(&e, 3), three());
    assert_eq!(read(&e, 1), null());
    assert!(matches!(
        q(&e, Some("ks"), "ALTER TABLE t DROP w USING TIMESTAMP ?"),
        Err(err) if err.message().contains("expecting INTEGER")
    ));
}
