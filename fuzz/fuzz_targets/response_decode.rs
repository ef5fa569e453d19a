//! Response bodies, as the proxy reads them from its upstream: any body under any version and
//! response opcode decodes or errors, never panics; the cells of a decoded ROWS result can be
//! walked and decoded with their column types (errors allowed), and a decoded response
//! re-encodes to a body that decodes again.
#![no_main]

use bytes::{Bytes, BytesMut};
use libfuzzer_sys::fuzz_target;
use proto::response::ResultBody;
use proto::{Opcode, ProtocolVersion, Response};

const OPS: [Opcode; 8] = [
    Opcode::Error,
    Opcode::Ready,
    Opcode::Authenticate,
    Opcode::Supported,
    Opcode::Result,
    Opcode::Event,
    Opcode::AuthChallenge,
    Opcode::AuthSuccess,
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
    let Ok(resp) = Response::decode(version, opcode, Bytes::copy_from_slice(body)) else {
        return;
    };
    if let Response::Result(ResultBody::Rows(rows)) = &resp {
        let _ = rows.cells().count();
        let _ = rows.decode_rows();
    }
    let mut out = BytesMut::new();
    resp.encode_body(version, &mut out);
    Response::decode(version, opcode, out.freeze()).expect("a re-encoded response decodes");
});
