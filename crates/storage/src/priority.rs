//! The priority of the store's background threads.
//!
//! Flushes and compactions (fjall's workers) and the idle compaction (`idle.rs`) run
//! [`crate::Options::background_nice`] nice steps below the thread that opened the store, so
//! that on a busy core a request thread preempts them and they take what requests leave. On the
//! same priority a compaction took half of the server's one core: under YCSB A at 80% of its
//! peak, open loop, a 3 s L0 merge every ~30 s held requests for up to 1.2 s (client p99
//! 1,200 ms); ten steps below, 75 ms, with the same closed-loop peak
//! (bench/results/2026-12-02/background-priority-s40).

/// The nice value of the calling thread, read when the store opens; its background threads
/// run `steps` below it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Background {
    nice: i32,
}

impl Background {
    pub(crate) fn below_this_thread(steps: u8) -> Background {
        let here =
            rustix::process::getpriority_process(Some(rustix::thread::gettid())).unwrap_or(0);
        Background {
            nice: (here + i32::from(steps)).min(19),
        }
    }

    /// Gives the calling thread the background's nice value; a failure (a container that
    /// forbids it) leaves the thread as it was, with a warning.
    pub(crate) fn enter(self) {
        let tid = rustix::thread::gettid();
        if rustix::process::getpriority_process(Some(tid)).is_ok_and(|n| n == self.nice) {
            return;
        }
        if let Err(e) = rustix::process::setpriority_process(Some(tid), self.nice) {
            tracing::warn!(
                "background thread: could not set its nice value to {}: {e}",
                self.nice
            );
        }
    }
}
