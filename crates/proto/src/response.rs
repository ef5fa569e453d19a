//! Response bodies (spec section 4.2): encoded by the server, decoded by tests and proxy mode.
//!
//! Rows carry their cells pre-serialized (`Rows::data`), built by `RowsBuilder` into one buffer
//! without a per-cell allocation; encoding a Rows result is the metadata plus one copy.

use std::net::{IpAddr, SocketAddr};

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
    pub columns: Vec<ColumnSpec>,
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

// ---- encode -------------------------------------------------------------------------------

fn global_spec(columns: &[ColumnSpec]) -> Option<(&str, &str)> {
    let first = columns.first()?;
    columns
        .iter()
        .all(|c| c.keyspace == first.keyspace && c.table == first.table)
        .then_some((first.keyspace.as_str(), first.table.as_str()))
}

fn write_col_specs(
    out: &mut BytesMut,
    version: ProtocolVersion,
    cols: &[ColumnSpec],
    global: bool,
) {
    for c in cols {
        if !global {
            wire::put_string(out, &c.keyspace);
            wire::put_string(out, &c.table);
        }
        wire::put_string(out, &c.name);
        c.ty.write_option(version, out);
    }
}

fn count_i32(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

impl RowsMetadata {
    pub fn encode(&self, version: ProtocolVersion, out: &mut BytesMut) {
        use rows_flags::*;
        let global = if self.no_metadata {
            None
        } else {
            global_spec(&self.columns)
        };
        let mut f = 0;
        if global.is_some() {
            f |= GLOBAL_TABLES_SPEC;
        }
        if self.paging_state.is_some() {
            f |= HAS_MORE_PAGES;
        }
        if self.no_metadata {
            f |= NO_METADATA;
        }
        let changed = version >= ProtocolVersion::V5 && self.new_metadata_id.is_some();
        if changed {
            f |= METADATA_CHANGED;
        }
        out.put_i32(f);
        out.put_i32(count_i32(self.columns.len()));
        if let Some(p) = &self.paging_state {
            wire::put_bytes(out, Some(p));
        }
        if changed {
            wire::put_short_bytes(out, self.new_metadata_id.as_deref().unwrap_or(&[]));
        }
        if !self.no_metadata {
            if let Some((ks, t)) = global {
                wire::put_string(out, ks);
                wire::put_string(out, t);
            }
            write_col_specs(out, version, &self.columns, global.is_some());
        }
    }
}

impl PreparedMetadata {
    pub fn encode(&self, version: ProtocolVersion, out: &mut BytesMut) {
        let global = global_spec(&self.columns);
        out.put_i32(if global.is_some() {
            rows_flags::GLOBAL_TABLES_SPEC
        } else {
            0
        });
        out.put_i32(count_i32(self.columns.len()));
        if version >= ProtocolVersion::V4 {
            out.put_i32(count_i32(self.pk_indexes.len()));
            for i in &self.pk_indexes {
                out.put_u16(*i);
            }
        }
        if let Some((ks, t)) = global {
            wire::put_string(out, ks);
            wire::put_string(out, t);
        }
        write_col_specs(out, version, &self.columns, global.is_some());
    }
}

impl SchemaChange {
    pub fn encode(&self, out: &mut BytesMut) {
        wire::put_string(out, self.change.as_str());
        match &self.target {
            SchemaChangeTarget::Keyspace(ks) => {
                wire::put_string(out, "KEYSPACE");
                wire::put_string(out, ks);
            }
            SchemaChangeTarget::Table { keyspace, name } => {
                wire::put_string(out, "TABLE");
                wire::put_string(out, keyspace);
                wire::put_string(out, name);
            }
            SchemaChangeTarget::Type { keyspace, name } => {
                wire::put_string(out, "TYPE");
                wire::put_string(out, keyspace);
                wire::put_string(out, name);
            }
            SchemaChangeTarget::Function {
                keyspace,
                name,
                args,
            } => {
                wire::put_string(out, "FUNCTION");
                wire::put_string(out, keyspace);
                wire::put_string(out, name);
                wire::put_string_list(out, args);
            }
            SchemaChangeTarget::Aggregate {
                keyspace,
                name,
                args,
            } => {
                wire::put_string(out, "AGGREGATE");
                wire::put_string(out, keyspace);
                wire::put_string(out, name);
                wire::put_string_list(out, args);
            }
        }
    }
}

fn put_reasons(out: &mut BytesMut, version: ProtocolVersion, num: i32, reasons: &[FailureReason]) {
    if version >= ProtocolVersion::V5 {
        out.put_i32(count_i32(reasons.len()));
        for r in reasons {
            wire::put_inetaddr(out, &r.endpoint);
            out.put_u16(r.code);
        }
    } else {
        out.put_i32(num.max(count_i32(reasons.len())));
    }
}

/// Maps an error to what a client of `version` understands (as Cassandra's ErrorMessage
/// codec does): failures become timeouts for v3, FunctionFailure becomes Invalid for v3,
/// CAS_WRITE_UNKNOWN and CDC_WRITE_FAILURE exist only in v5.
fn downgrade(e: &DbError, version: ProtocolVersion) -> Option<DbError> {
    match e {
        DbError::ReadFailure {
            message,
            consistency,
            received,
            block_for,
            data_present,
            ..
        } if version < ProtocolVersion::V4 => Some(DbError::ReadTimeout {
            message: message.clone(),
            consistency: *consistency,
            received: *received,
            block_for: *block_for,
            data_present: *data_present,
        }),
        DbError::WriteFailure {
            message,
            consistency,
            received,
            block_for,
            write_type,
            ..
        } if version < ProtocolVersion::V4 => Some(DbError::WriteTimeout {
            message: message.clone(),
            consistency: *consistency,
            received: *received,
            block_for: *block_for,
            write_type: *write_type,
            contentions: None,
        }),
        DbError::FunctionFailure { message, .. } if version < ProtocolVersion::V4 => {
            Some(DbError::invalid(message.clone()))
        }
        DbError::CasWriteUnknown {
            message,
            consistency,
            received,
            block_for,
        } if version < ProtocolVersion::V5 => Some(DbError::WriteTimeout {
            message: message.clone(),
            consistency: *consistency,
            received: *received,
            block_for: *block_for,
            write_type: WriteType::Cas,
            contentions: None,
        }),
        DbError::CdcWriteFailure { message } if version < ProtocolVersion::V5 => {
            Some(DbError::server(message.clone()))
        }
        _ => None,
    }
}

/// Writes an ERROR body: code, message, and the code's extra fields.
pub fn encode_error(e: &DbError, version: ProtocolVersion, out: &mut BytesMut) {
    if let Some(d) = downgrade(e, version) {
        return encode_error(&d, version, out);
    }
    out.put_i32(e.code());
    wire::put_string(out, e.message());
    match e {
        DbError::ServerError { .. }
        | DbError::ProtocolError { .. }
        | DbError::BadCredentials { .. }
        | DbError::Overloaded { .. }
        | DbError::IsBootstrapping { .. }
        | DbError::Truncate { .. }
        | DbError::CdcWriteFailure { .. }
        | DbError::SyntaxError { .. }
        | DbError::Unauthorized { .. }
        | DbError::Invalid { .. }
        | DbError::ConfigError { .. } => {}
        DbError::Unavailable {
            consistency,
            required,
            alive,
            ..
        } => {
            out.put_u16(consistency.code());
            out.put_i32(*required);
            out.put_i32(*alive);
        }
        DbError::WriteTimeout {
            consistency,
            received,
            block_for,
            write_type,
            contentions,
            ..
        } => {
            out.put_u16(consistency.code());
            out.put_i32(*received);
            out.put_i32(*block_for);
            wire::put_string(out, write_type.as_str());
            if version >= ProtocolVersion::V5 && *write_type == WriteType::Cas {
                out.put_u16(contentions.unwrap_or(0));
            }
        }
        DbError::ReadTimeout {
            consistency,
            received,
            block_for,
            data_present,
            ..
        } => {
            out.put_u16(consistency.code());
            out.put_i32(*received);
            out.put_i32(*block_for);
            out.put_u8(u8::from(*data_present));
        }
        DbError::ReadFailure {
            consistency,
            received,
            block_for,
            num_failures,
            reasons,
            data_present,
            ..
        } => {
            out.put_u16(consistency.code());
            out.put_i32(*received);
            out.put_i32(*block_for);
            put_reasons(out, version, *num_failures, reasons);
            out.put_u8(u8::from(*data_present));
        }
        DbError::FunctionFailure {
            keyspace,
            function,
            arg_types,
            ..
        } => {
            wire::put_string(out, keyspace);
            wire::put_string(out, function);
            wire::put_string_list(out, arg_types);
        }
        DbError::WriteFailure {
            consistency,
            received,
            block_for,
            num_failures,
            reasons,
            write_type,
            ..
        } => {
            out.put_u16(consistency.code());
            out.put_i32(*received);
            out.put_i32(*block_for);
            put_reasons(out, version, *num_failures, reasons);
            wire::put_string(out, write_type.as_str());
        }
        DbError::CasWriteUnknown {
            consistency,
            received,
            block_for,
            ..
        } => {
            out.put_u16(consistency.code());
            out.put_i32(*received);
            out.put_i32(*block_for);
        }
        DbError::AlreadyExists {
            keyspace, table, ..
        } => {
            wire::put_string(out, keyspace);
            wire::put_string(out, table);
        }
        DbError::Unprepared { id, .. } => wire::put_short_bytes(out, id),
    }
}

impl Response {
    pub fn opcode(&self) -> Opcode {
        match self {
            Response::Error(_) => Opcode::Error,
            Response::Ready => Opcode::Ready,
            Response::Authenticate(_) => Opcode::Authenticate,
            Response::Supported(_) => Opcode::Supported,
            Response::Result(_) => Opcode::Result,
            Response::Event(_) => Opcode::Event,
            Response::AuthChallenge(_) => Opcode::AuthChallenge,
            Response::AuthSuccess(_) => Opcode::AuthSuccess,
        }
    }

    /// Appends the response body.
    pub fn encode_body(&self, version: ProtocolVersion, out: &mut BytesMut) {
        match self {
            Response::Error(e) => encode_error(e, version, out),
            Response::Ready => {}
            Response::Authenticate(class) => wire::put_string(out, class),
            Response::Supported(m) => wire::put_string_multimap(out, m),
            Response::Result(r) => match r {
                ResultBody::Void => out.put_i32(RESULT_VOID),
                ResultBody::Rows(rows) => {
                    out.reserve(rows.data.len() + 64);
                    out.put_i32(RESULT_ROWS);
                    rows.metadata.encode(version, out);
                    out.put_i32(rows.rows_count);
                    out.put_slice(&rows.data);
                }
                ResultBody::Encoded(body) => out.put_slice(body),
                ResultBody::SetKeyspace(ks) => {
                    out.put_i32(RESULT_SET_KEYSPACE);
                    wire::put_string(out, ks);
                }
                ResultBody::Prepared(p) => {
                    out.put_i32(RESULT_PREPARED);
                    wire::put_short_bytes(out, &p.id);
                    if version >= ProtocolVersion::V5 {
                        wire::put_short_bytes(out, p.result_metadata_id.as_deref().unwrap_or(&[]));
                    }
                    p.bind_metadata.encode(version, out);
                    p.result_metadata.encode(version, out);
                }
                ResultBody::SchemaChange(sc) => {
                    out.put_i32(RESULT_SCHEMA_CHANGE);
                    sc.encode(out);
                }
            },
            Response::Event(ev) => match ev {
                Event::SchemaChange(sc) => {
                    wire::put_string(out, "SCHEMA_CHANGE");
                    sc.encode(out);
                }
                Event::TopologyChange { change, addr } => {
                    wire::put_string(out, "TOPOLOGY_CHANGE");
                    wire::put_string(out, change);
                    wire::put_inet(out, addr);
                }
                Event::StatusChange { change, addr } => {
                    wire::put_string(out, "STATUS_CHANGE");
                    wire::put_string(out, change);
                    wire::put_inet(out, addr);
                }
            },
            Response::AuthChallenge(t) | Response::AuthSuccess(t) => {
                wire::put_bytes(out, t.as_deref())
            }
        }
    }

    /// Writes a whole response envelope (header, tracing id / warnings, body) into `out`,
    /// encoding the body in place after the header (no intermediate body buffer unless the
    /// body is compressed).
    pub fn encode_envelope(
        &self,
        version: ProtocolVersion,
        stream: i16,
        extras: &ResponseExtras,
        compression: Option<Compression>,
        out: &mut BytesMut,
    ) {
        let mut fl = 0u8;
        let header_at = out.len();
        let mut body = if compression.is_some() && version < ProtocolVersion::V5 {
            BytesMut::new()
        } else {
            // Placeholder header; the length is patched below.
            frame::encode_header(version, 0, stream, self.opcode(), 0, out);
            out.split_off(out.len())
        };
        if let Some(id) = extras.tracing_id {
            fl |= flags::TRACING;
            body.put_slice(&id);
        }
        if !extras.warnings.is_empty() && version >= ProtocolVersion::V4 {
            fl |= flags::WARNING;
            wire::put_string_list(&mut body, &extras.warnings);
        }
        if !extras.custom_payload.is_empty() && version >= ProtocolVersion::V4 {
            fl |= flags::CUSTOM_PAYLOAD;
            wire::put_bytes_map(&mut body, &extras.custom_payload);
        }
        self.encode_body(version, &mut body);
        match compression {
            Some(c) if version < ProtocolVersion::V5 => {
                let env = Envelope {
                    version,
                    flags: fl,
                    stream,
                    opcode: self.opcode(),
                    body: body.freeze(),
                };
                frame::encode_envelope(&env, Some(c), out);
            }
            _ => {
                let len = u32::try_from(body.len()).unwrap_or(u32::MAX);
                out.unsplit(body);
                out[header_at + 1] = fl;
                out[header_at + 5..header_at + 9].copy_from_slice(&len.to_be_bytes());
            }
        }
    }
}

// ---- decode -------------------------------------------------------------------------------

fn read_col_specs(
    r: &mut Reader,
    n: usize,
    global: Option<(String, String)>,
) -> Result<Vec<ColumnSpec>, DbError> {
    r.check_count("column spec", n, 4)?;
    let mut cols = Vec::with_capacity(n);
    for _ in 0..n {
        let (keyspace, table) = match &global {
            Some((k, t)) => (k.clone(), t.clone()),
            None => (r.string("keyspace")?, r.string("table")?),
        };
        let name = r.string("column name")?;
        let ty = ColumnType::read_option(r, 0)?;
        cols.push(ColumnSpec {
            keyspace,
            table,
            name,
            ty,
        });
    }
    Ok(cols)
}

fn read_count(r: &mut Reader, what: &str) -> Result<usize, DbError> {
    let n = r.i32(what)?;
    usize::try_from(n).map_err(|_| DbError::protocol(format!("Invalid negative {what} {n}")))
}

fn read_rows_metadata(r: &mut Reader, version: ProtocolVersion) -> Result<RowsMetadata, DbError> {
    use rows_flags::*;
    let f = r.i32("metadata flags")?;
    let n = read_count(r, "column count")?;
    let paging_state = if f & HAS_MORE_PAGES != 0 {
        r.bytes("paging state")?
    } else {
        None
    };
    let new_metadata_id = if f & METADATA_CHANGED != 0 && version >= ProtocolVersion::V5 {
        Some(r.short_bytes("new metadata id")?)
    } else {
        None
    };
    let no_metadata = f & NO_METADATA != 0;
    let columns = if no_metadata {
        // Only the count is known; keep it as placeholder columns so `columns.len()` holds.
        r.check_count("column", n, 0)?;
        if n > 65_535 {
            return Err(DbError::protocol(format!("Invalid column count {n}")));
        }
        vec![
            ColumnSpec {
                keyspace: String::new(),
                table: String::new(),
                name: String::new(),
                ty: ColumnType::Blob,
            };
            n
        ]
    } else {
        let global = if f & GLOBAL_TABLES_SPEC != 0 {
            Some((r.string("keyspace")?, r.string("table")?))
        } else {
            None
        };
        read_col_specs(r, n, global)?
    };
    Ok(RowsMetadata {
        columns,
        paging_state,
        no_metadata,
        new_metadata_id,
    })
}

fn read_schema_change(r: &mut Reader) -> Result<SchemaChange, DbError> {
    let change = match r.string("change type")?.as_str() {
        "CREATED" => SchemaChangeType::Created,
        "UPDATED" => SchemaChangeType::Updated,
        "DROPPED" => SchemaChangeType::Dropped,
        other => {
            return Err(DbError::protocol(format!(
                "Unknown schema change type {other}"
            )))
        }
    };
    let target = match r.string("change target")?.as_str() {
        "KEYSPACE" => SchemaChangeTarget::Keyspace(r.string("keyspace")?),
        "TABLE" => SchemaChangeTarget::Table {
            keyspace: r.string("keyspace")?,
            name: r.string("name")?,
        },
        "TYPE" => SchemaChangeTarget::Type {
            keyspace: r.string("keyspace")?,
            name: r.string("name")?,
        },
        "FUNCTION" => SchemaChangeTarget::Function {
            keyspace: r.string("keyspace")?,
            name: r.string("name")?,
            args: r.string_list("argument types")?,
        },
        "AGGREGATE" => SchemaChangeTarget::Aggregate {
            keyspace: r.string("keyspace")?,
            name: r.string("name")?,
            args: r.string_list("argument types")?,
        },
        other => {
            return Err(DbError::protocol(format!(
                "Unknown schema change target {other}"
            )))
        }
    };
    Ok(SchemaChange { change, target })
}

fn read_reasons(
    r: &mut Reader,
    version: ProtocolVersion,
) -> Result<(i32, Vec<FailureReason>), DbError> {
    if version >= ProtocolVersion::V5 {
        let n = read_count(r, "failure count")?;
        r.check_count("failure reason", n, 7)?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            let endpoint: IpAddr = r.inetaddr("failure endpoint")?;
            let code = r.u16("failure code")?;
            v.push(FailureReason { endpoint, code });
        }
        Ok((count_i32(v.len()), v))
    } else {
        Ok((r.i32("failure count")?, Vec::new()))
    }
}

fn write_type(r: &mut Reader) -> Result<WriteType, DbError> {
    let s = r.string("write type")?;
    WriteType::parse(&s).ok_or_else(|| DbError::protocol(format!("Unknown write type {s}")))
}

/// Decodes an ERROR body.
pub(crate) fn decode_error(r: &mut Reader, version: ProtocolVersion) -> Result<DbError, DbError> {
    let code = r.i32("error code")?;
    let message = r.string("error message")?;
    let cl = |r: &mut Reader| -> Result<Consistency, DbError> { r.consistency("consistency") };
    Ok(match code {
        0x0000 => DbError::ServerError { message },
        0x000A => DbError::ProtocolError { message },
        0x0100 => DbError::BadCredentials { message },
        0x1000 => DbError::Unavailable {
            message,
            consistency: cl(r)?,
            required: r.i32("required")?,
            alive: r.i32("alive")?,
        },
        0x1001 => DbError::Overloaded { message },
        0x1002 => DbError::IsBootstrapping { message },
        0x1003 => DbError::Truncate { message },
        0x1100 => {
            let consistency = cl(r)?;
            let received = r.i32("received")?;
            let block_for = r.i32("block for")?;
            let write_type = write_type(r)?;
            let contentions = if version >= ProtocolVersion::V5 && write_type == WriteType::Cas {
                Some(r.u16("contentions")?)
            } else {
                None
            };
            DbError::WriteTimeout {
                message,
                consistency,
                received,
                block_for,
                write_type,
                contentions,
            }
        }
        0x1200 => DbError::ReadTimeout {
            message,
            consistency: cl(r)?,
            received: r.i32("received")?,
            block_for: r.i32("block for")?,
            data_present: r.u8("data present")? != 0,
        },
        0x1300 => {
            let consistency = cl(r)?;
            let received = r.i32("received")?;
            let block_for = r.i32("block for")?;
            let (num_failures, reasons) = read_reasons(r, version)?;
            DbError::ReadFailure {
                message,
                consistency,
                received,
                block_for,
                num_failures,
                reasons,
                data_present: r.u8("data present")? != 0,
            }
        }
        0x1400 => DbError::FunctionFailure {
            message,
            keyspace: r.string("keyspace")?,
            function: r.string("function")?,
            arg_types: r.string_list("argument types")?,
        },
        0x1500 => {
            let consistency = cl(r)?;
            let received = r.i32("received")?;
            let block_for = r.i32("block for")?;
            let (num_failures, reasons) = read_reasons(r, version)?;
            DbError::WriteFailure {
                message,
                consistency,
                received,
                block_for,
                num_failures,
                reasons,
                write_type: write_type(r)?,
            }
        }
        0x1600 => DbError::CdcWriteFailure { message },
        0x1700 => DbError::CasWriteUnknown {
            message,
            consistency: cl(r)?,
            received: r.i32("received")?,
            block_for: r.i32("block for")?,
        },
        0x2000 => DbError::SyntaxError { message },
        0x2100 => DbError::Unauthorized { message },
        0x2200 => DbError::Invalid { message },
        0x2300 => DbError::ConfigError { message },
        0x2400 => DbError::AlreadyExists {
            message,
            keyspace: r.string("keyspace")?,
            table: r.string("table")?,
        },
        0x2500 => DbError::Unprepared {
            message,
            id: r.short_bytes("prepared id")?,
        },
        other => {
            return Err(DbError::protocol(format!(
                "Unknown error code {other:#06x}: {message}"
            )))
        }
    })
}

impl Response {
    /// Decodes a response body (client side: proxy mode and tests).
    pub fn decode(
        version: ProtocolVersion,
        opcode: Opcode,
        body: Bytes,
    ) -> Result<Response, DbError> {
        let mut r = Reader::new(body);
        Ok(match opcode {
            Opcode::Error => Response::Error(decode_error(&mut r, version)?),
            Opcode::Ready => Response::Ready,
            Opcode::Authenticate => Response::Authenticate(r.string("authenticator")?),
            Opcode::Supported => Response::Supported(r.string_multimap("supported options")?),
            Opcode::AuthChallenge => Response::AuthChallenge(r.bytes("auth token")?),
            Opcode::AuthSuccess => Response::AuthSuccess(r.bytes("auth token")?),
            Opcode::Result => Response::Result(match r.i32("result kind")? {
                RESULT_VOID => ResultBody::Void,
                RESULT_ROWS => {
                    let metadata = read_rows_metadata(&mut r, version)?;
                    let rows_count = r.i32("rows count")?;
                    let data = r.rest();
                    let rows = Rows {
                        metadata,
                        rows_count,
                        data,
                    };
                    let expected = (rows_count.max(0) as u64)
                        .saturating_mul(rows.metadata.columns.len() as u64);
                    let cells = rows.cells().count() as u64;
                    if rows_count < 0 || cells != expected {
                        return Err(DbError::protocol(format!(
                            "Rows result announces {rows_count} rows of {} columns but carries {cells} cells",
                            rows.metadata.columns.len()
                        )));
                    }
                    ResultBody::Rows(rows)
                }
                RESULT_SET_KEYSPACE => ResultBody::SetKeyspace(r.string("keyspace")?),
                RESULT_PREPARED => {
                    let id = r.short_bytes("prepared id")?;
                    let result_metadata_id = if version >= ProtocolVersion::V5 {
                        Some(r.short_bytes("result metadata id")?)
                    } else {
                        None
                    };
                    let f = r.i32("metadata flags")?;
                    let n = read_count(&mut r, "column count")?;
                    let pk_indexes = if version >= ProtocolVersion::V4 {
                        let k = read_count(&mut r, "partition key count")?;
                        r.check_count("partition key index", k, 2)?;
                        let mut v = Vec::with_capacity(k);
                        for _ in 0..k {
                            v.push(r.u16("partition key index")?);
                        }
                        v
                    } else {
                        Vec::new()
                    };
                    let global = if f & rows_flags::GLOBAL_TABLES_SPEC != 0 {
                        Some((r.string("keyspace")?, r.string("table")?))
                    } else {
                        None
                    };
                    let columns = read_col_specs(&mut r, n, global)?;
                    let result_metadata = read_rows_metadata(&mut r, version)?;
                    ResultBody::Prepared(Prepared {
                        id,
                        result_metadata_id,
                        bind_metadata: PreparedMetadata {
                            columns,
                            pk_indexes,
                        },
                        result_metadata,
                    })
                }
                RESULT_SCHEMA_CHANGE => ResultBody::SchemaChange(read_schema_change(&mut r)?),
                k => return Err(DbError::protocol(format!("Unknown result kind {k}"))),
            }),
            Opcode::Event => Response::Event(match r.string("event type")?.as_str() {
                "SCHEMA_CHANGE" => Event::SchemaChange(read_schema_change(&mut r)?),
                "TOPOLOGY_CHANGE" => Event::TopologyChange {
                    change: r.string("change")?,
                    addr: r.inet("address")?,
                },
                "STATUS_CHANGE" => Event::StatusChange {
                    change: r.string("change")?,
                    addr: r.inet("address")?,
                },
                other => return Err(DbError::protocol(format!("Unknown event type {other}"))),
            }),
            Opcode::Startup
            | Opcode::Options
            | Opcode::Query
            | Opcode::Prepare
            | Opcode::Execute
            | Opcode::Register
            | Opcode::Batch
            | Opcode::AuthResponse => {
                return Err(DbError::protocol(format!(
                    "Opcode {:#04x} is not a response",
                    opcode as u8
                )))
            }
        })
    }

    /// Decodes a response envelope with its tracing id, warnings and custom payload.
    pub fn from_envelope(env: &Envelope) -> Result<DecodedResponse, DbError> {
        let mut r = Reader::new(env.body.clone());
        let tracing_id = if env.flags & flags::TRACING != 0 {
            Some(r.uuid("tracing id")?)
        } else {
            None
        };
        let warnings = if env.flags & flags::WARNING != 0 && env.version >= ProtocolVersion::V4 {
            r.string_list("warnings")?
        } else {
            Vec::new()
        };
        let custom_payload =
            if env.flags & flags::CUSTOM_PAYLOAD != 0 && env.version >= ProtocolVersion::V4 {
                r.bytes_map("custom payload")?
            } else {
                Vec::new()
            };
        let response = Response::decode(env.version, env.opcode, r.rest())?;
        Ok(DecodedResponse {
            response,
            tracing_id,
            warnings,
            custom_payload,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::decode_envelope;

    const VERSIONS: [ProtocolVersion; 3] = [
        ProtocolVersion::V3,
        ProtocolVersion::V4,
        ProtocolVersion::V5,
    ];

    fn rt(version: ProtocolVersion, resp: &Response) -> Response {
        let mut out = BytesMut::new();
        resp.encode_body(version, &mut out);
        let body = out.freeze();
        for cut in 0..body.len() {
            let _ = Response::decode(version, resp.opcode(), body.slice(..cut));
        }
        Response::decode(version, resp.opcode(), body).unwrap()
    }

    fn col(name: &str, ty: ColumnType) -> ColumnSpec {
        ColumnSpec {
            keyspace: "ks".into(),
            table: "t".into(),
            name: name.into(),
            ty,
        }
    }

    fn sample_rows(paging: bool) -> Rows {
        let mut b = RowsBuilder::new();
        for i in 0..3 {
            b.push_value(&Value::Int(i));
            if i == 1 {
                b.push_cell(None);
            } else {
                b.push_value(&Value::Varchar(format!("row{i}")));
            }
            b.end_row();
        }
        b.finish(RowsMetadata {
            columns: vec![col("k", ColumnType::Int), col("v", ColumnType::Varchar)],
            paging_state: paging.then(|| Bytes::from_static(b"page2")),
            no_metadata: false,
            new_metadata_id: None,
        })
    }

    #[test]
    fn golden_void_and_set_keyspace() {
        let mut out = BytesMut::new();
        Response::Result(ResultBody::Void).encode_body(ProtocolVersion::V4, &mut out);
        assert_eq!(&out[..], &[0, 0, 0, 1]);
        let mut out = BytesMut::new();
        Response::Result(ResultBody::SetKeyspace("ks".into()))
            .encode_body(ProtocolVersion::V4, &mut out);
        assert_eq!(&out[..], &[0, 0, 0, 3, 0, 2, b'k', b's']);
    }

    #[test]
    fn golden_rows_with_global_spec() {
        let mut b = RowsBuilder::new();
        b.push_value(&Value::Int(1));
        b.end_row();
        let rows = b.finish(RowsMetadata {
            columns: vec![col("k", ColumnType::Int)],
            ..Default::default()
        });
        let mut out = BytesMut::new();
        Response::Result(ResultBody::Rows(rows)).encode_body(ProtocolVersion::V4, &mut out);
        let expected: &[u8] = &[
            0, 0, 0, 2, // Rows
            0, 0, 0, 1, // flags: global tables spec
            0, 0, 0, 1, // 1 column
            0, 2, b'k', b's', 0, 1, b't', // ks.t
            0, 1, b'k', 0, 9, // k int
            0, 0, 0, 1, // 1 row
            0, 0, 0, 4, 0, 0, 0, 1, // cell
        ];
        assert_eq!(&out[..], expected);
    }

    #[test]
    fn rows_round_trip_in_every_version() {
        for v in VERSIONS {
            for paging in [false, true] {
                let resp = Response::Result(ResultBody::Rows(sample_rows(paging)));
                let got = rt(v, &resp);
                assert_eq!(got, resp);
                let Response::Result(ResultBody::Rows(rows)) = got else {
                    panic!()
                };
                let decoded = rows.decode_rows().unwrap();
                assert_eq!(decoded.len(), 3);
                assert_eq!(decoded[1], vec![Value::Int(1), Value::Null]);
            }
        }
    }

    #[test]
    fn rows_metadata_flags() {
        // Mixed tables: no global spec; no_metadata; v5 metadata_changed.
        let mut md = RowsMetadata {
            columns: vec![
                col("a", ColumnType::Int),
                ColumnSpec {
                    table: "u".into(),
                    ..col("b", ColumnType::Blob)
                },
            ],
            ..Default::default()
        };
        let mut out = BytesMut::new();
        md.encode(ProtocolVersion::V4, &mut out);
        assert_eq!(&out[..4], &[0, 0, 0, 0]);
        md.no_metadata = true;
        md.new_metadata_id = Some(Bytes::from_static(&[1, 2]));
        md.paging_state = Some(Bytes::from_static(&[9]));
        let mut out = BytesMut::new();
        md.encode(ProtocolVersion::V5, &mut out);
        assert_eq!(
            &out[..],
            &[0, 0, 0, 0x0e, 0, 0, 0, 2, 0, 0, 0, 1, 9, 0, 2, 1, 2]
        );
        let mut out = BytesMut::new();
        md.encode(ProtocolVersion::V4, &mut out);
        assert_eq!(&out[..4], &[0, 0, 0, 0x06], "no metadata_changed before v5");
    }

    #[test]
    fn prepared_round_trip() {
        for v in VERSIONS {
            let p = Prepared {
                id: Bytes::from_static(&[0xaa; 16]),
                result_metadata_id: (v == ProtocolVersion::V5)
                    .then(|| Bytes::from_static(&[0xbb; 16])),
                bind_metadata: PreparedMetadata {
                    columns: vec![
                        col("k", ColumnType::Int),
                        col(
                            "c",
                            ColumnType::Map(
                                Box::new(ColumnType::Varchar),
                                Box::new(ColumnType::Smallint),
                            ),
                        ),
                    ],
                    pk_indexes: if v == ProtocolVersion::V3 {
                        vec![]
                    } else {
                        vec![0]
                    },
                },
                result_metadata: RowsMetadata {
                    columns: vec![col("v", ColumnType::Varchar)],
                    ..Default::default()
                },
            };
            let resp = Response::Result(ResultBody::Prepared(p));
            assert_eq!(rt(v, &resp), resp, "{v:?}");
        }
    }

    #[test]
    fn golden_prepared_v4_layout() {
        let p = Prepared {
            id: Bytes::from_static(&[7]),
            result_metadata_id: None,
            bind_metadata: PreparedMetadata {
                columns: vec![col("k", ColumnType::Int)],
                pk_indexes: vec![0],
            },
            result_metadata: RowsMetadata {
                no_metadata: true,
                ..Default::default()
            },
        };
        let mut out = BytesMut::new();
        Response::Result(ResultBody::Prepared(p)).encode_body(ProtocolVersion::V4, &mut out);
        let expected: &[u8] = &[
            0, 0, 0, 4, // Prepared
            0, 1, 7, // id
            0, 0, 0, 1, 0, 0, 0, 1, // flags global, 1 column
            0, 0, 0, 1, 0, 0, // 1 pk index: 0
            0, 2, b'k', b's', 0, 1, b't', 0, 1, b'k', 0, 9, // ks.t k int
            0, 0, 0, 4, 0, 0, 0, 0, // result metadata: no_metadata, 0 columns
        ];
        assert_eq!(&out[..], expected);
    }

    #[test]
    fn schema_changes_and_events_round_trip() {
        let targets = vec![
            SchemaChangeTarget::Keyspace("ks".into()),
            SchemaChangeTarget::Table {
                keyspace: "ks".into(),
                name: "t".into(),
            },
            SchemaChangeTarget::Type {
                keyspace: "ks".into(),
                name: "ty".into(),
            },
            SchemaChangeTarget::Function {
                keyspace: "ks".into(),
                name: "f".into(),
                args: vec!["int".into()],
            },
            SchemaChangeTarget::Aggregate {
                keyspace: "ks".into(),
                name: "a".into(),
                args: vec![],
            },
        ];
        for v in VERSIONS {
            for t in &targets {
                let sc = SchemaChange {
                    change: SchemaChangeType::Created,
                    target: t.clone(),
                };
                let r = Response::Result(ResultBody::SchemaChange(sc.clone()));
                assert_eq!(rt(v, &r), r);
                let e = Response::Event(Event::SchemaChange(sc));
                assert_eq!(rt(v, &e), e);
            }
            for e in [
                Event::TopologyChange {
                    change: "NEW_NODE".into(),
                    addr: "127.0.0.1:9042".parse().unwrap(),
                },
                Event::StatusChange {
                    change: "DOWN".into(),
                    addr: "[::1]:9042".parse().unwrap(),
                },
            ] {
                let r = Response::Event(e);
                assert_eq!(rt(v, &r), r);
            }
        }
        // Golden: CREATED TABLE ks.t
        let mut out = BytesMut::new();
        SchemaChange {
            change: SchemaChangeType::Created,
            target: targets[1].clone(),
        }
        .encode(&mut out);
        assert_eq!(&out[..], b"\x00\x07CREATED\x00\x05TABLE\x00\x02ks\x00\x01t");
    }

    #[test]
    fn simple_responses_round_trip() {
        for v in VERSIONS {
            for r in [
                Response::Ready,
                Response::Authenticate("org.apache.cassandra.auth.PasswordAuthenticator".into()),
                Response::Supported(vec![
                    ("CQL_VERSION".into(), vec!["3.4.7".into()]),
                    ("COMPRESSION".into(), vec!["lz4".into(), "snappy".into()]),
                    (
                        "PROTOCOL_VERSIONS".into(),
                        ProtocolVersion::supported_descriptions(),
                    ),
                ]),
                Response::AuthChallenge(Some(Bytes::from_static(b"c"))),
                Response::AuthSuccess(None),
            ] {
                assert_eq!(rt(v, &r), r);
            }
        }
    }

    fn all_errors() -> Vec<DbError> {
        let m = || "msg".to_string();
        let cl = Consistency::Quorum;
        let reasons = vec![FailureReason {
            endpoint: "127.0.0.1".parse().unwrap(),
            code: 1,
        }];
        vec![
            DbError::ServerError { message: m() },
            DbError::ProtocolError { message: m() },
            DbError::BadCredentials { message: m() },
            DbError::Unavailable {
                message: m(),
                consistency: cl,
                required: 3,
                alive: 1,
            },
            DbError::Overloaded { message: m() },
            DbError::IsBootstrapping { message: m() },
            DbError::Truncate { message: m() },
            DbError::WriteTimeout {
                message: m(),
                consistency: cl,
                received: 1,
                block_for: 2,
                write_type: WriteType::Simple,
                contentions: None,
            },
            DbError::WriteTimeout {
                message: m(),
                consistency: cl,
                received: 1,
                block_for: 2,
                write_type: WriteType::Cas,
                contentions: Some(4),
            },
            DbError::ReadTimeout {
                message: m(),
                consistency: cl,
                received: 1,
                block_for: 2,
                data_present: true,
            },
            DbError::ReadFailure {
                message: m(),
                consistency: cl,
                received: 1,
                block_for: 2,
                num_failures: 1,
                reasons: reasons.clone(),
                data_present: false,
            },
            DbError::FunctionFailure {
                message: m(),
                keyspace: "ks".into(),
                function: "f".into(),
                arg_types: vec!["int".into()],
            },
            DbError::WriteFailure {
                message: m(),
                consistency: cl,
                received: 1,
                block_for: 2,
                num_failures: 1,
                reasons,
                write_type: WriteType::Batch,
            },
            DbError::CdcWriteFailure { message: m() },
            DbError::CasWriteUnknown {
                message: m(),
                consistency: cl,
                received: 1,
                block_for: 2,
            },
            DbError::SyntaxError { message: m() },
            DbError::Unauthorized { message: m() },
            DbError::Invalid { message: m() },
            DbError::ConfigError { message: m() },
            DbError::AlreadyExists {
                message: m(),
                keyspace: "ks".into(),
                table: "t".into(),
            },
            DbError::Unprepared {
                message: m(),
                id: Bytes::from_static(&[1, 2, 3]),
            },
        ]
    }

    #[test]
    fn every_error_round_trips_in_v5() {
        for e in all_errors() {
            let r = Response::Error(e);
            assert_eq!(rt(ProtocolVersion::V5, &r), r);
        }
    }

    #[test]
    fn errors_downgrade_for_older_clients() {
        for v in [ProtocolVersion::V3, ProtocolVersion::V4] {
            for e in all_errors() {
                let Response::Error(got) = rt(v, &Response::Error(e.clone())) else {
                    panic!()
                };
                assert_eq!(got.message(), e.message());
                match (&e, v) {
                    (DbError::ReadFailure { .. }, ProtocolVersion::V3) => {
                        assert_eq!(got.code(), 0x1200)
                    }
                    (DbError::WriteFailure { .. }, ProtocolVersion::V3) => {
                        assert_eq!(got.code(), 0x1100)
                    }
                    (DbError::FunctionFailure { .. }, ProtocolVersion::V3) => {
                        assert_eq!(got.code(), 0x2200)
                    }
                    (DbError::CasWriteUnknown { .. }, _) => assert_eq!(got.code(), 0x1100),
                    (DbError::CdcWriteFailure { .. }, _) => assert_eq!(got.code(), 0x0000),
                    (
                        DbError::WriteTimeout {
                            contentions: Some(_),
                            ..
                        },
                        _,
                    ) => assert!(matches!(
                        got,
                        DbError::WriteTimeout {
                            contentions: None,
                            ..
                        }
                    )),
                    (DbError::ReadFailure { .. } | DbError::WriteFailure { .. }, _) => {
                        assert_eq!(got.code(), e.code())
                    }
                    _ => assert_eq!(got, e),
                }
            }
        }
    }

    #[test]
    fn golden_error_bodies() {
        let mut out = BytesMut::new();
        Response::Error(DbError::Unavailable {
            message: "x".into(),
            consistency: Consistency::One,
            required: 1,
            alive: 0,
        })
        .encode_body(ProtocolVersion::V4, &mut out);
        assert_eq!(
            &out[..],
            &[0, 0, 0x10, 0, 0, 1, b'x', 0, 1, 0, 0, 0, 1, 0, 0, 0, 0]
        );
        let mut out = BytesMut::new();
        Response::Error(DbError::unprepared(Bytes::from_static(&[0xab])))
            .encode_body(ProtocolVersion::V4, &mut out);
        assert_eq!(&out[..4], &[0, 0, 0x25, 0]);
        assert!(out.ends_with(&[0, 1, 0xab]));
    }

    #[test]
    fn envelope_with_tracing_and_warnings() {
        for compression in [None, Some(Compression::Lz4), Some(Compression::Snappy)] {
            for v in VERSIONS {
                let resp = Response::Result(ResultBody::Rows(sample_rows(false)));
                let extras = ResponseExtras {
                    tracing_id: Some([5; 16]),
                    warnings: vec!["Aggregation query used without partition key".into()],
                    custom_payload: vec![
                        ("k".into(), Some(Bytes::from_static(b"\x00v"))),
                        ("null".into(), None),
                    ],
                };
                let mut out = BytesMut::from(&b"prefix"[..]);
                resp.encode_envelope(v, 77, &extras, compression, &mut out);
                assert_eq!(&out[..6], b"prefix");
                let _ = out.split_to(6);
                assert_eq!(out[0], 0x80 | v.as_u8());
                let env = decode_envelope(&mut out, 1 << 20, compression)
                    .unwrap()
                    .unwrap();
                assert!(out.is_empty());
                assert_eq!(env.stream, 77);
                let d = Response::from_envelope(&env).unwrap();
                assert_eq!(d.response, resp);
                assert_eq!(d.tracing_id, Some([5; 16]));
                if v == ProtocolVersion::V3 {
                    assert!(d.warnings.is_empty());
                    assert!(d.custom_payload.is_empty());
                } else {
                    assert_eq!(d.warnings.len(), 1);
                    assert_eq!(d.custom_payload, extras.custom_payload);
                }
            }
        }
    }

    #[test]
    fn rows_decode_rejects_wrong_cell_count() {
        let mut out = BytesMut::new();
        Response::Result(ResultBody::Rows(sample_rows(false)))
            .encode_body(ProtocolVersion::V4, &mut out);
        out.truncate(out.len() - 1);
        assert!(Response::decode(ProtocolVersion::V4, Opcode::Result, out.freeze()).is_err());
    }

    #[test]
    fn garbage_never_panics() {
        let ops = [
            Opcode::Error,
            Opcode::Ready,
            Opcode::Authenticate,
            Opcode::Supported,
            Opcode::Result,
            Opcode::Event,
            Opcode::AuthChallenge,
            Opcode::AuthSuccess,
        ];
        let mut seed = 0x1234_5678_9abc_def1u64;
        for i in 0..30_000usize {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let len = (seed % 64) as usize;
            let mut body: Vec<u8> = (0..len)
                .map(|j| ((seed >> (j % 8 * 8)) as u8) % 6)
                .collect();
            if body.len() > 4 {
                body[3] = (seed % 6) as u8; // a plausible result kind / error code byte
            }
            let _ = Response::decode(
                VERSIONS[i % 3],
                ops[(seed >> 61) as usize],
                Bytes::from(body),
            );
        }
    }
}
