//! Cassandra 5.0's native scalar functions over serialized values: time functions
//! (`toDate`, `toTimestamp`, `toUnixTimestamp`, `now`, `currentTimestamp`, `minTimeuuid`, `floor`,
//! ...), `uuid()`, every `<type>AsBlob` / `blobAs<type>`, the 5.0 math functions (`abs`, `exp`,
//! `log`, `log10`, `round`) and `CAST(x AS type)`.
//!
//! Not here: `token`, `ttl`, `writetime`, `toJson`/`fromJson` (see `json`), aggregates (see
//! `read`), UDFs, collection and masking functions (see `fcts`), operators (see `arith`).
//!
//! Names are case-insensitive and the 5.0 snake_case aliases (`to_date`, `blob_as_int`,
//! `cast_as_int`, ...) resolve to the same functions. `dateOf` and `unixTimestampOf` were removed
//! in 5.0 and are unknown functions, as there.
//!
//! Behaviour was checked against `apache/cassandra` (`CastFcts.java`, `TimeFcts.java`,
//! `BytesConversionFcts.java`, `MathFcts.java`, the `*Type.java` number types) and a running
//! Cassandra 5.0.9; the tests quote the outputs.
//!
//! Invariants: no function panics on any input; a wrong length or an invalid value is an `Err`
//! with a Cassandra-style message. Null in gives null out (every native scalar here is
//! "returns null on null input"); an empty value of a type where empty means nothing (numbers,
//! uuid, timestamp, ...) counts as null.
//!
//! This file holds the entry points and the one evaluator (`call_at`, the clock passed in); the
//! rest is split by concern:
//!
//! | module | holds |
//! |---|---|
//! | `signature` | the function registry: names and aliases, type signatures, call resolution and its errors |
//! | `cast` | `CAST(x AS type)`: which casts exist, their conversions, their errors and column names |
//! | `time` | calendar helpers (millis, dates, durations) and `floor` |
//! | `uuid` | time-uuid encoding, `minTimeuuid`/`maxTimeuuid`, `now()` and `uuid()` |
//! | `math` | `abs`, `exp`, `log`, `log10`, `round` |
//!
//! Big numbers live in `bigint` (their exp/log in `decmath`), a number in Java's width and its
//! conversions in `num`, calendar maths and the text forms of dates and times in `temporal`,
//! Java-style text formatting in `javafmt` (re-exported here, as `json` and casts share them).

mod cast;
mod math;
mod signature;
mod time;
mod uuid;

#[cfg(test)]
mod tests;

use crate::types::cql_type_name;
use proto::types::ColumnType;
use proto::value::validate_value;

pub use cast::{
    cast, cast_allowed, cast_column_name, cast_error, cast_source, cast_source_reversed,
};
pub(crate) use signature::{
    accepts, ambiguous_call, is_known, param_types, sig_text, signatures_of, Sig,
};
pub(crate) use time::duration_of;
pub(crate) use uuid::{random_uuid, timeuuid_now};

pub(crate) use crate::bigint::{decimal_string, parse_decimal, BigInt};
pub(crate) use crate::javafmt::*;

use signature::{canonical, resolve};
use time::{date_from_millis, i64_of, millis_of, MILLIS_PER_DAY, NANOS_PER_MILLI};
use uuid::timeuuid_bound;

// ---- entry points -------------------------------------------------------------------------

/// Why a native scalar function call gave no value, by cause, so that each is answered as
/// Cassandra answers it (see `functions::call`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScalarError {
    /// A value Cassandra refuses the call for (a blob that is not a valid representation of
    /// the type asked for): Invalid.
    #[error("{0}")]
    InvalidValue(String),
    /// Java's `ArithmeticException` (the log of zero, an exp overflow), which reaches
    /// Cassandra's client as a server error carrying the exception's text.
    #[error("{0}")]
    Arithmetic(String),
    /// Peregrine's bound on big-number work (a result of too many digits): Invalid.
    #[error("{0}")]
    NotComputed(String),
    /// Anything else: an unknown function, arguments no signature takes, a malformed value.
    #[error("{0}")]
    Other(String),
}

impl From<String> for ScalarError {
    fn from(m: String) -> Self {
        ScalarError::Other(m)
    }
}

impl From<&str> for ScalarError {
    fn from(m: &str) -> Self {
        ScalarError::Other(m.to_string())
    }
}

/// Result type of calling `name` with argument types, or an Invalid-style error message.
pub fn return_type(name: &str, args: &[ColumnType]) -> Result<ColumnType, String> {
    let f = canonical(name)?;
    Ok(resolve(&f, args)?.1)
}

/// Cassandra's refusal of a call to native function `name` with `n` arguments that no
/// signature of it takes, whatever the arguments' types: the function resolver counts them
/// before it types a literal (`now(1)`: "0 required but 1 provided", not "Cannot infer type").
/// None for a function of that arity, and for names this registry does not hold.
/// Whether `name` is a native scalar function (under either of its names).
pub(crate) fn is_native(name: &str) -> bool {
    canonical(name).is_ok()
}

pub(crate) fn arity_refusal(name: &str, n: usize) -> Option<String> {
    let f = canonical(name).ok()?;
    let sigs = signature::signatures(&f);
    if sigs.iter().any(|(p, _)| p.len() == n) {
        return None;
    }
    // `resolve` words it by the number of signatures, types aside.
    resolve(&f, &vec![ColumnType::Blob; n]).err()
}

/// Evaluates `name` (the one native function evaluator, for selectors and terms alike) at the
/// clock given: `now_micros` is microseconds since the Unix epoch. Args are (type, serialized
/// value or None for null).
pub fn call_at(
    name: &str,
    args: &[(ColumnType, Option<Vec<u8>>)],
    now_micros: i64,
) -> Result<Option<Vec<u8>>, ScalarError> {
    let f = canonical(name)?;
    let types: Vec<ColumnType> = args.iter().map(|(t, _)| t.clone()).collect();
    let (params, ret) = resolve(&f, &types)?;
    let vals: Vec<Option<&[u8]>> = args.iter().map(|(_, v)| v.as_deref()).collect();
    execute(&f, &params, &ret, &vals, now_micros)
}

/// The output column name Cassandra gives a function selector: `system.todate(t)`,
/// `system.tojson(system.blobasint(system.intasblob(v)))` (names lower-cased, arguments
/// joined with ", "). `arg_names` are the arguments' own column names.
pub fn column_name(name: &str, arg_names: &[String]) -> String {
    format!("system.{}({})", name.to_lowercase(), arg_names.join(", "))
}

// ---- execution ----------------------------------------------------------------------------

fn execute(
    f: &str,
    params: &[ColumnType],
    ret: &ColumnType,
    vals: &[Option<&[u8]>],
    now_micros: i64,
) -> Result<Option<Vec<u8>>, ScalarError> {
    use ColumnType as T;
    // Functions without arguments.
    match f {
        "now" | "currenttimeuuid" => return Ok(Some(timeuuid_now(now_micros).to_vec())),
        "uuid" => return Ok(Some(random_uuid(now_micros).to_vec())),
        "currenttimestamp" => return Ok(Some(now_micros.div_euclid(1000).to_be_bytes().to_vec())),
        "currentdate" => return Ok(Some(date_from_millis(now_micros.div_euclid(1000)).to_vec())),
        "currenttime" => {
            let ms = now_micros.div_euclid(1000).rem_euclid(MILLIS_PER_DAY);
            return Ok(Some((ms * NANOS_PER_MILLI).to_be_bytes().to_vec()));
        }
        _ => {}
    }
    // blobAs<type> checks the bytes are a valid <type>; <type>AsBlob passes them through.
    if f.starts_with("blobas") {
        let Some(b) = vals.first().copied().flatten() else {
            return Ok(None);
        };
        if validate_value(ret, b).is_err() {
            return Err(ScalarError::InvalidValue(format!(
                "In call to function system.{f}, value 0x{} is not a valid binary representation for type {}",
                hex(b),
                cql_type_name(ret)
            )));
        }
        return Ok(Some(b.to_vec()));
    }
    if f.ends_with("asblob") {
        return Ok(vals.first().copied().flatten().map(<[u8]>::to_vec));
    }
    if let Some(_to) = f.strip_prefix("castas") {
        return Ok(cast(&params[0], ret, vals.first().copied().flatten())?);
    }
    // Everything else returns null on a null (or meaningless empty) argument.
    let mut present = Vec::with_capacity(vals.len());
    for (v, t) in vals.iter().zip(params) {
        match v {
            Some(b) if !(b.is_empty() && empty_is_null(t)) => present.push(*b),
            _ => return Ok(None),
        }
    }
    let arg0 = &params[0];
    let b0 = present[0];
    let out = match f {
        "todate" => date_from_millis(millis_of(arg0, b0)?).to_vec(),
        "totimestamp" | "tounixtimestamp" => millis_of(arg0, b0)?.to_be_bytes().to_vec(),
        "mintimeuuid" | "maxtimeuuid" => {
            let ms = i64_of(b0)?;
            timeuuid_bound(ms, f == "maxtimeuuid").to_vec()
        }
        // Cassandra refuses (InvalidRequest) a floor it cannot compute as the call runs: a
        // time before the starting time, a duration too fine for a date or too long for a
        // time, a negative one.
        "floor" => time::floor(arg0, &present).map_err(ScalarError::InvalidValue)?,
        "abs" | "exp" | "log" | "log10" | "round" => {
            let t = if *arg0 == T::Counter {
                &T::Bigint
            } else {
                arg0
            };
            math::math(f, t, b0)?
        }
        _ => return Err(format!("Unknown function '{f}'").into()),
    };
    Ok(Some(out))
}

/// Whether the empty value of `t` is read as null (Cassandra's serializers: a number, a uuid, a
/// time; not a text, a blob or a collection).
pub(crate) fn empty_is_null(t: &ColumnType) -> bool {
    !matches!(
        t,
        ColumnType::Ascii
            | ColumnType::Varchar
            | ColumnType::Blob
            | ColumnType::Custom(_)
            | ColumnType::List(_)
            | ColumnType::Set(_)
            | ColumnType::Map(..)
            | ColumnType::Tuple(_)
            | ColumnType::Udt { .. }
    )
}

/// Serialized form of a typed value (tests build their arguments with it).
#[cfg(test)]
fn bytes_of(v: &proto::types::Value) -> Vec<u8> {
    proto::value::to_bytes(v)
}
