//! The size Cassandra 5.0 checks a BATCH against (`batch_size_warn_threshold`,
//! `batch_size_fail_threshold`): the in-memory data size of the batch's merged partition
//! updates (`IMutation.dataSize`), computed here from the batch's [`Mutations`] before they are
//! applied. Only BATCH runs this; a single statement never does.
//!
//! The figures, probed on Cassandra 5.0.9 one item at a time:
//! - a partition update (table, key): 29 bytes (its deletion and its static row, empty or not);
//!   a partition deletion adds nothing;
//! - a row: 21 plus the bytes of its clustering values, plus 12 when its liveness has a TTL; a
//!   row with no liveness, no deletion and no cells is no row at all (0);
//! - a cell: 20 plus its value's bytes (a tombstone's value is empty; a cell's TTL and
//!   timestamp add nothing); an element of a non-frozen collection or UDT adds its path: the map
//!   key, the set element, a list item's 16-byte timeuuid, a UDT field's 2-byte position;
//! - a non-frozen collection or UDT column with a deletion or an element: 12 more;
//! - a counter update cell: 20 plus its 36-byte counter context, whatever the delta;
//! - range tombstones of a partition: 4, plus per range 12 and the bytes of both bounds'
//!   values, the ranges merged as Cassandra's `RangeTombstoneList` merges them (a range keeps
//!   what it covers from a later one of its timestamp or older, which adds only its uncovered
//!   pieces, so a repeat adds nothing and a range around an earlier one counts as two or more;
//!   a newer range takes what it covers from an older one, which keeps its pieces outside).
//!   A multi-column slice over clustering columns of mixed order (`(c, d) > (1, 2)` with
//!   `c ASC, d DESC`) is split as Cassandra splits it, where the order changes (there, two
//!   ranges: 40 bytes).
//!
//! Cells written twice in the batch count once (the winner of their reconciliation), as
//! Cassandra merges them; collection operations are sized from the cells they write (a list
//! removal by value or an operation by index reads the stored list for that, a static list from
//! the partition's static row, as Cassandra does).

use super::{partitions, resolve_key, writes_full_row, Bindings, CollectionOp, Entry, Mutations};
use crate::catalog::TableDef;
use crate::plan::{ClusteringSel, KeyValues, TupleValues, WriteKind, WritePlan};
use crate::row::{Cell, CellValue, CollectionKind, Complex, Row};
use crate::{Engine, EngineError, Now};
use proto::types::ColumnType;
use std::collections::{BTreeMap, HashSet};

/// A partition update's fixed part: its deletion and static row.
const PARTITION: u64 = 29;
/// A row's fixed part: its liveness timestamp and deletion.
const ROW: u64 = 21;
/// What a TTL adds to a row's liveness.
const ROW_TTL: u64 = 12;
/// A cell's fixed part: timestamp, TTL and local deletion time.
const CELL: u64 = 20;
/// A non-frozen collection's (or UDT's) own deletion.
const COMPLEX: u64 = 12;
/// A list item's path: a timeuuid.
const LIST_PATH: u64 = 16;
/// A counter update's value: a counter context with one local shard.
const COUNTER_CONTEXT: u64 = 36;
/// A partition's range tombstone list, and each range in it (beside its bounds).
const RANGES: u64 = 4;
const RANGE: u64 = 12;

/// Cassandra's mutations of a batch: one per keyspace and partition key (the tables of one
/// keyspace sharing a key share a mutation). `keyspace_of` maps a table id to its keyspace.
pub(crate) fn mutation_count<'a>(
    m: &Mutations,
    keyspace_of: impl Fn(u32) -> Option<&'a str>,
) -> usize {
    let mut seen: HashSet<(&str, &[u8])> = HashSet::new();
    for (id, key) in m
        .partition_prefixes()
        .filter_map(crate::keys::partition_identity)
    {
        if let Some(ks) = keyspace_of(id) {
            seen.insert((ks, key));
        }
    }
    seen.len()
}

impl Engine {
    /// The data size of the batch `parts` whose mutations are `m` (see the module docs).
    pub(crate) fn batch_data_size(
        &self,
        parts: &[(&WritePlan, Bindings)],
        m: &Mutations,
        now: Now,
        default_ts: i64,
    ) -> Result<u64, EngineError> {
        let mut size = range_tombstones(parts, default_ts)?;
        let mut last: Option<&[u8]> = None;
        let mut table: Option<&TableDef> = None;
        for (key, entry) in m.entries.iter() {
            let prefix = &key[..crate::keys::partition_prefix_len(key).unwrap_or(key.len())];
            if last != Some(prefix) {
                last = Some(prefix);
                size += PARTITION;
                let id = crate::keys::partition_identity(prefix).map(|(id, _)| id);
                table = parts
                    .iter()
                    .find(|(p, _)| Some(p.table.id) == id)
                    .map(|(p, _)| &*p.table);
            }
            let Some(t) = table else { continue };
            size += match entry {
                Entry::Row(e) => self.row_size(t, key, &e.delta, &e.ops, now),
                // A partition deletion drops nothing from the update (probed).
                Entry::Header(e) => {
                    let at = (key.as_slice(), Stored::Statics, None);
                    self.cells_size(t, at, &e.delta.statics, &e.ops, now)
                }
            };
        }
        Ok(size)
    }

    fn row_size(&self, t: &TableDef, key: &[u8], row: &Row, ops: &[CollectionOp], now: Now) -> u64 {
        let cells = self.cells_size(t, (key, Stored::Row, row.deletion), &row.cells, ops, now);
        if cells == 0 && row.marker.is_none() && row.deletion.is_none() {
            return 0;
        }
        let clustering: u64 = row.clustering.iter().map(|v| v.len() as u64).sum();
        let ttl = match row.marker {
            Some(m) if m.expiry.is_some() => ROW_TTL,
            _ => 0,
        };
        ROW + clustering + ttl + cells
    }

    /// The cells of a row (or of the static row) and the cells its collection operations
    /// will write, merged as Cassandra merges a batch's cells. `at` is where the stored cells
    /// are: a row's key, or a partition header's whose static cells a static list's
    /// operation by index or value reads; and the row's deletion in the batch, which drops the
    /// collection elements (and collection deletions) it shadows, as Cassandra's merge does.
    fn cells_size(
        &self,
        t: &TableDef,
        (key, what, row_deletion): (&[u8], Stored, Option<crate::row::Deletion>),
        cells: &[Cell],
        ops: &[CollectionOp],
        now: Now,
    ) -> u64 {
        let size = |c: &Cell| cell_size(t, c);
        if ops.is_empty() && row_deletion.is_none() {
            return cells.iter().map(size).sum();
        }
        let mut merged: Vec<Cell> = cells.to_vec();
        let mut counters: Vec<u16> = Vec::new();
        let mut stored: Option<Option<Vec<Cell>>> = None;
        for op in ops {
            if op.ty == ColumnType::Counter {
                // Counter updates of one cell add up into one context.
                if !counters.contains(&op.column) {
                    counters.push(op.column);
                }
                continue;
            }
            let Some(kind) = crate::collections::kind_of(&op.ty) else {
                continue;
            };
            // Only list operations naming items by index or value read the stored list.
            let current = if matches!(kind, CollectionKind::List) && op.reads_stored_list() {
                let row = stored.get_or_insert_with(|| self.stored_cells((key, what)));
                row.as_ref()
                    .and_then(|r| r.iter().find(|c| c.column == op.column))
                    .and_then(|c| c.live_elements(kind, now.secs))
            } else {
                None
            };
            // An operation that fails here fails when applied, with its own error.
            let Ok(delta) = crate::collections::element_writes(
                &op.ty,
                current.as_ref(),
                &crate::collections::ElementOp {
                    op: &op.op,
                    arg: op.arg.as_deref(),
                    arg2: op.arg2.as_deref(),
                    ts: op.ts,
                    expiry: op.expiry,
                    label: None,
                    now: op.now,
                },
            ) else {
                continue;
            };
            let cell = Cell {
                column: op.column,
                ts: delta.max_ts(),
                value: CellValue::Complex(delta),
            };
            match merged.binary_search_by_key(&op.column, |c| c.column) {
                Ok(i) => merged[i].merge(cell),
                Err(i) => merged.insert(i, cell),
            }
        }
        if let Some(d) = row_deletion {
            for c in &mut merged {
                if let CellValue::Complex(cx) = &mut c.value {
                    cx.elements.retain(|e| !d.shadows(e.ts));
                    if cx.deletion.is_some_and(|x| d.shadows(x.ts)) {
                        cx.deletion = None;
                    }
                }
            }
        }
        merged.iter().map(size).sum::<u64>() + counters.len() as u64 * (CELL + COUNTER_CONTEXT)
    }

    /// The cells of the row or the static cells of the partition header stored at `at`, if
    /// any (an unreadable one counts as none: the write reports it).
    fn stored_cells(&self, (key, what): (&[u8], Stored)) -> Option<Vec<Cell>> {
        let bytes = self.storage.get(key).ok()??;
        match what {
            Stored::Row => Row::decode_owned(bytes).ok().map(|r| r.cells),
            Stored::Statics => crate::row::PartitionHeader::decode(&bytes)
                .ok()
                .map(|h| h.statics),
        }
    }
}

/// What a mutation's key names in storage: a clustering row, or a partition header.
#[derive(Clone, Copy)]
enum Stored {
    Row,
    Statics,
}

fn cell_size(t: &TableDef, c: &Cell) -> u64 {
    match &c.value {
        CellValue::Live { value, .. } => CELL + value.len() as u64,
        // `DELETE l FROM ...` of a non-frozen collection deletes the collection, no cell.
        CellValue::Tombstone { .. } if is_multi_cell(t, c.column) => COMPLEX,
        CellValue::Tombstone { .. } => CELL,
        CellValue::Complex(cx) => complex_size(cx),
    }
}

fn is_multi_cell(t: &TableDef, column: u16) -> bool {
    t.columns
        .iter()
        .find(|c| c.id == column)
        .is_some_and(|c| super::multi_cell_kind(c).is_some())
}

fn complex_size(cx: &Complex) -> u64 {
    if cx.deletion.is_none() && cx.elements.is_empty() {
        return 0;
    }
    let path = |p: &[u8]| match cx.kind {
        CollectionKind::List => LIST_PATH,
        _ => p.len() as u64,
    };
    COMPLEX
        + cx.elements
            .iter()
            .map(|e| {
                let value = match &e.value {
                    CellValue::Live { value, .. } => value.len() as u64,
                    _ => 0,
                };
                CELL + path(&e.path) + value
            })
            .sum::<u64>()
}

/// One range deletion as Cassandra holds it: the clustering values of its two bounds (and
/// whether each is inclusive), which tell repeats apart.
type Slice = (Vec<Vec<u8>>, bool, Vec<Vec<u8>>, bool);

/// A bound of a range tombstone: its clustering values and whether it sorts after every
/// clustering they prefix (an exclusive start or an inclusive end) or before them.
#[derive(Clone)]
struct Bound {
    values: Vec<Vec<u8>>,
    after: bool,
}

/// The clustering columns' types and orders, to compare bounds as Cassandra does.
struct Clustering(Vec<(ColumnType, bool)>);

impl Clustering {
    fn compare(&self, a: &Bound, b: &Bound) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        for ((x, y), (ty, desc)) in a.values.iter().zip(&b.values).zip(&self.0) {
            let o = crate::types::compare(ty, x, y);
            let o = if *desc { o.reverse() } else { o };
            if o != Ordering::Equal {
                return o;
            }
        }
        let side = |after: bool| {
            if after {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        };
        match a.values.len().cmp(&b.values.len()) {
            Ordering::Equal => a.after.cmp(&b.after),
            Ordering::Less => side(a.after),
            Ordering::Greater => side(!b.after),
        }
    }

    /// Adds the range `[start, end]` deleted at `ts` to the partition's non-overlapping
    /// ranges `list` (sorted, each with its timestamp) as Cassandra's `RangeTombstoneList`
    /// does: where it overlaps a range at least as new, that range keeps what it covers and
    /// only the new one's pieces outside it are added (a later range that contains an earlier
    /// one becomes two or more); an older range gives way where the new one covers it, keeping
    /// only its pieces outside (an older range around a newer one becomes two). A repeat adds
    /// nothing.
    fn add(&self, list: &mut Vec<(Bound, Bound, i64)>, start: Bound, end: Bound, ts: i64) {
        use std::cmp::Ordering::{Equal, Greater, Less};
        let overlaps = |s: &Bound, e: &Bound| {
            self.compare(e, &start) == Greater && self.compare(s, &end) == Less
        };
        if list.iter().any(|(s, e, t)| {
            *t >= ts && self.compare(s, &start) == Equal && self.compare(e, &end) == Equal
        }) {
            return;
        }
        let mut kept = Vec::with_capacity(list.len() + 2);
        for (s, e, t) in list.drain(..) {
            if t >= ts || !overlaps(&s, &e) {
                kept.push((s, e, t));
                continue;
            }
            if self.compare(&s, &start) == Less {
                kept.push((s, start.clone(), t));
            }
            if self.compare(&end, &e) == Less {
                kept.push((end.clone(), e, t));
            }
        }
        // The new range less what the ranges at least as new cover, piece by piece.
        let mut pieces = vec![(start.clone(), end.clone())];
        for (s, e, _) in kept.iter().filter(|(_, _, t)| *t >= ts) {
            let mut next = Vec::with_capacity(pieces.len() + 1);
            for (ps, pe) in pieces {
                if self.compare(e, &ps) != Greater || self.compare(s, &pe) != Less {
                    next.push((ps, pe));
                    continue;
                }
                if self.compare(&ps, s) == Less {
                    next.push((ps, s.clone()));
                }
                if self.compare(e, &pe) == Less {
                    next.push((e.clone(), pe));
                }
            }
            pieces = next;
        }
        kept.extend(pieces.into_iter().map(|(s, e)| (s, e, ts)));
        kept.sort_by(|a, b| self.compare(&a.0, &b.0).then(self.compare(&a.1, &b.1)));
        *list = kept;
    }
}

/// The range tombstones of the batch's range deletions, by partition (see the module docs).
/// `default_ts`: the batch's timestamp, that of a statement without its own.
fn range_tombstones(parts: &[(&WritePlan, Bindings)], default_ts: i64) -> Result<u64, EngineError> {
    // By partition: its table's clustering columns and its slices, in statement order, each
    // with whether it is a row (every clustering column named, no slice bound) and the
    // statement's timestamp.
    type Deletions = (Clustering, Vec<(Slice, bool, i64)>);
    let mut by_partition: BTreeMap<Vec<u8>, Deletions> = BTreeMap::new();
    for (plan, vals) in parts {
        let WriteKind::Delete { columns, elements } = &plan.kind else {
            continue;
        };
        let sel = &plan.clustering;
        if !columns.is_empty()
            || !elements.is_empty()
            || sel.is_unrestricted()
            || writes_full_row(plan)
        {
            continue;
        }
        // A deletion whose every slice is empty writes nothing.
        if super::clustering_ranges(&plan.table, sel, vals, false)?.is_empty() {
            continue;
        }
        let slices = slices(&plan.table, sel, vals)?;
        // A timestamp that is not 8 bytes fails the write before its size counts; an unset
        // one is the batch's.
        let ts = match &plan.timestamp {
            Some(src) => match super::resolve(src, vals) {
                Err(EngineError::Unset(_)) => None,
                other => other?,
            }
            .and_then(|b| <[u8; 8]>::try_from(b.as_slice()).ok())
            .map_or(default_ts, i64::from_be_bytes),
            None => default_ts,
        };
        let full = plan.table.clustering_count();
        let bounded = sel.start.is_some() || sel.end.is_some();
        let is_row = |s: &Slice| !bounded && s.0.len() == full;
        for p in partitions(&plan.table, &plan.partition, vals)? {
            let (_, list) = by_partition.entry(p.prefix).or_insert_with(|| {
                let cols = plan.table.clustering().map(|c| (c.ty.clone(), c.desc));
                (Clustering(cols.collect()), Vec::new())
            });
            list.extend(slices.iter().map(|s| (s.clone(), is_row(s), ts)));
        }
    }
    let bytes = |values: &[Vec<u8>]| values.iter().map(|v| v.len() as u64).sum::<u64>();
    let mut size = 0;
    for (clustering, list) in by_partition.values() {
        // A "slice" naming every clustering column (`(a, b) IN ((1, 2))`) deletes a row; one
        // with bounds (`c >= 1 AND c <= 1`) is a range, however narrow.
        let mut rows: Vec<&Vec<Vec<u8>>> = Vec::new();
        let mut ranges: Vec<(Bound, Bound, i64)> = Vec::new();
        for ((start, start_incl, end, end_incl), row, ts) in list {
            if *row {
                if !rows.contains(&start) {
                    rows.push(start);
                }
                continue;
            }
            let start = Bound {
                values: start.clone(),
                after: !start_incl,
            };
            let end = Bound {
                values: end.clone(),
                after: *end_incl,
            };
            clustering.add(&mut ranges, start, end, *ts);
        }
        size += rows.iter().map(|r| ROW + bytes(r)).sum::<u64>();
        if !ranges.is_empty() {
            size += RANGES
                + ranges
                    .iter()
                    .map(|(start, end, _)| RANGE + bytes(&start.values) + bytes(&end.values))
                    .sum::<u64>();
        }
    }
    Ok(size)
}

/// The slices a range deletion's clustering restrictions make: one per equality (or IN)
/// prefix, each bounded by the slice's start and end values after the prefix.
fn slices(
    table: &TableDef,
    sel: &ClusteringSel,
    vals: &Bindings,
) -> Result<Vec<Slice>, EngineError> {
    let cols: Vec<_> = table.clustering().collect();
    let mut prefixes: Vec<Vec<Vec<u8>>> = vec![Vec::new()];
    for (kv, col) in sel.eq.iter().zip(&cols) {
        let values = match kv {
            KeyValues::Eq(s) => vec![resolve_key(s, vals, &col.name)?],
            other => super::expand(other, vals, &col.name)?,
        };
        prefixes = prefixes
            .into_iter()
            .flat_map(|p| {
                values.iter().map(move |v| {
                    let mut q = p.clone();
                    q.push(v.clone());
                    q
                })
            })
            .collect();
    }
    if let Some(tv) = &sel.tuples {
        let tuples: Vec<Vec<Vec<u8>>> = match tv {
            TupleValues::List { tuples: l, .. } => l
                .iter()
                .map(|t| {
                    t.iter()
                        .zip(&cols[sel.eq.len()..])
                        .map(|(s, col)| resolve_key(s, vals, &col.name))
                        .collect()
                })
                .collect::<Result<_, _>>()?,
            TupleValues::Bind {
                index,
                arity,
                null_message,
            } => super::bound_tuples(*index, *arity, null_message, vals)?
                .iter()
                .map(|t| {
                    t.iter()
                        .zip(&cols[sel.eq.len()..])
                        .map(|(s, col)| resolve_key(s, vals, &col.name))
                        .collect()
                })
                .collect::<Result<_, _>>()?,
        };
        prefixes = prefixes
            .into_iter()
            .flat_map(|p| {
                tuples.iter().map(move |t| {
                    let mut q = p.clone();
                    q.extend(t.iter().cloned());
                    q
                })
            })
            .collect();
    }
    let mut out = Vec::with_capacity(prefixes.len());
    for prefix in prefixes {
        let n = prefix.len();
        let bound = |b: &Option<crate::plan::SliceBound>| -> Result<_, EngineError> {
            let Some(b) = b else { return Ok(None) };
            let values = b
                .values
                .iter()
                .zip(&cols[n..])
                .map(|(s, col)| resolve_key(s, vals, &col.name))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Some((values, b.inclusive)))
        };
        let (lo, hi) = (bound(&sel.start)?, bound(&sel.end)?);
        let sliced = n + [&lo, &hi]
            .iter()
            .flat_map(|b| b.iter())
            .map(|b| b.0.len())
            .max()
            .unwrap_or(0);
        let desc: Vec<bool> = cols[n..sliced].iter().map(|c| c.desc).collect();
        ordered_pieces(&mut out, prefix, &desc, as_ref(&lo), as_ref(&hi));
    }
    Ok(out)
}

/// A slice bound's values (after the prefix) and whether it is inclusive.
type ValueBound<'a> = Option<(&'a [Vec<u8>], bool)>;

fn as_ref(b: &Option<(Vec<Vec<u8>>, bool)>) -> ValueBound<'_> {
    b.as_ref().map(|(v, incl)| (v.as_slice(), *incl))
}

/// A bound's values on a run of columns, its values after the run, and whether it is
/// inclusive.
type RunBound<'a> = Option<(&'a [Vec<u8>], &'a [Vec<u8>], bool)>;

/// A bound's values on the first `run` columns, the rest, and whether it is inclusive.
fn split_bound(b: ValueBound<'_>, run: usize) -> RunBound<'_> {
    b.map(|(v, incl)| {
        let (here, rest) = v.split_at(run.min(v.len()));
        (here, rest, incl)
    })
}

/// The ranges, in clustering order, of the rows under `prefix` whose next columns (of the
/// orders `desc`) lie between `lo` and `hi` by value, compared as a tuple. Within a run of
/// columns of one order the tuple order is the clustering order (reversed for descending
/// ones), so a run is one range; where the order changes Cassandra splits the slice (its
/// `MultiColumnRestriction.SliceRestriction.appendBoundTo`): the rows equal to a bound on the
/// run, whose next columns are bounded by the rest of that bound, make ranges of their own.
/// Measured on 5.0.9 with `c ASC, d DESC`: `(c, d) > (1, 2)` is `[(1), (1, 2))` and
/// `((1), top]`; `(c, d) > (1, 2) AND (c, d) < (3, 4)` adds `((1), (3))` and `((3, 4), (3)]`.
fn ordered_pieces(
    out: &mut Vec<Slice>,
    prefix: Vec<Vec<u8>>,
    desc: &[bool],
    lo: ValueBound,
    hi: ValueBound,
) {
    let run = desc
        .iter()
        .position(|d| *d != desc[0])
        .unwrap_or(desc.len())
        .max(1);
    let (lo, hi) = (split_bound(lo, run), split_bound(hi, run));
    let with = |values: &[Vec<u8>]| {
        let mut p = prefix.clone();
        p.extend(values.iter().cloned());
        p
    };
    // Both bounds equal on this run: only rows equal to them here, bounded further on.
    if let (Some((l, l_rest, l_incl)), Some((h, h_rest, h_incl))) = (lo, hi) {
        if l == h && !l_rest.is_empty() && !h_rest.is_empty() {
            let rest = &desc[run..];
            ordered_pieces(
                out,
                with(l),
                rest,
                Some((l_rest, l_incl)),
                Some((h_rest, h_incl)),
            );
            return;
        }
    }
    // Rows between the bounds on this run, each bound taking rows equal to it on the run
    // when it ends here and is inclusive.
    let (start, start_incl) = match lo {
        Some((l, rest, incl)) => (with(l), rest.is_empty() && incl),
        None => (prefix.clone(), true),
    };
    let (end, end_incl) = match hi {
        Some((h, rest, incl)) => (with(h), rest.is_empty() && incl),
        None => (prefix.clone(), true),
    };
    if desc.first() == Some(&true) {
        out.push((end, end_incl, start, start_incl));
    } else {
        out.push((start, start_incl, end, end_incl));
    }
    // Rows equal to a bound on this run, bounded by the rest of it.
    if let Some((l, rest, incl)) = lo {
        if !rest.is_empty() {
            ordered_pieces(out, with(l), &desc[run..], Some((rest, incl)), None);
        }
    }
    if let Some((h, rest, incl)) = hi {
        if !rest.is_empty() {
            ordered_pieces(out, with(h), &desc[run..], None, Some((rest, incl)));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::tests::{engine, q};
    use crate::warnings::BatchSizeThresholds;
    use crate::{Engine, Outcome};

    /// The data size of `BEGIN BATCH <two base partitions>; <stmts> APPLY BATCH` as the size
    /// warning reports it, less the base's (a warning threshold of 0 makes every batch of
    /// several mutations report its size).
    fn added(e: &Engine, stmts: &[&str]) -> u64 {
        let size = |stmts: &[&str]| {
            let text = format!(
                "BEGIN BATCH INSERT INTO u (k, v) VALUES (1, 'x'); INSERT INTO u (k, v) VALUES (2, 'x'); {} APPLY BATCH",
                stmts.iter().map(|s| format!("{s}; ")).collect::<String>()
            );
            let Ok(Outcome::VoidWithWarnings(w)) = q(e, Some("ks"), &text) else {
                panic!("no warning for {text}");
            };
            let w = w.iter().find(|w| w.starts_with("Batch for")).unwrap();
            let n = w
                .split("is of size ")
                .nth(1)
                .unwrap()
                .split(',')
                .next()
                .unwrap();
            n.parse::<u64>().unwrap()
        };
        size(stmts) - size(&[])
    }

    fn schema() -> Engine {
        let e = engine();
        e.set_batch_size_thresholds(BatchSizeThresholds {
            warn_bytes: 0,
            fail_bytes: u64::MAX,
        });
        for s in [
            "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
            "CREATE TABLE ks.t (k int, c int, c2 int, v text, w text, s text static, l list<int>, \
             m map<int, text>, st set<text>, fl frozen<list<int>>, PRIMARY KEY (k, c, c2))",
            "CREATE TABLE ks.u (k int PRIMARY KEY, v text)",
            "CREATE TABLE ks.sl (k int, c int, sl list<text> static, PRIMARY KEY (k, c))",
            "CREATE TYPE ks.ut (a int, b text)",
            "CREATE TABLE ks.ud (k int PRIMARY KEY, u ut, fu frozen<ut>)",
            "CREATE TABLE ks.n (k int PRIMARY KEY, c counter, d counter)",
            "CREATE TABLE ks.dt (k int PRIMARY KEY, v text) WITH default_time_to_live = 100",
            "CREATE TABLE ks.mx (k int, c int, d int, e int, PRIMARY KEY (k, c, d, e)) \
             WITH CLUSTERING ORDER BY (c ASC, d DESC, e ASC)",
            "CREATE TABLE ks.my (k int, c int, d int, e int, PRIMARY KEY (k, c, d, e)) \
             WITH CLUSTERING ORDER BY (c DESC, d ASC, e DESC)",
        ] {
            q(&e, None, s).unwrap();
        }
        e
    }

    #[test]
    fn partitions_rows_and_cells_measure_as_in_cassandra() {
        let e = schema();
        // Each figure is what Cassandra 5.0.9 added for the same statements (probed with
        // `batch_size_warn_threshold` warnings).
        let cases: &[(&[&str], u64)] = &[
            (&["INSERT INTO t (k, c, c2, v) VALUES (5, 1, 1, '')"], 78),
            (&["INSERT INTO t (k, c, c2) VALUES (5, 1, 1)"], 58),
            (&["INSERT INTO u (k, v) VALUES (5, '')"], 70),
            (&["INSERT INTO u (k) VALUES (5)"], 50),
            (&["UPDATE u SET v = 'abc' WHERE k = 5"], 73),
            (&["UPDATE u USING TTL 100 SET v = 'abc' WHERE k = 5"], 73),
            (
                &["INSERT INTO u (k, v) VALUES (5, 'abc') USING TTL 100"],
                85,
            ),
            (&["INSERT INTO dt (k, v) VALUES (5, 'a')"], 83),
            (&["INSERT INTO dt (k, v) VALUES (5, 'a') USING TTL 0"], 71),
            (&["DELETE FROM u WHERE k = 5"], 29),
            (&["DELETE v FROM u WHERE k = 5"], 70),
            (&["UPDATE u SET v = null WHERE k = 5"], 70),
            (&["INSERT INTO u JSON '{\"k\": 5}'"], 70),
            // The same cell twice: the winner (the greater value) counts once.
            (&["UPDATE u SET v = '' WHERE k = 1"], 0),
            (&["DELETE FROM t WHERE k = 5 AND c = 1 AND c2 = 1"], 58),
            (&["UPDATE t SET s = 'ab' WHERE k = 5"], 51),
            (
                &["UPDATE t SET v = 'a', w = 'bc' WHERE k = 5 AND c = 1 AND c2 = 1"],
                101,
            ),
            (
                &[
                    "UPDATE t SET v = 'a' WHERE k = 5 AND c = 1 AND c2 = 1",
                    "UPDATE t SET v = 'bcd' WHERE k = 5 AND c = 1 AND c2 = 1",
                ],
                81,
            ),
            (
                &[
                    "INSERT INTO t (k, c, c2, v) VALUES (5, 1, 1, 'a')",
                    "UPDATE t SET w = 'b' WHERE k = 5 AND c = 1 AND c2 = 1",
                ],
                100,
            ),
            (
                &["UPDATE t SET v = '' WHERE k IN (5, 6) AND c = 1 AND c2 = 1"],
                156,
            ),
            (
                &["UPDATE t SET v = '' WHERE k = 5 AND c IN (1, 2) AND c2 = 1"],
                127,
            ),
            (
                &["UPDATE t SET fl = [1, 2] WHERE k = 5 AND c = 1 AND c2 = 1"],
                98,
            ),
            (&["UPDATE ud SET fu = {a: 1, b: 'x'} WHERE k = 5"], 83),
        ];
        for (stmts, want) in cases {
            assert_eq!(added(&e, stmts), *want, "{stmts:?}");
        }
    }

    #[test]
    fn collections_and_counters_measure_as_in_cassandra() {
        let e = schema();
        q(
            &e,
            Some("ks"),
            "INSERT INTO t (k, c, c2, l) VALUES (9, 1, 1, [1, 2, 1, 3])",
        )
        .unwrap();
        for k in [1, 2] {
            let insert = format!("INSERT INTO sl (k, sl) VALUES ({k}, ['ab', 'cd'])");
            q(&e, Some("ks"), &insert).unwrap();
        }
        for k in [10, 11] {
            let insert = format!("INSERT INTO t (k, c, c2, l) VALUES ({k}, 1, 1, [1, 2, 3])");
            q(&e, Some("ks"), &insert).unwrap();
        }
        let row = "WHERE k = 5 AND c = 1 AND c2 = 1";
        let stored = "WHERE k = 9 AND c = 1 AND c2 = 1";
        let cases: Vec<(Vec<String>, u64)> = vec![
            (vec![format!("UPDATE t SET l = l + [1, 2] {row}")], 150),
            (vec![format!("UPDATE t SET l = [1, 2] {row}")], 150),
            (vec![format!("UPDATE t SET l = [] {row}")], 70),
            (vec![format!("UPDATE t SET m = m + {{1: 'ab'}} {row}")], 96),
            (vec![format!("UPDATE t SET m[1] = 'ab' {row}")], 96),
            (vec![format!("DELETE m[1] FROM t {row}")], 94),
            (vec![format!("UPDATE t SET m = m - {{1, 2}} {row}")], 118),
            (
                vec![format!("UPDATE t SET st = st + {{'ab', 'c'}} {row}")],
                113,
            ),
            (vec![format!("UPDATE t SET st = st - {{'ab'}} {row}")], 92),
            (vec![format!("DELETE l FROM t {row}")], 70),
            // The row's deletion in the batch drops the elements (and the overwrite's
            // collection deletion) it shadows; a partition deletion drops nothing.
            (
                vec![
                    "DELETE FROM t WHERE k = 10 AND c = 1 AND c2 = 1".to_string(),
                    "UPDATE t SET l[1] = 7 WHERE k = 10 AND c = 1 AND c2 = 1".to_string(),
                ],
                58,
            ),
            (
                vec![
                    format!("DELETE FROM t {row}"),
                    format!("UPDATE t SET l = [4, 5] {row}"),
                ],
                58,
            ),
            (
                vec![
                    "DELETE FROM t WHERE k = 11".to_string(),
                    "UPDATE t SET l[1] = 7 WHERE k = 11 AND c = 1 AND c2 = 1".to_string(),
                ],
                110,
            ),
            // A removal from a list that is not there writes no row at all.
            (vec![format!("UPDATE t SET l = l - [1] {row}")], 29),
            // ... and from a stored one, a tombstone per matching item.
            (vec![format!("UPDATE t SET l = l - [1] {stored}")], 142),
            (vec![format!("UPDATE t SET l[1] = 7 {stored}")], 110),
            (vec![format!("DELETE l[1] FROM t {stored}")], 106),
            (vec![format!("UPDATE t SET l = [5] + l {stored}")], 110),
            (
                vec![
                    format!("UPDATE t SET m = m + {{1: 'ab'}} {row}"),
                    format!("UPDATE t SET m = m + {{1: 'abc'}} {row}"),
                ],
                97,
            ),
            (
                vec![
                    format!("UPDATE t SET m = m + {{1: 'ab'}} {row}"),
                    format!("DELETE m[1] FROM t {row}"),
                ],
                94,
            ),
            (
                vec![
                    format!("UPDATE t SET st = {{'a'}} {row}"),
                    format!("UPDATE t SET st = {{'a', 'b'}} {row}"),
                ],
                112,
            ),
            (
                vec![
                    format!("UPDATE t SET l = l + [1] {row}"),
                    format!("UPDATE t SET l = l + [1] {row}"),
                ],
                150,
            ),
            (vec!["UPDATE ud SET u.a = 1 WHERE k = 5".into()], 88),
            (
                vec!["UPDATE ud SET u = {a: 1, b: 'x'} WHERE k = 5".into()],
                111,
            ),
            (vec!["UPDATE ud SET u = {a: 1} WHERE k = 5".into()], 88),
            (vec!["UPDATE ud SET u = null WHERE k = 5".into()], 62),
            (vec!["DELETE u.a FROM ud WHERE k = 5".into()], 84),
            // A static list's operation by index or value reads the stored static row.
            (vec!["UPDATE sl SET sl[0] = 'q' WHERE k = 1".into()], 78),
            (
                vec!["UPDATE sl SET sl = sl - ['cd'] WHERE k = 2".into()],
                77,
            ),
        ];
        for (stmts, want) in cases {
            let refs: Vec<&str> = stmts.iter().map(String::as_str).collect();
            assert_eq!(added(&e, &refs), want, "{stmts:?}");
        }
        // Counter batches: 29 + 21 per partition, 20 + a 36-byte context per counter.
        let counters = |cols: &str| {
            let stmts: String = (0..3)
                .map(|k| format!("UPDATE n SET {cols} WHERE k = {k}; "))
                .collect();
            let Ok(Outcome::VoidWithWarnings(w)) = q(
                &e,
                Some("ks"),
                &format!("BEGIN COUNTER BATCH {stmts} APPLY BATCH"),
            ) else {
                panic!("no warning");
            };
            w[0].clone()
        };
        assert!(
            counters("c = c + 1").contains("is of size 318,"),
            "{}",
            counters("c = c + 1")
        );
        assert!(counters("c = c + 5, d = d - 1").contains("is of size 486,"));
    }

    #[test]
    fn range_tombstones_measure_as_in_cassandra() {
        let e = schema();
        q(
            &e,
            None,
            "CREATE TABLE ks.d (k int, a int, b int, v text, PRIMARY KEY (k, a, b)) \
             WITH CLUSTERING ORDER BY (a DESC, b ASC)",
        )
        .unwrap();
        let cases: &[(&[&str], u64)] = &[
            (&["DELETE FROM t WHERE k = 5"], 29),
            (&["DELETE FROM t WHERE k = 5 AND c = 1"], 53),
            (&["DELETE FROM t WHERE k = 5 AND c > 1"], 49),
            (&["DELETE FROM t WHERE k = 5 AND c > 1 AND c < 9"], 53),
            (&["DELETE FROM t WHERE k = 5 AND c = 1 AND c2 > 3"], 57),
            (
                &[
                    "DELETE FROM t WHERE k = 5 AND c = 1",
                    "DELETE FROM t WHERE k = 5 AND c = 3",
                ],
                73,
            ),
            (
                &[
                    "DELETE FROM t WHERE k = 5 AND c = 1",
                    "DELETE FROM t WHERE k = 5 AND c = 1",
                ],
                53,
            ),
            (
                &[
                    "DELETE FROM t WHERE k = 5 AND c >= 1 AND c < 3",
                    "DELETE FROM t WHERE k = 5 AND c >= 3 AND c < 5",
                ],
                73,
            ),
            (
                &[
                    "DELETE FROM t WHERE k = 5",
                    "DELETE FROM t WHERE k = 5 AND c = 1",
                ],
                53,
            ),
            (
                &[
                    "DELETE FROM t WHERE k = 5 AND c = 1",
                    "INSERT INTO t (k, c, c2, v) VALUES (5, 1, 1, 'a')",
                ],
                103,
            ),
            (&["DELETE FROM d WHERE k = 5 AND a > 1"], 49),
            (&["DELETE FROM d WHERE k = 5 AND a > 1 AND a < 5"], 53),
            (&["DELETE FROM d WHERE k = 5 AND a IN (1, 2)"], 73),
            (
                &["DELETE FROM d WHERE k = 5 AND (a, b) IN ((1, 2), (3, 4))"],
                87,
            ),
            // Every slice empty: nothing written, not even the partition.
            (&["DELETE FROM d WHERE k = 5 AND a > 5 AND a < 3"], 0),
            // Overlapping ranges of one timestamp: an earlier range keeps what it covers, a
            // later one adds its uncovered pieces only (probed on 5.0.9).
            (
                &[
                    "DELETE FROM t WHERE k = 5 AND c > 1 AND c < 5",
                    "DELETE FROM t WHERE k = 5 AND c > 2 AND c < 4",
                ],
                53,
            ),
            (
                &[
                    "DELETE FROM t WHERE k = 5 AND c > 2 AND c < 4",
                    "DELETE FROM t WHERE k = 5 AND c > 1 AND c < 5",
                ],
                93,
            ),
            (
                &[
                    "DELETE FROM t WHERE k = 5 AND c > 2 AND c < 4",
                    "DELETE FROM t WHERE k = 5 AND c > 1",
                ],
                89,
            ),
            (
                &[
                    "DELETE FROM t WHERE k = 5 AND c > 2 AND c < 4",
                    "DELETE FROM t WHERE k = 5 AND c > 6 AND c < 8",
                    "DELETE FROM t WHERE k = 5 AND c > 1 AND c < 10",
                ],
                133,
            ),
            // Of different timestamps: a newer range takes what it overlaps from an older
            // one, which keeps its pieces outside (probed on 5.0.9).
            (
                &[
                    "DELETE FROM t USING TIMESTAMP 5 WHERE k = 5 AND c >= 2 AND c <= 6",
                    "DELETE FROM t USING TIMESTAMP 10 WHERE k = 5 AND c >= 3 AND c <= 4",
                ],
                93,
            ),
            (
                &[
                    "DELETE FROM t USING TIMESTAMP 10 WHERE k = 5 AND c >= 2 AND c <= 6",
                    "DELETE FROM t USING TIMESTAMP 5 WHERE k = 5 AND c >= 3 AND c <= 4",
                ],
                53,
            ),
            (
                &[
                    "DELETE FROM t USING TIMESTAMP 5 WHERE k = 5 AND c >= 2 AND c <= 4",
                    "DELETE FROM t USING TIMESTAMP 10 WHERE k = 5 AND c >= 3 AND c <= 6",
                ],
                73,
            ),
            (
                &[
                    "DELETE FROM t USING TIMESTAMP 10 WHERE k = 5 AND c >= 3 AND c <= 4",
                    "DELETE FROM t USING TIMESTAMP 5 WHERE k = 5 AND c >= 2 AND c <= 6",
                ],
                93,
            ),
            (
                &[
                    "DELETE FROM t WHERE k = 5 AND c >= 1 AND c <= 5",
                    "DELETE FROM t WHERE k = 5 AND c >= 3 AND c <= 9",
                ],
                73,
            ),
            (
                &[
                    "DELETE FROM d WHERE k = 5 AND a > 2 AND a < 4",
                    "DELETE FROM d WHERE k = 5 AND a > 1 AND a < 5",
                ],
                93,
            ),
            (
                &[
                    "DELETE FROM d WHERE k = 5 AND a = 3 AND b > 1",
                    "DELETE FROM d WHERE k = 5 AND a >= 3",
                ],
                77,
            ),
            // A multi-column slice over columns of mixed order: a range per piece where the
            // order changes (probed on 5.0.9).
            (&["DELETE FROM mx WHERE k = 5 AND (c, d) > (1, 2)"], 73),
            (&["DELETE FROM mx WHERE k = 5 AND (c, d) >= (1, 2)"], 73),
            (&["DELETE FROM mx WHERE k = 5 AND (c, d) < (1, 2)"], 73),
            (&["DELETE FROM mx WHERE k = 5 AND (c, d, e) > (1, 2, 3)"], 105),
            (
                &["DELETE FROM mx WHERE k = 5 AND (c, d) > (1, 2) AND (c, d) < (3, 4)"],
                101,
            ),
            (
                &["DELETE FROM mx WHERE k = 5 AND (c, d) > (1, 2) AND (c, d) < (1, 5)"],
                61,
            ),
            (
                &["DELETE FROM mx WHERE k = 5 AND (c, d, e) >= (1, 2, 3) AND (c, d, e) < (1, 2, 9)"],
                69,
            ),
            (
                &["DELETE FROM mx WHERE k = 5 AND (c, d, e) > (1, 2, 3) AND (c, d, e) < (4, 5, 6)"],
                165,
            ),
            (&["DELETE FROM mx WHERE k = 5 AND (c, d) > (1, 2) AND (c) < (3)"], 77),
            (&["DELETE FROM mx WHERE k = 5 AND c = 1 AND (d, e) > (2, 3)"], 89),
            (
                &["DELETE FROM mx WHERE k = 5 AND c = 1 AND (d, e) > (2, 3) AND (d, e) < (5, 6)"],
                125,
            ),
            (&["DELETE FROM my WHERE k = 5 AND (c, d) > (1, 2)"], 73),
            (
                &["DELETE FROM my WHERE k = 5 AND (c, d, e) > (1, 2, 3) AND (c, d, e) <= (4, 5, 6)"],
                165,
            ),
            (
                &[
                    "DELETE FROM mx WHERE k = 5 AND (c, d) > (1, 2)",
                    "DELETE FROM mx WHERE k = 5 AND (c, d) > (1, 2)",
                ],
                73,
            ),
            // Bounds that name every clustering column still make a range.
            (
                &[
                    "DELETE FROM t WHERE k = 5 AND c = 3 AND c2 >= 3 AND c2 <= 3",
                    "DELETE FROM t WHERE k = 5 AND c = 3 AND c2 >= 1 AND c2 <= 5",
                ],
                117,
            ),
        ];
        for (stmts, want) in cases {
            assert_eq!(added(&e, stmts), *want, "{stmts:?}");
        }
    }
}
