//! Cassandra's tombstone thresholds on reads (`tombstone_warn_threshold`,
//! `tombstone_failure_threshold`): what a read counts as it scans, the client warning of a
//! read that met more than the warning threshold and the ReadFailure of one past the failure
//! threshold.
//!
//! # What counts (measured on Cassandra 5.0.9)
//! Cassandra counts, per read command, what its merged, unpurged row iterator hands on:
//! - every cell that is not live: a tombstone (a null written, a deleted column, a removed
//!   collection element) or an expired cell, in regular and static rows alike — 1 each,
//!   whichever columns the query selects;
//! - a row that has no live data, no dead cell and a deletion (a row deletion, an expired
//!   row marker, a collection's deletion): 1;
//! - a range deletion: 2 (its two bounds);
//! - nothing for a partition deletion, nor for what a deletion shadows (gone before
//!   counting), nor for tombstones older than `gc_grace_seconds` (purged at read).
//!
//! Live rows are counted too (before any `ALLOW FILTERING` filter), for the warning's text.
//! The read stops at the row that completes a page, LIMIT or PER PARTITION LIMIT, so what
//! lies beyond it is not counted: Peregrine learns of a full page (or partition) at the next
//! live row, so [`Tally::consumed`] keeps the counts as of each row returned and
//! [`Tally::rewind`] goes back to them.
//!
//! A command is one partition of a read by partition key (`IN` makes one per key, each with
//! its own warning) or the whole token range of a range read; one page is one command.
//!
//! The counting is [`Tally::row`]: one pass over a decoded row's cells, integer additions
//! only (no allocation), in the row loop of `read.rs`.

use super::{Flow, PagingState};
use crate::catalog::{ColumnKind, TableDef};
use crate::exec::Bindings;
use crate::plan::*;
use crate::row::{CellValue, Deletion, LocalSecs, PartitionHeader, Row};
use crate::EngineError;
use std::fmt::Write as _;

/// Cassandra's `tombstone_warn_threshold` and `tombstone_failure_threshold`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TombstoneThresholds {
    /// A read that met more tombstones than this gets a client warning. Default 1000.
    pub warn: u32,
    /// A read that meets more than this fails (ReadFailure, READ_TOO_MANY_TOMBSTONES).
    /// Default 100000.
    pub fail: u32,
}

impl Default for TombstoneThresholds {
    fn default() -> Self {
        TombstoneThresholds {
            warn: 1000,
            fail: 100_000,
        }
    }
}

/// The failure threshold was passed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TooManyTombstones;

/// The counts of one read command.
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    live: u32,
    tombstones: u32,
    /// The token of the last partition entered.
    token: i64,
}

/// What a read counts as it scans (see the module docs).
pub(crate) struct Tally {
    limits: TombstoneThresholds,
    /// Tombstones deleted before this (local seconds) were purged: not counted.
    gc_before: LocalSecs,
    /// False for reads the thresholds do not apply to (Cassandra's local system keyspaces,
    /// virtual tables).
    pub(crate) on: bool,
    now: Counts,
    /// The counts as of the last row returned (where a full page's read stops).
    at_consumed: Counts,
}

impl Tally {
    pub(crate) fn new(
        limits: TombstoneThresholds,
        t: &TableDef,
        now: LocalSecs,
        on: bool,
    ) -> Tally {
        let gc = u32::try_from(t.options.gc_grace_seconds.max(0)).unwrap_or(0);
        Tally {
            limits,
            gc_before: now.saturating_sub(gc),
            on: on && !matches!(t.keyspace.as_str(), "system" | "system_schema"),
            now: Counts::default(),
            at_consumed: Counts::default(),
        }
    }

    /// A new command starts (the next partition of a read by key, the next internal page of
    /// an aggregate, which goes on in the partition it is in).
    pub(crate) fn reset(&mut self) {
        let token = self.now.token;
        self.now = Counts {
            token,
            ..Counts::default()
        };
        self.at_consumed = self.now;
    }

    pub(crate) fn enter(&mut self, token: i64) {
        self.now.token = token;
    }

    #[inline]
    fn add(&mut self, n: u32) -> Result<(), TooManyTombstones> {
        self.now.tombstones = self.now.tombstones.saturating_add(n);
        if self.on && self.now.tombstones > self.limits.fail {
            return Err(TooManyTombstones);
        }
        Ok(())
    }

    /// Whether a dead value deleted (or expired) at `local_del` is still there to count.
    #[inline]
    fn kept(&self, local_del: LocalSecs) -> bool {
        local_del >= self.gc_before
    }

    /// Whether a cell (or element) value is dead at `now` and not yet purgeable.
    #[inline]
    fn dead(&self, v: &CellValue, now: LocalSecs) -> bool {
        match v {
            CellValue::Tombstone { local_del } => self.kept(*local_del),
            CellValue::Live {
                expiry: Some(e), ..
            } => e.expires_at <= now && self.kept(e.expires_at),
            _ => false,
        }
    }

    /// One decoded row under the partition's `outer` deletion; `live`: whether it has live
    /// data (as the read decided).
    #[inline]
    pub(crate) fn row(
        &mut self,
        row: &Row,
        outer: Option<Deletion>,
        now: LocalSecs,
        live: bool,
    ) -> Result<(), TooManyTombstones> {
        let shadow = Deletion::merge(row.deletion, outer);
        let shown = |ts: i64| !matches!(shadow, Some(d) if d.shadows(ts));
        let mut dead = 0u32;
        let mut complex_deletion = false;
        for c in &row.cells {
            match &c.value {
                CellValue::Complex(x) => {
                    for e in &x.elements {
                        if shown(e.ts) && self.dead(&e.value, now) {
                            dead += 1;
                        }
                    }
                    complex_deletion |=
                        matches!(x.deletion, Some(d) if shown(d.ts) && self.kept(d.local_del));
                }
                v => {
                    if shown(c.ts) && self.dead(v, now) {
                        dead += 1;
                    }
                }
            }
        }
        if dead > 0 {
            self.add(dead)?;
        }
        if live {
            self.now.live += 1;
        } else if dead == 0 {
            // A row with nothing live and nothing dead counts once if a deletion of its own
            // is left: its row deletion, its expired marker or a collection's deletion.
            let own_deletion = matches!(row.deletion, Some(d)
                if !matches!(outer, Some(o) if o.shadows(d.ts)) && self.kept(d.local_del));
            let expired_marker = matches!(row.marker, Some(m) if shown(m.ts)
                && matches!(m.expiry, Some(e) if e.expires_at <= now && self.kept(e.expires_at)));
            if own_deletion || expired_marker || complex_deletion {
                self.add(1)?;
            }
        }
        Ok(())
    }

    /// A live row with no dead cell and no deletion (`row::PlainRow`): what [`Tally::row`]
    /// counts of it.
    #[inline]
    pub(crate) fn live_row(&mut self) {
        self.now.live += 1;
    }

    /// The partition's static row, read with every partition.
    pub(crate) fn statics(
        &mut self,
        header: &PartitionHeader,
        now: LocalSecs,
    ) -> Result<(), TooManyTombstones> {
        if header.statics.is_empty() {
            return Ok(());
        }
        let as_row = StaticRow(header);
        let live = header.has_live_statics(now);
        as_row.count(self, now, live)
    }

    /// The range deletions of the partition that meet the clustering span `[lo, hi)`
    /// (encoded clusterings, `hi` empty: no end): 2 each.
    pub(crate) fn ranges(
        &mut self,
        header: &PartitionHeader,
        lo: &[u8],
        hi: &[u8],
    ) -> Result<(), TooManyTombstones> {
        let n = header
            .ranges
            .iter()
            .filter(|r| {
                self.kept(r.deletion.local_del)
                    && (hi.is_empty() || r.start.as_slice() < hi)
                    && (r.end.is_empty() || r.end.as_slice() > lo)
            })
            .count();
        if n > 0 {
            self.add(u32::try_from(n * 2).unwrap_or(u32::MAX))?;
        }
        Ok(())
    }

    /// A row was returned: a read that stops on a full page stops here.
    #[inline]
    pub(crate) fn consumed(&mut self) {
        self.at_consumed = self.now;
    }

    /// The read stopped (a full page) or left the partition (PER PARTITION LIMIT) at the
    /// last row returned: Cassandra's read never met what was read after it.
    pub(crate) fn rewind(&mut self) {
        self.now = self.at_consumed;
    }

    /// Whether the command so far met more tombstones than the warning threshold.
    #[inline]
    pub(crate) fn over_warn(&self) -> bool {
        self.on && self.now.tombstones > self.limits.warn
    }

    /// The warning of the command that ends here, if it met more tombstones than the
    /// warning threshold. `query`: Cassandra's rebuild of the command (`ReadCommand.toCQLString`).
    pub(crate) fn warning(&self, query: impl FnOnce() -> String) -> Option<String> {
        if !self.over_warn() {
            return None;
        }
        let c = self.now;
        let q = query();
        // Cassandra formats the query with `%1.512s`.
        let q = match q.char_indices().nth(512) {
            Some((i, _)) => &q[..i],
            None => &q,
        };
        Some(format!(
            "Read {} live rows and {} tombstone cells for query {q}; token {} (see tombstone_warn_threshold)",
            c.live, c.tombstones, c.token
        ))
    }
}

/// A partition's static cells counted as Cassandra counts its static row.
struct StaticRow<'h>(&'h PartitionHeader);

impl StaticRow<'_> {
    fn count(
        &self,
        tally: &mut Tally,
        now: LocalSecs,
        live: bool,
    ) -> Result<(), TooManyTombstones> {
        let h = self.0;
        let shown = |ts: i64| !matches!(h.deletion, Some(d) if d.shadows(ts));
        let mut dead = 0u32;
        for c in &h.statics {
            match &c.value {
                CellValue::Complex(x) => {
                    dead += x
                        .elements
                        .iter()
                        .filter(|e| shown(e.ts) && tally.dead(&e.value, now))
                        .count() as u32;
                }
                v => {
                    if shown(c.ts) && tally.dead(v, now) {
                        dead += 1;
                    }
                }
            }
        }
        if dead > 0 {
            tally.add(dead)?;
        }
        if live {
            tally.now.live += 1;
        }
        Ok(())
    }
}

/// Cassandra 5.0.9's answer to a read past `tombstone_failure_threshold`: ReadFailure from
/// this node with reason READ_TOO_MANY_TOMBSTONES (0x0001).
pub(crate) fn read_failure(node: std::net::IpAddr) -> EngineError {
    crate::index::read_failure(node, "READ_TOO_MANY_TOMBSTONES", 0x0001)
}

/// An aggregate read as Cassandra reads it: in internal pages of the page size asked for
/// (10000 rows for an unpaged GROUP BY; an unpaged aggregate of everything is one read), each
/// a command with its own count, warning and failure threshold, named with the position it
/// resumes from.
pub(super) struct InternalPages {
    size: u64,
    rows: u64,
    resume: Option<Resume>,
    /// The limits of the read as it started: every internal page names them.
    pub(super) limits: Option<Limits>,
}

impl InternalPages {
    pub(super) fn of(plan: &SelectPlan, page_size: Option<i32>) -> Option<InternalPages> {
        let Selection::Aggregates(a) = &plan.selection else {
            return None;
        };
        let asked = page_size.filter(|p| *p > 0).map(|p| p as u64);
        let size = match a.group_by {
            Some(_) => asked.unwrap_or(10_000),
            None => asked?,
        };
        Some(InternalPages {
            size,
            rows: 0,
            resume: None,
            limits: None,
        })
    }
}

/// The row an internal page (or the previous page) ended on: its partition key's components
/// and clustering values.
#[derive(Clone)]
struct Resume {
    pk: Vec<Vec<u8>>,
    clustering: Vec<Vec<u8>>,
}

/// A read command's limits as it starts (numbers only: its text is made only for a warning).
#[derive(Clone, Copy)]
pub(super) struct Limits {
    rows: Option<u64>,
    ppl: Option<u64>,
    page: Option<u64>,
}

impl super::SelectRun<'_> {
    /// Cassandra's limits of the command that starts now (the LIMIT left, the page left).
    pub(super) fn limits(&self) -> Limits {
        let page_left = self
            .page
            .or(self.asked_page)
            .map(|p| p.saturating_sub(self.sink.rows as u64));
        Limits {
            rows: self.remaining,
            ppl: self.ppl,
            page: page_left,
        }
    }

    /// The tombstone warning of a range read (one command over the token range).
    pub(super) fn range_warning(&mut self, limits: Limits) {
        if !self.tally.over_warn() {
            return;
        }
        let (plan, vals) = (self.plan, self.vals);
        let (tokens, resume) = (self.range_tokens, self.resume());
        let w = self.tally.warning(|| {
            let t = &plan.table;
            let mut pk: Vec<_> = t.partition_key().collect();
            pk.sort_by_key(|c| c.position);
            let names: Vec<_> = pk
                .iter()
                .map(|c| cql::quote_identifier(&c.name).into_owned())
                .collect();
            let func = format!("token({})", names.join(", "));
            let mut bounds = Vec::new();
            // A later internal page of an aggregate starts at the partition the previous
            // one ended in.
            if let Some(r) = &resume {
                let values: Vec<String> = pk
                    .iter()
                    .map(|c| literal(&c.ty, r.pk.get(c.position as usize).map(Vec::as_slice)))
                    .collect();
                bounds.push(format!("{func} >= token({})", values.join(", ")));
            }
            for (i, (incl, excl)) in [(">=", ">"), ("<=", "<")].into_iter().enumerate() {
                if i == 0 && resume.is_some() {
                    continue;
                }
                if let Some((tok, inclusive)) = tokens[i] {
                    let op = if inclusive { incl } else { excl };
                    bounds.push(format!("{func} {op} {tok}"));
                }
            }
            let limits = limits_text(plan, limits.rows, limits.ppl, limits.page);
            command_text(plan, vals, CommandKey::Range(&bounds), None, &limits)
        });
        self.warnings.extend(w);
    }

    /// Where the current internal page of an aggregate resumes (see [`InternalPages`]).
    /// Made only for a warning: it may read the row a page resumes after.
    fn resume(&self) -> Option<Resume> {
        if let Some(r) = self.internal.as_ref().and_then(|i| i.resume.as_ref()) {
            return Some(r.clone());
        }
        // A page after the first resumes after the row the previous one ended on.
        let key = self.resumed_from.as_deref()?;
        let d = crate::keys::decode_key(key)?;
        let pk = crate::token::split_partition_key(&d.pk, self.plan.table.pk_count())?
            .into_iter()
            .map(<[u8]>::to_vec)
            .collect();
        let clustering = match (d.is_header, self.store.get(key)) {
            (false, Ok(Some(v))) => Row::decode_owned(v)
                .map(|r| r.clustering)
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        Some(Resume { pk, clustering })
    }

    /// An aggregate read in internal pages, as Cassandra reads one: a row was folded in; a
    /// full internal page ends its command here.
    pub(super) fn internal_page_row(&mut self, pk_parts: &[&[u8]], clustering: Option<&[Vec<u8>]>) {
        let Some(ip) = self.internal.as_mut() else {
            return;
        };
        ip.rows += 1;
        if ip.rows < ip.size {
            return;
        }
        let started = ip.limits;
        let limits = started.unwrap_or_else(|| self.limits());
        match self.plan.partitions {
            PartitionSel::Keys(..) => self.command_warning(pk_parts, limits),
            PartitionSel::Range { .. } => self.range_warning(limits),
        }
        self.tally.reset();
        if let Some(ip) = self.internal.as_mut() {
            ip.rows = 0;
            ip.resume = Some(Resume {
                pk: pk_parts.iter().map(|p| p.to_vec()).collect(),
                clustering: clustering.map(<[Vec<u8>]>::to_vec).unwrap_or_default(),
            });
        }
    }

    /// The failure threshold was passed: the read fails, unless the page was already full
    /// (Cassandra's read would have stopped at its last row and never met these).
    pub(super) fn too_many_tombstones(&mut self) -> Result<Flow, EngineError> {
        if self.page.is_some_and(|p| self.sink.rows as u64 >= p) {
            self.tally.rewind();
            self.next_state = Some(PagingState {
                last_key: self.sink.last_key.to_vec(),
                remaining: self.remaining,
                in_partition: self.last_in_part,
            });
            return Ok(Flow::Stop);
        }
        Err(read_failure(self.node))
    }

    /// The tombstone warning of the command that read partition `pk` alone.
    pub(super) fn partition_warning(&mut self, pk: &[u8], limits: Limits) {
        // Nearly always: nothing to say, and nothing to allocate.
        if !self.tally.over_warn() {
            return;
        }
        let parts =
            crate::token::split_partition_key(pk, self.plan.table.pk_count()).unwrap_or_default();
        self.command_warning(&parts, limits);
    }

    /// The tombstone warning of a command over the one partition whose key is `parts`.
    fn command_warning(&mut self, parts: &[&[u8]], limits: Limits) {
        let (plan, vals) = (self.plan, self.vals);
        // A later internal page of an aggregate resumes after the row the previous one
        // ended on, when in this partition.
        let resume = self
            .resume()
            .filter(|r| r.pk.iter().map(Vec::as_slice).eq(parts.iter().copied()));
        let resume = resume.as_ref().map(|r| r.clustering.as_slice());
        let w = self.tally.warning(|| {
            let limits = limits_text(plan, limits.rows, limits.ppl, limits.page);
            command_text(plan, vals, CommandKey::Partition(parts), resume, &limits)
        });
        self.warnings.extend(w);
    }
}

// ---------------------------------------------------------------------------------------
// Cassandra's rebuild of a read command (`ReadCommand.toCQLString`), for the warning.

/// What the command's WHERE clause starts with.
pub(crate) enum CommandKey<'a> {
    /// One partition: its key's component values (wire bytes).
    Partition(&'a [&'a [u8]]),
    /// A token range: its bounds as written (`token(k) > -5`), already rendered.
    Range(&'a [String]),
}

/// `SELECT <columns> FROM ks.t WHERE ... [ORDER BY ...] <limits> ALLOW FILTERING`.
pub(crate) fn command_text(
    plan: &SelectPlan,
    vals: &Bindings,
    key: CommandKey,
    resume: Option<&[Vec<u8>]>,
    limits: &str,
) -> String {
    let t = &*plan.table;
    let q = |s: &str| cql::quote_identifier(s).into_owned();
    let mut out = format!(
        "SELECT {} FROM {}.{}",
        plan.queried_columns,
        q(&t.keyspace),
        q(&t.name)
    );
    let mut clauses: Vec<String> = Vec::new();
    match key {
        CommandKey::Partition(parts) => {
            let mut pk: Vec<_> = t.partition_key().collect();
            pk.sort_by_key(|c| c.position);
            for c in pk {
                let v = parts.get(c.position as usize).copied();
                clauses.push(format!("{} = {}", q(&c.name), literal(&c.ty, v)));
            }
        }
        CommandKey::Range(bounds) => clauses.extend(bounds.iter().cloned()),
    }
    clustering_clauses(t, plan, vals, resume, &mut clauses);
    for f in &plan.filters {
        if let Some(s) = filter_clause(t, f, vals) {
            clauses.push(s);
        }
    }
    if !clauses.is_empty() {
        out.push_str(" WHERE ");
        out.push_str(&clauses.join(" AND "));
    }
    if plan.reversed {
        let mut cl: Vec<_> = t
            .columns
            .iter()
            .filter(|c| c.kind == ColumnKind::Clustering)
            .collect();
        cl.sort_by_key(|c| c.position);
        let order: Vec<String> = cl
            .iter()
            .map(|c| format!("{} {}", q(&c.name), if c.desc { "ASC" } else { "DESC" }))
            .collect();
        if !order.is_empty() {
            let _ = write!(out, " ORDER BY {}", order.join(", "));
        }
    }
    out.push_str(limits);
    out.push_str(" ALLOW FILTERING");
    out
}

fn literal(ty: &proto::types::ColumnType, v: Option<&[u8]>) -> String {
    crate::masking::cql_literal(ty, v)
}

fn resolved(src: &Src, vals: &Bindings) -> Option<Vec<u8>> {
    crate::exec::resolve(src, vals).ok().flatten()
}

/// The clustering restrictions; `resume`: the clustering of the row a previous internal page
/// ended on, which replaces the slice's start (its end when reversed), exclusive.
fn clustering_clauses(
    t: &TableDef,
    plan: &SelectPlan,
    vals: &Bindings,
    resume: Option<&[Vec<u8>]>,
    out: &mut Vec<String>,
) {
    let c = &plan.clustering;
    let mut cl: Vec<_> = t
        .columns
        .iter()
        .filter(|c| c.kind == ColumnKind::Clustering)
        .collect();
    cl.sort_by_key(|c| c.position);
    let name = |i: usize| {
        cl.get(i)
            .map(|c| cql::quote_identifier(&c.name).into_owned())
    };
    for (i, kv) in c.eq.iter().enumerate() {
        let (Some(n), Some(col)) = (name(i), cl.get(i)) else {
            continue;
        };
        match kv {
            KeyValues::Eq(s) => out.push(format!(
                "{n} = {}",
                literal(&col.ty, resolved(s, vals).as_deref())
            )),
            KeyValues::In(items) => {
                let items: Vec<String> = items
                    .iter()
                    .map(|s| literal(&col.ty, resolved(s, vals).as_deref()))
                    .collect();
                out.push(format!("{n} IN ({})", items.join(", ")));
            }
            KeyValues::InBind(..) => {}
        }
    }
    // A slice prints column by column, each column's lower bound then its upper one: Cassandra
    // prints `(c1, c2) > (1, 2)` as `c1 > 1 AND c2 > 2`.
    let first = c.eq.len();
    let resumed: Option<Vec<Option<Vec<u8>>>> =
        resume.map(|r| r.iter().skip(first).map(|v| Some(v.clone())).collect());
    let bound_values = |b: &Option<SliceBound>| -> Option<(Vec<Option<Vec<u8>>>, bool)> {
        b.as_ref().map(|b| {
            (
                b.values.iter().map(|s| resolved(s, vals)).collect(),
                b.inclusive,
            )
        })
    };
    let (mut start, mut end) = (bound_values(&c.start), bound_values(&c.end));
    if let Some(r) = resumed {
        if plan.reversed {
            end = Some((r, false));
        } else {
            start = Some((r, false));
        }
    }
    let width = [&start, &end]
        .iter()
        .filter_map(|b| b.as_ref().map(|b| b.0.len()))
        .max()
        .unwrap_or(0);
    for i in 0..width {
        let (Some(n), Some(col)) = (name(first + i), cl.get(first + i)) else {
            continue;
        };
        for (bound, (op_incl, op_excl)) in [(&start, (">=", ">")), (&end, ("<=", "<"))] {
            let Some((values, inclusive)) = bound else {
                continue;
            };
            let Some(v) = values.get(i) else { continue };
            let op = if *inclusive { op_incl } else { op_excl };
            out.push(format!("{n} {op} {}", literal(&col.ty, v.as_deref())));
        }
    }
}

fn filter_clause(t: &TableDef, f: &Filter, vals: &Bindings) -> Option<String> {
    let c = t.columns.get(f.column)?;
    let n = cql::quote_identifier(&c.name);
    let op = f.op.symbol();
    let elem_ty = |ty: &proto::types::ColumnType, key: bool| -> proto::types::ColumnType {
        use proto::types::ColumnType as T;
        match ty {
            T::List(e) | T::Set(e) => (**e).clone(),
            T::Map(k, v) => {
                if key {
                    (**k).clone()
                } else {
                    (**v).clone()
                }
            }
            other => other.clone(),
        }
    };
    let value = |ty: &proto::types::ColumnType| literal(ty, resolved(&f.value, vals).as_deref());
    Some(match &f.target {
        FilterTarget::Whole => format!("{n} {op} {}", value(&c.ty)),
        FilterTarget::Contains => format!("{n} CONTAINS {}", value(&elem_ty(&c.ty, false))),
        FilterTarget::ContainsKey => format!("{n} CONTAINS KEY {}", value(&elem_ty(&c.ty, true))),
        FilterTarget::Element(k) => format!(
            "{n}[{}] {op} {}",
            literal(&elem_ty(&c.ty, true), resolved(k, vals).as_deref()),
            value(&elem_ty(&c.ty, false))
        ),
        // Cassandra prints an IN filter's values as a list.
        FilterTarget::In(items) => {
            let items: Vec<String> = items
                .iter()
                .map(|s| literal(&c.ty, resolved(s, vals).as_deref()))
                .collect();
            format!("{n} IN [{}]", items.join(", "))
        }
        FilterTarget::InList => {
            let list = proto::types::ColumnType::List(Box::new(c.ty.clone()));
            format!("{n} IN {}", value(&list))
        }
    })
}

/// The text `ALLOW FILTERING` follows: Cassandra's `DataLimits.toString()` with the space
/// before it (a command with no limits at all prints nothing; an aggregate's unpaged limits
/// print an empty text after the space).
pub(crate) fn limits_text(
    plan: &SelectPlan,
    row_limit: Option<u64>,
    ppl: Option<u64>,
    page: Option<u64>,
) -> String {
    let aggregate = match &plan.selection {
        Selection::Aggregates(a) => Some(a.group_by.is_some()),
        Selection::Rows(_) => None,
    };
    let mut parts: Vec<String> = Vec::new();
    match aggregate {
        // GROUP BY: group limits, then the rows of one internal page (10000 unpaged).
        Some(true) => {
            let group_limit = match (row_limit, page) {
                (Some(l), Some(p)) => Some(l.min(p)),
                (l, p) => l.or(p),
            };
            if let Some(g) = group_limit {
                parts.push(format!("GROUP LIMIT {g}"));
            }
            if let Some(p) = ppl {
                parts.push(format!("GROUP PER PARTITION LIMIT {p}"));
            }
            parts.push(format!("LIMIT {}", page.unwrap_or(10_000)));
        }
        // An aggregate of everything: paged internally by the page size; unpaged, limits
        // that print as nothing.
        Some(false) => {
            if let Some(p) = page {
                parts.push(format!("LIMIT {p}"));
            }
            return format!(" {}", parts.join(" "));
        }
        None => {
            let l = match (row_limit, page) {
                (Some(l), Some(p)) => Some(l.min(p)),
                (l, p) => l.or(p),
            };
            if let Some(l) = l {
                parts.push(format!("LIMIT {l}"));
            }
            if plan.distinct {
                parts.push("PER PARTITION LIMIT 1".into());
            } else if let Some(p) = ppl {
                parts.push(format!("PER PARTITION LIMIT {p}"));
            }
        }
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" {}", parts.join(" "))
    }
}

/// `SELECT <this> FROM`: `*` for a wildcard or a selection of key columns only, else the
/// static then regular columns the selection reads, each kind by name (Cassandra's
/// `ColumnFilter` order).
pub(crate) fn queried_columns(t: &TableDef, names: Option<&[&str]>) -> String {
    let Some(names) = names else {
        return "*".into();
    };
    let mut cols: Vec<_> = t
        .columns
        .iter()
        .filter(|c| matches!(c.kind, ColumnKind::Static | ColumnKind::Regular))
        .filter(|c| names.contains(&c.name.as_str()))
        .collect();
    if cols.is_empty() {
        return "*".into();
    }
    cols.sort_by(|a, b| {
        (a.kind != ColumnKind::Static, a.name.as_bytes())
            .cmp(&(b.kind != ColumnKind::Static, b.name.as_bytes()))
    });
    cols.iter()
        .map(|c| cql::quote_identifier(&c.name).into_owned())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether the partition `prefix` has a live row, read as SELECT DISTINCT reads it (up to
/// its first live row), counting what it meets; `None` when that passed the failure
/// threshold. `queried`: the static columns a DISTINCT names (`None`: it names none), when a
/// row alive only through cells older than its expired marker is no live row, as for any
/// read naming some columns (`Row::is_live_for`; 5.0.9 does not list such a partition for
/// `SELECT DISTINCT k, s` and does for `SELECT DISTINCT k`).
pub(crate) fn distinct_live_row(
    store: &dyn storage::Storage,
    t: &TableDef,
    prefix: &[u8],
    header: &PartitionHeader,
    now: crate::Now,
    (auths, queried): (Option<&crate::visibility::Authorizations>, Option<&[u16]>),
    tally: &mut Tally,
) -> Result<Option<bool>, EngineError> {
    if tally.ranges(header, &[], &[]).is_err() {
        return Ok(None);
    }
    for judged in crate::exec::judged_rows(store, t, prefix, header, now, false, auths) {
        let (row, outer, live) = judged?;
        let live =
            live && queried.is_none_or(|q| row.is_live_for(now.secs, outer, |id| q.contains(&id)));
        if tally.row(&row, outer, now.secs, live).is_err() {
            return Ok(None);
        }
        if live {
            return Ok(Some(true));
        }
    }
    Ok(Some(false))
}

#[cfg(test)]
mod tests {
    use super::TombstoneThresholds;
    use crate::tests::{engine, q};
    use crate::{DbError, Outcome};

    fn warnings(o: Result<Outcome, DbError>) -> Vec<String> {
        match o {
            Ok(Outcome::Rows(rs)) => rs.warnings,
            other => panic!("expected rows, got {other:?}"),
        }
    }

    fn setup(warn: u32, fail: u32) -> crate::Engine {
        let e = engine();
        e.set_tombstone_thresholds(TombstoneThresholds { warn, fail });
        q(&e, None, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}").unwrap();
        q(
            &e,
            Some("ks"),
            "CREATE TABLE t (k int, c int, v int, s set<int>, st int static, PRIMARY KEY (k, c))",
        )
        .unwrap();
        e
    }

    #[test]
    fn each_kind_of_tombstone_counts_as_in_cassandra() {
        let e = setup(0, 1000);
        let count = |e: &crate::Engine, query: &str| -> Option<String> {
            warnings(q(e, Some("ks"), query)).into_iter().next()
        };
        // A null cell of a live row: 1, and the row is live.
        q(
            &e,
            Some("ks"),
            "INSERT INTO t (k, c, v) VALUES (1, 1, null)",
        )
        .unwrap();
        let w = count(&e, "SELECT * FROM t WHERE k = 1").unwrap();
        assert!(w.starts_with("Read 1 live rows and 1 tombstone cells for query SELECT * FROM ks.t WHERE k = 1 ALLOW FILTERING; token "), "{w}");
        // A row deletion: 1; a range deletion: 2; a static null: 1; removed elements: 1 each.
        q(&e, Some("ks"), "DELETE FROM t WHERE k = 2 AND c = 1").unwrap();
        q(
            &e,
            Some("ks"),
            "DELETE FROM t WHERE k = 2 AND c > 5 AND c < 9",
        )
        .unwrap();
        q(&e, Some("ks"), "INSERT INTO t (k, st) VALUES (2, null)").unwrap();
        q(
            &e,
            Some("ks"),
            "UPDATE t SET s = s - {1, 2} WHERE k = 2 AND c = 3",
        )
        .unwrap();
        let w = count(&e, "SELECT v FROM t WHERE k = 2").unwrap();
        assert!(w.starts_with("Read 0 live rows and 6 tombstone cells for query SELECT v FROM ks.t WHERE k = 2 ALLOW FILTERING"), "{w}");
        // A partition deletion counts nothing and hides what it shadows.
        q(&e, Some("ks"), "DELETE FROM t WHERE k = 2").unwrap();
        assert_eq!(count(&e, "SELECT * FROM t WHERE k = 2"), None);
    }

    #[test]
    fn past_the_failure_threshold_the_read_fails() {
        let e = setup(1000, 3);
        for c in 0..3 {
            q(
                &e,
                Some("ks"),
                &format!("DELETE FROM t WHERE k = 1 AND c = {c}"),
            )
            .unwrap();
        }
        assert!(warnings(q(&e, Some("ks"), "SELECT * FROM t WHERE k = 1")).is_empty());
        q(&e, Some("ks"), "DELETE FROM t WHERE k = 1 AND c = 3").unwrap();
        let err = q(&e, Some("ks"), "SELECT * FROM t WHERE k = 1").unwrap_err();
        assert!(
            matches!(&err, DbError::ReadFailure { reasons, num_failures: 1, .. } if reasons[0].code == 1),
            "{err:?}"
        );
        // The local system keyspaces are exempt, as in Cassandra.
        assert!(q(&e, None, "SELECT * FROM system_schema.tables").is_ok());
    }
}
