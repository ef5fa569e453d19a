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
mod view;

/// Deepest nesting of terms, types, selectors and relations accepted.
pub(crate) const MAX_DEPTH: u32 = 32;

/// Most bind markers one statement may hold (the protocol counts them in a `[short]`).
const MAX_BIND_MARKERS: usize = u16::MAX as usize;

type PResult<T> = Result<T, ParseError>;

pub(crate) struct Parser<'a> {
    src: &'a str,
    toks: Vec<Token>,
    pos: usize,
    depth: u32,
    binds: Vec<Option<String>>,
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
        })
    }

    // -----------------------------------------------------------------------------------------
    // Entry points
    // -----------------------------------------------------------------------------------------

    /// Exactly one statement, optionally followed by `;`s.
    pub(crate) fn parse_single(&mut self) -> PResult<ParsedStatement> {
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
            truncate(self.text(t), 100).to_string()
        }
    }

    /// ` (SELECT * [FRO]...)`: the statement around the offending token, like Cassandra's
    /// `ErrorCollector` snippet.
    fn snippet(&self) -> String {
        let first = self.toks[self.pos.saturating_sub(10)].start as usize;
        let t = self.peek();
        if t.kind == Tok::Eof {
            return String::new();
        }
        // `t` is not EOF, so `pos <= len - 2`, the index of the last real token.
        let last_idx = (self.pos + 2).min(self.toks.len() - 2);
        let before = tail(&self.src[first..t.start as usize], 200);
        let after = truncate(
            &self.src[t.end as usize..self.toks[last_idx].end as usize],
            100,
        );
        let more = if last_idx + 2 < self.toks.len() {
            "..."
        } else {
            ""
        };
        format!(" ({before}[{}]{after}{more})", self.token_display(t))
    }

    fn mismatched(&self, expecting: &str) -> ParseError {
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

    fn no_viable(&self) -> ParseError {
        let t = self.peek();
        ParseError::syntax_at(
            self.src,
            t.start as usize,
            format!(
                "no viable alternative at input '{}'{}",
                self.token_display(t),
                self.snippet()
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
            Tok::Ident => !is_reserved(self.text(t)),
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
                Ok(Statement::Truncate(self.qualified_name()?))
            }
            "grant" => self.grant(),
            "revoke" => self.revoke(),
            "list" => self.list(),
            "describe" | "desc" => Ok(Statement::Describe(self.describe()?)),
            _ => Err(self.no_viable()),
        }
    }

    /// Consumes the rest of a statement this parser does not model.
    fn unsupported(&mut self, what: &str) -> PResult<Statement> {
        while !self.at(Tok::Semi) && !self.at(Tok::Eof) {
            self.bump();
        }
        Ok(Statement::Unsupported {
            what: what.to_string(),
        })
    }

    // ---- SELECT ------------------------------------------------------------------------------

    /// `JSON` / `DISTINCT` are unreserved: they are modifiers only if a selector follows.
    fn select_modifier_applies(&self) -> bool {
        let n = self.peek_n(1);
        match n.kind {
            Tok::Comma | Tok::LParen | Tok::Dot | Tok::LBracket | Tok::Eof => false,
            Tok::Ident => {
                let w = self.text(n);
                !(w.eq_ignore_ascii_case("from") || w.eq_ignore_ascii_case("as"))
            }
            _ => true,
        }
    }

    fn select(&mut self) -> PResult<SelectStatement> {
        self.expect_kw("select")?;
        let json = self.at_kw("json") && self.select_modifier_applies();
        if json {
            self.bump();
        }
        let distinct = self.at_kw("distinct") && self.select_modifier_applies();
        if distinct {
            self.bump();
        }
        let selection = if self.eat(Tok::Star) {
            Selection::Wildcard
        } else {
            Selection::Selectors(self.comma_list(Self::selector)?)
        };
        self.expect_kw("from")?;
        let table = self.qualified_name()?;
        let where_clause = if self.eat_kw("where") {
            self.where_clause()?
        } else {
            Vec::new()
        };
        let mut group_by = Vec::new();
        if self.eat_kw("group") {
            self.expect_kw("by")?;
            group_by = self.comma_list(Self::selector_expr)?;
        }
        let mut order_by = Vec::new();
        let mut ann = None;
        if self.eat_kw("order") {
            self.expect_kw("by")?;
            (order_by, ann) = self.orderings()?;
        }
        let mut per_partition_limit = None;
        if self.at_kw("per") {
            self.bump();
            self.expect_kw("partition")?;
            self.expect_kw("limit")?;
            per_partition_limit = Some(self.term()?);
        }
        let limit = if self.eat_kw("limit") {
            Some(self.term()?)
        } else {
            None
        };
        let allow_filtering = if self.eat_kw("allow") {
            self.expect_kw("filtering")?;
            true
        } else {
            false
        };
        Ok(SelectStatement {
            table,
            json,
            distinct,
            selection,
            where_clause,
            group_by,
            order_by,
            ann,
            per_partition_limit,
            limit,
            allow_filtering,
        })
    }

    pub(super) fn ordering(&mut self) -> PResult<(String, Order)> {
        let c = self.ident()?;
        let o = if self.eat_kw("desc") {
            Order::Desc
        } else {
            self.eat_kw("asc");
            Order::Asc
        };
        Ok((c, o))
    }

    fn selector(&mut self) -> PResult<Selector> {
        let expr = self.selector_expr()?;
        let alias = if self.eat_kw("as") {
            Some(self.ident()?)
        } else {
            None
        };
        Ok(Selector { expr, alias })
    }

    fn selector_expr(&mut self) -> PResult<SelectorExpr> {
        self.enter()?;
        let r = self.selector_add();
        self.leave();
        r
    }

    fn selector_add(&mut self) -> PResult<SelectorExpr> {
        self.left_assoc(add_op, Self::selector_mul, |_| true, selector_op)
    }

    fn selector_mul(&mut self) -> PResult<SelectorExpr> {
        self.left_assoc(mul_op, Self::selector_postfix, |_| true, selector_op)
    }

    fn selector_postfix(&mut self) -> PResult<SelectorExpr> {
        let e = self.selector_primary()?;
        let depth = self.depth;
        let r = self.selector_postfix_chain(e);
        self.depth = depth;
        r
    }

    /// `.field`, `[key]`, `[a..b]` after a selector; each counts as a nesting level.
    fn selector_postfix_chain(&mut self, mut e: SelectorExpr) -> PResult<SelectorExpr> {
        loop {
            if self.at(Tok::Dot) || self.at(Tok::LBracket) {
                self.enter()?;
            }
            if self.at(Tok::Dot) {
                self.bump();
                let field = self.ident()?;
                e = SelectorExpr::Field {
                    expr: Box::new(e),
                    field,
                };
            } else if self.eat(Tok::LBracket) {
                let from = if self.at(Tok::Range) {
                    None
                } else {
                    Some(self.term()?)
                };
                if self.eat(Tok::Range) {
                    let to = if self.at(Tok::RBracket) {
                        None
                    } else {
                        Some(self.term()?)
                    };
                    e = SelectorExpr::Slice {
                        expr: Box::new(e),
                        from,
                        to,
                    };
                } else {
                    let key = from.ok_or_else(|| self.no_viable())?;
                    e = SelectorExpr::Element {
                        expr: Box::new(e),
                        key,
                    };
                }
                self.expect(Tok::RBracket)?;
            } else {
                return Ok(e);
            }
        }
    }

    fn selector_primary(&mut self) -> PResult<SelectorExpr> {
        let t = self.peek();
        match t.kind {
            Tok::Ident | Tok::QuotedIdent => {
                let w = self.text(t);
                let is_word = t.kind == Tok::Ident;
                if is_word && is_term_keyword(w) {
                    return Ok(SelectorExpr::Term(self.term_unary()?));
                }
                if self.at_n(1, Tok::LParen) {
                    if is_word {
                        let lw = w.to_ascii_lowercase();
                        match lw.as_str() {
                            "count" if self.at_n(2, Tok::Star) && self.at_n(3, Tok::RParen) => {
                                self.pos += 4;
                                return Ok(SelectorExpr::CountRows);
                            }
                            "writetime" | "maxwritetime" | "ttl" => {
                                self.pos += 2;
                                let c = self.ident()?;
                                let func = match lw.as_str() {
                                    "writetime" => CellTimeFn::WriteTime,
                                    "maxwritetime" => CellTimeFn::MaxWriteTime,
                                    _ => CellTimeFn::Ttl,
                                };
                                if self.eat(Tok::LBracket) {
                                    let key = self.term()?;
                                    self.expect(Tok::RBracket)?;
                                    self.expect(Tok::RParen)?;
                                    return Ok(SelectorExpr::ElementTime {
                                        func,
                                        column: c,
                                        key,
                                    });
                                }
                                self.expect(Tok::RParen)?;
                                return Ok(match func {
                                    CellTimeFn::WriteTime => SelectorExpr::WriteTime(c),
                                    CellTimeFn::MaxWriteTime => SelectorExpr::MaxWriteTime(c),
                                    CellTimeFn::Ttl => SelectorExpr::Ttl(c),
                                });
                            }
                            "cast" => {
                                self.pos += 2;
                                let expr = self.selector_expr()?;
                                self.expect_kw("as")?;
                                // CAST takes a native type only (not vector<..>, frozen<..>, a UDT).
                                let t = self.peek();
                                let native = t.kind == Tok::Ident
                                    && !self.at_n(1, Tok::Lt)
                                    && CqlType::native_from_name(
                                        &self.text(t).to_ascii_lowercase(),
                                    )
                                    .is_some();
                                if !native {
                                    return Err(self.no_viable());
                                }
                                let ty = self.cql_type()?;
                                self.expect(Tok::RParen)?;
                                return Ok(SelectorExpr::Cast {
                                    expr: Box::new(expr),
                                    ty,
                                });
                            }
                            _ => {}
                        }
                    }
                    let name = self.function_name()?;
                    return self.selector_call(name);
                }
                if self.at_n(1, Tok::Dot) && self.at_n(3, Tok::LParen) {
                    let name = self.function_name()?;
                    return self.selector_call(name);
                }
                Ok(SelectorExpr::Column(self.ident()?))
            }
            Tok::LParen if self.is_selector_type_hint() => {
                // `(type) selector` is a cast in Cassandra's grammar.
                self.bump();
                let ty = self.cql_type()?;
                self.expect(Tok::RParen)?;
                let expr = self.selector_postfix()?;
                Ok(SelectorExpr::Cast {
                    expr: Box::new(expr),
                    ty,
                })
            }
            // `(selector)`: parentheses around an expression; otherwise a tuple term.
            Tok::LParen => {
                let (pos, depth, binds) = (self.pos, self.depth, self.binds.len());
                self.bump();
                if let Ok(e) = self.selector_expr() {
                    if self.eat(Tok::RParen) {
                        return Ok(e);
                    }
                }
                self.pos = pos;
                self.depth = depth;
                self.binds.truncate(binds);
                Ok(SelectorExpr::Term(self.term_unary()?))
            }
            // `-selector`: Cassandra's unary minus, the function `_negate` (a minus before a
            // number literal stays part of the literal).
            Tok::Minus if !self.minus_literal() => {
                self.bump();
                self.enter()?;
                let inner = self.selector_postfix();
                self.leave();
                Ok(SelectorExpr::Function {
                    name: FunctionName::new("_negate"),
                    args: vec![inner?],
                })
            }
            // Operators between terms belong to the selector grammar (`v * 2 + 1`), so only
            // one operand is read here.
            _ => Ok(SelectorExpr::Term(self.term_unary()?)),
        }
    }

    /// Whether the `(` here opens a type hint (`(int) 1`, `(list<int>) x`) rather than a
    /// parenthesized selector (`(m + 1)`, `-(m)`): a type name, then something to hint.
    fn is_selector_type_hint(&self) -> bool {
        if !self.is_type_hint() {
            return false;
        }
        if self.at_n(2, Tok::Lt) || self.at_n(2, Tok::Dot) {
            return true;
        }
        if !self.at_n(2, Tok::RParen) {
            return false;
        }
        let next = self.peek_n(3);
        match next.kind {
            Tok::Comma
            | Tok::RParen
            | Tok::Eof
            | Tok::Plus
            | Tok::Star
            | Tok::Slash
            | Tok::Percent => false,
            Tok::Ident => !["from", "as"].contains(&self.text(next).to_ascii_lowercase().as_str()),
            _ => true,
        }
    }

    /// Whether the `-` here starts a negative number literal.
    fn minus_literal(&self) -> bool {
        let next = self.peek_n(1);
        matches!(next.kind, Tok::Integer | Tok::Float | Tok::Duration)
            || (next.kind == Tok::Ident
                && ["infinity", "nan"].contains(&self.text(next).to_ascii_lowercase().as_str()))
    }

    fn selector_call(&mut self, name: FunctionName) -> PResult<SelectorExpr> {
        self.expect(Tok::LParen)?;
        let args = if self.at(Tok::RParen) {
            Vec::new()
        } else {
            self.comma_list(Self::selector_expr)?
        };
        self.expect(Tok::RParen)?;
        Ok(SelectorExpr::Function { name, args })
    }

    /// `[ks.]f` where `f` may also be `token`.
    fn function_name(&mut self) -> PResult<FunctionName> {
        let first = self.function_word()?;
        if self.at(Tok::Dot) {
            self.bump();
            let name = self.function_word()?;
            Ok(QualifiedName::qualified(first, name))
        } else {
            Ok(QualifiedName::new(first))
        }
    }

    fn function_word(&mut self) -> PResult<String> {
        let t = self.peek();
        if t.kind == Tok::Ident && is_function_word(self.text(t)) {
            self.bump();
            return Ok(self.text(t).to_ascii_lowercase());
        }
        self.ident()
    }

    // ---- WHERE -------------------------------------------------------------------------------

    fn where_clause(&mut self) -> PResult<Vec<Relation>> {
        let mut v = vec![self.relation()?];
        while self.eat_kw("and") {
            v.push(self.relation()?);
        }
        Ok(v)
    }

    fn relation(&mut self) -> PResult<Relation> {
        self.enter()?;
        let r = self.relation_inner();
        self.leave();
        r
    }

    fn relation_inner(&mut self) -> PResult<Relation> {
        if self.at(Tok::LParen) {
            if self.is_ident_at(1) && matches!(self.peek_n(2).kind, Tok::Comma | Tok::RParen) {
                self.bump();
                let columns = self.comma_list(Self::ident)?;
                self.expect(Tok::RParen)?;
                if self.eat_kw("in") {
                    let values = self.in_values()?;
                    return Ok(Relation::MultiColumnIn { columns, values });
                }
                let op = self.comparison_op()?;
                let value = self.term()?;
                return Ok(Relation::MultiColumn { columns, op, value });
            }
            self.bump();
            let r = self.relation()?;
            self.expect(Tok::RParen)?;
            return Ok(r);
        }
        if self.at_kw("token") && self.at_n(1, Tok::LParen) {
            self.pos += 2;
            let columns = self.comma_list(Self::ident)?;
            self.expect(Tok::RParen)?;
            let op = self.comparison_op()?;
            let value = self.term()?;
            return Ok(Relation::Token { columns, op, value });
        }
        let column = self.ident()?;
        if self.eat(Tok::LBracket) {
            let key = self.term()?;
            self.expect(Tok::RBracket)?;
            let op = self.comparison_op()?;
            let value = self.term()?;
            return Ok(Relation::Element {
                column,
                key,
                op,
                value,
            });
        }
        if self.eat_kw("in") {
            let values = self.in_values()?;
            return Ok(Relation::In { column, values });
        }
        if self.eat_kw("is") {
            self.expect_kw("not")?;
            self.expect_kw("null")?;
            return Ok(Relation::IsNotNull { column });
        }
        let op = self.relation_op()?;
        let value = self.term()?;
        Ok(Relation::Binary { column, op, value })
    }

    /// Comparison operators plus `LIKE`, `CONTAINS`, `CONTAINS KEY`.
    fn relation_op(&mut self) -> PResult<Operator> {
        if self.eat_kw("like") {
            return Ok(Operator::Like);
        }
        if self.eat_kw("contains") {
            return Ok(if self.eat_kw("key") {
                Operator::ContainsKey
            } else {
                Operator::Contains
            });
        }
        self.comparison_op()
    }

    fn comparison_op(&mut self) -> PResult<Operator> {
        let op = match self.peek().kind {
            Tok::Eq => Operator::Eq,
            Tok::Neq => Operator::Neq,
            Tok::Lt => Operator::Lt,
            Tok::Lte => Operator::Lte,
            Tok::Gt => Operator::Gt,
            Tok::Gte => Operator::Gte,
            _ => return Err(self.no_viable()),
        };
        self.bump();
        Ok(op)
    }

    fn in_values(&mut self) -> PResult<InValues> {
        match self.peek().kind {
            Tok::LParen => {
                self.bump();
                if self.eat(Tok::RParen) {
                    return Ok(InValues::Terms(Vec::new()));
                }
                let v = self.comma_list(Self::term)?;
                self.expect(Tok::RParen)?;
                Ok(InValues::Terms(v))
            }
            Tok::QMark | Tok::Colon => Ok(InValues::Marker(self.bind_marker()?)),
            _ => Err(self.no_viable()),
        }
    }

    // ---- Terms -------------------------------------------------------------------------------

    fn bind_marker(&mut self) -> PResult<BindMarker> {
        let t = self.peek();
        let name = match t.kind {
            Tok::QMark => {
                self.bump();
                None
            }
            Tok::Colon => {
                self.bump();
                Some(self.ident()?)
            }
            _ => return Err(self.no_viable()),
        };
        if self.binds.len() >= MAX_BIND_MARKERS {
            return Err(self.invalid(
                t,
                format!(
                    "Too many markers(?). {} markers exceed the allowed maximum of {MAX_BIND_MARKERS}",
                    self.binds.len() + 1
                ),
            ));
        }
        let index = self.binds.len();
        self.binds.push(name.clone());
        Ok(BindMarker { index, name })
    }

    /// True if the token at `n` starts a term (used to tell `c = [1] + c` from arithmetic).
    fn is_term_start(&self, n: usize) -> bool {
        let t = self.peek_n(n);
        match t.kind {
            Tok::Str
            | Tok::DollarStr
            | Tok::Integer
            | Tok::Float
            | Tok::Uuid
            | Tok::Hex
            | Tok::Duration
            | Tok::QMark
            | Tok::Colon
            | Tok::LBracket
            | Tok::LBrace
            | Tok::LParen
            | Tok::Minus => true,
            Tok::Ident | Tok::QuotedIdent => {
                (t.kind == Tok::Ident && is_term_keyword(self.text(t)))
                    || self.at_n(n + 1, Tok::LParen)
                    || (self.at_n(n + 1, Tok::Dot) && self.at_n(n + 3, Tok::LParen))
            }
            _ => false,
        }
    }

    /// After `(`: a type name and `)` make a type hint, anything else a tuple.
    fn is_type_hint(&self) -> bool {
        let t = self.peek_n(1);
        match t.kind {
            Tok::Ident => !is_term_keyword(self.text(t)) && !self.at_n(2, Tok::LParen),
            Tok::QuotedIdent => !self.at_n(2, Tok::LParen),
            Tok::Str => self.at_n(2, Tok::RParen) && self.is_term_start(3),
            _ => false,
        }
    }

    pub(crate) fn term(&mut self) -> PResult<Term> {
        self.enter()?;
        let r = self.term_add();
        self.leave();
        r
    }

    fn term_add(&mut self) -> PResult<Term> {
        self.left_assoc(add_op, Self::term_mul, |p| p.is_term_start(1), term_op)
    }

    fn term_mul(&mut self) -> PResult<Term> {
        self.left_assoc(mul_op, Self::term_unary, |p| p.is_term_start(1), term_op)
    }

    /// One precedence level of left-associative operators over `operand` (terms and
    /// selectors alike). `continues` may refuse an operator not followed by an operand.
    fn left_assoc<T>(
        &mut self,
        op_of: fn(&Tok) -> Option<ArithOp>,
        operand: fn(&mut Self) -> PResult<T>,
        continues: fn(&Self) -> bool,
        build: fn(ArithOp, T, T) -> T,
    ) -> PResult<T> {
        let mut left = operand(self)?;
        // Each operator counts as a nesting level: the tree is left-deep, and dropping or
        // printing it recurses.
        let mut levels = 0;
        let r = loop {
            let Some(op) = op_of(&self.peek().kind) else {
                break Ok(left);
            };
            if !continues(self) {
                break Ok(left);
            }
            if let Err(e) = self.enter() {
                break Err(e);
            }
            levels += 1;
            self.bump();
            let right = match operand(self) {
                Ok(r) => r,
                Err(e) => break Err(e),
            };
            left = build(op, left, right);
        };
        self.depth -= levels;
        r
    }

    fn term_unary(&mut self) -> PResult<Term> {
        if !self.at(Tok::Minus) {
            return self.simple_term();
        }
        self.bump();
        let t = self.peek();
        let neg = |s: &str| format!("-{s}");
        match t.kind {
            Tok::Integer => {
                self.bump();
                Ok(Term::Literal(Literal::Integer(neg(self.text(t)))))
            }
            Tok::Float => {
                self.bump();
                Ok(Term::Literal(Literal::Float(neg(self.text(t)))))
            }
            Tok::Duration => {
                self.bump();
                Ok(Term::Literal(Literal::Duration(neg(self.text(t)))))
            }
            Tok::Ident if self.text(t).eq_ignore_ascii_case("infinity") => {
                self.bump();
                Ok(Term::Literal(Literal::Float("-Infinity".to_string())))
            }
            Tok::Ident if self.text(t).eq_ignore_ascii_case("nan") => {
                self.bump();
                Ok(Term::Literal(Literal::Float("NaN".to_string())))
            }
            _ => {
                self.enter()?;
                let inner = self.term_unary();
                self.leave();
                Ok(Term::Negate(Box::new(inner?)))
            }
        }
    }

    fn simple_term(&mut self) -> PResult<Term> {
        let t = self.peek();
        let lit = |l: Literal| Ok(Term::Literal(l));
        match t.kind {
            Tok::Str | Tok::DollarStr => {
                self.bump();
                lit(Literal::String(self.string_value(t)))
            }
            Tok::Integer => {
                self.bump();
                lit(Literal::Integer(self.text(t).to_string()))
            }
            Tok::Float => {
                self.bump();
                lit(Literal::Float(self.text(t).to_string()))
            }
            Tok::Uuid => {
                self.bump();
                lit(Literal::Uuid(self.text(t).to_string()))
            }
            Tok::Hex => {
                self.bump();
                lit(Literal::Blob(self.text(t)[2..].to_string()))
            }
            Tok::Duration => {
                self.bump();
                lit(Literal::Duration(self.text(t).to_string()))
            }
            Tok::QMark | Tok::Colon => Ok(Term::Bind(self.bind_marker()?)),
            Tok::LBracket => {
                self.bump();
                if self.eat(Tok::RBracket) {
                    return Ok(Term::List(Vec::new()));
                }
                let v = self.comma_list(Self::term)?;
                self.expect(Tok::RBracket)?;
                Ok(Term::List(v))
            }
            Tok::LBrace => self.brace_term(),
            Tok::LParen => {
                if self.is_type_hint() {
                    self.bump();
                    let ty = self.cql_type()?;
                    self.expect(Tok::RParen)?;
                    self.enter()?;
                    let inner = self.term_unary();
                    self.leave();
                    return Ok(Term::TypeHint {
                        ty,
                        term: Box::new(inner?),
                    });
                }
                self.bump();
                let v = self.comma_list(Self::term)?;
                self.expect(Tok::RParen)?;
                Ok(Term::Tuple(v))
            }
            Tok::Ident | Tok::QuotedIdent => {
                if t.kind == Tok::Ident {
                    let w = self.text(t);
                    let l = if w.eq_ignore_ascii_case("null") {
                        Some(Literal::Null)
                    } else if w.eq_ignore_ascii_case("true") {
                        Some(Literal::Boolean(true))
                    } else if w.eq_ignore_ascii_case("false") {
                        Some(Literal::Boolean(false))
                    } else if w.eq_ignore_ascii_case("nan") {
                        Some(Literal::Float("NaN".to_string()))
                    } else if w.eq_ignore_ascii_case("infinity") {
                        Some(Literal::Float("Infinity".to_string()))
                    } else {
                        None
                    };
                    if let Some(l) = l {
                        self.bump();
                        return Ok(Term::Literal(l));
                    }
                }
                if self.at_n(1, Tok::LParen)
                    || (self.at_n(1, Tok::Dot) && self.at_n(3, Tok::LParen))
                {
                    let name = self.function_name()?;
                    self.expect(Tok::LParen)?;
                    let args = if self.at(Tok::RParen) {
                        Vec::new()
                    } else {
                        self.comma_list(Self::term)?
                    };
                    self.expect(Tok::RParen)?;
                    return Ok(Term::FunctionCall { name, args });
                }
                Err(self.no_viable())
            }
            _ => Err(self.no_viable()),
        }
    }

    /// `{}` (empty set), `{a, b}` (set), `{k: v}` (map), `{field: v}` (UDT).
    fn brace_term(&mut self) -> PResult<Term> {
        self.expect(Tok::LBrace)?;
        if self.eat(Tok::RBrace) {
            return Ok(Term::Set(Vec::new()));
        }
        let t = self.peek();
        let udt = self.at_n(1, Tok::Colon)
            && match t.kind {
                Tok::Ident => !is_term_keyword(self.text(t)) && self.is_ident_at(0),
                Tok::QuotedIdent => true,
                _ => false,
            };
        if udt {
            let fields = self.comma_list(|p| {
                let f = p.ident()?;
                p.expect(Tok::Colon)?;
                Ok((f, p.term()?))
            })?;
            self.expect(Tok::RBrace)?;
            return Ok(Term::Udt(fields));
        }
        let first = self.term()?;
        if self.eat(Tok::Colon) {
            let v = self.term()?;
            let mut entries = vec![(first, v)];
            while self.eat(Tok::Comma) {
                let k = self.term()?;
                self.expect(Tok::Colon)?;
                entries.push((k, self.term()?));
            }
            self.expect(Tok::RBrace)?;
            return Ok(Term::Map(entries));
        }
        let mut items = vec![first];
        while self.eat(Tok::Comma) {
            items.push(self.term()?);
        }
        self.expect(Tok::RBrace)?;
        Ok(Term::Set(items))
    }

    // ---- Types -------------------------------------------------------------------------------

    fn cql_type(&mut self) -> PResult<CqlType> {
        self.enter()?;
        let r = self.cql_type_inner();
        self.leave();
        r
    }

    fn cql_type_inner(&mut self) -> PResult<CqlType> {
        let t = self.peek();
        match t.kind {
            Tok::Str => {
                self.bump();
                Ok(CqlType::Custom(self.string_value(t)))
            }
            Tok::Ident => {
                let w = self.text(t).to_ascii_lowercase();
                if self.at_n(1, Tok::Lt) {
                    let ctor = match w.as_str() {
                        "list" | "set" | "map" | "frozen" | "tuple" | "vector" => w,
                        _ => return Err(self.no_viable()),
                    };
                    self.pos += 2;
                    let ty = match ctor.as_str() {
                        "list" => CqlType::List(Box::new(self.cql_type()?)),
                        "set" => CqlType::Set(Box::new(self.cql_type()?)),
                        "frozen" => CqlType::Frozen(Box::new(self.cql_type()?)),
                        "map" => {
                            let k = self.cql_type()?;
                            self.expect(Tok::Comma)?;
                            let v = self.cql_type()?;
                            CqlType::Map(Box::new(k), Box::new(v))
                        }
                        "tuple" => CqlType::Tuple(self.comma_list(Self::cql_type)?),
                        _ => {
                            let elem = self.cql_type()?;
                            self.expect(Tok::Comma)?;
                            let negative = self.at_n(0, Tok::Minus);
                            if negative {
                                self.bump();
                            }
                            let n = self.expect(Tok::Integer)?;
                            let text =
                                format!("{}{}", if negative { "-" } else { "" }, self.text(n));
                            // Cassandra reads the dimension as a Java int, then refuses < 1.
                            let dim = text.parse::<i32>().map_err(|_| {
                                self.invalid(n, format!("Invalid vector dimension {text}"))
                            })?;
                            let dim = u32::try_from(dim).ok().filter(|d| *d > 0).ok_or_else(|| {
                                self.invalid(
                                    n,
                                    format!("vectors may only have positive dimensions; given {dim}"),
                                )
                            })?;
                            CqlType::Vector(Box::new(elem), dim)
                        }
                    };
                    self.expect(Tok::Gt)?;
                    return Ok(ty);
                }
                if let Some(native) = CqlType::native_from_name(&w) {
                    self.bump();
                    return Ok(native);
                }
                Ok(CqlType::UserDefined(self.qualified_name()?))
            }
            Tok::QuotedIdent => Ok(CqlType::UserDefined(self.qualified_name()?)),
            _ => Err(self.no_viable()),
        }
    }

    // ---- INSERT / UPDATE / DELETE / BATCH -----------------------------------------------------

    fn insert(&mut self) -> PResult<InsertStatement> {
        self.expect_kw("insert")?;
        self.expect_kw("into")?;
        let table = self.qualified_name()?;
        let values = if self.eat_kw("json") {
            let json = self.term()?;
            let mut default_unset = false;
            if self.eat_kw("default") {
                if self.eat_kw("unset") {
                    default_unset = true;
                } else {
                    self.expect_kw("null")?;
                }
            }
            InsertValues::Json {
                json,
                default_unset,
            }
        } else {
            let open = self.expect(Tok::LParen)?;
            let columns = self.comma_list(Self::ident)?;
            self.expect(Tok::RParen)?;
            self.expect_kw("values")?;
            self.expect(Tok::LParen)?;
            let values = self.comma_list(Self::term)?;
            self.expect(Tok::RParen)?;
            if columns.len() != values.len() {
                return Err(self.invalid(open, "Unmatched column names/values".to_string()));
            }
            InsertValues::Values { columns, values }
        };
        // Cassandra's order is IF NOT EXISTS then USING; accept either.
        let mut if_not_exists = self.if_not_exists()?;
        let using = self.using_clause()?;
        if !if_not_exists {
            if_not_exists = self.if_not_exists()?;
        }
        Ok(InsertStatement {
            table,
            values,
            if_not_exists,
            using,
        })
    }

    fn using_clause(&mut self) -> PResult<UsingClause> {
        let mut u = UsingClause::default();
        if !self.eat_kw("using") {
            return Ok(u);
        }
        loop {
            if self.eat_kw("ttl") {
                u.ttl = Some(self.term()?);
            } else if self.eat_kw("timestamp") {
                u.timestamp = Some(self.term()?);
            } else {
                return Err(self.no_viable());
            }
            if !self.eat_kw("and") {
                return Ok(u);
            }
        }
    }

    fn update(&mut self) -> PResult<UpdateStatement> {
        self.expect_kw("update")?;
        let table = self.qualified_name()?;
        let using = self.using_clause()?;
        self.expect_kw("set")?;
        let assignments = self.comma_list(Self::assignment)?;
        self.expect_kw("where")?;
        let where_clause = self.where_clause()?;
        let condition = self.if_clause()?;
        Ok(UpdateStatement {
            table,
            using,
            assignments,
            where_clause,
            condition,
        })
    }

    fn assignment(&mut self) -> PResult<Assignment> {
        let column = self.ident()?;
        match self.peek().kind {
            Tok::LBracket => {
                self.bump();
                let key = self.term()?;
                self.expect(Tok::RBracket)?;
                self.expect(Tok::Eq)?;
                let value = self.term()?;
                Ok(Assignment::SetElement { column, key, value })
            }
            Tok::Dot => {
                self.bump();
                let field = self.ident()?;
                self.expect(Tok::Eq)?;
                let value = self.term()?;
                Ok(Assignment::SetField {
                    column,
                    field,
                    value,
                })
            }
            Tok::PlusEq => {
                self.bump();
                let value = self.term()?;
                Ok(Assignment::Add { column, value })
            }
            Tok::MinusEq => {
                self.bump();
                let value = self.term()?;
                Ok(Assignment::Subtract { column, value })
            }
            Tok::Eq => {
                self.bump();
                if !self.is_term_start(0) && self.is_ident_at(0) {
                    // `c = c + term` / `c = c - term`.
                    let other_tok = self.peek();
                    let other = self.ident()?;
                    let add = match self.peek().kind {
                        Tok::Plus => true,
                        Tok::Minus => false,
                        _ => return Err(self.no_viable()),
                    };
                    self.bump();
                    let value = self.term()?;
                    if other != column {
                        return Err(self.invalid(
                            other_tok,
                            "Only expressions of the form X = X +<value> are supported."
                                .to_string(),
                        ));
                    }
                    return Ok(if add {
                        Assignment::Add { column, value }
                    } else {
                        Assignment::Subtract { column, value }
                    });
                }
                let value = self.term()?;
                if self.at(Tok::Plus) && self.is_ident_at(1) {
                    // `c = term + c`: list prepend.
                    self.bump();
                    let other_tok = self.peek();
                    let other = self.ident()?;
                    if other != column {
                        return Err(self.invalid(
                            other_tok,
                            "Only expressions of the form X = <value> + X are supported."
                                .to_string(),
                        ));
                    }
                    return Ok(Assignment::Prepend { column, value });
                }
                Ok(Assignment::Set { column, value })
            }
            _ => Err(self.no_viable()),
        }
    }

    fn if_clause(&mut self) -> PResult<Option<IfClause>> {
        if !self.eat_kw("if") {
            return Ok(None);
        }
        if self.eat_kw("exists") {
            return Ok(Some(IfClause::Exists));
        }
        let mut conds = vec![self.condition()?];
        while self.eat_kw("and") {
            conds.push(self.condition()?);
        }
        Ok(Some(IfClause::Conditions(conds)))
    }

    fn condition(&mut self) -> PResult<Condition> {
        let column = self.ident()?;
        let target = self.element_or_field()?;
        let op = if self.eat_kw("in") {
            ConditionOp::In(self.in_values()?)
        } else {
            let op = self.relation_op()?;
            ConditionOp::Compare(op, self.term()?)
        };
        Ok(Condition { column, target, op })
    }

    fn element_or_field(&mut self) -> PResult<Option<ElementOrField>> {
        if self.eat(Tok::LBracket) {
            let key = self.term()?;
            self.expect(Tok::RBracket)?;
            Ok(Some(ElementOrField::Element(key)))
        } else if self.eat(Tok::Dot) {
            Ok(Some(ElementOrField::Field(self.ident()?)))
        } else {
            Ok(None)
        }
    }

    fn delete(&mut self) -> PResult<DeleteStatement> {
        self.expect_kw("delete")?;
        let targets = if self.at_kw("from") {
            Vec::new()
        } else {
            self.comma_list(|p| {
                let column = p.ident()?;
                let target = p.element_or_field()?;
                Ok(DeleteTarget { column, target })
            })?
        };
        self.expect_kw("from")?;
        let table = self.qualified_name()?;
        let using = self.using_clause()?;
        self.expect_kw("where")?;
        let where_clause = self.where_clause()?;
        let condition = self.if_clause()?;
        Ok(DeleteStatement {
            table,
            targets,
            using,
            where_clause,
            condition,
        })
    }

    fn batch(&mut self) -> PResult<BatchStatement> {
        self.expect_kw("begin")?;
        let kind = if self.eat_kw("unlogged") {
            BatchKind::Unlogged
        } else if self.eat_kw("counter") {
            BatchKind::Counter
        } else {
            BatchKind::Logged
        };
        self.expect_kw("batch")?;
        let using = self.using_clause()?;
        let mut statements = Vec::new();
        loop {
            while self.eat(Tok::Semi) {}
            if self.at_kw("apply") {
                break;
            }
            let s = if self.at_kw("insert") {
                ModificationStatement::Insert(self.insert()?)
            } else if self.at_kw("update") {
                ModificationStatement::Update(self.update()?)
            } else if self.at_kw("delete") {
                ModificationStatement::Delete(self.delete()?)
            } else {
                return Err(self.no_viable());
            };
            statements.push(s);
        }
        self.expect_kw("apply")?;
        self.expect_kw("batch")?;
        Ok(BatchStatement {
            kind,
            using,
            statements,
        })
    }

    // ---- DDL ---------------------------------------------------------------------------------

    fn create(&mut self) -> PResult<Statement> {
        self.expect_kw("create")?;
        if self.eat_kw("keyspace") {
            let if_not_exists = self.if_not_exists()?;
            let name = self.ident()?;
            self.expect_kw("with")?;
            let properties = self.properties()?;
            return Ok(Statement::CreateKeyspace(CreateKeyspace {
                name,
                if_not_exists,
                properties,
            }));
        }
        if self.eat_kw("table") || self.eat_kw("columnfamily") {
            return Ok(Statement::CreateTable(self.create_table()?));
        }
        if self.eat_kw("type") {
            let if_not_exists = self.if_not_exists()?;
            let name = self.qualified_name()?;
            self.expect(Tok::LParen)?;
            let fields = self.comma_list(|p| {
                let f = p.ident()?;
                Ok((f, p.cql_type()?))
            })?;
            self.expect(Tok::RParen)?;
            return Ok(Statement::CreateType(CreateType {
                name,
                if_not_exists,
                fields,
            }));
        }
        if self.at_kw("index") || (self.at_kw("custom") && self.kw_at_n(1, "index")) {
            return Ok(Statement::CreateIndex(self.create_index()?));
        }
        if self.eat_kw("role") {
            let if_not_exists = self.if_not_exists()?;
            let name = self.role_name()?;
            let options = if self.eat_kw("with") {
                self.role_options()?
            } else {
                RoleOptions::default()
            };
            return Ok(Statement::CreateRole(CreateRole {
                name,
                if_not_exists,
                is_user: false,
                options,
            }));
        }
        if self.eat_kw("user") {
            let if_not_exists = self.if_not_exists()?;
            let name = self.user_name()?;
            let options = self.user_options()?;
            return Ok(Statement::CreateRole(CreateRole {
                name,
                if_not_exists,
                is_user: true,
                options,
            }));
        }
        if self.at_kw("or") && self.kw_at_n(1, "replace") {
            self.pos += 2;
        }
        if self.at_kw("function") {
            return self.unsupported("CREATE FUNCTION");
        }
        if self.at_kw("aggregate") {
            return self.unsupported("CREATE AGGREGATE");
        }
        if self.at_kw("materialized") {
            return self.create_view();
        }
        if self.at_kw("trigger") {
            return self.unsupported("CREATE TRIGGER");
        }
        Err(self.no_viable())
    }

    fn create_table(&mut self) -> PResult<CreateTable> {
        let if_not_exists = self.if_not_exists()?;
        let name = self.qualified_name()?;
        self.expect(Tok::LParen)?;
        let mut columns = Vec::new();
        let mut key: Option<(Vec<String>, Vec<String>)> = None;
        let mut multiple_keys = false;
        loop {
            if self.at_kw("primary") {
                self.bump();
                self.expect_kw("key")?;
                self.expect(Tok::LParen)?;
                let partition = if self.eat(Tok::LParen) {
                    let v = self.comma_list(Self::ident)?;
                    self.expect(Tok::RParen)?;
                    v
                } else {
                    vec![self.ident()?]
                };
                let mut clustering = Vec::new();
                while self.eat(Tok::Comma) {
                    clustering.push(self.ident()?);
                }
                self.expect(Tok::RParen)?;
                multiple_keys |= key.is_some();
                key = Some((partition, clustering));
            } else {
                let col = self.ident()?;
                let ty = self.cql_type()?;
                let is_static = self.eat_kw("static");
                if self.eat_kw("primary") {
                    self.expect_kw("key")?;
                    multiple_keys |= key.is_some();
                    key = Some((vec![col.clone()], Vec::new()));
                }
                columns.push(ColumnDef {
                    name: col,
                    ty,
                    is_static,
                });
            }
            if !self.eat(Tok::Comma) || self.at(Tok::RParen) {
                break;
            }
        }
        let close = self.expect(Tok::RParen)?;
        let options = if self.eat_kw("with") {
            self.table_options()?
        } else {
            TableOptions::default()
        };
        if multiple_keys {
            return Err(self.invalid(
                close,
                "Multiple PRIMARY KEYs specified (exactly one required)".to_string(),
            ));
        }
        let Some((partition_key, clustering_columns)) = key else {
            return Err(self.invalid(
                close,
                format!(
                    "No PRIMARY KEY specifed for table '{}' (exactly one required)",
                    name.name
                ),
            ));
        };
        Ok(CreateTable {
            name,
            if_not_exists,
            columns,
            partition_key,
            clustering_columns,
            options,
        })
    }

    fn table_options(&mut self) -> PResult<TableOptions> {
        let mut o = TableOptions::default();
        loop {
            if self.at_kw("clustering") && self.kw_at_n(1, "order") {
                self.pos += 2;
                self.expect_kw("by")?;
                self.expect(Tok::LParen)?;
                o.clustering_order = self.comma_list(Self::ordering)?;
                self.expect(Tok::RParen)?;
            } else if self.at_kw("compact") && self.kw_at_n(1, "storage") {
                self.pos += 2;
                o.compact_storage = true;
            } else {
                let p = self.property()?;
                self.push_property(&mut o.properties, p)?;
            }
            if !self.eat_kw("and") {
                return Ok(o);
            }
        }
    }

    fn properties(&mut self) -> PResult<Vec<Property>> {
        let mut v = Vec::new();
        loop {
            let p = self.property()?;
            self.push_property(&mut v, p)?;
            if !self.eat_kw("and") {
                return Ok(v);
            }
        }
    }

    fn push_property(&self, props: &mut Vec<Property>, p: Property) -> PResult<()> {
        if props.iter().any(|q| q.name == p.name) {
            let t = self.toks[self.pos.saturating_sub(1)];
            return Err(ParseError::syntax_at(
                self.src,
                t.start as usize,
                format!("Multiple definition for property '{}'", p.name),
            ));
        }
        props.push(p);
        Ok(())
    }

    fn property(&mut self) -> PResult<Property> {
        let name = self.ident()?;
        self.expect(Tok::Eq)?;
        let value = if self.at(Tok::LBrace) {
            PropertyValue::Map(self.property_map()?)
        } else {
            PropertyValue::Literal(self.property_constant()?)
        };
        Ok(Property { name, value })
    }

    /// A constant property value; an unreserved word is taken as a string (Cassandra's
    /// `propertyValue: constant | unreserved_keyword`).
    fn property_constant(&mut self) -> PResult<Literal> {
        let t = self.peek();
        if t.kind == Tok::Ident && !is_term_keyword(self.text(t)) && !is_reserved(self.text(t)) {
            self.bump();
            return Ok(Literal::String(self.text(t).to_string()));
        }
        let literal_start = matches!(
            t.kind,
            Tok::Str
                | Tok::DollarStr
                | Tok::Integer
                | Tok::Float
                | Tok::Uuid
                | Tok::Hex
                | Tok::Duration
                | Tok::Minus
                | Tok::Ident
        );
        if !literal_start {
            return Err(self.no_viable());
        }
        match self.term_unary()? {
            Term::Literal(l) => Ok(l),
            _ => Err(self.no_viable()),
        }
    }

    fn property_map(&mut self) -> PResult<Vec<(String, String)>> {
        self.expect(Tok::LBrace)?;
        let mut entries = Vec::new();
        if self.eat(Tok::RBrace) {
            return Ok(entries);
        }
        loop {
            let k = literal_text(self.property_constant()?);
            self.expect(Tok::Colon)?;
            let v = literal_text(self.property_constant()?);
            entries.push((k, v));
            if !self.eat(Tok::Comma) {
                break;
            }
        }
        self.expect(Tok::RBrace)?;
        Ok(entries)
    }

    fn create_index(&mut self) -> PResult<CreateIndex> {
        let custom = self.eat_kw("custom");
        self.expect_kw("index")?;
        let if_not_exists = self.if_not_exists()?;
        let name = if self.at_kw("on") {
            None
        } else {
            Some(self.ident()?)
        };
        self.expect_kw("on")?;
        let table = self.qualified_name()?;
        self.expect(Tok::LParen)?;
        let targets = if self.at(Tok::RParen) {
            Vec::new()
        } else {
            self.comma_list(Self::index_target)?
        };
        self.expect(Tok::RParen)?;
        let mut custom_class = None;
        if self.eat_kw("using") {
            custom_class = Some(self.string_literal()?);
        }
        let mut options = Vec::new();
        if self.eat_kw("with") {
            options = self.properties()?;
        }
        if custom && custom_class.is_none() {
            return Err(self.mismatched("K_USING"));
        }
        Ok(CreateIndex {
            name,
            table,
            if_not_exists,
            targets,
            custom_class,
            options,
        })
    }

    fn index_target(&mut self) -> PResult<IndexTarget> {
        if self.at_n(1, Tok::LParen) {
            let t = self.peek();
            let w = self.text(t);
            let kind = if w.eq_ignore_ascii_case("keys") {
                Some(IndexTargetKind::Keys)
            } else if w.eq_ignore_ascii_case("values") {
                Some(IndexTargetKind::Values)
            } else if w.eq_ignore_ascii_case("entries") {
                Some(IndexTargetKind::Entries)
            } else if w.eq_ignore_ascii_case("full") {
                Some(IndexTargetKind::Full)
            } else {
                None
            };
            if let (Tok::Ident, Some(kind)) = (t.kind, kind) {
                self.pos += 2;
                let column = self.ident()?;
                self.expect(Tok::RParen)?;
                return Ok(IndexTarget { column, kind });
            }
        }
        Ok(IndexTarget {
            column: self.ident()?,
            kind: IndexTargetKind::Simple,
        })
    }

    fn role_options(&mut self) -> PResult<RoleOptions> {
        let mut o = RoleOptions::default();
        loop {
            let at = self.peek();
            let seen = |name: &str| {
                ParseError::syntax_at(
                    self.src,
                    at.start as usize,
                    format!("Multiple definition for property '{name}'"),
                )
            };
            let word = self.text(at).to_ascii_lowercase();
            let (name, set) = match word.as_str() {
                "password" => ("PASSWORD", o.password.is_some()),
                "hashed" => ("HASHED_PASSWORD", o.hashed_password.is_some()),
                "login" => ("LOGIN", o.login.is_some()),
                "superuser" => ("SUPERUSER", o.superuser.is_some()),
                "options" => ("OPTIONS", o.options.is_some()),
                _ => ("", false),
            };
            if set {
                return Err(seen(name));
            }
            if self.eat_kw("password") {
                self.expect(Tok::Eq)?;
                o.password = Some(self.string_literal()?);
            } else if self.eat_kw("hashed") {
                self.expect_kw("password")?;
                self.expect(Tok::Eq)?;
                o.hashed_password = Some(self.string_literal()?);
            } else if self.eat_kw("login") {
                self.expect(Tok::Eq)?;
                o.login = Some(self.boolean()?);
            } else if self.eat_kw("superuser") {
                self.expect(Tok::Eq)?;
                o.superuser = Some(self.boolean()?);
            } else if self.eat_kw("options") {
                self.expect(Tok::Eq)?;
                o.options = Some(self.property_map()?);
            } else if self.eat_kw("access") {
                self.expect_kw("to")?;
                if self.eat_kw("all") {
                    self.expect_kw("datacenters")?;
                    o.datacenters = Some(DatacenterAccess::All);
                } else {
                    self.expect_kw("datacenters")?;
                    self.expect(Tok::LBrace)?;
                    let dcs = self.comma_list(Self::string_literal)?;
                    self.expect(Tok::RBrace)?;
                    o.datacenters = Some(DatacenterAccess::Only(dcs));
                }
            } else {
                return Err(self.no_viable());
            }
            if !self.eat_kw("and") {
                return Ok(o);
            }
        }
    }

    /// `[WITH [HASHED] PASSWORD 'p'] [SUPERUSER | NOSUPERUSER]` of CREATE/ALTER USER.
    fn user_options(&mut self) -> PResult<RoleOptions> {
        let mut o = RoleOptions {
            login: Some(true),
            ..RoleOptions::default()
        };
        if self.eat_kw("with") {
            if self.eat_kw("hashed") {
                self.expect_kw("password")?;
                o.hashed_password = Some(self.string_literal()?);
            } else {
                self.expect_kw("password")?;
                o.password = Some(self.string_literal()?);
            }
        }
        if self.eat_kw("superuser") {
            o.superuser = Some(true);
        } else if self.eat_kw("nosuperuser") {
            o.superuser = Some(false);
        }
        Ok(o)
    }

    fn boolean(&mut self) -> PResult<bool> {
        if self.eat_kw("true") {
            Ok(true)
        } else if self.eat_kw("false") {
            Ok(false)
        } else {
            Err(self.mismatched("BOOLEAN"))
        }
    }

    fn alter(&mut self) -> PResult<Statement> {
        self.expect_kw("alter")?;
        if self.eat_kw("keyspace") {
            let if_exists = self.if_exists()?;
            let name = self.ident()?;
            self.expect_kw("with")?;
            let properties = self.properties()?;
            return Ok(Statement::AlterKeyspace(AlterKeyspace {
                name,
                if_exists,
                properties,
            }));
        }
        if self.eat_kw("table") || self.eat_kw("columnfamily") {
            let if_exists = self.if_exists()?;
            let name = self.qualified_name()?;
            let action = self.alter_table_action()?;
            return Ok(Statement::AlterTable(AlterTable {
                name,
                if_exists,
                action,
            }));
        }
        if self.eat_kw("type") {
            let if_exists = self.if_exists()?;
            let name = self.qualified_name()?;
            let action = if self.eat_kw("add") {
                let if_not_exists = self.if_not_exists()?;
                let field = self.ident()?;
                let ty = self.cql_type()?;
                AlterTypeAction::Add {
                    if_not_exists,
                    field,
                    ty,
                }
            } else if self.eat_kw("rename") {
                let if_exists = self.if_exists()?;
                AlterTypeAction::Rename {
                    if_exists,
                    renames: self.renames()?,
                }
            } else {
                return Err(self.no_viable());
            };
            return Ok(Statement::AlterType(AlterType {
                name,
                if_exists,
                action,
            }));
        }
        if self.eat_kw("role") {
            let if_exists = self.if_exists()?;
            let name = self.role_name()?;
            // `WITH` is optional in Cassandra's grammar; without it the statement is empty,
            // which the executor refuses as Cassandra does.
            let options = if self.eat_kw("with") {
                self.role_options()?
            } else {
                RoleOptions::default()
            };
            return Ok(Statement::AlterRole(AlterRole {
                name,
                if_exists,
                is_user: false,
                options,
            }));
        }
        if self.eat_kw("user") {
            let if_exists = self.if_exists()?;
            let name = self.user_name()?;
            let mut options = self.user_options()?;
            options.login = None;
            return Ok(Statement::AlterRole(AlterRole {
                name,
                if_exists,
                is_user: true,
                options,
            }));
        }
        if self.at_kw("materialized") {
            return self.alter_view();
        }
        Err(self.no_viable())
    }

    fn alter_table_action(&mut self) -> PResult<AlterTableAction> {
        if self.eat_kw("add") {
            let if_not_exists = self.if_not_exists()?;
            let column_def = |p: &mut Self| -> PResult<ColumnDef> {
                let name = p.ident()?;
                let ty = p.cql_type()?;
                let is_static = p.eat_kw("static");
                Ok(ColumnDef {
                    name,
                    ty,
                    is_static,
                })
            };
            let columns = if self.eat(Tok::LParen) {
                let v = self.comma_list(column_def)?;
                self.expect(Tok::RParen)?;
                v
            } else {
                vec![column_def(self)?]
            };
            return Ok(AlterTableAction::Add {
                if_not_exists,
                columns,
            });
        }
        if self.at_kw("drop") && self.kw_at_n(1, "compact") && self.kw_at_n(2, "storage") {
            self.pos += 3;
            return Ok(AlterTableAction::DropCompactStorage);
        }
        if self.eat_kw("drop") {
            let if_exists = self.if_exists()?;
            let columns = if self.eat(Tok::LParen) {
                let v = self.comma_list(Self::ident)?;
                self.expect(Tok::RParen)?;
                v
            } else {
                vec![self.ident()?]
            };
            let mut timestamp = None;
            if self.eat_kw("using") {
                self.expect_kw("timestamp")?;
                timestamp = Some(self.term()?);
            }
            return Ok(AlterTableAction::Drop {
                if_exists,
                columns,
                timestamp,
            });
        }
        if self.eat_kw("rename") {
            let if_exists = self.if_exists()?;
            return Ok(AlterTableAction::Rename {
                if_exists,
                renames: self.renames()?,
            });
        }
        if self.eat_kw("with") {
            return Ok(AlterTableAction::With(self.table_options()?));
        }
        if self.eat_kw("alter") {
            let column = self.ident()?;
            self.expect_kw("type")?;
            let ty = self.cql_type()?;
            return Ok(AlterTableAction::AlterColumnType { column, ty });
        }
        Err(self.no_viable())
    }

    fn renames(&mut self) -> PResult<Vec<(String, String)>> {
        let mut v = Vec::new();
        loop {
            let from = self.ident()?;
            self.expect_kw("to")?;
            let to = self.ident()?;
            v.push((from, to));
            if !self.eat_kw("and") {
                return Ok(v);
            }
        }
    }

    fn drop(&mut self) -> PResult<Statement> {
        self.expect_kw("drop")?;
        if self.eat_kw("keyspace") {
            let if_exists = self.if_exists()?;
            let name = self.ident()?;
            return Ok(Statement::DropKeyspace { name, if_exists });
        }
        if self.eat_kw("table") || self.eat_kw("columnfamily") {
            let if_exists = self.if_exists()?;
            let name = self.qualified_name()?;
            return Ok(Statement::DropTable { name, if_exists });
        }
        if self.eat_kw("type") {
            let if_exists = self.if_exists()?;
            let name = self.qualified_name()?;
            return Ok(Statement::DropType { name, if_exists });
        }
        if self.eat_kw("index") {
            let if_exists = self.if_exists()?;
            let name = self.qualified_name()?;
            return Ok(Statement::DropIndex { name, if_exists });
        }
        let is_user = if self.eat_kw("role") {
            Some(false)
        } else if self.eat_kw("user") {
            Some(true)
        } else {
            None
        };
        if let Some(is_user) = is_user {
            let if_exists = self.if_exists()?;
            let name = if is_user {
                self.user_name()?
            } else {
                self.role_name()?
            };
            return Ok(Statement::DropRole {
                name,
                if_exists,
                is_user,
            });
        }
        if self.at_kw("function") {
            return self.unsupported("DROP FUNCTION");
        }
        if self.at_kw("aggregate") {
            return self.unsupported("DROP AGGREGATE");
        }
        if self.at_kw("materialized") {
            return self.drop_view();
        }
        if self.at_kw("trigger") {
            return self.unsupported("DROP TRIGGER");
        }
        Err(self.no_viable())
    }

    // ---- Roles and permissions ----------------------------------------------------------------

    fn permission_word(&self, n: usize) -> Option<Permission> {
        let t = self.peek_n(n);
        if t.kind != Tok::Ident {
            return None;
        }
        let w = self.text(t).to_ascii_lowercase();
        Some(match w.as_str() {
            "create" => Permission::Create,
            "alter" => Permission::Alter,
            "drop" => Permission::Drop,
            "select" => Permission::Select,
            "modify" => Permission::Modify,
            "authorize" => Permission::Authorize,
            "describe" => Permission::Describe,
            "execute" => Permission::Execute,
            "unmask" => Permission::Unmask,
            "select_masked" => Permission::SelectMasked,
            _ => return None,
        })
    }

    /// True if a permission list (rather than a role name) starts here.
    fn at_permissions(&self) -> bool {
        if self.at_kw("all") {
            return self.kw_at_n(1, "permissions") || self.kw_at_n(1, "on");
        }
        self.permission_word(0).is_some()
    }

    fn permissions(&mut self) -> PResult<Vec<Permission>> {
        if self.eat_kw("all") {
            self.eat_kw("permissions");
            return Ok(vec![Permission::All]);
        }
        let mut v = Vec::new();
        loop {
            let p = self.permission_word(0).ok_or_else(|| self.no_viable())?;
            self.bump();
            if !self.eat_kw("permission") {
                self.eat_kw("permissions");
            }
            v.push(p);
            if !self.eat(Tok::Comma) {
                return Ok(v);
            }
        }
    }

    fn resource(&mut self) -> PResult<Resource> {
        if self.eat_kw("all") {
            if self.eat_kw("keyspaces") {
                return Ok(Resource::AllKeyspaces);
            }
            if self.eat_kw("roles") {
                return Ok(Resource::AllRoles);
            }
            if self.eat_kw("mbeans") {
                return Ok(Resource::AllMBeans);
            }
            if self.eat_kw("tables") {
                self.expect_kw("in")?;
                self.expect_kw("keyspace")?;
                return Ok(Resource::AllTables(self.ident()?));
            }
            if self.eat_kw("functions") {
                let mut keyspace = None;
                if self.eat_kw("in") {
                    self.expect_kw("keyspace")?;
                    keyspace = Some(self.ident()?);
                }
                return Ok(Resource::AllFunctions { keyspace });
            }
            return Err(self.no_viable());
        }
        if self.eat_kw("keyspace") {
            return Ok(Resource::Keyspace(self.ident()?));
        }
        if self.eat_kw("role") {
            return Ok(Resource::Role(self.role_name()?));
        }
        if (self.at_kw("mbean") || self.at_kw("mbeans"))
            && matches!(self.peek_n(1).kind, Tok::Str | Tok::DollarStr)
        {
            self.bump();
            return Ok(Resource::MBean(self.string_literal()?));
        }
        if self.at_kw("function") && !self.at_n(1, Tok::Eof) && !self.kw_at_n(1, "to") {
            self.bump();
            let name = self.function_name()?;
            self.expect(Tok::LParen)?;
            let arg_types = if self.at(Tok::RParen) {
                Vec::new()
            } else {
                self.comma_list(Self::cql_type)?
            };
            self.expect(Tok::RParen)?;
            return Ok(Resource::Function { name, arg_types });
        }
        if self.at_kw("table") || self.at_kw("columnfamily") {
            self.bump();
        }
        Ok(Resource::Table(self.qualified_name()?))
    }

    fn grant(&mut self) -> PResult<Statement> {
        self.expect_kw("grant")?;
        if self.at_permissions() {
            let permissions = self.permissions()?;
            self.expect_kw("on")?;
            let resource = self.resource()?;
            self.expect_kw("to")?;
            let role = self.role_name()?;
            return Ok(Statement::GrantPermissions(PermissionChange {
                permissions,
                resource,
                role,
            }));
        }
        let role = self.role_name()?;
        self.expect_kw("to")?;
        let grantee = self.role_name()?;
        Ok(Statement::GrantRole { role, grantee })
    }

    fn revoke(&mut self) -> PResult<Statement> {
        self.expect_kw("revoke")?;
        if self.at_permissions() {
            let permissions = self.permissions()?;
            self.expect_kw("on")?;
            let resource = self.resource()?;
            self.expect_kw("from")?;
            let role = self.role_name()?;
            return Ok(Statement::RevokePermissions(PermissionChange {
                permissions,
                resource,
                role,
            }));
        }
        let role = self.role_name()?;
        self.expect_kw("from")?;
        let revokee = self.role_name()?;
        Ok(Statement::RevokeRole { role, revokee })
    }

    fn list(&mut self) -> PResult<Statement> {
        self.expect_kw("list")?;
        if self.eat_kw("roles") {
            let of = if self.eat_kw("of") {
                Some(self.role_name()?)
            } else {
                None
            };
            let recursive = !self.eat_kw("norecursive");
            return Ok(Statement::ListRoles { of, recursive });
        }
        if self.eat_kw("users") {
            return Ok(Statement::ListUsers);
        }
        let permissions = self.permissions()?;
        let resource = if self.eat_kw("on") {
            Some(self.resource()?)
        } else {
            None
        };
        let of = if self.eat_kw("of") {
            Some(self.role_name()?)
        } else {
            None
        };
        let recursive = !self.eat_kw("norecursive");
        Ok(Statement::ListPermissions {
            permissions,
            resource,
            of,
            recursive,
        })
    }

    // ---- DESCRIBE ----------------------------------------------------------------------------

    fn describe(&mut self) -> PResult<DescribeStatement> {
        self.bump(); // DESCRIBE | DESC
        let target = self.describe_target()?;
        let with_internals = if self.at_kw("with") && self.kw_at_n(1, "internals") {
            self.pos += 2;
            true
        } else {
            false
        };
        Ok(DescribeStatement {
            target,
            with_internals,
        })
    }

    /// True if the next token ends the DESCRIBE target (so a keyword stands alone).
    fn describe_ends_at(&self, n: usize) -> bool {
        matches!(self.peek_n(n).kind, Tok::Eof | Tok::Semi) || self.kw_at_n(n, "with")
    }

    fn describe_target(&mut self) -> PResult<DescribeTarget> {
        let single = |p: &Self, kw: &str| p.at_kw(kw) && p.describe_ends_at(1);
        if single(self, "cluster") {
            self.bump();
            return Ok(DescribeTarget::Cluster);
        }
        if self.at_kw("full") || self.at_kw("schema") {
            let full = self.eat_kw("full");
            self.expect_kw("schema")?;
            return Ok(DescribeTarget::Schema { full });
        }
        if single(self, "keyspaces") {
            self.bump();
            return Ok(DescribeTarget::Keyspaces);
        }
        if (self.at_kw("only") && self.kw_at_n(1, "keyspace")) || self.at_kw("keyspace") {
            let only = self.eat_kw("only");
            self.expect_kw("keyspace")?;
            let name = if self.describe_ends_at(0) {
                None
            } else {
                Some(self.ident()?)
            };
            return Ok(DescribeTarget::Keyspace { name, only });
        }
        if self.eat_kw("table") || self.eat_kw("columnfamily") {
            return Ok(DescribeTarget::Table(self.qualified_name()?));
        }
        if self.eat_kw("index") {
            return Ok(DescribeTarget::Index(self.qualified_name()?));
        }
        if self.eat_kw("materialized") {
            self.expect_kw("view")?;
            return Ok(DescribeTarget::MaterializedView(self.qualified_name()?));
        }
        for (kw, t) in [
            ("tables", DescribeTarget::Tables),
            ("types", DescribeTarget::Types),
            ("functions", DescribeTarget::Functions),
            ("aggregates", DescribeTarget::Aggregates),
        ] {
            if single(self, kw) {
                self.bump();
                return Ok(t);
            }
        }
        if self.at_kw("type") && !self.describe_ends_at(1) && !self.at_n(1, Tok::Dot) {
            self.bump();
            return Ok(DescribeTarget::Type(self.qualified_name()?));
        }
        if self.at_kw("function") && !self.describe_ends_at(1) && !self.at_n(1, Tok::Dot) {
            self.bump();
            return Ok(DescribeTarget::Function(self.function_name()?));
        }
        if self.at_kw("aggregate") && !self.describe_ends_at(1) && !self.at_n(1, Tok::Dot) {
            self.bump();
            return Ok(DescribeTarget::Aggregate(self.function_name()?));
        }
        Ok(DescribeTarget::Name(self.qualified_name()?))
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
