//! `exp`, `log` and `log10` of `decimal` and `varint` values as Cassandra 5.0 computes them:
//! in BigDecimal arithmetic with as many significant digits as the argument has, and at least
//! 32. Facts taken from Cassandra 5.0.9's answers (`tests/differential/scenarios/44_decimal_math.cql`):
//!
//! - `exp(x)` and `log(x)` are the exact value rounded (half up) to `P = max(32, precision(x))`
//!   digits; `exp(0)` is `1` and `log(1)` is `0`, both with scale 0.
//! - `exp(x)` with an integral part beyond a Java `int` fails with `ArithmeticException:
//!   Overflow` (for negative `x` too: Cassandra takes the reciprocal of `exp(-x)`).
//! - `log10(x)` is `log(x)` at `P + 2` digits divided by `ln 10` at `P + 2` digits
//!   (BigDecimal's division: an exact quotient keeps the scale closest to the preferred one,
//!   hence `log10(100)` = `2`, `log10(1E+10)` = `1E+1`, `log10(1)` = `0E+33`, but
//!   `log10(1000)` = `3.0000000000000000000000000000000`), then rounded to `P` digits.
//! - A varint is computed as the decimal of scale 0 and truncated to an integer.
//!
//! Numbers are fixed point: a `BigInt` holding the value times `10^w`, with `w` chosen so the
//! result has 20 digits more than it keeps; `ln` uses `atanh` series after reducing the
//! argument by powers of ten and two, `exp` a Taylor series after taking out powers of ten.

pub(crate) use crate::bigdec::Dec;
use crate::bigdec::{digits, ten_pow};
use crate::scalar::ScalarError;
use num_bigint::{BigInt, Sign};
use std::cmp::Ordering;

/// Digits the result carries beyond what it keeps, so that rounding sees the true digits.
const GUARD: u32 = 20;

/// Cassandra's smallest precision for these functions.
const MIN_DIGITS: u32 = 32;

/// Arguments with more significant digits are refused: the work grows with the square of the
/// digits (Cassandra computes them, slowly; a bound keeps one request from taking a core).
const MAX_DIGITS: u32 = 1000;

/// A varint answer (`exp` of a varint) with more digits is refused rather than written out:
/// `exp(2147483647)` has 932 million digits (Cassandra starts writing them and runs out of heap).
const MAX_VARINT_DIGITS: u32 = 100_000;

fn overflow() -> ScalarError {
    ScalarError::Arithmetic("java.lang.ArithmeticException: Overflow".into())
}

impl Dec {
    fn is_one(&self) -> bool {
        self.scale >= 0
            && i64::from(self.precision()) == i64::from(self.scale) + 1
            && self.unscaled == ten_pow(self.scale as u32)
    }

    /// The value times `10^w`, truncated toward zero.
    fn fixed(&self, w: u32) -> BigInt {
        let shift = i64::from(w) + i64::from(-self.scale);
        if shift >= 0 {
            &self.unscaled * ten_pow(shift as u32)
        } else if -shift > i64::from(self.precision()) {
            BigInt::from(0)
        } else {
            &self.unscaled / ten_pow((-shift) as u32)
        }
    }
}

/// `v` (the value times `10^w`) rounded half up to `p` significant digits, as
/// `BigDecimal.round(new MathContext(p))`.
fn round_fixed(v: &BigInt, w: u32, p: u32) -> Dec {
    Dec {
        unscaled: v.clone(),
        scale: w as i32,
    }
    .round(p)
}

/// `atanh(z)` for a fixed-point `z` (|z| < 1/2) at `w` digits: z + z^3/3 + z^5/5 + ...
fn atanh(z: &BigInt, one: &BigInt) -> BigInt {
    let z2 = z * z / one;
    let mut power = z.clone();
    let mut sum = z.clone();
    let mut k = 1u32;
    loop {
        power = &power * &z2 / one;
        k += 2;
        let term = &power / k;
        if term.sign() == Sign::NoSign {
            return sum;
        }
        sum += term;
    }
}

/// `ln 2` and `ln 10` at `w` digits.
fn ln2_ln10(w: u32) -> (BigInt, BigInt) {
    let one = ten_pow(w);
    let ln2 = atanh(&(&one / 3), &one) * 2;
    // ln 10 = 3 ln 2 + ln(5/4), and ln(5/4) = 2 atanh(1/9).
    let ln10 = &ln2 * 3 + atanh(&(&one / 9), &one) * 2;
    (ln2, ln10)
}

/// `ln(x)` for `x > 0`, times `10^w` (within a few units).
fn ln_fixed(x: &Dec, w: u32) -> BigInt {
    let wg = w + 10;
    let one = ten_pow(wg);
    let (ln2, ln10) = ln2_ln10(wg);
    // x = m * 10^e with 1 <= m < 10.
    let n = x.precision();
    let e = i64::from(n) - 1 - i64::from(x.scale);
    let m = Dec {
        unscaled: x.unscaled.clone(),
        scale: (n - 1) as i32,
    }
    .fixed(wg);
    // m / 2^j within [0.75, 1.5): atanh's argument is then at most 1/5.
    let mf = m
        .to_string()
        .get(..18)
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(1e17)
        / 1e17;
    let j = mf.log2().round().max(0.0) as u32;
    let reduced = &m >> j;
    let z = (&reduced - &one) * &one / (&reduced + &one);
    let sum = atanh(&z, &one) * 2 + &ln2 * j + &ln10 * e;
    sum / ten_pow(10)
}

/// `ln(x)` rounded to `p` digits (x > 0, x != 1).
fn ln_rounded(x: &Dec, p: u32) -> Dec {
    // |ln x| may be far below 1 (x close to 1): widen until the result has its digits. It is
    // at least about 10^-(scale + 1), so this ends.
    let mut w = p + GUARD;
    loop {
        let v = ln_fixed(x, w);
        if digits(&v) >= p + GUARD || w > p + GUARD + x.scale.max(0) as u32 + 10 {
            return round_fixed(&v, w, p);
        }
        w += p + GUARD - digits(&v) + 1;
    }
}

fn ln10_rounded(p: u32) -> Dec {
    let w = p + GUARD;
    round_fixed(&ln2_ln10(w).1, w, p)
}

/// Java's `BigDecimal.divide(divisor, new MathContext(p))` for a non-zero divisor.
fn java_divide(a: &Dec, b: &Dec, p: u32) -> Dec {
    let preferred = i64::from(a.scale) - i64::from(b.scale);
    if a.unscaled.sign() == Sign::NoSign {
        return Dec::zero(preferred.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32);
    }
    // a/b = (ua / ub) * 10^-(preferred); find t so that |ua| * 10^t / |ub| has p or p+1 digits.
    let (ua, ub) = (a.unscaled.magnitude(), b.unscaled.magnitude());
    let mut t = i64::from(p) + i64::from(digits(&BigInt::from(ub.clone())))
        - i64::from(digits(&BigInt::from(ua.clone())));
    let quotient = |t: i64| {
        if t >= 0 {
            let num = ua * ten_pow(t as u32).magnitude();
            (&num / ub, &num % ub, ub.clone())
        } else {
            let den = ub * ten_pow((-t) as u32).magnitude();
            (ua / &den, ua % &den, den)
        }
    };
    let (mut q, mut r, mut den) = quotient(t);
    if digits(&BigInt::from(q.clone())) > p {
        t -= 1;
        (q, r, den) = quotient(t);
    } else if digits(&BigInt::from(q.clone())) < p {
        t += 1;
        (q, r, den) = quotient(t);
    }
    let exact = r.bits() == 0;
    if r * 2u32 >= den {
        q += 1u32;
    }
    let sign = if a.unscaled.sign() == b.unscaled.sign() {
        Sign::Plus
    } else {
        Sign::Minus
    };
    let mut scale = preferred + t;
    let mut q = BigInt::from_biguint(sign, q);
    if digits(&q) > p {
        q /= 10;
        scale -= 1;
    }
    if exact {
        // An exact quotient drops trailing zeros down to the preferred scale.
        while scale > preferred && (&q % 10u32).sign() == Sign::NoSign {
            q /= 10;
            scale -= 1;
        }
    }
    Dec {
        unscaled: q,
        scale: scale as i32,
    }
}

/// Cassandra's `exp`, `log` or `log10` of a decimal.
pub(crate) fn decimal(f: &str, x: &Dec) -> Result<Dec, ScalarError> {
    let p = x.precision().max(MIN_DIGITS);
    if p > MAX_DIGITS {
        return Err(ScalarError::NotComputed(format!(
            "{f}() of a number of more than {MAX_DIGITS} significant digits is not computed"
        )));
    }
    match f {
        "exp" => exp(x, p),
        "log" => {
            if x.unscaled.sign() != Sign::Plus {
                return Err(ScalarError::Arithmetic(
                    "java.lang.ArithmeticException: Natural log of number zero or less".into(),
                ));
            }
            if x.is_one() {
                return Ok(Dec::zero(0));
            }
            Ok(ln_rounded(x, p))
        }
        _ => {
            if x.unscaled.sign() != Sign::Plus {
                return Err(ScalarError::Arithmetic(
                    "java.lang.ArithmeticException: Log10 of number zero or less".into(),
                ));
            }
            let ln = if x.is_one() {
                Dec::zero(0)
            } else {
                ln_rounded(x, p + 2)
            };
            Ok(java_divide(&ln, &ln10_rounded(p + 2), p + 2).round(p))
        }
    }
}

fn exp(x: &Dec, p: u32) -> Result<Dec, ScalarError> {
    if x.unscaled.sign() == Sign::NoSign {
        return Ok(Dec {
            unscaled: BigInt::from(1),
            scale: 0,
        });
    }
    // |x| >= 10^10 is past an int without writing out its integral part (which can have
    // billions of digits: 1E+2000000000).
    if x.adjusted_exponent() >= 10 {
        return Err(overflow());
    }
    let integral = x.fixed(0);
    if integral.magnitude().bits() > 31 {
        return Err(overflow());
    }
    let w = p + GUARD + digits(&integral);
    let one = ten_pow(w);
    let ln10 = ln2_ln10(w).1;
    let v = x.fixed(w);
    // v = k ln 10 + r with 0 <= r < ln 10: exp(x) = exp(r) * 10^k.
    let mut k = &v / &ln10;
    if v.sign() == Sign::Minus && &k * &ln10 != v {
        k -= 1;
    }
    let r = &v - &k * &ln10;
    let mut term = one.clone();
    let mut sum = one.clone();
    let mut n = 1u32;
    loop {
        term = &term * &r / &one / n;
        if term.sign() == Sign::NoSign {
            break;
        }
        sum += &term;
        n += 1;
    }
    let d = round_fixed(&sum, w, p);
    let k = i64::try_from(k).map_err(|_| overflow())?;
    let scale = i64::from(d.scale) - k;
    let scale = i32::try_from(scale).map_err(|_| overflow())?;
    Ok(Dec {
        unscaled: d.unscaled,
        scale,
    })
}

/// Cassandra's `exp`, `log` or `log10` of a varint: the decimal result, truncated.
pub(crate) fn varint(f: &str, x: &BigInt) -> Result<BigInt, ScalarError> {
    let d = decimal(
        f,
        &Dec {
            unscaled: x.clone(),
            scale: 0,
        },
    )?;
    if i64::from(d.precision()) - i64::from(d.scale) > i64::from(MAX_VARINT_DIGITS) {
        return Err(ScalarError::NotComputed(format!(
            "{f}() of a varint with more than {MAX_VARINT_DIGITS} digits is not computed"
        )));
    }
    if d.adjusted_exponent() < 0 {
        // Below one in magnitude (exp(-841431290) has scale 365 million): truncated to zero.
        return Ok(BigInt::from(0));
    }
    Ok(match d.scale.cmp(&0) {
        Ordering::Greater => d.unscaled / ten_pow(d.scale as u32),
        Ordering::Equal => d.unscaled,
        Ordering::Less => d.unscaled * ten_pow(d.scale.unsigned_abs()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bigdec::dec;

    /// Java's `BigDecimal.toString` is not needed: compare unscaled and scale.
    fn check(f: &str, x: &str, unscaled: &str, scale: i32) {
        let d = decimal(f, &dec(x)).unwrap();
        assert_eq!(
            (d.unscaled.to_string(), d.scale),
            (unscaled.to_string(), scale),
            "{f}({x})"
        );
    }

    // Expected values are Cassandra 5.0.9's answers.
    #[test]
    fn exp_as_cassandra() {
        check("exp", "-12.345", "43514562446553278160747260872126", 37);
        check("exp", "2.5", "12182493960703473438070175951168", 30);
        check("exp", "100", "26881171418161354484126255515800", -12);
        check("exp", "-1000", "50759588975494567652918094795743", 466);
        check("exp", "1E-50", "10000000000000000000000000000000", 31);
        check("exp", "0.00", "1", 0);
        check(
            "exp",
            "1.000000000000000000000000000000000000001",
            "2718281828459045235360287471352662497760",
            39,
        );
        check(
            "exp",
            "123456789",
            "16451067310176607746541429329468",
            -53616571,
        );
        assert_eq!(
            decimal("exp", &dec("4.9E+9")).unwrap_err().to_string(),
            "java.lang.ArithmeticException: Overflow"
        );
        assert!(decimal("exp", &dec("-4.9E+9")).is_err());
    }

    #[test]
    fn log_as_cassandra() {
        check("log", "2.5", "91629073187415506518352721176801", 32);
        check("log", "1E-50", "-11512925464970228420089957273422", 29);
        check("log", "1.0", "0", 0);
        check(
            "log",
            "0.9999999999999999999999999999999999999",
            "-1000000000000000000000000000000000000",
            73,
        );
        check(
            "log",
            "99999999999999999999999999999999999999",
            "87498233533773735992683675278005839889",
            36,
        );
        assert_eq!(
            decimal("log", &dec("0")).unwrap_err(),
            ScalarError::Arithmetic(
                "java.lang.ArithmeticException: Natural log of number zero or less".into()
            )
        );
    }

    #[test]
    fn log10_as_cassandra() {
        check("log10", "100", "2", 0);
        check("log10", "1E+10", "1", -1);
        check("log10", "1", "0", -33);
        check("log10", "1000", "30000000000000000000000000000000", 31);
        check("log10", "100000", "5", 0);
        check("log10", "0.000001", "-60000000000000000000000000000000", 31);
        check("log10", "1E-50", "-5", -1);
        check("log10", "0.1", "-1", 0);
        check("log10", "2.5", "39794000867203760957252221055101", 32);
        check(
            "log10",
            "99999999999999999999999999999999999999",
            "38000000000000000000000000000000000000",
            36,
        );
    }

    #[test]
    fn varint_truncates() {
        let v = |s: &str| s.parse::<BigInt>().unwrap();
        assert_eq!(
            varint("exp", &v("100")).unwrap(),
            v("26881171418161354484126255515800000000000000")
        );
        assert_eq!(varint("exp", &v("-5")).unwrap(), v("0"));
        assert_eq!(varint("log", &v("1000")).unwrap(), v("6"));
        assert_eq!(varint("log10", &v("1000")).unwrap(), v("3"));
        assert_eq!(
            varint("log10", &v("123456789012345678901234567890")).unwrap(),
            v("29")
        );
        // exp(100000) = 2.80666...E+43429: 43,430 digits written out; exp(123456789) would
        // have 53 million and is refused.
        let big = varint("exp", &v("100000")).unwrap().to_string();
        assert_eq!((big.len(), &big[..8]), (43_430, "28066633"));
        let err = varint("exp", &v("123456789")).unwrap_err();
        assert!(
            matches!(&err, ScalarError::NotComputed(m) if m.contains("more than 100000 digits")),
            "{err}"
        );
        assert_eq!(varint("exp", &v("-841431290")).unwrap(), v("0"));
    }

    /// Exponents at the ends of an int's range answer at once (no ten to the two billion).
    #[test]
    fn extreme_scales_are_cheap() {
        let d = |unscaled: i64, scale: i32| Dec {
            unscaled: BigInt::from(unscaled),
            scale,
        };
        assert_eq!(decimal("exp", &d(5, i32::MIN)).unwrap_err(), overflow());
        let one = decimal("exp", &d(-5, i32::MAX)).unwrap();
        assert_eq!((one.unscaled.to_string().len(), one.scale), (32, 31));
        assert!(decimal("log", &d(5, i32::MIN)).is_ok());
        assert!(decimal("log10", &d(5, i32::MAX)).is_ok());
        assert!(decimal("log", &d(1, i32::MAX)).is_ok());
    }
}
