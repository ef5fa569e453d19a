//! Copying and digesting one token range of one table.
//!
//! A range is read page by page with the table's [`Layout`] select; each row's statements
//! ([`cells::plan`]) run in order, and up to [`ROWS_IN_FLIGHT`] rows are written at once
//! (writes to different rows commute: their order on the target changes nothing, since the
//! write times decide).

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures::stream::{FuturesUnordered, StreamExt};
use scylla::client::session::Session;
use scylla::deserialize::row::ColumnIterator;
use scylla::errors::{DbError, ExecutionError, RequestAttemptError};
use scylla::frame::response::result::ColumnType;
use scylla::response::PagingState;
use scylla::serialize::value::SerializeValue;
use scylla::serialize::writers::{CellWriter, WrittenCellProof};
use scylla::serialize::SerializationError;
use scylla::statement::prepared::PreparedStatement;

use crate::cells::{self, Digest, Layout, Raw, SourceRow, Write};
use crate::ring::TokenRange;
use crate::schema::{CellKind, Column, Table};
use crate::Error;

/// Rows of one range being written at once.
const ROWS_IN_FLIGHT: usize = 32;

/// How long a row is tried again while a target node has not applied the new schema yet.
const SCHEMA_LAG_TIMEOUT: Duration = Duration::from_secs(60);

/// A value already in protocol form, bound as is whatever the column's type.
struct RawValue<'a>(Option<&'a [u8]>);

impl SerializeValue for RawValue<'_> {
    fn serialize<'b>(
        &self,
        _typ: &ColumnType,
        writer: CellWriter<'b>,
    ) -> Result<WrittenCellProof<'b>, SerializationError> {
        match self.0 {
            None => Ok(writer.set_null()),
            Some(b) => writer.set_value(b).map_err(SerializationError::new),
        }
    }
}

fn bind(values: &[Raw]) -> Vec<RawValue<'_>> {
    values.iter().map(|v| RawValue(v.as_deref())).collect()
}

/// Prepared statements by text, shared by every range of a run.
#[derive(Default)]
pub struct Statements {
    prepared: Mutex<HashMap<(bool, String), PreparedStatement>>,
}

impl Statements {
    /// `cql` prepared on the source (`on_source`) or the target, once.
    pub async fn get(
        &self,
        session: &Session,
        on_source: bool,
        cql: &str,
        page_size: i32,
        idempotent: bool,
    ) -> Result<PreparedStatement, Error> {
        let key = (on_source, cql.to_string());
        if let Some(p) = self.lock().get(&key) {
            return Ok(p.clone());
        }
        let mut p = session
            .prepare(cql)
            .await
            .map_err(|e| Error::Cql(format!("cannot prepare {cql}: {e}")))?;
        p.set_page_size(page_size);
        // Reads, and the writes `cells` marks repeatable, the driver may retry on its own.
        p.set_is_idempotent(idempotent);
        self.lock().insert(key, p.clone());
        Ok(p)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(bool, String), PreparedStatement>> {
        self.prepared
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// What one side is: the session and which side it is (prepared statements are per side).
#[derive(Clone, Copy)]
pub struct Side<'a> {
    pub session: &'a Session,
    pub is_source: bool,
}

/// Reads a range of a table page by page.
struct RangeReader {
    select: PreparedStatement,
    range: TokenRange,
    paging: Option<PagingState>,
}

impl RangeReader {
    async fn open(
        side: Side<'_>,
        statements: &Statements,
        table: &Table,
        layout: &Layout,
        range: TokenRange,
        page_size: i32,
    ) -> Result<RangeReader, Error> {
        let select = statements
            .get(
                side.session,
                side.is_source,
                &layout.select(table),
                page_size,
                true,
            )
            .await?;
        Ok(RangeReader {
            select,
            range,
            paging: Some(PagingState::start()),
        })
    }

    /// The next page's rows; `None` after the last page.
    async fn next_page(
        &mut self,
        session: &Session,
        layout: &Layout,
    ) -> Result<Option<Vec<SourceRow>>, Error> {
        let Some(paging) = self.paging.take() else {
            return Ok(None);
        };
        let err = |e: String| Error::Cql(format!("reading {}: {e}", self.select.get_statement()));
        let (result, next) = session
            .execute_single_page(&self.select, (self.range.start, self.range.end), paging)
            .await
            .map_err(|e| err(e.to_string()))?;
        if let ControlFlow::Continue(state) = next.into_paging_control_flow() {
            self.paging = Some(state);
        }
        let rows = result.into_rows_result().map_err(|e| err(e.to_string()))?;
        let mut out = Vec::new();
        for row in rows
            .rows::<ColumnIterator>()
            .map_err(|e| err(e.to_string()))?
        {
            let row = row.map_err(|e| err(e.to_string()))?;
            let mut columns: Vec<Raw> = Vec::new();
            for col in row {
                let col = col.map_err(|e| err(e.to_string()))?;
                columns.push(col.slice.map(|s| s.as_slice().to_vec()));
            }
            out.push(layout.row(columns).map_err(err)?);
        }
        Ok(Some(out))
    }
}

/// The row count and checksum of a range on one side.
pub async fn digest(
    side: Side<'_>,
    statements: &Statements,
    table: &Table,
    layout: &Layout,
    range: TokenRange,
    page_size: i32,
) -> Result<Digest, Error> {
    let mut reader = RangeReader::open(side, statements, table, layout, range, page_size).await?;
    let mut d = Digest::default();
    while let Some(rows) = reader.next_page(side.session, layout).await? {
        rows.iter().for_each(|r| d.add(r));
    }
    Ok(d)
}

/// What copying a range did.
#[derive(Debug, Default, Clone, Copy)]
pub struct Copied {
    pub rows: u64,
    pub statements: u64,
}

/// Everything a range copy needs.
pub struct CopyJob<'a> {
    pub source: Side<'a>,
    pub target: Side<'a>,
    pub statements: &'a Statements,
    pub table: &'a Table,
    pub layout: &'a Layout,
    pub range: TokenRange,
    pub page_size: i32,
    pub default_ts: i64,
}

/// Copies one range of one table from the source to the target.
pub async fn copy_range(job: &CopyJob<'_>) -> Result<Copied, Error> {
    let mut reader = RangeReader::open(
        job.source,
        job.statements,
        job.table,
        job.layout,
        job.range,
        job.page_size,
    )
    .await?;
    let mut copied = Copied::default();
    let mut previous_partition: Option<Vec<Raw>> = None;
    while let Some(rows) = reader.next_page(job.source.session, job.layout).await? {
        let mut in_flight = FuturesUnordered::new();
        for row in rows {
            let pk = row.keys[..job.layout.partition_key_count].to_vec();
            // Static cells repeat on every row of a partition: written with its first row.
            let first_of_partition = previous_partition.as_ref() != Some(&pk);
            previous_partition = Some(pk);
            copied.rows += 1;
            in_flight.push(write_row_when_schema_settles(job, row, first_of_partition));
            if in_flight.len() >= ROWS_IN_FLIGHT {
                if let Some(n) = in_flight.next().await {
                    copied.statements += n?;
                }
            }
        }
        while let Some(n) = in_flight.next().await {
            copied.statements += n?;
        }
    }
    Ok(copied)
}

/// [`write_row`], tried again while a target node answers that it does not know the table yet.
///
/// Schema agreement (see `crate::schema::await_tables_on_every_node`) is checked before the
/// copy, but a replica can still be applying a new table when the first writes reach it (seen
/// under load on a two-node Cassandra 5.0 as INCOMPATIBLE_SCHEMA). Trying the whole row again
/// is safe: it re-reads the target's lists and counters before writing them, as a resumed run
/// does, and every other write is repeatable.
async fn write_row_when_schema_settles(
    job: &CopyJob<'_>,
    row: SourceRow,
    first_of_partition: bool,
) -> Result<u64, Error> {
    let deadline = Instant::now() + SCHEMA_LAG_TIMEOUT;
    let mut pause = Duration::from_millis(50);
    loop {
        match write_row(job, &row, first_of_partition).await {
            Err(Error::SchemaLag(_)) if Instant::now() < deadline => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(1));
            }
            done => return done,
        }
    }
}

async fn write_row(
    job: &CopyJob<'_>,
    row: &SourceRow,
    first_of_partition: bool,
) -> Result<u64, Error> {
    let mut n = 0;
    let mut kinds = Vec::new();
    if first_of_partition && !job.table.statics.is_empty() {
        kinds.push(true);
    }
    if row.is_clustering_row(job.layout) {
        kinds.push(false);
    }
    for statics in kinds {
        let target_values = read_target(job, row, statics).await?;
        let writes = cells::plan(
            job.table,
            job.layout,
            row,
            statics,
            &target_values,
            job.default_ts,
        )
        .map_err(|e| Error::Row {
            table: job.table.qualified(),
            token: row.token,
            reason: e.0,
        })?;
        for w in &writes {
            execute(job, w).await?;
            n += 1;
        }
    }
    Ok(n)
}

async fn execute(job: &CopyJob<'_>, w: &Write) -> Result<(), Error> {
    let p = job
        .statements
        .get(
            job.target.session,
            false,
            &w.cql,
            job.page_size,
            w.repeatable,
        )
        .await?;
    job.target
        .session
        .execute_unpaged(&p, bind(&w.values))
        .await
        .map_err(|e| target_error(format!("writing to the target with {}", w.cql), e))?;
    Ok(())
}

/// `context: e`, as [`Error::SchemaLag`] when a target node did not know the table yet: a
/// replica's INCOMPATIBLE_SCHEMA failure, or a coordinator's "unconfigured table".
fn target_error(context: String, e: ExecutionError) -> Error {
    let lag = match &e {
        ExecutionError::LastAttemptError(RequestAttemptError::DbError(db, message)) => match db {
            DbError::WriteFailure { .. } | DbError::ReadFailure { .. } => {
                message.contains("INCOMPATIBLE_SCHEMA")
            }
            DbError::Invalid => message.starts_with("unconfigured table"),
            _ => false,
        },
        _ => false,
    };
    let text = format!("{context}: {e}");
    if lag {
        Error::SchemaLag(text)
    } else {
        Error::Cql(text)
    }
}

/// The lists and counters of the row (or of its partition's statics) that the target holds
/// now, in layout order: what [`cells::plan`] compares the source's with.
async fn read_target(job: &CopyJob<'_>, row: &SourceRow, statics: bool) -> Result<Vec<Raw>, Error> {
    let cols: Vec<&Column> = job
        .layout
        .cells
        .iter()
        .filter(|(c, s)| *s == statics && matches!(c.cell, CellKind::List | CellKind::Counter))
        .map(|(c, _)| c)
        .collect();
    if cols.is_empty() {
        return Ok(Vec::new());
    }
    let keys: Vec<&Column> = if statics {
        job.table.partition_key.iter().collect()
    } else {
        job.table.keys().collect()
    };
    let cql = format!(
        "SELECT {} FROM {} WHERE {}",
        cols.iter()
            .map(|c| c.quoted())
            .collect::<Vec<_>>()
            .join(", "),
        job.table.qualified(),
        keys.iter()
            .map(|c| format!("{} = ?", c.quoted()))
            .collect::<Vec<_>>()
            .join(" AND ")
    );
    let p = job
        .statements
        .get(job.target.session, false, &cql, job.page_size, true)
        .await?;
    let result = job
        .target
        .session
        .execute_unpaged(&p, bind(&row.keys[..keys.len()]))
        .await
        .map_err(|e| target_error(format!("reading the target with {cql}"), e))?;
    let rows = result
        .into_rows_result()
        .map_err(|e| Error::Cql(format!("{cql}: {e}")))?;
    let mut it = rows
        .rows::<ColumnIterator>()
        .map_err(|e| Error::Cql(format!("{cql}: {e}")))?;
    let Some(first) = it.next() else {
        return Ok(vec![None; cols.len()]);
    };
    let first = first.map_err(|e| Error::Cql(format!("{cql}: {e}")))?;
    first
        .map(|c| {
            c.map(|c| c.slice.map(|s| s.as_slice().to_vec()))
                .map_err(|e| Error::Cql(format!("{cql}: {e}")))
        })
        .collect()
}
