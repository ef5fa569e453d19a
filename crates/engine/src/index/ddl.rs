//! CREATE INDEX and DROP INDEX with Cassandra 5.0's rules, names and messages.

use super::{IndexDef, Target};
use crate::catalog::{ColumnKind, Schema, TableDef};
use crate::{EngineError, SchemaChange, SchemaChangeType};
use cql::ast::{self, IndexTargetKind, PropertyValue};
use proto::types::ColumnType;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The analysis options SAI understands (text columns only).
const SAI_OPTIONS: &[&str] = &["case_sensitive", "normalize", "ascii"];
/// The options of an SAI index on a vector column (see `VectorIndexConfig::for_column`).
const VECTOR_OPTIONS: &[&str] = &[
    "similarity_function",
    "optimize_for",
    "maximum_node_connections",
    "construction_beam_width",
];

/// Whether a CUSTOM index class is SAI (the only custom class Peregrine has).
pub(crate) fn is_sai_class(class: &str) -> bool {
    let c = class.to_ascii_lowercase();
    c == "sai"
        || c == "storageattachedindex"
        || c == "org.apache.cassandra.index.sai.storageattachedindex"
}

/// The table named by `q`, with Cassandra's messages for a missing keyspace or table.
pub(crate) fn lookup_table(
    schema: &Schema,
    ks: &str,
    table: &str,
) -> Result<Arc<TableDef>, EngineError> {
    if !schema.keyspaces.contains_key(ks) {
        return Err(EngineError::invalid(format!(
            "Keyspace '{ks}' doesn't exist"
        )));
    }
    schema
        .table(ks, table)
        .cloned()
        .ok_or_else(|| EngineError::invalid(format!("Table '{table}' doesn't exist")))
}

/// Every index of the keyspace `ks`, with its table.
pub(crate) fn indexes_of<'a>(
    schema: &'a Schema,
    ks: &'a str,
) -> impl Iterator<Item = (&'a Arc<TableDef>, &'a IndexDef)> + 'a {
    schema
        .tables_of(ks)
        .flat_map(|t| t.indexes.iter().map(move |i| (t, i)))
}

/// Cassandra's default name: `<table>_<column>_idx` without non-word characters, then
/// `_1`, `_2`, ... until no index of the keyspace has it.
fn default_name(schema: &Schema, ks: &str, table: &str, column: &str) -> String {
    let base: String = format!("{table}_{column}_idx")
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    let taken = |n: &str| indexes_of(schema, ks).any(|(_, i)| i.name == n);
    if !taken(&base) {
        return base;
    }
    (1..)
        .map(|i| format!("{base}_{i}"))
        .find(|n| !taken(n))
        .unwrap_or(base)
}

fn option_map(props: &[ast::Property]) -> Result<BTreeMap<String, String>, EngineError> {
    let mut out = BTreeMap::new();
    for p in props {
        match (&*p.name, &p.value) {
            ("options", PropertyValue::Map(m)) => {
                out.extend(m.iter().cloned());
            }
            (name, _) => return Err(EngineError::syntax(format!("Unknown property '{name}'"))),
        }
    }
    Ok(out)
}

/// What of the column the index holds, with Cassandra's refusals.
fn target_of(kind: IndexTargetKind, c: &crate::catalog::ColumnDef) -> Result<Target, EngineError> {
    let is_collection = matches!(
        c.ty,
        ColumnType::List(_) | ColumnType::Set(_) | ColumnType::Map(..)
    );
    let frozen = c.cql_type.starts_with("frozen<");
    let is_map = matches!(c.ty, ColumnType::Map(..));
    let name = &c.name;
    let target = match kind {
        IndexTargetKind::Simple if is_collection => Target::Values,
        IndexTargetKind::Simple => Target::Simple,
        IndexTargetKind::Values => Target::Values,
        IndexTargetKind::Keys => Target::Keys,
        IndexTargetKind::Entries => Target::Entries,
        IndexTargetKind::Full => Target::Full,
    };
    let word = match target {
        Target::Simple => "simple",
        Target::Values => "values",
        Target::Keys => "keys",
        Target::Entries => "entries",
        Target::Full => "full",
    };
    if target == Target::Full && !(is_collection && frozen) {
        return Err(EngineError::invalid(
            "full() indexes can only be created on frozen collections",
        ));
    }
    if is_collection && frozen && target != Target::Full {
        return Err(EngineError::invalid(format!(
            "Cannot create {word}() index on frozen column {name}. Frozen collections are immutable and must be fully indexed by using the 'full({name})' modifier"
        )));
    }
    if !is_collection && target != Target::Simple {
        return Err(EngineError::invalid(format!(
            "Cannot create {word}() index on {name}. Non-collection columns only support simple indexes"
        )));
    }
    if !is_map && matches!(target, Target::Keys | Target::Entries) {
        return Err(EngineError::invalid(format!(
            "Cannot create index on {word} of column {name} with non-map type"
        )));
    }
    Ok(target)
}

fn check_sai_options(
    options: &BTreeMap<String, String>,
    c: &crate::catalog::ColumnDef,
    target: Target,
) -> Result<(), EngineError> {
    let unknown: Vec<&str> = options
        .keys()
        .filter(|k| !SAI_OPTIONS.contains(&k.as_str()) && !VECTOR_OPTIONS.contains(&k.as_str()))
        .map(|k| k.as_str())
        .collect();
    if !unknown.is_empty() {
        return Err(EngineError::config(format!(
            "Properties specified [{}] are not understood by StorageAttachedIndex",
            unknown.join(", ")
        )));
    }
    let (analysis, vector): (BTreeMap<_, _>, BTreeMap<_, _>) = options
        .iter()
        .partition(|(k, _)| SAI_OPTIONS.contains(&k.as_str()));
    if matches!(c.ty, ColumnType::Vector(..)) && analysis.is_empty() {
        let options = vector.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        // Cassandra validates before the index has its name: its messages say "index null".
        crate::vector_index::VectorIndexConfig::for_column(&c.ty, options, None)
            .map_err(EngineError::invalid)?;
        return Ok(());
    }
    // IndexWriterConfig.fromOptions, after the analysis options' checks, before the type's.
    let vector_options = || -> Result<(), EngineError> {
        if vector.is_empty() || matches!(c.ty, ColumnType::Vector(..)) {
            return Ok(());
        }
        let term = match (target, &c.ty) {
            (Target::Values, ColumnType::List(e) | ColumnType::Set(e))
            | (Target::Values, ColumnType::Map(_, e))
            | (Target::Keys, ColumnType::Map(e, _)) => &**e,
            (_, ty) => ty,
        };
        Err(EngineError::invalid(format!(
            "CQL type {} cannot have vector options",
            crate::types::cql_type_name(term)
        )))
    };
    for (k, v) in &analysis {
        if !v.eq_ignore_ascii_case("true") && !v.eq_ignore_ascii_case("false") {
            return Err(EngineError::invalid(format!(
                "Illegal value for boolean option '{k}': {v}"
            )));
        }
    }
    if analysis.is_empty() {
        vector_options()?;
    }
    if c.ty == ColumnType::Blob {
        return Err(EngineError::invalid("Unsupported type: blob"));
    }
    let analysis: Vec<String> = analysis
        .iter()
        .map(|(k, v)| format!("'{k}': '{v}'"))
        .collect();
    if !analysis.is_empty() && matches!(c.kind, ColumnKind::PartitionKey | ColumnKind::Clustering) {
        return Err(EngineError::invalid(format!(
            "Analysis options are not supported on primary key columns, but found {{{}}}",
            analysis.join(", ")
        )));
    }
    let text = matches!(c.ty, ColumnType::Varchar | ColumnType::Ascii);
    if !analysis.is_empty() && !text {
        return Err(EngineError::invalid(format!(
            "CQL type {} cannot be analyzed.",
            crate::types::cql_type_name(&c.ty)
        )));
    }
    vector_options()
}

/// CREATE [CUSTOM] INDEX: the next schema (the index not yet built) and its change event.
pub fn create_index(
    schema: &Schema,
    ks: &str,
    ci: &ast::CreateIndex,
) -> Result<Option<(Schema, SchemaChange)>, EngineError> {
    let t = lookup_table(schema, ks, &ci.table.name)?;
    if t.view.is_some() {
        return Err(EngineError::invalid(
            "Secondary indexes on materialized views aren't supported",
        ));
    }
    if t.columns.iter().any(|c| c.ty == ColumnType::Counter) {
        return Err(EngineError::invalid(
            "Secondary indexes on counter tables aren't supported",
        ));
    }
    let class_name = match &ci.custom_class {
        Some(c) if is_sai_class(c) => Some(c.clone()),
        Some(c) => {
            return Err(EngineError::config(format!(
                "Unable to find custom indexer class '{c}'"
            )))
        }
        None => None,
    };
    let options = option_map(&ci.options)?;
    if class_name.is_none() && !options.is_empty() {
        return Err(EngineError::invalid(
            "Cannot specify options for a non-CUSTOM index",
        ));
    }
    let target = match ci.targets.as_slice() {
        [] if class_name.is_none() => {
            return Err(EngineError::invalid(
                "Only CUSTOM indexes can be created without specifying a target column",
            ))
        }
        [] => {
            return Err(EngineError::invalid(
                "Storage-attached index requires a target column",
            ))
        }
        [one] => one,
        _ if class_name.is_none() => {
            return Err(EngineError::invalid(
                "Only CUSTOM indexes support multiple columns",
            ))
        }
        _ => {
            return Err(EngineError::invalid(
                "Storage-attached index does not support multiple columns",
            ))
        }
    };
    let Some(c) = t.column(&target.column) else {
        return Err(EngineError::invalid(format!(
            "Undefined column name {} in table {}.{}",
            target.column, ks, t.name
        )));
    };
    crate::compact::check_index_column(&t, c)?;
    crate::labels::check_index(&t, c)?;
    if c.kind == ColumnKind::PartitionKey && t.pk_count() == 1 {
        return Err(EngineError::invalid(format!(
            "Cannot create secondary index on the only partition key column {}",
            c.name
        )));
    }
    if crate::ddl::contains_duration(&c.ty) {
        // Cassandra 5.0's CreateIndexStatement, by the kind of the column's type.
        let kind = match c.ty {
            ColumnType::List(_) | ColumnType::Set(_) | ColumnType::Map(..) => "collections",
            ColumnType::Tuple(_) => "tuples",
            ColumnType::Udt { .. } => "UDTs",
            _ => {
                return Err(EngineError::invalid(
                    "Secondary indexes are not supported on duration columns",
                ))
            }
        };
        return Err(EngineError::invalid(format!(
            "Secondary indexes are not supported on {kind} containing durations"
        )));
    }
    if matches!(c.ty, ColumnType::Udt { .. }) && !c.cql_type.starts_with("frozen<") {
        return Err(EngineError::invalid(format!(
            "Cannot create index on non-frozen UDT column {}",
            c.name
        )));
    }
    let target = target_of(target.kind, c)?;
    let name = match &ci.name {
        Some(n) => n.clone(),
        None => default_name(schema, ks, &t.name, &c.name),
    };
    let idx = IndexDef {
        name: name.clone(),
        id: schema.next_table_id,
        column: c.name.clone(),
        target,
        class_name,
        options,
        built: false,
    };
    if indexes_of(schema, ks).any(|(_, i)| i.name == name) {
        if ci.if_not_exists {
            return Ok(None);
        }
        return Err(EngineError::invalid(format!(
            "Index '{name}' already exists"
        )));
    }
    let same = |i: &IndexDef| {
        i.column == idx.column
            && i.target == idx.target
            && i.schema_options() == idx.schema_options()
    };
    if let Some(existing) = t.indexes.iter().find(|i| same(i)) {
        if ci.if_not_exists {
            return Ok(None);
        }
        return Err(EngineError::invalid(format!(
            "Index {name} is a duplicate of existing index {}",
            existing.name
        )));
    }
    let same_target = |i: &IndexDef| i.is_sai() && i.column == idx.column && i.target == idx.target;
    if idx.is_sai() && t.indexes.iter().any(same_target) {
        return Err(EngineError::invalid(format!(
            "Cannot create more than one storage-attached index on the same column: {}",
            idx.column
        )));
    }
    if idx.is_sai() {
        check_sai_options(&idx.options, c, idx.target)?;
    }
    let mut next = schema.clone();
    next.next_table_id += 1;
    let mut nt = (*t).clone();
    nt.indexes.push(idx);
    next.tables
        .insert((ks.to_string(), t.name.clone()), Arc::new(nt));
    Ok(Some((
        next,
        crate::table_change(SchemaChangeType::Updated, ks, &t.name),
    )))
}

/// DROP INDEX [IF EXISTS] [ks.]name.
pub fn drop_index(
    schema: &Schema,
    ks: Option<&str>,
    name: &ast::QualifiedName,
    if_exists: bool,
) -> Result<Option<(Schema, SchemaChange)>, EngineError> {
    let Some(ks) = name.keyspace.as_deref().or(ks) else {
        return Err(EngineError::invalid(crate::ddl::NO_KEYSPACE));
    };
    let Some((t, _)) = indexes_of(schema, ks).find(|(_, i)| i.name == name.name) else {
        if if_exists {
            return Ok(None);
        }
        return Err(EngineError::invalid(format!(
            "Index '{ks}.{}' doesn't exist'",
            name.name
        )));
    };
    let mut nt = (**t).clone();
    nt.indexes.retain(|i| i.name != name.name);
    let mut next = schema.clone();
    let table = nt.name.clone();
    next.tables
        .insert((ks.to_string(), table.clone()), Arc::new(nt));
    Ok(Some((
        next,
        crate::table_change(SchemaChangeType::Updated, ks, &table),
    )))
}

/// ALTER TABLE ... RENAME of a column an index depends on is refused, as Cassandra refuses it.
pub fn check_rename_column(t: &TableDef, column: &str) -> Result<(), EngineError> {
    let deps = dependents(t, column);
    if deps.is_empty() {
        return Ok(());
    }
    Err(EngineError::invalid(format!(
        "Can't rename column {column} because it has dependent secondary indexes ({deps})"
    )))
}

/// The names of the indexes on `column`, comma separated.
fn dependents(t: &TableDef, column: &str) -> String {
    let names: Vec<&str> = t
        .indexes
        .iter()
        .filter(|i| i.column == column)
        .map(|i| i.name.as_str())
        .collect();
    names.join(", ")
}

/// ALTER TABLE ... DROP of a column an index depends on is refused, as Cassandra refuses it.
pub fn check_drop_column(t: &TableDef, column: &str) -> Result<(), EngineError> {
    let deps = dependents(t, column);
    if deps.is_empty() {
        return Ok(());
    }
    Err(EngineError::invalid(format!(
        "Cannot drop column {column} because it has dependent secondary indexes ({deps})"
    )))
}

/// TRUNCATE gives the table a fresh id; its indexes get fresh ids too, so no entry of the
/// old data is ever read again (compaction drops them). The table is then empty, so each index
/// is complete, including one whose build was still running in the background (that build
/// goes on under the old id, and its result is dropped).
pub fn renumber(t: &mut TableDef, next_id: &mut u32) {
    for i in &mut t.indexes {
        i.id = *next_id;
        i.built = true;
        *next_id += 1;
    }
}
