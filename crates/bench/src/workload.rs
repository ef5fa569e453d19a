//! Workload definitions: YCSB core workloads A–F and cassandra-stress style presets, the
//! operation chooser, the key chooser and deterministic field values.
//!
//! Everything here is synchronous and socket-free; the runner asks it "what next?".

use crate::generator::{build_key_name, AckCounter, ScrambledZipfian, SkewedLatest};
use rand::Rng;
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The kinds of operation the bench issues. The order is the report order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OpKind {
    /// Read every field of one row.
    Read,
    /// Write one field (or all fields with `write_all_fields`) of an existing row.
    Update,
    /// Write all fields of a new row.
    Insert,
    /// `token(key) >= token(?) LIMIT n`.
    Scan,
    /// Read a row, then update it; timed as one operation.
    ReadModifyWrite,
}

impl OpKind {
    /// Every kind, in report order.
    pub const ALL: [OpKind; 5] = [
        OpKind::Read,
        OpKind::Update,
        OpKind::Insert,
        OpKind::Scan,
        OpKind::ReadModifyWrite,
    ];

    /// Index into per-kind arrays.
    pub fn index(self) -> usize {
        self as usize
    }

    /// Lower-case name used in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Read => "read",
            OpKind::Update => "update",
            OpKind::Insert => "insert",
            OpKind::Scan => "scan",
            OpKind::ReadModifyWrite => "read-modify-write",
        }
    }
}

/// How keys are chosen for reads, updates, scans and read-modify-writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Distribution {
    /// YCSB's scrambled zipfian, constant 0.99.
    Zipfian,
    /// YCSB's skewed latest (recent inserts most popular).
    Latest,
    /// Every existing key equally likely.
    Uniform,
    /// Every existing key in turn, wrapping (YCSB's `sequential`): a run of `records`
    /// operations touches each key once, across all workers (a cold pass over the data).
    Sequential,
}

/// The full description of what a run does; serialised into the JSON report.
#[derive(Debug, Clone, Serialize)]
pub struct WorkloadSpec {
    /// `a`..`f`, `stress-write`, `stress-read`, `stress-mixed` or `load`.
    pub name: String,
    /// Proportions of each operation, indexed by [`OpKind::index`]; they sum to 1.
    pub proportions: [f64; 5],
    /// Key choice for existing keys.
    pub distribution: Distribution,
    /// Records loaded before the run (`recordcount`).
    pub records: u64,
    /// Fields per record.
    pub field_count: usize,
    /// Bytes per field.
    pub field_length: usize,
    /// Updates write every field instead of one (`writeallfields`).
    pub write_all_fields: bool,
    /// Scan lengths are uniform in `1..=max_scan_length`.
    pub max_scan_length: u32,
    /// Key prefix (`user` for YCSB).
    pub key_prefix: String,
    /// Keys are `prefix + fnv(seq)` (YCSB `insertorder=hashed`) rather than `prefix + seq`.
    pub hashed_keys: bool,
    /// Inserts the zipfian chooser should leave room for (YCSB: `opcount * insertproportion * 2`).
    pub expected_new_keys: u64,
    /// Writes are lightweight transactions: inserts `IF NOT EXISTS`, one-field updates
    /// `IF fieldN != ?` (a condition on the stored row that holds: its value is never written).
    pub conditional: bool,
}

impl WorkloadSpec {
    /// YCSB core workload `a`..`f`, 10 × 100-byte fields unless overridden by the caller.
    pub fn ycsb(letter: char, records: u64) -> Option<WorkloadSpec> {
        // read, update, insert, scan, rmw
        let (p, dist) = match letter.to_ascii_lowercase() {
            'a' => ([0.5, 0.5, 0.0, 0.0, 0.0], Distribution::Zipfian),
            'b' => ([0.95, 0.05, 0.0, 0.0, 0.0], Distribution::Zipfian),
            'c' => ([1.0, 0.0, 0.0, 0.0, 0.0], Distribution::Zipfian),
            'd' => ([0.95, 0.0, 0.05, 0.0, 0.0], Distribution::Latest),
            'e' => ([0.0, 0.0, 0.05, 0.95, 0.0], Distribution::Zipfian),
            'f' => ([0.5, 0.0, 0.0, 0.0, 0.5], Distribution::Zipfian),
            _ => return None,
        };
        Some(WorkloadSpec {
            name: letter.to_ascii_lowercase().to_string(),
            proportions: p,
            distribution: dist,
            records,
            field_count: 10,
            field_length: 100,
            write_all_fields: false,
            max_scan_length: 100,
            key_prefix: "user".into(),
            hashed_keys: true,
            expected_new_keys: 0,
            conditional: false,
        })
    }

    /// cassandra-stress style preset: `write` (new keys), `read` (100:0) or `mixed` (read:write);
    /// `update` (one field of a loaded row), and the conditional twins `lwt-write` and
    /// `lwt-update` of `write` and `update`.
    /// Defaults: five 34-byte columns, uniform key choice, writes rewrite the whole row
    /// (`update` and `lwt-update` write one field).
    pub fn stress(kind: &str, records: u64, read_ratio: f64) -> Option<WorkloadSpec> {
        if let Some(plain) = kind.strip_prefix("lwt-") {
            let mut spec = Self::stress(plain, records, read_ratio)?;
            spec.name = format!("lwt-{plain}");
            spec.conditional = true;
            return Some(spec);
        }
        if kind == "update" {
            let mut spec = Self::stress("mixed", records, 0.0)?;
            spec.name = "stress-update".into();
            spec.write_all_fields = false;
            return Some(spec);
        }
        let (p, name) = match kind {
            "write" => ([0.0, 0.0, 1.0, 0.0, 0.0], "stress-write"),
            "read" => ([1.0, 0.0, 0.0, 0.0, 0.0], "stress-read"),
            "mixed" => (
                [read_ratio, 1.0 - read_ratio, 0.0, 0.0, 0.0],
                "stress-mixed",
            ),
            _ => return None,
        };
        Some(WorkloadSpec {
            name: name.into(),
            proportions: p,
            distribution: Distribution::Uniform,
            records,
            field_count: 5,
            field_length: 34,
            write_all_fields: true,
            max_scan_length: 100,
            key_prefix: "key".into(),
            hashed_keys: true,
            expected_new_keys: 0,
            conditional: false,
        })
    }

    /// The load phase: insert records `0..records` in order (keys are hashed, as YCSB's load is).
    pub fn load(mut base: WorkloadSpec) -> WorkloadSpec {
        base.name = format!("load-{}", base.name);
        base.conditional = false;
        base.proportions = [0.0, 0.0, 1.0, 0.0, 0.0];
        base
    }
}

/// Picks the next operation with the workload's proportions (YCSB's `DiscreteGenerator`).
#[derive(Debug, Clone)]
pub struct OpChooser {
    cumulative: Vec<(f64, OpKind)>,
}

impl OpChooser {
    /// A chooser over the non-zero proportions of `spec`.
    pub fn new(spec: &WorkloadSpec) -> Self {
        let total: f64 = spec.proportions.iter().sum();
        let mut acc = 0.0;
        let mut cumulative = Vec::new();
        for kind in OpKind::ALL {
            let p = spec.proportions[kind.index()];
            if p > 0.0 {
                acc += p / total;
                cumulative.push((acc, kind));
            }
        }
        OpChooser { cumulative }
    }

    /// The next operation kind.
    pub fn next<R: Rng + ?Sized>(&self, rng: &mut R) -> OpKind {
        let u: f64 = rng.random();
        for &(c, k) in &self.cumulative {
            if u < c {
                return k;
            }
        }
        self.cumulative.last().map(|e| e.1).unwrap_or(OpKind::Read)
    }
}

/// Chooses existing key numbers (YCSB's `keychooser` + `nextKeynum`).
#[derive(Debug, Clone)]
pub enum KeyChooser {
    /// Scrambled zipfian over `0..records + expected_new_keys`, redrawn above the last insert.
    Zipfian(ScrambledZipfian),
    /// Skewed latest over the acknowledged insert counter.
    Latest(SkewedLatest),
    /// Uniform over `0..=last`.
    Uniform,
    /// The next number of a counter shared by every worker's chooser, modulo `last + 1`.
    Sequential(Arc<AtomicU64>),
}

impl KeyChooser {
    /// The chooser for `spec`; `sequence` is the counter every worker's sequential chooser
    /// shares (unused by the other distributions).
    pub fn new(spec: &WorkloadSpec, sequence: &Arc<AtomicU64>) -> Self {
        match spec.distribution {
            Distribution::Zipfian => KeyChooser::Zipfian(ScrambledZipfian::new(
                0,
                (spec.records + spec.expected_new_keys).max(1) - 1,
            )),
            Distribution::Latest => KeyChooser::Latest(SkewedLatest::new(spec.records.max(1) - 1)),
            Distribution::Uniform => KeyChooser::Uniform,
            Distribution::Sequential => KeyChooser::Sequential(sequence.clone()),
        }
    }

    /// The next key number, never above `last` (the newest acknowledged insert).
    pub fn next<R: Rng + ?Sized>(&mut self, rng: &mut R, last: u64) -> u64 {
        match self {
            KeyChooser::Zipfian(z) => {
                // YCSB redraws keys that have not been inserted yet; bound the loop in case
                // the key space is tiny.
                for _ in 0..1000 {
                    let k = z.next(rng);
                    if k <= last {
                        return k;
                    }
                }
                rng.random_range(0..=last)
            }
            KeyChooser::Latest(l) => l.next(rng, last),
            KeyChooser::Uniform => rng.random_range(0..=last),
            KeyChooser::Sequential(next) => next.fetch_add(1, Ordering::Relaxed) % (last + 1),
        }
    }
}

/// Shared insert sequence for load phases and D/E inserts.
pub type InsertCounter = AckCounter;

/// Key string for a key number under `spec`.
pub fn key_name(spec: &WorkloadSpec, keynum: u64) -> String {
    build_key_name(&spec.key_prefix, keynum, spec.hashed_keys)
}

/// The value of `field` of `key` as of write `version`: `"v<version>:"` followed by filler bytes
/// derived from (key, field, version). Deterministic, so `--validate` can check any value read
/// back, and printable ASCII so it fits `varchar` columns.
pub fn field_value(key: &str, field: usize, version: u32, len: usize) -> String {
    let mut out = String::with_capacity(len.max(12));
    out.push('v');
    out.push_str(&version.to_string());
    out.push(':');
    let mut state = seed(key, field, version);
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    while out.len() < len {
        let mut x = splitmix(&mut state);
        for _ in 0..10 {
            if out.len() >= len {
                break;
            }
            out.push(ALPHABET[(x & 63) as usize] as char);
            x >>= 6;
        }
    }
    out.truncate(len.max(out.find(':').map(|i| i + 1).unwrap_or(0)));
    out
}

/// Checks a value read back: returns its version if it is exactly what [`field_value`] writes
/// for (key, field, version), else `None` (wrong key, wrong field, corrupted or truncated).
pub fn check_field_value(key: &str, field: usize, len: usize, value: &str) -> Option<u32> {
    let rest = value.strip_prefix('v')?;
    let colon = rest.find(':')?;
    let version: u32 = rest[..colon].parse().ok()?;
    (field_value(key, field, version, len) == value).then_some(version)
}

fn seed(key: &str, field: usize, version: u32) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for b in key
        .bytes()
        .chain((field as u32).to_le_bytes())
        .chain(version.to_le_bytes())
    {
        h ^= b as u64;
        h = h.wrapping_mul(1_099_511_628_211);
    }
    h
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    fn mix(spec: &WorkloadSpec, samples: u32) -> [f64; 5] {
        let chooser = OpChooser::new(spec);
        let mut rng = SmallRng::seed_from_u64(1);
        let mut counts = [0u32; 5];
        for _ in 0..samples {
            counts[chooser.next(&mut rng).index()] += 1;
        }
        counts.map(|c| c as f64 / samples as f64)
    }

    #[test]
    fn operation_mix_matches_each_ycsb_workload() {
        for letter in ['a', 'b', 'c', 'd', 'e', 'f'] {
            let spec = WorkloadSpec::ycsb(letter, 1000).unwrap();
            let got = mix(&spec, 200_000);
            for k in OpKind::ALL {
                let want = spec.proportions[k.index()];
                assert!(
                    (got[k.index()] - want).abs() < 0.005,
                    "workload {letter} {}: {} vs {want}",
                    k.name(),
                    got[k.index()]
                );
            }
        }
        assert!(WorkloadSpec::ycsb('g', 1).is_none());
    }

    #[test]
    fn lwt_presets_are_the_conditional_twins_of_plain_ones() {
        let w = WorkloadSpec::stress("lwt-write", 10, 0.0).unwrap();
        let plain = WorkloadSpec::stress("write", 10, 0.0).unwrap();
        assert!(w.conditional && !plain.conditional);
        assert_eq!(
            (w.name.as_str(), w.proportions),
            ("lwt-write", plain.proportions)
        );
        let u = WorkloadSpec::stress("lwt-update", 10, 0.0).unwrap();
        let plain = WorkloadSpec::stress("update", 10, 0.0).unwrap();
        assert_eq!(u.proportions, [0.0, 1.0, 0.0, 0.0, 0.0]);
        assert_eq!(u.proportions, plain.proportions);
        assert!(u.conditional && !u.write_all_fields && !plain.write_all_fields);
        assert!(!WorkloadSpec::load(u).conditional);
    }

    #[test]
    fn stress_mixed_ratio_is_respected() {
        let spec = WorkloadSpec::stress("mixed", 1000, 0.8).unwrap();
        let got = mix(&spec, 100_000);
        assert!((got[OpKind::Read.index()] - 0.8).abs() < 0.01);
        assert!((got[OpKind::Update.index()] - 0.2).abs() < 0.01);
        assert!(spec.write_all_fields);
    }

    #[test]
    fn zipfian_key_chooser_never_returns_uninserted_keys() {
        let mut spec = WorkloadSpec::ycsb('e', 1000).unwrap();
        spec.expected_new_keys = 1000;
        let mut chooser = KeyChooser::new(&spec, &Arc::default());
        let mut rng = SmallRng::seed_from_u64(5);
        for _ in 0..10_000 {
            assert!(chooser.next(&mut rng, 999) <= 999);
        }
        // Once the inserts exist they get chosen too.
        assert!((0..10_000).any(|_| chooser.next(&mut rng, 1999) > 999));
    }

    #[test]
    fn sequential_choosers_share_one_pass_over_every_key() {
        let mut spec = WorkloadSpec::ycsb('c', 1000).unwrap();
        spec.distribution = Distribution::Sequential;
        let sequence = Arc::default();
        let mut workers = [
            KeyChooser::new(&spec, &sequence),
            KeyChooser::new(&spec, &sequence),
        ];
        let mut rng = SmallRng::seed_from_u64(5);
        let mut seen = vec![0u32; 1000];
        for i in 0..3000 {
            seen[workers[i % 2].next(&mut rng, 999) as usize] += 1;
        }
        assert!(
            seen.iter().all(|&n| n == 3),
            "each key three times in three passes"
        );
    }

    #[test]
    fn field_values_round_trip_and_detect_mixups() {
        let v = field_value("user123", 3, 7, 100);
        assert_eq!(v.len(), 100);
        assert!(v.starts_with("v7:"));
        assert_eq!(check_field_value("user123", 3, 100, &v), Some(7));
        assert_eq!(check_field_value("user124", 3, 100, &v), None);
        assert_eq!(check_field_value("user123", 4, 100, &v), None);
        assert_eq!(check_field_value("user123", 3, 100, &v[..99]), None);
        let big = field_value("k", 0, 0, 4096);
        assert_eq!(big.len(), 4096);
        assert_eq!(field_value("k", 0, 0, 4096), big);
    }
}
