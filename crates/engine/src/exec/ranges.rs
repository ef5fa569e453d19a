//! What a WHERE clause selects before any row is read: the partitions (keys bound, checked
//! and hashed to tokens; IN lists as their cartesian product) and the clustering intervals
//! (equalities, slices and multi-column tuple bounds, intersected and normalised).

use super::{resolve, resolve_ref, tuple_field, Bindings};
use crate::catalog::TableDef;
use crate::keys;
use crate::plan::*;
use crate::token;
use crate::EngineError;
use proto::types::ColumnType;
use std::borrow::Cow;

pub(crate) fn resolve_key(src: &Src, vals: &Bindings, col: &str) -> Result<Vec<u8>, EngineError> {
    resolve_key_ref(src, vals, col).map(Cow::into_owned)
}

/// [`resolve_key`], borrowing the value where it can ([`resolve_ref`]).
pub(crate) fn resolve_key_ref<'a>(
    src: &'a Src,
    vals: &'a Bindings,
    col: &str,
) -> Result<Cow<'a, [u8]>, EngineError> {
    match resolve_ref(src, vals) {
        Ok(Some(v)) => Ok(v),
        Ok(None) => Err(EngineError::invalid(format!(
            "Invalid null value in condition for column {col}"
        ))),
        Err(EngineError::Unset(_)) => Err(EngineError::invalid(format!(
            "Invalid unset value for column {col}"
        ))),
        Err(e) => Err(e),
    }
}

/// Expands key restrictions into the list of concrete values per column.
pub(crate) fn expand(
    kv: &KeyValues,
    vals: &Bindings,
    col: &str,
) -> Result<Vec<Vec<u8>>, EngineError> {
    match kv {
        KeyValues::Eq(s) => Ok(vec![resolve_key(s, vals, col)?]),
        KeyValues::In(list) => list.iter().map(|s| resolve_key(s, vals, col)).collect(),
        KeyValues::InBind(i, ty) => {
            let raw = bound_in_list(&Src::Bind(*i), vals, col)?;
            let items = decode_in_list(&raw).ok_or_else(|| {
                EngineError::invalid(format!("Invalid list value for IN on {col}"))
            })?;
            // Cassandra decodes the list into values and back: an empty element of a type
            // whose empty value decodes to null (an int, not a text) is a null there.
            items
                .into_iter()
                .map(|v| match v {
                    Some(v) if !(v.is_empty() && crate::scalar::empty_is_null(ty)) => Ok(v),
                    _ => Err(EngineError::invalid(format!(
                        "Invalid null value in condition for column {col}"
                    ))),
                })
                .collect()
        }
    }
}

/// The list bound to `col IN ?` (a key column's or a filter's), refused as Cassandra refuses a
/// null or unset one.
pub(crate) fn bound_in_list(src: &Src, vals: &Bindings, col: &str) -> Result<Vec<u8>, EngineError> {
    match resolve(src, vals) {
        Ok(Some(raw)) => Ok(raw),
        Ok(None) => Err(EngineError::invalid(format!(
            "Invalid null value for column {col}"
        ))),
        Err(EngineError::Unset(_)) => Err(EngineError::invalid(format!(
            "Invalid unset value for column {col}"
        ))),
        Err(e) => Err(e),
    }
}

/// Splits a serialized list/set (`[int n] n*[bytes]`) into its elements.
pub(crate) fn decode_list_elements(raw: &[u8]) -> Option<Vec<Vec<u8>>> {
    decode_in_list(raw)?.into_iter().collect()
}

/// [`decode_list_elements`] of a list that may hold nulls (length -1): the list bound to an
/// `IN ?` marker, which Cassandra takes with nulls in it (see `check_bound`).
pub(crate) fn decode_in_list(raw: &[u8]) -> Option<Vec<Option<Vec<u8>>>> {
    let n = i32::from_be_bytes(raw.get(0..4)?.try_into().ok()?);
    if n < 0 {
        return None;
    }
    let mut out = Vec::with_capacity((n as usize).min(raw.len() / 4));
    let mut pos = 4;
    for _ in 0..n {
        let len = i32::from_be_bytes(raw.get(pos..pos + 4)?.try_into().ok()?);
        pos += 4;
        if len < 0 {
            out.push(None);
            continue;
        }
        out.push(Some(raw.get(pos..pos + len as usize)?.to_vec()));
        pos += len as usize;
    }
    (pos == raw.len()).then_some(out)
}

pub(crate) fn cartesian(sets: Vec<Vec<Vec<u8>>>) -> Vec<Vec<Vec<u8>>> {
    let mut out: Vec<Vec<Vec<u8>>> = vec![Vec::new()];
    for set in sets {
        let mut next = Vec::with_capacity(out.len() * set.len());
        for prefix in &out {
            for v in &set {
                let mut p = prefix.clone();
                p.push(v.clone());
                next.push(p);
            }
        }
        out = next;
    }
    out
}

/// A partition to read or write: its serialized key, token and storage prefix.
#[derive(Clone)]
pub(crate) struct PartitionRef {
    pub pk: Vec<u8>,
    pub token: i64,
    pub prefix: Vec<u8>,
}

impl PartitionRef {
    /// The partition of `table` whose serialized key is `pk`.
    fn of(table: &TableDef, pk: Vec<u8>) -> PartitionRef {
        let token = token::token(&pk);
        let prefix = keys::partition_prefix(table.id, token, &pk);
        PartitionRef { pk, token, prefix }
    }
}

/// The partitions `sel` names, in Cassandra's order, each key checked as Cassandra's
/// `validateKey` checks it (not empty, not too long).
pub(crate) fn partitions(
    table: &TableDef,
    sel: &[KeyValues],
    vals: &Bindings,
) -> Result<Vec<PartitionRef>, EngineError> {
    named_partitions(table, sel, vals, true)
}

/// [`partitions`], with `check_keys` false without the checks of the keys themselves: the
/// values are bound and their types checked only (Cassandra 5.0.9 answers a read whose
/// clustering filter selects nothing before it checks its keys).
pub(crate) fn named_partitions(
    table: &TableDef,
    sel: &[KeyValues],
    vals: &Bindings,
    check_keys: bool,
) -> Result<Vec<PartitionRef>, EngineError> {
    if let Some(one) = one_named_partition(table, sel, vals, check_keys) {
        return Ok(vec![one?]);
    }
    let cols: Vec<_> = table.partition_key().collect();
    let mut sets = Vec::with_capacity(sel.len());
    for (kv, col) in sel.iter().zip(&cols) {
        let mut values = expand(kv, vals, &col.name)?;
        // Cassandra reads IN partitions in key order, not token order (descending for a
        // view's key column of a reversed type, see `ColumnDef::desc`).
        values.sort_by(|a, b| {
            let o = crate::types::compare(&col.ty, a, b);
            if col.desc {
                o.reverse()
            } else {
                o
            }
        });
        values.dedup();
        for v in &values {
            validate(&col.ty, v, &col.name)?;
        }
        sets.push(values);
    }
    let combos = cartesian(sets);
    if check_keys {
        for comps in &combos {
            check_partition_key_length(comps)?;
        }
    }
    let out: Vec<PartitionRef> = combos
        .into_iter()
        .map(|comps| {
            let refs: Vec<&[u8]> = comps.iter().map(|c| c.as_slice()).collect();
            PartitionRef::of(table, token::compose_partition_key(&refs))
        })
        .collect();
    if check_keys && cols.len() == 1 && out.iter().any(|p| p.pk.is_empty()) {
        return Err(EngineError::invalid("Key may not be empty"));
    }
    Ok(out)
}

/// The one partition of a table whose partition key is one column, named by one value (every
/// point read or write of a simple key), checked as [`named_partitions`] checks it, without
/// its per-column sets and their cartesian product; `None` for any other selection.
pub(crate) fn one_named_partition(
    table: &TableDef,
    sel: &[KeyValues],
    vals: &Bindings,
    check_keys: bool,
) -> Option<Result<PartitionRef, EngineError>> {
    let [KeyValues::Eq(src)] = sel else {
        return None;
    };
    let mut cols = table.partition_key();
    let (Some(col), None) = (cols.next(), cols.next()) else {
        return None;
    };
    Some(
        single_partition_key(col, src, vals, check_keys)
            .map(|pk| PartitionRef::of(table, pk.into_owned())),
    )
}

/// The key of the partition a table whose partition key is the one column `col` names by
/// `col = src`: bound (borrowed where it can be, [`resolve_ref`]), its type checked and, with
/// `check_keys`, its length and emptiness, as [`named_partitions`] checks every key.
pub(crate) fn single_partition_key<'a>(
    col: &crate::catalog::ColumnDef,
    src: &'a Src,
    vals: &'a Bindings,
    check_keys: bool,
) -> Result<Cow<'a, [u8]>, EngineError> {
    let pk = resolve_key_ref(src, vals, &col.name)?;
    validate(&col.ty, &pk, &col.name)?;
    if check_keys {
        key_length_at_most_max(pk.len())?;
        if pk.is_empty() {
            return Err(EngineError::invalid("Key may not be empty"));
        }
    }
    Ok(pk)
}

/// Cassandra's limit on a key (measured on 5.0.9): the values of a written row's clustering
/// columns may add up to at most 65,535 bytes. The storage takes longer keys; the limit is
/// Cassandra's, kept so that the same statements fail.
pub(crate) fn check_key_length(components: &[Vec<u8>]) -> Result<(), EngineError> {
    key_length_at_most_max(components.iter().map(Vec::len).sum())
}

/// The partition key's limit, on reads and writes: its values add up to at most 65,535 bytes,
/// and so does a compound key's composite form (2 length bytes and an end byte per component).
pub(crate) fn check_partition_key_length(components: &[Vec<u8>]) -> Result<(), EngineError> {
    let sum: usize = components.iter().map(Vec::len).sum();
    key_length_at_most_max(sum)?;
    if components.len() > 1 {
        key_length_at_most_max(sum + 3 * components.len())?;
    }
    Ok(())
}

fn key_length_at_most_max(len: usize) -> Result<(), EngineError> {
    if len > u16::MAX as usize {
        return Err(EngineError::invalid(format!(
            "Key length of {len} is longer than maximum of 65535"
        )));
    }
    Ok(())
}

pub(crate) fn validate(ty: &ColumnType, v: &[u8], col: &str) -> Result<(), EngineError> {
    proto::value::validate_value(ty, v).map_err(|e| {
        EngineError::invalid(format!("Invalid value for column {col}: {}", e.message()))
    })
}

/// A physical interval of encoded clustering bytes: inclusive start, exclusive end
/// (`None` = to the end of the partition).
pub(crate) type Interval = (Vec<u8>, Option<Vec<u8>>);

/// The exclusive end of the keys starting with `p`; `None` when nothing sorts after them: the
/// empty prefix, or one of 0xFF bytes only (a DESC empty value encodes as 0xFF, and every key
/// at or above 0xFF..FF starts with it).
fn end_of(p: &[u8]) -> Option<Vec<u8>> {
    if p.iter().all(|b| *b == 0xFF) {
        None
    } else {
        Some(keys::prefix_end(p))
    }
}

fn end_lt(a: &Option<Vec<u8>>, b: &Option<Vec<u8>>) -> bool {
    match (a, b) {
        (Some(x), Some(y)) => x < y,
        (Some(_), None) => true,
        _ => false,
    }
}

fn normalize(mut v: Vec<Interval>) -> Vec<Interval> {
    v.retain(|(s, e)| e.as_ref().is_none_or(|e| e > s));
    v.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out: Vec<Interval> = Vec::with_capacity(v.len());
    for (s, e) in v {
        if let Some(last) = out.last_mut() {
            // Only overlapping intervals merge: touching ones stay apart, since a point read
            // reads each interval's start (`c IN (0, 1)` on an int is [0, 1) and [1, 2)).
            let overlaps = last.1.as_ref().is_none_or(|le| s < *le);
            if overlaps {
                if end_lt(&last.1, &e) {
                    last.1 = e;
                }
                continue;
            }
        }
        out.push((s, e));
    }
    out
}

fn intersect(a: &[Interval], b: &[Interval]) -> Vec<Interval> {
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let s = a[i].0.clone().max(b[j].0.clone());
        let (e, a_first) = if end_lt(&a[i].1, &b[j].1) {
            (a[i].1.clone(), true)
        } else {
            (b[j].1.clone(), false)
        };
        if e.as_ref().is_none_or(|e| *e > s) {
            out.push((s, e));
        }
        if a_first {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// The intervals where the clustering tuple starting at column `n` is above (`is_start`)
/// or below the bound, exactly, whatever mix of ASC/DESC the columns have: the tuple
/// relation is split into "equal on the first i columns, strictly beyond on column i".
fn bound_pieces(
    cols: &[&crate::catalog::ColumnDef],
    n: usize,
    prefix: &[u8],
    values: &[Vec<u8>],
    inclusive: bool,
    is_start: bool,
) -> Vec<Interval> {
    let mut pieces = Vec::new();
    let mut p = prefix.to_vec();
    for (i, v) in values.iter().enumerate() {
        let Some(col) = cols.get(n + i) else { break };
        let mut pv = p.clone();
        keys::encode_component(&mut pv, &col.ty, v, col.desc);
        // Logical "greater" runs forward on disk for ASC, backward for DESC.
        let after = is_start != col.desc;
        if after {
            // Nothing comes after a prefix of 0xFF bytes only.
            if let Some(start) = end_of(&pv) {
                pieces.push((start, end_of(&p)));
            }
        } else {
            pieces.push((p.clone(), Some(pv.clone())));
        }
        p = pv;
    }
    if inclusive {
        pieces.push((p.clone(), end_of(&p)));
    }
    normalize(pieces)
}

/// The tuples of a multi-column IN: its literal tuples, or those of the bound list.
pub(crate) fn tuples_of(tv: &TupleValues, vals: &Bindings) -> Result<Vec<Vec<Src>>, EngineError> {
    match tv {
        TupleValues::List { tuples, .. } => Ok(tuples.clone()),
        TupleValues::Bind {
            index,
            arity,
            null_message,
        } => bound_tuples(*index, *arity, null_message, vals),
    }
}

/// The tuples of `(a, b) IN ?`, read off the bound list as constants; a null field is
/// refused with `null_message`.
pub(crate) fn bound_tuples(
    index: usize,
    arity: usize,
    null_message: &str,
    vals: &Bindings,
) -> Result<Vec<Vec<Src>>, EngineError> {
    let list = resolve(&Src::Bind(index), vals)?
        .ok_or_else(|| EngineError::invalid("Invalid null value for IN restriction"))?;
    let bad = || EngineError::invalid("Invalid list of tuples for IN restriction");
    let n = i32::from_be_bytes(
        list.get(..4)
            .ok_or_else(bad)?
            .try_into()
            .map_err(|_| bad())?,
    );
    let mut at = 4;
    let mut out = Vec::with_capacity(usize::try_from(n).unwrap_or(0).min(list.len()));
    for _ in 0..n.max(0) {
        let len = i32::from_be_bytes(
            list.get(at..at + 4)
                .ok_or_else(bad)?
                .try_into()
                .map_err(|_| bad())?,
        );
        at += 4;
        let len = usize::try_from(len).map_err(|_| bad())?;
        let tuple = list.get(at..at + len).ok_or_else(bad)?;
        at += len;
        let fields = (0..arity)
            .map(|f| match tuple_field(tuple, f) {
                Some(v) => Ok(Src::Const(Some(v.to_vec()))),
                None => Err(EngineError::invalid(null_message)),
            })
            .collect::<Result<_, _>>()?;
        out.push(fields);
    }
    Ok(out)
}

/// Encoded clustering ranges of a selection, as sorted, disjoint physical intervals.
/// `reading`: a SELECT, where a one-column slice bound bound to null is Cassandra's empty
/// value, which sorts before every other (`c > null` keeps every row, `c < null` none); a
/// write refuses it.
pub(crate) fn clustering_ranges(
    table: &TableDef,
    sel: &ClusteringSel,
    vals: &Bindings,
    reading: bool,
) -> Result<Vec<Interval>, EngineError> {
    // No restriction, or `=` on every restricted column with no slice (a point read): one
    // interval, built without the per-column sets, their product and the interval algebra.
    if sel.tuples.is_none()
        && sel.start.is_none()
        && sel.end.is_none()
        && sel.eq.iter().all(|kv| matches!(kv, KeyValues::Eq(_)))
    {
        let mut prefix = Vec::new();
        for (kv, col) in sel.eq.iter().zip(table.clustering()) {
            if let KeyValues::Eq(src) = kv {
                let v = resolve_key(src, vals, &col.name)?;
                keys::encode_component(&mut prefix, &col.ty, &v, col.desc);
            }
        }
        let end = end_of(&prefix);
        return Ok(if end.as_ref().is_none_or(|e| *e > prefix) {
            vec![(prefix, end)]
        } else {
            Vec::new()
        });
    }
    let cols: Vec<_> = table.clustering().collect();
    let mut sets = Vec::with_capacity(sel.eq.len());
    for (kv, col) in sel.eq.iter().zip(&cols) {
        let mut values = expand(kv, vals, &col.name)?;
        values.sort_by(|a, b| crate::types::compare(&col.ty, a, b));
        values.dedup();
        sets.push(values);
    }
    let mut prefixes: Vec<Vec<Vec<u8>>> = cartesian(sets);
    if let Some(tv) = &sel.tuples {
        let tuples = tuples_of(tv, vals)?;
        let mut next = Vec::new();
        for p in &prefixes {
            for t in &tuples {
                let mut q = p.clone();
                for (s, col) in t.iter().zip(&cols[p.len()..]) {
                    q.push(resolve_key(s, vals, &col.name)?);
                }
                next.push(q);
            }
        }
        prefixes = next;
    }
    let mut out = Vec::new();
    for prefix_vals in prefixes {
        let mut prefix = Vec::new();
        for (v, col) in prefix_vals.iter().zip(&cols) {
            keys::encode_component(&mut prefix, &col.ty, v, col.desc);
        }
        let n = prefix_vals.len();
        let resolve_bound = |b: &SliceBound| -> Result<Vec<Vec<u8>>, EngineError> {
            b.values
                .iter()
                .zip(&cols[n..])
                .map(|(s, col)| resolve_key(s, vals, &col.name))
                .collect()
        };
        let whole = vec![(prefix.clone(), end_of(&prefix))];
        let null_bound = |b: &SliceBound| {
            reading && b.values.len() == 1 && matches!(resolve(&b.values[0], vals), Ok(None))
        };
        let lo = match &sel.start {
            Some(b) if null_bound(b) => whole.clone(),
            Some(b) => bound_pieces(&cols, n, &prefix, &resolve_bound(b)?, b.inclusive, true),
            None => whole.clone(),
        };
        let hi = match &sel.end {
            Some(b) if null_bound(b) => Vec::new(),
            Some(b) => bound_pieces(&cols, n, &prefix, &resolve_bound(b)?, b.inclusive, false),
            None => whole,
        };
        out.extend(intersect(&lo, &hi));
    }
    Ok(normalize(out))
}
