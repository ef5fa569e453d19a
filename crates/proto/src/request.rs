//! Request bodies (spec section 4.1): decoded by the server, encoded by tests and proxy mode.
//!
//! Decoding is bounded (every count is checked against the remaining body before allocating)
//! and cheap: bound values and ids are `Bytes` views into the envelope body, never copies.

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::DbError;
use crate::frame::{flags, Envelope, Opcode, ProtocolVersion};
use crate::wire::{self, Reader};

/// `[consistency]` levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Consistency {
    Any,
    One,
    Two,
    Three,
    Quorum,
    All,
    LocalQuorum,
    EachQuorum,
    Serial,
    LocalSerial,
    LocalOne,
}

impl Consistency {
    pub fn from_code(c: u16) -> Option<Self> {
        Some(match c {
            0x0000 => Consistency::Any,
            0x0001 => Consistency::One,
            0x0002 => Consistency::Two,
            0x0003 => Consistency::Three,
            0x0004 => Consistency::Quorum,
            0x0005 => Consistency::All,
            0x0006 => Consistency::LocalQuorum,
            0x0007 => Consistency::EachQuorum,
            0x0008 => Consistency::Serial,
            0x0009 => Consistency::LocalSerial,
            0x000A => Consistency::LocalOne,
            _ => return None,
        })
    }

    pub fn code(self) -> u16 {
        match self {
            Consistency::Any => 0x0000,
            Consistency::One => 0x0001,
            Consistency::Two => 0x0002,
            Consistency::Three => 0x0003,
            Consistency::Quorum => 0x0004,
            Consistency::All => 0x0005,
            Consistency::LocalQuorum => 0x0006,
            Consistency::EachQuorum => 0x0007,
            Consistency::Serial => 0x0008,
            Consistency::LocalSerial => 0x0009,
            Consistency::LocalOne => 0x000A,
        }
    }

    /// Cassandra's name (`LOCAL_QUORUM`), as used in its error messages.
    pub fn name(self) -> &'static str {
        match self {
            Consistency::Any => "ANY",
            Consistency::One => "ONE",
            Consistency::Two => "TWO",
            Consistency::Three => "THREE",
            Consistency::Quorum => "QUORUM",
            Consistency::All => "ALL",
            Consistency::LocalQuorum => "LOCAL_QUORUM",
            Consistency::EachQuorum => "EACH_QUORUM",
            Consistency::Serial => "SERIAL",
            Consistency::LocalSerial => "LOCAL_SERIAL",
            Consistency::LocalOne => "LOCAL_ONE",
        }
    }
}

impl std::fmt::Display for Consistency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A bound `[value]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RawValue {
    Null,
    /// v4+: "not set", leaves the column unchanged.
    Unset,
    Bytes(Bytes),
}

/// The bound values of a query.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Values {
    #[default]
    None,
    Positional(Vec<RawValue>),
    Named(Vec<(String, RawValue)>),
}

impl Values {
    pub fn len(&self) -> usize {
        match self {
            Values::None => 0,
            Values::Positional(v) => v.len(),
            Values::Named(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Query flag bits (`<flags>` of `<query_parameters>`; an [int] in v5, a [byte] before).
pub mod query_flags {
    pub const VALUES: u32 = 0x01;
    pub const SKIP_METADATA: u32 = 0x02;
    pub const PAGE_SIZE: u32 = 0x04;
    pub const PAGING_STATE: u32 = 0x08;
    pub const SERIAL_CONSISTENCY: u32 = 0x10;
    pub const DEFAULT_TIMESTAMP: u32 = 0x20;
    pub const NAMES_FOR_VALUES: u32 = 0x40;
    /// v5
    pub const KEYSPACE: u32 = 0x80;
    /// v5
    pub const NOW_IN_SECONDS: u32 = 0x100;
}

/// `<query_parameters>` (and the tail of BATCH).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryParams {
    pub consistency: Consistency,
    pub values: Values,
    pub skip_metadata: bool,
    pub page_size: Option<i32>,
    pub paging_state: Option<Bytes>,
    pub serial_consistency: Option<Consistency>,
    pub default_timestamp: Option<i64>,
    pub keyspace: Option<String>,
    pub now_in_seconds: Option<i32>,
}

impl Default for QueryParams {
    fn default() -> Self {
        QueryParams {
            consistency: Consistency::One,
            values: Values::None,
            skip_metadata: false,
            page_size: None,
            paging_state: None,
            serial_consistency: None,
            default_timestamp: None,
            keyspace: None,
            now_in_seconds: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    pub query: String,
    pub params: QueryParams,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepare {
    pub query: String,
    /// v5 only.
    pub keyspace: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Execute {
    pub id: Bytes,
    /// v5 only.
    pub result_metadata_id: Option<Bytes>,
    pub params: QueryParams,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BatchKind {
    Logged,
    Unlogged,
    Counter,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchStatement {
    Query { query: String, values: Values },
    Prepared { id: Bytes, values: Values },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    pub kind: BatchKind,
    pub statements: Vec<BatchStatement>,
    pub consistency: Consistency,
    pub serial_consistency: Option<Consistency>,
    pub default_timestamp: Option<i64>,
    pub keyspace: Option<String>,
    pub now_in_seconds: Option<i32>,
}

/// A decoded request message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Startup(Vec<(String, String)>),
    AuthResponse(Option<Bytes>),
    Options,
    Query(Query),
    Prepare(Prepare),
    Execute(Execute),
    Batch(Batch),
    Register(Vec<String>),
}

/// A request with what the envelope flags added around it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedRequest {
    pub request: Request,
    /// The client asked for tracing (flag 0x02).
    pub tracing: bool,
    /// The custom payload (flag 0x04), kept as views into the body; ignored by the engine.
    pub custom_payload: Vec<(String, Option<Bytes>)>,
    /// The message body as received (after the custom payload; a view, not a copy): a proxy
    /// passes it upstream as is instead of encoding `request` again.
    pub body: Bytes,
}

fn read_values(r: &mut Reader, named: bool, v4: bool) -> Result<Values, DbError> {
    let n = r.u16("value count")? as usize;
    r.check_count("value", n, if named { 6 } else { 4 })?;
    if named {
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let name = r.string("value name")?;
            out.push((name, r.value(v4)?));
        }
        Ok(Values::Named(out))
    } else {
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(r.value(v4)?);
        }
        Ok(Values::Positional(out))
    }
}

fn read_flags(r: &mut Reader, version: ProtocolVersion) -> Result<u32, DbError> {
    if version >= ProtocolVersion::V5 {
        Ok(r.i32("query flags")? as u32)
    } else {
        Ok(u32::from(r.u8("query flags")?))
    }
}

/// Decodes `<query_parameters>` (QUERY, EXECUTE) or the BATCH tail (`allow_values = false`:
/// values live with each statement there, so the value flags are not read).
fn read_params(
    r: &mut Reader,
    version: ProtocolVersion,
    allow_values: bool,
) -> Result<QueryParams, DbError> {
    use query_flags::*;
    let consistency = r.consistency("consistency")?;
    let f = read_flags(r, version)?;
    let v4 = version >= ProtocolVersion::V4;
    let values = if allow_values && f & VALUES != 0 {
        read_values(r, f & NAMES_FOR_VALUES != 0, v4)?
    } else {
        Values::None
    };
    let page_size = if f & PAGE_SIZE != 0 {
        Some(r.i32("page size")?)
    } else {
        None
    };
    let paging_state = if f & PAGING_STATE != 0 {
        r.bytes("paging state")?
    } else {
        None
    };
    let serial_consistency = if f & SERIAL_CONSISTENCY != 0 {
        Some(r.consistency("serial consistency")?)
    } else {
        None
    };
    let default_timestamp = if f & DEFAULT_TIMESTAMP != 0 {
        let ts = r.i64("default timestamp")?;
        // Cassandra: "Out of bound timestamp, must be in [...]" for Long.MIN_VALUE.
        if ts == i64::MIN {
            return Err(DbError::protocol(format!(
                "Out of bound timestamp, must be in [{}, {}]",
                i64::MIN + 1,
                i64::MAX
            )));
        }
        Some(ts)
    } else {
        None
    };
    let (keyspace, now_in_seconds) = if version >= ProtocolVersion::V5 {
        let ks = if f & KEYSPACE != 0 {
            Some(r.string("keyspace")?)
        } else {
            None
        };
        let now = if f & NOW_IN_SECONDS != 0 {
            Some(r.i32("now in seconds")?)
        } else {
            None
        };
        (ks, now)
    } else {
        (None, None)
    };
    Ok(QueryParams {
        consistency,
        values,
        skip_metadata: f & SKIP_METADATA != 0,
        page_size,
        paging_state,
        serial_consistency,
        default_timestamp,
        keyspace,
        now_in_seconds,
    })
}

impl Request {
    /// Decodes a request body (after any tracing/custom payload prefix, see `from_envelope`).
    /// Response opcodes are a ProtocolError.
    pub fn decode(
        version: ProtocolVersion,
        opcode: Opcode,
        body: Bytes,
    ) -> Result<Request, DbError> {
        let mut r = Reader::new(body);
        let v4 = version >= ProtocolVersion::V4;
        let v5 = version >= ProtocolVersion::V5;
        Ok(match opcode {
            Opcode::Startup => Request::Startup(r.string_map("STARTUP options")?),
            Opcode::AuthResponse => Request::AuthResponse(r.bytes("auth token")?),
            Opcode::Options => Request::Options,
            Opcode::Query => {
                let query = r.long_string("query string")?;
                let params = read_params(&mut r, version, true)?;
                Request::Query(Query { query, params })
            }
            Opcode::Prepare => {
                let query = r.long_string("query string")?;
                let keyspace = if v5 {
                    let f = r.i32("prepare flags")?;
                    if f & 0x01 != 0 {
                        Some(r.string("keyspace")?)
                    } else {
                        None
                    }
                } else {
                    None
                };
                Request::Prepare(Prepare { query, keyspace })
            }
            Opcode::Execute => {
                let id = r.short_bytes("prepared id")?;
                let result_metadata_id = if v5 {
                    Some(r.short_bytes("result metadata id")?)
                } else {
                    None
                };
                let params = read_params(&mut r, version, true)?;
                Request::Execute(Execute {
                    id,
                    result_metadata_id,
                    params,
                })
            }
            Opcode::Batch => {
                let kind = match r.u8("batch type")? {
                    0 => BatchKind::Logged,
                    1 => BatchKind::Unlogged,
                    2 => BatchKind::Counter,
                    t => return Err(DbError::protocol(format!("Invalid BATCH message type {t}"))),
                };
                let n = r.u16("batch statement count")? as usize;
                r.check_count("batch statement", n, 5)?;
                let mut statements = Vec::with_capacity(n);
                for _ in 0..n {
                    // Values are positional: the names flag comes after the statements, which
                    // is why the spec calls it unimplementable (CASSANDRA-10246); Cassandra
                    // reads them positionally too.
                    let st = match r.u8("batch statement kind")? {
                        0 => {
                            let query = r.long_string("query string")?;
                            let values = read_values(&mut r, false, v4)?;
                            BatchStatement::Query { query, values }
                        }
                        1 => {
                            let id = r.short_bytes("prepared id")?;
                            let values = read_values(&mut r, false, v4)?;
                            BatchStatement::Prepared { id, values }
                        }
                        k => {
                            return Err(DbError::protocol(format!(
                                "Invalid query kind in BATCH messages. Must be 0 or 1 but got {k}"
                            )))
                        }
                    };
                    statements.push(st);
                }
                let p = read_params(&mut r, version, false)?;
                Request::Batch(Batch {
                    kind,
                    statements,
                    consistency: p.consistency,
                    serial_consistency: p.serial_consistency,
                    default_timestamp: p.default_timestamp,
                    keyspace: p.keyspace,
                    now_in_seconds: p.now_in_seconds,
                })
            }
            Opcode::Register => Request::Register(r.string_list("event types")?),
            Opcode::Error
            | Opcode::Ready
            | Opcode::Authenticate
            | Opcode::Supported
            | Opcode::Result
            | Opcode::Event
            | Opcode::AuthChallenge
            | Opcode::AuthSuccess => {
                return Err(DbError::protocol(format!(
                    "Opcode {:#04x} is not a request",
                    opcode as u8
                )))
            }
        })
    }

    /// Decodes a request envelope, reading the custom payload that precedes the message when
    /// flag 0x04 is set (v4+), and noting the tracing flag.
    pub fn from_envelope(env: &Envelope) -> Result<DecodedRequest, DbError> {
        let mut r = Reader::new(env.body.clone());
        let custom_payload =
            if env.flags & flags::CUSTOM_PAYLOAD != 0 && env.version >= ProtocolVersion::V4 {
                r.bytes_map("custom payload")?
            } else {
                Vec::new()
            };
        let body = r.rest();
        let request = Request::decode(env.version, env.opcode, body.clone())?;
        Ok(DecodedRequest {
            request,
            tracing: env.flags & flags::TRACING != 0,
            custom_payload,
            body,
        })
    }

    pub fn opcode(&self) -> Opcode {
        match self {
            Request::Startup(_) => Opcode::Startup,
            Request::AuthResponse(_) => Opcode::AuthResponse,
            Request::Options => Opcode::Options,
            Request::Query(_) => Opcode::Query,
            Request::Prepare(_) => Opcode::Prepare,
            Request::Execute(_) => Opcode::Execute,
            Request::Batch(_) => Opcode::Batch,
            Request::Register(_) => Opcode::Register,
        }
    }

    /// Encodes the request body (client side: proxy mode and tests).
    pub fn encode_body(&self, version: ProtocolVersion, out: &mut BytesMut) {
        let v5 = version >= ProtocolVersion::V5;
        match self {
            Request::Startup(m) => wire::put_string_map(out, m),
            Request::AuthResponse(t) => wire::put_bytes(out, t.as_deref()),
            Request::Options => {}
            Request::Query(q) => {
                wire::put_long_string(out, &q.query);
                write_params(out, version, &q.params, true);
            }
            Request::Prepare(p) => {
                wire::put_long_string(out, &p.query);
                if v5 {
                    match &p.keyspace {
                        Some(ks) => {
                            out.put_i32(1);
                            wire::put_string(out, ks);
                        }
                        None => out.put_i32(0),
                    }
                }
            }
            Request::Execute(e) => {
                wire::put_short_bytes(out, &e.id);
                if v5 {
                    wire::put_short_bytes(out, e.result_metadata_id.as_deref().unwrap_or(&[]));
                }
                write_params(out, version, &e.params, true);
            }
            Request::Batch(b) => {
                out.put_u8(match b.kind {
                    BatchKind::Logged => 0,
                    BatchKind::Unlogged => 1,
                    BatchKind::Counter => 2,
                });
                out.put_u16(u16::try_from(b.statements.len()).unwrap_or(u16::MAX));
                for st in b.statements.iter().take(u16::MAX as usize) {
                    let values = match st {
                        BatchStatement::Query { query, values } => {
                            out.put_u8(0);
                            wire::put_long_string(out, query);
                            values
                        }
                        BatchStatement::Prepared { id, values } => {
                            out.put_u8(1);
                            wire::put_short_bytes(out, id);
                            values
                        }
                    };
                    write_values(out, values);
                }
                let p = QueryParams {
                    consistency: b.consistency,
                    serial_consistency: b.serial_consistency,
                    default_timestamp: b.default_timestamp,
                    keyspace: b.keyspace.clone(),
                    now_in_seconds: b.now_in_seconds,
                    ..QueryParams::default()
                };
                write_params(out, version, &p, false);
            }
            Request::Register(l) => wire::put_string_list(out, l),
        }
    }
}

fn write_values(out: &mut BytesMut, values: &Values) {
    match values {
        Values::None => out.put_u16(0),
        Values::Positional(v) => {
            out.put_u16(u16::try_from(v.len()).unwrap_or(u16::MAX));
            for x in v.iter().take(u16::MAX as usize) {
                wire::put_value(out, x);
            }
        }
        Values::Named(v) => {
            out.put_u16(u16::try_from(v.len()).unwrap_or(u16::MAX));
            for (n, x) in v.iter().take(u16::MAX as usize) {
                wire::put_string(out, n);
                wire::put_value(out, x);
            }
        }
    }
}

fn write_params(out: &mut BytesMut, version: ProtocolVersion, p: &QueryParams, with_values: bool) {
    use query_flags::*;
    let v5 = version >= ProtocolVersion::V5;
    let mut f = 0u32;
    if with_values && !matches!(p.values, Values::None) {
        f |= VALUES;
        if matches!(p.values, Values::Named(_)) {
            f |= NAMES_FOR_VALUES;
        }
    }
    if p.skip_metadata {
        f |= SKIP_METADATA;
    }
    if p.page_size.is_some() {
        f |= PAGE_SIZE;
    }
    if p.paging_state.is_some() {
        f |= PAGING_STATE;
    }
    if p.serial_consistency.is_some() {
        f |= SERIAL_CONSISTENCY;
    }
    if p.default_timestamp.is_some() {
        f |= DEFAULT_TIMESTAMP;
    }
    if v5 && p.keyspace.is_some() {
        f |= KEYSPACE;
    }
    if v5 && p.now_in_seconds.is_some() {
        f |= NOW_IN_SECONDS;
    }
    out.put_u16(p.consistency.code());
    if v5 {
        out.put_u32(f);
    } else {
        out.put_u8(f as u8);
    }
    if f & VALUES != 0 {
        write_values(out, &p.values);
    }
    if let Some(n) = p.page_size {
        out.put_i32(n);
    }
    if let Some(s) = &p.paging_state {
        wire::put_bytes(out, Some(s));
    }
    if let Some(c) = p.serial_consistency {
        out.put_u16(c.code());
    }
    if let Some(t) = p.default_timestamp {
        out.put_i64(t);
    }
    if v5 {
        if let Some(ks) = &p.keyspace {
            wire::put_string(out, ks);
        }
        if let Some(n) = p.now_in_seconds {
            out.put_i32(n);
        }
    }
}

/// Writes a custom payload as it precedes a request body (flag 0x04, protocol v4 and later).
pub fn put_custom_payload(out: &mut BytesMut, payload: &[(String, Option<Bytes>)]) {
    wire::put_bytes_map(out, payload);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::decode_envelope;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn round_trip(version: ProtocolVersion, req: Request) {
        let mut out = BytesMut::new();
        req.encode_body(version, &mut out);
        let got = Request::decode(version, req.opcode(), out.clone().freeze()).unwrap();
        assert_eq!(got, req, "{version:?}");
        // Every truncation is an error, never a panic.
        for cut in 0..out.len() {
            let r = Request::decode(version, req.opcode(), out.clone().freeze().slice(..cut));
            if let Ok(r) = r {
                // Only possible for trailing optional parts; must still be a prefix-consistent decode.
                assert_eq!(r.opcode(), req.opcode());
            }
        }
    }

    #[test]
    fn golden_python_startup() {
        let bytes = hex("04 00 00 00 01 00 00 00 16 00 01 00 0b 43 51 4c 5f 56 45 52 53 49 4f 4e 00 05 33 2e 30 2e 30");
        let env = decode_envelope(&mut BytesMut::from(&bytes[..]), 1024, None)
            .unwrap()
            .unwrap();
        let d = Request::from_envelope(&env).unwrap();
        assert_eq!(
            d.request,
            Request::Startup(vec![("CQL_VERSION".into(), "3.0.0".into())])
        );
        assert!(!d.tracing);
    }

    #[test]
    fn golden_v4_query_with_values() {
        // QUERY "SELECT ?" consistency ONE, flags VALUES|PAGE_SIZE, 1 value 00000001, page 5000.
        let body = hex("00000008 53454c45435420 3f 0001 05 0001 00000004 00000001 00001388");
        let r = Request::decode(ProtocolVersion::V4, Opcode::Query, Bytes::from(body)).unwrap();
        let Request::Query(q) = r else {
            panic!("not a query")
        };
        assert_eq!(q.query, "SELECT ?");
        assert_eq!(q.params.consistency, Consistency::One);
        assert_eq!(q.params.page_size, Some(5000));
        assert_eq!(
            q.params.values,
            Values::Positional(vec![RawValue::Bytes(Bytes::from_static(&[0, 0, 0, 1]))])
        );
    }

    #[test]
    fn golden_v5_query_flags_are_an_int() {
        // consistency LOCAL_QUORUM, flags KEYSPACE|NOW_IN_SECONDS (0x180), keyspace "ks", now 7.
        let body = hex("00000001 78 0006 00000180 0002 6b73 00000007");
        let r = Request::decode(ProtocolVersion::V5, Opcode::Query, Bytes::from(body)).unwrap();
        let Request::Query(q) = r else {
            panic!("not a query")
        };
        assert_eq!(q.params.keyspace.as_deref(), Some("ks"));
        assert_eq!(q.params.now_in_seconds, Some(7));
        assert_eq!(q.params.consistency, Consistency::LocalQuorum);
    }

    #[test]
    fn custom_payload_is_skipped_and_tracing_noted() {
        let mut body = BytesMut::new();
        body.put_u16(1);
        wire::put_string(&mut body, "k");
        wire::put_bytes(&mut body, Some(b"v"));
        Request::Options.encode_body(ProtocolVersion::V4, &mut body);
        let env = Envelope {
            version: ProtocolVersion::V4,
            flags: flags::CUSTOM_PAYLOAD | flags::TRACING,
            stream: 3,
            opcode: Opcode::Options,
            body: body.freeze(),
        };
        let d = Request::from_envelope(&env).unwrap();
        assert_eq!(d.request, Request::Options);
        assert!(d.tracing);
        assert_eq!(d.custom_payload.len(), 1);
    }

    fn full_params(named: bool) -> QueryParams {
        let vals = vec![
            RawValue::Bytes(Bytes::from_static(b"abc")),
            RawValue::Null,
            RawValue::Unset,
        ];
        QueryParams {
            consistency: Consistency::Quorum,
            values: if named {
                Values::Named(
                    vals.into_iter()
                        .enumerate()
                        .map(|(i, v)| (format!("n{i}"), v))
                        .collect(),
                )
            } else {
                Values::Positional(vals)
            },
            skip_metadata: true,
            page_size: Some(100),
            paging_state: Some(Bytes::from_static(b"state")),
            serial_consistency: Some(Consistency::LocalSerial),
            default_timestamp: Some(1_700_000_000_000_000),
            keyspace: None,
            now_in_seconds: None,
        }
    }

    #[test]
    fn every_request_round_trips_in_every_version() {
        for version in [
            ProtocolVersion::V3,
            ProtocolVersion::V4,
            ProtocolVersion::V5,
        ] {
            let v5 = version == ProtocolVersion::V5;
            let mut params = full_params(false);
            if version == ProtocolVersion::V3 {
                // v3 has no unset.
                params.values = Values::Positional(vec![RawValue::Null]);
            }
            if v5 {
                params.keyspace = Some("ks1".into());
                params.now_in_seconds = Some(12345);
            }
            round_trip(
                version,
                Request::Startup(vec![
                    ("CQL_VERSION".into(), "3.0.0".into()),
                    ("COMPRESSION".into(), "lz4".into()),
                ]),
            );
            round_trip(
                version,
                Request::AuthResponse(Some(Bytes::from_static(b"\0cassandra\0cassandra"))),
            );
            round_trip(version, Request::AuthResponse(None));
            round_trip(version, Request::Options);
            round_trip(
                version,
                Request::Query(Query {
                    query: "SELECT * FROM t WHERE k = ?".into(),
                    params: params.clone(),
                }),
            );
            if version != ProtocolVersion::V3 {
                round_trip(
                    version,
                    Request::Query(Query {
                        query: "SELECT :a".into(),
                        params: full_params(true),
                    }),
                );
            }
            round_trip(
                version,
                Request::Prepare(Prepare {
                    query: "SELECT 1".into(),
                    keyspace: v5.then(|| "ks".into()),
                }),
            );
            round_trip(
                version,
                Request::Execute(Execute {
                    id: Bytes::from_static(&[1; 16]),
                    result_metadata_id: v5.then(|| Bytes::from_static(&[2; 16])),
                    params: params.clone(),
                }),
            );
            round_trip(
                version,
                Request::Batch(Batch {
                    kind: BatchKind::Unlogged,
                    statements: vec![
                        BatchStatement::Query {
                            query: "INSERT INTO t (k) VALUES (?)".into(),
                            values: Values::Positional(vec![RawValue::Bytes(Bytes::from_static(
                                b"x",
                            ))]),
                        },
                        BatchStatement::Prepared {
                            id: Bytes::from_static(&[9; 16]),
                            values: Values::Positional(vec![RawValue::Null]),
                        },
                    ],
                    consistency: Consistency::LocalOne,
                    serial_consistency: Some(Consistency::Serial),
                    default_timestamp: Some(42),
                    keyspace: v5.then(|| "ks".into()),
                    now_in_seconds: v5.then_some(99),
                }),
            );
            round_trip(
                version,
                Request::Register(vec!["SCHEMA_CHANGE".into(), "STATUS_CHANGE".into()]),
            );
        }
    }

    #[test]
    fn errors_use_cassandra_wording() {
        let e = Request::decode(
            ProtocolVersion::V4,
            Opcode::Batch,
            Bytes::from_static(&[7, 0, 0]),
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "Invalid BATCH message type 7");
        assert_eq!(e.code(), 0x000A);
        let e = Request::decode(
            ProtocolVersion::V4,
            Opcode::Batch,
            Bytes::from_static(&[0, 0, 1, 5, 0, 0, 0, 0, 0, 0]),
        )
        .unwrap_err();
        assert!(
            e.to_string().starts_with("Invalid query kind in BATCH"),
            "{e}"
        );
        let e = Request::decode(
            ProtocolVersion::V4,
            Opcode::Query,
            Bytes::from_static(&[0, 0, 0, 0, 0, 0x42, 0]),
        )
        .unwrap_err();
        assert!(e.to_string().contains("consistency"), "{e}");
        let e = Request::decode(ProtocolVersion::V4, Opcode::Result, Bytes::new()).unwrap_err();
        assert_eq!(e.code(), 0x000A);
    }

    #[test]
    fn hostile_value_count_does_not_allocate() {
        // 65535 values announced in a tiny body.
        let body = hex("00000000 0001 01 ffff");
        let e = Request::decode(ProtocolVersion::V4, Opcode::Query, Bytes::from(body)).unwrap_err();
        assert!(e.to_string().contains("65535"), "{e}");
    }

    #[test]
    fn garbage_never_panics() {
        let mut seed = 0xD1B54A32D192ED03u64;
        let ops = [
            Opcode::Startup,
            Opcode::AuthResponse,
            Opcode::Options,
            Opcode::Query,
            Opcode::Prepare,
            Opcode::Execute,
            Opcode::Batch,
            Opcode::Register,
        ];
        for i in 0..30_000u32 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let len = (seed % 48) as usize;
            let body: Vec<u8> = (0..len)
                .map(|j| ((seed >> (j % 8 * 8)) as u8).wrapping_mul(j as u8 | 1) % 12)
                .collect();
            let version = [
                ProtocolVersion::V3,
                ProtocolVersion::V4,
                ProtocolVersion::V5,
            ][(i % 3) as usize];
            let _ = Request::decode(
                version,
                ops[(seed >> 60) as usize % ops.len()],
                Bytes::from(body),
            );
        }
    }
}
