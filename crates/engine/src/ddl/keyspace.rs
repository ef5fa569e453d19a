//! Keyspace options as Cassandra 5.0.9 reads and checks them: `replication` (the strategy
//! class, its replication factors as `ReplicationFactor.fromString` parses them, its expected
//! sub-options and datacenters) and `durable_writes` (a boolean property). Peregrine is one
//! node in `datacenter1`; the factors are kept and shown, not acted on.

use crate::EngineError;
use cql::ast::{self, Literal, Property, PropertyValue};
use std::collections::BTreeMap;

const PACKAGE: &str = "org.apache.cassandra.locator.";
/// The one datacenter a standalone node is in.
const DATACENTER: &str = "datacenter1";

fn config(m: impl Into<String>) -> EngineError {
    EngineError::config(m)
}

/// `Integer.parseInt`'s failure as 5.0.9 passes it on: the JDK message alone.
fn int(s: &str) -> Result<i32, EngineError> {
    s.parse()
        .map_err(|_| config(format!("For input string: \"{s}\"")))
}

/// `ReplicationFactor.fromString`: `n` or (transient) `n/t`, which a node without transient
/// replication refuses; the full count.
fn factor(s: &str) -> Result<i32, EngineError> {
    if let Some((all, transient)) = s.split_once('/') {
        int(all)?;
        int(transient)?;
        return Err(config("Transient replication is not enabled on this node"));
    }
    let n = int(s)?;
    if n < 0 {
        return Err(config(format!(
            "Replication factor must be non-negative, found {n}"
        )));
    }
    Ok(n)
}

fn unrecognized(key: &str, strategy: &str, ks: &str) -> EngineError {
    config(format!(
        "Unrecognized strategy option {{{key}}} passed to {strategy} for keyspace {ks}"
    ))
}

/// The `replication` map of keyspace `ks` (its `existing` one when the statement has none).
pub(crate) fn replication(
    props: &[Property],
    existing: Option<&BTreeMap<String, String>>,
    ks: &str,
) -> Result<BTreeMap<String, String>, EngineError> {
    let Some(rep) = ast::find_property(props, "replication") else {
        return existing
            .cloned()
            .ok_or_else(|| EngineError::invalid("Missing mandatory option 'replication'"));
    };
    let PropertyValue::Map(pairs) = rep else {
        return Err(EngineError::syntax(
            "Invalid value for property 'replication'. It should be a map.",
        ));
    };
    let mut m: BTreeMap<String, String> = pairs.iter().cloned().collect();
    if m.is_empty() {
        return Err(EngineError::server("java.lang.NullPointerException: Cannot invoke \"String.contains(java.lang.CharSequence)\" because \"cls\" is null"));
    }
    let class = m
        .remove("class")
        .ok_or_else(|| config("Missing replication strategy class"))?;
    let full = super::options::full_class(&class, PACKAGE);
    match full.strip_prefix(PACKAGE).unwrap_or("") {
        "SimpleStrategy" => {
            // Cassandra 5.0 defaults a missing factor to 1 (default_keyspace_rf).
            let rf = m
                .entry("replication_factor".to_string())
                .or_insert_with(|| "1".to_string());
            factor(rf)?;
            if let Some(k) = m.keys().find(|k| *k != "replication_factor") {
                return Err(unrecognized(k, "SimpleStrategy", ks));
            }
        }
        "NetworkTopologyStrategy" => {
            // Every datacenter's factor is read first (a bare replication_factor is only
            // expanded).
            for (k, v) in &m {
                if k != "replication_factor" {
                    factor(v)?;
                }
            }
            // A bare replication_factor expands to every known datacenter (here: one) not
            // given its own; one that is not a positive count expands to none.
            if let Some(rf) = m.remove("replication_factor") {
                if rf.parse::<i32>().is_ok_and(|n| n > 0) {
                    m.entry(DATACENTER.into()).or_insert(rf);
                }
            }
            if !m.values().any(|v| v.parse::<i32>().is_ok_and(|n| n > 0)) {
                return Err(config(
                    "Configuration for at least one datacenter must be present",
                ));
            }
            if let Some(k) = m
                .iter()
                .find(|(k, v)| *k != DATACENTER && v.parse::<i32>().is_ok_and(|n| n > 0))
                .map(|(k, _)| k)
            {
                return Err(unrecognized(k, "NetworkTopologyStrategy", ks));
            }
        }
        "LocalStrategy" => {
            return Err(EngineError::invalid(
                "Unable to use given strategy class: LocalStrategy is reserved for internal use.",
            ))
        }
        _ => {
            return Err(config(format!(
                "Unable to find replication strategy class '{full}'"
            )))
        }
    }
    m.insert("class".into(), full);
    Ok(m)
}

/// `durable_writes` as a boolean property (`1`/`true`/`yes`, `0`/`false`/`no`, any case).
pub(crate) fn durable_writes(props: &[Property], default: bool) -> Result<bool, EngineError> {
    let Some(v) = ast::find_property(props, "durable_writes") else {
        return Ok(default);
    };
    let s = match v {
        PropertyValue::Literal(Literal::Boolean(b)) => return Ok(*b),
        PropertyValue::Map(_) => {
            return Err(EngineError::syntax(
                "Invalid value for property 'durable_writes'. It should be a string",
            ))
        }
        PropertyValue::Literal(_) => v.as_text().unwrap_or_default(),
    };
    match s.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" => Ok(true),
        "0" | "false" | "no" => Ok(false),
        _ => Err(EngineError::syntax(format!(
            "Invalid boolean value {s} for 'durable_writes'. Positive values can be '1', 'true' or 'yes'. Negative values can be '0', 'false' or 'no'."
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rep(pairs: &[(&str, &str)]) -> Result<BTreeMap<String, String>, String> {
        let props = vec![Property {
            name: "replication".into(),
            value: PropertyValue::Map(
                pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
        }];
        replication(&props, None, "ks").map_err(|e| e.to_string())
    }

    #[test]
    fn factors_and_options_as_5_0_9_reads_them() {
        let s = "SimpleStrategy";
        assert_eq!(
            rep(&[("class", s), ("replication_factor", "abc"), ("bogus", "1")]),
            Err("For input string: \"abc\"".into())
        );
        assert_eq!(
            rep(&[("class", s), ("replication_factor", "-1")]),
            Err("Replication factor must be non-negative, found -1".into())
        );
        assert_eq!(
            rep(&[("class", s), ("replication_factor", "3/1")]),
            Err("Transient replication is not enabled on this node".into())
        );
        assert_eq!(
            rep(&[("class", s), ("replication_factor", "1"), ("bogus", "1")]),
            Err(
                "Unrecognized strategy option {bogus} passed to SimpleStrategy for keyspace ks"
                    .into()
            )
        );
        let n = "NetworkTopologyStrategy";
        assert_eq!(
            rep(&[("class", n), ("datacenter1", "0")]),
            Err("Configuration for at least one datacenter must be present".into())
        );
        assert!(rep(&[("class", n), ("datacenter1", "1"), ("dc9", "0")]).is_ok());
        assert_eq!(
            rep(&[
                ("class", n),
                ("replication_factor", "1"),
                ("datacenter1", "2")
            ])
            .unwrap()
            .get("datacenter1")
            .map(String::as_str),
            Some("2")
        );
    }
}
