//! Flushes and compactions run `Options::background_nice` steps below the thread that opened
//! the store.
//!
//! Its own test binary (its own process) because it reads the nice value of every thread of the
//! process by name (`/proc/self/task`): another test's store would add its own workers.

use storage::{LsmStorage, Options};

mod support;

/// The nice values of the process's threads named `name` (`stat`'s 19th field).
fn nice_of(name: &str) -> Vec<i32> {
    let mut nice = Vec::new();
    for path in support::threads_named(name) {
        let Ok(stat) = std::fs::read_to_string(path.join("stat")) else {
            continue;
        };
        // After the command's closing parenthesis: field 3 (state) onwards.
        let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..]
            .split_whitespace()
            .collect();
        nice.push(fields[19 - 3].parse().unwrap());
    }
    nice
}

fn this_thread_nice() -> i32 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..]
        .split_whitespace()
        .collect();
    fields[19 - 3].parse().unwrap()
}

#[test]
fn flushes_and_compactions_run_below_the_opening_thread() {
    let dir = std::env::temp_dir().join(format!("peregrine-priority-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let opener = this_thread_nice();
    let s = LsmStorage::open(
        &dir,
        Options {
            background_nice: 3,
            ..Options::default()
        },
    )
    .unwrap();
    // Each worker sets its priority first thing; wait until every one has.
    let want = (opener + 3).min(19);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let workers = loop {
        let workers = nice_of("fjall:worker");
        if !workers.is_empty() && workers.iter().all(|&n| n == want) {
            break workers;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "workers {workers:?}, want every one at nice {want} (opener at {opener})"
        );
        std::thread::yield_now();
    };
    assert_eq!(
        this_thread_nice(),
        opener,
        "the opener's own priority is left alone"
    );
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!("workers at nice {workers:?}, opener {opener}");
}
