//! `proxy`: Peregrine's proxy mode, a read-caching front for a real Cassandra cluster,
//! behind the front end's [`server::Backend`] trait.
//!
//! **What it is:** [`ProxyBackend`]. Every request is forwarded to the upstream cluster over
//! the proxy's own connections (`upstream`), except:
//! - EXECUTE of a prepared single-partition SELECT, answered from the DRAM cache (`cache`) when
//!   a valid entry exists, and stored there after a miss;
//! - `USE ks`, answered after a connection of the (role, version, ks) pool opened with that
//!   keyspace (so a shared upstream connection never switches keyspace);
//! - `system.local` / `system.peers` / `system.peers_v2`, read upstream and rewritten to show
//!   the proxies (`topology`), and `system_views.peregrine_cache`, the metrics (`metrics`);
//! - AUTH_RESPONSE, checked by logging in upstream with the same credentials (`login`).
//!
//! Pass-through is lazy: a forwarded request goes upstream as the client's message body
//! (`RequestFlags::body`; only the envelope is the proxy's), and a Rows answer comes back as the
//! upstream's RESULT body (`ResultBody::Encoded`), relayed as is; a cache fill stores that
//! body as received. Rows are decoded only where a decision needs them (`forward::decoded_rows`:
//! topology, schema questions; a fill decodes the metadata over the stored bytes).
//!
//! Writes (INSERT, UPDATE, DELETE, BATCH, TRUNCATE, DDL, anything unparsed) invalidate what
//! they may touch *before* their answer goes back, whatever the answer (a timed-out write may
//! still have applied); some prepared writes patch cached results in place instead (`patch`).
//! See `docs/proxy.md` for the rules and what is not done yet.
//!
//! Upstream SCHEMA_CHANGE events arrive on one control connection
//! ([`ProxyBackend::relay_upstream_events`]): they invalidate the cache for what changed and
//! are pushed to the proxy's registered clients (except those of DDL that went through this
//! proxy, which the front end already announced). Every request, connecting included, is
//! bounded by `request_timeout`. Tables listed in `proxy.serve_stale_on_upstream_error` keep
//! their last results apart (`stale`) to answer cacheable reads the upstream failed.
//!
//! **What it is not:** not the front end (listener, framing, handshake, stream ids, the
//! writer: `server`, which this crate plugs into), not a CQL engine (it parses statement text
//! only to classify it, and never executes one), and not a driver: the upstream connections
//! are raw native-protocol connections built on `proto`. Its configuration is the `proxy:`
//! section of [`server::Config`] (one typed config for the process).
//!
//! # Module map
//! | module | what it holds |
//! |---|---|
//! | `dispatch` | the [`server::Backend`] impl: cache hits on the reader task, each request kind routed (QUERY, PREPARE, EXECUTE, BATCH), cache keys, fills and background refreshes |
//! | `login` | AUTH_RESPONSE: SASL PLAIN checked by logging in upstream, the authenticator announced |
//! | `forward` | one request upstream: the pool of (role, version, keyspace), the deadline, the UNPREPARED repair, failures mapped to the errors drivers expect |
//! | `control` | the control connection and event relay, invalidation on schema changes, waiting for schema agreement after DDL |
//! | `patch` | in-place updates: which prepared reads and writes take part, patching a cached point read with a write's values |
//! | `stale` | the last results of `serve_stale_on_upstream_error` tables, answered when the upstream fails |
//! | `upstream` | upstream connections (stream multiplexing, handshake, login) and pools; their bounds (in-flight stream ids, orphaned ids retiring a connection, answer size, pools, queued control events) |
//! | `classify` | statement text -> what it reads/writes, cacheability |
//! | `cache` | the cache: DRAM tier (TinyLFU admission, CLOCK eviction) over `ssd`, generation-based coherence |
//! | `ssd` | the SSD cache tier under the DRAM one: an `LsmStorage`, FIFO byte budget |
//! | `topology` | `system.local` / `system.peers*` answered by the proxy, token split among proxies |
//! | `metrics` | counters, latency histogram, the `system_views.peregrine_cache` rows |
//! | `admin` | `peregrine nodetool` in proxy mode (cache stats, invalidation; data commands refused as the upstream's) and the Prometheus names of the cache metrics |
//! | `peers` | probing the other proxies, STATUS_CHANGE `UP` / `DOWN` for them ([`ProxyBackend::watch_peers`]) |
//!
//! # Invariants
//! - A write's invalidation (or patch) happens before its answer is returned, so a client
//!   always reads its own writes through the proxy.
//! - A cached entry is served only while the versions of its partition, table, keyspace and
//!   the whole cache it was read under are current, and it is younger than its `max_staleness`.
//! - Every forwarded request, connecting and an UNPREPARED retry included, is answered within
//!   `request_timeout`.
//! - What an upstream node can make the proxy hold is bounded per connection: 2,048 requests
//!   in flight, answers of at most 256 MiB grown as their bytes arrive (`upstream`'s docs;
//!   tested against scripted upstreams in `bounds_tests`).
//! - Prepared statement ids are the upstream's; the proxy only remembers what it needs to
//!   classify and re-prepare them.

mod admin;
#[cfg(test)]
mod bounds_tests;
mod cache;
mod classify;
mod control;
mod dispatch;
mod forward;
mod login;
mod metrics;
#[cfg(test)]
mod passthrough_tests;
mod patch;
mod peers;
// Public only for its integration test (tests/ssd_encryption.rs: the cipher is process-wide, so
// that test needs a process of its own); not part of the crate's API.
#[doc(hidden)]
pub mod ssd;
mod stale;
mod topology;
mod upstream;

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use proto::frame::{Compression, Opcode, ProtocolVersion};
use proto::request::{RawValue, Request, Values};
use proto::response::{ResponseExtras, SchemaChange};
use rustc_hash::FxHashMap;
use server::config::UpstreamCompression;
use server::{Config, RequestFlags};

pub use cache::Cache;
use classify::{Class, TableRef};
use metrics::Metrics;
use patch::WritePatch;
use stale::StaleStore;
use topology::Topology;
use upstream::{Connection, Credentials, Pools, Settings, UpstreamError};

/// Pools are per (role, protocol version, keyspace).
type PoolKey = (Option<Arc<str>>, ProtocolVersion, Option<Arc<str>>);

/// One client request's envelope flags, and the envelope extras of the upstream's answer.
#[derive(Default)]
struct Ctx {
    /// The client's tracing flag and custom payload, passed upstream, and its message body as
    /// received (`RequestFlags::body`).
    flags: RequestFlags,
    /// The opcode of the client's request `flags.body` belongs to. A request of this opcode
    /// sent with this `Ctx` goes upstream as that body, not encoded again; the proxy's own
    /// requests (schema questions, re-PREPARE) go with `Ctx::default()`, which has none.
    body_of: Option<Opcode>,
    extras: Mutex<ResponseExtras>,
}

impl Ctx {
    /// The context of the client's request `req`.
    fn of_client(req: &Request, flags: RequestFlags) -> Ctx {
        Ctx {
            body_of: (!flags.body.is_empty()).then(|| req.opcode()),
            flags,
            ..Ctx::default()
        }
    }

    /// The client's body for `req`, when `req` is the client's request (same opcode): it is
    /// then sent as is.
    fn client_body(&self, req: &Request) -> Option<&Bytes> {
        (self.body_of == Some(req.opcode())).then_some(&self.flags.body)
    }
}

/// A traced request, or one with a custom payload (a custom query handler upstream may act on
/// it), is answered by the upstream, never from the cache.
fn bypasses_cache(flags: &RequestFlags) -> bool {
    flags.tracing || !flags.custom_payload.is_empty()
}

/// What a cacheable single-partition read's misses need of its table, resolved at PREPARE,
/// not per miss (the lookups by name format `ks.table`).
#[derive(Debug)]
struct CacheRead {
    /// The table's `max_staleness`.
    staleness: Duration,
    /// Whether the table is one of `serve_stale_on_upstream_error`'s.
    serves_stale: bool,
    /// The start of its cache keys.
    key_prefix: cache::TablePrefix,
}

/// What the proxy remembers of a statement prepared through it.
#[derive(Debug)]
struct PreparedInfo {
    query: String,
    keyspace: Option<String>,
    class: Class,
    /// The partition key's bind positions, in partition key order, and its table.
    pk: Option<(TableRef, Vec<usize>, bool)>,
    /// A cacheable single-partition read.
    cache_read: Option<CacheRead>,
    result_names: Vec<String>,
    /// A cacheable read whose cached results a write may patch: its result column names.
    read_shape: Option<Arc<[String]>>,
    /// A write that may patch cached results in place.
    write_patch: Option<Arc<WritePatch>>,
}

/// The proxy backend (see the module docs).
pub struct ProxyBackend {
    hosts: Arc<[SocketAddr]>,
    settings: Settings,
    request_timeout: Duration,
    pools: Pools<PoolKey>,
    logins: RwLock<HashMap<String, (Credentials, Instant)>>,
    auth_class: RwLock<Option<String>>,
    /// By statement id (the upstream's MD5 of the statement): Fx, since SipHash showed in the
    /// cache-hit profile (a third of the per-hit lookups' cost).
    prepared: RwLock<FxHashMap<Bytes, Arc<PreparedInfo>>>,
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
    /// Background cache refreshes in flight (at most `dispatch::MAX_REFRESHES`).
    refreshes: AtomicUsize,
    started: Instant,
}

/// The rustls client configuration for `proxy.upstream_encryption_options`, when enabled.
/// `Config::validate` read the files at start-up; if they broke since, connections go plain
/// no further: the error is logged and every upstream connect fails on it.
fn upstream_tls(options: &server::tls::EncryptionOptions) -> Option<Arc<rustls::ClientConfig>> {
    if !options.enabled {
        return None;
    }
    match options.client_config() {
        Ok(c) => Some(c),
        Err(e) => {
            tracing::error!("proxy.upstream_encryption_options: {e}");
            // An empty trust store: the handshake fails on every upstream, never plain text.
            // (The default provider always has suites for the safe versions: the `?` below
            // cannot be taken.)
            Some(Arc::new(
                rustls::ClientConfig::builder_with_provider(Arc::new(
                    rustls::crypto::aws_lc_rs::default_provider(),
                ))
                .with_safe_default_protocol_versions()
                .ok()?
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth(),
            ))
        }
    }
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
        let ssd = match p.cache_dir.clone() {
            Some(dir) => {
                let budget = p.ssd_cache_bytes;
                let keys = config
                    .encryption_at_rest
                    .key_file()
                    .map(std::path::Path::to_path_buf);
                let opened = tokio::task::spawn_blocking(move || {
                    let keys = keys
                        .map(|path| storage::KeySet::load(&path))
                        .transpose()
                        .map_err(ssd::SsdError::Storage)?;
                    ssd::SsdTier::open(&dir, budget, keys)
                })
                .await;
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
                tls: upstream_tls(&p.upstream_encryption_options),
            },
            request_timeout: config.request_timeout,
            pools: Pools::new(upstream::MAX_POOLS),
            logins: RwLock::new(HashMap::new()),
            auth_class: RwLock::new(None),
            prepared: RwLock::new(FxHashMap::default()),
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
                backend.settings.tls.as_ref(),
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

    pub(crate) fn staleness(&self, t: &TableRef) -> Duration {
        self.table_max_staleness
            .get(&format!("{}.{}", t.keyspace, t.table))
            .copied()
            .unwrap_or(self.max_staleness)
    }

    pub(crate) fn excluded(&self, t: &TableRef) -> bool {
        self.exclude
            .contains(&format!("{}.{}", t.keyspace, t.table))
            || self.exclude.contains(&format!("{}.*", t.keyspace))
    }

    pub(crate) fn serves_stale(&self, t: &TableRef) -> bool {
        !self.stale_tables.is_empty()
            && (self
                .stale_tables
                .contains(&format!("{}.{}", t.keyspace, t.table))
                || self.stale_tables.contains(&format!("{}.*", t.keyspace)))
    }

    pub(crate) fn prepared_info(&self, id: &[u8]) -> Option<Arc<PreparedInfo>> {
        self.prepared
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
    }
}

/// The partition key bytes: the bound values at `idx`, each length-prefixed. `None` when a
/// component is null/unset or values are named.
fn partition_key(values: &Values, idx: &[usize]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    write_partition_key(values, idx, &mut out)?;
    Some(out)
}

/// [`partition_key`] appended to `out` (which holds part of it on `None`).
fn write_partition_key(values: &Values, idx: &[usize], out: &mut Vec<u8>) -> Option<()> {
    let Values::Positional(v) = values else {
        return None;
    };
    for &i in idx {
        match v.get(i)? {
            RawValue::Bytes(b) => cache::put_prefixed(out, b),
            RawValue::Null | RawValue::Unset => return None,
        }
    }
    Some(())
}
