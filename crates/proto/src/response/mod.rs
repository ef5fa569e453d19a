//! Response bodies (spec section 4.2): encoded by the server, decoded by tests and proxy mode.
//!
//! | module | what |
//! |---|---|
//! | this file | the response types as the spec lays them out (RESULT kinds, EVENT, schema changes) |
//! | `encode` | bodies to bytes; errors downgraded for older protocol versions |
//! | `decode` | bytes to bodies, every length checked against what remains |
//!
//! Rows carry their cells pre-serialized (`Rows::data`), built by `RowsBuilder` into one buffer
//! without a per-cell allocation; encoding a Rows result is the metadata plus one copy.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::{DbError, FailureReason, WriteType};
use crate::frame::{self, flags, Compression, Envelope, Opcode, ProtocolVersion};
use crate::request::Consistency;
use crate::types::{ColumnType, Value};
use crate::wire::{self, Reader};

/// A response message.
#[derive(Debug, Clone, PartialEq)]
pub enum Response {
    Error(DbError),
    Ready,
    /// The authenticator class name, e.g. `org.apache.cassandra.auth.PasswordAuthenticator`.
    Authenticate(String),
    Supported(Vec<(String, Vec<String>)>),
    Result(ResultBody),
    Event(Event),
    AuthChallenge(Option<Bytes>),
    AuthSuccess(Option<Bytes>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum ResultBody {
    Void,
    Rows(Rows),
    /// A whole RESULT body (kind included) encoded earlier for the same protocol version,
    /// written as is: a cached result answered without encoding it again.
    Encoded(Bytes),
    SetKeyspace(String),
    Prepared(Prepared),
    SchemaChange(SchemaChange),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnSpec {
    pub keyspace: String,
    pub table: String,
    pub name: String,
    pub ty: ColumnType,
}

/// Result metadata of a Rows result (and the result half of a Prepared result).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RowsMetadata {
    pub columns: Arc<[ColumnSpec]>,
    /// Set means "has more pages".
    pub paging_state: Option<Bytes>,
    /// Only flags, column count and paging state are sent (the client asked to skip them,
    /// or a Prepared result has no result set). `columns.len()` is still the column count.
    pub no_metadata: bool,
    /// v5 `Metadata_changed`: the new result metadata id the client should use.
    pub new_metadata_id: Option<Bytes>,
}

/// Result metadata flag bits.
pub mod rows_flags {
    pub const GLOBAL_TABLES_SPEC: i32 = 0x0001;
    pub const HAS_MORE_PAGES: i32 = 0x0002;
    pub const NO_METADATA: i32 = 0x0004;
    pub const METADATA_CHANGED: i32 = 0x0008;
}

/// A page of rows. `data` is `rows_count * columns` `[bytes]` cells back to back
/// (i32 length, -1 = null).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rows {
    pub metadata: RowsMetadata,
    pub rows_count: i32,
    pub data: Bytes,
}

impl Rows {
    /// Walks the cells of `data` as `(row, column, cell)`; stops early on malformed data.
    pub fn cells(&self) -> impl Iterator<Item = Option<&[u8]>> + '_ {
        let mut pos = 0usize;
        let d = &self.data[..];
        std::iter::from_fn(move || {
            let s = d.get(pos..pos + 4)?;
            pos += 4;
            let n = i32::from_be_bytes([s[0], s[1], s[2], s[3]]);
            if n < 0 {
                return Some(None);
            }
            let c = d.get(pos..pos + n as usize)?;
            pos += n as usize;
            Some(Some(c))
        })
    }

    /// Decodes all cells with the column types (tests, proxy debugging; not the hot path).
    pub fn decode_rows(&self) -> Result<Vec<Vec<Value>>, DbError> {
        let cols = &self.metadata.columns;
        if cols.is_empty() {
            return Ok(Vec::new());
        }
        let mut rows = Vec::new();
        let mut row = Vec::with_capacity(cols.len());
        for cell in self.cells() {
            let ty = &cols[row.len()].ty;
            row.push(match cell {
                None => Value::Null,
                Some(b) => crate::value::decode_value(ty, b)?,
            });
            if row.len() == cols.len() {
                rows.push(std::mem::replace(&mut row, Vec::with_capacity(cols.len())));
            }
        }
        Ok(rows)
    }
}

/// Builds `Rows` cell by cell into one buffer.
#[derive(Debug, Default)]
pub struct RowsBuilder {
    buf: BytesMut,
    rows: i32,
    cells_in_row: usize,
    scratch: Vec<u8>,
}

impl RowsBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_capacity(bytes: usize) -> Self {
        RowsBuilder {
            buf: BytesMut::with_capacity(bytes),
            ..Self::default()
        }
    }

    /// Appends a serialized cell (`None` = null).
    pub fn push_cell(&mut self, cell: Option<&[u8]>) {
        wire::put_bytes(&mut self.buf, cell);
        self.cells_in_row += 1;
    }

    /// Appends a typed value (serialized through a reused scratch buffer).
    pub fn push_value(&mut self, v: &Value) {
        if matches!(v, Value::Null) {
            self.push_cell(None);
            return;
        }
        self.scratch.clear();
        crate::value::encode_value(v, &mut self.scratch);
        wire::put_bytes(&mut self.buf, Some(&self.scratch));
        self.cells_in_row += 1;
    }

    /// Closes the current row.
    pub fn end_row(&mut self) {
        self.rows += 1;
        self.cells_in_row = 0;
    }

    pub fn rows_count(&self) -> i32 {
        self.rows
    }

    /// Bytes of cell data so far (for page-size limits in bytes).
    pub fn data_len(&self) -> usize {
        self.buf.len()
    }

    pub fn finish(self, metadata: RowsMetadata) -> Rows {
        Rows {
            metadata,
            rows_count: self.rows,
            data: self.buf.freeze(),
        }
    }
}

/// Bind-variable metadata of a Prepared result.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PreparedMetadata {
    pub columns: Vec<ColumnSpec>,
    /// Indexes (into `columns`) of the bound partition key components, v4+.
    pub pk_indexes: Vec<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    pub id: Bytes,
    /// v5 only.
    pub result_metadata_id: Option<Bytes>,
    pub bind_metadata: PreparedMetadata,
    pub result_metadata: RowsMetadata,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SchemaChangeType {
    Created,
    Updated,
    Dropped,
}

impl SchemaChangeType {
    pub fn as_str(self) -> &'static str {
        match self {
            SchemaChangeType::Created => "CREATED",
            SchemaChangeType::Updated => "UPDATED",
            SchemaChangeType::Dropped => "DROPPED",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchemaChangeTarget {
    Keyspace(String),
    Table {
        keyspace: String,
        name: String,
    },
    Type {
        keyspace: String,
        name: String,
    },
    Function {
        keyspace: String,
        name: String,
        args: Vec<String>,
    },
    Aggregate {
        keyspace: String,
        name: String,
        args: Vec<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaChange {
    pub change: SchemaChangeType,
    pub target: SchemaChangeTarget,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    SchemaChange(SchemaChange),
    /// `change` is `NEW_NODE` or `REMOVED_NODE`.
    TopologyChange {
        change: String,
        addr: SocketAddr,
    },
    /// `change` is `UP` or `DOWN`.
    StatusChange {
        change: String,
        addr: SocketAddr,
    },
}

/// What the envelope flags add in front of a response body.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResponseExtras {
    /// Sets the tracing flag and prefixes the body with this session id.
    pub tracing_id: Option<[u8; 16]>,
    /// Sets the warning flag (v4+) and prefixes the body with these warnings.
    pub warnings: Vec<String>,
    /// Sets the custom payload flag (v4+) and prefixes the body with this `[bytes map]`.
    pub custom_payload: Vec<(String, Option<Bytes>)>,
}

/// A decoded response envelope.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodedResponse {
    pub response: Response,
    pub tracing_id: Option<[u8; 16]>,
    pub warnings: Vec<String>,
    pub custom_payload: Vec<(String, Option<Bytes>)>,
}

const RESULT_VOID: i32 = 1;
const RESULT_ROWS: i32 = 2;
const RESULT_SET_KEYSPACE: i32 = 3;
const RESULT_PREPARED: i32 = 4;
const RESULT_SCHEMA_CHANGE: i32 = 5;

mod decode;
mod encode;
#[cfg(test)]
mod tests;

pub use encode::encode_error;
