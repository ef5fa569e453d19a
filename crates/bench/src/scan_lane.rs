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
    #[arg(long, default_value_t = 1000)]
    pub scan_page_size: i32,
    /// Connections per host.
    #[arg(long, default_value_t = 2)]
    pub connections: usize,
    /// Client-side timeout per request (a throttled page takes page size / rate seconds).
    #[arg(long, value_parser = crate::parse_duration, default_value = "30s")]
    pub request_timeout: Duration,
    /// Username for PasswordAuthenticator.
    #[arg(long)]
    pub user: Option<String>,
    /// Password for PasswordAuthenticator.
    #[arg(long)]
    pub password: Option<String>,
    /// Report options (`--server-note`, e.g. `scan_rows_per_second=100000`).
    #[command(flatten)]
    pub report: crate::ReportArgs,
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
    // The scan has a client of its own (its own thread, runtime and connections), as an
    // analytics job would: decoding its pages must not delay the point reads' client.
    let scanner = Scanner::start(
        endpoint.clone(),
        connect.clone(),
        format!("SELECT * FROM {ks}.{t}"),
        a.scan_page_size,
    )?;
    let spec = WorkloadSpec::stress("read", a.records, 1.0).expect("the read preset exists");
    let seed = a.report.seed.unwrap_or_else(crate::now_unix);
    let started_unix = crate::now_unix();
    let mut phases = Vec::new();
    for round in 0..a.rounds {
        for with_scan in [false, true] {
            let p = phase(
                &session,
                &read,
                &scanner,
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
    scanner.quit.store(true, Ordering::Relaxed);
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
        server_note: a.report.server_note.clone(),
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
        .report
        .name
        .clone()
        .unwrap_or_else(|| format!("scan-lane-{}", crate::stamp(started_unix)));
    crate::write_text_json(&a.report.out, &name, &text, &report)
}

/// One phase: point reads at the rate for `settle + phase`, recorded after `settle`; with
/// `with_scan`, the scanner scans for the whole phase.
async fn phase(
    session: &Arc<Session>,
    read: &PreparedStatement,
    scanner: &Scanner,
    spec: &WorkloadSpec,
    a: &ScanLaneArgs,
    with_scan: bool,
    seed: u64,
) -> Phase {
    let scanner = with_scan.then_some(scanner);
    let rows_before = scanner.map_or(0, |s| s.rows.load(Ordering::Relaxed));
    let errors_before = scanner.map_or(0, |s| s.errors.load(Ordering::Relaxed));
    if let Some(s) = scanner {
        s.active.store(true, Ordering::Relaxed);
    }
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
    let mut rows_at_record = rows_before;
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
            rows_at_record = scanner.map_or(0, |s| s.rows.load(Ordering::Relaxed));
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
    let (rows, scan_errors) = match scanner {
        Some(s) => {
            s.active.store(false, Ordering::Relaxed);
            (
                s.rows.load(Ordering::Relaxed) - rows_at_record,
                s.errors.load(Ordering::Relaxed) - errors_before,
            )
        }
        None => (0, 0),
    };
    let h: Histogram<u64> = hist.lock().unwrap_or_else(|p| p.into_inner()).clone();
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
        scan_errors,
    }
}

/// A full-table scan client on its own thread: while `active`, it scans the table page by
/// page, over and over; it stops between rows when `active` goes off.
struct Scanner {
    active: Arc<AtomicBool>,
    quit: Arc<AtomicBool>,
    rows: Arc<AtomicU64>,
    errors: Arc<AtomicU64>,
}

impl Scanner {
    fn start(
        endpoint: Endpoint,
        connect: ConnectConfig,
        query: String,
        page_size: i32,
    ) -> anyhow::Result<Scanner> {
        let s = Scanner {
            active: Arc::new(AtomicBool::new(false)),
            quit: Arc::new(AtomicBool::new(false)),
            rows: Arc::new(AtomicU64::new(0)),
            errors: Arc::new(AtomicU64::new(0)),
        };
        let (active, quit, rows, errors) = (
            s.active.clone(),
            s.quit.clone(),
            s.rows.clone(),
            s.errors.clone(),
        );
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<anyhow::Result<()>>();
        std::thread::Builder::new()
            .name("scanner".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e.into()));
                        return;
                    }
                };
                rt.block_on(async move {
                    let prepared = async {
                        let session = runner::connect(&endpoint, &connect).await?;
                        let mut scan =
                            session.prepare(query).await.context("preparing the scan")?;
                        scan.set_page_size(page_size);
                        anyhow::Ok((session, scan))
                    }
                    .await;
                    let (session, scan) = match prepared {
                        Ok(x) => {
                            let _ = ready_tx.send(Ok(()));
                            x
                        }
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                    };
                    while !quit.load(Ordering::Relaxed) {
                        if !active.load(Ordering::Relaxed) {
                            tokio::time::sleep(Duration::from_millis(20)).await;
                            continue;
                        }
                        scan_once(&session, &scan, &active, &rows, &errors).await;
                    }
                });
            })?;
        ready_rx
            .recv()
            .context("the scanner thread stopped before it connected")??;
        Ok(s)
    }
}

async fn scan_once(
    session: &Session,
    scan: &PreparedStatement,
    active: &AtomicBool,
    rows: &AtomicU64,
    errors: &AtomicU64,
) {
    let pager = match session.execute_iter(scan.clone(), ()).await {
        Ok(p) => p,
        Err(_) => {
            errors.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(100)).await;
            return;
        }
    };
    let Ok(mut stream) = pager.rows_stream::<Row>() else {
        errors.fetch_add(1, Ordering::Relaxed);
        return;
    };
    while let Some(row) = stream.next().await {
        if !active.load(Ordering::Relaxed) {
            return;
        }
        match row {
            Ok(_) => {
                rows.fetch_add(1, Ordering::Relaxed);
            }
            Err(_) => {
                errors.fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
    }
}
