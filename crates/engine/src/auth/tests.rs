//! Roles, logins and permission checks through CQL text, on the in-memory storage model.

use std::sync::Arc;

use super::*;
use crate::tests::{at, node, rows};
use crate::{Engine, Outcome, QueryOptions, Values};

fn auth_engine(store: Arc<storage::MemStorage>) -> Engine {
    let e = Engine::open(store, node()).unwrap();
    e.auth().configure(AuthSettings {
        password_authenticator: true,
        cassandra_authorizer: true,
    });
    e.auth().setup_default_superuser("cassandra").unwrap();
    e
}

/// Runs `text` as `role` (in keyspace `ks`, if given).
fn run(e: &Engine, role: &str, text: &str) -> Result<Outcome, DbError> {
    let opts = QueryOptions {
        role: Some(Arc::from(role)),
        ..Default::default()
    };
    e.query(text, Values::Positional(vec![]), &opts, at(1000))
}

fn ok(e: &Engine, role: &str, text: &str) -> Outcome {
    run(e, role, text).unwrap_or_else(|err| panic!("{text}: {err}"))
}

fn err(e: &Engine, role: &str, text: &str) -> String {
    match run(e, role, text) {
        Ok(o) => panic!("{text} succeeded: {o:?}"),
        Err(err) => format!("{:#06x} {}", err.code(), err.message()),
    }
}

/// An engine with logins on, table `ks.t (k PRIMARY KEY, v)` and role `bob` (no grants).
fn table_and_bob() -> Engine {
    let e = auth_engine(Arc::new(storage::MemStorage::new()));
    ok(&e, "cassandra", "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    ok(
        &e,
        "cassandra",
        "CREATE TABLE ks.t (k int PRIMARY KEY, v int)",
    );
    ok(
        &e,
        "cassandra",
        "CREATE ROLE bob WITH PASSWORD = 'pw' AND LOGIN = true",
    );
    e
}

#[test]
fn default_superuser_logs_in_and_wrong_passwords_do_not() {
    let e = auth_engine(Arc::new(storage::MemStorage::new()));
    assert!(e.auth().default_superuser_has_default_password());
    assert_eq!(e.auth().authenticate("cassandra", "cassandra"), Ok(()));
    let slow = e.auth().bcrypt_checks();
    // The second login is answered from the verified-credentials cache.
    assert_eq!(e.auth().authenticate("cassandra", "cassandra"), Ok(()));
    assert_eq!(e.auth().bcrypt_checks(), slow);
    assert_eq!(
        e.auth().authenticate("cassandra", "nope"),
        Err(LoginError::BadCredentials("cassandra".into()))
    );
    assert_eq!(
        e.auth().authenticate("nobody", "x"),
        Err(LoginError::BadCredentials("nobody".into()))
    );
    ok(&e, "cassandra", "CREATE ROLE quiet WITH PASSWORD = 'pw'");
    assert_eq!(
        e.auth().authenticate("quiet", "pw"),
        Err(LoginError::NotPermitted("quiet".into()))
    );
    assert_eq!(
        LoginError::BadCredentials("x".into()).into_db().message(),
        "Provided username x and/or password are incorrect"
    );
    // Only the first start creates it.
    assert!(!e.auth().setup_default_superuser("other").unwrap());
}

#[test]
fn a_changed_password_invalidates_the_cached_login() {
    let e = auth_engine(Arc::new(storage::MemStorage::new()));
    ok(
        &e,
        "cassandra",
        "CREATE ROLE alice WITH PASSWORD = 'one' AND LOGIN = true",
    );
    assert_eq!(e.auth().authenticate("alice", "one"), Ok(()));
    ok(&e, "alice", "ALTER ROLE alice WITH PASSWORD = 'two'");
    let before = e.auth().bcrypt_checks();
    assert!(e.auth().authenticate("alice", "one").is_err());
    assert_eq!(
        e.auth().bcrypt_checks(),
        before + 1,
        "a changed hash is not answered from the cache"
    );
    assert_eq!(e.auth().authenticate("alice", "two"), Ok(()));
    let hash = e.auth().state().roles["alice"].salted_hash.clone().unwrap();
    assert!(hash.starts_with("$2a$10$"), "{hash}");
}

#[test]
fn roles_and_permissions_survive_a_restart() {
    let store = Arc::new(storage::MemStorage::new());
    {
        let e = auth_engine(store.clone());
        ok(&e, "cassandra", "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
        ok(
            &e,
            "cassandra",
            "CREATE ROLE reader WITH PASSWORD = 'pw' AND LOGIN = true",
        );
        ok(&e, "cassandra", "GRANT SELECT ON KEYSPACE ks TO reader");
    }
    let e = auth_engine(store);
    assert_eq!(e.auth().authenticate("reader", "pw"), Ok(()));
    let listed = rows(ok(&e, "cassandra", "LIST ALL PERMISSIONS OF reader"));
    assert_eq!(
        listed,
        vec![vec!["reader", "reader", "<keyspace ks>", "SELECT"]]
    );
}

#[test]
fn statements_are_checked_and_grants_take_effect_at_once() {
    let e = table_and_bob();
    let denied = "0x2100 User bob has no SELECT permission on <table ks.t> or any of its parents";
    assert_eq!(err(&e, "bob", "SELECT * FROM ks.t"), denied);
    assert_eq!(
        err(&e, "bob", "INSERT INTO ks.t (k, v) VALUES (1, 1)"),
        "0x2100 User bob has no MODIFY permission on <table ks.t> or any of its parents"
    );
    // Tables drivers read at connect stay readable.
    ok(&e, "bob", "SELECT * FROM system.local");
    ok(&e, "bob", "SELECT * FROM system_schema.tables");
    ok(&e, "cassandra", "GRANT SELECT ON ks.t TO bob");
    ok(&e, "bob", "SELECT * FROM ks.t");
    // A conditional write reads too.
    ok(&e, "cassandra", "GRANT MODIFY ON KEYSPACE ks TO bob");
    ok(
        &e,
        "bob",
        "INSERT INTO ks.t (k, v) VALUES (1, 1) IF NOT EXISTS",
    );
    ok(&e, "cassandra", "REVOKE SELECT ON ks.t FROM bob");
    assert_eq!(err(&e, "bob", "SELECT * FROM ks.t"), denied);
    assert_eq!(
        err(&e, "bob", "UPDATE ks.t SET v = 2 WHERE k = 1 IF v = 1"),
        "0x2100 User bob has no SELECT permission on <table ks.t> or any of its parents"
    );
    // Through a role granted to bob.
    ok(&e, "cassandra", "CREATE ROLE readers");
    ok(&e, "cassandra", "GRANT SELECT ON ALL KEYSPACES TO readers");
    ok(&e, "cassandra", "GRANT readers TO bob");
    ok(&e, "bob", "SELECT * FROM ks.t");
    // ALL KEYSPACES does not reach the system keyspaces.
    assert_eq!(
        err(&e, "bob", "SELECT * FROM system_auth.roles"),
        "0x2100 User bob has no SELECT permission on <table system_auth.roles> or any of its parents"
    );
    ok(&e, "cassandra", "REVOKE readers FROM bob");
    ok(
        &e,
        "cassandra",
        "GRANT SELECT ON ALL TABLES IN KEYSPACE ks TO bob",
    );
    ok(&e, "bob", "SELECT * FROM ks.t");
    ok(
        &e,
        "cassandra",
        "REVOKE SELECT ON ALL TABLES IN KEYSPACE ks FROM bob",
    );
    assert_eq!(err(&e, "bob", "SELECT * FROM ks.t"), denied);
    assert_eq!(
        err(&e, "bob", "CREATE TABLE ks.u (k int PRIMARY KEY)"),
        "0x2100 User bob has no CREATE permission on <all tables in ks> or any of its parents"
    );
    assert_eq!(
        err(&e, "cassandra", "DROP TABLE system_auth.roles"),
        "0x2100 Cannot DROP <table system_auth.roles>"
    );
}

#[test]
fn creators_get_permissions_and_drops_take_them_away() {
    let e = auth_engine(Arc::new(storage::MemStorage::new()));
    ok(
        &e,
        "cassandra",
        "CREATE ROLE maker WITH PASSWORD = 'pw' AND LOGIN = true",
    );
    ok(&e, "cassandra", "GRANT CREATE ON ALL KEYSPACES TO maker");
    ok(&e, "maker", "CREATE KEYSPACE mk WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    ok(&e, "maker", "CREATE TABLE mk.t (k int PRIMARY KEY)");
    ok(&e, "maker", "INSERT INTO mk.t (k) VALUES (1)");
    let listed = rows(ok(&e, "maker", "LIST ALL PERMISSIONS OF maker"));
    assert!(
        listed
            .iter()
            .any(|r| r[2] == "<all functions in mk>" && r[3] == "EXECUTE"),
        "{listed:?}"
    );
    assert!(
        listed
            .iter()
            .any(|r| r[2] == "<table mk.t>" && r[3] == "AUTHORIZE"),
        "{listed:?}"
    );
    ok(&e, "maker", "DROP TABLE mk.t");
    let listed = rows(ok(&e, "maker", "LIST ALL PERMISSIONS OF maker"));
    assert!(!listed.iter().any(|r| r[2] == "<table mk.t>"), "{listed:?}");
    ok(&e, "maker", "DROP KEYSPACE mk");
    let left = rows(ok(&e, "cassandra", "LIST ALL PERMISSIONS OF maker"));
    assert_eq!(
        left,
        vec![vec!["maker", "maker", "<all keyspaces>", "CREATE"]]
    );
    // A keyspace of the same name later is not the maker's.
    ok(&e, "cassandra", "CREATE KEYSPACE mk WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    assert_eq!(
        err(&e, "maker", "DROP KEYSPACE mk"),
        "0x2100 User maker has no DROP permission on <keyspace mk> or any of its parents"
    );
}

#[test]
fn role_statements_give_cassandras_answers() {
    let e = auth_engine(Arc::new(storage::MemStorage::new()));
    ok(
        &e,
        "cassandra",
        "CREATE ROLE alice WITH PASSWORD = 'pw' AND LOGIN = true",
    );
    assert_eq!(
        err(&e, "cassandra", "CREATE ROLE alice"),
        "0x2200 alice already exists"
    );
    ok(&e, "cassandra", "CREATE ROLE IF NOT EXISTS alice");
    ok(&e, "cassandra", "CREATE ROLE bob");
    ok(&e, "cassandra", "GRANT bob TO alice");
    assert_eq!(
        err(&e, "cassandra", "GRANT bob TO alice"),
        "0x2200 alice is a member of bob"
    );
    assert_eq!(
        err(&e, "cassandra", "GRANT alice TO bob"),
        "0x2200 alice is a member of bob"
    );
    assert_eq!(
        err(&e, "cassandra", "REVOKE alice FROM bob"),
        "0x2200 bob is not a member of alice"
    );
    assert_eq!(
        err(&e, "cassandra", "GRANT nobody TO alice"),
        "0x2200 nobody doesn't exist"
    );
    assert_eq!(
        err(&e, "cassandra", "DROP ROLE nobody"),
        "0x2200 nobody doesn't exist"
    );
    ok(&e, "cassandra", "DROP ROLE IF EXISTS nobody");
    assert_eq!(
        err(&e, "cassandra", "DROP ROLE cassandra"),
        "0x2200 Cannot DROP primary role for current login"
    );
    assert_eq!(
        err(&e, "cassandra", "ALTER ROLE nobody WITH LOGIN = true"),
        "0x2200 Role nobody doesn't exist"
    );
    assert_eq!(
        err(&e, "cassandra", "CREATE ROLE x WITH OPTIONS = {'a': 'b'}"),
        "0x2200 org.apache.cassandra.auth.CassandraRoleManager doesn't support OPTIONS"
    );
    assert_eq!(
        err(
            &e,
            "cassandra",
            "CREATE ROLE x WITH HASHED PASSWORD = 'abc'"
        ),
        "0x2200 Invalid hashed password value. Please use jBcrypt."
    );
    assert_eq!(
        err(&e, "cassandra", "GRANT SELECT ON ALL ROLES TO alice"),
        "0x2000 Resource type RoleResource does not support any of the requested permissions"
    );
    assert_eq!(
        err(&e, "cassandra", "GRANT SELECT ON KEYSPACE nope TO alice"),
        "0x2200 Resource <keyspace nope> doesn't exist"
    );
    assert_eq!(
        err(&e, "cassandra", "GRANT SELECT ON ALL KEYSPACES TO nobody"),
        "0x2200 Role nobody doesn't exist"
    );
    assert_eq!(
        rows(ok(&e, "cassandra", "LIST ROLES OF alice")),
        vec![
            vec!["alice", "false", "true", "Map([])", "ALL"],
            vec!["bob", "false", "false", "Map([])", "ALL"]
        ]
    );
    assert_eq!(
        err(&e, "alice", "LIST ROLES OF cassandra"),
        "0x2100 You are not authorized to view roles granted to cassandra "
    );
    assert_eq!(
        err(&e, "alice", "LIST ALL PERMISSIONS"),
        "0x2100 You are not authorized to view everyone's permissions"
    );
    assert_eq!(
        err(&e, "alice", "CREATE ROLE carol"),
        "0x2100 User alice does not have sufficient privileges to perform the requested operation"
    );
    assert_eq!(
        err(&e, "alice", "ALTER ROLE alice WITH LOGIN = false"),
        "0x2100 You aren't allowed to alter LOGIN"
    );
    assert_eq!(
        err(&e, "cassandra", "CREATE ROLE x WITH PASSWORD = 'a' AND HASHED PASSWORD = '$2a$10$SLEs4Jgz8Z4tYzqlm29ruOlqz1fbENt1tQlD8.u1aXO3vu1GKsXrO'"),
        "0x2000 Options 'password' and 'hashed password' are mutually exclusive"
    );
    assert_eq!(
        err(
            &e,
            "cassandra",
            "CREATE ROLE x WITH ACCESS TO DATACENTERS {'dc9'}"
        ),
        "0x2200 Invalid value(s) for DATACENTERS '[dc9]',All values must be valid datacenters"
    );
    ok(
        &e,
        "cassandra",
        "CREATE ROLE dcs WITH ACCESS TO ALL DATACENTERS",
    );
    assert_eq!(
        err(&e, "cassandra", "GRANT SELECT ON MBEAN 'x' TO alice"),
        "0x2000 x is not a valid JMX object name"
    );
    assert_eq!(
        err(
            &e,
            "cassandra",
            "GRANT EXECUTE ON FUNCTION nope.f(int) TO alice"
        ),
        "0x2300 Keyspace nope doesn't exist"
    );
    assert_eq!(
        err(
            &e,
            "cassandra",
            "GRANT EXECUTE ON FUNCTION system.now() TO alice"
        ),
        "0x2200 Altering permissions on builtin functions is not supported"
    );
    assert_eq!(
        err(&e, "cassandra", "ALTER ROLE alice"),
        "0x2200 ALTER [ROLE|USER] can't be empty"
    );
    let dup = err(
        &e,
        "cassandra",
        "CREATE ROLE x WITH PASSWORD = 'a' AND PASSWORD = 'b'",
    );
    assert!(
        dup.starts_with("0x2000") && dup.ends_with("Multiple definition for property 'PASSWORD'"),
        "{dup}"
    );
    let quoted = err(&e, "cassandra", "CREATE USER \"Quoted\" WITH PASSWORD 'x'");
    assert!(
        quoted.starts_with("0x2000") && quoted.contains("Quoted strings are are not supported"),
        "{quoted}"
    );
    // User names keep the case of unquoted names, role names do not.
    ok(&e, "cassandra", "CREATE USER CaseUser WITH PASSWORD 'x'");
    ok(&e, "cassandra", "CREATE ROLE CaseRole");
    let names: Vec<String> = e.auth().state().roles.keys().cloned().collect();
    assert!(
        names.contains(&"CaseUser".to_string()) && names.contains(&"caserole".to_string()),
        "{names:?}"
    );
    let roles = rows(ok(
        &e,
        "cassandra",
        "SELECT role, can_login, member_of FROM system_auth.roles",
    ));
    assert!(
        roles
            .iter()
            .any(|r| r[0] == "alice" && r[1] == "true" && r[2].contains("bob")),
        "{roles:?}"
    );
    ok(&e, "cassandra", "DROP ROLE bob");
    let roles = rows(ok(
        &e,
        "cassandra",
        "SELECT member_of FROM system_auth.roles WHERE role = 'alice'",
    ));
    assert_eq!(roles, vec![vec!["null"]]);
}

#[test]
fn without_password_authentication_everyone_is_anonymous() {
    let e = Engine::open(Arc::new(storage::MemStorage::new()), node()).unwrap();
    let opts = QueryOptions::default();
    let r = e.query("CREATE ROLE x", Values::Positional(vec![]), &opts, at(1));
    assert_eq!(
        r.unwrap_err().message(),
        "You have to be logged in and not anonymous to perform this request"
    );
    // Nothing is checked with the AllowAll authorizer.
    e.query(
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        Values::Positional(vec![]),
        &opts,
        at(1),
    )
    .unwrap();
}

/// DROP INDEX names only the index: ALTER on its table is asked, as Cassandra asks it.
#[test]
fn drop_index_needs_alter_on_its_table() {
    let e = table_and_bob();
    ok(&e, "cassandra", "CREATE INDEX vi ON ks.t (v)");
    assert_eq!(
        err(&e, "bob", "DROP INDEX ks.vi"),
        "0x2100 User bob has no ALTER permission on <table ks.t> or any of its parents"
    );
    ok(&e, "cassandra", "GRANT ALTER ON ks.t TO bob");
    ok(&e, "bob", "DROP INDEX ks.vi");
}

/// CREATE, ALTER and DROP MATERIALIZED VIEW ask ALTER on the base table, as Cassandra asks it.
#[test]
fn view_statements_need_alter_on_the_base() {
    let e = table_and_bob();
    e.set_materialized_views_enabled(true);
    let create = "CREATE MATERIALIZED VIEW ks.mv AS SELECT * FROM ks.t WHERE k IS NOT NULL AND v IS NOT NULL PRIMARY KEY (v, k)";
    let refused = "0x2100 User bob has no ALTER permission on <table ks.t> or any of its parents";
    assert_eq!(err(&e, "bob", create), refused);
    ok(&e, "cassandra", create);
    assert_eq!(
        err(
            &e,
            "bob",
            "ALTER MATERIALIZED VIEW ks.mv WITH comment = 'x'"
        ),
        refused
    );
    assert_eq!(err(&e, "bob", "DROP MATERIALIZED VIEW ks.mv"), refused);
    ok(&e, "cassandra", "GRANT ALTER ON ks.t TO bob");
    ok(
        &e,
        "bob",
        "ALTER MATERIALIZED VIEW ks.mv WITH comment = 'x'",
    );
    ok(&e, "bob", "DROP MATERIALIZED VIEW ks.mv");
    ok(&e, "bob", create);
}
