//! Table options (`WITH ...` of CREATE/ALTER TABLE and MATERIALIZED VIEW) read and checked as
//! Cassandra 5.0.9 does: the values are parsed in `TableAttributes.build`'s fixed order (not
//! the statement's), then the names are checked, then the whole set is checked
//! in `TableParams.validate`'s order. ALTER checks twice, as 5.0.9 does: the given options over
//! the defaults (`attrs.validate()`), then over the table's current options. Compaction and
//! compression maps are checked in `compaction` and `compression`.

use super::{compaction, compression, table_id};
use crate::catalog::TableOptions;
use crate::EngineError;
use cql::ast::{self, Property, PropertyValue};
use std::collections::BTreeMap;

/// The names a table option may have (`TableParams.Option`, `id`, Peregrine's `visibility`).
const NAMES: &[&str] = &[
    "id",
    "allow_auto_snapshot",
    "bloom_filter_fp_chance",
    "caching",
    "comment",
    "compaction",
    "compression",
    "memtable",
    "default_time_to_live",
    "extensions",
    "gc_grace_seconds",
    "incremental_backups",
    "max_index_interval",
    "memtable_flush_period_in_ms",
    "min_index_interval",
    "speculative_retry",
    "additional_write_policy",
    "crc_check_chance",
    "cdc",
    "read_repair",
    "visibility",
];

/// `Attributes.MAX_TTL`: 20 years in seconds.
const MAX_TTL: i32 = 630_720_000;

/// `BloomCalculations.minSupportedBloomFilterFpChance()`, as 5.0.9 prints it.
const MIN_BLOOM_FP_CHANCE: f64 = 6.71e-5;

/// The options of a new table (or view): `props` over Cassandra's defaults; answers the table
/// id one sets.
pub(crate) fn new_table(
    props: &[Property],
) -> Result<(TableOptions, Option<[u8; 16]>), EngineError> {
    let mut opts = TableOptions::default();
    let id = apply(&mut opts, props, true)?;
    Ok((opts, id))
}

/// Applies `props` to `opts` (an ALTER when `fresh` is false), with 5.0.9's checks and order.
pub(crate) fn apply(
    opts: &mut TableOptions,
    props: &[Property],
    fresh: bool,
) -> Result<Option<[u8; 16]>, EngineError> {
    // 5.0.9 reads the values before it looks at the names: a bad value of a known option is
    // answered before an unknown option.
    let over_defaults = build(&TableOptions::default(), props, true)?;
    if let Some(p) = props.iter().find(|p| !NAMES.contains(&p.name.as_str())) {
        return Err(EngineError::syntax(format!(
            "Unknown property '{}'",
            p.name
        )));
    }
    validate(&over_defaults)?;
    let mut next = if fresh {
        over_defaults
    } else {
        let next = build(opts, props, false)?;
        validate(&next)?;
        next
    };
    // A Peregrine extension (docs/visibility.md), read over the table's own setting.
    if let Some(v) = ast::find_property(props, "visibility") {
        next.visibility =
            crate::labels::table_option(opts.visibility, &prop_map(v, "visibility")?)?;
    }
    *opts = next;
    table_id::of(props)
}

/// `TableAttributes.build`: each given option parsed in this order, over `base`. A new
/// table's `bloom_filter_fp_chance` defaults by its compaction class (0.1 for leveled).
fn build(
    base: &TableOptions,
    props: &[Property],
    fresh: bool,
) -> Result<TableOptions, EngineError> {
    let mut o = base.clone();
    let get = |name: &'static str| ast::find_property(props, name).map(|v| (v, name));
    if let Some((v, n)) = get("allow_auto_snapshot") {
        o.allow_auto_snapshot = prop_bool(v, n)?;
    }
    let bloom = get("bloom_filter_fp_chance")
        .map(|(v, n)| prop_f64(v, n))
        .transpose()?;
    if let Some((v, n)) = get("caching") {
        o.caching = caching(&prop_map(v, n)?)?;
    }
    if let Some((v, n)) = get("comment") {
        o.comment = prop_text(v, n)?;
    }
    if let Some((v, n)) = get("compaction") {
        o.compaction = compaction::from_map(&prop_map(v, n)?)?;
    }
    if let Some((v, n)) = get("compression") {
        o.compression = compression::from_map(&prop_map(v, n)?)?;
    }
    // Cassandra 5.0's memtable implementation, by the name of a configuration in its
    // cassandra.yaml; a stock node has only `default`, as Peregrine (one memtable).
    if let Some((v, n)) = get("memtable") {
        let m = prop_text(v, n)?;
        if m != "default" {
            return Err(EngineError::config(format!(
                "Memtable configuration \"{m}\" not found."
            )));
        }
    }
    if let Some((v, n)) = get("default_time_to_live") {
        o.default_time_to_live = prop_int(v, n)?;
    }
    if let Some((v, n)) = get("gc_grace_seconds") {
        o.gc_grace_seconds = prop_int(v, n)?;
    }
    if let Some((v, n)) = get("incremental_backups") {
        o.incremental_backups = prop_bool(v, n)?;
    }
    if let Some((v, n)) = get("max_index_interval") {
        o.max_index_interval = prop_int(v, n)?;
    }
    if let Some((v, n)) = get("memtable_flush_period_in_ms") {
        o.memtable_flush_period_in_ms = prop_int(v, n)?;
    }
    if let Some((v, n)) = get("min_index_interval") {
        o.min_index_interval = prop_int(v, n)?;
    }
    if let Some((v, n)) = get("speculative_retry") {
        o.speculative_retry = super::retry::policy(&prop_text(v, n)?)?;
    }
    if let Some((v, n)) = get("additional_write_policy") {
        o.additional_write_policy = super::retry::policy(&prop_text(v, n)?)?;
    }
    if let Some((v, n)) = get("crc_check_chance") {
        o.crc_check_chance = prop_f64(v, n)?;
    }
    if let Some((v, n)) = get("cdc") {
        o.cdc = prop_bool(v, n)?;
    }
    if let Some((v, n)) = get("read_repair") {
        o.read_repair = read_repair(&prop_text(v, n)?)?;
    }
    o.bloom_filter_fp_chance = match bloom {
        Some(b) => b,
        None if fresh => {
            if compaction::is_leveled(&o.compaction) {
                0.1
            } else {
                0.01
            }
        }
        None => o.bloom_filter_fp_chance,
    };
    Ok(o)
}

/// `TableParams.validate`, in its order.
fn validate(o: &TableOptions) -> Result<(), EngineError> {
    compaction::validate(&o.compaction)?;
    let fail = |m: String| Err(EngineError::config(m));
    let bloom = o.bloom_filter_fp_chance;
    if bloom <= MIN_BLOOM_FP_CHANCE || bloom > 1.0 {
        return fail(format!(
            "bloom_filter_fp_chance must be larger than {} and less than or equal to 1.0 (got {})",
            crate::javafmt::java_double(MIN_BLOOM_FP_CHANCE),
            crate::javafmt::java_double(bloom)
        ));
    }
    let crc = o.crc_check_chance;
    if !(0.0..=1.0).contains(&crc) {
        return fail(format!("crc_check_chance must be larger than or equal to 0 and smaller than or equal to 1.0 (got {})", crate::javafmt::java_double(crc)));
    }
    let ttl = o.default_time_to_live;
    if ttl < 0 {
        return fail(format!(
            "default_time_to_live must be greater than or equal to 0 (got {ttl})"
        ));
    }
    if ttl > MAX_TTL {
        return fail(format!(
            "default_time_to_live must be less than or equal to {MAX_TTL} (got {ttl})"
        ));
    }
    if o.gc_grace_seconds < 0 {
        return fail(format!(
            "gc_grace_seconds must be greater than or equal to 0 (got {})",
            o.gc_grace_seconds
        ));
    }
    if o.min_index_interval < 1 {
        return fail(format!(
            "min_index_interval must be greater than or equal to 1 (got {})",
            o.min_index_interval
        ));
    }
    if o.max_index_interval < o.min_index_interval {
        return fail(format!(
            "max_index_interval must be greater than or equal to min_index_interval ({}) (got {})",
            o.min_index_interval, o.max_index_interval
        ));
    }
    if o.memtable_flush_period_in_ms < 0 {
        return fail(format!(
            "memtable_flush_period_in_ms must be greater than or equal to 0 (got {})",
            o.memtable_flush_period_in_ms
        ));
    }
    Ok(())
}

/// `CachingParams.fromMap`: `keys` ALL or NONE (absent: NONE), `rows_per_partition` ALL, NONE
/// or a count, shown normalized.
fn caching(m: &BTreeMap<String, String>) -> Result<BTreeMap<String, String>, EngineError> {
    let mut rest = m.clone();
    let keys = match rest.remove("keys") {
        None => "NONE",
        Some(k) if k.eq_ignore_ascii_case("ALL") => "ALL",
        Some(k) if k.eq_ignore_ascii_case("NONE") => "NONE",
        Some(k) => {
            return Err(EngineError::config(format!(
            "Invalid value '{k}' for caching sub-option 'keys': only 'ALL' and 'NONE' are allowed"
        )))
        }
    };
    let rows = match rest.remove("rows_per_partition") {
        None => "NONE".to_string(),
        Some(r) if r.eq_ignore_ascii_case("ALL") => "ALL".into(),
        Some(r) if r.eq_ignore_ascii_case("NONE") => "NONE".into(),
        Some(r) if is_numeric(&r) => match java_int(&r)? {
            0 => "NONE".into(),
            i32::MAX => "ALL".into(),
            n => n.to_string(),
        },
        Some(r) => return Err(EngineError::config(format!("Invalid value '{r}' for caching sub-option 'rows_per_partition': only 'ALL', 'NONE', and integer values are allowed"))),
    };
    if !rest.is_empty() {
        return Err(EngineError::config(format!(
            "Invalid caching sub-options [{}]: only 'keys' and 'rows_per_partition' are allowed",
            hash_order(rest.keys()).join(", ")
        )));
    }
    Ok([
        ("keys".to_string(), keys.to_string()),
        ("rows_per_partition".to_string(), rows),
    ]
    .into())
}

/// `ReadRepairStrategy.fromString`: BLOCKING or NONE in any case, else the enum's own error.
fn read_repair(s: &str) -> Result<String, EngineError> {
    let up = s.to_uppercase();
    match up.as_str() {
        "BLOCKING" | "NONE" => Ok(up),
        _ => Err(EngineError::server(format!("java.lang.IllegalArgumentException: No enum constant org.apache.cassandra.service.reads.repair.ReadRepairStrategy.{up}"))),
    }
}

/// Keys in the order a `java.util.HashMap` holding them iterates: how Cassandra lists
/// unknown sub-options.
pub(super) fn hash_order<'a>(keys: impl Iterator<Item = &'a String>) -> Vec<&'a str> {
    crate::javafmt::java_hash_set_order(keys.map(String::as_str).collect(), |k| {
        crate::javafmt::string_hash_code(k)
    })
}

/// A class name as Cassandra resolves one: as written when qualified, else in `package`.
pub(super) fn full_class(class: &str, package: &str) -> String {
    if class.contains('.') {
        class.to_string()
    } else {
        format!("{package}{class}")
    }
}

/// A sub-option map from pairs (tests).
#[cfg(test)]
pub(super) fn test_map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Commons-lang's `StringUtils.isNumeric`: not empty, digits only (no sign).
pub(super) fn is_numeric(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// `Integer.parseInt` of text that may overflow: the JDK's `NumberFormatException`, which
/// 5.0.9 answers as a server error.
pub(super) fn java_int(s: &str) -> Result<i32, EngineError> {
    s.parse().map_err(|_| EngineError::server(number_format(s)))
}

/// The text of a `java.lang.NumberFormatException` for `s`, as a server error shows it.
pub(super) fn number_format(s: &str) -> String {
    format!("java.lang.NumberFormatException: For input string: \"{s}\"")
}

/// `Double.parseDouble`: surrounding control characters and spaces ignored, a sign, decimal
/// digits with an optional exponent and `d`/`f` suffix, `NaN`, `Infinity`.
pub(super) fn java_double(s: &str) -> Option<f64> {
    let t = s.trim_matches(|c: char| c <= ' ');
    let (neg, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let v = match body {
        "NaN" => f64::NAN,
        "Infinity" => f64::INFINITY,
        _ => {
            let b = body.strip_suffix(['d', 'D', 'f', 'F']).unwrap_or(body);
            let starts = b
                .bytes()
                .next()
                .is_some_and(|c| c.is_ascii_digit() || c == b'.');
            if !starts
                || !b
                    .bytes()
                    .all(|c| c.is_ascii_digit() || b"+-.eE".contains(&c))
            {
                return None;
            }
            b.parse().ok()?
        }
    };
    Some(if neg { -v } else { v })
}

fn prop_text(v: &PropertyValue, name: &str) -> Result<String, EngineError> {
    v.as_text().ok_or_else(|| {
        EngineError::syntax(format!(
            "Invalid value for property '{name}'. It should be a string"
        ))
    })
}

/// A boolean property as Cassandra reads one: `1`, `true`, `yes` or `0`, `false`, `no`, in any
/// case.
fn prop_bool(v: &PropertyValue, name: &str) -> Result<bool, EngineError> {
    let s = prop_text(v, name)?;
    match s.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" => Ok(true),
        "0" | "false" | "no" => Ok(false),
        _ => Err(EngineError::syntax(format!(
            "Invalid boolean value {s} for '{name}'. Positive values can be '1', 'true' or 'yes'. Negative values can be '0', 'false' or 'no'."
        ))),
    }
}

fn prop_int(v: &PropertyValue, name: &str) -> Result<i32, EngineError> {
    let s = prop_text(v, name)?;
    s.parse()
        .map_err(|_| EngineError::syntax(format!("Invalid integer value {s} for '{name}'")))
}

fn prop_f64(v: &PropertyValue, name: &str) -> Result<f64, EngineError> {
    let s = prop_text(v, name)?;
    java_double(&s)
        .ok_or_else(|| EngineError::syntax(format!("Invalid double value {s} for '{name}'")))
}

fn prop_map(v: &PropertyValue, name: &str) -> Result<BTreeMap<String, String>, EngineError> {
    v.as_map()
        .map(|m| m.iter().cloned().collect())
        .ok_or_else(|| {
            EngineError::syntax(format!(
                "Invalid value for property '{name}'. It should be a map."
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::test_map as map;
    use super::*;

    #[test]
    fn caching_normalizes_and_defaults_keys_to_none() {
        let c = caching(&map(&[("rows_per_partition", "0100")])).unwrap();
        assert_eq!(c, map(&[("keys", "NONE"), ("rows_per_partition", "100")]));
        let c = caching(&map(&[("keys", "all"), ("rows_per_partition", "all")])).unwrap();
        assert_eq!(c, map(&[("keys", "ALL"), ("rows_per_partition", "ALL")]));
        let e = caching(&map(&[("bogus", "1"), ("zz", "2")])).unwrap_err();
        assert!(e.to_string().contains("[zz, bogus]"), "{e}");
    }

    #[test]
    fn java_double_reads_what_the_jdk_reads() {
        assert_eq!(java_double(" 1e-2 "), Some(0.01));
        assert_eq!(java_double("1.5f"), Some(1.5));
        assert_eq!(java_double("-.5"), Some(-0.5));
        assert_eq!(java_double("inf"), None);
        assert_eq!(java_double("x"), None);
        assert_eq!(java_double("+-1"), None);
    }

    #[test]
    fn read_repair_is_an_enum_in_any_case() {
        assert_eq!(read_repair("none").unwrap(), "NONE");
        assert!(read_repair("bogus")
            .unwrap_err()
            .to_string()
            .ends_with("ReadRepairStrategy.BOGUS"));
    }
}
