//! `DELETE ... RETURNING <selectors> | *`, Peregrine's atomic read-then-delete (an extension
//! to CQL, specified in docs/extensions.md).
//!
//! The statement compiles to two plans over the same WHERE clause (so the same bind markers):
//! the DELETE's write plan and a SELECT of the RETURNING selectors. Running it locks the
//! stripes of every partition the DELETE names (the locks every write takes in
//! [`Engine::apply`]), reads the rows, then deletes them under the same locks, so no write
//! lands between the read and the delete and two competing deleters return each row once. The
//! conditional form is a conditional write like the others: the same locks serialise it.
//!
//! The tombstone's timestamp is the newest write timestamp stored in those partitions, not a
//! fresh one: a write racing the delete with a newer timestamp (even one whose timestamp was
//! taken before the delete ran, but which reaches its partition after it) survives instead of
//! vanishing unreturned. A delete that finds no row writes nothing. `USING TIMESTAMP` still
//! sets the timestamp when written.

use crate::build::Builder;
use crate::catalog::TableDef;
use crate::exec::{self, Mutations};
use crate::plan::{SelectPlan, WritePlan};
use crate::row::{PartitionHeader, Row};
use crate::{keys, lwt, Engine, EngineError, Now, Outcome, ResultSet};
use cql::ast;
use proto::response::ColumnSpec;
use proto::types::ColumnType;
use std::ops::Bound;

/// A compiled `DELETE ... RETURNING`.
#[derive(Debug, Clone)]
pub struct DeleteReturning {
    pub write: WritePlan,
    /// The RETURNING selectors over the DELETE's WHERE clause.
    pub read: SelectPlan,
}

/// Builds both plans of a `DELETE ... RETURNING` (`s.returning` is set).
pub(crate) fn compile(
    b: &mut Builder<'_>,
    s: &ast::DeleteStatement,
) -> Result<DeleteReturning, EngineError> {
    let write = b.delete(s)?;
    let selection = s.returning.clone().unwrap_or(ast::Selection::Wildcard);
    let select = ast::SelectStatement {
        table: s.table.clone(),
        json: false,
        distinct: false,
        selection,
        where_clause: s.where_clause.clone(),
        group_by: Vec::new(),
        order_by: Vec::new(),
        ann: None,
        per_partition_limit: None,
        limit: None,
        allow_filtering: false,
    };
    let read = b.select(&select)?;
    Ok(DeleteReturning { write, read })
}

use crate::exec::Bindings;

impl Engine {
    /// Runs a `DELETE ... RETURNING`: the rows as they were, deleted in the same step.
    pub(crate) fn delete_returning(
        &self,
        r: &DeleteReturning,
        vals: &Bindings,
        now: Now,
    ) -> Result<Outcome, EngineError> {
        let t = &r.write.table;
        let parts = exec::partitions(t, &r.write.partition, vals)?;
        let (stripes, _guards) = self.lock_partitions(parts.iter().map(|p| p.prefix.as_slice()));
        let applied = match &r.write.condition {
            Some(cond) => {
                let current = self.read_current(&r.write, &parts, vals, now)?;
                lwt::holds(t, cond, vals, &current, now)?
            }
            None => true,
        };
        let rs = self.run_select(self.storage.as_ref(), &r.read, vals, None, None, now)?;
        if applied && rs.rows > 0 {
            let prefixes: Vec<&[u8]> = parts.iter().map(|p| p.prefix.as_slice()).collect();
            let ts = self.newest_write(t, &prefixes)?;
            let mut m = Mutations::default();
            self.mutations(&r.write, vals, now, ts, &mut m)?;
            self.apply_holding(m, &stripes, &[])?;
        }
        Ok(Outcome::Rows(match &r.write.condition {
            Some(_) => with_applied(rs, applied),
            None => rs,
        }))
    }

    /// The newest write timestamp stored in the partitions (statics, row markers, cells; not
    /// the cells of a dropped column, which are no part of any row, so that a tombstone
    /// above every visible write does not also shadow later writes older than them).
    fn newest_write(&self, t: &TableDef, prefixes: &[&[u8]]) -> Result<Option<i64>, EngineError> {
        let mut newest: Option<i64> = None;
        let mut note = |ts: i64| newest = Some(newest.map_or(ts, |n| n.max(ts)));
        for prefix in prefixes {
            if let Some(h) = self.storage.get(&keys::header_key(prefix))? {
                let h = PartitionHeader::decode(&h).map_err(EngineError::corrupt)?;
                h.statics
                    .iter()
                    .filter(|c| t.holds(c))
                    .for_each(|c| note(c.ts));
            }
            let start = keys::row_key(prefix, &[]);
            let end = keys::prefix_end(&start);
            for item in self.storage.scan(
                Bound::Included(start.as_slice()),
                Bound::Excluded(end.as_slice()),
                false,
            ) {
                let (_, v) = item?;
                let row = Row::decode_shared(&v).map_err(EngineError::corrupt)?;
                if let Some(m) = &row.marker {
                    note(m.ts);
                }
                row.cells
                    .iter()
                    .filter(|c| t.holds(c))
                    .for_each(|c| note(c.ts));
            }
        }
        Ok(newest)
    }
}

/// The conditional form's answer: `[applied]` before the RETURNING columns, and at least one
/// row (nulls when no row was there), so a driver's `was_applied` always has a row to read.
fn with_applied(rs: ResultSet, applied: bool) -> ResultSet {
    let first = rs.columns.first();
    let mut columns = vec![ColumnSpec {
        keyspace: first.map(|c| c.keyspace.clone()).unwrap_or_default(),
        table: first.map(|c| c.table.clone()).unwrap_or_default(),
        name: "[applied]".into(),
        ty: ColumnType::Boolean,
    }];
    columns.extend(rs.columns.iter().cloned());
    let width = rs.columns.len();
    let mut data = Vec::with_capacity(rs.data.len() + 5 * rs.rows.max(1));
    let mut at = rs.head_room;
    for _ in 0..rs.rows {
        data.extend_from_slice(&1i32.to_be_bytes());
        data.push(applied as u8);
        let start = at;
        for _ in 0..width {
            let len = i32::from_be_bytes(rs.data[at..at + 4].try_into().unwrap_or([0; 4]));
            at += 4 + len.max(0) as usize;
        }
        data.extend_from_slice(&rs.data[start..at]);
    }
    if rs.rows == 0 {
        data.extend_from_slice(&1i32.to_be_bytes());
        data.push(applied as u8);
        for _ in 0..width {
            data.extend_from_slice(&(-1i32).to_be_bytes());
        }
    }
    ResultSet {
        columns: columns.into(),
        rows: rs.rows.max(1),
        data,
        head_room: 0,
        paging_state: None,
        warnings: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use crate::tests::{q, rows, setup};

    /// The tombstone's timestamp leaves out the cells of a dropped column: a later write
    /// newer than every visible write (yet older than such a cell) is not shadowed.
    #[test]
    fn the_tombstone_time_ignores_a_dropped_columns_cells() {
        let e = setup();
        let ks = Some("ks");
        for s in [
            "CREATE TABLE t (k int, c int, v int, z int, PRIMARY KEY (k, c))",
            "INSERT INTO t (k, c, v) VALUES (0, 0, 1) USING TIMESTAMP 1000",
            "UPDATE t USING TIMESTAMP 5000 SET z = 1 WHERE k = 0 AND c = 0",
            "ALTER TABLE t DROP z",
        ] {
            q(&e, ks, s).unwrap();
        }
        let gone = q(&e, ks, "DELETE FROM t WHERE k = 0 AND c = 0 RETURNING v").unwrap();
        assert_eq!(rows(gone), vec![vec!["1"]]);
        q(
            &e,
            ks,
            "INSERT INTO t (k, c, v) VALUES (0, 0, 2) USING TIMESTAMP 3000",
        )
        .unwrap();
        let now = q(&e, ks, "SELECT v FROM t WHERE k = 0 AND c = 0").unwrap();
        assert_eq!(rows(now), vec![vec!["2"]]);
    }
}
