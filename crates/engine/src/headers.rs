//! Which tables may hold partition headers, so that a point read of a table that never had
//! one skips the header look-up (one storage look-up per read instead of two).
//!
//! A partition header (partition tombstone, range tombstones, static cells; see `row.rs`) is
//! written only by [`crate::Engine::apply`]. The first header written to a table also writes a
//! durable marker `\x00headers` + table id in the same batch, and sets the table's bit here
//! before the batch is written. On open the markers are read back. A store that existed before
//! the markers (no `\x00headers` key, but a schema) is not tracked: every table may have
//! headers there, as before. A fresh store is tracked from the start.
//!
//! A reader that finds the bit clear reads the row alone. A header written after that check
//! belongs to a write concurrent with the read, which may or may not be seen — the same as
//! when the header look-up ran first and the header was written between the two look-ups.
//! Bits are per table id modulo [`BITS`]; a collision only costs the look-up again. A bit is
//! never cleared (a dropped header, a truncated or dropped table keep it): conservative.
//! A tracked store written to by an older Peregrine (which writes no markers) and opened
//! again by this one could miss that version's headers: downgrades are not supported.

use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Present once the store tracks its tables' headers.
const TRACKED_KEY: &[u8] = b"\x00headers";
/// Bits in the table map (table ids count up from 1, so collisions need 64K tables).
const BITS: usize = 1 << 16;

pub(crate) struct Headers {
    /// Not tracked (a store from before the markers): every table may have headers.
    all: AtomicBool,
    bits: Vec<AtomicU64>,
}

impl Headers {
    /// Reads the markers of `store`; marks a fresh store (`fresh`: no schema yet) tracked.
    pub(crate) fn open(store: &dyn storage::Storage, fresh: bool) -> storage::Result<Headers> {
        let h = Headers {
            all: AtomicBool::new(false),
            bits: (0..BITS / 64).map(|_| AtomicU64::new(0)).collect(),
        };
        if store.get(TRACKED_KEY)?.is_none() {
            if !fresh {
                h.all.store(true, Ordering::Relaxed);
                return Ok(h);
            }
            let mut b = storage::WriteBatch::new();
            b.put(TRACKED_KEY.to_vec(), Vec::new());
            store.write(b)?;
        }
        // Markers are TRACKED_KEY + 4 id bytes: the keys after TRACKED_KEY with it as prefix.
        let end = keys_end(TRACKED_KEY);
        for item in store.scan(
            Bound::Excluded(TRACKED_KEY),
            Bound::Excluded(end.as_slice()),
            false,
        ) {
            let (k, _) = item?;
            if let Some(id) = k
                .get(TRACKED_KEY.len()..)
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
            {
                h.set(u32::from_be_bytes(id));
            }
        }
        Ok(h)
    }

    fn slot(id: u32) -> (usize, u64) {
        let bit = id as usize % BITS;
        (bit / 64, 1 << (bit % 64))
    }

    fn set(&self, id: u32) {
        let (w, m) = Self::slot(id);
        self.bits[w].fetch_or(m, Ordering::Release);
    }

    /// Whether table `id` may hold a partition header (false: it never had one).
    pub(crate) fn may_have(&self, id: u32) -> bool {
        let (w, m) = Self::slot(id);
        self.all.load(Ordering::Relaxed) || self.bits[w].load(Ordering::Acquire) & m != 0
    }

    /// Before a batch writing a header of table `id`: sets its bit and, the first time,
    /// adds its durable marker to the batch.
    pub(crate) fn note_write(&self, id: u32, batch: &mut storage::WriteBatch) {
        if self.may_have(id) {
            return;
        }
        self.set(id);
        let mut k = TRACKED_KEY.to_vec();
        k.extend_from_slice(&id.to_be_bytes());
        batch.put(k, Vec::new());
    }
}

/// The first key after every key starting with `p` (`p` does not end in 0xFF).
fn keys_end(p: &[u8]) -> Vec<u8> {
    let mut e = p.to_vec();
    if let Some(last) = e.last_mut() {
        *last += 1;
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::{node, q, values};
    use crate::Engine;
    use std::sync::Arc;

    fn table_id(e: &Engine, name: &str) -> u32 {
        e.schema().tables[&("ks".to_string(), name.to_string())].id
    }

    fn rows(e: &Engine, text: &str) -> usize {
        values(q(e, Some("ks"), text).unwrap()).0.len()
    }

    fn setup(e: &Engine) {
        for s in [
            "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
            "CREATE TABLE t (k int PRIMARY KEY, v int)",
            "CREATE TABLE u (k int PRIMARY KEY, v int)",
            "CREATE TABLE s (k int, c int, st int static, v int, PRIMARY KEY (k, c))",
        ] {
            q(e, Some("ks"), s).unwrap();
        }
    }

    #[test]
    fn a_partition_deletion_still_shadows_older_writes_made_after_it() {
        let e = crate::tests::engine();
        setup(&e);
        let t = table_id(&e, "t");
        q(
            &e,
            Some("ks"),
            "INSERT INTO t (k, v) VALUES (1, 1) USING TIMESTAMP 10",
        )
        .unwrap();
        assert!(!e.headers.may_have(t), "rows alone write no header");
        assert_eq!(rows(&e, "SELECT v FROM t WHERE k = 1"), 1);
        q(
            &e,
            Some("ks"),
            "DELETE FROM t USING TIMESTAMP 20 WHERE k = 1",
        )
        .unwrap();
        assert!(e.headers.may_have(t));
        // Written after the deletion but older than it: only the header shadows it.
        q(
            &e,
            Some("ks"),
            "INSERT INTO t (k, v) VALUES (1, 2) USING TIMESTAMP 15",
        )
        .unwrap();
        assert_eq!(rows(&e, "SELECT v FROM t WHERE k = 1"), 0);
        q(
            &e,
            Some("ks"),
            "INSERT INTO t (k, v) VALUES (1, 3) USING TIMESTAMP 25",
        )
        .unwrap();
        assert_eq!(rows(&e, "SELECT v FROM t WHERE k = 1"), 1);
        assert!(!e.headers.may_have(table_id(&e, "u")));
    }

    #[test]
    fn a_static_write_marks_its_table() {
        let e = crate::tests::engine();
        setup(&e);
        q(&e, Some("ks"), "INSERT INTO s (k, st) VALUES (1, 7)").unwrap();
        assert!(e.headers.may_have(table_id(&e, "s")));
        assert_eq!(rows(&e, "SELECT st FROM s WHERE k = 1"), 1);
    }

    #[test]
    fn markers_are_read_back_on_open() {
        let store: Arc<dyn storage::Storage> = Arc::new(storage::MemStorage::new());
        let e = Engine::open(store.clone(), node()).unwrap();
        setup(&e);
        q(
            &e,
            Some("ks"),
            "INSERT INTO t (k, v) VALUES (1, 1) USING TIMESTAMP 10",
        )
        .unwrap();
        q(
            &e,
            Some("ks"),
            "DELETE FROM t USING TIMESTAMP 20 WHERE k = 1",
        )
        .unwrap();
        q(
            &e,
            Some("ks"),
            "INSERT INTO t (k, v) VALUES (1, 2) USING TIMESTAMP 15",
        )
        .unwrap();
        drop(e);
        let e = Engine::open(store, node()).unwrap();
        assert!(e.headers.may_have(table_id(&e, "t")));
        assert!(!e.headers.may_have(table_id(&e, "u")));
        assert_eq!(rows(&e, "SELECT v FROM t WHERE k = 1"), 0);
    }

    #[test]
    fn a_store_from_before_the_markers_looks_up_every_header() {
        let old = storage::MemStorage::new();
        let mut b = storage::WriteBatch::new();
        b.put(b"\x01data".to_vec(), Vec::new());
        storage::Storage::write(&old, b).unwrap();
        let h = Headers::open(&old, false).unwrap();
        assert!(h.may_have(1) && h.may_have(12345));

        let fresh = storage::MemStorage::new();
        let h = Headers::open(&fresh, true).unwrap();
        assert!(!h.may_have(1));
        let mut b = storage::WriteBatch::new();
        h.note_write(1, &mut b);
        storage::Storage::write(&fresh, b).unwrap();
        // Tracked now: reopened as a store with tables, the marker is what counts.
        let h = Headers::open(&fresh, false).unwrap();
        assert!(h.may_have(1) && !h.may_have(2));
    }
}
