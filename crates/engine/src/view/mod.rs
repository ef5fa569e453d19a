//! Materialized views (`CREATE MATERIALIZED VIEW`), built on the index upkeep of `apply`.
//!
//! A view is a table of the schema (its rows stored and read like any table's) whose
//! [`TableDef::view`](crate::catalog::TableDef) names its base table. Each view row is a
//! function of exactly one base row (the view key holds the whole base key), so the view is
//! kept exact by recomputing that function: `apply` keeps the stored value of every base row
//! it rewrites (as it does for indexes), and [`maintain`] compares the view row of the old
//! and of the new base row — the old one is deleted when its key changed, the new one put,
//! in the same atomic batch as the base write. A view row carries its base cells' timestamps
//! and expiries, and its marker lives exactly as long as the base row (or, when the view key
//! holds a non-key base column, as long as that column's cell), so it never outlives nor
//! resurrects past its base row. See `docs/dev/views.md`.
//!
//! | module | what it holds |
//! |---|---|
//! | `ddl` | CREATE/ALTER/DROP MATERIALIZED VIEW: Cassandra's rules and messages |
//! | `rows` | the view row of one base row; [`maintain`]; the build over existing data |

pub mod ddl;
mod rows;

pub use rows::maintain;

use serde::{Deserialize, Serialize};

/// What makes a table a view: its base and its WHERE clause.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ViewDef {
    /// The base table's name (in the view's keyspace).
    pub base: String,
    /// The WHERE clause's relations: the column and the rest (`IS NOT NULL`, `> 3`), so
    /// that a renamed base column renames them too (see [`ViewDef::where_text`]).
    pub where_parts: Vec<(String, String)>,
    /// `SELECT *`.
    pub include_all: bool,
    /// Restrictions on base key columns other than `IS NOT NULL`.
    pub filters: Vec<ViewFilter>,
    /// Whether the view key holds a non-key base column: then a view row exists only while
    /// its marker (that column's cell) lives, whatever its other cells (Cassandra's "strict
    /// liveness").
    #[serde(default)]
    pub strict: bool,
    /// Whether the build over the base table's data finished (an unbuilt view is built
    /// again when the store opens).
    #[serde(default)]
    pub built: bool,
}

/// Whether rows of `t` exist only while their marker lives (see [`ViewDef::strict`]).
pub(crate) fn strict_liveness(t: &crate::catalog::TableDef) -> bool {
    t.view.as_ref().is_some_and(|v| v.strict)
}

/// Whether a view row's marker lives at `now` (view rows carry no deletions).
pub(crate) fn marker_live(row: &crate::row::Row, now: crate::row::LocalSecs) -> bool {
    row.marker.is_some_and(|m| m.is_live(now))
}

impl ViewDef {
    /// The WHERE clause as Cassandra writes it in `system_schema.views` and DESCRIBE.
    pub fn where_text(&self) -> String {
        self.where_parts
            .iter()
            .map(|(c, rest)| format!("{} {rest}", cql::quote_identifier(c)))
            .collect::<Vec<_>>()
            .join(" AND ")
    }

    /// After `ALTER TABLE base RENAME from TO to`.
    pub(crate) fn rename(&mut self, from: &str, to: &str) {
        for (c, _) in &mut self.where_parts {
            if c == from {
                *c = to.to_string();
            }
        }
        for f in &mut self.filters {
            if f.column == from {
                f.column = to.to_string();
            }
        }
    }
}

/// `column op value` or `column IN (values)` of a view's WHERE clause, values serialized
/// for the column's type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ViewFilter {
    pub column: String,
    /// `=`, `<`, `<=`, `>`, `>=` or `IN`.
    pub op: String,
    pub values: Vec<Vec<u8>>,
}

impl ViewFilter {
    /// Whether a base value of type `ty` passes.
    fn accepts(&self, ty: &proto::types::ColumnType, v: &[u8]) -> bool {
        use std::cmp::Ordering::*;
        let cmp = |w: &Vec<u8>| crate::types::compare(ty, v, w);
        match self.op.as_str() {
            "IN" => self.values.iter().any(|w| cmp(w) == Equal),
            op => self.values.first().is_some_and(|w| {
                let o = cmp(w);
                match op {
                    "=" => o == Equal,
                    "<" => o == Less,
                    "<=" => o != Greater,
                    ">" => o == Greater,
                    ">=" => o != Less,
                    _ => false,
                }
            }),
        }
    }
}

#[cfg(test)]
mod tests;
