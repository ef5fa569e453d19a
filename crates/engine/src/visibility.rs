//! Cell visibility labels: Accumulo's access expressions and the authorizations that satisfy
//! them (docs/visibility.md).
//!
//! An expression is the UTF-8 text of the Accumulo Access specification (apache/accumulo-access
//! `SPECIFICATION.md`): access tokens joined by `&` (and) or `|` (or), parentheses to mix the
//! two (`A|B&C` is invalid, `A|(B&C)` is not), tokens outside `[A-Za-z0-9_\-.:/]` quoted in
//! `"..."` with `\"` and `\\` escaped, and the empty expression visible to everyone.
//!
//! **What it is not:** no storage and no CQL here. The cells carry the expression's bytes
//! (`row.rs`), the read path hides what [`Authorizations::can_see`] refuses (`read.rs`), and a
//! role's authorizations are role data (`auth`).
//!
//! # Invariants
//! - Parsing never panics and never recurses deeper than [`MAX_DEPTH`] parentheses, nor reads
//!   an expression longer than [`MAX_EXPRESSION_BYTES`]: both are refused as invalid.
//! - Evaluation reads the stored bytes directly, allocating only for an escaped quoted token,
//!   so a labelled cell costs a scan of its label and no parse tree.
//! - A stored label was validated when written; a stored label that no longer parses (damage)
//!   is treated as visible to nobody, never to everybody.

use std::collections::BTreeSet;

/// Longest expression accepted (bytes): a label is stored with every cell it labels.
pub const MAX_EXPRESSION_BYTES: usize = 8192;
/// Deepest nesting of parentheses accepted (the parser recurses once per level).
pub const MAX_DEPTH: usize = 64;
/// Longest single authorization accepted (bytes).
pub const MAX_AUTHORIZATION_BYTES: usize = 1024;

/// Why an expression or an authorization list is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VisibilityError {
    #[error("invalid visibility expression '{expr}': {reason} at character {at}")]
    Syntax {
        expr: String,
        reason: &'static str,
        at: usize,
    },
    #[error(
        "visibility expression of {0} bytes is longer than the {MAX_EXPRESSION_BYTES} allowed"
    )]
    TooLong(usize),
    #[error("invalid authorization '{auth}': {reason}")]
    Authorization { auth: String, reason: &'static str },
}

/// Whether `b` may appear in an unquoted access token.
fn bare_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':' | b'/')
}

/// A set of authorizations (unquoted, unescaped), as a role holds them or a request reads with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Authorizations(BTreeSet<String>);

impl Authorizations {
    pub fn new(auths: impl IntoIterator<Item = String>) -> Authorizations {
        Authorizations(auths.into_iter().collect())
    }

    pub fn contains(&self, auth: &str) -> bool {
        self.0.contains(auth)
    }

    pub fn iter(&self) -> impl Iterator<Item = &String> {
        self.0.iter()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether data labelled `label` (a stored, validated expression) may be seen. A label
    /// that does not parse is seen by nobody.
    pub fn can_see(&self, label: &[u8]) -> bool {
        evaluate(label, self).unwrap_or(false)
    }

    /// `self` narrowed to `asked`; every asked authorization must be held (never widened).
    pub fn narrow(&self, asked: &Authorizations) -> Result<Authorizations, String> {
        if let Some(missing) = asked.0.iter().find(|a| !self.0.contains(*a)) {
            return Err(missing.clone());
        }
        Ok(asked.clone())
    }
}

/// Checks that `expr` is a valid access expression.
pub fn validate(expr: &[u8]) -> Result<(), VisibilityError> {
    evaluate(expr, &Authorizations::default()).map(|_| ())
}

/// Whether `auths` satisfy `expr`; an error when `expr` is not a valid access expression.
pub fn evaluate(expr: &[u8], auths: &Authorizations) -> Result<bool, VisibilityError> {
    if expr.len() > MAX_EXPRESSION_BYTES {
        return Err(VisibilityError::TooLong(expr.len()));
    }
    if expr.is_empty() {
        return Ok(true);
    }
    let mut p = Parser {
        src: expr,
        pos: 0,
        auths,
        depth: 0,
    };
    let v = p.expression()?;
    if p.pos != expr.len() {
        return Err(p.error(if expr[p.pos] == b')' {
            "unbalanced ')'"
        } else {
            "expected '&', '|' or the end"
        }));
    }
    Ok(v)
}

struct Parser<'a> {
    src: &'a [u8],
    pos: usize,
    auths: &'a Authorizations,
    depth: usize,
}

impl Parser<'_> {
    fn error(&self, reason: &'static str) -> VisibilityError {
        VisibilityError::Syntax {
            expr: String::from_utf8_lossy(self.src).into_owned(),
            reason,
            at: self.pos,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.src.get(self.pos).copied()
    }

    /// operand (('&' operand)* | ('|' operand)*): one operator per level, as the spec's
    /// grammar has it.
    fn expression(&mut self) -> Result<bool, VisibilityError> {
        let mut value = self.operand()?;
        let op = match self.peek() {
            Some(c @ (b'&' | b'|')) => c,
            _ => return Ok(value),
        };
        while let Some(c @ (b'&' | b'|')) = self.peek() {
            if c != op {
                return Err(
                    self.error("'&' and '|' cannot be mixed without parentheses (write A|(B&C))")
                );
            }
            self.pos += 1;
            let next = self.operand()?;
            value = if op == b'&' {
                value && next
            } else {
                value || next
            };
        }
        Ok(value)
    }

    fn operand(&mut self) -> Result<bool, VisibilityError> {
        match self.peek() {
            Some(b'(') => {
                if self.depth >= MAX_DEPTH {
                    return Err(self.error("parentheses nested too deeply"));
                }
                self.depth += 1;
                self.pos += 1;
                let v = self.expression()?;
                if self.peek() != Some(b')') {
                    return Err(self.error("expected ')'"));
                }
                self.pos += 1;
                self.depth -= 1;
                Ok(v)
            }
            Some(b'"') => self.quoted(),
            Some(c) if bare_token_byte(c) => {
                let start = self.pos;
                while self.peek().is_some_and(bare_token_byte) {
                    self.pos += 1;
                }
                // Bare tokens are ASCII, so this is always valid UTF-8.
                let token = std::str::from_utf8(&self.src[start..self.pos]).unwrap_or("");
                Ok(self.auths.contains(token))
            }
            Some(_) => Err(self.error("expected an access token or '('")),
            None => Err(self.error("expected an access token or '(' but the expression ended")),
        }
    }

    /// A quoted token: `"`, one or more characters with `\"` and `\\` escaped, `"`.
    fn quoted(&mut self) -> Result<bool, VisibilityError> {
        self.pos += 1;
        let start = self.pos;
        let mut escaped = false;
        loop {
            match self.peek() {
                None => return Err(self.error("unterminated quoted token")),
                Some(b'"') => break,
                Some(b'\\') => {
                    escaped = true;
                    match self.src.get(self.pos + 1) {
                        Some(b'"' | b'\\') => self.pos += 2,
                        _ => return Err(self.error("only \\\" and \\\\ may be escaped")),
                    }
                }
                Some(_) => self.pos += 1,
            }
        }
        let raw = &self.src[start..self.pos];
        if raw.is_empty() {
            return Err(self.error("empty quoted token"));
        }
        self.pos += 1;
        let Ok(text) = std::str::from_utf8(raw) else {
            return Err(self.error("quoted token is not UTF-8"));
        };
        if !escaped {
            return Ok(self.auths.contains(text));
        }
        let mut out = String::with_capacity(text.len());
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            out.push(if c == '\\' {
                chars.next().unwrap_or(c)
            } else {
                c
            });
        }
        Ok(self.auths.contains(&out))
    }
}

/// Checks one authorization a role is granted or a request names: non-empty, bounded, and
/// no control characters (the specification asks implementations to limit them to readable
/// text).
pub fn check_authorization(auth: &str) -> Result<(), VisibilityError> {
    let bad = |reason| {
        Err(VisibilityError::Authorization {
            auth: auth.chars().take(64).collect(),
            reason,
        })
    };
    if auth.is_empty() {
        return bad("an authorization cannot be empty");
    }
    if auth.len() > MAX_AUTHORIZATION_BYTES {
        return bad("longer than 1024 bytes");
    }
    if auth.chars().any(char::is_control) {
        return bad("control characters are not allowed");
    }
    Ok(())
}

/// An authorization as an expression token: bare when it can be, else quoted and escaped.
pub fn quote(auth: &str) -> String {
    if !auth.is_empty() && auth.bytes().all(bare_token_byte) {
        return auth.to_string();
    }
    let mut out = String::with_capacity(auth.len() + 2);
    out.push('"');
    for c in auth.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// Parses a comma-separated list of authorizations (the `peregrine-authorizations` payload):
/// each a bare token or a quoted one as in expressions; blanks around items are ignored and
/// an empty list is the empty set.
pub fn parse_authorization_list(text: &[u8]) -> Result<Authorizations, VisibilityError> {
    let bad = |reason| VisibilityError::Authorization {
        auth: String::from_utf8_lossy(&text[..text.len().min(64)]).into_owned(),
        reason,
    };
    let text = std::str::from_utf8(text).map_err(|_| bad("the list is not UTF-8"))?;
    let mut out = BTreeSet::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let (item, after) = if let Some(q) = rest.strip_prefix('"') {
            let mut item = String::new();
            let mut chars = q.char_indices();
            let mut end = None;
            while let Some((i, c)) = chars.next() {
                match c {
                    '"' => {
                        end = Some(i + 1);
                        break;
                    }
                    '\\' => match chars.next() {
                        Some((_, e @ ('"' | '\\'))) => item.push(e),
                        _ => return Err(bad("only \\\" and \\\\ may be escaped")),
                    },
                    c => item.push(c),
                }
            }
            let end = end.ok_or_else(|| bad("unterminated quoted authorization"))?;
            (item, q[end..].trim_start())
        } else {
            let end = rest.find(',').unwrap_or(rest.len());
            let item = rest[..end].trim();
            if !item.bytes().all(bare_token_byte) {
                return Err(bad(
                    "authorizations outside [A-Za-z0-9_-.:/] must be quoted",
                ));
            }
            (item.to_string(), &rest[end..])
        };
        check_authorization(&item)?;
        out.insert(item);
        rest = match after.strip_prefix(',') {
            Some(r) => r.trim_start(),
            None if after.is_empty() => after,
            None => return Err(bad("expected ',' between authorizations")),
        };
        if rest.is_empty() && after.starts_with(',') {
            return Err(bad("a trailing ',' names no authorization"));
        }
    }
    Ok(Authorizations(out))
}

#[cfg(test)]
#[path = "visibility_tests.rs"]
mod tests;
