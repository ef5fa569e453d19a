use super::*;
use crate::frame::decode_envelope;

const VERSIONS: [ProtocolVersion; 3] = [
    ProtocolVersion::V3,
    ProtocolVersion::V4,
    ProtocolVersion::V5,
];

fn rt(version: ProtocolVersion, resp: &Response) -> Response {
    let mut out = BytesMut::new();
    resp.encode_body(version, &mut out);
    let body = out.freeze();
    for cut in 0..body.len() {
        let _ = Response::decode(version, resp.opcode(), body.slice(..cut));
    }
    Response::decode(version, resp.opcode(), body).unwrap()
}

fn col(name: &str, ty: ColumnType) -> ColumnSpec {
    ColumnSpec {
        keyspace: "ks".into(),
        table: "t".into(),
        name: name.into(),
        ty,
    }
}

fn sample_rows(paging: bool) -> Rows {
    let mut b = RowsBuilder::new();
    for i in 0..3 {
        b.push_value(&Value::Int(i));
        if i == 1 {
            b.push_cell(None);
        } else {
            b.push_value(&Value::Varchar(format!("row{i}")));
        }
        b.end_row();
    }
    b.finish(RowsMetadata {
        columns: vec![col("k", ColumnType::Int), col("v", ColumnType::Varchar)].into(),
        paging_state: paging.then(|| Bytes::from_static(b"page2")),
        no_metadata: false,
        new_metadata_id: None,
    })
}

#[test]
fn golden_void_and_set_keyspace() {
    let mut out = BytesMut::new();
    Response::Result(ResultBody::Void).encode_body(ProtocolVersion::V4, &mut out);
    assert_eq!(&out[..], &[0, 0, 0, 1]);
    let mut out = BytesMut::new();
    Response::Result(ResultBody::SetKeyspace("ks".into()))
        .encode_body(ProtocolVersion::V4, &mut out);
    assert_eq!(&out[..], &[0, 0, 0, 3, 0, 2, b'k', b's']);
}

#[test]
fn golden_rows_with_global_spec() {
    let mut b = RowsBuilder::new();
    b.push_value(&Value::Int(1));
    b.end_row();
    let rows = b.finish(RowsMetadata {
        columns: vec![col("k", ColumnType::Int)].into(),
        ..Default::default()
    });
    let mut out = BytesMut::new();
    Response::Result(ResultBody::Rows(rows)).encode_body(ProtocolVersion::V4, &mut out);
    let expected: &[u8] = &[
        0, 0, 0, 2, // Rows
        0, 0, 0, 1, // flags: global tables spec
        0, 0, 0, 1, // 1 column
        0, 2, b'k', b's', 0, 1, b't', // ks.t
        0, 1, b'k', 0, 9, // k int
        0, 0, 0, 1, // 1 row
        0, 0, 0, 4, 0, 0, 0, 1, // cell
    ];
    assert_eq!(&out[..], expected);
}

#[test]
fn rows_round_trip_in_every_version() {
    for v in VERSIONS {
        for paging in [false, true] {
            let resp = Response::Result(ResultBody::Rows(sample_rows(paging)));
            let got = rt(v, &resp);
            assert_eq!(got, resp);
            let Response::Result(ResultBody::Rows(rows)) = got else {
                panic!()
            };
            let decoded = rows.decode_rows().unwrap();
            assert_eq!(decoded.len(), 3);
            assert_eq!(decoded[1], vec![Value::Int(1), Value::Null]);
        }
    }
}

#[test]
fn rows_metadata_flags() {
    // Mixed tables: no global spec; no_metadata; v5 metadata_changed.
    let mut md = RowsMetadata {
        columns: vec![
            col("a", ColumnType::Int),
            ColumnSpec {
                table: "u".into(),
                ..col("b", ColumnType::Blob)
            },
        ]
        .into(),
        ..Default::default()
    };
    let mut out = BytesMut::new();
    md.encode(ProtocolVersion::V4, &mut out);
    assert_eq!(&out[..4], &[0, 0, 0, 0]);
    md.no_metadata = true;
    md.new_metadata_id = Some(Bytes::from_static(&[1, 2]));
    md.paging_state = Some(Bytes::from_static(&[9]));
    let mut out = BytesMut::new();
    md.encode(ProtocolVersion::V5, &mut out);
    assert_eq!(
        &out[..],
        &[0, 0, 0, 0x0e, 0, 0, 0, 2, 0, 0, 0, 1, 9, 0, 2, 1, 2]
    );
    let mut out = BytesMut::new();
    md.encode(ProtocolVersion::V4, &mut out);
    assert_eq!(&out[..4], &[0, 0, 0, 0x06], "no metadata_changed before v5");
}

#[test]
fn prepared_round_trip() {
    for v in VERSIONS {
        let p = Prepared {
            id: Bytes::from_static(&[0xaa; 16]),
            result_metadata_id: (v == ProtocolVersion::V5).then(|| Bytes::from_static(&[0xbb; 16])),
            bind_metadata: PreparedMetadata {
                columns: vec![
                    col("k", ColumnType::Int),
                    col(
                        "c",
                        ColumnType::Map(
                            Box::new(ColumnType::Varchar),
                            Box::new(ColumnType::Smallint),
                        ),
                    ),
                ],
                pk_indexes: if v == ProtocolVersion::V3 {
                    vec![]
                } else {
                    vec![0]
                },
            },
            result_metadata: RowsMetadata {
                columns: vec![col("v", ColumnType::Varchar)].into(),
                ..Default::default()
            },
        };
        let resp = Response::Result(ResultBody::Prepared(p));
        assert_eq!(rt(v, &resp), resp, "{v:?}");
    }
}

#[test]
fn golden_prepared_v4_layout() {
    let p = Prepared {
        id: Bytes::from_static(&[7]),
        result_metadata_id: None,
        bind_metadata: PreparedMetadata {
            columns: vec![col("k", ColumnType::Int)],
            pk_indexes: vec![0],
        },
        result_metadata: RowsMetadata {
            no_metadata: true,
            ..Default::default()
        },
    };
    let mut out = BytesMut::new();
    Response::Result(ResultBody::Prepared(p)).encode_body(ProtocolVersion::V4, &mut out);
    let expected: &[u8] = &[
        0, 0, 0, 4, // Prepared
        0, 1, 7, // id
        0, 0, 0, 1, 0, 0, 0, 1, // flags global, 1 column
        0, 0, 0, 1, 0, 0, // 1 pk index: 0
        0, 2, b'k', b's', 0, 1, b't', 0, 1, b'k', 0, 9, // ks.t k int
        0, 0, 0, 4, 0, 0, 0, 0, // result metadata: no_metadata, 0 columns
    ];
    assert_eq!(&out[..], expected);
}

#[test]
fn schema_changes_and_events_round_trip() {
    let targets = vec![
        SchemaChangeTarget::Keyspace("ks".into()),
        SchemaChangeTarget::Table {
            keyspace: "ks".into(),
            name: "t".into(),
        },
        SchemaChangeTarget::Type {
            keyspace: "ks".into(),
            name: "ty".into(),
        },
        SchemaChangeTarget::Function {
            keyspace: "ks".into(),
            name: "f".into(),
            args: vec!["int".into()],
        },
        SchemaChangeTarget::Aggregate {
            keyspace: "ks".into(),
            name: "a".into(),
            args: vec![],
        },
    ];
    for v in VERSIONS {
        for t in &targets {
            let sc = SchemaChange {
                change: SchemaChangeType::Created,
                target: t.clone(),
            };
            let r = Response::Result(ResultBody::SchemaChange(sc.clone()));
            assert_eq!(rt(v, &r), r);
            let e = Response::Event(Event::SchemaChange(sc));
            assert_eq!(rt(v, &e), e);
        }
        for e in [
            Event::TopologyChange {
                change: "NEW_NODE".into(),
                addr: "127.0.0.1:9042".parse().unwrap(),
            },
            Event::StatusChange {
                change: "DOWN".into(),
                addr: "[::1]:9042".parse().unwrap(),
            },
        ] {
            let r = Response::Event(e);
            assert_eq!(rt(v, &r), r);
        }
    }
    // Golden: CREATED TABLE ks.t
    let mut out = BytesMut::new();
    SchemaChange {
        change: SchemaChangeType::Created,
        target: targets[1].clone(),
    }
    .encode(&mut out);
    assert_eq!(&out[..], b"\x00\x07CREATED\x00\x05TABLE\x00\x02ks\x00\x01t");
}

#[test]
fn simple_responses_round_trip() {
    for v in VERSIONS {
        for r in [
            Response::Ready,
            Response::Authenticate("org.apache.cassandra.auth.PasswordAuthenticator".into()),
            Response::Supported(vec![
                ("CQL_VERSION".into(), vec!["3.4.7".into()]),
                ("COMPRESSION".into(), vec!["lz4".into(), "snappy".into()]),
                (
                    "PROTOCOL_VERSIONS".into(),
                    ProtocolVersion::supported_descriptions(),
                ),
            ]),
            Response::AuthChallenge(Some(Bytes::from_static(b"c"))),
            Response::AuthSuccess(None),
        ] {
            assert_eq!(rt(v, &r), r);
        }
    }
}

fn all_errors() -> Vec<DbError> {
    let m = || "msg".to_string();
    let cl = Consistency::Quorum;
    let reasons = vec![FailureReason {
        endpoint: "127.0.0.1".parse().unwrap(),
        code: 1,
    }];
    vec![
        DbError::ServerError { message: m() },
        DbError::ProtocolError { message: m() },
        DbError::BadCredentials { message: m() },
        DbError::Unavailable {
            message: m(),
            consistency: cl,
            required: 3,
            alive: 1,
        },
        DbError::Overloaded { message: m() },
        DbError::IsBootstrapping { message: m() },
        DbError::Truncate { message: m() },
        DbError::WriteTimeout {
            message: m(),
            consistency: cl,
            received: 1,
            block_for: 2,
            write_type: WriteType::Simple,
            contentions: None,
        },
        DbError::WriteTimeout {
            message: m(),
            consistency: cl,
            received: 1,
            block_for: 2,
            write_type: WriteType::Cas,
            contentions: Some(4),
        },
        DbError::ReadTimeout {
            message: m(),
            consistency: cl,
            received: 1,
            block_for: 2,
            data_present: true,
        },
        DbError::ReadFailure {
            message: m(),
            consistency: cl,
            received: 1,
            block_for: 2,
            num_failures: 1,
            reasons: reasons.clone(),
            data_present: false,
        },
        DbError::FunctionFailure {
            message: m(),
            keyspace: "ks".into(),
            function: "f".into(),
            arg_types: vec!["int".into()],
        },
        DbError::WriteFailure {
            message: m(),
            consistency: cl,
            received: 1,
            block_for: 2,
            num_failures: 1,
            reasons,
            write_type: WriteType::Batch,
        },
        DbError::CdcWriteFailure { message: m() },
        DbError::CasWriteUnknown {
            message: m(),
            consistency: cl,
            received: 1,
            block_for: 2,
        },
        DbError::SyntaxError { message: m() },
        DbError::Unauthorized { message: m() },
        DbError::Invalid { message: m() },
        DbError::ConfigError { message: m() },
        DbError::AlreadyExists {
            message: m(),
            keyspace: "ks".into(),
            table: "t".into(),
        },
        DbError::Unprepared {
            message: m(),
            id: Bytes::from_static(&[1, 2, 3]),
        },
    ]
}

#[test]
fn every_error_round_trips_in_v5() {
    for e in all_errors() {
        let r = Response::Error(e);
        assert_eq!(rt(ProtocolVersion::V5, &r), r);
    }
}

#[test]
fn errors_downgrade_for_older_clients() {
    for v in [ProtocolVersion::V3, ProtocolVersion::V4] {
        for e in all_errors() {
            let Response::Error(got) = rt(v, &Response::Error(e.clone())) else {
                panic!()
            };
            assert_eq!(got.message(), e.message());
            match (&e, v) {
                (DbError::ReadFailure { .. }, ProtocolVersion::V3) => {
                    assert_eq!(got.code(), 0x1200)
                }
                (DbError::WriteFailure { .. }, ProtocolVersion::V3) => {
                    assert_eq!(got.code(), 0x1100)
                }
                (DbError::FunctionFailure { .. }, ProtocolVersion::V3) => {
                    assert_eq!(got.code(), 0x2200)
                }
                (DbError::CasWriteUnknown { .. }, _) => assert_eq!(got.code(), 0x1100),
                (DbError::CdcWriteFailure { .. }, _) => assert_eq!(got.code(), 0x0000),
                (
                    DbError::WriteTimeout {
                        contentions: Some(_),
                        ..
                    },
                    _,
                ) => assert!(matches!(
                    got,
                    DbError::WriteTimeout {
                        contentions: None,
                        ..
                    }
                )),
                (DbError::ReadFailure { .. } | DbError::WriteFailure { .. }, _) => {
                    assert_eq!(got.code(), e.code())
                }
                _ => assert_eq!(got, e),
            }
        }
    }
}

#[test]
fn golden_error_bodies() {
    let mut out = BytesMut::new();
    Response::Error(DbError::Unavailable {
        message: "x".into(),
        consistency: Consistency::One,
        required: 1,
        alive: 0,
    })
    .encode_body(ProtocolVersion::V4, &mut out);
    assert_eq!(
        &out[..],
        &[0, 0, 0x10, 0, 0, 1, b'x', 0, 1, 0, 0, 0, 1, 0, 0, 0, 0]
    );
    let mut out = BytesMut::new();
    Response::Error(DbError::unprepared(Bytes::from_static(&[0xab])))
        .encode_body(ProtocolVersion::V4, &mut out);
    assert_eq!(&out[..4], &[0, 0, 0x25, 0]);
    assert!(out.ends_with(&[0, 1, 0xab]));
}

#[test]
fn envelope_with_tracing_and_warnings() {
    for compression in [None, Some(Compression::Lz4), Some(Compression::Snappy)] {
        for v in VERSIONS {
            let resp = Response::Result(ResultBody::Rows(sample_rows(false)));
            let extras = ResponseExtras {
                tracing_id: Some([5; 16]),
                warnings: vec!["Aggregation query used without partition key".into()],
                custom_payload: vec![
                    ("k".into(), Some(Bytes::from_static(b"\x00v"))),
                    ("null".into(), None),
                ],
            };
            let mut out = BytesMut::from(&b"prefix"[..]);
            resp.encode_envelope(v, 77, &extras, compression, &mut out);
            assert_eq!(&out[..6], b"prefix");
            let _ = out.split_to(6);
            assert_eq!(out[0], 0x80 | v.as_u8());
            let env = decode_envelope(&mut out, 1 << 20, compression)
                .unwrap()
                .unwrap();
            assert!(out.is_empty());
            assert_eq!(env.stream, 77);
            let d = Response::from_envelope(&env).unwrap();
            assert_eq!(d.response, resp);
            assert_eq!(d.tracing_id, Some([5; 16]));
            // Lazily: the same extras, the RESULT body as sent, its rows decodable later.
            let lazy = Response::from_envelope_lazy(&env).unwrap();
            let mut body = BytesMut::new();
            resp.encode_body(v, &mut body);
            assert_eq!(
                lazy.response,
                Response::Result(ResultBody::Encoded(body.freeze()))
            );
            let Response::Result(ResultBody::Encoded(kept)) = lazy.response else {
                unreachable!()
            };
            assert_eq!(
                Response::Result(ResultBody::Rows(Rows::decode_result(v, kept).unwrap())),
                resp
            );
            assert_eq!(
                (lazy.tracing_id, lazy.warnings, lazy.custom_payload),
                (d.tracing_id, d.warnings.clone(), d.custom_payload.clone())
            );
            if v == ProtocolVersion::V3 {
                assert!(d.warnings.is_empty());
                assert!(d.custom_payload.is_empty());
            } else {
                assert_eq!(d.warnings.len(), 1);
                assert_eq!(d.custom_payload, extras.custom_payload);
            }
        }
    }
}

#[test]
fn rows_decode_rejects_wrong_cell_count() {
    let mut out = BytesMut::new();
    Response::Result(ResultBody::Rows(sample_rows(false)))
        .encode_body(ProtocolVersion::V4, &mut out);
    out.truncate(out.len() - 1);
    assert!(Response::decode(ProtocolVersion::V4, Opcode::Result, out.freeze()).is_err());
}

#[test]
fn garbage_never_panics() {
    let ops = [
        Opcode::Error,
        Opcode::Ready,
        Opcode::Authenticate,
        Opcode::Supported,
        Opcode::Result,
        Opcode::Event,
        Opcode::AuthChallenge,
        Opcode::AuthSuccess,
    ];
    let mut seed = 0x1234_5678_9abc_def1u64;
    for i in 0..30_000usize {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let len = (seed % 64) as usize;
        let mut body: Vec<u8> = (0..len)
            .map(|j| ((seed >> (j % 8 * 8)) as u8) % 6)
            .collect();
        if body.len() > 4 {
            body[3] = (seed % 6) as u8; // a plausible result kind / error code byte
        }
        let _ = Response::decode(
            VERSIONS[i % 3],
            ops[(seed >> 61) as usize],
            Bytes::from(body),
        );
    }
}

#[test]
fn a_lazy_decode_keeps_only_rows_encoded() {
    let others = [
        Response::Result(ResultBody::Void),
        Response::Result(ResultBody::SetKeyspace("ks".into())),
        Response::Error(DbError::unprepared(Bytes::from_static(b"id"))),
        Response::Ready,
    ];
    for v in VERSIONS {
        for resp in &others {
            let mut out = BytesMut::new();
            resp.encode_envelope(v, 3, &ResponseExtras::default(), None, &mut out);
            let env = decode_envelope(&mut out, 1 << 20, None).unwrap().unwrap();
            assert_eq!(&Response::from_envelope_lazy(&env).unwrap().response, resp);
        }
        let mut body = BytesMut::new();
        Response::Result(ResultBody::Void).encode_body(v, &mut body);
        assert!(Rows::decode_result(v, body.freeze()).is_err());
    }
}

#[test]
fn an_envelope_head_and_its_bulk_are_the_whole_envelope() {
    let mut encoded = BytesMut::new();
    Response::Result(ResultBody::Rows(sample_rows(true)))
        .encode_body(ProtocolVersion::V4, &mut encoded);
    let cases = [
        (Response::Result(ResultBody::Rows(sample_rows(false))), true),
        (Response::Result(ResultBody::Rows(sample_rows(true))), true),
        (
            Response::Result(ResultBody::Encoded(encoded.freeze())),
            true,
        ),
        (Response::Result(ResultBody::Void), false),
        (Response::Error(DbError::invalid("no")), false),
    ];
    let extras = ResponseExtras {
        tracing_id: Some([9; 16]),
        warnings: vec!["w".into()],
        custom_payload: vec![("k".into(), Some(Bytes::from_static(b"v")))],
    };
    for v in VERSIONS {
        for (resp, has_bulk) in &cases {
            for extras in [ResponseExtras::default(), extras.clone()] {
                let mut whole = BytesMut::from(&b"before"[..]);
                resp.encode_envelope(v, 3, &extras, None, &mut whole);
                let mut head = BytesMut::from(&b"before"[..]);
                let bulk = resp.encode_envelope_head(v, 3, &extras, &mut head);
                assert_eq!(bulk.is_some(), *has_bulk, "{resp:?}");
                head.extend_from_slice(bulk.map_or(&[][..], |b| &b[..]));
                assert_eq!(head, whole, "{v:?} {resp:?}");
            }
        }
    }
}
