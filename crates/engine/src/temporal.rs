//! Cassandra's text forms of values, as its serializers' `fromString` read them: unsigned day
//! numbers or ISO dates (`SimpleDateSerializer`), nanoseconds or `hh:mm:ss[.f]`
//! (`TimeSerializer`), milliseconds or dates with times and zones (`TimestampSerializer`),
//! durations in all three of `Duration.from`'s forms, and dashed UUIDs.
//!
//! `json` reads JSON strings with these. `literal` still has its own, looser readers for CQL
//! string literals (issue 8: one of each); moving it onto these changes what some literals
//! accept, so it waits for a differential run against Cassandra.

const DATE_EPOCH: i64 = 1 << 31;
const MILLIS_PER_DAY: i64 = 86_400_000;
const NANOS_PER_DAY: i64 = 86_400_000_000_000;

pub(crate) fn unhex(h: &str) -> Option<Vec<u8>> {
    if !h.len().is_multiple_of(2) || !h.is_ascii() {
        return None;
    }
    (0..h.len() / 2)
        .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).ok())
        .collect()
}

pub(crate) fn parse_uuid(s: &str) -> Option<[u8; 16]> {
    let b = s.as_bytes();
    if b.len() != 36 || [8, 13, 18, 23].iter().any(|&i| b[i] != b'-') {
        return None;
    }
    let h: String = s.chars().filter(|&c| c != '-').collect();
    unhex(&h)?.try_into().ok()
}

fn digits(s: &str) -> Option<i64> {
    if s.is_empty() || s.len() > 18 || !s.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// `yyyy-mm-dd` (1-2 digit month/day, optional sign and long years) to days since the epoch.
/// A `lenient` reader takes day 29-31 of a shorter month as its last day, as the timestamp
/// parser of Cassandra 5.0.9 does (`'2015-02-30'` is 2015-02-28); dates refuse it.
fn civil_days(s: &str, lenient: bool) -> Option<i64> {
    let (neg, body) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let mut parts = body.split('-');
    let (y, m, d) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some()
        || y.len() < 4
        || m.is_empty()
        || m.len() > 2
        || d.is_empty()
        || d.len() > 2
    {
        return None;
    }
    let y = digits(y)? * if neg { -1 } else { 1 };
    let (m, d) = (digits(m)? as u32, digits(d)? as u32);
    let last = days_in_month(y, m);
    if !(1..=12).contains(&m) || d == 0 || d > 31 || (d > last && !lenient) {
        return None;
    }
    Some(days_from_civil(y, m, d.min(last)))
}

/// `SimpleDateSerializer.dateStringToDays`: an unsigned day number (the raw wire value) or an
/// ISO date.
pub(crate) fn parse_date(s: &str) -> Option<u32> {
    if let Some(n) = s
        .strip_prefix('-')
        .map_or_else(|| digits(s), |r| digits(r).map(|x| -x))
    {
        return u32::try_from(n).ok();
    }
    u32::try_from(civil_days(s, false)? + DATE_EPOCH).ok()
}

/// `TimeSerializer.timeStringToLong`: nanoseconds, or `hh:mm:ss[.fffffffff]`.
pub(crate) fn parse_time(s: &str) -> Option<i64> {
    if let Some(n) = digits(s) {
        return (n < NANOS_PER_DAY).then_some(n);
    }
    let (hms, frac) = match s.split_once('.') {
        Some((a, f)) => (a, f),
        None => (s, ""),
    };
    let mut p = hms.split(':');
    let (h, m, sec) = (digits(p.next()?)?, digits(p.next()?)?, digits(p.next()?)?);
    if p.next().is_some() || h > 23 || m > 59 || sec > 59 || frac.len() > 9 {
        return None;
    }
    let frac_ns = if frac.is_empty() {
        0
    } else {
        digits(frac)? * 10i64.pow(9 - frac.len() as u32)
    };
    Some(((h * 60 + m) * 60 + sec) * 1_000_000_000 + frac_ns)
}

/// `TimestampSerializer.dateStringToTimestamp`: milliseconds, or `yyyy-mm-dd[( |T)hh:mm[:ss[.f]]]`
/// with an optional zone (`Z`, `+hh`, `+hhmm`, `+hh:mm`, `UTC`/`GMT`); no zone means UTC here
/// (Cassandra uses the server's zone).
/// `now` is the statement's clock: the text `now` is that time (Cassandra reads its clock
/// there; the engine is given it).
pub(crate) fn parse_timestamp(s: &str, now: crate::Now) -> Option<i64> {
    if s.eq_ignore_ascii_case("now") {
        return Some(now.micros.div_euclid(1000));
    }
    if let Some(n) = s
        .strip_prefix('-')
        .map_or_else(|| digits(s), |r| digits(r).map(|x| -x))
    {
        return Some(n);
    }
    // Split off the zone.
    let s = s.trim_end();
    let (main, offset_ms) = split_zone(s)?;
    let main = main.trim_end();
    let (date, time) = match main.find(['T', ' ']) {
        Some(i) if i >= 8 => (&main[..i], Some(main[i + 1..].trim_start())),
        _ => (main, None),
    };
    let days = civil_days(date, true)?;
    let in_day = match time {
        None => 0,
        Some(t) => {
            let (hms, frac) = match t.split_once('.') {
                Some((a, f)) => (a, f),
                None => (t, ""),
            };
            let mut p = hms.split(':');
            let h = digits(p.next()?)?;
            let m = digits(p.next()?)?;
            let sec = match p.next() {
                Some(x) => digits(x)?,
                None => 0,
            };
            // 24:00 (and 24:00:00.000) is the end of the day, the next day's midnight.
            let end_of_day = h == 24 && m == 0 && sec == 0 && frac.bytes().all(|c| c == b'0');
            if p.next().is_some() || (h > 23 && !end_of_day) || m > 59 || sec > 59 || frac.len() > 9
            {
                return None;
            }
            let ms = if frac.is_empty() {
                0
            } else {
                let mut f = frac.to_string();
                f.truncate(3);
                while f.len() < 3 {
                    f.push('0');
                }
                digits(frac)?;
                digits(&f)?
            };
            ((h * 60 + m) * 60 + sec) * 1000 + ms
        }
    };
    Some(days * MILLIS_PER_DAY + in_day - offset_ms)
}

/// Splits `2024-01-01 10:00+0200` into the local part and the zone offset in milliseconds.
fn split_zone(s: &str) -> Option<(&str, i64)> {
    for name in ["UTC", "GMT", "Z", "z"] {
        if let Some(rest) = s.strip_suffix(name) {
            return Some((rest, 0));
        }
    }
    // A trailing +hh, +hhmm or +hh:mm (a '-' only after the time part, not in the date).
    let bytes = s.as_bytes();
    let time_start = s.find(['T', ' ']).unwrap_or(s.len());
    if let Some(i) = s.rfind(['+', '-']) {
        if i > time_start || (i > 0 && bytes.get(i - 1) == Some(&b' ')) {
            let z = s[i + 1..].replace(':', "");
            if (z.len() == 2 || z.len() == 4) && z.bytes().all(|c| c.is_ascii_digit()) {
                let h = digits(&z[..2])?;
                let m = if z.len() == 4 { digits(&z[2..])? } else { 0 };
                let sign = if bytes[i] == b'-' { -1 } else { 1 };
                return Some((&s[..i], sign * (h * 60 + m) * 60_000));
            }
        }
    }
    Some((s, 0))
}

/// `Duration.from`: `12h30m`, `-3d`, ISO 8601 `P1Y2M3DT4H5M6S`, `P2W`, `P0001-02-03T04:05:06`.
pub(crate) fn parse_duration(input: &str) -> Result<(i32, i32, i64), String> {
    let bad = || format!("Unable to convert '{input}' to a duration");
    let (neg, src) = match input.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, input),
    };
    let mut b = DurationBuilder::default();
    if let Some(p) = src.strip_prefix('P') {
        if let Some(w) = p.strip_suffix('W') {
            b.add(3, digits(w).ok_or_else(bad)?)?;
        } else if p.contains('-') {
            // P[YYYY]-[MM]-[DD]T[hh]:[mm]:[ss]
            let (d, t) = p.split_once('T').ok_or_else(bad)?;
            let ds: Vec<&str> = d.split('-').collect();
            let ts: Vec<&str> = t.split(':').collect();
            let shape = [4usize, 2, 2];
            if ds.len() != 3
                || ts.len() != 3
                || ds.iter().zip(shape).any(|(x, n)| x.len() != n)
                || ts.iter().any(|x| x.len() != 2)
            {
                return Err(bad());
            }
            for (unit, x) in [1usize, 2, 4]
                .into_iter()
                .zip(&ds)
                .chain([5usize, 6, 7].into_iter().zip(&ts))
            {
                b.add(unit, digits(x).ok_or_else(bad)?)?;
            }
        } else {
            let (d, t) = match p.split_once('T') {
                Some((d, t)) => (d, Some(t)),
                None => (p, None),
            };
            let mut take = |part: &str, units: &[(char, usize)]| -> Result<(), String> {
                let mut rest = part;
                let mut last = 0;
                while !rest.is_empty() {
                    let i = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
                    let n = digits(&rest[..i]).ok_or_else(bad)?;
                    let c = rest[i..].chars().next().ok_or_else(bad)?;
                    let pos = units.iter().position(|(u, _)| *u == c).ok_or_else(bad)?;
                    if pos < last {
                        return Err(bad());
                    }
                    last = pos + 1;
                    b.add(units[pos].1, n)?;
                    rest = &rest[i + c.len_utf8()..];
                }
                Ok(())
            };
            take(d, &[('Y', 1), ('M', 2), ('D', 4)])?;
            if let Some(t) = t {
                take(t, &[('H', 5), ('M', 6), ('S', 7)])?;
            }
        }
    } else {
        let mut rest = src;
        if rest.is_empty() {
            return Err(bad());
        }
        while !rest.is_empty() {
            let i = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
            let n = digits(&rest[..i]).ok_or_else(bad)?;
            let tail = &rest[i..];
            let lower = tail.to_lowercase();
            let (unit, len) = [
                ("mo", 2, 2usize),
                ("ms", 8, 2),
                ("us", 9, 2),
                ("µs", 9, "µs".len()),
                ("ns", 10, 2),
                ("y", 1, 1),
                ("w", 3, 1),
                ("d", 4, 1),
                ("h", 5, 1),
                ("m", 6, 1),
                ("s", 7, 1),
            ]
            .iter()
            .find(|(sym, _, _)| lower.starts_with(sym))
            .map(|(_, u, l)| (*u, *l))
            .ok_or_else(bad)?;
            b.add(unit, n)?;
            rest = tail.get(len..).ok_or_else(bad)?;
        }
    }
    let (m, d, n) = (b.months, b.days, b.nanos);
    Ok(if neg { (-m, -d, -n) } else { (m, d, n) })
}

#[derive(Default)]
struct DurationBuilder {
    months: i32,
    days: i32,
    nanos: i64,
    last_unit: usize,
}

impl DurationBuilder {
    /// Units 1..=10: years, months, weeks, days, hours, minutes, seconds, ms, µs, ns.
    fn add(&mut self, unit: usize, n: i64) -> Result<(), String> {
        const NAMES: [&str; 11] = [
            "",
            "years",
            "months",
            "weeks",
            "days",
            "hours",
            "minutes",
            "seconds",
            "milliseconds",
            "microseconds",
            "nanoseconds",
        ];
        if unit == self.last_unit {
            return Err(format!(
                "Invalid duration. The {} are specified multiple times",
                NAMES[unit]
            ));
        }
        if unit < self.last_unit {
            return Err(format!(
                "Invalid duration. The {} should be after {}",
                NAMES[self.last_unit], NAMES[unit]
            ));
        }
        self.last_unit = unit;
        let over = |what: &str| {
            format!(
                "Invalid duration. The total number of {what} must be less or equal to {}",
                i32::MAX
            )
        };
        match unit {
            1 | 2 => {
                let per = if unit == 1 { 12 } else { 1 };
                let add = n.checked_mul(per).and_then(|x| i32::try_from(x).ok());
                self.months = add
                    .and_then(|x| self.months.checked_add(x))
                    .ok_or_else(|| over("months"))?;
            }
            3 | 4 => {
                let per = if unit == 3 { 7 } else { 1 };
                let add = n.checked_mul(per).and_then(|x| i32::try_from(x).ok());
                self.days = add
                    .and_then(|x| self.days.checked_add(x))
                    .ok_or_else(|| over("days"))?;
            }
            _ => {
                let per: i64 = match unit {
                    5 => 3_600_000_000_000,
                    6 => 60_000_000_000,
                    7 => 1_000_000_000,
                    8 => 1_000_000,
                    9 => 1000,
                    _ => 1,
                };
                self.nanos = n
                    .checked_mul(per)
                    .and_then(|x| self.nanos.checked_add(x))
                    .ok_or_else(|| over("nanoseconds"))?;
            }
        }
        Ok(())
    }
}

// ---- calendar (proleptic Gregorian, UTC) ---------------------------------------------------

pub(crate) fn year_month(ms: i64) -> (i64, i64) {
    let (y, m, _) = civil_from_days(ms.div_euclid(MILLIS_PER_DAY));
    (y, i64::from(m))
}

/// `Calendar.add(MONTH, n)` in UTC: the day of month is clamped to the new month's length.
pub(crate) fn add_months(ms: i64, n: i64) -> i64 {
    let day = ms.div_euclid(MILLIS_PER_DAY);
    let in_day = ms.rem_euclid(MILLIS_PER_DAY);
    let (y, m, d) = civil_from_days(day);
    let total = y * 12 + i64::from(m) - 1 + n;
    let (ny, nm) = (total.div_euclid(12), (total.rem_euclid(12) + 1) as u32);
    let nd = d.min(days_in_month(ny, nm));
    days_from_civil(ny, nm, nd) * MILLIS_PER_DAY + in_day
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// (year, month, day) to days since 1970-01-01.
pub(crate) fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Option<i64> {
        parse_timestamp(s, crate::Now::at_micros(1_700_000_000_123_456))
    }

    #[test]
    fn now_is_the_clock_given() {
        // The statement's clock, in milliseconds; never the machine's.
        assert_eq!(ts("now"), Some(1_700_000_000_123));
        assert_eq!(ts("NOW"), Some(1_700_000_000_123));
        assert_eq!(
            parse_timestamp("now", crate::Now::at_micros(-1)),
            Some(-1),
            "before the epoch, the millisecond below"
        );
    }

    #[test]
    fn timestamps_dates_times_and_durations() {
        assert_eq!(ts("1970-01-01"), Some(0));
        assert_eq!(ts("2020-01-01 00:00:00+0000"), Some(1_577_836_800_000));
        assert_eq!(ts("2020-01-01 00:00:00+00"), Some(1_577_836_800_000));
        assert_eq!(ts("2020-01-01T01:00:00.5+01:00"), Some(1_577_836_800_500));
        assert!(ts("garbage").is_none());
        // Cassandra 5.0.9 takes day 30 of February as its last day, and 24:00 as the next
        // day's midnight; a date refuses the first.
        assert_eq!(ts("2015-02-30"), ts("2015-02-28"));
        assert_eq!(ts("2015-02-28 24:00"), ts("2015-03-01"));
        assert!(ts("2015-02-28 24:01").is_none());
        assert!(ts("2015-02-32").is_none());
        assert!(parse_date("2015-02-29").is_none());
        assert_eq!(parse_date("1970-01-01"), Some(1 << 31));
        assert_eq!(parse_date("0"), Some(0));
        assert_eq!(civil_from_days(18262), (2020, 1, 1));
        assert_eq!(parse_time("01:02:03.5"), Some(3_723_500_000_000));
        assert!(parse_time("11:03").is_none());
        assert_eq!(parse_duration("1h30m"), Ok((0, 0, 5_400_000_000_000)));
        assert_eq!(parse_duration("P1Y2D"), Ok((12, 2, 0)));
    }
}
