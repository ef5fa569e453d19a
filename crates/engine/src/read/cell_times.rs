//! `writetime`, `maxwritetime` and `ttl` of a row's cells: of a whole column (one entry per
//! element of a non-frozen collection), of one UDT field, of one set element or map entry, and
//! of the elements of a set or map slice.

use super::RowView;
use crate::plan::Selector;
use proto::types::ColumnType;

impl RowView<'_> {
    /// `writetime`, `maxwritetime` or `ttl` of column `idx`: of a non-frozen collection, a
    /// list with one entry per live element (a maximum for `maxwritetime`).
    pub(super) fn cell_times(&self, s: &Selector, idx: usize) -> Option<Vec<u8>> {
        let secs = self.now.secs;
        let c = &self.t.columns[idx];
        let cell = self.cell(idx)?;
        let Some(kind) = crate::exec::multi_cell_kind(c) else {
            return match s {
                Selector::Ttl(_) => cell.ttl_remaining(secs).map(|t| t.to_be_bytes().to_vec()),
                _ => Some(cell.ts.to_be_bytes().to_vec()),
            };
        };
        let elements = cell.live_elements(kind, secs)?;
        match s {
            Selector::Ttl(_) => crate::collections::ttls(&c.ty, &elements, secs),
            Selector::MaxWriteTime(_) => crate::collections::max_write_time(&c.ty, &elements, secs)
                .map(|t| t.to_be_bytes().to_vec()),
            _ => crate::collections::write_times(&c.ty, &elements, secs),
        }
    }

    /// `writetime`, `maxwritetime` or `ttl` of a field of the UDT in column `idx`: of a
    /// non-frozen one, those of the field's own cell; of a frozen one, those of its one cell.
    /// Null when the field (or a nested one on the way) is null.
    pub(super) fn field_time(
        &self,
        func: cql::ast::CellTimeFn,
        idx: usize,
        fields: &[usize],
    ) -> Option<Vec<u8>> {
        let secs = self.now.secs;
        let c = &self.t.columns[idx];
        let cell = self.cell(idx)?;
        let (first, rest) = fields.split_first()?;
        let (value, ts, ttl) = match crate::exec::multi_cell_kind(c) {
            Some(kind) => {
                let elements = cell.live_elements(kind, secs)?;
                let path = crate::collections::field_path(*first);
                let e = elements.elements.iter().find(|e| e.path == path)?;
                (
                    e.live_value(secs)?.to_vec(),
                    e.ts,
                    e.expiry().map(|x| x.expires_at.saturating_sub(secs) as i32),
                )
            }
            None => {
                let whole = cell.live_value(secs)?;
                let v = crate::exec::tuple_field(whole, *first)?.to_vec();
                (v, cell.ts, cell.ttl_remaining(secs))
            }
        };
        let mut v = value;
        for f in rest {
            v = crate::exec::tuple_field(&v, *f)?.to_vec();
        }
        one_time(func, ts, ttl)
    }

    /// `writetime`, `maxwritetime` or `ttl` of the element `key` of the set or map in column
    /// `idx` (of a frozen one, those of its one cell when it holds `key`).
    pub(super) fn element_time(
        &self,
        func: cql::ast::CellTimeFn,
        idx: usize,
        key: &[u8],
    ) -> Option<Vec<u8>> {
        let secs = self.now.secs;
        let c = &self.t.columns[idx];
        let (ColumnType::Set(kt) | ColumnType::Map(kt, _)) = &c.ty else {
            return None;
        };
        let cell = self.cell(idx)?;
        let (ts, ttl) = match crate::exec::multi_cell_kind(c) {
            Some(kind) => {
                let elements = cell.live_elements(kind, secs)?;
                let e = elements
                    .elements
                    .iter()
                    .find(|e| crate::types::compare(kt, &e.path, key).is_eq())?;
                (
                    e.ts,
                    e.expiry().map(|x| x.expires_at.saturating_sub(secs) as i32),
                )
            }
            None => {
                let keys = frozen_keys(&c.ty, cell.live_value(secs)?)?;
                if !keys
                    .iter()
                    .any(|k| crate::types::compare(kt, k, key).is_eq())
                {
                    return None;
                }
                (cell.ts, cell.ttl_remaining(secs))
            }
        };
        one_time(func, ts, ttl)
    }

    /// `writetime`, `maxwritetime` or `ttl` of the elements of the set or map in column `idx`
    /// whose keys are within `from..=to`: of a non-frozen one, a list of the elements' times
    /// (the latest for `maxwritetime`); of a frozen one, its cell's when it holds such a key.
    /// Null when no element is in the slice.
    pub(super) fn slice_time(
        &self,
        func: cql::ast::CellTimeFn,
        idx: usize,
        from: Option<&[u8]>,
        to: Option<&[u8]>,
    ) -> Option<Vec<u8>> {
        let secs = self.now.secs;
        let c = &self.t.columns[idx];
        let (ColumnType::Set(kt) | ColumnType::Map(kt, _)) = &c.ty else {
            return None;
        };
        let within = |k: &[u8]| {
            from.is_none_or(|f| crate::types::compare(kt, k, f).is_ge())
                && to.is_none_or(|t| crate::types::compare(kt, k, t).is_le())
        };
        let cell = self.cell(idx)?;
        match crate::exec::multi_cell_kind(c) {
            Some(kind) => {
                let mut elements = cell.live_elements(kind, secs)?;
                elements.elements.retain(|e| within(&e.path));
                if elements.elements.is_empty() {
                    return None;
                }
                match func {
                    cql::ast::CellTimeFn::Ttl => crate::collections::ttls(&c.ty, &elements, secs),
                    cql::ast::CellTimeFn::MaxWriteTime => {
                        crate::collections::max_write_time(&c.ty, &elements, secs)
                            .map(|t| t.to_be_bytes().to_vec())
                    }
                    cql::ast::CellTimeFn::WriteTime => {
                        crate::collections::write_times(&c.ty, &elements, secs)
                    }
                }
            }
            None => {
                let keys = frozen_keys(&c.ty, cell.live_value(secs)?)?;
                if !keys.iter().any(|k| within(k)) {
                    return None;
                }
                one_time(func, cell.ts, cell.ttl_remaining(secs))
            }
        }
    }
}

/// One cell's (or element's) `writetime`/`maxwritetime` (its timestamp) or `ttl` (its
/// remaining seconds, null without one), serialized.
fn one_time(func: cql::ast::CellTimeFn, ts: i64, ttl: Option<i32>) -> Option<Vec<u8>> {
    match func {
        cql::ast::CellTimeFn::Ttl => ttl.map(|t| t.to_be_bytes().to_vec()),
        _ => Some(ts.to_be_bytes().to_vec()),
    }
}

/// The keys of a frozen set (its elements) or map (its entries' keys) of type `ty`.
fn frozen_keys(ty: &ColumnType, value: &[u8]) -> Option<Vec<Vec<u8>>> {
    match ty {
        ColumnType::Map(..) => Some(
            crate::collections::map_entries(value)?
                .into_iter()
                .map(|(k, _)| k)
                .collect(),
        ),
        _ => crate::exec::decode_list_elements(value),
    }
}
