//! Workload priorities: a share-weighted fair queue in front of execution, per service level
//! (ScyllaDB's service levels; the statements and which level a role runs at are
//! `engine::service_levels`).
//!
//! **Off until a service level exists:** the backend asks [`Scheduler::admit`], which first
//! loads one flag (`ServiceLevels::active`); while no level exists it returns at once with no
//! lock taken and nothing allocated, so the default path costs one atomic load per request.
//!
//! **On:** at most `slots` requests (`service_level_slots`, default the CPU count) execute at
//! once; the others wait in one FIFO per service level (bounded in all by
//! `service_level_queue`; one more is Overloaded). When a slot frees, the level to go next is
//! chosen by start-time fair queuing over virtual time ([`FairQueue`]): each level has a
//! virtual clock advanced by the cost of what it ran divided by its shares, and the waiting
//! level with the earliest clock goes first. The cost is the request's execution time
//! (from the slot being granted to its release), charged as an estimate (the level's recent
//! average) when it starts and corrected when it ends, so a level of heavy requests is
//! charged for them and bursts spread over levels. A level that was idle restarts at the
//! current virtual time: idleness earns no credit. With two levels both saturating, each
//! gets execution time in proportion to its shares (1000 : 100 gives 10 : 1); a level alone
//! gets every slot (work-conserving).
//!
//! Scans are not queued here: they already run apart, in the scan lane (`lanes`). Nor are
//! PREPARE and the login: they are the driver's, before and beside the workload.
//!
//! # Invariants
//! - At most `slots` permits exist at once; a permit released (dropped) lets the next in.
//! - A waiter that went away (its request was cancelled) never holds a slot.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use engine::service_levels::Level;
use proto::error::DbError;
use server::metrics::Exposition;
use tokio::sync::oneshot;

/// Virtual time units per unit of cost at 1000 shares (cost in microseconds).
const SCALE: u64 = 1000;

/// First cost estimate of a level: 100 µs (replaced by what its requests take).
const FIRST_ESTIMATE_MICROS: u64 = 100;

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
                self.lanes.push(Lane {
                    name: level.name.clone(),
                    shares: 0,
                    vtime: self.now,
                    estimate: FIRST_ESTIMATE_MICROS,
                    waiting: VecDeque::new(),
                    dispatched: 0,
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

    /// A request of `level` starts without waiting (a slot was free and nobody waited):
    /// charged like a dispatched one. Returns the estimate charged.
    pub(crate) fn start_now(&mut self, level: &Level) -> u64 {
        let i = self.lane(level);
        self.wake(i);
        self.start(i)
    }

    fn start(&mut self, i: usize) -> u64 {
        let l = &mut self.lanes[i];
        self.now = self.now.max(l.vtime);
        l.vtime += l.estimate * SCALE / l.shares;
        l.dispatched += 1;
        l.estimate
    }

    /// The next request to start: the head of the waiting level with the earliest virtual
    /// time (ties: the level seen first). Returns its level, the estimate charged, the item.
    pub(crate) fn pop(&mut self) -> Option<(Arc<str>, u64, T)> {
        let i = self
            .lanes
            .iter()
            .enumerate()
            .filter(|(_, l)| !l.waiting.is_empty())
            .min_by_key(|(i, l)| (l.vtime, *i))
            .map(|(i, _)| i)?;
        let item = self.lanes[i].waiting.pop_front()?;
        self.waiting -= 1;
        let charged = self.start(i);
        Some((self.lanes[i].name.clone(), charged, item))
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

struct State {
    running: usize,
    queue: FairQueue<oneshot::Sender<Permit>>,
    rejected: u64,
}

struct Shared {
    state: Mutex<State>,
    slots: usize,
    max_waiting: usize,
}

/// The right to execute one request; dropping it lets the next one in.
pub(crate) struct Permit {
    shared: Option<Arc<Shared>>,
    level: Arc<str>,
    charged: u64,
    started: Instant,
}

impl Permit {
    /// Releases the slot as if the request had cost `cost` (tests; `drop` uses the time since
    /// the slot was granted).
    #[cfg(test)]
    fn finish_with(mut self, cost: Duration) {
        if let Some(s) = self.shared.take() {
            s.finish(&self.level, self.charged, cost);
        }
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some(s) = self.shared.take() {
            s.finish(&self.level, self.charged, self.started.elapsed());
        }
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn finish(self: Arc<Self>, level: &str, charged: u64, cost: Duration) {
        let mut st = self.lock();
        let micros = u64::try_from(cost.as_micros()).unwrap_or(u64::MAX / SCALE);
        st.queue
            .finish(level, charged, micros.min(u64::MAX / SCALE));
        st.running -= 1;
        self.dispatch(&mut st);
    }

    /// Starts waiting requests while slots are free.
    fn dispatch(self: &Arc<Self>, st: &mut State) {
        while st.running < self.slots {
            let Some((level, charged, tx)) = st.queue.pop() else {
                return;
            };
            st.running += 1;
            let permit = Permit {
                shared: Some(self.clone()),
                level,
                charged,
                started: Instant::now(),
            };
            if let Err(mut p) = tx.send(permit) {
                // The request went away while waiting: its slot goes to the next one.
                p.shared = None;
                st.running -= 1;
            }
        }
    }
}

pub(crate) struct Scheduler {
    shared: Arc<Shared>,
}

impl Scheduler {
    /// `slots` 0: one per CPU.
    pub(crate) fn new(slots: usize, max_waiting: usize) -> Self {
        let slots = if slots == 0 {
            std::thread::available_parallelism().map_or(2, |n| n.get())
        } else {
            slots
        };
        Scheduler {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    running: 0,
                    queue: FairQueue::new(),
                    rejected: 0,
                }),
                slots,
                max_waiting,
            }),
        }
    }

    /// Waits for a slot for a request of `level`: at once when one is free and nobody
    /// waits, else in its level's queue; Overloaded when the queue is full.
    pub(crate) async fn acquire(&self, level: Level) -> Result<Permit, DbError> {
        let rx = {
            let mut st = self.shared.lock();
            if st.running < self.shared.slots && st.queue.waiting() == 0 {
                st.running += 1;
                let charged = st.queue.start_now(&level);
                return Ok(Permit {
                    shared: Some(self.shared.clone()),
                    level: level.name,
                    charged,
                    started: Instant::now(),
                });
            }
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
            let (tx, rx) = oneshot::channel();
            st.queue.push(&level, tx);
            rx
        };
        rx.await
            .map_err(|_| DbError::server("the service level scheduler dropped the request"))
    }

    /// `/metrics`: slots, and per service level the requests started and waiting.
    pub(crate) fn export(&self, out: &mut Exposition) {
        let (counts, rejected) = {
            let st = self.shared.lock();
            (st.queue.counts(), st.rejected)
        };
        out.single(
            "peregrine_service_level_slots",
            "gauge",
            "Requests that may execute at once while service levels exist (service_level_slots).",
            self.shared.slots as f64,
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
            "Requests waiting for a slot now, by service level.",
        );
        for (name, _, waiting) in &counts {
            out.sample(&[("service_level", name)], *waiting as f64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(name: &str, shares: u32) -> Level {
        Level {
            name: Arc::from(name),
            shares,
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
            let (name, charged, ()) = q.pop().unwrap();
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
        for _ in 0..200 {
            q.push(&level("a", 1000), 100u64);
            q.push(&level("b", 1000), 1000u64);
        }
        let mut count_b = 0;
        for _ in 0..220 {
            let (name, charged, cost) = q.pop().unwrap();
            q.finish(&name, charged, cost);
            count_b += usize::from(&*name == "b");
        }
        assert!((18..=22).contains(&count_b), "{count_b}");
    }

    #[test]
    fn an_idle_level_earns_no_credit() {
        let mut q = FairQueue::new();
        // b runs alone for a while ...
        for _ in 0..100 {
            q.push(&level("b", 1000), ());
            let (n, c, ()) = q.pop().unwrap();
            q.finish(&n, c, 100);
        }
        // ... then a (idle so far) arrives: it does not get 100 starts in a row.
        for _ in 0..10 {
            q.push(&level("a", 1000), ());
            q.push(&level("b", 1000), ());
        }
        let first: Vec<_> = (0..4)
            .map(|_| {
                let (n, c, ()) = q.pop().unwrap();
                q.finish(&n, c, 100);
                n.to_string()
            })
            .collect();
        assert!(first.contains(&"b".to_string()), "{first:?}");
    }

    /// The scheduler with one slot: requests queued behind a held slot start in fair-queue
    /// order, each when the one before it releases its permit.
    #[tokio::test(flavor = "current_thread")]
    async fn one_slot_lets_queued_requests_in_by_shares() {
        let s = Arc::new(Scheduler::new(1, 1000));
        let held = s.acquire(level("default", 1000)).await.unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for (name, shares) in [("hi", 1000), ("lo", 100)] {
            for _ in 0..55 {
                let (s, log) = (s.clone(), log.clone());
                tasks.push(tokio::spawn(async move {
                    let p = s.acquire(level(name, shares)).await.unwrap();
                    log.lock().unwrap().push(name);
                    p.finish_with(Duration::from_micros(100));
                }));
            }
        }
        // Wait until all 110 are queued (each task's first poll queues it).
        while s.shared.lock().queue.waiting() < 110 {
            tokio::task::yield_now().await;
        }
        held.finish_with(Duration::from_micros(100));
        for t in tasks {
            t.await.unwrap();
        }
        let log = log.lock().unwrap();
        let first: Vec<_> = log.iter().take(55).collect();
        let lo = first.iter().filter(|n| ***n == "lo").count();
        assert_eq!(lo, 5, "{first:?}");
        assert_eq!(s.shared.lock().running, 0);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_full_queue_is_overloaded_and_a_cancelled_waiter_frees_nothing() {
        let s = Scheduler::new(1, 1);
        let held = s.acquire(level("a", 10)).await.unwrap();
        let waiter = s.acquire(level("a", 10));
        let mut waiter = Box::pin(waiter);
        // First poll queues it.
        assert!(futures_poll(&mut waiter).is_none());
        let e = s.acquire(level("b", 10)).await.err().unwrap();
        assert!(matches!(e, DbError::Overloaded { .. }));
        drop(waiter);
        drop(held);
        // The cancelled waiter's slot went back: a new request starts at once.
        let p = s.acquire(level("b", 10)).await.unwrap();
        assert_eq!(s.shared.lock().running, 1);
        drop(p);
        assert_eq!(s.shared.lock().running, 0);
    }

    fn futures_poll<F: std::future::Future + Unpin>(f: &mut F) -> Option<F::Output> {
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        match std::pin::Pin::new(f).poll(&mut cx) {
            std::task::Poll::Ready(v) => Some(v),
            std::task::Poll::Pending => None,
        }
    }
}
