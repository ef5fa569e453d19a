//! `peregrine bench indexed`: what do indexed reads and writes cost (issue 11 item 7)?
//!
//! One table, `id bigint PRIMARY KEY, low int, high bigint, ts bigint, payload text`, with
//! Storage-Attached Indexes (`CREATE INDEX … USING 'sai'`, the syntax Cassandra 5.0 and
//! Peregrine share) on three columns of known shape, so every answer can be checked:
//! - `low = id % L`: low cardinality (`--low-cardinality`, 1,000 values by default);
//! - `high = HIGH_BASE + p(id)`: one row per value (`p` a permutation of `0..N`);
//! - `ts = q(id)`: another permutation of `0..N`, so `ts >= s AND ts < s + R` holds exactly `R`
//!   rows.
//!
//! It loads `--rows N` rows (prepared, concurrent; `--reuse` skips that when the table already
//! holds them), then runs timed closed-loop phases, `--concurrency` requests in flight each:
//! - `high`: `WHERE high = ?`, one row (its id, `low` and `ts` checked);
//! - `low`: `WHERE low = ? LIMIT ?` (`--limit`, 100), the expected count of rows, each `low = ?`;
//! - `range`: `WHERE ts >= ? AND ts < ?` over `--range-rows` (100) values, exactly that many
//!   rows, each in range;
//! - `write`: `UPDATE … SET low = ?, high = ?, ts = ? WHERE id = ?` on existing rows, moving all
//!   three indexed values to a shadow domain (`low + L`, `-high`, `ts + N`) so every index pays
//!   for an update. Afterwards (untimed) a sample of the written rows is looked up by the new
//!   and the old `high` (one row and none), every written row is put back, and a sample is
//!   looked up again: the read phases of the next round see the loaded table.
//!
//! A wrong answer counts as `invalid`, never as an operation, so it cannot look fast. With
//! several `--endpoint`s (e.g. Peregrine and Cassandra) each phase runs against each in turn,
//! and the report gives the first endpoint's advantage; with `@pid` the server processes' CPU is
//! measured too, giving operations per server CPU second (per core).

use crate::phase::{self, Outcome};
use crate::report::{self, utc};
use crate::runner::{self, ConnectConfig, Endpoint};
use anyhow::{bail, Context};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use scylla::client::session::Session;
use scylla::statement::prepared::PreparedStatement;
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `high` values start here, so that they never equal an `id`.
const HIGH_BASE: i64 = 1_000_000_000_000;
/// Written rows looked up after a write phase, and again after they are put back.
const WRITE_CHECKS: usize = 200;
/// Error messages kept per phase.
const ERROR_SAMPLES: usize = 3;

/// `peregrine bench indexed`.
#[derive(clap::Args, Debug, Clone)]
pub struct IndexedArgs {
    /// An endpoint, `name=host:port[,host:port][@pid[+pid]]` (repeatable). Each phase runs
    /// against each endpoint in turn; ratios are the first one's advantage. With `@pid` the
    /// CPU those local server processes use during each phase is measured.
    #[arg(long = "endpoint", required = true)]
    pub endpoints: Vec<String>,
    #[arg(long, default_value = "idxbench")]
    pub keyspace: String,
    /// Table (default `rows<N>`, so tables of several sizes can live side by side).
    #[arg(long)]
    pub table: Option<String>,
    /// Rows loaded.
    #[arg(long, default_value_t = 100_000)]
    pub rows: u64,
    /// Distinct values of `low`.
    #[arg(long, default_value_t = 1000)]
    pub low_cardinality: u32,
    /// LIMIT of the `low` lookups.
    #[arg(long, default_value_t = 100)]
    pub limit: u32,
    /// Rows each `ts` range query returns.
    #[arg(long, default_value_t = 100)]
    pub range_rows: u64,
    /// Bytes of `payload` per row.
    #[arg(long, default_value_t = 100)]
    pub payload_bytes: usize,
    /// Phases per round, in order: high, low, range, write.
    #[arg(long, value_delimiter = ',', default_value = "high,low,range,write")]
    pub phases: Vec<PhaseKind>,
    /// Requests in flight in every timed phase (closed loop).
    #[arg(long, default_value_t = 32)]
    pub concurrency: usize,
    /// Inserts in flight while loading.
    #[arg(long, default_value_t = 128)]
    pub load_concurrency: usize,
    /// Recorded length of each phase.
    #[arg(long, value_parser = crate::parse_duration, default_value = "10s")]
    pub phase: Duration,
    /// Unrecorded time at the start of each phase.
    #[arg(long, value_parser = crate::parse_duration, default_value = "2s")]
    pub settle: Duration,
    /// Rounds of the phases (the report gives medians).
    #[arg(long, default_value_t = 1)]
    pub rounds: usize,
    /// Keep the table when it already holds the `--rows` rows this bench loads (checked on a
    /// sample); otherwise it is dropped, created and loaded.
    #[arg(long)]
    pub reuse: bool,
    /// Client runtime threads.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Connections per host.
    #[arg(long, default_value_t = 2)]
    pub connections: usize,
    #[arg(long, value_parser = crate::parse_duration, default_value = "10s")]
    pub request_timeout: Duration,
    /// Username for PasswordAuthenticator.
    #[arg(long)]
    pub user: Option<String>,
    /// Password for PasswordAuthenticator.
    #[arg(long)]
    pub password: Option<String>,
    #[command(flatten)]
    pub report: crate::ReportArgs,
}

/// A timed phase.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PhaseKind {
    /// Point lookups by the high-cardinality column (1 row).
    High,
    /// Lookups by the low-cardinality column with LIMIT.
    Low,
    /// SAI range on `ts`.
    Range,
    /// UPDATEs changing all three indexed values.
    Write,
}

impl PhaseKind {
    fn name(self) -> &'static str {
        match self {
            PhaseKind::High => "high",
            PhaseKind::Low => "low",
            PhaseKind::Range => "range",
            PhaseKind::Write => "write",
        }
    }
}

/// The table's shape: every value is a function of `id`.
#[derive(Debug, Clone, Copy)]
struct Shape {
    rows: u64,
    low_cardinality: u64,
    /// Multipliers of the two permutations (coprime with `rows`).
    mul_high: u64,
    mul_ts: u64,
}

impl Shape {
    fn new(rows: u64, low_cardinality: u32) -> Shape {
        let coprime = |start: u64| {
            let mut m = start % rows.max(1);
            while gcd(m, rows) != 1 {
                m += 1;
            }
            m
        };
        Shape {
            rows,
            low_cardinality: low_cardinality as u64,
            mul_high: coprime(2_654_435_761),
            mul_ts: coprime(40_503),
        }
    }
    fn perm(&self, id: u64, mul: u64, add: u64) -> u64 {
        ((id as u128 * mul as u128 + add as u128) % self.rows as u128) as u64
    }
    fn low(&self, id: u64) -> i32 {
        (id % self.low_cardinality) as i32
    }
    fn high(&self, id: u64) -> i64 {
        HIGH_BASE + self.perm(id, self.mul_high, 7) as i64
    }
    fn ts(&self, id: u64) -> i64 {
        self.perm(id, self.mul_ts, 11) as i64
    }
    /// Rows holding `low = v`.
    fn rows_with_low(&self, v: u64) -> u64 {
        self.rows / self.low_cardinality + u64::from(v < self.rows % self.low_cardinality)
    }
    /// The values a write moves row `id` to: all three differ from every loaded value.
    fn shadow(&self, id: u64) -> (i32, i64, i64) {
        (
            self.low(id) + self.low_cardinality as i32,
            -self.high(id),
            self.ts(id) + self.rows as i64,
        )
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn payload(id: u64, len: usize) -> String {
    format!("{id:016x}").chars().cycle().take(len).collect()
}

/// One phase against one endpoint.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseReport {
    pub endpoint: String,
    pub round: usize,
    pub kind: PhaseKind,
    pub concurrency: usize,
    pub seconds: f64,
    /// Operations answered correctly in the recorded window.
    pub ops: u64,
    pub rows: u64,
    pub errors: u64,
    /// Answers with the wrong rows (not counted in `ops`).
    pub invalid: u64,
    pub ops_per_second: f64,
    pub rows_per_second: f64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    pub max_us: u64,
    /// CPU seconds the endpoint's server processes used in the recorded window.
    pub server_cpu_seconds: Option<f64>,
    pub ops_per_server_cpu_second: Option<f64>,
    /// CPU seconds this bench used in the window (it shares the machine with the server).
    pub client_cpu_seconds: f64,
    pub error_samples: Vec<String>,
    /// Write phases: rows written, and the checks of them afterwards.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_check: Option<WriteCheck>,
}

/// What a write phase's written rows looked like afterwards.
#[derive(Debug, Clone, Serialize)]
pub struct WriteCheck {
    /// UPDATEs sent (settle time included).
    pub updates_sent: u64,
    /// Rows put back to their loaded values afterwards.
    pub rows_restored: u64,
    /// Sampled written rows found by their new `high` and not by their old one.
    pub checked: u64,
    pub wrong: u64,
    /// Seconds putting the written rows back took (untimed).
    pub restore_seconds: f64,
    /// Sampled rows found by their loaded `high` again after the restore.
    pub restored_checked: u64,
    pub restored_wrong: u64,
    pub samples: Vec<String>,
}

/// Loading one endpoint.
#[derive(Debug, Clone, Serialize)]
pub struct LoadReport {
    pub endpoint: String,
    /// False when `--reuse` found the rows in place.
    pub loaded: bool,
    pub rows: u64,
    pub seconds: f64,
    pub rows_per_second: f64,
    pub server_cpu_seconds: Option<f64>,
}

/// Medians over rounds of one phase kind on one endpoint.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub endpoint: String,
    pub kind: PhaseKind,
    pub ops_per_second: f64,
    pub rows_per_second: f64,
    pub p99_us: f64,
    pub ops_per_server_cpu_second: Option<f64>,
    /// First endpoint's advantage over this one (None for the first).
    pub throughput_ratio: Option<f64>,
    pub per_server_cpu_ratio: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct IndexedReport {
    pub started: String,
    pub table: String,
    pub rows: u64,
    pub low_cardinality: u32,
    pub limit: u32,
    pub range_rows: u64,
    pub payload_bytes: usize,
    pub concurrency: usize,
    pub phase_seconds: f64,
    pub client_threads: usize,
    pub machine: crate::report::Machine,
    pub server_note: String,
    pub endpoints: Vec<Endpoint>,
    pub loads: Vec<LoadReport>,
    pub phases: Vec<PhaseReport>,
    pub summary: Vec<Summary>,
}

impl IndexedReport {
    pub fn text(&self) -> String {
        let mut s = format!(
            "indexed  {}  {} ({} rows; low: {} values, LIMIT {}; ranges of {} rows; payload {} B)  \
             {} in flight, phases of {:.0}s\n",
            self.started,
            self.table,
            self.rows,
            self.low_cardinality,
            self.limit,
            self.range_rows,
            self.payload_bytes,
            self.concurrency,
            self.phase_seconds
        );
        s.push_str(&format!(
            "machine: {} CPUs ({}), bench client: {} runtime threads on the same machine\n",
            self.machine.nproc, self.machine.cpu_model, self.client_threads
        ));
        if !self.server_note.is_empty() {
            s.push_str(&format!("server: {}\n", self.server_note));
        }
        for l in &self.loads {
            s.push_str(&format!(
                "load {}: {}\n",
                l.endpoint,
                if l.loaded {
                    format!(
                        "{} rows in {:.1}s ({:.0} rows/s{})",
                        l.rows,
                        l.seconds,
                        l.rows_per_second,
                        report::or_dash(l.server_cpu_seconds, |c| format!(", server CPU {c:.1}s"))
                    )
                } else {
                    "reused (the rows were in place)".into()
                }
            ));
        }
        s.push_str(
            "endpoint        rnd phase        ops   err  inval      ops/s     rows/s   p50 ms   p99 ms p99.9 ms  srv cpu-s  ops/srv-cpu-s  cli cpu-s\n",
        );
        let ms = |us: u64| us as f64 / 1000.0;
        for p in &self.phases {
            s.push_str(&format!(
                "{:<15} {:>3} {:<6} {:>9} {:>5} {:>6} {:>10.0} {:>10.0} {:>8.2} {:>8.2} {:>8.2} {:>10} {:>14} {:>10.1}\n",
                p.endpoint,
                p.round,
                p.kind.name(),
                p.ops,
                p.errors,
                p.invalid,
                p.ops_per_second,
                p.rows_per_second,
                ms(p.p50_us),
                ms(p.p99_us),
                ms(p.p999_us),
                report::or_dash(p.server_cpu_seconds, |c| format!("{c:.1}")),
                report::or_dash(p.ops_per_server_cpu_second, |c| format!("{c:.0}")),
                p.client_cpu_seconds
            ));
            if let Some(w) = &p.write_check {
                s.push_str(&format!(
                    "    write check: {} updates sent; {} sampled by new/old high, {} wrong; \
                     {} rows restored in {:.1}s, {} sampled, {} wrong\n",
                    w.updates_sent,
                    w.checked,
                    w.wrong,
                    w.rows_restored,
                    w.restore_seconds,
                    w.restored_checked,
                    w.restored_wrong
                ));
            }
            for e in &p.error_samples {
                s.push_str(&format!("    error: {e}\n"));
            }
        }
        s.push_str("summary (medians over rounds)\n");
        s.push_str(
            "endpoint        phase       ops/s     rows/s   p99 ms  ops/srv-cpu-s  ratio ops/s  ratio per srv cpu\n",
        );
        for m in &self.summary {
            s.push_str(&format!(
                "{:<15} {:<6} {:>10.0} {:>10.0} {:>8.2} {:>14} {:>12} {:>18}\n",
                m.endpoint,
                m.kind.name(),
                m.ops_per_second,
                m.rows_per_second,
                m.p99_us / 1000.0,
                report::or_dash(m.ops_per_server_cpu_second, |c| format!("{c:.0}")),
                report::or_dash(m.throughput_ratio, |r| format!("{r:.2}x")),
                report::or_dash(m.per_server_cpu_ratio, |r| format!("{r:.2}x"))
            ));
        }
        s
    }
}

/// One endpoint's session and prepared statements.
struct Target {
    endpoint: Endpoint,
    session: Arc<Session>,
    insert: PreparedStatement,
    update: PreparedStatement,
    by_id: PreparedStatement,
    by_high: PreparedStatement,
    by_low: PreparedStatement,
    by_ts: PreparedStatement,
}

/// The columns every read returns.
type RowTuple = (i64, Option<i32>, Option<i64>, Option<i64>, Option<String>);
const COLUMNS: &str = "id, low, high, ts, payload";

async fn prepare(session: &Session, q: String) -> anyhow::Result<PreparedStatement> {
    session
        .prepare(q.clone())
        .await
        .with_context(|| format!("preparing {q}"))
}

impl Target {
    async fn open(endpoint: Endpoint, a: &IndexedArgs, table: &str) -> anyhow::Result<Target> {
        let connect = ConnectConfig {
            connections: a.connections.max(1),
            request_timeout: a.request_timeout,
            consistency: "one".into(),
            user: a.user.clone(),
            password: a.password.clone(),
        };
        let session = Arc::new(
            runner::connect(&endpoint, &connect)
                .await
                .with_context(|| format!("connecting to {}", endpoint.name))?,
        );
        create_schema(&session, &a.keyspace, table, a.reuse).await?;
        let t = format!("{}.{table}", a.keyspace);
        let s = &session;
        Ok(Target {
            insert: prepare(
                s,
                format!("INSERT INTO {t} (id, low, high, ts, payload) VALUES (?, ?, ?, ?, ?)"),
            )
            .await?,
            update: prepare(
                s,
                format!("UPDATE {t} SET low = ?, high = ?, ts = ? WHERE id = ?"),
            )
            .await?,
            by_id: prepare(s, format!("SELECT {COLUMNS} FROM {t} WHERE id = ?")).await?,
            by_high: prepare(s, format!("SELECT {COLUMNS} FROM {t} WHERE high = ?")).await?,
            by_low: prepare(
                s,
                format!("SELECT {COLUMNS} FROM {t} WHERE low = ? LIMIT ?"),
            )
            .await?,
            by_ts: prepare(
                s,
                format!("SELECT {COLUMNS} FROM {t} WHERE ts >= ? AND ts < ?"),
            )
            .await?,
            endpoint,
            session,
        })
    }
}

async fn create_schema(
    session: &Session,
    ks: &str,
    table: &str,
    reuse: bool,
) -> anyhow::Result<()> {
    let ddl = |q: String| async move {
        session
            .query_unpaged(q.clone(), ())
            .await
            .with_context(|| format!("running {q}"))
    };
    ddl(format!(
        "CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = \
         {{'class': 'SimpleStrategy', 'replication_factor': 1}}"
    ))
    .await?;
    if !reuse {
        ddl(format!("DROP TABLE IF EXISTS {ks}.{table}")).await?;
    }
    ddl(format!(
        "CREATE TABLE IF NOT EXISTS {ks}.{table} \
         (id bigint PRIMARY KEY, low int, high bigint, ts bigint, payload text)"
    ))
    .await?;
    for col in ["low", "high", "ts"] {
        ddl(format!(
            "CREATE INDEX IF NOT EXISTS {table}_{col} ON {ks}.{table} ({col}) USING 'sai'"
        ))
        .await?;
    }
    // An index is queryable once its (possibly background) build is done.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let mut last = None;
        for col in ["low", "high", "ts"] {
            let q = format!("SELECT id FROM {ks}.{table} WHERE {col} = -1");
            if let Err(e) = session.query_unpaged(q, ()).await {
                last = Some(format!("{col}: {e}"));
            }
        }
        match last {
            None => return Ok(()),
            Some(e) if Instant::now() > deadline => {
                bail!("the indexes of {ks}.{table} are not queryable after 120 s: {e}")
            }
            Some(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

fn check_row(shape: &Shape, r: &RowTuple, payload_bytes: usize) -> Result<(), String> {
    let id = r.0 as u64;
    let want = (
        Some(shape.low(id)),
        Some(shape.high(id)),
        Some(shape.ts(id)),
    );
    if (r.1, r.2, r.3) != want {
        return Err(format!(
            "row {id}: (low, high, ts) = {:?}, want {want:?}",
            (r.1, r.2, r.3)
        ));
    }
    if r.4.as_deref().map_or(0, str::len) != payload_bytes {
        return Err(format!("row {id}: payload of the wrong length"));
    }
    Ok(())
}

async fn fetch(
    session: &Session,
    stmt: &PreparedStatement,
    values: impl scylla::serialize::row::SerializeRow,
) -> Result<Vec<RowTuple>, Failure> {
    let res = session
        .execute_unpaged(stmt, values)
        .await
        .map_err(|e| Failure::Error(e.to_string()))?;
    let rows = res
        .into_rows_result()
        .map_err(|e| Failure::Error(format!("not rows: {e}")))?;
    let it = rows
        .rows::<RowTuple>()
        .map_err(|e| Failure::Invalid(format!("columns: {e}")))?;
    it.collect::<Result<Vec<_>, _>>()
        .map_err(|e| Failure::Invalid(format!("row: {e}")))
}

enum Failure {
    Error(String),
    Invalid(String),
}

/// Is the loaded table in place (a sample of rows by key, and nothing past the last)?
async fn holds_rows(t: &Target, shape: &Shape, payload_bytes: usize, seed: u64) -> bool {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut ids: Vec<u64> = (0..64).map(|_| rng.random_range(0..shape.rows)).collect();
    ids.extend([0, shape.rows - 1]);
    for id in ids {
        match fetch(&t.session, &t.by_id, (id as i64,)).await {
            Ok(rows) if rows.len() == 1 && check_row(shape, &rows[0], payload_bytes).is_ok() => {}
            _ => return false,
        }
    }
    matches!(fetch(&t.session, &t.by_id, (shape.rows as i64,)).await, Ok(r) if r.is_empty())
}

async fn load(t: &Target, shape: &Shape, a: &IndexedArgs) -> anyhow::Result<LoadReport> {
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let cpu0 = runner::server_cpu_seconds(&t.endpoint.pids);
    let mut tasks = Vec::new();
    for _ in 0..a.load_concurrency.max(1) {
        let (session, insert, next, shape) =
            (t.session.clone(), t.insert.clone(), next.clone(), *shape);
        let len = a.payload_bytes;
        tasks.push(tokio::spawn(async move {
            loop {
                let id = next.fetch_add(1, Ordering::Relaxed);
                if id >= shape.rows {
                    return anyhow::Ok(());
                }
                let v = (
                    id as i64,
                    shape.low(id),
                    shape.high(id),
                    shape.ts(id),
                    payload(id, len),
                );
                // Loading is not measured: a failed insert is retried a few times.
                let mut tries = 0;
                while let Err(e) = session.execute_unpaged(&insert, &v).await {
                    tries += 1;
                    if tries >= 5 {
                        bail!("inserting row {id}: {e}");
                    }
                    tokio::time::sleep(Duration::from_millis(200 * tries)).await;
                }
            }
        }));
    }
    let progress = {
        let next = next.clone();
        let (name, rows) = (t.endpoint.name.clone(), shape.rows);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(10)).await;
                let done = next.load(Ordering::Relaxed).min(rows);
                eprintln!(
                    "load {name}: {done}/{rows} rows, {:.0}s",
                    started.elapsed().as_secs_f64()
                );
            }
        })
    };
    let mut result = Ok(());
    for task in tasks {
        match task.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => result = Err(e),
            Err(e) => result = Err(e.into()),
        }
    }
    progress.abort();
    result?;
    let seconds = started.elapsed().as_secs_f64();
    Ok(LoadReport {
        endpoint: t.endpoint.name.clone(),
        loaded: true,
        rows: shape.rows,
        seconds,
        rows_per_second: shape.rows as f64 / seconds,
        server_cpu_seconds: cpu0
            .and_then(|c0| runner::server_cpu_seconds(&t.endpoint.pids).map(|c1| c1 - c0)),
    })
}

/// What one worker saw.
/// One operation of a read phase: its rows, or what went wrong.
async fn read_op(
    t: &Target,
    kind: PhaseKind,
    shape: &Shape,
    a: &IndexedArgs,
    rng: &mut SmallRng,
) -> Result<u64, Failure> {
    let bad = |m: String| Err(Failure::Invalid(m));
    match kind {
        PhaseKind::High => {
            let id = rng.random_range(0..shape.rows);
            let rows = fetch(&t.session, &t.by_high, (shape.high(id),)).await?;
            if rows.len() != 1 || rows[0].0 as u64 != id {
                return bad(format!(
                    "high = {}: {} rows (ids {:?}), want row {id}",
                    shape.high(id),
                    rows.len(),
                    rows.iter().map(|r| r.0).take(5).collect::<Vec<_>>()
                ));
            }
            check_row(shape, &rows[0], a.payload_bytes).map_err(Failure::Invalid)?;
            Ok(1)
        }
        PhaseKind::Low => {
            let v = rng.random_range(0..shape.low_cardinality);
            let want = shape.rows_with_low(v).min(a.limit as u64);
            let rows = fetch(&t.session, &t.by_low, (v as i32, a.limit as i32)).await?;
            if rows.len() as u64 != want {
                return bad(format!("low = {v}: {} rows, want {want}", rows.len()));
            }
            for r in &rows {
                if r.1 != Some(v as i32) {
                    return bad(format!("low = {v}: row {} has low {:?}", r.0, r.1));
                }
                check_row(shape, r, a.payload_bytes).map_err(Failure::Invalid)?;
            }
            Ok(rows.len() as u64)
        }
        PhaseKind::Range => {
            let n = a.range_rows.min(shape.rows);
            let s = rng.random_range(0..=shape.rows - n) as i64;
            let rows = fetch(&t.session, &t.by_ts, (s, s + n as i64)).await?;
            if rows.len() as u64 != n {
                return bad(format!(
                    "ts in [{s}, {}): {} rows, want {n}",
                    s + n as i64,
                    rows.len()
                ));
            }
            for r in &rows {
                if !r.3.is_some_and(|ts| ts >= s && ts < s + n as i64) {
                    return bad(format!("ts in [{s}, ..): row {} has ts {:?}", r.0, r.3));
                }
                check_row(shape, r, a.payload_bytes).map_err(Failure::Invalid)?;
            }
            Ok(n)
        }
        PhaseKind::Write => unreachable!("writes are not reads"),
    }
}

/// One timed phase against one target.
/// A phase worker's own state: its random generator, and (write phases) the numbers of the
/// writes it made that succeeded and that failed.
struct Worker {
    rng: SmallRng,
    written_ok: Vec<u64>,
    write_failed: Vec<u64>,
}

async fn phase(
    t: &Arc<Target>,
    kind: PhaseKind,
    shape: &Shape,
    a: &Arc<IndexedArgs>,
    round: usize,
    seed: u64,
) -> PhaseReport {
    let mut rng = SmallRng::seed_from_u64(seed);
    // Writes walk the ids from a random start, so the rows written are known and distinct.
    let first_id = rng.random_range(0..shape.rows);
    let next_write = Arc::new(AtomicU64::new(0));
    let workers = (0..a.concurrency.max(1))
        .map(|w| Worker {
            rng: SmallRng::seed_from_u64(seed ^ ((w as u64 + 1) << 40)),
            written_ok: Vec::new(),
            write_failed: Vec::new(),
        })
        .collect();
    let op = {
        let (t, a, shape, next_write) = (t.clone(), a.clone(), *shape, next_write.clone());
        move |mut w: Worker| {
            let (t, a, next_write) = (t.clone(), a.clone(), next_write.clone());
            async move {
                let r = if kind == PhaseKind::Write {
                    let n = next_write.fetch_add(1, Ordering::Relaxed);
                    let (id, values) = write_of(&shape, first_id, n);
                    match t.session.execute_unpaged(&t.update, values).await {
                        Ok(_) => {
                            w.written_ok.push(n);
                            Ok(0)
                        }
                        Err(e) => {
                            w.write_failed.push(n);
                            Err(Failure::Error(format!("updating row {id}: {e}")))
                        }
                    }
                } else {
                    read_op(&t, kind, &shape, &a, &mut w.rng).await
                };
                let outcome = match r {
                    Ok(rows) => Outcome::Done { rows, short: false },
                    Err(Failure::Error(e)) => Outcome::Error(e),
                    Err(Failure::Invalid(e)) => Outcome::Invalid(e),
                };
                (w, outcome)
            }
        }
    };
    let phase::Timed {
        hist: h,
        tally: total,
        cpu,
        states,
    } = phase::run(&t.endpoint.pids, a.settle, a.phase, workers, op).await;
    let ops = h.len();
    let write_check = if kind == PhaseKind::Write {
        let sent = next_write.load(Ordering::Relaxed);
        let written_ok: Vec<u64> = states
            .iter()
            .flat_map(|w| w.written_ok.iter().copied())
            .collect();
        let write_failed: Vec<u64> = states
            .iter()
            .flat_map(|w| w.write_failed.iter().copied())
            .collect();
        let writes = (written_ok.as_slice(), write_failed.as_slice());
        Some(check_and_restore(t, shape, a, first_id, sent, writes, seed).await)
    } else {
        None
    };
    let runner::CpuWindow {
        server_cpu_seconds,
        client_cpu_seconds,
        seconds,
    } = cpu;
    PhaseReport {
        endpoint: t.endpoint.name.clone(),
        round,
        kind,
        concurrency: a.concurrency,
        seconds,
        ops,
        rows: total.rows,
        errors: total.errors,
        invalid: total.invalid,
        ops_per_second: ops as f64 / seconds,
        rows_per_second: total.rows as f64 / seconds,
        p50_us: h.value_at_quantile(0.5),
        p99_us: h.value_at_quantile(0.99),
        p999_us: h.value_at_quantile(0.999),
        max_us: h.max(),
        server_cpu_seconds,
        ops_per_server_cpu_second: server_cpu_seconds
            .filter(|c| *c > 0.0)
            .map(|c| ops as f64 / c),
        client_cpu_seconds,
        error_samples: total.samples,
        write_check,
    }
}

/// Write number `n` of a phase: its row and `(low, high, ts, id)`. The writes walk the rows
/// from `first_id`; the first pass over the table moves each row to its shadow values, the
/// next one moves it back, and so on, so every write changes all three indexed values and the
/// rows written are known without keeping a list of them.
fn write_of(shape: &Shape, first_id: u64, n: u64) -> (u64, (i32, i64, i64, i64)) {
    let id = (first_id + n) % shape.rows;
    let (low, high, ts) = if (n / shape.rows).is_multiple_of(2) {
        shape.shadow(id)
    } else {
        (shape.low(id), shape.high(id), shape.ts(id))
    };
    (id, (low, high, ts, id as i64))
}

/// The rows at their shadow values after `sent` writes (see [`write_of`]), as offsets from
/// the first row written.
fn shadow_offsets(rows: u64, sent: u64) -> std::ops::Range<u64> {
    let (passes, rest) = (sent / rows, sent % rows);
    if passes % 2 == 0 {
        0..rest
    } else {
        rest..rows
    }
}

/// After a write phase: looks a sample of the rows at their shadow values up by their new and
/// old `high`, puts every row that may not be at its loaded values back (those at shadow
/// values and those whose last write failed), and looks the sample up again.
async fn check_and_restore(
    t: &Arc<Target>,
    shape: &Shape,
    a: &IndexedArgs,
    first_id: u64,
    sent: u64,
    (written_ok, write_failed): (&[u64], &[u64]),
    seed: u64,
) -> WriteCheck {
    let rows = shape.rows;
    let offsets = shadow_offsets(rows, sent);
    // Successful writes that left their row at its shadow values (no later write to it).
    let shadowed: Vec<u64> = written_ok
        .iter()
        .copied()
        .filter(|n| n + rows >= sent && (n / rows).is_multiple_of(2))
        .map(|n| (first_id + n) % rows)
        .collect();
    let mut restore: Vec<u64> = offsets.map(|o| (first_id + o) % rows).collect();
    restore.extend(write_failed.iter().map(|n| (first_id + n) % rows));
    restore.sort_unstable();
    restore.dedup();
    let restore = Arc::new(restore);
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x5EED);
    let mut check = WriteCheck {
        updates_sent: sent,
        rows_restored: restore.len() as u64,
        checked: 0,
        wrong: 0,
        restore_seconds: 0.0,
        restored_checked: 0,
        restored_wrong: 0,
        samples: Vec::new(),
    };
    let sample: Vec<u64> = (0..WRITE_CHECKS.min(shadowed.len()))
        .map(|_| shadowed[rng.random_range(0..shadowed.len())])
        .collect();
    for &id in &sample {
        let new = fetch(&t.session, &t.by_high, (shape.shadow(id).1,)).await;
        let old = fetch(&t.session, &t.by_high, (shape.high(id),)).await;
        check.checked += 1;
        let ok = matches!((&new, &old), (Ok(n), Ok(o)) if n.len() == 1 && n[0].0 as u64 == id
            && n[0].1 == Some(shape.shadow(id).0) && n[0].3 == Some(shape.shadow(id).2)
            && o.is_empty());
        if !ok {
            check.wrong += 1;
            if check.samples.len() < ERROR_SAMPLES {
                check.samples.push(format!(
                    "row {id} after its update: by new high {} rows, by old high {} rows",
                    new.as_ref().map_or(-1, |r| r.len() as i64),
                    old.as_ref().map_or(-1, |r| r.len() as i64)
                ));
            }
        }
    }
    let started = Instant::now();
    let next = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for _ in 0..a.load_concurrency.max(1) {
        let (t, next, shape, restore) = (t.clone(), next.clone(), *shape, restore.clone());
        tasks.push(tokio::spawn(async move {
            let mut failed = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                let Some(&id) = restore.get(i) else {
                    return failed;
                };
                let v = (shape.low(id), shape.high(id), shape.ts(id), id as i64);
                let mut tries = 0;
                while let Err(e) = t.session.execute_unpaged(&t.update, v).await {
                    tries += 1;
                    if tries >= 5 {
                        failed.push(format!("restoring row {id}: {e}"));
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(200 * tries)).await;
                }
            }
        }));
    }
    for task in tasks {
        if let Ok(failed) = task.await {
            check.restored_wrong += failed.len() as u64;
            for f in failed {
                if check.samples.len() < ERROR_SAMPLES {
                    check.samples.push(f);
                }
            }
        }
    }
    check.restore_seconds = started.elapsed().as_secs_f64();
    for &id in &sample {
        check.restored_checked += 1;
        match fetch(&t.session, &t.by_high, (shape.high(id),)).await {
            Ok(rows) if rows.len() == 1 && check_row(shape, &rows[0], a.payload_bytes).is_ok() => {}
            _ => {
                check.restored_wrong += 1;
                if check.samples.len() < ERROR_SAMPLES {
                    check
                        .samples
                        .push(format!("row {id} not found by its high after the restore"));
                }
            }
        }
    }
    check
}

fn summarize(endpoints: &[Endpoint], phases: &[PhaseReport], kinds: &[PhaseKind]) -> Vec<Summary> {
    let median = |mut v: Vec<f64>| crate::stats::median(&mut v);
    let mut kinds_seen: Vec<PhaseKind> = Vec::new();
    for k in kinds {
        if !kinds_seen.contains(k) {
            kinds_seen.push(*k);
        }
    }
    let mut out = Vec::new();
    for kind in kinds_seen {
        let mut first: Option<(f64, Option<f64>)> = None;
        for e in endpoints {
            let of: Vec<&PhaseReport> = phases
                .iter()
                .filter(|p| p.kind == kind && p.endpoint == e.name)
                .collect();
            if of.is_empty() {
                continue;
            }
            let ops = median(of.iter().map(|p| p.ops_per_second).collect());
            let per_cpu: Vec<f64> = of
                .iter()
                .filter_map(|p| p.ops_per_server_cpu_second)
                .collect();
            let per_cpu = (!per_cpu.is_empty()).then(|| median(per_cpu));
            let (throughput_ratio, per_server_cpu_ratio) = match first {
                None => {
                    first = Some((ops, per_cpu));
                    (None, None)
                }
                Some((f_ops, f_cpu)) => (
                    (ops > 0.0).then(|| f_ops / ops),
                    f_cpu
                        .zip(per_cpu)
                        .filter(|(_, c)| *c > 0.0)
                        .map(|(f, c)| f / c),
                ),
            };
            out.push(Summary {
                endpoint: e.name.clone(),
                kind,
                ops_per_second: ops,
                rows_per_second: median(of.iter().map(|p| p.rows_per_second).collect()),
                p99_us: median(of.iter().map(|p| p.p99_us as f64).collect()),
                ops_per_server_cpu_second: per_cpu,
                throughput_ratio,
                per_server_cpu_ratio,
            });
        }
    }
    out
}

/// Runs the case and writes its reports.
pub async fn run(a: IndexedArgs) -> anyhow::Result<()> {
    if a.rows == 0 || a.low_cardinality == 0 || a.limit == 0 || a.range_rows == 0 {
        bail!("--rows, --low-cardinality, --limit and --range-rows must be at least 1");
    }
    if a.rounds == 0 || a.concurrency == 0 || a.phases.is_empty() {
        bail!("--rounds, --concurrency and --phases must not be zero or empty");
    }
    if a.low_cardinality > i32::MAX as u32 / 2 || a.rows > (i64::MAX as u64) / 4 {
        bail!("--rows or --low-cardinality too large");
    }
    let endpoints = a
        .endpoints
        .iter()
        .map(|e| crate::parse_endpoint(e))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let table = a.table.clone().unwrap_or_else(|| format!("rows{}", a.rows));
    let shape = Shape::new(a.rows, a.low_cardinality);
    let seed = a.report.seed.unwrap_or_else(crate::now_unix);
    let started_unix = crate::now_unix();
    let mut targets = Vec::new();
    let mut loads = Vec::new();
    for e in &endpoints {
        let t = Target::open(e.clone(), &a, &table).await?;
        let l = if a.reuse && holds_rows(&t, &shape, a.payload_bytes, seed).await {
            LoadReport {
                endpoint: e.name.clone(),
                loaded: false,
                rows: a.rows,
                seconds: 0.0,
                rows_per_second: 0.0,
                server_cpu_seconds: None,
            }
        } else {
            if a.reuse {
                eprintln!("{}: the table does not hold the rows; loading", e.name);
            }
            load(&t, &shape, &a).await?
        };
        eprintln!(
            "load {}: {}",
            e.name,
            if l.loaded {
                format!("{} rows in {:.1}s", l.rows, l.seconds)
            } else {
                "reused".into()
            }
        );
        loads.push(l);
        targets.push(Arc::new(t));
    }
    let a = Arc::new(a);
    let mut phases = Vec::new();
    for round in 1..=a.rounds {
        for (i, kind) in a.phases.iter().enumerate() {
            for t in &targets {
                let p = phase(
                    t,
                    *kind,
                    &shape,
                    &a,
                    round,
                    seed.wrapping_add((round * 16 + i) as u64),
                )
                .await;
                eprintln!(
                    "round {round}/{} {} {}: {:.0} ops/s, {:.0} rows/s, p99 {:.2} ms, {} errors, {} invalid",
                    a.rounds,
                    t.endpoint.name,
                    kind.name(),
                    p.ops_per_second,
                    p.rows_per_second,
                    p.p99_us as f64 / 1000.0,
                    p.errors,
                    p.invalid
                );
                phases.push(p);
            }
        }
    }
    let summary = summarize(&endpoints, &phases, &a.phases);
    let report = IndexedReport {
        started: utc(started_unix),
        table: format!("{}.{table}", a.keyspace),
        rows: a.rows,
        low_cardinality: a.low_cardinality,
        limit: a.limit,
        range_rows: a.range_rows,
        payload_bytes: a.payload_bytes,
        concurrency: a.concurrency,
        phase_seconds: a.phase.as_secs_f64(),
        client_threads: a.threads,
        machine: crate::report::Machine::detect(),
        server_note: a.report.server_note.clone(),
        endpoints,
        loads,
        phases,
        summary,
    };
    let text = report.text();
    print!("{text}");
    let name = a
        .report
        .name
        .clone()
        .unwrap_or_else(|| format!("indexed-{}", crate::stamp(started_unix)));
    crate::write_text_json(&a.report.out, &name, &text, &report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shape_is_what_the_checks_assume() {
        for rows in [1u64, 7, 1000, 100_000, 65_536] {
            let s = Shape::new(rows, 1000);
            let mut ts: Vec<i64> = (0..rows).map(|i| s.ts(i)).collect();
            ts.sort_unstable();
            assert_eq!(
                ts,
                (0..rows as i64).collect::<Vec<_>>(),
                "ts permutes 0..{rows}"
            );
            let mut high: Vec<i64> = (0..rows).map(|i| s.high(i)).collect();
            high.sort_unstable();
            high.dedup();
            assert_eq!(high.len() as u64, rows, "high is unique");
            assert!(high.iter().all(|h| *h >= HIGH_BASE));
            let total: u64 = (0..1000).map(|v| s.rows_with_low(v)).sum();
            assert_eq!(total, rows);
            // After any number of writes, the rows at shadow values are the shadow offsets.
            for sent in [0, 1, rows / 2, rows, rows + 1, 2 * rows + 3, 3 * rows - 1] {
                let mut shadowed = vec![false; rows as usize];
                for n in 0..sent {
                    let (id, (l, _, _, _)) = write_of(&s, 3, n);
                    shadowed[id as usize] = l >= 1000;
                }
                let want: Vec<bool> = (0..rows)
                    .map(|id| shadow_offsets(rows, sent).contains(&((id + rows - 3 % rows) % rows)))
                    .collect();
                assert_eq!(shadowed, want, "rows {rows}, sent {sent}");
            }
            for id in 0..rows.min(50) {
                let (l, h, t) = s.shadow(id);
                assert!(l >= 1000 && h < 0 && t >= rows as i64);
            }
        }
    }
}
