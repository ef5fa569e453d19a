//! Roles, users and permissions: role options, `GRANT`, `REVOKE`, `LIST`.

use super::*;

impl Parser<'_> {
    pub(super) fn role_options(&mut self) -> PResult<RoleOptions> {
        let mut o = RoleOptions::default();
        loop {
            let at = self.peek();
            // Recorded by the grammar's action: the message alone, without a position.
            let seen = |name: &str| {
                ParseError::unpositioned(format!("Multiple definition for property '{name}'"))
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
    pub(super) fn user_options(&mut self) -> PResult<RoleOptions> {
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

    pub(super) fn boolean(&mut self) -> PResult<bool> {
        if self.eat_kw("true") {
            Ok(true)
        } else if self.eat_kw("false") {
            Ok(false)
        } else {
            Err(self.mismatched("BOOLEAN"))
        }
    }

    // ---- Roles and permissions ----------------------------------------------------------------

    pub(super) fn permission_word(&self, n: usize) -> Option<Permission> {
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
    pub(super) fn at_permissions(&self) -> bool {
        if self.at_kw("all") {
            return self.kw_at_n(1, "permissions") || self.kw_at_n(1, "on");
        }
        self.permission_word(0).is_some()
    }

    pub(super) fn permissions(&mut self) -> PResult<Vec<Permission>> {
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

    pub(super) fn resource(&mut self) -> PResult<Resource> {
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
        Ok(Resource::Table(self.table_name()?))
    }

    pub(super) fn grant(&mut self) -> PResult<Statement> {
        self.expect_kw("grant")?;
        if self.at_authorizations() {
            return self.authorizations_change(true);
        }
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

    pub(super) fn revoke(&mut self) -> PResult<Statement> {
        self.expect_kw("revoke")?;
        if self.at_authorizations() {
            return self.authorizations_change(false);
        }
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

    pub(super) fn list(&mut self) -> PResult<Statement> {
        self.expect_kw("list")?;
        if self.at_kw("authorizations") {
            return self.list_authorizations();
        }
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
}
