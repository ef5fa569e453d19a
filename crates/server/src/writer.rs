//! The one task per connection that writes to the socket.
//!
//! Everything a connection sends arrives here over a channel as already-encoded envelopes
//! (`Out::Frame`). The channel is unbounded but its bytes are counted ([`OutTx`]): when more
//! than `max_response_backlog_bytes` wait for a client that does not read, the reader stops
//! reading requests and requests already read wait before they run ([`OutTx::room`]) until the
//! writer catches up, so the backlog is bounded by that plus the answers of the requests that
//! were already running. The writer drains everything queued before each write,
//! so under load many responses go out in one syscall; in v5 it also packs them into as few
//! segments as possible. Events for registered connections come from the broadcast bus and are
//! encoded here, in the connection's version.

use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use proto::frame::HEADER_LEN;
use proto::response::{Event, Response};
use proto::segment::{encode_segments, MAX_PAYLOAD};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{broadcast, mpsc, Notify};
use tokio_util::sync::CancellationToken;

use crate::backend::ConnState;
use crate::events::EventKinds;
use crate::response::encode_response;

/// Stop collecting more queued frames once this many bytes are waiting for one write.
const BATCH_BYTES: usize = 256 * 1024;

/// What a running request counts against its connection's backlog until its answer is queued
/// (the answer's own size then counts instead): so a client that pipelines requests without
/// reading answers gets at most `max_response_backlog_bytes / RUNNING_RESERVE` of them running
/// at once, whatever their answers turn out to be.
const RUNNING_RESERVE: usize = 64 * 1024;

/// Bytes handed to the writer and not yet written, plus [`RUNNING_RESERVE`] per running
/// request.
struct Backlog {
    bytes: AtomicUsize,
    /// Above this the connection waits (`max_response_backlog_bytes`).
    max: usize,
    /// Set when the writer ended: nothing will drain any more, so nobody should wait.
    closed: AtomicBool,
    drained: Notify,
}

impl Backlog {
    fn full(&self) -> bool {
        self.bytes.load(Ordering::Acquire) > self.max && !self.closed.load(Ordering::Acquire)
    }

    /// Adds `n` if that stays within the bound.
    fn try_add(&self, n: usize) -> bool {
        let mut cur = self.bytes.load(Ordering::Acquire);
        loop {
            if cur + n > self.max {
                return false;
            }
            match self.bytes.compare_exchange_weak(
                cur,
                cur + n,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(now) => cur = now,
            }
        }
    }

    /// Takes `n` off, waking those waiting when that may make room for them.
    fn sub(&self, n: usize) {
        let before = self.bytes.fetch_sub(n, Ordering::AcqRel);
        if before + RUNNING_RESERVE > self.max {
            self.drained.notify_waiters();
        }
    }
}

/// Marks the backlog closed and wakes its waiters when the writer ends, however it ends.
struct CloseOnDrop(Arc<Backlog>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.closed.store(true, Ordering::Release);
        self.0.drained.notify_waiters();
    }
}

/// The sending side of a connection's output. Cloned into every request task; the writer ends
/// when the last clone is gone.
#[derive(Clone)]
pub(crate) struct OutTx {
    tx: mpsc::UnboundedSender<Out>,
    backlog: Arc<Backlog>,
}

/// The writer's side.
pub(crate) struct OutRx {
    rx: mpsc::UnboundedReceiver<Out>,
    backlog: Arc<Backlog>,
}

/// A connection's output channel, whose backlog bound is `max_backlog` bytes.
pub(crate) fn channel(max_backlog: usize) -> (OutTx, OutRx) {
    let (tx, rx) = mpsc::unbounded_channel();
    let backlog = Arc::new(Backlog {
        bytes: AtomicUsize::new(0),
        max: max_backlog,
        closed: AtomicBool::new(false),
        drained: Notify::new(),
    });
    (
        OutTx {
            tx,
            backlog: backlog.clone(),
        },
        OutRx { rx, backlog },
    )
}

impl OutTx {
    /// Queues one encoded envelope (dropped silently if the writer is gone: the connection is
    /// closing).
    pub(crate) fn frame(&self, frame: Bytes) {
        self.backlog.bytes.fetch_add(frame.len(), Ordering::AcqRel);
        let _ = self.tx.send(Out::Frame(frame));
    }

    /// Queues one envelope given as its header and a body shared with whoever else holds it
    /// (a cached result): the body is copied once, into the write buffer.
    pub(crate) fn envelope(&self, header: [u8; HEADER_LEN], body: Bytes) {
        self.backlog
            .bytes
            .fetch_add(HEADER_LEN + body.len(), Ordering::AcqRel);
        let _ = self.tx.send(Out::Envelope(header, body));
    }

    /// Queues a control message.
    pub(crate) fn control(&self, msg: Out) {
        let _ = self.tx.send(msg);
    }

    /// True while more than the bound waits to be written (and the writer still runs).
    pub(crate) fn backlogged(&self) -> bool {
        self.backlog.full()
    }

    /// Waits until a request may run (its [`RUNNING_RESERVE`] fits in the backlog bound) and
    /// counts it: true, and the call is paired with [`OutTx::end_request`]. False once the
    /// writer ended: the connection is gone, so the request should not run at all (else every
    /// request a client pipelined before leaving would run at once).
    pub(crate) async fn start_request(&self) -> bool {
        // The usual case, without registering for a wake-up (that takes the Notify's lock).
        if self.backlog.closed.load(Ordering::Acquire) {
            return false;
        }
        if self.backlog.try_add(RUNNING_RESERVE) {
            return true;
        }
        loop {
            let mut drained = pin!(self.backlog.drained.notified());
            drained.as_mut().enable();
            if self.backlog.closed.load(Ordering::Acquire) {
                return false;
            }
            if self.backlog.try_add(RUNNING_RESERVE) {
                return true;
            }
            drained.await;
        }
    }

    /// A request counted by [`OutTx::start_request`] has its answer queued (or none).
    pub(crate) fn end_request(&self) {
        self.backlog.sub(RUNNING_RESERVE);
    }

    /// Returns once the queued output is within its bound, or the writer ended.
    pub(crate) async fn room(&self) {
        loop {
            let mut drained = pin!(self.backlog.drained.notified());
            // Registered before the check, so a wake-up between the check and the wait counts.
            drained.as_mut().enable();
            if !self.backlog.full() {
                return;
            }
            drained.await;
        }
    }
}

/// A message from the reader or a request task to the writer.
pub(crate) enum Out {
    /// One encoded envelope, sent as is (v3/v4, and v5 before the segment switch) or packed
    /// into segments (v5 after STARTUP).
    Frame(Bytes),
    /// One envelope as header and body, framed like `Frame`.
    Envelope([u8; HEADER_LEN], Bytes),
    /// From now on wrap envelopes in v5 segments (sent right after READY/AUTHENTICATE in v5).
    StartSegments { compressed: bool },
    /// The connection registered for (more) event kinds; `events` is the bus subscription,
    /// made by the reader on the first REGISTER.
    Register {
        kinds: EventKinds,
        events: Option<broadcast::Receiver<Arc<Event>>>,
        conn: Arc<ConnState>,
    },
}

enum Next {
    Msg(Option<Out>),
    Event(Option<(Event, Arc<ConnState>)>),
}

struct Subscription {
    kinds: EventKinds,
    rx: broadcast::Receiver<Arc<Event>>,
    conn: Arc<ConnState>,
}

/// Encodes queued output into one buffer per write.
struct Batch {
    out: BytesMut,
    /// v5 after the switch: `Some(compressed)`; envelopes collect in `payload` first.
    segments: Option<bool>,
    payload: BytesMut,
    /// Bytes of `Out::Frame`s taken into this batch (for the backlog count).
    frame_bytes: usize,
}

impl Batch {
    fn push_frame(&mut self, frame: &[u8]) {
        self.push_parts(frame, &[]);
    }

    /// Appends the envelope `head` followed by `tail`.
    fn push_parts(&mut self, head: &[u8], tail: &[u8]) {
        let Some(compressed) = self.segments else {
            self.out.extend_from_slice(head);
            self.out.extend_from_slice(tail);
            return;
        };
        let len = head.len() + tail.len();
        if !self.payload.is_empty() && self.payload.len() + len > MAX_PAYLOAD {
            self.seal();
        }
        if len > MAX_PAYLOAD {
            // One large envelope: its own run of non-self-contained segments.
            let mut whole = BytesMut::with_capacity(len);
            whole.extend_from_slice(head);
            whole.extend_from_slice(tail);
            encode_segments(&whole, compressed, &mut self.out);
        } else {
            self.payload.extend_from_slice(head);
            self.payload.extend_from_slice(tail);
        }
    }

    /// Wraps the envelopes collected so far in one self-contained segment.
    fn seal(&mut self) {
        if let (Some(compressed), false) = (self.segments, self.payload.is_empty()) {
            encode_segments(&self.payload, compressed, &mut self.out);
            self.payload.clear();
        }
    }

    fn pending(&self) -> usize {
        self.out.len() + self.payload.len()
    }
}

/// Runs until every sender is gone (reader finished and all in-flight requests answered) or
/// the socket fails; then flushes and half-closes. Cancels `closed` on exit so the reader
/// stops too.
pub(crate) async fn run<W: AsyncWrite + Unpin>(
    mut socket: W,
    out: OutRx,
    closed: CancellationToken,
) {
    let OutRx { mut rx, backlog } = out;
    let _guard = closed.drop_guard();
    let _closes = CloseOnDrop(backlog.clone());
    let mut batch = Batch {
        out: BytesMut::with_capacity(64 * 1024),
        segments: None,
        payload: BytesMut::new(),
        frame_bytes: 0,
    };
    let mut sub: Option<Subscription> = None;
    loop {
        let next = tokio::select! {
            biased;
            msg = rx.recv() => Next::Msg(msg),
            ev = next_event(&mut sub) => Next::Event(ev),
        };
        match next {
            Next::Msg(Some(m)) => handle(m, &mut batch, &mut sub),
            // Every sender is gone: the connection is finished.
            Next::Msg(None) => break,
            Next::Event(Some((event, conn))) => {
                batch.push_frame(&encode_response(&conn, -1, &Response::Event(event)));
            }
            Next::Event(None) => sub = None,
        }
        drain(&mut rx, &mut batch, &mut sub);
        // Let the request tasks that are already runnable finish first, so that under load
        // one write carries many responses (the send syscall dominated a point-read profile).
        if batch.pending() < BATCH_BYTES {
            tokio::task::yield_now().await;
            drain(&mut rx, &mut batch, &mut sub);
        }
        batch.seal();
        if !batch.out.is_empty() {
            if let Err(e) = socket.write_all(&batch.out).await {
                tracing::debug!("connection write failed: {e}");
                return;
            }
            backlog.sub(std::mem::take(&mut batch.frame_bytes));
            batch.out.clear();
            // Do not keep a huge buffer alive after one large response.
            if batch.out.capacity() > 4 * BATCH_BYTES {
                batch.out = BytesMut::with_capacity(64 * 1024);
            }
        }
    }
    batch.seal();
    if !batch.out.is_empty() && socket.write_all(&batch.out).await.is_err() {
        return;
    }
    let _ = socket.shutdown().await;
}

/// Takes everything already queued, up to [`BATCH_BYTES`].
fn drain(rx: &mut mpsc::UnboundedReceiver<Out>, batch: &mut Batch, sub: &mut Option<Subscription>) {
    while batch.pending() < BATCH_BYTES {
        match rx.try_recv() {
            Ok(m) => handle(m, batch, sub),
            Err(_) => break,
        }
    }
}

fn handle(msg: Out, batch: &mut Batch, sub: &mut Option<Subscription>) {
    match msg {
        Out::Frame(frame) => {
            batch.frame_bytes += frame.len();
            batch.push_frame(&frame);
        }
        Out::Envelope(header, body) => {
            batch.frame_bytes += HEADER_LEN + body.len();
            batch.push_parts(&header, &body);
        }
        Out::StartSegments { compressed } => {
            batch.seal();
            batch.segments = Some(compressed);
        }
        Out::Register {
            kinds,
            events,
            conn,
        } => match (sub.as_mut(), events) {
            (Some(s), _) => s.kinds = s.kinds.union(kinds),
            (None, Some(rx)) => *sub = Some(Subscription { kinds, rx, conn }),
            (None, None) => {}
        },
    }
}

/// The next event this connection registered for; pending forever without a subscription.
async fn next_event(sub: &mut Option<Subscription>) -> Option<(Event, Arc<ConnState>)> {
    let Some(s) = sub else {
        return std::future::pending().await;
    };
    loop {
        match s.rx.recv().await {
            Ok(ev) if s.kinds.contains(EventKinds::of(&ev)) => {
                return Some(((*ev).clone(), s.conn.clone()));
            }
            Ok(_) => {}
            Err(broadcast::error::RecvError::Lagged(n)) => {
                tracing::warn!("connection {} fell behind and lost {n} events", s.conn.id());
            }
            Err(broadcast::error::RecvError::Closed) => return None,
        }
    }
}
