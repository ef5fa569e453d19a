//! One read loop's worth of framing: bytes off a socket in, whole envelopes out, whether the
//! connection speaks plain envelopes (v3/v4, and v5 before STARTUP is answered) or v5 segments.
//!
//! The front end (client connections) and the proxy's upstream connections (the handshake and
//! the multiplexed read loop) all read through a [`Deframer`]; each decides *when* framing
//! changes (the connection state machine is theirs), the deframer only how bytes become
//! envelopes.
//!
//! # Invariants
//! - Incremental: an envelope (or segment) is decoded only once all of its bytes are in the
//!   buffer; "incomplete" is `Ok(None)`, never an error, and leaves the unread bytes in place.
//! - Every length is bounded before anything is allocated: an envelope body by
//!   `max_frame_bytes` (checked on its header, also inside segments), a segment payload by the
//!   17-bit length field of its header (checked by the header CRC before use).
//! - Envelopes come out in the order they were sent; a segment carrying several envelopes
//!   queues the rest for the next calls.
//! - An error is a connection error: what follows it in the stream cannot be trusted.

use std::collections::VecDeque;

use bytes::BytesMut;

use crate::error::FrameError;
use crate::frame::{decode_envelope, Compression, Envelope};
use crate::segment::{decode_segment, EnvelopeAssembler};

/// Turns a connection's incoming bytes into envelopes (see the module docs).
#[derive(Debug)]
pub struct Deframer {
    max_frame_bytes: usize,
    /// v3/v4 body compression, applied to envelopes flagged compressed.
    body_compression: Option<Compression>,
    /// v5 after the STARTUP answer: segment compression and envelope reassembly.
    segments: Option<(bool, EnvelopeAssembler)>,
    /// Envelopes decoded from a segment but not handed out yet.
    queued: VecDeque<Envelope>,
}

impl Deframer {
    /// A deframer of plain, uncompressed envelopes whose bodies are at most
    /// `max_frame_bytes`.
    pub fn new(max_frame_bytes: usize) -> Self {
        Deframer {
            max_frame_bytes,
            body_compression: None,
            segments: None,
            queued: VecDeque::new(),
        }
    }

    /// Sets the v3/v4 body compression negotiated at STARTUP (a body flagged compressed is
    /// decompressed with it; with `None` such a body is an error, as in Cassandra).
    pub fn set_body_compression(&mut self, compression: Option<Compression>) {
        self.body_compression = compression;
    }

    /// Switches to v5 segment framing (`compressed`: LZ4 segments), from the next byte on.
    pub fn start_segments(&mut self, compressed: bool) {
        self.segments = Some((compressed, EnvelopeAssembler::new(self.max_frame_bytes)));
    }

    /// True once [`Deframer::start_segments`] was called.
    pub fn segmented(&self) -> bool {
        self.segments.is_some()
    }

    /// The next whole envelope, taking its bytes off the front of `buf`; `Ok(None)` when more
    /// bytes are needed.
    pub fn next_envelope(&mut self, buf: &mut BytesMut) -> Result<Option<Envelope>, FrameError> {
        if let Some(env) = self.queued.pop_front() {
            return Ok(Some(env));
        }
        let Some((compressed, assembler)) = &mut self.segments else {
            return decode_envelope(buf, self.max_frame_bytes, self.body_compression);
        };
        let mut decoded = Vec::new();
        while decoded.is_empty() {
            let Some(seg) = decode_segment(buf, *compressed)? else {
                return Ok(None);
            };
            assembler.push(seg, &mut decoded)?;
        }
        self.queued.extend(decoded);
        Ok(self.queued.pop_front())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{encode_envelope, Opcode, ProtocolVersion};
    use crate::segment::encode_envelopes_as_segments;
    use bytes::Bytes;

    fn env(stream: i16, body_len: usize) -> Envelope {
        Envelope {
            version: ProtocolVersion::V5,
            flags: 0,
            stream,
            opcode: Opcode::Query,
            body: Bytes::from(vec![7u8; body_len]),
        }
    }

    /// Feeds `wire` one byte at a time and collects every envelope.
    fn trickle(d: &mut Deframer, wire: &[u8]) -> Vec<Envelope> {
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for &b in wire {
            buf.extend_from_slice(&[b]);
            while let Some(e) = d.next_envelope(&mut buf).unwrap() {
                out.push(e);
            }
        }
        assert!(buf.is_empty());
        out
    }

    #[test]
    fn envelopes_come_out_whole_however_the_bytes_arrive() {
        let envs = [env(1, 0), env(2, 300), env(3, 5)];
        let mut wire = BytesMut::new();
        for e in &envs {
            encode_envelope(e, None, &mut wire);
        }
        assert_eq!(trickle(&mut Deframer::new(1 << 20), &wire), envs);
    }

    #[test]
    fn segments_carrying_several_envelopes_or_a_large_one_come_out_in_order() {
        // Small envelopes share a segment; the large one spans several (128 KiB payloads).
        let envs = [env(1, 10), env(2, 20), env(3, 300_000), env(4, 0)];
        for compressed in [false, true] {
            let mut wire = BytesMut::new();
            encode_envelopes_as_segments(&envs, compressed, &mut wire);
            let mut d = Deframer::new(1 << 20);
            d.start_segments(compressed);
            assert!(d.segmented());
            assert_eq!(trickle(&mut d, &wire), envs);
        }
    }

    #[test]
    fn an_oversize_envelope_is_refused_on_its_header() {
        let mut wire = BytesMut::new();
        encode_envelope(&env(1, 2000), None, &mut wire);
        let mut header = BytesMut::from(&wire[..9]);
        let r = Deframer::new(1000).next_envelope(&mut header);
        assert!(matches!(r, Err(FrameError::TooLarge { .. })), "{r:?}");
    }
}
