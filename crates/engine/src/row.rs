//! Stored rows and partition headers: cells with timestamps, TTLs and tombstones, their
//! binary encoding, and Cassandra's reconciliation rules.
//!
//! A CQL row is one storage value ([`Row`]); partition-level state — the partition
//! tombstone, range tombstones and static cells — is one more value per partition
//! ([`PartitionHeader`]). Writes merge into what is stored (read-modify-write under a
//! stripe lock), so a point read is one look-up, plus a header look-up only in a table that
//! ever had a header written (`headers.rs`).
//!
//! # Reconciliation (Cassandra's rules)
//! - The higher write timestamp (microseconds) wins.
//! - On a tie a tombstone wins over a live cell; an expiring cell (a tombstone to be) over a
//!   non-expiring one; of two expiring cells the later expiry; then the greater value
//!   (Cassandra 4.0+, CASSANDRA-14592: the outcome never depends on the clock).
//! - A deletion at timestamp `t` (row, range or partition) shadows everything written at `<= t`.
//! - An expiring cell past its expiry reads as a tombstone written at its own timestamp.
//!
//! # Non-frozen collections ([`Complex`])
//! A non-frozen list, set, map or UDT is one [`Cell`] whose value is a collection deletion plus one
//! element per list item, set element, map entry or UDT field, each with its own timestamp, TTL or
//! tombstone, reconciled element by element by the rules above. Overwriting the whole value
//! writes a collection deletion at `timestamp - 1` plus the new elements, as Cassandra does.
//! Elements are kept in the byte order of their path (set element or map key in wire form, a
//! list item's time key); readers that know the type put set and map elements in type order
//! (`collections::live_elements`). A stored cell of the old format (the whole collection as
//! one simple cell) reads as elements sharing that cell's timestamp and TTL.

use bytes::Bytes;

/// Local (server) time in seconds, for TTL expiry and `gc_grace_seconds`.
pub type LocalSecs = u32;

/// Deletion info: the timestamp it shadows up to and when it was written locally.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deletion {
    pub ts: i64,
    pub local_del: LocalSecs,
}

impl Deletion {
    pub fn shadows(&self, ts: i64) -> bool {
        ts <= self.ts
    }
    pub(crate) fn merge(a: Option<Deletion>, b: Option<Deletion>) -> Option<Deletion> {
        match (a, b) {
            (Some(x), Some(y)) => Some(if y.ts > x.ts { y } else { x }),
            (x, None) => x,
            (None, y) => y,
        }
    }
}

/// Time-to-live of an expiring cell or row marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expiry {
    pub ttl: u32,
    pub expires_at: LocalSecs,
}

/// A cell's visibility label: a validated access expression (`visibility.rs`), shared by
/// the cells one statement writes.
pub type Label = std::sync::Arc<[u8]>;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CellValue {
    Live {
        /// Shares the buffer of the row it was decoded from: decoding a row allocates once,
        /// not once per cell.
        value: Bytes,
        expiry: Option<Expiry>,
        /// The visibility label (only in tables with `visibility` enabled); `None` is visible
        /// to all and keeps the cell's first encoding.
        label: Option<Label>,
    },
    Tombstone {
        local_del: LocalSecs,
    },
    /// A non-frozen collection, one element per item.
    Complex(Complex),
}

impl CellValue {
    fn is_dead(&self) -> bool {
        matches!(self, CellValue::Tombstone { .. })
    }

    fn raw_value(&self) -> &[u8] {
        match self {
            CellValue::Live { value, .. } => value,
            _ => &[],
        }
    }

    fn local_del(&self) -> u32 {
        match self {
            CellValue::Live {
                expiry: Some(e), ..
            } => e.expires_at,
            CellValue::Live { expiry: None, .. } | CellValue::Complex(_) => u32::MAX,
            CellValue::Tombstone { local_del } => *local_del,
        }
    }

    fn label(&self) -> Option<&[u8]> {
        match self {
            CellValue::Live { label, .. } => label.as_deref(),
            _ => None,
        }
    }

    /// The label of a live value (`None`: unlabelled, or not a live simple value).
    pub(crate) fn live_label(&self) -> Option<&Label> {
        match self {
            CellValue::Live { label, .. } => label.as_ref(),
            _ => None,
        }
    }

    fn live_at(&self, now: LocalSecs) -> Option<&[u8]> {
        match self {
            CellValue::Live { value, expiry, .. } => match expiry {
                Some(e) if e.expires_at <= now => None,
                _ => Some(value),
            },
            _ => None,
        }
    }
}

/// What reconciling two versions of a simple cell (or collection element) compares besides
/// their timestamps: a decoded [`CellValue`]'s, or a cell still in its row's bytes
/// (`RowMerge`'s fast path).
#[derive(Clone, Copy)]
struct Rank<'a> {
    dead: bool,
    /// See [`CellValue::local_del`].
    local_del: u32,
    value: &'a [u8],
    label: Option<&'a [u8]>,
}

impl CellValue {
    fn rank(&self) -> Rank<'_> {
        Rank {
            dead: self.is_dead(),
            local_del: self.local_del(),
            value: self.raw_value(),
            label: self.label(),
        }
    }
}

/// Cassandra's reconciliation of two versions of one simple cell (or collection element);
/// true if `a` (written at `ta`) beats `b` (written at `tb`).
fn wins(ta: i64, a: &CellValue, tb: i64, b: &CellValue) -> bool {
    ranked_wins(ta, a.rank(), tb, b.rank())
}

/// [`wins`] on what it compares.
fn ranked_wins(ta: i64, a: Rank, tb: i64, b: Rank) -> bool {
    if ta != tb {
        return ta > tb;
    }
    // Judged at a fixed time so that the outcome never depends on when it is computed.
    match (a.dead, b.dead) {
        (true, false) => true,
        (false, true) => false,
        (true, true) => a.local_del >= b.local_del,
        (false, false) => {
            let (ea, eb) = (a.local_del != u32::MAX, b.local_del != u32::MAX);
            if ea != eb {
                return ea;
            }
            if ea && a.local_del != b.local_del {
                return a.local_del > b.local_del;
            }
            // Then the label, so that two replicas of a tie agree whatever their order.
            (a.value, a.label) >= (b.value, b.label)
        }
    }
}

/// Cassandra's `LivenessInfo.supersedes` for two row markers: the higher timestamp; on a tie
/// an expiring marker over a non-expiring one, of two expiring ones the later expiry (and
/// otherwise `a`, the newer write).
fn marker_wins(a: Marker, b: Marker) -> bool {
    if a.ts != b.ts {
        return a.ts > b.ts;
    }
    match (a.expiry, b.expiry) {
        (Some(x), Some(y)) => x.expires_at >= y.expires_at,
        (None, Some(_)) => false,
        _ => true,
    }
}

/// How a non-frozen collection's whole value maps to elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CollectionKind {
    /// Path: an 8-byte time key (appends increase, prepends decrease); value: the item.
    List,
    /// Path: the element; value: empty.
    Set,
    /// Path: the key; value: the entry's value.
    Map,
    /// A non-frozen UDT. Path: the field's position (2 bytes); value: the field's value.
    Udt,
}

/// One element of a non-frozen collection; `value` is `Live` or `Tombstone`, never `Complex`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Element {
    pub path: Vec<u8>,
    pub ts: i64,
    pub value: CellValue,
}

impl Element {
    pub fn live_value(&self, now: LocalSecs) -> Option<&[u8]> {
        self.value.live_at(now)
    }

    pub fn expiry(&self) -> Option<Expiry> {
        match self.value {
            CellValue::Live { expiry, .. } => expiry,
            _ => None,
        }
    }

    /// Whether this version of an element beats `other` in Cassandra's reconciliation.
    pub(crate) fn wins_over(&self, other: &Element) -> bool {
        wins(self.ts, &self.value, other.ts, &other.value)
    }
}

/// A non-frozen collection's cells: its deletion and its elements sorted by path bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Complex {
    pub kind: CollectionKind,
    pub deletion: Option<Deletion>,
    pub elements: Vec<Element>,
}

impl Complex {
    /// The latest timestamp in it (its cell's `ts`).
    pub fn max_ts(&self) -> i64 {
        self.elements
            .iter()
            .map(|e| e.ts)
            .chain(self.deletion.map(|d| d.ts))
            .max()
            .unwrap_or(i64::MIN)
    }

    /// Merges `other` element by element; the newer deletion shadows older elements.
    pub fn merge(&mut self, other: Complex) {
        self.deletion = Deletion::merge(self.deletion, other.deletion);
        for e in other.elements {
            match self
                .elements
                .binary_search_by(|x| x.path.as_slice().cmp(&e.path))
            {
                Ok(i) => {
                    let x = &self.elements[i];
                    if wins(e.ts, &e.value, x.ts, &x.value) {
                        self.elements[i] = e;
                    }
                }
                Err(i) => self.elements.insert(i, e),
            }
        }
        if let Some(d) = self.deletion {
            self.elements.retain(|e| !d.shadows(e.ts));
        }
    }

    /// The old format's whole-collection cell as a collection: its elements share its
    /// timestamp and TTL; a tombstone is the collection's deletion.
    fn from_simple(kind: CollectionKind, ts: i64, value: &CellValue) -> Complex {
        match value {
            CellValue::Live {
                value,
                expiry,
                label,
            } => Complex {
                kind,
                deletion: None,
                elements: crate::collections::elements_of(kind, value, ts, *expiry, label, 0),
            },
            CellValue::Tombstone { local_del } => Complex {
                kind,
                deletion: Some(Deletion {
                    ts,
                    local_del: *local_del,
                }),
                elements: Vec::new(),
            },
            CellValue::Complex(c) => c.clone(),
        }
    }

    /// Whether an element is live at `now` and not shadowed by `shadow`.
    fn shows(e: &Element, now: LocalSecs, shadow: Option<Deletion>) -> bool {
        e.live_value(now).is_some() && !matches!(shadow, Some(d) if d.shadows(e.ts))
    }
}

/// One column's value in a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    pub column: u16,
    pub ts: i64,
    pub value: CellValue,
}

impl Cell {
    /// The live value of a simple cell at `now`, if any (`None` for a collection's cells:
    /// see [`Cell::value`]).
    pub fn live_value(&self, now: LocalSecs) -> Option<&[u8]> {
        self.value.live_at(now)
    }

    /// The live value at `now` of a cell of a column of type `ty`, collections included
    /// (their live elements, in the type's order).
    pub fn value(
        &self,
        ty: &proto::types::ColumnType,
        now: LocalSecs,
    ) -> Option<std::borrow::Cow<'_, [u8]>> {
        match &self.value {
            CellValue::Complex(c) => crate::collections::whole_value(ty, c, now).map(Into::into),
            v => v.live_at(now).map(Into::into),
        }
    }

    /// The live elements at `now` of a collection's cell (an old-format whole value read as
    /// elements of `kind`); `None` when none is live.
    pub(crate) fn live_elements(&self, kind: CollectionKind, now: LocalSecs) -> Option<Complex> {
        let mut c = Complex::from_simple(kind, self.ts, &self.value);
        c.elements.retain(|e| e.live_value(now).is_some());
        (!c.elements.is_empty()).then_some(c)
    }

    /// Whether anything of the cell is live at `now`.
    pub fn is_live(&self, now: LocalSecs) -> bool {
        match &self.value {
            CellValue::Complex(c) => c.elements.iter().any(|e| e.live_value(now).is_some()),
            v => v.live_at(now).is_some(),
        }
    }

    /// A whole-collection cell as what `other` (a collection) merges with.
    fn merge_into_complex(&mut self, kind: CollectionKind) -> &mut Complex {
        if !matches!(self.value, CellValue::Complex(_)) {
            self.value = CellValue::Complex(Complex::from_simple(kind, self.ts, &self.value));
        }
        match &mut self.value {
            CellValue::Complex(c) => c,
            _ => unreachable_complex(),
        }
    }

    /// Merges a newer version of this cell by Cassandra's rules (a collection element by
    /// element).
    pub(crate) fn merge(&mut self, other: Cell) {
        let kind = match (&self.value, &other.value) {
            (_, CellValue::Complex(c)) | (CellValue::Complex(c), _) => Some(c.kind),
            _ => None,
        };
        let Some(kind) = kind else {
            if wins(other.ts, &other.value, self.ts, &self.value) {
                *self = other;
            }
            return;
        };
        let incoming = match other.value {
            CellValue::Complex(c) => c,
            v => Complex::from_simple(kind, other.ts, &v),
        };
        let ts = {
            let mine = self.merge_into_complex(kind);
            mine.merge(incoming);
            mine.max_ts()
        };
        self.ts = ts;
    }

    /// Drops what deletion `d` shadows; false when nothing of the cell is left.
    fn shadow(&mut self, d: Deletion) -> bool {
        match &mut self.value {
            CellValue::Complex(c) => {
                c.elements.retain(|e| !d.shadows(e.ts));
                if matches!(c.deletion, Some(x) if d.shadows(x.ts)) {
                    c.deletion = None;
                }
                if c.elements.is_empty() && c.deletion.is_none() {
                    return false;
                }
                self.ts = c.max_ts();
                true
            }
            _ => !d.shadows(self.ts),
        }
    }

    /// This cell as a reader sees it under `shadow` at `now`: `None` when nothing is live;
    /// a collection keeps only its unshadowed elements.
    fn visible(
        &self,
        now: LocalSecs,
        shadow: Option<Deletion>,
    ) -> Option<std::borrow::Cow<'_, Cell>> {
        use std::borrow::Cow;
        match &self.value {
            CellValue::Complex(c) => {
                let shown = c
                    .elements
                    .iter()
                    .filter(|e| Complex::shows(e, now, shadow))
                    .count();
                if shown == 0 {
                    None
                } else if shown == c.elements.len() {
                    Some(Cow::Borrowed(self))
                } else {
                    // Unshadowed dead elements stay: in a set or map whose keys have several
                    // forms, one may remove a live element of another form (see
                    // `collections::live_elements`, which keeps only live ones).
                    let elements: Vec<Element> = c
                        .elements
                        .iter()
                        .filter(|e| !matches!(shadow, Some(d) if d.shadows(e.ts)))
                        .cloned()
                        .collect();
                    let c = Complex {
                        kind: c.kind,
                        deletion: c.deletion,
                        elements,
                    };
                    Some(Cow::Owned(Cell {
                        column: self.column,
                        ts: c.max_ts(),
                        value: CellValue::Complex(c),
                    }))
                }
            }
            v => {
                if matches!(shadow, Some(d) if d.shadows(self.ts)) || v.live_at(now).is_none() {
                    None
                } else {
                    Some(Cow::Borrowed(self))
                }
            }
        }
    }

    /// Remaining TTL in seconds at `now` (for `ttl()`), if the cell expires.
    pub fn ttl_remaining(&self, now: LocalSecs) -> Option<i32> {
        match &self.value {
            CellValue::Live {
                expiry: Some(e), ..
            } if e.expires_at > now => Some((e.expires_at - now) as i32),
            _ => None,
        }
    }

    #[cfg(test)]
    pub(crate) fn raw_value(&self) -> &[u8] {
        self.value.raw_value()
    }
}

#[allow(clippy::panic)]
fn unreachable_complex() -> &'static mut Complex {
    panic!("a cell just made a collection is not one")
}

/// The live value of a visible cell (see [`Row::cell`]) of a column of type `ty`, borrowed
/// from the stored row where it can be.
pub fn value_of<'a>(
    cell: std::borrow::Cow<'a, Cell>,
    ty: &proto::types::ColumnType,
    now: LocalSecs,
) -> Option<std::borrow::Cow<'a, [u8]>> {
    use std::borrow::Cow;
    match cell {
        Cow::Borrowed(c) => c.value(ty, now),
        Cow::Owned(c) => c.value(ty, now).map(|v| Cow::Owned(v.into_owned())),
    }
}

/// The row marker INSERT writes (UPDATE does not): a row with only a live marker still exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Marker {
    pub ts: i64,
    pub expiry: Option<Expiry>,
}

impl Marker {
    pub fn is_live(&self, now: LocalSecs) -> bool {
        !matches!(self.expiry, Some(e) if e.expires_at <= now)
    }
}

/// One CQL row as stored: clustering values (their wire bytes, so no decoding of keys is
/// needed to answer a query), marker, row deletion and cells sorted by column id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Row {
    pub clustering: Vec<Vec<u8>>,
    pub marker: Option<Marker>,
    /// The visibility label of the marker (it follows the marker that wins a merge).
    pub marker_label: Option<Label>,
    pub deletion: Option<Deletion>,
    pub cells: Vec<Cell>,
}

/// A range tombstone over clustering prefixes, stored as encoded clustering bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeTombstone {
    /// Encoded clustering start (inclusive) — empty means from the partition start.
    pub start: Vec<u8>,
    /// Encoded clustering end (exclusive) — empty means to the partition end.
    pub end: Vec<u8>,
    pub deletion: Deletion,
}

impl RangeTombstone {
    pub fn covers(&self, encoded_clustering: &[u8]) -> bool {
        encoded_clustering >= self.start.as_slice()
            && (self.end.is_empty() || encoded_clustering < self.end.as_slice())
    }
}

/// Partition-level state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartitionHeader {
    pub deletion: Option<Deletion>,
    pub ranges: Vec<RangeTombstone>,
    /// Static cells.
    pub statics: Vec<Cell>,
}

fn merge_cells(into: &mut Vec<Cell>, new: Vec<Cell>) {
    for c in new {
        match into.binary_search_by_key(&c.column, |x| x.column) {
            Ok(i) => into[i].merge(c),
            Err(i) => into.insert(i, c),
        }
    }
}

impl Row {
    /// Merges a newer write into this row by Cassandra's rules.
    pub fn merge(&mut self, other: Row) {
        // Onto an empty row (a write's first statement on a key, a write onto no stored
        // version): the merge is `other` itself when its cells are in column order, one a
        // column, and it has no deletion to shadow them (nor a label without its marker).
        if self.is_empty()
            && other.deletion.is_none()
            && (other.marker.is_some() || other.marker_label.is_none())
            && other.cells.windows(2).all(|w| w[0].column < w[1].column)
        {
            *self = other;
            return;
        }
        if self.clustering.is_empty() {
            self.clustering = other.clustering;
        }
        (self.marker, self.marker_label) = match (self.marker, other.marker) {
            (Some(a), Some(b)) if !marker_wins(b, a) => (Some(a), self.marker_label.take()),
            (a, None) => (a, self.marker_label.take()),
            (_, b) => (b, other.marker_label),
        };
        self.deletion = Deletion::merge(self.deletion, other.deletion);
        merge_cells(&mut self.cells, other.cells);
        self.drop_shadowed();
    }

    /// Nothing at all: [`Row::default`].
    fn is_empty(&self) -> bool {
        self.clustering.is_empty()
            && self.marker.is_none()
            && self.marker_label.is_none()
            && self.deletion.is_none()
            && self.cells.is_empty()
    }

    /// Removes what the row deletion shadows (it keeps the deletion itself).
    pub(crate) fn drop_shadowed(&mut self) {
        if let Some(d) = self.deletion {
            if matches!(self.marker, Some(m) if d.shadows(m.ts)) {
                self.marker = None;
                self.marker_label = None;
            }
            self.cells.retain_mut(|c| c.shadow(d));
        }
    }

    /// Whether the row's marker (an INSERT's) is live at `now` once `outer` deletions
    /// (partition/range) apply.
    pub fn marker_is_live(&self, now: LocalSecs, outer: Option<Deletion>) -> bool {
        let shadow = Deletion::merge(self.deletion, outer);
        matches!(self.marker, Some(m) if m.is_live(now) && !matches!(shadow, Some(d) if d.shadows(m.ts)))
    }

    /// Whether the row is live at `now` once `outer` deletions (partition/range) apply:
    /// a live marker or any live cell.
    pub fn is_live(&self, now: LocalSecs, outer: Option<Deletion>) -> bool {
        self.is_live_for(now, outer, |_| true)
    }

    /// [`Row::is_live`] as a read that names only the columns `queried` accepts sees it
    /// (Cassandra's `BTreeRow.filter`, CASSANDRA-10657): a cell of a column the read fetches
    /// but does not name counts only when written no earlier than the row's marker, even an
    /// expired marker. So a row whose newer INSERT has expired, kept alive by an older cell
    /// alone, is found by `SELECT *` and not by a SELECT of another regular column.
    pub fn is_live_for(
        &self,
        now: LocalSecs,
        outer: Option<Deletion>,
        queried: impl Fn(u16) -> bool,
    ) -> bool {
        if self.marker_is_live(now, outer) {
            return true;
        }
        let shadow = Deletion::merge(self.deletion, outer);
        let ok = |ts: i64| !matches!(shadow, Some(d) if d.shadows(ts));
        let marker_ts = self.marker.map(|m| m.ts).filter(|ts| ok(*ts));
        self.cells.iter().any(|c| {
            let counts = |ts: i64| queried(c.column) || marker_ts.is_none_or(|m| ts >= m);
            match &c.value {
                CellValue::Complex(x) => x
                    .elements
                    .iter()
                    .any(|e| counts(e.ts) && Complex::shows(e, now, shadow)),
                v => counts(c.ts) && v.live_at(now).is_some() && ok(c.ts),
            }
        })
    }

    /// The cell of `column` that is live at `now` under `outer` deletions (a collection with
    /// its live elements only).
    pub fn cell(
        &self,
        column: u16,
        now: LocalSecs,
        outer: Option<Deletion>,
    ) -> Option<std::borrow::Cow<'_, Cell>> {
        let shadow = Deletion::merge(self.deletion, outer);
        let i = self
            .cells
            .binary_search_by_key(&column, |c| c.column)
            .ok()?;
        self.cells[i].visible(now, shadow)
    }

    /// The live value at `now` of the cell of `column` (of type `ty`) under the outer
    /// deletion `outer`: `value_of(self.cell(..))` with a simple cell's case inline (no
    /// `Cow<Cell>` in between), as a point read needs it for every selected column.
    #[inline]
    pub fn value(
        &self,
        column: u16,
        ty: &proto::types::ColumnType,
        now: LocalSecs,
        outer: Option<Deletion>,
    ) -> Option<std::borrow::Cow<'_, [u8]>> {
        let i = self
            .cells
            .binary_search_by_key(&column, |c| c.column)
            .ok()?;
        let cell = &self.cells[i];
        match &cell.value {
            CellValue::Complex(_) => value_of(self.cell(column, now, outer)?, ty, now),
            v => {
                let shadow = Deletion::merge(self.deletion, outer);
                if matches!(shadow, Some(d) if d.shadows(cell.ts)) {
                    return None;
                }
                v.live_at(now).map(std::borrow::Cow::Borrowed)
            }
        }
    }

    /// Compaction: drops expired data and tombstones older than `gc_before` (local seconds).
    /// Returns None when nothing is left.
    pub fn purge(&mut self, now: LocalSecs, gc_before: LocalSecs) -> bool {
        // Expired cells become tombstones first, so they still shadow older data until gc.
        fn expire(v: &mut CellValue, now: LocalSecs) {
            if let CellValue::Live {
                expiry: Some(e), ..
            } = v
            {
                if e.expires_at <= now {
                    *v = CellValue::Tombstone {
                        local_del: e.expires_at,
                    };
                }
            }
        }
        let kept = |v: &CellValue| match v {
            CellValue::Tombstone { local_del } => *local_del >= gc_before,
            _ => true,
        };
        for c in &mut self.cells {
            match &mut c.value {
                CellValue::Complex(x) => {
                    for e in &mut x.elements {
                        expire(&mut e.value, now);
                    }
                    x.elements.retain(|e| kept(&e.value));
                    if matches!(x.deletion, Some(d) if d.local_del < gc_before) {
                        x.deletion = None;
                    }
                }
                v => expire(v, now),
            }
        }
        self.cells.retain(|c| match &c.value {
            CellValue::Complex(x) => x.deletion.is_some() || !x.elements.is_empty(),
            v => kept(v),
        });
        if let Some(m) = self.marker {
            if let Some(e) = m.expiry {
                if e.expires_at <= now && e.expires_at < gc_before {
                    self.marker = None;
                    self.marker_label = None;
                }
            }
        }
        if matches!(self.deletion, Some(d) if d.local_del < gc_before) {
            self.deletion = None;
        }
        self.marker.is_some() || self.deletion.is_some() || !self.cells.is_empty()
    }
}

// ---------------------------------------------------------------------------------------
// Visibility labels: what a reader with given authorizations may see.

/// Whether a value labelled `label` is hidden from `auths`.
fn hidden(label: Option<&[u8]>, auths: &crate::visibility::Authorizations) -> bool {
    label.is_some_and(|l| !auths.can_see(l))
}

/// Drops the cells (and collection elements) `auths` may not see. A hidden cell is removed,
/// not turned into a tombstone: the reader must not learn that something newer is there.
fn hide_cells(cells: &mut Vec<Cell>, auths: &crate::visibility::Authorizations) {
    cells.retain_mut(|c| match &mut c.value {
        CellValue::Complex(x) => {
            x.elements.retain(|e| !hidden(e.value.label(), auths));
            if x.elements.is_empty() && x.deletion.is_none() {
                return false;
            }
            c.ts = x.max_ts();
            true
        }
        v => !hidden(v.label(), auths),
    });
}

impl Complex {
    /// The elements a reader with `auths` sees (a list update by index or value works on the
    /// list as its writer reads it, so that it never counts hidden items).
    pub(crate) fn hide(&mut self, auths: &crate::visibility::Authorizations) {
        self.elements.retain(|e| !hidden(e.value.label(), auths));
    }
}

impl Row {
    /// This row as a reader with `auths` sees it: hidden cells, elements and marker removed,
    /// so that liveness, values, `writetime`, `ttl`, counts and paging see only the rest.
    pub fn hide(&mut self, auths: &crate::visibility::Authorizations) {
        if hidden(self.marker_label.as_deref(), auths) {
            self.marker = None;
            self.marker_label = None;
        }
        hide_cells(&mut self.cells, auths);
    }

    /// Whether anything in the row carries a label (a table's rows written before it had
    /// labels, or without any, need no filtering).
    pub fn has_labels(&self) -> bool {
        self.marker_label.is_some() || cells_have_labels(&self.cells)
    }
}

fn cells_have_labels(cells: &[Cell]) -> bool {
    cells.iter().any(|c| match &c.value {
        CellValue::Complex(x) => x.elements.iter().any(|e| e.value.label().is_some()),
        v => v.label().is_some(),
    })
}

impl PartitionHeader {
    /// The static cells a reader with `auths` sees (see [`Row::hide`]).
    pub fn hide(&mut self, auths: &crate::visibility::Authorizations) {
        if cells_have_labels(&self.statics) {
            hide_cells(&mut self.statics, auths);
        }
    }
}

impl PartitionHeader {
    pub fn merge(&mut self, other: PartitionHeader) {
        self.deletion = Deletion::merge(self.deletion, other.deletion);
        self.ranges.extend(other.ranges);
        merge_cells(&mut self.statics, other.statics);
        if let Some(d) = self.deletion {
            self.statics.retain_mut(|c| c.shadow(d));
            self.ranges.retain(|r| r.deletion.ts > d.ts);
        }
    }

    /// The strongest deletion that applies to a row with this encoded clustering.
    pub fn deletion_for(&self, encoded_clustering: &[u8]) -> Option<Deletion> {
        let mut d = self.deletion;
        for r in &self.ranges {
            if r.covers(encoded_clustering) {
                d = Deletion::merge(d, Some(r.deletion));
            }
        }
        d
    }

    pub fn static_cell(&self, column: u16, now: LocalSecs) -> Option<std::borrow::Cow<'_, Cell>> {
        let i = self
            .statics
            .binary_search_by_key(&column, |c| c.column)
            .ok()?;
        self.statics[i].visible(now, self.deletion)
    }

    pub fn has_live_statics(&self, now: LocalSecs) -> bool {
        self.statics
            .iter()
            .any(|c| self.static_cell(c.column, now).is_some())
    }

    pub fn purge(&mut self, now: LocalSecs, gc_before: LocalSecs) -> bool {
        let mut as_row = Row {
            cells: std::mem::take(&mut self.statics),
            ..Row::default()
        };
        as_row.purge(now, gc_before);
        self.statics = as_row.cells;
        self.ranges.retain(|r| r.deletion.local_del >= gc_before);
        if matches!(self.deletion, Some(d) if d.local_del < gc_before) {
            self.deletion = None;
        }
        self.deletion.is_some() || !self.ranges.is_empty() || !self.statics.is_empty()
    }
}

// ---------------------------------------------------------------------------------------
// Binary encoding. Format version byte first so the layout can evolve.

const ROW_V1: u8 = 1;
const HEADER_V1: u8 = 2;
/// A row written blind (`Row::encode_partial`): ROW_V1's layout, holding only what one write
/// changed; the storage completes it with the row's older versions (`RowMerge`).
const ROW_PARTIAL: u8 = 3;
/// The compact row format every row is written in now (ROW_V1 and ROW_PARTIAL are still
/// read): ROW_V1's layout with counts, lengths and column ids as LEB128 varints, and every
/// timestamp as a zigzag varint delta from a base timestamp written once after the format
/// byte (a row's cells usually share one write's timestamp: a byte each instead of eight).
/// A 10-field YCSB row of 1,000 value bytes takes 1,065 bytes instead of 1,178, about what
/// Cassandra's sstable format takes (bench/results/2026-11-29/disk).
const ROW_V2: u8 = 4;
/// A partial row (as ROW_PARTIAL) in ROW_V2's layout.
const ROW_PARTIAL_V2: u8 = 5;

/// Whether a stored row value is partial (written blind, see [`Row::encode_partial`]).
pub(crate) fn is_partial(value: &[u8]) -> bool {
    matches!(value.first(), Some(&(ROW_PARTIAL | ROW_PARTIAL_V2)))
}

// A cell's tag. Simple cells keep the first format's tags and layout; a non-frozen collection
// (tag 2) is its kind, its deletion and its elements (path, timestamp, then a simple value).
const CELL_LIVE: u8 = 0;
const CELL_TOMBSTONE: u8 = 1;
const CELL_COMPLEX: u8 = 2;
/// A live cell with a visibility label: tag 0's layout, then the label's bytes. Only labelled
/// cells use it, so unlabelled cells (and every table without `visibility`) keep their bytes.
const CELL_LIVE_LABELLED: u8 = 3;

// A row marker's tag: absent, present, present with a visibility label (then its bytes).
const MARKER_NONE: u8 = 0;
const MARKER: u8 = 1;
const MARKER_LABELLED: u8 = 2;

/// Corrupt stored bytes: reported, never a panic.
#[derive(Debug, thiserror::Error)]
#[error("corrupt stored row at byte {0}")]
pub struct CorruptRow(pub usize);

struct Reader<'a> {
    buf: &'a [u8],
    /// What `buf` is the bytes of: values are slices of it.
    shared: &'a Bytes,
    pos: usize,
    /// ROW_V2's base timestamp (see [`Writer`]); `None` reads ROW_V1's fixed-width integers.
    base: Option<i64>,
}
impl<'a> Reader<'a> {
    fn new(shared: &'a Bytes) -> Reader<'a> {
        Reader {
            buf: shared,
            shared,
            pos: 0,
            base: None,
        }
    }
    /// A LEB128 varint; most (timestamp deltas, column ids, short lengths) are one byte,
    /// read inline.
    #[inline]
    fn varint(&mut self) -> Result<u64, CorruptRow> {
        match self.buf.get(self.pos) {
            Some(&b) if b < 0x80 => {
                self.pos += 1;
                Ok(u64::from(b))
            }
            _ => self.long_varint(),
        }
    }
    #[cold]
    fn long_varint(&mut self) -> Result<u64, CorruptRow> {
        let at = self.pos;
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(CorruptRow(at))
    }
    /// See [`Writer::len`].
    #[inline]
    fn len(&mut self, width: usize) -> Result<usize, CorruptRow> {
        match (self.base, width) {
            (Some(_), _) => {
                let at = self.pos;
                usize::try_from(self.varint()?).map_err(|_| CorruptRow(at))
            }
            (None, 2) => Ok(self.u16()? as usize),
            (None, _) => Ok(self.u32()? as usize),
        }
    }
    #[inline]
    fn ts(&mut self) -> Result<i64, CorruptRow> {
        match self.base {
            Some(base) => {
                let z = self.varint()?;
                Ok(base.wrapping_add((z >> 1) as i64 ^ -((z & 1) as i64)))
            }
            None => self.i64(),
        }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], CorruptRow> {
        let end = self.pos.checked_add(n).ok_or(CorruptRow(self.pos))?;
        let s = self.buf.get(self.pos..end).ok_or(CorruptRow(self.pos))?;
        self.pos = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, CorruptRow> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, CorruptRow> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> Result<u32, CorruptRow> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn i64(&mut self) -> Result<i64, CorruptRow> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_be_bytes(a))
    }
    fn bytes(&mut self) -> Result<Vec<u8>, CorruptRow> {
        let n = self.len(4)?;
        Ok(self.take(n)?.to_vec())
    }
    /// Like `bytes`, as a slice of the shared buffer (no copy).
    #[inline]
    fn shared(&mut self) -> Result<Bytes, CorruptRow> {
        let n = self.len(4)?;
        let start = self.pos;
        self.take(n)?;
        Ok(self.shared.slice(start..self.pos))
    }
    fn deletion(&mut self) -> Result<Option<Deletion>, CorruptRow> {
        Ok(match self.u8()? {
            0 => None,
            _ => Some(Deletion {
                ts: self.ts()?,
                local_del: self.u32()?,
            }),
        })
    }
    fn expiry(&mut self) -> Result<Option<Expiry>, CorruptRow> {
        Ok(match self.u8()? {
            0 => None,
            _ => Some(Expiry {
                ttl: self.u32()?,
                expires_at: self.u32()?,
            }),
        })
    }
    /// A count then that many items of at least `min_len` bytes each (which bounds the
    /// allocation by what is there).
    fn seq<T>(
        &mut self,
        min_len: usize,
        mut item: impl FnMut(&mut Self) -> Result<T, CorruptRow>,
    ) -> Result<Vec<T>, CorruptRow> {
        let n = self.len(4)?;
        let mut out = Vec::with_capacity(n.min(self.buf.len() / min_len + 1));
        for _ in 0..n {
            out.push(item(self)?);
        }
        Ok(out)
    }
    fn cells(&mut self) -> Result<Vec<Cell>, CorruptRow> {
        self.seq(4, |r| {
            let at = r.pos;
            let column = u16::try_from(r.len(2)?).map_err(|_| CorruptRow(at))?;
            let ts = r.ts()?;
            // Simple cells (the common case) are decoded here, inline; only a collection's
            // cell goes through the recursive `value`, which the compiler cannot inline.
            let value = match r.buf.get(r.pos) {
                Some(&CELL_LIVE) => {
                    r.pos += 1;
                    let expiry = r.expiry()?;
                    CellValue::Live {
                        value: r.shared()?,
                        expiry,
                        label: None,
                    }
                }
                Some(&CELL_TOMBSTONE) => {
                    r.pos += 1;
                    CellValue::Tombstone {
                        local_del: r.u32()?,
                    }
                }
                _ => r.value(true)?,
            };
            Ok(Cell { column, ts, value })
        })
    }
    /// A cell's value; a collection only where `complex` allows it (not inside another).
    fn value(&mut self, complex: bool) -> Result<CellValue, CorruptRow> {
        let at = self.pos;
        Ok(match self.u8()? {
            CELL_LIVE => {
                let expiry = self.expiry()?;
                CellValue::Live {
                    value: self.shared()?,
                    expiry,
                    label: None,
                }
            }
            CELL_LIVE_LABELLED => {
                let expiry = self.expiry()?;
                CellValue::Live {
                    value: self.shared()?,
                    expiry,
                    label: Some(self.bytes()?.into()),
                }
            }
            CELL_COMPLEX if complex => {
                let kind = match self.u8()? {
                    0 => CollectionKind::List,
                    1 => CollectionKind::Set,
                    2 => CollectionKind::Map,
                    3 => CollectionKind::Udt,
                    _ => return Err(CorruptRow(at)),
                };
                let deletion = self.deletion()?;
                let elements = self.seq(4, |r| {
                    Ok(Element {
                        path: r.bytes()?,
                        ts: r.ts()?,
                        value: r.value(false)?,
                    })
                })?;
                CellValue::Complex(Complex {
                    kind,
                    deletion,
                    elements,
                })
            }
            CELL_TOMBSTONE => CellValue::Tombstone {
                local_del: self.u32()?,
            },
            _ => return Err(CorruptRow(at)),
        })
    }
}

impl Row {
    /// About how many bytes the row's live values take (a size hint for a result buffer the
    /// row is copied into; a collection counts a few bytes per element).
    pub fn value_bytes(&self) -> usize {
        self.cells
            .iter()
            .map(|c| match &c.value {
                CellValue::Live { value, .. } => value.len(),
                CellValue::Complex(x) => 16 * x.elements.len(),
                CellValue::Tombstone { .. } => 0,
            })
            .sum()
    }

    pub fn encode(&self) -> Vec<u8> {
        self.encode_as(ROW_V2)
    }

    /// The row as a partial value: what one write changes, stored without reading the row (a
    /// blind write). Reads, flushes and compactions merge it onto the row's older versions
    /// ([`RowMerge`]), exactly as [`Row::merge`] would have merged it before the write.
    pub fn encode_partial(&self) -> Vec<u8> {
        self.encode_as(ROW_PARTIAL_V2)
    }

    /// [`Row::encode`] straight into the store's buffer: no copy of the encoded row when it
    /// is written ([`storage::WriteBatch::put_value`]; ~1,000 instructions a 4 KB row).
    pub fn encode_value(&self) -> storage::Value {
        self.value_as(ROW_V2)
    }

    /// [`Row::encode_partial`] straight into the store's buffer.
    pub fn encode_partial_value(&self) -> storage::Value {
        self.value_as(ROW_PARTIAL_V2)
    }

    /// The row in ROW_V2's layout (`format`: ROW_V2 or ROW_PARTIAL_V2).
    fn encode_as(&self, format: u8) -> Vec<u8> {
        let capacity = 24 + self.value_bytes() + self.cells.len() * 8;
        self.write_as(format, Vec::with_capacity(capacity))
    }

    /// [`Row::encode_as`] into a value of the store's: its length counted first, then its bytes
    /// written into a buffer of exactly that length (not a larger one cut down: the memtable
    /// counts a value by its length).
    fn value_as(&self, format: u8) -> storage::Value {
        // Both passes run the same writer over the same row, so they agree; were they not to,
        // the row is encoded and copied as before rather than stored short.
        self.built_as(format)
            .unwrap_or_else(|| self.encode_as(format).into())
    }

    /// [`Row::value_as`] without its fallback: `None` if the two passes disagreed.
    fn built_as(&self, format: u8) -> Option<storage::Value> {
        let len = self.write_as(format, Count(0)).0;
        storage::Value::build(len, |buf| self.write_as(format, Fill { buf, at: 0 }).at)
    }

    /// The row's bytes in ROW_V2's layout, written to `out`.
    #[inline]
    fn write_as<O: Out>(&self, format: u8, out: O) -> O {
        let base = self
            .marker
            .map(|m| m.ts)
            .or_else(|| self.cells.first().map(|c| c.ts))
            .or_else(|| self.deletion.map(|d| d.ts))
            .unwrap_or(0);
        let mut w = Writer::row_into(format, base, out);
        w.len(self.clustering.len(), 2);
        for c in &self.clustering {
            w.bytes(c);
        }
        w.marker(self.marker, self.marker_label.as_deref());
        w.deletion(self.deletion);
        w.cells(&self.cells);
        w.out
    }

    /// Decodes a stored row from borrowed bytes (copied once into the row's buffer).
    pub fn decode(buf: &[u8]) -> Result<Row, CorruptRow> {
        Row::decode_shared(&Bytes::copy_from_slice(buf))
    }

    /// Decodes a stored row, taking its bytes as the buffer its values share.
    pub fn decode_owned(buf: Vec<u8>) -> Result<Row, CorruptRow> {
        Row::decode_shared(&Bytes::from(buf))
    }

    /// Decodes a row whose cells share `shared` instead of copying out of it.
    pub fn decode_shared(shared: &Bytes) -> Result<Row, CorruptRow> {
        let mut r = Reader::new(shared);
        match r.u8()? {
            ROW_V1 | ROW_PARTIAL => {}
            ROW_V2 | ROW_PARTIAL_V2 => r.base = Some(r.i64()?),
            _ => return Err(CorruptRow(0)),
        }
        let n = r.len(2)?;
        let mut clustering = Vec::with_capacity(n.min(64));
        for _ in 0..n {
            clustering.push(r.bytes()?);
        }
        let tag = r.u8()?;
        let marker = match tag {
            MARKER_NONE => None,
            _ => Some(Marker {
                ts: r.ts()?,
                expiry: r.expiry()?,
            }),
        };
        let marker_label = match tag {
            MARKER_LABELLED => Some(r.bytes()?.into()),
            _ => None,
        };
        let deletion = r.deletion()?;
        let cells = r.cells()?;
        Ok(Row {
            clustering,
            marker,
            marker_label,
            deletion,
            cells,
        })
    }
}

impl PartitionHeader {
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::fixed(32);
        w.u8(HEADER_V1);
        w.deletion(self.deletion);
        w.u32(self.ranges.len() as u32);
        for rt in &self.ranges {
            w.bytes(&rt.start);
            w.bytes(&rt.end);
            w.deletion(Some(rt.deletion));
        }
        w.cells(&self.statics);
        w.out
    }

    pub fn decode(buf: &[u8]) -> Result<PartitionHeader, CorruptRow> {
        let shared = Bytes::copy_from_slice(buf);
        let mut r = Reader::new(&shared);
        if r.u8()? != HEADER_V1 {
            return Err(CorruptRow(0));
        }
        let deletion = r.deletion()?;
        let n = r.u32()? as usize;
        let mut ranges = Vec::with_capacity(n.min(buf.len() / 8 + 1));
        for _ in 0..n {
            let start = r.bytes()?;
            let end = r.bytes()?;
            let deletion = r.deletion()?.ok_or(CorruptRow(r.pos))?;
            ranges.push(RangeTombstone {
                start,
                end,
                deletion,
            });
        }
        let statics = r.cells()?;
        Ok(PartitionHeader {
            deletion,
            ranges,
            statics,
        })
    }
}

mod in_place;
mod writer;
use in_place::merge_simple;
pub(crate) use in_place::{purge_keeps_as_is, PlainRow};
use writer::{Count, Fill, Out, Writer};

#[cfg(test)]
#[path = "row_tests.rs"]
mod tests;

/// Completes blind-written rows ([`Row::encode_partial`]) for the storage ([`storage::Merge`]):
/// a partial row merged onto an older version of its key is [`Row::merge`] of the two, the
/// merge every write did on the stored row before blind writes. Only row keys (`0x01 ...`)
/// hold partial values; partition headers and index entries never do.
pub struct RowMerge;

impl storage::Merge for RowMerge {
    fn is_partial(&self, key: &[u8], value: &[u8]) -> bool {
        key.first() == Some(&crate::keys::DATA_PREFIX) && is_partial(value)
    }

    fn merge(&self, _key: &[u8], newer: &[u8], older: &[u8]) -> Vec<u8> {
        merge_simple(newer, older).unwrap_or_else(|| merge_rows(newer, older))
    }

    fn complete(&self, _key: &[u8], partial: &[u8]) -> Vec<u8> {
        // A partial row and a complete one differ only in their format byte.
        let mut v = partial.to_vec();
        v[0] = match v[0] {
            ROW_PARTIAL => ROW_V1,
            _ => ROW_V2,
        };
        v
    }
}

/// `RowMerge::merge` through [`Row::merge`].
fn merge_rows(newer: &[u8], older: &[u8]) -> Vec<u8> {
    // A damaged version stays the merge's result, so that reads report it rather than a
    // row silently missing what it held.
    let Ok(newer_row) = Row::decode(newer) else {
        return newer.to_vec();
    };
    let Ok(mut row) = Row::decode(older) else {
        return older.to_vec();
    };
    row.merge(newer_row);
    if is_partial(older) {
        row.encode_partial()
    } else {
        row.encode()
    }
}
