//! Tables as the copy needs them (columns by role and by how their cells are stored), read
//! from `system_schema`; and the schema copy, which replays the source's own `DESCRIBE
//! KEYSPACE` statements on the target.
//!
//! Replaying DESCRIBE output (rather than rebuilding DDL from `system_schema` rows) keeps every
//! table option and the order Cassandra needs (types before the tables that use them, indexes
//! and views after their table). Each `CREATE` gets `IF NOT EXISTS`, so a resumed run, or a
//! keyspace the operator created beforehand with the replication the cluster should have, is
//! kept; the columns of every table are then compared, so an existing table of another shape
//! stops the migration instead of receiving rows it would misread.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use scylla::client::session::Session;
use scylla::cluster::Node;
use scylla::policies::load_balancing::{NodeIdentifier, SingleTargetLoadBalancingPolicy};
use scylla::statement::unprepared::Statement;
use scylla::value::CqlValue;

use crate::Error;

/// How a column's cells are stored, which decides how they are read and written back.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum CellKind {
    /// One cell: every native type, frozen collections and UDTs, tuples, vectors.
    Simple,
    /// Non-frozen: one cell per element, each with its own write time and TTL.
    List,
    Set,
    Map,
    /// A non-frozen user-defined type: one cell per field (names in declaration order).
    Udt(Vec<String>),
    /// A counter: no write time, written by adding.
    Counter,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    /// The CQL type as `system_schema.columns` spells it.
    pub cql_type: String,
    pub cell: CellKind,
}

impl Column {
    pub fn quoted(&self) -> String {
        quote(&self.name)
    }
}

/// One table's columns by role, keys in key order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    pub keyspace: String,
    pub name: String,
    pub partition_key: Vec<Column>,
    pub clustering: Vec<Column>,
    pub statics: Vec<Column>,
    pub regulars: Vec<Column>,
}

impl Table {
    /// `"ks"."t"`: the name in statements, in the checkpoint file and in reports.
    pub fn qualified(&self) -> String {
        format!("{}.{}", quote(&self.keyspace), quote(&self.name))
    }

    pub fn is_counter_table(&self) -> bool {
        self.statics
            .iter()
            .chain(&self.regulars)
            .any(|c| c.cell == CellKind::Counter)
    }

    /// The partition key, then the clustering columns.
    pub fn keys(&self) -> impl Iterator<Item = &Column> {
        self.partition_key.iter().chain(&self.clustering)
    }

    /// `token("a", "b")` over the partition key.
    pub fn token_expr(&self) -> String {
        let cols: Vec<String> = self.partition_key.iter().map(Column::quoted).collect();
        format!("token({})", cols.join(", "))
    }
}

/// A CQL identifier in double quotes, so any name (mixed case, reserved word) is taken as is.
pub fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Whether a keyspace belongs to the server rather than the user (never copied).
pub fn is_system_keyspace(name: &str) -> bool {
    name.starts_with("system")
}

/// The user keyspaces of a cluster: all of them, or those of `only` that exist (an unknown
/// name in `only` is an error, so a typo does not copy nothing silently).
pub async fn user_keyspaces(session: &Session, only: &[String]) -> Result<Vec<String>, Error> {
    let rows: Vec<(String,)> =
        query(session, "SELECT keyspace_name FROM system_schema.keyspaces").await?;
    let mut all: Vec<String> = rows
        .into_iter()
        .map(|(k,)| k)
        .filter(|k| !is_system_keyspace(k))
        .collect();
    all.sort();
    if only.is_empty() {
        return Ok(all);
    }
    for k in only {
        if !all.contains(k) {
            return Err(Error::Schema(format!(
                "the source has no keyspace {k} (its user keyspaces: {})",
                all.join(", ")
            )));
        }
    }
    Ok(only.to_vec())
}

/// The tables of `keyspace` (not views), by name.
pub async fn tables(session: &Session, keyspace: &str) -> Result<Vec<Table>, Error> {
    let udts: HashMap<String, Vec<String>> = query::<(String, Vec<String>)>(
        session,
        &format!(
            "SELECT type_name, field_names FROM system_schema.types WHERE keyspace_name = '{}'",
            keyspace.replace('\'', "''")
        ),
    )
    .await?
    .into_iter()
    .collect();
    let names: Vec<(String,)> = query(
        session,
        &format!(
            "SELECT table_name FROM system_schema.tables WHERE keyspace_name = '{}'",
            keyspace.replace('\'', "''")
        ),
    )
    .await?;
    let columns: Vec<(String, String, String, i32, String)> = query(
        session,
        &format!(
            "SELECT table_name, column_name, kind, position, type FROM system_schema.columns WHERE keyspace_name = '{}'",
            keyspace.replace('\'', "''")
        ),
    )
    .await?;
    let mut by_table: BTreeMap<String, Vec<(String, String, i32, String)>> =
        names.into_iter().map(|(t,)| (t, Vec::new())).collect();
    for (table, column, kind, position, cql_type) in columns {
        if let Some(cols) = by_table.get_mut(&table) {
            cols.push((column, kind, position, cql_type));
        }
    }
    let mut out = Vec::new();
    for (name, mut cols) in by_table {
        cols.sort_by(|a, b| {
            (a.1.as_str(), a.2, a.0.as_str()).cmp(&(b.1.as_str(), b.2, b.0.as_str()))
        });
        let mut table = Table {
            keyspace: keyspace.to_string(),
            name,
            partition_key: Vec::new(),
            clustering: Vec::new(),
            statics: Vec::new(),
            regulars: Vec::new(),
        };
        for (column, kind, _, cql_type) in cols {
            let cell = cell_kind(&cql_type, &udts);
            let col = Column {
                name: column,
                cql_type,
                cell,
            };
            match kind.as_str() {
                "partition_key" => table.partition_key.push(col),
                "clustering" => table.clustering.push(col),
                "static" => table.statics.push(col),
                _ => table.regulars.push(col),
            }
        }
        if table.partition_key.is_empty() {
            return Err(Error::Schema(format!(
                "table {} has no partition key in system_schema.columns",
                table.qualified()
            )));
        }
        out.push(table);
    }
    Ok(out)
}

/// How a column of type `cql_type` stores its cells; `udts` maps the keyspace's type names to
/// their field names.
pub fn cell_kind(cql_type: &str, udts: &HashMap<String, Vec<String>>) -> CellKind {
    let t = cql_type.trim();
    if t == "counter" {
        CellKind::Counter
    } else if t.starts_with("list<") {
        CellKind::List
    } else if t.starts_with("set<") {
        CellKind::Set
    } else if t.starts_with("map<") {
        CellKind::Map
    } else if let Some(fields) = udts.get(t).or_else(|| udts.get(t.trim_matches('"'))) {
        CellKind::Udt(fields.clone())
    } else {
        CellKind::Simple
    }
}

/// What the schema copy of a keyspace did.
#[derive(Debug, Default, Clone)]
pub struct SchemaCopy {
    /// Statements sent.
    pub statements: usize,
    /// `(object, option)`: table options the target refused as unknown, left out.
    pub dropped_options: Vec<(String, String)>,
}

/// Creates `keyspace` and everything in it on the target, from the source's `DESCRIBE
/// KEYSPACE`. Objects that exist are left as they are. A table option the target does not
/// know (`Unknown property 'x'`: one a newer server shows, or one Peregrine shows but does not
/// take) is left out and reported, rather than stopping the migration: options tune storage,
/// they do not change what the rows mean.
///
/// With `only` (table names), only those tables (with their indexes and views) are created,
/// besides the keyspace and its types.
pub async fn copy_keyspace(
    source: &Session,
    target: &Session,
    keyspace: &str,
    only: Option<&[String]>,
) -> Result<SchemaCopy, Error> {
    let mut rows: Vec<(String, String, String, String)> =
        query(source, &format!("DESCRIBE KEYSPACE {}", quote(keyspace))).await?;
    if let Some(tables) = only {
        rows.retain(|r| r.1 == "keyspace" || r.1 == "type");
        for t in tables {
            let cql = format!("DESCRIBE TABLE {}.{}", quote(keyspace), quote(t));
            rows.extend(query::<(String, String, String, String)>(source, &cql).await?);
        }
    }
    let mut done = SchemaCopy::default();
    for (_, kind, name, statement) in rows {
        let mut statement = if_not_exists(&statement);
        loop {
            let Err(e) = target.query_unpaged(statement.as_str(), ()).await else {
                break;
            };
            let msg = e.to_string();
            let unknown = msg
                .split("Unknown property '")
                .nth(1)
                .and_then(|rest| rest.split('\'').next())
                .map(str::to_string);
            match unknown.and_then(|o| drop_option(&statement, &o).map(|s| (o, s))) {
                Some((option, shorter)) => {
                    done.dropped_options.push((format!("{kind} {name}"), option));
                    statement = shorter;
                }
                None => {
                    return Err(Error::Schema(format!(
                        "the target refused the {kind} {name} of keyspace {keyspace}: {msg}\nstatement: {statement}"
                    )))
                }
            }
        }
        done.statements += 1;
    }
    Ok(done)
}

/// `statement` without its `WITH`/`AND` option `name` (DESCRIBE puts each option on a line of
/// its own); `None` if it has no such option.
pub fn drop_option(statement: &str, name: &str) -> Option<String> {
    // `rest` starts with `name = ...`.
    let names_it = |rest: &str| {
        rest.trim_start()
            .strip_prefix(name)
            .is_some_and(|r| r.trim_start().starts_with('='))
    };
    let lines: Vec<&str> = statement.lines().collect();
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    for (i, line) in lines.iter().enumerate() {
        if line.trim_start().strip_prefix("AND ").is_some_and(names_it) {
            out.remove(i);
            return Some(out.join("\n"));
        }
        if let Some((head, _)) = line.split_once(" WITH ").filter(|(_, r)| names_it(r)) {
            // `) WITH name = v` then `AND next = w`: the next option moves up behind WITH.
            match lines
                .get(i + 1)
                .and_then(|n| n.trim_start().strip_prefix("AND "))
            {
                Some(next) => {
                    out[i] = format!("{head} WITH {next}");
                    out.remove(i + 1);
                }
                None => out[i] = head.to_string(),
            }
            return Some(out.join("\n"));
        }
    }
    None
}

/// `CREATE <kind> x` → `CREATE <kind> IF NOT EXISTS x` (also `CREATE CUSTOM INDEX`), unless it
/// is there already; the trailing `;` is dropped (a driver sends one statement).
pub fn if_not_exists(statement: &str) -> String {
    let s = statement.trim().trim_end_matches(';').trim_end();
    let upper = s.to_ascii_uppercase();
    if upper.contains(" IF NOT EXISTS ") {
        return s.to_string();
    }
    for head in [
        "CREATE KEYSPACE ",
        "CREATE TABLE ",
        "CREATE TYPE ",
        "CREATE CUSTOM INDEX ",
        "CREATE INDEX ",
        "CREATE MATERIALIZED VIEW ",
        "CREATE FUNCTION ",
        "CREATE AGGREGATE ",
    ] {
        if upper.starts_with(head) {
            return format!("{}IF NOT EXISTS {}", &s[..head.len()], &s[head.len()..]);
        }
    }
    s.to_string()
}

/// A table's shape for comparing source and target: every column's name, role, how its cells
/// are stored and its type without `frozen<>` (which says the same as the cell kind at the top
/// and nothing inside, where everything is frozen: Peregrine spells a tuple column `tuple<..>`
/// where Cassandra says `frozen<tuple<..>>`) or spaces.
pub fn shape(t: &Table) -> Vec<(String, &'static str, String, CellKind)> {
    let mut out = Vec::new();
    for (role, cols) in [
        ("partition key", &t.partition_key),
        ("clustering", &t.clustering),
        ("static", &t.statics),
        ("regular", &t.regulars),
    ] {
        for c in cols {
            out.push((c.name.clone(), role, unfrozen(&c.cql_type), c.cell.clone()));
        }
    }
    out.sort();
    out
}

/// `cql_type` without spaces and `frozen<...>` wrappers.
fn unfrozen(cql_type: &str) -> String {
    let mut t: String = cql_type.chars().filter(|c| !c.is_whitespace()).collect();
    while let Some(at) = t.find("frozen<") {
        // Drop the wrapper's opening and its matching `>`.
        let inner = at + "frozen<".len();
        let mut depth = 1;
        let mut close = None;
        for (i, ch) in t[inner..].char_indices() {
            match ch {
                '<' => depth += 1,
                '>' => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(inner + i);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(close) = close else { break };
        t = format!("{}{}{}", &t[..at], &t[inner..close], &t[close + 1..]);
    }
    t
}

/// An unpaged query whose rows deserialize into `R`.
/// Waits until the target's nodes agree on the schema, for at most `within`: the
/// `schema_version` each node gives in `system.local`, and those it lists for its peers in
/// `system.peers`, all one version.
///
/// Run before the schema copy: its `CREATE KEYSPACE IF NOT EXISTS` reaching a node that has
/// not yet heard of a keyspace the operator just created (with the replication the cluster
/// should have) would create it again with the source's, the later definition winning. The
/// driver's own agreement check asks only the nodes it has a working connection to; here each
/// node known to the driver is asked, and each answers for the peers it knows.
pub async fn await_schema_agreement(session: &Session, within: Duration) -> Result<(), Error> {
    until_agreed(within, || schema_disagreement(session)).await
}

/// Asks `disagreement` every 200 ms until it names nothing, for at most `within`.
async fn until_agreed<F, Fut>(within: Duration, mut disagreement: F) -> Result<(), Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Option<String>, Error>>,
{
    let deadline = Instant::now() + within;
    loop {
        let Some(what) = disagreement().await? else {
            return Ok(());
        };
        if Instant::now() > deadline {
            return Err(Error::Schema(format!(
                "the target's nodes do not agree on the schema after {} s: {what}",
                within.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `cql` for `node` alone.
fn on_node(cql: &str, node: &Arc<Node>) -> Statement {
    let mut statement = Statement::new(cql);
    statement.set_load_balancing_policy(Some(SingleTargetLoadBalancingPolicy::new(
        NodeIdentifier::Node(node.clone()),
        None,
    )));
    statement
}

/// What keeps the nodes from one schema version (None: they agree): the version each node
/// gives (`node 1.2.3.4:9042`) and those it lists for its peers (`peer 1.2.3.5 as node
/// 1.2.3.4:9042 sees it`), or a node not answering.
async fn schema_disagreement(session: &Session) -> Result<Option<String>, Error> {
    const LOCAL: &str = "SELECT schema_version FROM system.local";
    const PEERS: &str = "SELECT peer, schema_version FROM system.peers";
    let mut seen = Vec::new();
    for node in session.get_cluster_state().get_nodes_info() {
        for cql in [LOCAL, PEERS] {
            let answer = match session.query_unpaged(on_node(cql, node), ()).await {
                Ok(answer) => answer,
                Err(e) => return Ok(Some(format!("{} did not answer: {e}", node.address))),
            };
            let rows = answer
                .into_rows_result()
                .map_err(|e| Error::Cql(format!("{cql}: {e}")))?;
            if cql == LOCAL {
                for row in rows
                    .rows::<(Option<CqlValue>,)>()
                    .map_err(|e| Error::Cql(format!("{cql}: {e}")))?
                {
                    let (version,) = row.map_err(|e| Error::Cql(format!("{cql}: {e}")))?;
                    seen.push((format!("node {}", node.address), version));
                }
            } else {
                for row in rows
                    .rows::<(Option<CqlValue>, Option<CqlValue>)>()
                    .map_err(|e| Error::Cql(format!("{cql}: {e}")))?
                {
                    let (peer, version) = row.map_err(|e| Error::Cql(format!("{cql}: {e}")))?;
                    let peer = peer.as_ref().map_or_else(|| "?".to_string(), shown);
                    seen.push((
                        format!("peer {peer} as node {} sees it", node.address),
                        version,
                    ));
                }
            }
        }
    }
    Ok(disagreement(&seen))
}

/// What keeps `seen` (who, schema version) from being one version; None when it is.
fn disagreement(seen: &[(String, Option<CqlValue>)]) -> Option<String> {
    let (first, version) = seen.first()?;
    let Some(version) = version else {
        return Some(format!("{first} has no schema version"));
    };
    seen.iter().find_map(|(who, v)| match v {
        None => Some(format!("{who} has no schema version")),
        Some(v) if v != version => Some(format!(
            "{first} has schema version {}, {who} {}",
            shown(version),
            shown(v)
        )),
        Some(_) => None,
    })
}

fn shown(v: &CqlValue) -> String {
    match v {
        CqlValue::Uuid(u) => u.to_string(),
        CqlValue::Inet(a) => a.to_string(),
        other => format!("{other:?}"),
    }
}

/// Waits until every node of `session` lists each of `tables` of `keyspace` in its own
/// `system_schema.tables`, under one id, for at most `within`.
///
/// The driver's schema agreement compares the schema versions of the nodes it has a working
/// connection to at that moment; a node whose connections are being re-opened is left out. Asking
/// each node for the tables themselves leaves no node out.
pub async fn await_tables_on_every_node(
    session: &Session,
    keyspace: &str,
    tables: &[String],
    within: Duration,
) -> Result<(), Error> {
    until_agreed(within, || {
        tables_missing_somewhere(session, keyspace, tables)
    })
    .await
}

/// What keeps the nodes from agreeing on `tables` (None: they agree).
async fn tables_missing_somewhere(
    session: &Session,
    keyspace: &str,
    tables: &[String],
) -> Result<Option<String>, Error> {
    const CQL: &str = "SELECT table_name, id FROM system_schema.tables WHERE keyspace_name = ?";
    let mut first: Option<HashMap<String, Option<CqlValue>>> = None;
    for node in session.get_cluster_state().get_nodes_info() {
        let answer = match session.query_unpaged(on_node(CQL, node), (keyspace,)).await {
            Ok(answer) => answer,
            // A node that cannot answer yet is asked again.
            Err(e) => return Ok(Some(format!("{} did not answer: {e}", node.address))),
        };
        let rows = answer
            .into_rows_result()
            .map_err(|e| Error::Cql(format!("{CQL}: {e}")))?;
        let ids: HashMap<String, Option<CqlValue>> = rows
            .rows::<(String, Option<CqlValue>)>()
            .map_err(|e| Error::Cql(format!("{CQL}: {e}")))?
            .collect::<Result<_, _>>()
            .map_err(|e| Error::Cql(format!("{CQL}: {e}")))?;
        if let Some(t) = tables.iter().find(|t| !ids.contains_key(*t)) {
            return Ok(Some(format!(
                "{} has no table {keyspace}.{t} yet",
                node.address
            )));
        }
        match &first {
            None => first = Some(ids),
            Some(seen) => {
                if let Some(t) = tables.iter().find(|t| seen.get(*t) != ids.get(*t)) {
                    return Ok(Some(format!(
                        "{} holds {keyspace}.{t} under another id",
                        node.address
                    )));
                }
            }
        }
    }
    Ok(None)
}

pub async fn query<R>(session: &Session, cql: &str) -> Result<Vec<R>, Error>
where
    R: for<'f, 'm> scylla::deserialize::row::DeserializeRow<'f, 'm>,
{
    let result = session
        .query_unpaged(cql, ())
        .await
        .map_err(|e| Error::Cql(format!("{cql}: {e}")))?;
    let rows = result
        .into_rows_result()
        .map_err(|e| Error::Cql(format!("{cql}: {e}")))?;
    let typed = rows
        .rows::<R>()
        .map_err(|e| Error::Cql(format!("{cql}: {e}")))?;
    typed
        .collect::<Result<Vec<R>, _>>()
        .map_err(|e| Error::Cql(format!("{cql}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_statements_get_if_not_exists() {
        assert_eq!(
            if_not_exists("CREATE TABLE ks.t (\n k int PRIMARY KEY\n) WITH x = 1;"),
            "CREATE TABLE IF NOT EXISTS ks.t (\n k int PRIMARY KEY\n) WITH x = 1"
        );
        assert_eq!(
            if_not_exists("CREATE CUSTOM INDEX i ON ks.t (v) USING 'StorageAttachedIndex';"),
            "CREATE CUSTOM INDEX IF NOT EXISTS i ON ks.t (v) USING 'StorageAttachedIndex'"
        );
        assert_eq!(
            if_not_exists("CREATE KEYSPACE IF NOT EXISTS ks WITH r = 1;"),
            "CREATE KEYSPACE IF NOT EXISTS ks WITH r = 1"
        );
        assert_eq!(
            if_not_exists("CREATE TYPE ks.a (x int);"),
            "CREATE TYPE IF NOT EXISTS ks.a (x int)"
        );
    }

    #[test]
    fn unknown_options_are_dropped_from_describe_output() {
        let t = "CREATE TABLE ks.t (\n    k int PRIMARY KEY\n) WITH allow_auto_snapshot = true\n    AND comment = ''\n    AND memtable = 'default'";
        assert_eq!(
            drop_option(t, "memtable").unwrap(),
            "CREATE TABLE ks.t (\n    k int PRIMARY KEY\n) WITH allow_auto_snapshot = true\n    AND comment = ''"
        );
        assert_eq!(
            drop_option(t, "allow_auto_snapshot").unwrap(),
            "CREATE TABLE ks.t (\n    k int PRIMARY KEY\n) WITH comment = ''\n    AND memtable = 'default'"
        );
        assert_eq!(drop_option(t, "caching"), None);
        assert_eq!(
            drop_option(
                "CREATE TABLE ks.t (k int PRIMARY KEY) WITH memtable = 'x'",
                "memtable"
            )
            .unwrap(),
            "CREATE TABLE ks.t (k int PRIMARY KEY)"
        );
    }

    #[test]
    fn cell_kinds_follow_the_type() {
        let udts: HashMap<String, Vec<String>> =
            [("addr".to_string(), vec!["street".to_string()])].into();
        assert_eq!(cell_kind("list<int>", &udts), CellKind::List);
        assert_eq!(cell_kind("set<text>", &udts), CellKind::Set);
        assert_eq!(cell_kind("map<int, text>", &udts), CellKind::Map);
        assert_eq!(cell_kind("frozen<list<int>>", &udts), CellKind::Simple);
        assert_eq!(cell_kind("frozen<addr>", &udts), CellKind::Simple);
        assert_eq!(
            cell_kind("addr", &udts),
            CellKind::Udt(vec!["street".to_string()])
        );
        assert_eq!(cell_kind("counter", &udts), CellKind::Counter);
        assert_eq!(cell_kind("vector<float, 3>", &udts), CellKind::Simple);
        assert_eq!(cell_kind("tuple<int, text>", &udts), CellKind::Simple);
    }

    #[test]
    fn shapes_ignore_frozen_wrappers_and_spaces() {
        assert_eq!(
            unfrozen("frozen<tuple<int, text, frozen<list<int>>>>"),
            "tuple<int,text,list<int>>"
        );
        assert_eq!(
            unfrozen("map<text, frozen<list<int>>>"),
            "map<text,list<int>>"
        );
        assert_eq!(unfrozen("frozen<addr>"), "addr");
    }

    #[test]
    fn schema_versions_agree_only_when_all_are_one() {
        let v = |n: u128| Some(CqlValue::Uuid(uuid::Uuid::from_u128(n)));
        let seen = |vs: Vec<Option<CqlValue>>| -> Vec<(String, Option<CqlValue>)> {
            vs.into_iter()
                .enumerate()
                .map(|(i, v)| (format!("n{i}"), v))
                .collect()
        };
        assert_eq!(disagreement(&[]), None);
        assert_eq!(disagreement(&seen(vec![v(1)])), None);
        assert_eq!(disagreement(&seen(vec![v(1), v(1), v(1)])), None);
        assert_eq!(
            disagreement(&seen(vec![v(1), v(1), v(2)])),
            Some(format!(
                "n0 has schema version {}, n2 {}",
                uuid::Uuid::from_u128(1),
                uuid::Uuid::from_u128(2)
            ))
        );
        assert_eq!(
            disagreement(&seen(vec![v(1), None])),
            Some("n1 has no schema version".to_string())
        );
        assert_eq!(
            disagreement(&seen(vec![None, v(1)])),
            Some("n0 has no schema version".to_string())
        );
    }

    #[test]
    fn identifiers_are_quoted() {
        assert_eq!(quote("a\"b"), "\"a\"\"b\"");
        assert!(is_system_keyspace("system_schema"));
        assert!(!is_system_keyspace("shop"));
    }
}
