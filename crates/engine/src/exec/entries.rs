//! The pending writes of a statement or batch, by storage key ([`Mutations`], [`Entries`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::CollectionOp;
use crate::catalog::TableDef;
use crate::keys;
use crate::row::{PartitionHeader, Row};
use crate::EngineError;

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

/// The error of the earliest statement among those whose operations failed.
/// The error a write reports when several of its operations fail: the first statement's
/// (of a batch), and within a statement a row's before the static row's, as Cassandra applies
/// a statement's regular operations before its static ones.
pub(super) struct FirstError(pub(super) Option<((usize, bool), EngineError)>);

impl FirstError {
    pub(super) fn note(&mut self, stmt: usize, on_statics: bool, e: EngineError) {
        let rank = (stmt, on_statics);
        if self.0.as_ref().is_none_or(|(r, _)| rank < *r) {
            self.0 = Some((rank, e));
        }
    }
}

/// Pending writes keyed by storage key.
#[derive(Default)]
pub(crate) struct Mutations {
    pub(super) entries: Entries,
    /// The batch statement whose mutations are being added.
    pub(super) statement: usize,
    /// The authorizations the writing request reads with, for its collection updates on
    /// labelled tables (none set: it sees only unlabelled items).
    pub(super) writer: Option<Arc<crate::visibility::Authorizations>>,
    /// The mutations of a conditional write: Cassandra's Paxos commit puts its partition and
    /// range deletions one microsecond before the write's timestamp
    /// (PartitionUpdate.updateAllTimestamp), so they do not shadow a conditional BATCH's own
    /// writes. A row deletion moves too, but only after the batch's writes to the same row
    /// have been merged with it (and shadowed) at the write's timestamp: it stays there.
    pub(super) conditional: bool,
}

impl Mutations {
    /// These mutations as those of a conditional write (see `conditional`).
    pub(crate) fn conditional(self) -> Mutations {
        Mutations {
            conditional: true,
            ..self
        }
    }

    /// Mutations of a request whose collection updates on labelled tables see the stored
    /// collections with `writer` (see [`Engine::writer_authorizations`]).
    pub(crate) fn seen_by(writer: Option<Arc<crate::visibility::Authorizations>>) -> Mutations {
        Mutations {
            writer,
            ..Mutations::default()
        }
    }

    /// What a collection update on `t` sees of the stored collection: `None` (everything)
    /// on a table without labels.
    pub(super) fn sees(&self, t: &TableDef) -> Option<Arc<crate::visibility::Authorizations>> {
        t.options
            .visibility
            .is_some()
            .then(|| self.writer.clone().unwrap_or_default())
    }

    /// The storage prefix of each partition the mutations touch, once each: keys are in
    /// order, so a partition's keys are adjacent and one comparison per key finds them.
    pub(crate) fn partition_prefixes(&self) -> impl Iterator<Item = &[u8]> {
        let mut last: Option<&[u8]> = None;
        self.entries.keys().filter_map(move |k| {
            let prefix = &k[..keys::partition_prefix_len(k).unwrap_or(k.len())];
            (last != Some(prefix)).then(|| {
                last = Some(prefix);
                prefix
            })
        })
    }

    /// How many partitions the mutations touch (`batch_metrics`).
    pub(crate) fn partitions(&self) -> usize {
        self.partition_prefixes().count()
    }

    /// The mutations added from now on come from the next statement of a batch.
    pub(crate) fn next_statement(&mut self) {
        self.statement += 1;
    }

    pub(super) fn row(&mut self, key: Vec<u8>) -> &mut RowEntry {
        let e = self.entries.entry(key, || {
            Entry::Row(RowEntry {
                delta: Row::default(),
                ops: Vec::new(),
                whole_row: false,
            })
        });
        match e {
            Entry::Row(r) => r,
            Entry::Header(_) => unreachable_entry(),
        }
    }
    pub(super) fn header(&mut self, prefix: &[u8]) -> &mut HeaderEntry {
        let e = self.entries.entry(keys::header_key(prefix), || {
            Entry::Header(HeaderEntry {
                delta: PartitionHeader::default(),
                ops: Vec::new(),
            })
        });
        match e {
            Entry::Header(h) => h,
            Entry::Row(_) => unreachable_header(),
        }
    }
}
