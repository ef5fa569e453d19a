//! Stored rows and partition headers: cells with timestamps, TTLs and tombstones, their
//! binary encoding, and Cassandra's reconciliation rules.
//!
//! A CQL row is one storage value ([`Row`]); partition-level state — the partition
//! tombstone, range tombstones and static cells — is one more value per partition
//! ([`PartitionHeader`]). Writes merge into what is stored (read-modify-write under a
//! stripe lock), so a point read is one look-up plus a usually Bloom-negative header look-up.
//!
//! # Reconciliation (Cassandra's rules)
//! - The higher write timestamp (microseconds) wins.
//! - On a tie a tombstone wins over a live cell; between live cells the greater value wins.
//! - A deletion at timestamp `t` (row, range or partition) shadows everything written at `<= t`.
//! - An expiring cell past its expiry reads as a tombstone written at its own timestamp.

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

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CellValue {
    Live {
        value: Vec<u8>,
        expiry: Option<Expiry>,
    },
    Tombstone {
        local_del: LocalSecs,
    },
}

/// One column's value in a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    pub column: u16,
    pub ts: i64,
    pub value: CellValue,
}

impl Cell {
    /// The live value at `now`, if any.
    pub fn live_value(&self, now: LocalSecs) -> Option<&[u8]> {
        match &self.value {
            CellValue::Live { value, expiry } => match expiry {
                Some(e) if e.expires_at <= now => None,
                _ => Some(value),
            },
            CellValue::Tombstone { .. } => None,
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

    fn is_tombstone_at(&self, now: LocalSecs) -> bool {
        self.live_value(now).is_none()
    }

    /// Cassandra's reconciliation of two versions of one cell; true if `self` beats `other`.
    fn wins_over(&self, other: &Cell) -> bool {
        if self.ts != other.ts {
            return self.ts > other.ts;
        }
        // Judged at a fixed time so that the outcome never depends on when it is computed.
        let (a_dead, b_dead) = (self.is_tombstone_at(0), other.is_tombstone_at(0));
        match (a_dead, b_dead) {
            (true, false) => true,
            (false, true) => false,
            (true, true) => self.local_del() >= other.local_del(),
            (false, false) => {
                let (a, b) = (self.raw_value(), other.raw_value());
                if a != b {
                    return a > b;
                }
                self.local_del() >= other.local_del()
            }
        }
    }

    fn raw_value(&self) -> &[u8] {
        match &self.value {
            CellValue::Live { value, .. } => value,
            CellValue::Tombstone { .. } => &[],
        }
    }

    fn local_del(&self) -> u32 {
        match &self.value {
            CellValue::Live {
                expiry: Some(e), ..
            } => e.expires_at,
            CellValue::Live { expiry: None, .. } => u32::MAX,
            CellValue::Tombstone { local_del } => *local_del,
        }
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
            Ok(i) => {
                if c.wins_over(&into[i]) {
                    into[i] = c;
                }
            }
            Err(i) => into.insert(i, c),
        }
    }
}

impl Row {
    /// Merges a newer write into this row by Cassandra's rules.
    pub fn merge(&mut self, other: Row) {
        if self.clustering.is_empty() {
            self.clustering = other.clustering;
        }
        self.marker = match (self.marker, other.marker) {
            (Some(a), Some(b)) => Some(if b.ts >= a.ts { b } else { a }),
            (a, None) => a,
            (None, b) => b,
        };
        self.deletion = Deletion::merge(self.deletion, other.deletion);
        merge_cells(&mut self.cells, other.cells);
        self.drop_shadowed();
    }

    /// Removes what the row deletion shadows (it keeps the deletion itself).
    fn drop_shadowed(&mut self) {
        if let Some(d) = self.deletion {
            if matches!(self.marker, Some(m) if d.shadows(m.ts)) {
                self.marker = None;
            }
            self.cells.retain(|c| !d.shadows(c.ts));
        }
    }

    /// Whether the row is live at `now` once `outer` deletions (partition/range) apply:
    /// a live marker or any live cell.
    pub fn is_live(&self, now: LocalSecs, outer: Option<Deletion>) -> bool {
        let shadow = Deletion::merge(self.deletion, outer);
        let ok = |ts: i64| !matches!(shadow, Some(d) if d.shadows(ts));
        if matches!(self.marker, Some(m) if m.is_live(now) && ok(m.ts)) {
            return true;
        }
        self.cells
            .iter()
            .any(|c| c.live_value(now).is_some() && ok(c.ts))
    }

    /// The cell of `column` that is live at `now` under `outer` deletions.
    pub fn cell(&self, column: u16, now: LocalSecs, outer: Option<Deletion>) -> Option<&Cell> {
        let shadow = Deletion::merge(self.deletion, outer);
        let i = self
            .cells
            .binary_search_by_key(&column, |c| c.column)
            .ok()?;
        let c = &self.cells[i];
        if matches!(shadow, Some(d) if d.shadows(c.ts)) || c.live_value(now).is_none() {
            return None;
        }
        Some(c)
    }

    /// Compaction: drops expired data and tombstones older than `gc_before` (local seconds).
    /// Returns None when nothing is left.
    pub fn purge(&mut self, now: LocalSecs, gc_before: LocalSecs) -> bool {
        // Expired cells become tombstones first, so they still shadow older data until gc.
        for c in &mut self.cells {
            if let CellValue::Live {
                expiry: Some(e), ..
            } = &c.value
            {
                if e.expires_at <= now {
                    c.value = CellValue::Tombstone {
                        local_del: e.expires_at,
                    };
                }
            }
        }
        self.cells.retain(|c| match c.value {
            CellValue::Tombstone { local_del } => local_del >= gc_before,
            CellValue::Live { .. } => true,
        });
        if let Some(m) = self.marker {
            if let Some(e) = m.expiry {
                if e.expires_at <= now && e.expires_at < gc_before {
                    self.marker = None;
                }
            }
        }
        if matches!(self.deletion, Some(d) if d.local_del < gc_before) {
            self.deletion = None;
        }
        self.marker.is_some() || self.deletion.is_some() || !self.cells.is_empty()
    }
}

impl PartitionHeader {
    pub fn merge(&mut self, other: PartitionHeader) {
        self.deletion = Deletion::merge(self.deletion, other.deletion);
        self.ranges.extend(other.ranges);
        merge_cells(&mut self.statics, other.statics);
        if let Some(d) = self.deletion {
            self.statics.retain(|c| !d.shadows(c.ts));
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

    pub fn static_cell(&self, column: u16, now: LocalSecs) -> Option<&Cell> {
        let i = self
            .statics
            .binary_search_by_key(&column, |c| c.column)
            .ok()?;
        let c = &self.statics[i];
        if matches!(self.deletion, Some(d) if d.shadows(c.ts)) || c.live_value(now).is_none() {
            return None;
        }
        Some(c)
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

struct Writer(Vec<u8>);
impl Writer {
    fn u8(&mut self, v: u8) {
        self.0.push(v)
    }
    fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_be_bytes())
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_be_bytes())
    }
    fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_be_bytes())
    }
    fn bytes(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
    }
    fn deletion(&mut self, d: Option<Deletion>) {
        match d {
            Some(d) => {
                self.u8(1);
                self.i64(d.ts);
                self.u32(d.local_del);
            }
            None => self.u8(0),
        }
    }
    fn expiry(&mut self, e: Option<Expiry>) {
        match e {
            Some(e) => {
                self.u8(1);
                self.u32(e.ttl);
                self.u32(e.expires_at);
            }
            None => self.u8(0),
        }
    }
    fn cells(&mut self, cells: &[Cell]) {
        self.u32(cells.len() as u32);
        for c in cells {
            self.u16(c.column);
            self.i64(c.ts);
            match &c.value {
                CellValue::Live { value, expiry } => {
                    self.u8(0);
                    self.expiry(*expiry);
                    self.bytes(value);
                }
                CellValue::Tombstone { local_del } => {
                    self.u8(1);
                    self.u32(*local_del);
                }
            }
        }
    }
}

/// Corrupt stored bytes: reported, never a panic.
#[derive(Debug, thiserror::Error)]
#[error("corrupt stored row at byte {0}")]
pub struct CorruptRow(pub usize);

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}
impl<'a> Reader<'a> {
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
        let n = self.u32()? as usize;
        Ok(self.take(n)?.to_vec())
    }
    fn deletion(&mut self) -> Result<Option<Deletion>, CorruptRow> {
        Ok(match self.u8()? {
            0 => None,
            _ => Some(Deletion {
                ts: self.i64()?,
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
    fn cells(&mut self) -> Result<Vec<Cell>, CorruptRow> {
        let n = self.u32()? as usize;
        // Each cell takes at least 11 bytes: bound the allocation by what is there.
        let mut cells = Vec::with_capacity(n.min(self.buf.len() / 11 + 1));
        for _ in 0..n {
            let column = self.u16()?;
            let ts = self.i64()?;
            let value = match self.u8()? {
                0 => {
                    let expiry = self.expiry()?;
                    CellValue::Live {
                        value: self.bytes()?,
                        expiry,
                    }
                }
                _ => CellValue::Tombstone {
                    local_del: self.u32()?,
                },
            };
            cells.push(Cell { column, ts, value });
        }
        Ok(cells)
    }
}

impl Row {
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer(Vec::with_capacity(64 + self.cells.len() * 24));
        w.u8(ROW_V1);
        w.u16(self.clustering.len() as u16);
        for c in &self.clustering {
            w.bytes(c);
        }
        match self.marker {
            Some(m) => {
                w.u8(1);
                w.i64(m.ts);
                w.expiry(m.expiry);
            }
            None => w.u8(0),
        }
        w.deletion(self.deletion);
        w.cells(&self.cells);
        w.0
    }

    pub fn decode(buf: &[u8]) -> Result<Row, CorruptRow> {
        let mut r = Reader { buf, pos: 0 };
        if r.u8()? != ROW_V1 {
            return Err(CorruptRow(0));
        }
        let n = r.u16()? as usize;
        let mut clustering = Vec::with_capacity(n.min(64));
        for _ in 0..n {
            clustering.push(r.bytes()?);
        }
        let marker = match r.u8()? {
            0 => None,
            _ => Some(Marker {
                ts: r.i64()?,
                expiry: r.expiry()?,
            }),
        };
        let deletion = r.deletion()?;
        let cells = r.cells()?;
        Ok(Row {
            clustering,
            marker,
            deletion,
            cells,
        })
    }
}

impl PartitionHeader {
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer(Vec::with_capacity(32));
        w.u8(HEADER_V1);
        w.deletion(self.deletion);
        w.u32(self.ranges.len() as u32);
        for rt in &self.ranges {
            w.bytes(&rt.start);
            w.bytes(&rt.end);
            w.deletion(Some(rt.deletion));
        }
        w.cells(&self.statics);
        w.0
    }

    pub fn decode(buf: &[u8]) -> Result<PartitionHeader, CorruptRow> {
        let mut r = Reader { buf, pos: 0 };
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

#[cfg(test)]
mod tests {
    use super::*;

    fn live(col: u16, ts: i64, v: &[u8]) -> Cell {
        Cell {
            column: col,
            ts,
            value: CellValue::Live {
                value: v.to_vec(),
                expiry: None,
            },
        }
    }
    fn dead(col: u16, ts: i64) -> Cell {
        Cell {
            column: col,
            ts,
            value: CellValue::Tombstone { local_del: 5 },
        }
    }

    #[test]
    fn higher_timestamp_wins_either_order() {
        let mut a = Row {
            cells: vec![live(1, 10, b"new")],
            ..Row::default()
        };
        a.merge(Row {
            cells: vec![live(1, 5, b"old")],
            ..Row::default()
        });
        assert_eq!(a.cells[0].raw_value(), b"new");
    }

    #[test]
    fn tie_tombstone_wins_then_greater_value() {
        let mut a = Row {
            cells: vec![live(1, 10, b"zzz")],
            ..Row::default()
        };
        a.merge(Row {
            cells: vec![dead(1, 10)],
            ..Row::default()
        });
        assert!(a.cell(1, 0, None).is_none());
        let mut b = Row {
            cells: vec![live(1, 10, b"b")],
            ..Row::default()
        };
        b.merge(Row {
            cells: vec![live(1, 10, b"a")],
            ..Row::default()
        });
        assert_eq!(b.cell(1, 0, None).unwrap().raw_value(), b"b");
    }

    #[test]
    fn row_deletion_shadows_older_cells_not_newer() {
        let mut r = Row {
            marker: Some(Marker {
                ts: 5,
                expiry: None,
            }),
            cells: vec![live(1, 5, b"x"), live(2, 20, b"y")],
            ..Row::default()
        };
        r.merge(Row {
            deletion: Some(Deletion {
                ts: 10,
                local_del: 1,
            }),
            ..Row::default()
        });
        assert!(r.cell(1, 0, None).is_none());
        assert!(r.cell(2, 0, None).is_some());
        assert!(r.is_live(0, None));
        let outer = Some(Deletion {
            ts: 30,
            local_del: 1,
        });
        assert!(!r.is_live(0, outer));
    }

    #[test]
    fn expired_cells_read_as_absent_and_purge() {
        let mut r = Row {
            cells: vec![Cell {
                column: 1,
                ts: 1,
                value: CellValue::Live {
                    value: b"v".to_vec(),
                    expiry: Some(Expiry {
                        ttl: 10,
                        expires_at: 100,
                    }),
                },
            }],
            ..Row::default()
        };
        assert!(r.cell(1, 99, None).is_some());
        assert_eq!(r.cells[0].ttl_remaining(95), Some(5));
        assert!(r.cell(1, 100, None).is_none());
        assert!(r.purge(150, 50), "tombstone is kept until gc grace passes");
        assert!(!r.purge(150, 200));
    }

    #[test]
    fn encoding_round_trips_and_rejects_garbage() {
        let r = Row {
            clustering: vec![vec![1, 2], vec![]],
            marker: Some(Marker {
                ts: 7,
                expiry: Some(Expiry {
                    ttl: 3,
                    expires_at: 9,
                }),
            }),
            deletion: Some(Deletion {
                ts: 1,
                local_del: 2,
            }),
            cells: vec![live(1, 10, b"abc"), dead(3, 11)],
        };
        let enc = r.encode();
        assert_eq!(Row::decode(&enc).unwrap(), r);
        for cut in 0..enc.len() {
            assert!(Row::decode(&enc[..cut]).is_err());
        }
        let h = PartitionHeader {
            deletion: None,
            ranges: vec![RangeTombstone {
                start: vec![1],
                end: vec![],
                deletion: Deletion {
                    ts: 4,
                    local_del: 4,
                },
            }],
            statics: vec![live(9, 1, b"s")],
        };
        assert_eq!(PartitionHeader::decode(&h.encode()).unwrap(), h);
    }
}
