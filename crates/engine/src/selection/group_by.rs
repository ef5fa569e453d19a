//! GROUP BY: which primary key prefix a selection groups on, by Cassandra's rules, and the
//! function (`floor()` of a time) on its last clustering column.

use super::as_expr;
use crate::build::Builder;
use crate::catalog::{ColumnKind, TableDef};
use crate::plan::{SelExpr, Selector};
use crate::EngineError;
use cql::ast::{self, SelectorExpr as E};

const GROUP_ORDER_MSG: &str = "Group by currently only support groups of columns following their declared order in the PRIMARY KEY";

impl Builder<'_> {
    /// How many clustering columns the GROUP BY clause groups on (None without GROUP BY),
    /// with Cassandra's rules: primary key columns in declared order, a column restricted by
    /// `=` may be skipped, the whole partition key.
    pub(crate) fn group_by(
        &mut self,
        t: &TableDef,
        s: &ast::SelectStatement,
        eq_restricted: &dyn Fn(usize) -> bool,
    ) -> Result<Option<(usize, Option<SelExpr>)>, EngineError> {
        if s.group_by.is_empty() {
            return Ok(None);
        }
        let pk: Vec<usize> = (0..t.columns.len())
            .filter(|i| {
                matches!(
                    t.columns[*i].kind,
                    ColumnKind::PartitionKey | ColumnKind::Clustering
                )
            })
            .collect();
        let mut sorted = pk.clone();
        sorted.sort_by_key(|i| {
            let c = &t.columns[*i];
            (c.kind != ColumnKind::PartitionKey, c.position)
        });
        let mut next = sorted.iter();
        let mut clustering = 0;
        let mut last_kind = None;
        let mut group_fn: Option<SelExpr> = None;
        // The function selector of the last function in the clause, checked for monotony
        // once the clause is otherwise accepted.
        let mut monotony: Option<SelExpr> = None;
        for item in &s.group_by {
            let i = match item {
                E::Column(name) => {
                    let (i, c) = self.column(t, name)?;
                    if !matches!(c.kind, ColumnKind::PartitionKey | ColumnKind::Clustering) {
                        return Err(EngineError::invalid(format!(
                            "Group by is currently only supported on the columns of the PRIMARY KEY, got {name}"
                        )));
                    }
                    if group_fn.is_some() {
                        return Err(EngineError::invalid(
                            "Functions are only supported on the last element of the GROUP BY clause",
                        ));
                    }
                    i
                }
                E::Function { .. } | E::CountRows | E::Operation { .. } => {
                    // Cassandra resolves the function (its columns first), refuses an
                    // aggregate, types the call, then looks at the columns it reads
                    // (wherever they are in it: `toDate(floor(t, 1h))` reads t).
                    self.check_columns(t, item)?;
                    if let Some(name) = aggregate_name(item) {
                        return Err(EngineError::invalid(format!(
                            "Aggregate functions are not supported within the GROUP BY clause, got: system.{name}"
                        )));
                    }
                    let (sel, _, ty) = self.selector(t, item, None)?;
                    let mut cols = Vec::new();
                    read_columns(item, &mut cols);
                    let [name] = cols.as_slice() else {
                        return Err(EngineError::invalid(if cols.is_empty() {
                            "GROUP BY functions must have one clustering column name as parameter"
                                .to_string()
                        } else {
                            format!(
                                "GROUP BY functions accept only one clustering column as parameter, got: {}",
                                cols.join(",")
                            )
                        }));
                    };
                    let (i, c) = self.column(t, name)?;
                    if c.kind != ColumnKind::Clustering {
                        return Err(EngineError::invalid(format!(
                            "Group by functions are only supported on clustering columns, got {name}"
                        )));
                    }
                    let e = as_expr(sel, ty);
                    monotony = Some(e.clone());
                    group_fn = Some(e);
                    i
                }
                // Any other selector Cassandra prepares (its columns and types looked up), then
                // casts to a column: a Java ClassCastException.
                other => {
                    self.check_columns(t, other)?;
                    self.check_hint_types(t, other)?;
                    let class = selectable_class(other);
                    return Err(EngineError::server(format!(
                        "java.lang.ClassCastException: class org.apache.cassandra.cql3.selection.Selectable${class} cannot be cast to class org.apache.cassandra.schema.ColumnMetadata (org.apache.cassandra.cql3.selection.Selectable${class} and org.apache.cassandra.schema.ColumnMetadata are in unnamed module of loader 'app')"
                    )));
                }
            };
            loop {
                let Some(&p) = next.next() else {
                    return Err(EngineError::invalid(GROUP_ORDER_MSG));
                };
                if t.columns[p].kind == ColumnKind::Clustering {
                    clustering += 1;
                }
                last_kind = Some(t.columns[p].kind);
                if p == i {
                    break;
                }
                if !eq_restricted(p) {
                    return Err(EngineError::invalid(GROUP_ORDER_MSG));
                }
            }
        }
        if last_kind == Some(ColumnKind::PartitionKey)
            && next
                .clone()
                .next()
                .is_some_and(|p| t.columns[*p].kind == ColumnKind::PartitionKey)
        {
            return Err(EngineError::invalid(
                "Group by is not supported on only a part of the partition key",
            ));
        }
        if clustering > 0 && s.distinct {
            return Err(EngineError::invalid(
                "Grouping on clustering columns is not allowed for SELECT DISTINCT queries",
            ));
        }
        // Cassandra checks the function's selectors (`validateForGroupBy`) as it builds the
        // grouping, outermost first: each must be monotonic.
        if let Some(f) = monotony.as_ref().and_then(not_monotonic) {
            return Err(EngineError::invalid(format!(
                "Only monotonic functions are supported in the GROUP BY clause. Got: {f} "
            )));
        }
        Ok(Some((clustering, group_fn)))
    }

    /// Fails on the first user type a type hint or cast in `e` names that does not exist
    /// (Cassandra's preparation of the selector looks its types up).
    fn check_hint_types(&self, t: &TableDef, e: &E) -> Result<(), EngineError> {
        let mut result = Ok(());
        crate::build::walk_selector(e, &mut |x| {
            if let (E::TypeHint { ty, .. } | E::Cast { ty, .. }, Ok(())) = (x, &result) {
                if let Err(err) = crate::ddl::resolve_type(self.schema, &t.keyspace, ty) {
                    result = Err(err);
                }
            }
        });
        result
    }
}

/// The columns a GROUP BY function reads, each once, in order (the columns Cassandra's
/// selector factories add).
fn read_columns(e: &E, out: &mut Vec<String>) {
    let mut names = Vec::new();
    crate::build::selector_columns(e, &mut names);
    for c in names {
        if !out.iter().any(|o| o == c) {
            out.push(c.to_string());
        }
    }
}

/// The native aggregate a GROUP BY element calls at its top, named as Cassandra names it.
fn aggregate_name(e: &E) -> Option<String> {
    match e {
        E::CountRows => Some("count_rows".into()),
        E::Function { name, .. } => {
            let n = name.name.to_ascii_lowercase();
            matches!(n.as_str(), "count" | "min" | "max" | "sum" | "avg").then_some(n)
        }
        _ => None,
    }
}

/// The class of Cassandra's `Selectable` a selector other than a column or a function
/// prepares to (named in the ClassCastException a GROUP BY of it raises).
fn selectable_class(e: &E) -> &'static str {
    use ast::{SelectorCollection as C, Term};
    match e {
        E::Term(Term::List(_)) | E::Collection(C::List(_)) => "WithArrayLiteral",
        E::Term(Term::Set(_)) | E::Collection(C::Set(_)) => "WithSet",
        E::Term(Term::Map(_) | Term::Udt(_)) | E::Collection(C::Map(_)) => "WithMapOrUdt",
        E::Term(Term::Tuple(_)) | E::Collection(C::Tuple(_)) | E::Parens(_) => {
            "BetweenParenthesesOrWithTuple"
        }
        E::Term(Term::TypeHint { .. }) | E::TypeHint { .. } => "WithTypeHint",
        E::Cast {
            expr, call: false, ..
        } if matches!(**expr, E::Term(_)) => "WithTypeHint",
        E::Cast { .. } => "WithCast",
        E::Field { .. } => "WithFieldSelection",
        E::Element { .. } => "WithElementSelection",
        E::Slice { .. } => "WithSliceSelection",
        E::WriteTime(_)
        | E::MaxWriteTime(_)
        | E::Ttl(_)
        | E::ElementTime { .. }
        | E::SliceTime { .. }
        | E::FieldTime { .. } => "WritetimeOrTTL",
        _ => "WithTerm",
    }
}

/// The outermost function of a GROUP BY function selector that is not monotonic, as
/// Cassandra prints a function (`system.abs : (int) -> int`, `system."_add" : (int,
/// int(constant)) -> int`); floor() and the conversions of a time to a date or a number
/// are monotonic.
fn not_monotonic(e: &SelExpr) -> Option<String> {
    let ty = |x: &SelExpr| crate::types::cql_type_name(x.ty());
    let sig = |name: &str, args: &[&SelExpr], ret: &SelExpr, constants: bool| {
        let args: Vec<String> = args
            .iter()
            .map(|a| match a {
                SelExpr::Const(..) if constants => format!("{}(constant)", ty(a)),
                SelExpr::Leaf(s, _) if constants && matches!(**s, Selector::Const(_)) => {
                    format!("{}(constant)", ty(a))
                }
                _ => ty(a),
            })
            .collect();
        format!("system.{name} : ({}) -> {}", args.join(", "), ty(ret))
    };
    match e {
        SelExpr::Call { name, args, .. } => {
            let n = name.to_ascii_lowercase();
            if matches!(
                n.as_str(),
                "floor" | "todate" | "tounixtimestamp" | "totimestamp"
            ) {
                return args.iter().find_map(not_monotonic);
            }
            Some(sig(&n, &args.iter().collect::<Vec<_>>(), e, false))
        }
        SelExpr::Op {
            op, left, right, ..
        } => {
            let name = match op {
                ast::ArithOp::Add => "\"_add\"",
                ast::ArithOp::Sub => "\"_substract\"",
                ast::ArithOp::Mul => "\"_multiply\"",
                ast::ArithOp::Div => "\"_divide\"",
                ast::ArithOp::Rem => "\"_modulo\"",
            };
            Some(sig(name, &[left, right], e, true))
        }
        SelExpr::Negate(inner) => Some(sig("\"_negate\"", &[inner], e, false)),
        SelExpr::Cast { inner, to, .. } => Some(format!(
            "system.cast_as_{} : ({}) -> {}",
            crate::types::cql_type_name(to),
            ty(inner),
            crate::types::cql_type_name(to)
        )),
        _ => None,
    }
}
