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
            PartitionSel::Keys(keys) => keys
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
