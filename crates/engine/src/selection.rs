//! The SELECT clause and GROUP BY of a plan: selectors (columns, `writetime`/`ttl`, `token`,
//! UDT fields, native functions, casts, typed literals, arithmetic), aggregates (`count`,
//! `min`, `max`, `sum`, `avg`) mixed with plain selectors, and the group key (`group_by`).
//! Each output column gets Cassandra's name and type.
//!
//! An aggregate selection is split in three (see [`AggSelection`]): the aggregates, folded per
//! row; the largest aggregate-free sub-expressions ("firsts"), evaluated once on the group's
//! first row; and one output expression per column over those two.

use crate::arith;
use crate::build::Builder;
use crate::catalog::{ColumnKind, TableDef};
use crate::literal::const_term;
use crate::plan::*;
use crate::EngineError;
use cql::ast::{self, ArithOp, Literal, SelectorExpr as E, Term};
use proto::types::ColumnType;

mod args;
mod collections;
mod elements;
mod group_by;
mod names;
mod similarity;

use args::{literal_arg, name_the_argument};
pub(crate) use collections::collect;
use elements::element_types;
pub(crate) use elements::{element, slice};
pub(crate) use names::term_text;
use names::{precedence, precedence_of, selector_name};

/// What an aggregate selection collects while its selectors are built.
#[derive(Default)]
pub(crate) struct AggCollector {
    aggs: Vec<Aggregate>,
    firsts: Vec<Selector>,
}

/// A built selector: what to evaluate, its output column name and type.
type Built = (Selector, String, ColumnType);

const SUM_SIGS: &str = "system.sum : (double) -> double, system.sum : (decimal) -> decimal, system.sum : (float) -> float, system.sum : (varint) -> varint, system.sum : (smallint) -> smallint, system.sum : (counter) -> counter, system.sum : (tinyint) -> tinyint, system.sum : (bigint) -> bigint, system.sum : (int) -> int";
const AVG_SIGS: &str = "system.avg : (double) -> double, system.avg : (varint) -> varint, system.avg : (float) -> float, system.avg : (int) -> int, system.avg : (smallint) -> smallint, system.avg : (decimal) -> decimal, system.avg : (counter) -> counter, system.avg : (bigint) -> bigint, system.avg : (tinyint) -> tinyint";

/// The aggregate a selector calls at its top, if any.
fn aggregate_kind(e: &E) -> Option<AggKind> {
    match e {
        E::CountRows => Some(AggKind::CountRows),
        E::Function { name, args } if args.len() == 1 => {
            Some(match name.name.to_ascii_lowercase().as_str() {
                "count" if matches!(args[0], E::Term(_)) => AggKind::CountRows,
                "count" => AggKind::Count,
                "min" => AggKind::Min,
                "max" => AggKind::Max,
                "sum" => AggKind::Sum,
                "avg" => AggKind::Avg,
                _ => return None,
            })
        }
        _ => None,
    }
}

/// Whether a selector may call a function of this name: a native aggregate, scalar,
/// collection, masking or similarity function.
fn known_function(name: &str) -> bool {
    matches!(
        name.to_ascii_lowercase().as_str(),
        "count" | "min" | "max" | "sum" | "avg"
    ) || crate::scalar::is_native(name)
        || crate::fcts::return_type(name, &[]).is_some()
}

/// Cassandra's refusal of a native aggregate called with other than one argument (`max(v,
/// c)`, `count()`): `min` and `max` are function factories, `count` has one signature, `sum`
/// and `avg` several (their list as `aggregate` gives it).
fn aggregate_arity_refusal(name: &ast::FunctionName, n: usize) -> Option<String> {
    if n == 1
        || !name
            .keyspace
            .as_deref()
            .is_none_or(|ks| ks.eq_ignore_ascii_case("system"))
    {
        return None;
    }
    let f = name.name.to_ascii_lowercase();
    Some(match f.as_str() {
        "min" | "max" => format!("Invalid number of arguments for function system.{f}(any)"),
        "count" => format!(
            "Invalid number of arguments in call to function system.count: 1 required but {n} provided"
        ),
        "sum" => format!("Invalid call to function sum, none of its type signatures match (known type signatures: {SUM_SIGS})"),
        "avg" => format!("Invalid call to function avg, none of its type signatures match (known type signatures: {AVG_SIGS})"),
        _ => return None,
    })
}

pub(crate) fn contains_aggregate(e: &E) -> bool {
    if aggregate_kind(e).is_some() {
        return true;
    }
    match e {
        E::Function { args, .. } => args.iter().any(contains_aggregate),
        E::Cast { expr, .. } | E::Field { expr, .. } | E::Parens(expr) => contains_aggregate(expr),
        E::TypeHint { expr, .. } => contains_aggregate(expr),
        E::Element { expr, .. } | E::Slice { expr, .. } => contains_aggregate(expr),
        E::Operation { left, right, .. } => contains_aggregate(left) || contains_aggregate(right),
        E::Collection(c) => c.items().into_iter().any(contains_aggregate),
        _ => false,
    }
}

/// The type an untyped literal takes in an operation: the smallest of int/bigint/varint that
/// holds an integer, double for a float, ascii for a string, duration for a duration; None
/// when it has none (a bind marker, null, ...).
pub(crate) fn literal_type(t: &Term) -> Option<ColumnType> {
    match unparen(t) {
        Term::Literal(Literal::Integer(s)) => Some(match s.parse::<i128>() {
            Ok(v) if i32::try_from(v).is_ok() => ColumnType::Int,
            Ok(v) if i64::try_from(v).is_ok() => ColumnType::Bigint,
            _ => ColumnType::Varint,
        }),
        Term::Literal(Literal::Float(_)) => Some(ColumnType::Double),
        Term::Literal(Literal::String(_)) => Some(ColumnType::Ascii),
        Term::Literal(Literal::Duration(_)) => Some(ColumnType::Duration),
        Term::Literal(Literal::Blob(_)) => Some(ColumnType::Blob),
        Term::Literal(Literal::Boolean(_)) => Some(ColumnType::Boolean),
        Term::Literal(Literal::Uuid(_)) => Some(ColumnType::Uuid),
        Term::Negate(inner) => literal_type(inner).filter(arith::is_numeric),
        _ => None,
    }
}

/// Whether `e` is a DESC clustering column, or a view's partition key column taken from one
/// (`desc` marks both): Cassandra types it as a ReversedType of its own, which casts,
/// collection functions and toJson() of its elements treat as another type.
fn is_desc_clustering(t: &TableDef, e: &E) -> bool {
    matches!(e, E::Column(c) if t.columns.iter().any(|x| x.name == *c && x.desc))
}

/// A term in selector position, as a selector (operations, negations and calls of terms are
/// built like those of selectors).
fn term_as_selector(t: &Term) -> Option<E> {
    Some(match unparen(t) {
        Term::Operation { op, left, right } => E::Operation {
            op: *op,
            left: Box::new(E::Term((**left).clone())),
            right: Box::new(E::Term((**right).clone())),
        },
        Term::FunctionCall { name, args } => E::Function {
            name: name.clone(),
            args: args.iter().map(|a| E::Term(a.clone())).collect(),
        },
        _ => return None,
    })
}

/// A literal list, set, map or tuple with a bind marker among its items, as the selector
/// collection of its items.
fn collection_of_markers(t: &Term) -> Option<ast::SelectorCollection> {
    use ast::SelectorCollection as C;
    let items = |v: &[Term]| v.iter().map(|i| E::Term(i.clone())).collect::<Vec<_>>();
    let marker = |i: &Term| matches!(i, Term::Bind(_));
    Some(match t {
        Term::List(v) if v.iter().any(marker) => C::List(items(v)),
        Term::Set(v) if v.iter().any(marker) => C::Set(items(v)),
        Term::Tuple(v) if v.len() > 1 && v.iter().any(marker) => C::Tuple(items(v)),
        Term::Map(v) if v.iter().any(|(k, x)| marker(k) || marker(x)) => C::Map(
            v.iter()
                .map(|(k, x)| (E::Term(k.clone()), E::Term(x.clone())))
                .collect(),
        ),
        _ => return None,
    })
}

/// `(term)`: a parenthesized term parses as a one-element tuple.
pub(crate) fn unparen(t: &Term) -> &Term {
    match t {
        Term::Tuple(v) if v.len() == 1 => unparen(&v[0]),
        other => other,
    }
}

impl Builder<'_> {
    /// The SELECT clause (and GROUP BY) of `s` over `t`: what each result row holds.
    pub(crate) fn selection(
        &mut self,
        t: &TableDef,
        s: &ast::SelectStatement,
    ) -> Result<(Selection, Vec<OutputColumn>), EngineError> {
        let mut output = Vec::new();
        let list: Vec<(E, Option<String>)> = match &s.selection {
            // `*`: the primary key, then static columns, then regular ones (by name).
            ast::Selection::Wildcard => {
                let mut cols: Vec<_> = t
                    .columns
                    .iter()
                    .filter(|c| {
                        !s.distinct
                            || matches!(c.kind, ColumnKind::PartitionKey | ColumnKind::Static)
                    })
                    .collect();
                cols.sort_by_key(|c| match c.kind {
                    ColumnKind::PartitionKey => 0,
                    ColumnKind::Clustering => 1,
                    ColumnKind::Static => 2,
                    ColumnKind::Regular => 3,
                });
                cols.into_iter()
                    .map(|c| (E::Column(c.name.clone()), None))
                    .collect()
            }
            ast::Selection::Selectors(l) => l
                .iter()
                .map(|x| (x.expr.clone(), x.alias.clone()))
                .collect(),
        };
        // Cassandra prepares the selectors one after the other: the first error of the first
        // selector that has one, a column it does not know before a term it cannot type
        // (`SELECT 1, nope` fails on the 1, `SELECT [nope, 1]` on nope).
        let aggregate = !s.group_by.is_empty() || list.iter().any(|(e, _)| contains_aggregate(e));
        let mut col = AggCollector::default();
        let mut sels = Vec::with_capacity(list.len());
        for (e, alias) in &list {
            self.check_columns(t, e)?;
            // A selector in parentheses has no type of its own in Cassandra, and nothing
            // around it gives one at the top of the selection.
            if matches!(e, E::Parens(_)) {
                return Err(EngineError::invalid(format!(
                    "Cannot infer type for term {} in selection clause (try using a cast to force a type)",
                    selector_name(e)
                )));
            }
            let (sel, name, ty) = self.selector(t, e, aggregate.then_some(&mut col))?;
            // A PER PARTITION LIMIT is refused first (`select` does).
            if !aggregate && s.distinct && s.per_partition_limit.is_none() {
                check_distinct_column(t, &sel)?;
            }
            sels.push(sel);
            output.push(OutputColumn {
                name: alias.clone().unwrap_or(name),
                ty,
            });
        }
        if !aggregate {
            return Ok((Selection::Rows(sels), output));
        }
        Ok((
            Selection::Aggregates(Box::new(AggSelection {
                aggs: col.aggs,
                firsts: col.firsts,
                outputs: sels,
                // Set by the GROUP BY, which Cassandra checks after the selection.
                group_by: None,
                group_fn: None,
            })),
            output,
        ))
    }

    /// Fails on the first column `e` names that `t` does not have.
    pub(crate) fn check_columns(&self, t: &TableDef, e: &E) -> Result<(), EngineError> {
        let mut names = Vec::new();
        crate::build::selector_columns(e, &mut names);
        names.iter().try_for_each(|c| self.column(t, c).map(|_| ()))
    }

    /// One selector. With `agg` (an aggregate selection), aggregates become
    /// [`Selector::Agg`] leaves and aggregate-free sub-expressions [`Selector::First`] leaves.
    pub(crate) fn selector(
        &mut self,
        t: &TableDef,
        e: &E,
        mut agg: Option<&mut AggCollector>,
    ) -> Result<Built, EngineError> {
        if let Some(col) = agg.as_deref_mut() {
            if let Some(kind) = aggregate_kind(e) {
                return self.aggregate(t, e, kind, col);
            }
            if !contains_aggregate(e) {
                let (sel, name, ty) = self.selector(t, e, None)?;
                col.firsts.push(sel);
                return Ok((Selector::First(col.firsts.len() - 1), name, ty));
            }
        }
        let regular = |b: &Self, name: &str, what: &str| -> Result<usize, EngineError> {
            let (i, c) = b.column(t, name)?;
            if matches!(c.kind, ColumnKind::PartitionKey | ColumnKind::Clustering) {
                return Err(EngineError::invalid(format!(
                    "Cannot use selection function {what} on PRIMARY KEY part {name}"
                )));
            }
            Ok(i)
        };
        Ok(match e {
            E::Column(name) => {
                let (i, c) = self.column(t, name)?;
                (Selector::Column(i), c.name.clone(), c.ty.clone())
            }
            // Of a non-frozen collection, one per element (Cassandra 5.0).
            E::WriteTime(name) => {
                let i = regular(self, name, "writetime")?;
                (
                    Selector::WriteTime(i),
                    format!("writetime({name})"),
                    per_cell(&t.columns[i], ColumnType::Bigint),
                )
            }
            E::MaxWriteTime(name) => (
                Selector::MaxWriteTime(regular(self, name, "maxwritetime")?),
                format!("maxwritetime({name})"),
                ColumnType::Bigint,
            ),
            E::Ttl(name) => {
                let i = regular(self, name, "ttl")?;
                (
                    Selector::Ttl(i),
                    format!("ttl({name})"),
                    per_cell(&t.columns[i], ColumnType::Int),
                )
            }
            E::ElementTime { func, column, key } => {
                let i = regular(self, column, &func.to_string())?;
                let c = &t.columns[i];
                let key_ty = match &c.ty {
                    ColumnType::Set(k) | ColumnType::Map(k, _) => (**k).clone(),
                    ColumnType::List(_) => {
                        return Err(EngineError::invalid(format!(
                            "Element selection is only allowed on sets and maps, but {column} is a list"
                        )))
                    }
                    other => {
                        return Err(EngineError::invalid(format!(
                            "Invalid element selection: {column} is of type {} is not a collection",
                            crate::types::cql_type_name(other)
                        )))
                    }
                };
                let src = self.term(t, key, &format!("key({column})"), &key_ty)?;
                (
                    Selector::ElementTime {
                        func: *func,
                        column: i,
                        key: src,
                    },
                    selector_name(e),
                    match func {
                        cql::ast::CellTimeFn::Ttl => ColumnType::Int,
                        _ => ColumnType::Bigint,
                    },
                )
            }
            E::SliceTime {
                func,
                column,
                from,
                to,
            } => {
                let i = regular(self, column, &func.to_string())?;
                let c = &t.columns[i];
                let key_ty = match &c.ty {
                    ColumnType::Set(k) | ColumnType::Map(k, _) => (**k).clone(),
                    ColumnType::List(_) => {
                        return Err(EngineError::invalid(format!(
                            "Slice selection is only allowed on sets and maps, but {column} is a list"
                        )))
                    }
                    other => {
                        return Err(EngineError::invalid(format!(
                            "Invalid slice selection: {column} of type {} is not a collection",
                            crate::types::cql_type_name(other)
                        )))
                    }
                };
                // Of a non-frozen collection, one time per element in the slice; of a frozen
                // one (a single cell), that cell's.
                let per_element = crate::exec::multi_cell_kind(c).is_some()
                    && *func != cql::ast::CellTimeFn::MaxWriteTime;
                let receiver = format!("key({column})");
                let mut bound = |b: &Option<Term>| -> Result<Option<Src>, EngineError> {
                    let Some(term) = b else { return Ok(None) };
                    let src = self.term(t, term, &receiver, &key_ty)?;
                    if src == Src::Const(None) {
                        return Err(EngineError::invalid(format!(
                            "Invalid null value for slice selection on {column}"
                        )));
                    }
                    Ok(Some(src))
                };
                let (from, to) = (bound(from)?, bound(to)?);
                let scalar = match func {
                    cql::ast::CellTimeFn::Ttl => ColumnType::Int,
                    _ => ColumnType::Bigint,
                };
                (
                    Selector::SliceTime {
                        func: *func,
                        column: i,
                        from,
                        to,
                    },
                    selector_name(e),
                    if per_element {
                        ColumnType::List(Box::new(scalar))
                    } else {
                        scalar
                    },
                )
            }
            E::FieldTime {
                func,
                column,
                fields,
            } => {
                let i = regular(self, column, &func.to_string())?;
                // Each field by its position, through nested UDTs, with Cassandra's messages.
                let mut ty = &t.columns[i].ty;
                let mut path = column.clone();
                let mut positions = Vec::with_capacity(fields.len());
                for f in fields {
                    // The column's type as declared; a UDT nested in one is always frozen.
                    let type_text = match ty {
                        _ if positions.is_empty() => t.columns[i].cql_type.clone(),
                        ColumnType::Udt { .. } => {
                            format!("frozen<{}>", crate::types::cql_type_name(ty))
                        }
                        _ => crate::types::cql_type_name(ty),
                    };
                    let ColumnType::Udt { fields: defs, .. } = ty else {
                        return Err(EngineError::invalid(format!(
                            "Invalid field selection: {path} of type {type_text} is not a user type"
                        )));
                    };
                    let Some(pos) = defs.iter().position(|(n, _)| n == f) else {
                        return Err(EngineError::invalid(format!(
                            "{path} of type {type_text} has no field {f}"
                        )));
                    };
                    positions.push(pos);
                    ty = &defs[pos].1;
                    path = format!("{path}.{f}");
                }
                (
                    Selector::FieldTime {
                        func: *func,
                        column: i,
                        fields: positions,
                    },
                    selector_name(e),
                    match func {
                        cql::ast::CellTimeFn::Ttl => ColumnType::Int,
                        _ => ColumnType::Bigint,
                    },
                )
            }
            E::Function { name, args } if name.name.eq_ignore_ascii_case("token") => {
                self.token_call(t, args, agg)?
            }
            E::Field { expr, field } => {
                let (inner, name, ty) = self.selector(t, expr, agg)?;
                // A column's type as declared; a UDT inside another value is always frozen.
                let type_text = match (&**expr, &ty) {
                    (E::Column(c), _) => self.column(t, c)?.1.cql_type.clone(),
                    (_, ColumnType::Udt { .. }) => {
                        format!("frozen<{}>", crate::types::cql_type_name(&ty))
                    }
                    _ => crate::types::cql_type_name(&ty),
                };
                let ColumnType::Udt { fields, .. } = &ty else {
                    return Err(EngineError::invalid(format!(
                        "Invalid field selection: {name} of type {type_text} is not a user type"
                    )));
                };
                let Some(pos) = fields.iter().position(|(f, _)| f == field) else {
                    return Err(EngineError::invalid(format!(
                        "{name} of type {type_text} has no field {field}"
                    )));
                };
                let field_ty = fields[pos].1.clone();
                // A column's field reads the cell directly; any other UDT value is decoded.
                let sel = match inner {
                    Selector::Column(i) => Selector::Field(i, pos),
                    other => Selector::Expr(SelExpr::Field {
                        udt: Box::new(as_expr(other, ty.clone())),
                        pos,
                        ty: field_ty.clone(),
                    }),
                };
                (sel, format!("{name}.{field}"), field_ty)
            }
            // `(type) literal`: a typed constant.
            // `CAST(literal AS type)`: Cassandra types the literal first, and cannot.
            E::Cast {
                expr, call: true, ..
            } if matches!(&**expr, E::Term(term)
                if term_as_selector(term).is_none() && collections::typed_literal(term).is_none()) =>
            {
                return Err(EngineError::invalid(format!(
                    "Cannot infer type for term {} in selection clause (try using a cast to force a type)",
                    selector_name(expr)
                )));
            }
            E::Cast { expr, ty, .. } if matches!(**expr, E::Term(_)) => {
                let E::Term(term) = &**expr else {
                    return Err(EngineError::invalid("Invalid type hint"));
                };
                let to = crate::ddl::resolve_type(self.schema, &t.keyspace, ty)?;
                if let Term::Bind(m) = term {
                    let Src::Bind(i) = self.bind(t, m, "[selection]", &to) else {
                        return Err(EngineError::invalid("Invalid bind marker"));
                    };
                    return Ok((Selector::Bind(i), format!("({ty})?"), to));
                }
                // A literal collection or tuple holding markers (`(list<int>)[1, ?]`) is a
                // selector of its items, each marker one of the element type, as in Cassandra.
                if let Some(c) = collection_of_markers(term) {
                    let e = E::Collection(c.clone());
                    let ((sel, _, _), _) = self.collection_selector(t, &e, &c, Some(&to), agg)?;
                    let sel = match sel {
                        Selector::Expr(SelExpr::Collect { items, .. }) => {
                            Selector::Expr(SelExpr::Collect {
                                items,
                                ty: to.clone(),
                            })
                        }
                        other => other,
                    };
                    return Ok((sel, format!("({ty}){}", names::term_name(term)), to));
                }
                // A literal the hint's type does not take (Cassandra's `testAssignment`) is
                // refused as the hint; a value it cannot make (`(int) 99999999999`) as such.
                let v = const_term(&to, term, self.now).map_err(|e| match &e {
                    EngineError::Db(db)
                        if db.message().starts_with("Invalid ")
                            && (db.message().contains(" constant (")
                                || db.message().contains(" literal")) =>
                    {
                        let shown = format!(
                            "({}){}",
                            qualified_udts(ty, &t.keyspace),
                            names::term_name(term)
                        );
                        cannot_assign(&shown, ty)
                    }
                    _ => e,
                })?;
                (Selector::Const(v), format!("({ty}){}", names::term_name(term)), to)
            }
            E::Cast { expr, ty, .. } => {
                let (inner, name, from) = self.selector(t, expr, agg)?;
                let to = crate::ddl::resolve_type(self.schema, &t.keyspace, ty)?;
                // A value-compatible source (a timestamp cast as through bigint) is converted
                // as that type: its bytes are a valid value of it.
                // A DESC clustering column's type is Cassandra's ReversedType of its own: a
                // cast to that own type is no identity there but a call of `cast_as_<type>`,
                // which numbers have (named `cast(c as int)`) and text, ascii and timestamp
                // have not (refused).
                let reversed = is_desc_clustering(t, expr);
                let source = if reversed {
                    crate::scalar::cast_source_reversed(&name, &from, &to, &ty.to_string())
                } else {
                    crate::scalar::cast_source(&name, &from, &to, &ty.to_string())
                }
                .map_err(EngineError::invalid)?;
                let col_name = if reversed {
                    format!("cast({name} as {})", crate::types::cql_type_name(&to))
                } else {
                    crate::scalar::cast_column_name(&name, &from, &to)
                };
                (
                    Selector::Expr(SelExpr::Cast {
                        inner: Box::new(as_expr(inner, from)),
                        from: source,
                        to: to.clone(),
                    }),
                    col_name,
                    to,
                )
            }
            E::Function { name, args } if name.name == "_negate" && args.len() == 1 => {
                // A literal or marker operand: the `_negate` signatures refuse it first (a
                // hex literal, which Cassandra types as a number here, aside).
                if let E::Term(term) = &args[0] {
                    let negation = Term::Negate(Box::new(term.clone()));
                    if term_as_selector(term).is_none()
                        && !crate::build::operation::has_hex_operand(&negation)
                    {
                        crate::build::operation::resolve(&negation, None)?;
                    }
                }
                let (inner, iname, ty) = self.selector(t, &args[0], agg)?;
                if !arith::is_numeric(&ty) {
                    return Err(crate::build::operation::negate_mismatch());
                }
                let iname = if precedence(&args[0]) < 3 {
                    format!("({iname})")
                } else {
                    iname
                };
                (
                    Selector::Expr(SelExpr::Negate(Box::new(as_expr(inner, ty.clone())))),
                    format!("-{iname}"),
                    ty,
                )
            }
            E::Function { name, args } if crate::functions::json_fn(&name.name).is_some() => {
                self.json_call(t, &name.name, args, agg)?
            }
            E::Function { name, args } => {
                // Cassandra's resolver looks the name up before it types any argument.
                if !known_function(&name.name) {
                    return Err(EngineError::invalid(match &name.keyspace {
                        Some(ks) => format!("Unknown function '{ks}.{}'", name.name.to_lowercase()),
                        None => format!("Unknown function '{}'", name.name.to_lowercase()),
                    }));
                }
                if aggregate_kind(e).is_some() {
                    return Err(EngineError::invalid(
                        "aggregate functions cannot be used as arguments of aggregate functions",
                    ));
                }
                // A masking function counts its arguments, then types and checks them one by
                // one (Cassandra's FunctionFactory), before reading any literal.
                if let Some(m) = crate::fcts::mask_arity_refusal(&name.name, args.len()) {
                    return Err(EngineError::invalid(m));
                }
                // So does the resolver of any function: an aggregate (of one argument) or a
                // native function called with a number of arguments none of its signatures
                // takes is refused before a literal argument is typed.
                if let Some(m) = aggregate_arity_refusal(name, args.len()).or_else(|| {
                    name.keyspace
                        .as_deref()
                        .is_none_or(|ks| ks.eq_ignore_ascii_case("system"))
                        .then(|| {
                            crate::scalar::arity_refusal(&name.name, args.len()).or_else(|| {
                                crate::similarity::arity_refusal(&name.name, args.len())
                            })
                        })
                        .flatten()
                }) {
                    return Err(EngineError::invalid(m));
                }
                let mut exprs = Vec::with_capacity(args.len());
                let mut names = Vec::with_capacity(args.len());
                // Each argument's type as Cassandra prints it in a refusal (`mask_replace`'s
                // replacement is typed as its first argument: a key column prints frozen).
                let mut shown_types: Vec<String> = Vec::with_capacity(args.len());
                let second_first = similarity::marker_typed_by_second(&name.name, args);
                let order: Vec<usize> = match second_first {
                    true => vec![1, 0],
                    false => (0..args.len()).collect(),
                };
                for pos in order {
                    let a = &args[pos];
                    if let E::Term(term) = a {
                        if term_as_selector(term).is_none() {
                            if let Some(ty) = crate::fcts::literal_arg_type(term) {
                                let shown = crate::fcts::shown_literal_type(&ty);
                                let arg = selector_name(a);
                                if let Some(m) =
                                    crate::fcts::mask_arg_refusal(&name.name, pos, &arg, &ty, &shown)
                                {
                                    return Err(EngineError::invalid(m));
                                }
                            }
                            let prev: Vec<ColumnType> =
                                exprs.iter().map(|e: &SelExpr| e.ty().clone()).collect();
                            let e = match term {
                                Term::Bind(m) => {
                                    self.bind_arg(t, m, &name.name, args.len(), pos, &prev)?
                                }
                                Term::List(items)
                                    if crate::similarity::list_literal_type(&name.name, 0)
                                        .is_some()
                                        && items.iter().any(crate::build::contains_bind) =>
                                {
                                    self.vector_with_binds(t, &name.name, pos, term, items)?
                                }
                                Term::List(items) | Term::Set(items)
                                    if crate::fcts::collection_param(&name.name).is_some()
                                        && items.iter().any(|i| matches!(i, Term::Bind(_))) =>
                                {
                                    self.list_with_binds(t, &name.name, term, items)?
                                }
                                _ => match self.vector_literal_refused(&name.name, term) {
                                    Some(e) => e,
                                    None => literal_arg(
                                        &name.name,
                                        args.len(),
                                        pos,
                                        term,
                                        (&prev, &shown_types),
                                        self.now,
                                    )?,
                                },
                            };
                            shown_types.push(crate::types::cql_type_name(e.ty()));
                            exprs.push(e);
                            names.push(selector_name(a));
                            continue;
                        }
                    }
                    let (sel, n, ty) = self.selector(t, a, agg.as_deref_mut())?;
                    // A column's type as Cassandra prints it: tuple elements and anything
                    // nested frozen, whatever the column's declaration wrote.
                    let shown = match a {
                        E::Column(c) => {
                            let col = self.column(t, c)?.1;
                            let multi_cell = crate::exec::multi_cell_kind(col).is_some();
                            crate::types::receiver_type_name(&col.ty, multi_cell)
                        }
                        _ => crate::types::cql_type_name(&ty),
                    };
                    if let Some(m) = crate::fcts::mask_arg_refusal(&name.name, pos, &n, &ty, &shown) {
                        return Err(EngineError::invalid(m));
                    }
                    shown_types.push(shown);
                    exprs.push(as_expr(sel, ty));
                    names.push(n);
                }
                if second_first {
                    exprs.reverse();
                    names.reverse();
                    shown_types.reverse();
                }
                for (pos, e) in exprs.iter().enumerate() {
                    if let SelExpr::Const(_, Some(v)) = e {
                        if let Some(m) = crate::fcts::mask_constant_refusal(&name.name, pos, v) {
                            return Err(EngineError::invalid(m));
                        }
                    }
                }
                let types: Vec<ColumnType> = exprs.iter().map(|e| e.ty().clone()).collect();
                let named: Vec<(ColumnType, String)> =
                    types.iter().cloned().zip(names.iter().cloned()).collect();
                // A DESC clustering column is no collection to Cassandra (a ReversedType).
                let refused = match (args.first(), types.first()) {
                    (Some(a @ E::Column(c)), Some(ty)) if is_desc_clustering(t, a) => {
                        crate::fcts::reversed_refusal(&name.name, c, ty)
                    }
                    _ => None,
                };
                // A similarity function names a column's type as declared, another
                // argument's collection type frozen.
                let refused = refused.map(Err).or_else(|| {
                    let mut shown: Vec<String> = (args.iter().zip(&types).zip(&shown_types))
                        .map(|((a, ty), shown)| match a {
                            E::Column(_) => shown.clone(),
                            _ => crate::fcts::shown_literal_type(ty),
                        })
                        .collect();
                    // A marker typed by the second argument is shown as that one.
                    if second_first {
                        shown[0] = shown[1].clone();
                    }
                    crate::similarity::return_type_shown(&name.name, &named, &shown)
                });
                let ty = match refused.or_else(|| crate::fcts::return_type(&name.name, &named)) {
                    Some(r) => r,
                    None => crate::scalar::return_type(&name.name, &types)
                        .map_err(|m| name_the_argument(m, &names)),
                }
                .map_err(|m| match &name.keyspace {
                    // Cassandra names an unknown function as it was called, keyspace included.
                    Some(ks) if m.starts_with("Unknown function '") => {
                        format!("Unknown function '{ks}.{}'", name.name.to_lowercase())
                    }
                    _ => m,
                })
                .map_err(EngineError::invalid)?;
                if matches!(
                    name.name.to_ascii_lowercase().as_str(),
                    "now"
                        | "uuid"
                        | "currenttimestamp"
                        | "currentdate"
                        | "currenttime"
                        | "currenttimeuuid"
                ) {
                    self.volatile = true;
                }
                (
                    Selector::Expr(SelExpr::Call {
                        name: name.name.clone(),
                        args: exprs,
                        ty: ty.clone(),
                    }),
                    crate::scalar::column_name(&name.name, &names),
                    ty,
                )
            }
            E::Element { expr, key } => {
                let (coll, name, cty) = self.selector(t, expr, agg)?;
                let (kty, vty) = element_types(&cty, &name, "Element")?;
                let key = self.element_bound(t, key, &name, &cty, &kty)?;
                (
                    Selector::Expr(SelExpr::Element {
                        coll: Box::new(as_expr(coll, cty)),
                        key: Box::new(key),
                        ty: vty.clone(),
                    }),
                    selector_name(e),
                    vty,
                )
            }
            E::Slice { expr, from, to } => {
                let frozen = match &**expr {
                    E::Column(c) => self.column(t, c)?.1.cql_type.starts_with("frozen<"),
                    _ => true,
                };
                let (coll, name, cty) = self.selector(t, expr, agg)?;
                let (kty, _) = element_types(&cty, &name, "Slice")?;
                let mut bound = |b: &Option<Term>| -> Result<_, EngineError> {
                    b.as_ref()
                        .map(|term| self.element_bound(t, term, &name, &cty, &kty).map(Box::new))
                        .transpose()
                };
                let (from, to) = (bound(from)?, bound(to)?);
                (
                    Selector::Expr(SelExpr::Slice {
                        coll: Box::new(as_expr(coll, cty.clone())),
                        from,
                        to,
                        frozen,
                    }),
                    selector_name(e),
                    cty,
                )
            }
            E::Operation { op, left, right } => self.operation(t, *op, left, right, agg)?,
            // Typed by what it holds where something gives it a type (an operation, a cast, a
            // function's parameter); see `untyped_parens` for where nothing does.
            E::Parens(expr) => {
                // A number in parentheses takes its literal's own type there (`-(1)` is int).
                let number = match &**expr {
                    E::Term(term) if term_as_selector(term).is_none() => {
                        literal_type(term).filter(arith::is_numeric).map(|ty| (term, ty))
                    }
                    _ => None,
                };
                if let Some((term, ty)) = number {
                    let v = const_term(&ty, term, self.now)?;
                    return Ok((Selector::Const(v), format!("({term})"), ty));
                }
                let (sel, name, ty) = self.selector(t, expr, agg)?;
                (sel, format!("({name})"), ty)
            }
            // The selector's value as is, of a type that takes it (Cassandra's
            // `isValueCompatibleWith`: anything into blob, ascii into text, ...).
            E::TypeHint { ty, expr } => {
                let to = crate::ddl::resolve_type(self.schema, &t.keyspace, ty)?;
                let ((sel, name, from), fits) = match &**expr {
                    E::Collection(c) => self.collection_selector(t, expr, c, Some(&to), agg)?,
                    _ => (self.selector(t, expr, agg)?, true),
                };
                let shown = format!("({}){name}", qualified_udts(ty, &t.keyspace));
                // A hinted collection, tuple or UDT is frozen: a non-frozen (multi-cell)
                // column is no value of it, as in Cassandra.
                let multi_cell = matches!(&**expr, E::Column(c)
                    if t.column(c).is_some_and(|c| crate::exec::multi_cell_kind(c).is_some()));
                // A collection of selectors is checked item by item (`fits`); it takes the
                // hint's type whatever its first item's.
                let fits = match &**expr {
                    E::Collection(_) => fits,
                    _ => crate::literal::receives(&to, &from),
                };
                if multi_cell || !fits {
                    return Err(cannot_assign(&shown, ty));
                }
                let sel = match (sel, &**expr) {
                    (Selector::Expr(SelExpr::Collect { items, .. }), E::Collection(_)) => {
                        Selector::Expr(SelExpr::Collect {
                            items,
                            ty: to.clone(),
                        })
                    }
                    (sel, _) => sel,
                };
                (sel, shown, to)
            }
            E::Collection(c) => self.collection_selector(t, e, c, None, agg)?.0,
            E::Term(term) => match term_as_selector(term).or_else(|| collections::typed_literal(term)) {
                Some(e) => self.selector(t, &e, agg)?,
                None => {
                    return Err(EngineError::invalid(format!(
                        "Cannot infer type for term {} in selection clause (try using a cast to force a type)",
                        names::term_name(term)
                    )))
                }
            },
            other => {
                return Err(EngineError::invalid(format!(
                    "Unsupported selector: {other:?}"
                )))
            }
        })
    }

    /// `token(a, b)`: the partition key columns in order read the row's token; any other
    /// arguments, one per partition key column and of its type, are hashed as a key would be.
    fn token_call(
        &mut self,
        t: &TableDef,
        args: &[E],
        mut agg: Option<&mut AggCollector>,
    ) -> Result<Built, EngineError> {
        let pk: Vec<(String, ColumnType)> = t
            .partition_key()
            .map(|c| (c.name.clone(), c.ty.clone()))
            .collect();
        let names: Vec<String> = args.iter().map(selector_name).collect();
        let col_name = crate::scalar::column_name("token", &names);
        let key_columns = args.len() == pk.len()
            && args
                .iter()
                .zip(&pk)
                .all(|(a, (n, _))| matches!(a, E::Column(c) if c == n));
        if key_columns {
            return Ok((Selector::Token, col_name, ColumnType::Bigint));
        }
        if args.len() != pk.len() {
            return Err(EngineError::invalid(format!(
                "Invalid number of arguments in call to function system.token: {} required but {} provided",
                pk.len(),
                args.len()
            )));
        }
        let mut exprs = Vec::with_capacity(args.len());
        for (pos, (a, (_, ty))) in args.iter().zip(&pk).enumerate() {
            let misfit = || {
                EngineError::invalid(format!(
                    "Type error: {} cannot be passed as argument {pos} of function system.token of type {}",
                    names[pos],
                    crate::types::cql_type_name(ty)
                ))
            };
            let e = match a {
                E::Term(term) if term_as_selector(term).is_none() => match term {
                    Term::Bind(m) => {
                        let Src::Bind(i) = self.bind(t, m, "[selection]", ty) else {
                            return Err(EngineError::invalid("Invalid bind marker"));
                        };
                        SelExpr::Leaf(Box::new(Selector::Bind(i)), ty.clone())
                    }
                    _ => SelExpr::Const(
                        ty.clone(),
                        const_term(ty, term, self.now).map_err(|_| misfit())?,
                    ),
                },
                _ => {
                    let (sel, _, aty) = self.selector(t, a, agg.as_deref_mut())?;
                    if aty != *ty {
                        return Err(misfit());
                    }
                    as_expr(sel, aty)
                }
            };
            exprs.push(e);
        }
        Ok((
            Selector::Expr(SelExpr::Call {
                name: "token".into(),
                args: exprs,
                ty: ColumnType::Bigint,
            }),
            col_name,
            ColumnType::Bigint,
        ))
    }

    /// `toJson(x)` of any selector (its text as JSON, column `system.tojson(x)`); a literal
    /// argument takes its own type. `fromJson` has no receiver to type it here: Cassandra
    /// refuses it in a selection.
    fn json_call(
        &mut self,
        t: &TableDef,
        fname: &str,
        args: &[E],
        agg: Option<&mut AggCollector>,
    ) -> Result<Built, EngineError> {
        use crate::functions::{json_fn, to_json_arity, to_json_untyped, JsonFn};
        if json_fn(fname) == Some(JsonFn::From) {
            return Err(EngineError::invalid(format!(
                "{}() cannot be used in the selection clause of a SELECT statement",
                fname.to_ascii_lowercase()
            )));
        }
        to_json_arity(args.len())?;
        let hex = match &args[0] {
            E::Term(term) => crate::functions::hex_as_tinyint(term),
            _ => None,
        };
        let (arg, arg_name) = match &args[0] {
            _ if hex.is_some() => {
                let byte = hex.unwrap_or(Term::Literal(Literal::Null));
                let v = const_term(&ColumnType::Tinyint, &byte, self.now)?;
                let name = selector_name(&args[0]);
                (SelExpr::Const(ColumnType::Tinyint, v), name)
            }
            E::Term(term) if term_as_selector(term).is_none() => {
                let ty = crate::functions::to_json_literal_type(term)
                    .ok_or_else(|| to_json_untyped(term))?;
                let v = const_term(&ty, term, self.now)?;
                (SelExpr::Const(ty, v), selector_name(&args[0]))
            }
            // Cassandra 5.0.9 types an element, a slice or a UDT field of a DESC clustering
            // column by its reversed type, which toJson() does not take.
            E::Element { expr, .. } | E::Slice { expr, .. } | E::Field { expr, .. }
                if is_desc_clustering(t, expr) =>
            {
                return Err(EngineError::invalid(format!(
                    "Cannot infer type of argument {} in call to function system.tojson(any): use type casts to disambiguate",
                    selector_name(&args[0])
                )));
            }
            E::Parens(_) => {
                return Err(EngineError::invalid(format!(
                    "Cannot infer type of argument {} in call to function system.tojson(any): use type casts to disambiguate",
                    selector_name(&args[0])
                )));
            }
            a => {
                let (sel, n, ty) = self.selector(t, a, agg)?;
                (as_expr(sel, ty), n)
            }
        };
        Ok((
            Selector::Expr(SelExpr::Call {
                name: "tojson".into(),
                args: vec![arg],
                ty: ColumnType::Varchar,
            }),
            crate::scalar::column_name("tojson", &[arg_name]),
            ColumnType::Varchar,
        ))
    }

    /// The key of an element or slice selection on `coll` (named `name`): a constant or a bind
    /// marker named as Cassandra names them (`key(m)` for a map, `value(s)` for a set).
    fn element_bound(
        &mut self,
        t: &TableDef,
        term: &Term,
        name: &str,
        coll: &ColumnType,
        kty: &ColumnType,
    ) -> Result<SelExpr, EngineError> {
        let receiver = match coll {
            ColumnType::Map(..) => format!("key({name})"),
            _ => format!("value({name})"),
        };
        Ok(match term {
            Term::Bind(m) => {
                let Src::Bind(i) = self.bind(t, m, &receiver, kty) else {
                    return Err(EngineError::invalid("Invalid bind marker"));
                };
                SelExpr::Leaf(Box::new(Selector::Bind(i)), kty.clone())
            }
            other => SelExpr::Const(
                kty.clone(),
                crate::literal::const_term_for(&receiver, kty, other, self.now)?,
            ),
        })
    }

    /// `count(*)`, `count(x)`, `min`, `max`, `sum`, `avg` of a selection.
    fn aggregate(
        &mut self,
        t: &TableDef,
        e: &E,
        kind: AggKind,
        col: &mut AggCollector,
    ) -> Result<Built, EngineError> {
        let (name, arg) = match e {
            E::Function { name, args } if kind != AggKind::CountRows => (name, &args[0]),
            _ => {
                col.aggs.push(Aggregate {
                    kind: AggKind::CountRows,
                    arg: None,
                });
                return Ok((
                    Selector::Agg(col.aggs.len() - 1),
                    "count".into(),
                    ColumnType::Bigint,
                ));
            }
        };
        if contains_aggregate(arg) {
            return Err(EngineError::invalid(
                "aggregate functions cannot be used as arguments of aggregate functions",
            ));
        }
        let (sel, arg_name, arg_ty) = self.selector(t, arg, None)?;
        let fname = name.name.to_ascii_lowercase();
        let ty = match kind {
            AggKind::Count => ColumnType::Bigint,
            AggKind::Sum | AggKind::Avg => {
                if !arith::is_numeric(&arg_ty) {
                    let sigs = if kind == AggKind::Sum {
                        SUM_SIGS
                    } else {
                        AVG_SIGS
                    };
                    return Err(EngineError::invalid(format!(
                        "Invalid call to function {fname}, none of its type signatures match (known type signatures: {sigs})"
                    )));
                }
                arg_ty.clone()
            }
            _ => arg_ty.clone(),
        };
        col.aggs.push(Aggregate {
            kind,
            arg: Some(as_expr(sel, arg_ty)),
        });
        Ok((
            Selector::Agg(col.aggs.len() - 1),
            format!("system.{fname}({arg_name})"),
            ty,
        ))
    }

    /// `left op right` with Cassandra's typing: an untyped literal takes the type it would
    /// have alone (int/bigint/varint, double, ascii, duration); a bind marker or null next to
    /// an operator is ambiguous.
    fn operation(
        &mut self,
        t: &TableDef,
        op: ArithOp,
        left: &E,
        right: &E,
        mut agg: Option<&mut AggCollector>,
    ) -> Result<Built, EngineError> {
        let untyped = |e: &E| match e {
            E::Term(term) if term_as_selector(term).is_none() => Some(term.clone()),
            _ => None,
        };
        let (lu, ru) = (untyped(left), untyped(right));
        let lname = self.operand_name(left, precedence(left) < precedence_of(op));
        let rname = self.operand_name(right, precedence(right) <= precedence_of(op));
        let ambiguous = || {
            EngineError::invalid(format!(
                "Ambiguous '{}' operation with args {} and {}: use type hint to disambiguate, example '(int) ?'",
                op.symbol(),
                lname.trim_matches(|c| c == '(' || c == ')'),
                rname.trim_matches(|c| c == '(' || c == ')')
            ))
        };
        let unsupported = || {
            EngineError::invalid(format!(
                "the '{}' operation is not supported between {} and {}",
                op.symbol(),
                lname,
                rname
            ))
        };
        let side = |b: &mut Self,
                    e: &E,
                    lit: &Option<Term>,
                    other: Option<&ColumnType>,
                    agg: Option<&mut AggCollector>|
         -> Result<(SelExpr, ColumnType), EngineError> {
            match lit {
                Some(term) => {
                    let ty = match literal_type(term) {
                        Some(ty) => ty,
                        // A collection or tuple literal beside a column: no operator
                        // signature takes it (`sl + [1]`, `v + {1}`, `v + (1, 2)`).
                        None if other.is_some()
                            && match term {
                                Term::Tuple(items) => items.len() > 1,
                                _ => matches!(term, Term::List(_) | Term::Set(_) | Term::Map(_)),
                            } =>
                        {
                            return Err(unsupported())
                        }
                        None => return Err(ambiguous()),
                    };
                    if matches!(other, Some(ColumnType::Timestamp | ColumnType::Date))
                        && ty != ColumnType::Duration
                    {
                        return Err(ambiguous());
                    }
                    let v = const_term(&ty, term, b.now)?;
                    Ok((SelExpr::Const(ty.clone(), v), ty))
                }
                None => {
                    let (sel, _, ty) = b.selector(t, e, agg)?;
                    Ok((as_expr(sel, ty.clone()), ty))
                }
            }
        };
        let (l, r) = match (&lu, &ru) {
            (Some(_), None) => {
                let r = side(self, right, &ru, None, agg.as_deref_mut())?;
                let l = side(self, left, &lu, Some(&r.1), agg)?;
                (l, r)
            }
            _ => {
                let l = side(self, left, &lu, None, agg.as_deref_mut())?;
                let r = side(self, right, &ru, Some(&l.1), agg)?;
                (l, r)
            }
        };
        let Some(ty) = arith::result_type(op, &l.1, &r.1) else {
            return Err(match (lu, ru) {
                // Two literals: as the operator's signatures take them, which may refuse
                // them as no pair of its parameter types (`1 + 'a'`, `true + 1`).
                (Some(left), Some(right)) => {
                    let term = Term::Operation {
                        op,
                        left: Box::new(left),
                        right: Box::new(right),
                    };
                    match crate::build::operation::has_hex_operand(&term) {
                        true => ambiguous(),
                        false => crate::build::operation::resolve(&term, None)
                            .err()
                            .unwrap_or_else(ambiguous),
                    }
                }
                _ => unsupported(),
            });
        };
        Ok((
            Selector::Expr(SelExpr::Op {
                op,
                left: Box::new(l.0),
                right: Box::new(r.0),
                ty: ty.clone(),
            }),
            format!("{lname} {} {rname}", op.symbol()),
            ty,
        ))
    }

    /// The name an operand shows in an operation's column name, parenthesized where the
    /// operator binds tighter than the operand.
    fn operand_name(&self, e: &E, parens: bool) -> String {
        let name = selector_name(e);
        if parens && precedence(e) < 3 {
            format!("({name})")
        } else {
            name
        }
    }
}

/// A type hint's type as Cassandra prints it in a selector's name: as written, but a user
/// type named with its keyspace (`(ks.u)v`, `(frozen<ks.u>)v`).
/// Cassandra's refusal of a type hint whose type does not take the hinted selector (a hinted
/// collection, tuple or UDT type is frozen).
fn cannot_assign(shown: &str, ty: &ast::CqlType) -> EngineError {
    let hinted = match ty {
        ast::CqlType::List(_)
        | ast::CqlType::Set(_)
        | ast::CqlType::Map(..)
        | ast::CqlType::Tuple(_)
        | ast::CqlType::UserDefined(_) => format!("frozen<{ty}>"),
        other => other.to_string(),
    };
    EngineError::invalid(format!(
        "Cannot assign value {shown} to {shown} of type {hinted}"
    ))
}

fn qualified_udts(ty: &ast::CqlType, keyspace: &str) -> String {
    use ast::CqlType as C;
    let q = |t: &C| qualified_udts(t, keyspace);
    match ty {
        C::UserDefined(n) if n.keyspace.is_none() => format!("{keyspace}.{}", n.name),
        C::Frozen(inner) => format!("frozen<{}>", q(inner)),
        C::List(inner) => format!("list<{}>", q(inner)),
        C::Set(inner) => format!("set<{}>", q(inner)),
        C::Map(k, v) => format!("map<{}, {}>", q(k), q(v)),
        other => other.to_string(),
    }
}

fn check_distinct_column(t: &TableDef, sel: &Selector) -> Result<(), EngineError> {
    if let Selector::Column(i) = sel {
        if !matches!(
            t.columns[*i].kind,
            ColumnKind::PartitionKey | ColumnKind::Static
        ) {
            return Err(EngineError::invalid(format!(
                "SELECT DISTINCT queries must only request partition key columns and/or static columns (not {})",
                t.columns[*i].name
            )));
        }
    }
    Ok(())
}

pub(crate) fn as_expr(s: Selector, ty: ColumnType) -> SelExpr {
    match s {
        Selector::Expr(e) => e,
        other => SelExpr::Leaf(Box::new(other), ty),
    }
}

/// The type of `writetime`/`ttl` of column `c`: a list of `ty`, one per element, for a
/// non-frozen collection.
fn per_cell(c: &crate::catalog::ColumnDef, ty: ColumnType) -> ColumnType {
    match crate::exec::multi_cell_kind(c) {
        Some(_) => ColumnType::List(Box::new(ty)),
        None => ty,
    }
}
