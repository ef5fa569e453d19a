//! CQL's arithmetic operators (`+ - * / %`, unary minus) over serialized values, and the
//! running sums and averages of the `sum`/`avg` aggregates, as Cassandra 5.0's
//! `OperationFcts` and `AggregateFcts` define them: the result type of two numbers is the
//! wider of the two (floating point if either is; `float` op `bigint` is `double`, anything op
//! `varint` or `decimal` is `varint`/`decimal`), fixed-width integers wrap at their width as
//! Java's do, integer division by zero fails ("/ by zero") while floating point gives
//! Infinity/NaN, varint is exact (Java's `BigInteger`), decimal is Java's `BigDecimal` as
//! Cassandra's `DecimalType` uses it (bigdec.rs; a non-decimal operand goes through its double,
//! so `1.5 * 2` is 3.00), a duration can be added to or subtracted from a timestamp or a date,
//! and `+` concatenates text.
//!
//! Not here: typing of literals (the builder decides what an untyped `1` is), constant folding.

use crate::bigdec::{self, Dec};
use crate::scalar::{duration_of, format_duration};
use crate::temporal::add_months;
use crate::types::cql_type_name;
use crate::EngineError;
use cql::ast::ArithOp;
use num_bigint::{BigInt, Sign};
use proto::error::DbError;
use proto::types::ColumnType as T;

const MILLIS_PER_DAY: i64 = 86_400_000;
const DATE_EPOCH: i64 = 1 << 31;

/// Byte size Cassandra ranks numbers by (`OperationFcts.size`); unbounded is `u32::MAX`.
fn size(t: &T) -> Option<(u32, bool)> {
    Some(match t {
        T::Tinyint => (1, false),
        T::Smallint => (2, false),
        T::Int => (4, false),
        T::Bigint | T::Counter => (8, false),
        T::Varint => (u32::MAX, false),
        T::Float => (4, true),
        T::Double => (8, true),
        T::Decimal => (u32::MAX, true),
        _ => return None,
    })
}

pub fn is_numeric(t: &T) -> bool {
    size(t).is_some()
}

/// The result type of `l op r`, or None when Cassandra has no such operation.
pub fn result_type(op: ArithOp, l: &T, r: &T) -> Option<T> {
    if let (Some((ls, lf)), Some((rs, rf))) = (size(l), size(r)) {
        let s = ls.max(rs);
        return Some(if lf || rf {
            match s {
                0..=4 => T::Float,
                5..=8 => T::Double,
                _ => T::Decimal,
            }
        } else {
            match s {
                1 => T::Tinyint,
                2 => T::Smallint,
                3..=4 => T::Int,
                5..=8 => T::Bigint,
                _ => T::Varint,
            }
        });
    }
    match (op, l, r) {
        (ArithOp::Add | ArithOp::Sub, T::Timestamp, T::Duration) => Some(T::Timestamp),
        (ArithOp::Add | ArithOp::Sub, T::Date, T::Duration) => Some(T::Date),
        (ArithOp::Add, T::Ascii, T::Ascii) => Some(T::Ascii),
        (ArithOp::Add, T::Ascii | T::Varchar, T::Ascii | T::Varchar) => Some(T::Varchar),
        _ => None,
    }
}

/// The failure Cassandra reports for an operation that threw, e.g.
/// `the operation 'int / int' failed: / by zero`.
fn failed(op: ArithOp, l: &T, r: &T, why: &str) -> EngineError {
    EngineError::Db(DbError::FunctionFailure {
        message: format!(
            "the operation '{} {} {}' failed: {why}",
            cql_type_name(l),
            op.symbol(),
            cql_type_name(r)
        ),
        keyspace: "system".into(),
        function: fn_name(op).into(),
        arg_types: vec![cql_type_name(l), cql_type_name(r)],
    })
}

fn fn_name(op: ArithOp) -> &'static str {
    match op {
        ArithOp::Add => "_add",
        ArithOp::Sub => "_substract",
        ArithOp::Mul => "_multiply",
        ArithOp::Div => "_divide",
        ArithOp::Rem => "_modulo",
    }
}

fn bad(t: &T) -> EngineError {
    EngineError::invalid(format!("Invalid value for type {}", cql_type_name(t)))
}

/// A number as the operation computes it.
#[derive(Debug, Clone)]
enum Num {
    /// tinyint, smallint, int, bigint, counter
    I(i128),
    /// float (widened), double
    F(f64),
    V(BigInt),
    D(Dec),
}

/// A serialized number of type `t` (None if `t` is not a number or the bytes are bad).
fn decode(t: &T, b: &[u8]) -> Option<Num> {
    Some(match t {
        T::Tinyint => Num::I(i128::from(i8::from_be_bytes(b.try_into().ok()?))),
        T::Smallint => Num::I(i128::from(i16::from_be_bytes(b.try_into().ok()?))),
        T::Int => Num::I(i128::from(i32::from_be_bytes(b.try_into().ok()?))),
        T::Bigint | T::Counter => Num::I(i128::from(i64::from_be_bytes(b.try_into().ok()?))),
        T::Varint if !b.is_empty() => Num::V(BigInt::from_signed_bytes_be(b)),
        T::Float => Num::F(f64::from(f32::from_be_bytes(b.try_into().ok()?))),
        T::Double => Num::F(f64::from_be_bytes(b.try_into().ok()?)),
        T::Decimal if b.len() > 4 => Num::D(Dec::decode(b)?),
        _ => return None,
    })
}

fn as_f64(n: &Num) -> f64 {
    match n {
        Num::I(i) => *i as f64,
        Num::F(f) => *f,
        Num::V(v) => Dec::int(v.clone()).to_f64(),
        Num::D(d) => d.to_f64(),
    }
}

/// `DecimalType.toBigDecimal`: a varint exactly, any other number through its double
/// (`BigDecimal.valueOf(double)`, so an int 3 is 3.0 and `1.5 * 2` is 3.00).
fn as_dec(n: Num) -> Result<Dec, String> {
    match n {
        Num::I(i) => Dec::of_f64(i as f64),
        Num::F(f) => Dec::of_f64(f),
        Num::V(v) => Ok(Dec::int(v)),
        Num::D(d) => Ok(d),
    }
}

/// `IntegerType.toBigInteger`: the operands of a varint operation are all integers.
fn as_big(n: Num) -> BigInt {
    match n {
        Num::I(i) => BigInt::from(i),
        Num::V(v) => v,
        Num::F(f) => BigInt::from(f as i64),
        Num::D(d) => BigInt::from(d.to_f64() as i64),
    }
}

/// Compensated (Kahan) summation in double, as Cassandra sums and averages `float` and
/// `double` (0.1 + 0.2 + 0.3 is 0.6 there, not 0.6000000000000001). Cassandra ends with
/// `sum + compensation` (textbook Kahan subtracts it): 0.1 + 0.3 is 0.4000000000000001 there.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Kahan {
    sum: f64,
    compensation: f64,
    /// The plain sum, which an infinite input makes the answer.
    simple: f64,
}

impl Kahan {
    pub(crate) fn add(&mut self, v: f64) {
        let t = v - self.compensation;
        let r = self.sum + t;
        self.compensation = (r - self.sum) - t;
        self.sum = r;
        self.simple += v;
    }

    pub(crate) fn total(&self) -> f64 {
        let t = self.sum + self.compensation;
        if t.is_nan() && self.simple.is_infinite() {
            self.simple
        } else {
            t
        }
    }
}

/// A running `sum` (and `collection_sum`) in its argument's type, as Cassandra 5.0's
/// aggregates keep it: integers wrap at their width, `float` and `double` are summed with
/// Kahan's compensation in double, `varint` and `decimal` exactly.
pub(crate) enum Sum {
    Int(i128),
    Float(Kahan),
    Varint(BigInt),
    Decimal(Dec),
}

impl Sum {
    pub(crate) fn new(ty: &T) -> Sum {
        match ty {
            T::Float | T::Double => Sum::Float(Kahan::default()),
            T::Varint => Sum::Varint(BigInt::from(0)),
            T::Decimal => Sum::Decimal(Dec::zero(0)),
            _ => Sum::Int(0),
        }
    }

    /// Adds a value; an empty one (blobAsInt(0x)) counts as null, as in Cassandra.
    pub(crate) fn add(&mut self, ty: &T, v: &[u8]) -> Result<(), EngineError> {
        if v.is_empty() {
            return Ok(());
        }
        match (self, decode(ty, v).ok_or_else(|| bad(ty))?) {
            (Sum::Int(s), Num::I(x)) => *s = s.wrapping_add(x),
            (Sum::Float(k), Num::F(x)) => k.add(x),
            (Sum::Varint(s), Num::V(x)) => *s += x,
            (Sum::Decimal(s), Num::D(x)) => {
                *s = s
                    .add_exact(&x)
                    .ok_or_else(|| aggregate_failed("sum", ty, &bigdec::too_big()))?;
            }
            _ => return Err(bad(ty)),
        }
        Ok(())
    }

    pub(crate) fn result(&self, ty: &T) -> Vec<u8> {
        match self {
            Sum::Int(s) => fixed(ty, *s),
            Sum::Float(k) => float(ty, k.total()),
            Sum::Varint(s) => s.to_signed_bytes_be(),
            Sum::Decimal(s) => s.encode(),
        }
    }
}

/// A running `avg` (and `collection_avg`), as Cassandra 5.0's aggregates keep it: integers
/// as an exact sum divided (truncating) at the end; `float` and `double` as a Kahan sum in
/// double that turns into a `BigDecimal` sum when it overflows (the average of 1e308, 1e308
/// and 1e308 is 1e308), divided half even at the sum's scale; `varint` as an exact sum
/// divided (truncating); `decimal` as a running mean ([`Dec::mean_step`]). Zero when no
/// value was added.
pub(crate) enum Mean {
    Int {
        n: i64,
        sum: i128,
    },
    Float {
        n: i64,
        sum: Kahan,
        big: Option<Dec>,
    },
    Varint {
        n: i64,
        sum: BigInt,
    },
    Decimal {
        n: i64,
        avg: Dec,
    },
}

impl Mean {
    pub(crate) fn new(ty: &T) -> Mean {
        match ty {
            T::Float | T::Double => Mean::Float {
                n: 0,
                sum: Kahan::default(),
                big: None,
            },
            T::Varint => Mean::Varint {
                n: 0,
                sum: BigInt::from(0),
            },
            T::Decimal => Mean::Decimal {
                n: 0,
                avg: Dec::zero(0),
            },
            _ => Mean::Int { n: 0, sum: 0 },
        }
    }

    /// Adds a value; an empty one (blobAsInt(0x)) counts as null, as in Cassandra.
    pub(crate) fn add(&mut self, ty: &T, v: &[u8]) -> Result<(), EngineError> {
        if v.is_empty() {
            return Ok(());
        }
        let fail = |why: String| aggregate_failed("avg", ty, &why);
        match (self, decode(ty, v).ok_or_else(|| bad(ty))?) {
            (Mean::Int { n, sum }, Num::I(x)) => {
                *n += 1;
                *sum += x;
            }
            (Mean::Float { n, sum, big }, Num::F(x)) => {
                *n += 1;
                match big {
                    Some(b) => {
                        *b = b
                            .add_exact(&Dec::of_f64(x).map_err(fail)?)
                            .ok_or_else(|| fail(bigdec::too_big()))?
                    }
                    None => {
                        let before = sum.sum;
                        sum.add(x);
                        if sum.sum.is_infinite() && !x.is_infinite() {
                            let (a, b) = (
                                Dec::of_f64(before).map_err(fail)?,
                                Dec::of_f64(x).map_err(fail)?,
                            );
                            *big = Some(a.add_exact(&b).ok_or_else(|| fail(bigdec::too_big()))?);
                        }
                    }
                }
            }
            (Mean::Varint { n, sum }, Num::V(x)) => {
                *n += 1;
                *sum += x;
            }
            (Mean::Decimal { n, avg }, Num::D(x)) => {
                *n += 1;
                *avg = avg.mean_step(&x, *n).map_err(fail)?;
            }
            _ => return Err(bad(ty)),
        }
        Ok(())
    }

    pub(crate) fn result(&self, ty: &T) -> Result<Vec<u8>, EngineError> {
        Ok(match self {
            Mean::Int { n, sum } => fixed(ty, sum / i128::from((*n).max(1))),
            Mean::Float { n, sum, big } => float(
                ty,
                match big {
                    Some(b) => b
                        .div_count(*n)
                        .map_err(|why| aggregate_failed("avg", ty, &why))?
                        .to_f64(),
                    None if *n == 0 => 0.0,
                    None => sum.total() / *n as f64,
                },
            ),
            Mean::Varint { n, sum } => (sum / BigInt::from((*n).max(1))).to_signed_bytes_be(),
            Mean::Decimal { avg, .. } => avg.encode(),
        })
    }
}

/// An aggregate that threw (Cassandra reports Java's exception as a server failure).
fn aggregate_failed(f: &str, ty: &T, why: &str) -> EngineError {
    EngineError::invalid(format!("{f}({}) failed: {why}", cql_type_name(ty)))
}

/// An integer in a fixed-width type, wrapped as Java's casts do.
fn fixed(ty: &T, v: i128) -> Vec<u8> {
    match ty {
        T::Tinyint => (v as i8).to_be_bytes().to_vec(),
        T::Smallint => (v as i16).to_be_bytes().to_vec(),
        T::Int => (v as i32).to_be_bytes().to_vec(),
        _ => (v as i64).to_be_bytes().to_vec(),
    }
}

fn float(ty: &T, v: f64) -> Vec<u8> {
    if *ty == T::Float {
        (v as f32).to_be_bytes().to_vec()
    } else {
        v.to_be_bytes().to_vec()
    }
}

/// Applies `op` to two non-null values of types `lt` and `rt`, giving a value of type `ty`
/// (from [`result_type`]).
pub fn apply(
    op: ArithOp,
    lt: &T,
    l: &[u8],
    rt: &T,
    r: &[u8],
    ty: &T,
) -> Result<Vec<u8>, EngineError> {
    match ty {
        T::Ascii | T::Varchar => {
            let mut v = l.to_vec();
            v.extend_from_slice(r);
            return Ok(v);
        }
        T::Timestamp | T::Date => return temporal(op, lt, l, rt, r),
        _ => {}
    }
    let a = decode(lt, l).ok_or_else(|| bad(lt))?;
    let b = decode(rt, r).ok_or_else(|| bad(rt))?;
    let fail = |why: String| failed(op, lt, rt, &why);
    match ty {
        T::Float | T::Double => {
            let (x, y) = (as_f64(&a), as_f64(&b));
            Ok(if *ty == T::Float {
                float_op(op, x as f32, y as f32).to_be_bytes().to_vec()
            } else {
                float_op(op, x, y).to_be_bytes().to_vec()
            })
        }
        T::Decimal => {
            let (x, y) = (as_dec(a).map_err(fail)?, as_dec(b).map_err(fail)?);
            let v = match op {
                ArithOp::Add => x.add(&y),
                ArithOp::Sub => x.add(&y.neg()),
                ArithOp::Mul => x.mul(&y),
                ArithOp::Div => x.div(&y),
                ArithOp::Rem => x.rem(&y),
            };
            Ok(v.map_err(fail)?.encode())
        }
        T::Varint => {
            let (x, y) = (as_big(a), as_big(b));
            let zero = y.sign() == Sign::NoSign;
            let v = match op {
                ArithOp::Add => x + y,
                ArithOp::Sub => x - y,
                ArithOp::Mul => x * y,
                ArithOp::Div | ArithOp::Rem if zero => {
                    return Err(failed(op, lt, rt, "BigInteger divide by zero"));
                }
                ArithOp::Div => x / y,
                ArithOp::Rem => x % y,
            };
            Ok(v.to_signed_bytes_be())
        }
        _ => {
            let (Num::I(x), Num::I(y)) = (a, b) else {
                return Err(bad(ty));
            };
            let v = match op {
                ArithOp::Add => x + y,
                ArithOp::Sub => x - y,
                ArithOp::Mul => x.wrapping_mul(y),
                ArithOp::Div | ArithOp::Rem if y == 0 => {
                    return Err(failed(op, lt, rt, "/ by zero"));
                }
                ArithOp::Div => x / y,
                ArithOp::Rem => x % y,
            };
            Ok(fixed(ty, v))
        }
    }
}

/// IEEE arithmetic in the result's width (Java's float and double operators).
fn float_op<F>(op: ArithOp, x: F, y: F) -> F
where
    F: std::ops::Add<Output = F>
        + std::ops::Sub<Output = F>
        + std::ops::Mul<Output = F>
        + std::ops::Div<Output = F>
        + std::ops::Rem<Output = F>,
{
    match op {
        ArithOp::Add => x + y,
        ArithOp::Sub => x - y,
        ArithOp::Mul => x * y,
        ArithOp::Div => x / y,
        ArithOp::Rem => x % y,
    }
}

/// Orders two decimals by value (`BigDecimal.compareTo`: 1.0 equals 1.00).
pub(crate) fn compare_decimal(a: &[u8], b: &[u8]) -> Option<std::cmp::Ordering> {
    Some(Dec::decode(a)?.cmp_value(&Dec::decode(b)?))
}

/// Unary minus of a non-null number (Java's negation: the minimum value stays itself).
pub fn negate(t: &T, v: &[u8]) -> Result<Vec<u8>, EngineError> {
    Ok(match decode(t, v).ok_or_else(|| bad(t))? {
        Num::I(i) => fixed(t, -i),
        Num::F(f) => float(t, -f),
        Num::V(v) => (-v).to_signed_bytes_be(),
        Num::D(d) => d.neg().encode(),
    })
}

/// `timestamp ± duration` and `date ± duration` (`Duration.addTo` / `substractFrom`).
fn temporal(op: ArithOp, lt: &T, l: &[u8], rt: &T, r: &[u8]) -> Result<Vec<u8>, EngineError> {
    let (months, days, nanos) = duration_of(r).map_err(EngineError::invalid)?;
    let sign: i64 = if op == ArithOp::Sub { -1 } else { 1 };
    let add = |ms: i64| -> i64 {
        let ms = if months != 0 {
            add_months(ms, sign * i64::from(months))
        } else {
            ms
        };
        ms + sign * (i64::from(days) * MILLIS_PER_DAY + nanos / 1_000_000)
    };
    match lt {
        T::Timestamp => {
            let ms = i64::from_be_bytes(l.try_into().map_err(|_| bad(lt))?);
            Ok(add(ms).to_be_bytes().to_vec())
        }
        _ => {
            if nanos != 0 {
                return Err(failed(
                    op,
                    lt,
                    rt,
                    &format!(
                        "The duration must have a day precision. Was: {}",
                        format_duration(months, days, nanos)
                    ),
                ));
            }
            let d = u32::from_be_bytes(l.try_into().map_err(|_| bad(lt))?);
            let ms = (i64::from(d) - DATE_EPOCH) * MILLIS_PER_DAY;
            let days = add(ms).div_euclid(MILLIS_PER_DAY);
            Ok(((days + DATE_EPOCH) as u32).to_be_bytes().to_vec())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(v: i32) -> Vec<u8> {
        v.to_be_bytes().to_vec()
    }

    #[test]
    fn result_types_follow_cassandra() {
        // Observed on Cassandra 5.0.9: ti + si is smallint, f + bi double, i + vi varint,
        // vi + de decimal, f + 1 float.
        assert_eq!(
            result_type(ArithOp::Add, &T::Tinyint, &T::Smallint),
            Some(T::Smallint)
        );
        assert_eq!(
            result_type(ArithOp::Add, &T::Float, &T::Bigint),
            Some(T::Double)
        );
        assert_eq!(
            result_type(ArithOp::Add, &T::Int, &T::Varint),
            Some(T::Varint)
        );
        assert_eq!(
            result_type(ArithOp::Add, &T::Varint, &T::Decimal),
            Some(T::Decimal)
        );
        assert_eq!(
            result_type(ArithOp::Mul, &T::Float, &T::Int),
            Some(T::Float)
        );
        assert_eq!(
            result_type(ArithOp::Add, &T::Ascii, &T::Ascii),
            Some(T::Ascii)
        );
        assert_eq!(result_type(ArithOp::Add, &T::Varchar, &T::Int), None);
        assert_eq!(result_type(ArithOp::Mul, &T::Timestamp, &T::Duration), None);
    }

    #[test]
    fn integers_wrap_and_division_by_zero_fails() {
        let v = apply(
            ArithOp::Add,
            &T::Int,
            &int(i32::MAX),
            &T::Int,
            &int(1),
            &T::Int,
        )
        .unwrap();
        assert_eq!(v, int(i32::MIN));
        let e = apply(ArithOp::Div, &T::Int, &int(1), &T::Int, &int(0), &T::Int).unwrap_err();
        assert_eq!(e.to_string(), "the operation 'int / int' failed: / by zero");
        let v = apply(ArithOp::Rem, &T::Int, &int(-7), &T::Int, &int(3), &T::Int).unwrap();
        assert_eq!(v, int(-1));
        assert_eq!(negate(&T::Int, &int(i32::MIN)).unwrap(), int(i32::MIN));
    }

    #[test]
    fn floats_divide_to_infinity_and_decimals_add_exactly() {
        let v = apply(
            ArithOp::Div,
            &T::Double,
            &1.5f64.to_be_bytes(),
            &T::Int,
            &int(0),
            &T::Double,
        )
        .unwrap();
        assert_eq!(f64::from_be_bytes(v.try_into().unwrap()), f64::INFINITY);
        // 1.25 + 1 = 2.25 (scale 2)
        let de = [0, 0, 0, 2, 125];
        let v = apply(
            ArithOp::Add,
            &T::Decimal,
            &de,
            &T::Int,
            &int(1),
            &T::Decimal,
        )
        .unwrap();
        assert_eq!(v, vec![0, 0, 0, 2, 0, 225]);
    }

    fn varint(s: &str) -> Vec<u8> {
        s.parse::<BigInt>().unwrap().to_signed_bytes_be()
    }

    fn decimal(s: &str) -> Vec<u8> {
        crate::bigdec::dec(s).encode()
    }

    // Expected values are Cassandra 5.0.9's answers.
    #[test]
    fn varints_grow_past_128_bits() {
        let x = varint("99999999999999999999999");
        let v = apply(ArithOp::Mul, &T::Varint, &x, &T::Varint, &x, &T::Varint).unwrap();
        assert_eq!(v, varint("9999999999999999999999800000000000000000000001"));
        let v = apply(ArithOp::Rem, &T::Varint, &x, &T::Int, &int(-7), &T::Varint).unwrap();
        assert_eq!(v, varint("4"));
        let e = apply(ArithOp::Div, &T::Varint, &x, &T::Int, &int(0), &T::Varint).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the operation 'varint / int' failed: BigInteger divide by zero"
        );
        let max = varint("340282366920938463463374607431768211455");
        assert_eq!(
            negate(&T::Varint, &max).unwrap(),
            varint("-340282366920938463463374607431768211455")
        );
    }

    #[test]
    fn other_numbers_enter_decimals_through_their_double() {
        let op = |op, lt: &T, l: &[u8], r: &str| {
            apply(op, lt, l, &T::Decimal, &decimal(r), &T::Decimal).unwrap()
        };
        assert_eq!(op(ArithOp::Mul, &T::Int, &int(3), "1.5"), decimal("4.50"));
        let big = 123456789012345678i64.to_be_bytes();
        assert_eq!(
            op(ArithOp::Mul, &T::Bigint, &big, "1.5"),
            decimal("185185183518518520")
        );
        assert_eq!(
            op(ArithOp::Add, &T::Double, &0.1f64.to_be_bytes(), "1.25"),
            decimal("1.35")
        );
        let e = apply(
            ArithOp::Add,
            &T::Decimal,
            &decimal("1.5"),
            &T::Double,
            &f64::NAN.to_be_bytes(),
            &T::Decimal,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "the operation 'decimal + double' failed: A NaN cannot be converted into a decimal"
        );
    }

    #[test]
    fn sums_and_averages_as_cassandras_aggregates() {
        let vi = "340282366920938463463374607431768211455";
        let mut sum = Sum::new(&T::Varint);
        let mut mean = Mean::new(&T::Varint);
        for v in [vi, vi, "340282366920938463463374607431768211456"] {
            sum.add(&T::Varint, &varint(v)).unwrap();
            mean.add(&T::Varint, &varint(v)).unwrap();
        }
        assert_eq!(
            sum.result(&T::Varint),
            varint("1020847100762815390390123822295304634366")
        );
        assert_eq!(mean.result(&T::Varint).unwrap(), varint(vi));
        // The double sum overflows: the average is taken over a BigDecimal sum.
        let mut mean = Mean::new(&T::Double);
        for v in [1.5, -1e308, -1e308] {
            mean.add(&T::Double, &f64::to_be_bytes(v)).unwrap();
        }
        assert_eq!(mean.result(&T::Double).unwrap(), (-7e307f64).to_be_bytes());
        // Kahan's sum ends with sum + compensation.
        let mut sum = Sum::new(&T::Double);
        for v in [0.1, 0.3] {
            sum.add(&T::Double, &f64::to_be_bytes(v)).unwrap();
        }
        assert_eq!(sum.result(&T::Double), 0.4000000000000001f64.to_be_bytes());
        let mut mean = Mean::new(&T::Decimal);
        assert_eq!(mean.result(&T::Decimal).unwrap(), decimal("0"));
        for v in ["1.25", "2.5", "0.001"] {
            mean.add(&T::Decimal, &decimal(v)).unwrap();
        }
        assert_eq!(mean.result(&T::Decimal).unwrap(), decimal("1.247"));
    }

    #[test]
    fn durations_move_dates_and_timestamps() {
        // 2020-01-31 + 1mo = 2020-02-29 (the day is clamped, as Calendar does).
        let d = |days: i64| ((days + DATE_EPOCH) as u32).to_be_bytes().to_vec();
        let jan31 = crate::temporal::days_from_civil(2020, 1, 31);
        let feb29 = crate::temporal::days_from_civil(2020, 2, 29);
        let mo = proto::value::to_bytes(&proto::types::Value::Duration {
            months: 1,
            days: 0,
            nanos: 0,
        });
        let v = apply(
            ArithOp::Add,
            &T::Date,
            &d(jan31),
            &T::Duration,
            &mo,
            &T::Date,
        )
        .unwrap();
        assert_eq!(v, d(feb29));
        let h = proto::value::to_bytes(&proto::types::Value::Duration {
            months: 0,
            days: 0,
            nanos: 3_600_000_000_000,
        });
        let e = apply(
            ArithOp::Add,
            &T::Date,
            &d(jan31),
            &T::Duration,
            &h,
            &T::Date,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "the operation 'date + duration' failed: The duration must have a day precision. Was: 1h"
        );
    }
}
