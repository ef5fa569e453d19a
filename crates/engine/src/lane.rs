//! Which lane a statement runs in, and the pace of a scan.
//!
//! The server runs scans (reads over a token range: `SELECT ... FROM t`, `token(...)` ranges,
//! filtering and indexed reads over many partitions, `count(*)` over a table) on a pool of
//! their own with a rows-per-second limit, away from the threads that serve point operations
//! (issue 17, docs/configuration.md `scan_*`). This module gives it what it needs from the
//! engine, and nothing else:
//!
//! - [`PlanSnapshot::is_scan`] and [`PlannedQuery::is_scan`]: the classification, read off the
//!   compiled plan once (never per row);
//! - [`Engine::plan_query`] / [`Engine::run_planned`]: an unprepared QUERY split into its
//!   cheap part (parse, bind, plan) and its execution, so the caller can choose the lane
//!   between the two;
//! - [`with_pacer`]: a per-thread hook a read calls every `every` rows it reads from storage,
//!   so a scan pauses *between* batches of rows on its own thread. Readers take no locks
//!   (see the crate's invariants), so a paused scan blocks nobody; it keeps only its storage
//!   iterator.
//! - [`PlanSnapshot::is_index_lookup`] and [`within_budget`]: an indexed read by one value
//!   usually reads a few rows, and the hand-off to the scan lane and back costs more than the
//!   read (bench/results/2026-12-01/indexed-s34): the caller may run it on its own thread
//!   within a budget of rows read, and in the lane only when it reads more.
//!
//! It is **not** a scheduler: threads, queues and clocks belong to the caller.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU32, Ordering};

use proto::error::DbError;

use crate::build::{Compiled, CompiledKind};
use crate::plan::{IndexLookup, PartitionSel};
use crate::{parse_error, Engine, EngineError, Outcome, PlanSnapshot, QueryOptions, Values};

impl Compiled {
    /// A SELECT over a token range of a table (every partition, a `token()` range, or an
    /// index/filter over many partitions), as opposed to one naming its partitions by key.
    /// Virtual (system) tables are small and never scans.
    fn is_scan(&self) -> bool {
        matches!(&self.kind, CompiledKind::Select(p) if matches!(p.partitions, PartitionSel::Range { .. }))
    }

    /// A scan whose rows come from an index's entries for one value (`=`, `CONTAINS`,
    /// `CONTAINS KEY`, `m[k] = v`; not an ANN ordering, not a range of values, whose entries
    /// are gathered before any row is read): every index entry and every row it reads is
    /// counted by the pacer ([`row_read`]), so [`within_budget`] bounds its work, stale
    /// entries (whose rows are gone) included.
    fn is_index_lookup(&self) -> bool {
        matches!(&self.kind, CompiledKind::Select(p)
            if p.ann.is_none()
                && p.index.as_ref().is_some_and(|i| !matches!(i.lookup, IndexLookup::Range { .. })))
    }
}

impl PlanSnapshot {
    /// Whether executing this statement is a scan (see [`Compiled::is_scan`]); no allocation.
    pub fn is_scan(&self) -> bool {
        self.plan.is_scan()
    }

    /// Whether it is an indexed read by one value (see [`Compiled::is_index_lookup`]).
    pub fn is_index_lookup(&self) -> bool {
        self.plan.is_index_lookup()
    }
}

/// An unprepared statement parsed, bound and planned, ready to run.
pub struct PlannedQuery {
    parsed: cql::ParsedStatement,
    pub(crate) compiled: Compiled,
    values: Vec<Option<crate::BoundValue>>,
    /// The client warning of a DDL statement (`warnings::ddl_warning`), planned with the schema.
    pub(crate) ddl_warning: Option<&'static str>,
}

impl PlannedQuery {
    /// Whether running it is a scan.
    pub fn is_scan(&self) -> bool {
        self.compiled.is_scan()
    }

    #[cfg(test)]
    fn is_index_lookup_planned(&self) -> bool {
        self.compiled.is_index_lookup()
    }

    /// Whether it is a SELECT (a timeout answers a read timeout).
    pub fn is_select(&self) -> bool {
        matches!(
            self.compiled.kind,
            CompiledKind::Select(_) | CompiledKind::VirtualSelect(_)
        )
    }
}

impl Engine {
    /// The first half of [`Engine::query`]: parse, bind and plan (no storage access).
    pub fn plan_query(
        &self,
        text: &str,
        values: Values,
        opts: &QueryOptions,
        now: crate::Now,
    ) -> Result<PlannedQuery, DbError> {
        let parsed = cql::parse(text).map_err(parse_error)?;
        let values = crate::bind_values(values, &parsed)?;
        let schema = self.schema.get();
        let compiled = self
            .compile(&parsed, opts.keyspace.as_deref(), &schema, now)
            .map_err(EngineError::into_db)?;
        if values.len() != compiled.binds.len() {
            // QueryProcessor.process, once the statement is prepared (so an unknown table is
            // reported first).
            return Err(DbError::invalid("Invalid amount of bind variables"));
        }
        let ddl_warning =
            crate::warnings::ddl_warning(&parsed.statement, opts.keyspace.as_deref(), &schema);
        Ok(PlannedQuery {
            parsed,
            compiled,
            values,
            ddl_warning,
        })
    }

    /// The second half of [`Engine::query`]: runs a planned statement.
    pub fn run_planned(
        &self,
        q: &PlannedQuery,
        opts: &QueryOptions,
        now: crate::Now,
    ) -> Result<Outcome, DbError> {
        self.run(&q.parsed, &q.compiled, &q.values, opts, now)
            .map_err(EngineError::into_db)
    }
}

struct Pacer {
    every: u64,
    pending: u64,
    pace: Box<dyn FnMut(u64)>,
}

thread_local! {
    /// The pacer of the statement running on this thread, if its caller installed one.
    static PACER: RefCell<Option<Pacer>> = const { RefCell::new(None) };
}

/// Runs `run` with `pace` installed on this thread: every `every` rows read from storage
/// (1 or more), `pace(n)` is called with the rows read since its last call, between rows (the
/// place for a rate limiter to sleep). Answers `run`'s result and the rows read after the
/// last call (for the caller to account for).
pub fn with_pacer<R>(
    every: u64,
    pace: impl FnMut(u64) + 'static,
    run: impl FnOnce() -> R,
) -> (R, u64) {
    let pacer = Pacer {
        every: every.max(1),
        pending: 0,
        pace: Box::new(pace),
    };
    let previous = PACER.with(|p| p.borrow_mut().replace(pacer));
    // Puts the previous pacer back even if `run` unwinds.
    struct Restore(Option<Option<Pacer>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            if let Some(prev) = self.0.take() {
                PACER.with(|p| *p.borrow_mut() = prev);
            }
        }
    }
    let mut restore = Restore(Some(previous));
    let r = run();
    let prev = restore.0.take().flatten();
    let ours = PACER.with(|p| std::mem::replace(&mut *p.borrow_mut(), prev));
    (r, ours.map_or(0, |p| p.pending))
}

/// Whether the indexed lookups of one prepared statement are worth trying within a budget
/// ([`within_budget`]): after one went over it, the statement's next [`LookupHint::SKIP`]
/// lookups skip the try (each would read up to the budget for nothing before it starts again
/// in the lane: a `LIMIT 100` lookup under a 64-row budget lost a quarter of its lookups per
/// CPU second that way), then one tries again, so a statement whose lookups shrink comes back.
#[derive(Debug, Default)]
pub struct LookupHint(AtomicU32);

impl LookupHint {
    /// Lookups that skip the try after one went over the budget.
    pub const SKIP: u32 = 63;

    /// Whether to try this lookup within the budget (counts a skipped one).
    pub fn try_here(&self) -> bool {
        let left = self.0.load(Ordering::Relaxed);
        if left == 0 {
            return true;
        }
        // Racing lookups may both skip on one count: a hint, not a limit.
        self.0.store(left - 1, Ordering::Relaxed);
        false
    }

    /// A lookup tried within the budget went over it.
    pub fn went_over(&self) {
        self.0.store(Self::SKIP, Ordering::Relaxed);
    }
}

/// The unwind payload that stops a read over its budget (see [`within_budget`]).
struct OverBudget;

/// Runs `run` (a read) on this thread unless it reads more than `budget` rows from storage:
/// then it is stopped at the next row, its work dropped, and the answer is `None`, for the
/// caller to run it again where long reads belong. Only for reads: a statement that writes
/// must not be stopped half done.
///
/// The stop unwinds from the row past the budget to here (`resume_unwind`: no panic message),
/// through the read's own frames, which hold no locks (the crate's invariants) and whose
/// iterators and buffers are dropped as they are; a real panic goes on unwinding.
pub fn within_budget<R>(budget: u64, run: impl FnOnce() -> R) -> Option<R> {
    let stop = |_: u64| {
        std::panic::resume_unwind(Box::new(OverBudget));
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        with_pacer(budget.saturating_add(1), stop, run)
    })) {
        Ok((r, _)) => Some(r),
        Err(payload) if payload.is::<OverBudget>() => None,
        Err(payload) => std::panic::resume_unwind(payload),
    }
}

/// One row read from storage by a read (called per row, so it must stay cheap: one
/// thread-local access when no pacer is installed).
#[inline]
pub(crate) fn row_read() {
    PACER.with(|p| {
        // A pacer that reads (a nested statement) must not re-enter: skip, never panic.
        let Ok(mut guard) = p.try_borrow_mut() else {
            return;
        };
        if let Some(p) = guard.as_mut() {
            p.pending += 1;
            if p.pending >= p.every {
                let n = std::mem::take(&mut p.pending);
                (p.pace)(n);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::{engine, q};
    use std::sync::atomic::AtomicU64;
    use std::sync::Arc;

    fn setup() -> Engine {
        let e = engine();
        q(&e, None, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}").unwrap();
        q(
            &e,
            Some("ks"),
            "CREATE TABLE t (k int, c int, v int, PRIMARY KEY (k, c))",
        )
        .unwrap();
        for k in 0..10 {
            for c in 0..10 {
                q(
                    &e,
                    Some("ks"),
                    &format!("INSERT INTO t (k, c, v) VALUES ({k}, {c}, 1)"),
                )
                .unwrap();
            }
        }
        e
    }

    #[test]
    fn scans_are_told_from_partition_reads() {
        let e = setup();
        let scan = |text: &str| {
            e.prepare(text, Some("ks"), crate::tests::at(1))
                .unwrap()
                .snapshot()
                .is_scan()
        };
        assert!(scan("SELECT * FROM t"));
        assert!(scan("SELECT count(*) FROM t"));
        assert!(scan("SELECT * FROM t WHERE token(k) > ?"));
        assert!(scan("SELECT * FROM t WHERE v = 1 ALLOW FILTERING"));
        assert!(scan("SELECT DISTINCT k FROM t"));
        assert!(!scan("SELECT * FROM t WHERE k = ?"));
        assert!(!scan("SELECT * FROM t WHERE k = ? AND c = ?"));
        assert!(!scan("SELECT count(*) FROM t WHERE k IN (1, 2)"));
        assert!(!scan("INSERT INTO t (k, c, v) VALUES (?, ?, ?)"));
        assert!(!scan("SELECT * FROM system.local"));
        let opts = QueryOptions {
            keyspace: Some("ks".into()),
            ..QueryOptions::default()
        };
        let planned = |text: &str| {
            e.plan_query(text, Values::Positional(vec![]), &opts, crate::tests::at(1))
                .unwrap()
                .is_scan()
        };
        assert!(planned("SELECT * FROM t"));
        assert!(!planned("SELECT * FROM t WHERE k = 1"));
    }

    #[test]
    fn a_read_over_its_budget_is_stopped_and_one_within_it_answers() {
        let e = setup();
        let lookup = |text: &str| {
            e.plan_query(
                text,
                Values::Positional(vec![]),
                &QueryOptions {
                    keyspace: Some("ks".into()),
                    ..QueryOptions::default()
                },
                crate::tests::at(1),
            )
            .unwrap()
        };
        // 10 rows of partition 3: within 10, over 9.
        let part = "SELECT * FROM t WHERE k = 3";
        let rows =
            |r: Option<Result<Outcome, DbError>>| r.map(|o| crate::tests::rows(o.unwrap()).len());
        assert_eq!(
            rows(within_budget(10, || q(&e, Some("ks"), part))),
            Some(10)
        );
        assert_eq!(rows(within_budget(9, || q(&e, Some("ks"), part))), None);
        // Nothing is left installed: the same read answers in full afterwards, and a pacer
        // outside sees only its own rows.
        assert_eq!(rows(Some(q(&e, Some("ks"), "SELECT * FROM t"))), Some(100));
        let (inner, rest) = with_pacer(
            1000,
            |_| {},
            || within_budget(5, || q(&e, Some("ks"), part)).is_none(),
        );
        assert!(inner);
        assert_eq!(rest, 0);
        // A real panic is not taken for the budget.
        let real = std::panic::catch_unwind(|| within_budget(10, || panic!("real")));
        assert!(real.is_err());
        // Which reads are lookups by one indexed value.
        q(&e, Some("ks"), "CREATE INDEX ON t (v) USING 'sai'").unwrap();
        assert!(lookup("SELECT * FROM t WHERE v = 1").is_index_lookup_planned());
        assert!(!lookup("SELECT * FROM t WHERE v > 1").is_index_lookup_planned());
        assert!(!lookup("SELECT * FROM t").is_index_lookup_planned());
        assert!(!lookup("SELECT * FROM t WHERE k = 1").is_index_lookup_planned());
        // Stale entries count too: the rows with v = 1 are gone under the engine's feet
        // (writes delete the entries they replace; a store written before that may hold
        // stale ones), their 100 entries stay until a sweep, and a lookup reads them all.
        assert_eq!(
            crate::index::tests::remove_rows_underfoot(&e, &e.storage, usize::MAX),
            100
        );
        let by_v = "SELECT * FROM t WHERE v = 1";
        assert_eq!(rows(within_budget(99, || q(&e, Some("ks"), by_v))), None);
        assert_eq!(
            rows(within_budget(100, || q(&e, Some("ks"), by_v))),
            Some(0)
        );
    }

    #[test]
    fn a_lookup_hint_skips_the_tries_after_one_went_over() {
        let h = LookupHint::default();
        assert!(h.try_here() && h.try_here());
        h.went_over();
        for _ in 0..LookupHint::SKIP {
            assert!(!h.try_here());
        }
        assert!(h.try_here());
    }

    #[test]
    fn a_pacer_sees_every_row_read() {
        let e = setup();
        let seen = Arc::new(AtomicU64::new(0));
        let s = seen.clone();
        let (r, rest) = with_pacer(
            7,
            move |n| {
                assert_eq!(n, 7);
                s.fetch_add(n, Ordering::Relaxed);
            },
            || q(&e, Some("ks"), "SELECT count(*) FROM t"),
        );
        assert!(r.is_ok());
        assert_eq!(seen.load(Ordering::Relaxed) + rest, 100);
        // Gone afterwards: nothing more is counted.
        q(&e, Some("ks"), "SELECT * FROM t").unwrap();
        assert_eq!(seen.load(Ordering::Relaxed) + rest, 100);
        // DISTINCT reads a partition as one row.
        let (r, rest) = with_pacer(
            1000,
            |_| {},
            || q(&e, Some("ks"), "SELECT DISTINCT k FROM t"),
        );
        assert!(r.is_ok());
        assert_eq!(rest, 10);
    }
}
