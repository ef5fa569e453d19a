//! A group's aggregates folded row by row ([`Group`]): the accumulators of `count`, `min`,
//! `max`, `sum` and `avg`, the first row's plain values, and the results in their output types.

use super::{eval_expr, RowView};
use crate::arith;
use crate::plan::*;
use crate::EngineError;
use proto::types::ColumnType;
use std::borrow::Cow;

/// One value per aggregate (or per first-row selector); `None` is null.
type Values = Vec<Option<Vec<u8>>>;

/// A running aggregate.
enum Acc {
    Rows(i64),
    Count(i64),
    Min(Option<Vec<u8>>),
    Max(Option<Vec<u8>>),
    Sum(arith::Sum),
    Avg(arith::Mean),
}

/// The group being folded: its key, its first row's plain values and its aggregates.
pub(super) struct Group {
    pub(super) key: Vec<u8>,
    /// Clustering bytes of the group's first row (to merge groups across IN partitions).
    pub(super) first_row: Vec<u8>,
    pub(super) firsts: Vec<Option<Vec<u8>>>,
    accs: Vec<Acc>,
}

impl Group {
    pub(super) fn new(key: Vec<u8>, sel: &AggSelection) -> Group {
        Group {
            key,
            first_row: Vec::new(),
            firsts: Vec::new(),
            accs: sel
                .aggs
                .iter()
                .map(|a| match a.kind {
                    AggKind::CountRows => Acc::Rows(0),
                    AggKind::Count => Acc::Count(0),
                    AggKind::Min => Acc::Min(None),
                    AggKind::Max => Acc::Max(None),
                    AggKind::Sum => Acc::Sum(arith::Sum::new(&arg_type(a))),
                    AggKind::Avg => Acc::Avg(arith::Mean::new(&arg_type(a))),
                })
                .collect(),
        }
    }

    pub(super) fn add(&mut self, sel: &AggSelection, view: &RowView) -> Result<(), EngineError> {
        for (acc, a) in self.accs.iter_mut().zip(&sel.aggs) {
            if let Acc::Rows(n) = acc {
                *n += 1;
                continue;
            }
            let Some(arg) = &a.arg else { continue };
            let ty = arg.ty();
            let Some(v) = eval_expr(
                arg,
                &|leaf| Ok(view.value(leaf).map(Cow::into_owned)),
                view.now,
            )?
            else {
                continue;
            };
            match acc {
                Acc::Rows(_) => {}
                Acc::Count(n) => *n += 1,
                Acc::Min(cur) | Acc::Max(cur) => {
                    let min = matches!(a.kind, AggKind::Min);
                    let replace = cur.as_ref().is_none_or(|c| {
                        let ord = crate::types::compare(ty, &v, c);
                        if min {
                            ord.is_lt()
                        } else {
                            ord.is_gt()
                        }
                    });
                    if replace {
                        *cur = Some(v);
                    }
                }
                Acc::Sum(total) => total.add(ty, &v)?,
                Acc::Avg(mean) => mean.add(ty, &v)?,
            }
        }
        Ok(())
    }

    /// The aggregates' results, in their output types.
    pub(super) fn results(self, sel: &AggSelection) -> Result<(Values, Values), EngineError> {
        let out = self
            .accs
            .into_iter()
            .zip(&sel.aggs)
            .map(|(acc, a)| {
                Ok(match acc {
                    Acc::Rows(n) | Acc::Count(n) => Some(n.to_be_bytes().to_vec()),
                    Acc::Min(v) | Acc::Max(v) => v,
                    Acc::Sum(total) => Some(total.result(&arg_type(a))),
                    Acc::Avg(mean) => Some(mean.result(&arg_type(a))?),
                })
            })
            .collect::<Result<_, EngineError>>()?;
        Ok((out, self.firsts))
    }
}

/// The type of an aggregate's argument (`sum` and `avg` always have one).
fn arg_type(a: &crate::plan::Aggregate) -> ColumnType {
    a.arg
        .as_ref()
        .map_or(ColumnType::Bigint, |x| x.ty().clone())
}
