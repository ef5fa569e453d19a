//! The view row of one base row, its upkeep on every write ([`maintain`]) and the build of
//! a view over its base table's existing data.

use super::ViewDef;
use crate::catalog::{ColumnKind, Schema, TableDef};
use crate::row::{Cell, CellValue, Deletion, Expiry, LocalSecs, Marker, PartitionHeader, Row};
use crate::{keys, token, Engine, EngineError};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;
use storage::WriteBatch;

/// A view row: its storage key and its encoded value.
type ViewRow = (Vec<u8>, Vec<u8>);

/// The time view rows are computed at: before any expiry. A view row carries its base
/// cells' expiries, so it stops being visible exactly when they do, whenever it is read;
/// computing it "now" would instead make it depend on when the base was last written.
const BEFORE_EXPIRY: LocalSecs = 0;

/// The expiry of the longest-lived of several live parts (`None`: one never expires).
fn longest(parts: impl Iterator<Item = Option<Expiry>>) -> Option<Expiry> {
    let mut best: Option<Expiry> = None;
    for e in parts {
        let e = e?;
        if best.is_none_or(|b| e.expires_at > b.expires_at) {
            best = Some(e);
        }
    }
    best
}

fn expiry_of(c: &Cell) -> Option<Expiry> {
    match &c.value {
        CellValue::Live { expiry, .. } => *expiry,
        CellValue::Tombstone { .. } => None,
        CellValue::Complex(x) => longest(x.elements.iter().map(|e| e.expiry())),
    }
}

/// The view row of `view` for the base row stored under `base_key` (`stored`), with the
/// partition's deletion `outer` applied; `None` when the base row is dead at `now` or
/// does not satisfy the view's WHERE clause. Called with [`BEFORE_EXPIRY`] (tests may pass
/// a later time).
pub(crate) fn view_row(
    view: &TableDef,
    def: &ViewDef,
    base: &TableDef,
    base_key: &[u8],
    stored: Option<&[u8]>,
    outer: Option<Deletion>,
    now: LocalSecs,
) -> Option<ViewRow> {
    let d = keys::decode_key(base_key)?;
    if d.is_header {
        return None;
    }
    let mut row = Row::decode(stored?).ok()?;
    // A dropped column's cells are no part of the base row (Cassandra skips them wherever
    // it reads them): they neither keep a view row alive nor lend it their time or expiry.
    base.drop_dropped_cells(&mut row.cells);
    if !row.is_live(now, outer) {
        return None;
    }
    let pk = token::split_partition_key(&d.pk, base.pk_count())?;
    // Live cells of the base row by base column name.
    let cell_of = |name: &str| -> Option<std::borrow::Cow<Cell>> {
        let c = base.column(name)?;
        row.cell(c.id, now, outer)
    };
    let value_of = |name: &str| -> Option<Vec<u8>> {
        let c = base.column(name)?;
        match c.kind {
            ColumnKind::PartitionKey => pk.get(c.position as usize).map(|v| v.to_vec()),
            ColumnKind::Clustering => row.clustering.get(c.position as usize).cloned(),
            ColumnKind::Regular => {
                crate::row::value_of(cell_of(name)?, &c.ty, now).map(|v| v.into_owned())
            }
            ColumnKind::Static => None,
        }
    };
    for f in &def.filters {
        let c = base.column(&f.column)?;
        if !f.accepts(&c.ty, &value_of(&f.column)?) {
            return None;
        }
    }
    let mut view_pk = Vec::new();
    let mut view_cl = Vec::new();
    // The view key's non-key base column, whose cell decides the view row's liveness.
    let mut key_cell: Option<std::borrow::Cow<Cell>> = None;
    for c in view.columns.iter() {
        match c.kind {
            ColumnKind::PartitionKey => view_pk.push(value_of(&c.name)?),
            ColumnKind::Clustering => view_cl.push(value_of(&c.name)?),
            _ => continue,
        }
        if base.column(&c.name)?.kind == ColumnKind::Regular {
            key_cell = cell_of(&c.name);
        }
    }
    let refs: Vec<&[u8]> = view_pk.iter().map(|v| v.as_slice()).collect();
    let vpk = token::compose_partition_key(&refs);
    let prefix = keys::partition_prefix(view.id, token::token(&vpk), &vpk);
    let key = keys::row_key(&prefix, &crate::exec::encode_clustering(view, &view_cl));
    let live_marker = row.marker.filter(|m| {
        m.is_live(now)
            && !matches!(Deletion::merge(row.deletion, outer), Some(x) if x.shadows(m.ts))
    });
    // In a labelled base table (docs/visibility.md) a reader sees in the view what it sees in
    // the base: copied cells keep their labels, and with a non-key column in the view key,
    // its value shows only to readers who see its cell, so its label (`guard`) is added to
    // the marker's and every cell's.
    let labelled = base.options.visibility.is_some();
    let guard = key_cell
        .as_deref()
        .filter(|_| labelled)
        .and_then(|kc| kc.value.live_label().cloned());
    let live_base_cells = || {
        row.cells
            .iter()
            .filter(|c| row.cell(c.column, now, outer).is_some())
    };
    // Every live base cell copied into the view: the base marker alone (or none) keeps the
    // view row live exactly for the readers of the base row.
    let copies_all = || {
        live_base_cells().all(|c| {
            base.columns
                .iter()
                .find(|bc| bc.id == c.column)
                .is_some_and(|bc| view.column(&bc.name).is_some())
        })
    };
    let (marker, marker_label) = match key_cell.as_deref() {
        Some(kc) => (
            Some(Marker {
                ts: kc.ts,
                expiry: expiry_of(kc),
            }),
            guard.clone(),
        ),
        None if labelled && copies_all() => (
            live_marker,
            live_marker.and_then(|_| row.marker_label.clone()),
        ),
        None => {
            let live_cells: Vec<&Cell> = row
                .cells
                .iter()
                .filter(|c| row.cell(c.column, now, outer).is_some())
                .collect();
            // Some live base cells are left out of the view: the marker stands for them
            // too, seen by the readers of any of them (or of the base marker).
            let label = if labelled {
                let live: Vec<_> = row
                    .cells
                    .iter()
                    .filter_map(|c| row.cell(c.column, now, outer))
                    .collect();
                let live: Vec<&Cell> = live.iter().map(|c| &**c).collect();
                any_of_parts(live_marker.map(|_| &row.marker_label), &live)
            } else {
                None
            };
            (
                Some(Marker {
                    ts: live_marker
                        .map(|m| m.ts)
                        .or_else(|| live_cells.iter().map(|c| c.ts).max())
                        .unwrap_or(0),
                    expiry: longest(
                        live_marker
                            .map(|m| m.expiry)
                            .into_iter()
                            .chain(live_cells.iter().map(|c| expiry_of(c))),
                    ),
                }),
                label,
            )
        }
    };
    // With a non-key column in the view key the view row dies with that column's cell
    // (the marker), whatever its other cells: reads check the marker (`strict`).
    let mut cells = Vec::new();
    for c in view
        .columns
        .iter()
        .filter(|c| c.kind == ColumnKind::Regular)
    {
        let Some(bc) = cell_of(&c.name) else { continue };
        if matches!(bc.value, CellValue::Live { .. } | CellValue::Complex(_)) {
            let mut cell = Cell {
                column: c.id,
                ..bc.into_owned()
            };
            if guard.is_some() {
                guard_cell(&mut cell, guard.as_ref());
            }
            cells.push(cell);
        }
    }
    cells.sort_by_key(|c| c.column);
    let vr = Row {
        marker_label,
        clustering: view_cl,
        marker,
        deletion: None,
        cells,
    };
    Some((key, vr.encode()))
}

/// The label of a view marker standing for the base marker (`marker`, when live) and the
/// live parts of the base cells `cells`: any of their labels (`None` if one is unlabelled).
fn any_of_parts(
    marker: Option<&Option<crate::row::Label>>,
    cells: &[&Cell],
) -> Option<crate::row::Label> {
    let cell_labels = cells.iter().flat_map(|c| match &c.value {
        CellValue::Complex(x) => x
            .elements
            .iter()
            .map(|e| e.value.live_label())
            .collect::<Vec<_>>(),
        v => vec![v.live_label()],
    });
    crate::labels::any_of(marker.map(|m| m.as_ref()).into_iter().chain(cell_labels))
}

/// Adds the label `guard` to every live value of a copied cell.
fn guard_cell(cell: &mut Cell, guard: Option<&crate::row::Label>) {
    let relabel = |v: &mut CellValue| {
        if let CellValue::Live { label, .. } = v {
            *label = crate::labels::all_of(label.as_ref(), guard);
        }
    };
    match &mut cell.value {
        CellValue::Complex(x) => x.elements.iter_mut().for_each(|e| relabel(&mut e.value)),
        v => relabel(v),
    }
}

/// What a reader sees of a stored view row at `now`: its clustering and its live cells;
/// `None` when the row is not visible.
fn live_form(v: &[u8], strict: bool, now: LocalSecs) -> Option<(Vec<Vec<u8>>, Vec<Cell>)> {
    let r = Row::decode(v).ok()?;
    if !r.is_live(now, None) || (strict && !super::marker_live(&r, now)) {
        return None;
    }
    // A collection with its live elements only.
    let cells = r
        .cells
        .iter()
        .filter_map(|c| r.cell(c.column, now, None))
        .map(std::borrow::Cow::into_owned)
        .collect();
    Some((r.clustering, cells))
}

/// The deletion a partition header puts on the row under `base_key`.
fn outer_deletion(header: Option<&[u8]>, base_key: &[u8]) -> Option<Deletion> {
    let d = keys::decode_key(base_key)?;
    let h = PartitionHeader::decode(header?).ok()?;
    h.deletion_for(d.clustering)
}

/// Keeps the views of the written base tables exact: for every base row in `written`, the
/// view row of its old value (`originals`) is replaced by the view row of its new value.
/// `header` gives a partition's header as it will be after this write.
pub fn maintain(
    schema: &Schema,
    tables: &[Arc<TableDef>],
    originals: &BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    written: &BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    old_header: &dyn Fn(&[u8]) -> Option<Vec<u8>>,
    batch: &mut WriteBatch,
) {
    let now = BEFORE_EXPIRY;
    let mut stored_headers: BTreeMap<Vec<u8>, Option<Vec<u8>>> = BTreeMap::new();
    for (key, new) in written {
        let Some(id) = keys::table_id(key) else {
            continue;
        };
        let Some(views) = schema.views.get(&id) else {
            continue;
        };
        let Some(base) = tables.iter().find(|t| t.id == id) else {
            continue;
        };
        let Some(d) = keys::decode_key(key) else {
            continue;
        };
        if d.is_header {
            continue;
        }
        let hkey = keys::header_key(&key[..d.prefix_len]);
        // A header this write rewrites was read by it (`originals`); any other is read
        // once per partition.
        let mut stored = || {
            stored_headers
                .entry(hkey.clone())
                .or_insert_with(|| old_header(&hkey))
                .clone()
        };
        let old_header = match originals.get(&hkey) {
            Some(o) => o.clone(),
            None => stored(),
        };
        let new_header = match written.get(&hkey) {
            Some(n) => n.clone(),
            None => old_header.clone(),
        };
        let old = originals.get(key).cloned().flatten();
        for view in views {
            let Some(def) = &view.view else { continue };
            let before = view_row(
                view,
                def,
                base,
                key,
                old.as_deref(),
                outer_deletion(old_header.as_deref(), key),
                now,
            );
            let after = view_row(
                view,
                def,
                base,
                key,
                new.as_deref(),
                outer_deletion(new_header.as_deref(), key),
                now,
            );
            if let Some((k, _)) = &before {
                if after.as_ref().is_none_or(|(a, _)| a != k) {
                    batch.delete(k.clone());
                }
            }
            if let Some((k, v)) = after {
                if before.as_ref() != Some(&(k.clone(), v.clone())) {
                    batch.put(k, v);
                }
            }
        }
    }
}

/// Every view row `view` should hold, from a full scan of its base table.
fn expected_rows(
    engine: &Engine,
    view: &TableDef,
    def: &ViewDef,
    base: &TableDef,
    now: LocalSecs,
    mut each: impl FnMut(ViewRow),
) -> Result<(), EngineError> {
    let start = keys::table_prefix(base.id);
    let end = keys::prefix_end(&start);
    let mut header: Option<(Vec<u8>, bytes::Bytes)> = None;
    for item in engine.storage.scan(
        Bound::Included(start.as_slice()),
        Bound::Excluded(end.as_slice()),
        false,
    ) {
        let (key, value) = item?;
        let Some(d) = keys::decode_key(&key) else {
            continue;
        };
        if d.is_header {
            header = Some((key[..d.prefix_len].to_vec(), value));
            continue;
        }
        let h = header
            .as_ref()
            .filter(|(p, _)| p.as_slice() == &key[..d.prefix_len])
            .map(|(_, v)| &v[..]);
        let outer = outer_deletion(h, &key);
        if let Some(r) = view_row(view, def, base, &key, Some(&value), outer, now) {
            each(r);
        }
    }
    Ok(())
}

/// Writes the view rows of every row of the base, one base partition at a time under that
/// partition's stripe lock (a concurrent write is either seen by the build or maintains
/// the view row itself).
pub(crate) fn build(engine: &Engine, view: &TableDef, base: &TableDef) -> Result<(), EngineError> {
    let Some(def) = &view.view else {
        return Ok(());
    };
    engine.each_partition_locked(base.id, |prefix, batch| {
        let now = BEFORE_EXPIRY;
        let hv = engine.storage.get(&keys::header_key(prefix))?;
        let pend = keys::prefix_end(prefix);
        for item in engine.storage.scan(
            Bound::Included(keys::row_key(prefix, &[]).as_slice()),
            Bound::Excluded(pend.as_slice()),
            false,
        ) {
            let (key, value) = item?;
            let outer = outer_deletion(hv.as_deref(), &key);
            if let Some((vk, vv)) = view_row(view, def, base, &key, Some(&value), outer, now) {
                batch.put(vk, vv);
            }
        }
        Ok(())
    })
}

impl Engine {
    /// Builds every view not yet built, then records them as built. Runs under the DDL lock
    /// (or at open, before any request).
    pub(crate) fn build_views(&self) -> Result<(), EngineError> {
        let schema = self.schema.get();
        let pending: Vec<(Arc<TableDef>, Arc<TableDef>)> = schema
            .tables
            .values()
            .filter_map(|v| {
                let def = v.view.as_ref().filter(|d| !d.built)?;
                Some((v.clone(), schema.table(&v.keyspace, &def.base)?.clone()))
            })
            .collect();
        if pending.is_empty() {
            return Ok(());
        }
        for (view, base) in &pending {
            build(self, view, base)?;
        }
        self.mark_built(
            |t| t.view.as_ref().is_some_and(|d| !d.built),
            |t| {
                if let Some(d) = &mut t.view {
                    d.built = true;
                }
            },
        )
    }

    /// Compares every view, as read at `now`, with the view computed from a full scan of
    /// its base table; returns one line per difference (empty: the views agree).
    pub fn check_views(&self, now: LocalSecs) -> Result<Vec<String>, EngineError> {
        let schema = self.schema.get();
        let mut problems = Vec::new();
        for view in schema.tables.values() {
            let Some(def) = &view.view else { continue };
            let Some(base) = schema.table(&view.keyspace, &def.base) else {
                continue;
            };
            let mut want = BTreeMap::new();
            expected_rows(self, view, def, base, now, |(k, v)| {
                if let Some(r) = live_form(&v, def.strict, now) {
                    want.insert(k, r);
                }
            })?;
            let start = keys::table_prefix(view.id);
            let end = keys::prefix_end(&start);
            let mut have = BTreeMap::new();
            for item in self.storage.scan(
                Bound::Included(start.as_slice()),
                Bound::Excluded(end.as_slice()),
                false,
            ) {
                let (k, v) = item?;
                // A view row whose every part has expired is as good as absent.
                if let Some(r) = live_form(&v, def.strict, now) {
                    have.insert(k, r);
                }
            }
            for (k, v) in &want {
                match have.get(k) {
                    None => problems.push(format!("{}: missing row {k:02x?}", view.name)),
                    Some(h) if h != v => {
                        problems.push(format!("{}: row {k:02x?} is {h:?}, want {v:?}", view.name))
                    }
                    _ => {}
                }
            }
            for k in have.keys().filter(|k| !want.contains_key(*k)) {
                problems.push(format!("{}: stale row {k:02x?}", view.name));
            }
        }
        Ok(problems)
    }
}
