//! The function registry: each native function's canonical name (the 5.0 snake_case aliases
//! mapped onto the legacy names), its type signatures, and the resolution of a call against
//! them with Cassandra's messages for an unknown, mistyped or ambiguous call.

use crate::types::cql_type_name;
use proto::types::ColumnType;

use super::cast_allowed;

/// Lower-cases the name and maps the 5.0 snake_case aliases onto the legacy names.
pub(super) fn canonical(name: &str) -> Result<String, String> {
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

pub(crate) type Sig = (Vec<ColumnType>, ColumnType);

pub(super) fn signatures(f: &str) -> Vec<Sig> {
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
pub(crate) fn accepts(param: &ColumnType, arg: &ColumnType) -> bool {
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

/// Every signature of the native function `name` (any case, or a 5.0 alias), in
/// registration order; None for a name this module does not know.
pub(crate) fn signatures_of(name: &str) -> Option<Vec<Sig>> {
    canonical(name).ok().map(|f| signatures(&f))
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

pub(crate) fn sig_text(f: &str, (ps, r): &Sig) -> String {
    let ps: Vec<String> = ps.iter().map(cql_type_name).collect();
    format!("system.{f} : ({}) -> {}", ps.join(", "), cql_type_name(r))
}

pub(super) fn resolve(f: &str, args: &[ColumnType]) -> Result<Sig, String> {
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
                cql_type_name(a),
                cql_type_name(p)
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
