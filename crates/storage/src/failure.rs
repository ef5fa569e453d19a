//! What the store does when the disk fails under it: Cassandra's two policies.
//!
//! fjall refuses every write once a journal write, a flush or a compaction has failed (it
//! "poisons" itself) until it is opened again; reads go on. Cassandra splits the same failures
//! between two keys, and so does Peregrine:
//!
//! | failure | key | values |
//! |---|---|---|
//! | writing or syncing the journal (Cassandra's commit log) | `commit_failure_policy` | `stop`, `stop_commit`, `die`, `ignore` |
//! | a table file: a background flush or compaction, or (`stop_paranoid`) a read meeting damage | `disk_failure_policy` | `stop`, `stop_paranoid`, `best_effort`, `die`, `ignore` |
//!
//! A failure is classified once per open store, by the first error seen: fjall's `Poisoned`
//! with nothing recorded yet means a background flush or compaction failed (a table file);
//! any other error from a write or sync is the journal's own. (Two writers racing on the very
//! first journal failure can see `Poisoned` first; the default `stop` acts the same either way.)
//!
//! What each value does here ([`Action`]):
//! - `stop`, `stop_paranoid`: take the store down (requests refused, the front end closes the
//!   client port as Cassandra stops its transports) and reopen it in the background with
//!   backoff; serve again once it opens and can flush. After a read met damage the reopened
//!   store must also pass the full data-file check, so damage keeps the node down.
//! - `stop_commit`, `best_effort`: stop writes only. Reads go on from the failed store and the
//!   client port stays open; in the background a probe file is written and synced until it
//!   succeeds, then the store is reopened (a moment without reads) and writes resume. With one
//!   data directory `best_effort` has no other disk to fall back to, so it keeps serving what it
//!   can, which is reads.
//! - `die`: exit the process (status 1) for a supervisor to restart it.
//! - `ignore`: keep the failed store; writes fail until a restart (fjall's own behaviour).

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use crate::{datafiles, Open, Shared, StorageError};

/// `disk_failure_policy`: what a failing table file (flush, compaction, or a damaged block
/// met by a read) does. Cassandra's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailurePolicy {
    /// Refuse requests while the store reopens itself, retrying with backoff, and serve again
    /// once it opens: a transient cause (descriptors, space) heals without a restart; a
    /// permanent one keeps the store down, saying why. The default.
    #[default]
    Stop,
    /// As `Stop`, and a read that meets a damaged data file takes the store down too (with
    /// `Stop` only that read fails); it reopens only once every data file checks out.
    StopParanoid,
    /// Stop writes and keep serving reads while the disk is retried (one data directory: there
    /// is no other disk to write to).
    BestEffort,
    /// Exit the process at once (status 1): a supervisor restarts it.
    Die,
    /// Keep the failed store: every later write fails until a restart (fjall's own behaviour).
    Ignore,
}

/// `commit_failure_policy`: what a failing journal write or sync does. Cassandra's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CommitFailurePolicy {
    /// As [`FailurePolicy::Stop`]. The default.
    #[default]
    Stop,
    /// Stop writes and keep serving reads while the journal's disk is retried.
    StopCommit,
    /// Exit the process at once (status 1).
    Die,
    /// Writes fail until a restart.
    Ignore,
}

/// Which policy a failure falls under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Writing or syncing the journal: `commit_failure_policy`.
    Commit,
    /// A table file, written in the background or read: `disk_failure_policy`.
    Disk,
}

impl Failure {
    /// The kind of a first failure seen on a write or sync (see the module doc).
    fn of(e: &fjall::Error) -> Failure {
        if matches!(e, fjall::Error::Poisoned) {
            Failure::Disk
        } else {
            Failure::Commit
        }
    }
}

/// What a policy value does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    TakeDown,
    StopWrites,
    Die,
    Ignore,
}

impl Shared {
    /// The action and the `key: value` naming it, for a failure of `kind`.
    fn policy(&self, kind: Failure) -> (Action, &'static str) {
        match kind {
            Failure::Commit => match self.options.commit_failure_policy {
                CommitFailurePolicy::Stop => (Action::TakeDown, "commit_failure_policy: stop"),
                CommitFailurePolicy::StopCommit => {
                    (Action::StopWrites, "commit_failure_policy: stop_commit")
                }
                CommitFailurePolicy::Die => (Action::Die, "commit_failure_policy: die"),
                CommitFailurePolicy::Ignore => (Action::Ignore, "commit_failure_policy: ignore"),
            },
            Failure::Disk => match self.options.failure_policy {
                FailurePolicy::Stop => (Action::TakeDown, "disk_failure_policy: stop"),
                FailurePolicy::StopParanoid => {
                    (Action::TakeDown, "disk_failure_policy: stop_paranoid")
                }
                FailurePolicy::BestEffort => {
                    (Action::StopWrites, "disk_failure_policy: best_effort")
                }
                FailurePolicy::Die => (Action::Die, "disk_failure_policy: die"),
                FailurePolicy::Ignore => (Action::Ignore, "disk_failure_policy: ignore"),
            },
        }
    }

    /// A write or sync on `open` failed: applies the policy of its kind. Answers the error
    /// for the request that met it.
    pub(crate) fn failed(self: &Arc<Self>, open: &Arc<Open>, e: &fjall::Error) -> StorageError {
        let kind = *open.failure.get_or_init(|| Failure::of(e));
        self.apply(open, e, kind, false)
    }

    /// A read on `open` failed (a damaged block, an I/O error): only `stop_paranoid` acts on
    /// it, taking the store down until every data file checks out.
    pub(crate) fn read_failed(self: &Arc<Self>, open: &Arc<Open>, e: &fjall::Error) {
        if self.options.failure_policy == FailurePolicy::StopParanoid {
            let _ = open.failure.set(Failure::Disk);
            self.apply(open, e, Failure::Disk, true);
        }
    }

    fn apply(
        self: &Arc<Self>,
        open: &Arc<Open>,
        e: &fjall::Error,
        kind: Failure,
        read: bool,
    ) -> StorageError {
        let (action, policy) = self.policy(kind);
        let cause = format!("storage failed: {e}");
        match action {
            Action::Ignore => {
                tracing::error!("{cause} ({policy}: writes fail until a restart)");
            }
            Action::Die => {
                let why = self.probe(e);
                tracing::error!("{cause}{why}; exiting ({policy})");
                std::process::exit(1);
            }
            Action::StopWrites => return self.stop_writes(open, e, cause, policy),
            Action::TakeDown => self.take_down(open, e, cause, policy, read),
        }
        StorageError::Io(e.to_string())
    }

    /// `stop`: the first to see the failure takes the store down and starts reopening it.
    fn take_down(
        self: &Arc<Self>,
        open: &Arc<Open>,
        e: &fjall::Error,
        cause: String,
        policy: &'static str,
        verify: bool,
    ) {
        let current = self.open.load();
        if !current.as_ref().is_some_and(|c| Arc::ptr_eq(c, open)) {
            return; // already taken down (and maybe reopened) by someone else
        }
        let previous = self.open.compare_and_swap(&*current, None);
        if !previous.as_ref().is_some_and(|c| Arc::ptr_eq(c, open)) {
            return;
        }
        let cause = format!("{cause}{}", self.probe(e));
        *self.down.lock().unwrap_or_else(PoisonError::into_inner) = Some(format!(
            "{cause}; the store is down and reopening itself ({policy})"
        ));
        tracing::error!("{cause}; refusing requests and reopening the store until it opens");
        let shared = self.clone();
        let spawned = std::thread::Builder::new()
            .name("storage-reopen".into())
            .spawn(move || shared.reopen(verify));
        if let Err(e) = spawned {
            tracing::error!("cannot start the storage reopen thread: {e}");
        }
    }

    /// `stop_commit` / `best_effort`: writes stop, reads go on; the first to see the failure
    /// starts the retries. Answers the error every refused write gets.
    fn stop_writes(
        self: &Arc<Self>,
        open: &Arc<Open>,
        e: &fjall::Error,
        cause: String,
        policy: &'static str,
    ) -> StorageError {
        if !open.writes_stopped.swap(true, Ordering::SeqCst) {
            let cause = format!("{cause}{}", self.probe(e));
            *self
                .writes_down
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(format!(
                "{cause}; writes are refused and reads go on while the disk is retried ({policy})"
            ));
            tracing::error!("{cause}; writes stopped, reads go on ({policy})");
            let shared = self.clone();
            let failed = Arc::as_ptr(open) as usize;
            let spawned = std::thread::Builder::new()
                .name("storage-retry".into())
                .spawn(move || shared.retry_writes(failed));
            if let Err(e) = spawned {
                tracing::error!("cannot start the storage retry thread: {e}");
            }
        }
        self.writes_unavailable()
    }

    /// The error a write gets while writes are stopped.
    pub(crate) fn writes_unavailable(&self) -> StorageError {
        StorageError::Unavailable(
            crate::reason(&self.writes_down).unwrap_or_else(|| "writes are stopped".into()),
        )
    }

    /// Waits (backoff 100 ms doubling to 10 s) until the data directory takes a probe file of
    /// one memtable again, then swaps the failed store (at address `failed`) for a reopened
    /// one: fjall keeps refusing writes on the old handle whatever the disk does now.
    fn retry_writes(&self, failed: usize) {
        let started = std::time::Instant::now();
        let mut backoff = Duration::from_millis(100);
        loop {
            std::thread::sleep(backoff);
            match self.probe_disk() {
                Ok(()) => break,
                Err(io) => {
                    tracing::warn!(
                        "the data directory still refuses writes ({io}); retrying in {backoff:?}"
                    );
                    backoff = (backoff * 2).min(Duration::from_secs(10));
                }
            }
        }
        let current = self.open.load();
        if current
            .as_ref()
            .is_none_or(|c| Arc::as_ptr(c) as usize != failed)
        {
            return;
        }
        self.open.compare_and_swap(&*current, None);
        drop(current);
        self.reopen(false);
        *self
            .writes_down
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = None;
        tracing::warn!(
            "storage reopened after {:?}: serving writes again",
            started.elapsed()
        );
    }

    /// Writes and syncs a probe file of up to one memtable (16 MiB at most) in the data
    /// directory, then removes it: whether a flush could write its table now.
    fn probe_disk(&self) -> std::io::Result<()> {
        use std::io::Write;
        let path = self.path.join(".peregrine-probe");
        let bytes = self.options.memtable_bytes.min(16 << 20) as usize;
        let written = std::fs::File::create(&path).and_then(|mut f| {
            f.write_all(&vec![0u8; bytes])?;
            f.sync_all()
        });
        let _ = std::fs::remove_file(&path);
        written
    }

    /// What writing to the data directory meets now, when fjall says only "Poisoned" (a
    /// background flush or compaction failed; fjall logs its cause but does not return it).
    /// Empty when the error names its cause.
    fn probe(&self, e: &fjall::Error) -> String {
        if !matches!(e, fjall::Error::Poisoned) {
            return String::new();
        }
        let bytes = self.options.memtable_bytes.min(16 << 20);
        match self.probe_disk() {
            Ok(()) => " (a background flush or compaction failed: its cause is logged above)".into(),
            Err(io) => format!(
                " (a background flush or compaction failed; writing {bytes} bytes to the data directory now fails: {io})"
            ),
        }
    }

    /// Reopens the store with backoff until it opens (the failed handle must be released by
    /// every request still holding it first: fjall locks its directory). With `verify`, the
    /// reopened store must also pass the full data-file check (a read met damage).
    fn reopen(&self, verify: bool) {
        let started = std::time::Instant::now();
        let mut backoff = Duration::from_millis(100);
        loop {
            std::thread::sleep(backoff);
            // Opened is not enough: the journal's writes must also reach a table file (a
            // flush), or a disk still full would take the store down again with the next
            // write, the client port flapping open and shut; while it cannot, it stays down.
            let opened = Open::new(&self.path, &self.options, self.background).and_then(|open| {
                open.flush_and_wait()?;
                if verify {
                    let damaged = datafiles::check(&open.data.tree);
                    if !damaged.is_empty() {
                        return Err(StorageError::Io(format!(
                            "{} damaged data file(s) (restore the data directory from a snapshot or backup): {}",
                            damaged.len(),
                            damaged.join("; ")
                        )));
                    }
                }
                Ok(open)
            });
            match opened {
                Ok(open) => {
                    self.open.store(Some(Arc::new(open)));
                    *self.down.lock().unwrap_or_else(PoisonError::into_inner) = None;
                    tracing::warn!(
                        "storage reopened after {:?}: serving again",
                        started.elapsed()
                    );
                    return;
                }
                Err(e) => {
                    let reason = match &e {
                        StorageError::Io(m) if m.contains("Poisoned") => {
                            format!("{e}{}", self.probe(&fjall::Error::Poisoned))
                        }
                        _ => format!("{e}"),
                    };
                    tracing::warn!("storage still cannot open ({reason}); retrying in {backoff:?}");
                    let mut down = self.down.lock().unwrap_or_else(PoisonError::into_inner);
                    match down.as_mut() {
                        Some(d) => {
                            if let Some(i) = d.find("; last attempt: ") {
                                d.truncate(i);
                            }
                            d.push_str("; last attempt: ");
                            d.push_str(&reason);
                        }
                        // Reopening after writes stopped (reads went on): a store that does
                        // not open serves nothing, so the node stops as under `stop`.
                        None => *down = Some(format!("the store cannot reopen: {reason}")),
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(10));
                }
            }
        }
    }
}
