//! Envelope framing (v3/v4/v5 header, LZ4/Snappy bodies) and every body decoder behind it:
//! any byte stream must give envelopes, `Ok(None)` or an error, never a panic.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use proto::{decode_envelope, Compression, Request, Response};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let compression = match mode % 3 {
        0 => None,
        1 => Some(Compression::Lz4),
        _ => Some(Compression::Snappy),
    };
    let max = if mode & 0x80 != 0 { 64 } else { 1 << 20 };
    let mut buf = BytesMut::from(rest);
    while let Ok(Some(env)) = decode_envelope(&mut buf, max, compression) {
        if env.opcode.is_response() {
            let _ = Response::from_envelope(&env);
        } else {
            let _ = Request::from_envelope(&env);
        }
    }
});
