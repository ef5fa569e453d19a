//! `peregrine bench vector`: what do vector search's inserts, index builds and ANN queries
//! cost, and how good are the answers (issue 12)?
//!
//! The data are two fvecs files (TEXMEX format: per vector a little-endian `i32` dimension and
//! that many `f32`): the base vectors, loaded as rows `id int PRIMARY KEY, v vector<float, D>`,
//! and held-out query vectors. `bench/vectors/make_dataset.sh` makes real sentence embeddings
//! for them (see `bench/README.md`); any fvecs pair works.
//!
//! Per endpoint, in order:
//! 1. **insert**: the table is dropped and created with an SAI vector index
//!    (`CREATE CUSTOM INDEX ... USING 'StorageAttachedIndex'`, the first `--setting`), and
//!    `--rows` rows are inserted (prepared, `--load-concurrency` in flight): rows/s into an
//!    indexed table, and the server's CPU;
//! 2. **queries** on the index those inserts built: `SELECT id ... ORDER BY v ANN OF ? LIMIT k`
//!    (prepared), `--concurrency` in flight for `--phase`, cycling through the queries;
//! 3. per `--setting`: **build**: DROP INDEX, CREATE the index with that setting over the
//!    loaded rows, timed until `system_views.sai_column_indexes` says it is queryable and not
//!    building (Cassandra 5.0 and Peregrine both have the table), then **queries** again.
//!
//! Recall@k is measured against exact neighbours the bench computes itself (brute force over
//! the loaded rows, by the index's similarity), from each query's first answer; queries the
//! timed window did not reach are asked afterwards (untimed), so recall always covers every
//! query. An answer with a row id outside the loaded rows, or repeated, counts as invalid.
//! With `@pid` on an endpoint the server processes' CPU and resident memory are read from
//! `/proc`, giving queries per server CPU second (per core).

use crate::phase::{self, Outcome};
use crate::report::{self, utc};
use crate::runner::{self, ConnectConfig, Endpoint};
use crate::stats::new_histogram;
use anyhow::{bail, Context};
use scylla::client::session::Session;
use scylla::statement::prepared::PreparedStatement;
use scylla::statement::unprepared::Statement;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Error messages kept per phase.
const ERROR_SAMPLES: usize = 3;
/// A query's recall slot before its first answer.
const UNANSWERED: u16 = u16::MAX;

/// `peregrine bench vector`.
#[derive(clap::Args, Debug, Clone)]
pub struct VectorArgs {
    /// An endpoint, `name=host:port[,host:port][@pid[+pid]]` (repeatable). Each runs the whole
    /// case in turn; ratios are the first one's advantage. With `@pid` the CPU and memory of
    /// those local server processes are measured.
    #[arg(long = "endpoint", required = true)]
    pub endpoints: Vec<String>,
    /// Base vectors (fvecs); the first `--rows` are loaded.
    #[arg(long)]
    pub base: PathBuf,
    /// Query vectors (fvecs); the first `--query-count` are asked.
    #[arg(long)]
    pub queries: PathBuf,
    /// Rows loaded (default: every base vector).
    #[arg(long)]
    pub rows: Option<usize>,
    /// Queries asked (default: every query vector).
    #[arg(long)]
    pub query_count: Option<usize>,
    /// Rows each ANN query asks for (its LIMIT), and the k of recall@k.
    #[arg(long, default_value_t = 10)]
    pub k: usize,
    /// Similarity of the index and of the exact neighbours (Cassandra's default is cosine,
    /// which is then left out of the index options).
    #[arg(long, value_enum, default_value = "cosine")]
    pub similarity: SimilarityArg,
    /// Index settings to build and query, each `default` or `option=value[,option=value]`
    /// (e.g. `optimize_for=RECALL`), repeatable. The first is also the index the inserts
    /// maintain.
    #[arg(long = "setting", default_value = "default")]
    pub settings: Vec<String>,
    #[arg(long, default_value = "vecbench")]
    pub keyspace: String,
    /// Table (default `vec<rows>`).
    #[arg(long)]
    pub table: Option<String>,
    /// Requests in flight in the query phases (closed loop).
    #[arg(long, default_value_t = 16)]
    pub concurrency: usize,
    /// Inserts in flight while loading. Cassandra 5.0.9 fails vector inserts with more than
    /// 3 in flight per table ("Number of outstanding pooled objects has gone beyond the limit
    /// of 3"), hence the default.
    #[arg(long, default_value_t = 2)]
    pub load_concurrency: usize,
    /// Recorded length of each query phase.
    #[arg(long, value_parser = crate::parse_duration, default_value = "20s")]
    pub phase: Duration,
    /// Unrecorded time at the start of each query phase.
    #[arg(long, value_parser = crate::parse_duration, default_value = "2s")]
    pub settle: Duration,
    /// Skip the index builds over loaded rows (only insert, then query).
    #[arg(long)]
    pub no_build: bool,
    /// Longest an index build (or the drop of the index before it) may take.
    #[arg(long, value_parser = crate::parse_duration, default_value = "30m")]
    pub build_timeout: Duration,
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

/// The index's similarity function.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SimilarityArg {
    /// Cassandra's default.
    Cosine,
    DotProduct,
    Euclidean,
}

impl SimilarityArg {
    fn option(self) -> &'static str {
        match self {
            SimilarityArg::Cosine => "COSINE",
            SimilarityArg::DotProduct => "DOT_PRODUCT",
            SimilarityArg::Euclidean => "EUCLIDEAN",
        }
    }
}

/// Reads up to `limit` vectors of an fvecs file; all must have one dimension.
pub fn read_fvecs(path: &Path, limit: Option<usize>) -> anyhow::Result<Vec<Vec<f32>>> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() && limit.is_none_or(|l| out.len() < l) {
        let word = |i: usize| -> anyhow::Result<[u8; 4]> {
            bytes
                .get(i..i + 4)
                .and_then(|b| b.try_into().ok())
                .with_context(|| format!("{}: truncated at byte {i}", path.display()))
        };
        let dim = i32::from_le_bytes(word(at)?);
        if !(1..=65_536).contains(&dim) {
            bail!(
                "{}: vector {} has dimension {dim} (not fvecs?)",
                path.display(),
                out.len()
            );
        }
        let dim = dim as usize;
        if let Some(first) = out.first().map(Vec::len) {
            if first != dim {
                bail!(
                    "{}: vector {} has dimension {dim}, the first {first}",
                    path.display(),
                    out.len()
                );
            }
        }
        let v = (0..dim)
            .map(|j| word(at + 4 + 4 * j).map(f32::from_le_bytes))
            .collect::<anyhow::Result<Vec<f32>>>()?;
        if v.iter().any(|x| !x.is_finite()) {
            bail!("{}: vector {} is not finite", path.display(), out.len());
        }
        out.push(v);
        at += 4 + 4 * dim;
    }
    Ok(out)
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    // Eight lanes, so that release builds vectorise the sum.
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for ((s, x), y) in acc.iter_mut().zip(x).zip(y) {
            *s += x * y;
        }
    }
    acc.iter().sum::<f32>() + ra.iter().zip(rb).map(|(x, y)| x * y).sum::<f32>()
}

/// The `k` nearest base rows of every query by `similarity` (best first; ties by row id),
/// computed exactly on all available cores.
pub fn exact_neighbours(
    base: &[Vec<f32>],
    queries: &[Vec<f32>],
    k: usize,
    similarity: SimilarityArg,
) -> Vec<Vec<u32>> {
    let norms: Vec<f32> = base.iter().map(|v| dot(v, v).sqrt()).collect();
    let score = |q: &[f32], qn: f32, i: usize| -> f32 {
        let v = &base[i];
        match similarity {
            SimilarityArg::DotProduct => dot(q, v),
            SimilarityArg::Cosine => dot(q, v) / (qn * norms[i]).max(f32::MIN_POSITIVE),
            // -|q - v|² = 2 q·v - |q|² - |v|²; only the order matters.
            SimilarityArg::Euclidean => 2.0 * dot(q, v) - norms[i] * norms[i],
        }
    };
    let one = |q: &Vec<f32>| -> Vec<u32> {
        let qn = dot(q, q).sqrt();
        // The best k so far, worst first.
        let mut best: Vec<(f32, u32)> = Vec::with_capacity(k + 1);
        for i in 0..base.len() {
            let s = score(q, qn, i);
            if best.len() == k && s <= best[0].0 {
                continue;
            }
            let at = best.partition_point(|(bs, bi)| *bs < s || (*bs == s && *bi > i as u32));
            best.insert(at, (s, i as u32));
            if best.len() > k {
                best.remove(0);
            }
        }
        best.iter().rev().map(|(_, i)| *i).collect()
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per = queries.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let parts: Vec<_> = queries
            .chunks(per)
            .map(|part| s.spawn(move || part.iter().map(one).collect::<Vec<_>>()))
            .collect();
        parts
            .into_iter()
            .flat_map(|h| h.join().expect("brute force thread"))
            .collect()
    })
}

/// Resident and peak resident memory of the processes `pids`, in bytes.
fn server_memory(pids: &[u32]) -> Option<(u64, u64)> {
    if pids.is_empty() {
        return None;
    }
    let mut rss = 0;
    let mut hwm = 0;
    for p in pids {
        let status = std::fs::read_to_string(format!("/proc/{p}/status")).ok()?;
        let kib = |key: &str| -> Option<u64> {
            status
                .lines()
                .find(|l| l.starts_with(key))?
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()
        };
        rss += kib("VmRSS:")? * 1024;
        hwm += kib("VmHWM:")? * 1024;
    }
    Some((rss, hwm))
}

/// Loading one endpoint's indexed table.
#[derive(Debug, Clone, Serialize)]
pub struct InsertReport {
    pub endpoint: String,
    pub setting: String,
    pub rows: usize,
    pub seconds: f64,
    pub rows_per_second: f64,
    /// Inserts that failed and were sent again.
    pub retries: u64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub server_cpu_seconds: Option<f64>,
    pub rows_per_server_cpu_second: Option<f64>,
    /// Server resident memory after the load, and its peak so far.
    pub server_rss_bytes: Option<u64>,
    pub server_peak_rss_bytes: Option<u64>,
    pub error_samples: Vec<String>,
}

/// An index built over the loaded rows.
#[derive(Debug, Clone, Serialize)]
pub struct BuildReport {
    pub endpoint: String,
    pub setting: String,
    /// From sending CREATE INDEX until the index is queryable and no longer building.
    pub seconds: f64,
    /// Of which the CREATE INDEX request itself.
    pub create_seconds: f64,
    pub server_cpu_seconds: Option<f64>,
    pub server_rss_bytes: Option<u64>,
    pub server_peak_rss_bytes: Option<u64>,
}

/// One query phase.
#[derive(Debug, Clone, Serialize)]
pub struct QueryReport {
    pub endpoint: String,
    pub setting: String,
    /// `insert`: the index the inserts maintained; `build`: the one built over loaded rows.
    pub index_from: &'static str,
    pub concurrency: usize,
    pub seconds: f64,
    /// Queries answered (validly) in the recorded window.
    pub ops: u64,
    pub errors: u64,
    /// Answers with a row id outside the table or repeated.
    pub invalid: u64,
    /// Answers with fewer than k rows.
    pub short: u64,
    pub queries_per_second: f64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    pub max_us: u64,
    /// Mean over every query of |answer ∩ exact k nearest| / k, from its first answer.
    pub recall: f64,
    /// Queries answered at least once (recall covers these; all unless some failed).
    pub queries_covered: usize,
    /// Of those, answered after the window to complete the recall (untimed).
    pub queries_after_window: usize,
    pub server_cpu_seconds: Option<f64>,
    pub queries_per_server_cpu_second: Option<f64>,
    /// CPU seconds this bench used in the window (it may share the machine with the server).
    pub client_cpu_seconds: f64,
    pub error_samples: Vec<String>,
}

/// Per endpoint and setting: the figures of the table.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub endpoint: String,
    pub setting: String,
    pub index_from: &'static str,
    pub recall: f64,
    pub queries_per_second: f64,
    pub queries_per_server_cpu_second: Option<f64>,
    pub p99_us: u64,
    /// The first endpoint's advantage in queries per server CPU second (same setting and
    /// index origin), None for the first.
    pub per_server_cpu_ratio: Option<f64>,
    pub throughput_ratio: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct VectorReport {
    pub started: String,
    pub table: String,
    pub base_file: String,
    pub query_file: String,
    pub rows: usize,
    pub queries: usize,
    pub dimension: usize,
    pub k: usize,
    pub similarity: SimilarityArg,
    pub settings: Vec<String>,
    pub concurrency: usize,
    pub load_concurrency: usize,
    pub phase_seconds: f64,
    pub exact_neighbours_seconds: f64,
    pub client_threads: usize,
    pub machine: crate::report::Machine,
    pub server_note: String,
    pub endpoints: Vec<Endpoint>,
    pub inserts: Vec<InsertReport>,
    pub builds: Vec<BuildReport>,
    pub query_phases: Vec<QueryReport>,
    pub summary: Vec<Summary>,
}

fn mib(v: Option<u64>) -> String {
    report::or_dash(v.map(|b| b as f64 / (1u64 << 20) as f64), |m| {
        format!("{m:.0}")
    })
}

impl VectorReport {
    pub fn text(&self) -> String {
        let ms = |us: u64| us as f64 / 1000.0;
        let mut s = format!(
            "vector  {}  {} ({} rows of {} dims from {}; {} queries from {}; {:?}; LIMIT {})  \
             {} queries in flight, phases of {:.0}s; inserts {} in flight\n",
            self.started,
            self.table,
            self.rows,
            self.dimension,
            self.base_file,
            self.queries,
            self.query_file,
            self.similarity,
            self.k,
            self.concurrency,
            self.phase_seconds,
            self.load_concurrency
        );
        s.push_str(&format!(
            "machine: {} CPUs ({}), bench client: {} runtime threads on the same machine; \
             exact neighbours computed in {:.1}s\n",
            self.machine.nproc,
            self.machine.cpu_model,
            self.client_threads,
            self.exact_neighbours_seconds
        ));
        if !self.server_note.is_empty() {
            s.push_str(&format!("server: {}\n", self.server_note));
        }
        s.push_str("inserts into the indexed table\n");
        s.push_str("endpoint        setting                rows     rows/s  retries   p50 ms   p99 ms  srv cpu-s  rows/srv-cpu-s  rss MiB  peak MiB\n");
        for l in &self.inserts {
            s.push_str(&format!(
                "{:<15} {:<18} {:>8} {:>10.0} {:>8} {:>8.2} {:>8.2} {:>10} {:>15} {:>8} {:>9}\n",
                l.endpoint,
                l.setting,
                l.rows,
                l.rows_per_second,
                l.retries,
                ms(l.p50_us),
                ms(l.p99_us),
                report::or_dash(l.server_cpu_seconds, |c| format!("{c:.1}")),
                report::or_dash(l.rows_per_server_cpu_second, |c| format!("{c:.0}")),
                mib(l.server_rss_bytes),
                mib(l.server_peak_rss_bytes)
            ));
            for e in &l.error_samples {
                s.push_str(&format!("    error: {e}\n"));
            }
        }
        if !self.builds.is_empty() {
            s.push_str("index builds over the loaded rows (CREATE INDEX until queryable)\n");
            s.push_str("endpoint        setting              build s  create s  srv cpu-s  rss MiB  peak MiB\n");
            for b in &self.builds {
                s.push_str(&format!(
                    "{:<15} {:<18} {:>9.2} {:>9.2} {:>10} {:>8} {:>9}\n",
                    b.endpoint,
                    b.setting,
                    b.seconds,
                    b.create_seconds,
                    report::or_dash(b.server_cpu_seconds, |c| format!("{c:.1}")),
                    mib(b.server_rss_bytes),
                    mib(b.server_peak_rss_bytes)
                ));
            }
        }
        s.push_str("ANN queries\n");
        s.push_str("endpoint        setting            index    recall@k       ops  err inval short       q/s   p50 ms   p90 ms   p99 ms p99.9 ms  srv cpu-s  q/srv-cpu-s  cli cpu-s\n");
        for p in &self.query_phases {
            s.push_str(&format!(
                "{:<15} {:<18} {:<7} {:>9.4} {:>9} {:>4} {:>5} {:>5} {:>9.0} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>10} {:>12} {:>10.1}\n",
                p.endpoint,
                p.setting,
                p.index_from,
                p.recall,
                p.ops,
                p.errors,
                p.invalid,
                p.short,
                p.queries_per_second,
                ms(p.p50_us),
                ms(p.p90_us),
                ms(p.p99_us),
                ms(p.p999_us),
                report::or_dash(p.server_cpu_seconds, |c| format!("{c:.1}")),
                report::or_dash(p.queries_per_server_cpu_second, |c| format!("{c:.0}")),
                p.client_cpu_seconds
            ));
            if p.queries_covered < self.queries || p.queries_after_window > 0 {
                s.push_str(&format!(
                    "    recall over {} of {} queries ({} asked after the window)\n",
                    p.queries_covered, self.queries, p.queries_after_window
                ));
            }
            for e in &p.error_samples {
                s.push_str(&format!("    error: {e}\n"));
            }
        }
        s.push_str("summary\n");
        s.push_str("endpoint        setting            index    recall@k       q/s  q/srv-cpu-s   p99 ms  ratio q/s  ratio per srv cpu\n");
        for m in &self.summary {
            s.push_str(&format!(
                "{:<15} {:<18} {:<7} {:>9.4} {:>9.0} {:>12} {:>8.2} {:>10} {:>18}\n",
                m.endpoint,
                m.setting,
                m.index_from,
                m.recall,
                m.queries_per_second,
                report::or_dash(m.queries_per_server_cpu_second, |c| format!("{c:.0}")),
                ms(m.p99_us),
                report::or_dash(m.throughput_ratio, |r| format!("{r:.2}x")),
                report::or_dash(m.per_server_cpu_ratio, |r| format!("{r:.2}x"))
            ));
        }
        s
    }
}

/// An index setting: its name in reports and its options.
#[derive(Debug, Clone)]
struct Setting {
    name: String,
    options: Vec<(String, String)>,
}

fn parse_setting(s: &str, similarity: SimilarityArg) -> anyhow::Result<Setting> {
    let mut options = Vec::new();
    if similarity != SimilarityArg::Cosine {
        options.push(("similarity_function".into(), similarity.option().into()));
    }
    if s != "default" {
        for kv in s.split(',') {
            let (k, v) = kv
                .split_once('=')
                .with_context(|| format!("--setting {s:?}: want option=value[,option=value]"))?;
            let (k, v) = (k.trim(), v.trim());
            if k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                bail!("--setting {s:?}: bad option name {k:?}");
            }
            if k.eq_ignore_ascii_case("similarity_function") {
                bail!("--setting {s:?}: give the similarity with --similarity");
            }
            options.push((k.to_string(), v.replace('\'', "''")));
        }
    }
    Ok(Setting {
        name: s.to_string(),
        options,
    })
}

/// One endpoint's session and statements.
struct Target {
    endpoint: Endpoint,
    session: Arc<Session>,
    keyspace: String,
    table: String,
    index: String,
    insert: PreparedStatement,
    ann: PreparedStatement,
}

async fn ddl(session: &Session, q: String, timeout: Option<Duration>) -> anyhow::Result<()> {
    let mut st = Statement::new(q.clone());
    if timeout.is_some() {
        st.set_request_timeout(timeout);
    }
    session
        .query_unpaged(st, ())
        .await
        .map(|_| ())
        .with_context(|| format!("running {q}"))
}

impl Target {
    async fn open(
        endpoint: Endpoint,
        a: &VectorArgs,
        table: &str,
        dim: usize,
        first: &Setting,
    ) -> anyhow::Result<Target> {
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
        let ks = &a.keyspace;
        let slow = Some(Duration::from_secs(120));
        ddl(
            &session,
            format!(
                "CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = \
                 {{'class': 'SimpleStrategy', 'replication_factor': 1}}"
            ),
            slow,
        )
        .await?;
        ddl(&session, format!("DROP TABLE IF EXISTS {ks}.{table}"), slow).await?;
        ddl(
            &session,
            format!("CREATE TABLE {ks}.{table} (id int PRIMARY KEY, v vector<float, {dim}>)"),
            slow,
        )
        .await?;
        let index = format!("{table}_v_ann");
        create_index(
            &session,
            &endpoint.name,
            ks,
            table,
            &index,
            first,
            a.build_timeout,
        )
        .await?;
        Ok(Target {
            insert: session
                .prepare(format!("INSERT INTO {ks}.{table} (id, v) VALUES (?, ?)"))
                .await
                .context("preparing the insert")?,
            // Prepared once the index exists (Cassandra refuses ANN without one).
            ann: session
                .prepare(format!(
                    "SELECT id FROM {ks}.{table} ORDER BY v ANN OF ? LIMIT {}",
                    a.k
                ))
                .await
                .context("preparing the ANN query")?,
            endpoint,
            session,
            keyspace: ks.clone(),
            table: table.to_string(),
            index,
        })
    }
}

/// CREATE INDEX and wait until it is queryable; returns the seconds CREATE INDEX took.
async fn create_index(
    session: &Session,
    endpoint: &str,
    keyspace: &str,
    table: &str,
    index: &str,
    s: &Setting,
    timeout: Duration,
) -> anyhow::Result<f64> {
    let options = if s.options.is_empty() {
        String::new()
    } else {
        format!(
            " WITH OPTIONS = {{{}}}",
            s.options
                .iter()
                .map(|(k, v)| format!("'{k}': '{v}'"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let q = format!(
        "CREATE CUSTOM INDEX {index} ON {keyspace}.{table} (v) USING 'StorageAttachedIndex'{options}"
    );
    let started = Instant::now();
    let deadline = started + timeout;
    // A server that builds before it answers may outlast the request; the wait below
    // then tells when it is done.
    if let Err(e) = ddl(session, q, Some(timeout)).await {
        let m = format!("{e:#}");
        if !m.to_ascii_lowercase().contains("timed out")
            && !m.to_ascii_lowercase().contains("timeout")
        {
            return Err(e);
        }
    }
    let create_seconds = started.elapsed().as_secs_f64();
    wait_queryable(session, endpoint, keyspace, index, deadline).await?;
    Ok(create_seconds)
}

/// Until `system_views.sai_column_indexes` says the index is queryable and not building.
async fn wait_queryable(
    session: &Session,
    endpoint: &str,
    keyspace: &str,
    index: &str,
    deadline: Instant,
) -> anyhow::Result<()> {
    let q = "SELECT is_queryable, is_building FROM system_views.sai_column_indexes \
             WHERE keyspace_name = ? AND index_name = ?";
    let stmt = session
        .prepare(q)
        .await
        .context("preparing the index status query")?;
    loop {
        let last = match session.execute_unpaged(&stmt, (keyspace, index)).await {
            Ok(r) => match r
                .into_rows_result()
                .ok()
                .and_then(|r| r.maybe_first_row::<(Option<bool>, Option<bool>)>().ok())
                .flatten()
            {
                Some((Some(true), Some(false))) => return Ok(()),
                other => format!("status {other:?}"),
            },
            Err(e) => e.to_string(),
        };
        if Instant::now() > deadline {
            bail!("{endpoint}: index {index} not queryable in time ({last})");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn insert_rows(
    t: &Arc<Target>,
    base: &Arc<Vec<Vec<f32>>>,
    a: &VectorArgs,
    setting: &str,
) -> anyhow::Result<InsertReport> {
    let next = Arc::new(AtomicU64::new(0));
    let hist = Arc::new(Mutex::new(new_histogram()));
    let started = Instant::now();
    let cpu0 = runner::server_cpu_seconds(&t.endpoint.pids);
    let mut tasks = Vec::new();
    for _ in 0..a.load_concurrency.max(1) {
        let (t, base, next, hist) = (t.clone(), base.clone(), next.clone(), hist.clone());
        tasks.push(tokio::spawn(async move {
            let mut retries = 0u64;
            let mut samples = Vec::new();
            loop {
                let id = next.fetch_add(1, Ordering::Relaxed) as usize;
                let Some(v) = base.get(id) else {
                    return anyhow::Ok((retries, samples));
                };
                let mut tries = 0;
                loop {
                    let began = Instant::now();
                    match t
                        .session
                        .execute_unpaged(&t.insert, (id as i32, v.as_slice()))
                        .await
                    {
                        Ok(_) => {
                            hist.lock()
                                .unwrap_or_else(|p| p.into_inner())
                                .saturating_record(began.elapsed().as_micros().max(1) as u64);
                            break;
                        }
                        Err(e) => {
                            tries += 1;
                            retries += 1;
                            if samples.len() < ERROR_SAMPLES {
                                samples.push(format!("inserting row {id}: {e}"));
                            }
                            if tries >= 10 {
                                bail!("inserting row {id}: {e}");
                            }
                            tokio::time::sleep(Duration::from_millis(50 * tries)).await;
                        }
                    }
                }
            }
        }));
    }
    let progress = {
        let (next, name, rows) = (next.clone(), t.endpoint.name.clone(), base.len());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(10)).await;
                eprintln!(
                    "insert {name}: {}/{rows} rows, {:.0}s",
                    (next.load(Ordering::Relaxed) as usize).min(rows),
                    started.elapsed().as_secs_f64()
                );
            }
        })
    };
    let mut retries = 0;
    let mut error_samples = Vec::new();
    let mut result = Ok(());
    for task in tasks {
        match task.await {
            Ok(Ok((r, s))) => {
                retries += r;
                error_samples.extend(s);
            }
            Ok(Err(e)) => result = Err(e),
            Err(e) => result = Err(e.into()),
        }
    }
    progress.abort();
    result?;
    let seconds = started.elapsed().as_secs_f64();
    let server_cpu_seconds =
        cpu0.and_then(|c0| runner::server_cpu_seconds(&t.endpoint.pids).map(|c1| c1 - c0));
    let h = hist.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let mem = server_memory(&t.endpoint.pids);
    error_samples.truncate(ERROR_SAMPLES);
    Ok(InsertReport {
        endpoint: t.endpoint.name.clone(),
        setting: setting.to_string(),
        rows: base.len(),
        seconds,
        rows_per_second: base.len() as f64 / seconds,
        retries,
        p50_us: h.value_at_quantile(0.5),
        p99_us: h.value_at_quantile(0.99),
        server_cpu_seconds,
        rows_per_server_cpu_second: server_cpu_seconds
            .filter(|c| *c > 0.0)
            .map(|c| base.len() as f64 / c),
        server_rss_bytes: mem.map(|m| m.0),
        server_peak_rss_bytes: mem.map(|m| m.1),
        error_samples,
    })
}

async fn build_index(t: &Target, s: &Setting, a: &VectorArgs) -> anyhow::Result<BuildReport> {
    ddl(
        &t.session,
        format!("DROP INDEX IF EXISTS {}.{}", t.keyspace, t.index),
        // Dropping a large index takes time too: Cassandra 5.0.9's DROP of a 100k-vector
        // index outlasted two minutes on a busy two-core machine (session 21).
        Some(a.build_timeout),
    )
    .await?;
    let cpu0 = runner::server_cpu_seconds(&t.endpoint.pids);
    let started = Instant::now();
    let create_seconds = create_index(
        &t.session,
        &t.endpoint.name,
        &t.keyspace,
        &t.table,
        &t.index,
        s,
        a.build_timeout,
    )
    .await?;
    let seconds = started.elapsed().as_secs_f64();
    let server_cpu_seconds =
        cpu0.and_then(|c0| runner::server_cpu_seconds(&t.endpoint.pids).map(|c1| c1 - c0));
    let mem = server_memory(&t.endpoint.pids);
    Ok(BuildReport {
        endpoint: t.endpoint.name.clone(),
        setting: s.name.clone(),
        seconds,
        create_seconds,
        server_cpu_seconds,
        server_rss_bytes: mem.map(|m| m.0),
        server_peak_rss_bytes: mem.map(|m| m.1),
    })
}

/// What one query worker saw.
enum Answer {
    /// Rows in the exact k nearest, and whether the answer had all k rows.
    Hits(u16, bool),
    Error(String),
    Invalid(String),
}

/// Asks query `i` and checks its answer against the exact neighbours.
async fn ask(t: &Target, query: &[f32], truth: &[u32], rows: usize, k: usize) -> Answer {
    let res = match t.session.execute_unpaged(&t.ann, (query,)).await {
        Ok(r) => r,
        Err(e) => return Answer::Error(e.to_string()),
    };
    let ids: Vec<i32> = match res
        .into_rows_result()
        .map_err(|e| e.to_string())
        .and_then(|r| {
            r.rows::<(i32,)>()
                .map_err(|e| e.to_string())?
                .map(|r| r.map(|(id,)| id).map_err(|e| e.to_string()))
                .collect::<Result<Vec<_>, _>>()
        }) {
        Ok(ids) => ids,
        Err(e) => return Answer::Invalid(format!("answer: {e}")),
    };
    let mut seen = ids.clone();
    seen.sort_unstable();
    seen.dedup();
    if ids.len() > k || seen.len() != ids.len() || ids.iter().any(|&i| i < 0 || i as usize >= rows)
    {
        return Answer::Invalid(format!(
            "ids {:?} (k {k}, {rows} rows)",
            &ids[..ids.len().min(12)]
        ));
    }
    let hits = ids.iter().filter(|&&i| truth.contains(&(i as u32))).count();
    Answer::Hits(hits as u16, ids.len() == k.min(rows))
}

/// One timed query phase against one target.
async fn query_phase(
    t: &Arc<Target>,
    queries: &Arc<Vec<Vec<f32>>>,
    truth: &Arc<Vec<Vec<u32>>>,
    rows: usize,
    a: &VectorArgs,
    setting: &str,
    index_from: &'static str,
) -> QueryReport {
    let next = Arc::new(AtomicU64::new(0));
    let recall: Arc<Vec<AtomicU16>> = Arc::new(
        (0..queries.len())
            .map(|_| AtomicU16::new(UNANSWERED))
            .collect(),
    );
    let k = a.k;
    let op = {
        let (t, queries, truth, next, recall) = (
            t.clone(),
            queries.clone(),
            truth.clone(),
            next.clone(),
            recall.clone(),
        );
        move |()| {
            let (t, queries, truth, recall) =
                (t.clone(), queries.clone(), truth.clone(), recall.clone());
            let i = next.fetch_add(1, Ordering::Relaxed) as usize % queries.len();
            async move {
                let outcome = match ask(&t, &queries[i], &truth[i], rows, k).await {
                    Answer::Hits(h, full) => {
                        // Every answer counts for recall, inside the window or not.
                        let _ = recall[i].compare_exchange(
                            UNANSWERED,
                            h,
                            Ordering::Relaxed,
                            Ordering::Relaxed,
                        );
                        Outcome::Done {
                            rows: 0,
                            short: !full,
                        }
                    }
                    Answer::Error(e) => Outcome::Error(e),
                    Answer::Invalid(e) => Outcome::Invalid(e),
                };
                ((), outcome)
            }
        }
    };
    let workers = vec![(); a.concurrency.max(1)];
    let phase::Timed {
        hist: h,
        tally: mut total,
        cpu,
        ..
    } = phase::run(&t.endpoint.pids, a.settle, a.phase, workers, op).await;
    // Queries the window did not reach (or whose answers failed) are asked now, untimed.
    let mut after = 0;
    for (i, slot) in recall.iter().enumerate() {
        if slot.load(Ordering::Relaxed) != UNANSWERED {
            continue;
        }
        for _ in 0..3 {
            match ask(t, &queries[i], &truth[i], rows, k).await {
                Answer::Hits(h, _) => {
                    slot.store(h, Ordering::Relaxed);
                    after += 1;
                    break;
                }
                Answer::Error(e) | Answer::Invalid(e) => total.sample(format!("after: {e}")),
            }
        }
    }
    let answered: Vec<u16> = recall
        .iter()
        .map(|r| r.load(Ordering::Relaxed))
        .filter(|h| *h != UNANSWERED)
        .collect();
    let want = k.min(rows).max(1) as f64;
    let recall_mean = if answered.is_empty() {
        0.0
    } else {
        answered.iter().map(|h| *h as f64 / want).sum::<f64>() / answered.len() as f64
    };
    let ops = h.len();
    let runner::CpuWindow {
        server_cpu_seconds,
        client_cpu_seconds,
        seconds,
    } = cpu;
    QueryReport {
        endpoint: t.endpoint.name.clone(),
        setting: setting.to_string(),
        index_from,
        concurrency: a.concurrency,
        seconds,
        ops,
        errors: total.errors,
        invalid: total.invalid,
        short: total.short,
        queries_per_second: ops as f64 / seconds,
        p50_us: h.value_at_quantile(0.5),
        p90_us: h.value_at_quantile(0.9),
        p99_us: h.value_at_quantile(0.99),
        p999_us: h.value_at_quantile(0.999),
        max_us: h.max(),
        recall: recall_mean,
        queries_covered: answered.len(),
        queries_after_window: after,
        server_cpu_seconds,
        queries_per_server_cpu_second: server_cpu_seconds
            .filter(|c| *c > 0.0)
            .map(|c| ops as f64 / c),
        client_cpu_seconds,
        error_samples: total.samples,
    }
}

fn summarize(endpoints: &[Endpoint], phases: &[QueryReport]) -> Vec<Summary> {
    let mut out: Vec<Summary> = Vec::new();
    for e in endpoints {
        for p in phases.iter().filter(|p| p.endpoint == e.name) {
            let first = phases.iter().find(|f| {
                f.endpoint == endpoints[0].name
                    && f.setting == p.setting
                    && f.index_from == p.index_from
            });
            let is_first = e.name == endpoints[0].name;
            out.push(Summary {
                endpoint: e.name.clone(),
                setting: p.setting.clone(),
                index_from: p.index_from,
                recall: p.recall,
                queries_per_second: p.queries_per_second,
                queries_per_server_cpu_second: p.queries_per_server_cpu_second,
                p99_us: p.p99_us,
                throughput_ratio: first
                    .filter(|_| !is_first && p.queries_per_second > 0.0)
                    .map(|f| f.queries_per_second / p.queries_per_second),
                per_server_cpu_ratio: first.filter(|_| !is_first).and_then(|f| {
                    f.queries_per_server_cpu_second
                        .zip(p.queries_per_server_cpu_second)
                        .filter(|(_, c)| *c > 0.0)
                        .map(|(f, c)| f / c)
                }),
            });
        }
    }
    out
}

/// Runs the case and writes its reports.
pub async fn run(a: VectorArgs) -> anyhow::Result<()> {
    if a.k == 0 || a.k > 1000 {
        bail!("--k must be 1..=1000 (Cassandra's ANN LIMIT), got {}", a.k);
    }
    if a.concurrency == 0 || a.settings.is_empty() {
        bail!("--concurrency must be at least 1 and --setting given at least once");
    }
    let settings = a
        .settings
        .iter()
        .map(|s| parse_setting(s, a.similarity))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let endpoints = a
        .endpoints
        .iter()
        .map(|e| crate::parse_endpoint(e))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let base = read_fvecs(&a.base, a.rows)?;
    let queries = read_fvecs(&a.queries, a.query_count)?;
    let (Some(dim), Some(qdim)) = (base.first().map(Vec::len), queries.first().map(Vec::len))
    else {
        bail!("no base vectors or no queries");
    };
    if dim != qdim {
        bail!("base vectors have {dim} dimensions, queries {qdim}");
    }
    if base.len() > i32::MAX as usize {
        bail!("too many rows for an int key");
    }
    if let Some(r) = a.rows.filter(|r| *r > base.len()) {
        bail!(
            "--rows {r}: {} holds {} vectors",
            a.base.display(),
            base.len()
        );
    }
    let t0 = Instant::now();
    let truth = exact_neighbours(&base, &queries, a.k, a.similarity);
    let exact_neighbours_seconds = t0.elapsed().as_secs_f64();
    eprintln!(
        "exact {} nearest of {} queries among {} rows in {exact_neighbours_seconds:.1}s",
        a.k,
        queries.len(),
        base.len()
    );
    let table = a
        .table
        .clone()
        .unwrap_or_else(|| format!("vec{}", base.len()));
    let started_unix = crate::now_unix();
    let (rows, nqueries) = (base.len(), queries.len());
    let (base, queries, truth) = (Arc::new(base), Arc::new(queries), Arc::new(truth));
    let mut inserts = Vec::new();
    let mut builds = Vec::new();
    let mut query_phases = Vec::new();
    let log = |p: &QueryReport| {
        eprintln!(
            "{} {} ({}): recall@{} {:.4}, {:.0} q/s, p99 {:.2} ms, {} q/server-cpu-s, {} errors, {} invalid",
            p.endpoint,
            p.setting,
            p.index_from,
            a.k,
            p.recall,
            p.queries_per_second,
            p.p99_us as f64 / 1000.0,
            report::or_dash(p.queries_per_server_cpu_second, |c| format!("{c:.0}")),
            p.errors,
            p.invalid
        )
    };
    for e in &endpoints {
        let t = Arc::new(Target::open(e.clone(), &a, &table, dim, &settings[0]).await?);
        let l = insert_rows(&t, &base, &a, &settings[0].name).await?;
        eprintln!(
            "insert {}: {} rows in {:.1}s ({:.0} rows/s, {} retries)",
            e.name, l.rows, l.seconds, l.rows_per_second, l.retries
        );
        inserts.push(l);
        let p = query_phase(&t, &queries, &truth, rows, &a, &settings[0].name, "insert").await;
        log(&p);
        query_phases.push(p);
        if a.no_build {
            continue;
        }
        for s in &settings {
            let b = build_index(&t, s, &a).await?;
            eprintln!(
                "build {} {}: {:.2}s (CREATE INDEX {:.2}s)",
                e.name, s.name, b.seconds, b.create_seconds
            );
            builds.push(b);
            let p = query_phase(&t, &queries, &truth, rows, &a, &s.name, "build").await;
            log(&p);
            query_phases.push(p);
        }
    }
    let summary = summarize(&endpoints, &query_phases);
    let report = VectorReport {
        started: utc(started_unix),
        table: format!("{}.{table}", a.keyspace),
        base_file: a.base.display().to_string(),
        query_file: a.queries.display().to_string(),
        rows,
        queries: nqueries,
        dimension: dim,
        k: a.k,
        similarity: a.similarity,
        settings: a.settings.clone(),
        concurrency: a.concurrency,
        load_concurrency: a.load_concurrency,
        phase_seconds: a.phase.as_secs_f64(),
        exact_neighbours_seconds,
        client_threads: a.threads,
        machine: crate::report::Machine::detect(),
        server_note: a.report.server_note.clone(),
        endpoints,
        inserts,
        builds,
        query_phases,
        summary,
    };
    let text = report.text();
    print!("{text}");
    let name = a
        .report
        .name
        .clone()
        .unwrap_or_else(|| format!("vector-{}", crate::stamp(started_unix)));
    crate::write_text_json(&a.report.out, &name, &text, &report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_fvecs(path: &Path, vs: &[Vec<f32>]) {
        let mut b = Vec::new();
        for v in vs {
            b.extend((v.len() as i32).to_le_bytes());
            for x in v {
                b.extend(x.to_le_bytes());
            }
        }
        std::fs::write(path, b).unwrap();
    }

    #[test]
    fn fvecs_round_trip_and_bad_files_are_refused() {
        let dir = std::env::temp_dir().join(format!("vecbench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("a.fvecs");
        let vs = vec![
            vec![1.0, 2.0, 3.0],
            vec![-1.0, 0.5, 0.25],
            vec![0.0, 0.0, 1.0],
        ];
        write_fvecs(&p, &vs);
        assert_eq!(read_fvecs(&p, None).unwrap(), vs);
        assert_eq!(read_fvecs(&p, Some(2)).unwrap(), vs[..2]);
        write_fvecs(&p, &[vec![1.0, 2.0], vec![1.0]]);
        assert!(read_fvecs(&p, None).is_err(), "mixed dimensions");
        std::fs::write(&p, [3, 0, 0, 0, 0, 0]).unwrap();
        assert!(read_fvecs(&p, None).is_err(), "truncated");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn exact_neighbours_follow_the_similarity() {
        let base = vec![
            vec![1.0, 0.0],
            vec![10.0, 1.0],
            vec![0.0, 1.0],
            vec![-1.0, 0.0],
            vec![0.9, 0.1],
        ];
        let q = vec![vec![1.0, 0.0]];
        // Cosine: direction only; dot product: length counts; euclidean: distance.
        assert_eq!(
            exact_neighbours(&base, &q, 3, SimilarityArg::Cosine),
            vec![vec![0, 1, 4]]
        );
        assert_eq!(
            exact_neighbours(&base, &q, 2, SimilarityArg::DotProduct),
            vec![vec![1, 0]]
        );
        assert_eq!(
            exact_neighbours(&base, &q, 3, SimilarityArg::Euclidean),
            vec![vec![0, 4, 2]]
        );
        // Fewer rows than k: all of them.
        assert_eq!(
            exact_neighbours(&base[..2], &q, 10, SimilarityArg::Cosine)[0].len(),
            2
        );
    }

    #[test]
    fn settings_become_index_options() {
        let s = parse_setting("default", SimilarityArg::Cosine).unwrap();
        assert!(s.options.is_empty());
        let s = parse_setting("optimize_for=RECALL", SimilarityArg::Euclidean).unwrap();
        assert_eq!(
            s.options,
            vec![
                ("similarity_function".to_string(), "EUCLIDEAN".to_string()),
                ("optimize_for".to_string(), "RECALL".to_string())
            ]
        );
        assert!(parse_setting("optimize_for", SimilarityArg::Cosine).is_err());
        assert!(parse_setting("x y=1", SimilarityArg::Cosine).is_err());
        assert!(parse_setting("similarity_function=DOT_PRODUCT", SimilarityArg::Cosine).is_err());
    }
}
