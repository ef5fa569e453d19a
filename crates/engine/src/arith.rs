//! CQL's arithmetic operators (`+ - * / %`, unary minus) over serialized values, as
//! Cassandra 5.0's `OperationFcts` define them: the result type of two numbers is the wider of
//! the two (floating point if either is; `float` op `bigint` is `double`, anything op `varint`
//! or `decimal` is `varint`/`decimal`), integers wrap at their width as Java's do, integer
//! division by zero fails ("/ by zero") while floating point gives Infinity/NaN, a duration can
//! be added to or subtracted from a timestamp or a date, and `+` concatenates text.
//!
//! Not here: typing of literals (the builder decides what an untyped `1` is), constant folding.
//!
//! Varint and decimal are computed in 128 bits (a result beyond that fails rather than being
//! wrong); decimal division and remainder are not implemented yet (see docs/compatibility.md).

use crate::scalar::{duration_of, format_duration};
use crate::temporal::add_months;
use crate::types::cql_type_name;
use crate::EngineError;
use cql::ast::ArithOp;
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
#[derive(Debug, Clone, Copy)]
pub(crate) enum Num {
    I(i128),
    F(f64),
    /// unscaled, scale
    Dec(i128, i32),
}

fn twos(b: &[u8]) -> Option<i128> {
    if b.is_empty() || b.len() > 16 {
        return None;
    }
    let mut v: i128 = if b[0] & 0x80 != 0 { -1 } else { 0 };
    for x in b {
        v = (v << 8) | i128::from(*x);
    }
    Some(v)
}

fn to_twos(v: i128) -> Vec<u8> {
    let bytes = v.to_be_bytes();
    let mut start = 0;
    while start < 15 {
        let (a, b) = (bytes[start], bytes[start + 1]);
        if (a == 0 && b & 0x80 == 0) || (a == 0xFF && b & 0x80 != 0) {
            start += 1;
        } else {
            break;
        }
    }
    bytes[start..].to_vec()
}

/// Compensated (Kahan) summation in double, as Cassandra sums and averages `float` and
/// `double` (0.1 + 0.2 + 0.3 is 0.6 there, not 0.6000000000000001).
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
        let t = self.sum - self.compensation;
        if t.is_nan() && self.simple.is_infinite() {
            self.simple
        } else {
            t
        }
    }
}

/// A serialized number of type `t` (None if `t` is not a number or the bytes are bad).
pub(crate) fn number(t: &T, b: &[u8]) -> Option<Num> {
    decode(t, b)
}

/// `avg` of `n` values of type `ty`: integer types divide their exact sum (truncating, as
/// Java's long division), floating point types their double sum, decimal its sum rounded
/// half-even at the sum's scale. Zero when `n` is 0, as Cassandra answers.
pub(crate) fn average(
    ty: &T,
    n: i64,
    int_sum: i128,
    float_sum: f64,
    dec_sum: Option<&[u8]>,
) -> Vec<u8> {
    let n128 = i128::from(n.max(1));
    match ty {
        T::Tinyint => ((int_sum / n128) as i8).to_be_bytes().to_vec(),
        T::Smallint => ((int_sum / n128) as i16).to_be_bytes().to_vec(),
        T::Int => ((int_sum / n128) as i32).to_be_bytes().to_vec(),
        T::Bigint | T::Counter => ((int_sum / n128) as i64).to_be_bytes().to_vec(),
        T::Varint => to_twos(int_sum / n128),
        T::Float => ((float_sum / n.max(1) as f64) as f32)
            .to_be_bytes()
            .to_vec(),
        T::Double => (float_sum / n.max(1) as f64).to_be_bytes().to_vec(),
        _ => dec_sum.map_or_else(zero_of_decimal, <[u8]>::to_vec),
    }
}

fn zero_of_decimal() -> Vec<u8> {
    vec![0, 0, 0, 0, 0]
}

/// One step of Cassandra's decimal average (a running mean): `avg + (v - avg) / n`, the
/// quotient rounded half-even at the difference's scale. Cassandra 5.0.9 answers 1.87 for
/// the average of 1.25 and 2.5, and so does this.
pub(crate) fn running_mean(avg: &[u8], v: &[u8], n: i64) -> Result<Vec<u8>, EngineError> {
    let (Some(Num::Dec(a, as_)), Some(Num::Dec(x, xs))) =
        (decode(&T::Decimal, avg), decode(&T::Decimal, v))
    else {
        return Err(bad(&T::Decimal));
    };
    let overflow = || EngineError::invalid("decimal average out of range");
    let s = as_.max(xs);
    let (a, x) = (
        rescale(a, as_, s).ok_or_else(overflow)?,
        rescale(x, xs, s).ok_or_else(overflow)?,
    );
    let diff = x.checked_sub(a).ok_or_else(overflow)?;
    let n = i128::from(n.max(1));
    let (q, r) = (diff / n, diff % n);
    let twice = r.abs() * 2;
    let q = if twice > n || (twice == n && q % 2 != 0) {
        q + diff.signum()
    } else {
        q
    };
    let mut out = s.to_be_bytes().to_vec();
    out.extend_from_slice(&to_twos(a.checked_add(q).ok_or_else(overflow)?));
    Ok(out)
}

fn decode(t: &T, b: &[u8]) -> Option<Num> {
    Some(match t {
        T::Tinyint => Num::I(i128::from(i8::from_be_bytes(b.try_into().ok()?))),
        T::Smallint => Num::I(i128::from(i16::from_be_bytes(b.try_into().ok()?))),
        T::Int => Num::I(i128::from(i32::from_be_bytes(b.try_into().ok()?))),
        T::Bigint | T::Counter => Num::I(i128::from(i64::from_be_bytes(b.try_into().ok()?))),
        T::Varint => Num::I(twos(b)?),
        T::Float => Num::F(f64::from(f32::from_be_bytes(b.try_into().ok()?))),
        T::Double => Num::F(f64::from_be_bytes(b.try_into().ok()?)),
        T::Decimal => {
            let scale = i32::from_be_bytes(b.get(..4)?.try_into().ok()?);
            Num::Dec(twos(&b[4..])?, scale)
        }
        _ => return None,
    })
}

/// `BigDecimal.valueOf(double)`: the shortest decimal text of the double.
fn dec_of_f64(f: f64) -> Option<(i128, i32)> {
    if !f.is_finite() {
        return None;
    }
    let s = crate::scalar::java_double(f);
    let (u, scale) = crate::scalar::parse_decimal(&s)?;
    Some((twos(&u.to_twos())?, scale))
}

fn as_dec(n: Num) -> Option<(i128, i32)> {
    match n {
        Num::I(i) => Some((i, 0)),
        Num::F(f) => dec_of_f64(f),
        Num::Dec(u, s) => Some((u, s)),
    }
}

fn as_f64(n: Num) -> f64 {
    match n {
        Num::I(i) => i as f64,
        Num::F(f) => f,
        Num::Dec(u, s) => u as f64 / 10f64.powi(s),
    }
}

fn rescale(u: i128, from: i32, to: i32) -> Option<i128> {
    let d = u32::try_from(to.checked_sub(from)?).ok()?;
    u.checked_mul(10i128.checked_pow(d)?)
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
    let overflow = || failed(op, lt, rt, "result out of range");
    match ty {
        T::Float | T::Double => {
            let (x, y) = (as_f64(a), as_f64(b));
            Ok(if *ty == T::Float {
                float_op(op, x as f32, y as f32).to_be_bytes().to_vec()
            } else {
                float_op(op, x, y).to_be_bytes().to_vec()
            })
        }
        T::Decimal => {
            let (x, xs) = as_dec(a).ok_or_else(overflow)?;
            let (y, ys) = as_dec(b).ok_or_else(overflow)?;
            let (u, s) = match op {
                ArithOp::Add | ArithOp::Sub => {
                    let s = xs.max(ys);
                    let (x, y) = (
                        rescale(x, xs, s).ok_or_else(overflow)?,
                        rescale(y, ys, s).ok_or_else(overflow)?,
                    );
                    let v = if op == ArithOp::Add {
                        x.checked_add(y)
                    } else {
                        x.checked_sub(y)
                    };
                    (v.ok_or_else(overflow)?, s)
                }
                ArithOp::Mul => (
                    x.checked_mul(y).ok_or_else(overflow)?,
                    xs.checked_add(ys).ok_or_else(overflow)?,
                ),
                ArithOp::Div | ArithOp::Rem if y == 0 => {
                    return Err(failed(op, lt, rt, "BigInteger divide by zero"));
                }
                ArithOp::Rem => {
                    // BigDecimal.remainder: the sign of the dividend, the larger scale.
                    let s = xs.max(ys);
                    let (x, y) = (
                        rescale(x, xs, s).ok_or_else(overflow)?,
                        rescale(y, ys, s).ok_or_else(overflow)?,
                    );
                    (x % y, s)
                }
                ArithOp::Div => decimal_div(x, xs, y, ys).ok_or_else(overflow)?,
            };
            let mut out = s.to_be_bytes().to_vec();
            out.extend_from_slice(&to_twos(u));
            Ok(out)
        }
        _ => {
            let (Num::I(x), Num::I(y)) = (a, b) else {
                return Err(bad(ty));
            };
            let zero = || {
                let why = if *lt == T::Varint || *rt == T::Varint {
                    "BigInteger divide by zero"
                } else {
                    "/ by zero"
                };
                failed(op, lt, rt, why)
            };
            let v = match op {
                ArithOp::Add => x.checked_add(y),
                ArithOp::Sub => x.checked_sub(y),
                ArithOp::Mul => x.checked_mul(y),
                ArithOp::Div if y == 0 => return Err(zero()),
                ArithOp::Rem if y == 0 => return Err(zero()),
                ArithOp::Div => x.checked_div(y),
                ArithOp::Rem => x.checked_rem(y),
            };
            let v = v.ok_or_else(overflow)?;
            Ok(match ty {
                T::Tinyint => (v as i8).to_be_bytes().to_vec(),
                T::Smallint => (v as i16).to_be_bytes().to_vec(),
                T::Int => (v as i32).to_be_bytes().to_vec(),
                T::Bigint | T::Counter => (v as i64).to_be_bytes().to_vec(),
                _ => to_twos(v),
            })
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

fn digits(v: i128) -> u32 {
    let mut v = v.unsigned_abs();
    let mut n = 1;
    while v >= 10 {
        v /= 10;
        n += 1;
    }
    n
}

/// `BigDecimal.divide(divisor, MathContext.DECIMAL128)`: the quotient rounded half-even to
/// 34 significant digits, trailing zeros dropped down to the preferred scale
/// (dividend scale - divisor scale).
fn decimal_div(x: i128, xs: i32, y: i128, ys: i32) -> Option<(i128, i32)> {
    const PRECISION: i32 = 34;
    let preferred = xs.checked_sub(ys)?;
    if x == 0 {
        return Some((0, preferred));
    }
    // Scale the dividend so the integer quotient has at least 34 digits (as far as 128 bits
    // allow), divide, and round the rest half-even.
    let extra = (PRECISION - digits(x) as i32 + digits(y) as i32 + 1).max(0);
    let mut k = extra;
    let mut xx = x;
    while k > 0 {
        match xx.checked_mul(10) {
            Some(v) => {
                xx = v;
                k -= 1;
            }
            None => break,
        }
    }
    let used = extra - k;
    let (mut q, r) = (xx / y, xx % y);
    let mut scale = preferred + used;
    let exact = r == 0;
    if !exact {
        let twice = r.checked_abs()?.checked_mul(2)?;
        let ya = y.checked_abs()?;
        let away = twice > ya || (twice == ya && q % 2 != 0);
        if away {
            q += if (x < 0) != (y < 0) { -1 } else { 1 };
        }
    }
    // Round to 34 significant digits.
    while digits(q) as i32 > PRECISION {
        let (d, m) = (q / 10, q % 10);
        q = d;
        if m.abs() > 5 || (m.abs() == 5 && q % 2 != 0) {
            q += q.signum().max(if m < 0 { -1 } else { 1 });
        }
        scale -= 1;
    }
    if exact || q % 10 == 0 {
        while scale > preferred && q % 10 == 0 {
            q /= 10;
            scale -= 1;
        }
    }
    Some((q, scale))
}

/// Orders two decimals by value (`BigDecimal.compareTo`: 1.0 equals 1.00).
pub(crate) fn compare_decimal(a: &[u8], b: &[u8]) -> Option<std::cmp::Ordering> {
    let (Num::Dec(x, xs), Num::Dec(y, ys)) = (decode(&T::Decimal, a)?, decode(&T::Decimal, b)?)
    else {
        return None;
    };
    let s = xs.max(ys);
    match (rescale(x, xs, s), rescale(y, ys, s)) {
        (Some(x), Some(y)) => Some(x.cmp(&y)),
        _ => as_f64(Num::Dec(x, xs)).partial_cmp(&as_f64(Num::Dec(y, ys))),
    }
}

/// Unary minus of a non-null number (Java's negation: the minimum value stays itself).
pub fn negate(t: &T, v: &[u8]) -> Result<Vec<u8>, EngineError> {
    let n = decode(t, v).ok_or_else(|| bad(t))?;
    Ok(match (t, n) {
        (T::Tinyint, Num::I(i)) => (i as i8).wrapping_neg().to_be_bytes().to_vec(),
        (T::Smallint, Num::I(i)) => (i as i16).wrapping_neg().to_be_bytes().to_vec(),
        (T::Int, Num::I(i)) => (i as i32).wrapping_neg().to_be_bytes().to_vec(),
        (T::Bigint | T::Counter, Num::I(i)) => (i as i64).wrapping_neg().to_be_bytes().to_vec(),
        (T::Varint, Num::I(i)) => to_twos(-i),
        (T::Float, Num::F(f)) => (-(f as f32)).to_be_bytes().to_vec(),
        (T::Double, Num::F(f)) => (-f).to_be_bytes().to_vec(),
        (T::Decimal, Num::Dec(u, s)) => {
            let mut out = s.to_be_bytes().to_vec();
            out.extend_from_slice(&to_twos(-u));
            out
        }
        _ => return Err(bad(t)),
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
