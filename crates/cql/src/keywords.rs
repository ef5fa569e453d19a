//! Reserved words and identifier quoting.
//!
//! Cassandra's grammar has many keywords, but only the *reserved* ones (its
//! `reserved_keywords.txt`) can never be used as an unquoted identifier; every other keyword
//! (`key`, `ttl`, `type`, `text`, `json`, ...) is also a valid column, table or keyspace name.
//! The parser therefore lexes every word as an identifier and decides by position.

use std::borrow::Cow;

/// Reserved keywords of CQL as of Cassandra 5.0 (upper case).
const RESERVED: &[&str] = &[
    "ADD",
    "ALLOW",
    "ALTER",
    "AND",
    "APPLY",
    "ASC",
    "AUTHORIZE",
    "BATCH",
    "BEGIN",
    "BY",
    "COLUMNFAMILY",
    "CREATE",
    "DELETE",
    "DESC",
    "DESCRIBE",
    "DROP",
    "ENTRIES",
    "EXECUTE",
    "FROM",
    "FULL",
    "GRANT",
    "IF",
    "IN",
    "INDEX",
    "INFINITY",
    "INSERT",
    "INTO",
    "IS",
    "KEYSPACE",
    "LIMIT",
    "MATERIALIZED",
    "MODIFY",
    "NAN",
    "NORECURSIVE",
    "NOT",
    "NULL",
    "OF",
    "ON",
    "OR",
    "ORDER",
    "PRIMARY",
    "RENAME",
    "REPLACE",
    "REVOKE",
    "SCHEMA",
    "SELECT",
    "SET",
    "TABLE",
    "TO",
    "TOKEN",
    "TRUNCATE",
    "UNLOGGED",
    "UPDATE",
    "USE",
    "USING",
    "VIEW",
    "WHERE",
    "WITH",
];

/// Longest reserved keyword, to reject long words without comparing.
const MAX_RESERVED_LEN: usize = 12;

/// True if `word` (any case) is a reserved CQL keyword and so cannot be an unquoted name.
pub fn is_reserved(word: &str) -> bool {
    if word.len() > MAX_RESERVED_LEN || word.len() < 2 {
        return false;
    }
    RESERVED.iter().any(|k| k.eq_ignore_ascii_case(word))
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
