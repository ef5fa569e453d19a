//! Typing of a function call's literal and bind-marker arguments in a selection: each by the
//! function's signatures at its position, as Cassandra 5.0.9 infers it, and the refusals it
//! gives when it cannot.

use super::{literal_type, names};
use crate::build::Builder;
use crate::catalog::TableDef;
use crate::literal::const_term;
use crate::plan::*;
use crate::EngineError;
use cql::ast::{self, Literal, Term};
use proto::types::ColumnType;

impl Builder<'_> {
    /// A bind marker as a function argument: typed by the function's only signature at that
    /// position (Cassandra refuses an ambiguous one), named `[selection]`.
    pub(super) fn bind_arg(
        &mut self,
        t: &TableDef,
        m: &ast::BindMarker,
        fname: &str,
        arity: usize,
        pos: usize,
        prev: &[ColumnType],
    ) -> Result<SelExpr, EngineError> {
        if let Some(kind) = crate::fcts::collection_param(fname) {
            let f = fname.to_ascii_lowercase();
            return Err(EngineError::invalid(cannot_infer(&f, kind, "?")));
        }
        let candidates = match crate::similarity::bind_type(fname, prev) {
            Some(ty) => vec![ty.map_err(EngineError::invalid)?],
            None => match crate::fcts::param_type(fname, pos, prev) {
                Some(ty) => vec![ty],
                None => crate::scalar::param_types(fname, arity, pos),
            },
        };
        let [ty] = candidates.as_slice() else {
            return Err(EngineError::invalid(crate::scalar::ambiguous_call(
                fname, arity,
            )));
        };
        let Src::Bind(i) = self.bind(t, m, "[selection]", ty) else {
            return Err(EngineError::invalid("Invalid bind marker"));
        };
        Ok(SelExpr::Leaf(Box::new(Selector::Bind(i)), ty.clone()))
    }

    /// A literal list holding bind markers as a collection function's argument
    /// (`collection_sum([1, ?])`): typed by its other elements as Cassandra 5.0.9 types it,
    /// each marker an element of that type, built when the row is read.
    pub(super) fn list_with_binds(
        &mut self,
        t: &TableDef,
        fname: &str,
        term: &Term,
        items: &[Term],
    ) -> Result<SelExpr, EngineError> {
        let kind = crate::fcts::collection_param(fname).unwrap_or("collection");
        let ty = collection_literal_type(fname, kind, term)?;
        let (ColumnType::List(e) | ColumnType::Set(e)) = &ty else {
            return Err(EngineError::invalid("Invalid bind marker"));
        };
        let call = match ty {
            ColumnType::Set(_) => crate::functions::SET_OF_ARGS,
            _ => crate::functions::LIST_OF_ARGS,
        };
        let mut args = Vec::with_capacity(items.len());
        for item in items {
            args.push(match item {
                Term::Bind(m) => {
                    let Src::Bind(i) = self.bind(t, m, "[selection]", e) else {
                        return Err(EngineError::invalid("Invalid bind marker"));
                    };
                    SelExpr::Leaf(Box::new(Selector::Bind(i)), (**e).clone())
                }
                other => SelExpr::Const(
                    (**e).clone(),
                    const_term(e, &hex_items_as_tinyint(other), self.now)?,
                ),
            });
        }
        Ok(SelExpr::Call {
            name: call.into(),
            args,
            ty,
        })
    }
}

/// A literal argument of a function: typed by the function's signatures at that position
/// (its own literal type first), as Cassandra infers it.
pub(super) fn literal_arg(
    fname: &str,
    arity: usize,
    pos: usize,
    term: &Term,
    (prev, prev_shown): (&[ColumnType], &[String]),
    now: crate::Now,
) -> Result<SelExpr, EngineError> {
    let similarity_ty = super::similarity::literal_arg_type(fname, term, prev)?;
    // A masking function typed by its first argument takes a literal there as the literal's
    // own type (Cassandra's preferred type: `mask_hash('abc')` hashes an ascii value).
    if let Some(params) = crate::fcts::mask_any_params(fname, pos) {
        // A hex constant is its bytes, typed tinyint, unchecked (Constants.Literal).
        if let Term::Literal(Literal::Blob(h)) = term {
            if let Some(b) = crate::literal::parse_hex(h) {
                return Ok(SelExpr::Const(ColumnType::Tinyint, Some(b)));
            }
        }
        let Some(ty) = crate::fcts::literal_arg_type(term) else {
            return Err(EngineError::invalid(format!(
                "Cannot infer type of argument {} in call to function system.{}({params}): use type casts to disambiguate",
                names::term_name(term),
                fname.to_ascii_lowercase()
            )));
        };
        return const_term(&ty, term, now).map(|v| SelExpr::Const(ty, v));
    }
    if let Some(ty) = similarity_ty.or_else(|| crate::fcts::param_type(fname, pos, prev)) {
        return match const_term(&ty, term, now) {
            Ok(v) => Ok(SelExpr::Const(ty, v)),
            // A constant is weakly assignable to a tuple, and an integer to a duration: its
            // reading's own error stands ("Unable to convert '1' to a duration").
            Err(e) if matches!(ty, ColumnType::Tuple(_)) && matches!(term, Term::Literal(_)) => {
                Err(e)
            }
            Err(e)
                if ty == ColumnType::Duration
                    && matches!(term, Term::Literal(Literal::Integer(_))) =>
            {
                Err(e)
            }
            Err(_) => Err(EngineError::invalid(format!(
                "Type error: {term} cannot be passed as argument {pos} of function system.{} of type {}",
                fname.to_ascii_lowercase(),
                match (fname.eq_ignore_ascii_case("mask_replace"), prev_shown.first()) {
                    (true, Some(shown)) => shown.clone(),
                    _ => crate::types::cql_type_name(&ty),
                }
            ))),
        };
    }
    if let Some(kind) = crate::fcts::collection_param(fname) {
        return collection_literal_arg(fname, kind, term, now);
    }
    let mut candidates = crate::scalar::param_types(fname, arity, pos);
    if let Some(own) = literal_type(term) {
        if let Some(i) = candidates.iter().position(|c| *c == own) {
            candidates.swap(0, i);
        }
    }
    for ty in candidates {
        if let Ok(v) = const_term(&ty, term, now) {
            return Ok(SelExpr::Const(ty, v));
        }
    }
    Err(EngineError::invalid(format!(
        "Cannot infer type for term {} in selection clause (try using a cast to force a type)",
        names::term_name(term)
    )))
}

/// A literal argument of a collection function (`collection_sum([1, 2])`), typed as
/// Cassandra 5.0 types it (`fcts::literal_arg_type`); a literal collection is frozen in the
/// messages that name its type.
pub(super) fn collection_literal_arg(
    fname: &str,
    kind: &str,
    term: &Term,
    now: crate::Now,
) -> Result<SelExpr, EngineError> {
    let ty = collection_literal_type(fname, kind, term)?;
    if let (ColumnType::List(e), Term::List(items)) = (&ty, term) {
        // A null element stays in the list (a literal list elsewhere refuses it): counted by
        // collection_count, skipped by the others.
        if items
            .iter()
            .any(|i| matches!(i, Term::Literal(Literal::Null)))
        {
            let mut out = (items.len() as i32).to_be_bytes().to_vec();
            for item in items {
                match const_term(e, &hex_items_as_tinyint(item), now)? {
                    Some(b) => {
                        out.extend((b.len() as i32).to_be_bytes());
                        out.extend(b);
                    }
                    None => out.extend((-1i32).to_be_bytes()),
                }
            }
            return Ok(SelExpr::Const(ty.clone(), Some(out)));
        }
    }
    Ok(SelExpr::Const(
        ty.clone(),
        const_term(&ty, &hex_items_as_tinyint(term), now)?,
    ))
}

/// The hex literals of a collection typed tinyint (Cassandra's preferred type for hex) as
/// the integers Cassandra reads from them, their first bytes: `[0x01, 0xff02]` holds 1 and
/// -1.
pub(super) fn hex_items_as_tinyint(term: &Term) -> Term {
    match term {
        Term::Literal(Literal::Blob(_)) => {
            crate::functions::hex_as_tinyint(term).unwrap_or_else(|| term.clone())
        }
        Term::List(items) => Term::List(items.iter().map(hex_items_as_tinyint).collect()),
        Term::Set(items) => Term::Set(items.iter().map(hex_items_as_tinyint).collect()),
        other => other.clone(),
    }
}

/// The type of a literal argument of a collection function, checked against the function
/// (`fcts::literal_call_types`).
pub(super) fn collection_literal_type(
    fname: &str,
    _kind: &str,
    term: &Term,
) -> Result<ColumnType, EngineError> {
    crate::fcts::literal_call_types(fname, term, crate::fcts::literal_arg_type(term))
        .map(|(ty, _)| ty)
        .map_err(EngineError::invalid)
}

/// Cassandra's refusal of an argument whose type it cannot infer.
pub(super) fn cannot_infer(f: &str, kind: &str, arg: impl std::fmt::Display) -> String {
    format!(
        "Cannot infer type of argument {arg} in call to function system.{f}({kind}): use type casts to disambiguate"
    )
}

/// Cassandra names the offending argument by its text in a signature mismatch: "Type error:
/// t cannot be passed as argument 0 of function ...".
pub(super) fn name_the_argument(message: String, names: &[String]) -> String {
    let Some(rest) = message.strip_prefix("Type error: an argument of type ") else {
        return message;
    };
    let Some((_, tail)) = rest.split_once(" cannot be passed as argument ") else {
        return message;
    };
    let pos: Option<usize> = tail.split(' ').next().and_then(|p| p.parse().ok());
    match pos.and_then(|p| names.get(p)) {
        Some(n) => format!("Type error: {n} cannot be passed as argument {tail}"),
        None => message,
    }
}
