//! The scan lane: scans run on a bounded pool of their own threads, each at a rows-per-second
//! limit, so a full-table scan never takes a thread that serves point operations.
//!
//! What is a scan is the engine's call (`engine::lane`: a SELECT over a token range, read off
//! the plan). Point operations keep their places: prepared point reads and writes inline on
//! the async workers, unprepared statements and fsyncing writes on tokio's blocking pool.
//!
//! - **Bounded:** `scan_threads` threads run scans; up to `scan_queue` more wait for one
//!   (waiting holds no thread, only the request); one more is answered **Overloaded** at once.
//!   Waiting is what drivers handle best (a scan just takes longer); Overloaded only past the
//!   bound, where the Python and Java drivers' default policies try the next host and report
//!   the error (`NoHostAvailable` / `AllNodesFailedException` naming it) rather than hang.
//! - **Rate:** `scan_rows_per_second` (0: none), per role `scan_role_rows_per_second`, and per
//!   request the custom payload key [`RATE_PAYLOAD_KEY`], which can only lower the limit. The
//!   limit is a token bucket per scan request: the engine calls the pacer every batch of rows
//!   it reads from storage and the pacer sleeps until the rows read so far are due. A request
//!   that read `n` rows therefore takes at least `n / rate` seconds, so a paged scan (one
//!   request per page) never reads faster than the rate. The pause is on the scan's own
//!   thread, between rows, holding no lock (engine readers take none).
//!
//! - **Priority:** the scan threads run at nice `scan_thread_nice` (default 5): while point
//!   operations want the CPU the kernel gives a scan less of it, and all of it when idle.
//!
//! # Invariants
//! - At most `scan_threads` scans execute at once; at most `scan_queue` wait.
//! - A panicking scan answers a ServerError and its thread lives on.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use engine::Engine;
use proto::error::DbError;
use server::config::Config;
use server::metrics::Exposition;

/// The custom payload key that lowers the rows-per-second limit of one request's scan
/// (ASCII digits, e.g. `b"1000"`; docs/extensions.md).
pub const RATE_PAYLOAD_KEY: &str = "peregrine-scan-rate";

type Job = Box<dyn FnOnce() + Send>;

/// Counters shared with the scan threads (`/metrics`).
#[derive(Default)]
struct Counts {
    running: AtomicUsize,
    queued: AtomicUsize,
    rejected: AtomicU64,
    completed: AtomicU64,
    rows_read: AtomicU64,
    paused_micros: AtomicU64,
}

pub(crate) struct ScanLane {
    jobs: SyncSender<Job>,
    threads: usize,
    queue: usize,
    default_rate: u64,
    role_rates: BTreeMap<String, u64>,
    counts: Arc<Counts>,
}

impl ScanLane {
    /// Starts `scan_threads` threads named `scan-N`; they stop when the lane is dropped.
    pub(crate) fn new(config: &Config) -> std::io::Result<Self> {
        let (jobs, rx) = mpsc::sync_channel::<Job>(config.scan_queue);
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..config.scan_threads.max(1) {
            let rx = rx.clone();
            let nice = config.scan_thread_nice;
            std::thread::Builder::new()
                .name(format!("scan-{i}"))
                .spawn(move || {
                    lower_priority(nice);
                    worker(&rx)
                })?;
        }
        Ok(ScanLane {
            jobs,
            threads: config.scan_threads.max(1),
            queue: config.scan_queue,
            default_rate: config.scan_rows_per_second,
            role_rates: config.scan_role_rows_per_second.clone(),
            counts: Arc::new(Counts::default()),
        })
    }

    /// The rows-per-second limit of a scan by `role` that asked for `requested` (0: none).
    /// The role's own limit replaces the global one; a request can only lower it.
    pub(crate) fn rate(&self, role: Option<&str>, requested: Option<u64>) -> u64 {
        let base = role
            .and_then(|r| self.role_rates.get(r).copied())
            .unwrap_or(self.default_rate);
        match (base, requested) {
            (0, Some(r)) => r,
            (b, Some(r)) => b.min(r),
            (b, None) => b,
        }
    }

    /// Runs `f` on a scan thread at `rate` rows per second (0: unlimited): queued while the
    /// threads are busy, Overloaded when the queue is full too.
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        engine: Arc<Engine>,
        rate: u64,
        f: impl FnOnce(&Engine) -> T + Send + 'static,
    ) -> Result<T, DbError> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let counts = self.counts.clone();
        let job: Job = Box::new(move || {
            counts.queued.fetch_sub(1, Ordering::Relaxed);
            counts.running.fetch_add(1, Ordering::Relaxed);
            let r = catch_unwind(AssertUnwindSafe(|| paced(&engine, rate, &counts, f)));
            counts.running.fetch_sub(1, Ordering::Relaxed);
            counts.completed.fetch_add(1, Ordering::Relaxed);
            // The client may have gone; nobody to tell then.
            let _ = tx.send(r.map_err(|_| DbError::server("the scan failed (it panicked)")));
        });
        self.counts.queued.fetch_add(1, Ordering::Relaxed);
        match self.jobs.try_send(job) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                self.counts.queued.fetch_sub(1, Ordering::Relaxed);
                self.counts.rejected.fetch_add(1, Ordering::Relaxed);
                return Err(DbError::Overloaded {
                    message: format!(
                        "Too many scans: {} running (scan_threads) and {} waiting (scan_queue); \
                         retry later",
                        self.threads, self.queue
                    ),
                });
            }
            Err(TrySendError::Disconnected(_)) => {
                self.counts.queued.fetch_sub(1, Ordering::Relaxed);
                return Err(DbError::server("the scan lane has stopped"));
            }
        }
        rx.await
            .map_err(|_| DbError::server("the scan lane dropped the request"))?
    }

    /// The lane's gauges and counters for `/metrics`.
    pub(crate) fn export(&self, out: &mut Exposition) {
        let c = &self.counts;
        let load = |a: &AtomicUsize| a.load(Ordering::Relaxed) as f64;
        let load64 = |a: &AtomicU64| a.load(Ordering::Relaxed) as f64;
        out.single(
            "peregrine_scan_lane_threads",
            "gauge",
            "Threads of the scan lane (scan_threads).",
            self.threads as f64,
        );
        out.single(
            "peregrine_scan_lane_running",
            "gauge",
            "Scans executing on a scan thread now.",
            load(&c.running),
        );
        out.single(
            "peregrine_scan_lane_queued",
            "gauge",
            "Scans waiting for a scan thread now.",
            load(&c.queued).max(0.0),
        );
        out.single(
            "peregrine_scan_lane_rejected_total",
            "counter",
            "Scans answered Overloaded because scan_threads and scan_queue were full.",
            load64(&c.rejected),
        );
        out.single(
            "peregrine_scan_lane_completed_total",
            "counter",
            "Scan requests (pages) the scan lane finished.",
            load64(&c.completed),
        );
        out.single(
            "peregrine_scan_lane_rows_read_total",
            "counter",
            "Rows rate-limited scans read from storage.",
            load64(&c.rows_read),
        );
        out.single(
            "peregrine_scan_lane_paused_seconds_total",
            "counter",
            "Time rate-limited scans spent paused to keep to their rows-per-second limit.",
            load64(&c.paused_micros) / 1e6,
        );
    }
}

/// Gives this thread the nice value `nice` (Linux: the priority of a thread id); a failure
/// (a container that forbids it) leaves the thread as it was, with a warning.
fn lower_priority(nice: i32) {
    if nice == 0 {
        return;
    }
    let tid = rustix::thread::gettid();
    if let Err(e) = rustix::process::setpriority_process(Some(tid), nice) {
        tracing::warn!("scan thread: could not set its nice value to {nice}: {e}");
    }
}

fn worker(rx: &Mutex<Receiver<Job>>) {
    loop {
        // The lock is held only while idle threads wait for the next job.
        let job = rx.lock().unwrap_or_else(PoisonError::into_inner).recv();
        match job {
            Ok(job) => job(),
            Err(_) => return,
        }
    }
}

/// Runs `f` with a pacer keeping it to `rate` rows per second (none when 0).
fn paced<T>(engine: &Engine, rate: u64, counts: &Arc<Counts>, f: impl FnOnce(&Engine) -> T) -> T {
    if rate == 0 {
        return f(engine);
    }
    // The pacer runs on this thread only.
    let bucket = Rc::new(RefCell::new(Bucket::new(rate, counts.clone())));
    let b = bucket.clone();
    let (r, rest) = engine::lane::with_pacer(
        Bucket::batch(rate),
        move |n| b.borrow_mut().take(n),
        || f(engine),
    );
    // The rows of the last, partial batch are paid for too, so a page never ends early.
    bucket.borrow_mut().take(rest);
    r
}

/// A token bucket that starts full of nothing: `rows` rows are due `rows / rate` seconds after
/// the start.
struct Bucket {
    rate: f64,
    start: Instant,
    rows: u64,
    counts: Arc<Counts>,
}

impl Bucket {
    fn new(rate: u64, counts: Arc<Counts>) -> Self {
        Bucket {
            rate: rate as f64,
            start: Instant::now(),
            rows: 0,
            counts,
        }
    }

    /// Rows between two pauses: about 50 pauses a second (at most 256 rows, at least 1), so a
    /// slow rate is smooth and a fast one costs few clock reads.
    fn batch(rate: u64) -> u64 {
        (rate / 50).clamp(1, 256)
    }

    fn take(&mut self, n: u64) {
        if n == 0 {
            return;
        }
        self.rows += n;
        self.counts.rows_read.fetch_add(n, Ordering::Relaxed);
        let due = self.start + Duration::from_secs_f64(self.rows as f64 / self.rate);
        let now = Instant::now();
        if due > now {
            let pause = due - now;
            self.counts
                .paused_micros
                .fetch_add(pause.as_micros() as u64, Ordering::Relaxed);
            std::thread::sleep(pause);
        }
    }
}

/// The rate a request asks for in its custom payload, if any; a bad value is an Invalid error
/// naming the key and what it takes.
pub(crate) fn requested_rate(
    payload: &[(String, Option<bytes::Bytes>)],
) -> Result<Option<u64>, DbError> {
    let Some((_, value)) = payload.iter().find(|(k, _)| k == RATE_PAYLOAD_KEY) else {
        return Ok(None);
    };
    let bad = |shown: String| {
        DbError::invalid(format!(
            "Invalid value {shown} for custom payload key '{RATE_PAYLOAD_KEY}': expected the \
             rows per second a scan may read, as ASCII digits from 1 to {} (e.g. b'1000'); it \
             can only lower the server's limit",
            u32::MAX
        ))
    };
    let Some(value) = value else {
        return Err(bad("null".into()));
    };
    let text = std::str::from_utf8(value).map_err(|_| bad(format!("0x{}", hex(value))))?;
    let shown = || format!("'{}'", text.chars().take(40).collect::<String>());
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad(shown()));
    }
    match text.parse::<u64>() {
        Ok(n) if (1..=u64::from(u32::MAX)).contains(&n) => Ok(Some(n)),
        _ => Err(bad(shown())),
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().take(20).map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lane(threads: usize, queue: usize, rate: u64) -> ScanLane {
        let mut c = Config {
            scan_threads: threads,
            scan_queue: queue,
            scan_rows_per_second: rate,
            ..Config::default()
        };
        c.scan_role_rows_per_second.insert("etl".into(), 50);
        c.scan_role_rows_per_second.insert("free".into(), 0);
        ScanLane::new(&c).unwrap()
    }

    #[test]
    fn the_rate_comes_from_role_then_global_and_a_request_only_lowers_it() {
        let l = lane(1, 0, 1000);
        assert_eq!(l.rate(None, None), 1000);
        assert_eq!(l.rate(Some("bob"), None), 1000);
        assert_eq!(l.rate(Some("etl"), None), 50);
        assert_eq!(l.rate(Some("free"), None), 0);
        assert_eq!(l.rate(None, Some(10)), 10);
        assert_eq!(l.rate(None, Some(5000)), 1000);
        assert_eq!(l.rate(Some("etl"), Some(5000)), 50);
        assert_eq!(l.rate(Some("free"), Some(7)), 7);
        assert_eq!(lane(1, 0, 0).rate(None, None), 0);
    }

    #[test]
    fn payload_values_are_checked() {
        let p = |v: Option<&'static [u8]>| {
            requested_rate(&[(
                RATE_PAYLOAD_KEY.to_string(),
                v.map(bytes::Bytes::from_static),
            )])
        };
        assert_eq!(requested_rate(&[]).unwrap(), None);
        assert_eq!(p(Some(b"1000")).unwrap(), Some(1000));
        for bad in [
            &b""[..],
            b"0",
            b"-5",
            b"1.5",
            b"fast",
            b"99999999999",
            b"\xff\x00",
        ] {
            let e = p(Some(bad)).unwrap_err();
            assert!(
                e.message()
                    .contains("custom payload key 'peregrine-scan-rate'"),
                "{}",
                e.message()
            );
        }
        assert!(p(None)
            .unwrap_err()
            .message()
            .starts_with("Invalid value null"));
    }

    #[test]
    fn a_bucket_keeps_to_its_rate() {
        let counts = Arc::new(Counts::default());
        let mut b = Bucket::new(1000, counts);
        let t = Instant::now();
        for _ in 0..10 {
            b.take(20);
        }
        // 200 rows at 1000/s: at least 0.2 s.
        assert!(
            t.elapsed() >= Duration::from_millis(200),
            "{:?}",
            t.elapsed()
        );
    }
}
