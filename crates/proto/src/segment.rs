//! Protocol v5 segment framing (native_protocol_v5.spec section 2), used after STARTUP/READY.
//!
//! Uncompressed segment:
//! ```text
//! header (6 bytes, little-endian): payload_len:17 | self_contained:1 | padding:6 | crc24(first 3 bytes):24
//! payload (payload_len bytes) | crc32(payload) (4 bytes, little-endian)
//! ```
//! LZ4 segment:
//! ```text
//! header (8 bytes, little-endian): compressed_len:17 | uncompressed_len:17 | self_contained:1 |
//!                                  padding:5 | crc24(first 5 bytes):24
//! payload (compressed_len bytes, raw LZ4 block) | crc32(payload) (4 bytes, little-endian)
//! ```
//! `uncompressed_len == 0` means the payload is stored uncompressed (it did not get smaller).
//!
//! The CRCs are Cassandra's (`org.apache.cassandra.net.Crc`): CRC24 with init 0x875060 and
//! polynomial 0x1974F0B over the header bytes in wire order; CRC32 (the zlib one) primed with
//! the bytes FA 2D 55 CA before the payload.
//!
//! A self-contained segment holds one or more whole envelopes. An envelope bigger than one
//! segment's payload (128 KiB - 1) is cut into consecutive non-self-contained segments;
//! `EnvelopeAssembler` puts them back together.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::error::FrameError;
use crate::frame::{decode_envelope, Compression, Envelope};

/// Largest payload one segment carries (17 bits).
pub const MAX_PAYLOAD: usize = (1 << 17) - 1;
const CRC24_INIT: u32 = 0x87_5060;
const CRC24_POLY: u32 = 0x197_4F0B;
const CRC32_PRIMER: [u8; 4] = [0xFA, 0x2D, 0x55, 0xCA];

/// Cassandra's CRC24 over up to 8 header bytes, in wire order.
pub fn crc24(bytes: &[u8]) -> u32 {
    let mut crc = CRC24_INIT;
    for &b in bytes {
        crc ^= u32::from(b) << 16;
        for _ in 0..8 {
            crc <<= 1;
            if crc & 0x100_0000 != 0 {
                crc ^= CRC24_POLY;
            }
        }
    }
    crc
}

/// Cassandra's payload CRC32: standard CRC32 primed with FA 2D 55 CA.
pub fn crc32(payload: &[u8]) -> u32 {
    let mut h = PayloadCrc::new();
    h.update(payload);
    h.finish()
}

/// [`crc32`] of a payload fed in pieces, in order.
#[derive(Clone)]
pub struct PayloadCrc(crc32fast::Hasher);

impl PayloadCrc {
    pub fn new() -> Self {
        let mut h = crc32fast::Hasher::new();
        h.update(&CRC32_PRIMER);
        PayloadCrc(h)
    }

    pub fn update(&mut self, piece: &[u8]) {
        self.0.update(piece);
    }

    pub fn finish(self) -> u32 {
        self.0.finalize()
    }
}

impl Default for PayloadCrc {
    fn default() -> Self {
        Self::new()
    }
}

/// The 6-byte header of an uncompressed segment whose payload is `len` bytes
/// (at most [`MAX_PAYLOAD`]).
pub fn uncompressed_header(len: usize, self_contained: bool) -> [u8; 6] {
    debug_assert!(len <= MAX_PAYLOAD);
    let mut fields = len as u32;
    if self_contained {
        fields |= 1 << 17;
    }
    let mut h = [0u8; 6];
    h[..3].copy_from_slice(&fields.to_le_bytes()[..3]);
    let crc = crc24(&h[..3]);
    h[3..].copy_from_slice(&crc.to_le_bytes()[..3]);
    h
}

/// One decoded segment. `payload` is uncompressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub payload: Bytes,
    pub self_contained: bool,
}

fn le(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .rev()
        .fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
}

/// Takes one segment off the front of `buf`; `Ok(None)` = need more bytes. `compressed`
/// selects the LZ4 layout (negotiated by STARTUP's `COMPRESSION: lz4`). CRC mismatches are
/// errors: Cassandra closes the connection on a corrupt header, and so should the caller.
pub fn decode_segment(buf: &mut BytesMut, compressed: bool) -> Result<Option<Segment>, FrameError> {
    let header_len = if compressed { 8 } else { 6 };
    if buf.len() < header_len {
        return Ok(None);
    }
    let fields_len = header_len - 3;
    let fields = le(&buf[..fields_len]);
    let read_crc = le(&buf[fields_len..header_len]) as u32;
    let computed = crc24(&buf[..fields_len]);
    if read_crc != computed {
        return Err(FrameError::HeaderCrc {
            read: read_crc,
            computed,
        });
    }
    let payload_len = (fields & 0x1_FFFF) as usize;
    let (uncompressed_len, self_contained) = if compressed {
        ((fields >> 17) & 0x1_FFFF, fields & (1 << 34) != 0)
    } else {
        (0, fields & (1 << 17) != 0)
    };
    let total = header_len + payload_len + 4;
    if buf.len() < total {
        buf.reserve(total - buf.len());
        return Ok(None);
    }
    let mut seg = buf.split_to(total).freeze();
    seg.advance(header_len);
    let payload = seg.split_to(payload_len);
    let read_crc = seg.get_u32_le();
    let computed = crc32(&payload);
    if read_crc != computed {
        return Err(FrameError::PayloadCrc {
            read: read_crc,
            computed,
        });
    }
    let payload = if compressed && uncompressed_len > 0 {
        let n = uncompressed_len as usize;
        let out = lz4_flex::block::decompress(&payload, n).map_err(|e| FrameError::Segment {
            reason: format!("LZ4 payload does not decompress: {e}"),
        })?;
        if out.len() != n {
            return Err(FrameError::Segment {
                reason: format!(
                    "LZ4 payload decompressed to {} bytes, header says {n}",
                    out.len()
                ),
            });
        }
        Bytes::from(out)
    } else {
        payload
    };
    Ok(Some(Segment {
        payload,
        self_contained,
    }))
}

fn put_le(out: &mut BytesMut, v: u64, n: usize) {
    for i in 0..n {
        out.put_u8((v >> (8 * i)) as u8);
    }
}

fn encode_one(chunk: &[u8], self_contained: bool, compressed: bool, out: &mut BytesMut) {
    if compressed {
        let c = lz4_flex::block::compress(chunk);
        let (payload, uncompressed_len): (&[u8], u64) = if c.len() < chunk.len() {
            (&c, chunk.len() as u64)
        } else {
            (chunk, 0)
        };
        let mut fields = payload.len() as u64 | (uncompressed_len << 17);
        if self_contained {
            fields |= 1 << 34;
        }
        out.reserve(12 + payload.len());
        let start = out.len();
        put_le(out, fields, 5);
        let crc = crc24(&out[start..start + 5]);
        put_le(out, u64::from(crc), 3);
        out.put_slice(payload);
        out.put_u32_le(crc32(payload));
    } else {
        out.reserve(10 + chunk.len());
        out.put_slice(&uncompressed_header(chunk.len(), self_contained));
        out.put_slice(chunk);
        out.put_u32_le(crc32(chunk));
    }
}

/// Wraps `payload` in segments. A payload up to `MAX_PAYLOAD` becomes one self-contained
/// segment (it may hold several whole envelopes); a bigger one must be exactly one envelope
/// and is cut into non-self-contained segments of `MAX_PAYLOAD` bytes.
pub fn encode_segments(payload: &[u8], compressed: bool, out: &mut BytesMut) {
    if payload.len() <= MAX_PAYLOAD {
        encode_one(payload, true, compressed, out);
        return;
    }
    for chunk in payload.chunks(MAX_PAYLOAD) {
        encode_one(chunk, false, compressed, out);
    }
}

/// Turns a stream of v5 segments back into envelopes.
///
/// # Invariants
/// A self-contained segment holds whole envelopes only; a non-self-contained run starts at an
/// envelope boundary and ends exactly at the end of one envelope. Anything else is an error.
#[derive(Debug)]
pub struct EnvelopeAssembler {
    pending: BytesMut,
    max_frame_bytes: usize,
}

impl EnvelopeAssembler {
    pub fn new(max_frame_bytes: usize) -> Self {
        EnvelopeAssembler {
            pending: BytesMut::new(),
            max_frame_bytes,
        }
    }

    /// True while a multi-segment envelope is half received.
    pub fn in_progress(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Feeds one segment; complete envelopes are appended to `out`.
    pub fn push(&mut self, seg: Segment, out: &mut Vec<Envelope>) -> Result<(), FrameError> {
        if seg.self_contained {
            if !self.pending.is_empty() {
                return Err(FrameError::Segment {
                    reason: "self-contained segment received in the middle of a large envelope"
                        .into(),
                });
            }
            let mut buf = BytesMut::from(&seg.payload[..]);
            while !buf.is_empty() {
                match decode_envelope(&mut buf, self.max_frame_bytes, None)? {
                    Some(env) => out.push(env),
                    None => {
                        return Err(FrameError::Segment {
                            reason: format!(
                            "self-contained segment ends with {} bytes of an incomplete envelope",
                            buf.len()
                        ),
                        })
                    }
                }
            }
            return Ok(());
        }
        self.pending.extend_from_slice(&seg.payload);
        match decode_envelope(&mut self.pending, self.max_frame_bytes, None)? {
            None => Ok(()),
            Some(env) => {
                if !self.pending.is_empty() {
                    self.pending.clear();
                    return Err(FrameError::Segment {
                        reason: "non-self-contained segments carried more than one envelope".into(),
                    });
                }
                out.push(env);
                Ok(())
            }
        }
    }
}

/// Convenience for the v5 write path: encodes envelopes into `out` as segments, packing small
/// envelopes together into self-contained segments and giving large ones their own run.
pub fn encode_envelopes_as_segments(envs: &[Envelope], compressed: bool, out: &mut BytesMut) {
    let mut batch = BytesMut::new();
    for env in envs {
        let mut one = BytesMut::new();
        crate::frame::encode_envelope(env, None::<Compression>, &mut one);
        if batch.len() + one.len() > MAX_PAYLOAD && !batch.is_empty() {
            encode_segments(&batch, compressed, out);
            batch.clear();
        }
        if one.len() > MAX_PAYLOAD {
            encode_segments(&one, compressed, out);
        } else {
            batch.extend_from_slice(&one);
        }
    }
    if !batch.is_empty() {
        encode_segments(&batch, compressed, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{Opcode, ProtocolVersion};

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    const OPTIONS_V5: &str = "050000010500000000";
    // Produced by the Python cassandra-driver 3.29 `SegmentCodec`.
    const PLAIN_OPTIONS: &str = "090002a4c8c1050000010500000000b5557486";
    const LZ4_OPTIONS: &str = "0900000004c2b895050000010500000000b5557486";
    const LZ4_REPEAT: &str = "4c00920104b236e8f12605000002070000003a0000003153454c454354202a2046524f4d2073797374656d2e6c6f63616c205748455245206b6579203d202713009f27203b00010000000043006e5001000000009a00d8d9";
    const REPEAT_PAYLOAD: &str = "05000002070000003a0000003153454c454354202a2046524f4d2073797374656d2e6c6f63616c205748455245206b6579203d20276c6f63616c27203b000100000000";

    #[test]
    fn golden_uncompressed_segment() {
        let mut out = BytesMut::new();
        encode_segments(&hex(OPTIONS_V5), false, &mut out);
        assert_eq!(&out[..], &hex(PLAIN_OPTIONS)[..]);
        let seg = decode_segment(&mut out, false).unwrap().unwrap();
        assert!(seg.self_contained);
        assert_eq!(&seg.payload[..], &hex(OPTIONS_V5)[..]);
    }

    #[test]
    fn golden_lz4_segment_not_compressible() {
        let mut out = BytesMut::new();
        encode_segments(&hex(OPTIONS_V5), true, &mut out);
        assert_eq!(&out[..], &hex(LZ4_OPTIONS)[..]);
        let seg = decode_segment(&mut out, true).unwrap().unwrap();
        assert_eq!(&seg.payload[..], &hex(OPTIONS_V5)[..]);
    }

    #[test]
    fn golden_lz4_segment_from_python_decodes() {
        let mut buf = BytesMut::from(&hex(LZ4_REPEAT)[..]);
        let seg = decode_segment(&mut buf, true).unwrap().unwrap();
        assert!(seg.self_contained);
        assert_eq!(&seg.payload[..], &hex(REPEAT_PAYLOAD).repeat(3)[..]);
        let mut envs = Vec::new();
        let mut asm = EnvelopeAssembler::new(1 << 20);
        asm.push(seg, &mut envs).unwrap();
        assert_eq!(envs.len(), 3);
        assert!(envs.iter().all(|e| e.opcode == Opcode::Query));
    }

    #[test]
    fn corrupt_crcs_are_detected() {
        let mut b = hex(PLAIN_OPTIONS);
        b[0] ^= 1;
        assert!(matches!(
            decode_segment(&mut BytesMut::from(&b[..]), false),
            Err(FrameError::HeaderCrc { .. })
        ));
        let mut b = hex(PLAIN_OPTIONS);
        b[8] ^= 1;
        assert!(matches!(
            decode_segment(&mut BytesMut::from(&b[..]), false),
            Err(FrameError::PayloadCrc { .. })
        ));
    }

    #[test]
    fn incomplete_segments_wait() {
        for compressed in [false, true] {
            let mut full = BytesMut::new();
            encode_segments(&[7u8; 1000], compressed, &mut full);
            for cut in 0..full.len() {
                let mut b = BytesMut::from(&full[..cut]);
                assert!(decode_segment(&mut b, compressed).unwrap().is_none());
            }
        }
    }

    fn big_envelope(n: usize) -> Envelope {
        Envelope {
            version: ProtocolVersion::V5,
            flags: 0,
            stream: 42,
            opcode: Opcode::Result,
            body: Bytes::from((0..n).map(|i| (i * 7 % 251) as u8).collect::<Vec<_>>()),
        }
    }

    #[test]
    fn multi_segment_round_trip_with_and_without_lz4() {
        for compressed in [false, true] {
            let env = big_envelope(300_000);
            let small = Envelope {
                body: Bytes::from_static(b"x"),
                stream: 1,
                ..big_envelope(0)
            };
            let mut wire = BytesMut::new();
            encode_envelopes_as_segments(
                &[small.clone(), env.clone(), small.clone()],
                compressed,
                &mut wire,
            );
            let mut asm = EnvelopeAssembler::new(1 << 20);
            let mut envs = Vec::new();
            let mut segments = 0;
            while let Some(seg) = decode_segment(&mut wire, compressed).unwrap() {
                segments += 1;
                asm.push(seg, &mut envs).unwrap();
            }
            assert!(wire.is_empty());
            assert_eq!(segments, 5, "1 small + 3 large + 1 small");
            assert_eq!(envs, vec![small.clone(), env, small]);
            assert!(!asm.in_progress());
        }
    }

    #[test]
    fn max_payload_exactly_is_one_segment() {
        let mut out = BytesMut::new();
        encode_segments(&vec![1u8; MAX_PAYLOAD], false, &mut out);
        assert_eq!(out.len(), MAX_PAYLOAD + 10);
        let seg = decode_segment(&mut out, false).unwrap().unwrap();
        assert!(seg.self_contained);
    }

    #[test]
    fn garbage_never_panics() {
        let mut seed = 0x9E3779B97F4A7C15u64;
        for _ in 0..20_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let len = (seed % 64) as usize;
            let mut v: Vec<u8> = (0..len)
                .map(|i| (seed >> (i % 8 * 8)) as u8 ^ i as u8)
                .collect();
            // Make the header CRC valid half of the time so the payload paths run too.
            for (compressed, hl) in [(false, 6usize), (true, 8usize)] {
                if v.len() >= hl && seed & 1 == 0 {
                    let crc = crc24(&v[..hl - 3]);
                    v[hl - 3] = crc as u8;
                    v[hl - 2] = (crc >> 8) as u8;
                    v[hl - 1] = (crc >> 16) as u8;
                }
                let mut b = BytesMut::from(&v[..]);
                if let Ok(Some(seg)) = decode_segment(&mut b, compressed) {
                    let _ = EnvelopeAssembler::new(1024).push(seg, &mut Vec::new());
                }
            }
        }
    }
}
