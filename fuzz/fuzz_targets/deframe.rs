//! The deframer (`proto::Deframer`, the read loop of client and upstream connections) never
//! panics, and is incremental: the same bytes cut into arbitrary chunks give the same
//! envelopes, and the same error or need for more bytes, as when they arrive all at once. The
//! first byte picks the framing (envelopes with or without LZ4/Snappy bodies, segments with or
//! without LZ4, as they come or with the rest of the input wrapped in valid segments so that
//! mutations reach envelope reassembly past the CRCs) and the second the chunk size.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use proto::{encode_segments, Compression, Deframer, Envelope};

fn deframer(mode: u8) -> Deframer {
    let mut d = Deframer::new(1 << 20);
    match mode % 7 {
        0 => {}
        1 => d.set_body_compression(Some(Compression::Lz4)),
        2 => d.set_body_compression(Some(Compression::Snappy)),
        3 | 5 => d.start_segments(false),
        _ => d.start_segments(true),
    }
    d
}

/// Every envelope, and whether the stream ended in an error.
fn run(mode: u8, data: &[u8], chunk: usize) -> (Vec<Envelope>, bool) {
    let mut d = deframer(mode);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for piece in data.chunks(chunk) {
        buf.extend_from_slice(piece);
        loop {
            match d.next_envelope(&mut buf) {
                Ok(Some(env)) => out.push(env),
                Ok(None) => break,
                Err(_) => return (out, true),
            }
        }
    }
    (out, false)
}

fuzz_target!(|data: &[u8]| {
    let [mode, chunk, rest @ ..] = data else {
        return;
    };
    let mut wire = BytesMut::new();
    let rest = match mode % 7 {
        5 | 6 => {
            encode_segments(rest, mode % 7 == 6, &mut wire);
            &wire[..]
        }
        _ => rest,
    };
    let whole = run(*mode, rest, rest.len().max(1));
    let chunked = run(*mode, rest, usize::from(*chunk).max(1));
    assert_eq!(whole, chunked);
});
