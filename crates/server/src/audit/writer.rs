//! The audit log's writer thread: turns records into Cassandra's `FileAuditLogger` lines and
//! appends them to `<audit_logs_dir>/audit.log`, rolling it to
//! `audit.log.<cycle start, UTC>.<n>` when the roll cycle changes or it reaches
//! `max_file_size`, and deleting the oldest rolled files past `max_log_size`.
//!
//! One thread, so the file needs no lock and lines never interleave; it flushes whenever the
//! queue is empty, so a line is in the file (the OS's page cache) soon after its request was
//! answered, not at the next roll.

use std::collections::hash_map::RandomState;
use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::classify::{describe, obfuscate_message, obfuscate_statement};
use super::{AuditLogOptions, EntryType, Filter, Msg, Record, Said};

/// The file entries go to; rolled files are `audit.log.<date>.<n>`.
const CURRENT: &str = "audit.log";

/// Seconds in one roll cycle, by Chronicle Queue's cycle names (Cassandra's `roll_cycle`).
pub(crate) fn roll_period(name: &str) -> Option<u64> {
    Some(match name.to_ascii_uppercase().as_str() {
        "TEST_SECONDLY" => 1,
        "MINUTELY" | "TEST_MINUTELY" => 60,
        "FIVE_MINUTELY" => 300,
        "TEN_MINUTELY" => 600,
        "TWENTY_MINUTELY" => 1200,
        "HALF_HOURLY" => 1800,
        "HOURLY"
        | "LARGE_HOURLY"
        | "LARGE_HOURLY_SPARSE"
        | "LARGE_HOURLY_XSPARSE"
        | "TEST_HOURLY" => 3600,
        "TWO_HOURLY" => 7200,
        "FOUR_HOURLY" => 14_400,
        "SIX_HOURLY" => 21_600,
        "DAILY" | "LARGE_DAILY" | "XLARGE_DAILY" | "HUGE_DAILY" | "SMALL_DAILY" | "TEST_DAILY"
        | "TEST2_DAILY" | "TEST4_DAILY" => 86_400,
        _ => return None,
    })
}

pub(crate) struct Writer {
    dir: PathBuf,
    host: String,
    filter: Filter,
    period: u64,
    max_file_size: u64,
    max_log_size: u64,
    file: BufWriter<File>,
    size: u64,
    /// The roll cycle the current file belongs to.
    cycle: u64,
    random: RandomState,
    batches: u64,
    /// Write errors so far (logged at powers of two).
    errors: u64,
}

impl Writer {
    pub(crate) fn open(o: &AuditLogOptions, host: String, filter: Filter) -> io::Result<Writer> {
        std::fs::create_dir_all(&o.audit_logs_dir)?;
        let path = o.audit_logs_dir.join(CURRENT);
        let file = OpenOptions::new().create(true).append(true).open(&path)?;
        let meta = file.metadata()?;
        let size = meta.len();
        let period = roll_period(&o.roll_cycle).unwrap_or(3600);
        // A file left by an earlier run belongs to the cycle it was last written in, so the
        // first entry of a later cycle rolls it under its own date.
        let written = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or_else(now_secs, |d| d.as_secs());
        Ok(Writer {
            dir: o.audit_logs_dir.clone(),
            host,
            filter,
            period,
            max_file_size: o.max_file_size,
            max_log_size: o.max_log_size,
            file: BufWriter::with_capacity(64 * 1024, file),
            size,
            cycle: if size > 0 { written } else { now_secs() } / period,
            random: RandomState::new(),
            batches: 0,
            errors: 0,
        })
    }

    /// Writes records until every sender is gone.
    pub(crate) fn run(mut self, rx: Receiver<Msg>, queued: &AtomicU64, written: &AtomicU64) {
        'run: loop {
            match rx.recv_timeout(Duration::from_secs(1)) {
                Ok(Msg::Record(r)) => {
                    self.record(r, queued, written);
                    loop {
                        match rx.try_recv() {
                            Ok(Msg::Record(r)) => self.record(r, queued, written),
                            Ok(Msg::Stop) => break 'run,
                            Err(_) => break,
                        }
                    }
                    let flushed = self.file.flush();
                    self.check(flushed);
                }
                Ok(Msg::Stop) | Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
        let flushed = self.file.flush();
        self.check(flushed);
    }

    fn record(&mut self, r: Record, queued: &AtomicU64, written: &AtomicU64) {
        queued.fetch_sub(r.weight, Ordering::Relaxed);
        for line in self.lines(&r) {
            let n = line.len() as u64 + 1;
            let now = now_secs() / self.period;
            if self.size > 0 && (now != self.cycle || self.size + n > self.max_file_size) {
                let rolled = self.roll(now);
                self.check(rolled);
            }
            let w = writeln!(self.file, "{line}");
            self.check(w);
            self.size += n;
            written.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn check(&mut self, r: io::Result<()>) {
        if let Err(e) = r {
            self.errors += 1;
            if self.errors.is_power_of_two() {
                tracing::error!(
                    "audit log: writing to {} failed ({} errors so far): {e}",
                    self.dir.display(),
                    self.errors
                );
            }
        }
    }

    /// Renames `audit.log` to its rolled name, starts a new one, and applies `max_log_size`.
    fn roll(&mut self, now: u64) -> io::Result<()> {
        self.file.flush()?;
        let stamp = utc_stamp(self.cycle * self.period);
        // One past the highest number of this cycle's files (not the lowest free one: the
        // oldest are deleted, and numbers must keep growing to keep their order).
        let prefix = format!("{CURRENT}.{stamp}.");
        let mut n = 0;
        for e in std::fs::read_dir(&self.dir)? {
            let name = e?.file_name();
            let name = name.to_string_lossy();
            if let Some(k) = name
                .strip_prefix(&prefix)
                .and_then(|k| k.parse::<u64>().ok())
            {
                n = n.max(k + 1);
            }
        }
        let target = self.dir.join(format!("{prefix}{n}"));
        std::fs::rename(self.dir.join(CURRENT), &target)?;
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join(CURRENT))?;
        self.file = BufWriter::with_capacity(64 * 1024, file);
        self.size = 0;
        self.cycle = now;
        retain(&self.dir, self.max_log_size)
    }

    /// The lines of one record (a batch has one per statement after its own), filtered.
    fn lines(&mut self, r: &Record) -> Vec<String> {
        let user = r.user.as_deref();
        let conn_ks = r.keyspace.as_deref();
        let mut out = Vec::new();
        let mut push = |this: &mut Self, e: Entry<'_>| {
            if !this.filter.drops(e.keyspace, e.kind, user) {
                out.push(this.format(r, &e));
            }
        };
        if let Some((code, message)) = &r.failure {
            let kind = match (&r.said, *code) {
                (Said::Login, _) => EntryType::LoginError,
                (_, 0x2100) => EntryType::UnauthorizedAttempt,
                _ => EntryType::RequestFailure,
            };
            let operation = match &r.said {
                Said::Login => "LOGIN FAILURE".to_string(),
                Said::Query(t) | Said::Prepare(t) | Said::Execute(Some(t)) => {
                    // A statement that does not parse is not trusted to show its password
                    // literal where the obfuscator looks for it (Cassandra's wording).
                    if *code == 0x2000 && t.to_ascii_lowercase().contains("password") {
                        let op = obfuscate_message(t);
                        let e = Entry::new(kind, conn_ks, None, None, op);
                        let mut e = e;
                        e.operation
                            .push_str("; Syntax Exception. Obscured for security reasons.");
                        push(self, e);
                        return out;
                    }
                    obfuscate_statement(t)
                }
                Said::Execute(None) => String::new(),
                Said::Batch(items, consistency) => {
                    format!(
                        "BATCH of {} statements at consistency {consistency}",
                        items.len()
                    )
                }
            };
            let message = obfuscate_message(message);
            let operation = if operation.is_empty() {
                message
            } else if message.is_empty() {
                operation
            } else {
                format!("{operation}; {message}")
            };
            push(self, Entry::new(kind, conn_ks, None, None, operation));
            return out;
        }
        match &r.said {
            Said::Login => push(
                self,
                Entry::new(
                    EntryType::LoginSuccess,
                    conn_ks,
                    None,
                    None,
                    "LOGIN SUCCESSFUL".into(),
                ),
            ),
            Said::Query(t) | Said::Execute(Some(t)) => {
                let d = describe(t);
                if let Some(kind) = d.kind {
                    let ks = d.keyspace.as_deref().or(conn_ks);
                    let op = obfuscate_statement(t);
                    push(self, Entry::new(kind, ks, d.scope.as_deref(), None, op));
                }
            }
            Said::Prepare(t) => {
                let d = describe(t);
                let ks = d.keyspace.as_deref().or(conn_ks);
                let op = obfuscate_statement(t);
                push(
                    self,
                    Entry::new(
                        EntryType::PrepareStatement,
                        ks,
                        d.scope.as_deref(),
                        None,
                        op,
                    ),
                );
            }
            // A proxy that does not know the prepared statement's text: nothing to classify.
            Said::Execute(None) => {}
            Said::Batch(items, _) => {
                let id = self.uuid();
                let op = format!("BatchId:[{id}] - BATCH of [{}] statements", items.len());
                push(
                    self,
                    Entry::new(EntryType::Batch, conn_ks, None, Some(&id), op),
                );
                for t in items.iter().flatten() {
                    let d = describe(t);
                    let Some(kind) = d.kind else { continue };
                    let ks = d.keyspace.as_deref().or(conn_ks);
                    let op = obfuscate_statement(t);
                    push(
                        self,
                        Entry::new(kind, ks, d.scope.as_deref(), Some(&id), op),
                    );
                }
            }
        }
        out
    }

    /// Cassandra's `AuditLogEntry.getLogString`.
    fn format(&self, r: &Record, e: &Entry<'_>) -> String {
        let mut s = String::with_capacity(160 + e.operation.len());
        let user = r.user.as_deref().unwrap_or("null");
        let _ = write!(
            s,
            "user:{user}|host:{}|source:/{}",
            self.host,
            r.source.ip()
        );
        if r.source.port() > 0 {
            let _ = write!(s, "|port:{}", r.source.port());
        }
        let _ = write!(
            s,
            "|timestamp:{}|type:{}|category:{}",
            r.timestamp,
            e.kind.name(),
            e.kind.category().name()
        );
        if let Some(b) = e.batch {
            let _ = write!(s, "|batch:{b}");
        }
        if let Some(k) = e.keyspace.filter(|k| !k.trim().is_empty()) {
            let _ = write!(s, "|ks:{k}");
        }
        if let Some(k) = e.scope.filter(|k| !k.trim().is_empty()) {
            let _ = write!(s, "|scope:{k}");
        }
        if !e.operation.trim().is_empty() {
            let _ = write!(s, "|operation:{}", e.operation);
        }
        // One entry, one line: a line break inside a statement (or a quoted role name) is
        // written `\n`, so a client cannot forge a line of its own.
        if s.contains(['\n', '\r']) {
            s = s
                .replace('\\', "\\\\")
                .replace('\n', "\\n")
                .replace('\r', "\\r");
        }
        s
    }

    /// A random (version 4) UUID for a batch's entries.
    fn uuid(&mut self) -> String {
        self.batches += 1;
        let mut h = self.random.build_hasher();
        h.write_u64(self.batches);
        let a = h.finish();
        h.write_u64(now_nanos());
        let b = h.finish();
        let mut x = (u128::from(a) << 64) | u128::from(b);
        x = (x & !(0xf << 76)) | (0x4 << 76);
        x = (x & !(0x3 << 62)) | (0x2 << 62);
        let h = format!("{x:032x}");
        format!(
            "{}-{}-{}-{}-{}",
            &h[..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..]
        )
    }
}

/// One line's variable parts.
struct Entry<'a> {
    kind: EntryType,
    keyspace: Option<&'a str>,
    scope: Option<&'a str>,
    batch: Option<&'a str>,
    operation: String,
}

impl<'a> Entry<'a> {
    fn new(
        kind: EntryType,
        keyspace: Option<&'a str>,
        scope: Option<&'a str>,
        batch: Option<&'a str>,
        operation: String,
    ) -> Self {
        Entry {
            kind,
            keyspace,
            scope,
            batch,
            operation,
        }
    }
}

/// Deletes the oldest rolled files while they hold more than `max_bytes`.
fn retain(dir: &Path, max_bytes: u64) -> io::Result<()> {
    let prefix = format!("{CURRENT}.");
    let mut rolled = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(&prefix) else {
            continue;
        };
        let (stamp, n) = rest.rsplit_once('.').unwrap_or((rest, "0"));
        let n: u64 = n.parse().unwrap_or(0);
        rolled.push(((stamp.to_string(), n), e.metadata()?.len(), e.path()));
    }
    rolled.sort();
    let mut total: u64 = rolled.iter().map(|r| r.1).sum();
    for (_, len, path) in rolled {
        if total <= max_bytes {
            break;
        }
        std::fs::remove_file(&path)?;
        total -= len;
    }
    Ok(())
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn now_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// `YYYY-MM-DD-HH-MM-SS` (UTC) of a Unix time.
fn utc_stamp(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}-{:02}-{:02}-{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_are_utc_dates() {
        assert_eq!(utc_stamp(0), "1970-01-01-00-00-00");
        assert_eq!(utc_stamp(1_795_738_237), "2026-11-27-00-10-37");
        assert_eq!(utc_stamp(951_782_400), "2000-02-29-00-00-00");
    }

    #[test]
    fn roll_cycles_are_chronicles_names() {
        assert_eq!(roll_period("HOURLY"), Some(3600));
        assert_eq!(roll_period("minutely"), Some(60));
        assert_eq!(roll_period("TEST_SECONDLY"), Some(1));
        assert_eq!(roll_period("WEEKLY"), None);
    }
}
