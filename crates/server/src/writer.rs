//! The one task per connection that writes to the socket.
//!
//! Everything a connection sends arrives here over a channel as already-encoded envelopes
//! (`Out::Frame`). The channel is unbounded but its bytes are counted ([`OutTx`]): when more
//! than `max_response_backlog_bytes` wait for a client that does not read, the reader stops
//! reading requests and requests already read wait before they run ([`OutTx::room`]) until the
//! writer catches up, so the backlog is bounded by that plus the answers of the requests that
//! were already running. The writer drains everything queued before each write,
//! so under load many responses go out in one syscall; in v5 it also packs them into as few
//! segments as possible. Small answers are copied into the batch buffer; a large body
//! ([`SEND_AS_IS`], a scan's rows) is not: it stays where it was encoded and the batch is
//! written with vectored writes around it (in v5 the segments are built around it). Events
//! for registered connections come from the broadcast bus and are encoded here, in the
//! connection's version.

use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use std::io::IoSlice;

use bytes::{BufMut, Bytes, BytesMut};
use proto::frame::HEADER_LEN;
use proto::response::{Event, Response};
use proto::segment::{encode_segments, uncompressed_header, PayloadCrc, MAX_PAYLOAD};
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
    /// (a cached result): the body is copied once, into the write buffer, or not at all if
    /// large ([`SEND_AS_IS`]).
    pub(crate) fn envelope(&self, header: [u8; HEADER_LEN], body: Bytes) {
        self.backlog
            .bytes
            .fetch_add(HEADER_LEN + body.len(), Ordering::AcqRel);
        let _ = self.tx.send(Out::Envelope(header, body));
    }

    /// Queues one envelope given as its head and the bulk of its body, which is written from
    /// where it is if large ([`SEND_AS_IS`]).
    pub(crate) fn parts(&self, head: Bytes, bulk: Bytes) {
        self.backlog
            .bytes
            .fetch_add(head.len() + bulk.len(), Ordering::AcqRel);
        let _ = self.tx.send(Out::Parts(Box::new((head, bulk))));
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
    /// One envelope as its head (header, extras, the body's start) and the rest of its body,
    /// framed like `Frame` (boxed: the common messages stay small).
    Parts(Box<(Bytes, Bytes)>),
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

/// Bodies at least this big are written from where they are (the encoded result's own
/// buffer), not copied into the batch: the write is vectored over the batch buffer and them.
/// Smaller ones are copied, so many small answers still go out as one buffer. 2 KiB, not 8:
/// a 4 KB result the proxy answers from its cache was copied from memory no CPU cache held
/// (20% of the proxy's CPU on 4 KB hits); sent as is, 5% less CPU a hit, and standalone 4 KB
/// reads unchanged (`bench/results/2026-12-01/proxy-s36/README.md`).
pub(crate) const SEND_AS_IS: usize = 2 * 1024;

/// Queued output encoded for one write: `out`, with the large bodies of `bulks` spliced in
/// (each at its offset into `out`).
struct Batch {
    out: BytesMut,
    /// Large bodies, each sent after `out[..at]` (and after any earlier bulk), not copied.
    bulks: Vec<(usize, Bytes)>,
    bulk_bytes: usize,
    /// v5 after the switch: `Some(compressed)`.
    segments: Option<bool>,
    /// Compressed v5: envelopes collect here, to be compressed segment by segment.
    payload: BytesMut,
    /// Uncompressed v5: the self-contained segment being filled in place in `out`.
    open: Option<OpenSegment>,
    /// Bytes of frames taken into this batch (for the backlog count).
    frame_bytes: usize,
}

/// An uncompressed v5 segment written in place: a header placeholder at `header_at` in `out`,
/// then its payload (in `out` and bulks), whose length and CRC are kept as it grows.
struct OpenSegment {
    header_at: usize,
    len: usize,
    crc: PayloadCrc,
}

impl Batch {
    fn new() -> Self {
        Batch {
            out: BytesMut::with_capacity(64 * 1024),
            bulks: Vec::new(),
            bulk_bytes: 0,
            segments: None,
            payload: BytesMut::new(),
            open: None,
            frame_bytes: 0,
        }
    }

    fn push_frame(&mut self, frame: &[u8]) {
        match self.segments {
            // The point-read path: one small envelope, copied.
            None => self.out.extend_from_slice(frame),
            Some(false) => self.push_segmented(frame, &Bytes::new()),
            Some(true) => self.push_compressed(frame, &[]),
        }
    }

    /// Appends the envelope `head` followed by `tail`.
    fn push_parts(&mut self, head: &[u8], tail: &Bytes) {
        match self.segments {
            None => {
                self.out.extend_from_slice(head);
                self.put(tail);
            }
            Some(false) => self.push_segmented(head, tail),
            Some(true) => self.push_compressed(head, tail),
        }
    }

    /// Appends `bytes` to the output: copied, or as a bulk if large.
    fn put(&mut self, bytes: &Bytes) {
        if bytes.len() >= SEND_AS_IS {
            self.bulk_bytes += bytes.len();
            self.bulks.push((self.out.len(), bytes.clone()));
        } else {
            self.out.extend_from_slice(bytes);
        }
    }

    /// Uncompressed v5: the envelope joins the open self-contained segment (opening one, or
    /// sealing the open one first when it would not fit), or, larger than one segment, goes
    /// out as its own run of non-self-contained segments. Payload is never copied twice: the
    /// segments are built in `out` around it.
    fn push_segmented(&mut self, head: &[u8], tail: &Bytes) {
        let len = head.len() + tail.len();
        if self
            .open
            .as_ref()
            .is_some_and(|s| s.len + len > MAX_PAYLOAD)
        {
            self.seal();
        }
        if len > MAX_PAYLOAD {
            // Cut head ++ tail into chunks of MAX_PAYLOAD, each its own segment.
            let mut head = head;
            let mut tail = tail.clone();
            while !head.is_empty() || !tail.is_empty() {
                let from_head = head.len().min(MAX_PAYLOAD);
                let from_tail = tail.len().min(MAX_PAYLOAD - from_head);
                let piece = tail.split_to(from_tail);
                self.out
                    .extend_from_slice(&uncompressed_header(from_head + from_tail, false));
                let mut crc = PayloadCrc::new();
                crc.update(&head[..from_head]);
                crc.update(&piece);
                self.out.extend_from_slice(&head[..from_head]);
                head = &head[from_head..];
                self.put(&piece);
                self.out.put_u32_le(crc.finish());
            }
            return;
        }
        let seg = self.open.get_or_insert_with(|| {
            let header_at = self.out.len();
            self.out.extend_from_slice(&[0; 6]);
            OpenSegment {
                header_at,
                len: 0,
                crc: PayloadCrc::new(),
            }
        });
        seg.len += len;
        seg.crc.update(head);
        seg.crc.update(tail);
        self.out.extend_from_slice(head);
        self.put(tail);
    }

    /// Compressed v5: envelopes collect in `payload`, compressed when a segment is sealed.
    fn push_compressed(&mut self, head: &[u8], tail: &[u8]) {
        let len = head.len() + tail.len();
        if !self.payload.is_empty() && self.payload.len() + len > MAX_PAYLOAD {
            self.seal();
        }
        if len > MAX_PAYLOAD {
            // One large envelope: its own run of non-self-contained segments.
            let mut whole = BytesMut::with_capacity(len);
            whole.extend_from_slice(head);
            whole.extend_from_slice(tail);
            encode_segments(&whole, true, &mut self.out);
        } else {
            self.payload.extend_from_slice(head);
            self.payload.extend_from_slice(tail);
        }
    }

    /// Ends the self-contained segment being filled, if any.
    fn seal(&mut self) {
        if let Some(seg) = self.open.take() {
            let at = seg.header_at;
            self.out[at..at + 6].copy_from_slice(&uncompressed_header(seg.len, true));
            self.out.put_u32_le(seg.crc.finish());
        }
        if !self.payload.is_empty() {
            encode_segments(&self.payload, true, &mut self.out);
            self.payload.clear();
        }
    }

    fn pending(&self) -> usize {
        self.out.len() + self.bulk_bytes + self.payload.len()
    }

    /// Writes the sealed batch: `out` with its bulks spliced in.
    async fn write_to<W: AsyncWrite + Unpin>(&mut self, socket: &mut W) -> std::io::Result<()> {
        debug_assert!(self.open.is_none() && self.payload.is_empty());
        if self.bulks.is_empty() {
            socket.write_all(&self.out).await?;
        } else {
            let mut slices = Vec::with_capacity(2 * self.bulks.len() + 1);
            let mut at = 0;
            for (end, bulk) in &self.bulks {
                slices.push(IoSlice::new(&self.out[at..*end]));
                slices.push(IoSlice::new(bulk));
                at = *end;
            }
            slices.push(IoSlice::new(&self.out[at..]));
            slices.retain(|s| !s.is_empty());
            let mut unwritten = &mut slices[..];
            while !unwritten.is_empty() {
                let n = socket.write_vectored(unwritten).await?;
                if n == 0 {
                    return Err(std::io::ErrorKind::WriteZero.into());
                }
                IoSlice::advance_slices(&mut unwritten, n);
            }
            self.bulks.clear();
            self.bulk_bytes = 0;
        }
        self.out.clear();
        // Do not keep a huge buffer alive after one large response.
        if self.out.capacity() > 4 * BATCH_BYTES {
            self.out = BytesMut::with_capacity(64 * 1024);
        }
        Ok(())
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
    let mut batch = Batch::new();
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
        if batch.pending() > 0 {
            if let Err(e) = batch.write_to(&mut socket).await {
                tracing::debug!("connection write failed: {e}");
                return;
            }
            backlog.sub(std::mem::take(&mut batch.frame_bytes));
        }
    }
    batch.seal();
    if batch.pending() > 0 && batch.write_to(&mut socket).await.is_err() {
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
        Out::Parts(parts) => {
            let (head, bulk) = *parts;
            batch.frame_bytes += head.len() + bulk.len();
            batch.push_parts(&head, &bulk);
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

#[cfg(test)]
mod tests {
    use std::io;
    use std::pin::Pin;
    use std::sync::Mutex;
    use std::task::{Context, Poll};

    use proto::frame::{decode_envelope, encode_header, Opcode, ProtocolVersion};
    use proto::segment::{decode_segment, EnvelopeAssembler};

    use super::*;

    /// A socket that keeps what it is given, taking at most `per_call` bytes a write (so
    /// writes end mid-buffer and mid-slice), vectored or not.
    struct Sink {
        got: Arc<Mutex<Vec<u8>>>,
        per_call: usize,
        vectored: bool,
    }

    impl AsyncWrite for Sink {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            let n = buf.len().min(self.per_call);
            self.got.lock().unwrap().extend_from_slice(&buf[..n]);
            Poll::Ready(Ok(n))
        }

        fn poll_write_vectored(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            bufs: &[IoSlice<'_>],
        ) -> Poll<io::Result<usize>> {
            if !self.vectored {
                let first = bufs
                    .iter()
                    .find(|b| !b.is_empty())
                    .map_or(&[][..], |b| &b[..]);
                return self.poll_write(cx, first);
            }
            let mut left = self.per_call;
            let mut got = self.got.lock().unwrap();
            for b in bufs {
                let n = b.len().min(left);
                got.extend_from_slice(&b[..n]);
                left -= n;
            }
            Poll::Ready(Ok(self.per_call - left))
        }

        fn is_write_vectored(&self) -> bool {
            self.vectored
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    /// Envelope `i`: a RESULT on stream `i` whose body is `len` bytes of a pattern of `i`.
    fn envelope(version: ProtocolVersion, i: usize, len: usize) -> (BytesMut, Bytes) {
        let mut header = BytesMut::new();
        encode_header(version, 0, i as i16, Opcode::Result, len, &mut header);
        let body: Vec<u8> = (0..len).map(|j| (i * 31 + j * 7 + j / 251) as u8).collect();
        (header, Bytes::from(body))
    }

    const SIZES: [usize; 12] = [
        0,
        10,
        1000,
        SEND_AS_IS - 1,
        SEND_AS_IS,
        20_000,
        60_000,
        70_000,
        MAX_PAYLOAD - 9,
        MAX_PAYLOAD - 8,
        130_000,
        300_000,
    ];

    /// Sends every size of [`SIZES`] three times over, each time as one frame, as header and
    /// body, and as head (header plus a few body bytes) and bulk; returns the bytes written and
    /// what each envelope should be.
    async fn write_all_kinds(
        version: ProtocolVersion,
        segments: Option<bool>,
        per_call: usize,
        vectored: bool,
    ) -> (Vec<u8>, Vec<(i16, Bytes)>) {
        let got = Arc::new(Mutex::new(Vec::new()));
        let sink = Sink {
            got: got.clone(),
            per_call,
            vectored,
        };
        let (tx, rx) = channel(1 << 30);
        let backlog = tx.backlog.clone();
        if let Some(compressed) = segments {
            tx.control(Out::StartSegments { compressed });
        }
        let mut expected = Vec::new();
        for (i, len) in SIZES.iter().cycle().take(3 * SIZES.len()).enumerate() {
            let (header, body) = envelope(version, i, *len);
            match i % 3 {
                0 => {
                    let mut whole = header;
                    whole.extend_from_slice(&body);
                    tx.frame(whole.freeze());
                }
                1 => tx.envelope(header[..].try_into().unwrap(), body.clone()),
                _ => {
                    let cut = body.len().min(5);
                    let mut head = header;
                    head.extend_from_slice(&body[..cut]);
                    tx.parts(head.freeze(), body.slice(cut..));
                }
            }
            expected.push((i as i16, body));
        }
        drop(tx);
        run(sink, rx, CancellationToken::new()).await;
        // Every byte counted was released, exactly.
        assert_eq!(backlog.bytes.load(Ordering::Acquire), 0);
        let got = std::mem::take(&mut *got.lock().unwrap());
        (got, expected)
    }

    fn decode_plain(bytes: &[u8]) -> Vec<(i16, Bytes)> {
        let mut buf = BytesMut::from(bytes);
        let mut envs = Vec::new();
        while let Some(env) = decode_envelope(&mut buf, 1 << 30, None).unwrap() {
            envs.push((env.stream, env.body));
        }
        assert!(buf.is_empty(), "{} bytes left over", buf.len());
        envs
    }

    fn decode_segments(bytes: &[u8], compressed: bool) -> Vec<(i16, Bytes)> {
        let mut buf = BytesMut::from(bytes);
        let mut assembler = EnvelopeAssembler::new(1 << 30);
        let mut envs = Vec::new();
        while let Some(seg) = decode_segment(&mut buf, compressed).unwrap() {
            assert!(seg.payload.len() <= MAX_PAYLOAD);
            assembler.push(seg, &mut envs).unwrap();
        }
        assert!(buf.is_empty(), "{} bytes left over", buf.len());
        assert!(!assembler.in_progress());
        envs.into_iter().map(|e| (e.stream, e.body)).collect()
    }

    #[tokio::test]
    async fn every_envelope_arrives_whole_and_in_order_in_v3_and_v4() {
        for version in [ProtocolVersion::V3, ProtocolVersion::V4] {
            for (per_call, vectored) in [(usize::MAX, true), (4099, true), (4099, false)] {
                let (got, expected) = write_all_kinds(version, None, per_call, vectored).await;
                assert!(
                    decode_plain(&got) == expected,
                    "{version:?} {per_call} {vectored}"
                );
            }
        }
    }

    #[tokio::test]
    async fn every_envelope_arrives_whole_and_in_order_in_v5_segments() {
        for compressed in [false, true] {
            for (per_call, vectored) in [(usize::MAX, true), (4099, true), (4099, false)] {
                let (got, expected) =
                    write_all_kinds(ProtocolVersion::V5, Some(compressed), per_call, vectored)
                        .await;
                let envs = decode_segments(&got, compressed);
                assert!(envs == expected, "{compressed} {per_call} {vectored}");
            }
        }
    }

    #[tokio::test]
    async fn a_client_that_does_not_read_holds_the_backlog_until_it_does() {
        let (socket, mut peer) = tokio::io::duplex(16 * 1024);
        let (tx, rx) = channel(256 * 1024);
        let backlog = tx.backlog.clone();
        let writer = tokio::spawn(run(socket, rx, CancellationToken::new()));
        let mut expected = Vec::new();
        for i in 0..10 {
            let (header, body) = envelope(ProtocolVersion::V4, i, 60_000);
            tx.parts(header.freeze(), body.clone());
            expected.push((i as i16, body));
        }
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        // 600 KB queued, at most 16 KiB of it taken by the peer: over the 256 KiB bound.
        assert!(tx.backlogged());
        let waiting = {
            let tx = tx.clone();
            tokio::spawn(async move { tx.room().await })
        };
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(!waiting.is_finished());
        drop(tx);
        let mut got = Vec::new();
        tokio::io::AsyncReadExt::read_to_end(&mut peer, &mut got)
            .await
            .unwrap();
        waiting.await.unwrap();
        writer.await.unwrap();
        assert_eq!(backlog.bytes.load(Ordering::Acquire), 0);
        assert!(decode_plain(&got) == expected);
    }
}
