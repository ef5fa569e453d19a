//! `speculative_retry` and `additional_write_policy` as Cassandra 5.0.9's
//! `SpeculativeRetryPolicy.fromString` reads them, and the normalized form it stores and shows:
//! `ALWAYS`, `NEVER` (also for `NONE`), a percentile `99.5p` (`99.5PERCENTILE` too, at most
//! four decimals), a fixed `10ms` (decimals cut) or `MIN(99p,10ms)`/`MAX(...)` of one of each.
//! Both options' errors name `speculative_retry`, as 5.0.9's do.

use crate::EngineError;

#[derive(Clone, Copy, PartialEq)]
enum Part {
    Percentile(f64),
    Fixed(i64),
}

impl Part {
    fn kind(self) -> &'static str {
        match self {
            Part::Percentile(_) => "PERCENTILE",
            Part::Fixed(_) => "FIXED",
        }
    }

    fn text(self) -> String {
        match self {
            Part::Percentile(p) => percentile_text(p),
            Part::Fixed(ms) => format!("{ms}ms"),
        }
    }
}

/// The policy `s` names, in its stored form.
pub(crate) fn policy(s: &str) -> Result<String, EngineError> {
    let invalid =
        || EngineError::config(format!("Invalid value {s} for option 'speculative_retry'"));
    if s.eq_ignore_ascii_case("ALWAYS") {
        return Ok("ALWAYS".into());
    }
    if s.eq_ignore_ascii_case("NEVER") || s.eq_ignore_ascii_case("NONE") {
        return Ok("NEVER".into());
    }
    if let Some(part) = part(s) {
        if let Part::Percentile(p) = part {
            if !(p > 0.0 && p < 100.0) {
                return Err(EngineError::config(format!("Invalid value {s} for PERCENTILE option 'speculative_retry': must be between (0.0 and 100.0)")));
            }
        }
        return Ok(part.text());
    }
    let (fun, a, b) = hybrid(s).ok_or_else(invalid)?;
    let (a, b) = match (part(a), part(b)) {
        (Some(a), Some(b)) => (a, b),
        _ => return Err(invalid()),
    };
    if let Part::Percentile(p) = a.min_by_kind(b) {
        if !(p > 0.0 && p < 100.0) {
            return Err(invalid());
        }
    }
    if a.kind() == b.kind() {
        return Err(EngineError::config(format!("Invalid value {s} for option 'speculative_retry': MIN()/MAX() arguments should be of different types, but both are of type {}", a.kind())));
    }
    let (pct, fixed) = if a.kind() == "PERCENTILE" {
        (a, b)
    } else {
        (b, a)
    };
    Ok(format!("{fun}({},{})", pct.text(), fixed.text()))
}

impl Part {
    /// The percentile of the two, if any (its range is checked as the hybrid is read).
    fn min_by_kind(self, other: Part) -> Part {
        match (self, other) {
            (Part::Percentile(_), _) => self,
            _ => other,
        }
    }
}

/// `[0-9.]+` followed by `p`/`percentile` or `ms`, in any case.
fn part(s: &str) -> Option<Part> {
    let lower = s.to_ascii_lowercase();
    let (num, fixed) = if let Some(n) = lower.strip_suffix("percentile") {
        (n, false)
    } else if let Some(n) = lower.strip_suffix("ms") {
        (n, true)
    } else {
        (lower.strip_suffix('p')?, false)
    };
    if num.is_empty() || !num.bytes().all(|c| c.is_ascii_digit() || c == b'.') {
        return None;
    }
    let v: f64 = num.parse().ok()?;
    Some(if fixed {
        Part::Fixed(v as i64)
    } else {
        Part::Percentile(v)
    })
}

/// `^(MIN|MAX)\(([0-9.]+[a-z]+)\s*,\s*([0-9.]+[a-z]+)\)$`, case-insensitive: the function
/// (upper case) and its two arguments.
fn hybrid(s: &str) -> Option<(String, &str, &str)> {
    let fun = s.get(..3)?.to_ascii_uppercase();
    if fun != "MIN" && fun != "MAX" {
        return None;
    }
    let inner = s[3..].strip_prefix('(')?.strip_suffix(')')?;
    let (a, b) = inner.split_once(',')?;
    let ws = |c: char| " \t\n\u{b}\u{c}\r".contains(c);
    let (a, b) = (a.trim_end_matches(ws), b.trim_start_matches(ws));
    let arg = |x: &str| {
        let digits = x
            .bytes()
            .take_while(|c| c.is_ascii_digit() || *c == b'.')
            .count();
        digits > 0 && digits < x.len() && x.bytes().skip(digits).all(|c| c.is_ascii_alphabetic())
    };
    (arg(a) && arg(b)).then_some((fun, a, b))
}

/// `DecimalFormat("#.####")`: at most four decimals, half-even, no trailing zeros.
fn percentile_text(p: f64) -> String {
    let s = format!("{p:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}p")
}

#[cfg(test)]
mod tests {
    use super::policy;

    #[test]
    fn stored_forms_are_normalized() {
        for (given, stored) in [
            ("50PERCENTILE", "50p"),
            ("99.50P", "99.5p"),
            ("99.99999p", "100p"),
            (".5p", "0.5p"),
            ("always", "ALWAYS"),
            ("NONE", "NEVER"),
            ("10.5MS", "10ms"),
            ("min(99p,10ms)", "MIN(99p,10ms)"),
            ("max(10ms , 90percentile)", "MAX(90p,10ms)"),
        ] {
            assert_eq!(policy(given).unwrap(), stored, "{given}");
        }
    }

    #[test]
    fn bad_values_are_refused_with_the_option_named() {
        for (given, msg) in [
            ("bogus", "Invalid value bogus for option 'speculative_retry'"),
            ("100p", "Invalid value 100p for PERCENTILE option 'speculative_retry': must be between (0.0 and 100.0)"),
            ("max(10ms,100p)", "Invalid value max(10ms,100p) for option 'speculative_retry'"),
            ("max(99p,90p)", "Invalid value max(99p,90p) for option 'speculative_retry': MIN()/MAX() arguments should be of different types, but both are of type PERCENTILE"),
            (" 99p", "Invalid value  99p for option 'speculative_retry'"),
            ("99.5.5p", "Invalid value 99.5.5p for option 'speculative_retry'"),
            ("MAX( 10MS , 90PERCENTILE )", "Invalid value MAX( 10MS , 90PERCENTILE ) for option 'speculative_retry'"),
        ] {
            assert_eq!(policy(given).unwrap_err().to_string(), msg, "{given}");
        }
    }
}
