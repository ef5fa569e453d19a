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
    assert!(err(&e, su, "CREATE INDEX ON t (v)").contains("Secondary indexes are not supported"));
    e.set_materialized_views_enabled(true);
    let view = err(&e, su, "CREATE MATERIALIZED VIEW mv AS SELECT * FROM t WHERE k IS NOT NULL AND c IS NOT NULL AND v IS NOT NULL PRIMARY KEY (v, k, c)");
    assert!(
        view.contains("Materialized views are not supported"),
        "{view}"
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
    ok(&e, su, "CREATE INDEX ON plain (v)");
    assert!(err(
        &e,
        su,
        "ALTER TABLE plain WITH visibility = {'enabled': 'true'}"
    )
    .contains("cannot be enabled"));
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
                value: b"v".to_vec(),
                expiry: None,
                label: None,
            },
        }],
    };
    // The format as it was before labels: version, clustering, marker, deletion, cells.
    let golden: Vec<u8> = [
        &[1u8, 0, 1, 0, 0, 0, 1, b'c', 1][..],
        &5i64.to_be_bytes(),
        &[0, 0, 0, 0, 0, 1, 0, 1],
        &5i64.to_be_bytes(),
        &[0, 0, 0, 0, 0, 1, b'v'],
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
