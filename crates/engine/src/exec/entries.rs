//! The pending writes of a statement or batch, by storage key ([`Entries`]).

use std::collections::BTreeMap;

use super::CollectionOp;
use crate::row::{PartitionHeader, Row};

/// A pending write to a row: its cells, its collection operations.
pub(crate) struct RowEntry {
    pub(super) delta: Row,
    pub(super) ops: Vec<CollectionOp>,
    /// A statement sets every regular column of the row (see `apply`'s blind writes).
    pub(super) whole_row: bool,
}

/// A pending write to a partition's header (static cells, partition deletion).
pub(crate) struct HeaderEntry {
    pub(super) delta: PartitionHeader,
    pub(super) ops: Vec<CollectionOp>,
}

pub(super) enum Entry {
    Row(RowEntry),
    Header(HeaderEntry),
}

// Header keys end in 0x00 after the partition prefix and row keys in 0x01, so one key can
// never be both kinds; these exist only to satisfy the match.
#[allow(clippy::panic)]
pub(super) fn unreachable_entry() -> &'static mut RowEntry {
    panic!("storage key used as both row and header")
}
#[allow(clippy::panic)]
pub(super) fn unreachable_header() -> &'static mut HeaderEntry {
    panic!("storage key used as both row and header")
}

/// Pending writes keyed by storage key, in key order. One entry, what every single-row
/// write makes, is kept without a map: a `BTreeMap` allocated a node for it, and its insert,
/// iteration and drop took ~380 instructions of a YCSB A update (Callgrind, session 40).
#[derive(Default)]
pub(super) enum Entries {
    #[default]
    Empty,
    One(Vec<u8>, Entry),
    Many(BTreeMap<Vec<u8>, Entry>),
}

impl Entries {
    pub(super) fn is_empty(&self) -> bool {
        matches!(self, Entries::Empty)
    }

    pub(super) fn len(&self) -> usize {
        match self {
            Entries::Empty => 0,
            Entries::One(..) => 1,
            Entries::Many(m) => m.len(),
        }
    }

    /// The entries in key order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&Vec<u8>, &Entry)> {
        let (one, many) = match self {
            Entries::Empty => (None, None),
            Entries::One(k, e) => (Some((k, e)), None),
            Entries::Many(m) => (None, Some(m.iter())),
        };
        one.into_iter().chain(many.into_iter().flatten())
    }

    /// The key of the one entry, if there is exactly one.
    pub(super) fn only_key(&self) -> Option<&Vec<u8>> {
        match self {
            Entries::One(k, _) => Some(k),
            _ => None,
        }
    }

    pub(super) fn keys(&self) -> impl Iterator<Item = &Vec<u8>> {
        self.iter().map(|(k, _)| k)
    }

    /// The entries in key order, moved out.
    pub(super) fn into_entries(self) -> impl Iterator<Item = (Vec<u8>, Entry)> {
        let (one, many) = match self {
            Entries::Empty => (None, None),
            Entries::One(k, e) => (Some((k, e)), None),
            Entries::Many(m) => (None, Some(m)),
        };
        one.into_iter().chain(many.into_iter().flatten())
    }

    /// The entry under `key`, made by `new` when there is none.
    pub(super) fn entry(&mut self, key: Vec<u8>, new: impl FnOnce() -> Entry) -> &mut Entry {
        if matches!(self, Entries::One(k, _) if *k != key) {
            if let Entries::One(k, e) = std::mem::take(self) {
                *self = Entries::Many(BTreeMap::from([(k, e)]));
            }
        }
        if self.is_empty() {
            *self = Entries::One(key, new());
            return match self {
                Entries::One(_, e) => e,
                _ => unreachable_entries(),
            };
        }
        match self {
            Entries::Many(m) => m.entry(key).or_insert_with(new),
            Entries::One(_, e) => e,
            Entries::Empty => unreachable_entries(),
        }
    }
}

// `Entries::entry` has just made the variant it matches.
#[allow(clippy::panic)]
fn unreachable_entries() -> &'static mut Entry {
    panic!("an entry just inserted is missing")
}
