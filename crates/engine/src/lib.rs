//! `engine` — CQL meaning over an ordered byte map.
//!
//! Takes parsed CQL (`cql`), a schema catalog and a [`storage::Storage`], and executes
//! statements with Cassandra's semantics: last-write-wins by microsecond timestamp, row
//! markers, TTLs, cell/row/range/partition tombstones, Murmur3 token order, paging.
//! Synchronous and deterministic: time comes in as [`Now`]; no sockets, no async.
//!
//! It is **not** the protocol layer: results come back as [`Outcome`] with rows already in
//! the native protocol's cell encoding, and errors as [`proto::error::DbError`], so the
//! server only frames them.
//!
//! | module | what it holds |
//! |---|---|
//! | `token` | Murmur3Partitioner tokens, compound partition keys |
//! | `keys` | storage key layout, byte-comparable clustering encoding |
//! | `row` | stored rows and partition headers, reconciliation, purge; `row::in_place`: rows of simple cells read in their bytes (the storage's merge of two, a plain read's `PlainRow`) |
//! | `purge` | the compaction filter (`PurgeFilter`): what compactions drop or rewrite, by the schema it shares with the engine |
//! | `catalog` | keyspace/table definitions, the schema snapshot |
//! | `ddl` | CREATE/ALTER/DROP, table options; `Engine::ddl` runs them and installs the new schema |
//! | `compact` | `WITH COMPACT STORAGE` tables: their checks, hidden columns, DROP COMPACT STORAGE |
//! | `plan`, `build`, `selection` | resolved statements and the AST -> plan builder (`build::where_clause`: restrictions and their refusals; `selection`: the SELECT clause, aggregates, GROUP BY, with `selection::names` for output column names, `selection::elements` for map/set element and slice selection and `selection::group_by` for the GROUP BY key) |
//! | `read` | a SELECT run over storage: partitions, slices, filters, paging; `read::group`: a group's aggregates folded |
//! | `lane` | which lane a statement runs in (scan or point) and the pacing hook a rate-limited scan sleeps in |
//! | `exec` | writes over storage; `exec::ranges`: the partitions and clustering intervals a WHERE clause selects, shared with reads; `exec::batch_size`: a BATCH's data size as Cassandra measures it; `exec::collection_op`: collection updates that read the stored value; `exec::filter`: filters with their values bound, checked against the rows a read finds |
//! | `arith`, `fcts`, `scalar` | operators; collection and masking functions; the other native functions (the one evaluator, clock passed in) |
//! | `masking` | dynamic data masking: `MASKED WITH` masks attached to columns (schema, `system_schema.column_masks`, DESCRIBE) and the masked plan a role without `UNMASK` reads through |
//! | `bigint`, `num`, `javafmt` | varint/decimal arithmetic for conversions; a number in Java's width and its casts; values printed as Cassandra prints them |
//! | `bigdec`, `decmath` | `decimal` as Java's `BigDecimal`: Cassandra's `+ - * / %`, sum and avg steps, ordering; `exp`/`log`/`log10` |
//! | `literal`, `functions`, `collections`, `types` | values |
//! | `similarity` | the vector similarity functions, bit-exact with Cassandra's |
//! | `json`, `json_row` | JSON text of values (`SELECT JSON`, `toJson`, `fromJson`); rows of `INSERT JSON` |
//! | `temporal` | calendar maths; Cassandra's text forms of dates, times, timestamps, durations and UUIDs (its serializers' `fromString`) |
//! | `vector_index` | an ANN index over float vectors (HNSW), the graph of an SAI vector index |
//! | `system` | virtual system tables and DESCRIBE |
//! | `warnings` | Cassandra's client warnings (aggregates, vector indexes, batches: gc_grace, size, unlogged) and the batch size failure |
//! | `virtual_tables` | `system_views`: Cassandra's virtual tables, filled from a [`virtual_tables::LiveData`] the process hands in |
//! | `index` | secondary indexes and SAI: DDL, entries kept by every write, indexed reads |
//! | `view` | materialized views: DDL, view rows kept by every write of the base, build |
//! | `visibility`, `labels` | cell visibility labels (docs/visibility.md): Accumulo access expressions and authorizations; the table option, write labels and constraint, a request's authorizations |
//! | `auth` | roles, passwords and permissions (Cassandra's PasswordAuthenticator, CassandraRoleManager, CassandraAuthorizer); `system_auth` tables are its views |
//!
//! # Invariants
//! - A write is acknowledged only after its storage batch is written (and synced in batch
//!   commit mode). Rows of one partition are written under one stripe lock, so concurrent
//!   read-modify-writes of a row never lose an update.
//! - Readers never take locks: the schema is an immutable snapshot swapped on DDL.
//! - Table ids are never reused; TRUNCATE and DROP move a table to a fresh id and the
//!   compaction filter drops data of ids no longer in the schema.

mod arith;
pub mod auth;
mod bigdec;
mod bigint;
pub mod build;
pub mod catalog;
mod collections;
pub mod compact;
pub mod ddl;
mod decmath;
pub mod exec;
mod fcts;
pub mod functions;
mod headers;
pub mod index;
mod javafmt;
pub mod json;
mod json_row;
pub mod keys;
pub mod labels;
pub mod lane;
mod listing;
pub mod literal;
mod lwt;
pub mod masking;
mod num;
pub mod plan;
mod purge;
mod read;
pub mod returning;
pub mod row;
pub mod scalar;
mod selection;
pub mod service_levels;
pub mod similarity;
pub mod system;
mod temporal;
pub mod token;
pub mod types;
mod user_code;
pub mod vector_index;
pub mod view;
pub mod virtual_tables;
pub mod visibility;
pub mod warnings;

use build::{Builder, Compiled, CompiledKind};
use catalog::{PersistedSchema, Schema, TableDef, SCHEMA_KEY};
pub use exec::BoundValue;
use exec::Mutations;
use plan::{wire_columns, BindSpec, OutputColumn};
use proto::error::DbError;
use proto::response::ColumnSpec;
use proto::types::ColumnType;
use purge::SchemaCell;
pub use purge::{purge_filter, FilterHandle, PurgeFilter};
pub use read::tombstones::TombstoneThresholds;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use storage::Storage;
pub use system::NodeInfo;

/// The current time, passed in so the engine stays deterministic under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Now {
    /// Microseconds since the epoch (default write timestamps).
    pub micros: i64,
    /// Seconds since the epoch (TTL expiry, tombstone gc).
    pub secs: u32,
}

impl Now {
    /// The clock at `micros` microseconds since the epoch.
    pub fn at_micros(micros: i64) -> Now {
        Now {
            micros,
            secs: micros.div_euclid(1_000_000).clamp(0, i64::from(u32::MAX)) as u32,
        }
    }

    /// The wall clock, for the server boundary (`local`) to take once per request and for the
    /// compaction filter's clock (see [`purge_filter`]); nothing in the engine calls it.
    pub fn system() -> Now {
        let d = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Now {
            micros: d.as_micros() as i64,
            secs: d.as_secs() as u32,
        }
    }
}

/// Errors inside the engine; every one maps to a protocol error at the API boundary.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("{0}")]
    Db(DbError),
    /// A bound value was `unset` where that means "skip" to the caller.
    #[error("unset value for marker {0}")]
    Unset(usize),
    #[error(transparent)]
    Storage(#[from] storage::StorageError),
    #[error(transparent)]
    Corrupt(#[from] row::CorruptRow),
}

impl EngineError {
    pub fn invalid(m: impl Into<String>) -> Self {
        EngineError::Db(DbError::invalid(m))
    }
    pub fn syntax(m: impl Into<String>) -> Self {
        EngineError::Db(DbError::syntax(m))
    }
    pub fn config(m: impl Into<String>) -> Self {
        EngineError::Db(DbError::config(m))
    }
    pub fn server(m: impl Into<String>) -> Self {
        EngineError::Db(DbError::server(m))
    }
    pub fn protocol(m: impl Into<String>) -> Self {
        EngineError::Db(DbError::protocol(m))
    }
    pub fn unauthorized(m: impl Into<String>) -> Self {
        EngineError::Db(DbError::unauthorized(m))
    }
    pub fn already_exists(ks: &str, table: Option<&str>) -> Self {
        EngineError::Db(DbError::already_exists(ks, table.map(|t| t.to_string())))
    }
    pub fn corrupt(e: row::CorruptRow) -> Self {
        EngineError::Corrupt(e)
    }
    pub fn into_db(self) -> DbError {
        match self {
            EngineError::Db(e) => e,
            EngineError::Unset(i) => {
                DbError::invalid(format!("Invalid unset value for marker {i}"))
            }
            EngineError::Storage(e) => DbError::server(e.to_string()),
            EngineError::Corrupt(e) => DbError::server(e.to_string()),
        }
    }
}

/// Rows of a result, cells already serialized as `[bytes]` back to back.
#[derive(Debug, Clone)]
pub struct ResultSet {
    /// Each column with its keyspace and table, as a ROWS result's metadata names them.
    pub columns: Arc<[ColumnSpec]>,
    pub rows: usize,
    /// The rows, after `head_room` bytes left free for the caller.
    pub data: Vec<u8>,
    /// Bytes at the front of `data` that are not rows: room the caller asked for
    /// ([`QueryOptions::result_head_room`]) to write the response's head in, in front of the
    /// rows, instead of copying them behind it. 0 unless asked for and the read took it.
    pub head_room: usize,
    pub paging_state: Option<Vec<u8>>,
    /// Client warnings the read raised (the tombstone warning, `read::tombstones`); empty
    /// (no allocation) for nearly every result.
    pub warnings: Vec<String>,
}

/// A schema change, for the RESULT and the pushed EVENT: the protocol's own type, so it
/// crosses to the server as it goes on the wire.
pub use proto::response::{SchemaChange, SchemaChangeTarget, SchemaChangeType};

/// A change to keyspace `ks`.
pub(crate) fn keyspace_change(change: SchemaChangeType, ks: &str) -> SchemaChange {
    SchemaChange {
        change,
        target: SchemaChangeTarget::Keyspace(ks.into()),
    }
}

/// A change to table (or view) `t` of keyspace `ks`.
pub(crate) fn table_change(change: SchemaChangeType, ks: &str, t: &str) -> SchemaChange {
    SchemaChange {
        change,
        target: SchemaChangeTarget::Table {
            keyspace: ks.into(),
            name: t.into(),
        },
    }
}

/// A change to user type `name` of keyspace `ks`.
pub(crate) fn type_change(change: SchemaChangeType, ks: String, name: String) -> SchemaChange {
    SchemaChange {
        change,
        target: SchemaChangeTarget::Type { keyspace: ks, name },
    }
}

#[derive(Debug, Clone)]
pub enum Outcome {
    Void,
    /// A write answered with Void and Cassandra's client warnings, in the order Cassandra
    /// sends them (a BATCH's: `warnings::logged_batch_low_gc_grace`, `warnings::batch_size`,
    /// `warnings::unlogged_batch`); never empty.
    VoidWithWarnings(Vec<String>),
    Rows(ResultSet),
    SetKeyspace(String),
    SchemaChange(SchemaChange),
}

/// What PREPARE returns and EXECUTE runs.
pub struct Prepared {
    pub id: [u8; 16],
    pub query: String,
    pub keyspace: Option<String>,
    pub statement: cql::ParsedStatement,
    compiled: RwLock<(u64, Arc<Compiled>)>,
    /// Whether its indexed lookups are worth trying on the request's thread (see
    /// [`lane::LookupHint`]).
    pub lookup_hint: lane::LookupHint,
}

impl Prepared {
    /// One look at the current plan, under the lock once: what EXECUTE decides on before it
    /// runs (lane, metrics, the v5 metadata id) and the plan it then runs.
    pub fn snapshot(&self) -> PlanSnapshot {
        let c = self.compiled.read().unwrap_or_else(|p| p.into_inner());
        PlanSnapshot {
            generation: c.0,
            plan: c.1.clone(),
        }
    }
}

/// A prepared statement's plan as of one moment (see [`Prepared::snapshot`]). EXECUTE takes
/// one and reads everything off it instead of locking the statement for each question; when
/// the execution has to rebuild the plan (the schema changed, or the plan reads the clock) the
/// snapshot follows the rebuilt plan, so what is read after the run describes what ran.
#[derive(Clone)]
pub struct PlanSnapshot {
    /// The schema generation the plan was compiled against.
    generation: u64,
    plan: Arc<Compiled>,
}

impl PlanSnapshot {
    pub fn binds(&self) -> Vec<BindSpec> {
        self.plan
            .binds
            .iter()
            .map(|b| b.clone().unwrap_or_else(unknown_bind))
            .collect()
    }
    /// Whether this is a SELECT (cheap: no copy of the result columns).
    pub fn is_select(&self) -> bool {
        matches!(
            self.plan.kind,
            CompiledKind::Select(_) | CompiledKind::VirtualSelect(_)
        )
    }
    /// Whether the partition key is fully bound by markers (a single-partition statement).
    pub fn is_single_partition(&self) -> bool {
        !self.plan.pk_indexes.is_empty()
    }
    /// For each partition key column, the bind marker that sets it (token-aware routing).
    pub fn pk_indexes(&self) -> &[u16] {
        &self.plan.pk_indexes
    }
    /// Result columns of a SELECT (None for other statements): the plan's own, shared.
    pub fn result_columns(&self) -> Option<Arc<[ColumnSpec]>> {
        match &self.plan.kind {
            CompiledKind::Select(p) | CompiledKind::VirtualSelect(p) => Some(p.output.clone()),
            _ => None,
        }
    }
    /// A digest of the result metadata (v5 `result_metadata_id`), computed once per plan.
    pub fn result_metadata_id(&self) -> [u8; 16] {
        self.plan.result_metadata_id
    }
}

fn metadata_digest(kind: &CompiledKind) -> [u8; 16] {
    let mut h = Fnv::default();
    if let CompiledKind::Select(p) | CompiledKind::VirtualSelect(p) = kind {
        h.write(p.table.keyspace.as_bytes());
        h.write(p.table.name.as_bytes());
        for c in p.output.iter() {
            h.write(c.name.as_bytes());
            h.write(types::cql_type_name(&c.ty).as_bytes());
        }
    }
    h.digest16()
}

fn unknown_bind() -> BindSpec {
    BindSpec {
        name: "?".into(),
        ty: ColumnType::Blob,
        keyspace: String::new(),
        table: String::new(),
    }
}

#[derive(Default)]
struct Fnv(u64, u64);
impl Fnv {
    fn write(&mut self, b: &[u8]) {
        for x in b {
            self.0 = (self.0 ^ *x as u64).wrapping_mul(0x100_0000_01b3);
            self.1 = (self.1 ^ (*x as u64).rotate_left(17)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
        self.0 ^= 0xFF;
    }
    fn digest16(&self) -> [u8; 16] {
        let mut o = [0u8; 16];
        o[..8].copy_from_slice(&self.0.to_be_bytes());
        o[8..].copy_from_slice(&self.1.to_be_bytes());
        o
    }
}

/// Per-request options.
#[derive(Debug, Clone, Default)]
pub struct QueryOptions {
    pub keyspace: Option<Arc<str>>,
    pub page_size: Option<i32>,
    pub paging_state: Option<Vec<u8>>,
    /// The client's default timestamp (v3+ `default_timestamp`).
    pub timestamp: Option<i64>,
    /// The logged-in role (`None` with AllowAllAuthenticator): whose permissions are checked
    /// and who becomes the creator of what the statement creates.
    pub role: Option<Arc<str>>,
    /// The visibility authorizations the request asks to read with (its custom payload's
    /// `peregrine-authorizations`): a subset of its role's, never more (`labels.rs`).
    pub authorizations: Option<visibility::Authorizations>,
    /// Bytes a point read (`read::SelectRun::point`) leaves free at the front of its result's
    /// rows ([`ResultSet::head_room`]), for the server to write the response's head in.
    pub result_head_room: usize,
}

/// One statement of a BATCH.
pub enum BatchItem {
    Query(String, Vec<Option<BoundValue>>),
    Prepared([u8; 16], Vec<Option<BoundValue>>),
}

pub struct Engine {
    storage: Arc<dyn Storage>,
    schema: Arc<SchemaCell>,
    schema_generation: AtomicU64,
    /// Whether any table has an index or a materialized view: a write to a database without
    /// either skips their upkeep after one load of this flag (see `exec::apply`).
    has_indexes: AtomicBool,
    /// `materialized_views_enabled` (Cassandra's key; off by default).
    views_enabled: AtomicBool,
    /// `drop_compact_storage_enabled` (Cassandra's key; off by default).
    drop_compact_enabled: AtomicBool,
    /// `dynamic_data_masking_enabled` (Cassandra's key; off by default).
    masking_enabled: AtomicBool,
    ddl_lock: Mutex<()>,
    /// What CREATE INDEX leaves to the background build (`index::entries`).
    index_builds: Arc<index::IndexBuilds>,
    /// `index_build_wait` in milliseconds: how long CREATE INDEX builds before it answers.
    index_build_wait_ms: AtomicU64,
    stripes: Vec<Mutex<()>>,
    last_ts: AtomicI64,
    /// By statement id, hashed with foldhash (randomly seeded per process): every EXECUTE
    /// looks its statement up here, and SipHash of the 16-byte id was ~130 instructions.
    prepared: RwLock<HashMap<[u8; 16], Arc<Prepared>, foldhash::fast::RandomState>>,
    node: NodeInfo,
    auth: auth::Auth,
    /// ScyllaDB's service levels (`service_levels`).
    service_levels: service_levels::ServiceLevels,
    /// The graphs of SAI vector indexes (see `index::vector`).
    pub(crate) vectors: index::vector::VectorIndexes,
    /// What `system_views` shows of the process (see `virtual_tables`).
    live: RwLock<Option<Arc<dyn virtual_tables::LiveData>>>,
    /// Partitions per batch, by batch kind (`system_views.batch_metrics`).
    batch_sizes: virtual_tables::BatchSizes,
    /// `batch_size_warn_threshold` / `batch_size_fail_threshold`.
    batch_size_thresholds: RwLock<warnings::BatchSizeThresholds>,
    /// `tombstone_warn_threshold` / `tombstone_failure_threshold` (`read::tombstones`), read
    /// once per SELECT.
    tombstone_warn: AtomicU32,
    tombstone_fail: AtomicU32,
    /// Which tables may hold partition headers (a point read of the others is one look-up).
    pub(crate) headers: headers::Headers,
}

const NODE_KEY: &[u8] = b"\x00node";

/// The directory under the data directory where vector index graphs are saved.
pub const VECTOR_INDEX_DIR: &str = "vector_indexes";

/// What [`Engine::open_with_options`] takes beside the store.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    /// Where the graphs of SAI vector indexes are saved, one directory per index
    /// (`<data_dir>/vector_indexes`, [`VECTOR_INDEX_DIR`]), to be loaded at the next
    /// open instead of rebuilt; `None`: never saved, rebuilt at every open.
    pub vector_index_dir: Option<std::path::PathBuf>,
    /// `vector_index_memory_bytes`: the heap size above which a graph is served from its saved
    /// files (or, with no `vector_index_dir`, freed: ANN queries on its index then scan).
    /// Given at open because the graphs are loaded or built there.
    pub vector_index_memory_bytes: usize,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            vector_index_dir: None,
            vector_index_memory_bytes: index::vector::DEFAULT_MEMORY_BYTES,
        }
    }
}

impl Engine {
    pub fn open(storage: Arc<dyn Storage>, node: NodeInfo) -> Result<Engine, DbError> {
        // A store without a purge filter: the schema handle is the engine's alone.
        Self::open_with_filter(storage, node, FilterHandle::new())
    }

    pub fn open_with_filter(
        storage: Arc<dyn Storage>,
        node: NodeInfo,
        filter: FilterHandle,
    ) -> Result<Engine, DbError> {
        Self::open_with_options(storage, node, filter, OpenOptions::default())
    }

    pub fn open_with_options(
        storage: Arc<dyn Storage>,
        mut node: NodeInfo,
        filter: FilterHandle,
        options: OpenOptions,
    ) -> Result<Engine, DbError> {
        let mut schema = Schema::default();
        if let Some(bytes) = storage
            .get(SCHEMA_KEY)
            .map_err(|e| DbError::server(e.to_string()))?
        {
            let p: PersistedSchema = serde_json::from_slice(&bytes)
                .map_err(|e| DbError::server(format!("cannot read the stored schema: {e}")))?;
            for ks in p.keyspaces {
                schema.keyspaces.insert(ks.name.clone(), Arc::new(ks));
            }
            for u in p.types {
                schema
                    .types
                    .insert((u.keyspace.clone(), u.name.clone()), Arc::new(u));
            }
            for mut t in p.tables {
                for c in &mut t.columns {
                    if c.cql_type == compact::EMPTY_TYPE {
                        c.ty = compact::empty_type();
                        continue;
                    }
                    let parsed = cql::parse_type(&c.cql_type)
                        .map_err(|e| DbError::server(format!("stored type {}: {e}", c.cql_type)))?;
                    c.ty = ddl::resolve_type(&schema, &t.keyspace, &parsed)
                        .map_err(EngineError::into_db)?;
                }
                schema
                    .tables
                    .insert((t.keyspace.clone(), t.name.clone()), Arc::new(t));
            }
            schema.next_table_id = p.next_table_id;
            schema.version = p.version;
        } else {
            schema.next_table_id = 1;
            schema.version = scalar::random_uuid(0);
        }
        // Data of dropped tables is never read again (ids are not reused), so a store without
        // tables can start tracking which tables have headers.
        let headers = headers::Headers::open(storage.as_ref(), schema.tables.is_empty())
            .map_err(|e| DbError::server(e.to_string()))?;
        match storage
            .get(NODE_KEY)
            .map_err(|e| DbError::server(e.to_string()))?
        {
            Some(id) if id.len() == 16 => node.host_id.copy_from_slice(&id),
            _ => {
                node.host_id = scalar::random_uuid(0);
                let mut b = storage::WriteBatch::new();
                b.put(NODE_KEY.to_vec(), node.host_id.to_vec());
                storage
                    .write(b)
                    .map_err(|e| DbError::server(e.to_string()))?;
            }
        }
        system::add_system_tables(&mut schema).map_err(EngineError::into_db)?;
        schema.refresh_indexed();
        let has_indexes = AtomicBool::new(!schema.indexed.is_empty());
        let auth = auth::Auth::open(storage.clone())?;
        let service_levels = service_levels::ServiceLevels::open(storage.clone())?;
        let schema_cell = filter.0;
        *schema_cell.0.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(schema);
        let engine = Engine {
            storage,
            schema: schema_cell,
            schema_generation: AtomicU64::new(1),
            has_indexes,
            views_enabled: AtomicBool::new(false),
            drop_compact_enabled: AtomicBool::new(false),
            masking_enabled: AtomicBool::new(false),
            ddl_lock: Mutex::new(()),
            index_builds: Arc::default(),
            index_build_wait_ms: AtomicU64::new(5000),
            stripes: (0..1024).map(|_| Mutex::new(())).collect(),
            last_ts: AtomicI64::new(0),
            prepared: RwLock::new(HashMap::default()),
            node,
            auth,
            service_levels,
            vectors: index::vector::VectorIndexes::new(
                options.vector_index_dir,
                options.vector_index_memory_bytes,
            ),
            live: RwLock::new(None),
            batch_sizes: virtual_tables::BatchSizes::default(),
            batch_size_thresholds: RwLock::new(warnings::BatchSizeThresholds::default()),
            tombstone_warn: AtomicU32::new(TombstoneThresholds::default().warn),
            tombstone_fail: AtomicU32::new(TombstoneThresholds::default().fail),
            headers,
        };
        // An index whose build a crash interrupted is built again.
        engine.build_indexes().map_err(EngineError::into_db)?;
        engine.build_views().map_err(EngineError::into_db)?;
        Ok(engine)
    }

    pub fn schema(&self) -> Arc<Schema> {
        self.schema.get()
    }

    /// Allows or refuses `CREATE MATERIALIZED VIEW` (`materialized_views_enabled`).
    pub fn set_materialized_views_enabled(&self, on: bool) {
        self.views_enabled.store(on, Ordering::Relaxed);
    }

    /// Sets the data sizes past which a BATCH of several mutations is warned about or refused
    /// (`batch_size_warn_threshold`, `batch_size_fail_threshold`).
    pub fn set_batch_size_thresholds(&self, limits: warnings::BatchSizeThresholds) {
        *self
            .batch_size_thresholds
            .write()
            .unwrap_or_else(|p| p.into_inner()) = limits;
    }

    /// Sets the tombstone counts past which a read is warned about or fails
    /// (`tombstone_warn_threshold`, `tombstone_failure_threshold`).
    pub fn set_tombstone_thresholds(&self, t: TombstoneThresholds) {
        self.tombstone_warn.store(t.warn, Ordering::Relaxed);
        self.tombstone_fail.store(t.fail, Ordering::Relaxed);
    }

    pub(crate) fn tombstone_thresholds(&self) -> TombstoneThresholds {
        TombstoneThresholds {
            warn: self.tombstone_warn.load(Ordering::Relaxed),
            fail: self.tombstone_fail.load(Ordering::Relaxed),
        }
    }

    /// Allows or refuses `ALTER TABLE ... DROP COMPACT STORAGE` (`drop_compact_storage_enabled`).
    pub fn set_drop_compact_storage_enabled(&self, on: bool) {
        self.drop_compact_enabled.store(on, Ordering::Relaxed);
    }

    /// Allows or refuses `MASKED WITH` in CREATE/ALTER TABLE (`dynamic_data_masking_enabled`).
    pub fn set_dynamic_data_masking_enabled(&self, on: bool) {
        self.masking_enabled.store(on, Ordering::Relaxed);
    }

    /// For a SELECT of a table with masked columns by a role without `UNMASK` (permissions
    /// checked, not a superuser): the plan reading masked values, after refusing WHERE
    /// restrictions on masked columns unless the role has `SELECT_MASKED` (Cassandra's
    /// `SelectStatement.authorize` and `execute`). None when values are read clear.
    fn masking_for(
        &self,
        plan: &plan::SelectPlan,
        st: &cql::Statement,
        opts: &QueryOptions,
    ) -> Result<Option<Box<plan::SelectPlan>>, EngineError> {
        // Boxed: an unboxed `Option` of a plan is copied whole on every read, `None` too.
        let t = &plan.table;
        if !self.auth.authorizing() || !masking::has_masks(t) {
            return Ok(None);
        }
        let role = opts.role.as_deref();
        let has = |p: auth::Permission| {
            self.auth
                .authorize_table(role, &t.keyspace, &t.name, p)
                .is_ok()
        };
        if has(auth::Permission::Unmask) {
            return Ok(None);
        }
        if let cql::Statement::Select(s) = st {
            let restricted = masking::restricted_masked(t, s);
            if !restricted.is_empty() && !has(auth::Permission::SelectMasked) {
                return Err(EngineError::unauthorized(format!(
                    "User {} has no UNMASK nor SELECT_MASKED permission on table {}.{}, cannot query masked columns [{}]",
                    role.unwrap_or(""),
                    t.keyspace,
                    t.name,
                    restricted.join(", ")
                )));
            }
        }
        Ok(Some(Box::new(masking::masked_plan(plan))))
    }

    /// Refuses a statement that attaches a mask while masking is disabled.
    fn check_masking(&self, st: &cql::Statement) -> Result<(), EngineError> {
        if !self.masking_enabled.load(Ordering::Relaxed) && masking::attaches_mask(st) {
            return Err(EngineError::invalid(masking::DISABLED));
        }
        Ok(())
    }

    /// Hands the engine the process state `system_views` shows.
    pub fn set_live_data(&self, live: Arc<dyn virtual_tables::LiveData>) {
        *self.live.write().unwrap_or_else(|p| p.into_inner()) = Some(live);
    }

    /// `index_build_wait`: how long CREATE INDEX builds an index over existing rows before it
    /// answers (the rest is built in the background).
    pub fn set_index_build_wait(&self, wait: std::time::Duration) {
        let ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
        self.index_build_wait_ms.store(ms, Ordering::Relaxed);
    }

    /// Where CREATE INDEX hands a build it did not finish to the server's build thread
    /// (which then calls [`Engine::finish_index_builds`]).
    pub fn index_builds(&self) -> Arc<index::IndexBuilds> {
        self.index_builds.clone()
    }

    pub fn node(&self) -> &NodeInfo {
        &self.node
    }

    /// Roles, credentials and permissions.
    pub fn auth(&self) -> &auth::Auth {
        &self.auth
    }

    /// Flushes everything acknowledged to stable storage.
    pub fn sync(&self) -> Result<(), DbError> {
        self.storage
            .sync()
            .map_err(|e| DbError::server(e.to_string()))
    }

    /// Forces a compaction (purges expired data and old tombstones).
    pub fn compact(&self) -> Result<(), DbError> {
        self.storage
            .compact()
            .map_err(|e| DbError::server(e.to_string()))
    }

    /// A strictly increasing microsecond timestamp, never behind `now`.
    pub(crate) fn next_timestamp(&self, now: Now) -> i64 {
        let mut last = self.last_ts.load(Ordering::Relaxed);
        loop {
            let next = now.micros.max(last + 1);
            match self.last_ts.compare_exchange_weak(
                last,
                next,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return next,
                Err(x) => last = x,
            }
        }
    }

    fn compile(
        &self,
        parsed: &cql::ParsedStatement,
        keyspace: Option<&str>,
        schema: &Schema,
        now: Now,
    ) -> Result<Compiled, EngineError> {
        let mut b = Builder::new(schema, keyspace, parsed.bind_count(), now);
        let (kind, pk_indexes) = match &parsed.statement {
            cql::Statement::Select(s) => {
                let plan = b.select(s)?;
                let pk = match &plan.partitions {
                    plan::PartitionSel::Keys(k, _) => b.pk_indexes(Some(k)),
                    _ => Vec::new(),
                };
                if system::is_virtual(&plan.table) {
                    (CompiledKind::VirtualSelect(plan), pk)
                } else {
                    (CompiledKind::Select(plan), pk)
                }
            }
            cql::Statement::Insert(s) => {
                let plan = b.insert(s)?;
                build::check_write_attributes(&plan, plan.timestamp.is_some())?;
                let pk = b.pk_indexes(Some(&plan.partition));
                (CompiledKind::Write(plan), pk)
            }
            cql::Statement::Update(s) => {
                let plan = b.update(s)?;
                build::check_write_attributes(&plan, plan.timestamp.is_some())?;
                let pk = b.pk_indexes(Some(&plan.partition));
                (CompiledKind::Write(plan), pk)
            }
            cql::Statement::Delete(s) if s.returning.is_some() => {
                let r = returning::compile(&mut b, s)?;
                labels::refuse_on_labelled(&r.write.table, "RETURNING clauses")?;
                build::check_write_attributes(&r.write, r.write.timestamp.is_some())?;
                let pk = b.pk_indexes(Some(&r.write.partition));
                (CompiledKind::DeleteReturning(Box::new(r)), pk)
            }
            cql::Statement::Delete(s) => {
                let plan = b.delete(s)?;
                build::check_write_attributes(&plan, plan.timestamp.is_some())?;
                let pk = b.pk_indexes(Some(&plan.partition));
                (CompiledKind::Write(plan), pk)
            }
            cql::Statement::Batch(batch) => {
                let mut plans = Vec::new();
                // Whether each statement has a USING TIMESTAMP of its own.
                let mut own_timestamps = Vec::new();
                for st in &batch.statements {
                    let mut p = match st {
                        cql::ast::ModificationStatement::Insert(s) => b.insert(s)?,
                        cql::ast::ModificationStatement::Update(s) => b.update(s)?,
                        cql::ast::ModificationStatement::Delete(s) => b.delete(s)?,
                    };
                    own_timestamps.push(p.timestamp.is_some());
                    if p.timestamp.is_none() {
                        if let Some(ts) = &batch.using.timestamp {
                            p.timestamp = Some(b.term(
                                &p.table.clone(),
                                ts,
                                "[timestamp]",
                                &ColumnType::Bigint,
                            )?);
                        }
                    }
                    labels::batch_label(&mut b, &mut p, st, batch.using.visibility.as_ref())?;
                    plans.push(p);
                }
                build::validate_batch(&batch.using, batch.kind, &plans, &own_timestamps)?;
                let kind = match batch.kind {
                    cql::ast::BatchKind::Logged => BatchKind::Logged,
                    cql::ast::BatchKind::Unlogged => BatchKind::Unlogged,
                    cql::ast::BatchKind::Counter => BatchKind::Counter,
                };
                (CompiledKind::Batch(kind, plans), Vec::new())
            }
            _ => (CompiledKind::Other, Vec::new()),
        };
        for p in match &kind {
            CompiledKind::Write(p) => std::slice::from_ref(p),
            CompiledKind::DeleteReturning(r) => std::slice::from_ref(&r.write),
            CompiledKind::Batch(_, ps) => ps.as_slice(),
            _ => &[],
        } {
            if system::is_virtual_keyspace(&p.table.keyspace) {
                return Err(EngineError::invalid(match kind {
                    CompiledKind::Batch(BatchKind::Logged, _) => {
                        "Cannot include a virtual table statement in a logged batch".to_string()
                    }
                    _ => format!(
                        "Modification is not supported by table {}.{}",
                        p.table.keyspace, p.table.name
                    ),
                }));
            }
            if system::is_virtual(&p.table)
                || ddl::SYSTEM_KEYSPACES.contains(&p.table.keyspace.as_str())
            {
                return Err(EngineError::unauthorized(format!(
                    "{} keyspace is not user-modifiable.",
                    p.table.keyspace
                )));
            }
        }
        let result_metadata_id = metadata_digest(&kind);
        Ok(Compiled {
            kind,
            binds: b.binds,
            pk_indexes,
            volatile: b.volatile,
            result_metadata_id,
        })
    }

    /// Parses and runs one statement (QUERY).
    pub fn query(
        &self,
        text: &str,
        values: Values,
        opts: &QueryOptions,
        now: Now,
    ) -> Result<Outcome, DbError> {
        let planned = self.plan_query(text, values, opts, now)?;
        self.run_planned(&planned, opts, now)
    }

    /// Prepares `text` at the clock `now`: a literal that names the time (`'now'` for a
    /// timestamp) is fixed here, as Cassandra fixes it at PREPARE.
    pub fn prepare(
        &self,
        text: &str,
        keyspace: Option<&str>,
        now: Now,
    ) -> Result<Arc<Prepared>, DbError> {
        let mut h = Fnv::default();
        h.write(keyspace.unwrap_or("").as_bytes());
        h.write(text.as_bytes());
        let id = h.digest16();
        // A statement prepared before a schema change is prepared again (its bind types and
        // result columns may have changed, as when a table is dropped and created anew).
        let gen = self.schema_generation.load(Ordering::Acquire);
        if let Some(p) = self
            .prepared
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
        {
            let current = p.compiled.read().unwrap_or_else(|x| x.into_inner()).0 == gen;
            if current {
                return Ok(p.clone());
            }
        }
        let parsed = cql::parse(text).map_err(parse_error)?;
        let schema = self.schema.get();
        // A plan that calls a clock function (`now()` in a term) is rebuilt at each
        // execution with that execution's clock; PREPARE only needs its shape.
        let compiled = self
            .compile(&parsed, keyspace, &schema, now)
            .map_err(EngineError::into_db)?;
        let p = Arc::new(Prepared {
            id,
            query: text.to_string(),
            keyspace: keyspace.map(|s| s.to_string()),
            statement: parsed,
            compiled: RwLock::new((gen, Arc::new(compiled))),
            lookup_hint: lane::LookupHint::default(),
        });
        self.prepared
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, p.clone());
        Ok(p)
    }

    pub fn prepared(&self, id: &[u8]) -> Option<Arc<Prepared>> {
        let id: [u8; 16] = id.try_into().ok()?;
        self.prepared
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .cloned()
    }

    /// The plan `snap` holds, or one rebuilt if the schema changed since it was compiled or the
    /// plan reads the clock; a rebuilt plan replaces the statement's and `snap`'s.
    fn plan_of(
        &self,
        p: &Prepared,
        snap: &mut PlanSnapshot,
        now: Now,
    ) -> Result<Arc<Compiled>, EngineError> {
        let gen = self.schema_generation.load(Ordering::Acquire);
        if snap.generation == gen && !snap.plan.volatile {
            return Ok(snap.plan.clone());
        }
        let schema = self.schema.get();
        let compiled = Arc::new(self.compile(&p.statement, p.keyspace.as_deref(), &schema, now)?);
        *p.compiled.write().unwrap_or_else(|x| x.into_inner()) = (gen, compiled.clone());
        *snap = PlanSnapshot {
            generation: gen,
            plan: compiled.clone(),
        };
        Ok(compiled)
    }

    pub fn execute(
        &self,
        id: &[u8],
        values: Values,
        opts: &QueryOptions,
        now: Now,
    ) -> Result<Outcome, DbError> {
        let p = self
            .prepared(id)
            .ok_or_else(|| DbError::unprepared(bytes::Bytes::copy_from_slice(id)))?;
        self.execute_prepared(&p, &mut p.snapshot(), values, opts, now)
    }

    /// EXECUTE of a statement the caller already looked up, running the plan of the snapshot
    /// the caller took of it (`snap` follows a plan the execution had to rebuild).
    pub fn execute_prepared(
        &self,
        p: &Prepared,
        snap: &mut PlanSnapshot,
        values: Values,
        opts: &QueryOptions,
        now: Now,
    ) -> Result<Outcome, DbError> {
        let values = bind_values(values, &p.statement)?;
        let compiled = self.plan_of(p, snap, now).map_err(EngineError::into_db)?;
        // The statement's keyspace when the request names none (copied only then).
        let filled;
        let opts = match (&opts.keyspace, &p.keyspace) {
            (None, Some(ks)) => {
                filled = QueryOptions {
                    keyspace: Some(Arc::from(ks.as_str())),
                    ..opts.clone()
                };
                &filled
            }
            _ => opts,
        };
        self.run(&p.statement, &compiled, &values, opts, now)
            .map_err(EngineError::into_db)
    }

    pub fn batch(
        &self,
        kind: BatchKind,
        items: Vec<BatchItem>,
        opts: &QueryOptions,
        now: Now,
    ) -> Result<Outcome, DbError> {
        let schema = self.schema.get();
        let mut compiled_items: Vec<(Arc<Compiled>, Vec<Option<BoundValue>>)> =
            Vec::with_capacity(items.len());
        let authorize = |st: &cql::Statement, keyspace: Option<&str>| {
            if self.auth.authorizing() {
                self.auth.authorize(
                    opts.role.as_deref(),
                    st,
                    keyspace.or(opts.keyspace.as_deref()),
                )
            } else {
                Ok(())
            }
        };
        for item in items {
            let (compiled, values) = match item {
                BatchItem::Query(text, v) => {
                    let parsed = cql::parse(&text).map_err(parse_error)?;
                    let c = self
                        .compile(&parsed, opts.keyspace.as_deref(), &schema, now)
                        .map_err(EngineError::into_db)?;
                    authorize(&parsed.statement, None)?;
                    (Arc::new(c), v)
                }
                BatchItem::Prepared(id, v) => {
                    let prepared = self
                        .prepared(&id)
                        .ok_or_else(|| DbError::unprepared(bytes::Bytes::copy_from_slice(&id)))?;
                    let plan = self
                        .plan_of(&prepared, &mut prepared.snapshot(), now)
                        .map_err(EngineError::into_db)?;
                    authorize(&prepared.statement.statement, prepared.keyspace.as_deref())?;
                    (plan, v)
                }
            };
            let values = check_bound(&compiled, &values, true)?.unwrap_or(values);
            compiled_items.push((compiled, values));
        }
        let mut parts = Vec::with_capacity(compiled_items.len());
        for (c, v) in &compiled_items {
            match &c.kind {
                CompiledKind::Write(p) => parts.push((p, v.as_slice())),
                CompiledKind::DeleteReturning(_) => {
                    return Err(DbError::invalid(
                        "RETURNING is not supported in a BATCH (docs/extensions.md)",
                    ))
                }
                _ => {
                    return Err(DbError::invalid(
                        "Invalid statement in batch: only UPDATE, INSERT and DELETE statements are allowed.",
                    ))
                }
            }
        }
        self.run_batch(kind, &parts, opts, now)
            .map_err(EngineError::into_db)
    }

    /// One atomic BATCH: Cassandra's batch-kind rules, conditions (all on one partition)
    /// checked and applied under its partition's write lock, one timestamp for every statement.
    fn run_batch(
        &self,
        kind: BatchKind,
        parts: &[(&plan::WritePlan, &[Option<BoundValue>])],
        opts: &QueryOptions,
        now: Now,
    ) -> Result<Outcome, EngineError> {
        let parts: Vec<(&plan::WritePlan, exec::Bindings)> = parts
            .iter()
            .map(|(p, v)| (*p, exec::Bindings::new(v, now)))
            .collect();
        let is_counter =
            |p: &plan::WritePlan| p.table.columns.iter().any(|c| c.ty == ColumnType::Counter);
        let counters = parts.iter().filter(|(p, _)| is_counter(p)).count();
        for (p, v) in &parts {
            self.check_label_write(p, v, opts)?;
        }
        // In Cassandra 5.0.9's order (BatchStatement.validate).
        if kind == BatchKind::Counter && counters < parts.len() {
            return Err(EngineError::invalid(
                "Cannot include non-counter statement in a counter batch",
            ));
        }
        if counters > 0 && counters < parts.len() {
            return Err(EngineError::invalid(
                "Counter and non-counter mutations cannot exist in the same batch",
            ));
        }
        if counters > 0 && kind == BatchKind::Logged {
            return Err(EngineError::invalid(
                "Cannot include a counter statement in a logged batch",
            ));
        }
        let ts = opts.timestamp.unwrap_or_else(|| self.next_timestamp(now));
        let conditional = parts.iter().any(|(p, _)| p.condition.is_some());
        // A conditional batch holds its one partition's write lock from the checks to the
        // write (see `conditional`).
        let mut held = Vec::new();
        let mut _guards = Vec::new();
        // What the conditions read, for the write under the same lock.
        let mut stored = Vec::new();
        // Each statement's partition, computed once for the check, the reads and the write.
        let mut known = Vec::new();
        if conditional {
            let mut rows = lwt::BatchRows::default();
            for (p, v) in &parts {
                let of = exec::partitions(&p.table, &p.partition, v)?;
                if of.len() != 1
                    || known
                        .first()
                        .is_some_and(|k: &Vec<exec::PartitionRef>| k[0].prefix != of[0].prefix)
                {
                    return Err(EngineError::invalid(
                        "Batch with conditions cannot span multiple partitions",
                    ));
                }
                known.push(of);
                rows.add(p, v)?;
            }
            (held, _guards) = self.lock_partitions(known.first().map(|k| k[0].prefix.as_slice()));
            let mut checked = Vec::new();
            let mut all_hold = true;
            let regulars = parts.iter().any(|(p, _)| lwt::sets_regulars(p));
            for ((p, v), of) in parts.iter().zip(&known) {
                if let Some(cond) = &p.condition {
                    let (holds, current) = self.batch_condition(p, of, cond, v, now, regulars)?;
                    all_hold &= holds;
                    checked.push((cond, current));
                }
            }
            if !all_hold {
                // Cassandra reads the static row for the conditional statements' static
                // writes alone (BatchStatement's updatesStaticRow).
                let writes_statics = parts
                    .iter()
                    .any(|(p, _)| p.condition.is_some() && lwt::touches_statics(p));
                return Ok(lwt::batch_not_applied(
                    &parts[0].0.table,
                    &checked,
                    writes_statics,
                    now,
                ));
            }
            for (_, current) in checked {
                stored.extend(current.stored);
            }
        }
        let mut m =
            Mutations::seen_by(self.writer_authorizations(parts.iter().map(|(p, _)| *p), opts)?);
        if conditional {
            m = m.conditional();
        }
        for (i, (p, v)) in parts.iter().enumerate() {
            let of = known.get(i).map(Vec::as_slice);
            self.mutations_in(p, of, v, now, Some(ts), &mut m)?;
            m.next_statement();
        }
        // Cassandra counts the partitions of the batches it runs without conditions, and warns
        // of (or refuses) them in this order: a logged batch on a table without
        // gc_grace_seconds, the size of one of several mutations, an unlogged one across many
        // partitions.
        let partitions = (!conditional).then(|| m.partitions());
        let mut client_warnings = Vec::new();
        let mut multi = false;
        if !conditional {
            if kind == BatchKind::Logged {
                client_warnings.extend(warnings::logged_batch_low_gc_grace(&parts));
            }
            let keyspace_of = |id: u32| {
                parts
                    .iter()
                    .find(|(p, _)| p.table.id == id)
                    .map(|(p, _)| p.table.keyspace.as_str())
            };
            // A mutation is a keyspace and key: at most as many as partitions.
            multi = partitions.is_some_and(|n| n > 1) && exec::mutation_count(&m, keyspace_of) > 1;
            if multi {
                let size = self.batch_data_size(&parts, &m, now, ts)?;
                let limits = *self
                    .batch_size_thresholds
                    .read()
                    .unwrap_or_else(|p| p.into_inner());
                client_warnings.extend(warnings::batch_size(&parts, &m, size, limits)?);
            }
            if kind != BatchKind::Logged {
                client_warnings.extend(warnings::unlogged_batch(&parts, &m));
            }
        }
        self.apply_holding(m, &held, &stored).map_err(|mut e| {
            // Cassandra runs a batch of one mutation as that mutation (a failure says
            // SIMPLE); of several, as a batch of its kind.
            if let EngineError::Db(proto::DbError::WriteFailure { write_type, .. }) = &mut e {
                if multi {
                    *write_type = match kind {
                        BatchKind::Logged => proto::error::WriteType::Batch,
                        BatchKind::Unlogged => proto::error::WriteType::UnloggedBatch,
                        BatchKind::Counter => proto::error::WriteType::Counter,
                    };
                }
            }
            e
        })?;
        if conditional {
            return Ok(applied_result(&parts[0].0.table, true));
        }
        if let Some(n) = partitions {
            self.batch_sizes.record(kind, n);
        }
        Ok(if client_warnings.is_empty() {
            Outcome::Void
        } else {
            Outcome::VoidWithWarnings(client_warnings)
        })
    }

    fn run(
        &self,
        parsed: &cql::ParsedStatement,
        compiled: &Compiled,
        values: &[Option<BoundValue>],
        opts: &QueryOptions,
        now: Now,
    ) -> Result<Outcome, EngineError> {
        if self.auth.authorizing() {
            self.auth
                .authorize(
                    opts.role.as_deref(),
                    &parsed.statement,
                    opts.keyspace.as_deref(),
                )
                .map_err(EngineError::Db)?;
        }
        let normalized = check_bound(compiled, values, false).map_err(EngineError::Db)?;
        let values = &exec::Bindings::new(normalized.as_deref().unwrap_or(values), now);
        match &compiled.kind {
            CompiledKind::Select(plan) => {
                let masked = self.masking_for(plan, &parsed.statement, opts)?;
                let plan = masked.as_deref().unwrap_or(plan);
                let auths = self.read_authorizations(&plan.table, opts)?;
                let rs = self.run_select_as(
                    self.storage.as_ref(),
                    plan,
                    values,
                    opts.page_size,
                    opts.paging_state.as_deref(),
                    now,
                    auths,
                    opts.result_head_room,
                )?;
                Ok(Outcome::Rows(rs))
            }
            CompiledKind::VirtualSelect(plan) => {
                let schema = self.schema.get();
                let store = if plan.table.keyspace == "system_auth" {
                    system::store_rows(&plan.table, self.auth.rows_of(&plan.table))?
                } else {
                    let live = self.live.read().unwrap_or_else(|p| p.into_inner()).clone();
                    let facts = virtual_tables::EngineFacts {
                        prepared_statements: self
                            .prepared
                            .read()
                            .unwrap_or_else(|p| p.into_inner())
                            .len(),
                        batch_sizes: &self.batch_sizes,
                    };
                    system::materialize(&plan.table, &schema, &self.node, live.as_deref(), &facts)?
                };
                let rs = self.run_select(
                    &store,
                    plan,
                    values,
                    opts.page_size,
                    opts.paging_state.as_deref(),
                    now,
                )?;
                Ok(Outcome::Rows(rs))
            }
            CompiledKind::Write(plan) => {
                self.check_label_write(plan, values, opts)?;
                if let Some(cond) = &plan.condition {
                    return self.conditional(plan, cond, values, now);
                }
                let mut m =
                    Mutations::seen_by(self.writer_authorizations(std::iter::once(plan), opts)?);
                self.mutations(plan, values, now, opts.timestamp, &mut m)?;
                self.apply(m)?;
                Ok(Outcome::Void)
            }
            CompiledKind::DeleteReturning(r) => self.delete_returning(r, values, now),
            CompiledKind::Batch(kind, plans) => {
                let parts: Vec<_> = plans.iter().map(|p| (p, values.values)).collect();
                self.run_batch(*kind, &parts, opts, now)
            }
            CompiledKind::Other => self.run_other(&parsed.statement, opts, now),
        }
    }

    fn run_other(
        &self,
        st: &cql::Statement,
        opts: &QueryOptions,
        now: Now,
    ) -> Result<Outcome, EngineError> {
        use cql::Statement as S;
        let ks = opts.keyspace.as_deref();
        match st {
            S::Use(name) => {
                if self.schema.get().keyspaces.contains_key(name) {
                    Ok(Outcome::SetKeyspace(name.clone()))
                } else {
                    Err(EngineError::invalid(format!(
                        "Keyspace '{name}' does not exist"
                    )))
                }
            }
            S::Describe(d) => {
                let schema = self.schema.get();
                let rows = system::describe(&schema, ks, &d.target, d.with_internals)?;
                let cols = system::describe_columns(&d.target);
                let mut data = Vec::new();
                for r in &rows {
                    for v in r.iter().take(cols.len()) {
                        data.extend_from_slice(&(v.len() as i32).to_be_bytes());
                        data.extend_from_slice(v.as_bytes());
                    }
                }
                Ok(Outcome::Rows(ResultSet {
                    columns: wire_columns(
                        "",
                        "",
                        cols.into_iter().map(|(n, t)| OutputColumn {
                            name: n.into(),
                            ty: t,
                        }),
                    ),
                    rows: rows.len(),
                    data,
                    head_room: 0,
                    paging_state: None,
                    warnings: Vec::new(),
                }))
            }
            S::ServiceLevel(sl) => self
                .service_level_statement(opts.role.as_deref(), sl)
                .map_err(EngineError::Db),
            st if st.is_role_statement() => {
                let out = self
                    .auth
                    .execute(opts.role.as_deref(), st, ks, &self.schema.get())
                    .map_err(EngineError::Db)?;
                // A dropped role's service level goes with it, as in ScyllaDB.
                if let S::DropRole { name, .. } = st {
                    self.service_levels
                        .role_dropped(name)
                        .map_err(EngineError::Db)?;
                }
                Ok(out)
            }
            _ => {
                self.authorize_owner_alter(st, ks, opts)?;
                let outcome = self.ddl(st, ks, now)?;
                if let Outcome::SchemaChange(change) = &outcome {
                    self.auth
                        .after_schema_change(opts.role.as_deref(), change)
                        .map_err(EngineError::Db)?;
                }
                Ok(outcome)
            }
        }
    }
}

fn applied_result(t: &TableDef, applied: bool) -> Outcome {
    let mut data = 1i32.to_be_bytes().to_vec();
    data.push(applied as u8);
    Outcome::Rows(ResultSet {
        head_room: 0,
        columns: wire_columns(
            &t.keyspace,
            &t.name,
            [OutputColumn {
                name: "[applied]".into(),
                ty: ColumnType::Boolean,
            }],
        ),
        rows: 1,
        data,
        paging_state: None,
        warnings: Vec::new(),
    })
}

/// The kind of a BATCH: the protocol's own.
pub use proto::request::BatchKind;

fn parse_error(e: cql::ParseError) -> DbError {
    match e.kind {
        cql::ParseErrorKind::Syntax | cql::ParseErrorKind::Failed => DbError::syntax(e.to_string()),
        cql::ParseErrorKind::Invalid => DbError::invalid(e.to_string()),
    }
}

pub(crate) fn statement_kind(st: &cql::Statement) -> String {
    let dbg = format!("{st:?}");
    dbg.split(['(', ' ', '{'])
        .next()
        .unwrap_or("statement")
        .to_string()
}

/// Checks the bound values against their markers' types. Returns them normalized as Cassandra
/// stores them (set elements and map keys sorted and deduplicated, see
/// [`collections::normalize`]) when any needed it.
fn check_bound(
    c: &Compiled,
    values: &[Option<BoundValue>],
    in_batch: bool,
) -> Result<Option<Vec<Option<BoundValue>>>, DbError> {
    if values.len() != c.binds.len() {
        // Cassandra's words: "There" in a BATCH (BatchMessage), "there" for an EXECUTE
        // (QueryProcessor.processPrepared); a QUERY is checked before, in `Engine::query`.
        let there = if in_batch { "There" } else { "there" };
        return Err(DbError::invalid(format!(
            "{there} were {} markers(?) in CQL but {} bound variables",
            c.binds.len(),
            values.len()
        )));
    }
    let mut normalized: Option<Vec<Option<BoundValue>>> = None;
    // A conditional write's `c IN ?` on a clustering column is refused when it runs ("IN on
    // the clustering key columns is not supported with conditional ..."), before Cassandra
    // reads the list: its elements are not checked here (generated --views seed 183).
    let refused_in: Vec<usize> = match &c.kind {
        CompiledKind::Write(p) if p.condition.is_some() => p
            .clustering
            .eq
            .iter()
            .filter_map(|kv| match kv {
                plan::KeyValues::InBind(i, _) => Some(*i),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    for (i, (spec, v)) in c.binds.iter().zip(values).enumerate() {
        if refused_in.contains(&i) {
            continue;
        }
        if let (Some(spec), Some(BoundValue::Bytes(b))) = (spec, v) {
            // Cassandra rethrows the type's own message unprefixed.
            let invalid = |e: DbError| DbError::invalid(e.message().to_string());
            match (&spec.ty, exec::decode_in_list(b)) {
                // The list of an `IN ?` marker (its receiver `in(c)`, as Cassandra names it)
                // may hold nulls: the relation or condition decides what a null means.
                // An empty element of a collection type is no collection there, as a
                // collection value of its own may be ("Not enough bytes to read a set";
                // generated --views seed 167: `ck0 IN ?` of a frozen set, the Python driver
                // sending a None element as empty).
                (ColumnType::List(elem), Some(items)) if spec.name.starts_with("in(") => {
                    let collection = match **elem {
                        ColumnType::List(_) => Some("list"),
                        ColumnType::Set(_) => Some("set"),
                        ColumnType::Map(..) => Some("map"),
                        _ => None,
                    };
                    for item in items.iter().flatten() {
                        if let (true, Some(what)) = (item.is_empty(), collection) {
                            return Err(DbError::invalid(format!(
                                "Not enough bytes to read a {what}"
                            )));
                        }
                        proto::value::validate_value(elem, item).map_err(invalid)?;
                    }
                }
                _ => proto::value::validate_value(&spec.ty, b).map_err(invalid)?,
            }
            if let Some(n) = collections::normalize(&spec.ty, b) {
                normalized.get_or_insert_with(|| values.to_vec())[i] =
                    Some(BoundValue::Bytes(n.into()));
            }
        }
    }
    Ok(normalized)
}

/// Values as the client bound them, by position or by name: the protocol's own.
pub use proto::request::Values;

/// The values of a request in marker order (named values matched to the markers' names).
pub(crate) fn bind_values(
    values: Values,
    parsed: &cql::ParsedStatement,
) -> Result<Vec<Option<BoundValue>>, DbError> {
    match values {
        Values::None => Ok(Vec::new()),
        Values::Positional(v) => Ok(v.into_iter().map(Some).collect()),
        Values::Named(named) => {
            let mut out = vec![None; parsed.bind_markers.len()];
            for (name, v) in named {
                let mut found = false;
                for (i, m) in parsed.bind_markers.iter().enumerate() {
                    if m.as_deref() == Some(name.as_str()) {
                        out[i] = Some(v.clone());
                        found = true;
                    }
                }
                if !found {
                    return Err(DbError::invalid(format!(
                        "Invalid unknown named value {name}"
                    )));
                }
            }
            if out.iter().any(|v| v.is_none()) {
                return Err(DbError::invalid("Not all named markers were bound"));
            }
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests;
