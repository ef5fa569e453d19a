//! Primitive notations of the spec (section 3): `[int]`, `[string]`, `[bytes]`, `[value]`, ...
//!
//! `Reader` reads them from an untrusted body. Every length or count is checked against the bytes
//! that remain *before* anything is allocated, so a hostile length costs nothing. Byte slices are
//! `Bytes` views into the body (no copy); strings are copied once into a `String`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::error::DbError;
use crate::request::{Consistency, RawValue};

/// A cursor over a request or response body.
pub(crate) struct Reader {
    buf: Bytes,
}

fn short(what: &str, need: usize, have: usize) -> DbError {
    DbError::protocol(format!(
        "Not enough bytes to read {what}: need {need}, {have} remaining"
    ))
}

impl Reader {
    pub(crate) fn new(buf: Bytes) -> Self {
        Reader { buf }
    }

    #[cfg(test)]
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len()
    }

    fn need(&self, what: &str, n: usize) -> Result<(), DbError> {
        if self.buf.len() < n {
            Err(short(what, n, self.buf.len()))
        } else {
            Ok(())
        }
    }

    pub(crate) fn u8(&mut self, what: &str) -> Result<u8, DbError> {
        self.need(what, 1)?;
        Ok(self.buf.get_u8())
    }

    pub(crate) fn u16(&mut self, what: &str) -> Result<u16, DbError> {
        self.need(what, 2)?;
        Ok(self.buf.get_u16())
    }

    pub(crate) fn i32(&mut self, what: &str) -> Result<i32, DbError> {
        self.need(what, 4)?;
        Ok(self.buf.get_i32())
    }

    pub(crate) fn i64(&mut self, what: &str) -> Result<i64, DbError> {
        self.need(what, 8)?;
        Ok(self.buf.get_i64())
    }

    pub(crate) fn raw(&mut self, what: &str, n: usize) -> Result<Bytes, DbError> {
        self.need(what, n)?;
        Ok(self.buf.split_to(n))
    }

    pub(crate) fn uuid(&mut self, what: &str) -> Result<[u8; 16], DbError> {
        self.need(what, 16)?;
        let mut id = [0u8; 16];
        self.buf.copy_to_slice(&mut id);
        Ok(id)
    }

    fn utf8(what: &str, b: Bytes) -> Result<String, DbError> {
        String::from_utf8(b.to_vec())
            .map_err(|_| DbError::protocol(format!("Invalid UTF-8 in {what}")))
    }

    /// `[string]`
    pub(crate) fn string(&mut self, what: &str) -> Result<String, DbError> {
        let n = self.u16(what)? as usize;
        let b = self.raw(what, n)?;
        Self::utf8(what, b)
    }

    /// `[long string]`
    pub(crate) fn long_string(&mut self, what: &str) -> Result<String, DbError> {
        let n = self.i32(what)?;
        if n < 0 {
            return Err(DbError::protocol(format!(
                "Invalid negative length {n} for {what}"
            )));
        }
        let b = self.raw(what, n as usize)?;
        Self::utf8(what, b)
    }

    /// `[bytes]`: negative length is null.
    pub(crate) fn bytes(&mut self, what: &str) -> Result<Option<Bytes>, DbError> {
        let n = self.i32(what)?;
        if n < 0 {
            return Ok(None);
        }
        self.raw(what, n as usize).map(Some)
    }

    /// `[short bytes]`
    pub(crate) fn short_bytes(&mut self, what: &str) -> Result<Bytes, DbError> {
        let n = self.u16(what)? as usize;
        self.raw(what, n)
    }

    /// `[value]` as bound by a client: v3 knows only null; v4+ has -2 = unset
    /// (like Cassandra's `CBUtil.readBoundValue`).
    pub(crate) fn value(&mut self, v4_or_later: bool) -> Result<RawValue, DbError> {
        let n = self.i32("value length")?;
        if n >= 0 {
            return self.raw("value", n as usize).map(RawValue::Bytes);
        }
        if !v4_or_later || n == -1 {
            return Ok(RawValue::Null);
        }
        if n == -2 {
            return Ok(RawValue::Unset);
        }
        Err(DbError::protocol(format!("Invalid ByteBuf length {n}")))
    }

    /// A count that announces `count` items of at least `min_item` bytes each: reject it
    /// before allocating if the body cannot possibly hold them.
    pub(crate) fn check_count(
        &self,
        what: &str,
        count: usize,
        min_item: usize,
    ) -> Result<(), DbError> {
        if count.saturating_mul(min_item) > self.buf.len() {
            return Err(DbError::protocol(format!(
                "Invalid {what} count {count}: only {} bytes remain",
                self.buf.len()
            )));
        }
        Ok(())
    }

    /// `[string list]`
    pub(crate) fn string_list(&mut self, what: &str) -> Result<Vec<String>, DbError> {
        let n = self.u16(what)? as usize;
        self.check_count(what, n, 2)?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(self.string(what)?);
        }
        Ok(out)
    }

    /// `[string map]`
    pub(crate) fn string_map(&mut self, what: &str) -> Result<Vec<(String, String)>, DbError> {
        let n = self.u16(what)? as usize;
        self.check_count(what, n, 4)?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let k = self.string(what)?;
            let v = self.string(what)?;
            out.push((k, v));
        }
        Ok(out)
    }

    /// `[string multimap]`
    pub(crate) fn string_multimap(
        &mut self,
        what: &str,
    ) -> Result<Vec<(String, Vec<String>)>, DbError> {
        let n = self.u16(what)? as usize;
        self.check_count(what, n, 4)?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let k = self.string(what)?;
            let v = self.string_list(what)?;
            out.push((k, v));
        }
        Ok(out)
    }

    /// `[bytes map]`
    pub(crate) fn bytes_map(
        &mut self,
        what: &str,
    ) -> Result<Vec<(String, Option<Bytes>)>, DbError> {
        let n = self.u16(what)? as usize;
        self.check_count(what, n, 6)?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let k = self.string(what)?;
            let v = self.bytes(what)?;
            out.push((k, v));
        }
        Ok(out)
    }

    /// `[consistency]`
    pub(crate) fn consistency(&mut self, what: &str) -> Result<Consistency, DbError> {
        let c = self.u16(what)?;
        Consistency::from_code(c)
            .ok_or_else(|| DbError::protocol(format!("Unknown code {c} for a consistency level")))
    }

    /// `[inetaddr]`
    pub(crate) fn inetaddr(&mut self, what: &str) -> Result<IpAddr, DbError> {
        let n = self.u8(what)?;
        match n {
            4 => {
                let b = self.raw(what, 4)?;
                Ok(IpAddr::V4(Ipv4Addr::new(b[0], b[1], b[2], b[3])))
            }
            16 => {
                let mut a = [0u8; 16];
                a.copy_from_slice(&self.raw(what, 16)?);
                Ok(IpAddr::V6(Ipv6Addr::from(a)))
            }
            _ => Err(DbError::protocol(format!(
                "Invalid IP address length {n} in {what}"
            ))),
        }
    }

    /// `[inet]`
    pub(crate) fn inet(&mut self, what: &str) -> Result<SocketAddr, DbError> {
        let ip = self.inetaddr(what)?;
        let port = self.i32(what)?;
        Ok(SocketAddr::new(ip, port as u16))
    }

    pub(crate) fn rest(&mut self) -> Bytes {
        std::mem::take(&mut self.buf)
    }
}

// ---- writers ----------------------------------------------------------------------------

/// Lengths written by the encoder come from our own data; anything over the protocol's
/// limits is clamped rather than panicking (the peer will then reject it).
fn clamp_u16(n: usize) -> u16 {
    u16::try_from(n).unwrap_or(u16::MAX)
}

fn clamp_i32(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

pub(crate) fn put_string(out: &mut BytesMut, s: &str) {
    let n = clamp_u16(s.len());
    out.put_u16(n);
    out.put_slice(&s.as_bytes()[..n as usize]);
}

pub(crate) fn put_long_string(out: &mut BytesMut, s: &str) {
    let n = clamp_i32(s.len());
    out.put_i32(n);
    out.put_slice(&s.as_bytes()[..n as usize]);
}

/// `[bytes map]` (at most 65535 entries are written).
pub(crate) fn put_bytes_map(out: &mut BytesMut, m: &[(String, Option<Bytes>)]) {
    let n = clamp_u16(m.len());
    out.put_u16(n);
    for (k, v) in &m[..n as usize] {
        put_string(out, k);
        put_bytes(out, v.as_deref());
    }
}

pub(crate) fn put_bytes(out: &mut BytesMut, b: Option<&[u8]>) {
    match b {
        None => out.put_i32(-1),
        Some(b) => {
            let n = clamp_i32(b.len());
            out.put_i32(n);
            out.put_slice(&b[..n as usize]);
        }
    }
}

pub(crate) fn put_short_bytes(out: &mut BytesMut, b: &[u8]) {
    let n = clamp_u16(b.len());
    out.put_u16(n);
    out.put_slice(&b[..n as usize]);
}

pub(crate) fn put_value(out: &mut BytesMut, v: &RawValue) {
    match v {
        RawValue::Null => out.put_i32(-1),
        RawValue::Unset => out.put_i32(-2),
        RawValue::Bytes(b) => put_bytes(out, Some(b)),
    }
}

pub(crate) fn put_string_list(out: &mut BytesMut, l: &[String]) {
    out.put_u16(clamp_u16(l.len()));
    for s in l.iter().take(u16::MAX as usize) {
        put_string(out, s);
    }
}

pub(crate) fn put_string_map(out: &mut BytesMut, m: &[(String, String)]) {
    out.put_u16(clamp_u16(m.len()));
    for (k, v) in m.iter().take(u16::MAX as usize) {
        put_string(out, k);
        put_string(out, v);
    }
}

pub(crate) fn put_string_multimap(out: &mut BytesMut, m: &[(String, Vec<String>)]) {
    out.put_u16(clamp_u16(m.len()));
    for (k, v) in m.iter().take(u16::MAX as usize) {
        put_string(out, k);
        put_string_list(out, v);
    }
}

pub(crate) fn put_inetaddr(out: &mut BytesMut, ip: &IpAddr) {
    match ip {
        IpAddr::V4(a) => {
            out.put_u8(4);
            out.put_slice(&a.octets());
        }
        IpAddr::V6(a) => {
            out.put_u8(16);
            out.put_slice(&a.octets());
        }
    }
}

pub(crate) fn put_inet(out: &mut BytesMut, addr: &SocketAddr) {
    put_inetaddr(out, &addr.ip());
    out.put_i32(i32::from(addr.port()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_counts_are_rejected_before_allocating() {
        // A string list claiming 65535 entries in a 2-byte body.
        let mut r = Reader::new(Bytes::from_static(&[0xff, 0xff]));
        let err = r.string_list("test list").unwrap_err();
        assert!(err.to_string().contains("65535"), "{err}");
    }

    #[test]
    fn bound_values_follow_cassandra() {
        let body = Bytes::from_static(&[0xff, 0xff, 0xff, 0xfe, 0xff, 0xff, 0xff, 0xfe]);
        let mut r = Reader::new(body.clone());
        assert_eq!(r.value(true).unwrap(), RawValue::Unset);
        assert_eq!(r.value(false).unwrap(), RawValue::Null);
        let mut r = Reader::new(Bytes::from_static(&[0xff, 0xff, 0xff, 0xfd]));
        assert!(r.value(true).is_err());
    }

    #[test]
    fn strings_round_trip() {
        let mut out = BytesMut::new();
        put_string(&mut out, "héllo");
        put_long_string(&mut out, "SELECT 1");
        put_string_list(&mut out, &["a".into(), "bc".into()]);
        let mut r = Reader::new(out.freeze());
        assert_eq!(r.string("s").unwrap(), "héllo");
        assert_eq!(r.long_string("s").unwrap(), "SELECT 1");
        assert_eq!(r.string_list("l").unwrap(), vec!["a", "bc"]);
        assert_eq!(r.remaining(), 0);
    }
}
