use super::*;
use crate::long_keys::SPILL_AT;
use std::ops::Bound::*;

/// A test's scratch directory, removed when the test ends (passing or not).
pub(crate) struct TmpDir(std::path::PathBuf);

impl std::ops::Deref for TmpDir {
    type Target = std::path::PathBuf;
    fn deref(&self) -> &std::path::PathBuf {
        &self.0
    }
}

impl AsRef<std::path::Path> for TmpDir {
    fn as_ref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TmpDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub(crate) fn tmpdir(name: &str) -> TmpDir {
    let p = std::env::temp_dir().join(format!("peregrine-storage-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    TmpDir(p)
}

/// A tiny deterministic PRNG so the model test needs no extra dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn all(s: &dyn Storage, rev: bool) -> Vec<KvPair> {
    s.scan(Unbounded, Unbounded, rev)
        .map(|r| r.unwrap())
        .collect()
}

#[test]
fn lsm_matches_model_under_random_batches() {
    let dir = tmpdir("model");
    let lsm = LsmStorage::open(&dir, Options::default()).unwrap();
    let mem = MemStorage::new();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for round in 0..200 {
        let mut batch = WriteBatch::new();
        for _ in 0..(rng.next() % 8 + 1) {
            let key = vec![(rng.next() % 4) as u8, (rng.next() % 16) as u8];
            if rng.next().is_multiple_of(4) {
                batch.delete(key);
            } else {
                batch.put(key, rng.next().to_be_bytes().to_vec());
            }
        }
        lsm.write(batch.clone()).unwrap();
        mem.write(batch).unwrap();
        if round % 50 == 49 {
            lsm.compact().unwrap();
        }
        let lo = [(rng.next() % 4) as u8];
        let hi = [(rng.next() % 4) as u8, 8];
        let a: Vec<_> = lsm
            .scan(Included(&lo), Excluded(&hi), false)
            .map(|r| r.unwrap())
            .collect();
        let b: Vec<_> = mem
            .scan(Included(&lo), Excluded(&hi), false)
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(a, b, "range scan differs at round {round}");
    }
    assert_eq!(all(&lsm, false), all(&mem, false));
    assert_eq!(all(&lsm, true), all(&mem, true));
    let _ = std::fs::remove_dir_all(&dir);
}

/// What was written is read after a reopening, from the journal. A value of 4 KiB or more
/// is in the journal as written (fjall compressed it, see `Open::new`).
#[test]
fn data_survives_reopen() {
    let dir = tmpdir("reopen");
    {
        let s = LsmStorage::open(
            &dir,
            Options {
                sync: SyncMode::Batch,
                ..Options::default()
            },
        )
        .unwrap();
        let mut b = WriteBatch::new();
        b.put(b"k1".to_vec(), b"v1".to_vec());
        b.put(b"k2".to_vec(), b"v2".to_vec());
        b.put(b"big".to_vec(), vec![b'a'; 8192]);
        s.write(b).unwrap();
        let journaled: usize = std::fs::read_dir(&*dir)
            .unwrap()
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "jnl"))
            .map(|e| {
                std::fs::read(e.path())
                    .unwrap()
                    .iter()
                    .filter(|&&x| x == b'a')
                    .count()
            })
            .sum();
        assert!(
            journaled >= 8192,
            "{journaled} bytes of the value in the journal"
        );
    }
    let s = LsmStorage::open(&dir, Options::default()).unwrap();
    assert_eq!(s.get(b"k1").unwrap().as_deref(), Some(&b"v1"[..]));
    assert_eq!(s.get(b"k2").unwrap().as_deref(), Some(&b"v2"[..]));
    assert_eq!(s.get(b"big").unwrap(), Some(vec![b'a'; 8192]));
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

struct DropOdd;
impl CompactionFilter for DropOdd {
    fn filter(&self, _key: &[u8], value: &[u8], _last: bool) -> Decision {
        match value.first() {
            Some(v) if v % 2 == 1 => Decision::Drop,
            Some(2) => Decision::Replace(vec![20]),
            _ => Decision::Keep,
        }
    }
}

#[test]
fn compaction_filter_drops_and_replaces() {
    let dir = tmpdir("filter");
    let s = LsmStorage::open(
        &dir,
        Options {
            filter: Some(Arc::new(DropOdd)),
            ..Options::default()
        },
    )
    .unwrap();
    let mut b = WriteBatch::new();
    // Keys from 1: the key 0x00 alone is the store's own (its journal sync points).
    for i in 1..11u8 {
        b.put(vec![i], vec![i]);
    }
    s.write(b).unwrap();
    s.compact().unwrap();
    let keys: Vec<u8> = all(&s, false).iter().map(|(k, _)| k[0]).collect();
    assert_eq!(keys, vec![2, 4, 6, 8, 10]);
    assert_eq!(s.get(&[2]).unwrap(), Some(vec![20]));
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A key of a shape that straddles the long-key threshold: short, just under, exactly at,
/// just over and far over `SPILL_AT`, sharing prefixes so that several land in one bucket.
fn key_near_threshold(rng: &mut Rng) -> Vec<u8> {
    let lengths = [
        2,
        SPILL_AT - 1,
        SPILL_AT,
        SPILL_AT + 1,
        SPILL_AT + 3,
        70_000,
        140_000,
    ];
    let len = lengths[(rng.next() % lengths.len() as u64) as usize];
    let mut key = vec![0u8; len];
    key[0] = (rng.next() % 2) as u8;
    let last = key.len() - 1;
    key[last] = (rng.next() % 4) as u8;
    if rng.next().is_multiple_of(3) && len > SPILL_AT + 2 {
        // Differ after the bucket prefix only.
        key[SPILL_AT + 1] = (rng.next() % 3) as u8;
    }
    key
}

fn bound(rng: &mut Rng) -> Bound<Vec<u8>> {
    match rng.next() % 5 {
        0 => Unbounded,
        1 | 2 => Included(key_near_threshold(rng)),
        _ => Excluded(key_near_threshold(rng)),
    }
}

fn scan_all(
    s: &dyn Storage,
    start: &Bound<Vec<u8>>,
    end: &Bound<Vec<u8>>,
    rev: bool,
) -> Vec<KvPair> {
    s.scan(
        start.as_ref().map(Vec::as_slice),
        end.as_ref().map(Vec::as_slice),
        rev,
    )
    .map(|r| r.unwrap())
    .collect()
}

/// Keys longer than fjall takes (65,535 bytes) are stored, read, scanned, deleted and
/// compacted exactly as the model does, across a reopen.
#[test]
fn long_keys_match_model() {
    let dir = tmpdir("long-keys");
    let mem = MemStorage::with_filter(Arc::new(DropOdd));
    let options = || Options {
        filter: Some(Arc::new(DropOdd)),
        ..Options::default()
    };
    let mut lsm = LsmStorage::open(&dir, options()).unwrap();
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    for round in 0..60 {
        let mut batch = WriteBatch::new();
        for _ in 0..(rng.next() % 5 + 1) {
            let key = key_near_threshold(&mut rng);
            if rng.next().is_multiple_of(4) {
                batch.delete(key);
            } else {
                batch.put(key, vec![(rng.next() % 6) as u8, round as u8]);
            }
        }
        lsm.write(batch.clone()).unwrap();
        mem.write(batch).unwrap();
        for _ in 0..3 {
            let probe = key_near_threshold(&mut rng);
            assert_eq!(
                lsm.get(&probe).unwrap(),
                mem.get(&probe).unwrap(),
                "get at round {round}"
            );
            let (start, end, rev) = (
                bound(&mut rng),
                bound(&mut rng),
                rng.next().is_multiple_of(2),
            );
            assert_eq!(
                scan_all(&lsm, &start, &end, rev),
                scan_all(&mem, &start, &end, rev),
                "scan at round {round}"
            );
        }
        if round % 20 == 19 {
            lsm.compact().unwrap();
            mem.compact().unwrap();
        }
        if round == 30 {
            drop(lsm);
            lsm = LsmStorage::open(&dir, options()).unwrap();
        }
    }
    let everything = |s: &dyn Storage, rev| scan_all(s, &Unbounded, &Unbounded, rev);
    assert_eq!(everything(&lsm, false), everything(&mem, false));
    assert_eq!(everything(&lsm, true), everything(&mem, true));
    drop(lsm);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every directory between the data directory and a keyspace's own folder (which lsm-tree
/// fsyncs itself) is fsynced by an open, so a power loss cannot drop a keyspace folder whose
/// writes were acknowledged (tests/python/test_power_loss.py shows the loss without it).
#[test]
fn open_syncs_every_directory_above_the_keyspace_folders() {
    let dir = tmpdir("syncdirs");
    let store = LsmStorage::open(&dir, Options::default()).unwrap();
    drop(store);
    let synced = sync_directories(&dir).unwrap();
    let keyspaces = dir.join("keyspaces");
    let folders: Vec<_> = std::fs::read_dir(&keyspaces)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(folders.len() >= 2, "meta and data keyspaces: {folders:?}");
    for folder in folders {
        let parent = folder.parent().unwrap().to_path_buf();
        assert!(
            synced.contains(&parent),
            "{parent:?} not synced: {synced:?}"
        );
    }
    assert!(synced.contains(&dir), "{synced:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The vendored lsm-tree orders memtable keys with its own word-at-a-time compare (a
/// Peregrine patch): it must be the byte order, at every length and position of a difference.
#[test]
fn memtable_key_compare_is_the_byte_order() {
    let mut keys: Vec<Vec<u8>> = vec![vec![], vec![0], vec![0, 0], vec![0x7f; 17], vec![0x80; 9]];
    let mut rng = Rng(7);
    for _ in 0..300 {
        let len = (rng.next() % 26) as usize;
        // Few distinct byte values, so that keys share long prefixes.
        keys.push(
            (0..len)
                .map(|_| [0u8, 1, 0x7f, 0x80, 0xff][(rng.next() % 5) as usize])
                .collect(),
        );
    }
    for a in &keys {
        for b in &keys {
            assert_eq!(lsm_tree::compare_user_keys(a, b), a.cmp(b), "{a:?} {b:?}");
        }
    }
}

/// A memtable key for [`memtable_holds_concurrent_inserts_in_key_order`]: few distinct bytes (so
/// keys share long prefixes and differ at every position, inside the 16 bytes the skip list's
/// nodes hold and past them), lengths 1-40 (an empty key is refused), and sometimes trailing
/// zeros (a key and the same key with zeros appended have equal zero-padded first bytes).
fn memtable_test_key(rng: &mut Rng) -> Vec<u8> {
    let len = 1 + (rng.next() % 40) as usize;
    let mut k: Vec<u8> = (0..len)
        .map(|_| [0u8, 1, 0x80, 0xff][(rng.next() % 4) as usize])
        .collect();
    if rng.next().is_multiple_of(4) {
        k.extend(std::iter::repeat_n(0, (rng.next() % 4) as usize));
    }
    k
}

/// The order of a memtable's items: user key ascending, then newest (highest seqno) first.
fn memtable_order(a: (&[u8], u64), b: (&[u8], u64)) -> std::cmp::Ordering {
    a.0.cmp(b.0).then(b.1.cmp(&a.1))
}

/// The vendored lsm-tree keys its memtable's skip list by the internal key and the user key's
/// first 16 bytes held in the node (a Peregrine patch, `vendor/lsm-tree/src/memtable/key.rs`).
/// Four writers insert at once (distinct sequence numbers; user keys shared between them) while
/// two readers check, for keys already inserted, that a point read at that key's sequence
/// number finds its value, and that a whole iteration is in key order; at the end the memtable
/// holds exactly what was inserted, in key order. Fails when the nodes' bytes order keys
/// otherwise (little-endian words, or a head not zero-padded).
#[test]
fn memtable_holds_concurrent_inserts_in_key_order() {
    use std::sync::atomic::{AtomicUsize, Ordering::*};
    const WRITERS: usize = 4;
    const PER_WRITER: usize = 5_000;
    /// Counts a writer out when it ends, returning or panicking, so the readers stop.
    struct Leaves<'a>(&'a AtomicUsize);
    impl Drop for Leaves<'_> {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Release);
        }
    }
    let memtable = lsm_tree::Memtable::new(0);
    // Writer w's i-th item: its key, seqno 1 + w * PER_WRITER + i, value "w.i".
    let keys: Vec<Vec<Vec<u8>>> = (0..WRITERS)
        .map(|w| {
            let mut rng = Rng(0x9e37_79b9_7f4a_7c15 + w as u64);
            (0..PER_WRITER)
                .map(|_| memtable_test_key(&mut rng))
                .collect()
        })
        .collect();
    let seqno = |w: usize, i: usize| (1 + w * PER_WRITER + i) as u64;
    let value = |w: usize, i: usize| format!("{w}.{i}").into_bytes();
    let done: Vec<AtomicUsize> = (0..WRITERS).map(|_| AtomicUsize::new(0)).collect();
    let writing = AtomicUsize::new(WRITERS);
    std::thread::scope(|s| {
        for w in 0..WRITERS {
            let (memtable, keys, done, writing) = (&memtable, &keys, &done, &writing);
            s.spawn(move || {
                let _leaves = Leaves(writing);
                for (i, k) in keys[w].iter().enumerate() {
                    memtable.insert(lsm_tree::InternalValue::from_components(
                        k.clone(),
                        value(w, i),
                        seqno(w, i),
                        lsm_tree::ValueType::Value,
                    ));
                    done[w].store(i + 1, Release);
                }
            });
        }
        for r in 0..2u64 {
            let (memtable, keys, done, writing) = (&memtable, &keys, &done, &writing);
            s.spawn(move || {
                let mut rng = Rng(0x2545_f491_4f6c_dd1d + r);
                let mut rounds = 0u64;
                while writing.load(Acquire) > 0 || rounds < 20 {
                    rounds += 1;
                    for _ in 0..200 {
                        let w = (rng.next() % WRITERS as u64) as usize;
                        let n = done[w].load(Acquire);
                        if n == 0 {
                            continue;
                        }
                        let i = (rng.next() % n as u64) as usize;
                        let got = memtable.get(&keys[w][i], seqno(w, i) + 1);
                        let got = got.unwrap_or_else(|| panic!("{:?} not found", keys[w][i]));
                        assert_eq!(&*got.value, value(w, i).as_slice(), "{:?}", keys[w][i]);
                    }
                    if rounds.is_multiple_of(10) {
                        let listed: Vec<_> = memtable.iter().collect();
                        for pair in listed.windows(2) {
                            let (a, b) = (&pair[0].key, &pair[1].key);
                            assert_eq!(
                                memtable_order((&a.user_key, a.seqno), (&b.user_key, b.seqno)),
                                std::cmp::Ordering::Less,
                                "{a:?} listed before {b:?}"
                            );
                        }
                    }
                }
            });
        }
    });
    let mut model: Vec<(&[u8], u64, Vec<u8>)> = (0..WRITERS)
        .flat_map(|w| (0..PER_WRITER).map(move |i| (w, i)))
        .map(|(w, i)| (keys[w][i].as_slice(), seqno(w, i), value(w, i)))
        .collect();
    model.sort_by(|a, b| memtable_order((a.0, a.1), (b.0, b.1)));
    let listed: Vec<(Vec<u8>, u64, Vec<u8>)> = memtable
        .iter()
        .map(|v| (v.key.user_key.to_vec(), v.key.seqno, v.value.to_vec()))
        .collect();
    assert_eq!(listed.len(), model.len());
    for (l, m) in listed.iter().zip(&model) {
        assert_eq!((l.0.as_slice(), l.1, &l.2), (m.0, m.1, &m.2));
    }
}

/// The vendored memtable's `insert_onto` (a Peregrine patch, `vendor/lsm-tree/src/memtable`,
/// over `SkipMap::insert_beside` in `vendor/crossbeam-skiplist`) searches the skip list once
/// to find a user key's newest version and to insert a newer one right before it. Against a
/// model: each insert is shown exactly the version `get(key, SeqNo::MAX)` answered before it
/// (tombstones too), and the memtable ends up holding every item, in key order. Sequence
/// numbers mostly rise, as the store's inserts take them, but a quarter go below versions
/// already held (the single search's position is then not the new key's: the insert must
/// search again). Writers at once (distinct sequence numbers) end in the same order too.
#[test]
fn memtable_inserts_onto_the_newest_version_match_a_model() {
    let memtable = lsm_tree::Memtable::new(0);
    let mut rng = Rng(0x5851_f42d_4c95_7f2d);
    let mut model: Vec<(Vec<u8>, u64, lsm_tree::ValueType, Vec<u8>)> = Vec::new();
    let mut next_seqno = 1_000_000u64;
    for i in 0..20_000u64 {
        let key = memtable_test_key(&mut rng);
        let seqno = if rng.next().is_multiple_of(4) {
            rng.next() % next_seqno
        } else {
            next_seqno += 1 + rng.next() % 3;
            next_seqno
        };
        if model.iter().any(|m| m.0 == key && m.1 == seqno) {
            continue;
        }
        let kind = if rng.next().is_multiple_of(8) {
            lsm_tree::ValueType::Tombstone
        } else {
            lsm_tree::ValueType::Value
        };
        let value = if kind == lsm_tree::ValueType::Value {
            format!("v{i}").into_bytes()
        } else {
            Vec::new()
        };
        let expected = memtable.get(&key, lsm_tree::SeqNo::MAX);
        let newest = model
            .iter()
            .filter(|m| m.0 == key)
            .max_by_key(|m| m.1)
            .map(|m| (m.1, m.2, m.3.clone()));
        assert_eq!(
            expected
                .as_ref()
                .map(|v| (v.key.seqno, v.key.value_type, v.value.to_vec())),
            newest
        );
        let hash = lsm_tree::hash64(&key);
        let mut shown = None;
        memtable.insert_onto(
            lsm_tree::InternalValue::from_components(key.clone(), [], seqno, kind).key,
            hash,
            |prev| {
                shown = Some(prev.map(|v| (v.key.seqno, v.key.value_type, v.value.to_vec())));
                value.clone().into()
            },
        );
        assert_eq!(shown, Some(newest), "{key:?} at {seqno}");
        model.push((key, seqno, kind, value));
    }
    model.sort_by(|a, b| memtable_order((&a.0, a.1), (&b.0, b.1)));
    let listed: Vec<_> = memtable
        .iter()
        .map(|v| {
            (
                v.key.user_key.to_vec(),
                v.key.seqno,
                v.key.value_type,
                v.value.to_vec(),
            )
        })
        .collect();
    assert_eq!(listed, model);

    const WRITERS: u64 = 4;
    let memtable = lsm_tree::Memtable::new(1);
    let written: Vec<Vec<(Vec<u8>, u64)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..WRITERS)
            .map(|w| {
                let memtable = &memtable;
                s.spawn(move || {
                    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 + w);
                    (0..5_000u64)
                        .map(|i| {
                            let key = memtable_test_key(&mut rng);
                            let seqno = 1 + i * WRITERS + w;
                            let hash = lsm_tree::hash64(&key);
                            let k = lsm_tree::InternalValue::from_components(
                                key.clone(),
                                [],
                                seqno,
                                lsm_tree::ValueType::Value,
                            )
                            .key;
                            memtable.insert_onto(k, hash, |prev| {
                                if let Some(p) = prev {
                                    assert_eq!(&*p.key.user_key, key.as_slice());
                                }
                                b"x".to_vec().into()
                            });
                            (key, seqno)
                        })
                        .collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut model: Vec<(Vec<u8>, u64)> = written.into_iter().flatten().collect();
    model.sort_by(|a, b| memtable_order((&a.0, a.1), (&b.0, b.1)));
    let listed: Vec<_> = memtable
        .iter()
        .map(|v| (v.key.user_key.to_vec(), v.key.seqno))
        .collect();
    assert_eq!(listed, model);
}

/// The vendored memtable's point read (`Memtable::get`, a Peregrine patch in
/// `vendor/lsm-tree/src/memtable`) searches its skip list with a test of the version it looks
/// for (`MemtableKey::reaches`, over `SkipMap::lower_bound_by` in `vendor/crossbeam-skiplist`)
/// instead of a key built for it. Against a model, at every kind of sequence number: a read at
/// `s` answers the newest version below `s` of exactly its key (not of a key it is a prefix
/// of, nor of one zero-padded to the same first bytes), `None` when there is none. Fails when
/// the test's sequence number is off by one or its key compare stops at the first 16 bytes.
#[test]
fn memtable_point_reads_at_any_seqno_match_a_model() {
    let memtable = lsm_tree::Memtable::new(0);
    let mut rng = Rng(0x2f69_3bd5_0c1e_a7f3);
    let mut keys: Vec<Vec<u8>> = (0..400).map(|_| memtable_test_key(&mut rng)).collect();
    keys.sort();
    keys.dedup();
    let mut model: Vec<(Vec<u8>, u64, Vec<u8>)> = Vec::new();
    for i in 0..6_000u64 {
        let key = keys[(rng.next() % keys.len() as u64) as usize].clone();
        let seqno = 1 + rng.next() % 5_000;
        if model.iter().any(|m| m.0 == key && m.1 == seqno) {
            continue;
        }
        let value = format!("v{i}").into_bytes();
        memtable.insert(lsm_tree::InternalValue::from_components(
            key.clone(),
            value.clone(),
            seqno,
            lsm_tree::ValueType::Value,
        ));
        model.push((key, seqno, value));
    }
    // Keys held, and keys not held (a third of the probes): fresh random ones, and held ones
    // with a byte cut off or a zero appended.
    for _ in 0..30_000 {
        let held = &keys[(rng.next() % keys.len() as u64) as usize];
        let key = match rng.next() % 6 {
            0 => memtable_test_key(&mut rng),
            1 if held.len() > 1 => held[..held.len() - 1].to_vec(),
            1 => [held.as_slice(), &[0]].concat(),
            _ => held.clone(),
        };
        let seqno = match rng.next() % 4 {
            0 => lsm_tree::SeqNo::MAX,
            1 => 0,
            _ => rng.next() % 5_002,
        };
        let expected = model
            .iter()
            .filter(|m| m.0 == key && m.1 < seqno)
            .max_by_key(|m| m.1)
            .map(|m| (m.1, m.2.clone()));
        let got = memtable
            .get(&key, seqno)
            .map(|v| (v.key.seqno, v.value.to_vec()));
        assert_eq!(got, expected, "{key:?} at {seqno}");
    }
}

/// A [`Merge`] for tests: a value is its kind (`p` partial, `c` complete) and a payload; a
/// merge appends the newer payload to the older value, so a read shows every write since the
/// last complete value (or deletion), in order.
struct Concat;
impl Merge for Concat {
    fn is_partial(&self, _key: &[u8], value: &[u8]) -> bool {
        value.first() == Some(&b'p')
    }
    fn merge(&self, _key: &[u8], newer: &[u8], older: &[u8]) -> Vec<u8> {
        let mut v = older.to_vec();
        v.extend_from_slice(&newer[1..]);
        v
    }
    fn complete(&self, _key: &[u8], partial: &[u8]) -> Vec<u8> {
        let mut v = partial.to_vec();
        v[0] = b'c';
        v
    }
}

/// A value read as the complete one it stands for (reads return a partial value nothing older
/// completes as written).
fn read_as_complete(mut v: Vec<u8>) -> Vec<u8> {
    if v.first() == Some(&b'p') {
        v[0] = b'c';
    }
    v
}

fn completed(items: Vec<KvPair>) -> Vec<KvPair> {
    items
        .into_iter()
        .map(|(k, v)| (k, read_as_complete(v.to_vec()).into()))
        .collect()
}

/// A [`Merge`] for tests that, as the engine's row merge, may meet a version twice: a value is
/// its kind (`p` partial, `c` complete) and a set of payload bytes (sorted, once each); a merge
/// takes the union, so merging a version onto one that already holds it changes nothing.
struct Union;
impl Merge for Union {
    fn is_partial(&self, _key: &[u8], value: &[u8]) -> bool {
        value.first() == Some(&b'p')
    }
    fn merge(&self, _key: &[u8], newer: &[u8], older: &[u8]) -> Vec<u8> {
        let mut set: Vec<u8> = older[1..].iter().chain(&newer[1..]).copied().collect();
        set.sort_unstable();
        set.dedup();
        let mut v = vec![older[0]];
        v.extend(set);
        v
    }
    fn complete(&self, _key: &[u8], partial: &[u8]) -> Vec<u8> {
        let mut v = partial.to_vec();
        v[0] = b'c';
        v
    }
}

/// Partial values (blind writes) read, scanned both ways, flushed, compacted and reopened give
/// exactly what a store completing each one as it is written gives: random batches of
/// complete values, partial ones and deletions over a few short and long keys, with memtable
/// flushes (partial values in new tables above their older versions), major compactions and
/// reopenings in between.
#[test]
fn partial_values_match_a_model_completing_them_on_write() {
    partial_values_match_the_model(Arc::new(Concat), false, "merge-model");
}

/// The same with `memtable_partial_rows`: a partial value written onto the memtable's partial
/// version of its key is merged with it and stays partial (the older version stays in the
/// memtable below it, so scans meet it twice: the merge must be idempotent, as the engine's
/// row merge is and [`Union`] is).
#[test]
fn partial_values_kept_partial_in_the_memtable_match_the_model() {
    partial_values_match_the_model(Arc::new(Union), true, "merge-model-partial");
}

fn partial_values_match_the_model(merge: Arc<dyn Merge>, partial_rows: bool, name: &str) {
    let dir = tmpdir(name);
    let options = || Options {
        merge: Some(merge.clone()),
        memtable_partial_rows: partial_rows,
        ..Options::default()
    };
    let mut lsm = LsmStorage::open(&dir, options()).unwrap();
    assert!(lsm.merges());
    let mem = MemStorage::with_filter_and_merge(Arc::new(DropOdd), merge.clone());
    let key_of = |n: u64| {
        let mut k = vec![b'k', (n % 6) as u8];
        if n.is_multiple_of(7) {
            k.resize(SPILL_AT + 3, b'x');
        }
        k
    };
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    for round in 0..120 {
        let mut batch = WriteBatch::new();
        for _ in 0..(rng.next() % 4 + 1) {
            let key = key_of(rng.next() % 14);
            let payload = (b'a' + (rng.next() % 26) as u8) as char;
            match rng.next() % 8 {
                0 => batch.delete(key),
                1 | 2 => batch.put(key, format!("c{payload}").into_bytes()),
                _ => batch.put(key, format!("p{payload}").into_bytes()),
            }
        }
        lsm.write(batch.clone()).unwrap();
        mem.write(batch).unwrap();
        match round % 40 {
            9 | 19 | 29 => {
                let open = lsm.shared.current().unwrap();
                open.data.rotate_memtable_and_wait().unwrap();
            }
            24 => lsm.compact().unwrap(),
            39 => {
                drop(lsm);
                lsm = LsmStorage::open(&dir, options()).unwrap();
            }
            _ => {}
        }
        for n in 0..14 {
            let k = key_of(n);
            assert_eq!(
                lsm.get(&k).unwrap().map(read_as_complete),
                mem.get(&k).unwrap(),
                "get at round {round}"
            );
        }
        assert_eq!(
            completed(all(&lsm, false)),
            all(&mem, false),
            "scan at round {round}"
        );
        assert_eq!(
            completed(all(&lsm, true)),
            all(&mem, true),
            "reverse scan at round {round}"
        );
    }
    drop(lsm);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The table files of a store's keyspaces (not of fjall's own keyspace of keyspaces, "0").
fn table_files(dir: &std::path::Path) -> usize {
    let Ok(keyspaces) = std::fs::read_dir(dir.join("keyspaces")) else {
        return 0;
    };
    keyspaces
        .flatten()
        .filter(|k| k.file_name() != "0")
        .filter_map(|k| std::fs::read_dir(k.path().join("tables")).ok())
        .map(|tables| tables.count())
        .sum()
}

/// Tables a compaction replaced leave the disk while the store stands idle: fjall dropped the
/// table versions holding them only when a memtable rotated, so a store that loaded data and
/// then stood idle kept them (1.8 GB of files for 1.16 GB of live tables after a 1M-row load).
#[test]
fn tables_compacted_away_leave_the_disk_while_idle() {
    let dir = tmpdir("idle-versions");
    let s = LsmStorage::open(&dir, Options::default()).unwrap();
    for round in 0..4u32 {
        let mut b = WriteBatch::new();
        for i in 1..500u32 {
            b.put(i.to_be_bytes().to_vec(), round.to_be_bytes().repeat(64));
        }
        s.write(b).unwrap();
        s.flush().unwrap();
    }
    s.compact().unwrap();
    let live = || s.stats().unwrap().tables_per_level.iter().sum::<usize>();
    assert_eq!(live(), 1);
    // Nothing is written from here on: only the store's own background work may drop them.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while table_files(&dir) > live() {
        assert!(
            std::time::Instant::now() < deadline,
            "{} table files on disk for {} live tables after 60 s idle",
            table_files(&dir),
            live()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        s.get(&7u32.to_be_bytes()).unwrap(),
        Some(3u32.to_be_bytes().repeat(64))
    );
}

/// The tables' pinned block indexes and Bloom filters are charged to the block cache (vendored
/// lsm-tree, `Cache::charge_pinned`): with the cache full, cached blocks and pinned metadata
/// together stay within the configured size, and a table's charge is returned when it goes.
#[test]
fn pinned_indexes_and_filters_are_charged_to_the_block_cache() {
    let dir = tmpdir("pinned-charge");
    let cache = 2 << 20;
    let s = LsmStorage::open(
        &dir,
        Options {
            cache_bytes: cache,
            ..Options::default()
        },
    )
    .unwrap();
    let keys = 80_000u32;
    // Four tables of ~2.3 MB each: the blocks are 4x the cache.
    for part in 0..4 {
        let mut b = WriteBatch::new();
        for i in (part..keys).step_by(4) {
            b.put(i.to_be_bytes().to_vec(), vec![i as u8; 100]);
        }
        s.write(b).unwrap();
        s.flush().unwrap();
    }
    for i in 0..keys {
        assert_eq!(s.get(&i.to_be_bytes()).unwrap(), Some(vec![i as u8; 100]));
    }
    let stats = s.stats().unwrap();
    // 10 bits a key of filters alone.
    assert!(stats.pinned_bytes >= u64::from(keys) * 10 / 8, "{stats:?}");
    assert!(
        stats.block_cache_bytes + stats.pinned_bytes <= cache,
        "{} bytes of blocks and {} pinned in a {cache}-byte cache",
        stats.block_cache_bytes,
        stats.pinned_bytes
    );
    // The cache still fills what is left.
    assert!(
        stats.block_cache_bytes >= (cache - stats.pinned_bytes) * 9 / 10,
        "{stats:?}"
    );
    // Every key deleted and compacted away: one table is left (the store's sync point), and
    // its charge alone once the store's background work has dropped the replaced tables.
    let mut b = WriteBatch::new();
    for i in 0..keys {
        b.delete(i.to_be_bytes().to_vec());
    }
    s.write(b).unwrap();
    s.flush().unwrap();
    s.compact().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let stats = s.stats().unwrap();
        if table_files(&dir) == 1 && stats.pinned_bytes < 1024 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{} table files and {} pinned bytes left after 60 s: {stats:?}",
            table_files(&dir),
            stats.pinned_bytes
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A batch holding a partial value becomes one op per key: a repeated key's later partial
/// value merged onto its earlier op (small batches and large ones, which take another path);
/// a batch of distinct keys stays as it was, in order.
#[test]
fn coalescing_leaves_one_op_per_key() {
    for size in [3usize, 40] {
        let mut distinct = WriteBatch::new();
        for i in 0..size {
            distinct.put(vec![b'k', i as u8], b"px".to_vec());
        }
        let before = distinct.ops.clone();
        distinct.coalesce(&Concat);
        assert_eq!(distinct.ops, before);

        let mut repeated = WriteBatch::new();
        repeated.put(b"a".to_vec(), b"c1".to_vec());
        for i in 0..size {
            repeated.put(vec![b'k', i as u8], b"px".to_vec());
        }
        repeated.put(b"a".to_vec(), b"p2".to_vec());
        repeated.coalesce(&Concat);
        assert_eq!(repeated.ops.len(), size + 1);
        assert_eq!(
            repeated.ops[0],
            (b"a".to_vec(), Some(b"c12".to_vec().into()))
        );
    }
}

/// A value built in place holds exactly what its writer wrote, inline (up to 20 bytes) or not;
/// a writer that answers it wrote fewer bytes than it asked for (the rest would be
/// uninitialised) or more (it was handed `len`) gets no value. Written with
/// `put_value`, it reads back as a copied one does, in the LSM store and the model, and a
/// partial one is merged onto the stored value as a copied one is.
#[test]
fn values_built_in_place_read_back_as_written() {
    for len in [0usize, 1, 20, 21, 4096] {
        let want: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
        let v = Value::build(len, |buf| {
            assert_eq!(buf.len(), len);
            buf.copy_from_slice(&want);
            len
        });
        assert_eq!(v.as_deref(), Some(want.as_slice()));
        if len > 0 {
            assert!(Value::build(len, |_| len - 1).is_none());
        }
    }
    assert!(Value::build(4, |buf| {
        buf.copy_from_slice(b"abcd");
        5
    })
    .is_none());

    let dir = tmpdir("built-values");
    let options = Options {
        merge: Some(Arc::new(Concat)),
        ..Options::default()
    };
    let lsm = LsmStorage::open(&dir, options).unwrap();
    let mem = MemStorage::with_merge(Arc::new(Concat));
    let stores: [&dyn Storage; 2] = [&lsm, &mem];
    for store in stores {
        let mut b = WriteBatch::new();
        b.put(b"k1".to_vec(), b"c-copied".to_vec());
        let built = Value::build(4000, |buf| {
            buf.fill(b'x');
            buf[0] = b'c';
            4000
        })
        .unwrap();
        b.put_value(b"k2".to_vec(), built);
        store.write(b).unwrap();
        let mut b = WriteBatch::new();
        b.put_value(b"k1".to_vec(), Value::from(&b"p-more"[..]));
        store.write(b).unwrap();
        assert_eq!(store.get(b"k1").unwrap().unwrap(), b"c-copied-more");
        let k2 = store.get(b"k2").unwrap().unwrap();
        assert_eq!((k2.len(), k2[0], k2[3999]), (4000, b'c', b'x'));
    }
}

/// Point reads through tables' block indexes, which a Peregrine patch narrows by each restart
/// head's eight bytes after the heads' shared prefix (`HeadWords`): keys that differ only past
/// those bytes, in zero bytes where the words pad, that are prefixes of one another, of the
/// shared prefix, or outside it, read as a model says, before and after a major compaction.
#[test]
fn point_reads_through_narrowed_index_seeks_match_a_model() {
    let dir = tmpdir("index-words");
    let s = LsmStorage::open(&dir, Options::default()).unwrap();
    let mut model = std::collections::BTreeMap::new();
    let mut rng = Rng(0x5EED_1DE5);
    let alphabet = [0u8, 1, 0x7f, 0x80, 0xff];
    let key = |rng: &mut Rng, prefixed: bool| {
        let mut k = if prefixed {
            b"tbl\x00".to_vec()
        } else {
            vec![[b'a', b't', b'z'][(rng.next() % 3) as usize]]
        };
        let len = 1 + (rng.next() % 14) as usize;
        k.extend((0..len).map(|_| alphabet[(rng.next() % 5) as usize]));
        k
    };
    // Table 1 holds only keys under the shared prefix; tables 2 and 3 mix them with keys
    // outside it and overwrite some (newer versions in newer tables).
    for (round, outside) in [(0u8, false), (1, true), (2, true)] {
        let mut b = WriteBatch::new();
        for _ in 0..1500 {
            let prefixed = !outside || !rng.next().is_multiple_of(3);
            let k = key(&mut rng, prefixed);
            let v = vec![round; 300 + (rng.next() % 400) as usize];
            model.insert(k.clone(), v.clone());
            b.put(k, v);
        }
        s.write(b).unwrap();
        s.flush().unwrap();
    }
    let mut probes: Vec<Vec<u8>> = model.keys().cloned().collect();
    for k in model.keys().take(400).cloned().collect::<Vec<_>>() {
        let mut longer = k.clone();
        longer.push(0);
        probes.push(longer);
        probes.push(k[..k.len() - 1].to_vec());
    }
    for _ in 0..2000 {
        let prefixed = !rng.next().is_multiple_of(4);
        probes.push(key(&mut rng, prefixed));
    }
    probes.extend([
        b"t".to_vec(),
        b"tb".to_vec(),
        b"tbl".to_vec(),
        b"tbl\x00".to_vec(),
    ]);
    probes.extend([b"tbm".to_vec(), vec![0u8, 0], vec![0xff; 20]]);
    let check = |when: &str| reads_match_model(&s, &probes, &model, when);
    check("three tables");
    s.compact().unwrap();
    check("after a major compaction");
    // The last level's tables keep their whole index and Bloom filter pinned: at least the
    // filter's 10 bits a key (fjall's default partitions both there and pins neither).
    let stats = s.stats().unwrap();
    assert!(
        stats.tables_per_level[..6].iter().all(|&n| n == 0),
        "{stats:?}"
    );
    assert!(
        stats.pinned_bytes >= stats.approximate_items * 10 / 8,
        "{} pinned bytes for {} keys",
        stats.pinned_bytes,
        stats.approximate_items
    );
}

/// Asserts that `s` answers each of `probes` as `model` holds it.
fn reads_match_model(
    s: &LsmStorage,
    probes: &[Vec<u8>],
    model: &std::collections::BTreeMap<Vec<u8>, Vec<u8>>,
    when: &str,
) {
    for p in probes {
        assert_eq!(
            s.get(p).unwrap().as_ref(),
            model.get(p),
            "{when}: key {p:?}"
        );
    }
}

/// Keys shaped as Peregrine's (a shared prefix, then an evenly spread eight-byte token, then
/// the rest) are found through the index's radix table and block handles (vendored lsm-tree,
/// `HeadWords`, `FullBlockIndex::block_of`): every key written, and no absent key, whether its
/// token falls between two blocks' last keys, equals one, or lies before or after them all.
/// Fails when the radix window or the decided block is off by one.
#[test]
fn point_reads_of_token_keys_through_decided_blocks_match_a_model() {
    let dir = tmpdir("token-keys");
    let s = LsmStorage::open(&dir, Options::default()).unwrap();
    let mut model = std::collections::BTreeMap::new();
    let mut rng = Rng(0x70CE_4E75);
    let key = |token: u64, rest: u64| {
        let mut k = b"tbl\x00".to_vec();
        k.extend(token.to_be_bytes());
        k.extend(&rest.to_be_bytes()[..1 + (rest % 4) as usize]);
        k
    };
    // A middle band of tokens, so that keys before and after every block exist to probe.
    let token = |rng: &mut Rng| (1 << 62) + rng.next() % (1 << 63);
    let mut written = Vec::new();
    for round in 0u8..3 {
        let mut b = WriteBatch::new();
        for i in 0..4000 {
            // A third of each later round overwrites earlier keys (newer in newer tables).
            let k = if round > 0 && i % 3 == 0 {
                written[(rng.next() % written.len() as u64) as usize]
            } else {
                (token(&mut rng), rng.next())
            };
            written.push(k);
            let v = vec![round; 200 + (rng.next() % 500) as usize];
            model.insert(key(k.0, k.1), v.clone());
            b.put(key(k.0, k.1), v);
        }
        s.write(b).unwrap();
        s.flush().unwrap();
    }
    let mut probes: Vec<Vec<u8>> = model.keys().cloned().collect();
    for &(t, rest) in written.iter().step_by(7) {
        probes.push(key(t, rest.wrapping_add(1)));
        probes.push(key(t + 1, rest));
        probes.push(key(t - 1, rest));
        let mut longer = key(t, rest);
        longer.push(0);
        probes.push(longer);
    }
    for _ in 0..3000 {
        probes.push(key(token(&mut rng), rng.next()));
    }
    probes.extend([
        key(0, 0),
        key(1 << 62, 0),
        key(u64::MAX, 7),
        b"tbl".to_vec(),
    ]);
    probes.extend([b"tbl\x00".to_vec(), b"tbl\x01".to_vec(), vec![0xff; 20]]);
    let check = |when: &str| reads_match_model(&s, &probes, &model, when);
    check("three tables");
    s.compact().unwrap();
    check("after a major compaction");
}

/// Tables written now carry blocked Bloom filters (vendored lsm-tree, `table/filter/blocked.rs`):
/// every key written is found, and reads of absent keys are mostly answered by the filter.
#[test]
fn table_filters_find_every_key_and_skip_most_absent_ones() {
    use fjall::AbstractTree;
    let dir = tmpdir("blocked-filter");
    let lsm = LsmStorage::open(&dir, Options::default()).unwrap();
    for chunk in 0..20u32 {
        let mut b = WriteBatch::new();
        for i in chunk * 1000..(chunk + 1) * 1000 {
            b.put(
                format!("present-{i}").into_bytes(),
                i.to_be_bytes().to_vec(),
            );
        }
        lsm.write(b).unwrap();
    }
    lsm.compact().unwrap();
    let tree = lsm.shared.current().unwrap().data.tree.clone();
    assert!(tree.table_count() >= 1, "nothing was flushed");
    for i in 0..20_000u32 {
        let got = lsm.get(format!("present-{i}").as_bytes()).unwrap();
        assert_eq!(got.as_deref(), Some(&i.to_be_bytes()[..]), "key {i}");
    }
    let m = tree.metrics();
    let (queries, skipped) = (m.filter_queries(), m.io_skipped_by_filter());
    for i in 0..20_000u32 {
        assert_eq!(lsm.get(format!("absent-{i}").as_bytes()).unwrap(), None);
    }
    let queries = m.filter_queries() - queries;
    let passed = queries - (m.io_skipped_by_filter() - skipped);
    assert!(queries >= 20_000, "{queries} filter queries");
    // 10 bits a key: about 1% false positives; a filter that answers "maybe" to all fails.
    assert!(
        passed * 50 < queries,
        "{passed} of {queries} absent keys passed the filter"
    );
}

/// A store that takes no write for an `idle_compaction` period merges the tables a burst of
/// writes left in L0, below the leveled strategy's threshold, into the level below (with it
/// off, or while writes keep coming, they stay in L0), and every key keeps its newest value.
#[test]
fn an_idle_store_merges_its_l0_tables() {
    let dir = tmpdir("idle-l0");
    let lsm = LsmStorage::open(
        &dir,
        Options {
            idle_compaction: Some(Duration::from_millis(200)),
            ..Options::default()
        },
    )
    .unwrap();
    let key = |k: u32| format!("key{k:05}").into_bytes();
    let value = |round: u32, k: u32| format!("round{round}-{k}").into_bytes();
    for round in 0..4 {
        let mut batch = WriteBatch::new();
        for k in (round * 100)..2_000 {
            batch.put(key(k), value(round, k));
        }
        lsm.write(batch).unwrap();
        lsm.flush().unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    let stats = loop {
        let stats = lsm.stats().unwrap();
        if stats.idle_compactions >= 1 && stats.tables_per_level[0] == 0 {
            break stats;
        }
        assert!(
            Instant::now() < deadline,
            "no idle compaction within 60 s: {stats:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        stats.tables_per_level.iter().sum::<usize>() >= 1,
        "{stats:?}"
    );
    for k in 0..2_000 {
        let newest = (k / 100).min(3);
        assert_eq!(lsm.get(&key(k)).unwrap(), Some(value(newest, k)), "key {k}");
    }
}

/// Reads and writes do not wait for the tree's version-history lock (vendored lsm-tree,
/// `PATCH (Peregrine, lock-free latest version)`): a flush or compaction holds it for writing
/// while it writes a version's manifest (several fsyncs), and every point read and write
/// waited for it on the request thread (bench/results/2026-12-01/write-stalls-s33). With the
/// lock held by another thread, a get, a write and a get of the written value all complete.
#[test]
fn reads_and_writes_go_on_while_the_version_history_lock_is_held() {
    use fjall::AbstractTree;
    let dir = tmpdir("version-lock");
    let s = Arc::new(LsmStorage::open(&dir, Options::default()).unwrap());
    let mut b = WriteBatch::new();
    b.put(b"before".to_vec(), b"flushed".to_vec());
    s.write(b).unwrap();
    s.flush().unwrap();
    let tree = s.shared.current().unwrap().data.tree.clone();
    let (held, holding) = std::sync::mpsc::channel();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let holder = std::thread::spawn(move || {
        let _lock = tree.get_version_history_lock();
        held.send(()).unwrap();
        let _ = released.recv();
    });
    holding.recv().unwrap();
    let (done, finished) = std::sync::mpsc::channel();
    let store = s.clone();
    let worker = std::thread::spawn(move || {
        let before = store.get(b"before").unwrap();
        let mut b = WriteBatch::new();
        b.put(b"during".to_vec(), b"written".to_vec());
        store.write(b).unwrap();
        done.send((before, store.get(b"during").unwrap())).unwrap();
    });
    let got = finished.recv_timeout(Duration::from_secs(20));
    release.send(()).unwrap();
    holder.join().unwrap();
    worker.join().unwrap();
    let (before, during) = got.expect("a read or write waited for the version-history lock");
    assert_eq!(before.as_deref(), Some(&b"flushed"[..]));
    assert_eq!(during.as_deref(), Some(&b"written"[..]));
}
