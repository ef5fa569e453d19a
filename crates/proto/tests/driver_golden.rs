//! Black-box golden tests: bytes produced by the Python cassandra-driver (3.29, pure-Python
//! encoder) decode to the requests the driver meant, and re-encode to the same bytes; and
//! response bytes that the same driver decodes as expected (checked by hand with its
//! `ProtocolHandler.decode_message`) stay byte-identical.

use bytes::{Bytes, BytesMut};
use proto::frame::flags;
use proto::request::{BatchKind, BatchStatement, Consistency, RawValue, Request, Values};
use proto::response::{ColumnSpec, ResultBody, RowsBuilder, RowsMetadata};
use proto::{
    decode_envelope, encode_envelope, ColumnType, Compression, Envelope, Opcode, ProtocolVersion,
    Response, ResponseExtras, Value,
};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn decode(s: &str, compression: Option<Compression>) -> (Envelope, Request) {
    let mut buf = BytesMut::from(&hex(s)[..]);
    let env = decode_envelope(&mut buf, 1 << 20, compression)
        .expect("valid envelope")
        .expect("complete envelope");
    assert!(buf.is_empty());
    let req = Request::from_envelope(&env).expect("valid request").request;
    (env, req)
}

/// Decoding then re-encoding gives the driver's bytes back.
fn assert_reencodes(s: &str, env: &Envelope, req: &Request) {
    let mut body = BytesMut::new();
    req.encode_body(env.version, &mut body);
    let mut out = BytesMut::new();
    encode_envelope(
        &Envelope {
            body: body.freeze(),
            ..env.clone()
        },
        None,
        &mut out,
    );
    assert_eq!(to_hex(&out), s);
}

const QUERY_V4: &str = "0400000507000000330000001e53454c454354202a2046524f4d206b732e74205748455245206b203d2031000a3400001388000900060a24181e4000";
const QUERY_V5: &str = "0500000607000000360000001e53454c454354206e6f7728292046524f4d2073797374656d2e6c6f63616c00010000008c0000006400000002010200026b73";
const EXECUTE_V5: &str = "050000070a000000450010aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa0010bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb00040000000500030000000400000001ffffffff0000000568656c6c6f00001388";
const EXECUTE_V4: &str =
    "040000080a000000230010aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa0004050001000000040000000100001388";
const BATCH_V4: &str = "040000090d00000054010002000000001c494e5345525420494e544f207420286b292056414c55455320283f2900010000000400000002010010cccccccccccccccccccccccccccccccc0001ffffffff0001300008000000000000002a";
const PREPARE_V5: &str = "0500000a09000000270000001b53454c454354202a2046524f4d2074205748455245206b203d203f0000000100026b73";
const REGISTER_V4: &str = "0400000b0b000000310003000f544f504f4c4f47595f4348414e4745000d5354415455535f4348414e4745000d534348454d415f4348414e4745";
const OPTIONS_V5_BETA: &str = "0510000c0500000000";
const AUTH_RESPONSE_V4: &str = "0400000d0f00000018000000140063617373616e6472610063617373616e647261";
const QUERY_V4_LZ4: &str = "0401000e070000004900000051fd2c0000004a53454c454354202a2046524f4d2073797374656d2e70656572732057484552452070656572203d20273132372e302e302e312720414e441700503127000100";

#[test]
fn python_query_v4() {
    let (env, req) = decode(QUERY_V4, None);
    assert_eq!(env.stream, 5);
    let Request::Query(q) = &req else {
        panic!("expected QUERY, got {req:?}")
    };
    assert_eq!(q.query, "SELECT * FROM ks.t WHERE k = 1");
    assert_eq!(q.params.consistency, Consistency::LocalOne);
    assert_eq!(q.params.serial_consistency, Some(Consistency::LocalSerial));
    assert_eq!(q.params.page_size, Some(5000));
    assert_eq!(q.params.default_timestamp, Some(1_700_000_000_000_000));
    assert_eq!(q.params.values, Values::None);
    assert_reencodes(QUERY_V4, &env, &req);
}

#[test]
fn python_query_v5_with_keyspace_and_paging_state() {
    let (env, req) = decode(QUERY_V5, None);
    let Request::Query(q) = &req else {
        panic!("expected QUERY, got {req:?}")
    };
    assert_eq!(q.params.keyspace.as_deref(), Some("ks"));
    assert_eq!(q.params.page_size, Some(100));
    assert_eq!(q.params.paging_state.as_deref(), Some(&[1u8, 2][..]));
    assert_reencodes(QUERY_V5, &env, &req);
}

#[test]
fn python_execute_v5_and_v4() {
    let (env, req) = decode(EXECUTE_V5, None);
    let Request::Execute(e) = &req else {
        panic!("expected EXECUTE, got {req:?}")
    };
    assert_eq!(&e.id[..], &[0xaa; 16]);
    assert_eq!(e.result_metadata_id.as_deref(), Some(&[0xbb; 16][..]));
    assert!(!e.params.skip_metadata);
    assert_eq!(
        e.params.values,
        Values::Positional(vec![
            RawValue::Bytes(Bytes::from_static(&[0, 0, 0, 1])),
            RawValue::Null,
            RawValue::Bytes(Bytes::from_static(b"hello")),
        ])
    );
    assert_reencodes(EXECUTE_V5, &env, &req);

    let (env, req) = decode(EXECUTE_V4, None);
    let Request::Execute(e) = &req else {
        panic!("expected EXECUTE, got {req:?}")
    };
    assert_eq!(e.result_metadata_id, None);
    assert_eq!(e.params.consistency, Consistency::Quorum);
    assert_reencodes(EXECUTE_V4, &env, &req);
}

#[test]
fn python_batch_v4() {
    let (env, req) = decode(BATCH_V4, None);
    let Request::Batch(b) = &req else {
        panic!("expected BATCH, got {req:?}")
    };
    assert_eq!(b.kind, BatchKind::Unlogged);
    assert_eq!(b.statements.len(), 2);
    assert!(
        matches!(&b.statements[0], BatchStatement::Query { query, .. } if query == "INSERT INTO t (k) VALUES (?)")
    );
    assert!(
        matches!(&b.statements[1], BatchStatement::Prepared { id, values: Values::Positional(v) } if id[..] == [0xcc; 16] && v == &[RawValue::Null])
    );
    assert_eq!(b.serial_consistency, Some(Consistency::Serial));
    assert_eq!(b.default_timestamp, Some(42));
    assert_reencodes(BATCH_V4, &env, &req);
}

#[test]
fn python_prepare_register_options_auth() {
    let (env, req) = decode(PREPARE_V5, None);
    assert!(matches!(&req, Request::Prepare(p) if p.keyspace.as_deref() == Some("ks")));
    assert_reencodes(PREPARE_V5, &env, &req);

    let (env, req) = decode(REGISTER_V4, None);
    assert!(matches!(&req, Request::Register(l) if l.len() == 3));
    assert_reencodes(REGISTER_V4, &env, &req);

    let (env, req) = decode(OPTIONS_V5_BETA, None);
    assert_eq!(env.flags, flags::USE_BETA);
    assert_eq!(req, Request::Options);

    let (env, req) = decode(AUTH_RESPONSE_V4, None);
    assert!(matches!(&req, Request::AuthResponse(Some(t)) if &t[..] == b"\0cassandra\0cassandra"));
    assert_reencodes(AUTH_RESPONSE_V4, &env, &req);
}

#[test]
fn python_lz4_compressed_query() {
    let (env, req) = decode(QUERY_V4_LZ4, Some(Compression::Lz4));
    assert_eq!(
        env.flags & flags::COMPRESSION,
        0,
        "flag cleared after decompression"
    );
    let Request::Query(q) = &req else {
        panic!("expected QUERY, got {req:?}")
    };
    assert!(q
        .query
        .starts_with("SELECT * FROM system.peers WHERE peer = '127.0.0.1'"));
    // Without negotiated compression a compressed envelope is refused outright.
    let mut buf = BytesMut::from(&hex(QUERY_V4_LZ4)[..]);
    assert!(decode_envelope(&mut buf, 1 << 20, None).is_err());
}

/// A Rows response; the Python driver decodes these exact bytes to
/// `[Row(k=1, v='a'), Row(k=2, v=None)]` with column types Int32Type and VarcharType.
const ROWS_V4: &str = "84000003080000003900000002000000010000000200016b00017400016b0009000176000d00000002000000040000000100000001610000000400000002ffffffff";

#[test]
fn rows_response_golden() {
    let mut b = RowsBuilder::new();
    b.push_value(&Value::Int(1));
    b.push_value(&Value::Varchar("a".into()));
    b.end_row();
    b.push_value(&Value::Int(2));
    b.push_cell(None);
    b.end_row();
    let col = |name: &str, ty| ColumnSpec {
        keyspace: "k".into(),
        table: "t".into(),
        name: name.into(),
        ty,
    };
    let rows = b.finish(RowsMetadata {
        columns: vec![col("k", ColumnType::Int), col("v", ColumnType::Varchar)].into(),
        ..RowsMetadata::default()
    });
    let mut out = BytesMut::new();
    Response::Result(ResultBody::Rows(rows)).encode_envelope(
        ProtocolVersion::V4,
        3,
        &ResponseExtras::default(),
        None,
        &mut out,
    );
    assert_eq!(to_hex(&out), ROWS_V4);
    let env = decode_envelope(&mut out, 1 << 20, None).unwrap().unwrap();
    assert_eq!(env.opcode, Opcode::Result);
}
