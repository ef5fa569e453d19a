//! `ProxyBackend`: proxy mode, a read-caching front for a real Cassandra cluster.
//!
//! Every request is forwarded to the upstream cluster over the proxy's own connections
//! (`upstream`), except:
//! - EXECUTE of a prepared single-partition SELECT, answered from the DRAM cache (`cache`) when
//!   a valid entry exists, and stored there after a miss;
//! - `USE ks`, answered after a connection of the (role, version, ks) pool opened with that
//!   keyspace (so a shared upstream connection never switches keyspace);
//! - `system.local` / `system.peers` / `system.peers_v2`, read upstream and rewritten to show
//!   the proxies (`topology`), and `system_views.peregrine_cache`, the metrics (`metrics`);
//! - AUTH_RESPONSE, checked by logging in upstream with the same credentials.
//!
//! Writes (INSERT, UPDATE, DELETE, BATCH, TRUNCATE, DDL, anything unparsed) invalidate what
//! they may touch *before* their answer goes back, whatever the answer (a timed-out write may
//! still have applied). See `docs/proxy.md` for the rules and what is not done yet.
//!
//! # Module map
//! | module | what it holds |
//! |---|---|
//! | `upstream` | upstream connections (stream multiplexing, handshake, login) and pools |
//! | `classify` | statement text -> what it reads/writes, cacheability |
//! | `cache` | the DRAM cache: TinyLFU admission, LRU eviction, generation-based coherence |
//! | `topology` | `system.local` / `system.peers*` rewriting, token split among proxies |
//! | `metrics` | counters, latency histogram, the `system_views.peregrine_cache` rows |

mod cache;
mod classify;
mod metrics;
mod topology;
mod upstream;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use proto::error::{DbError, WriteType};
use proto::frame::ProtocolVersion;
use proto::request::{
    Batch, BatchStatement, Consistency, Execute, Prepare, Query, QueryParams, RawValue, Request,
    Values,
};
use proto::response::{
    ColumnSpec, Response, ResultBody, Rows, SchemaChangeTarget, SchemaChangeType,
};
use proto::types::ColumnType;

use crate::backend::{Backend, ConnState};
use crate::config::Config;

pub use cache::Cache;
use classify::{classify, Class, LocalTable, TableRef};
use metrics::Metrics;
use topology::Topology;
use upstream::{Connection, Credentials, Pool, Settings, UpstreamError};

/// The authenticator class Cassandra's PasswordAuthenticator announces.
const PASSWORD_AUTHENTICATOR: &str = "org.apache.cassandra.auth.PasswordAuthenticator";
/// How long a login verified upstream is trusted before it is checked upstream again.
const CREDENTIALS_TTL: Duration = Duration::from_secs(300);
/// Most prepared statements remembered; past it the map is cleared (drivers re-prepare on
/// UNPREPARED).
const MAX_PREPARED: usize = 100_000;

/// Pools are per (role, protocol version, keyspace).
type PoolKey = (Option<Arc<str>>, ProtocolVersion, Option<Arc<str>>);

/// What the proxy remembers of a statement prepared through it.
#[derive(Debug)]
struct PreparedInfo {
    query: String,
    keyspace: Option<String>,
    class: Class,
    /// The partition key's bind positions, in partition key order, and its table.
    pk: Option<(TableRef, Vec<usize>, bool)>,
    /// Cacheable single-partition read of this table.
    cache_read: Option<TableRef>,
    result_names: Vec<String>,
}

/// The proxy backend (see the module docs).
pub struct ProxyBackend {
    hosts: Arc<[SocketAddr]>,
    settings: Settings,
    request_timeout: Duration,
    pools: RwLock<HashMap<PoolKey, Arc<Pool>>>,
    logins: RwLock<HashMap<String, (Credentials, Instant)>>,
    auth_class: RwLock<Option<String>>,
    prepared: RwLock<HashMap<Bytes, Arc<PreparedInfo>>>,
    cache: Cache,
    metrics: Metrics,
    topology: Topology,
    exclude: HashSet<String>,
    max_staleness: Duration,
    table_max_staleness: BTreeMap<String, Duration>,
}

impl ProxyBackend {
    /// Builds the backend and probes the upstream once to learn whether it requires a login.
    /// An unreachable upstream is not an error here: requests fail until it answers.
    pub async fn connect(config: &Config) -> Self {
        let p = &config.proxy;
        let rpc_ip = p
            .rpc_address
            .unwrap_or(if config.listen.ip().is_unspecified() {
                IpAddr::from([127, 0, 0, 1])
            } else {
                config.listen.ip()
            });
        let me = SocketAddr::new(rpc_ip, config.listen.port());
        if let Some(dir) = &p.cache_dir {
            tracing::warn!(
                "proxy.cache_dir {} given, but the SSD cache tier is not implemented yet: caching in DRAM only",
                dir.display()
            );
        }
        let backend = ProxyBackend {
            hosts: config.upstream.clone().into(),
            settings: Settings {
                connect_timeout: p.connect_timeout,
                connections_per_host: p.upstream_connections,
            },
            request_timeout: config.request_timeout,
            pools: RwLock::new(HashMap::new()),
            logins: RwLock::new(HashMap::new()),
            auth_class: RwLock::new(None),
            prepared: RwLock::new(HashMap::new()),
            cache: Cache::new(p.cache_bytes, p.max_entry_bytes),
            metrics: Metrics::default(),
            topology: Topology::new(me, &p.peers),
            exclude: p.exclude.iter().cloned().collect(),
            max_staleness: p.max_staleness,
            table_max_staleness: p.table_max_staleness.clone(),
        };
        let mut last = None;
        for &addr in backend.hosts.iter() {
            match Connection::open(addr, ProtocolVersion::V4, None, None, p.connect_timeout).await {
                Ok(_) => {
                    last = None;
                    break;
                }
                Err(UpstreamError::AuthRequired { class, .. }) => {
                    tracing::info!("upstream {addr} requires authentication ({class}): clients log in with their upstream credentials");
                    *backend
                        .auth_class
                        .write()
                        .unwrap_or_else(PoisonError::into_inner) = Some(class);
                    last = None;
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        if let Some(e) = last {
            tracing::warn!(
                "no upstream node answered at start-up ({e}); requests fail until one does"
            );
        }
        backend
    }

    fn auth_required(&self) -> bool {
        self.auth_class
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    fn staleness(&self, t: &TableRef) -> Duration {
        self.table_max_staleness
            .get(&format!("{}.{}", t.keyspace, t.table))
            .copied()
            .unwrap_or(self.max_staleness)
    }

    fn excluded(&self, t: &TableRef) -> bool {
        self.exclude
            .contains(&format!("{}.{}", t.keyspace, t.table))
            || self.exclude.contains(&format!("{}.*", t.keyspace))
    }

    fn pool(&self, conn: &ConnState, keyspace: Option<&str>) -> Arc<Pool> {
        let role = conn.role();
        let key: PoolKey = (role.clone(), conn.version(), keyspace.map(Arc::from));
        if let Some(p) = self
            .pools
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
        {
            return p.clone();
        }
        let creds = role.as_deref().and_then(|r| {
            self.logins
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .get(r)
                .map(|(c, _)| c.clone())
        });
        let mut pools = self.pools.write().unwrap_or_else(PoisonError::into_inner);
        pools
            .entry(key)
            .or_insert_with(|| {
                Arc::new(Pool::new(
                    self.hosts.clone(),
                    conn.version(),
                    keyspace.map(str::to_string),
                    creds,
                    self.settings.clone(),
                ))
            })
            .clone()
    }

    fn forget_pool(&self, conn: &ConnState, keyspace: Option<&str>) {
        let key: PoolKey = (conn.role(), conn.version(), keyspace.map(Arc::from));
        self.pools
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&key);
    }

    fn prepared_info(&self, id: &[u8]) -> Option<Arc<PreparedInfo>> {
        self.prepared
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
    }

    /// Sends `req` on a connection of the pool for `keyspace`; re-prepares once on UNPREPARED
    /// for a statement the proxy knows. `write` chooses WriteTimeout over ReadTimeout.
    async fn forward(
        &self,
        conn: &ConnState,
        keyspace: Option<&str>,
        req: &Request,
        write: bool,
    ) -> Response {
        let pool = self.pool(conn, keyspace);
        let up = match pool.get().await {
            Ok(c) => c,
            Err(e) => return self.upstream_error(e, req, write),
        };
        let mut resp = match self.send(&up, req).await {
            Ok(r) => r,
            Err(e) => return self.upstream_error(e, req, write),
        };
        if let Response::Error(DbError::Unprepared { id, .. }) = &resp {
            if let Some(info) = self.prepared_info(id) {
                let v5 = conn.version() >= ProtocolVersion::V5;
                // v4 PREPARE uses the connection's keyspace, which must be the statement's.
                if v5 || info.keyspace.as_deref() == pool.keyspace() {
                    self.metrics
                        .unprepared_retries
                        .fetch_add(1, Ordering::Relaxed);
                    let prep = Request::Prepare(Prepare {
                        query: info.query.clone(),
                        keyspace: if v5 { info.keyspace.clone() } else { None },
                    });
                    match self.send(&up, &prep).await {
                        Ok(Response::Result(ResultBody::Prepared(_))) => {
                            resp = match self.send(&up, req).await {
                                Ok(r) => r,
                                Err(e) => return self.upstream_error(e, req, write),
                            };
                        }
                        Ok(other) => return other,
                        Err(e) => return self.upstream_error(e, req, write),
                    }
                }
            }
        }
        if let Response::Result(ResultBody::SetKeyspace(_)) = &resp {
            // Some statement switched a shared connection's keyspace: stop using it.
            up.retire();
        }
        resp
    }

    async fn send(&self, up: &Connection, req: &Request) -> Result<Response, UpstreamError> {
        let started = Instant::now();
        self.metrics
            .upstream_requests
            .fetch_add(1, Ordering::Relaxed);
        let r = up.request(req, self.request_timeout).await;
        self.metrics.observe(started.elapsed());
        if let Err(e) = &r {
            self.metrics.upstream_errors.fetch_add(1, Ordering::Relaxed);
            if matches!(e, UpstreamError::Timeout { .. }) {
                self.metrics
                    .upstream_timeouts
                    .fetch_add(1, Ordering::Relaxed);
            }
        }
        r
    }

    /// Maps a failure without an upstream answer to the error a driver expects.
    fn upstream_error(&self, e: UpstreamError, req: &Request, write: bool) -> Response {
        let consistency = match req {
            Request::Query(q) => q.params.consistency,
            Request::Execute(x) => x.params.consistency,
            Request::Batch(b) => b.consistency,
            _ => Consistency::One,
        };
        let message = e.to_string();
        Response::Error(match e {
            UpstreamError::Timeout { .. } if write => DbError::WriteTimeout {
                message: format!("Operation timed out - received only 0 responses ({message})"),
                consistency,
                received: 0,
                block_for: 1,
                write_type: if matches!(req, Request::Batch(_)) {
                    WriteType::Batch
                } else {
                    WriteType::Simple
                },
                contentions: None,
            },
            UpstreamError::Timeout { .. } => DbError::ReadTimeout {
                message: format!("Operation timed out - received only 0 responses ({message})"),
                consistency,
                received: 0,
                block_for: 1,
                data_present: false,
            },
            UpstreamError::Connect { .. } => DbError::Unavailable {
                message: format!(
                    "Cannot achieve consistency level {consistency}: no upstream node is reachable ({message})"
                ),
                consistency,
                required: 1,
                alive: 0,
            },
            UpstreamError::Busy { .. } => DbError::Overloaded { message },
            UpstreamError::Rejected(e) => e,
            UpstreamError::AuthRequired { class, .. } => {
                *self.auth_class.write().unwrap_or_else(PoisonError::into_inner) = Some(class);
                DbError::server(format!(
                    "{message}; the proxy learnt this after the connection started: reconnect to log in"
                ))
            }
            UpstreamError::Closed { .. } => DbError::server(format!(
                "{message}; the request may or may not have been applied"
            )),
            UpstreamError::Protocol { .. } => DbError::server(message),
        })
    }

    /// AUTH_RESPONSE: SASL PLAIN, checked by logging in upstream (then trusted for
    /// `CREDENTIALS_TTL`).
    async fn login(&self, conn: &ConnState, token: Option<Bytes>) -> Response {
        let token = token.unwrap_or_default();
        let mut parts = token.split(|&b| b == 0);
        let (Some(_authz), Some(user), Some(_pass)) = (parts.next(), parts.next(), parts.next())
        else {
            return Response::Error(DbError::protocol(
                "Authentication failed: expected a SASL PLAIN token (authzid NUL user NUL password)",
            ));
        };
        let user = String::from_utf8_lossy(user).into_owned();
        let creds = Credentials {
            user: user.clone(),
            token: token.clone(),
        };
        let known = self
            .logins
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&user)
            .is_some_and(|(c, at)| *c == creds && at.elapsed() < CREDENTIALS_TTL);
        if !known {
            let mut last = None;
            for &addr in self.hosts.iter() {
                match Connection::open(
                    addr,
                    conn.version(),
                    Some(&creds),
                    None,
                    self.settings.connect_timeout,
                )
                .await
                {
                    Ok(_) => {
                        last = None;
                        break;
                    }
                    Err(UpstreamError::Rejected(e)) => return Response::Error(e),
                    Err(e) => last = Some(e),
                }
            }
            if let Some(e) = last {
                return self.upstream_error(e, &Request::AuthResponse(None), false);
            }
            let mut logins = self.logins.write().unwrap_or_else(PoisonError::into_inner);
            let changed = logins.get(&user).is_some_and(|(c, _)| *c != creds);
            logins.insert(user.clone(), (creds, Instant::now()));
            drop(logins);
            if changed {
                // Pools of this role log in with the new password from now on.
                self.pools
                    .write()
                    .unwrap_or_else(PoisonError::into_inner)
                    .retain(|k, _| k.0.as_deref() != Some(user.as_str()));
            }
        }
        conn.set_role(&user);
        Response::AuthSuccess(None)
    }

    async fn query(&self, conn: &ConnState, q: Query) -> Response {
        let ks = q
            .params
            .keyspace
            .clone()
            .or_else(|| conn.keyspace().map(|k| k.to_string()));
        let class = classify(&q.query, ks.as_deref());
        let req = Request::Query(q);
        match &class {
            Class::Local(which) => {
                return self
                    .local_read(conn, *which, ks.as_deref(), &req, None)
                    .await
            }
            Class::Use(name) => return self.use_keyspace(conn, name).await,
            _ => {}
        }
        let conn_ks = conn.keyspace();
        let resp = self
            .forward(conn, conn_ks.as_deref(), &req, class.is_write())
            .await;
        match &class {
            Class::Write { tables, .. } => {
                for t in tables {
                    self.cache.invalidate_table(&t.keyspace, &t.table);
                }
            }
            _ => self.after_statement(&class, &resp),
        }
        resp
    }

    /// Invalidation for TRUNCATE, DDL and unknown statements.
    fn after_statement(&self, class: &Class, resp: &Response) {
        match class {
            Class::Truncate(t) => self.cache.invalidate_table(&t.keyspace, &t.table),
            Class::Unknown => self.cache.invalidate_all(),
            Class::Schema => {
                if let Response::Result(ResultBody::SchemaChange(sc)) = resp {
                    match &sc.target {
                        SchemaChangeTarget::Table { keyspace, name } => {
                            self.cache.invalidate_table(keyspace, name);
                            if sc.change == SchemaChangeType::Dropped {
                                self.forget_prepared(|t| {
                                    t.keyspace == *keyspace && t.table == *name
                                });
                            }
                        }
                        SchemaChangeTarget::Keyspace(ks) => {
                            self.cache.invalidate_keyspace(ks);
                            if sc.change == SchemaChangeType::Dropped {
                                self.forget_prepared(|t| t.keyspace == *ks);
                            }
                        }
                        SchemaChangeTarget::Type { keyspace, .. }
                        | SchemaChangeTarget::Function { keyspace, .. }
                        | SchemaChangeTarget::Aggregate { keyspace, .. } => {
                            self.cache.invalidate_keyspace(keyspace)
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// Drops remembered statements on a dropped table, so EXECUTE answers UNPREPARED and the
    /// driver prepares again against the new schema.
    fn forget_prepared(&self, on: impl Fn(&TableRef) -> bool) {
        self.prepared
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|_, info| !info.pk.as_ref().is_some_and(|(t, _, _)| on(t)));
    }

    async fn use_keyspace(&self, conn: &ConnState, name: &str) -> Response {
        let pool = self.pool(conn, Some(name));
        match pool.get().await {
            Ok(_) => Response::Result(ResultBody::SetKeyspace(name.to_string())),
            Err(e) => {
                if matches!(e, UpstreamError::Rejected(_)) {
                    self.forget_pool(conn, Some(name));
                }
                let req = Request::Query(Query {
                    query: String::new(),
                    params: QueryParams::default(),
                });
                self.upstream_error(e, &req, false)
            }
        }
    }

    async fn prepare(&self, conn: &ConnState, p: Prepare) -> Response {
        let ks = p
            .keyspace
            .clone()
            .or_else(|| conn.keyspace().map(|k| k.to_string()));
        let pool_ks = conn.keyspace();
        let query = p.query.clone();
        let resp = self
            .forward(conn, pool_ks.as_deref(), &Request::Prepare(p), false)
            .await;
        if let Response::Result(ResultBody::Prepared(prep)) = &resp {
            let class = classify(&query, ks.as_deref());
            let cols = &prep.bind_metadata.columns;
            let pk_idx: Vec<usize> = prep
                .bind_metadata
                .pk_indexes
                .iter()
                .map(|&i| i as usize)
                .collect();
            let pk = match pk_idx.first().and_then(|&i| cols.get(i)) {
                Some(c) if pk_idx.iter().all(|&i| i < cols.len()) => {
                    let canonical = pk_idx.iter().all(|&i| canonical_type(&cols[i].ty));
                    Some((
                        TableRef {
                            keyspace: c.keyspace.clone(),
                            table: c.table.clone(),
                        },
                        pk_idx.clone(),
                        canonical,
                    ))
                }
                _ => None,
            };
            let cache_read = match (&class, &pk) {
                (
                    Class::Select {
                        cacheable: true,
                        eq_binds,
                        ..
                    },
                    Some((t, idx, _)),
                ) if self.cache.enabled()
                    && !self.excluded(t)
                    && idx
                        .iter()
                        .all(|&i| eq_binds.contains(&(cols[i].name.clone(), i))) =>
                {
                    Some(t.clone())
                }
                _ => None,
            };
            let info = PreparedInfo {
                query,
                keyspace: ks,
                class,
                pk,
                cache_read,
                result_names: prep
                    .result_metadata
                    .columns
                    .iter()
                    .map(|c| c.name.clone())
                    .collect(),
            };
            let mut map = self
                .prepared
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            if map.len() >= MAX_PREPARED {
                map.clear();
            }
            map.insert(prep.id.clone(), Arc::new(info));
        }
        resp
    }

    async fn execute(&self, conn: &ConnState, x: Execute) -> Response {
        let Some(info) = self.prepared_info(&x.id) else {
            return Response::Error(DbError::unprepared(x.id));
        };
        let ks = info.keyspace.clone();
        if let Class::Local(which) = info.class {
            let req = Request::Execute(x);
            return self
                .local_read(conn, which, ks.as_deref(), &req, Some(&info))
                .await;
        }
        if let Some(table) = &info.cache_read {
            if let Some(key) = self.cache_key(conn, &x, &info, table) {
                if let Some(rows) = self.cache.get(&key, Instant::now()) {
                    return Response::Result(ResultBody::Rows((*rows).clone()));
                }
                let ticket = self.cache.ticket(&key);
                let started = Instant::now();
                let req = Request::Execute(x);
                let resp = self.forward(conn, ks.as_deref(), &req, false).await;
                if let Response::Result(ResultBody::Rows(rows)) = &resp {
                    self.cache
                        .insert(key, ticket, rows.clone(), started, self.staleness(table));
                }
                return resp;
            }
        }
        let write = info.class.is_write();
        let req = Request::Execute(x);
        let resp = self.forward(conn, ks.as_deref(), &req, write).await;
        if let Request::Execute(x) = &req {
            self.invalidate_prepared(&info, &x.params.values, &resp);
        }
        resp
    }

    /// Invalidation after a prepared statement ran: its partition when the statement is a
    /// single write whose partition key is bound, else its tables.
    fn invalidate_prepared(&self, info: &PreparedInfo, values: &Values, resp: &Response) {
        match &info.class {
            Class::Write { tables, single } => {
                if let (true, Some((t, idx, true))) = (*single, &info.pk) {
                    if let Some(pk) = partition_key(values, idx) {
                        self.cache.invalidate_partition(&t.keyspace, &t.table, &pk);
                        return;
                    }
                }
                for t in tables {
                    self.cache.invalidate_table(&t.keyspace, &t.table);
                }
                if let Some((t, _, _)) = &info.pk {
                    self.cache.invalidate_table(&t.keyspace, &t.table);
                }
            }
            other => self.after_statement(other, resp),
        }
    }

    /// The cache key of a cacheable EXECUTE, or `None` when this execution is not cacheable
    /// (serial read, named or null key values, a fixed `now`).
    fn cache_key(
        &self,
        conn: &ConnState,
        x: &Execute,
        info: &PreparedInfo,
        table: &TableRef,
    ) -> Option<cache::CacheKey> {
        let p = &x.params;
        if matches!(
            p.consistency,
            Consistency::Serial | Consistency::LocalSerial
        ) || p.now_in_seconds.is_some()
        {
            return None;
        }
        let (_, idx, _) = info.pk.as_ref()?;
        let pk = partition_key(&p.values, idx)?;
        let mut req = Vec::with_capacity(64 + x.id.len());
        let role = conn.role();
        let push = |out: &mut Vec<u8>, b: &[u8]| {
            out.extend_from_slice(&(b.len() as u32).to_be_bytes());
            out.extend_from_slice(b);
        };
        push(&mut req, role.as_deref().unwrap_or("").as_bytes());
        req.push(conn.version().as_u8());
        req.push(u8::from(p.skip_metadata));
        push(&mut req, &x.id);
        push(&mut req, x.result_metadata_id.as_deref().unwrap_or(&[]));
        req.extend_from_slice(&p.page_size.unwrap_or(-1).to_be_bytes());
        push(&mut req, p.paging_state.as_deref().unwrap_or(&[]));
        let Values::Positional(values) = &p.values else {
            return None;
        };
        for v in values {
            match v {
                RawValue::Null => req.push(0),
                RawValue::Unset => req.push(1),
                RawValue::Bytes(b) => {
                    req.push(2);
                    push(&mut req, b);
                }
            }
        }
        Some(cache::CacheKey::new(
            &table.keyspace,
            &table.table,
            &pk,
            &req,
        ))
    }

    async fn batch(&self, conn: &ConnState, b: Batch) -> Response {
        let ks = b
            .keyspace
            .clone()
            .or_else(|| conn.keyspace().map(|k| k.to_string()));
        // Know every statement first: an unknown id is answered UNPREPARED like EXECUTE.
        let mut infos = Vec::with_capacity(b.statements.len());
        for s in &b.statements {
            match s {
                BatchStatement::Query { query, .. } => {
                    infos.push(Err(classify(query, ks.as_deref())))
                }
                BatchStatement::Prepared { id, .. } => match self.prepared_info(id) {
                    Some(info) => infos.push(Ok(info)),
                    None => return Response::Error(DbError::unprepared(id.clone())),
                },
            }
        }
        let conn_ks = conn.keyspace();
        let req = Request::Batch(b);
        let resp = self.forward(conn, conn_ks.as_deref(), &req, true).await;
        let Request::Batch(b) = &req else {
            return resp;
        };
        for (s, info) in b.statements.iter().zip(&infos) {
            match (s, info) {
                (BatchStatement::Prepared { values, .. }, Ok(info)) => {
                    self.invalidate_prepared(info, values, &resp)
                }
                (_, Err(Class::Write { tables, .. })) => {
                    for t in tables {
                        self.cache.invalidate_table(&t.keyspace, &t.table);
                    }
                }
                _ => self.cache.invalidate_all(),
            }
        }
        resp
    }

    /// `system.local`, `system.peers*` (read upstream, rewritten) and the metrics table.
    async fn local_read(
        &self,
        conn: &ConnState,
        which: LocalTable,
        _ks: Option<&str>,
        req: &Request,
        info: Option<&PreparedInfo>,
    ) -> Response {
        if which == LocalTable::Metrics {
            return Response::Result(ResultBody::Rows(self.metrics.rows(&self.cache)));
        }
        let conn_ks = conn.keyspace();
        let pool_ks = info.map_or(conn_ks.as_deref(), |i| i.keyspace.as_deref());
        let resp = self.forward(conn, pool_ks, req, false).await;
        let Response::Result(ResultBody::Rows(rows)) = &resp else {
            return resp;
        };
        let names = column_names(rows, info);
        match which {
            LocalTable::Local => {
                Response::Result(ResultBody::Rows(self.topology.rewrite_local(rows, &names)))
            }
            _ => {
                let facts = if self.topology.has_peers() {
                    self.cluster_facts(conn).await
                } else {
                    topology::ClusterFacts::default()
                };
                Response::Result(ResultBody::Rows(
                    self.topology.peers_rows(rows, &names, &facts),
                ))
            }
        }
    }

    async fn cluster_facts(&self, conn: &ConnState) -> topology::ClusterFacts {
        let q = Request::Query(Query {
            query: "SELECT data_center, rack, release_version, schema_version FROM system.local WHERE key = 'local'".into(),
            params: QueryParams::default(),
        });
        match self.forward(conn, None, &q, false).await {
            Response::Result(ResultBody::Rows(rows)) => {
                let names = column_names(&rows, None);
                topology::facts_of(&rows, &names)
            }
            _ => topology::ClusterFacts::default(),
        }
    }
}

/// Result column names: from the rows' metadata, or (metadata skipped) from the prepared
/// statement's.
fn column_names(rows: &Rows, info: Option<&PreparedInfo>) -> Vec<String> {
    if rows.metadata.no_metadata {
        if let Some(info) = info {
            return info.result_names.clone();
        }
    }
    rows.metadata
        .columns
        .iter()
        .map(|c: &ColumnSpec| c.name.clone())
        .collect()
}

/// The partition key bytes: the bound values at `idx`, each length-prefixed. `None` when a
/// component is null/unset or values are named.
fn partition_key(values: &Values, idx: &[usize]) -> Option<Vec<u8>> {
    let Values::Positional(v) = values else {
        return None;
    };
    let mut out = Vec::new();
    for &i in idx {
        match v.get(i)? {
            RawValue::Bytes(b) => {
                out.extend_from_slice(&(b.len() as u32).to_be_bytes());
                out.extend_from_slice(b);
            }
            RawValue::Null | RawValue::Unset => return None,
        }
    }
    Some(out)
}

/// Types whose equal values always serialize to equal bytes, so a write's key bytes match a
/// read's. For the others (varint, decimal, floats, collections, ...) writes invalidate the
/// whole table.
fn canonical_type(t: &ColumnType) -> bool {
    matches!(
        t,
        ColumnType::Ascii
            | ColumnType::Bigint
            | ColumnType::Blob
            | ColumnType::Boolean
            | ColumnType::Int
            | ColumnType::Timestamp
            | ColumnType::Uuid
            | ColumnType::Varchar
            | ColumnType::Timeuuid
            | ColumnType::Inet
            | ColumnType::Date
            | ColumnType::Time
            | ColumnType::Smallint
            | ColumnType::Tinyint
    )
}

impl Backend for ProxyBackend {
    async fn handle(&self, conn: &ConnState, req: Request) -> Response {
        if let Request::AuthResponse(token) = req {
            if !self.auth_required() {
                return Response::Error(DbError::protocol(
                    "Unexpected AUTH_RESPONSE: the upstream does not require authentication",
                ));
            }
            return self.login(conn, token).await;
        }
        if self.auth_required() && conn.role().is_none() {
            return Response::Error(DbError::protocol(format!(
                "Unexpected message {:?}, expecting SASL_RESPONSE",
                req.opcode()
            )));
        }
        match req {
            Request::Query(q) => self.query(conn, q).await,
            Request::Prepare(p) => self.prepare(conn, p).await,
            Request::Execute(x) => self.execute(conn, x).await,
            Request::Batch(b) => self.batch(conn, b).await,
            Request::AuthResponse(_)
            | Request::Startup(_)
            | Request::Options
            | Request::Register(_) => Response::Error(DbError::protocol(
                "Unexpected message: handled by the connection, not the backend",
            )),
        }
    }

    fn authenticator(&self) -> Option<String> {
        self.auth_class
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|_| PASSWORD_AUTHENTICATOR.to_string())
    }
}
