//! Reports: the seed-style text tables, the JSON document (every figure, the exact
//! parameters, versions and the machine), and a self-contained HTML page with inline SVG plots
//! of throughput over time and latency percentiles (no scripts, no network).

use crate::runner::{ConnectConfig, Endpoint, LoadShape, RunResult, SchemaConfig};
use crate::stats::{median, percentile_curve, summarize, OpSummary, TimelinePoint};
use crate::workload::{OpKind, WorkloadSpec};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The machine the bench ran on.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    /// Online CPUs.
    pub nproc: usize,
    /// `model name` from /proc/cpuinfo.
    pub cpu_model: String,
    /// MemTotal from /proc/meminfo, bytes.
    pub memory_bytes: u64,
    /// Kernel release.
    pub kernel: String,
    /// Host name.
    pub hostname: String,
    /// CPUs this process may run on (from /proc/self/status), e.g. `1` when pinned by taskset.
    pub cpus_allowed: String,
}

impl Machine {
    /// Reads /proc; unknown fields are left empty.
    pub fn detect() -> Machine {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let cpuinfo = read("/proc/cpuinfo");
        let cpu_model = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_default();
        let memory_bytes = read("/proc/meminfo")
            .lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024);
        let cpus_allowed = read("/proc/self/status")
            .lines()
            .find(|l| l.starts_with("Cpus_allowed_list:"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_default();
        // Every CPU of the machine, not just those this process may use (see `cpus_allowed`).
        let processors = cpuinfo
            .lines()
            .filter(|l| l.starts_with("processor"))
            .count();
        Machine {
            nproc: if processors > 0 {
                processors
            } else {
                std::thread::available_parallelism().map_or(1, |n| n.get())
            },
            cpu_model,
            memory_bytes,
            kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
            hostname: read("/proc/sys/kernel/hostname").trim().to_string(),
            cpus_allowed,
        }
    }
}

/// Versions that produced a report.
#[derive(Debug, Clone, Serialize)]
pub struct Versions {
    /// This crate's version.
    pub bench: &'static str,
    /// The CQL driver.
    pub driver: &'static str,
}

/// Versions of this build.
pub const VERSIONS: Versions = Versions {
    bench: env!("CARGO_PKG_VERSION"),
    driver: "scylla (Rust driver) 1.x",
};

/// Everything one `load` or `run` measured, as written to JSON.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// `load` or `run`.
    pub command: String,
    /// Tool versions.
    pub versions: Versions,
    /// Where it ran.
    pub machine: Machine,
    /// The endpoint measured.
    pub endpoint: Endpoint,
    /// The server's `release_version`.
    pub server_version: Option<String>,
    /// Start time, Unix seconds and UTC text.
    pub started_unix: u64,
    /// Start time as `YYYY-MM-DDTHH:MM:SSZ`.
    pub started_utc: String,
    /// The workload parameters.
    pub workload: WorkloadSpec,
    /// Concurrency, duration, rate, ….
    pub shape: LoadShape,
    /// Connection parameters.
    pub connect: ConnectConfig,
    /// Keyspace and table.
    pub schema: SchemaConfig,
    /// Measured seconds.
    pub seconds: f64,
    /// CPU seconds used by the bench process during the run.
    pub client_cpu_seconds: f64,
    /// Client CPU as a percentage of one core.
    pub client_cpu_percent: f64,
    /// Operations per client CPU second: what one client core can drive.
    pub ops_per_client_cpu_second: f64,
    /// CPU seconds the endpoint's server processes used (when their pids were given).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_cpu_seconds: Option<f64>,
    /// Operations per server CPU second: throughput per server core.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ops_per_server_cpu_second: Option<f64>,
    /// One row per operation kind.
    pub ops: Vec<OpSummary>,
    /// All kinds together.
    pub overall: OpSummary,
    /// One point per second.
    pub timeline: Vec<TimelinePoint>,
    /// `(percentile, ms)` per kind and `overall`.
    pub percentile_curves: BTreeMap<String, Vec<(f64, f64)>>,
}

/// Common parameters of a run, borrowed from the CLI.
pub struct RunParams<'a> {
    /// `load` or `run`.
    pub command: &'a str,
    /// Endpoint measured.
    pub endpoint: &'a Endpoint,
    /// Workload.
    pub workload: &'a WorkloadSpec,
    /// Load shape.
    pub shape: &'a LoadShape,
    /// Connection.
    pub connect: &'a ConnectConfig,
    /// Schema.
    pub schema: &'a SchemaConfig,
}

impl RunReport {
    /// Builds the report of one run.
    pub fn new(p: &RunParams<'_>, r: &RunResult, machine: &Machine) -> RunReport {
        let (ops, overall) = summarize(&r.total, &r.timeline, r.seconds);
        let mut curves = BTreeMap::new();
        for k in OpKind::ALL {
            let c = percentile_curve(&r.total.ops[k.index()]);
            if !c.is_empty() {
                curves.insert(k.name().to_string(), c);
            }
        }
        curves.insert("overall".into(), percentile_curve(&r.total.overall()));
        let cpu_pct = if r.seconds > 0.0 {
            100.0 * r.client_cpu_seconds / r.seconds
        } else {
            0.0
        };
        RunReport {
            command: p.command.to_string(),
            versions: VERSIONS,
            machine: machine.clone(),
            endpoint: p.endpoint.clone(),
            server_version: r.server_version.clone(),
            started_unix: r.started_unix,
            started_utc: utc(r.started_unix),
            workload: p.workload.clone(),
            shape: p.shape.clone(),
            connect: p.connect.clone(),
            schema: p.schema.clone(),
            seconds: r.seconds,
            client_cpu_seconds: r.client_cpu_seconds,
            client_cpu_percent: cpu_pct,
            ops_per_client_cpu_second: if r.client_cpu_seconds > 0.0 {
                (overall.count + overall.errors) as f64 / r.client_cpu_seconds
            } else {
                0.0
            },
            server_cpu_seconds: r.server_cpu_seconds,
            ops_per_server_cpu_second: r
                .server_cpu_seconds
                .filter(|&s| s > 0.0)
                .map(|s| (overall.count + overall.errors) as f64 / s),
            ops,
            overall,
            timeline: r.timeline.clone(),
            percentile_curves: curves,
        }
    }

    /// The seed-style text table.
    pub fn text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{} workload {} on {} ({}){}",
            self.command,
            self.workload.name,
            self.endpoint.name,
            self.endpoint.hosts.join(","),
            self.server_version
                .as_ref()
                .map(|v| format!(", server {v}"))
                .unwrap_or_default()
        );
        let _ = writeln!(
            s,
            "concurrency {}, workers {}, connections/host {}, {:.1} s measured{}, records {}, {} × {} B fields",
            self.shape.concurrency,
            self.shape.workers,
            self.connect.connections,
            self.seconds,
            self.shape
                .target_rate
                .map(|r| format!(", target {} ops/s (latency from intended start)", thousands(r)))
                .unwrap_or_default(),
            self.workload.records,
            self.workload.field_count,
            self.workload.field_length,
        );
        let mut rows: Vec<&OpSummary> = self.ops.iter().collect();
        rows.push(&self.overall);
        s.push_str(&op_table(&rows));
        let _ = writeln!(
            s,
            "client: {:.1}% of one core, {} ops per client CPU second",
            self.client_cpu_percent,
            thousands(self.ops_per_client_cpu_second)
        );
        if let (Some(cpu), Some(per)) = (self.server_cpu_seconds, self.ops_per_server_cpu_second) {
            let _ = writeln!(
                s,
                "server: {:.1}% of one core, {} ops per server CPU second",
                100.0 * cpu / self.seconds.max(1e-9),
                thousands(per)
            );
        }
        // The overall row repeats the per-kind samples.
        for op in &self.ops {
            for m in &op.error_samples {
                let _ = writeln!(s, "  {} error sample: {m}", op.op);
            }
        }
        s
    }

    /// The self-contained HTML page.
    pub fn html(&self) -> String {
        let title = format!(
            "peregrine bench: {} {} on {}",
            self.command, self.workload.name, self.endpoint.name
        );
        let mut body = String::new();
        let _ = writeln!(body, "<h1>{}</h1>", esc(&title));
        let _ = writeln!(body, "<pre>{}</pre>", esc(&self.text()));
        let mut series = Vec::new();
        for k in OpKind::ALL {
            if self.ops.iter().any(|o| o.op == k.name()) && self.ops.len() > 1 {
                series.push(Series {
                    name: k.name().into(),
                    points: self
                        .timeline
                        .iter()
                        .map(|p| (p.second as f64, p.ops[k.index()] as f64))
                        .collect(),
                });
            }
        }
        series.push(Series {
            name: "total".into(),
            points: self
                .timeline
                .iter()
                .map(|p| (p.second as f64, p.total as f64))
                .collect(),
        });
        body.push_str(&chart(
            "Throughput over time",
            "second",
            "ops/s",
            &series,
            Scale::Linear,
            Scale::Linear,
        ));
        let lat = vec![
            Series {
                name: "p50".into(),
                points: self
                    .timeline
                    .iter()
                    .map(|p| (p.second as f64, p.p50_ms))
                    .collect(),
            },
            Series {
                name: "p99".into(),
                points: self
                    .timeline
                    .iter()
                    .map(|p| (p.second as f64, p.p99_ms))
                    .collect(),
            },
            Series {
                name: "max".into(),
                points: self
                    .timeline
                    .iter()
                    .map(|p| (p.second as f64, p.max_ms))
                    .collect(),
            },
        ];
        body.push_str(&chart(
            "Latency over time (all operations)",
            "second",
            "ms",
            &lat,
            Scale::Linear,
            Scale::Log,
        ));
        let curves: Vec<Series> = self
            .percentile_curves
            .iter()
            .map(|(name, pts)| Series {
                name: name.clone(),
                points: pts.clone(),
            })
            .collect();
        body.push_str(&chart(
            "Latency by percentile",
            "percentile",
            "ms",
            &curves,
            Scale::Percentile,
            Scale::Log,
        ));
        let _ = writeln!(
            body,
            "<p class=note>Machine: {} × {}, {:.1} GiB, kernel {}, bench CPUs {}. Bench {} with {}.</p>",
            self.machine.nproc,
            esc(&self.machine.cpu_model),
            self.machine.memory_bytes as f64 / (1u64 << 30) as f64,
            esc(&self.machine.kernel),
            esc(&self.machine.cpus_allowed),
            self.versions.bench,
            self.versions.driver
        );
        page(&title, &body)
    }
}

/// One endpoint's rounds in a comparison.
#[derive(Debug, Clone, Serialize)]
pub struct CompareEndpoint {
    /// The endpoint.
    pub endpoint: Endpoint,
    /// Its `release_version`.
    pub server_version: Option<String>,
    /// Every round's full report.
    pub rounds: Vec<RunReport>,
    /// Per kind, the median of each figure over the rounds.
    pub median_ops: Vec<OpSummary>,
    /// Overall, the median of each figure over the rounds.
    pub median_overall: OpSummary,
}

/// A `compare` document: endpoints measured in alternation, medians and gains.
#[derive(Debug, Clone, Serialize)]
pub struct CompareReport {
    /// Tool versions.
    pub versions: Versions,
    /// Where it ran.
    pub machine: Machine,
    /// Start time.
    pub started_utc: String,
    /// Rounds per endpoint.
    pub rounds: usize,
    /// Workload parameters.
    pub workload: WorkloadSpec,
    /// Load shape.
    pub shape: LoadShape,
    /// Connection parameters.
    pub connect: ConnectConfig,
    /// Schema.
    pub schema: SchemaConfig,
    /// In the order given; the first is the subject of the gain columns.
    pub endpoints: Vec<CompareEndpoint>,
    /// Gains of the first endpoint over each other one, per figure of the overall row.
    pub gains: Vec<Gain>,
}

/// How much better the first endpoint is than `versus` (ops/s: a/b; latency: b/a).
#[derive(Debug, Clone, Serialize)]
pub struct Gain {
    /// The other endpoint.
    pub versus: String,
    /// Operation kind or `overall`.
    pub op: String,
    /// Figure name → ratio.
    pub ratios: BTreeMap<String, f64>,
}

/// Median of each figure of `rounds` (all for the same op kind).
pub fn median_summary(op: &str, rounds: &[&OpSummary]) -> OpSummary {
    let m = |f: &dyn Fn(&OpSummary) -> f64| {
        median(&mut rounds.iter().map(|s| f(s)).collect::<Vec<_>>())
    };
    OpSummary {
        op: op.to_string(),
        count: m(&|s| s.count as f64) as u64,
        errors: rounds.iter().map(|s| s.errors).sum(),
        timeouts: rounds.iter().map(|s| s.timeouts).sum(),
        not_found: rounds.iter().map(|s| s.not_found).sum(),
        validated: rounds.iter().map(|s| s.validated).sum(),
        validation_failures: rounds.iter().map(|s| s.validation_failures).sum(),
        ops_per_sec_sustained: m(&|s| s.ops_per_sec_sustained),
        ops_per_sec_peak: m(&|s| s.ops_per_sec_peak),
        mean_ms: m(&|s| s.mean_ms),
        median_ms: m(&|s| s.median_ms),
        p95_ms: m(&|s| s.p95_ms),
        p99_ms: m(&|s| s.p99_ms),
        p999_ms: m(&|s| s.p999_ms),
        max_ms: m(&|s| s.max_ms),
        errors_by_kind: rounds.iter().fold(BTreeMap::new(), |mut acc, s| {
            for (k, v) in &s.errors_by_kind {
                *acc.entry(k.clone()).or_default() += v;
            }
            acc
        }),
        error_samples: rounds
            .iter()
            .flat_map(|s| s.error_samples.clone())
            .take(5)
            .collect(),
    }
}

/// The figures of a comparison table: (label, getter, higher is better).
type Figure = (&'static str, fn(&OpSummary) -> f64, bool);
const FIGURES: [Figure; 8] = [
    ("ops/s sustained", |s| s.ops_per_sec_sustained, true),
    ("ops/s peak", |s| s.ops_per_sec_peak, true),
    ("mean ms", |s| s.mean_ms, false),
    ("median ms", |s| s.median_ms, false),
    ("p95 ms", |s| s.p95_ms, false),
    ("p99 ms", |s| s.p99_ms, false),
    ("p99.9 ms", |s| s.p999_ms, false),
    ("max ms", |s| s.max_ms, false),
];

/// Gain of `a` over `b` for one figure; 0 when undefined.
pub fn gain(a: f64, b: f64, higher_is_better: bool) -> f64 {
    let (num, den) = if higher_is_better { (a, b) } else { (b, a) };
    if den > 0.0 {
        num / den
    } else {
        0.0
    }
}

impl CompareEndpoint {
    /// Median over the rounds of operations per server CPU second, if measured.
    pub fn ops_per_server_cpu_second(&self) -> Option<f64> {
        let mut v: Vec<f64> = self
            .rounds
            .iter()
            .filter_map(|r| r.ops_per_server_cpu_second)
            .collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        Some(v[v.len() / 2])
    }
}

impl CompareReport {
    /// Builds medians and gains from the rounds.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        machine: &Machine,
        started_unix: u64,
        workload: &WorkloadSpec,
        shape: &LoadShape,
        connect: &ConnectConfig,
        schema: &SchemaConfig,
        per_endpoint: Vec<(Endpoint, Vec<RunReport>)>,
    ) -> CompareReport {
        let rounds = per_endpoint.iter().map(|e| e.1.len()).min().unwrap_or(0);
        let mut endpoints = Vec::new();
        for (endpoint, reports) in per_endpoint {
            let mut median_ops = Vec::new();
            for k in OpKind::ALL {
                let rs: Vec<&OpSummary> = reports
                    .iter()
                    .filter_map(|r| r.ops.iter().find(|o| o.op == k.name()))
                    .collect();
                if !rs.is_empty() {
                    median_ops.push(median_summary(k.name(), &rs));
                }
            }
            let overall: Vec<&OpSummary> = reports.iter().map(|r| &r.overall).collect();
            endpoints.push(CompareEndpoint {
                endpoint,
                server_version: reports.iter().find_map(|r| r.server_version.clone()),
                median_overall: median_summary("overall", &overall),
                median_ops,
                rounds: reports,
            });
        }
        let mut gains = Vec::new();
        if let Some((first, rest)) = endpoints.split_first() {
            for other in rest {
                let mut pairs: Vec<(&OpSummary, &OpSummary)> = first
                    .median_ops
                    .iter()
                    .filter_map(|a| {
                        other
                            .median_ops
                            .iter()
                            .find(|b| b.op == a.op)
                            .map(|b| (a, b))
                    })
                    .collect();
                pairs.push((&first.median_overall, &other.median_overall));
                for (a, b) in pairs {
                    let ratios = FIGURES
                        .iter()
                        .map(|(name, get, hib)| (name.to_string(), gain(get(a), get(b), *hib)))
                        .collect();
                    gains.push(Gain {
                        versus: other.endpoint.name.clone(),
                        op: a.op.clone(),
                        ratios,
                    });
                }
            }
        }
        CompareReport {
            versions: VERSIONS,
            machine: machine.clone(),
            started_utc: utc(started_unix),
            rounds,
            workload: workload.clone(),
            shape: shape.clone(),
            connect: connect.clone(),
            schema: schema.clone(),
            endpoints,
            gains,
        }
    }

    /// Seed-000-style tables: figures down, endpoints across, then the gain column(s).
    pub fn text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "compare workload {}: {} rounds each, alternating; medians; concurrency {}, {} × {} B fields",
            self.workload.name,
            self.rounds,
            self.shape.concurrency,
            self.workload.field_count,
            self.workload.field_length
        );
        let Some(first) = self.endpoints.first() else {
            return s;
        };
        let mut ops: Vec<String> = first.median_ops.iter().map(|o| o.op.clone()).collect();
        if ops.len() > 1 {
            ops.push("overall".into());
        } else {
            ops = vec!["overall".into()];
        }
        for op in ops {
            let get = |e: &CompareEndpoint| -> Option<OpSummary> {
                if op == "overall" {
                    Some(e.median_overall.clone())
                } else {
                    e.median_ops.iter().find(|o| o.op == op).cloned()
                }
            };
            let cols: Vec<Option<OpSummary>> = self.endpoints.iter().map(get).collect();
            let mut header = vec![op.clone()];
            header.extend(self.endpoints.iter().map(|e| e.endpoint.name.clone()));
            for e in &self.endpoints[1..] {
                header.push(format!("gain vs {}", e.endpoint.name));
            }
            let mut rows = vec![header];
            for (name, getter, hib) in FIGURES {
                let mut row = vec![name.to_string()];
                for c in &cols {
                    row.push(
                        c.as_ref()
                            .map_or("-".into(), |c| fmt_figure(getter(c), hib)),
                    );
                }
                for c in &cols[1..] {
                    let g = match (&cols[0], c) {
                        (Some(a), Some(b)) => gain(getter(a), getter(b), hib),
                        _ => 0.0,
                    };
                    row.push(if g > 0.0 {
                        format!("{g:.1}x")
                    } else {
                        "-".into()
                    });
                }
                rows.push(row);
            }
            let mut row = vec!["errors / timeouts".to_string()];
            for c in &cols {
                row.push(
                    c.as_ref()
                        .map_or("-".into(), |c| format!("{} / {}", c.errors, c.timeouts)),
                );
            }
            row.extend(std::iter::repeat_n(String::new(), cols.len() - 1));
            rows.push(row);
            s.push('\n');
            s.push_str(&grid(&rows));
        }
        for e in &self.endpoints {
            let _ = writeln!(
                s,
                "{}: {} ({}), client CPU per round {}",
                e.endpoint.name,
                e.endpoint.hosts.join(","),
                e.server_version.as_deref().unwrap_or("version unknown"),
                e.rounds
                    .iter()
                    .map(|r| format!("{:.0}%", r.client_cpu_percent))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        }
        // Throughput per server core, when the servers' pids were given.
        let per_core: Vec<Option<f64>> = self
            .endpoints
            .iter()
            .map(|e| e.ops_per_server_cpu_second())
            .collect();
        if per_core.iter().any(Option::is_some) {
            let mut line = String::from("ops per server CPU second (median round):");
            for (e, v) in self.endpoints.iter().zip(&per_core) {
                let v = v.map_or("-".to_string(), thousands);
                let _ = write!(line, " {} {v};", e.endpoint.name);
            }
            if let (Some(Some(a)), Some(Some(b))) = (per_core.first(), per_core.get(1)) {
                let _ = write!(line, " gain {:.1}x", gain(*a, *b, true));
            }
            let _ = writeln!(s, "{}", line.trim_end_matches(';'));
        }
        s
    }

    /// HTML with the tables, each endpoint's throughput over time (all rounds end to end) and
    /// the overall percentile curves (median round per endpoint).
    pub fn html(&self) -> String {
        let title = format!("peregrine bench: compare workload {}", self.workload.name);
        let mut body = String::new();
        let _ = writeln!(body, "<h1>{}</h1>", esc(&title));
        let _ = writeln!(body, "<pre>{}</pre>", esc(&self.text()));
        let mut tput = Vec::new();
        let mut curves = Vec::new();
        for e in &self.endpoints {
            let mut pts = Vec::new();
            let mut offset = 0.0;
            for r in &e.rounds {
                pts.extend(
                    r.timeline
                        .iter()
                        .map(|p| (offset + p.second as f64, p.total as f64)),
                );
                offset += r.timeline.len() as f64;
            }
            tput.push(Series {
                name: e.endpoint.name.clone(),
                points: pts,
            });
            // The round whose sustained throughput is the median.
            let mut idx: Vec<usize> = (0..e.rounds.len()).collect();
            idx.sort_by(|&a, &b| {
                e.rounds[a]
                    .overall
                    .ops_per_sec_sustained
                    .total_cmp(&e.rounds[b].overall.ops_per_sec_sustained)
            });
            if let Some(&mid) = idx.get(idx.len() / 2) {
                if let Some(c) = e.rounds[mid].percentile_curves.get("overall") {
                    curves.push(Series {
                        name: e.endpoint.name.clone(),
                        points: c.clone(),
                    });
                }
            }
        }
        body.push_str(&chart(
            "Throughput over time (each endpoint's rounds end to end)",
            "second of measurement",
            "ops/s",
            &tput,
            Scale::Linear,
            Scale::Linear,
        ));
        body.push_str(&chart(
            "Latency by percentile (median round, all operations)",
            "percentile",
            "ms",
            &curves,
            Scale::Percentile,
            Scale::Log,
        ));
        let _ = writeln!(
            body,
            "<p class=note>Machine: {} × {}, {:.1} GiB, bench CPUs {}. Bench {} with {}.</p>",
            self.machine.nproc,
            esc(&self.machine.cpu_model),
            self.machine.memory_bytes as f64 / (1u64 << 30) as f64,
            esc(&self.machine.cpus_allowed),
            self.versions.bench,
            self.versions.driver
        );
        page(&title, &body)
    }
}

fn fmt_figure(v: f64, is_rate: bool) -> String {
    if is_rate {
        thousands(v)
    } else {
        fmt_ms(v)
    }
}

/// Milliseconds with precision that suits the magnitude.
/// `f` of a figure, or `-` where there is none.
pub fn or_dash(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "-".to_string(), f)
}

pub fn fmt_ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// An integer with thousands separators: `12,562`.
pub fn thousands(v: f64) -> String {
    let n = v.round() as i64;
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 {
        out.insert(0, '-');
    }
    out
}

/// The per-kind table of one run.
pub fn op_table(rows: &[&OpSummary]) -> String {
    let mut g = vec![[
        "op",
        "ops",
        "ops/s peak",
        "ops/s sust",
        "mean ms",
        "median",
        "p95",
        "p99",
        "p99.9",
        "max",
        "errors",
        "timeouts",
    ]
    .map(String::from)
    .to_vec()];
    for r in rows {
        g.push(vec![
            r.op.clone(),
            thousands(r.count as f64),
            thousands(r.ops_per_sec_peak),
            thousands(r.ops_per_sec_sustained),
            fmt_ms(r.mean_ms),
            fmt_ms(r.median_ms),
            fmt_ms(r.p95_ms),
            fmt_ms(r.p99_ms),
            fmt_ms(r.p999_ms),
            fmt_ms(r.max_ms),
            thousands(r.errors as f64),
            thousands(r.timeouts as f64),
        ]);
    }
    let mut s = grid(&g);
    for r in rows {
        if r.not_found > 0 {
            let _ = writeln!(s, "{}: {} reads found no row", r.op, r.not_found);
        }
        if r.validated > 0 {
            let _ = writeln!(
                s,
                "{}: {} reads validated, {} mismatches",
                r.op, r.validated, r.validation_failures
            );
        }
        for (k, v) in &r.errors_by_kind {
            let _ = writeln!(s, "{}: {v} × {k}", r.op);
        }
    }
    s
}

/// Left-aligned first column, right-aligned others.
fn grid(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|v| v.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut s = String::new();
    for (i, r) in rows.iter().enumerate() {
        for (c, v) in r.iter().enumerate() {
            let pad = widths[c] - v.chars().count();
            if c == 0 {
                s.push_str(v);
                s.push_str(&" ".repeat(pad));
            } else {
                s.push_str("  ");
                s.push_str(&" ".repeat(pad));
                s.push_str(v);
            }
        }
        s.push('\n');
        if i == 0 {
            s.push_str(&"-".repeat(widths.iter().sum::<usize>() + 2 * cols.saturating_sub(1)));
            s.push('\n');
        }
    }
    s
}

/// `YYYY-MM-DDTHH:MM:SSZ` for a Unix time (civil-from-days, proleptic Gregorian).
pub fn utc(unix: u64) -> String {
    let days = (unix / 86_400) as i64;
    let secs = unix % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60
    )
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{}</title><style>\
body{{font-family:sans-serif;margin:2em;max-width:1100px}}pre{{background:#f6f6f6;padding:1em;overflow-x:auto}}\
svg{{background:#fff;border:1px solid #ddd;margin:1em 0}}.note{{color:#555;font-size:90%}}\
</style></head><body>\n{}\n</body></html>\n",
        esc(title),
        body
    )
}

/// A named line on a chart.
pub struct Series {
    /// Legend text.
    pub name: String,
    /// `(x, y)` points.
    pub points: Vec<(f64, f64)>,
}

/// Axis scales.
#[derive(Clone, Copy, PartialEq)]
pub enum Scale {
    /// Plain.
    Linear,
    /// log10 (values ≤ 0 are clamped to the smallest positive value).
    Log,
    /// Percentiles spread as -log10(1 - p/100): 0, 90, 99, 99.9, … equally spaced.
    Percentile,
}

const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

fn pct_x(p: f64) -> f64 {
    let q = (1.0 - p / 100.0).max(1e-6);
    -q.log10()
}

/// An inline SVG line chart.
pub fn chart(
    title: &str,
    xlabel: &str,
    ylabel: &str,
    series: &[Series],
    xs: Scale,
    ys: Scale,
) -> String {
    let (w, h, l, r, t, b) = (900.0, 320.0, 70.0, 150.0, 30.0, 45.0);
    let pw = w - l - r;
    let ph = h - t - b;
    let tx = |x: f64| match xs {
        Scale::Percentile => pct_x(x),
        Scale::Log => x.max(1e-9).log10(),
        Scale::Linear => x,
    };
    let all: Vec<(f64, f64)> = series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .collect();
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\">\
<text x=\"{}\" y=\"18\" font-size=\"14\" text-anchor=\"middle\">{}</text>",
        l + pw / 2.0,
        esc(title)
    );
    if all.is_empty() {
        s.push_str("<text x=\"100\" y=\"100\">no data</text></svg>\n");
        return s;
    }
    let min_pos = all
        .iter()
        .map(|p| p.1)
        .filter(|v| *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    let min_pos = if min_pos.is_finite() { min_pos } else { 1.0 };
    let ty = |y: f64| match ys {
        // Zero latency cannot be drawn on a log axis: put it at the smallest measured value.
        Scale::Log if y <= 0.0 => min_pos.log10(),
        Scale::Log => y.log10(),
        _ => y,
    };
    let (mut x0, mut x1) = all
        .iter()
        .map(|p| tx(p.0))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |a, v| {
            (a.0.min(v), a.1.max(v))
        });
    let (mut y0, mut y1) = all
        .iter()
        .map(|p| ty(p.1))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |a, v| {
            (a.0.min(v), a.1.max(v))
        });
    if ys == Scale::Linear {
        y0 = 0.0;
        y1 *= 1.05;
    } else {
        y0 = y0.floor();
        y1 = y1.ceil();
    }
    if xs == Scale::Percentile {
        x0 = 0.0;
        x1 = x1.ceil().max(2.0);
    }
    if (x1 - x0).abs() < 1e-12 {
        x1 = x0 + 1.0;
    }
    if (y1 - y0).abs() < 1e-12 {
        y1 = y0 + 1.0;
    }
    let px = |x: f64| l + (tx(x) - x0) / (x1 - x0) * pw;
    let py = |y: f64| t + ph - (ty(y) - y0) / (y1 - y0) * ph;
    let _ = write!(
        s,
        "<rect x=\"{l}\" y=\"{t}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"#999\"/>"
    );
    // Y ticks.
    let yticks: Vec<(f64, String)> = match ys {
        Scale::Log => (y0 as i64..=y1 as i64)
            .map(|e| (10f64.powi(e as i32), fmt_tick(10f64.powi(e as i32))))
            .collect(),
        _ => (0..=5)
            .map(|i| y0 + (y1 - y0) * i as f64 / 5.0)
            .map(|v| (v, fmt_tick(v)))
            .collect(),
    };
    for (v, label) in yticks {
        let y = py(v);
        let _ = write!(
            s,
            "<line x1=\"{l}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#eee\"/>\
<text x=\"{}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\">{label}</text>",
            l + pw,
            l - 5.0,
            y + 4.0
        );
    }
    // X ticks.
    let xticks: Vec<(f64, String)> = match xs {
        Scale::Percentile => (0..=x1 as i64)
            .map(|d| {
                let p = 100.0 * (1.0 - 10f64.powi(-(d as i32)));
                (
                    p,
                    if d == 0 {
                        "0%".to_string()
                    } else {
                        format!("{}%", trim_float(p))
                    },
                )
            })
            .collect(),
        _ => (0..=5)
            .map(|i| x0 + (x1 - x0) * i as f64 / 5.0)
            .map(|v| (v, fmt_tick(v)))
            .collect(),
    };
    for (v, label) in xticks {
        let x = px(v);
        let _ = write!(
            s,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{t}\" y2=\"{}\" stroke=\"#eee\"/>\
<text x=\"{x:.1}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{label}</text>",
            t + ph,
            t + ph + 15.0
        );
    }
    let _ = write!(
        s,
        "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">{}</text>\
<text x=\"15\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 15 {})\">{}</text>",
        l + pw / 2.0,
        h - 8.0,
        esc(xlabel),
        t + ph / 2.0,
        t + ph / 2.0,
        esc(ylabel)
    );
    for (i, se) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let pts: Vec<String> = se
            .points
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        let _ = write!(
            s,
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"1.5\" points=\"{}\"/>",
            pts.join(" ")
        );
        if se.points.len() <= 20 {
            for &(x, y) in &se.points {
                let _ = write!(
                    s,
                    "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\" fill=\"{color}\"/>",
                    px(x),
                    py(y)
                );
            }
        }
        let ly = t + 15.0 + 18.0 * i as f64;
        let _ = write!(
            s,
            "<line x1=\"{}\" x2=\"{}\" y1=\"{ly}\" y2=\"{ly}\" stroke=\"{color}\" stroke-width=\"3\"/>\
<text x=\"{}\" y=\"{}\" font-size=\"12\">{}</text>",
            l + pw + 10.0,
            l + pw + 30.0,
            l + pw + 35.0,
            ly + 4.0,
            esc(&se.name)
        );
    }
    s.push_str("</svg>\n");
    s
}

fn trim_float(v: f64) -> String {
    let s = format!("{v:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn fmt_tick(v: f64) -> String {
    if v.abs() >= 1000.0 {
        thousands(v)
    } else if v.abs() >= 1.0 || v == 0.0 {
        trim_float((v * 100.0).round() / 100.0)
    } else {
        trim_float(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(op: &str, ops: f64, p99: f64) -> OpSummary {
        OpSummary {
            op: op.into(),
            count: 100,
            ops_per_sec_sustained: ops,
            ops_per_sec_peak: ops * 1.2,
            mean_ms: p99 / 3.0,
            median_ms: p99 / 4.0,
            p95_ms: p99 / 2.0,
            p99_ms: p99,
            p999_ms: p99 * 2.0,
            max_ms: p99 * 10.0,
            ..Default::default()
        }
    }

    #[test]
    fn number_formatting() {
        assert_eq!(thousands(12562.4), "12,562");
        assert_eq!(thousands(133915.0), "133,915");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(1_000_000.0), "1,000,000");
        assert_eq!(fmt_ms(0.4), "0.400");
        assert_eq!(fmt_ms(14.5), "14.50");
        assert_eq!(fmt_ms(1097.94), "1097.9");
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(1_700_000_000), "2023-11-14T22:13:20Z");
    }

    #[test]
    fn gains_follow_seed_000_convention() {
        // rDE vs Cassandra: 133,915 vs 12,562 ops/s is 10.7x; p99 0.6 vs 14.5 ms is 24.2x.
        assert!((gain(133_915.0, 12_562.0, true) - 10.66).abs() < 0.01);
        assert!((gain(0.6, 14.5, false) - 24.17).abs() < 0.01);
        assert_eq!(gain(1.0, 0.0, true), 0.0);
    }

    #[test]
    fn medians_over_rounds() {
        let a = summary("read", 100.0, 3.0);
        let b = summary("read", 300.0, 1.0);
        let c = summary("read", 200.0, 2.0);
        let m = median_summary("read", &[&a, &b, &c]);
        assert_eq!(m.ops_per_sec_sustained, 200.0);
        assert_eq!(m.p99_ms, 2.0);
    }

    #[test]
    fn op_table_has_a_row_per_kind_and_the_seed_columns() {
        let r = summary("read", 12_562.0, 14.5);
        let o = summary("overall", 12_562.0, 14.5);
        let t = op_table(&[&r, &o]);
        let lines: Vec<&str> = t.lines().collect();
        assert!(
            lines[0].contains("ops/s peak")
                && lines[0].contains("p99.9")
                && lines[0].contains("max")
        );
        assert!(
            lines[2].starts_with("read")
                && lines[2].contains("12,562")
                && lines[2].contains("14.50")
        );
        assert!(lines[3].starts_with("overall"));
    }

    #[test]
    fn chart_is_self_contained_svg() {
        let s = chart(
            "t",
            "x",
            "y",
            &[Series {
                name: "a<b".into(),
                points: vec![(0.0, 1.0), (50.0, 2.0), (99.9, 5.0), (100.0, 9.0)],
            }],
            Scale::Percentile,
            Scale::Log,
        );
        assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
        assert!(s.contains("a&lt;b") && s.contains("99.9%"));
        assert!(!s.contains("http://") || s.contains("xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(!s.contains("NaN") && !s.contains("inf"));
    }
}
