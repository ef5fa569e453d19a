//! Running `ORDER BY v ANN OF q LIMIT k`: every row the query may return is ranked by the
//! similarity of its **stored** vector to `q` (Cassandra's score, so results are exact up to
//! the choice of candidates), through the ORDER BY merge of [`SelectRun`] with the score as
//! the sort key.
//!
//! The candidates are either every row the WHERE clause selects (a partition, an SAI lookup,
//! the whole table below `exact_below` rows: exact, like Cassandra on small data), or, for an
//! unrestricted query on a larger table, the graph's nearest rows: each hit is read from
//! storage and checked (live, TTL, vector present) like any row, and when checks drop rows
//! the graph is asked for twice as many until `k` rows pass or it is exhausted. A quantized
//! graph's scores are approximate: it is asked for more candidates than `k`
//! ([`candidates`](crate::vector_index::VectorIndexConfig::candidates)) and only those
//! within its [`rerank_margin`](crate::vector_index::VectorIndexConfig::rerank_margin) of
//! the `k`-th are read (the others only when checks dropped rows); the stored vectors' exact
//! scores then pick the `k`.

use super::{RowView, SelectRun};
use crate::index::ann::{limit_too_large, MAX_ANN_LIMIT, NO_LIMIT_MSG};
use crate::keys;
use crate::plan::{AnnPlan, PartitionSel};
use crate::similarity::QueryScorer;
use crate::vector_index::{check_indexable, VectorIndexError};
use crate::{Engine, EngineError};

/// An ANN ordering with its values bound.
pub(super) struct AnnRun {
    column: usize,
    /// The query vector, and its exact scoring of each candidate's stored vector.
    scorer: QueryScorer,
    index_id: u32,
    pub(super) limit: u64,
    /// Why no index can be searched with the query vector, if none can: the query fails
    /// when it runs ([`SelectRun::run_ann_graph`]).
    unindexable: Option<VectorIndexError>,
}

impl AnnRun {
    pub(super) fn bind(
        plan: &AnnPlan,
        t: &crate::catalog::TableDef,
        limit: Option<u64>,
        vals: &crate::exec::Bindings,
    ) -> Result<AnnRun, EngineError> {
        let limit = limit.ok_or_else(|| EngineError::invalid(NO_LIMIT_MSG))?;
        if limit > MAX_ANN_LIMIT {
            return Err(limit_too_large(limit));
        }
        let name = &t.columns[plan.column].name;
        let raw = crate::exec::resolve(&plan.query, vals)?.ok_or_else(|| {
            EngineError::invalid(format!("Unsupported null value for column {name}"))
        })?;
        let query = crate::similarity::floats(&raw).ok_or_else(|| {
            EngineError::invalid(format!("Invalid vector value for column {name}"))
        })?;
        Ok(AnnRun {
            unindexable: check_indexable(plan.similarity, &query).err(),
            column: plan.column,
            scorer: QueryScorer::new(plan.similarity, query),
            index_id: plan.index_id,
            limit,
        })
    }

    /// The merge key of a row stored under `key`: its score, best first, then its key; `None`
    /// for a row without a vector (an index holds only rows with one).
    pub(super) fn sort_key(&self, view: &RowView, key: &[u8]) -> Option<Vec<u8>> {
        let cell = view.cell(self.column)?;
        let score = self
            .scorer
            .score_serialized(cell.live_value(view.now.secs)?)?;
        if score.is_nan() {
            return None;
        }
        // Order-preserving bits of the float, inverted so that a higher score sorts first.
        let bits = score.to_bits();
        let ordered = if bits >> 31 == 1 {
            !bits
        } else {
            bits | 1 << 31
        };
        let mut k = (!ordered).to_be_bytes().to_vec();
        k.extend_from_slice(key);
        Some(k)
    }
}

impl SelectRun<'_> {
    /// Keeps an ANN merge from holding more than twice LIMIT rows (a scan of many rows).
    pub(super) fn keep_top(&mut self) {
        let (Some(m), Some(_)) = (self.merge.as_mut(), &self.ann) else {
            return;
        };
        let limit = usize::try_from(m.limit.unwrap_or(u64::MAX)).unwrap_or(usize::MAX);
        if m.rows.len() > limit.saturating_mul(2).max(64) {
            m.rows.sort_by(|a, b| a.0.cmp(&b.0));
            m.rows.truncate(limit);
        }
    }

    /// Answers the query from the index's graph when that is the plan (an unrestricted ANN
    /// query on a table the graph serves, with at least `exact_below` rows); `false`: the
    /// caller scans the rows instead.
    pub(super) fn run_ann_graph(&mut self, engine: &Engine) -> Result<bool, EngineError> {
        let Some(ann) = &self.ann else {
            return Ok(false);
        };
        // Cassandra 5.0.9 checks the query vector as its index is searched and answers
        // ReadFailure (reason UNKNOWN) when the check throws; the reason goes to the log.
        // Every ANN query here, restricted or not: 5.0.9 skips the check only where a
        // restricted query is answered from memtable rows alone (docs/compatibility.md).
        if let Some(why) = &ann.unindexable {
            tracing::warn!(
                "ANN query on {}.{} refused: {why}",
                self.plan.table.keyspace,
                self.plan.table.name
            );
            return Err(crate::index::unindexable_read(engine.node()));
        }
        let unrestricted = matches!(
            self.plan.partitions,
            PartitionSel::Range {
                start: None,
                end: None
            }
        ) && self.plan.index.is_none()
            && self.plan.filters.is_empty()
            && self.plan.clustering.is_unrestricted();
        let Some(graph) = engine.vectors.get(ann.index_id) else {
            return Ok(false);
        };
        let total = graph.index.len();
        if !unrestricted || !graph.usable() || total < engine.vectors.exact_below() {
            return Ok(false);
        }
        let k = usize::try_from(ann.limit).unwrap_or(usize::MAX);
        let query = ann.scorer.query().to_vec();
        let config = graph.index.config();
        let margin = config.rerank_margin();
        let mut want = config.candidates(k.max(1)).min(total);
        loop {
            let hits = graph
                .index
                .search(&query, want)
                .map_err(|e| EngineError::invalid(e.to_string()))?;
            if let Some(m) = self.merge.as_mut() {
                m.rows.clear();
            }
            // The hits come best first by the graph's score; under a quantized graph only
            // those within the margin of the k-th can be among the k nearest by their stored
            // vectors. The rest are read only when checks dropped rows.
            let close = hits.get(k.max(1) - 1).map_or(hits.len(), |kth| {
                hits.iter()
                    .take_while(|h| h.score >= kth.score - margin)
                    .count()
            });
            for (i, h) in hits.iter().enumerate() {
                if i == close && self.merge.as_ref().map_or(0, |m| m.rows.len()) >= k {
                    break;
                }
                let Some(d) = keys::decode_key(&h.primary_key) else {
                    continue;
                };
                self.only_rows = Some(vec![d.clustering.to_vec()]);
                let flow =
                    self.partition(&h.primary_key[..d.prefix_len], &d.pk, d.token, None, None);
                self.only_rows = None;
                flow?;
            }
            let found = self.merge.as_ref().map_or(0, |m| m.rows.len());
            if found >= k || hits.len() < want || want >= total {
                return Ok(true);
            }
            want = want.saturating_mul(2).min(total);
        }
    }
}
