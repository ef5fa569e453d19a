//! Tokens pinned by a real Cassandra 5.0.9 (`tests/vectors/murmur3_tokens.json`, made by
//! `tests/vectors/gen_murmur3.py`): every vector's key bytes must hash to Cassandra's token.

#[test]
fn tokens_match_real_cassandra() {
    // The manifest dir is read at run time: a test binary reused from a shared target dir
    // built in another checkout would otherwise look in that checkout.
    let dir =
        std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").into());
    let path = format!("{dir}/../../tests/vectors/murmur3_tokens.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("vector file {path}: {e}"));
    let doc: serde_json::Value = serde_json::from_str(&text).expect("json");
    let vectors = doc["vectors"].as_array().expect("vectors");
    assert!(
        vectors.len() >= 200,
        "expected the full vector set, got {}",
        vectors.len()
    );
    let mut checked = 0;
    for v in vectors {
        let hex = v["key_hex"].as_str().expect("key_hex");
        let key: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
            .collect();
        let want: i64 = match &v["token"] {
            serde_json::Value::Number(n) => n.as_i64().expect("i64 token"),
            serde_json::Value::String(s) => s.parse().expect("token text"),
            other => panic!("token of unexpected shape {other}"),
        };
        assert_eq!(
            engine::token::token(&key),
            want,
            "token of key {hex} ({})",
            v
        );
        checked += 1;
    }
    assert_eq!(checked, vectors.len());
}
