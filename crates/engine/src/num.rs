//! A number decoded from any numeric type, held in the width Java would hold it in, and its
//! conversions to the other numeric types as Cassandra's `CastFcts` do them (Java's
//! `intValue()`, `longValue()`, `floatValue()`, `doubleValue()` and `BigDecimal` text rules).
//! `scalar` uses it for casts and the math functions.

use crate::types::cql_type_name;
use proto::types::{ColumnType, Value};
use proto::value::decode_value;

use crate::bigint::{decimal_string, parse_decimal, BigInt};
use crate::javafmt::{java_double, java_float};

/// A decoded number, kept in the width Java would hold it in.
pub(crate) enum Num {
    /// tinyint, smallint, int, bigint, counter.
    I(i64),
    F32(f32),
    F64(f64),
    Dec {
        unscaled: BigInt,
        scale: i32,
    },
    Var(BigInt),
}

pub(crate) fn encode_decimal(u: &BigInt, scale: i32) -> Vec<u8> {
    let mut out = scale.to_be_bytes().to_vec();
    out.extend_from_slice(&u.to_twos());
    out
}

impl Num {
    pub(crate) fn decode(ty: &ColumnType, b: &[u8]) -> Result<Num, String> {
        let v = decode_value(ty, b).map_err(|e| e.to_string())?;
        Ok(match v {
            Value::Tinyint(x) => Num::I(i64::from(x)),
            Value::Smallint(x) => Num::I(i64::from(x)),
            Value::Int(x) => Num::I(i64::from(x)),
            Value::Bigint(x) | Value::Counter(x) | Value::Timestamp(x) => Num::I(x),
            Value::Float(x) => Num::F32(x),
            Value::Double(x) => Num::F64(x),
            Value::Decimal { scale, unscaled } => Num::Dec {
                unscaled: BigInt::from_twos(&unscaled),
                scale,
            },
            Value::Varint(x) => Num::Var(BigInt::from_twos(&x)),
            other => return Err(format!("{other:?} is not a number")),
        })
    }

    /// Java's `longValue()`: saturating for floating point, low 64 bits for big numbers.
    pub(crate) fn long_value(&self) -> i64 {
        match self {
            Num::I(i) => *i,
            Num::F32(x) => *x as i64,
            Num::F64(x) => *x as i64,
            Num::Dec { unscaled, scale } => integer_part(unscaled, *scale).low_i64(),
            Num::Var(v) => v.low_i64(),
        }
    }

    /// Java's `intValue()`: `(int)` of a long, saturating for floating point.
    pub(crate) fn int_value(&self) -> i32 {
        match self {
            Num::F32(x) => *x as i32,
            Num::F64(x) => *x as i32,
            other => other.long_value() as i32,
        }
    }

    pub(crate) fn double_value(&self) -> f64 {
        match self {
            Num::I(i) => *i as f64,
            Num::F32(x) => f64::from(*x),
            Num::F64(x) => *x,
            Num::Dec { unscaled, scale } => {
                decimal_string(unscaled, *scale).parse().unwrap_or(f64::NAN)
            }
            Num::Var(v) => v.to_f64(),
        }
    }

    pub(crate) fn float_value(&self) -> f32 {
        match self {
            Num::I(i) => *i as f32,
            Num::F32(x) => *x,
            Num::F64(x) => *x as f32,
            Num::Dec { unscaled, scale } => {
                decimal_string(unscaled, *scale).parse().unwrap_or(f32::NAN)
            }
            Num::Var(v) => v.to_decimal_string().parse().unwrap_or(f32::NAN),
        }
    }

    /// Serialized value of this number converted to `to` (CastFcts conversions).
    pub(crate) fn convert(&self, to: &ColumnType) -> Result<Vec<u8>, String> {
        use ColumnType as T;
        Ok(match to {
            // Number.byteValue()/shortValue() are (byte)/(short) of intValue().
            T::Tinyint => vec![self.int_value() as i8 as u8],
            T::Smallint => (self.int_value() as i16).to_be_bytes().to_vec(),
            T::Int => self.int_value().to_be_bytes().to_vec(),
            T::Bigint | T::Counter => self.long_value().to_be_bytes().to_vec(),
            T::Float => self.float_value().to_be_bytes().to_vec(),
            T::Double => self.double_value().to_be_bytes().to_vec(),
            T::Varint => BigInt::from_i64(self.long_value()).to_twos(),
            T::Decimal => {
                let (u, s) = match self {
                    Num::I(i) => (BigInt::from_i64(*i), 0),
                    // new BigDecimal(Float.toString(f)) / BigDecimal.valueOf(double).
                    Num::F32(x) => parse_decimal(&java_float(*x)).ok_or_else(|| {
                        format!("Character {} is neither a decimal digit number, decimal point, nor \"e\" notation exponential mark.", java_float(*x).chars().next().unwrap_or('?'))
                    })?,
                    Num::F64(x) => parse_decimal(&java_double(*x)).ok_or_else(|| {
                        format!("Character {} is neither a decimal digit number, decimal point, nor \"e\" notation exponential mark.", java_double(*x).chars().next().unwrap_or('?'))
                    })?,
                    Num::Dec { unscaled, scale } => (unscaled.clone(), *scale),
                    Num::Var(v) => (v.clone(), 0),
                };
                encode_decimal(&u, s)
            }
            other => {
                return Err(format!(
                    "Cannot convert a number to {}",
                    cql_type_name(other)
                ))
            }
        })
    }
}

/// The integer part of unscaled × 10^-scale, truncated toward zero.
fn integer_part(u: &BigInt, scale: i32) -> BigInt {
    let mut m = u.clone();
    if scale <= 0 {
        // Only the low 64 bits are ever used: stop once they are all zero.
        for _ in 0..(-(scale as i64)).min(64) {
            m = m.mul_small(10, 0);
        }
        return m;
    }
    for _ in 0..scale {
        if m.is_zero() {
            break;
        }
        m = m.divrem_small(10).0;
    }
    if m.is_zero() {
        m.neg = false;
    }
    m
}
