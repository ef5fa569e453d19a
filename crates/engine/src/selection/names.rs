//! The output column names Cassandra gives selectors (`-(m)`, `m['a']`, `writetime(v)`,
//! `system.abs(m + 1)`), and the text of terms inside them and in messages.

use super::{aggregate_kind, term_as_selector, unparen};
use crate::plan::AggKind;
use cql::ast::{ArithOp, Literal, SelectorCollection, SelectorExpr as E, Term};

/// Precedence of an operation selector (for parenthesizing names as Cassandra prints them).
pub(super) fn precedence(e: &E) -> u8 {
    if let E::Term(t) = e {
        if let Term::Operation { op, .. } = unparen(t) {
            return precedence_of(*op);
        }
    }
    match e {
        E::Operation { op, .. } => match op {
            ArithOp::Add | ArithOp::Sub => 1,
            _ => 2,
        },
        _ => 3,
    }
}

pub(super) fn precedence_of(op: ArithOp) -> u8 {
    match op {
        ArithOp::Add | ArithOp::Sub => 1,
        _ => 2,
    }
}

/// The column name Cassandra gives a selector, from its text (used for operands, whose
/// own building happens later).
pub(super) fn selector_name(e: &E) -> String {
    match e {
        E::Column(c) => c.clone(),
        E::CountRows => "count".into(),
        E::WriteTime(c) => format!("writetime({c})"),
        E::MaxWriteTime(c) => format!("maxwritetime({c})"),
        E::Ttl(c) => format!("ttl({c})"),
        E::ElementTime { func, column, key } => format!("{func}({column}[{key}])"),
        E::SliceTime {
            func,
            column,
            from,
            to,
        } => format!(
            "{func}({column}[{}..{}])",
            from.as_ref().map(term_name).unwrap_or_default(),
            to.as_ref().map(term_name).unwrap_or_default()
        ),
        E::FieldTime {
            func,
            column,
            fields,
        } => format!("{func}({column}.{})", fields.join(".")),
        E::Function { name, args } if name.name == "_negate" && args.len() == 1 => {
            if precedence(&args[0]) < 3 {
                format!("-({})", selector_name(&args[0]))
            } else {
                format!("-{}", selector_name(&args[0]))
            }
        }
        E::Function { name, args } => {
            if aggregate_kind(e) == Some(AggKind::CountRows) {
                return "count".into();
            }
            let names: Vec<String> = args.iter().map(selector_name).collect();
            match crate::functions::json_fn(&name.name) {
                Some(_) => crate::scalar::column_name("tojson", &names),
                None => crate::scalar::column_name(&name.name, &names),
            }
        }
        E::Cast { expr, ty, call } => match &**expr {
            E::Term(t) if !call => format!("({ty}){}", term_name(t)),
            inner => format!("cast({} as {ty})", selector_name(inner)),
        },
        E::Term(t) => match term_as_selector(t) {
            Some(e) => selector_name(&e),
            None => term_name(t),
        },
        E::Field { expr, field } => format!("{}.{field}", selector_name(expr)),
        E::Parens(expr) => format!("({})", selector_name(expr)),
        E::TypeHint { ty, expr } => format!("({ty}){}", selector_name(expr)),
        E::Element { expr, key } => format!("{}[{}]", selector_name(expr), term_name(key)),
        E::Slice { expr, from, to } => format!(
            "{}[{}..{}]",
            selector_name(expr),
            from.as_ref().map(term_name).unwrap_or_default(),
            to.as_ref().map(term_name).unwrap_or_default()
        ),
        E::Collection(c) => {
            let names = |v: &[E]| v.iter().map(selector_name).collect::<Vec<_>>().join(", ");
            match c {
                SelectorCollection::List(v) => format!("[{}]", names(v)),
                SelectorCollection::Set(v) => format!("{{{}}}", names(v)),
                SelectorCollection::Tuple(v) => format!("({})", names(v)),
                SelectorCollection::Map(v) => format!(
                    "{{{}}}",
                    v.iter()
                        .map(|(k, v)| format!("{}: {}", selector_name(k), selector_name(v)))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }
        }
        E::Operation { op, left, right } => {
            let p = precedence_of(*op);
            let l = selector_name(left);
            let r = selector_name(right);
            let l = if precedence(left) < p {
                format!("({l})")
            } else {
                l
            };
            let r = if precedence(right) <= p && precedence(right) < 3 {
                format!("({r})")
            } else {
                r
            };
            format!("{l} {} {r}", op.symbol())
        }
    }
}

/// A term as Cassandra shows it inside a column name: string literals quoted but not escaped
/// (`m['it's']`), collections and tuples with their elements shown the same way. Cassandra's
/// messages quote terms so too (see `build::operation::cassandra_text`).
pub(super) fn term_name(t: &Term) -> String {
    term_text(t, false)
}

/// [`term_name`], with the fields of UDT literals in the order Cassandra prints a term of a
/// statement (`hash_ordered_udts`): it keeps them in a `java.util.HashMap` keyed by the field
/// name's bytes, which iterates by bucket (the `ByteBuffer` hash, spread and masked by the
/// table size), then by insertion. A selection's literal keeps the written order.
pub(crate) fn term_text(t: &Term, hash_ordered_udts: bool) -> String {
    let text = |t: &Term| term_text(t, hash_ordered_udts);
    let join = |items: &[Term]| items.iter().map(text).collect::<Vec<_>>().join(", ");
    match t {
        Term::Literal(Literal::String(s)) => format!("'{s}'"),
        Term::List(items) => format!("[{}]", join(items)),
        Term::Set(items) => format!("{{{}}}", join(items)),
        Term::Tuple(items) => format!("({})", join(items)),
        Term::Map(entries) => {
            let shown: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{}: {}", text(k), text(v)))
                .collect();
            format!("{{{}}}", shown.join(", "))
        }
        Term::Udt(fields) => {
            let mut order: Vec<(usize, usize)> = (0..fields.len()).map(|i| (0, i)).collect();
            if hash_ordered_udts {
                let mut capacity = 16usize;
                while fields.len() * 4 > capacity * 3 {
                    capacity *= 2;
                }
                for (bucket, i) in &mut order {
                    // ByteBuffer.hashCode: from the last byte to the first, each signed.
                    let h = fields[*i].0.bytes().rev().fold(1i32, |h, b| {
                        h.wrapping_mul(31).wrapping_add(i32::from(b as i8))
                    }) as u32;
                    *bucket = (h ^ (h >> 16)) as usize & (capacity - 1);
                }
                order.sort_unstable();
            }
            let shown: Vec<String> = order
                .iter()
                .map(|(_, i)| format!("{}: {}", fields[*i].0, text(&fields[*i].1)))
                .collect();
            format!("{{{}}}", shown.join(", "))
        }
        Term::FunctionCall { name, args } => format!("{name}({})", join(args)),
        Term::TypeHint { ty, term } => format!("({ty}){}", text(term)),
        Term::Operation { op, left, right } => {
            format!("{} {} {}", text(left), op.symbol(), text(right))
        }
        Term::Negate(t) => format!("-{}", text(t)),
        // A named marker too is `?` to Cassandra (`system.abs(?)` for `abs(:x)`).
        Term::Bind(_) => "?".into(),
        Term::Literal(_) => t.to_string(),
    }
}
