//! Choosing an index for a SELECT, with Cassandra 5.0's rules for when a query on indexed
//! columns still needs `ALLOW FILTERING`:
//!
//! - one legacy index serves one relation; any other relation outside the primary key (or a
//!   clustering restriction without the whole partition key) needs ALLOW FILTERING;
//! - SAI indexes serve every relation they support together (equality, ranges on
//!   numbers, dates and times, CONTAINS, CONTAINS KEY, `m[k] = v`), so only relations no SAI index
//!   serves need it;
//! - an `IN` on the partition key together with an index is refused, as is ORDER BY.
//!
//! Every relation an index serves is also kept as a filter, so each candidate row is checked
//! against the base row: the index only narrows which rows are read.

use super::{entries::value_types, IndexDef, InetOrder, Target};
use crate::build::{filter_op, Builder, Clause};
use crate::catalog::{ColumnKind, TableDef};
use crate::plan::*;
use crate::EngineError;
use cql::ast::{self, Operator, Relation};
use proto::types::ColumnType;
use std::sync::Arc;

use crate::build::{DISTINCT_WHERE_MSG, FILTERING_MSG};

const ORDER_BY_INDEX_MSG: &str =
    "ORDER BY with 2ndary indexes is not supported, except for ANN queries.";

/// The WHERE clause of an indexed SELECT, resolved.
pub(crate) struct IndexedWhere {
    pub partitions: PartitionSel,
    pub clustering: ClusteringSel,
    pub filters: Vec<Filter>,
    pub index: Option<IndexScan>,
}

/// Whether SAI answers ranges on values of this type: numbers, dates and times, inet. Text,
/// booleans, uuids and frozen values (tuples, UDTs, collections) are equality only.
fn sai_ranges(ty: &ColumnType) -> bool {
    use ColumnType::*;
    matches!(
        ty,
        Int | Bigint
            | Smallint
            | Tinyint
            | Varint
            | Decimal
            | Float
            | Double
            | Date
            | Time
            | Timestamp
            | Timeuuid
            | Inet
    )
}

fn is_range(op: Operator) -> bool {
    matches!(
        op,
        Operator::Lt | Operator::Lte | Operator::Gt | Operator::Gte
    )
}

/// Whether `idx` answers `op` on its column.
fn supports(idx: &IndexDef, ty: &ColumnType, op: Operator, element: bool) -> bool {
    match (idx.target, op, element) {
        (Target::Entries, Operator::Eq, true) => true,
        (_, _, true) => false,
        (Target::Simple | Target::Full, Operator::Eq, _) => true,
        (Target::Values, Operator::Contains, _) => true,
        (Target::Keys, Operator::ContainsKey, _) => true,
        (Target::Simple, op, _) if is_range(op) => idx.is_sai() && sai_ranges(ty),
        _ => false,
    }
}

/// The index that serves `rel`, if any. One still being built is chosen too: the query then
/// fails until the build is done (`not_available`), as Cassandra's does.
pub(crate) fn served_by<'t>(t: &'t TableDef, rel: &Relation) -> Option<&'t IndexDef> {
    let (column, op, element) = match rel {
        Relation::Binary { column, op, .. } => (column, *op, false),
        Relation::Element { column, op, .. } => (column, *op, true),
        _ => return None,
    };
    let c = t.column(column)?;
    t.indexes
        .iter()
        .filter(|i| i.column == *column)
        .filter(|i| super::vector::vector_config(i, t).is_none())
        .filter(|i| supports(i, &c.ty, op, element))
        // SAI first: it serves its relations together with the query's other SAI ones.
        .max_by_key(|i| i.is_sai())
}

fn relation_column(rel: &Relation) -> Option<&str> {
    match rel {
        Relation::Binary { column, .. }
        | Relation::In { column, .. }
        | Relation::Element { column, .. } => Some(column),
        _ => None,
    }
}

impl Builder<'_> {
    /// A relation on one column as a filter (`ALLOW FILTERING`, or the check of an indexed
    /// read): `c op v`, `c CONTAINS v`, `m CONTAINS KEY k`, `m[k] op v`.
    pub(crate) fn relation_filter(
        &mut self,
        t: &Arc<TableDef>,
        rel: &Relation,
    ) -> Result<Filter, EngineError> {
        let (column, op, value, key) = match rel {
            Relation::Binary { column, op, value } => (column, *op, value, None),
            Relation::Element {
                column,
                key,
                op,
                value,
            } => (column, *op, value, Some(key)),
            other => {
                return Err(EngineError::invalid(format!(
                    "Unsupported restriction: {other:?}"
                )))
            }
        };
        let (idx, c) = self.column(t, column)?;
        let c = c.clone();
        let name = &c.name;
        if op == Operator::Like {
            return Err(crate::build::like_unindexed(name, value));
        }
        if let Some(key) = key {
            let ColumnType::Map(kt, vt) = &c.ty else {
                return Err(EngineError::invalid(format!(
                    "Column {name} cannot be used as a map"
                )));
            };
            let k = self.term(t, key, &format!("key({name})"), kt)?;
            let v = self.term(t, value, &format!("value({name})"), vt)?;
            return Ok(Filter {
                column: idx,
                op: filter_op(op),
                value: v,
                target: FilterTarget::Element(k),
                analyzer: crate::index::Analyzer::NONE,
            });
        }
        let (ty, target, label) = match (op, &c.ty) {
            (Operator::Contains, ColumnType::List(e) | ColumnType::Set(e)) => (
                (**e).clone(),
                FilterTarget::Contains,
                format!("value({name})"),
            ),
            (Operator::Contains, ColumnType::Map(_, v)) => (
                (**v).clone(),
                FilterTarget::Contains,
                format!("value({name})"),
            ),
            (Operator::Contains, _) => {
                return Err(EngineError::invalid(format!(
                    "Cannot use CONTAINS on non-collection column {name}"
                )))
            }
            (Operator::ContainsKey, ColumnType::Map(k, _)) => (
                (**k).clone(),
                FilterTarget::ContainsKey,
                format!("key({name})"),
            ),
            (Operator::ContainsKey, _) => {
                return Err(EngineError::invalid(format!(
                    "Cannot use CONTAINS KEY on non-map column {name}"
                )))
            }
            _ => (c.ty.clone(), FilterTarget::Whole, name.clone()),
        };
        let value = self.term(t, value, &label, &ty)?;
        let op = match op {
            Operator::Contains | Operator::ContainsKey => FilterOp::Eq,
            other => filter_op(other),
        };
        Ok(Filter {
            column: idx,
            op,
            value,
            target,
            analyzer: crate::index::Analyzer::NONE,
        })
    }

    /// The WHERE clause of a SELECT that an index can serve; `None` when no index applies
    /// (the ordinary rules then hold).
    pub(crate) fn indexed_where(
        &mut self,
        t: &Arc<TableDef>,
        s: &ast::SelectStatement,
    ) -> Result<Option<IndexedWhere>, EngineError> {
        if t.indexes.is_empty() {
            return Ok(None);
        }
        let rels = &s.where_clause;
        check_one_column_relations(t, rels)?;
        if !s.allow_filtering {
            // Cassandra merges the clustering relations as it reads them, before it decides
            // anything about indexes.
            crate::build::clustering_merge_order(t, rels, &|r| served_by(t, r).is_some())?;
        }
        for r in rels {
            if let Relation::Binary {
                column,
                op: Operator::Neq,
                value,
            } = r
            {
                if t.indexes.iter().any(|i| i.is_sai() && i.column == *column) {
                    return Err(EngineError::invalid(format!(
                        "Unsupported \"!=\" relation: {column} != {}",
                        crate::build::cassandra_text(value)
                    )));
                }
            }
        }
        let pk_col = |r: &Relation| {
            relation_column(r)
                .and_then(|c| t.column(c))
                .is_some_and(|c| c.kind == ColumnKind::PartitionKey)
        };
        // With the whole partition key given, an index on a part of it serves nothing.
        let pk_full = t.partition_key().all(|c| {
            rels.iter().any(
                |r| matches!(r, Relation::Binary { column, op: Operator::Eq, .. } if *column == c.name),
            )
        });
        // A partition read that needs no index (a point read, a clustering slice) stays one.
        if pk_full
            && self
                .where_clause(t, rels, s.allow_filtering, Clause::Select)
                .is_ok()
        {
            // One that filters with ALLOW FILTERING still counts as reading through an index
            // any relation can use, which refuses an ORDER BY (see below).
            if !s.order_by.is_empty()
                && rels.iter().any(|r| served_by(t, r).is_some())
                && self.where_clause(t, rels, false, Clause::Select).is_err()
            {
                return Err(EngineError::invalid(ORDER_BY_INDEX_MSG));
            }
            return Ok(None);
        }
        // So does a read of partitions named by an IN with nothing outside the primary key
        // and a clustering restriction that needs no filtering: Cassandra 5.0 uses an index
        // only where a relation needs one, so an indexed clustering column restricted as a
        // prefix (`k IN (1, 2) AND c = 1`) is no index query.
        let pk_named = t.partition_key().all(|c| {
            rels.iter().any(|r| match r {
                Relation::Binary {
                    column,
                    op: Operator::Eq,
                    ..
                }
                | Relation::In { column, .. } => *column == c.name,
                _ => false,
            })
        });
        let non_key = |r: &Relation| {
            relation_column(r)
                .and_then(|c| t.column(c))
                .is_some_and(|c| matches!(c.kind, ColumnKind::Regular | ColumnKind::Static))
        };
        if pk_named
            && !rels.iter().any(non_key)
            && self.where_clause(t, rels, false, Clause::Select).is_ok()
        {
            return Ok(None);
        }
        // Nor, with the whole partition key, an index on a clustering column whose
        // restrictions need no filtering (`k = .. AND c = 'b' AND l CONTAINS 1.5` reads the
        // index on l alone: generator seed 67).
        let is_ck = |r: &Relation| {
            relation_column(r)
                .and_then(|c| t.column(c))
                .is_some_and(|c| c.kind == ColumnKind::Clustering)
        };
        let key_rels: Vec<Relation> = rels.iter().filter(|r| !non_key(r)).cloned().collect();
        // Likewise with the partition key restricted by token() alone, unless an index serves
        // a clustering restriction (5.0.9's `processPartitionKeyRestrictions` then leaves the
        // index to the other relations, and a clustering prefix is read as a slice: `ck0 <=
        // '' AND l CONTAINS 1 AND token(k) <= 0` needs no ALLOW FILTERING, without the token
        // it does; generator seed 87).
        let token_only =
            !rels.iter().any(pk_col) && rels.iter().any(|r| matches!(r, Relation::Token { .. }));
        let ck_indexed = |r: &Relation| match r {
            // An index on any of its columns may serve a multi-column relation.
            Relation::MultiColumn { columns, .. } | Relation::MultiColumnIn { columns, .. } => {
                columns
                    .iter()
                    .any(|c| t.indexes.iter().any(|i| i.column == *c))
            }
            r => is_ck(r) && served_by(t, r).is_some(),
        };
        let token_slice = token_only && !rels.iter().any(ck_indexed) && !clustering_gapped(t, rels);
        let plain_clustering = (pk_full
            && key_rels.len() < rels.len()
            && self
                .where_clause(t, &key_rels, false, Clause::Select)
                .is_ok())
            || token_slice;
        let served: Vec<Option<&IndexDef>> = rels
            .iter()
            .map(|r| {
                served_by(t, r)
                    .filter(|_| !((pk_full && pk_col(r)) || (plain_clustering && is_ck(r))))
            })
            .collect();
        // The relation the index lookup answers: an equality first, else a range; SAI first
        // among those.
        let primary = (0..rels.len())
            .filter(|i| served[*i].is_some())
            .min_by_key(|i| {
                let range = match &rels[*i] {
                    Relation::Binary { op, .. } if is_range(*op) => 1,
                    _ => 0,
                };
                (range, !served[*i].is_some_and(|x| x.is_sai()))
            });
        // With an index to query, Cassandra checks a DISTINCT's restrictions before it asks
        // for ALLOW FILTERING (its `validateDistinctSelection` comes before
        // `checkNeedsFiltering`): a relation on a regular or clustering column is refused for
        // the DISTINCT first.
        let distinct_rows = s.distinct
            && rels.iter().any(|r| {
                relation_column(r)
                    .and_then(|c| t.column(c))
                    .is_some_and(|c| matches!(c.kind, ColumnKind::Regular | ColumnKind::Clustering))
            });
        let Some(primary) = primary else {
            // An index on a key column the query names whole still makes Cassandra filter
            // (not refuse) a clustering column after a free one.
            // Cassandra then reads through that index, so an ORDER BY is refused first, even
            // with ALLOW FILTERING (generator seed 66: `k1 = .. AND k2 = 'Q' AND c2 > 1.5
            // ORDER BY c1 DESC`, an index on k2, none serving c2's slice).
            let queriable = rels.iter().any(|r| served_by(t, r).is_some());
            if queriable
                && self.where_clause(t, rels, false, Clause::Select).is_err()
                && self.where_clause(t, rels, true, Clause::Select).is_ok()
            {
                if !s.order_by.is_empty() {
                    return Err(EngineError::invalid(ORDER_BY_INDEX_MSG));
                }
                if !s.allow_filtering {
                    // Read through the index, as below: the DISTINCT is refused first (a
                    // SAI on a partition key column the query names whole, seed 297).
                    let msg = if distinct_rows {
                        DISTINCT_WHERE_MSG
                    } else {
                        FILTERING_MSG
                    };
                    return Err(EngineError::invalid(msg));
                }
            }
            return Ok(None);
        };
        let refine = |e: EngineError| match &e {
            EngineError::Db(db) if distinct_rows && db.message() == FILTERING_MSG => {
                EngineError::invalid(DISTINCT_WHERE_MSG)
            }
            _ => e,
        };
        if !s.order_by.is_empty() {
            return Err(EngineError::invalid(ORDER_BY_INDEX_MSG));
        }
        let pidx = served[primary]
            .cloned()
            .ok_or_else(|| EngineError::server("index"))?;
        // Relations served without filtering: the primary, and with SAI every SAI relation and
        // every other element relation on a collection one of those restricts: Cassandra 5.0.9
        // merges a column's CONTAINS, CONTAINS KEY and `m[k] =` into one restriction, which an
        // index supports when it supports any part of it (`m CONTAINS 1 AND m CONTAINS KEY 2`
        // with SAI on values(m) alone needs no ALLOW FILTERING; every part is still checked).
        let sai_served = |i: usize| served[i].is_some_and(|x| x.is_sai());
        let element = |r: &Relation| {
            matches!(
                r,
                Relation::Element { .. }
                    | Relation::Binary {
                        op: Operator::Contains | Operator::ContainsKey,
                        ..
                    }
            )
        };
        let free: Vec<bool> = (0..rels.len())
            .map(|i| {
                let with_sai_part = element(&rels[i])
                    && (0..rels.len()).any(|j| {
                        sai_served(j)
                            && element(&rels[j])
                            && relation_column(&rels[j]) == relation_column(&rels[i])
                    });
                i == primary || (pidx.is_sai() && (sai_served(i) || with_sai_part))
            })
            .collect();
        let pk_in = rels
            .iter()
            .any(|r| matches!(r, Relation::In { .. }) && pk_col(r));
        if pk_in {
            return Err(EngineError::invalid(
                "Select on indexed columns and with IN clause for the PRIMARY KEY are not supported",
            ));
        }
        // Whether Cassandra's row filter runs after the index: it does when a regular or static
        // column is restricted, and then checks partition key relations too (in the type's
        // order, see `InetOrder`).
        let row_filtered = rels.iter().any(|r| {
            relation_column(r)
                .and_then(|c| t.column(c))
                .is_some_and(|c| matches!(c.kind, ColumnKind::Regular | ColumnKind::Static))
        });
        let mut rest = Vec::new();
        let mut filters = Vec::new();
        let gapped = clustering_gapped(t, rels);
        let clustering_col = |r: &Relation| {
            relation_column(r)
                .and_then(|c| t.column(c))
                .is_some_and(|c| c.kind == ColumnKind::Clustering)
        };
        for (i, r) in rels.iter().enumerate() {
            if gapped && !free[i] && clustering_col(r) {
                // The clustering restrictions, taken together, are no slice: Cassandra then
                // filters on each of them (`k = 1 AND c1 = 1 AND c3 = 1` with c3 indexed and
                // c2 free), which needs ALLOW FILTERING even for the prefix.
                if !s.allow_filtering {
                    return Err(refine(EngineError::invalid(FILTERING_MSG)));
                }
                filters.push(self.relation_filter(t, r)?);
            } else if free[i] {
                let mut f = self.relation_filter(t, r)?;
                f.analyzer = served[i].map_or(crate::index::Analyzer::NONE, |x| x.analyzer());
                if served[i].is_some_and(|x| x.is_sai())
                    && t.columns[f.column].ty == ColumnType::Inet
                {
                    f.analyzer.inet = if pk_col(r) && !row_filtered {
                        InetOrder::Mapped
                    } else {
                        InetOrder::MappedAndBytes
                    };
                }
                filters.push(f);
            } else if !pk_full && pk_col(r) {
                // A part of the partition key, without the rest of it: checked per row.
                if !s.allow_filtering {
                    return Err(refine(EngineError::invalid(FILTERING_MSG)));
                }
                filters.push(self.relation_filter(t, r)?);
            } else {
                rest.push(r.clone());
            }
        }
        // With an index to query, Cassandra filters on what its slices cannot serve (a
        // clustering column after a free one) rather than refusing it: such a query needs
        // ALLOW FILTERING, not a complete clustering prefix.
        // The token range and clustering slice of a `token_slice` read need no ALLOW
        // FILTERING; a relation on an unindexed regular column still does.
        let key_slice = token_slice && !rest.iter().any(non_key);
        let (partitions, clustering, more) =
            match self.where_clause(t, &rest, s.allow_filtering || key_slice, Clause::Select) {
                Ok(w) => w,
                Err(_)
                    if !s.allow_filtering
                        && self.where_clause(t, &rest, true, Clause::Select).is_ok() =>
                {
                    return Err(refine(EngineError::invalid(FILTERING_MSG)))
                }
                Err(e) => return Err(refine(e)),
            };
        filters.extend(more);
        let index = if pk_full {
            None
        } else {
            Some(self.index_scan(t, &pidx, rels, primary, &filters)?)
        };
        Ok(Some(IndexedWhere {
            partitions,
            clustering,
            filters,
            index,
        }))
    }

    /// The lookup of `idx` for the relation `rels[primary]` (a range gathers every range
    /// relation on the column).
    fn index_scan(
        &mut self,
        t: &TableDef,
        idx: &IndexDef,
        rels: &[Relation],
        primary: usize,
        filters: &[Filter],
    ) -> Result<IndexScan, EngineError> {
        let ci = t
            .column_index(&idx.column)
            .ok_or_else(|| EngineError::server("indexed column missing"))?;
        let c = &t.columns[ci];
        let (value_ty, _) = value_types(idx, &c.ty);
        let mine = |f: &&Filter| f.column == ci;
        let lookup = match &rels[primary] {
            Relation::Element { .. } => {
                let f = filters
                    .iter()
                    .find(|f| mine(f) && matches!(f.target, FilterTarget::Element(_)))
                    .ok_or_else(|| EngineError::server("indexed filter missing"))?;
                let FilterTarget::Element(k) = &f.target else {
                    return Err(EngineError::server("indexed filter missing"));
                };
                let (_, vt) = match &c.ty {
                    ColumnType::Map(k, v) => ((**k).clone(), (**v).clone()),
                    _ => return Err(EngineError::server("entries index on a non-map")),
                };
                IndexLookup::Entry(k.clone(), f.value.clone(), vt)
            }
            Relation::Binary { op, .. } if is_range(*op) => {
                let mut start = None;
                let mut end = None;
                for f in filters
                    .iter()
                    .filter(mine)
                    .filter(|f| f.target == FilterTarget::Whole)
                {
                    match f.op {
                        FilterOp::Gt | FilterOp::Ge if start.is_none() => {
                            start = Some((f.value.clone(), f.op == FilterOp::Ge))
                        }
                        FilterOp::Lt | FilterOp::Le if end.is_none() => {
                            end = Some((f.value.clone(), f.op == FilterOp::Le))
                        }
                        _ => {}
                    }
                }
                if idx.is_sai() && c.ty == ColumnType::Inet {
                    // Entries keep the stored bytes, in another order than SAI's (see
                    // `InetOrder`): read them all, the filter decides.
                    start = None;
                    end = None;
                }
                IndexLookup::Range { start, end }
            }
            _ => {
                let want = match idx.target {
                    Target::Values => FilterTarget::Contains,
                    Target::Keys => FilterTarget::ContainsKey,
                    _ => FilterTarget::Whole,
                };
                let f = filters
                    .iter()
                    .find(|f| mine(f) && f.target == want && f.op == FilterOp::Eq)
                    .ok_or_else(|| EngineError::server("indexed filter missing"))?;
                IndexLookup::Eq(f.value.clone())
            }
        };
        Ok(IndexScan {
            index_id: idx.id,
            column: c.name.clone(),
            value_ty,
            analyzer: idx.analyzer(),
            lookup,
        })
    }
}

/// Whether the single-column clustering restrictions of `rels`, all together, are no slice:
/// a restricted column after a free one, or a column restricted after a range. Multi-column
/// relations keep their own rules (`false`).
fn clustering_gapped(t: &TableDef, rels: &[Relation]) -> bool {
    let n = t
        .columns
        .iter()
        .filter(|c| c.kind == ColumnKind::Clustering)
        .count();
    // Per clustering position: None free, Some(true) EQ or IN, Some(false) a range.
    let mut at: Vec<Option<bool>> = vec![None; n];
    for r in rels {
        let (column, eq) = match r {
            Relation::Binary { column, op, .. } if *op == Operator::Eq || is_range(*op) => {
                (column, *op == Operator::Eq)
            }
            Relation::In { column, .. } => (column, true),
            Relation::MultiColumn { .. } | Relation::MultiColumnIn { .. } => return false,
            _ => continue,
        };
        if let Some(c) = t
            .column(column)
            .filter(|c| c.kind == ColumnKind::Clustering)
        {
            let slot = &mut at[c.position as usize];
            *slot = Some(slot.unwrap_or(true) && eq);
        }
    }
    let restricted = at.iter().take_while(|x| x.is_some()).count();
    at[restricted..].iter().any(Option::is_some)
        || at[..restricted.saturating_sub(1)].contains(&Some(false))
}

/// Cassandra's refusals of several relations on one column (of any kind), as it merges them
/// in the order written (`SingleColumnRestriction.mergeWith`): anything after an
/// EQ or IN names that one ("... if it includes an Equal" / "a IN"), an EQ or IN after a range
/// names both kinds, and a second start or end bound is refused. A LIKE is refused where it
/// stands among them.
fn check_one_column_relations(t: &TableDef, rels: &[Relation]) -> Result<(), EngineError> {
    // Per column, what the relations merged so far are: an EQ or IN (its word), or a range's
    // bounds. Cassandra merges them in the order written, key columns included, and refuses
    // at the first relation that does not merge.
    let mut merged: Vec<(&str, Option<&str>, [bool; 2])> = Vec::new();
    for r in rels {
        let (column, op, is_in) = match r {
            // A LIKE is refused as it is met (no index serves one), after the merges of the
            // relations before it and before every later check (generator --views seed 32).
            Relation::Binary {
                column,
                op: Operator::Like,
                value,
            } => match t.column(column) {
                Some(c) => return Err(crate::build::like_unindexed(&c.name, value)),
                None => continue,
            },
            Relation::Binary { column, op, .. } => (column, *op, false),
            Relation::In { column, .. } => (column, Operator::Eq, true),
            _ => continue,
        };
        let Some(c) = t.column(column) else {
            continue;
        };
        if op != Operator::Eq && !is_range(op) {
            continue;
        }
        let name = c.name.as_str();
        let i = match merged.iter().position(|m| m.0 == name) {
            Some(i) => i,
            None => {
                merged.push((name, None, [false; 2]));
                merged.len() - 1
            }
        };
        let (_, eq, bounds) = &mut merged[i];
        if let Some(what) = eq {
            return Err(EngineError::invalid(format!(
                "{name} cannot be restricted by more than one relation if it includes {what}"
            )));
        }
        if op == Operator::Eq {
            if bounds.iter().any(|b| *b) {
                return Err(EngineError::invalid(format!(
                    "Column \"{name}\" cannot be restricted by both an equality and an inequality relation"
                )));
            }
            *eq = Some(if is_in { "a IN" } else { "an Equal" });
            continue;
        }
        let end = matches!(op, Operator::Lt | Operator::Lte);
        if std::mem::replace(&mut bounds[usize::from(end)], true) {
            return Err(EngineError::invalid(format!(
                "More than one restriction was found for the {} bound on {name}",
                if end { "end" } else { "start" }
            )));
        }
    }
    Ok(())
}
