//! Errors: `DbError` (one variant per error code of spec section 9, carrying the code's extra
//! data) and `FrameError` (the envelope/segment layer; always answered with ProtocolError).
//!
//! `DbError`'s `Display` is the message sent to the client, so it is written as Cassandra writes
//! it where we know Cassandra's wording.

use std::net::IpAddr;

use bytes::Bytes;

use crate::request::Consistency;

/// The kind of write that timed out or failed (`<writeType>` in spec section 9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WriteType {
    Simple,
    Batch,
    UnloggedBatch,
    Counter,
    BatchLog,
    Cas,
    View,
    Cdc,
}

impl WriteType {
    pub fn as_str(self) -> &'static str {
        match self {
            WriteType::Simple => "SIMPLE",
            WriteType::Batch => "BATCH",
            WriteType::UnloggedBatch => "UNLOGGED_BATCH",
            WriteType::Counter => "COUNTER",
            WriteType::BatchLog => "BATCH_LOG",
            WriteType::Cas => "CAS",
            WriteType::View => "VIEW",
            WriteType::Cdc => "CDC",
        }
    }

    pub fn parse(s: &str) -> Option<WriteType> {
        Some(match s {
            "SIMPLE" => WriteType::Simple,
            "BATCH" => WriteType::Batch,
            "UNLOGGED_BATCH" => WriteType::UnloggedBatch,
            "COUNTER" => WriteType::Counter,
            "BATCH_LOG" => WriteType::BatchLog,
            "CAS" => WriteType::Cas,
            "VIEW" => WriteType::View,
            "CDC" => WriteType::Cdc,
            _ => return None,
        })
    }
}

/// A node that failed a read or write and why (`<reasonmap>` entry, v5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailureReason {
    pub endpoint: IpAddr,
    /// Cassandra 5.0's RequestFailureReason: 0x0000 UNKNOWN, 0x0001 READ_TOO_MANY_TOMBSTONES,
    /// 0x0002 TIMEOUT, 0x0003 INCOMPATIBLE_SCHEMA, ..., 0x0006 INDEX_NOT_AVAILABLE.
    pub code: u16,
}

/// Every error a request can answer with, one variant per protocol error code.
///
/// # Invariants
/// `code()` is a total match: adding a variant forces choosing its code.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DbError {
    /// 0x0000
    #[error("{message}")]
    ServerError { message: String },
    /// 0x000A
    #[error("{message}")]
    ProtocolError { message: String },
    /// 0x0100
    #[error("{message}")]
    BadCredentials { message: String },
    /// 0x1000
    #[error("{message}")]
    Unavailable {
        message: String,
        consistency: Consistency,
        required: i32,
        alive: i32,
    },
    /// 0x1001
    #[error("{message}")]
    Overloaded { message: String },
    /// 0x1002
    #[error("{message}")]
    IsBootstrapping { message: String },
    /// 0x1003
    #[error("{message}")]
    Truncate { message: String },
    /// 0x1100. `contentions` is sent (v5) only when `write_type` is CAS.
    #[error("{message}")]
    WriteTimeout {
        message: String,
        consistency: Consistency,
        received: i32,
        block_for: i32,
        write_type: WriteType,
        contentions: Option<u16>,
    },
    /// 0x1200
    #[error("{message}")]
    ReadTimeout {
        message: String,
        consistency: Consistency,
        received: i32,
        block_for: i32,
        data_present: bool,
    },
    /// 0x1300. v4 sends `num_failures`, v5 sends `reasons`. Sent as ReadTimeout to v3 clients.
    #[error("{message}")]
    ReadFailure {
        message: String,
        consistency: Consistency,
        received: i32,
        block_for: i32,
        num_failures: i32,
        reasons: Vec<FailureReason>,
        data_present: bool,
    },
    /// 0x1400. Sent as Invalid to v3 clients.
    #[error("{message}")]
    FunctionFailure {
        message: String,
        keyspace: String,
        function: String,
        arg_types: Vec<String>,
    },
    /// 0x1500. v4 sends `num_failures`, v5 sends `reasons`. Sent as WriteTimeout to v3 clients.
    #[error("{message}")]
    WriteFailure {
        message: String,
        consistency: Consistency,
        received: i32,
        block_for: i32,
        num_failures: i32,
        reasons: Vec<FailureReason>,
        write_type: WriteType,
    },
    /// 0x1600 (v5). Sent as ServerError before v5.
    #[error("{message}")]
    CdcWriteFailure { message: String },
    /// 0x1700 (v5). Sent as a CAS WriteTimeout before v5.
    #[error("{message}")]
    CasWriteUnknown {
        message: String,
        consistency: Consistency,
        received: i32,
        block_for: i32,
    },
    /// 0x2000
    #[error("{message}")]
    SyntaxError { message: String },
    /// 0x2100
    #[error("{message}")]
    Unauthorized { message: String },
    /// 0x2200
    #[error("{message}")]
    Invalid { message: String },
    /// 0x2300
    #[error("{message}")]
    ConfigError { message: String },
    /// 0x2400. `table` is empty when a keyspace already exists.
    #[error("{message}")]
    AlreadyExists {
        message: String,
        keyspace: String,
        table: String,
    },
    /// 0x2500
    #[error("{message}")]
    Unprepared { message: String, id: Bytes },
}

impl DbError {
    /// The protocol error code (spec section 9).
    pub fn code(&self) -> i32 {
        match self {
            DbError::ServerError { .. } => 0x0000,
            DbError::ProtocolError { .. } => 0x000A,
            DbError::BadCredentials { .. } => 0x0100,
            DbError::Unavailable { .. } => 0x1000,
            DbError::Overloaded { .. } => 0x1001,
            DbError::IsBootstrapping { .. } => 0x1002,
            DbError::Truncate { .. } => 0x1003,
            DbError::WriteTimeout { .. } => 0x1100,
            DbError::ReadTimeout { .. } => 0x1200,
            DbError::ReadFailure { .. } => 0x1300,
            DbError::FunctionFailure { .. } => 0x1400,
            DbError::WriteFailure { .. } => 0x1500,
            DbError::CdcWriteFailure { .. } => 0x1600,
            DbError::CasWriteUnknown { .. } => 0x1700,
            DbError::SyntaxError { .. } => 0x2000,
            DbError::Unauthorized { .. } => 0x2100,
            DbError::Invalid { .. } => 0x2200,
            DbError::ConfigError { .. } => 0x2300,
            DbError::AlreadyExists { .. } => 0x2400,
            DbError::Unprepared { .. } => 0x2500,
        }
    }

    /// The message (same as `to_string()`, without allocating).
    pub fn message(&self) -> &str {
        match self {
            DbError::ServerError { message }
            | DbError::ProtocolError { message }
            | DbError::BadCredentials { message }
            | DbError::Unavailable { message, .. }
            | DbError::Overloaded { message }
            | DbError::IsBootstrapping { message }
            | DbError::Truncate { message }
            | DbError::WriteTimeout { message, .. }
            | DbError::ReadTimeout { message, .. }
            | DbError::ReadFailure { message, .. }
            | DbError::FunctionFailure { message, .. }
            | DbError::WriteFailure { message, .. }
            | DbError::CdcWriteFailure { message }
            | DbError::CasWriteUnknown { message, .. }
            | DbError::SyntaxError { message }
            | DbError::Unauthorized { message }
            | DbError::Invalid { message }
            | DbError::ConfigError { message }
            | DbError::AlreadyExists { message, .. }
            | DbError::Unprepared { message, .. } => message,
        }
    }

    pub fn server(message: impl Into<String>) -> Self {
        DbError::ServerError {
            message: message.into(),
        }
    }

    pub fn protocol(message: impl Into<String>) -> Self {
        DbError::ProtocolError {
            message: message.into(),
        }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        DbError::Invalid {
            message: message.into(),
        }
    }

    pub fn syntax(message: impl Into<String>) -> Self {
        DbError::SyntaxError {
            message: message.into(),
        }
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        DbError::Unauthorized {
            message: message.into(),
        }
    }

    pub fn config(message: impl Into<String>) -> Self {
        DbError::ConfigError {
            message: message.into(),
        }
    }

    /// Cassandra's message for an unknown prepared id.
    pub fn unprepared(id: Bytes) -> Self {
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        DbError::Unprepared {
            message: format!("Prepared query with ID {hex} not found (either the query was not prepared on this host (maybe the host has been restarted?) or you have prepared too many queries and it has been evicted from the internal cache)"),
            id,
        }
    }

    /// Cassandra's messages for CREATE of something that exists.
    pub fn already_exists(keyspace: impl Into<String>, table: Option<String>) -> Self {
        let keyspace = keyspace.into();
        match table {
            None => DbError::AlreadyExists {
                message: format!("Cannot add existing keyspace \"{keyspace}\""),
                keyspace,
                table: String::new(),
            },
            Some(table) => DbError::AlreadyExists {
                message: format!(
                    "Cannot add already existing table \"{table}\" to keyspace \"{keyspace}\""
                ),
                keyspace,
                table,
            },
        }
    }
}

/// The list Cassandra prints in its "unsupported version" message.
pub const SUPPORTED_VERSIONS_TEXT: &str = "3/v3, 4/v4, 5/v5";

/// An envelope or segment that cannot be read. The connection answers with a ProtocolError
/// (on `stream()` when known) and, except where noted, closes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// The first byte names a version we do not speak. Cassandra answers in the highest
    /// version it supports (`reply_version()`), so drivers can downgrade.
    #[error("Invalid or unsupported protocol version ({version}); supported versions are ({SUPPORTED_VERSIONS_TEXT})")]
    UnsupportedVersion { version: u8 },
    #[error("Unknown opcode {opcode}")]
    UnknownOpcode { opcode: u8, stream: i16 },
    /// A request opcode in a response envelope or the other way round.
    #[error("Wrong protocol direction for opcode {opcode}")]
    WrongDirection { opcode: u8, stream: i16 },
    #[error("Request is too big: length {length} exceeds maximum allowed length {max}.")]
    TooLarge {
        stream: i16,
        length: u64,
        max: usize,
    },
    #[error("Cannot decompress envelope body: {reason}")]
    Decompression { stream: i16, reason: String },
    #[error("Segment header CRC mismatch: read {read:#08x}, computed {computed:#08x}")]
    HeaderCrc { read: u32, computed: u32 },
    #[error("Segment payload CRC mismatch: read {read:#010x}, computed {computed:#010x}")]
    PayloadCrc { read: u32, computed: u32 },
    #[error("Corrupt segment: {reason}")]
    Segment { reason: String },
}

impl FrameError {
    /// The stream the bad envelope was on, when the header got that far.
    pub fn stream(&self) -> Option<i16> {
        match self {
            FrameError::UnknownOpcode { stream, .. }
            | FrameError::WrongDirection { stream, .. }
            | FrameError::TooLarge { stream, .. }
            | FrameError::Decompression { stream, .. } => Some(*stream),
            FrameError::UnsupportedVersion { .. }
            | FrameError::HeaderCrc { .. }
            | FrameError::PayloadCrc { .. }
            | FrameError::Segment { .. } => None,
        }
    }
}

impl From<FrameError> for DbError {
    fn from(e: FrameError) -> Self {
        DbError::protocol(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_messages() {
        let e = DbError::invalid("bad");
        assert_eq!(e.code(), 0x2200);
        assert_eq!(e.to_string(), "bad");
        assert_eq!(e.message(), "bad");
        let e = DbError::unprepared(Bytes::from_static(&[0xab, 0x01]));
        assert_eq!(e.code(), 0x2500);
        assert!(e.message().contains("ab01"));
    }

    #[test]
    fn unsupported_version_text_is_cassandras() {
        let e = FrameError::UnsupportedVersion { version: 6 };
        assert_eq!(
            e.to_string(),
            "Invalid or unsupported protocol version (6); supported versions are (3/v3, 4/v4, 5/v5)"
        );
        let db: DbError = e.into();
        assert_eq!(db.code(), 0x000A);
    }
}
