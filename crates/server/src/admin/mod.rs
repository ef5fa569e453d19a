//! The admin endpoint: a small HTTP/1.1 listener (`admin_listen`, loopback by default) serving
//! `GET /metrics` (Prometheus text) and `POST /nodetool/<command>` (JSON arguments, JSON answer)
//! for `peregrine nodetool`.
//!
//! The front end answers what it owns itself (`version`, the native transport's
//! `enablebinary`/`disablebinary`/`statusbinary`, `drain`, log levels, uptime in `info`);
//! everything else goes to [`Backend::admin`], which answers what makes sense for its mode.
//!
//! # Invariants
//! - Never reachable off loopback without authentication: `Config::validate` refuses a
//!   non-loopback `admin_listen` without `admin_username`/`admin_password`, and a connection
//!   from a non-loopback peer is refused when no credentials are configured.
//! - Every size read off the socket is bounded (`http`), and a client has 10 s to send its
//!   request.
//! - Unknown paths answer 404, unknown commands 404 with `{"error": ...}`, bad arguments 400.

mod http;

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use serde_json::{json, Value};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::audit::{AuditLog, AuditLogOptions, LoggerSpec};
use crate::backend::Backend;
use crate::config::Config;
use crate::metrics::{self, Exposition};
use http::{HttpRequest, HttpResponse};

pub use http::base64;

/// The release this server presents itself as (`system.local.release_version`).
pub const RELEASE_VERSION: &str = "5.0.9";

/// Why an admin command failed: an HTTP status and a sentence for the operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminError {
    pub status: u16,
    pub message: String,
}

impl AdminError {
    /// Bad arguments (an unknown keyspace or table, a malformed value): 400.
    pub fn bad(message: impl Into<String>) -> Self {
        AdminError {
            status: 400,
            message: message.into(),
        }
    }
    /// The command does not apply in this mode: 409, with why.
    pub fn not_here(message: impl Into<String>) -> Self {
        AdminError {
            status: 409,
            message: message.into(),
        }
    }
    /// The command failed on the server: 500.
    pub fn failed(message: impl Into<String>) -> Self {
        AdminError {
            status: 500,
            message: message.into(),
        }
    }
    /// No such command: 404.
    pub fn unknown(command: &str) -> Self {
        AdminError {
            status: 404,
            message: format!("unknown admin command {command:?}"),
        }
    }
}

pub type AdminResult = Result<Value, AdminError>;

/// The process's log filter, for `getlogginglevels`/`setlogginglevel` (the binary owns the
/// logger and registers this once).
pub trait LogLevels: Send + Sync {
    /// `(logger, level)` pairs; `ROOT` is the default level.
    fn levels(&self) -> Vec<(String, String)>;
    /// Sets `logger`'s level (`ROOT` or empty: the default); `Err` says why not.
    fn set(&self, logger: &str, level: &str) -> Result<(), String>;
}

static LOG_LEVELS: OnceLock<Box<dyn LogLevels>> = OnceLock::new();

/// Registers the log filter control (once; later calls are ignored).
pub fn set_log_levels(control: Box<dyn LogLevels>) {
    let _ = LOG_LEVELS.set(control);
}

/// What the admin endpoint shares with the CQL accept loop.
pub(crate) struct Admin<B> {
    pub backend: Arc<B>,
    pub config: Config,
    /// Whether the native transport accepts clients (`enablebinary`/`disablebinary`).
    pub binary: watch::Sender<bool>,
    /// Why the backend cannot serve (the port is closed meanwhile), or `None`.
    pub fault: watch::Receiver<Option<String>>,
    pub started: Instant,
    /// The audit log (`enableauditlog`, `disableauditlog`, `getauditlog`).
    pub audit: Arc<AuditLog>,
    /// `Basic <base64(user:password)>` when credentials are configured.
    credentials: Option<String>,
}

impl<B: Backend> Admin<B> {
    pub fn new(
        backend: Arc<B>,
        config: Config,
        binary: watch::Sender<bool>,
        fault: watch::Receiver<Option<String>>,
        audit: Arc<AuditLog>,
    ) -> Self {
        let credentials = match (&config.admin_username, &config.admin_password) {
            (Some(u), Some(p)) => Some(format!("Basic {}", base64(format!("{u}:{p}").as_bytes()))),
            _ => None,
        };
        Admin {
            backend,
            config,
            binary,
            fault,
            started: Instant::now(),
            audit,
            credentials,
        }
    }
}

/// Serves the admin endpoint on `listener` until `shutdown`.
pub(crate) async fn serve<B: Backend>(
    listener: TcpListener,
    admin: Arc<Admin<B>>,
    shutdown: CancellationToken,
) {
    loop {
        let accepted = tokio::select! {
            _ = shutdown.cancelled() => return,
            r = listener.accept() => r,
        };
        let (socket, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Typically out of descriptors: wait a little instead of spinning.
                tracing::warn!("admin endpoint: accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        let admin = admin.clone();
        tokio::spawn(connection(
            socket,
            http::READ_TIMEOUT,
            move |req| async move { admin.respond(peer, req).await },
        ));
    }
}

/// One request and its answer. The client gets `timeout` to send its request and again to take
/// the answer; the command runs as long as it needs (a flush or a major compaction of a large
/// store takes minutes, and `nodetool` waits an hour), so the answer is never lost to a timer.
async fn connection<F, R>(mut socket: TcpStream, timeout: std::time::Duration, respond: F)
where
    F: FnOnce(HttpRequest) -> R,
    R: std::future::Future<Output = HttpResponse>,
{
    let response = match tokio::time::timeout(timeout, http::read_request(&mut socket)).await {
        Err(_) => return,
        Ok(Ok(req)) => respond(req).await,
        Ok(Err(resp)) => resp,
    };
    let _ = tokio::time::timeout(timeout, http::write_response(&mut socket, &response)).await;
}

impl<B: Backend> Admin<B> {
    async fn respond(self: &Arc<Self>, peer: SocketAddr, req: HttpRequest) -> HttpResponse {
        match &self.credentials {
            None if !peer.ip().is_loopback() => {
                return HttpResponse::error(
                    403,
                    "the admin endpoint answers only loopback clients unless admin_username and admin_password are set",
                )
            }
            Some(expected)
                if !req
                    .authorization
                    .as_deref()
                    .is_some_and(|got| http::same(got.as_bytes(), expected.as_bytes())) =>
            {
                return HttpResponse::error(401, "Authentication failed: wrong admin username or password");
            }
            _ => {}
        }
        if req.path == "/metrics" {
            if req.method != "GET" {
                return HttpResponse::error(405, "use GET for /metrics");
            }
            // Off the request threads: the storage's gauges take its locks (the journal's, and
            // before session 40 the version history's, which a compaction held for up to 170 ms).
            let admin = self.clone();
            return match tokio::task::spawn_blocking(move || admin.metrics()).await {
                Ok(body) => HttpResponse {
                    status: 200,
                    content_type: "text/plain; version=0.0.4",
                    body,
                },
                Err(e) => HttpResponse::error(500, &format!("collecting the metrics failed: {e}")),
            };
        }
        let Some(command) = req.path.strip_prefix("/nodetool/") else {
            return HttpResponse::error(404, &format!("no such path {:?}", req.path));
        };
        if req.method != "POST" && req.method != "GET" {
            return HttpResponse::error(405, "use POST for nodetool commands");
        }
        let args: Value = if req.body.is_empty() {
            json!({})
        } else {
            match serde_json::from_slice(&req.body) {
                Ok(v @ Value::Object(_)) => v,
                _ => return HttpResponse::error(400, "the body must be a JSON object"),
            }
        };
        match self.command(command, args).await {
            Ok(v) => HttpResponse::json(200, v),
            Err(e) => HttpResponse::error(e.status, &e.message),
        }
    }

    /// The whole `/metrics` document.
    fn metrics(&self) -> String {
        let mut out = Exposition::new();
        out.family(
            "peregrine_uptime_seconds",
            "gauge",
            "Seconds since the server started.",
        );
        out.sample(&[], self.started.elapsed().as_secs_f64().floor());
        out.family(
            "peregrine_native_transport_enabled",
            "gauge",
            "1 while the CQL port accepts clients (nodetool enablebinary/disablebinary).",
        );
        out.sample(&[], f64::from(u8::from(self.serving())));
        metrics::global().export(&mut out);
        let (dropped, written) = self.audit.counts();
        out.family(
            "peregrine_audit_log_entries_total",
            "counter",
            "Audit log entries written to audit.log.",
        );
        out.sample(&[], written as f64);
        out.family(
            "peregrine_audit_log_dropped_total",
            "counter",
            "Audit log entries dropped because the writer was max_queue_weight bytes behind.",
        );
        out.sample(&[], dropped as f64);
        self.backend.export_metrics(&mut out);
        out.finish()
    }

    /// Whether the CQL port accepts clients: enabled by the operator and the backend able to
    /// serve.
    fn serving(&self) -> bool {
        *self.binary.borrow() && self.fault.borrow().is_none()
    }

    /// Why the CQL port is closed, or `None` while it serves.
    fn stopped_because(&self) -> Option<String> {
        if !*self.binary.borrow() {
            return Some("stopped by the operator (nodetool disablebinary or drain)".into());
        }
        self.fault
            .borrow()
            .as_ref()
            .map(|why| format!("{why}; restarts by itself once the store serves again"))
    }

    async fn command(&self, command: &str, args: Value) -> AdminResult {
        match command {
            "version" => Ok(json!({
                "release_version": RELEASE_VERSION,
                "peregrine_version": env!("CARGO_PKG_VERSION"),
            })),
            "statusbinary" => Ok(json!({
                "running": self.serving(),
                "stopped_because": self.stopped_because(),
            })),
            "enablebinary" => {
                self.binary.send_replace(true);
                Ok(json!({}))
            }
            "disablebinary" => {
                self.binary.send_replace(false);
                Ok(json!({}))
            }
            "drain" => {
                // Cassandra's drain: stop taking clients, then make everything durable.
                self.binary.send_replace(false);
                match self.backend.admin("flush".into(), json!({})).await {
                    // A proxy has nothing to flush: its data is the upstream's.
                    Err(e) if e.status != 409 => Err(e),
                    _ => Ok(json!({})),
                }
            }
            // Both wait for the old writer thread to write what is queued: off the runtime.
            "enableauditlog" => {
                let options = audit_options(self.audit.options(), &args)?;
                let audit = self.audit.clone();
                tokio::task::spawn_blocking(move || audit.enable(options))
                    .await
                    .map_err(|e| AdminError::failed(e.to_string()))?
                    .map_err(AdminError::failed)?;
                Ok(json!({}))
            }
            "disableauditlog" => {
                let audit = self.audit.clone();
                tokio::task::spawn_blocking(move || audit.disable())
                    .await
                    .map_err(|e| AdminError::failed(e.to_string()))?;
                Ok(json!({}))
            }
            "getauditlog" => Ok(self.audit.status()),
            "getlogginglevels" => {
                let levels = LOG_LEVELS.get().map(|l| l.levels()).unwrap_or_default();
                Ok(json!({ "levels": levels }))
            }
            "setlogginglevel" => {
                let Some(control) = LOG_LEVELS.get() else {
                    return Err(AdminError::not_here(
                        "log levels cannot be changed in this process",
                    ));
                };
                let logger = args["class"].as_str().unwrap_or("");
                let level = args["level"].as_str().unwrap_or("");
                control.set(logger, level).map_err(AdminError::bad)?;
                Ok(json!({}))
            }
            "info" | "status" => {
                let mut v = self.backend.admin(command.into(), args).await?;
                if let Value::Object(m) = &mut v {
                    m.insert(
                        "uptime_seconds".into(),
                        json!(self.started.elapsed().as_secs()),
                    );
                    m.insert("native_transport".into(), json!(self.serving()));
                    m.insert(
                        "native_transport_stopped_because".into(),
                        json!(self.stopped_because()),
                    );
                    m.insert("cluster_name".into(), json!(self.config.cluster_name));
                    m.insert("release_version".into(), json!(RELEASE_VERSION));
                    m.insert("address".into(), json!(self.config.listen.ip().to_string()));
                }
                Ok(v)
            }
            _ => self.backend.admin(command.into(), args).await,
        }
    }
}

/// `enableauditlog`'s options over the ones in force, as Cassandra's nodetool: each option
/// given replaces the configured value, the others stay.
fn audit_options(mut o: AuditLogOptions, args: &Value) -> Result<AuditLogOptions, AdminError> {
    let text = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_string);
    let number = |key: &str| -> Result<Option<u64>, AdminError> {
        match args.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| AdminError::bad(format!("`{key}` must be a whole number of bytes"))),
        }
    };
    if let Some(l) = text("logger") {
        o.logger = LoggerSpec::Name(l);
    }
    for (key, field) in [
        ("included_keyspaces", &mut o.included_keyspaces),
        ("excluded_keyspaces", &mut o.excluded_keyspaces),
        ("included_categories", &mut o.included_categories),
        ("excluded_categories", &mut o.excluded_categories),
        ("included_users", &mut o.included_users),
        ("excluded_users", &mut o.excluded_users),
        ("roll_cycle", &mut o.roll_cycle),
        ("archive_command", &mut o.archive_command),
    ] {
        if let Some(v) = text(key) {
            *field = v;
        }
    }
    if let Some(b) = args.get("block").and_then(Value::as_bool) {
        o.block = b;
    }
    if let Some(n) = number("max_log_size")? {
        o.max_log_size = n;
    }
    if let Some(n) = number("max_queue_weight")? {
        o.max_queue_weight = n;
    }
    if let Some(n) = number("max_archive_retries")? {
        o.max_archive_retries = u32::try_from(n).unwrap_or(u32::MAX);
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A command slower than the request timeout still answers (it used to run under the
    /// timer, which dropped the connection: `nodetool flush` of a large store printed "not an
    /// admin endpoint").
    #[tokio::test]
    async fn a_command_slower_than_the_request_timeout_still_answers() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let timeout = std::time::Duration::from_millis(50);
        // The request is in the server's socket before it starts reading, so only the
        // command can outlast the timeout, however slowly this test is scheduled.
        let mut client = TcpStream::connect(addr).await.unwrap();
        client
            .write_all(b"POST /nodetool/flush HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
            .await
            .unwrap();
        let (socket, _) = listener.accept().await.unwrap();
        let served = tokio::spawn(connection(socket, timeout, move |req| async move {
            tokio::time::sleep(timeout * 4).await;
            HttpResponse::json(200, json!({ "path": req.path }))
        }));
        let mut answer = String::new();
        client.read_to_string(&mut answer).await.unwrap();
        served.await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer:?}");
        assert!(
            answer.ends_with(r#"{"path":"/nodetool/flush"}"#),
            "{answer:?}"
        );
    }

    #[test]
    fn errors_carry_their_status() {
        assert_eq!(AdminError::bad("x").status, 400);
        assert_eq!(AdminError::unknown("bogus").status, 404);
        assert_eq!(AdminError::not_here("x").status, 409);
        assert_eq!(AdminError::failed("x").status, 500);
    }
}
