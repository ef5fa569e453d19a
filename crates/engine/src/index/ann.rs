//! Planning `SELECT ... ORDER BY v ANN OF q LIMIT k` with Cassandra 5.0.9's rules: the
//! column must be a vector with an SAI index; beside it the query may restrict the partition
//! key (and then clustering columns) and columns with other SAI indexes, nothing else; no
//! other ordering, no PER PARTITION LIMIT, no aggregation, and a LIMIT of at most 1000.
//! The row order itself is computed at execution (`read.rs`), from each row's stored vector.

use super::vector::vector_config;
use crate::build::Builder;
use crate::catalog::{ColumnKind, TableDef};
use crate::plan::{AnnPlan, Src};
use crate::EngineError;
use cql::ast::{self, Relation};
use proto::types::ColumnType;
use std::sync::Arc;

/// Cassandra's cap on `LIMIT` for an ANN query.
pub(crate) const MAX_ANN_LIMIT: u64 = 1000;

pub(crate) const NO_LIMIT_MSG: &str =
    "Top-K queries must have a limit specified and the limit must be less than the query page size";

const INDEXED_FILTERING_MSG: &str =
    "ANN ordering by vector requires all restricted column(s) to be indexed";

/// The error for a LIMIT above [`MAX_ANN_LIMIT`].
pub(crate) fn limit_too_large(limit: u64) -> EngineError {
    EngineError::invalid(format!(
        "Use of ANN OF in an ORDER BY clause requires a LIMIT that is not greater than {MAX_ANN_LIMIT}. LIMIT was {limit}"
    ))
}

fn relation_columns(r: &Relation) -> Vec<&str> {
    match r {
        Relation::Binary { column, .. }
        | Relation::In { column, .. }
        | Relation::IsNotNull { column }
        | Relation::Element { column, .. } => vec![column.as_str()],
        Relation::Token { columns, .. }
        | Relation::MultiColumn { columns, .. }
        | Relation::MultiColumnIn { columns, .. } => columns.iter().map(String::as_str).collect(),
    }
}

impl Builder<'_> {
    /// A relation `v = ...` on a column whose only index is a vector index: Cassandra
    /// refuses it whether or not ALLOW FILTERING is given.
    pub(crate) fn refuse_vector_relations(
        &self,
        t: &TableDef,
        rels: &[Relation],
    ) -> Result<(), EngineError> {
        let vector_indexed = |c: &str| {
            t.indexes
                .iter()
                .any(|i| i.column == c && vector_config(i, t).is_some())
        };
        // CONTAINS / CONTAINS KEY on a vector is refused before (as on any non-collection
        // column).
        let contains = |r: &Relation| {
            matches!(r, Relation::Binary { op, .. }
                if matches!(op, ast::Operator::Contains | ast::Operator::ContainsKey))
        };
        if rels
            .iter()
            .filter(|r| !contains(r))
            .any(|r| relation_columns(r).into_iter().any(vector_indexed))
        {
            return Err(EngineError::invalid(
                "Vector indexes only support ANN queries",
            ));
        }
        Ok(())
    }

    /// The ANN ordering of `s`, checked; `None` without one.
    pub(crate) fn ann_plan(
        &mut self,
        t: &Arc<TableDef>,
        s: &ast::SelectStatement,
    ) -> Result<Option<AnnPlan>, EngineError> {
        let Some(ann) = &s.ann else {
            return Ok(None);
        };
        let (column, c) = self.column(t, &ann.column)?;
        let c = c.clone();
        if !matches!(c.ty, ColumnType::Vector(..)) {
            return Err(EngineError::invalid(format!(
                "Unexpected receiver type '{}'; only list and vector are expected",
                crate::types::cql_type_name(&c.ty)
            )));
        }
        if !matches!(&c.ty, ColumnType::Vector(e, _) if **e == ColumnType::Float) {
            return Err(EngineError::invalid(
                "ANN ordering is only supported on float vector indexes",
            ));
        }
        if !s.order_by.is_empty() {
            return Err(EngineError::invalid(
                "ANN ordering does not support any other ordering",
            ));
        }
        let Some((idx, config)) = t
            .indexes
            .iter()
            .find_map(|i| Some((i, vector_config(i, t).filter(|_| i.column == c.name)?)))
        else {
            return Err(EngineError::invalid(
                "ANN ordering by vector requires the column to be indexed",
            ));
        };
        let index_id = idx.id;
        self.check_ann_restrictions(t, s)?;
        if s.per_partition_limit.is_some() {
            return Err(EngineError::invalid(
                "Top-K queries do not support per-partition limits",
            ));
        }
        let aggregates = !s.group_by.is_empty()
            || matches!(&s.selection, ast::Selection::Selectors(sels)
                if sels.iter().any(|x| crate::selection::contains_aggregate(&x.expr)));
        if aggregates {
            return Err(EngineError::invalid(
                "Top-K queries can not be run with aggregation",
            ));
        }
        if s.distinct {
            return Err(EngineError::invalid(crate::build::DISTINCT_WHERE_MSG));
        }
        match &s.limit {
            None => return Err(EngineError::invalid(NO_LIMIT_MSG)),
            Some(ast::Term::Literal(ast::Literal::Integer(n))) => {
                if let Ok(n) = n.parse::<u64>() {
                    if n > MAX_ANN_LIMIT {
                        return Err(limit_too_large(n));
                    }
                }
            }
            Some(_) => {}
        }
        let query = self.term(t, &ann.term, &c.name, &c.ty)?;
        if query == Src::Const(None) {
            return Err(EngineError::invalid(format!(
                "Unsupported null value for column {}",
                c.name
            )));
        }
        Ok(Some(AnnPlan {
            column,
            index_id,
            similarity: config.similarity,
            query,
        }))
    }

    /// Beside ANN only the partition key, clustering columns once the partition key is
    /// given, and columns with a (non-vector) SAI index may be restricted.
    fn check_ann_restrictions(
        &self,
        t: &TableDef,
        s: &ast::SelectStatement,
    ) -> Result<(), EngineError> {
        let rels = &s.where_clause;
        let pk_full = t.partition_key().all(|c| {
            rels.iter().any(|r| {
                matches!(r, Relation::Binary { column, op: ast::Operator::Eq, .. } if *column == c.name)
            })
        });
        for r in rels {
            if let Relation::In { column, .. } = r {
                if t.column(column)
                    .is_some_and(|c| c.kind == ColumnKind::PartitionKey)
                {
                    return Err(EngineError::invalid(
                        "Select on indexed columns and with IN clause for the PRIMARY KEY are not supported",
                    ));
                }
            }
            for name in relation_columns(r) {
                let Some(c) = t.column(name) else { continue };
                let ok = match c.kind {
                    ColumnKind::PartitionKey => true,
                    ColumnKind::Clustering if pk_full => true,
                    _ => t
                        .indexes
                        .iter()
                        .any(|i| i.is_sai() && i.column == c.name && vector_config(i, t).is_none()),
                };
                if ok {
                    continue;
                }
                // A legacy index is not an SAI index: Cassandra asks for ALLOW FILTERING.
                let legacy = t.indexes.iter().any(|i| !i.is_sai() && i.column == c.name);
                if legacy && !s.allow_filtering {
                    return Err(EngineError::invalid(crate::build::FILTERING_MSG));
                }
                return Err(EngineError::invalid(INDEXED_FILTERING_MSG));
            }
        }
        Ok(())
    }
}
