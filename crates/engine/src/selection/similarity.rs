//! Typing of a similarity function's arguments in a selection (`similarity_cosine(v, [1.0, ?])`):
//! a list literal holding bind markers as a float vector, and a marker typed by the other
//! argument.

use crate::build::Builder;
use crate::catalog::TableDef;
use crate::literal::const_term;
use crate::plan::*;
use crate::EngineError;
use cql::ast::{Literal, SelectorExpr as E, Term};
use proto::types::ColumnType;

impl Builder<'_> {
    /// A similarity function's vector literal holding a `null` or a list element, its other
    /// elements floats (`similarity_cosine(v, [1.0, null])`): typed as a float vector of its
    /// length, and the statement failed as 5.0.9 fails it: a nested list once the statement is
    /// otherwise prepared ("Unsupported target type: float"), a null at each execution, binding
    /// the literal (its serializer's MarshalException, naming each element's buffer, a literal
    /// float's a 4-byte one).
    pub(super) fn vector_literal_refused(&mut self, fname: &str, term: &Term) -> Option<SelExpr> {
        let Term::List(items) = term else {
            return None;
        };
        let ty = crate::similarity::list_literal_type(fname, items.len())?;
        let odd = |i: &Term| matches!(i, Term::Literal(Literal::Null) | Term::List(_));
        if !items.iter().any(odd) {
            return None;
        }
        let float = ColumnType::Float;
        if items
            .iter()
            .any(|i| !odd(i) && const_term(&float, i, self.now).is_err())
        {
            return None;
        }
        if items.iter().any(|i| matches!(i, Term::List(_))) {
            self.late_error.get_or_insert(
                "java.lang.IllegalArgumentException: Unsupported target type: float".to_string(),
            );
        } else {
            let null = items
                .iter()
                .position(|i| matches!(i, Term::Literal(Literal::Null)))
                .unwrap_or(0);
            let given: Vec<&str> = items
                .iter()
                .map(|i| match i {
                    Term::Literal(Literal::Null) => "null",
                    _ => "java.nio.HeapByteBuffer[pos=0 lim=4 cap=4]",
                })
                .collect();
            self.execution_error.get_or_insert(format!(
                "org.apache.cassandra.serializers.MarshalException: Element at index {null} is null (expected type float); given [{}]",
                given.join(", ")
            ));
        }
        Some(SelExpr::Const(ty, None))
    }

    /// A list literal holding bind markers as a similarity function's argument
    /// (`similarity_cosine(v, [1.0, ?])`): a float vector of its length, each marker a float
    /// (bare or cast to float), built when the row is read; any other element must be a float
    /// constant, else the argument is refused as one of another type.
    pub(super) fn vector_with_binds(
        &mut self,
        t: &TableDef,
        fname: &str,
        pos: usize,
        term: &Term,
        items: &[Term],
    ) -> Result<SelExpr, EngineError> {
        let ty = crate::similarity::list_literal_type(fname, items.len())
            .ok_or_else(|| EngineError::invalid("Invalid bind marker"))?;
        let refused = || {
            EngineError::invalid(format!(
                "Type error: {term} cannot be passed as argument {pos} of function system.{} of type {}",
                fname.to_ascii_lowercase(),
                crate::types::cql_type_name(&ty)
            ))
        };
        let float = ColumnType::Float;
        let mut args = Vec::with_capacity(items.len());
        for item in items {
            let marker = match item {
                Term::Bind(m) => Some(m),
                Term::TypeHint { ty: hint, term } => match &**term {
                    Term::Bind(m) if hint.as_native() == Some(&float) => Some(m),
                    _ => return Err(refused()),
                },
                _ => None,
            };
            args.push(match marker {
                Some(m) => {
                    let Src::Bind(i) = self.bind(t, m, "[selection]", &float) else {
                        return Err(EngineError::invalid("Invalid bind marker"));
                    };
                    SelExpr::Leaf(Box::new(Selector::Bind(i)), float.clone())
                }
                None => SelExpr::Const(
                    float.clone(),
                    const_term(&float, item, self.now).map_err(|_| refused())?,
                ),
            });
        }
        Ok(SelExpr::Call {
            name: crate::functions::VECTOR_OF_ARGS.into(),
            args,
            ty,
        })
    }
}

/// Whether a similarity function's arguments are typed second first: a marker first argument
/// takes the type of the second (Cassandra infers a float vector parameter from the other
/// argument); with none to take (a marker, null) it stays refused.
pub(super) fn marker_typed_by_second(fname: &str, args: &[E]) -> bool {
    crate::similarity::Similarity::from_function(fname).is_some()
        && matches!(args, [E::Term(Term::Bind(_)), second]
            if !matches!(second, E::Term(Term::Bind(_) | Term::Literal(Literal::Null))))
}

/// The type of a literal argument of a similarity function (`None` for another function): a
/// list literal is a float vector of its own length; another literal keeps its own type, for
/// the signature check to refuse by name.
pub(super) fn literal_arg_type(
    fname: &str,
    term: &Term,
    prev: &[ColumnType],
) -> Result<Option<ColumnType>, EngineError> {
    let similarity = crate::similarity::list_literal_type(fname, 0).is_some();
    if similarity && matches!(term, Term::List(items) if items.is_empty()) {
        return Err(EngineError::invalid(
            "vectors may only have positive dimensions; given 0",
        ));
    }
    Ok(
        crate::similarity::list_literal_type(fname, 0).and(match term {
            Term::List(items) => crate::similarity::list_literal_type(fname, items.len()),
            Term::Literal(Literal::Null) => prev.first().cloned(),
            // A set literal is a set of its elements' type (refused by name as no vector).
            Term::Set(_) => crate::fcts::literal_arg_type(term),
            _ => super::literal_type(term),
        }),
    )
}
