//! The candidates of an index lookup: base keys (rows, or partition headers for an index on
//! a static column), in base-key order (Cassandra's token order), from the position a
//! paging state resumes at.

use super::{encode_value, expired, index_prefix};
use crate::exec::{resolve, Bindings};
use crate::plan::{IndexLookup, IndexScan, Src};
use crate::{keys, EngineError};
use std::ops::Bound;
use storage::Storage;

pub(crate) type Candidates<'a> = Box<dyn Iterator<Item = Result<Vec<u8>, EngineError>> + 'a>;

fn value_of(scan: &IndexScan, src: &Src, vals: &Bindings) -> Result<Vec<u8>, EngineError> {
    resolve(src, vals)?.ok_or_else(|| {
        EngineError::invalid(format!("Unsupported null value for column {}", scan.column))
    })
}

/// The base key an entry points to.
pub(crate) fn base_key(table_id: u32, key: &[u8], value: &[u8]) -> Option<Vec<u8>> {
    let len = u32::from_be_bytes(value.get(4..8)?.try_into().ok()?) as usize;
    let tail = key.get(5 + len..)?;
    let mut k = keys::table_prefix(table_id);
    k.extend_from_slice(tail);
    Some(k)
}

/// Base keys of table `table_id` that `scan` names, at or after the partition
/// `resume_partition` (a base-key partition prefix) if given. An equality lookup streams;
/// a range gathers its matches and sorts them.
pub(crate) fn candidates<'a>(
    store: &'a dyn Storage,
    table_id: u32,
    scan: &IndexScan,
    vals: &Bindings,
    resume_partition: Option<&[u8]>,
    now_secs: u32,
) -> Result<Candidates<'a>, EngineError> {
    let prefix = index_prefix(scan.index_id);
    let encoded = |v: &[u8]| {
        let mut k = prefix.clone();
        encode_value(&mut k, &scan.value_ty, v, scan.analyzer);
        k
    };
    let live =
        move |item: storage::Result<storage::KvPair>| -> Option<Result<Vec<u8>, EngineError>> {
            match item {
                Err(e) => Some(Err(e.into())),
                Ok((k, v)) if !expired(&v, now_secs) => base_key(table_id, &k, &v).map(Ok),
                Ok(_) => None,
            }
        };
    let exact = match &scan.lookup {
        IndexLookup::Eq(src) => Some(encoded(&value_of(scan, src, vals)?)),
        IndexLookup::Entry(k, v, vt) => {
            let mut key = encoded(&value_of(scan, k, vals)?);
            encode_value(&mut key, vt, &value_of(scan, v, vals)?, scan.analyzer);
            Some(key)
        }
        IndexLookup::Range { .. } => None,
    };
    if let Some(lo) = exact {
        let hi = keys::prefix_end(&lo);
        let mut from = lo.clone();
        if let Some(p) = resume_partition {
            from.extend_from_slice(&p[5..]);
        }
        let items = store.scan(
            Bound::Included(from.as_slice()),
            Bound::Excluded(hi.as_slice()),
            false,
        );
        return Ok(Box::new(items.filter_map(live)));
    }
    let IndexLookup::Range { start, end } = &scan.lookup else {
        return Ok(Box::new(std::iter::empty()));
    };
    let lo = match start {
        Some((src, true)) => encoded(&value_of(scan, src, vals)?),
        Some((src, false)) => keys::prefix_end(&encoded(&value_of(scan, src, vals)?)),
        None => prefix.clone(),
    };
    let hi = match end {
        Some((src, false)) => encoded(&value_of(scan, src, vals)?),
        Some((src, true)) => keys::prefix_end(&encoded(&value_of(scan, src, vals)?)),
        None => keys::prefix_end(&prefix),
    };
    if lo >= hi {
        return Ok(Box::new(std::iter::empty()));
    }
    let mut all = Vec::new();
    for item in store.scan(
        Bound::Included(lo.as_slice()),
        Bound::Excluded(hi.as_slice()),
        false,
    ) {
        match live(item) {
            Some(Ok(k)) if resume_partition.is_none_or(|p| k.as_slice() >= p) => all.push(k),
            Some(Err(e)) => return Err(e),
            _ => {}
        }
    }
    all.sort_unstable();
    all.dedup();
    Ok(Box::new(all.into_iter().map(Ok)))
}
