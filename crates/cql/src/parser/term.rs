//! Terms (literals, collections, tuples, bind markers, function calls, arithmetic) and CQL types.

use super::*;

impl Parser<'_> {
    // ---- Terms -------------------------------------------------------------------------------

    pub(super) fn bind_marker(&mut self) -> PResult<BindMarker> {
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
    pub(super) fn is_term_start(&self, n: usize) -> bool {
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
    pub(super) fn is_type_hint(&self) -> bool {
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
        let start = self.pos;
        let r = self.term_add();
        self.leave();
        match &r {
            // A constant item of a selector literal is a selector there: Cassandra's choice
            // of what it starts reads two tokens on (see `predict_selector_group`).
            Ok(Term::Literal(_)) if self.in_selector > 0 => self.look_ahead(1),
            Ok(_) if self.in_selector == 0 => self.last_term = Some((start, self.pos)),
            _ => {}
        }
        r
    }

    pub(super) fn term_add(&mut self) -> PResult<Term> {
        self.left_assoc(add_op, Self::term_mul, |p| p.is_term_start(1), term_op)
    }

    pub(super) fn term_mul(&mut self) -> PResult<Term> {
        self.left_assoc(mul_op, Self::term_unary, |p| p.is_term_start(1), term_op)
    }

    /// One precedence level of left-associative operators over `operand` (terms and
    /// selectors alike). `continues` may refuse an operator not followed by an operand.
    pub(super) fn left_assoc<T>(
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

    pub(super) fn term_unary(&mut self) -> PResult<Term> {
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
                Ok(Term::Literal(self.float_literal(neg(self.text(t)))?))
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

    /// A float literal, refused as Cassandra 5.0's parser refuses it: typing the constant
    /// reads it as a `BigDecimal` and compares it with its double, so a literal `BigDecimal`
    /// cannot read, or whose double is infinite (`1e400`: `BigDecimal` cannot read the double's
    /// text `Infinity`), fails the whole statement.
    fn float_literal(&self, text: String) -> PResult<Literal> {
        match float_refusal(&text) {
            Some(m) => Err(ParseError::failed(self.src, "NumberFormatException", m)),
            None => Ok(Literal::Float(text)),
        }
    }

    pub(super) fn simple_term(&mut self) -> PResult<Term> {
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
                Ok(Term::Literal(self.float_literal(self.text(t).to_string())?))
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
                    let ty = self.cql_type_as_written()?;
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
                if t.kind == Tok::Ident && self.at_n(1, Tok::LParen) {
                    let w = self.text(t).to_ascii_lowercase();
                    // `writetime`, `maxwritetime` and `ttl` are keywords, no function name:
                    // Cassandra's term rule fails at the `(` after one.
                    if matches!(w.as_str(), "writetime" | "maxwritetime" | "ttl") {
                        let start = self.pos;
                        self.bump();
                        let e = self.no_viable_from(start);
                        self.pos = start;
                        return Err(e);
                    }
                    // `CAST(t AS type)` is a call of the native `system.cast_as_<type>`.
                    if w == "cast" {
                        self.pos += 2;
                        let arg = self.term()?;
                        let ty = self.cast_target()?;
                        return Ok(Term::FunctionCall {
                            name: FunctionName {
                                keyspace: Some("system".into()),
                                name: format!("cast_as_{ty}"),
                            },
                            args: vec![arg],
                        });
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
                // A name here can only start a function call (`f(` or `ks.f(`): the choice
                // fails at the token that is not the call's, as Cassandra reports it.
                if !self.is_ident_at(0) {
                    return Err(self.no_viable());
                }
                let start = self.pos;
                self.bump();
                if self.at(Tok::Dot) && self.is_ident_at(1) {
                    self.bump();
                    self.bump();
                }
                let e = self.no_viable_from(start);
                self.pos = start;
                Err(e)
            }
            _ => Err(self.no_viable()),
        }
    }

    /// `{}` (empty set), `{a, b}` (set), `{k: v}` (map), `{field: v}` (UDT).
    pub(super) fn brace_term(&mut self) -> PResult<Term> {
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

    pub(super) fn cql_type(&mut self) -> PResult<CqlType> {
        self.enter()?;
        let r = self.cql_type_inner();
        self.leave();
        r
    }

    /// `AS type)` closing a `CAST(x AS type)`: a native type only (not vector<..>,
    /// frozen<..>, a UDT).
    pub(super) fn cast_target(&mut self) -> PResult<CqlType> {
        self.expect_kw("as")?;
        let t = self.peek();
        let w = self.text(t).to_ascii_lowercase();
        let native = match t.kind == Tok::Ident && !self.at_n(1, Tok::Lt) {
            true => CqlType::native_from_name(&w),
            false => None,
        };
        let Some(native) = native else {
            return Err(self.no_viable());
        };
        // Cassandra reads a cast's type as a native type alone: no prediction, no look past
        // the token after it; `varchar` kept as written.
        self.bump();
        self.expect(Tok::RParen)?;
        Ok(if w == "varchar" {
            CqlType::Varchar
        } else {
            native
        })
    }

    /// The type of a cast or type hint: as [`Self::cql_type`], but `varchar` stays
    /// [`CqlType::Varchar`] (Cassandra's messages print such a type as written).
    pub(super) fn cql_type_as_written(&mut self) -> PResult<CqlType> {
        let outer = std::mem::replace(&mut self.varchar_as_written, true);
        let r = self.cql_type();
        self.varchar_as_written = outer;
        r
    }

    /// `frozen<T>` of a type that cannot be frozen (a native or custom type, `T` starting at
    /// token `inner_start`): Cassandra's parser records "frozen<> is only allowed on ..." and
    /// reads on, so it is the statement's error unless an earlier one stopped the parse (see
    /// [`Parser::deferred`]). The type is named as written (`varchar`, `'org...Int32Type'`).
    fn freeze_refused(&mut self, inner_start: usize) {
        if self.deferred.is_some() {
            return;
        }
        let t = self.toks[inner_start];
        let shown = match t.kind {
            Tok::Str => self.text(t).to_string(),
            _ => self.text(t).to_ascii_lowercase(),
        };
        self.deferred = Some(ParseError::unpositioned(format!(
            "frozen<> is only allowed on collections, tuples, and user-defined types (got {shown})"
        )));
    }

    /// The NullPointerException Cassandra's parser throws when it calls `method` on the type
    /// a refused `frozen<..>` left null (named `var` in its grammar), inside another
    /// `frozen<..>` or a tuple.
    fn null_type(&self, method: &str, var: &str) -> ParseError {
        ParseError::failed(
            self.src,
            "NullPointerException",
            &format!(
                "Cannot invoke \"org.apache.cassandra.cql3.CQL3Type$Raw.{method}()\" because \"{var}\" is null"
            ),
        )
    }

    pub(super) fn cql_type_inner(&mut self) -> PResult<CqlType> {
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
                        // A native type's prediction fails at the `<`, from the type.
                        _ if CqlType::native_from_name(&w).is_some() => {
                            self.bump();
                            return Err(self.no_viable_from(self.pos - 1));
                        }
                        _ => return Err(self.no_viable()),
                    };
                    self.pos += 2;
                    let ty = match ctor.as_str() {
                        "list" => CqlType::List(Box::new(self.cql_type()?)),
                        "set" => CqlType::Set(Box::new(self.cql_type()?)),
                        "frozen" => {
                            let inner_start = self.pos;
                            let inner = self.cql_type()?;
                            if refused_freeze(&inner) {
                                return Err(self.null_type("freeze", "f"));
                            }
                            if matches!(
                                inner,
                                CqlType::Native(_) | CqlType::Varchar | CqlType::Custom(_)
                            ) && self.at(Tok::Gt)
                            {
                                self.freeze_refused(inner_start);
                            }
                            CqlType::Frozen(Box::new(inner))
                        }
                        "map" => {
                            let k = self.cql_type()?;
                            self.expect(Tok::Comma)?;
                            let v = self.cql_type()?;
                            CqlType::Map(Box::new(k), Box::new(v))
                        }
                        "tuple" => {
                            let items = self.comma_list(Self::cql_type)?;
                            if items.iter().any(refused_freeze) {
                                return Err(self.null_type("supportsFreezing", "t"));
                            }
                            CqlType::Tuple(items)
                        }
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
                    let start = self.pos;
                    self.bump();
                    // Cassandra's prediction after a native type (a native type or a user
                    // type's keyspace) reads the token after it: one that may follow a type
                    // somewhere in its grammar, and then one more (so a snippet of an error
                    // there reaches it: "mismatched input ',' expecting EOF (... ADD z3
                    // int[,] ADD...)"); any other fails the prediction, at the type: "no
                    // viable alternative at input 'x' (ALTER TABLE t ADD w [int] x)".
                    let next = self.peek();
                    if next.kind == Tok::Dot {
                        // `int.t`: a user type of keyspace `int`.
                        self.pos = start;
                        return Ok(CqlType::UserDefined(self.qualified_name()?));
                    }
                    let follow = [Tok::Comma, Tok::Gt, Tok::RParen, Tok::Semi, Tok::Eof];
                    self.predicted_from(start, &follow, TYPE_FOLLOW)?;
                    if self.varchar_as_written && w == "varchar" {
                        return Ok(CqlType::Varchar);
                    }
                    return Ok(native);
                }
                Ok(CqlType::UserDefined(self.qualified_name()?))
            }
            Tok::QuotedIdent => Ok(CqlType::UserDefined(self.qualified_name()?)),
            _ => Err(self.no_viable()),
        }
    }
}

/// Whether Cassandra's parser left this type null: a `frozen<..>` of a type that cannot be
/// frozen ([`Parser::freeze_refused`]), or a list, set, map or vector of one.
fn refused_freeze(ty: &CqlType) -> bool {
    match ty {
        CqlType::Frozen(inner) => {
            matches!(
                **inner,
                CqlType::Native(_) | CqlType::Varchar | CqlType::Custom(_)
            )
        }
        CqlType::List(e) | CqlType::Set(e) | CqlType::Vector(e, _) => refused_freeze(e),
        CqlType::Map(k, v) => refused_freeze(k) || refused_freeze(v),
        _ => false,
    }
}

/// The words that may follow a native type somewhere in Cassandra 5.0.9's grammar (with `,`,
/// `>`, `)`, `;` and the end), read off its answers to `ALTER TABLE t ADD w int <word>`.
const TYPE_FOLLOW: &[&str] = &[
    "finalfunc",
    "initcond",
    "language",
    "masked",
    "primary",
    "static",
];

/// Why Java's `new BigDecimal(text)` or `BigDecimal.valueOf(its double)` throws for a float
/// literal (`NaN` and infinities are never read so).
fn float_refusal(text: &str) -> Option<&'static str> {
    let (mant, exp) = match text.find(['e', 'E']) {
        Some(i) => (&text[..i], &text[i + 1..]),
        None => (text, ""),
    };
    let frac_digits = mant.split_once('.').map_or(0, |(_, f)| f.len() as i64);
    let (negative, digits) = match exp.as_bytes().first() {
        Some(b'-') => (true, &exp[1..]),
        Some(b'+') => (false, &exp[1..]),
        _ => (false, exp),
    };
    let digits = digits.trim_start_matches('0');
    if digits.len() > 10 {
        return Some("Too many nonzero exponent digits.");
    }
    let magnitude: i64 = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    let exp = if negative { -magnitude } else { magnitude };
    if i32::try_from(exp).is_err() {
        return Some("Exponent overflow.");
    }
    if i32::try_from(frac_digits - exp).is_err() {
        return Some("Scale out of range.");
    }
    match text.parse::<f64>() {
        Ok(d) if d.is_infinite() => {
            Some("Character I is neither a decimal digit number, decimal point, nor \"e\" notation exponential mark.")
        }
        _ => None,
    }
}
