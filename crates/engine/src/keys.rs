//! Storage key layout and the byte-comparable encoding of clustering values.
//!
//! ```text
//! schema:  0x00 ...                                   (catalog, see catalog.rs)
//! header:  0x01 table_id:u32 token:u64 esc(pk) 0x00   (partition tombstone, range tombstones, statics)
//! row:     0x01 table_id:u32 token:u64 esc(pk) 0x01 clustering...
//! ```
//! `token` is the Murmur3 token made unsigned-ordered, so partitions sort in token order
//! and, within one token, by key bytes — Cassandra's order. `esc` escapes 0x00 as
//! 0x00 0xFF and ends with 0x00 0x00, which keeps unsigned byte order and is self-delimiting.
//!
//! Each clustering component is a presence byte (0 = empty value, 1 = value) and the
//! value's order-preserving encoding (Cassandra's typed order for every type: decimals by
//! value, tuples/UDTs field by field with null first, frozen collections element by element);
//! a DESC column has all of its component's bytes inverted. Components are self-delimiting, so
//! a prefix of components is a key prefix. [`crate::types::compare`] compares through it.

use crate::token::token_to_ordered;
use proto::types::ColumnType;

pub const DATA_PREFIX: u8 = 0x01;

pub fn escape_into(out: &mut Vec<u8>, b: &[u8]) {
    // The runs between zero bytes are copied whole (a push per byte was ~15 instructions a
    // byte on every point read's key), found by `memchr`; each zero becomes 0x00 0xFF.
    let mut rest = b;
    while let Some(i) = memchr::memchr(0, rest) {
        out.extend_from_slice(&rest[..=i]);
        out.push(0xFF);
        rest = &rest[i + 1..];
    }
    out.extend_from_slice(rest);
    out.extend_from_slice(&[0, 0]);
}

/// Reverses [`escape_into`]; returns the bytes and how much input they took. `None` when
/// the bytes end before the terminator or a zero is followed by anything but 0xFF or 0.
pub fn unescape(b: &[u8]) -> Option<(Vec<u8>, usize)> {
    // The runs between zero bytes are copied whole (a scan decodes every row's key).
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    loop {
        let zero = i + memchr::memchr(0, &b[i..])?;
        out.extend_from_slice(&b[i..zero]);
        match *b.get(zero + 1)? {
            0xFF => {
                out.push(0);
                i = zero + 2;
            }
            0 => return Some((out, zero + 2)),
            _ => return None,
        }
    }
}

pub fn table_prefix(table_id: u32) -> Vec<u8> {
    let mut k = Vec::with_capacity(5);
    k.push(DATA_PREFIX);
    k.extend_from_slice(&table_id.to_be_bytes());
    k
}

/// `0x01 table token esc(pk)` — shared by the header and every row of the partition.
pub fn partition_prefix(table_id: u32, token: i64, pk: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(16 + pk.len() + 4);
    partition_prefix_into(&mut k, table_id, token, pk);
    k
}

/// Appends [`partition_prefix`] to `out` (a buffer a caller reuses).
pub fn partition_prefix_into(out: &mut Vec<u8>, table_id: u32, token: i64, pk: &[u8]) {
    out.push(DATA_PREFIX);
    out.extend_from_slice(&table_id.to_be_bytes());
    out.extend_from_slice(&token_to_ordered(token).to_be_bytes());
    escape_into(out, pk);
}

/// The first key at or after `token` in the table.
pub fn token_prefix(table_id: u32, token: i64) -> Vec<u8> {
    let mut k = table_prefix(table_id);
    k.extend_from_slice(&token_to_ordered(token).to_be_bytes());
    k
}

/// The first key past every key of `token` in the table.
pub fn after_token(table_id: u32, token: i64) -> Vec<u8> {
    match token_to_ordered(token).checked_add(1) {
        Some(next) => {
            let mut k = table_prefix(table_id);
            k.extend_from_slice(&next.to_be_bytes());
            k
        }
        None => prefix_end(&table_prefix(table_id)),
    }
}

pub fn header_key(partition_prefix: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(partition_prefix.len() + 1);
    k.extend_from_slice(partition_prefix);
    k.push(0);
    k
}

pub fn row_key(partition_prefix: &[u8], encoded_clustering: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(partition_prefix.len() + 1 + encoded_clustering.len());
    k.extend_from_slice(partition_prefix);
    k.push(1);
    k.extend_from_slice(encoded_clustering);
    k
}

/// The length of a data key's partition prefix (`0x01 table token esc(pk)`), read without
/// copying the key (the write path's stripe choice reads it on every write); `None` for a key
/// that is not one.
pub fn partition_prefix_len(key: &[u8]) -> Option<usize> {
    if key.len() < 13 || key[0] != DATA_PREFIX {
        return None;
    }
    let mut i = 13;
    loop {
        i += memchr::memchr(0, key.get(i..)?)?;
        match *key.get(i + 1)? {
            0 => return Some(i + 2),
            _ => i += 2,
        }
    }
}

/// The id of the table a storage key (row, header or partition prefix) is under.
pub fn table_id(key: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(key.get(1..5)?.try_into().ok()?))
}

/// The table id of a partition prefix ([`partition_prefix`]) and what names its partition
/// whatever the table: the token and the escaped key (equal exactly when the keys are).
pub fn partition_identity(prefix: &[u8]) -> Option<(u32, &[u8])> {
    Some((table_id(prefix)?, prefix.get(5..)?))
}

/// What a storage key under a table is: (token, pk bytes, is_header, clustering tail).
pub struct DecodedKey<'a> {
    pub token: i64,
    pub pk: Vec<u8>,
    pub prefix_len: usize,
    pub is_header: bool,
    pub clustering: &'a [u8],
}

pub fn decode_key(key: &[u8]) -> Option<DecodedKey<'_>> {
    if key.len() < 13 || key[0] != DATA_PREFIX {
        return None;
    }
    let mut t = [0u8; 8];
    t.copy_from_slice(&key[5..13]);
    let token = (u64::from_be_bytes(t) ^ (1 << 63)) as i64;
    let (pk, used) = unescape(&key[13..])?;
    let prefix_len = 13 + used;
    let kind = *key.get(prefix_len)?;
    Some(DecodedKey {
        token,
        pk,
        prefix_len,
        is_header: kind == 0,
        clustering: &key[prefix_len + 1..],
    })
}

/// The smallest key greater than every key starting with `prefix`.
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut p = prefix.to_vec();
    while let Some(last) = p.pop() {
        if last < 0xFF {
            p.push(last + 1);
            return p;
        }
    }
    vec![0xFF; prefix.len() + 1]
}

/// Appends one clustering component's order-preserving encoding.
pub fn encode_component(out: &mut Vec<u8>, ty: &ColumnType, value: &[u8], desc: bool) {
    let start = out.len();
    if value.is_empty() {
        out.push(0);
    } else {
        out.push(1);
        encode_value(out, ty, value);
    }
    if desc {
        for b in &mut out[start..] {
            *b = !*b;
        }
    }
}

fn flip_sign(out: &mut Vec<u8>, v: &[u8]) {
    let mut first = true;
    for &b in v {
        out.push(if first { b ^ 0x80 } else { b });
        first = false;
    }
}

fn encode_value(out: &mut Vec<u8>, ty: &ColumnType, v: &[u8]) {
    use ColumnType::*;
    match ty {
        Int | Bigint | Smallint | Tinyint | Timestamp | Time | Counter if v.len() <= 8 => {
            flip_sign(out, v)
        }
        Date | Boolean if v.len() <= 8 => out.extend_from_slice(v),
        Float | Double if v.len() == 4 || v.len() == 8 => {
            let neg = v[0] & 0x80 != 0;
            for &b in v.iter().take(1) {
                out.push(if neg { !b } else { b ^ 0x80 });
            }
            for &b in &v[1..] {
                out.push(if neg { !b } else { b });
            }
        }
        Timeuuid if v.len() == 16 => encode_timeuuid(out, v),
        Uuid if v.len() == 16 => {
            let version = v[6] >> 4;
            out.push(version);
            if version == 1 {
                encode_timeuuid(out, v);
            } else {
                out.extend_from_slice(v);
            }
        }
        Varint => encode_varint(out, v),
        Decimal if v.len() >= 4 => encode_decimal(out, v),
        Tuple(types) => encode_fields(out, v, types.iter()),
        Udt { fields, .. } => encode_fields(out, v, fields.iter().map(|(_, t)| t)),
        List(e) | Set(e) => match crate::exec::decode_list_elements(v) {
            Some(items) => {
                for item in items {
                    out.push(2);
                    encode_component(out, e, &item, false);
                }
                out.push(0);
            }
            None => escape_into(out, v),
        },
        Map(k, t) => match crate::collections::map_entries(v) {
            Some(entries) => {
                for (key, value) in entries {
                    out.push(2);
                    encode_component(out, k, &key, false);
                    encode_component(out, t, &value, false);
                }
                out.push(0);
            }
            None => escape_into(out, v),
        },
        // Element by element, as VectorType compares; the count is fixed by the type.
        Vector(e, n) => match proto::value::vector_elements(e, *n, v) {
            Ok(items) => {
                for item in items {
                    encode_component(out, e, item, false);
                }
            }
            Err(_) => escape_into(out, v),
        },
        // Text, ascii, blob, inet compare as unsigned bytes in Cassandra.
        _ => escape_into(out, v),
    }
}

/// A tuple's or UDT's fields in order, each null (1) or present (2, then its component), and
/// an end byte (0): Cassandra compares field by field, null first, a shorter value first.
fn encode_fields<'a>(out: &mut Vec<u8>, v: &[u8], types: impl Iterator<Item = &'a ColumnType>) {
    let mut pos = 0;
    for ty in types {
        if pos + 4 > v.len() {
            break;
        }
        let len = i32::from_be_bytes([v[pos], v[pos + 1], v[pos + 2], v[pos + 3]]);
        pos += 4;
        if len < 0 {
            out.push(1);
            continue;
        }
        let end = (pos + len as usize).min(v.len());
        out.push(2);
        encode_component(out, ty, &v[pos..end], false);
        pos = end;
    }
    out.push(0);
}

/// A decimal by its numeric value (BigDecimal.compareTo: 1.5 and 1.50 are equal): a sign
/// byte, then for a non-zero value the decimal exponent and the significant digits ended by
/// 0x00, all inverted for a negative value.
fn encode_decimal(out: &mut Vec<u8>, v: &[u8]) {
    let scale = i32::from_be_bytes([v[0], v[1], v[2], v[3]]) as i64;
    let unscaled = crate::bigint::BigInt::from_twos(&v[4..]);
    if unscaled.is_zero() {
        out.push(1);
        return;
    }
    let text = unscaled.to_decimal_string();
    let (neg, digits) = match text.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, text.as_str()),
    };
    let digits = digits.trim_end_matches('0');
    let stripped = text.len() - usize::from(neg) - digits.len();
    // value = 0.d1d2... x 10^exponent
    let exponent = digits.len() as i64 + stripped as i64 - scale;
    let mut body = Vec::with_capacity(digits.len() + 9);
    body.extend_from_slice(&((exponent as u64) ^ (1 << 63)).to_be_bytes());
    body.extend_from_slice(digits.as_bytes());
    body.push(0);
    if neg {
        out.push(0);
        out.extend(body.iter().map(|b| !b));
    } else {
        out.push(2);
        out.extend(body);
    }
}

fn encode_timeuuid(out: &mut Vec<u8>, v: &[u8]) {
    // Timestamp: time_hi (without version) | time_mid | time_low, then the rest as signed bytes.
    out.push(v[6] & 0x0F);
    out.push(v[7]);
    out.extend_from_slice(&v[4..6]);
    out.extend_from_slice(&v[0..4]);
    for &b in &v[8..16] {
        out.push(b ^ 0x80);
    }
}

fn encode_varint(out: &mut Vec<u8>, v: &[u8]) {
    // Strip redundant sign bytes so equal numbers encode equally.
    let neg = v[0] & 0x80 != 0;
    let pad = if neg { 0xFF } else { 0x00 };
    let mut s = v;
    while s.len() > 1 && s[0] == pad && (s[1] & 0x80 != 0) == neg {
        s = &s[1..];
    }
    let len = s.len() as u32;
    if neg {
        out.push(0);
        out.extend_from_slice(&(!len).to_be_bytes());
    } else {
        out.push(1);
        out.extend_from_slice(&len.to_be_bytes());
    }
    out.extend_from_slice(s);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_prefix_len_reads_escaped_keys() {
        for pk in [&b""[..], b"abc", &[0, 0, 1], &[0xFF, 0, 0xFF]] {
            let prefix = partition_prefix(7, -3, pk);
            assert_eq!(
                partition_prefix_len(&header_key(&prefix)),
                Some(prefix.len())
            );
            let row = row_key(&prefix, &[1, 0, 0, 0]);
            assert_eq!(partition_prefix_len(&row), Some(prefix.len()));
        }
        assert_eq!(partition_prefix_len(&[DATA_PREFIX, 0, 0]), None);
        assert_eq!(partition_prefix_len(&[0x02; 20]), None);
    }

    fn enc(ty: &ColumnType, v: &[u8], desc: bool) -> Vec<u8> {
        let mut o = Vec::new();
        encode_component(&mut o, ty, v, desc);
        o
    }

    #[test]
    fn ints_sort_numerically_both_directions() {
        let vals = [i32::MIN, -2, -1, 0, 1, 300, i32::MAX];
        for w in vals.windows(2) {
            let a = enc(&ColumnType::Int, &w[0].to_be_bytes(), false);
            let b = enc(&ColumnType::Int, &w[1].to_be_bytes(), false);
            assert!(a < b);
            let a = enc(&ColumnType::Int, &w[0].to_be_bytes(), true);
            let b = enc(&ColumnType::Int, &w[1].to_be_bytes(), true);
            assert!(a > b);
        }
    }

    #[test]
    fn doubles_and_text_sort() {
        let vals = [-1e9f64, -1.5, -0.0, 0.5, 2.0, f64::INFINITY];
        for w in vals.windows(2) {
            let a = enc(&ColumnType::Double, &w[0].to_be_bytes(), false);
            let b = enc(&ColumnType::Double, &w[1].to_be_bytes(), false);
            assert!(a < b, "{} < {}", w[0], w[1]);
        }
        let a = enc(&ColumnType::Varchar, b"ab", false);
        let b = enc(&ColumnType::Varchar, b"ab\0", false);
        let c = enc(&ColumnType::Varchar, b"b", false);
        assert!(a < b && b < c);
    }

    #[test]
    fn varints_sort() {
        let vals: [&[u8]; 6] = [
            &[0x80, 0],
            &[0xFF, 0x7F],
            &[0xFF],
            &[0],
            &[0x7F],
            &[0, 0x80],
        ];
        for w in vals.windows(2) {
            assert!(enc(&ColumnType::Varint, w[0], false) < enc(&ColumnType::Varint, w[1], false));
        }
    }

    fn decimal(scale: i32, unscaled: &[u8]) -> Vec<u8> {
        [&scale.to_be_bytes()[..], unscaled].concat()
    }

    fn fields(values: &[Option<&[u8]>]) -> Vec<u8> {
        let owned: Vec<Option<Vec<u8>>> = values.iter().map(|v| v.map(<[u8]>::to_vec)).collect();
        crate::collections::encode_fields(&owned)
    }

    #[test]
    fn decimals_sort_by_value() {
        // -2.5E+3, -1.55, -1.5, -0.001, 0, 0.001, 1.5 = 1.50, 1.55, 3, 2.5E+3
        let vals = [
            decimal(-2, &[0xE7]),      // -25 x 10^2
            decimal(2, &[0xFF, 0x65]), // -155 / 100
            decimal(1, &[0xF1]),       // -15 / 10
            decimal(3, &[0xFF]),       // -1 / 1000
            decimal(0, &[0]),          // 0
            decimal(3, &[1]),          // 0.001
            decimal(1, &[15]),         // 1.5
            decimal(2, &[0, 0x9B]),    // 1.55
            decimal(0, &[3]),          // 3
            decimal(-2, &[25]),        // 2.5E+3
        ];
        for w in vals.windows(2) {
            let (a, b) = (
                enc(&ColumnType::Decimal, &w[0], false),
                enc(&ColumnType::Decimal, &w[1], false),
            );
            assert!(a < b, "{:?} < {:?}", w[0], w[1]);
            let (a, b) = (
                enc(&ColumnType::Decimal, &w[0], true),
                enc(&ColumnType::Decimal, &w[1], true),
            );
            assert!(a > b, "DESC {:?} > {:?}", w[0], w[1]);
        }
        // 1.5 and 1.50 are one value.
        assert_eq!(
            enc(&ColumnType::Decimal, &decimal(1, &[15]), false),
            enc(&ColumnType::Decimal, &decimal(2, &[0, 150]), false)
        );
    }

    #[test]
    fn tuples_sort_field_by_field_null_first() {
        let ty = ColumnType::Tuple(vec![ColumnType::Varchar, ColumnType::Int]);
        let five = 5i32.to_be_bytes();
        let vals = [
            fields(&[None, Some(&five)]),
            fields(&[Some(b"a")]),
            fields(&[Some(b"a"), None]),
            fields(&[Some(b"a"), Some(&(-1i32).to_be_bytes())]),
            fields(&[Some(b"a"), Some(&five)]),
            fields(&[Some(b"b"), None]),
        ];
        for w in vals.windows(2) {
            assert!(
                enc(&ty, &w[0], false) < enc(&ty, &w[1], false),
                "{:?} < {:?}",
                w[0],
                w[1]
            );
        }
    }

    #[test]
    fn frozen_collections_sort_element_by_element() {
        let ty = ColumnType::List(Box::new(ColumnType::Int));
        let list = |items: &[i32]| {
            let items: Vec<Vec<u8>> = items.iter().map(|i| i.to_be_bytes().to_vec()).collect();
            crate::literal::encode_collection(&items)
        };
        let vals = [
            list(&[]),
            list(&[-1]),
            list(&[-1, 5]),
            list(&[2]),
            list(&[10, -3]),
        ];
        for w in vals.windows(2) {
            assert!(enc(&ty, &w[0], false) < enc(&ty, &w[1], false));
        }
    }

    #[test]
    fn escape_doubles_every_zero_and_ends_with_two() {
        let cases: [(&[u8], &[u8]); 6] = [
            (b"", &[0, 0]),
            (b"ab", b"ab\0\0"),
            (&[0], &[0, 0xFF, 0, 0]),
            (&[0, 0, 7], &[0, 0xFF, 0, 0xFF, 7, 0, 0]),
            (&[7, 0], &[7, 0, 0xFF, 0, 0]),
            (
                &[1, 0, 2, 0, 0, 3],
                &[1, 0, 0xFF, 2, 0, 0xFF, 0, 0xFF, 3, 0, 0],
            ),
        ];
        for (raw, escaped) in cases {
            let mut out = vec![9];
            escape_into(&mut out, raw);
            assert_eq!(&out[1..], escaped, "{raw:?}");
            assert_eq!(unescape(&out[1..]), Some((raw.to_vec(), escaped.len())));
            // What follows the terminator is not read.
            let mut longer = out[1..].to_vec();
            longer.extend_from_slice(&[5, 0, 0]);
            assert_eq!(unescape(&longer), Some((raw.to_vec(), escaped.len())));
        }
        // Damaged: no terminator, a zero at the end, a zero followed by another byte.
        for bad in [&b"ab"[..], &[1, 0], &[1, 0, 7, 0, 0], &[]] {
            assert_eq!(unescape(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn escape_round_trip_and_key_decode() {
        let pk = vec![0, 1, 0, 0xFF];
        let p = partition_prefix(7, -5, &pk);
        let rk = row_key(&p, &[9, 9]);
        let d = decode_key(&rk).unwrap();
        assert_eq!(
            (d.token, d.pk.clone(), d.is_header, d.clustering),
            (-5, pk.clone(), false, &[9u8, 9][..])
        );
        let hk = header_key(&p);
        assert!(decode_key(&hk).unwrap().is_header);
        assert!(hk < rk);
        assert_eq!(prefix_end(&[1, 0xFF]), vec![2]);
    }
}
