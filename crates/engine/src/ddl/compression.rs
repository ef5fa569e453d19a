//! The `compression` table option as Cassandra 5.0.9's `CompressionParams.fromMap` reads and
//! checks it, in its order: `class` (or `enabled` false with nothing else, or `{}`),
//! `chunk_length_in_kb`, `min_compress_ratio`, the compressor's class and `create()` options,
//! unknown sub-options, then a power-of-two chunk and the ratio's range. Peregrine does not
//! compress by this option; the map is kept and shown as 5.0.9 keeps it.

use super::options::{hash_order, java_double, number_format};
use crate::EngineError;
use std::collections::BTreeMap;

const PACKAGE: &str = "org.apache.cassandra.io.compress.";

fn config(m: impl Into<String>) -> EngineError {
    EngineError::config(m)
}

/// The stored map of `m`.
pub(crate) fn from_map(
    m: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, EngineError> {
    let enabled = m
        .get("enabled")
        .map(|e| e.eq_ignore_ascii_case("true"))
        .unwrap_or(!m.is_empty());
    if !m.is_empty() && enabled && !m.contains_key("class") {
        return Err(config(
            "Missing sub-option 'class' for the 'compression' option.",
        ));
    }
    let mut rest = m.clone();
    rest.remove("enabled");
    if !enabled {
        if !rest.is_empty() {
            return Err(config(
                "If the 'enabled' option is set to false no other options must be specified",
            ));
        }
        return Ok([("enabled".to_string(), "false".to_string())].into());
    }
    let class = rest.remove("class").unwrap_or_default();
    if class.is_empty() {
        return Err(config(
            "The 'class' option must not be empty. To disable compression use 'enabled' : false",
        ));
    }
    let chunk_kb = match rest.remove("chunk_length_in_kb") {
        None => 16,
        Some(s) => {
            let v: i32 = s
                .parse()
                .map_err(|_| config("Invalid value for chunk_length_in_kb"))?;
            if v > i32::MAX / 1024 {
                return Err(config(format!(
                    "Value of chunk_length_in_kb is too large ({v})"
                )));
            }
            if v <= 0 {
                return Err(config("Invalid negative or null chunk_length_in_kb"));
            }
            v
        }
    };
    let ratio = match rest.remove("min_compress_ratio") {
        None => 0.0,
        Some(s) => java_double(&s).ok_or_else(|| EngineError::server(number_format(&s)))?,
    };
    let full = super::options::full_class(&class, PACKAGE);
    let short = full.strip_prefix(PACKAGE).unwrap_or("");
    let supported: &[&str] = match short {
        "LZ4Compressor" => {
            lz4(&rest)?;
            &["lz4_compressor_type", "lz4_high_compressor_level"]
        }
        "ZstdCompressor" => {
            zstd(&rest)?;
            &["compression_level"]
        }
        "SnappyCompressor" | "DeflateCompressor" | "NoopCompressor" => &[],
        _ => {
            return Err(config(format!(
                "Could not create Compression for type {full}"
            )))
        }
    };
    if let Some(k) = hash_order(rest.keys())
        .into_iter()
        .find(|k| !supported.contains(k))
    {
        return Err(config(format!("Unknown compression options {k}")));
    }
    if chunk_kb & (chunk_kb - 1) != 0 {
        return Err(config("chunk_length_in_kb must be a power of 2"));
    }
    if ratio != 0.0 && ratio < 1.0 {
        return Err(config(
            "min_compress_ratio can either be 0 or greater than or equal to 1",
        ));
    }
    rest.insert("class".into(), full);
    rest.insert("chunk_length_in_kb".into(), chunk_kb.to_string());
    if ratio != 0.0 {
        rest.insert(
            "min_compress_ratio".into(),
            crate::javafmt::java_double(ratio),
        );
    }
    Ok(rest)
}

/// `LZ4Compressor.create`: the compressor type (`fast` or `high`) and the high level (1-17).
fn lz4(o: &BTreeMap<String, String>) -> Result<(), EngineError> {
    if let Some(t) = o.get("lz4_compressor_type") {
        if t != "high" && t != "fast" {
            return Err(config(format!("Invalid compressor type '{t}' specified for LZ4 parameter 'lz4_compressor_type'. Valid options are [high, fast].")));
        }
    }
    if let Some(l) = o.get("lz4_high_compressor_level") {
        if !l.parse::<i32>().is_ok_and(|v| (1..=17).contains(&v)) {
            return Err(config(format!("Invalid value [{l}] for parameter 'lz4_high_compressor_level'. Value must be between 1 and 17.")));
        }
    }
    Ok(())
}

/// `ZstdCompressor.create`: the level within zstd's range, errors wrapped as reflection wraps
/// them.
fn zstd(o: &BTreeMap<String, String>) -> Result<(), EngineError> {
    let Some(l) = o.get("compression_level") else {
        return Ok(());
    };
    let wrapped = |e: String| config(format!("ZstdCompressor.create() threw an error: {e}"));
    let v: i32 = l.parse().map_err(|_| {
        wrapped(format!(
            "java.lang.NumberFormatException For input string: \"{l}\""
        ))
    })?;
    if !(-131_072..=22).contains(&v) {
        return Err(wrapped(format!(
            "java.lang.IllegalArgumentException compression_level={v} is invalid"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ddl::options::test_map as map;

    fn err(pairs: &[(&str, &str)]) -> String {
        from_map(&map(pairs)).unwrap_err().to_string()
    }

    #[test]
    fn refusals_in_5_0_9_order() {
        assert_eq!(
            err(&[
                ("class", "LZ4Compressor"),
                ("chunk_length_in_kb", "3"),
                ("bogus", "1")
            ]),
            "Unknown compression options bogus"
        );
        assert_eq!(
            err(&[("class", "LZ4Compressor"), ("bogus", "3"), ("zz", "1")]),
            "Unknown compression options zz"
        );
        assert_eq!(
            err(&[("class", "Bogus"), ("chunk_length_in_kb", "x")]),
            "Invalid value for chunk_length_in_kb"
        );
        assert_eq!(
            err(&[("enabled", "false"), ("class", "Bogus")]),
            "If the 'enabled' option is set to false no other options must be specified"
        );
        assert_eq!(
            err(&[("chunk_length_in_kb", "32")]),
            "Missing sub-option 'class' for the 'compression' option."
        );
    }

    #[test]
    fn stored_forms() {
        assert_eq!(from_map(&map(&[])).unwrap(), map(&[("enabled", "false")]));
        assert_eq!(
            from_map(&map(&[("enabled", "maybe")])).unwrap(),
            map(&[("enabled", "false")])
        );
        assert_eq!(
            from_map(&map(&[
                ("class", "LZ4Compressor"),
                ("chunk_length_in_kb", "008"),
                ("min_compress_ratio", "2.50")
            ]))
            .unwrap(),
            map(&[
                ("chunk_length_in_kb", "8"),
                ("class", "org.apache.cassandra.io.compress.LZ4Compressor"),
                ("min_compress_ratio", "2.5")
            ])
        );
    }
}
