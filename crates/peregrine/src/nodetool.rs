//! `peregrine nodetool`: Cassandra's nodetool command names, arguments, output formats and
//! exit codes, talking to the server's admin endpoint (`admin_listen`, HTTP + JSON) instead of
//! JMX.
//!
//! Exit codes as nodetool's: 0 on success; 1 for a bad command line, an unknown keyspace or
//! table, or a node that cannot be reached; 2 when the command failed on the server. Errors go
//! to stderr.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use serde_json::{json, Value};

/// nodetool's defaults: `-h 127.0.0.1 -p 7199`.
const DEFAULT_HOST: &str = "127.0.0.1";
const DEFAULT_PORT: u16 = 7199;
/// Flush, compaction and snapshots of a large store take a while.
const TIMEOUT: Duration = Duration::from_secs(3600);

/// What went wrong, and so which exit code.
#[derive(Debug)]
pub enum Failure {
    /// A bad command line or argument (exit 1, with nodetool's help hint).
    Usage(String),
    /// The node could not be reached (exit 1).
    Connect(String),
    /// The command failed on the node (exit 2).
    Failed(String),
}

impl Failure {
    pub fn exit_code(&self) -> u8 {
        match self {
            Failure::Usage(_) | Failure::Connect(_) => 1,
            Failure::Failed(_) => 2,
        }
    }

    pub fn report(&self) -> String {
        match self {
            Failure::Usage(m) => {
                format!("nodetool: {m}\nSee 'nodetool help' or 'nodetool help <command>'.")
            }
            Failure::Connect(m) => format!("nodetool: {m}"),
            Failure::Failed(m) => format!("error: {m}"),
        }
    }
}

/// Runs nodetool with its arguments (everything after `peregrine nodetool`); returns what to
/// print on stdout.
pub fn run(argv: &[String]) -> Result<String, Failure> {
    let mut host = DEFAULT_HOST.to_string();
    let mut port = DEFAULT_PORT;
    let mut credentials: Option<(String, String)> = None;
    let (mut user, mut password) = (None, None);
    let mut i = 0;
    // Connection options come before the command, as nodetool's.
    while i < argv.len() {
        let a = argv[i].as_str();
        let value = |i: usize| {
            argv.get(i + 1).cloned().ok_or_else(|| {
                Failure::Usage(format!("Required values for option '{a}' not provided"))
            })
        };
        match a {
            "-h" | "--host" => host = value(i)?,
            "-p" | "--port" => {
                let v = value(i)?;
                port = v.parse().map_err(|_| {
                    Failure::Usage(format!("port: can not convert \"{v}\" to a int"))
                })?;
            }
            "-u" | "--username" => user = Some(value(i)?),
            "-pw" | "--password" => password = Some(value(i)?),
            _ => break,
        }
        i += 2;
    }
    if let (Some(u), Some(p)) = (user, password) {
        credentials = Some((u, p));
    }
    let Some(command) = argv.get(i) else {
        return Err(Failure::Usage("No command specified".into()));
    };
    let rest = &argv[i + 1..];
    if command == "help" {
        return Ok(help(rest));
    }
    let (endpoint, args) = parse(command, rest)?;
    let node = Node {
        host,
        port,
        credentials,
    };
    let answer = node.call(endpoint, &args)?;
    Ok(format_output(endpoint, &args, &answer))
}

/// `nodetool help`: the commands this nodetool answers, each with Cassandra 5.0.9's own
/// one-line description (in its order, alphabetical).
const HELP: &[(&str, &str)] = &[
    ("cleanup", "Triggers the immediate cleanup of keys no longer belonging to a node. By default, clean all keyspaces"),
    ("clearsnapshot", "Remove the snapshot with the given name from the given keyspaces"),
    ("compact", "Force a (major) compaction on one or more tables or user-defined compaction on given SSTables"),
    ("compactionstats", "Print statistics on compactions"),
    ("describecluster", "Print the name, snitch, partitioner and schema version of a cluster"),
    ("disableauditlog", "Disable the audit log"),
    ("disableautocompaction", "Disable autocompaction for the given keyspace and table"),
    ("disablebinary", "Disable native transport (binary protocol)"),
    ("drain", "Drain the node (stop accepting writes and flush all tables)"),
    ("enableauditlog", "Enable the audit log"),
    ("enableautocompaction", "Enable autocompaction for the given keyspace and table"),
    ("enablebinary", "Reenable native transport (binary protocol)"),
    ("flush", "Flush one or more tables"),
    ("garbagecollect", "Remove deleted data from one or more tables"),
    ("getauditlog", "Print configuration of audit log if enabled, otherwise the configuration reflected in cassandra.yaml"),
    ("getcompactionthroughput", "Print the MiB/s throughput cap for compaction in the system as a rounded number"),
    ("getlogginglevels", "Get the runtime logging levels"),
    ("info", "Print node information (uptime, load, ...)"),
    ("invalidatecountercache", "Invalidate the counter cache"),
    ("invalidatekeycache", "Invalidate the key cache"),
    ("invalidaterowcache", "Invalidate the row cache"),
    ("listsnapshots", "Lists all the snapshots along with the size on disk and true size. True size is the total size of all SSTables which are not backed up to disk. Size on disk is total size of the snapshot on disk. Total TrueDiskSpaceUsed does not make any SSTable deduplication."),
    ("refreshsizeestimates", "Refresh system.size_estimates"),
    ("setcompactionthroughput", "Set the MiB/s throughput cap for compaction in the system, or 0 to disable throttling"),
    ("setlogginglevel", "Set the log level threshold for a given component or class. Will reset to the initial configuration if called with no parameters."),
    ("snapshot", "Take a snapshot of specified keyspaces or a snapshot of the specified table"),
    ("status", "Print cluster information (state, load, IDs, ...)"),
    ("statusbinary", "Status of native transport (binary protocol)"),
    ("stop", "Stop compaction"),
    ("tablehistograms", "Print statistic histograms for a given table"),
    ("tablestats", "Print statistics on tables"),
    ("version", "Print cassandra version"),
];

/// `nodetool help [command]`, as Cassandra's nodetool prints it: the usage and the command list,
/// or a command's NAME section (Cassandra's page goes on with SYNOPSIS and OPTIONS, which this
/// one leaves out), or `Unknown command X`. Needs no server.
fn help(rest: &[String]) -> String {
    match rest.first() {
        None => {
            let mut out = String::from(
                "usage: nodetool [(-h <host> | --host <host>)] [(-p <port> | --port <port>)]\n        [(-u <username> | --username <username>)]\n        [(-pw <password> | --password <password>)] <command> [<args>]\n\nThe most commonly used nodetool commands are:\n",
            );
            for (name, what) in HELP {
                out.push_str(&format!("    {name:<36}{what}\n"));
            }
            out.push_str(
                "\nSee 'nodetool help <command>' for more information on a specific command.\n",
            );
            out
        }
        Some(c) => match HELP.iter().find(|(name, _)| name == c) {
            Some((name, what)) => format!("NAME\n        nodetool {name} - {what}\n"),
            None => format!("Unknown command {c}\n"),
        },
    }
}

/// The admin endpoint's command and its JSON arguments for one nodetool command line.
fn parse(command: &str, rest: &[String]) -> Result<(&'static str, Value), Failure> {
    let unexpected = |extra: &[String]| {
        Failure::Usage(format!(
            "Found unexpected parameters: [{}]",
            extra.join(", ")
        ))
    };
    if command == "enableauditlog" {
        return enable_audit_log(rest);
    }
    if let Some(flag) = rest
        .iter()
        .find(|a| a.starts_with('-') && !KNOWN_FLAGS.contains(&a.as_str()))
    {
        return Err(unexpected(std::slice::from_ref(flag)));
    }
    let none = |name: &'static str| {
        if rest.is_empty() {
            Ok((name, json!({})))
        } else {
            Err(unexpected(rest))
        }
    };
    let keyspace_tables = |name: &'static str| {
        let mut args = json!({});
        if let Some((ks, tables)) = rest.split_first() {
            args = json!({ "keyspace": ks, "tables": tables });
        }
        Ok((name, args))
    };
    match command {
        "version" => none("version"),
        "info" => {
            let rest: Vec<String> = rest
                .iter()
                .filter(|a| *a != "-T" && *a != "--tokens")
                .cloned()
                .collect();
            if rest.is_empty() {
                Ok(("info", json!({})))
            } else {
                Err(unexpected(&rest))
            }
        }
        "status" => match rest {
            [] => Ok(("status", json!({}))),
            [ks] => Ok(("status", json!({ "keyspace": ks }))),
            _ => Err(unexpected(&rest[1..])),
        },
        "describecluster" => none("describecluster"),
        "compactionstats" => {
            let rest: Vec<String> = rest
                .iter()
                .filter(|a| *a != "-H" && *a != "--human-readable")
                .cloned()
                .collect();
            if rest.is_empty() {
                Ok(("compactionstats", json!({})))
            } else {
                Err(unexpected(&rest))
            }
        }
        "getcompactionthroughput" => none("getcompactionthroughput"),
        "getlogginglevels" => none("getlogginglevels"),
        "disableauditlog" => none("disableauditlog"),
        "getauditlog" => none("getauditlog"),
        "statusbinary" => none("statusbinary"),
        "enablebinary" => none("enablebinary"),
        "disablebinary" => none("disablebinary"),
        "drain" => none("drain"),
        "listsnapshots" => none("listsnapshots"),
        "refreshsizeestimates" => none("refreshsizeestimates"),
        "invalidatekeycache" => none("invalidatekeycache"),
        "invalidaterowcache" => none("invalidaterowcache"),
        "invalidatecountercache" => none("invalidatecountercache"),
        "flush" => keyspace_tables("flush"),
        "compact" => keyspace_tables("compact"),
        "garbagecollect" => keyspace_tables("garbagecollect"),
        "cleanup" => keyspace_tables("cleanup"),
        "enableautocompaction" => keyspace_tables("enableautocompaction"),
        "disableautocompaction" => keyspace_tables("disableautocompaction"),
        "tablestats" | "cfstats" => Ok(("tablestats", json!({ "targets": rest }))),
        "tablehistograms" | "cfhistograms" => {
            let (ks, t) = match rest {
                [kt] => match kt.split_once('.') {
                    Some((k, t)) => (k.to_string(), t.to_string()),
                    None => return Err(Failure::Usage("tablehistograms requires <keyspace> <table> or <keyspace.table> format argument.".into())),
                },
                [k, t] => (k.clone(), t.clone()),
                _ => return Err(Failure::Usage("tablehistograms requires <keyspace> <table> or <keyspace.table> format argument.".into())),
            };
            Ok(("tablehistograms", json!({ "keyspace": ks, "table": t })))
        }
        "setcompactionthroughput" => match rest {
            [v] => {
                let n: i64 = v.parse().map_err(|_| {
                    Failure::Usage(format!(
                        "compaction_throughput: can not convert \"{v}\" to a Integer"
                    ))
                })?;
                Ok(("setcompactionthroughput", json!({ "value": n })))
            }
            [] => Err(Failure::Usage(
                "Required parameters are missing: compaction_throughput".into(),
            )),
            _ => Err(unexpected(&rest[1..])),
        },
        "setlogginglevel" => match rest {
            [] => Ok(("setlogginglevel", json!({ "class": "", "level": "" }))),
            [class] => Ok(("setlogginglevel", json!({ "class": class, "level": "" }))),
            [class, level] => Ok(("setlogginglevel", json!({ "class": class, "level": level }))),
            _ => Err(unexpected(&rest[2..])),
        },
        "stop" => match rest {
            [t] if OPERATION_TYPES.contains(&t.as_str()) => Ok(("stop", json!({ "type": t }))),
            [t] => Err(Failure::Usage(format!(
                "compaction_type: can not convert \"{t}\" to a OperationType"
            ))),
            [] => Err(Failure::Usage(
                "Required parameters are missing: compaction_type".into(),
            )),
            _ => Err(unexpected(&rest[1..])),
        },
        "snapshot" => {
            let mut tag = None;
            let mut table = None;
            let mut keyspaces = Vec::new();
            let mut j = 0;
            while j < rest.len() {
                match rest[j].as_str() {
                    "-t" | "--tag" => {
                        tag = rest.get(j + 1).cloned();
                        j += 1;
                    }
                    "-cf" | "--column-family" | "--table" => {
                        table = rest.get(j + 1).cloned();
                        j += 1;
                    }
                    "-sf" | "--skip-flush" => {}
                    k => keyspaces.push(k.to_string()),
                }
                j += 1;
            }
            if table.is_some() && keyspaces.len() != 1 {
                return Err(Failure::Failed(
                    "When specifying the table for a snapshot, you must specify one and only one keyspace".into(),
                ));
            }
            Ok((
                "snapshot",
                json!({ "tag": tag, "table": table, "keyspaces": keyspaces }),
            ))
        }
        "clearsnapshot" => {
            let mut tag = None;
            let mut all = false;
            let mut keyspaces = Vec::new();
            let mut j = 0;
            while j < rest.len() {
                match rest[j].as_str() {
                    "-t" => {
                        tag = rest.get(j + 1).cloned();
                        j += 1;
                    }
                    "--all" => all = true,
                    "--" => {}
                    k => keyspaces.push(k.to_string()),
                }
                j += 1;
            }
            if tag.is_none() && !all {
                return Err(Failure::Usage("Specify snapshot name or --all".into()));
            }
            if tag.is_some() && all {
                return Err(Failure::Usage(
                    "Specify only one of snapshot name or --all".into(),
                ));
            }
            Ok((
                "clearsnapshot",
                json!({ "tag": tag, "keyspaces": keyspaces }),
            ))
        }
        _ => Err(unexpected(&[command.to_string()])),
    }
}

/// `enableauditlog` and Cassandra's options for it (each given one replaces the configured
/// value): `--logger`, `--included-keyspaces`, `--excluded-keyspaces`,
/// `--included-categories`, `--excluded-categories`, `--included-users`, `--excluded-users`,
/// `--roll-cycle`, `--block`, `--max-log-size`, `--max-queue-weight`, `--archive-command`,
/// `--max-archive-retries`.
fn enable_audit_log(rest: &[String]) -> Result<(&'static str, Value), Failure> {
    let mut args = serde_json::Map::new();
    let mut i = 0;
    while i < rest.len() {
        let flag = rest[i].as_str();
        let (name, inline) = match flag.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (flag, None),
        };
        let key = match name {
            "--logger"
            | "--included-keyspaces"
            | "--excluded-keyspaces"
            | "--included-categories"
            | "--excluded-categories"
            | "--included-users"
            | "--excluded-users"
            | "--roll-cycle"
            | "--block"
            | "--max-log-size"
            | "--max-queue-weight"
            | "--archive-command"
            | "--max-archive-retries" => name.trim_start_matches("--").replace('-', "_"),
            _ => {
                return Err(Failure::Usage(format!(
                    "Found unexpected parameters: [{flag}]"
                )))
            }
        };
        let value = match inline {
            Some(v) => v,
            None => {
                i += 1;
                rest.get(i).cloned().ok_or_else(|| {
                    Failure::Usage(format!("Required values for option '{name}' not provided"))
                })?
            }
        };
        let v = match key.as_str() {
            "block" => match value.to_ascii_lowercase().as_str() {
                "true" => json!(true),
                "false" => json!(false),
                _ => {
                    return Err(Failure::Usage(format!(
                        "block: can not convert \"{value}\" to a Boolean"
                    )))
                }
            },
            "max_log_size" | "max_queue_weight" | "max_archive_retries" => {
                let n: u64 = value.parse().map_err(|_| {
                    Failure::Usage(format!("{key}: can not convert \"{value}\" to a Long"))
                })?;
                json!(n)
            }
            _ => json!(value),
        };
        args.insert(key, v);
        i += 1;
    }
    Ok(("enableauditlog", Value::Object(args)))
}

/// `getauditlog`'s rows, in nodetool's order.
const AUDIT_LOG_ROWS: [&str; 15] = [
    "enabled",
    "logger",
    "audit_logs_dir",
    "archive_command",
    "roll_cycle",
    "block",
    "max_log_size",
    "max_queue_weight",
    "max_archive_retries",
    "included_keyspaces",
    "excluded_keyspaces",
    "included_categories",
    "excluded_categories",
    "included_users",
    "excluded_users",
];

/// Flags some commands take (others are refused as nodetool refuses them).
const KNOWN_FLAGS: [&str; 12] = [
    "-T",
    "--tokens",
    "-H",
    "--human-readable",
    "-t",
    "--tag",
    "-cf",
    "--column-family",
    "--table",
    "-sf",
    "--all",
    "--",
];

/// Cassandra's `OperationType` names, which `nodetool stop` takes.
const OPERATION_TYPES: [&str; 17] = [
    "COMPACTION",
    "VALIDATION",
    "KEY_CACHE_SAVE",
    "ROW_CACHE_SAVE",
    "COUNTER_CACHE_SAVE",
    "CLEANUP",
    "SCRUB",
    "UPGRADE_SSTABLES",
    "INDEX_BUILD",
    "TOMBSTONE_COMPACTION",
    "UNKNOWN",
    "ANTICOMPACTION",
    "VERIFY",
    "VIEW_BUILD",
    "INDEX_SUMMARY",
    "RELOCATE",
    "GARBAGE_COLLECT",
];

struct Node {
    host: String,
    port: u16,
    credentials: Option<(String, String)>,
}

impl Node {
    /// One admin call: `POST /nodetool/<command>` with `args`; the JSON answer.
    fn call(&self, command: &str, args: &Value) -> Result<Value, Failure> {
        let target = format!("{}:{}", self.host, self.port);
        let refused = |e: &dyn std::fmt::Display| {
            Failure::Connect(format!(
                "Failed to connect to '{target}' - ConnectException: '{e}'."
            ))
        };
        let addr = target
            .to_socket_addrs()
            .map_err(|e| refused(&e))?
            .next()
            .ok_or_else(|| refused(&"no address"))?;
        let mut socket = TcpStream::connect_timeout(&addr, Duration::from_secs(10))
            .map_err(|e| refused(&capitalized(&e)))?;
        let _ = socket.set_read_timeout(Some(TIMEOUT));
        let body = args.to_string();
        let auth = match &self.credentials {
            Some((u, p)) => format!(
                "Authorization: Basic {}\r\n",
                server::admin::base64(format!("{u}:{p}").as_bytes())
            ),
            None => String::new(),
        };
        let request = format!(
            "POST /nodetool/{command} HTTP/1.1\r\nHost: {target}\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        socket
            .write_all(request.as_bytes())
            .map_err(|e| refused(&e))?;
        let mut raw = Vec::new();
        socket.read_to_end(&mut raw).map_err(|e| refused(&e))?;
        let text = String::from_utf8_lossy(&raw);
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let status: u16 = head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| refused(&"not an admin endpoint"))?;
        let value: Value = serde_json::from_str(body).unwrap_or(Value::Null);
        let message = value["error"].as_str().unwrap_or(body).to_string();
        match status {
            200 => Ok(value),
            400 => Err(Failure::Usage(message)),
            401 | 403 => Err(Failure::Connect(format!(
                "Failed to connect to '{target}' - SecurityException: '{message}'."
            ))),
            404 => Err(Failure::Usage(format!(
                "Found unexpected parameters: [{command}]"
            ))),
            _ => Err(Failure::Failed(message)),
        }
    }
}

/// `Connection refused (os error 111)` as Java words it: `Connection refused`.
fn capitalized(e: &std::io::Error) -> String {
    let s = e.to_string();
    s.split(" (os error").next().unwrap_or(&s).to_string()
}

/// Cassandra's `FileUtils.stringifyFileSize`: `90.5 KiB`, `12 bytes`.
fn size(bytes: u64) -> String {
    const UNITS: [(&str, f64); 4] = [
        ("TiB", 1024.0 * 1024.0 * 1024.0 * 1024.0),
        ("GiB", 1024.0 * 1024.0 * 1024.0),
        ("MiB", 1024.0 * 1024.0),
        ("KiB", 1024.0),
    ];
    let b = bytes as f64;
    for (unit, per) in UNITS {
        if b >= per {
            return format!("{} {unit}", two_places(b / per));
        }
    }
    format!("{bytes} bytes")
}

/// Java's `#.##`: at most two decimals, no trailing zeros.
fn two_places(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Columns padded to their widest cell and separated by two spaces, as nodetool's
/// `TableBuilder`.
fn table(rows: &[Vec<String>]) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..n)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let cells: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(c, s)| format!("{s:<w$}", w = widths[c]))
            .collect();
        out.push_str(&cells.join("  "));
        out.push('\n');
    }
    out
}

fn format_output(command: &str, args: &Value, v: &Value) -> String {
    let s = |x: &Value| x.as_str().unwrap_or("").to_string();
    let u = |x: &Value| x.as_u64().unwrap_or(0);
    match command {
        "version" => format!("ReleaseVersion: {}\n", s(&v["release_version"])),
        "status" => {
            let mut out = String::new();
            let dc = v["datacenter"].as_str().unwrap_or("datacenter1");
            out.push_str(&format!(
                "Datacenter: {dc}\n{}\n",
                "=".repeat(12 + dc.len())
            ));
            out.push_str("Status=Up/Down\n|/ State=Normal/Leaving/Joining/Moving\n");
            let load = match v["load_bytes"].as_u64() {
                Some(b) => size(b),
                None => "?".into(),
            };
            out.push_str(&table(&[
                [
                    "--",
                    "Address",
                    "Load",
                    "Tokens",
                    "Owns (effective)",
                    "Host ID",
                    "Rack",
                ]
                .map(String::from)
                .to_vec(),
                vec![
                    if v["native_transport"].as_bool() == Some(true) {
                        "UN"
                    } else {
                        "DN"
                    }
                    .into(),
                    s(&v["address"]),
                    load,
                    "1".into(),
                    "100.0%".into(),
                    v["host_id"].as_str().unwrap_or("?").into(),
                    v["rack"].as_str().unwrap_or("rack1").into(),
                ],
            ]));
            out.push('\n');
            out
        }
        "info" => {
            let mut lines: Vec<(&str, String)> = Vec::new();
            if let Some(id) = v["host_id"].as_str() {
                lines.push(("ID", id.into()));
            }
            lines.push(("Gossip active", "false".into()));
            lines.push((
                "Native Transport active",
                v["native_transport"].as_bool().unwrap_or(false).to_string(),
            ));
            if let Some(why) = v["native_transport_stopped_because"].as_str() {
                lines.push(("Native Transport down", why.into()));
            }
            if let Some(why) = v["storage_writes_stopped"].as_str() {
                lines.push(("Writes stopped", why.into()));
            }
            if let Some(b) = v["load_bytes"].as_u64() {
                lines.push(("Load", size(b)));
            }
            lines.push(("Uptime (seconds)", u(&v["uptime_seconds"]).to_string()));
            if let Some(dc) = v["datacenter"].as_str() {
                lines.push(("Data Center", dc.into()));
                lines.push(("Rack", s(&v["rack"])));
            }
            if let Some(b) = v["pinned_bytes"].as_u64() {
                // Cassandra's line counts its Bloom filters and index summaries, as ours does.
                lines.push((
                    "Off Heap Memory (MB)",
                    format!("{:.2}", b as f64 / (1 << 20) as f64),
                ));
            }
            if v["mode"] == "standalone" {
                let hits = u(&v["block_cache_hits"]);
                let req = u(&v["block_cache_requests"]);
                lines.push((
                    "Block Cache",
                    format!(
                        "size {}, capacity {}, {hits} hits, {req} requests, {} recent hit rate",
                        size(u(&v["block_cache_bytes"])),
                        size(u(&v["block_cache_capacity_bytes"])),
                        rate(hits, req)
                    ),
                ));
            }
            if v["mode"] == "proxy" {
                let c = &v["cache"];
                for (label, tier) in [("Row Cache", "dram"), ("SSD Cache", "ssd")] {
                    let hits = u(&c[format!("cache_{tier}_hits_total")]);
                    let req = hits + u(&c[format!("cache_{tier}_misses_total")]);
                    lines.push((
                        label,
                        format!(
                            "entries {}, size {}, {hits} hits, {req} requests, {} recent hit rate",
                            u(&c[format!("cache_{tier}_entries")]),
                            size(u(&c[format!("cache_{tier}_bytes")])),
                            rate(hits, req)
                        ),
                    ));
                }
                lines.push((
                    "Upstream",
                    v["upstream"]
                        .as_array()
                        .map(|a| a.iter().map(&s).collect::<Vec<_>>().join(", "))
                        .unwrap_or_default(),
                ));
            }
            lines
                .iter()
                .map(|(k, val)| format!("{k:<23}: {val}\n"))
                .collect()
        }
        "describecluster" => {
            let mut out = String::from("Cluster Information:\n");
            if let Some(up) = v["upstream"].as_array() {
                out.push_str(&format!(
                    "\tProxy in front of: {}\n",
                    up.iter().map(&s).collect::<Vec<_>>().join(", ")
                ));
                return out;
            }
            out.push_str("\tSnitch: org.apache.cassandra.locator.SimpleSnitch\n");
            out.push_str("\tPartitioner: org.apache.cassandra.dht.Murmur3Partitioner\n");
            out.push_str(&format!(
                "\tSchema versions:\n\t\t{}: [127.0.0.1]\n\n",
                s(&v["schema_version"])
            ));
            out.push_str("Stats for all nodes:\n\tLive: 1\n\tJoining: 0\n\tMoving: 0\n\tLeaving: 0\n\tUnreachable: 0\n\n");
            out.push_str(&format!(
                "Data Centers: \n\t{} #Nodes: 1 #Down: 0\n\n",
                s(&v["datacenter"])
            ));
            out.push_str("Keyspaces:\n");
            for k in v["keyspaces"].as_array().into_iter().flatten() {
                let r = &k["replication"];
                let class = r["class"].as_str().unwrap_or("");
                let short = class.rsplit('.').next().unwrap_or(class);
                let opts: Vec<String> = r
                    .as_object()
                    .into_iter()
                    .flatten()
                    .filter(|(key, _)| *key != "class")
                    .map(|(key, val)| format!("{key}={}", val.as_str().unwrap_or("")))
                    .collect();
                out.push_str(&format!(
                    "\t{} -> Replication class: {short} {{{}}}\n",
                    s(&k["name"]),
                    opts.join(", ")
                ));
            }
            out
        }
        "statusbinary" => {
            if v["running"].as_bool() == Some(true) {
                "running\n".into()
            } else {
                "not running\n".into()
            }
        }
        "getcompactionthroughput" => format!(
            "Current compaction throughput: {} MB/s\n",
            u(&v["mib_per_second"])
        ),
        "getauditlog" => {
            let rows: Vec<(String, String)> = AUDIT_LOG_ROWS
                .iter()
                .map(|k| {
                    let value = match &v[*k] {
                        Value::String(x) => x.clone(),
                        Value::Null => String::new(),
                        other => other.to_string(),
                    };
                    (k.to_string(), value)
                })
                .collect();
            // nodetool's table: both columns padded to their widest cell, one space apart.
            let kw = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
            let vw = rows.iter().map(|r| r.1.chars().count()).max().unwrap_or(0);
            rows.iter()
                .map(|(k, v)| format!("{k:<kw$} {v:<vw$}\n"))
                .collect()
        }
        "getlogginglevels" => {
            let mut out = format!("\n{:<50}{:>10}\n", "Logger Name", "Log Level");
            for pair in v["levels"].as_array().into_iter().flatten() {
                out.push_str(&format!("{:<50}{:>10}\n", s(&pair[0]), s(&pair[1])));
            }
            out
        }
        "compactionstats" => {
            let rows = vec![
                vec![
                    "pending tasks".to_string(),
                    (u(&v["active"]) + u(&v["pending_flushes"]) + u(&v["pending_compactions"]))
                        .to_string(),
                ],
                vec![
                    "compactions completed".into(),
                    u(&v["completed"]).to_string(),
                ],
                vec!["compaction throughput (MiB/s)".into(), "0.0".into()],
            ];
            table(&rows)
        }
        "snapshot" => {
            let ks = args["keyspaces"]
                .as_array()
                .filter(|a| !a.is_empty())
                .map_or("all keyspaces".to_string(), |a| {
                    a.iter().map(&s).collect::<Vec<_>>().join(", ")
                });
            format!(
                "Requested creating snapshot(s) for [{ks}] with snapshot name [{}] and options {{skipFlush=false}}\nSnapshot directory: {}\n",
                s(&v["tag"]),
                s(&v["tag"])
            )
        }
        "clearsnapshot" => {
            let ks = args["keyspaces"]
                .as_array()
                .filter(|a| !a.is_empty())
                .map_or("all keyspaces".to_string(), |a| {
                    a.iter().map(&s).collect::<Vec<_>>().join(", ")
                });
            match args["tag"].as_str() {
                Some(t) => {
                    format!("Requested clearing snapshot(s) for [{ks}] with snapshot name [{t}]\n")
                }
                None => format!("Requested clearing snapshot(s) for [{ks}] with [all snapshots]\n"),
            }
        }
        "listsnapshots" => {
            let list = v["snapshots"].as_array().cloned().unwrap_or_default();
            if list.is_empty() {
                return "Snapshot Details: \nThere are no snapshots\n".into();
            }
            let mut rows = vec![[
                "Snapshot name",
                "Keyspace name",
                "Column family name",
                "True size",
                "Size on disk",
            ]
            .map(String::from)
            .to_vec()];
            let mut total = 0;
            for snap in &list {
                total += u(&snap["bytes"]);
                rows.push(vec![
                    s(&snap["tag"]),
                    "*".into(),
                    "*".into(),
                    size(u(&snap["bytes"])),
                    size(u(&snap["bytes"])),
                ]);
            }
            format!(
                "Snapshot Details: \n{}\nTotal TrueDiskSpaceUsed: {}\n\n",
                table(&rows),
                size(total)
            )
        }
        "tablestats" => table_stats(v),
        "tablehistograms" => {
            let mut out = format!(
                "{}/{} histograms\n",
                s(&args["keyspace"]),
                s(&args["table"])
            );
            out.push_str(&format!(
                "{:<10}{:>18}{:>18}{:>18}{:>18}{:>18}\n",
                "Percentile",
                "Read Latency",
                "Write Latency",
                "SSTables",
                "Partition Size",
                "Cell Count"
            ));
            out.push_str(&format!(
                "{:<10}{:>18}{:>18}{:>18}{:>18}{:>18}\n",
                "", "(micros)", "(micros)", "", "(bytes)", ""
            ));
            let r = v["read_us"].as_array().cloned().unwrap_or_default();
            let w = v["write_us"].as_array().cloned().unwrap_or_default();
            for (i, label) in ["50%", "75%", "95%", "98%", "99%", "Min", "Max"]
                .iter()
                .enumerate()
            {
                let f = |a: &[Value]| {
                    format!(
                        "{:.2}",
                        a.get(i).and_then(Value::as_u64).unwrap_or(0) as f64
                    )
                };
                out.push_str(&format!(
                    "{label:<10}{:>18}{:>18}{:>18}{:>18}{:>18}\n",
                    f(&r),
                    f(&w),
                    "NaN",
                    "NaN",
                    "NaN"
                ));
            }
            out.push('\n');
            out
        }
        // Commands that print nothing on success, as nodetool's.
        _ => String::new(),
    }
}

fn rate(hits: u64, requests: u64) -> String {
    if requests == 0 {
        "NaN".into()
    } else {
        format!("{:.3}", hits as f64 / requests as f64)
    }
}

fn table_stats(v: &Value) -> String {
    let tables = v["tables"].as_array().cloned().unwrap_or_default();
    let mut out = format!(
        "Total number of tables: {}\n----------------\n",
        tables.len()
    );
    let ms = |sum: u64, n: u64| {
        if n == 0 {
            "NaN ms".to_string()
        } else {
            format!("{:.3} ms", sum as f64 / n as f64 / 1000.0)
        }
    };
    let store = |k: &str| v[k].as_u64().unwrap_or(0).to_string();
    let mut i = 0;
    while i < tables.len() {
        let ks = tables[i]["keyspace"].as_str().unwrap_or("").to_string();
        let group: Vec<&Value> = tables[i..]
            .iter()
            .take_while(|t| t["keyspace"] == ks.as_str())
            .collect();
        let sum = |k: &str| {
            group
                .iter()
                .map(|t| t[k].as_u64().unwrap_or(0))
                .sum::<u64>()
        };
        out.push_str(&format!("Keyspace: {ks}\n"));
        for (label, value) in [
            ("Read Count", sum("read_count").to_string()),
            (
                "Read Latency",
                ms(sum("read_latency_us_sum"), sum("read_count")),
            ),
            ("Write Count", sum("write_count").to_string()),
            (
                "Write Latency",
                ms(sum("write_latency_us_sum"), sum("write_count")),
            ),
            ("Pending Flushes", store("pending_flushes")),
        ] {
            out.push_str(&format!("\t{label}: {value}\n"));
        }
        for t in &group {
            let g = |k: &str| t[k].as_u64().unwrap_or(0);
            for (label, value) in [
                ("Table", t["table"].as_str().unwrap_or("").to_string()),
                ("SSTable count", store("sstable_count")),
                ("Space used (live)", store("space_used_bytes")),
                ("Space used (total)", store("space_used_bytes")),
                ("Memtable data size", store("memtable_bytes")),
                ("Local read count", g("read_count").to_string()),
                (
                    "Local read latency",
                    ms(g("read_latency_us_sum"), g("read_count")),
                ),
                ("Local write count", g("write_count").to_string()),
                (
                    "Local write latency",
                    ms(g("write_latency_us_sum"), g("write_count")),
                ),
                ("Pending flushes", store("pending_flushes")),
            ] {
                out.push_str(&format!("\t\t{label}: {value}\n"));
            }
            out.push('\n');
        }
        out.push_str("----------------\n");
        i += group.len();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enableauditlog_takes_cassandras_options() {
        let args: Vec<String> = [
            "--included-keyspaces",
            "ks1,ks2",
            "--excluded-categories=QUERY",
            "--block",
            "false",
            "--max-log-size",
            "1024",
            "--logger",
            "FileAuditLogger",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let (name, v) = parse("enableauditlog", &args).unwrap();
        assert_eq!(name, "enableauditlog");
        assert_eq!(
            v,
            json!({
                "included_keyspaces": "ks1,ks2",
                "excluded_categories": "QUERY",
                "block": false,
                "max_log_size": 1024,
                "logger": "FileAuditLogger",
            })
        );
        let bad = |a: &[&str]| {
            let a: Vec<String> = a.iter().map(|s| s.to_string()).collect();
            match parse("enableauditlog", &a) {
                Err(Failure::Usage(m)) => m,
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(
            bad(&["--nope", "1"]),
            "Found unexpected parameters: [--nope]"
        );
        assert!(bad(&["--max-log-size", "x"]).contains("can not convert"));
        assert!(bad(&["--roll-cycle"]).contains("'--roll-cycle'"));
        assert!(parse("disableauditlog", &["x".to_string()]).is_err());
    }

    #[test]
    fn sizes_read_as_cassandras() {
        assert_eq!(size(12), "12 bytes");
        assert_eq!(size(92_672), "90.5 KiB");
        assert_eq!(size(132_393), "129.29 KiB");
        assert_eq!(size(1024 * 1024), "1 MiB");
    }

    #[test]
    fn bad_command_lines_are_refused_like_nodetools() {
        let argv = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        let e = run(&argv("bogus")).unwrap_err();
        assert_eq!(e.exit_code(), 1);
        assert_eq!(
            e.report(),
            "nodetool: Found unexpected parameters: [bogus]\nSee 'nodetool help' or 'nodetool help <command>'."
        );
        assert!(
            matches!(run(&argv("info --bogus")), Err(Failure::Usage(m)) if m == "Found unexpected parameters: [--bogus]")
        );
        assert!(
            matches!(run(&argv("clearsnapshot")), Err(Failure::Usage(m)) if m == "Specify snapshot name or --all")
        );
        assert!(
            matches!(run(&argv("stop BOGUS")), Err(Failure::Usage(m)) if m.contains("OperationType"))
        );
        assert!(
            matches!(run(&argv("setcompactionthroughput abc")), Err(Failure::Usage(m)) if m.contains("can not convert \"abc\" to a Integer"))
        );
        assert!(
            matches!(run(&argv("-h 127.0.0.1 -p 1 version")), Err(Failure::Connect(m)) if m.starts_with("Failed to connect to '127.0.0.1:1' - ConnectException: 'Connection refused"))
        );
    }

    #[test]
    fn status_table_pads_like_nodetools() {
        let out = format_output(
            "status",
            &json!({}),
            &json!({ "native_transport": true, "address": "127.0.0.1", "load_bytes": 92_672,
                     "host_id": "918bad37-042d-400e-a669-f3e31ee5cc50", "rack": "rack1", "datacenter": "datacenter1" }),
        );
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "Datacenter: datacenter1");
        assert_eq!(lines[1], "=======================");
        assert_eq!(lines[4], "--  Address    Load      Tokens  Owns (effective)  Host ID                               Rack ");
        assert!(lines[5].starts_with("UN  127.0.0.1  90.5 KiB  1       100.0%            918bad37"));
    }
}
