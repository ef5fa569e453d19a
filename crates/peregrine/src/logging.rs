//! `nodetool getlogginglevels` / `setlogginglevel`: the process's log filter, changed at run
//! time through a `tracing_subscriber` reload handle. Loggers are Rust module paths
//! (`storage`, `server::conn`); `ROOT` is the default level.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use tracing_subscriber::reload::Handle;
use tracing_subscriber::{EnvFilter, Registry};

pub struct Levels {
    handle: Handle<EnvFilter, Registry>,
    /// `ROOT` and per-target levels, as set.
    levels: Mutex<BTreeMap<String, String>>,
}

const LEVELS: [&str; 6] = ["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "OFF"];

impl Levels {
    /// Starts from the filter in effect (`RUST_LOG` or `info`).
    pub fn new(initial: &str, handle: Handle<EnvFilter, Registry>) -> Self {
        let mut levels = BTreeMap::new();
        for part in initial.split(',').filter(|p| !p.is_empty()) {
            match part.split_once('=') {
                Some((target, level)) => levels.insert(target.to_string(), level.to_uppercase()),
                None => levels.insert("ROOT".to_string(), part.to_uppercase()),
            };
        }
        levels
            .entry("ROOT".to_string())
            .or_insert_with(|| "INFO".into());
        Levels {
            handle,
            levels: Mutex::new(levels),
        }
    }
}

impl server::admin::LogLevels for Levels {
    fn levels(&self) -> Vec<(String, String)> {
        let levels = self.levels.lock().unwrap_or_else(PoisonError::into_inner);
        levels.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    fn set(&self, logger: &str, level: &str) -> Result<(), String> {
        let mut levels = self.levels.lock().unwrap_or_else(PoisonError::into_inner);
        let logger = if logger.is_empty() { "ROOT" } else { logger };
        let level = level.to_uppercase();
        if level.is_empty() {
            // nodetool's reset: back to the default for that logger.
            if logger == "ROOT" {
                levels.insert("ROOT".into(), "INFO".into());
            } else {
                levels.remove(logger);
            }
        } else if !LEVELS.contains(&level.as_str()) {
            return Err(format!(
                "Invalid log level {level}: use one of {}",
                LEVELS.join(", ")
            ));
        } else if logger
            .chars()
            .any(|c| !(c.is_alphanumeric() || c == '_' || c == ':'))
        {
            return Err(format!(
                "Invalid logger {logger}: use a Rust module path such as server::conn"
            ));
        } else {
            levels.insert(logger.to_string(), level);
        }
        let spec: Vec<String> = levels
            .iter()
            .map(|(k, v)| {
                if k == "ROOT" {
                    v.to_lowercase()
                } else {
                    format!("{k}={}", v.to_lowercase())
                }
            })
            .collect();
        let filter = EnvFilter::try_new(spec.join(",")).map_err(|e| e.to_string())?;
        self.handle.reload(filter).map_err(|e| e.to_string())
    }
}
