//! ScyllaDB's service level statements (workload prioritization), in ScyllaDB's grammar
//! (`Cql.g`: `serviceLevel`, `createServiceLevelStatement` ... `listServiceLevelAttachStatement`):
//!
//! ```text
//! CREATE SERVICE LEVEL [IF NOT EXISTS] name [WITH shares = n [AND workload_type = 'w']]
//! ALTER SERVICE LEVEL name WITH shares = n
//! DROP SERVICE LEVEL [IF EXISTS] name
//! ATTACH SERVICE LEVEL name TO role
//! DETACH SERVICE LEVEL FROM role
//! LIST SERVICE LEVEL name | LIST ALL SERVICE LEVELS
//! LIST ATTACHED SERVICE LEVEL OF role | LIST ALL ATTACHED SERVICE LEVELS
//! LIST EFFECTIVE SERVICE LEVEL OF role
//! ```
//!
//! `SERVICE_LEVEL` / `SERVICE_LEVELS` stand for `SERVICE LEVEL` / `SERVICE LEVELS`, as in
//! ScyllaDB. None of these is a Cassandra statement: Cassandra's CREATE/ALTER/DROP never take
//! `SERVICE` next, its LIST takes `ROLES`, `USERS` or a permission (never `SERVICE`,
//! `ATTACHED`, or `ALL SERVICE...`/`ALL ATTACHED`), and it has no ATTACH or DETACH. So the
//! statements are recognised by their first two or three words and no Cassandra statement
//! changes meaning; `service`, `level`, `attached` stay ordinary identifiers everywhere else.

use super::{PResult, Parser};
use crate::ast::{
    Literal, PropertyValue, ServiceLevelOptions, ServiceLevelStatement, WorkloadType,
};
use crate::error::ParseError;
use crate::lexer::Tok;

/// ScyllaDB's bounds of `shares` (`sl_prop_defs`).
pub const MIN_SHARES: u32 = 1;
pub const MAX_SHARES: u32 = 1000;

impl Parser<'_> {
    /// True if the statement here is a service level statement (decided on its first words).
    pub(super) fn at_service_level_statement(&self) -> bool {
        let level_at = |n: usize| {
            self.kw_at_n(n, "service_level")
                || (self.kw_at_n(n, "service") && self.kw_at_n(n + 1, "level"))
        };
        let levels_at = |n: usize| {
            self.kw_at_n(n, "service_levels")
                || (self.kw_at_n(n, "service") && self.kw_at_n(n + 1, "levels"))
        };
        if self.at_kw("create") || self.at_kw("alter") || self.at_kw("drop") {
            return level_at(1);
        }
        if self.at_kw("attach") || self.at_kw("detach") {
            return true;
        }
        if self.at_kw("list") {
            return level_at(1)
                || self.kw_at_n(1, "attached")
                || (self.kw_at_n(1, "effective") && level_at(2))
                || (self.kw_at_n(1, "all") && (levels_at(2) || self.kw_at_n(2, "attached")));
        }
        false
    }

    pub(super) fn service_level_statement(&mut self) -> PResult<ServiceLevelStatement> {
        let t = self.bump();
        let verb = self.text(t).to_ascii_lowercase();
        match verb.as_str() {
            "create" => {
                self.service_level_kw()?;
                let if_not_exists = self.if_not_exists()?;
                let name = self.service_level_name()?;
                let options = if self.eat_kw("with") {
                    self.service_level_options()?
                } else {
                    ServiceLevelOptions::default()
                };
                Ok(ServiceLevelStatement::Create {
                    name,
                    if_not_exists,
                    options,
                })
            }
            "alter" => {
                self.service_level_kw()?;
                let name = self.service_level_name()?;
                self.expect_kw("with")?;
                let options = self.service_level_options()?;
                Ok(ServiceLevelStatement::Alter { name, options })
            }
            "drop" => {
                self.service_level_kw()?;
                let if_exists = self.if_exists()?;
                let name = self.service_level_name()?;
                Ok(ServiceLevelStatement::Drop { name, if_exists })
            }
            "attach" => {
                self.service_level_kw()?;
                let level = self.service_level_name()?;
                self.expect_kw("to")?;
                let role = self.service_level_name()?;
                Ok(ServiceLevelStatement::Attach { level, role })
            }
            "detach" => {
                self.service_level_kw()?;
                self.expect_kw("from")?;
                let role = self.service_level_name()?;
                Ok(ServiceLevelStatement::Detach { role })
            }
            _ => {
                // LIST: decided by `at_service_level_statement`.
                if self.eat_kw("effective") {
                    self.service_level_kw()?;
                    self.expect_kw("of")?;
                    let role = self.service_level_name()?;
                    return Ok(ServiceLevelStatement::ListEffective { role });
                }
                let all = self.eat_kw("all");
                if self.eat_kw("attached") {
                    if all {
                        self.service_levels_kw()?;
                        return Ok(ServiceLevelStatement::ListAttached { role: None });
                    }
                    self.service_level_kw()?;
                    self.expect_kw("of")?;
                    let role = self.service_level_name()?;
                    return Ok(ServiceLevelStatement::ListAttached { role: Some(role) });
                }
                if all {
                    self.service_levels_kw()?;
                    return Ok(ServiceLevelStatement::List { name: None });
                }
                self.service_level_kw()?;
                let name = self.service_level_name()?;
                Ok(ServiceLevelStatement::List { name: Some(name) })
            }
        }
    }

    /// `SERVICE LEVEL` or `SERVICE_LEVEL`.
    fn service_level_kw(&mut self) -> PResult<()> {
        if self.eat_kw("service_level") {
            return Ok(());
        }
        self.expect_kw("service")?;
        self.expect_kw("level")
    }

    /// `SERVICE LEVELS` or `SERVICE_LEVELS`.
    fn service_levels_kw(&mut self) -> PResult<()> {
        if self.eat_kw("service_levels") {
            return Ok(());
        }
        self.expect_kw("service")?;
        self.expect_kw("levels")
    }

    /// ScyllaDB's `serviceLevelOrRoleName`: an unquoted name (lower-cased), a quoted name or
    /// a string literal (case kept); never a bind marker.
    fn service_level_name(&mut self) -> PResult<String> {
        if self.at(Tok::QMark) {
            let t = self.peek();
            return Err(ParseError::syntax_at(
                self.src,
                t.start as usize,
                "Bind variables cannot be used for service levels or role names".into(),
            ));
        }
        self.role_name()
    }

    /// `WITH` properties, checked as ScyllaDB's `sl_prop_defs::validate` checks them.
    fn service_level_options(&mut self) -> PResult<ServiceLevelOptions> {
        let start = self.peek();
        let props = self.properties()?;
        let fail = |msg: String| ParseError::syntax_at(self.src, start.start as usize, msg);
        let mut out = ServiceLevelOptions::default();
        for p in props {
            match p.name.as_str() {
                "shares" => {
                    let text = p.value.as_text().unwrap_or_default();
                    let shares: i64 = text
                        .parse()
                        .map_err(|_| fail(format!("Invalid integer value {text} for 'shares'")))?;
                    if !(i64::from(MIN_SHARES)..=i64::from(MAX_SHARES)).contains(&shares) {
                        return Err(fail(format!(
                            "'SHARES' can only take values of {MIN_SHARES}-{MAX_SHARES} (given {shares})"
                        )));
                    }
                    out.shares = Some(shares as u32);
                }
                "workload_type" => {
                    let w = match &p.value {
                        PropertyValue::Literal(Literal::Null) => None,
                        v => {
                            let text = v.as_text().unwrap_or_default();
                            if text == "null" {
                                None
                            } else {
                                Some(WorkloadType::parse(&text).ok_or_else(|| {
                                    self.invalid(start, format!("Invalid workload type: {text}"))
                                })?)
                            }
                        }
                    };
                    out.workload_type = Some(w);
                }
                "timeout" => {
                    // Checked (a duration in whole milliseconds) where it is applied.
                    out.timeout = Some(match &p.value {
                        PropertyValue::Literal(Literal::Null) => None,
                        v => v.as_text().filter(|t| !t.eq_ignore_ascii_case("null")),
                    });
                }
                other => return Err(fail(format!("Unknown property '{other}'"))),
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use crate::ast::{ServiceLevelOptions, ServiceLevelStatement as S, Statement, WorkloadType};

    fn sl(text: &str) -> S {
        match crate::parse(text).unwrap().statement {
            Statement::ServiceLevel(s) => s,
            other => panic!("{text}: {other:?}"),
        }
    }

    fn err(text: &str) -> String {
        crate::parse(text).unwrap_err().to_string()
    }

    #[test]
    fn every_statement_in_both_spellings() {
        let shares = |n| ServiceLevelOptions {
            shares: Some(n),
            ..Default::default()
        };
        assert_eq!(
            sl("CREATE SERVICE LEVEL IF NOT EXISTS OLAP WITH SHARES = 100"),
            S::Create {
                name: "olap".into(),
                if_not_exists: true,
                options: shares(100)
            }
        );
        assert_eq!(
            sl("create service_level \"Gold\""),
            S::Create {
                name: "Gold".into(),
                if_not_exists: false,
                options: ServiceLevelOptions::default()
            }
        );
        assert_eq!(
            sl("ALTER SERVICE_LEVEL olap WITH shares = 500 AND workload_type = 'batch';"),
            S::Alter {
                name: "olap".into(),
                options: ServiceLevelOptions {
                    shares: Some(500),
                    workload_type: Some(Some(WorkloadType::Batch)),
                    timeout: None,
                }
            }
        );
        assert_eq!(
            sl("DROP SERVICE LEVEL IF EXISTS olap"),
            S::Drop {
                name: "olap".into(),
                if_exists: true
            }
        );
        assert_eq!(
            sl("ATTACH SERVICE LEVEL olap TO 'Spark'"),
            S::Attach {
                level: "olap".into(),
                role: "Spark".into()
            }
        );
        assert_eq!(
            sl("DETACH SERVICE_LEVEL FROM spark"),
            S::Detach {
                role: "spark".into()
            }
        );
        assert_eq!(
            sl("LIST SERVICE LEVEL olap"),
            S::List {
                name: Some("olap".into())
            }
        );
        assert_eq!(sl("LIST ALL SERVICE LEVELS"), S::List { name: None });
        assert_eq!(sl("LIST ALL SERVICE_LEVELS"), S::List { name: None });
        assert_eq!(
            sl("LIST ATTACHED SERVICE LEVEL OF spark"),
            S::ListAttached {
                role: Some("spark".into())
            }
        );
        assert_eq!(
            sl("LIST ALL ATTACHED SERVICE LEVELS"),
            S::ListAttached { role: None }
        );
        assert_eq!(
            sl("LIST EFFECTIVE SERVICE_LEVEL OF 'Spark'"),
            S::ListEffective {
                role: "Spark".into()
            }
        );
        let timeout = |text: &str| match sl(text) {
            S::Alter { options, .. } => options.timeout,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            timeout("ALTER SERVICE LEVEL a WITH timeout = 500ms"),
            Some(Some("500ms".into()))
        );
        assert_eq!(
            timeout("ALTER SERVICE LEVEL a WITH timeout = '1s' AND shares = 5"),
            Some(Some("1s".into()))
        );
        assert_eq!(
            timeout("ALTER SERVICE LEVEL a WITH timeout = null"),
            Some(None)
        );
        assert_eq!(timeout("ALTER SERVICE LEVEL a WITH shares = 5"), None);
    }

    #[test]
    fn options_are_checked_as_scylladb_checks_them() {
        assert!(err("CREATE SERVICE LEVEL a WITH shares = 0")
            .contains("'SHARES' can only take values of 1-1000 (given 0)"));
        assert!(err("CREATE SERVICE LEVEL a WITH shares = 1001")
            .contains("'SHARES' can only take values of 1-1000 (given 1001)"));
        assert!(err("CREATE SERVICE LEVEL a WITH shares = 'x'")
            .contains("Invalid integer value x for 'shares'"));
        assert!(err("CREATE SERVICE LEVEL a WITH speed = 3").contains("Unknown property 'speed'"));
        assert_eq!(
            err("CREATE SERVICE LEVEL a WITH workload_type = 'fast'"),
            "Invalid workload type: fast"
        );
        assert!(err("ATTACH SERVICE LEVEL ? TO r")
            .contains("Bind variables cannot be used for service levels or role names"));
        assert!(crate::parse("ALTER SERVICE LEVEL a").is_err());
    }

    #[test]
    fn cassandra_statements_and_names_keep_their_meaning() {
        // The words are identifiers everywhere else.
        for ok in [
            "CREATE TABLE service (level int PRIMARY KEY, attached int)",
            "SELECT level, attached FROM service",
            "LIST ALL PERMISSIONS OF service",
            "LIST ALL",
            "SELECT effective FROM service",
            "LIST SELECT ON KEYSPACE service",
            "CREATE ROLE service",
            "DROP ROLE service",
        ] {
            let p = crate::parse(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
            assert!(!matches!(p.statement, Statement::ServiceLevel(_)), "{ok}");
        }
    }
}
