//! The client warnings Cassandra 5.0 sends with a result (the protocol's WARNING flag, which
//! drivers log), read off the compiled plan once per request, never per row.

use crate::build::{Compiled, CompiledKind};
use crate::catalog::ColumnKind;
use crate::lane::PlannedQuery;
use crate::plan::{KeyValues, PartitionSel, Selection};
use crate::PlanSnapshot;

/// An aggregate or GROUP BY query restricting no partition key column (nor its token).
pub const AGGREGATE_WITHOUT_KEY: &str = "Aggregation query used without partition key";
/// An aggregate or GROUP BY query with `IN` on the partition key.
pub const AGGREGATE_OVER_IN: &str =
    "Aggregation query used on multiple partition keys (IN restriction)";

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
    /// The warning to send with this statement's result (see [`Compiled::warning`]).
    pub fn warning(&self) -> Option<&'static str> {
        self.compiled.warning()
    }
}
