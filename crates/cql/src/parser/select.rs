//! `SELECT`: modifiers, selectors (with arithmetic, casts, element and field selection), and the
//! `WHERE` clause's relations shared by every statement that has one.

use super::*;

impl Parser<'_> {
    // ---- SELECT ------------------------------------------------------------------------------

    /// `JSON` / `DISTINCT` are unreserved: they are modifiers only if a selector follows.
    pub(super) fn select_modifier_applies(&mut self) -> bool {
        let n = self.peek_n(1);
        match n.kind {
            // Cassandra's `(K_JSON selectClause)=>`: a modifier when a selection follows, so
            // `json[k]` is JSON of the list `[k]`, `json(k)` of `(k)`, and `json[1..2]` a
            // slice of a column `json`.
            Tok::LBracket | Tok::LParen => {
                let (pos, depth, binds, far, last_term) = (
                    self.pos,
                    self.depth,
                    self.binds.len(),
                    self.far,
                    self.last_term,
                );
                self.bump();
                let parses = self.comma_list(Self::selector).is_ok();
                self.pos = pos;
                self.depth = depth;
                self.binds.truncate(binds);
                self.far = far;
                self.last_term = last_term;
                parses
            }
            Tok::Comma | Tok::Dot | Tok::Eof => false,
            Tok::Ident => {
                let w = self.text(n);
                !(w.eq_ignore_ascii_case("from") || w.eq_ignore_ascii_case("as"))
            }
            _ => true,
        }
    }

    pub(super) fn select(&mut self) -> PResult<SelectStatement> {
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
            let mut last = self.pos;
            let selectors = self.comma_list(|p| {
                last = p.pos;
                p.selector()
            })?;
            if !self.at_kw("from") {
                if let Some(e) = self.element_selection_error(last, &selectors[selectors.len() - 1])
                {
                    return Err(e);
                }
            }
            Selection::Selectors(selectors)
        };
        self.expect_kw("from")?;
        let table = self.table_name()?;
        let where_clause = if self.eat_kw("where") {
            self.where_clause()?
        } else {
            Vec::new()
        };
        let mut group_by = Vec::new();
        if self.eat_kw("group") {
            self.expect_kw("by")?;
            self.in_group_by = true;
            let r = self.comma_list(Self::selector_expr);
            self.in_group_by = false;
            group_by = r?;
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
            per_partition_limit = Some(self.int_value()?);
        }
        let limit = if self.eat_kw("limit") {
            Some(self.int_value()?)
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

    /// A selection whose last selector is an element or slice selection on a name (`l[1]`,
    /// `m['a'][2]`, `l[1..2]`), followed by a token that neither goes on nor ends the
    /// selection: Cassandra's prediction backs out of the selection there and expects FROM
    /// right after the name ("mismatched input '[' expecting K_FROM (SELECT l[[]1]...)", the
    /// snippet reaching two tokens past the `[`). `start`: the selector's first token.
    fn element_selection_error(&self, start: usize, last: &Selector) -> Option<ParseError> {
        let chain = matches!(
            last.expr,
            SelectorExpr::Element { .. } | SelectorExpr::Slice { .. }
        );
        let (name, bracket) = (self.toks[start], *self.toks.get(start + 1)?);
        if last.alias.is_some()
            || !chain
            || !matches!(name.kind, Tok::Ident | Tok::QuotedIdent)
            || bracket.kind != Tok::LBracket
        {
            return None;
        }
        Some(ParseError::syntax_at(
            self.src,
            bracket.start as usize,
            format!(
                "mismatched input '[' expecting K_FROM{}",
                self.snippet_at(start + 1)
            ),
        ))
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

    pub(super) fn selector(&mut self) -> PResult<Selector> {
        let expr = self.selector_expr()?;
        let alias = if self.eat_kw("as") {
            Some(self.ident()?)
        } else {
            None
        };
        Ok(Selector { expr, alias })
    }

    pub(super) fn selector_expr(&mut self) -> PResult<SelectorExpr> {
        self.enter()?;
        let r = self.selector_add();
        self.leave();
        r
    }

    pub(super) fn selector_add(&mut self) -> PResult<SelectorExpr> {
        self.left_assoc(add_op, Self::selector_mul, |_| true, selector_op)
    }

    pub(super) fn selector_mul(&mut self) -> PResult<SelectorExpr> {
        self.left_assoc(mul_op, Self::selector_postfix, |_| true, selector_op)
    }

    pub(super) fn selector_postfix(&mut self) -> PResult<SelectorExpr> {
        let start = self.pos;
        let e = self.selector_primary()?;
        self.predict_selector_group(start, &e)?;
        let hinted = (self.toks[start].kind == Tok::LParen
            && matches!(e, SelectorExpr::TypeHint { .. } | SelectorExpr::Cast { .. }))
            || matches!(e, SelectorExpr::Function { .. })
            || matches!(e, SelectorExpr::Column(_));
        let column = matches!(e, SelectorExpr::Column(_));
        let depth = self.depth;
        let chain = self.pos;
        let r = self.selector_postfix_chain(e);
        self.depth = depth;
        if hinted && self.pos > chain {
            // Cassandra takes a field or element selection after a type hint, a call or a
            // name's field only when what follows it may follow a selector: otherwise it backs
            // out to what the selection applies to and fails at the selection's first token
            // ("mismatched input '[' expecting K_FROM (SELECT (int) x[[]1]...)" for
            // `(int) x[1] y`, `abs(x)[1] y`, `u.f.g y`).
            let fits = r.is_ok() && {
                let n = self.peek();
                closes_or_operates(n.kind)
                    || (n.kind == Tok::Ident
                        && self.is_one_of(n, &["from", "as", "limit", "order", "per", "allow"]))
            };
            if !fits {
                // A name with one field selection fails the choice of what the selector
                // starts: "no viable alternative at input 'y' (SELECT [u].f...)".
                let one_field = matches!(&r, Ok(SelectorExpr::Field { expr, .. })
                    if matches!(**expr, SelectorExpr::Column(_)));
                if column && one_field {
                    return Err(self.no_viable_from(start));
                }
                // Cassandra's look-ahead has read the selection through (the snippet shows it).
                self.far = self.far.max(self.pos);
                self.pos = chain;
                let expecting = self.after_selector();
                let t = self.peek();
                return Err(ParseError::syntax_at(
                    self.src,
                    t.start as usize,
                    format!(
                        "mismatched input '{}' expecting {expecting}{}",
                        self.token_display(t),
                        self.snippet_at(chain)
                    ),
                ));
            }
        }
        r
    }

    /// What Cassandra's parser expects after a selector it backs out of: `)` in a call's
    /// arguments, the end of the statement in a GROUP BY, else FROM.
    fn after_selector(&self) -> &'static str {
        if self.in_call > 0 {
            "')'"
        } else if self.in_group_by {
            "EOF"
        } else {
            "K_FROM"
        }
    }

    /// What Cassandra's parser does when it chooses what a selector's first token starts
    /// (its `selectionGroup` decision, which looks ahead): after a bare name or a `?` it reads
    /// the next token and fails there unless a selector can go on or end with it ("no viable
    /// alternative at input '>' (SELECT [k] >...)", also inside calls, operations and
    /// negations), and reads one token more when it can (`.` must be followed by a field
    /// name); after a constant it reads two tokens, whatever they are. Those reads show in
    /// the snippet of a later error (`(SELECT k + 1 [>] 2...)`; none when they reached the
    /// end of the text).
    fn predict_selector_group(&mut self, start: usize, e: &SelectorExpr) -> PResult<()> {
        let first = self.toks[start];
        let one_token = self.pos == start + 1;
        let bare = one_token
            && match e {
                SelectorExpr::Column(_) => true,
                SelectorExpr::Term(Term::Bind(_)) => first.kind == Tok::QMark,
                _ => false,
            };
        if bare {
            let next = self.peek();
            let goes_on = match next.kind {
                Tok::LParen | Tok::LBracket | Tok::Dot => true,
                Tok::Ident => {
                    self.is_one_of(next, &["from", "as", "limit", "order", "per", "allow"])
                }
                k => closes_or_operates(k),
            };
            if !goes_on {
                return Err(self.no_viable_from(start));
            }
            if next.kind == Tok::Dot && !self.is_ident_at(1) {
                self.bump();
                let err = self.no_viable_from(start);
                self.pos -= 1;
                return Err(err);
            }
            self.look_ahead(1);
        } else if matches!(e, SelectorExpr::Term(Term::Literal(_))) && first.kind != Tok::LParen {
            self.look_ahead(1);
        }
        Ok(())
    }

    /// `.field`, `[key]`, `[a..b]` after a selector; each counts as a nesting level. A name
    /// as an element or bound after a column (`l[v]`, not a term) makes Cassandra's
    /// prediction back out to the column: it fails at the first `[` wanting what follows a
    /// selector ("mismatched input '[' expecting K_FROM (SELECT l[[]v]...)", `')'` in a
    /// function's arguments).
    pub(super) fn selector_postfix_chain(&mut self, mut e: SelectorExpr) -> PResult<SelectorExpr> {
        let chain = self.pos;
        let on_column = matches!(e, SelectorExpr::Column(_)) && self.at(Tok::LBracket);
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
                if on_column && self.at_bare_name() {
                    self.look_ahead(1);
                    let expecting = self.after_selector();
                    let bracket = self.toks[chain];
                    return Err(ParseError::syntax_at(
                        self.src,
                        bracket.start as usize,
                        format!(
                            "mismatched input '[' expecting {expecting}{}",
                            self.snippet_at(chain)
                        ),
                    ));
                }
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

    pub(super) fn selector_primary(&mut self) -> PResult<SelectorExpr> {
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
                                if self.at(Tok::Dot) {
                                    let mut fields = Vec::new();
                                    while self.eat(Tok::Dot) {
                                        fields.push(self.ident()?);
                                    }
                                    self.expect(Tok::RParen)?;
                                    return Ok(SelectorExpr::FieldTime {
                                        func,
                                        column: c,
                                        fields,
                                    });
                                }
                                if self.eat(Tok::LBracket) {
                                    let from = if self.at(Tok::Range) {
                                        None
                                    } else {
                                        Some(self.term()?)
                                    };
                                    let e = if self.eat(Tok::Range) {
                                        let to = if self.at(Tok::RBracket) {
                                            // `c[..]` names no bound: Cassandra's grammar
                                            // has no such slice.
                                            if from.is_none() {
                                                return Err(self.no_viable());
                                            }
                                            None
                                        } else {
                                            Some(self.term()?)
                                        };
                                        SelectorExpr::SliceTime {
                                            func,
                                            column: c,
                                            from,
                                            to,
                                        }
                                    } else {
                                        SelectorExpr::ElementTime {
                                            func,
                                            column: c,
                                            key: from.ok_or_else(|| self.no_viable())?,
                                        }
                                    };
                                    self.expect(Tok::RBracket)?;
                                    self.expect(Tok::RParen)?;
                                    return Ok(e);
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
                                let ty = self.cast_target()?;
                                return Ok(SelectorExpr::Cast {
                                    expr: Box::new(expr),
                                    ty,
                                    call: true,
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
            Tok::LParen if self.is_type_hint() => {
                let close = match self.at_n(2, Tok::Lt) || self.at_n(2, Tok::Dot) {
                    true => self.type_hint_close(),
                    false => 2,
                };
                // A type with `<` that no `)` closes (`(frozen<int>>) x`) is no hint either:
                // the parentheses' reading fails at the `<`.
                if self.at_n(2, Tok::Lt) && !self.at_n(close, Tok::RParen) {
                    self.look_ahead(3);
                    self.pos += 2;
                    return Err(self.no_viable_from(self.pos - 1));
                }
                if let Some((fits, read)) = self.hinted_name(close + 1) {
                    self.look_ahead(read);
                    // Not a hint, a type with `<` is no selector: the parentheses' reading
                    // fails at the `<` ("no viable alternative at input '<' (SELECT
                    // ([list]<int...)").
                    if !fits && self.at_n(2, Tok::Lt) {
                        self.pos += 2;
                        return Err(self.no_viable_from(self.pos - 1));
                    }
                }
                if self.is_selector_type_hint() {
                    return self.selector_type_hint_or_parens();
                }
                self.parenthesized_selector()
            }
            Tok::LParen if self.is_selector_type_hint() => self.selector_type_hint_or_parens(),
            // `(selector)`: parentheses around an expression; otherwise a tuple term, or a
            // tuple of selectors.
            Tok::LParen => self.parenthesized_selector(),
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
            // one operand is read here. Inside it (a literal list, set, map or tuple) the
            // items are selectors in Cassandra's grammar: see `Parser::in_selector`.
            Tok::LBracket | Tok::LBrace => self.term_or_selector_collection(),
            _ => {
                self.in_selector += 1;
                let r = self.term_unary();
                self.in_selector -= 1;
                Ok(SelectorExpr::Term(r?))
            }
        }
    }

    /// `(type) selector` where the look-ahead chose a hint, as Cassandra's parser takes it: a
    /// syntactic predicate parses the hinted selector first, and when that fails (`(int) x.f (`
    /// reads no call) the parentheses are a selector of their own (the column `int`), the
    /// statement failing after them ("mismatched input 'x' expecting K_FROM"). The tokens the
    /// predicate fetched stay fetched (a later snippet reaches them).
    fn selector_type_hint_or_parens(&mut self) -> PResult<SelectorExpr> {
        let (pos, depth, binds, deferred) = (
            self.pos,
            self.depth,
            self.binds.len(),
            self.deferred.clone(),
        );
        match self.selector_type_hint() {
            Err(e) if e.kind == crate::error::ParseErrorKind::Syntax => {
                let far = self.far.max(self.pos);
                self.pos = pos;
                self.depth = depth;
                self.binds.truncate(binds);
                self.deferred = deferred;
                self.far = far;
                match self.parenthesized_selector() {
                    Ok(sel) => Ok(sel),
                    Err(_) => Err(e),
                }
            }
            r => r,
        }
    }

    /// `(type) selector`: a cast in Cassandra's grammar.
    fn selector_type_hint(&mut self) -> PResult<SelectorExpr> {
        // `(type) selector` is a cast in Cassandra's grammar.
        self.bump();
        let ty = self.cql_type_as_written()?;
        self.expect(Tok::RParen)?;
        // Cassandra parses what a hint applies to without its look-ahead, and without
        // a field or element selection after it: `(text)m[1]` selects from `(text)m`.
        // A hint of a hint or of parentheses (`(int) (int) x y`) keeps the look-ahead of
        // the inner choice between them, which Cassandra's predicate makes too.
        let nested = self.at(Tok::LParen);
        let far = self.far;
        let depth = self.depth;
        let expr = self.selector_primary()?;
        self.depth = depth;
        if !nested {
            self.far = far;
        }
        if !matches!(expr, SelectorExpr::Term(_)) {
            return Ok(SelectorExpr::TypeHint {
                ty,
                expr: Box::new(expr),
            });
        }
        Ok(SelectorExpr::Cast {
            expr: Box::new(expr),
            ty,
            call: false,
        })
    }

    /// `(selector)`: parentheses around an expression; otherwise a tuple term, or a tuple of
    /// selectors.
    fn parenthesized_selector(&mut self) -> PResult<SelectorExpr> {
        let (pos, depth, binds) = (self.pos, self.depth, self.binds.len());
        self.bump();
        if let Ok(e) = self.selector_expr() {
            if self.eat(Tok::RParen) {
                return Ok(SelectorExpr::Parens(Box::new(e)));
            }
        }
        self.pos = pos;
        self.depth = depth;
        self.binds.truncate(binds);
        self.term_or_selector_collection()
    }

    /// A literal list, set, map or tuple in selector position: a term when its items all
    /// are, else (`[v, 3]`) a collection of selectors, as Cassandra's grammar reads its items
    /// as selectors. When neither reads, the term's error.
    fn term_or_selector_collection(&mut self) -> PResult<SelectorExpr> {
        let (pos, depth, binds, far) = (self.pos, self.depth, self.binds.len(), self.far);
        self.in_selector += 1;
        let term = self.term_unary();
        self.in_selector -= 1;
        let err = match term {
            Ok(t) => return Ok(SelectorExpr::Term(t)),
            Err(e) => e,
        };
        let (err_pos, err_depth, err_far) = (self.pos, self.depth, self.far);
        self.pos = pos;
        self.depth = depth;
        self.binds.truncate(binds);
        self.far = far;
        match self.selector_collection() {
            Ok(c) => Ok(SelectorExpr::Collection(c)),
            // The error of the reading that got further (`[v, ]` fails at `]` as selectors,
            // at `,` as a term); the term's when both stop at one token.
            Err(e) if self.pos > err_pos => Err(e),
            Err(_) => {
                self.pos = err_pos;
                self.depth = err_depth;
                self.far = err_far;
                Err(err)
            }
        }
    }

    /// `[s, ...]`, `{s, ...}`, `{k: v, ...}` or `(s, s, ...)` of selectors.
    fn selector_collection(&mut self) -> PResult<SelectorCollection> {
        self.enter()?;
        let r = self.selector_collection_items();
        self.leave();
        r
    }

    fn selector_collection_items(&mut self) -> PResult<SelectorCollection> {
        let open = self.bump().kind;
        let close = match open {
            Tok::LBracket => Tok::RBracket,
            Tok::LBrace => Tok::RBrace,
            _ => Tok::RParen,
        };
        let first = self.selector_expr()?;
        let c = if open == Tok::LBrace && self.eat(Tok::Colon) {
            let mut pairs = vec![(first, self.selector_expr()?)];
            while self.eat(Tok::Comma) {
                let k = self.selector_expr()?;
                self.expect(Tok::Colon)?;
                pairs.push((k, self.selector_expr()?));
            }
            SelectorCollection::Map(pairs)
        } else {
            let mut items = vec![first];
            while self.eat(Tok::Comma) {
                items.push(self.selector_expr()?);
            }
            match open {
                Tok::LBracket => SelectorCollection::List(items),
                Tok::LBrace => SelectorCollection::Set(items),
                _ => SelectorCollection::Tuple(items),
            }
        };
        self.expect(close)?;
        Ok(c)
    }

    /// Whether the `(` here opens a type hint (`(int) 1`, `(list<int>) x`) rather than a
    /// parenthesized selector (`(m + 1)`, `-(m)`): a type name, then something to hint.
    pub(super) fn is_selector_type_hint(&self) -> bool {
        if !self.is_type_hint() {
            return false;
        }
        if self.at_n(2, Tok::Lt) || self.at_n(2, Tok::Dot) {
            return self.hinted_name_fits(self.type_hint_close() + 1);
        }
        if !self.at_n(2, Tok::RParen) {
            return false;
        }
        let next = self.peek_n(3);
        if matches!(next.kind, Tok::Ident | Tok::QuotedIdent | Tok::QMark)
            && !self.hinted_name_fits(3)
        {
            return false;
        }
        match next.kind {
            Tok::Comma
            | Tok::RParen
            | Tok::Eof
            | Tok::Plus
            | Tok::Star
            | Tok::Slash
            | Tok::Percent => false,
            Tok::Ident => !["from", "as"].contains(&self.text(next).to_ascii_lowercase().as_str()),
            // A hint applies to no negation but a negative number's: `(int)-k` is the column
            // `int` in parentheses, minus k, as in Cassandra.
            Tok::Minus => {
                let after = self.peek_n(4);
                matches!(after.kind, Tok::Integer | Tok::Float | Tok::Duration)
                    || (after.kind == Tok::Ident
                        && ["infinity", "nan"]
                            .contains(&self.text(after).to_ascii_lowercase().as_str()))
            }
            // Something a hint can apply to; otherwise `(k)` is a selector in parentheses
            // (`(k) > 2` fails after it, as in Cassandra).
            _ => self.is_term_start(3),
        }
    }

    /// The offset of the `)` closing the type hint whose `(` is here (the token after the type
    /// when no `)` closes it at the type's depth).
    fn type_hint_close(&self) -> usize {
        let mut depth = 0usize;
        let mut i = 1;
        loop {
            match self.peek_n(i).kind {
                Tok::Lt => depth += 1,
                // One `>` too many ends the type there.
                Tok::Gt if depth == 0 => return i,
                Tok::Gt => depth -= 1,
                Tok::RParen if depth == 0 => return i,
                Tok::Eof => return i,
                _ => {}
            }
            i += 1;
        }
    }

    /// Cassandra's choice between a type hint and a selector in parentheses (`(int) x` against
    /// `(int)`, a column named int), when the hint would apply to a name or a `?` at offset
    /// `at`: its look-ahead reads on past the name and takes the parentheses unless what
    /// follows may follow a selector (or goes on as a call, a field or an element), so
    /// `SELECT (int) x y` fails at `x` ("mismatched input 'x' expecting K_FROM").
    fn hinted_name_fits(&self, at: usize) -> bool {
        self.hinted_name(at).is_none_or(|(fits, _)| fits)
    }

    /// For [`Self::hinted_name_fits`]: `None` when no name is at `at`, else whether the hint
    /// fits and the offset of the last token Cassandra's look-ahead has fetched by then (a
    /// later error's snippet reaches it).
    fn hinted_name(&self, at: usize) -> Option<(bool, usize)> {
        let t = self.peek_n(at);
        let name = match t.kind {
            Tok::Ident => !is_term_keyword(self.text(t)),
            Tok::QuotedIdent | Tok::QMark => true,
            _ => false,
        };
        if !name {
            return None;
        }
        let follows = |p: &Self, i: usize| {
            let n = p.peek_n(i);
            closes_or_operates(n.kind)
                || (n.kind == Tok::Ident
                    && p.is_one_of(n, &["from", "as", "limit", "order", "per", "allow"]))
        };
        // A name that may stand as a call's first argument, or something that goes on after
        // one.
        let goes_on = |p: &Self, i: usize| {
            follows(p, i) || matches!(p.peek_n(i).kind, Tok::Dot | Tok::LBracket | Tok::LParen)
        };
        let next = self.peek_n(at + 1);
        Some(match next.kind {
            _ if follows(self, at + 1) => (true, at + 2),
            Tok::LBracket => (true, at + 3),
            Tok::LParen if t.kind == Tok::Ident => {
                // A call: the look-ahead reads the first argument's first token and, after a
                // name, the token after it (`count(*)`, `abs(1)`, `f()` fit).
                let a = self.peek_n(at + 2);
                let fits = match a.kind {
                    Tok::Ident if is_term_keyword(self.text(a)) => true,
                    Tok::Ident if is_reserved(self.text(a)) => {
                        self.text(a).eq_ignore_ascii_case("token")
                    }
                    Tok::Ident | Tok::QuotedIdent => goes_on(self, at + 3),
                    _ => true,
                };
                (fits, at + 3)
            }
            Tok::Dot => {
                let fits = matches!(self.peek_n(at + 2).kind, Tok::Ident | Tok::QuotedIdent)
                    && goes_on(self, at + 3);
                (fits, at + 3)
            }
            _ => (false, at + 1),
        })
    }

    /// Whether the `-` here starts a negative number literal.
    pub(super) fn minus_literal(&self) -> bool {
        let next = self.peek_n(1);
        matches!(next.kind, Tok::Integer | Tok::Float | Tok::Duration)
            || (next.kind == Tok::Ident
                && ["infinity", "nan"].contains(&self.text(next).to_ascii_lowercase().as_str()))
    }

    pub(super) fn selector_call(&mut self, name: FunctionName) -> PResult<SelectorExpr> {
        self.expect(Tok::LParen)?;
        let args = if self.at(Tok::RParen) {
            Vec::new()
        } else {
            self.in_call += 1;
            let args = self.comma_list(Self::selector_expr);
            self.in_call -= 1;
            args?
        };
        self.expect(Tok::RParen)?;
        Ok(SelectorExpr::Function { name, args })
    }

    /// Whether the token here is a name that no term can start with: a column's name, not a
    /// literal word or a function's.
    fn at_bare_name(&self) -> bool {
        let t = self.peek();
        match t.kind {
            Tok::QuotedIdent => true,
            Tok::Ident => !is_term_keyword(self.text(t)) && !self.at_n(1, Tok::LParen),
            _ => false,
        }
    }

    /// `[ks.]f` where `f` may also be `token`.
    pub(super) fn function_name(&mut self) -> PResult<FunctionName> {
        let first = self.function_word()?;
        if self.at(Tok::Dot) {
            self.bump();
            let name = self.function_word()?;
            Ok(QualifiedName::qualified(first, name))
        } else {
            Ok(QualifiedName::new(first))
        }
    }

    pub(super) fn function_word(&mut self) -> PResult<String> {
        let t = self.peek();
        if t.kind == Tok::Ident && is_function_word(self.text(t)) {
            self.bump();
            return Ok(self.text(t).to_ascii_lowercase());
        }
        self.ident()
    }

    // ---- WHERE -------------------------------------------------------------------------------

    pub(super) fn where_clause(&mut self) -> PResult<Vec<Relation>> {
        let mut v = vec![self.relation()?];
        while self.eat_kw("and") {
            v.push(self.relation()?);
        }
        Ok(v)
    }

    pub(super) fn relation(&mut self) -> PResult<Relation> {
        self.enter()?;
        let r = self.relation_inner();
        self.leave();
        r
    }

    pub(super) fn relation_inner(&mut self) -> PResult<Relation> {
        if self.at(Tok::LParen) {
            if self.is_ident_at(1) && matches!(self.peek_n(2).kind, Tok::Comma | Tok::RParen) {
                self.bump();
                let columns = self.comma_list(Self::ident)?;
                self.expect(Tok::RParen)?;
                if self.eat_kw("in") {
                    let values = self.multi_in_values()?;
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
        // Cassandra's choice between the relations a column starts reads past the operator
        // (and past IN to what follows it), so a failure there brackets the column:
        // "no viable alternative at input '1' (...WHERE [k] IN...)".
        let start = self.pos;
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
            if !matches!(self.peek().kind, Tok::LParen | Tok::QMark | Tok::Colon) {
                return Err(self.no_viable_from(start));
            }
            let values = self.in_values()?;
            return Ok(Relation::In { column, values });
        }
        if self.eat_kw("is") {
            self.expect_kw("not")?;
            self.expect_kw("null")?;
            return Ok(Relation::IsNotNull { column });
        }
        let Ok(op) = self.relation_op() else {
            return Err(self.no_viable_from(start));
        };
        let value = self.term()?;
        Ok(Relation::Binary { column, op, value })
    }

    /// Comparison operators plus `LIKE`, `CONTAINS`, `CONTAINS KEY`.
    pub(super) fn relation_op(&mut self) -> PResult<Operator> {
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

    pub(super) fn comparison_op(&mut self) -> PResult<Operator> {
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

    /// The values of a multi-column IN: `()`, `?`, tuple literals `((1, 2), (3, 4))` or one
    /// marker per tuple `(?, ?)`. As in Cassandra's grammar the first item decides which,
    /// and a mix is a syntax error ("mismatched input '?' expecting '('" after a literal,
    /// "no viable alternative at input '('" after a marker, "no viable alternative at
    /// input '1'" for a first item that is neither).
    fn multi_in_values(&mut self) -> PResult<InValues> {
        if !self.at(Tok::LParen) || self.peek_n(1).kind == Tok::RParen {
            return self.in_values();
        }
        let open = self.pos;
        self.bump();
        let markers = matches!(self.peek().kind, Tok::QMark | Tok::Colon);
        if !markers && !self.at(Tok::LParen) {
            return Err(self.no_viable_from(open));
        }
        let mut items = Vec::new();
        loop {
            if markers {
                items.push(Term::Bind(self.bind_marker()?));
            } else if self.at(Tok::LParen) {
                items.push(self.term()?);
            } else {
                return Err(self.mismatched("'('"));
            }
            if !self.eat(Tok::Comma) {
                break;
            }
        }
        self.expect(Tok::RParen)?;
        Ok(InValues::Terms(items))
    }

    pub(super) fn in_values(&mut self) -> PResult<InValues> {
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
}
