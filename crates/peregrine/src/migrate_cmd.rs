//! `peregrine migrate`: the command line of the `migrate` crate. Parses the flags, starts a
//! Peregrine server in this process on a standalone data directory given as `--from` or
//! `--to` (on a free loopback port, so the copy reads and writes it through CQL like any other
//! endpoint), draws the progress line on stderr and prints the verification's mismatches.
//!
//! Exit status: 0 when the copy (and the verification) succeeded; 1 on an error; 2 when the
//! verification found ranges that differ.

use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::{bail, Context};
use clap::Args;
use local::LocalBackend;
use migrate::{Event, Options, Report};
use tokio_util::sync::CancellationToken;

#[derive(Args, Clone)]
pub struct MigrateArgs {
    /// What to copy from: `host:port[,host:port...]` (a running Cassandra or Peregrine), or the
    /// data directory of a stopped standalone Peregrine.
    #[arg(long, value_name = "ADDRS|DIR")]
    from: String,
    /// Where to copy to: `host:port[,host:port...]`, or a standalone data directory (created if
    /// missing).
    #[arg(long, value_name = "ADDRS|DIR")]
    to: String,
    /// Login on the source (PasswordAuthenticator); with --from-password.
    #[arg(long, value_name = "USER", requires = "from_password")]
    from_username: Option<String>,
    #[arg(long, value_name = "PASSWORD", requires = "from_username")]
    from_password: Option<String>,
    /// Login on the target (PasswordAuthenticator); with --to-password.
    #[arg(long, value_name = "USER", requires = "to_password")]
    to_username: Option<String>,
    #[arg(long, value_name = "PASSWORD", requires = "to_username")]
    to_password: Option<String>,
    /// Keyspaces to copy (default: every user keyspace of the source).
    #[arg(long, value_name = "KS", value_delimiter = ',')]
    keyspaces: Vec<String>,
    /// Tables to copy, `ks.table[,ks.table...]` (default: every table of the keyspaces).
    #[arg(long, value_name = "KS.TABLE", value_delimiter = ',')]
    tables: Vec<String>,
    /// Token ranges copied at once.
    #[arg(long, default_value_t = 4)]
    parallel: usize,
    /// Token ranges the ring is split into (default 4 × --parallel). A resumed run must use the
    /// same number.
    #[arg(long)]
    ranges: Option<u32>,
    /// The checkpoint file: finished ranges are recorded there, and skipped when the same
    /// command runs again.
    #[arg(long, value_name = "FILE", default_value = "peregrine-migrate.state")]
    state: PathBuf,
    /// Rows per page when reading.
    #[arg(long, default_value_t = 1000)]
    page_size: i32,
    /// Skip the verification pass after the copy.
    #[arg(long, conflicts_with = "verify_only")]
    no_verify: bool,
    /// Only compare source and target (row count and checksum per range); copy nothing.
    #[arg(long)]
    verify_only: bool,
}

/// An endpoint as given: contact points, or a data directory to serve here.
enum End {
    Hosts(Vec<String>),
    DataDir(PathBuf),
}

fn parse_end(s: &str) -> anyhow::Result<End> {
    if s.contains('/') || Path::new(s).is_dir() {
        return Ok(End::DataDir(PathBuf::from(s)));
    }
    let hosts: Vec<String> = s.split(',').map(|h| h.trim().to_string()).collect();
    for h in &hosts {
        if !h.contains(':') {
            bail!("{h:?} is neither host:port nor a directory");
        }
    }
    Ok(End::Hosts(hosts))
}

pub fn run(args: MigrateArgs) -> ExitCode {
    match run_inner(args) {
        Ok(report) if report.mismatches.is_empty() => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(2),
        Err(e) => {
            eprintln!("peregrine migrate: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run_inner(args: MigrateArgs) -> anyhow::Result<Report> {
    let from = parse_end(&args.from)?;
    let to = parse_end(&args.to)?;
    if let End::DataDir(d) = &from {
        if !d.is_dir() {
            bail!("--from {}: no such directory", d.display());
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("peregrine-migrate")
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let shutdown = CancellationToken::new();
        let mut servers = Vec::new();
        let mut hosts = Vec::new();
        for (end, side) in [(from, "--from"), (to, "--to")] {
            match end {
                End::Hosts(h) => hosts.push(h),
                End::DataDir(dir) => {
                    let (addr, task) = serve_dir(&dir, shutdown.clone())
                        .await
                        .with_context(|| format!("{side} {}", dir.display()))?;
                    servers.push(task);
                    hosts.push(vec![addr.to_string()]);
                }
            }
        }
        let parallel = args.parallel.max(1);
        let options = Options {
            to: hosts.pop().expect("two ends"),
            from: hosts.pop().expect("two ends"),
            from_login: args.from_username.zip(args.from_password),
            to_login: args.to_username.zip(args.to_password),
            keyspaces: args.keyspaces,
            tables: args.tables,
            parallel,
            ranges: args.ranges.unwrap_or(4 * parallel as u32),
            state: args.state,
            page_size: args.page_size.max(1),
            copy: !args.verify_only,
            verify: !args.no_verify,
        };
        let progress = Arc::new(Progress::new());
        let p = progress.clone();
        let result = migrate::run(&options, Arc::new(move |e| p.event(e))).await;
        progress.finish();
        shutdown.cancel();
        for s in servers {
            let _ = s.await;
        }
        let report = result?;
        print_report(&report, &options);
        Ok(report)
    })
}

/// Serves the standalone database in `dir` on a free loopback port until `shutdown`.
async fn serve_dir(
    dir: &Path,
    shutdown: CancellationToken,
) -> anyhow::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let config = server::Config {
        data_dir: dir.to_path_buf(),
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        admin_enabled: false,
        ..server::Config::default()
    };
    let backend = match LocalBackend::open(&config) {
        Ok(b) => Arc::new(b),
        // The store's lock file: another process has the directory open.
        Err(e) if format!("{e:#}").contains("Locked") => bail!(
            "{} is in use by another process (a running peregrine server?): stop it first, or give the server's address (host:port) instead",
            dir.display()
        ),
        Err(e) => {
            return Err(e).with_context(|| format!("cannot open the database in {}", dir.display()))
        }
    };
    let listener = tokio::net::TcpListener::bind(config.listen).await?;
    let addr = listener.local_addr()?;
    let task = tokio::spawn(server::run(config, listener, backend, shutdown));
    Ok((addr, task))
}

/// The progress line on stderr: redrawn in place on a terminal, a line per tenth otherwise.
struct Progress {
    total: AtomicUsize,
    done: AtomicUsize,
    rows: AtomicUsize,
    phase: Mutex<&'static str>,
    last_tenth: AtomicUsize,
    tty: bool,
    start: std::time::Instant,
}

impl Progress {
    fn new() -> Progress {
        Progress {
            total: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            rows: AtomicUsize::new(0),
            phase: Mutex::new("copy"),
            last_tenth: AtomicUsize::new(usize::MAX),
            tty: std::io::stderr().is_terminal(),
            start: std::time::Instant::now(),
        }
    }

    fn event(&self, e: Event) {
        match e {
            Event::Schema {
                keyspace,
                statements,
                dropped_options,
            } => {
                eprintln!(
                    "schema: keyspace {keyspace}: {statements} statements sent to the target"
                );
                for (object, option) in dropped_options {
                    eprintln!("schema: the target does not know the option {option} of {object}: left out");
                }
            }
            Event::CopyStarted { total, done } => {
                if done > 0 {
                    eprintln!("resuming: {done} of {total} ranges were copied by an earlier run");
                }
                self.start_phase("copy", total, done);
            }
            Event::RangeCopied { rows, .. } => {
                self.rows.fetch_add(rows as usize, Ordering::Relaxed);
                self.step();
            }
            Event::VerifyStarted { total } => {
                self.finish();
                self.start_phase("verify", total, 0);
            }
            Event::RangeVerified { .. } => self.step(),
        }
    }

    fn start_phase(&self, phase: &'static str, total: usize, done: usize) {
        *self.phase.lock().unwrap_or_else(|e| e.into_inner()) = phase;
        self.total.store(total, Ordering::Relaxed);
        self.done.store(done, Ordering::Relaxed);
        self.rows.store(0, Ordering::Relaxed);
        self.last_tenth.store(usize::MAX, Ordering::Relaxed);
        self.draw();
    }

    fn step(&self) {
        self.done.fetch_add(1, Ordering::Relaxed);
        self.draw();
    }

    fn draw(&self) {
        let (done, total) = (
            self.done.load(Ordering::Relaxed),
            self.total.load(Ordering::Relaxed).max(1),
        );
        let phase = *self.phase.lock().unwrap_or_else(|e| e.into_inner());
        let width = 30;
        let filled = done * width / total;
        let rows = self.rows.load(Ordering::Relaxed);
        let secs = self.start.elapsed().as_secs_f64();
        let line = format!(
            "{phase:6} [{}{}] {done}/{total} ranges{}",
            "#".repeat(filled),
            "-".repeat(width - filled),
            if phase == "copy" {
                format!(", {rows} rows, {:.0} s", secs)
            } else {
                String::new()
            }
        );
        let mut err = std::io::stderr().lock();
        if self.tty {
            let _ = write!(err, "\r{line}");
        } else {
            let tenth = done * 10 / total;
            if self.last_tenth.swap(tenth, Ordering::Relaxed) != tenth {
                let _ = writeln!(err, "{line}");
            }
        }
        let _ = err.flush();
    }

    fn finish(&self) {
        if self.tty && self.total.load(Ordering::Relaxed) > 0 {
            eprintln!();
        }
        self.total.store(0, Ordering::Relaxed);
    }
}

fn print_report(report: &Report, options: &Options) {
    if options.copy {
        println!(
            "copied {} rows of {} tables in {} ranges ({} statements; {} ranges done by an earlier run)",
            report.rows_copied,
            report.tables,
            report.ranges_copied,
            report.statements,
            report.ranges_skipped
        );
    }
    if !options.verify {
        return;
    }
    if report.mismatches.is_empty() {
        println!(
            "verified: {} rows in {} ranges, row counts and checksums equal",
            report.rows_verified, report.ranges_verified
        );
        return;
    }
    eprintln!(
        "verification FAILED: {} of {} ranges differ",
        report.mismatches.len(),
        report.ranges_verified
    );
    eprintln!(
        "{:<32} {:>44} {:>10} {:>10} {:>18} {:>18}",
        "table", "token range", "rows src", "rows dst", "checksum src", "checksum dst"
    );
    for m in &report.mismatches {
        eprintln!(
            "{:<32} {:>44} {:>10} {:>10} {:>18x} {:>18x}",
            m.table,
            m.range.to_string(),
            m.source.rows,
            m.target.rows,
            m.source.checksum,
            m.target.checksum
        );
    }
}
