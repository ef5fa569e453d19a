//! Arithmetic over bind markers in terms (`SET v = (int) ? + 1`, `WHERE k = (bigint) ? * 2`,
//! `SET v = -(int) ?`): which operator function Cassandra 5.0.9 picks, hence the type of each
//! marker (the picked function's parameter, named `arg0(system._add)`), the type the
//! arithmetic runs in, and its messages for a form it refuses.
//!
//! Cassandra turns `a + b` into a call of the native function `system._add` and resolves it
//! as any overloaded call: of all `_add(x, y)` signatures (every pair of numeric types, then
//! timestamp/date plus duration, then the four text/ascii concatenations, in that order), those
//! whose return type the receiver accepts; the first whose arguments all match exactly wins,
//! else the only one they are assignable to, else (when no argument is a bare marker) the one
//! whose parameters are both the receiver's type; anything else is "Ambiguous" or "not
//! supported". The types, their order and the tie-break are facts probed on 5.0.9 (scenario
//! `51_hinted_arith.cql`); a nested operation as an argument is resolved against that
//! parameter's type, and counts as weakly assignable when that fails.
//!
//! Operations without markers are folded as constants by `literal`, which asks [`resolve`]
//! only whether Cassandra finds a function for one with a cast among its operands. Not here:
//! operations in selectors (`selection`).

use super::Builder;
use crate::catalog::TableDef;
use crate::plan::{Callee, Src};
use crate::EngineError;
use cql::ast::{ArithOp, Literal, Term};
use proto::types::ColumnType as T;

/// One operator function: `_add(int, bigint) -> bigint`, or a negation.
#[derive(Debug, Clone, PartialEq)]
pub struct OpFn {
    /// `None` for `_negate`.
    pub op: Option<ArithOp>,
    pub params: Vec<T>,
    pub ret: T,
}

impl OpFn {
    fn name(&self) -> &'static str {
        function_name(self.op)
    }
}

/// The name of the function a term's call over bind markers calls, as Cassandra names it
/// in "Invalid unset value for argument in call to function ...".
pub(crate) fn callee_name(callee: Callee) -> &'static str {
    match callee {
        Callee::Negate => function_name(None),
        Callee::Arith(op) => function_name(Some(op)),
        Callee::Native(name) => name,
    }
}

/// The native function an operator calls (`None`: negation).
pub(crate) fn function_name(op: Option<ArithOp>) -> &'static str {
    match op {
        None => "_negate",
        Some(ArithOp::Add) => "_add",
        Some(ArithOp::Sub) => "_substract",
        Some(ArithOp::Mul) => "_multiply",
        Some(ArithOp::Div) => "_divide",
        Some(ArithOp::Rem) => "_modulo",
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fit {
    Exact,
    Weak,
    No,
}

/// Cassandra's numeric types in the order `OperationFcts` registers them.
const NUMERIC: [T; 9] = [
    T::Tinyint,
    T::Smallint,
    T::Int,
    T::Bigint,
    T::Float,
    T::Double,
    T::Decimal,
    T::Varint,
    T::Counter,
];

/// Cassandra's refusal of a negation whose operand no `_negate` signature takes (`-(s)` of a
/// set, `-t` of a text), listing them all.
pub(crate) fn negate_mismatch() -> EngineError {
    EngineError::invalid(format!(
        "Invalid call to function system._negate, none of its type signatures match (known type signatures: {})",
        candidates(None)
            .iter()
            .map(|f| format!(
                "system.\"_negate\" : ({}) -> {}",
                crate::types::cql_type_name(&f.params[0]),
                crate::types::cql_type_name(&f.ret)
            ))
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// Every signature of the operator (or of `_negate` when `op` is `None`), in registration
/// order.
fn candidates(op: Option<ArithOp>) -> Vec<OpFn> {
    let Some(op) = op else {
        return NUMERIC
            .iter()
            .map(|t| OpFn {
                op: None,
                params: vec![t.clone()],
                ret: t.clone(),
            })
            .collect();
    };
    let mut out = Vec::new();
    for l in &NUMERIC {
        for r in &NUMERIC {
            // A counter ranks as a bigint, so the numeric result type is never a counter.
            let (l2, r2) = (counter_as_bigint(l), counter_as_bigint(r));
            if let Some(ret) = crate::arith::result_type(op, &l2, &r2) {
                out.push(OpFn {
                    op: Some(op),
                    params: vec![l.clone(), r.clone()],
                    ret,
                });
            }
        }
    }
    if matches!(op, ArithOp::Add | ArithOp::Sub) {
        for t in [T::Timestamp, T::Date] {
            out.push(OpFn {
                op: Some(op),
                params: vec![t.clone(), T::Duration],
                ret: t,
            });
        }
    }
    if op == ArithOp::Add {
        for (ret, l, r) in [
            (T::Varchar, T::Varchar, T::Varchar),
            (T::Ascii, T::Ascii, T::Ascii),
            (T::Varchar, T::Ascii, T::Varchar),
            (T::Varchar, T::Varchar, T::Ascii),
        ] {
            out.push(OpFn {
                op: Some(op),
                params: vec![l, r],
                ret,
            });
        }
    }
    out
}

fn counter_as_bigint(t: &T) -> T {
    match t {
        T::Counter => T::Bigint,
        other => other.clone(),
    }
}

/// Whether a receiver of type `receiver` takes a value of type `ty` (Cassandra's
/// `isValueCompatibleWith`).
fn takes(receiver: &T, ty: &T) -> bool {
    crate::scalar::accepts(receiver, ty)
}

pub(super) fn fit_type(receiver: &T, ty: &T) -> Fit {
    if receiver == ty {
        Fit::Exact
    } else if takes(receiver, ty) {
        Fit::Weak
    } else {
        Fit::No
    }
}

/// The type Cassandra prefers for a literal (an exact match there, a weak one elsewhere).
fn preferred(l: &Literal) -> Option<T> {
    Some(match l {
        Literal::Integer(s) => match s.parse::<i64>() {
            Ok(v) if i32::try_from(v).is_ok() => T::Int,
            Ok(_) => T::Bigint,
            Err(_) => T::Varint,
        },
        Literal::Float(_) => T::Double,
        Literal::String(s) if s.is_ascii() => T::Ascii,
        Literal::String(_) => T::Varchar,
        Literal::Boolean(_) => T::Boolean,
        Literal::Uuid(_) => T::Uuid,
        Literal::Blob(_) => T::Blob,
        Literal::Duration(_) => T::Duration,
        Literal::Null => return None,
    })
}

/// How well `term` fits a parameter of type `param` (Cassandra's `testAssignment`).
pub(super) fn fit(term: &Term, param: &T) -> Fit {
    match term {
        Term::Literal(l) if preferred(l).as_ref() == Some(param) => Fit::Exact,
        Term::Literal(l) if crate::literal::literal_fits(param, l) => Fit::Weak,
        Term::Literal(_) => Fit::No,
        Term::Bind(_) => Fit::Weak,
        Term::TypeHint { ty, .. } => match ty.as_native() {
            Some(h) => fit_type(param, h),
            None => Fit::No,
        },
        Term::Operation { .. } | Term::Negate(_) => match resolve(term, Some(param)) {
            Ok(f) => match fit_type(param, &f.ret) {
                Fit::No => Fit::No,
                other => other,
            },
            Err(_) => Fit::Weak,
        },
        // Tuples in parentheses, function calls and the like: left to the constant path,
        // which gives its own message.
        Term::Tuple(v) if v.len() == 1 => fit(&v[0], param),
        _ => Fit::Weak,
    }
}

/// How a call's arguments fit its parameters together (Cassandra's `matchArguments`): exact
/// when every one is, not at all as soon as one does not (the rest are not looked at).
pub(super) fn fit_all(fits: impl Iterator<Item = Fit>) -> Fit {
    let mut all = Fit::Exact;
    for f in fits {
        match f {
            Fit::No => return Fit::No,
            Fit::Weak => all = Fit::Weak,
            Fit::Exact => {}
        }
    }
    all
}

/// Whether an operand of `term` (an operation or negation, nested ones included) is a hex
/// literal: 5.0.9 takes one as a number there (`0x01 + 1` is 2, `-(0x01)` is -1), which
/// [`fit`] does not model, so no refusal of [`resolve`] stands for such a term.
pub(crate) fn has_hex_operand(term: &Term) -> bool {
    match unparen(term) {
        Term::Literal(Literal::Blob(_)) => true,
        t @ (Term::Operation { .. } | Term::Negate(_)) => {
            operands(t).1.into_iter().any(has_hex_operand)
        }
        _ => false,
    }
}

/// The operands of an operation or negation.
fn operands(term: &Term) -> (Option<ArithOp>, Vec<&Term>) {
    match term {
        Term::Operation { op, left, right } => (Some(*op), vec![unparen(left), unparen(right)]),
        Term::Negate(inner) => (None, vec![unparen(inner)]),
        other => (None, vec![other]),
    }
}

/// Cassandra's text of a term in its messages: `(int)?`, `?`, `:x`, an operation as the
/// call it is (`system."_add"((int)?, 1)`), a text literal between quotes as written
/// (`'it's'`: Cassandra does not double the quote), collections and tuples of those.
pub(crate) fn cassandra_text(term: &Term) -> String {
    match term {
        Term::TypeHint { ty, term } => format!("({ty}){}", cassandra_text(term)),
        Term::Operation { .. } | Term::Negate(_) => {
            let (op, args) = operands(term);
            let args: Vec<String> = args.into_iter().map(cassandra_text).collect();
            format!("system.\"{}\"({})", function_name(op), args.join(", "))
        }
        other => crate::selection::term_text(other, true),
    }
}

/// The operator function `term` (an operation or negation) calls for a receiver of type
/// `receiver`, with Cassandra's messages when there is none or several.
pub(crate) fn resolve(term: &Term, receiver: Option<&T>) -> Result<OpFn, EngineError> {
    pick(term, receiver, false)
}

/// Refuses, as Cassandra 5.0.9 does, an operation of constants (`s = 5 - 2`) whose receiver
/// it types as a `ReversedType` (a DESC clustering column, or a view's partition key column
/// taken from one) when its function is found only by the last tie-break: no signature's
/// parameters equal a reversed type, so what the tie-break would pick is "Ambiguous" (for a
/// DESC smallint; a DESC int takes `int - int`, an exact match of the literals). Anything
/// else is left to the constant path, which folds the operation as for an ASC column.
pub(crate) fn refuse_reversed_tie(term: &Term, receiver: &T) -> Result<(), EngineError> {
    let term = unparen(term);
    if !matches!(term, Term::Operation { .. }) {
        return Ok(());
    }
    match (
        pick(term, Some(receiver), true),
        pick(term, Some(receiver), false),
    ) {
        (Err(e), Ok(_)) => Err(e),
        _ => Ok(()),
    }
}

/// [`resolve`]; `reversed`: the receiver's type is Cassandra's `ReversedType` of `receiver`,
/// which the tie-break by the receiver's type never matches.
fn pick(term: &Term, receiver: Option<&T>, reversed: bool) -> Result<OpFn, EngineError> {
    let (op, args) = operands(term);
    let mut compatible = Vec::new();
    for f in candidates(op) {
        if receiver.is_some_and(|r| !takes(r, &f.ret)) {
            continue;
        }
        let all = fit_all(
            args.iter()
                .zip(&f.params)
                .map(|(arg, param)| fit(arg, param)),
        );
        match all {
            Fit::Exact => return Ok(f),
            Fit::Weak => compatible.push(f),
            Fit::No => {}
        }
    }
    let Some(op) = op else {
        return match compatible.len() {
            1 => Ok(compatible.remove(0)),
            0 => Err(negate_mismatch()),
            _ => Err(EngineError::invalid(
                "Ambiguous negation: use type casts to disambiguate",
            )),
        };
    };
    let texts = || (cassandra_text(args[0]), cassandra_text(args[1]));
    match compatible.len() {
        0 => {
            let (l, r) = texts();
            Err(EngineError::invalid(format!(
                "the '{}' operation is not supported between {l} and {r}",
                op.symbol()
            )))
        }
        1 => Ok(compatible.remove(0)),
        _ => {
            let bare = args.iter().any(|a| matches!(a, Term::Bind(_)));
            if let (Some(r), false) = (receiver, bare || reversed) {
                if let Some(f) = compatible.iter().find(|f| f.params.iter().all(|p| p == r)) {
                    return Ok(f.clone());
                }
            }
            let (l, r) = texts();
            Err(EngineError::invalid(format!(
                "Ambiguous '{}' operation with args {l} and {r}: use type hint to disambiguate, example '(int) ?'",
                op.symbol()
            )))
        }
    }
}

impl Builder<'_> {
    /// An operation or negation with bind markers among its operands, for a receiver of type
    /// `ty` (`reversed`: a DESC clustering column, see [`refuse_reversed_tie`]): computed at
    /// execution in the type of the function Cassandra picks.
    pub(crate) fn operation_src(
        &mut self,
        t: &TableDef,
        term: &Term,
        ty: &T,
        reversed: bool,
    ) -> Result<Src, EngineError> {
        let f = pick(term, Some(ty), reversed)?;
        let (_, args) = operands(term);
        let mut srcs = Vec::with_capacity(args.len());
        for (i, (arg, param)) in args.iter().zip(&f.params).enumerate() {
            let name = format!("arg{i}(system.{})", f.name());
            let src = match arg {
                Term::Operation { .. } | Term::Negate(_) if super::contains_bind(arg) => {
                    self.operation_src(t, arg, param, false)?
                }
                _ => self.term(t, arg, &name, param)?,
            };
            srcs.push(src);
        }
        Ok(Src::Op(Box::new(crate::plan::OpSrc {
            op: match f.op {
                None => Callee::Negate,
                Some(op) => Callee::Arith(op),
            },
            params: f.params,
            ret: f.ret,
            out: ty.clone(),
            args: srcs,
        })))
    }
}

fn unparen(t: &Term) -> &Term {
    match t {
        Term::Tuple(v) if v.len() == 1 => unparen(&v[0]),
        other => other,
    }
}

/// Runs a resolved function on its arguments' values, giving a value of the receiver's type
/// `out`: an operator gives null if any argument is null; a native function as `call`
/// says.
pub(crate) fn apply(
    callee: Callee,
    params: &[T],
    ret: &T,
    out: &T,
    args: &[Option<Vec<u8>>],
) -> Result<Option<Vec<u8>>, EngineError> {
    let op = match callee {
        Callee::Native(name) => return super::call::apply(name, params, args),
        Callee::Negate => None,
        Callee::Arith(op) => Some(op),
    };
    if args.iter().any(Option::is_none) {
        return Ok(None);
    }
    let a: Vec<&[u8]> = args.iter().flatten().map(Vec::as_slice).collect();
    let v = match (op, a.as_slice()) {
        (None, [x]) => crate::arith::negate(ret, x)?,
        (Some(op), [l, r]) => crate::arith::apply(
            op,
            &counter_as_bigint(&params[0]),
            l,
            &counter_as_bigint(&params[1]),
            r,
            ret,
        )?,
        _ => {
            return Err(EngineError::invalid(
                "Invalid number of operation arguments",
            ))
        }
    };
    // The receiver takes the result's type as is; only a varint receiver wants its own
    // (minimal) encoding of an int or bigint result.
    if ret != out && matches!(out, T::Varint) && crate::arith::is_numeric(ret) {
        return crate::scalar::cast(ret, out, Some(&v)).map_err(EngineError::invalid);
    }
    Ok(Some(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The term assigned in `UPDATE t SET v = <text> WHERE k = 1`.
    fn term(text: &str) -> Term {
        let p = cql::parse(&format!("UPDATE t SET v = {text} WHERE k = 1")).unwrap();
        let cql::Statement::Update(u) = p.statement else {
            panic!("not an update")
        };
        match &u.assignments[0] {
            cql::ast::Assignment::Set { value, .. } => value.clone(),
            other => panic!("{other:?}"),
        }
    }

    fn picked(text: &str, receiver: T) -> Result<(Vec<T>, T), String> {
        resolve(&term(text), Some(&receiver))
            .map(|f| (f.params, f.ret))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn picks_the_function_cassandra_picks() {
        // An exact match wins at once, even when its result only fits the receiver weakly.
        assert_eq!(
            picked("(int) ? + 1", T::Int),
            Ok((vec![T::Int, T::Int], T::Int))
        );
        assert_eq!(
            picked("(int) ? + 1", T::Varint),
            Ok((vec![T::Int, T::Int], T::Int))
        );
        assert_eq!(
            picked("(bigint) ? + 1", T::Timestamp),
            Ok((vec![T::Bigint, T::Int], T::Bigint))
        );
        // The only compatible signature: int / double into a double.
        assert_eq!(
            picked("(int) ? / 2", T::Double),
            Ok((vec![T::Int, T::Double], T::Double))
        );
        assert_eq!(
            picked("(bigint) ? * 4", T::Bigint),
            Ok((vec![T::Bigint, T::Int], T::Bigint))
        );
        assert_eq!(
            picked("(bigint) ? * 4000000000", T::Varint),
            Ok((vec![T::Bigint, T::Bigint], T::Bigint))
        );
        // Several compatible, none exact nor a bare marker: the one typed as the receiver.
        assert_eq!(
            picked("(int) ? + null", T::Int),
            Ok((vec![T::Int, T::Int], T::Int))
        );
        assert_eq!(
            picked("(smallint) ? * 2", T::Int),
            Ok((vec![T::Smallint, T::Int], T::Int))
        );
        assert_eq!(
            picked("'a' + (text) ?", T::Varchar),
            Ok((vec![T::Ascii, T::Varchar], T::Varchar))
        );
        assert_eq!(
            picked("(timestamp) ? + 1d", T::Bigint),
            Ok((vec![T::Timestamp, T::Duration], T::Timestamp))
        );
        assert_eq!(picked("-(int) ?", T::Int), Ok((vec![T::Int], T::Int)));
        assert_eq!(
            picked("(int) ? + 1 + 2", T::Int),
            Ok((vec![T::Int, T::Int], T::Int))
        );
    }

    #[test]
    fn refuses_as_cassandra_does() {
        let ambiguous = |l: &str, r: &str, op: &str| {
            format!("Ambiguous '{op}' operation with args {l} and {r}: use type hint to disambiguate, example '(int) ?'")
        };
        let unsupported = |l: &str, r: &str, op: &str| {
            format!("the '{op}' operation is not supported between {l} and {r}")
        };
        let err = |text: &str, ty: T| picked(text, ty).unwrap_err();
        assert!(err("(int) ? * 2", T::Bigint).ends_with(&ambiguous("(int)?", "2", "*")));
        assert!(err("? + 1", T::Int).ends_with(&ambiguous("?", "1", "+")));
        assert!(err("(int) ? + 1.5", T::Decimal).ends_with(&ambiguous("(int)?", "1.5", "+")));
        assert!(err("(bigint) ? * 4", T::Int).ends_with(&unsupported("(bigint)?", "4", "*")));
        assert!(
            err("(smallint) ? + (tinyint) ?", T::Int).ends_with(&unsupported(
                "(smallint)?",
                "(tinyint)?",
                "+"
            ))
        );
        assert!(err("(date) ? + 1d", T::Timestamp).ends_with(&unsupported("(date)?", "1d", "+")));
        assert!(err("(int) ? + '1'", T::Int).ends_with(&unsupported("(int)?", "'1'", "+")));
        assert!(
            err("(int) ? + 1 - (text) ?", T::Int).ends_with(&unsupported(
                "system.\"_add\"((int)?, 1)",
                "(text)?",
                "-"
            ))
        );
    }

    #[test]
    fn a_reversed_receiver_has_no_tie_break() {
        let ambiguous = "Ambiguous '-' operation with args 5 and 2: use type hint to disambiguate, example '(int) ?'";
        let refused =
            |text: &str, ty: T| refuse_reversed_tie(&term(text), &ty).map_err(|e| e.to_string());
        assert!(refused("5 - 2", T::Smallint)
            .unwrap_err()
            .ends_with(ambiguous));
        assert!(refused("(5 - 2)", T::Bigint)
            .unwrap_err()
            .ends_with(ambiguous));
        // An exact match (two int literals for an int) or the only compatible signature
        // needs no tie-break.
        assert_eq!(refused("5 - 2", T::Int), Ok(()));
        assert_eq!(refused("5 - 2", T::Tinyint), Ok(()));
        assert_eq!(refused("1.5 - 1", T::Double), Ok(()));
        assert_eq!(refused("-(5 - 2)", T::Smallint), Ok(()));
        // With a hinted marker, the operation over markers is refused the same way.
        assert!(pick(&term("(smallint) ? - 2"), Some(&T::Smallint), true).is_err());
        assert!(pick(&term("(smallint) ? - 2"), Some(&T::Smallint), false).is_ok());
    }

    #[test]
    fn applies_in_the_picked_type() {
        let int = |v: i32| Some(v.to_be_bytes().to_vec());
        // int + int wraps.
        assert_eq!(
            apply(
                Callee::Arith(ArithOp::Add),
                &[T::Int, T::Int],
                &T::Int,
                &T::Int,
                &[int(i32::MAX), int(1)]
            )
            .unwrap(),
            int(i32::MIN)
        );
        // Null in, null out.
        assert_eq!(
            apply(
                Callee::Arith(ArithOp::Add),
                &[T::Int, T::Int],
                &T::Int,
                &T::Int,
                &[None, int(1)]
            )
            .unwrap(),
            None
        );
        // An int result into a varint receiver takes the varint's own encoding.
        assert_eq!(
            apply(
                Callee::Arith(ArithOp::Mul),
                &[T::Int, T::Int],
                &T::Int,
                &T::Varint,
                &[int(2), int(3)]
            )
            .unwrap(),
            Some(vec![6])
        );
        assert_eq!(
            apply(Callee::Negate, &[T::Int], &T::Int, &T::Int, &[int(5)]).unwrap(),
            int(-5)
        );
    }
}
