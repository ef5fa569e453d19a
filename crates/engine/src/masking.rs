//! Dynamic data masking (Cassandra 5.0's `ColumnMask`): a masking function attached to a
//! table column with `MASKED WITH f(args)` in CREATE/ALTER TABLE, kept in the schema
//! ([`crate::catalog::ColumnMask`]), listed by `system_schema.column_masks`, printed by
//! DESCRIBE, and applied to the column's values when a role without `UNMASK` selects them.
//!
//! A mask is a partial application: the column's value is the function's first argument and
//! the DDL gives the others (`mask_inner(1, null)` masks with `mask_inner(v, 1, null)`). The
//! functions themselves (`mask_null`, `mask_default`, `mask_replace`, `mask_inner`,
//! `mask_outer`, `mask_hash`) live in `fcts`, where SELECT calls them too.
//!
//! Attaching masks needs `dynamic_data_masking_enabled` (off by default, as in Cassandra);
//! masks already in the schema are applied either way. Messages were read off Cassandra 5.0.9.

use crate::catalog::{ColumnDef, ColumnMask, TableDef};
use crate::plan::{AggSelection, SelExpr, SelectPlan, Selection, Selector};
use crate::types::cql_type_name;
use crate::EngineError;
use cql::ast;
use proto::types::ColumnType as T;
use proto::value::decode_value;

/// Cassandra's `ColumnMask.DISABLED_ERROR_MESSAGE`.
pub const DISABLED: &str = "Cannot mask columns because dynamic data masking is not enabled. \
     You can enable it with the dynamic_data_masking_enabled property on cassandra.yaml";

const MASKING: &[&str] = &[
    "mask_null",
    "mask_default",
    "mask_replace",
    "mask_inner",
    "mask_outer",
    "mask_hash",
];

const AGGREGATES: &[&str] = &["count", "min", "max", "sum", "avg"];

/// Whether a CREATE or ALTER TABLE attaches a mask (refused while masking is disabled).
pub fn attaches_mask(st: &cql::Statement) -> bool {
    match st {
        cql::Statement::CreateTable(ct) => ct.columns.iter().any(|c| c.mask.is_some()),
        cql::Statement::AlterTable(at) => match &at.action {
            // Cassandra 5.0.9 does not check the setting on ADD: a masked column can be added
            // while masking is disabled.
            ast::AlterTableAction::Add { .. } => false,
            ast::AlterTableAction::AlterColumnMask { mask, .. } => mask.is_some(),
            _ => false,
        },
        _ => false,
    }
}

/// The text Cassandra's `ColumnMask.Raw` prints in its messages: `name(arg, ...)`.
fn raw_text(m: &ast::ColumnMask) -> String {
    m.to_string()
}

/// The types of the arguments after the first that `f` takes on a column of type `col`, for
/// `n` given arguments, or Cassandra's message when `n` does not fit `f`'s signature.
fn partial_types(f: &str, col: &T, n: usize) -> Result<Vec<T>, String> {
    if crate::fcts::mask_signature(f).is_none() {
        return Err(format!("Unknown masking function system.{f}"));
    }
    // The column is the function's first argument.
    if let Some(m) = crate::fcts::mask_arity_refusal(f, n + 1) {
        return Err(m);
    }
    Ok(match f {
        "mask_replace" => vec![col.clone()],
        "mask_inner" | "mask_outer" => [T::Int, T::Int, T::Varchar][..n].to_vec(),
        "mask_hash" => vec![T::Varchar; n],
        _ => Vec::new(),
    })
}

/// Cassandra's `AbstractType.toString` of a column type, as its type errors print it.
fn marshal_name(t: &T) -> String {
    let m = |s: &str| format!("org.apache.cassandra.db.marshal.{s}");
    match t {
        T::Int => m("Int32Type"),
        T::Bigint => m("LongType"),
        T::Smallint => m("ShortType"),
        T::Tinyint => m("ByteType"),
        T::Boolean => m("BooleanType"),
        T::Blob => m("BytesType"),
        T::Double => m("DoubleType"),
        T::Float => m("FloatType"),
        T::Decimal => m("DecimalType"),
        T::Varint => m("IntegerType"),
        T::Uuid => m("UUIDType"),
        T::Timeuuid => m("TimeUUIDType"),
        T::Timestamp => m("TimestampType"),
        T::Date => m("SimpleDateType"),
        T::Time => m("TimeType"),
        T::Inet => m("InetAddressType"),
        T::Duration => m("DurationType"),
        T::Counter => m("CounterColumnType"),
        other => cql_type_name(other),
    }
}

/// Resolves `MASKED WITH ...` for column `column` of type `col` into the stored mask, with
/// Cassandra's refusals (unknown, aggregate or non-masking function, arguments that do not
/// fit, a return type other than the column's). Constant arguments are read at `now` (the
/// DDL statement's clock).
pub fn prepare(
    column: &str,
    col: &T,
    m: &ast::ColumnMask,
    now: crate::Now,
) -> Result<ColumnMask, EngineError> {
    let invalid = |s: String| EngineError::invalid(s);
    let f = m.function.name.to_ascii_lowercase();
    let system = m
        .function
        .keyspace
        .as_deref()
        .is_none_or(|k| k.eq_ignore_ascii_case("system"));
    let known_native = crate::scalar::is_known(&f) || crate::fcts::is_known(&f);
    if system && AGGREGATES.contains(&f.as_str()) {
        return Err(invalid(format!(
            "Aggregate function {} cannot be used for masking table columns",
            raw_text(m)
        )));
    }
    if !system || !(MASKING.contains(&f.as_str()) || known_native) {
        return Err(invalid(format!(
            "Unable to find masking function for {column}, no declared function matches the signature {}",
            raw_text(m)
        )));
    }
    if !MASKING.contains(&f.as_str()) {
        return Err(invalid(format!(
            "Not-masking function {} cannot be used for masking table columns",
            raw_text(m)
        )));
    }
    let types = partial_types(&f, col, m.args.len()).map_err(invalid)?;
    if matches!(f.as_str(), "mask_inner" | "mask_outer") && !matches!(col, T::Varchar | T::Ascii) {
        return Err(invalid(format!(
            "Function system.{f} requires an argument of type [text|varchar|ascii], but found argument {} of type {}",
            marshal_name(col),
            cql_type_name(col)
        )));
    }
    let ret = if f == "mask_hash" {
        T::Blob
    } else {
        col.clone()
    };
    if ret != *col {
        return Err(invalid(format!(
            "Masking function {} return type is {}. This is different to the type of the masked column {column} of type {}. Masking functions can only be attached to table columns if they return the same data type as the masked column.",
            raw_text(m),
            cql_type_name(&ret),
            cql_type_name(col)
        )));
    }
    let mut args = Vec::with_capacity(types.len());
    for (i, (t, term)) in types.iter().zip(&m.args).enumerate() {
        let v = crate::literal::const_term(t, term, now).map_err(|e| {
            if f == "mask_replace" {
                // Cassandra types the argument against the signature before reading it.
                invalid(format!(
                    "Type error: {term} cannot be passed as argument {} of function system.{f} of type {}",
                    i + 1,
                    cql_type_name(t)
                ))
            } else {
                e
            }
        })?;
        args.push(v);
    }
    Ok(ColumnMask {
        function: f,
        arg_types: types.iter().map(cql_type_name).collect(),
        args,
    })
}

/// The types of a stored mask's arguments after the first, on a column of type `col`.
fn arg_types(m: &ColumnMask, col: &T) -> Vec<T> {
    partial_types(&m.function, col, m.args.len()).unwrap_or_default()
}

/// Masks one value of column `c` (which has a mask).
pub fn apply(
    c: &ColumnDef,
    m: &ColumnMask,
    v: Option<&[u8]>,
) -> Result<Option<Vec<u8>>, EngineError> {
    let mut args = Vec::with_capacity(1 + m.args.len());
    args.push((c.ty.clone(), v.map(<[u8]>::to_vec)));
    for (t, a) in arg_types(m, &c.ty).into_iter().zip(&m.args) {
        args.push((t, a.clone()));
    }
    crate::fcts::call(&m.function, &args).map_err(EngineError::invalid)
}

/// A value as a CQL literal (`CQL3Type.toCQLLiteral`), as DESCRIBE prints mask arguments.
pub(crate) fn cql_literal(t: &T, v: Option<&[u8]>) -> String {
    let Some(b) = v else {
        return "null".into();
    };
    let quote = |s: String| format!("'{}'", s.replace('\'', "''"));
    match t {
        T::Varchar | T::Ascii | T::Timestamp | T::Date | T::Time | T::Inet => {
            crate::javafmt::to_text(t, b).map(quote).unwrap_or_default()
        }
        T::List(e) | T::Set(e) => {
            let open = if matches!(t, T::List(_)) { "[" } else { "{" };
            let close = if matches!(t, T::List(_)) { "]" } else { "}" };
            let items = collection_items(b);
            let inner: Vec<String> = items.iter().map(|i| cql_literal(e, i.as_deref())).collect();
            format!("{open}{}{close}", inner.join(", "))
        }
        T::Map(k, val) => {
            let items = collection_items(b);
            let inner: Vec<String> = items
                .chunks(2)
                .map(|p| {
                    format!(
                        "{}: {}",
                        cql_literal(k, p[0].as_deref()),
                        cql_literal(val, p.get(1).and_then(|x| x.as_deref()))
                    )
                })
                .collect();
            format!("{{{}}}", inner.join(", "))
        }
        _ => crate::javafmt::to_text(t, b)
            .unwrap_or_else(|_| format!("0x{}", crate::javafmt::hex(b))),
    }
}

/// The elements of a serialized list or set (keys and values alternating for a map).
fn collection_items(b: &[u8]) -> Vec<Option<Vec<u8>>> {
    let mut out = Vec::new();
    let rd = |at: usize| -> Option<i32> {
        b.get(at..at + 4)
            .map(|x| i32::from_be_bytes([x[0], x[1], x[2], x[3]]))
    };
    let Some(n) = rd(0) else { return out };
    let mut at = 4;
    // A map's count is of entries: read both halves.
    let total = if n < 0 { 0 } else { n as usize };
    while at < b.len() && out.len() < total * 2 {
        let Some(len) = rd(at) else { break };
        at += 4;
        if len < 0 {
            out.push(None);
            continue;
        }
        let end = (at + len as usize).min(b.len());
        out.push(Some(b[at..end].to_vec()));
        at = end;
    }
    out
}

/// ` MASKED WITH system.f(args)`, as DESCRIBE prints a column's mask.
pub fn describe(m: &ColumnMask, col: &T) -> String {
    let args: Vec<String> = arg_types(m, col)
        .iter()
        .zip(&m.args)
        .map(|(t, v)| cql_literal(t, v.as_deref()))
        .collect();
    format!(" MASKED WITH system.{}({})", m.function, args.join(", "))
}

/// `AbstractType.getString` of a mask argument, as `system_schema.column_masks` lists it
/// (an empty string for null).
fn schema_string(t: &T, v: Option<&[u8]>) -> String {
    let Some(b) = v else { return String::new() };
    match t {
        T::Blob | T::List(_) | T::Set(_) | T::Map(..) | T::Tuple(_) | T::Udt { .. } => {
            crate::javafmt::hex(b)
        }
        _ => match decode_value(t, b) {
            Ok(_) => crate::javafmt::to_text(t, b).unwrap_or_else(|_| crate::javafmt::hex(b)),
            Err(_) => crate::javafmt::hex(b),
        },
    }
}

/// The `system_schema.column_masks` cells of a masked column: function keyspace and name,
/// argument types, values and nulls.
pub fn schema_row(m: &ColumnMask, col: &T) -> (Vec<String>, Vec<String>, Vec<bool>) {
    let types = arg_types(m, col);
    let values = types
        .iter()
        .zip(&m.args)
        .map(|(t, v)| schema_string(t, v.as_deref()))
        .collect();
    let nulls = m.args.iter().map(Option::is_none).collect();
    (m.arg_types.clone(), values, nulls)
}

/// Whether any column of `t` is masked.
pub fn has_masks(t: &TableDef) -> bool {
    t.columns.iter().any(|c| c.mask.is_some())
}

// ---- reads by roles without UNMASK --------------------------------------------------------

/// The masking call standing for column `i`'s value (None when the column has no mask).
fn masked_leaf(t: &TableDef, i: usize) -> Option<SelExpr> {
    let c = t.columns.get(i)?;
    let m = c.mask.as_ref()?;
    let mut args = vec![SelExpr::Leaf(Box::new(Selector::Column(i)), c.ty.clone())];
    for (ty, v) in arg_types(m, &c.ty).into_iter().zip(&m.args) {
        args.push(SelExpr::Const(ty, v.clone()));
    }
    let ty = if m.function == "mask_hash" {
        T::Blob
    } else {
        c.ty.clone()
    };
    Some(SelExpr::Call {
        name: m.function.clone(),
        args,
        ty,
    })
}

fn mask_selector(t: &TableDef, s: &Selector) -> Selector {
    match s {
        Selector::Column(i) => masked_leaf(t, *i).map_or_else(|| s.clone(), Selector::Expr),
        Selector::Expr(e) => Selector::Expr(mask_expr(t, e)),
        // Cassandra computes token(k) of the masked key values.
        Selector::Token if t.partition_key().any(|c| c.mask.is_some()) => {
            let args = t
                .columns
                .iter()
                .enumerate()
                .filter(|(_, c)| c.kind == crate::catalog::ColumnKind::PartitionKey)
                .map(|(i, c)| {
                    masked_leaf(t, i).unwrap_or_else(|| {
                        SelExpr::Leaf(Box::new(Selector::Column(i)), c.ty.clone())
                    })
                })
                .collect();
            Selector::Expr(SelExpr::Call {
                name: "token".into(),
                args,
                ty: T::Bigint,
            })
        }
        // Write times and TTLs are of the cells, not their values: Cassandra leaves them.
        other => other.clone(),
    }
}

fn mask_expr(t: &TableDef, e: &SelExpr) -> SelExpr {
    let b = |x: &SelExpr| Box::new(mask_expr(t, x));
    match e {
        SelExpr::Leaf(s, ty) => match s.as_ref() {
            Selector::Column(i) => masked_leaf(t, *i).unwrap_or_else(|| e.clone()),
            other => SelExpr::Leaf(Box::new(mask_selector(t, other)), ty.clone()),
        },
        SelExpr::Const(..) => e.clone(),
        SelExpr::Call { name, args, ty } => SelExpr::Call {
            name: name.clone(),
            args: args.iter().map(|a| mask_expr(t, a)).collect(),
            ty: ty.clone(),
        },
        SelExpr::Cast { inner, from, to } => SelExpr::Cast {
            inner: b(inner),
            from: from.clone(),
            to: to.clone(),
        },
        SelExpr::Op {
            op,
            left,
            right,
            ty,
        } => SelExpr::Op {
            op: *op,
            left: b(left),
            right: b(right),
            ty: ty.clone(),
        },
        SelExpr::Negate(x) => SelExpr::Negate(b(x)),
        SelExpr::Field { udt, pos, ty } => SelExpr::Field {
            udt: b(udt),
            pos: *pos,
            ty: ty.clone(),
        },
        SelExpr::Element { coll, key, ty } => SelExpr::Element {
            coll: b(coll),
            key: b(key),
            ty: ty.clone(),
        },
        SelExpr::Slice {
            coll,
            from,
            to,
            frozen,
        } => SelExpr::Slice {
            coll: b(coll),
            from: from.as_ref().map(|x| b(x)),
            to: to.as_ref().map(|x| b(x)),
            frozen: *frozen,
        },
        SelExpr::Collect { items, ty } => SelExpr::Collect {
            items: items.iter().map(|a| mask_expr(t, a)).collect(),
            ty: ty.clone(),
        },
    }
}

/// `plan` with every read of a masked column's value going through its mask (Cassandra's
/// selectors mask the column's value before any function sees it).
pub fn masked_plan(plan: &SelectPlan) -> SelectPlan {
    let t = &plan.table;
    let mut p = plan.clone();
    p.set_selection(match &plan.selection {
        Selection::Rows(v) => Selection::Rows(v.iter().map(|s| mask_selector(t, s)).collect()),
        Selection::Aggregates(a) => {
            let mut a: AggSelection = (**a).clone();
            a.firsts = a.firsts.iter().map(|s| mask_selector(t, s)).collect();
            for agg in &mut a.aggs {
                agg.arg = agg.arg.as_ref().map(|e| mask_expr(t, e));
            }
            Selection::Aggregates(Box::new(a))
        }
    });
    p
}

/// The masked columns a SELECT's WHERE clause restricts, by name.
pub fn restricted_masked(t: &TableDef, st: &cql::ast::SelectStatement) -> Vec<String> {
    use cql::ast::Relation as R;
    let mut names: Vec<&str> = Vec::new();
    for r in &st.where_clause {
        match r {
            R::Binary { column, .. }
            | R::In { column, .. }
            | R::IsNotNull { column }
            | R::Element { column, .. } => names.push(column),
            R::Token { columns, .. }
            | R::MultiColumn { columns, .. }
            | R::MultiColumnIn { columns, .. } => names.extend(columns.iter().map(String::as_str)),
        }
    }
    // Cassandra 5.0.9 lists `[c, id]` for `WHERE id = 1 AND c = 'abc'`: by name.
    let mut out: Vec<String> = t
        .columns
        .iter()
        .filter(|c| c.mask.is_some() && names.contains(&c.name.as_str()))
        .map(|c| c.name.clone())
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mask(q: &str) -> ast::ColumnMask {
        let st = cql::parse(&format!(
            "CREATE TABLE t (k int PRIMARY KEY, v text MASKED WITH {q})"
        ))
        .unwrap()
        .statement;
        let cql::Statement::CreateTable(ct) = st else {
            panic!()
        };
        ct.columns[1].mask.clone().unwrap()
    }

    #[test]
    fn prepares_with_cassandras_messages() {
        let m = prepare(
            "v",
            &T::Varchar,
            &mask("mask_inner(1, null)"),
            crate::tests::at(1),
        )
        .unwrap();
        assert_eq!(
            describe(&m, &T::Varchar),
            " MASKED WITH system.mask_inner(1, null)"
        );
        assert_eq!(
            schema_row(&m, &T::Varchar),
            (
                vec!["int".into(), "int".into()],
                vec!["1".into(), String::new()],
                vec![false, true]
            )
        );
        let err = |q: &str, t: &T| {
            prepare("v", t, &mask(q), crate::tests::at(1))
                .unwrap_err()
                .to_string()
        };
        assert!(err("abs()", &T::Int).contains("Not-masking function abs() cannot be used"));
        assert!(err("nosuch()", &T::Int)
            .contains("Unable to find masking function for v, no declared function matches the signature nosuch()"));
        assert!(err("mask_hash()", &T::Int).contains("return type is blob"));
        assert!(err("mask_inner(1, 1)", &T::Int)
            .contains("org.apache.cassandra.db.marshal.Int32Type of type int"));
        assert!(err("mask_inner(1)", &T::Varchar).contains(
            "Invalid number of arguments for function system.mask_inner([text|varchar|ascii], int, int, [text])"
        ));
    }

    #[test]
    fn applies_the_partial_arguments() {
        let c = ColumnDef {
            name: "v".into(),
            cql_type: "text".into(),
            ty: T::Varchar,
            kind: crate::catalog::ColumnKind::Regular,
            position: -1,
            desc: false,
            id: 1,
            mask: None,
        };
        let m = prepare(
            "v",
            &T::Varchar,
            &mask("mask_inner(1, null)"),
            crate::tests::at(1),
        )
        .unwrap();
        assert_eq!(
            apply(&c, &m, Some(b"secret")).unwrap(),
            Some(b"s*****".to_vec())
        );
        let d = prepare("v", &T::Varchar, &mask("DEFAULT"), crate::tests::at(1)).unwrap();
        assert_eq!(apply(&c, &d, Some(b"x")).unwrap(), Some(b"****".to_vec()));
        let lt = T::List(Box::new(T::Int));
        let l = prepare("v", &lt, &mask("mask_replace([1, 2])"), crate::tests::at(1)).unwrap();
        assert_eq!(
            describe(&l, &lt),
            " MASKED WITH system.mask_replace([1, 2])"
        );
    }
}
