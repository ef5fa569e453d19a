//! Whether a column may be added back where one was dropped: Cassandra 5.0.9's
//! `AbstractType.isSerializationCompatibleWith` of the new type over the dropped one, whose
//! user types the drop recorded as tuples of their fields (`system_schema.dropped_columns`
//! keeps them expanded, so a user type never comes back over its own dropped column).
//!
//! The rules, probed on 5.0.9 over every native type, frozen and non-frozen collections,
//! tuples and user types: the values of the new type read those of the old
//! (`isValueCompatibleWith`) and both have the same fixed length, or both none. A blob reads
//! any native value and any tuple; text reads ascii; bigint and timestamp read each other; uuid
//! reads timeuuid; varint reads int and bigint. A tuple reads a tuple it extends, component by
//! component by value alone (`tuple<blob, text>` over `tuple<int, text>`). A collection reads
//! one of its own kind and frozenness whose elements and map values it reads with the same
//! length, and whose set elements and map keys sort alike (the same, text over ascii, blob
//! over either).

use super::{CqlType, Schema};
use proto::types::ColumnType;

/// Whether a column of type `new` may be added where one of type `old` (as the drop stored
/// it) was dropped, in keyspace `ks` of `schema`.
pub(super) fn compatible(schema: &Schema, ks: &str, new: &CqlType, old: &CqlType) -> bool {
    let old = expand_user_types(schema, ks, old, 0);
    serialization_compatible(new, &old)
}

/// The type text a drop records for a column of type `cql_type`: its user types expanded to
/// tuples of their fields, as 5.0.9's `system_schema.dropped_columns` has it (the user type
/// may be dropped next; `frozen<u>` is recorded `frozen<tuple<int, text>>`).
pub(super) fn dropped_type(schema: &Schema, ks: &str, cql_type: &str) -> String {
    match cql::parse_type(cql_type) {
        Ok(t) => super::column_type_text(&expand_user_types(schema, ks, &t, 0)),
        Err(_) => cql_type.to_string(),
    }
}

/// `ty` with every user type it names replaced by the tuple of its fields (a name the schema
/// no longer holds stays as it is).
fn expand_user_types(schema: &Schema, ks: &str, ty: &CqlType, depth: usize) -> CqlType {
    let go = |t: &CqlType| Box::new(expand_user_types(schema, ks, t, depth + 1));
    match ty {
        CqlType::UserDefined(n) if depth < 16 => {
            let k = n.keyspace.clone().unwrap_or_else(|| ks.to_string());
            let Some(u) = schema.types.get(&(k, n.name.clone())) else {
                return ty.clone();
            };
            let fields = u.fields.iter().map(|(_, t)| match cql::parse_type(t) {
                Ok(p) => Some(expand_user_types(schema, ks, &p, depth + 1)),
                Err(_) => None,
            });
            match fields.collect::<Option<Vec<_>>>() {
                Some(f) => CqlType::Tuple(f),
                None => ty.clone(),
            }
        }
        CqlType::List(t) => CqlType::List(go(t)),
        CqlType::Set(t) => CqlType::Set(go(t)),
        CqlType::Map(k, v) => CqlType::Map(go(k), go(v)),
        CqlType::Frozen(t) => CqlType::Frozen(go(t)),
        CqlType::Tuple(ts) => CqlType::Tuple(ts.iter().map(|t| *go(t)).collect()),
        _ => ty.clone(),
    }
}

fn unfrozen(t: &CqlType) -> (&CqlType, bool) {
    match t {
        CqlType::Frozen(x) => (x, true),
        _ => (t, false),
    }
}

/// The length of every value of the type, for the types that have one.
fn fixed_length(t: &CqlType) -> Option<u8> {
    match unfrozen(t).0 {
        CqlType::Native(n) => match n {
            ColumnType::Boolean => Some(1),
            ColumnType::Int | ColumnType::Float => Some(4),
            ColumnType::Bigint | ColumnType::Double | ColumnType::Timestamp => Some(8),
            ColumnType::Counter => Some(8),
            ColumnType::Uuid | ColumnType::Timeuuid => Some(16),
            _ => None,
        },
        _ => None,
    }
}

fn serialization_compatible(new: &CqlType, old: &CqlType) -> bool {
    value_compatible(new, old) && fixed_length(new) == fixed_length(old)
}

fn value_compatible(new: &CqlType, old: &CqlType) -> bool {
    if new == old {
        return true;
    }
    let ((n, n_frozen), (o, o_frozen)) = (unfrozen(new), unfrozen(old));
    match (n, o) {
        (CqlType::Native(a), CqlType::Native(b)) => native_value_compatible(a, b),
        (CqlType::Native(ColumnType::Blob), CqlType::Tuple(_)) => true,
        (CqlType::Tuple(a), CqlType::Tuple(b)) => {
            a.len() >= b.len() && a.iter().zip(b).all(|(x, y)| value_compatible(x, y))
        }
        (CqlType::List(a), CqlType::List(b)) => {
            n_frozen == o_frozen && serialization_compatible(a, b)
        }
        (CqlType::Set(a), CqlType::Set(b)) => n_frozen == o_frozen && sorts_alike(a, b),
        (CqlType::Map(ka, va), CqlType::Map(kb, vb)) => {
            n_frozen == o_frozen && sorts_alike(ka, kb) && serialization_compatible(va, vb)
        }
        _ => false,
    }
}

fn native_value_compatible(new: &ColumnType, old: &ColumnType) -> bool {
    use ColumnType as T;
    new == old
        || matches!(
            (new, old),
            (T::Blob, _)
                | (T::Varchar, T::Ascii)
                | (T::Bigint, T::Timestamp)
                | (T::Timestamp, T::Bigint)
                | (T::Uuid, T::Timeuuid)
                | (T::Varint, T::Int | T::Bigint)
        )
}

/// Cassandra's `isCompatibleWith` for set elements and map keys: values of `old` sort the
/// same way as values of `new`.
fn sorts_alike(new: &CqlType, old: &CqlType) -> bool {
    use ColumnType as T;
    new == old
        || matches!(
            (unfrozen(new).0, unfrozen(old).0),
            (CqlType::Native(T::Varchar), CqlType::Native(T::Ascii))
                | (
                    CqlType::Native(T::Blob),
                    CqlType::Native(T::Varchar | T::Ascii)
                )
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(new: &str, old: &str) -> bool {
        let p = |t: &str| cql::parse_type(t).unwrap();
        compatible(&Schema::default(), "ks", &p(new), &p(old))
    }

    /// The pairs 5.0.9 accepts among native types, collections, tuples and vectors (every
    /// other pair of those probed it refuses).
    #[test]
    fn readding_follows_5_0_9s_serialization_compatibility() {
        for (new, old) in [
            ("blob", "tinyint"),
            ("blob", "smallint"),
            ("blob", "date"),
            ("blob", "time"),
            ("blob", "duration"),
            ("blob", "inet"),
            ("blob", "varint"),
            ("blob", "decimal"),
            ("blob", "text"),
            ("blob", "ascii"),
            ("blob", "frozen<tuple<int, text>>"),
            ("text", "ascii"),
            ("bigint", "timestamp"),
            ("timestamp", "bigint"),
            ("uuid", "timeuuid"),
            ("frozen<tuple<int, text, int>>", "frozen<tuple<int, text>>"),
            ("frozen<tuple<blob, text>>", "frozen<tuple<int, text>>"),
            ("frozen<tuple<int, blob>>", "frozen<tuple<int, text>>"),
            ("frozen<tuple<varint, text>>", "frozen<tuple<int, text>>"),
            ("frozen<tuple<uuid>>", "frozen<tuple<timeuuid>>"),
            ("list<int>", "list<int>"),
            ("vector<float, 2>", "vector<float, 2>"),
        ] {
            assert!(ok(new, old), "{new} over {old}");
        }
        for (new, old) in [
            ("blob", "int"),
            ("blob", "boolean"),
            ("blob", "uuid"),
            ("blob", "frozen<list<int>>"),
            ("blob", "vector<float, 2>"),
            ("varint", "int"),
            ("ascii", "text"),
            ("timeuuid", "uuid"),
            ("frozen<tuple<int>>", "frozen<tuple<int, text>>"),
            ("frozen<tuple<bigint, text>>", "frozen<tuple<int, text>>"),
            ("frozen<list<blob>>", "frozen<list<int>>"),
            ("frozen<list<int>>", "list<int>"),
            ("int", "text"),
        ] {
            assert!(!ok(new, old), "{new} over {old}");
        }
    }
}
