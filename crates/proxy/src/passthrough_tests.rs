//! The proxy against a scripted upstream: requests go upstream as the client's bytes and the
//! upstream's rows come back (and into the cache) as its bytes, through the UNPREPARED repair,
//! a cache fill, a cache hit and a write's invalidation.
//!
//! The scripted upstream sends what the proxy would never produce by encoding (column specs
//! per column, where the proxy's encoder writes one global table spec) and the client sends
//! what decoding drops (an undefined v4 query flag bit): the bytes can only come out the other
//! side unchanged if they were passed on, not decoded and encoded again.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::{BufMut, Bytes, BytesMut};
use proto::deframe::Deframer;
use proto::frame::{Opcode, ProtocolVersion};
use proto::request::{Execute, Prepare, Query, QueryParams, RawValue, Request, Values};
use proto::response::{
    ColumnSpec, Prepared, PreparedMetadata, Response, ResultBody, RowsBuilder, RowsMetadata,
};
use proto::types::ColumnType;
use proto::DbError;
use server::{Backend, Config, ConnState, Now, RequestFlags};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::ProxyBackend;

const V4: ProtocolVersion = ProtocolVersion::V4;
const ID: &[u8] = b"prepared-id";

/// What the scripted upstream received: (opcode, message body) of every QUERY, EXECUTE and
/// BATCH.
type Received = Arc<Mutex<Vec<(Opcode, Bytes)>>>;

/// A RESULT Rows body with one blob column `v` of `ks.t`, its spec written per column (flags
/// 0), one row holding `cell`.
fn rows_body(cell: &[u8]) -> Bytes {
    let mut b = BytesMut::new();
    b.put_i32(2); // Rows
    b.put_i32(0); // no global table spec
    b.put_i32(1);
    for s in ["ks", "t", "v"] {
        b.put_u16(s.len() as u16);
        b.put_slice(s.as_bytes());
    }
    b.put_u16(0x0003); // blob
    b.put_i32(1);
    b.put_i32(cell.len() as i32);
    b.put_slice(cell);
    b.freeze()
}

fn col(name: &str, ty: ColumnType) -> ColumnSpec {
    ColumnSpec {
        keyspace: "ks".into(),
        table: "t".into(),
        name: name.into(),
        ty,
    }
}

/// The upstream's answer to one request (`first_execute`: no EXECUTE seen yet).
fn answer(req: &Request, first_execute: bool) -> (Opcode, Bytes) {
    let encoded = |resp: Response| {
        let mut out = BytesMut::new();
        resp.encode_body(V4, &mut out);
        (resp.opcode(), out.freeze())
    };
    match req {
        Request::Startup(_) | Request::Register(_) | Request::Options => encoded(Response::Ready),
        Request::Prepare(_) => encoded(Response::Result(ResultBody::Prepared(Prepared {
            id: Bytes::from_static(ID),
            result_metadata_id: None,
            bind_metadata: PreparedMetadata {
                columns: vec![col("k", ColumnType::Int)],
                pk_indexes: vec![0],
            },
            result_metadata: RowsMetadata {
                columns: vec![col("v", ColumnType::Blob)].into(),
                ..RowsMetadata::default()
            },
        }))),
        Request::Query(q) if q.query.contains("system_schema.columns") => {
            let mut rows = RowsBuilder::new();
            rows.push_value(&proto::Value::Varchar("partition_key".into()));
            rows.end_row();
            encoded(Response::Result(ResultBody::Rows(rows.finish(
                RowsMetadata {
                    columns: vec![col("kind", ColumnType::Varchar)].into(),
                    ..RowsMetadata::default()
                },
            ))))
        }
        Request::Query(q) if q.query.starts_with("SELECT") => (Opcode::Result, rows_body(b"scan")),
        Request::Execute(_) if first_execute => {
            encoded(Response::Error(DbError::unprepared(Bytes::from_static(ID))))
        }
        Request::Execute(_) => (Opcode::Result, rows_body(b"row")),
        _ => encoded(Response::Result(ResultBody::Void)),
    }
}

/// A v4 upstream answering every connection from [`answer`], recording what it received.
async fn scripted_upstream() -> (SocketAddr, Received) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let received: Received = Arc::default();
    let seen = received.clone();
    tokio::spawn(async move {
        loop {
            let (mut s, _) = listener.accept().await.unwrap();
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut buf = BytesMut::new();
                let mut deframer = Deframer::new(1 << 20);
                loop {
                    while let Some(env) = deframer.next_envelope(&mut buf).unwrap() {
                        let req = Request::from_envelope(&env).unwrap().request;
                        let first_execute = {
                            let mut seen = seen.lock().unwrap();
                            let first = !seen.iter().any(|(op, _)| *op == Opcode::Execute);
                            if matches!(env.opcode, Opcode::Query | Opcode::Execute)
                                && !matches!(&req, Request::Query(q) if q.query.contains("system_schema"))
                            {
                                seen.push((env.opcode, env.body.clone()));
                            }
                            first
                        };
                        let (opcode, body) = answer(&req, first_execute);
                        let mut out = BytesMut::new();
                        proto::frame::encode_header(
                            V4,
                            0,
                            env.stream,
                            opcode,
                            body.len(),
                            &mut out,
                        );
                        out.put_slice(&body);
                        if s.write_all(&out).await.is_err() {
                            return;
                        }
                    }
                    if s.read_buf(&mut buf).await.unwrap_or(0) == 0 {
                        return;
                    }
                }
            });
        }
    });
    (addr, received)
}

/// `req` as a client sends it: the decoded request and its flags with the body bytes.
fn from_client(req: &Request, tweak: impl FnOnce(&mut BytesMut)) -> (Request, RequestFlags) {
    let mut body = BytesMut::new();
    req.encode_body(V4, &mut body);
    tweak(&mut body);
    let body = body.freeze();
    let decoded = Request::decode(V4, req.opcode(), body.clone()).unwrap();
    (
        decoded,
        RequestFlags {
            body,
            ..RequestFlags::default()
        },
    )
}

#[tokio::test]
async fn requests_and_rows_pass_through_as_bytes_and_the_cache_keeps_the_upstreams_body() {
    let (upstream, received) = scripted_upstream().await;
    let config = Config {
        upstream: vec![upstream],
        ..Config::default()
    };
    let backend = ProxyBackend::connect(&config).await;
    let conn = ConnState::new(
        1,
        V4,
        SocketAddr::from(([127, 0, 0, 1], 1)),
        None,
        Vec::new(),
    );

    let (prep, flags) = from_client(
        &Request::Prepare(Prepare {
            query: "SELECT v FROM ks.t WHERE k = ?".into(),
            keyspace: None,
        }),
        |_| {},
    );
    let resp = backend.handle(&conn, prep, None, flags).await.response;
    assert!(
        matches!(&resp, Response::Result(ResultBody::Prepared(p)) if p.id == ID),
        "{resp:?}"
    );

    let execute = Request::Execute(Execute {
        id: Bytes::from_static(ID),
        result_metadata_id: None,
        params: QueryParams {
            values: Values::Positional(vec![RawValue::Bytes(Bytes::from_static(&[0, 0, 0, 7]))]),
            ..QueryParams::default()
        },
    });
    let (x, flags) = from_client(&execute, |_| {});
    let client_body = flags.body.clone();
    let (x, carry) = match backend.handle_now(&conn, x, &flags) {
        Now::Later(x, carry) => (x, carry),
        _ => panic!("nothing is cached yet"),
    };
    // The upstream answers UNPREPARED first: re-prepared, then sent again, as the same bytes.
    let resp = backend
        .handle(&conn, x, carry, flags.clone())
        .await
        .response;
    assert_eq!(
        resp,
        Response::Result(ResultBody::Encoded(rows_body(b"row")))
    );
    let executes: Vec<Bytes> = received
        .lock()
        .unwrap()
        .iter()
        .filter(|(op, _)| *op == Opcode::Execute)
        .map(|(_, b)| b.clone())
        .collect();
    assert_eq!(executes, vec![client_body.clone(), client_body.clone()]);

    // The fill kept the upstream's body: a hit answers exactly those bytes, without upstream.
    let (x, flags) = from_client(&execute, |_| {});
    match backend.handle_now(&conn, x, &flags) {
        Now::Answered(response) => {
            assert_eq!(
                response,
                Response::Result(ResultBody::Encoded(rows_body(b"row")))
            )
        }
        _ => panic!("the fill was not cached"),
    }

    // A write goes upstream as the client's bytes, undefined flag bit (v4: 0x80) and all.
    let insert = Request::Query(Query {
        query: "INSERT INTO ks.t (k, v) VALUES (7, 0x00)".into(),
        params: QueryParams::default(),
    });
    let (q, flags) = from_client(&insert, |b| {
        let at = b.len() - 1; // [long string][consistency][flags]: flags is the last byte
        b[at] |= 0x80;
    });
    let sent = flags.body.clone();
    let resp = backend.handle(&conn, q, None, flags).await.response;
    assert_eq!(resp, Response::Result(ResultBody::Void));
    assert_eq!(
        received.lock().unwrap().last(),
        Some(&(Opcode::Query, sent))
    );
    // ... and invalidated what it may change.
    let (x, flags) = from_client(&execute, |_| {});
    assert!(matches!(
        backend.handle_now(&conn, x, &flags),
        Now::Later(..)
    ));

    // Rows of a read the proxy does not cache come back as the upstream's bytes too.
    let scan = Request::Query(Query {
        query: "SELECT * FROM ks.t".into(),
        params: QueryParams::default(),
    });
    let (q, flags) = from_client(&scan, |_| {});
    let resp = backend.handle(&conn, q, None, flags).await.response;
    assert_eq!(
        resp,
        Response::Result(ResultBody::Encoded(rows_body(b"scan")))
    );
}
