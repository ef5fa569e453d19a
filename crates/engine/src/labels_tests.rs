//! Visibility labels through CQL text: what readers with different authorizations see, the
//! write constraint, the refusals, and the cells' encoding (docs/visibility.md).

use std::sync::Arc;

use crate::auth::AuthSettings;
use crate::tests::{at, node, rows};
use crate::visibility::{parse_authorization_list, Authorizations};
use crate::{Engine, Outcome, QueryOptions, Values};
use proto::error::DbError;

fn engine_with_roles(store: Arc<storage::MemStorage>) -> Engine {
    let e = Engine::open(store, node()).unwrap();
    e.auth().configure(AuthSettings {
        password_authenticator: true,
        cassandra_authorizer: true,
    });
    e.auth().setup_default_superuser("cassandra").unwrap();
    e
}

fn run_as(e: &Engine, role: &str, asked: Option<&str>, text: &str) -> Result<Outcome, DbError> {
    let opts = QueryOptions {
        role: Some(Arc::from(role)),
        keyspace: Some("ks".into()),
        authorizations: asked.map(|a| parse_authorization_list(a.as_bytes()).unwrap()),
        ..Default::default()
    };
    e.query(text, Values::Positional(vec![]), &opts, at(1000))
}

fn ok(e: &Engine, role: &str, text: &str) -> Outcome {
    run_as(e, role, None, text).unwrap_or_else(|err| panic!("{text}: {err}"))
}

fn err(e: &Engine, role: &str, text: &str) -> String {
    match run_as(e, role, None, text) {
        Ok(o) => panic!("{text} succeeded: {o:?}"),
        Err(err) => format!("{:#06x} {}", err.code(), err.message()),
    }
}

fn select(e: &Engine, role: &str, asked: Option<&str>, text: &str) -> Vec<Vec<String>> {
    rows(run_as(e, role, asked, text).unwrap_or_else(|err| panic!("{text}: {err}")))
}

/// Roles: `admin` (superuser, all authorizations granted), `alice` (A), `bob` (B), `eve`
/// (none); table `ks.t` with labels, every role may read and write it.
fn setup() -> Engine {
    let e = engine_with_roles(Arc::new(storage::MemStorage::new()));
    let su = "cassandra";
    ok(&e, su, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    ok(&e, su, "CREATE TABLE ks.t (k int, c int, v int, w text, s int static, PRIMARY KEY (k, c)) WITH visibility = {'enabled': 'true'}");
    for r in ["alice", "bob", "eve"] {
        ok(&e, su, &format!("CREATE ROLE {r} WITH LOGIN = true"));
        ok(
            &e,
            su,
            &format!("GRANT ALL PERMISSIONS ON KEYSPACE ks TO {r}"),
        );
    }
    ok(&e, su, "GRANT AUTHORIZATIONS 'A' TO alice");
    ok(&e, su, "GRANT AUTHORIZATIONS 'B' TO bob");
    ok(&e, su, "GRANT AUTHORIZATIONS 'A', 'B' TO cassandra");
    e
}

#[test]
fn readers_see_only_cells_their_authorizations_satisfy() {
    let e = setup();
    let su = "cassandra";
    ok(
        &e,
        su,
        "INSERT INTO t (k, c, v) VALUES (1, 1, 10) USING VISIBILITY 'A'",
    );
    ok(
        &e,
        su,
        "UPDATE t USING VISIBILITY 'B' SET w = 'b' WHERE k = 1 AND c = 1",
    );
    ok(
        &e,
        su,
        "INSERT INTO t (k, c, v) VALUES (1, 2, 20) USING VISIBILITY 'A&B'",
    );
    ok(&e, su, "INSERT INTO t (k, c, v) VALUES (1, 3, 30)");
    let q = "SELECT c, v, w FROM t WHERE k = 1";
    assert_eq!(
        select(&e, su, None, q),
        [["1", "10", "b"], ["2", "20", "null"], ["3", "30", "null"]]
    );
    assert_eq!(
        select(&e, "alice", None, q),
        [["1", "10", "null"], ["3", "30", "null"]]
    );
    assert_eq!(
        select(&e, "bob", None, q),
        [["1", "null", "b"], ["3", "30", "null"]]
    );
    // Rows with no visible cell vanish; the unlabelled row stays.
    assert_eq!(select(&e, "eve", None, q), [["3", "30", "null"]]);
    // Aggregates count only what is visible.
    let count = "SELECT count(*), count(v), sum(v) FROM t WHERE k = 1";
    assert_eq!(select(&e, su, None, count), [["3", "3", "60"]]);
    assert_eq!(select(&e, "alice", None, count), [["2", "2", "40"]]);
    assert_eq!(select(&e, "eve", None, count), [["1", "1", "30"]]);
    // writetime/ttl of a hidden cell are null, never the hidden cell's.
    let wt = "SELECT writetime(v), ttl(v) FROM t WHERE k = 1 AND c = 1";
    assert_eq!(select(&e, "bob", None, wt), [["null", "null"]]);
    assert_eq!(select(&e, "alice", None, wt)[0][1], "null");
    assert_ne!(select(&e, "alice", None, wt)[0][0], "null");
}

#[test]
fn payload_narrows_never_widens() {
    let e = setup();
    let su = "cassandra";
    ok(
        &e,
        su,
        "INSERT INTO t (k, c, v) VALUES (1, 1, 10) USING VISIBILITY 'A'",
    );
    ok(
        &e,
        su,
        "INSERT INTO t (k, c, v) VALUES (1, 2, 20) USING VISIBILITY 'B'",
    );
    let q = "SELECT c FROM t";
    assert_eq!(select(&e, su, None, q), [["1"], ["2"]]);
    assert_eq!(select(&e, su, Some("B"), q), [["2"]]);
    assert!(select(&e, su, Some(""), q).is_empty());
    let refused = run_as(&e, "alice", Some("A,B"), q).unwrap_err();
    assert_eq!(refused.code(), 0x2100, "{}", refused.message());
    assert!(refused.message().contains("'B'"), "{}", refused.message());
}

#[test]
fn paging_and_distinct_count_only_visible_rows() {
    let e = setup();
    let su = "cassandra";
    for c in 0..10 {
        let label = if c % 2 == 0 { "A" } else { "B" };
        ok(
            &e,
            su,
            &format!(
                "INSERT INTO t (k, c, v) VALUES ({}, {c}, {c}) USING VISIBILITY '{label}'",
                c % 3
            ),
        );
    }
    let opts = QueryOptions {
        role: Some(Arc::from("alice")),
        keyspace: Some("ks".into()),
        page_size: Some(2),
        ..Default::default()
    };
    let mut seen = Vec::new();
    let mut state = None;
    loop {
        let o = QueryOptions {
            paging_state: state.clone(),
            ..opts.clone()
        };
        let Outcome::Rows(rs) = e
            .query("SELECT v FROM t", Values::Positional(vec![]), &o, at(1000))
            .unwrap()
        else {
            panic!("no rows")
        };
        assert!(rs.rows <= 2);
        state = rs.paging_state.clone();
        seen.extend(rows(Outcome::Rows(rs)).into_iter().map(|r| r[0].clone()));
        if state.is_none() {
            break;
        }
    }
    seen.sort_by_key(|v| v.parse::<i32>().unwrap());
    assert_eq!(seen, ["0", "2", "4", "6", "8"]);
    // Partitions 0..3 all hold A rows; a role with only B sees partitions that have B rows.
    assert_eq!(select(&e, "eve", None, "SELECT DISTINCT k FROM t").len(), 0);
    assert_eq!(select(&e, "bob", None, "SELECT DISTINCT k FROM t").len(), 3);
}

#[test]
fn statics_collections_and_markers_carry_labels() {
    let e = setup();
    let su = "cassandra";
    ok(&e, su, "CREATE TABLE ks.m (k int PRIMARY KEY, tags set<text>, v int) WITH visibility = {'enabled': 'true'}");
    ok(
        &e,
        su,
        "UPDATE m USING VISIBILITY 'A' SET tags = tags + {'a1', 'a2'} WHERE k = 1",
    );
    ok(
        &e,
        su,
        "UPDATE m USING VISIBILITY 'B' SET tags = tags + {'b1'} WHERE k = 1",
    );
    assert_eq!(
        select(&e, "alice", None, "SELECT tags FROM m")[0][0],
        r#"Set([Varchar("a1"), Varchar("a2")])"#
    );
    assert_eq!(
        select(&e, "bob", None, "SELECT tags FROM m")[0][0],
        r#"Set([Varchar("b1")])"#
    );
    assert!(select(&e, "eve", None, "SELECT tags FROM m").is_empty());
    // A key-only INSERT's row marker has the label: the row exists only for those who see it.
    ok(&e, su, "INSERT INTO m (k) VALUES (2) USING VISIBILITY 'A'");
    assert_eq!(
        select(&e, "alice", None, "SELECT k FROM m WHERE k = 2"),
        [["2"]]
    );
    assert!(select(&e, "bob", None, "SELECT k FROM m WHERE k = 2").is_empty());
    // Static cells.
    ok(
        &e,
        su,
        "UPDATE t USING VISIBILITY 'B' SET s = 5 WHERE k = 9",
    );
    assert_eq!(
        select(&e, "bob", None, "SELECT k, s FROM t WHERE k = 9"),
        [["9", "5"]]
    );
    assert!(select(&e, "alice", None, "SELECT k, s FROM t WHERE k = 9").is_empty());
}

#[test]
fn a_newer_write_replaces_the_cell_and_its_label() {
    let e = setup();
    let su = "cassandra";
    ok(
        &e,
        su,
        "INSERT INTO t (k, c, v) VALUES (1, 1, 10) USING VISIBILITY 'A' AND TIMESTAMP 10",
    );
    ok(
        &e,
        su,
        "INSERT INTO t (k, c, v) VALUES (1, 1, 11) USING TIMESTAMP 20 AND VISIBILITY ''",
    );
    assert_eq!(select(&e, "eve", None, "SELECT v FROM t"), [["11"]]);
    // An older labelled write loses to the newer unlabelled one.
    ok(
        &e,
        su,
        "INSERT INTO t (k, c, v) VALUES (1, 1, 12) USING VISIBILITY 'B' AND TIMESTAMP 15",
    );
    assert_eq!(select(&e, "eve", None, "SELECT v FROM t"), [["11"]]);
    // A deletion removes labelled cells whoever cannot see them.
    ok(
        &e,
        su,
        "INSERT INTO t (k, c, v) VALUES (2, 1, 10) USING VISIBILITY 'A'",
    );
    ok(&e, "bob", "DELETE FROM t WHERE k = 2");
    assert!(select(&e, su, None, "SELECT v FROM t WHERE k = 2").is_empty());
}

#[test]
fn authorizations_are_role_data() {
    let e = setup();
    let su = "cassandra";
    // Held through granted roles.
    ok(&e, su, "CREATE ROLE analysts");
    ok(&e, su, "GRANT AUTHORIZATIONS 'C' TO analysts");
    ok(&e, su, "GRANT analysts TO eve");
    assert_eq!(
        e.role_authorizations(Some("eve")),
        Authorizations::new(["C".to_string()])
    );
    assert_eq!(
        select(&e, "eve", None, "LIST AUTHORIZATIONS"),
        [["eve", "C"]]
    );
    assert_eq!(
        select(&e, su, None, "LIST AUTHORIZATIONS OF alice"),
        [["alice", "A"]]
    );
    // Only a superuser or a role with AUTHORIZE on the role may grant.
    assert!(err(&e, "alice", "GRANT AUTHORIZATIONS 'B' TO alice").starts_with("0x2100"));
    ok(&e, su, "GRANT AUTHORIZE ON ROLE bob TO alice");
    ok(&e, "alice", "GRANT AUTHORIZATIONS 'Z' TO bob");
    ok(&e, "alice", "REVOKE AUTHORIZATIONS 'B' FROM bob");
    assert_eq!(
        select(&e, su, None, "LIST AUTHORIZATIONS OF bob"),
        [["bob", "Z"]]
    );
    assert!(err(&e, "bob", "LIST AUTHORIZATIONS OF alice").starts_with("0x2100"));
    assert!(err(&e, su, "GRANT AUTHORIZATIONS '' TO bob").contains("cannot be empty"));
    assert!(err(&e, su, "GRANT AUTHORIZATIONS 'A' TO nobody").contains("doesn't exist"));
    // Dropped with the role.
    ok(&e, su, "DROP ROLE bob");
    assert!(!e.auth().state().authorizations.contains_key("bob"));
}

#[test]
fn authorizations_and_labels_survive_a_reopen_and_a_compaction() {
    let store = Arc::new(storage::MemStorage::new());
    {
        let e = engine_with_roles(store.clone());
        let su = "cassandra";
        ok(&e, su, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
        ok(
            &e,
            su,
            "CREATE TABLE ks.t (k int PRIMARY KEY, v int) WITH visibility = {'enabled': 'true'}",
        );
        ok(&e, su, "CREATE ROLE alice WITH LOGIN = true");
        ok(&e, su, "GRANT SELECT ON KEYSPACE ks TO alice");
        ok(&e, su, "GRANT AUTHORIZATIONS 'A' TO alice");
        ok(
            &e,
            su,
            "INSERT INTO t (k, v) VALUES (1, 1) USING VISIBILITY 'A'",
        );
        ok(
            &e,
            su,
            "INSERT INTO t (k, v) VALUES (2, 2) USING VISIBILITY 'B' AND TTL 100000",
        );
    }
    let e = engine_with_roles(store);
    e.compact().unwrap();
    assert_eq!(
        select(&e, "alice", None, "SELECT k, v FROM t"),
        [["1", "1"]]
    );
}

#[test]
fn write_constraint_refuses_labels_the_writer_cannot_see() {
    let e = setup();
    let su = "cassandra";
    ok(&e, su, "CREATE TABLE ks.c (k int PRIMARY KEY, v int) WITH visibility = {'enabled': 'true', 'constraint': 'true'}");
    ok(
        &e,
        "alice",
        "INSERT INTO c (k, v) VALUES (1, 1) USING VISIBILITY 'A|B'",
    );
    let refused = err(
        &e,
        "alice",
        "INSERT INTO c (k, v) VALUES (1, 1) USING VISIBILITY 'B'",
    );
    assert!(
        refused.starts_with("0x2100") && refused.contains("visibility constraint"),
        "{refused}"
    );
    let in_batch = err(
        &e,
        "alice",
        "BEGIN BATCH INSERT INTO c (k, v) VALUES (2, 2) USING VISIBILITY 'A'; INSERT INTO c (k, v) VALUES (3, 3) USING VISIBILITY 'A&B'; APPLY BATCH",
    );
    assert!(in_batch.contains("visibility constraint"), "{in_batch}");
    assert!(select(&e, su, None, "SELECT k FROM c WHERE k IN (2, 3)").is_empty());
    // Without the constraint anything valid may be written.
    ok(
        &e,
        "alice",
        "INSERT INTO t (k, c, v) VALUES (1, 1, 1) USING VISIBILITY 'B'",
    );
}

#[test]
fn batch_statements_carry_their_own_labels() {
    let e = setup();
    let su = "cassandra";
    ok(
        &e,
        su,
        "BEGIN BATCH INSERT INTO t (k, c, v) VALUES (1, 1, 1) USING VISIBILITY 'A'; \
         INSERT INTO t (k, c, v) VALUES (1, 2, 2) USING VISIBILITY 'B'; APPLY BATCH",
    );
    ok(
        &e,
        su,
        "BEGIN BATCH USING VISIBILITY 'B' INSERT INTO t (k, c, v) VALUES (1, 3, 3); APPLY BATCH",
    );
    assert_eq!(select(&e, "alice", None, "SELECT c FROM t"), [["1"]]);
    assert_eq!(select(&e, "bob", None, "SELECT c FROM t"), [["2"], ["3"]]);
    let both = err(&e, su, "BEGIN BATCH USING VISIBILITY 'B' INSERT INTO t (k, c, v) VALUES (1, 4, 4) USING VISIBILITY 'A'; APPLY BATCH");
    assert!(
        both.contains("either on BATCH or individual statements"),
        "{both}"
    );
}

#[test]
fn refusals_are_clear() {
    let e = setup();
    let su = "cassandra";
    let bad = err(
        &e,
        su,
        "INSERT INTO t (k, c, v) VALUES (1, 1, 1) USING VISIBILITY 'A|B&C'",
    );
    assert!(
        bad.starts_with("0x2200") && bad.contains("cannot be mixed"),
        "{bad}"
    );
    ok(&e, su, "CREATE TABLE ks.plain (k int PRIMARY KEY, v int)");
    let plain = err(
        &e,
        su,
        "INSERT INTO plain (k, v) VALUES (1, 1) USING VISIBILITY 'A'",
    );
    assert!(plain.contains("does not take visibility labels"), "{plain}");
    assert!(
        err(&e, su, "DELETE FROM t USING VISIBILITY 'A' WHERE k = 1")
            .contains("not allowed on DELETE")
    );
    ok(&e, su, "CREATE TABLE ks.vt (k int PRIMARY KEY, e vector<float, 2>) WITH visibility = {'enabled': 'true'}");
    let vector = err(&e, su, "CREATE CUSTOM INDEX ON vt (e) USING 'sai'");
    assert!(
        vector.contains("Vector indexes are not supported"),
        "{vector}"
    );
    assert!(err(
        &e,
        su,
        "INSERT INTO t (k, c, v) VALUES (1, 1, 1) IF NOT EXISTS"
    )
    .contains("Conditional updates"));
    assert!(err(
        &e,
        su,
        "ALTER TABLE t WITH visibility = {'enabled': 'false'}"
    )
    .contains("cannot be disabled"));
    ok(
        &e,
        su,
        "CREATE TABLE ks.pv (k int PRIMARY KEY, e vector<float, 2>)",
    );
    ok(&e, su, "CREATE CUSTOM INDEX ON pv (e) USING 'sai'");
    assert!(err(
        &e,
        su,
        "ALTER TABLE pv WITH visibility = {'enabled': 'true'}"
    )
    .contains("cannot be enabled"));
    // A table's plain secondary index does not stop labels (its reads check base rows).
    ok(&e, su, "CREATE INDEX ON plain (v)");
    ok(
        &e,
        su,
        "ALTER TABLE plain WITH visibility = {'enabled': 'true'}",
    );
    assert!(err(
        &e,
        su,
        "CREATE TABLE ks.x (k int PRIMARY KEY) WITH visibility = {'on': 'true'}"
    )
    .contains("Invalid visibility sub-option"));
}

#[test]
fn unlabelled_cells_keep_their_bytes() {
    use crate::row::{Cell, CellValue, Marker, Row};
    let plain = Row {
        clustering: vec![b"c".to_vec()],
        marker: Some(Marker {
            ts: 5,
            expiry: None,
        }),
        marker_label: None,
        deletion: None,
        cells: vec![Cell {
            column: 1,
            ts: 5,
            value: CellValue::Live {
                value: bytes::Bytes::from_static(b"v"),
                expiry: None,
                label: None,
            },
        }],
    };
    // No byte for labels: the compact format's version and base timestamp, clustering
    // (count, length, value), marker (tag, timestamp delta, no expiry), no deletion, cells
    // (count; column, timestamp delta, live tag, no expiry, length, value).
    let golden: Vec<u8> = [
        &[4u8][..],
        &5i64.to_be_bytes(),
        &[1, 1, b'c', 1, 0, 0, 0, 1, 1, 0, 0, 0, 1, b'v'],
    ]
    .concat();
    assert_eq!(plain.encode(), golden);
    let mut labelled = plain.clone();
    labelled.marker_label = Some(b"A&B".as_slice().into());
    if let CellValue::Live { label, .. } = &mut labelled.cells[0].value {
        *label = Some(b"A|B".as_slice().into());
    }
    assert_eq!(Row::decode(&labelled.encode()).unwrap(), labelled);
    // Purging (compaction) keeps labels; an expired labelled cell becomes a plain tombstone.
    let mut purged = labelled.clone();
    assert!(purged.purge(100, 0));
    assert_eq!(purged, labelled);
    let mut seen = labelled.clone();
    seen.hide(&Authorizations::new(["A".to_string()]));
    assert!(seen.marker.is_none() && seen.cells.len() == 1);
}

#[test]
fn without_logins_the_payload_alone_names_the_authorizations() {
    let e = crate::tests::engine();
    let run = |asked: Option<&str>, text: &str| {
        let opts = QueryOptions {
            keyspace: Some("ks".into()),
            authorizations: asked.map(|a| parse_authorization_list(a.as_bytes()).unwrap()),
            ..Default::default()
        };
        e.query(text, Values::Positional(vec![]), &opts, at(1000))
    };
    run(None, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}").unwrap();
    run(None, "CREATE TABLE ks.t (k int PRIMARY KEY, v int) WITH visibility = {'enabled': 'true', 'constraint': 'true'}").unwrap();
    // The constraint checks the payload's set: none named, no label may be written.
    let refused = run(
        None,
        "INSERT INTO t (k, v) VALUES (1, 1) USING VISIBILITY 'A'",
    )
    .unwrap_err();
    assert_eq!(refused.code(), 0x2100);
    run(
        Some("A"),
        "INSERT INTO t (k, v) VALUES (1, 1) USING VISIBILITY 'A'",
    )
    .unwrap();
    run(None, "INSERT INTO t (k, v) VALUES (2, 2)").unwrap();
    assert_eq!(
        rows(run(None, "SELECT k FROM t WHERE k IN (1, 2)").unwrap()),
        [["2"]]
    );
    assert_eq!(
        rows(run(Some("A"), "SELECT k FROM t WHERE k IN (1, 2)").unwrap()),
        [["1"], ["2"]]
    );
    // Authorizations are role data: without logins there is no role to grant them to.
    assert_eq!(
        run(None, "GRANT AUTHORIZATIONS 'A' TO r")
            .unwrap_err()
            .code(),
        0x2100
    );
}

fn run_bound(
    e: &Engine,
    role: &str,
    asked: Option<&str>,
    text: &str,
    values: Values,
) -> Result<Outcome, DbError> {
    let opts = QueryOptions {
        role: Some(Arc::from(role)),
        keyspace: Some("ks".into()),
        authorizations: asked.map(|a| parse_authorization_list(a.as_bytes()).unwrap()),
        ..Default::default()
    };
    e.query(text, values, &opts, at(1000))
}

fn text(s: &str) -> proto::request::RawValue {
    proto::request::RawValue::Bytes(bytes::Bytes::copy_from_slice(s.as_bytes()))
}

fn int(v: i32) -> proto::request::RawValue {
    proto::request::RawValue::Bytes(bytes::Bytes::copy_from_slice(&v.to_be_bytes()))
}

#[test]
fn using_visibility_takes_a_bind_marker() {
    use proto::request::RawValue;
    let e = setup();
    let su = "cassandra";
    let ins = "INSERT INTO t (k, c, v) VALUES (?, ?, ?) USING TTL ? AND VISIBILITY ?";
    let put = |c: i32, label: RawValue| {
        run_bound(
            &e,
            su,
            None,
            ins,
            Values::Positional(vec![int(1), int(c), int(c), int(0), label]),
        )
    };
    put(1, text("A")).unwrap();
    put(2, text("B")).unwrap();
    put(3, text("")).unwrap();
    // Unset: as if the clause were absent, no label.
    put(4, RawValue::Unset).unwrap();
    // Null: refused, as Cassandra refuses a null TIMESTAMP (a null must not publish a cell).
    let null = put(5, RawValue::Null).unwrap_err();
    assert_eq!(null.code(), 0x2200);
    assert_eq!(null.message(), "Invalid null value of visibility");
    let bad = put(6, text("A|B&C")).unwrap_err();
    assert!(
        bad.message().contains("cannot be mixed"),
        "{}",
        bad.message()
    );
    let q = "SELECT c FROM t WHERE k = 1";
    assert_eq!(select(&e, "alice", None, q), [["1"], ["3"], ["4"]]);
    assert_eq!(select(&e, "bob", None, q), [["2"], ["3"], ["4"]]);
    assert_eq!(select(&e, "eve", None, q), [["3"], ["4"]]);
    // Named, in any position of the clause, on UPDATE and on a BATCH.
    run_bound(
        &e,
        su,
        None,
        "UPDATE t USING VISIBILITY :lbl AND TIMESTAMP :ts SET w = :w WHERE k = :k AND c = :c",
        Values::Named(vec![
            ("lbl".into(), text("B")),
            (
                "ts".into(),
                RawValue::Bytes(bytes::Bytes::copy_from_slice(&5i64.to_be_bytes())),
            ),
            ("w".into(), text("wb")),
            ("k".into(), int(1)),
            ("c".into(), int(3)),
        ]),
    )
    .unwrap();
    assert_eq!(
        select(&e, "alice", None, "SELECT w FROM t WHERE k = 1 AND c = 3"),
        [["null"]]
    );
    assert_eq!(
        select(&e, "bob", None, "SELECT w FROM t WHERE k = 1 AND c = 3"),
        [["wb"]]
    );
    run_bound(
        &e,
        su,
        None,
        "BEGIN BATCH USING VISIBILITY ? INSERT INTO t (k, c, v) VALUES (2, 1, 1); INSERT INTO t (k, c, v) VALUES (2, 2, 2); APPLY BATCH",
        Values::Positional(vec![text("A")]),
    )
    .unwrap();
    assert_eq!(
        select(&e, "alice", None, "SELECT c FROM t WHERE k = 2").len(),
        2
    );
    assert!(select(&e, "bob", None, "SELECT c FROM t WHERE k = 2").is_empty());
    // PREPARE: the marker is text named `[visibility]` (or its own name).
    let p = e.prepare(ins, Some("ks"), at(1000)).unwrap();
    let compiled = p.compiled.read().unwrap().1.clone();
    let spec = compiled.binds[4].as_ref().unwrap();
    assert_eq!(
        (spec.name.as_str(), &spec.ty),
        ("[visibility]", &proto::types::ColumnType::Varchar)
    );
    // A table without labels refuses the marker when prepared, before any value.
    ok(&e, su, "CREATE TABLE ks.plain (k int PRIMARY KEY, v int)");
    let Err(plain) = e.prepare(
        "INSERT INTO ks.plain (k, v) VALUES (1, 1) USING VISIBILITY ?",
        None,
        at(1000),
    ) else {
        panic!("prepared on a table without labels")
    };
    assert!(plain.message().contains("does not take visibility labels"));
}

#[test]
fn a_bound_label_meets_the_write_constraint() {
    let e = setup();
    let su = "cassandra";
    ok(
        &e,
        su,
        "ALTER TABLE t WITH visibility = {'enabled': 'true', 'constraint': 'true'}",
    );
    let ins = "INSERT INTO t (k, c, v) VALUES (1, 1, 1) USING VISIBILITY ?";
    run_bound(&e, "alice", None, ins, Values::Positional(vec![text("A")])).unwrap();
    let refused =
        run_bound(&e, "alice", None, ins, Values::Positional(vec![text("B")])).unwrap_err();
    assert_eq!(refused.code(), 0x2100, "{}", refused.message());
}

#[test]
fn list_updates_by_index_count_only_visible_items() {
    let e = setup();
    let su = "cassandra";
    ok(
        &e,
        su,
        "CREATE TABLE ks.l (k int PRIMARY KEY, l list<text>) WITH visibility = {'enabled': 'true'}",
    );
    ok(
        &e,
        su,
        "UPDATE l USING VISIBILITY 'A' SET l = l + ['a0', 'a1', 'a2'] WHERE k = 1",
    );
    ok(
        &e,
        su,
        "UPDATE l USING VISIBILITY 'B' SET l = l + ['b0'] WHERE k = 1",
    );
    // bob sees one item: index 1 is out of bound for a list of size 1, not of size 4.
    let out = err(&e, "bob", "UPDATE l SET l[1] = 'x' WHERE k = 1");
    assert!(
        out.ends_with("List index 1 out of bound, list has size 1"),
        "{out}"
    );
    let out = err(&e, "bob", "DELETE l[3] FROM l WHERE k = 1");
    assert!(
        out.ends_with("List index 3 out of bound, list has size 1"),
        "{out}"
    );
    // eve sees none: the list is null to her.
    let null = err(&e, "eve", "UPDATE l SET l[0] = 'x' WHERE k = 1");
    assert!(null.contains("list which is null"), "{null}");
    // bob's l[0] is his own item, not alice's first.
    ok(
        &e,
        "bob",
        "UPDATE l USING VISIBILITY 'B' SET l[0] = 'b0x' WHERE k = 1",
    );
    assert_eq!(
        select(&e, su, None, "SELECT l FROM l")[0][0],
        r#"List([Varchar("a0"), Varchar("a1"), Varchar("a2"), Varchar("b0x")])"#
    );
    // alice deletes her second item.
    ok(&e, "alice", "DELETE l[1] FROM l WHERE k = 1");
    assert_eq!(
        select(&e, su, None, "SELECT l FROM l")[0][0],
        r#"List([Varchar("a0"), Varchar("a2"), Varchar("b0x")])"#
    );
    // Removing by value takes only the items the writer sees.
    ok(
        &e,
        su,
        "UPDATE l USING VISIBILITY 'B' SET l = l + ['a0'] WHERE k = 1",
    );
    ok(&e, "bob", "UPDATE l SET l = l - ['a0'] WHERE k = 1");
    assert_eq!(
        select(&e, su, None, "SELECT l FROM l")[0][0],
        r#"List([Varchar("a0"), Varchar("a2"), Varchar("b0x")])"#
    );
    // A table without labels keeps Cassandra's behaviour (every item counts).
    ok(
        &e,
        su,
        "CREATE TABLE ks.pl (k int PRIMARY KEY, l list<int>)",
    );
    ok(&e, "eve", "UPDATE pl SET l = [1, 2] WHERE k = 1");
    ok(&e, "eve", "UPDATE pl SET l[1] = 3 WHERE k = 1");
    assert_eq!(
        select(&e, su, None, "SELECT l FROM pl")[0][0],
        "List([Int(1), Int(3)])"
    );
}

#[test]
fn indexes_on_labelled_tables_return_only_visible_matches() {
    let e = setup();
    let su = "cassandra";
    ok(&e, su, "CREATE INDEX t_v ON t (v)");
    ok(&e, su, "CREATE CUSTOM INDEX t_w ON t (w) USING 'sai'");
    ok(&e, su, "CREATE INDEX t_s ON t (s)");
    ok(
        &e,
        su,
        "INSERT INTO t (k, c, v, w) VALUES (1, 1, 7, 'x') USING VISIBILITY 'A'",
    );
    ok(
        &e,
        su,
        "INSERT INTO t (k, c, v, w) VALUES (1, 2, 7, 'x') USING VISIBILITY 'B'",
    );
    ok(&e, su, "INSERT INTO t (k, c, v, w) VALUES (2, 1, 7, 'x')");
    // Indexed cell hidden, rest visible: the row does not match for that reader.
    ok(
        &e,
        su,
        "INSERT INTO t (k, c, w) VALUES (3, 1, 'x') USING VISIBILITY 'A'",
    );
    ok(
        &e,
        su,
        "UPDATE t USING VISIBILITY 'B' SET v = 7 WHERE k = 3 AND c = 1",
    );
    ok(
        &e,
        su,
        "UPDATE t USING VISIBILITY 'A' SET s = 9 WHERE k = 4",
    );
    ok(&e, su, "INSERT INTO t (k, c) VALUES (4, 1)");
    for (idx, q) in [
        ("legacy", "SELECT k, c FROM t WHERE v = 7"),
        ("sai", "SELECT k, c FROM t WHERE w = 'x'"),
    ] {
        let mut all = select(&e, su, None, q);
        all.sort();
        assert_eq!(
            all,
            [["1", "1"], ["1", "2"], ["2", "1"], ["3", "1"]],
            "{idx}"
        );
        let mut a = select(&e, "alice", None, q);
        a.sort();
        let mut b = select(&e, "bob", None, q);
        b.sort();
        let mut n = select(&e, "eve", None, q);
        n.sort();
        if idx == "legacy" {
            assert_eq!(a, [["1", "1"], ["2", "1"]]);
            assert_eq!(b, [["1", "2"], ["2", "1"], ["3", "1"]]);
        } else {
            assert_eq!(a, [["1", "1"], ["2", "1"], ["3", "1"]]);
            assert_eq!(b, [["1", "2"], ["2", "1"]]);
        }
        assert_eq!(n, [["2", "1"]], "{idx}");
    }
    assert_eq!(
        select(&e, "alice", None, "SELECT count(*) FROM t WHERE v = 7"),
        [["2"]]
    );
    assert_eq!(
        select(&e, "eve", None, "SELECT count(*) FROM t WHERE v = 7"),
        [["1"]]
    );
    // Rows come back cut to what the reader sees.
    assert_eq!(
        select(&e, "bob", None, "SELECT w FROM t WHERE k = 3 AND v = 7"),
        [["null"]]
    );
    // A collection index: a hidden item does not match CONTAINS (nor its key CONTAINS KEY).
    ok(&e, su, "CREATE TABLE ks.tags (k int PRIMARY KEY, tags set<text>, m map<text, int>) WITH visibility = {'enabled': 'true'}");
    ok(&e, su, "CREATE INDEX ON tags (tags)");
    ok(&e, su, "CREATE CUSTOM INDEX ON tags (keys(m)) USING 'sai'");
    ok(
        &e,
        su,
        "UPDATE tags USING VISIBILITY 'A' SET tags = tags + {'red'}, m = m + {'a': 1} WHERE k = 1",
    );
    ok(
        &e,
        su,
        "UPDATE tags USING VISIBILITY 'B' SET tags = tags + {'blue'}, m = m + {'b': 2} WHERE k = 1",
    );
    let contains = "SELECT k FROM tags WHERE tags CONTAINS 'red'";
    assert_eq!(select(&e, "alice", None, contains), [["1"]]);
    assert!(select(&e, "bob", None, contains).is_empty());
    let key = "SELECT k FROM tags WHERE m CONTAINS KEY 'b'";
    assert_eq!(select(&e, "bob", None, key), [["1"]]);
    assert!(select(&e, "alice", None, key).is_empty());
    // A static index: the partition's rows match only for readers who see the static cell.
    assert_eq!(
        select(&e, "alice", None, "SELECT k FROM t WHERE s = 9"),
        [["4"]]
    );
    assert!(select(&e, "bob", None, "SELECT k FROM t WHERE s = 9").is_empty());
}

#[test]
fn the_option_is_in_system_schema_extensions() {
    let e = setup();
    let rs = select(
        &e,
        "cassandra",
        None,
        "SELECT extensions FROM system_schema.tables WHERE keyspace_name = 'ks' AND table_name = 't'",
    );
    assert!(rs[0][0].contains("visibility"), "{rs:?}");
    assert!(
        rs[0][0].contains(
            &format!(
                "{:?}",
                "{'constraint': 'false', 'enabled': 'true'}".as_bytes()
            )[1..10]
        ),
        "{rs:?}"
    );
    ok(&e, "cassandra", "CREATE TABLE ks.plain (k int PRIMARY KEY)");
    let plain = select(
        &e,
        "cassandra",
        None,
        "SELECT extensions FROM system_schema.tables WHERE keyspace_name = 'ks' AND table_name = 'plain'",
    );
    assert!(!plain[0][0].contains("visibility"), "{plain:?}");
}

fn sorted(mut v: Vec<Vec<String>>) -> Vec<Vec<String>> {
    v.sort();
    v
}

#[test]
fn views_show_a_reader_only_what_it_sees_in_the_base() {
    let e = setup();
    e.set_materialized_views_enabled(true);
    let su = "cassandra";
    ok(&e, su, "CREATE MATERIALIZED VIEW by_v AS SELECT k, c, v, w FROM t WHERE k IS NOT NULL AND c IS NOT NULL AND v IS NOT NULL PRIMARY KEY (v, k, c)");
    ok(&e, su, "CREATE MATERIALIZED VIEW by_c AS SELECT k, c, v FROM t WHERE k IS NOT NULL AND c IS NOT NULL PRIMARY KEY (c, k)");
    // (1,1): marker and v for A, w for B.
    ok(
        &e,
        su,
        "INSERT INTO t (k, c, v) VALUES (1, 1, 10) USING VISIBILITY 'A'",
    );
    ok(
        &e,
        su,
        "UPDATE t USING VISIBILITY 'B' SET w = 'b' WHERE k = 1 AND c = 1",
    );
    // (1,2): no marker, v for B.
    ok(
        &e,
        su,
        "UPDATE t USING VISIBILITY 'B' SET v = 20 WHERE k = 1 AND c = 2",
    );
    // (1,3): unlabelled.
    ok(&e, su, "INSERT INTO t (k, c, v, w) VALUES (1, 3, 30, 'x')");
    // (1,4): no marker, v for all, w for A.
    ok(&e, su, "UPDATE t SET v = 40 WHERE k = 1 AND c = 4");
    ok(
        &e,
        su,
        "UPDATE t USING VISIBILITY 'A' SET w = 'a' WHERE k = 1 AND c = 4",
    );
    // (1,5): no marker, v for A, w for B.
    ok(
        &e,
        su,
        "UPDATE t USING VISIBILITY 'A' SET v = 50 WHERE k = 1 AND c = 5",
    );
    ok(
        &e,
        su,
        "UPDATE t USING VISIBILITY 'B' SET w = 'bb' WHERE k = 1 AND c = 5",
    );
    let by_v = "SELECT v, c, w FROM by_v";
    assert_eq!(
        sorted(select(&e, su, None, by_v)).len(),
        5,
        "the superuser sees every view row"
    );
    // A view keyed by v shows a row only to readers who see v, and then only the cells
    // they see (bob sees w = 'b' of (1,1) in the base, but not v = 10, so not that row).
    assert_eq!(
        sorted(select(&e, "alice", None, by_v)),
        [
            ["10", "1", "null"],
            ["30", "3", "x"],
            ["40", "4", "a"],
            ["50", "5", "null"]
        ]
    );
    assert_eq!(
        sorted(select(&e, "bob", None, by_v)),
        [["20", "2", "null"], ["30", "3", "x"], ["40", "4", "null"]]
    );
    assert_eq!(
        sorted(select(&e, "eve", None, by_v)),
        [["30", "3", "x"], ["40", "4", "null"]]
    );
    // A view without w keyed by the base key: a row shows to whoever sees it in the base.
    let by_c = "SELECT c, v FROM by_c";
    let base = "SELECT c, v FROM t WHERE k = 1";
    for role in ["alice", "bob", "eve", su] {
        assert_eq!(
            sorted(select(&e, role, None, by_c)),
            sorted(select(&e, role, None, base)),
            "{role}"
        );
    }
    assert_eq!(select(&e, "eve", None, by_c).len(), 2);
    assert_eq!(select(&e, "bob", None, by_c).len(), 5);
    assert_eq!(
        select(&e, "bob", None, "SELECT count(*) FROM by_v"),
        [["3"]]
    );
    // Upkeep: a newer write moves the row and its labels.
    ok(
        &e,
        su,
        "UPDATE t USING VISIBILITY 'B' SET v = 11 WHERE k = 1 AND c = 1",
    );
    assert_eq!(
        select(&e, "bob", None, "SELECT v, w FROM by_v WHERE v = 11"),
        [["11", "b"]]
    );
    assert!(select(&e, "alice", None, "SELECT v FROM by_v WHERE v = 11").is_empty());
    // The option follows the base: not set, printed nor shown on the view.
    let set = err(
        &e,
        su,
        "ALTER MATERIALIZED VIEW by_c WITH visibility = {'enabled': 'true', 'constraint': 'true'}",
    );
    assert!(set.contains("follows its base table"), "{set}");
    let desc = select(&e, su, None, "DESCRIBE MATERIALIZED VIEW by_c");
    assert!(!desc[0].last().unwrap().contains("visibility"), "{desc:?}");
    // A view built over existing labelled data carries the labels too.
    ok(&e, su, "CREATE MATERIALIZED VIEW by_v2 AS SELECT k, c, v FROM t WHERE k IS NOT NULL AND c IS NOT NULL AND v IS NOT NULL PRIMARY KEY (v, k, c)");
    // (The build runs with the CREATE, under the DDL lock.)
    let built = |role: &str| sorted(select(&e, role, None, "SELECT v, c FROM by_v2"));
    assert_eq!(built(su).len(), 5);
    assert_eq!(built("eve"), [["30", "3"], ["40", "4"]]);
}
