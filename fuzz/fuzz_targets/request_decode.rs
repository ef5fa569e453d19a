//! Request bodies: any body under any version/opcode decodes or errors; a body that decodes
//! re-encodes to something that decodes to the same request.
#![no_main]

use bytes::{Bytes, BytesMut};
use libfuzzer_sys::fuzz_target;
use proto::{Opcode, ProtocolVersion, Request};

const OPS: [Opcode; 8] = [
    Opcode::Startup,
    Opcode::AuthResponse,
    Opcode::Options,
    Opcode::Query,
    Opcode::Prepare,
    Opcode::Execute,
    Opcode::Batch,
    Opcode::Register,
];

fuzz_target!(|data: &[u8]| {
    let Some((&sel, body)) = data.split_first() else {
        return;
    };
    let version = [
        ProtocolVersion::V3,
        ProtocolVersion::V4,
        ProtocolVersion::V5,
    ][(sel % 3) as usize];
    let opcode = OPS[((sel / 3) % 8) as usize];
    if let Ok(req) = Request::decode(version, opcode, Bytes::copy_from_slice(body)) {
        let mut out = BytesMut::new();
        req.encode_body(version, &mut out);
        let again =
            Request::decode(version, opcode, out.freeze()).expect("re-encoded request decodes");
        assert_eq!(again, req);
    }
});
