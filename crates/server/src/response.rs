//! Turning a `Response` into the bytes of one envelope.
//!
//! Runs in the request task (so encoding happens in parallel across requests, not in the
//! writer). `proto` encodes the body in place after the header: one buffer, no copy, for the
//! common uncompressed case.

use bytes::{BufMut, Bytes, BytesMut};
use proto::frame::{Compression, Opcode, ProtocolVersion, HEADER_LEN, RESPONSE_BIT};
use proto::response::{Response, ResponseExtras, ResultBody};

use crate::backend::ConnState;
use crate::writer::SEND_AS_IS;

/// Encodes `resp` for an established connection (its version and compression).
pub(crate) fn encode_response(conn: &ConnState, stream: i16, resp: &Response) -> Bytes {
    encode(conn.version(), conn.compression(), stream, resp)
}

/// An answer encoded for the writer.
pub(crate) enum Encoded {
    /// The whole envelope.
    Whole(Bytes),
    /// The envelope's head and its body's bulk (the row data), to be sent one after the other:
    /// a bulk large enough to be worth not copying ([`SEND_AS_IS`]) on a connection that does
    /// not compress v3/v4 bodies.
    Split(Bytes, Bytes),
}

/// [`encode_response`] with a tracing session id and warnings in front of the body, and a large
/// body's bulk left apart.
pub(crate) fn encode_answer(
    conn: &ConnState,
    stream: i16,
    resp: &Response,
    extras: &ResponseExtras,
) -> Encoded {
    let (version, compression) = (conn.version(), conn.compression());
    let bulk = match resp {
        Response::Result(ResultBody::Rows(r)) => r.data.len(),
        Response::Result(ResultBody::Encoded(b)) => b.len(),
        _ => 0,
    };
    if bulk >= SEND_AS_IS && (compression.is_none() || version >= ProtocolVersion::V5) {
        let mut head = BytesMut::with_capacity(HEADER_LEN + 120);
        return match resp.encode_envelope_head(version, stream, extras, &mut head) {
            Some(bulk) => Encoded::Split(head.freeze(), bulk.clone()),
            None => Encoded::Whole(head.freeze()),
        };
    }
    // Rows are most answers' bulk: room for them up front, not a copy when the buffer grows.
    let mut out = BytesMut::with_capacity(HEADER_LEN + 120 + bulk);
    resp.encode_envelope(version, stream, extras, compression, &mut out);
    Encoded::Whole(out.freeze())
}

/// Encodes `resp` as one envelope. `compression` applies to v3/v4 bodies only (v5 compresses
/// whole segments in the writer).
pub(crate) fn encode(
    version: ProtocolVersion,
    compression: Option<Compression>,
    stream: i16,
    resp: &Response,
) -> Bytes {
    encode_with(
        version,
        compression,
        stream,
        resp,
        &ResponseExtras::default(),
    )
}

fn encode_with(
    version: ProtocolVersion,
    compression: Option<Compression>,
    stream: i16,
    resp: &Response,
    extras: &ResponseExtras,
) -> Bytes {
    // Rows are most answers' bulk: room for them up front, not a copy when the buffer grows.
    let rows = match resp {
        Response::Result(ResultBody::Rows(r)) => r.data.len(),
        _ => 0,
    };
    let mut out = BytesMut::with_capacity(HEADER_LEN + 120 + rows);
    resp.encode_envelope(version, stream, extras, compression, &mut out);
    out.freeze()
}

/// The header of a response envelope of `body_len` bytes, no flags (for a body sent as is).
pub(crate) fn envelope_header(
    version: ProtocolVersion,
    stream: i16,
    opcode: Opcode,
    body_len: usize,
) -> [u8; HEADER_LEN] {
    // Written in place: a buffer to copy it from was an allocation per answer.
    let mut header = [0u8; HEADER_LEN];
    proto::frame::encode_header(version, 0, stream, opcode, body_len, &mut &mut header[..]);
    header
}

/// An ERROR envelope in a protocol version we do not otherwise speak, for the version
/// negotiation answer to v1/v2 clients (their header is 8 bytes with a one-byte stream id).
/// Body: `[int] code` `[string] message`.
pub(crate) fn legacy_error(version: u8, stream: i8, code: i32, message: &str) -> Bytes {
    let msg = &message.as_bytes()[..message.len().min(u16::MAX as usize)];
    let body_len = 4 + 2 + msg.len();
    let mut out = BytesMut::with_capacity(8 + body_len);
    out.put_u8(version | RESPONSE_BIT);
    out.put_u8(0);
    out.put_i8(stream);
    out.put_u8(0x00); // ERROR
    out.put_u32(body_len as u32);
    out.put_i32(code);
    out.put_u16(msg.len() as u16);
    out.put_slice(msg);
    out.freeze()
}
