//! CQL statements and bound values from a client reach the engine after the parser: no
//! statement, value or paging state may panic it (issue: "a panic anywhere below the front end
//! impossible to provoke from CQL"). The fuzzer's bytes steer the same statement generator the
//! seeded test `crates/engine/tests/generated_statements.rs` uses, over a schema with every
//! kind of column, on the in-memory store.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/engine/tests/support/statements.rs"]
mod statements;

fn engine() -> engine::Engine {
    engine::Engine::open(Arc::new(storage::MemStorage::new()), statements::node())
        .expect("engine opens")
}

fuzz_target!(|data: &[u8]| {
    let engine = engine();
    statements::create_schema(&engine);
    let mut choices = statements::FromBytes(data);
    statements::run(&engine, &mut choices, 64, |_| {});
});
