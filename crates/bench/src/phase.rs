//! The timed phase the `indexed` and `vector` benches share: `concurrency` workers send one
//! operation after another from the phase's start until the end of its measured window
//! (`settle` after the start, `phase` long). Only operations that finish inside the window are
//! counted and their latencies recorded, and the servers' CPU is measured over the same window
//! (`runner::cpu_window`), so ops per server CPU second compare like with like.
//!
//! Each worker carries a state of its own (`S`: its random generator, the writes it made),
//! handed to every operation and back with its outcome, so operations need no lock; the
//! states come back with the result.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::runner::{self, CpuWindow};
use crate::stats::new_histogram;

/// Error messages kept per phase (the first ones).
const ERROR_SAMPLES: usize = 3;

/// What one operation came to.
pub(crate) enum Outcome {
    /// Answered as expected, with `rows` rows; `short` when it had fewer rows than asked for.
    Done { rows: u64, short: bool },
    /// The request failed.
    Error(String),
    /// The answer was wrong.
    Invalid(String),
}

/// The outcomes of the operations that finished inside the window.
#[derive(Default)]
pub(crate) struct Tally {
    pub rows: u64,
    pub short: u64,
    pub errors: u64,
    pub invalid: u64,
    pub samples: Vec<String>,
}

impl Tally {
    /// Keeps `what` if fewer than [`ERROR_SAMPLES`] are kept.
    pub fn sample(&mut self, what: String) {
        if self.samples.len() < ERROR_SAMPLES {
            self.samples.push(what);
        }
    }

    fn add(&mut self, other: Tally) {
        self.rows += other.rows;
        self.short += other.short;
        self.errors += other.errors;
        self.invalid += other.invalid;
        for s in other.samples {
            self.sample(s);
        }
    }

    fn count(&mut self, outcome: Outcome) -> bool {
        match outcome {
            Outcome::Done { rows, short } => {
                self.rows += rows;
                self.short += u64::from(short);
                return true;
            }
            Outcome::Error(e) => {
                self.errors += 1;
                self.sample(e);
            }
            Outcome::Invalid(e) => {
                self.invalid += 1;
                self.sample(format!("invalid: {e}"));
            }
        }
        false
    }
}

/// A finished phase.
pub(crate) struct Timed<S> {
    /// Latencies (µs) of the operations done inside the window.
    pub hist: Histogram<u64>,
    pub tally: Tally,
    pub cpu: CpuWindow,
    /// Every worker's state as its last operation left it.
    pub states: Vec<S>,
}

/// Runs one phase: a worker per state in `states`, each calling `op` with its state until the
/// window (`settle` after now, `phase` long) ends; the servers are `pids`.
pub(crate) async fn run<S, F, Fut>(
    pids: &[u32],
    settle: Duration,
    phase: Duration,
    states: Vec<S>,
    op: F,
) -> Timed<S>
where
    S: Send + 'static,
    F: Fn(S) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = (S, Outcome)> + Send + 'static,
{
    let record_from = Instant::now() + settle;
    let end = record_from + phase;
    let stop = Arc::new(AtomicBool::new(false));
    let hist = Arc::new(Mutex::new(new_histogram()));
    let workers: Vec<_> = states
        .into_iter()
        .map(|state| {
            let (op, stop, hist) = (op.clone(), stop.clone(), hist.clone());
            tokio::spawn(async move {
                let mut tally = Tally::default();
                let mut state = state;
                while !stop.load(Ordering::Relaxed) {
                    let began = Instant::now();
                    let (next, outcome) = op(state).await;
                    state = next;
                    let done = Instant::now();
                    if done < record_from || done > end {
                        continue;
                    }
                    if tally.count(outcome) {
                        hist.lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .saturating_record((done - began).as_micros().max(1) as u64);
                    }
                }
                (state, tally)
            })
        })
        .collect();
    let cpu = runner::cpu_window(pids, record_from, end).await;
    stop.store(true, Ordering::Relaxed);
    let mut tally = Tally::default();
    let mut states = Vec::with_capacity(workers.len());
    for w in workers {
        if let Ok((state, t)) = w.await {
            tally.add(t);
            states.push(state);
        }
    }
    let hist = hist.lock().unwrap_or_else(|p| p.into_inner()).clone();
    Timed {
        hist,
        tally,
        cpu,
        states,
    }
}
