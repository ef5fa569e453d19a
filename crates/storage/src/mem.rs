//! The in-memory reference model: a `BTreeMap` behind a lock. Slow and obviously right.

use crate::{CompactionFilter, Decision, KvPair, Merge, Result, Storage, WriteBatch};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Arc, RwLock};

#[derive(Default)]
pub struct MemStorage {
    map: RwLock<BTreeMap<Vec<u8>, Vec<u8>>>,
    filter: Option<Arc<dyn CompactionFilter>>,
    /// Partial values are completed as they are written (the map holds complete ones only).
    merge: Option<Arc<dyn Merge>>,
}

impl MemStorage {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn with_filter(filter: Arc<dyn CompactionFilter>) -> Self {
        MemStorage {
            map: RwLock::default(),
            filter: Some(filter),
            merge: None,
        }
    }
    /// A store that completes partial values, as an engine's `LsmStorage` does.
    pub fn with_merge(merge: Arc<dyn Merge>) -> Self {
        MemStorage {
            merge: Some(merge),
            ..Self::default()
        }
    }
    /// A store that also completes partial values, as an engine's `LsmStorage` does.
    pub fn with_filter_and_merge(filter: Arc<dyn CompactionFilter>, merge: Arc<dyn Merge>) -> Self {
        MemStorage {
            map: RwLock::default(),
            filter: Some(filter),
            merge: Some(merge),
        }
    }
}

impl Storage for MemStorage {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let map = self.map.read().unwrap_or_else(|p| p.into_inner());
        Ok(map.get(key).cloned())
    }

    fn write(&self, batch: WriteBatch) -> Result<()> {
        let mut map = self.map.write().unwrap_or_else(|p| p.into_inner());
        for (k, v) in batch.ops {
            let v =
                crate::written_onto(self.merge.as_deref(), &k, v, map.get(&k).map(Vec::as_slice));
            match v {
                Some(v) => map.insert(k, v.to_vec()),
                None => map.remove(&k),
            };
        }
        Ok(())
    }

    fn scan<'a>(
        &'a self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        reverse: bool,
    ) -> Box<dyn Iterator<Item = Result<KvPair>> + 'a> {
        // A snapshot, like the LSM iterator gives.
        let map = self.map.read().unwrap_or_else(|p| p.into_inner());
        let range = (start.map(|s| s.to_vec()), end.map(|e| e.to_vec()));
        let valid = match (&range.0, &range.1) {
            (Bound::Included(s) | Bound::Excluded(s), Bound::Included(e) | Bound::Excluded(e)) => {
                s <= e
            }
            _ => true,
        };
        let mut items: Vec<KvPair> = if valid {
            map.range::<Vec<u8>, _>(range)
                .map(|(k, v)| (k.clone(), bytes::Bytes::copy_from_slice(v)))
                .collect()
        } else {
            Vec::new()
        };
        if reverse {
            items.reverse();
        }
        Box::new(items.into_iter().map(Ok))
    }

    fn sync(&self) -> Result<()> {
        Ok(())
    }

    fn merges(&self) -> bool {
        self.merge.is_some()
    }

    fn compact(&self) -> Result<()> {
        let Some(filter) = &self.filter else {
            return Ok(());
        };
        let mut map = self.map.write().unwrap_or_else(|p| p.into_inner());
        let mut out = BTreeMap::new();
        for (k, v) in std::mem::take(&mut *map) {
            match filter.filter(&k, &v, true) {
                Decision::Keep => {
                    out.insert(k, v);
                }
                Decision::Drop => {}
                Decision::Replace(nv) => {
                    out.insert(k, nv);
                }
            }
        }
        *map = out;
        Ok(())
    }
}
