//! The schema catalog: keyspaces and tables, persisted in storage under the `0x00` prefix,
//! kept in memory as an immutable snapshot swapped on every DDL (readers never lock).

use proto::types::ColumnType;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ColumnKind {
    PartitionKey,
    Clustering,
    Static,
    Regular,
}

impl ColumnKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ColumnKind::PartitionKey => "partition_key",
            ColumnKind::Clustering => "clustering",
            ColumnKind::Static => "static",
            ColumnKind::Regular => "regular",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColumnDef {
    pub name: String,
    /// The CQL type text (e.g. `frozen<list<int>>`); `ty` is its protocol form.
    pub cql_type: String,
    #[serde(skip, default = "default_type")]
    pub ty: ColumnType,
    pub kind: ColumnKind,
    /// Position among partition key or clustering columns; -1 for the others.
    pub position: i32,
    /// A clustering column in descending order. On a view's partition key column taken from
    /// a descending base clustering column: Cassandra keeps that column's reversed type, which
    /// orders the partitions of an `IN` restriction in descending key order.
    pub desc: bool,
    /// Stable id of the column's cells in stored rows.
    pub id: u16,
    /// `MASKED WITH ...` (dynamic data masking, see `masking`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mask: Option<ColumnMask>,
}

/// A masking function attached to a column: the native function's name and the values of
/// its arguments after the first (the column's value); their types follow from the function
/// and the column's type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColumnMask {
    pub function: String,
    /// CQL type texts of the arguments after the first.
    pub arg_types: Vec<String>,
    /// Their serialized values; None is null.
    pub args: Vec<Option<Vec<u8>>>,
}

fn default_type() -> ColumnType {
    ColumnType::Blob
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TableOptions {
    pub bloom_filter_fp_chance: f64,
    pub caching: BTreeMap<String, String>,
    pub comment: String,
    pub compaction: BTreeMap<String, String>,
    pub compression: BTreeMap<String, String>,
    pub crc_check_chance: f64,
    pub default_time_to_live: i32,
    pub gc_grace_seconds: i32,
    pub max_index_interval: i32,
    pub memtable_flush_period_in_ms: i32,
    pub min_index_interval: i32,
    pub read_repair: String,
    pub speculative_retry: String,
    pub additional_write_policy: String,
    pub cdc: bool,
    /// Cassandra 5.0's `allow_auto_snapshot` and `incremental_backups` (both default true):
    /// kept and shown, they change nothing here (no automatic snapshots, no backups).
    #[serde(default = "yes")]
    pub allow_auto_snapshot: bool,
    #[serde(default = "yes")]
    pub incremental_backups: bool,
    /// `visibility = {...}`: the table's cells may carry visibility labels (a Peregrine
    /// extension, docs/visibility.md). Absent from tables without it, stored schemas included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visibility: Option<crate::labels::VisibilityOptions>,
}

fn yes() -> bool {
    true
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

impl Default for TableOptions {
    /// Cassandra 5.0's defaults, as `system_schema.tables` shows them.
    fn default() -> Self {
        TableOptions {
            bloom_filter_fp_chance: 0.01,
            caching: map(&[("keys", "ALL"), ("rows_per_partition", "NONE")]),
            comment: String::new(),
            compaction: map(&[
                (
                    "class",
                    "org.apache.cassandra.db.compaction.SizeTieredCompactionStrategy",
                ),
                ("max_threshold", "32"),
                ("min_threshold", "4"),
            ]),
            compression: map(&[
                ("chunk_length_in_kb", "16"),
                ("class", "org.apache.cassandra.io.compress.LZ4Compressor"),
            ]),
            crc_check_chance: 1.0,
            default_time_to_live: 0,
            gc_grace_seconds: 864000,
            max_index_interval: 2048,
            memtable_flush_period_in_ms: 0,
            min_index_interval: 128,
            read_repair: "BLOCKING".into(),
            speculative_retry: "99p".into(),
            additional_write_policy: "99p".into(),
            cdc: false,
            allow_auto_snapshot: true,
            incremental_backups: true,
            visibility: None,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TableDef {
    pub keyspace: String,
    pub name: String,
    /// Storage prefix of the table's data; never reused.
    pub id: u32,
    pub uuid: [u8; 16],
    /// Partition key columns, then clustering columns, then the others in name order.
    pub columns: Vec<ColumnDef>,
    pub options: TableOptions,
    pub next_column_id: u16,
    /// Dropped columns, kept after a column of the same name is added again (whose cells
    /// written at or before the drop time are then not stored: see [`TableDef::hides`]).
    pub dropped: Vec<DroppedColumn>,
    /// Secondary indexes and SAI indexes on this table (see `index`).
    #[serde(default)]
    pub indexes: Vec<crate::index::IndexDef>,
    /// Set when this table is a materialized view (see `view`).
    #[serde(default)]
    pub view: Option<crate::view::ViewDef>,
    /// Created `WITH COMPACT STORAGE` (and not since dropped): see `compact`.
    #[serde(default)]
    pub compact: bool,
}

/// A dropped column as Cassandra's `system_schema.dropped_columns` keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "StoredDropped")]
pub struct DroppedColumn {
    pub name: String,
    /// The column's CQL type text.
    pub cql_type: String,
    /// The drop time (microseconds): the DROP's own, or its `USING TIMESTAMP`.
    pub at: i64,
    /// Dropped as a static column (Cassandra refuses to add it back as a regular one, and
    /// the other way round).
    pub is_static: bool,
}

/// What a stored schema holds for a dropped column: before its kind was kept, a
/// `[name, type, time]` array of a regular column (the only kind checked then).
#[derive(Deserialize)]
#[serde(untagged)]
enum StoredDropped {
    Kept {
        name: String,
        cql_type: String,
        at: i64,
        is_static: bool,
    },
    Old(String, String, i64),
}

impl From<StoredDropped> for DroppedColumn {
    fn from(s: StoredDropped) -> Self {
        match s {
            StoredDropped::Kept {
                name,
                cql_type,
                at,
                is_static,
            } => DroppedColumn {
                name,
                cql_type,
                at,
                is_static,
            },
            StoredDropped::Old(name, cql_type, at) => DroppedColumn {
                name,
                cql_type,
                at,
                is_static: false,
            },
        }
    }
}

impl TableDef {
    /// Drops the cells of dropped columns (stored under their old ids) from a row's cells
    /// or a partition's static cells: they are no part of the row, as Cassandra skips them
    /// wherever it reads them, so a row (or static row) they alone kept is gone (for reads
    /// and for the row a condition reads alike).
    pub fn drop_dropped_cells(&self, cells: &mut Vec<crate::row::Cell>) {
        if !self.dropped.is_empty() {
            cells.retain(|c| self.holds(c));
        }
    }

    /// Whether `cell` belongs to a column of the table, not to a dropped one (whose cells
    /// stay stored under its old id until compaction drops them).
    pub fn holds(&self, cell: &crate::row::Cell) -> bool {
        self.dropped.is_empty() || self.columns.iter().any(|d| d.id == cell.column)
    }

    /// Whether a cell of column `c` written at `ts` is one Cassandra never shows: `c` was
    /// dropped at or after `ts` and added again (Cassandra skips such cells wherever it
    /// reads them, `SerializationHelper.isDropped`; Peregrine does not store them). The
    /// cells stored before the drop belong to the old column's id and are never read again.
    pub fn hides(&self, c: &ColumnDef, ts: i64) -> bool {
        !self.dropped.is_empty() && self.dropped.iter().any(|d| d.name == c.name && ts <= d.at)
    }

    pub fn column(&self, name: &str) -> Option<&ColumnDef> {
        self.columns.iter().find(|c| c.name == name)
    }
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }
    pub fn partition_key(&self) -> impl Iterator<Item = &ColumnDef> {
        self.columns
            .iter()
            .filter(|c| c.kind == ColumnKind::PartitionKey)
    }
    pub fn clustering(&self) -> impl Iterator<Item = &ColumnDef> {
        self.columns
            .iter()
            .filter(|c| c.kind == ColumnKind::Clustering)
    }
    pub fn pk_count(&self) -> usize {
        self.partition_key().count()
    }
    pub fn clustering_count(&self) -> usize {
        self.clustering().count()
    }
    /// Adds a column with the next column id (ALTER TABLE ADD, DROP COMPACT STORAGE).
    pub fn push_column(
        &mut self,
        name: String,
        cql_type: String,
        ty: ColumnType,
        kind: ColumnKind,
    ) {
        let id = self.next_column_id;
        self.next_column_id += 1;
        let position = if kind == ColumnKind::Clustering {
            0
        } else {
            -1
        };
        self.columns.push(ColumnDef {
            name,
            cql_type,
            ty,
            kind,
            position,
            desc: false,
            id,
            mask: None,
        });
    }
    pub fn has_statics(&self) -> bool {
        self.columns.iter().any(|c| c.kind == ColumnKind::Static)
    }
    /// Puts columns in Cassandra's order: partition key, clustering, then the rest by name.
    pub fn sort_columns(&mut self) {
        self.columns.sort_by(|a, b| {
            let rank = |c: &ColumnDef| match c.kind {
                ColumnKind::PartitionKey => (0, c.position, String::new()),
                ColumnKind::Clustering => (1, c.position, String::new()),
                _ => (2, 0, c.name.clone()),
            };
            rank(a).cmp(&rank(b))
        });
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KeyspaceDef {
    pub name: String,
    pub replication: BTreeMap<String, String>,
    pub durable_writes: bool,
}

/// A user-defined type: field names and their CQL type texts.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UdtDef {
    pub keyspace: String,
    pub name: String,
    pub fields: Vec<(String, String)>,
}

/// One immutable version of the whole schema.
#[derive(Debug, Clone, Default)]
pub struct Schema {
    pub keyspaces: BTreeMap<String, Arc<KeyspaceDef>>,
    /// (keyspace, type name) -> user-defined type.
    pub types: BTreeMap<(String, String), Arc<UdtDef>>,
    /// (keyspace, table) -> table.
    pub tables: BTreeMap<(String, String), Arc<TableDef>>,
    pub version: [u8; 16],
    pub next_table_id: u32,
    /// Tables that have indexes or views, by table id (what a write consults to keep
    /// entries and view rows).
    pub indexed: BTreeMap<u32, Arc<TableDef>>,
    /// The views of each base table, by the base's table id.
    pub views: BTreeMap<u32, Vec<Arc<TableDef>>>,
}

impl Schema {
    /// Recomputes [`Schema::indexed`]; called on every schema made visible.
    pub fn refresh_indexed(&mut self) {
        let mut views: BTreeMap<u32, Vec<Arc<TableDef>>> = BTreeMap::new();
        for v in self.tables.values() {
            let Some(def) = &v.view else { continue };
            if let Some(base) = self.table(&v.keyspace, &def.base) {
                views.entry(base.id).or_default().push(v.clone());
            }
        }
        self.indexed = self
            .tables
            .values()
            .filter(|t| !t.indexes.is_empty() || views.contains_key(&t.id))
            .map(|t| (t.id, t.clone()))
            .collect();
        self.views = views;
    }
    pub fn table(&self, ks: &str, name: &str) -> Option<&Arc<TableDef>> {
        self.tables.get(&(ks.to_string(), name.to_string()))
    }
    pub fn tables_of<'a>(&'a self, ks: &'a str) -> impl Iterator<Item = &'a Arc<TableDef>> + 'a {
        self.tables
            .iter()
            .filter(move |((k, _), _)| k == ks)
            .map(|(_, t)| t)
    }
}

/// The persisted form of the schema: one JSON document under key `0x00 "schema"`.
#[derive(Serialize, Deserialize)]
pub struct PersistedSchema {
    pub keyspaces: Vec<KeyspaceDef>,
    #[serde(default)]
    pub types: Vec<UdtDef>,
    pub tables: Vec<TableDef>,
    pub next_table_id: u32,
    pub version: [u8; 16],
}

pub const SCHEMA_KEY: &[u8] = b"\x00schema";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_column_stored_before_its_kind_was_kept_reads_as_regular() {
        let old: Vec<DroppedColumn> = serde_json::from_str(r#"[["v","int",5]]"#).unwrap();
        let kept = DroppedColumn {
            name: "v".into(),
            cql_type: "int".into(),
            at: 5,
            is_static: false,
        };
        assert_eq!(old, vec![kept.clone()]);
        let s = DroppedColumn {
            is_static: true,
            ..kept
        };
        let again: DroppedColumn =
            serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(again, s);
    }
}
