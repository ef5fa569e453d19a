// PATCH (Peregrine, speed; see vendor/README.md): not in upstream lsm-tree.

//! The memtable skip list's key: an [`InternalKey`] and the first 16 bytes of its user key,
//! zero-padded, as two big-endian words held in the skip-list node itself.
//!
//! A skip-list walk compares the key it looks for with one node per step, and in a memtable
//! larger than the cache each step is a cache miss for the node and, for a user key longer
//! than `ByteView`'s 20 inline bytes, a second one for the key's bytes on the heap
//! (`SkipList::search_position` was 28-30% of the server's samples in `peregrine bench
//! indexed`'s UPDATE phase at 1M rows, bench/results/2026-11-30/indexed-writes-s27). The
//! `ByteView`'s own 4-byte prefix does not decide between Peregrine's keys (their first five
//! bytes name the kind and the table or index); their next bytes are a token or an indexed
//! value and then a token, so the first 16 bytes almost always decide and the key's bytes
//! are read only when those are equal.
//!
//! The order is [`InternalKey`]'s: zero-padded heads compare as the keys' bytes do wherever
//! they differ (the first differing byte within both keys decides both; a key that is a proper
//! prefix of the other has the smaller padded head or an equal one), and equal heads fall back
//! to the whole key.

use crate::key::InternalKey;

/// Bytes of the user key held in the node.
const HEAD: usize = 16;

/// `repr(C)`, the head last: crossbeam's node is the value, this key, its reference count and
/// its tower of links, so the head is next to the links a walk reads from the same node.
#[derive(Clone, Debug)]
#[repr(C)]
pub struct MemtableKey {
    pub key: InternalKey,
    /// The user key's first [`HEAD`] bytes, zero-padded, as big-endian words.
    head: [u64; 2],
}

impl MemtableKey {
    pub fn new(key: InternalKey) -> Self {
        Self {
            head: head_of(&key.user_key),
            key,
        }
    }

    // PATCH (Peregrine, speed): whether this key is at or after the version `seqno - 1` of
    // `user_key` (whose head is `head`) in the skip list's order, i.e. the key
    // `Memtable::get_hashed(user_key, seqno)` looks for, without building that key (a copy
    // of the user key into a new `ByteView`).
    pub(crate) fn reaches(&self, head: [u64; 2], user_key: &[u8], seqno: crate::SeqNo) -> bool {
        self.head
            .cmp(&head)
            .then_with(|| crate::key::compare_user_keys(&self.key.user_key, user_key))
            .then_with(|| (seqno - 1).cmp(&self.key.seqno))
            .is_ge()
    }
}

/// A user key's first [`HEAD`] bytes, zero-padded, as big-endian words.
pub(crate) fn head_of(user_key: &[u8]) -> [u64; 2] {
    let mut bytes = [0u8; HEAD];
    let n = user_key.len().min(HEAD);
    if let (Some(to), Some(from)) = (bytes.get_mut(..n), user_key.get(..n)) {
        to.copy_from_slice(from);
    }
    let (a, b) = bytes.split_at(HEAD / 2);
    let word = |w: &[u8]| u64::from_be_bytes(w.try_into().unwrap_or_default());
    [word(a), word(b)]
}

impl MemtableKey {
    // PATCH (Peregrine, speed): the key `Memtable::get` looks for to find this user key's
    // newest version (its head reused, the user key shared).
    pub(crate) fn newest_version(&self) -> Self {
        Self {
            key: InternalKey {
                user_key: self.key.user_key.clone(),
                seqno: crate::SeqNo::MAX - 1,
                value_type: crate::ValueType::Value,
            },
            head: self.head,
        }
    }
}

impl PartialEq for MemtableKey {
    fn eq(&self, other: &Self) -> bool {
        self.head == other.head && self.key == other.key
    }
}

impl Eq for MemtableKey {}

impl PartialOrd for MemtableKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for MemtableKey {
    #[inline]
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.head
            .cmp(&other.head)
            .then_with(|| self.key.cmp(&other.key))
    }
}
