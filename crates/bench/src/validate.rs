//! `--validate`: checks that reads return what was written.
//!
//! Every value is derived from (key, field, version) by [`field_value`](crate::workload::field_value),
//! so any value read back can be checked on its own: it must be the value of *this* key and
//! *this* field at the version it names. On top of that, for keys this run has written, the
//! version must be one the read could legally see under last-write-wins with unknown write
//! order among overlapping writes: versions are handed out in issue order, so once write `W`
//! has completed, any write that had completed before `W` was issued can no longer be the
//! current value. Possible are: completed writes that overlapped the newest completed write,
//! writes still in flight (or failed, so maybe applied), and writes issued after the read
//! started. Keys this run has not written accept any well-formed version (an earlier run may
//! have updated them).

use crate::workload::{check_field_value, WorkloadSpec};
use scylla::response::query_result::QueryRowsResult;
use scylla::value::{CqlValue, Row};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

#[derive(Debug, Clone, Default)]
struct FieldState {
    /// Highest version (= latest issued) whose write completed successfully.
    committed: Option<u32>,
    /// Completed writes that may still be the current value: `(version, next version handed
    /// out when it completed)`. A write that completed before `committed` was issued is pruned.
    possible: Vec<(u32, u32)>,
    /// Versions written but not acknowledged (failed writes stay here: they may have applied).
    in_flight: Vec<u32>,
}

/// What a read may see, captured when the read is planned.
#[derive(Debug, Clone)]
pub struct Expectation {
    /// Versions at or above this were issued after the read started.
    issued_from: u32,
    /// Per field, `None` when this run never wrote the key.
    fields: Option<Vec<FieldState>>,
}

/// Tracks the versions written during one run.
#[derive(Debug)]
pub struct Validator {
    keys: Mutex<HashMap<u64, Vec<FieldState>>>,
    next_version: AtomicU32,
}

impl Default for Validator {
    fn default() -> Self {
        Self::new()
    }
}

impl Validator {
    /// Versions start at the current Unix time so they grow from run to run.
    pub fn new() -> Self {
        let base = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as u32)
            .unwrap_or(1);
        Validator {
            keys: Mutex::new(HashMap::new()),
            next_version: AtomicU32::new(base),
        }
    }

    /// Registers a write to `fields` of `keynum` and returns the version it writes.
    pub fn write_start(&self, keynum: u64, fields: &[usize], field_count: usize) -> u32 {
        let v = self.next_version.fetch_add(1, Ordering::Relaxed);
        let mut keys = self.keys.lock().expect("validator lock");
        let st = keys
            .entry(keynum)
            .or_insert_with(|| vec![FieldState::default(); field_count]);
        for &f in fields {
            st[f].in_flight.push(v);
        }
        v
    }

    /// Marks the write of `version` done; a failed write stays possible forever.
    pub fn write_done(&self, keynum: u64, fields: &[usize], version: u32, ok: bool) {
        if !ok {
            return;
        }
        let mut keys = self.keys.lock().expect("validator lock");
        let completed_at = self.next_version.load(Ordering::Relaxed);
        if let Some(st) = keys.get_mut(&keynum) {
            for &f in fields {
                let fs = &mut st[f];
                fs.in_flight.retain(|&x| x != version);
                let newest = fs.committed.map_or(version, |c| c.max(version));
                fs.committed = Some(newest);
                fs.possible.push((version, completed_at));
                // Completed before the newest completed write was issued: overwritten for sure.
                fs.possible.retain(|&(_, done_at)| done_at > newest);
            }
        }
    }

    /// Captures what a read of `keynum` issued now may return.
    pub fn expect(&self, keynum: u64, _field_count: usize) -> Expectation {
        let issued_from = self.next_version.load(Ordering::Relaxed);
        let keys = self.keys.lock().expect("validator lock");
        Expectation {
            issued_from,
            fields: keys.get(&keynum).cloned(),
        }
    }

    /// Checks one row read by key: columns `y_id, field0..`.
    pub fn check_row(
        &self,
        spec: &WorkloadSpec,
        key: &str,
        row: &Row,
        expect: &Expectation,
    ) -> Result<(), String> {
        let got_key = text(row.columns.first()).ok_or("y_id is null")?;
        if got_key != key {
            return Err(format!("asked for {key}, got row {got_key}"));
        }
        for f in 0..spec.field_count {
            let value =
                text(row.columns.get(f + 1)).ok_or_else(|| format!("{key}.field{f} is null"))?;
            let v = check_field_value(key, f, spec.field_length, value).ok_or_else(|| {
                format!(
                    "{key}.field{f} is not a value written for that key and field: {:.40}",
                    value
                )
            })?;
            if let Some(fields) = &expect.fields {
                let fs = &fields[f];
                let allowed = fs.committed.is_none()
                    || fs.possible.iter().any(|&(p, _)| p == v)
                    || fs.in_flight.contains(&v)
                    || v >= expect.issued_from;
                if !allowed {
                    return Err(format!(
                        "{key}.field{f} has version {v}; possible were {:?}, in flight {:?}",
                        fs.possible.iter().map(|p| p.0).collect::<Vec<_>>(),
                        fs.in_flight
                    ));
                }
            }
        }
        Ok(())
    }

    /// Checks a scan: at most `limit` rows, each well-formed for its own key.
    pub fn check_scan(
        &self,
        spec: &WorkloadSpec,
        rows: &QueryRowsResult,
        limit: i32,
    ) -> Result<(), String> {
        if rows.rows_num() > limit.max(0) as usize {
            return Err(format!(
                "scan with LIMIT {limit} returned {} rows",
                rows.rows_num()
            ));
        }
        let iter = rows.rows::<Row>().map_err(|e| format!("scan rows: {e}"))?;
        for row in iter {
            let row = row.map_err(|e| format!("scan row: {e}"))?;
            let key = text(row.columns.first())
                .ok_or("scan row with null y_id")?
                .to_string();
            for f in 0..spec.field_count {
                let value = text(row.columns.get(f + 1))
                    .ok_or_else(|| format!("{key}.field{f} is null in a scan"))?;
                if check_field_value(&key, f, spec.field_length, value).is_none() {
                    return Err(format!(
                        "scan: {key}.field{f} is not a value written for it"
                    ));
                }
            }
        }
        Ok(())
    }
}

fn text(col: Option<&Option<CqlValue>>) -> Option<&str> {
    match col? {
        Some(CqlValue::Text(s)) | Some(CqlValue::Ascii(s)) => Some(s.as_str()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::field_value;

    fn row(key: &str, vals: &[String]) -> Row {
        let mut columns = vec![Some(CqlValue::Text(key.to_string()))];
        columns.extend(vals.iter().map(|v| Some(CqlValue::Text(v.clone()))));
        Row { columns }
    }

    #[test]
    fn untouched_keys_accept_any_wellformed_version() {
        let spec = WorkloadSpec::ycsb('a', 10).unwrap();
        let v = Validator::new();
        let e = v.expect(1, spec.field_count);
        let vals: Vec<String> = (0..10).map(|f| field_value("user1", f, 3, 100)).collect();
        assert!(v
            .check_row(&spec, "user1", &row("user1", &vals), &e)
            .is_ok());
        // A value belonging to another key is caught.
        let mut bad = vals.clone();
        bad[4] = field_value("user2", 4, 3, 100);
        assert!(v
            .check_row(&spec, "user1", &row("user1", &bad), &e)
            .is_err());
    }

    #[test]
    fn stale_reads_after_a_completed_write_are_caught() {
        let spec = WorkloadSpec::ycsb('a', 10).unwrap();
        let val = Validator::new();
        let ver = val.write_start(7, &[2], spec.field_count);
        val.write_done(7, &[2], ver, true);
        let e = val.expect(7, spec.field_count);
        let mut vals: Vec<String> = (0..10).map(|f| field_value("user7", f, 0, 100)).collect();
        // Field 2 still at the old version 0: stale.
        assert!(val
            .check_row(&spec, "user7", &row("user7", &vals), &e)
            .is_err());
        vals[2] = field_value("user7", 2, ver, 100);
        assert!(val
            .check_row(&spec, "user7", &row("user7", &vals), &e)
            .is_ok());
        // A write issued after the read started may be seen.
        let later = val.write_start(7, &[2], spec.field_count);
        vals[2] = field_value("user7", 2, later, 100);
        assert!(val
            .check_row(&spec, "user7", &row("user7", &vals), &e)
            .is_ok());
    }

    #[test]
    fn overlapping_writes_may_land_in_either_order() {
        let spec = WorkloadSpec::ycsb('a', 10).unwrap();
        let val = Validator::new();
        let x = val.write_start(9, &[0], spec.field_count);
        let y = val.write_start(9, &[0], spec.field_count);
        // y completes first, then x: the server may have applied them in either order.
        val.write_done(9, &[0], y, true);
        val.write_done(9, &[0], x, true);
        let e = val.expect(9, spec.field_count);
        let mut vals: Vec<String> = (0..10).map(|f| field_value("user9", f, 0, 100)).collect();
        for v in [x, y] {
            vals[0] = field_value("user9", 0, v, 100);
            assert!(val
                .check_row(&spec, "user9", &row("user9", &vals), &e)
                .is_ok());
        }
        // A later write that starts after both completed overwrites them for sure.
        let z = val.write_start(9, &[0], spec.field_count);
        val.write_done(9, &[0], z, true);
        let e = val.expect(9, spec.field_count);
        vals[0] = field_value("user9", 0, y, 100);
        assert!(val
            .check_row(&spec, "user9", &row("user9", &vals), &e)
            .is_err());
        vals[0] = field_value("user9", 0, z, 100);
        assert!(val
            .check_row(&spec, "user9", &row("user9", &vals), &e)
            .is_ok());
    }
}
