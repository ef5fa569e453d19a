//! `peregrine bench scan-lane`: do point reads suffer while a full-table scan runs?
//!
//! Point reads (`SELECT * FROM t WHERE y_id = ?` over the loaded keys, uniformly) run at a
//! fixed rate, with latency measured from each read's intended start (no coordinated
//! omission), through phases that alternate **baseline** (reads alone) and **scan** (the same
//! reads while one full-table scan, `SELECT * FROM t` paged, runs over and over). Each phase
//! reports the reads' p50/p99/p99.9 and the scan's rows per second; the verdict is the median
//! scan-phase p99 over the median baseline p99 (issue 17 asks for at most 1.2).
//!
//! The scan's rows-per-second limit is the server's business (Peregrine's
//! `scan_rows_per_second`); the bench only reports the rate it saw. Load the table first with
//! `peregrine bench load --preset stress-read --records N`.

use crate::report::utc;
use crate::runner::{self, ConnectConfig, Endpoint};
use crate::stats::new_histogram;
use crate::workload::{key_name, WorkloadSpec};
use anyhow::{bail, Context};
use futures::StreamExt;
use hdrhistogram::Histogram;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use scylla::client::session::Session;
use scylla::statement::prepared::PreparedStatement;
use scylla::value::Row;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// `peregrine bench scan-lane`.
#[derive(clap::Args, Debug, Clone)]
pub struct ScanLaneArgs {
    /// Contact points, comma separated (`host:port`).
    #[arg(long, value_delimiter = ',', default_value = "127.0.0.1:9042")]
    pub hosts: Vec<String>,
    /// Keyspace of the loaded table.
    #[arg(long, default_value = "stress")]
    pub keyspace: String,
    /// The loaded table (`bench load --preset stress-read`).
    #[arg(long, default_value = "standard1")]
    pub table: String,
    /// Records loaded (point reads pick among them).
    #[arg(long, default_value_t = 100_000)]
    pub records: u64,
    /// Point reads per second.
    #[arg(long, default_value_t = 1000.0)]
    pub read_rate: f64,
    /// Most point reads in flight.
    #[arg(long, default_value_t = 64)]
    pub concurrency: usize,
    /// Length of each phase.
    #[arg(long, value_parser = crate::parse_duration, default_value = "20s")]
    pub phase: Duration,
    /// Unrecorded time at the start of each phase (the scan starts at its beginning).
    #[arg(long, value_parser = crate::parse_duration, default_value = "2s")]
    pub settle: Duration,
    /// Baseline/scan pairs.
    #[arg(long, default_value_t = 2)]
    pub rounds: usize,
    /// Rows per page of the scan.
    #[arg(long, default_value_t = 5000)]
    pub scan_page_size: i32,
    /// Connections per host.
    #[arg(long, default_value_t = 2)]
    pub connections: usize,
    /// Client-side timeout per request (a throttled page takes page size / rate seconds).
    #[arg(long, value_parser = crate::parse_duration, default_value = "30s")]
    pub request_timeout: Duration,
    /// A note on the server's settings, copied into the report (e.g.
    /// `scan_rows_per_second=100000`).
    #[arg(long, default_value = "")]
    pub server_note: String,
    /// Username for PasswordAuthenticator.
    #[arg(long)]
    pub user: Option<String>,
    /// Password for PasswordAuthenticator.
    #[arg(long)]
    pub password: Option<String>,
    /// Directory for the .txt and .json reports.
    #[arg(long, default_value = "bench-out")]
    pub out: PathBuf,
    /// Base name of the report files (default: scan-lane-<time>).
    #[arg(long)]
    pub name: Option<String>,
    /// RNG seed (default: from the clock).
    #[arg(long)]
    pub seed: Option<u64>,
}

/// One phase's figures.
#[derive(Debug, Clone, Serialize)]
pub struct Phase {
    pub kind: &'static str,
    pub reads: u64,
    pub read_errors: u64,
    pub reads_per_second: f64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    pub max_us: u64,
    /// Rows the scan returned during the phase, and per second (0 for a baseline).
    pub scan_rows: u64,
    pub scan_rows_per_second: f64,
    pub scan_errors: u64,
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
pub struct ScanLaneReport {
    pub started: String,
    pub hosts: Vec<String>,
    pub table: String,
    pub records: u64,
    pub read_rate: f64,
    pub phase_seconds: f64,
    pub scan_page_size: i32,
    pub server_note: String,
    pub phases: Vec<Phase>,
    pub baseline_p99_us: f64,
    pub scan_p99_us: f64,
    /// Median scan-phase p99 over median baseline p99.
    pub p99_ratio: f64,
}

impl ScanLaneReport {
    pub fn text(&self) -> String {
        let mut s = format!(
            "scan-lane  {}  {}.{} ({} records)  point reads at {}/s, phases of {:.0}s, scan pages of {}\n",
            self.started,
            self.hosts.join(","),
            self.table,
            self.records,
            self.read_rate,
            self.phase_seconds,
            self.scan_page_size
        );
        if !self.server_note.is_empty() {
            s.push_str(&format!("server: {}\n", self.server_note));
        }
        s.push_str(
            "phase      reads   err  reads/s   p50 ms   p99 ms  p99.9 ms   max ms   scan rows  scan rows/s  scan err\n",
        );
        let ms = |us: u64| us as f64 / 1000.0;
        for p in &self.phases {
            s.push_str(&format!(
                "{:<9} {:>6} {:>5} {:>8.0} {:>8.2} {:>8.2} {:>9.2} {:>8.2} {:>11} {:>12.0} {:>9}\n",
                p.kind,
                p.reads,
                p.read_errors,
                p.reads_per_second,
                ms(p.p50_us),
                ms(p.p99_us),
                ms(p.p999_us),
                ms(p.max_us),
                p.scan_rows,
                p.scan_rows_per_second,
                p.scan_errors
            ));
        }
        s.push_str(&format!(
            "point-read p99: baseline {:.2} ms, during the scan {:.2} ms (medians): ratio {:.2}\n",
            self.baseline_p99_us / 1000.0,
            self.scan_p99_us / 1000.0,
            self.p99_ratio
        ));
        s
    }
}

/// Runs the case and writes its reports.
pub async fn run(a: ScanLaneArgs) -> anyhow::Result<()> {
    if !(a.read_rate > 0.0 && a.read_rate.is_finite()) {
        bail!("--read-rate must be a positive number, got {}", a.read_rate);
    }
    if a.records == 0 || a.rounds == 0 || a.concurrency == 0 || a.scan_page_size <= 0 {
        bail!("--records, --rounds, --concurrency and --scan-page-size must be at least 1");
    }
    let endpoint = Endpoint {
        name: a.hosts.first().cloned().unwrap_or_default(),
        hosts: a.hosts.clone(),
        pids: Vec::new(),
    };
    let connect = ConnectConfig {
        connections: a.connections.max(1),
        request_timeout: a.request_timeout,
        consistency: "one".into(),
        user: a.user.clone(),
        password: a.password.clone(),
    };
    let session = Arc::new(runner::connect(&endpoint, &connect).await?);
    let (ks, t) = (&a.keyspace, &a.table);
    let read = session
        .prepare(format!("SELECT * FROM {ks}.{t} WHERE y_id = ?"))
        .await
        .with_context(|| format!("preparing the point read of {ks}.{t}"))?;
    let mut scan = session
        .prepare(format!("SELECT * FROM {ks}.{t}"))
        .await
        .with_context(|| format!("preparing the scan of {ks}.{t}"))?;
    scan.set_page_size(a.scan_page_size);
    let spec = WorkloadSpec::stress("read", a.records, 1.0).expect("the read preset exists");
    let seed = a.seed.unwrap_or_else(crate::now_unix);
    let started_unix = crate::now_unix();
    let mut phases = Vec::new();
    for round in 0..a.rounds {
        for with_scan in [false, true] {
            let p = phase(
                &session,
                &read,
                &scan,
                &spec,
                &a,
                with_scan,
                seed + round as u64,
            )
            .await;
            eprintln!(
                "round {}/{} {}: p99 {:.2} ms, {} reads, scan {:.0} rows/s",
                round + 1,
                a.rounds,
                p.kind,
                p.p99_us as f64 / 1000.0,
                p.reads,
                p.scan_rows_per_second
            );
            phases.push(p);
        }
    }
    let mut base: Vec<f64> = phases
        .iter()
        .filter(|p| p.kind == "baseline")
        .map(|p| p.p99_us as f64)
        .collect();
    let mut with: Vec<f64> = phases
        .iter()
        .filter(|p| p.kind == "scan")
        .map(|p| p.p99_us as f64)
        .collect();
    let baseline_p99_us = crate::stats::median(&mut base);
    let scan_p99_us = crate::stats::median(&mut with);
    let report = ScanLaneReport {
        started: utc(started_unix),
        hosts: a.hosts.clone(),
        table: format!("{ks}.{t}"),
        records: a.records,
        read_rate: a.read_rate,
        phase_seconds: a.phase.as_secs_f64(),
        scan_page_size: a.scan_page_size,
        server_note: a.server_note.clone(),
        phases,
        baseline_p99_us,
        scan_p99_us,
        p99_ratio: if baseline_p99_us > 0.0 {
            scan_p99_us / baseline_p99_us
        } else {
            0.0
        },
    };
    let text = report.text();
    print!("{text}");
    let name = a
        .name
        .clone()
        .unwrap_or_else(|| format!("scan-lane-{}", crate::stamp(started_unix)));
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let base = a.out.join(&name);
    std::fs::write(base.with_extension("txt"), &text)?;
    std::fs::write(
        base.with_extension("json"),
        serde_json::to_string_pretty(&report)?,
    )?;
    eprintln!("reports: {}.{{txt,json}}", base.display());
    Ok(())
}

/// One phase: point reads at the rate for `settle + phase`, recorded after `settle`; with
/// `with_scan`, full scans back to back for the whole phase.
async fn phase(
    session: &Arc<Session>,
    read: &PreparedStatement,
    scan: &PreparedStatement,
    spec: &WorkloadSpec,
    a: &ScanLaneArgs,
    with_scan: bool,
    seed: u64,
) -> Phase {
    let stop = Arc::new(AtomicBool::new(false));
    let recording = Arc::new(AtomicBool::new(false));
    let scan_rows = Arc::new(AtomicU64::new(0));
    let scan_errors = Arc::new(AtomicU64::new(0));
    let scanner = with_scan.then(|| {
        let (session, scan, stop) = (session.clone(), scan.clone(), stop.clone());
        let (rows, errors, recording) = (scan_rows.clone(), scan_errors.clone(), recording.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let pager = match session.execute_iter(scan.clone(), ()).await {
                    Ok(p) => p,
                    Err(_) => {
                        errors.fetch_add(1, Ordering::Relaxed);
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let Ok(mut stream) = pager.rows_stream::<Row>() else {
                    errors.fetch_add(1, Ordering::Relaxed);
                    continue;
                };
                while let Some(row) = stream.next().await {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    match row {
                        Ok(_) if recording.load(Ordering::Relaxed) => {
                            rows.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(_) => {}
                        Err(_) => {
                            errors.fetch_add(1, Ordering::Relaxed);
                            break;
                        }
                    }
                }
            }
        })
    });
    let hist = Arc::new(Mutex::new(new_histogram()));
    let errors = Arc::new(AtomicU64::new(0));
    let in_flight = Arc::new(tokio::sync::Semaphore::new(a.concurrency));
    let mut rng = SmallRng::seed_from_u64(seed);
    let interval = Duration::from_secs_f64(1.0 / a.read_rate);
    let start = tokio::time::Instant::now();
    let record_from = start + a.settle;
    let end = record_from + a.phase;
    let mut tasks = Vec::new();
    let mut i: u32 = 0;
    let mut recorded_at: Option<Instant> = None;
    loop {
        let intended = start + interval * i;
        i += 1;
        if intended >= end {
            break;
        }
        tokio::time::sleep_until(intended).await;
        let record = intended >= record_from;
        if record && recorded_at.is_none() {
            recorded_at = Some(Instant::now());
            recording.store(true, Ordering::Relaxed);
        }
        let key = key_name(spec, rng.random_range(0..spec.records));
        let (session, read, hist, errors) =
            (session.clone(), read.clone(), hist.clone(), errors.clone());
        // Waiting for a slot counts in the latency: it is measured from `intended`.
        let Ok(permit) = in_flight.clone().acquire_owned().await else {
            break;
        };
        tasks.push(tokio::spawn(async move {
            let r = session.execute_unpaged(&read, (key,)).await;
            let us = intended.elapsed().as_micros() as u64;
            drop(permit);
            if record {
                match r {
                    Ok(_) => hist
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .saturating_record(us.max(1)),
                    Err(_) => {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }));
        if tasks.len() >= 4096 {
            tasks.retain(|t| !t.is_finished());
        }
    }
    for t in tasks {
        let _ = t.await;
    }
    let secs = recorded_at.map_or(0.0, |t| t.elapsed().as_secs_f64());
    stop.store(true, Ordering::Relaxed);
    recording.store(false, Ordering::Relaxed);
    if let Some(s) = scanner {
        // A page in flight may be throttled: do not wait for it.
        s.abort();
    }
    let h: Histogram<u64> = hist.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let rows = scan_rows.load(Ordering::Relaxed);
    Phase {
        kind: if with_scan { "scan" } else { "baseline" },
        reads: h.len(),
        read_errors: errors.load(Ordering::Relaxed),
        reads_per_second: if secs > 0.0 {
            h.len() as f64 / secs
        } else {
            0.0
        },
        p50_us: h.value_at_quantile(0.5),
        p99_us: h.value_at_quantile(0.99),
        p999_us: h.value_at_quantile(0.999),
        max_us: h.max(),
        scan_rows: rows,
        scan_rows_per_second: if secs > 0.0 { rows as f64 / secs } else { 0.0 },
        scan_errors: scan_errors.load(Ordering::Relaxed),
    }
}
