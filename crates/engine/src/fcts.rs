//! Cassandra 5.0's collection functions (`CollectionFcts`: `map_keys`, `map_values`,
//! `collection_count`, `collection_min`, `collection_max`, `collection_sum`, `collection_avg`)
//! and masking functions (`MaskingFcts`: `mask_null`, `mask_default`, `mask_replace`,
//! `mask_inner`, `mask_outer`, `mask_hash`), and the vector similarity functions whose typing
//! and arithmetic live in `similarity`.
//!
//! Their signatures depend on the argument's type (a `map<K, V>` gives a `set<K>`), so they
//! are typed here rather than in `scalar`'s fixed signature table; `natives` asks this module
//! first. Outputs and messages were read off Cassandra 5.0.9.
//!
//! `mask_hash` computes every digest Java's `MessageDigest` knows on Cassandra 5.0.9 (MD2,
//! MD5, SHA-1, SHA-2, SHA3; SHA-256 its default), by the same names and aliases.

use crate::types::cql_type_name;
use proto::types::ColumnType as T;

type Arg = (T, Option<Vec<u8>>);

fn is_text(t: &T) -> bool {
    matches!(t, T::Varchar | T::Ascii)
}

fn element(t: &T) -> Option<&T> {
    match t {
        T::List(e) | T::Set(e) => Some(e),
        _ => None,
    }
}

/// The return type of `name` over `args` (types and column names), `None` when `name` is
/// not one of these functions.
pub fn return_type(name: &str, args: &[(T, String)]) -> Option<Result<T, String>> {
    if let Some(r) = crate::similarity::return_type(name, args) {
        return Some(r);
    }
    let f = name.to_ascii_lowercase();
    let first = args.first();
    let need = |what: &str| -> String {
        let (t, n) = first.cloned().unwrap_or((T::Blob, String::new()));
        format!(
            "Function system.{f} requires {what}, but found argument {n} of type {}",
            cql_type_name(&t)
        )
    };
    let arity = |lo: usize, hi: usize| -> Result<(), String> {
        if let Some(m) = mask_arity_refusal(&f, args.len()) {
            return Err(m);
        }
        if args.len() < lo || args.len() > hi {
            return Err(format!(
                "Invalid number of arguments for function system.{f}: {} given",
                args.len()
            ));
        }
        Ok(())
    };
    let r = (|| -> Result<T, String> {
        match f.as_str() {
            "map_keys" | "map_values" => {
                arity(1, 1)?;
                match &args[0].0 {
                    T::Map(k, v) if f == "map_keys" => Ok(T::Set(k.clone())),
                    T::Map(_, v) => Ok(T::List(v.clone())),
                    _ => Err(need(collection_need(&f).unwrap_or_default())),
                }
            }
            "collection_count" => {
                arity(1, 1)?;
                match &args[0].0 {
                    T::List(_) | T::Set(_) | T::Map(..) => Ok(T::Int),
                    _ => Err(need(collection_need(&f).unwrap_or_default())),
                }
            }
            "collection_min" | "collection_max" | "collection_sum" | "collection_avg" => {
                arity(1, 1)?;
                element(&args[0].0)
                    .filter(|e| {
                        f.ends_with("min") || f.ends_with("max") || crate::arith::is_numeric(e)
                    })
                    .cloned()
                    .ok_or_else(|| need(collection_need(&f).unwrap_or_default()))
            }
            "mask_null" | "mask_default" => {
                arity(1, 1)?;
                Ok(args[0].0.clone())
            }
            "mask_replace" => {
                arity(2, 2)?;
                if args[1].0 != args[0].0 {
                    return Err(format!(
                        "Type error: {} cannot be passed as argument 1 of function system.{f} of type {}",
                        args[1].1,
                        cql_type_name(&args[0].0)
                    ));
                }
                Ok(args[0].0.clone())
            }
            "mask_inner" | "mask_outer" => {
                arity(3, 4)?;
                if !is_text(&args[0].0) {
                    return Err(need("an argument of type [text|varchar|ascii]"));
                }
                Ok(args[0].0.clone())
            }
            "mask_hash" => {
                arity(1, 2)?;
                Ok(T::Blob)
            }
            _ => Err(String::new()),
        }
    })();
    match r {
        Err(e) if e.is_empty() => None,
        other => Some(other),
    }
}

/// A masking function's parameters as its `FunctionFactory` declares them: the fewest and
/// most arguments it takes and how its refusals print them (`None` for another function).
pub fn mask_signature(name: &str) -> Option<(usize, usize, &'static str)> {
    Some(match name.to_ascii_lowercase().as_str() {
        "mask_null" | "mask_default" => (1, 1, "(any)"),
        "mask_replace" => (2, 2, "(any, any)"),
        "mask_inner" | "mask_outer" => (3, 4, "([text|varchar|ascii], int, int, [text])"),
        "mask_hash" => (1, 2, "(any, [text])"),
        _ => return None,
    })
}

/// Cassandra's refusal of a masking function called with `n` arguments, checked before any
/// argument is typed; `None` when `n` fits or `name` is no masking function.
pub fn mask_arity_refusal(name: &str, n: usize) -> Option<String> {
    let (lo, hi, params) = mask_signature(name)?;
    (n < lo || n > hi).then(|| {
        format!(
            "Invalid number of arguments for function system.{}{params}",
            name.to_ascii_lowercase()
        )
    })
}

/// Cassandra's refusal of argument `pos` of a masking function where the parameter has a
/// fixed type (`FunctionParameter.fixed`: the masked text of `mask_inner`/`mask_outer`, their
/// bounds and padding, `mask_hash`'s algorithm) and the argument's type `ty` does not fit it:
/// a bound takes an int alone (not a smallint or a bigint), a text parameter text or ascii.
/// `arg` is the argument as written, `shown` its type as the message prints it.
pub fn mask_arg_refusal(name: &str, pos: usize, arg: &str, ty: &T, shown: &str) -> Option<String> {
    let f = name.to_ascii_lowercase();
    let (param, fits) = match (f.as_str(), pos) {
        ("mask_inner" | "mask_outer", 0) => ("[text|varchar|ascii]", is_text(ty)),
        ("mask_inner" | "mask_outer", 1 | 2) => ("int", *ty == T::Int),
        ("mask_inner" | "mask_outer", 3) | ("mask_hash", 1) => ("text", is_text(ty)),
        _ => return None,
    };
    (!fits).then(|| {
        format!(
            "Function system.{f} requires an argument of type {param}, but found argument {arg} of type {shown}"
        )
    })
}

/// A literal's type as Cassandra's messages print it: a collection literal is frozen (a
/// tuple's name says so already).
pub fn shown_literal_type(ty: &T) -> String {
    match ty {
        T::List(_) | T::Set(_) | T::Map(..) => format!("frozen<{}>", cql_type_name(ty)),
        _ => cql_type_name(ty),
    }
}

/// The type a literal argument at `pos` takes (`prev`: the types of the arguments before).
/// The parameters Cassandra names for a masking function whose first argument, at `pos` 0,
/// takes any type (`mask_null`, `mask_default`, `mask_hash`, `mask_replace`); `None` for
/// other functions and positions.
pub fn mask_any_params(name: &str, pos: usize) -> Option<&'static str> {
    match (name.to_ascii_lowercase().as_str(), pos) {
        ("mask_null" | "mask_default", 0) => Some("any"),
        ("mask_hash", 0) => Some("any, [text]"),
        ("mask_replace", 0) => Some("any, any"),
        _ => None,
    }
}

pub fn param_type(name: &str, pos: usize, prev: &[T]) -> Option<T> {
    match (name.to_ascii_lowercase().as_str(), pos) {
        ("mask_replace", 1) => prev.first().cloned(),
        ("mask_inner" | "mask_outer", 0) => Some(T::Ascii),
        ("mask_inner" | "mask_outer", 1 | 2) => Some(T::Int),
        ("mask_inner" | "mask_outer", 3) | ("mask_hash", 1) => Some(T::Varchar),
        _ => None,
    }
}

/// How Cassandra 5.0 names the parameter of a collection function in "Cannot infer type of
/// argument X in call to function system.f(kind)" (`collection_min`/`max` say
/// `numeric_set_or_list` too); `None` for other functions.
/// What a collection function requires of its argument, in its refusal ("Function
/// system.map_keys requires a map argument, but found ...").
fn collection_need(f: &str) -> Option<&'static str> {
    Some(match f {
        "map_keys" | "map_values" => "a map argument",
        "collection_count" => "a collection argument",
        "collection_min" | "collection_max" => "a set or list argument",
        "collection_sum" | "collection_avg" => "a numeric set/list argument",
        _ => return None,
    })
}

/// The refusal of a collection function given a DESC clustering column: Cassandra types it as
/// a ReversedType, which is no collection type, whatever its base (`map_values(ck)` of a DESC
/// `frozen<map<..>>` is refused, its frozen type named); `None` for other functions.
pub fn reversed_refusal(name: &str, arg: &str, ty: &T) -> Option<String> {
    let f = name.to_ascii_lowercase();
    let what = collection_need(&f)?;
    // A clustering collection or UDT is frozen, nested types too (`cql_type_name`).
    let shown = match ty {
        T::List(_) | T::Set(_) | T::Map(..) | T::Udt { .. } => {
            format!("frozen<{}>", cql_type_name(ty))
        }
        _ => cql_type_name(ty),
    };
    Some(format!(
        "Function system.{f} requires {what}, but found argument {arg} of type {shown}"
    ))
}

pub fn collection_param(name: &str) -> Option<&'static str> {
    Some(match name.to_ascii_lowercase().as_str() {
        "map_keys" | "map_values" => "map",
        "collection_count" => "collection",
        "collection_min" | "collection_max" | "collection_sum" | "collection_avg" => {
            "numeric_set_or_list"
        }
        _ => return None,
    })
}

/// The type Cassandra 5.0 gives a literal argument of a collection function
/// (`getCompatibleTypeIfKnown`), `None` when it cannot tell: a constant takes its preferred
/// type (an integer the smallest of int, bigint, varint; a float double when the double holds
/// it exactly, else decimal; a string ascii or text; a hex blob tinyint; a version-1 UUID
/// timeuuid), a cast its type, a list or set literal the one element type that all its known
/// element types are assignable to (`[1, 100000000000000000000]` is a `list<varint>`,
/// `[1, 3000000000]` and `[1.5, 2]` have none), a tuple its elements' types. Nulls, bind
/// markers, empty collections and map literals have none.
pub fn literal_arg_type(term: &cql::ast::Term) -> Option<T> {
    use cql::ast::{Literal as L, Term};
    match term {
        Term::Literal(l) => match l {
            L::Integer(_) | L::Boolean(_) | L::Duration(_) => crate::selection::literal_type(term),
            L::Float(f) => float_type(f),
            L::String(s) if s.is_ascii() => Some(T::Ascii),
            L::String(_) => Some(T::Varchar),
            L::Blob(_) => Some(T::Tinyint),
            L::Uuid(u) => Some(if u.as_bytes().get(14) == Some(&b'1') {
                T::Timeuuid
            } else {
                T::Uuid
            }),
            L::Null => None,
        },
        Term::TypeHint { ty, .. } => ty.as_native().cloned(),
        Term::List(items) => Some(T::List(Box::new(compatible(items)?))),
        Term::Set(items) => Some(T::Set(Box::new(compatible(items)?))),
        Term::Tuple(items) if items.len() == 1 => literal_arg_type(&items[0]),
        Term::Tuple(items) => items
            .iter()
            .map(literal_arg_type)
            .collect::<Option<Vec<T>>>()
            .map(T::Tuple),
        _ => None,
    }
}

/// The type Cassandra 5.0 gives a term argument of a collection function in a WHERE clause
/// or a VALUES/SET term: as [`literal_arg_type`], but a list literal has none there, a map
/// literal has one (its keys' and its values' compatible types), and a cast to a
/// collection type is that type.
pub fn term_arg_type(term: &cql::ast::Term) -> Option<T> {
    use cql::ast::Term;
    match term {
        Term::List(_) | Term::Tuple(_) => None,
        Term::TypeHint { ty, .. } => cast_type(ty),
        Term::Map(entries) => {
            let keys: Vec<Term> = entries.iter().map(|(k, _)| k.clone()).collect();
            let values: Vec<Term> = entries.iter().map(|(_, v)| v.clone()).collect();
            Some(T::Map(
                Box::new(compatible(&keys)?),
                Box::new(compatible(&values)?),
            ))
        }
        other => literal_arg_type(other),
    }
}

/// The type of a cast to a native or (frozen) collection type.
pub(crate) fn cast_type(ty: &cql::ast::CqlType) -> Option<T> {
    use cql::ast::CqlType as C;
    Some(match ty {
        C::Native(t) => t.clone(),
        C::Varchar => T::Varchar,
        C::Frozen(t) => cast_type(t)?,
        C::List(e) => T::List(Box::new(cast_type(e)?)),
        C::Set(e) => T::Set(Box::new(cast_type(e)?)),
        C::Map(k, v) => T::Map(Box::new(cast_type(k)?), Box::new(cast_type(v)?)),
        _ => return None,
    })
}

/// The argument and return types of collection function `fname` called on literal `term`
/// whose inferred type is `arg` (`None`: not inferable), with Cassandra's messages (a literal
/// collection is frozen in them).
pub fn literal_call_types(
    fname: &str,
    term: &cql::ast::Term,
    arg: Option<T>,
) -> Result<(T, T), String> {
    let f = fname.to_ascii_lowercase();
    let kind = collection_param(fname).unwrap_or("collection");
    let Some(ty) = arg else {
        return Err(format!(
            "Cannot infer type of argument {term} in call to function system.{f}({kind}): use type casts to disambiguate"
        ));
    };
    match return_type(fname, &[(ty.clone(), term.to_string())]) {
        Some(Ok(ret)) => Ok((ty, ret)),
        Some(Err(m)) => {
            let name = cql_type_name(&ty);
            Err(match ty {
                T::List(_) | T::Set(_) | T::Map(..) => m.replace(
                    &format!(" of type {name}"),
                    &format!(" of type frozen<{name}>"),
                ),
                _ => m,
            })
        }
        None => Err(format!("Unknown function {fname} called")),
    }
}

/// A float literal's preferred type: double when its double is exactly its value.
fn float_type(text: &str) -> Option<T> {
    let Ok(d) = text.parse::<f64>() else {
        return Some(T::Double);
    };
    if !d.is_finite() {
        return Some(T::Double);
    }
    let exact = crate::literal::decimal_from_text(text)
        .and_then(|(scale, unscaled)| {
            let mut b = scale.to_be_bytes().to_vec();
            b.extend(unscaled);
            crate::bigdec::Dec::decode(&b)
        })
        .zip(crate::bigdec::Dec::of_f64(d).ok())
        .is_some_and(|(v, of_double)| v.cmp_value(&of_double).is_eq());
    Some(if exact { T::Double } else { T::Decimal })
}

/// The first of `items`' known types that all of them are assignable to (Cassandra's
/// `AssignmentTestable.getCompatibleTypeIfKnown`).
fn compatible(items: &[cql::ast::Term]) -> Option<T> {
    let mut types: Vec<T> = Vec::new();
    for t in items.iter().filter_map(literal_arg_type) {
        if !types.contains(&t) {
            types.push(t);
        }
    }
    types
        .iter()
        .find(|to| types.iter().all(|from| assignable(from, to)))
        .cloned()
}

/// Whether a value of type `from` is assignable to `to` (`AbstractType.testAssignment`: the
/// same type, or `to` reads `from`'s bytes: a varint any int or bigint, text ascii, a uuid a
/// timeuuid, bigint and timestamp each other, a blob anything).
fn assignable(from: &T, to: &T) -> bool {
    from == to
        || matches!(
            (from, to),
            (T::Int | T::Bigint | T::Timestamp, T::Varint)
                | (T::Ascii, T::Varchar)
                | (T::Timeuuid, T::Uuid)
                | (T::Timestamp, T::Bigint)
                | (T::Bigint, T::Timestamp)
                | (_, T::Blob)
        )
}

/// Whether `name` is one of these functions.
pub fn is_known(name: &str) -> bool {
    return_type(name, &[(T::Blob, String::new())]).is_some()
}

/// Evaluates `name` (already type-checked) over `args`.
pub fn call(name: &str, args: &[Arg]) -> Result<Option<Vec<u8>>, String> {
    let arg = |i: usize| args.get(i).and_then(|a| a.1.as_deref());
    if let Some(r) = crate::similarity::call(name, arg(0), arg(1)) {
        return r;
    }
    let f = name.to_ascii_lowercase();
    let (ty, v) = (&args[0].0, args[0].1.as_deref());
    match f.as_str() {
        "mask_null" => return Ok(None),
        "mask_default" => return Ok(Some(default_of(ty))),
        "mask_replace" => return Ok(args[1].1.clone()),
        _ => {}
    }
    let Some(v) = v else { return Ok(None) };
    Ok(Some(match f.as_str() {
        "map_keys" | "map_values" => {
            let items = items(v).ok_or("Invalid map value")?;
            let pick = usize::from(f == "map_values");
            let mut out: Vec<&[u8]> = Vec::new();
            for pair in items.chunks(2) {
                out.push(pair.get(pick).copied().flatten().unwrap_or(&[]));
            }
            encode(&out)
        }
        "collection_count" => {
            let n = i32::from_be_bytes(
                v.get(..4)
                    .ok_or("Invalid collection")?
                    .try_into()
                    .map_err(|_| "bad")?,
            );
            n.to_be_bytes().to_vec()
        }
        "collection_min" | "collection_max" => {
            let e = element(ty).ok_or("not a collection")?;
            let items = items(v).ok_or("Invalid collection")?;
            let mut best: Option<&[u8]> = None;
            for x in items.into_iter().flatten() {
                let better = best.is_none_or(|b| {
                    let o = crate::types::compare(e, x, b);
                    if f == "collection_min" {
                        o.is_lt()
                    } else {
                        o.is_gt()
                    }
                });
                if better {
                    best = Some(x);
                }
            }
            return Ok(best.map(<[u8]>::to_vec));
        }
        "collection_sum" | "collection_avg" => {
            let e = element(ty).ok_or("not a collection")?;
            return fold_numbers(&f, e, &items(v).ok_or("Invalid collection")?);
        }
        "mask_inner" | "mask_outer" => {
            let n = |i: usize| -> i32 {
                args.get(i)
                    .and_then(|a| a.1.as_deref())
                    .and_then(|b| b.try_into().ok())
                    .map(i32::from_be_bytes)
                    .unwrap_or(0)
                    .max(0)
            };
            let pad_text = args
                .get(3)
                .and_then(|a| a.1.as_deref())
                .and_then(|b| std::str::from_utf8(b).ok());
            if let Some(m) = pad_text.and_then(|p| bad_padding(&f, p)) {
                return Err(m);
            }
            let pad = pad_text.and_then(|s| s.chars().next()).unwrap_or('*');
            // An ascii result encodes a character it cannot hold as '?' (Java's US_ASCII).
            let pad = if *ty == T::Ascii && !pad.is_ascii() {
                '?'
            } else {
                pad
            };
            let text = std::str::from_utf8(v).map_err(|_| "Invalid UTF-8")?;
            let chars: Vec<char> = text.chars().collect();
            let len = chars.len();
            let (b, e) = (n(1) as usize, n(2) as usize);
            let inner = f == "mask_inner";
            chars
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let outer_part = i < b || i + e >= len;
                    if outer_part == inner {
                        *c
                    } else {
                        pad
                    }
                })
                .collect::<String>()
                .into_bytes()
        }
        "mask_hash" => {
            let algo = args
                .get(1)
                .and_then(|a| a.1.as_deref())
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_else(|| "SHA-256".into());
            // A null name is the default.
            match digest_of(&algo) {
                Some(digest) => digest(v),
                None => return Err(format!("Hash algorithm not found: {algo}")),
            }
        }
        _ => return Err(format!("Unknown function {name}")),
    }))
}

/// Sum or average of a collection's numbers, in the element type, as the `sum` and `avg`
/// aggregates compute them (an empty collection gives 0, as the aggregates do).
fn fold_numbers(f: &str, e: &T, items: &[Option<&[u8]>]) -> Result<Option<Vec<u8>>, String> {
    use crate::arith::{Mean, Sum};
    if f == "collection_sum" {
        let mut total = Sum::new(e);
        for x in items.iter().flatten() {
            total.add(e, x).map_err(|e| e.to_string())?;
        }
        return Ok(Some(total.result(e)));
    }
    let mut mean = Mean::new(e);
    for x in items.iter().flatten() {
        mean.add(e, x).map_err(|e| e.to_string())?;
    }
    Ok(Some(mean.result(e).map_err(|e| e.to_string())?))
}

fn zero(t: &T) -> Vec<u8> {
    match t {
        T::Tinyint | T::Varint => vec![0],
        T::Smallint => vec![0; 2],
        T::Int | T::Float => vec![0; 4],
        T::Decimal => vec![0; 5],
        _ => vec![0; 8],
    }
}

/// `mask_default`: a fixed value of the type (`****` for text, zero, false, the epoch, the
/// nil UUID, empty blobs and collections).
fn default_of(t: &T) -> Vec<u8> {
    match t {
        T::Varchar | T::Ascii => b"****".to_vec(),
        T::Boolean => vec![0],
        T::Blob => Vec::new(),
        T::Date => (1u32 << 31).to_be_bytes().to_vec(),
        T::Time | T::Timestamp | T::Bigint | T::Counter | T::Double => vec![0; 8],
        T::Uuid => vec![0; 16],
        // The smallest version-1 UUID Cassandra makes (time 0, clock and node 0x80 bytes).
        T::Timeuuid => vec![
            0x13, 0x81, 0x40, 0x00, 0x1d, 0xd2, 0x11, 0xb2, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
            0x80, 0x80,
        ],
        T::Inet => vec![0; 4],
        T::Duration => vec![0; 3],
        T::List(_) | T::Set(_) | T::Map(..) => vec![0; 4],
        // Each field or component its own default.
        T::Tuple(parts) => fields_default(parts.iter()),
        T::Udt { fields, .. } => fields_default(fields.iter().map(|(_, t)| t)),
        other => zero(other),
    }
}

/// A tuple's or UDT's value whose every component is its type's `mask_default`.
fn fields_default<'a>(types: impl Iterator<Item = &'a T>) -> Vec<u8> {
    let mut out = Vec::new();
    for t in types {
        let v = default_of(t);
        out.extend_from_slice(&(v.len() as i32).to_be_bytes());
        out.extend_from_slice(&v);
    }
    out
}

/// The elements of a serialized list/set (or keys and values of a map, alternating).
fn items(v: &[u8]) -> Option<Vec<Option<&[u8]>>> {
    let n = i32::from_be_bytes(v.get(..4)?.try_into().ok()?);
    let mut at = 4;
    let mut out = Vec::new();
    usize::try_from(n).ok()?;
    // A map holds two values per entry; read until the bytes end.
    while at < v.len() {
        let len = i32::from_be_bytes(v.get(at..at + 4)?.try_into().ok()?);
        at += 4;
        if len < 0 {
            out.push(None);
        } else {
            let l = len as usize;
            out.push(Some(v.get(at..at + l)?));
            at += l;
        }
    }
    Some(out)
}

fn encode(items: &[&[u8]]) -> Vec<u8> {
    let mut out = (items.len() as i32).to_be_bytes().to_vec();
    for i in items {
        out.extend_from_slice(&(i.len() as i32).to_be_bytes());
        out.extend_from_slice(i);
    }
    out
}

/// Cassandra's refusal of a `mask_inner`/`mask_outer` padding that is not one character
/// (Java counts UTF-16 units), checked when prepared for a constant and when computed.
fn bad_padding(f: &str, pad: &str) -> Option<String> {
    let units = pad.encode_utf16().count();
    (units != 1).then(|| {
        format!(
            "The padding argument for function system.{f} should be single-character, but '{pad}' has {units} characters."
        )
    })
}

/// Cassandra's refusal of a masking function's constant argument at `pos`, checked when the
/// call is prepared: an algorithm no `MessageDigest` knows (an empty name too), a padding
/// that is not one character. `None` for a null or a fitting one.
pub fn mask_constant_refusal(name: &str, pos: usize, value: &[u8]) -> Option<String> {
    let f = name.to_ascii_lowercase();
    let text = std::str::from_utf8(value).ok()?;
    match (f.as_str(), pos) {
        ("mask_hash", 1) => digest_of(text)
            .is_none()
            .then(|| format!("Hash algorithm not found: {text}")),
        ("mask_inner" | "mask_outer", 3) => bad_padding(&f, text),
        _ => None,
    }
}

/// A `mask_hash` digest.
type HashFn = fn(&[u8]) -> Vec<u8>;

/// The digest of `D` over `data`.
fn hash<D: sha2::Digest>(data: &[u8]) -> Vec<u8> {
    D::digest(data).to_vec()
}

/// The digest Java's `MessageDigest.getInstance` gives for `algorithm` on Cassandra 5.0.9's JVM
/// (the SUN provider): a standard name or one of its aliases, matched without case, or an
/// object identifier, bare or after `OID.` (MD2's and MD5's are not registered). Read off
/// 5.0.9: `mask_hash(x, 'SHA')` is SHA-1, `'2.16.840.1.101.3.4.2.8'` SHA3-256, `'MD4'`,
/// `'SHA3256'` and `'SHA-1 '` are refused.
fn digest_of(algorithm: &str) -> Option<HashFn> {
    const NIST: &str = "2.16.840.1.101.3.4.2.";
    let name = algorithm.to_ascii_uppercase();
    let name = name.strip_prefix("OID.").unwrap_or(&name);
    let name = match name.strip_prefix(NIST) {
        Some(n) => match n {
            "1" => "SHA-256",
            "2" => "SHA-384",
            "3" => "SHA-512",
            "4" => "SHA-224",
            "5" => "SHA-512/224",
            "6" => "SHA-512/256",
            "7" => "SHA3-224",
            "8" => "SHA3-256",
            "9" => "SHA3-384",
            "10" => "SHA3-512",
            _ => return None,
        },
        None if name == "1.3.14.3.2.26" => "SHA-1",
        None => name,
    };
    Some(match name {
        "MD2" => hash::<md2::Md2>,
        "MD5" => hash::<md5::Md5>,
        "SHA-1" | "SHA1" | "SHA" => hash::<sha1::Sha1>,
        "SHA-224" | "SHA224" => hash::<sha2::Sha224>,
        "SHA-256" | "SHA256" => hash::<sha2::Sha256>,
        "SHA-384" | "SHA384" => hash::<sha2::Sha384>,
        "SHA-512" | "SHA512" => hash::<sha2::Sha512>,
        "SHA-512/224" | "SHA512/224" => hash::<sha2::Sha512_224>,
        "SHA-512/256" | "SHA512/256" => hash::<sha2::Sha512_256>,
        "SHA3-224" => hash::<sha3::Sha3_224>,
        "SHA3-256" => hash::<sha3::Sha3_256>,
        "SHA3-384" => hash::<sha3::Sha3_384>,
        "SHA3-512" => hash::<sha3::Sha3_512>,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_matches_the_standard_vectors() {
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        let sha256 = digest_of("sha-256").unwrap();
        assert_eq!(
            hex(&sha256(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        // mask_hash('abcdef') on Cassandra 5.0.9 starts with be f5 7e c7.
        assert_eq!(&sha256(b"abcdef")[..4], &[0xbe, 0xf5, 0x7e, 0xc7]);
    }

    #[test]
    fn digests_answer_to_javas_names() {
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        // Prefixes of mask_hash(0x616263, name) on Cassandra 5.0.9.
        for (name, prefix) in [
            ("MD2", "da853b0d3f88d99b"),
            ("md5", "900150983cd24fb0"),
            ("SHA", "a9993e364706816a"),
            ("OID.1.3.14.3.2.26", "a9993e364706816a"),
            ("sha3-256", "3a985da74fe225b2"),
            ("2.16.840.1.101.3.4.2.10", "b751850b1a57168a"),
            ("SHA512/224", "4634270f707b6a54"),
        ] {
            let digest = digest_of(name).unwrap_or_else(|| panic!("{name} refused"));
            assert!(hex(&digest(b"abc")).starts_with(prefix), "{name}");
        }
        for name in ["MD4", "SHA3256", "SHA-1 ", "1.2.840.113549.2.5", ""] {
            assert!(digest_of(name).is_none(), "{name:?} accepted");
        }
    }

    #[test]
    fn masks_keep_or_hide_the_ends() {
        let t = |s: &str| (T::Varchar, Some(s.as_bytes().to_vec()));
        let i = |n: i32| (T::Int, Some(n.to_be_bytes().to_vec()));
        let s = |v: Option<Vec<u8>>| String::from_utf8(v.unwrap()).unwrap();
        assert_eq!(
            s(call("mask_inner", &[t("abcdef"), i(1), i(2)]).unwrap()),
            "a***ef"
        );
        assert_eq!(
            s(call("mask_outer", &[t("abcdef"), i(1), i(2)]).unwrap()),
            "*bcd**"
        );
        assert_eq!(
            s(call("mask_inner", &[t("abcdef"), (T::Int, None), i(1)]).unwrap()),
            "*****f"
        );
        assert_eq!(
            s(call("mask_inner", &[t("abcdef"), i(10), i(10)]).unwrap()),
            "abcdef"
        );
        assert_eq!(
            s(call("mask_default", &[(T::Varchar, None)]).unwrap()),
            "****"
        );
    }

    #[test]
    fn collection_types_follow_the_argument() {
        let m = T::Map(Box::new(T::Varchar), Box::new(T::Int));
        assert_eq!(
            return_type("map_keys", &[(m.clone(), "m".into())]),
            Some(Ok(T::Set(Box::new(T::Varchar))))
        );
        assert_eq!(
            return_type("collection_count", &[(T::Varchar, "t".into())]),
            Some(Err("Function system.collection_count requires a collection argument, but found argument t of type text".into()))
        );
        assert_eq!(return_type("abs", &[(T::Int, "i".into())]), None);
    }

    #[test]
    fn literal_collections_take_cassandras_compatible_type() {
        // Cassandra 5.0.9's result types (60_literal_collections.cql).
        let ty = |q: &str| -> Option<T> {
            let cql::Statement::Select(s) = cql::parse(&format!("SELECT f({q}) FROM t"))
                .unwrap()
                .statement
            else {
                panic!("{q}")
            };
            let cql::ast::Selection::Selectors(sel) = &s.selection else {
                panic!("{q}")
            };
            let cql::ast::SelectorExpr::Function { args, .. } = &sel[0].expr else {
                panic!("{q}")
            };
            let cql::ast::SelectorExpr::Term(t) = &args[0] else {
                panic!("{q}")
            };
            literal_arg_type(t)
        };
        let list = |t: T| Some(T::List(Box::new(t)));
        assert_eq!(ty("[1, 2]"), list(T::Int));
        assert_eq!(ty("{1, 2}"), Some(T::Set(Box::new(T::Int))));
        assert_eq!(
            ty("[100000000000000000000, 1, 3000000000]"),
            list(T::Varint)
        );
        assert_eq!(ty("[1, 3000000000]"), None);
        assert_eq!(ty("[1.5, 2.5]"), list(T::Double));
        assert_eq!(ty("[0.1234567890123456789]"), list(T::Decimal));
        assert_eq!(ty("[1.5, 2]"), None);
        assert_eq!(ty("['a', 'é']"), list(T::Varchar));
        assert_eq!(ty("['a']"), list(T::Ascii));
        assert_eq!(ty("[0x01]"), list(T::Tinyint));
        assert_eq!(
            ty("[c0a8d6e4-0000-4000-8000-000000000000, c0a8d6e4-0000-1000-8000-000000000001]"),
            list(T::Uuid)
        );
        assert_eq!(ty("[[1], [2]]"), list(T::List(Box::new(T::Int))));
        assert_eq!(ty("[1, null]"), list(T::Int));
        for none in ["[]", "{}", "{1: 2}", "[null]", "null", "?", "[?]"] {
            assert_eq!(ty(none), None, "{none}");
        }
    }
}
