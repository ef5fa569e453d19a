//! Visibility labels in the engine (docs/visibility.md): the `visibility` table option, the
//! label a write gives its cells (`USING VISIBILITY`), the write constraint, and the
//! authorizations a read runs with. The expressions themselves are `visibility.rs`'s; the
//! cells' encoding and their hiding are `row.rs`'s.
//!
//! # Invariants
//! - A table without the option has `TableOptions::visibility == None`: its writes carry no
//!   label and its reads get no authorizations, so they take exactly the paths they took
//!   before labels existed.
//! - The option cannot be turned off once on (labelled cells would become visible to all),
//!   and a labelled table has no vector index: ANN would rank hidden vectors. Its secondary
//!   indexes and SAI are kept as anywhere, their candidates checked against base rows the
//!   reader sees; its materialized views take its option and their rows carry the labels of
//!   the base cells they come from (`view::rows::view_row`).
//! - A reader's authorizations are its role's (through its granted roles), narrowed by the
//!   request's `peregrine-authorizations` payload, never widened.

use serde::{Deserialize, Serialize};

use crate::catalog::TableDef;
use crate::row::Label;
use crate::visibility::{self, Authorizations};
use crate::{Engine, EngineError, QueryOptions};

/// The custom payload key naming the authorizations a request reads with (a subset of its
/// role's): a comma-separated list, quoted as tokens are in expressions.
pub const AUTHORIZATIONS_PAYLOAD_KEY: &str = "peregrine-authorizations";

/// `WITH visibility = {'enabled': 'true', 'constraint': 'true'}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct VisibilityOptions {
    /// Writes must use labels their writer's authorizations satisfy (Accumulo's
    /// `VisibilityConstraint`).
    pub constraint: bool,
}

impl VisibilityOptions {
    /// The option's value as CQL, as DESCRIBE prints it and `system_schema.tables`'
    /// `extensions` holds it: `{'constraint': 'false', 'enabled': 'true'}`.
    pub fn cql(&self) -> String {
        format!("{{'constraint': '{}', 'enabled': 'true'}}", self.constraint)
    }
}

/// The key of the option in `system_schema.tables`' `extensions` map (whose values are the
/// option's CQL text, so a driver's table extension can print it: docs/visibility.md).
pub const EXTENSION_KEY: &str = "visibility";

fn flag(m: &std::collections::BTreeMap<String, String>, k: &str) -> Result<bool, EngineError> {
    match m.get(k).map(|v| v.to_ascii_lowercase()) {
        None => Ok(false),
        Some(v) if v == "true" => Ok(true),
        Some(v) if v == "false" => Ok(false),
        Some(v) => Err(EngineError::config(format!(
            "Invalid value '{v}' for visibility sub-option '{k}': expected 'true' or 'false'"
        ))),
    }
}

/// The `visibility` table option given the table's current one (`None` on CREATE).
pub(crate) fn table_option(
    current: Option<VisibilityOptions>,
    m: &std::collections::BTreeMap<String, String>,
) -> Result<Option<VisibilityOptions>, EngineError> {
    if let Some(k) = m.keys().find(|k| *k != "enabled" && *k != "constraint") {
        return Err(EngineError::config(format!(
            "Invalid visibility sub-option '{k}': only 'enabled' and 'constraint' are allowed"
        )));
    }
    let enabled = flag(m, "enabled")?;
    let constraint = flag(m, "constraint")?;
    if !enabled && current.is_some() {
        return Err(EngineError::config(
            "Visibility labels cannot be disabled on a table that has them: its labelled cells would become visible to everyone",
        ));
    }
    if !enabled && constraint {
        return Err(EngineError::config(
            "The visibility 'constraint' needs 'enabled': 'true'",
        ));
    }
    Ok(enabled.then_some(VisibilityOptions { constraint }))
}

/// The label the cells of a write to `t` get from its `USING VISIBILITY` (`expr`), checked.
/// The empty expression is no label: visible to everyone, stored as an unlabelled cell.
pub(crate) fn write_label(t: &TableDef, expr: Option<&str>) -> Result<Option<Label>, EngineError> {
    let Some(expr) = expr else { return Ok(None) };
    check_labelled(t)?;
    checked_label(expr.as_bytes())
}

/// `expr` checked as an expression: `None` for the empty one (no label).
fn checked_label(expr: &[u8]) -> Result<Option<Label>, EngineError> {
    visibility::validate(expr).map_err(|e| EngineError::invalid(e.to_string()))?;
    Ok((!expr.is_empty()).then(|| Label::from(expr)))
}

/// The label a write's `USING VISIBILITY` gives its cells, with its bind marker's value
/// resolved. As for Cassandra's `USING TIMESTAMP ?`, an unset value is as if the clause were
/// absent (no label) and a null one is refused: a null bound by mistake must not publish the
/// cells to everyone (`''` says that explicitly).
pub(crate) fn resolve_label(
    plan: &crate::plan::WritePlan,
    vals: &crate::exec::Bindings,
) -> Result<Option<Label>, EngineError> {
    match &plan.visibility {
        None => Ok(None),
        Some(crate::plan::LabelSrc::Label(l)) => Ok(Some(l.clone())),
        Some(crate::plan::LabelSrc::Bind(src)) => match crate::exec::resolve(src, vals) {
            Ok(Some(b)) => checked_label(&b),
            Ok(None) => Err(EngineError::invalid("Invalid null value of visibility")),
            Err(EngineError::Unset(_)) => Ok(None),
            Err(e) => Err(e),
        },
    }
}

/// Refuses a `USING VISIBILITY` on a table that does not take labels, or on a counter table.
pub(crate) fn check_labelled(t: &TableDef) -> Result<(), EngineError> {
    if t.options.visibility.is_none() {
        return Err(EngineError::invalid(format!(
            "Table {}.{} does not take visibility labels: enable them with ALTER TABLE {}.{} WITH visibility = {{'enabled': 'true'}}",
            t.keyspace, t.name, t.keyspace, t.name
        )));
    }
    if t.columns
        .iter()
        .any(|c| c.ty == proto::types::ColumnType::Counter)
    {
        return Err(EngineError::invalid(
            "Visibility labels are not supported on counter tables",
        ));
    }
    Ok(())
}

/// Refuses what would copy a labelled table's values out of their labels: `what` is
/// "secondary indexes" or "materialized views".
pub(crate) fn refuse_on_labelled(t: &TableDef, what: &str) -> Result<(), EngineError> {
    if t.options.visibility.is_some() {
        return Err(EngineError::invalid(format!(
            "{what} are not supported on table {}.{}: it has visibility labels, which {what} would not keep (docs/visibility.md)",
            t.keyspace, t.name
        )));
    }
    Ok(())
}

/// A label both `a` and `b` must be satisfied for (`None`: unlabelled). A combination too
/// long or too deep to be an expression is seen by nobody (`Authorizations::can_see`).
pub(crate) fn all_of(a: Option<&Label>, b: Option<&Label>) -> Option<Label> {
    match (a, b) {
        (None, x) | (x, None) => x.cloned(),
        (Some(a), Some(b)) if a == b => Some(a.clone()),
        (Some(a), Some(b)) => Some(combine(&[a, b], b'&')),
    }
}

/// A label any of `parts` suffices for; `None` (visible to all) when one part is
/// unlabelled or there is none.
pub(crate) fn any_of<'a>(parts: impl Iterator<Item = Option<&'a Label>>) -> Option<Label> {
    let mut seen: Vec<&Label> = Vec::new();
    for p in parts {
        let p = p?;
        if !seen.contains(&p) {
            seen.push(p);
        }
    }
    match seen.as_slice() {
        [] => None,
        [one] => Some((*one).clone()),
        many => Some(combine(many, b'|')),
    }
}

/// `(a)&(b)&...` or `(a)|(b)|...`: each part parenthesized, so any valid parts make a
/// valid expression (Accumulo's grammar takes a parenthesized token or expression).
fn combine(parts: &[&Label], op: u8) -> Label {
    let mut out = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            out.push(op);
        }
        out.push(b'(');
        out.extend_from_slice(p);
        out.push(b')');
    }
    Label::from(out)
}

/// A materialized view's `visibility` option follows its base table's: set on a view, it is
/// refused.
pub(crate) fn check_view_option(
    given: Option<VisibilityOptions>,
    base: Option<VisibilityOptions>,
) -> Result<(), EngineError> {
    if given != base {
        return Err(EngineError::invalid(
            "The visibility option of a materialized view follows its base table's and cannot be set on the view",
        ));
    }
    Ok(())
}

/// A BATCH's own `USING VISIBILITY` (`batch_expr`) applied to one of its statements (`p`,
/// planned from `st`), as a BATCH's TIMESTAMP is: set on the batch or on its statements, not
/// both. Deletions take no label.
pub(crate) fn batch_label(
    b: &mut crate::build::Builder,
    p: &mut crate::plan::WritePlan,
    st: &cql::ast::ModificationStatement,
    batch_expr: Option<&cql::ast::Term>,
) -> Result<(), EngineError> {
    use cql::ast::ModificationStatement as M;
    let Some(expr) = batch_expr else {
        return Ok(());
    };
    let own = match st {
        M::Insert(s) => &s.using,
        M::Update(s) => &s.using,
        M::Delete(_) => return Ok(()),
    };
    if own.visibility.is_some() {
        return Err(EngineError::invalid(
            "Visibility must be set either on BATCH or individual statements",
        ));
    }
    p.visibility = b.visibility(&p.table.clone(), Some(expr))?;
    Ok(())
}

/// A secondary index or SAI on a labelled table is safe: its entries never reach a reader
/// unchecked, since an indexed read checks every candidate against the base row as its
/// reader sees it (hidden cells removed), so a row whose indexed cell is hidden does not
/// match. A vector index is refused: `ORDER BY ... ANN OF` takes the k nearest vectors before
/// rows are filtered, so how many rows come back would tell of hidden vectors near the query.
pub(crate) fn check_index(t: &TableDef, c: &crate::catalog::ColumnDef) -> Result<(), EngineError> {
    if t.options.visibility.is_some() && is_vector(c) {
        return Err(EngineError::invalid(format!(
            "Vector indexes are not supported on table {}.{}: it has visibility labels, which ANN queries would not keep (docs/visibility.md)",
            t.keyspace, t.name
        )));
    }
    Ok(())
}

fn is_vector(c: &crate::catalog::ColumnDef) -> bool {
    matches!(c.ty, proto::types::ColumnType::Vector(..))
}

/// ALTER TABLE turning labels on: refused while the table has a vector index (see
/// [`check_index`]) or a view (its rows and option were made without labels).
pub(crate) fn check_enable(
    schema: &crate::catalog::Schema,
    t: &TableDef,
) -> Result<(), EngineError> {
    let has_view = crate::view::ddl::views_of(schema, &t.keyspace, &t.name)
        .next()
        .is_some();
    let vector_index = t
        .indexes
        .iter()
        .any(|i| t.column(&i.column).is_some_and(is_vector));
    if vector_index || has_view || t.view.is_some() {
        return Err(EngineError::invalid(format!(
            "Visibility labels cannot be enabled on table {}.{}: it has vector indexes or materialized views, which would not keep the labels (docs/visibility.md)",
            t.keyspace, t.name
        )));
    }
    Ok(())
}

impl Engine {
    /// The authorizations of `role` through its grants (empty without a role).
    pub fn role_authorizations(&self, role: Option<&str>) -> Authorizations {
        match role {
            Some(r) => self.auth.state().authorizations_of(r),
            None => Authorizations::default(),
        }
    }

    /// The authorizations a read of `t` runs with: `None` for a table without labels (no
    /// filtering at all). With logins on, the role's, narrowed to the request's payload if it
    /// names some; with logins off there is no identity to hold any, so only the payload's
    /// (documented: labels are access control only with PasswordAuthenticator).
    pub(crate) fn read_authorizations(
        &self,
        t: &TableDef,
        opts: &QueryOptions,
    ) -> Result<Option<Authorizations>, EngineError> {
        if t.options.visibility.is_none() {
            return Ok(None);
        }
        self.request_authorizations(opts).map(Some)
    }

    /// The authorizations a request reads labelled tables with (see
    /// [`Engine::read_authorizations`]).
    pub(crate) fn request_authorizations(
        &self,
        opts: &QueryOptions,
    ) -> Result<Authorizations, EngineError> {
        if !self.auth.settings().password_authenticator {
            return Ok(opts.authorizations.clone().unwrap_or_default());
        }
        let held = self.role_authorizations(opts.role.as_deref());
        match &opts.authorizations {
            None => Ok(held),
            Some(asked) => held.narrow(asked).map_err(|missing| {
                EngineError::unauthorized(format!(
                    "User {} does not hold the authorization '{missing}' its request's '{AUTHORIZATIONS_PAYLOAD_KEY}' names",
                    opts.role.as_deref().unwrap_or("anonymous")
                ))
            }),
        }
    }

    /// The authorizations a write's collection updates see the stored collections with,
    /// when one of its `plans` is on a labelled table (`None` otherwise: nothing to look up).
    pub(crate) fn writer_authorizations<'p>(
        &self,
        mut plans: impl Iterator<Item = &'p crate::plan::WritePlan>,
        opts: &QueryOptions,
    ) -> Result<Option<std::sync::Arc<Authorizations>>, EngineError> {
        if !plans.any(|p| p.table.options.visibility.is_some()) {
            return Ok(None);
        }
        self.request_authorizations(opts)
            .map(|a| Some(std::sync::Arc::new(a)))
    }

    /// The write constraint: in a table with `'constraint': 'true'`, every label written must
    /// be one the writer's authorizations (all of its role's) satisfy.
    pub(crate) fn check_label_write(
        &self,
        plan: &crate::plan::WritePlan,
        vals: &crate::exec::Bindings,
        opts: &QueryOptions,
    ) -> Result<(), EngineError> {
        let Some(o) = &plan.table.options.visibility else {
            return Ok(());
        };
        // A condition reads the row and answers its values: it would judge and show cells
        // the writer may not see.
        if plan.condition.is_some() {
            return Err(EngineError::invalid(format!(
                "Conditional updates (IF ...) are not supported on table {}.{}: it has visibility labels (docs/visibility.md)",
                plan.table.keyspace, plan.table.name
            )));
        }
        if !o.constraint {
            return Ok(());
        }
        let Some(label) = resolve_label(plan, vals)? else {
            return Ok(());
        };
        let auths = if self.auth.settings().password_authenticator {
            self.role_authorizations(opts.role.as_deref())
        } else {
            opts.authorizations.clone().unwrap_or_default()
        };
        if auths.can_see(&label) {
            return Ok(());
        }
        Err(EngineError::unauthorized(format!(
            "User {} cannot write cells labelled '{}' to {}.{}: the table's visibility constraint requires labels the writer's authorizations satisfy",
            opts.role.as_deref().unwrap_or("anonymous"),
            String::from_utf8_lossy(&label),
            plan.table.keyspace,
            plan.table.name
        )))
    }
}

#[cfg(test)]
#[path = "labels_tests.rs"]
mod tests;
