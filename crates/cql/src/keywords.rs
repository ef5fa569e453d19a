//! Reserved words and identifier quoting.
//!
//! Cassandra's grammar has many keywords, but only the *reserved* ones (its
//! `reserved_keywords.txt`) can never be used as an unquoted identifier; every other keyword
//! (`key`, `ttl`, `type`, `text`, `json`, ...) is also a valid column, table or keyspace name.
//! The parser therefore lexes every word as an identifier and decides by position.

use std::borrow::Cow;

/// Longest reserved keyword (`COLUMNFAMILY`, `MATERIALIZED`, `NORECURSIVE`).
const MAX_RESERVED_LEN: usize = 12;

/// True if `word` (any case) is a reserved CQL keyword (Cassandra 5.0's
/// `reserved_keywords.txt`) and so cannot be an unquoted name.
///
/// Called for nearly every token, so it upper-cases into a stack buffer and lets the compiler
/// build the comparison tree instead of scanning a list.
pub fn is_reserved(word: &str) -> bool {
    let b = word.as_bytes();
    if b.len() > MAX_RESERVED_LEN || b.len() < 2 {
        return false;
    }
    let mut buf = [0u8; MAX_RESERVED_LEN];
    for (d, s) in buf.iter_mut().zip(b) {
        *d = s.to_ascii_uppercase();
    }
    matches!(
        &buf[..b.len()],
        b"ADD"
            | b"ALLOW"
            | b"ALTER"
            | b"AND"
            | b"APPLY"
            | b"ASC"
            | b"AUTHORIZE"
            | b"BATCH"
            | b"BEGIN"
            | b"BY"
            | b"COLUMNFAMILY"
            | b"CREATE"
            | b"DELETE"
            | b"DESC"
            | b"DESCRIBE"
            | b"DROP"
            | b"ENTRIES"
            | b"EXECUTE"
            | b"FROM"
            | b"FULL"
            | b"GRANT"
            | b"IF"
            | b"IN"
            | b"INDEX"
            | b"INFINITY"
            | b"INSERT"
            | b"INTO"
            | b"IS"
            | b"KEYSPACE"
            | b"LIMIT"
            | b"MATERIALIZED"
            | b"MODIFY"
            | b"NAN"
            | b"NORECURSIVE"
            | b"NOT"
            | b"NULL"
            | b"OF"
            | b"ON"
            | b"OR"
            | b"ORDER"
            | b"PRIMARY"
            | b"RENAME"
            | b"REPLACE"
            | b"REVOKE"
            | b"SCHEMA"
            | b"SELECT"
            | b"SET"
            | b"TABLE"
            | b"TO"
            | b"TOKEN"
            | b"TRUNCATE"
            | b"UNLOGGED"
            | b"UPDATE"
            | b"USE"
            | b"USING"
            | b"VIEW"
            | b"WHERE"
            | b"WITH"
    )
}

/// Quotes `name` for CQL output when it would not read back as the same identifier unquoted:
/// anything but `[a-z][a-z0-9_]*`, or a reserved keyword. Embedded `"` are doubled.
pub fn quote_identifier(name: &str) -> Cow<'_, str> {
    let b = name.as_bytes();
    let plain = !b.is_empty()
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_')
        && !is_reserved(name);
    if plain {
        Cow::Borrowed(name)
    } else {
        Cow::Owned(format!("\"{}\"", name.replace('"', "\"\"")))
    }
}

/// Quotes `s` as a CQL string literal, doubling embedded `'`.
pub fn quote_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        if c == '\'' {
            out.push('\'');
        }
        out.push(c);
    }
    out.push('\'');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_is_case_insensitive() {
        assert!(is_reserved("select"));
        assert!(is_reserved("SeLeCt"));
        assert!(is_reserved("columnfamily"));
        assert!(!is_reserved("key"));
        assert!(!is_reserved("ttl"));
        assert!(!is_reserved("text"));
    }

    #[test]
    fn quoting() {
        assert_eq!(quote_identifier("abc_1"), "abc_1");
        assert_eq!(quote_identifier("MixedCase"), "\"MixedCase\"");
        assert_eq!(quote_identifier("select"), "\"select\"");
        assert_eq!(quote_identifier("a\"b"), "\"a\"\"b\"");
        assert_eq!(quote_identifier("1a"), "\"1a\"");
        assert_eq!(quote_identifier(""), "\"\"");
        assert_eq!(quote_string("it's"), "'it''s'");
    }
}
