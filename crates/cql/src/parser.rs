//! Recursive-descent parser over the lexer's tokens, following Cassandra's `Parser.g`.
//!
//! Keywords are matched case-insensitively against [`Tok::Ident`] tokens at the positions the
//! grammar expects them; names are any identifier that is not reserved, or a quoted name.
//! Nesting (collections, tuples, function arguments, types, parenthesised relations) goes
//! through [`Parser::enter`], which caps recursion at [`MAX_DEPTH`] so hostile input cannot
//! overflow the stack.

use crate::ast::*;
use crate::error::ParseError;
use crate::keywords::is_reserved;
use crate::lexer::{tokenize, Tok, Token};

mod ann;
mod auth;
mod describe;
mod modify;
mod schema;
mod select;
mod service_level;
mod term;
mod view;
mod visibility;

/// Deepest nesting of terms, types, selectors and relations accepted.
pub(crate) const MAX_DEPTH: u32 = 32;

/// Most bind markers one statement may hold (the protocol counts them in a `[short]`).
const MAX_BIND_MARKERS: usize = u16::MAX as usize;

/// The words that may follow an unqualified table name somewhere in Cassandra 5.0.9's grammar
/// (with `(`, `;` and the end), read off its answers to `SELECT * FROM t <word>`: after any
/// other token its choice between `ks.t` and `t` has no alternative.
const TABLE_NAME_FOLLOW: &[&str] = &[
    "add",
    "allow",
    "alter",
    "as",
    "drop",
    "from",
    "group",
    "json",
    "limit",
    "norecursive",
    "of",
    "order",
    "per",
    "primary",
    "rename",
    "set",
    "to",
    "using",
    "where",
    "with",
];

type PResult<T> = Result<T, ParseError>;

pub(crate) struct Parser<'a> {
    src: &'a str,
    toks: Vec<Token>,
    pos: usize,
    depth: u32,
    binds: Vec<Option<String>>,
    /// Set while parsing the type of a cast or type hint: `varchar` there stays
    /// [`CqlType::Varchar`](crate::ast::CqlType::Varchar), since Cassandra prints it as written.
    varchar_as_written: bool,
    /// The furthest token Cassandra's parser would have fetched so far, where it looks
    /// further ahead than this one does (see [`Parser::look_ahead`]).
    far: usize,
    /// Token positions where the last complete term began and ended (see
    /// [`Parser::after_term_error`]).
    last_term: Option<(usize, usize)>,
    /// How many selector literals (`SELECT [1, 2]`) the parser is inside: their items are
    /// terms here but selectors in Cassandra's grammar, so they get a selector's look-ahead
    /// and not a term's errors.
    in_selector: u32,
    /// How many argument lists of selector function calls the parser is inside: what
    /// Cassandra expects after a selector there is `)`, not FROM (see
    /// `Parser::selector_postfix_chain`).
    in_call: u32,
    /// Inside a GROUP BY clause, where what Cassandra's parser expects after a selector it
    /// backs out of is the end of the statement (EOF), not FROM.
    in_group_by: bool,
    /// An error Cassandra's parser records without stopping (`frozen<int>`): the statement's
    /// error once parsing ends, whether it then succeeds or fails further on (the first
    /// recorded error is the one reported, and a later one cannot come first).
    deferred: Option<ParseError>,
}

/// Words that start a literal term rather than name something.
fn is_term_keyword(word: &str) -> bool {
    ["null", "true", "false", "nan", "infinity"]
        .iter()
        .any(|k| k.eq_ignore_ascii_case(word))
}

/// Unquoted words allowed as a function name: any non-reserved word, plus `token`.
fn is_function_word(word: &str) -> bool {
    !is_reserved(word) || word.eq_ignore_ascii_case("token")
}

impl<'a> Parser<'a> {
    pub(crate) fn new(src: &'a str) -> PResult<Self> {
        Ok(Parser {
            src,
            toks: tokenize(src)?,
            pos: 0,
            depth: 0,
            binds: Vec::new(),
            varchar_as_written: false,
            far: 0,
            last_term: None,
            in_selector: 0,
            in_call: 0,
            in_group_by: false,
            deferred: None,
        })
    }

    // -----------------------------------------------------------------------------------------
    // Entry points
    // -----------------------------------------------------------------------------------------

    /// Exactly one statement, optionally followed by `;`s.
    pub(crate) fn parse_single(&mut self) -> PResult<ParsedStatement> {
        let r = self.single_statement();
        self.with_deferred(r)
    }

    fn single_statement(&mut self) -> PResult<ParsedStatement> {
        let stmt = self.statement()?;
        while self.eat(Tok::Semi) {}
        if !self.at(Tok::Eof) {
            return Err(self.mismatched("EOF"));
        }
        Ok(ParsedStatement {
            statement: stmt,
            bind_markers: std::mem::take(&mut self.binds),
        })
    }

    /// A parse's result, unless an error was recorded on the way ([`Parser::deferred`]).
    fn with_deferred<T>(&mut self, r: PResult<T>) -> PResult<T> {
        match (r, self.deferred.take()) {
            // An exception thrown while parsing stops it before recorded errors are reported.
            (Err(e), _) if e.kind == crate::error::ParseErrorKind::Failed => Err(e),
            (_, Some(e)) => Err(e),
            (r, None) => r,
        }
    }

    /// Exactly one CQL type.
    pub(crate) fn parse_type_only(&mut self) -> PResult<CqlType> {
        let ty = self.cql_type()?;
        if !self.at(Tok::Eof) {
            return Err(self.mismatched("EOF"));
        }
        Ok(ty)
    }

    /// Any number of `;`-separated statements.
    pub(crate) fn parse_script(&mut self) -> PResult<Vec<ParsedStatement>> {
        let r = self.script();
        self.with_deferred(r)
    }

    fn script(&mut self) -> PResult<Vec<ParsedStatement>> {
        let mut out = Vec::new();
        loop {
            while self.eat(Tok::Semi) {}
            if self.at(Tok::Eof) {
                return Ok(out);
            }
            let stmt = self.statement()?;
            out.push(ParsedStatement {
                statement: stmt,
                bind_markers: std::mem::take(&mut self.binds),
            });
            if !self.at(Tok::Semi) && !self.at(Tok::Eof) {
                return Err(self.mismatched("';'"));
            }
        }
    }

    // -----------------------------------------------------------------------------------------
    // Token helpers
    // -----------------------------------------------------------------------------------------

    fn peek(&self) -> Token {
        self.toks[self.pos]
    }

    fn peek_n(&self, n: usize) -> Token {
        self.toks[(self.pos + n).min(self.toks.len() - 1)]
    }

    fn bump(&mut self) -> Token {
        let t = self.peek();
        if t.kind != Tok::Eof {
            self.pos += 1;
        }
        t
    }

    fn text(&self, t: Token) -> &'a str {
        &self.src[t.start as usize..t.end as usize]
    }

    fn at(&self, k: Tok) -> bool {
        self.peek().kind == k
    }

    fn at_n(&self, n: usize, k: Tok) -> bool {
        self.peek_n(n).kind == k
    }

    fn eat(&mut self, k: Tok) -> bool {
        if self.at(k) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, k: Tok) -> PResult<Token> {
        if self.at(k) {
            Ok(self.bump())
        } else {
            Err(self.mismatched(k.describe()))
        }
    }

    fn kw_at_n(&self, n: usize, kw: &str) -> bool {
        let t = self.peek_n(n);
        t.kind == Tok::Ident && self.text(t).eq_ignore_ascii_case(kw)
    }

    /// Whether `t` is one of these (lower-case) keywords.
    fn is_one_of(&self, t: Token, keywords: &[&str]) -> bool {
        t.kind == Tok::Ident
            && keywords
                .iter()
                .any(|k| self.text(t).eq_ignore_ascii_case(k))
    }

    fn at_kw(&self, kw: &str) -> bool {
        self.kw_at_n(0, kw)
    }

    fn eat_kw(&mut self, kw: &str) -> bool {
        if self.at_kw(kw) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn expect_kw(&mut self, kw: &str) -> PResult<()> {
        if self.eat_kw(kw) {
            Ok(())
        } else {
            Err(self.mismatched(&format!("K_{}", kw.to_ascii_uppercase())))
        }
    }

    /// In a list `item (',' item?)*` (Cassandra's column and field definitions): eats the
    /// commas after an item, items left out between them included, and tells whether another
    /// item starts there. When none does, the caller ends the list and expects its `)`.
    fn next_list_item(&mut self, starts_item: impl Fn(&Self) -> bool) -> bool {
        let mut comma = false;
        while self.eat(Tok::Comma) {
            comma = true;
            if starts_item(self) {
                return true;
            }
        }
        comma && starts_item(self)
    }

    /// Parses `item (',' item)*`.
    fn comma_list<T>(&mut self, mut item: impl FnMut(&mut Self) -> PResult<T>) -> PResult<Vec<T>> {
        let mut v = vec![item(self)?];
        while self.eat(Tok::Comma) {
            v.push(item(self)?);
        }
        Ok(v)
    }

    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            let t = self.peek();
            return Err(ParseError::syntax_at(
                self.src,
                t.start as usize,
                format!("statement nested more than {MAX_DEPTH} levels deep"),
            ));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    // -----------------------------------------------------------------------------------------
    // Errors
    // -----------------------------------------------------------------------------------------

    fn token_display(&self, t: Token) -> String {
        if t.kind == Tok::Eof {
            "<EOF>".to_string()
        } else {
            truncate(&self.antlr_text(t), 100).to_string()
        }
    }

    /// A token's text as Cassandra's lexer keeps it: a string literal or quoted name without
    /// its quotes and with doubled quotes undone (`'ab''c'` is `ab'c`); any other token as
    /// written. Error messages quote this text.
    fn antlr_text(&self, t: Token) -> String {
        if let Some(end) = self.glued_number_end(t) {
            return self.src[t.start as usize..end].to_string();
        }
        let s = self.text(t);
        match t.kind {
            Tok::Str | Tok::DollarStr => self.string_value(t),
            Tok::QuotedIdent => s[1..s.len() - 1].replace("\"\"", "\""),
            _ => s.to_string(),
        }
    }

    /// Where a token ends for Cassandra's snippet, which measures a token by its
    /// [`Self::antlr_text`]: as many characters from its start as that text has, so a string
    /// literal is cut short (`LIMIT [']...` for `LIMIT 'x'`).
    fn antlr_end(&self, t: Token) -> usize {
        if let Some(end) = self.glued_number_end(t) {
            return end;
        }
        let (start, end) = (t.start as usize, t.end as usize);
        if !matches!(t.kind, Tok::Str | Tok::DollarStr | Tok::QuotedIdent) {
            return end;
        }
        let n = self.antlr_text(t).chars().count();
        self.src[start..end]
            .char_indices()
            .nth(n)
            .map_or(end, |(i, _)| start + i)
    }

    /// The end of the number a `-` is written against (`-1`, `-2.5`): Cassandra's lexer reads
    /// the two as one token (its INTEGER and FLOAT take a sign), so its messages and snippets
    /// measure them as one. `None` for any other token.
    fn glued_number_end(&self, t: Token) -> Option<usize> {
        if t.kind != Tok::Minus {
            return None;
        }
        let i = self.toks.partition_point(|x| x.start < t.end);
        let n = self.toks.get(i)?;
        (n.start == t.end && matches!(n.kind, Tok::Integer | Tok::Float)).then_some(n.end as usize)
    }

    /// Whether the token at `i` is a number glued to the `-` before it
    /// ([`Self::glued_number_end`]).
    fn glued_to_minus(&self, i: usize) -> bool {
        i > 0 && self.glued_number_end(self.toks[i - 1]).is_some()
    }

    /// ` (SELECT * [FRO]...)`: the statement around the offending token, like Cassandra's
    /// `ErrorCollector` snippet.
    fn snippet(&self) -> String {
        self.snippet_at(self.pos)
    }

    /// The snippet with the token at `pos` in brackets, as Cassandra's `ErrorCollector` cuts
    /// it: from 10 tokens before to 2 after, counted in ANTLR's token stream, where each run
    /// of whitespace or comments between two tokens is a (hidden) token too, but never past
    /// the furthest token the parser has looked at (the current one, or further where
    /// Cassandra's parser looks further ahead, see [`Self::look_ahead`]: ANTLR fetches tokens
    /// lazily and the snippet stops at the last one fetched); no snippet at all when that
    /// last token is the end of the text (ANTLR's EOF token has no position); `...` where the
    /// statement goes on beyond either end; line breaks dropped. Tokens are measured by
    /// [`Self::antlr_end`].
    fn snippet_at(&self, pos: usize) -> String {
        let mut pos = pos.min(self.toks.len() - 1);
        if self.glued_to_minus(pos) {
            pos -= 1;
        }
        let t = self.toks[pos];
        if t.kind == Tok::Eof {
            return String::new();
        }
        // The stream: (start, end) of every token and of every gap before one; EOF last.
        let mut stream: Vec<(usize, usize)> = Vec::with_capacity(self.toks.len() * 2);
        let mut at = None;
        let mut far = 0;
        let mut prev_end = 0;
        let far_tok = self.pos.max(self.far);
        for (i, tok) in self.toks.iter().enumerate() {
            if self.glued_to_minus(i) {
                // Part of the `-` token before it: looking at it is looking at that one.
                if i == far_tok.min(self.toks.len() - 1) {
                    far = stream.len() - 1;
                }
                continue;
            }
            let (start, end) = (tok.start as usize, self.antlr_end(*tok));
            if start > prev_end {
                stream.push((prev_end, start));
            }
            if i == pos {
                at = Some(stream.len());
            }
            if i == far_tok.min(self.toks.len() - 1) {
                far = stream.len();
            }
            if tok.kind == Tok::Eof {
                break;
            }
            stream.push((start, end));
            prev_end = end.max(tok.end as usize);
        }
        let Some(at) = at else {
            return String::new();
        };
        let to_index = (at + 2).min(far.max(at));
        if to_index >= stream.len() {
            return String::new();
        }
        let from = stream[at.saturating_sub(10)].0;
        let to = stream[to_index].1;
        let (start, end) = (t.start as usize, self.antlr_end(t));
        let before = tail(&self.src[from..start], 200).replace('\n', "");
        let after = truncate(&self.src[end..to.max(end)], 100).replace('\n', "");
        let head = if from == 0 { "" } else { "..." };
        let more = if to >= self.src.len() { "" } else { "..." };
        format!(
            " ({head}{before}[{}]{after}{more})",
            truncate(&self.src[start..end], 100).replace('\n', "")
        )
    }

    /// Records that Cassandra's parser has looked `n` tokens past the current one (its
    /// prediction of what a selector or term is reads ahead), so a snippet reaches them.
    fn look_ahead(&mut self, n: usize) {
        self.far = self.far.max((self.pos + n).min(self.toks.len() - 1));
    }

    fn mismatched(&self, expecting: &str) -> ParseError {
        if let Some(e) = self.after_term_error() {
            return e;
        }
        let t = self.peek();
        ParseError::syntax_at(
            self.src,
            t.start as usize,
            format!(
                "mismatched input '{}' expecting {expecting}{}",
                self.token_display(t),
                self.snippet()
            ),
        )
    }

    /// Right after a term, Cassandra's parser fails on a token that can follow no term
    /// anywhere (its decision about how the term goes on has no alternative for it) before
    /// the statement's rule can expect something: "no viable alternative at input '2'
    /// (...WHERE k = 1 [2])" where this parser would say "mismatched input '2' expecting
    /// EOF". A term that is a bare name or `?` is bracketed instead, as the choice of what it
    /// starts is still open there ("(... VALUES (1, [?] 3...)").
    fn after_term_error(&self) -> Option<ParseError> {
        let (start, end) = self.last_term?;
        if end != self.pos {
            return None;
        }
        let t = self.peek();
        let may_follow = match t.kind {
            Tok::Range => true,
            Tok::Ident => self.is_one_of(
                t,
                &[
                    "and", "if", "where", "using", "apply", "limit", "allow", "group", "order",
                    "per", "asc", "desc", "insert", "update", "delete", "primary", "from", "set",
                ],
            ),
            k => closes_or_operates(k),
        };
        if may_follow {
            return None;
        }
        let first = self.toks[start];
        let bare = end == start + 1
            && match first.kind {
                Tok::QMark | Tok::QuotedIdent => true,
                Tok::Ident => !is_term_keyword(self.text(first)),
                _ => false,
            };
        Some(if bare {
            self.no_viable_from(start)
        } else {
            self.no_viable()
        })
    }

    fn no_viable(&self) -> ParseError {
        self.no_viable_from(self.pos)
    }

    /// No alternative fits at the current token, for a choice that began at the token at
    /// `start`: Cassandra's (ANTLR's) message names the token where the look-ahead failed and
    /// brackets the one where the choice began (`... VALUES (80, [abc]))` failing at `)`).
    fn no_viable_from(&self, start: usize) -> ParseError {
        let t = self.peek();
        ParseError::syntax_at(
            self.src,
            t.start as usize,
            format!(
                "no viable alternative at input '{}'{}",
                self.token_display(t),
                if t.kind == Tok::Eof {
                    String::new()
                } else {
                    self.snippet_at(start)
                }
            ),
        )
    }

    fn invalid(&self, at: Token, message: String) -> ParseError {
        ParseError::invalid_at(self.src, at.start as usize, message)
    }

    // -----------------------------------------------------------------------------------------
    // Names
    // -----------------------------------------------------------------------------------------

    /// True if the token at `n` can be a name.
    fn is_ident_at(&self, n: usize) -> bool {
        let t = self.peek_n(n);
        match t.kind {
            // `true` and `false` are not keywords but Cassandra's BOOLEAN token, never a name.
            Tok::Ident => {
                let word = self.text(t);
                !is_reserved(word)
                    && !word.eq_ignore_ascii_case("true")
                    && !word.eq_ignore_ascii_case("false")
            }
            Tok::QuotedIdent => t.end - t.start > 2,
            _ => false,
        }
    }

    /// A name: an unreserved word (lower-cased) or a quoted name (case kept).
    fn ident(&mut self) -> PResult<String> {
        if !self.is_ident_at(0) {
            return Err(self.no_viable());
        }
        let t = self.bump();
        let s = self.text(t);
        Ok(if t.kind == Tok::QuotedIdent {
            s[1..s.len() - 1].replace("\"\"", "\"")
        } else {
            s.to_ascii_lowercase()
        })
    }

    /// `[ks.]name`.
    /// A table or view name where Cassandra's grammar reads a `columnFamilyName`. Its parser
    /// decides between `ks.name` and `name` from the token after the name: a `.`, or a token
    /// that may follow a table name somewhere in the grammar (after which it has looked one
    /// token further, so a later snippet reaches it); any other token fails that decision,
    /// "no viable alternative at input 'x' (SELECT * FROM [t] x)", the snippet centred on the
    /// name. A qualified name is read as any other.
    fn table_name(&mut self) -> PResult<QualifiedName> {
        let start = self.pos;
        let name = self.qualified_name()?;
        if self.pos == start + 1 {
            let follow = [Tok::LParen, Tok::Semi, Tok::Eof];
            self.predicted_from(start, &follow, TABLE_NAME_FOLLOW)?;
        }
        Ok(name)
    }

    /// The end of a prediction that began at the token at `start` and reads the current
    /// token: one of `punct` or `words` (any case) predicts, and the prediction looked one
    /// token past it; any other fails it ("no viable alternative", `start` bracketed).
    fn predicted_from(&mut self, start: usize, punct: &[Tok], words: &[&str]) -> PResult<()> {
        let next = self.peek();
        let follows = punct.contains(&next.kind)
            || (next.kind == Tok::Ident
                && words.contains(&self.text(next).to_ascii_lowercase().as_str()));
        if !follows {
            return Err(self.no_viable_from(start));
        }
        self.look_ahead(1);
        Ok(())
    }

    fn qualified_name(&mut self) -> PResult<QualifiedName> {
        let first = self.ident()?;
        if self.eat(Tok::Dot) {
            let name = self.ident()?;
            Ok(QualifiedName::qualified(first, name))
        } else {
            Ok(QualifiedName::new(first))
        }
    }

    /// A role or user name: a name or a string literal (case kept).
    fn role_name(&mut self) -> PResult<String> {
        if matches!(self.peek().kind, Tok::Str | Tok::DollarStr) {
            let t = self.bump();
            return Ok(self.string_value(t));
        }
        self.ident()
    }

    /// A user name (CREATE/ALTER/DROP USER): Cassandra keeps the case of an unquoted name
    /// there, unlike a role name.
    fn user_name(&mut self) -> PResult<String> {
        if self.peek().kind == Tok::QuotedIdent {
            return Err(ParseError::syntax_at(
                self.src,
                self.peek().start as usize,
                "Quoted strings are are not supported for user names and USER is deprecated, please use ROLE".into(),
            ));
        }
        if self.is_ident_at(0) {
            let t = self.bump();
            return Ok(self.text(t).to_string());
        }
        self.role_name()
    }

    fn string_value(&self, t: Token) -> String {
        let s = self.text(t);
        match t.kind {
            Tok::Str => s[1..s.len() - 1].replace("''", "'"),
            Tok::DollarStr => s[2..s.len() - 2].to_string(),
            _ => s.to_string(),
        }
    }

    fn string_literal(&mut self) -> PResult<String> {
        if matches!(self.peek().kind, Tok::Str | Tok::DollarStr) {
            let t = self.bump();
            Ok(self.string_value(t))
        } else {
            Err(self.mismatched("STRING_LITERAL"))
        }
    }

    fn if_not_exists(&mut self) -> PResult<bool> {
        if self.at_kw("if") && self.kw_at_n(1, "not") {
            self.bump();
            self.bump();
            self.expect_kw("exists")?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    fn if_exists(&mut self) -> PResult<bool> {
        if self.at_kw("if") && self.kw_at_n(1, "exists") {
            self.bump();
            self.bump();
            Ok(true)
        } else {
            Ok(false)
        }
    }

    // -----------------------------------------------------------------------------------------
    // Statements
    // -----------------------------------------------------------------------------------------

    fn statement(&mut self) -> PResult<Statement> {
        let t = self.peek();
        if t.kind != Tok::Ident {
            return Err(self.no_viable());
        }
        if self.at_service_level_statement() {
            return Ok(Statement::ServiceLevel(self.service_level_statement()?));
        }
        let w = self.text(t).to_ascii_lowercase();
        match w.as_str() {
            "select" => Ok(Statement::Select(self.select()?)),
            "insert" => Ok(Statement::Insert(self.insert()?)),
            "update" => Ok(Statement::Update(self.update()?)),
            "delete" => Ok(Statement::Delete(self.delete()?)),
            "begin" => Ok(Statement::Batch(self.batch()?)),
            "use" => {
                self.bump();
                Ok(Statement::Use(self.ident()?))
            }
            "create" => self.create(),
            "alter" => self.alter(),
            "drop" => self.drop(),
            "truncate" => {
                self.bump();
                if !self.eat_kw("table") {
                    self.eat_kw("columnfamily");
                }
                Ok(Statement::Truncate(self.table_name()?))
            }
            "grant" => self.grant(),
            "revoke" => self.revoke(),
            "list" => self.list(),
            "describe" | "desc" => Ok(Statement::Describe(self.describe()?)),
            _ => Err(self.no_viable()),
        }
    }

    /// Consumes the rest of a statement this parser does not model.
    fn skip_rest(&mut self) {
        while !self.at(Tok::Semi) && !self.at(Tok::Eof) {
            self.bump();
        }
    }
}

/// Text of a map entry constant (Cassandra keeps these maps as text).
fn literal_text(l: Literal) -> String {
    match l {
        Literal::String(s)
        | Literal::Integer(s)
        | Literal::Float(s)
        | Literal::Uuid(s)
        | Literal::Duration(s) => s,
        Literal::Boolean(b) => b.to_string(),
        Literal::Blob(h) => format!("0x{h}"),
        Literal::Null => "null".to_string(),
    }
}

/// At most `max` bytes of `s` from the start, cut at a character boundary.
fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// At most `max` bytes of `s` from the end, cut at a character boundary.
fn tail(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut start = s.len() - max;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// A token that ends an expression's list or group (`,`, a closing bracket, `:`, `;`, the
/// end) or applies an arithmetic operator to it: what may follow any term or selector.
fn closes_or_operates(k: Tok) -> bool {
    matches!(
        k,
        Tok::Comma
            | Tok::RParen
            | Tok::RBracket
            | Tok::RBrace
            | Tok::Colon
            | Tok::Semi
            | Tok::Eof
            | Tok::Plus
            | Tok::Minus
            | Tok::Star
            | Tok::Slash
            | Tok::Percent
    )
}

fn add_op(t: &Tok) -> Option<ArithOp> {
    match t {
        Tok::Plus => Some(ArithOp::Add),
        Tok::Minus => Some(ArithOp::Sub),
        _ => None,
    }
}

fn mul_op(t: &Tok) -> Option<ArithOp> {
    match t {
        Tok::Star => Some(ArithOp::Mul),
        Tok::Slash => Some(ArithOp::Div),
        Tok::Percent => Some(ArithOp::Rem),
        _ => None,
    }
}

fn term_op(op: ArithOp, left: Term, right: Term) -> Term {
    Term::Operation {
        op,
        left: Box::new(left),
        right: Box::new(right),
    }
}

fn selector_op(op: ArithOp, left: SelectorExpr, right: SelectorExpr) -> SelectorExpr {
    SelectorExpr::Operation {
        op,
        left: Box::new(left),
        right: Box::new(right),
    }
}
