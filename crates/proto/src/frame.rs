//! Envelopes (spec section 2 of v4, "envelope" in v5): the 9-byte header and its body.
//!
//! ```text
//! version(1, 0x80 = response) flags(1) stream(2, signed) opcode(1) length(4) body(length)
//! ```
//!
//! `decode_envelope` first checks that a whole envelope is buffered ("incomplete" is `Ok(None)`,
//! not an error) and checks the body length against `max_frame_bytes` before reserving or
//! allocating anything. For v3/v4 it also undoes body compression (LZ4 with a 4-byte big-endian
//! length prefix, or raw Snappy). v5 compresses at the segment layer (`crate::segment`), so the
//! envelope compression flag is ignored there, as Cassandra does.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::error::FrameError;

/// Length of the envelope header in v3, v4 and v5.
pub const HEADER_LEN: usize = 9;

/// Header flag bits.
pub mod flags {
    pub const COMPRESSION: u8 = 0x01;
    pub const TRACING: u8 = 0x02;
    pub const CUSTOM_PAYLOAD: u8 = 0x04;
    pub const WARNING: u8 = 0x08;
    /// Opt-in for a beta protocol version. v5 is final in Cassandra 4.0+, so this flag is
    /// accepted and ignored for v3..v5, as Cassandra does for non-beta versions.
    pub const USE_BETA: u8 = 0x10;
}

/// Response direction bit of the version byte.
pub const RESPONSE_BIT: u8 = 0x80;

/// A native protocol version this server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProtocolVersion {
    V3,
    V4,
    V5,
}

impl ProtocolVersion {
    pub const MAX: ProtocolVersion = ProtocolVersion::V5;

    pub fn from_u8(v: u8) -> Option<Self> {
        match v {
            3 => Some(ProtocolVersion::V3),
            4 => Some(ProtocolVersion::V4),
            5 => Some(ProtocolVersion::V5),
            _ => None,
        }
    }

    pub fn as_u8(self) -> u8 {
        match self {
            ProtocolVersion::V3 => 3,
            ProtocolVersion::V4 => 4,
            ProtocolVersion::V5 => 5,
        }
    }

    /// The `PROTOCOL_VERSIONS` entries of a SUPPORTED response.
    pub fn supported_descriptions() -> Vec<String> {
        vec!["3/v3".into(), "4/v4".into(), "5/v5".into()]
    }
}

/// Message opcodes (spec section 2.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Opcode {
    Error = 0x00,
    Startup = 0x01,
    Ready = 0x02,
    Authenticate = 0x03,
    Options = 0x05,
    Supported = 0x06,
    Query = 0x07,
    Result = 0x08,
    Prepare = 0x09,
    Execute = 0x0A,
    Register = 0x0B,
    Event = 0x0C,
    Batch = 0x0D,
    AuthChallenge = 0x0E,
    AuthResponse = 0x0F,
    AuthSuccess = 0x10,
}

impl Opcode {
    pub fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            0x00 => Opcode::Error,
            0x01 => Opcode::Startup,
            0x02 => Opcode::Ready,
            0x03 => Opcode::Authenticate,
            0x05 => Opcode::Options,
            0x06 => Opcode::Supported,
            0x07 => Opcode::Query,
            0x08 => Opcode::Result,
            0x09 => Opcode::Prepare,
            0x0A => Opcode::Execute,
            0x0B => Opcode::Register,
            0x0C => Opcode::Event,
            0x0D => Opcode::Batch,
            0x0E => Opcode::AuthChallenge,
            0x0F => Opcode::AuthResponse,
            0x10 => Opcode::AuthSuccess,
            _ => return None,
        })
    }

    /// True for opcodes only a server sends.
    pub fn is_response(self) -> bool {
        match self {
            Opcode::Error
            | Opcode::Ready
            | Opcode::Authenticate
            | Opcode::Supported
            | Opcode::Result
            | Opcode::Event
            | Opcode::AuthChallenge
            | Opcode::AuthSuccess => true,
            Opcode::Startup
            | Opcode::Options
            | Opcode::Query
            | Opcode::Prepare
            | Opcode::Execute
            | Opcode::Register
            | Opcode::Batch
            | Opcode::AuthResponse => false,
        }
    }
}

/// Body compression negotiated by STARTUP's `COMPRESSION` option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compression {
    Lz4,
    Snappy,
}

impl Compression {
    /// From the STARTUP option value (`"lz4"` / `"snappy"`).
    pub fn from_name(name: &str) -> Option<Self> {
        if name.eq_ignore_ascii_case("lz4") {
            Some(Compression::Lz4)
        } else if name.eq_ignore_ascii_case("snappy") {
            Some(Compression::Snappy)
        } else {
            None
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Compression::Lz4 => "lz4",
            Compression::Snappy => "snappy",
        }
    }
}

/// A decoded envelope header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// The raw version byte, including the response bit.
    pub version: u8,
    pub flags: u8,
    pub stream: i16,
    pub opcode: Opcode,
    pub body_len: u32,
}

/// One protocol message with its header fields. `body` is uncompressed after decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    pub version: ProtocolVersion,
    pub flags: u8,
    pub stream: i16,
    pub opcode: Opcode,
    pub body: Bytes,
}

impl Envelope {
    pub fn is_response(&self) -> bool {
        self.opcode.is_response()
    }
}

/// Reads the header at the front of `buf` if 9 bytes are there. Checks the version (as soon as
/// one byte is there, like Cassandra, because v1/v2 headers are shorter), the opcode, the
/// direction and the body length.
pub fn decode_header(
    buf: &[u8],
    max_frame_bytes: usize,
) -> Result<Option<FrameHeader>, FrameError> {
    let Some(&first) = buf.first() else {
        return Ok(None);
    };
    let version_num = first & !RESPONSE_BIT;
    if ProtocolVersion::from_u8(version_num).is_none() {
        return Err(FrameError::UnsupportedVersion {
            version: version_num,
        });
    }
    if buf.len() < HEADER_LEN {
        return Ok(None);
    }
    let mut h = &buf[1..HEADER_LEN];
    let flags = h.get_u8();
    let stream = h.get_i16();
    let op = h.get_u8();
    let body_len = h.get_u32();
    let opcode = Opcode::from_u8(op).ok_or(FrameError::UnknownOpcode { opcode: op, stream })?;
    if opcode.is_response() != (first & RESPONSE_BIT != 0) {
        return Err(FrameError::WrongDirection { opcode: op, stream });
    }
    if body_len as u64 > max_frame_bytes as u64 {
        return Err(FrameError::TooLarge {
            stream,
            length: body_len as u64 + HEADER_LEN as u64,
            max: max_frame_bytes,
        });
    }
    Ok(Some(FrameHeader {
        version: first,
        flags,
        stream,
        opcode,
        body_len,
    }))
}

/// Takes one envelope off the front of `buf`.
///
/// `Ok(None)` means more bytes are needed (`buf` is untouched). Errors are connection-level: the caller
/// answers ProtocolError and closes. `compression` is the connection's negotiated v3/v4 body
/// compression; a body with the compression flag is only decompressed when it is set.
pub fn decode_envelope(
    buf: &mut BytesMut,
    max_frame_bytes: usize,
    compression: Option<Compression>,
) -> Result<Option<Envelope>, FrameError> {
    let Some(header) = decode_header(buf, max_frame_bytes)? else {
        return Ok(None);
    };
    let total = HEADER_LEN + header.body_len as usize;
    if buf.len() < total {
        // No room is reserved for the announced body: the caller's buffer grows as its bytes
        // arrive, so a header alone (up to `max_frame_bytes`) costs no memory.
        return Ok(None);
    }
    let mut frame = buf.split_to(total).freeze();
    let body = frame.split_off(HEADER_LEN);
    // Checked by decode_header.
    let version = ProtocolVersion::from_u8(header.version & !RESPONSE_BIT).ok_or(
        FrameError::UnsupportedVersion {
            version: header.version & !RESPONSE_BIT,
        },
    )?;
    let mut flags = header.flags;
    let body = match compression {
        Some(c) if flags & flags::COMPRESSION != 0 && version < ProtocolVersion::V5 => {
            flags &= !flags::COMPRESSION;
            decompress(c, &body, max_frame_bytes).map_err(|reason| FrameError::Decompression {
                stream: header.stream,
                reason,
            })?
        }
        // Cassandra refuses a compressed envelope on a connection that negotiated none.
        None if flags & flags::COMPRESSION != 0 && version < ProtocolVersion::V5 => {
            return Err(FrameError::Decompression {
                stream: header.stream,
                reason: "the envelope is flagged compressed but no compression was negotiated at STARTUP".into(),
            })
        }
        _ => body,
    };
    Ok(Some(Envelope {
        version,
        flags,
        stream: header.stream,
        opcode: header.opcode,
        body,
    }))
}

/// Writes `env` to `out`. The response bit is set from the opcode. With `compression` (v3/v4
/// only) a non-empty body is compressed and the compression flag set; STARTUP is never
/// compressed.
pub fn encode_envelope(env: &Envelope, compression: Option<Compression>, out: &mut BytesMut) {
    let mut version = env.version.as_u8();
    if env.opcode.is_response() {
        version |= RESPONSE_BIT;
    }
    let compressed = match compression {
        // Empty bodies (READY, OPTIONS) stay uncompressed, as the Python driver does; so the
        // READY that answers a STARTUP asking for compression is never compressed.
        Some(c)
            if env.version < ProtocolVersion::V5
                && env.opcode != Opcode::Startup
                && !env.body.is_empty() =>
        {
            Some(compress(c, &env.body))
        }
        _ => None,
    };
    let (flags, body): (u8, &[u8]) = match &compressed {
        Some(b) => (env.flags | flags::COMPRESSION, b),
        None => (env.flags & !flags::COMPRESSION, &env.body),
    };
    out.reserve(HEADER_LEN + body.len());
    out.put_u8(version);
    out.put_u8(flags);
    out.put_i16(env.stream);
    out.put_u8(env.opcode as u8);
    out.put_u32(u32::try_from(body.len()).unwrap_or(u32::MAX));
    out.put_slice(body);
}

/// Writes an envelope header with a body of `body_len` bytes that the caller appends itself
/// (saves a copy for large Rows bodies that are already in a `BytesMut`).
pub fn encode_header(
    version: ProtocolVersion,
    flags: u8,
    stream: i16,
    opcode: Opcode,
    body_len: usize,
    out: &mut impl BufMut,
) {
    let mut v = version.as_u8();
    if opcode.is_response() {
        v |= RESPONSE_BIT;
    }
    out.put_u8(v);
    out.put_u8(flags);
    out.put_i16(stream);
    out.put_u8(opcode as u8);
    out.put_u32(u32::try_from(body_len).unwrap_or(u32::MAX));
}

/// Compresses a v3/v4 body as Cassandra does.
pub fn compress(c: Compression, body: &[u8]) -> Vec<u8> {
    match c {
        Compression::Lz4 => {
            let mut out =
                Vec::with_capacity(4 + lz4_flex::block::get_maximum_output_size(body.len()));
            out.extend_from_slice(&(body.len() as u32).to_be_bytes());
            out.extend_from_slice(&lz4_flex::block::compress(body));
            out
        }
        // Snappy can only fail for inputs over ~4 GiB, which a frame never is.
        Compression::Snappy => snap::raw::Encoder::new()
            .compress_vec(body)
            .unwrap_or_default(),
    }
}

/// Decompresses a v3/v4 body; the announced uncompressed size is bounded by `max_bytes`
/// before anything is allocated.
pub fn decompress(c: Compression, body: &[u8], max_bytes: usize) -> Result<Bytes, String> {
    match c {
        Compression::Lz4 => {
            if body.len() < 4 {
                return Err(format!(
                    "LZ4 body of {} bytes has no length prefix",
                    body.len()
                ));
            }
            let n = u32::from_be_bytes([body[0], body[1], body[2], body[3]]) as usize;
            if n > max_bytes {
                return Err(format!(
                    "uncompressed length {n} exceeds maximum allowed length {max_bytes}"
                ));
            }
            let out = lz4_flex::block::decompress(&body[4..], n).map_err(|e| e.to_string())?;
            if out.len() != n {
                return Err(format!(
                    "LZ4 body decompressed to {} bytes, expected {n}",
                    out.len()
                ));
            }
            Ok(Bytes::from(out))
        }
        Compression::Snappy => {
            let n = snap::raw::decompress_len(body).map_err(|e| e.to_string())?;
            if n > max_bytes {
                return Err(format!(
                    "uncompressed length {n} exceeds maximum allowed length {max_bytes}"
                ));
            }
            snap::raw::Decoder::new()
                .decompress_vec(body)
                .map(Bytes::from)
                .map_err(|e| e.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    const STARTUP_PY: &str = "04 00 00 00 01 00 00 00 16 00 01 00 0b 43 51 4c 5f 56 45 52 53 49 4f 4e 00 05 33 2e 30 2e 30";

    #[test]
    fn golden_python_driver_startup() {
        let bytes = hex(STARTUP_PY);
        let mut buf = BytesMut::from(&bytes[..]);
        let env = decode_envelope(&mut buf, 1 << 20, None).unwrap().unwrap();
        assert_eq!(env.version, ProtocolVersion::V4);
        assert_eq!(env.opcode, Opcode::Startup);
        assert_eq!(env.stream, 0);
        assert_eq!(env.body.len(), 0x16);
        assert!(buf.is_empty());
        let mut out = BytesMut::new();
        encode_envelope(&env, None, &mut out);
        assert_eq!(&out[..], &bytes[..]);
    }

    #[test]
    fn incomplete_is_none_at_every_cut() {
        let bytes = hex(STARTUP_PY);
        for cut in 0..bytes.len() {
            let mut buf = BytesMut::from(&bytes[..cut]);
            assert!(decode_envelope(&mut buf, 1 << 20, None).unwrap().is_none());
            assert_eq!(buf.len(), cut);
        }
    }

    #[test]
    fn two_envelopes_back_to_back() {
        let mut bytes = hex(STARTUP_PY);
        bytes.extend(hex("04 00 00 01 05 00 00 00 00")); // OPTIONS on stream 1
        let mut buf = BytesMut::from(&bytes[..]);
        let a = decode_envelope(&mut buf, 1024, None).unwrap().unwrap();
        let b = decode_envelope(&mut buf, 1024, None).unwrap().unwrap();
        assert_eq!(a.opcode, Opcode::Startup);
        assert_eq!(b.opcode, Opcode::Options);
        assert_eq!(b.stream, 1);
        assert!(decode_envelope(&mut buf, 1024, None).unwrap().is_none());
    }

    #[test]
    fn unsupported_version_from_first_byte() {
        for v in [0u8, 1, 2, 6, 0x42] {
            let mut buf = BytesMut::from(&[v][..]);
            let err = decode_envelope(&mut buf, 1024, None).unwrap_err();
            assert_eq!(err, FrameError::UnsupportedVersion { version: v });
        }
        let mut buf = BytesMut::from(&[0x82u8][..]);
        let err = decode_envelope(&mut buf, 1024, None).unwrap_err();
        assert!(err.to_string().contains("(2)"), "{err}");
    }

    #[test]
    fn unknown_opcode_and_direction() {
        let mut buf = BytesMut::from(&hex("04 00 00 07 04 00 00 00 00")[..]);
        let err = decode_envelope(&mut buf, 1024, None).unwrap_err();
        assert_eq!(
            err,
            FrameError::UnknownOpcode {
                opcode: 4,
                stream: 7
            }
        );
        assert_eq!(err.to_string(), "Unknown opcode 4");
        let mut buf = BytesMut::from(&hex("84 00 00 07 07 00 00 00 00")[..]);
        let err = decode_envelope(&mut buf, 1024, None).unwrap_err();
        assert!(matches!(
            err,
            FrameError::WrongDirection {
                opcode: 7,
                stream: 7
            }
        ));
    }

    #[test]
    fn too_large_is_rejected_before_the_body_arrives() {
        let mut buf = BytesMut::from(&hex("04 00 00 03 07 7f ff ff ff")[..]);
        let err = decode_envelope(&mut buf, 256 << 20, None).unwrap_err();
        assert!(matches!(err, FrameError::TooLarge { stream: 3, .. }));
        assert!(buf.capacity() < 1024);
    }

    #[test]
    fn beta_flag_is_accepted_for_v5() {
        let mut buf = BytesMut::from(&hex("05 10 00 01 05 00 00 00 00")[..]);
        let env = decode_envelope(&mut buf, 1024, None).unwrap().unwrap();
        assert_eq!(env.version, ProtocolVersion::V5);
        assert_eq!(env.flags, flags::USE_BETA);
    }

    #[test]
    fn compressed_round_trip_lz4_and_snappy() {
        let body = Bytes::from(b"SELECT * FROM system.local WHERE key='local'".repeat(20));
        for c in [Compression::Lz4, Compression::Snappy] {
            let env = Envelope {
                version: ProtocolVersion::V4,
                flags: 0,
                stream: 9,
                opcode: Opcode::Result,
                body: body.clone(),
            };
            let mut out = BytesMut::new();
            encode_envelope(&env, Some(c), &mut out);
            assert_eq!(out[1] & flags::COMPRESSION, flags::COMPRESSION);
            assert!(out.len() < HEADER_LEN + body.len());
            let got = decode_envelope(&mut out, 1 << 20, Some(c))
                .unwrap()
                .unwrap();
            assert_eq!(got, env);
        }
    }

    #[test]
    fn lz4_golden_prefix_is_big_endian_length() {
        let c = compress(Compression::Lz4, b"hello");
        assert_eq!(&c[..4], &[0, 0, 0, 5]);
        assert_eq!(
            &decompress(Compression::Lz4, &c, 100).unwrap()[..],
            b"hello"
        );
        // A lying length prefix is bounded before allocating.
        let mut bad = c.clone();
        bad[0] = 0x7f;
        assert!(decompress(Compression::Lz4, &bad, 1 << 20).is_err());
    }

    #[test]
    fn startup_is_never_compressed() {
        let env = Envelope {
            version: ProtocolVersion::V4,
            flags: 0,
            stream: 0,
            opcode: Opcode::Startup,
            body: Bytes::from_static(b"abc"),
        };
        let mut out = BytesMut::new();
        encode_envelope(&env, Some(Compression::Lz4), &mut out);
        assert_eq!(out[1], 0);
    }

    #[test]
    fn garbage_never_panics() {
        let mut seed = 0x2545F4914F6CDD1Du64;
        for _ in 0..20_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let len = (seed % 40) as usize;
            let mut v: Vec<u8> = (0..len).map(|i| (seed >> (i % 8 * 8)) as u8).collect();
            if let Some(f) = v.first_mut() {
                *f = (3 + (*f % 3)) | (*f & 0x80);
            }
            if let Some(f) = v.get_mut(1) {
                *f |= flags::COMPRESSION;
            }
            let mut buf = BytesMut::from(&v[..]);
            for c in [None, Some(Compression::Lz4), Some(Compression::Snappy)] {
                let _ = decode_envelope(&mut buf.clone(), 64, c);
            }
            let _ = decode_envelope(&mut buf, 64, None);
        }
    }
}
