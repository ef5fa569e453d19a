//! `INSERT`, `UPDATE`, `DELETE` and `BATCH`, with their `USING` and `IF` clauses.

use super::*;

impl Parser<'_> {
    // ---- INSERT / UPDATE / DELETE / BATCH -----------------------------------------------------

    pub(super) fn insert(&mut self) -> PResult<InsertStatement> {
        self.expect_kw("insert")?;
        self.expect_kw("into")?;
        let table = self.table_name()?;
        if !self.at(Tok::LParen) && !self.at_kw("json") {
            // Cassandra's choice between `(` and `JSON` fails as "no viable alternative".
            return Err(self.no_viable_from(self.pos));
        }
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
        // Cassandra's order is IF NOT EXISTS then USING (an IF after USING is a syntax error
        // there, "expecting EOF"). Right after the values an IF can only start IF NOT EXISTS
        // (Cassandra: "mismatched input 'EXISTS' expecting K_NOT" for `IF EXISTS`).
        let if_not_exists = if self.eat_kw("if") {
            self.expect_kw("not")?;
            self.expect_kw("exists")?;
            true
        } else {
            false
        };
        let using = self.using_clause()?;
        Ok(InsertStatement {
            table,
            values,
            if_not_exists,
            using,
        })
    }

    pub(super) fn using_clause(&mut self) -> PResult<UsingClause> {
        self.using_clause_of(false)
    }

    /// `USING ...`; a DELETE's (`delete`) takes no TTL: Cassandra's grammar expects
    /// `TIMESTAMP` there.
    fn using_clause_of(&mut self, delete: bool) -> PResult<UsingClause> {
        let mut u = UsingClause::default();
        if !self.eat_kw("using") {
            return Ok(u);
        }
        loop {
            // A DELETE's USING takes TIMESTAMP alone (Peregrine's VISIBILITY aside): anything
            // else, the end included, is "mismatched input ... expecting K_TIMESTAMP".
            if delete && !self.at_kw("timestamp") && !self.at_visibility() {
                return Err(self.mismatched("K_TIMESTAMP"));
            }
            if self.eat_kw("ttl") {
                u.ttl = Some(self.int_value()?);
            } else if self.eat_kw("timestamp") {
                u.timestamp = Some(self.int_value()?);
            } else if self.at_visibility() {
                u.visibility = Some(self.visibility_clause()?);
            } else {
                return Err(self.no_viable());
            }
            // Cassandra's DELETE takes `USING TIMESTAMP t` alone: WHERE must follow (a
            // VISIBILITY clause, Peregrine's own, may still come after AND).
            if delete && self.at_kw("and") && !self.kw_at_n(1, "visibility") {
                return Err(self.mismatched("K_WHERE"));
            }
            if !self.eat_kw("and") {
                return Ok(u);
            }
        }
    }

    /// Cassandra's `intValue` (a TTL, a timestamp, LIMIT, PER PARTITION LIMIT): one integer
    /// token (its sign written against it, as Cassandra's lexer reads `-1`) or a bind marker;
    /// anything else (`'x'`, `1.5`, `(int) 1`, a function call) is a syntax error there, and an
    /// operator after the integer (`LIMIT 1 + 1`) is left for the caller to refuse.
    pub(super) fn int_value(&mut self) -> PResult<Term> {
        let t = self.peek();
        let ok = match t.kind {
            Tok::Integer | Tok::QMark | Tok::Colon => true,
            Tok::Minus => {
                let n = self.peek_n(1);
                n.kind == Tok::Integer && n.start == t.end
            }
            _ => false,
        };
        if !ok {
            return Err(self.no_viable());
        }
        match t.kind {
            Tok::QMark | Tok::Colon => Ok(Term::Bind(self.bind_marker()?)),
            _ => self.term_unary(),
        }
    }

    pub(super) fn update(&mut self) -> PResult<UpdateStatement> {
        self.expect_kw("update")?;
        let table = self.table_name()?;
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

    pub(super) fn assignment(&mut self) -> PResult<Assignment> {
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
                    let start = self.pos;
                    let other = self.ident()?;
                    let add = match self.peek().kind {
                        Tok::Plus => true,
                        Tok::Minus => false,
                        _ => return Err(self.no_viable_from(start)),
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

    pub(super) fn if_clause(&mut self) -> PResult<Option<IfClause>> {
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

    pub(super) fn condition(&mut self) -> PResult<Condition> {
        let column = self.ident()?;
        let target = self.element_or_field()?;
        // Cassandra's grammar takes CONTAINS on a whole column only (`IF m[1] CONTAINS 'a'`
        // is a syntax error at the CONTAINS).
        if target.is_some() && self.at_kw("contains") {
            return Err(self.no_viable());
        }
        let op = if self.eat_kw("in") {
            ConditionOp::In(self.in_values()?)
        } else {
            let op = self.relation_op()?;
            ConditionOp::Compare(op, self.term()?)
        };
        Ok(Condition { column, target, op })
    }

    pub(super) fn element_or_field(&mut self) -> PResult<Option<ElementOrField>> {
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

    pub(super) fn delete(&mut self) -> PResult<DeleteStatement> {
        self.expect_kw("delete")?;
        // The selection is optional (`(deleteSelection)? K_FROM`): a word that cannot start
        // one is where FROM was expected.
        let targets = if self.at_kw("from") || !self.is_ident_at(0) {
            Vec::new()
        } else {
            self.comma_list(|p| {
                let column = p.ident()?;
                let target = p.element_or_field()?;
                Ok(DeleteTarget { column, target })
            })?
        };
        self.expect_kw("from")?;
        let table = self.table_name()?;
        let using = self.using_clause_of(true)?;
        self.expect_kw("where")?;
        let where_clause = self.where_clause()?;
        let condition = self.if_clause()?;
        // `RETURNING` (Peregrine's extension, docs/extensions.md): Cassandra's grammar ends a
        // DELETE after its WHERE or IF clause, so nothing valid there starts with this word.
        let returning = if self.eat_kw("returning") {
            Some(if self.eat(Tok::Star) {
                Selection::Wildcard
            } else {
                Selection::Selectors(self.comma_list(Self::selector)?)
            })
        } else {
            None
        };
        Ok(DeleteStatement {
            table,
            targets,
            using,
            where_clause,
            condition,
            returning,
        })
    }

    pub(super) fn batch(&mut self) -> PResult<BatchStatement> {
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
                let at = self.peek();
                let d = self.delete()?;
                if d.returning.is_some() {
                    return Err(self.invalid(
                        at,
                        "RETURNING is not supported in a BATCH (docs/extensions.md)".to_string(),
                    ));
                }
                ModificationStatement::Delete(d)
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
}
