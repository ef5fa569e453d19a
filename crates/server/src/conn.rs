//! One client connection: the read loop, the handshake, and dispatch of requests.
//!
//! ```text
//!   socket ─▶ reader (this task): envelopes, or v5 segments after STARTUP
//!               ├─ OPTIONS / STARTUP / REGISTER: answered inline, in order
//!               └─ QUERY / PREPARE / EXECUTE / BATCH / AUTH_RESPONSE: decoded here, then
//!                    Backend::handle_now (answered inline: a proxy cache hit, whose
//!                    refresh, when due, runs in a task ─▶ Backend::refresh)
//!                    or one tokio task each ─▶ Backend::handle
//!   every answer ─▶ mpsc ─▶ writer task (writer.rs) ─▶ socket
//! ```
//!
//! A request body that does not decode costs the connection nothing: that stream gets a
//! ProtocolError and the connection goes on. Framing errors (bad version, unknown opcode,
//! oversize, corrupt segment) are answered with a ProtocolError and close the connection, since
//! nothing after them can be trusted. Before STARTUP only OPTIONS and STARTUP are accepted, as in Cassandra.

use std::future::Future;
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::time::Instant;

use bytes::BytesMut;
use proto::deframe::Deframer;
use proto::error::{DbError, FrameError};
use proto::frame::{Compression, Envelope, Opcode, ProtocolVersion};
use proto::request::Request;
use proto::response::{Event, Response, ResponseExtras, ResultBody};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio_util::sync::CancellationToken;

use crate::backend::{Backend, ConnState, Now, Reply, RequestFlags, Task};
use crate::config::Config;
use crate::events::{EventBus, EventKinds};
use crate::limits::{Address, Admitted, Limits};
use crate::metrics;
use crate::response::{
    encode, encode_answer, encode_response, envelope_header, legacy_error, Encoded,
};
use crate::streams::{InFlight, Refused};
use crate::writer::{self, Out, OutTx};

/// Read buffer growth step.
const READ_CHUNK: usize = 64 * 1024;
/// After a fatal error, how long unread input is drained so closing sends FIN, not RST (an RST
/// can make the client drop the error frame it has not read yet).
const DRAIN_AFTER_ERROR: Duration = Duration::from_millis(500);

/// The CQL version this server implements (SUPPORTED's CQL_VERSION).
pub const CQL_VERSION: &str = "3.4.7";

/// What every connection shares.
pub(crate) struct Shared<B> {
    pub(crate) config: Config,
    pub(crate) backend: Arc<B>,
    pub(crate) events: EventBus,
    pub(crate) limits: Arc<Limits>,
    /// The audit log; off by default, and then one atomic load per request.
    pub(crate) audit: Arc<crate::audit::AuditLog>,
}

/// Per-connection state shared with the connection's request tasks (one `Arc` clone per
/// request). Holds a sender: the writer ends once the reader and every request task dropped
/// theirs.
struct Session<B> {
    shared: Arc<Shared<B>>,
    conn: Arc<ConnState>,
    in_flight: InFlight,
    tx: OutTx,
    /// The client address's share of the node's limits.
    address: Arc<Address>,
    /// STARTUP asked for `THROW_ON_OVERLOAD`: over the request-bytes bound, answer Overloaded
    /// instead of pausing the connection.
    throw_on_overload: bool,
}

enum State<B> {
    /// Before a successful STARTUP.
    Unstarted,
    Established(Arc<Session<B>>),
}

/// Why the read loop ended.
enum Ending {
    /// EOF, read error, writer gone, or server shutdown.
    Quiet,
    /// A fatal protocol error was answered; drain input before closing.
    Fatal,
}

struct Reader<B> {
    shared: Arc<Shared<B>>,
    id: u64,
    addr: SocketAddr,
    tx: OutTx,
    /// Fixed by the first envelope.
    version: Option<ProtocolVersion>,
    state: State<B>,
    /// Envelopes, or v5 segments after STARTUP, bounded by `max_frame_bytes`.
    deframer: Deframer,
    registered: EventKinds,
    admitted: Admitted,
    /// When the handshake must be done by (`handshake_timeout` after the accept).
    handshake_deadline: Instant,
    /// STARTUP was answered AUTHENTICATE: the handshake ends when a role is set.
    needs_login: bool,
    /// The handshake was seen done (it stays done: checked without the role's lock from then).
    handshaken: bool,
    /// When the last read returned bytes: the idle timer's start, and when the requests
    /// decoded from those bytes were read (one clock read per read, not per request).
    read_at: Instant,
    /// TLS protocol and cipher suite (for `system_views.clients`).
    tls: Option<(String, String)>,
}

/// One accepted connection's identity and bounds, fixed at the accept.
pub(crate) struct Accepted {
    pub(crate) addr: SocketAddr,
    pub(crate) id: u64,
    pub(crate) admitted: Admitted,
    /// `handshake_timeout` after the accept: it covers the TLS handshake too.
    pub(crate) handshake_deadline: Instant,
    /// TLS protocol and cipher suite, on an encrypted connection.
    pub(crate) tls: Option<(String, String)>,
}

/// Serves one accepted connection (its read and write halves, plain or TLS) until it closes
/// or `shutdown` fires, then waits for its in-flight requests to be answered.
pub(crate) async fn serve<B, R, W>(
    shared: Arc<Shared<B>>,
    (mut rd, wr): (R, W),
    accepted: Accepted,
    shutdown: CancellationToken,
) where
    B: Backend,
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let Accepted {
        addr,
        id,
        admitted,
        handshake_deadline,
        tls,
    } = accepted;
    let backlog = usize::try_from(shared.config.max_response_backlog_bytes).unwrap_or(usize::MAX);
    let (tx, rx) = writer::channel(backlog);
    let closed = CancellationToken::new();
    let writer = tokio::spawn(writer::run(wr, rx, closed.clone()));
    let deframer = Deframer::new(shared.config.max_frame_bytes);
    let mut reader = Reader {
        shared,
        id,
        addr,
        tx,
        version: None,
        state: State::Unstarted,
        deframer,
        registered: EventKinds::default(),
        admitted,
        handshake_deadline,
        needs_login: false,
        handshaken: false,
        read_at: Instant::now(),
        tls,
    };
    let ending = reader.run(&mut rd, &shutdown, &closed).await;
    drop(reader);
    let _ = writer.await;
    if let Ending::Fatal = ending {
        let mut sink = vec![0u8; 8192];
        let drain = async { while matches!(rd.read(&mut sink).await, Ok(n) if n > 0) {} };
        let _ = tokio::time::timeout(DRAIN_AFTER_ERROR, drain).await;
    }
    tracing::debug!("connection {id} from {addr} closed");
}

impl<B: Backend> Reader<B> {
    async fn run<R: AsyncRead + Unpin>(
        &mut self,
        rd: &mut R,
        shutdown: &CancellationToken,
        closed: &CancellationToken,
    ) -> Ending {
        let mut buf = BytesMut::with_capacity(READ_CHUNK);
        let idle = self.shared.config.native_transport_idle_timeout;
        loop {
            loop {
                match self.next_envelope(&mut buf) {
                    Ok(Some(env)) => {
                        if self.is_request(&env)
                            && self.must_wait()
                            && !self.room(shutdown, closed).await
                        {
                            return Ending::Quiet;
                        }
                        // The last request read so far runs on this reader when it never
                        // waits (`dispatch`): nothing else of this connection's is there to
                        // go on with meanwhile.
                        if let Err(ending) = self.on_envelope(env, buf.is_empty()) {
                            return ending;
                        }
                    }
                    Ok(None) => break,
                    Err(ending) => return ending,
                }
            }
            // The buffer grows as bytes arrive (amortized doubling), never to a length a
            // header only announces.
            if buf.capacity() - buf.len() < READ_CHUNK / 4 {
                buf.reserve(READ_CHUNK);
            }
            let timer = self.next_deadline(idle);
            tokio::select! {
                biased;
                _ = shutdown.cancelled() => return Ending::Quiet,
                _ = closed.cancelled() => return Ending::Quiet,
                r = rd.read_buf(&mut buf) => match r {
                    Ok(0) => {
                        if !buf.is_empty() {
                            tracing::debug!(
                                "connection {} closed by the client with {} bytes of an incomplete frame",
                                self.id, buf.len()
                            );
                        }
                        return Ending::Quiet;
                    }
                    Ok(n) => {
                        metrics::global().bytes_received_total.add(n as u64);
                        self.read_at = Instant::now();
                    }
                    Err(e) => {
                        tracing::debug!("connection {} read failed: {e}", self.id);
                        return Ending::Quiet;
                    }
                },
                _ = sleep_until_some(timer) => {
                    let now = Instant::now();
                    if !self.handshake_done() && now >= self.handshake_deadline {
                        tracing::debug!(
                            "connection {} from {} closed: no handshake within {:?} (handshake_timeout)",
                            self.id, self.addr, self.shared.config.handshake_timeout
                        );
                        return Ending::Quiet;
                    }
                    if !idle.is_zero() && now >= self.read_at + idle {
                        if self.requests_in_flight() {
                            self.read_at = now;
                        } else {
                            tracing::debug!(
                                "connection {} from {} closed: idle for {idle:?} (native_transport_idle_timeout)",
                                self.id, self.addr
                            );
                            return Ending::Quiet;
                        }
                    }
                }
            }
        }
    }

    /// When the reader must look at the clock again: the handshake deadline while the
    /// handshake is not done, and the idle deadline when `native_transport_idle_timeout` is on.
    fn next_deadline(&mut self, idle: Duration) -> Option<Instant> {
        let handshake = (!self.handshake_done()).then_some(self.handshake_deadline);
        let idle = (!idle.is_zero()).then(|| self.read_at + idle);
        match (handshake, idle) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// STARTUP answered READY, or AUTHENTICATE followed by a successful login.
    fn handshake_done(&mut self) -> bool {
        if !self.handshaken {
            self.handshaken = match &self.state {
                State::Unstarted => false,
                State::Established(s) => !self.needs_login || s.conn.with_role(|r| r.is_some()),
            };
        }
        self.handshaken
    }

    fn requests_in_flight(&self) -> bool {
        matches!(&self.state, State::Established(s) if s.in_flight.count() > 0)
    }

    /// A request the backend will run (what counts against the limits).
    fn is_request(&self, env: &Envelope) -> bool {
        matches!(self.state, State::Established(_))
            && !matches!(
                env.opcode,
                Opcode::Options | Opcode::Startup | Opcode::Register
            )
    }

    /// True while the connection's unsent answers or the request bytes of the node or of this
    /// client address are over their bounds (checked before each request without building
    /// [`Reader::room`]'s future, which waits for them to drop).
    fn must_wait(&self) -> bool {
        let State::Established(s) = &self.state else {
            return false;
        };
        // A THROW_ON_OVERLOAD client is answered Overloaded instead of paused (dispatch).
        s.tx.backlogged() || (!s.throw_on_overload && self.shared.limits.over(&s.address))
    }

    /// Waits while [`Reader::must_wait`]; false if the connection ends meanwhile.
    async fn room(&self, shutdown: &CancellationToken, closed: &CancellationToken) -> bool {
        let State::Established(s) = &self.state else {
            return true;
        };
        let limits = &self.shared.limits;
        while self.must_wait() {
            tokio::select! {
                biased;
                _ = shutdown.cancelled() => return false,
                _ = closed.cancelled() => return false,
                _ = async {
                    s.tx.room().await;
                    if !s.throw_on_overload {
                        limits.room(&s.address).await;
                    }
                } => {}
            }
        }
        true
    }

    /// The next complete envelope, `Ok(None)` when more bytes are needed, `Err` after a fatal
    /// error was answered.
    fn next_envelope(&mut self, buf: &mut BytesMut) -> Result<Option<Envelope>, Ending> {
        if !self.deframer.segmented() {
            // Before decoding (the header may not be complete yet), as Cassandra does: a
            // version we do not speak, or not the connection's, is answered at once.
            let Some(&first) = buf.first() else {
                return Ok(None);
            };
            let num = first & 0x7f;
            match self.version {
                None if ProtocolVersion::from_u8(num).is_none() => {
                    return self.unsupported_version(num, buf).map(|()| None);
                }
                Some(v) if v.as_u8() != num => {
                    let stream = if buf.len() >= 4 {
                        i16::from_be_bytes([buf[2], buf[3]])
                    } else {
                        0
                    };
                    return Err(self.fatal(
                        stream,
                        format!(
                            "Invalid message version. Got {num} but previous messages on this connection had version {}",
                            v.as_u8()
                        ),
                    ));
                }
                _ => {}
            }
        }
        match self.deframer.next_envelope(buf) {
            Ok(Some(env)) => {
                let env = self.check_version(env)?;
                self.version.get_or_insert(env.version);
                Ok(Some(env))
            }
            Ok(None) => Ok(None),
            Err(e) => Err(self.fatal_frame_error(e)),
        }
    }

    fn check_version(&mut self, env: Envelope) -> Result<Envelope, Ending> {
        match self.version {
            Some(v) if v != env.version => Err(self.fatal(
                env.stream,
                format!(
                    "Invalid message version. Got {} but previous messages on this connection had version {}",
                    env.version.as_u8(),
                    v.as_u8()
                ),
            )),
            _ => Ok(env),
        }
    }

    /// Answers a first envelope in a version we do not speak the way Cassandra does: in the
    /// client's own version if it is an old one (v1/v2), else in the highest we support, so the
    /// driver can read the error and retry with a lower version. Then closes.
    fn unsupported_version(&mut self, num: u8, buf: &BytesMut) -> Result<(), Ending> {
        let message = FrameError::UnsupportedVersion { version: num }.to_string();
        tracing::debug!("connection {} from {}: {message}", self.id, self.addr);
        let frame = if num == 1 || num == 2 {
            // v1/v2 header: version, flags, stream (1 byte), opcode, length.
            if buf.len() < 3 {
                return Ok(());
            }
            legacy_error(num, buf[2] as i8, 0x000A, &message)
        } else {
            if buf.len() < 4 {
                return Ok(());
            }
            let stream = i16::from_be_bytes([buf[2], buf[3]]);
            let resp = Response::Error(DbError::protocol(message));
            encode(ProtocolVersion::MAX, None, stream, &resp)
        };
        self.tx.frame(frame);
        Err(Ending::Fatal)
    }

    fn fatal_frame_error(&mut self, e: FrameError) -> Ending {
        let stream = e.stream().unwrap_or(0);
        self.fatal(stream, e.to_string())
    }

    /// Answers a connection-level protocol error and ends the read loop.
    fn fatal(&mut self, stream: i16, message: String) -> Ending {
        tracing::debug!(
            "connection {} from {}: protocol error, closing: {message}",
            self.id,
            self.addr
        );
        self.reply(stream, &Response::Error(DbError::protocol(message)));
        Ending::Fatal
    }

    /// Sends a response the reader produced itself, in the connection's current framing.
    fn reply(&self, stream: i16, resp: &Response) {
        let frame = match &self.state {
            State::Established(s) => encode_response(&s.conn, stream, resp),
            State::Unstarted => encode(
                self.version.unwrap_or(ProtocolVersion::MAX),
                None,
                stream,
                resp,
            ),
        };
        self.tx.frame(frame);
    }

    /// One envelope read; `last`: no more bytes of this connection's are buffered.
    fn on_envelope(&mut self, env: Envelope, last: bool) -> Result<(), Ending> {
        let session = match &self.state {
            State::Established(s) => Some(s.clone()),
            State::Unstarted => None,
        };
        match (session, env.opcode) {
            (_, Opcode::Options) => self.reply(env.stream, &supported()),
            (None, Opcode::Startup) => self.startup(env),
            (Some(_), Opcode::Startup) => self.reply(
                env.stream,
                &Response::Error(DbError::protocol(
                    "Unexpected message STARTUP, the connection is already initialized",
                )),
            ),
            (None, op) => self.reply(
                env.stream,
                &Response::Error(DbError::protocol(format!(
                    "Unexpected message {}, expecting STARTUP or OPTIONS",
                    opcode_name(op)
                ))),
            ),
            (Some(s), Opcode::Register) => self.register(&s, env),
            (Some(s), _) => dispatch(s, env, self.read_at, last),
        }
        Ok(())
    }

    fn startup(&mut self, env: Envelope) {
        let version = env.version;
        let options = match Request::from_envelope(&env).map(|d| d.request) {
            Ok(Request::Startup(options)) => options,
            Ok(_) => return self.reply(env.stream, &protocol_error("Expected a STARTUP body")),
            Err(e) => return self.reply(env.stream, &Response::Error(e)),
        };
        let compression = match check_startup(version, &options) {
            Ok(c) => c,
            Err(e) => return self.reply(env.stream, &Response::Error(e)),
        };
        let throw_on_overload = options
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("THROW_ON_OVERLOAD") && v == "1");
        let conn = Arc::new(
            ConnState::new(self.id, version, self.addr, compression, options)
                .with_tls(self.tls.clone()),
        );
        crate::clients::register(&conn);
        // The backend that checks credentials names its authenticator (the local one with
        // PasswordAuthenticator, the proxy when its upstream asks for a login).
        let answer = match self.shared.backend.authenticator() {
            Some(class) => Response::Authenticate(class),
            None => Response::Ready,
        };
        self.needs_login = matches!(answer, Response::Authenticate(_));
        // READY / AUTHENTICATE goes out uncompressed and unframed; both sides switch after it.
        self.tx.frame(encode(version, None, env.stream, &answer));
        if version >= ProtocolVersion::V5 {
            let compressed = compression.is_some();
            self.tx.control(Out::StartSegments { compressed });
            self.deframer.start_segments(compressed);
        } else {
            // v3/v4 bodies are compressed from the next envelope on.
            self.deframer.set_body_compression(compression);
        }
        tracing::debug!(
            "connection {} from {} established: protocol v{}, compression {}",
            self.id,
            self.addr,
            version.as_u8(),
            compression.map_or("none", Compression::name)
        );
        self.state = State::Established(Arc::new(Session {
            shared: self.shared.clone(),
            conn,
            in_flight: InFlight::new(self.shared.config.max_streams_per_connection),
            tx: self.tx.clone(),
            address: self.admitted.address().clone(),
            throw_on_overload,
        }));
    }

    fn register(&mut self, session: &Arc<Session<B>>, env: Envelope) {
        let names = match Request::from_envelope(&env).map(|d| d.request) {
            Ok(Request::Register(names)) => names,
            Ok(_) => return self.reply(env.stream, &protocol_error("Expected a REGISTER body")),
            Err(e) => return self.reply(env.stream, &Response::Error(e)),
        };
        let mut kinds = EventKinds::default();
        for name in &names {
            match EventKinds::from_name(name) {
                Some(k) => kinds = kinds.union(k),
                None => {
                    let msg = format!("Invalid value '{name}' for Type");
                    return self.reply(env.stream, &protocol_error(msg));
                }
            }
        }
        if !kinds.is_empty() {
            let first = self.registered.is_empty();
            self.registered = self.registered.union(kinds);
            // Subscribing here, before READY is queued, means every event published after the
            // client sees READY reaches it.
            self.tx.control(Out::Register {
                kinds,
                events: first.then(|| self.shared.events.subscribe()),
                conn: session.conn.clone(),
            });
        }
        self.reply(env.stream, &Response::Ready);
    }
}

/// Hands one request, read at `read_at`, to the backend: answered on the spot, run to
/// completion here when it never waits (thread per core, or `last`: no other request of the
/// connection is buffered behind it), else in a task of its own.
#[allow(clippy::result_large_err)] // `Backend::handle_here` hands a request back by value
fn dispatch<B: Backend>(session: Arc<Session<B>>, env: Envelope, read_at: Instant, last: bool) {
    let stream = env.stream;
    match session.in_flight.acquire(stream) {
        Ok(()) => {}
        Err(refused) => {
            let err = match refused {
                Refused::Busy if stream < 0 => DbError::protocol(format!(
                    "Invalid stream id {stream}: negative stream ids are reserved for server events"
                )),
                Refused::Busy => DbError::protocol(format!(
                    "Stream id {stream} is already in use by a request in flight"
                )),
                Refused::TooMany => DbError::Overloaded {
                    message: format!(
                        "Too many requests in flight on this connection (max_streams_per_connection is {})",
                        session.shared.config.max_streams_per_connection
                    ),
                },
            };
            let frame = encode_response(&session.conn, stream, &Response::Error(err));
            session.tx.frame(frame);
            return;
        }
    }
    let bytes = env.body.len() as u64;
    metrics::global().streams_in_flight.add(1);
    let mut pending = Pending {
        session,
        stream,
        answered: false,
        bytes: 0,
        running: false,
        started: read_at,
        opcode: opcode_metric(env.opcode),
        audit: None,
    };
    let (req, flags) = match Request::from_envelope(&env) {
        Ok(decoded) => (
            decoded.request,
            RequestFlags {
                tracing: decoded.tracing,
                custom_payload: decoded.custom_payload,
                body: decoded.body,
            },
        ),
        Err(e) => return pending.finish(Response::Error(e).into()),
    };
    drop(env);
    let s = &*pending.session;
    if s.shared.audit.is_on() {
        let backend = &s.shared.backend;
        pending.audit = s
            .shared
            .audit
            .begin(&s.conn, &req, |id| backend.audit_prepared(id))
            .map(Box::new);
    }
    // A panic in the backend is kept off the connection's reader, as a task's would be:
    // `pending`, dropped unanswered, answers ServerError.
    let now = match catch_unwind(AssertUnwindSafe(|| {
        s.shared.backend.handle_now(&s.conn, req, &flags)
    })) {
        Ok(now) => now,
        Err(_) => return,
    };
    match now {
        Now::Answered(resp) => pending.finish(resp.into()),
        Now::AnsweredThenRefresh(resp, req) => {
            let session = pending.session.clone();
            pending.finish(resp.into());
            tokio::spawn(async move { session.shared.backend.refresh(&session.conn, req).await });
        }
        Now::Later(req, carry) => {
            // Request bytes count from here until the answer goes to the writer (limits.rs);
            // one answered on the spot (a proxy cache hit) is never held, so it is not counted.
            let limits = &s.shared.limits;
            if !s.throw_on_overload {
                limits.take(&s.address, bytes);
            } else if !limits.try_take(&s.address, bytes) {
                let err = DbError::Overloaded {
                    message:
                        "Server is in overloaded state. Cannot accept more requests at this point"
                            .to_string(),
                };
                return pending.finish(Response::Error(err).into());
            }
            pending.bytes = bytes;
            // Thread per core (cores.rs): every request runs on its connection's thread. On the
            // work-stealing runtime, requests buffered behind this one run as tasks, which other
            // workers may take; the last one read runs here, where its task would most likely
            // run anyway (tokio keeps a task spawned by a task on the same worker). Running the
            // others here too, even on a runtime of one worker, costs throughput: the answers
            // wait for the whole batch before the writer sends any, so client and server take
            // turns (YCSB C on one core: 0.75x the reads a second for 1.06x the reads per CPU
            // second, bench/results/2026-12-01/session-ab-s33).
            if s.shared.config.thread_per_core || last {
                // Kept off the reader as below: unanswered, `pending` answers ServerError.
                let (req, carry) = match catch_unwind(AssertUnwindSafe(|| {
                    s.shared.backend.handle_here(&s.conn, req, carry, &flags)
                })) {
                    Ok(Ok(reply)) => return pending.finish(reply),
                    Ok(Err(handed_back)) => handed_back,
                    Err(_) => return,
                };
                // The request runs to completion on this thread when it never waits (a point
                // read or write executes inline in the backend), with no task of its own; one
                // that waits becomes a task.
                let mut task = Box::pin(pending.run(req, carry, flags));
                let mut cx = Context::from_waker(Waker::noop());
                // A panic in the backend is kept off the connection's reader, as a task's
                // would be: dropping the task answers ServerError (`Pending`'s Drop).
                match catch_unwind(AssertUnwindSafe(|| task.as_mut().poll(&mut cx))) {
                    Ok(Poll::Ready(())) | Err(_) => {}
                    // The task's first poll registers its own waker (a future re-registers
                    // on every poll), so the noop one above is never the one woken.
                    Ok(Poll::Pending) => {
                        tokio::spawn(task);
                    }
                }
            } else {
                // Boxed: spawned whole, the task's future (over 700 bytes) was copied by
                // `spawn`, by the task cell's constructor and again when its output replaced
                // it (~900 instructions of memcpy a request); a box costs one allocation.
                tokio::spawn(Box::pin(pending.run(req, carry, flags)));
            }
        }
    }
}

/// One request in flight. If its task ends without answering (a panic in the backend), `Drop`
/// answers ServerError so the client's stream is not lost.
struct Pending<B: Backend> {
    session: Arc<Session<B>>,
    stream: i16,
    answered: bool,
    /// Request bytes taken from the limits, given back with the answer.
    bytes: u64,
    /// Counted as running against the connection's backlog (`OutTx::start_request`).
    running: bool,
    /// When the request was read, and its opcode's index in `metrics::OPCODES`.
    started: Instant,
    opcode: usize,
    /// The request's audit log entry, while the audit log is on (boxed: one word in every
    /// request's task when it is off).
    audit: Option<Box<crate::audit::Pending>>,
}

impl<B: Backend> Pending<B> {
    async fn run(mut self, req: Request, carry: B::Carry, flags: RequestFlags) {
        // A request waits here while its connection's unread answers and running requests
        // are over the backlog bound, so a pipelining client that never reads cannot make the
        // node build answers without bound.
        if !self.session.tx.start_request().await {
            // The client is gone: nobody can receive the answer; the request does not run.
            self.answered = true;
            metrics::global().streams_in_flight.add(-1);
            let s = &*self.session;
            s.shared
                .limits
                .give(&s.address, std::mem::take(&mut self.bytes));
            s.in_flight.release(self.stream);
            return;
        }
        self.running = true;
        let s = &*self.session;
        // Boxed: the backend's future is large (over 1 KB) and this task's future would
        // otherwise hold it inline, copied whole each time the task is built and moved
        // (about a dozen copies per request); a box costs one allocation.
        let task = match &req {
            Request::Query(q) => Task::Query(Arc::from(q.query.as_str())),
            Request::Execute(e) => Task::Execute(e.id.clone()),
            Request::Prepare(p) => Task::Prepare(Arc::from(p.query.as_str())),
            Request::Batch(_) => Task::Batch,
            _ => Task::Other("AUTH_RESPONSE"),
        };
        let running = s
            .conn
            .begin_request(self.stream, self.started.into_std(), task);
        let reply = Box::pin(s.shared.backend.handle(&s.conn, req, carry, flags)).await;
        drop(running);
        self.finish(reply);
    }

    /// Applies what the response changes on the connection, then answers.
    fn finish(mut self, reply: Reply) {
        let Reply {
            response: resp,
            extras,
        } = reply;
        if let Response::Result(result) = &resp {
            match result {
                ResultBody::SetKeyspace(ks) => self.session.conn.set_keyspace(ks),
                ResultBody::SchemaChange(change) => self
                    .session
                    .shared
                    .events
                    .publish(Event::SchemaChange(change.clone())),
                _ => {}
            }
        }
        if let Some(audit) = self.audit.take() {
            audit.finish(&self.session.conn, &resp);
        }
        self.answer(resp, &extras);
    }

    fn answer(&mut self, resp: Response, extras: &ResponseExtras) {
        self.answered = true;
        let m = metrics::global();
        m.streams_in_flight.add(-1);
        m.request(self.opcode, self.started.elapsed());
        if let Response::Error(e) = &resp {
            m.error(e.code());
        }
        let s = &*self.session;
        s.shared
            .limits
            .give(&s.address, std::mem::take(&mut self.bytes));
        // A body encoded earlier goes to the writer as is (no copy into a new envelope)
        // unless v3/v4 body compression or extras have to change the envelope.
        let plain = (s.conn.compression().is_none() || s.conn.version() >= ProtocolVersion::V5)
            && extras.tracing_id.is_none()
            && extras.warnings.is_empty();
        match resp {
            Response::Result(ResultBody::Encoded(body)) if plain => {
                let header =
                    envelope_header(s.conn.version(), self.stream, Opcode::Result, body.len());
                s.in_flight.release(self.stream);
                m.bytes_sent_total.add((header.len() + body.len()) as u64);
                // Moved, not cloned: a clone of a body made from a `Vec` allocates its share.
                s.tx.envelope(header, body);
            }
            resp => {
                let encoded = encode_answer(&s.conn, self.stream, &resp, extras);
                // Free the id before the client can see the response and reuse it.
                s.in_flight.release(self.stream);
                match encoded {
                    Encoded::Whole(frame) => {
                        m.bytes_sent_total.add(frame.len() as u64);
                        s.tx.frame(frame);
                    }
                    Encoded::Split(head, bulk) => {
                        m.bytes_sent_total.add((head.len() + bulk.len()) as u64);
                        s.tx.parts(head, bulk);
                    }
                }
            }
        }
        // The answer now counts in the backlog; the running request's share goes.
        if std::mem::take(&mut self.running) {
            s.tx.end_request();
        }
    }
}

impl<B: Backend> Drop for Pending<B> {
    fn drop(&mut self) {
        if !self.answered {
            tracing::error!(
                "request on stream {} of connection {} ended without a response",
                self.stream,
                self.session.conn.id()
            );
            self.answer(
                Response::Error(DbError::server(
                    "Internal error: the request handler failed",
                )),
                &ResponseExtras::default(),
            );
        }
    }
}

/// Sleeps until `deadline`, or forever without one.
async fn sleep_until_some(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// The index of a request opcode in `metrics::OPCODES` (out of range for others).
fn opcode_metric(op: Opcode) -> usize {
    match op {
        Opcode::Query => 0,
        Opcode::Prepare => 1,
        Opcode::Execute => 2,
        Opcode::Batch => 3,
        Opcode::AuthResponse => 4,
        _ => usize::MAX,
    }
}

fn protocol_error(message: impl Into<String>) -> Response {
    Response::Error(DbError::protocol(message))
}

/// The SUPPORTED answer to OPTIONS.
fn supported() -> Response {
    Response::Supported(vec![
        ("CQL_VERSION".to_string(), vec![CQL_VERSION.to_string()]),
        (
            "COMPRESSION".to_string(),
            vec!["lz4".to_string(), "snappy".to_string()],
        ),
        (
            "PROTOCOL_VERSIONS".to_string(),
            ProtocolVersion::supported_descriptions(),
        ),
    ])
}

/// Checks STARTUP options as Cassandra's `StartupMessage` does and returns the compression.
fn check_startup(
    version: ProtocolVersion,
    options: &[(String, String)],
) -> Result<Option<Compression>, DbError> {
    let get = |key: &str| {
        options
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.as_str())
    };
    let cql = get("CQL_VERSION")
        .ok_or_else(|| DbError::protocol("Missing value CQL_VERSION in STARTUP message"))?;
    let major = cql
        .split('.')
        .next()
        .and_then(|m| m.trim().parse::<u32>().ok())
        .ok_or_else(|| DbError::protocol(format!("Invalid version value: {cql}")))?;
    if major < 3 {
        return Err(DbError::protocol(format!(
            "CQL version {cql} is not supported by the binary protocol (supported version are >= 3.0.0)"
        )));
    }
    let Some(name) = get("COMPRESSION") else {
        return Ok(None);
    };
    match Compression::from_name(name) {
        Some(Compression::Snappy) if version >= ProtocolVersion::V5 => Err(DbError::protocol(
            "Snappy compression is not supported in protocol V5",
        )),
        Some(c) => Ok(Some(c)),
        None => Err(DbError::protocol(format!(
            "Unknown compression algorithm: {name}"
        ))),
    }
}

/// Cassandra's message type names, for error messages.
fn opcode_name(op: Opcode) -> &'static str {
    match op {
        Opcode::Error => "ERROR",
        Opcode::Startup => "STARTUP",
        Opcode::Ready => "READY",
        Opcode::Authenticate => "AUTHENTICATE",
        Opcode::Options => "OPTIONS",
        Opcode::Supported => "SUPPORTED",
        Opcode::Query => "QUERY",
        Opcode::Result => "RESULT",
        Opcode::Prepare => "PREPARE",
        Opcode::Execute => "EXECUTE",
        Opcode::Register => "REGISTER",
        Opcode::Event => "EVENT",
        Opcode::Batch => "BATCH",
        Opcode::AuthChallenge => "AUTH_CHALLENGE",
        Opcode::AuthResponse => "AUTH_RESPONSE",
        Opcode::AuthSuccess => "AUTH_SUCCESS",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn startup_options_are_checked_like_cassandra() {
        let v4 = ProtocolVersion::V4;
        assert_eq!(
            check_startup(v4, &opts(&[("CQL_VERSION", "3.0.0")])),
            Ok(None)
        );
        assert_eq!(
            check_startup(
                v4,
                &opts(&[("CQL_VERSION", "4.0.0"), ("COMPRESSION", "lz4")])
            ),
            Ok(Some(Compression::Lz4))
        );
        assert_eq!(
            check_startup(
                v4,
                &opts(&[("CQL_VERSION", "3.4.5"), ("COMPRESSION", "snappy")])
            ),
            Ok(Some(Compression::Snappy))
        );
        let e = check_startup(
            ProtocolVersion::V5,
            &opts(&[("CQL_VERSION", "3.4.5"), ("COMPRESSION", "snappy")]),
        )
        .unwrap_err();
        assert!(e.message().contains("Snappy"), "{e}");
        let e = check_startup(
            v4,
            &opts(&[("CQL_VERSION", "3.0.0"), ("COMPRESSION", "zstd")]),
        )
        .unwrap_err();
        assert_eq!(e.message(), "Unknown compression algorithm: zstd");
        let e = check_startup(v4, &opts(&[])).unwrap_err();
        assert_eq!(e.message(), "Missing value CQL_VERSION in STARTUP message");
        assert!(check_startup(v4, &opts(&[("CQL_VERSION", "2.0.0")])).is_err());
        assert!(check_startup(v4, &opts(&[("CQL_VERSION", "x")])).is_err());
    }
}
