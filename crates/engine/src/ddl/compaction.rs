//! The `compaction` table option as Cassandra 5.0.9 reads it (`CompactionParams.fromMap`, when
//! the statement is parsed) and checks it (`CompactionParams.validate`: the strategy's
//! `validateOptions`, unknown sub-options, then the thresholds). Peregrine compacts its own
//! way; the map is kept and shown as 5.0.9 keeps it.

use super::options::{is_numeric, java_double, java_int};
use crate::EngineError;
use std::collections::BTreeMap;

const PACKAGE: &str = "org.apache.cassandra.db.compaction.";
const STCS: &str = "SizeTieredCompactionStrategy";
const LCS: &str = "LeveledCompactionStrategy";
const TWCS: &str = "TimeWindowCompactionStrategy";
const UCS: &str = "UnifiedCompactionStrategy";

fn config(m: impl Into<String>) -> EngineError {
    EngineError::config(m)
}

/// `CompactionParams.fromMap`: the class resolved, `provide_overlapping_tombstones` checked,
/// `min_threshold`/`max_threshold` added for the strategies that have them.
pub(crate) fn from_map(
    m: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, EngineError> {
    let mut out = m.clone();
    let class = out
        .remove("class")
        .ok_or_else(|| config("Missing sub-option 'class' for the 'compaction' option"))?;
    let full = super::options::full_class(&class, PACKAGE);
    let short = full.strip_prefix(PACKAGE).unwrap_or("");
    if ![STCS, LCS, TWCS, UCS].contains(&short) {
        return Err(config(format!(
            "Unable to find compaction strategy class '{full}'"
        )));
    }
    if let Some(t) = out.get("provide_overlapping_tombstones") {
        let up = t.to_uppercase();
        if !["NONE", "ROW", "CELL"].contains(&up.as_str()) {
            return Err(config(format!("Invalid value {up} for 'provide_overlapping_tombstones' compaction sub-option - must be one of the following [NONE, ROW, CELL].")));
        }
    }
    if short != UCS {
        out.entry("min_threshold".into())
            .or_insert_with(|| "4".into());
        out.entry("max_threshold".into())
            .or_insert_with(|| "32".into());
    }
    out.insert("class".into(), full);
    Ok(out)
}

/// Whether the stored map names the leveled strategy (its tables default to a 0.1 bloom
/// filter chance).
pub(crate) fn is_leveled(m: &BTreeMap<String, String>) -> bool {
    m.get("class")
        .is_some_and(|c| c.strip_prefix(PACKAGE) == Some(LCS))
}

/// `CompactionParams.validate` of a stored map.
pub(crate) fn validate(m: &BTreeMap<String, String>) -> Result<(), EngineError> {
    let short = m
        .get("class")
        .and_then(|c| c.strip_prefix(PACKAGE))
        .unwrap_or(STCS)
        .to_string();
    let mut opts = m.clone();
    opts.remove("class");
    let mut unchecked = common(&opts)?;
    match short.as_str() {
        LCS => {
            positive_int(&opts, "sstable_size_in_mb", &mut unchecked)?;
            positive_int(&opts, "fanout_size", &mut unchecked)?;
            unchecked.remove("single_sstable_uplevel");
            size_tiered(&opts, &mut unchecked)?;
        }
        TWCS => {
            time_window(&opts, &mut unchecked)?;
            size_tiered(&opts, &mut unchecked)?;
        }
        UCS => unified(&opts, &mut unchecked)?,
        _ => size_tiered(&opts, &mut unchecked)?,
    }
    if short != UCS {
        unchecked.remove("min_threshold");
        unchecked.remove("max_threshold");
    }
    if !unchecked.is_empty() {
        return Err(config(format!(
            "Properties specified [{}] are not understood by {short}",
            // 5.0.9 lists them sorted (its map of sub-options is sorted).
            unchecked.keys().cloned().collect::<Vec<_>>().join(", ")
        )));
    }
    thresholds(&opts)
}

/// `AbstractCompactionStrategy.validateOptions`: the sub-options every strategy has; answers
/// the ones left to check.
fn common(o: &BTreeMap<String, String>) -> Result<BTreeMap<String, String>, EngineError> {
    if let Some(t) = o.get("tombstone_threshold") {
        let v = java_double(t).ok_or_else(|| {
            config(format!(
                "{t} is not a parsable int (base10) for tombstone_threshold"
            ))
        })? as f32;
        if v < 0.0 {
            return Err(config(format!(
                "tombstone_threshold must be greater than 0, but was {:.6}",
                f64::from(v)
            )));
        }
    }
    if let Some(t) = o.get("tombstone_compaction_interval") {
        let v: i64 = t.parse().map_err(|_| {
            config(format!(
                "{t} is not a parsable int (base10) for tombstone_compaction_interval"
            ))
        })?;
        if v < 0 {
            return Err(config(format!(
                "tombstone_compaction_interval must be greater than 0, but was {v}"
            )));
        }
    }
    if let Some(u) = o.get("unchecked_tombstone_compaction") {
        if !is_bool(u) {
            return Err(config(format!(
                "'unchecked_tombstone_compaction' should be either 'true' or 'false', not '{u}'"
            )));
        }
    }
    if let Some(l) = o.get("log_all") {
        if !is_bool(l) {
            return Err(config(format!(
                "'log_all' should either be 'true' or 'false', not {l}"
            )));
        }
    }
    if let Some(e) = o.get("enabled") {
        if !is_bool(e) {
            return Err(config(format!(
                "enabled should either be 'true' or 'false', not {e}"
            )));
        }
    }
    let mut rest = o.clone();
    for k in [
        "tombstone_threshold",
        "tombstone_compaction_interval",
        "unchecked_tombstone_compaction",
        "log_all",
        "enabled",
        "only_purge_repaired_tombstones",
        "provide_overlapping_tombstones",
    ] {
        rest.remove(k);
    }
    Ok(rest)
}

fn is_bool(s: &str) -> bool {
    s.eq_ignore_ascii_case("true") || s.eq_ignore_ascii_case("false")
}

/// An int sub-option that must be at least 1 (leveled's `sstable_size_in_mb`, `fanout_size`).
fn positive_int(
    o: &BTreeMap<String, String>,
    key: &str,
    unchecked: &mut BTreeMap<String, String>,
) -> Result<(), EngineError> {
    if let Some(s) = o.get(key) {
        let v: i32 = s
            .parse()
            .map_err(|_| config(format!("{s} is not a parsable int (base10) for {key}")))?;
        if v < 1 {
            return Err(config(format!("{key} must be larger than 0, but was {v}")));
        }
    }
    unchecked.remove(key);
    Ok(())
}

/// `SizeTieredCompactionStrategyOptions.validateOptions`.
fn size_tiered(
    o: &BTreeMap<String, String>,
    unchecked: &mut BTreeMap<String, String>,
) -> Result<(), EngineError> {
    if let Some(s) = o.get("min_sstable_size") {
        let v: i64 = s.parse().map_err(|_| {
            config(format!(
                "{s} is not a parsable int (base10) for min_sstable_size"
            ))
        })?;
        if v < 0 {
            return Err(config(format!(
                "min_sstable_size must be non negative: {v}"
            )));
        }
    }
    let double = |key: &str, default: f64| match o.get(key) {
        None => Ok(default),
        Some(s) => {
            java_double(s).ok_or_else(|| config(format!("{s} is not a parsable float for {key}")))
        }
    };
    let low = double("bucket_low", 0.5)?;
    let high = double("bucket_high", 1.5)?;
    if high <= low {
        return Err(config(format!(
            "bucket_high value ({}) is less than or equal to the bucket_low value ({})",
            crate::javafmt::java_double(high),
            crate::javafmt::java_double(low)
        )));
    }
    for k in ["min_sstable_size", "bucket_low", "bucket_high"] {
        unchecked.remove(k);
    }
    Ok(())
}

/// `TimeWindowCompactionStrategyOptions.validateOptions` (before its size-tiered part).
fn time_window(
    o: &BTreeMap<String, String>,
    unchecked: &mut BTreeMap<String, String>,
) -> Result<(), EngineError> {
    let unit = |key: &str, valid: &[&str]| match o.get(key) {
        Some(u) if !valid.contains(&u.as_str()) => {
            Err(config(format!("{u} is not valid for {key}")))
        }
        _ => Ok(()),
    };
    unit(
        "timestamp_resolution",
        &["SECONDS", "MILLISECONDS", "MICROSECONDS", "NANOSECONDS"],
    )?;
    unit("compaction_window_unit", &["MINUTES", "HOURS", "DAYS"])?;
    if let Some(s) = o.get("compaction_window_size") {
        let v: i32 = s.parse().map_err(|_| {
            config(format!(
                "{s} is not a parsable int (base10) for compaction_window_size"
            ))
        })?;
        if v < 1 {
            return Err(config(format!(
                "{v} must be greater than 1 for compaction_window_size"
            )));
        }
    }
    let key = "expired_sstable_check_frequency_seconds";
    if let Some(s) = o.get(key) {
        let v: i64 = s
            .parse()
            .map_err(|_| config(format!("{s} is not a parsable int (base10) for {key}")))?;
        if v < 0 {
            return Err(config(format!("{key} must not be negative, but was {v}")));
        }
    }
    let key = "unsafe_aggressive_sstable_expiration";
    if let Some(s) = o.get(key) {
        if !is_bool(s) {
            return Err(config(format!("{key} is not 'true' or 'false' ({s})")));
        }
        if s.eq_ignore_ascii_case("true") {
            return Err(config(format!("{key} is requested but not allowed, restart cassandra with -Dcassandra.allow_unsafe_aggressive_sstable_expiration=true to allow it")));
        }
    }
    for k in [
        "compaction_window_size",
        "compaction_window_unit",
        "timestamp_resolution",
        "expired_sstable_check_frequency_seconds",
        "unsafe_aggressive_sstable_expiration",
    ] {
        unchecked.remove(k);
    }
    Ok(())
}

/// The unified strategy's `Controller.validateOptions`, in its order, with the answers read
/// off 5.0.9.
fn unified(
    o: &BTreeMap<String, String>,
    unchecked: &mut BTreeMap<String, String>,
) -> Result<(), EngineError> {
    if let Some(s) = o.get("scaling_parameters") {
        // Java's `split(",")`: trailing empty parts dropped, a lone empty one kept.
        let mut parts: Vec<&str> = s.split(',').collect();
        while parts.len() > 1 && parts.last() == Some(&"") {
            parts.pop();
        }
        for p in parts.into_iter().map(str::trim) {
            if !scaling_parameter(p) {
                return Err(config(format!(
                    "Scaling parameter {p} must match N|L[0-9]+|T[0-9]+|[+-]?[0-9]+"
                )));
            }
        }
    }
    if let Some(s) = o.get("base_shard_count") {
        let v: i32 = s.parse().map_err(|_| {
            config(format!(
                "{s} is not a parsable int (base10) for base_shard_count"
            ))
        })?;
        if v <= 0 {
            return Err(config(format!(
                "Invalid configuration, base_shard_count should be positive: {v}"
            )));
        }
    }
    let mut target = 1i64 << 30;
    for key in ["target_sstable_size", "flush_size_override"] {
        if let Some(s) = o.get(key) {
            let v = size_bytes(s)
                .map_err(|e| config(format!("{key} {s} is not a valid size in bytes: {e}")))?;
            if v < 1 << 20 {
                return Err(config(format!(
                    "{key} {s} is not acceptable, size must be at least 1.000MiB"
                )));
            }
            if key == "target_sstable_size" {
                target = v;
            }
        }
    }
    if let Some(s) = o.get("min_sstable_size") {
        let v = size_bytes(s).map_err(|_| {
            config(format!(
                "{s} is not a valid size in bytes for min_sstable_size"
            ))
        })?;
        if v as f64 >= target as f64 * std::f64::consts::FRAC_1_SQRT_2 {
            return Err(config(format!("Invalid configuration, min_sstable_size ({}) should be less than 70% of the targetSSTableSize ({})", pretty_bytes(v), pretty_bytes(target))));
        }
    }
    if let Some(s) = o.get("sstable_growth") {
        let v = match s.strip_suffix('%') {
            Some(p) => java_double(p).map(|v| v / 100.0),
            None => java_double(s),
        }
        .ok_or_else(|| {
            config(format!(
                "sstable_growth is not a valid number between 0 and 1: For input string: \"{s}\""
            ))
        })?;
        if !(0.0..=1.0).contains(&v) {
            return Err(config(format!(
                "sstable_growth {s} must be between 0 and 1"
            )));
        }
    }
    if let Some(s) = o.get("max_sstables_to_compact") {
        s.parse::<i32>().map_err(|_| {
            config(format!(
                "{s} is not a parsable int (base10) for max_sstables_to_compact"
            ))
        })?;
    }
    let key = "expired_sstable_check_frequency_seconds";
    if let Some(s) = o.get(key) {
        let v = s
            .parse::<i64>()
            .map_err(|_| config(format!("{s} is not a parsable long (base10) for {key}")))?;
        if v <= 0 {
            return Err(config(format!(
                "Invalid configuration, {key} should be positive: {v}"
            )));
        }
    }
    let key = "unsafe_aggressive_sstable_expiration";
    if let Some(s) = o.get(key) {
        if !is_bool(s) {
            return Err(config(format!(
                "{key} should either be 'true' or 'false', not {s}"
            )));
        }
    }
    if let Some(s) = o.get("overlap_inclusion_method") {
        if !["NONE", "SINGLE", "TRANSITIVE"].contains(&s.to_uppercase().as_str()) {
            return Err(config(format!("Invalid overlap inclusion method {s}. The valid options are [NONE, SINGLE, TRANSITIVE].")));
        }
    }
    for k in [
        "scaling_parameters",
        "base_shard_count",
        "target_sstable_size",
        "min_sstable_size",
        "sstable_growth",
        "max_sstables_to_compact",
        "flush_size_override",
        "overlap_inclusion_method",
        "expired_sstable_check_frequency_seconds",
        "unsafe_aggressive_sstable_expiration",
    ] {
        unchecked.remove(k);
    }
    Ok(())
}

/// `FBUtilities.parseHumanReadableBytes`: a number, optional spaces, a binary (`Ki`..`Ei`) or
/// decimal (`k`..`E`) prefix, then `B`; the error text is the JDK exception's message.
fn size_bytes(s: &str) -> Result<i64, String> {
    let body = s
        .strip_suffix('B')
        .ok_or_else(|| format!("{s} does not end in unit B"))?;
    let b = body.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i > start
    };
    if !digits(&mut i) {
        return Err("null".into());
    }
    if b.get(i) == Some(&b'.') {
        let mut j = i + 1;
        if digits(&mut j) {
            i = j;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if digits(&mut j) {
            i = j;
        }
    }
    let number: f64 = body[..i].parse().map_err(|_| "null".to_string())?;
    let prefix = body[i..].trim_start();
    let scale = match prefix {
        "" => 1.0,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        _ => {
            return Err(format!(
                "Unexpected characters between pos {i} and {} in {s}",
                body.len()
            ))
        }
    };
    Ok((number * scale) as i64)
}

/// `FBUtilities.prettyPrintMemory`: three decimals of the largest binary unit that fits.
fn pretty_bytes(v: i64) -> String {
    let v = v as f64;
    for (unit, size) in [("GiB", 30), ("MiB", 20), ("KiB", 10)] {
        let scale = (1i64 << size) as f64;
        if v >= scale {
            return format!("{:.3}{unit}", v / scale);
        }
    }
    format!("{v}B")
}

/// `N|L[0-9]+|T[0-9]+|[+-]?[0-9]+`.
fn scaling_parameter(p: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    p == "N"
        || p.strip_prefix('L').is_some_and(digits)
        || p.strip_prefix('T').is_some_and(digits)
        || digits(p.strip_prefix(['+', '-']).unwrap_or(p))
}

/// The threshold checks after the strategy's own: integers, not 0 (compaction is disabled
/// with `enabled`), min at least 2 and at most max.
fn thresholds(o: &BTreeMap<String, String>) -> Result<(), EngineError> {
    for key in ["min_threshold", "max_threshold"] {
        if let Some(s) = o.get(key) {
            if !is_numeric(s) {
                return Err(config(format!(
                    "Invalid value {s} for '{key}' compaction sub-option - must be an integer"
                )));
            }
        }
    }
    let read = |key: &str, default: i32| match o.get(key) {
        Some(s) => java_int(s),
        None => Ok(default),
    };
    let min = read("min_threshold", 4)?;
    let max = read("max_threshold", 32)?;
    if min <= 0 || max <= 0 {
        return Err(config("Disabling compaction by setting compaction thresholds to 0 has been removed, set the compaction option 'enabled' to false instead."));
    }
    if min <= 1 {
        return Err(config(format!(
            "Min compaction threshold cannot be less than 2 (got {min})"
        )));
    }
    if min > max {
        return Err(config(format!("Min compaction threshold (got {min}) cannot be greater than max compaction threshold (got {max})")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ddl::options::test_map as map;

    fn check(pairs: &[(&str, &str)]) -> Result<(), String> {
        from_map(&map(pairs))
            .and_then(|m| validate(&m))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn strategy_checks_run_before_unknowns_and_thresholds() {
        assert_eq!(
            check(&[("class", STCS), ("bogus", "1"), ("min_threshold", "1")]),
            Err(
                "Properties specified [bogus] are not understood by SizeTieredCompactionStrategy"
                    .into()
            )
        );
        assert_eq!(
            check(&[
                ("class", LCS),
                ("sstable_size_in_mb", "x"),
                ("tombstone_threshold", "y")
            ]),
            Err("y is not a parsable int (base10) for tombstone_threshold".into())
        );
        assert_eq!(
            check(&[("class", STCS), ("tombstone_threshold", "-0.5")]),
            Err("tombstone_threshold must be greater than 0, but was -0.500000".into())
        );
        assert_eq!(
            check(&[
                ("class", STCS),
                ("bucket_low", "0.9"),
                ("bucket_high", "0.8")
            ]),
            Err(
                "bucket_high value (0.8) is less than or equal to the bucket_low value (0.9)"
                    .into()
            )
        );
        assert_eq!(
            check(&[("class", UCS), ("min_threshold", "2")]),
            Err("Properties specified [min_threshold] are not understood by UnifiedCompactionStrategy".into())
        );
        assert!(check(&[("class", UCS), ("scaling_parameters", "T4, L10 ,N,-2,+3")]).is_ok());
        assert!(check(&[("class", TWCS), ("compaction_window_unit", "DAYS")]).is_ok());
        assert!(check(&[("class", UCS), ("scaling_parameters", "T4,")]).is_ok());
        assert!(check(&[("class", UCS), ("target_sstable_size", "1 MiB")]).is_ok());
        assert_eq!(
            check(&[("class", UCS), ("target_sstable_size", "1XB")]),
            Err("target_sstable_size 1XB is not a valid size in bytes: Unexpected characters between pos 1 and 2 in 1XB".into())
        );
        assert_eq!(
            check(&[("class", UCS), ("target_sstable_size", "10MiB"), ("min_sstable_size", "8MiB")]),
            Err("Invalid configuration, min_sstable_size (8.000MiB) should be less than 70% of the targetSSTableSize (10.000MiB)".into())
        );
    }

    #[test]
    fn thresholds_are_numbers_in_order() {
        assert_eq!(
            check(&[("class", STCS), ("min_threshold", "-1")]),
            Err(
                "Invalid value -1 for 'min_threshold' compaction sub-option - must be an integer"
                    .into()
            )
        );
        assert_eq!(
            check(&[("class", STCS), ("max_threshold", "3")]),
            Err("Min compaction threshold (got 4) cannot be greater than max compaction threshold (got 3)".into())
        );
        assert!(check(&[("class", STCS), ("min_threshold", "99999999999")])
            .unwrap_err()
            .contains("NumberFormatException"));
    }
}
