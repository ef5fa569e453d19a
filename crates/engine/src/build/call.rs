//! Native function calls with bind markers among their arguments, in terms (`WHERE k = abs(?)`,
//! `SET b = textAsBlob(?)`, `VALUES (?, blobAsInt(?))`, `token(k) > token(abs(?))`, nested
//! `blobAsInt(textAsBlob(?))`): the signature Cassandra 5.0.9 picks for the receiver, hence
//! each marker's type and name (`arg0(system.abs)`, the picked function's parameter), and the
//! call evaluated at execution as a [`Src::Op`] whose callee is the native function.
//!
//! Cassandra's `FunctionResolver`: a function with one signature (`textAsBlob`, `token`,
//! `minTimeuuid`) is taken as is once its arity and its non-marker arguments fit; of an
//! overloaded one (`abs`, `toDate`, `floor`), the signatures whose result the receiver takes,
//! the first whose arguments all fit exactly, else the only one they are assignable to, else
//! "Ambiguous call" (a bare marker fits every parameter weakly) or "none of its type
//! signatures match". Then the result must fit the receiver. The collection and masking
//! functions have one signature built from their first argument (a hint's type, a constant's,
//! or the receiver's where the function infers it: [`factory`]); `CAST(t AS int)` is the
//! overloaded `system.cast_as_int`. Probed on 5.0.9 (scenario `78_function_binds.cql`,
//! `tests/python/test_function_binds.py`).
//!
//! Calls without markers are resolved the same way and evaluated at once ([`const_call`]).

use super::operation::{fit, fit_all, fit_type, Fit};
use super::Builder;
use crate::catalog::TableDef;
use crate::plan::{Callee, OpSrc, Src};
use crate::EngineError;
use cql::ast::{FunctionName, Term};
use proto::types::ColumnType as T;
use std::collections::HashSet;
use std::sync::{LazyLock, Mutex};

/// A picked signature of the function Cassandra names `name` (`abs`, `blob_as_int`).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Picked {
    pub name: &'static str,
    pub params: Vec<T>,
    pub ret: T,
}

/// What the name of a call in a term refers to.
enum Target {
    /// Its signatures, under the name Cassandra gives it.
    Sigs(String, Vec<crate::scalar::Sig>),
    /// A call Cassandra refuses before typing (an unknown function, an aggregate, an argument
    /// it cannot type).
    Refused(EngineError),
    /// A function whose markers are typed elsewhere or not at all here.
    Other,
}

/// The functions' names as `&'static str`, each kept once: a [`Callee`] is `Copy`. Only names
/// of known native functions are kept, so this holds at most the registry's few hundred.
static NAMES: LazyLock<Mutex<HashSet<&'static str>>> = LazyLock::new(Default::default);

fn intern(name: &str) -> &'static str {
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(n) = names.get(name) {
        return n;
    }
    let n: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.insert(n);
    n
}

/// Whether a receiver of type `receiver` takes a function's result of type `ty` (Cassandra's
/// `isValueCompatibleWith`: a bigint does not take a counter).
fn receives(receiver: &T, ty: &T) -> bool {
    match (receiver, ty) {
        (T::Uuid, T::Timeuuid) => true,
        (T::Bigint, T::Counter) => false,
        _ => crate::scalar::accepts(receiver, ty),
    }
}

/// Cassandra's refusal of a function's result the receiver named `receiver` (None: an
/// argument of another call) does not take.
fn unassignable(name: &str, ret: &T, receiver: Option<&str>, ty: &T) -> EngineError {
    EngineError::invalid(match receiver {
        Some(r) => format!(
            "Type error: cannot assign result of function system.{name} (type {}) to {r} (type {})",
            // A function's collection result is frozen (map_keys gives a frozen<set<K>>).
            match ret {
                T::List(_) | T::Set(_) | T::Map(..) =>
                    format!("frozen<{}>", crate::types::cql_type_name(ret)),
                _ => crate::types::cql_type_name(ret),
            },
            crate::types::cql_type_name(ty)
        ),
        None => format!(
            "Type error: {name}() cannot be passed as argument of type {}",
            crate::types::cql_type_name(ty)
        ),
    })
}

/// A native scalar call without bind markers in a term (`abs(1)`, `toDate(now())`) for a
/// receiver named `receiver` of type `ty`: resolved as one with markers is, its arguments
/// typed by the picked signature, evaluated at `now`. None for a function typed elsewhere
/// (`token`, the JSON, collection and masking functions).
pub(crate) fn const_call(
    ty: &T,
    receiver: Option<&str>,
    name: &str,
    args: &[Term],
    now: crate::Now,
) -> Option<Result<Option<Vec<u8>>, EngineError>> {
    let mut f = FunctionName::new(name);
    if name.starts_with("cast_as_") {
        // `CAST(t AS type)` calls the native function by its qualified name.
        f.keyspace = Some("system".into());
    }
    match target(None, &f, args, Some(ty)) {
        Target::Sigs(..) => {}
        Target::Refused(e) => return Some(Err(e)),
        Target::Other => return None,
    }
    let run = || {
        let Some(p) = pick(None, &f, args, Some(ty))? else {
            return Ok(None);
        };
        if !receives(ty, &p.ret) {
            return Err(unassignable(p.name, &p.ret, receiver, ty));
        }
        let mut typed = Vec::with_capacity(args.len());
        for (i, (arg, param)) in args.iter().zip(&p.params).enumerate() {
            let arg_name = format!("arg{i}(system.{})", p.name);
            let v = crate::literal::const_term_for(&arg_name, param, arg, now)?;
            typed.push((param.clone(), v));
        }
        crate::functions::eval(p.name, &typed, now)
    };
    Some(run())
}

fn target(t: Option<&TableDef>, f: &FunctionName, args: &[Term], receiver: Option<&T>) -> Target {
    let written = match &f.keyspace {
        Some(ks) => format!("{ks}.{}", f.name),
        None => f.name.clone(),
    };
    let unknown = || {
        Target::Refused(EngineError::invalid(format!(
            "Unknown function {written} called"
        )))
    };
    if f.keyspace.as_deref().is_some_and(|ks| ks != "system") {
        return unknown();
    }
    // A quoted name keeps its case; native functions have lower-case names.
    let name = f.name.as_str();
    if name.chars().any(|c| c.is_ascii_uppercase()) {
        return unknown();
    }
    // count has one signature, count(blob), whose argument is checked first.
    if let ("count", [arg]) = (name, args) {
        if !matches!(arg, Term::Bind(_)) && fit(arg, &T::Blob) == Fit::No {
            return Target::Refused(EngineError::invalid(format!(
                "Type error: {} cannot be passed as argument 0 of function system.count of type blob",
                super::cassandra_text(arg)
            )));
        }
    }
    if matches!(name, "count" | "min" | "max" | "sum" | "avg") {
        return Target::Refused(EngineError::invalid(
            "Aggregation function are not supported in the where clause",
        ));
    }
    if name == "token" {
        return match t {
            Some(t) => Target::Sigs(
                name.into(),
                vec![(t.partition_key().map(|c| c.ty.clone()).collect(), T::Bigint)],
            ),
            None => Target::Other,
        };
    }
    if crate::functions::json_fn(name) == Some(crate::functions::JsonFn::To) {
        // toJson takes any type: only a hinted argument has one.
        return match args {
            [Term::TypeHint { ty, .. }] => match ty.as_native() {
                Some(h) => Target::Sigs(name.into(), vec![(vec![h.clone()], T::Varchar)]),
                None => Target::Other,
            },
            [arg] => Target::Refused(crate::functions::to_json_untyped(arg)),
            _ => Target::Other,
        };
    }
    if matches!(name, "mask_null" | "mask_default" | "mask_hash") {
        if let Some(Term::Bind(_)) = args.first() {
            let params = if name == "mask_hash" {
                "any, [text]"
            } else {
                "any"
            };
            return Target::Refused(EngineError::invalid(format!(
                "Cannot infer type of argument ? in call to function system.{name}({params}): use type casts to disambiguate"
            )));
        }
    }
    if crate::fcts::collection_param(name).is_some() || MASKS.contains(&name) {
        return factory(name, args, receiver);
    }
    match crate::scalar::signatures_of(name) {
        Some(sigs) if !sigs.is_empty() => Target::Sigs(name.into(), sigs),
        _ if crate::fcts::is_known(name) || crate::functions::json_fn(name).is_some() => {
            Target::Other
        }
        _ => unknown(),
    }
}

/// The masking functions, whose signature is built from their arguments.
const MASKS: [&str; 6] = [
    "mask_null",
    "mask_default",
    "mask_hash",
    "mask_replace",
    "mask_inner",
    "mask_outer",
];

/// The one signature Cassandra builds for a collection or masking function (its
/// `FunctionFactory`) from the first argument's type: a hint's, a constant's, or, for a bare
/// marker where the function infers it (`mask_replace`, `mask_inner`, `mask_outer`), the
/// receiver's. A bare marker elsewhere is refused before this (`Builder::term`).
fn factory(name: &str, args: &[Term], receiver: Option<&T>) -> Target {
    let text_like = |r: Option<&T>| match r {
        Some(T::Ascii) => T::Ascii,
        _ => T::Varchar,
    };
    let first = match args.first() {
        Some(Term::TypeHint { ty, term }) if matches!(**term, Term::Bind(_)) => {
            crate::fcts::cast_type(ty)
        }
        Some(Term::Bind(_)) => match name {
            "mask_replace" => receiver.cloned(),
            "mask_inner" | "mask_outer" => Some(text_like(receiver)),
            _ => None,
        },
        Some(other) if !super::contains_bind(other) => crate::fcts::term_arg_type(other),
        _ => None,
    };
    let Some(first) = first else {
        return Target::Other;
    };
    let params = match (name, args.len()) {
        ("mask_inner" | "mask_outer", 3) => vec![first, T::Int, T::Int],
        ("mask_inner" | "mask_outer", 4) => vec![first, T::Int, T::Int, T::Varchar],
        ("mask_inner" | "mask_outer", _) => {
            return Target::Refused(EngineError::invalid(format!(
                "Invalid number of arguments for function system.{name}([text|varchar|ascii], int, int, [text])"
            )))
        }
        ("mask_replace", 2) => vec![first.clone(), first],
        ("mask_hash", 2) => vec![first, T::Varchar],
        _ => vec![first],
    };
    let named: Vec<(T, String)> = params
        .iter()
        .zip(args)
        .map(|(ty, a)| (ty.clone(), super::cassandra_text(a)))
        .collect();
    match crate::fcts::return_type(name, &named) {
        Some(Ok(ret)) => Target::Sigs(name.into(), vec![(params, ret)]),
        Some(Err(m)) => Target::Refused(EngineError::invalid(m)),
        None => Target::Other,
    }
}

/// How well `term` fits a parameter of type `param` (Cassandra's `testAssignment`): a call by
/// its result, when it resolves (weakly when it does not: the real error comes later).
fn fit_arg(t: Option<&TableDef>, term: &Term, param: &T) -> Fit {
    match term {
        Term::FunctionCall { name, args } => match pick(t, name, args, Some(param)) {
            Ok(Some(p)) if &p.ret == param => Fit::Exact,
            Ok(Some(p)) if receives(param, &p.ret) => Fit::Weak,
            Ok(Some(_)) => Fit::No,
            _ => Fit::Weak,
        },
        Term::TypeHint { ty, term } if matches!(**term, Term::Bind(_)) => {
            match crate::fcts::cast_type(ty) {
                Some(h) => fit_type(param, &h),
                None => Fit::No,
            }
        }
        other => fit(other, param),
    }
}

/// The signature Cassandra picks for the call `f(args)` in a term whose receiver has type
/// `receiver`; `None` for a function typed elsewhere (fromJson, the collection functions).
fn pick(
    t: Option<&TableDef>,
    f: &FunctionName,
    args: &[Term],
    receiver: Option<&T>,
) -> Result<Option<Picked>, EngineError> {
    let (name, sigs) = match target(t, f, args, receiver) {
        Target::Sigs(name, sigs) => (name, sigs),
        Target::Refused(e) => return Err(e),
        Target::Other => return Ok(None),
    };
    let shown = match &f.keyspace {
        Some(ks) => format!("{ks}.{name}"),
        None => name.clone(),
    };
    let picked = |(params, ret): crate::scalar::Sig| Picked {
        name: intern(&name),
        params,
        ret,
    };
    if let [(params, _)] = sigs.as_slice() {
        if params.len() != args.len() {
            return Err(EngineError::invalid(format!(
                "Invalid number of arguments in call to function system.{name}: {} required but {} provided",
                params.len(),
                args.len()
            )));
        }
        for (i, (arg, param)) in args.iter().zip(params).enumerate() {
            if !matches!(arg, Term::Bind(_)) && fit_arg(t, arg, param) == Fit::No {
                return Err(EngineError::invalid(format!(
                    "Type error: {} cannot be passed as argument {i} of function system.{name} of type {}",
                    super::cassandra_text(arg),
                    crate::types::cql_type_name(param)
                )));
            }
        }
        let only = sigs[0].clone();
        return Ok(Some(picked(only)));
    }
    let mut compatible = Vec::new();
    for sig in &sigs {
        if receiver.is_some_and(|r| !receives(r, &sig.1)) || sig.0.len() != args.len() {
            continue;
        }
        let all = fit_all(
            args.iter()
                .zip(&sig.0)
                .map(|(arg, param)| fit_arg(t, arg, param)),
        );
        match all {
            Fit::Exact => return Ok(Some(picked(sig.clone()))),
            Fit::Weak => compatible.push(sig),
            Fit::No => {}
        }
    }
    let list = |sigs: &[&crate::scalar::Sig]| {
        sigs.iter()
            .map(|s| crate::scalar::sig_text(&name, s))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match compatible.as_slice() {
        [one] => Ok(Some(picked((*one).clone()))),
        [] => Err(EngineError::invalid(format!(
            "Invalid call to function {shown}, none of its type signatures match (known type signatures: {})",
            list(&sigs.iter().collect::<Vec<_>>())
        ))),
        many => Err(EngineError::invalid(format!(
            "Ambiguous call to function {shown} (can be matched by following signatures: {}): use type casts to disambiguate",
            list(many)
        ))),
    }
}

impl Builder<'_> {
    /// `f(args)` with bind markers among its arguments, for a receiver named `receiver` of
    /// type `ty`; None when this function's markers are not typed here (the caller refuses
    /// the term as it refuses any other it cannot take).
    pub(crate) fn call_src(
        &mut self,
        t: &TableDef,
        f: &FunctionName,
        args: &[Term],
        receiver: &str,
        ty: &T,
    ) -> Result<Option<Src>, EngineError> {
        let Some(p) = pick(Some(t), f, args, Some(ty))? else {
            return Ok(None);
        };
        if !receives(ty, &p.ret) {
            return Err(unassignable(p.name, &p.ret, Some(receiver), ty));
        }
        let mut srcs = Vec::with_capacity(args.len());
        for (i, (arg, param)) in args.iter().zip(&p.params).enumerate() {
            let name = format!("arg{i}(system.{})", p.name);
            srcs.push(match arg {
                // A hinted marker already fits its parameter (a collection hint too, which
                // a parameter takes as is, frozen or not).
                Term::TypeHint { term, .. } => match &**term {
                    Term::Bind(m) => self.bind(t, m, &name, param),
                    _ => self.term(t, arg, &name, param)?,
                },
                _ => self.term(t, arg, &name, param)?,
            });
        }
        Ok(Some(Src::Op(Box::new(OpSrc {
            op: Callee::Native(p.name),
            params: p.params,
            ret: p.ret,
            out: ty.clone(),
            args: srcs,
        }))))
    }
}

/// Runs the native function `name` on its arguments' values, typed as its picked
/// parameters. The result is stored as the function gives it (an int's four bytes in a
/// varint column, as Cassandra stores them).
pub(crate) fn apply(
    name: &str,
    params: &[T],
    args: &[Option<Vec<u8>>],
) -> Result<Option<Vec<u8>>, EngineError> {
    let typed: Vec<(T, Option<Vec<u8>>)> =
        params.iter().cloned().zip(args.iter().cloned()).collect();
    // No function here reads the clock: those that do take no argument, hence no marker.
    crate::functions::eval(name, &typed, crate::Now { micros: 0, secs: 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The term assigned in `UPDATE t SET v = <text> WHERE k = 1`.
    fn call(text: &str) -> (FunctionName, Vec<Term>) {
        let p = cql::parse(&format!("UPDATE t SET v = {text} WHERE k = 1")).unwrap();
        let cql::Statement::Update(u) = p.statement else {
            panic!("not an update")
        };
        match &u.assignments[0] {
            cql::ast::Assignment::Set {
                value: Term::FunctionCall { name, args },
                ..
            } => (name.clone(), args.clone()),
            other => panic!("{other:?}"),
        }
    }

    fn picked(text: &str, receiver: T) -> Result<(Vec<T>, T), String> {
        let (f, args) = call(text);
        match pick(None, &f, &args, Some(&receiver)) {
            Ok(Some(p)) => Ok((p.params, p.ret)),
            Ok(None) => Err("not typed here".into()),
            Err(e) => Err(e.to_string()),
        }
    }

    #[test]
    fn picks_the_signature_cassandra_picks() {
        assert_eq!(picked("abs(?)", T::Int), Ok((vec![T::Int], T::Int)));
        assert_eq!(
            picked("abs(?)", T::Double),
            Ok((vec![T::Double], T::Double))
        );
        // One signature: taken whatever the receiver (its result is checked afterwards).
        assert_eq!(
            picked("blobAsInt(?)", T::Bigint),
            Ok((vec![T::Blob], T::Int))
        );
        assert_eq!(
            picked("textAsBlob(?)", T::Blob),
            Ok((vec![T::Varchar], T::Blob))
        );
        assert_eq!(
            picked("floor(?, 1d)", T::Date),
            Ok((vec![T::Date, T::Duration], T::Date))
        );
        assert_eq!(
            picked("toTimestamp((date) ?)", T::Timestamp),
            Ok((vec![T::Date], T::Timestamp))
        );
        // Collection and masking functions: a signature built from the hint, or from the
        // receiver where the function infers its argument's type.
        assert_eq!(
            picked("collection_count((list<int>) ?)", T::Int),
            Ok((vec![T::List(Box::new(T::Int))], T::Int))
        );
        assert_eq!(
            picked("mask_inner(?, 1, 2)", T::Varchar),
            Ok((vec![T::Varchar, T::Int, T::Int], T::Varchar))
        );
        assert_eq!(
            picked("mask_replace(?, ?)", T::Int),
            Ok((vec![T::Int, T::Int], T::Int))
        );
        // A nested call fits by its result.
        assert_eq!(
            picked("toUnixTimestamp(minTimeuuid(?))", T::Bigint),
            Ok((vec![T::Timeuuid], T::Bigint))
        );
    }

    #[test]
    fn refuses_as_cassandra_does() {
        let err = |text: &str, ty: T| picked(text, ty).unwrap_err();
        assert!(err("abs(?)", T::Varint).contains(
            "Ambiguous call to function abs (can be matched by following signatures: system.abs : (int) -> int, system.abs : (bigint) -> bigint, system.abs : (varint) -> varint): use type casts to disambiguate"
        ));
        assert!(err("toDate(?)", T::Date).contains("Ambiguous call to function todate"));
        assert!(err("exp((int) ?)", T::Double)
            .contains("Invalid call to function exp, none of its type signatures match"));
        assert!(err("abs(?, ?)", T::Int)
            .contains("Invalid call to function abs, none of its type signatures match"));
        assert!(err("now(?)", T::Timeuuid).contains(
            "Invalid number of arguments in call to function system.now: 0 required but 1 provided"
        ));
        assert!(err("nosuch(?)", T::Int).contains("Unknown function nosuch called"));
        assert!(err("other.abs(?)", T::Int).contains("Unknown function other.abs called"));
        assert!(err("max(?)", T::Int)
            .contains("Aggregation function are not supported in the where clause"));
        assert!(err("toJson(?)", T::Varchar).contains(
            "Cannot infer type of argument ? in call to function system.tojson(any): use type casts to disambiguate"
        ));
        assert!(err("mask_hash(?)", T::Blob).contains("system.mask_hash(any, [text])"));
        assert!(err("mask_inner(?)", T::Varchar).contains(
            "Invalid number of arguments for function system.mask_inner([text|varchar|ascii], int, int, [text])"
        ));
    }

    #[test]
    fn applies_the_native_function() {
        let int = |v: i32| Some(v.to_be_bytes().to_vec());
        assert_eq!(apply("abs", &[T::Int], &[int(-3)]).unwrap(), int(3));
        assert_eq!(apply("abs", &[T::Int], &[None]).unwrap(), None);
        assert_eq!(apply("blob_as_int", &[T::Blob], &[int(9)]).unwrap(), int(9));
        assert!(apply("blobasint", &[T::Blob], &[Some(vec![0, 9])])
            .unwrap_err()
            .to_string()
            .contains("In call to function system.blobasint, value 0x0009 is not a valid binary representation for type int"));
    }
}
