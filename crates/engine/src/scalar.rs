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
//! Big numbers live in `bigint`, a number in Java's width and its conversions in `num`,
//! calendar maths and the text forms of dates and times in `temporal`, Java-style text
//! formatting in `javafmt` (re-exported here, as `json` and casts share them).

use proto::types::{ColumnType, Value};
use proto::value::{decode_value, validate_value};

/// 100 ns intervals between 1582-10-15 (the UUID epoch) and 1970-01-01.
const UUID_EPOCH_OFFSET: i64 = 0x01B2_1DD2_1381_4000;
const MILLIS_PER_DAY: i64 = 86_400_000;
const NANOS_PER_MILLI: i64 = 1_000_000;
const NANOS_PER_DAY: i64 = 86_400_000_000_000;
/// `date` values are days since the epoch offset by 2^31 (the wire form).
const DATE_EPOCH: i64 = 1 << 31;

// ---- entry points -------------------------------------------------------------------------

/// Result type of calling `name` with argument types, or an Invalid-style error message.
pub fn return_type(name: &str, args: &[ColumnType]) -> Result<ColumnType, String> {
    let f = canonical(name)?;
    Ok(resolve(&f, args)?.1)
}

/// Evaluates `name` (the one native function evaluator, for selectors and terms alike) at the
/// clock given: `now_micros` is microseconds since the Unix epoch. Args are (type, serialized
/// value or None for null).
pub fn call_at(
    name: &str,
    args: &[(ColumnType, Option<Vec<u8>>)],
    now_micros: i64,
) -> Result<Option<Vec<u8>>, String> {
    let f = canonical(name)?;
    let types: Vec<ColumnType> = args.iter().map(|(t, _)| t.clone()).collect();
    let (params, ret) = resolve(&f, &types)?;
    let vals: Vec<Option<&[u8]>> = args.iter().map(|(_, v)| v.as_deref()).collect();
    execute(&f, &params, &ret, &vals, now_micros)
}

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
        return Err(cast_error(&from.cql_name(), to));
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
    let f = format!("cast_as_{}", to.cql_name());
    let sigs = signatures(&format!("castas{}", to.cql_name()));
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

/// Cassandra's error for an impossible cast: `a cannot be cast to boolean` where no type casts
/// to the target, else the signature mismatch of its `cast_as_<type>` function (Cassandra
/// lists the signatures in its hash order, which this does not reproduce).
pub fn cast_error(arg_column_name: &str, to: &ColumnType) -> String {
    let to_name = to.cql_name();
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

/// The output column name Cassandra gives a function selector: `system.todate(t)`,
/// `system.tojson(system.blobasint(system.intasblob(v)))` (names lower-cased, arguments
/// joined with ", "). `arg_names` are the arguments' own column names.
pub fn column_name(name: &str, arg_names: &[String]) -> String {
    format!("system.{}({})", name.to_lowercase(), arg_names.join(", "))
}

/// The output column name of `CAST(arg AS to)`: `cast(b as int)`; a cast to the argument's own
/// type keeps the argument's name (CastFctsTest.testNumericCastsInSelectionClause).
pub fn cast_column_name(arg_name: &str, from: &ColumnType, to: &ColumnType) -> String {
    if from == to {
        arg_name.to_string()
    } else {
        format!("cast({arg_name} as {})", to.cql_name())
    }
}

// ---- names and signatures -----------------------------------------------------------------

/// Lower-cases the name and maps the 5.0 snake_case aliases onto the legacy names.
fn canonical(name: &str) -> Result<String, String> {
    let l = name.to_lowercase();
    let unknown = || format!("Unknown function '{l}'");
    let mapped = match l.as_str() {
        "to_date" => "todate".to_string(),
        "to_timestamp" => "totimestamp".to_string(),
        "to_unix_timestamp" => "tounixtimestamp".to_string(),
        "current_timestamp" => "currenttimestamp".to_string(),
        "current_date" => "currentdate".to_string(),
        "current_time" => "currenttime".to_string(),
        "current_timeuuid" => "currenttimeuuid".to_string(),
        "min_timeuuid" => "mintimeuuid".to_string(),
        "max_timeuuid" => "maxtimeuuid".to_string(),
        s if s.contains('_') => {
            if let Some(t) = s.strip_prefix("blob_as_") {
                format!("blobas{t}")
            } else if let Some(t) = s.strip_suffix("_as_blob") {
                format!("{t}asblob")
            } else if let Some(t) = s.strip_prefix("cast_as_") {
                format!("castas{t}")
            } else {
                return Err(unknown());
            }
        }
        s => s.to_string(),
    };
    if signatures(&mapped).is_empty() {
        return Err(unknown());
    }
    Ok(mapped)
}

/// Native types that have `<type>AsBlob` / `blobAs<type>` functions, by their name there.
fn blob_type(name: &str) -> Option<ColumnType> {
    match name {
        "blob" => None,
        "varchar" => Some(ColumnType::Varchar),
        other => ColumnType::from_simple_name(other),
    }
}

const NUMERIC: [ColumnType; 9] = [
    ColumnType::Tinyint,
    ColumnType::Smallint,
    ColumnType::Int,
    ColumnType::Bigint,
    ColumnType::Counter,
    ColumnType::Float,
    ColumnType::Double,
    ColumnType::Decimal,
    ColumnType::Varint,
];

type Sig = (Vec<ColumnType>, ColumnType);

fn signatures(f: &str) -> Vec<Sig> {
    use ColumnType as T;
    let one = |a: T, r: T| (vec![a], r);
    match f {
        "now" | "currenttimeuuid" => vec![(vec![], T::Timeuuid)],
        "uuid" => vec![(vec![], T::Uuid)],
        "currenttimestamp" => vec![(vec![], T::Timestamp)],
        "currentdate" => vec![(vec![], T::Date)],
        "currenttime" => vec![(vec![], T::Time)],
        "todate" => vec![one(T::Timestamp, T::Date), one(T::Timeuuid, T::Date)],
        "totimestamp" => vec![one(T::Timeuuid, T::Timestamp), one(T::Date, T::Timestamp)],
        "tounixtimestamp" => vec![
            one(T::Timeuuid, T::Bigint),
            one(T::Date, T::Bigint),
            one(T::Timestamp, T::Bigint),
        ],
        "mintimeuuid" | "maxtimeuuid" => vec![one(T::Timestamp, T::Timeuuid)],
        "floor" => vec![
            (vec![T::Timestamp, T::Duration], T::Timestamp),
            (vec![T::Timestamp, T::Duration, T::Timestamp], T::Timestamp),
            (vec![T::Timeuuid, T::Duration], T::Timestamp),
            (vec![T::Timeuuid, T::Duration, T::Timestamp], T::Timestamp),
            (vec![T::Date, T::Duration], T::Date),
            (vec![T::Date, T::Duration, T::Date], T::Date),
            (vec![T::Time, T::Duration], T::Time),
        ],
        "abs" | "exp" | "log" | "log10" | "round" => {
            NUMERIC.iter().map(|t| one(t.clone(), t.clone())).collect()
        }
        _ => {
            if let Some(t) = f.strip_prefix("blobas").and_then(blob_type) {
                vec![one(T::Blob, t)]
            } else if let Some(t) = f.strip_suffix("asblob").and_then(blob_type) {
                vec![one(t, T::Blob)]
            } else if let Some(to) = f.strip_prefix("castas").and_then(blob_type) {
                let all = [
                    T::Ascii,
                    T::Bigint,
                    T::Boolean,
                    T::Counter,
                    T::Date,
                    T::Decimal,
                    T::Double,
                    T::Float,
                    T::Inet,
                    T::Int,
                    T::Smallint,
                    T::Varchar,
                    T::Time,
                    T::Timestamp,
                    T::Timeuuid,
                    T::Tinyint,
                    T::Uuid,
                    T::Varint,
                ];
                all.into_iter()
                    .filter(|from| *from != to && cast_allowed(from, &to))
                    .map(|from| one(from, to.clone()))
                    .collect()
            } else {
                vec![]
            }
        }
    }
}

/// Whether an argument of type `arg` may be passed where `param` is expected: the same type,
/// or one Cassandra calls value-compatible (anything into blob, ascii into text, ...).
fn accepts(param: &ColumnType, arg: &ColumnType) -> bool {
    use ColumnType as T;
    param == arg
        || matches!(
            (param, arg),
            (T::Blob, _)
                | (T::Varchar, T::Ascii)
                | (T::Bigint, T::Timestamp | T::Counter)
                | (T::Timestamp, T::Bigint)
                | (T::Varint, T::Int | T::Bigint | T::Timestamp)
        )
}

/// Whether `name` is a native function of this module.
pub(crate) fn is_known(name: &str) -> bool {
    canonical(name).is_ok_and(|f| !signatures(&f).is_empty())
}

/// The types the `pos`-th argument of `name` called with `arity` arguments may have, in
/// signature order (to type a literal argument).
pub(crate) fn param_types(name: &str, arity: usize, pos: usize) -> Vec<ColumnType> {
    let Ok(f) = canonical(name) else {
        return Vec::new();
    };
    let mut out: Vec<ColumnType> = Vec::new();
    for (ps, _) in signatures(&f) {
        if ps.len() == arity && !out.contains(&ps[pos]) {
            out.push(ps[pos].clone());
        }
    }
    out
}

/// Cassandra's refusal of a call it cannot resolve because an argument (a bind marker) fits
/// every signature of `name` with `arity` arguments.
pub(crate) fn ambiguous_call(name: &str, arity: usize) -> String {
    let f = canonical(name).unwrap_or_else(|_| name.to_lowercase());
    let sigs: Vec<String> = signatures(&f)
        .iter()
        .filter(|(ps, _)| ps.len() == arity)
        .map(|s| sig_text(&f, s))
        .collect();
    format!(
        "Ambiguous call to function {} (can be matched by following signatures: {}): use type casts to disambiguate",
        name.to_lowercase(),
        sigs.join(", ")
    )
}

fn sig_text(f: &str, (ps, r): &Sig) -> String {
    let ps: Vec<String> = ps.iter().map(ColumnType::cql_name).collect();
    format!("system.{f} : ({}) -> {}", ps.join(", "), r.cql_name())
}

fn resolve(f: &str, args: &[ColumnType]) -> Result<Sig, String> {
    let sigs = signatures(f);
    let arity: Vec<&Sig> = sigs.iter().filter(|(p, _)| p.len() == args.len()).collect();
    let exact: Vec<&Sig> = arity.iter().copied().filter(|(p, _)| p == args).collect();
    if let [s] = exact.as_slice() {
        return Ok((*s).clone());
    }
    let compat: Vec<&Sig> = arity
        .iter()
        .copied()
        .filter(|(p, _)| p.iter().zip(args).all(|(p, a)| accepts(p, a)))
        .collect();
    match compat.as_slice() {
        [s] => Ok((*s).clone()),
        [] if sigs.len() == 1 => {
            let (ps, _) = &sigs[0];
            if ps.len() != args.len() {
                return Err(format!(
                    "Invalid number of arguments in call to function system.{f}: {} required but {} provided",
                    ps.len(),
                    args.len()
                ));
            }
            let (i, (p, a)) = ps
                .iter()
                .zip(args)
                .enumerate()
                .find(|(_, (p, a))| !accepts(p, a))
                .unwrap_or((0, (&ps[0], &args[0])));
            Err(format!(
                "Type error: an argument of type {} cannot be passed as argument {i} of function system.{f} of type {}",
                a.cql_name(),
                p.cql_name()
            ))
        }
        [] => {
            let known: Vec<String> = sigs.iter().map(|s| sig_text(f, s)).collect();
            Err(format!(
                "Invalid call to function {f}, none of its type signatures match (known type signatures: {})",
                known.join(", ")
            ))
        }
        many => {
            let known: Vec<String> = many.iter().map(|s| sig_text(f, s)).collect();
            Err(format!(
                "Ambiguous call to function {f} (can be matched by following signatures: {}): use type casts to disambiguate",
                known.join(", ")
            ))
        }
    }
}

// ---- execution ----------------------------------------------------------------------------

fn execute(
    f: &str,
    params: &[ColumnType],
    ret: &ColumnType,
    vals: &[Option<&[u8]>],
    now_micros: i64,
) -> Result<Option<Vec<u8>>, String> {
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
            return Err(format!(
                "In call to function system.{f}, value 0x{} is not a valid binary representation for type {}",
                hex(b),
                ret.cql_name()
            ));
        }
        return Ok(Some(b.to_vec()));
    }
    if f.ends_with("asblob") {
        return Ok(vals.first().copied().flatten().map(<[u8]>::to_vec));
    }
    if let Some(_to) = f.strip_prefix("castas") {
        return cast(&params[0], ret, vals.first().copied().flatten());
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
        "floor" => floor(arg0, &present)?,
        "abs" | "exp" | "log" | "log10" | "round" => {
            let t = if *arg0 == T::Counter {
                &T::Bigint
            } else {
                arg0
            };
            math(f, t, b0)?
        }
        _ => return Err(format!("Unknown function '{f}'")),
    };
    Ok(Some(out))
}

fn empty_is_null(t: &ColumnType) -> bool {
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

fn i64_of(b: &[u8]) -> Result<i64, String> {
    let a: [u8; 8] = b
        .try_into()
        .map_err(|_| format!("Expected 8 or 0 byte long ({})", b.len()))?;
    Ok(i64::from_be_bytes(a))
}

/// Milliseconds since the epoch of a timestamp, date, timeuuid (or bigint) value.
fn millis_of(ty: &ColumnType, b: &[u8]) -> Result<i64, String> {
    match ty {
        ColumnType::Date => {
            let a: [u8; 4] = b
                .try_into()
                .map_err(|_| format!("Expected 4 byte long for date ({})", b.len()))?;
            Ok((i64::from(u32::from_be_bytes(a)) - DATE_EPOCH) * MILLIS_PER_DAY)
        }
        ColumnType::Timeuuid => timeuuid_millis(b),
        _ => i64_of(b),
    }
}

/// `SimpleDateSerializer.timeInMillisToDay`: whole days, truncated toward zero (a timestamp of
/// -1 ms is 1970-01-01 there too).
fn date_from_millis(ms: i64) -> [u8; 4] {
    let days = ms / MILLIS_PER_DAY + DATE_EPOCH;
    (days.clamp(0, u32::MAX as i64) as u32).to_be_bytes()
}

fn uuid_time(b: &[u8]) -> Result<i64, String> {
    if b.len() != 16 {
        return Err(format!("UUID should be 16 or 0 bytes ({})", b.len()));
    }
    if b[6] >> 4 != 1 {
        return Err("Invalid version for TimeUUID type.".into());
    }
    let t = (u64::from(b[6] & 0x0f) << 56)
        | (u64::from(b[7]) << 48)
        | (u64::from(b[4]) << 40)
        | (u64::from(b[5]) << 32)
        | u64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    Ok(t as i64)
}

/// `TimeUUID.unixTimestamp`: the 100 ns count floored to milliseconds, moved to the Unix epoch.
pub(crate) fn timeuuid_millis(b: &[u8]) -> Result<i64, String> {
    Ok(uuid_time(b)? / 10_000 - UUID_EPOCH_OFFSET / 10_000)
}

fn uuid_from_time(t: i64, lsb: u64) -> [u8; 16] {
    let t = t as u64;
    let mut u = [0u8; 16];
    u[0..4].copy_from_slice(&((t & 0xFFFF_FFFF) as u32).to_be_bytes());
    u[4..6].copy_from_slice(&(((t >> 32) & 0xFFFF) as u16).to_be_bytes());
    u[6..8].copy_from_slice(&((((t >> 48) & 0x0FFF) as u16) | 0x1000).to_be_bytes());
    u[8..16].copy_from_slice(&lsb.to_be_bytes());
    u
}

/// `minTimeuuid` / `maxTimeuuid`: the smallest / largest timeuuid of that millisecond, with
/// Cassandra's fixed clock-and-node bytes (0x80.. for min, 0x7f.. for max).
fn timeuuid_bound(ms: i64, max: bool) -> [u8; 16] {
    if max {
        let t = ms
            .saturating_add(1)
            .saturating_mul(10_000)
            .saturating_sub(1)
            .saturating_add(UUID_EPOCH_OFFSET);
        uuid_from_time(t, 0x7f7f_7f7f_7f7f_7f7f)
    } else {
        let t = ms.saturating_mul(10_000).saturating_add(UUID_EPOCH_OFFSET);
        uuid_from_time(t, 0x8080_8080_8080_8080)
    }
}

static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn random_u64(now_micros: i64) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_i64(now_micros);
    h.write_u64(SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    h.finish()
}

/// A version 1 UUID for `now_micros`; the low bits of the 100 ns count and the clock sequence
/// come from a process-wide counter so two calls in one microsecond still differ.
pub(crate) fn timeuuid_now(now_micros: i64) -> [u8; 16] {
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let t = now_micros
        .saturating_mul(10)
        .saturating_add(UUID_EPOCH_OFFSET)
        .saturating_add((seq % 10) as i64);
    let clock = ((seq >> 4) & 0x3FFF) | 0x8000;
    let node = random_u64(0) & 0xFFFF_FFFF_FFFF | 0x0100_0000_0000;
    uuid_from_time(t, (clock << 48) | node)
}

pub(crate) fn random_uuid(now_micros: i64) -> [u8; 16] {
    let mut u = [0u8; 16];
    u[0..8].copy_from_slice(&random_u64(now_micros).to_be_bytes());
    u[8..16].copy_from_slice(&random_u64(now_micros ^ 0x5555).to_be_bytes());
    u[6] = (u[6] & 0x0F) | 0x40;
    u[8] = (u[8] & 0x3F) | 0x80;
    u
}

// ---- floor --------------------------------------------------------------------------------

pub(crate) fn duration_of(b: &[u8]) -> Result<(i32, i32, i64), String> {
    match decode_value(&ColumnType::Duration, b).map_err(|e| e.to_string())? {
        Value::Duration {
            months,
            days,
            nanos,
        } => Ok((months, days, nanos)),
        _ => Err("Invalid duration value".into()),
    }
}

/// `TimeFcts` floor functions (Duration.floorTimestamp / floorTime).
fn floor(arg0: &ColumnType, vals: &[&[u8]]) -> Result<Vec<u8>, String> {
    let (months, days, nanos) = duration_of(vals[1])?;
    let dur = format_duration(months, days, nanos);
    if months < 0 || days < 0 || nanos < 0 {
        return Err("Negative durations are not supported by the floor function".into());
    }
    match arg0 {
        ColumnType::Time => {
            if months != 0 || days != 0 || nanos > NANOS_PER_DAY {
                return Err("For time values, the floor can only be computed for durations smaller that a day".into());
            }
            let t = i64_of(vals[0])?;
            let out = if nanos == 0 { t } else { t - t % nanos };
            Ok(out.to_be_bytes().to_vec())
        }
        ColumnType::Date => {
            if nanos != 0 {
                return Err(format!("The floor on date values cannot be computed for the {dur} duration as precision is below 1 day"));
            }
            let t = millis_of(arg0, vals[0])?;
            let start = match vals.get(2) {
                Some(s) => millis_of(arg0, s)?,
                None => 0,
            };
            let ms = floor_timestamp(t, months, days, nanos, start)?;
            Ok(date_from_millis(ms).to_vec())
        }
        _ => {
            if nanos % NANOS_PER_MILLI != 0 {
                return Err(format!("The floor on timestamp values cannot be computed for the {dur} duration as precision is below 1 millisecond"));
            }
            let t = millis_of(arg0, vals[0])?;
            let start = match vals.get(2) {
                Some(s) => i64_of(s)?,
                None => 0,
            };
            Ok(floor_timestamp(t, months, days, nanos, start)?
                .to_be_bytes()
                .to_vec())
        }
    }
}

fn floor_timestamp(t: i64, months: i32, days: i32, nanos: i64, start: i64) -> Result<i64, String> {
    if start > t {
        return Err("The floor function starting time is greater than the provided time".into());
    }
    let dur_ms = i64::from(days)
        .saturating_mul(MILLIS_PER_DAY)
        .saturating_add(nanos / NANOS_PER_MILLI);
    if months == 0 {
        if dur_ms == 0 {
            return Ok(t);
        }
        return Ok(t - (t.wrapping_sub(start)) % dur_ms);
    }
    let (y, m) = year_month(t);
    let (sy, sm) = year_month(start);
    let in_months = (y - sy) * 12 + (m - sm);
    let mut multiplier = in_months / i64::from(months);
    let mut cal = add_months(start, multiplier * i64::from(months));
    if days == 0 && nanos == 0 {
        return Ok(cal);
    }
    let mut floor = cal.saturating_add(multiplier.saturating_mul(dur_ms));
    while floor > t && multiplier > 0 {
        multiplier -= 1;
        cal = add_months(cal, -i64::from(months));
        floor = cal.saturating_add(multiplier.saturating_mul(dur_ms));
    }
    Ok(start.max(floor))
}

// ---- math ---------------------------------------------------------------------------------

/// Java's `Math.round(double)`: floor(x + 0.5) without the double rounding of `x + 0.5`.
fn java_round(x: f64) -> i64 {
    if x.is_nan() {
        return 0;
    }
    let f = x.floor();
    let r = if x - f >= 0.5 { f + 1.0 } else { f };
    r as i64
}

/// The 5.0 math functions (`MathFcts`): the result has the argument's type; integer types
/// compute in double and narrow like Java's casts.
fn math(f: &str, ty: &ColumnType, b: &[u8]) -> Result<Vec<u8>, String> {
    use ColumnType as T;
    let n = Num::decode(ty, b)?;
    let dbl = |x: f64| -> f64 {
        match f {
            "exp" => x.exp(),
            "log" => x.ln(),
            _ => x.log10(),
        }
    };
    Ok(match (&n, f) {
        (Num::I(i), "abs") => Num::I(i.wrapping_abs()).convert(ty)?,
        (Num::I(_), "round") => b.to_vec(),
        (Num::I(i), _) => {
            let r = dbl(*i as f64);
            match ty {
                T::Tinyint => vec![(r as i32) as i8 as u8],
                T::Smallint => ((r as i32) as i16).to_be_bytes().to_vec(),
                T::Int => (r as i32).to_be_bytes().to_vec(),
                _ => (r as i64).to_be_bytes().to_vec(),
            }
        }
        (Num::F32(x), _) => {
            let r = match f {
                "abs" => x.abs(),
                // Math.round(float) returns an int.
                "round" => {
                    if x.is_nan() {
                        0.0
                    } else {
                        (f64::from(*x) + 0.5).floor() as i32 as f32
                    }
                }
                _ => dbl(f64::from(*x)) as f32,
            };
            r.to_be_bytes().to_vec()
        }
        (Num::F64(x), _) => {
            let r = match f {
                "abs" => x.abs(),
                "round" => java_round(*x) as f64,
                _ => dbl(*x),
            };
            r.to_be_bytes().to_vec()
        }
        (Num::Var(v), "abs") => v.abs().to_twos(),
        (Num::Var(_), "round") => b.to_vec(),
        (Num::Var(v), _) => {
            let x = num_bigint::BigInt::from_signed_bytes_be(&v.to_twos());
            crate::decmath::varint(f, &x)?.to_signed_bytes_be()
        }
        (Num::Dec { unscaled, scale }, "abs") => encode_decimal(&unscaled.abs(), *scale),
        (Num::Dec { unscaled, scale }, "round") => {
            let (u, s) = round_half_up(unscaled, *scale);
            encode_decimal(&u, s)
        }
        (Num::Dec { .. }, _) => {
            let x = crate::decmath::Dec::decode(b).ok_or("Invalid decimal value")?;
            crate::decmath::decimal(f, &x)?.encode()
        }
    })
}

/// `BigDecimal.setScale(0, HALF_UP)`.
fn round_half_up(u: &BigInt, scale: i32) -> (BigInt, i32) {
    if scale <= 0 {
        let mut m = u.clone();
        for _ in 0..(-(scale as i64)).min(4096) {
            m = m.mul_small(10, 0);
        }
        return (m, 0);
    }
    let mut q = BigInt {
        neg: false,
        mag: u.mag.clone(),
    };
    // HALF_UP looks only at the first discarded digit (the last one divided off).
    let mut last = 0u32;
    for i in 0..scale {
        let (nq, r) = q.divrem_small(10);
        q = nq;
        if i == scale - 1 {
            last = r;
        } else if q.is_zero() {
            // The remaining (leading) fractional digits are zeros.
            break;
        }
    }
    if last >= 5 {
        q = q.mul_small(1, 1);
    }
    q.neg = u.neg && !q.is_zero();
    (q, 0)
}

pub(crate) use crate::bigint::{decimal_string, parse_decimal, BigInt};
pub(crate) use crate::javafmt::*;
use crate::num::{encode_decimal, Num};
use crate::temporal::{add_months, year_month};

/// Serialized form of a typed value (tests build their arguments with it).
#[cfg(test)]
fn bytes_of(v: &Value) -> Vec<u8> {
    proto::value::to_bytes(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::temporal::days_from_civil;
    use ColumnType as T;

    const NOW: i64 = 1_704_067_200_000_000; // 2024-01-01T00:00:00Z in µs

    fn run(name: &str, args: Vec<(T, Option<Vec<u8>>)>) -> Result<Option<Vec<u8>>, String> {
        call_at(name, &args, NOW)
    }

    fn ok(name: &str, args: Vec<(T, Option<Vec<u8>>)>) -> Vec<u8> {
        run(name, args)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .unwrap_or_else(|| panic!("{name}: null"))
    }

    fn ts(ms: i64) -> (T, Option<Vec<u8>>) {
        (T::Timestamp, Some(ms.to_be_bytes().to_vec()))
    }

    fn text_of(from: T, v: Value) -> String {
        let out = cast(&from, &T::Varchar, Some(&bytes_of(&v)))
            .unwrap()
            .unwrap();
        String::from_utf8(out).unwrap()
    }

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len() / 2)
            .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
            .collect()
    }

    // 2024-01-01 10:00:00 UTC
    const T1000: i64 = 1_704_103_200_000;

    #[test]
    fn time_functions_match_cassandra() {
        // Cassandra 5.0.9: toDate('2024-01-01 10:00:00+0000') = 0x80004d0b.
        assert_eq!(ok("toDate", vec![ts(T1000)]), unhex("80004d0b"));
        assert_eq!(ok("to_date", vec![ts(T1000)]), unhex("80004d0b"));
        // toDate((timestamp)-1) = 0x80000000 and -86400001 = 0x7fffffff (truncation).
        assert_eq!(ok("todate", vec![ts(-1)]), unhex("80000000"));
        assert_eq!(ok("todate", vec![ts(-86_400_001)]), unhex("7fffffff"));
        // toTimestamp((date)'2024-01-02') = toUnixTimestamp(...) = 0x0000018cc7785000.
        let d = (T::Date, Some(unhex("80004d0c")));
        assert_eq!(
            ok("toTimestamp", vec![d.clone()]),
            unhex("0000018cc7785000")
        );
        assert_eq!(ok("toUnixTimestamp", vec![d]), unhex("0000018cc7785000"));
        assert_eq!(
            return_type("tounixtimestamp", &[T::Timestamp]).unwrap(),
            T::Bigint
        );
        // CAST(4e52d000-6d1f-11e2-8080-808080808080 AS timestamp) = 0x0000013c9a592900.
        let tu = (T::Timeuuid, Some(unhex("4e52d0006d1f11e28080808080808080")));
        assert_eq!(ok("totimestamp", vec![tu]), unhex("0000013c9a592900"));
        // minTimeuuid('2013-02-02 10:00+0000') / maxTimeuuid(...).
        let ms = 1_359_799_200_000;
        assert_eq!(
            ok("minTimeuuid", vec![ts(ms)]),
            unhex("4e52d0006d1f11e28080808080808080")
        );
        assert_eq!(
            ok("maxtimeuuid", vec![ts(ms)]),
            unhex("4e52f70f6d1f11e27f7f7f7f7f7f7f7f")
        );
        assert_eq!(
            ok("maxTimeuuid", vec![ts(-1)]),
            unhex("13813fff1dd211b27f7f7f7f7f7f7f7f")
        );
        // floor((timestamp)'2024-01-01 10:17:00', 1h) = 0x0000018cc4774500.
        let hour = (
            T::Duration,
            Some(bytes_of(&Value::Duration {
                months: 0,
                days: 0,
                nanos: 3_600_000_000_000,
            })),
        );
        assert_eq!(
            ok("floor", vec![ts(T1000 + 17 * 60_000), hour]),
            unhex("0000018cc4774500")
        );
        // floor((date)'2024-03-15', 1mo) = 0x80004d47; floor((time)'10:17:23', 10m).
        let month = (
            T::Duration,
            Some(bytes_of(&Value::Duration {
                months: 1,
                days: 0,
                nanos: 0,
            })),
        );
        let d = days_from_civil(2024, 3, 15) + DATE_EPOCH;
        assert_eq!(
            ok(
                "floor",
                vec![(T::Date, Some((d as u32).to_be_bytes().to_vec())), month]
            ),
            unhex("80004d47")
        );
        let ten_min = (
            T::Duration,
            Some(bytes_of(&Value::Duration {
                months: 0,
                days: 0,
                nanos: 600_000_000_000,
            })),
        );
        let t = (10 * 3600 + 17 * 60 + 23) * 1_000_000_000i64;
        assert_eq!(
            ok(
                "floor",
                vec![(T::Time, Some(t.to_be_bytes().to_vec())), ten_min]
            ),
            unhex("0000214999ffb000")
        );
        // floor('2024-03-15 10:17', 2h, '2024-03-15 09:00') = 0x0000018e4156ee80.
        let two_h = (
            T::Duration,
            Some(bytes_of(&Value::Duration {
                months: 0,
                days: 0,
                nanos: 7_200_000_000_000,
            })),
        );
        let base = days_from_civil(2024, 3, 15) * MILLIS_PER_DAY;
        assert_eq!(
            ok(
                "floor",
                vec![
                    ts(base + 10 * 3_600_000 + 17 * 60_000),
                    two_h,
                    ts(base + 9 * 3_600_000)
                ]
            ),
            unhex("0000018e4156ee80")
        );
    }

    #[test]
    fn clock_functions() {
        assert_eq!(ok("currentTimestamp", vec![]), (NOW / 1000).to_be_bytes());
        assert_eq!(ok("current_date", vec![]), unhex("80004d0b"));
        assert_eq!(ok("currenttime", vec![]), 0i64.to_be_bytes());
        let a = ok("now", vec![]);
        let b = ok("currentTimeUUID", vec![]);
        assert_ne!(a, b);
        assert_eq!(timeuuid_millis(&a).unwrap(), NOW / 1000);
        validate_value(&T::Timeuuid, &a).unwrap();
        let u = ok("uuid", vec![]);
        assert_eq!(u[6] >> 4, 4);
        assert_ne!(u, ok("uuid", vec![]));
    }

    #[test]
    fn removed_and_unknown_functions() {
        // Cassandra 5.0.9: "Unknown function 'dateof'".
        assert_eq!(
            return_type("dateOf", &[T::Timeuuid]).unwrap_err(),
            "Unknown function 'dateof'"
        );
        assert!(return_type("unixTimestampOf", &[T::Timeuuid]).is_err());
        assert!(return_type("ceil", &[T::Double]).is_err());
        assert!(return_type("blobAsBlob", &[T::Blob]).is_err());
        assert!(return_type("to_da_te", &[T::Timestamp]).is_err());
        let e = return_type("toDate", &[T::Blob]).unwrap_err();
        assert!(e.starts_with("Invalid call to function todate, none of its type signatures match (known type signatures: system.todate : (timestamp) -> date"), "{e}");
    }

    #[test]
    fn blob_conversions() {
        // intAsBlob(1) = 0x00000001; blobAsInt takes any argument (blob accepts all types).
        assert_eq!(
            ok("intAsBlob", vec![(T::Int, Some(vec![0, 0, 0, 1]))]),
            [0, 0, 0, 1]
        );
        assert_eq!(return_type("blobAsInt", &[T::Int]).unwrap(), T::Int);
        assert_eq!(
            return_type("blob_as_varchar", &[T::Blob]).unwrap(),
            T::Varchar
        );
        assert_eq!(return_type("varcharasblob", &[T::Ascii]).unwrap(), T::Blob);
        assert_eq!(return_type("bigintAsBlob", &[T::Bigint]).unwrap(), T::Blob);
        assert!(return_type("bigintAsBlob", &[T::Int]).is_err());
        assert!(return_type("asciiAsBlob", &[T::Varchar]).is_err());
        assert_eq!(
            ok("textasblob", vec![(T::Varchar, Some(b"a".to_vec()))]),
            b"a"
        );
        assert_eq!(ok("blobAsText", vec![(T::Blob, Some(b"a".to_vec()))]), b"a");
        // "In call to function system.blobasint, value 0x0001 is not a valid binary
        // representation for type int"
        assert_eq!(
            run("blobAsInt", vec![(T::Blob, Some(vec![0, 1]))]).unwrap_err(),
            "In call to function system.blobasint, value 0x0001 is not a valid binary representation for type int"
        );
        assert!(run("blobAsText", vec![(T::Blob, Some(vec![0xff]))]).is_err());
        assert!(run("blobAsTimeuuid", vec![(T::Blob, Some(vec![0; 16]))]).is_err());
        // blobAsBoolean(0x02) passes the byte through; empty blobs stay empty.
        assert_eq!(ok("blobAsBoolean", vec![(T::Blob, Some(vec![2]))]), [2]);
        assert_eq!(
            ok("blobAsInt", vec![(T::Blob, Some(vec![]))]),
            Vec::<u8>::new()
        );
        assert_eq!(run("blobAsInt", vec![(T::Blob, None)]).unwrap(), None);
        assert_eq!(
            ok("durationAsBlob", vec![(T::Duration, Some(vec![2, 4, 0]))]),
            [2, 4, 0]
        );
    }

    #[test]
    fn math_matches_cassandra() {
        let int = |x: i32| (T::Int, Some(x.to_be_bytes().to_vec()));
        let dbl = |x: f64| (T::Double, Some(x.to_be_bytes().to_vec()));
        let flt = |x: f32| (T::Float, Some(x.to_be_bytes().to_vec()));
        // abs(-3) = 3, log(10) = 2, log10(1000) = 3, exp((int)1) = 2 (int results).
        assert_eq!(ok("abs", vec![int(-3)]), 3i32.to_be_bytes());
        assert_eq!(ok("abs", vec![int(i32::MIN)]), i32::MIN.to_be_bytes());
        assert_eq!(ok("log", vec![int(10)]), 2i32.to_be_bytes());
        assert_eq!(ok("log10", vec![int(1000)]), 3i32.to_be_bytes());
        assert_eq!(ok("exp", vec![int(1)]), 2i32.to_be_bytes());
        // log((int)-1) = 0 (NaN -> 0), log10((int)0) = Integer.MIN_VALUE.
        assert_eq!(ok("log", vec![int(-1)]), 0i32.to_be_bytes());
        assert_eq!(ok("log10", vec![int(0)]), i32::MIN.to_be_bytes());
        // exp((tinyint)5) = 0x94, exp((smallint)20) = 0x088b.
        assert_eq!(ok("exp", vec![(T::Tinyint, Some(vec![5]))]), [0x94]);
        assert_eq!(
            ok("exp", vec![(T::Smallint, Some(vec![0, 20]))]),
            [0x08, 0x8b]
        );
        assert_eq!(ok("abs", vec![(T::Tinyint, Some(vec![0x80]))]), [0x80]);
        // exp(1.0) = 0x4005bf0a8b145769, round(2.5) = 3.0, round(-2.5) = -2.0, round(-2.6) = -3.0.
        assert_eq!(ok("exp", vec![dbl(1.0)]), unhex("4005bf0a8b145769"));
        assert_eq!(ok("round", vec![dbl(2.5)]), 3.0f64.to_be_bytes());
        assert_eq!(ok("round", vec![dbl(-2.5)]), (-2.0f64).to_be_bytes());
        assert_eq!(ok("round", vec![dbl(-2.6)]), (-3.0f64).to_be_bytes());
        assert_eq!(
            ok("round", vec![dbl(0.499_999_999_999_999_94)]),
            0.0f64.to_be_bytes()
        );
        assert_eq!(ok("log", vec![dbl(0.0)]), unhex("fff0000000000000"));
        // exp((float)1) = 0x402df854, round((float)2.5) = 3.0, round((float)-2.5) = -2.0.
        assert_eq!(ok("exp", vec![flt(1.0)]), unhex("402df854"));
        assert_eq!(ok("round", vec![flt(2.5)]), 3.0f32.to_be_bytes());
        assert_eq!(ok("round", vec![flt(-2.5)]), (-2.0f32).to_be_bytes());
        assert_eq!(ok("log10", vec![flt(100.0)]), 2.0f32.to_be_bytes());
        // round((decimal)2.5) = 3 and -2.5 = -3 (HALF_UP, scale 0); abs((decimal)-1.5) = 1.5.
        let dec = |s: &str| {
            let (u, sc) = parse_decimal(s).unwrap();
            (T::Decimal, Some(encode_decimal(&u, sc)))
        };
        assert_eq!(ok("round", vec![dec("2.5")]), unhex("0000000003"));
        assert_eq!(ok("round", vec![dec("-2.5")]), unhex("00000000fd"));
        assert_eq!(ok("round", vec![dec("2.49")]), unhex("0000000002"));
        assert_eq!(ok("abs", vec![dec("-1.5")]), unhex("000000010f"));
        assert_eq!(
            ok("exp", vec![dec("1")]),
            unhex("0000001f0157186c479195440111682f25b7")
        );
        // varint: abs(-5) = 5, exp(2) = 7, log(100) = 4; counter abs(-3) = 3.
        assert_eq!(ok("abs", vec![(T::Varint, Some(vec![0xfb]))]), [5]);
        assert_eq!(ok("exp", vec![(T::Varint, Some(vec![2]))]), [7]);
        assert_eq!(ok("log", vec![(T::Varint, Some(vec![100]))]), [4]);
        assert_eq!(
            run("log", vec![(T::Varint, Some(vec![0]))]).unwrap_err(),
            "java.lang.ArithmeticException: Natural log of number zero or less"
        );
        assert_eq!(
            ok(
                "abs",
                vec![(T::Counter, Some((-3i64).to_be_bytes().to_vec()))]
            ),
            3i64.to_be_bytes()
        );
        assert_eq!(return_type("abs", &[T::Counter]).unwrap(), T::Counter);
        assert_eq!(run("abs", vec![(T::Int, Some(vec![]))]).unwrap(), None);
        assert_eq!(run("abs", vec![(T::Int, None)]).unwrap(), None);
    }

    #[test]
    fn numeric_casts_match_cassandra() {
        let c = |from: T, b: Vec<u8>, to: T| cast(&from, &to, Some(&b)).unwrap().unwrap();
        let dbl = |x: f64| x.to_be_bytes().to_vec();
        // CAST((double)1e300 AS int) = 0x7fffffff, AS tinyint = 0xff, 300.7 AS tinyint = 0x2c,
        // (bigint)300 AS tinyint = 0x2c, NaN AS int = 0.
        assert_eq!(c(T::Double, dbl(1e300), T::Int), unhex("7fffffff"));
        assert_eq!(c(T::Double, dbl(1e300), T::Tinyint), unhex("ff"));
        assert_eq!(c(T::Double, dbl(300.7), T::Tinyint), unhex("2c"));
        assert_eq!(
            c(T::Bigint, 300i64.to_be_bytes().to_vec(), T::Tinyint),
            unhex("2c")
        );
        assert_eq!(c(T::Double, dbl(f64::NAN), T::Int), unhex("00000000"));
        // (double)1e300 AS varint = 0x7fffffffffffffff (via longValue).
        assert_eq!(
            c(T::Double, dbl(1e300), T::Varint),
            unhex("7fffffffffffffff")
        );
        // (decimal)1.9 AS int = 1, -1.9 = -1.
        let dec = |s: &str| {
            let (u, sc) = parse_decimal(s).unwrap();
            encode_decimal(&u, sc)
        };
        assert_eq!(c(T::Decimal, dec("1.9"), T::Int), unhex("00000001"));
        assert_eq!(c(T::Decimal, dec("-1.9"), T::Int), unhex("ffffffff"));
        // 123456789012345678901234567.9 AS varint / bigint = 0xf158f2a82c9f4b87; AS double.
        let big = dec("123456789012345678901234567.9");
        assert_eq!(
            c(T::Decimal, big.clone(), T::Varint),
            unhex("f158f2a82c9f4b87")
        );
        assert_eq!(
            c(T::Decimal, big.clone(), T::Bigint),
            unhex("f158f2a82c9f4b87")
        );
        assert_eq!(c(T::Decimal, big, T::Double), unhex("455987bf7c563caa"));
        // varint 123456789012345678901234567890 AS int = 0x4e3f0ad2.
        let v = BigInt::parse("123456789012345678901234567890")
            .unwrap()
            .to_twos();
        assert_eq!(c(T::Varint, v, T::Int), unhex("4e3f0ad2"));
        // (double)-1.5e300 AS float = -Infinity; (float)0.1 AS double = 0x3fb99999a0000000.
        assert_eq!(c(T::Double, dbl(-1.5e300), T::Float), unhex("ff800000"));
        assert_eq!(
            c(T::Float, 0.1f32.to_be_bytes().to_vec(), T::Double),
            unhex("3fb99999a0000000")
        );
        // Decimal targets: (float)5.2 -> 5.2 (0000000134), (double)6.3 -> 000000013f,
        // (bigint)4 -> 0000000004, (double)1e10 -> fffffff70a (1.0E10: unscaled 10, scale -9).
        assert_eq!(
            c(T::Float, 5.2f32.to_be_bytes().to_vec(), T::Decimal),
            unhex("0000000134")
        );
        assert_eq!(c(T::Double, dbl(6.3), T::Decimal), unhex("000000013f"));
        assert_eq!(
            c(T::Bigint, 4i64.to_be_bytes().to_vec(), T::Decimal),
            unhex("0000000004")
        );
        assert_eq!(c(T::Double, dbl(1e10), T::Decimal), unhex("fffffff70a"));
        assert!(cast(&T::Double, &T::Decimal, Some(&dbl(f64::NAN))).is_err());
        assert_eq!(c(T::Smallint, vec![0, 5], T::Varint), [5]);
        assert_eq!(c(T::Varint, vec![5], T::Decimal), unhex("0000000005"));
        assert_eq!(
            c(T::Counter, 2i64.to_be_bytes().to_vec(), T::Float),
            2.0f32.to_be_bytes()
        );
    }

    #[test]
    fn casts_to_text_match_cassandra() {
        // CastFctsTest / Cassandra 5.0.9 outputs.
        assert_eq!(
            text_of(T::Timestamp, Value::Timestamp(T1000 - 10 * 3_600_000)),
            "2024-01-01T00:00:00.000Z"
        );
        assert_eq!(
            text_of(T::Timestamp, Value::Timestamp(-1)),
            "1969-12-31T23:59:59.999Z"
        );
        assert_eq!(
            text_of(
                T::Timestamp,
                Value::Timestamp(days_from_civil(10000, 1, 1) * MILLIS_PER_DAY)
            ),
            "+10000-01-01T00:00:00.000Z"
        );
        assert_eq!(
            text_of(T::Date, Value::Date((DATE_EPOCH + 19723) as u32)),
            "2024-01-01"
        );
        assert_eq!(
            text_of(T::Time, Value::Time(3_723_000_000_000)),
            "01:02:03.000000000"
        );
        assert_eq!(text_of(T::Boolean, Value::Boolean(true)), "true");
        assert_eq!(
            text_of(T::Inet, Value::Inet("1.2.3.4".parse().unwrap())),
            "1.2.3.4"
        );
        assert_eq!(
            text_of(T::Inet, Value::Inet("::1".parse().unwrap())),
            "0:0:0:0:0:0:0:1"
        );
        assert_eq!(
            text_of(
                T::Uuid,
                Value::Uuid(
                    unhex("62c3609282a13a0093d146196ee77204")
                        .try_into()
                        .unwrap()
                )
            ),
            "62c36092-82a1-3a00-93d1-46196ee77204"
        );
        for (d, s) in [
            (1e7, "1.0E7"),
            (1e-3, "0.001"),
            (1.0e-4, "1.0E-4"),
            (123_456_789.125, "1.23456789125E8"),
            (9_999_999.0, "9999999.0"),
            (-0.0, "-0.0"),
            (123_123.0, "123123.0"),
            (123_123.123_123, "123123.123123"),
            (6.3, "6.3"),
            (5.0e20, "5.0E20"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
        ] {
            assert_eq!(text_of(T::Double, Value::Double(d)), s);
        }
        assert_eq!(text_of(T::Float, Value::Float(5.2)), "5.2");
        assert_eq!(text_of(T::Float, Value::Float(1e10)), "1.0E10");
        // JDK FloatingDecimal's integer fast path (Cassandra 5.0.9 on Java 17).
        assert_eq!(
            text_of(T::Float, Value::Float(1_795_245_023.0)),
            "1.79524506E9"
        );
        assert_eq!(
            text_of(T::Double, Value::Double(282_879_384_806_159_000.0)),
            "2.82879384806159008E17"
        );
        assert_eq!(
            text_of(T::Double, Value::Double(123_456_789_012_345_678.0)),
            "1.2345678901234568E17"
        );
        assert_eq!(text_of(T::Double, Value::Double(1e17)), "1.0E17");
        assert_eq!(text_of(T::Float, Value::Float(33_554_432.0)), "3.3554432E7");
        assert_eq!(text_of(T::Float, Value::Float(16_777_216.0)), "1.6777216E7");
        assert_eq!(text_of(T::Float, Value::Float(1e20)), "1.0E20");
        assert_eq!(text_of(T::Float, Value::Float(0.1)), "0.1");
        assert_eq!(
            text_of(T::Float, Value::Float(3.402_823_5e38)),
            "3.4028235E38"
        );
        assert_eq!(text_of(T::Double, Value::Double(4.9e-324)), "4.9E-324");
        assert_eq!(text_of(T::Float, Value::Float(1.4e-45)), "1.4E-45");
        for s in [
            "1.23E-12",
            "1E+3",
            "1E-7",
            "123.4500",
            "-0.000001",
            "123123.123123",
            "0",
            "-5",
        ] {
            let (u, sc) = parse_decimal(s).unwrap();
            let b = encode_decimal(&u, sc);
            let out = cast(&T::Decimal, &T::Ascii, Some(&b)).unwrap().unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), s);
        }
        let (u, sc) = parse_decimal("0.0000001").unwrap();
        assert_eq!(decimal_string(&u, sc), "1E-7");
        for s in [
            "123456789012345678901234567890",
            "-1",
            "0",
            "-123456789012345678901234567890",
            "4294967296",
            "-2147483648",
        ] {
            let b = BigInt::parse(s).unwrap().to_twos();
            assert_eq!(text_of(T::Varint, Value::Varint(b.clone())), s);
            assert_eq!(BigInt::from_twos(&b).to_twos(), b);
        }
        assert_eq!(text_of(T::Tinyint, Value::Tinyint(-5)), "-5");
        assert_eq!(text_of(T::Counter, Value::Counter(5)), "5");
        assert_eq!(text_of(T::Ascii, Value::Ascii("test".into())), "test");
        assert_eq!(cast(&T::Int, &T::Varchar, Some(&[])).unwrap(), None);
        assert_eq!(cast(&T::Int, &T::Varchar, None).unwrap(), None);
    }

    #[test]
    fn cast_rules() {
        // "a cannot be cast to boolean"
        assert_eq!(cast_error("a", &T::Boolean), "a cannot be cast to boolean");
        // Value-compatible sources cast as the type they pass for; several are ambiguous.
        assert_eq!(
            cast_source("ts", &T::Timestamp, &T::Varint, "varint"),
            Ok(T::Bigint)
        );
        assert_eq!(
            cast_source("b", &T::Bigint, &T::Date, "date"),
            Ok(T::Timestamp)
        );
        assert!(cast_source("ts", &T::Timestamp, &T::Int, "int")
            .unwrap_err()
            .starts_with("Ambiguous call to function system.cast_as_int (can be matched by following signatures: "));
        assert_eq!(
            cast_source("i", &T::Int, &T::Varchar, "varchar"),
            Err("i cannot be cast to varchar".to_string())
        );
        // A target with cast functions names the one whose signatures did not match.
        assert!(cast_error("m", &T::Int).starts_with(
            "Invalid call to function system.cast_as_int, none of its type signatures match (known type signatures: system.cast_as_int : ("
        ));
        assert!(cast(&T::Int, &T::Boolean, Some(&[0, 0, 0, 1])).is_err());
        assert!(cast(&T::Blob, &T::Varchar, Some(&[1])).is_err());
        assert!(cast(&T::Varchar, &T::Ascii, Some(b"a")).is_err());
        assert!(!cast_allowed(&T::Uuid, &T::Blob));
        assert!(!cast_allowed(&T::Timestamp, &T::Int));
        // Identity casts and their column names: CAST(c AS int) on an int is just "c".
        assert_eq!(cast(&T::Blob, &T::Blob, Some(&[1])).unwrap(), Some(vec![1]));
        assert_eq!(cast_column_name("c", &T::Int, &T::Int), "c");
        assert_eq!(
            cast_column_name("b", &T::Smallint, &T::Int),
            "cast(b as int)"
        );
        assert_eq!(
            cast_column_name("t_int", &T::Int, &T::Varchar),
            "cast(t_int as text)"
        );
        // timeuuid/timestamp/date conversions.
        let tu = unhex("4e52d0006d1f11e28080808080808080");
        assert_eq!(
            cast(&T::Timeuuid, &T::Timestamp, Some(&tu))
                .unwrap()
                .unwrap(),
            unhex("0000013c9a592900")
        );
        assert_eq!(
            cast(&T::Timestamp, &T::Date, Some(&T1000.to_be_bytes()))
                .unwrap()
                .unwrap(),
            unhex("80004d0b")
        );
        assert_eq!(
            cast(&T::Date, &T::Timestamp, Some(&unhex("80004d0b")))
                .unwrap()
                .unwrap(),
            unhex("0000018cc251f400")
        );
        assert_eq!(
            cast(&T::Timestamp, &T::Bigint, Some(&T1000.to_be_bytes()))
                .unwrap()
                .unwrap(),
            T1000.to_be_bytes()
        );
        assert_eq!(
            cast(&T::Ascii, &T::Varchar, Some(b"abc")).unwrap().unwrap(),
            b"abc"
        );
        assert_eq!(return_type("cast_as_int", &[T::Smallint]).unwrap(), T::Int);
        assert_eq!(return_type("castAsText", &[T::Inet]).unwrap(), T::Varchar);
    }

    #[test]
    fn names() {
        assert_eq!(column_name("toDate", &["t".into()]), "system.todate(t)");
        assert_eq!(
            column_name("blobAsText", &["system.textasblob(x)".into()]),
            "system.blobastext(system.textasblob(x))"
        );
        assert_eq!(
            column_name("floor", &["t".into(), "1h".into()]),
            "system.floor(t, 1h)"
        );
        assert_eq!(format_duration(13, 2, 36_300_000_000_000), "1y1mo2d10h5m");
        assert_eq!(format_duration(0, 0, 12_000), "12us");
        assert_eq!(format_duration(0, -3, 0), "-3d");
    }

    #[test]
    fn garbage_never_panics() {
        let names = [
            "todate",
            "totimestamp",
            "tounixtimestamp",
            "floor",
            "abs",
            "exp",
            "log",
            "log10",
            "round",
            "blobasint",
            "mintimeuuid",
        ];
        let types = [
            T::Timestamp,
            T::Date,
            T::Timeuuid,
            T::Time,
            T::Duration,
            T::Int,
            T::Decimal,
            T::Varint,
            T::Float,
            T::Blob,
            T::Tinyint,
        ];
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        for i in 0..20_000usize {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let len = (seed % 20) as usize;
            let b: Vec<u8> = (0..len).map(|j| (seed >> (j % 8 * 8)) as u8).collect();
            let t = types[i % types.len()].clone();
            let name = names[(i / types.len()) % names.len()];
            let mut args = vec![(t.clone(), Some(b.clone()))];
            if name == "floor" {
                args.push((T::Duration, Some(b.clone())));
            }
            let _ = call_at(name, &args, NOW);
            for to in [
                T::Varchar,
                T::Int,
                T::Decimal,
                T::Varint,
                T::Double,
                T::Date,
                T::Timestamp,
                T::Tinyint,
            ] {
                let _ = cast(&t, &to, Some(&b));
            }
        }
    }
}
