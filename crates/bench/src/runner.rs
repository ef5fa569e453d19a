//! Drives a workload against one endpoint: connects with the `scylla` driver (few connections,
//! many streams each), prepares the statements, runs worker tasks that each keep up to
//! `concurrency / workers` requests in flight from a single task, and collects per-second
//! intervals into totals, a timeline and a live progress line.
//!
//! With a target rate, every operation has an intended start time on a fixed schedule and its
//! latency is measured from that time, so a stalled server shows up in the percentiles
//! (no coordinated omission). Without one, the intended start is the moment of issue.

use crate::stats::{Recorder, TimelinePoint};
use crate::validate::{Expectation, Validator};
use crate::workload::{
    field_value, key_name, InsertCounter, KeyChooser, OpChooser, OpKind, WorkloadSpec,
};
use anyhow::{bail, Context};
use futures::stream::{FuturesUnordered, StreamExt};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use scylla::client::execution_profile::ExecutionProfile;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::client::PoolSize;
use scylla::errors::{DbError, ExecutionError, RequestAttemptError};
use scylla::policies::retry::FallthroughRetryPolicy;
use scylla::statement::prepared::PreparedStatement;
use scylla::statement::Consistency;
use scylla::value::Row;
use serde::Serialize;
use std::io::{IsTerminal, Write};
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Most requests in flight the bench allows (seed 002 swept 64..1024).
pub const MAX_CONCURRENCY: usize = 1024;

/// A named set of contact points.
#[derive(Debug, Clone, Serialize)]
pub struct Endpoint {
    /// Label used in tables (`peregrine`, `cassandra`, or the first host).
    pub name: String,
    /// `host:port` contact points.
    pub hosts: Vec<String>,
    /// Local server processes whose CPU use is measured during runs (`name=hosts@pid+pid`),
    /// so that throughput per server core can be reported.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pids: Vec<u32>,
}

/// How to connect.
#[derive(Debug, Clone, Serialize)]
pub struct ConnectConfig {
    /// Connections per host; each carries many streams.
    pub connections: usize,
    /// Client-side timeout per request.
    #[serde(with = "secs")]
    pub request_timeout: Duration,
    /// Consistency level of every statement.
    pub consistency: String,
    /// Optional PasswordAuthenticator credentials (the password is never serialised).
    pub user: Option<String>,
    /// Password for `user`.
    #[serde(skip)]
    pub password: Option<String>,
}

/// How hard and how long to drive the workload.
#[derive(Debug, Clone, Serialize)]
pub struct LoadShape {
    /// Requests in flight across all workers (1..=1024).
    pub concurrency: usize,
    /// Driver tasks, each with `concurrency / workers` requests in flight.
    pub workers: usize,
    /// Stop after this long (measured part, warm-up excluded).
    #[serde(with = "opt_secs")]
    pub duration: Option<Duration>,
    /// Stop after this many operations.
    pub operations: Option<u64>,
    /// Operations per second across all workers; `None` = as fast as possible.
    pub target_rate: Option<f64>,
    /// Operations completing in this first period are not recorded.
    #[serde(with = "secs")]
    pub warmup: Duration,
    /// First insert sequence number (load: 0; run: `records`).
    pub insert_start: u64,
    /// Check every read against what was written.
    pub validate: bool,
    /// RNG seed (recorded so a run can be repeated).
    pub seed: u64,
    /// Print a progress line every second.
    pub progress: bool,
}

/// Schema location and shape.
#[derive(Debug, Clone, Serialize)]
pub struct SchemaConfig {
    /// Keyspace (`ycsb` for YCSB workloads, `stress` for the presets).
    pub keyspace: String,
    /// Table (`usertable` / `standard1`).
    pub table: String,
    /// Replication factor used when the keyspace is created.
    pub replication_factor: u32,
    /// Drop the table before loading.
    pub drop_first: bool,
}

/// What one run measured.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// Totals over the measured period.
    pub total: Recorder,
    /// One point per second of the measured period.
    pub timeline: Vec<TimelinePoint>,
    /// Measured seconds (warm-up excluded, drain included).
    pub seconds: f64,
    /// CPU seconds this process used during the run (user + system).
    pub client_cpu_seconds: f64,
    /// CPU seconds the endpoint's server processes ([`Endpoint::pids`]) used during the
    /// measured period, when given.
    pub server_cpu_seconds: Option<f64>,
    /// `release_version` from `system.local`, if the server has it.
    pub server_version: Option<String>,
    /// Unix time the run started.
    pub started_unix: u64,
    /// The first insert sequence number the run did not use: where a following run over
    /// the same data continues, so that its inserts write new keys.
    pub next_insert: u64,
}

mod secs {
    pub fn serialize<S: serde::Serializer>(
        d: &std::time::Duration,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
}

mod opt_secs {
    pub fn serialize<S: serde::Serializer>(
        d: &Option<std::time::Duration>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }
}

/// Parses a consistency name (`one`, `quorum`, `local_quorum`, …).
pub fn parse_consistency(s: &str) -> anyhow::Result<Consistency> {
    Ok(match s.to_ascii_lowercase().as_str() {
        "any" => Consistency::Any,
        "one" => Consistency::One,
        "two" => Consistency::Two,
        "three" => Consistency::Three,
        "quorum" => Consistency::Quorum,
        "all" => Consistency::All,
        "local_quorum" => Consistency::LocalQuorum,
        "each_quorum" => Consistency::EachQuorum,
        "local_one" => Consistency::LocalOne,
        other => bail!("unknown consistency level {other:?}"),
    })
}

/// Opens a session: `connections` per host, no retries (a failure is counted, not hidden),
/// and the client-side request timeout.
pub async fn connect(endpoint: &Endpoint, cfg: &ConnectConfig) -> anyhow::Result<Session> {
    let profile = ExecutionProfile::builder()
        .consistency(parse_consistency(&cfg.consistency)?)
        .request_timeout(Some(cfg.request_timeout))
        .retry_policy(Arc::new(FallthroughRetryPolicy))
        .build();
    let mut builder = SessionBuilder::new()
        .known_nodes(&endpoint.hosts)
        .pool_size(PoolSize::PerHost(
            NonZeroUsize::new(cfg.connections.max(1)).expect("max(1) is non-zero"),
        ))
        .tcp_nodelay(true)
        .default_execution_profile_handle(profile.into_handle());
    if let Some(user) = &cfg.user {
        builder = builder.user(user, cfg.password.clone().unwrap_or_default());
    }
    builder.build().await.with_context(|| {
        format!(
            "connecting to {} ({})",
            endpoint.name,
            endpoint.hosts.join(",")
        )
    })
}

/// `release_version` of the node the driver asks, for the report.
pub async fn server_version(session: &Session) -> Option<String> {
    let res = session
        .query_unpaged("SELECT release_version FROM system.local", ())
        .await
        .ok()?
        .into_rows_result()
        .ok()?;
    let (v,) = res.maybe_first_row::<(Option<String>,)>().ok()??;
    v
}

fn field_names(spec: &WorkloadSpec) -> Vec<String> {
    (0..spec.field_count).map(|i| format!("field{i}")).collect()
}

/// Creates the keyspace and table if they do not exist (dropping the table first if asked).
pub async fn create_schema(
    session: &Session,
    schema: &SchemaConfig,
    spec: &WorkloadSpec,
) -> anyhow::Result<()> {
    let ks = &schema.keyspace;
    let t = &schema.table;
    session
        .query_unpaged(
            format!(
                "CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = \
                 {{'class': 'SimpleStrategy', 'replication_factor': {}}}",
                schema.replication_factor
            ),
            (),
        )
        .await
        .with_context(|| format!("creating keyspace {ks}"))?;
    if schema.drop_first {
        session
            .query_unpaged(format!("DROP TABLE IF EXISTS {ks}.{t}"), ())
            .await
            .with_context(|| format!("dropping {ks}.{t}"))?;
    }
    let cols: Vec<String> = field_names(spec)
        .iter()
        .map(|f| format!("{f} varchar"))
        .collect();
    session
        .query_unpaged(
            format!(
                "CREATE TABLE IF NOT EXISTS {ks}.{t} (y_id varchar PRIMARY KEY, {})",
                cols.join(", ")
            ),
            (),
        )
        .await
        .with_context(|| format!("creating table {ks}.{t}"))?;
    // Best effort: a single node agrees at once; older servers may not support the query.
    let _ = session.await_schema_agreement().await;
    Ok(())
}

/// The prepared statements a workload uses.
struct Statements {
    read: PreparedStatement,
    /// One per field: `UPDATE … SET fieldN = ? WHERE y_id = ?`.
    update_one: Vec<PreparedStatement>,
    /// Writes every field; used for inserts and whole-row updates.
    insert: PreparedStatement,
    scan: Option<PreparedStatement>,
}

async fn prepare(
    session: &Session,
    schema: &SchemaConfig,
    spec: &WorkloadSpec,
) -> anyhow::Result<Statements> {
    let ks = &schema.keyspace;
    let t = &schema.table;
    let fields = field_names(spec);
    let all = fields.join(", ");
    let prep = |q: String| async move {
        session
            .prepare(q.clone())
            .await
            .with_context(|| format!("preparing {q}"))
    };
    let mut read = prep(format!("SELECT y_id, {all} FROM {ks}.{t} WHERE y_id = ?")).await?;
    // The result columns never change during a run: let the server skip sending them.
    read.set_use_cached_result_metadata(true);
    let cond = if spec.conditional {
        " IF NOT EXISTS"
    } else {
        ""
    };
    let insert = prep(format!(
        "INSERT INTO {ks}.{t} (y_id, {all}) VALUES (?{}){cond}",
        ", ?".repeat(fields.len())
    ))
    .await?;
    let mut update_one = Vec::new();
    let needs_update = spec.proportions[OpKind::Update.index()] > 0.0
        || spec.proportions[OpKind::ReadModifyWrite.index()] > 0.0;
    if needs_update && !spec.write_all_fields {
        for f in &fields {
            let cond = if spec.conditional {
                format!(" IF {f} != ?")
            } else {
                String::new()
            };
            update_one
                .push(prep(format!("UPDATE {ks}.{t} SET {f} = ? WHERE y_id = ?{cond}")).await?);
        }
    }
    let scan = if spec.proportions[OpKind::Scan.index()] > 0.0 {
        let mut scan = prep(format!(
            "SELECT y_id, {all} FROM {ks}.{t} WHERE token(y_id) >= token(?) LIMIT ?"
        ))
        .await?;
        scan.set_use_cached_result_metadata(true);
        Some(scan)
    } else {
        None
    };
    Ok(Statements {
        read,
        update_one,
        insert,
        scan,
    })
}

/// State shared by the workers of one run.
struct Shared {
    session: Arc<Session>,
    stmts: Statements,
    spec: WorkloadSpec,
    inserts: Mutex<InsertCounter>,
    /// Mirror of `inserts.last()` for the lock-free read path.
    last_key: AtomicU64,
    /// Operations claimed so far (for `--operations`).
    claimed: AtomicU64,
    /// The next key of the sequential distribution, shared by the workers.
    sequence: Arc<AtomicU64>,
    stop: AtomicBool,
    validator: Option<Validator>,
}

impl Shared {
    fn acknowledge_insert(&self, keynum: u64) {
        let mut c = self.inserts.lock().expect("insert counter lock");
        c.acknowledge(keynum);
        self.last_key.store(c.last(), Ordering::Release);
    }
}

/// One operation decided by a worker, executed by [`execute`].
struct Planned {
    kind: OpKind,
    keynum: u64,
    key: String,
    /// Field updated (single-field updates).
    field: usize,
    /// Version written (field values are derived from key, field and version).
    version: u32,
    scan_len: i32,
    intended: Instant,
    expect: Option<Expectation>,
}

enum Outcome {
    Ok,
    NotFound,
    Failed {
        class: String,
        timeout: bool,
        message: String,
    },
    Invalid {
        message: String,
    },
}

struct Completed {
    kind: OpKind,
    intended: Instant,
    keynum: u64,
    outcome: Outcome,
    validated: bool,
}

/// Maps a driver error to (class, is-timeout).
fn classify(e: &ExecutionError) -> (String, bool) {
    match e {
        ExecutionError::RequestTimeout(_) => ("client-timeout".into(), true),
        ExecutionError::LastAttemptError(RequestAttemptError::DbError(db, _)) => {
            let timeout = matches!(
                db,
                DbError::ReadTimeout { .. } | DbError::WriteTimeout { .. }
            );
            let name = format!("{db:?}");
            let class = name
                .split([' ', '{', '('])
                .next()
                .unwrap_or("DbError")
                .to_string();
            (class, timeout)
        }
        ExecutionError::LastAttemptError(other) => {
            let name = format!("{other:?}");
            (
                name.split([' ', '{', '('])
                    .next()
                    .unwrap_or("attempt")
                    .to_string(),
                false,
            )
        }
        other => {
            let name = format!("{other:?}");
            (
                name.split([' ', '{', '('])
                    .next()
                    .unwrap_or("error")
                    .to_string(),
                false,
            )
        }
    }
}

fn failed(e: ExecutionError) -> Outcome {
    let (class, timeout) = classify(&e);
    let mut message = e.to_string();
    message.truncate(300);
    Outcome::Failed {
        class,
        timeout,
        message,
    }
}

fn row_values(shared: &Shared, key: &str, version: u32) -> Vec<String> {
    let spec = &shared.spec;
    let mut v = Vec::with_capacity(spec.field_count + 1);
    v.push(key.to_string());
    for f in 0..spec.field_count {
        v.push(field_value(key, f, version, spec.field_length));
    }
    v
}

async fn write_update(shared: &Shared, op: &Planned) -> Result<(), ExecutionError> {
    let spec = &shared.spec;
    if spec.write_all_fields || shared.stmts.update_one.is_empty() {
        let vals = row_values(shared, &op.key, op.version);
        shared
            .session
            .execute_unpaged(&shared.stmts.insert, vals)
            .await?;
    } else {
        let value = field_value(&op.key, op.field, op.version, spec.field_length);
        let stmt = &shared.stmts.update_one[op.field];
        if spec.conditional {
            // A value no write stores, so the condition reads the row and holds.
            shared
                .session
                .execute_unpaged(stmt, (value, op.key.as_str(), "-"))
                .await?;
        } else {
            shared
                .session
                .execute_unpaged(stmt, (value, op.key.as_str()))
                .await?;
        }
    }
    Ok(())
}

/// Reads one row; returns whether it was found and, when validating, whether it matched.
async fn read_row(shared: &Shared, op: &Planned) -> Outcome {
    let res = match shared
        .session
        .execute_unpaged(&shared.stmts.read, (op.key.as_str(),))
        .await
    {
        Ok(r) => r,
        Err(e) => return failed(e),
    };
    let rows = match res.into_rows_result() {
        Ok(r) => r,
        Err(e) => {
            return Outcome::Failed {
                class: "not-rows".into(),
                timeout: false,
                message: e.to_string(),
            }
        }
    };
    match (&shared.validator, &op.expect) {
        (Some(v), Some(expect)) => {
            let row = match rows.maybe_first_row::<Row>() {
                Ok(Some(r)) => r,
                Ok(None) => {
                    return Outcome::Invalid {
                        message: format!("row {} is missing", op.key),
                    }
                }
                Err(e) => {
                    return Outcome::Invalid {
                        message: format!("row {}: {e}", op.key),
                    }
                }
            };
            match v.check_row(&shared.spec, &op.key, &row, expect) {
                Ok(()) => Outcome::Ok,
                Err(message) => Outcome::Invalid { message },
            }
        }
        _ => {
            if rows.rows_num() == 0 {
                Outcome::NotFound
            } else {
                Outcome::Ok
            }
        }
    }
}

async fn execute(shared: Arc<Shared>, op: Planned) -> Completed {
    let validating = shared.validator.is_some();
    let mut validated = false;
    let outcome = match op.kind {
        OpKind::Read => {
            validated = validating;
            read_row(&shared, &op).await
        }
        OpKind::Update => match write_update(&shared, &op).await {
            Ok(()) => Outcome::Ok,
            Err(e) => failed(e),
        },
        OpKind::Insert => {
            let vals = row_values(&shared, &op.key, op.version);
            match shared
                .session
                .execute_unpaged(&shared.stmts.insert, vals)
                .await
            {
                Ok(_) => Outcome::Ok,
                Err(e) => failed(e),
            }
        }
        OpKind::Scan => {
            let stmt = shared
                .stmts
                .scan
                .as_ref()
                .expect("scan prepared when scans are in the mix");
            match shared
                .session
                .execute_unpaged(stmt, (op.key.as_str(), op.scan_len))
                .await
            {
                Err(e) => failed(e),
                Ok(res) => match res.into_rows_result() {
                    Err(e) => Outcome::Failed {
                        class: "not-rows".into(),
                        timeout: false,
                        message: e.to_string(),
                    },
                    Ok(rows) => match &shared.validator {
                        Some(v) => {
                            validated = true;
                            match v.check_scan(&shared.spec, &rows, op.scan_len) {
                                Ok(()) => Outcome::Ok,
                                Err(message) => Outcome::Invalid { message },
                            }
                        }
                        None if rows.rows_num() == 0 => Outcome::NotFound,
                        None => Outcome::Ok,
                    },
                },
            }
        }
        OpKind::ReadModifyWrite => {
            validated = validating;
            match read_row(&shared, &op).await {
                Outcome::Ok | Outcome::NotFound => match write_update(&shared, &op).await {
                    Ok(()) => Outcome::Ok,
                    Err(e) => failed(e),
                },
                other => other,
            }
        }
    };
    if let Some(v) = &shared.validator {
        if matches!(
            op.kind,
            OpKind::Update | OpKind::Insert | OpKind::ReadModifyWrite
        ) {
            let ok = matches!(outcome, Outcome::Ok);
            let fields = written_fields(&shared.spec, op.kind, op.field);
            v.write_done(op.keynum, &fields, op.version, ok);
        }
    }
    if op.kind == OpKind::Insert {
        shared.acknowledge_insert(op.keynum);
    }
    Completed {
        kind: op.kind,
        intended: op.intended,
        keynum: op.keynum,
        outcome,
        validated,
    }
}

fn written_fields(spec: &WorkloadSpec, kind: OpKind, field: usize) -> Vec<usize> {
    if kind == OpKind::Insert || spec.write_all_fields {
        (0..spec.field_count).collect()
    } else {
        vec![field]
    }
}

/// Messages from workers to the collector.
enum Report {
    /// Everything a worker measured in `second` (it will not report that second again).
    Interval {
        worker: usize,
        second: u64,
        rec: Box<Recorder>,
    },
    /// The worker has finished.
    Done { worker: usize },
}

struct WorkerCtx {
    id: usize,
    shared: Arc<Shared>,
    concurrency: usize,
    /// Gap between intended starts for this worker, with a target rate.
    interval: Option<Duration>,
    start: Instant,
    measure_start: Instant,
    end: Option<Instant>,
    operations: Option<u64>,
    seed: u64,
    tx: mpsc::UnboundedSender<Report>,
}

fn second_of(ctx: &WorkerCtx, t: Instant) -> u64 {
    t.saturating_duration_since(ctx.measure_start).as_secs()
}

async fn worker(ctx: WorkerCtx) {
    let shared = ctx.shared.clone();
    let spec = &shared.spec;
    let mut rng = SmallRng::seed_from_u64(ctx.seed.wrapping_add(ctx.id as u64 * 0x9E37_79B9));
    let chooser = OpChooser::new(spec);
    let mut keys = KeyChooser::new(spec, &shared.sequence);
    let mut inflight = FuturesUnordered::new();
    let mut next_intended = ctx.start;
    let mut cur_second = 0u64;
    let mut cur = Box::<Recorder>::default();
    let mut tick = tokio::time::interval_at(
        tokio::time::Instant::from_std(ctx.measure_start + Duration::from_secs(1)),
        Duration::from_secs(1),
    );
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut issuing = true;
    loop {
        // Issue while there is room (and, with a rate, while an intended start is due).
        while issuing && inflight.len() < ctx.concurrency {
            let now = Instant::now();
            if shared.stop.load(Ordering::Relaxed) || ctx.end.is_some_and(|e| now >= e) {
                issuing = false;
                break;
            }
            let intended = match ctx.interval {
                Some(iv) => {
                    if next_intended > now {
                        break;
                    }
                    let t = next_intended;
                    next_intended += iv;
                    t
                }
                None => now,
            };
            if let Some(limit) = ctx.operations {
                if shared.claimed.fetch_add(1, Ordering::Relaxed) >= limit {
                    issuing = false;
                    break;
                }
            }
            let op = plan(&shared, &chooser, &mut keys, &mut rng, intended);
            // Boxed: the future is ~4 KB (the driver's request state), which
            // `FuturesUnordered::push` would otherwise copy twice per operation.
            inflight.push(Box::pin(execute(shared.clone(), op)));
        }
        if !issuing && inflight.is_empty() {
            break;
        }
        let rate_wait = ctx.interval.is_some() && issuing && inflight.len() < ctx.concurrency;
        let wake_at = tokio::time::Instant::from_std(next_intended);
        let end_at = ctx.end.map(tokio::time::Instant::from_std);
        tokio::select! {
            biased;
            Some(done) = inflight.next(), if !inflight.is_empty() => {
                let now = Instant::now();
                let s = second_of(&ctx, now);
                if s != cur_second {
                    flush(&ctx, cur_second, &mut cur);
                    cur_second = s;
                }
                if now >= ctx.measure_start {
                    record(&mut cur, done, now);
                }
            }
            _ = tokio::time::sleep_until(wake_at), if rate_wait => {}
            _ = tokio::time::sleep_until(end_at.unwrap_or(wake_at)), if end_at.is_some() && issuing => {}
            _ = tick.tick() => {
                let s = second_of(&ctx, Instant::now());
                if s > cur_second {
                    flush(&ctx, cur_second, &mut cur);
                    cur_second = s;
                }
            }
        }
    }
    flush(&ctx, cur_second, &mut cur);
    let _ = ctx.tx.send(Report::Done { worker: ctx.id });
}

fn flush(ctx: &WorkerCtx, second: u64, cur: &mut Box<Recorder>) {
    let rec = std::mem::take(cur);
    let _ = ctx.tx.send(Report::Interval {
        worker: ctx.id,
        second,
        rec,
    });
}

fn record(rec: &mut Recorder, done: Completed, now: Instant) {
    let r = rec.op(done.kind);
    if done.validated {
        r.validated += 1;
    }
    match done.outcome {
        Outcome::Ok => r.record(now.saturating_duration_since(done.intended).as_micros() as u64),
        Outcome::NotFound => {
            r.not_found += 1;
            r.record(now.saturating_duration_since(done.intended).as_micros() as u64);
        }
        Outcome::Failed {
            class,
            timeout,
            message,
        } => r.record_error(&class, timeout, &message),
        Outcome::Invalid { message } => {
            r.validation_failures += 1;
            // Still a completed request: its latency counts.
            r.record(now.saturating_duration_since(done.intended).as_micros() as u64);
            if r.error_samples.len() < 5 {
                r.error_samples
                    .push(format!("validation (key #{}): {message}", done.keynum));
            }
        }
    }
}

fn plan(
    shared: &Shared,
    chooser: &OpChooser,
    keys: &mut KeyChooser,
    rng: &mut SmallRng,
    intended: Instant,
) -> Planned {
    let spec = &shared.spec;
    let kind = chooser.next(rng);
    let keynum = if kind == OpKind::Insert {
        shared
            .inserts
            .lock()
            .expect("insert counter lock")
            .next_value()
    } else {
        let last = shared.last_key.load(Ordering::Acquire);
        keys.next(rng, last)
    };
    let key = key_name(spec, keynum);
    let field = rng.random_range(0..spec.field_count.max(1));
    let scan_len = rng.random_range(1..=spec.max_scan_length.max(1)) as i32;
    let mut version = 0;
    let mut expect = None;
    if let Some(v) = &shared.validator {
        if matches!(kind, OpKind::Read | OpKind::ReadModifyWrite) {
            expect = Some(v.expect(keynum, spec.field_count));
        }
        if matches!(
            kind,
            OpKind::Update | OpKind::Insert | OpKind::ReadModifyWrite
        ) {
            version = v.write_start(keynum, &written_fields(spec, kind, field), spec.field_count);
        }
    }
    Planned {
        kind,
        keynum,
        key,
        field,
        version,
        scan_len,
        intended,
        expect,
    }
}

/// CPU seconds this process used so far (all threads).
pub fn cpu_seconds() -> f64 {
    process_cpu_seconds("self").unwrap_or(0.0)
}

/// CPU seconds the processes `pids` used so far (all their threads), or `None` when there
/// are none or one cannot be read.
pub fn server_cpu_seconds(pids: &[u32]) -> Option<f64> {
    if pids.is_empty() {
        return None;
    }
    pids.iter()
        .map(|p| process_cpu_seconds(&p.to_string()))
        .sum()
}

/// What a timed window of a phase used: the servers' CPU seconds (`None` when unreadable),
/// the bench client's, and the window's length in seconds.
pub struct CpuWindow {
    pub server_cpu_seconds: Option<f64>,
    pub client_cpu_seconds: f64,
    pub seconds: f64,
}

/// Waits for the window from `from` to `end` to pass (the phase's workers run meanwhile) and
/// returns the CPU the servers `pids` and this client used in it.
pub async fn cpu_window(
    pids: &[u32],
    from: std::time::Instant,
    end: std::time::Instant,
) -> CpuWindow {
    tokio::time::sleep_until(tokio::time::Instant::from_std(from)).await;
    let (server0, client0) = (server_cpu_seconds(pids), cpu_seconds());
    tokio::time::sleep_until(tokio::time::Instant::from_std(end)).await;
    let (server1, client1) = (server_cpu_seconds(pids), cpu_seconds());
    CpuWindow {
        server_cpu_seconds: server0.zip(server1).map(|(a, b)| b - a),
        client_cpu_seconds: client1 - client0,
        seconds: (std::time::Instant::now().min(end) - from).as_secs_f64(),
    }
}

/// User + system CPU seconds of `/proc/<pid>`, all threads.
fn process_cpu_seconds(pid: &str) -> Option<f64> {
    // utime and stime (fields 14 and 15) in clock ticks; USER_HZ is 100 on Linux.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.rfind(')').map(|i| &stat[i + 2..])?;
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok());
    // `after` starts at field 3 (state), so field n is at index n - 3.
    Some((ticks(11)? + ticks(12)?) / 100.0)
}

/// Runs `spec` against an open session and returns the measurements.
pub async fn run(
    session: Arc<Session>,
    schema: &SchemaConfig,
    spec: &WorkloadSpec,
    shape: &LoadShape,
    label: &str,
    server_pids: &[u32],
) -> anyhow::Result<RunResult> {
    if shape.concurrency == 0 || shape.concurrency > MAX_CONCURRENCY {
        bail!(
            "concurrency must be 1..={MAX_CONCURRENCY}, got {}",
            shape.concurrency
        );
    }
    if shape.duration.is_none() && shape.operations.is_none() {
        bail!("give a --duration or an --operations count");
    }
    if shape.validate && spec.field_length < 12 {
        bail!(
            "--validate needs fields of at least 12 bytes, got {}",
            spec.field_length
        );
    }
    let server_version = server_version(&session).await;
    let stmts = prepare(&session, schema, spec).await?;
    let workers = shape.workers.clamp(1, shape.concurrency);
    let counter = InsertCounter::new(shape.insert_start);
    let last = if spec.records == 0 {
        0
    } else {
        spec.records - 1
    };
    let shared = Arc::new(Shared {
        session,
        stmts,
        spec: spec.clone(),
        inserts: Mutex::new(counter),
        last_key: AtomicU64::new(last),
        claimed: AtomicU64::new(0),
        sequence: Arc::default(),
        stop: AtomicBool::new(false),
        validator: shape.validate.then(Validator::new),
    });
    let started_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let cpu0 = cpu_seconds();
    let server0 = server_cpu_seconds(server_pids);
    let start = Instant::now();
    let measure_start = start + shape.warmup;
    let end = shape.duration.map(|d| measure_start + d);
    // Client CPU is counted from the end of the warm-up, like the operations.
    let (cpu_tx, cpu_rx) = tokio::sync::oneshot::channel();
    let pids = server_pids.to_vec();
    tokio::spawn(async move {
        tokio::time::sleep_until(tokio::time::Instant::from_std(measure_start)).await;
        let _ = cpu_tx.send((cpu_seconds(), server_cpu_seconds(&pids)));
    });
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut handles = Vec::new();
    for id in 0..workers {
        let conc = shape.concurrency / workers + usize::from(id < shape.concurrency % workers);
        let ctx = WorkerCtx {
            id,
            shared: shared.clone(),
            concurrency: conc,
            interval: shape
                .target_rate
                .filter(|r| *r > 0.0)
                .map(|r| Duration::from_secs_f64(workers as f64 / r)),
            start,
            measure_start,
            end,
            operations: shape.operations,
            seed: shape.seed,
            tx: tx.clone(),
        };
        handles.push(tokio::spawn(worker(ctx)));
    }
    drop(tx);

    // Collect: a second is final once every live worker has reported a later one.
    let mut reported: Vec<Option<u64>> = vec![None; workers];
    let mut done = vec![false; workers];
    let mut pending: std::collections::BTreeMap<u64, Recorder> = Default::default();
    let mut total = Recorder::default();
    let mut timeline: Vec<TimelinePoint> = Vec::new();
    let tty = std::io::stderr().is_terminal();
    let mut printed = false;
    while let Some(msg) = rx.recv().await {
        match msg {
            Report::Interval {
                worker,
                second,
                rec,
            } => {
                pending.entry(second).or_default().merge(&rec);
                reported[worker] = Some(second);
            }
            Report::Done { worker } => done[worker] = true,
        }
        let horizon = (0..workers)
            .filter(|&w| !done[w])
            .map(|w| reported[w].map_or(0, |s| s + 1))
            .min()
            .unwrap_or(u64::MAX);
        while let Some((&sec, _)) = pending.first_key_value() {
            if sec >= horizon {
                break;
            }
            let rec = pending.remove(&sec).expect("key just seen");
            let point = TimelinePoint::from_interval(sec, &rec);
            total.merge(&rec);
            if shape.progress && Instant::now() >= measure_start {
                progress_line(label, &point, &total, tty);
                printed = true;
            }
            timeline.push(point);
        }
    }
    for h in handles {
        h.await.context("worker task panicked")?;
    }
    if printed && tty {
        eprintln!();
    }
    let elapsed = Instant::now().saturating_duration_since(measure_start);
    // Fill empty seconds so the plot shows stalls as zeros.
    let mut filled: Vec<TimelinePoint> = Vec::new();
    for p in timeline {
        while let Some(prev) = filled.last() {
            if prev.second + 1 >= p.second {
                break;
            }
            let s = prev.second + 1;
            filled.push(TimelinePoint::from_interval(s, &Recorder::default()));
        }
        filled.push(p);
    }
    let (client0, server_at_start) = cpu_rx.await.unwrap_or((cpu0, server0));
    let next_insert = shared
        .inserts
        .lock()
        .expect("insert counter lock")
        .upcoming();
    Ok(RunResult {
        total,
        timeline: filled,
        seconds: elapsed.as_secs_f64(),
        client_cpu_seconds: cpu_seconds() - client0,
        server_cpu_seconds: server_cpu_seconds(server_pids)
            .zip(server_at_start)
            .map(|(end, start)| end - start),
        server_version,
        started_unix,
        next_insert,
    })
}

fn progress_line(label: &str, p: &TimelinePoint, total: &Recorder, tty: bool) {
    let overall = total.overall();
    let p99_all = overall
        .hist
        .as_ref()
        .filter(|h| !h.is_empty())
        .map_or(0.0, |h| h.value_at_quantile(0.99) as f64 / 1000.0);
    let line = format!(
        "[{label}] {:>4}s {:>10} ops/s  p99 {:>8.3} ms  p99 so far {:>8.3} ms  ops {:>10}  errors {}",
        p.second + 1,
        crate::report::thousands(p.total as f64),
        p.p99_ms,
        p99_all,
        total.total_count(),
        total.total_errors()
    );
    let mut err = std::io::stderr().lock();
    if tty {
        let _ = write!(err, "\r{line}\x1b[K");
    } else {
        let _ = writeln!(err, "{line}");
    }
    let _ = err.flush();
}
