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
//! The read stops at the row that completes a page or LIMIT, so what lies beyond it is not
//! counted; [`Tally::consumed`] keeps the counts as of each row returned for that.
//!
//! A command is one partition of a read by partition key (`IN` makes one per key, each with
//! its own warning) or the whole token range of a range read; one page is one command.
//!
//! The counting is [`Tally::row`]: one pass over a decoded row's cells, integer additions
//! only (no allocation), in the row loop of `read.rs`.

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
    /// The counts as of the last row returned (where a full page's read stopped).
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

    /// A new command starts (the next partition of a read by key).
    pub(crate) fn reset(&mut self) {
        self.now = Counts::default();
        self.at_consumed = Counts::default();
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

    /// The warning of the command that ends here, if it met more tombstones than the
    /// warning threshold. `full_page`: it stopped on a full page (so it read no further than
    /// its last row). `query`: Cassandra's rebuild of the command (`ReadCommand.toCQLString`).
    pub(crate) fn warning(
        &self,
        full_page: bool,
        query: impl FnOnce() -> String,
    ) -> Option<String> {
        let c = if full_page {
            self.at_consumed
        } else {
            self.now
        };
        if !self.on || c.tombstones <= self.limits.warn {
            return None;
        }
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
/// this node with reason READ_TOO_MANY_TOMBSTONES (0x0001). The consistency is a placeholder
/// the server replaces with the request's.
pub(crate) fn read_failure(node: std::net::IpAddr) -> EngineError {
    EngineError::Db(proto::DbError::ReadFailure {
        message: format!(
            "Operation failed - received 0 responses and 1 failures: READ_TOO_MANY_TOMBSTONES from /{node}:7000"
        ),
        consistency: proto::request::Consistency::LocalOne,
        received: 0,
        block_for: 1,
        num_failures: 1,
        reasons: vec![proto::error::FailureReason {
            endpoint: node,
            code: 0x0001,
        }],
        data_present: false,
    })
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
    clustering_clauses(t, &plan.clustering, vals, &mut clauses);
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

fn clustering_clauses(t: &TableDef, c: &ClusteringSel, vals: &Bindings, out: &mut Vec<String>) {
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
    let first = c.eq.len();
    for (bound, (op_incl, op_excl)) in [(&c.start, (">=", ">")), (&c.end, ("<=", "<"))] {
        let Some(b) = bound else { continue };
        let op = if b.inclusive { op_incl } else { op_excl };
        let parts: Vec<(String, String)> = b
            .values
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let col = cl.get(first + i)?;
                Some((
                    name(first + i)?,
                    literal(&col.ty, resolved(s, vals).as_deref()),
                ))
            })
            .collect();
        match parts.as_slice() {
            [(n, v)] => out.push(format!("{n} {op} {v}")),
            [] => {}
            many => {
                let names: Vec<&str> = many.iter().map(|(n, _)| n.as_str()).collect();
                let values: Vec<&str> = many.iter().map(|(_, v)| v.as_str()).collect();
                out.push(format!(
                    "({}) {op} ({})",
                    names.join(", "),
                    values.join(", ")
                ));
            }
        }
    }
}

fn filter_clause(t: &TableDef, f: &Filter, vals: &Bindings) -> Option<String> {
    let c = t.columns.get(f.column)?;
    let n = cql::quote_identifier(&c.name);
    let op = match f.op {
        FilterOp::Eq => "=",
        FilterOp::Ne => "!=",
        FilterOp::Lt => "<",
        FilterOp::Le => "<=",
        FilterOp::Gt => ">",
        FilterOp::Ge => ">=",
    };
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
/// threshold.
#[allow(clippy::too_many_arguments)]
pub(crate) fn distinct_live_row(
    store: &dyn storage::Storage,
    t: &TableDef,
    prefix: &[u8],
    header: &PartitionHeader,
    now: crate::Now,
    auths: Option<&crate::visibility::Authorizations>,
    tally: &mut Tally,
) -> Result<Option<bool>, EngineError> {
    use std::ops::Bound;
    let rp = crate::keys::row_key(prefix, &[]);
    let end = crate::keys::prefix_end(&rp);
    if tally.ranges(header, &[], &[]).is_err() {
        return Ok(None);
    }
    let strict = crate::view::strict_liveness(t);
    for item in store.scan(
        Bound::Included(rp.as_slice()),
        Bound::Excluded(end.as_slice()),
        false,
    ) {
        let (key, value) = item?;
        let mut row = Row::decode(&value).map_err(EngineError::corrupt)?;
        if let Some(a) = auths {
            row.hide(a);
        }
        let outer = header.deletion_for(&key[rp.len()..]);
        let live =
            row.is_live(now.secs, outer) && (!strict || crate::view::marker_live(&row, now.secs));
        if tally.row(&row, outer, now.secs, live).is_err() {
            return Ok(None);
        }
        if live {
            return Ok(Some(true));
        }
    }
    Ok(Some(false))
}
