//! What the store's integration tests share.
// Each test binary includes this module and uses part of it.
#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use storage::{CompactionFilter, Decision};

/// A compaction filter that, once armed, holds the first compaction that asks it about a key
/// until the test opens it: a compaction that runs as long as the test wants.
#[derive(Default)]
pub struct Gate {
    pub armed: AtomicBool,
    state: Mutex<GateState>,
    changed: Condvar,
}

#[derive(Default)]
struct GateState {
    holding: bool,
    open: bool,
}

impl CompactionFilter for Gate {
    fn filter(&self, _key: &[u8], _value: &[u8], _last_level: bool) -> Decision {
        if self.armed.swap(false, Ordering::SeqCst) {
            let mut state = self.state.lock().unwrap();
            state.holding = true;
            self.changed.notify_all();
            while !state.open {
                state = self.changed.wait(state).unwrap();
            }
        }
        Decision::Keep
    }
}

impl Gate {
    /// Whether a compaction is held (waiting at most `within` for one).
    pub fn holding_within(&self, within: Duration) -> bool {
        let state = self.state.lock().unwrap();
        let (state, _) = self
            .changed
            .wait_timeout_while(state, within, |s| !s.holding)
            .unwrap();
        state.holding
    }

    pub fn open(&self) {
        self.state.lock().unwrap().open = true;
        self.changed.notify_all();
    }
}

/// The `/proc/self/task` directories of this process's threads named `name`.
pub fn threads_named(name: &str) -> Vec<std::path::PathBuf> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .map(|task| task.path())
        .filter(|path| {
            std::fs::read_to_string(path.join("comm")).is_ok_and(|comm| comm.trim_end() == name)
        })
        .collect()
}
