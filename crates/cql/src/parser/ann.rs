//! `ORDER BY c ANN OF term` (Cassandra 5.0 vector search) among the orderings of a SELECT.

use super::{PResult, Parser};
use crate::ast::{AnnOrdering, Order};

/// The plain orderings of an ORDER BY clause, and its ANN ordering if it has one.
type Orderings = (Vec<(String, Order)>, Option<AnnOrdering>);

impl Parser<'_> {
    /// After `ORDER BY`: orderings separated by commas, each `c [ASC | DESC]` or
    /// `c ANN OF term`. The ANN ordering is returned apart; a second one is kept in the
    /// plain list as written (`c ASC`) so the planner refuses it as "any other ordering".
    pub(super) fn orderings(&mut self) -> PResult<Orderings> {
        let mut plain = Vec::new();
        let mut ann: Option<AnnOrdering> = None;
        loop {
            let is_ann = self.kw_at_n(1, "ann");
            if is_ann {
                let column = self.ident()?;
                self.expect_kw("ann")?;
                self.expect_kw("of")?;
                let term = self.term()?;
                if ann.is_some() {
                    plain.push((column, Order::Asc));
                } else {
                    ann = Some(AnnOrdering { column, term });
                }
            } else {
                plain.push(self.ordering()?);
            }
            if !self.eat(crate::lexer::Tok::Comma) {
                return Ok((plain, ann));
            }
        }
    }
}
