//! CQL values: a type read from the input (`[option]`) and a value for it. Validation and
//! decoding never panic, and whatever validates also decodes.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use proto::{decode_value, encode_value, validate_value, ColumnType};

fuzz_target!(|data: &[u8]| {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let n = (n as usize).min(rest.len());
    let (ty_bytes, value) = rest.split_at(n);
    let Ok(ty) = ColumnType::decode_option(Bytes::copy_from_slice(ty_bytes)) else {
        return;
    };
    let _ = ty.cql_name();
    let valid = validate_value(&ty, value).is_ok();
    let decoded = decode_value(&ty, value);
    if valid {
        let v = decoded.expect("a validated value decodes");
        let mut out = Vec::new();
        encode_value(&v, &mut out);
        let _ = decode_value(&ty, &out);
    }
});
