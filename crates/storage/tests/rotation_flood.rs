//! Writes that find the memtable over its size while the store's only fjall worker is busy
//! each ask for a rotation. fjall queued one ask per write (up to its queue's 1,000), and the
//! worker, taking the first, rotated and then blocked queueing the flush into its own full
//! queue: flushes and the writes waiting on them stopped for good (seen after a 200k-row load
//! on a loaded machine: `nodetool flush` never returned). Now one ask per memtable is queued
//! (vendor/README.md, compaction hand-off): the queue holds a few messages, not a thousand,
//! and a flush asked once the worker is free completes.
//!
//! Its own test binary: a hung store would leave its threads behind.

use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::Duration;

use storage::{Compaction, LsmStorage, Options, Storage, WriteBatch};

mod support;
use support::Gate;

#[test]
fn writes_over_a_full_memtable_while_the_worker_is_busy_do_not_stall_flushes() {
    let dir = std::env::temp_dir().join(format!("peregrine-rotation-flood-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let gate = Arc::new(Gate::default());
    let lsm = Arc::new(
        LsmStorage::open(
            &dir,
            Options {
                filter: Some(gate.clone()),
                // One worker, as on a server pinned to one core: it flushes and compacts.
                worker_threads: Some(1),
                memtable_bytes: 512 * 1024,
                // A flush's table is due for compaction at once.
                compaction: Compaction {
                    l0_threshold: 1,
                    ..Compaction::default()
                },
                idle_compaction: None,
                ..Options::default()
            },
        )
        .unwrap(),
    );
    let put = |i: u32| {
        let mut b = WriteBatch::new();
        b.put(i.to_be_bytes().to_vec(), vec![i as u8; 200]);
        lsm.write(b).unwrap();
    };
    // A compaction held by the filter keeps the only worker busy.
    // (The first table moves down as it is; the second, over the same keys, is merged.)
    gate.armed.store(true, Ordering::SeqCst);
    for _ in 0..2 {
        for i in 0..100 {
            put(i);
        }
        lsm.flush().unwrap();
    }
    assert!(
        gate.holding_within(Duration::from_secs(30)),
        "no compaction reached the filter"
    );
    // ~1,500 writes past the memtable's size (512 KiB: ~2,500 of these), each asking for a
    // rotation; fewer than fill the write buffer (twice the memtable), past which writes wait.
    for i in 100..4_000 {
        put(i);
    }
    // One ask for the memtable, not one per write (fjall queued up to 1,000).
    let queued = lsm.stats().unwrap().queued_worker_messages;
    gate.open();
    if queued > 4 {
        // The store may be stuck: leave it (dropping it would wait for its threads).
        std::mem::forget(lsm);
        panic!("{queued} messages queued for the worker");
    }
    let (done, finished) = mpsc::channel();
    let store = lsm.clone();
    thread::spawn(move || {
        let _ = done.send(store.flush());
    });
    match finished.recv_timeout(Duration::from_secs(60)) {
        Ok(flushed) => flushed.unwrap(),
        Err(_) => {
            // The store's threads are stuck: leave them (dropping it would wait for them).
            std::mem::forget(lsm);
            panic!("a flush asked after the worker was released did not finish in 60 s");
        }
    }
    for i in [0u32, 99, 100, 3_999] {
        assert_eq!(
            lsm.get(&i.to_be_bytes()).unwrap(),
            Some(vec![i as u8; 200]),
            "key {i}"
        );
    }
    drop(lsm);
    let _ = std::fs::remove_dir_all(&dir);
}
