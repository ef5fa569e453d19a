//! CQL literals to serialized values, directed by the receiving column's type, with
//! Cassandra's error messages for values that do not fit.

use crate::temporal;
use crate::EngineError;
use cql::ast::{Literal, Term};
use proto::types::{ColumnType, Value};

fn bad(ty: &ColumnType, what: &str) -> EngineError {
    EngineError::invalid(format!(
        "Invalid {what} constant for type {}",
        type_name(ty)
    ))
}

pub fn type_name(ty: &ColumnType) -> String {
    crate::types::cql_type_name(ty)
}

/// True when the literal's kind can stand for a value of `ty` (Cassandra's assignment test:
/// an INTEGER fits an int or a text column does not, whatever its digits).
pub(crate) fn literal_fits(ty: &ColumnType, lit: &Literal) -> bool {
    use ColumnType as T;
    match lit {
        Literal::Null => true,
        // A tuple is no native type to Cassandra's assignment test: every constant is
        // weakly assignable to it, and read by the tuple's `fromString` (`tuple_from_string`).
        _ if matches!(ty, T::Tuple(_)) => true,
        // Cassandra 5.0 takes no string for a duration, only the duration literal itself.
        Literal::String(_) => matches!(
            ty,
            T::Varchar | T::Ascii | T::Timestamp | T::Date | T::Time | T::Inet
        ),
        Literal::Integer(_) => matches!(
            ty,
            T::Duration
                | T::Timestamp
                | T::Date
                | T::Time
                | T::Int
                | T::Bigint
                | T::Counter
                | T::Smallint
                | T::Tinyint
                | T::Varint
                | T::Decimal
                | T::Double
                | T::Float
        ),
        Literal::Float(_) => matches!(ty, T::Decimal | T::Double | T::Float),
        Literal::Boolean(_) => matches!(ty, T::Boolean),
        Literal::Uuid(_) => matches!(ty, T::Uuid | T::Timeuuid),
        Literal::Blob(_) => matches!(ty, T::Blob | T::Custom(_)),
        Literal::Duration(_) => matches!(ty, T::Duration),
    }
}

/// An integer literal that does not fit its type: Cassandra's message names the Java type.
fn bad_integer(ty: &ColumnType, s: &str) -> EngineError {
    let java = match ty {
        ColumnType::Int => "int",
        ColumnType::Bigint | ColumnType::Counter => "long",
        ColumnType::Smallint => "short",
        ColumnType::Tinyint => "byte",
        _ => return bad(ty, "integer"),
    };
    EngineError::invalid(format!("Unable to make {java} from '{s}'"))
}

/// Serializes a literal for the receiver `name` of type `ty`.
fn literal_for(
    name: &str,
    ty: &ColumnType,
    lit: &Literal,
    now: crate::Now,
) -> Result<Option<Vec<u8>>, EngineError> {
    use ColumnType as T;
    if !literal_fits(ty, lit) {
        let raw = match lit {
            Literal::String(s) => s.clone(),
            other => other.to_string(),
        };
        return Err(EngineError::invalid(format!(
            "Invalid {} constant ({raw}) for \"{name}\" of type {}",
            literal_kind(lit),
            type_name(ty)
        )));
    }
    let v = match (lit, ty) {
        (Literal::Null, _) => return Ok(None),
        // A hex constant is its bytes, unchecked, whatever the receiver (Constants.Literal).
        (Literal::Blob(h), T::Tuple(_)) => {
            return Ok(Some(parse_hex(h).ok_or_else(|| bad(ty, "blob"))?))
        }
        // Any other constant is read by the tuple's `fromString`: a string as it is, the rest
        // as they print.
        (lit, T::Tuple(_)) => {
            let text = match lit {
                Literal::String(s) => std::borrow::Cow::Borrowed(s.as_str()),
                other => std::borrow::Cow::Owned(other.to_string()),
            };
            return tuple_from_string(ty, &text, now)
                .map(Some)
                .map_err(EngineError::invalid);
        }
        (Literal::String(s), T::Varchar) => Value::Varchar(s.clone()),
        (Literal::String(s), T::Ascii) => {
            if !s.is_ascii() {
                return Err(EngineError::invalid(format!(
                    "Invalid ASCII character in string literal {s}"
                )));
            }
            Value::Ascii(s.clone())
        }
        // The empty string is the empty timestamp, as Cassandra's `TimestampType.fromString`.
        (Literal::String(s), T::Timestamp) if s.is_empty() => return Ok(Some(Vec::new())),
        (Literal::String(s), T::Timestamp) => {
            Value::Timestamp(temporal::parse_timestamp(s, now).ok_or_else(|| {
                EngineError::invalid(format!("Unable to parse a date/time from '{s}'"))
            })?)
        }
        (Literal::Integer(s), T::Timestamp) => {
            Value::Timestamp(s.parse().map_err(|_| bad(ty, "integer"))?)
        }
        (Literal::String(s), T::Date) => Value::Date(temporal::parse_date(s).ok_or_else(|| {
            EngineError::invalid(if is_long_text(s) {
                format!("Unable to make unsigned int (for date) from: '{s}'")
            } else {
                format!("Unable to coerce '{s}' to a formatted date (long)")
            })
        })?),
        (Literal::Integer(s), T::Date) => Value::Date(
            s.parse::<i64>()
                .ok()
                .and_then(|v| u32::try_from(v).ok())
                .ok_or_else(|| bad(ty, "integer"))?,
        ),
        // An integer is read as its text (TimeType.fromString), so -1 or a count past the
        // day is refused as 5.0.9 refuses it ("Unable to make long (for time) from: '-1'").
        (Literal::String(s) | Literal::Integer(s), T::Time) => {
            Value::Time(temporal::parse_time(s).ok_or_else(|| {
                EngineError::invalid(if is_long_text(s) {
                    format!("Unable to make long (for time) from: '{s}'")
                } else {
                    format!("(TimeType) Unable to coerce '{s}' to a formatted time (long)")
                })
            })?)
        }
        (Literal::String(s), T::Inet) => {
            Value::Inet(crate::javafmt::parse_inet(s).ok_or_else(|| {
                EngineError::invalid(format!("Unable to make inet address from '{s}'"))
            })?)
        }
        (Literal::Integer(s), T::Duration) => {
            // Cassandra's Duration.from names the text after a leading `-`.
            return Err(EngineError::invalid(format!(
                "Unable to convert '{}' to a duration",
                s.strip_prefix('-').unwrap_or(s)
            )));
        }
        (Literal::String(s), T::Duration) | (Literal::Duration(s), T::Duration) => {
            let (months, days, nanos) =
                temporal::parse_duration(s).map_err(EngineError::invalid)?;
            Value::Duration {
                months,
                days,
                nanos,
            }
        }
        (Literal::Integer(s), T::Int) => Value::Int(s.parse().map_err(|_| bad_integer(ty, s))?),
        (Literal::Integer(s), T::Bigint | T::Counter) => {
            Value::Bigint(s.parse().map_err(|_| bad_integer(ty, s))?)
        }
        (Literal::Integer(s), T::Smallint) => {
            Value::Smallint(s.parse().map_err(|_| bad_integer(ty, s))?)
        }
        (Literal::Integer(s), T::Tinyint) => {
            Value::Tinyint(s.parse().map_err(|_| bad_integer(ty, s))?)
        }
        (Literal::Integer(s), T::Varint) => {
            Value::Varint(varint_from_decimal(s).ok_or_else(|| bad(ty, "integer"))?)
        }
        (Literal::Integer(s) | Literal::Float(s), T::Decimal) => {
            let (scale, unscaled) = decimal_from_text(s).ok_or_else(|| bad(ty, "decimal"))?;
            Value::Decimal { scale, unscaled }
        }
        (Literal::Integer(s) | Literal::Float(s), T::Double) => {
            Value::Double(parse_float(s).ok_or_else(|| bad(ty, "float"))?)
        }
        (Literal::Integer(s) | Literal::Float(s), T::Float) => {
            Value::Float(parse_float(s).ok_or_else(|| bad(ty, "float"))? as f32)
        }
        (Literal::Boolean(b), T::Boolean) => Value::Boolean(*b),
        (Literal::Uuid(s), T::Uuid) => Value::Uuid(parse_uuid(s).ok_or_else(|| bad(ty, "uuid"))?),
        (Literal::Uuid(s), T::Timeuuid) => {
            let u = parse_uuid(s).ok_or_else(|| bad(ty, "uuid"))?;
            if u[6] >> 4 != 1 {
                // Cassandra 5.0.9's words for a constant (checked against it, scenario 39).
                return Err(EngineError::invalid(
                    "TimeUUID supports only version 1 UUIDs",
                ));
            }
            Value::Timeuuid(u)
        }
        (Literal::Blob(h), T::Blob) => Value::Blob(parse_hex(h).ok_or_else(|| bad(ty, "blob"))?),
        (Literal::Blob(h), T::Custom(_)) => {
            Value::Blob(parse_hex(h).ok_or_else(|| bad(ty, "blob"))?)
        }
        (l, _) => {
            return Err(EngineError::invalid(format!(
                "Invalid {} constant ({}) for column of type {}",
                literal_kind(l),
                l,
                type_name(ty)
            )))
        }
    };
    Ok(Some(proto::value::to_bytes(&v)))
}

/// A tuple (or UDT) value from its string form, as Cassandra's `TupleType.fromString` reads a
/// constant given for a tuple (`INSERT .. (k, t) VALUES (0, 1)` on a `tuple<int, text>` is
/// `(1, null)`, `'2:abc'` is `(2, 'abc')`): fields split on unescaped `:`, `@` a null, `\:`
/// and `\@` unescaped, each field read by its type's `fromString`, missing ones null.
pub(crate) fn tuple_from_string(
    ty: &ColumnType,
    text: &str,
    now: crate::Now,
) -> Result<Vec<u8>, String> {
    let types: Vec<&ColumnType> = match ty {
        ColumnType::Tuple(ts) => ts.iter().collect(),
        ColumnType::Udt { fields, .. } => fields.iter().map(|(_, t)| t).collect(),
        _ => return from_string(ty, text, now),
    };
    // The empty string has no fields: the tuple is the empty value.
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let mut parts: Vec<String> = vec![String::new()];
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let last = parts.last_mut().expect("one part at least");
                last.push(c);
                if let Some(n) = chars.next() {
                    last.push(n);
                }
            }
            ':' => parts.push(String::new()),
            _ => parts.last_mut().expect("one part at least").push(c),
        }
    }
    if parts.len() > types.len() {
        return Err(format!(
            "Invalid tuple literal: too many elements. Type {} expects {} but got {}",
            type_name(ty),
            types.len(),
            parts.len()
        ));
    }
    let mut out = Vec::new();
    for (part, t) in parts.iter().zip(&types) {
        if part == "@" {
            out.extend_from_slice(&(-1i32).to_be_bytes());
            continue;
        }
        let field = part.replace("\\:", ":").replace("\\@", "@");
        let v = from_string(t, &field, now)?;
        out.extend_from_slice(&(v.len() as i32).to_be_bytes());
        out.extend_from_slice(&v);
    }
    Ok(out)
}

/// A value from its string form, as Cassandra's `AbstractType.fromString` for `ty`.
fn from_string(ty: &ColumnType, text: &str, now: crate::Now) -> Result<Vec<u8>, String> {
    use ColumnType as T;
    match ty {
        T::Tuple(_) | T::Udt { .. } => tuple_from_string(ty, text, now),
        // A collection's `fromString` is CollectionType's: the value's bytes in hex, as a
        // blob's (generated --views seed 176: `mask_replace(v0, 1)` of a tuple whose first
        // field is a frozen list answers "cannot parse '1' as hex bytes"); hex digits alone,
        // as Java's `hexToBytes` reads them (no `0x` prefix).
        T::Blob | T::List(_) | T::Set(_) | T::Map(..) => {
            let prefixed = text.starts_with("0x") || text.starts_with("0X");
            (!prefixed)
                .then(|| parse_hex(text))
                .flatten()
                .ok_or_else(|| format!("cannot parse '{text}' as hex bytes"))
        }
        T::Decimal if !text.is_empty() => {
            let (scale, unscaled) = decimal_from_text(text)
                .ok_or_else(|| format!("unable to make BigDecimal from '{text}'"))?;
            let mut out = scale.to_be_bytes().to_vec();
            out.extend(unscaled);
            Ok(out)
        }
        // Every other type reads a JSON string as its `fromString` reads the text.
        _ => crate::json::from_json(ty, &serde_json::Value::String(text.into()), now)
            .map(Option::unwrap_or_default),
    }
}

/// `^-?\\d+$`: text Cassandra reads as a number of days (dates) or nanoseconds (times), so a
/// refusal names the number rather than a format.
fn is_long_text(s: &str) -> bool {
    let d = s.strip_prefix('-').unwrap_or(s);
    !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit())
}

fn literal_kind(l: &Literal) -> &'static str {
    match l {
        Literal::String(_) => "STRING",
        Literal::Integer(_) => "INTEGER",
        Literal::Float(_) => "FLOAT",
        Literal::Boolean(_) => "BOOLEAN",
        Literal::Uuid(_) => "UUID",
        Literal::Blob(_) => "HEX",
        Literal::Duration(_) => "DURATION",
        Literal::Null => "NULL",
    }
}

/// Cassandra's refusal of a tuple literal with more elements than its type has.
pub(crate) fn tuple_arity(ty: &ColumnType, expected: usize, got: usize) -> Result<(), EngineError> {
    if got > expected {
        return Err(EngineError::invalid(format!(
            "Invalid tuple literal: too many elements. Type {} expects {expected} but got {got}",
            type_name(ty)
        )));
    }
    Ok(())
}

/// Cassandra's refusal of a vector literal with another number of elements than its type.
pub(crate) fn vector_arity(name: &str, ty: &ColumnType, got: usize) -> Result<(), EngineError> {
    match ty {
        ColumnType::Vector(_, n) if *n as usize != got => Err(EngineError::invalid(format!(
            "Invalid vector literal for {name} of type {}; expected {n} elements, but given {got}",
            type_name(ty)
        ))),
        _ => Ok(()),
    }
}

/// Cassandra's refusal of a null element in a vector.
pub(crate) fn null_in_vector() -> EngineError {
    EngineError::invalid("null is not supported inside vectors")
}

/// Cassandra's refusal of a UDT literal naming a field its type does not have.
pub(crate) fn udt_fields_known<T>(
    ty: &ColumnType,
    defs: &[(String, ColumnType)],
    given: &[(String, T)],
) -> Result<(), EngineError> {
    match given
        .iter()
        .find(|(n, _)| !defs.iter().any(|(d, _)| d == n))
    {
        Some((unknown, _)) => Err(EngineError::invalid(format!(
            "Unknown field '{unknown}' in value of user defined type {}",
            type_name(ty)
        ))),
        None => Ok(()),
    }
}

/// A constant term (no bind markers) serialized for `ty`; collections included. Messages
/// name no receiver: [`const_term_for`] is the form with one.
pub fn const_term(
    ty: &ColumnType,
    term: &Term,
    now: crate::Now,
) -> Result<Option<Vec<u8>>, EngineError> {
    const_term_for("", ty, term, now)
}

/// Cassandra's refusal of an element whose literal kind does not fit (`value 'a' is not of
/// type int`); `None` when it fits or is not a plain literal.
fn misfit(element: &Term, ty: &ColumnType) -> Option<String> {
    use cql::ast::CqlType as C;
    // An element is frozen: a multi-cell collection or UDT cast does not fit it.
    let multi_cell = |hint: &C| crate::collections::kind_of(ty).is_some() && hint.is_multi_cell();
    let misfit = || {
        Some(format!(
            "{element} is not of type {}",
            crate::types::receiver_type_name(ty, false)
        ))
    };
    match element {
        Term::Literal(l) if !literal_fits(ty, l) => misfit(),
        Term::TypeHint { ty: hint, .. }
            if multi_cell(hint)
                || crate::fcts::cast_type(hint).is_some_and(|c| !receives(ty, &c)) =>
        {
            misfit()
        }
        _ => None,
    }
}

/// Whether a receiver of type `receiver` takes a cast to `cast` (Cassandra's
/// `isValueCompatibleWith` as its `TypeCast` uses it, checked against 5.0.9 for every pair of
/// native types): the same type, anything into a blob, ascii into text, a timestamp into a
/// bigint, a bigint into a time or timestamp, an int into a date, a timeuuid into a uuid, an
/// int, bigint or timestamp into a varint.
pub(crate) fn receives(receiver: &ColumnType, cast: &ColumnType) -> bool {
    use ColumnType as T;
    receiver == cast
        || matches!(
            (receiver, cast),
            (T::Blob, _)
                | (T::Varchar, T::Ascii)
                | (T::Bigint, T::Timestamp)
                | (T::Time | T::Timestamp, T::Bigint)
                | (T::Date, T::Int)
                | (T::Uuid, T::Timeuuid)
                | (T::Varint, T::Int | T::Bigint | T::Timestamp)
        )
}

/// Cassandra's checks of a cast `(hint)inner` given to the receiver `name` of type `ty`: the
/// term must fit the cast's type ("Cannot cast value 'a' to type int"), and the receiver must
/// take that type ("Cannot assign value (bigint)1 to v of type int"), frozen or not as the
/// receiver is (`multi_cell`: a non-frozen collection or UDT column; anything else of those
/// types, an element or field, is frozen; `None` where the receiver's frozenness is not
/// known, as for a function's argument). The term itself is then typed by the receiver, as in
/// Cassandra.
pub(crate) fn check_cast(
    name: &str,
    ty: &ColumnType,
    multi_cell: Option<bool>,
    hint: &cql::ast::CqlType,
    inner: &Term,
) -> Result<(), EngineError> {
    use cql::ast::CqlType as C;
    let text = |t: &Term| match t {
        Term::Literal(Literal::Null) => "NULL".to_string(),
        other => crate::build::cassandra_text(other),
    };
    // A collection or UDT cast is multi-cell unless it says frozen (a tuple never is).
    let cast_multi_cell = hint.is_multi_cell();
    let frozen_mismatch = crate::collections::kind_of(ty).is_some()
        && multi_cell.is_some_and(|m| m != cast_multi_cell);
    let refuse = || {
        EngineError::invalid(format!(
            "Cannot assign value ({}){} to {name} of type {}",
            qualified_udt(hint, ty),
            text(inner),
            crate::types::receiver_type_name(ty, multi_cell.unwrap_or(true))
        ))
    };
    let Some(cast) = crate::fcts::cast_type(hint) else {
        return match (hint, ty) {
            (C::UserDefined(_) | C::Frozen(_), ColumnType::Udt { .. }) if frozen_mismatch => {
                Err(refuse())
            }
            _ => Ok(()),
        };
    };
    let fits = match inner {
        Term::Literal(Literal::Null) => true,
        Term::Literal(l) => literal_fits(&cast, l),
        Term::TypeHint { ty: h, .. } => {
            crate::fcts::cast_type(h).is_none_or(|c| receives(&cast, &c))
        }
        // A call without arguments has one type (`now()` a timeuuid).
        Term::FunctionCall { name: f, args } if args.is_empty() => {
            crate::scalar::return_type(&f.name, &[]).map_or(true, |r| receives(&cast, &r))
        }
        _ => true,
    };
    if !fits {
        return Err(EngineError::invalid(format!(
            "Cannot cast value {} to type {hint}",
            text(inner)
        )));
    }
    if !receives(ty, &cast) || frozen_mismatch {
        return Err(refuse());
    }
    Ok(())
}

/// A cast's type as Cassandra prints it in "Cannot assign value ...": a user type named
/// without its keyspace is shown with the receiver's (`(frozen<ks.u>){f: 1}`).
fn qualified_udt(hint: &cql::ast::CqlType, receiver: &ColumnType) -> String {
    use cql::ast::CqlType as C;
    let ColumnType::Udt { keyspace, .. } = receiver else {
        return hint.to_string();
    };
    let qualify = |t: &C| match t {
        C::UserDefined(n) if n.keyspace.is_none() => C::UserDefined(cql::ast::QualifiedName {
            keyspace: Some(keyspace.clone()),
            name: n.name.clone(),
        }),
        other => other.clone(),
    };
    match hint {
        C::Frozen(inner) => C::Frozen(Box::new(qualify(inner))).to_string(),
        other => qualify(other).to_string(),
    }
}

/// A constant term serialized for the receiver `name` (a column, or `u.f`, `value(s)`, ...)
/// of type `ty`, with Cassandra's messages naming it.
/// The type Cassandra 5.0 gives an operand of an operation whose receiver is a `varint`:
/// an integer literal its exact type (`int` if it fits, else `bigint`, else `varint`), an
/// operation over such operands its result type. Int and bigint results are value-compatible
/// with varint, so Cassandra resolves `2147483647 + 1` to `int + int` and stores
/// -2147483648 (the operands of other receivers take the receiver's type).
fn exact_integer_type(t: &Term) -> Option<ColumnType> {
    let integer = |s: &str| {
        Some(if s.parse::<i32>().is_ok() {
            ColumnType::Int
        } else if s.parse::<i64>().is_ok() {
            ColumnType::Bigint
        } else {
            ColumnType::Varint
        })
    };
    match t {
        Term::Literal(Literal::Integer(s)) => integer(s),
        Term::Negate(inner) => match &**inner {
            Term::Literal(Literal::Integer(s)) => integer(&format!("-{s}")),
            _ => None,
        },
        Term::Operation { op, left, right } => {
            crate::arith::result_type(*op, &exact_integer_type(left)?, &exact_integer_type(right)?)
        }
        _ => None,
    }
}

/// An operation, possibly in parentheses or negated.
fn is_operation(t: &Term) -> bool {
    match t {
        Term::Operation { .. } => true,
        Term::Tuple(v) if v.len() == 1 => is_operation(&v[0]),
        Term::Negate(inner) => is_operation(inner),
        _ => false,
    }
}

pub fn const_term_for(
    name: &str,
    ty: &ColumnType,
    term: &Term,
    now: crate::Now,
) -> Result<Option<Vec<u8>>, EngineError> {
    let element_error = |what: &str, detail: String| {
        EngineError::invalid(format!("Invalid {what} literal for {name}: {detail}"))
    };
    match term {
        Term::Literal(l) => literal_for(name, ty, l, now),
        Term::TypeHint { ty: hint, term } => {
            check_cast(name, ty, None, hint, term)?;
            const_term_for(name, ty, term, now)
        }
        Term::List(items) if matches!(ty, ColumnType::Vector(..)) => {
            let ColumnType::Vector(elem, _) = ty else {
                unreachable_type()
            };
            vector_arity(name, ty, items.len())?;
            let mut vals = Vec::with_capacity(items.len());
            for i in items {
                if let Some(m) = misfit(i, elem) {
                    return Err(element_error("vector", format!("value {m}")));
                }
                vals.push(const_term(elem, i, now)?.ok_or_else(null_in_vector)?);
            }
            Ok(Some(proto::value::encode_vector(elem, &vals)))
        }
        Term::Set(_) | Term::Map(_) | Term::Tuple(_) | Term::Udt(_)
            if matches!(ty, ColumnType::Vector(..)) =>
        {
            let kind = match term {
                Term::Set(_) => "set",
                Term::Map(_) => "map",
                Term::Tuple(_) => "tuple type",
                _ => "user type",
            };
            Err(EngineError::invalid(format!(
                "Invalid {kind} literal for {name} of type {}",
                type_name(ty)
            )))
        }
        Term::Set(items) if matches!(ty, ColumnType::List(_)) && !items.is_empty() => {
            Err(EngineError::invalid(format!(
                "Invalid set literal for {name} of type {}",
                type_name(ty)
            )))
        }
        Term::List(_) if !matches!(ty, ColumnType::List(_) | ColumnType::Vector(..)) => {
            Err(EngineError::invalid(format!(
                "Unexpected receiver type '{}'; only list and vector are expected",
                type_name(ty)
            )))
        }
        Term::List(items) | Term::Set(items)
            if matches!(ty, ColumnType::List(_) | ColumnType::Set(_)) =>
        {
            let elem = match ty {
                ColumnType::List(e) | ColumnType::Set(e) => e,
                _ => unreachable_type(),
            };
            let what = if matches!(ty, ColumnType::List(_)) {
                "list"
            } else {
                "set"
            };
            let mut vals = Vec::with_capacity(items.len());
            for i in items {
                if let Some(m) = misfit(i, elem) {
                    return Err(element_error(what, format!("value {m}")));
                }
                vals.push(const_term(elem, i, now)?.ok_or_else(|| {
                    EngineError::invalid("null is not supported inside collections")
                })?);
            }
            if matches!(ty, ColumnType::Set(_)) {
                vals.sort_by(|a, b| crate::types::compare(elem, a, b));
                vals.dedup();
            }
            Ok(Some(encode_collection(&vals)))
        }
        Term::Set(items) if items.is_empty() && matches!(ty, ColumnType::Map(..)) => {
            Ok(Some(encode_collection(&[])))
        }
        Term::Map(pairs) if matches!(ty, ColumnType::Map(..)) => {
            let ColumnType::Map(kt, vt) = ty else {
                unreachable_type()
            };
            let mut kvs = Vec::with_capacity(pairs.len());
            for (k, v) in pairs {
                if let Some(m) = misfit(k, kt) {
                    return Err(element_error("map", format!("key {m}")));
                }
                if let Some(m) = misfit(v, vt) {
                    return Err(element_error("map", format!("value {m}")));
                }
                let k = const_term(kt, k, now)?.ok_or_else(|| {
                    EngineError::invalid("null is not supported inside collections")
                })?;
                let v = const_term(vt, v, now)?.ok_or_else(|| {
                    EngineError::invalid("null is not supported inside collections")
                })?;
                kvs.push((k, v));
            }
            kvs.sort_by(|a, b| crate::types::compare(kt, &a.0, &b.0));
            kvs.dedup_by(|a, b| a.0 == b.0);
            let mut out = (kvs.len() as i32).to_be_bytes().to_vec();
            for (k, v) in kvs {
                out.extend_from_slice(&(k.len() as i32).to_be_bytes());
                out.extend_from_slice(&k);
                out.extend_from_slice(&(v.len() as i32).to_be_bytes());
                out.extend_from_slice(&v);
            }
            Ok(Some(out))
        }
        Term::Tuple(items) if matches!(ty, ColumnType::Tuple(_)) => {
            let ColumnType::Tuple(types) = ty else {
                unreachable_type()
            };
            tuple_arity(ty, types.len(), items.len())?;
            let mut out = Vec::new();
            for (n, (i, t)) in items.iter().zip(types).enumerate() {
                if misfit(i, t).is_some() {
                    return Err(element_error(
                        "tuple",
                        format!("component {n} is not of type {}", type_name(t)),
                    ));
                }
                match const_term(t, i, now)? {
                    Some(v) => {
                        out.extend_from_slice(&(v.len() as i32).to_be_bytes());
                        out.extend_from_slice(&v);
                    }
                    None => out.extend_from_slice(&(-1i32).to_be_bytes()),
                }
            }
            Ok(Some(out))
        }
        Term::Udt(fields) if matches!(ty, ColumnType::Udt { .. }) => {
            let ColumnType::Udt { fields: defs, .. } = ty else {
                unreachable_type()
            };
            let mut out = Vec::new();
            udt_fields_known(ty, defs, fields)?;
            for (field, t) in defs {
                match fields.iter().find(|(n, _)| n == field) {
                    Some((_, term)) if misfit(term, t).is_some() => {
                        return Err(element_error(
                            "user type",
                            format!("field {field} is not of type {}", type_name(t)),
                        ))
                    }
                    Some((_, term)) => match const_term(t, term, now)? {
                        Some(v) => {
                            out.extend_from_slice(&(v.len() as i32).to_be_bytes());
                            out.extend_from_slice(&v);
                        }
                        None => out.extend_from_slice(&(-1i32).to_be_bytes()),
                    },
                    None => out.extend_from_slice(&(-1i32).to_be_bytes()),
                }
            }
            Ok(Some(out))
        }
        Term::Negate(_) | Term::Operation { .. } if casts_an_operand(term) => {
            // Cassandra resolves the operator function for the receiver before anything
            // else: `(bigint)1 + 1` has none returning an int, nor `-(bigint)1`. Its
            // parameters type the operands: `(decimal) 1 - 3` is `_substract(decimal, int)`,
            // whose int 3 becomes the decimal 3.0 (`DecimalType.toBigDecimal` goes through
            // the double), so -2.0 (generator seed 172).
            let f = crate::build::resolve_operation(term, Some(ty))?;
            const_operation_for(name, ty, term, now, Some(&f.params))
        }
        Term::Negate(_) | Term::Operation { .. } => const_operation_for(name, ty, term, now, None),
        Term::Tuple(v) if v.len() == 1 && !matches!(ty, ColumnType::Tuple(_)) => {
            const_term_for(name, ty, &v[0], now)
        }
        Term::FunctionCall { name: fname, args } => {
            crate::functions::call_const(ty, &fname.name, args, now)
        }
        other => Err(EngineError::invalid(format!(
            "Invalid value {} for column of type {}",
            other,
            type_name(ty)
        ))),
    }
}

/// Whether an operand of the operation or negation `term`, at any depth of operations, is a
/// cast (`(bigint)1 + 1`, `-(int)1`).
fn casts_an_operand(term: &Term) -> bool {
    match term {
        Term::Operation { left, right, .. } => casts_an_operand(left) || casts_an_operand(right),
        Term::Negate(inner) => casts_an_operand(inner),
        Term::Tuple(v) if v.len() == 1 => casts_an_operand(&v[0]),
        Term::TypeHint { .. } => true,
        _ => false,
    }
}

/// A constant operation or negation (no bind markers) for the receiver `name` of type `ty`;
/// `params`: the operand types of the operator function resolved for it, when known.
fn const_operation_for(
    name: &str,
    ty: &ColumnType,
    term: &Term,
    now: crate::Now,
    params: Option<&[ColumnType]>,
) -> Result<Option<Vec<u8>>, EngineError> {
    match term {
        Term::Negate(inner) => match &**inner {
            Term::Literal(Literal::Integer(s)) => {
                literal_for(name, ty, &Literal::Integer(format!("-{s}")), now)
            }
            Term::Literal(Literal::Float(s)) => {
                literal_for(name, ty, &Literal::Float(format!("-{s}")), now)
            }
            // Cassandra 5.0 negates an operation for a varint receiver as a bigint: -(2 + 4)
            // stores the bigint's 8 bytes, -(99999999999999999999999 * 2) is refused.
            other if *ty == ColumnType::Varint && is_operation(other) => {
                match const_term_for(name, &ColumnType::Bigint, other, now)? {
                    Some(v) => Ok(Some(crate::arith::negate(&ColumnType::Bigint, &v)?)),
                    None => Ok(None),
                }
            }
            other => match const_term_for(name, ty, other, now)? {
                Some(v) if crate::arith::is_numeric(ty) => Ok(Some(crate::arith::negate(ty, &v)?)),
                Some(_) => Err(EngineError::invalid("Invalid negation")),
                None => Ok(None),
            },
        },
        Term::Operation { op, left, right } => {
            // Untyped operands take the receiver's type (a duration stays a duration), as in
            // `SET d = 1 / 2` (0.5 for a double) or `SET ts = '2020-01-01' + 1d`.
            let operand_ty = |t: &Term| {
                let hint = match t {
                    Term::TypeHint { ty: hint, .. } => hint.as_native(),
                    _ => None,
                };
                match (t, hint) {
                    (Term::Literal(Literal::Duration(_)), _) => ColumnType::Duration,
                    (_, Some(h)) => h.clone(),
                    _ if *ty == ColumnType::Varint => {
                        exact_integer_type(t).unwrap_or(ColumnType::Varint)
                    }
                    _ => ty.clone(),
                }
            };
            let (lt, rt) = match params {
                Some([l, r]) => (l.clone(), r.clone()),
                _ => (operand_ty(left), operand_ty(right)),
            };
            let Some(rty) = crate::arith::result_type(*op, &lt, &rt) else {
                return Err(EngineError::invalid(format!(
                    "the '{}' operation is not supported between {left} and {right}",
                    op.symbol()
                )));
            };
            let (Some(l), Some(r)) = (const_term(&lt, left, now)?, const_term(&rt, right, now)?)
            else {
                return Ok(None);
            };
            let v = crate::arith::apply(*op, &lt, &l, &rt, &r, &rty)?;
            // An int or bigint result is value-compatible with a varint receiver, which
            // Cassandra 5.0 stores as is: 2 + 3 into a varint is the four bytes 00000005.
            if rty == *ty
                || (*ty == ColumnType::Varint
                    && matches!(rty, ColumnType::Int | ColumnType::Bigint))
            {
                Ok(Some(v))
            } else {
                crate::scalar::cast(&rty, ty, Some(&v)).map_err(EngineError::invalid)
            }
        }
        _ => const_term_for(name, ty, term, now),
    }
}

#[allow(clippy::panic)]
fn unreachable_type() -> ! {
    panic!("type checked by the caller's guard")
}

pub fn encode_collection(items: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + items.iter().map(|i| i.len() + 4).sum::<usize>());
    out.extend_from_slice(&(items.len() as i32).to_be_bytes());
    for i in items {
        out.extend_from_slice(&(i.len() as i32).to_be_bytes());
        out.extend_from_slice(i);
    }
    out
}

fn parse_float(s: &str) -> Option<f64> {
    match s {
        "NaN" | "-NaN" => Some(f64::NAN),
        "Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        _ => s.parse().ok(),
    }
}

pub fn parse_uuid(s: &str) -> Option<[u8; 16]> {
    let hex: String = s.chars().filter(|c| *c != '-').collect();
    if hex.len() != 32 || s.len() != 36 {
        return None;
    }
    let v = parse_hex(&hex)?;
    v.try_into().ok()
}

pub fn parse_hex(h: &str) -> Option<Vec<u8>> {
    let h = h
        .strip_prefix("0x")
        .or_else(|| h.strip_prefix("0X"))
        .unwrap_or(h);
    if !h.len().is_multiple_of(2) {
        return None;
    }
    (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(h.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Two's-complement big-endian minimal bytes of a decimal integer string.
pub fn varint_from_decimal(s: &str) -> Option<Vec<u8>> {
    let (neg, digits) = match s.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Magnitude as little-endian base-256.
    let mut mag: Vec<u8> = vec![0];
    for d in digits.bytes() {
        let mut carry = (d - b'0') as u32;
        for b in mag.iter_mut() {
            let v = *b as u32 * 10 + carry;
            *b = (v & 0xFF) as u8;
            carry = v >> 8;
        }
        while carry > 0 {
            mag.push((carry & 0xFF) as u8);
            carry >>= 8;
        }
    }
    // `-0` (and `-0.0` as a decimal's digits) is zero, not a negative number.
    if neg && mag.iter().any(|&b| b != 0) {
        // Two's complement: invert and add one.
        let mut carry = 1u16;
        for b in mag.iter_mut() {
            let v = (!*b) as u16 + carry;
            *b = (v & 0xFF) as u8;
            carry = v >> 8;
        }
        mag.push(0xFF);
    } else {
        mag.push(0);
    }
    let mut be: Vec<u8> = mag.into_iter().rev().collect();
    while be.len() > 1
        && ((be[0] == 0 && be[1] & 0x80 == 0) || (be[0] == 0xFF && be[1] & 0x80 != 0))
    {
        be.remove(0);
    }
    Some(be)
}

/// `123.45e-2` -> (scale, unscaled varint bytes).
pub fn decimal_from_text(s: &str) -> Option<(i32, Vec<u8>)> {
    let (mant, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], s[i + 1..].parse::<i32>().ok()?),
        None => (s, 0),
    };
    let (int, frac) = match mant.find('.') {
        Some(i) => (&mant[..i], &mant[i + 1..]),
        None => (mant, ""),
    };
    let digits = format!("{int}{frac}");
    let scale = frac.len() as i32 - exp;
    Some((scale, varint_from_decimal(&digits)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_match_java_biginteger() {
        assert_eq!(varint_from_decimal("0").unwrap(), vec![0]);
        assert_eq!(varint_from_decimal("127").unwrap(), vec![0x7F]);
        assert_eq!(varint_from_decimal("128").unwrap(), vec![0, 0x80]);
        assert_eq!(varint_from_decimal("-1").unwrap(), vec![0xFF]);
        assert_eq!(varint_from_decimal("-128").unwrap(), vec![0x80]);
        assert_eq!(varint_from_decimal("-129").unwrap(), vec![0xFF, 0x7F]);
        // Negative zero is zero (a decimal literal `-0.0` once stored -25.6).
        assert_eq!(varint_from_decimal("-0").unwrap(), vec![0]);
        assert_eq!(decimal_from_text("-0.0").unwrap(), (1, vec![0]));
    }

    /// Terms of an operation into a varint receiver, as Cassandra 5.0.9 stores them.
    #[test]
    fn varint_receivers_type_integer_literals_exactly() {
        use cql::ast::ArithOp::{Add, Mul};
        let lit = |s: &str| Term::Literal(Literal::Integer(s.into()));
        let op = |op, l: Term, r: Term| Term::Operation {
            op,
            left: Box::new(l),
            right: Box::new(r),
        };
        let set = |t: &Term| {
            const_term_for("w", &ColumnType::Varint, t, crate::Now::at_micros(0))
                .map(Option::unwrap)
        };
        // int + int wraps and keeps the int's four bytes.
        let v = set(&op(Add, lit("2147483647"), lit("1"))).unwrap();
        assert_eq!(v, (-2147483648i32).to_be_bytes());
        assert_eq!(
            set(&op(Add, lit("2"), lit("3"))).unwrap(),
            5i32.to_be_bytes()
        );
        let v = set(&op(Mul, lit("9223372036854775807"), lit("2"))).unwrap();
        assert_eq!(v, (-2i64).to_be_bytes());
        // A negated operation is a bigint; a varint literal does not fit one.
        let v = set(&Term::Negate(Box::new(op(Add, lit("2"), lit("4"))))).unwrap();
        assert_eq!(v, (-6i64).to_be_bytes());
        let big = op(Mul, lit("99999999999999999999999"), lit("2"));
        assert!(set(&Term::Negate(Box::new(big.clone()))).is_err());
        assert_eq!(
            set(&big).unwrap(),
            varint_from_decimal("199999999999999999999998").unwrap()
        );
    }

    #[test]
    fn decimals() {
        let (scale, un) = decimal_from_text("123.45").unwrap();
        assert_eq!(scale, 2);
        assert_eq!(un, varint_from_decimal("12345").unwrap());
    }
}
