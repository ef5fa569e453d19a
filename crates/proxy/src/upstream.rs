//! Connections to the upstream Cassandra nodes and the pools that hold them.
//!
//! A [`Connection`] is one native-protocol connection in the client's protocol version, with
//! many requests in flight: a stream id allocator, a map stream -> waiting request, a reader
//! task that routes responses by stream id and a writer task that batches outgoing frames.
//! v5 connections switch to segment framing after the STARTUP answer, as the spec says.
//!
//! A [`Pool`] holds `upstream_connections` connections per upstream node for one
//! (role, protocol version, keyspace): each connection ran `USE ks` once at open, so requests
//! never switch a shared connection's keyspace. Requests go to the upstream nodes in turn; on a
//! node, a client connection's requests all go on one of its connections (by the client
//! connection's number), so requests a client sent together leave together, in one write as
//! its driver would send them to Cassandra itself. Dealt out over all connections in turn, a
//! client's batch went out in smaller writes (2.5 requests each against the driver's 4.5;
//! issue 16 item 7, `bench/results/2026-12-01/proxy-cold-pass-affinity`). A dead connection is replaced in the
//! background while the others serve; with none alive, the request opens one itself (bounded
//! by `connect_timeout`), and after a failed attempt further requests fail fast for
//! [`RETRY_AFTER`] instead of queueing on a dead upstream.
//!
//! # Bounds
//! - At most [`MAX_POOLS`] pools ([`Pools`]): past it the least recently used is forgotten, its
//!   connections closing once its last request is answered.
//! - Opening a connection (TCP, TLS, STARTUP, login, `USE`) takes at most `connect_timeout`;
//!   a request waits for its answer at most the timeout its caller gives (the client's
//!   `request_timeout`, see `forward.rs`).
//! - At most [`MAX_IN_FLIGHT`] requests per connection: a stream id is taken before a frame is
//!   queued, so the outgoing queue holds at most that many frames; over it the request fails
//!   at once ([`UpstreamError::Busy`], Overloaded to the client) and [`Pool::get`] prefers a
//!   connection with free ids.
//! - A timed-out request keeps its stream id (*orphaned*) until its late answer arrives, so
//!   an id is never reused while the upstream may still answer it. At [`MAX_ORPHANS`] the
//!   connection is retired (as the drivers do: the Java driver's `max-orphan-requests`), its
//!   slot refilled, and it is closed once nobody uses it: a hung upstream cannot pin a
//!   connection at [`MAX_IN_FLIGHT`] forever.
//! - A response body is at most [`MAX_FRAME_BYTES`], checked on its header; the read buffer
//!   grows as the body's bytes arrive, never to a length a header only announces. Over the
//!   bound the connection is closed and its requests fail with a server error naming the size.
//!
//! [`Connection::open_for_events`] opens the proxy's control connection: the same connection
//! with server-pushed EVENT frames (stream -1) delivered on a channel ([`Events`]), which closes
//! when the connection dies. The channel holds at most [`EVENT_QUEUE`] events: an upstream
//! pushing faster than the proxy handles them (or a stalled relay) makes it drop events,
//! counted and logged, rather than grow; the relay then invalidates its whole cache, as for a
//! control connection reopened after events may have been missed.

use rustc_hash::FxHashMap;
use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use proto::deframe::Deframer;
use proto::error::DbError;
use proto::frame::{
    encode_envelope, encode_header, flags, Compression, Envelope, ProtocolVersion, HEADER_LEN,
};
use proto::request::{put_custom_payload, Query, QueryParams, Request};
use proto::response::{DecodedResponse, Event, Response, ResultBody};
use proto::segment::encode_segments;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, Notify};

use server::RequestFlags;

/// Most requests in flight on one upstream connection.
pub(crate) const MAX_IN_FLIGHT: usize = 2048;
/// Timed-out requests whose answers have not come (their stream ids still taken) at which a
/// connection is retired: a quarter of its ids, the Java driver's default ratio.
pub(crate) const MAX_ORPHANS: usize = MAX_IN_FLIGHT / 4;
/// After a failed connection attempt, requests fail at once for this long.
pub const RETRY_AFTER: Duration = Duration::from_millis(200);
/// Largest response body accepted from the upstream (a page of rows: Cassandra bounds pages
/// by rows, not bytes, so this is generous).
pub(crate) const MAX_FRAME_BYTES: usize = 256 * 1024 * 1024;

/// A role's login, as the SASL PLAIN token the client sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credentials {
    pub user: String,
    pub token: Bytes,
}

/// Why an upstream request failed without an upstream answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum UpstreamError {
    #[error("cannot connect to upstream {addr}: {reason}")]
    Connect { addr: SocketAddr, reason: String },
    #[error("upstream {addr} did not answer within {}ms", timeout.as_millis())]
    Timeout { addr: SocketAddr, timeout: Duration },
    #[error("the connection to upstream {addr} closed: {reason}")]
    Closed { addr: SocketAddr, reason: String },
    #[error("upstream {addr} requires authentication ({class})")]
    AuthRequired { addr: SocketAddr, class: String },
    /// The upstream answered the handshake (login, USE) with this error.
    #[error("{0}")]
    Rejected(DbError),
    #[error("upstream {addr} sent a response that does not decode: {reason}")]
    Protocol { addr: SocketAddr, reason: String },
    #[error("{MAX_IN_FLIGHT} requests are already in flight on the connection to upstream {addr}")]
    Busy { addr: SocketAddr },
}

/// What every connection needs to know, fixed at start-up.
#[derive(Debug, Clone)]
pub struct Settings {
    pub connect_timeout: Duration,
    pub connections_per_host: usize,
    /// LZ4 on the pool's connections (`proxy.upstream_compression`).
    pub compression: Option<Compression>,
    /// TLS to the upstream (`proxy.upstream_encryption_options`), when enabled.
    pub tls: Option<Arc<rustls::ClientConfig>>,
}

struct Waiters {
    pending: FxHashMap<i16, Waiting>,
    /// Stream ids of requests that timed out, kept until their answers arrive.
    orphaned: HashSet<i16>,
    free: Vec<i16>,
    /// When the deadline task ([`deadline_loop`]) wakes next; `None` while it waits for a
    /// request. A request due earlier wakes it ([`ConnShared::rearm`]).
    wakes_at: Option<Instant>,
}

/// A request waiting for its answer: the answer, or [`TimedOut`] at `deadline`.
struct Waiting {
    tx: oneshot::Sender<Result<Envelope, TimedOut>>,
    deadline: Instant,
}

/// What the deadline task tells a request whose deadline passed.
struct TimedOut;

struct ConnShared {
    addr: SocketAddr,
    waiters: Mutex<Waiters>,
    dead: AtomicBool,
    /// Why the connection failed, when the reader knows better than "connection lost".
    failure: Mutex<Option<String>>,
    /// Told by the writer when every [`Connection`] handle is gone: nobody waits for an
    /// answer any more, so the reader stops and the socket closes, even if the upstream
    /// never closes its side.
    unused: Notify,
    /// Wakes the deadline task: a request is due before it would wake, or the connection
    /// failed.
    rearm: Notify,
}

impl ConnShared {
    fn fail_all(&self) {
        self.dead.store(true, Ordering::Release);
        let mut w = self.waiters.lock().unwrap_or_else(PoisonError::into_inner);
        // Dropping the senders wakes every waiter with an error.
        w.pending.clear();
        w.orphaned.clear();
        drop(w);
        self.rearm.notify_one();
    }

    /// Fails the requests due by `now` with [`TimedOut`]: each one's stream id stays taken
    /// until its late answer arrives (or the connection dies), so it is never reused while the
    /// upstream may still answer it; at [`MAX_ORPHANS`] such ids the connection is retired
    /// (see the module docs). Answers when the deadline task should wake next (`None`: no
    /// request waits), and whether the task is done (the connection is dead and nobody waits).
    fn expire(&self, now: Instant) -> (Option<Instant>, bool) {
        let mut w = self.waiters.lock().unwrap_or_else(PoisonError::into_inner);
        let mut next: Option<Instant> = None;
        let mut due = Vec::new();
        for (&stream, waiting) in &w.pending {
            if waiting.deadline <= now {
                due.push(stream);
            } else if next.is_none_or(|n| waiting.deadline < n) {
                next = Some(waiting.deadline);
            }
        }
        for stream in due {
            if let Some(waiting) = w.pending.remove(&stream) {
                let _ = waiting.tx.send(Err(TimedOut));
                w.orphaned.insert(stream);
            }
        }
        if w.orphaned.len() >= MAX_ORPHANS && !self.dead.swap(true, Ordering::AcqRel) {
            tracing::warn!(
                "upstream {}: {} requests timed out without an answer on one connection; opening another",
                self.addr,
                w.orphaned.len()
            );
        }
        w.wakes_at = next;
        (next, next.is_none() && self.dead.load(Ordering::Acquire))
    }

    fn fail_because(&self, why: String) {
        *self.failure.lock().unwrap_or_else(PoisonError::into_inner) = Some(why);
        self.fail_all();
    }

    /// The reason a request in flight was lost.
    fn lost(&self) -> String {
        self.failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .unwrap_or_else(|| "connection lost with the request in flight".into())
    }
}

/// One upstream connection (see the module docs).
pub struct Connection {
    shared: Arc<ConnShared>,
    version: ProtocolVersion,
    compression: Option<Compression>,
    out: mpsc::UnboundedSender<Outgoing>,
}

impl Connection {
    /// Connects to `addr`, runs STARTUP (logging in with `creds` if the upstream asks) and
    /// `USE keyspace`, then starts the reader and writer tasks.
    pub async fn open(
        addr: SocketAddr,
        version: ProtocolVersion,
        creds: Option<&Credentials>,
        keyspace: Option<&str>,
        timeout: Duration,
        compression: Option<Compression>,
        tls: Option<&Arc<rustls::ClientConfig>>,
    ) -> Result<Arc<Connection>, UpstreamError> {
        Self::open_inner(
            addr,
            version,
            creds,
            keyspace,
            timeout,
            None,
            compression,
            tls,
        )
        .await
    }

    /// [`Connection::open`] for a control connection: EVENT frames the upstream pushes go to
    /// the returned channel, which ends when the connection dies. The caller still has to
    /// send REGISTER.
    pub async fn open_for_events(
        addr: SocketAddr,
        version: ProtocolVersion,
        creds: Option<&Credentials>,
        timeout: Duration,
        tls: Option<&Arc<rustls::ClientConfig>>,
    ) -> Result<(Arc<Connection>, Events), UpstreamError> {
        let (tx, rx) = mpsc::channel(EVENT_QUEUE);
        let dropped = Arc::new(AtomicU64::new(0));
        let sink = EventSink {
            tx,
            dropped: dropped.clone(),
            total: AtomicU64::new(0),
        };
        let conn =
            Self::open_inner(addr, version, creds, None, timeout, Some(sink), None, tls).await?;
        Ok((conn, Events { rx, dropped }))
    }

    #[allow(clippy::too_many_arguments)]
    async fn open_inner(
        addr: SocketAddr,
        version: ProtocolVersion,
        creds: Option<&Credentials>,
        keyspace: Option<&str>,
        timeout: Duration,
        events: Option<EventSink>,
        compression: Option<Compression>,
        tls: Option<&Arc<rustls::ClientConfig>>,
    ) -> Result<Arc<Connection>, UpstreamError> {
        let connect = async {
            let mut socket =
                TcpStream::connect(addr)
                    .await
                    .map_err(|e| UpstreamError::Connect {
                        addr,
                        reason: e.to_string(),
                    })?;
            let _ = socket.set_nodelay(true);
            let Some(tls) = tls else {
                let (buf, deframer) =
                    handshake(&mut socket, addr, version, compression, creds, keyspace).await?;
                return Ok::<_, UpstreamError>((Stream::Plain(socket), buf, deframer));
            };
            // The upstream is named by its address: its certificate is checked for that IP
            // when `require_endpoint_verification` is on.
            let name = rustls::pki_types::ServerName::IpAddress(addr.ip().into());
            let mut socket = tokio_rustls::TlsConnector::from(tls.clone())
                .connect(name, socket)
                .await
                .map_err(|e| UpstreamError::Connect {
                    addr,
                    reason: format!("TLS handshake failed: {e}"),
                })?;
            let (buf, deframer) =
                handshake(&mut socket, addr, version, compression, creds, keyspace).await?;
            Ok((Stream::Tls(Box::new(socket)), buf, deframer))
        };
        let (socket, buf, deframer) = match tokio::time::timeout(timeout, connect).await {
            Ok(r) => r?,
            Err(_) => {
                return Err(UpstreamError::Connect {
                    addr,
                    reason: format!("no answer within {}ms", timeout.as_millis()),
                })
            }
        };
        let start = Started {
            addr,
            version,
            compression,
            buf,
            deframer,
            events,
        };
        Ok(match socket {
            Stream::Plain(s) => start.spawn(s.into_split()),
            Stream::Tls(s) => start.spawn(tokio::io::split(*s)),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.shared.addr
    }

    /// The protocol version this connection speaks (its pool's, the clients').
    pub fn version(&self) -> ProtocolVersion {
        self.version
    }

    /// False once the socket failed or closed.
    pub fn is_alive(&self) -> bool {
        !self.shared.dead.load(Ordering::Acquire)
    }

    /// Stops using this connection (its in-flight requests still get their answers).
    pub fn retire(&self) {
        self.shared.dead.store(true, Ordering::Release);
    }

    /// True while a request can take a stream id here.
    pub fn has_free_stream(&self) -> bool {
        !self
            .shared
            .waiters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .free
            .is_empty()
    }

    /// Sends `req` and waits up to `timeout` for its response.
    pub async fn request(
        &self,
        req: &Request,
        timeout: Duration,
    ) -> Result<Response, UpstreamError> {
        self.request_traced(
            req,
            None,
            Instant::now() + timeout,
            timeout,
            &RequestFlags::default(),
        )
        .await
        .map(|d| d.response)
    }

    /// [`Connection::request`] answered by `deadline` (`timeout` from when the caller started,
    /// for the error), with the client's envelope flags (`client`): the tracing flag set as
    /// asked and the custom payload (if any) in front of the body, answering the whole response
    /// (tracing session id, warnings and custom payload included).
    ///
    /// `body`, when given, is `req`'s message body as the client sent it in this connection's
    /// protocol version: it goes upstream as is, and `req` is not encoded again. The answer is
    /// decoded lazily (`Response::from_envelope_lazy`): a Rows result comes back as its RESULT
    /// body as received (`ResultBody::Encoded`), for the caller to relay or decode.
    pub async fn request_traced(
        &self,
        req: &Request,
        body: Option<&Bytes>,
        deadline: Instant,
        timeout: Duration,
        client: &RequestFlags,
    ) -> Result<DecodedResponse, UpstreamError> {
        let addr = self.shared.addr;
        let (tx, rx) = oneshot::channel();
        let (stream, rearm) = {
            let mut w = self
                .shared
                .waiters
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if self.shared.dead.load(Ordering::Acquire) {
                return Err(UpstreamError::Closed {
                    addr,
                    reason: "connection closed".into(),
                });
            }
            let Some(stream) = w.free.pop() else {
                return Err(UpstreamError::Busy { addr });
            };
            w.pending.insert(stream, Waiting { tx, deadline });
            // The deadline task sleeps until the earliest deadline it knew of; one waking it
            // per request would cost what a timer per request did.
            let rearm = w.wakes_at.is_none_or(|at| deadline < at);
            if rearm {
                w.wakes_at = Some(deadline);
            }
            (stream, rearm)
        };
        if rearm {
            self.shared.rearm.notify_one();
        }
        let flags = if client.tracing { flags::TRACING } else { 0 };
        let frame = match body {
            // The usual forwarded request (v4 or older, uncompressed, no custom payload): its
            // header, and the client's body as is, copied once, into the write loop's batch.
            Some(body)
                if self.version < ProtocolVersion::V5
                    && self.compression.is_none()
                    && (client.custom_payload.is_empty() || self.version < ProtocolVersion::V4) =>
            {
                let mut header = [0; HEADER_LEN];
                let opcode = req.opcode();
                encode_header(
                    self.version,
                    flags,
                    stream,
                    opcode,
                    body.len(),
                    &mut &mut header[..],
                );
                Outgoing::Envelope(header, body.clone())
            }
            Some(body) => Outgoing::Frame(encode_message(
                self.version,
                self.compression,
                stream,
                flags,
                &client.custom_payload,
                req.opcode(),
                body,
            )),
            None => Outgoing::Frame(encode_request(
                self.version,
                self.compression,
                stream,
                flags,
                &client.custom_payload,
                req,
            )),
        };
        if self.out.send(frame).is_err() {
            self.shared.fail_all();
            return Err(UpstreamError::Closed {
                addr,
                reason: "writer stopped".into(),
            });
        }
        let env = match rx.await {
            Ok(Ok(env)) => env,
            Ok(Err(TimedOut)) => return Err(UpstreamError::Timeout { addr, timeout }),
            Err(_) => {
                return Err(UpstreamError::Closed {
                    addr,
                    reason: self.shared.lost(),
                })
            }
        };
        Response::from_envelope_lazy(&env).map_err(|e| UpstreamError::Protocol {
            addr,
            reason: e.to_string(),
        })
    }
}

/// One request envelope (in segments for v5), `req` encoded.
/// Events a control connection may hold that the relay has not taken yet. Schema changes come
/// one per DDL statement: a full queue means the relay is stalled or the upstream floods.
pub const EVENT_QUEUE: usize = 1024;

/// The receiving end of a control connection's events (at most [`EVENT_QUEUE`] queued).
pub struct Events {
    rx: mpsc::Receiver<Event>,
    dropped: Arc<AtomicU64>,
}

impl Events {
    /// The next event; `None` once the connection is gone and every queued event was taken.
    pub async fn recv(&mut self) -> Option<Event> {
        self.rx.recv().await
    }

    /// Events dropped because the queue was full since the last call (the caller must assume
    /// it missed any change: the relay invalidates its whole cache).
    pub fn take_dropped(&self) -> u64 {
        self.dropped.swap(0, Ordering::Relaxed)
    }

    /// Events queued now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.rx.len()
    }
}

/// The reader's end of [`Events`]: never waits, drops (counting) when the queue is full.
struct EventSink {
    tx: mpsc::Sender<Event>,
    /// Dropped since the relay last looked ([`Events::take_dropped`]).
    dropped: Arc<AtomicU64>,
    /// Dropped over the connection's life, for the log.
    total: AtomicU64,
}

impl EventSink {
    fn deliver(&self, e: Event, addr: SocketAddr) {
        if let Err(mpsc::error::TrySendError::Full(_)) = self.tx.try_send(e) {
            let total = self.total.fetch_add(1, Ordering::Relaxed) + 1;
            // One line per overflow (the relay resets `dropped` when it sees it), with the total.
            if self.dropped.fetch_add(1, Ordering::Relaxed) == 0 {
                tracing::warn!(
                    "upstream {addr}: {EVENT_QUEUE} events wait on the control connection; dropping the next ones ({total} dropped on this connection so far); the proxy's cache will be invalidated whole"
                );
            }
        }
    }
}

fn encode_request(
    version: ProtocolVersion,
    compression: Option<Compression>,
    stream: i16,
    flags: u8,
    custom_payload: &[(String, Option<Bytes>)],
    req: &Request,
) -> Bytes {
    let mut body = BytesMut::new();
    req.encode_body(version, &mut body);
    encode_message(
        version,
        compression,
        stream,
        flags,
        custom_payload,
        req.opcode(),
        &body.freeze(),
    )
}

/// One request envelope (in segments for v5) around a message body already encoded for
/// `version`; a custom payload goes in front of it.
fn encode_message(
    version: ProtocolVersion,
    compression: Option<Compression>,
    stream: i16,
    mut flags: u8,
    custom_payload: &[(String, Option<Bytes>)],
    opcode: proto::frame::Opcode,
    message: &Bytes,
) -> Bytes {
    let body = if !custom_payload.is_empty() && version >= ProtocolVersion::V4 {
        flags |= flags::CUSTOM_PAYLOAD;
        let mut body = BytesMut::with_capacity(message.len() + 64);
        put_custom_payload(&mut body, custom_payload);
        body.extend_from_slice(message);
        body.freeze()
    } else {
        message.clone()
    };
    let env = Envelope {
        version,
        flags,
        stream,
        opcode,
        body,
    };
    let mut plain = BytesMut::with_capacity(env.body.len() + 9);
    if version >= ProtocolVersion::V5 {
        // v5 compresses segments, not envelopes.
        encode_envelope(&env, None, &mut plain);
        let mut out = BytesMut::with_capacity(plain.len() + 16);
        encode_segments(&plain, compression.is_some(), &mut out);
        out.freeze()
    } else {
        encode_envelope(&env, compression, &mut plain);
        plain.freeze()
    }
}

/// What the write loop writes: a whole frame, or an envelope's header and body apart (see
/// `Connection::request_traced`), so that the body is copied once, into the write batch.
enum Outgoing {
    Frame(Bytes),
    Envelope([u8; HEADER_LEN], Bytes),
}

impl Outgoing {
    fn put_into(&self, batch: &mut BytesMut) {
        match self {
            Outgoing::Frame(frame) => batch.extend_from_slice(frame),
            Outgoing::Envelope(header, body) => {
                batch.extend_from_slice(header);
                batch.extend_from_slice(body);
            }
        }
    }
}

/// An opened upstream socket, plain or TLS (`proxy.upstream_encryption_options`).
enum Stream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

/// STARTUP, login and `USE` on a fresh socket; returns the bytes read past the handshake and
/// the deframer in the connection's framing.
async fn handshake<S: AsyncRead + AsyncWrite + Unpin>(
    socket: &mut S,
    addr: SocketAddr,
    version: ProtocolVersion,
    compression: Option<Compression>,
    creds: Option<&Credentials>,
    keyspace: Option<&str>,
) -> Result<(BytesMut, Deframer), UpstreamError> {
    // Cassandra may compress its answer to STARTUP already; only envelopes flagged
    // compressed are decompressed.
    let mut deframer = Deframer::new(MAX_FRAME_BYTES);
    deframer.set_body_compression(compression);
    let mut hs = Handshake {
        socket,
        addr,
        version,
        buf: BytesMut::with_capacity(4096),
        deframer,
        compression,
        compressing: false,
    };
    hs.run(creds, keyspace).await?;
    let Handshake { buf, deframer, .. } = hs;
    Ok((buf, deframer))
}

/// A connection past its handshake, before its reader and writer tasks run.
struct Started {
    addr: SocketAddr,
    version: ProtocolVersion,
    compression: Option<Compression>,
    buf: BytesMut,
    deframer: Deframer,
    events: Option<EventSink>,
}

impl Started {
    fn spawn<R, W>(self, (rd, wr): (R, W)) -> Arc<Connection>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let shared = Arc::new(ConnShared {
            addr: self.addr,
            waiters: Mutex::new(Waiters {
                pending: FxHashMap::default(),
                orphaned: HashSet::new(),
                free: (0..MAX_IN_FLIGHT as i16).rev().collect(),
                wakes_at: None,
            }),
            dead: AtomicBool::new(false),
            failure: Mutex::new(None),
            unused: Notify::new(),
            rearm: Notify::new(),
        });
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(write_loop(wr, rx, shared.clone()));
        tokio::spawn(deadline_loop(shared.clone()));
        tokio::spawn(read_loop(
            rd,
            self.buf,
            self.deframer,
            shared.clone(),
            self.events,
        ));
        Arc::new(Connection {
            shared,
            version: self.version,
            compression: self.compression,
            out: tx,
        })
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(
    mut wr: W,
    mut rx: mpsc::UnboundedReceiver<Outgoing>,
    shared: Arc<ConnShared>,
) {
    let mut batch = BytesMut::new();
    while let Some(first) = rx.recv().await {
        first.put_into(&mut batch);
        while batch.len() < 256 * 1024 {
            match rx.try_recv() {
                Ok(more) => more.put_into(&mut batch),
                Err(_) => break,
            }
        }
        if let Err(e) = wr.write_all(&batch).await {
            tracing::debug!("upstream {} write failed: {e}", shared.addr);
            shared.fail_all();
            return;
        }
        batch.clear();
    }
    // Every handle is gone (the channel closed): the reader may stop too.
    shared.dead.store(true, Ordering::Release);
    shared.unused.notify_one();
    let _ = wr.shutdown().await;
}

/// Fails the requests of a connection whose deadlines pass ([`ConnShared::expire`]): one
/// timer per connection, set to the earliest deadline, instead of one per request (a timer
/// registered and removed per request was 4% of the proxy's instructions per cache miss).
/// Ends when the connection is dead and no request waits.
async fn deadline_loop(shared: Arc<ConnShared>) {
    loop {
        match shared.expire(Instant::now()) {
            (_, true) => return,
            (None, false) => shared.rearm.notified().await,
            (Some(at), false) => {
                tokio::select! {
                    () = tokio::time::sleep_until(at.into()) => {}
                    () = shared.rearm.notified() => {}
                }
            }
        }
    }
}

/// Routes the upstream's answers to their waiting requests by stream id (and EVENTs to the
/// control connection's channel) until the connection fails. `deframer` comes from the
/// handshake, already in the connection's framing.
async fn read_loop<R: AsyncRead + Unpin>(
    mut rd: R,
    mut buf: BytesMut,
    mut deframer: Deframer,
    shared: Arc<ConnShared>,
    events: Option<EventSink>,
) {
    loop {
        loop {
            let env = match deframer.next_envelope(&mut buf) {
                Ok(Some(env)) => env,
                Ok(None) => break,
                Err(e) => {
                    // Completes "the connection to upstream X closed: ...".
                    let why = match e {
                        proto::error::FrameError::TooLarge { length, max, .. } => format!(
                            "it announced a response of {length} bytes, over the proxy's bound of {max} bytes"
                        ),
                        e => format!("it sent bad framing: {e}"),
                    };
                    tracing::warn!("upstream {}: {why}; closing the connection", shared.addr);
                    shared.fail_because(why);
                    return;
                }
            };
            if env.stream < 0 {
                // An EVENT: delivered on a control connection, ignored elsewhere.
                if let Some(tx) = &events {
                    match Response::from_envelope(&env) {
                        Ok(d) => {
                            if let Response::Event(e) = d.response {
                                tx.deliver(e, shared.addr);
                            }
                        }
                        Err(e) => {
                            tracing::debug!(
                                "upstream {} sent an undecodable event: {e}",
                                shared.addr
                            )
                        }
                    }
                }
                continue;
            }
            let mut w = shared
                .waiters
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if let Some(waiting) = w.pending.remove(&env.stream) {
                w.free.push(env.stream);
                drop(w);
                let _ = waiting.tx.send(Ok(env));
            } else if w.orphaned.remove(&env.stream) {
                // The late answer of a timed-out request: its id is free again.
                w.free.push(env.stream);
            }
        }
        // The buffer grows as bytes arrive (amortized doubling), never to the length a
        // header only announces.
        if buf.capacity() - buf.len() < 16 * 1024 {
            buf.reserve(64 * 1024);
        }
        tokio::select! {
            r = rd.read_buf(&mut buf) => match r {
                Ok(0) => {
                    tracing::debug!("upstream {} closed the connection", shared.addr);
                    break;
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::debug!("upstream {} read failed: {e}", shared.addr);
                    break;
                }
            },
            _ = shared.unused.notified() => {
                tracing::debug!("upstream {}: connection no longer used, closing", shared.addr);
                break;
            }
        }
    }
    shared.fail_all();
}

/// The sequential part of opening a connection, before requests are multiplexed.
struct Handshake<'a, S> {
    socket: &'a mut S,
    addr: SocketAddr,
    version: ProtocolVersion,
    buf: BytesMut,
    /// Envelopes, then segments from the STARTUP answer on in v5; the read loop goes on with it.
    deframer: Deframer,
    /// Asked for in STARTUP; in force from its answer on (`compressing`).
    compression: Option<Compression>,
    compressing: bool,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Handshake<'_, S> {
    async fn run(
        &mut self,
        creds: Option<&Credentials>,
        keyspace: Option<&str>,
    ) -> Result<(), UpstreamError> {
        let mut options = vec![
            ("CQL_VERSION".into(), "3.0.0".into()),
            ("DRIVER_NAME".into(), "Peregrine proxy".into()),
        ];
        if let Some(c) = self.compression {
            options.push(("COMPRESSION".into(), c.name().into()));
        }
        let answer = self.call(&Request::Startup(options)).await?;
        if self.version >= ProtocolVersion::V5 {
            // Both sides switch to segments after the STARTUP answer (READY or AUTHENTICATE).
            self.deframer.start_segments(self.compression.is_some());
        }
        self.compressing = self.compression.is_some();
        match answer {
            Response::Ready => {}
            Response::Authenticate(class) => {
                let Some(creds) = creds else {
                    return Err(UpstreamError::AuthRequired {
                        addr: self.addr,
                        class,
                    });
                };
                match self.call(&Request::AuthResponse(Some(creds.token.clone()))).await? {
                    Response::AuthSuccess(_) => {}
                    Response::Error(e) => return Err(UpstreamError::Rejected(e)),
                    other => {
                        return Err(UpstreamError::Protocol {
                            addr: self.addr,
                            reason: format!(
                                "expected AUTH_SUCCESS, got opcode {:#04x} (only single-step SASL PLAIN is supported)",
                                other.opcode() as u8
                            ),
                        })
                    }
                }
            }
            Response::Error(e) => return Err(UpstreamError::Rejected(e)),
            other => {
                return Err(UpstreamError::Protocol {
                    addr: self.addr,
                    reason: format!(
                        "unexpected answer to STARTUP (opcode {:#04x})",
                        other.opcode() as u8
                    ),
                })
            }
        }
        if let Some(ks) = keyspace {
            let use_ks = Request::Query(Query {
                query: format!("USE {}", cql::quote_identifier(ks)),
                params: QueryParams::default(),
            });
            match self.call(&use_ks).await? {
                Response::Result(ResultBody::SetKeyspace(_)) => {}
                Response::Error(e) => return Err(UpstreamError::Rejected(e)),
                _ => {
                    return Err(UpstreamError::Protocol {
                        addr: self.addr,
                        reason: "unexpected answer to USE".into(),
                    })
                }
            }
        }
        Ok(())
    }

    async fn call(&mut self, req: &Request) -> Result<Response, UpstreamError> {
        let addr = self.addr;
        let closed = |e: std::io::Error| UpstreamError::Connect {
            addr,
            reason: e.to_string(),
        };
        let compression = self.compression.filter(|_| self.compressing);
        let frame = if self.deframer.segmented() || self.version < ProtocolVersion::V5 {
            encode_request(self.version, compression, 0, 0, &[], req)
        } else {
            // Before the switch a v5 STARTUP goes out as a plain envelope.
            let mut body = BytesMut::new();
            req.encode_body(self.version, &mut body);
            let mut out = BytesMut::new();
            encode_envelope(
                &Envelope {
                    version: self.version,
                    flags: 0,
                    stream: 0,
                    opcode: req.opcode(),
                    body: body.freeze(),
                },
                None,
                &mut out,
            );
            out.freeze()
        };
        self.socket.write_all(&frame).await.map_err(closed)?;
        loop {
            let env = self.deframer.next_envelope(&mut self.buf).map_err(|e| {
                UpstreamError::Protocol {
                    addr,
                    reason: e.to_string(),
                }
            })?;
            if let Some(env) = env {
                if env.stream < 0 {
                    continue;
                }
                return Response::from_envelope(&env)
                    .map(|d| d.response)
                    .map_err(|e| UpstreamError::Protocol {
                        addr,
                        reason: e.to_string(),
                    });
            }
            let n = self.socket.read_buf(&mut self.buf).await.map_err(closed)?;
            if n == 0 {
                return Err(UpstreamError::Connect {
                    addr,
                    reason: "the upstream closed the connection during the handshake".into(),
                });
            }
        }
    }
}

struct Slot {
    conn: Mutex<Option<Arc<Connection>>>,
    connecting: tokio::sync::Mutex<()>,
}

impl Slot {
    fn live(&self) -> Option<Arc<Connection>> {
        self.conn
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .filter(|c| c.is_alive())
            .cloned()
    }
}

/// Pools kept at most (one per role, protocol version and keyspace clients used): past it the
/// least recently used pool is forgotten; its connections close once its last request is
/// answered, and a client using it again opens a new one (login and `USE` included).
pub const MAX_POOLS: usize = 256;

/// The proxy's pools by key, at most `max` ([`MAX_POOLS`]) of them, the least recently used
/// forgotten first.
pub struct Pools<K> {
    /// FxHash: SipHash of a node's address was ~280 instructions of every forwarded request.
    map: RwLock<FxHashMap<K, Arc<Pool>>>,
    max: usize,
    /// Pools handed out so far: the clock of `Pool::last_used` (an order, not a time: a clock
    /// read was ~90 instructions of every forwarded request).
    handed_out: AtomicU64,
    evicted: AtomicU64,
}

impl<K: std::hash::Hash + Eq + Clone + std::fmt::Debug> Pools<K> {
    pub fn new(max: usize) -> Self {
        Pools {
            map: RwLock::new(FxHashMap::default()),
            max: max.max(1),
            handed_out: AtomicU64::new(0),
            evicted: AtomicU64::new(0),
        }
    }

    fn now(&self) -> u64 {
        self.handed_out.fetch_add(1, Ordering::Relaxed)
    }

    /// The pool of `key`, made by `make` when there is none; making one past the bound forgets
    /// the least recently used.
    pub fn get_or_insert_with(&self, key: &K, make: impl FnOnce() -> Pool) -> Arc<Pool> {
        if let Some(p) = self
            .map
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
        {
            p.last_used.store(self.now(), Ordering::Relaxed);
            return p.clone();
        }
        let mut map = self.map.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(p) = map.get(key) {
            return p.clone();
        }
        while map.len() >= self.max {
            // A scan of at most `max` pools, only when a new one is made.
            let Some(oldest) = map
                .iter()
                .min_by_key(|(_, p)| p.last_used.load(Ordering::Relaxed))
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            map.remove(&oldest);
            let n = self.evicted.fetch_add(1, Ordering::Relaxed) + 1;
            tracing::debug!(
                "upstream pools at their bound ({}): forgot the least recently used, {oldest:?} ({n} so far)",
                self.max
            );
        }
        let pool = Arc::new(make());
        pool.last_used.store(self.now(), Ordering::Relaxed);
        map.insert(key.clone(), pool.clone());
        pool
    }

    pub fn remove(&self, key: &K) {
        self.map
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }

    /// Keeps the pools whose key `keep` accepts.
    pub fn retain(&self, mut keep: impl FnMut(&K) -> bool) {
        self.map
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|k, _| keep(k));
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.map
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Pools forgotten at the bound since the proxy started (`/metrics`).
    pub fn evicted(&self) -> u64 {
        self.evicted.load(Ordering::Relaxed)
    }
}

/// The connections of one (role, protocol version, keyspace); see the module docs.
pub struct Pool {
    /// When [`Pools`] last handed it out (its count of hand-outs).
    last_used: AtomicU64,
    hosts: Arc<[SocketAddr]>,
    version: ProtocolVersion,
    keyspace: Option<String>,
    creds: Option<Credentials>,
    settings: Settings,
    slots: Box<[Slot]>,
    /// The node the next request goes to, in turn.
    next: AtomicUsize,
    last_failure: Mutex<Option<(Instant, UpstreamError)>>,
}

impl Pool {
    pub fn new(
        hosts: Arc<[SocketAddr]>,
        version: ProtocolVersion,
        keyspace: Option<String>,
        creds: Option<Credentials>,
        settings: Settings,
    ) -> Self {
        let n = hosts.len().max(1) * settings.connections_per_host.max(1);
        Pool {
            last_used: AtomicU64::new(0),
            hosts,
            version,
            keyspace,
            creds,
            settings,
            slots: (0..n)
                .map(|_| Slot {
                    conn: Mutex::new(None),
                    connecting: tokio::sync::Mutex::new(()),
                })
                .collect(),
            next: AtomicUsize::new(0),
            last_failure: Mutex::new(None),
        }
    }

    pub fn keyspace(&self) -> Option<&str> {
        self.keyspace.as_deref()
    }

    /// A live connection for the client connection numbered `client`: on the next node in
    /// turn, the connection of that client (see the module docs), else the next live one
    /// with a free stream id; a dead slot is refilled in the background while another live
    /// connection serves; with none alive, connects inline.
    pub async fn get(self: &Arc<Self>, client: u64) -> Result<Arc<Connection>, UpstreamError> {
        match self.get_live(client) {
            Ok(c) => Ok(c),
            Err(slot) => self.fill(slot).await,
        }
    }

    /// [`Pool::get`] without waiting: the live connection it hands out, or, with none alive,
    /// `Err` with the slot to open ([`Pool::fill`]). Its callers need no timer when a
    /// connection is live, the usual case.
    pub fn get_live(self: &Arc<Self>, client: u64) -> Result<Arc<Connection>, usize> {
        let n = self.slots.len();
        // Slot `i` connects to node `i % nodes` first (`fill`).
        let nodes = self.hosts.len().max(1);
        let node = self.next.fetch_add(1, Ordering::Relaxed) % nodes;
        let start = node + nodes * (client % (n / nodes) as u64) as usize;
        let first = self.slots[start].live();
        // The first live connection with a free stream id; with all of them full, one of
        // them anyway (its request answers Overloaded at once).
        let mut full = None;
        let mut chosen = None;
        for k in 0..n {
            let c = if k == 0 {
                first.clone()
            } else {
                self.slots[(start + k) % n].live()
            };
            let Some(c) = c else { continue };
            if c.has_free_stream() {
                chosen = Some(c);
                break;
            }
            full.get_or_insert(c);
        }
        let Some(c) = chosen.or(full) else {
            return Err(start);
        };
        if first.is_none() {
            let pool = self.clone();
            tokio::spawn(async move {
                let _ = pool.fill(start).await;
            });
        }
        Ok(c)
    }

    /// Opens a connection for slot `i` (as [`Pool::get_live`]'s `Err` names) unless one is
    /// there already.
    pub async fn fill(&self, i: usize) -> Result<Arc<Connection>, UpstreamError> {
        let slot = &self.slots[i];
        let _guard = slot.connecting.lock().await;
        if let Some(c) = slot.live() {
            return Ok(c);
        }
        // Let go of a retired or dead connection now: it closes once its last request is
        // done, even if no new one opens.
        *slot.conn.lock().unwrap_or_else(PoisonError::into_inner) = None;
        if let Some((at, e)) = &*self
            .last_failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
        {
            if at.elapsed() < RETRY_AFTER {
                return Err(e.clone());
            }
        }
        let hosts = self.hosts.len();
        let mut last = None;
        for h in 0..hosts {
            let addr = self.hosts[(i + h) % hosts];
            match Connection::open(
                addr,
                self.version,
                self.creds.as_ref(),
                self.keyspace.as_deref(),
                self.settings.connect_timeout,
                self.settings.compression,
                self.settings.tls.as_ref(),
            )
            .await
            {
                Ok(c) => {
                    *slot.conn.lock().unwrap_or_else(PoisonError::into_inner) = Some(c.clone());
                    *self
                        .last_failure
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner) = None;
                    return Ok(c);
                }
                // The upstream's own answer (bad keyspace, bad login) is the same on every node.
                Err(e @ (UpstreamError::Rejected(_) | UpstreamError::AuthRequired { .. })) => {
                    return Err(e)
                }
                Err(e) => {
                    tracing::warn!("{e}");
                    last = Some(e);
                }
            }
        }
        let e = last.unwrap_or(UpstreamError::Connect {
            addr: SocketAddr::from(([0, 0, 0, 0], 0)),
            reason: "no upstream configured".into(),
        });
        *self
            .last_failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some((Instant::now(), e.clone()));
        Err(e)
    }
}

#[cfg(test)]
#[path = "upstream_tests.rs"]
mod tests;
