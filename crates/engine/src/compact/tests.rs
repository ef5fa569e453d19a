//! COMPACT STORAGE through CQL text: each kind's writes and reads (no row marker), its
//! `system_schema` rows, and DROP COMPACT STORAGE, with Cassandra 5.0.9's answers.

use crate::tests::{engine, node, q, rows};
use crate::Engine;
use std::sync::Arc;

fn ok(e: &Engine, text: &str) {
    if let Err(err) = q(e, Some("ks"), text) {
        panic!("{text}: {err}");
    }
}

fn err(e: &Engine, text: &str) -> String {
    match q(e, Some("ks"), text) {
        Ok(o) => panic!("{text} succeeded: {o:?}"),
        Err(err) => err.message().to_string(),
    }
}

fn read(e: &Engine, text: &str) -> Vec<Vec<String>> {
    rows(q(e, Some("ks"), text).unwrap())
}

const DENSE: &str = "Set([Varchar(\"dense\")])";
const COMPOUND: &str = "Set([Varchar(\"compound\")])";

fn setup(e: &Engine) {
    ok(e, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    ok(
        e,
        "CREATE TABLE d (k int, c int, v text, PRIMARY KEY (k, c)) WITH COMPACT STORAGE",
    );
    ok(
        e,
        "CREATE TABLE s (k int PRIMARY KEY, a int, b text) WITH COMPACT STORAGE",
    );
    ok(
        e,
        "CREATE TABLE e (k int, c int, PRIMARY KEY (k, c)) WITH COMPACT STORAGE",
    );
}

#[test]
fn create_refuses_what_cassandra_refuses() {
    let e = engine();
    setup(&e);
    for (stmt, msg) in [
        ("CREATE TABLE x (k int, c int, v text, w text, PRIMARY KEY (k, c)) WITH COMPACT STORAGE",
         "COMPACT STORAGE with composite PRIMARY KEY allows no more than one column not part of the PRIMARY KEY (got: v, w)"),
        ("CREATE TABLE x (k int PRIMARY KEY) WITH COMPACT STORAGE",
         "No definition found that is not part of the PRIMARY KEY"),
        ("CREATE TABLE x (k int, c int, v list<int>, PRIMARY KEY (k, c)) WITH COMPACT STORAGE",
         "Non-frozen collections and UDTs are not supported with COMPACT STORAGE"),
        ("CREATE TABLE x (k int, c int, v int static, PRIMARY KEY (k, c)) WITH COMPACT STORAGE",
         "Static columns are not supported in COMPACT STORAGE tables"),
        ("CREATE TABLE x (k int PRIMARY KEY, a int static, b int) WITH COMPACT STORAGE",
         "Static columns are not supported in COMPACT STORAGE tables"),
    ] {
        assert_eq!(err(&e, stmt), msg, "{stmt}");
    }
}

#[test]
fn dense_rows_live_only_with_their_value() {
    let e = engine();
    setup(&e);
    assert_eq!(
        err(&e, "INSERT INTO d (k, c) VALUES (1, 2)"),
        "Column v is mandatory for this COMPACT STORAGE table"
    );
    ok(&e, "INSERT INTO d (k, c, v) VALUES (1, 1, 'a')");
    ok(&e, "INSERT INTO d (k, c, v) VALUES (1, 3, null)");
    ok(&e, "UPDATE d SET v = 'b' WHERE k = 1 AND c = 4");
    assert_eq!(
        read(&e, "SELECT * FROM d"),
        [["1", "1", "a"], ["1", "4", "b"]]
    );
    ok(&e, "UPDATE d SET v = null WHERE k = 1 AND c = 4");
    ok(&e, "DELETE v FROM d WHERE k = 1 AND c = 1");
    assert!(read(&e, "SELECT * FROM d").is_empty());
    assert_eq!(
        err(&e, "SELECT value FROM d"),
        "Undefined column name value in table ks.d"
    );
}

#[test]
fn static_compact_rows_are_their_static_cells() {
    let e = engine();
    setup(&e);
    ok(&e, "INSERT INTO s (k, a, b) VALUES (1, 1, 'x')");
    ok(&e, "INSERT INTO s (k, a) VALUES (2, 2)");
    assert_eq!(
        err(&e, "INSERT INTO s (k) VALUES (3)"),
        "Some clustering keys are missing: column1"
    );
    ok(&e, "UPDATE s SET b = 'u' WHERE k = 4");
    ok(&e, "UPDATE s SET a = null WHERE k = 2");
    assert_eq!(
        read(&e, "SELECT * FROM s"),
        [["1", "1", "x"], ["4", "null", "u"]]
    );
    assert_eq!(
        err(&e, "SELECT column1 FROM s"),
        "Undefined column name column1 in table ks.s"
    );
}

#[test]
fn dense_without_value_keeps_rows_by_key() {
    let e = engine();
    setup(&e);
    ok(&e, "INSERT INTO e (k, c) VALUES (1, 1)");
    ok(&e, "INSERT INTO e (k, c) VALUES (1, 2)");
    ok(&e, "DELETE FROM e WHERE k = 1 AND c = 1");
    assert_eq!(read(&e, "SELECT * FROM e"), [["1", "2"]]);
}

#[test]
fn schema_tables_show_flags_and_hidden_columns() {
    let e = engine();
    setup(&e);
    assert_eq!(
        read(
            &e,
            "SELECT table_name, flags FROM system_schema.tables WHERE keyspace_name = 'ks'"
        ),
        [["d", DENSE], ["e", DENSE], ["s", "Set([])"]]
    );
    let cols = read(
        &e,
        "SELECT table_name, column_name, kind, position, type FROM system_schema.columns WHERE keyspace_name = 'ks'",
    );
    let has = |want: [&str; 5]| cols.iter().any(|r| r == &want);
    assert!(has(["e", "value", "regular", "-1", "empty"]), "{cols:?}");
    assert!(has(["s", "a", "static", "-1", "int"]), "{cols:?}");
    assert!(has(["s", "column1", "clustering", "0", "text"]), "{cols:?}");
    assert!(has(["s", "value", "regular", "-1", "blob"]), "{cols:?}");
    assert_eq!(cols.len(), 3 + 3 + 5, "{cols:?}");
}

#[test]
fn alter_refuses_new_columns_and_gated_drop_compact_storage() {
    let e = engine();
    setup(&e);
    assert_eq!(
        err(&e, "ALTER TABLE d ADD w int"),
        "Cannot add new column to a COMPACT STORAGE table"
    );
    assert_eq!(
        err(&e, "ALTER TABLE s RENAME a TO aa"),
        "Cannot rename non PRIMARY KEY column a"
    );
    assert_eq!(
        err(&e, "ALTER TABLE d DROP COMPACT STORAGE"),
        "DROP COMPACT STORAGE is disabled. Enable in cassandra.yaml to use."
    );
}

#[test]
fn drop_compact_storage_reveals_hidden_columns_and_survives_restart() {
    let store: Arc<dyn storage::Storage> = Arc::new(storage::MemStorage::new());
    let e = Engine::open(store.clone(), node()).unwrap();
    e.set_drop_compact_storage_enabled(true);
    setup(&e);
    ok(&e, "INSERT INTO s (k, a, b) VALUES (1, 1, 'x')");
    ok(&e, "INSERT INTO d (k, c, v) VALUES (1, 1, 'a')");
    ok(&e, "INSERT INTO e (k, c) VALUES (1, 1)");
    for t in ["d", "e", "s"] {
        ok(&e, &format!("ALTER TABLE {t} DROP COMPACT STORAGE"));
    }
    assert_eq!(
        err(&e, "ALTER TABLE s DROP COMPACT STORAGE"),
        "Cannot DROP COMPACT STORAGE on table without COMPACT STORAGE"
    );
    drop(e);
    let e = Engine::open(store, node()).unwrap();
    assert_eq!(
        read(&e, "SELECT * FROM s"),
        [["1", "null", "1", "x", "null"]]
    );
    assert_eq!(read(&e, "SELECT * FROM e"), [["1", "1", "null"]]);
    ok(&e, "INSERT INTO d (k, c) VALUES (1, 3)");
    assert_eq!(
        read(&e, "SELECT * FROM d"),
        [["1", "1", "a"], ["1", "3", "null"]]
    );
    ok(
        &e,
        "INSERT INTO s (k, column1, value, a) VALUES (1, 'x', 0x01, 5)",
    );
    assert_eq!(
        read(&e, "SELECT * FROM s"),
        [["1", "x", "5", "x", "Blob([1])"]]
    );
    assert_eq!(
        read(
            &e,
            "SELECT table_name, flags FROM system_schema.tables WHERE keyspace_name = 'ks'"
        ),
        [["d", COMPOUND], ["e", COMPOUND], ["s", COMPOUND]]
    );
}

#[test]
fn a_dense_row_expires_with_its_value() {
    let e = engine();
    setup(&e);
    ok(
        &e,
        "INSERT INTO d (k, c, v) VALUES (1, 1, 'a') USING TTL 10",
    );
    ok(&e, "INSERT INTO s (k, a) VALUES (1, 1) USING TTL 10");
    let at = |secs| {
        let opts = crate::QueryOptions {
            keyspace: Some("ks".into()),
            ..Default::default()
        };
        let read = |t: &str| {
            let text = format!("SELECT * FROM {t}");
            rows(
                e.query(
                    &text,
                    crate::Values::Positional(vec![]),
                    &opts,
                    crate::tests::at(secs),
                )
                .unwrap(),
            )
        };
        (read("d").len(), read("s").len())
    };
    assert_eq!(at(1009), (1, 1));
    assert_eq!(at(1011), (0, 0));
}

#[test]
fn a_clustering_prefix_is_a_row_of_a_compound_dense_table() {
    let e = engine();
    setup(&e);
    ok(&e, "CREATE TABLE dc (k int, c1 int, c2 text, v text, PRIMARY KEY (k, c1, c2)) WITH COMPACT STORAGE");
    ok(
        &e,
        "INSERT INTO dc (k, c1, c2, v) VALUES (1, 3, 'a', 'full')",
    );
    ok(&e, "INSERT INTO dc (k, c1, v) VALUES (1, 3, 'prefix')");
    ok(&e, "UPDATE dc SET v = 'updated' WHERE k = 1 AND c1 = 4");
    assert_eq!(
        err(&e, "INSERT INTO dc (k, c2, v) VALUES (1, 'b', 'gap')"),
        "PRIMARY KEY column \"c2\" cannot be restricted as preceding column \"c1\" is not restricted"
    );
    assert_eq!(
        err(&e, "INSERT INTO dc (k, v) VALUES (1, 'none')"),
        "Some clustering keys are missing: c1, c2"
    );
    assert_eq!(
        read(&e, "SELECT * FROM dc"),
        [
            ["1", "3", "null", "prefix"],
            ["1", "3", "a", "full"],
            ["1", "4", "null", "updated"]
        ]
    );
    // A DELETE naming the prefix is a range: it takes the prefix row and the rows under it.
    ok(&e, "DELETE FROM dc WHERE k = 1 AND c1 = 3");
    assert_eq!(
        read(&e, "SELECT * FROM dc"),
        [["1", "4", "null", "updated"]]
    );
}
