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
//!   and a labelled table has no secondary index and no materialized view: those copy values
//!   out of their cells and would show them without the labels.
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
    visibility::validate(expr.as_bytes()).map_err(|e| EngineError::invalid(e.to_string()))?;
    Ok((!expr.is_empty()).then(|| Label::from(expr.as_bytes())))
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

/// A BATCH's own `USING VISIBILITY` (`batch_expr`) applied to one of its statements (`p`,
/// planned from `st`), as a BATCH's TIMESTAMP is: set on the batch or on its statements, not
/// both. Deletions take no label.
pub(crate) fn batch_label(
    p: &mut crate::plan::WritePlan,
    st: &cql::ast::ModificationStatement,
    batch_expr: Option<&str>,
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
    p.visibility = write_label(&p.table, Some(expr))?;
    Ok(())
}

/// ALTER TABLE turning labels on: refused while the table has an index or a view, which
/// would keep copies of the values to be labelled.
pub(crate) fn check_enable(
    schema: &crate::catalog::Schema,
    t: &TableDef,
) -> Result<(), EngineError> {
    let has_view = crate::view::ddl::views_of(schema, &t.keyspace, &t.name)
        .next()
        .is_some();
    if !t.indexes.is_empty() || has_view || t.view.is_some() {
        return Err(EngineError::invalid(format!(
            "Visibility labels cannot be enabled on table {}.{}: it has secondary indexes or materialized views, which would not keep the labels (docs/visibility.md)",
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
        if !self.auth.settings().password_authenticator {
            return Ok(Some(opts.authorizations.clone().unwrap_or_default()));
        }
        let held = self.role_authorizations(opts.role.as_deref());
        match &opts.authorizations {
            None => Ok(Some(held)),
            Some(asked) => held.narrow(asked).map(Some).map_err(|missing| {
                EngineError::unauthorized(format!(
                    "User {} does not hold the authorization '{missing}' its request's '{AUTHORIZATIONS_PAYLOAD_KEY}' names",
                    opts.role.as_deref().unwrap_or("anonymous")
                ))
            }),
        }
    }

    /// The write constraint: in a table with `'constraint': 'true'`, every label written must
    /// be one the writer's authorizations (all of its role's) satisfy.
    pub(crate) fn check_label_write(
        &self,
        plan: &crate::plan::WritePlan,
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
        let Some(label) = &plan.visibility else {
            return Ok(());
        };
        if !o.constraint {
            return Ok(());
        }
        let auths = if self.auth.settings().password_authenticator {
            self.role_authorizations(opts.role.as_deref())
        } else {
            opts.authorizations.clone().unwrap_or_default()
        };
        if auths.can_see(label) {
            return Ok(());
        }
        Err(EngineError::unauthorized(format!(
            "User {} cannot write cells labelled '{}' to {}.{}: the table's visibility constraint requires labels the writer's authorizations satisfy",
            opts.role.as_deref().unwrap_or("anonymous"),
            String::from_utf8_lossy(label),
            plan.table.keyspace,
            plan.table.name
        )))
    }
}

#[cfg(test)]
#[path = "labels_tests.rs"]
mod tests;
