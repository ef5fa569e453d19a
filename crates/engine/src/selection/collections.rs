//! Literal lists, sets, maps and tuples of selectors (`SELECT [v, 3]`, `(v, w)`,
//! `(map<int, text>){v: w}`), typed and built as Cassandra 5.0.9's `Selectable.WithList`,
//! `WithSet`, `WithMapOrUdt` and tuple selectables do:
//!
//! * a list or set takes the type of its first item whose own type is known (a column, a
//!   function, a type-hinted literal or marker: not a bare literal, a bind marker or a selector
//!   in parentheses), a
//!   tuple the types of its items when all are known, a map never one of its own; otherwise
//!   the type something around it expects (a type hint), else "Cannot infer type for term";
//! * the other items are read as of the element type (`[w, 3]` of a text `w` fails as a
//!   constant 3 for "[selection]" of type text); an item of a known type is not checked
//!   against it, and its value goes in as it is, as there.

use super::{as_expr, selector_name, term_as_selector, AggCollector, Built};
use crate::build::Builder;
use crate::catalog::TableDef;
use crate::plan::{SelExpr, Selector, Src};
use crate::EngineError;
use cql::ast::{SelectorCollection, SelectorExpr as E, Term};
use proto::types::ColumnType;

/// Whether an item of type `ty` is a value of `want` where a hint asks for one: of a type
/// that takes it, and not a non-frozen collection or UDT column (a hinted type is frozen).
fn item_fits(t: &TableDef, item: &E, want: &ColumnType, ty: &ColumnType) -> bool {
    let multi_cell = matches!(item, E::Column(c)
        if t.column(c).is_some_and(|c| crate::exec::multi_cell_kind(c).is_some()));
    !multi_cell && crate::literal::receives(want, ty)
}

/// A literal term whose type Cassandra knows, as the selector it is: a type-hinted literal
/// (`(text) 'a'`, of the hint's type, as its `TypeCast` reports), and a literal list or set
/// with such an item (`[(int) 1, 2]` is a list<int>, `[(text) 'a', 1]` fails on the 1) or a
/// tuple of them all (`((int) 1, (text) 'x')`), at any depth.
pub(super) fn typed_literal(term: &Term) -> Option<E> {
    use SelectorCollection as C;
    let typed = |t: &Term| term_as_selector(t).is_some() || typed_literal(t).is_some();
    let items = |v: &[Term]| v.iter().map(|i| E::Term(i.clone())).collect::<Vec<_>>();
    Some(match term {
        Term::TypeHint { ty, term } => E::Cast {
            expr: Box::new(E::Term((**term).clone())),
            ty: ty.clone(),
            call: false,
        },
        Term::List(v) if v.iter().any(typed) => E::Collection(C::List(items(v))),
        Term::Set(v) if v.iter().any(typed) => E::Collection(C::Set(items(v))),
        Term::Tuple(v) if v.len() > 1 && v.iter().all(typed) => E::Collection(C::Tuple(items(v))),
        _ => return None,
    })
}

/// Whether Cassandra knows `e`'s type without anything around it (`getExactTypeIfKnown`).
fn has_own_type(e: &E) -> bool {
    match e {
        E::Term(term) => term_as_selector(term).is_some() || typed_literal(term).is_some(),
        E::Parens(_) => false,
        E::Collection(SelectorCollection::List(v) | SelectorCollection::Set(v)) => {
            v.iter().any(has_own_type)
        }
        E::Collection(SelectorCollection::Tuple(v)) => v.iter().all(has_own_type),
        E::Collection(SelectorCollection::Map(_)) => false,
        _ => true,
    }
}

impl Builder<'_> {
    /// The collection or tuple `e` (of items `c`), typed by its items or else `expected`;
    /// and whether it is a value of `expected` (Cassandra's `testAssignment` for a type
    /// hint: the same kind, and each item of a type of its own one of its element's type).
    pub(super) fn collection_selector(
        &mut self,
        t: &TableDef,
        e: &E,
        c: &SelectorCollection,
        expected: Option<&ColumnType>,
        mut agg: Option<&mut AggCollector>,
    ) -> Result<(Built, bool), EngineError> {
        let name = selector_name(e);
        let untyped = || {
            EngineError::invalid(format!(
                "Cannot infer type for term {name} in selection clause (try using a cast to force a type)"
            ))
        };
        let mut fits = true;
        let (ty, items) = match c {
            SelectorCollection::List(v) | SelectorCollection::Set(v) => {
                let want = match (c, expected) {
                    (SelectorCollection::List(_), Some(ColumnType::List(e)))
                    | (SelectorCollection::Set(_), Some(ColumnType::Set(e))) => Some(&**e),
                    _ => {
                        fits = expected.is_none();
                        None
                    }
                };
                let mut known = Vec::with_capacity(v.len());
                for item in v {
                    known.push(if has_own_type(item) {
                        Some(self.collection_item(t, item, None, agg.as_deref_mut())?.0)
                    } else {
                        None
                    });
                }
                if let Some(w) = want {
                    fits &= v
                        .iter()
                        .zip(&known)
                        .all(|(item, k)| k.as_ref().is_none_or(|k| item_fits(t, item, w, k.ty())));
                }
                let elem = match (known.iter().flatten().next(), want) {
                    (Some(first), _) => first.ty().clone(),
                    (None, Some(w)) => w.clone(),
                    (None, None) => return Err(untyped()),
                };
                let mut items = Vec::with_capacity(v.len());
                for (item, built) in v.iter().zip(known) {
                    items.push(match built {
                        Some(b) => b,
                        None => {
                            let (b, ok) =
                                self.collection_item(t, item, Some(&elem), agg.as_deref_mut())?;
                            fits &= ok;
                            b
                        }
                    });
                }
                let elem = Box::new(elem);
                let ty = match c {
                    SelectorCollection::List(_) => ColumnType::List(elem),
                    _ => ColumnType::Set(elem),
                };
                (ty, items)
            }
            SelectorCollection::Tuple(v) => {
                let types: Option<&Vec<ColumnType>> = match expected {
                    Some(ColumnType::Tuple(types)) if types.len() == v.len() => Some(types),
                    _ => {
                        fits = expected.is_none();
                        None
                    }
                };
                if types.is_none() && !v.iter().all(has_own_type) {
                    return Err(untyped());
                }
                let mut items = Vec::with_capacity(v.len());
                for (n, item) in v.iter().enumerate() {
                    let want = types.map(|ts| &ts[n]);
                    let (b, ok) = self.collection_item(t, item, want, agg.as_deref_mut())?;
                    fits &= ok;
                    items.push(b);
                }
                let ty = ColumnType::Tuple(items.iter().map(|i| i.ty().clone()).collect());
                (ty, items)
            }
            SelectorCollection::Map(pairs) => {
                let Some(ColumnType::Map(kt, vt)) = expected else {
                    return Err(untyped());
                };
                let mut items = Vec::with_capacity(pairs.len() * 2);
                for (k, v) in pairs {
                    for (item, want) in [(k, kt), (v, vt)] {
                        let (b, ok) =
                            self.collection_item(t, item, Some(want), agg.as_deref_mut())?;
                        fits &= ok;
                        items.push(b);
                    }
                }
                (ColumnType::Map(kt.clone(), vt.clone()), items)
            }
        };
        let built = (
            Selector::Expr(SelExpr::Collect {
                items,
                ty: ty.clone(),
            }),
            name,
            ty,
        );
        Ok((built, fits))
    }

    /// One item of a collection selector, of type `want` when it has none of its own; and
    /// whether it is a value of `want`.
    fn collection_item(
        &mut self,
        t: &TableDef,
        item: &E,
        want: Option<&ColumnType>,
        agg: Option<&mut AggCollector>,
    ) -> Result<(SelExpr, bool), EngineError> {
        const RECEIVER: &str = "[selection]";
        match (item, want) {
            (E::Term(term), Some(ty))
                if term_as_selector(term).is_none() && typed_literal(term).is_none() =>
            {
                Ok((
                    match term {
                        Term::Bind(m) => {
                            let Src::Bind(i) = self.bind(t, m, RECEIVER, ty) else {
                                return Err(EngineError::invalid("Invalid bind marker"));
                            };
                            SelExpr::Leaf(Box::new(Selector::Bind(i)), ty.clone())
                        }
                        other => SelExpr::Const(
                            ty.clone(),
                            crate::literal::const_term_for(RECEIVER, ty, other, self.now)?,
                        ),
                    },
                    true,
                ))
            }
            (E::Collection(c), _) => {
                let ((sel, _, ty), fits) = self.collection_selector(t, item, c, want, agg)?;
                Ok((as_expr(sel, ty), fits))
            }
            _ => {
                let (sel, _, ty) = self.selector(t, item, agg)?;
                let fits = want.is_none_or(|w| item_fits(t, item, w, &ty));
                Ok((as_expr(sel, ty), fits))
            }
        }
    }
}

/// The value of a [`SelExpr::Collect`] of type `ty` from its items' values: a list or tuple
/// as they are (a null item is a null element), a set sorted without duplicates, a map sorted
/// by key with the last value of a key written twice (Cassandra's `TreeMap`); null items of a
/// set or map are left out.
pub(crate) fn collect(ty: &ColumnType, vals: Vec<Option<Vec<u8>>>) -> Vec<u8> {
    let push = |out: &mut Vec<u8>, v: &Option<Vec<u8>>| match v {
        Some(v) => {
            out.extend_from_slice(&(v.len() as i32).to_be_bytes());
            out.extend_from_slice(v);
        }
        None => out.extend_from_slice(&(-1i32).to_be_bytes()),
    };
    let mut out = Vec::new();
    match ty {
        ColumnType::Tuple(_) => vals.iter().for_each(|v| push(&mut out, v)),
        ColumnType::Set(elem) => {
            let mut items: Vec<Vec<u8>> = vals.into_iter().flatten().collect();
            items.sort_by(|a, b| crate::types::compare(elem, a, b));
            items.dedup_by(|a, b| crate::types::compare(elem, a, b).is_eq());
            return crate::literal::encode_collection(&items);
        }
        ColumnType::Map(kt, _) => {
            let mut pairs: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::with_capacity(vals.len() / 2);
            let mut it = vals.into_iter();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                if let Some(k) = k {
                    pairs.retain(|(x, _)| !crate::types::compare(kt, x, &k).is_eq());
                    pairs.push((k, v));
                }
            }
            pairs.sort_by(|a, b| crate::types::compare(kt, &a.0, &b.0));
            out.extend_from_slice(&(pairs.len() as i32).to_be_bytes());
            for (k, v) in &pairs {
                push(&mut out, &Some(k.clone()));
                push(&mut out, v);
            }
        }
        _ => {
            out.extend_from_slice(&(vals.len() as i32).to_be_bytes());
            vals.iter().for_each(|v| push(&mut out, v));
        }
    }
    out
}
