//! The proxy's upstream side against a hostile or hung scripted upstream (issue 14: "proxy
//! mode gets the same connection, memory and timeout bounds on both sides"): an upstream that
//! accepts and completes the handshake but never answers a request, one that leaves thousands
//! of requests unanswered, and one announcing a response larger than the proxy accepts.
//! (A header announcing a large but allowed body is checked against a counting allocator in
//! `tests/upstream_frame_memory.rs`; the client side is `tests/python/test_proxy_bounds.py`.)

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{BufMut, BytesMut};
use proto::deframe::Deframer;
use proto::error::DbError;
use proto::frame::{Opcode, ProtocolVersion};
use proto::request::{Query, QueryParams, Request};
use proto::response::{Response, ResponseExtras, ResultBody};
use server::{Backend, Config, ConnState, RequestFlags};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::upstream::{MAX_FRAME_BYTES, MAX_IN_FLIGHT};
use crate::ProxyBackend;

const V4: ProtocolVersion = ProtocolVersion::V4;

/// What the scripted upstream saw.
#[derive(Default)]
struct Seen {
    accepted: AtomicUsize,
    /// Connections the proxy closed (EOF seen).
    closed: AtomicUsize,
    /// QUERYs on tables named `hang`, never answered.
    hung: AtomicUsize,
}

/// A v4 upstream: READY to STARTUP / OPTIONS / REGISTER; a QUERY naming the table `hang` is
/// never answered; one naming `oversize` is answered with a header announcing a body one byte
/// over [`MAX_FRAME_BYTES`]; any other QUERY gets a Void result.
async fn scripted_upstream() -> (SocketAddr, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Seen::default());
    let shared = seen.clone();
    tokio::spawn(async move {
        loop {
            let (mut s, _) = listener.accept().await.unwrap();
            shared.accepted.fetch_add(1, Ordering::SeqCst);
            let seen = shared.clone();
            tokio::spawn(async move {
                let mut buf = BytesMut::new();
                let mut deframer = Deframer::new(1 << 20);
                loop {
                    while let Some(env) = deframer.next_envelope(&mut buf).unwrap() {
                        let req = Request::from_envelope(&env).unwrap().request;
                        let mut out = BytesMut::new();
                        let text = match &req {
                            Request::Query(q) => q.query.as_str(),
                            _ => "",
                        };
                        if text.contains("hang") {
                            seen.hung.fetch_add(1, Ordering::SeqCst);
                            continue;
                        }
                        if text.contains("oversize") {
                            proto::frame::encode_header(
                                V4,
                                0,
                                env.stream,
                                Opcode::Result,
                                MAX_FRAME_BYTES + 1,
                                &mut out,
                            );
                            out.put_slice(&[0; 1024]);
                        } else {
                            let resp = match req {
                                Request::Query(_) => Response::Result(ResultBody::Void),
                                _ => Response::Ready,
                            };
                            resp.encode_envelope(
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
                    }
                    if s.read_buf(&mut buf).await.unwrap_or(0) == 0 {
                        seen.closed.fetch_add(1, Ordering::SeqCst);
                        return;
                    }
                }
            });
        }
    });
    (addr, seen)
}

async fn proxy(upstream: SocketAddr, request_timeout: Duration) -> Arc<ProxyBackend> {
    let mut config = Config {
        upstream: vec![upstream],
        request_timeout,
        ..Config::default()
    };
    config.proxy.upstream_connections = 1;
    Arc::new(ProxyBackend::connect(&config).await)
}

fn client() -> Arc<ConnState> {
    Arc::new(ConnState::new(
        1,
        V4,
        SocketAddr::from(([127, 0, 0, 1], 1)),
        None,
        Vec::new(),
    ))
}

fn query(cql: &str) -> Request {
    Request::Query(Query {
        query: cql.into(),
        params: QueryParams::default(),
    })
}

async fn ask(backend: &ProxyBackend, conn: &ConnState, cql: &str) -> Response {
    backend
        .handle(conn, query(cql), None, RequestFlags::default())
        .await
        .response
}

/// Polls `cond` every 10 ms for at most `within`.
async fn wait_for(within: Duration, cond: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + within;
    while !cond() {
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}

#[tokio::test]
async fn a_hung_upstream_gets_read_and_write_timeouts_within_request_timeout() {
    let (upstream, seen) = scripted_upstream().await;
    let timeout = Duration::from_millis(300);
    let backend = proxy(upstream, timeout).await;
    let conn = client();
    for (cql, write) in [
        ("SELECT * FROM ks.hang WHERE k = 1", false),
        ("INSERT INTO ks.hang (k, v) VALUES (1, 1)", true),
        (
            "BEGIN BATCH INSERT INTO ks.hang (k, v) VALUES (1, 1); APPLY BATCH",
            true,
        ),
    ] {
        let started = Instant::now();
        let resp = ask(&backend, &conn, cql).await;
        let took = started.elapsed();
        assert!(
            took >= timeout && took < Duration::from_secs(3),
            "{cql}: {took:?}"
        );
        match resp {
            Response::Error(DbError::ReadTimeout { received: 0, .. }) if !write => {}
            Response::Error(DbError::WriteTimeout { received: 0, .. }) if write => {}
            other => panic!("{cql}: {other:?}"),
        }
    }
    assert_eq!(seen.hung.load(Ordering::SeqCst), 3);
    // The connection still serves what the upstream does answer.
    let resp = ask(&backend, &conn, "SELECT * FROM ks.t WHERE k = 1").await;
    assert_eq!(resp, Response::Result(ResultBody::Void));
}

#[tokio::test]
async fn requests_over_the_in_flight_bound_get_overloaded_and_unanswered_ones_retire_the_connection(
) {
    let (upstream, seen) = scripted_upstream().await;
    // Long enough for all 2,048 to be sent before the first times out (which would retire
    // the connection early), on a loaded machine too.
    let timeout = Duration::from_secs(4);
    let backend = proxy(upstream, timeout).await;
    let conn = client();
    // Fill the one upstream connection with requests the upstream never answers.
    let hung: Vec<_> = (0..MAX_IN_FLIGHT)
        .map(|_| {
            let (backend, conn) = (backend.clone(), conn.clone());
            tokio::spawn(async move { ask(&backend, &conn, "SELECT * FROM ks.hang").await })
        })
        .collect();
    assert!(
        wait_for(Duration::from_secs(20), || seen.hung.load(Ordering::SeqCst)
            == MAX_IN_FLIGHT)
        .await,
        "the upstream received {} requests",
        seen.hung.load(Ordering::SeqCst)
    );
    // One more: no stream id is free, so it is refused at once rather than queued.
    let started = Instant::now();
    let resp = ask(&backend, &conn, "SELECT * FROM ks.t").await;
    assert!(started.elapsed() < timeout, "{:?}", started.elapsed());
    assert!(
        matches!(&resp, Response::Error(DbError::Overloaded { message }) if message.contains("2048 requests")),
        "{resp:?}"
    );
    for h in hung {
        let resp = h.await.unwrap();
        assert!(
            matches!(resp, Response::Error(DbError::ReadTimeout { .. })),
            "{resp:?}"
        );
    }
    // Every stream id is now held by a request that timed out: that connection is retired
    // and a new one serves; the old one is closed, though the upstream never answered.
    let closed_before = seen.closed.load(Ordering::SeqCst);
    let resp = ask(&backend, &conn, "SELECT * FROM ks.t").await;
    assert_eq!(resp, Response::Result(ResultBody::Void));
    assert!(
        wait_for(Duration::from_secs(5), || seen
            .closed
            .load(Ordering::SeqCst)
            > closed_before)
        .await,
        "the retired connection was not closed"
    );
    assert_eq!(seen.hung.load(Ordering::SeqCst), MAX_IN_FLIGHT);
}

#[tokio::test]
async fn an_upstream_answer_over_the_frame_bound_fails_its_request_at_once() {
    let (upstream, seen) = scripted_upstream().await;
    let timeout = Duration::from_secs(10);
    let backend = proxy(upstream, timeout).await;
    let conn = client();
    let closed_before = seen.closed.load(Ordering::SeqCst);
    let started = Instant::now();
    let resp = ask(&backend, &conn, "SELECT * FROM ks.oversize").await;
    assert!(started.elapsed() < Duration::from_secs(3));
    match &resp {
        Response::Error(DbError::ServerError { message }) => {
            assert!(
                message.contains(&format!(
                    "over the proxy's bound of {MAX_FRAME_BYTES} bytes"
                )),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(
        wait_for(Duration::from_secs(5), || seen
            .closed
            .load(Ordering::SeqCst)
            > closed_before)
        .await
    );
    // The next request opens a new connection.
    let resp = ask(&backend, &conn, "SELECT * FROM ks.t").await;
    assert_eq!(resp, Response::Result(ResultBody::Void));
}
