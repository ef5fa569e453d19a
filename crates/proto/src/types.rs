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
    /// `vector<T, n>` (Cassandra 5.0): always frozen, `n` > 0. On the wire a custom type
    /// (`org.apache.cassandra.db.marshal.VectorType(<element class> , n)`), as Cassandra sends it.
    Vector(Box<ColumnType>, u32),
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
    Decimal {
        scale: i32,
        unscaled: Vec<u8>,
    },
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
    Duration {
        months: i32,
        days: i32,
        nanos: i64,
    },
    List(Vec<Value>),
    Set(Vec<Value>),
    Map(Vec<(Value, Value)>),
    Tuple(Vec<Value>),
    Udt(Vec<(String, Value)>),
    /// A vector's elements (never null). Fixed-size elements serialize packed, the others
    /// each with an unsigned-vint length, as Cassandra's `VectorType` does.
    Vector(Vec<Value>),
}

// ---- protocol `[option]` codec and CQL type text ------------------------------------------

use bytes::{BufMut, BytesMut};

use crate::error::DbError;
use crate::frame::ProtocolVersion;
use crate::wire::{self, Reader};

/// Deepest type nesting accepted off the wire (`list<list<...>>`): bounds recursion.
pub const MAX_TYPE_DEPTH: usize = 32;

const MARSHAL: &str = "org.apache.cassandra.db.marshal.";

impl ColumnType {
    /// The type as CQL writes it (`map<text, int>`, `tuple<int, text>`), as Cassandra prints it
    /// in `system_schema` and DESCRIBE. Frozen-ness is not part of `ColumnType`, so wrapping in
    /// `frozen<...>` is left to the caller; UDTs print their name only.
    pub fn cql_name(&self) -> String {
        match self {
            ColumnType::Custom(class) => format!("'{class}'"),
            ColumnType::Ascii => "ascii".into(),
            ColumnType::Bigint => "bigint".into(),
            ColumnType::Blob => "blob".into(),
            ColumnType::Boolean => "boolean".into(),
            ColumnType::Counter => "counter".into(),
            ColumnType::Decimal => "decimal".into(),
            ColumnType::Double => "double".into(),
            ColumnType::Float => "float".into(),
            ColumnType::Int => "int".into(),
            ColumnType::Timestamp => "timestamp".into(),
            ColumnType::Uuid => "uuid".into(),
            ColumnType::Varchar => "text".into(),
            ColumnType::Varint => "varint".into(),
            ColumnType::Timeuuid => "timeuuid".into(),
            ColumnType::Inet => "inet".into(),
            ColumnType::Date => "date".into(),
            ColumnType::Time => "time".into(),
            ColumnType::Smallint => "smallint".into(),
            ColumnType::Tinyint => "tinyint".into(),
            ColumnType::Duration => "duration".into(),
            ColumnType::List(t) => format!("list<{}>", t.cql_name()),
            ColumnType::Set(t) => format!("set<{}>", t.cql_name()),
            ColumnType::Map(k, v) => format!("map<{}, {}>", k.cql_name(), v.cql_name()),
            ColumnType::Tuple(ts) => {
                let inner: Vec<String> = ts.iter().map(|t| t.cql_name()).collect();
                format!("tuple<{}>", inner.join(", "))
            }
            ColumnType::Udt { name, .. } => name.clone(),
            ColumnType::Vector(t, n) => format!("vector<{}, {n}>", t.cql_name()),
        }
    }

    /// The serialized size of every value of this type when it is fixed (Cassandra's
    /// `valueLengthIfFixed`), which decides whether a vector packs its elements.
    pub fn fixed_len(&self) -> Option<usize> {
        match self {
            ColumnType::Boolean => Some(1),
            ColumnType::Float | ColumnType::Int => Some(4),
            ColumnType::Double | ColumnType::Bigint | ColumnType::Timestamp => Some(8),
            ColumnType::Uuid | ColumnType::Timeuuid => Some(16),
            ColumnType::Vector(t, n) => t.fixed_len()?.checked_mul(*n as usize),
            _ => None,
        }
    }

    /// Cassandra's marshal class for the type, as it writes custom types on the wire
    /// (`org.apache.cassandra.db.marshal.VectorType(org.apache.cassandra.db.marshal.FloatType , 3)`).
    pub fn marshal_class(&self) -> String {
        let simple = match self {
            ColumnType::Custom(class) => return class.clone(),
            ColumnType::Ascii => "AsciiType",
            ColumnType::Bigint => "LongType",
            ColumnType::Blob => "BytesType",
            ColumnType::Boolean => "BooleanType",
            ColumnType::Counter => "CounterColumnType",
            ColumnType::Decimal => "DecimalType",
            ColumnType::Double => "DoubleType",
            ColumnType::Float => "FloatType",
            ColumnType::Int => "Int32Type",
            ColumnType::Timestamp => "TimestampType",
            ColumnType::Uuid => "UUIDType",
            ColumnType::Varchar => "UTF8Type",
            ColumnType::Varint => "IntegerType",
            ColumnType::Timeuuid => "TimeUUIDType",
            ColumnType::Inet => "InetAddressType",
            ColumnType::Date => "SimpleDateType",
            ColumnType::Time => "TimeType",
            ColumnType::Smallint => "ShortType",
            ColumnType::Tinyint => "ByteType",
            ColumnType::Duration => "DurationType",
            ColumnType::List(t) => return format!("{MARSHAL}ListType({})", t.marshal_class()),
            ColumnType::Set(t) => return format!("{MARSHAL}SetType({})", t.marshal_class()),
            ColumnType::Map(k, v) => {
                return format!(
                    "{MARSHAL}MapType({},{})",
                    k.marshal_class(),
                    v.marshal_class()
                )
            }
            ColumnType::Tuple(ts) => {
                let inner: Vec<String> = ts.iter().map(|t| t.marshal_class()).collect();
                return format!("{MARSHAL}TupleType({})", inner.join(","));
            }
            ColumnType::Udt {
                keyspace,
                name,
                fields,
            } => {
                let mut parts = vec![keyspace.clone(), hex(name)];
                for (f, t) in fields {
                    parts.push(format!("{}:{}", hex(f), t.marshal_class()));
                }
                return format!("{MARSHAL}UserType({})", parts.join(","));
            }
            ColumnType::Vector(t, n) => {
                return format!("{MARSHAL}VectorType({} , {n})", t.marshal_class())
            }
        };
        format!("{MARSHAL}{simple}")
    }

    /// The native type for a simple CQL type name (`int`, `varchar`, ...), if it is one.
    pub fn from_simple_name(name: &str) -> Option<ColumnType> {
        Some(match name.to_ascii_lowercase().as_str() {
            "ascii" => ColumnType::Ascii,
            "bigint" => ColumnType::Bigint,
            "blob" => ColumnType::Blob,
            "boolean" => ColumnType::Boolean,
            "counter" => ColumnType::Counter,
            "decimal" => ColumnType::Decimal,
            "double" => ColumnType::Double,
            "float" => ColumnType::Float,
            "int" => ColumnType::Int,
            "timestamp" => ColumnType::Timestamp,
            "uuid" => ColumnType::Uuid,
            "text" | "varchar" => ColumnType::Varchar,
            "varint" => ColumnType::Varint,
            "timeuuid" => ColumnType::Timeuuid,
            "inet" => ColumnType::Inet,
            "date" => ColumnType::Date,
            "time" => ColumnType::Time,
            "smallint" => ColumnType::Smallint,
            "tinyint" => ColumnType::Tinyint,
            "duration" => ColumnType::Duration,
            _ => return None,
        })
    }

    /// The `[option]` id (spec section 4.2.5.2).
    pub fn option_id(&self) -> u16 {
        match self {
            ColumnType::Custom(_) => 0x0000,
            ColumnType::Ascii => 0x0001,
            ColumnType::Bigint => 0x0002,
            ColumnType::Blob => 0x0003,
            ColumnType::Boolean => 0x0004,
            ColumnType::Counter => 0x0005,
            ColumnType::Decimal => 0x0006,
            ColumnType::Double => 0x0007,
            ColumnType::Float => 0x0008,
            ColumnType::Int => 0x0009,
            ColumnType::Timestamp => 0x000B,
            ColumnType::Uuid => 0x000C,
            ColumnType::Varchar => 0x000D,
            ColumnType::Varint => 0x000E,
            ColumnType::Timeuuid => 0x000F,
            ColumnType::Inet => 0x0010,
            ColumnType::Date => 0x0011,
            ColumnType::Time => 0x0012,
            ColumnType::Smallint => 0x0013,
            ColumnType::Tinyint => 0x0014,
            ColumnType::Duration => 0x0015,
            ColumnType::List(_) => 0x0020,
            ColumnType::Map(..) => 0x0021,
            ColumnType::Set(_) => 0x0022,
            ColumnType::Udt { .. } => 0x0030,
            ColumnType::Tuple(_) => 0x0031,
            ColumnType::Vector(..) => 0x0000,
        }
    }

    /// Writes the type as an `[option]`. Types newer than `version` go out as Custom with
    /// Cassandra's marshal class name, as Cassandra does (date/time/smallint/tinyint are v4,
    /// duration is v5).
    pub fn write_option(&self, version: ProtocolVersion, out: &mut BytesMut) {
        let legacy = match self {
            ColumnType::Date if version < ProtocolVersion::V4 => Some("SimpleDateType"),
            ColumnType::Time if version < ProtocolVersion::V4 => Some("TimeType"),
            ColumnType::Smallint if version < ProtocolVersion::V4 => Some("ShortType"),
            ColumnType::Tinyint if version < ProtocolVersion::V4 => Some("ByteType"),
            ColumnType::Duration if version < ProtocolVersion::V5 => Some("DurationType"),
            _ => None,
        };
        if let Some(class) = legacy {
            out.put_u16(0);
            wire::put_string(out, &format!("{MARSHAL}{class}"));
            return;
        }
        out.put_u16(self.option_id());
        match self {
            ColumnType::Custom(class) => wire::put_string(out, class),
            ColumnType::Vector(..) => wire::put_string(out, &self.marshal_class()),
            ColumnType::List(t) | ColumnType::Set(t) => t.write_option(version, out),
            ColumnType::Map(k, v) => {
                k.write_option(version, out);
                v.write_option(version, out);
            }
            ColumnType::Udt {
                keyspace,
                name,
                fields,
            } => {
                wire::put_string(out, keyspace);
                wire::put_string(out, name);
                out.put_u16(u16::try_from(fields.len()).unwrap_or(u16::MAX));
                for (n, t) in fields.iter().take(u16::MAX as usize) {
                    wire::put_string(out, n);
                    t.write_option(version, out);
                }
            }
            ColumnType::Tuple(ts) => {
                out.put_u16(u16::try_from(ts.len()).unwrap_or(u16::MAX));
                for t in ts.iter().take(u16::MAX as usize) {
                    t.write_option(version, out);
                }
            }
            _ => {}
        }
    }

    /// Reads an `[option]`. Custom marshal class names of native types map back to them.
    pub(crate) fn read_option(r: &mut Reader, depth: usize) -> Result<ColumnType, DbError> {
        if depth > MAX_TYPE_DEPTH {
            return Err(DbError::protocol(format!(
                "Type nesting deeper than {MAX_TYPE_DEPTH}"
            )));
        }
        let id = r.u16("type id")?;
        Ok(match id {
            0x0000 => {
                let class = r.string("custom type class")?;
                match class.strip_prefix(MARSHAL) {
                    Some("SimpleDateType") => ColumnType::Date,
                    Some("TimeType") => ColumnType::Time,
                    Some("ShortType") => ColumnType::Smallint,
                    Some("ByteType") => ColumnType::Tinyint,
                    Some("DurationType") => ColumnType::Duration,
                    // Only when writing it back gives the same class string (a frozen
                    // element, `FrozenType(...)`, has no `ColumnType` form): a proxy relays
                    // what it read byte for byte.
                    Some(v) if v.starts_with("VectorType(") => marshal::parse(&class)
                        .filter(|t| t.marshal_class() == class)
                        .unwrap_or(ColumnType::Custom(class)),
                    _ => ColumnType::Custom(class),
                }
            }
            0x0001 => ColumnType::Ascii,
            0x0002 => ColumnType::Bigint,
            0x0003 => ColumnType::Blob,
            0x0004 => ColumnType::Boolean,
            0x0005 => ColumnType::Counter,
            0x0006 => ColumnType::Decimal,
            0x0007 => ColumnType::Double,
            0x0008 => ColumnType::Float,
            0x0009 => ColumnType::Int,
            // 0x000A was `text` in v1/v2.
            0x000A | 0x000D => ColumnType::Varchar,
            0x000B => ColumnType::Timestamp,
            0x000C => ColumnType::Uuid,
            0x000E => ColumnType::Varint,
            0x000F => ColumnType::Timeuuid,
            0x0010 => ColumnType::Inet,
            0x0011 => ColumnType::Date,
            0x0012 => ColumnType::Time,
            0x0013 => ColumnType::Smallint,
            0x0014 => ColumnType::Tinyint,
            0x0015 => ColumnType::Duration,
            0x0020 => ColumnType::List(Box::new(Self::read_option(r, depth + 1)?)),
            0x0021 => {
                let k = Self::read_option(r, depth + 1)?;
                let v = Self::read_option(r, depth + 1)?;
                ColumnType::Map(Box::new(k), Box::new(v))
            }
            0x0022 => ColumnType::Set(Box::new(Self::read_option(r, depth + 1)?)),
            0x0030 => {
                let keyspace = r.string("UDT keyspace")?;
                let name = r.string("UDT name")?;
                let n = r.u16("UDT field count")? as usize;
                r.check_count("UDT field", n, 4)?;
                let mut fields = Vec::with_capacity(n);
                for _ in 0..n {
                    let f = r.string("UDT field name")?;
                    fields.push((f, Self::read_option(r, depth + 1)?));
                }
                ColumnType::Udt {
                    keyspace,
                    name,
                    fields,
                }
            }
            0x0031 => {
                let n = r.u16("tuple size")? as usize;
                r.check_count("tuple component", n, 2)?;
                let mut ts = Vec::with_capacity(n);
                for _ in 0..n {
                    ts.push(Self::read_option(r, depth + 1)?);
                }
                ColumnType::Tuple(ts)
            }
            other => {
                return Err(DbError::protocol(format!("Unknown type id {other:#06x}")));
            }
        })
    }

    /// Decodes a whole `[option]` from bytes (public form of the reader).
    pub fn decode_option(bytes: bytes::Bytes) -> Result<ColumnType, DbError> {
        Self::read_option(&mut Reader::new(bytes), 0)
    }

    /// True for `list`, `set` and `map`.
    pub fn is_collection(&self) -> bool {
        matches!(
            self,
            ColumnType::List(_) | ColumnType::Set(_) | ColumnType::Map(..)
        )
    }
}

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

/// Reads Cassandra's marshal class strings back into types (the form vectors travel in).
mod marshal {
    use super::{ColumnType, MARSHAL, MAX_TYPE_DEPTH};

    /// The type a whole class string names; `None` when it is not one this knows.
    pub(super) fn parse(class: &str) -> Option<ColumnType> {
        let mut p = P {
            s: class.as_bytes(),
            pos: 0,
        };
        let t = p.ty(0)?;
        p.ws();
        (p.pos == p.s.len()).then_some(t)
    }

    struct P<'a> {
        s: &'a [u8],
        pos: usize,
    }

    impl P<'_> {
        fn ws(&mut self) {
            while self.s.get(self.pos) == Some(&b' ') {
                self.pos += 1;
            }
        }

        fn eat(&mut self, c: u8) -> bool {
            self.ws();
            let hit = self.s.get(self.pos) == Some(&c);
            if hit {
                self.pos += 1;
            }
            hit
        }

        fn word(&mut self) -> &str {
            self.ws();
            let start = self.pos;
            while self
                .s
                .get(self.pos)
                .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'$'))
            {
                self.pos += 1;
            }
            std::str::from_utf8(&self.s[start..self.pos]).unwrap_or("")
        }

        fn args(&mut self, depth: usize) -> Option<Vec<ColumnType>> {
            let mut out = vec![self.ty(depth + 1)?];
            while self.eat(b',') {
                out.push(self.ty(depth + 1)?);
            }
            self.eat(b')').then_some(out)
        }

        fn ty(&mut self, depth: usize) -> Option<ColumnType> {
            if depth > MAX_TYPE_DEPTH {
                return None;
            }
            let word = self.word().to_string();
            let name = word.strip_prefix(MARSHAL).unwrap_or(&word);
            if !self.eat(b'(') {
                return Some(match name {
                    "AsciiType" => ColumnType::Ascii,
                    "LongType" => ColumnType::Bigint,
                    "BytesType" => ColumnType::Blob,
                    "BooleanType" => ColumnType::Boolean,
                    "CounterColumnType" => ColumnType::Counter,
                    "DecimalType" => ColumnType::Decimal,
                    "DoubleType" => ColumnType::Double,
                    "FloatType" => ColumnType::Float,
                    "Int32Type" => ColumnType::Int,
                    "TimestampType" | "DateType" => ColumnType::Timestamp,
                    "UUIDType" => ColumnType::Uuid,
                    "UTF8Type" => ColumnType::Varchar,
                    "IntegerType" => ColumnType::Varint,
                    "TimeUUIDType" => ColumnType::Timeuuid,
                    "InetAddressType" => ColumnType::Inet,
                    "SimpleDateType" => ColumnType::Date,
                    "TimeType" => ColumnType::Time,
                    "ShortType" => ColumnType::Smallint,
                    "ByteType" => ColumnType::Tinyint,
                    "DurationType" => ColumnType::Duration,
                    _ => return None,
                });
            }
            match name {
                "VectorType" => {
                    let elem = self.ty(depth + 1)?;
                    if !self.eat(b',') {
                        return None;
                    }
                    let n = self.word().parse::<u32>().ok().filter(|n| *n > 0)?;
                    self.eat(b')')
                        .then(|| ColumnType::Vector(Box::new(elem), n))
                }
                "FrozenType" => {
                    let t = self.ty(depth + 1)?;
                    self.eat(b')').then_some(t)
                }
                "ListType" => Some(ColumnType::List(Box::new(self.args(depth)?.pop()?))),
                "SetType" => Some(ColumnType::Set(Box::new(self.args(depth)?.pop()?))),
                "MapType" => {
                    let mut a = self.args(depth)?;
                    let v = a.pop()?;
                    let k = a.pop()?;
                    a.is_empty()
                        .then(|| ColumnType::Map(Box::new(k), Box::new(v)))
                }
                "TupleType" => Some(ColumnType::Tuple(self.args(depth)?)),
                // UDTs inside vectors keep their class string: their hex field names are
                // not worth a parser until a client needs it.
                _ => None,
            }
        }
    }
}

impl std::fmt::Display for ColumnType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.cql_name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested() -> ColumnType {
        ColumnType::Map(
            Box::new(ColumnType::Varchar),
            Box::new(ColumnType::List(Box::new(ColumnType::Tuple(vec![
                ColumnType::Int,
                ColumnType::Udt {
                    keyspace: "ks".into(),
                    name: "addr".into(),
                    fields: vec![
                        ("street".into(), ColumnType::Varchar),
                        ("no".into(), ColumnType::Smallint),
                    ],
                },
            ])))),
        )
    }

    #[test]
    fn cql_names() {
        assert_eq!(
            ColumnType::Map(Box::new(ColumnType::Varchar), Box::new(ColumnType::Int)).cql_name(),
            "map<text, int>"
        );
        assert_eq!(nested().cql_name(), "map<text, list<tuple<int, addr>>>");
        assert_eq!(
            ColumnType::from_simple_name("VARCHAR"),
            Some(ColumnType::Varchar)
        );
    }

    #[test]
    fn options_round_trip() {
        for v in [
            ProtocolVersion::V3,
            ProtocolVersion::V4,
            ProtocolVersion::V5,
        ] {
            for t in [
                nested(),
                ColumnType::Duration,
                ColumnType::Date,
                ColumnType::Custom("a.B".into()),
            ] {
                let mut out = BytesMut::new();
                t.write_option(v, &mut out);
                assert_eq!(ColumnType::decode_option(out.freeze()).unwrap(), t);
            }
        }
    }

    #[test]
    fn golden_options() {
        let mut out = BytesMut::new();
        ColumnType::Map(Box::new(ColumnType::Varchar), Box::new(ColumnType::Int))
            .write_option(ProtocolVersion::V4, &mut out);
        assert_eq!(&out[..], &[0x00, 0x21, 0x00, 0x0d, 0x00, 0x09]);
        let mut out = BytesMut::new();
        ColumnType::Duration.write_option(ProtocolVersion::V4, &mut out);
        assert_eq!(&out[..2], &[0, 0]);
        assert!(out.ends_with(b"org.apache.cassandra.db.marshal.DurationType"));
    }

    #[test]
    fn vectors_travel_as_cassandras_custom_class() {
        let v = ColumnType::Vector(Box::new(ColumnType::Float), 3);
        assert_eq!(v.cql_name(), "vector<float, 3>");
        let mut out = BytesMut::new();
        v.write_option(ProtocolVersion::V4, &mut out);
        assert_eq!(&out[..2], &[0, 0]);
        assert!(out.ends_with(
            b"org.apache.cassandra.db.marshal.VectorType(org.apache.cassandra.db.marshal.FloatType , 3)"
        ));
        assert_eq!(ColumnType::decode_option(out.freeze()).unwrap(), v);
        let nested = ColumnType::Vector(
            Box::new(ColumnType::Map(
                Box::new(ColumnType::Varchar),
                Box::new(ColumnType::Vector(Box::new(ColumnType::Int), 2)),
            )),
            4,
        );
        let mut out = BytesMut::new();
        nested.write_option(ProtocolVersion::V5, &mut out);
        assert_eq!(ColumnType::decode_option(out.freeze()).unwrap(), nested);
        assert_eq!(v.fixed_len(), Some(12));
        assert_eq!(
            ColumnType::Vector(Box::new(ColumnType::Varchar), 3).fixed_len(),
            None
        );
        assert_eq!(
            marshal::parse("org.apache.cassandra.db.marshal.VectorType(x , 3)"),
            None
        );
        let frozen = "org.apache.cassandra.db.marshal.VectorType(org.apache.cassandra.db.marshal.FrozenType(org.apache.cassandra.db.marshal.ListType(org.apache.cassandra.db.marshal.Int32Type)) , 2)";
        let mut out = BytesMut::new();
        ColumnType::Custom(frozen.into()).write_option(ProtocolVersion::V4, &mut out);
        assert_eq!(
            ColumnType::decode_option(out.freeze()).unwrap(),
            ColumnType::Custom(frozen.into())
        );
    }

    #[test]
    fn deep_nesting_is_refused() {
        let mut b = Vec::new();
        for _ in 0..10_000 {
            b.extend_from_slice(&[0x00, 0x20]);
        }
        b.extend_from_slice(&[0x00, 0x09]);
        assert!(ColumnType::decode_option(bytes::Bytes::from(b)).is_err());
    }
}
