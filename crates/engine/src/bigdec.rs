//! CQL's `decimal` as Java's `BigDecimal` (an arbitrary-size unscaled integer and an `int`
//! scale) and the arithmetic Cassandra 5.0's `DecimalType` and its aggregates do with it.
//! Facts from Cassandra 5.0.9's answers (`tests/differential/scenarios/59_big_arithmetic.cql`):
//!
//! - `+`, `-` and `*` are exact, rounded half up to 10,000 significant digits
//!   (`MathContext(10000)`); a product whose scale leaves an `int` fails with `Underflow`
//!   (scale too large) or `Overflow` unless its left operand is zero (its scale saturates).
//! - `/` divides to a scale of `32 - (the quotient's leading digit position)`, at least each
//!   operand's scale and 32, at most 1000, rounding half up, then strips trailing zeros:
//!   `1 / 3` is `0.33333333333333333333333333333333`, `100 / 4` is `25`, `0.0 / 3` is `0`.
//! - `%` is `BigDecimal.remainder`: the sign of the dividend, the scale
//!   `max(dividend's, divisor's + the integral quotient's)` (`7 % 0.5` is `0.0`, `100 % 0.01`
//!   is `0`).
//! - A zero divisor fails with Java's message, which depends on how `BigDecimal` holds the
//!   dividend: `BigInteger divide by zero` mostly, `/ by zero` for a dividend that fits a
//!   `long` once scaled to the quotient's scale; `%` says `Division by zero` (`Division
//!   undefined` for `0 % 0`).
//! - `sum` adds exactly; `avg` keeps a running mean, each step's quotient rounded half even at
//!   the difference's scale (the average of 1.25 and 2.5 is 1.87).
//!
//! Not here: `exp`/`log` (decmath.rs), text forms (bigint.rs). Results that would need more
//! than [`MAX_DIGITS`] digits are refused rather than computed (Java computes them, slowly,
//! or runs out of memory).

use num_bigint::{BigInt, BigUint, Sign};
use std::cmp::Ordering;

/// A decimal: `unscaled * 10^-scale`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Dec {
    pub unscaled: BigInt,
    pub scale: i32,
}

/// The precision Cassandra's decimal `+`, `-` and `*` round to.
const OP_DIGITS: u32 = 10_000;

/// Cassandra's decimal division: at least this many significant digits and this scale...
const DIV_MIN_SCALE: i32 = 32;
/// ... and at most this scale.
const DIV_MAX_SCALE: i32 = 1000;

/// The most digits an intermediate or a result may have.
pub(crate) const MAX_DIGITS: u64 = 1_000_000;

/// The largest power of ten a Java `BigInteger` holds (2^31 - 1 bits); a division that would
/// scale an operand by more fails as Java's does.
const MAX_JAVA_POWER: i64 = 646_456_992;

pub(crate) fn ten_pow(n: u32) -> BigInt {
    BigInt::from(10u32).pow(n)
}

/// Decimal digits of `|v|` (1 for zero).
pub(crate) fn digits(v: &BigInt) -> u32 {
    let bits = v.bits();
    if bits <= 64 {
        let m = v.magnitude().iter_u64_digits().next().unwrap_or(0);
        return m.checked_ilog10().unwrap_or(0) + 1;
    }
    // 2^(bits-1) <= |v| < 2^bits: the digits are the estimate or one more.
    let est = ((bits - 1) as f64 * std::f64::consts::LOG10_2).floor() as u32 + 1;
    if *v.magnitude() >= *ten_pow(est).magnitude() {
        est + 1
    } else {
        est
    }
}

pub(crate) fn too_big() -> String {
    format!("a decimal result of more than {MAX_DIGITS} digits is not computed")
}

/// The scale as an `int`, or Java's `ArithmeticException` message for one beyond.
fn int_scale(s: i64) -> Result<i32, String> {
    i32::try_from(s).map_err(|_| if s > 0 { "Underflow" } else { "Overflow" }.to_string())
}

/// `|n| / |d|` rounded half up (`even`: half even), with the sign of `negative`.
fn div_round(n: &BigUint, d: &BigUint, negative: bool, even: bool) -> BigInt {
    let (mut q, r) = (n / d, n % d);
    let twice = r * 2u32;
    let odd = q.bit(0);
    if twice > *d || (twice == *d && (!even || odd)) {
        q += 1u32;
    }
    BigInt::from_biguint(if negative { Sign::Minus } else { Sign::Plus }, q)
}

impl Dec {
    /// From the wire form: a 4-byte scale, then the unscaled value in two's complement.
    pub(crate) fn decode(b: &[u8]) -> Option<Dec> {
        let scale = i32::from_be_bytes(b.get(..4)?.try_into().ok()?);
        Some(Dec {
            unscaled: BigInt::from_signed_bytes_be(&b[4..]),
            scale,
        })
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = self.scale.to_be_bytes().to_vec();
        out.extend(self.unscaled.to_signed_bytes_be());
        out
    }

    pub(crate) fn zero(scale: i32) -> Dec {
        Dec {
            unscaled: BigInt::from(0),
            scale,
        }
    }

    /// An integer (`new BigDecimal(BigInteger)`).
    pub(crate) fn int(v: BigInt) -> Dec {
        Dec {
            unscaled: v,
            scale: 0,
        }
    }

    pub(crate) fn is_zero(&self) -> bool {
        self.unscaled.sign() == Sign::NoSign
    }

    pub(crate) fn precision(&self) -> u32 {
        digits(&self.unscaled)
    }

    /// The power of ten of the leading digit: `precision - 1 - scale` (1.5E+9 has 9).
    pub(crate) fn adjusted_exponent(&self) -> i64 {
        i64::from(self.precision()) - 1 - i64::from(self.scale)
    }

    /// `BigDecimal.valueOf(double)`: the decimal of Java's shortest text of `f`, with Java's
    /// message for NaN and infinities (`DecimalType.toBigDecimal`).
    pub(crate) fn of_f64(f: f64) -> Result<Dec, String> {
        if f.is_nan() {
            return Err("A NaN cannot be converted into a decimal".into());
        }
        if f.is_infinite() {
            return Err("An infinite number cannot be converted into a decimal".into());
        }
        let (u, scale) = crate::scalar::parse_decimal(&crate::scalar::java_double(f))
            .ok_or("A double cannot be converted into a decimal")?;
        Ok(Dec {
            unscaled: BigInt::from_signed_bytes_be(&u.to_twos()),
            scale,
        })
    }

    /// `BigDecimal.doubleValue()`: the nearest double.
    pub(crate) fn to_f64(&self) -> f64 {
        format!("{}e{}", self.unscaled, -i64::from(self.scale))
            .parse()
            .unwrap_or(f64::NAN)
    }

    pub(crate) fn neg(&self) -> Dec {
        Dec {
            unscaled: -&self.unscaled,
            scale: self.scale,
        }
    }

    /// `BigDecimal.round(new MathContext(p))`: at most `p` significant digits, half up.
    pub(crate) fn round(&self, p: u32) -> Dec {
        let n = self.precision();
        if n <= p {
            return self.clone();
        }
        let drop = n - p;
        let negative = self.unscaled.sign() == Sign::Minus;
        let mut q = div_round(
            self.unscaled.magnitude(),
            ten_pow(drop).magnitude(),
            negative,
            false,
        );
        let mut scale = i64::from(self.scale) - i64::from(drop);
        if digits(&q) > p {
            q /= 10;
            scale -= 1;
        }
        Dec {
            unscaled: q,
            scale: scale.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32,
        }
    }

    /// The same value at a scale at least its own (None if that needs too many digits).
    fn upscaled(&self, scale: i64) -> Option<BigInt> {
        let k = u32::try_from(scale - i64::from(self.scale)).ok()?;
        if self.is_zero() {
            return Some(BigInt::from(0));
        }
        if u64::from(self.precision()) + u64::from(k) > MAX_DIGITS {
            return None;
        }
        Some(&self.unscaled * ten_pow(k))
    }

    /// `BigDecimal.stripTrailingZeros()` (zero becomes `0`, scale 0).
    pub(crate) fn strip(mut self) -> Dec {
        if self.is_zero() {
            return Dec::zero(0);
        }
        let ten = BigInt::from(10u32);
        while self.scale > i32::MIN && (&self.unscaled % &ten).sign() == Sign::NoSign {
            self.unscaled /= &ten;
            self.scale -= 1;
        }
        self
    }

    /// `compareTo`: by value (1.0 equals 1.00).
    pub(crate) fn cmp_value(&self, o: &Dec) -> Ordering {
        let (a, b) = (self.unscaled.sign(), o.unscaled.sign());
        let rank = |s: Sign| match s {
            Sign::Minus => -1,
            Sign::NoSign => 0,
            Sign::Plus => 1,
        };
        if a != b || a == Sign::NoSign {
            return rank(a).cmp(&rank(b));
        }
        let magnitude = match self.adjusted_exponent().cmp(&o.adjusted_exponent()) {
            Ordering::Equal => {
                // Same leading position: aligning costs at most the longer one's digits.
                let k = (i64::from(self.scale) - i64::from(o.scale)).unsigned_abs() as u32;
                if self.scale < o.scale {
                    (&self.unscaled * ten_pow(k))
                        .magnitude()
                        .cmp(o.unscaled.magnitude())
                } else {
                    self.unscaled
                        .magnitude()
                        .cmp((&o.unscaled * ten_pow(k)).magnitude())
                }
            }
            other => other,
        };
        if a == Sign::Minus {
            magnitude.reverse()
        } else {
            magnitude
        }
    }

    /// `add(augend)` without rounding: `sum`'s steps. None past [`MAX_DIGITS`].
    pub(crate) fn add_exact(&self, o: &Dec) -> Option<Dec> {
        let s = i64::from(self.scale.max(o.scale));
        Some(Dec {
            unscaled: self.upscaled(s)? + o.upscaled(s)?,
            scale: s as i32,
        })
    }

    /// `add(augend, MathContext(10000))`, Cassandra's `+` (and `-` with the negated
    /// subtrahend): the exact sum rounded half up to 10,000 digits. An operand whose digits
    /// all fall below the result's last one stands in as one unit three places further down,
    /// as Java's `preAlign` does, so that `1E+999999999 + 1E-999999999` costs nothing.
    pub(crate) fn add(&self, o: &Dec) -> Result<Dec, String> {
        if self.is_zero() || o.is_zero() {
            let preferred = self.scale.max(o.scale);
            if self.is_zero() && o.is_zero() {
                return Ok(Dec::zero(preferred));
            }
            let r = if self.is_zero() { o } else { self }.round(OP_DIGITS);
            // The scale moves toward the zero's, as far as the precision allows.
            let room = OP_DIGITS - r.precision();
            let gap = i64::from(preferred) - i64::from(r.scale);
            let k = gap.min(i64::from(room)) as u32;
            return Ok(Dec {
                unscaled: r.unscaled * ten_pow(k),
                scale: r.scale + k as i32,
            });
        }
        let (big, small) = if self.scale <= o.scale {
            (self, o)
        } else {
            (o, self)
        };
        let ulp = i64::from(big.scale) - i64::from(big.precision()) + i64::from(OP_DIGITS);
        let small_high = i64::from(small.scale) - i64::from(small.precision()) + 1;
        let stand_in;
        let small = if small_high > i64::from(big.scale) + 2 && small_high > ulp + 2 {
            stand_in = Dec {
                unscaled: BigInt::from_biguint(small.unscaled.sign(), BigUint::from(1u32)),
                scale: int_scale(ulp.max(i64::from(big.scale)) + 3)?,
            };
            &stand_in
        } else {
            small
        };
        Ok(big.add_exact(small).ok_or_else(too_big)?.round(OP_DIGITS))
    }

    /// `multiply(multiplicand, MathContext(10000))`, Cassandra's `*`.
    pub(crate) fn mul(&self, o: &Dec) -> Result<Dec, String> {
        let s = i64::from(self.scale) + i64::from(o.scale);
        let scale = if self.is_zero() {
            s.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
        } else {
            int_scale(s)?
        };
        if u64::from(self.precision()) + u64::from(o.precision()) > MAX_DIGITS {
            return Err(too_big());
        }
        Ok(Dec {
            unscaled: &self.unscaled * &o.unscaled,
            scale,
        }
        .round(OP_DIGITS))
    }

    /// `self / o` rounded at `scale` (`divide(divisor, scale, HALF_UP or HALF_EVEN)`), for a
    /// non-zero divisor.
    fn divide_at(&self, o: &Dec, scale: i32, even: bool) -> Result<Dec, String> {
        // q = self.u * 10^e / o.u
        let e = i64::from(scale) - i64::from(self.scale) + i64::from(o.scale);
        if e.abs() > MAX_JAVA_POWER {
            return Err("BigInteger would overflow supported range".into());
        }
        let negative = self.unscaled.sign() != o.unscaled.sign();
        let (pa, pb) = (i64::from(self.precision()), i64::from(o.precision()));
        let q = if self.is_zero() {
            BigInt::from(0)
        } else if e >= 0 {
            if pa + e - pb > MAX_DIGITS as i64 {
                return Err(too_big());
            }
            let n = &self.unscaled * ten_pow(e as u32);
            div_round(n.magnitude(), o.unscaled.magnitude(), negative, even)
        } else if pa + 1 < pb - e {
            // Below a tenth of the last place: rounds to zero.
            BigInt::from(0)
        } else {
            let d = &o.unscaled * ten_pow((-e) as u32);
            div_round(self.unscaled.magnitude(), d.magnitude(), negative, even)
        };
        Ok(Dec { unscaled: q, scale })
    }

    /// Cassandra's decimal `/` (`DecimalType.divide`).
    pub(crate) fn div(&self, o: &Dec) -> Result<Dec, String> {
        // Java int arithmetic, overflow included.
        let lead = |d: &Dec| (d.precision() as i32).wrapping_sub(d.scale);
        let first = lead(self).wrapping_sub(lead(o));
        let scale = DIV_MIN_SCALE
            .wrapping_sub(first)
            .max(self.scale)
            .max(o.scale)
            .clamp(DIV_MIN_SCALE, DIV_MAX_SCALE);
        if o.is_zero() {
            return Err(self.zero_divisor(scale, o.scale).into());
        }
        Ok(self.divide_at(o, scale, false)?.strip())
    }

    /// Java's message for `divide(0, scale, mode)`: the dividend is a `long` (`/ by zero`)
    /// when it fits one and still does at the scale it is raised to, else a `BigInteger`.
    fn zero_divisor(&self, scale: i32, divisor_scale: i32) -> &'static str {
        const LONG: &str = "/ by zero";
        const BIG: &str = "BigInteger divide by zero";
        let Ok(x) = i64::try_from(&self.unscaled) else {
            return BIG;
        };
        if x == i64::MIN {
            return BIG;
        }
        let raise = i64::from(scale) + i64::from(divisor_scale) - i64::from(self.scale);
        if raise <= 0 {
            return LONG;
        }
        if raise < 19 && (x == 0 || x.unsigned_abs() <= (i64::MAX / 10i64.pow(raise as u32)) as u64)
        {
            LONG
        } else {
            BIG
        }
    }

    /// `BigDecimal.remainder`, Cassandra's decimal `%`.
    pub(crate) fn rem(&self, o: &Dec) -> Result<Dec, String> {
        if o.is_zero() {
            return Err(if self.is_zero() {
                "Division undefined"
            } else {
                "Division by zero"
            }
            .into());
        }
        let (xs, ys) = (i64::from(self.scale), i64::from(o.scale));
        if self.abs_less(o) || self.is_zero() {
            return Ok(self.clone());
        }
        // The integral quotient, truncated.
        let e = ys - xs;
        let lead = self.adjusted_exponent() - o.adjusted_exponent();
        if lead > MAX_DIGITS as i64 {
            return Err(too_big());
        }
        let q = if e >= 0 {
            self.upscaled(i64::from(self.scale) + e)
                .ok_or_else(too_big)?
                / &o.unscaled
        } else {
            &self.unscaled / (&o.unscaled * ten_pow((-e) as u32))
        };
        // Its scale: the preferred xs - ys when that is not negative, else as close to it as
        // its trailing zeros allow (up to 0); the remainder takes max(xs, ys + that).
        let preferred = xs - ys;
        let qs = if preferred >= 0 {
            preferred
        } else {
            preferred.max(-i64::from(trailing_zeros(&q)))
        };
        let s = xs.max(ys + qs);
        // r = x - q * y, at scale s.
        let qy = Dec {
            unscaled: q * &o.unscaled,
            scale: o.scale,
        };
        let x = self.upscaled(s).ok_or_else(too_big)?;
        let qy = if s >= ys {
            qy.upscaled(s).ok_or_else(too_big)?
        } else {
            qy.unscaled / ten_pow((ys - s) as u32)
        };
        Ok(Dec {
            unscaled: x - qy,
            scale: int_scale(s)?,
        })
    }

    fn abs_less(&self, o: &Dec) -> bool {
        let abs = |d: &Dec| Dec {
            unscaled: BigInt::from_biguint(Sign::Plus, d.unscaled.magnitude().clone()),
            scale: d.scale,
        };
        abs(self).cmp_value(&abs(o)) == Ordering::Less
    }

    /// One step of Cassandra's decimal `avg`: `avg + (v - avg) / n`, the quotient rounded
    /// half even at the difference's scale.
    pub(crate) fn mean_step(&self, v: &Dec, n: i64) -> Result<Dec, String> {
        let diff = v.add_exact(&self.neg()).ok_or_else(too_big)?;
        let q = diff.divide_at(&Dec::int(BigInt::from(n.max(1))), diff.scale, true)?;
        self.add_exact(&q).ok_or_else(too_big)
    }

    /// `divide(BigDecimal.valueOf(n), RoundingMode.HALF_EVEN)`: at this scale.
    pub(crate) fn div_count(&self, n: i64) -> Result<Dec, String> {
        self.divide_at(&Dec::int(BigInt::from(n.max(1))), self.scale, true)
    }
}

/// Trailing decimal zeros of a non-zero integer (0 for zero).
fn trailing_zeros(v: &BigInt) -> u32 {
    if v.sign() == Sign::NoSign {
        return 0;
    }
    let ten = BigInt::from(10u32);
    let mut v = v.clone();
    let mut n = 0;
    while (&v % &ten).sign() == Sign::NoSign {
        v /= &ten;
        n += 1;
    }
    n
}

/// A decimal from its text (`-1.25`, `1E+10`), for tests.
#[cfg(test)]
pub(crate) fn dec(s: &str) -> Dec {
    let (mant, exp) = match s.split_once(['E', 'e']) {
        Some((m, e)) => (m, e.parse::<i32>().unwrap()),
        None => (s, 0),
    };
    let scale = mant.split_once('.').map_or(0, |(_, f)| f.len() as i32);
    Dec {
        unscaled: mant.replace('.', "").parse().unwrap(),
        scale: scale - exp,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(d: &Dec) -> String {
        let u = crate::bigint::BigInt::from_twos(&d.unscaled.to_signed_bytes_be());
        crate::bigint::decimal_string(&u, d.scale)
    }

    // Expected values are Cassandra 5.0.9's answers.
    #[test]
    fn division_as_cassandra() {
        let div = |a: &str, b: &str| text(&dec(a).div(&dec(b)).unwrap());
        assert_eq!(div("1", "3"), "0.33333333333333333333333333333333");
        assert_eq!(div("2", "3"), "0.66666666666666666666666666666667");
        assert_eq!(div("10", "7"), "1.42857142857142857142857142857143");
        assert_eq!(div("100", "4"), "25");
        assert_eq!(
            div("1E+10", "3"),
            "3333333333.33333333333333333333333333333333"
        );
        assert_eq!(div("1E-10", "3"), "3.3333333333333333333333333333333E-11");
        assert_eq!(div("123456789.123456789", "0.0007"), "176366841604.93827");
        assert_eq!(div("0.0", "3"), "0");
        assert_eq!(div("1E-2000", "3"), "0");
        assert_eq!(
            div("99999999999999999999999", "1.25"),
            "79999999999999999999999.2"
        );
        let q = div("1", "3E-2000");
        assert_eq!((q.len(), &q[..3]), (3001, "333"));
    }

    #[test]
    fn division_by_zero_names_javas_representation() {
        let err = |a: &str, b: &str| dec(a).div(&dec(b)).unwrap_err();
        assert_eq!(err("1.25", "0.0"), "BigInteger divide by zero");
        assert_eq!(err("0", "0"), "BigInteger divide by zero");
        assert_eq!(err("1E-1000", "0"), "/ by zero");
        assert_eq!(err("0E-995", "0"), "/ by zero");
        assert_eq!(err("123E-990", "0"), "/ by zero");
        assert_eq!(
            err("12345678901234567890E-990", "0"),
            "BigInteger divide by zero"
        );
        assert_eq!(
            err("1E-2147483647", "1E+10"),
            "BigInteger would overflow supported range"
        );
        assert_eq!(dec("1.25").rem(&dec("0")).unwrap_err(), "Division by zero");
        assert_eq!(
            dec("0.00").rem(&dec("0")).unwrap_err(),
            "Division undefined"
        );
    }

    #[test]
    fn remainder_as_cassandra() {
        let rem = |a: &str, b: &str| text(&dec(a).rem(&dec(b)).unwrap());
        assert_eq!(rem("7", "0.5"), "0.0");
        assert_eq!(rem("10", "0.25"), "0.0");
        assert_eq!(rem("-7.5", "2"), "-1.5");
        assert_eq!(rem("7.5", "-2"), "1.5");
        assert_eq!(rem("1E+3", "3"), "1");
        assert_eq!(rem("0.001", "5"), "0.001");
        assert_eq!(rem("100", "0.01"), "0");
        assert_eq!(rem("1E+5", "7"), "5");
        assert_eq!(rem("0.00", "3"), "0.00");
        assert_eq!(rem("1.25", "0.3"), "0.05");
        assert_eq!(rem("99999999999999999999999", "1.25"), "0.25");
    }

    #[test]
    fn sums_and_products_round_at_ten_thousand_digits() {
        let nines = "9".repeat(6000);
        let p = dec(&nines).mul(&dec(&nines)).unwrap();
        assert_eq!((p.precision(), p.scale), (10_000, -2000));
        assert!(p.unscaled.to_string().starts_with("99999"));
        assert_eq!(
            text(&dec("1.5").mul(&dec("2.0")).unwrap()),
            "3.00",
            "scales add"
        );
        // 1 + 1E-20000: the small one stands in at 1E-10003; rounded to 10,000 digits.
        let s = dec("1").add(&dec("1E-20000")).unwrap();
        assert_eq!((s.precision(), s.scale), (10_000, 9999));
        let s = dec("1").add(&dec("-1E-20000")).unwrap();
        assert_eq!((s.precision(), s.scale), (10_000, 9999));
        let s = dec(&format!("1{}", "0".repeat(10_000)))
            .add(&dec("1"))
            .unwrap();
        assert_eq!((s.precision(), s.scale), (10_000, -1));
        assert_eq!(text(&dec("1.5").add(&dec("0.000")).unwrap()), "1.500");
        assert_eq!(text(&dec("0.0").add(&dec("0.00")).unwrap()), "0.00");
        assert_eq!(
            dec("1E-2147483647").mul(&dec("1E-10")).unwrap_err(),
            "Underflow"
        );
        let z = dec("0").mul(&dec("1E-2147483647")).unwrap();
        assert_eq!(text(&z.mul(&dec("1E-10")).unwrap()), "0E-2147483647");
    }

    #[test]
    fn running_mean_rounds_half_even() {
        let mut avg = Dec::zero(0);
        for (i, v) in ["1.25", "2.5", "0.001"].iter().enumerate() {
            avg = avg.mean_step(&dec(v), i as i64 + 1).unwrap();
        }
        assert_eq!(text(&avg), "1.247");
    }

    #[test]
    fn compares_by_value() {
        assert_eq!(dec("1.0").cmp_value(&dec("1.00")), Ordering::Equal);
        assert_eq!(dec("-2").cmp_value(&dec("1E-5")), Ordering::Less);
        assert_eq!(
            dec("1E+2147483647").cmp_value(&dec("9E-2147483647")),
            Ordering::Greater
        );
        assert_eq!(dec("-1E+100").cmp_value(&dec("-9.99E+99")), Ordering::Less);
        let big = "1".repeat(60);
        assert_eq!(
            dec(&big).cmp_value(&dec(&format!("{big}.1"))),
            Ordering::Less
        );
    }
}
