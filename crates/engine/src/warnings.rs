//! The client warnings Cassandra 5.0 sends with a result (the protocol's WARNING flag, which
//! drivers log), read off the compiled plan (or, for DDL, the statement and the schema it is
//! planned against) once per request, never per row.

use crate::build::{Compiled, CompiledKind};
use crate::catalog::{ColumnKind, Schema};
use crate::lane::PlannedQuery;
use crate::plan::{KeyValues, PartitionSel, Selection};
use crate::PlanSnapshot;
use proto::types::ColumnType;

/// An aggregate or GROUP BY query restricting no partition key column (nor its token).
pub const AGGREGATE_WITHOUT_KEY: &str = "Aggregation query used without partition key";
/// An aggregate or GROUP BY query with `IN` on the partition key.
pub const AGGREGATE_OVER_IN: &str =
    "Aggregation query used on multiple partition keys (IN restriction)";

/// A table with an SAI index on a vector column (Cassandra's
/// `StorageAttachedIndex.VECTOR_USAGE_WARNING`). Cassandra sends it whenever it validates the
/// options of such an index: on CREATE INDEX (of any index) on that table, the vector index
/// included, and on ALTER TABLE ... ADD; not on ALTER TABLE ... WITH / DROP, DROP INDEX, or an IF
/// NOT EXISTS that finds the index already there.
pub const VECTOR_INDEX: &str = "SAI ANN indexes on vector columns are experimental and are not recommended for production use.\n\
They don't yet support SELECT queries with:\n \
* Consistency level higher than ONE/LOCAL_ONE.\n \
* Paging.\n \
* No LIMIT clauses.\n \
* PER PARTITION LIMIT clauses.\n \
* GROUP BY clauses.\n \
* Aggregation functions.\n \
* Filters on columns without a SAI index.";

/// The warning a DDL statement sends with its schema change, if any: [`VECTOR_INDEX`] for the
/// statements that make Cassandra validate a vector index (see there), planned against the
/// schema before the statement. The caller attaches it only to a SCHEMA_CHANGE result, so an IF
/// NOT EXISTS that changes nothing, and an error, send none (as in Cassandra).
pub(crate) fn ddl_warning(
    statement: &cql::ast::Statement,
    keyspace: Option<&str>,
    schema: &Schema,
) -> Option<&'static str> {
    use cql::ast::{AlterTableAction, Statement};
    let (name, new_index) = match statement {
        Statement::CreateIndex(ci) => (&ci.table, Some(ci)),
        Statement::AlterTable(at) if matches!(at.action, AlterTableAction::Add { .. }) => {
            (&at.name, None)
        }
        _ => return None,
    };
    let ks = name.keyspace.as_deref().or(keyspace)?;
    let table = schema.table(ks, &name.name)?;
    let vector_column = |column: &str| table.column(column).is_some_and(|c| is_vector(&c.ty));
    let has_vector_index = table
        .indexes
        .iter()
        .any(|i| i.class_name.is_some() && vector_column(&i.column));
    let creates_vector_index = new_index.is_some_and(|ci| {
        ci.custom_class
            .as_deref()
            .is_some_and(crate::index::ddl::is_sai_class)
            && matches!(ci.targets.as_slice(), [one] if vector_column(&one.column))
    });
    (has_vector_index || creates_vector_index).then_some(VECTOR_INDEX)
}

fn is_vector(ty: &ColumnType) -> bool {
    matches!(ty, ColumnType::Vector(..))
}

impl Compiled {
    /// The warning Cassandra 5.0.9 sends with this statement's result, if any.
    fn warning(&self) -> Option<&'static str> {
        let plan = match &self.kind {
            CompiledKind::Select(p) | CompiledKind::VirtualSelect(p) => p,
            _ => return None,
        };
        if !matches!(plan.selection, Selection::Aggregates(_)) {
            return None;
        }
        match &plan.partitions {
            PartitionSel::Keys(keys, _) => keys
                .iter()
                .any(|k| matches!(k, KeyValues::In(_) | KeyValues::InBind(..)))
                .then_some(AGGREGATE_OVER_IN),
            // A filter on a partition key column (`k > 0 ALLOW FILTERING`) restricts the key.
            PartitionSel::Range {
                start: None,
                end: None,
            } if !plan
                .filters
                .iter()
                .any(|f| plan.table.columns[f.column].kind == ColumnKind::PartitionKey) =>
            {
                Some(AGGREGATE_WITHOUT_KEY)
            }
            PartitionSel::Range { .. } => None,
        }
    }
}

impl PlanSnapshot {
    /// The warning to send with this statement's result (see [`Compiled::warning`]).
    pub fn warning(&self) -> Option<&'static str> {
        self.plan.warning()
    }
}

impl PlannedQuery {
    /// The warning to send with this statement's result (see [`Compiled::warning`] and
    /// [`ddl_warning`]): for rows, or for a schema change.
    pub fn warning(&self) -> Option<&'static str> {
        self.compiled.warning().or(self.ddl_warning)
    }
}

/// Cassandra's `unlogged_batch_across_partitions_warn_threshold` (its default, 10): an unlogged
/// or counter batch writing more distinct partitions than this is warned about.
pub const UNLOGGED_BATCH_PARTITIONS: usize = 10;

/// Cassandra's warning for an unlogged (or counter) batch across more than
/// [`UNLOGGED_BATCH_PARTITIONS`] partitions, read off the batch's mutations `m`. Partitions
/// are told apart by their key alone, as Cassandra's decorated keys are: the same key in two
/// tables counts once. The tables are listed as Cassandra prints its `HashSet` of `ks.table`
/// names.
pub(crate) fn unlogged_batch(
    parts: &[(&crate::plan::WritePlan, crate::exec::Bindings)],
    m: &crate::exec::Mutations,
) -> Option<String> {
    // At most one partition per statement without IN: no need to look at the keys.
    let with_in = |p: &crate::plan::WritePlan| {
        p.partition
            .iter()
            .any(|k| matches!(k, KeyValues::In(_) | KeyValues::InBind(..)))
    };
    if parts.len() <= UNLOGGED_BATCH_PARTITIONS && !parts.iter().any(|(p, _)| with_in(p)) {
        return None;
    }
    let mut keys = std::collections::HashSet::new();
    let mut table_ids: Vec<u32> = Vec::new();
    for (id, key) in m
        .partition_prefixes()
        .filter_map(crate::keys::partition_identity)
    {
        keys.insert(key);
        if !table_ids.contains(&id) {
            table_ids.push(id);
        }
    }
    if keys.len() <= UNLOGGED_BATCH_PARTITIONS {
        return None;
    }
    let tables = table_names(parts, &table_ids);
    let plural = if tables.len() == 1 { "" } else { "s" };
    Some(format!(
        "Unlogged batch covering {} partitions detected against table{plural} [{}]. You should use a logged batch for atomicity, or asynchronous writes for performance.",
        keys.len(),
        tables.join(", ")
    ))
}

/// The `ks.table` names (quoted where CQL needs it) of the tables `ids` of a batch, in the
/// order Cassandra prints its `HashSet` of them.
fn table_names(
    parts: &[(&crate::plan::WritePlan, crate::exec::Bindings)],
    ids: &[u32],
) -> Vec<String> {
    let mut names: Vec<String> = Vec::with_capacity(ids.len());
    for id in ids {
        if let Some((p, _)) = parts.iter().find(|(p, _)| p.table.id == *id) {
            let name = format!(
                "{}.{}",
                cql::keywords::quote_identifier(&p.table.keyspace),
                cql::keywords::quote_identifier(&p.table.name)
            );
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    java_hash_set_order(names)
}

/// Cassandra's warning for a LOGGED batch writing a table whose `gc_grace_seconds` is 0 (the
/// batchlog entries would expire at once), sent whatever the batch's size and partitions.
pub(crate) fn logged_batch_low_gc_grace(
    parts: &[(&crate::plan::WritePlan, crate::exec::Bindings)],
) -> Option<String> {
    let ids: Vec<u32> = parts
        .iter()
        .filter(|(p, _)| p.table.options.gc_grace_seconds == 0)
        .map(|(p, _)| p.table.id)
        .collect();
    if ids.is_empty() {
        return None;
    }
    let tables = table_names(parts, &ids);
    let plural = if tables.len() == 1 { "" } else { "s" };
    Some(format!(
        "Executing a LOGGED BATCH on table{plural} [{}], configured with a gc_grace_seconds of 0. The gc_grace_seconds is used to TTL batchlog entries, so setting gc_grace_seconds too low on tables involved in an atomic batch might cause batchlog entries to expire before being replayed.",
        tables.join(", ")
    ))
}

/// Cassandra's `batch_size_warn_threshold` and `batch_size_fail_threshold` in bytes (its
/// defaults: 5 KiB and 50 KiB).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchSizeThresholds {
    pub warn_bytes: u64,
    pub fail_bytes: u64,
}

impl Default for BatchSizeThresholds {
    fn default() -> Self {
        BatchSizeThresholds {
            warn_bytes: 5 * 1024,
            fail_bytes: 50 * 1024,
        }
    }
}

/// The refusal of a batch of more than one mutation whose data size is over both thresholds.
pub const BATCH_TOO_LARGE: &str = "Batch too large";

/// Cassandra's batch size check, for a batch of more than one mutation (keyspace and
/// partition key) whose data size is `size`: `Err` when it is refused, else the warning when
/// it is over the warning threshold. As in Cassandra, the failure threshold is looked at only
/// past the warning one.
pub(crate) fn batch_size(
    parts: &[(&crate::plan::WritePlan, crate::exec::Bindings)],
    m: &crate::exec::Mutations,
    size: u64,
    limits: BatchSizeThresholds,
) -> Result<Option<String>, crate::EngineError> {
    if size <= limits.warn_bytes {
        return Ok(None);
    }
    if size > limits.fail_bytes {
        return Err(crate::EngineError::invalid(BATCH_TOO_LARGE));
    }
    let mut ids: Vec<u32> = Vec::new();
    for (id, _) in m
        .partition_prefixes()
        .filter_map(crate::keys::partition_identity)
    {
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    Ok(Some(format!(
        "Batch for [{}] is of size {size}, exceeding specified threshold of {} by {}.",
        table_names(parts, &ids).join(", "),
        limits.warn_bytes,
        size - limits.warn_bytes
    )))
}

/// `names` in the order a `java.util.HashSet<String>` holding them iterates: by bucket (the
/// string's hash, spread and masked by the table size), then by insertion.
fn java_hash_set_order(names: Vec<String>) -> Vec<String> {
    crate::javafmt::java_hash_set_order(names, |s| crate::javafmt::string_hash_code(s))
}

#[cfg(test)]
mod tests {
    use super::java_hash_set_order;

    #[test]
    fn table_names_come_in_java_hash_set_order() {
        // As Cassandra 5.0.9 printed them (probed with two tables each).
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            java_hash_set_order(names(&["bw.t", "bw.u"])),
            names(&["bw.u", "bw.t"])
        );
        assert_eq!(
            java_hash_set_order(names(&["bw.t", "bw.\"Odd\""])),
            names(&["bw.\"Odd\"", "bw.t"])
        );
    }
}
