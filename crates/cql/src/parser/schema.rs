//! Schema statements: `CREATE`, `ALTER` and `DROP` of keyspaces, tables, types, indexes and
//! functions (views are in `view`), with table properties.

use super::*;

impl Parser<'_> {
    // ---- DDL ---------------------------------------------------------------------------------

    pub(super) fn create(&mut self) -> PResult<Statement> {
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
            // Cassandra's `'(' typeColumns (',' typeColumns?)* ')'`: a field may be left
            // out after a comma, so a word that cannot start one ends the list there and
            // fails as "mismatched input 'nan' expecting ')'".
            let mut fields = Vec::new();
            loop {
                let f = self.ident()?;
                fields.push((f, self.cql_type()?));
                if !self.next_list_item(|p| p.is_ident_at(0)) {
                    break;
                }
            }
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
        if self.eat_kw("function") {
            self.if_not_exists()?;
            let name = self.qualified_name()?;
            // The arguments, body and language are not modelled: no function is ever made.
            self.skip_rest();
            return Ok(Statement::UserCode(UserCodeStatement::CreateFunction {
                name,
            }));
        }
        if self.eat_kw("aggregate") {
            self.if_not_exists()?;
            let name = self.qualified_name()?;
            let args = self.function_arg_types()?;
            self.expect_kw("sfunc")?;
            let state_function = self.ident()?;
            self.expect_kw("stype")?;
            let state_type = self.cql_type_as_written()?;
            // FINALFUNC and INITCOND are not modelled: no aggregate is ever made.
            self.skip_rest();
            return Ok(Statement::UserCode(UserCodeStatement::CreateAggregate {
                name,
                args,
                state_function,
                state_type,
            }));
        }
        if self.at_kw("materialized") {
            return self.create_view();
        }
        if self.eat_kw("trigger") {
            self.if_not_exists()?;
            let name = self.ident()?;
            self.expect_kw("on")?;
            let table = self.qualified_name()?;
            self.expect_kw("using")?;
            let class = self.string_literal()?;
            return Ok(Statement::UserCode(UserCodeStatement::CreateTrigger {
                name,
                table,
                class,
            }));
        }
        Err(self.no_viable())
    }

    pub(super) fn create_table(&mut self) -> PResult<CreateTable> {
        let if_not_exists = self.if_not_exists()?;
        let name = self.table_name()?;
        self.expect(Tok::LParen)?;
        let mut columns = Vec::new();
        let mut key: Option<(Vec<String>, Vec<String>)> = None;
        // 5.0.9 names the table as written, keyspace and all, when the grammar's actions
        // refuse a column or a second primary key (before anything is looked up).
        let table = match &name.keyspace {
            Some(ks) => format!("{ks}.{}", name.name),
            None => name.name.clone(),
        };
        let second_key = |p: &Self| {
            let at = p.toks[p.pos.saturating_sub(1)];
            p.invalid(
                at,
                format!(
                    "Multiple PRIMARY KEY specified for table '{table}' (exactly one required)"
                ),
            )
        };
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
                if key.is_some() {
                    return Err(second_key(self));
                }
                let mut clustering = Vec::new();
                while self.eat(Tok::Comma) {
                    clustering.push(self.ident()?);
                }
                self.expect(Tok::RParen)?;
                key = Some((partition, clustering));
            } else {
                let col = self.ident()?;
                let ty = self.cql_type()?;
                let is_static = self.eat_kw("static");
                let mask = self.column_mask()?;
                // 5.0.9 refuses a repeated column as the grammar adds it: before the
                // keyspace, the table and the rest of the statement are looked at.
                if columns.iter().any(|c: &ColumnDef| c.name == col) {
                    let at = self.toks[self.pos.saturating_sub(1)];
                    return Err(self.invalid(
                        at,
                        format!("Duplicate column '{col}' declaration for table '{table}'"),
                    ));
                }
                if self.eat_kw("primary") {
                    self.expect_kw("key")?;
                    if key.is_some() {
                        return Err(second_key(self));
                    }
                    key = Some((vec![col.clone()], Vec::new()));
                }
                columns.push(ColumnDef {
                    name: col,
                    ty,
                    is_static,
                    mask,
                });
            }
            // Cassandra's `'(' cfamColumns (',' cfamColumns?)* ')'`: a definition may be left
            // out after a comma, so a word that can start none ends the list there and fails
            // as "mismatched input 'nan' expecting ')'".
            if !self.next_list_item(|p| p.is_ident_at(0) || p.at_kw("primary")) {
                break;
            }
        }
        let close = self.expect(Tok::RParen)?;
        let options = if self.eat_kw("with") {
            self.table_options()?
        } else {
            TableOptions::default()
        };
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

    pub(super) fn table_options(&mut self) -> PResult<TableOptions> {
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

    pub(super) fn properties(&mut self) -> PResult<Vec<Property>> {
        self.properties_with(Self::property)
    }

    /// `property AND property ...`, each read by `item`; a name given twice is refused.
    fn properties_with(
        &mut self,
        mut item: impl FnMut(&mut Self) -> PResult<Property>,
    ) -> PResult<Vec<Property>> {
        let mut v = Vec::new();
        loop {
            let p = item(self)?;
            self.push_property(&mut v, p)?;
            if !self.eat_kw("and") {
                return Ok(v);
            }
        }
    }

    /// The properties of `ALTER TABLE / MATERIALIZED VIEW ... WITH`: Cassandra's grammar takes
    /// properties only (`K_WITH properties`), so CLUSTERING ORDER or COMPACT STORAGE there (or
    /// a name without `=`) fails on the word after the name, as ANTLR's "no viable alternative
    /// at input 'ORDER' (ALTER TABLE t WITH [CLUSTERING] ORDER...)".
    pub(super) fn alter_properties(&mut self) -> PResult<TableOptions> {
        let properties = self.properties_with(|p| {
            if p.is_ident_at(0) && !p.at_n(1, Tok::Eq) {
                let start = p.pos;
                p.pos += 1;
                return Err(p.no_viable_from(start));
            }
            p.property()
        })?;
        Ok(TableOptions {
            properties,
            ..TableOptions::default()
        })
    }

    pub(super) fn push_property(&self, props: &mut Vec<Property>, p: Property) -> PResult<()> {
        // 5.0.9's `PropertyDefinitions.addProperty`, recorded by the grammar's action: the
        // message alone, in the plural (a role option's repeat says "definition").
        if props.iter().any(|q| q.name == p.name) {
            return Err(ParseError::unpositioned(format!(
                "Multiple definitions for property '{}'",
                p.name
            )));
        }
        props.push(p);
        Ok(())
    }

    pub(super) fn property(&mut self) -> PResult<Property> {
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
    pub(super) fn property_constant(&mut self) -> PResult<Literal> {
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

    pub(super) fn property_map(&mut self) -> PResult<Vec<(String, String)>> {
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

    pub(super) fn create_index(&mut self) -> PResult<CreateIndex> {
        let custom = self.eat_kw("custom");
        self.expect_kw("index")?;
        let if_not_exists = self.if_not_exists()?;
        // The name is optional (`(idxName)? K_ON`): a word that cannot be one is where ON
        // was expected.
        let name = if self.is_ident_at(0) && !self.at_kw("on") {
            Some(self.ident()?)
        } else {
            None
        };
        self.expect_kw("on")?;
        let table = self.table_name()?;
        self.expect(Tok::LParen)?;
        let targets = if self.at(Tok::RParen) {
            Vec::new()
        } else {
            self.comma_list(Self::index_target)?
        };
        self.expect(Tok::RParen)?;
        let mut custom_class = None;
        if self.eat_kw("using") {
            let class = self.string_literal()?;
            // 5.0.9's name of its default (legacy) secondary index, in any case: the same as
            // no USING, unless the index is CUSTOM (then no such class is found).
            if custom || !class.eq_ignore_ascii_case("legacy_local_table") {
                custom_class = Some(class);
            }
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

    pub(super) fn index_target(&mut self) -> PResult<IndexTarget> {
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

    pub(super) fn alter(&mut self) -> PResult<Statement> {
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
            let name = self.table_name()?;
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
            } else if self.eat_kw("alter") {
                let field = self.ident()?;
                self.expect_kw("type")?;
                AlterTypeAction::AlterFieldType {
                    field,
                    ty: self.cql_type()?,
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

    pub(super) fn alter_table_action(&mut self) -> PResult<AlterTableAction> {
        if self.eat_kw("add") {
            let if_not_exists = self.if_not_exists()?;
            let column_def = |p: &mut Self| -> PResult<ColumnDef> {
                let name = p.ident()?;
                let ty = p.cql_type()?;
                let is_static = p.eat_kw("static");
                let mask = p.column_mask()?;
                Ok(ColumnDef {
                    name,
                    ty,
                    is_static,
                    mask,
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
        if self.at_kw("drop") {
            // Cassandra chooses between its two DROP alternatives (this and DROP COMPACT
            // STORAGE) on the word after DROP, so a word that fits neither fails there with
            // DROP bracketed.
            let drop = self.pos;
            self.bump();
            if !(self.at_kw("if") || self.at(Tok::LParen) || self.is_ident_at(0)) {
                return Err(self.no_viable_from(drop));
            }
            if self.at_kw("if") && !self.kw_at_n(1, "exists") {
                self.bump();
                return Err(self.mismatched("K_EXISTS"));
            }
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
                timestamp = Some(self.drop_timestamp()?);
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
            return Ok(AlterTableAction::With(self.alter_properties()?));
        }
        if self.eat_kw("alter") {
            let column = self.ident()?;
            if self.at_kw("masked") {
                let mask = self.column_mask()?;
                return Ok(AlterTableAction::AlterColumnMask { column, mask });
            }
            if self.at_kw("drop") && self.kw_at_n(1, "masked") {
                self.pos += 2;
                return Ok(AlterTableAction::AlterColumnMask { column, mask: None });
            }
            self.expect_kw("type")?;
            let ty = self.cql_type()?;
            return Ok(AlterTableAction::AlterColumnType { column, ty });
        }
        Err(self.no_viable())
    }

    /// `DROP ... USING TIMESTAMP t`: Cassandra's grammar takes one INTEGER token there (its
    /// sign written against it) and reads it as a Java long.
    fn drop_timestamp(&mut self) -> PResult<i64> {
        let t = self.peek();
        let negative = t.kind == Tok::Minus && {
            let n = self.peek_n(1);
            n.kind == Tok::Integer && n.start == t.end
        };
        if negative {
            self.bump();
        }
        let n = self.expect(Tok::Integer)?;
        let text = format!("{}{}", if negative { "-" } else { "" }, self.text(n));
        text.parse::<i64>().map_err(|_| {
            ParseError::failed(
                self.src,
                "NumberFormatException",
                &format!("For input string: \"{text}\""),
            )
        })
    }

    /// `[MASKED WITH f(args) | MASKED WITH DEFAULT]` after a column's type. Cassandra chooses
    /// between the two reading up to the token after WITH: where that fails (`MASKED zz`,
    /// `MASKED WITH)`), "no viable alternative" naming MASKED; its choice between `ks.f` and
    /// `f` reads the token after the name, "no viable alternative" naming `f` unless a `.` or
    /// `(` follows.
    pub(super) fn column_mask(&mut self) -> PResult<Option<ColumnMask>> {
        if !self.at_kw("masked") {
            return Ok(None);
        }
        let start = self.pos;
        self.bump();
        if !self.at_kw("with") {
            return Err(self.no_viable_from(start));
        }
        self.bump();
        if self.eat_kw("default") {
            return Ok(Some(ColumnMask {
                function: FunctionName::new("mask_default".to_string()),
                args: Vec::new(),
            }));
        }
        let name = self.peek();
        let named = match name.kind {
            Tok::QuotedIdent => true,
            Tok::Ident => is_function_word(self.text(name)),
            _ => false,
        };
        if !named {
            return Err(self.no_viable_from(start));
        }
        if !self.at_n(1, Tok::Dot) && !self.at_n(1, Tok::LParen) {
            self.bump();
            return Err(self.no_viable_from(self.pos - 1));
        }
        let function = self.function_name()?;
        self.expect(Tok::LParen)?;
        let args = if self.at(Tok::RParen) {
            Vec::new()
        } else {
            self.comma_list(Self::term)?
        };
        self.expect(Tok::RParen)?;
        Ok(Some(ColumnMask { function, args }))
    }

    pub(super) fn renames(&mut self) -> PResult<Vec<(String, String)>> {
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

    pub(super) fn drop(&mut self) -> PResult<Statement> {
        self.expect_kw("drop")?;
        if self.eat_kw("keyspace") {
            let if_exists = self.if_exists()?;
            let name = self.ident()?;
            return Ok(Statement::DropKeyspace { name, if_exists });
        }
        if self.eat_kw("table") || self.eat_kw("columnfamily") {
            let if_exists = self.if_exists()?;
            let name = self.table_name()?;
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
        let aggregate = self.at_kw("aggregate");
        if aggregate || self.at_kw("function") {
            self.bump();
            let if_exists = self.if_exists()?;
            let name = self.qualified_name()?;
            let args = if self.at(Tok::LParen) {
                Some(self.function_arg_types()?)
            } else {
                None
            };
            return Ok(Statement::UserCode(UserCodeStatement::Drop {
                aggregate,
                name,
                if_exists,
                args,
            }));
        }
        if self.at_kw("materialized") {
            return self.drop_view();
        }
        if self.eat_kw("trigger") {
            let if_exists = self.if_exists()?;
            let name = self.ident()?;
            self.expect_kw("on")?;
            let table = self.qualified_name()?;
            return Ok(Statement::UserCode(UserCodeStatement::DropTrigger {
                name,
                table,
                if_exists,
            }));
        }
        Err(self.no_viable())
    }

    /// `(type, ...)`: a function's or aggregate's argument types, as written.
    fn function_arg_types(&mut self) -> PResult<Vec<CqlType>> {
        self.expect(Tok::LParen)?;
        if self.eat(Tok::RParen) {
            return Ok(Vec::new());
        }
        let types = self.comma_list(Self::cql_type_as_written)?;
        self.expect(Tok::RParen)?;
        Ok(types)
    }
}
