//! The audit log: Cassandra's `audit_logging_options` and `FileAuditLogger` line format, to a
//! rotating file, off by default.
//!
//! ```text
//!   conn.rs dispatch ── AuditLog::begin (one atomic load when off) ─▶ Pending (the request's text)
//!   conn.rs finish  ── Pending::finish(response) ─▶ bounded queue (by bytes) ─▶ writer thread
//!   writer thread: classify (classify.rs) ─▶ filter ─▶ obfuscate ─▶ format ─▶ audit.log (writer.rs)
//! ```
//!
//! **Off the request path:** a request only copies its statement text and, when it failed, the
//! error message; classifying, filtering, hiding passwords, formatting and the file I/O run on
//! the writer thread. The queue between them is bounded by `max_queue_weight` bytes; an entry
//! that does not fit is dropped and counted (`peregrine_audit_log_dropped_total`,
//! `nodetool getauditlog`), never waited for, so a slow disk cannot slow clients. (Cassandra's
//! `block: true` waits instead; the key is accepted and documented as not blocking here.)
//!
//! **What is logged** is what Cassandra 5.0 logs: logins (LOGIN_SUCCESS, LOGIN_ERROR), every
//! QUERY, PREPARE (PREPARE_STATEMENT), EXECUTE (the prepared statement's type and text) and
//! BATCH (one BATCH entry and one per statement, sharing a batch id), failures as
//! REQUEST_FAILURE or UNAUTHORIZED_ATTEMPT with the error message appended. Passwords never
//! appear: role statements show `PASSWORD = '*******'`, and error messages are cut after the
//! word "password" as Cassandra's `PasswordObfuscator` does.
//!
//! # Module map
//! | module | what it holds |
//! |---|---|
//! | this one | [`AuditLogOptions`] (the config block), [`AuditLog`] (on/off, the hook), entry types and categories, the filter |
//! | `classify` | a statement's type, keyspace and scope from its text; password obfuscation |
//! | `writer` | the writer thread: formatting, the file, rotation by size and roll cycle, retention |

mod classify;
mod writer;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use proto::request::{BatchStatement, Request};
use proto::response::Response;

use crate::backend::ConnState;

pub use classify::{describe, obfuscate_message, obfuscate_statement, Described};

/// Cassandra's `AuditLogEntryCategory`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Category {
    Query,
    Dml,
    Ddl,
    Dcl,
    Other,
    Auth,
    Error,
    Prepare,
}

impl Category {
    pub const ALL: [Category; 8] = [
        Category::Query,
        Category::Dml,
        Category::Ddl,
        Category::Dcl,
        Category::Other,
        Category::Auth,
        Category::Error,
        Category::Prepare,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Category::Query => "QUERY",
            Category::Dml => "DML",
            Category::Ddl => "DDL",
            Category::Dcl => "DCL",
            Category::Other => "OTHER",
            Category::Auth => "AUTH",
            Category::Error => "ERROR",
            Category::Prepare => "PREPARE",
        }
    }
}

macro_rules! entry_types {
    ($($v:ident = $name:literal : $cat:ident,)*) => {
        /// Cassandra 5.0's `AuditLogEntryType`, with its category.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum EntryType { $($v,)* }

        impl EntryType {
            pub fn name(self) -> &'static str {
                match self { $(EntryType::$v => $name,)* }
            }
            pub fn category(self) -> Category {
                match self { $(EntryType::$v => Category::$cat,)* }
            }
        }
    };
}

entry_types! {
    Select = "SELECT": Query,
    Update = "UPDATE": Dml,
    Delete = "DELETE": Dml,
    Truncate = "TRUNCATE": Ddl,
    CreateKeyspace = "CREATE_KEYSPACE": Ddl,
    AlterKeyspace = "ALTER_KEYSPACE": Ddl,
    DropKeyspace = "DROP_KEYSPACE": Ddl,
    CreateTable = "CREATE_TABLE": Ddl,
    DropTable = "DROP_TABLE": Ddl,
    PrepareStatement = "PREPARE_STATEMENT": Prepare,
    DropTrigger = "DROP_TRIGGER": Ddl,
    ListUsers = "LIST_USERS": Dcl,
    CreateIndex = "CREATE_INDEX": Ddl,
    DropIndex = "DROP_INDEX": Ddl,
    Grant = "GRANT": Dcl,
    Revoke = "REVOKE": Dcl,
    CreateType = "CREATE_TYPE": Ddl,
    DropAggregate = "DROP_AGGREGATE": Ddl,
    AlterView = "ALTER_VIEW": Ddl,
    CreateView = "CREATE_VIEW": Ddl,
    DropRole = "DROP_ROLE": Dcl,
    CreateFunction = "CREATE_FUNCTION": Ddl,
    AlterTable = "ALTER_TABLE": Ddl,
    Batch = "BATCH": Dml,
    CreateAggregate = "CREATE_AGGREGATE": Ddl,
    DropView = "DROP_VIEW": Ddl,
    DropType = "DROP_TYPE": Ddl,
    DropFunction = "DROP_FUNCTION": Ddl,
    AlterRole = "ALTER_ROLE": Dcl,
    CreateTrigger = "CREATE_TRIGGER": Ddl,
    ListRoles = "LIST_ROLES": Dcl,
    ListPermissions = "LIST_PERMISSIONS": Dcl,
    AlterType = "ALTER_TYPE": Ddl,
    CreateRole = "CREATE_ROLE": Dcl,
    UseKeyspace = "USE_KEYSPACE": Other,
    Describe = "DESCRIBE": Other,
    RequestFailure = "REQUEST_FAILURE": Error,
    LoginError = "LOGIN_ERROR": Auth,
    UnauthorizedAttempt = "UNAUTHORIZED_ATTEMPT": Auth,
    LoginSuccess = "LOGIN_SUCCESS": Auth,
}

/// The loggers `audit_logging_options.logger` may name.
const FILE_AUDIT_LOGGER: &str = "FileAuditLogger";

/// `audit_logging_options.logger`: a class name, written as Cassandra 5.0's yaml writes it
/// (`logger: [{class_name: FileAuditLogger}]`) or as a plain string.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum LoggerSpec {
    Name(String),
    Class(ClassName),
    List(Vec<ClassName>),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassName {
    pub class_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<serde_yaml::Value>,
}

impl LoggerSpec {
    /// The simple class name (`org.apache.cassandra.audit.FileAuditLogger` → `FileAuditLogger`).
    pub fn class(&self) -> &str {
        let full = match self {
            LoggerSpec::Name(n) => n.as_str(),
            LoggerSpec::Class(c) => c.class_name.as_str(),
            LoggerSpec::List(l) => l.first().map_or("", |c| c.class_name.as_str()),
        };
        full.rsplit('.').next().unwrap_or(full)
    }
}

/// Cassandra 5.0's `audit_logging_options` block. Keys and defaults as Cassandra's, plus
/// `max_file_size` (the size at which `audit.log` is rolled, which Cassandra leaves to its
/// logback appender). See `docs/configuration.md`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuditLogOptions {
    pub enabled: bool,
    pub logger: LoggerSpec,
    /// Directory of `audit.log` and its rolled files. Default `./logs/audit`.
    pub audit_logs_dir: PathBuf,
    /// Comma-separated lists, as Cassandra's; an empty list filters nothing.
    pub included_keyspaces: String,
    pub excluded_keyspaces: String,
    pub included_categories: String,
    pub excluded_categories: String,
    pub included_users: String,
    pub excluded_users: String,
    /// When `audit.log` is rolled to a dated file: `MINUTELY`, `HOURLY` (default), `DAILY`, ...
    /// (Chronicle's roll cycle names, as Cassandra's).
    pub roll_cycle: String,
    /// Accepted for Cassandra's files; Peregrine never blocks a request on the audit log (an
    /// entry that does not fit in the queue is dropped and counted).
    pub block: bool,
    /// Bytes of entries waiting for the writer; past it entries are dropped. Default 256 MiB.
    #[serde(with = "crate::config::bytes_str")]
    pub max_queue_weight: u64,
    /// Bytes of rolled files kept; the oldest are deleted past it. Default 16 GiB.
    #[serde(with = "crate::config::bytes_str")]
    pub max_log_size: u64,
    /// `audit.log` is rolled when it reaches this size. Default 50 MiB (Cassandra's logback
    /// audit appender's `maxFileSize`).
    #[serde(with = "crate::config::bytes_str")]
    pub max_file_size: u64,
    /// Not supported: must stay empty (refused at start-up otherwise).
    pub archive_command: String,
    pub max_archive_retries: u32,
    pub allow_nodetool_archive_command: bool,
}

impl Default for AuditLogOptions {
    fn default() -> Self {
        AuditLogOptions {
            enabled: false,
            logger: LoggerSpec::Name(FILE_AUDIT_LOGGER.to_string()),
            audit_logs_dir: PathBuf::from("./logs/audit"),
            included_keyspaces: String::new(),
            excluded_keyspaces: "system,system_schema,system_virtual_schema".to_string(),
            included_categories: String::new(),
            excluded_categories: String::new(),
            included_users: String::new(),
            excluded_users: String::new(),
            roll_cycle: "HOURLY".to_string(),
            block: true,
            max_queue_weight: 256 * 1024 * 1024,
            max_log_size: 16 * 1024 * 1024 * 1024,
            max_file_size: 50 * 1024 * 1024,
            archive_command: String::new(),
            max_archive_retries: 10,
            allow_nodetool_archive_command: false,
        }
    }
}

impl AuditLogOptions {
    /// Every problem of these options (checked at start-up and by `enableauditlog`).
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let p = "audit_logging_options";
        match self.logger.class() {
            FILE_AUDIT_LOGGER => {}
            "BinAuditLogger" => problems.push(format!(
                "`{p}.logger`: BinAuditLogger (Chronicle Queue binary files) is not supported; use FileAuditLogger"
            )),
            other => problems.push(format!(
                "`{p}.logger`: unknown audit logger `{other}`; the one supported is FileAuditLogger"
            )),
        }
        if writer::roll_period(&self.roll_cycle).is_none() {
            problems.push(format!(
                "`{p}.roll_cycle`: unknown roll cycle `{}` (use MINUTELY, HOURLY, DAILY, ...)",
                self.roll_cycle
            ));
        }
        if !self.archive_command.is_empty() {
            problems.push(format!(
                "`{p}.archive_command`: archiving rolled files is not supported; leave it empty"
            ));
        }
        let categories = [&self.included_categories, &self.excluded_categories];
        for name in categories.iter().flat_map(|c| list(c)) {
            if !Category::ALL.iter().any(|c| c.name() == name) {
                problems.push(format!(
                    "`{p}`: unknown category `{name}` (QUERY, DML, DDL, DCL, OTHER, AUTH, ERROR, PREPARE)"
                ));
            }
        }
        if self.max_file_size == 0 {
            problems.push(format!("`{p}.max_file_size` must be at least 1 byte"));
        }
        if self.max_queue_weight == 0 {
            problems.push(format!("`{p}.max_queue_weight` must be at least 1 byte"));
        }
        problems
    }

    /// The options as `nodetool getauditlog` shows them.
    pub fn describe(&self) -> serde_json::Value {
        serde_json::json!({
            "logger": self.logger.class(),
            "audit_logs_dir": self.audit_logs_dir.display().to_string(),
            "archive_command": self.archive_command,
            "roll_cycle": self.roll_cycle,
            "block": self.block,
            "max_log_size": self.max_log_size,
            "max_queue_weight": self.max_queue_weight,
            "max_archive_retries": self.max_archive_retries,
            "max_file_size": self.max_file_size,
            "included_keyspaces": self.included_keyspaces,
            "excluded_keyspaces": self.excluded_keyspaces,
            "included_categories": self.included_categories,
            "excluded_categories": self.excluded_categories,
            "included_users": self.included_users,
            "excluded_users": self.excluded_users,
        })
    }
}

/// A comma-separated list, entries trimmed, empty ones skipped.
fn list(s: &str) -> impl Iterator<Item = &str> {
    s.split(',').map(str::trim).filter(|x| !x.is_empty())
}

/// Cassandra's `AuditLogFilter`: an excluded value is filtered; with a non-empty include
/// list, anything not in it is filtered (an entry without a keyspace or user too).
#[derive(Debug, Clone, Default)]
pub(crate) struct Filter {
    keyspaces: (Vec<String>, Vec<String>),
    categories: (Vec<String>, Vec<String>),
    users: (Vec<String>, Vec<String>),
}

impl Filter {
    fn new(o: &AuditLogOptions) -> Self {
        let pair = |inc: &str, exc: &str| {
            let exc: Vec<String> = list(exc).map(str::to_string).collect();
            let inc = list(inc)
                .filter(|i| !exc.iter().any(|e| e == i))
                .map(str::to_string)
                .collect();
            (inc, exc)
        };
        Filter {
            keyspaces: pair(&o.included_keyspaces, &o.excluded_keyspaces),
            categories: pair(&o.included_categories, &o.excluded_categories),
            users: pair(&o.included_users, &o.excluded_users),
        }
    }

    fn filtered(value: Option<&str>, (inc, exc): &(Vec<String>, Vec<String>)) -> bool {
        if value.is_some_and(|v| exc.iter().any(|e| e == v)) {
            return true;
        }
        !(inc.is_empty() || value.is_some_and(|v| inc.iter().any(|i| i == v)))
    }

    /// Whether an entry is left out. `system` and `system_schema` always are, as in Cassandra.
    pub(crate) fn drops(
        &self,
        keyspace: Option<&str>,
        kind: EntryType,
        user: Option<&str>,
    ) -> bool {
        keyspace.is_some_and(|k| {
            k.eq_ignore_ascii_case("system") || k.eq_ignore_ascii_case("system_schema")
        }) || Self::filtered(keyspace, &self.keyspaces)
            || Self::filtered(Some(kind.category().name()), &self.categories)
            || Self::filtered(user, &self.users)
    }
}

/// What a request was, kept from its start to its answer.
#[derive(Debug)]
pub(crate) enum Said {
    Query(String),
    Prepare(String),
    /// A prepared statement's text, or `None` if the backend does not know the id.
    Execute(Option<String>),
    /// The statements' texts, and the batch's consistency (named in a failure's entry).
    Batch(Vec<Option<String>>, &'static str),
    Login,
}

/// One request on its way to the audit log (made by [`AuditLog::begin`]).
#[derive(Debug)]
pub struct Pending {
    sink: Arc<Sink>,
    said: Said,
    /// Milliseconds since the epoch when the request was read.
    timestamp: u64,
    /// The request's keyspace (its own, or the connection's) when it started.
    keyspace: Option<Arc<str>>,
}

/// What the writer thread receives.
#[derive(Debug)]
pub(crate) struct Record {
    pub said: Said,
    pub timestamp: u64,
    pub keyspace: Option<Arc<str>>,
    pub user: Option<Arc<str>>,
    pub source: SocketAddr,
    /// `None`: succeeded. `Some((error code, message))`: failed.
    pub failure: Option<(i32, String)>,
    /// Bytes this record counts against `max_queue_weight`.
    pub weight: u64,
}

/// What the writer thread receives.
#[derive(Debug)]
pub(crate) enum Msg {
    Record(Record),
    /// Write what came before, then end (requests still in flight may hold the sender; their
    /// entries after this are not written).
    Stop,
}

/// The running logger: the queue to its writer thread and what it has dropped.
#[derive(Debug)]
pub(crate) struct Sink {
    tx: std::sync::mpsc::Sender<Msg>,
    queued: Arc<AtomicU64>,
    max_queue_weight: u64,
    dropped: Arc<AtomicU64>,
}

impl Sink {
    fn send(&self, r: Record) {
        let w = r.weight;
        let before = self.queued.fetch_add(w, Ordering::Relaxed);
        if before + w > self.max_queue_weight {
            self.queued.fetch_sub(w, Ordering::Relaxed);
            let n = self.dropped.fetch_add(1, Ordering::Relaxed);
            if n.is_power_of_two() {
                tracing::warn!(
                    "audit log: the writer is behind (max_queue_weight {} bytes queued); {} entries dropped so far",
                    self.max_queue_weight,
                    n + 1
                );
            }
            return;
        }
        if self.tx.send(Msg::Record(r)).is_err() {
            self.queued.fetch_sub(w, Ordering::Relaxed);
        }
    }
}

/// The audit log of one server: off (the default) or writing through its thread. Switched by
/// `nodetool enableauditlog` / `disableauditlog`.
#[derive(Debug)]
pub struct AuditLog {
    on: AtomicBool,
    /// The running logger's queue, read lock-free by every request while on.
    sink: arc_swap::ArcSwapOption<Sink>,
    /// The writer thread and the options in force (nodetool only).
    state: Mutex<State>,
    /// Entries dropped because the queue was full, over the process's life.
    dropped: Arc<AtomicU64>,
    /// Entries written.
    written: Arc<AtomicU64>,
    /// The node's address as entries show it (`host:`).
    host: String,
}

#[derive(Debug, Default)]
struct State {
    thread: Option<std::thread::JoinHandle<()>>,
    options: AuditLogOptions,
}

impl AuditLog {
    /// The audit log as configured (started if `options.enabled`). `host` is the node's
    /// address (the CQL listener's).
    pub fn new(options: &AuditLogOptions, host: SocketAddr) -> Arc<Self> {
        let log = Arc::new(AuditLog {
            on: AtomicBool::new(false),
            sink: arc_swap::ArcSwapOption::empty(),
            state: Mutex::new(State {
                options: options.clone(),
                ..State::default()
            }),
            dropped: Arc::new(AtomicU64::new(0)),
            written: Arc::new(AtomicU64::new(0)),
            host: format!("/{}:{}", host.ip(), host.port()),
        });
        if options.enabled {
            if let Err(e) = log.enable(options.clone()) {
                tracing::error!("audit log not started: {e}");
            }
        }
        log
    }

    /// An audit log that is off (tests, tools).
    pub fn off() -> Arc<Self> {
        Self::new(
            &AuditLogOptions::default(),
            SocketAddr::from(([127, 0, 0, 1], 9042)),
        )
    }

    /// Whether entries are being written.
    pub fn is_on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    /// Starts (or restarts with new options) the audit log.
    pub fn enable(&self, mut options: AuditLogOptions) -> Result<(), String> {
        options.enabled = true;
        let problems = options.problems();
        if !problems.is_empty() {
            return Err(problems.join("; "));
        }
        // Checked before the running log stops, so a bad directory leaves it running.
        std::fs::create_dir_all(&options.audit_logs_dir).map_err(|e| {
            format!(
                "cannot create the audit log directory {}: {e}",
                options.audit_logs_dir.display()
            )
        })?;
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        // The old writer ends before the new one opens the file: one writer at a time.
        self.stop(&mut state);
        let (tx, rx) = std::sync::mpsc::channel();
        let queued = Arc::new(AtomicU64::new(0));
        let file = writer::Writer::open(&options, self.host.clone(), Filter::new(&options))
            .map_err(|e| {
                format!(
                    "cannot open the audit log in {}: {e}",
                    options.audit_logs_dir.display()
                )
            })?;
        let thread = {
            let queued = queued.clone();
            let written = self.written.clone();
            std::thread::Builder::new()
                .name("audit-log".into())
                .spawn(move || file.run(rx, &queued, &written))
                .map_err(|e| format!("cannot start the audit log writer thread: {e}"))?
        };
        self.sink.store(Some(Arc::new(Sink {
            tx,
            queued,
            max_queue_weight: options.max_queue_weight,
            dropped: self.dropped.clone(),
        })));
        state.thread = Some(thread);
        tracing::info!(
            "Audit logging is enabled: {} in {}",
            options.logger.class(),
            options.audit_logs_dir.display()
        );
        state.options = options;
        self.on.store(true, Ordering::Release);
        Ok(())
    }

    /// Stops the audit log; returns after every queued entry is written.
    pub fn disable(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        self.stop(&mut state);
        state.options.enabled = false;
    }

    fn stop(&self, state: &mut State) {
        self.on.store(false, Ordering::Release);
        // Requests in flight may still hold the sink: the thread is told to end after what
        // is queued now, and joined, so the file is complete and free when this returns.
        if let Some(sink) = self.sink.swap(None) {
            let _ = sink.tx.send(Msg::Stop);
        }
        if let Some(t) = state.thread.take() {
            let _ = t.join();
        }
    }

    /// The options in force and the counters, for `nodetool getauditlog`.
    pub fn status(&self) -> serde_json::Value {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let mut v = state.options.describe();
        v["enabled"] = serde_json::json!(self.is_on());
        v["entries_written"] = serde_json::json!(self.written.load(Ordering::Relaxed));
        v["entries_dropped"] = serde_json::json!(self.dropped.load(Ordering::Relaxed));
        v
    }

    /// The options in force (what `enableauditlog` starts from).
    pub fn options(&self) -> AuditLogOptions {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .options
            .clone()
    }

    /// Entries dropped and written so far.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.dropped.load(Ordering::Relaxed),
            self.written.load(Ordering::Relaxed),
        )
    }

    /// Notes a request at its start. Call only when [`AuditLog::is_on`]. `prepared` answers a
    /// prepared statement's text by id (the backend's `audit_prepared`).
    pub fn begin(
        &self,
        conn: &ConnState,
        req: &Request,
        prepared: impl Fn(&[u8]) -> Option<String>,
    ) -> Option<Pending> {
        let sink = self.sink.load_full()?;
        let own_keyspace = |ks: &Option<String>| ks.as_deref().map(Arc::from);
        let (said, ks) = match req {
            Request::Query(q) => (
                Said::Query(q.query.clone()),
                own_keyspace(&q.params.keyspace),
            ),
            Request::Prepare(p) => (Said::Prepare(p.query.clone()), own_keyspace(&p.keyspace)),
            Request::Execute(x) => (
                Said::Execute(prepared(&x.id)),
                own_keyspace(&x.params.keyspace),
            ),
            Request::Batch(b) => (
                Said::Batch(
                    b.statements
                        .iter()
                        .map(|s| match s {
                            BatchStatement::Query { query, .. } => Some(query.clone()),
                            BatchStatement::Prepared { id, .. } => prepared(id),
                        })
                        .collect(),
                    b.consistency.name(),
                ),
                own_keyspace(&b.keyspace),
            ),
            Request::AuthResponse(_) => (Said::Login, None),
            _ => return None,
        };
        Some(Pending {
            sink,
            said,
            timestamp: now_millis(),
            keyspace: ks.or_else(|| conn.keyspace()),
        })
    }
}

impl Pending {
    /// Sends the entry for the request's answer `resp` to the writer (never waits).
    pub fn finish(self, conn: &ConnState, resp: &Response) {
        let (failure, login_failed) = match resp {
            Response::Error(e) => {
                let login = matches!(self.said, Said::Login);
                (Some((e.code(), e.message().to_string())), login)
            }
            // A SASL step that is not the last one: nothing to log yet.
            Response::AuthChallenge(_) => return,
            _ => (None, false),
        };
        let text_len = match &self.said {
            Said::Query(t) | Said::Prepare(t) => t.len(),
            Said::Execute(t) => t.as_ref().map_or(32, String::len),
            Said::Batch(items, _) => items
                .iter()
                .map(|t| t.as_ref().map_or(32, String::len) + 128)
                .sum(),
            Said::Login => 0,
        };
        let weight = (text_len + failure.as_ref().map_or(0, |f| f.1.len()) + 128) as u64;
        // Cassandra names a connection that never logged in (AllowAllAuthenticator)
        // `anonymous`, and a failed login's user `null`.
        let user = if login_failed {
            None
        } else {
            Some(conn.role().unwrap_or_else(|| Arc::from("anonymous")))
        };
        self.sink.send(Record {
            said: self.said,
            timestamp: self.timestamp,
            keyspace: self.keyspace,
            user,
            source: conn.client_addr(),
            failure,
            weight,
        });
    }
}

fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_is_cassandras() {
        let mut o = AuditLogOptions::default();
        let f = Filter::new(&o);
        assert!(f.drops(Some("system"), EntryType::Select, Some("u")));
        assert!(f.drops(Some("system_virtual_schema"), EntryType::Select, Some("u")));
        assert!(!f.drops(Some("ks"), EntryType::Select, Some("u")));
        assert!(!f.drops(None, EntryType::LoginError, None));
        o.included_keyspaces = "ks, other".into();
        o.excluded_categories = "QUERY".into();
        o.included_users = "alice,bob".into();
        o.excluded_users = "bob".into();
        let f = Filter::new(&o);
        assert!(!f.drops(Some("other"), EntryType::Update, Some("alice")));
        assert!(f.drops(Some("ks"), EntryType::Select, Some("alice")));
        assert!(f.drops(Some("x"), EntryType::Update, Some("alice")));
        assert!(
            f.drops(None, EntryType::LoginSuccess, Some("alice")),
            "no keyspace: not included"
        );
        assert!(
            f.drops(Some("ks"), EntryType::Update, Some("bob")),
            "excluded wins"
        );
        assert!(f.drops(Some("ks"), EntryType::Update, None));
    }

    #[test]
    fn options_are_checked() {
        let mut o = AuditLogOptions::default();
        assert!(o.problems().is_empty());
        o.logger = LoggerSpec::List(vec![ClassName {
            class_name: "BinAuditLogger".into(),
            parameters: None,
        }]);
        o.roll_cycle = "WEEKLY".into();
        o.included_categories = "DML,NOPE".into();
        let p = o.problems().join("\n");
        assert!(p.contains("BinAuditLogger"), "{p}");
        assert!(p.contains("WEEKLY"), "{p}");
        assert!(p.contains("NOPE"), "{p}");
        let y: AuditLogOptions = serde_yaml::from_str(
            "enabled: true\nlogger:\n  - class_name: org.apache.cassandra.audit.FileAuditLogger\nmax_file_size: 1KiB\n",
        )
        .unwrap();
        assert_eq!(y.logger.class(), "FileAuditLogger");
        assert_eq!(y.max_file_size, 1024);
        assert!(y.problems().is_empty());
    }
}
