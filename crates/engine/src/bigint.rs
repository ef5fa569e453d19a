//! Arbitrary-size integers for varint and decimal values: conversion from and to two's
//! complement bytes and decimal text (Java's `BigInteger` / `BigDecimal` text forms). Not a
//! general big-number library: only what formatting, parsing and casts need.

use std::cmp::Ordering;

/// An arbitrary-size integer: sign and magnitude in little-endian 32-bit limbs (no trailing
/// zero limbs). Only what varint/decimal formatting and conversion need.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BigInt {
    pub(crate) neg: bool,
    pub(crate) mag: Vec<u32>,
}

impl BigInt {
    pub(crate) fn from_i64(i: i64) -> BigInt {
        let m = i.unsigned_abs();
        let mut b = BigInt {
            neg: i < 0,
            mag: vec![m as u32, (m >> 32) as u32],
        };
        b.trim();
        b
    }

    pub(crate) fn trim(&mut self) {
        while self.mag.last() == Some(&0) {
            self.mag.pop();
        }
        if self.mag.is_empty() {
            self.neg = false;
        }
    }

    pub(crate) fn is_zero(&self) -> bool {
        self.mag.is_empty()
    }

    pub(crate) fn abs(&self) -> BigInt {
        BigInt {
            neg: false,
            mag: self.mag.clone(),
        }
    }

    /// From two's-complement big-endian bytes (the varint wire form); empty is zero.
    pub(crate) fn from_twos(b: &[u8]) -> BigInt {
        let neg = b.first().is_some_and(|x| x & 0x80 != 0);
        // Magnitude bytes, big-endian: negate if negative.
        let mut bytes: Vec<u8> = b.to_vec();
        if neg {
            for x in bytes.iter_mut() {
                *x = !*x;
            }
            for x in bytes.iter_mut().rev() {
                let (s, c) = x.overflowing_add(1);
                *x = s;
                if !c {
                    break;
                }
            }
        }
        let mut mag = Vec::with_capacity(bytes.len() / 4 + 1);
        for chunk in bytes.rchunks(4) {
            let mut limb = 0u32;
            for &x in chunk {
                limb = (limb << 8) | u32::from(x);
            }
            mag.push(limb);
        }
        let mut r = BigInt { neg, mag };
        // -2^(8n-1) negates to itself: the magnitude is still right as unsigned.
        r.trim();
        if neg && r.is_zero() {
            // Only possible for input like [0x80, 0, ...] handled above; keep sign sane.
            r.neg = false;
        }
        r
    }

    /// Minimal two's-complement big-endian bytes (BigInteger.toByteArray).
    pub(crate) fn to_twos(&self) -> Vec<u8> {
        let mut be: Vec<u8> = Vec::with_capacity(self.mag.len() * 4 + 1);
        for limb in self.mag.iter().rev() {
            be.extend_from_slice(&limb.to_be_bytes());
        }
        let first = be.iter().position(|&x| x != 0).unwrap_or(be.len());
        let mut mag: Vec<u8> = be[first..].to_vec();
        if mag.is_empty() {
            return vec![0];
        }
        if !self.neg {
            if mag[0] & 0x80 != 0 {
                mag.insert(0, 0);
            }
            return mag;
        }
        // Two's complement of the magnitude.
        mag.insert(0, 0);
        for x in mag.iter_mut() {
            *x = !*x;
        }
        for x in mag.iter_mut().rev() {
            let (s, c) = x.overflowing_add(1);
            *x = s;
            if !c {
                break;
            }
        }
        while mag.len() > 1 && mag[0] == 0xff && mag[1] & 0x80 != 0 {
            mag.remove(0);
        }
        mag
    }

    /// Low 64 bits as two's complement (BigInteger.longValue()).
    pub(crate) fn low_i64(&self) -> i64 {
        let lo = u64::from(self.mag.first().copied().unwrap_or(0))
            | (u64::from(self.mag.get(1).copied().unwrap_or(0)) << 32);
        if self.neg {
            (lo as i64).wrapping_neg()
        } else {
            lo as i64
        }
    }

    pub(crate) fn mul_small(&self, m: u32, add: u32) -> BigInt {
        let mut carry = u64::from(add);
        let mut mag = Vec::with_capacity(self.mag.len() + 1);
        for &l in &self.mag {
            let v = u64::from(l) * u64::from(m) + carry;
            mag.push(v as u32);
            carry = v >> 32;
        }
        if carry > 0 {
            mag.push(carry as u32);
        }
        let mut r = BigInt { neg: self.neg, mag };
        r.trim();
        r
    }

    /// (self / d, |self| % d), truncating toward zero.
    pub(crate) fn divrem_small(&self, d: u32) -> (BigInt, u32) {
        let mut rem = 0u64;
        let mut mag = vec![0u32; self.mag.len()];
        for i in (0..self.mag.len()).rev() {
            let cur = (rem << 32) | u64::from(self.mag[i]);
            mag[i] = (cur / u64::from(d)) as u32;
            rem = cur % u64::from(d);
        }
        let mut r = BigInt { neg: self.neg, mag };
        r.trim();
        (r, rem as u32)
    }

    /// Base-10 text (BigInteger.toString()).
    pub(crate) fn to_decimal_string(&self) -> String {
        if self.is_zero() {
            return "0".into();
        }
        let mut chunks = Vec::new();
        let mut cur = self.abs();
        while !cur.is_zero() {
            let (q, r) = cur.divrem_small(1_000_000_000);
            chunks.push(r);
            cur = q;
        }
        let mut s = String::new();
        if self.neg {
            s.push('-');
        }
        s.push_str(&chunks.pop().unwrap_or(0).to_string());
        for c in chunks.iter().rev() {
            s.push_str(&format!("{c:09}"));
        }
        s
    }

    /// Parses `[+-]?[0-9]+` (BigInteger(String)); None otherwise.
    pub(crate) fn parse(s: &str) -> Option<BigInt> {
        let (neg, digits) = match s.as_bytes().first()? {
            b'-' => (true, &s[1..]),
            b'+' => (false, &s[1..]),
            _ => (false, s),
        };
        if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        let mut r = BigInt {
            neg: false,
            mag: vec![],
        };
        for c in digits.bytes() {
            r = r.mul_small(10, u32::from(c - b'0'));
        }
        r.neg = neg && !r.is_zero();
        Some(r)
    }

    pub(crate) fn to_f64(&self) -> f64 {
        self.to_decimal_string().parse().unwrap_or(f64::NAN)
    }

    pub(crate) fn cmp_mag(&self, o: &BigInt) -> Ordering {
        self.mag
            .len()
            .cmp(&o.mag.len())
            .then_with(|| self.mag.iter().rev().cmp(o.mag.iter().rev()))
    }
}

impl PartialOrd for BigInt {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl Ord for BigInt {
    fn cmp(&self, o: &Self) -> Ordering {
        match (self.neg, o.neg) {
            (false, true) => Ordering::Greater,
            (true, false) => Ordering::Less,
            (false, false) => self.cmp_mag(o),
            (true, true) => o.cmp_mag(self),
        }
    }
}

/// Java `BigDecimal.toString()`: plain notation when the scale is >= 0 and the adjusted
/// exponent >= -6, scientific (`1.23E-12`, `1E+3`) otherwise.
pub(crate) fn decimal_string(unscaled: &BigInt, scale: i32) -> String {
    let digits = unscaled.abs().to_decimal_string();
    let sign = if unscaled.neg { "-" } else { "" };
    let n = digits.len() as i64;
    let adjusted = -i64::from(scale) + (n - 1);
    if scale >= 0 && adjusted >= -6 {
        let s = scale as usize;
        if s == 0 {
            return format!("{sign}{digits}");
        }
        if digits.len() > s {
            let (a, b) = digits.split_at(digits.len() - s);
            return format!("{sign}{a}.{b}");
        }
        return format!("{sign}0.{}{digits}", "0".repeat(s - digits.len()));
    }
    let mut out = format!("{sign}{}", &digits[..1]);
    if digits.len() > 1 {
        out.push('.');
        out.push_str(&digits[1..]);
    }
    out.push('E');
    if adjusted >= 0 {
        out.push('+');
    }
    out.push_str(&adjusted.to_string());
    out
}

/// Parses Java `BigDecimal(String)` syntax (`-1.23E-12`, `123`, `.5`) to (unscaled, scale).
pub(crate) fn parse_decimal(s: &str) -> Option<(BigInt, i32)> {
    let (mant, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let exp: i64 = match exp {
        Some(e) => e.strip_prefix('+').unwrap_or(e).parse().ok()?,
        None => 0,
    };
    let (sign, body) = match mant.as_bytes().first()? {
        b'-' => ("-", &mant[1..]),
        b'+' => ("", &mant[1..]),
        _ => ("", mant),
    };
    let (int, frac) = match body.find('.') {
        Some(i) => (&body[..i], &body[i + 1..]),
        None => (body, ""),
    };
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.bytes().chain(frac.bytes()).all(|c| c.is_ascii_digit()) {
        return None;
    }
    let unscaled = BigInt::parse(&format!("{sign}{int}{frac}"))?;
    let scale = i32::try_from(frac.len() as i64 - exp).ok()?;
    Some((unscaled, scale))
}
