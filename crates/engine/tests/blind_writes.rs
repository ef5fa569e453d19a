//! Blind writes change no answer: the generated statements (every kind of column, valid and
//! invalid, prepared, batched, paged) give the same answers on an LSM store that merges
//! partial rows (writes of cells stored without reading the row; the memtable flushed every 20
//! statements, so a row's versions lie in several tables, and a major compaction now and then) as on the in-memory store
//! without a merge operator, where every write reads and rewrites its row.

mod support;

use std::sync::Arc;

use engine::Engine;
use storage::Storage;
use support::statements::{self, node, Seeded};
use support::stores::merging_lsm;

/// Whether a statement's answer may differ between two engines for reasons of its own
/// (functions drawing random or clock values).
fn nondeterministic(text: &str) -> bool {
    text.contains("now()") || text.contains("uuid()")
}

#[test]
fn blind_writes_answer_as_reading_writes_do() {
    for seed in [0xB11D_0001u64, 0xB11D_0002, 0xB11D_0003] {
        let (_dir, lsm) = merging_lsm(std::env::temp_dir().join(format!(
            "peregrine-blind-writes-{}-{seed:x}",
            std::process::id()
        )));
        assert!(lsm.merges());
        let blind = Engine::open(lsm.clone(), node()).unwrap();
        let reading = Engine::open(Arc::new(storage::MemStorage::new()), node()).unwrap();
        statements::create_schema(&blind);
        statements::create_schema(&reading);
        let mut choices = Seeded(seed);
        let mut step = 0usize;
        let mut compared = 0usize;
        statements::run_on(
            &[&blind, &reading],
            &mut choices,
            1500,
            |_| {},
            |text, results| {
                step += 1;
                if step.is_multiple_of(300) {
                    lsm.compact().unwrap();
                } else if step.is_multiple_of(20) {
                    lsm.flush().unwrap();
                }
                if nondeterministic(text) {
                    return;
                }
                compared += 1;
                let (a, b) = (format!("{:?}", results[0]), format!("{:?}", results[1]));
                if a != b {
                    let shown: String = text.chars().take(400).collect();
                    panic!("seed {seed:#x}, statement {step}: {shown}\nblind:   {a}\nreading: {b}");
                }
            },
        );
        assert!(compared > 1000, "only {compared} answers compared");
    }
}
