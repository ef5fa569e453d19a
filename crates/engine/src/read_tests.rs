//! Reads through the engine: selects, paging and tombstone accounting.

use crate::tests::{at, q, rows, setup};
use crate::{Engine, Outcome, QueryOptions, Values};

/// Every page of `text` with `page_size`, concatenated.
fn all_pages(e: &Engine, text: &str, page_size: i32) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut state = None;
    loop {
        let opts = QueryOptions {
            keyspace: Some("ks".into()),
            page_size: Some(page_size),
            paging_state: state.take(),
            ..Default::default()
        };
        let o = e
            .query(text, Values::Positional(vec![]), &opts, at(1000))
            .unwrap();
        let Outcome::Rows(rs) = &o else {
            panic!("expected rows")
        };
        let next = rs.paging_state.clone();
        let page = rows(o);
        assert!(
            page.len() <= page_size as usize,
            "a page holds at most page_size groups"
        );
        out.extend(page);
        match next {
            Some(s) => state = Some(s),
            None => return out,
        }
    }
}

fn grouped() -> Engine {
    let e = setup();
    q(
        &e,
        Some("ks"),
        "CREATE TABLE g (pk int, c1 int, c2 int, v int, PRIMARY KEY (pk, c1, c2))",
    )
    .unwrap();
    for pk in 0..3 {
        for c1 in 0..4 {
            for c2 in 0..3 {
                let v = pk * 100 + c1 * 10 + c2;
                q(
                    &e,
                    Some("ks"),
                    &format!("INSERT INTO g (pk, c1, c2, v) VALUES ({pk}, {c1}, {c2}, {v})"),
                )
                .unwrap();
            }
        }
    }
    e
}

#[test]
fn group_by_pages_hold_whole_groups_once() {
    let e = grouped();
    let unpaged = rows(
        q(
            &e,
            Some("ks"),
            "SELECT pk, c1, count(*), sum(v) FROM g GROUP BY pk, c1",
        )
        .unwrap(),
    );
    assert_eq!(unpaged.len(), 12);
    assert!(unpaged.iter().all(|r| r[2] == "3"));
    for page in 1..6 {
        let paged = all_pages(
            &e,
            "SELECT pk, c1, count(*), sum(v) FROM g GROUP BY pk, c1",
            page,
        );
        assert_eq!(paged, unpaged, "page size {page}");
    }
    // LIMIT and PER PARTITION LIMIT count groups, across pages too.
    let limited = all_pages(
        &e,
        "SELECT pk, c1, count(*) FROM g GROUP BY pk, c1 PER PARTITION LIMIT 2 LIMIT 5",
        2,
    );
    assert_eq!(limited.len(), 5);
    assert!(limited.iter().all(|r| r[1] == "0" || r[1] == "1"));
}

#[test]
fn aggregates_answer_one_row_with_the_first_rows_values() {
    let e = grouped();
    let r = rows(
        q(
            &e,
            Some("ks"),
            "SELECT c1, c2, count(*), max(v) FROM g WHERE pk = 1",
        )
        .unwrap(),
    );
    assert_eq!(r, vec![vec!["0", "0", "12", "132"]]);
    let r = rows(
        q(
            &e,
            Some("ks"),
            "SELECT v, count(*), sum(v) FROM g WHERE pk = 9",
        )
        .unwrap(),
    );
    assert_eq!(r, vec![vec!["null", "0", "0"]]);
    let r = rows(
        q(
            &e,
            Some("ks"),
            "SELECT pk, count(*) FROM g WHERE pk = 9 GROUP BY pk",
        )
        .unwrap(),
    );
    assert!(r.is_empty());
    // LIMIT does not cut the rows an aggregate folds.
    let r = rows(q(&e, Some("ks"), "SELECT count(*) FROM g LIMIT 1").unwrap());
    assert_eq!(r, vec![vec!["36"]]);
}

#[test]
fn order_by_with_in_merges_partitions() {
    let e = grouped();
    let text = "SELECT pk, c1, c2 FROM g WHERE pk IN (0, 2) ORDER BY c1 DESC LIMIT 4";
    let r = rows(q(&e, Some("ks"), text).unwrap());
    // Sorted by the ORDER BY column alone across partitions, as Cassandra 5.0.9: rows equal
    // on it keep partition key order and, within a partition, the read's (c2 descending).
    assert_eq!(
        r,
        vec![
            vec!["0", "3", "2"],
            vec!["0", "3", "1"],
            vec!["0", "3", "0"],
            vec!["2", "3", "2"]
        ]
    );
}
