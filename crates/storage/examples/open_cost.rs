//! What opening a store costs with and without `data_file_check: full` (docs/robustness.md).
//!
//! ```text
//! cargo run --release -p storage --example open_cost -- fill DIR MIB   # MIB of table files
//! cargo run --release -p storage --example open_cost -- open DIR full|off
//! ```
//! `fill` writes rows of 1,000 pseudo-random bytes (incompressible, so MIB is the size on disk)
//! under 16-byte keys and flushes them to table files; `open` times `LsmStorage::open` (page
//! cache as it is: drop it first for a cold figure, `echo 3 > /proc/sys/vm/drop_caches`).

use std::path::Path;
use std::time::{Duration, Instant};

use storage::{DataFileCheck, LsmStorage, Options, Storage, SyncMode, WriteBatch};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (cmd, dir) = match (args.first(), args.get(1)) {
        (Some(c), Some(d)) => (c.as_str(), Path::new(d)),
        _ => usage(),
    };
    match cmd {
        "fill" => fill(
            dir,
            args.get(2)
                .and_then(|m| m.parse().ok())
                .unwrap_or_else(|| usage()),
        ),
        "open" => {
            let check = match args.get(2).map(String::as_str) {
                Some("full") => DataFileCheck::Full,
                Some("off") => DataFileCheck::Off,
                _ => usage(),
            };
            let started = Instant::now();
            let store = LsmStorage::open(dir, options(check)).expect("open");
            let took = started.elapsed();
            let stats = store.stats().expect("stats");
            println!(
                "open with data_file_check {check:?}: {:.3} s ({} table files, {} bytes on disk)",
                took.as_secs_f64(),
                stats.tables_per_level.iter().sum::<usize>(),
                stats.disk_bytes
            );
        }
        _ => usage(),
    }
}

fn options(check: DataFileCheck) -> Options {
    Options {
        sync: SyncMode::Periodic(Duration::from_secs(10)),
        data_file_check: check,
        ..Options::default()
    }
}

fn fill(dir: &Path, mib: u64) {
    let store = LsmStorage::open(dir, options(DataFileCheck::Off)).expect("open");
    let rows = mib * 1024 * 1024 / 1000;
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut batch = WriteBatch::new();
    for i in 0..rows {
        let mut value = Vec::with_capacity(1000);
        while value.len() < 1000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            value.extend_from_slice(&x.to_le_bytes());
        }
        value.truncate(1000);
        let mut key = (i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .to_be_bytes()
            .to_vec();
        key.extend_from_slice(&i.to_be_bytes());
        batch.put(key, value);
        if batch.len() == 1000 {
            store.write(std::mem::take(&mut batch)).expect("write");
        }
    }
    store.write(batch).expect("write");
    store.flush().expect("flush");
    store.sync().expect("sync");
    println!("wrote {rows} rows");
}

fn usage() -> ! {
    eprintln!("usage: open_cost fill DIR MIB | open DIR full|off");
    std::process::exit(2)
}
