//! Empty: the tests live in tests/scylla.rs.
