//! Turning a `Response` into the bytes of one envelope.
//!
//! Runs in the request task (so encoding happens in parallel across connections and requests,
//! not in the writer). The body is encoded straight after a reserved header, which is filled in
//! afterwards: one buffer, no copy, for the common uncompressed case.

use bytes::{BufMut, Bytes, BytesMut};
use proto::frame::{compress, Compression, ProtocolVersion, HEADER_LEN, RESPONSE_BIT};
use proto::response::Response;

use crate::backend::ConnState;

/// Envelope header flag for a compressed body (v3/v4).
const FLAG_COMPRESSION: u8 = proto::frame::flags::COMPRESSION;

/// Encodes `resp` for an established connection (its version and compression).
pub(crate) fn encode_response(conn: &ConnState, stream: i16, resp: &Response) -> Bytes {
    encode(conn.version(), conn.compression(), stream, resp)
}

/// Encodes `resp` as one envelope. `compression` applies to v3/v4 bodies only (v5 compresses
/// whole segments in the writer).
pub(crate) fn encode(
    version: ProtocolVersion,
    compression: Option<Compression>,
    stream: i16,
    resp: &Response,
) -> Bytes {
    let mut out = BytesMut::with_capacity(HEADER_LEN + 120);
    out.put_bytes(0, HEADER_LEN);
    resp.encode_body(version, &mut out);
    let mut flags = 0;
    if let (Some(c), true) = (compression, version < ProtocolVersion::V5) {
        let packed = compress(c, &out[HEADER_LEN..]);
        out.truncate(HEADER_LEN);
        out.extend_from_slice(&packed);
        flags |= FLAG_COMPRESSION;
    }
    let body_len = u32::try_from(out.len() - HEADER_LEN).unwrap_or(u32::MAX);
    // The v3..v5 envelope header (proto::frame): version|0x80, flags, stream, opcode, length.
    out[0] = version.as_u8() | RESPONSE_BIT;
    out[1] = flags;
    out[2..4].copy_from_slice(&stream.to_be_bytes());
    out[4] = resp.opcode() as u8;
    out[5..9].copy_from_slice(&body_len.to_be_bytes());
    out.freeze()
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
