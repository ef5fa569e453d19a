//! Service level statements, their checks and the level a role resolves to, through CQL text
//! on the in-memory storage model.

use std::sync::Arc;

use super::*;
use crate::auth::AuthSettings;
use crate::tests::{at, node};
use crate::{Engine, Outcome, QueryOptions, Values};

fn engine(store: Arc<storage::MemStorage>) -> Engine {
    let e = Engine::open(store, node()).unwrap();
    e.auth().configure(AuthSettings {
        password_authenticator: true,
        cassandra_authorizer: true,
    });
    e.auth().setup_default_superuser("cassandra").unwrap();
    e
}

fn run(e: &Engine, role: &str, text: &str) -> Result<Outcome, DbError> {
    let opts = QueryOptions {
        role: Some(Arc::from(role)),
        ..Default::default()
    };
    e.query(text, Values::Positional(vec![]), &opts, at(1000))
}

fn ok(e: &Engine, text: &str) -> Outcome {
    run(e, "cassandra", text).unwrap_or_else(|err| panic!("{text}: {err}"))
}

fn err(e: &Engine, role: &str, text: &str) -> String {
    match run(e, role, text) {
        Ok(o) => panic!("{text} succeeded: {o:?}"),
        Err(err) => format!("{:#06x} {}", err.code(), err.message()),
    }
}

fn shares(e: &Engine, role: &str) -> (String, u32) {
    let l = e.service_level_of(Some(role)).expect("levels exist");
    (l.name.to_string(), l.shares)
}

#[test]
fn statements_keep_scylladb_rules_and_messages() {
    let e = engine(Arc::new(storage::MemStorage::new()));
    assert_eq!(e.service_level_of(Some("cassandra")), None);
    ok(&e, "CREATE SERVICE LEVEL olap WITH SHARES = 100");
    ok(
        &e,
        "CREATE SERVICE LEVEL IF NOT EXISTS olap WITH SHARES = 5",
    );
    assert_eq!(e.service_levels().records().levels["olap"].shares, 100);
    assert_eq!(
        err(&e, "cassandra", "CREATE SERVICE LEVEL olap"),
        "0x2200 The service level 'olap' already exists."
    );
    assert_eq!(
        err(&e, "cassandra", "ALTER SERVICE LEVEL nope WITH shares = 3"),
        "0x2200 The service level 'nope' doesn't exist."
    );
    assert_eq!(
        err(&e, "cassandra", "DROP SERVICE LEVEL nope"),
        "0x2200 Service Level nope doesn't exists."
    );
    ok(&e, "DROP SERVICE LEVEL IF EXISTS nope");
    assert_eq!(
        err(&e, "cassandra", "CREATE SERVICE LEVEL '$x'"),
        "0x2200 Names starting with '$' are reserved for internal tenants. Use a different name."
    );
    assert_eq!(
        err(&e, "cassandra", "ATTACH SERVICE LEVEL nope TO cassandra"),
        "0x2200 Service Level nope doesn't exists."
    );
    assert_eq!(
        err(&e, "cassandra", "ATTACH SERVICE LEVEL olap TO ghost"),
        "0x2200 Role ghost doesn't exist."
    );
    assert!(err(&e, "cassandra", "CREATE SERVICE LEVEL a WITH shares = 0").starts_with("0x2000"));
    for i in 1..MAX_LEVELS {
        ok(&e, &format!("CREATE SERVICE LEVEL l{i}"));
    }
    assert_eq!(
        err(&e, "cassandra", "CREATE SERVICE LEVEL one_too_many"),
        "0x2200 Can't create service level - no more scheduling groups exist"
    );
}

#[test]
fn lists_have_scylladb_columns() {
    let e = engine(Arc::new(storage::MemStorage::new()));
    ok(&e, "CREATE SERVICE LEVEL oltp");
    ok(
        &e,
        "CREATE SERVICE LEVEL olap WITH shares = 250 AND workload_type = 'batch'",
    );
    let Outcome::Rows(all) = ok(&e, "LIST ALL SERVICE LEVELS") else {
        panic!()
    };
    let names: Vec<_> = all.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "service_level",
            "timeout",
            "workload_type",
            "shares",
            "percentage of all service level shares"
        ]
    );
    assert_eq!(all.rows, 2);
    assert_eq!(&*all.columns[0].keyspace, "QOS");
    let Outcome::Rows(one) = ok(&e, "LIST SERVICE LEVEL olap") else {
        panic!()
    };
    assert_eq!((one.rows, one.columns.len()), (1, 4));
    let Outcome::Rows(none) = ok(&e, "LIST SERVICE LEVEL nope") else {
        panic!()
    };
    assert_eq!(none.rows, 0);
    ok(&e, "CREATE ROLE spark");
    ok(&e, "ATTACH SERVICE LEVEL olap TO spark");
    let Outcome::Rows(att) = ok(&e, "LIST ALL ATTACHED SERVICE LEVELS") else {
        panic!()
    };
    assert_eq!(att.rows, 1);
    assert_eq!(&*att.columns[1].table, "service_levels_attachments");
}

#[test]
fn a_role_runs_at_the_lowest_shares_it_inherits_and_records_survive_a_restart() {
    let store = Arc::new(storage::MemStorage::new());
    let e = engine(store.clone());
    ok(&e, "CREATE SERVICE LEVEL gold WITH shares = 1000");
    ok(&e, "CREATE SERVICE LEVEL bronze WITH shares = 100");
    ok(&e, "CREATE ROLE web");
    ok(&e, "CREATE ROLE etl");
    ok(&e, "CREATE ROLE reporting");
    ok(&e, "ATTACH SERVICE LEVEL gold TO web");
    ok(&e, "ATTACH SERVICE LEVEL bronze TO etl");
    assert_eq!(shares(&e, "web"), ("gold".into(), 1000));
    assert_eq!(shares(&e, "reporting"), ("default".into(), 1000));
    // Inherited through a grant: the lowest shares win (ScyllaDB's merge_with).
    ok(&e, "GRANT etl TO web");
    assert_eq!(shares(&e, "web"), ("bronze".into(), 100));
    ok(&e, "REVOKE etl FROM web");
    assert_eq!(shares(&e, "web"), ("gold".into(), 1000));
    ok(&e, "GRANT etl TO reporting");
    assert_eq!(shares(&e, "reporting"), ("bronze".into(), 100));
    ok(&e, "ALTER SERVICE LEVEL bronze WITH shares = 7");
    assert_eq!(shares(&e, "etl"), ("bronze".into(), 7));
    ok(&e, "DETACH SERVICE LEVEL FROM web");
    assert_eq!(shares(&e, "web"), ("default".into(), 1000));
    ok(&e, "ATTACH SERVICE LEVEL gold TO web");
    drop(e);

    let e = engine(store);
    assert_eq!(shares(&e, "web"), ("gold".into(), 1000));
    assert_eq!(shares(&e, "etl"), ("bronze".into(), 7));
    // Dropping a level detaches it; dropping a role forgets its attachment.
    ok(&e, "DROP SERVICE LEVEL bronze");
    assert_eq!(shares(&e, "etl"), ("default".into(), 1000));
    ok(&e, "DROP ROLE web");
    assert!(!e.service_levels().records().attached.contains_key("web"));
    ok(&e, "DROP SERVICE LEVEL gold");
    assert_eq!(e.service_level_of(Some("etl")), None);
}

#[test]
fn only_superusers_change_or_list_levels_when_permissions_are_checked() {
    let e = engine(Arc::new(storage::MemStorage::new()));
    ok(&e, "CREATE ROLE bob WITH PASSWORD = 'pw' AND LOGIN = true");
    for (text, perm) in [
        ("CREATE SERVICE LEVEL x", "CREATE"),
        ("ALTER SERVICE LEVEL x WITH shares = 2", "ALTER"),
        ("DROP SERVICE LEVEL x", "DROP"),
        ("ATTACH SERVICE LEVEL x TO bob", "AUTHORIZE"),
        ("DETACH SERVICE LEVEL FROM bob", "AUTHORIZE"),
        ("LIST ALL SERVICE LEVELS", "DESCRIBE"),
        ("LIST ATTACHED SERVICE LEVEL OF bob", "DESCRIBE"),
    ] {
        assert_eq!(
            err(&e, "bob", text),
            format!(
                "0x2100 User bob has no {perm} permission on <all service_levels> or any of its parents"
            )
        );
    }
    ok(&e, "GRANT cassandra TO bob");
    run(&e, "bob", "CREATE SERVICE LEVEL x").unwrap();
}
