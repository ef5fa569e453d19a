//! `CREATE TABLE ... WITH ID = <uuid>`: the table id `DESCRIBE ... WITH INTERNALS` prints, so
//! that a schema can be created again with its ids (5.0.9's `TableAttributes.ID`).
//!
//! The value is read as text (a UUID literal as written, or a string) and parsed as Java's
//! `UUID.fromString` parses it (5.0.9's `TableId.fromString`): five fields separated by dashes,
//! each a hexadecimal number with an optional sign, cut to its width (32, 16, 16, 16 and 48
//! bits), so `'1-1-1-1-1'` is `00000001-0001-0001-0001-000000000001`. Anything else is
//! ConfigurationException "Invalid table id"; a map, a syntax error. `ALTER TABLE ... WITH ID`
//! is refused ("Cannot alter table id.") after the other options are checked.

use cql::ast::{Property, PropertyValue};

use crate::catalog::TableDef;
use crate::EngineError;

/// The `id` property of `props`, parsed; checked after the other properties (5.0.9 reads it
/// last: `ID = 'x' AND gc_grace_seconds = -1` reports the grace period).
pub(crate) fn of(props: &[Property]) -> Result<Option<[u8; 16]>, EngineError> {
    let Some(p) = props.iter().find(|p| p.name == "id") else {
        return Ok(None);
    };
    let text = match &p.value {
        PropertyValue::Literal(_) => p.value.as_text().unwrap_or_default(),
        PropertyValue::Map(_) => {
            return Err(EngineError::syntax(
                "Invalid value for property 'id'. It should be a string",
            ))
        }
    };
    java_uuid(&text)
        .map(Some)
        .ok_or_else(|| EngineError::config("Invalid table id"))
}

/// Refuses an id another table (of any keyspace) already has, with 5.0.9's answer: its schema
/// map's `IllegalArgumentException`, a server error.
pub(crate) fn check_unique<'a>(
    id: [u8; 16],
    new: (&str, &str),
    mut tables: impl Iterator<Item = &'a TableDef>,
) -> Result<(), EngineError> {
    match tables.find(|t| t.uuid == id) {
        None => Ok(()),
        Some(t) => {
            let id = crate::javafmt::format_uuid(&id);
            Err(EngineError::server(format!(
                "java.lang.IllegalArgumentException: Multiple entries with same key: {id}={}.{} and {id}={}.{}",
                new.0, new.1, t.keyspace, t.name
            )))
        }
    }
}

/// Java's `UUID.fromString`: at most 36 characters, exactly four dashes, each field a number
/// `Long.parseLong(field, 16)` accepts (an optional `+` or `-`, then hex digits, within `i64`),
/// masked to its width.
fn java_uuid(s: &str) -> Option<[u8; 16]> {
    if s.len() > 36 {
        return None;
    }
    let fields: Vec<&str> = s.split('-').collect();
    // A `-` sign cannot be told from a separator: Java finds the four dashes with `indexOf`,
    // so a field that starts with one leaves an empty field before it, which fails there too.
    let [a, b, c, d, e] = fields.as_slice() else {
        return None;
    };
    let f = |t: &str, bits: u32| -> Option<u64> {
        let digits = t.strip_prefix('+').unwrap_or(t);
        if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        let v = i64::from_str_radix(digits, 16).ok()? as u64;
        Some(v & ((1 << bits) - 1))
    };
    let msb = (f(a, 32)? << 32) | (f(b, 16)? << 16) | f(c, 16)?;
    let lsb = (f(d, 16)? << 48) | f(e, 48)?;
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&msb.to_be_bytes());
    out[8..].copy_from_slice(&lsb.to_be_bytes());
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_as_java_parses_them() {
        let ok = |s: &str, want: &str| {
            assert_eq!(
                java_uuid(s)
                    .map(|b| crate::javafmt::format_uuid(&b))
                    .as_deref(),
                Some(want),
                "{s}"
            )
        };
        ok(
            "5a1c395e-b41f-11e5-9f22-ba0be0483c18",
            "5a1c395e-b41f-11e5-9f22-ba0be0483c18",
        );
        ok(
            "5A1C395E-B41F-11E5-9F22-BA0BE0483C43",
            "5a1c395e-b41f-11e5-9f22-ba0be0483c43",
        );
        // Short fields are numbers (5.0.9 stored these ids so).
        ok("1-1-1-1-1", "00000001-0001-0001-0001-000000000001");
        ok(
            "5a1c395e-b41f-11e5-9f22-ba0be0483c5",
            "5a1c395e-b41f-11e5-9f22-0ba0be0483c5",
        );
        ok("+1-1-1-1-1", "00000001-0001-0001-0001-000000000001");
        // Wider fields are cut to their width.
        ok("123456789-1-1-1-1", "23456789-0001-0001-0001-000000000001");
        for bad in [
            "",
            "zz",
            " 5a1c395e-b41f-11e5-9f22-ba0be0483c50",
            "5a1c395e-b41f-11e5-9f22",
            "1-1-1-1-1-1",
            "1--1-1-1",
            "-1-1-1-1-1",
            "5a1c395e-b41f-11e5-9f22-ba0be0483c18aa",
            "1-1-1-1-x",
        ] {
            assert_eq!(java_uuid(bad), None, "{bad:?}");
        }
    }
}
