//! v5 segments (CRC24 header, CRC32 payload, LZ4) and envelope reassembly never panic. The
//! first byte picks compressed or not and whether header CRCs are fixed up, so that mutated
//! inputs reach the payload paths instead of stopping at the header check.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use proto::segment::{crc24, crc32};
use proto::{decode_segment, EnvelopeAssembler};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let compressed = mode & 1 != 0;
    let mut bytes = rest.to_vec();
    let hl = if compressed { 8 } else { 6 };
    if mode & 2 != 0 && bytes.len() >= hl {
        let c = crc24(&bytes[..hl - 3]);
        bytes[hl - 3..hl].copy_from_slice(&c.to_le_bytes()[..3]);
        if mode & 4 != 0 {
            let fields = bytes[..hl - 3]
                .iter()
                .rev()
                .fold(0u64, |a, &b| (a << 8) | u64::from(b));
            let len = (fields & 0x1_FFFF) as usize;
            if bytes.len() >= hl + len + 4 {
                let c = crc32(&bytes[hl..hl + len]);
                bytes[hl + len..hl + len + 4].copy_from_slice(&c.to_le_bytes());
            }
        }
    }
    let mut buf = BytesMut::from(&bytes[..]);
    let mut asm = EnvelopeAssembler::new(1 << 20);
    let mut out = Vec::new();
    while let Ok(Some(seg)) = decode_segment(&mut buf, compressed) {
        if asm.push(seg, &mut out).is_err() {
            break;
        }
    }
});
