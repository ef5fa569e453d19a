//! Native function calls inside terms (`VALUES (now(), toTimestamp(now()))`,
//! `WHERE t > currentTimestamp()`): each argument is typed by the function's signature, and the
//! call is evaluated by the one native function evaluator (`scalar::call_at`) at the
//! statement's clock. A plan holding such a call is volatile: rebuilt at each execution.

use crate::literal::const_term;
use crate::{EngineError, Now};
use cql::ast::Term;
use proto::types::ColumnType;

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
    let types: Vec<ColumnType> = typed.iter().map(|(t, _)| t.clone()).collect();
    let ret = crate::scalar::return_type(name, &types).map_err(EngineError::invalid)?;
    // A timeuuid fits a uuid receiver, a timestamp a bigint one (value-compatible types).
    let fits = ret == *ty
        || matches!(
            (&ret, ty),
            (ColumnType::Timeuuid, ColumnType::Uuid)
                | (ColumnType::Timestamp, ColumnType::Bigint)
                | (ColumnType::Bigint, ColumnType::Timestamp)
        );
    if !fits {
        return Err(EngineError::invalid(match receiver {
            Some(r) => format!(
                "Type error: cannot assign result of function system.{} (type {}) to {r} (type {})",
                name.to_ascii_lowercase(),
                crate::types::cql_type_name(&ret),
                crate::types::cql_type_name(ty)
            ),
            None => format!(
                "Type error: {name}() cannot be passed as argument of type {}",
                crate::types::cql_type_name(ty)
            ),
        }));
    }
    crate::scalar::call_at(name, &typed, now.micros).map_err(EngineError::invalid)
}
