//! `peregrine bench`: YCSB core workloads A–F and cassandra-stress style cases against any CQL
//! endpoint (Peregrine, Apache Cassandra, ScyllaDB), with the report the seeds use.
//!
//! It talks to servers only through a real driver (the `scylla` crate), never through the
//! workspace's server crates, so the same numbers can be produced for any database. It is a
//! load generator and report writer; it is **not** a correctness test suite (although
//! `--validate` checks that reads return what was written) and not a cluster manager.
//!
//! # Module map
//! - [`generator`]: YCSB's zipfian, scrambled zipfian, skewed-latest generators, FNV hash, key
//!   names and the acknowledged insert counter (ported from `site.ycsb.generator`).
//! - [`workload`]: workload A–F and preset definitions, operation and key choosers, field values.
//! - [`runner`]: connection, schema, prepared statements, worker tasks, per-second collection,
//!   progress line.
//! - [`stats`]: HDR histograms per operation kind, errors and timeouts, summaries.
//! - [`validate`]: `--validate` bookkeeping and checks.
//! - [`report`]: text tables, JSON and self-contained HTML with SVG plots; `compare` medians and gains.
//! - [`scan_lane`]: `scan-lane`, point-read latency with and without a concurrent full scan.
//! - [`service_levels`]: `service-levels`, two roles' throughput and p99 alone and together.
//! - [`indexed`]: `indexed`, SAI point lookups, range queries and indexed writes on a table of
//!   known shape, every answer checked, against one or more endpoints.
//! - [`vector`]: `vector`, inserts into a table with an SAI vector index, index builds, and ANN
//!   queries with recall@k against exact neighbours, against one or more endpoints.
//!
//! # Invariants
//! - Only prepared statements are used for measured operations (DDL in `load` is not measured).
//! - Latency is measured from each operation's intended start; with `--target-rate` that is the
//!   schedule, so queueing behind a stalled server is counted (no coordinated omission).
//! - No error is dropped: every failed request is counted under its class, and timeouts separately.
//! - Requests in flight are bounded by `--concurrency` (1..=1024); the driver is never retried.

pub mod generator;
pub mod indexed;
mod phase;
pub mod report;
pub mod runner;
pub mod scan_lane;
pub mod service_levels;
pub mod stats;
pub mod validate;
pub mod vector;
pub mod workload;

use anyhow::{bail, Context};
use report::{CompareReport, Machine, RunParams, RunReport};
use runner::{ConnectConfig, Endpoint, LoadShape, SchemaConfig};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use workload::{Distribution, OpKind, WorkloadSpec};

/// `peregrine bench …`.
#[derive(clap::Args, Debug, Clone)]
#[command(about = "YCSB A–F and cassandra-stress style benchmarks against any CQL endpoint")]
pub struct BenchArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: BenchCommand,
}

/// The bench subcommands.
#[derive(clap::Subcommand, Debug, Clone)]
pub enum BenchCommand {
    /// Create the keyspace and table and insert `--records` records.
    Load(RunArgs),
    /// Run a workload against one endpoint and report.
    Run(RunArgs),
    /// Run the same workload against several endpoints in alternation; report medians and gains.
    Compare(CompareArgs),
    /// Point reads at a fixed rate with and without a concurrent full-table scan; report
    /// their p99 in both (issue 17: scans in their own lane).
    ScanLane(scan_lane::ScanLaneArgs),
    /// Two roles (high and low service level shares) saturating the server with point reads,
    /// alone and together; report each one's throughput and p99 (issue 17: workload
    /// priorities).
    ServiceLevels(service_levels::ServiceLevelsArgs),
    /// Indexed (SAI) point lookups, range queries and writes on a loaded table, checked,
    /// against one or more endpoints (issue 11: indexes cost what they return).
    Indexed(indexed::IndexedArgs),
    /// Inserts into a vector-indexed table, index builds and ANN queries with recall@k
    /// against exact neighbours, against one or more endpoints (issue 12).
    Vector(vector::VectorArgs),
}

/// Report options shared by `scan-lane`, `service-levels`, `indexed` and `vector`.
#[derive(clap::Args, Debug, Clone)]
pub struct ReportArgs {
    /// A note on the server's settings, copied into the report.
    #[arg(long, default_value = "")]
    pub server_note: String,
    /// Directory for the .txt and .json reports.
    #[arg(long, default_value = "bench-out")]
    pub out: PathBuf,
    /// Base name of the report files (default: the subcommand and the time).
    #[arg(long)]
    pub name: Option<String>,
    /// RNG seed (default: from the clock).
    #[arg(long)]
    pub seed: Option<u64>,
}

/// cassandra-stress style presets.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    /// Inserts of new keys.
    StressWrite,
    /// Reads of loaded keys (100:0).
    StressRead,
    /// Reads and whole-row writes with `--ratio`.
    StressMixed,
    /// One-field updates of loaded keys (the plain twin of `lwt-update`).
    StressUpdate,
    /// Inserts of new keys `IF NOT EXISTS` (beside `stress-write`).
    LwtWrite,
    /// One-field updates of loaded keys `IF fieldN != ?` (beside `stress-update`).
    LwtUpdate,
}

/// Key-choice override.
#[derive(clap::ValueEnum, Debug, Clone, Copy)]
pub enum DistributionArg {
    /// YCSB scrambled zipfian (0.99).
    Zipfian,
    /// YCSB skewed latest.
    Latest,
    /// Uniform.
    Uniform,
    /// Every key in turn (YCSB's `sequential`): `--operations` equal to `--records` reads each
    /// key once (a cold pass).
    Sequential,
}

/// Workload and load-shape options shared by every subcommand.
#[derive(clap::Args, Debug, Clone)]
pub struct WorkloadArgs {
    /// YCSB core workload: a, b, c, d, e or f.
    #[arg(long, default_value = "a")]
    pub workload: String,
    /// cassandra-stress style case instead of a YCSB workload.
    #[arg(long, value_enum)]
    pub preset: Option<Preset>,
    /// read:write ratio for `--preset stress-mixed`, e.g. 80:20.
    #[arg(long, default_value = "80:20")]
    pub ratio: String,
    /// One column of this many bytes per row (seed 000 used 4096).
    #[arg(long)]
    pub payload: Option<usize>,
    /// Fields per record (YCSB default 10; stress presets 5).
    #[arg(long)]
    pub field_count: Option<usize>,
    /// Bytes per field (YCSB default 100; stress presets 34).
    #[arg(long)]
    pub field_length: Option<usize>,
    /// Records loaded (and assumed loaded by `run`).
    #[arg(long, default_value_t = 100_000)]
    pub records: u64,
    /// Updates write every field (YCSB `writeallfields`).
    #[arg(long)]
    pub write_all_fields: bool,
    /// Longest scan (workload E scans 1..=this rows, uniformly).
    #[arg(long, default_value_t = 100)]
    pub max_scan_length: u32,
    /// Override the workload's key distribution.
    #[arg(long, value_enum)]
    pub distribution: Option<DistributionArg>,
    /// Stop after this many operations.
    #[arg(long)]
    pub operations: Option<u64>,
    /// Stop after this long (e.g. 60s, 2m, 500ms).
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Run this long first without recording.
    #[arg(long, value_parser = parse_duration, default_value = "0s")]
    pub warmup: Duration,
    /// Requests in flight (1..=1024).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub concurrency: u16,
    /// Driver tasks sharing the concurrency.
    #[arg(long, default_value_t = 1)]
    pub workers: usize,
    /// Runtime threads (1 = a single-threaded runtime: the cheapest per operation).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Connections per host (each carries many streams).
    #[arg(long, default_value_t = 2)]
    pub connections: usize,
    /// Target operations per second; latency is then measured from the intended start.
    #[arg(long)]
    pub target_rate: Option<f64>,
    /// Consistency level: one, quorum, local_quorum, all, …
    #[arg(long, default_value = "one")]
    pub consistency: String,
    /// Client-side timeout per request.
    #[arg(long, value_parser = parse_duration, default_value = "5s")]
    pub request_timeout: Duration,
    /// Keyspace (default `ycsb`, or `stress` for presets).
    #[arg(long)]
    pub keyspace: Option<String>,
    /// Table (default `usertable`, or `standard1` for presets).
    #[arg(long)]
    pub table: Option<String>,
    /// Replication factor when `load` creates the keyspace.
    #[arg(long, default_value_t = 1)]
    pub replication_factor: u32,
    /// `load`: drop the table first.
    #[arg(long)]
    pub drop: bool,
    /// Check that every read returns what was written.
    #[arg(long)]
    pub validate: bool,
    /// First insert sequence number (default: 0 for load, `--records` for run).
    #[arg(long)]
    pub insert_start: Option<u64>,
    /// RNG seed (default: from the clock; recorded in the JSON).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Username for PasswordAuthenticator.
    #[arg(long)]
    pub user: Option<String>,
    /// Password for PasswordAuthenticator.
    #[arg(long)]
    pub password: Option<String>,
    /// Directory for the .txt, .json and .html reports.
    #[arg(long, default_value = "bench-out")]
    pub out: PathBuf,
    /// Base name of the report files (default: command-workload-endpoint-time).
    #[arg(long)]
    pub name: Option<String>,
    /// No progress line.
    #[arg(long)]
    pub quiet: bool,
}

/// `load` and `run`.
#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// Workload and load shape.
    #[command(flatten)]
    pub w: WorkloadArgs,
    /// Contact points, comma separated (`host:port`).
    #[arg(long, value_delimiter = ',', default_value = "127.0.0.1:9042")]
    pub hosts: Vec<String>,
    /// Name of the endpoint in reports (default: first host).
    #[arg(long)]
    pub label: Option<String>,
    /// Local server process ids whose CPU use is reported (ops per server CPU second).
    #[arg(long, value_delimiter = ',')]
    pub server_pid: Vec<u32>,
}

/// `compare`.
#[derive(clap::Args, Debug, Clone)]
pub struct CompareArgs {
    /// Workload and load shape.
    #[command(flatten)]
    pub w: WorkloadArgs,
    /// First endpoint, `name=host:port[,host:port][@pid[+pid]]`; the gain column is its
    /// advantage. With `@pid`, the CPU those local server processes use is reported too.
    #[arg(long)]
    pub a: String,
    /// Second endpoint, `name=host:port[,…]`.
    #[arg(long)]
    pub b: Option<String>,
    /// More endpoints, `name=host:port[,…]` (repeatable).
    #[arg(long)]
    pub endpoint: Vec<String>,
    /// Rounds per endpoint (at least 3).
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Load every endpoint before the rounds.
    #[arg(long)]
    pub load: bool,
}

/// Parses `60s`, `2m`, `500ms`, `1h` or a plain number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = match s.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, "s"),
    };
    let n: f64 = num.parse().map_err(|_| format!("not a duration: {s:?}"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(format!("unknown unit {unit:?} in {s:?} (use ms, s, m, h)")),
    };
    Ok(Duration::from_secs_f64(secs))
}

/// Parses `name=host:port[,host:port]` or just `host:port`.
pub fn parse_endpoint(s: &str) -> anyhow::Result<Endpoint> {
    let (s, pids) = match s.split_once('@') {
        Some((s, pids)) => {
            let pids = pids
                .split('+')
                .map(|p| p.trim().parse::<u32>())
                .collect::<Result<Vec<_>, _>>()
                .with_context(|| format!("endpoint {s:?}: server pids {pids:?}"))?;
            (s, pids)
        }
        None => (s, Vec::new()),
    };
    let (name, hosts) = match s.split_once('=') {
        Some((n, h)) => (n.to_string(), h),
        None => (s.split(',').next().unwrap_or(s).to_string(), s),
    };
    let hosts: Vec<String> = hosts
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(String::from)
        .collect();
    if hosts.is_empty() || name.is_empty() {
        bail!("endpoint {s:?} should look like name=host:port[,host:port]");
    }
    Ok(Endpoint { name, hosts, pids })
}

fn parse_ratio(s: &str) -> anyhow::Result<f64> {
    let (r, w) = s
        .split_once(':')
        .with_context(|| format!("ratio {s:?} should look like 80:20"))?;
    let r: f64 = r.trim().parse().with_context(|| format!("ratio {s:?}"))?;
    let w: f64 = w.trim().parse().with_context(|| format!("ratio {s:?}"))?;
    if r < 0.0 || w < 0.0 || r + w <= 0.0 {
        bail!("ratio {s:?} needs non-negative parts that are not both zero");
    }
    Ok(r / (r + w))
}

/// The workload spec for the options (`load` turns it into the load phase).
pub fn build_spec(w: &WorkloadArgs, load: bool) -> anyhow::Result<WorkloadSpec> {
    let mut spec = match w.preset {
        Some(p) => {
            let kind = match p {
                Preset::StressWrite => "write",
                Preset::StressRead => "read",
                Preset::StressMixed => "mixed",
                Preset::StressUpdate => "update",
                Preset::LwtWrite => "lwt-write",
                Preset::LwtUpdate => "lwt-update",
            };
            WorkloadSpec::stress(kind, w.records, parse_ratio(&w.ratio)?).expect("known preset")
        }
        None => {
            let mut chars = w.workload.chars();
            let letter = match (chars.next(), chars.next()) {
                (Some(c), None) => c,
                _ => bail!(
                    "--workload should be one of a, b, c, d, e, f; got {:?}",
                    w.workload
                ),
            };
            WorkloadSpec::ycsb(letter, w.records)
                .with_context(|| format!("--workload should be one of a..f; got {letter:?}"))?
        }
    };
    if let Some(p) = w.payload {
        spec.field_count = 1;
        spec.field_length = p;
    }
    if let Some(n) = w.field_count {
        spec.field_count = n;
    }
    if let Some(n) = w.field_length {
        spec.field_length = n;
    }
    if spec.field_count == 0 || spec.field_count > 1000 {
        bail!("--field-count must be 1..=1000, got {}", spec.field_count);
    }
    if spec.field_length > 16 << 20 {
        bail!(
            "--field-length must be at most 16 MiB, got {}",
            spec.field_length
        );
    }
    spec.write_all_fields |= w.write_all_fields;
    spec.max_scan_length = w.max_scan_length.max(1);
    if let Some(d) = w.distribution {
        spec.distribution = match d {
            DistributionArg::Zipfian => Distribution::Zipfian,
            DistributionArg::Latest => Distribution::Latest,
            DistributionArg::Uniform => Distribution::Uniform,
            DistributionArg::Sequential => Distribution::Sequential,
        };
    }
    if spec.records == 0 {
        bail!("--records must be at least 1");
    }
    // YCSB sizes the zipfian key space for the inserts it expects: opcount × insert share × 2.
    let insert_share = spec.proportions[OpKind::Insert.index()];
    if insert_share > 0.0 && !load {
        let ops_estimate = match (w.operations, w.target_rate, w.duration) {
            (Some(n), _, _) => n as f64,
            (None, Some(r), Some(d)) => r * d.as_secs_f64(),
            _ => spec.records as f64,
        };
        spec.expected_new_keys = (ops_estimate * insert_share * 2.0) as u64;
    }
    if load {
        spec = WorkloadSpec::load(spec);
    }
    Ok(spec)
}

fn schema_for(w: &WorkloadArgs) -> SchemaConfig {
    let stress = w.preset.is_some();
    SchemaConfig {
        keyspace: w
            .keyspace
            .clone()
            .unwrap_or_else(|| if stress { "stress" } else { "ycsb" }.into()),
        table: w
            .table
            .clone()
            .unwrap_or_else(|| if stress { "standard1" } else { "usertable" }.into()),
        replication_factor: w.replication_factor,
        drop_first: w.drop,
    }
}

fn connect_for(w: &WorkloadArgs) -> ConnectConfig {
    ConnectConfig {
        connections: w.connections.max(1),
        request_timeout: w.request_timeout,
        consistency: w.consistency.clone(),
        user: w.user.clone(),
        password: w.password.clone(),
    }
}

fn shape_for(w: &WorkloadArgs, load: bool, seed: u64) -> anyhow::Result<LoadShape> {
    let insert_start = w.insert_start.unwrap_or(if load { 0 } else { w.records });
    let (duration, operations) = if load {
        (None, Some(w.operations.unwrap_or(w.records)))
    } else {
        if w.duration.is_none() && w.operations.is_none() {
            bail!("`run` needs --duration or --operations");
        }
        (w.duration, w.operations)
    };
    if let Some(r) = w.target_rate {
        if !(r > 0.0 && r.is_finite()) {
            bail!("--target-rate must be a positive number, got {r}");
        }
    }
    Ok(LoadShape {
        concurrency: w.concurrency as usize,
        workers: w.workers.max(1),
        duration,
        operations,
        target_rate: w.target_rate,
        warmup: if load { Duration::ZERO } else { w.warmup },
        insert_start,
        validate: w.validate,
        seed,
        progress: !w.quiet,
    })
}

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn stamp(unix: u64) -> String {
    report::utc(unix)
        .replace(['-', ':'], "")
        .trim_end_matches('Z')
        .to_string()
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Writes `<out>/<name>.txt` and `<out>/<name>.json`.
pub(crate) fn write_text_json(
    out: &Path,
    name: &str,
    text: &str,
    json: &impl serde::Serialize,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let base = out.join(name);
    let with = |ext: &str| PathBuf::from(format!("{}.{ext}", base.display()));
    std::fs::write(with("txt"), text)
        .with_context(|| format!("writing {}", with("txt").display()))?;
    std::fs::write(with("json"), serde_json::to_string_pretty(json)?)
        .with_context(|| format!("writing {}", with("json").display()))?;
    eprintln!("reports: {}.{{txt,json}}", base.display());
    Ok(())
}

fn write_reports(
    out: &Path,
    name: &str,
    text: &str,
    json: &impl serde::Serialize,
    html: &str,
) -> anyhow::Result<()> {
    write_text_json(out, name, text, json)?;
    let html_path = out.join(format!("{name}.html"));
    std::fs::write(&html_path, html).with_context(|| format!("writing {}", html_path.display()))?;
    eprintln!("report: {}", html_path.display());
    Ok(())
}

/// Entry point for `peregrine bench`: builds its own tokio runtime and runs the subcommand.
pub fn main(args: BenchArgs) -> anyhow::Result<()> {
    let threads = match &args.command {
        BenchCommand::Load(r) | BenchCommand::Run(r) => r.w.threads,
        BenchCommand::Compare(c) => c.w.threads,
        // The reads' schedule and the scan run side by side.
        BenchCommand::ScanLane(_) => 2,
        BenchCommand::ServiceLevels(_) => 2,
        BenchCommand::Indexed(a) => a.threads,
        BenchCommand::Vector(a) => a.threads,
    };
    let rt = if threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build()?
    };
    rt.block_on(async_main(args))
}

async fn async_main(args: BenchArgs) -> anyhow::Result<()> {
    match args.command {
        BenchCommand::Load(r) => load_or_run(r, true).await,
        BenchCommand::Run(r) => load_or_run(r, false).await,
        BenchCommand::Compare(c) => compare(c).await,
        BenchCommand::ScanLane(a) => scan_lane::run(a).await,
        BenchCommand::ServiceLevels(a) => service_levels::run(a).await,
        BenchCommand::Indexed(a) => indexed::run(a).await,
        BenchCommand::Vector(a) => vector::run(a).await,
    }
}

/// Runs one phase against an open session and builds its report.
async fn one_phase(
    session: Arc<scylla::client::session::Session>,
    endpoint: &Endpoint,
    w: &WorkloadArgs,
    load: bool,
    seed: u64,
    label: &str,
    machine: &Machine,
) -> anyhow::Result<(RunReport, u64)> {
    let spec = build_spec(w, load)?;
    let schema = schema_for(w);
    let connect = connect_for(w);
    let shape = shape_for(w, load, seed)?;
    if load {
        runner::create_schema(&session, &schema, &spec).await?;
    }
    let result = runner::run(session, &schema, &spec, &shape, label, &endpoint.pids).await?;
    let params = RunParams {
        command: if load { "load" } else { "run" },
        endpoint,
        workload: &spec,
        shape: &shape,
        connect: &connect,
        schema: &schema,
    };
    Ok((
        RunReport::new(&params, &result, machine),
        result.next_insert,
    ))
}

async fn load_or_run(r: RunArgs, load: bool) -> anyhow::Result<()> {
    let endpoint = Endpoint {
        name: r
            .label
            .clone()
            .unwrap_or_else(|| r.hosts.first().cloned().unwrap_or_default()),
        hosts: r.hosts.clone(),
        pids: r.server_pid.clone(),
    };
    let seed = r.w.seed.unwrap_or_else(now_unix);
    let machine = Machine::detect();
    let session = Arc::new(runner::connect(&endpoint, &connect_for(&r.w)).await?);
    let (rep, _) = one_phase(
        session,
        &endpoint,
        &r.w,
        load,
        seed,
        &endpoint.name,
        &machine,
    )
    .await?;
    let text = rep.text();
    print!("{text}");
    let name = r.w.name.clone().unwrap_or_else(|| {
        let phase = if load {
            rep.workload.name.clone()
        } else {
            format!("run-{}", rep.workload.name)
        };
        sanitize(&format!(
            "{phase}-{}-{}",
            endpoint.name,
            stamp(rep.started_unix)
        ))
    });
    write_reports(&r.w.out, &name, &text, &rep, &rep.html())?;
    let errors = rep.overall.errors + rep.overall.validation_failures;
    if errors > 0 {
        eprintln!(
            "warning: {} failed operations, {} validation mismatches",
            rep.overall.errors, rep.overall.validation_failures
        );
    }
    Ok(())
}

async fn compare(c: CompareArgs) -> anyhow::Result<()> {
    let mut endpoints = vec![parse_endpoint(&c.a)?];
    if let Some(b) = &c.b {
        endpoints.push(parse_endpoint(b)?);
    }
    for e in &c.endpoint {
        endpoints.push(parse_endpoint(e)?);
    }
    if endpoints.len() < 2 {
        bail!("compare needs at least two endpoints (--a and --b)");
    }
    if c.rounds < 3 {
        bail!(
            "compare needs at least 3 rounds so machine drift cancels; got {}",
            c.rounds
        );
    }
    let machine = Machine::detect();
    let seed = c.w.seed.unwrap_or_else(now_unix);
    let started = now_unix();
    let connect = connect_for(&c.w);
    let mut sessions = Vec::new();
    for e in &endpoints {
        sessions.push(Arc::new(runner::connect(e, &connect).await?));
    }
    if c.load {
        for (e, s) in endpoints.iter().zip(&sessions) {
            let (rep, _) = one_phase(
                s.clone(),
                e,
                &c.w,
                true,
                seed,
                &format!("{} load", e.name),
                &machine,
            )
            .await?;
            eprint!("{}", rep.text());
        }
    }
    let mut rounds: Vec<Vec<RunReport>> = vec![Vec::new(); endpoints.len()];
    // Each round's inserts continue where the endpoint's previous round stopped, so that an
    // insert (`IF NOT EXISTS` above all) writes a new key in every round, not the same ones.
    let mut next_insert = vec![c.w.insert_start; endpoints.len()];
    for round in 0..c.rounds {
        for (i, (e, s)) in endpoints.iter().zip(&sessions).enumerate() {
            let label = format!("{} round {}/{}", e.name, round + 1, c.rounds);
            let w = WorkloadArgs {
                insert_start: next_insert[i],
                ..c.w.clone()
            };
            // The same seed for every endpoint in a round: identical operation sequences.
            let (rep, next) = one_phase(
                s.clone(),
                e,
                &w,
                false,
                seed.wrapping_add(round as u64),
                &label,
                &machine,
            )
            .await?;
            if !c.w.quiet {
                eprintln!(
                    "[{label}] {} ops/s, p99 {} ms, errors {}",
                    report::thousands(rep.overall.ops_per_sec_sustained),
                    report::fmt_ms(rep.overall.p99_ms),
                    rep.overall.errors
                );
            }
            rounds[i].push(rep);
            next_insert[i] = Some(next);
        }
    }
    let spec = build_spec(&c.w, false)?;
    let shape = shape_for(&c.w, false, seed)?;
    let schema = schema_for(&c.w);
    let report = CompareReport::new(
        &machine,
        started,
        &spec,
        &shape,
        &connect,
        &schema,
        endpoints.iter().cloned().zip(rounds).collect(),
    );
    let text = report.text();
    print!("{text}");
    let name = c.w.name.clone().unwrap_or_else(|| {
        sanitize(&format!(
            "compare-{}-{}-{}",
            spec.name,
            endpoints
                .iter()
                .map(|e| e.name.as_str())
                .collect::<Vec<_>>()
                .join("-vs-"),
            stamp(started)
        ))
    });
    write_reports(&c.w.out, &name, &text, &report, &report.html())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        bench: BenchArgs,
    }

    #[test]
    fn cli_parses_the_issue_examples() {
        let cli = Cli::try_parse_from([
            "x",
            "run",
            "--preset",
            "stress-mixed",
            "--ratio",
            "80:20",
            "--payload",
            "4096",
            "--duration",
            "60s",
            "--hosts",
            "127.0.0.1:9042",
        ])
        .unwrap();
        let BenchCommand::Run(r) = cli.bench.command else {
            panic!("not run")
        };
        let spec = build_spec(&r.w, false).unwrap();
        assert_eq!((spec.field_count, spec.field_length), (1, 4096));
        assert!((spec.proportions[OpKind::Read.index()] - 0.8).abs() < 1e-9);
        assert_eq!(r.w.duration, Some(Duration::from_secs(60)));

        let cli = Cli::try_parse_from([
            "x",
            "compare",
            "--workload",
            "c",
            "--a",
            "peregrine=127.0.0.1:9042",
            "--b",
            "cassandra=127.0.0.1:9142",
            "--duration",
            "10s",
        ])
        .unwrap();
        let BenchCommand::Compare(c) = cli.bench.command else {
            panic!("not compare")
        };
        assert_eq!(parse_endpoint(&c.a).unwrap().name, "peregrine");
        assert_eq!(c.rounds, 3);

        assert!(
            Cli::try_parse_from(["x", "run", "--concurrency", "2000", "--duration", "1s"]).is_err()
        );
        assert!(
            Cli::try_parse_from(["x", "run", "--concurrency", "0", "--duration", "1s"]).is_err()
        );
    }

    #[test]
    fn load_spec_inserts_only_and_run_d_grows_the_key_space() {
        let cli =
            Cli::try_parse_from(["x", "load", "--workload", "d", "--records", "1000"]).unwrap();
        let BenchCommand::Load(r) = cli.bench.command else {
            panic!()
        };
        let spec = build_spec(&r.w, true).unwrap();
        assert_eq!(spec.proportions, [0.0, 0.0, 1.0, 0.0, 0.0]);
        let shape = shape_for(&r.w, true, 1).unwrap();
        assert_eq!((shape.operations, shape.insert_start), (Some(1000), 0));

        let cli = Cli::try_parse_from([
            "x",
            "run",
            "--workload",
            "e",
            "--records",
            "1000",
            "--operations",
            "5000",
        ])
        .unwrap();
        let BenchCommand::Run(r) = cli.bench.command else {
            panic!()
        };
        let spec = build_spec(&r.w, false).unwrap();
        assert_eq!(spec.expected_new_keys, 500);
        assert_eq!(shape_for(&r.w, false, 1).unwrap().insert_start, 1000);
    }

    #[test]
    fn indexed_parses_endpoints_and_phases() {
        let cli = Cli::try_parse_from([
            "x",
            "indexed",
            "--endpoint",
            "peregrine=127.0.0.1:9042@12",
            "--endpoint",
            "cassandra=127.0.0.1:9142",
            "--phases",
            "range,write",
            "--server-note",
            "debug",
        ])
        .unwrap();
        let BenchCommand::Indexed(a) = cli.bench.command else {
            panic!("not indexed")
        };
        assert_eq!(a.endpoints.len(), 2);
        assert_eq!(
            a.phases,
            vec![indexed::PhaseKind::Range, indexed::PhaseKind::Write]
        );
        assert_eq!((a.rows, a.low_cardinality, a.limit), (100_000, 1000, 100));
        assert_eq!(a.report.server_note, "debug");
        // An endpoint is required; an unknown phase is refused.
        assert!(Cli::try_parse_from(["x", "indexed"]).is_err());
        assert!(
            Cli::try_parse_from(["x", "indexed", "--endpoint", "h:1", "--phases", "scan"]).is_err()
        );
    }

    #[test]
    fn durations_and_endpoints_parse() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("7").unwrap(), Duration::from_secs(7));
        assert!(parse_duration("7 parsecs").is_err());
        let e = parse_endpoint("c=h1:1,h2:2").unwrap();
        assert_eq!(e.hosts, vec!["h1:1", "h2:2"]);
        assert_eq!(parse_endpoint("h:9").unwrap().name, "h:9");
        let e = parse_endpoint("p=h:1@12+34").unwrap();
        assert_eq!((e.hosts, e.pids), (vec!["h:1".to_string()], vec![12, 34]));
        assert!(parse_endpoint("p=h:1@x").is_err());
        assert!(parse_endpoint("x=").is_err());
        assert!(parse_ratio("80:20").unwrap() - 0.8 < 1e-9);
        assert!(parse_ratio("0:0").is_err());
    }
}
