//! Running a SELECT plan over storage: partitions (by key or by token range), clustering
//! slices, filters, paging, limits, and the selection (plain rows, or aggregates folded per
//! group).
//!
//! A [`SelectRun`] walks the partitions in storage order and hands every live row that passes
//! the filters to [`SelectRun::accept`]. Whether a new output row may start (LIMIT, PER
//! PARTITION LIMIT, page size) is decided in one place, [`SelectRun::admit`]; for a grouped
//! selection that "row" is a group, admitted at its first row, so a group is never split
//! across pages and aggregates stream over a partition without holding it.
//!
//! The paging state is Peregrine's own: the storage key of the last row consumed, the LIMIT
//! left and the rows (groups) already returned from the current partition.

use crate::arith;
use crate::catalog::{ColumnKind, TableDef};
use crate::exec::{
    clustering_ranges, named_partitions, partitions, passes_filters, resolve, resolve_key_ref,
    single_partition_key, tuple_field, Bindings, BoundFilter, RowSink,
};
use crate::keys;
use crate::plan::*;
use crate::row::{Cell, Deletion, PartitionHeader, PlainRow, Row};
use crate::token;
use crate::{Engine, EngineError, Now, ResultSet};
use bytes::Bytes;
use proto::types::ColumnType;
use std::borrow::Cow;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

mod ann;
mod cell_times;
mod group;
mod scan;
use group::Group;
pub(crate) mod tombstones;

struct PagingState {
    /// The storage key of the last row consumed.
    last_key: Vec<u8>,
    remaining: Option<u64>,
    in_partition: u64,
}

impl PagingState {
    fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.last_key.len() + 24);
        v.push(1);
        v.extend_from_slice(&(self.last_key.len() as u32).to_be_bytes());
        v.extend_from_slice(&self.last_key);
        v.extend_from_slice(&self.remaining.map(|r| r as i64).unwrap_or(-1).to_be_bytes());
        v.extend_from_slice(&self.in_partition.to_be_bytes());
        v
    }
    fn decode(b: &[u8]) -> Option<PagingState> {
        if *b.first()? != 1 {
            return None;
        }
        let len = u32::from_be_bytes(b.get(1..5)?.try_into().ok()?) as usize;
        let last_key = b.get(5..5 + len)?.to_vec();
        let rest = b.get(5 + len..)?;
        if rest.len() != 16 {
            return None;
        }
        let rem = i64::from_be_bytes(rest[0..8].try_into().ok()?);
        let in_partition = u64::from_be_bytes(rest[8..16].try_into().ok()?);
        Some(PagingState {
            last_key,
            remaining: (rem >= 0).then_some(rem as u64),
            in_partition,
        })
    }
}

/// What the scan does after a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Go,
    /// PER PARTITION LIMIT reached: skip to the next partition.
    NextPartition,
    /// LIMIT reached or page full.
    Stop,
}

/// What became of one stored row (`SelectRun::visit_row`).
enum Visit {
    /// Not live, or filtered out.
    Skipped,
    /// Accepted; the partition's next rows are read.
    Matched,
    /// The partition is done (PER PARTITION LIMIT, LIMIT, a full page, the tombstone limit):
    /// what `SelectRun::partition` answers.
    Done(Flow),
}

impl Visit {
    /// What an accepted row's flow makes of the partition.
    fn after(flow: Flow) -> Visit {
        match flow {
            Flow::Go => Visit::Matched,
            // The partition is done; the read goes on with the next one.
            Flow::NextPartition => Visit::Done(Flow::Go),
            Flow::Stop => Visit::Done(Flow::Stop),
        }
    }
}

/// One row (or a partition's static-only row) as selectors see it.
struct RowView<'r> {
    t: &'r TableDef,
    vals: &'r Bindings<'r>,
    pk_parts: &'r [&'r [u8]],
    tok: i64,
    row: Option<&'r Row>,
    header: &'r PartitionHeader,
    outer: Option<Deletion>,
    now: Now,
}

impl<'r> RowView<'r> {
    fn cell(&self, idx: usize) -> Option<Cow<'r, Cell>> {
        let c = &self.t.columns[idx];
        match c.kind {
            ColumnKind::Static => self.header.static_cell(c.id, self.now.secs),
            ColumnKind::Regular => self
                .row
                .and_then(|r| r.cell(c.id, self.now.secs, self.outer)),
            _ => None,
        }
    }

    /// The value of a leaf selector (expressions go through [`eval_expr`]).
    fn value(&self, s: &Selector) -> Option<Cow<'r, [u8]>> {
        let secs = self.now.secs;
        match s {
            Selector::Column(idx) => {
                let c = &self.t.columns[*idx];
                match c.kind {
                    ColumnKind::PartitionKey => self
                        .pk_parts
                        .get(c.position as usize)
                        .map(|v| Cow::Borrowed(*v)),
                    ColumnKind::Clustering => self
                        .row
                        .and_then(|r| r.clustering.get(c.position as usize))
                        .map(|v| Cow::Borrowed(v.as_slice())),
                    ColumnKind::Regular => self.row?.value(c.id, &c.ty, secs, self.outer),
                    _ => crate::row::value_of(self.cell(*idx)?, &c.ty, secs),
                }
            }
            Selector::WriteTime(idx) | Selector::MaxWriteTime(idx) | Selector::Ttl(idx) => {
                self.cell_times(s, *idx).map(Cow::Owned)
            }
            Selector::ElementTime { func, column, key } => {
                let key = resolve(key, self.vals).ok().flatten()?;
                self.element_time(*func, *column, &key).map(Cow::Owned)
            }
            Selector::SliceTime {
                func,
                column,
                from,
                to,
            } => {
                let bound = |b: &Option<Src>| match b {
                    Some(src) => resolve(src, self.vals).ok().flatten().map(Some),
                    None => Some(None),
                };
                let (from, to) = (bound(from)?, bound(to)?);
                self.slice_time(*func, *column, from.as_deref(), to.as_deref())
                    .map(Cow::Owned)
            }
            Selector::FieldTime {
                func,
                column,
                fields,
            } => self.field_time(*func, *column, fields).map(Cow::Owned),
            Selector::Token => Some(Cow::Owned(self.tok.to_be_bytes().to_vec())),
            Selector::Field(idx, pos) => {
                let c = &self.t.columns[*idx];
                // A key column's UDT is in the key, not in a cell.
                let whole = match c.kind {
                    ColumnKind::PartitionKey | ColumnKind::Clustering => {
                        self.value(&Selector::Column(*idx))?
                    }
                    _ => crate::row::value_of(self.cell(*idx)?, &c.ty, secs)?,
                };
                match whole {
                    Cow::Borrowed(v) => tuple_field(v, *pos).map(Cow::Borrowed),
                    Cow::Owned(v) => tuple_field(&v, *pos).map(|f| Cow::Owned(f.to_vec())),
                }
            }
            Selector::Const(v) => v.clone().map(Cow::Owned),
            // Bound values were checked before the run.
            Selector::Bind(i) => resolve(&Src::Bind(*i), self.vals)
                .ok()
                .flatten()
                .map(Cow::Owned),
            Selector::Expr(_) | Selector::Agg(_) | Selector::First(_) => None,
        }
    }

    fn eval(&self, s: &Selector) -> Result<Option<Vec<u8>>, EngineError> {
        match s {
            Selector::Expr(e) => eval_expr(
                e,
                &|leaf| Ok(self.value(leaf).map(Cow::into_owned)),
                self.now,
            ),
            other => Ok(self.value(other).map(Cow::into_owned)),
        }
    }
}

thread_local! {
    /// The storage key a point read (`SelectRun::point`) builds, kept with its allocation for
    /// the thread's next one.
    static POINT_KEY: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

#[cfg(test)]
thread_local! {
    /// Tests turn the point read's own path off, to compare it with the general one.
    pub(crate) static POINT_PATH_OFF: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Point reads that took their own path, for tests to see it was taken.
    pub(crate) static POINT_READS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Whether `plan` reads one row (or none) of one partition named by the one column of its
/// key, every one of the table's `ncl` clustering columns bound by `=`: the shape of
/// `SelectRun::point`.
fn is_point(plan: &SelectPlan, ncl: usize) -> bool {
    #[cfg(test)]
    if POINT_PATH_OFF.get() {
        return false;
    }
    let c = &plan.clustering;
    // `Keys` holds one restriction per partition key column: one `=` names a one-column key.
    matches!(&plan.partitions, PartitionSel::Keys(sel, [None, None]) if matches!(sel.as_slice(), [KeyValues::Eq(_)]))
        && c.tuples.is_none()
        && c.start.is_none()
        && c.end.is_none()
        && c.eq.len() == ncl
        && c.eq.iter().all(|kv| matches!(kv, KeyValues::Eq(_)))
        && plan.index.is_none()
        && plan.ann.is_none()
        && !plan.distinct
        && matches!(plan.selection, Selection::Rows(_))
}

/// One SELECT execution: the plan with its values bound, the output so far and the scan's
/// position.
pub(crate) struct SelectRun<'a> {
    store: &'a dyn storage::Storage,
    plan: &'a SelectPlan,
    vals: &'a Bindings<'a>,
    now: Now,
    filters: Vec<BoundFilter>,
    /// An indexed read visits only these rows (encoded clusterings) of the next partition.
    pub(crate) only_rows: Option<Vec<Vec<u8>>>,
    ranges: Vec<crate::exec::Interval>,
    /// Every partition read is of one fully specified row (or none): a point read.
    point_read: bool,
    /// The point read of one partition by the one column of its key, every clustering column
    /// (if any) bound by `=`, with no token bound, filter, index, aggregate, DISTINCT, ANN or
    /// paging state: [`SelectRun::point`] builds its storage key once, in a buffer the thread
    /// keeps, instead of the lists of partitions and clustering intervals (`ranges` is left
    /// empty).
    point: bool,
    /// Only one partition is read (`point`): every row consumed is in the last one listed.
    one_partition: bool,
    /// The selection is of key and regular columns only, with no filter, JSON, ORDER BY
    /// merge or ANN: a row of simple live cells is read in place ([`PlainRow`]).
    plain: bool,
    /// The table may hold partition headers (see `headers.rs`): without, none is looked up.
    headers: bool,
    page: Option<u64>,
    /// The page size asked for (an aggregate's read is not paged, but Cassandra's rebuild of
    /// it names the page size it reads by).
    asked_page: Option<u64>,
    ppl: Option<u64>,
    /// Output rows (groups) LIMIT still allows.
    remaining: Option<u64>,
    resume_key: Option<Vec<u8>>,
    /// Rows (groups) already returned from the partition a paging state resumes in.
    resume_in_partition: u64,
    /// Rows (groups) returned from the current partition.
    in_part: u64,
    /// `in_part` of the partition holding `sink.last_key` (where a next page resumes).
    last_in_part: u64,
    sink: RowSink,
    next_state: Option<PagingState>,
    /// A read by partition keys: the last partition of the list (see `end_of_page`).
    last_listed: Option<Vec<u8>>,
    group: Option<Group>,
    /// ORDER BY over an IN on the partition key (never paged): every row kept with its
    /// clustering bytes, merged across partitions and cut to LIMIT at the end. An ANN
    /// ordering uses it too, with the score as the key (see `read/ann.rs`).
    merge: Option<Merge>,
    ann: Option<ann::AnnRun>,
    /// The reader's visibility authorizations in a labelled table (`None`: no labels, no
    /// filtering): every row and header is cut to what they may see as it is decoded, so
    /// liveness, paging, aggregates and `writetime`/`ttl` never see the rest.
    auths: Option<crate::visibility::Authorizations>,
    /// The tombstones and live rows the read met (`read/tombstones.rs`).
    tally: tombstones::Tally,
    /// This node's address, for the ReadFailure past `tombstone_failure_threshold`.
    node: std::net::IpAddr,
    /// Client warnings raised (the tombstone warning of each command over the threshold).
    warnings: Vec<String>,
    /// An aggregate read in Cassandra's internal pages (`tombstones::InternalPages`).
    internal: Option<tombstones::InternalPages>,
    /// Where this page resumes (the paging state's row), for the warning's text.
    resumed_from: Option<Vec<u8>>,
    /// A range read's token bounds (value, inclusive), for the warning's text.
    range_tokens: [Option<(i64, bool)>; 2],
}

/// The candidates of an indexed read in one partition.
struct Candidates {
    prefix: Vec<u8>,
    pk: Vec<u8>,
    token: i64,
    /// Encoded clusterings of the candidate rows; `None`: the whole partition (an index on a
    /// static column).
    rows: Option<Vec<Vec<u8>>>,
}

struct Merge {
    rows: Vec<(Vec<u8>, Vec<u8>)>,
    limit: Option<u64>,
}

impl Engine {
    pub(crate) fn run_select(
        &self,
        store: &dyn storage::Storage,
        plan: &SelectPlan,
        vals: &Bindings,
        page_size: Option<i32>,
        paging_state: Option<&[u8]>,
        now: Now,
    ) -> Result<ResultSet, EngineError> {
        self.run_select_as(store, plan, vals, page_size, paging_state, now, None, 0)
    }

    /// [`Engine::run_select`] for a reader with visibility authorizations `auths` (`None`:
    /// the table has no labels); a point read leaves `head_room` bytes in front of its rows
    /// ([`crate::ResultSet::head_room`]).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn run_select_as(
        &self,
        store: &dyn storage::Storage,
        plan: &SelectPlan,
        vals: &Bindings,
        page_size: Option<i32>,
        paging_state: Option<&[u8]>,
        now: Now,
        auths: Option<crate::visibility::Authorizations>,
        head_room: usize,
    ) -> Result<ResultSet, EngineError> {
        if let Some(m) = &plan.execution_error {
            return Err(EngineError::server(m.to_string()));
        }
        let mut run = SelectRun::new(store, plan, vals, page_size, paging_state, now)?;
        run.auths = auths;
        if run.point {
            run.sink.head_room = head_room;
        }
        // Only the engine's own store is tracked (not a virtual table's rows).
        let own = std::ptr::addr_eq(
            store as *const dyn storage::Storage,
            Arc::as_ptr(&self.storage),
        );
        run.headers = !own || self.headers.may_have(plan.table.id);
        run.tally = tombstones::Tally::new(self.tombstone_thresholds(), &plan.table, now.secs, own);
        run.node = self.node().rpc_address;
        run.run(self)
    }
}

impl<'a> SelectRun<'a> {
    fn new(
        store: &'a dyn storage::Storage,
        plan: &'a SelectPlan,
        vals: &'a Bindings<'a>,
        page_size: Option<i32>,
        paging_state: Option<&[u8]>,
        now: Now,
    ) -> Result<Self, EngineError> {
        let t = &plan.table;
        let limit = match &plan.limit {
            Some(s) => positive_limit(resolve(s, vals))?,
            None => None,
        };
        let ppl = match &plan.per_partition_limit {
            Some(s) => positive_limit(resolve(s, vals))?,
            None => None,
        };
        if plan.order_with_in && page_size.is_some_and(|p| p > 0) {
            return Err(EngineError::invalid("Cannot page queries with both ORDER BY and a IN restriction on the partition key; you must either remove the ORDER BY or the IN and sort client side, or disable paging for this query"));
        }
        let ann = match &plan.ann {
            Some(a) => Some(ann::AnnRun::bind(a, t, limit, vals)?),
            None => None,
        };
        // Aggregates without GROUP BY answer one row: nothing to page or limit.
        let single_group =
            matches!(&plan.selection, Selection::Aggregates(a) if a.group_by.is_none());
        // An ANN query's LIMIT rows (at most 1000) come in one page.
        let page = if single_group || ann.is_some() {
            None
        } else {
            page_size.filter(|p| *p > 0).map(|p| p as u64)
        };
        let state = match paging_state {
            Some(b) if !b.is_empty() => Some(
                PagingState::decode(b)
                    .ok_or_else(|| EngineError::protocol("Invalid value for the paging state"))?,
            ),
            _ => None,
        };
        let ordered = (plan.order_with_in && !plan.distinct && !single_group) || ann.is_some();
        let merge = ordered.then(|| Merge {
            rows: Vec::new(),
            limit,
        });
        let remaining = if single_group || merge.is_some() {
            None
        } else {
            state.as_ref().and_then(|s| s.remaining).or(limit)
        };
        let filters: Vec<BoundFilter> = plan
            .filters
            .iter()
            .map(|f| {
                let c = &t.columns[f.column];
                let b = BoundFilter::bind(f, &c.name, vals)?;
                // A regular or static column compared with null is refused, as Cassandra does.
                if b.want.is_none()
                    && matches!(b.target, crate::exec::BoundTarget::Whole)
                    && matches!(c.kind, ColumnKind::Regular | ColumnKind::Static)
                {
                    return Err(EngineError::invalid(format!(
                        "Unsupported null value for column {}",
                        c.name
                    )));
                }
                Ok(b)
            })
            .collect::<Result<_, EngineError>>()?;
        let ncl = t.clustering_count();
        let point = state.is_none() && filters.is_empty() && merge.is_none() && is_point(plan, ncl);
        let ranges = if point {
            // The values are bound by `point`; their errors come here, before the key's, as
            // `clustering_ranges` raises them.
            for (kv, col) in plan.clustering.eq.iter().zip(t.clustering()) {
                if let KeyValues::Eq(src) = kv {
                    resolve_key_ref(src, vals, &col.name)?;
                }
            }
            Vec::new()
        } else {
            clustering_ranges(t, &plan.clustering, vals, true)?
        };
        let c = &plan.clustering;
        let point_read = !plan.distinct
            && (ncl == 0
                || (c.start.is_none()
                    && c.end.is_none()
                    && c.eq.len() + c.tuples.as_ref().map_or(0, TupleValues::arity) == ncl));
        let resumed_from = state.as_ref().map(|s| s.last_key.clone());
        let plain = !plan.json
            && filters.is_empty()
            && merge.is_none()
            && ann.is_none()
            && plan.columns_only
            // A dropped column's cells stay in the rows it was written in (see `visit_row`).
            && plan.table.dropped.is_empty();
        Ok(SelectRun {
            store,
            plan,
            vals,
            now,
            filters,
            only_rows: None,
            ranges,
            point_read,
            point,
            one_partition: false,
            plain,
            headers: true,
            page,
            asked_page: page_size.filter(|p| *p > 0).map(|p| p as u64),
            ppl,
            remaining,
            resume_in_partition: state.as_ref().map_or(0, |s| s.in_partition),
            resume_key: state.map(|s| s.last_key),
            in_part: 0,
            last_in_part: 0,
            sink: RowSink {
                // Allocated at the first row: the fast path reserves what the row needs at
                // once (growing a 256-byte start copied it), the slow path reserves 256.
                data: Vec::new(),
                rows: 0,
                last_key: smallvec::SmallVec::new(),
                head_room: 0,
                placed: false,
            },
            next_state: None,
            last_listed: None,
            group: None,
            merge,
            ann,
            auths: None,
            tally: tombstones::Tally::new(Default::default(), t, now.secs, false),
            node: std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
            warnings: Vec::new(),
            internal: tombstones::InternalPages::of(plan, page_size),
            range_tokens: [None, None],
            resumed_from,
        })
    }

    /// Runs the read to its result. By reference: the run is a few hundred bytes, and taken
    /// by value it was copied into each call (~250 instructions of `memcpy` a point read).
    fn run(&mut self, engine: &Engine) -> Result<ResultSet, EngineError> {
        if self.run_ann_graph(engine)? {
            return self.finish();
        }
        let limits = self.limits();
        if let Some(ip) = self.internal.as_mut() {
            ip.limits = Some(limits);
        }
        match (&self.plan.index, &self.plan.partitions) {
            (Some(scan), PartitionSel::Range { start, end }) => {
                let limits = self.limits();
                self.range_tokens = self.tokens_of(engine, start, end);
                self.scan_index(engine, scan, start, end)?;
                self.range_warning(limits);
            }
            (_, PartitionSel::Keys(sel, _)) if self.point => self.point(sel)?,
            (_, PartitionSel::Keys(sel, token)) => self.scan_keys(engine, sel, token)?,
            (None, PartitionSel::Range { start, end }) => {
                let limits = self.limits();
                self.range_tokens = self.tokens_of(engine, start, end);
                self.scan_range(engine, start, end)?;
                self.range_warning(limits);
            }
        }
        self.finish()
    }

    /// The storage key ranges of the selected rows of one partition, in scan order.
    fn partition_ranges(&self, row_prefix: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        if let Some(rows) = &self.only_rows {
            let in_slice = |enc: &[u8]| {
                if self.ranges.is_empty() {
                    return self.plan.clustering.is_unrestricted();
                }
                self.ranges.iter().any(|(s, e)| {
                    enc >= s.as_slice() && e.as_ref().is_none_or(|e| enc < e.as_slice())
                })
            };
            return rows
                .iter()
                .filter(|enc| in_slice(enc))
                .map(|enc| {
                    let mut a = row_prefix.to_vec();
                    a.extend_from_slice(enc);
                    let mut b = a.clone();
                    b.push(0);
                    (a, b)
                })
                .collect();
        }
        let mut out: Vec<(Vec<u8>, Vec<u8>)> = if self.ranges.is_empty() {
            if self.plan.clustering.is_unrestricted() {
                vec![(row_prefix.to_vec(), keys::prefix_end(row_prefix))]
            } else {
                Vec::new()
            }
        } else {
            self.ranges
                .iter()
                .map(|(s, e)| {
                    let mut a = row_prefix.to_vec();
                    a.extend_from_slice(s);
                    let b = match e {
                        Some(e) => {
                            let mut b = row_prefix.to_vec();
                            b.extend_from_slice(e);
                            b
                        }
                        None => keys::prefix_end(row_prefix),
                    };
                    (a, b)
                })
                .collect()
        };
        if self.plan.reversed {
            out.reverse();
        }
        out
    }

    /// Visits one partition's live rows. `buffered`: the partition's items already read by a
    /// range scan (header first if there is one), so no storage read is needed. `point_key`:
    /// the storage key of the one row a point read (`point`) reads.
    fn partition(
        &mut self,
        prefix: &[u8],
        pk: &[u8],
        tok: i64,
        buffered: Option<&[storage::KvPair]>,
        point_key: Option<&[u8]>,
    ) -> Result<Flow, EngineError> {
        let store = self.store;
        let plan = self.plan;
        let t = &*plan.table;
        let now = self.now;
        let stored_header = match buffered {
            Some(items) => items
                .first()
                .filter(|(k, _)| k.len() == prefix.len() + 1 && k.last() == Some(&0))
                .map(|(_, v)| v.clone()),
            None if self.headers => {
                // On the stack: a key of a few dozen bytes, read on every point read.
                let mut k = smallvec::SmallVec::<[u8; 128]>::from_slice(prefix);
                k.push(0);
                store.get(&k)?.map(Bytes::from)
            }
            None => None,
        };
        let mut header = match stored_header {
            Some(h) => PartitionHeader::decode(&h).map_err(EngineError::corrupt)?,
            None => PartitionHeader::default(),
        };
        t.drop_dropped_cells(&mut header.statics);
        if let Some(a) = &self.auths {
            header.hide(a);
        }
        self.tally.enter(tok);
        if self.tally.statics(&header, now.secs).is_err() {
            return self.too_many_tombstones();
        }
        let resume_key = self.resume_key.take_if(|k| k.starts_with(prefix));
        let resuming_here = resume_key.is_some();
        // What the previous page returned counts only in the partition it stopped in (which
        // may be gone by now).
        let returned_before = std::mem::take(&mut self.resume_in_partition);
        self.in_part = if resuming_here { returned_before } else { 0 };
        let pk_parts = token::split_partition_key(pk, t.pk_count()).unwrap_or_default();
        let base = RowView {
            t,
            vals: self.vals,
            pk_parts: &pk_parts,
            tok,
            row: None,
            header: &header,
            outer: None,
            now,
        };
        if plan.distinct {
            crate::lane::row_read();
            if resuming_here {
                return Ok(Flow::Go);
            }
            let live = header.has_live_statics(now.secs)
                || match tombstones::distinct_live_row(
                    store,
                    t,
                    prefix,
                    &header,
                    now,
                    (self.auths.as_ref(), plan.queried.as_deref()),
                    &mut self.tally,
                )? {
                    Some(live) => live,
                    None => return self.too_many_tombstones(),
                };
            let passes = || passes_filters(t, &self.filters, &pk_parts, None, &header, None, now);
            if !live || !passes() {
                return Ok(Flow::Go);
            }
            return self.accept(&base, &keys::header_key(prefix), prefix);
        }
        let mut matched_any = false;
        let strict = crate::view::strict_liveness(t);
        // A point read (one interval of one fully specified row, or of a table without
        // clustering columns) is one lookup, its value shared rather than copied, without
        // the bounds a range needs.
        let one_row = point_key.is_some()
            || buffered.is_none()
                && resume_key.is_none()
                && self.point_read
                && self.only_rows.is_none()
                && matches!(self.ranges.as_slice(), [(s, e)] if e.as_ref().is_none_or(|e| e > s));
        if one_row {
            let key = match point_key {
                Some(k) => Cow::Borrowed(k),
                None => Cow::Owned(keys::row_key(prefix, &self.ranges[0].0)),
            };
            if let Some(value) = store.get_shared(&key)? {
                match self.visit_row(&base, strict, &key, value, prefix)? {
                    Visit::Skipped => {}
                    Visit::Matched => matched_any = true,
                    Visit::Done(flow) => return Ok(flow),
                }
            }
        }
        let row_prefix = if one_row {
            Vec::new()
        } else {
            keys::row_key(prefix, &[])
        };
        let ranges = if one_row {
            Vec::new()
        } else {
            self.partition_ranges(&row_prefix)
        };
        for (a, b) in ranges {
            let (mut lo, mut hi) = (Bound::Included(a.as_slice()), Bound::Excluded(b.as_slice()));
            if let Some(rk) = &resume_key {
                if plan.reversed {
                    if rk.as_slice() <= a.as_slice() {
                        continue;
                    }
                    if rk.as_slice() < b.as_slice() {
                        hi = Bound::Excluded(rk.as_slice());
                    }
                } else {
                    if rk.as_slice() >= b.as_slice() {
                        continue;
                    }
                    if rk.as_slice() >= a.as_slice() {
                        lo = Bound::Excluded(rk.as_slice());
                    }
                }
            }
            if !self.point_read && self.only_rows.is_none() && !header.ranges.is_empty() {
                fn enc<'k>(b: Bound<&'k [u8]>, row_prefix: &[u8]) -> &'k [u8] {
                    match b {
                        Bound::Included(k) | Bound::Excluded(k) => {
                            k.strip_prefix(row_prefix).unwrap_or(&[])
                        }
                        Bound::Unbounded => &[],
                    }
                }
                let enc = |b| enc(b, &row_prefix);
                if self.tally.ranges(&header, enc(lo), enc(hi)).is_err() {
                    return self.too_many_tombstones();
                }
            }
            // The buffered items are lent, not copied: a key by reference, a value by a
            // count on the buffer it shares.
            type Item<'b> = storage::Result<(Cow<'b, [u8]>, Bytes)>;
            let items: Box<dyn Iterator<Item = Item<'_>>> = if let Some(buf) = buffered {
                let within = move |k: &[u8]| RangeBounds::<[u8]>::contains(&(lo, hi), k);
                Box::new(
                    buf.iter()
                        .filter(move |(k, _)| within(k))
                        .map(|(k, v)| Ok((Cow::Borrowed(k.as_slice()), v.clone()))),
                )
            } else if self.point_read || self.only_rows.is_some() {
                // A fully specified clustering key (or none at all) is one point read,
                // much cheaper than an iterator.
                let skip = matches!(lo, Bound::Excluded(_))
                    || matches!(hi, Bound::Excluded(h) if h <= a.as_slice());
                match (skip, store.get_shared(&a)?) {
                    (false, Some(v)) => {
                        Box::new(std::iter::once(Ok((Cow::Borrowed(a.as_slice()), v))))
                    }
                    _ => Box::new(std::iter::empty()),
                }
            } else {
                Box::new(
                    store
                        .scan(lo, hi, plan.reversed)
                        .map(|item| item.map(|(k, v)| (Cow::Owned(k), v))),
                )
            };
            for item in items {
                let (key, value) = item?;
                match self.visit_row(&base, strict, &key, value, prefix)? {
                    Visit::Skipped => {}
                    Visit::Matched => matched_any = true,
                    Visit::Done(flow) => return Ok(flow),
                }
            }
        }
        // A partition with only static values shows as one row when no clustering
        // restriction excludes it.
        if !matched_any
            && !resuming_here
            && plan.clustering.is_unrestricted()
            && header.has_live_statics(now.secs)
            && passes_filters(t, &self.filters, &pk_parts, None, &header, None, now)
            && self.accept(&base, &keys::header_key(prefix), prefix)? == Flow::Stop
        {
            return Ok(Flow::Stop);
        }
        Ok(Flow::Go)
    }

    /// How many more rows this page may hold after the one being written (its LIMIT and page
    /// size; unbounded: `u64::MAX`), for the result buffer's reservation.
    fn rows_wanted_after_this(&self) -> u64 {
        let page = self
            .page
            .map_or(u64::MAX, |p| p.saturating_sub(self.sink.rows as u64 + 1));
        self.remaining.unwrap_or(u64::MAX).min(page)
    }

    /// The gate of every new output row (for a grouped selection, of every new group): LIMIT,
    /// PER PARTITION LIMIT and the page size. A full page records where the next one resumes.
    fn admit(&mut self) -> Flow {
        if self.remaining == Some(0) {
            return Flow::Stop;
        }
        if self.ppl.is_some_and(|l| self.in_part >= l) {
            // A group ends where the next one starts: Cassandra too reads that row.
            if matches!(self.plan.selection, Selection::Rows(_)) {
                self.tally.rewind();
            }
            return Flow::NextPartition;
        }
        if self.page.is_some_and(|p| self.sink.rows as u64 >= p) {
            self.tally.rewind();
            self.next_state = Some(PagingState {
                last_key: self.sink.last_key.to_vec(),
                remaining: self.remaining,
                in_partition: self.last_in_part,
            });
            return Flow::Stop;
        }
        self.in_part += 1;
        if let Some(r) = self.remaining.as_mut() {
            *r -= 1;
        }
        Flow::Go
    }

    /// One stored row of the partition `base` describes, stored under `key`: decoded (its
    /// cells share `value`), cut to what the reader may see, counted for the tombstone
    /// limits and, if live and past the filters, accepted.
    fn visit_row(
        &mut self,
        base: &RowView,
        strict: bool,
        key: &[u8],
        value: Bytes,
        prefix: &[u8],
    ) -> Result<Visit, EngineError> {
        let (t, now) = (base.t, self.now);
        crate::lane::row_read();
        // The row prefix is the partition prefix and one byte (`keys::row_key`).
        let outer = base.header.deletion_for(&key[prefix.len() + 1..]);
        if self.plain && outer.is_none() && !strict && self.auths.is_none() {
            let mut row = PlainRow::default();
            if row.read(&value, now.secs) {
                // Live, with no tombstone to count; no filter to pass.
                self.tally.live_row();
                let flow = self.accept_plain(&row, base.pk_parts, key)?;
                return Ok(Visit::after(flow));
            }
        }
        let mut row = Row::decode_shared(&value).map_err(EngineError::corrupt)?;
        if let Some(a) = &self.auths {
            row.hide(a);
        }
        t.drop_dropped_cells(&mut row.cells);
        let queried = self.plan.queried.as_deref();
        let live = row.is_live_for(now.secs, outer, |id| {
            queried.is_none_or(|q| q.contains(&id))
        }) && (!strict || crate::view::marker_live(&row, now.secs))
            && crate::collections::row_still_live(t, &row, now.secs, outer);
        // Cassandra's tombstone count: a pass over the decoded cells, no allocation.
        if self.tally.row(&row, outer, now.secs, live).is_err() {
            return self.too_many_tombstones().map(Visit::Done);
        }
        if !live
            || !passes_filters(
                t,
                &self.filters,
                base.pk_parts,
                Some(&row),
                base.header,
                outer,
                now,
            )
        {
            return Ok(Visit::Skipped);
        }
        let view = RowView {
            row: Some(&row),
            outer,
            ..*base
        };
        Ok(Visit::after(self.accept(&view, key, prefix)?))
    }

    /// [`SelectRun::accept`] of a row read in place, for a plain selection (`plain`).
    fn accept_plain(
        &mut self,
        row: &PlainRow,
        pk_parts: &[&[u8]],
        key: &[u8],
    ) -> Result<Flow, EngineError> {
        let Selection::Rows(selectors) = &self.plan.selection else {
            return Err(EngineError::server(
                "a plain read of an aggregate selection",
            ));
        };
        let flow = self.admit();
        if flow != Flow::Go {
            return Ok(flow);
        }
        let t = &*self.plan.table;
        let key_bytes: usize = pk_parts.iter().map(|p| p.len()).sum();
        let more = self.rows_wanted_after_this();
        let sink = &mut self.sink;
        sink.reserve_row(4 * selectors.len() + row.value_bytes() + key_bytes, more);
        let mut next_cell = 0;
        for s in selectors {
            let v = match s {
                Selector::Column(idx) => {
                    let c = &t.columns[*idx];
                    match c.kind {
                        ColumnKind::PartitionKey => pk_parts.get(c.position as usize).copied(),
                        ColumnKind::Clustering => row.clustering(c.position as usize),
                        ColumnKind::Regular => row.value(c.id, &mut next_cell),
                        _ => None,
                    }
                }
                _ => None,
            };
            sink.cell(v);
        }
        sink.rows += 1;
        self.consumed(key);
        Ok(self.after_row())
    }

    /// One live, filtered row stored under `key` in the partition `prefix`.
    fn accept(&mut self, view: &RowView, key: &[u8], prefix: &[u8]) -> Result<Flow, EngineError> {
        let plan = self.plan;
        let sel = match &plan.selection {
            Selection::Rows(selectors) => {
                let ann_key = match &self.ann {
                    Some(a) => match a.sort_key(view, key) {
                        Some(k) => Some(k),
                        None => return Ok(Flow::Go),
                    },
                    None => None,
                };
                let flow = self.admit();
                if flow != Flow::Go {
                    return Ok(flow);
                }
                let start = self.sink.data.len();
                self.emit_row(selectors, view)?;
                if self.merge.is_some() {
                    let row = self.sink.data.split_off(start);
                    let sort = ann_key.unwrap_or_else(|| self.order_key(view));
                    if let Some(m) = self.merge.as_mut() {
                        m.rows.push((sort, row));
                    }
                    self.keep_top();
                }
                self.consumed(key);
                return Ok(self.after_row());
            }
            Selection::Aggregates(sel) => sel,
        };
        // Cassandra groups on the replica: a GROUP BY function that fails there (floor() of
        // a time before its starting time) fails the read (ReadFailure, reason UNKNOWN).
        let gkey = group_key(sel, prefix, view)
            .map_err(|_| crate::index::read_failure(self.node, "UNKNOWN", 0x0000))?;
        if self.group.as_ref().is_none_or(|g| g.key != gkey) {
            self.close_group()?;
            let flow = self.admit();
            if flow != Flow::Go {
                return Ok(flow);
            }
            let mut g = Group::new(gkey, sel);
            if self.merge.is_some() {
                g.first_row = self.order_key(view);
            }
            g.firsts = sel
                .firsts
                .iter()
                .map(|s| view.eval(s))
                .collect::<Result<_, _>>()?;
            self.group = Some(g);
        }
        if let Some(g) = self.group.as_mut() {
            g.add(sel, view)?;
        }
        self.consumed(key);
        if self.internal.is_some() {
            self.internal_page_row(view.pk_parts, view.row.map(|r| r.clustering.as_slice()));
        }
        Ok(Flow::Go)
    }

    /// What the scan does after an output row: it stops once LIMIT is reached.
    fn after_row(&self) -> Flow {
        if self.remaining == Some(0) {
            Flow::Stop
        } else {
            Flow::Go
        }
    }

    /// Records the row stored under `key` as the last one read (a next page starts after it).
    fn consumed(&mut self, key: &[u8]) {
        self.sink.last_key.clear();
        self.sink.last_key.extend_from_slice(key);
        self.last_in_part = self.in_part;
        self.tally.consumed();
    }

    fn emit_row(&mut self, selectors: &[Selector], view: &RowView) -> Result<(), EngineError> {
        if !self.plan.json && !selectors.iter().any(|s| matches!(s, Selector::Expr(_))) {
            // One reservation per row instead of the doublings of a growing buffer (a 1 KB
            // YCSB row grew it three times from its first 256 bytes): the row's values and its
            // key's, which a `SELECT *` returns too.
            let key_bytes: usize = view.pk_parts.iter().map(|p| p.len()).sum::<usize>()
                + view
                    .row
                    .map_or(0, |r| r.clustering.iter().map(Vec::len).sum());
            let guess = 4 * selectors.len() + view.row.map_or(0, Row::value_bytes) + key_bytes;
            let more = self.rows_wanted_after_this();
            self.sink.reserve_row(guess, more);
            for s in selectors {
                self.sink.cell(view.value(s).as_deref());
            }
            self.sink.rows += 1;
            return Ok(());
        }
        // Slow path: functions, casts, arithmetic, JSON.
        let vals = selectors
            .iter()
            .map(|s| view.eval(s))
            .collect::<Result<Vec<_>, _>>()?;
        self.write_output(&vals);
        Ok(())
    }

    fn write_output(&mut self, vals: &[Option<Vec<u8>>]) {
        self.sink.reserve(256);
        if self.plan.json {
            let cols: Vec<(&str, &ColumnType, Option<&[u8]>)> = self
                .plan
                .json_columns
                .iter()
                .zip(vals)
                .map(|(c, v)| (c.name.as_str(), &c.ty, v.as_deref()))
                .collect();
            let text = crate::json::row_to_json(&cols);
            self.sink.cell(Some(text.as_bytes()));
        } else {
            for v in vals {
                self.sink.cell(v.as_deref());
            }
        }
        self.sink.rows += 1;
    }

    /// What an ORDER BY over IN partitions sorts a row by: its values of the clustering
    /// columns up to the last ORDER BY column, in their clustering order (a partition's
    /// static-only row has none and sorts first).
    fn order_key(&self, view: &RowView) -> Vec<u8> {
        let mut out = Vec::new();
        let Some(row) = view.row else {
            return out;
        };
        for pos in 0..self.plan.order_components {
            let column = self
                .plan
                .table
                .clustering()
                .find(|c| c.position as usize == pos);
            if let (Some(c), Some(v)) = (column, row.clustering.get(pos)) {
                keys::encode_component(&mut out, &c.ty, v, c.desc);
            }
        }
        out
    }

    /// Emits the open group's row, if a group is open.
    fn close_group(&mut self) -> Result<(), EngineError> {
        let (Some(mut g), Selection::Aggregates(sel)) = (self.group.take(), &self.plan.selection)
        else {
            return Ok(());
        };
        let first_row = std::mem::take(&mut g.first_row);
        let (aggs, firsts) = g.results(sel)?;
        let leaf = |s: &Selector| -> Result<Option<Vec<u8>>, EngineError> {
            Ok(match s {
                Selector::Agg(i) => aggs.get(*i).cloned().flatten(),
                Selector::First(i) => firsts.get(*i).cloned().flatten(),
                _ => None,
            })
        };
        let vals = sel
            .outputs
            .iter()
            .map(|s| match s {
                Selector::Expr(e) => eval_expr(e, &leaf, self.now),
                other => leaf(other),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let start = self.sink.data.len();
        self.write_output(&vals);
        if let Some(m) = self.merge.as_mut() {
            m.rows.push((first_row, self.sink.data.split_off(start)));
        }
        Ok(())
    }

    /// A page that the read filled exactly, with nothing after it, still carries a paging
    /// state (the next page is then empty), as Cassandra's pagers give one whenever a page
    /// is full and they cannot tell the read is over. They can tell when LIMIT is reached,
    /// and for a read by partition keys when its last partition is done: its last row was
    /// its only possible one (the table has no clustering columns, or the row is the
    /// partition's static row alone) or PER PARTITION LIMIT (1 for DISTINCT) is reached.
    /// A read of a token range is never known to be over.
    fn end_of_page(&mut self) {
        let full = self
            .page
            .is_some_and(|p| self.sink.rows as u64 == p && p > 0);
        if !full || self.next_state.is_some() || self.remaining == Some(0) {
            return;
        }
        let last = &self.sink.last_key;
        let in_last_partition = self.one_partition
            || self
                .last_listed
                .as_ref()
                .is_some_and(|p| last.starts_with(p));
        let partition_done = self.plan.table.clustering_count() == 0
            || keys::decode_key(last).is_some_and(|d| d.is_header)
            || self.plan.distinct
            || self.ppl.is_some_and(|l| self.last_in_part >= l);
        if in_last_partition && partition_done {
            return;
        }
        self.next_state = Some(PagingState {
            last_key: last.to_vec(),
            remaining: self.remaining,
            in_partition: self.last_in_part,
        });
    }

    fn finish(&mut self) -> Result<ResultSet, EngineError> {
        if let Selection::Aggregates(sel) = &self.plan.selection {
            // Without GROUP BY there is one row even when nothing matched.
            if sel.group_by.is_none() && self.group.is_none() {
                let mut g = Group::new(Vec::new(), sel);
                // Cassandra still computes each plain selector, over null inputs: toJson() of
                // a column answers 'null', mask_default() its mask.
                g.firsts = sel
                    .firsts
                    .iter()
                    .map(|s| over_nulls(s, self.vals, self.now))
                    .collect::<Result<_, _>>()?;
                self.group = Some(g);
            }
            self.close_group()?;
        }
        self.end_of_page();
        if let Some(mut m) = self.merge.take() {
            // Ties keep the partitions' order, as Cassandra's merge does.
            if self.plan.reversed {
                m.rows.sort_by(|a, b| b.0.cmp(&a.0));
            } else {
                m.rows.sort_by(|a, b| a.0.cmp(&b.0));
            }
            if let Some(l) = m.limit {
                m.rows.truncate(usize::try_from(l).unwrap_or(usize::MAX));
            }
            self.sink.rows = m.rows.len();
            self.sink.data = m.rows.into_iter().flat_map(|(_, r)| r).collect();
            self.sink.placed = false;
        }
        Ok(ResultSet {
            columns: self.plan.output.clone(),
            rows: self.sink.rows,
            head_room: if self.sink.placed {
                self.sink.head_room
            } else {
                0
            },
            data: std::mem::take(&mut self.sink.data),
            paging_state: self.next_state.take().map(|s| s.encode()),
            warnings: std::mem::take(&mut self.warnings),
        })
    }
}

/// The key of a row's group: its partition and its first `n` clustering values, the last
/// one through the GROUP BY function if there is one (without GROUP BY, every row has the
/// same, empty key).
fn group_key(sel: &AggSelection, prefix: &[u8], view: &RowView) -> Result<Vec<u8>, EngineError> {
    let Some(n) = sel.group_by else {
        return Ok(Vec::new());
    };
    let mut k = prefix.to_vec();
    let mut push = |v: &[u8]| {
        k.extend_from_slice(&(v.len() as u32).to_be_bytes());
        k.extend_from_slice(v);
    };
    if let Some(r) = view.row {
        let plain = if sel.group_fn.is_some() {
            n.saturating_sub(1)
        } else {
            n
        };
        for v in r.clustering.iter().take(plain) {
            push(v);
        }
        if let Some(f) = &sel.group_fn {
            let leaf = |s: &Selector| Ok(view.value(s).map(Cow::into_owned));
            push(&eval_expr(f, &leaf, view.now)?.unwrap_or_default());
        }
    }
    Ok(k)
}

/// A LIMIT or PER PARTITION LIMIT value: Cassandra checks both with one method, whose
/// messages say "limit" and "LIMIT" for either. An unset value is no limit (`None`).
fn positive_limit(v: Result<Option<Vec<u8>>, EngineError>) -> Result<Option<u64>, EngineError> {
    let v = match v {
        Err(EngineError::Unset(_)) => return Ok(None),
        other => other?,
    };
    let v = v.ok_or_else(|| EngineError::invalid("Invalid null value of limit"))?;
    let n = i32::from_be_bytes(
        v.as_slice()
            .try_into()
            .map_err(|_| EngineError::invalid("Invalid limit value"))?,
    );
    if n <= 0 {
        return Err(EngineError::invalid("LIMIT must be strictly positive"));
    }
    Ok(Some(n as u64))
}

/// A plain selector's value over a row whose every column is null (an aggregate query that
/// matched no row): constants and bound values keep theirs, a function call still runs.
fn over_nulls(s: &Selector, vals: &Bindings, now: Now) -> Result<Option<Vec<u8>>, EngineError> {
    let leaf = |s: &Selector| -> Result<Option<Vec<u8>>, EngineError> {
        Ok(match s {
            Selector::Const(v) => v.clone(),
            Selector::Bind(i) => resolve(&Src::Bind(*i), vals).ok().flatten(),
            _ => None,
        })
    };
    match s {
        Selector::Expr(e) => eval_expr(e, &leaf, now),
        other => leaf(other),
    }
}

type Leaf<'l> = dyn Fn(&Selector) -> Result<Option<Vec<u8>>, EngineError> + 'l;

/// Evaluates an expression selector. Null in gives null out. Arithmetic errors (an integer
/// divided by zero) fail the query as Cassandra's do; a function failing on bad stored data
/// yields null (type checking at prepare time ruled out the rest).
fn eval_expr(e: &SelExpr, leaf: &Leaf, now: Now) -> Result<Option<Vec<u8>>, EngineError> {
    Ok(match e {
        SelExpr::Leaf(s, _) => leaf(s)?,
        SelExpr::Const(_, v) => v.clone(),
        SelExpr::Cast { inner, from, to } => {
            let v = eval_expr(inner, leaf, now)?;
            crate::scalar::cast(from, to, v.as_deref()).ok().flatten()
        }
        SelExpr::Call { name, args, .. } => {
            let vals = args
                .iter()
                .map(|a| Ok((a.ty().clone(), eval_expr(a, leaf, now)?)))
                .collect::<Result<Vec<_>, EngineError>>()?;
            crate::functions::eval(name, &vals, now)?
        }
        SelExpr::Op {
            op,
            left,
            right,
            ty,
        } => {
            let (Some(l), Some(r)) = (eval_expr(left, leaf, now)?, eval_expr(right, leaf, now)?)
            else {
                return Ok(None);
            };
            // An empty number (blobAsInt(0x)) makes the result null, as in Cassandra; an
            // empty string is a string.
            let text = |t: &ColumnType| matches!(t, ColumnType::Varchar | ColumnType::Ascii);
            if (l.is_empty() && !text(left.ty())) || (r.is_empty() && !text(right.ty())) {
                return Ok(None);
            }
            Some(arith::apply(*op, left.ty(), &l, right.ty(), &r, ty)?)
        }
        SelExpr::Negate(inner) => match eval_expr(inner, leaf, now)? {
            Some(v) if v.is_empty() => None,
            Some(v) => Some(arith::negate(inner.ty(), &v)?),
            None => None,
        },
        SelExpr::Field { udt, pos, .. } => eval_expr(udt, leaf, now)?
            .and_then(|v| crate::exec::tuple_field(&v, *pos).map(<[u8]>::to_vec)),
        SelExpr::Element { coll, key, .. } => {
            match (eval_expr(coll, leaf, now)?, eval_expr(key, leaf, now)?) {
                (Some(c), Some(k)) => crate::selection::element(coll.ty(), &c, &k),
                _ => None,
            }
        }
        SelExpr::Slice {
            coll,
            from,
            to,
            frozen,
        } => {
            let bound = |b: &Option<Box<SelExpr>>| match b {
                Some(e) => eval_expr(e, leaf, now),
                None => Ok(None),
            };
            let (from, to) = (bound(from)?, bound(to)?);
            match eval_expr(coll, leaf, now)? {
                Some(c) => {
                    crate::selection::slice(coll.ty(), &c, from.as_deref(), to.as_deref(), *frozen)
                }
                None => None,
            }
        }
        SelExpr::Collect { items, ty } => {
            let vals = items
                .iter()
                .map(|a| eval_expr(a, leaf, now))
                .collect::<Result<Vec<_>, EngineError>>()?;
            Some(crate::selection::collect(ty, vals))
        }
    })
}

#[cfg(test)]
#[path = "read_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "read/point_tests.rs"]
mod point_tests;
