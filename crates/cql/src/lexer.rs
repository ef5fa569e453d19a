//! Hand-written lexer: CQL text to a flat token list.
//!
//! Tokens hold only a kind and a byte span into the source; text is sliced (and, for names and
//! strings, unescaped) by the parser when it builds the AST, so lexing allocates one `Vec`.
//! Every word is an [`Tok::Ident`]: keywords are recognised by the parser by position, which is
//! how CQL lets most keywords double as names. Numbers never carry a sign: the parser folds a
//! `-` in front of a numeric literal into it, so `c = c -1` and `c = -1` both work.
//! Follows Cassandra's `Lexer.g`: `--`, `//` and `/* */` comments, `'..'` strings with `''`
//! escapes, `$$..$$` strings, `".."` names with `""` escapes, UUIDs, `0x` blobs, floats with
//! exponents and duration literals (`1h30m`, `P1DT2H`, `P2024-01-01T00:00:00`).

use crate::error::ParseError;

/// Kind of a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tok {
    /// `[A-Za-z][A-Za-z0-9_]*`, keyword or name.
    Ident,
    /// `"..."`; span includes the quotes.
    QuotedIdent,
    /// `'...'`; span includes the quotes.
    Str,
    /// `$$...$$`; span includes the dollars.
    DollarStr,
    Integer,
    Float,
    Uuid,
    /// `0x...`; span includes the `0x`.
    Hex,
    Duration,
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Comma,
    Semi,
    Dot,
    /// `..` (collection slices).
    Range,
    Colon,
    Star,
    Plus,
    Minus,
    Slash,
    Percent,
    Eq,
    Neq,
    Lt,
    Lte,
    Gt,
    Gte,
    PlusEq,
    MinusEq,
    QMark,
    Eof,
}

impl Tok {
    /// How ANTLR would name this token in an `expecting ...` message.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Tok::Ident => "IDENT",
            Tok::QuotedIdent => "QUOTED_NAME",
            Tok::Str | Tok::DollarStr => "STRING_LITERAL",
            Tok::Integer => "INTEGER",
            Tok::Float => "FLOAT",
            Tok::Uuid => "UUID",
            Tok::Hex => "HEXNUMBER",
            Tok::Duration => "DURATION",
            Tok::LParen => "'('",
            Tok::RParen => "')'",
            Tok::LBracket => "'['",
            Tok::RBracket => "']'",
            Tok::LBrace => "'{'",
            Tok::RBrace => "'}'",
            Tok::Comma => "','",
            Tok::Semi => "';'",
            Tok::Dot => "'.'",
            Tok::Range => "'..'",
            Tok::Colon => "':'",
            Tok::Star => "'*'",
            Tok::Plus => "'+'",
            Tok::Minus => "'-'",
            Tok::Slash => "'/'",
            Tok::Percent => "'%'",
            Tok::Eq => "'='",
            Tok::Neq => "'!='",
            Tok::Lt => "'<'",
            Tok::Lte => "'<='",
            Tok::Gt => "'>'",
            Tok::Gte => "'>='",
            Tok::PlusEq => "'+='",
            Tok::MinusEq => "'-='",
            Tok::QMark => "QMARK",
            Tok::Eof => "EOF",
        }
    }
}

/// A token: kind and byte span `start..end` in the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Token {
    pub kind: Tok,
    pub start: u32,
    pub end: u32,
}

/// Splits `src` into tokens; the last token is always [`Tok::Eof`].
pub(crate) fn tokenize(src: &str) -> Result<Vec<Token>, ParseError> {
    if u32::try_from(src.len()).is_err() {
        return Err(ParseError::syntax_at(
            src,
            0,
            "statement text longer than 4 GiB".to_string(),
        ));
    }
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len() / 3 + 2);
    let mut i = 0usize;
    while i < b.len() {
        let c = b[i];
        let start = i;
        if c == b'-' {
            if let Some(len) = negative_word(src, i + 1)? {
                // `-infinityx` is the literal and then `x`, as Cassandra reads it.
                let word = i + 1 + len;
                out.push(Token {
                    kind: Tok::Minus,
                    start: i as u32,
                    end: (i + 1) as u32,
                });
                out.push(Token {
                    kind: Tok::Ident,
                    start: (i + 1) as u32,
                    end: word as u32,
                });
                i = word;
                continue;
            }
        }
        let kind = match c {
            b' ' | b'\t' | b'\n' | b'\r' => {
                i += 1;
                continue;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                i = skip_line(b, i);
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                i = skip_line(b, i);
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                match find(b, i + 2, b"*/") {
                    Some(end) => i = end + 2,
                    None => {
                        return Err(ParseError::lexer_at(
                            src,
                            b.len(),
                            "mismatched character '<EOF>' expecting '*'".to_string(),
                        ))
                    }
                }
                continue;
            }
            b'\'' => {
                i = quoted_end(src, i, b'\'')?;
                Tok::Str
            }
            b'"' => {
                i = quoted_end(src, i, b'"')?;
                Tok::QuotedIdent
            }
            b'$' if b.get(i + 1) == Some(&b'$') => match find(b, i + 2, b"$$") {
                Some(end) => {
                    i = end + 2;
                    Tok::DollarStr
                }
                None => return Err(unclosed_dollar_string(src, i + 2)),
            },
            // Only a `$$` string starts with `$`: Cassandra's lexer wants the second `$`.
            b'$' => return Err(dollar_mismatch(src, i + 1)),
            b'0'..=b'9' => {
                let (kind, end) = lex_number(b, i);
                i = end;
                kind
            }
            b'a'..=b'z' | b'A'..=b'Z' => {
                let ident_end = ident_end(b, i);
                if let Some(end) = uuid_end(b, i) {
                    i = end;
                    Tok::Uuid
                } else if let Some(end) = iso_duration_end(b, i).filter(|&e| e >= ident_end) {
                    i = end;
                    Tok::Duration
                } else {
                    i = ident_end;
                    Tok::Ident
                }
            }
            _ => {
                let (kind, len) = match (c, b.get(i + 1).copied()) {
                    (b'(', _) => (Tok::LParen, 1),
                    (b')', _) => (Tok::RParen, 1),
                    (b'[', _) => (Tok::LBracket, 1),
                    (b']', _) => (Tok::RBracket, 1),
                    (b'{', _) => (Tok::LBrace, 1),
                    (b'}', _) => (Tok::RBrace, 1),
                    (b',', _) => (Tok::Comma, 1),
                    (b';', _) => (Tok::Semi, 1),
                    (b'.', Some(b'.')) => (Tok::Range, 2),
                    (b'.', _) => (Tok::Dot, 1),
                    (b':', _) => (Tok::Colon, 1),
                    (b'*', _) => (Tok::Star, 1),
                    (b'+', Some(b'=')) => (Tok::PlusEq, 2),
                    (b'+', _) => (Tok::Plus, 1),
                    (b'-', Some(b'=')) => (Tok::MinusEq, 2),
                    (b'-', _) => (Tok::Minus, 1),
                    (b'/', _) => (Tok::Slash, 1),
                    (b'%', _) => (Tok::Percent, 1),
                    (b'=', _) => (Tok::Eq, 1),
                    (b'!', Some(b'=')) => (Tok::Neq, 2),
                    // Cassandra's lexer wants the `=` of `!=` next.
                    (b'!', _) => {
                        let next = src[i + 1..].chars().next();
                        let shown = next.map_or("<EOF>".to_string(), |c| c.to_string());
                        return Err(ParseError::lexer_at(
                            src,
                            i + 1,
                            format!("mismatched character '{shown}' expecting '='"),
                        ));
                    }
                    (b'<', Some(b'=')) => (Tok::Lte, 2),
                    (b'<', _) => (Tok::Lt, 1),
                    (b'>', Some(b'=')) => (Tok::Gte, 2),
                    (b'>', _) => (Tok::Gt, 1),
                    (b'?', _) => (Tok::QMark, 1),
                    _ => {
                        let ch = src[i..].chars().next().unwrap_or('?');
                        return Err(ParseError::syntax_at(
                            src,
                            i,
                            format!("no viable alternative at character '{ch}'"),
                        ));
                    }
                };
                i += len;
                kind
            }
        };
        out.push(Token {
            kind,
            start: start as u32,
            end: i as u32,
        });
    }
    out.push(Token {
        kind: Tok::Eof,
        start: b.len() as u32,
        end: b.len() as u32,
    });
    Ok(out)
}

/// Index just past the end of the line starting at `i` (comments).
fn skip_line(b: &[u8], i: usize) -> usize {
    match b[i..].iter().position(|&c| c == b'\n' || c == b'\r') {
        Some(p) => i + p + 1,
        None => b.len(),
    }
}

/// Position of the first occurrence of `pat` at or after `from`.
fn find(b: &[u8], from: usize, pat: &[u8]) -> Option<usize> {
    if from > b.len() {
        return None;
    }
    b[from..]
        .windows(pat.len())
        .position(|w| w == pat)
        .map(|p| from + p)
}

/// End of a quoted token starting at `i` with `q`, where `qq` escapes one `q`.
/// Cassandra's lexer error for a `$$` string opened before byte `body` and never closed. Its
/// rule reads the body while two characters are left and they are not `$$`, so it stops at
/// the last character of the text and then wants `$$` there: a last character other than `$`
/// is the mismatch (`line 1:20 mismatched character 't' expecting '$'` for
/// `SELECT $$abc FROM x.t`); after a last `$` (or with no body at all) it is the end of text.
fn unclosed_dollar_string(src: &str, body: usize) -> ParseError {
    match src[body..].char_indices().last() {
        Some((at, c)) if c != '$' => dollar_mismatch(src, body + at),
        _ => dollar_mismatch(src, src.len()),
    }
}

/// `mismatched character 'x' expecting '$'` for the character at byte `at` of `src`.
fn dollar_mismatch(src: &str, at: usize) -> ParseError {
    char_mismatch(src, at, "'$'")
}

/// Cassandra's lexer reads a `-` right before an `i` or `n` (either case) as the start of
/// `-Infinity` or `-NaN`, a float literal, and fails at the first character that does not
/// go on spelling it, wanting either case of the next letter ("mismatched character ' '
/// expecting set null" for `SELECT -i FROM t`); a whole word is the literal, whatever
/// follows. `at`: the byte after the `-`. The word's length when it is there; None when no
/// such word starts.
fn negative_word(src: &str, at: usize) -> Result<Option<usize>, ParseError> {
    let b = src.as_bytes();
    let word: &[u8] = match b.get(at) {
        Some(b'i' | b'I') => b"infinity",
        Some(b'n' | b'N') => b"nan",
        _ => return Ok(None),
    };
    let matched = word
        .iter()
        .zip(&b[at..])
        .take_while(|(w, c)| c.eq_ignore_ascii_case(w))
        .count();
    if matched < word.len() {
        return Err(char_mismatch(src, at + matched, "set null"));
    }
    Ok(Some(word.len()))
}

/// `mismatched character 'x' expecting {expecting}` for the character at byte `at` of `src`
/// (the end of the text is `<EOF>`), named as ANTLR names a character.
fn char_mismatch(src: &str, at: usize, expecting: &str) -> ParseError {
    let shown = match src[at..].chars().next() {
        None => "<EOF>".to_string(),
        Some('\n') => "\\n".to_string(),
        Some('\r') => "\\r".to_string(),
        Some('\t') => "\\t".to_string(),
        Some(c) => c.to_string(),
    };
    ParseError::lexer_at(
        src,
        at,
        format!("mismatched character '{shown}' expecting {expecting}"),
    )
}

fn quoted_end(src: &str, i: usize, q: u8) -> Result<usize, ParseError> {
    let b = src.as_bytes();
    let mut j = i + 1;
    loop {
        match b[j..].iter().position(|&c| c == q) {
            None => {
                return Err(ParseError::lexer_at(
                    src,
                    b.len(),
                    format!("mismatched character '<EOF>' expecting '{}'", q as char),
                ))
            }
            Some(p) => {
                j += p + 1;
                if b.get(j) == Some(&q) {
                    j += 1;
                } else {
                    return Ok(j);
                }
            }
        }
    }
}

fn is_ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn ident_end(b: &[u8], i: usize) -> usize {
    let mut j = i + 1;
    while j < b.len() && is_ident_byte(b[j]) {
        j += 1;
    }
    j
}

fn digits_end(b: &[u8], i: usize) -> usize {
    let mut j = i;
    while j < b.len() && b[j].is_ascii_digit() {
        j += 1;
    }
    j
}

/// `8-4-4-4-12` hex digits at `i`, not followed by a word character.
fn uuid_end(b: &[u8], i: usize) -> Option<usize> {
    const GROUPS: [usize; 5] = [8, 4, 4, 4, 12];
    let mut j = i;
    for (n, len) in GROUPS.iter().enumerate() {
        if n > 0 {
            if b.get(j) != Some(&b'-') {
                return None;
            }
            j += 1;
        }
        let group = b.get(j..j + len)?;
        if !group.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        j += len;
    }
    if b.get(j).is_some_and(|&c| is_ident_byte(c)) {
        return None;
    }
    Some(j)
}

/// A token starting with a digit: UUID, hex blob, duration, float or integer.
fn lex_number(b: &[u8], i: usize) -> (Tok, usize) {
    if let Some(end) = uuid_end(b, i) {
        return (Tok::Uuid, end);
    }
    if b[i] == b'0' && matches!(b.get(i + 1), Some(b'x' | b'X')) {
        let mut j = i + 2;
        while j < b.len() && b[j].is_ascii_hexdigit() {
            j += 1;
        }
        return (Tok::Hex, j);
    }
    let int_end = digits_end(b, i);
    if let Some(end) = unit_duration_end(b, i) {
        return (Tok::Duration, end);
    }
    let mut j = int_end;
    let mut float = false;
    // `1..3` is INTEGER RANGE INTEGER, not a float.
    if b.get(j) == Some(&b'.') && b.get(j + 1) != Some(&b'.') {
        float = true;
        j = digits_end(b, j + 1);
    }
    if matches!(b.get(j), Some(b'e' | b'E')) {
        let mut k = j + 1;
        if matches!(b.get(k), Some(b'+' | b'-')) {
            k += 1;
        }
        let e = digits_end(b, k);
        if e > k {
            float = true;
            j = e;
        }
    }
    (if float { Tok::Float } else { Tok::Integer }, j)
}

/// Length of a duration unit at `j` (`y mo w d h m s ms us µs ns`, any case), if any.
fn duration_unit_len(b: &[u8], j: usize) -> Option<usize> {
    let lower = |k: usize| b.get(k).map(u8::to_ascii_lowercase);
    match (lower(j), lower(j + 1)) {
        (Some(b'm'), Some(b'o' | b's')) => Some(2),
        (Some(b'u' | b'n'), Some(b's')) => Some(2),
        (Some(0xC2), _) if b.get(j + 1) == Some(&0xB5) && lower(j + 2) == Some(b's') => Some(3),
        (Some(b'y' | b'w' | b'd' | b'h' | b'm' | b's'), _) => Some(1),
        _ => None,
    }
}

/// `(DIGIT+ UNIT)+` at `i`, e.g. `1h30m`, `12ms`; `None` if the first unit is missing.
fn unit_duration_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i;
    let mut any = false;
    loop {
        let d = digits_end(b, j);
        if d == j {
            break;
        }
        match duration_unit_len(b, d) {
            Some(len) => {
                j = d + len;
                any = true;
            }
            None => break,
        }
    }
    if !any {
        return None;
    }
    Some(j)
}

/// ISO 8601 durations starting with `P`: `P1Y2M3DT4H5M6S`, `PT1H`, `P2W`,
/// `P0001-02-03T04:05:06`. Designators are upper case, as in Cassandra's lexer.
fn iso_duration_end(b: &[u8], i: usize) -> Option<usize> {
    if b[i] != b'P' {
        return None;
    }
    // Alternative format: PYYYY-MM-DDThh:mm:ss.
    let alt = b"P0000-00-00T00:00:00";
    if b.len() >= i + alt.len()
        && alt.iter().zip(&b[i..i + alt.len()]).all(|(&p, &c)| {
            if p == b'0' {
                c.is_ascii_digit()
            } else {
                p == c
            }
        })
    {
        return Some(i + alt.len());
    }
    let mut j = i + 1;
    let mut any = false;
    // Date part: DIGIT+ [YMDW], repeated.
    loop {
        let d = digits_end(b, j);
        if d == j || !matches!(b.get(d), Some(b'Y' | b'M' | b'D' | b'W')) {
            break;
        }
        j = d + 1;
        any = true;
    }
    if b.get(j) == Some(&b'T') {
        let mut k = j + 1;
        let mut any_time = false;
        loop {
            let d = digits_end(b, k);
            if d == k || !matches!(b.get(d), Some(b'H' | b'M' | b'S')) {
                break;
            }
            k = d + 1;
            any_time = true;
        }
        if any_time {
            j = k;
            any = true;
        }
    }
    any.then_some(j)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(s: &str) -> Vec<(Tok, &str)> {
        tokenize(s)
            .unwrap()
            .into_iter()
            .map(|t| (t.kind, &s[t.start as usize..t.end as usize]))
            .collect()
    }

    #[test]
    fn basic_tokens() {
        assert_eq!(
            kinds("SELECT * FROM t WHERE a>=1;"),
            vec![
                (Tok::Ident, "SELECT"),
                (Tok::Star, "*"),
                (Tok::Ident, "FROM"),
                (Tok::Ident, "t"),
                (Tok::Ident, "WHERE"),
                (Tok::Ident, "a"),
                (Tok::Gte, ">="),
                (Tok::Integer, "1"),
                (Tok::Semi, ";"),
                (Tok::Eof, ""),
            ]
        );
    }

    #[test]
    fn literals() {
        let k =
            kinds("'it''s' $$a'b$$ \"Q\"\"x\" 1.5e-3 3e4 7 0xCAFE 1h30m P1DT2H PT1H P2W 1ms 2µs");
        let got: Vec<Tok> = k.iter().map(|x| x.0).collect();
        assert_eq!(
            got,
            vec![
                Tok::Str,
                Tok::DollarStr,
                Tok::QuotedIdent,
                Tok::Float,
                Tok::Float,
                Tok::Integer,
                Tok::Hex,
                Tok::Duration,
                Tok::Duration,
                Tok::Duration,
                Tok::Duration,
                Tok::Duration,
                Tok::Duration,
                Tok::Eof
            ]
        );
        assert_eq!(k[0].1, "'it''s'");
        assert_eq!(k[12].1, "2µs");
    }

    #[test]
    fn uuids_beat_numbers_and_idents() {
        let k = kinds("550e8400-e29b-41d4-a716-446655440000 a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
        assert_eq!(k[0].0, Tok::Uuid);
        assert_eq!(k[1].0, Tok::Uuid);
    }

    #[test]
    fn p_words_stay_identifiers() {
        assert_eq!(kinds("PT1Habc")[0].0, Tok::Ident);
        assert_eq!(kinds("peer")[0].0, Tok::Ident);
        assert_eq!(kinds("P")[0].0, Tok::Ident);
        assert_eq!(kinds("P2024-01-02T03:04:05")[0].0, Tok::Duration);
    }

    #[test]
    fn comments_and_ranges() {
        let k = kinds("a -- x\n/* y */ b // z\n1..2 - 3");
        let got: Vec<Tok> = k.iter().map(|x| x.0).collect();
        assert_eq!(
            got,
            vec![
                Tok::Ident,
                Tok::Ident,
                Tok::Integer,
                Tok::Range,
                Tok::Integer,
                Tok::Minus,
                Tok::Integer,
                Tok::Eof
            ]
        );
    }

    #[test]
    fn lexer_errors() {
        assert!(tokenize("'open").is_err());
        assert!(tokenize("\"open").is_err());
        assert!(tokenize("/* open").is_err());
        assert!(tokenize("$$ open").is_err());
        // An unclosed `$$` string fails at the last character, as Cassandra's lexer does.
        let e = |src: &str| tokenize(src).unwrap_err().to_string();
        assert_eq!(
            e("SELECT $$abc FROM x.t"),
            "line 1:20 mismatched character 't' expecting '$'"
        );
        assert_eq!(
            e("SELECT $$ab\nc FROM x.t"),
            "line 2:9 mismatched character 't' expecting '$'"
        );
        assert_eq!(
            e("SELECT $$abc $"),
            "line 1:14 mismatched character '<EOF>' expecting '$'"
        );
        assert_eq!(
            e("SELECT $$"),
            "line 1:9 mismatched character '<EOF>' expecting '$'"
        );
        assert_eq!(
            e("SELECT $ FROM t"),
            "line 1:8 mismatched character ' ' expecting '$'"
        );
        // A `-` before `i` or `n` must spell `-infinity` or `-nan`, as in Cassandra's lexer.
        assert_eq!(
            e("SELECT -i FROM t"),
            "line 1:9 mismatched character ' ' expecting set null"
        );
        assert_eq!(
            e("SELECT k-NaX FROM t"),
            "line 1:11 mismatched character 'X' expecting set null"
        );
        assert_eq!(
            e("SELECT -in"),
            "line 1:10 mismatched character '<EOF>' expecting set null"
        );
        assert!(tokenize("SELECT -Infinity, -nan, - i, -1, --i").is_ok());
        let words: Vec<Tok> = tokenize("-nanx").unwrap().iter().map(|t| t.kind).collect();
        assert_eq!(words, [Tok::Minus, Tok::Ident, Tok::Ident, Tok::Eof]);
        assert!(tokenize("a @ b").is_err());
        assert!(tokenize("é").is_err());
        let e = tokenize("SELECT @").unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 1:7 no viable alternative at character '@'"
        );
    }
}
