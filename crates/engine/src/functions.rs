//! Native function calls inside terms (`VALUES (now(), toTimestamp(now()))`,
//! `WHERE t > currentTimestamp()`): each argument is typed by the function's signature, and the
//! call is evaluated by the one native function evaluator (`scalar::call_at`) at the
//! statement's clock. A plan holding such a call is volatile: rebuilt at each execution.
//!
//! `fromJson(text)` and `toJson(any)` live here too (Cassandra's `FromJsonFct`/`ToJsonFct`):
//! their types come from the receiver and the argument rather than a signature table, so
//! `scalar` does not know them. [`eval`] is the one evaluator of a typed call for selectors.

use crate::literal::const_term;
use crate::{EngineError, Now};
use cql::ast::{Literal, Term};
use proto::error::DbError;
use proto::types::ColumnType;

/// A value with its type (null as None), as functions take their arguments.
type TypedValue = (ColumnType, Option<Vec<u8>>);

/// `fromJson` or `toJson`, under either of their 5.0 names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JsonFn {
    From,
    To,
}

/// Which JSON function `name` calls, if it is one.
pub(crate) fn json_fn(name: &str) -> Option<JsonFn> {
    // No allocation: this runs for every evaluated call of a selector.
    let is = |n: &str| name.eq_ignore_ascii_case(n);
    if is("fromjson") || is("from_json") {
        Some(JsonFn::From)
    } else if is("tojson") || is("to_json") {
        Some(JsonFn::To)
    } else {
        None
    }
}

/// Cassandra's refusal of a `toJson` call with other than one argument.
pub(crate) fn to_json_arity(n: usize) -> Result<(), EngineError> {
    if n == 1 {
        return Ok(());
    }
    Err(EngineError::invalid(
        "Invalid number of arguments for function system.tojson(any)",
    ))
}

/// Cassandra's refusal of a `toJson` argument it cannot type (a bind marker or `NULL`).
pub(crate) fn to_json_untyped(arg: &Term) -> EngineError {
    let shown = match arg {
        Term::Literal(Literal::Null) => "NULL".to_string(),
        other => other.to_string(),
    };
    EngineError::invalid(format!(
        "Cannot infer type of argument {shown} in call to function system.tojson(any): use type casts to disambiguate"
    ))
}

/// `fromJson(arg)` for a receiver of type `ty`: the JSON text `arg` (a serialized text
/// value) decoded as Cassandra's `fromJSONObject` does. JSON `null` gives null. Malformed
/// JSON and a value that does not fit the type fail the call as Cassandra's do, with a
/// FunctionFailure.
pub(crate) fn from_json_arg(
    ty: &ColumnType,
    arg: &[u8],
    now: crate::Now,
) -> Result<Option<Vec<u8>>, EngineError> {
    let text = String::from_utf8_lossy(arg);
    let undecodable = |why: String| {
        from_json_failure(format!(
            "execution of 'system.fromjson[text]' failed: Could not decode JSON string '{text}': {why}"
        ))
    };
    // Jackson reads the first JSON value of the text and ignores what follows it.
    let doc: serde_json::Value = match serde_json::Deserializer::from_str(&text).into_iter().next()
    {
        Some(parsed) => parsed.map_err(|e| undecodable(e.to_string()))?,
        None => return Err(undecodable(NO_CONTENT.into())),
    };
    crate::json::from_json(ty, &doc, now).map_err(|m| {
        from_json_failure(format!(
            "org.apache.cassandra.serializers.MarshalException: {m}"
        ))
    })
}

/// Jackson's complaint about a JSON text with nothing in it, as Cassandra 5.0.9 passes it on.
const NO_CONTENT: &str = "com.fasterxml.jackson.databind.exc.MismatchedInputException: No content to map due to end-of-input\n at [Source: REDACTED (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled); line: 1]";

fn from_json_failure(message: String) -> EngineError {
    EngineError::Db(DbError::FunctionFailure {
        message,
        keyspace: "system".into(),
        function: "fromjson".into(),
        arg_types: vec!["text".into()],
    })
}

/// Cassandra's refusal of a `fromJson` call that does not take one text argument.
pub(crate) fn from_json_arity(n: usize) -> Result<(), EngineError> {
    if n == 1 {
        return Ok(());
    }
    Err(EngineError::invalid(
        "Invalid number of arguments for function system.fromjson(text)",
    ))
}

/// Cassandra's refusal of a `fromJson` argument that is not text.
pub(crate) fn from_json_not_text(arg: &Term, ty: &ColumnType) -> EngineError {
    EngineError::invalid(format!(
        "Function system.fromjson requires an argument of type text, but found argument {arg} of type {}",
        crate::fcts::shown_literal_type(ty)
    ))
}

/// Evaluates a call typed at plan time (a selector's): `toJson` of any value (null prints
/// `null`), `token` of values standing for a partition key, a collection or masking function, or a scalar function. A scalar function failing
/// on bad stored data yields null (type checking at prepare time ruled out the rest), except
/// `blobAs<type>` of bytes that are not such a value, which fails the query as in Cassandra.
/// The internal call that builds a list of its arguments (a literal list holding bind
/// markers, `collection_sum([1, ?])`); nulls stay in it. Not a CQL identifier.
pub(crate) const LIST_OF_ARGS: &str = "_list";

/// The internal call that builds a set of its arguments (`collection_sum({1, ?})`): sorted
/// by the element type, duplicates dropped; a null in it is refused as Cassandra refuses
/// one bound inside a collection. Not a CQL identifier.
pub(crate) const SET_OF_ARGS: &str = "_set";

/// The internal call that builds a float vector of its arguments (a similarity function's
/// list literal holding bind markers, `similarity_cosine(v, [1.0, ?])`); a null element fails
/// the query as Cassandra's serializer fails it (a server error). Not a CQL identifier.
pub(crate) const VECTOR_OF_ARGS: &str = "_vector";

pub(crate) fn eval(
    name: &str,
    args: &[TypedValue],
    now: Now,
) -> Result<Option<Vec<u8>>, EngineError> {
    if json_fn(name) == Some(JsonFn::To) {
        to_json_arity(args.len())?;
        let (ty, v) = &args[0];
        return Ok(Some(crate::json::to_json(ty, v.as_deref()).into_bytes()));
    }
    if name == "token" {
        let parts: Option<Vec<&[u8]>> = args.iter().map(|(_, v)| v.as_deref()).collect();
        return Ok(parts.map(|p| {
            let key = crate::token::compose_partition_key(&p);
            crate::token::token(&key).to_be_bytes().to_vec()
        }));
    }
    if name == SET_OF_ARGS {
        let mut items: Vec<(&ColumnType, &[u8])> = Vec::with_capacity(args.len());
        for (ty, v) in args {
            let v = v
                .as_deref()
                .ok_or_else(|| EngineError::invalid("null is not supported inside collections"))?;
            items.push((ty, v));
        }
        items.sort_by(|(ty, a), (_, b)| crate::types::compare(ty, a, b));
        items.dedup_by(|(ty, a), (_, b)| crate::types::compare(ty, a, b).is_eq());
        let bytes: Vec<Vec<u8>> = items.into_iter().map(|(_, v)| v.to_vec()).collect();
        return Ok(Some(crate::literal::encode_collection(&bytes)));
    }
    if name == VECTOR_OF_ARGS {
        let mut out = Vec::with_capacity(args.len() * 4);
        for (i, (_, v)) in args.iter().enumerate() {
            let v = v.as_deref().ok_or_else(|| {
                EngineError::server(format!(
                    "org.apache.cassandra.serializers.MarshalException: Element at index {i} is null (expected type float)"
                ))
            })?;
            out.extend(v);
        }
        return Ok(Some(out));
    }
    if name == LIST_OF_ARGS {
        let mut out = (args.len() as i32).to_be_bytes().to_vec();
        for (_, v) in args {
            match v {
                Some(b) => {
                    out.extend((b.len() as i32).to_be_bytes());
                    out.extend(b);
                }
                None => out.extend((-1i32).to_be_bytes()),
            }
        }
        return Ok(Some(out));
    }
    if crate::fcts::is_known(name) {
        return crate::fcts::call(name, args).map_err(EngineError::invalid);
    }
    use crate::scalar::ScalarError as E;
    match crate::scalar::call_at(name, args, now.micros) {
        Ok(v) => Ok(v),
        Err(E::InvalidValue(m) | E::NotComputed(m)) => Err(EngineError::invalid(m)),
        Err(E::Arithmetic(m)) => Err(EngineError::server(m)),
        Err(E::Other(_)) => Ok(None),
    }
}

/// The type Cassandra gives a constant argument of `toJson`: a literal's own kind (int,
/// bigint or varint by size, double, text, ...), a set or tuple literal's from its elements,
/// a type hint's type; None for what it cannot type (a bind marker, `NULL`, a map literal).
pub(crate) fn to_json_literal_type(arg: &Term) -> Option<ColumnType> {
    match crate::selection::unparen(arg) {
        Term::TypeHint { ty, .. } => ColumnType::from_simple_name(&ty.to_string()),
        Term::Literal(Literal::String(_)) => Some(ColumnType::Varchar),
        Term::List(items) | Term::Set(items) => {
            let first = to_json_literal_type(items.first()?)?;
            let elem = items[1..]
                .iter()
                .all(|i| to_json_literal_type(i).as_ref() == Some(&first))
                .then_some(first)?;
            Some(match arg {
                Term::List(_) => ColumnType::List(Box::new(elem)),
                _ => ColumnType::Set(Box::new(elem)),
            })
        }
        Term::Tuple(items) => Some(ColumnType::Tuple(
            items
                .iter()
                .map(to_json_literal_type)
                .collect::<Option<Vec<_>>>()?,
        )),
        other => crate::selection::literal_type(other),
    }
}

/// A hex literal where Cassandra 5.0.9 types it `tinyint` (the argument of `toJson()`, an
/// element of a literal collection given to a collection function), as the byte it reads:
/// the first (`toJson(0x0102)` is `1`, `toJson(0xff)` is `-1`). None for any other term and
/// for the empty `0x` (a NullPointerException in Cassandra; left as the blob it is here).
pub(crate) fn hex_as_tinyint(arg: &Term) -> Option<Term> {
    let Term::Literal(Literal::Blob(hex)) = crate::selection::unparen(arg) else {
        return None;
    };
    let first = u8::from_str_radix(hex.get(..2)?, 16).ok()?;
    Some(Term::Literal(Literal::Integer((first as i8).to_string())))
}

/// `toJson(arg)` of a constant argument (a term's, not a selector's): typed by its own
/// literal kind, its type hint or a native function's result. Cassandra cannot type a
/// collection literal here.
fn to_json_const(arg: &Term, now: Now) -> Result<TypedValue, EngineError> {
    let (ty, v) = match arg {
        // A native scalar function's call is typed by its result.
        Term::FunctionCall { name, args }
            if json_fn(&name.name).is_none() && crate::scalar::is_known(&name.name) =>
        {
            let typed = scalar_args(&name.name, args, now)?;
            let types: Vec<ColumnType> = typed.iter().map(|(t, _)| t.clone()).collect();
            let ty =
                crate::scalar::return_type(&name.name, &types).map_err(EngineError::invalid)?;
            let v = crate::scalar::call_at(&name.name, &typed, now.micros)
                .map_err(|e| EngineError::invalid(e.to_string()))?;
            (ty, v)
        }
        Term::List(_) | Term::Set(_) | Term::Map(_) => return Err(to_json_untyped(arg)),
        other => match hex_as_tinyint(other) {
            Some(byte) => (
                ColumnType::Tinyint,
                const_term(&ColumnType::Tinyint, &byte, now)?,
            ),
            None => {
                let ty = to_json_literal_type(other).ok_or_else(|| to_json_untyped(arg))?;
                let v = const_term(&ty, arg, now)?;
                (ty, v)
            }
        },
    };
    let json = crate::json::to_json(&ty, v.as_deref());
    Ok((ColumnType::Varchar, Some(json.into_bytes())))
}

/// `fromJson(arg)` of a constant argument for a receiver of type `ty`.
fn from_json_const(ty: &ColumnType, args: &[Term], now: Now) -> Result<TypedValue, EngineError> {
    from_json_arity(args.len())?;
    let arg = &args[0];
    let text = const_term(&ColumnType::Varchar, arg, now).map_err(|_| match arg {
        // Cassandra's list literal refuses a text receiver first; a tuple literal answers
        // the type check of its elements.
        Term::List(_) => {
            EngineError::invalid("Unexpected receiver type 'text'; only list and vector are expected")
        }
        Term::Tuple(items) if items.len() > 1 => EngineError::invalid(format!(
            "Type error: {arg} cannot be passed as argument 0 of function system.fromjson of type text"
        )),
        _ => {
            let found = match arg {
                Term::Map(_) => crate::fcts::term_arg_type(arg),
                _ => crate::fcts::literal_arg_type(arg),
            };
            from_json_not_text(arg, found.as_ref().unwrap_or(&ColumnType::Varchar))
        }
    })?;
    let v = match text {
        Some(t) => from_json_arg(ty, &t, now)?,
        None => None,
    };
    Ok((ty.clone(), v))
}

/// Evaluates a function term for a receiver of type `ty`.
pub fn call_const(
    ty: &ColumnType,
    name: &str,
    args: &[Term],
    now: Now,
) -> Result<Option<Vec<u8>>, EngineError> {
    call_for(ty, None, name, args, now)
}

/// [`call_const`] for a receiver named `receiver` (a column, or a bind marker's name), which
/// Cassandra names when the result's type does not fit.
pub fn call_for(
    ty: &ColumnType,
    receiver: Option<&str>,
    name: &str,
    args: &[Term],
    now: Now,
) -> Result<Option<Vec<u8>>, EngineError> {
    match json_fn(name) {
        Some(JsonFn::From) => Ok(from_json_const(ty, args, now)?.1),
        Some(JsonFn::To) => {
            to_json_arity(args.len())?;
            let (ret, value) = to_json_const(&args[0], now)?;
            check_fits(ty, receiver, "tojson", &ret)?;
            Ok(value)
        }
        None if crate::fcts::collection_param(name).is_some() => {
            let f = name.to_ascii_lowercase();
            let [arg] = args else {
                let kind = crate::fcts::collection_param(name).unwrap_or("collection");
                return Err(EngineError::invalid(format!(
                    "Invalid number of arguments for function system.{f}({kind})"
                )));
            };
            let (arg_ty, ret) =
                crate::fcts::literal_call_types(name, arg, crate::fcts::term_arg_type(arg))
                    .map_err(EngineError::invalid)?;
            check_fits(ty, receiver, name, &ret)?;
            let value = const_term(&arg_ty, arg, now)?;
            crate::fcts::call(name, &[(arg_ty, value)]).map_err(EngineError::invalid)
        }
        None => {
            if let Some(done) = crate::build::const_call(ty, receiver, name, args, now) {
                return done;
            }
            let typed = scalar_args(name, args, now)?;
            let types: Vec<ColumnType> = typed.iter().map(|(t, _)| t.clone()).collect();
            let ret = crate::scalar::return_type(name, &types).map_err(EngineError::invalid)?;
            check_fits(ty, receiver, name, &ret)?;
            crate::scalar::call_at(name, &typed, now.micros)
                .map_err(|e| EngineError::invalid(e.to_string()))
        }
    }
}

/// Whether a function's result of type `ret` may be assigned to a receiver of type `ty`.
fn check_fits(
    ty: &ColumnType,
    receiver: Option<&str>,
    name: &str,
    ret: &ColumnType,
) -> Result<(), EngineError> {
    // A timeuuid fits a uuid receiver, a timestamp a bigint one (value-compatible types).
    let fits = ret == ty
        || matches!(
            (ret, ty),
            (ColumnType::Timeuuid, ColumnType::Uuid)
                | (ColumnType::Timestamp, ColumnType::Bigint)
                | (ColumnType::Bigint, ColumnType::Timestamp)
        );
    if fits {
        return Ok(());
    }
    Err(EngineError::invalid(match receiver {
        Some(r) => format!(
            "Type error: cannot assign result of function system.{} (type {}) to {r} (type {})",
            name.to_ascii_lowercase(),
            // A function's collection result is frozen (map_keys gives a frozen<set<K>>).
            match ret {
                ColumnType::List(_) | ColumnType::Set(_) | ColumnType::Map(..) =>
                    format!("frozen<{}>", crate::types::cql_type_name(ret)),
                _ => crate::types::cql_type_name(ret),
            },
            crate::types::cql_type_name(ty)
        ),
        None => format!(
            "Type error: {name}() cannot be passed as argument of type {}",
            crate::types::cql_type_name(ty)
        ),
    }))
}

/// The constant arguments of a native scalar function, each typed by the function's
/// signatures.
fn scalar_args(name: &str, args: &[Term], now: Now) -> Result<Vec<TypedValue>, EngineError> {
    if !crate::scalar::is_known(name) {
        return Err(EngineError::invalid(format!(
            "Unknown function {name} called"
        )));
    }
    let mut typed = Vec::with_capacity(args.len());
    for (pos, arg) in args.iter().enumerate() {
        let candidates = crate::scalar::param_types(name, args.len(), pos);
        let value = candidates
            .iter()
            .find_map(|t| const_term(t, arg, now).ok().map(|v| (t.clone(), v)));
        match value {
            Some(v) => typed.push(v),
            None if candidates.is_empty() => {
                return Err(EngineError::invalid(format!(
                    "Unknown function {name} called with {} arguments",
                    args.len()
                )))
            }
            None => {
                return Err(EngineError::invalid(format!(
                    "Type error: {arg} cannot be passed as argument {pos} of function system.{} of type {}",
                    name.to_ascii_lowercase(),
                    crate::types::cql_type_name(&candidates[0])
                )))
            }
        }
    }
    Ok(typed)
}
