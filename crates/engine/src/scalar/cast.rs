//! `CAST(x AS type)`: which casts exist (`CastFcts.all()` plus identity and Cassandra's value
//! compatibility), the conversions themselves (numbers in Java's widths via `num`, text with
//! Java's formatting via `javafmt`, dates and timestamps), and Cassandra's refusals and column
//! names for them.

use crate::types::cql_type_name;
use proto::types::ColumnType;

use super::signature::{accepts, sig_text, signatures, Sig};
use super::time::{date_from_millis, millis_of};
use super::{empty_is_null, to_text};
use crate::num::Num;

/// `CAST(x AS type)` with Cassandra's conversion rules and text formatting. A cast to the
/// value's own type is the value itself (Cassandra drops such a cast, column name included).
pub fn cast(
    from: &ColumnType,
    to: &ColumnType,
    v: Option<&[u8]>,
) -> Result<Option<Vec<u8>>, String> {
    if from == to {
        return Ok(v.map(<[u8]>::to_vec));
    }
    if !cast_allowed(from, to) {
        return Err(cast_error(&cql_type_name(from), to));
    }
    let Some(b) = v else { return Ok(None) };
    if b.is_empty() && empty_is_null(from) {
        return Ok(None);
    }
    match to {
        ColumnType::Ascii | ColumnType::Varchar => Ok(Some(to_text(from, b)?.into_bytes())),
        ColumnType::Date => {
            let ms = millis_of(from, b)?;
            Ok(Some(date_from_millis(ms).to_vec()))
        }
        ColumnType::Timestamp => Ok(Some(millis_of(from, b)?.to_be_bytes().to_vec())),
        _ => {
            let n = Num::decode(from, b)?;
            n.convert(to).map(Some)
        }
    }
}

/// Whether `CAST(<from> AS <to>)` exists (CastFcts.all(), plus identity; a timestamp passes
/// for a bigint as Cassandra's value compatibility lets it).
pub fn cast_allowed(from: &ColumnType, to: &ColumnType) -> bool {
    use ColumnType as T;
    if from == to {
        return true;
    }
    let numeric_to = matches!(
        to,
        T::Tinyint
            | T::Smallint
            | T::Int
            | T::Bigint
            | T::Float
            | T::Double
            | T::Decimal
            | T::Varint
    );
    let text_to = matches!(to, T::Ascii | T::Varchar);
    match from {
        T::Tinyint
        | T::Smallint
        | T::Int
        | T::Bigint
        | T::Float
        | T::Double
        | T::Decimal
        | T::Counter
        | T::Varint => numeric_to || text_to,
        T::Ascii => matches!(to, T::Varchar),
        T::Inet | T::Boolean | T::Time | T::Uuid => text_to,
        T::Timeuuid => text_to || matches!(to, T::Date | T::Timestamp),
        T::Timestamp => text_to || matches!(to, T::Date | T::Bigint),
        T::Date => text_to || matches!(to, T::Timestamp),
        _ => false,
    }
}

/// The type `CAST(arg AS to)` converts from, or Cassandra's refusal. `written` is the target as
/// the statement spells it: there is no `cast_as_varchar` (only `cast_as_text`), so Cassandra
/// refuses `AS varchar`. A type without a direct cast may still pass as a value-compatible one
/// (a timestamp as a bigint or varint, a bigint as a timestamp), several of them being ambiguous.
pub fn cast_source(
    arg_name: &str,
    from: &ColumnType,
    to: &ColumnType,
    written: &str,
) -> Result<ColumnType, String> {
    if from == to {
        return Ok(from.clone());
    }
    if written.eq_ignore_ascii_case("varchar") {
        return Err(format!("{arg_name} cannot be cast to varchar"));
    }
    if cast_allowed(from, to) {
        return Ok(from.clone());
    }
    cast_call(arg_name, from, to)
}

/// The `cast_as_<to>` signature an argument of type `from` is value-compatible with, as
/// Cassandra's function resolution picks it: the only one, else ambiguous, else refused.
fn cast_call(arg_name: &str, from: &ColumnType, to: &ColumnType) -> Result<ColumnType, String> {
    let f = format!("cast_as_{}", cql_type_name(to));
    let sigs = signatures(&format!("castas{}", cql_type_name(to)));
    let compat: Vec<&Sig> = sigs
        .iter()
        .filter(|(ps, _)| accepts(&ps[0], from))
        .collect();
    match compat.as_slice() {
        [(ps, _)] => Ok(ps[0].clone()),
        [] => Err(cast_error(arg_name, to)),
        many => {
            let known: Vec<String> = many.iter().map(|s| sig_text(&f, s)).collect();
            Err(format!(
                "Ambiguous call to function system.{f} (can be matched by following signatures: {}): use type casts to disambiguate",
                known.join(", ")
            ))
        }
    }
}

/// [`cast_source`] of a DESC clustering column. Its type is Cassandra's `ReversedType` of its
/// own, so a cast to that own type is no identity there but a call of `cast_as_<type>` with a
/// signature the column's values are compatible with: an int's pass as a varint's (`CAST(c AS
/// int)` of a DESC int column is `cast(c as int)`, its value unchanged); text, ascii, timestamp
/// and most others have none (refused).
pub fn cast_source_reversed(
    arg_name: &str,
    from: &ColumnType,
    to: &ColumnType,
    written: &str,
) -> Result<ColumnType, String> {
    if from != to {
        return cast_source(arg_name, from, to, written);
    }
    if written.eq_ignore_ascii_case("varchar") {
        return Err(format!("{arg_name} cannot be cast to varchar"));
    }
    // Several signatures may take the values (a bigint's: timestamp and varint); 5.0.9 resolves
    // it all the same (seen), and each gives the value back unchanged.
    let sigs = signatures(&format!("castas{}", cql_type_name(to)));
    if sigs.iter().any(|(ps, _)| accepts(&ps[0], from)) {
        Ok(from.clone())
    } else {
        Err(cast_error(arg_name, to))
    }
}

/// Cassandra's error for an impossible cast: `a cannot be cast to boolean` where no type casts
/// to the target, else the signature mismatch of its `cast_as_<type>` function (Cassandra
/// lists the signatures in its hash order, which this does not reproduce).
pub fn cast_error(arg_column_name: &str, to: &ColumnType) -> String {
    let to_name = cql_type_name(to);
    let sigs = signatures(&format!("castas{to_name}"));
    if sigs.is_empty() {
        return format!("{arg_column_name} cannot be cast to {to_name}");
    }
    let f = format!("cast_as_{to_name}");
    let known: Vec<String> = sigs.iter().map(|s| sig_text(&f, s)).collect();
    format!(
        "Invalid call to function system.{f}, none of its type signatures match (known type signatures: {})",
        known.join(", ")
    )
}

/// The output column name of `CAST(arg AS to)`: `cast(b as int)`; a cast to the argument's own
/// type keeps the argument's name (CastFctsTest.testNumericCastsInSelectionClause).
pub fn cast_column_name(arg_name: &str, from: &ColumnType, to: &ColumnType) -> String {
    if from == to {
        arg_name.to_string()
    } else {
        format!("cast({arg_name} as {})", cql_type_name(to))
    }
}
