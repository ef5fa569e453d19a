//! `peregrine migrate`: copies keyspaces between two CQL clusters, standalone Peregrine and
//! Cassandra in either direction, keeping every cell's write time and TTL so the copy
//! reconciles with later writes as the original would.
//!
//! What it is: a client of both ends over CQL (the `scylla` driver). It copies the schema
//! (the source's `DESCRIBE KEYSPACE`, replayed with `IF NOT EXISTS`), then the rows of every
//! table, token range by token range, several ranges at once; it records each finished range in
//! a checkpoint file, so a run that is interrupted resumes where it stopped; and it ends with a
//! verification pass that compares each range's row count and checksum on both sides.
//!
//! What it is not: a file-level copy (it never reads SSTables or Peregrine's data files; a
//! standalone data directory is read through a Peregrine server the binary starts on it), and
//! not a live replication: writes to the source during a migration may or may not be copied.
//! It prints nothing: progress goes to the caller's [`Event`] callback (the binary draws it).
//!
//! # Modules
//!
//! - [`ring`]: the token ring split into ranges.
//! - [`schema`]: tables as `system_schema` describes them; the schema copy.
//! - [`cells`]: a row as read (values, `writetime()`, `ttl()`, in protocol form), the statements
//!   that write it back, the per-row hash of the verification.
//! - [`copy`]: reading a range page by page, writing its rows, digesting it.
//! - [`state`]: the checkpoint file.
//!
//! # Invariants
//!
//! - Every write the copy makes can be repeated with the same result (cells are set or added at
//!   their original write time; lists and counters are compared with the target first), so a
//!   range that was half copied when the run stopped is simply copied again.
//! - A range is recorded as finished only after all its writes were acknowledged.
//! - What cannot be kept through CQL is listed in `docs/migrate.md`: the row marker's own write
//!   time, counters' write times, a list element's exact time UUID, TTLs to the second.

pub mod cells;
pub mod copy;
pub mod ring;
pub mod schema;
pub mod state;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::stream::{self, StreamExt};
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;

use crate::cells::{Digest, Layout};
use crate::copy::{CopyJob, Side, Statements};
use crate::ring::TokenRange;
use crate::schema::Table;
use crate::state::Checkpoint;

/// Why a migration stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot connect to the {side} ({hosts}): {reason}")]
    Connect {
        side: &'static str,
        hosts: String,
        reason: String,
    },
    #[error("{0}")]
    Cql(String),
    /// A target node still did not know a copied table when the copy gave up waiting.
    #[error("{0} (a target node still does not know the table)")]
    SchemaLag(String),
    #[error("schema: {0}")]
    Schema(String),
    #[error("row of {table} at token {token}: {reason}")]
    Row {
        table: String,
        token: i64,
        reason: String,
    },
    #[error("checkpoint file {path}: {reason}")]
    State { path: PathBuf, reason: String },
}

/// What to migrate and how.
#[derive(Debug, Clone)]
pub struct Options {
    /// The source's contact points, `host:port`.
    pub from: Vec<String>,
    /// The target's contact points, `host:port`.
    pub to: Vec<String>,
    /// Logins (user, password) for PasswordAuthenticator, per side.
    pub from_login: Option<(String, String)>,
    pub to_login: Option<(String, String)>,
    /// Keyspaces to copy; empty: every user keyspace of the source (or those of `tables`).
    pub keyspaces: Vec<String>,
    /// Tables to copy, `ks.table`; empty: every table of the keyspaces.
    pub tables: Vec<String>,
    /// Ranges copied at once.
    pub parallel: usize,
    /// Ranges the ring is split into.
    pub ranges: u32,
    /// The checkpoint file.
    pub state: PathBuf,
    /// Rows per page when reading.
    pub page_size: i32,
    /// Copy (schema and rows).
    pub copy: bool,
    /// Verify (row count and checksum per range) after copying.
    pub verify: bool,
}

/// Progress, for the caller to show.
#[derive(Debug, Clone)]
pub enum Event {
    /// The schema of a keyspace was sent to the target.
    Schema {
        keyspace: String,
        statements: usize,
        /// `(object, option)`: table options the target refused as unknown, left out.
        dropped_options: Vec<(String, String)>,
    },
    /// Copying starts: `total` (table, range) pairs, `done` of them already finished earlier.
    CopyStarted { total: usize, done: usize },
    /// One range was copied.
    RangeCopied {
        table: String,
        range: TokenRange,
        rows: u64,
    },
    /// The verification starts over `total` (table, range) pairs.
    VerifyStarted { total: usize },
    /// One range was compared.
    RangeVerified { table: String, equal: bool },
}

/// A range whose row count or checksum differs between source and target.
#[derive(Debug, Clone)]
pub struct Mismatch {
    pub table: String,
    pub range: TokenRange,
    pub source: Digest,
    pub target: Digest,
}

/// What a run did.
#[derive(Debug, Default, Clone)]
pub struct Report {
    pub tables: usize,
    pub ranges_copied: usize,
    pub ranges_skipped: usize,
    pub rows_copied: u64,
    pub statements: u64,
    pub ranges_verified: usize,
    pub rows_verified: u64,
    pub mismatches: Vec<Mismatch>,
}

/// The progress callback.
pub type OnEvent = Arc<dyn Fn(Event) + Send + Sync>;

/// Runs a migration (or only its verification) as `options` say.
pub async fn run(options: &Options, on_event: OnEvent) -> Result<Report, Error> {
    let source = connect("source", &options.from, options.from_login.as_ref()).await?;
    let target = connect("target", &options.to, options.to_login.as_ref()).await?;
    check_partitioner(&source, "source").await?;
    check_partitioner(&target, "target").await?;
    // `--tables ks.t`: its keyspace, and only the tables named.
    let mut only: Vec<(String, String)> = Vec::new();
    for t in &options.tables {
        let (ks, name) = t.split_once('.').ok_or_else(|| {
            Error::Schema(format!("--tables {t}: a table is named keyspace.table"))
        })?;
        only.push((ks.to_string(), name.to_string()));
    }
    let mut wanted = options.keyspaces.clone();
    for (ks, _) in &only {
        if !wanted.contains(ks) {
            wanted.push(ks.clone());
        }
    }
    let keyspaces = schema::user_keyspaces(&source, &wanted).await?;
    let mut report = Report::default();
    let mut tables: Vec<Table> = Vec::new();
    for ks in &keyspaces {
        let named: Vec<String> = only
            .iter()
            .filter(|(k, _)| k == ks)
            .map(|(_, t)| t.clone())
            .collect();
        let mut here = schema::tables(&source, ks).await?;
        if !named.is_empty() {
            if let Some(t) = named.iter().find(|t| !here.iter().any(|x| &x.name == *t)) {
                return Err(Error::Schema(format!("the source has no table {ks}.{t}")));
            }
            here.retain(|x| named.contains(&x.name));
        }
        if options.copy {
            // The nodes agree first: a keyspace made on one node moments ago must not be
            // created again, with the source's replication, on another that has not heard of it.
            schema::await_schema_agreement(&target, NODES_TIMEOUT).await?;
            let subset = (!named.is_empty()).then_some(named.as_slice());
            let done = schema::copy_keyspace(&source, &target, ks, subset).await?;
            on_event(Event::Schema {
                keyspace: ks.clone(),
                statements: done.statements,
                dropped_options: done.dropped_options,
            });
        }
        if options.copy {
            target.await_schema_agreement().await.map_err(|e| {
                Error::Schema(format!(
                    "the target's nodes do not agree on the schema: {e}"
                ))
            })?;
        }
        if options.copy {
            let names: Vec<String> = here.iter().map(|t| t.name.clone()).collect();
            schema::await_tables_on_every_node(&target, ks, &names, NODES_TIMEOUT).await?;
        }
        let there = schema::tables(&target, ks).await?;
        for t in here {
            match there.iter().find(|x| x.name == t.name) {
                None => {
                    return Err(Error::Schema(format!(
                        "table {} is not on the target{}",
                        t.qualified(),
                        if options.copy { "" } else { " (run the copy first)" }
                    )))
                }
                Some(x) if schema::shape(x) != schema::shape(&t) => {
                    return Err(Error::Schema(format!(
                        "table {} exists on the target with other columns: source {:?}, target {:?}",
                        t.qualified(),
                        schema::shape(&t),
                        schema::shape(x)
                    )))
                }
                Some(_) => tables.push(t),
            }
        }
    }
    report.tables = tables.len();
    let ranges = ring::split(options.ranges);
    let layouts: Vec<Layout> = tables.iter().map(Layout::of).collect();
    let statements = Statements::default();
    let jobs: Vec<(usize, usize)> = (0..tables.len())
        .flat_map(|t| (0..ranges.len()).map(move |r| (t, r)))
        .collect();
    let src = Side {
        session: &source,
        is_source: true,
    };
    let dst = Side {
        session: &target,
        is_source: false,
    };
    if options.copy {
        let mut checkpoint = Checkpoint::open(&options.state, options.ranges)?;
        let todo: Vec<(usize, usize)> = jobs
            .iter()
            .copied()
            .filter(|&(t, r)| !checkpoint.is_done(&tables[t].qualified(), r))
            .collect();
        report.ranges_skipped = jobs.len() - todo.len();
        on_event(Event::CopyStarted {
            total: jobs.len(),
            done: report.ranges_skipped,
        });
        let default_ts = now_micros();
        let mut copies = stream::iter(todo)
            .map(|(t, r)| {
                let (tables, layouts, ranges, statements) =
                    (&tables, &layouts, &ranges, &statements);
                async move {
                    let job = CopyJob {
                        source: src,
                        target: dst,
                        statements,
                        table: &tables[t],
                        layout: &layouts[t],
                        range: ranges[r],
                        page_size: options.page_size,
                        default_ts,
                    };
                    copy::copy_range(&job).await.map(|c| (t, r, c))
                }
            })
            .buffer_unordered(options.parallel.max(1));
        while let Some(done) = copies.next().await {
            let (t, r, c) = done?;
            checkpoint.mark_done(&tables[t].qualified(), r)?;
            report.ranges_copied += 1;
            report.rows_copied += c.rows;
            report.statements += c.statements;
            on_event(Event::RangeCopied {
                table: tables[t].qualified(),
                range: ranges[r],
                rows: c.rows,
            });
        }
    }
    if options.verify {
        on_event(Event::VerifyStarted { total: jobs.len() });
        let mut checks = stream::iter(jobs)
            .map(|(t, r)| {
                let (tables, layouts, ranges, statements) =
                    (&tables, &layouts, &ranges, &statements);
                async move {
                    let (table, layout, range) = (&tables[t], &layouts[t], ranges[r]);
                    let (a, b) = futures::try_join!(
                        copy::digest(src, statements, table, layout, range, options.page_size),
                        copy::digest(dst, statements, table, layout, range, options.page_size)
                    )?;
                    Ok::<_, Error>((t, r, a, b))
                }
            })
            .buffer_unordered(options.parallel.max(1));
        while let Some(done) = checks.next().await {
            let (t, r, a, b) = done?;
            report.ranges_verified += 1;
            report.rows_verified += a.rows;
            if a != b {
                report.mismatches.push(Mismatch {
                    table: tables[t].qualified(),
                    range: ranges[r],
                    source: a,
                    target: b,
                });
            }
            on_event(Event::RangeVerified {
                table: tables[t].qualified(),
                equal: a == b,
            });
        }
        report
            .mismatches
            .sort_by(|a, b| (&a.table, a.range.start).cmp(&(&b.table, b.range.start)));
    }
    Ok(report)
}

async fn connect(
    side: &'static str,
    hosts: &[String],
    login: Option<&(String, String)>,
) -> Result<Session, Error> {
    let err = |reason: String| Error::Connect {
        side,
        hosts: hosts.join(","),
        reason,
    };
    let mut builder = SessionBuilder::new()
        .known_nodes(hosts)
        .connection_timeout(Duration::from_secs(10));
    if let Some((user, password)) = login {
        builder = builder.user(user, password);
    }
    let session = builder.build().await.map_err(|e| err(e.to_string()))?;
    // The driver waits for schema agreement after each DDL by asking every node it has a
    // working connection to; a node whose pool is still opening is not asked, and then a table
    // is used on a node that has not created it yet. So: every node connected first.
    let deadline = Instant::now() + NODES_TIMEOUT;
    loop {
        let state = session.get_cluster_state();
        let nodes = state.get_nodes_info();
        let waiting: Vec<String> = nodes
            .iter()
            .filter(|n| n.is_enabled() && !n.is_connected())
            .map(|n| n.address.to_string())
            .collect();
        if waiting.is_empty() {
            return Ok(session);
        }
        if Instant::now() > deadline {
            return Err(err(format!(
                "no connection to {} after {} s",
                waiting.join(", "),
                NODES_TIMEOUT.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// How long a side's nodes may take to accept connections, and the target's to agree on the
/// schema.
const NODES_TIMEOUT: Duration = Duration::from_secs(60);

/// Token ranges mean the same on both sides only with Cassandra's default partitioner.
async fn check_partitioner(session: &Session, side: &str) -> Result<(), Error> {
    let rows: Vec<(Option<String>,)> =
        schema::query(session, "SELECT partitioner FROM system.local").await?;
    match rows.first().and_then(|r| r.0.as_deref()) {
        Some(p) if p.ends_with("Murmur3Partitioner") => Ok(()),
        Some(p) => Err(Error::Schema(format!(
            "the {side} uses the partitioner {p}; migrate copies by Murmur3 token ranges only"
        ))),
        None => Ok(()),
    }
}

fn now_micros() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
