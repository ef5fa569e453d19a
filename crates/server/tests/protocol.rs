//! The real server, in-process on 127.0.0.1:0, driven with raw protocol bytes.

mod common;

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Buf;
use common::*;
use proto::frame::{Opcode, ProtocolVersion};
use proto::request::Request;
use server::Config;

const V4: ProtocolVersion = ProtocolVersion::V4;
const V5: ProtocolVersion = ProtocolVersion::V5;

#[tokio::test]
async fn options_is_answered_with_supported() {
    let s = start_default().await;
    for v in [ProtocolVersion::V3, V4, V5] {
        let mut c = Client::connect(s.addr, v).await;
        c.send(7, &Request::Options).await;
        let f = c.recv().await.unwrap();
        assert_eq!((f.opcode, f.stream, f.version), (Opcode::Supported, 7, v));
        let m = read_multimap(f.body);
        let get = |k: &str| m.iter().find(|(n, _)| n == k).unwrap().1.clone();
        assert_eq!(get("CQL_VERSION"), ["3.4.7"]);
        assert_eq!(get("COMPRESSION"), ["lz4", "snappy"]);
        assert_eq!(get("PROTOCOL_VERSIONS"), ["3/v3", "4/v4", "5/v5"]);
    }
}

#[tokio::test]
async fn startup_then_query_in_every_version_and_compression() {
    let s = start_default().await;
    for v in [ProtocolVersion::V3, V4, V5] {
        for lz4 in [false, true] {
            let mut c = Client::ready(s.addr, v, lz4).await;
            c.query(1, "hello").await;
            let f = c.recv().await.unwrap();
            assert_eq!(
                (f.opcode, f.stream, f.version),
                (Opcode::Result, 1, v),
                "v{v:?} lz4={lz4}"
            );
            // OPTIONS still works after STARTUP, inside segments in v5.
            c.send(2, &Request::Options).await;
            assert_eq!(c.recv().await.unwrap().opcode, Opcode::Supported);
        }
    }
}

#[tokio::test]
async fn v4_lz4_responses_are_compressed_after_ready() {
    let s = start_default().await;
    let mut c = Client::connect(s.addr, V4).await;
    let ready = c.startup(true).await;
    assert_eq!(ready.opcode, Opcode::Ready);
    assert_eq!(ready.flags & 0x01, 0, "READY must not be compressed");
    c.query(3, "hello").await;
    // Read the raw header: the compression flag must be set.
    let mut hdr = [0u8; 9];
    tokio::io::AsyncReadExt::read_exact(&mut c.sock, &mut hdr)
        .await
        .unwrap();
    assert_eq!(hdr[0], 0x84);
    assert_eq!(hdr[1] & 0x01, 0x01);
    assert_eq!(hdr[4], Opcode::Result as u8);
}

#[tokio::test]
async fn v5_readies_in_a_plain_envelope_then_switches_to_segments() {
    let s = start_default().await;
    let mut c = Client::connect(s.addr, V5).await;
    let startup = c.encode(
        0,
        &Request::Startup(vec![("CQL_VERSION".into(), "3.0.0".into())]),
    );
    c.send_raw(&startup).await;
    let mut ready = [0u8; 9];
    tokio::io::AsyncReadExt::read_exact(&mut c.sock, &mut ready)
        .await
        .unwrap();
    assert_eq!(ready, [0x85, 0, 0, 0, Opcode::Ready as u8, 0, 0, 0, 0]);
    c.segments = Some(false);
    c.query(9, "x").await;
    let f = c.recv().await.unwrap();
    assert_eq!((f.opcode, f.stream), (Opcode::Result, 9));
}

#[tokio::test]
async fn v5_rejects_snappy() {
    let s = start_default().await;
    let mut c = Client::connect(s.addr, V5).await;
    let opts = vec![
        ("CQL_VERSION".into(), "3.0.0".into()),
        ("COMPRESSION".into(), "snappy".into()),
    ];
    c.send(0, &Request::Startup(opts)).await;
    let (code, msg) = c.recv().await.unwrap().error();
    assert_eq!(code, 0x000A);
    assert!(msg.contains("Snappy"), "{msg}");
}

#[tokio::test]
async fn unsupported_version_gets_a_protocol_error_in_v5_and_the_connection_closes() {
    let s = start_default().await;
    let mut c = Client::connect(s.addr, V5).await;
    c.send_raw(&raw_envelope(6, 3, Opcode::Options as u8, &[]))
        .await;
    let bytes = c.read_to_end().await;
    assert!(bytes.len() > 9, "{bytes:?}");
    assert_eq!(&bytes[..5], &[0x85, 0, 0, 3, 0]);
    let mut body = bytes::Bytes::copy_from_slice(&bytes[9..]);
    assert_eq!(body.get_i32(), 0x000A);
    let msg = read_string(&mut body);
    assert_eq!(
        msg,
        "Invalid or unsupported protocol version (6); supported versions are (3/v3, 4/v4, 5/v5)"
    );
}

#[tokio::test]
async fn v2_client_gets_the_error_in_v2_framing() {
    let s = start_default().await;
    let mut c = Client::connect(s.addr, V4).await;
    // v2 header: version, flags, stream (1 byte), opcode, length.
    c.send_raw(&[0x02, 0, 5, Opcode::Options as u8, 0, 0, 0, 0])
        .await;
    let bytes = c.read_to_end().await;
    assert_eq!(&bytes[..4], &[0x82, 0, 5, 0]);
    let len = u32::from_be_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]) as usize;
    assert_eq!(bytes.len(), 8 + len);
    assert_eq!(&bytes[8..12], &[0, 0, 0, 0x0A]);
}

#[tokio::test]
async fn truncated_frame_then_close_leaves_the_server_serving() {
    let s = start_default().await;
    let mut c = Client::connect(s.addr, V4).await;
    let full = raw_envelope(4, 1, Opcode::Options as u8, &[]);
    c.send_raw(&full[..5]).await;
    drop(c);
    let mut c = Client::connect(s.addr, V4).await;
    let mut body = raw_envelope(4, 1, Opcode::Query as u8, &[0, 0, 0, 50, b'a']);
    body.truncate(12);
    // A truncated body inside a complete-looking stream: the connection waits; close it.
    c.send_raw(&body).await;
    drop(c);
    let mut c = Client::ready(s.addr, V4, false).await;
    c.query(1, "still alive").await;
    assert_eq!(c.recv().await.unwrap().opcode, Opcode::Result);
}

#[tokio::test]
async fn oversize_frame_gets_a_protocol_error_and_close() {
    let s = start(Config {
        max_frame_bytes: 1024,
        ..Config::default()
    })
    .await;
    let mut c = Client::ready(s.addr, V4, false).await;
    let mut hdr = raw_envelope(4, 42, Opcode::Query as u8, &[]);
    hdr[5..9].copy_from_slice(&100_000u32.to_be_bytes());
    c.send_raw(&hdr).await;
    c.send_raw(&[0u8; 4096]).await;
    let f = c.recv().await.unwrap();
    assert_eq!(f.stream, 42);
    let (code, msg) = f.error();
    assert_eq!(code, 0x000A);
    assert!(msg.contains("too big"), "{msg}");
    assert!(c.closed().await);
}

#[tokio::test]
async fn undecodable_body_answers_that_stream_and_the_connection_goes_on() {
    let s = start_default().await;
    let mut c = Client::ready(s.addr, V4, false).await;
    // A QUERY whose long string claims 50 bytes but has 1.
    c.send_raw(&raw_envelope(
        4,
        11,
        Opcode::Query as u8,
        &[0, 0, 0, 50, b'a'],
    ))
    .await;
    let f = c.recv().await.unwrap();
    assert_eq!(f.stream, 11);
    assert_eq!(f.error().0, 0x000A);
    c.query(12, "fine").await;
    let f = c.recv().await.unwrap();
    assert_eq!((f.opcode, f.stream), (Opcode::Result, 12));
}

#[tokio::test]
async fn requests_before_startup_are_refused() {
    let s = start_default().await;
    let mut c = Client::connect(s.addr, V4).await;
    c.query(1, "too early").await;
    let (code, msg) = c.recv().await.unwrap().error();
    assert_eq!(code, 0x000A);
    assert_eq!(
        msg,
        "Unexpected message QUERY, expecting STARTUP or OPTIONS"
    );
    // A second STARTUP after READY is refused too.
    assert_eq!(c.startup(false).await.opcode, Opcode::Ready);
    let (code, msg) = c.startup(false).await.error();
    assert_eq!(code, 0x000A);
    assert!(msg.contains("already initialized"), "{msg}");
}

#[tokio::test]
async fn thousand_concurrent_streams_are_answered_out_of_order() {
    // All 1,000 running at once: each running request counts 64 KiB against the backlog bound
    // (the default 8 MiB lets 128 run; see max_response_backlog_bytes).
    let s = start(Config {
        max_response_backlog_bytes: 1000 * 64 * 1024,
        ..Config::default()
    })
    .await;
    for (v, lz4) in [(V4, false), (V5, true)] {
        let mut c = Client::ready(s.addr, v, lz4).await;
        let mut all = bytes::BytesMut::new();
        for i in 0..1000i16 {
            // Later requests finish first.
            // 100 us apart, so the reader dispatching 1,000 requests on a loaded machine
            // (tens of ms) does not blur the order.
            let delay = (1000 - i as u64) * 100;
            all.extend_from_slice(&c.encode(i, &query(&format!("delay:{delay}"))));
        }
        c.send_raw(&all).await;
        let mut order = Vec::new();
        for _ in 0..1000 {
            let f = c.recv().await.unwrap();
            assert_eq!(f.opcode, Opcode::Result);
            order.push(f.stream);
        }
        let unique: HashSet<_> = order.iter().copied().collect();
        assert_eq!(unique.len(), 1000);
        let first_half: i64 = order[..500].iter().map(|&s| i64::from(s)).sum();
        let second_half: i64 = order[500..].iter().map(|&s| i64::from(s)).sum();
        assert!(
            first_half > second_half,
            "responses should come mostly in reverse order: {:?}",
            &order[..20]
        );
    }
}

#[tokio::test]
async fn running_requests_per_connection_follow_the_backlog_bound() {
    // 64 KiB per running request: a 256 KiB bound lets 4 run at once, so 12 requests of 100 ms
    // take three rounds; none is refused, all are answered.
    let s = start(Config {
        max_response_backlog_bytes: 256 * 1024,
        ..Config::default()
    })
    .await;
    let mut c = Client::ready(s.addr, V4, false).await;
    let mut all = bytes::BytesMut::new();
    for i in 0..12i16 {
        all.extend_from_slice(&c.encode(i, &query("delay:100000")));
    }
    let started = std::time::Instant::now();
    c.send_raw(&all).await;
    for _ in 0..12 {
        assert_eq!(c.recv().await.unwrap().opcode, Opcode::Result);
    }
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(300),
        "ran more than 4 at once: {took:?}"
    );
}

#[tokio::test]
async fn stream_id_in_flight_and_stream_limit_are_refused() {
    let s = start(Config {
        max_streams_per_connection: 2,
        ..Config::default()
    })
    .await;
    let mut c = Client::ready(s.addr, V4, false).await;
    c.query(1, "delay:300000").await;
    c.query(1, "delay:0").await;
    let f = c.recv().await.unwrap();
    assert_eq!(f.stream, 1);
    let (code, msg) = f.error();
    assert_eq!(code, 0x000A);
    assert!(msg.contains("already in use"), "{msg}");
    c.query(2, "delay:300000").await;
    c.query(3, "delay:0").await;
    let f = c.recv().await.unwrap();
    assert_eq!(f.stream, 3);
    assert_eq!(f.error().0, 0x1001);
    // The slow ones still arrive, and the ids are free again afterwards.
    let mut got: Vec<i16> = vec![
        c.recv().await.unwrap().stream,
        c.recv().await.unwrap().stream,
    ];
    got.sort();
    assert_eq!(got, [1, 2]);
    c.query(3, "x").await;
    assert_eq!(c.recv().await.unwrap().opcode, Opcode::Result);
}

#[tokio::test]
async fn use_updates_the_connection_keyspace() {
    let s = start_default().await;
    let mut c = Client::ready(s.addr, V5, false).await;
    c.query(1, "keyspace?").await;
    assert_eq!(c.recv().await.unwrap().error().1, "-");
    c.query(2, "use:ks1").await;
    assert_eq!(c.recv().await.unwrap().opcode, Opcode::Result);
    c.query(3, "keyspace?").await;
    assert_eq!(c.recv().await.unwrap().error().1, "ks1");
    // Other connections are not affected.
    let mut other = Client::ready(s.addr, V4, false).await;
    other.query(1, "keyspace?").await;
    assert_eq!(other.recv().await.unwrap().error().1, "-");
}

#[tokio::test]
async fn schema_changes_are_pushed_to_registered_connections() {
    let s = start_default().await;
    let mut listener = Client::ready(s.addr, V4, false).await;
    listener
        .send(
            5,
            &Request::Register(vec!["SCHEMA_CHANGE".into(), "STATUS_CHANGE".into()]),
        )
        .await;
    let f = listener.recv().await.unwrap();
    assert_eq!((f.opcode, f.stream), (Opcode::Ready, 5));
    let mut maker = Client::ready(s.addr, V5, true).await;
    maker
        .send(1, &Request::Register(vec!["SCHEMA_CHANGE".into()]))
        .await;
    assert_eq!(maker.recv().await.unwrap().opcode, Opcode::Ready);
    let mut bystander = Client::ready(s.addr, V4, false).await;

    maker.query(2, "create:ks9").await;
    let mut seen_result = false;
    let mut seen_event = false;
    for _ in 0..2 {
        let f = maker.recv().await.unwrap();
        match f.opcode {
            Opcode::Result => seen_result = f.stream == 2,
            Opcode::Event => seen_event = f.stream == -1,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(
        seen_result && seen_event,
        "the maker gets both the result and the event"
    );
    let ev = listener.recv().await.unwrap();
    assert_eq!((ev.opcode, ev.stream), (Opcode::Event, -1));
    let mut body = ev.body.clone();
    assert_eq!(read_string(&mut body), "SCHEMA_CHANGE");
    assert_eq!(read_string(&mut body), "CREATED");
    assert_eq!(read_string(&mut body), "KEYSPACE");
    assert_eq!(read_string(&mut body), "ks9");

    // Unknown event types are refused; unregistered connections get nothing.
    listener
        .send(6, &Request::Register(vec!["NOPE".into()]))
        .await;
    assert_eq!(listener.recv().await.unwrap().error().0, 0x000A);
    bystander.query(1, "x").await;
    let f = bystander.recv().await.unwrap();
    assert_eq!((f.opcode, f.stream), (Opcode::Result, 1));
}

/// A request whose backend panics is answered ServerError and the connection goes on, whether
/// it panicked in a task of its own (`panic`) or on the reader (`panic now`: in
/// `Backend::handle_now`; `panic here`: in `Backend::handle_here`, where standalone point reads
/// are answered).
#[tokio::test]
async fn a_panicking_request_answers_server_error_and_the_connection_lives() {
    let s = start_default().await;
    let mut c = Client::ready(s.addr, V4, false).await;
    for (stream, panics, then) in [
        (4, "panic", "again"),
        (5, "panic now", "now"),
        (6, "panic here", "here"),
    ] {
        c.query(stream, panics).await;
        let f = c.recv().await.unwrap();
        assert_eq!((f.stream, f.error().0), (stream, 0x0000), "{panics}");
        c.query(stream + 10, then).await;
        let f = c.recv().await.unwrap();
        assert_eq!(
            (f.opcode, f.stream),
            (Opcode::Result, stream + 10),
            "{then}"
        );
    }
}

#[tokio::test]
async fn connections_over_the_limit_are_refused_with_an_error() {
    let s = start(Config {
        max_connections: 1,
        ..Config::default()
    })
    .await;
    let mut first = Client::ready(s.addr, V4, false).await;
    let mut second = Client::connect(s.addr, V4).await;
    second.send(0, &Request::Options).await;
    let (code, msg) = second.recv().await.unwrap().error();
    assert_eq!(code, 0x1001);
    assert!(msg.contains("max_connections"), "{msg}");
    assert!(second.closed().await);
    first.query(1, "x").await;
    assert_eq!(first.recv().await.unwrap().opcode, Opcode::Result);
    drop(first);
    // The slot frees once the first connection is gone.
    let mut third = None;
    for _ in 0..50 {
        let mut c = Client::connect(s.addr, V4).await;
        c.send(0, &Request::Options).await;
        if c.recv().await.map(|f| f.opcode) == Some(Opcode::Supported) {
            third = Some(c);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(third.is_some());
}

#[tokio::test]
async fn shutdown_finishes_in_flight_requests_then_closes_and_flushes_the_backend() {
    let s = start_default().await;
    let mut c = Client::ready(s.addr, V4, false).await;
    c.query(1, "delay:300000").await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    s.shutdown.cancel();
    let f = c.recv().await.unwrap();
    assert_eq!((f.opcode, f.stream), (Opcode::Result, 1));
    assert!(c.closed().await);
    tokio::time::timeout(Duration::from_secs(5), s.handle)
        .await
        .expect("run() returns")
        .unwrap();
    assert!(s.backend.shut_down.load(Ordering::SeqCst));
    // The listener is gone.
    assert!(tokio::net::TcpStream::connect(s.addr).await.is_err());
}

#[tokio::test]
async fn v5_request_larger_than_one_segment_is_reassembled() {
    let s = start_default().await;
    for lz4 in [false, true] {
        let mut c = Client::ready(s.addr, V5, lz4).await;
        let text = format!("big:{}", "x".repeat(300_000));
        c.query(77, &text).await;
        let f = c.recv().await.unwrap();
        assert_eq!((f.opcode, f.stream), (Opcode::Result, 77));
        c.query(78, "small").await;
        assert_eq!(c.recv().await.unwrap().stream, 78);
    }
}

#[tokio::test]
async fn corrupt_v5_segment_gets_a_protocol_error_and_close() {
    let s = start_default().await;
    let mut c = Client::ready(s.addr, V5, false).await;
    let mut seg = c.encode(1, &query("x"));
    let last = seg.len() - 1;
    seg[last] ^= 0xff; // break the payload CRC
    c.send_raw(&seg).await;
    let f = c.recv().await.unwrap();
    let (code, msg) = f.error();
    assert_eq!(code, 0x000A);
    assert!(msg.contains("CRC"), "{msg}");
    assert!(c.closed().await);
}

#[tokio::test]
async fn a_client_that_stops_reading_is_paused_and_then_gets_everything() {
    let s = start_default().await;
    let mut c = Client::ready(s.addr, V4, false).await;
    // 10 rounds of 100 responses of 60 KB: far more than the 8 MiB backlog, so the reader
    // pauses while nobody reads.
    let mut sent = 0i16;
    for _ in 0..10 {
        let mut all = bytes::BytesMut::new();
        for _ in 0..100 {
            all.extend_from_slice(&c.encode(sent, &query("size:60000")));
            sent += 1;
        }
        // ~3 KB of requests: fits in the socket buffer even while the server is paused.
        c.send_raw(&all).await;
        // Let the responses pile up before the next round arrives.
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    let mut seen = HashSet::new();
    while seen.len() < 1000 {
        let f = c.recv().await.expect("all responses arrive");
        assert_eq!(f.error().1.len(), 60_000);
        seen.insert(f.stream);
    }
}
