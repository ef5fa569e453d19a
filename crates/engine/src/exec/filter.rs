//! Filters with their values bound (`ALLOW FILTERING`, and the relations an index leaves
//! to check): what a read asks of each row or partition it finds.

use super::ranges::{bound_in_list, decode_in_list, decode_list_elements};
use super::{resolve, Bindings};
use crate::catalog::{ColumnKind, TableDef};
use crate::plan::*;
use crate::row::{Deletion, PartitionHeader, Row};
use crate::{EngineError, Now};
use proto::types::ColumnType;

/// A filter with its values bound (see [`crate::plan::Filter`]).
pub(crate) struct BoundFilter {
    pub column: usize,
    pub op: FilterOp,
    pub target: BoundTarget,
    pub want: Option<Vec<u8>>,
    pub analyzer: crate::index::Analyzer,
}

pub(crate) enum BoundTarget {
    Whole,
    Contains,
    ContainsKey,
    Element(Option<Vec<u8>>),
    In(Vec<Option<Vec<u8>>>),
}

impl BoundFilter {
    /// `f` with its values bound; `column` (its name) for Cassandra's messages refusing an
    /// unset or null value. An unset value among those of an `IN (..)` list is the empty value.
    pub(crate) fn bind(
        f: &crate::plan::Filter,
        column: &str,
        vals: &Bindings,
    ) -> Result<Self, EngineError> {
        use crate::plan::FilterTarget as T;
        let value = |src: &Src, what: &str| match resolve(src, vals) {
            Err(EngineError::Unset(_)) => Err(EngineError::invalid(format!(
                "Unsupported unset {what} for column {column}"
            ))),
            other => other,
        };
        let (target, want) = match &f.target {
            T::Whole => (BoundTarget::Whole, value(&f.value, "value")?),
            T::Contains => (BoundTarget::Contains, value(&f.value, "value")?),
            T::ContainsKey => (BoundTarget::ContainsKey, value(&f.value, "value")?),
            T::Element(k) => (
                BoundTarget::Element(value(k, "map key")?),
                value(&f.value, "map value")?,
            ),
            T::In(values) => {
                let mut bound = Vec::with_capacity(values.len());
                for v in values {
                    // Cassandra 5.0.9 compares an unset value as the empty one (its unset
                    // buffer is empty): `t IN ('b', unset)` finds the rows of t = ''.
                    match resolve(v, vals) {
                        Err(EngineError::Unset(_)) => bound.push(Some(Vec::new())),
                        other => bound.push(other?),
                    }
                }
                (BoundTarget::In(bound), None)
            }
            T::InList => {
                let list = bound_in_list(&f.value, vals, column)?;
                (
                    BoundTarget::In(decode_in_list(&list).unwrap_or_default()),
                    None,
                )
            }
        };
        Ok(BoundFilter {
            column: f.column,
            op: f.op,
            target,
            want,
            analyzer: f.analyzer,
        })
    }

    /// Whether the column's value `have` (`None`: null) satisfies the filter.
    fn holds(&self, ty: &ColumnType, have: Option<&[u8]>) -> bool {
        if let (BoundTarget::In(values), Some(have)) = (&self.target, have) {
            return values
                .iter()
                .flatten()
                .any(|v| crate::types::compare(ty, have, v).is_eq());
        }
        let (Some(have), Some(want)) = (have, self.want.as_deref()) else {
            return false;
        };
        let cmp = |t: &ColumnType, a: &[u8]| -> std::cmp::Ordering {
            if !self.analyzer.is_none()
                && matches!(
                    t,
                    ColumnType::Varchar | ColumnType::Ascii | ColumnType::Inet
                )
            {
                let (a, b) = (self.analyzer.apply(a), self.analyzer.apply(want));
                crate::types::compare(t, &a, &b)
            } else {
                crate::types::compare(t, a, want)
            }
        };
        match (&self.target, ty) {
            // SAI's inet lookup is in IPv4-mapped order; Cassandra 5.0.9 then checks each
            // row in the type's own (byte) order, so both must hold: `v < '2001:db8::8' AND
            // v > '::1'` keeps 10.0.0.2 and drops 127.0.0.1.
            (BoundTarget::Whole, _)
                if self.analyzer.inet == crate::index::InetOrder::MappedAndBytes =>
            {
                self.op.holds(cmp(ty, have)) && self.op.holds(crate::types::compare(ty, have, want))
            }
            (BoundTarget::Whole, _) => self.op.holds(cmp(ty, have)),
            (BoundTarget::Contains, ColumnType::List(e) | ColumnType::Set(e)) => {
                decode_list_elements(have)
                    .unwrap_or_default()
                    .iter()
                    .any(|x| cmp(e, x).is_eq())
            }
            (BoundTarget::Contains, ColumnType::Map(_, v)) => crate::collections::map_entries(have)
                .unwrap_or_default()
                .iter()
                .any(|(_, x)| cmp(v, x).is_eq()),
            (BoundTarget::ContainsKey, ColumnType::Map(k, _)) => {
                crate::collections::map_entries(have)
                    .unwrap_or_default()
                    .iter()
                    .any(|(x, _)| cmp(k, x).is_eq())
            }
            (BoundTarget::Element(Some(key)), ColumnType::Map(k, v)) => {
                crate::collections::map_entries(have)
                    .unwrap_or_default()
                    .iter()
                    .find(|(x, _)| crate::types::compare(k, x, key).is_eq())
                    .is_some_and(|(_, x)| self.op.holds(cmp(v, x)))
            }
            _ => false,
        }
    }
}

/// Whether a row (`None`: the partition alone, for a static or partition key filter) of
/// the partition with key parts `pk_parts` and header `header` passes every filter.
pub(crate) fn passes_filters(
    t: &TableDef,
    filters: &[BoundFilter],
    pk_parts: &[&[u8]],
    row: Option<&Row>,
    header: &PartitionHeader,
    outer: Option<Deletion>,
    now: Now,
) -> bool {
    filters.iter().all(|f| {
        let c = &t.columns[f.column];
        let have: Option<std::borrow::Cow<[u8]>> = match c.kind {
            ColumnKind::Clustering => row
                .and_then(|r| r.clustering.get(c.position as usize))
                .map(|v| v.as_slice().into()),
            ColumnKind::Static => header
                .static_cell(c.id, now.secs)
                .and_then(|x| crate::row::value_of(x, &c.ty, now.secs)),
            ColumnKind::Regular => row
                .and_then(|r| r.cell(c.id, now.secs, outer))
                .and_then(|x| crate::row::value_of(x, &c.ty, now.secs)),
            ColumnKind::PartitionKey => pk_parts.get(c.position as usize).map(|v| (*v).into()),
        };
        f.holds(&c.ty, have.as_deref())
    })
}
