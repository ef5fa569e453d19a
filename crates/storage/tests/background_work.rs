//! The store's background threads (fjall's `fjall:worker`s, `storage-tick`): flushes and
//! compactions run, a flush does not wait behind a compaction, and a thread with nothing to
//! do sleeps until there is work: no CPU, no wake-ups.
//!
//! Its own test binary (its own process) because it reads the CPU time and context switches
//! of every thread of the process by name (`/proc/self/task`): another test's store would
//! add its own workers.

use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use storage::{Compaction, LsmStorage, Options, Storage, StorageStats, WriteBatch};

mod support;
use support::Gate;

/// CPU time (ns, `schedstat`) and voluntary context switches (`status`: each a sleep that
/// ended) of the process's threads named `name`, summed.
fn thread_usage(name: &str) -> (u64, u64, usize) {
    let (mut cpu_ns, mut switches, mut threads) = (0, 0, 0);
    for path in support::threads_named(name) {
        let (Ok(schedstat), Ok(status)) = (
            std::fs::read_to_string(path.join("schedstat")),
            std::fs::read_to_string(path.join("status")),
        ) else {
            continue;
        };
        threads += 1;
        cpu_ns += schedstat
            .split_whitespace()
            .next()
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap();
        switches += status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .and_then(|n| n.trim().parse::<u64>().ok())
            .unwrap();
    }
    (cpu_ns, switches, threads)
}

/// What the threads named `name` used over `window`: (CPU ns, voluntary switches).
fn usage_over(names: &[&str], window: Duration) -> Vec<(String, u64, u64, usize)> {
    let before: Vec<_> = names.iter().map(|n| thread_usage(n)).collect();
    thread::sleep(window);
    names
        .iter()
        .zip(before)
        .map(|(n, (cpu, sw, _))| {
            let (cpu2, sw2, threads) = thread_usage(n);
            (n.to_string(), cpu2 - cpu, sw2 - sw, threads)
        })
        .collect()
}

fn write_round(s: &LsmStorage, round: u32) {
    let mut b = WriteBatch::new();
    for i in 1..2_000u32 {
        b.put(i.to_be_bytes().to_vec(), round.to_be_bytes().repeat(16));
    }
    s.write(b).unwrap();
}

fn wait_for(s: &LsmStorage, what: &str, done: impl Fn(&StorageStats) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let stats = s.stats().unwrap();
        if done(&stats) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not after 60 s ({stats:?})"
        );
        thread::sleep(Duration::from_millis(10));
    }
}

/// With two workers, one compacting (held by the filter) while a second compaction message
/// waits: the other worker neither spins on that message (upstream fjall bounced it back to
/// the queue without pause: a core's worth of CPU) nor wakes to look at it (Peregrine's first
/// fix slept 1 ms between bounces: ~1,000 wake-ups a second); a flush asked meanwhile is done
/// at once. Then the compaction completes, and an idle store's background threads sleep.
#[test]
fn workers_sleep_until_there_is_work_and_flushes_do_not_wait_for_compactions() {
    let dir = std::env::temp_dir().join(format!("peregrine-background-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let gate = Arc::new(Gate::default());
    let s = Arc::new(
        LsmStorage::open(
            &dir,
            Options {
                filter: Some(gate.clone()),
                // Every table in L0 is due: a flush's table moves down or merges at once.
                compaction: Compaction {
                    l0_threshold: 1,
                    ..Compaction::default()
                },
                worker_threads: Some(2),
                ..Options::default()
            },
        )
        .unwrap(),
    );

    // Flushes of the same keys until a compaction merges a flushed table with an older one
    // (a table with nothing below it is moved down, which filters nothing).
    gate.armed.store(true, Ordering::SeqCst);
    let mut round = 0;
    loop {
        round += 1;
        assert!(
            round <= 8,
            "no compaction merged tables after {round} flushes"
        );
        write_round(&s, round);
        s.flush().unwrap();
        if gate.holding_within(Duration::from_secs(5)) {
            break;
        }
    }

    // A flush while the compaction is held: worker 0 takes it at once. It queues another
    // compaction, which waits for the held one.
    round += 1;
    write_round(&s, round);
    let (flushed, flush_done) = mpsc::channel();
    let s2 = s.clone();
    thread::spawn(move || flushed.send(s2.flush().map_err(|e| e.to_string())));
    let flush = flush_done.recv_timeout(Duration::from_secs(60));
    assert!(
        matches!(flush, Ok(Ok(()))),
        "a flush while a compaction runs: {flush:?}"
    );
    assert_eq!(s.stats().unwrap().active_compactions, 1);

    let held = usage_over(&["fjall:worker"], Duration::from_secs(1));
    let (_, cpu_ns, switches, threads) = &held[0];
    assert_eq!(*threads, 2, "{held:?}");
    assert!(
        *cpu_ns < 50_000_000 && *switches < 20,
        "workers used {} ms of CPU and woke {switches} times in 1 s while one compaction was held",
        cpu_ns / 1_000_000
    );

    gate.open();
    wait_for(&s, "the held compaction", |st| {
        st.compactions_completed >= 1 && st.compacted_bytes > 0 && st.active_compactions == 0
    });
    assert_eq!(
        s.get(&7u32.to_be_bytes()).unwrap(),
        Some(round.to_be_bytes().repeat(16))
    );

    // Idle: nothing written, and the compactions the flushes queued all tried (no attempt
    // for a second).
    let mut tried = usize::MAX;
    loop {
        wait_for(&s, "settled", |st| {
            st.active_compactions == 0 && st.pending_flushes == 0 && st.sealed_memtables == 0
        });
        let now_tried = s.stats().unwrap().compactions_completed;
        if now_tried == tried {
            break;
        }
        tried = now_tried;
        thread::sleep(Duration::from_secs(1));
    }
    let idle = usage_over(&["fjall:worker", "storage-tick"], Duration::from_secs(2));
    for (name, cpu_ns, switches, threads) in &idle {
        assert!(*threads >= 1, "{idle:?}");
        // storage-tick may wake once in the window (a version collection every 5 s).
        assert!(
            *cpu_ns < 20_000_000 && *switches <= 2,
            "idle {name} threads used {} ms of CPU and woke {switches} times in 2 s",
            cpu_ns / 1_000_000
        );
    }
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}
