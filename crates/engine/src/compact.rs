//! `WITH COMPACT STORAGE` tables: the Thrift-era layouts Cassandra 5.0 still creates, reads
//! and writes, and `ALTER TABLE ... DROP COMPACT STORAGE`, which turns one into a regular table.
//!
//! Three kinds, told apart by the declared primary key (a [`TableDef`] with `compact` set):
//!
//! | kind | declared | Cassandra's internal shape |
//! |---|---|---|
//! | dense | clustering columns + one other column `v` | as declared (`flags` `dense`, plus `compound` with 2+ clustering columns) |
//! | dense, no value | clustering columns only | plus a hidden regular column `value` of type `empty` |
//! | static ("sparse") | no clustering column, 1+ other columns | the others are **static**; plus a hidden clustering column `column1 text` and a hidden regular `value blob` (or `counter`) |
//!
//! What this engine stores: exactly the declared columns, with a static table's columns kept
//! as static columns (so they live in the partition header, where Cassandra keeps them, and
//! dropping compact storage only has to add the hidden columns). The hidden columns exist
//! only in `system_schema.columns` (see [`hidden_columns`]) until DROP COMPACT STORAGE makes
//! them real.
//!
//! What differs on the write and read paths: **no row marker**, and (dense tables with 2+
//! clustering columns) rows named by a clustering prefix ([`is_prefix`]). No marker: an
//! INSERT into a dense or static compact table writes only its cells, so a row exists only
//! while one of its cells lives (a dense row disappears with its value). A dense table without
//! a value column keeps the marker: it is what the hidden empty `value` cell is in Cassandra.

use crate::catalog::{ColumnDef, ColumnKind, TableDef};
use crate::EngineError;
use cql::ast::CreateTable;
use proto::types::ColumnType;

/// The CQL name of Cassandra's `EmptyType` (the hidden value of a dense table declared
/// without one), as `system_schema.columns` shows it.
pub const EMPTY_TYPE: &str = "empty";

/// The column types of the hidden columns, by their `system_schema` type text.
pub fn empty_type() -> ColumnType {
    ColumnType::Custom("org.apache.cassandra.db.marshal.EmptyType".into())
}

/// Whether a compact table is dense: declared with clustering columns.
fn is_dense(t: &TableDef) -> bool {
    t.clustering_count() > 0
}

/// The `flags` of `system_schema.tables`.
pub fn flags(t: &TableDef) -> Vec<&'static str> {
    let counter = t.columns.iter().any(|c| c.ty == ColumnType::Counter);
    let mut out = Vec::new();
    if !t.compact || t.clustering_count() > 1 {
        out.push("compound");
    }
    if counter {
        out.push("counter");
    }
    if t.compact && is_dense(t) {
        out.push("dense");
    }
    out
}

/// A column `system_schema.columns` lists that CQL statements do not see.
pub struct HiddenColumn {
    pub name: String,
    pub kind: ColumnKind,
    pub cql_type: &'static str,
}

/// Cassandra's default names for a compact table's hidden columns: `column1`, `column2`, ...
/// and `value`, `value1`, ..., the first one no declared column uses.
fn default_name(t: &TableDef, base: &str) -> String {
    let first = if base == "column" { 1 } else { 0 };
    (first..)
        .map(|i| match i {
            0 => base.to_string(),
            i => format!("{base}{i}"),
        })
        .find(|n| t.column(n).is_none())
        .unwrap_or_default()
}

/// The columns Cassandra adds to a compact table (see the module docs).
pub fn hidden_columns(t: &TableDef) -> Vec<HiddenColumn> {
    if !t.compact {
        return Vec::new();
    }
    if !is_dense(t) {
        let counter = t.columns.iter().any(|c| c.ty == ColumnType::Counter);
        return vec![
            HiddenColumn {
                name: default_name(t, "column"),
                kind: ColumnKind::Clustering,
                cql_type: "text",
            },
            HiddenColumn {
                name: default_name(t, "value"),
                kind: ColumnKind::Regular,
                cql_type: if counter { "counter" } else { "blob" },
            },
        ];
    }
    if !t.columns.iter().any(|c| c.kind == ColumnKind::Regular) {
        return vec![HiddenColumn {
            name: default_name(t, "value"),
            kind: ColumnKind::Regular,
            cql_type: EMPTY_TYPE,
        }];
    }
    Vec::new()
}

/// Cassandra's checks of `CREATE TABLE ... WITH COMPACT STORAGE`, in its order; `columns` are
/// the declared ones, keys already placed. Then makes a static compact table's columns static.
pub fn check_create(ct: &CreateTable, columns: &mut [ColumnDef]) -> Result<(), EngineError> {
    let is_other = |name: &str| {
        columns
            .iter()
            .any(|c| c.name == name && matches!(c.kind, ColumnKind::Regular | ColumnKind::Static))
    };
    if ct
        .columns
        .iter()
        .any(|c| is_other(&c.name) && c.ty.is_multi_cell())
    {
        return Err(EngineError::invalid(
            "Non-frozen collections and UDTs are not supported with COMPACT STORAGE",
        ));
    }
    if ct.columns.iter().any(|c| c.is_static) {
        return Err(EngineError::invalid(
            "Static columns are not supported in COMPACT STORAGE tables",
        ));
    }
    let others = || {
        columns
            .iter()
            .filter(|c| matches!(c.kind, ColumnKind::Regular | ColumnKind::Static))
    };
    let dense = !ct.clustering_columns.is_empty();
    if !dense && others().next().is_none() {
        return Err(EngineError::invalid(
            "No definition found that is not part of the PRIMARY KEY",
        ));
    }
    if dense && others().count() > 1 {
        // Cassandra lists them in its column order (by name bytes).
        let mut names: Vec<&str> = others().map(|c| c.name.as_str()).collect();
        names.sort_unstable();
        return Err(EngineError::invalid(format!(
            "COMPACT STORAGE with composite PRIMARY KEY allows no more than one column not part of the PRIMARY KEY (got: {})",
            names.join(", ")
        )));
    }
    if !dense {
        for c in columns.iter_mut().filter(|c| c.kind == ColumnKind::Regular) {
            c.kind = ColumnKind::Static;
        }
    }
    Ok(())
}

/// Whether an INSERT into `t` setting the columns `assigned` (by index into `t.columns`)
/// writes a row marker, or why Cassandra refuses it. Compact tables have no row marker, except
/// the dense one without a value (its marker stands for the hidden empty `value` cell).
pub fn insert_marker(t: &TableDef, assigned: impl Fn(usize) -> bool) -> Result<bool, EngineError> {
    if !t.compact {
        return Ok(true);
    }
    if !is_dense(t) {
        // Only reached when no static column is set: Cassandra then wants the hidden
        // clustering column, which CQL cannot name.
        return Err(EngineError::invalid(format!(
            "Some clustering keys are missing: {}",
            default_name(t, "column")
        )));
    }
    match t.columns.iter().position(|c| c.kind == ColumnKind::Regular) {
        None => Ok(true),
        Some(v) if assigned(v) => Ok(false),
        Some(v) => Err(EngineError::invalid(format!(
            "Column {} is mandatory for this COMPACT STORAGE table",
            t.columns[v].name
        ))),
    }
}

/// Whether `n` clustering values name a row of a dense table with more clustering columns:
/// Cassandra keeps Thrift's prefix cells there, so `(k, c1)` is a row of its own beside
/// `(k, c1, c2)`, shown with `c2` null.
pub fn is_prefix(t: &TableDef, n: usize) -> bool {
    t.compact && n > 0 && n < t.clustering_count()
}

/// Whether an INSERT into a compact table that leaves out clustering columns (`given`: which
/// ones it sets) writes a prefix row (see [`is_prefix`]); false sends it to the usual
/// "Some clustering keys are missing" error. Refuses a gap as Cassandra does.
pub fn clustering_prefix_insert<T>(t: &TableDef, given: &[Option<T>]) -> Result<bool, EngineError> {
    let columns: Vec<&ColumnDef> = t.clustering().collect();
    let set = given.iter().take_while(|g| g.is_some()).count();
    if let Some(j) = (set..given.len()).find(|&j| given[j].is_some()) {
        return Err(EngineError::invalid(format!(
            "PRIMARY KEY column \"{}\" cannot be restricted as preceding column \"{}\" is not restricted",
            columns[j].name,
            columns[j - 1].name
        )));
    }
    Ok(is_prefix(t, set))
}

/// `INSERT JSON` into a static compact table: Cassandra sets every column the JSON leaves out
/// to null, the hidden clustering column too, which CQL cannot name.
pub fn check_insert_json(t: &TableDef) -> Result<(), EngineError> {
    if t.compact && !is_dense(t) {
        return Err(EngineError::invalid(format!(
            "Undefined column name {} in table {}.{}",
            default_name(t, "column"),
            t.keyspace,
            t.name
        )));
    }
    Ok(())
}

/// `ALTER TABLE ... ADD` on a compact table (checked per column, after the name clash).
pub fn check_add_column(t: &TableDef) -> Result<(), EngineError> {
    if t.compact {
        return Err(EngineError::invalid(
            "Cannot add new column to a COMPACT STORAGE table",
        ));
    }
    Ok(())
}

/// `ALTER TABLE ... DROP v` of a dense table's value. Cassandra 5.0.9 fails it with a server
/// error (an index out of bounds); this refuses it as an invalid request instead.
pub fn check_drop_column(t: &TableDef, c: &ColumnDef) -> Result<(), EngineError> {
    if t.compact && is_dense(t) && c.kind == ColumnKind::Regular {
        return Err(EngineError::invalid(format!(
            "Cannot drop the value column {} of a dense COMPACT STORAGE table",
            c.name
        )));
    }
    Ok(())
}

/// `CREATE INDEX` on a dense table's value column.
pub fn check_index_column(t: &TableDef, c: &ColumnDef) -> Result<(), EngineError> {
    if t.compact && is_dense(t) && c.kind == ColumnKind::Regular {
        return Err(EngineError::invalid(
            "Secondary indexes are not supported on compact value column of COMPACT STORAGE tables",
        ));
    }
    Ok(())
}

/// `ALTER TABLE ... DROP COMPACT STORAGE`: the hidden columns become real ones under their
/// names and the table a regular (compound) one. Rows keep reading: a static table's cells
/// already sit in the partition header as statics, a dense table's cells in their rows.
pub fn drop_compact_storage(t: &mut TableDef, enabled: bool) -> Result<(), EngineError> {
    if !enabled {
        return Err(EngineError::invalid(
            "DROP COMPACT STORAGE is disabled. Enable in cassandra.yaml to use.",
        ));
    }
    if !t.compact {
        return Err(EngineError::invalid(
            "Cannot DROP COMPACT STORAGE on table without COMPACT STORAGE",
        ));
    }
    for h in hidden_columns(t) {
        let ty = match h.cql_type {
            "text" => ColumnType::Varchar,
            "counter" => ColumnType::Counter,
            "blob" => ColumnType::Blob,
            _ => empty_type(),
        };
        t.push_column(h.name, h.cql_type.to_string(), ty, h.kind);
    }
    t.compact = false;
    Ok(())
}

/// DESCRIBE of a compact table: Cassandra prints its declared shape inside a comment, as a
/// table "not compatible with CQL" (`create` is the CREATE TABLE text from
/// [`crate::system::describe_table`], which already says `WITH COMPACT STORAGE`).
pub fn describe_wrap(t: &TableDef, create: String) -> String {
    format!(
        "/*\nWarning: Table {}.{} omitted because it has constructs not compatible with CQL (was created via legacy API).\nApproximate structure, for reference:\n(this should not be used to reproduce this schema)\n\n{create}\n*/",
        t.keyspace, t.name
    )
}

/// The `CLUSTERING ORDER BY` DESCRIBE shows for a static compact table: its hidden clustering
/// column.
pub fn describe_clustering_order(t: &TableDef) -> Option<String> {
    (t.compact && !is_dense(t)).then(|| format!("{} ASC", default_name(t, "column")))
}

#[cfg(test)]
mod tests;
