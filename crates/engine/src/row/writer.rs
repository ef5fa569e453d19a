//! The writer of the stored row and header formats (row.rs describes them), over three kinds of
//! output: a `Vec`, a count of bytes, a buffer of exactly that many.

use super::*;

/// Where a [`Writer`] puts its bytes: a `Vec`, or for a value written straight into the
/// store's buffer ([`Row::encode_value`]) first a count of them ([`Count`]), then a buffer of
/// exactly that length ([`Fill`]). The same writer code runs for each, so the count is the
/// length written.
pub(super) trait Out {
    fn put_u8(&mut self, v: u8);
    fn put_slice(&mut self, v: &[u8]);
}

impl Out for Vec<u8> {
    #[inline]
    fn put_u8(&mut self, v: u8) {
        self.push(v)
    }
    #[inline]
    fn put_slice(&mut self, v: &[u8]) {
        self.extend_from_slice(v)
    }
}

/// How many bytes would be written.
pub(super) struct Count(pub(super) usize);

impl Out for Count {
    #[inline]
    fn put_u8(&mut self, _: u8) {
        self.0 += 1
    }
    #[inline]
    fn put_slice(&mut self, v: &[u8]) {
        self.0 += v.len()
    }
}

/// Bytes written into a buffer of a fixed length, `at` the end of what was written: past the
/// buffer's end nothing is written, but `at` still counts (a writer that overruns is seen).
pub(super) struct Fill<'a> {
    pub(super) buf: &'a mut [u8],
    pub(super) at: usize,
}

impl Out for Fill<'_> {
    #[inline]
    fn put_u8(&mut self, v: u8) {
        if let Some(b) = self.buf.get_mut(self.at) {
            *b = v;
        }
        self.at += 1;
    }
    #[inline]
    fn put_slice(&mut self, v: &[u8]) {
        if let Some(b) = self.buf.get_mut(self.at..self.at + v.len()) {
            b.copy_from_slice(v);
        }
        self.at += v.len();
    }
}

/// Writes the row formats: ROW_V1's fixed-width integers, or ROW_V2's varints (`base`: the
/// timestamp ROW_V2's timestamps are deltas from).
pub(super) struct Writer<O: Out = Vec<u8>> {
    pub(super) out: O,
    pub(super) base: Option<i64>,
}
impl Writer {
    pub(super) fn fixed(capacity: usize) -> Writer {
        Writer {
            out: Vec::with_capacity(capacity),
            base: None,
        }
    }
    /// A row in ROW_V2's layout, up to its clustering: the format byte (ROW_V2 or
    /// ROW_PARTIAL_V2) and the base its timestamps are written against.
    pub(super) fn row(format: u8, base: i64, capacity: usize) -> Writer {
        Writer::row_into(format, base, Vec::with_capacity(capacity))
    }
}
impl<O: Out> Writer<O> {
    /// [`Writer::row`] into `out`.
    #[inline]
    pub(super) fn row_into(format: u8, base: i64, out: O) -> Writer<O> {
        let mut w = Writer {
            out,
            base: Some(base),
        };
        w.u8(format);
        w.out.put_slice(&base.to_be_bytes());
        w
    }
    /// A row's liveness marker, and its visibility label after it.
    #[inline]
    pub(super) fn marker(&mut self, marker: Option<Marker>, label: Option<&[u8]>) {
        match marker {
            Some(m) => {
                self.u8(if label.is_some() {
                    MARKER_LABELLED
                } else {
                    MARKER
                });
                self.ts(m.ts);
                self.expiry(m.expiry);
                if let Some(l) = label {
                    self.bytes(l);
                }
            }
            None => self.u8(MARKER_NONE),
        }
    }
    #[inline]
    pub(super) fn u8(&mut self, v: u8) {
        self.out.put_u8(v)
    }
    #[inline]
    pub(super) fn u32(&mut self, v: u32) {
        self.out.put_slice(&v.to_be_bytes())
    }
    #[inline]
    pub(super) fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.out.put_u8(v as u8 | 0x80);
            v >>= 7;
        }
        self.out.put_u8(v as u8);
    }
    /// A count, length or column id: u16 (`width` 2) or u32 in ROW_V1, a varint in ROW_V2.
    #[inline]
    pub(super) fn len(&mut self, n: usize, width: usize) {
        match (self.base, width) {
            (Some(_), _) => self.varint(n as u64),
            (None, 2) => self.out.put_slice(&(n as u16).to_be_bytes()),
            (None, _) => self.u32(n as u32),
        }
    }
    #[inline]
    pub(super) fn ts(&mut self, v: i64) {
        match self.base {
            Some(base) => {
                let d = v.wrapping_sub(base);
                self.varint(((d << 1) ^ (d >> 63)) as u64)
            }
            None => self.out.put_slice(&v.to_be_bytes()),
        }
    }
    #[inline]
    pub(super) fn bytes(&mut self, b: &[u8]) {
        self.len(b.len(), 4);
        self.out.put_slice(b);
    }
    #[inline]
    pub(super) fn deletion(&mut self, d: Option<Deletion>) {
        match d {
            Some(d) => {
                self.u8(1);
                self.ts(d.ts);
                self.u32(d.local_del);
            }
            None => self.u8(0),
        }
    }
    #[inline]
    pub(super) fn expiry(&mut self, e: Option<Expiry>) {
        match e {
            Some(e) => {
                self.u8(1);
                self.u32(e.ttl);
                self.u32(e.expires_at);
            }
            None => self.u8(0),
        }
    }
    pub(super) fn value(&mut self, v: &CellValue) {
        match v {
            CellValue::Live {
                value,
                expiry,
                label,
            } => {
                self.u8(if label.is_some() {
                    CELL_LIVE_LABELLED
                } else {
                    CELL_LIVE
                });
                self.expiry(*expiry);
                self.bytes(value);
                if let Some(l) = label {
                    self.bytes(l);
                }
            }
            CellValue::Tombstone { local_del } => {
                self.u8(CELL_TOMBSTONE);
                self.u32(*local_del);
            }
            CellValue::Complex(c) => {
                self.u8(CELL_COMPLEX);
                self.u8(match c.kind {
                    CollectionKind::List => 0,
                    CollectionKind::Set => 1,
                    CollectionKind::Map => 2,
                    CollectionKind::Udt => 3,
                });
                self.deletion(c.deletion);
                self.len(c.elements.len(), 4);
                for e in &c.elements {
                    self.bytes(&e.path);
                    self.ts(e.ts);
                    self.value(&e.value);
                }
            }
        }
    }
    pub(super) fn cells(&mut self, cells: &[Cell]) {
        self.len(cells.len(), 4);
        for c in cells {
            self.len(c.column as usize, 2);
            self.ts(c.ts);
            self.value(&c.value);
        }
    }
}
