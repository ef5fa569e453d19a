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
//! Upstream SCHEMA_CHANGE events arrive on one control connection
//! ([`ProxyBackend::relay_upstream_events`]): they invalidate the cache for what changed and
//! are pushed to the proxy's registered clients (except those of DDL that went through this
//! proxy, which the front end already announced). Every request, connecting included, is
//! bounded by `request_timeout`. Tables listed in `proxy.serve_stale_on_upstream_error` keep
//! their last results apart (`StaleStore`) to answer cacheable reads the upstream failed.
//!
//! # Module map
//! | module | what it holds |
//! |---|---|
//! | `upstream` | upstream connections (stream multiplexing, handshake, login) and pools |
//! | `classify` | statement text -> what it reads/writes, cacheability |
//! | `cache` | the cache: DRAM tier (TinyLFU admission, LRU eviction) over `ssd`, generation-based coherence |
//! | `ssd` | the SSD cache tier under the DRAM one: an `LsmStorage`, FIFO byte budget |
//! | `topology` | `system.local` / `system.peers*` rewriting, token split among proxies |
//! | `metrics` | counters, latency histogram, the `system_views.peregrine_cache` rows |
//! | `peers` | probing the other proxies, STATUS_CHANGE `UP` / `DOWN` for them ([`ProxyBackend::watch_peers`]) |

mod cache;
mod classify;
mod metrics;
mod peers;
mod ssd;
mod topology;
mod upstream;

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use proto::error::{DbError, WriteType};
use proto::frame::{Compression, ProtocolVersion};
use proto::request::{
    Batch, BatchKind, BatchStatement, Consistency, Execute, Prepare, Query, QueryParams, RawValue,
    Request, Values,
};
use proto::response::{
    ColumnSpec, Event, Response, ResponseExtras, ResultBody, Rows, RowsBuilder, SchemaChange,
    SchemaChangeTarget, SchemaChangeType,
};
use proto::types::{ColumnType, Value};

use crate::backend::{Backend, ConnState, Now, Reply, RequestFlags};
use crate::config::{Config, UpstreamCompression};
use crate::events::EventBus;

pub use cache::Cache;
use classify::{classify, Class, LocalTable, PatchShape, TableRef};
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
/// How often the control connection is checked with OPTIONS (a silent upstream is replaced).
const CONTROL_PING: Duration = Duration::from_secs(5);
/// A control connection that answered nothing for this long is replaced.
const CONTROL_SILENT: Duration = Duration::from_secs(30);
/// Pause between attempts to open the control connection.
const CONTROL_RETRY: Duration = Duration::from_secs(1);
/// How long a schema change answered through this proxy suppresses the same upstream event.
const OWN_DDL_WINDOW: Duration = Duration::from_secs(10);

/// Pools are per (role, protocol version, keyspace).
type PoolKey = (Option<Arc<str>>, ProtocolVersion, Option<Arc<str>>);

/// One client request's envelope flags, and the envelope extras of the upstream's answer.
#[derive(Default)]
struct Ctx {
    /// The client's tracing flag and custom payload, passed upstream.
    flags: RequestFlags,
    extras: Mutex<ResponseExtras>,
}

/// A traced request, or one with a custom payload (a custom query handler upstream may act on
/// it), is answered by the upstream, never from the cache.
fn bypasses_cache(flags: &RequestFlags) -> bool {
    flags.tracing || !flags.custom_payload.is_empty()
}

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
    /// A cacheable read whose cached results a write may patch: its result column names.
    read_shape: Option<Arc<[String]>>,
    /// A write that may patch cached results in place.
    write_patch: Option<Arc<WritePatch>>,
}

/// A write that may patch cached results, between its start and the upstream's answer.
struct PatchingWrite {
    ticket: cache::WriteTicket,
    patch: Arc<WritePatch>,
    values: Vec<RawValue>,
}

/// How often a schema change asks whether the upstream nodes agree (up to
/// `proxy.schema_agreement_wait`).
const SCHEMA_AGREEMENT_POLL: Duration = Duration::from_millis(100);

/// Whether `addr` accepts a TCP connection within half a second (closed at once).
async fn accepts_connections(addr: SocketAddr) -> bool {
    matches!(
        tokio::time::timeout(
            Duration::from_millis(500),
            tokio::net::TcpStream::connect(addr)
        )
        .await,
        Ok(Ok(_))
    )
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
    schema_agreement_wait: Duration,
    /// `proxy.serve_stale_on_upstream_error`: `ks.table` / `ks.*`.
    stale_tables: HashSet<String>,
    stale: StaleStore,
    /// Schema changes answered through this proxy lately (their upstream events are not
    /// relayed again).
    own_ddl: Mutex<VecDeque<(SchemaChange, Instant)>>,
    relay: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Tables known to have (false) or not have (true) clustering columns.
    clustering_free: RwLock<HashMap<TableRef, bool>>,
    /// The task probing the peer proxies ([`ProxyBackend::watch_peers`]).
    peer_watch: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Background cache refreshes in flight (at most [`MAX_REFRESHES`]).
    refreshes: AtomicUsize,
    started: Instant,
}

/// Background cache refreshes waiting or in flight at once; a hot entry whose refresh is
/// skipped asks again on its next hit.
const MAX_REFRESHES: usize = 256;
/// Background refreshes go upstream together, at the next multiple of this since start-up.
/// A trickle of single reads costs Cassandra several times the CPU per read of the same reads
/// in bursts (its request threads spin before they park), and that CPU is taken from whatever
/// shares its cores.
const REFRESH_TICK: Duration = Duration::from_millis(50);

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
        let ssd = match p.cache_dir.clone() {
            Some(dir) => {
                let budget = p.ssd_cache_bytes;
                let opened =
                    tokio::task::spawn_blocking(move || ssd::SsdTier::open(&dir, budget)).await;
                match opened {
                    Ok(Ok(tier)) => Some(tier),
                    Ok(Err(e)) => {
                        tracing::error!("{e}: caching in DRAM only");
                        None
                    }
                    Err(e) => {
                        tracing::error!("opening the SSD cache tier failed: {e}");
                        None
                    }
                }
            }
            None => None,
        };
        let backend = ProxyBackend {
            hosts: config.upstream.clone().into(),
            settings: Settings {
                connect_timeout: p.connect_timeout,
                connections_per_host: p.upstream_connections,
                compression: match p.upstream_compression {
                    UpstreamCompression::None => None,
                    UpstreamCompression::Lz4 => Some(Compression::Lz4),
                },
            },
            request_timeout: config.request_timeout,
            pools: RwLock::new(HashMap::new()),
            logins: RwLock::new(HashMap::new()),
            auth_class: RwLock::new(None),
            prepared: RwLock::new(HashMap::new()),
            cache: Cache::with_ssd(p.cache_bytes, p.max_entry_bytes, ssd),
            metrics: Metrics::default(),
            topology: Topology::new(me, &p.peers),
            exclude: p.exclude.iter().cloned().collect(),
            max_staleness: p.max_staleness,
            schema_agreement_wait: p.schema_agreement_wait,
            table_max_staleness: p.table_max_staleness.clone(),
            stale_tables: p.serve_stale_on_upstream_error.iter().cloned().collect(),
            stale: StaleStore::new(if p.serve_stale_on_upstream_error.is_empty() {
                0
            } else {
                p.cache_bytes / 4
            }),
            own_ddl: Mutex::new(VecDeque::new()),
            relay: Mutex::new(None),
            clustering_free: RwLock::new(HashMap::new()),
            peer_watch: Mutex::new(None),
            refreshes: AtomicUsize::new(0),
            started: Instant::now(),
        };
        let mut last = None;
        for &addr in backend.hosts.iter() {
            match Connection::open(
                addr,
                ProtocolVersion::V4,
                None,
                None,
                p.connect_timeout,
                None,
            )
            .await
            {
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

    fn serves_stale(&self, t: &TableRef) -> bool {
        !self.stale_tables.is_empty()
            && (self
                .stale_tables
                .contains(&format!("{}.{}", t.keyspace, t.table))
                || self.stale_tables.contains(&format!("{}.*", t.keyspace)))
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
        ctx: &Ctx,
        keyspace: Option<&str>,
        req: &Request,
        write: bool,
    ) -> Response {
        // The whole request, connecting and an UNPREPARED retry included, within
        // `request_timeout`.
        let deadline = Instant::now() + self.request_timeout;
        let pool = self.pool(conn, keyspace);
        let up = match tokio::time::timeout(self.request_timeout, pool.get()).await {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => return self.upstream_error(e, req, write),
            Err(_) => {
                let e = UpstreamError::Connect {
                    addr: self
                        .hosts
                        .first()
                        .copied()
                        .unwrap_or(([0, 0, 0, 0], 0).into()),
                    reason: format!(
                        "no connection within request_timeout ({}ms)",
                        self.request_timeout.as_millis()
                    ),
                };
                return self.upstream_error(e, req, write);
            }
        };
        let mut resp = match self.send(&up, req, deadline, ctx).await {
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
                    match self.send(&up, &prep, deadline, &Ctx::default()).await {
                        Ok(Response::Result(ResultBody::Prepared(_))) => {
                            resp = match self.send(&up, req, deadline, ctx).await {
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
        if let Response::Result(ResultBody::SchemaChange(_)) = &resp {
            self.await_schema_agreement(&up).await;
        }
        resp
    }

    /// After a schema change answered by `up`'s node: waits until every upstream node this
    /// proxy sends requests to reports that node's schema version, as a driver does after DDL
    /// (the client's driver cannot: it sees only proxies), so the next request cannot reach a
    /// node that does not know the change yet. A lagging node that does not accept a TCP
    /// connection is down (a driver skips the nodes it sees down): not waited for. At most
    /// `proxy.schema_agreement_wait`; then the answer goes back anyway.
    async fn await_schema_agreement(&self, up: &Connection) {
        if self.hosts.len() < 2 {
            return;
        }
        let start = Instant::now();
        let mut reachable: HashMap<SocketAddr, bool> = HashMap::new();
        loop {
            let versions = self.schema_versions(up).await;
            if let Some((local, peers)) = &versions {
                let mut agreed = true;
                for (addr, version) in peers {
                    if version == local {
                        continue;
                    }
                    let live = match reachable.get(addr) {
                        Some(&r) => r,
                        None => {
                            let r = accepts_connections(*addr).await;
                            if !r {
                                tracing::info!(
                                    "upstream node {addr} is unreachable: a schema change does \
                                     not wait for it to agree"
                                );
                            }
                            reachable.insert(*addr, r);
                            r
                        }
                    };
                    agreed &= !live;
                }
                if agreed {
                    return;
                }
            }
            if start.elapsed() >= self.schema_agreement_wait {
                tracing::warn!(
                    "no schema agreement among the upstream nodes after {:?}: answering the \
                     schema change anyway (versions: {versions:?})",
                    self.schema_agreement_wait
                );
                return;
            }
            tokio::time::sleep(SCHEMA_AGREEMENT_POLL).await;
        }
    }

    /// The schema version `up`'s node reports for itself, and those it reports for its peers
    /// that are upstream hosts of this proxy (`None` if it cannot tell).
    async fn schema_versions(&self, up: &Connection) -> Option<(Value, Vec<(SocketAddr, Value)>)> {
        let local = self
            .upstream_rows(
                up,
                "SELECT schema_version FROM system.local WHERE key = 'local'",
            )
            .await?;
        let local = local.into_iter().next()?.into_iter().next()?;
        let peers = match self
            .upstream_rows(
                up,
                "SELECT native_address, native_port, schema_version FROM system.peers_v2",
            )
            .await
        {
            Some(rows) => rows,
            // Before Cassandra 4.0: one native port for all.
            None => self
                .upstream_rows(up, "SELECT rpc_address, schema_version FROM system.peers")
                .await?
                .into_iter()
                .map(|mut r| {
                    r.insert(1, Value::Int(i32::from(up.addr().port())));
                    r
                })
                .collect(),
        };
        let mut versions = Vec::new();
        for row in peers {
            let [Value::Inet(ip), Value::Int(port), version] = &row[..] else {
                continue;
            };
            let addr = SocketAddr::new(*ip, u16::try_from(*port).ok()?);
            if addr != up.addr() && self.hosts.contains(&addr) {
                versions.push((addr, version.clone()));
            }
        }
        Some((local, versions))
    }

    /// The decoded rows of an unprepared query on `up`, or `None` on any failure.
    async fn upstream_rows(&self, up: &Connection, query: &str) -> Option<Vec<Vec<Value>>> {
        let q = Request::Query(Query {
            query: query.into(),
            params: QueryParams::default(),
        });
        let deadline = Instant::now() + self.request_timeout;
        match self.send(up, &q, deadline, &Ctx::default()).await {
            Ok(Response::Result(ResultBody::Rows(rows))) => rows.decode_rows().ok(),
            _ => None,
        }
    }

    /// One round trip on `up`, answered by `deadline` at the latest.
    async fn send(
        &self,
        up: &Connection,
        req: &Request,
        deadline: Instant,
        ctx: &Ctx,
    ) -> Result<Response, UpstreamError> {
        let started = Instant::now();
        if started >= deadline {
            self.metrics
                .upstream_timeouts
                .fetch_add(1, Ordering::Relaxed);
            return Err(UpstreamError::Timeout {
                addr: up.addr(),
                timeout: self.request_timeout,
            });
        }
        self.metrics
            .upstream_requests
            .fetch_add(1, Ordering::Relaxed);
        let r = up
            .request_traced(req, deadline.saturating_duration_since(started), &ctx.flags)
            .await
            .map(|d| {
                if d.tracing_id.is_some() || !d.warnings.is_empty() || !d.custom_payload.is_empty()
                {
                    *ctx.extras.lock().unwrap_or_else(PoisonError::into_inner) = ResponseExtras {
                        tracing_id: d.tracing_id,
                        warnings: d.warnings,
                        custom_payload: d.custom_payload,
                    };
                }
                d.response
            });
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
                    None,
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

    async fn query(&self, conn: &ConnState, ctx: &Ctx, q: Query) -> Response {
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
                    .local_read(conn, ctx, *which, ks.as_deref(), &req, None)
                    .await
            }
            Class::Use(name) => return self.use_keyspace(conn, name).await,
            _ => {}
        }
        let conn_ks = conn.keyspace();
        let resp = self
            .forward(conn, ctx, conn_ks.as_deref(), &req, class.is_write())
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
                    self.schema_changed(sc);
                    let now = Instant::now();
                    let mut own = self.own_ddl.lock().unwrap_or_else(PoisonError::into_inner);
                    while own
                        .front()
                        .is_some_and(|(_, at)| now.duration_since(*at) > OWN_DDL_WINDOW)
                        || own.len() >= 256
                    {
                        own.pop_front();
                    }
                    own.push_back((sc.clone(), now));
                }
            }
            _ => {}
        }
    }

    /// A schema change, answered through the proxy or pushed by the upstream: invalidates
    /// what it names and forgets statements of what was dropped.
    fn schema_changed(&self, sc: &SchemaChange) {
        match &sc.target {
            SchemaChangeTarget::Table { keyspace, name } => {
                self.cache.invalidate_table(keyspace, name);
                self.forget_clustering(|t| t.keyspace == *keyspace && t.table == *name);
                if sc.change == SchemaChangeType::Dropped {
                    self.forget_prepared(|t| t.keyspace == *keyspace && t.table == *name);
                }
            }
            SchemaChangeTarget::Keyspace(ks) => {
                self.cache.invalidate_keyspace(ks);
                self.forget_clustering(|t| t.keyspace == *ks);
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

    /// True (and forgotten) when `sc` was answered through this proxy lately: its upstream
    /// event was already announced by the front end.
    fn take_own_ddl(&self, sc: &SchemaChange) -> bool {
        let now = Instant::now();
        let mut own = self.own_ddl.lock().unwrap_or_else(PoisonError::into_inner);
        match own
            .iter()
            .position(|(c, at)| c == sc && now.duration_since(*at) <= OWN_DDL_WINDOW)
        {
            Some(i) => {
                own.remove(i);
                true
            }
            None => false,
        }
    }

    /// Starts the task that keeps one control connection to the upstream, REGISTERed for
    /// SCHEMA_CHANGE: each event invalidates the cache for what changed and is published on
    /// `bus` (the front end pushes it to clients registered for it). When the control
    /// connection is (re)opened the whole cache is invalidated, as events may have been
    /// missed. TOPOLOGY_CHANGE / STATUS_CHANGE of the upstream nodes are not relayed: clients
    /// see the proxies, not the nodes. Must run inside a tokio runtime.
    pub fn relay_upstream_events(self: &Arc<Self>, bus: EventBus) {
        let task = tokio::spawn(relay_loop(Arc::downgrade(self), bus));
        if let Some(old) = self
            .relay
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replace(task)
        {
            old.abort();
        }
    }

    /// Starts the task that probes the other proxies (`--proxy-peers`) every second and
    /// publishes `STATUS_CHANGE` `DOWN` on `bus` after two failed probes of one, `UP` when it
    /// answers again (see `peers`). The address is the peer's as configured, the one
    /// `system.peers` reports. Ends when the backend is dropped. Must run inside a tokio
    /// runtime.
    pub fn watch_peers(self: &Arc<Self>, bus: EventBus) {
        let peers: Vec<SocketAddr> = self.topology.peers().collect();
        if peers.is_empty() {
            return;
        }
        let task = peers::watch(Arc::downgrade(self), peers, bus, peers::PROBE_INTERVAL);
        if let Some(old) = self
            .peer_watch
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replace(task)
        {
            old.abort();
        }
    }

    /// Opens and registers a control connection on the first upstream node that accepts,
    /// starting at `*next`. `None` when none does (or no login is known yet).
    async fn open_control(
        &self,
        next: &mut usize,
    ) -> Option<(Arc<Connection>, tokio::sync::mpsc::UnboundedReceiver<Event>)> {
        let creds = if self.auth_required() {
            // Any role may listen to events: use a login a client proved upstream.
            let logins = self.logins.read().unwrap_or_else(PoisonError::into_inner);
            Some(logins.values().next()?.0.clone())
        } else {
            None
        };
        let timeout = self.settings.connect_timeout;
        for _ in 0..self.hosts.len() {
            let addr = self.hosts[*next % self.hosts.len()];
            *next = next.wrapping_add(1);
            let (conn, rx) = match Connection::open_for_events(
                addr,
                ProtocolVersion::V4,
                creds.as_ref(),
                timeout,
            )
            .await
            {
                Ok(c) => c,
                Err(e) => {
                    tracing::debug!("control connection to {addr}: {e}");
                    continue;
                }
            };
            let register = Request::Register(vec!["SCHEMA_CHANGE".into()]);
            match conn.request(&register, timeout).await {
                Ok(Response::Ready) => {
                    tracing::info!(
                        "control connection to upstream {addr}: relaying schema changes"
                    );
                    return Some((conn, rx));
                }
                Ok(other) => {
                    tracing::warn!("upstream {addr} refused REGISTER: {other:?}")
                }
                Err(e) => tracing::debug!("control connection to {addr}: {e}"),
            }
        }
        None
    }

    /// Drops remembered statements on a dropped table, so EXECUTE answers UNPREPARED and the
    /// driver prepares again against the new schema.
    fn forget_prepared(&self, on: impl Fn(&TableRef) -> bool) {
        self.prepared
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|_, info| !info.pk.as_ref().is_some_and(|(t, _, _)| on(t)));
    }

    /// Forgets what is known of the clustering columns of the tables `on` selects.
    fn forget_clustering(&self, on: impl Fn(&TableRef) -> bool) {
        self.clustering_free
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|t, _| !on(t));
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

    async fn prepare(&self, conn: &ConnState, ctx: &Ctx, p: Prepare) -> Response {
        let ks = p
            .keyspace
            .clone()
            .or_else(|| conn.keyspace().map(|k| k.to_string()));
        let pool_ks = conn.keyspace();
        let query = p.query.clone();
        let resp = self
            .forward(conn, ctx, pool_ks.as_deref(), &Request::Prepare(p), false)
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
            let result_names: Vec<String> = prep
                .result_metadata
                .columns
                .iter()
                .map(|c| c.name.clone())
                .collect();
            let (read_shape, write_patch) = self
                .patch_shapes(conn, &query, &class, &pk, &cache_read, cols, &result_names)
                .await;
            let info = PreparedInfo {
                query,
                keyspace: ks,
                class,
                pk,
                cache_read,
                result_names,
                read_shape,
                write_patch,
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

    /// Whether a prepared statement takes part in in-place cache updates: a point read of
    /// plain columns restricted by exactly its partition key (its result column names), or an
    /// INSERT / UPDATE of bound values of simple types naming its whole partition key (its
    /// [`WritePatch`]), in either case of a table known to have no clustering columns (asked of
    /// the upstream once per table). See `execute_patching`.
    #[allow(clippy::too_many_arguments)]
    async fn patch_shapes(
        &self,
        conn: &ConnState,
        query: &str,
        class: &Class,
        pk: &Option<(TableRef, Vec<usize>, bool)>,
        cache_read: &Option<TableRef>,
        binds: &[ColumnSpec],
        result_names: &[String],
    ) -> (Option<Arc<[String]>>, Option<Arc<WritePatch>>) {
        let Some((table, idx, true)) = pk else {
            return (None, None);
        };
        let simple_binds = binds.iter().all(|c| {
            c.table == table.table
                && c.keyspace == table.keyspace
                && (canonical_type(&c.ty) || matches!(c.ty, ColumnType::Double | ColumnType::Float))
        });
        let names_pk = |keys: &[(String, usize)]| {
            keys.len() == idx.len() && keys.iter().all(|(_, i)| idx.contains(i))
        };
        let (read, write) = match (classify::patch_shape(query), class) {
            (Some(PatchShape::PointRead), Class::Select { eq_binds, .. })
                if cache_read.is_some() && eq_binds.len() == idx.len() =>
            {
                (Some(result_names.into()), None)
            }
            (Some(PatchShape::Insert { columns }), Class::Write { single: true, .. })
                if columns.len() == binds.len() && simple_binds =>
            {
                let (keys, sets): (Vec<_>, Vec<_>) = columns
                    .into_iter()
                    .enumerate()
                    .map(|(i, c)| (c, i))
                    .partition(|(_, i)| idx.contains(i));
                let patch = WritePatch {
                    sets,
                    keys,
                    row_marker: true,
                    deletes_row: false,
                };
                (None, names_pk(&patch.keys).then(|| Arc::new(patch)))
            }
            (Some(PatchShape::Update { sets, keys }), Class::Write { single: true, .. })
                if simple_binds && names_pk(&keys) =>
            {
                let patch = WritePatch {
                    sets,
                    keys,
                    row_marker: false,
                    deletes_row: false,
                };
                (None, Some(Arc::new(patch)))
            }
            (Some(PatchShape::Delete { keys }), Class::Write { single: true, .. })
                if simple_binds && names_pk(&keys) =>
            {
                let patch = WritePatch {
                    sets: Vec::new(),
                    keys,
                    row_marker: false,
                    deletes_row: true,
                };
                (None, Some(Arc::new(patch)))
            }
            _ => (None, None),
        };
        if read.is_none() && write.is_none() {
            return (None, None);
        }
        if !self.cache.enabled() || self.clustering_free(conn, table).await != Some(true) {
            return (None, None);
        }
        (read, write)
    }

    /// Whether `table` has no clustering columns: remembered, else asked of the upstream's
    /// `system_schema.columns`. `None` when the upstream did not say.
    async fn clustering_free(&self, conn: &ConnState, table: &TableRef) -> Option<bool> {
        if let Some(&known) = self
            .clustering_free
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(table)
        {
            return Some(known);
        }
        let quote = |s: &str| s.replace('\'', "''");
        let q = Request::Query(Query {
            query: format!(
                "SELECT kind FROM system_schema.columns WHERE keyspace_name = '{}' AND table_name = '{}'",
                quote(&table.keyspace),
                quote(&table.table)
            ),
            params: QueryParams::default(),
        });
        let Response::Result(ResultBody::Rows(rows)) =
            self.forward(conn, &Ctx::default(), None, &q, false).await
        else {
            return None;
        };
        let kinds = rows.decode_rows().ok()?;
        if kinds.is_empty() {
            return None; // no such table (yet)
        }
        let free = !kinds
            .iter()
            .any(|r| matches!(r.first(), Some(Value::Varchar(k)) if k == "clustering"));
        self.clustering_free
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(table.clone(), free);
        Some(free)
    }

    /// Starts a prepared INSERT, UPDATE or DELETE with a [`WritePatch`] (see
    /// `Cache::write_started`), or `None` when this execution cannot patch: named values, or a
    /// null partition key. A client `timestamp` goes with the write: the cache patches only
    /// where it wins.
    fn start_patching_write(
        &self,
        info: &PreparedInfo,
        values: &Values,
        timestamp: Option<i64>,
    ) -> Option<PatchingWrite> {
        let (Some(patch), Some((table, idx, true))) = (&info.write_patch, &info.pk) else {
            return None;
        };
        let Values::Positional(raw) = values else {
            return None;
        };
        if !patch.fits(raw.len()) {
            return None;
        }
        let pk = partition_key(values, idx)?;
        let ticket = self
            .cache
            .write_started(&table.keyspace, &table.table, &pk, timestamp);
        Some(PatchingWrite {
            ticket,
            patch: patch.clone(),
            values: raw.clone(),
        })
    }

    /// Ends a write begun by [`ProxyBackend::start_patching_write`] with the upstream's answer:
    /// an acknowledgement patches, anything else leaves the partition invalidated.
    fn finish_patching_write(&self, w: PatchingWrite, resp: &Response) {
        if let Response::Result(ResultBody::Void) = resp {
            self.cache.write_acknowledged(w.ticket, &|rows, names| {
                patch_rows(rows, names, &w.patch, &w.values)
            });
        } else {
            self.cache.write_failed(w.ticket);
        }
    }

    /// An EXECUTE of a write that patches the cached results of its partition in place (see
    /// `Cache::write_acknowledged`) instead of only invalidating them, or `Err(x)` when it
    /// cannot (see [`ProxyBackend::start_patching_write`]).
    async fn execute_patching(
        &self,
        conn: &ConnState,
        ctx: &Ctx,
        info: &PreparedInfo,
        x: Execute,
    ) -> Result<Response, Execute> {
        let Some(write) =
            self.start_patching_write(info, &x.params.values, x.params.default_timestamp)
        else {
            return Err(x);
        };
        let req = Request::Execute(x);
        let resp = self
            .forward(conn, ctx, info.keyspace.as_deref(), &req, true)
            .await;
        self.finish_patching_write(write, &resp);
        Ok(resp)
    }

    async fn execute(&self, conn: &ConnState, ctx: &Ctx, x: Execute) -> Response {
        let Some(info) = self.prepared_info(&x.id) else {
            return Response::Error(DbError::unprepared(x.id));
        };
        let ks = info.keyspace.clone();
        if let Class::Local(which) = info.class {
            let req = Request::Execute(x);
            return self
                .local_read(conn, ctx, which, ks.as_deref(), &req, Some(&info))
                .await;
        }
        if let (Some(table), false) = (&info.cache_read, bypasses_cache(&ctx.flags)) {
            if let Some(key) = self.cache_key(conn, &x, &info) {
                // `handle_now` already missed DRAM for this request.
                if let Some(hit) = self.cache.lookup_ssd(&key, Instant::now()).await {
                    return Response::Result(ResultBody::Encoded(hit.body));
                }
                let (resp, unused_key) = self.read_and_fill(conn, ctx, &info, table, key, x).await;
                if let (Response::Error(e), Some(key)) = (&resp, unused_key) {
                    if upstream_failure(e) && self.serves_stale(table) {
                        // Only a result no write or schema change seen here invalidated.
                        let current = self.cache.ticket(&key);
                        if let Some(rows) = self.stale.get(key.bytes(), current) {
                            tracing::debug!("upstream failed ({e}); served a stale result");
                            self.metrics.stale_served.fetch_add(1, Ordering::Relaxed);
                            return Response::Result(ResultBody::Rows((*rows).clone()));
                        }
                    }
                }
                return resp;
            }
        }
        let x = match self.execute_patching(conn, ctx, &info, x).await {
            Ok(resp) => return resp,
            Err(x) => x,
        };
        let write = info.class.is_write();
        let req = Request::Execute(x);
        let resp = self.forward(conn, ctx, ks.as_deref(), &req, write).await;
        if let Request::Execute(x) = &req {
            self.invalidate_prepared(&info, &x.params.values, &resp);
        }
        resp
    }

    /// Reads a cacheable EXECUTE upstream and offers its result to the cache (and to the
    /// stale store of `serve_stale_on_upstream_error` tables), with a ticket taken before the
    /// read went out. For a miss and for a background refresh alike. The key comes back when
    /// no result was offered (an error, for the serve-stale lookup).
    async fn read_and_fill(
        &self,
        conn: &ConnState,
        ctx: &Ctx,
        info: &PreparedInfo,
        table: &TableRef,
        key: cache::CacheKey,
        x: Execute,
    ) -> (Response, Option<cache::CacheKey>) {
        let ticket = self.cache.ticket(&key);
        let started = Instant::now();
        let req = Request::Execute(x);
        let resp = self
            .forward(conn, ctx, info.keyspace.as_deref(), &req, false)
            .await;
        let Response::Result(ResultBody::Rows(rows)) = &resp else {
            return (resp, Some(key));
        };
        if self.serves_stale(table) {
            self.stale.put(Box::from(key.bytes()), ticket, rows.clone());
        }
        self.cache.insert_shaped(
            key,
            ticket,
            rows.clone(),
            started,
            self.staleness(table),
            info.read_shape.clone(),
        );
        (resp, None)
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

    /// The cache key of an EXECUTE of a cacheable read, or `None` when this execution is not
    /// cacheable (serial read, named or null key values, a fixed `now`).
    fn cache_key(
        &self,
        conn: &ConnState,
        x: &Execute,
        info: &PreparedInfo,
    ) -> Option<cache::CacheKey> {
        let table = info.cache_read.as_ref()?;
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
            conn.version(),
            &table.keyspace,
            &table.table,
            &pk,
            &req,
        ))
    }

    async fn batch(&self, conn: &ConnState, ctx: &Ctx, b: Batch) -> Response {
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
        // Prepared writes that can patch start before the batch goes upstream, as an EXECUTE
        // would (all statements of a batch share its timestamp). Two in one partition: the
        // second start moves the stripe past the first's, so both only invalidate.
        let mut patching: Vec<Option<PatchingWrite>> = b
            .statements
            .iter()
            .zip(&infos)
            .map(|(s, info)| match (s, info) {
                (BatchStatement::Prepared { values, .. }, Ok(info))
                    if !matches!(b.kind, BatchKind::Counter) =>
                {
                    self.start_patching_write(info, values, b.default_timestamp)
                }
                _ => None,
            })
            .collect();
        let conn_ks = conn.keyspace();
        let req = Request::Batch(b);
        let resp = self
            .forward(conn, ctx, conn_ks.as_deref(), &req, true)
            .await;
        let Request::Batch(b) = &req else {
            return resp;
        };
        for ((s, info), write) in b.statements.iter().zip(&infos).zip(&mut patching) {
            if let Some(w) = write.take() {
                self.finish_patching_write(w, &resp);
                continue;
            }
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
        ctx: &Ctx,
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
        let resp = self.forward(conn, ctx, pool_ks, req, false).await;
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
        match self.forward(conn, &Ctx::default(), None, &q, false).await {
            Response::Result(ResultBody::Rows(rows)) => {
                let names = column_names(&rows, None);
                topology::facts_of(&rows, &names)
            }
            _ => topology::ClusterFacts::default(),
        }
    }
}

/// Keeps the control connection open while the backend lives (see
/// [`ProxyBackend::relay_upstream_events`]).
async fn relay_loop(me: Weak<ProxyBackend>, bus: EventBus) {
    let mut next = 0;
    loop {
        let opened = match me.upgrade() {
            Some(b) => b.open_control(&mut next).await,
            None => return,
        };
        let Some((conn, mut rx)) = opened else {
            tokio::time::sleep(CONTROL_RETRY).await;
            continue;
        };
        // Events may have been missed while no control connection was open.
        match me.upgrade() {
            Some(b) => b.cache.invalidate_all(),
            None => return,
        }
        let mut ping = tokio::time::interval(CONTROL_PING);
        ping.tick().await;
        let mut last_answer = Instant::now();
        loop {
            tokio::select! {
                ev = rx.recv() => {
                    let Some(ev) = ev else { break };
                    let Some(b) = me.upgrade() else { return };
                    if let Event::SchemaChange(sc) = ev {
                        tracing::debug!("upstream schema change: {sc:?}");
                        b.schema_changed(&sc);
                        if !b.take_own_ddl(&sc) {
                            bus.publish(Event::SchemaChange(sc));
                        }
                    }
                }
                _ = ping.tick() => {
                    // A slow answer loses no event (they queue behind it on the connection);
                    // only a closed connection, or one silent for CONTROL_SILENT, is replaced.
                    match conn.request(&Request::Options, CONTROL_PING).await {
                        Ok(_) => last_answer = Instant::now(),
                        Err(UpstreamError::Timeout { .. })
                            if last_answer.elapsed() < CONTROL_SILENT => {}
                        Err(e) => {
                            tracing::info!("control connection to upstream {} lost ({e}); reopening", conn.addr());
                            break;
                        }
                    }
                }
            }
        }
        conn.retire();
        tokio::time::sleep(CONTROL_RETRY).await;
    }
}

/// Errors that mean the upstream could not answer (as opposed to a bad request), after which
/// a `serve_stale_on_upstream_error` table may answer from its last result.
fn upstream_failure(e: &DbError) -> bool {
    matches!(
        e,
        DbError::Unavailable { .. }
            | DbError::ReadTimeout { .. }
            | DbError::ReadFailure { .. }
            | DbError::Overloaded { .. }
            | DbError::IsBootstrapping { .. }
            | DbError::ServerError { .. }
    )
}

/// The last results of `serve_stale_on_upstream_error` tables, kept apart from the cache so
/// that an entry past its `max_staleness` (or evicted) can still answer when the upstream
/// fails. Bounded in bytes (a quarter of `cache_bytes`; the row data is shared with the
/// cache's copy while both hold it); the least recently stored goes first. An entry is served
/// only while its generation ticket is current, so never after a write or schema change this
/// proxy saw.
struct StaleStore {
    budget: usize,
    inner: Mutex<StaleInner>,
}

#[derive(Default)]
struct StaleInner {
    map: HashMap<Box<[u8]>, StaleEntry>,
    order: BTreeMap<u64, Box<[u8]>>,
    seq: u64,
    bytes: usize,
}

struct StaleEntry {
    seq: u64,
    ticket: cache::Ticket,
    rows: Arc<Rows>,
    size: usize,
}

impl StaleStore {
    fn new(budget: usize) -> Self {
        StaleStore {
            budget,
            inner: Mutex::new(StaleInner::default()),
        }
    }

    fn put(&self, key: Box<[u8]>, ticket: cache::Ticket, rows: Rows) {
        let size = key.len() + rows.data.len() + rows.metadata.columns.len() * 48 + 128;
        if size > self.budget {
            return;
        }
        let mut s = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        s.remove(&key);
        while s.bytes + size > self.budget {
            let Some((_, oldest)) = s.order.pop_first() else {
                break;
            };
            s.remove(&oldest);
        }
        s.seq += 1;
        let seq = s.seq;
        s.order.insert(seq, key.clone());
        s.bytes += size;
        s.map.insert(
            key,
            StaleEntry {
                seq,
                ticket,
                rows: Arc::new(rows),
                size,
            },
        );
    }

    /// The kept result, if its ticket is still `current`.
    fn get(&self, key: &[u8], current: cache::Ticket) -> Option<Arc<Rows>> {
        let s = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        s.map
            .get(key)
            .filter(|e| e.ticket == current)
            .map(|e| e.rows.clone())
    }
}

impl StaleInner {
    fn remove(&mut self, key: &[u8]) {
        if let Some(e) = self.map.remove(key) {
            self.order.remove(&e.seq);
            self.bytes -= e.size;
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

impl ProxyBackend {
    /// One request of an established connection, with its flags in `ctx`.
    async fn dispatch(&self, conn: &ConnState, ctx: &Ctx, req: Request) -> Response {
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
            Request::Query(q) => self.query(conn, ctx, q).await,
            Request::Prepare(p) => self.prepare(conn, ctx, p).await,
            Request::Execute(x) => self.execute(conn, ctx, x).await,
            Request::Batch(b) => self.batch(conn, ctx, b).await,
            Request::AuthResponse(_)
            | Request::Startup(_)
            | Request::Options
            | Request::Register(_) => Response::Error(DbError::protocol(
                "Unexpected message: handled by the connection, not the backend",
            )),
        }
    }
}

/// What a prepared INSERT, UPDATE or whole-row DELETE does to a row, by bind marker index
/// (see `patch_rows`).
#[derive(Debug)]
struct WritePatch {
    /// Regular columns set.
    sets: Vec<(String, usize)>,
    /// The partition key columns.
    keys: Vec<(String, usize)>,
    /// INSERT: the row exists afterwards whatever the values (row marker); UPDATE: only
    /// through its non-null cells.
    row_marker: bool,
    /// DELETE of the whole row (of the partition: the table has no clustering columns).
    deletes_row: bool,
}

impl WritePatch {
    /// Whether `n` bound values are what the statement takes.
    fn fits(&self, n: usize) -> bool {
        self.sets.iter().chain(&self.keys).all(|(_, i)| *i < n)
    }
}

/// The result of a point read (`names`: its column names) after the write `p` with bound
/// `values`, or `None` when it cannot be computed from them: more than one row, a paged result,
/// or an UPDATE that nulls a cell of an existing row (whether the row survives depends on
/// cells the proxy has not seen).
fn patch_rows(rows: &Rows, names: &[String], p: &WritePatch, values: &[RawValue]) -> Option<Rows> {
    if rows.metadata.paging_state.is_some() || rows.rows_count > 1 {
        return None;
    }
    let old: Vec<Option<&[u8]>> = rows.cells().collect();
    if old.len() != names.len() * rows.rows_count as usize {
        return None;
    }
    if p.deletes_row {
        return Some(Rows {
            rows_count: 0,
            data: Bytes::new(),
            metadata: rows.metadata.clone(),
        });
    }
    let sets = || p.sets.iter().map(|(_, i)| &values[*i]);
    let exists = rows.rows_count == 1;
    if !exists && !p.row_marker && !sets().any(|v| matches!(v, RawValue::Bytes(_))) {
        return Some(rows.clone()); // an UPDATE that sets nothing leaves no row
    }
    let value_of = |name: &String| {
        p.sets
            .iter()
            .chain(&p.keys)
            .find(|(c, _)| c == name)
            .map(|(_, i)| &values[*i])
    };
    let cells: Vec<Option<&[u8]>> = names
        .iter()
        .enumerate()
        .map(|(i, name)| match (value_of(name), exists) {
            (Some(RawValue::Bytes(v)), _) => Some(&v[..]),
            (Some(RawValue::Null), _) => None,
            // Not written: the old cell, or nothing in a row the write creates.
            (Some(RawValue::Unset) | None, true) => old[i],
            (Some(RawValue::Unset) | None, false) => None,
        })
        .collect();
    // An UPDATE that nulls cells of an existing row: the row survives if a cell the result
    // shows is still live; if none is, it depends on cells (or a row marker) not seen here.
    let is_key = |name: &String| p.keys.iter().any(|(k, _)| k == name);
    if exists
        && !p.row_marker
        && sets().any(|v| matches!(v, RawValue::Null))
        && !names
            .iter()
            .zip(&cells)
            .any(|(name, cell)| cell.is_some() && !is_key(name))
    {
        return None;
    }
    let mut b = RowsBuilder::with_capacity(rows.data.len() + 64);
    for cell in cells {
        b.push_cell(cell);
    }
    b.end_row();
    Some(b.finish(rows.metadata.clone()))
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
    /// A cacheable EXECUTE found in the DRAM tier is answered here, without a task.
    fn handle_now(&self, conn: &ConnState, req: Request, flags: &RequestFlags) -> Now {
        let Request::Execute(x) = &req else {
            return Now::Later(req);
        };
        if bypasses_cache(flags) {
            return Now::Later(req);
        }
        if self.auth_required() && conn.role().is_none() {
            return Now::Later(req);
        }
        let Some(info) = self.prepared_info(&x.id) else {
            return Now::Later(req);
        };
        let Some(key) = self.cache_key(conn, x, &info) else {
            return Now::Later(req);
        };
        match self.cache.get_with_refresh(&key, Instant::now()) {
            Some((hit, refresh)) => {
                self.cache.stats.hits.fetch_add(1, Ordering::Relaxed);
                let resp = Response::Result(ResultBody::Encoded(hit.body));
                if !refresh {
                    return Now::Answered(resp);
                }
                if self.refreshes.fetch_add(1, Ordering::AcqRel) >= MAX_REFRESHES {
                    self.refreshes.fetch_sub(1, Ordering::AcqRel);
                    self.metrics
                        .refreshes_skipped
                        .fetch_add(1, Ordering::Relaxed);
                    self.cache.refresh_abandoned(&key);
                    return Now::Answered(resp);
                }
                Now::AnsweredThenRefresh(resp, req)
            }
            None => Now::Later(req),
        }
    }

    /// The background refresh of a hot cache entry `handle_now` asked for: the read goes
    /// upstream again and its result replaces the entry (unless a write intervened).
    async fn refresh(&self, conn: &ConnState, req: Request) {
        struct InFlight<'a>(&'a AtomicUsize);
        impl Drop for InFlight<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::AcqRel);
            }
        }
        let _in_flight = InFlight(&self.refreshes);
        let tick = REFRESH_TICK.as_nanos();
        let since = self.started.elapsed().as_nanos();
        let wait = Duration::from_nanos((tick - since % tick) as u64);
        tokio::time::sleep(wait).await;
        let Request::Execute(x) = req else {
            return;
        };
        let Some(info) = self.prepared_info(&x.id) else {
            return;
        };
        let (Some(table), Some(key)) = (&info.cache_read, self.cache_key(conn, &x, &info)) else {
            return;
        };
        let (resp, _) = self
            .read_and_fill(conn, &Ctx::default(), &info, table, key, x)
            .await;
        match resp {
            Response::Error(e) => tracing::debug!("background refresh failed: {e}"),
            _ => {
                self.metrics.refreshes.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// The tracing flag and the custom payload go upstream; the upstream's tracing session id,
    /// warnings and custom payload come back in front of the response.
    async fn handle(&self, conn: &ConnState, req: Request, flags: RequestFlags) -> Reply {
        let ctx = Ctx {
            flags,
            ..Ctx::default()
        };
        let response = self.dispatch(conn, &ctx, req).await;
        Reply {
            response,
            extras: ctx
                .extras
                .into_inner()
                .unwrap_or_else(PoisonError::into_inner),
        }
    }

    fn authenticator(&self) -> Option<String> {
        self.auth_class
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|_| PASSWORD_AUTHENTICATOR.to_string())
    }

    fn shutdown(&self) -> impl std::future::Future<Output = ()> + Send {
        if let Some(task) = self
            .relay
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            task.abort();
        }
        async {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use proto::response::RowsMetadata;

    fn rows(n: usize) -> Rows {
        Rows {
            metadata: RowsMetadata::default(),
            rows_count: 1,
            data: Bytes::from(vec![1u8; n]),
        }
    }

    #[test]
    fn stale_store_serves_only_current_tickets_within_its_budget() {
        let cache = Cache::new(1 << 20, 1 << 16);
        let key = |pk: &[u8]| cache::CacheKey::new(ProtocolVersion::V4, "ks", "t", pk, b"q");
        let stale_key = |pk: &[u8]| Box::<[u8]>::from(key(pk).bytes());
        let store = StaleStore::new(4096);
        let (a, b) = (stale_key(b"a"), stale_key(b"b"));
        store.put(a.clone(), cache.ticket(&key(b"a")), rows(100));
        let tb = cache.ticket(&key(b"b"));
        store.put(b.clone(), tb, rows(100));
        assert!(store.get(&a, cache.ticket(&key(b"a"))).is_some());
        // A write through the proxy to `a` bumps its generation: never served stale again.
        cache.invalidate_partition("ks", "t", b"a");
        assert!(store.get(&a, cache.ticket(&key(b"a"))).is_none());
        // `b` stays servable (unless it shares `a`'s stripe: a spurious miss, never stale).
        let current = cache.ticket(&key(b"b"));
        assert_eq!(store.get(&b, current).is_some(), current == tb);
        // The budget holds: the oldest entries go first.
        for i in 0..100u32 {
            let k = stale_key(&i.to_be_bytes());
            store.put(k, cache.ticket(&key(&i.to_be_bytes())), rows(500));
        }
        let inner = store.inner.lock().unwrap();
        assert!(inner.bytes <= 4096 && !inner.map.is_empty());
        assert!(!inner.map.contains_key(&b));
        // Too large for the budget: not kept.
        drop(inner);
        let big = stale_key(b"big");
        store.put(big.clone(), cache.ticket(&key(b"big")), rows(10_000));
        assert!(store.get(&big, cache.ticket(&key(b"big"))).is_none());
    }

    #[tokio::test]
    async fn a_request_never_outlives_request_timeout() {
        // An upstream that accepts TCP but never answers (a stopped process), a connect
        // timeout far longer than the request timeout: the answer still comes in time.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut config = Config {
            upstream: vec![listener.local_addr().unwrap()],
            request_timeout: Duration::from_millis(300),
            ..Config::default()
        };
        config.proxy.connect_timeout = Duration::from_millis(100);
        let backend = ProxyBackend::connect(&config).await;
        let backend = ProxyBackend {
            settings: Settings {
                connect_timeout: Duration::from_secs(30),
                ..backend.settings.clone()
            },
            ..backend
        };
        let conn = ConnState::new(
            1,
            ProtocolVersion::V4,
            SocketAddr::from(([127, 0, 0, 1], 1)),
            None,
            Vec::new(),
        );
        let started = Instant::now();
        let q = Request::Query(Query {
            query: "SELECT * FROM ks.t WHERE k = 1".into(),
            params: QueryParams::default(),
        });
        let resp = backend.handle(&conn, q, RequestFlags::default()).await.response;
        let took = started.elapsed();
        assert!(
            matches!(resp, Response::Error(DbError::Unavailable { .. })),
            "{resp:?}"
        );
        assert!(took < Duration::from_secs(2), "took {took:?}");
        drop(listener);
    }

    #[test]
    fn a_write_patches_a_point_read_result() {
        let names: Vec<String> = ["k", "v", "n"].iter().map(|s| s.to_string()).collect();
        let insert = WritePatch {
            sets: vec![("v".into(), 1)],
            keys: vec![("k".into(), 0)],
            row_marker: true,
            deletes_row: false,
        };
        let update = WritePatch {
            sets: vec![("v".into(), 0)],
            keys: vec![("k".into(), 1)],
            row_marker: false,
            deletes_row: false,
        };
        let delete = WritePatch {
            sets: Vec::new(),
            keys: vec![("k".into(), 0)],
            row_marker: false,
            deletes_row: true,
        };
        let one_row = |cells: [Option<&[u8]>; 3]| {
            let mut b = RowsBuilder::new();
            for c in cells {
                b.push_cell(c);
            }
            b.end_row();
            b.finish(Default::default())
        };
        let old = one_row([Some(b"1"), Some(b"a"), Some(b"7")]);
        let empty = RowsBuilder::new().finish(Default::default());
        let k = || RawValue::Bytes(Bytes::from_static(b"1"));
        let b = || RawValue::Bytes(Bytes::from_static(b"b"));
        let ins = |v: RawValue| vec![k(), v];
        let upd = |v: RawValue| vec![v, k()];
        // A set cell replaced, an unset one kept, a null one cleared.
        let got = patch_rows(&old, &names, &insert, &ins(b())).unwrap();
        assert_eq!(got, one_row([Some(b"1"), Some(b"b"), Some(b"7")]));
        assert_eq!(
            patch_rows(&old, &names, &insert, &ins(RawValue::Unset)).unwrap(),
            old
        );
        let got = patch_rows(&old, &names, &insert, &ins(RawValue::Null)).unwrap();
        assert_eq!(got, one_row([Some(b"1"), None, Some(b"7")]));
        assert_eq!(
            patch_rows(&old, &names, &update, &upd(b())).unwrap(),
            one_row([Some(b"1"), Some(b"b"), Some(b"7")])
        );
        // No row yet: the INSERT creates it, columns it does not set are null.
        let got = patch_rows(&empty, &names, &insert, &ins(b())).unwrap();
        assert_eq!(got, one_row([Some(b"1"), Some(b"b"), None]));
        let got = patch_rows(&empty, &names, &insert, &ins(RawValue::Null)).unwrap();
        assert_eq!(
            got,
            one_row([Some(b"1"), None, None]),
            "INSERT's row marker"
        );
        // An UPDATE creates a row only through a value. Nulling a cell of a row keeps it when
        // another cell shown stays live; with none live, whether it survives is unknown.
        assert_eq!(
            patch_rows(&empty, &names, &update, &upd(b())).unwrap(),
            one_row([Some(b"1"), Some(b"b"), None])
        );
        assert_eq!(
            patch_rows(&empty, &names, &update, &upd(RawValue::Null)).unwrap(),
            empty
        );
        assert_eq!(
            patch_rows(&old, &names, &update, &upd(RawValue::Null)).unwrap(),
            one_row([Some(b"1"), None, Some(b"7")])
        );
        let without_n = one_row([Some(b"1"), Some(b"a"), None]);
        assert!(patch_rows(&without_n, &names, &update, &upd(RawValue::Null)).is_none());
        // A whole-row DELETE leaves no row.
        assert_eq!(patch_rows(&old, &names, &delete, &[k()]).unwrap(), empty);
        // Two rows or a paged result: not computable.
        let mut two = RowsBuilder::new();
        for _ in 0..2 {
            for c in [Some(&b"1"[..]), None, None] {
                two.push_cell(c);
            }
            two.end_row();
        }
        let two = two.finish(Default::default());
        assert!(patch_rows(&two, &names, &insert, &ins(b())).is_none());
        let mut paged = old.clone();
        paged.metadata.paging_state = Some(Bytes::from_static(b"p"));
        assert!(patch_rows(&paged, &names, &insert, &ins(b())).is_none());
    }

    #[test]
    fn only_upstream_failures_fall_back_to_stale_results() {
        assert!(upstream_failure(&DbError::Unavailable {
            message: String::new(),
            consistency: Consistency::One,
            required: 1,
            alive: 0,
        }));
        assert!(upstream_failure(&DbError::server("x")));
        assert!(!upstream_failure(&DbError::invalid("bad query")));
    }
}
