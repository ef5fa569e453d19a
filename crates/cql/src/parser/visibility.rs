//! Peregrine's visibility-label extension (docs/visibility.md), parsed only where Cassandra's
//! grammar has no meaning, so that no valid Cassandra statement changes:
//! - `USING VISIBILITY 'expr'` (or a bind marker, `VISIBILITY ?` / `VISIBILITY :v`) among
//!   `TTL` and `TIMESTAMP` (Cassandra accepts only those two);
//! - `GRANT AUTHORIZATIONS 'a', ... TO role` and `REVOKE AUTHORIZATIONS 'a', ... FROM role`
//!   (a string after the role name is no Cassandra statement, while `GRANT authorizations TO r`,
//!   a role named `authorizations`, still is);
//! - `LIST AUTHORIZATIONS [OF role]` (not a permission's name).

use super::{PResult, Parser};
use crate::ast::{AuthorizationsStatement, Literal, Statement, Term};
use crate::lexer::Tok;

impl Parser<'_> {
    /// At `VISIBILITY 'string'`, `VISIBILITY ?` or `VISIBILITY :name` inside a USING clause.
    pub(super) fn at_visibility(&self) -> bool {
        self.at_kw("visibility")
            && matches!(
                self.peek_n(1).kind,
                Tok::Str | Tok::DollarStr | Tok::QMark | Tok::Colon
            )
    }

    /// `VISIBILITY 'expr'` or `VISIBILITY ?`/`:name`: a string literal (the expression's text,
    /// checked by the engine, which knows the table) or a bind marker.
    pub(super) fn visibility_clause(&mut self) -> PResult<Term> {
        self.expect_kw("visibility")?;
        if matches!(self.peek().kind, Tok::QMark | Tok::Colon) {
            return Ok(Term::Bind(self.bind_marker()?));
        }
        Ok(Term::Literal(Literal::String(self.string_literal()?)))
    }

    /// At `AUTHORIZATIONS 'string'` after GRANT or REVOKE.
    pub(super) fn at_authorizations(&self) -> bool {
        self.at_kw("authorizations") && matches!(self.peek_n(1).kind, Tok::Str | Tok::DollarStr)
    }

    /// After GRANT (`grant`) or REVOKE: `AUTHORIZATIONS 'a', 'b' TO|FROM role`.
    pub(super) fn authorizations_change(&mut self, grant: bool) -> PResult<Statement> {
        self.expect_kw("authorizations")?;
        let auths = self.comma_list(Self::string_literal)?;
        self.expect_kw(if grant { "to" } else { "from" })?;
        let role = self.role_name()?;
        Ok(Statement::Authorizations(if grant {
            AuthorizationsStatement::Grant { auths, role }
        } else {
            AuthorizationsStatement::Revoke { auths, role }
        }))
    }

    /// After LIST: `AUTHORIZATIONS [OF role]`.
    pub(super) fn list_authorizations(&mut self) -> PResult<Statement> {
        self.expect_kw("authorizations")?;
        let of = if self.eat_kw("of") {
            Some(self.role_name()?)
        } else {
            None
        };
        Ok(Statement::Authorizations(AuthorizationsStatement::List {
            of,
        }))
    }
}

#[cfg(test)]
mod tests {
    use crate::ast::{AuthorizationsStatement as A, BindMarker, Literal, Statement, Term};

    fn parse(q: &str) -> Statement {
        crate::parse(q).expect(q).statement
    }

    #[test]
    fn using_visibility_combines_with_ttl_and_timestamp() {
        let Statement::Insert(i) =
            parse("INSERT INTO t (k, v) VALUES (1, 2) USING TTL 5 AND VISIBILITY 'A|(B&C)' AND TIMESTAMP 3")
        else {
            panic!("not an insert")
        };
        assert_eq!(
            i.using.visibility,
            Some(Term::Literal(Literal::String("A|(B&C)".into())))
        );
        assert!(i.using.ttl.is_some() && i.using.timestamp.is_some());
        let Statement::Update(u) = parse("UPDATE t USING VISIBILITY '' SET v = 1 WHERE k = 1")
        else {
            panic!("not an update")
        };
        assert_eq!(
            u.using.visibility,
            Some(Term::Literal(Literal::String(String::new())))
        );
        let Statement::Batch(b) = parse(
            "BEGIN BATCH INSERT INTO t (k) VALUES (1) USING VISIBILITY 'A'; \
             UPDATE t USING VISIBILITY 'B' SET v = 1 WHERE k = 2; APPLY BATCH",
        ) else {
            panic!("not a batch")
        };
        assert_eq!(b.statements.len(), 2);
    }

    #[test]
    fn using_visibility_takes_bind_markers() {
        let p = crate::parse(
            "INSERT INTO t (k, v) VALUES (?, ?) USING TTL ? AND VISIBILITY ? AND TIMESTAMP ?",
        )
        .unwrap();
        let Statement::Insert(i) = p.statement else {
            panic!("not an insert")
        };
        assert!(matches!(
            i.using.visibility,
            Some(Term::Bind(BindMarker {
                index: 3,
                name: None
            }))
        ));
        assert_eq!(p.bind_markers.len(), 5);
        let Statement::Update(u) =
            parse("UPDATE t USING VISIBILITY :lbl AND TTL 3 SET v = :v WHERE k = :k")
        else {
            panic!("not an update")
        };
        assert!(matches!(
            u.using.visibility,
            Some(Term::Bind(BindMarker { index: 0, name: Some(ref n) })) if n == "lbl"
        ));
        // Only a string or a marker: not an integer, not a bare keyword.
        assert!(crate::parse("INSERT INTO t (k) VALUES (1) USING VISIBILITY 3").is_err());
        assert!(crate::parse("INSERT INTO t (k) VALUES (1) USING VISIBILITY :").is_err());
    }

    #[test]
    fn authorization_statements() {
        assert_eq!(
            parse("GRANT AUTHORIZATIONS 'A', 'b:c' TO alice"),
            Statement::Authorizations(A::Grant {
                auths: vec!["A".into(), "b:c".into()],
                role: "alice".into()
            })
        );
        assert_eq!(
            parse("REVOKE AUTHORIZATIONS 'A' FROM 'Alice'"),
            Statement::Authorizations(A::Revoke {
                auths: vec!["A".into()],
                role: "Alice".into()
            })
        );
        assert_eq!(
            parse("LIST AUTHORIZATIONS OF bob"),
            Statement::Authorizations(A::List {
                of: Some("bob".into())
            })
        );
        assert_eq!(
            parse("LIST AUTHORIZATIONS"),
            Statement::Authorizations(A::List { of: None })
        );
    }

    #[test]
    fn cassandra_statements_keep_their_meaning() {
        // A role named `authorizations` is still granted as a role.
        assert!(matches!(
            parse("GRANT authorizations TO bob"),
            Statement::GrantRole { .. }
        ));
        assert!(matches!(
            parse("REVOKE authorizations FROM bob"),
            Statement::RevokeRole { .. }
        ));
        // `visibility` as a column or table name is untouched.
        assert!(matches!(
            parse("INSERT INTO visibility (k, visibility) VALUES (1, 'x') USING TTL 1"),
            Statement::Insert(_)
        ));
        assert!(crate::parse("INSERT INTO t (k) VALUES (1) USING VISIBILITY").is_err());
        assert!(crate::parse("INSERT INTO t (k) VALUES (1) USING VISIBILITY 3").is_err());
    }
}
