//! Workload priorities: a share-weighted fair queue in front of execution, per service level
//! (ScyllaDB's service levels; the statements and which level a role runs at are
//! `engine::service_levels`).
//!
//! **Off until a service level exists:** the backend asks `Engine::service_level_of`, which
//! first loads one flag; while no level exists requests run where they always do (point
//! operations inline on the async workers, the rest on the blocking pool): one atomic load per
//! request, no lock, no allocation, and this module's threads are not even started.
//!
//! **On:** every request but scans executes on `service_level_slots` executor threads
//! (default: the CPU count) instead, fed by one queue per service level (bounded in all by
//! `service_level_queue`; one more is Overloaded). A request's task only queues its job and
//! waits, so the backlog forms here, where the order can be chosen, instead of in the async
//! runtime's run queue, which is first come first served. The level to go next is chosen by
//! start-time fair queuing over virtual time ([`FairQueue`]): each level has a virtual clock
//! advanced by the cost of what it ran divided by its shares, and the waiting level with the
//! earliest clock goes first. The cost is the job's execution time, charged as an estimate
//! (the level's recent average) when it starts and corrected when it ends, so a level of
//! heavy requests is charged for them and bursts spread over levels. A level that was idle
//! restarts at the current virtual time: idleness earns no credit. With two levels both
//! saturating, each gets execution time in proportion to its shares (1000 : 100 gives
//! 10 : 1); a level alone gets every thread (work-conserving).
//!
//! Scans are not queued here: they already run apart, in the scan lane (`lanes`). Nor are
//! PREPARE and the login: they are the driver's, before and beside the workload.
//!
//! **Timeouts:** a level's `timeout` (ScyllaDB's option) bounds its requests, scans
//! included, from the moment the backend took them: [`within`] answers a ReadTimeout (a
//! SELECT) or WriteTimeout (the rest) at the deadline, as Cassandra's coordinator does when
//! its replicas are late, and also when the answer came at or after it. The work itself is
//! not interrupted (a write may still apply, as with Cassandra's timeouts); it finishes on
//! its thread and its result is dropped.
//!
//! # Invariants
//! - At most `slots` jobs execute at once; a panicking job answers a ServerError and its
//!   thread lives on.
//! - Dropping the scheduler lets its threads finish what is queued and stop.

use std::collections::VecDeque;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use engine::service_levels::Level;
use engine::Engine;
use proto::error::{DbError, WriteType};
use proto::request::Consistency;
use server::metrics::Exposition;
use tokio::sync::oneshot;

/// Virtual time units per unit of cost at 1000 shares (cost in microseconds).
const SCALE: u64 = 1000;

/// First cost estimate of a level: 100 µs (replaced by what its requests take).
const FIRST_ESTIMATE_MICROS: u64 = 100;

/// A level that started a request this recently is busy: others ahead of it in virtual time
/// wait for it (see [`FairQueue::pop`]).
const ACTIVE_WINDOW: Duration = Duration::from_millis(5);

/// Lanes kept at most: levels come and go (CREATE / DROP SERVICE LEVEL with new names), so
/// past this many the idle ones are forgotten (they restart at the current virtual time when
/// they come back, as any idle level does).
const MAX_LANES: usize = 32;

/// What a timed-out request was, for the error Cassandra would answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Timed {
    Read,
    Write(WriteType),
}

/// Cassandra's answer to a request that ran past its deadline: one replica (this node)
/// was asked and none answered in time.
pub(crate) fn timed_out(kind: Timed, consistency: Consistency) -> DbError {
    let message = "Operation timed out - received only 0 responses.".to_string();
    match kind {
        Timed::Read => DbError::ReadTimeout {
            message,
            consistency,
            received: 0,
            block_for: 1,
            data_present: false,
        },
        Timed::Write(write_type) => DbError::WriteTimeout {
            message,
            consistency,
            received: 0,
            block_for: 1,
            write_type,
            contentions: None,
        },
    }
}

/// Runs `work` within its service level's `limit` (none: unbounded), counted from `started`:
/// past the deadline, or answered at or after it, the request gets [`timed_out`].
pub(crate) async fn within<T>(
    limit: Option<Duration>,
    started: Instant,
    kind: Timed,
    consistency: Consistency,
    work: impl Future<Output = Result<T, DbError>>,
) -> Result<T, DbError> {
    let Some(limit) = limit else {
        return work.await;
    };
    let deadline = started + limit;
    match tokio::time::timeout_at(deadline.into(), work).await {
        Ok(r) if Instant::now() < deadline => r,
        _ => Err(timed_out(kind, consistency)),
    }
}

/// What [`FairQueue::pop`] found.
pub(crate) enum Next<T> {
    /// Start this: its level, the estimate charged, the item.
    Start(Arc<str>, u64, T),
    /// Requests wait, but their levels are ahead of a busy level: look again after this long
    /// (or when something is queued).
    Wait(Duration),
    Empty,
}

/// One service level's queue in a [`FairQueue`].
struct Lane<T> {
    name: Arc<str>,
    shares: u64,
    /// Virtual time: the cost it ran, scaled by `SCALE / shares`.
    vtime: u64,
    /// Moving average of its requests' cost (µs), charged when one starts.
    estimate: u64,
    waiting: VecDeque<T>,
    /// Requests started (for `/metrics`).
    dispatched: u64,
    /// When it last started one.
    last_start: Option<Instant>,
}

/// Start-time fair queuing over service levels; pure and deterministic (no clock, no
/// threads), so its order is unit-tested exactly.
pub(crate) struct FairQueue<T> {
    /// Few (at most `engine::service_levels::MAX_LEVELS` + `default`): a vector beats a map.
    lanes: Vec<Lane<T>>,
    /// The virtual time of the latest start: where an idle level restarts.
    now: u64,
    waiting: usize,
}

impl<T> FairQueue<T> {
    pub(crate) fn new() -> Self {
        FairQueue {
            lanes: Vec::new(),
            now: 0,
            waiting: 0,
        }
    }

    pub(crate) fn waiting(&self) -> usize {
        self.waiting
    }

    fn lane(&mut self, level: &Level) -> usize {
        let i = match self.lanes.iter().position(|l| l.name == level.name) {
            Some(i) => i,
            None => {
                if self.lanes.len() >= MAX_LANES {
                    self.lanes.retain(|l| !l.waiting.is_empty());
                }
                self.lanes.push(Lane {
                    name: level.name.clone(),
                    shares: 0,
                    vtime: self.now,
                    estimate: FIRST_ESTIMATE_MICROS,
                    waiting: VecDeque::new(),
                    dispatched: 0,
                    last_start: None,
                });
                self.lanes.len() - 1
            }
        };
        // ALTER SERVICE LEVEL takes effect with the level's next request.
        self.lanes[i].shares = u64::from(level.shares.max(1));
        i
    }

    /// An idle level becomes busy: it starts from the current virtual time, not from where it
    /// stopped (no credit for idleness).
    fn wake(&mut self, i: usize) {
        let now = self.now;
        let l = &mut self.lanes[i];
        if l.waiting.is_empty() {
            l.vtime = l.vtime.max(now);
        }
    }

    /// Queues `item` of `level`.
    pub(crate) fn push(&mut self, level: &Level, item: T) {
        let i = self.lane(level);
        self.wake(i);
        self.lanes[i].waiting.push_back(item);
        self.waiting += 1;
    }

    fn start(&mut self, i: usize) -> u64 {
        let l = &mut self.lanes[i];
        self.now = self.now.max(l.vtime);
        l.vtime += l.estimate * SCALE / l.shares;
        l.dispatched += 1;
        l.estimate
    }

    /// The next request to start at `now`: the head of the waiting level with the earliest
    /// virtual time (ties: the level seen first), unless a **busy** level (one that started a
    /// request within [`ACTIVE_WINDOW`]) is further behind in virtual time: then nothing
    /// starts until that level catches up or goes quiet.
    ///
    /// Why the second rule: the executor threads are not the only thing a request costs (the
    /// front end decodes and answers it, and a client's next request follows its answer), so
    /// a saturated server need not show a backlog here, and plain fair queuing (which orders
    /// only what waits) would let every level in at once. Holding a level that ran ahead of a
    /// busy one is what slows its clients down to its share. A level idle for
    /// `ACTIVE_WINDOW` holds nobody, so a lightly loaded level costs the others little.
    pub(crate) fn pop(&mut self, now: Instant) -> Next<T> {
        let Some(i) = self
            .lanes
            .iter()
            .enumerate()
            .filter(|(_, l)| !l.waiting.is_empty())
            .min_by_key(|(i, l)| (l.vtime, *i))
            .map(|(i, _)| i)
        else {
            return Next::Empty;
        };
        let v = self.lanes[i].vtime;
        let busy_behind = self
            .lanes
            .iter()
            .filter(|l| l.vtime < v)
            .filter_map(|l| l.last_start.map(|t| t + ACTIVE_WINDOW))
            .filter(|until| *until > now)
            .max();
        if let Some(until) = busy_behind {
            return Next::Wait(until - now);
        }
        let Some(item) = self.lanes[i].waiting.pop_front() else {
            return Next::Empty;
        };
        self.waiting -= 1;
        self.lanes[i].last_start = Some(now);
        let charged = self.start(i);
        Next::Start(self.lanes[i].name.clone(), charged, item)
    }

    /// A request of `level` that was charged `charged` finished after costing `cost` (µs):
    /// the difference is charged, and the level's estimate moves toward it.
    pub(crate) fn finish(&mut self, level: &str, charged: u64, cost: u64) {
        let Some(l) = self.lanes.iter_mut().find(|l| &*l.name == level) else {
            return;
        };
        let cost = cost.max(1);
        let (c, e) = (cost * SCALE / l.shares, charged * SCALE / l.shares);
        l.vtime = (l.vtime + c).saturating_sub(e);
        l.estimate = (l.estimate * 7 + cost).div_ceil(8);
    }

    /// Dispatched requests and waiting ones, by level.
    fn counts(&self) -> Vec<(Arc<str>, u64, usize)> {
        self.lanes
            .iter()
            .map(|l| (l.name.clone(), l.dispatched, l.waiting.len()))
            .collect()
    }
}

type Job = Box<dyn FnOnce() + Send>;

struct State {
    queue: FairQueue<Job>,
    running: usize,
    rejected: u64,
    stopping: bool,
}

struct Shared {
    state: Mutex<State>,
    /// Signalled when a job is queued (or on stop).
    ready: Condvar,
    slots: usize,
    max_waiting: usize,
    /// Tests: every job costs this much (µs) instead of its execution time, so the order is
    /// exact.
    fixed_cost: Option<u64>,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The executor threads and the fair queue in front of them.
pub(crate) struct Scheduler {
    shared: Arc<Shared>,
    /// The threads start with the first request that needs them.
    started: OnceLock<()>,
}

impl Scheduler {
    /// `slots` 0: one per CPU.
    pub(crate) fn new(slots: usize, max_waiting: usize) -> Self {
        Self::with_cost(slots, max_waiting, None)
    }

    fn with_cost(slots: usize, max_waiting: usize, fixed_cost: Option<u64>) -> Self {
        let slots = if slots == 0 {
            std::thread::available_parallelism().map_or(2, |n| n.get())
        } else {
            slots
        };
        Scheduler {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    queue: FairQueue::new(),
                    running: 0,
                    rejected: 0,
                    stopping: false,
                }),
                ready: Condvar::new(),
                slots,
                max_waiting,
                fixed_cost,
            }),
            started: OnceLock::new(),
        }
    }

    fn start(&self) {
        self.started.get_or_init(|| {
            for i in 0..self.shared.slots {
                let shared = self.shared.clone();
                let spawned = std::thread::Builder::new()
                    .name(format!("sl-exec-{i}"))
                    .spawn(move || executor(&shared));
                if let Err(e) = spawned {
                    tracing::error!("could not start a service level executor thread: {e}");
                }
            }
        });
    }

    /// Runs `f` on an executor thread when its level's turn comes; Overloaded when
    /// `service_level_queue` requests already wait.
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        level: Level,
        engine: Arc<Engine>,
        f: impl FnOnce(&Engine) -> T + Send + 'static,
    ) -> Result<T, DbError> {
        self.start();
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move || {
            let r = catch_unwind(AssertUnwindSafe(|| f(&engine)));
            // The client may have gone; nobody to tell then.
            let _ = tx.send(r.map_err(|_| DbError::server("the request failed (it panicked)")));
        });
        {
            let mut st = self.shared.lock();
            if st.queue.waiting() >= self.shared.max_waiting {
                st.rejected += 1;
                return Err(DbError::Overloaded {
                    message: format!(
                        "Too many requests waiting for service level slots: {} running \
                         (service_level_slots) and {} waiting (service_level_queue); retry later",
                        self.shared.slots, self.shared.max_waiting
                    ),
                });
            }
            st.queue.push(&level, job);
        }
        self.shared.ready.notify_one();
        rx.await
            .map_err(|_| DbError::server("the service level executor dropped the request"))?
    }

    /// `/metrics`: slots, and per service level the requests started and waiting.
    pub(crate) fn export(&self, out: &mut Exposition) {
        let (counts, rejected, running) = {
            let st = self.shared.lock();
            (st.queue.counts(), st.rejected, st.running)
        };
        out.single(
            "peregrine_service_level_slots",
            "gauge",
            "Executor threads of the service level scheduler (service_level_slots).",
            self.shared.slots as f64,
        );
        out.single(
            "peregrine_service_level_running",
            "gauge",
            "Requests executing on the service level executor threads now.",
            running as f64,
        );
        out.single(
            "peregrine_service_level_rejected_total",
            "counter",
            "Requests answered Overloaded because service_level_queue was full.",
            rejected as f64,
        );
        out.family(
            "peregrine_service_level_dispatched_total",
            "counter",
            "Requests started, by the service level they ran at.",
        );
        for (name, dispatched, _) in &counts {
            out.sample(&[("service_level", name)], *dispatched as f64);
        }
        out.family(
            "peregrine_service_level_waiting",
            "gauge",
            "Requests waiting for an executor thread now, by service level.",
        );
        for (name, _, waiting) in &counts {
            out.sample(&[("service_level", name)], *waiting as f64);
        }
    }
}

impl Drop for Scheduler {
    /// The threads finish what is queued, then stop.
    fn drop(&mut self) {
        self.shared.lock().stopping = true;
        self.shared.ready.notify_all();
    }
}

/// One executor thread: takes the next job in fair-queue order, runs it, charges its level.
fn executor(shared: &Shared) {
    let mut st = shared.lock();
    loop {
        let (level, charged, job) = match st.queue.pop(Instant::now()) {
            Next::Start(level, charged, job) => (level, charged, job),
            Next::Wait(d) => {
                st = shared
                    .ready
                    .wait_timeout(st, d)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
                continue;
            }
            Next::Empty if st.stopping => return,
            Next::Empty => {
                st = shared
                    .ready
                    .wait(st)
                    .unwrap_or_else(PoisonError::into_inner);
                continue;
            }
        };
        st.running += 1;
        drop(st);
        let t = Instant::now();
        job();
        let cost = shared
            .fixed_cost
            .unwrap_or_else(|| u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX / SCALE));
        st = shared.lock();
        st.running -= 1;
        st.queue.finish(&level, charged, cost.min(u64::MAX / SCALE));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pops what starts now (every level in these tests waits, so nothing is held).
    fn start<T>(q: &mut FairQueue<T>) -> (Arc<str>, u64, T) {
        match q.pop(Instant::now()) {
            Next::Start(n, c, t) => (n, c, t),
            _ => panic!("nothing started"),
        }
    }

    fn level(name: &str, shares: u32) -> Level {
        Level {
            name: Arc::from(name),
            shares,
            timeout: None,
        }
    }

    /// Dispatch order of `n` starts with every level always waiting, each request costing
    /// `cost` µs: the names of the levels in the order they started.
    fn order(levels: &[(&str, u32)], n: usize, cost: u64) -> Vec<String> {
        let mut q = FairQueue::new();
        for (name, shares) in levels {
            for _ in 0..n {
                q.push(&level(name, *shares), ());
            }
        }
        let mut out = Vec::new();
        for _ in 0..n {
            let (name, charged, ()) = start(&mut q);
            q.finish(&name, charged, cost);
            out.push(name.to_string());
        }
        out
    }

    #[test]
    fn two_saturating_levels_split_by_their_shares() {
        let o = order(&[("interactive", 1000), ("batch", 100)], 1100, 100);
        let hi = o.iter().filter(|n| *n == "interactive").count();
        assert_eq!((hi, o.len() - hi), (1000, 100));
        // Evenly spread: every window of 11 starts holds exactly one batch request.
        for w in o.chunks(11) {
            assert_eq!(w.iter().filter(|n| *n == "batch").count(), 1, "{w:?}");
        }
    }

    #[test]
    fn the_exact_order_under_two_to_one_shares() {
        let o = order(&[("a", 1000), ("b", 500)], 6, 100);
        assert_eq!(o, ["a", "b", "a", "a", "b", "a"]);
        let o = order(&[("a", 300), ("b", 300), ("c", 300)], 6, 100);
        assert_eq!(o, ["a", "b", "c", "a", "b", "c"]);
    }

    #[test]
    fn heavier_requests_are_charged_for_their_cost() {
        // b's requests cost 10x a's at equal shares: b starts a tenth as many.
        let mut q = FairQueue::new();
        for _ in 0..400 {
            q.push(&level("a", 1000), 100u64);
            q.push(&level("b", 1000), 1000u64);
        }
        let mut count_b = 0;
        for _ in 0..220 {
            let (name, charged, cost) = start(&mut q);
            q.finish(&name, charged, cost);
            count_b += usize::from(&*name == "b");
        }
        assert!((18..=22).contains(&count_b), "{count_b}");
    }

    #[test]
    fn idle_lanes_of_many_levels_are_forgotten() {
        let mut q = FairQueue::new();
        // A level with requests waiting is never forgotten.
        for _ in 0..200 {
            q.push(&level("kept", 10), ());
        }
        for i in 0..100 {
            q.push(&level(&format!("l{i}"), 10), ());
            start(&mut q);
        }
        assert!(q.lanes.len() <= MAX_LANES);
        assert!(q.lanes.iter().any(|l| &*l.name == "kept"));
    }

    #[test]
    fn an_idle_level_earns_no_credit() {
        let mut q = FairQueue::new();
        // b runs alone for a while ...
        for _ in 0..100 {
            q.push(&level("b", 1000), ());
            let (n, c, ()) = start(&mut q);
            q.finish(&n, c, 100);
        }
        // ... then a (idle so far) arrives: it does not get 100 starts in a row.
        for _ in 0..10 {
            q.push(&level("a", 1000), ());
            q.push(&level("b", 1000), ());
        }
        let first: Vec<_> = (0..4)
            .map(|_| {
                let (n, c, ()) = start(&mut q);
                q.finish(&n, c, 100);
                n.to_string()
            })
            .collect();
        assert!(first.contains(&"b".to_string()), "{first:?}");
    }

    #[test]
    fn a_level_ahead_of_a_busy_one_waits_until_it_catches_up_or_goes_quiet() {
        let mut q = FairQueue::new();
        let (hi, lo) = (level("hi", 1000), level("lo", 100));
        let t0 = Instant::now();
        let us = |n: u64| t0 + Duration::from_micros(n);
        // Each hi request arrives alone and starts at once (nothing of hi ever waits), as on
        // a server whose executor threads are not its bottleneck; lo always has one waiting.
        let mut started = Vec::new();
        q.push(&lo, ());
        let mut t = 0;
        for _ in 0..33 {
            t += 100;
            q.push(&hi, ());
            for _ in 0..2 {
                if let Next::Start(n, c, ()) = q.pop(us(t)) {
                    q.finish(&n, c, 100);
                    if &*n == "lo" {
                        q.push(&lo, ());
                    }
                    started.push(n.to_string());
                }
            }
        }
        // lo starts once per ten hi starts: its share, though it never waited behind hi.
        let lo_starts = started.iter().filter(|n| *n == "lo").count();
        assert_eq!(
            (started.len() - lo_starts, lo_starts),
            (33, 4),
            "{started:?}"
        );
        assert!(started
            .windows(11)
            .all(|w| w.iter().filter(|n| *n == "lo").count() <= 2));
        // hi goes quiet: lo (ahead of it) waits out the window, then runs alone.
        while matches!(q.pop(us(t)), Next::Start(..)) {}
        assert!(matches!(q.pop(us(t + 1000)), Next::Wait(_)));
        let quiet = us(t) + ACTIVE_WINDOW + Duration::from_micros(1);
        assert!(matches!(q.pop(quiet), Next::Start(ref n, _, ()) if &**n == "lo"));
    }

    /// The scheduler with one executor thread: jobs queued while it is held start in
    /// fair-queue order (each charged the same fixed cost, so the order is exact).
    #[tokio::test(flavor = "current_thread")]
    async fn one_executor_runs_queued_requests_by_shares() {
        let s = Arc::new(Scheduler::with_cost(1, 1000, Some(100)));
        let engine = test_engine();
        let (hold_tx, hold_rx) = std::sync::mpsc::channel::<()>();
        let (busy_tx, busy_rx) = std::sync::mpsc::channel::<()>();
        let holder = {
            let (s, e) = (s.clone(), engine.clone());
            tokio::spawn(async move {
                s.run(level("default", 1000), e, move |_| {
                    busy_tx.send(()).unwrap();
                    hold_rx.recv().unwrap();
                })
                .await
                .unwrap()
            })
        };
        tokio::task::yield_now().await;
        busy_rx.recv().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for (name, shares) in [("hi", 1000), ("lo", 100)] {
            for _ in 0..55 {
                let (s, e, log) = (s.clone(), engine.clone(), log.clone());
                tasks.push(tokio::spawn(async move {
                    s.run(level(name, shares), e, move |_| {
                        log.lock().unwrap().push(name)
                    })
                    .await
                    .unwrap()
                }));
            }
        }
        // Wait until all 110 are queued (each task's first poll queues it).
        while s.shared.lock().queue.waiting() < 110 {
            tokio::task::yield_now().await;
        }
        hold_tx.send(()).unwrap();
        holder.await.unwrap();
        for t in tasks {
            t.await.unwrap();
        }
        let log = log.lock().unwrap();
        let first: Vec<_> = log.iter().take(55).collect();
        let lo = first.iter().filter(|n| ***n == "lo").count();
        assert_eq!(lo, 5, "{first:?}");
        assert_eq!(log.len(), 110);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn within_answers_cassandras_timeouts_at_the_deadline() {
        use proto::error::WriteType;
        let quick = async { Ok::<_, DbError>(7) };
        assert_eq!(
            within(None, Instant::now(), Timed::Read, Consistency::One, quick)
                .await
                .unwrap(),
            7
        );
        let quick = async { Ok::<_, DbError>(7) };
        let limit = Some(Duration::from_secs(30));
        assert_eq!(
            within(limit, Instant::now(), Timed::Read, Consistency::One, quick)
                .await
                .unwrap(),
            7
        );
        // Work that would take 30 s is answered at the 50 ms deadline.
        let started = Instant::now();
        let slow = async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            Ok::<_, DbError>(7)
        };
        let limit = Some(Duration::from_millis(50));
        let e = within(limit, started, Timed::Read, Consistency::Quorum, slow)
            .await
            .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(matches!(
            e,
            DbError::ReadTimeout {
                consistency: Consistency::Quorum,
                received: 0,
                block_for: 1,
                data_present: false,
                ..
            }
        ));
        assert_eq!(
            e.message(),
            "Operation timed out - received only 0 responses."
        );
        // An answer ready only at the deadline (0 ms: at once) is a timeout too.
        let ready = async { Ok::<_, DbError>(7) };
        let e = within(
            Some(Duration::ZERO),
            Instant::now(),
            Timed::Write(WriteType::UnloggedBatch),
            Consistency::One,
            ready,
        )
        .await
        .unwrap_err();
        assert!(matches!(
            e,
            DbError::WriteTimeout {
                write_type: WriteType::UnloggedBatch,
                received: 0,
                block_for: 1,
                ..
            }
        ));
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_full_queue_is_overloaded() {
        let s = Arc::new(Scheduler::with_cost(1, 1, Some(100)));
        let engine = test_engine();
        let (hold_tx, hold_rx) = std::sync::mpsc::channel::<()>();
        let (busy_tx, busy_rx) = std::sync::mpsc::channel::<()>();
        let holder = {
            let (s, e) = (s.clone(), engine.clone());
            tokio::spawn(async move {
                s.run(level("a", 10), e, move |_| {
                    busy_tx.send(()).unwrap();
                    hold_rx.recv().unwrap();
                })
                .await
            })
        };
        tokio::task::yield_now().await;
        busy_rx.recv().unwrap();
        let queued = {
            let (s, e) = (s.clone(), engine.clone());
            tokio::spawn(async move { s.run(level("a", 10), e, |_| 7).await })
        };
        while s.shared.lock().queue.waiting() < 1 {
            tokio::task::yield_now().await;
        }
        let e = s
            .run(level("b", 10), engine.clone(), |_| 0)
            .await
            .err()
            .unwrap();
        assert!(matches!(e, DbError::Overloaded { .. }));
        hold_tx.send(()).unwrap();
        holder.await.unwrap().unwrap();
        assert_eq!(queued.await.unwrap().unwrap(), 7);
    }

    fn test_engine() -> Arc<Engine> {
        let node = engine::NodeInfo {
            cluster_name: "t".into(),
            datacenter: "datacenter1".into(),
            rack: "rack1".into(),
            rpc_address: std::net::IpAddr::from([127, 0, 0, 1]),
            rpc_port: 9042,
            host_id: [0; 16],
            release_version: "5.0.9".into(),
        };
        Arc::new(Engine::open(Arc::new(storage::MemStorage::new()), node).unwrap())
    }
}
