//! CQL data types and values, shared by the codec (`proto`), the parser (`cql`) and the engine.
//!
//! `ColumnType` is the protocol's `[option]` type (spec section 6 "Result metadata" ids);
//! `Value` is a decoded CQL value. On disk and on the wire the engine keeps values as their
//! serialized protocol bytes; `Value` appears where a decision needs the typed form (literals,
//! comparisons, validation, DESCRIBE output).

use std::net::IpAddr;

/// A CQL type as the native protocol describes it (`[option]`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ColumnType {
    Custom(String),
    Ascii,
    Bigint,
    Blob,
    Boolean,
    Counter,
    Decimal,
    Double,
    Float,
    Int,
    Timestamp,
    Uuid,
    /// `text` and `varchar` are the same type (id 0x000D).
    Varchar,
    Varint,
    Timeuuid,
    Inet,
    Date,
    Time,
    Smallint,
    Tinyint,
    Duration,
    List(Box<ColumnType>),
    Map(Box<ColumnType>, Box<ColumnType>),
    Set(Box<ColumnType>),
    Udt {
        keyspace: String,
        name: String,
        fields: Vec<(String, ColumnType)>,
    },
    Tuple(Vec<ColumnType>),
}

/// A decoded CQL value. `Null` is the protocol's length -1.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Ascii(String),
    Bigint(i64),
    Blob(Vec<u8>),
    Boolean(bool),
    Counter(i64),
    /// Unscaled two's-complement big-endian bytes and the scale, as on the wire.
    Decimal { scale: i32, unscaled: Vec<u8> },
    Double(f64),
    Float(f32),
    Int(i32),
    /// Milliseconds since the Unix epoch.
    Timestamp(i64),
    Uuid([u8; 16]),
    Varchar(String),
    /// Two's-complement big-endian bytes, minimal length.
    Varint(Vec<u8>),
    Timeuuid([u8; 16]),
    Inet(IpAddr),
    /// Days since the epoch with 2^31 as the epoch (the wire form).
    Date(u32),
    /// Nanoseconds since midnight.
    Time(i64),
    Smallint(i16),
    Tinyint(i8),
    Duration { months: i32, days: i32, nanos: i64 },
    List(Vec<Value>),
    Set(Vec<Value>),
    Map(Vec<(Value, Value)>),
    Tuple(Vec<Value>),
    Udt(Vec<(String, Value)>),
}
