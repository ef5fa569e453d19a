//! Lightweight transactions on one node: `IF NOT EXISTS`, `IF EXISTS` and `IF <conditions>`
//! evaluated against the stored row under the partition's write lock, and the result Cassandra
//! answers with (`[applied]`, and when not applied, what the conditions saw).
//!
//! Conditions follow Cassandra 5.0: on a whole column (`=`, `!=`, `<`, `<=`, `>`, `>=`, `IN`,
//! `CONTAINS`, `CONTAINS KEY`), on a list or map element (`l[i]`, `m[k]`) and on a UDT field
//! (`u.f`); a missing row, element or field is null, and `null = null` holds. Static columns
//! are read from the partition even when the conditioned row does not exist.

use crate::catalog::{ColumnDef, ColumnKind, TableDef};
use crate::exec::{self, decode_list_elements, resolve};
use crate::javafmt::{byte_buffer_hash_code, java_hash_bucket, java_hash_buckets};
use crate::plan::{
    wire_columns, ColumnCondition, CondOp, CondTarget, Condition, FilterOp, KeyValues,
    OutputColumn, WritePlan,
};
use crate::row::{PartitionHeader, Row};
use crate::{keys, token, types, Engine, EngineError, Mutations, Now, Outcome, ResultSet};
use proto::types::ColumnType;
use std::cmp::Ordering;

use crate::exec::Bindings;

/// What a conditional write reads: the partition's header (statics, deletions), the
/// conditioned row if it is live, and the row's key.
pub(crate) struct Current {
    header: PartitionHeader,
    row: Option<Row>,
    /// The partition or range deletion over the row.
    outer: Option<crate::row::Deletion>,
    /// The serialized partition key and its component count (split only when a condition
    /// or the answer shows a component).
    pk: (Vec<u8>, usize),
    /// Clustering values of the conditioned row (empty for a partition-level write).
    clustering: Vec<Vec<u8>>,
    /// The write names no row, only the partition (its static columns): EXISTS then asks
    /// whether the partition's statics exist.
    static_row: bool,
    /// The partition's first live row, read only when the
    /// conditions are on static columns alone (or IF EXISTS of the static row) and no named row
    /// exists: Cassandra's read for such a condition takes the partition's first row, to tell
    /// a partition with data but no statics from no partition, and shows that row's key (and
    /// its regular columns, when `regulars`) when the write is not applied.
    first_row: Option<Row>,
    /// The partition or range deletion over `first_row`.
    first_outer: Option<crate::row::Deletion>,
    /// The read fetched regular columns (the write, or in a BATCH any statement of it,
    /// writes a regular row: Cassandra's `CQL3CasRequest.columnsToRead`), so the first row
    /// shows its regular values; else its key alone.
    regulars: bool,
    /// What the read found in storage, by key (`None`: absent), under the partition's lock:
    /// the write that follows under the same lock merges into these instead of reading them
    /// again (see [`Engine::apply_holding`]).
    pub(crate) stored: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

impl Current {
    /// The value of `c` the conditions see (live at `now`), or `None`.
    fn value(&self, c: &ColumnDef, now: Now) -> Option<Vec<u8>> {
        match c.kind {
            ColumnKind::PartitionKey => token::split_partition_key(&self.pk.0, self.pk.1)?
                .get(c.position as usize)
                .map(|v| v.to_vec()),
            ColumnKind::Clustering => self.clustering.get(c.position as usize).cloned(),
            ColumnKind::Static => self
                .header
                .static_cell(c.id, now.secs)
                .and_then(|x| crate::row::value_of(x, &c.ty, now.secs))
                .map(|v| v.into_owned()),
            ColumnKind::Regular => {
                let row = self.row.as_ref()?;
                row.cell(c.id, now.secs, self.outer)
                    .and_then(|x| crate::row::value_of(x, &c.ty, now.secs))
                    .map(|v| v.into_owned())
            }
        }
    }

    /// The value of regular column `c` in the partition's first row, when the read fetched
    /// regular columns (`regulars`).
    fn first_row_value(&self, c: &ColumnDef, now: Now) -> Option<Vec<u8>> {
        let row = self.first_row.as_ref().filter(|_| self.regulars)?;
        row.cell(c.id, now.secs, self.first_outer)
            .and_then(|x| crate::row::value_of(x, &c.ty, now.secs))
            .map(|v| v.into_owned())
    }
}

/// The clustering values of the row a conditional write names, and whether it names the
/// partition's static row instead (a write of static columns alone); refused, as Cassandra
/// refuses it, when an IN on the clustering columns names several rows (or none).
fn conditioned_row(plan: &WritePlan, vals: &Bindings) -> Result<(Vec<Vec<u8>>, bool), EngineError> {
    let t = &plan.table;
    let what = match plan.kind {
        crate::plan::WriteKind::Delete { .. } => "deletions",
        _ => "updates",
    };
    let clust_cols: Vec<_> = t.clustering().collect();
    let mut clustering = Vec::new();
    let several = || {
        EngineError::invalid(format!(
            "IN on the clustering key columns is not supported with conditional {what}"
        ))
    };
    for (kv, col) in plan.clustering.eq.iter().zip(&clust_cols) {
        // `c IN ?` is an IN whatever the list holds (Cassandra 5.0.9 takes a literal IN of
        // one value as an equality, not a marker's).
        if matches!(kv, KeyValues::InBind(..)) {
            return Err(several());
        }
        let v = exec::expand(kv, vals, &col.name)?;
        // An empty IN names no row: refused as an IN of several values.
        if v.len() != 1 {
            return Err(several());
        }
        clustering.push(v.into_iter().next().unwrap_or_default());
    }
    // A multi-column IN of one tuple names one row, as Cassandra takes it.
    if let Some(tv) = &plan.clustering.tuples {
        let tuples = exec::tuples_of(tv, vals)?;
        let [tuple] = tuples.as_slice() else {
            return Err(several());
        };
        for (src, col) in tuple.iter().zip(&clust_cols[clustering.len()..]) {
            clustering.push(exec::resolve_key(src, vals, &col.name)?);
        }
    }
    // A static compact table's rows are its partitions' static cells, and a dense one's
    // clustering prefix names a row of its own (see `compact`).
    let static_row = if t.compact {
        clust_cols.is_empty()
    } else {
        clustering.len() < clust_cols.len()
    };
    Ok((clustering, static_row))
}

/// Cassandra 5.0.9's checks of the elements its conditions name, made as it binds them,
/// before it reads (ColumnCondition.bindElement), in the statement's order: a null map key or
/// list index, and a negative index of a non-frozen list (a frozen list's is refused when its
/// value is read, see `element`).
fn check_bound_elements(
    t: &TableDef,
    cond: Option<&Condition>,
    vals: &Bindings,
) -> Result<(), EngineError> {
    let Some(Condition::Columns(conds)) = cond else {
        return Ok(());
    };
    for c in conds {
        let CondTarget::Element(key) = &c.target else {
            continue;
        };
        let col = &t.columns[c.column];
        let is_map = matches!(col.ty, ColumnType::Map(..));
        let Some(key) = resolve(key, vals)? else {
            return Err(EngineError::invalid(format!(
                "Invalid null value for {} element access",
                if is_map { "map" } else { "list" }
            )));
        };
        if !is_map && exec::multi_cell_kind(col).is_some() {
            negative_index(&key)?;
        }
    }
    Ok(())
}

/// Cassandra's error for an unset value a condition compares with (raised as the condition
/// is tried, so not for one after a condition that does not hold).
fn unset_in_condition() -> EngineError {
    EngineError::invalid("Invalid 'unset' value in condition")
}

/// Refuses a negative list index as Cassandra does.
fn negative_index(key: &[u8]) -> Result<(), EngineError> {
    match <[u8; 4]>::try_from(key).map(i32::from_be_bytes) {
        Ok(i) if i < 0 => Err(EngineError::invalid(format!(
            "Invalid negative list index {i}"
        ))),
        _ => Ok(()),
    }
}

/// What the conditions of a BATCH ask of one row of their partition, as Cassandra's CAS
/// request keys them (CQL3CasRequest).
#[derive(Debug, Clone, Copy, PartialEq)]
enum RowAsk {
    Exists,
    NotExists,
    Columns,
}

/// The rows the conditions of a BATCH name so far (`None`: the static row), each with what
/// they ask of it.
#[derive(Default)]
pub(crate) struct BatchRows(Vec<(Option<Vec<Vec<u8>>>, RowAsk)>);

impl BatchRows {
    /// Adds the rows one statement of a conditional BATCH names, in the batch's order, as
    /// Cassandra 5.0.9 does before it reads anything: any statement's IN on the clustering
    /// columns is refused; IF [NOT] EXISTS asks of the row the statement writes (the static
    /// row for a write of static columns alone), conditions on regular columns of that row,
    /// conditions on static columns of the static row; a row asked two different things is
    /// refused with Cassandra's message (which names IF NOT EXISTS when conditions follow an
    /// IF EXISTS).
    pub(crate) fn add(&mut self, plan: &WritePlan, vals: &Bindings) -> Result<(), EngineError> {
        let (clustering, static_row) = conditioned_row(plan, vals)?;
        let row = (!static_row).then_some(clustering);
        let t = &plan.table;
        let asks: Vec<(Option<Vec<Vec<u8>>>, RowAsk)> = match &plan.condition {
            None => Vec::new(),
            Some(Condition::IfExists) => vec![(row, RowAsk::Exists)],
            Some(Condition::IfNotExists) => vec![(row, RowAsk::NotExists)],
            Some(Condition::Columns(cs)) => {
                let is_static =
                    |c: &ColumnCondition| t.columns[c.column].kind == ColumnKind::Static;
                let mut asks = Vec::new();
                if cs.iter().any(|c| !is_static(c)) {
                    asks.push((row, RowAsk::Columns));
                }
                if cs.iter().any(is_static) {
                    asks.push((None, RowAsk::Columns));
                }
                asks
            }
        };
        for (row, ask) in asks {
            let Some((_, before)) = self.0.iter().find(|(r, _)| *r == row) else {
                self.0.push((row, ask));
                continue;
            };
            let message = match (*before, ask) {
                (a, b) if a == b => continue,
                (RowAsk::Columns, RowAsk::Exists) => {
                    "Cannot mix IF conditions and IF EXISTS for the same row"
                }
                (RowAsk::Columns, _) | (_, RowAsk::Columns) => {
                    "Cannot mix IF conditions and IF NOT EXISTS for the same row"
                }
                _ => "Cannot mix IF EXISTS and IF NOT EXISTS conditions for the same row",
            };
            return Err(EngineError::invalid(message));
        }
        check_bound_elements(t, plan.condition.as_ref(), vals)
    }
}

impl Engine {
    /// Reads what the conditions of `plan` are checked against, in `parts` (the write's
    /// partitions; the caller holds their locks).
    pub(crate) fn read_current(
        &self,
        plan: &WritePlan,
        parts: &[exec::PartitionRef],
        vals: &Bindings,
        now: Now,
    ) -> Result<Current, EngineError> {
        self.read_current_for(plan, parts, vals, now, writes_regulars(plan))
    }

    /// [`Self::read_current`] for a write whose request writes regular columns or not
    /// (`regulars`: in a BATCH, any of its statements does, as Cassandra reads once for all).
    fn read_current_for(
        &self,
        plan: &WritePlan,
        parts: &[exec::PartitionRef],
        vals: &Bindings,
        now: Now,
        regulars: bool,
    ) -> Result<Current, EngineError> {
        let t = &plan.table;
        let what = match plan.kind {
            crate::plan::WriteKind::Delete { .. } => "deletions",
            _ => "updates",
        };
        // `k IN ?` is an IN whatever the list holds, as `c IN ?` is (see `conditioned_row`).
        let in_marker = plan
            .partition
            .iter()
            .any(|k| matches!(k, KeyValues::InBind(..)));
        if parts.len() > 1 || in_marker {
            return Err(EngineError::invalid(format!(
                "IN on the partition key is not supported with conditional {what}"
            )));
        }
        let p = parts.first().ok_or_else(|| {
            EngineError::invalid(format!(
                "IN on the partition key is not supported with conditional {what}"
            ))
        })?;
        let mut stored = Vec::with_capacity(2);
        // A table that never had a header has none here either: a header write sets the
        // table's bit before it is written, under this partition's lock (see `headers`).
        let hk = keys::header_key(&p.prefix);
        let h = if self.headers.may_have(t.id) {
            self.storage.get(&hk)?
        } else {
            None
        };
        let mut header = match &h {
            Some(h) => PartitionHeader::decode(h).map_err(EngineError::corrupt)?,
            None => PartitionHeader::default(),
        };
        t.drop_dropped_cells(&mut header.statics);
        stored.push((hk, h));
        let pk = (p.pk.clone(), t.pk_count());
        let (clustering, static_row) = conditioned_row(plan, vals)?;
        let mut row = None;
        let mut outer = header.deletion;
        if !static_row {
            let enc = exec::encode_clustering(t, &clustering);
            outer = header.deletion_for(&enc);
            let rk = keys::row_key(&p.prefix, &enc);
            let v = self.storage.get(&rk)?;
            if let Some(v) = &v {
                let mut r = Row::decode(v).map_err(EngineError::corrupt)?;
                // 5.0.9's read for the condition skips a dropped column's cells too.
                t.drop_dropped_cells(&mut r.cells);
                if r.is_live(now.secs, outer) {
                    row = Some(r);
                }
            }
            stored.push((rk, v));
        }
        // (Also beside a live named row: a BATCH whose conditions are all on static columns
        // shows the first row, see `batch_not_applied`.)
        let first_row = if reads_first_row(t, plan.condition.as_ref(), static_row) {
            // Cassandra's read fetches regular columns only for a write of them; without them
            // a row shows only by its marker.
            let by_marker = !regulars;
            Self::first_live_row(
                self.storage.as_ref(),
                t,
                &p.prefix,
                &header,
                now,
                by_marker,
                None,
            )?
        } else {
            None
        };
        let first_outer = first_row
            .as_ref()
            .and_then(|r| header.deletion_for(&exec::encode_clustering(t, &r.clustering)));
        // A table without clustering columns has one row per partition; its statics do not
        // exist, so `clustering` is complete and `row` is that row.
        Ok(Current {
            first_outer,
            regulars,
            header,
            row,
            outer,
            pk,
            clustering,
            static_row,
            first_row,
            stored,
        })
    }

    /// A conditional INSERT, UPDATE or DELETE, serialized with every other write to its
    /// partition.
    pub(crate) fn conditional(
        &self,
        plan: &WritePlan,
        cond: &Condition,
        values: &Bindings,
        now: Now,
    ) -> Result<Outcome, EngineError> {
        // The partition's write lock, held from the read to the write: conditional writes to
        // one partition are serialised, and no plain write lands between check and write.
        // Writes to other partitions go on in parallel (Paxos is per partition too).
        let parts = exec::partitions(&plan.table, &plan.partition, values)?;
        let (stripes, _g) = self.lock_partitions(parts.iter().map(|p| p.prefix.as_slice()));
        let current = self.read_current(plan, &parts, values, now)?;
        check_bound_elements(&plan.table, Some(cond), values)?;
        let applied = holds(&plan.table, cond, values, &current, now)?;
        if applied {
            let mut m = Mutations::default().conditional();
            self.mutations_in(plan, Some(&parts), values, now, None, &mut m)?;
            self.apply_holding(m, &stripes, &current.stored)?;
        }
        let t = &plan.table;
        let shown = if applied {
            Vec::new()
        } else {
            shown_columns(t, plan, cond, &current, now)
        };
        // Cassandra reads the static columns the write touches or the condition names: the
        // others show as null (in the row IF NOT EXISTS found).
        let statics = statics_read(t, touches_statics(plan), [cond]);
        Ok(result(
            t,
            applied,
            &[Shown {
                columns: shown,
                current: &current,
                statics,
                row: RowShown::Named,
            }],
            now,
        ))
    }

    /// Whether the condition of one statement of a conditional BATCH holds (the caller holds
    /// the write lock of its partition, `parts`), with what it saw.
    /// `regulars`: whether any statement of the batch sets or deletes a regular column
    /// (Cassandra's one read for the batch then fetches them, so a row without a marker is the
    /// first live row a statics-only condition shows; generated seeds 313 and 314). A
    /// partition DELETE beside the condition names no column and changes nothing there.
    pub(crate) fn batch_condition(
        &self,
        plan: &WritePlan,
        parts: &[exec::PartitionRef],
        cond: &Condition,
        values: &Bindings,
        now: Now,
        regulars: bool,
    ) -> Result<(bool, Current), EngineError> {
        let regulars = regulars || writes_regulars(plan);
        let current = self.read_current_for(plan, parts, values, now, regulars)?;
        Ok((holds(&plan.table, cond, values, &current, now)?, current))
    }
}

/// The answer to a conditional BATCH that was not applied: one row per conditional statement
/// with the primary key and every column the batch's conditions name, as Cassandra shows it;
/// with an IF EXISTS or IF NOT EXISTS among them, every column (Cassandra then reads whole
/// rows), the static ones null unless Cassandra's read fetched them ([`statics_read`]: a
/// conditional statement of the batch writes one, `writes_statics`, or a condition names it).
pub(crate) fn batch_not_applied(
    t: &TableDef,
    checked: &[(&Condition, Current)],
    writes_statics: bool,
    now: Now,
) -> Outcome {
    let whole_rows = checked
        .iter()
        .any(|(cond, _)| matches!(cond, Condition::IfExists | Condition::IfNotExists));
    let statics = statics_read(t, writes_statics, checked.iter().map(|(cond, _)| *cond));
    let mut columns: Vec<usize> = t
        .columns
        .iter()
        .enumerate()
        .filter(|(_, c)| matches!(c.kind, ColumnKind::PartitionKey | ColumnKind::Clustering))
        .map(|(i, _)| i)
        .collect();
    for (cond, _) in checked {
        for i in condition_columns(cond) {
            if !columns.contains(&i) {
                columns.push(i);
            }
        }
    }
    if whole_rows {
        columns = crate::build::wildcard_order(t);
    }
    // One row per existing row the conditions read (each once); when none exists but the
    // partition's statics do, the static row alone; otherwise `[applied]` alone.
    // A statement conditioned on static columns alone reads the static row, not the row it
    // names (Cassandra's CAS request keys such conditions on the static clustering).
    let statics_only = |cond: &Condition| {
        let cs = condition_columns(cond);
        !cs.is_empty() && cs.iter().all(|i| t.columns[*i].kind == ColumnKind::Static)
    };
    let mut seen: Vec<&Vec<Vec<u8>>> = Vec::new();
    let mut rows: Vec<Shown> = Vec::new();
    for (cond, current) in checked {
        if current.row.is_some() && !statics_only(cond) && !seen.contains(&&current.clustering) {
            seen.push(&current.clustering);
            rows.push(Shown {
                columns: columns.clone(),
                current,
                statics: statics.clone(),
                row: RowShown::Named,
            });
        }
    }
    // The read returns the rows in clustering order, whatever the statements' order.
    let clustering: Vec<&crate::catalog::ColumnDef> = t.clustering().collect();
    rows.sort_by(|a, b| {
        let pairs = a.current.clustering.iter().zip(&b.current.clustering);
        for ((x, y), c) in pairs.zip(&clustering) {
            let o = crate::types::compare(&c.ty, x, y);
            let o = if c.desc { o.reverse() } else { o };
            if o.is_ne() {
                return o;
            }
        }
        std::cmp::Ordering::Equal
    });
    if rows.is_empty() {
        // The static row, when one of the static columns the read takes is live, or else
        // the partition's first row, read when
        // every condition of the batch is on static columns alone (one row condition makes
        // Cassandra read the named rows instead).
        let first_row_read = checked
            .iter()
            .all(|(cond, c)| reads_first_row(t, Some(cond), c.static_row));
        if let Some((_, current)) = checked
            .iter()
            .find(|(_, c)| live_statics(t, c, &statics, now))
            .or_else(|| {
                checked
                    .iter()
                    .find(|(_, c)| first_row_read && c.first_row.is_some())
            })
        {
            rows.push(Shown {
                columns,
                current,
                statics,
                row: if first_row_read {
                    RowShown::First
                } else {
                    RowShown::Static
                },
            });
        }
    }
    result(t, false, &rows, now)
}

/// The static columns Cassandra's read for conditional writes fetches
/// (`CQL3CasRequest.columnsToRead`): every one when a conditional statement writes one
/// (`writes_statics`), else those the conditions name. A static row with none of them live
/// reads as absent (generated `--views` seed 252).
fn statics_read<'c>(
    t: &TableDef,
    writes_statics: bool,
    conds: impl IntoIterator<Item = &'c Condition>,
) -> Vec<usize> {
    let is_static = |i: &usize| t.columns[*i].kind == ColumnKind::Static;
    if writes_statics {
        return (0..t.columns.len()).filter(is_static).collect();
    }
    let mut out = Vec::new();
    for cond in conds {
        for i in condition_columns(cond).into_iter().filter(is_static) {
            if !out.contains(&i) {
                out.push(i);
            }
        }
    }
    out
}

/// Whether one of the static columns `statics` is live in the partition.
fn live_statics(t: &TableDef, current: &Current, statics: &[usize], now: Now) -> bool {
    statics.iter().any(|i| {
        current
            .header
            .static_cell(t.columns[*i].id, now.secs)
            .is_some()
    })
}

/// Whether the write sets or deletes a regular column (or deletes whole rows).
fn writes_regulars(plan: &WritePlan) -> bool {
    let whole_rows = matches!(&plan.kind,
        crate::plan::WriteKind::Delete { columns, elements } if columns.is_empty() && elements.is_empty());
    whole_rows || writes_column(plan, ColumnKind::Regular)
}

/// Whether the write sets or deletes a regular column by name.
pub(crate) fn sets_regulars(plan: &WritePlan) -> bool {
    writes_column(plan, ColumnKind::Regular)
}

/// Whether the write sets or deletes a static column.
pub(crate) fn touches_statics(plan: &WritePlan) -> bool {
    writes_column(plan, ColumnKind::Static)
}

/// Whether the write sets or deletes a column of `kind`.
fn writes_column(plan: &WritePlan, kind: ColumnKind) -> bool {
    let t = &plan.table;
    let of_kind = |i: &usize| t.columns[*i].kind == kind;
    match &plan.kind {
        crate::plan::WriteKind::Upsert { assignments, .. } => {
            assignments.iter().any(|(i, _)| of_kind(i))
        }
        crate::plan::WriteKind::Delete { columns, elements } => {
            columns.iter().any(of_kind) || elements.iter().any(|(i, _)| of_kind(i))
        }
    }
}

/// The columns a condition names, each once, in the order they appear.
fn condition_columns(cond: &Condition) -> Vec<usize> {
    let mut out = Vec::new();
    if let Condition::Columns(cs) = cond {
        for c in cs {
            if !out.contains(&c.column) {
                out.push(c.column);
            }
        }
    }
    out
}

/// Whether Cassandra's read for `cond` takes the partition's first row: conditions on static
/// columns alone, or IF EXISTS / IF NOT EXISTS of the static row.
fn reads_first_row(t: &TableDef, cond: Option<&Condition>, static_row: bool) -> bool {
    match cond {
        Some(Condition::Columns(cs)) => cs
            .iter()
            .all(|c| t.columns[c.column].kind == ColumnKind::Static),
        Some(Condition::IfExists | Condition::IfNotExists) => static_row,
        None => false,
    }
}

/// What a statement that was not applied shows, as Cassandra 5.0.9 shows it: for IF NOT
/// EXISTS the whole row (statics as null, as Cassandra's row read gives them); otherwise,
/// when its read found something (the named row, the partition's first row for a
/// statics-only condition, or live statics when it reads them: it writes or conditions a
/// static column), the whole row for IF EXISTS and the conditioned columns for IF conditions
/// (regular ones first, then static ones, each in the order named); else nothing.
fn shown_columns(
    t: &TableDef,
    plan: &WritePlan,
    cond: &Condition,
    current: &Current,
    now: Now,
) -> Vec<usize> {
    let is_static = |i: &usize| t.columns[*i].kind == ColumnKind::Static;
    let statics = statics_read(t, touches_statics(plan), [cond]);
    let found = current.row.is_some()
        || current.first_row.is_some()
        || live_statics(t, current, &statics, now);
    match cond {
        Condition::IfNotExists
            if current.static_row && !current.header.has_live_statics(now.secs) =>
        {
            Vec::new()
        }
        Condition::IfNotExists => crate::build::wildcard_order(t),
        _ if !found => Vec::new(),
        Condition::IfExists => crate::build::wildcard_order(t),
        Condition::Columns(_) => {
            let (mut cols, statics): (Vec<usize>, Vec<usize>) = condition_columns(cond)
                .into_iter()
                .partition(|i| !is_static(i));
            cols.extend(statics);
            cols
        }
    }
}

/// One result row of a conditional write: which columns, read from what.
struct Shown<'a> {
    columns: Vec<usize>,
    current: &'a Current,
    /// The static columns Cassandra's read fetched (see [`statics_read`]): the others show
    /// as null.
    statics: Vec<usize>,
    /// Which row of the partition Cassandra's read gave.
    row: RowShown,
}

/// The row a not-applied answer shows the key and regular columns of.
#[derive(Clone, Copy, PartialEq)]
enum RowShown {
    /// The row the statement names; without it, the partition's first row that a
    /// statics-only condition read, if any (its key only: its regular columns were not read).
    Named,
    /// The partition's first row (its key, and its regular columns when they were read).
    First,
    /// The static row alone: key and regular columns null.
    Static,
}

/// The RESULT rows: `[applied]` and the shown columns of each row.
fn result(t: &TableDef, applied: bool, rows: &[Shown], now: Now) -> Outcome {
    let shown = rows.first().map(|r| r.columns.clone()).unwrap_or_default();
    let mut columns = vec![OutputColumn {
        name: "[applied]".into(),
        ty: ColumnType::Boolean,
    }];
    columns.extend(shown.iter().map(|i| OutputColumn {
        name: t.columns[*i].name.clone(),
        ty: t.columns[*i].ty.clone(),
    }));
    let mut data = Vec::new();
    let count = rows.len().max(1);
    for n in 0..count {
        data.extend_from_slice(&1i32.to_be_bytes());
        data.push(applied as u8);
        let Some(shown) = rows.get(n) else {
            continue;
        };
        let current = shown.current;
        for i in &shown.columns {
            let c = &t.columns[*i];
            let first_row_key = || {
                current
                    .first_row
                    .as_ref()
                    .and_then(|r| r.clustering.get(c.position as usize).cloned())
            };
            let v = match (c.kind, shown.row) {
                (ColumnKind::Static, _) if !shown.statics.contains(i) => None,
                (ColumnKind::Clustering, RowShown::Named) if current.row.is_none() => {
                    first_row_key()
                }
                (ColumnKind::Clustering, RowShown::First) => first_row_key(),
                (ColumnKind::Regular, RowShown::First) => current.first_row_value(c, now),
                (ColumnKind::Clustering | ColumnKind::Regular, RowShown::Static) => None,
                _ => current.value(c, now),
            };
            match v {
                Some(v) => {
                    data.extend_from_slice(&(v.len() as i32).to_be_bytes());
                    data.extend_from_slice(&v);
                }
                None => data.extend_from_slice(&(-1i32).to_be_bytes()),
            }
        }
    }
    Outcome::Rows(ResultSet {
        columns: wire_columns(&t.keyspace, &t.name, columns),
        rows: count,
        data,
        head_room: 0,
        paging_state: None,
        warnings: Vec::new(),
    })
}

/// Whether the condition holds for what `current` holds.
pub(crate) fn holds(
    t: &TableDef,
    cond: &Condition,
    vals: &Bindings,
    current: &Current,
    now: Now,
) -> Result<bool, EngineError> {
    let exists = if current.static_row {
        current.header.has_live_statics(now.secs)
    } else {
        current.row.is_some()
    };
    Ok(match cond {
        Condition::IfNotExists => !exists,
        Condition::IfExists => exists,
        Condition::Columns(conds) => {
            for c in cassandra_order(t, conds, vals)? {
                if !column_condition_holds(t, c, vals, current, now)? {
                    return Ok(false);
                }
            }
            true
        }
    })
}

/// The conditions in the order Cassandra 5.0.9 tries them, which decides whether a refused
/// one (`IF v > null`) is reached after one that does not hold: the static columns' first,
/// then those of the row in the iteration order of its `HashMultimap` keyed by (column
/// name, map key or list index): a Java `HashMap` of 16 buckets, doubled past 3/4 full,
/// read bucket by bucket, conditions of one bucket in the statement's order (Cassandra's
/// order among conditions of one key is its objects' identity hashes: not reproducible).
fn cassandra_order<'c>(
    t: &TableDef,
    conds: &'c [ColumnCondition],
    vals: &Bindings,
) -> Result<Vec<&'c ColumnCondition>, EngineError> {
    let mut keyed = Vec::with_capacity(conds.len());
    for c in conds {
        let element = match &c.target {
            CondTarget::Element(key) => resolve(key, vals)?,
            _ => None,
        };
        let name_hash = byte_buffer_hash_code(t.columns[c.column].name.as_bytes());
        let element_hash = element.as_deref().map_or(0, byte_buffer_hash_code);
        // Guava's Pair hash: Arrays.hashCode([left, right]).
        let h = 31i32
            .wrapping_mul(31i32.wrapping_add(name_hash))
            .wrapping_add(element_hash);
        let is_static = t.columns[c.column].kind == ColumnKind::Static;
        keyed.push((!is_static, h, c));
    }
    let mut distinct: Vec<(bool, i32)> = keyed.iter().map(|(r, h, _)| (*r, *h)).collect();
    distinct.sort_unstable();
    distinct.dedup();
    let buckets = java_hash_buckets(distinct.len());
    keyed.sort_by_key(|(regular, h, _)| (*regular, java_hash_bucket(*h, buckets)));
    Ok(keyed.into_iter().map(|(_, _, c)| c).collect())
}

fn column_condition_holds(
    t: &TableDef,
    cond: &ColumnCondition,
    vals: &Bindings,
    current: &Current,
    now: Now,
) -> Result<bool, EngineError> {
    let col = &t.columns[cond.column];
    let whole = current.value(col, now);
    // Whether the values compare as keys of the map (an element of a map: see `map_key_order`).
    let mut as_map_key = false;
    let (have, ty) = match &cond.target {
        CondTarget::Whole => (whole, col.ty.clone()),
        CondTarget::Element(key) => {
            let key = resolve(key, vals)?;
            as_map_key = matches!(col.ty, ColumnType::Map(..));
            // A frozen list's negative index is refused once there is a value to index.
            if let (ColumnType::List(_), Some(_), Some(k)) = (&col.ty, &whole, &key) {
                negative_index(k)?;
            }
            element(&col.ty, whole.as_deref(), key.as_deref())
        }
        CondTarget::Field(i) => match &col.ty {
            ColumnType::Udt { fields, .. } => (
                whole
                    .as_deref()
                    .and_then(|w| exec::tuple_field(w, *i))
                    .map(<[u8]>::to_vec),
                fields
                    .get(*i)
                    .map(|f| f.1.clone())
                    .unwrap_or(ColumnType::Blob),
            ),
            other => (None, other.clone()),
        },
    };
    let order = |a: &[u8], b: &[u8]| {
        if as_map_key {
            map_key_order(&ty, a, b)
        } else {
            types::compare(&ty, a, b)
        }
    };
    Ok(match &cond.op {
        CondOp::Compare(op, want) => {
            let want = match resolve(want, vals) {
                Err(EngineError::Unset(_)) => return Err(unset_in_condition()),
                other => other?,
            };
            if matches!(cond.target, CondTarget::Whole) {
                refuse_empty_collection_order(col, *op, want.as_deref())?;
            }
            compare(*op, &order, have.as_deref(), want.as_deref())?
        }
        CondOp::In(list) => {
            let mut any = false;
            for want in list {
                let want = match resolve(want, vals) {
                    Err(EngineError::Unset(_)) => continue,
                    other => other?,
                };
                any |= compare(FilterOp::Eq, &order, have.as_deref(), want.as_deref())?;
            }
            any
        }
        CondOp::InBind(i) => {
            let list = match resolve(&crate::plan::Src::Bind(*i), vals) {
                Ok(Some(list)) => list,
                Ok(None) => return Err(EngineError::invalid("Invalid null list in IN condition")),
                Err(EngineError::Unset(_)) => return Err(unset_in_condition()),
                Err(e) => return Err(e),
            };
            let items = crate::exec::decode_in_list(&list).unwrap_or_default();
            let mut any = false;
            for want in &items {
                any |= compare(FilterOp::Eq, &order, have.as_deref(), want.as_deref())?;
            }
            any
        }
        CondOp::Contains(want) => {
            // Cassandra 5.0.9 compares an unset value as none: the condition does not hold.
            let want = match resolve(want, vals) {
                Err(EngineError::Unset(_)) => return Ok(false),
                other => other?,
            };
            if want.is_none() {
                return Err(null_comparison("CONTAINS"));
            }
            match (&ty, have.as_deref(), want.as_deref()) {
                (ColumnType::List(e) | ColumnType::Set(e), Some(h), Some(w)) => {
                    decode_list_elements(h)
                        .unwrap_or_default()
                        .iter()
                        .any(|x| types::compare(e, x, w) == Ordering::Equal)
                }
                (ColumnType::Map(_, v), Some(h), Some(w)) => crate::collections::map_entries(h)
                    .unwrap_or_default()
                    .iter()
                    .any(|(_, x)| types::compare(v, x, w) == Ordering::Equal),
                _ => false,
            }
        }
        CondOp::ContainsKey(want) => {
            let want = match resolve(want, vals) {
                Err(EngineError::Unset(_)) => return Ok(false),
                other => other?,
            };
            if want.is_none() {
                return Err(null_comparison("CONTAINS KEY"));
            }
            match (&ty, have.as_deref(), want.as_deref()) {
                (ColumnType::Map(k, _), Some(h), Some(w)) => crate::collections::map_entries(h)
                    .unwrap_or_default()
                    .iter()
                    .any(|(x, _)| types::compare(k, x, w) == Ordering::Equal),
                _ => false,
            }
        }
    })
}

/// The element `key` of a list (by index) or map (by key) value, and the element's type.
fn element(
    ty: &ColumnType,
    whole: Option<&[u8]>,
    key: Option<&[u8]>,
) -> (Option<Vec<u8>>, ColumnType) {
    match ty {
        ColumnType::List(e) => {
            let idx = key
                .and_then(|k| <[u8; 4]>::try_from(k).ok())
                .map(i32::from_be_bytes);
            let v = match (whole.and_then(decode_list_elements), idx) {
                (Some(items), Some(i)) if i >= 0 => items.get(i as usize).cloned(),
                _ => None,
            };
            (v, (**e).clone())
        }
        ColumnType::Map(k, _) => {
            let found = match (whole.and_then(crate::collections::map_entries), key) {
                (Some(entries), Some(key)) => entries
                    .into_iter()
                    .find(|(x, _)| types::compare(k, x, key) == Ordering::Equal)
                    .map(|(_, v)| v),
                _ => None,
            };
            // The key type, not the value type: see `map_key_order`.
            (found, (**k).clone())
        }
        other => (None, other.clone()),
    }
}

/// `have op want` as Cassandra's conditions compare (`ColumnCondition.Bound.compareWithOperator`):
/// `=` and `!=` treat two nulls as equal; an ordering against a null condition value is refused
/// ("Invalid comparison with null for operator \">\""), whether or not the row has a value;
/// an ordering of a null cell against a value does not hold.
fn compare(
    op: FilterOp,
    order: &dyn Fn(&[u8], &[u8]) -> Ordering,
    have: Option<&[u8]>,
    want: Option<&[u8]>,
) -> Result<bool, EngineError> {
    Ok(match (have, want) {
        (Some(a), Some(b)) => op.holds(order(a, b)),
        (_, None) => match ordering_symbol(op) {
            Some(symbol) => return Err(null_comparison(symbol)),
            None => matches!((op, have), (FilterOp::Eq, None) | (FilterOp::Ne, Some(_))),
        },
        (None, Some(_)) => matches!(op, FilterOp::Ne),
    })
}

/// The operator of an ordering as Cassandra names it in messages; None for `=` and `!=`.
fn ordering_symbol(op: FilterOp) -> Option<&'static str> {
    (!matches!(op, FilterOp::Eq | FilterOp::Ne)).then(|| op.symbol())
}

/// Cassandra's refusal of a condition ordering against null (`IF v > null`, `CONTAINS null`).
fn null_comparison(operator: &str) -> EngineError {
    EngineError::invalid(format!(
        "Invalid comparison with null for operator \"{operator}\""
    ))
}

/// An ordering (`<`, `<=`, `>`, `>=`) of a whole non-frozen collection against an empty one
/// is refused as Cassandra 5.0.9 refuses it ("Invalid comparison with an empty list for
/// operator \">\""); `=`, `!=` and a frozen collection take it.
fn refuse_empty_collection_order(
    col: &ColumnDef,
    op: FilterOp,
    want: Option<&[u8]>,
) -> Result<(), EngineError> {
    let Some(symbol) = ordering_symbol(op) else {
        return Ok(());
    };
    let kind = match (&col.ty, exec::multi_cell_kind(col)) {
        (_, None) => return Ok(()),
        (ColumnType::List(_), _) => "list",
        (ColumnType::Set(_), _) => "set",
        (ColumnType::Map(..), _) => "map",
        _ => return Ok(()),
    };
    if want.is_some_and(|w| w == 0i32.to_be_bytes()) {
        return Err(EngineError::invalid(format!(
            "Invalid comparison with an empty {kind} for operator \"{symbol}\""
        )));
    }
    Ok(())
}

/// How Cassandra 5.0.9 orders the value of a map element against a condition's value
/// (`IF m[k] > v`, `=`, `!=`, `IN` too): with the map's *key* type, as its
/// `ColumnCondition.ElementAccessBound` passes `getKeysType()` to the comparison (lists use
/// their element type). So a `map<boolean, double>` element equals any value that is not
/// zero in its first byte, a `map<text, double>` one orders doubles by their bytes. The key
/// types' comparators as Cassandra's read foreign bytes: a boolean by whether its first byte
/// is zero, a tinyint by its first byte, a uuid of other than 16 bytes equal to another such
/// (and below a 16-byte one); integers, timestamps and times by a signed first byte then the
/// rest unsigned, as the key encoding orders them. Where Cassandra's comparator fails on
/// foreign bytes (a decimal, float or collection key type: a server error there) the values
/// are ordered as keys of that type as far as they read so (docs/compatibility.md).
fn map_key_order(key_ty: &ColumnType, a: &[u8], b: &[u8]) -> Ordering {
    let empty_first = a.is_empty().cmp(&b.is_empty()).reverse();
    if a.is_empty() || b.is_empty() {
        return empty_first;
    }
    match key_ty {
        ColumnType::Boolean => (a[0] != 0).cmp(&(b[0] != 0)),
        ColumnType::Tinyint => (a[0] as i8).cmp(&(b[0] as i8)),
        ColumnType::Uuid | ColumnType::Timeuuid if a.len() != 16 || b.len() != 16 => {
            (a.len() == 16).cmp(&(b.len() == 16))
        }
        _ => types::compare(key_ty, a, b),
    }
}
