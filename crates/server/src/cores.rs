//! Thread per core (`thread_per_core: true`): each accepted connection lives on one of N
//! single-threaded runtimes, one per CPU the process may run on, each thread pinned to its CPU.
//! A connection's reader, writer and request tasks then all run on that one thread: a request
//! is read, executed (point operations run inline, see `Backend`) and answered without a wake-up
//! crossing threads, as the per-core designs of ScyllaDB and Aerospike in the seeds do.
//!
//! Off (the default), connections run on the process's work-stealing runtime, where a
//! request's task, the connection's writer and its reader may each be picked up by another
//! worker. What each costs is measured in `bench/results/` (issue 16 item 6).
//!
//! Work that is not a connection's (the accept loop, the admin endpoint, the storage's flush and
//! compaction threads, blocking work such as scans) stays where it was; each per-core runtime
//! has its own blocking pool for `spawn_blocking`.
//!
//! # Invariants
//! - A connection is assigned round robin at accept time and never moves; its socket is
//!   registered with its core's reactor.
//! - Dropping [`Cores`] stops the runtimes: tasks still on them are dropped (the server drops
//!   it only after the shutdown grace period).

use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::net::TcpStream;
use tokio::runtime::{Builder, Handle};
use tokio::sync::oneshot;
use tokio_util::task::TaskTracker;

/// The per-core runtimes; connections are handed to them with [`Cores::spawn`].
pub(crate) struct Cores {
    handles: Vec<Handle>,
    next: AtomicUsize,
    /// Dropped with `Cores`: each runtime's thread then returns and drops its runtime.
    _stop: Vec<oneshot::Sender<()>>,
}

impl Cores {
    /// One runtime thread per CPU of the process's affinity mask (what `taskset` allows), each
    /// pinned to its CPU when the mask can be read.
    pub(crate) fn start() -> io::Result<Cores> {
        let cpus = allowed_cpus();
        let n = if cpus.is_empty() {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            cpus.len()
        };
        let mut handles = Vec::with_capacity(n);
        let mut stop = Vec::with_capacity(n);
        for i in 0..n {
            let cpu = cpus.get(i).copied();
            let (handle_tx, handle_rx) = std::sync::mpsc::channel();
            let (stop_tx, stop_rx) = oneshot::channel::<()>();
            std::thread::Builder::new()
                .name(format!("peregrine-core-{i}"))
                .spawn(move || {
                    if let Some(cpu) = cpu {
                        pin_to(cpu);
                    }
                    let runtime = match Builder::new_current_thread().enable_all().build() {
                        Ok(rt) => rt,
                        Err(e) => {
                            let _ = handle_tx.send(Err(e));
                            return;
                        }
                    };
                    let _ = handle_tx.send(Ok(runtime.handle().clone()));
                    // Runs the connections' tasks until `Cores` is dropped.
                    let _ = runtime.block_on(stop_rx);
                })?;
            let handle = handle_rx
                .recv()
                .map_err(|_| io::Error::other("a per-core runtime thread ended at start"))??;
            handles.push(handle);
            stop.push(stop_tx);
        }
        Ok(Cores {
            handles,
            next: AtomicUsize::new(0),
            _stop: stop,
        })
    }

    /// How many runtimes (threads) serve connections.
    pub(crate) fn len(&self) -> usize {
        self.handles.len()
    }

    /// Serves the accepted `socket` with `serve` on the next runtime, round robin, as a task
    /// `tracker` counts from now on. The socket moves to that runtime's reactor (accepted by
    /// the accept loop, it was registered with that loop's runtime), so its readiness wakes
    /// the core's thread alone instead of passing through the accept loop's runtime.
    pub(crate) fn serve<F, Fut>(&self, socket: TcpStream, tracker: &TaskTracker, serve: F)
    where
        F: FnOnce(TcpStream) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let socket = match socket.into_std() {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("thread_per_core: a connection dropped: {e}");
                return;
            }
        };
        self.spawn(tracker.track_future(async move {
            match TcpStream::from_std(socket) {
                Ok(s) => serve(s).await,
                Err(e) => tracing::warn!("thread_per_core: a connection dropped: {e}"),
            }
        }));
    }

    /// Runs `task` on the next runtime, round robin.
    fn spawn<F>(&self, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.handles.len();
        self.handles[i].spawn(task);
    }
}

/// The CPUs this process may run on, in order; empty when the mask cannot be read.
fn allowed_cpus() -> Vec<usize> {
    match rustix::thread::sched_getaffinity(None) {
        Ok(set) => (0..rustix::thread::CpuSet::MAX_CPU)
            .filter(|&c| set.is_set(c))
            .collect(),
        Err(e) => {
            tracing::warn!(
                "thread_per_core: cannot read the CPU affinity mask ({e}); threads are not pinned"
            );
            Vec::new()
        }
    }
}

/// Pins the calling thread to `cpu` (a warning when the kernel refuses: the thread still runs).
fn pin_to(cpu: usize) {
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu);
    if let Err(e) = rustix::thread::sched_setaffinity(None, &set) {
        tracing::warn!("thread_per_core: cannot pin a runtime thread to CPU {cpu}: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_go_round_robin_to_pinned_threads_that_stay_put() {
        let cores = Cores::start().unwrap();
        let n = cores.len();
        assert!(n >= 1);
        let (tx, rx) = std::sync::mpsc::channel();
        for _ in 0..2 * n {
            let tx = tx.clone();
            cores.spawn(async move {
                let before = std::thread::current().id();
                // A task that yields comes back on the same thread (no work stealing).
                tokio::task::yield_now().await;
                let inner = tokio::spawn(async { std::thread::current().id() })
                    .await
                    .unwrap();
                let name = std::thread::current().name().map(str::to_string);
                tx.send((before, std::thread::current().id(), inner, name))
                    .unwrap();
            });
        }
        drop(tx);
        let seen: Vec<_> = rx.iter().collect();
        assert_eq!(seen.len(), 2 * n);
        let mut threads = std::collections::HashSet::new();
        for (before, after, inner, name) in seen {
            assert_eq!(before, after);
            assert_eq!(
                before, inner,
                "a spawned task stays on its connection's thread"
            );
            assert!(name.unwrap().starts_with("peregrine-core-"));
            threads.insert(before);
        }
        assert_eq!(threads.len(), n, "every runtime got connections");
    }
}
