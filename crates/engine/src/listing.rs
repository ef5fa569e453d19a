//! The answer of a statement listing the engine's own records (LIST ROLES, USERS,
//! PERMISSIONS, AUTHORIZATIONS; ScyllaDB's LIST SERVICE LEVEL forms): rows built cell by cell
//! in the protocol's encoding, under the keyspace and table the statement's answer names.

use proto::types::ColumnType;

use crate::plan::{wire_columns, OutputColumn};
use crate::{Outcome, ResultSet};

/// Rows under construction: `[bytes]` cells back to back, and their count.
#[derive(Default)]
pub(crate) struct ListRows {
    count: usize,
    data: Vec<u8>,
}

impl ListRows {
    /// Appends one row (`None`: a null cell).
    pub(crate) fn push(&mut self, cells: &[Option<&[u8]>]) {
        self.count += 1;
        for c in cells {
            match c {
                Some(v) => {
                    self.data.extend_from_slice(&(v.len() as i32).to_be_bytes());
                    self.data.extend_from_slice(v);
                }
                None => self.data.extend_from_slice(&(-1i32).to_be_bytes()),
            }
        }
    }

    /// The rows, with these columns of `keyspace.table`, even when there are none.
    pub(crate) fn into_rows(
        self,
        keyspace: &str,
        table: &str,
        columns: &[(&str, ColumnType)],
    ) -> Outcome {
        Outcome::Rows(ResultSet {
            columns: wire_columns(
                keyspace,
                table,
                columns.iter().map(|(n, t)| OutputColumn {
                    name: n.to_string(),
                    ty: t.clone(),
                }),
            ),
            rows: self.count,
            data: self.data,
            head_room: 0,
            paging_state: None,
            warnings: Vec::new(),
        })
    }

    /// The rows of a `system_auth` LIST, or Void when there are none (as Cassandra answers
    /// an empty LIST).
    pub(crate) fn into_auth_list(self, table: &str, columns: &[(&str, ColumnType)]) -> Outcome {
        if self.count == 0 {
            return Outcome::Void;
        }
        self.into_rows("system_auth", table, columns)
    }
}
