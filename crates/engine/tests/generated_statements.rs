//! No CQL statement or bound value can panic the engine: thousands of generated statements
//! (valid and invalid, literals and bind markers, paged, batched, prepared) over a schema with
//! every kind of column, on the in-memory store and on the LSM store. The same generator
//! drives the fuzz target `engine_statements` from the fuzzer's bytes.

mod support;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use engine::Engine;
use support::statements::{self, node, Seeded};

/// Runs `count` statements from `seed`; a panic fails the test naming the statement.
fn no_panics(engine: Engine, seed: u64, count: usize) {
    statements::create_schema(&engine);
    let mut last = String::new();
    let mut choices = Seeded(seed);
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        statements::run(&engine, &mut choices, count, |s| {
            last.clear();
            last.push_str(s);
        })
    }));
    match outcome {
        Ok(tally) => {
            // The generator must reach the engine's paths, not only its parser's errors.
            assert!(
                tally.ok > count / 6,
                "too few statements succeeded: {tally:?}"
            );
            assert!(
                tally.errors > count / 10,
                "too few statements failed: {tally:?}"
            );
            assert!(tally.rows > 0, "no rows were ever read: {tally:?}");
        }
        Err(_) => {
            let shown: String = last.chars().take(400).collect();
            panic!("the engine panicked (seed {seed:#x}) on: {shown}");
        }
    }
}

/// CI runs three fixed seeds; `GEN_STATEMENTS_SEEDS=N` runs N more (seeds 1..=N) for a long
/// offline hunt: `GEN_STATEMENTS_SEEDS=500 cargo test --release -p engine --test generated_statements`.
#[test]
fn generated_statements_never_panic_on_the_model_store() {
    let extra: u64 = std::env::var("GEN_STATEMENTS_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let seeds = [0x5EED_0001u64, 0x5EED_0002, 0x5EED_0003]
        .into_iter()
        .chain(1..=extra);
    for seed in seeds {
        let engine = Engine::open(Arc::new(storage::MemStorage::new()), node()).unwrap();
        no_panics(engine, seed, 4000);
    }
}

#[test]
fn generated_statements_never_panic_on_the_lsm_store() {
    let dir = std::env::temp_dir().join(format!("peregrine-gen-statements-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // Merging, as the server's store (updates write blind).
    let options = storage::Options {
        merge: Some(Arc::new(engine::row::RowMerge)),
        ..storage::Options::default()
    };
    let store = storage::LsmStorage::open(&dir, options).unwrap();
    let engine = Engine::open(Arc::new(store), node()).unwrap();
    no_panics(engine, 0x5EED_0010, 3000);
    let _ = std::fs::remove_dir_all(&dir);
}
