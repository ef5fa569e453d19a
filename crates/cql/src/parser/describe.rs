//! `DESCRIBE` / `DESC` and its targets.

use super::*;

impl Parser<'_> {
    // ---- DESCRIBE ----------------------------------------------------------------------------

    pub(super) fn describe(&mut self) -> PResult<DescribeStatement> {
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
    pub(super) fn describe_ends_at(&self, n: usize) -> bool {
        matches!(self.peek_n(n).kind, Tok::Eof | Tok::Semi) || self.kw_at_n(n, "with")
    }

    pub(super) fn describe_target(&mut self) -> PResult<DescribeTarget> {
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
            return Ok(DescribeTarget::Table(self.table_name()?));
        }
        if self.eat_kw("index") {
            return Ok(DescribeTarget::Index(self.qualified_name()?));
        }
        if self.eat_kw("materialized") {
            self.expect_kw("view")?;
            return Ok(DescribeTarget::MaterializedView(self.table_name()?));
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
        Ok(DescribeTarget::Name(self.table_name()?))
    }
}
