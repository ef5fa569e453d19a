//! The one error type of the crate.

use std::fmt;

/// What kind of problem a [`ParseError`] reports; decides the protocol error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseErrorKind {
    /// The text is not CQL: maps to `SyntaxError` (0x2000).
    Syntax,
    /// The text is CQL but the statement is malformed in a way Cassandra reports as
    /// `InvalidRequest` (0x2200) while preparing it, e.g. column and value counts differ in an
    /// INSERT, or a CREATE TABLE without a PRIMARY KEY.
    Invalid,
    /// Cassandra's parser itself threw (not a recognition error): a `SyntaxError` (0x2000)
    /// that reads `Failed parsing statement: [<the query>] reason: <exception> <message>`,
    /// without a position; also a message its grammar's actions add (`frozen<> is only
    /// allowed on ...`), printed alone.
    Failed,
}

/// A statement that could not be parsed.
///
/// `Display` is shaped like Cassandra's `SyntaxException` message:
/// `line 1:9 mismatched input 'FRO' expecting K_FROM (SELECT * [FRO]...)`. The line is 1-based
/// and the column 0-based (in characters), as ANTLR reports them. Errors of kind
/// [`ParseErrorKind::Invalid`] print only the message, as Cassandra does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", Rendered(self))]
pub struct ParseError {
    pub kind: ParseErrorKind,
    /// 1-based line of the offending token.
    pub line: u32,
    /// 0-based column (in characters) of the offending token.
    pub column: u32,
    /// The offending token is the end of the text: ANTLR's EOF token has no position, so
    /// Cassandra prints `line 0:-1` (`line` and `column` still say where the text ended).
    pub at_end: bool,
    pub message: String,
}

impl ParseError {
    /// A syntax error at byte `offset` of `src`.
    pub(crate) fn syntax_at(src: &str, offset: usize, message: String) -> Self {
        let (line, column) = line_col(src, offset);
        ParseError {
            kind: ParseErrorKind::Syntax,
            line,
            column,
            at_end: offset >= src.len(),
            message,
        }
    }

    /// A lexer's syntax error at byte `offset` of `src`: Cassandra's lexer gives the end of
    /// the text a position (`line 1:28 mismatched character '<EOF>' expecting '"'`), unlike
    /// its parser's EOF token (`line 0:-1`).
    pub(crate) fn lexer_at(src: &str, offset: usize, message: String) -> Self {
        ParseError {
            at_end: false,
            ..Self::syntax_at(src, offset, message)
        }
    }

    /// An invalid-request error at byte `offset` of `src`.
    pub(crate) fn invalid_at(src: &str, offset: usize, message: String) -> Self {
        let (line, column) = line_col(src, offset);
        ParseError {
            kind: ParseErrorKind::Invalid,
            line,
            column,
            at_end: false,
            message,
        }
    }

    /// Cassandra's report of an exception thrown while parsing `src` (e.g. by `BigDecimal`
    /// on a float literal): `exception` is the Java class's simple name.
    pub(crate) fn failed(src: &str, exception: &str, message: &str) -> Self {
        ParseError {
            kind: ParseErrorKind::Failed,
            line: 0,
            column: 0,
            at_end: false,
            message: format!("Failed parsing statement: [{src}] reason: {exception} {message}"),
        }
    }

    /// A syntax error Cassandra's parser records in a grammar action (`addRecognitionError`):
    /// its message alone, without a position.
    pub(crate) fn unpositioned(message: String) -> Self {
        ParseError {
            kind: ParseErrorKind::Failed,
            line: 0,
            column: 0,
            at_end: false,
            message,
        }
    }

    /// True for errors that Cassandra reports as `SyntaxError`.
    pub fn is_syntax(&self) -> bool {
        matches!(self.kind, ParseErrorKind::Syntax | ParseErrorKind::Failed)
    }
}

/// The `Display` form: Cassandra prefixes syntax errors with the position only.
struct Rendered<'a>(&'a ParseError);

impl fmt::Display for Rendered<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = self.0;
        match e.kind {
            ParseErrorKind::Syntax if e.at_end => write!(f, "line 0:-1 {}", e.message),
            ParseErrorKind::Syntax => write!(f, "line {}:{} {}", e.line, e.column, e.message),
            ParseErrorKind::Invalid | ParseErrorKind::Failed => f.write_str(&e.message),
        }
    }
}

/// 1-based line and 0-based character column of byte `offset` in `src`.
fn line_col(src: &str, offset: usize) -> (u32, u32) {
    let mut offset = offset.min(src.len());
    while !src.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &src[..offset];
    let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count();
    (
        u32::try_from(line).unwrap_or(u32::MAX),
        u32::try_from(column).unwrap_or(u32::MAX),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column() {
        assert_eq!(line_col("SELECT * FRO t", 9), (1, 9));
        assert_eq!(line_col("a\nbc d", 5), (2, 3));
        assert_eq!(line_col("é x", 3), (1, 2));
        assert_eq!(line_col("abc", 99), (1, 3));
    }

    #[test]
    fn display_shapes() {
        let e = ParseError::syntax_at("SELECT", 0, "no viable alternative at input 'x'".into());
        assert_eq!(e.to_string(), "line 1:0 no viable alternative at input 'x'");
        let e = ParseError::invalid_at("x", 0, "Unmatched column names/values".into());
        assert_eq!(e.to_string(), "Unmatched column names/values");
        assert!(!e.is_syntax());
    }
}
