//! The 5.0 math functions (`MathFcts`: `abs`, `exp`, `log`, `log10`, `round`) over every number
//! type, with Java's rounding and narrowing; exp and log of decimal and varint are `decmath`'s.

use proto::types::ColumnType;

use super::ScalarError;
use crate::bigint::BigInt;
use crate::num::{encode_decimal, Num};

/// Java's `Math.round(double)`: floor(x + 0.5) without the double rounding of `x + 0.5`.
fn java_round(x: f64) -> i64 {
    if x.is_nan() {
        return 0;
    }
    let f = x.floor();
    let r = if x - f >= 0.5 { f + 1.0 } else { f };
    r as i64
}

/// The 5.0 math functions (`MathFcts`): the result has the argument's type; integer types
/// compute in double and narrow like Java's casts.
pub(super) fn math(f: &str, ty: &ColumnType, b: &[u8]) -> Result<Vec<u8>, ScalarError> {
    use ColumnType as T;
    let n = Num::decode(ty, b)?;
    let dbl = |x: f64| -> f64 {
        match f {
            "exp" => x.exp(),
            "log" => x.ln(),
            _ => x.log10(),
        }
    };
    Ok(match (&n, f) {
        (Num::I(i), "abs") => Num::I(i.wrapping_abs()).convert(ty)?,
        (Num::I(_), "round") => b.to_vec(),
        (Num::I(i), _) => {
            let r = dbl(*i as f64);
            match ty {
                T::Tinyint => vec![(r as i32) as i8 as u8],
                T::Smallint => ((r as i32) as i16).to_be_bytes().to_vec(),
                T::Int => (r as i32).to_be_bytes().to_vec(),
                _ => (r as i64).to_be_bytes().to_vec(),
            }
        }
        (Num::F32(x), _) => {
            let r = match f {
                "abs" => x.abs(),
                // Math.round(float) returns an int.
                "round" => {
                    if x.is_nan() {
                        0.0
                    } else {
                        (f64::from(*x) + 0.5).floor() as i32 as f32
                    }
                }
                _ => dbl(f64::from(*x)) as f32,
            };
            r.to_be_bytes().to_vec()
        }
        (Num::F64(x), _) => {
            let r = match f {
                "abs" => x.abs(),
                "round" => java_round(*x) as f64,
                _ => dbl(*x),
            };
            r.to_be_bytes().to_vec()
        }
        (Num::Var(v), "abs") => v.abs().to_twos(),
        (Num::Var(_), "round") => b.to_vec(),
        (Num::Var(v), _) => {
            let x = num_bigint::BigInt::from_signed_bytes_be(&v.to_twos());
            crate::decmath::varint(f, &x)?.to_signed_bytes_be()
        }
        (Num::Dec { unscaled, scale }, "abs") => encode_decimal(&unscaled.abs(), *scale),
        (Num::Dec { unscaled, scale }, "round") => {
            let (u, s) = round_half_up(unscaled, *scale);
            encode_decimal(&u, s)
        }
        (Num::Dec { .. }, _) => {
            let x = crate::decmath::Dec::decode(b).ok_or("Invalid decimal value")?;
            crate::decmath::decimal(f, &x)?.encode()
        }
    })
}

/// `BigDecimal.setScale(0, HALF_UP)`.
fn round_half_up(u: &BigInt, scale: i32) -> (BigInt, i32) {
    if scale <= 0 {
        let mut m = u.clone();
        for _ in 0..(-(scale as i64)).min(4096) {
            m = m.mul_small(10, 0);
        }
        return (m, 0);
    }
    let mut q = BigInt {
        neg: false,
        mag: u.mag.clone(),
    };
    // HALF_UP looks only at the first discarded digit (the last one divided off).
    let mut last = 0u32;
    for i in 0..scale {
        let (nq, r) = q.divrem_small(10);
        q = nq;
        if i == scale - 1 {
            last = r;
        } else if q.is_zero() {
            // The remaining (leading) fractional digits are zeros.
            break;
        }
    }
    if last >= 5 {
        q = q.mul_small(1, 1);
    }
    q.neg = u.neg && !q.is_zero();
    (q, 0)
}
