//! The operations on a non-frozen collection that need its stored value (appending to or
//! removing from a list, setting `l[i]`, discarding set elements or map keys, ...): each
//! resolved once ([`CollectionOp::new`]) and applied to the row's cells as one statement of
//! a write or batch sees them ([`StatementView`]).

use super::{resolve, Bindings};
use crate::plan::Assign;
use crate::row::{Cell, CellValue, Deletion, Expiry};
use crate::{EngineError, Now};
use proto::types::ColumnType;
use std::sync::Arc;

/// Cassandra's error for an unset value naming a collection element.
fn unset_element(e: EngineError, ty: &ColumnType) -> EngineError {
    match (e, ty) {
        (EngineError::Unset(_), ColumnType::Map(..)) => {
            EngineError::invalid("Invalid unset map key")
        }
        (EngineError::Unset(_), ColumnType::Set(_)) => {
            EngineError::invalid("Invalid unset set element")
        }
        (EngineError::Unset(_), _) => EngineError::invalid("Invalid unset value for list index"),
        (e, _) => e,
    }
}

/// A collection update that needs the stored value (append, remove, put by key).
pub(crate) struct CollectionOp {
    /// The statement of its batch it comes from (0 outside batches): of several that fail,
    /// the first statement's error is reported, as Cassandra reports it.
    pub(super) stmt: usize,
    pub(super) column: u16,
    pub(super) op: Assign,
    pub(super) ty: ColumnType,
    pub(super) ts: i64,
    pub(super) expiry: Option<Expiry>,
    pub(super) label: Option<crate::row::Label>,
    pub(super) now: Now,
    pub(super) arg: Option<Vec<u8>>,
    pub(super) arg2: Option<Vec<u8>>,
    /// In a labelled table, the writer's authorizations: the stored collection is taken as
    /// the writer reads it, so `l[i]` counts only the items it sees (docs/visibility.md).
    pub(super) sees: Option<Arc<crate::visibility::Authorizations>>,
    /// `l[i] = unset`: the list and the index are checked (a null list, an index out of
    /// range are refused, as Cassandra's `SetterByIndex` refuses them), nothing is written.
    pub(super) check_only: bool,
}

/// The cells the list operations of one statement on one row read: the row as stored
/// before the write (or batch) with that statement's earlier element writes added, as
/// Cassandra's `UpdateParameters` merges a statement's pending changes into the row it read
/// before the batch.
pub(super) struct StatementView<'a> {
    /// The stored cells; `None`: no operation on the row reads its list.
    before: Option<&'a Vec<Cell>>,
    /// The statement the view is of, and what it sees.
    current: Option<(usize, Vec<Cell>)>,
}

impl<'a> StatementView<'a> {
    pub(super) fn new(before: Option<&'a Vec<Cell>>) -> Self {
        StatementView {
            before,
            current: None,
        }
    }

    /// What statement `stmt` sees (its operations come in order, one statement after the
    /// other); `None` when no operation reads.
    pub(super) fn of(&mut self, stmt: usize) -> Option<&mut Vec<Cell>> {
        let before = self.before?;
        if self.current.as_ref().is_none_or(|(s, _)| *s != stmt) {
            self.current = Some((stmt, before.clone()));
        }
        self.current.as_mut().map(|(_, cells)| cells)
    }
}

/// Merges `cell` into the column-sorted `cells`.
fn merge_cell(cells: &mut Vec<Cell>, cell: Cell) {
    match cells.binary_search_by_key(&cell.column, |c| c.column) {
        Ok(i) => cells[i].merge(cell),
        Err(i) => cells.insert(i, cell),
    }
}

impl CollectionOp {
    /// The operation with its values resolved; `None` when an unset value makes it a no-op.
    /// `when` is the write's timestamp, TTL and time.
    pub(super) fn new(
        stmt: usize,
        column: u16,
        op: Assign,
        ty: ColumnType,
        when: (i64, Option<Expiry>, Option<crate::row::Label>, Now),
        sees: &Option<Arc<crate::visibility::Authorizations>>,
        vals: &Bindings,
    ) -> Result<Option<CollectionOp>, EngineError> {
        let (ts, expiry, label, now) = when;
        // An unset value makes the operation a no-op (`m[k] = unset`, `u.f = unset`), except
        // where it names the element to work on.
        let unset_is_noop = |r: Result<Option<Vec<u8>>, EngineError>| match r {
            Err(EngineError::Unset(_)) => Ok(None),
            other => other.map(Some),
        };
        let mut check_only = false;
        let is_collection = matches!(
            ty,
            ColumnType::List(_) | ColumnType::Set(_) | ColumnType::Map(..)
        );
        let (arg, arg2) = match &op {
            // `s = s + unset`, `l = unset + l`, `m = m - unset`: nothing to add or remove
            // (Cassandra 5.0.9 fails `l = l + unset` with a server error, docs/compatibility.md).
            Assign::Append(s) | Assign::Prepend(s) | Assign::Remove(s) if is_collection => {
                match unset_is_noop(resolve(s, vals))? {
                    Some(v) => (v, None),
                    None => return Ok(None),
                }
            }
            Assign::Append(s) | Assign::Prepend(s) | Assign::Remove(s) | Assign::Set(s) => {
                (resolve(s, vals)?, None)
            }
            Assign::SetKey(k, v) => {
                let key = resolve(k, vals).map_err(|e| unset_element(e, &ty))?;
                match unset_is_noop(resolve(v, vals))? {
                    Some(v) => (key, v),
                    None if matches!(ty, ColumnType::List(_)) => {
                        check_only = true;
                        (key, None)
                    }
                    None => return Ok(None),
                }
            }
            Assign::DeleteElement(k) => {
                (resolve(k, vals).map_err(|e| unset_element(e, &ty))?, None)
            }
            Assign::SetField(_, v) => match unset_is_noop(resolve(v, vals))? {
                Some(v) => (v, None),
                None => return Ok(None),
            },
        };
        Ok(Some(CollectionOp {
            stmt,
            column,
            op,
            ty,
            ts,
            expiry,
            label,
            now,
            arg,
            arg2,
            sees: sees.clone(),
            check_only,
        }))
    }

    /// Whether the operation reads the stored list: it names items by index (`l[i] = v`,
    /// `DELETE l[i]`) or by value (`l = l - [..]`).
    pub(crate) fn reads_stored_list(&self) -> bool {
        matches!(self.ty, ColumnType::List(_))
            && matches!(
                self.op,
                Assign::SetKey(..) | Assign::DeleteElement(_) | Assign::Remove(_)
            )
    }

    /// Applies the operation to a row's (or a partition's static) cells. A list operation
    /// that reads the list reads it in `seen`, the cells its statement sees (see
    /// [`StatementView`]), which the operation's writes are added to; `outer` is a stored
    /// partition or range deletion that covers the row, so elements it shadows are not live.
    pub(super) fn apply_to(
        self,
        seen: Option<&mut Vec<Cell>>,
        cells: &mut Vec<Cell>,
        outer: Option<Deletion>,
    ) -> Result<(), EngineError> {
        // Counters take the whole value.
        let Some(kind) = crate::collections::kind_of(&self.ty) else {
            return self.apply_whole(cells);
        };
        let current = seen
            .as_deref()
            .filter(|_| self.reads_stored_list())
            .and_then(|seen| seen.iter().find(|c| c.column == self.column))
            .and_then(|c| c.live_elements(kind, self.now.secs))
            .and_then(|mut c| {
                if let Some(d) = outer {
                    c.elements.retain(|e| !d.shadows(e.ts));
                }
                if let Some(a) = &self.sees {
                    c.hide(a);
                }
                (!c.elements.is_empty()).then_some(c)
            });
        let delta = crate::collections::element_writes(
            &self.ty,
            current.as_ref(),
            &crate::collections::ElementOp {
                op: &self.op,
                arg: self.arg.as_deref(),
                arg2: self.arg2.as_deref(),
                ts: self.ts,
                expiry: self.expiry,
                label: self.label.clone(),
                now: self.now,
            },
        )?;
        if delta.elements.is_empty() || self.check_only {
            return Ok(());
        }
        let cell = Cell {
            column: self.column,
            ts: delta.max_ts(),
            value: CellValue::Complex(delta),
        };
        if let Some(seen) = seen {
            merge_cell(seen, cell.clone());
        }
        merge_cell(cells, cell);
        Ok(())
    }

    /// A counter update or a UDT field update: the new whole value from the stored one.
    pub(super) fn apply_whole(self, cells: &mut Vec<Cell>) -> Result<(), EngineError> {
        let ty = self.ty.clone();
        let current: Option<Vec<u8>> = cells
            .iter()
            .find(|c| c.column == self.column)
            .and_then(|c| c.live_value(0).map(|v| v.to_vec()));
        let new_value = crate::collections::apply(
            &self.ty,
            &self.op,
            current.as_deref(),
            self.arg.as_deref(),
            self.arg2.as_deref(),
        )?;
        let cell = Cell {
            column: self.column,
            ts: self.ts,
            value: match new_value {
                Some(v) => CellValue::Live {
                    value: v.into(),
                    expiry: self.expiry,
                    label: self.label.clone(),
                },
                None => CellValue::Tombstone { local_del: 0 },
            },
        };
        let mut cell = cell;
        match cells.binary_search_by_key(&self.column, |c| c.column) {
            Ok(i) => {
                if ty == ColumnType::Counter {
                    // Counter deltas add up whatever their timestamps.
                    cell.ts = cell.ts.max(cells[i].ts);
                    cells[i] = cell
                } else if cell.ts >= cells[i].ts {
                    cells[i] = cell
                }
            }
            Err(i) => cells.insert(i, cell),
        }
        Ok(())
    }
}
