//! The encryption-at-rest key file (storage::encryption::parse_key_file): any text is either
//! keys or an error naming the line, never a panic; what parses has distinct ids in order.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(keys) = storage::encryption::parse_key_file(text) {
        assert!(!keys.is_empty());
        assert!(keys.windows(2).all(|w| w[0].0 < w[1].0));
    }
});
