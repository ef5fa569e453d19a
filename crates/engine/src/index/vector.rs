//! SAI vector indexes: the in-memory HNSW graph ([`crate::vector_index::VectorIndex`]) of
//! each SAI index on a float-vector column, kept beside the schema.
//!
//! The base table is the source of truth; a graph only decides which rows an ANN query
//! reads first (`read.rs` checks every row it returns against the stored row, and orders by
//! the score of the stored vector). So a graph is:
//!
//! - **built** from the table when the index is created, when the store opens (graphs are
//!   not persisted: rebuilding is what makes a restart or a kill -9 exact), and when
//!   TRUNCATE gives the index a fresh id: [`Engine::build_vector_indexes`];
//! - **kept exact** by every write: `exec::apply` computes the graph changes of the rows it
//!   rewrites ([`vector_updates`], which also refuses a zero vector under cosine before
//!   anything is written) and applies them after the batch is written, still under the
//!   partitions' stripe locks, so graph order matches storage order;
//! - **dropped** with its index (DROP INDEX, DROP TABLE, TRUNCATE's old id).
//!
//! Memory: a graph that grows past `vector_index_memory_bytes` is freed and marked over
//! budget; ANN queries on it then scan the rows they may return (exact, slower) until the
//! next restart rebuilds it (and finds it over budget again if the data still is).

use super::IndexDef;
use crate::catalog::{ColumnKind, Schema, TableDef};
use crate::row::{CellValue, Row};
use crate::similarity::Similarity;
use crate::vector_index::{VectorIndex, VectorIndexConfig, VectorIndexError};
use crate::{keys, Engine, EngineError};
use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

/// The graph settings of `idx` when it is an SAI index on a float-vector column. Only a
/// regular column has a graph (`has_graph`); ANN queries on a static one scan (exact).
pub(crate) fn vector_config(idx: &IndexDef, t: &TableDef) -> Option<VectorIndexConfig> {
    if !idx.is_sai() {
        return None;
    }
    let c = t.column(&idx.column)?;
    let options = idx.options.iter().map(|(k, v)| (k.as_str(), v.as_str()));
    VectorIndexConfig::for_column(&c.ty, options, Some(&idx.name))
        .ok()
        .flatten()
}

/// One index's graph.
pub(crate) struct Graph {
    pub(crate) index: VectorIndex,
    /// The build over the table's rows finished: until then ANN queries scan.
    ready: AtomicBool,
    /// Grew past the memory budget: freed, no longer maintained, ANN queries scan.
    over_budget: AtomicBool,
    /// Upserts since the memory was last measured.
    since_check: AtomicU64,
}

impl Graph {
    /// Whether ANN queries may use the graph.
    pub(crate) fn usable(&self) -> bool {
        self.ready.load(Ordering::Acquire) && !self.over_budget.load(Ordering::Acquire)
    }
}

/// The graphs of every vector index, by index id, and their settings.
pub(crate) struct VectorIndexes {
    graphs: RwLock<HashMap<u32, Arc<Graph>>>,
    memory_limit: AtomicUsize,
    /// Below this many rows an ANN query reads every candidate row (exact) instead of the graph.
    exact_below: AtomicUsize,
}

/// Default of `vector_index_memory_bytes`: 1 GiB over all graphs of one index.
pub const DEFAULT_MEMORY_BYTES: usize = 1 << 30;
/// Default row count under which ANN queries are answered by an exact scan.
pub const DEFAULT_EXACT_BELOW: usize = 2048;
/// Memory is measured once per this many upserts (measuring walks the key map).
const CHECK_EVERY: u64 = 1024;

impl Default for VectorIndexes {
    fn default() -> Self {
        VectorIndexes {
            graphs: RwLock::new(HashMap::new()),
            memory_limit: AtomicUsize::new(DEFAULT_MEMORY_BYTES),
            exact_below: AtomicUsize::new(DEFAULT_EXACT_BELOW),
        }
    }
}

impl VectorIndexes {
    pub(crate) fn get(&self, id: u32) -> Option<Arc<Graph>> {
        self.graphs
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .cloned()
    }

    pub(crate) fn exact_below(&self) -> usize {
        self.exact_below.load(Ordering::Relaxed)
    }

    fn upsert(&self, g: &Graph, key: &[u8], v: &[f32]) {
        if g.over_budget.load(Ordering::Acquire) {
            return;
        }
        match g.index.upsert(key, v) {
            Ok(()) => {}
            // Refused before the write (`vector_updates`), or stored before the index
            // existed: a vector ANN can never rank (zero under cosine) stays out.
            Err(VectorIndexError::ZeroVector | VectorIndexError::Dimension { .. }) => return,
            // The graph would miss the row: stop using it rather than answer without it.
            Err(_) => {
                self.over(g);
                return;
            }
        }
        if g.since_check.fetch_add(1, Ordering::Relaxed) + 1 >= CHECK_EVERY {
            g.since_check.store(0, Ordering::Relaxed);
            if g.index.memory_bytes() > self.memory_limit.load(Ordering::Relaxed) {
                self.over(g);
            }
        }
    }

    fn over(&self, g: &Graph) {
        g.over_budget.store(true, Ordering::Release);
        let _ = g.index.clear();
    }
}

/// One graph change a write makes: the row's new vector, or `None` to forget the row.
pub(crate) struct VectorUpdate {
    graph: Arc<Graph>,
    key: Vec<u8>,
    vector: Option<Vec<f32>>,
}

/// The graph changes of the rows a write stores (`written`: key -> new stored value), for
/// the tables among `tables` with vector indexes. A zero vector under cosine is refused here,
/// before anything is written, with the index's error (Cassandra fails such a write too).
pub(crate) fn vector_updates(
    engine: &Engine,
    tables: &[Arc<TableDef>],
    written: &BTreeMap<Vec<u8>, Option<Vec<u8>>>,
) -> Result<Vec<VectorUpdate>, EngineError> {
    let mut out = Vec::new();
    for t in tables {
        for idx in &t.indexes {
            let Some(config) = vector_config(idx, t) else {
                continue;
            };
            let Some(graph) = engine.vectors.get(idx.id) else {
                continue;
            };
            let Some(c) = t.column(&idx.column) else {
                continue;
            };
            let start = keys::table_prefix(t.id);
            let end = keys::prefix_end(&start);
            for (key, stored) in written.range(start..end) {
                let Some(d) = keys::decode_key(key) else {
                    continue;
                };
                if d.is_header {
                    continue;
                }
                let vector = match stored {
                    Some(v) => live_vector(&Row::decode(v).map_err(EngineError::corrupt)?, c.id),
                    None => None,
                };
                if let Some(v) = &vector {
                    if config.similarity == Similarity::Cosine && v.iter().all(|x| *x == 0.0) {
                        return Err(EngineError::invalid(format!(
                            "Zero and near-zero vectors cannot be indexed or queried with cosine similarity (column {})",
                            c.name
                        )));
                    }
                }
                out.push(VectorUpdate {
                    graph: graph.clone(),
                    key: key.clone(),
                    vector,
                });
            }
        }
    }
    Ok(out)
}

impl Engine {
    /// Applies the graph changes of a write that has been written (under its stripe locks).
    pub(crate) fn apply_vector_updates(&self, updates: Vec<VectorUpdate>) {
        for u in updates {
            match u.vector {
                Some(v) => self.vectors.upsert(&u.graph, &u.key, &v),
                None => {
                    let _ = u.graph.index.remove(&u.key);
                }
            }
        }
    }

    /// `vector_index_memory_bytes`: the size above which a graph is freed (ANN queries on
    /// its index then scan).
    pub fn set_vector_index_memory_bytes(&self, bytes: usize) {
        self.vectors.memory_limit.store(bytes, Ordering::Relaxed);
        // Graphs built at open were built under the default.
        let graphs: Vec<Arc<Graph>> = self
            .vectors
            .graphs
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect();
        for g in graphs {
            if g.index.memory_bytes() > bytes {
                self.vectors.over(&g);
            }
        }
    }

    /// Tables with fewer indexed rows than this answer ANN queries by an exact scan.
    pub fn set_vector_exact_below(&self, rows: usize) {
        self.vectors.exact_below.store(rows, Ordering::Relaxed);
    }

    /// Forgets the graphs of indexes the schema no longer has, and builds one for every
    /// vector index without one (a new index, a fresh id after TRUNCATE, every index when
    /// the store opens). Runs under the DDL lock or at open.
    pub(crate) fn build_vector_indexes(&self) -> Result<(), EngineError> {
        let schema = self.schema.get();
        let wanted = wanted_graphs(&schema);
        self.vectors
            .graphs
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|id, _| wanted.iter().any(|(_, i, _)| i.id == *id));
        for (t, idx, config) in wanted {
            if self.vectors.get(idx.id).is_some() {
                continue;
            }
            let index = VectorIndex::new(config).map_err(|e| EngineError::server(e.to_string()))?;
            let graph = Arc::new(Graph {
                index,
                ready: AtomicBool::new(false),
                over_budget: AtomicBool::new(false),
                since_check: AtomicU64::new(0),
            });
            // Installed before the scan: every write from now on maintains it, and the scan
            // (partition by partition under the stripe locks) adds what was written before.
            self.vectors
                .graphs
                .write()
                .unwrap_or_else(|p| p.into_inner())
                .insert(idx.id, graph.clone());
            let Some(c) = t.column(&idx.column).map(|c| c.id) else {
                continue;
            };
            self.each_partition_locked(t.id, |prefix, _| {
                let rows = keys::row_key(prefix, &[]);
                let end = keys::prefix_end(&rows);
                for item in self.storage.scan(
                    Bound::Included(rows.as_slice()),
                    Bound::Excluded(end.as_slice()),
                    false,
                ) {
                    let (key, stored) = item?;
                    let row = Row::decode(&stored).map_err(EngineError::corrupt)?;
                    if let Some(v) = live_vector(&row, c) {
                        self.vectors.upsert(&graph, &key, &v);
                    }
                }
                Ok(())
            })?;
            graph.ready.store(true, Ordering::Release);
        }
        Ok(())
    }
}

/// The row's stored vector in column `column`, if it has a non-empty one.
fn live_vector(row: &Row, column: u16) -> Option<Vec<f32>> {
    row.cells
        .iter()
        .find(|x| x.column == column)
        .and_then(|x| match &x.value {
            CellValue::Live { value, .. } if !value.is_empty() => crate::similarity::floats(value),
            _ => None,
        })
}

/// Whether the vector index `idx` keeps a graph: on a regular column (a static one's values
/// live in partition headers, and its ANN queries scan).
pub(crate) fn has_graph(idx: &IndexDef, t: &TableDef) -> bool {
    t.column(&idx.column)
        .is_some_and(|c| c.kind == ColumnKind::Regular)
}

fn wanted_graphs(schema: &Schema) -> Vec<(Arc<TableDef>, IndexDef, VectorIndexConfig)> {
    schema
        .tables
        .values()
        .flat_map(|t| {
            t.indexes
                .iter()
                .filter(move |i| has_graph(i, t))
                .filter_map(move |i| Some((t.clone(), i.clone(), vector_config(i, t)?)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::tests::{node, q, rows};
    use crate::Engine;
    use std::sync::Arc;

    fn keys(e: &Engine, text: &str) -> Vec<String> {
        rows(q(e, Some("ks"), text).unwrap_or_else(|err| panic!("{text}: {err:?}")))
            .into_iter()
            .map(|r| r[0].clone())
            .collect()
    }

    fn exec(e: &Engine, text: &str) {
        q(e, Some("ks"), text).unwrap_or_else(|err| panic!("{text}: {err:?}"));
    }

    const QUERY: &str = "SELECT k FROM t ORDER BY v ANN OF [0.5, 0.25, 0.1] LIMIT 5";

    /// The graph path (forced with `exact_below` 0) re-checks every hit: deleted, overwritten
    /// and expired rows never come back, the search goes deeper when they are dropped, and a
    /// reopened engine rebuilds the graph from the table.
    #[test]
    fn graph_answers_are_checked_against_the_table_and_rebuilt_at_open() {
        let store: Arc<dyn storage::Storage> = Arc::new(storage::MemStorage::new());
        let e = Engine::open(store.clone(), node()).unwrap();
        e.set_vector_exact_below(0);
        exec(&e, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
        exec(&e, "CREATE TABLE t (k int PRIMARY KEY, v vector<float, 3>)");
        exec(&e, "CREATE CUSTOM INDEX ON t (v) USING 'sai' WITH OPTIONS = {'similarity_function': 'euclidean'}");
        for k in 0..300 {
            let x = (k as f32 * 0.37).sin();
            let y = (k as f32 * 0.11).cos();
            exec(
                &e,
                &format!("INSERT INTO t (k, v) VALUES ({k}, [{x}, {y}, 0.1])"),
            );
        }
        let exact = |e: &Engine| {
            e.set_vector_exact_below(usize::MAX);
            let r = keys(e, QUERY);
            e.set_vector_exact_below(0);
            r
        };
        let first = keys(&e, QUERY);
        assert_eq!(first.len(), 5);
        let want = exact(&e);
        let overlap = first.iter().filter(|k| want.contains(k)).count();
        assert!(overlap >= 4, "graph {first:?} vs exact {want:?}");

        // Drop the best three hits three ways; none may come back and LIMIT is still met.
        exec(&e, &format!("DELETE FROM t WHERE k = {}", first[0]));
        exec(
            &e,
            &format!("UPDATE t SET v = [-9.0, -9.0, -9.0] WHERE k = {}", first[1]),
        );
        exec(&e, &format!("DELETE v FROM t WHERE k = {}", first[2]));
        let second = keys(&e, QUERY);
        assert_eq!(second.len(), 5);
        assert!(!second.iter().any(|k| first[..3].contains(k)), "{second:?}");

        // A row written with a TTL (at 1000 s) is found, then gone once expired.
        exec(
            &e,
            "INSERT INTO t (k, v) VALUES (1000, [0.5, 0.25, 0.1]) USING TTL 5",
        );
        assert_eq!(keys(&e, QUERY)[0], "1000");
        let later = crate::tests::at(1010);
        let opts = crate::QueryOptions {
            keyspace: Some("ks".into()),
            ..Default::default()
        };
        let out = e
            .query(QUERY, crate::Values::Positional(vec![]), &opts, later)
            .unwrap();
        let after = rows(out);
        assert_eq!(after.len(), 5);
        assert!(after.iter().all(|r| r[0] != "1000"));

        // Reopened on the same store: rebuilt from the table, same answers (at 1000 s the
        // TTL'd row is live again).
        let before = keys(&e, QUERY);
        assert_eq!(before[0], "1000");
        drop(e);
        let e = Engine::open(store, node()).unwrap();
        e.set_vector_exact_below(0);
        assert_eq!(keys(&e, QUERY), before);
        exec(&e, "TRUNCATE t");
        assert!(keys(&e, QUERY).is_empty());
        // TRUNCATE gave the index a fresh id with its own (empty, ready) graph, and freed the
        // old one: the graph serves again at once.
        let schema = e.schema.get();
        let t = schema.table("ks", "t").unwrap();
        let graph = e
            .vectors
            .get(t.indexes[0].id)
            .expect("a graph for the new id");
        assert!(graph.usable() && graph.index.is_empty());
        assert_eq!(e.vectors.graphs.read().unwrap().len(), 1);
        exec(&e, "INSERT INTO t (k, v) VALUES (7, [0.5, 0.25, 0.1])");
        assert_eq!(graph.index.len(), 1);
        assert_eq!(keys(&e, QUERY), vec!["7".to_string()]);
    }
}
