//! CQL value serialization (spec section 6 and 7): `decode_value`, `encode_value`,
//! `validate_value`.
//!
//! Empty values: Cassandra accepts a zero-length value for most types (an "empty" value,
//! distinct from null). `validate_value` accepts it exactly where Cassandra's serializers do
//! (not for date, time, smallint, tinyint, duration). `decode_value` returns `Value::Null` for
//! an empty value of a type that has no natural empty form (numbers, uuid, inet, boolean,
//! collections); text and blob decode to an empty string / blob.
//!
//! Collections, tuples and UDTs use the v3+ layout (i32 counts and lengths). Null elements
//! decode to `Value::Null`; `validate_value` rejects them in collections like Cassandra.
//! Error messages follow Cassandra's serializers (`Expected 4 or 0 byte int (3)`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::error::DbError;
use crate::types::{ColumnType, Value};

fn inv(msg: String) -> DbError {
    DbError::invalid(msg)
}

// ---- vint (duration) ----------------------------------------------------------------------

fn read_unsigned_vint(b: &[u8], pos: &mut usize) -> Option<u64> {
    let first = *b.get(*pos)?;
    *pos += 1;
    let extra = first.leading_ones() as usize;
    if extra == 0 {
        return Some(u64::from(first));
    }
    let bytes = b.get(*pos..*pos + extra)?;
    *pos += extra;
    let mut v = if extra >= 8 {
        0
    } else {
        u64::from(first & (0xffu8 >> extra))
    };
    for &x in bytes {
        v = (v << 8) | u64::from(x);
    }
    Some(v)
}

fn read_vint(b: &[u8], pos: &mut usize) -> Option<i64> {
    let n = read_unsigned_vint(b, pos)?;
    Some(((n >> 1) as i64) ^ -((n & 1) as i64))
}

fn write_unsigned_vint(v: u64, out: &mut Vec<u8>) {
    let magnitude = (v | 1).leading_zeros() as usize;
    let size = (639 - magnitude * 9) >> 6;
    if size == 1 {
        out.push(v as u8);
        return;
    }
    if size == 9 {
        out.push(0xff);
        out.extend_from_slice(&v.to_be_bytes());
        return;
    }
    let be = v.to_be_bytes();
    let start = out.len();
    out.extend_from_slice(&be[8 - size..]);
    let extra = size - 1;
    out[start] |= !(0xffu8 >> extra);
}

fn write_vint(v: i64, out: &mut Vec<u8>) {
    write_unsigned_vint(((v << 1) ^ (v >> 63)) as u64, out);
}

fn decode_duration(b: &[u8]) -> Result<(i32, i32, i64), DbError> {
    if b.len() < 3 {
        return Err(inv(format!(
            "Expected at least 3 bytes for a duration ({})",
            b.len()
        )));
    }
    let mut pos = 0;
    let bad = || inv("Invalid duration value: truncated or oversized vint".to_string());
    let months = read_vint(b, &mut pos).ok_or_else(bad)?;
    let days = read_vint(b, &mut pos).ok_or_else(bad)?;
    let nanos = read_vint(b, &mut pos).ok_or_else(bad)?;
    if pos != b.len() {
        return Err(inv(format!(
            "Invalid duration value: {} extraneous bytes",
            b.len() - pos
        )));
    }
    let (Ok(months), Ok(days)) = (i32::try_from(months), i32::try_from(days)) else {
        return Err(bad());
    };
    let signs = [months.signum(), days.signum(), nanos.signum() as i32];
    if signs.contains(&1) && signs.contains(&-1) {
        return Err(inv(format!(
            "The duration months, days and nanoseconds must be all of the same sign ({months}, {days}, {nanos})"
        )));
    }
    Ok((months, days, nanos))
}

// ---- element cursor for collections / tuples ----------------------------------------------

struct Elems<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Elems<'a> {
    fn i32(&mut self) -> Option<i32> {
        let s = self.b.get(self.pos..self.pos + 4)?;
        self.pos += 4;
        Some(i32::from_be_bytes([s[0], s[1], s[2], s[3]]))
    }

    /// `[bytes]`: `Some(None)` is null, `None` is "not enough bytes".
    fn elem(&mut self) -> Option<Option<&'a [u8]>> {
        let n = self.i32()?;
        if n < 0 {
            return Some(None);
        }
        let s = self.b.get(self.pos..self.pos + n as usize)?;
        self.pos += n as usize;
        Some(Some(s))
    }

    fn done(&self) -> bool {
        self.pos >= self.b.len()
    }

    fn remaining(&self) -> usize {
        self.b.len().saturating_sub(self.pos)
    }
}

fn collection_name(ty: &ColumnType) -> &'static str {
    match ty {
        ColumnType::List(_) => "list",
        ColumnType::Set(_) => "set",
        _ => "map",
    }
}

/// Reads the element count of a collection and checks it can fit (4 bytes per element at
/// least) before anything is allocated.
fn collection_count(e: &mut Elems<'_>, what: &str, per_item: usize) -> Result<usize, DbError> {
    let n = e
        .i32()
        .ok_or_else(|| inv(format!("Not enough bytes to read a {what}")))?;
    if n < 0 {
        return Err(inv(format!("Invalid negative size {n} for a {what}")));
    }
    let n = n as usize;
    if n.saturating_mul(per_item) > e.remaining() {
        return Err(inv(format!("Not enough bytes to read a {what}")));
    }
    Ok(n)
}

// ---- validate -----------------------------------------------------------------------------

fn fixed(b: &[u8], n: usize, allow_empty: bool, msg: &str) -> Result<(), DbError> {
    if b.len() == n || (allow_empty && b.is_empty()) {
        Ok(())
    } else {
        Err(inv(format!("{msg} ({})", b.len())))
    }
}

/// Checks that `bytes` is a valid serialized value of `ty` without building it. This is what
/// the engine runs on bound values before writing them.
pub fn validate_value(ty: &ColumnType, bytes: &[u8]) -> Result<(), DbError> {
    validate_at(ty, bytes, 0)
}

/// From this length on text is checked by a SIMD validator (`simdutf8`, AVX2 where the CPU
/// has it) instead of `is_ascii`, whose cost depends on the length's remainder by 64 (a scalar
/// tail): Callgrind, a call on ASCII text, `is_ascii` / `simdutf8::basic`: 16 B 19 / 57,
/// 48 B 35 / 71, 80 B 123 / 73, 100 B 243 / 108, 1,000 B 449 / 203, 4,096 B 846 / 606.
const SIMD_TEXT: usize = 64;

/// Whether `b` is UTF-8, as `std::str::from_utf8` says (the same answer, fewer instructions
/// on longer text).
fn valid_utf8(b: &[u8]) -> bool {
    if b.len() < SIMD_TEXT {
        // ASCII is checked a word at a time; `from_utf8` walked a short string byte by byte
        // (~200 instructions for a YCSB key, Callgrind).
        b.is_ascii() || std::str::from_utf8(b).is_ok()
    } else {
        simdutf8::basic::from_utf8(b).is_ok()
    }
}

fn validate_at(ty: &ColumnType, b: &[u8], depth: usize) -> Result<(), DbError> {
    if depth > crate::types::MAX_TYPE_DEPTH {
        return Err(inv("Value nested too deeply".into()));
    }
    match ty {
        ColumnType::Custom(_) | ColumnType::Blob | ColumnType::Varint => Ok(()),
        ColumnType::Ascii if b.is_ascii() => Ok(()),
        ColumnType::Ascii => match b.iter().find(|&&c| c > 127) {
            Some(c) => Err(inv(format!("Invalid byte for ascii: {}", *c as i8))),
            None => Ok(()),
        },
        ColumnType::Varchar if valid_utf8(b) => Ok(()),
        ColumnType::Varchar => Err(inv("String didn't validate.".into())),
        ColumnType::Bigint | ColumnType::Counter => fixed(b, 8, true, "Expected 8 or 0 byte long"),
        ColumnType::Timestamp => fixed(b, 8, true, "Expected 8 or 0 byte long for date"),
        ColumnType::Boolean => fixed(b, 1, true, "Expected 1 or 0 byte value"),
        ColumnType::Double => fixed(b, 8, true, "Expected 8 or 0 byte value for a double"),
        ColumnType::Float => fixed(b, 4, true, "Expected 4 or 0 byte value for a float"),
        ColumnType::Int => fixed(b, 4, true, "Expected 4 or 0 byte int"),
        ColumnType::Smallint => fixed(b, 2, false, "Expected 2 bytes for a smallint"),
        ColumnType::Tinyint => fixed(b, 1, false, "Expected 1 byte for a tinyint"),
        ColumnType::Date => fixed(b, 4, false, "Expected 4 byte long for date"),
        // Any 8 bytes: 5.0.9 takes a bound time outside the day (-1, 2^63-1) and stores it;
        // only its literals are checked for the range.
        ColumnType::Time => fixed(b, 8, false, "Expected 8 byte long for time"),
        ColumnType::Decimal => {
            if b.is_empty() || b.len() >= 4 {
                Ok(())
            } else {
                Err(inv(format!("Expected 0 or at least 4 bytes ({})", b.len())))
            }
        }
        ColumnType::Uuid => fixed(b, 16, true, "UUID should be 16 or 0 bytes"),
        ColumnType::Timeuuid => {
            fixed(b, 16, true, "UUID should be 16 or 0 bytes")?;
            // 5.0.9 checks the version nibble (byte 6) but names the first byte's high
            // nibble in its message: `ab0e8400-e29b-41d4-...` answers "0xa".
            if b.len() == 16 && (b[6] >> 4) != 1 {
                return Err(inv(format!(
                    "Invalid version for TimeUUID type: 0x{:x}",
                    b[0] >> 4
                )));
            }
            Ok(())
        }
        ColumnType::Inet => match b.len() {
            0 | 4 | 16 => Ok(()),
            n => Err(inv(format!(
                "Expected 4 or 16 byte inetaddress; got {n} bytes"
            ))),
        },
        ColumnType::Duration => decode_duration(b).map(|_| ()),
        ColumnType::List(t) | ColumnType::Set(t) => {
            if b.is_empty() {
                return Ok(());
            }
            let what = collection_name(ty);
            let mut e = Elems { b, pos: 0 };
            let n = collection_count(&mut e, what, 4)?;
            for _ in 0..n {
                match e.elem() {
                    None => return Err(inv(format!("Not enough bytes to read a {what}"))),
                    Some(None) => {
                        return Err(inv("null is not supported inside collections".into()))
                    }
                    Some(Some(x)) => validate_at(t, x, depth + 1)?,
                }
            }
            if !e.done() {
                return Err(inv(format!(
                    "Unexpected extraneous bytes after {what} value"
                )));
            }
            Ok(())
        }
        ColumnType::Map(k, v) => {
            if b.is_empty() {
                return Ok(());
            }
            let mut e = Elems { b, pos: 0 };
            let n = collection_count(&mut e, "map", 8)?;
            for _ in 0..n {
                for t in [k, v] {
                    match e.elem() {
                        None => return Err(inv("Not enough bytes to read a map".into())),
                        Some(None) => {
                            return Err(inv("null is not supported inside collections".into()))
                        }
                        Some(Some(x)) => validate_at(t, x, depth + 1)?,
                    }
                }
            }
            if !e.done() {
                return Err(inv("Unexpected extraneous bytes after map value".into()));
            }
            Ok(())
        }
        ColumnType::Tuple(ts) => validate_components(ts.iter(), b, depth, "tuple"),
        ColumnType::Udt { fields, .. } => {
            validate_components(fields.iter().map(|(_, t)| t), b, depth, "UDT")
        }
        ColumnType::Vector(t, n) => {
            // Cassandra takes an empty vector in storage but not from a client.
            if b.is_empty() {
                return Err(inv("Invalid empty vector value".into()));
            }
            // Cassandra 5.0.9's order: a value too short for its elements first, then each
            // element in turn, then bytes left over after the last one (a bad timeuuid in a
            // vector one byte too long answers its version, not the extra byte).
            if let Some(size) = t.fixed_len() {
                let need = size.saturating_mul(*n as usize);
                if need > b.len() {
                    return Err(vector_short(t, *n));
                }
                // Packed elements of their type's exact size: for most types that is the
                // whole check, and a 384-float vector (an ANN query, an embedding insert)
                // skips 384 element checks that cannot fail (~25 k instructions).
                if !length_is_validity(t) {
                    for x in b[..need].chunks_exact(size) {
                        validate_at(t, x, depth + 1)?;
                    }
                }
                if need < b.len() {
                    return Err(vector_extra(t, *n, b.len() - need));
                }
                return Ok(());
            }
            // Elements behind their lengths, each checked as it is read (5.0.9: a 1-byte
            // `time` element answers "Expected 8 byte long for time (1)" even when the value
            // also ends too early or too late).
            let mut pos = 0;
            for _ in 0..*n {
                let x = read_unsigned_vint(b, &mut pos)
                    .and_then(|l| usize::try_from(l).ok())
                    .and_then(|len| b.get(pos..pos.checked_add(len)?))
                    .ok_or_else(|| vector_short(t, *n))?;
                pos += x.len();
                validate_at(t, x, depth + 1)?;
            }
            if pos != b.len() {
                return Err(vector_extra(t, *n, b.len() - pos));
            }
            Ok(())
        }
    }
}

/// Whether any value of `ty`'s fixed length is a valid one (the check of [`validate_at`] is
/// its length alone): every fixed-length type but timeuuid (its version) and vectors (their
/// elements).
fn length_is_validity(ty: &ColumnType) -> bool {
    matches!(
        ty,
        ColumnType::Boolean
            | ColumnType::Float
            | ColumnType::Int
            | ColumnType::Double
            | ColumnType::Bigint
            | ColumnType::Timestamp
            | ColumnType::Uuid
    )
}

/// Checks that a vector of `n` packed elements of `size` bytes each is exactly `b`'s length,
/// with Cassandra's messages.
fn fixed_vector_len(elem: &ColumnType, n: u32, size: usize, b: &[u8]) -> Result<(), DbError> {
    let need = size.saturating_mul(n as usize);
    if need > b.len() {
        return Err(vector_short(elem, n));
    }
    if need < b.len() {
        return Err(vector_extra(elem, n, b.len() - need));
    }
    Ok(())
}

fn vector_short(elem: &ColumnType, n: u32) -> DbError {
    inv(format!(
        "Not enough bytes to read a vector<{}, {n}>",
        elem.cql_name()
    ))
}

fn vector_extra(elem: &ColumnType, n: u32, k: usize) -> DbError {
    inv(format!(
        "Unexpected {k} extraneous bytes after vector<{}, {n}> value",
        elem.cql_name()
    ))
}

/// Splits a serialized vector into its `n` elements: packed when the element type has a
/// fixed size, otherwise each behind an unsigned-vint length (Cassandra's `VectorType`).
/// Checks the lengths (before allocating) but not the elements themselves.
pub fn vector_elements<'a>(
    elem: &ColumnType,
    n: u32,
    b: &'a [u8],
) -> Result<Vec<&'a [u8]>, DbError> {
    if let Some(size) = elem.fixed_len() {
        fixed_vector_len(elem, n, size, b)?;
        return Ok(b.chunks_exact(size).collect());
    }
    let short = || vector_short(elem, n);
    // Every element takes a byte at least: a count larger than the value is a lie.
    if n as usize > b.len() {
        return Err(short());
    }
    let mut out = Vec::with_capacity(n as usize);
    let mut pos = 0;
    for _ in 0..n {
        let len = read_unsigned_vint(b, &mut pos)
            .and_then(|l| usize::try_from(l).ok())
            .ok_or_else(short)?;
        let x = pos
            .checked_add(len)
            .and_then(|end| b.get(pos..end))
            .ok_or_else(short)?;
        pos += len;
        out.push(x);
    }
    if pos != b.len() {
        return Err(vector_extra(elem, n, b.len() - pos));
    }
    Ok(out)
}

/// Serializes a vector from its serialized elements (the inverse of [`vector_elements`]).
pub fn encode_vector(elem: &ColumnType, items: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(items.iter().map(|i| i.len() + 1).sum());
    let packed = elem.fixed_len().is_some();
    for i in items {
        if !packed {
            write_unsigned_vint(i.len() as u64, &mut out);
        }
        out.extend_from_slice(i);
    }
    out
}

fn validate_components<'t>(
    types: impl Iterator<Item = &'t ColumnType>,
    b: &[u8],
    depth: usize,
    what: &str,
) -> Result<(), DbError> {
    let mut e = Elems { b, pos: 0 };
    for (i, t) in types.enumerate() {
        // Fewer components than the type has is legal (the rest are null).
        if e.done() {
            return Ok(());
        }
        match e.elem() {
            None => {
                return Err(inv(format!(
                    "Not enough bytes to read {i}th component of {what}"
                )))
            }
            Some(None) => {}
            Some(Some(x)) => validate_at(t, x, depth + 1)?,
        }
    }
    if !e.done() {
        return Err(inv(format!(
            "Invalid remaining data after end of {what} value"
        )));
    }
    Ok(())
}

// ---- decode -------------------------------------------------------------------------------

/// Decodes a serialized value (without its length prefix; a null cell never reaches here).
pub fn decode_value(ty: &ColumnType, bytes: &[u8]) -> Result<Value, DbError> {
    decode_at(ty, bytes, 0)
}

fn be<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[..N]);
    a
}

fn decode_at(ty: &ColumnType, b: &[u8], depth: usize) -> Result<Value, DbError> {
    // Shape checks (lengths, UTF-8, ranges) are validate's job; after it, reads cannot fail.
    validate_scalar_or_shallow(ty, b, depth)?;
    let empty_is_null = !matches!(
        ty,
        ColumnType::Ascii | ColumnType::Varchar | ColumnType::Blob | ColumnType::Custom(_)
    );
    if b.is_empty() && empty_is_null {
        return Ok(Value::Null);
    }
    Ok(match ty {
        ColumnType::Custom(_) | ColumnType::Blob => Value::Blob(b.to_vec()),
        ColumnType::Ascii => Value::Ascii(String::from_utf8_lossy(b).into_owned()),
        ColumnType::Varchar => Value::Varchar(String::from_utf8_lossy(b).into_owned()),
        ColumnType::Bigint => Value::Bigint(i64::from_be_bytes(be(b))),
        ColumnType::Counter => Value::Counter(i64::from_be_bytes(be(b))),
        ColumnType::Timestamp => Value::Timestamp(i64::from_be_bytes(be(b))),
        ColumnType::Boolean => Value::Boolean(b[0] != 0),
        ColumnType::Double => Value::Double(f64::from_be_bytes(be(b))),
        ColumnType::Float => Value::Float(f32::from_be_bytes(be(b))),
        ColumnType::Int => Value::Int(i32::from_be_bytes(be(b))),
        ColumnType::Smallint => Value::Smallint(i16::from_be_bytes(be(b))),
        ColumnType::Tinyint => Value::Tinyint(b[0] as i8),
        ColumnType::Date => Value::Date(u32::from_be_bytes(be(b))),
        ColumnType::Time => Value::Time(i64::from_be_bytes(be(b))),
        ColumnType::Decimal => Value::Decimal {
            scale: i32::from_be_bytes(be(b)),
            unscaled: b[4..].to_vec(),
        },
        ColumnType::Varint => Value::Varint(b.to_vec()),
        ColumnType::Uuid => Value::Uuid(be(b)),
        ColumnType::Timeuuid => Value::Timeuuid(be(b)),
        ColumnType::Inet => {
            if b.len() == 4 {
                Value::Inet(IpAddr::V4(Ipv4Addr::from(be::<4>(b))))
            } else {
                Value::Inet(IpAddr::V6(Ipv6Addr::from(be::<16>(b))))
            }
        }
        ColumnType::Duration => {
            let (months, days, nanos) = decode_duration(b)?;
            Value::Duration {
                months,
                days,
                nanos,
            }
        }
        ColumnType::List(t) | ColumnType::Set(t) => {
            let what = collection_name(ty);
            let mut e = Elems { b, pos: 0 };
            let n = collection_count(&mut e, what, 4)?;
            let mut out = Vec::with_capacity(n);
            for _ in 0..n {
                match e.elem() {
                    None => return Err(inv(format!("Not enough bytes to read a {what}"))),
                    Some(None) => out.push(Value::Null),
                    Some(Some(x)) => out.push(decode_at(t, x, depth + 1)?),
                }
            }
            if !e.done() {
                return Err(inv(format!(
                    "Unexpected extraneous bytes after {what} value"
                )));
            }
            if matches!(ty, ColumnType::List(_)) {
                Value::List(out)
            } else {
                Value::Set(out)
            }
        }
        ColumnType::Map(kt, vt) => {
            let mut e = Elems { b, pos: 0 };
            let n = collection_count(&mut e, "map", 8)?;
            let mut out = Vec::with_capacity(n);
            for _ in 0..n {
                let mut kv = [Value::Null, Value::Null];
                for (slot, t) in kv.iter_mut().zip([kt, vt]) {
                    match e.elem() {
                        None => return Err(inv("Not enough bytes to read a map".into())),
                        Some(None) => {}
                        Some(Some(x)) => *slot = decode_at(t, x, depth + 1)?,
                    }
                }
                let [k, v] = kv;
                out.push((k, v));
            }
            if !e.done() {
                return Err(inv("Unexpected extraneous bytes after map value".into()));
            }
            Value::Map(out)
        }
        ColumnType::Tuple(ts) => Value::Tuple(decode_components(ts.iter(), b, depth, "tuple")?),
        ColumnType::Udt { fields, .. } => {
            let vals = decode_components(fields.iter().map(|(_, t)| t), b, depth, "UDT")?;
            Value::Udt(fields.iter().map(|(n, _)| n.clone()).zip(vals).collect())
        }
        ColumnType::Vector(t, n) => Value::Vector(
            vector_elements(t, *n, b)?
                .into_iter()
                .map(|x| decode_at(t, x, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
    })
}

/// Runs the scalar checks of `validate_at` (collections are checked while decoding).
fn validate_scalar_or_shallow(ty: &ColumnType, b: &[u8], depth: usize) -> Result<(), DbError> {
    if depth > crate::types::MAX_TYPE_DEPTH {
        return Err(inv("Value nested too deeply".into()));
    }
    match ty {
        ColumnType::List(_)
        | ColumnType::Set(_)
        | ColumnType::Map(..)
        | ColumnType::Tuple(_)
        | ColumnType::Udt { .. }
        | ColumnType::Vector(..) => Ok(()),
        _ => validate_at(ty, b, depth),
    }
}

/// Decodes the components of a tuple or UDT; missing trailing components are null.
fn decode_components<'t>(
    types: impl ExactSizeIterator<Item = &'t ColumnType>,
    b: &[u8],
    depth: usize,
    what: &str,
) -> Result<Vec<Value>, DbError> {
    let mut e = Elems { b, pos: 0 };
    let mut out = Vec::with_capacity(types.len());
    for (i, t) in types.enumerate() {
        if e.done() {
            out.push(Value::Null);
            continue;
        }
        match e.elem() {
            None => {
                return Err(inv(format!(
                    "Not enough bytes to read {i}th component of {what}"
                )))
            }
            Some(None) => out.push(Value::Null),
            Some(Some(x)) => out.push(decode_at(t, x, depth + 1)?),
        }
    }
    if !e.done() {
        return Err(inv(format!(
            "Invalid remaining data after end of {what} value"
        )));
    }
    Ok(out)
}

// ---- encode -------------------------------------------------------------------------------

/// Appends the serialized form of `v` (no length prefix). `Value::Null` writes nothing at the
/// top level (the caller writes length -1) and length -1 inside collections and tuples.
pub fn encode_value(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Null => {}
        Value::Ascii(s) | Value::Varchar(s) => out.extend_from_slice(s.as_bytes()),
        Value::Blob(b) | Value::Varint(b) => out.extend_from_slice(b),
        Value::Bigint(x) | Value::Counter(x) | Value::Timestamp(x) | Value::Time(x) => {
            out.extend_from_slice(&x.to_be_bytes())
        }
        Value::Boolean(x) => out.push(u8::from(*x)),
        Value::Decimal { scale, unscaled } => {
            out.extend_from_slice(&scale.to_be_bytes());
            out.extend_from_slice(unscaled);
        }
        Value::Double(x) => out.extend_from_slice(&x.to_be_bytes()),
        Value::Float(x) => out.extend_from_slice(&x.to_be_bytes()),
        Value::Int(x) => out.extend_from_slice(&x.to_be_bytes()),
        Value::Uuid(u) | Value::Timeuuid(u) => out.extend_from_slice(u),
        Value::Inet(IpAddr::V4(a)) => out.extend_from_slice(&a.octets()),
        Value::Inet(IpAddr::V6(a)) => out.extend_from_slice(&a.octets()),
        Value::Date(d) => out.extend_from_slice(&d.to_be_bytes()),
        Value::Smallint(x) => out.extend_from_slice(&x.to_be_bytes()),
        Value::Tinyint(x) => out.push(*x as u8),
        Value::Duration {
            months,
            days,
            nanos,
        } => {
            write_vint(i64::from(*months), out);
            write_vint(i64::from(*days), out);
            write_vint(*nanos, out);
        }
        Value::List(items) | Value::Set(items) => {
            put_len(out, items.len());
            for x in items {
                encode_elem(x, out);
            }
        }
        Value::Map(pairs) => {
            put_len(out, pairs.len());
            for (k, x) in pairs {
                encode_elem(k, out);
                encode_elem(x, out);
            }
        }
        Value::Tuple(items) => {
            for x in items {
                encode_elem(x, out);
            }
        }
        Value::Udt(fields) => {
            for (_, x) in fields {
                encode_elem(x, out);
            }
        }
        Value::Vector(items) => {
            let packed = items.iter().all(packs_in_vector);
            for x in items {
                if packed {
                    encode_value(x, out);
                } else {
                    let mut one = Vec::new();
                    encode_value(x, &mut one);
                    write_unsigned_vint(one.len() as u64, out);
                    out.extend_from_slice(&one);
                }
            }
        }
    }
}

/// True for the values of the types [`ColumnType::fixed_len`] knows a size for: the one
/// thing that decides a vector's layout, so a typeless encoder gets it right.
fn packs_in_vector(v: &Value) -> bool {
    match v {
        Value::Boolean(_)
        | Value::Float(_)
        | Value::Int(_)
        | Value::Double(_)
        | Value::Bigint(_)
        | Value::Timestamp(_)
        | Value::Uuid(_)
        | Value::Timeuuid(_) => true,
        Value::Vector(items) => !items.is_empty() && items.iter().all(packs_in_vector),
        _ => false,
    }
}

fn put_len(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&i32::try_from(n).unwrap_or(i32::MAX).to_be_bytes());
}

/// `[bytes]` element: encoded in place, then the length is patched in (no temporary buffer).
fn encode_elem(v: &Value, out: &mut Vec<u8>) {
    if matches!(v, Value::Null) {
        out.extend_from_slice(&(-1i32).to_be_bytes());
        return;
    }
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    encode_value(v, out);
    let n = i32::try_from(out.len() - at - 4).unwrap_or(i32::MAX);
    out[at..at + 4].copy_from_slice(&n.to_be_bytes());
}

/// `encode_value` into a fresh vector.
pub fn to_bytes(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    encode_value(v, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt(ty: ColumnType, v: Value) {
        let b = to_bytes(&v);
        validate_value(&ty, &b).unwrap_or_else(|e| panic!("{ty} {v:?}: {e}"));
        assert_eq!(decode_value(&ty, &b).unwrap(), v, "{ty}");
        for cut in 0..b.len() {
            let _ = decode_value(&ty, &b[..cut]);
            let _ = validate_value(&ty, &b[..cut]);
        }
    }

    fn timeuuid() -> [u8; 16] {
        let mut u = [0x11u8; 16];
        u[6] = 0x11; // version 1
        u
    }

    #[test]
    fn every_native_type_round_trips() {
        use ColumnType as T;
        rt(T::Ascii, Value::Ascii("abc".into()));
        rt(T::Bigint, Value::Bigint(-5));
        rt(T::Blob, Value::Blob(vec![0, 1, 2]));
        rt(T::Boolean, Value::Boolean(true));
        rt(T::Counter, Value::Counter(7));
        rt(
            T::Decimal,
            Value::Decimal {
                scale: 2,
                unscaled: vec![0x30, 0x39],
            },
        );
        rt(T::Double, Value::Double(1.5));
        rt(T::Float, Value::Float(-2.25));
        rt(T::Int, Value::Int(i32::MIN));
        rt(T::Timestamp, Value::Timestamp(1_700_000_000_000));
        rt(T::Uuid, Value::Uuid([7; 16]));
        rt(T::Varchar, Value::Varchar("héllo ✓".into()));
        rt(T::Varint, Value::Varint(vec![0xff, 0x00]));
        rt(T::Timeuuid, Value::Timeuuid(timeuuid()));
        rt(T::Inet, Value::Inet("10.0.0.1".parse().unwrap()));
        rt(T::Inet, Value::Inet("::1".parse().unwrap()));
        rt(T::Date, Value::Date(1 << 31));
        rt(T::Time, Value::Time(86_400_000_000_000 - 1));
        rt(T::Smallint, Value::Smallint(-300));
        rt(T::Tinyint, Value::Tinyint(-3));
        for (m, d, n) in [
            (0, 0, 0),
            (1, 2, 3),
            (-1, -2, -3),
            (i32::MAX, i32::MIN + 1, 0),
            (0, 0, i64::MAX),
            (0, 0, i64::MIN),
            (0, 0, 1 << 40),
        ] {
            if (m >= 0 && d >= 0 && n >= 0) || (m <= 0 && d <= 0 && n <= 0) {
                rt(
                    T::Duration,
                    Value::Duration {
                        months: m,
                        days: d,
                        nanos: n,
                    },
                );
            }
        }
    }

    #[test]
    fn collections_tuples_udts_round_trip() {
        use ColumnType as T;
        rt(
            T::List(Box::new(T::Int)),
            Value::List(vec![Value::Int(1), Value::Int(2)]),
        );
        rt(
            T::Set(Box::new(T::Varchar)),
            Value::Set(vec![Value::Varchar("a".into())]),
        );
        rt(
            T::Map(Box::new(T::Varchar), Box::new(T::List(Box::new(T::Bigint)))),
            Value::Map(vec![(
                Value::Varchar("k".into()),
                Value::List(vec![Value::Bigint(9)]),
            )]),
        );
        rt(T::List(Box::new(T::Int)), Value::List(vec![]));
        rt(
            T::Tuple(vec![T::Int, T::Varchar]),
            Value::Tuple(vec![Value::Int(1), Value::Null]),
        );
        let udt = T::Udt {
            keyspace: "ks".into(),
            name: "a".into(),
            fields: vec![
                ("x".into(), T::Int),
                ("y".into(), T::Set(Box::new(T::Uuid))),
            ],
        };
        rt(
            udt.clone(),
            Value::Udt(vec![
                ("x".into(), Value::Int(3)),
                ("y".into(), Value::Set(vec![Value::Uuid([1; 16])])),
            ]),
        );
        // A UDT value with fewer fields than the type (older value after ALTER TYPE ADD).
        let short = to_bytes(&Value::Tuple(vec![Value::Int(3)]));
        validate_value(&udt, &short).unwrap();
        assert_eq!(
            decode_value(&udt, &short).unwrap(),
            Value::Udt(vec![("x".into(), Value::Int(3)), ("y".into(), Value::Null)])
        );
    }

    #[test]
    fn vectors_pack_fixed_elements_and_prefix_the_others() {
        use ColumnType as T;
        let floats = T::Vector(Box::new(T::Float), 2);
        let v = Value::Vector(vec![Value::Float(1.0), Value::Float(-2.5)]);
        assert_eq!(to_bytes(&v), [0x3f, 0x80, 0, 0, 0xc0, 0x20, 0, 0]);
        rt(floats.clone(), v);
        let texts = T::Vector(Box::new(T::Varchar), 2);
        let v = Value::Vector(vec![Value::Varchar("ab".into()), Value::Varchar("".into())]);
        assert_eq!(to_bytes(&v), [2, b'a', b'b', 0]);
        rt(texts.clone(), v);
        let nested = T::Vector(Box::new(T::Vector(Box::new(T::Int), 2)), 2);
        rt(
            nested,
            Value::Vector(vec![
                Value::Vector(vec![Value::Int(1), Value::Int(2)]),
                Value::Vector(vec![Value::Int(3), Value::Int(4)]),
            ]),
        );
        let lists = T::Vector(Box::new(T::List(Box::new(T::Int))), 1);
        rt(lists, Value::Vector(vec![Value::List(vec![Value::Int(7)])]));
        // Cassandra 5.0.9's messages for bound values of the wrong size.
        assert_eq!(
            validate_value(&floats, &[0; 7]).unwrap_err().to_string(),
            "Not enough bytes to read a vector<float, 2>"
        );
        assert_eq!(
            validate_value(&floats, &[0; 9]).unwrap_err().to_string(),
            "Unexpected 1 extraneous bytes after vector<float, 2> value"
        );
        assert_eq!(
            validate_value(&floats, &[]).unwrap_err().to_string(),
            "Invalid empty vector value"
        );
        assert_eq!(
            validate_value(&texts, &[1, b'a', 1, b'b', 0])
                .unwrap_err()
                .to_string(),
            "Unexpected 1 extraneous bytes after vector<text, 2> value"
        );
        assert!(validate_value(&texts, &[2, b'a']).is_err());
        assert!(validate_value(&texts, &[1, b'a', 0, 9]).is_err());
        assert!(validate_value(&texts, &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]).is_err());
        assert!(validate_value(&T::Vector(Box::new(T::Varchar), u32::MAX), &[0]).is_err());
        assert_eq!(decode_value(&floats, &[]).unwrap(), Value::Null);
        // 5.0.9 takes any float bits in a vector (NaN, infinities: only the length is
        // checked), but checks each element of a fixed-size type that has more to check.
        let odd: Vec<u8> = [f32::NAN, f32::INFINITY]
            .iter()
            .flat_map(|x| x.to_be_bytes())
            .collect();
        assert!(validate_value(&floats, &odd).is_ok());
        let timeuuids = T::Vector(Box::new(T::Timeuuid), 2);
        let mut two = [0u8; 32];
        two[6] = 0x10;
        two[22] = 0x10;
        assert!(validate_value(&timeuuids, &two).is_ok());
        two[22] = 0x40;
        two[16] = 0xab;
        assert_eq!(
            validate_value(&timeuuids, &two).unwrap_err().to_string(),
            "Invalid version for TimeUUID type: 0xa"
        );
        // The element before the extra byte; too short before the element.
        let mut long = two.to_vec();
        long.push(0);
        assert_eq!(
            validate_value(&timeuuids, &long).unwrap_err().to_string(),
            "Invalid version for TimeUUID type: 0xa"
        );
        assert_eq!(
            validate_value(&timeuuids, &two[..31])
                .unwrap_err()
                .to_string(),
            "Not enough bytes to read a vector<timeuuid, 2>"
        );
        // time has no fixed length in a vector: each element is read behind its length and
        // checked before the value's end is.
        let times = T::Vector(Box::new(T::Time), 2);
        for b in [&[1u8, 0][..], &[1, 0, 8], &[1, 0, 1, 0, 0, 0]] {
            assert_eq!(
                validate_value(&times, b).unwrap_err().to_string(),
                "Expected 8 byte long for time (1)",
                "{b:?}"
            );
        }
        let mut ok = vec![8u8];
        ok.extend_from_slice(&(-1i64).to_be_bytes());
        assert_eq!(
            validate_value(&times, &ok).unwrap_err().to_string(),
            "Not enough bytes to read a vector<time, 2>"
        );
        ok.extend_from_within(..);
        assert!(validate_value(&times, &ok).is_ok());
        ok.push(0);
        assert_eq!(
            validate_value(&times, &ok).unwrap_err().to_string(),
            "Unexpected 1 extraneous bytes after vector<time, 2> value"
        );
        let nested = T::Vector(Box::new(T::Vector(Box::new(T::Timeuuid), 1)), 2);
        assert!(validate_value(&nested, &two).is_err());
    }

    #[test]
    fn golden_bytes() {
        assert_eq!(to_bytes(&Value::Int(1)), [0, 0, 0, 1]);
        assert_eq!(
            to_bytes(&Value::List(vec![Value::Int(1)])),
            [0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 1]
        );
        // duration 1mo 2d 3ns: zig-zag vints 2, 4, 6.
        assert_eq!(
            to_bytes(&Value::Duration {
                months: 1,
                days: 2,
                nanos: 3
            }),
            [2, 4, 6]
        );
        // 1000 ns -> zig-zag 2000 = 0x7d0 -> two-byte vint 0x87 0xd0.
        assert_eq!(
            to_bytes(&Value::Duration {
                months: 0,
                days: 0,
                nanos: 1000
            }),
            [0, 0, 0x87, 0xd0]
        );
    }

    /// Text is UTF-8 exactly as `std::str::from_utf8` says, at every length around the SIMD
    /// validator's threshold and its 64-byte blocks, with the bad or multi-byte sequence at
    /// the start, the end and across a block's edge.
    #[test]
    fn text_validation_matches_std_at_every_length() {
        let pieces: [&[u8]; 10] = [
            "é".as_bytes(),
            "€".as_bytes(),
            "😀".as_bytes(),
            &[0xff],
            &[0xc3],                   // truncated 2-byte sequence
            &[0xe2, 0x82],             // truncated 3-byte sequence
            &[0xc0, 0x80],             // overlong NUL
            &[0xed, 0xa0, 0x80],       // a UTF-16 surrogate
            &[0xf4, 0x90, 0x80, 0x80], // past U+10FFFF
            &[0x80],                   // a lone continuation byte
        ];
        let mut checked = 0;
        for len in (0usize..300).chain([4095, 4096, 4097]) {
            for piece in pieces {
                for at in [0, len / 2, len.saturating_sub(piece.len()), 63, 64, 127] {
                    if at + piece.len() > len {
                        continue;
                    }
                    let mut text = vec![b'a'; len];
                    text[at..at + piece.len()].copy_from_slice(piece);
                    let valid = std::str::from_utf8(&text).is_ok();
                    let got = validate_value(&ColumnType::Varchar, &text);
                    assert_eq!(got.is_ok(), valid, "{len} bytes, {piece:?} at {at}");
                    if let Err(e) = got {
                        assert_eq!(e.to_string(), "String didn't validate.");
                        assert_eq!(e.code(), 0x2200);
                    }
                    checked += usize::from(!valid);
                }
            }
            assert!(validate_value(&ColumnType::Varchar, &vec![b'a'; len]).is_ok());
            assert!(validate_value(&ColumnType::Ascii, &vec![b'a'; len]).is_ok());
        }
        assert!(checked > 1000, "{checked} invalid texts checked");
    }

    #[test]
    fn validation_messages_are_cassandras() {
        let e = validate_value(&ColumnType::Int, &[0, 0, 1]).unwrap_err();
        assert_eq!(e.to_string(), "Expected 4 or 0 byte int (3)");
        assert_eq!(e.code(), 0x2200);
        assert_eq!(
            validate_value(&ColumnType::Bigint, &[1])
                .unwrap_err()
                .to_string(),
            "Expected 8 or 0 byte long (1)"
        );
        assert_eq!(
            validate_value(&ColumnType::Varchar, &[0xff])
                .unwrap_err()
                .to_string(),
            "String didn't validate."
        );
        assert_eq!(
            validate_value(&ColumnType::Ascii, &[b'a', 0xc3])
                .unwrap_err()
                .to_string(),
            "Invalid byte for ascii: -61"
        );
        assert_eq!(
            validate_value(&ColumnType::Smallint, &[])
                .unwrap_err()
                .to_string(),
            "Expected 2 bytes for a smallint (0)"
        );
        assert!(validate_value(&ColumnType::Timeuuid, &[0u8; 16]).is_err());
        // Outside the day, as 5.0.9 takes it bound.
        assert!(validate_value(&ColumnType::Time, &(-1i64).to_be_bytes()).is_ok());
        assert!(validate_value(&ColumnType::Time, &i64::MAX.to_be_bytes()).is_ok());
        assert!(validate_value(&ColumnType::Time, &[0; 7]).is_err());
        assert!(
            validate_value(&ColumnType::Duration, &[2, 3, 6]).is_err(),
            "mixed signs"
        );
        let list = ColumnType::List(Box::new(ColumnType::Int));
        assert!(
            validate_value(&list, &[0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff]).is_err(),
            "null element"
        );
        assert!(
            validate_value(&list, &[0, 0, 0, 0, 9]).is_err(),
            "extra bytes"
        );
        assert!(
            validate_value(&list, &[0x7f, 0xff, 0xff, 0xff]).is_err(),
            "hostile count"
        );
    }

    #[test]
    fn empty_values() {
        for ty in [
            ColumnType::Int,
            ColumnType::Bigint,
            ColumnType::Boolean,
            ColumnType::Uuid,
            ColumnType::Inet,
            ColumnType::Decimal,
            ColumnType::Varint,
            ColumnType::Float,
        ] {
            validate_value(&ty, &[]).unwrap();
            assert_eq!(decode_value(&ty, &[]).unwrap(), Value::Null, "{ty}");
        }
        assert_eq!(
            decode_value(&ColumnType::Varchar, &[]).unwrap(),
            Value::Varchar(String::new())
        );
        for ty in [
            ColumnType::Date,
            ColumnType::Time,
            ColumnType::Smallint,
            ColumnType::Tinyint,
            ColumnType::Duration,
        ] {
            assert!(validate_value(&ty, &[]).is_err(), "{ty}");
        }
    }

    #[test]
    fn garbage_never_panics() {
        use ColumnType as T;
        let types = [
            T::Duration,
            T::Decimal,
            T::Map(Box::new(T::Varchar), Box::new(T::List(Box::new(T::Int)))),
            T::Tuple(vec![T::Int, T::Set(Box::new(T::Duration))]),
            T::Udt {
                keyspace: "k".into(),
                name: "u".into(),
                fields: vec![("a".into(), T::Time)],
            },
            T::Vector(Box::new(T::Float), 2),
            T::Vector(Box::new(T::Varchar), 2),
            T::Vector(Box::new(T::Varint), 3),
            T::Vector(Box::new(T::Vector(Box::new(T::Int), 1)), 2),
            T::Vector(Box::new(T::List(Box::new(T::Int))), 1),
            T::Vector(Box::new(T::Decimal), 1),
        ];
        let mut seed = 0xA0761D6478BD642Fu64;
        for i in 0..40_000usize {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let len = (seed % 24) as usize;
            let b: Vec<u8> = (0..len)
                .map(|j| {
                    if (seed >> j) & 3 == 0 {
                        0xff
                    } else {
                        ((seed >> (j % 8 * 8)) as u8) % 9
                    }
                })
                .collect();
            let ty = &types[i % types.len()];
            let decoded = decode_value(ty, &b);
            // As the value_decode fuzz target: what validates decodes, and re-encodes to
            // something that validates again.
            if validate_value(ty, &b).is_ok() {
                let v = decoded.unwrap_or_else(|e| panic!("{ty} {b:?}: {e}"));
                assert!(validate_value(ty, &to_bytes(&v)).is_ok(), "{ty} {b:?}");
            }
        }
    }
}
