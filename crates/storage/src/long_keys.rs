//! Keys longer than the LSM library takes.
//!
//! fjall (lsm-tree) asserts that a key is at most 65,535 bytes, and panics otherwise. Cassandra
//! allows a partition key and *each* clustering component up to 65,535 bytes, so an engine key
//! (table id, token, escaped partition key, clustering components) can be far longer. Rather
//! than limit CQL, [`LsmStorage`](crate::LsmStorage) stores such keys in **buckets**:
//!
//! - a key shorter than [`SPILL_AT`] bytes is stored as itself;
//! - a key of `SPILL_AT` bytes or more is stored inside the bucket whose physical key is its
//!   first `SPILL_AT` bytes, as an entry `(rest of the key, value)`; a bucket keeps its entries
//!   sorted by that rest.
//!
//! A physical key is therefore a bucket exactly when it is `SPILL_AT` bytes long, and the
//! physical order is the logical order: a direct key (shorter than `SPILL_AT`) sorts against a
//! bucket exactly as it sorts against every key in that bucket, because it can never equal the
//! bucket's `SPILL_AT`-byte prefix. Scans expand buckets in place.
//!
//! Writing into a bucket is a read-modify-write of the bucket, serialized by one lock in the
//! store (taken only by batches that hold long keys: such keys are rare, and correctness is
//! what they need). All keys that share their first `SPILL_AT` bytes share one bucket, so a
//! partition whose key alone is that long keeps all its rows in one value: correct, but each
//! write to it rewrites the bucket.

use crate::{KvPair, Result, StorageError};
use std::ops::Bound;

/// Keys of this length or longer live in buckets. A format constant: changing it makes
/// existing long keys unreadable. Well under fjall's 65,535 so a bucket key always fits.
pub(crate) const SPILL_AT: usize = 60 * 1024;

/// The entries of one bucket, sorted by key suffix, unique.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Bucket {
    entries: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Bucket {
    /// Reads a stored bucket: `u32` entry count, then per entry `u32` suffix length, suffix,
    /// `u32` value length, value (all big-endian).
    pub(crate) fn decode(bytes: &[u8]) -> Result<Bucket> {
        let corrupt = || StorageError::Io("a long-key bucket is damaged".into());
        let mut rest = bytes;
        let mut take = |n: usize| -> Result<&[u8]> {
            if rest.len() < n {
                return Err(corrupt());
            }
            let (head, tail) = rest.split_at(n);
            rest = tail;
            Ok(head)
        };
        let u32_at = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
        let count = u32_at(take(4)?);
        // Each entry takes at least 8 bytes: bound the allocation by what is there.
        let mut entries = Vec::with_capacity(count.min(bytes.len() / 8));
        for _ in 0..count {
            let klen = u32_at(take(4)?);
            let key = take(klen)?.to_vec();
            let vlen = u32_at(take(4)?);
            let value = take(vlen)?.to_vec();
            entries.push((key, value));
        }
        if !rest.is_empty() {
            return Err(corrupt());
        }
        Ok(Bucket { entries })
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        let size: usize = self
            .entries
            .iter()
            .map(|(k, v)| 8 + k.len() + v.len())
            .sum();
        let mut out = Vec::with_capacity(4 + size);
        out.extend_from_slice(&(self.entries.len() as u32).to_be_bytes());
        for (k, v) in &self.entries {
            out.extend_from_slice(&(k.len() as u32).to_be_bytes());
            out.extend_from_slice(k);
            out.extend_from_slice(&(v.len() as u32).to_be_bytes());
            out.extend_from_slice(v);
        }
        out
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(crate) fn get(&self, suffix: &[u8]) -> Option<&[u8]> {
        let i = self.position(suffix).ok()?;
        Some(&self.entries[i].1)
    }

    /// Sets (`Some`) or removes (`None`) the entry for `suffix`.
    pub(crate) fn set(&mut self, suffix: &[u8], value: Option<Vec<u8>>) {
        match (self.position(suffix), value) {
            (Ok(i), Some(v)) => self.entries[i].1 = v,
            (Ok(i), None) => {
                self.entries.remove(i);
            }
            (Err(i), Some(v)) => self.entries.insert(i, (suffix.to_vec(), v)),
            (Err(_), None) => {}
        }
    }

    /// Keeps the entries for which `keep` returns a value (possibly a new one); false when
    /// nothing changed.
    pub(crate) fn retain_map(
        &mut self,
        mut keep: impl FnMut(&[u8], &[u8]) -> Option<Option<Vec<u8>>>,
    ) -> bool {
        let mut changed = false;
        self.entries.retain_mut(|(k, v)| match keep(k, v) {
            None => {
                changed = true;
                false
            }
            Some(Some(nv)) => {
                *v = nv;
                changed = true;
                true
            }
            Some(None) => true,
        });
        changed
    }

    /// The entries as whole keys (`prefix` + suffix) within the bounds, in key order
    /// (descending when `reverse`).
    pub(crate) fn expand(
        self,
        prefix: &[u8],
        start: &Bound<Vec<u8>>,
        end: &Bound<Vec<u8>>,
        reverse: bool,
    ) -> Vec<KvPair> {
        let mut out: Vec<KvPair> = self
            .entries
            .into_iter()
            .map(|(suffix, v)| ([prefix, &suffix].concat(), bytes::Bytes::from(v)))
            .filter(|(k, _)| within(k, start, end))
            .collect();
        if reverse {
            out.reverse();
        }
        out
    }

    fn position(&self, suffix: &[u8]) -> std::result::Result<usize, usize> {
        self.entries
            .binary_search_by(|(k, _)| k.as_slice().cmp(suffix))
    }
}

/// True if `key` lies within the bounds.
pub(crate) fn within(key: &[u8], start: &Bound<Vec<u8>>, end: &Bound<Vec<u8>>) -> bool {
    let after_start = match start {
        Bound::Included(s) => key >= s.as_slice(),
        Bound::Excluded(s) => key > s.as_slice(),
        Bound::Unbounded => true,
    };
    let before_end = match end {
        Bound::Included(e) => key <= e.as_slice(),
        Bound::Excluded(e) => key < e.as_slice(),
        Bound::Unbounded => true,
    };
    after_start && before_end
}

/// The physical bound for a logical one: a bound on a long key becomes an inclusive bound on
/// its bucket (whose entries are then filtered one by one). A direct key inside the physical
/// range is always inside the logical one (see the module docs), so only buckets need the
/// filter.
pub(crate) fn physical(bound: Bound<&[u8]>) -> Bound<Vec<u8>> {
    match bound {
        Bound::Included(k) | Bound::Excluded(k) if k.len() >= SPILL_AT => {
            Bound::Included(k[..SPILL_AT].to_vec())
        }
        b => b.map(<[u8]>::to_vec),
    }
}

/// A scan of physical items that expands buckets into their entries.
pub(crate) struct Expand<I> {
    pub(crate) inner: I,
    pub(crate) start: Bound<Vec<u8>>,
    pub(crate) end: Bound<Vec<u8>>,
    pub(crate) reverse: bool,
    pub(crate) pending: std::vec::IntoIter<KvPair>,
}

impl<I: Iterator<Item = Result<KvPair>>> Iterator for Expand<I> {
    type Item = Result<KvPair>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(kv) = self.pending.next() {
                return Some(Ok(kv));
            }
            let (key, value) = match self.inner.next()? {
                Ok(kv) => kv,
                Err(e) => return Some(Err(e)),
            };
            if key.len() != SPILL_AT {
                return Some(Ok((key, value)));
            }
            match Bucket::decode(&value) {
                Ok(bucket) => {
                    self.pending = bucket
                        .expand(&key, &self.start, &self.end, self.reverse)
                        .into_iter()
                }
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_round_trip_and_order() {
        let mut b = Bucket::default();
        b.set(b"b", Some(b"2".to_vec()));
        b.set(b"", Some(b"0".to_vec()));
        b.set(b"a", Some(b"1".to_vec()));
        b.set(b"a", Some(b"1'".to_vec()));
        b.set(b"zz", None);
        let decoded = Bucket::decode(&b.encode()).unwrap();
        assert_eq!(decoded, b);
        assert_eq!(decoded.get(b"a"), Some(&b"1'"[..]));
        let keys: Vec<Vec<u8>> = decoded
            .expand(b"p", &Bound::Unbounded, &Bound::Unbounded, false)
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(keys, vec![b"p".to_vec(), b"pa".to_vec(), b"pb".to_vec()]);
    }

    #[test]
    fn damaged_buckets_are_errors_not_panics() {
        let good = {
            let mut b = Bucket::default();
            b.set(b"key", Some(b"value".to_vec()));
            b.encode()
        };
        for cut in 0..good.len() {
            assert!(Bucket::decode(&good[..cut]).is_err(), "cut at {cut}");
        }
        let mut trailing = good.clone();
        trailing.push(0);
        assert!(Bucket::decode(&trailing).is_err());
        // A count far larger than the bytes allocates nothing up front.
        assert!(Bucket::decode(&[0xff, 0xff, 0xff, 0xff]).is_err());
    }
}
