//! `CREATE / ALTER / DROP MATERIALIZED VIEW`.

use super::{PResult, Parser};
use crate::ast::{CreateView, Statement, TableOptions};
use crate::error::ParseError;
use crate::lexer::Tok;

impl Parser<'_> {
    /// After `CREATE`: `MATERIALIZED VIEW [IF NOT EXISTS] name AS SELECT ... FROM t WHERE ...
    /// PRIMARY KEY (...) [WITH options]`.
    pub(super) fn create_view(&mut self) -> PResult<Statement> {
        self.expect_kw("materialized")?;
        self.expect_kw("view")?;
        let if_not_exists = self.if_not_exists()?;
        let name = self.table_name()?;
        self.expect_kw("as")?;
        let start = self.pos;
        let binds_before = self.binds.len();
        let select = self.select()?;
        // Cassandra's view grammar has no SELECT modifiers: `JSON` or `DISTINCT` after SELECT
        // is read as a column, so the word after it fails the prediction begun there (`SELECT
        // [DISTINCT] k`), or, after a `*` (read as a product), `FROM` does (`DISTINCT * [FROM]`).
        if select.json || select.distinct {
            let end = self.pos;
            let e = if self
                .toks
                .get(start + 2)
                .is_some_and(|t| t.kind == Tok::Star)
            {
                // ANTLR fetched no token past FROM there: the snippet ends at it.
                self.pos = start + 3;
                self.far = self.pos;
                self.no_viable_from(start + 3)
            } else {
                self.pos = start + 2;
                self.no_viable_from(start + 1)
            };
            self.pos = end;
            return Err(e);
        }
        if self.binds.len() > binds_before {
            return Err(self.invalid(
                self.toks[start],
                "Bind variables are not allowed in CREATE MATERIALIZED VIEW statements".into(),
            ));
        }
        self.expect_kw("primary")?;
        self.expect_kw("key")?;
        self.expect(Tok::LParen)?;
        let partition_key = if self.eat(Tok::LParen) {
            let v = self.comma_list(Self::ident)?;
            self.expect(Tok::RParen)?;
            v
        } else {
            vec![self.ident()?]
        };
        let mut clustering_columns = Vec::new();
        while self.eat(Tok::Comma) {
            clustering_columns.push(self.ident()?);
        }
        self.expect(Tok::RParen)?;
        let options = self.view_options()?;
        Ok(Statement::CreateView(CreateView {
            name,
            if_not_exists,
            select,
            partition_key,
            clustering_columns,
            options,
        }))
    }

    fn view_options(&mut self) -> PResult<TableOptions> {
        if !self.eat_kw("with") {
            return Ok(TableOptions::default());
        }
        // 5.0.9's view grammar throws at COMPACT STORAGE, ahead of the errors it only records
        // (a property named twice, before or after it).
        let rest = &self.toks[self.pos..];
        let compact = rest.windows(2).any(|w| {
            self.text(w[0]).eq_ignore_ascii_case("compact")
                && self.text(w[1]).eq_ignore_ascii_case("storage")
        });
        if compact {
            return Err(ParseError::unpositioned(
                "COMPACT STORAGE tables are not allowed starting with version 4.0".into(),
            ));
        }
        self.table_options()
    }

    /// After `ALTER`: `MATERIALIZED VIEW [IF EXISTS] name WITH options`.
    pub(super) fn alter_view(&mut self) -> PResult<Statement> {
        self.expect_kw("materialized")?;
        self.expect_kw("view")?;
        let if_exists = self.if_exists()?;
        let name = self.table_name()?;
        self.expect_kw("with")?;
        let options = self.alter_properties()?;
        Ok(Statement::AlterView {
            name,
            if_exists,
            options,
        })
    }

    /// After `DROP`: `MATERIALIZED VIEW [IF EXISTS] name`.
    pub(super) fn drop_view(&mut self) -> PResult<Statement> {
        self.expect_kw("materialized")?;
        self.expect_kw("view")?;
        let if_exists = self.if_exists()?;
        let name = self.table_name()?;
        Ok(Statement::DropView { name, if_exists })
    }
}

#[cfg(test)]
mod tests {
    use crate::ast::Statement;

    #[test]
    fn create_view_keeps_where_text_and_key() {
        let st = crate::parse(
            "CREATE MATERIALIZED VIEW IF NOT EXISTS ks.v AS SELECT * FROM ks.t \
             WHERE v IS NOT NULL AND k IS NOT NULL PRIMARY KEY ((v), k) \
             WITH CLUSTERING ORDER BY (k DESC) AND comment = 'x'",
        )
        .unwrap();
        let Statement::CreateView(cv) = st.statement else {
            panic!("{st:?}")
        };
        assert!(cv.if_not_exists);
        assert_eq!(cv.partition_key, vec!["v"]);
        assert_eq!(cv.clustering_columns, vec!["k"]);
        assert_eq!(cv.select.where_clause.len(), 2);
        assert_eq!(cv.options.clustering_order.len(), 1);
    }

    #[test]
    fn select_modifiers_and_bind_markers_are_refused() {
        for (q, want) in [
            ("CREATE MATERIALIZED VIEW v AS SELECT DISTINCT k FROM t WHERE k IS NOT NULL PRIMARY KEY (k)", "no viable alternative at input 'k'"),
            ("CREATE MATERIALIZED VIEW v AS SELECT JSON k FROM t WHERE k IS NOT NULL PRIMARY KEY (k)", "no viable alternative at input 'k'"),
            ("CREATE MATERIALIZED VIEW v AS SELECT k FROM t WHERE k IN ? PRIMARY KEY (k)", "Bind variables are not allowed"),
        ] {
            let e = crate::parse(q).unwrap_err().to_string();
            assert!(e.contains(want), "{q}: {e}");
        }
    }

    #[test]
    fn alter_and_drop_view() {
        let st = crate::parse("ALTER MATERIALIZED VIEW v WITH comment = 'c'").unwrap();
        assert!(matches!(st.statement, Statement::AlterView { .. }));
        let st = crate::parse("DROP MATERIALIZED VIEW IF EXISTS ks.v").unwrap();
        assert!(matches!(
            st.statement,
            Statement::DropView {
                if_exists: true,
                ..
            }
        ));
    }
}
