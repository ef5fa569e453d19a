//! Visibility labels (docs/visibility.md): expressions come from clients (`USING VISIBILITY`)
//! and labelled cells from disk. Parsing and evaluation never panic or overflow the stack;
//! validity does not depend on the authorizations; more authorizations never hide what fewer
//! showed; a quoted authorization always satisfies itself; a stored row decodes or is refused,
//! and what decodes encodes back to bytes that decode the same.
//!
//! Input: the authorization list (as the `peregrine-authorizations` payload), a 0xFF byte, the
//! expression; the whole input is also tried as a stored row.
#![no_main]

use engine::row::Row;
use engine::visibility::{self, Authorizations};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(row) = Row::decode(data) {
        let again = Row::decode(&row.encode()).expect("an encoded row decodes");
        assert_eq!(again, row, "row round trip");
    }
    let (list, expr) = match data.iter().position(|&b| b == 0xFF) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (&[][..], data),
    };
    let auths = visibility::parse_authorization_list(list).unwrap_or_default();
    let valid = visibility::validate(expr).is_ok();
    let seen = visibility::evaluate(expr, &auths);
    assert_eq!(seen.is_ok(), valid, "validity does not depend on authorizations");
    if let Ok(true) = seen {
        let mut more: Vec<String> = auths.iter().cloned().collect();
        more.push("extra".into());
        assert_eq!(
            visibility::evaluate(expr, &Authorizations::new(more)),
            Ok(true),
            "more authorizations never hide"
        );
    }
    if let Ok(text) = std::str::from_utf8(expr) {
        if visibility::check_authorization(text).is_ok() {
            let q = visibility::quote(text);
            let one = Authorizations::new([text.to_string()]);
            assert_eq!(visibility::evaluate(q.as_bytes(), &one), Ok(true), "{q}");
        }
    }
});
