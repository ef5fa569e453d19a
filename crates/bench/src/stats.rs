//! Measurements: HDR histograms per operation kind, error and timeout counts, per-second
//! intervals, and the summaries the reports print (ops/s peak and sustained, mean, median,
//! p95, p99, p99.9, max).
//!
//! Latencies are recorded in microseconds; summaries are in milliseconds.

use crate::workload::OpKind;
use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::BTreeMap;

/// Highest latency a histogram can hold: one hour in microseconds (larger values saturate).
const MAX_LATENCY_US: u64 = 3_600_000_000;
/// How many distinct error messages are kept as samples per operation kind.
const MAX_ERROR_SAMPLES: usize = 5;

/// A fresh latency histogram (1 µs .. 1 h, 3 significant figures).
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_US, 3).expect("static histogram bounds are valid")
}

/// Everything measured for one operation kind over some period.
#[derive(Debug, Clone, Default)]
pub struct OpRecord {
    /// Latencies of successful operations, µs (allocated on first use: most kinds are unused).
    pub hist: Option<Histogram<u64>>,
    /// Failed operations by error class (timeouts included).
    pub errors: BTreeMap<String, u64>,
    /// Of the errors, how many were timeouts (client or server side).
    pub timeouts: u64,
    /// Reads that found no row (not errors, but a sign the load phase did not run).
    pub not_found: u64,
    /// Reads whose values did not match what was written (`--validate`).
    pub validation_failures: u64,
    /// Reads checked by `--validate`.
    pub validated: u64,
    /// First few distinct error messages.
    pub error_samples: Vec<String>,
}

impl OpRecord {
    /// Records a successful operation's latency.
    pub fn record(&mut self, latency_us: u64) {
        self.hist
            .get_or_insert_with(new_histogram)
            .saturating_record(latency_us.max(1));
    }

    /// Records a failed operation.
    pub fn record_error(&mut self, class: &str, timeout: bool, message: &str) {
        *self.errors.entry(class.to_string()).or_default() += 1;
        if timeout {
            self.timeouts += 1;
        }
        if self.error_samples.len() < MAX_ERROR_SAMPLES
            && !self.error_samples.iter().any(|m| m == message)
        {
            self.error_samples.push(message.to_string());
        }
    }

    /// Successful operations.
    pub fn count(&self) -> u64 {
        self.hist.as_ref().map_or(0, |h| h.len())
    }

    /// Failed operations.
    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }

    /// Adds `other` into `self`.
    pub fn merge(&mut self, other: &OpRecord) {
        if let Some(h) = &other.hist {
            let mine = self.hist.get_or_insert_with(new_histogram);
            // Both have the same bounds, so adding cannot fail.
            let _ = mine.add(h);
        }
        for (k, v) in &other.errors {
            *self.errors.entry(k.clone()).or_default() += v;
        }
        self.timeouts += other.timeouts;
        self.not_found += other.not_found;
        self.validation_failures += other.validation_failures;
        self.validated += other.validated;
        for m in &other.error_samples {
            if self.error_samples.len() < MAX_ERROR_SAMPLES && !self.error_samples.contains(m) {
                self.error_samples.push(m.clone());
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.count() == 0 && self.errors.is_empty() && self.not_found == 0
    }
}

/// One [`OpRecord`] per [`OpKind`].
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    /// Indexed by [`OpKind::index`].
    pub ops: [OpRecord; 5],
}

impl Recorder {
    /// The record for `kind`.
    pub fn op(&mut self, kind: OpKind) -> &mut OpRecord {
        &mut self.ops[kind.index()]
    }

    /// Adds `other` into `self`.
    pub fn merge(&mut self, other: &Recorder) {
        for (a, b) in self.ops.iter_mut().zip(other.ops.iter()) {
            a.merge(b);
        }
    }

    /// All kinds merged into one record ("overall").
    pub fn overall(&self) -> OpRecord {
        let mut all = OpRecord::default();
        for op in &self.ops {
            all.merge(op);
        }
        all
    }

    /// Successful operations of every kind.
    pub fn total_count(&self) -> u64 {
        self.ops.iter().map(OpRecord::count).sum()
    }

    /// Failed operations of every kind.
    pub fn total_errors(&self) -> u64 {
        self.ops.iter().map(OpRecord::error_count).sum()
    }
}

/// One second of the run, for the throughput and latency-over-time plots.
#[derive(Debug, Clone, Serialize)]
pub struct TimelinePoint {
    /// Seconds since measurement start (the interval `[second, second + 1)`).
    pub second: u64,
    /// Successful operations per kind in this second, indexed by [`OpKind::index`].
    pub ops: [u64; 5],
    /// Successful operations of all kinds.
    pub total: u64,
    /// Failed operations of all kinds.
    pub errors: u64,
    /// Median latency of this second, ms.
    pub p50_ms: f64,
    /// 99th percentile latency of this second, ms.
    pub p99_ms: f64,
    /// Highest latency of this second, ms.
    pub max_ms: f64,
}

impl TimelinePoint {
    /// Summarises one second's recorder.
    pub fn from_interval(second: u64, rec: &Recorder) -> Self {
        let overall = rec.overall();
        let (p50, p99, max) = match &overall.hist {
            Some(h) if !h.is_empty() => (
                us_to_ms(h.value_at_quantile(0.5)),
                us_to_ms(h.value_at_quantile(0.99)),
                us_to_ms(h.max()),
            ),
            _ => (0.0, 0.0, 0.0),
        };
        TimelinePoint {
            second,
            ops: std::array::from_fn(|i| rec.ops[i].count()),
            total: rec.total_count(),
            errors: rec.total_errors(),
            p50_ms: p50,
            p99_ms: p99,
            max_ms: max,
        }
    }
}

fn us_to_ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// The figures of one row of the seed tables.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct OpSummary {
    /// `read`, `update`, …, or `overall`.
    pub op: String,
    /// Successful operations.
    pub count: u64,
    /// Failed operations (timeouts included).
    pub errors: u64,
    /// Failed operations that were timeouts.
    pub timeouts: u64,
    /// Reads that found no row.
    pub not_found: u64,
    /// Reads checked by `--validate`, and how many did not match.
    pub validated: u64,
    /// Reads whose values did not match what was written.
    pub validation_failures: u64,
    /// Successful operations / measured seconds.
    pub ops_per_sec_sustained: f64,
    /// Highest one-second count.
    pub ops_per_sec_peak: f64,
    /// Latency figures, ms.
    pub mean_ms: f64,
    /// Median latency, ms.
    pub median_ms: f64,
    /// 95th percentile, ms.
    pub p95_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// 99.9th percentile, ms.
    pub p999_ms: f64,
    /// Highest latency, ms.
    pub max_ms: f64,
    /// Errors by class.
    pub errors_by_kind: BTreeMap<String, u64>,
    /// First few distinct error messages.
    pub error_samples: Vec<String>,
}

impl OpSummary {
    /// Summarises `rec` measured over `seconds`, with `peak` the best one-second count.
    pub fn new(op: &str, rec: &OpRecord, seconds: f64, peak: u64) -> Self {
        let mut s = OpSummary {
            op: op.to_string(),
            count: rec.count(),
            errors: rec.error_count(),
            timeouts: rec.timeouts,
            not_found: rec.not_found,
            validated: rec.validated,
            validation_failures: rec.validation_failures,
            ops_per_sec_sustained: if seconds > 0.0 {
                rec.count() as f64 / seconds
            } else {
                0.0
            },
            // A run shorter than a second has no full second; the peak is never below the mean.
            ops_per_sec_peak: (peak as f64).max(if seconds > 0.0 {
                rec.count() as f64 / seconds
            } else {
                0.0
            }),
            errors_by_kind: rec.errors.clone(),
            error_samples: rec.error_samples.clone(),
            ..Default::default()
        };
        if let Some(h) = rec.hist.as_ref().filter(|h| !h.is_empty()) {
            s.mean_ms = h.mean() / 1000.0;
            s.median_ms = us_to_ms(h.value_at_quantile(0.5));
            s.p95_ms = us_to_ms(h.value_at_quantile(0.95));
            s.p99_ms = us_to_ms(h.value_at_quantile(0.99));
            s.p999_ms = us_to_ms(h.value_at_quantile(0.999));
            s.max_ms = us_to_ms(h.max());
        }
        s
    }
}

/// Quantiles at which the percentile-distribution curves are sampled.
pub const CURVE_QUANTILES: [f64; 12] = [
    0.0, 0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9995, 0.9999, 0.99999, 1.0,
];

/// `(percentile, ms)` points of a latency distribution, for the percentile plot.
pub fn percentile_curve(rec: &OpRecord) -> Vec<(f64, f64)> {
    match rec.hist.as_ref().filter(|h| !h.is_empty()) {
        Some(h) => CURVE_QUANTILES
            .iter()
            .map(|&q| (q * 100.0, us_to_ms(h.value_at_quantile(q))))
            .collect(),
        None => Vec::new(),
    }
}

/// Per-kind and overall summaries of a whole run; kinds with no activity are left out.
pub fn summarize(
    total: &Recorder,
    timeline: &[TimelinePoint],
    seconds: f64,
) -> (Vec<OpSummary>, OpSummary) {
    let mut ops = Vec::new();
    for kind in OpKind::ALL {
        let rec = &total.ops[kind.index()];
        if rec.is_empty() {
            continue;
        }
        let peak = timeline
            .iter()
            .map(|p| p.ops[kind.index()])
            .max()
            .unwrap_or(0);
        ops.push(OpSummary::new(kind.name(), rec, seconds, peak));
    }
    let peak = timeline.iter().map(|p| p.total).max().unwrap_or(0);
    let overall = OpSummary::new("overall", &total.overall(), seconds, peak);
    (ops, overall)
}

/// Median of `values` (mean of the middle two for an even count); 0 for none.
pub fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(|a, b| a.total_cmp(b));
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_figures_come_from_the_histogram() {
        let mut rec = Recorder::default();
        for us in 1..=1000u64 {
            rec.op(OpKind::Read).record(us * 10); // 0.01 .. 10 ms
        }
        rec.op(OpKind::Update).record(50_000);
        rec.op(OpKind::Update)
            .record_error("WriteTimeout", true, "timed out");
        rec.op(OpKind::Update)
            .record_error("WriteTimeout", true, "timed out");
        let timeline = vec![TimelinePoint::from_interval(0, &rec)];
        let (ops, overall) = summarize(&rec, &timeline, 2.0);
        assert_eq!(ops.len(), 2);
        let read = &ops[0];
        assert_eq!(read.op, "read");
        assert_eq!(read.count, 1000);
        assert!((read.ops_per_sec_sustained - 500.0).abs() < 1e-9);
        assert_eq!(read.ops_per_sec_peak, 1000.0);
        assert!((read.median_ms - 5.0).abs() < 0.01, "{}", read.median_ms);
        assert!((read.p99_ms - 9.9).abs() < 0.01, "{}", read.p99_ms);
        assert!((read.max_ms - 10.0).abs() < 0.01);
        assert!((read.mean_ms - 5.005).abs() < 0.01);
        let upd = &ops[1];
        assert_eq!((upd.count, upd.errors, upd.timeouts), (1, 2, 2));
        assert_eq!(upd.errors_by_kind.get("WriteTimeout"), Some(&2));
        assert_eq!(upd.error_samples, vec!["timed out".to_string()]);
        assert_eq!(overall.count, 1001);
        assert_eq!(overall.errors, 2);
        assert!((overall.max_ms - 50.0).abs() < 0.1);
    }

    #[test]
    fn merging_recorders_adds_counts() {
        let mut a = Recorder::default();
        let mut b = Recorder::default();
        a.op(OpKind::Read).record(100);
        b.op(OpKind::Read).record(200);
        b.op(OpKind::Scan).not_found += 1;
        a.merge(&b);
        assert_eq!(a.ops[OpKind::Read.index()].count(), 2);
        assert_eq!(a.ops[OpKind::Scan.index()].not_found, 1);
        assert_eq!(a.total_count(), 2);
    }

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&mut []), 0.0);
    }

    #[test]
    fn percentile_curve_is_monotone() {
        let mut r = OpRecord::default();
        for us in [100, 200, 300, 5000] {
            r.record(us);
        }
        let c = percentile_curve(&r);
        assert_eq!(c.len(), CURVE_QUANTILES.len());
        assert!(c.windows(2).all(|w| w[0].1 <= w[1].1));
    }
}
