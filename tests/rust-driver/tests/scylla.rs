//! The Rust `scylla` driver (1.x) against a running CQL endpoint given by `CQL_HOST`/`CQL_PORT`.
//!
//! Without those variables every test prints why and returns (the project is standalone: run it
//! with `tests/rust-driver/run.sh PORT`). Each test works in its own fresh keyspace and drops it.
//!
//! - `connect_and_system_local`: session start (the driver reads system tables and schema)
//! - `prepared_insert_and_paged_read`: 1000 rows, page size 100, single partition and full scan
//! - `batches`: logged batch of prepared statements, unlogged batch of simple statements
//! - `counter_batch_with_prepared_increments`: counter batch, bind markers typed `counter`
//! - `every_native_type_round_trips`: typical, extreme and null values of all native types

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use futures::TryStreamExt;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::response::{PagingState, PagingStateResponse};
use scylla::statement::batch::{Batch, BatchType};
use scylla::value::{
    CqlDate, CqlDecimal, CqlDuration, CqlTime, CqlTimestamp, CqlTimeuuid, CqlVarint, Row,
};
use uuid::Uuid;

/// `host:port` from the environment, or `None` (and a message) when unset.
fn endpoint() -> Option<String> {
    let (Ok(host), Ok(port)) = (std::env::var("CQL_HOST"), std::env::var("CQL_PORT")) else {
        eprintln!("skipped: set CQL_HOST and CQL_PORT (or use tests/rust-driver/run.sh PORT)");
        return None;
    };
    Some(format!("{host}:{port}"))
}

async fn connect(addr: &str) -> Session {
    tokio::time::timeout(
        Duration::from_secs(30),
        SessionBuilder::new()
            .known_node(addr)
            .connection_timeout(Duration::from_secs(10))
            .build(),
    )
    .await
    .expect("session build timed out")
    .unwrap_or_else(|e| panic!("cannot connect to {addr}: {e}"))
}

/// A fresh keyspace; the session is switched to it.
async fn fresh_keyspace(s: &Session) -> String {
    let ks = format!("rd_{}", &Uuid::new_v4().simple().to_string()[..12]);
    s.query_unpaged(
        format!(
            "CREATE KEYSPACE {ks} WITH replication = \
             {{'class': 'SimpleStrategy', 'replication_factor': 1}}"
        ),
        &[],
    )
    .await
    .unwrap();
    s.use_keyspace(&ks, false).await.unwrap();
    ks
}

async fn drop_keyspace(s: &Session, ks: &str) {
    s.query_unpaged(format!("DROP KEYSPACE IF EXISTS {ks}"), &[])
        .await
        .unwrap();
}

/// Runs `body` with a connected session and a fresh keyspace, bounded in time.
macro_rules! with_session {
    (|$s:ident, $ks:ident| $body:block) => {{
        let Some(addr) = endpoint() else { return };
        tokio::time::timeout(Duration::from_secs(120), async {
            let $s = connect(&addr).await;
            let $ks = fresh_keyspace(&$s).await;
            $body
            drop_keyspace(&$s, &$ks).await;
        })
        .await
        .expect("test timed out");
    }};
}

#[tokio::test]
async fn connect_and_system_local() {
    let Some(addr) = endpoint() else { return };
    let s = connect(&addr).await;
    let (key, release): (String, String) = s
        .query_unpaged("SELECT key, release_version FROM system.local", &[])
        .await
        .unwrap()
        .into_rows_result()
        .unwrap()
        .single_row()
        .unwrap();
    assert_eq!(key, "local");
    assert!(!release.is_empty());
    // The driver found the node and its token ring.
    assert_eq!(s.get_cluster_state().get_nodes_info().len(), 1);
}

#[tokio::test]
async fn prepared_insert_and_paged_read() {
    with_session!(|s, ks| {
        s.query_unpaged(
            "CREATE TABLE paged (p int, c int, v text, PRIMARY KEY (p, c))",
            &[],
        )
        .await
        .unwrap();
        let ins = s
            .prepare("INSERT INTO paged (p, c, v) VALUES (?, ?, ?)")
            .await
            .unwrap();
        // 1000 rows in partition 0 and 1000 partitions 1..=1000 with one row each.
        let mut futs = Vec::new();
        for i in 0..1000i32 {
            futs.push(s.execute_unpaged(&ins, (0i32, i, format!("v{i}"))));
            futs.push(s.execute_unpaged(&ins, (i + 1, 0i32, format!("p{i}"))));
        }
        for r in futures::future::join_all(futs).await {
            r.unwrap();
        }

        // Single partition, page by page: pages of at most 100 rows, in clustering order.
        let mut sel = s
            .prepare("SELECT c, v FROM paged WHERE p = ?")
            .await
            .unwrap();
        sel.set_page_size(100);
        let mut state = PagingState::start();
        let mut seen: Vec<(i32, String)> = Vec::new();
        let mut pages = 0;
        loop {
            let (res, next) = s.execute_single_page(&sel, (0i32,), state).await.unwrap();
            let rows = res.into_rows_result().unwrap();
            assert!(rows.rows_num() <= 100, "page of {} rows", rows.rows_num());
            for r in rows.rows::<(i32, String)>().unwrap() {
                seen.push(r.unwrap());
            }
            pages += 1;
            assert!(pages <= 11, "too many pages");
            match next {
                PagingStateResponse::HasMorePages { state: st } => state = st,
                PagingStateResponse::NoMorePages => break,
            }
        }
        assert!((10..=11).contains(&pages), "{pages} pages");
        let want: Vec<(i32, String)> = (0..1000).map(|i| (i, format!("v{i}"))).collect();
        assert_eq!(seen, want);

        // The same through the driver's pager (automatic paging).
        let rows: Vec<(i32, String)> = s
            .execute_iter(sel.clone(), (0i32,))
            .await
            .unwrap()
            .rows_stream::<(i32, String)>()
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        assert_eq!(rows, want);

        // A whole-table scan with page size 100: every row exactly once.
        let mut scan = s.prepare("SELECT p, c, v FROM paged").await.unwrap();
        scan.set_page_size(100);
        let mut all: Vec<(i32, i32, String)> = s
            .execute_iter(scan, ())
            .await
            .unwrap()
            .rows_stream::<(i32, i32, String)>()
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        assert_eq!(all.len(), 2000);
        all.sort();
        let mut want_all: Vec<(i32, i32, String)> =
            (0..1000).map(|i| (0, i, format!("v{i}"))).collect();
        want_all.extend((0..1000).map(|i| (i + 1, 0, format!("p{i}"))));
        want_all.sort();
        assert_eq!(all, want_all);

        // count(*) agrees.
        let (n,): (i64,) = s
            .query_unpaged("SELECT count(*) FROM paged WHERE p = 0", &[])
            .await
            .unwrap()
            .into_rows_result()
            .unwrap()
            .single_row()
            .unwrap();
        assert_eq!(n, 1000);
    });
}

#[tokio::test]
async fn batches() {
    with_session!(|s, ks| {
        s.query_unpaged(
            "CREATE TABLE b (k int, c int, v text, PRIMARY KEY (k, c))",
            &[],
        )
        .await
        .unwrap();
        // Logged batch of prepared statements across two partitions, with a delete.
        let ins = s
            .prepare("INSERT INTO b (k, c, v) VALUES (?, ?, ?)")
            .await
            .unwrap();
        let del = s
            .prepare("DELETE FROM b WHERE k = ? AND c = ?")
            .await
            .unwrap();
        s.execute_unpaged(&ins, (1i32, 99i32, "gone"))
            .await
            .unwrap();
        let mut logged = Batch::new(BatchType::Logged);
        logged.append_statement(ins.clone());
        logged.append_statement(ins.clone());
        logged.append_statement(ins.clone());
        logged.append_statement(del.clone());
        s.batch(
            &logged,
            (
                (1i32, 1i32, "a"),
                (1i32, 2i32, "b"),
                (2i32, 1i32, "c"),
                (1i32, 99i32),
            ),
        )
        .await
        .unwrap();

        // Unlogged batch of simple statements, with and without bound values.
        let mut unlogged = Batch::new(BatchType::Unlogged);
        unlogged.append_statement("INSERT INTO b (k, c, v) VALUES (3, 1, 'd')");
        unlogged.append_statement("UPDATE b SET v = ? WHERE k = ? AND c = ?");
        s.batch(&unlogged, ((), ("e", 3i32, 2i32))).await.unwrap();

        let mut rows: Vec<(i32, i32, String)> = s
            .query_unpaged("SELECT k, c, v FROM b", &[])
            .await
            .unwrap()
            .into_rows_result()
            .unwrap()
            .rows::<(i32, i32, String)>()
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        rows.sort();
        let want: Vec<(i32, i32, String)> = vec![
            (1, 1, "a".into()),
            (1, 2, "b".into()),
            (2, 1, "c".into()),
            (3, 1, "d".into()),
            (3, 2, "e".into()),
        ];
        assert_eq!(rows, want);
    });
}

/// A counter batch of prepared increments. Cassandra types the bind marker of `n = n + ?` as
/// `counter` (the receiver is the counter column), and the driver only binds `Counter` there.
#[tokio::test]
async fn counter_batch_with_prepared_increments() {
    with_session!(|s, ks| {
        s.query_unpaged("CREATE TABLE cnt (k int PRIMARY KEY, n counter)", &[])
            .await
            .unwrap();
        let inc = s
            .prepare("UPDATE cnt SET n = n + ? WHERE k = ?")
            .await
            .unwrap();
        let mut counters = Batch::new(BatchType::Counter);
        counters.append_statement(inc.clone());
        counters.append_statement(inc.clone());
        counters.append_statement(inc.clone());
        s.batch(
            &counters,
            (
                (scylla::value::Counter(5), 1i32),
                (scylla::value::Counter(-2), 1i32),
                (scylla::value::Counter(7), 2i32),
            ),
        )
        .await
        .unwrap();
        let mut got: Vec<(i32, scylla::value::Counter)> = s
            .query_unpaged("SELECT k, n FROM cnt", &[])
            .await
            .unwrap()
            .into_rows_result()
            .unwrap()
            .rows::<(i32, scylla::value::Counter)>()
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        got.sort_by_key(|(k, _)| *k);
        assert_eq!(
            got,
            vec![
                (1, scylla::value::Counter(3)),
                (2, scylla::value::Counter(7))
            ]
        );
    });
}

/// Columns a..i of table `types` (after the key).
type GroupA = (
    Option<i32>,
    Option<i64>,
    Option<String>,
    Option<Vec<u8>>,
    Option<bool>,
    Option<f64>,
    Option<f32>,
    Option<Uuid>,
    Option<CqlTimestamp>,
);

/// Columns j..r of table `types` (after the key).
type GroupB = (
    Option<CqlDate>,
    Option<CqlTime>,
    Option<IpAddr>,
    Option<i16>,
    Option<i8>,
    Option<CqlVarint>,
    Option<CqlDecimal>,
    Option<CqlDuration>,
    Option<CqlTimeuuid>,
);

fn timeuuid(s: &str) -> CqlTimeuuid {
    CqlTimeuuid::from_bytes(*Uuid::parse_str(s).unwrap().as_bytes())
}

#[tokio::test]
async fn every_native_type_round_trips() {
    with_session!(|s, ks| {
        s.query_unpaged(
            "CREATE TABLE types (k int PRIMARY KEY, \
             a int, b bigint, c text, d blob, e boolean, f double, g float, h uuid, \
             i timestamp, j date, l time, m inet, n smallint, o tinyint, p varint, \
             q decimal, r duration, s timeuuid)",
            &[],
        )
        .await
        .unwrap();
        let ins_a = s
            .prepare("INSERT INTO types (k, a, b, c, d, e, f, g, h, i) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
            .await
            .unwrap();
        let ins_b = s
            .prepare("INSERT INTO types (k, j, l, m, n, o, p, q, r, s) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
            .await
            .unwrap();
        let sel_a = s
            .prepare("SELECT a, b, c, d, e, f, g, h, i FROM types WHERE k = ?")
            .await
            .unwrap();
        let sel_b = s
            .prepare("SELECT j, l, m, n, o, p, q, r, s FROM types WHERE k = ?")
            .await
            .unwrap();

        let cases: Vec<(i32, GroupA, GroupB)> = vec![
            // Typical values.
            (
                1,
                (
                    Some(42),
                    Some(1 << 40),
                    Some("héllo ✓".into()),
                    Some(vec![0, 1, 2, 0xff]),
                    Some(true),
                    Some(3.5),
                    Some(-1.25),
                    Some(Uuid::parse_str("123e4567-e89b-42d3-a456-426614174000").unwrap()),
                    Some(CqlTimestamp(1_700_000_000_123)),
                ),
                (
                    Some(CqlDate((1u32 << 31) + 19_000)),
                    Some(CqlTime(13 * 3600 * 1_000_000_000 + 123_456_789)),
                    Some(IpAddr::V4(Ipv4Addr::new(192, 168, 1, 7))),
                    Some(-1234),
                    Some(-7),
                    Some(CqlVarint::from_signed_bytes_be(vec![0x01, 0x00])), // 256
                    Some(CqlDecimal::from_signed_be_bytes_and_exponent(
                        vec![0x30, 0x39],
                        3,
                    )), // 12.345
                    Some(CqlDuration {
                        months: 14,
                        days: 3,
                        nanoseconds: 4 * 3_600_000_000_000 + 5,
                    }),
                    Some(timeuuid("e4d5c2a0-6b1d-11ee-8c99-0242ac120002")),
                ),
            ),
            // Extremes.
            (
                2,
                (
                    Some(i32::MIN),
                    Some(i64::MAX),
                    Some(String::new()),
                    Some(Vec::new()),
                    Some(false),
                    Some(f64::MAX),
                    Some(f32::MIN_POSITIVE),
                    Some(Uuid::nil()),
                    Some(CqlTimestamp(-62_135_596_800_000)), // 0001-01-01
                ),
                (
                    Some(CqlDate(0)),
                    Some(CqlTime(86_399_999_999_999)),
                    Some(IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1))),
                    Some(i16::MIN),
                    Some(i8::MAX),
                    // -2^100 - 1
                    Some(CqlVarint::from_signed_bytes_be(
                        std::iter::once(0xefu8)
                            .chain(std::iter::repeat_n(0xff, 12))
                            .collect(),
                    )),
                    Some(CqlDecimal::from_signed_be_bytes_and_exponent(
                        vec![0xff],
                        -5,
                    )), // -1E+5
                    Some(CqlDuration {
                        months: -1,
                        days: -2,
                        nanoseconds: -3,
                    }),
                    Some(timeuuid("00000000-0000-1000-8000-000000000000")),
                ),
            ),
            // Nulls everywhere.
            (
                3,
                (None, None, None, None, None, None, None, None, None),
                (None, None, None, None, None, None, None, None, None),
            ),
        ];

        for (k, a, b) in &cases {
            s.execute_unpaged(
                &ins_a,
                (k, &a.0, &a.1, &a.2, &a.3, &a.4, &a.5, &a.6, &a.7, &a.8),
            )
            .await
            .unwrap_or_else(|e| panic!("insert group A, k={k}: {e}"));
            s.execute_unpaged(
                &ins_b,
                (k, &b.0, &b.1, &b.2, &b.3, &b.4, &b.5, &b.6, &b.7, &b.8),
            )
            .await
            .unwrap_or_else(|e| panic!("insert group B, k={k}: {e}"));
        }
        for (k, a, b) in &cases {
            let got_a: GroupA = s
                .execute_unpaged(&sel_a, (k,))
                .await
                .unwrap()
                .into_rows_result()
                .unwrap()
                .single_row()
                .unwrap_or_else(|e| panic!("read group A, k={k}: {e}"));
            assert_eq!(&got_a, a, "group A, k={k}");
            let got_b: GroupB = s
                .execute_unpaged(&sel_b, (k,))
                .await
                .unwrap()
                .into_rows_result()
                .unwrap()
                .single_row()
                .unwrap_or_else(|e| panic!("read group B, k={k}: {e}"));
            assert_eq!(&got_b, b, "group B, k={k}");
        }

        // Unprepared SELECT * as untyped CQL values: 19 columns, the key first.
        let res = s
            .query_unpaged("SELECT * FROM types WHERE k = 1", &[])
            .await
            .unwrap()
            .into_rows_result()
            .unwrap();
        assert_eq!(res.column_specs().len(), 19);
        let row: Row = res.single_row().unwrap();
        assert_eq!(row.columns.len(), 19);
        assert!(row.columns.iter().all(|c| c.is_some()), "{row:?}");

        // Literal values in CQL text read back the same as bound ones.
        s.query_unpaged(
            "INSERT INTO types (k, a, b, c, d, e, f, g, h, i) VALUES (4, 42, 1099511627776, \
             'héllo ✓', 0x000102ff, true, 3.5, -1.25, 123e4567-e89b-42d3-a456-426614174000, \
             '2023-11-14 22:13:20.123+0000')",
            &[],
        )
        .await
        .unwrap();
        s.query_unpaged(
            "INSERT INTO types (k, j, l, m, n, o, p, q, r, s) VALUES (4, '2022-01-08', \
             '13:00:00.123456789', '192.168.1.7', -1234, -7, 256, 12.345, 1y2mo3d4h5ns, \
             e4d5c2a0-6b1d-11ee-8c99-0242ac120002)",
            &[],
        )
        .await
        .unwrap();
        let got_a: GroupA = s
            .execute_unpaged(&sel_a, (4i32,))
            .await
            .unwrap()
            .into_rows_result()
            .unwrap()
            .single_row()
            .unwrap();
        assert_eq!(got_a, cases[0].1, "literals, group A");
        let got_b: GroupB = s
            .execute_unpaged(&sel_b, (4i32,))
            .await
            .unwrap()
            .into_rows_result()
            .unwrap()
            .single_row()
            .unwrap();
        assert_eq!(got_b, cases[0].2, "literals, group B");
    });
}
