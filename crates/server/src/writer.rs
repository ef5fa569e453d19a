//! The one task per connection that writes to the socket.
//!
//! Everything a connection sends arrives here over a channel as already-encoded envelopes
//! (`Out::Frame`). The channel is unbounded but its bytes are counted ([`OutTx`]): when more
//! than [`MAX_BACKLOG_BYTES`] wait for a client that does not read, the reader stops reading
//! requests until the writer catches up, so the backlog is bounded by that plus the responses of
//! the requests already in flight. The writer drains everything queued before each write,
//! so under load many responses go out in one syscall; in v5 it also packs them into as few
//! segments as possible. Events for registered connections come from the broadcast bus and are
//! encoded here, in the connection's version.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use proto::frame::HEADER_LEN;
use proto::response::{Event, Response};
use proto::segment::{encode_segments, MAX_PAYLOAD};
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::{broadcast, mpsc, Notify};
use tokio_util::sync::CancellationToken;

use crate::backend::ConnState;
use crate::events::EventKinds;
use crate::response::encode_response;

/// Stop collecting more queued frames once this many bytes are waiting for one write.
const BATCH_BYTES: usize = 256 * 1024;

/// Queued output above which the reader stops reading requests.
pub(crate) const MAX_BACKLOG_BYTES: usize = 8 * 1024 * 1024;

/// Bytes handed to the writer and not yet written.
#[derive(Default)]
struct Backlog {
    bytes: AtomicUsize,
    drained: Notify,
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

pub(crate) fn channel() -> (OutTx, OutRx) {
    let (tx, rx) = mpsc::unbounded_channel();
    let backlog = Arc::new(Backlog::default());
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

    /// True while more than [`MAX_BACKLOG_BYTES`] wait to be written.
    pub(crate) fn backlogged(&self) -> bool {
        self.backlog.bytes.load(Ordering::Acquire) > MAX_BACKLOG_BYTES
    }

    /// Returns once the queued output is below [`MAX_BACKLOG_BYTES`].
    pub(crate) async fn room(&self) {
        while self.backlog.bytes.load(Ordering::Acquire) > MAX_BACKLOG_BYTES {
            // `notify_one` stores a permit, so a wake-up between the check and here is kept.
            self.backlog.drained.notified().await;
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
pub(crate) async fn run(mut socket: OwnedWriteHalf, out: OutRx, closed: CancellationToken) {
    let OutRx { mut rx, backlog } = out;
    let _guard = closed.drop_guard();
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
            let written = std::mem::take(&mut batch.frame_bytes);
            let before = backlog.bytes.fetch_sub(written, Ordering::AcqRel);
            if before > MAX_BACKLOG_BYTES && before - written <= MAX_BACKLOG_BYTES {
                backlog.drained.notify_one();
            }
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
