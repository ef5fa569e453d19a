//! `peregrine bench service-levels`: can a batch role starve an interactive one?
//!
//! Two roles (their service levels set up beforehand, e.g. `interactive` at 1000 shares and
//! `batch` at 100) each run a closed loop of prepared point reads (`SELECT * FROM t WHERE
//! y_id = ?` over the loaded keys, uniformly), `--concurrency` requests in flight each, as
//! fast as the server answers: both saturate it. Phases alternate **high alone**, **low
//! alone** and **together**; each reports each role's requests per second, p50 and p99. The
//! verdict is the together-phase throughput ratio high : low (issue 17 asks for about the
//! shares' ratio, 10 : 1) and the high role's p99 together over its p99 alone (at most 1.5).
//!
//! Each role has its own session (its own connections, logged in as that role); the bench
//! sets nothing up on the server. Load the table first with
//! `peregrine bench load --preset stress-read --records N`.

use crate::report::utc;
use crate::runner::{self, ConnectConfig, Endpoint};
use crate::stats::new_histogram;
use crate::workload::{key_name, WorkloadSpec};
use anyhow::{bail, Context};
use hdrhistogram::Histogram;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use scylla::client::session::Session;
use scylla::statement::prepared::PreparedStatement;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// `peregrine bench service-levels`.
#[derive(clap::Args, Debug, Clone)]
pub struct ServiceLevelsArgs {
    /// Contact points, comma separated (`host:port`).
    #[arg(long, value_delimiter = ',', default_value = "127.0.0.1:9042")]
    pub hosts: Vec<String>,
    #[arg(long, default_value = "stress")]
    pub keyspace: String,
    #[arg(long, default_value = "standard1")]
    pub table: String,
    /// Records loaded (reads pick among them).
    #[arg(long, default_value_t = 100_000)]
    pub records: u64,
    /// The role of the high-shares level, and its password.
    #[arg(long)]
    pub high_user: String,
    #[arg(long)]
    pub high_password: String,
    /// The role of the low-shares level, and its password.
    #[arg(long)]
    pub low_user: String,
    #[arg(long)]
    pub low_password: String,
    /// Requests in flight per role (closed loop).
    #[arg(long, default_value_t = 32)]
    pub concurrency: usize,
    /// Length of each phase.
    #[arg(long, value_parser = crate::parse_duration, default_value = "10s")]
    pub phase: Duration,
    /// Unrecorded time at the start of each phase.
    #[arg(long, value_parser = crate::parse_duration, default_value = "2s")]
    pub settle: Duration,
    /// Rounds of the three phases.
    #[arg(long, default_value_t = 2)]
    pub rounds: usize,
    /// Connections per host and role.
    #[arg(long, default_value_t = 1)]
    pub connections: usize,
    #[arg(long, value_parser = crate::parse_duration, default_value = "10s")]
    pub request_timeout: Duration,
    /// Report options (`--server-note`: the server and its levels).
    #[command(flatten)]
    pub report: crate::ReportArgs,
}

/// One role's figures in one phase.
#[derive(Debug, Clone, Serialize)]
pub struct RoleFigures {
    pub role: String,
    pub requests: u64,
    pub errors: u64,
    pub per_second: f64,
    pub p50_us: u64,
    pub p99_us: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Phase {
    /// `high`, `low` or `together`.
    pub kind: &'static str,
    pub roles: Vec<RoleFigures>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ServiceLevelsReport {
    pub started: String,
    pub hosts: Vec<String>,
    pub table: String,
    pub concurrency: usize,
    pub phase_seconds: f64,
    pub server_note: String,
    pub phases: Vec<Phase>,
    /// Medians over rounds.
    pub high_alone_p99_us: f64,
    pub high_together_p99_us: f64,
    pub high_p99_ratio: f64,
    pub together_throughput_ratio: f64,
}

impl ServiceLevelsReport {
    pub fn text(&self) -> String {
        let mut s = format!(
            "service-levels  {}  {}.{}  {} in flight per role, phases of {:.0}s\n",
            self.started,
            self.hosts.join(","),
            self.table,
            self.concurrency,
            self.phase_seconds
        );
        if !self.server_note.is_empty() {
            s.push_str(&format!("server: {}\n", self.server_note));
        }
        s.push_str("phase      role              requests   err      req/s   p50 ms   p99 ms\n");
        let ms = |us: u64| us as f64 / 1000.0;
        for p in &self.phases {
            for r in &p.roles {
                s.push_str(&format!(
                    "{:<10} {:<16} {:>9} {:>5} {:>10.0} {:>8.2} {:>8.2}\n",
                    p.kind,
                    r.role,
                    r.requests,
                    r.errors,
                    r.per_second,
                    ms(r.p50_us),
                    ms(r.p99_us)
                ));
            }
        }
        s.push_str(&format!(
            "together: high/low throughput {:.2} : 1; high p99 alone {:.2} ms, together {:.2} ms: \
             ratio {:.2} (medians)\n",
            self.together_throughput_ratio,
            self.high_alone_p99_us / 1000.0,
            self.high_together_p99_us / 1000.0,
            self.high_p99_ratio
        ));
        s
    }
}

/// One role's client: its session and prepared read.
struct Client {
    role: String,
    session: Arc<Session>,
    read: PreparedStatement,
}

async fn client(
    a: &ServiceLevelsArgs,
    endpoint: &Endpoint,
    user: &str,
    password: &str,
) -> anyhow::Result<Client> {
    let connect = ConnectConfig {
        connections: a.connections.max(1),
        request_timeout: a.request_timeout,
        consistency: "one".into(),
        user: Some(user.to_string()),
        password: Some(password.to_string()),
    };
    let session = Arc::new(
        runner::connect(endpoint, &connect)
            .await
            .with_context(|| format!("connecting as {user}"))?,
    );
    let read = session
        .prepare(format!(
            "SELECT * FROM {}.{} WHERE y_id = ?",
            a.keyspace, a.table
        ))
        .await
        .with_context(|| format!("preparing the read as {user}"))?;
    Ok(Client {
        role: user.to_string(),
        session,
        read,
    })
}

pub async fn run(a: ServiceLevelsArgs) -> anyhow::Result<()> {
    if a.records == 0 || a.rounds == 0 || a.concurrency == 0 {
        bail!("--records, --rounds and --concurrency must be at least 1");
    }
    let endpoint = Endpoint {
        name: a.hosts.first().cloned().unwrap_or_default(),
        hosts: a.hosts.clone(),
        pids: Vec::new(),
    };
    let high = client(&a, &endpoint, &a.high_user, &a.high_password).await?;
    let low = client(&a, &endpoint, &a.low_user, &a.low_password).await?;
    let spec = WorkloadSpec::stress("read", a.records, 1.0).expect("the read preset exists");
    let seed = a.report.seed.unwrap_or_else(crate::now_unix);
    let started_unix = crate::now_unix();
    let mut phases = Vec::new();
    for round in 0..a.rounds {
        for kind in ["high", "low", "together"] {
            let clients: Vec<&Client> = match kind {
                "high" => vec![&high],
                "low" => vec![&low],
                _ => vec![&high, &low],
            };
            let p = phase(kind, &clients, &spec, &a, seed + round as u64).await;
            for r in &p.roles {
                eprintln!(
                    "round {}/{} {kind}: {} {:.0} req/s, p99 {:.2} ms",
                    round + 1,
                    a.rounds,
                    r.role,
                    r.per_second,
                    r.p99_us as f64 / 1000.0
                );
            }
            phases.push(p);
        }
    }
    let figures = |kind: &str, role: &str| -> Vec<RoleFigures> {
        phases
            .iter()
            .filter(|p| p.kind == kind)
            .flat_map(|p| p.roles.iter().filter(|r| r.role == role).cloned())
            .collect()
    };
    let median = |mut v: Vec<f64>| crate::stats::median(&mut v);
    let p99 = |v: Vec<RoleFigures>| median(v.iter().map(|r| r.p99_us as f64).collect());
    let rate = |v: Vec<RoleFigures>| median(v.iter().map(|r| r.per_second).collect());
    let high_alone_p99_us = p99(figures("high", &a.high_user));
    let high_together_p99_us = p99(figures("together", &a.high_user));
    let (th, tl) = (
        rate(figures("together", &a.high_user)),
        rate(figures("together", &a.low_user)),
    );
    let report = ServiceLevelsReport {
        started: utc(started_unix),
        hosts: a.hosts.clone(),
        table: format!("{}.{}", a.keyspace, a.table),
        concurrency: a.concurrency,
        phase_seconds: a.phase.as_secs_f64(),
        server_note: a.report.server_note.clone(),
        phases,
        high_alone_p99_us,
        high_together_p99_us,
        high_p99_ratio: if high_alone_p99_us > 0.0 {
            high_together_p99_us / high_alone_p99_us
        } else {
            0.0
        },
        together_throughput_ratio: if tl > 0.0 { th / tl } else { 0.0 },
    };
    let text = report.text();
    print!("{text}");
    let name = a
        .report
        .name
        .clone()
        .unwrap_or_else(|| format!("service-levels-{}", crate::stamp(started_unix)));
    crate::write_text_json(&a.report.out, &name, &text, &report)
}

/// One phase: every client runs `concurrency` closed-loop readers for `settle + phase`;
/// requests finishing after `settle` are recorded.
async fn phase(
    kind: &'static str,
    clients: &[&Client],
    spec: &WorkloadSpec,
    a: &ServiceLevelsArgs,
    seed: u64,
) -> Phase {
    let start = Instant::now();
    let record_from = start + a.settle;
    let end = record_from + a.phase;
    let stop = Arc::new(AtomicBool::new(false));
    let mut per_client = Vec::new();
    let mut tasks = Vec::new();
    for (ci, c) in clients.iter().enumerate() {
        let hist = Arc::new(Mutex::new(new_histogram()));
        let errors = Arc::new(AtomicU64::new(0));
        for w in 0..a.concurrency {
            let (session, read, hist, errors, stop) = (
                c.session.clone(),
                c.read.clone(),
                hist.clone(),
                errors.clone(),
                stop.clone(),
            );
            let spec = spec.clone();
            let mut rng = SmallRng::seed_from_u64(seed ^ ((ci as u64) << 32) ^ w as u64);
            tasks.push(tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let key = key_name(&spec, rng.random_range(0..spec.records));
                    let t = Instant::now();
                    let r = session.execute_unpaged(&read, (key,)).await;
                    let done = Instant::now();
                    if done < record_from || done > end {
                        continue;
                    }
                    match r {
                        Ok(_) => hist
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .saturating_record((done - t).as_micros().max(1) as u64),
                        Err(_) => {
                            errors.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }));
        }
        per_client.push((c.role.clone(), hist, errors));
    }
    tokio::time::sleep_until(tokio::time::Instant::from_std(end)).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        let _ = t.await;
    }
    let secs = a.phase.as_secs_f64();
    let roles = per_client
        .into_iter()
        .map(|(role, hist, errors)| {
            let h: Histogram<u64> = hist.lock().unwrap_or_else(|p| p.into_inner()).clone();
            RoleFigures {
                role,
                requests: h.len(),
                errors: errors.load(Ordering::Relaxed),
                per_second: h.len() as f64 / secs,
                p50_us: h.value_at_quantile(0.5),
                p99_us: h.value_at_quantile(0.99),
            }
        })
        .collect();
    Phase { kind, roles }
}
