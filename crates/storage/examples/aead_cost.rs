//! What opening (and sealing) one block costs with AES-256-GCM, by library (issue 13 item 5).
//!
//! ```text
//! cargo build --release -p storage --example aead_cost
//! target/release/examples/aead_cost [ROUNDS] [SIZE...]    # defaults: 3 rounds; 512 1024 2048 4711 16384 65536
//! target/release/examples/aead_cost reads DIR [RECORDS] [CACHE_MIB] [READS]   # 200000 64 100000
//! ```
//! `reads` answers which blocks a point read opens: it fills an encrypted store at DIR with
//! YCSB-shaped rows (the engine's key layout, ~40 B keys; 10 fields of 100 B with per-cell
//! overhead, ~1,130 B values), waits for compactions, then reads random keys the way the
//! engine reads a row by its full primary key (`Storage::get`, crates/engine/src/read.rs) with
//! a counting cipher installed, and prints sealed blocks opened per read and their sizes.
//!
//! For each plaintext size and each candidate, a block is sealed once, then opened in place
//! again and again: each open first copies the sealed bytes into the work buffer (an open
//! overwrites them), so the copy is timed alone too and subtracted. Candidates:
//! - `storage`: [`storage::encryption::Cipher::open_in_place`], the store's own path (ring since
//!   the switch, aws-lc-rs before; with the header parse and key lookup);
//! - `aws-lc-rs`: aws-lc-rs's `LessSafeKey` directly;
//! - `ring`: ring's `LessSafeKey`.
//!
//! - `xxh3`: the block checksum lsm-tree verifies on every block read, sealed or not, for scale.
//!
//! 4,711 B is the plaintext of the data blocks `reads` finds (4,744 B sealed: 4 YCSB rows).
//! Each candidate opens what the other sealed (checked before timing): one format.
//! Times are this thread's CPU time (`/proc/thread-self/schedstat`), not the wall clock
//! (`AEAD_COST_WALL=1`: the wall clock).
//! Prints, per round, ns per open (copy subtracted) and GB/s of plaintext; then the median
//! and the spread (min-max) over the rounds.

use std::hint::black_box;
use std::time::Instant;

use storage::encryption::{Cipher, OVERHEAD};
use storage::{KeySet, LsmStorage, Options, Storage, WriteBatch};

const KEY: [u8; 32] = [0x5a; 32];
/// Bytes a candidate processes per timing (so small blocks run many times).
const BYTES_PER_TIMING: usize = 256 << 20;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("reads") {
        let num =
            |i: usize, default: u64| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default);
        let Some(dir) = args.get(1) else {
            eprintln!("usage: aead_cost reads DIR [RECORDS] [CACHE_MIB] [READS]");
            std::process::exit(2)
        };
        reads(
            std::path::Path::new(dir),
            num(2, 200_000),
            num(3, 64),
            num(4, 100_000),
        );
        return;
    }
    let rounds: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(3);
    let mut sizes: Vec<usize> = args.iter().skip(1).filter_map(|a| a.parse().ok()).collect();
    if sizes.is_empty() {
        sizes = vec![512, 1024, 2048, 4711, 16384, 65536];
    }
    let store =
        Cipher::new(&KeySet::from_keys("bench", &[(1, KEY)]).expect("keys")).expect("cipher");
    let awslc = aws_lc_rs::aead::LessSafeKey::new(
        aws_lc_rs::aead::UnboundKey::new(&aws_lc_rs::aead::AES_256_GCM, &KEY).expect("key"),
    );
    let ring = ring::aead::LessSafeKey::new(
        ring::aead::UnboundKey::new(&ring::aead::AES_256_GCM, &KEY).expect("key"),
    );
    println!("size\tcandidate\top\tround\tns_per_op\tGB_per_s");
    let mut summary = Vec::new();
    for &size in &sizes {
        let plain: Vec<u8> = (0..size).map(|i| (i * 131 + 7) as u8).collect();
        // Sealed by the store (aws-lc) and by ring, in the store's layout; each opens the other's.
        let mut by_store = Vec::new();
        fjall::encryption::BlockCipher::encrypt(&store, &plain, &mut by_store).expect("seal");
        let head = &by_store[..HEADER_AND_NONCE];
        let mut by_ring = Vec::new();
        seal_ring(&ring, &plain, head, &mut by_ring);
        assert_eq!(by_ring.len(), plain.len() + OVERHEAD);
        assert_eq!(by_ring, by_store, "ring and aws-lc seal the same bytes");
        assert_eq!(open_ring(&ring, &mut by_store.clone()), Some(&plain[..]));
        assert_eq!(store.open(&by_ring).as_deref(), Ok(&plain[..]));

        let iters = (BYTES_PER_TIMING / size.max(64)).max(1000);
        let mut buf = by_store.clone();
        let candidates: [Candidate; 7] = [
            ("copy only", "copy", &|b: &mut Vec<u8>| {
                b.copy_from_slice(&by_store);
            }),
            ("storage", "open", &|b: &mut Vec<u8>| {
                b.copy_from_slice(&by_store);
                black_box(store.open_in_place(b).expect("open"));
            }),
            ("aws-lc-rs", "open", &|b: &mut Vec<u8>| {
                b.copy_from_slice(&by_store);
                black_box(open_awslc(&awslc, b).expect("open"));
            }),
            ("ring", "open", &|b: &mut Vec<u8>| {
                b.copy_from_slice(&by_store);
                black_box(open_ring(&ring, b).expect("open"));
            }),
            ("aws-lc-rs", "seal", &|b: &mut Vec<u8>| {
                b.clear();
                seal_awslc(&awslc, &plain, head, b);
                black_box(&b);
            }),
            ("ring", "seal", &|b: &mut Vec<u8>| {
                b.clear();
                seal_ring(&ring, &plain, head, b);
                black_box(&b);
            }),
            ("xxh3", "hash", &|b: &mut Vec<u8>| {
                black_box(xxhash_rust::xxh3::xxh3_128(black_box(&b[..])));
            }),
        ];
        let mut results: Vec<Vec<f64>> = vec![Vec::new(); candidates.len()];
        for round in 1..=rounds {
            let mut copy_ns = 0.0;
            for (i, (name, op, f)) in candidates.iter().enumerate() {
                for _ in 0..iters / 10 {
                    f(&mut buf); // warm up
                }
                let started = Clock::now();
                for _ in 0..iters {
                    f(&mut buf);
                }
                let ns = started.elapsed_ns() / iters as f64;
                let ns = match *op {
                    "copy" => {
                        copy_ns = ns;
                        ns
                    }
                    "open" => ns - copy_ns,
                    _ => ns,
                };
                results[i].push(ns);
                println!(
                    "{size}\t{name}\t{op}\t{round}\t{ns:.0}\t{:.2}",
                    size as f64 / ns
                );
                // The work buffer is sealed bytes again for the next candidate.
                buf.clear();
                buf.extend_from_slice(&by_store);
            }
        }
        for (i, (name, op, _)) in candidates.iter().enumerate() {
            let mut r = results[i].clone();
            r.sort_by(f64::total_cmp);
            summary.push(format!(
                "{size:>6} B  {name:<10} {op:<5} {:>7.0} ns  ({:.0}-{:.0})  {:>6.2} GB/s ({:.2}-{:.2})",
                r[r.len() / 2],
                r[0],
                r[r.len() - 1],
                size as f64 / r[r.len() / 2],
                size as f64 / r[r.len() - 1],
                size as f64 / r[0],
            ));
        }
    }
    println!("\nmedian over {rounds} rounds (min-max); `open` is without the copy");
    for line in summary {
        println!("{line}");
    }
}

/// The time this thread spent on a CPU (`/proc/thread-self/schedstat`, ns), so that a busy
/// machine (other processes, SCHED_IDLE) lengthens the wall clock but not the figure; the wall
/// clock where that file is missing or `AEAD_COST_WALL` is set (on a quiet machine: finer, as
/// the scheduler's figure moves in ticks).
enum Clock {
    Cpu(u64),
    Wall(Instant),
}

impl Clock {
    fn cpu_ns() -> Option<u64> {
        let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
        text.split_whitespace().next()?.parse().ok()
    }

    fn now() -> Clock {
        if std::env::var_os("AEAD_COST_WALL").is_some() {
            return Clock::Wall(Instant::now());
        }
        Clock::cpu_ns().map_or_else(|| Clock::Wall(Instant::now()), Clock::Cpu)
    }

    fn elapsed_ns(&self) -> f64 {
        match self {
            Clock::Cpu(at) => Clock::cpu_ns().unwrap_or(*at).saturating_sub(*at) as f64,
            Clock::Wall(at) => at.elapsed().as_nanos() as f64,
        }
    }
}

/// A timed operation: its name, what it does (`copy`, `open`, `seal`, `hash`), one run of it.
type Candidate<'a> = (&'a str, &'a str, &'a dyn Fn(&mut Vec<u8>));

/// Version byte, key id, nonce: the store's header (module docs of `storage::encryption`).
const HEADER_AND_NONCE: usize = 5 + 12;

/// Opens and seals in the store's layout with one library; aws-lc-rs and ring share ring's API.
macro_rules! store_layout {
    ($lib:ident, $open:ident, $seal:ident) => {
        fn $open<'a>(key: &$lib::aead::LessSafeKey, sealed: &'a mut [u8]) -> Option<&'a [u8]> {
            let (head, body) = sealed.split_at_mut(HEADER_AND_NONCE);
            let nonce = $lib::aead::Nonce::try_assume_unique_for_key(&head[5..]).ok()?;
            let aad = $lib::aead::Aad::from(&head[..5]);
            Some(key.open_in_place(nonce, aad, body).ok()?)
        }

        /// Appends `plain` sealed under the header and nonce `head` to `out`.
        fn $seal(key: &$lib::aead::LessSafeKey, plain: &[u8], head: &[u8], out: &mut Vec<u8>) {
            let at = out.len();
            out.extend_from_slice(head);
            out.extend_from_slice(plain);
            let (head, body) = out[at..].split_at_mut(HEADER_AND_NONCE);
            let nonce = $lib::aead::Nonce::try_assume_unique_for_key(&head[5..]).expect("nonce");
            let aad = $lib::aead::Aad::from(&head[..5]);
            let tag = key
                .seal_in_place_separate_tag(nonce, aad, body)
                .expect("seal");
            out.extend_from_slice(tag.as_ref());
        }
    };
}
store_layout!(aws_lc_rs, open_awslc, seal_awslc);
store_layout!(ring, open_ring, seal_ring);

/// The store's cipher, counting what it opens (sealed sizes).
struct Counting {
    inner: Cipher,
    opened: std::sync::Mutex<Vec<usize>>,
}

impl fjall::encryption::BlockCipher for Counting {
    fn encrypt(&self, plain: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        fjall::encryption::BlockCipher::encrypt(&self.inner, plain, out)
    }

    fn decrypt_in_place(&self, sealed: &mut [u8]) -> Result<std::ops::Range<usize>, String> {
        self.opened.lock().expect("lock").push(sealed.len());
        self.inner.open_in_place(sealed)
    }
}

/// The engine's row key of YCSB's `user<n>` (crates/engine/src/keys.rs): table prefix, token,
/// escaped partition key, row marker byte.
fn ycsb_key(n: u64) -> Vec<u8> {
    let token = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut key = vec![1, 0, 0, 0, 42];
    key.extend_from_slice(&token.to_be_bytes());
    key.extend_from_slice(format!("user{}", token >> 4).as_bytes());
    key.extend_from_slice(&[0, 0, 1]);
    key
}

fn reads(dir: &std::path::Path, records: u64, cache_mib: u64, count: u64) {
    let keys = KeySet::from_keys("bench", &[(1, KEY)]).expect("keys");
    let store = LsmStorage::open(
        dir,
        Options {
            cache_bytes: cache_mib << 20,
            encryption: Some(keys.clone()),
            ..Options::default()
        },
    )
    .expect("open");
    let counting = std::sync::Arc::new(Counting {
        inner: Cipher::new(&keys).expect("cipher"),
        opened: std::sync::Mutex::new(Vec::new()),
    });
    fjall::encryption::set_cipher(Some(counting.clone()));
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut batch = WriteBatch::new();
    for n in 0..records {
        // 10 cells: flags, timestamp, length, 100 pseudo-random bytes (YCSB's values do not compress).
        let mut value = Vec::with_capacity(1130);
        for _ in 0..10 {
            value.push(1);
            value.extend_from_slice(&1_700_000_000_000_000u64.to_be_bytes());
            value.extend_from_slice(&100u32.to_be_bytes());
            for _ in 0..13 {
                value.extend_from_slice(&next().to_le_bytes());
            }
            value.truncate(value.len() - 4);
        }
        batch.put(ycsb_key(n), value);
        if batch.len() == 1000 {
            store.write(std::mem::take(&mut batch)).expect("write");
        }
    }
    store.write(batch).expect("write");
    store.flush().expect("flush");
    while store.stats().expect("stats").pending_compactions > 0
        || store.stats().expect("stats").active_compactions > 0
    {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let stats = store.stats().expect("stats");
    println!(
        "{records} records, {} MiB on disk, tables per level {:?}, block cache {cache_mib} MiB",
        stats.disk_bytes >> 20,
        stats.tables_per_level
    );
    let read = |n: u64| {
        assert!(store.get(&ycsb_key(n)).expect("get").is_some());
    };
    for _ in 0..count {
        read(next() % records); // warm the block cache
    }
    counting.opened.lock().expect("lock").clear();
    for _ in 0..count {
        read(next() % records);
    }
    let mut opened = std::mem::take(&mut *counting.opened.lock().expect("lock"));
    opened.sort_unstable();
    let total: usize = opened.iter().sum();
    println!(
        "{count} point reads opened {} sealed blocks ({:.3} a read), {:.0} sealed bytes a read",
        opened.len(),
        opened.len() as f64 / count as f64,
        total as f64 / count as f64
    );
    let pct = |p: usize| {
        opened
            .get(opened.len().saturating_sub(1) * p / 100)
            .copied()
            .unwrap_or(0)
    };
    println!(
        "sealed block sizes: min {} p10 {} median {} p90 {} p99 {} max {}",
        pct(0),
        pct(10),
        pct(50),
        pct(90),
        pct(99),
        pct(100)
    );
    let big = opened.iter().filter(|s| **s > 8192).count();
    println!("blocks over 8 KiB (index, filter): {big}");
}
