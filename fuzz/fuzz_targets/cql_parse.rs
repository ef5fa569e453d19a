//! CQL text from the network (QUERY, PREPARE, BATCH) goes straight into the parser: it must
//! never panic or overflow the stack, and what it prints back must parse again.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(parsed) = cql::parse(text) {
        assert_eq!(
            parsed.bind_count(),
            parsed.bind_markers.len(),
            "bind count matches the marker list"
        );
    }
    let _ = cql::parse_statements(text);
    if let Ok(ty) = cql::parse_type(text) {
        // DESCRIBE prints types with Display; the printed form must read back the same.
        let printed = ty.to_string();
        let again = cql::parse_type(&printed).expect("printed type parses");
        assert_eq!(again, ty, "type round trip through {printed:?}");
    }
});
