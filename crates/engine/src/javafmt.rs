//! Values as Cassandra prints them (`toCQLLiteralNoQuote` / Java's `toString`): doubles and
//! floats as the JDK does, timestamps, dates, times, durations, UUIDs, inets, hex. Used by
//! casts to text, `toJson` and the arithmetic error messages.

use crate::bigint::{decimal_string, BigInt};
use proto::types::{ColumnType, Value};
use proto::value::decode_value;
use std::net::IpAddr;

use crate::temporal::civil_from_days;

/// The order a `java.util.HashSet` filled with `items` (in their order) iterates them: by
/// bucket, the item's `hashCode` spread as `HashMap.hash` spreads it and masked by the table
/// size (16, doubled while more than three quarters full), then by insertion. Cassandra prints
/// several sets of names in this order (tables in batch warnings, view key columns).
pub(crate) fn java_hash_set_order<T>(items: Vec<T>, hash_code: impl Fn(&T) -> i32) -> Vec<T> {
    let buckets = java_hash_buckets(items.len());
    let mut ordered: Vec<(usize, usize, T)> = items
        .into_iter()
        .enumerate()
        .map(|(i, item)| (java_hash_bucket(hash_code(&item), buckets), i, item))
        .collect();
    ordered.sort_by_key(|&(b, i, _)| (b, i));
    ordered.into_iter().map(|(_, _, item)| item).collect()
}

/// The buckets of a `java.util.HashMap` holding `entries` keys: 16, doubled while more than
/// three quarters full.
pub(crate) fn java_hash_buckets(entries: usize) -> usize {
    let mut buckets = 16usize;
    while entries * 4 > buckets * 3 {
        buckets *= 2;
    }
    buckets
}

/// The bucket of a key of `hash_code` in a `HashMap` of `buckets`: the hash spread as
/// `HashMap.hash` spreads it, masked by the table size.
pub(crate) fn java_hash_bucket(hash_code: i32, buckets: usize) -> usize {
    let h = hash_code as u32;
    (h ^ (h >> 16)) as usize & (buckets - 1)
}

/// Java's `String.hashCode` (over UTF-16 code units).
pub(crate) fn string_hash_code(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// Java's `ByteBuffer.hashCode` of `bytes` (signed bytes, last to first, from 1): the hash of
/// a `ColumnIdentifier`.
pub(crate) fn byte_buffer_hash_code(bytes: &[u8]) -> i32 {
    bytes.iter().rev().fold(1i32, |h, b| {
        h.wrapping_mul(31).wrapping_add(i32::from(*b as i8))
    })
}

const DATE_EPOCH: i64 = 1 << 31;
const MILLIS_PER_DAY: i64 = 86_400_000;

// ---- text formatting (toCQLLiteralNoQuote / toString) ------------------------------------

/// Java's `Double.toString` (JDK 11/17, which Cassandra 5.0 runs on): plain between 10^-3 and
/// 10^7 (`123123.0`, `0.001`), else computerized scientific (`1.0E7`, `1.0E-4`). Digits are
/// the shortest round-tripping ones, except where the JDK's `FloatingDecimal` takes its
/// integer fast path (see `java_digits`).
pub(crate) fn java_double(d: f64) -> String {
    if d.is_nan() {
        return "NaN".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    java_layout(&format!("{d:e}"), d.abs(), d.is_sign_negative(), 53)
}

/// Java's `Float.toString` (same layout, the float's own digits).
pub(crate) fn java_float(f: f32) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if f.abs() == f32::from_bits(1) {
        // The JDK prints the smallest subnormal float with two digits.
        return if f < 0.0 { "-1.4E-45" } else { "1.4E-45" }.into();
    }
    java_layout(
        &format!("{f:e}"),
        f64::from(f.abs()),
        f.is_sign_negative(),
        24,
    )
}

/// 2^63: integer values below it take the JDK's fast path.
const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;

/// `FloatingDecimal.insignificantDigitsNumber`.
const INSIGNIFICANT_DIGITS: [u32; 64] = [
    0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 8, 8, 8, 9, 9,
    9, 9, 10, 10, 10, 11, 11, 11, 12, 12, 12, 12, 13, 13, 13, 14, 14, 14, 15, 15, 15, 15, 16, 16,
    16, 17, 17, 17, 18, 18, 18, 19,
];

/// The decimal digits (no trailing zeros) and exponent Java prints for `abs`. Integer values
/// below 2^63 take `FloatingDecimal.dtoa`'s fast path: the exact integer, with only
/// `insignificantDigitsForPow2` low digits rounded off, so a float like 1795245056 prints as
/// `1.79524506E9`, not the shortest `1.795245E9` (Cassandra 5.0.9 does the former). Other
/// values use the shortest digits (`sci` is Rust's `{:e}` form).
fn java_digits(sci: &str, abs: f64, significant_bits: u32) -> (String, i32) {
    if (1.0..TWO_POW_63).contains(&abs) && abs.fract() == 0.0 {
        let mut v = abs as u64;
        let bin_exp = 63 - v.leading_zeros();
        let insignificant = if bin_exp > significant_bits {
            INSIGNIFICANT_DIGITS
                .get((bin_exp - significant_bits - 1) as usize)
                .copied()
                .unwrap_or(0)
        } else {
            0
        };
        if insignificant > 0 {
            let pow10 = 10u64.pow(insignificant);
            let residue = v % pow10;
            v /= pow10;
            if residue >= pow10 / 2 {
                v += 1;
            }
        }
        let text = v.to_string();
        let exp = text.len() as i32 - 1 + insignificant as i32;
        let digits = text.trim_end_matches('0');
        return (
            if digits.is_empty() {
                "0".into()
            } else {
                digits.into()
            },
            exp,
        );
    }
    if abs == f64::from_bits(1) {
        // The JDK prints the smallest subnormal double with two digits.
        return ("49".into(), -324);
    }
    let sci = sci.trim_start_matches('-');
    let (mant, exp) = sci.split_once('e').unwrap_or((sci, "0"));
    let digits: String = mant.chars().filter(char::is_ascii_digit).collect();
    (digits, exp.parse().unwrap_or(0))
}

fn java_layout(sci: &str, abs: f64, negative: bool, significant_bits: u32) -> String {
    let sign = if negative { "-" } else { "" };
    if abs == 0.0 {
        return format!("{sign}0.0");
    }
    let (digits, exp) = java_digits(sci, abs, significant_bits);
    if (1e-3..1e7).contains(&abs) {
        if exp >= 0 {
            let e = exp as usize;
            let (int, frac) = if digits.len() > e + 1 {
                (digits[..=e].to_string(), digits[e + 1..].to_string())
            } else {
                (
                    format!("{digits}{}", "0".repeat(e + 1 - digits.len())),
                    "0".into(),
                )
            };
            format!("{sign}{int}.{frac}")
        } else {
            format!("{sign}0.{}{digits}", "0".repeat((-exp - 1) as usize))
        }
    } else {
        let frac = if digits.len() > 1 { &digits[1..] } else { "0" };
        format!("{sign}{}.{frac}E{exp}", &digits[..1])
    }
}

/// `yyyy-MM-dd` of days since the epoch (years past 9999 get a `+`, as java.time prints).
pub(crate) fn format_date_days(days: i64) -> String {
    let (y, m, d) = civil_from_days(days);
    format!("{}-{m:02}-{d:02}", format_year(y))
}

fn format_year(y: i64) -> String {
    if y > 9999 {
        format!("+{y}")
    } else if y < 0 {
        format!("-{:04}", -y)
    } else {
        format!("{y:04}")
    }
}

/// A timestamp in UTC: `2024-01-01T00:00:00.000Z` (CAST to text, `sep` = 'T') or
/// `2024-01-01 00:00:00.000Z` (JSON, `sep` = ' ').
pub(crate) fn format_timestamp(ms: i64, sep: char) -> String {
    let day = ms.div_euclid(MILLIS_PER_DAY);
    let in_day = ms.rem_euclid(MILLIS_PER_DAY);
    let (h, mi, s, milli) = (
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000,
    );
    format!(
        "{}{sep}{h:02}:{mi:02}:{s:02}.{milli:03}Z",
        format_date_days(day)
    )
}

/// `HH:mm:ss.nnnnnnnnn` (TimeSerializer.toString). A bound time need not lie within the day
/// (5.0.9 stores any 8 bytes): each field is then Java's truncated remainder, the hours
/// taken modulo 24 and a negative field printed after its padding zeros, as 5.0.9 prints
/// -1 ("00:00:00.00000000-1") and 2^63-1 ("23:47:16.854775807").
pub(crate) fn format_time(nanos: i64) -> String {
    fn field(out: &mut String, x: i64, digits: u32) {
        // leftPadZeros: a zero for each power of ten (below 10^digits) above the value.
        for i in 1..digits {
            if x < 10i64.pow(i) {
                out.push('0');
            }
        }
        out.push_str(&x.to_string());
    }
    let mut v = nanos;
    let mut parts = [0i64; 6];
    for (part, unit) in parts.iter_mut().zip([1000, 1000, 1000, 60, 60, 24]) {
        *part = v % unit;
        v = (v - *part) / unit;
    }
    let [nano, micro, milli, seconds, minutes, hours] = parts;
    let mut out = String::with_capacity(18);
    field(&mut out, hours, 2);
    out.push(':');
    field(&mut out, minutes, 2);
    out.push(':');
    field(&mut out, seconds, 2);
    out.push('.');
    field(&mut out, milli, 3);
    field(&mut out, micro, 3);
    field(&mut out, nano, 3);
    out
}

/// `Duration.toString()`: `1y1mo2d10h5m`, `12us`, `-3d`.
pub(crate) fn format_duration(months: i32, days: i32, nanos: i64) -> String {
    fn append(out: &mut String, dividend: u64, divisor: u64, unit: &str) -> u64 {
        if dividend == 0 || dividend < divisor {
            return dividend;
        }
        out.push_str(&(dividend / divisor).to_string());
        out.push_str(unit);
        dividend % divisor
    }
    let mut out = String::new();
    if months < 0 || days < 0 || nanos < 0 {
        out.push('-');
    }
    let r = append(&mut out, u64::from(months.unsigned_abs()), 12, "y");
    append(&mut out, r, 1, "mo");
    append(&mut out, u64::from(days.unsigned_abs()), 1, "d");
    if nanos != 0 {
        let mut r = append(&mut out, nanos.unsigned_abs(), 3_600_000_000_000, "h");
        r = append(&mut out, r, 60_000_000_000, "m");
        r = append(&mut out, r, 1_000_000_000, "s");
        r = append(&mut out, r, 1_000_000, "ms");
        r = append(&mut out, r, 1000, "us");
        append(&mut out, r, 1, "ns");
    }
    out
}

pub(crate) fn format_uuid(u: &[u8]) -> String {
    let h = hex(u);
    if h.len() != 32 {
        return h;
    }
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// Java's `InetAddress.getHostAddress()`: IPv6 as eight unabbreviated hex groups
/// (`0:0:0:0:0:0:0:1`); an IPv4-mapped IPv6 address is the IPv4 address.
/// An inet literal read as Java's `InetAddress.getByName` reads it: an IPv4-mapped IPv6
/// address (`::ffff:1.2.3.4`) is the IPv4 address, stored in 4 bytes.
pub(crate) fn parse_inet(s: &str) -> Option<IpAddr> {
    match s.parse::<IpAddr>().ok()? {
        IpAddr::V6(a) => Some(a.to_ipv4_mapped().map_or(IpAddr::V6(a), IpAddr::V4)),
        v4 => Some(v4),
    }
}

pub(crate) fn format_inet(ip: &IpAddr) -> String {
    match ip {
        IpAddr::V4(a) => a.to_string(),
        IpAddr::V6(a) => match a.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let g: Vec<String> = a.segments().iter().map(|s| format!("{s:x}")).collect();
                g.join(":")
            }
        },
    }
}

pub(crate) fn hex(b: &[u8]) -> String {
    const H: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(b.len() * 2);
    for &x in b {
        s.push(H[(x >> 4) as usize] as char);
        s.push(H[(x & 15) as usize] as char);
    }
    s
}

/// The text CAST(x AS text) gives (`TypeSerializer.toCQLLiteralNoQuote`) for the types that
/// have such a cast; blobs print as `0x..` for callers that want it.
pub(crate) fn to_text(ty: &ColumnType, b: &[u8]) -> Result<String, String> {
    let v = decode_value(ty, b).map_err(|e| e.to_string())?;
    Ok(match v {
        Value::Null => "null".into(),
        Value::Ascii(s) | Value::Varchar(s) => s,
        Value::Boolean(x) => x.to_string(),
        Value::Tinyint(x) => x.to_string(),
        Value::Smallint(x) => x.to_string(),
        Value::Int(x) => x.to_string(),
        Value::Bigint(x) | Value::Counter(x) => x.to_string(),
        Value::Float(x) => java_float(x),
        Value::Double(x) => java_double(x),
        Value::Decimal { scale, unscaled } => decimal_string(&BigInt::from_twos(&unscaled), scale),
        Value::Varint(x) => BigInt::from_twos(&x).to_decimal_string(),
        Value::Timestamp(ms) => format_timestamp(ms, 'T'),
        Value::Date(d) => format_date_days(i64::from(d) - DATE_EPOCH),
        Value::Time(n) => format_time(n),
        Value::Uuid(u) | Value::Timeuuid(u) => format_uuid(&u),
        Value::Inet(ip) => format_inet(&ip),
        Value::Duration {
            months,
            days,
            nanos,
        } => format_duration(months, days, nanos),
        Value::Blob(x) => format!("0x{}", hex(&x)),
        other => return Err(format!("No text form for {}", other_name(&other))),
    })
}

fn other_name(v: &Value) -> &'static str {
    match v {
        Value::List(_) => "list",
        Value::Set(_) => "set",
        Value::Map(_) => "map",
        Value::Tuple(_) => "tuple",
        _ => "user type",
    }
}

#[cfg(test)]
mod time_tests {
    use super::format_time;

    #[test]
    fn times_print_as_cassandra_prints_them_inside_and_outside_the_day() {
        assert_eq!(format_time(0), "00:00:00.000000000");
        assert_eq!(format_time(86_399_999_999_999), "23:59:59.999999999");
        assert_eq!(format_time(3_723_004_005_006), "01:02:03.004005006");
        // Read off 5.0.9 (`CAST(tm AS text)` and `SELECT JSON` of values bound as raw bytes).
        assert_eq!(format_time(-1), "00:00:00.00000000-1");
        assert_eq!(format_time(86_400_000_000_000), "00:00:00.000000000");
        assert_eq!(format_time(i64::MAX), "23:47:16.854775807");
        assert_eq!(format_time(i64::MIN), "0-23:0-47:0-16.00-85400-77500-808");
    }
}
