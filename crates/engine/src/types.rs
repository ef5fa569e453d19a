//! Helpers over CQL types: names as Cassandra prints them and value ordering.

use proto::types::ColumnType;
use std::cmp::Ordering;

/// The CQL name of a type (`text`, `map<text, int>`); collections inside collections or
/// tuples print frozen, as Cassandra requires them to be.
pub fn cql_type_name(ty: &ColumnType) -> String {
    name(ty, false)
}

/// The type of a receiver as Cassandra names it in messages: a collection or UDT is
/// `frozen<...>` unless it is a non-frozen (multi-cell) column.
pub(crate) fn receiver_type_name(ty: &ColumnType, multi_cell: bool) -> String {
    name(ty, !multi_cell)
}

fn name(ty: &ColumnType, nested: bool) -> String {
    use ColumnType::*;
    let inner = |t: &ColumnType| name(t, true);
    let s = match ty {
        Custom(c) => format!("'{c}'"),
        Ascii => "ascii".into(),
        Bigint => "bigint".into(),
        Blob => "blob".into(),
        Boolean => "boolean".into(),
        Counter => "counter".into(),
        Decimal => "decimal".into(),
        Double => "double".into(),
        Float => "float".into(),
        Int => "int".into(),
        Timestamp => "timestamp".into(),
        Uuid => "uuid".into(),
        Varchar => "text".into(),
        Varint => "varint".into(),
        Timeuuid => "timeuuid".into(),
        Inet => "inet".into(),
        Date => "date".into(),
        Time => "time".into(),
        Smallint => "smallint".into(),
        Tinyint => "tinyint".into(),
        Duration => "duration".into(),
        List(e) => format!("list<{}>", inner(e)),
        Set(e) => format!("set<{}>", inner(e)),
        Map(k, v) => format!("map<{}, {}>", inner(k), inner(v)),
        Tuple(ts) => {
            let parts: Vec<String> = ts.iter().map(inner).collect();
            return format!("frozen<tuple<{}>>", parts.join(", "));
        }
        Udt { name, .. } => name.clone(),
        // Elements of a vector are frozen without saying so.
        Vector(e, n) => format!("vector<{}, {n}>", name(e, false)),
    };
    if nested && matches!(ty, List(_) | Set(_) | Map(..) | Udt { .. }) {
        format!("frozen<{s}>")
    } else {
        s
    }
}

/// Whether `ty` is, or holds at any depth (in a collection, vector, tuple or UDT), a type
/// `leaf` accepts.
pub(crate) fn contains(ty: &ColumnType, leaf: &dyn Fn(&ColumnType) -> bool) -> bool {
    leaf(ty)
        || match ty {
            ColumnType::List(t) | ColumnType::Set(t) | ColumnType::Vector(t, _) => {
                contains(t, leaf)
            }
            ColumnType::Map(k, v) => contains(k, leaf) || contains(v, leaf),
            ColumnType::Tuple(ts) => ts.iter().any(|t| contains(t, leaf)),
            ColumnType::Udt { fields, .. } => fields.iter().any(|(_, t)| contains(t, leaf)),
            _ => false,
        }
}

/// Orders two serialized values of one type as Cassandra does (for sets, map keys,
/// filtering); uses the clustering key encoding.
pub fn compare(ty: &ColumnType, a: &[u8], b: &[u8]) -> Ordering {
    if *ty == ColumnType::Decimal {
        if let Some(o) = crate::arith::compare_decimal(a, b) {
            return o;
        }
    }
    let (a, b) = (java_nan(ty, a), java_nan(ty, b));
    let mut ea = Vec::with_capacity(a.len() + 4);
    let mut eb = Vec::with_capacity(b.len() + 4);
    crate::keys::encode_component(&mut ea, ty, a, false);
    crate::keys::encode_component(&mut eb, ty, b, false);
    ea.cmp(&eb)
}

/// A float or double NaN as Java's `Double.compare` / `Float.compare` (Cassandra's
/// DoubleType and FloatType) sees it: every NaN the canonical positive one, equal to each
/// other and above +Infinity. Byte order would put a NaN with its sign bit set (what
/// `1.5 % 0` and `0.0 / 0` give, in Cassandra as here) below every number, so `d <= 1`
/// would take it.
fn java_nan<'v>(ty: &ColumnType, v: &'v [u8]) -> &'v [u8] {
    const DOUBLE_NAN: [u8; 8] = [0x7f, 0xf8, 0, 0, 0, 0, 0, 0];
    const FLOAT_NAN: [u8; 4] = [0x7f, 0xc0, 0, 0];
    match (ty, v.len()) {
        (ColumnType::Double, 8) if v.try_into().is_ok_and(|b| f64::from_be_bytes(b).is_nan()) => {
            &DOUBLE_NAN
        }
        (ColumnType::Float, 4) if v.try_into().is_ok_and(|b| f32::from_be_bytes(b).is_nan()) => {
            &FLOAT_NAN
        }
        _ => v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_nan_compares_equal_and_above_infinity_as_in_java() {
        let d = ColumnType::Double;
        let negative_nan = [0xff, 0xf8, 0, 0, 0, 0, 0, 0];
        let nan = f64::NAN.to_be_bytes();
        let inf = f64::INFINITY.to_be_bytes();
        let one = 1.0f64.to_be_bytes();
        assert_eq!(compare(&d, &negative_nan, &nan), Ordering::Equal);
        assert_eq!(compare(&d, &negative_nan, &inf), Ordering::Greater);
        assert_eq!(compare(&d, &one, &negative_nan), Ordering::Less);
        let f = ColumnType::Float;
        let negative_nan = [0xff, 0xc0, 0, 0];
        assert_eq!(
            compare(&f, &negative_nan, &f32::NAN.to_be_bytes()),
            Ordering::Equal
        );
        assert_eq!(
            compare(&f, &1.0f32.to_be_bytes(), &negative_nan),
            Ordering::Less
        );
        // -0.0 stays below 0.0, as Double.compare has it.
        assert_eq!(
            compare(&d, &(-0.0f64).to_be_bytes(), &0.0f64.to_be_bytes()),
            Ordering::Less
        );
    }
}
