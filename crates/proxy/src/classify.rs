//! What a statement does, as far as the proxy cares: which reads may be cached, which tables a
//! write touches, which queries are answered locally (topology, metrics).
//!
//! Works on the statement text only (`cql::parse`); it knows no schema. Anything it cannot
//! parse is treated conservatively: a SELECT is passed through uncached, anything else is
//! assumed to write anywhere and invalidates the whole cache after it ran.

use cql::ast::{
    BindMarker, InValues, InsertValues, ModificationStatement, Relation, Selection, SelectorExpr,
    Statement, Term,
};

/// A table, fully qualified.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TableRef {
    pub keyspace: String,
    pub table: String,
}

/// Which locally answered system table a SELECT reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalTable {
    /// `system.local`: the upstream's row with this proxy's address, host id and tokens.
    Local,
    /// `system.peers`: the other proxies.
    Peers,
    /// `system.peers_v2`: the other proxies.
    PeersV2,
    /// `system_views.peregrine_cache`: the proxy's metrics.
    Metrics,
}

/// The proxy's view of one statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Class {
    /// A SELECT of a user table. `cacheable` holds when the text allows caching (no LWT-style
    /// or time-dependent functions, no ALLOW FILTERING, not a system keyspace); whether the
    /// full partition key is bound is decided with the PREPARED metadata (`eq_binds`).
    Select {
        table: TableRef,
        cacheable: bool,
        /// `column = ?` relations: (column, bind marker index).
        eq_binds: Vec<(String, usize)>,
    },
    /// A SELECT answered (or rewritten) by the proxy itself.
    Local(LocalTable),
    /// A SELECT that is not cached: system tables, or text the parser did not understand.
    ReadOther,
    /// INSERT / UPDATE / DELETE / BATCH on these tables. `single` when it is one statement
    /// (not a batch), so a prepared statement's partition key indexes name its partition.
    Write { tables: Vec<TableRef>, single: bool },
    /// `TRUNCATE t`.
    Truncate(TableRef),
    /// `USE ks`.
    Use(String),
    /// DDL: the SCHEMA_CHANGE result names what changed.
    Schema,
    /// Statements with no effect on cached rows (roles, permissions, LIST, DESCRIBE).
    Other,
    /// Not parsed and not a SELECT: may have written anything.
    Unknown,
}

impl Class {
    /// True for statements that may modify data (timeouts map to WriteTimeout).
    pub fn is_write(&self) -> bool {
        matches!(
            self,
            Class::Write { .. } | Class::Truncate(_) | Class::Schema | Class::Unknown
        )
    }
}

/// Functions whose result depends on when (or how often) they run.
const NON_DETERMINISTIC: &[&str] = &[
    "now",
    "uuid",
    "currenttimestamp",
    "currentdate",
    "currenttime",
    "currenttimeuuid",
];

/// Classifies `text`; `keyspace` is the connection's (or the request's) current keyspace.
pub fn classify(text: &str, keyspace: Option<&str>) -> Class {
    let parsed = match cql::parse(text) {
        Ok(p) => p,
        Err(_) if starts_with_select(text) => return Class::ReadOther,
        Err(_) => return Class::Unknown,
    };
    let qualify = |name: &cql::ast::QualifiedName| -> Option<TableRef> {
        let ks = name.keyspace.as_deref().or(keyspace)?;
        Some(TableRef {
            keyspace: ks.to_string(),
            table: name.name.clone(),
        })
    };
    match parsed.statement {
        Statement::Select(s) => {
            let Some(table) = qualify(&s.table) else {
                // No keyspace: the upstream answers with an error.
                return Class::ReadOther;
            };
            match (table.keyspace.as_str(), table.table.as_str()) {
                ("system", "local") => return Class::Local(LocalTable::Local),
                ("system", "peers") => return Class::Local(LocalTable::Peers),
                ("system", "peers_v2") => return Class::Local(LocalTable::PeersV2),
                ("system_views", "peregrine_cache") => return Class::Local(LocalTable::Metrics),
                (ks, _) if ks.starts_with("system") => return Class::ReadOther,
                _ => {}
            }
            let mut cacheable = !s.allow_filtering;
            if let Selection::Selectors(sel) = &s.selection {
                cacheable &= sel.iter().all(|x| deterministic_selector(&x.expr));
            }
            let mut eq_binds = Vec::new();
            for r in &s.where_clause {
                cacheable &= relation_deterministic(r);
                if let Relation::Binary {
                    column,
                    op: cql::ast::Operator::Eq,
                    value: Term::Bind(b),
                } = r
                {
                    eq_binds.push((column.clone(), b.index));
                }
            }
            for t in s.limit.iter().chain(s.per_partition_limit.iter()) {
                cacheable &= deterministic_term(t);
            }
            Class::Select {
                table,
                cacheable,
                eq_binds,
            }
        }
        Statement::Insert(s) => write_of([qualify(&s.table)], true),
        Statement::Update(s) => write_of([qualify(&s.table)], true),
        Statement::Delete(s) => write_of([qualify(&s.table)], true),
        Statement::Batch(b) => {
            let tables: Vec<_> = b
                .statements
                .iter()
                .map(|m| match m {
                    ModificationStatement::Insert(s) => qualify(&s.table),
                    ModificationStatement::Update(s) => qualify(&s.table),
                    ModificationStatement::Delete(s) => qualify(&s.table),
                })
                .collect();
            write_of(tables, false)
        }
        Statement::Truncate(name) => match qualify(&name) {
            Some(t) => Class::Truncate(t),
            None => Class::Other,
        },
        Statement::Use(ks) => Class::Use(ks),
        Statement::CreateKeyspace(_)
        | Statement::AlterKeyspace(_)
        | Statement::DropKeyspace { .. }
        | Statement::CreateTable(_)
        | Statement::AlterTable(_)
        | Statement::DropTable { .. }
        | Statement::CreateType(_)
        | Statement::AlterType(_)
        | Statement::DropType { .. }
        | Statement::CreateIndex(_)
        | Statement::DropIndex { .. }
        | Statement::CreateView(_)
        | Statement::AlterView { .. }
        | Statement::DropView { .. } => Class::Schema,
        Statement::CreateRole(_)
        | Statement::AlterRole(_)
        | Statement::DropRole { .. }
        | Statement::GrantPermissions(_)
        | Statement::RevokePermissions(_)
        | Statement::GrantRole { .. }
        | Statement::RevokeRole { .. }
        | Statement::ListRoles { .. }
        | Statement::ListUsers
        | Statement::ListPermissions { .. }
        | Statement::Authorizations(_)
        | Statement::Describe(_)
        | Statement::ServiceLevel(_) => Class::Other,
        // Functions, aggregates, triggers: may change what reads return.
        Statement::UserCode(_) => Class::Unknown,
    }
}

/// What an in-place cache update needs to know of a statement (see `ProxyBackend`'s write
/// path): which reads hold results a write can patch, and which writes can patch them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchShape {
    /// `SELECT *` or plain columns (no alias, function, DISTINCT, JSON, LIMIT, GROUP BY or
    /// ORDER BY) restricted only by `column = ?`: the result's column names are table columns
    /// and, in a table without clustering columns, it is the partition's one row or nothing.
    PointRead,
    /// `INSERT INTO t (c1, c2, ...) VALUES (?, ?, ...)`: every value a positional marker, no
    /// `IF NOT EXISTS`, no `USING`; `columns[i]` is set from bind marker `i`.
    Insert { columns: Vec<String> },
    /// `UPDATE t SET c1 = ?, ... WHERE k1 = ? AND ...`: plain assignments and `=` relations,
    /// every value a positional marker, no `IF`, no `USING`. (column, bind marker index).
    Update {
        sets: Vec<(String, usize)>,
        keys: Vec<(String, usize)>,
    },
    /// `DELETE FROM t WHERE k1 = ? AND ...`: whole rows, `=` relations on positional markers,
    /// no `IF`, no `USING`.
    Delete { keys: Vec<(String, usize)> },
}

/// The statement's [`PatchShape`], if it has one.
pub fn patch_shape(text: &str) -> Option<PatchShape> {
    match cql::parse(text).ok()?.statement {
        Statement::Select(s) => {
            let plain = match &s.selection {
                Selection::Wildcard => true,
                Selection::Selectors(sel) => sel
                    .iter()
                    .all(|x| x.alias.is_none() && matches!(x.expr, SelectorExpr::Column(_))),
            };
            let only_eq_binds = s.where_clause.iter().all(|r| {
                matches!(
                    r,
                    Relation::Binary {
                        op: cql::ast::Operator::Eq,
                        value: Term::Bind(BindMarker { name: None, .. }),
                        ..
                    }
                )
            });
            (plain
                && only_eq_binds
                && !s.where_clause.is_empty()
                && !s.json
                && !s.distinct
                && !s.allow_filtering
                && s.limit.is_none()
                && s.per_partition_limit.is_none()
                && s.group_by.is_empty()
                && s.order_by.is_empty())
            .then_some(PatchShape::PointRead)
        }
        Statement::Insert(s) if !s.if_not_exists && s.using.is_empty() => match s.values {
            InsertValues::Values { columns, values } => values
                .iter()
                .enumerate()
                .all(|(i, v)| matches!(v, Term::Bind(BindMarker { index, name: None }) if *index == i))
                .then_some(PatchShape::Insert { columns }),
            InsertValues::Json { .. } => None,
        },
        Statement::Update(u) if u.condition.is_none() && u.using.is_empty() => {
            let sets = u
                .assignments
                .iter()
                .map(|a| match a {
                    cql::ast::Assignment::Set { column, value } => {
                        Some((column.clone(), marker(value)?))
                    }
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()?;
            let keys = eq_markers(&u.where_clause)?;
            (!sets.is_empty() && !keys.is_empty()).then_some(PatchShape::Update { sets, keys })
        }
        // `RETURNING` is Peregrine's extension: Cassandra refuses it, so it patches nothing.
        Statement::Delete(d)
            if d.targets.is_empty()
                && d.condition.is_none()
                && d.using.is_empty()
                && d.returning.is_none() =>
        {
            let keys = eq_markers(&d.where_clause)?;
            (!keys.is_empty()).then_some(PatchShape::Delete { keys })
        }
        _ => None,
    }
}

/// A positional bind marker's index.
fn marker(t: &Term) -> Option<usize> {
    match t {
        Term::Bind(BindMarker { index, name: None }) => Some(*index),
        _ => None,
    }
}

/// `(column, marker index)` of relations that are all `column = ?`, else `None`.
fn eq_markers(relations: &[Relation]) -> Option<Vec<(String, usize)>> {
    relations
        .iter()
        .map(|r| match r {
            Relation::Binary {
                column,
                op: cql::ast::Operator::Eq,
                value,
            } => Some((column.clone(), marker(value)?)),
            _ => None,
        })
        .collect()
}

/// A write to `tables`; an unqualified table with no current keyspace fails upstream, but
/// is treated as unknown to stay safe.
fn write_of(tables: impl IntoIterator<Item = Option<TableRef>>, single: bool) -> Class {
    let mut out = Vec::new();
    for t in tables {
        match t {
            Some(t) if !out.contains(&t) => out.push(t),
            Some(_) => {}
            None => return Class::Unknown,
        }
    }
    Class::Write {
        tables: out,
        single,
    }
}

fn starts_with_select(text: &str) -> bool {
    let mut s = text.trim_start();
    loop {
        if let Some(rest) = s.strip_prefix("--").or_else(|| s.strip_prefix("//")) {
            s = rest.split_once('\n').map_or("", |(_, r)| r).trim_start();
        } else if let Some(rest) = s.strip_prefix("/*") {
            s = rest.split_once("*/").map_or("", |(_, r)| r).trim_start();
        } else {
            break;
        }
    }
    s.get(..6).is_some_and(|w| w.eq_ignore_ascii_case("select"))
}

fn deterministic_selector(e: &SelectorExpr) -> bool {
    match e {
        SelectorExpr::Column(_)
        | SelectorExpr::CountRows
        | SelectorExpr::WriteTime(_)
        | SelectorExpr::MaxWriteTime(_) => true,
        // The remaining TTL changes every second.
        SelectorExpr::Ttl(_) => false,
        SelectorExpr::ElementTime { func, key, .. } => {
            *func != cql::ast::CellTimeFn::Ttl && deterministic_term(key)
        }
        SelectorExpr::SliceTime { func, from, to, .. } => {
            *func != cql::ast::CellTimeFn::Ttl
                && from.iter().chain(to.iter()).all(deterministic_term)
        }
        SelectorExpr::FieldTime { func, .. } => *func != cql::ast::CellTimeFn::Ttl,
        SelectorExpr::Function { name, args } => {
            !NON_DETERMINISTIC.contains(&name.name.to_ascii_lowercase().as_str())
                && args.iter().all(deterministic_selector)
        }
        SelectorExpr::Cast { expr, .. }
        | SelectorExpr::Field { expr, .. }
        | SelectorExpr::Parens(expr)
        | SelectorExpr::TypeHint { expr, .. } => deterministic_selector(expr),
        SelectorExpr::Term(t) => deterministic_term(t),
        SelectorExpr::Element { expr, key } => {
            deterministic_selector(expr) && deterministic_term(key)
        }
        SelectorExpr::Slice { expr, from, to } => {
            deterministic_selector(expr) && from.iter().chain(to.iter()).all(deterministic_term)
        }
        SelectorExpr::Operation { left, right, .. } => {
            deterministic_selector(left) && deterministic_selector(right)
        }
        SelectorExpr::Collection(c) => c.items().into_iter().all(deterministic_selector),
    }
}

fn deterministic_term(t: &Term) -> bool {
    match t {
        Term::Literal(_) | Term::Bind(_) => true,
        Term::List(v) | Term::Set(v) | Term::Tuple(v) => v.iter().all(deterministic_term),
        Term::Map(v) => v
            .iter()
            .all(|(k, x)| deterministic_term(k) && deterministic_term(x)),
        Term::Udt(v) => v.iter().all(|(_, x)| deterministic_term(x)),
        Term::FunctionCall { name, args } => {
            !NON_DETERMINISTIC.contains(&name.name.to_ascii_lowercase().as_str())
                && args.iter().all(deterministic_term)
        }
        Term::TypeHint { term, .. } | Term::Negate(term) => deterministic_term(term),
        Term::Operation { left, right, .. } => {
            deterministic_term(left) && deterministic_term(right)
        }
    }
}

fn relation_deterministic(r: &Relation) -> bool {
    let in_values = |v: &InValues| match v {
        InValues::Terms(t) => t.iter().all(deterministic_term),
        InValues::Marker(_) => true,
    };
    match r {
        Relation::Binary { value, .. }
        | Relation::Token { value, .. }
        | Relation::MultiColumn { value, .. } => deterministic_term(value),
        Relation::In { values, .. } | Relation::MultiColumnIn { values, .. } => in_values(values),
        Relation::IsNotNull { .. } => true,
        Relation::Element { key, value, .. } => {
            deterministic_term(key) && deterministic_term(value)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patch_shapes_of_point_reads_and_plain_inserts() {
        let read = Some(PatchShape::PointRead);
        assert_eq!(patch_shape("SELECT * FROM ks.t WHERE k = ?"), read);
        assert_eq!(
            patch_shape("SELECT a, \"B\" FROM t WHERE k1 = ? AND k2 = ?"),
            read
        );
        for no in [
            "SELECT a AS x FROM t WHERE k = ?",
            "SELECT writetime(a) FROM t WHERE k = ?",
            "SELECT * FROM t WHERE k = ? LIMIT 1",
            "SELECT * FROM t WHERE k = 5",
            "SELECT * FROM t WHERE k = :k",
            "SELECT * FROM t WHERE k IN (?, ?)",
            "SELECT * FROM t WHERE k = ? AND c > ?",
            "SELECT DISTINCT k FROM t WHERE k = ?",
            "SELECT JSON * FROM t WHERE k = ?",
            "SELECT * FROM t",
            "INSERT INTO t (k, v) VALUES (?, 1)",
            "INSERT INTO t (k, v) VALUES (?, ?) IF NOT EXISTS",
            "INSERT INTO t (k, v) VALUES (?, ?) USING TTL 5",
            "INSERT INTO t (k, v) VALUES (?, ?) USING TIMESTAMP 5",
            "INSERT INTO t (k, v) VALUES (:k, :v)",
            "INSERT INTO t JSON ?",
            "UPDATE t SET v = ? WHERE k = ? IF EXISTS",
            "UPDATE t USING TTL 5 SET v = ? WHERE k = ?",
            "UPDATE t SET v = v + ? WHERE k = ?",
            "UPDATE t SET v = 'x' WHERE k = ?",
            "UPDATE t SET v = ? WHERE k IN (?, ?)",
            "DELETE v FROM t WHERE k = ?",
            "DELETE FROM t WHERE k = ? IF EXISTS",
            "DELETE FROM t USING TIMESTAMP 5 WHERE k = ?",
            "DELETE FROM t WHERE k = 1",
        ] {
            assert_eq!(patch_shape(no), None, "{no}");
        }
        assert_eq!(
            patch_shape("INSERT INTO ks.t (k, v, \"W\") VALUES (?, ?, ?)"),
            Some(PatchShape::Insert {
                columns: vec!["k".into(), "v".into(), "W".into()]
            })
        );
        assert_eq!(
            patch_shape("UPDATE ks.t SET v = ?, n = ? WHERE k = ?"),
            Some(PatchShape::Update {
                sets: vec![("v".into(), 0), ("n".into(), 1)],
                keys: vec![("k".into(), 2)],
            })
        );
        assert_eq!(
            patch_shape("DELETE FROM t WHERE k = ?"),
            Some(PatchShape::Delete {
                keys: vec![("k".into(), 0)]
            })
        );
    }

    fn t(ks: &str, table: &str) -> TableRef {
        TableRef {
            keyspace: ks.into(),
            table: table.into(),
        }
    }

    #[test]
    fn point_select_is_cacheable_with_its_bind_positions() {
        let c = classify("SELECT v FROM t WHERE k = ? AND c = ?", Some("ks"));
        assert_eq!(
            c,
            Class::Select {
                table: t("ks", "t"),
                cacheable: true,
                eq_binds: vec![("k".into(), 0), ("c".into(), 1)],
            }
        );
    }

    #[test]
    fn time_dependent_or_filtering_selects_are_not_cacheable() {
        for q in [
            "SELECT now() FROM ks.t WHERE k = ?",
            "SELECT ttl(v) FROM ks.t WHERE k = ?",
            "SELECT v FROM ks.t WHERE k = ? AND c > currentTimestamp()",
            "SELECT v FROM ks.t WHERE k = ? AND v = 1 ALLOW FILTERING",
        ] {
            assert!(
                matches!(
                    classify(q, None),
                    Class::Select {
                        cacheable: false,
                        ..
                    }
                ),
                "{q}"
            );
        }
    }

    #[test]
    fn system_tables_are_local_or_uncached() {
        assert_eq!(
            classify("SELECT * FROM system.local WHERE key='local'", None),
            Class::Local(LocalTable::Local)
        );
        assert_eq!(
            classify("select peer, rpc_address from system.peers", Some("ks")),
            Class::Local(LocalTable::Peers)
        );
        assert_eq!(
            classify("SELECT * FROM peers_v2", Some("system")),
            Class::Local(LocalTable::PeersV2)
        );
        assert_eq!(
            classify("SELECT * FROM system_views.peregrine_cache", None),
            Class::Local(LocalTable::Metrics)
        );
        assert_eq!(
            classify("SELECT * FROM system_schema.tables", None),
            Class::ReadOther
        );
    }

    #[test]
    fn writes_name_their_tables() {
        assert_eq!(
            classify("INSERT INTO t (k, v) VALUES (?, ?)", Some("ks")),
            Class::Write {
                tables: vec![t("ks", "t")],
                single: true
            }
        );
        assert_eq!(
            classify(
                "BEGIN BATCH INSERT INTO a (k) VALUES (1); DELETE FROM o.b WHERE k = 2; APPLY BATCH",
                Some("ks")
            ),
            Class::Write {
                tables: vec![t("ks", "a"), t("o", "b")],
                single: false
            }
        );
        assert_eq!(
            classify("TRUNCATE ks.t", None),
            Class::Truncate(t("ks", "t"))
        );
        assert_eq!(classify("USE \"Ks\"", None), Class::Use("Ks".into()));
        assert_eq!(classify("DROP TABLE ks.t", None), Class::Schema);
    }

    #[test]
    fn unparsed_text_is_conservative() {
        assert_eq!(
            classify(" /* hi */ SELECT v FROM t USING TIMEOUT 1s", None),
            Class::ReadOther
        );
        assert_eq!(classify("FROBNICATE ks.t", None), Class::Unknown);
        assert_eq!(
            classify("INSERT INTO t (k) VALUES (1)", None),
            Class::Unknown
        );
    }
}
