//! Tests of `upstream` against fake upstream servers: v5 segments, the control connection's
//! events, the pool's bounds and choice of connection, idle close, the connect timeout.

use super::*;
use proto::frame::decode_envelope;
use proto::request::Request;
use proto::response::{ResponseExtras, SchemaChange, SchemaChangeTarget, SchemaChangeType};
use tokio::net::TcpListener;

/// A one-connection fake upstream (v4): answers every request READY, pushes `event`
/// after the second request (REGISTER), then closes.
async fn fake_upstream(event: Event) -> SocketAddr {
    fake_upstream_pushing(event, 1).await
}

/// [`fake_upstream`] pushing `event` `times` times.
async fn fake_upstream_pushing(event: Event, times: usize) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut buf = BytesMut::new();
        let mut answered = 0;
        let send = |resp: &Response, stream: i16| {
            let mut out = BytesMut::new();
            resp.encode_envelope(
                ProtocolVersion::V4,
                stream,
                &ResponseExtras::default(),
                None,
                &mut out,
            );
            out
        };
        while answered < 2 {
            if let Some(env) = decode_envelope(&mut buf, 1 << 20, None).unwrap() {
                let req = Request::from_envelope(&env).unwrap().request;
                assert!(matches!(
                    (answered, &req),
                    (0, Request::Startup(_)) | (1, Request::Register(_))
                ));
                s.write_all(&send(&Response::Ready, env.stream))
                    .await
                    .unwrap();
                answered += 1;
                continue;
            }
            assert!(s.read_buf(&mut buf).await.unwrap() > 0);
        }
        let one = send(&Response::Event(event), -1);
        let mut all = BytesMut::new();
        for _ in 0..times {
            all.extend_from_slice(&one);
        }
        s.write_all(&all).await.unwrap();
        // Dropping the socket closes the connection.
    });
    addr
}

/// A one-connection fake upstream speaking v5: STARTUP and its READY as plain envelopes,
/// then segments. It answers the first request after STARTUP with one segment holding an
/// EVENT and then the request's RESULT, and closes after the second.
async fn fake_v5_upstream(event: Event) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut buf = BytesMut::new();
        let mut deframer = Deframer::new(1 << 20);
        let v5 = ProtocolVersion::V5;
        let none = ResponseExtras::default();
        for answered in 0..3 {
            let env = loop {
                if let Some(env) = deframer.next_envelope(&mut buf).unwrap() {
                    break env;
                }
                if s.read_buf(&mut buf).await.unwrap() == 0 {
                    return;
                }
            };
            let req = Request::from_envelope(&env).unwrap().request;
            let mut out = BytesMut::new();
            match answered {
                0 => {
                    assert!(matches!(req, Request::Startup(_)));
                    Response::Ready.encode_envelope(v5, env.stream, &none, None, &mut out);
                    s.write_all(&out).await.unwrap();
                    deframer.start_segments(false);
                    continue;
                }
                1 => Response::Event(event.clone()).encode_envelope(v5, -1, &none, None, &mut out),
                _ => {}
            }
            let void = Response::Result(ResultBody::Void);
            void.encode_envelope(v5, env.stream, &none, None, &mut out);
            let mut segments = BytesMut::new();
            encode_segments(&out, false, &mut segments);
            s.write_all(&segments).await.unwrap();
        }
    });
    addr
}

#[tokio::test]
async fn a_v5_upstream_switches_to_segments_and_every_envelope_of_a_segment_is_routed() {
    let event = Event::SchemaChange(SchemaChange {
        change: SchemaChangeType::Dropped,
        target: SchemaChangeTarget::Keyspace("ks".into()),
    });
    let addr = fake_v5_upstream(event.clone()).await;
    let timeout = Duration::from_secs(5);
    let (conn, mut rx) =
        Connection::open_for_events(addr, ProtocolVersion::V5, None, timeout, None)
            .await
            .unwrap();
    let query = Request::Query(Query {
        query: "INSERT INTO ks.t (k) VALUES (1)".into(),
        params: QueryParams::default(),
    });
    for _ in 0..2 {
        assert!(matches!(
            conn.request(&query, timeout).await,
            Ok(Response::Result(ResultBody::Void))
        ));
    }
    assert_eq!(rx.recv().await, Some(event));
    assert_eq!(
        rx.recv().await,
        None,
        "the channel ends with the connection"
    );
}

#[tokio::test]
async fn control_connection_delivers_events_and_ends_when_closed() {
    let event = Event::SchemaChange(SchemaChange {
        change: SchemaChangeType::Created,
        target: SchemaChangeTarget::Table {
            keyspace: "ks".into(),
            name: "t".into(),
        },
    });
    let addr = fake_upstream(event.clone()).await;
    let (conn, mut rx) = Connection::open_for_events(
        addr,
        ProtocolVersion::V4,
        None,
        Duration::from_secs(5),
        None,
    )
    .await
    .unwrap();
    let reg = Request::Register(vec!["SCHEMA_CHANGE".into()]);
    assert!(matches!(
        conn.request(&reg, Duration::from_secs(5)).await,
        Ok(Response::Ready)
    ));
    assert_eq!(rx.recv().await, Some(event));
    assert_eq!(
        rx.recv().await,
        None,
        "the channel ends with the connection"
    );
    assert!(!conn.is_alive());
}

/// An upstream pushing events faster than the relay takes them (here: nobody takes them)
/// fills the queue to its bound and no further: the rest are dropped and counted. With the
/// unbounded channel this held all 5,000.
#[tokio::test]
async fn a_flood_of_events_is_bounded_and_counted() {
    let event = Event::SchemaChange(SchemaChange {
        change: SchemaChangeType::Updated,
        target: SchemaChangeTarget::Keyspace("ks".into()),
    });
    let pushed = 5_000;
    let addr = fake_upstream_pushing(event.clone(), pushed).await;
    let timeout = Duration::from_secs(5);
    let (conn, mut rx) =
        Connection::open_for_events(addr, ProtocolVersion::V4, None, timeout, None)
            .await
            .unwrap();
    let reg = Request::Register(vec!["SCHEMA_CHANGE".into()]);
    assert!(matches!(
        conn.request(&reg, timeout).await,
        Ok(Response::Ready)
    ));
    // The reader marks the connection dead once it read every event and then the close.
    let deadline = Instant::now() + timeout;
    while conn.is_alive() {
        assert!(Instant::now() < deadline, "the connection never closed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(rx.len(), EVENT_QUEUE);
    assert_eq!(rx.take_dropped(), (pushed - EVENT_QUEUE) as u64);
    assert_eq!(rx.take_dropped(), 0, "taking resets the count");
    let mut taken = 0;
    while let Some(e) = rx.recv().await {
        assert_eq!(e, event);
        taken += 1;
    }
    assert_eq!(
        taken, EVENT_QUEUE,
        "the queued events are delivered, then the end"
    );
}

/// Past the bound the least recently used pool is forgotten (its connections close with
/// it), a pool in use stays. Without the bound, 40 keyspaces made 40 pools.
#[tokio::test]
async fn pools_are_bounded_and_the_least_recently_used_goes() {
    let pools: Pools<u32> = Pools::new(8);
    let settings = Settings {
        connect_timeout: Duration::from_secs(1),
        connections_per_host: 1,
        compression: None,
        tls: None,
    };
    let addr: SocketAddr = "127.0.0.1:9".parse().unwrap();
    let make = || {
        Pool::new(
            Arc::from(vec![addr]),
            ProtocolVersion::V4,
            None,
            None,
            settings.clone(),
        )
    };
    let hot = pools.get_or_insert_with(&0, make);
    for k in 1..40u32 {
        // Pool 0 is used between the others: never the least recently used.
        tokio::time::sleep(Duration::from_millis(2)).await;
        assert!(Arc::ptr_eq(&pools.get_or_insert_with(&0, make), &hot));
        tokio::time::sleep(Duration::from_millis(2)).await;
        pools.get_or_insert_with(&k, make);
        assert!(pools.len() <= 8, "{} pools", pools.len());
    }
    assert_eq!(pools.len(), 8);
    assert_eq!(pools.evicted(), 40 - 8);
    assert!(Arc::ptr_eq(&pools.get_or_insert_with(&0, make), &hot));
    // The newest seven are the others kept.
    let before = pools.evicted();
    for k in 33..40u32 {
        pools.get_or_insert_with(&k, make);
    }
    assert_eq!(pools.evicted(), before, "pools 33 to 39 were kept");
}

/// A fake upstream (v4) taking any number of connections, each answered by [`ready_to_all`]
/// until the test ends.
async fn fake_ready_upstream() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(ready_to_all(socket));
        }
    });
    addr
}

/// Answers every request on `s` READY (STARTUP's answer) until the peer closes.
async fn ready_to_all(mut s: TcpStream) {
    let mut buf = BytesMut::new();
    while s.read_buf(&mut buf).await.unwrap_or(0) > 0 {
        while let Some(env) = decode_envelope(&mut buf, 1 << 20, None).unwrap() {
            let mut out = BytesMut::new();
            let none = ResponseExtras::default();
            Response::Ready.encode_envelope(ProtocolVersion::V4, env.stream, &none, None, &mut out);
            s.write_all(&out).await.unwrap();
        }
    }
}

/// A v4 pool of two connections to each of `nodes`, none open yet.
fn two_per_node(nodes: Vec<SocketAddr>) -> Arc<Pool> {
    let settings = Settings {
        connect_timeout: Duration::from_secs(5),
        connections_per_host: 2,
        compression: None,
        tls: None,
    };
    let nodes = Arc::from(nodes);
    Arc::new(Pool::new(nodes, ProtocolVersion::V4, None, None, settings))
}

/// A client connection's requests all go upstream on one connection of the pool, so the
/// requests it sent together leave in one write (issue 16 item 7); client connections
/// are spread over the pool's connections. Dealt out round robin per request, one client's
/// consecutive requests went on alternate connections.
#[tokio::test]
async fn a_client_connection_keeps_to_one_upstream_connection() {
    let addr = fake_ready_upstream().await;
    let pool = two_per_node(vec![addr]);
    // Client 7's slot opens inline; client 8's first request takes it while its own slot
    // opens in the background.
    let a = pool.get(7).await.unwrap();
    let b = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            let b = pool.get(8).await.unwrap();
            if !Arc::ptr_eq(&a, &b) {
                return b;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("client 8's own upstream connection opens");
    for (client, conn) in [(7, &a), (8, &b), (7, &a)] {
        for _ in 0..3 {
            assert!(Arc::ptr_eq(&pool.get(client).await.unwrap(), conn));
        }
    }
    assert!(Arc::ptr_eq(&pool.get(9).await.unwrap(), &a));
}

/// With two nodes, requests go to them in turn, and on each node a client connection's
/// requests keep to one connection (of its two there), another client's to the other.
#[tokio::test]
async fn requests_go_to_the_nodes_in_turn_each_keeping_a_client_to_one_connection() {
    let nodes = vec![fake_ready_upstream().await, fake_ready_upstream().await];
    let pool = two_per_node(nodes);
    // Until all four slots are open (a request whose slot is not open yet takes another
    // connection while its own opens in the background).
    let mut open: Vec<Arc<Connection>> = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), async {
        while open.len() < 4 {
            // Two requests a client: one to each node.
            for client in [7, 7, 8, 8] {
                let c = pool.get(client).await.unwrap();
                if !open.iter().any(|o| Arc::ptr_eq(o, &c)) {
                    open.push(c);
                }
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the pool's four connections open");
    let mut used = Vec::new();
    for client in [7, 8] {
        let mut picks = Vec::new();
        for _ in 0..6 {
            picks.push(pool.get(client).await.unwrap());
        }
        for w in picks.windows(2) {
            assert_ne!(w[0].addr(), w[1].addr(), "the nodes in turn");
        }
        for p in &picks {
            assert!(
                picks
                    .iter()
                    .filter(|q| q.addr() == p.addr())
                    .all(|q| Arc::ptr_eq(q, p)),
                "client {client}: one connection on each node"
            );
        }
        used.push(picks);
    }
    assert!(
        used[0]
            .iter()
            .all(|a| used[1].iter().all(|b| !Arc::ptr_eq(a, b))),
        "two client connections, two connections on each node"
    );
}

/// A connection to a fake upstream that answers STARTUP, then neither reads nor closes (a hung
/// process).
async fn connection_to_a_hung_upstream() -> Arc<Connection> {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut buf = BytesMut::new();
        while decode_envelope(&mut buf, 1 << 20, None).unwrap().is_none() {
            assert!(s.read_buf(&mut buf).await.unwrap() > 0);
        }
        let mut out = BytesMut::new();
        Response::Ready.encode_envelope(
            ProtocolVersion::V4,
            0,
            &ResponseExtras::default(),
            None,
            &mut out,
        );
        s.write_all(&out).await.unwrap();
        tokio::time::sleep(Duration::from_secs(3600)).await;
        drop(s);
    });
    let connect = Duration::from_secs(5);
    Connection::open(addr, ProtocolVersion::V4, None, None, connect, None, None)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_connection_nobody_uses_closes_though_the_upstream_never_does() {
    // The proxy's reader must not wait for a hung upstream forever once the connection is
    // dropped.
    let conn = connection_to_a_hung_upstream().await;
    let shared = conn.shared.clone();
    drop(conn);
    // The reader and writer tasks hold the other references; both end.
    let deadline = Instant::now() + Duration::from_secs(5);
    while Arc::strong_count(&shared) > 1 {
        assert!(
            Instant::now() < deadline,
            "the reader still waits on the socket"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_silent_upstream_fails_the_connect_within_its_timeout() {
    // Accepts TCP (the kernel backlog) but never answers STARTUP, like a stopped process.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let started = Instant::now();
    let r = Connection::open(
        addr,
        ProtocolVersion::V4,
        None,
        None,
        Duration::from_millis(200),
        None,
        None,
    )
    .await;
    assert!(matches!(r, Err(UpstreamError::Connect { .. })));
    assert!(started.elapsed() < Duration::from_secs(2));
    drop(listener);
}

#[tokio::test]
async fn each_request_times_out_at_its_own_deadline() {
    let conn = connection_to_a_hung_upstream().await;
    let pending = |c: &Connection| {
        let w = c.shared.waiters.lock().unwrap();
        (w.pending.len(), w.orphaned.len())
    };
    let long = {
        let conn = conn.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            let r = conn
                .request(&Request::Options, Duration::from_secs(2))
                .await;
            (r, started.elapsed())
        })
    };
    while pending(&conn).0 == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Sent later, due first: the deadline task, asleep until the first request's deadline,
    // wakes for it.
    let started = Instant::now();
    let r = conn
        .request(&Request::Options, Duration::from_millis(200))
        .await;
    let took = started.elapsed();
    assert!(matches!(r, Err(UpstreamError::Timeout { .. })), "{r:?}");
    assert!(
        took >= Duration::from_millis(200) && took < Duration::from_millis(1500),
        "{took:?}"
    );
    assert_eq!(pending(&conn), (1, 1));
    let (r, took) = long.await.unwrap();
    assert!(matches!(r, Err(UpstreamError::Timeout { .. })), "{r:?}");
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(4),
        "{took:?}"
    );
    // Both ids stay taken until answers come that never will.
    assert_eq!(pending(&conn), (0, 2));
}
