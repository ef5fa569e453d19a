//! Non-frozen collections as element cells ([`Complex`]): the element writes of an overwrite
//! (`c = x`) and of the updates `c = c + x`, `c = x + c`, `c = c - x`, `c[k] = v`,
//! `DELETE c[k]`; the live value, write times and TTLs a reader sees. Also the whole-value
//! updates of counters and non-frozen UDT fields ([`apply`]), and the normalization of bound
//! sets and maps.

use crate::exec::decode_list_elements;
use crate::literal::encode_collection;
use crate::plan::Assign;
use crate::row::{CellValue, CollectionKind, Complex, Deletion, Element, Expiry, LocalSecs};
use crate::EngineError;
use proto::types::ColumnType;
use std::sync::atomic::{AtomicI64, Ordering};

/// The collection kind of a column type (`None`: not a list, set or map).
pub(crate) fn kind_of(ty: &ColumnType) -> Option<CollectionKind> {
    match ty {
        ColumnType::List(_) => Some(CollectionKind::List),
        ColumnType::Set(_) => Some(CollectionKind::Set),
        ColumnType::Map(..) => Some(CollectionKind::Map),
        ColumnType::Udt { .. } => Some(CollectionKind::Udt),
        _ => None,
    }
}

/// The path of a list item with time key `key`: its bytes in an order that matches the
/// keys' (sign bit flipped, big-endian).
fn list_path(key: i64) -> Vec<u8> {
    ((key as u64) ^ (1 << 63)).to_be_bytes().to_vec()
}

/// The path of a UDT's field at position `i`.
pub(crate) fn field_path(i: usize) -> Vec<u8> {
    (i as u16).to_be_bytes().to_vec()
}

/// The position of a UDT field from its path.
fn field_of(path: &[u8]) -> Option<usize> {
    Some(u16::from_be_bytes(path.try_into().ok()?) as usize)
}

/// Per field of a UDT of type `ty`, what `of` says of its live cell (`None`: no live cell).
fn per_field<T>(ty: &ColumnType, live: &[&Element], of: impl Fn(&Element) -> T) -> Vec<Option<T>> {
    let n = match ty {
        ColumnType::Udt { fields, .. } => fields.len(),
        _ => 0,
    };
    let mut out: Vec<Option<T>> = (0..n).map(|_| None).collect();
    for e in live {
        if let Some(slot) = field_of(&e.path).and_then(|i| out.get_mut(i)) {
            *slot = Some(of(e));
        }
    }
    out
}

/// `[int n]` then `n` `[bytes]` values (null as -1): a list of possibly null items.
fn encode_nullable_list(items: &[Option<Vec<u8>>]) -> Vec<u8> {
    let mut out = (items.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(&encode_fields(items));
    out
}

/// The last list time key handed out (see [`list_keys`]).
static LAST_LIST_KEY: AtomicI64 = AtomicI64::new(0);

/// `n` new list time keys, as Cassandra's time-UUIDs order list items: appended items get keys
/// above every key handed out before, prepended ones keys below (mirrored), in list order
/// either way. Returns the first key; the others follow it by one.
pub(crate) fn list_keys(now_micros: i64, n: usize, prepend: bool) -> i64 {
    let n = n.max(1) as i64;
    let mut last = LAST_LIST_KEY.load(Ordering::Relaxed);
    let first = loop {
        let first = now_micros.max(last.saturating_add(1));
        match LAST_LIST_KEY.compare_exchange_weak(
            last,
            first.saturating_add(n - 1),
            Ordering::Relaxed,
            Ordering::Relaxed,
        ) {
            Ok(_) => break first,
            Err(x) => last = x,
        }
    };
    if prepend {
        // Keys t..t+n-1 mirrored: the first item gets -(t+n-1), the last -t.
        -(first.saturating_add(n - 1))
    } else {
        first
    }
}

/// The elements of a whole collection value written at `ts` (list items keyed from
/// `first_list_key` up).
pub(crate) fn elements_of(
    kind: CollectionKind,
    value: &[u8],
    ts: i64,
    expiry: Option<Expiry>,
    label: &Option<crate::row::Label>,
    first_list_key: i64,
) -> Vec<Element> {
    let live = |path: Vec<u8>, value: Vec<u8>| Element {
        path,
        ts,
        value: CellValue::Live {
            value: value.into(),
            expiry,
            label: label.clone(),
        },
    };
    let mut out: Vec<Element> = match kind {
        CollectionKind::List => decode_list_elements(value)
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, v)| live(list_path(first_list_key.saturating_add(i as i64)), v))
            .collect(),
        CollectionKind::Set => decode_list_elements(value)
            .unwrap_or_default()
            .into_iter()
            .map(|e| live(e, Vec::new()))
            .collect(),
        CollectionKind::Map => decode_map(value)
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| live(k, v))
            .collect(),
        // Null fields have no cell.
        CollectionKind::Udt => decode_fields(value)
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .filter_map(|(i, v)| Some(live(field_path(i), v?)))
            .collect(),
    };
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out.dedup_by(|a, b| a.path == b.path);
    out
}

/// `c = value` on a non-frozen collection or UDT: a collection deletion just before `ts`
/// plus the new elements, also for a null or empty value (Cassandra's
/// `setComplexDeletionTimeForOverwrite`), so elements written at `ts` itself, by the same
/// statement's batch or with the same USING TIMESTAMP, stay. Only `DELETE c` deletes at `ts`.
pub(crate) fn overwrite(
    kind: CollectionKind,
    value: Option<&[u8]>,
    ts: i64,
    expiry: Option<Expiry>,
    label: &Option<crate::row::Label>,
    now: crate::Now,
) -> Complex {
    let elements = match value {
        Some(v) => {
            let n = match kind {
                CollectionKind::List => decode_list_elements(v).map_or(0, |e| e.len()),
                _ => 0,
            };
            let first = if n > 0 {
                list_keys(now.micros, n, false)
            } else {
                0
            };
            elements_of(kind, v, ts, expiry, label, first)
        }
        None => Vec::new(),
    };
    Complex {
        kind,
        deletion: Some(Deletion {
            ts: ts.saturating_sub(1),
            local_del: now.secs,
        }),
        elements,
    }
}

/// The type elements are ordered by when read: set elements and map keys by their type.
fn path_type(ty: &ColumnType) -> Option<&ColumnType> {
    match ty {
        ColumnType::Set(e) | ColumnType::Map(e, _) => Some(e),
        _ => None,
    }
}

/// Whether two values of type `ty` can compare equal with different bytes (decimal `1.5` and
/// `1.50`, or a tuple, UDT or frozen collection holding decimals).
fn has_equal_forms(ty: &ColumnType) -> bool {
    crate::types::contains(ty, &|t| *t == ColumnType::Decimal)
}

/// The live elements of a collection of type `ty` at `now`, in the order a reader sees them.
pub(crate) fn live_elements<'a>(
    ty: &ColumnType,
    c: &'a Complex,
    now: LocalSecs,
) -> Vec<&'a Element> {
    if let Some(t) = path_type(ty).filter(|t| has_equal_forms(t)) {
        return reconciled_elements(t, c, now);
    }
    let mut out: Vec<&Element> = c
        .elements
        .iter()
        .filter(|e| e.live_value(now).is_some())
        .collect();
    if let Some(t) = path_type(ty) {
        if !out.is_sorted_by(|a, b| crate::types::compare(t, &a.path, &b.path).is_le()) {
            out.sort_by(|a, b| crate::types::compare(t, &a.path, &b.path));
        }
    }
    out
}

/// The live elements of a set or map whose keys (of type `key`) can compare equal with other
/// bytes: Cassandra keys its element cells by the type's order, so `1.5` and `1.50` are one
/// element, the version that wins reconciliation, with its own bytes (a later `s + {1.50}`
/// replaces `1.5`, `s - {1.500}` removes it). Here they are stored apart, by bytes, and
/// reconciled as they are read.
fn reconciled_elements<'a>(key: &ColumnType, c: &'a Complex, now: LocalSecs) -> Vec<&'a Element> {
    let mut all: Vec<&Element> = c.elements.iter().collect();
    all.sort_by(|a, b| crate::types::compare(key, &a.path, &b.path));
    all.chunk_by(|a, b| crate::types::compare(key, &a.path, &b.path).is_eq())
        .filter_map(|versions| {
            versions
                .iter()
                .copied()
                .reduce(|a, b| if b.wins_over(a) { b } else { a })
        })
        .filter(|e| e.live_value(now).is_some())
        .collect()
}

/// Whether `row` of table `t`, which [`crate::row::Row::is_live`] finds live, still is once
/// the elements of its sets and maps whose keys have several forms are reconciled (see
/// [`live_elements`]): a row without a live marker whose only live cells are such elements,
/// each removed under another form (`s + {2.0}` then `s - {2.00}`), is not.
pub(crate) fn row_still_live(
    t: &crate::catalog::TableDef,
    row: &crate::row::Row,
    now: LocalSecs,
    outer: Option<Deletion>,
) -> bool {
    let reconciled = |id: u16| {
        t.columns
            .iter()
            .find(|c| c.id == id)
            .filter(|c| path_type(&c.ty).is_some_and(has_equal_forms))
    };
    let needs_check = row
        .cells
        .iter()
        .any(|c| matches!(c.value, CellValue::Complex(_)) && reconciled(c.column).is_some());
    if !needs_check || row.marker_is_live(now, outer) {
        return true;
    }
    row.cells.iter().any(|cell| {
        let Some(seen) = row.cell(cell.column, now, outer) else {
            return false;
        };
        match (&seen.value, reconciled(cell.column)) {
            (CellValue::Complex(x), Some(c)) => !live_elements(&c.ty, x, now).is_empty(),
            _ => true,
        }
    })
}

/// The collection's value at `now` (`None` when no element is live).
pub(crate) fn whole_value(ty: &ColumnType, c: &Complex, now: LocalSecs) -> Option<Vec<u8>> {
    let live = live_elements(ty, c, now);
    if live.is_empty() {
        return None;
    }
    let value = |e: &Element| e.live_value(now).unwrap_or_default().to_vec();
    Some(match c.kind {
        CollectionKind::List => {
            encode_collection(&live.iter().map(|e| value(e)).collect::<Vec<_>>())
        }
        CollectionKind::Set => {
            encode_collection(&live.iter().map(|e| e.path.clone()).collect::<Vec<_>>())
        }
        CollectionKind::Map => encode_map(
            &live
                .iter()
                .map(|e| (e.path.clone(), value(e)))
                .collect::<Vec<_>>(),
        ),
        CollectionKind::Udt => encode_fields(&per_field(ty, &live, value)),
    })
}

/// `writetime(c)`: a `list<bigint>` of the live elements' timestamps (of a UDT, one per
/// field, null where a field has no live cell).
pub(crate) fn write_times(ty: &ColumnType, c: &Complex, now: LocalSecs) -> Option<Vec<u8>> {
    per_element(ty, c, now, |e| Some(e.ts.to_be_bytes().to_vec()))
}

/// One `[bytes]` per live element (of a UDT, per field), as `of` says; `None` when no element
/// is live.
fn per_element(
    ty: &ColumnType,
    c: &Complex,
    now: LocalSecs,
    of: impl Fn(&Element) -> Option<Vec<u8>>,
) -> Option<Vec<u8>> {
    let live = live_elements(ty, c, now);
    if live.is_empty() {
        return None;
    }
    let items: Vec<Option<Vec<u8>>> = match c.kind {
        CollectionKind::Udt => per_field(ty, &live, &of)
            .into_iter()
            .map(Option::flatten)
            .collect(),
        _ => live.iter().map(|e| of(e)).collect(),
    };
    Some(encode_nullable_list(&items))
}

/// `maxwritetime(c)`: the latest timestamp of a live element.
pub(crate) fn max_write_time(ty: &ColumnType, c: &Complex, now: LocalSecs) -> Option<i64> {
    live_elements(ty, c, now).iter().map(|e| e.ts).max()
}

/// `ttl(c)`: a `list<int>` of the live elements' remaining TTLs (null where one does not
/// expire; of a UDT, one per field).
pub(crate) fn ttls(ty: &ColumnType, c: &Complex, now: LocalSecs) -> Option<Vec<u8>> {
    per_element(ty, c, now, |e| {
        e.expiry().map(|x| {
            (x.expires_at.saturating_sub(now) as i32)
                .to_be_bytes()
                .to_vec()
        })
    })
}

/// An element operation with its values resolved (see [`element_writes`]).
pub(crate) struct ElementOp<'a> {
    pub op: &'a Assign,
    pub arg: Option<&'a [u8]>,
    pub arg2: Option<&'a [u8]>,
    pub ts: i64,
    pub expiry: Option<Expiry>,
    /// The visibility label of the elements it writes.
    pub label: Option<crate::row::Label>,
    pub now: crate::Now,
}

/// The element cells an update of a non-frozen collection of type `ty` writes, given its live
/// elements `current` (`None`: the collection is null): added items, overwritten list items
/// and tombstones of removed ones, all at the update's timestamp.
pub(crate) fn element_writes(
    ty: &ColumnType,
    current: Option<&Complex>,
    o: &ElementOp,
) -> Result<Complex, EngineError> {
    let Some(kind) = kind_of(ty) else {
        return Err(bad());
    };
    let empty = 0i32.to_be_bytes();
    let live = |path: Vec<u8>, value: Vec<u8>| Element {
        path,
        ts: o.ts,
        value: CellValue::Live {
            value: value.into(),
            expiry: o.expiry,
            label: o.label.clone(),
        },
    };
    let dead = |path: Vec<u8>| Element {
        path,
        ts: o.ts,
        value: CellValue::Tombstone {
            local_del: o.now.secs,
        },
    };
    let items = |raw: Option<&[u8]>| decode_list_elements(raw.unwrap_or(&empty)).ok_or_else(bad);
    // The live list items in order, for the operations that name items by index or value.
    let list_now: Vec<&Element> =
        current.map_or_else(Vec::new, |c| live_elements(ty, c, o.now.secs));
    let by_index = |idx: i32| -> Result<&Element, EngineError> {
        list_now
            .get(idx as usize)
            .filter(|_| idx >= 0)
            .copied()
            .ok_or_else(|| {
                EngineError::invalid(format!(
                    "List index {idx} out of bound, list has size {}",
                    list_now.len()
                ))
            })
    };
    let elements: Vec<Element> = match (kind, o.op) {
        (CollectionKind::List, Assign::Append(_) | Assign::Prepend(_)) => {
            let new = items(o.arg)?;
            let first = list_keys(o.now.micros, new.len(), matches!(o.op, Assign::Prepend(_)));
            new.into_iter()
                .enumerate()
                .map(|(i, v)| live(list_path(first.saturating_add(i as i64)), v))
                .collect()
        }
        (CollectionKind::List, Assign::Remove(_)) => {
            let remove = items(o.arg)?;
            list_now
                .iter()
                .filter(|e| {
                    e.live_value(o.now.secs)
                        .is_some_and(|v| remove.iter().any(|r| r == v))
                })
                .map(|e| dead(e.path.clone()))
                .collect()
        }
        (CollectionKind::List, Assign::SetKey(..)) => {
            // The index is read first: a null one is refused before a null list.
            let idx = list_index(o.arg)?;
            if current.is_none() {
                return Err(EngineError::invalid(
                    "Attempted to set an element on a list which is null",
                ));
            }
            let path = by_index(idx)?.path.clone();
            vec![match o.arg2 {
                Some(v) => live(path, v.to_vec()),
                None => dead(path),
            }]
        }
        (CollectionKind::List, Assign::DeleteElement(_)) => {
            let idx = list_index(o.arg)?;
            if current.is_none() {
                return Err(EngineError::invalid(
                    "Attempted to delete an element from a list which is null",
                ));
            }
            vec![dead(by_index(idx)?.path.clone())]
        }
        (CollectionKind::Set, Assign::Append(_)) => items(o.arg)?
            .into_iter()
            .map(|e| live(e, Vec::new()))
            .collect(),
        (CollectionKind::Set, Assign::Remove(_)) | (CollectionKind::Map, Assign::Remove(_)) => {
            items(o.arg)?.into_iter().map(dead).collect()
        }
        (CollectionKind::Set, Assign::DeleteElement(_)) => {
            let e = o
                .arg
                .ok_or_else(|| EngineError::invalid("Invalid null set element"))?;
            vec![dead(e.to_vec())]
        }
        (CollectionKind::Map, Assign::Append(_)) => decode_map(o.arg.unwrap_or(&empty))
            .ok_or_else(bad)?
            .into_iter()
            .map(|(k, v)| live(k, v))
            .collect(),
        (CollectionKind::Map, Assign::SetKey(..)) => {
            let key = o
                .arg
                .ok_or_else(|| EngineError::invalid("Invalid null map key"))?;
            vec![match o.arg2 {
                Some(v) => live(key.to_vec(), v.to_vec()),
                None => dead(key.to_vec()),
            }]
        }
        (CollectionKind::Udt, Assign::SetField(i, _)) => {
            vec![match o.arg {
                Some(v) => live(field_path(*i), v.to_vec()),
                None => dead(field_path(*i)),
            }]
        }
        (CollectionKind::Map, Assign::DeleteElement(_)) => {
            let key = o
                .arg
                .ok_or_else(|| EngineError::invalid("Invalid null map key"))?;
            vec![dead(key.to_vec())]
        }
        _ => {
            return Err(EngineError::invalid(format!(
                "Invalid operation for column of type {}",
                crate::types::cql_type_name(ty)
            )))
        }
    };
    let mut out = Complex {
        kind,
        deletion: None,
        elements: Vec::new(),
    };
    // Through merge: sorted by path, and of two writes of one path the stronger kept.
    for e in elements {
        out.merge(Complex {
            kind,
            deletion: None,
            elements: vec![e],
        });
    }
    Ok(out)
}

fn decode_map(raw: &[u8]) -> Option<Vec<(Vec<u8>, Vec<u8>)>> {
    let n = i32::from_be_bytes(raw.get(0..4)?.try_into().ok()?);
    if n < 0 {
        return None;
    }
    let mut pos = 4;
    let mut out = Vec::with_capacity((n as usize).min(raw.len() / 8));
    let take = |pos: &mut usize| -> Option<Vec<u8>> {
        let len = i32::from_be_bytes(raw.get(*pos..*pos + 4)?.try_into().ok()?);
        *pos += 4;
        if len < 0 {
            return None;
        }
        let v = raw.get(*pos..*pos + len as usize)?.to_vec();
        *pos += len as usize;
        Some(v)
    };
    for _ in 0..n {
        let k = take(&mut pos)?;
        let v = take(&mut pos)?;
        out.push((k, v));
    }
    Some(out)
}

/// The entries of a serialized map, in stored order.
pub(crate) fn map_entries(raw: &[u8]) -> Option<Vec<(Vec<u8>, Vec<u8>)>> {
    decode_map(raw)
}

fn encode_map(kvs: &[(Vec<u8>, Vec<u8>)]) -> Vec<u8> {
    let mut out = (kvs.len() as i32).to_be_bytes().to_vec();
    for (k, v) in kvs {
        out.extend_from_slice(&(k.len() as i32).to_be_bytes());
        out.extend_from_slice(k);
        out.extend_from_slice(&(v.len() as i32).to_be_bytes());
        out.extend_from_slice(v);
    }
    out
}

/// A validated bound value of `ty` as Cassandra stores it: set elements and map keys in their
/// type's order without duplicates (a later duplicate map key wins, as in Cassandra), at any
/// depth (inside lists, tuples, UDTs and other collections). `None` when nothing changes:
/// `ty` holds no set or map, or `raw` does not parse (validation reported that already).
pub fn normalize(ty: &ColumnType, raw: &[u8]) -> Option<Vec<u8>> {
    if !has_set_or_map(ty) || raw.is_empty() {
        return None;
    }
    let n = normalized(ty, raw)?;
    (n != raw).then_some(n)
}

fn has_set_or_map(ty: &ColumnType) -> bool {
    match ty {
        ColumnType::Set(_) | ColumnType::Map(..) => true,
        ColumnType::List(t) => has_set_or_map(t),
        ColumnType::Tuple(ts) => ts.iter().any(has_set_or_map),
        ColumnType::Udt { fields, .. } => fields.iter().any(|(_, t)| has_set_or_map(t)),
        ColumnType::Vector(t, _) => has_set_or_map(t),
        _ => false,
    }
}

fn normalized(ty: &ColumnType, raw: &[u8]) -> Option<Vec<u8>> {
    if !has_set_or_map(ty) || raw.is_empty() {
        return Some(raw.to_vec());
    }
    match ty {
        ColumnType::List(t) | ColumnType::Set(t) => {
            let mut items = decode_list_elements(raw)?
                .iter()
                .map(|e| normalized(t, e))
                .collect::<Option<Vec<_>>>()?;
            if matches!(ty, ColumnType::Set(_)) {
                items.sort_by(|a, b| crate::types::compare(t, a, b));
                items.dedup_by(|a, b| crate::types::compare(t, a, b).is_eq());
            }
            Some(encode_collection(&items))
        }
        ColumnType::Map(k, v) => {
            let mut kvs = decode_map(raw)?
                .iter()
                .map(|(a, b)| Some((normalized(k, a)?, normalized(v, b)?)))
                .collect::<Option<Vec<_>>>()?;
            // Reversed, so the stable sort puts the last of equal keys first and dedup keeps it.
            kvs.reverse();
            kvs.sort_by(|a, b| crate::types::compare(k, &a.0, &b.0));
            kvs.dedup_by(|a, b| crate::types::compare(k, &a.0, &b.0).is_eq());
            Some(encode_map(&kvs))
        }
        ColumnType::Tuple(ts) => normalized_fields(raw, ts.iter()),
        ColumnType::Udt { fields, .. } => normalized_fields(raw, fields.iter().map(|(_, t)| t)),
        ColumnType::Vector(t, n) => {
            let items = proto::value::vector_elements(t, *n, raw)
                .ok()?
                .into_iter()
                .map(|e| normalized(t, e))
                .collect::<Option<Vec<_>>>()?;
            Some(proto::value::encode_vector(t, &items))
        }
        _ => Some(raw.to_vec()),
    }
}

/// The fields of a tuple or UDT value (`[bytes]` each, maybe fewer than `types`), normalized.
fn normalized_fields<'a>(
    raw: &[u8],
    types: impl Iterator<Item = &'a ColumnType>,
) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(raw.len());
    let mut pos = 0;
    for t in types {
        if pos == raw.len() {
            break;
        }
        let len = i32::from_be_bytes(raw.get(pos..pos + 4)?.try_into().ok()?);
        pos += 4;
        if len < 0 {
            out.extend_from_slice(&len.to_be_bytes());
            continue;
        }
        let field = raw.get(pos..pos + len as usize)?;
        pos += len as usize;
        let n = normalized(t, field)?;
        out.extend_from_slice(&(n.len() as i32).to_be_bytes());
        out.extend_from_slice(&n);
    }
    (pos == raw.len()).then_some(out)
}

/// A list index argument: a non-null int.
fn list_index(arg: Option<&[u8]>) -> Result<i32, EngineError> {
    let arg = arg.ok_or_else(|| EngineError::invalid("Invalid null value for list index"))?;
    <[u8; 4]>::try_from(arg)
        .map(i32::from_be_bytes)
        .map_err(|_| EngineError::invalid("Invalid list index"))
}

/// The fields of a tuple or UDT value (`None` for a null field).
fn decode_fields(raw: &[u8]) -> Option<Vec<Option<Vec<u8>>>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < raw.len() {
        let len = i32::from_be_bytes(raw.get(pos..pos + 4)?.try_into().ok()?);
        pos += 4;
        if len < 0 {
            out.push(None);
            continue;
        }
        out.push(Some(raw.get(pos..pos + len as usize)?.to_vec()));
        pos += len as usize;
    }
    Some(out)
}

/// A tuple's or UDT's fields as `[bytes]` each (-1 for null).
pub(crate) fn encode_fields(values: &[Option<Vec<u8>>]) -> Vec<u8> {
    let mut out = Vec::new();
    for v in values {
        match v {
            Some(v) => {
                out.extend_from_slice(&(v.len() as i32).to_be_bytes());
                out.extend_from_slice(v);
            }
            None => out.extend_from_slice(&(-1i32).to_be_bytes()),
        }
    }
    out
}

fn bad() -> EngineError {
    EngineError::invalid("Invalid collection value")
}

/// The new whole value of the collection (None = empty, i.e. deleted).
pub fn apply(
    ty: &ColumnType,
    op: &Assign,
    current: Option<&[u8]>,
    arg: Option<&[u8]>,
    arg2: Option<&[u8]>,
) -> Result<Option<Vec<u8>>, EngineError> {
    let empty = 0i32.to_be_bytes();
    let cur = current.unwrap_or(&empty);
    if *ty == ColumnType::Counter {
        let cur = current
            .and_then(|c| <[u8; 8]>::try_from(c).ok())
            .map(i64::from_be_bytes)
            .unwrap_or(0);
        let delta = arg
            .and_then(|a| <[u8; 8]>::try_from(a).ok())
            .map(i64::from_be_bytes)
            .ok_or_else(|| EngineError::invalid("Invalid null value for counter increment"))?;
        let v = match op {
            Assign::Remove(_) => cur.wrapping_sub(delta),
            _ => cur.wrapping_add(delta),
        };
        return Ok(Some(v.to_be_bytes().to_vec()));
    }
    let result = match (ty, op) {
        (ColumnType::List(_), Assign::Append(_)) => {
            let mut items = decode_list_elements(cur).ok_or_else(bad)?;
            items.extend(decode_list_elements(arg.unwrap_or(&empty)).ok_or_else(bad)?);
            items
        }
        (ColumnType::List(_), Assign::Prepend(_)) => {
            let mut items = decode_list_elements(arg.unwrap_or(&empty)).ok_or_else(bad)?;
            items.extend(decode_list_elements(cur).ok_or_else(bad)?);
            items
        }
        (ColumnType::List(_) | ColumnType::Set(_), Assign::Remove(_)) => {
            let remove = decode_list_elements(arg.unwrap_or(&empty)).ok_or_else(bad)?;
            let mut items = decode_list_elements(cur).ok_or_else(bad)?;
            items.retain(|i| !remove.contains(i));
            items
        }
        (ColumnType::Set(e), Assign::Append(_)) => {
            let mut items = decode_list_elements(cur).ok_or_else(bad)?;
            items.extend(decode_list_elements(arg.unwrap_or(&empty)).ok_or_else(bad)?);
            items.sort_by(|a, b| crate::types::compare(e, a, b));
            items.dedup();
            items
        }
        (ColumnType::List(_), Assign::SetKey(..)) => {
            if current.is_none() {
                return Err(EngineError::invalid(
                    "Attempted to set an element on a list which is null",
                ));
            }
            let mut items = decode_list_elements(cur).ok_or_else(bad)?;
            let idx = list_index(arg)?;
            let len = items.len();
            let slot = items
                .get_mut(idx as usize)
                .filter(|_| idx >= 0)
                .ok_or_else(|| {
                    EngineError::invalid(format!(
                        "List index {idx} out of bound, list has size {len}"
                    ))
                })?;
            match arg2 {
                Some(v) => *slot = v.to_vec(),
                None => {
                    items.remove(idx as usize);
                }
            }
            items
        }
        (ColumnType::Map(k, _), Assign::Append(_)) => {
            let mut kvs = decode_map(cur).ok_or_else(bad)?;
            for (nk, nv) in decode_map(arg.unwrap_or(&empty)).ok_or_else(bad)? {
                kvs.retain(|(ek, _)| *ek != nk);
                kvs.push((nk, nv));
            }
            kvs.sort_by(|a, b| crate::types::compare(k, &a.0, &b.0));
            return Ok((!kvs.is_empty()).then(|| encode_map(&kvs)));
        }
        (ColumnType::Map(..), Assign::Remove(_)) => {
            let remove = decode_list_elements(arg.unwrap_or(&empty)).ok_or_else(bad)?;
            let mut kvs = decode_map(cur).ok_or_else(bad)?;
            kvs.retain(|(ek, _)| !remove.contains(ek));
            return Ok((!kvs.is_empty()).then(|| encode_map(&kvs)));
        }
        (ColumnType::Map(k, _), Assign::SetKey(..)) => {
            let key = arg.ok_or_else(|| EngineError::invalid("Invalid null map key"))?;
            let mut kvs = decode_map(cur).ok_or_else(bad)?;
            kvs.retain(|(ek, _)| ek != key);
            if let Some(v) = arg2 {
                kvs.push((key.to_vec(), v.to_vec()));
            }
            kvs.sort_by(|a, b| crate::types::compare(k, &a.0, &b.0));
            return Ok((!kvs.is_empty()).then(|| encode_map(&kvs)));
        }
        (ColumnType::List(_), Assign::DeleteElement(_)) => {
            let idx = list_index(arg)?;
            if current.is_none() {
                return Err(EngineError::invalid(
                    "Attempted to delete an element from a list which is null",
                ));
            }
            let mut items = decode_list_elements(cur).ok_or_else(bad)?;
            if idx < 0 || idx as usize >= items.len() {
                return Err(EngineError::invalid(format!(
                    "List index {idx} out of bound, list has size {}",
                    items.len()
                )));
            }
            items.remove(idx as usize);
            items
        }
        (ColumnType::Set(_), Assign::DeleteElement(_)) => {
            let element = arg.ok_or_else(|| EngineError::invalid("Invalid null set element"))?;
            let mut items = decode_list_elements(cur).ok_or_else(bad)?;
            items.retain(|i| i != element);
            items
        }
        (ColumnType::Map(..), Assign::DeleteElement(_)) => {
            let key = arg.ok_or_else(|| EngineError::invalid("Invalid null map key"))?;
            let mut kvs = decode_map(cur).ok_or_else(bad)?;
            kvs.retain(|(ek, _)| ek != key);
            return Ok((!kvs.is_empty()).then(|| encode_map(&kvs)));
        }
        (t, _) => {
            return Err(EngineError::invalid(format!(
                "Invalid operation for column of type {}",
                crate::types::cql_type_name(t)
            )))
        }
    };
    Ok((!result.is_empty()).then(|| encode_collection(&result)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(v: i32) -> Vec<u8> {
        v.to_be_bytes().to_vec()
    }

    #[test]
    fn decimal_keys_of_several_forms_read_as_one_element_the_winning_version() {
        // 1.5, 1.50 and 1.500: scale, then the unscaled value's bytes.
        let (a, b, c) = (
            vec![0, 0, 0, 1, 15],
            vec![0, 0, 0, 2, 0, 150],
            vec![0, 0, 0, 3, 5, 220],
        );
        let live = |path: &Vec<u8>, ts: i64| Element {
            path: path.clone(),
            ts,
            value: CellValue::Live {
                value: bytes::Bytes::new(),
                expiry: None,
                label: None,
            },
        };
        let set = ColumnType::Set(Box::new(ColumnType::Decimal));
        let mut elements = vec![live(&a, 2), live(&b, 1)];
        elements.sort_by(|x, y| x.path.cmp(&y.path));
        let mut cx = Complex {
            kind: CollectionKind::Set,
            deletion: None,
            elements,
        };
        let paths = |cx: &Complex| -> Vec<Vec<u8>> {
            live_elements(&set, cx, 0)
                .iter()
                .map(|e| e.path.clone())
                .collect()
        };
        assert_eq!(
            paths(&cx),
            vec![a.clone()],
            "the later write, with its bytes"
        );
        cx.merge(Complex {
            kind: CollectionKind::Set,
            deletion: None,
            elements: vec![Element {
                path: c,
                ts: 3,
                value: CellValue::Tombstone { local_del: 0 },
            }],
        });
        assert!(paths(&cx).is_empty(), "removed under a third form");
        // Keys without other forms keep every element.
        let ints = ColumnType::Set(Box::new(ColumnType::Int));
        let two = Complex {
            kind: CollectionKind::Set,
            deletion: None,
            elements: vec![live(&int(1), 1), live(&int(2), 1)],
        };
        assert_eq!(live_elements(&ints, &two, 0).len(), 2);
    }

    #[test]
    fn bound_sets_and_maps_are_sorted_and_deduplicated_at_any_depth() {
        let set = ColumnType::Set(Box::new(ColumnType::Int));
        let raw = encode_collection(&[int(3), int(-1), int(2), int(3)]);
        let want = encode_collection(&[int(-1), int(2), int(3)]);
        assert_eq!(normalize(&set, &raw), Some(want.clone()));
        assert_eq!(normalize(&set, &want), None, "already normalized");
        assert_eq!(
            normalize(&ColumnType::List(Box::new(ColumnType::Int)), &raw),
            None,
            "lists keep their order"
        );
        // A later duplicate map key wins.
        let map = ColumnType::Map(Box::new(ColumnType::Int), Box::new(ColumnType::Varchar));
        let kvs = |pairs: &[(i32, &str)]| {
            encode_map(
                &pairs
                    .iter()
                    .map(|(k, v)| (int(*k), v.as_bytes().to_vec()))
                    .collect::<Vec<_>>(),
            )
        };
        assert_eq!(
            normalize(&map, &kvs(&[(2, "b"), (1, "a"), (2, "c")])),
            Some(kvs(&[(1, "a"), (2, "c")]))
        );
        // A set inside a tuple inside a list; a null tuple field stays null.
        let nested = ColumnType::List(Box::new(ColumnType::Tuple(vec![
            set.clone(),
            ColumnType::Int,
        ])));
        let tuple = |s: &[u8]| {
            let mut t = (s.len() as i32).to_be_bytes().to_vec();
            t.extend_from_slice(s);
            t.extend_from_slice(&(-1i32).to_be_bytes());
            t
        };
        assert_eq!(
            normalize(&nested, &encode_collection(&[tuple(&raw)])),
            Some(encode_collection(&[tuple(&want)]))
        );
    }
}
