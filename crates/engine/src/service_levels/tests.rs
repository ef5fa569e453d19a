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

fn effective_of(e: &Engine, role: &str) -> Vec<Vec<String>> {
    crate::tests::rows(ok(e, &format!("LIST EFFECTIVE SERVICE LEVEL OF {role}")))
}

fn row(cells: &[&str]) -> Vec<String> {
    cells.iter().map(|c| c.to_string()).collect()
}

#[test]
fn list_effective_merges_as_scylladb_and_names_each_options_level() {
    let e = engine(Arc::new(storage::MemStorage::new()));
    ok(&e, "CREATE SERVICE LEVEL fast WITH shares = 800 AND timeout = 2s AND workload_type = 'interactive'");
    ok(
        &e,
        "CREATE SERVICE LEVEL slow WITH shares = 200 AND timeout = 1500ms",
    );
    ok(
        &e,
        "CREATE SERVICE LEVEL bulk WITH shares = 500 AND workload_type = 'batch'",
    );
    for r in ["web", "etl", "both"] {
        ok(&e, &format!("CREATE ROLE {r}"));
    }
    ok(&e, "ATTACH SERVICE LEVEL fast TO web");
    let Outcome::Rows(rs) = ok(&e, "LIST EFFECTIVE SERVICE LEVEL OF web") else {
        panic!()
    };
    let names: Vec<_> = rs.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        ["service_level_option", "effective_service_level", "value"]
    );
    assert_eq!(
        (&*rs.columns[0].keyspace, &*rs.columns[0].table),
        ("QOS", "effective_service_level")
    );
    assert_eq!(
        effective_of(&e, "web"),
        [
            row(&["workload_type", "fast", "interactive"]),
            row(&["timeout", "fast", "2s"]),
            row(&["shares", "fast", "800"]),
        ]
    );
    // etl (slow) granted bulk: shares from slow (200 < 500), timeout from slow (bulk has
    // none), workload_type from bulk (specified beats unspecified).
    ok(&e, "ATTACH SERVICE LEVEL slow TO etl");
    ok(&e, "ATTACH SERVICE LEVEL bulk TO both");
    ok(&e, "GRANT both TO etl");
    assert_eq!(
        effective_of(&e, "etl"),
        [
            row(&["workload_type", "bulk", "batch"]),
            row(&["timeout", "slow", "1s500ms"]),
            row(&["shares", "slow", "200"]),
        ]
    );
    let l = e.service_level_of(Some("etl")).unwrap();
    assert_eq!((&*l.name, l.shares), ("slow", 200));
    assert_eq!(l.timeout, Some(Duration::from_millis(1500)));
    // web granted etl: the shorter timeout (slow's 1.5 s), batch beats interactive.
    ok(&e, "GRANT etl TO web");
    assert_eq!(
        effective_of(&e, "web"),
        [
            row(&["workload_type", "bulk", "batch"]),
            row(&["timeout", "slow", "1s500ms"]),
            row(&["shares", "slow", "200"]),
        ]
    );
    // NULL removes a timeout; a level without one leaves the value null.
    ok(&e, "ALTER SERVICE LEVEL slow WITH timeout = null");
    ok(&e, "ALTER SERVICE LEVEL fast WITH timeout = NULL");
    assert_eq!(effective_of(&e, "etl")[1][2], "null");
    assert_eq!(e.service_level_of(Some("etl")).unwrap().timeout, None);

    assert_eq!(
        err(&e, "cassandra", "LIST EFFECTIVE SERVICE LEVEL OF ghost"),
        "0x2200 Role ghost doesn't exist."
    );
    assert_eq!(
        err(&e, "cassandra", "LIST EFFECTIVE SERVICE LEVEL OF cassandra"),
        "0x2200 Role cassandra doesn't have assigned any service level"
    );
    // No permission is needed (ScyllaDB checks none).
    ok(&e, "CREATE ROLE bob WITH PASSWORD = 'pw' AND LOGIN = true");
    assert_eq!(
        crate::tests::rows(run(&e, "bob", "LIST EFFECTIVE SERVICE LEVEL OF web").unwrap()).len(),
        3
    );
}

#[test]
fn timeouts_are_checked_listed_and_survive_a_restart() {
    let store = Arc::new(storage::MemStorage::new());
    let e = engine(store.clone());
    ok(&e, "CREATE SERVICE LEVEL t WITH timeout = 500ms");
    for (text, msg) in [
        (
            "timeout = 1d",
            "Timeout values cannot be expressed in days/months",
        ),
        (
            "timeout = 1mo",
            "Timeout values cannot be expressed in days/months",
        ),
        (
            "timeout = 1500us",
            "Timeout values must be expressed in millisecond granularity",
        ),
        ("timeout = -5ms", "Timeout values must be nonnegative"),
        ("timeout = 'soon'", "Unable to convert 'soon' to a duration"),
    ] {
        assert_eq!(
            err(
                &e,
                "cassandra",
                &format!("ALTER SERVICE LEVEL t WITH shares = 3 AND {text}")
            ),
            format!("0x2200 {msg}"),
            "{text}"
        );
    }
    // A refused ALTER changes nothing.
    assert_eq!(
        e.service_levels().records().levels["t"].shares,
        DEFAULT_SHARES
    );
    let listed = crate::tests::values(ok(&e, "LIST SERVICE LEVEL t")).0;
    assert_eq!(
        listed[0][1],
        proto::types::Value::Duration {
            months: 0,
            days: 0,
            nanos: 500_000_000
        }
    );
    drop(e);
    let e = engine(store);
    assert_eq!(
        e.service_levels().records().levels["t"].timeout_ms,
        Some(500)
    );
    ok(&e, "ALTER SERVICE LEVEL t WITH timeout = null");
    assert_eq!(e.service_levels().records().levels["t"].timeout_ms, None);
    assert_eq!(
        crate::tests::values(ok(&e, "LIST SERVICE LEVEL t")).0[0][1],
        proto::types::Value::Null
    );
}
