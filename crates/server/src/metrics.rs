//! Process metrics for the Prometheus endpoint (`/metrics` on the admin listener).
//!
//! The request path only ever does relaxed atomic adds on a slot of its own thread's shard
//! ([`Counter`], [`Histogram`]): no lock, no allocation, no cache line written by two cores at
//! once. Reading (a scrape) sums the shards. [`Exposition`] writes the Prometheus text format.
//!
//! Names are `peregrine_` + `snake_case` + unit (`_seconds`, `_bytes`, `_total`), as
//! `docs/operations.md` lists them.

use std::cell::Cell;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use arc_swap::ArcSwap;
use rustc_hash::FxHashMap;

/// Shards per counter: more than the cores a node usually has, so threads rarely share one.
const SHARDS: usize = 16;

thread_local! {
    static SHARD: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// This thread's shard, assigned round-robin on first use.
fn shard() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    SHARD.with(|s| {
        let mut i = s.get();
        if i == usize::MAX {
            i = NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS;
            s.set(i);
        }
        i
    })
}

/// One cache line (two on CPUs that prefetch pairs) per shard.
#[repr(align(128))]
#[derive(Default)]
struct Padded<T>(T);

/// A monotonically increasing count, sharded per thread.
#[derive(Default)]
pub struct Counter {
    shards: [Padded<AtomicU64>; SHARDS],
}

impl Counter {
    pub fn add(&self, n: u64) {
        self.shards[shard()].0.fetch_add(n, Ordering::Relaxed);
    }
    pub fn get(&self) -> u64 {
        self.shards
            .iter()
            .map(|s| s.0.load(Ordering::Relaxed))
            .sum()
    }
}

/// A value that goes up and down, sharded per thread (the sum is the value).
#[derive(Default)]
pub struct Gauge {
    shards: [Padded<AtomicI64>; SHARDS],
}

impl Gauge {
    pub fn add(&self, n: i64) {
        self.shards[shard()].0.fetch_add(n, Ordering::Relaxed);
    }
    pub fn get(&self) -> i64 {
        self.shards
            .iter()
            .map(|s| s.0.load(Ordering::Relaxed))
            .sum()
    }
}

/// Upper bounds of the latency buckets in microseconds (then `+Inf`).
pub const LATENCY_BUCKETS_US: [u64; 18] = [
    50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
    1_000_000, 2_500_000, 5_000_000, 10_000_000, 30_000_000,
];
const BUCKETS: usize = LATENCY_BUCKETS_US.len() + 1;

#[derive(Default)]
struct HistShard {
    buckets: [AtomicU64; BUCKETS],
    sum_us: AtomicU64,
}

/// A latency histogram with fixed buckets ([`LATENCY_BUCKETS_US`]), sharded per thread.
#[derive(Default)]
pub struct Histogram {
    shards: [Padded<HistShard>; SHARDS],
}

/// A histogram read at one time: per-bucket (not cumulative) counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HistogramSnapshot {
    pub buckets: [u64; BUCKETS],
    pub sum_us: u64,
}

impl HistogramSnapshot {
    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// The bucket bound (microseconds) under which the fraction `q` of the samples fall; the
    /// last finite bound for samples over it; 0 with no samples.
    pub fn quantile_us(&self, q: f64) -> u64 {
        let total = self.count();
        if total == 0 {
            return 0;
        }
        let want = ((total as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= want {
                return LATENCY_BUCKETS_US
                    .get(i)
                    .copied()
                    .unwrap_or(LATENCY_BUCKETS_US[LATENCY_BUCKETS_US.len() - 1]);
            }
        }
        LATENCY_BUCKETS_US[LATENCY_BUCKETS_US.len() - 1]
    }
}

impl Histogram {
    pub fn observe(&self, d: Duration) {
        let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        let i = LATENCY_BUCKETS_US.partition_point(|&b| b < us);
        let s = &self.shards[shard()].0;
        s.buckets[i].fetch_add(1, Ordering::Relaxed);
        s.sum_us.fetch_add(us, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> HistogramSnapshot {
        let mut out = HistogramSnapshot::default();
        for s in &self.shards {
            for (o, b) in out.buckets.iter_mut().zip(&s.0.buckets) {
                *o += b.load(Ordering::Relaxed);
            }
            out.sum_us += s.0.sum_us.load(Ordering::Relaxed);
        }
        out
    }
}

/// What a request did, for the per-operation histograms (Cassandra's ClientRequest scopes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// A single-partition read.
    Read,
    /// A read over several partitions (or a whole table).
    RangeRead,
    Write,
    Batch,
    /// A lightweight transaction (IF ...).
    Cas,
    /// A schema change, role or permission statement, USE, and anything else.
    Other,
}

impl Op {
    pub const ALL: [Op; 6] = [
        Op::Read,
        Op::RangeRead,
        Op::Write,
        Op::Batch,
        Op::Cas,
        Op::Other,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::RangeRead => "range_read",
            Op::Write => "write",
            Op::Batch => "batch",
            Op::Cas => "cas",
            Op::Other => "other",
        }
    }
}

/// Latency per operation type for one table.
#[derive(Default)]
pub struct TableMetrics {
    ops: [Histogram; 6],
}

impl TableMetrics {
    pub fn observe(&self, op: Op, d: Duration) {
        self.ops[op as usize].observe(d);
    }
    pub fn snapshot(&self, op: Op) -> HistogramSnapshot {
        self.ops[op as usize].snapshot()
    }
}

/// The protocol error codes counted by [`Metrics::errors`] (Cassandra's, in the spec's
/// order); anything else counts as `0x0000` (server error).
pub const ERROR_CODES: [(i32, &str); 18] = [
    (0x0000, "server_error"),
    (0x000A, "protocol_error"),
    (0x0100, "bad_credentials"),
    (0x1000, "unavailable"),
    (0x1001, "overloaded"),
    (0x1002, "is_bootstrapping"),
    (0x1003, "truncate_error"),
    (0x1100, "write_timeout"),
    (0x1200, "read_timeout"),
    (0x1300, "read_failure"),
    (0x1400, "function_failure"),
    (0x1500, "write_failure"),
    (0x2000, "syntax_error"),
    (0x2100, "unauthorized"),
    (0x2200, "invalid"),
    (0x2300, "config_error"),
    (0x2400, "already_exists"),
    (0x2500, "unprepared"),
];

/// Request opcodes with their own latency histogram.
pub const OPCODES: [&str; 5] = ["query", "prepare", "execute", "batch", "auth_response"];

type TableMap = FxHashMap<Arc<str>, FxHashMap<Arc<str>, Arc<TableMetrics>>>;

/// The front end's metrics, and the per-operation and per-table ones a backend records.
pub struct Metrics {
    pub connections_open: Gauge,
    pub connections_total: Counter,
    pub connections_refused_total: Counter,
    pub streams_in_flight: Gauge,
    pub bytes_received_total: Counter,
    pub bytes_sent_total: Counter,
    /// By index in [`OPCODES`].
    requests: [Histogram; OPCODES.len()],
    /// By index in [`ERROR_CODES`].
    errors: [Counter; ERROR_CODES.len()],
    /// By [`Op`] over all tables.
    ops: TableMetrics,
    /// Keyspace, then table.
    tables: ArcSwap<TableMap>,
    tables_insert: Mutex<()>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            connections_open: Gauge::default(),
            connections_total: Counter::default(),
            connections_refused_total: Counter::default(),
            streams_in_flight: Gauge::default(),
            bytes_received_total: Counter::default(),
            bytes_sent_total: Counter::default(),
            requests: Default::default(),
            errors: Default::default(),
            ops: TableMetrics::default(),
            tables: ArcSwap::from_pointee(FxHashMap::default()),
            tables_insert: Mutex::new(()),
        }
    }
}

/// The process's metrics.
pub fn global() -> &'static Metrics {
    static METRICS: std::sync::OnceLock<Metrics> = std::sync::OnceLock::new();
    METRICS.get_or_init(Metrics::default)
}

impl Metrics {
    /// One request of opcode index `opcode` (in [`OPCODES`]) answered after `d`.
    pub fn request(&self, opcode: usize, d: Duration) {
        if let Some(h) = self.requests.get(opcode) {
            h.observe(d);
        }
    }

    pub fn error(&self, code: i32) {
        let i = ERROR_CODES
            .iter()
            .position(|(c, _)| *c == code)
            .unwrap_or(0);
        self.errors[i].add(1);
    }

    pub fn error_count(&self, code: i32) -> u64 {
        ERROR_CODES
            .iter()
            .position(|(c, _)| *c == code)
            .map_or(0, |i| self.errors[i].get())
    }

    /// Requests of `opcode` (a name in [`OPCODES`]) answered since the start.
    pub fn requests_of(&self, opcode: &str) -> u64 {
        OPCODES
            .iter()
            .position(|o| *o == opcode)
            .map_or(0, |i| self.requests[i].snapshot().count())
    }

    /// Requests answered since the start, all opcodes.
    pub fn requests_total(&self) -> u64 {
        self.requests.iter().map(|h| h.snapshot().count()).sum()
    }

    /// One operation on `table` (if it names one) taking `d`.
    pub fn operation(&self, op: Op, table: Option<&TableMetrics>, d: Duration) {
        self.ops.observe(op, d);
        if let Some(t) = table {
            t.observe(op, d);
        }
    }

    /// Records an operation on `keyspace.table` (see [`Metrics::operation`]) without taking
    /// a reference to the table's metrics (no shared reference count written per request).
    pub fn table_operation(&self, op: Op, keyspace: &str, table: &str, d: Duration) {
        let tables = self.tables.load();
        match tables.get(keyspace).and_then(|k| k.get(table)) {
            Some(t) => self.operation(op, Some(t), d),
            None => self.operation(op, Some(&self.table(keyspace, table)), d),
        }
    }

    /// The metrics of `keyspace.table`, created on first use. Lookups borrow the names and
    /// take no lock (the map is swapped whole when a table is added).
    pub fn table(&self, keyspace: &str, table: &str) -> Arc<TableMetrics> {
        if let Some(t) = self.tables.load().get(keyspace).and_then(|k| k.get(table)) {
            return t.clone();
        }
        let _guard = self
            .tables_insert
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let current = self.tables.load_full();
        if let Some(t) = current.get(keyspace).and_then(|k| k.get(table)) {
            return t.clone();
        }
        let mut next = (*current).clone();
        let t = Arc::new(TableMetrics::default());
        next.entry(Arc::from(keyspace))
            .or_default()
            .insert(Arc::from(table), t.clone());
        self.tables.store(Arc::new(next));
        t
    }

    /// Forgets the tables `keep` refuses (dropped ones), so their series go away.
    pub fn retain_tables(&self, keep: impl Fn(&str, &str) -> bool) {
        let _guard = self
            .tables_insert
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut next = (*self.tables.load_full()).clone();
        for (ks, tables) in next.iter_mut() {
            tables.retain(|t, _| keep(ks, t));
        }
        next.retain(|_, tables| !tables.is_empty());
        self.tables.store(Arc::new(next));
    }

    /// The tables with metrics, sorted.
    pub fn tables(&self) -> Vec<(Arc<str>, Arc<str>, Arc<TableMetrics>)> {
        let mut v: Vec<_> = self
            .tables
            .load()
            .iter()
            .flat_map(|(k, tables)| {
                tables
                    .iter()
                    .map(|(t, m)| (k.clone(), t.clone(), m.clone()))
            })
            .collect();
        v.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        v
    }

    /// Writes the front end's and the per-operation/per-table metrics.
    pub fn export(&self, out: &mut Exposition) {
        let single: [(&str, &str, &str, f64); 6] = [
            (
                "peregrine_connections_open",
                "gauge",
                "Client connections open now.",
                self.connections_open.get() as f64,
            ),
            (
                "peregrine_connections_total",
                "counter",
                "Client connections accepted.",
                self.connections_total.get() as f64,
            ),
            (
                "peregrine_connections_refused_total",
                "counter",
                "Client connections refused (max_connections, per-address limit).",
                self.connections_refused_total.get() as f64,
            ),
            (
                "peregrine_streams_in_flight",
                "gauge",
                "Requests received and not yet answered, over all connections.",
                self.streams_in_flight.get() as f64,
            ),
            (
                "peregrine_received_bytes_total",
                "counter",
                "Bytes read from client connections.",
                self.bytes_received_total.get() as f64,
            ),
            (
                "peregrine_sent_bytes_total",
                "counter",
                "Bytes of answers handed to client connections.",
                self.bytes_sent_total.get() as f64,
            ),
        ];
        for (name, kind, help, value) in single {
            out.single(name, kind, help, value);
        }
        out.family(
            "peregrine_request_duration_seconds",
            "histogram",
            "Time from a request's arrival to its answer, by protocol opcode.",
        );
        for (name, h) in OPCODES.iter().zip(&self.requests) {
            out.histogram(&[("opcode", name)], &h.snapshot());
        }
        out.family(
            "peregrine_request_errors_total",
            "counter",
            "Requests answered with an ERROR, by protocol error code.",
        );
        for ((code, name), c) in ERROR_CODES.iter().zip(&self.errors) {
            let code = format!("0x{code:04X}");
            out.sample(&[("code", &code), ("error", name)], c.get() as f64);
        }
        out.family(
            "peregrine_operation_duration_seconds",
            "histogram",
            "Time to execute a statement, by operation type.",
        );
        for op in Op::ALL {
            out.histogram(&[("op", op.name())], &self.ops.snapshot(op));
        }
        out.family(
            "peregrine_table_operation_duration_seconds",
            "histogram",
            "Time to execute a statement, by table and operation type.",
        );
        for (ks, t, m) in self.tables() {
            for op in Op::ALL {
                let snap = m.snapshot(op);
                if snap.count() > 0 {
                    out.histogram(
                        &[("keyspace", &ks), ("table", &t), ("op", op.name())],
                        &snap,
                    );
                }
            }
        }
    }
}

/// Counts a client connection as open for as long as it lives.
pub struct OpenConnection(());

impl OpenConnection {
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        let m = global();
        m.connections_total.add(1);
        m.connections_open.add(1);
        OpenConnection(())
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        global().connections_open.add(-1);
    }
}

/// A Prometheus text-format (0.0.4) document being written.
#[derive(Default)]
pub struct Exposition {
    text: String,
    family: String,
}

impl Exposition {
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts a metric family: its `# HELP` and `# TYPE` lines.
    pub fn family(&mut self, name: &str, kind: &str, help: &str) {
        self.family = name.to_string();
        let _ = writeln!(self.text, "# HELP {name} {help}");
        let _ = writeln!(self.text, "# TYPE {name} {kind}");
    }

    /// A family of one unlabelled sample.
    pub fn single(&mut self, name: &str, kind: &str, help: &str, value: f64) {
        self.family(name, kind, help);
        self.sample(&[], value);
    }

    /// One sample of the current family.
    pub fn sample(&mut self, labels: &[(&str, &str)], value: f64) {
        let name = self.family.clone();
        self.line(&name, labels, None, value);
    }

    /// One sample named `family` + `suffix` (a summary's or histogram's parts).
    fn line(&mut self, name: &str, labels: &[(&str, &str)], le: Option<&str>, value: f64) {
        self.text.push_str(name);
        let n = labels.len() + usize::from(le.is_some());
        if n > 0 {
            self.text.push('{');
            let all = labels.iter().copied().chain(le.map(|l| ("le", l)));
            for (i, (k, v)) in all.enumerate() {
                if i > 0 {
                    self.text.push(',');
                }
                let _ = write!(self.text, "{k}=\"{}\"", escape(v));
            }
            self.text.push('}');
        }
        let _ = writeln!(self.text, " {}", number(value));
    }

    /// A histogram of the current family (in seconds) with `labels`.
    pub fn histogram(&mut self, labels: &[(&str, &str)], h: &HistogramSnapshot) {
        let base = self.family.clone();
        let bucket = format!("{base}_bucket");
        let mut cumulative = 0;
        for (i, n) in h.buckets.iter().enumerate() {
            cumulative += n;
            let le = match LATENCY_BUCKETS_US.get(i) {
                Some(us) => number(*us as f64 / 1e6),
                None => "+Inf".to_string(),
            };
            self.line(&bucket, labels, Some(&le), cumulative as f64);
        }
        self.line(&format!("{base}_sum"), labels, None, h.sum_us as f64 / 1e6);
        self.line(&format!("{base}_count"), labels, None, cumulative as f64);
    }

    /// A histogram of the current family from `(upper bound, count)` pairs (per bucket, not
    /// cumulative; the last bound infinite) and the sum of the samples.
    pub fn custom_histogram(&mut self, labels: &[(&str, &str)], buckets: &[(f64, u64)], sum: f64) {
        let base = self.family.clone();
        let bucket = format!("{base}_bucket");
        let mut cumulative = 0;
        for (le, n) in buckets {
            cumulative += n;
            let le = if le.is_finite() {
                number(*le)
            } else {
                "+Inf".to_string()
            };
            self.line(&bucket, labels, Some(&le), cumulative as f64);
        }
        self.line(&format!("{base}_sum"), labels, None, sum);
        self.line(&format!("{base}_count"), labels, None, cumulative as f64);
    }

    pub fn finish(self) -> String {
        self.text
    }
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Prometheus number formatting: integers without a fraction.
fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_cumulative_in_the_text() {
        let m = Metrics::default();
        m.request(2, Duration::from_micros(80));
        m.request(2, Duration::from_millis(3));
        m.request(2, Duration::from_secs(60));
        m.error(0x2200);
        m.error(0x7777);
        let t = m.table("ks", "t");
        m.operation(Op::Read, Some(&t), Duration::from_micros(10));
        let mut out = Exposition::new();
        m.export(&mut out);
        let text = out.finish();
        assert!(text.contains(
            "peregrine_request_duration_seconds_bucket{opcode=\"execute\",le=\"0.0001\"} 1\n"
        ));
        assert!(text.contains(
            "peregrine_request_duration_seconds_bucket{opcode=\"execute\",le=\"0.005\"} 2\n"
        ));
        assert!(text.contains(
            "peregrine_request_duration_seconds_bucket{opcode=\"execute\",le=\"+Inf\"} 3\n"
        ));
        assert!(text.contains("peregrine_request_duration_seconds_count{opcode=\"execute\"} 3\n"));
        assert!(
            text.contains("peregrine_request_errors_total{code=\"0x2200\",error=\"invalid\"} 1\n")
        );
        assert!(text.contains(
            "peregrine_request_errors_total{code=\"0x0000\",error=\"server_error\"} 1\n"
        ));
        assert!(text.contains(
            "peregrine_table_operation_duration_seconds_count{keyspace=\"ks\",table=\"t\",op=\"read\"} 1\n"
        ));
        assert_eq!(m.table("ks", "t").snapshot(Op::Read).count(), 1);
        m.retain_tables(|_, _| false);
        assert!(m.tables().is_empty());
    }

    #[test]
    fn quantiles_are_bucket_bounds() {
        let h = Histogram::default();
        for _ in 0..99 {
            h.observe(Duration::from_micros(90));
        }
        h.observe(Duration::from_millis(20));
        let s = h.snapshot();
        assert_eq!(s.quantile_us(0.5), 100);
        assert_eq!(s.quantile_us(1.0), 25_000);
        assert_eq!(HistogramSnapshot::default().quantile_us(0.5), 0);
    }

    #[test]
    fn label_values_are_escaped() {
        let mut out = Exposition::new();
        out.family("x_total", "counter", "x");
        out.sample(&[("k", "a\"b\\c\nd")], 1.5);
        assert_eq!(
            out.finish().lines().last(),
            Some("x_total{k=\"a\\\"b\\\\c\\nd\"} 1.5")
        );
    }
}
