//! Element and slice selection on serialized maps and sets (`m['a']`, `s[1..5]`): the types
//! they take and the values they give.

use crate::EngineError;
use proto::types::ColumnType;

/// The key and element types of an element (`what` = "Element") or slice ("Slice") selection
/// on a selector named `name` of type `ty`: maps and sets only, as in Cassandra.
pub(super) fn element_types(
    ty: &ColumnType,
    name: &str,
    what: &str,
) -> Result<(ColumnType, ColumnType), EngineError> {
    match ty {
        ColumnType::Map(k, v) => Ok(((**k).clone(), (**v).clone())),
        ColumnType::Set(e) => Ok(((**e).clone(), (**e).clone())),
        ColumnType::List(_) => Err(EngineError::invalid(format!(
            "{what} selection is only allowed on sets and maps, but {name} is a list"
        ))),
        other => Err(EngineError::invalid(format!(
            "Invalid {} selection: {name} is of type {} is not a collection",
            what.to_ascii_lowercase(),
            crate::types::cql_type_name(other)
        ))),
    }
}

/// The elements of a serialized set (or the keys and values of a map, alternating).
fn collection_items(raw: &[u8], per_entry: usize) -> Option<Vec<&[u8]>> {
    let n = i32::from_be_bytes(raw.get(..4)?.try_into().ok()?);
    let mut at = 4usize;
    let mut out = Vec::new();
    for _ in 0..usize::try_from(n).ok()?.saturating_mul(per_entry) {
        let len =
            usize::try_from(i32::from_be_bytes(raw.get(at..at + 4)?.try_into().ok()?)).ok()?;
        at += 4;
        out.push(raw.get(at..at + len)?);
        at += len;
    }
    Some(out)
}

fn per_entry(ty: &ColumnType) -> usize {
    if matches!(ty, ColumnType::Map(..)) {
        2
    } else {
        1
    }
}

fn key_type(ty: &ColumnType) -> Option<&ColumnType> {
    match ty {
        ColumnType::Map(k, _) | ColumnType::Set(k) => Some(k),
        _ => None,
    }
}

/// `coll[key]` of a serialized map or set: the map's value at `key`, the set's element when
/// present; null otherwise.
pub(crate) fn element(ty: &ColumnType, coll: &[u8], key: &[u8]) -> Option<Vec<u8>> {
    let kty = key_type(ty)?;
    let n = per_entry(ty);
    let items = collection_items(coll, n)?;
    items
        .chunks(n)
        .find(|e| crate::types::compare(kty, e[0], key).is_eq())
        .map(|e| e[n - 1].to_vec())
}

/// `coll[from..to]` of a serialized map or set (bounds inclusive, None unbounded): the entries
/// in range; none gives null unless the collection is frozen (then an empty one).
pub(crate) fn slice(
    ty: &ColumnType,
    coll: &[u8],
    from: Option<&[u8]>,
    to: Option<&[u8]>,
    frozen: bool,
) -> Option<Vec<u8>> {
    let kty = key_type(ty)?;
    let n = per_entry(ty);
    let items = collection_items(coll, n)?;
    let kept: Vec<&[&[u8]]> = items
        .chunks(n)
        .filter(|e| from.is_none_or(|f| crate::types::compare(kty, e[0], f).is_ge()))
        .filter(|e| to.is_none_or(|t| crate::types::compare(kty, e[0], t).is_le()))
        .collect();
    if kept.is_empty() && !frozen {
        return None;
    }
    let mut out = (kept.len() as i32).to_be_bytes().to_vec();
    for item in kept.iter().flat_map(|e| e.iter()) {
        out.extend_from_slice(&(item.len() as i32).to_be_bytes());
        out.extend_from_slice(item);
    }
    Some(out)
}
