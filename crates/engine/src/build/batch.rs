//! The checks of a write's USING attributes and of a BATCH as a whole that Cassandra 5.0.9 makes
//! once the statements are prepared (its `BatchStatement.validate` and each statement's own
//! `validate`).

use crate::plan::WritePlan;
use crate::EngineError;
use cql::ast;
use proto::types::ColumnType;

/// A write's own `USING` as Cassandra's ModificationStatement.validate checks it, in its
/// order: no timestamp on a conditional write (Paxos picks it), no timestamp and no TTL on a
/// counter table's. `own_timestamp`: the statement has a USING TIMESTAMP of its own (in a
/// BATCH, the batch's is copied into the others).
pub(crate) fn check_write_attributes(
    plan: &WritePlan,
    own_timestamp: bool,
) -> Result<(), EngineError> {
    if plan.condition.is_some() && own_timestamp {
        return Err(EngineError::invalid(
            "Cannot provide custom timestamp for conditional updates",
        ));
    }
    if plan
        .table
        .columns
        .iter()
        .any(|c| c.ty == ColumnType::Counter)
    {
        if own_timestamp {
            return Err(EngineError::invalid(
                "Cannot provide custom timestamp for counter updates",
            ));
        }
        if plan.ttl.is_some() {
            return Err(EngineError::invalid(
                "Cannot provide custom TTL for counter updates",
            ));
        }
    }
    Ok(())
}

/// The checks Cassandra 5.0.9 makes of a BATCH once its statements are prepared
/// (BatchStatement.validate, then each statement's own validate), in its order: the batch's
/// TTL and timestamp, the statements' timestamps, a conditional batch over several tables,
/// then a conditional statement's own timestamp. `own_timestamps[i]`: statement i has a
/// USING TIMESTAMP of its own (the batch's is copied into the others).
pub(crate) fn validate_batch(
    using: &ast::UsingClause,
    kind: ast::BatchKind,
    plans: &[WritePlan],
    own_timestamps: &[bool],
) -> Result<(), EngineError> {
    if using.ttl.is_some() {
        return Err(EngineError::invalid(
            "Global TTL on the BATCH statement is not supported.",
        ));
    }
    let conditional = plans.iter().any(|p| p.condition.is_some());
    if using.timestamp.is_some() {
        if conditional {
            return Err(EngineError::invalid(
                "Cannot provide custom timestamp for conditional BATCH",
            ));
        }
        if kind == ast::BatchKind::Counter {
            return Err(EngineError::invalid(
                "Cannot provide custom timestamp for counter BATCH",
            ));
        }
        if own_timestamps.iter().any(|own| *own) {
            return Err(EngineError::invalid(
                "Timestamp must be set either on BATCH or individual statements",
            ));
        }
        let counts = |p: &WritePlan| p.table.columns.iter().any(|c| c.ty == ColumnType::Counter);
        if plans.iter().any(counts) {
            return Err(EngineError::invalid(
                "Cannot provide custom timestamp for a BATCH containing counters",
            ));
        }
    }
    if conditional && plans.windows(2).any(|w| w[0].table.id != w[1].table.id) {
        return Err(EngineError::invalid(
            "Batch with conditions cannot span multiple tables",
        ));
    }
    for (p, own) in plans.iter().zip(own_timestamps) {
        check_write_attributes(p, *own)?;
    }
    Ok(())
}
