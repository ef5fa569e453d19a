//! The seam between the protocol front end and whatever executes requests.
//!
//! Two implementations: the `local` crate's `LocalBackend` (the embedded engine) and the
//! `proxy` crate's `ProxyBackend` in front of a Cassandra cluster. The front end owns framing, the handshake,
//! stream ids, compression and events; a backend only ever sees decoded requests of an
//! established connection (with the body bytes they were decoded from, `RequestFlags::body`,
//! for a backend that passes requests on) and returns one response per request
//! (`ResultBody::Encoded` for a RESULT body it already holds as bytes, written as is).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use proto::frame::{Compression, ProtocolVersion};
use proto::request::Request;
use proto::response::{Response, ResponseExtras};

/// The envelope flags of a request that a backend may honour.
#[derive(Debug, Clone, Default)]
pub struct RequestFlags {
    /// The client asked for tracing.
    pub tracing: bool,
    /// The request's custom payload (flag 0x04; v4+), for a backend that passes it on.
    pub custom_payload: Vec<(String, Option<bytes::Bytes>)>,
    /// The request's message body as the client sent it (decompressed, after the custom
    /// payload; a view into the received bytes, not a copy), in the connection's protocol
    /// version. A backend that passes the request on unchanged (the proxy) sends these bytes
    /// instead of encoding the decoded request again. Empty when there is none (a request a
    /// backend built itself).
    pub body: bytes::Bytes,
}

/// A response and what the envelope carries in front of its body.
#[derive(Debug)]
pub struct Reply {
    pub response: Response,
    /// Tracing session id and warnings (a proxy passes the upstream's through).
    pub extras: ResponseExtras,
}

impl From<Response> for Reply {
    fn from(response: Response) -> Self {
        Reply {
            response,
            extras: ResponseExtras::default(),
        }
    }
}

/// What [`Backend::handle_now`] did with a request; `C` is the backend's
/// [`Backend::Carry`].
pub enum Now<C> {
    /// Answered on the spot.
    Answered(Response),
    /// Needs waiting: the request goes to [`Backend::handle_here`] or [`Backend::handle`], with
    /// what `handle_now` learned of it (`C`) so that they need not work it out again.
    Later(Request, C),
    /// Answered on the spot, and the request also runs in the background through
    /// [`Backend::refresh`], with nobody waiting for its result (a cache hit whose entry is
    /// due for a refresh).
    AnsweredThenRefresh(Response, Request),
}

/// Executes the requests of established connections.
///
/// # Invariants
///
/// - `handle` is called only after the connection's STARTUP was answered with READY (or, once
///   authentication exists, during the AUTHENTICATE exchange for `AuthResponse`). It receives
///   QUERY, PREPARE, EXECUTE, BATCH and AUTH_RESPONSE; OPTIONS, STARTUP and REGISTER never reach
///   it.
/// - Calls run concurrently, also for one connection: the front end spawns each request as its
///   own task and answers in completion order. Nothing may assume requests of a connection
///   arrive one at a time.
/// - Every call returns exactly one response (a [`Reply`]); request errors are `Response::Error` with the
///   Cassandra code (a request error never closes the connection). `handle` must not panic; if
///   it does anyway, the client gets a ServerError on that stream and the connection lives on.
/// - `handle` should finish within `Config::request_timeout` and answer a timeout itself
///   (`ReadTimeout`/`WriteTimeout`, which need the consistency level only it knows); the front end
///   sets no per-request timer on the hot path.
/// - The backend does not touch `ConnState::set_keyspace`: when it answers
///   `Result(SetKeyspace(ks))` the front end records `ks` in the `ConnState` before the response
///   is sent, so requests the client sends after seeing the USE result observe it.
/// - When it answers `Result(SchemaChange(..))`, the front end pushes the matching EVENT to every
///   connection registered for `SCHEMA_CHANGE`, including the one that made the change.
/// - Long synchronous work (a large scan) should leave the async worker thread
///   (`tokio::task::spawn_blocking` or its own pool); a short point operation may run inline.
/// - `shutdown` is called once, after the listener stopped and in-flight requests finished (or
///   the grace period, `request_timeout`, ran out). It flushes whatever must be durable. No
///   `handle` call starts after it.
pub trait Backend: Send + Sync + 'static {
    /// What [`Backend::handle_now`] learned of a request it hands on ([`Now::Later`]), given to
    /// [`Backend::handle_here`] and [`Backend::handle`] with the request (the proxy: the cache
    /// key it made and the statement it looked up). `()` for a backend that learns nothing;
    /// the default `handle_now` hands on `Default::default()`.
    type Carry: Default + Send + 'static;

    /// Executes one request for the connection `conn`, with its envelope flags (`flags`: the
    /// tracing flag and custom payload, for a backend that passes them on; others ignore
    /// them), answering the response and the envelope extras to send in front of it
    /// (tracing session id, warnings, custom payload; empty for most backends).
    fn handle(
        &self,
        conn: &ConnState,
        req: Request,
        carry: Self::Carry,
        flags: RequestFlags,
    ) -> impl Future<Output = Reply> + Send;

    /// Answers `req` right away, on the connection's reader task, if that needs no waiting
    /// (a cache hit); otherwise hands it back ([`Now::Later`]) and the front end runs
    /// [`Backend::handle`] in a task of its own. Called for every request `handle` would get,
    /// before it. Must be quick and must not block; the same invariants as `handle`
    /// otherwise.
    fn handle_now(
        &self,
        _conn: &ConnState,
        req: Request,
        _flags: &RequestFlags,
    ) -> Now<Self::Carry> {
        Now::Later(req, Self::Carry::default())
    }

    /// Runs `req` to completion on the connection's reader and answers it, when the front end
    /// would run it there anyway (the last request read of its batch, or every request with
    /// thread per core) and it needs no waiting (a standalone point read or write): no future
    /// is built for it. Otherwise hands it back (`Err`), with what it carried, for
    /// [`Backend::handle`]. Must not block; the same invariants as `handle` otherwise.
    /// Requests read before the last of a batch are not offered here: they stay tasks, which
    /// another worker may take and whose answers go out as each is done.
    // The request handed back is `Now::Later`'s, by value as there.
    #[allow(clippy::result_large_err)]
    fn handle_here(
        &self,
        _conn: &ConnState,
        req: Request,
        carry: Self::Carry,
        _flags: &RequestFlags,
    ) -> Result<Reply, (Request, Self::Carry)> {
        Err((req, carry))
    }

    /// Runs a request [`Backend::handle_now`] already answered ([`Now::AnsweredThenRefresh`])
    /// again in the background; its result goes nowhere. Same invariants as `handle`.
    fn refresh(&self, _conn: &ConnState, _req: Request) -> impl Future<Output = ()> + Send {
        async {}
    }

    /// The authenticator class to answer STARTUP with (`Response::Authenticate`), or `None` to
    /// answer READY. When `Some`, the backend
    /// receives the client's AUTH_RESPONSE in `handle`, answers AUTH_SUCCESS (after
    /// `ConnState::set_role`) or an error, and must itself refuse other requests of a
    /// connection whose role is not set yet. Asked once per connection, at STARTUP.
    fn authenticator(&self) -> Option<String> {
        None
    }

    /// Why the backend cannot serve at all right now (its store failed and is reopening, under
    /// `disk_failure_policy: stop`), or `None` while it can. The front end polls it (every
    /// 100 ms) and closes the CQL port and its connections while it
    /// says why, as Cassandra's `stop` policy stops its transports; it opens the port again
    /// when it answers `None`. Must be cheap and must not block.
    fn unavailable(&self) -> Option<String> {
        None
    }

    /// Flushes and releases resources before the process exits.
    fn shutdown(&self) -> impl Future<Output = ()> + Send {
        async {}
    }

    /// Runs the `nodetool` command `command` with its JSON arguments (see `crate::admin`);
    /// answers a JSON object for the CLI to print. Commands that do not apply to this mode
    /// answer `AdminError::not_here` saying why; unknown ones `AdminError::unknown`.
    fn admin(
        &self,
        command: String,
        _args: serde_json::Value,
    ) -> impl Future<Output = crate::admin::AdminResult> + Send {
        async move { Err(crate::admin::AdminError::unknown(&command)) }
    }

    /// The text of the prepared statement `id`, for the audit log's EXECUTE and BATCH entries
    /// (called only while the audit log is on). `None` (the default): unknown, and the
    /// execution is logged only if it fails.
    fn audit_prepared(&self, _id: &[u8]) -> Option<String> {
        None
    }

    /// Appends the backend's own metrics (storage, cache) to a `/metrics` scrape.
    fn export_metrics(&self, _out: &mut crate::metrics::Exposition) {}
}

/// What is known about one client connection once its STARTUP succeeded.
///
/// Shared (`Arc`) between the connection's reader and its in-flight requests; the mutable parts
/// use a per-connection mutex (never contended across connections, so no global lock).
#[derive(Debug)]
pub struct ConnState {
    id: u64,
    version: ProtocolVersion,
    client_addr: SocketAddr,
    compression: Option<Compression>,
    startup_options: Vec<(String, String)>,
    keyspace: Mutex<Option<Arc<str>>>,
    role: Mutex<Option<Arc<str>>>,
    /// TLS protocol and cipher suite of an encrypted connection (`system_views.clients`).
    tls: Option<(String, String)>,
    /// Requests this connection sent (`system_views.clients.request_count`).
    requests: AtomicU64,
    /// Requests running now (`system_views.queries`); per connection, so never contended
    /// across connections.
    running: Mutex<Vec<Running>>,
}

/// A request running on a connection, as `system_views.queries` shows it.
#[derive(Debug, Clone)]
pub struct Running {
    pub stream: i16,
    /// When the request was read, and when its execution started.
    pub read_at: Instant,
    pub started_at: Instant,
    pub task: Task,
}

/// What a running request is (described only when someone reads `system_views.queries`).
#[derive(Debug, Clone)]
pub enum Task {
    Query(Arc<str>),
    Execute(bytes::Bytes),
    Prepare(Arc<str>),
    Batch,
    Other(&'static str),
}

impl std::fmt::Display for Task {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Task::Query(q) => write!(f, "QUERY {q}"),
            Task::Prepare(q) => write!(f, "PREPARE {q}"),
            Task::Execute(id) => {
                write!(f, "EXECUTE ")?;
                id.iter().try_for_each(|b| write!(f, "{b:02x}"))
            }
            Task::Batch => write!(f, "BATCH"),
            Task::Other(op) => write!(f, "{op}"),
        }
    }
}

/// Removes a request from its connection's running list when dropped.
pub struct RunningGuard<'a> {
    conn: &'a ConnState,
    stream: i16,
}

impl Drop for RunningGuard<'_> {
    fn drop(&mut self) {
        let mut running = self
            .conn
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(i) = running.iter().position(|r| r.stream == self.stream) {
            running.swap_remove(i);
        }
    }
}

impl Drop for ConnState {
    fn drop(&mut self) {
        crate::clients::forget(self.id);
    }
}

impl ConnState {
    /// A connection state as the front end builds it after STARTUP; public for backend tests.
    pub fn new(
        id: u64,
        version: ProtocolVersion,
        client_addr: SocketAddr,
        compression: Option<Compression>,
        startup_options: Vec<(String, String)>,
    ) -> Self {
        ConnState {
            id,
            version,
            client_addr,
            compression,
            startup_options,
            keyspace: Mutex::new(None),
            role: Mutex::new(None),
            tls: None,
            requests: AtomicU64::new(0),
            running: Mutex::new(Vec::new()),
        }
    }

    /// The same, for a TLS connection with this (protocol, cipher suite).
    pub fn with_tls(mut self, tls: Option<(String, String)>) -> Self {
        self.tls = tls;
        self
    }

    /// TLS protocol and cipher suite, if the connection is encrypted.
    pub fn tls(&self) -> Option<&(String, String)> {
        self.tls.as_ref()
    }

    /// Requests received on this connection after STARTUP.
    pub fn request_count(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Records a request that starts running; it leaves the list when the guard drops.
    pub fn begin_request(&self, stream: i16, read_at: Instant, task: Task) -> RunningGuard<'_> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Running {
                stream,
                read_at,
                started_at: Instant::now(),
                task,
            });
        RunningGuard { conn: self, stream }
    }

    /// The requests running now.
    pub fn running(&self) -> Vec<Running> {
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Process-unique connection number (for logs and `system_views.clients`).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The protocol version negotiated for this connection; fixed for its lifetime.
    pub fn version(&self) -> ProtocolVersion {
        self.version
    }

    /// The client's address.
    pub fn client_addr(&self) -> SocketAddr {
        self.client_addr
    }

    /// The compression chosen at STARTUP (v4: per envelope body; v5: per segment, LZ4 only).
    pub fn compression(&self) -> Option<Compression> {
        self.compression
    }

    /// The STARTUP options as the client sent them (CQL_VERSION, DRIVER_NAME, ...).
    pub fn startup_options(&self) -> &[(String, String)] {
        &self.startup_options
    }

    /// One STARTUP option by exact name.
    pub fn startup_option(&self, name: &str) -> Option<&str> {
        self.startup_options
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The current keyspace (`USE ks`), if any. Cheap: clones an `Arc`.
    pub fn keyspace(&self) -> Option<Arc<str>> {
        self.keyspace
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Sets the current keyspace. The front end calls this on `Result(SetKeyspace)`.
    pub fn set_keyspace(&self, keyspace: &str) {
        let mut ks = self.keyspace.lock().unwrap_or_else(PoisonError::into_inner);
        if ks.as_deref() != Some(keyspace) {
            *ks = Some(Arc::from(keyspace));
        }
    }

    /// The authenticated role, if authentication happened.
    pub fn role(&self) -> Option<Arc<str>> {
        self.role
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Calls `f` with the authenticated role, without taking a reference to it (the hot path's
    /// form of [`ConnState::role`]).
    pub fn with_role<T>(&self, f: impl FnOnce(Option<&str>) -> T) -> T {
        f(self
            .role
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_deref())
    }

    /// Records the authenticated role (called by the backend that checked the credentials).
    pub fn set_role(&self, role: &str) {
        *self.role.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::from(role));
    }
}
