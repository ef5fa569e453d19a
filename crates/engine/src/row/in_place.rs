//! Rows of simple cells read in their stored bytes, without decoding them into a [`Row`]:
//! `RowMerge`'s fast path (two rows merged into the same bytes as [`Row::merge`] then
//! encoding), and a plain read's ([`PlainRow`]: a live row's values as slices of its bytes).

use super::*;
use smallvec::SmallVec;

/// A simple, unlabelled cell of a ROW_V2 row, read in place: what reconciliation compares,
/// and its bytes after the timestamp, which do not depend on the row's base timestamp.
struct RawCell<'a> {
    column: u16,
    ts: i64,
    rank: Rank<'a>,
    tail: &'a [u8],
    /// The whole cell as stored (column, timestamp, tail) and the base timestamp of its row:
    /// the cell's bytes in any row of the same base.
    whole: &'a [u8],
    base: i64,
}

/// A ROW_V2 row (or partial row) with no deletion, no visibility label and no collection
/// cell, read in place: `RowMerge`'s fast path.
struct RawRow<'a> {
    partial: bool,
    /// Its clustering, count first, as encoded.
    clustering: &'a [u8],
    marker: Option<Marker>,
    /// Where its cells start (after their count) and how many there are.
    cells: Reader<'a>,
    count: usize,
}

impl<'a> RawRow<'a> {
    /// `None` when the row is of another kind (or damaged): `Row::decode` reads it.
    fn read(buf: &'a [u8], empty: &'a Bytes) -> Option<RawRow<'a>> {
        let partial = match buf.first() {
            Some(&ROW_V2) => false,
            Some(&ROW_PARTIAL_V2) => true,
            _ => return None,
        };
        let mut r = Reader {
            buf,
            // Never read from: `RawRow` borrows `buf`'s bytes.
            shared: empty,
            pos: 1,
            base: None,
        };
        r.base = Some(r.i64().ok()?);
        let start = r.pos;
        for _ in 0..r.len(2).ok()? {
            let n = r.len(4).ok()?;
            r.take(n).ok()?;
        }
        let clustering = &buf[start..r.pos];
        let marker = match r.u8().ok()? {
            MARKER_NONE => None,
            MARKER => Some(Marker {
                ts: r.ts().ok()?,
                expiry: r.expiry().ok()?,
            }),
            _ => return None,
        };
        if r.deletion().ok()?.is_some() {
            return None;
        }
        let count = r.len(4).ok()?;
        Some(RawRow {
            partial,
            clustering,
            marker,
            cells: r,
            count,
        })
    }

    /// The column of the next cell, read without moving past it (`Some(None)` past the last;
    /// `None`: damaged).
    fn peek_column(&self) -> Option<Option<u16>> {
        if self.count == 0 {
            return Some(None);
        }
        let mut r = Reader {
            buf: self.cells.buf,
            shared: self.cells.shared,
            pos: self.cells.pos,
            base: self.cells.base,
        };
        Some(Some(u16::try_from(r.len(2).ok()?).ok()?))
    }

    /// The next cell when it is of the usual kind (live, with no expiry, a one-byte column
    /// id; its timestamp delta a varint of any length: a cell an UPDATE wrote after its row's
    /// INSERT is many microseconds from the row's base) and its column comes before `before`
    /// (any column when `None`): its column and value, moved past. `None` otherwise (or
    /// damaged), not moved: `next_cell` reads it (and accepts what this one does).
    // Always inlined: called per cell by plain reads and the merge's bulk copy, where a call
    // cost more than the cell's reading (Callgrind, session 39); a length of two bytes or
    // more is read out of line (`next_usual_long`).
    #[inline(always)]
    fn next_usual(&mut self, before: Option<u16>) -> Option<(u16, &'a [u8])> {
        if self.count == 0 {
            return None;
        }
        let r = &mut self.cells;
        r.base?;
        let at = r.pos;
        let (&column, rest) = r.buf.get(at..)?.split_first()?;
        if column >= 0x80 || before.is_some_and(|b| u16::from(column) >= b) {
            return None;
        }
        // The timestamp delta: at most ten bytes, as `Reader::varint` reads it; most often
        // one (a cell written with its row's base).
        let z_len = match rest.first() {
            Some(&z) if z < 0x80 => 1,
            _ => varint_len(rest)?,
        };
        // Live, with no expiry, and the value's length: one byte for a value under 128 bytes,
        // read here; a longer length through `Reader::len`.
        match *rest.get(z_len..z_len + 3)? {
            [CELL_LIVE, 0, n] if n < 0x80 => {
                let start = at + 4 + z_len;
                let end = start + usize::from(n);
                let value = r.buf.get(start..end)?;
                r.pos = end;
                self.count -= 1;
                Some((u16::from(column), value))
            }
            [CELL_LIVE, 0, _] => self.next_usual_long(at, column, z_len),
            _ => None,
        }
    }

    /// [`RawRow::next_usual`] of the cell at `at` whose value's length takes more than a
    /// byte, its column and the length of its timestamp delta read.
    #[inline(never)]
    fn next_usual_long(&mut self, at: usize, column: u8, z_len: usize) -> Option<(u16, &'a [u8])> {
        let r = &mut self.cells;
        r.pos = at + 3 + z_len;
        match r.len(4).and_then(|n| r.take(n)) {
            Ok(value) => {
                self.count -= 1;
                Some((u16::from(column), value))
            }
            Err(_) => {
                r.pos = at;
                None
            }
        }
    }

    /// Moves past the next cells of the usual kind (`next_usual`) whose columns come before
    /// `before` (all of them when `None`), and answers their bytes as stored and their
    /// number; stops at a cell of another kind (or damaged), for `next_cell` to read.
    fn skip_usual(&mut self, before: Option<u16>) -> (&'a [u8], usize) {
        let start = self.cells.pos;
        let mut skipped = 0;
        while self.next_usual(before).is_some() {
            skipped += 1;
        }
        (&self.cells.buf[start..self.cells.pos], skipped)
    }

    /// The next cell (`Some(None)` past the last); `None` when it is not a simple unlabelled
    /// cell, or damaged.
    fn next_cell(&mut self) -> Option<Option<RawCell<'a>>> {
        if self.count == 0 {
            return Some(None);
        }
        self.count -= 1;
        let r = &mut self.cells;
        // The usual cell, its head read at once: a column id and a timestamp delta of one
        // byte each, live, with no expiry (~40 fewer instructions a cell than the general
        // reads below; the value's length is a varint either way).
        if let (Some(base), Some(&[column, z, CELL_LIVE, 0])) =
            (r.base, r.buf.get(r.pos..r.pos + 4))
        {
            if column < 0x80 && z < 0x80 {
                let cell = r.pos;
                let start = r.pos + 2;
                r.pos += 4;
                let n = r.len(4).ok()?;
                let value = r.take(n).ok()?;
                let z = i64::from(z);
                return Some(Some(RawCell {
                    column: u16::from(column),
                    ts: base.wrapping_add((z >> 1) ^ -(z & 1)),
                    rank: Rank {
                        dead: false,
                        local_del: u32::MAX,
                        value,
                        label: None,
                    },
                    tail: &r.buf[start..r.pos],
                    whole: &r.buf[cell..r.pos],
                    base,
                }));
            }
        }
        let cell = r.pos;
        let column = u16::try_from(r.len(2).ok()?).ok()?;
        let ts = r.ts().ok()?;
        let start = r.pos;
        let rank = match r.u8().ok()? {
            CELL_LIVE => {
                let expiry = r.expiry().ok()?;
                let n = r.len(4).ok()?;
                Rank {
                    dead: false,
                    local_del: expiry.map_or(u32::MAX, |e| e.expires_at),
                    value: r.take(n).ok()?,
                    label: None,
                }
            }
            CELL_TOMBSTONE => Rank {
                dead: true,
                local_del: r.u32().ok()?,
                value: &[],
                label: None,
            },
            _ => return None,
        };
        Some(Some(RawCell {
            column,
            ts,
            rank,
            tail: &r.buf[start..r.pos],
            whole: &r.buf[cell..r.pos],
            base: r.base?,
        }))
    }
}

/// The length of the varint `bytes` start with, of at most ten bytes as `Reader::varint`
/// reads one (`None`: longer, or cut short). Its first eight bytes are read as one word: the
/// delta of a cell an UPDATE wrote after its row's INSERT takes four or five bytes, which a
/// byte-by-byte search took ~30 instructions to step over, on every such cell a merge copies
/// or a read skips (Callgrind, session 40).
#[inline(always)]
pub(super) fn varint_len(bytes: &[u8]) -> Option<usize> {
    if let Some(word) = bytes.first_chunk::<8>() {
        let ends = !u64::from_le_bytes(*word) & 0x8080_8080_8080_8080;
        if ends != 0 {
            return Some(ends.trailing_zeros() as usize / 8 + 1);
        }
    }
    Some(1 + bytes.iter().take(10).position(|&b| b < 0x80)?)
}

/// [`Row::merge`] of `newer` onto `older`, encoded as `RowMerge::merge` encodes it (the same
/// bytes), without decoding either row into a [`Row`]: the case of every blind write of
/// simple columns onto a stored row (an indexed UPDATE's row, 4,563 instructions through
/// `Row` at 100k rows, bench/results/2026-11-30/indexed-writes). `None` when either row
/// holds what only [`Row::merge`] handles (a deletion, a label, a collection cell, an older
/// format, damage).
pub(super) fn merge_simple(newer: &[u8], older: &[u8]) -> Option<Vec<u8>> {
    let empty = Bytes::new();
    let mut new = RawRow::read(newer, &empty)?;
    let mut old = RawRow::read(older, &empty)?;
    let clustering = match old.clustering {
        [0] => new.clustering,
        c => c,
    };
    let marker = match (old.marker, new.marker) {
        (Some(a), Some(b)) if !marker_wins(b, a) => Some(a),
        (a, None) => a,
        (_, b) => b,
    };
    let format = if old.partial { ROW_PARTIAL_V2 } else { ROW_V2 };
    let capacity = newer.len() + older.len();
    // With a marker, the base timestamp is known before the cells: each is written as the
    // merge meets it (most as stored, see `write_cell`), its count put before them after.
    if let Some(m) = marker {
        let mut w = Writer::row(format, m.ts, capacity);
        w.out.extend_from_slice(clustering);
        w.marker(marker, None);
        w.deletion(None);
        let at = w.out.len();
        w.out.push(0);
        let mut n = 0;
        // The older row's cells of the usual kind that no newer cell meets (those before the
        // newer row's next column, and all after its last: most of a row an update of one
        // column merges onto) are its bytes as stored when the bases agree, as `write_cell`
        // would write them one by one: copied at once.
        let bulk = old.cells.base == Some(m.ts);
        loop {
            if bulk {
                let (cells, k) = old.skip_usual(new.peek_column()?);
                w.out.extend_from_slice(cells);
                n += k;
            }
            match merge_step(&mut old, &mut new)? {
                Some(c) => {
                    n += 1;
                    write_cell(&mut w, m.ts, &c);
                }
                None => break,
            }
        }
        // The count in the byte kept for it when its varint takes one (a row of fewer than
        // 128 cells), without a buffer of its own spliced in.
        match u8::try_from(n) {
            Ok(one) if one < 0x80 => w.out[at] = one,
            _ => {
                let mut count = Writer {
                    out: Vec::new(),
                    base: Some(0),
                };
                count.len(n, 4);
                w.out.splice(at..at + 1, count.out);
            }
        }
        return Some(w.out);
    }
    let mut cells: SmallVec<[RawCell; 16]> = SmallVec::new();
    merge_cells(&mut old, &mut new, |c| cells.push(c))?;
    let base = cells.first().map_or(0, |c| c.ts);
    let mut w = Writer::row(format, base, capacity);
    w.out.extend_from_slice(clustering);
    w.marker(None, None);
    w.deletion(None);
    w.len(cells.len(), 4);
    for c in &cells {
        write_cell(&mut w, base, c);
    }
    Some(w.out)
}

/// The cells of `old` and `new` merged, in column order, each given to `out`: of two versions
/// of one, the older unless the newer wins (as `Cell::merge`). `None` as `next_cell`.
fn merge_cells<'a>(
    old: &mut RawRow<'a>,
    new: &mut RawRow<'a>,
    mut out: impl FnMut(RawCell<'a>),
) -> Option<()> {
    while let Some(c) = merge_step(old, new)? {
        out(c);
    }
    Some(())
}

/// One step of [`merge_cells`]: the next merged cell (`Some(None)` past the last of both).
fn merge_step<'a>(old: &mut RawRow<'a>, new: &mut RawRow<'a>) -> Option<Option<RawCell<'a>>> {
    // Each cell is read once it is known to come next (by the column its bytes start with):
    // none is held across steps.
    let (x, y) = match (old.peek_column()?, new.peek_column()?) {
        (None, None) => return Some(None),
        (Some(a), Some(b)) if a == b => (old.next_cell()?, new.next_cell()?),
        (Some(a), Some(b)) if a < b => (old.next_cell()?, None),
        (Some(_), None) => (old.next_cell()?, None),
        _ => (None, new.next_cell()?),
    };
    Some(match (x, y) {
        (Some(x), Some(y)) if ranked_wins(y.ts, y.rank, x.ts, x.rank) => Some(y),
        (Some(c), _) | (None, Some(c)) => Some(c),
        (None, None) => None,
    })
}

/// A merged cell written in a row of base timestamp `base`: as it was stored when its row had
/// the same base (the usual case: an update merged onto the row its INSERT's marker bases).
fn write_cell(w: &mut Writer, base: i64, c: &RawCell) {
    if c.base == base {
        w.out.extend_from_slice(c.whole);
    } else {
        w.len(c.column as usize, 2);
        w.ts(c.ts);
        w.out.extend_from_slice(c.tail);
    }
}

/// A live row whose every cell is a simple, unlabelled value live at the read's time, with
/// no deletion of its own, read in place: what a plain `SELECT` of key and regular columns
/// needs of it (`read.rs`), without the [`Row`] a decode builds (a vector of cells, each a
/// reference-counted slice of the row's buffer, dropped after the read).
#[derive(Default)]
pub(crate) struct PlainRow<'a> {
    clustering: SmallVec<[&'a [u8]; 4]>,
    /// Column id and value of each cell, in column order (as stored).
    cells: SmallVec<[(u16, &'a [u8]); 16]>,
    value_bytes: usize,
}

impl<'a> PlainRow<'a> {
    /// Reads the row stored in `buf` into this one, in place (a row of sixteen cells is a few
    /// hundred bytes: built where it is used, it is not copied out of a constructor).
    /// `false` when the stored row is of any other kind, holds a tombstone or a value expired
    /// at `now`, or has neither a live cell nor a live marker: [`Row::decode_shared`] reads
    /// those (and reports damage).
    pub(crate) fn read(&mut self, buf: &'a [u8], now: LocalSecs) -> bool {
        self.clustering.clear();
        self.cells.clear();
        self.value_bytes = 0;
        self.read_cells(buf, now).is_some()
    }

    fn read_cells(&mut self, buf: &'a [u8], now: LocalSecs) -> Option<()> {
        // The readers below borrow `buf`; their shared buffer is never read.
        static EMPTY: Bytes = Bytes::new();
        let mut raw = RawRow::read(buf, &EMPTY)?;
        let mut r = Reader {
            buf: raw.clustering,
            shared: &EMPTY,
            pos: 0,
            base: Some(0),
        };
        for _ in 0..r.len(2).ok()? {
            let n = r.len(4).ok()?;
            self.clustering.push(r.take(n).ok()?);
        }
        loop {
            // The usual cell (live, no expiry) without the whole `RawCell` read.
            if let Some((column, value)) = raw.next_usual(None) {
                self.value_bytes += value.len();
                self.cells.push((column, value));
                continue;
            }
            let Some(c) = raw.next_cell()? else {
                break;
            };
            if c.rank.dead || c.rank.local_del <= now {
                return None;
            }
            self.value_bytes += c.rank.value.len();
            self.cells.push((c.column, c.rank.value));
        }
        // An expired marker may hide older cells from a read that does not name their columns
        // (`Row::is_live_for`): the decoded row decides.
        let live = raw.marker.is_some_and(|m| m.is_live(now))
            || (raw.marker.is_none() && !self.cells.is_empty());
        live.then_some(())
    }

    /// The value of clustering column `position`.
    pub(crate) fn clustering(&self, position: usize) -> Option<&'a [u8]> {
        self.clustering.get(position).copied()
    }

    /// The value of the cell of `column`. `next` is where the search starts: the cell after
    /// the one the previous call found, so that columns asked for in their stored order (a
    /// `SELECT *`, most selections) are each found with one comparison; others by a search.
    pub(crate) fn value(&self, column: u16, next: &mut usize) -> Option<&'a [u8]> {
        let i = match self.cells.get(*next) {
            Some(&(c, _)) if c == column => *next,
            _ => self.cells.binary_search_by_key(&column, |c| c.0).ok()?,
        };
        *next = i + 1;
        Some(self.cells[i].1)
    }

    /// The bytes of its values and clustering (a size hint for a result buffer).
    pub(crate) fn value_bytes(&self) -> usize {
        self.value_bytes + self.clustering.iter().map(|c| c.len()).sum::<usize>()
    }
}

/// Whether [`Row::purge`] at `now` with `gc_before` leaves this stored row (or partial row)
/// as it is and keeps it: a row [`RawRow`] reads whose cells are live and unexpired or
/// tombstones not yet past `gc_before`, whose marker does not go, and that holds a marker or
/// a cell. `false` when the purge may change it, or for a row of another kind (the caller
/// then decodes it): the compaction filter's fast path (`purge.rs`), as most rows a
/// compaction rewrites are left as they are, without a decode, a clone and a comparison.
pub(crate) fn purge_keeps_as_is(buf: &[u8], now: LocalSecs, gc_before: LocalSecs) -> bool {
    static EMPTY: Bytes = Bytes::new();
    let Some(mut raw) = RawRow::read(buf, &EMPTY) else {
        return false;
    };
    // `Row::purge` drops a marker expired before `gc_before`.
    if raw
        .marker
        .and_then(|m| m.expiry)
        .is_some_and(|e| e.expires_at <= now && e.expires_at < gc_before)
    {
        return false;
    }
    let mut holds = raw.marker.is_some();
    loop {
        match raw.next_cell() {
            None => return false,
            Some(None) => return holds,
            Some(Some(c)) => {
                // A live cell's `local_del` is its expiry (`u32::MAX`: none); an expired one
                // becomes a tombstone, a tombstone past `gc_before` goes.
                let as_is = if c.rank.dead {
                    c.rank.local_del >= gc_before
                } else {
                    c.rank.local_del > now
                };
                if !as_is {
                    return false;
                }
                holds = true;
            }
        }
    }
}
