//! GROUP BY: which primary key prefix a selection groups on, by Cassandra's rules, and the
//! function (`floor()` of a time) on its last clustering column.

use super::{as_expr, names::selector_name};
use crate::build::Builder;
use crate::catalog::{ColumnKind, TableDef};
use crate::plan::SelExpr;
use crate::EngineError;
use cql::ast::{self, SelectorExpr as E};

const GROUP_ORDER_MSG: &str = "Group by currently only support groups of columns following their declared order in the PRIMARY KEY";

impl Builder<'_> {
    /// How many clustering columns the GROUP BY clause groups on (None without GROUP BY),
    /// with Cassandra's rules: primary key columns in declared order, a column restricted by
    /// `=` may be skipped, the whole partition key.
    pub(crate) fn group_by(
        &mut self,
        t: &TableDef,
        s: &ast::SelectStatement,
        eq_restricted: &dyn Fn(usize) -> bool,
    ) -> Result<Option<(usize, Option<SelExpr>)>, EngineError> {
        if s.group_by.is_empty() {
            return Ok(None);
        }
        let pk: Vec<usize> = (0..t.columns.len())
            .filter(|i| {
                matches!(
                    t.columns[*i].kind,
                    ColumnKind::PartitionKey | ColumnKind::Clustering
                )
            })
            .collect();
        let mut sorted = pk.clone();
        sorted.sort_by_key(|i| {
            let c = &t.columns[*i];
            (c.kind != ColumnKind::PartitionKey, c.position)
        });
        let mut next = sorted.iter();
        let mut clustering = 0;
        let mut last_kind = None;
        let mut group_fn: Option<SelExpr> = None;
        for item in &s.group_by {
            if group_fn.is_some() {
                return Err(EngineError::invalid(
                    "Functions are only supported on the last element of the GROUP BY clause",
                ));
            }
            let i = match item {
                E::Column(name) => {
                    let (i, c) = self.column(t, name)?;
                    if !matches!(c.kind, ColumnKind::PartitionKey | ColumnKind::Clustering) {
                        return Err(EngineError::invalid(format!(
                            "Group by is currently only supported on the columns of the PRIMARY KEY, got {name}"
                        )));
                    }
                    i
                }
                E::Function { args, .. } => {
                    let cols: Vec<&String> = args
                        .iter()
                        .filter_map(|a| match a {
                            E::Column(c) => Some(c),
                            _ => None,
                        })
                        .collect();
                    let [name] = cols.as_slice() else {
                        return Err(EngineError::invalid(if cols.is_empty() {
                            "GROUP BY functions must have one clustering column name as parameter"
                                .to_string()
                        } else {
                            format!(
                                "GROUP BY functions accept only one clustering column as parameter, got: {}",
                                cols.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(",")
                            )
                        }));
                    };
                    let (i, c) = self.column(t, name)?;
                    if c.kind != ColumnKind::Clustering {
                        return Err(EngineError::invalid(format!(
                            "Group by functions are only supported on clustering columns, got {name}"
                        )));
                    }
                    let (sel, _, ty) = self.selector(t, item, None)?;
                    group_fn = Some(as_expr(sel, ty));
                    i
                }
                other => {
                    return Err(EngineError::invalid(format!(
                        "Group by is currently only supported on the columns of the PRIMARY KEY, got {}",
                        selector_name(other)
                    )))
                }
            };
            loop {
                let Some(&p) = next.next() else {
                    return Err(EngineError::invalid(GROUP_ORDER_MSG));
                };
                if t.columns[p].kind == ColumnKind::Clustering {
                    clustering += 1;
                }
                last_kind = Some(t.columns[p].kind);
                if p == i {
                    break;
                }
                if !eq_restricted(p) {
                    return Err(EngineError::invalid(GROUP_ORDER_MSG));
                }
            }
        }
        if last_kind == Some(ColumnKind::PartitionKey)
            && next
                .clone()
                .next()
                .is_some_and(|p| t.columns[*p].kind == ColumnKind::PartitionKey)
        {
            return Err(EngineError::invalid(
                "Group by is not supported on only a part of the partition key",
            ));
        }
        if clustering > 0 && s.distinct {
            return Err(EngineError::invalid(
                "Grouping on clustering columns is not allowed for SELECT DISTINCT queries",
            ));
        }
        Ok(Some((clustering, group_fn)))
    }
}
