//! Rows as read from the source, and the statements that write them back on the target with
//! their write times and TTLs.
//!
//! Values stay in their serialized protocol form from read to write (nothing is decoded into
//! driver types and encoded again), so every type, including ones a driver does not model,
//! round-trips byte for byte. Only non-frozen collections and UDTs are taken apart, because
//! their elements are cells of their own with their own write times.
//!
//! # How a row is written back
//!
//! - Cells are grouped by `(write time, TTL)` and each group is one `UPDATE ... USING
//!   TIMESTAMP t AND TTL n`: simple cells are set, set elements and map entries added (`s = s +
//!   {...}`), UDT fields set one by one (`u.f = ...`). Adding is idempotent, so copying a range
//!   again after an interruption writes the same cells again.
//! - A list element is a cell keyed by a time UUID the server makes at write time, so lists
//!   are appended in order, a run of elements with one write time and TTL per statement, after
//!   reading the target's list: only what the target does not have yet is appended (an
//!   interrupted copy does not double a list).
//! - Counters have no write time: the target's value is read and the difference added.
//! - CQL cannot read a row's liveness (the row marker an INSERT writes), so every clustering
//!   row gets one (`INSERT` of its key) at the latest write time of its cells, expiring only if
//!   all its cells do; a row of nothing but its key gets the migration's start time. A row
//!   whose cells are all simple and share one stamp (the usual row) is one `INSERT` of key and
//!   cells, which writes the same marker.
//! - `USING TTL 0` is written for cells without a TTL, so a table's `default_time_to_live`
//!   does not give them one.

use std::collections::BTreeMap;

use xxhash_rust::xxh3::Xxh3;

use crate::schema::{quote, CellKind, Column, Table};

/// A value in protocol form; `None` is null.
pub type Raw = Option<Vec<u8>>;

/// The read statement's shape for a table: the token, the key columns, then per non-key
/// column its value, and (except counters) `writetime()` and `ttl()`.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The non-key columns, statics first, in select order.
    pub cells: Vec<(Column, bool)>,
    pub key_count: usize,
    pub partition_key_count: usize,
}

impl Layout {
    pub fn of(table: &Table) -> Layout {
        let cells = table
            .statics
            .iter()
            .map(|c| (c.clone(), true))
            .chain(table.regulars.iter().map(|c| (c.clone(), false)))
            .collect();
        Layout {
            cells,
            key_count: table.partition_key.len() + table.clustering.len(),
            partition_key_count: table.partition_key.len(),
        }
    }

    /// `SELECT token(..), keys.., v, writetime(v), ttl(v), .. FROM t WHERE token(..) > ? AND
    /// token(..) <= ?`.
    pub fn select(&self, table: &Table) -> String {
        let mut cols = vec![table.token_expr()];
        cols.extend(table.keys().map(Column::quoted));
        for (c, _) in &self.cells {
            let q = c.quoted();
            if c.cell == CellKind::Counter {
                cols.push(q);
            } else {
                cols.push(format!("{q}, writetime({q}), ttl({q})"));
            }
        }
        format!(
            "SELECT {} FROM {} WHERE {t} > ? AND {t} <= ?",
            cols.join(", "),
            table.qualified(),
            t = table.token_expr()
        )
    }

    /// Splits one result row (columns in select order) into a [`SourceRow`].
    pub fn row(&self, columns: Vec<Raw>) -> Result<SourceRow, String> {
        let mut it = columns.into_iter();
        let token = match it.next().flatten() {
            Some(b) if b.len() == 8 => i64::from_be_bytes(b.try_into().expect("8 bytes")),
            other => return Err(format!("the token column is {other:?}, not a bigint")),
        };
        let keys: Vec<Raw> = it.by_ref().take(self.key_count).collect();
        let mut cells = Vec::with_capacity(self.cells.len());
        for (c, _) in &self.cells {
            let value = it.next().ok_or("the row is short")?;
            let (writetime, ttl) = if c.cell == CellKind::Counter {
                (None, None)
            } else {
                (
                    it.next().ok_or("the row is short")?,
                    it.next().ok_or("the row is short")?,
                )
            };
            cells.push(CellRead {
                value,
                writetime,
                ttl,
            });
        }
        Ok(SourceRow { token, keys, cells })
    }
}

/// One non-key column of a row as read: the value and, in protocol form, `writetime()` and
/// `ttl()` (lists of them, per element or field, for non-frozen collections and UDTs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellRead {
    pub value: Raw,
    pub writetime: Raw,
    pub ttl: Raw,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceRow {
    pub token: i64,
    /// Partition key then clustering columns (clustering null in a partition's static-only row).
    pub keys: Vec<Raw>,
    /// In [`Layout::cells`] order.
    pub cells: Vec<CellRead>,
}

impl SourceRow {
    /// Whether this row is a clustering row (rather than a partition's static-only row, whose
    /// clustering columns read as null).
    pub fn is_clustering_row(&self, layout: &Layout) -> bool {
        layout.key_count == layout.partition_key_count
            || self.keys[layout.partition_key_count..]
                .iter()
                .all(Option::is_some)
    }
}

/// A statement and its bound values, in protocol form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    pub cql: String,
    pub values: Vec<Raw>,
    /// Whether writing it twice leaves what writing it once does. Counter additions and list
    /// appends do not: the driver must not retry them on its own, and the copy re-reads the
    /// target before it writes them again.
    pub repeatable: bool,
}

/// One cell's write time and TTL (0: none).
type Stamp = (i64, i32);

#[derive(Debug, Default)]
struct Group {
    /// `(SET clause, bound value)`.
    sets: Vec<(String, Raw)>,
    /// The quoted names of the simple cells among `sets` (all of them: the group can be an
    /// INSERT).
    simple: Vec<String>,
}

/// Why a row could not be planned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanError(pub String);

/// The statements that write `row`'s cells of one kind (`statics`: the partition's static
/// cells, keyed by partition key; else the clustering row's) on the target.
/// `target_lists_counters` holds, for those columns of that kind that are lists or counters
/// (in layout order), the target's current value. `default_ts` is the write time of a row
/// that holds only its key.
pub fn plan(
    table: &Table,
    layout: &Layout,
    row: &SourceRow,
    statics: bool,
    target: &[Raw],
    default_ts: i64,
) -> Result<Vec<Write>, PlanError> {
    let key_cols: Vec<&Column> = if statics {
        table.partition_key.iter().collect()
    } else {
        table.keys().collect()
    };
    let key_vals: Vec<Raw> = row.keys[..key_cols.len()].to_vec();
    let where_clause = key_cols
        .iter()
        .map(|c| format!("{} = ?", c.quoted()))
        .collect::<Vec<_>>()
        .join(" AND ");
    let name = table.qualified();
    let mut groups: BTreeMap<Stamp, Group> = BTreeMap::new();
    let mut out = Vec::new();
    let mut counters: Vec<(String, Raw)> = Vec::new();
    let mut target_it = target.iter();
    for ((col, is_static), cell) in layout.cells.iter().zip(&row.cells) {
        if *is_static != statics {
            continue;
        }
        let q = col.quoted();
        match &col.cell {
            CellKind::Counter => {
                let current = target_it.next().cloned().flatten();
                let (Some(src), cur) = (&cell.value, current) else {
                    continue;
                };
                let delta = be_i64(src)? - cur.as_deref().map(be_i64).transpose()?.unwrap_or(0);
                if delta != 0 {
                    counters.push((format!("{q} = {q} + ?"), Some(delta.to_be_bytes().to_vec())));
                }
            }
            CellKind::Simple => {
                let Some(v) = &cell.value else { continue };
                let stamp = (stamp_ts(&cell.writetime, &q)?, stamp_ttl(&cell.ttl));
                let g = groups.entry(stamp).or_default();
                g.sets.push((format!("{q} = ?"), Some(v.clone())));
                g.simple.push(q);
            }
            CellKind::Set | CellKind::Map => {
                let current = cell.value.as_deref().map(elements).transpose()?;
                let Some(items) = current else { continue };
                let per = if col.cell == CellKind::Map { 2 } else { 1 };
                let stamps = stamps(cell, items.len() / per, &q)?;
                let mut by_stamp: BTreeMap<Stamp, Vec<Raw>> = BTreeMap::new();
                for (i, stamp) in stamps.into_iter().enumerate() {
                    let s = stamp
                        .ok_or_else(|| PlanError(format!("{q}: element {i} has no write time")))?;
                    by_stamp
                        .entry(s)
                        .or_default()
                        .extend(items[i * per..(i + 1) * per].iter().cloned());
                }
                for (s, items) in by_stamp {
                    groups
                        .entry(s)
                        .or_default()
                        .sets
                        .push((format!("{q} = {q} + ?"), Some(encode_elements(&items, per))));
                }
            }
            CellKind::Udt(fields) => {
                let Some(v) = &cell.value else { continue };
                let values = fields_of(v)?;
                let stamps = stamps(cell, fields.len(), &q)?;
                for (i, field) in fields.iter().enumerate() {
                    let (Some(Some(fv)), Some(Some(s))) = (values.get(i), stamps.get(i)) else {
                        continue; // a null field is no cell
                    };
                    groups
                        .entry(*s)
                        .or_default()
                        .sets
                        .push((format!("{q}.{} = ?", quote(field)), Some(fv.clone())));
                }
            }
            CellKind::List => {
                let have = target_it.next().cloned().flatten();
                let Some(v) = &cell.value else { continue };
                let items = elements(v)?;
                let stamps = stamps(cell, items.len(), &q)?;
                let have = have
                    .as_deref()
                    .map(elements)
                    .transpose()?
                    .unwrap_or_default();
                if have.len() > items.len() || have[..] != items[..have.len()] {
                    return Err(PlanError(format!(
                        "list {q} on the target holds elements the source's does not start with ({} on the target, {} on the source)",
                        have.len(),
                        items.len()
                    )));
                }
                // Runs of consecutive missing elements with one stamp, appended in order.
                let mut run: Vec<Raw> = Vec::new();
                let mut run_stamp: Option<Stamp> = None;
                for (i, item) in items.iter().enumerate().skip(have.len()) {
                    let s = stamps[i]
                        .ok_or_else(|| PlanError(format!("{q}: element {i} has no write time")))?;
                    if run_stamp.is_some_and(|r| r != s) {
                        out.push(append(
                            &name,
                            &q,
                            &where_clause,
                            run_stamp.unwrap(),
                            &run,
                            &key_vals,
                        ));
                        run.clear();
                    }
                    run_stamp = Some(s);
                    run.push(item.clone());
                }
                if let Some(s) = run_stamp {
                    out.push(append(&name, &q, &where_clause, s, &run, &key_vals));
                }
            }
        }
    }
    if !counters.is_empty() {
        let (sets, mut values): (Vec<String>, Vec<Raw>) = counters.into_iter().unzip();
        values.extend(key_vals.iter().cloned());
        out.push(Write {
            cql: format!("UPDATE {name} SET {} WHERE {where_clause}", sets.join(", ")),
            values,
            repeatable: false,
        });
    }
    // The row marker first (an INSERT of the key), for a clustering row of a non-counter
    // table: at the latest stamp of its cells, without TTL if any cell has none.
    if !statics && !table.is_counter_table() && row.is_clustering_row(layout) {
        let mut stamps: Vec<Stamp> = groups.keys().copied().collect();
        stamps.extend(list_stamps(layout, row));
        let ts = stamps.iter().map(|s| s.0).max().unwrap_or(default_ts);
        let ttl = if stamps.is_empty() || stamps.iter().any(|s| s.1 == 0) {
            0
        } else {
            stamps.iter().map(|s| s.1).max().unwrap_or(0)
        };
        let mut cols: Vec<String> = key_cols.iter().map(|c| c.quoted()).collect();
        let mut values = key_vals.clone();
        // The common row, all its cells simple and of one stamp: one INSERT of key and cells
        // writes the same marker (the same stamp) as the separate statements would.
        let one_insert = groups.len() == 1
            && out.is_empty()
            && list_stamps(layout, row).is_empty()
            && groups.values().all(|g| g.simple.len() == g.sets.len());
        if one_insert {
            if let Some((_, g)) = groups.pop_first() {
                cols.extend(g.simple);
                values.extend(g.sets.into_iter().map(|(_, v)| v));
            }
        }
        values.push(Some(ts.to_be_bytes().to_vec()));
        values.push(Some(ttl.to_be_bytes().to_vec()));
        out.insert(
            0,
            Write {
                cql: format!(
                    "INSERT INTO {name} ({}) VALUES ({}) USING TIMESTAMP ? AND TTL ?",
                    cols.join(", "),
                    vec!["?"; cols.len()].join(", ")
                ),
                values,
                repeatable: true,
            },
        );
    }
    for ((ts, ttl), g) in groups {
        let (sets, mut values): (Vec<String>, Vec<Raw>) = g.sets.into_iter().unzip();
        let mut all = vec![
            Some(ts.to_be_bytes().to_vec()),
            Some(ttl.to_be_bytes().to_vec()),
        ];
        all.append(&mut values);
        all.extend(key_vals.iter().cloned());
        out.push(Write {
            cql: format!(
                "UPDATE {name} USING TIMESTAMP ? AND TTL ? SET {} WHERE {where_clause}",
                sets.join(", ")
            ),
            values: all,
            repeatable: true,
        });
    }
    Ok(out)
}

/// The stamps of a row's regular list elements (for its row marker).
fn list_stamps(layout: &Layout, row: &SourceRow) -> Vec<Stamp> {
    let mut out = Vec::new();
    for ((col, is_static), cell) in layout.cells.iter().zip(&row.cells) {
        if col.cell == CellKind::List && !is_static {
            if let Ok(s) = stamps(cell, usize::MAX, "") {
                out.extend(s.into_iter().flatten());
            }
        }
    }
    out
}

fn append(
    name: &str,
    q: &str,
    where_clause: &str,
    stamp: Stamp,
    run: &[Raw],
    keys: &[Raw],
) -> Write {
    let mut values = vec![
        Some(stamp.0.to_be_bytes().to_vec()),
        Some(stamp.1.to_be_bytes().to_vec()),
        Some(encode_elements(run, 1)),
    ];
    values.extend(keys.iter().cloned());
    Write {
        cql: format!(
            "UPDATE {name} USING TIMESTAMP ? AND TTL ? SET {q} = {q} + ? WHERE {where_clause}"
        ),
        values,
        repeatable: false,
    }
}

/// The per-element stamps of a non-frozen collection or UDT (`writetime()` and `ttl()` read
/// as lists), `n` of them (fewer if the lists are shorter and `n` is `usize::MAX`).
fn stamps(cell: &CellRead, n: usize, col: &str) -> Result<Vec<Option<Stamp>>, PlanError> {
    let wt = match &cell.writetime {
        Some(b) => elements(b)?,
        None => Vec::new(),
    };
    let ttl = match &cell.ttl {
        Some(b) => elements(b)?,
        None => Vec::new(),
    };
    if n != usize::MAX && wt.len() != n {
        return Err(PlanError(format!(
            "{col}: writetime() lists {} write times for {n} elements (the source must answer writetime() of a non-frozen collection or UDT with one per element, as Cassandra 5.0 does)",
            wt.len()
        )));
    }
    wt.iter()
        .enumerate()
        .map(|(i, w)| {
            let Some(w) = w else { return Ok(None) };
            let t = ttl.get(i).cloned().flatten();
            Ok(Some((be_i64(w)?, stamp_ttl(&t))))
        })
        .collect()
}

fn stamp_ts(writetime: &Raw, col: &str) -> Result<i64, PlanError> {
    match writetime {
        Some(b) => be_i64(b),
        None => Err(PlanError(format!("{col} has a value but no write time"))),
    }
}

/// A remaining TTL as read (`ttl()`, seconds); none is 0. A TTL read as 0 (expiring within the
/// second) is written as 1: 0 would mean "no TTL".
fn stamp_ttl(ttl: &Raw) -> i32 {
    match ttl.as_deref() {
        Some(b) if b.len() == 4 => i32::from_be_bytes(b.try_into().expect("4 bytes")).max(1),
        _ => 0,
    }
}

fn be_i64(b: &[u8]) -> Result<i64, PlanError> {
    <[u8; 8]>::try_from(b)
        .map(i64::from_be_bytes)
        .map_err(|_| PlanError(format!("a bigint of {} bytes", b.len())))
}

/// The elements of a serialized list or set (a map's keys and values alternate): `[int n]`
/// then `n` (or `2n`) `[int length][bytes]`, a negative length being null.
pub fn elements(b: &[u8]) -> Result<Vec<Raw>, PlanError> {
    let bad = || {
        PlanError(format!(
            "a collection of {} bytes that does not parse",
            b.len()
        ))
    };
    let (n, mut rest) = take_i32(b).ok_or_else(bad)?;
    let n = usize::try_from(n).map_err(|_| bad())?;
    let mut out = Vec::new();
    while !rest.is_empty() {
        let (v, r) = take_value(rest).ok_or_else(bad)?;
        out.push(v);
        rest = r;
    }
    if out.len() != n && out.len() != 2 * n {
        return Err(bad());
    }
    Ok(out)
}

/// `elements` serialized again; `per` is 2 for a map's key/value pairs.
pub fn encode_elements(items: &[Raw], per: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let n = i32::try_from(items.len() / per).expect("a collection fits an int");
    out.extend_from_slice(&n.to_be_bytes());
    for item in items {
        match item {
            Some(v) => {
                let len = i32::try_from(v.len()).expect("an element fits an int");
                out.extend_from_slice(&len.to_be_bytes());
                out.extend_from_slice(v);
            }
            None => out.extend_from_slice(&(-1i32).to_be_bytes()),
        }
    }
    out
}

/// The fields of a serialized UDT value: `[int length][bytes]` each, trailing ones may be
/// missing (null).
fn fields_of(b: &[u8]) -> Result<Vec<Raw>, PlanError> {
    let mut out = Vec::new();
    let mut rest = b;
    while !rest.is_empty() {
        let (v, r) = take_value(rest).ok_or_else(|| {
            PlanError(format!(
                "a UDT value of {} bytes that does not parse",
                b.len()
            ))
        })?;
        out.push(v);
        rest = r;
    }
    Ok(out)
}

fn take_i32(b: &[u8]) -> Option<(i32, &[u8])> {
    let head: [u8; 4] = b.get(..4)?.try_into().ok()?;
    Some((i32::from_be_bytes(head), &b[4..]))
}

fn take_value(b: &[u8]) -> Option<(Raw, &[u8])> {
    let (len, rest) = take_i32(b)?;
    if len < 0 {
        return Some((None, rest));
    }
    let len = usize::try_from(len).ok()?;
    Some((Some(rest.get(..len)?.to_vec()), &rest[len..]))
}

/// What the verification compares for one row: the key, every value, every write time (per
/// element for collections), and whether each cell has a TTL (a remaining TTL keeps falling,
/// so its number is not compared). A 64-bit xxh3 of that.
pub fn row_hash(row: &SourceRow) -> u64 {
    let mut h = Xxh3::new();
    for k in &row.keys {
        feed(&mut h, k.as_deref());
    }
    for c in &row.cells {
        feed(&mut h, c.value.as_deref());
        feed(&mut h, c.writetime.as_deref());
        match c.ttl.as_deref().map(elements) {
            Some(Ok(list)) if c.writetime.as_deref().is_some_and(|w| w.len() != 8) => {
                for t in list {
                    h.update(&[u8::from(t.is_some())]);
                }
            }
            _ => h.update(&[u8::from(c.ttl.is_some())]),
        }
    }
    h.digest()
}

fn feed(h: &mut Xxh3, v: Option<&[u8]>) {
    match v {
        Some(b) => {
            h.update(&(b.len() as u64).to_be_bytes());
            h.update(b);
        }
        None => h.update(&u64::MAX.to_be_bytes()),
    }
}

/// A range's row count and checksum: the wrapping sum of its rows' hashes, so the order rows
/// arrive in (paging, tokens that collide) does not matter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Digest {
    pub rows: u64,
    pub checksum: u64,
}

impl Digest {
    pub fn add(&mut self, row: &SourceRow) {
        self.rows += 1;
        self.checksum = self.checksum.wrapping_add(row_hash(row));
    }
}

#[cfg(test)]
#[path = "cells_tests.rs"]
mod tests;
