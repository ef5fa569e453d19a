//! `proto`: the CQL native protocol (v3, v4, v5) as Peregrine speaks it.
//!
//! **What it is:** a synchronous, socket-free codec. It turns bytes from a client into
//! envelopes and typed requests, and typed responses back into bytes; it serializes,
//! deserializes and validates CQL values; and it defines `DbError`, the one error type whose
//! variants are the protocol's error codes.
//!
//! **What it is not:** no I/O, no async, no connection state machine (which version a
//! connection speaks, when compression starts, when v5 segment framing starts: that is
//! `server`'s job), no CQL parsing (`cql`), no schema or execution (`engine`).
//!
//! # Module map
//! - [`types`]: `ColumnType` (the protocol's `[option]`, with `cql_name()`) and `Value`.
//! - [`error`]: `DbError` (one variant per error code, `code()`), `FrameError` (framing
//!   problems, answered with ProtocolError).
//! - [`frame`]: envelopes: 9-byte header, `Opcode`, `ProtocolVersion`, v3/v4 body compression
//!   (LZ4, Snappy), `decode_envelope` / `encode_envelope`.
//! - [`segment`]: v5 segments: CRC24 header, CRC32 payload, LZ4 segments, multi-segment
//!   envelopes (`EnvelopeAssembler`).
//! - [`deframe`]: `Deframer`, the one incremental read loop over either framing: bytes in,
//!   whole envelopes out (used by the front end and by the proxy's upstream connections).
//! - [`request`]: request bodies (`Request::decode`, `Request::from_envelope`, and an encoder
//!   for tests and proxy mode).
//! - [`response`]: response bodies (`Response::encode_body`, `RowsBuilder`, and a decoder for
//!   tests and proxy mode).
//! - [`value`]: `decode_value`, `encode_value`, `validate_value`.
//!
//! # Invariants
//! - No input panics: every decoder returns an error for malformed bytes (fuzzed in
//!   `fuzz/`, and randomized in unit tests).
//! - Every length or count read off the wire is checked against the bytes that remain (or
//!   against `max_frame_bytes`) before anything is allocated.
//! - "Incomplete" is `Ok(None)`, never an error; decoders leave the buffer untouched then.
//! - Decoded requests borrow large values as `Bytes` views into the envelope body.

pub mod deframe;
pub mod error;
pub mod frame;
pub mod request;
pub mod response;
pub mod segment;
pub mod types;
pub mod value;
mod wire;

pub use deframe::Deframer;
pub use error::{DbError, FailureReason, FrameError, WriteType};
pub use frame::{
    decode_envelope, encode_envelope, Compression, Envelope, FrameHeader, Opcode, ProtocolVersion,
};
pub use request::{
    Batch, BatchKind, BatchStatement, Consistency, DecodedRequest, Execute, Prepare, Query,
    QueryParams, RawValue, Request, Values,
};
pub use response::{
    ColumnSpec, DecodedResponse, Event, Prepared, PreparedMetadata, Response, ResponseExtras,
    ResultBody, Rows, RowsBuilder, RowsMetadata, SchemaChange, SchemaChangeTarget,
    SchemaChangeType,
};
pub use segment::{decode_segment, encode_segments, EnvelopeAssembler, Segment};
pub use types::{ColumnType, Value};
pub use value::{decode_value, encode_value, validate_value};
