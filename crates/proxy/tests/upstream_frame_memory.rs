//! An upstream answer whose header announces a large body (within the proxy's bound) costs
//! the proxy only the bytes that actually arrived: the read buffer grows with them, nothing is
//! reserved for the announced length (issue 14, item 3, on the proxy's upstream side).
//!
//! Measured with a counting global allocator, which is why this is a test binary of its own
//! with a single test: nothing else allocates while it measures.

// The one unsafe block of this file is the allocator, which only forwards to `System`.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::{BufMut, BytesMut};
use proto::deframe::Deframer;
use proto::error::DbError;
use proto::frame::{Opcode, ProtocolVersion};
use proto::request::{Query, QueryParams, Request};
use proto::response::{Response, ResponseExtras};
use proxy::ProxyBackend;
use server::{Backend, Config, ConnState, RequestFlags};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Bytes allocated now, and the most ever at once since the last [`reset_peak`].
static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

struct Counting;

fn grew(n: usize) {
    let now = CURRENT.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged; the
// counters are plain atomics and never affect what is returned.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
            grew(new_size);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn reset_peak() -> usize {
    let now = CURRENT.load(Ordering::Relaxed);
    PEAK.store(now, Ordering::Relaxed);
    now
}

const V4: ProtocolVersion = ProtocolVersion::V4;
/// What the upstream's header announces: 200 MiB, under the proxy's 256 MiB bound.
const ANNOUNCED: usize = 200 << 20;
/// What it then sends of that body before going quiet.
const SENT: usize = 256 << 10;

/// A v4 upstream answering READY to everything but QUERY, and every QUERY with a header
/// announcing [`ANNOUNCED`] bytes followed by only [`SENT`] of them. Counts the QUERY
/// answers it finished writing.
async fn upstream(written: &'static AtomicUsize) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (mut s, _) = listener.accept().await.unwrap();
            tokio::spawn(async move {
                let mut buf = BytesMut::new();
                let mut deframer = Deframer::new(1 << 20);
                loop {
                    while let Some(env) = deframer.next_envelope(&mut buf).unwrap() {
                        let mut out = BytesMut::new();
                        let query = env.opcode == Opcode::Query;
                        if query {
                            proto::frame::encode_header(
                                V4,
                                0,
                                env.stream,
                                Opcode::Result,
                                ANNOUNCED,
                                &mut out,
                            );
                            out.put_bytes(7, SENT);
                        } else {
                            Response::Ready.encode_envelope(
                                V4,
                                env.stream,
                                &ResponseExtras::default(),
                                None,
                                &mut out,
                            );
                        }
                        if s.write_all(&out).await.is_err() {
                            return;
                        }
                        if query {
                            written.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                    if s.read_buf(&mut buf).await.unwrap_or(0) == 0 {
                        return;
                    }
                }
            });
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_announced_upstream_body_costs_only_the_bytes_that_arrived() {
    static WRITTEN: AtomicUsize = AtomicUsize::new(0);
    let addr = upstream(&WRITTEN).await;
    let mut config = Config {
        upstream: vec![addr],
        request_timeout: Duration::from_secs(2),
        ..Config::default()
    };
    config.proxy.upstream_connections = 1;
    let backend = ProxyBackend::connect(&config).await;
    let conn = ConnState::new(
        1,
        V4,
        SocketAddr::from(([127, 0, 0, 1], 1)),
        None,
        Vec::new(),
    );
    let request = || {
        Request::Query(Query {
            query: "SELECT * FROM ks.t".into(),
            params: QueryParams::default(),
        })
    };
    let before = reset_peak();
    // Eight requests on the one connection: the first answer's header announces 200 MiB and
    // the rest (the other answers included) is read as that body's first bytes.
    let started = Instant::now();
    let answers = futures_join(
        (0..8)
            .map(|_| backend.handle(&conn, request(), None, RequestFlags::default()))
            .collect(),
    )
    .await;
    let took = started.elapsed();
    let peak = PEAK.load(Ordering::Relaxed);
    assert_eq!(
        WRITTEN.load(Ordering::SeqCst),
        8,
        "the upstream sent its bytes"
    );
    for a in answers {
        assert!(
            matches!(a.response, Response::Error(DbError::ReadTimeout { .. })),
            "{:?}",
            a.response
        );
    }
    assert!(took < Duration::from_secs(5), "{took:?}");
    // The proxy read 8 x 256 KiB of the body: a few MiB at most, not the 200 MiB announced.
    let grown = peak - before;
    assert!(
        grown < 16 << 20,
        "{grown} bytes allocated for {} bytes received",
        8 * SENT
    );
}

/// Runs the futures concurrently on this task and returns their outputs in order.
async fn futures_join<F: std::future::Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<_> = futures.into_iter().map(Box::pin).collect();
    let mut out: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (f, o) in futures.iter_mut().zip(out.iter_mut()) {
            if o.is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => *o = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out.into_iter().map(|o| o.unwrap()).collect()
}
