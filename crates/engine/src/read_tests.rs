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

/// Each statement's error: its code and message.
fn refusal(e: &Engine, text: &str) -> (i32, String) {
    let err = q(e, Some("ks"), text).unwrap_err();
    (err.code(), err.to_string())
}

/// GROUP BY elements as 5.0.9 prepares them: a non-column, non-function selectable fails its
/// cast to a column (a server error naming its class), an aggregate is refused, and a grouping
/// function must be monotonic.
#[test]
fn group_by_refuses_elements_as_cassandra_prepares_them() {
    let e = grouped();
    let (code, m) = refusal(&e, "SELECT pk FROM g GROUP BY (int) pk");
    assert_eq!(code, 0x0000);
    assert!(m.contains("Selectable$WithTypeHint cannot be cast"), "{m}");
    let (code, m) = refusal(&e, "SELECT pk FROM g GROUP BY pk, [c1]");
    assert_eq!(code, 0x0000);
    assert!(
        m.contains("Selectable$WithArrayLiteral cannot be cast"),
        "{m}"
    );
    // The columns of such an element are looked up first.
    let (_, m) = refusal(&e, "SELECT pk FROM g GROUP BY (int) nope");
    assert!(m.contains("Undefined column name nope"), "{m}");
    let (_, m) = refusal(&e, "SELECT pk FROM g GROUP BY pk, max(c1)");
    assert!(
        m.contains(
            "Aggregate functions are not supported within the GROUP BY clause, got: system.max"
        ),
        "{m}"
    );
    let (_, m) = refusal(&e, "SELECT pk FROM g GROUP BY pk, c1 + c1");
    assert!(
        m.contains(r#"Only monotonic functions are supported in the GROUP BY clause. Got: system."_add" : (int, int) -> int "#),
        "{m}"
    );
    // The selection is checked first.
    let (_, m) = refusal(&e, "SELECT 1 FROM g GROUP BY (int) pk");
    assert!(m.contains("Cannot infer type for term 1"), "{m}");
}

/// Selectors are prepared one after the other, and `CAST(1 AS int)` is no type hint.
#[test]
fn selectors_fail_in_order_and_cast_of_a_literal_is_untyped() {
    let e = grouped();
    let (_, m) = refusal(&e, "SELECT 1, nope FROM g");
    assert!(m.contains("Cannot infer type for term 1"), "{m}");
    let (_, m) = refusal(&e, "SELECT nope, 1 FROM g");
    assert!(m.contains("Undefined column name nope"), "{m}");
    let (_, m) = refusal(&e, "SELECT CAST(1 AS int) FROM g");
    assert!(m.contains("Cannot infer type for term 1"), "{m}");
    let (_, m) = refusal(&e, "SELECT nosuchfn(1) FROM g");
    assert!(m.contains("Unknown function 'nosuchfn'"), "{m}");
    assert_eq!(
        rows(
            q(
                &e,
                Some("ks"),
                "SELECT (int) 1 FROM g WHERE pk = 0 AND c1 = 0 AND c2 = 0"
            )
            .unwrap()
        ),
        vec![vec!["1".to_string()]]
    );
}

/// A null element in a similarity function's vector literal: PREPARE succeeds, EXECUTE fails.
#[test]
fn similarity_null_element_fails_at_execute() {
    let e = setup();
    q(
        &e,
        Some("ks"),
        "CREATE TABLE vt (k int PRIMARY KEY, v vector<float, 2>)",
    )
    .unwrap();
    let p = e
        .prepare(
            "SELECT similarity_cosine(v, [1.0, null]) FROM vt",
            Some("ks"),
            at(1000),
        )
        .unwrap();
    let opts = QueryOptions {
        keyspace: Some("ks".into()),
        ..Default::default()
    };
    let err = e
        .execute(&p.id, Values::Positional(vec![]), &opts, at(1000))
        .unwrap_err();
    assert_eq!(err.code(), 0x0000);
    assert!(
        err.to_string().contains("Element at index 1 is null"),
        "{err}"
    );
}
