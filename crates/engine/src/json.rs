//! `SELECT JSON` / `toJson()` and `INSERT JSON` / `fromJson()` value conversions, as Cassandra
//! 5.0's `AbstractType.toJSONString` / `fromJSONObject` define them.
//!
//! Not here: parsing the JSON text itself (serde_json does that), matching JSON keys to
//! columns, or DEFAULT UNSET handling: those belong to the statement executor.
//!
//! Formats (checked against `apache/cassandra` JsonTest.java and Cassandra 5.0.9): numbers
//! bare (`123123.0` like Java's `Double.toString`, NaN/Infinity as `null`), varint/decimal in
//! full, text/ascii/uuid/inet/date/time/timestamp/duration as JSON strings
//! (`"2024-01-01 00:00:00.000Z"`, `"01:02:03.000000000"`, `"0:0:0:0:0:0:0:1"`, `"1y1mo2d10h5m"`),
//! blobs as `"0x.."`, lists/sets/tuples as arrays (`[1, 2]`), maps and UDTs as objects with
//! `", "` and `": "` separators; map keys that are not JSON strings are quoted JSON text.
//!
//! Invariants: `to_json` never panics (a value that does not decode prints as JSON `null`);
//! `from_json` returns a serialized value that passes `proto::value::validate_value`, or a
//! Cassandra-style error message. Sets and maps come out sorted and de-duplicated by the
//! engine's one comparator (`types::compare`).
//!
//! This module shares the text formatting of `crate::scalar`.

use std::cmp::Ordering;
use std::net::IpAddr;

use proto::types::{ColumnType, Value};
use proto::value::{decode_value, validate_value};
use serde_json::Value as Json;

use crate::scalar::{
    decimal_string, format_date_days, format_duration, format_inet, format_time, format_timestamp,
    format_uuid, hex, java_double, java_float, parse_decimal, BigInt,
};
use crate::temporal::{parse_date, parse_duration, parse_time, parse_timestamp, parse_uuid, unhex};
use crate::types::compare;
use crate::Now;

const DATE_EPOCH: i64 = 1 << 31;
/// Deepest nesting `from_json` follows (JSON parsed elsewhere may be deep).
const MAX_DEPTH: usize = 32;

// ---- SELECT JSON --------------------------------------------------------------------------

/// The JSON text of a value of this type, as SELECT JSON / toJson() produce it. `None` (a null
/// cell) is `null`; an empty value of a non-text type is `""` (a blob's is `"0x"`).
pub fn to_json(ty: &ColumnType, v: Option<&[u8]>) -> String {
    let Some(b) = v else { return "null".into() };
    if b.is_empty() {
        return match ty {
            ColumnType::Blob | ColumnType::Custom(_) => "\"0x\"".into(),
            _ => "\"\"".into(),
        };
    }
    match decode_value(ty, b) {
        Ok(val) => {
            let mut out = String::new();
            write_value(ty, &val, &mut out);
            out
        }
        Err(_) => "null".into(),
    }
}

/// A SELECT JSON key: the column name, wrapped in `"` when it is not all lower-case (as
/// Cassandra quotes case-sensitive identifiers), as a complete JSON string token:
/// `json_key("k")` is `"k"` and `json_key("Foo")` is `"\"Foo\""` (JsonTest.testCaseSensitivity).
pub fn json_key(column_name: &str) -> String {
    let name = if column_name == column_name.to_lowercase() {
        column_name.to_string()
    } else {
        format!("\"{column_name}\"")
    };
    quote(&name)
}

/// One SELECT JSON row: `{"k": 0, "v": "a"}` from (column name, type, value) triples.
pub fn row_to_json(columns: &[(&str, &ColumnType, Option<&[u8]>)]) -> String {
    let mut out = String::from("{");
    for (i, (name, ty, v)) in columns.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&json_key(name));
        out.push_str(": ");
        out.push_str(&to_json(ty, *v));
    }
    out.push('}');
    out
}

/// A JSON string literal (Jackson's quoting: `"`, `\`, control characters escaped).
fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

fn write_value(ty: &ColumnType, v: &Value, out: &mut String) {
    use ColumnType as T;
    match (ty, v) {
        (_, Value::Null) => out.push_str("null"),
        (_, Value::Ascii(s) | Value::Varchar(s)) => out.push_str(&quote(s)),
        (_, Value::Blob(b)) => {
            out.push_str("\"0x");
            out.push_str(&hex(b));
            out.push('"');
        }
        (_, Value::Boolean(x)) => out.push_str(if *x { "true" } else { "false" }),
        (_, Value::Tinyint(x)) => out.push_str(&x.to_string()),
        (_, Value::Smallint(x)) => out.push_str(&x.to_string()),
        (_, Value::Int(x)) => out.push_str(&x.to_string()),
        (_, Value::Bigint(x) | Value::Counter(x)) => out.push_str(&x.to_string()),
        // JSON has no NaN or Infinity: DoubleType/FloatType.toJSONString print null.
        (_, Value::Float(x)) if !x.is_finite() => out.push_str("null"),
        (_, Value::Double(x)) if !x.is_finite() => out.push_str("null"),
        (_, Value::Float(x)) => out.push_str(&java_float(*x)),
        (_, Value::Double(x)) => out.push_str(&java_double(*x)),
        (_, Value::Decimal { scale, unscaled }) => {
            out.push_str(&decimal_string(&BigInt::from_twos(unscaled), *scale))
        }
        (_, Value::Varint(b)) => out.push_str(&BigInt::from_twos(b).to_decimal_string()),
        (_, Value::Timestamp(ms)) => out.push_str(&quote(&format_timestamp(*ms, ' '))),
        (_, Value::Date(d)) => out.push_str(&quote(&format_date_days(i64::from(*d) - DATE_EPOCH))),
        (_, Value::Time(n)) => out.push_str(&quote(&format_time(*n))),
        (_, Value::Uuid(u) | Value::Timeuuid(u)) => out.push_str(&quote(&format_uuid(u))),
        (_, Value::Inet(ip)) => out.push_str(&quote(&format_inet(ip))),
        (
            _,
            Value::Duration {
                months,
                days,
                nanos,
            },
        ) => out.push_str(&quote(&format_duration(*months, *days, *nanos))),
        (T::List(e) | T::Set(e), Value::List(items) | Value::Set(items))
        | (T::Vector(e, _), Value::Vector(items)) => {
            write_seq(items.iter().map(|x| (e.as_ref(), x)), out)
        }
        (T::Tuple(ts), Value::Tuple(items)) => write_seq(ts.iter().zip(items), out),
        (T::Map(kt, vt), Value::Map(pairs)) => {
            out.push('{');
            for (i, (k, x)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                // MapType.toJSONString: keys that are not JSON strings are quoted.
                let mut key = String::new();
                write_value(kt, k, &mut key);
                if key.starts_with('"') {
                    out.push_str(&key);
                } else {
                    out.push_str(&quote(&key));
                }
                out.push_str(": ");
                write_value(vt, x, out);
            }
            out.push('}');
        }
        (T::Udt { fields, .. }, Value::Udt(vals)) => {
            out.push('{');
            for (i, ((name, t), (_, x))) in fields.iter().zip(vals).enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&json_key(name));
                out.push_str(": ");
                write_value(t, x, out);
            }
            out.push('}');
        }
        _ => out.push_str("null"),
    }
}

fn write_seq<'a>(items: impl Iterator<Item = (&'a ColumnType, &'a Value)>, out: &mut String) {
    out.push('[');
    for (i, (t, x)) in items.enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_value(t, x, out);
    }
    out.push(']');
}

// ---- INSERT JSON --------------------------------------------------------------------------

/// A JSON value (already parsed) to serialized bytes for a column of this type, as INSERT
/// JSON / fromJson() accept it. JSON `null` is `None`. Set elements and map keys come out
/// sorted and de-duplicated by the engine's one comparator, `types::compare`.
pub fn from_json(ty: &ColumnType, v: &Json, now: Now) -> Result<Option<Vec<u8>>, String> {
    if v.is_null() {
        return Ok(None);
    }
    let out = convert(ty, v, 0, now)?;
    validate_value(ty, &out).map_err(|e| e.to_string())?;
    Ok(Some(out))
}

/// The Java class Jackson would have parsed this JSON value into (for error messages).
fn java_class(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "Boolean",
        Json::Number(n) => {
            if let Some(i) = n.as_i64() {
                if i32::try_from(i).is_ok() {
                    "Integer"
                } else {
                    "Long"
                }
            } else if n.is_u64() || !n.is_f64() {
                // An integer beyond 64 bits (kept as text: serde_json's arbitrary_precision).
                "BigInteger"
            } else {
                "Double"
            }
        }
        Json::String(_) => "String",
        Json::Array(_) => "ArrayList",
        Json::Object(_) => "LinkedHashMap",
    }
}

/// The package-qualified name of [`java_class`] (Jackson's lists and maps are `java.util`
/// classes, a big integer `java.math`).
fn java_qualified_class(v: &Json) -> String {
    let package = match java_class(v) {
        "ArrayList" | "LinkedHashMap" => "java.util",
        "BigInteger" => "java.math",
        _ => "java.lang",
    };
    format!("{package}.{}", java_class(v))
}

/// `parsed.toString()` in Java: strings bare, doubles like `Double.toString`, a list as
/// `[a, b]` and a map as `{k=v, k2=v2}` (`AbstractCollection` / `AbstractMap`; an object's
/// keys in their sorted order here, in the text's order there).
fn java_text(v: &Json) -> String {
    match v {
        Json::String(s) => s.clone(),
        Json::Number(n) if n.is_f64() => java_double(n.as_f64().unwrap_or(f64::NAN)),
        Json::Array(items) => {
            let items: Vec<String> = items.iter().map(java_text).collect();
            format!("[{}]", items.join(", "))
        }
        Json::Object(m) => {
            let entries: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{k}={}", java_text(v)))
                .collect();
            format!("{{{}}}", entries.join(", "))
        }
        other => other.to_string(),
    }
}

fn expected(what: &str, v: &Json) -> String {
    format!(
        "Expected {what}, but got a {}: {}",
        java_class(v),
        java_text(v)
    )
}

fn convert(ty: &ColumnType, v: &Json, depth: usize, now: Now) -> Result<Vec<u8>, String> {
    use ColumnType as T;
    if depth > MAX_DEPTH {
        return Err("JSON value nested too deeply".into());
    }
    // A collection, tuple, UDT or vector value may come as a JSON string holding it
    // (`"[1, 2]"`), which Cassandra decodes first (`JsonUtils.decodeJson`).
    let nested;
    let v = match (ty, v.as_str()) {
        (
            T::List(_) | T::Set(_) | T::Map(..) | T::Tuple(_) | T::Udt { .. } | T::Vector(..),
            Some(text),
        ) => {
            nested = serde_json::from_str::<Json>(text)
                .map_err(|e| format!("Error decoding JSON string: {e}"))?;
            &nested
        }
        _ => v,
    };
    let s = v.as_str();
    Ok(match ty {
        T::Ascii => {
            let s = s.ok_or_else(|| expected("an ascii string", v))?;
            if !s.is_ascii() {
                return Err(format!("Invalid ASCII character in string literal {s}"));
            }
            s.as_bytes().to_vec()
        }
        T::Varchar => s
            .ok_or_else(|| expected("a UTF-8 string", v))?
            .as_bytes()
            .to_vec(),
        T::Bigint | T::Counter => match (s, v.as_i64()) {
            (Some(s), _) => parse_or_empty(s, |s| {
                s.parse::<i64>().ok().map(|x| x.to_be_bytes().to_vec())
            })
            .ok_or_else(|| format!("Unable to make long from '{s}'"))?,
            (None, Some(i)) => i.to_be_bytes().to_vec(),
            _ => return Err(expected("a bigint value", v)),
        },
        T::Int => match (s, v.as_i64().and_then(|i| i32::try_from(i).ok())) {
            (Some(s), _) => parse_or_empty(s, |s| {
                s.parse::<i32>().ok().map(|x| x.to_be_bytes().to_vec())
            })
            .ok_or_else(|| format!("Unable to make int from '{s}'"))?,
            (None, Some(i)) => i.to_be_bytes().to_vec(),
            _ => return Err(expected("an int value", v)),
        },
        // ShortType/ByteType parse String.valueOf(parsed) for strings and numbers alike.
        T::Smallint => {
            if !(v.is_string() || v.is_number()) {
                return Err(expected("a short value", v));
            }
            let t = java_text(v);
            t.parse::<i16>()
                .map(|x| x.to_be_bytes().to_vec())
                .map_err(|_| format!("Unable to make short from '{t}'"))?
        }
        T::Tinyint => {
            if !(v.is_string() || v.is_number()) {
                return Err(expected("a byte value", v));
            }
            let t = java_text(v);
            t.parse::<i8>()
                .map(|x| vec![x as u8])
                .map_err(|_| format!("Unable to make byte from '{t}'"))?
        }
        T::Varint => {
            let t = java_text(v);
            let integer = v.as_number().is_some_and(|n| !n.is_f64());
            let n = if v.is_string() || integer {
                BigInt::parse(&t)
            } else {
                None
            };
            n.ok_or_else(|| format!("Value '{t}' is not a valid representation of a varint value"))?
                .to_twos()
        }
        T::Decimal => {
            let t = java_text(v);
            let parsed = if v.is_string() || v.is_number() {
                parse_decimal(&t)
            } else {
                None
            };
            let (u, scale) = parsed.ok_or_else(|| {
                format!("Value '{t}' is not a valid representation of a decimal value")
            })?;
            let mut out = scale.to_be_bytes().to_vec();
            out.extend_from_slice(&u.to_twos());
            out
        }
        T::Double => match (s, v.as_f64()) {
            (Some(s), _) => {
                parse_or_empty(s, |s| java_parse_float(s).map(|x| x.to_be_bytes().to_vec()))
                    .ok_or_else(|| format!("Unable to make double from '{s}'"))?
            }
            (None, Some(x)) if v.is_number() => x.to_be_bytes().to_vec(),
            _ => return Err(expected("a double value", v)),
        },
        T::Float => match (s, v.as_f64()) {
            (Some(s), _) => parse_or_empty(s, |s| {
                java_parse_float(s).map(|x| (x as f32).to_be_bytes().to_vec())
            })
            .ok_or_else(|| format!("Unable to make float from '{s}'"))?,
            (None, Some(x)) if v.is_number() => (x as f32).to_be_bytes().to_vec(),
            _ => return Err(expected("a float value", v)),
        },
        T::Boolean => match (s, v.as_bool()) {
            (_, Some(b)) => vec![u8::from(b)],
            (Some(s), _) => match s.to_ascii_lowercase().as_str() {
                "" => vec![],
                "true" => vec![1],
                "false" => vec![0],
                _ => return Err(format!("Unable to make boolean from '{s}'")),
            },
            _ => return Err(expected("a boolean value", v)),
        },
        T::Blob | T::Custom(_) => {
            let inner = match s {
                // BytesType casts the parsed value to a String: Java's ClassCastException.
                None => {
                    let class = java_qualified_class(v);
                    format!(
                        "class {class} cannot be cast to class java.lang.String ({class} and java.lang.String are in module java.base of loader 'bootstrap')"
                    )
                }
                Some(s) => match s.strip_prefix("0x") {
                    None => format!("String representation of blob is missing 0x prefix: {s}"),
                    Some(h) => match unhex(h) {
                        Some(b) => return Ok(b),
                        None => format!("cannot parse '{h}' as hex bytes"),
                    },
                },
            };
            return Err(format!(
                "Value '{}' is not a valid blob representation: {inner}",
                java_text(v)
            ));
        }
        T::Uuid | T::Timeuuid => {
            let what = if *ty == T::Uuid {
                "a uuid"
            } else {
                "a timeuuid"
            };
            let s = s.ok_or_else(|| expected(&format!("a string representation of {what}"), v))?;
            if s.is_empty() {
                return Ok(vec![]);
            }
            let u = parse_uuid(s).ok_or_else(|| {
                if *ty == T::Uuid {
                    format!("Unable to make UUID from '{s}'")
                } else {
                    format!("Unknown timeuuid representation: {s}")
                }
            })?;
            if *ty == T::Timeuuid && u[6] >> 4 != 1 {
                return Err("TimeUUID supports only version 1 UUIDs".into());
            }
            u.to_vec()
        }
        T::Inet => {
            let s = s.ok_or_else(|| expected("a string representation of an inet value", v))?;
            if s.is_empty() {
                return Ok(vec![]);
            }
            match crate::javafmt::parse_inet(s) {
                Some(IpAddr::V4(a)) => a.octets().to_vec(),
                Some(IpAddr::V6(a)) => a.octets().to_vec(),
                None => return Err(format!("Unable to make inet address from '{s}'")),
            }
        }
        T::Timestamp => match (s, v.as_i64()) {
            (Some(s), _) => {
                if s.is_empty() {
                    return Ok(vec![]);
                }
                parse_timestamp(s, now)
                    .ok_or_else(|| {
                        let digits = s.strip_prefix('-').unwrap_or(s);
                        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                            format!("Unable to make long (for date) from: '{s}'")
                        } else {
                            format!("Unable to parse a date/time from '{s}'")
                        }
                    })?
                    .to_be_bytes()
                    .to_vec()
            }
            // Jackson reads a number that fits an int as an Integer, which TimestampType
            // refuses: only a Long is taken as milliseconds.
            (None, Some(ms)) if java_class(v) == "Long" => ms.to_be_bytes().to_vec(),
            _ => {
                return Err(expected(
                    "a long or a datestring representation of a timestamp value",
                    v,
                ))
            }
        },
        T::Date => {
            let s = s.ok_or_else(|| expected("a string representation of a date value", v))?;
            parse_date(s)
                .ok_or_else(|| format!("Unable to coerce '{s}' to a formatted date (long)"))?
                .to_be_bytes()
                .to_vec()
        }
        T::Time => {
            let s = s.ok_or_else(|| expected("a string representation of a time value", v))?;
            parse_time(s)
                .ok_or_else(|| {
                    format!("(TimeType) Unable to coerce '{s}' to a formatted time (long)")
                })?
                .to_be_bytes()
                .to_vec()
        }
        T::Duration => {
            let s = s.ok_or_else(|| expected("a string representation of a duration", v))?;
            let (m, d, n) = parse_duration(s)?;
            proto::value::to_bytes(&Value::Duration {
                months: m,
                days: d,
                nanos: n,
            })
        }
        T::List(e) | T::Set(e) => {
            let is_set = matches!(ty, T::Set(_));
            let items = v.as_array().ok_or_else(|| {
                expected(
                    if is_set {
                        "a list (representing a set)"
                    } else {
                        "a list"
                    },
                    v,
                )
            })?;
            let mut elems = Vec::with_capacity(items.len());
            for x in items {
                if x.is_null() {
                    let what = if is_set { "set" } else { "list" };
                    return Err(format!("Invalid null element in {what}"));
                }
                elems.push(convert(e, x, depth + 1, now)?);
            }
            if is_set {
                elems.sort_by(|a, b| compare(e, a, b));
                elems.dedup_by(|a, b| compare(e, a, b) == Ordering::Equal);
            }
            let mut out = len_prefix(elems.len());
            for x in &elems {
                put_elem(&mut out, Some(x));
            }
            out
        }
        T::Map(kt, vt) => {
            let obj = v.as_object().ok_or_else(|| expected("a map", v))?;
            let mut kvs = Vec::with_capacity(obj.len());
            for (k, x) in obj {
                if x.is_null() {
                    return Err("Invalid null value in map".into());
                }
                // JSON keys are strings: collections, tuples and UDTs as keys are JSON text.
                let key_json = if matches!(
                    kt.as_ref(),
                    T::List(_) | T::Set(_) | T::Map(..) | T::Tuple(_) | T::Udt { .. }
                ) {
                    serde_json::from_str(k)
                        .map_err(|_| format!("Could not decode JSON string '{k}'"))?
                } else {
                    Json::String(k.clone())
                };
                let kb = convert(kt, &key_json, depth + 1, now)?;
                kvs.push((kb, convert(vt, x, depth + 1, now)?));
            }
            kvs.sort_by(|a, b| compare(kt, &a.0, &b.0));
            kvs.dedup_by(|a, b| compare(kt, &a.0, &b.0) == Ordering::Equal);
            let mut out = len_prefix(kvs.len());
            for (k, x) in &kvs {
                put_elem(&mut out, Some(k));
                put_elem(&mut out, Some(x));
            }
            out
        }
        T::Tuple(ts) => {
            let items = v
                .as_array()
                .ok_or_else(|| expected("a list representation of a tuple", v))?;
            if items.len() > ts.len() {
                return Err(format!(
                    "Tuple contains extra items (expected {}): {}",
                    ts.len(),
                    java_text(v)
                ));
            }
            if items.len() < ts.len() {
                return Err(format!(
                    "Tuple is missing items (expected {}): {}",
                    ts.len(),
                    java_text(v)
                ));
            }
            let mut out = Vec::new();
            for (t, x) in ts.iter().zip(items) {
                let b = if x.is_null() {
                    None
                } else {
                    Some(convert(t, x, depth + 1, now)?)
                };
                put_elem(&mut out, b.as_deref());
            }
            out
        }
        T::Vector(e, n) => {
            let items = v.as_array().ok_or_else(|| expected("a list", v))?;
            if items.len() != *n as usize {
                let shown: Vec<String> = items.iter().map(java_text).collect();
                return Err(format!(
                    "List had incorrect size: expected {n} but given {}; [{}]",
                    items.len(),
                    shown.join(", ")
                ));
            }
            let mut elems = Vec::with_capacity(items.len());
            for x in items {
                if x.is_null() {
                    return Err("Invalid null element in list".into());
                }
                elems.push(convert(e, x, depth + 1, now)?);
            }
            proto::value::encode_vector(e, &elems)
        }
        T::Udt { name, fields, .. } => {
            let obj = v.as_object().ok_or_else(|| expected("a map", v))?;
            // Keys name fields as CQL identifiers: lower-cased unless double-quoted.
            let mut given: Vec<(String, &Json)> = Vec::with_capacity(obj.len());
            for (k, x) in obj {
                let id = match k.strip_prefix('"').and_then(|k| k.strip_suffix('"')) {
                    Some(q) => q.to_string(),
                    None => k.to_lowercase(),
                };
                if !fields.iter().any(|(f, _)| *f == id) {
                    return Err(format!(
                        "Unknown field '{id}' in value of user defined type {name}"
                    ));
                }
                given.push((id, x));
            }
            let mut out = Vec::new();
            for (f, t) in fields {
                let b = match given.iter().find(|(k, _)| k == f) {
                    Some((_, x)) if !x.is_null() => Some(convert(t, x, depth + 1, now)?),
                    _ => None,
                };
                put_elem(&mut out, b.as_deref());
            }
            out
        }
    })
}

/// Cassandra's `fromString` turns an empty string into an empty value for number types.
fn parse_or_empty(s: &str, f: impl Fn(&str) -> Option<Vec<u8>>) -> Option<Vec<u8>> {
    if s.is_empty() {
        Some(vec![])
    } else {
        f(s)
    }
}

/// `Double.valueOf`: decimal or scientific text, `NaN`, `Infinity`, optional `d`/`f` suffix.
fn java_parse_float(s: &str) -> Option<f64> {
    let t = s.trim();
    let t = t.strip_suffix(['d', 'D', 'f', 'F']).unwrap_or(t);
    match t {
        "NaN" | "+NaN" | "-NaN" => Some(f64::NAN),
        "Infinity" | "+Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        _ if t
            .bytes()
            .all(|c| c.is_ascii_digit() || b"+-.eE".contains(&c)) =>
        {
            t.parse().ok()
        }
        _ => None,
    }
}

fn len_prefix(n: usize) -> Vec<u8> {
    i32::try_from(n).unwrap_or(i32::MAX).to_be_bytes().to_vec()
}

fn put_elem(out: &mut Vec<u8>, b: Option<&[u8]>) {
    match b {
        None => out.extend_from_slice(&(-1i32).to_be_bytes()),
        Some(b) => {
            out.extend_from_slice(&i32::try_from(b.len()).unwrap_or(i32::MAX).to_be_bytes());
            out.extend_from_slice(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::temporal::days_from_civil;
    use proto::value::to_bytes;
    use ColumnType as T;

    const MILLIS_PER_DAY: i64 = 86_400_000;

    fn j(ty: &T, v: Value) -> String {
        to_json(ty, Some(&to_bytes(&v)))
    }

    fn fj(ty: &T, json: &str) -> Result<Option<Vec<u8>>, String> {
        from_json(
            ty,
            &serde_json::from_str(json).unwrap(),
            crate::tests::at(1),
        )
    }

    fn rt(ty: &T, json_in: &str) -> String {
        let b = fj(ty, json_in).unwrap_or_else(|e| panic!("{json_in}: {e}"));
        to_json(ty, b.as_deref())
    }

    const UUID: &str = "6bddc89a-5644-11e4-97fc-56847afe9799";

    fn udt() -> T {
        T::Udt {
            keyspace: "ks".into(),
            name: "t".into(),
            fields: vec![
                ("a".into(), T::Int),
                ("b".into(), T::Uuid),
                ("c".into(), T::Set(Box::new(T::Varchar))),
            ],
        }
    }

    #[test]
    fn to_json_matches_json_test() {
        // Expected strings from JsonTest.testToJsonFct and Cassandra 5.0.9.
        assert_eq!(
            j(&T::Ascii, Value::Ascii("ascii text".into())),
            "\"ascii text\""
        );
        assert_eq!(to_json(&T::Ascii, Some(b"")), "\"\"");
        assert_eq!(
            j(&T::Bigint, Value::Bigint(-123_123_123_123)),
            "-123123123123"
        );
        assert_eq!(j(&T::Blob, Value::Blob(vec![0, 0, 0, 1])), "\"0x00000001\"");
        assert_eq!(to_json(&T::Blob, Some(b"")), "\"0x\"");
        assert_eq!(j(&T::Boolean, Value::Boolean(false)), "false");
        let d = (days_from_civil(1987, 3, 23) + DATE_EPOCH) as u32;
        assert_eq!(j(&T::Date, Value::Date(d)), "\"1987-03-23\"");
        let (u, s) = parse_decimal("-1.23E-12").unwrap();
        let mut dec = s.to_be_bytes().to_vec();
        dec.extend_from_slice(&u.to_twos());
        assert_eq!(to_json(&T::Decimal, Some(&dec)), "-1.23E-12");
        assert_eq!(
            j(&T::Double, Value::Double(123_123.123_123)),
            "123123.123123"
        );
        assert_eq!(j(&T::Double, Value::Double(123_123.0)), "123123.0");
        assert_eq!(j(&T::Double, Value::Double(5.0e20)), "5.0E20");
        assert_eq!(j(&T::Double, Value::Double(f64::NAN)), "null");
        assert_eq!(j(&T::Float, Value::Float(f32::NEG_INFINITY)), "null");
        assert_eq!(j(&T::Float, Value::Float(123.123)), "123.123");
        assert_eq!(j(&T::Float, Value::Float(123_123.0)), "123123.0");
        assert_eq!(
            j(&T::Inet, Value::Inet("127.0.0.1".parse().unwrap())),
            "\"127.0.0.1\""
        );
        assert_eq!(
            j(&T::Inet, Value::Inet("::1".parse().unwrap())),
            "\"0:0:0:0:0:0:0:1\""
        );
        assert_eq!(j(&T::Int, Value::Int(-123_123)), "-123123");
        assert_eq!(j(&T::Smallint, Value::Smallint(-32768)), "-32768");
        assert_eq!(j(&T::Tinyint, Value::Tinyint(-128)), "-128");
        assert_eq!(
            j(&T::Varchar, Value::Varchar("\u{8422}".into())),
            "\"\u{8422}\""
        );
        assert_eq!(
            j(&T::Varchar, Value::Varchar("\u{0}".into())),
            "\"\\u0000\""
        );
        assert_eq!(
            j(&T::Varchar, Value::Varchar("a\"b\\".into())),
            "\"a\\\"b\\\\\""
        );
        assert_eq!(j(&T::Time, Value::Time(123)), "\"00:00:00.000000123\"");
        let ts = days_from_civil(2014, 1, 1) * MILLIS_PER_DAY;
        assert_eq!(
            j(&T::Timestamp, Value::Timestamp(ts)),
            "\"2014-01-01 00:00:00.000Z\""
        );
        let u: [u8; 16] = parse_uuid(UUID).unwrap();
        assert_eq!(j(&T::Timeuuid, Value::Timeuuid(u)), format!("\"{UUID}\""));
        let v = BigInt::parse("123123123123123123123").unwrap().to_twos();
        assert_eq!(j(&T::Varint, Value::Varint(v)), "123123123123123123123");
        assert_eq!(
            j(
                &T::Duration,
                Value::Duration {
                    months: 0,
                    days: 0,
                    nanos: 12_000
                }
            ),
            "\"12us\""
        );
        assert_eq!(
            j(
                &T::Duration,
                Value::Duration {
                    months: 13,
                    days: 2,
                    nanos: 36_300_000_000_000
                }
            ),
            "\"1y1mo2d10h5m\""
        );
        assert_eq!(to_json(&T::Int, None), "null");
        assert_eq!(to_json(&T::Int, Some(b"")), "\"\"");
        assert_eq!(to_json(&T::Int, Some(&[1, 2])), "null");
    }

    #[test]
    fn collections_to_json() {
        let list = T::List(Box::new(T::Int));
        assert_eq!(
            j(
                &list,
                Value::List(vec![Value::Int(1), Value::Int(2), Value::Int(3)])
            ),
            "[1, 2, 3]"
        );
        let map = T::Map(Box::new(T::Ascii), Box::new(T::Int));
        assert_eq!(
            j(
                &map,
                Value::Map(vec![
                    (Value::Ascii("a".into()), Value::Int(1)),
                    (Value::Ascii("b".into()), Value::Int(2))
                ])
            ),
            "{\"a\": 1, \"b\": 2}"
        );
        // Non-string map keys are quoted JSON text: {"0": true}, {"[0, \"a\"]": true}.
        let intmap = T::Map(Box::new(T::Int), Box::new(T::Boolean));
        assert_eq!(
            j(
                &intmap,
                Value::Map(vec![
                    (Value::Int(0), Value::Boolean(true)),
                    (Value::Int(1), Value::Boolean(false))
                ])
            ),
            "{\"0\": true, \"1\": false}"
        );
        let tup = T::Tuple(vec![T::Int, T::Varchar]);
        let tupmap = T::Map(Box::new(tup.clone()), Box::new(T::Boolean));
        assert_eq!(
            j(
                &tupmap,
                Value::Map(vec![(
                    Value::Tuple(vec![Value::Int(0), Value::Varchar("a".into())]),
                    Value::Boolean(true)
                )])
            ),
            "{\"[0, \\\"a\\\"]\": true}"
        );
        let t3 = T::Tuple(vec![T::Int, T::Ascii, T::Uuid]);
        assert_eq!(
            j(
                &t3,
                Value::Tuple(vec![
                    Value::Int(1),
                    Value::Ascii("foobar".into()),
                    Value::Null
                ])
            ),
            "[1, \"foobar\", null]"
        );
        let u: [u8; 16] = parse_uuid(UUID).unwrap();
        assert_eq!(
            j(
                &udt(),
                Value::Udt(vec![
                    ("a".into(), Value::Int(1)),
                    ("b".into(), Value::Uuid(u)),
                    (
                        "c".into(),
                        Value::Set(vec![
                            Value::Varchar("bar".into()),
                            Value::Varchar("foo".into())
                        ])
                    ),
                ])
            ),
            format!("{{\"a\": 1, \"b\": \"{UUID}\", \"c\": [\"bar\", \"foo\"]}}")
        );
        // A UDT value written before ALTER TYPE ADD: missing fields are null.
        let short = to_bytes(&Value::Tuple(vec![Value::Int(1)]));
        assert_eq!(
            to_json(&udt(), Some(&short)),
            "{\"a\": 1, \"b\": null, \"c\": null}"
        );
        let mixed = T::Udt {
            keyspace: "k".into(),
            name: "u".into(),
            fields: vec![("a".into(), T::Int), ("Foo".into(), T::Int)],
        };
        assert_eq!(
            j(
                &mixed,
                Value::Udt(vec![
                    ("a".into(), Value::Int(0)),
                    ("Foo".into(), Value::Int(0))
                ])
            ),
            "{\"a\": 0, \"\\\"Foo\\\"\": 0}"
        );
    }

    #[test]
    fn keys_and_rows() {
        assert_eq!(json_key("k"), "\"k\"");
        assert_eq!(json_key("Foo"), "\"\\\"Foo\\\"\"");
        assert_eq!(json_key("ttl(v)"), "\"ttl(v)\"");
        assert_eq!(json_key("MixedCase"), "\"\\\"MixedCase\\\"\"");
        let one = 1i32.to_be_bytes();
        assert_eq!(
            row_to_json(&[
                ("k", &T::Int, Some(&one)),
                ("name", &T::Varchar, None),
                ("Foo", &T::Varchar, Some(b""))
            ]),
            "{\"k\": 1, \"name\": null, \"\\\"Foo\\\"\": \"\"}"
        );
    }

    #[test]
    fn from_json_matches_json_test() {
        // JsonTest.testFromJsonFct.
        assert_eq!(
            fj(&T::Ascii, "\"ascii \\\" text\"").unwrap().unwrap(),
            b"ascii \" text"
        );
        assert!(fj(&T::Ascii, "\"\\u1fff\"")
            .unwrap_err()
            .contains("Invalid ASCII character"));
        assert_eq!(
            fj(&T::Ascii, "123").unwrap_err(),
            "Expected an ascii string, but got a Integer: 123"
        );
        assert_eq!(
            fj(&T::Bigint, "123123123123").unwrap().unwrap(),
            123_123_123_123i64.to_be_bytes()
        );
        assert_eq!(
            fj(&T::Bigint, "\"123123123123\"").unwrap().unwrap(),
            123_123_123_123i64.to_be_bytes()
        );
        assert!(fj(&T::Bigint, "9223372036854775808")
            .unwrap_err()
            .starts_with("Expected a bigint value, but got a"));
        assert!(fj(&T::Bigint, "123.456")
            .unwrap_err()
            .starts_with("Expected a bigint value, but got a"));
        assert!(fj(&T::Bigint, "\"abc\"")
            .unwrap_err()
            .starts_with("Unable to make long from"));
        assert_eq!(
            fj(&T::Blob, "\"0x00000001\"").unwrap().unwrap(),
            [0, 0, 0, 1]
        );
        assert!(fj(&T::Blob, "\"xyzz\"")
            .unwrap_err()
            .starts_with("Value 'xyzz' is not a valid blob representation"));
        assert!(fj(&T::Blob, "\"123\"")
            .unwrap_err()
            .contains("String representation of blob is missing 0x prefix: 123"));
        assert!(fj(&T::Blob, "\"0x123\"")
            .unwrap_err()
            .starts_with("Value '0x123' is not a valid blob representation"));
        assert!(fj(&T::Blob, "123")
            .unwrap_err()
            .starts_with("Value '123' is not a valid blob representation"));
        assert_eq!(fj(&T::Boolean, "true").unwrap().unwrap(), [1]);
        assert_eq!(fj(&T::Boolean, "\"false\"").unwrap().unwrap(), [0]);
        assert!(fj(&T::Boolean, "\"abc\"")
            .unwrap_err()
            .starts_with("Unable to make boolean from"));
        assert_eq!(
            fj(&T::Boolean, "123").unwrap_err(),
            "Expected a boolean value, but got a Integer: 123"
        );
        let d = (days_from_civil(1987, 3, 23) + DATE_EPOCH) as u32;
        assert_eq!(
            fj(&T::Date, "\"1987-03-23\"").unwrap().unwrap(),
            d.to_be_bytes()
        );
        assert!(fj(&T::Date, "123")
            .unwrap_err()
            .starts_with("Expected a string representation of a date"));
        assert!(fj(&T::Date, "\"xyz\"")
            .unwrap_err()
            .starts_with("Unable to coerce 'xyz' to a formatted date"));
        assert_eq!(rt(&T::Decimal, "123123.123123"), "123123.123123");
        assert_eq!(rt(&T::Decimal, "123123"), "123123");
        assert_eq!(rt(&T::Decimal, "\"-1.23E-12\""), "-1.23E-12");
        assert!(fj(&T::Decimal, "\"xyzz\"")
            .unwrap_err()
            .starts_with("Value 'xyzz' is not a valid representation of a decimal value"));
        assert!(fj(&T::Decimal, "true")
            .unwrap_err()
            .starts_with("Value 'true' is not a valid representation of a decimal value"));
        assert_eq!(rt(&T::Double, "123123.123123"), "123123.123123");
        assert_eq!(rt(&T::Double, "\"123123\""), "123123.0");
        assert!(fj(&T::Double, "\"xyzz\"")
            .unwrap_err()
            .starts_with("Unable to make double from"));
        assert!(fj(&T::Double, "true")
            .unwrap_err()
            .starts_with("Expected a double value, but got"));
        assert_eq!(
            fj(&T::Float, "123123.123123").unwrap().unwrap(),
            123_123.125f32.to_be_bytes()
        );
        assert_eq!(rt(&T::Float, "\"123123.0\""), "123123.0");
        assert!(fj(&T::Float, "true")
            .unwrap_err()
            .starts_with("Expected a float value, but got a"));
        assert_eq!(
            fj(&T::Inet, "\"127.0.0.1\"").unwrap().unwrap(),
            [127, 0, 0, 1]
        );
        assert_eq!(rt(&T::Inet, "\"::1\""), "\"0:0:0:0:0:0:0:1\"");
        assert!(fj(&T::Inet, "\"xyzz\"")
            .unwrap_err()
            .starts_with("Unable to make inet address from 'xyzz'"));
        assert_eq!(
            fj(&T::Inet, "123").unwrap_err(),
            "Expected a string representation of an inet value, but got a Integer: 123"
        );
        assert_eq!(
            fj(&T::Int, "\"123123\"").unwrap().unwrap(),
            123_123i32.to_be_bytes()
        );
        assert!(fj(&T::Int, "2147483648")
            .unwrap_err()
            .starts_with("Expected an int value, but got a"));
        assert!(fj(&T::Int, "123.456")
            .unwrap_err()
            .starts_with("Expected an int value, but got a"));
        assert!(fj(&T::Int, "\"xyzz\"")
            .unwrap_err()
            .starts_with("Unable to make int from"));
        assert_eq!(
            fj(&T::Smallint, "\"32767\"").unwrap().unwrap(),
            32767i16.to_be_bytes()
        );
        assert!(fj(&T::Smallint, "32768")
            .unwrap_err()
            .starts_with("Unable to make short from"));
        assert!(fj(&T::Smallint, "123.456")
            .unwrap_err()
            .starts_with("Unable to make short from"));
        assert_eq!(
            fj(&T::Smallint, "true").unwrap_err(),
            "Expected a short value, but got a Boolean: true"
        );
        assert_eq!(fj(&T::Tinyint, "127").unwrap().unwrap(), [127]);
        assert!(fj(&T::Tinyint, "128")
            .unwrap_err()
            .starts_with("Unable to make byte from"));
        assert_eq!(fj(&T::Varchar, "\"\"").unwrap().unwrap(), b"");
        assert_eq!(
            fj(&T::Varchar, "\"\\u2013\"").unwrap().unwrap(),
            "\u{2013}".as_bytes()
        );
        assert_eq!(
            fj(&T::Varchar, "123").unwrap_err(),
            "Expected a UTF-8 string, but got a Integer: 123"
        );
        assert_eq!(
            rt(&T::Time, "\"07:35:07.000111222\""),
            "\"07:35:07.000111222\""
        );
        assert!(fj(&T::Time, "123456")
            .unwrap_err()
            .starts_with("Expected a string representation of a time value"));
        // As 5.0.9 words it (TimeType.fromString's prefix).
        assert!(fj(&T::Time, "\"xyz\"")
            .unwrap_err()
            .starts_with("(TimeType) Unable to coerce 'xyz' to a formatted time"));
        assert_eq!(
            fj(&T::Timestamp, "123123123123").unwrap().unwrap(),
            123_123_123_123i64.to_be_bytes()
        );
        assert_eq!(
            rt(&T::Timestamp, "\"2014-01-01\""),
            "\"2014-01-01 00:00:00.000Z\""
        );
        assert_eq!(
            rt(&T::Timestamp, "\"2015-05-21 11:03:02+00\""),
            "\"2015-05-21 11:03:02.000Z\""
        );
        assert_eq!(
            rt(&T::Timestamp, "\"2024-01-01T10:00:00.5+0200\""),
            "\"2024-01-01 08:00:00.500Z\""
        );
        assert_eq!(
            rt(&T::Timestamp, "\"2024-01-01 10:00-05:30\""),
            "\"2024-01-01 15:30:00.000Z\""
        );
        assert_eq!(
            rt(&T::Timestamp, "\"2024-01-01 10:00:00.000Z\""),
            "\"2024-01-01 10:00:00.000Z\""
        );
        assert_eq!(
            fj(&T::Timestamp, "123.456").unwrap_err(),
            "Expected a long or a datestring representation of a timestamp value, but got a Double: 123.456"
        );
        // As 5.0.9 words it (TimestampType.fromString's wrapper).
        assert_eq!(
            fj(&T::Timestamp, "\"abcd\"").unwrap_err(),
            "Unable to parse a date/time from 'abcd'"
        );
        assert_eq!(
            fj(&T::Timestamp, "\"99999999999999999999\"").unwrap_err(),
            "Unable to make long (for date) from: '99999999999999999999'"
        );
        assert_eq!(
            rt(&T::Timeuuid, "\"6BDDC89A-5644-11E4-97FC-56847AFE9799\""),
            format!("\"{UUID}\"")
        );
        assert_eq!(
            fj(&T::Timeuuid, "\"00000000-0000-0000-0000-000000000000\"").unwrap_err(),
            "TimeUUID supports only version 1 UUIDs"
        );
        assert_eq!(
            fj(&T::Timeuuid, "123").unwrap_err(),
            "Expected a string representation of a timeuuid, but got a Integer: 123"
        );
        assert!(fj(&T::Uuid, "\"00000000-0000-0000-zzzz-000000000000\"")
            .unwrap_err()
            .starts_with("Unable to make UUID from"));
        assert_eq!(
            fj(&T::Uuid, "123").unwrap_err(),
            "Expected a string representation of a uuid, but got a Integer: 123"
        );
        assert_eq!(rt(&T::Varint, "123123123123"), "123123123123");
        assert_eq!(
            rt(&T::Varint, "\"1234567890123456789012345678901234567890\""),
            "1234567890123456789012345678901234567890"
        );
        assert_eq!(
            fj(&T::Varint, "123123.123").unwrap_err(),
            "Value '123123.123' is not a valid representation of a varint value"
        );
        assert_eq!(
            fj(&T::Varint, "\"\"").unwrap_err(),
            "Value '' is not a valid representation of a varint value"
        );
        assert_eq!(
            fj(&T::Varint, "true").unwrap_err(),
            "Value 'true' is not a valid representation of a varint value"
        );
        assert_eq!(rt(&T::Duration, "\"53us\""), "\"53us\"");
        assert_eq!(rt(&T::Duration, "\"P2W\""), "\"14d\"");
        assert_eq!(rt(&T::Duration, "\"6h40m\""), "\"6h40m\"");
        assert_eq!(rt(&T::Duration, "\"P1Y1M2DT10H5M\""), "\"1y1mo2d10h5m\"");
        assert_eq!(
            rt(&T::Duration, "\"P0001-02-03T04:05:06\""),
            "\"1y2mo3d4h5m6s\""
        );
        assert_eq!(rt(&T::Duration, "\"-3d12µs\""), "\"-3d12us\"");
        // Duration.ISO8601_PATTERN matches a bare "P": a zero duration.
        assert_eq!(fj(&T::Duration, "\"P\"").unwrap().unwrap(), [0, 0, 0]);
        assert_eq!(
            fj(&T::Duration, "\"xyz\"").unwrap_err(),
            "Unable to convert 'xyz' to a duration"
        );
        assert!(fj(&T::Duration, "\"1m1h\"").is_err());
        assert_eq!(fj(&T::Int, "null").unwrap(), None);
    }

    #[test]
    fn collections_from_json() {
        let list = T::List(Box::new(T::Int));
        assert_eq!(rt(&list, "[1, 2, 3]"), "[1, 2, 3]");
        assert_eq!(fj(&list, "[]").unwrap().unwrap(), [0, 0, 0, 0]);
        assert_eq!(
            fj(&list, "123").unwrap_err(),
            "Expected a list, but got a Integer: 123"
        );
        assert!(fj(&list, "[\"abc\"]")
            .unwrap_err()
            .starts_with("Unable to make int from"));
        assert_eq!(
            fj(&list, "[null]").unwrap_err(),
            "Invalid null element in list"
        );
        let set = T::Set(Box::new(T::Int));
        assert_eq!(rt(&set, "[3, 1, 2, 1]"), "[1, 2, 3]");
        assert_eq!(rt(&set, "[-1, 5, -300]"), "[-300, -1, 5]");
        assert_eq!(
            fj(&set, "123").unwrap_err(),
            "Expected a list (representing a set), but got a Integer: 123"
        );
        assert_eq!(
            fj(&set, "[null]").unwrap_err(),
            "Invalid null element in set"
        );
        let map = T::Map(Box::new(T::Ascii), Box::new(T::Int));
        assert_eq!(rt(&map, "{\"b\": 2, \"a\": 1}"), "{\"a\": 1, \"b\": 2}");
        assert_eq!(
            fj(&map, "123").unwrap_err(),
            "Expected a map, but got a Integer: 123"
        );
        assert_eq!(
            fj(&map, "{\"a\": null}").unwrap_err(),
            "Invalid null value in map"
        );
        assert!(fj(&map, "{\"\\u1fff\": 1}")
            .unwrap_err()
            .contains("Invalid ASCII character"));
        // Non-native map keys (testInsertJsonSyntaxWithNonNativeMapKeys).
        let intmap = T::Map(Box::new(T::Int), Box::new(T::Boolean));
        assert_eq!(
            rt(&intmap, "{\"0\": true, \"1\": false}"),
            "{\"0\": true, \"1\": false}"
        );
        let boolmap = T::Map(Box::new(T::Boolean), Box::new(T::Boolean));
        assert_eq!(
            rt(&boolmap, "{\"true\": true, \"false\": false}"),
            "{\"false\": false, \"true\": true}"
        );
        let tupmap = T::Map(
            Box::new(T::Tuple(vec![T::Int, T::Varchar])),
            Box::new(T::Boolean),
        );
        assert_eq!(
            rt(
                &tupmap,
                "{\"[0, \\\"a\\\"]\": true, \"[1, \\\"b\\\"]\": false}"
            ),
            "{\"[0, \\\"a\\\"]\": true, \"[1, \\\"b\\\"]\": false}"
        );
        let setmap = T::Map(Box::new(T::Set(Box::new(T::Int))), Box::new(T::Boolean));
        assert_eq!(
            rt(&setmap, "{\"[0, 1, 2]\": true, \"[3, 4, 5]\": false}"),
            "{\"[0, 1, 2]\": true, \"[3, 4, 5]\": false}"
        );
        // Tuples.
        let t3 = T::Tuple(vec![T::Int, T::Ascii, T::Uuid]);
        assert_eq!(
            rt(&t3, &format!("[1, null, \"{UUID}\"]")),
            format!("[1, null, \"{UUID}\"]")
        );
        assert!(fj(&t3, &format!("[1, \"foobar\", \"{UUID}\", 1, 2, 3]"))
            .unwrap_err()
            .starts_with("Tuple contains extra items"));
        assert!(fj(&t3, "[1, \"foobar\"]")
            .unwrap_err()
            .starts_with("Tuple is missing items"));
        assert!(
            fj(&t3, &format!("[\"not an int\", \"foobar\", \"{UUID}\"]"))
                .unwrap_err()
                .starts_with("Unable to make int from")
        );
        // UDTs: any field order, nulls, missing fields, case-sensitive names.
        assert_eq!(
            rt(
                &udt(),
                &format!("{{\"b\": \"{UUID}\", \"a\": 1, \"c\": [\"foo\", \"bar\"]}}")
            ),
            format!("{{\"a\": 1, \"b\": \"{UUID}\", \"c\": [\"bar\", \"foo\"]}}")
        );
        assert_eq!(
            rt(&udt(), &format!("{{\"a\": null, \"b\": \"{UUID}\"}}")),
            format!("{{\"a\": null, \"b\": \"{UUID}\", \"c\": null}}")
        );
        assert!(fj(&udt(), "{\"xxx\": 1}")
            .unwrap_err()
            .starts_with("Unknown field"));
        assert!(fj(&udt(), "{\"a\": \"foobar\"}")
            .unwrap_err()
            .starts_with("Unable to make int from"));
        assert_eq!(
            rt(&udt(), "{\"A\": 2}"),
            "{\"a\": 2, \"b\": null, \"c\": null}"
        );
        let mixed = T::Udt {
            keyspace: "k".into(),
            name: "u".into(),
            fields: vec![("a".into(), T::Int), ("Foo".into(), T::Int)],
        };
        assert_eq!(
            rt(&mixed, "{\"a\": 0, \"\\\"Foo\\\"\": 0}"),
            "{\"a\": 0, \"\\\"Foo\\\"\": 0}"
        );
        assert!(fj(&mixed, "{\"foo\": 0}").is_err());
    }

    #[test]
    fn deep_or_hostile_json_never_panics() {
        let mut s = String::new();
        for _ in 0..200 {
            s.push('[');
        }
        for _ in 0..200 {
            s.push(']');
        }
        let mut ty = T::Int;
        for _ in 0..40 {
            ty = T::List(Box::new(ty));
        }
        let parsed: Json = serde_json::from_str(&s).unwrap_or(Json::Null);
        assert!(from_json(&ty, &parsed, crate::tests::at(1)).is_err() || parsed.is_null());
        for (t, v) in [
            (T::Duration, "\"99999999999999999999y\""),
            (T::Duration, "\"2147483648mo\""),
            (T::Timestamp, "\"2024-13-01\""),
            (T::Timestamp, "\"-\""),
            (T::Date, "\"4294967296\""),
            (T::Time, "\"24:00:00\""),
            (T::Time, "\"99999999999999999999\""),
            (T::Decimal, "\"1E99999999999\""),
            (T::Blob, "\"0x\u{e9}\u{e9}\""),
        ] {
            assert!(fj(&t, v).is_err(), "{v}");
        }
        for ty in [
            T::Duration,
            T::Decimal,
            T::Varint,
            T::Inet,
            udt(),
            T::Map(Box::new(T::Int), Box::new(T::Varchar)),
        ] {
            for b in [
                &[][..],
                &[0xff][..],
                &[0, 0, 0, 1, 0][..],
                &[0x80, 0, 0, 0, 0, 0, 0, 1, 0xff][..],
            ] {
                let _ = to_json(&ty, Some(b));
            }
        }
    }
}
