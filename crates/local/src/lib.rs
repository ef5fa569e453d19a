//! `local`: standalone mode, [`LocalBackend`], the embedded engine behind the front end's
//! [`Backend`] trait.
//!
//! **What it is:** the translation between the protocol and the engine. It opens the LSM store
//! and the engine under `data_dir`, turns decoded requests into engine calls and engine outcomes
//! into responses. The engine is synchronous: point operations run inline on the async worker
//! (they are memtable/page-cache work measured in microseconds); unprepared statements and
//! writes that must fsync (`commitlog_sync: batch`) move to the blocking pool so they never
//! stall a worker; scans (a SELECT over a token range) run in the scan lane (`lanes`): a
//! bounded pool of their own threads, each scan at a rows-per-second limit. Once a service
//! level exists (ScyllaDB's workload prioritization), the rest run on the executor threads of
//! `scheduler`, in the order of their roles' levels' shares, and a level's `timeout` answers
//! its requests (scans included) with Cassandra's read or write timeout at the deadline.
//!
//! With `authenticator: PasswordAuthenticator` it also answers the login (`login`: the SASL PLAIN
//! token, failed logins throttled per client address; the password check is `engine::auth`'s)
//! and passes each request's role to the engine, which checks its permissions.
//!
//! It also answers `peregrine nodetool` and adds the store's gauges to `/metrics` (`admin`), and
//! records each statement's latency by operation type and table in `server::metrics`.
//! `live` hands the engine what `system_views` shows of the process (connections, settings,
//! caches, latencies).
//!
//! **What it is not:** not the front end (framing, handshake, streams, events: `server`), and
//! not where CQL means anything (parsing, planning, execution, system tables: `engine`). One
//! module; its settings are keys of the one `server::Config`.
//!
//! # Invariants
//! - Each request's time is taken here (`Now::system()`) and passed to the engine.
//! - A request error is a `Response::Error` with Cassandra's code; the engine's errors are
//!   already `DbError`s.
//! - `shutdown` syncs the engine, so a clean stop loses no acknowledged write.

mod admin;
mod lanes;
mod live;
mod login;
mod result_head;
mod scheduler;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use engine::{BatchItem, BoundValue, Engine, NodeInfo, Now, Outcome, QueryOptions};
use proto::error::DbError;
use proto::frame::ProtocolVersion;
use proto::request::{self, QueryParams, Request};
use proto::response::{
    ColumnSpec, Prepared, PreparedMetadata, Response, ResultBody, Rows, RowsMetadata, SchemaChange,
    SchemaChangeTarget, SchemaChangeType,
};

use server::config::{
    Authenticator, Authorizer, CommitFailurePolicy, CommitlogSync, Config, DataFileCheck,
    DiskFailurePolicy, JournalRecovery,
};
use server::metrics::{self, Op};
use server::{Backend, ConnState, Reply, RequestFlags};

/// The embedded storage engine as a backend.
pub struct LocalBackend {
    engine: Arc<Engine>,
    /// The engine's store, for nodetool (flush, compact, snapshots) and `/metrics`.
    store: Arc<storage::LsmStorage>,
    sync_writes: bool,
    /// With PasswordAuthenticator: the failed-login throttle (and the sign that connections
    /// must log in).
    login: Option<login::Throttle>,
    /// Where scans run (`scan_*` keys).
    scans: lanes::ScanLane,
    /// The fair queue of service levels (`service_level_*` keys), used once one exists.
    levels: scheduler::Scheduler,
}

impl LocalBackend {
    /// Opens (or creates) the database under `config.data_dir`.
    pub fn open(config: &Config) -> anyhow::Result<Self> {
        std::fs::create_dir_all(&config.data_dir)?;
        let (filter, handle) = engine::purge_filter(Now::system);
        let sync = match config.commitlog_sync {
            CommitlogSync::Batch => storage::SyncMode::Batch,
            CommitlogSync::Periodic => storage::SyncMode::Periodic(config.commitlog_sync_period),
        };
        let vector_dir = config.data_dir.join(engine::VECTOR_INDEX_DIR);
        let encryption = match config.encryption_at_rest.key_file() {
            Some(path) => Some(storage::KeySet::load(path)?),
            None => None,
        };
        let store = storage::LsmStorage::open(
            &config.data_dir,
            storage::Options {
                sync,
                filter: Some(filter),
                merge: Some(Arc::new(engine::row::RowMerge)),
                cache_bytes: config.storage_cache_bytes,
                memtable_bytes: config.storage_memtable_bytes,
                compaction: storage::Compaction {
                    l0_threshold: config.storage_compaction_l0_threshold,
                    level_ratio: config.storage_compaction_level_ratio as f32,
                    table_bytes: config.storage_compaction_table_bytes,
                },
                memtable_partial_rows: config.storage_memtable_partial_rows,
                idle_compaction: match config.storage_idle_compaction_seconds {
                    0 => None,
                    seconds => Some(std::time::Duration::from_secs(seconds.into())),
                },
                worker_threads: None,
                background_nice: config.storage_background_nice,
                failure_policy: match config.disk_failure_policy {
                    DiskFailurePolicy::Stop => storage::FailurePolicy::Stop,
                    DiskFailurePolicy::Die => storage::FailurePolicy::Die,
                    DiskFailurePolicy::StopParanoid => storage::FailurePolicy::StopParanoid,
                    DiskFailurePolicy::BestEffort => storage::FailurePolicy::BestEffort,
                    DiskFailurePolicy::Ignore => storage::FailurePolicy::Ignore,
                },
                commit_failure_policy: match config.commit_failure_policy {
                    CommitFailurePolicy::Stop => storage::CommitFailurePolicy::Stop,
                    CommitFailurePolicy::StopCommit => storage::CommitFailurePolicy::StopCommit,
                    CommitFailurePolicy::Die => storage::CommitFailurePolicy::Die,
                    CommitFailurePolicy::Ignore => storage::CommitFailurePolicy::Ignore,
                },
                journal_recovery: match config.journal_recovery {
                    JournalRecovery::Refuse => storage::JournalRecovery::Refuse,
                    JournalRecovery::Truncate => storage::JournalRecovery::Truncate,
                },
                data_file_check: match config.data_file_check {
                    DataFileCheck::Full => storage::DataFileCheck::Full,
                    DataFileCheck::Off => storage::DataFileCheck::Off,
                },
                encryption,
            },
        )?;
        let rpc_address: IpAddr = if config.listen.ip().is_unspecified() {
            IpAddr::from([127, 0, 0, 1])
        } else {
            config.listen.ip()
        };
        let node = NodeInfo {
            cluster_name: config.cluster_name.clone(),
            datacenter: "datacenter1".into(),
            rack: "rack1".into(),
            rpc_address,
            rpc_port: config.listen.port(),
            host_id: [0; 16],
            release_version: "5.0.9".into(),
        };
        let store = Arc::new(store);
        // Saved graphs hold the vectors in clear, so with encryption at rest they are not
        // saved (rebuilt at every start), and any saved before it was enabled are removed.
        let vector_index_dir = if config.encryption_at_rest.key_file().is_some() {
            if vector_dir.exists() {
                std::fs::remove_dir_all(&vector_dir)?;
                tracing::info!(
                    "removed {}: vector index graphs are not saved with encryption at rest",
                    vector_dir.display()
                );
            }
            None
        } else {
            Some(vector_dir)
        };
        let engine = Engine::open_with_options(
            store.clone(),
            node,
            handle,
            engine::OpenOptions {
                vector_index_dir,
                vector_index_memory_bytes: usize::try_from(config.vector_index_memory_bytes)
                    .unwrap_or(usize::MAX),
            },
        )
        .map_err(|e| anyhow::anyhow!("opening the engine: {e}"))?;
        engine.set_materialized_views_enabled(config.materialized_views_enabled);
        engine.set_drop_compact_storage_enabled(config.drop_compact_storage_enabled);
        engine.set_dynamic_data_masking_enabled(config.dynamic_data_masking_enabled);
        engine.set_index_build_wait(config.index_build_wait);
        engine.set_batch_size_thresholds(engine::warnings::BatchSizeThresholds {
            warn_bytes: config.batch_size_warn_threshold,
            fail_bytes: config.batch_size_fail_threshold,
        });
        engine.set_tombstone_thresholds(engine::TombstoneThresholds {
            warn: config.tombstone_warn_threshold,
            fail: config.tombstone_failure_threshold,
        });
        let password = config.authenticator == Authenticator::PasswordAuthenticator;
        engine.auth().configure(engine::auth::AuthSettings {
            password_authenticator: password,
            cassandra_authorizer: config.authorizer == Authorizer::CassandraAuthorizer,
        });
        if password {
            setup_default_superuser(&engine, config)?;
        }
        engine.set_live_data(Arc::new(live::Live::new(config, store.clone())));
        let scans = lanes::ScanLane::new(config)
            .map_err(|e| anyhow::anyhow!("starting the scan threads: {e}"))?;
        let engine = Arc::new(engine);
        spawn_index_builder(&engine)
            .map_err(|e| anyhow::anyhow!("starting the index build thread: {e}"))?;
        spawn_vector_index_saver(&engine)
            .map_err(|e| anyhow::anyhow!("starting the vector index save thread: {e}"))?;
        Ok(LocalBackend {
            scans,
            levels: scheduler::Scheduler::new(
                config.service_level_slots,
                config.service_level_queue,
            ),
            engine,
            store,
            sync_writes: config.commitlog_sync == CommitlogSync::Batch,
            login: password.then(|| {
                login::Throttle::new(
                    config.auth_login_max_failures,
                    config.auth_login_failure_window,
                )
            }),
        })
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }
}

/// Environment variable that sets the default superuser's initial password.
const SUPERUSER_PASSWORD_ENV: &str = "PEREGRINE_DEFAULT_SUPERUSER_PASSWORD";

/// Creates `cassandra` on the first start with PasswordAuthenticator (Cassandra's default
/// superuser), with the configured password if one is given, and warns loudly while the
/// well-known default password still opens it.
fn setup_default_superuser(engine: &Engine, config: &Config) -> anyhow::Result<()> {
    let env = std::env::var(SUPERUSER_PASSWORD_ENV)
        .ok()
        .filter(|p| !p.is_empty());
    let chosen = env.or_else(|| config.auth_default_superuser_password.clone());
    let password = chosen
        .as_deref()
        .unwrap_or(engine::auth::DEFAULT_SUPERUSER_PASSWORD);
    let created = engine
        .auth()
        .setup_default_superuser(password)
        .map_err(|e| anyhow::anyhow!("creating the default superuser: {e}"))?;
    if created {
        tracing::info!(
            "Created default superuser role '{}'",
            engine::auth::DEFAULT_SUPERUSER
        );
    }
    if engine.auth().default_superuser_has_default_password() {
        tracing::warn!(
            "SECURITY: the superuser role 'cassandra' still has the default password 'cassandra': \
             anyone who reaches this port can log in as superuser. Change it now \
             (ALTER ROLE cassandra WITH PASSWORD = '...'), or create another superuser and drop \
             'cassandra'; set {SUPERUSER_PASSWORD_ENV} or `auth_default_superuser_password` \
             before the first start to never have it."
        );
    }
    Ok(())
}

/// The keyspace a request runs in: the one it `named` (v5), else its connection's (USE).
fn request_keyspace(conn: &ConnState, named: Option<&str>) -> Option<Arc<str>> {
    named.map(Arc::from).or_else(|| conn.keyspace())
}

/// The request's options, for the logged-in `role` (`None`: logins are off).
fn options(conn: &ConnState, p: &QueryParams, role: Option<Arc<str>>) -> QueryOptions {
    QueryOptions {
        role,
        keyspace: request_keyspace(conn, p.keyspace.as_deref()),
        page_size: p.page_size,
        paging_state: p.paging_state.as_ref().map(|b| b.to_vec()),
        timestamp: p.default_timestamp,
        authorizations: None,
        result_head_room: 0,
    }
}

/// The options of an EXECUTE: `options`, with the authorizations its reads use and room for
/// the frame header in front of an encoded result (`RESULT_HEAD_ROOM`).
fn execute_options(
    conn: &ConnState,
    p: &QueryParams,
    role: Option<Arc<str>>,
    auths: Option<engine::visibility::Authorizations>,
) -> QueryOptions {
    QueryOptions {
        authorizations: auths,
        result_head_room: RESULT_HEAD_ROOM,
        ..options(conn, p, role)
    }
}

/// What a request's custom payload asks for: a scan rate (`lanes`) and the visibility
/// authorizations to read with.
type PayloadAsks = (Option<u64>, Option<engine::visibility::Authorizations>);

/// Rows an indexed lookup run on the request's thread may read (`lookup_here`) before it is
/// dropped and run again in the scan lane, index entries counted: about 32 rows and their
/// entries, well under 0.1 ms of work. A 100-row lookup (256) ran at 1.16x the lookups per
/// CPU second but held its connection's other requests long enough to cost 13% of the
/// throughput and quadruple the p99 (bench/results/2026-12-01/indexed-s34, `ab-*`).
const LOOKUP_HERE_ROWS: u64 = 64;

/// What `handle_here` learned of a request it hands on ([`Backend::Carry`]).
#[derive(Default)]
pub struct Tried {
    /// It is an indexed lookup that `lookup_here` tried (it read past [`LOOKUP_HERE_ROWS`]) or
    /// declined: `handle` sends it to the scan lane without asking again.
    lookup: bool,
}

/// The `peregrine-authorizations` payload (docs/visibility.md): a comma-separated list of
/// authorizations, a subset of the role's, that the request's reads use instead of all of them.
fn requested_authorizations(
    payload: &[(String, Option<Bytes>)],
) -> Result<Option<engine::visibility::Authorizations>, DbError> {
    let key = engine::labels::AUTHORIZATIONS_PAYLOAD_KEY;
    let Some((_, value)) = payload.iter().find(|(k, _)| k == key) else {
        return Ok(None);
    };
    let Some(value) = value else {
        return Err(DbError::invalid(format!(
            "Invalid null value for custom payload key '{key}': expected a comma-separated list of authorizations"
        )));
    };
    engine::visibility::parse_authorization_list(value)
        .map(Some)
        .map_err(|e| DbError::invalid(format!("Invalid custom payload key '{key}': {e}")))
}

/// Column specs of a result. When the client skips metadata only the count is sent, so the
/// names are left empty rather than copied for every response.
fn outcome(o: Result<Outcome, DbError>, skip_metadata: bool, version: ProtocolVersion) -> Response {
    match o {
        Err(e) => Response::Error(e),
        Ok(Outcome::Void | Outcome::VoidWithWarnings(_)) => Response::Result(ResultBody::Void),
        Ok(Outcome::SetKeyspace(ks)) => Response::Result(ResultBody::SetKeyspace(ks)),
        Ok(Outcome::Rows(rs)) => rows_response(rs, skip_metadata, None, version),
        Ok(Outcome::SchemaChange(c)) => Response::Result(ResultBody::SchemaChange(c)),
    }
}

/// What a point read leaves free in front of its rows (`QueryOptions::result_head_room`): room
/// for a RESULT head with the metadata of a few dozen columns.
const RESULT_HEAD_ROOM: usize = 512;

/// The RESULT of `rs` for protocol `version`: the metadata skipped if asked
/// (`skip_metadata`) unless it changed (v5 `new_metadata_id`). Rows read with head room in
/// front ([`ResultSet::head_room`]) get the result's head written there, when it fits, and
/// go out as the body they now are (`ResultBody::Encoded`): neither copied into a new
/// buffer behind the head nor encoded again (and the head itself is kept per statement:
/// `result_head`).
fn rows_response(
    rs: engine::ResultSet,
    skip_metadata: bool,
    new_metadata_id: Option<Bytes>,
    version: ProtocolVersion,
) -> Response {
    let metadata = RowsMetadata {
        // With `no_metadata` only their count is sent.
        no_metadata: skip_metadata && new_metadata_id.is_none(),
        columns: rs.columns,
        paging_state: rs.paging_state.map(Bytes::from),
        new_metadata_id,
    };
    let rows_count = i32::try_from(rs.rows).unwrap_or(i32::MAX);
    let (mut data, room) = (rs.data, rs.head_room);
    if room > 0 {
        if let Some(start) = result_head::place(&metadata, version, rows_count, &mut data, room) {
            let mut body = Bytes::from(data);
            body.advance(start);
            return Response::Result(ResultBody::Encoded(body));
        }
    }
    let mut data = Bytes::from(std::mem::take(&mut data));
    data.advance(room);
    Response::Result(ResultBody::Rows(Rows {
        metadata,
        rows_count,
        data,
    }))
}

fn prepared_response(p: &engine::Prepared, v5: bool) -> Response {
    let plan = p.snapshot();
    let binds = plan.binds();
    let columns = binds
        .iter()
        .map(|b| ColumnSpec {
            keyspace: b.keyspace.clone(),
            table: b.table.clone(),
            name: b.name.clone(),
            ty: b.ty.clone(),
        })
        .collect();
    let result_metadata = match plan.result_columns() {
        Some(columns) => RowsMetadata {
            columns,
            ..RowsMetadata::default()
        },
        None => RowsMetadata {
            no_metadata: true,
            ..RowsMetadata::default()
        },
    };
    Response::Result(ResultBody::Prepared(Prepared {
        id: Bytes::copy_from_slice(&p.id),
        result_metadata_id: v5.then(|| Bytes::copy_from_slice(&plan.result_metadata_id())),
        bind_metadata: PreparedMetadata {
            columns,
            pk_indexes: plan.pk_indexes().to_vec(),
        },
        result_metadata,
    }))
}

impl LocalBackend {
    /// The service level a request of `role` runs at: `None` while no service level exists
    /// (one atomic load, no lock, no allocation).
    fn level_of(&self, role: Option<&str>) -> Option<engine::service_levels::Level> {
        self.engine.service_level_of(role)
    }

    /// What every answer gets before it goes: the view warning, and the consistency the
    /// request asked for in a read or write failure, as Cassandra's names it (the engine does
    /// not know it).
    fn finished(&self, mut reply: Reply, asked: Option<proto::Consistency>) -> Reply {
        if self.created_a_view(&reply.response) {
            reply.extras.warnings.push(VIEW_WARNING.into());
        }
        if let (
            Response::Error(
                DbError::ReadFailure { consistency, .. }
                | DbError::WriteFailure { consistency, .. },
            ),
            Some(asked),
        ) = (&mut reply.response, asked)
        {
            *consistency = asked;
        }
        reply
    }

    /// Whether an EXECUTE of `prep` (its current `plan`) by `role` may block its thread: a
    /// multi-partition read, a write that fsyncs (`commitlog_sync: batch`), a role statement
    /// (bcrypt: tens of milliseconds) or a service level statement.
    fn is_heavy(&self, prep: &engine::Prepared, plan: &engine::PlanSnapshot) -> bool {
        if plan.is_select() {
            !plan.is_single_partition()
        } else {
            self.sync_writes
                || prep.statement.statement.is_role_statement()
                || prep.statement.statement.is_service_level_statement()
        }
    }

    /// Whether an EXECUTE runs on the calling thread: nothing to wait for (no scan lane,
    /// service level or blocking work).
    fn runs_here(
        &self,
        prep: &engine::Prepared,
        plan: &engine::PlanSnapshot,
        role: Option<&str>,
    ) -> bool {
        !plan.is_scan() && !self.is_heavy(prep, plan) && self.level_of(role).is_none()
    }

    /// Runs an EXECUTE that `runs_here` on this thread.
    fn execute_here(
        &self,
        conn: &ConnState,
        x: request::Execute,
        prep: Arc<engine::Prepared>,
        mut plan: engine::PlanSnapshot,
        role: Option<Arc<str>>,
        auths: Option<engine::visibility::Authorizations>,
    ) -> Reply {
        let opts = execute_options(conn, &x.params, role, auths);
        let started = Instant::now();
        let r =
            self.engine
                .execute_prepared(&prep, &mut plan, x.params.values, &opts, Now::system());
        prepared_reply(
            conn,
            &x.result_metadata_id,
            x.params.skip_metadata,
            &prep,
            &plan,
            r,
            opts.keyspace.as_deref(),
            started,
        )
    }

    /// An indexed read by one value ([`engine::PlanSnapshot::is_index_lookup`]) run on this
    /// thread when no service level or scan rate governs it, within [`LOOKUP_HERE_ROWS`] rows
    /// read: it usually reads a few rows, and the hand-off to the scan lane and back costs
    /// more than that (bench/results/2026-12-01/indexed-s34). `None` when it may not run here,
    /// when its statement's lookups went over the budget lately (`engine::lane::LookupHint`),
    /// or when it read more (its work is dropped): it then runs in the scan lane.
    fn lookup_here(
        &self,
        conn: &ConnState,
        x: &request::Execute,
        prep: &Arc<engine::Prepared>,
        plan: &engine::PlanSnapshot,
        role: Option<Arc<str>>,
        (scan_rate, auths): PayloadAsks,
    ) -> Option<Reply> {
        if !plan.is_index_lookup()
            || self.level_of(role.as_deref()).is_some()
            || self.scans.rate(role.as_deref(), scan_rate) != 0
            || !prep.lookup_hint.try_here()
        {
            return None;
        }
        let opts = execute_options(conn, &x.params, role, auths);
        let started = Instant::now();
        let mut plan = plan.clone();
        let Some(r) = engine::lane::within_budget(LOOKUP_HERE_ROWS, || {
            let values = x.params.values.clone();
            self.engine
                .execute_prepared(prep, &mut plan, values, &opts, Now::system())
        }) else {
            prep.lookup_hint.went_over();
            return None;
        };
        Some(prepared_reply(
            conn,
            &x.result_metadata_id,
            x.params.skip_metadata,
            prep,
            &plan,
            r,
            opts.keyspace.as_deref(),
            started,
        ))
    }

    /// Runs `f` on the service level executor when `level` is given (`scheduler`), else
    /// inline, or on the blocking pool when it may fsync or scan at length.
    async fn run<T: Send + 'static>(
        &self,
        level: Option<engine::service_levels::Level>,
        blocking: bool,
        f: impl FnOnce(&Engine) -> T + Send + 'static,
    ) -> Result<T, DbError> {
        if let Some(level) = level {
            return self.levels.run(level, self.engine.clone(), f).await;
        }
        if blocking {
            let engine = self.engine.clone();
            tokio::task::spawn_blocking(move || f(&engine))
                .await
                .map_err(|e| DbError::server(format!("request task failed: {e}")))
        } else {
            Ok(f(&self.engine))
        }
    }
}

impl Backend for LocalBackend {
    type Carry = Tried;

    /// Tracing is not supported here and no envelope extras are sent; of the custom payload
    /// only `peregrine-scan-rate` (`lanes`) and `peregrine-authorizations` (visibility labels,
    /// docs/visibility.md) are read.
    async fn handle(
        &self,
        conn: &ConnState,
        req: Request,
        tried: Tried,
        flags: RequestFlags,
    ) -> Reply {
        let scan_rate = match lanes::requested_rate(&flags.custom_payload) {
            Ok(r) => r,
            Err(e) => return Reply::from(Response::Error(e)),
        };
        let auths = match requested_authorizations(&flags.custom_payload) {
            Ok(a) => a,
            Err(e) => return Reply::from(Response::Error(e)),
        };
        let consistency = match &req {
            Request::Query(q) => Some(q.params.consistency),
            Request::Execute(x) => Some(x.params.consistency),
            Request::Batch(b) => Some(b.consistency),
            _ => None,
        };
        let reply = self.respond(conn, req, (scan_rate, auths), tried).await;
        self.finished(reply, consistency)
    }

    /// A prepared statement's EXECUTE that waits for nothing (no scan lane, service level,
    /// blocking work or payload to read) runs here, on the connection's reader: no future.
    /// The rest, and an unknown id (answered Unprepared there), go to `handle`.
    #[allow(clippy::result_large_err)]
    fn handle_here(
        &self,
        conn: &ConnState,
        req: Request,
        _: Tried,
        flags: &RequestFlags,
    ) -> Result<Reply, (Request, Tried)> {
        let x = match req {
            Request::Execute(x) if flags.custom_payload.is_empty() => x,
            req => return Err((req, Tried::default())),
        };
        let role = match self.login {
            None => None,
            Some(_) => match conn.role() {
                Some(role) => Some(role),
                // Refused by `respond` before the SASL exchange succeeded.
                None => return Err((Request::Execute(x), Tried::default())),
            },
        };
        let Some(prep) = self.engine.prepared(&x.id) else {
            return Err((Request::Execute(x), Tried::default()));
        };
        let plan = prep.snapshot();
        if !self.runs_here(&prep, &plan, role.as_deref()) {
            if plan.is_index_lookup() {
                let consistency = x.params.consistency;
                return match self.lookup_here(conn, &x, &prep, &plan, role, (None, None)) {
                    Some(reply) => Ok(self.finished(reply, Some(consistency))),
                    None => Err((Request::Execute(x), Tried { lookup: true })),
                };
            }
            return Err((Request::Execute(x), Tried::default()));
        }
        let consistency = x.params.consistency;
        let reply = self.execute_here(conn, x, prep, plan, role, None);
        Ok(self.finished(reply, Some(consistency)))
    }

    fn authenticator(&self) -> Option<String> {
        self.login
            .as_ref()
            .map(|_| login::PASSWORD_AUTHENTICATOR.to_string())
    }

    fn unavailable(&self) -> Option<String> {
        self.store.down()
    }

    fn audit_prepared(&self, id: &[u8]) -> Option<String> {
        self.engine.prepared(id).map(|p| p.query.clone())
    }

    async fn shutdown(&self) {
        let engine = self.engine.clone();
        let _ = tokio::task::spawn_blocking(move || {
            // Saved graphs let the next start skip rebuilding vector indexes.
            if let Err(e) = engine.close_vector_indexes() {
                tracing::warn!("saving vector index graphs at shutdown: {e}");
            }
            engine.sync()
        })
        .await;
    }

    async fn admin(&self, command: String, args: serde_json::Value) -> server::admin::AdminResult {
        self.admin_command(&command, args).await
    }

    fn export_metrics(&self, out: &mut server::metrics::Exposition) {
        self.export_storage(out);
        self.scans.export(out);
        self.levels.export(out);
    }
}

/// The thread that finishes the index builds CREATE INDEX left to the background (an index on
/// a table that takes more than a moment to scan), and sweeps the stale index entries writes
/// leave once they are about as many as live ones (`Engine::sweep_index_entries`). It holds
/// the engine only while it builds or sweeps, and ends once the engine is gone.
fn spawn_index_builder(engine: &Arc<Engine>) -> std::io::Result<()> {
    let builds = engine.index_builds();
    let engine = Arc::downgrade(engine);
    std::thread::Builder::new()
        .name("index-build".into())
        .spawn(move || loop {
            let wanted = builds.wait(Duration::from_secs(1));
            let Some(engine) = engine.upgrade() else {
                return;
            };
            if wanted {
                if let Err(e) = engine.finish_index_builds() {
                    tracing::error!("building an index in the background: {e}");
                }
            }
            if builds.sweep_due() {
                match engine.sweep_index_entries() {
                    Ok(s) => tracing::debug!(
                        "index sweep: {} entries read, {} stale removed",
                        s.entries,
                        s.removed
                    ),
                    Err(e) => tracing::error!("sweeping stale index entries: {e}"),
                }
            }
        })?;
    Ok(())
}

/// The thread that saves vector index graphs in the background, off the write path, once
/// enough of their rows changed (`Engine::save_vector_indexes`), so that a restart after a
/// kill -9 re-indexes only the rows written since. It ends once the engine is gone.
fn spawn_vector_index_saver(engine: &Arc<Engine>) -> std::io::Result<()> {
    let engine = Arc::downgrade(engine);
    std::thread::Builder::new()
        .name("vector-index-save".into())
        .spawn(move || loop {
            std::thread::sleep(Duration::from_secs(5));
            let Some(engine) = engine.upgrade() else {
                return;
            };
            if let Err(e) = engine.save_vector_indexes(false) {
                tracing::warn!("saving a vector index graph: {e}");
            }
        })?;
    Ok(())
}

/// The warning Cassandra sends with every CREATE MATERIALIZED VIEW.
const VIEW_WARNING: &str =
    "Materialized views are experimental and are not recommended for production use.";

impl LocalBackend {
    /// Whether `r` answers a CREATE MATERIALIZED VIEW.
    fn created_a_view(&self, r: &Response) -> bool {
        let Response::Result(ResultBody::SchemaChange(SchemaChange {
            change: SchemaChangeType::Created,
            target: SchemaChangeTarget::Table { keyspace, name },
        })) = r
        else {
            return false;
        };
        self.engine
            .schema()
            .table(keyspace, name)
            .is_some_and(|t| t.view.is_some())
    }

    /// Runs a request, after the SASL exchange when logins are on.
    async fn respond(
        &self,
        conn: &ConnState,
        req: Request,
        asks: PayloadAsks,
        tried: Tried,
    ) -> Reply {
        if self.login.is_none() {
            return self.execute(conn, req, None, asks, tried).await;
        }
        if let Request::AuthResponse(token) = req {
            return Reply::from(self.login(conn, token).await);
        }
        match conn.role() {
            Some(role) => self.execute(conn, req, Some(role), asks, tried).await,
            // Cassandra's answer to anything but the SASL exchange before it succeeded.
            None => Reply::from(Response::Error(DbError::protocol(format!(
                "Unexpected message {}, expecting SASL_RESPONSE",
                request_name(&req)
            )))),
        }
    }

    /// One AUTH_RESPONSE: SASL PLAIN checked against the roles (bcrypt on the blocking pool,
    /// the first time for a given password), failures counted per client address.
    async fn login(&self, conn: &ConnState, token: Option<Bytes>) -> Response {
        let Some(throttle) = &self.login else {
            return Response::Error(DbError::protocol(
                "Unexpected AUTH_RESPONSE: authentication is not enabled",
            ));
        };
        let ip = conn.client_addr().ip();
        if let Err(e) = throttle.check(ip, Instant::now()) {
            tracing::warn!("login refused from {ip}: {}", e.message());
            return Response::Error(e);
        }
        let (user, password) = match login::decode_plain(token.as_deref()) {
            Ok(c) => c,
            Err(e) => {
                throttle.failed(ip, Instant::now());
                return Response::Error(e);
            }
        };
        let engine = self.engine.clone();
        let name = user.clone();
        let verdict =
            tokio::task::spawn_blocking(move || engine.auth().authenticate(&name, &password))
                .await
                .map_err(|e| DbError::server(format!("login task failed: {e}")));
        match verdict {
            Ok(Ok(())) => {
                throttle.succeeded(ip);
                conn.set_role(&user);
                Response::AuthSuccess(None)
            }
            Ok(Err(e)) => {
                throttle.failed(ip, Instant::now());
                tracing::info!("failed login for role {user:?} from {ip}");
                Response::Error(e.into_db())
            }
            Err(e) => Response::Error(e),
        }
    }

    /// A QUERY (an unprepared statement) of a connection logged in as `role`.
    async fn query(
        &self,
        conn: &ConnState,
        q: proto::request::Query,
        role: Option<Arc<str>>,
        scan_rate: Option<u64>,
        auths: Option<engine::visibility::Authorizations>,
    ) -> Reply {
        let mut opts = options(conn, &q.params, role);
        opts.authorizations = auths;
        let vals = q.params.values;
        let now = Now::system();
        let started = Instant::now();
        // Parsing and planning are cheap; the plan tells a scan from the rest.
        let planned = match self.engine.plan_query(&q.query, vals, &opts, now) {
            Ok(p) => p,
            Err(e) => {
                let r = Err(e);
                self.observe_query(&r, started);
                return outcome(r, false, conn.version()).into();
            }
        };
        let warning = planned.warning();
        let level = self.level_of(opts.role.as_deref());
        let limit = level.as_ref().and_then(|l| l.timeout);
        let kind = timed(planned.is_select());
        // Unprepared statements are not the hot path; they may fsync.
        let work = async {
            if planned.is_scan() {
                let rate = self.scans.rate(opts.role.as_deref(), scan_rate);
                self.scans
                    .run(self.engine.clone(), rate, move |e| {
                        e.run_planned(&planned, &opts, now)
                    })
                    .await
            } else {
                // Scans have their own lane; the rest run at their service level.
                self.run(level, true, move |e| e.run_planned(&planned, &opts, now))
                    .await
            }
        };
        let r = scheduler::within(limit, started, kind, q.params.consistency, work)
            .await
            .and_then(|x| x);
        self.observe_query(&r, started);
        let raised = run_warnings(&r);
        with_warning(outcome(r, false, conn.version()), warning, raised)
    }

    /// Runs a request of a connection logged in as `role` (`None`: logins are off);
    /// `asks`: the rows-per-second limit its payload asks for (if it is a scan) and the
    /// visibility authorizations it narrows its reads to.
    async fn execute(
        &self,
        conn: &ConnState,
        req: Request,
        role: Option<Arc<str>>,
        asks: PayloadAsks,
        tried: Tried,
    ) -> Reply {
        let (scan_rate, auths) = asks;
        let v5 = conn.version() == proto::frame::ProtocolVersion::V5;
        match req {
            // Boxed: planning an unprepared statement keeps a large plan in its future, which
            // would otherwise size (and be copied with) every request's future, EXECUTE's too.
            Request::Query(q) => Box::pin(self.query(conn, q, role, scan_rate, auths)).await,
            Request::Prepare(p) => {
                let ks = request_keyspace(conn, p.keyspace.as_deref());
                match self.engine.prepare(&p.query, ks.as_deref(), Now::system()) {
                    Ok(prep) => prepared_response(&prep, v5),
                    Err(e) => Response::Error(e),
                }
                .into()
            }
            Request::Execute(x) => {
                let Some(prep) = self.engine.prepared(&x.id) else {
                    return Response::Error(DbError::unprepared(x.id)).into();
                };
                // One look at the plan answers every question below and is the plan the
                // execution runs (it follows a plan the execution had to rebuild).
                let mut plan = prep.snapshot();
                if self.runs_here(&prep, &plan, role.as_deref()) {
                    // `handle_here` runs these, but for a request with a custom payload, or one of a
                    // pipelined batch left to a task another worker may take.
                    return self.execute_here(conn, x, prep, plan, role, auths);
                }
                if !tried.lookup && plan.is_index_lookup() {
                    let asks = (scan_rate, auths.clone());
                    if let Some(reply) =
                        self.lookup_here(conn, &x, &prep, &plan, role.clone(), asks)
                    {
                        return reply;
                    }
                }
                let opts = execute_options(conn, &x.params, role, auths);
                let vals = x.params.values;
                let now = Now::system();
                let heavy = self.is_heavy(&prep, &plan);
                let p = prep.clone();
                let started = Instant::now();
                let ks = opts.keyspace.clone();
                let rate = plan
                    .is_scan()
                    .then(|| self.scans.rate(opts.role.as_deref(), scan_rate));
                // Scans run in their lane, the rest at their service level; both within its
                // timeout.
                let level = self.level_of(opts.role.as_deref());
                let limit = level.as_ref().and_then(|l| l.timeout);
                let kind = timed(plan.is_select());
                let run = move |e: &Engine| {
                    let r = e.execute_prepared(&p, &mut plan, vals, &opts, now);
                    (r, plan)
                };
                let work = async {
                    if let Some(rate) = rate {
                        self.scans.run(self.engine.clone(), rate, run).await
                    } else {
                        self.run(level, heavy, run).await
                    }
                };
                // Boxed: this future then holds no scheduler state (every request's future is
                // built and moved whole a few times).
                let (r, plan) = Box::pin(scheduler::within(
                    limit,
                    started,
                    kind,
                    x.params.consistency,
                    work,
                ))
                .await
                // A task that died hands no plan back: its error is the answer.
                .unwrap_or_else(|e| (Err(e), prep.snapshot()));
                prepared_reply(
                    conn,
                    &x.result_metadata_id,
                    x.params.skip_metadata,
                    &prep,
                    &plan,
                    r,
                    ks.as_deref(),
                    started,
                )
            }
            Request::Batch(b) => {
                let opts = QueryOptions {
                    keyspace: request_keyspace(conn, b.keyspace.as_deref()),
                    page_size: None,
                    paging_state: None,
                    timestamp: b.default_timestamp,
                    role,
                    authorizations: auths,
                    result_head_room: 0,
                };
                let mut items = Vec::with_capacity(b.statements.len());
                for s in b.statements {
                    items.push(match s {
                        request::BatchStatement::Query { query, values: v } => {
                            BatchItem::Query(query, bind_all(v))
                        }
                        request::BatchStatement::Prepared { id, values: v } => {
                            let Ok(id16) = <[u8; 16]>::try_from(&id[..]) else {
                                return Response::Error(DbError::unprepared(id)).into();
                            };
                            if self.engine.prepared(&id16).is_none() {
                                return Response::Error(DbError::unprepared(id)).into();
                            }
                            BatchItem::Prepared(id16, bind_all(v))
                        }
                    });
                }
                let level = self.level_of(opts.role.as_deref());
                let limit = level.as_ref().and_then(|l| l.timeout);
                let now = Now::system();
                let kind = b.kind;
                let started = Instant::now();
                let timed = scheduler::Timed::Write(match kind {
                    request::BatchKind::Logged => proto::error::WriteType::Batch,
                    request::BatchKind::Unlogged => proto::error::WriteType::UnloggedBatch,
                    request::BatchKind::Counter => proto::error::WriteType::Counter,
                });
                let work = self.run(level, self.sync_writes, move |e| {
                    e.batch(kind, items, &opts, now)
                });
                // Boxed, as the scheduler's wait in EXECUTE (see there).
                let r = Box::pin(scheduler::within(
                    limit,
                    started,
                    timed,
                    b.consistency,
                    work,
                ))
                .await
                .and_then(|x| x);
                metrics::global().operation(Op::Batch, None, started.elapsed());
                let raised = run_warnings(&r);
                with_warning(outcome(r, false, conn.version()), None, raised)
            }
            Request::AuthResponse(_) => Response::Error(DbError::protocol(
                "Unexpected AUTH_RESPONSE: authentication is not enabled",
            ))
            .into(),
            Request::Startup(_) | Request::Options | Request::Register(_) => Response::Error(
                DbError::protocol("Unexpected message: handled by the connection, not the backend"),
            )
            .into(),
        }
    }
}

/// What a statement that times out is answered with: a read's or a simple write's timeout.
fn timed(is_select: bool) -> scheduler::Timed {
    if is_select {
        scheduler::Timed::Read
    } else {
        scheduler::Timed::Write(proto::error::WriteType::Simple)
    }
}

/// The answer to an EXECUTE of `prep` that ran `plan` with result `r`, its latency recorded.
/// `asked_metadata_id`: the v5 client's result metadata id, told when stale (the result's own
/// columns are the plan's current ones).
#[allow(clippy::too_many_arguments)]
fn prepared_reply(
    conn: &ConnState,
    asked_metadata_id: &Option<Bytes>,
    skip_metadata: bool,
    prep: &engine::Prepared,
    plan: &engine::PlanSnapshot,
    r: Result<Outcome, DbError>,
    keyspace: Option<&str>,
    started: Instant,
) -> Reply {
    observe_prepared(prep, plan, keyspace, started);
    let raised = run_warnings(&r);
    let resp = match r {
        Ok(Outcome::Rows(rs)) => {
            let stale = (conn.version() == proto::frame::ProtocolVersion::V5)
                .then(|| plan.result_metadata_id())
                .filter(|current| asked_metadata_id.as_deref() != Some(&current[..]))
                .map(|current| Bytes::copy_from_slice(&current));
            rows_response(rs, skip_metadata, stale, conn.version())
        }
        r => outcome(r, skip_metadata, conn.version()),
    };
    with_warning(resp, plan.warning(), raised)
}

/// The reply with Cassandra's client warnings (the WARNING flag; drivers log them): the plan's
/// `warning` for a result of rows or a schema change, e.g. an aggregate over the whole table or
/// the creation of a vector index, and the one the run `raised`, e.g. an unlogged batch across
/// many partitions (`engine::warnings`). Errors and void results (an IF NOT EXISTS that changed
/// nothing) carry no plan warning.
fn with_warning(response: Response, warning: Option<&'static str>, raised: Vec<String>) -> Reply {
    let mut reply = Reply::from(response);
    if let (
        Some(w),
        Response::Result(
            ResultBody::Rows(_) | ResultBody::Encoded(_) | ResultBody::SchemaChange(_),
        ),
    ) = (warning, &reply.response)
    {
        reply.extras.warnings.push(w.into());
    }
    reply.extras.warnings.extend(raised);
    reply
}

/// The client warnings a run raised itself, in Cassandra's order (see
/// [`Outcome::VoidWithWarnings`]).
fn run_warnings(r: &Result<Outcome, DbError>) -> Vec<String> {
    match r {
        Ok(Outcome::VoidWithWarnings(w)) => w.clone(),
        Ok(Outcome::Rows(rs)) => rs.warnings.clone(),
        _ => Vec::new(),
    }
}

impl LocalBackend {
    /// Records an unprepared statement by what it answered (the text is parsed by the
    /// engine, so the table is known only for rows).
    fn observe_query(&self, r: &Result<Outcome, DbError>, started: Instant) {
        let m = metrics::global();
        let d = started.elapsed();
        match r {
            // Every column names the result's keyspace and table.
            Ok(Outcome::Rows(rs)) if rs.columns.first().is_some_and(|c| !c.table.is_empty()) => {
                let c = &rs.columns[0];
                m.table_operation(Op::Read, &c.keyspace, &c.table, d);
            }
            Ok(Outcome::Rows(_)) => m.operation(Op::Read, None, d),
            Ok(Outcome::Void) => m.operation(Op::Write, None, d),
            Ok(Outcome::SchemaChange(c)) => {
                m.operation(Op::Other, None, d);
                if c.change == SchemaChangeType::Dropped {
                    admin::forget_dropped_tables(&self.engine);
                }
            }
            _ => m.operation(Op::Other, None, d),
        }
    }
}

/// Records a prepared statement's latency by operation type and table.
fn observe_prepared(
    prep: &engine::Prepared,
    plan: &engine::PlanSnapshot,
    keyspace: Option<&str>,
    started: Instant,
) {
    let statement = &prep.statement.statement;
    let op = if plan.is_select() {
        if plan.is_single_partition() {
            Op::Read
        } else {
            Op::RangeRead
        }
    } else if statement.is_role_statement() {
        Op::Other
    } else {
        Op::Write
    };
    let m = metrics::global();
    let d = started.elapsed();
    let table = statement.table().and_then(|q| {
        let ks = q
            .keyspace
            .as_deref()
            .or(prep.keyspace.as_deref())
            .or(keyspace)?;
        Some((ks, q.name.as_str()))
    });
    match table {
        Some((ks, name)) => m.table_operation(op, ks, name, d),
        None => m.operation(op, None, d),
    }
}

/// Cassandra's message type name of a request, for protocol errors.
fn request_name(req: &Request) -> &'static str {
    match req {
        Request::Startup(_) => "STARTUP",
        Request::Options => "OPTIONS",
        Request::Query(_) => "QUERY",
        Request::Prepare(_) => "PREPARE",
        Request::Execute(_) => "EXECUTE",
        Request::Register(_) => "REGISTER",
        Request::Batch(_) => "BATCH",
        Request::AuthResponse(_) => "AUTH_RESPONSE",
    }
}

fn bind_all(v: request::Values) -> Vec<Option<BoundValue>> {
    match v {
        request::Values::None => Vec::new(),
        request::Values::Positional(v) => v.into_iter().map(Some).collect(),
        // Batches carry no names for values (spec section 4.1.7).
        request::Values::Named(v) => v.into_iter().map(|(_, x)| Some(x)).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use proto::types::ColumnType;

    fn columns(n: usize, name_len: usize) -> Arc<[ColumnSpec]> {
        (0..n)
            .map(|i| ColumnSpec {
                keyspace: "ks".into(),
                table: "t".into(),
                name: format!("{i:0name_len$}"),
                ty: if i % 2 == 0 {
                    ColumnType::Varchar
                } else {
                    ColumnType::List(Box::new(ColumnType::Smallint))
                },
            })
            .collect()
    }

    fn body(resp: &Response, version: ProtocolVersion) -> BytesMut {
        let mut out = BytesMut::new();
        resp.encode_body(version, &mut out);
        out
    }

    /// A result read with head room answers the body the same result read without it
    /// answers, whatever its metadata (skipped or not, changed, a paging state, too large
    /// for the room) and protocol version.
    #[test]
    fn rows_in_place_encode_the_bytes_of_rows() {
        let rows: Vec<u8> = [&3i32.to_be_bytes()[..], b"abc", &(-1i32).to_be_bytes()].concat();
        let mut in_place = 0;
        for version in [
            ProtocolVersion::V3,
            ProtocolVersion::V4,
            ProtocolVersion::V5,
        ] {
            for (n, name_len) in [(2, 1), (11, 6), (40, 20)] {
                for skip in [false, true] {
                    for paging in [None, Some(vec![1u8; 40])] {
                        for new_id in [None, Some(Bytes::from_static(&[7; 16]))] {
                            let rs = |room: usize| engine::ResultSet {
                                columns: columns(n, name_len),
                                rows: 1,
                                data: [vec![0; room], rows.clone()].concat(),
                                head_room: room,
                                paging_state: paging.clone(),
                                warnings: Vec::new(),
                            };
                            let plain = rows_response(rs(0), skip, new_id.clone(), version);
                            assert!(matches!(plain, Response::Result(ResultBody::Rows(_))));
                            let placed =
                                rows_response(rs(RESULT_HEAD_ROOM), skip, new_id.clone(), version);
                            if matches!(placed, Response::Result(ResultBody::Encoded(_))) {
                                in_place += 1;
                            }
                            assert_eq!(
                                body(&placed, version),
                                body(&plain, version),
                                "{version:?} {n} columns, skip {skip}, {paging:?}, {new_id:?}"
                            );
                        }
                    }
                }
            }
        }
        // All but the 40 long names with metadata fit the room.
        assert!(in_place >= 48, "{in_place} written in place");
    }
}
