//! The one typed configuration of a Peregrine process.
//!
//! Every key, its type and its default live in [`Config`] and its `Default` impl; nothing else in
//! the code base invents a default. The file format is YAML (`peregrine serve --config F`); every
//! key is optional. Unknown keys are errors. [`Config::load`] reports *all* problems of a file at
//! once (each bad key, each failed check) instead of stopping at the first, so an operator fixes
//! a file in one round. `docs/configuration.md` documents the keys for users.

use std::fmt;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::audit::AuditLogOptions;
use crate::tls::EncryptionOptions;

/// Highest protocol stream id plus one (v3+ stream ids are 0..=32767 for requests).
pub const MAX_STREAM_IDS: u32 = 32_768;

/// The process configuration. See `docs/configuration.md` for the user-facing description.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Address the CQL native protocol listener binds to. Default `127.0.0.1:9042`.
    pub listen: SocketAddr,
    /// Directory holding the storage engine's files. Default `./data`.
    pub data_dir: PathBuf,
    /// Largest accepted envelope body, in bytes, after decompression checks on the declared
    /// length. Default 256 MiB (Cassandra 3.x's `native_transport_max_frame_size`; Cassandra 4+
    /// defaults to 16 MiB). Applies to v3/v4 envelopes and to v5 envelopes carried in segments
    /// alike. Larger frames get a ProtocolError and the connection is closed.
    pub max_frame_bytes: usize,
    /// Most client connections open at once; more are accepted, answered with an error, and
    /// closed. Default 4096.
    pub max_connections: usize,
    /// Most requests in flight on one connection (1..=32768). A request over the limit is
    /// answered with Overloaded. Default 32768 (the whole v3+ stream id space).
    pub max_streams_per_connection: u32,
    /// Most connections open at once from one client address (Cassandra's key); more are
    /// refused like connections over `max_connections`. -1 (the default) means no limit.
    pub native_transport_max_concurrent_connections_per_ip: i64,
    /// Request bytes (envelope bodies) read and not yet answered, over all connections
    /// (Cassandra's key; a byte count or a size such as `256MiB`). Past it the server stops
    /// reading requests until answers go out, or answers Overloaded to a client that asked for
    /// it with the STARTUP option `THROW_ON_OVERLOAD`. Default 256 MiB.
    #[serde(with = "bytes_str")]
    pub native_transport_max_request_data_in_flight: u64,
    /// The same bound per client address. Default 64 MiB.
    #[serde(with = "bytes_str")]
    pub native_transport_max_request_data_in_flight_per_ip: u64,
    /// Answer bytes one connection may have waiting for a client that does not read them;
    /// past it the server stops reading that connection's requests and holds back the ones
    /// already read until the client catches up (backpressure, not an error). Default 8 MiB.
    #[serde(with = "bytes_str")]
    pub max_response_backlog_bytes: u64,
    /// A connection that has not finished its handshake (STARTUP, and authentication when
    /// the server asks for it) this long after it was accepted is closed. Default `10s`.
    #[serde(with = "duration_str")]
    pub handshake_timeout: Duration,
    /// A connection with nothing read, nothing in flight and nothing written for this long is
    /// closed (Cassandra's key). `0s` (the default, as Cassandra's) never closes idle ones.
    #[serde(with = "duration_str")]
    pub native_transport_idle_timeout: Duration,
    /// How long a request may run before the backend answers it with a timeout error; also the
    /// grace period in-flight requests get at shutdown. Default `10s`.
    #[serde(with = "duration_str")]
    pub request_timeout: Duration,
    /// When commit log writes are acknowledged: `periodic` (fsync every
    /// `commitlog_sync_period`) or `batch` (fsync before acknowledging). Default `periodic`.
    pub commitlog_sync: CommitlogSync,
    /// Interval between commit log fsyncs when `commitlog_sync` is `periodic`. Default `10s`.
    #[serde(with = "duration_str")]
    pub commitlog_sync_period: Duration,
    /// Standalone mode: what start-up does with a write-ahead journal damaged before its last
    /// batch (acknowledged writes after the damage): `refuse` to start, naming the file, the
    /// offset and what would be lost, or `truncate` it there, dropping exactly that. A write
    /// torn by a crash at the very end is cut off either way. Default `refuse`.
    pub journal_recovery: JournalRecovery,
    /// Standalone mode: whether start-up reads every data file (SSTable) and compares it with
    /// the checksum recorded when it was written, refusing to start on damage: `full` (the
    /// default) or `off`.
    pub data_file_check: DataFileCheck,
    /// Encryption at rest of the data files and the write-ahead journal (standalone mode) and
    /// of the proxy's SSD cache tier: AES-256-GCM under the keys of `key_file` (format and key
    /// rotation in docs/operations.md). Off by default.
    pub encryption_at_rest: EncryptionAtRest,
    /// Standalone mode: what happens when a data file fails under the store (a memtable flush
    /// or a compaction failing: descriptors or space running out, an I/O error; with
    /// `stop_paranoid` also a read meeting a damaged block). Cassandra's key and values: `stop`
    /// refuses requests (with an error naming the cause) while the store reopens itself with
    /// backoff, and serves again once it opens; `stop_paranoid` as `stop`, and damage met by a
    /// read stops the node until every data file checks out; `best_effort` stops writes while
    /// reads go on, until the disk takes writes again; `die` exits the process; `ignore` leaves
    /// writes failing until a restart. Default `stop`.
    pub disk_failure_policy: DiskFailurePolicy,
    /// Standalone mode: what happens when the journal (Cassandra's commit log) fails: a write
    /// or an fsync of it failing. Cassandra's key and values: `stop` as `disk_failure_policy:
    /// stop`; `stop_commit` stops writes while reads go on, until the disk takes writes again;
    /// `die` exits the process; `ignore` leaves writes failing until a restart. Default `stop`.
    pub commit_failure_policy: CommitFailurePolicy,
    /// How clients authenticate (standalone mode): `AllowAllAuthenticator` (the default: no
    /// login) or `PasswordAuthenticator` (SASL PLAIN against the roles in `system_auth`). In
    /// proxy mode the upstream cluster authenticates and this stays at the default.
    pub authenticator: Authenticator,
    /// What a logged-in role may do: `AllowAllAuthorizer` (the default: everything) or
    /// `CassandraAuthorizer` (permissions granted with GRANT, checked on every statement).
    pub authorizer: Authorizer,
    /// Where roles live: `CassandraRoleManager` (the only one, the default).
    pub role_manager: RoleManager,
    /// Password of the default superuser `cassandra`, created on the first start with
    /// `PasswordAuthenticator` when no role exists. Default: `cassandra`, as Cassandra's (a
    /// loud warning is logged at every start while it is in use). The environment variable
    /// `PEREGRINE_DEFAULT_SUPERUSER_PASSWORD` overrides it. Ignored once a role exists.
    pub auth_default_superuser_password: Option<String>,
    /// Failed logins from one client address within `auth_login_failure_window` after which
    /// further attempts from it are refused (without checking the password) until the window
    /// has passed. Default 10.
    pub auth_login_max_failures: u32,
    /// See `auth_login_max_failures`. Default `60s`.
    #[serde(with = "duration_str")]
    pub auth_login_failure_window: Duration,
    /// Name reported in `system.local.cluster_name`. Default `Peregrine Cluster`.
    pub cluster_name: String,
    /// Standalone mode: whether `CREATE MATERIALIZED VIEW` is allowed (Cassandra's key; views
    /// are experimental there and off by default). Default `false`.
    pub materialized_views_enabled: bool,
    /// Standalone mode: whether `ALTER TABLE ... DROP COMPACT STORAGE` is allowed (Cassandra's
    /// key; off by default there too). Default `false`.
    pub drop_compact_storage_enabled: bool,
    /// Standalone mode: whether `MASKED WITH` may attach masking functions to columns
    /// (Cassandra's key; off by default there too). Default `false`.
    pub dynamic_data_masking_enabled: bool,
    /// Standalone mode: a BATCH of more than one mutation (keyspace and partition key) whose
    /// data size is over this gets Cassandra's client warning (Cassandra 5.0's key, a size of
    /// at least one KiB such as `5KiB`). Kept here in bytes. Default 5 KiB.
    #[serde(with = "kib_str")]
    pub batch_size_warn_threshold: u64,
    /// Standalone mode: such a batch over this (and over the warning threshold) is refused
    /// with Invalid "Batch too large" (Cassandra 5.0's key). Kept in bytes. Default 50 KiB.
    #[serde(with = "kib_str")]
    pub batch_size_fail_threshold: u64,
    /// Standalone mode: a read that meets more tombstones than this gets Cassandra's client
    /// warning "Read N live rows and M tombstone cells for query ..." (Cassandra's key).
    /// Default 1000.
    pub tombstone_warn_threshold: u32,
    /// Standalone mode: a read that meets more tombstones than this stops and fails with
    /// ReadFailure (READ_TOO_MANY_TOMBSTONES), as Cassandra's (Cassandra's key). Default
    /// 100000.
    pub tombstone_failure_threshold: u32,
    /// Standalone mode: bytes of the storage engine's block cache (decompressed data, index
    /// and filter blocks kept in memory). Default 1 GiB.
    pub storage_cache_bytes: u64,
    /// Standalone mode: memtable size at which it is flushed to an on-disk table. Larger
    /// keeps more overwrites of hot rows in memory. Default 64 MiB.
    pub storage_memtable_bytes: u64,
    /// Standalone mode: the storage's leveled compaction merges L0 into the next level when
    /// L0 holds this many tables (2..=64). Default 8: against 4, write amplification 4.35 ->
    /// 3.29 on a 1M-row load and reads no dearer (bench/results/2026-11-30/write-amplification).
    pub storage_compaction_l0_threshold: u8,
    /// Standalone mode: size ratio between one level and the next below L0 (2..=100).
    /// Default 10.
    pub storage_compaction_level_ratio: u32,
    /// Standalone mode: size at which compactions cut table files; the first level below L0
    /// holds `storage_compaction_l0_threshold` of them. Default 64 MiB.
    pub storage_compaction_table_bytes: u64,
    /// Standalone mode: after this many seconds without a write, the storage merges the
    /// tables left in L0 (fewer than `storage_compaction_l0_threshold`, two or more) into the
    /// level below, so reads probe one table instead of several. 0: never. Default 5.
    pub storage_idle_compaction_seconds: u32,
    /// Standalone mode (Linux): how many nice steps below the server's own its flushes and
    /// compactions run (0..=19; the result is at most 19), so that a request preempts them
    /// and they use what requests leave of the CPU. `0`: the same priority. Default 10: at
    /// the same priority a compaction took half of a busy core and YCSB A at 80% of its peak
    /// waited up to 1.2 s behind it (bench/results/2026-12-02/background-priority-s40).
    pub storage_background_nice: u8,
    /// Standalone mode: a blind write onto a row the memtable already holds partially stays
    /// partial (the two merged) instead of being completed with a read of the row. Default
    /// false.
    pub storage_memtable_partial_rows: bool,
    /// Standalone mode: heap bytes one SAI vector index's graph may take. A graph that grows
    /// past it is saved and served from its files on disk (memory-mapped) with the rows
    /// written since in memory; without saved graphs (encryption at rest) it is freed and ANN
    /// queries on its index scan the rows instead (exact, slower). Default 1 GiB.
    pub vector_index_memory_bytes: u64,
    /// Standalone: how long CREATE INDEX builds a new index over existing rows before it
    /// answers and the build goes on in the background. Default `5s`; `0s` answers at once, as
    /// Cassandra does.
    #[serde(with = "duration_str")]
    pub index_build_wait: Duration,
    /// Standalone mode: threads of the scan lane, the pool that runs scans (a SELECT over a
    /// token range: every partition of a table, `token(...)` ranges, filtering and indexed
    /// reads over many partitions, `count(*)` over a table) apart from the threads serving
    /// point operations. Also the most scans running at once. Default 2.
    pub scan_threads: usize,
    /// Standalone mode: scans that may wait for a scan thread (a waiting scan holds no
    /// thread); one more is answered Overloaded. Default 64.
    pub scan_queue: usize,
    /// Standalone mode: the rows per second one scan may read from storage (each page of a
    /// paged scan, and every row a filter or `count(*)` looks at, counts); the scan pauses
    /// between batches of rows to keep to it. `0` (the default): no limit. A request can
    /// lower it with the custom payload key `peregrine-scan-rate` (docs/extensions.md).
    pub scan_rows_per_second: u64,
    /// Standalone mode, with logins: `scan_rows_per_second` for the scans of a role (role
    /// name: rows per second, `0` = no limit), instead of the global one. Default none.
    pub scan_role_rows_per_second: std::collections::BTreeMap<String, u64>,
    /// Standalone mode: the nice value (0..=19, Linux) of the scan threads, so that while
    /// point operations want the CPU a scan gets less of it, and all of it when they do not.
    /// `0`: the same priority as the rest. Default 5: with other work on the server's core,
    /// at 10 every wake-up of a request thread preempted a running scan (2.3 context switches
    /// a YCSB E operation against 1.6 at 5) and short scans ran 13-26% fewer a CPU second; on
    /// a quiet core the two ran alike; no run showed 10 protecting point-read latency
    /// (bench/results/2026-12-01/scan-s37).
    pub scan_thread_nice: i32,
    /// Standalone mode, once a service level exists (`CREATE SERVICE LEVEL`): executor
    /// threads that run requests, fed by one queue per service level in the order of the
    /// levels' shares. `0` (the default): the number of CPU cores.
    pub service_level_slots: usize,
    /// Standalone mode: requests that may wait for a service level slot, all levels
    /// together; one more is answered Overloaded. Default 4096.
    pub service_level_queue: usize,
    /// Proxy mode: the Cassandra nodes to forward to (`host:port`). Empty (the default) means
    /// standalone mode on the embedded engine.
    pub upstream: Vec<SocketAddr>,
    /// TLS on the client port, with Cassandra 5.0's keys (PEM files only); see
    /// `docs/security.md`. Off by default.
    pub client_encryption_options: EncryptionOptions,
    /// How often the TLS files are checked for changes (new connections then get the new
    /// certificate); `0s` checks only on SIGHUP. Default `60s`.
    #[serde(with = "duration_str")]
    pub tls_reload_interval: Duration,
    /// Proxy mode settings (cache, staleness, upstream pool); ignored in standalone mode.
    pub proxy: ProxyConfig,
    /// Address of the admin endpoint (`/metrics`, `peregrine nodetool`). Unset (the default):
    /// `127.0.0.1:7199` (nodetool's port) if it is free, else none, with a warning; set: that
    /// address, and the start fails if it cannot be bound. A non-loopback address needs
    /// `admin_username` and `admin_password`.
    pub admin_listen: Option<SocketAddr>,
    /// `false` runs no admin endpoint. Default `true`.
    pub admin_enabled: bool,
    /// `true`: connections are spread over one single-threaded runtime per CPU the process may
    /// use, each pinned to its CPU, and a connection's requests run to completion on its thread
    /// (`cores.rs`). `false` (the default): one work-stealing runtime serves them all.
    pub thread_per_core: bool,
    /// Credentials the admin endpoint requires (HTTP Basic; `nodetool -u USER -pw PASSWORD`).
    /// Default none: loopback clients only.
    pub admin_username: Option<String>,
    pub admin_password: Option<String>,
    /// The audit log (Cassandra's block and keys; off by default): logins, failed logins,
    /// DDL, DML, queries to a rotating file. See `docs/operations.md`.
    pub audit_logging_options: AuditLogOptions,
}

/// Upper bounds of `scan_threads` and `scan_queue` (a typo such as `scan_threads: 20000`
/// should not start that many threads).
pub const MAX_SCAN_THREADS: usize = 256;
pub const MAX_SCAN_QUEUE: usize = 65_536;

/// The admin endpoint's address when `admin_listen` is unset (nodetool's default port).
pub const DEFAULT_ADMIN_LISTEN: SocketAddr =
    SocketAddr::V4(std::net::SocketAddrV4::new(Ipv4Addr::LOCALHOST, 7199));

/// `proxy.upstream_compression`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UpstreamCompression {
    None,
    Lz4,
}

/// Proxy mode settings (`proxy:` section). See `docs/proxy.md`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProxyConfig {
    /// DRAM cache budget in bytes (keys + cached result bodies). 0 disables caching.
    /// Default 256 MiB.
    pub cache_bytes: usize,
    /// Largest single cached result body; bigger results are passed through uncached.
    /// Default 1 MiB.
    pub max_entry_bytes: usize,
    /// SSD cache tier directory (a `proxy-ssd-cache` sub-directory is created there and wiped
    /// at every start: the tier is a cache, not durable). None (the default): DRAM only.
    pub cache_dir: Option<PathBuf>,
    /// SSD tier budget in bytes (records' keys and values), used with `cache_dir`.
    /// Default 16 GiB.
    pub ssd_cache_bytes: u64,
    /// How long a cached result may be served after it was read from the upstream: the bound
    /// on staleness for writes that bypass the proxy. Default `1s`.
    #[serde(with = "duration_str")]
    pub max_staleness: Duration,
    /// Per-table `max_staleness` overrides, keyed `keyspace.table`.
    #[serde(with = "duration_map")]
    pub table_max_staleness: std::collections::BTreeMap<String, Duration>,
    /// Tables never cached, as `keyspace.table` or `keyspace.*`.
    pub exclude: Vec<String>,
    /// Tables (`keyspace.table` or `keyspace.*`) whose cacheable reads are answered with the
    /// last result the proxy kept when the upstream fails (unreachable, timeout, Unavailable,
    /// ...), however old, unless a write or schema change seen by the proxy invalidated it.
    /// Default none.
    pub serve_stale_on_upstream_error: Vec<String>,
    /// Connections per upstream node for each (role, protocol version, keyspace). Default 2.
    pub upstream_connections: usize,
    /// Compression on the connections to the upstream: `none` (the default) or `lz4`, which
    /// trades proxy and upstream CPU for network bytes (worth it when the cluster is across a
    /// network, not on loopback).
    pub upstream_compression: UpstreamCompression,
    /// How long opening an upstream connection (TCP + handshake) may take. Default `5s`.
    #[serde(with = "duration_str")]
    pub connect_timeout: Duration,
    /// With several upstream nodes, how long a schema change answered through the proxy
    /// waits for them to agree on the schema before it is answered anyway. The wait counts
    /// against the client's request timeout (the Java driver's default is 2 s). Default
    /// `1500ms`.
    #[serde(with = "duration_str")]
    pub schema_agreement_wait: Duration,
    /// Address reported as this proxy's `rpc_address` in `system.local`; default: the
    /// `listen` address (or 127.0.0.1 when `listen` is unspecified).
    pub rpc_address: Option<std::net::IpAddr>,
    /// The other proxies in front of the same cluster (their CQL addresses). The token ring is
    /// split among all proxies and `system.peers*` lists these. Default none.
    pub peers: Vec<SocketAddr>,
    /// TLS to the upstream nodes (`enabled`, `truststore` = the CA bundle, optional `keystore`
    /// = the proxy's client certificate, `require_endpoint_verification`); see
    /// `docs/security.md`. Off by default.
    pub upstream_encryption_options: EncryptionOptions,
}

impl Default for ProxyConfig {
    fn default() -> Self {
        ProxyConfig {
            cache_bytes: 256 * 1024 * 1024,
            max_entry_bytes: 1024 * 1024,
            cache_dir: None,
            ssd_cache_bytes: 16 * 1024 * 1024 * 1024,
            max_staleness: Duration::from_secs(1),
            table_max_staleness: std::collections::BTreeMap::new(),
            exclude: Vec::new(),
            serve_stale_on_upstream_error: Vec::new(),
            upstream_connections: 2,
            upstream_compression: UpstreamCompression::None,
            connect_timeout: Duration::from_secs(5),
            schema_agreement_wait: Duration::from_millis(1500),
            rpc_address: None,
            peers: Vec::new(),
            upstream_encryption_options: EncryptionOptions::default(),
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 9042)),
            data_dir: PathBuf::from("./data"),
            max_frame_bytes: 256 * 1024 * 1024,
            max_connections: 4096,
            max_streams_per_connection: MAX_STREAM_IDS,
            native_transport_max_concurrent_connections_per_ip: -1,
            native_transport_max_request_data_in_flight: 256 * 1024 * 1024,
            native_transport_max_request_data_in_flight_per_ip: 64 * 1024 * 1024,
            max_response_backlog_bytes: 8 * 1024 * 1024,
            handshake_timeout: Duration::from_secs(10),
            native_transport_idle_timeout: Duration::ZERO,
            request_timeout: Duration::from_secs(10),
            commitlog_sync: CommitlogSync::Periodic,
            commitlog_sync_period: Duration::from_secs(10),
            journal_recovery: JournalRecovery::Refuse,
            data_file_check: DataFileCheck::Full,
            encryption_at_rest: EncryptionAtRest::default(),
            disk_failure_policy: DiskFailurePolicy::Stop,
            commit_failure_policy: CommitFailurePolicy::Stop,
            authenticator: Authenticator::AllowAllAuthenticator,
            authorizer: Authorizer::AllowAllAuthorizer,
            role_manager: RoleManager::CassandraRoleManager,
            auth_default_superuser_password: None,
            auth_login_max_failures: 10,
            auth_login_failure_window: Duration::from_secs(60),
            cluster_name: "Peregrine Cluster".to_string(),
            materialized_views_enabled: false,
            drop_compact_storage_enabled: false,
            dynamic_data_masking_enabled: false,
            batch_size_warn_threshold: 5 * 1024,
            batch_size_fail_threshold: 50 * 1024,
            tombstone_warn_threshold: 1000,
            tombstone_failure_threshold: 100_000,
            storage_cache_bytes: 1024 * 1024 * 1024,
            storage_memtable_bytes: 64 * 1024 * 1024,
            storage_compaction_l0_threshold: 8,
            storage_compaction_level_ratio: 10,
            storage_compaction_table_bytes: 64 * 1024 * 1024,
            storage_idle_compaction_seconds: 5,
            storage_background_nice: 10,
            storage_memtable_partial_rows: false,
            vector_index_memory_bytes: 1024 * 1024 * 1024,
            index_build_wait: Duration::from_secs(5),
            scan_threads: 2,
            scan_queue: 64,
            scan_rows_per_second: 0,
            scan_thread_nice: 5,
            service_level_slots: 0,
            service_level_queue: 4096,
            scan_role_rows_per_second: std::collections::BTreeMap::new(),
            upstream: Vec::new(),
            client_encryption_options: EncryptionOptions::default(),
            tls_reload_interval: Duration::from_secs(60),
            proxy: ProxyConfig::default(),
            admin_listen: None,
            admin_enabled: true,
            thread_per_core: false,
            admin_username: None,
            admin_password: None,
            audit_logging_options: AuditLogOptions::default(),
        }
    }
}

/// When commit log writes are made durable (Cassandra's `commitlog_sync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommitlogSync {
    /// Acknowledge writes at once; fsync every `commitlog_sync_period`.
    Periodic,
    /// Fsync before acknowledging a write.
    Batch,
}

/// `journal_recovery`: see [`Config::journal_recovery`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JournalRecovery {
    Refuse,
    Truncate,
}

/// `data_file_check`: see [`Config::data_file_check`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DataFileCheck {
    Full,
    Off,
}

/// `encryption_at_rest`: see [`Config::encryption_at_rest`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EncryptionAtRest {
    /// Seal what the store writes. Default `false`.
    pub enabled: bool,
    /// The key file (one `<id> <64 hex digits>` line per key; the highest id is current).
    /// Required when `enabled`.
    pub key_file: Option<PathBuf>,
}

impl EncryptionAtRest {
    /// The key file to use, or `None` when encryption at rest is off.
    pub fn key_file(&self) -> Option<&Path> {
        self.key_file.as_deref().filter(|_| self.enabled)
    }
}

/// `disk_failure_policy`: see [`Config::disk_failure_policy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DiskFailurePolicy {
    Stop,
    StopParanoid,
    BestEffort,
    Die,
    Ignore,
}

/// `commit_failure_policy`: see [`Config::commit_failure_policy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommitFailurePolicy {
    Stop,
    StopCommit,
    Die,
    Ignore,
}

/// How clients authenticate (Cassandra's `authenticator`, same class names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Authenticator {
    /// No authentication: STARTUP is answered with READY.
    AllowAllAuthenticator,
    /// SASL PLAIN with a role name and password checked against `system_auth.roles`.
    PasswordAuthenticator,
}

/// What logged-in roles may do (Cassandra's `authorizer`, same class names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Authorizer {
    /// Every statement is allowed; GRANT, REVOKE and LIST PERMISSIONS are refused.
    AllowAllAuthorizer,
    /// Permissions granted with GRANT are checked on every statement.
    CassandraAuthorizer,
}

/// Where roles are kept (Cassandra's `role_manager`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RoleManager {
    /// Roles in `system_auth.roles`, managed with CREATE/ALTER/DROP ROLE.
    CassandraRoleManager,
}

/// Everything wrong with a configuration, reported together.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigError {
    /// The file the problems are in, if they came from a file.
    pub path: Option<PathBuf>,
    /// One sentence per problem.
    pub problems: Vec<String>,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.problems.len();
        match &self.path {
            Some(p) => write!(f, "invalid configuration in {}", p.display())?,
            None => write!(f, "invalid configuration")?,
        }
        write!(f, " ({n} problem{}):", if n == 1 { "" } else { "s" })?;
        for p in &self.problems {
            write!(f, "\n  - {p}")?;
        }
        Ok(())
    }
}

impl Config {
    /// Loads the configuration: the defaults, overridden by the YAML file at `path` if given.
    /// Checks everything and reports every problem at once.
    pub fn load(path: Option<&Path>) -> Result<Config, ConfigError> {
        let Some(path) = path else {
            let config = Config::default();
            config.validate()?;
            return Ok(config);
        };
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            path: Some(path.to_path_buf()),
            problems: vec![format!("cannot read the file: {e}")],
        })?;
        Config::from_yaml(&text).map_err(|mut e| {
            e.path = Some(path.to_path_buf());
            e
        })
    }

    /// Parses and checks a YAML document (an empty document means all defaults).
    pub fn from_yaml(text: &str) -> Result<Config, ConfigError> {
        let err = |problems| ConfigError {
            path: None,
            problems,
        };
        let doc: serde_yaml::Value =
            serde_yaml::from_str(text).map_err(|e| err(vec![format!("not valid YAML: {e}")]))?;
        let map = match doc {
            serde_yaml::Value::Null => serde_yaml::Mapping::new(),
            serde_yaml::Value::Mapping(m) => m,
            _ => {
                return Err(err(vec![
                    "the top level must be a mapping of `key: value` lines".into(),
                ]))
            }
        };
        // serde stops at the first bad field; check one key at a time to report them all, then
        // check ranges on the keys that did parse.
        let mut problems = Vec::new();
        let mut good = serde_yaml::Mapping::new();
        for (key, value) in map {
            let mut single = serde_yaml::Mapping::new();
            single.insert(key.clone(), value.clone());
            match serde_yaml::from_value::<Config>(serde_yaml::Value::Mapping(single)) {
                Ok(_) => {
                    good.insert(key, value);
                }
                Err(e) => {
                    let name = key
                        .as_str()
                        .map_or_else(|| format!("{key:?}"), str::to_string);
                    problems.push(format!("`{name}`: {e}"));
                }
            }
        }
        let config = match serde_yaml::from_value::<Config>(serde_yaml::Value::Mapping(good)) {
            Ok(config) => config,
            Err(e) => {
                problems.push(e.to_string());
                return Err(err(problems));
            }
        };
        if let Err(e) = config.validate() {
            problems.extend(e.problems);
        }
        if problems.is_empty() {
            Ok(config)
        } else {
            Err(err(problems))
        }
    }

    /// Checks the values against each other and their allowed ranges; all problems at once.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let mut problems = Vec::new();
        if self.data_dir.as_os_str().is_empty() {
            problems.push("`data_dir` must not be empty".to_string());
        }
        if self.encryption_at_rest.enabled && self.encryption_at_rest.key_file.is_none() {
            problems.push(
                "`encryption_at_rest.enabled` needs `encryption_at_rest.key_file`".to_string(),
            );
        }
        // The envelope length is a signed 32-bit int on the wire.
        if self.max_frame_bytes < 1024 || self.max_frame_bytes > i32::MAX as usize {
            problems.push(format!(
                "`max_frame_bytes` is {} but must be between 1024 and {}",
                self.max_frame_bytes,
                i32::MAX
            ));
        }
        if self.max_connections == 0 {
            problems.push("`max_connections` must be at least 1".to_string());
        }
        if self.max_streams_per_connection == 0 || self.max_streams_per_connection > MAX_STREAM_IDS
        {
            problems.push(format!(
                "`max_streams_per_connection` is {} but must be between 1 and {MAX_STREAM_IDS}",
                self.max_streams_per_connection
            ));
        }
        if self.request_timeout.is_zero() {
            problems.push("`request_timeout` must be longer than 0s".to_string());
        }
        if self.handshake_timeout.is_zero() {
            problems.push("`handshake_timeout` must be longer than 0s".to_string());
        }
        if self.native_transport_max_concurrent_connections_per_ip == 0
            || self.native_transport_max_concurrent_connections_per_ip < -1
        {
            problems.push(format!(
                "`native_transport_max_concurrent_connections_per_ip` is {} but must be at least 1, or -1 for no limit",
                self.native_transport_max_concurrent_connections_per_ip
            ));
        }
        for (key, value, min) in [
            (
                "native_transport_max_request_data_in_flight",
                self.native_transport_max_request_data_in_flight,
                1024,
            ),
            (
                "native_transport_max_request_data_in_flight_per_ip",
                self.native_transport_max_request_data_in_flight_per_ip,
                1024,
            ),
            (
                "max_response_backlog_bytes",
                self.max_response_backlog_bytes,
                64 * 1024,
            ),
        ] {
            if value < min {
                problems.push(format!(
                    "`{key}` is {value} but must be at least {min} bytes"
                ));
            }
        }
        if self.commitlog_sync_period.is_zero() {
            problems.push("`commitlog_sync_period` must be longer than 0s".to_string());
        }
        if self.cluster_name.trim().is_empty() {
            problems.push("`cluster_name` must not be empty".to_string());
        }
        const MIB: u64 = 1024 * 1024;
        if self.storage_memtable_bytes < MIB || self.storage_memtable_bytes > 64 * 1024 * MIB {
            problems.push(format!(
                "`storage_memtable_bytes` is {} but must be between 1 MiB and 64 GiB",
                self.storage_memtable_bytes
            ));
        }
        if !(2..=64).contains(&self.storage_compaction_l0_threshold) {
            problems.push(format!(
                "`storage_compaction_l0_threshold` is {} but must be between 2 and 64",
                self.storage_compaction_l0_threshold
            ));
        }
        if !(2..=100).contains(&self.storage_compaction_level_ratio) {
            problems.push(format!(
                "`storage_compaction_level_ratio` is {} but must be between 2 and 100",
                self.storage_compaction_level_ratio
            ));
        }
        if self.storage_compaction_table_bytes < MIB
            || self.storage_compaction_table_bytes > 4 * 1024 * MIB
        {
            problems.push(format!(
                "`storage_compaction_table_bytes` is {} but must be between 1 MiB and 4 GiB",
                self.storage_compaction_table_bytes
            ));
        }
        if self.storage_background_nice > 19 {
            problems.push(format!(
                "`storage_background_nice` is {} but must be between 0 and 19",
                self.storage_background_nice
            ));
        }
        if self.storage_idle_compaction_seconds > 86_400 {
            problems.push(format!(
                "`storage_idle_compaction_seconds` is {} but must be between 0 and 86400",
                self.storage_idle_compaction_seconds
            ));
        }
        if self.authenticator == Authenticator::AllowAllAuthenticator
            && self.authorizer != Authorizer::AllowAllAuthorizer
        {
            problems.push(
                "`authorizer: CassandraAuthorizer` needs `authenticator: PasswordAuthenticator` \
                 (AllowAllAuthenticator can't be used with CassandraAuthorizer)"
                    .to_string(),
            );
        }
        if !self.upstream.is_empty() && self.authenticator != Authenticator::AllowAllAuthenticator {
            problems.push(
                "`authenticator` applies to standalone mode; in proxy mode (`upstream` set) the \
                 upstream cluster authenticates clients"
                    .to_string(),
            );
        }
        if self.scan_threads == 0 || self.scan_threads > MAX_SCAN_THREADS {
            problems.push(format!(
                "`scan_threads` is {} but must be between 1 and {MAX_SCAN_THREADS}",
                self.scan_threads
            ));
        }
        if self.scan_queue > MAX_SCAN_QUEUE {
            problems.push(format!(
                "`scan_queue` is {} but must be at most {MAX_SCAN_QUEUE}",
                self.scan_queue
            ));
        }
        if self.service_level_slots > MAX_SCAN_THREADS {
            problems.push(format!(
                "`service_level_slots` is {} but must be at most {MAX_SCAN_THREADS}",
                self.service_level_slots
            ));
        }
        if self.service_level_queue > MAX_SCAN_QUEUE {
            problems.push(format!(
                "`service_level_queue` is {} but must be at most {MAX_SCAN_QUEUE}",
                self.service_level_queue
            ));
        }
        if !(0..=19).contains(&self.scan_thread_nice) {
            problems.push(format!(
                "`scan_thread_nice` is {} but must be between 0 and 19",
                self.scan_thread_nice
            ));
        }
        if self.scan_role_rows_per_second.keys().any(|r| r.is_empty()) {
            problems.push("`scan_role_rows_per_second`: a role name must not be empty".into());
        }
        if self.auth_login_max_failures == 0 {
            problems.push("`auth_login_max_failures` must be at least 1".to_string());
        }
        if self.auth_login_failure_window.is_zero() {
            problems.push("`auth_login_failure_window` must be longer than 0s".to_string());
        }
        let p = &self.proxy;
        if p.upstream_connections == 0 || p.upstream_connections > 64 {
            problems.push(format!(
                "`proxy.upstream_connections` is {} but must be between 1 and 64",
                p.upstream_connections
            ));
        }
        if p.connect_timeout.is_zero() {
            problems.push("`proxy.connect_timeout` must be longer than 0s".to_string());
        }
        for name in p
            .exclude
            .iter()
            .chain(&p.serve_stale_on_upstream_error)
            .chain(p.table_max_staleness.keys())
        {
            if name.split('.').count() != 2 || name.split('.').any(str::is_empty) {
                problems.push(format!(
                    "`proxy`: table name `{name}` must be written `keyspace.table`"
                ));
            }
        }
        match (&self.admin_username, &self.admin_password) {
            (Some(_), None) | (None, Some(_)) => problems.push(
                "`admin_username` and `admin_password` go together: set both or neither"
                    .to_string(),
            ),
            (Some(u), Some(_)) if u.is_empty() || u.contains(':') => problems
                .push("`admin_username` must be non-empty and must not contain `:`".to_string()),
            _ => {}
        }
        if let Some(addr) = self.admin_listen {
            if self.admin_enabled && !addr.ip().is_loopback() && self.admin_password.is_none() {
                problems.push(format!(
                    "`admin_listen` is {addr}, off loopback, but no `admin_username`/`admin_password` is set: the admin endpoint flushes, snapshots and stops the server, so it is never open off loopback without authentication"
                ));
            }
        }
        problems.extend(self.tls_problems());
        problems.extend(self.audit_logging_options.problems());
        let audit = &self.audit_logging_options;
        if audit.enabled && audit.problems().is_empty() {
            // Checked now, so an audit log asked for but impossible stops the start-up.
            let dir = &audit.audit_logs_dir;
            let opened = std::fs::create_dir_all(dir).and_then(|()| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(dir.join("audit.log"))
            });
            if let Err(e) = opened {
                problems.push(format!(
                    "`audit_logging_options.audit_logs_dir`: cannot write audit.log in {}: {e}",
                    dir.display()
                ));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ConfigError {
                path: None,
                problems,
            })
        }
    }
}

impl Config {
    /// The TLS sections: their keys, then their files (read now, so a missing or broken
    /// certificate stops the start-up with the others problems).
    fn tls_problems(&self) -> Vec<String> {
        let client = &self.client_encryption_options;
        let upstream = &self.proxy.upstream_encryption_options;
        let mut problems = client.static_problems("client_encryption_options");
        problems.extend(upstream.static_problems("proxy.upstream_encryption_options"));
        if problems.is_empty() && client.policy() != crate::tls::Policy::Plain {
            if let Err(e) = client.server_config() {
                problems.push(format!("`client_encryption_options`: {e}"));
            }
        }
        if problems.is_empty() && upstream.enabled {
            if let Err(e) = upstream.client_config() {
                problems.push(format!("`proxy.upstream_encryption_options`: {e}"));
            }
        }
        problems
    }
}

/// Parses a duration written as one or more `<integer><unit>` groups, e.g. `10s`, `500ms`,
/// `2m`, `1m30s`. Units: `ns`, `us`, `ms`, `s`, `m`, `h`, `d`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let s = text.trim();
    if s.is_empty() {
        return Err("empty duration; write e.g. `10s` or `500ms`".into());
    }
    let mut total = Duration::ZERO;
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(format!(
                "`{text}` is not a duration; write e.g. `10s`, `500ms` or `2m`"
            ));
        }
        let n: u64 = rest[..digits]
            .parse()
            .map_err(|_| format!("`{text}`: number too large"))?;
        rest = &rest[digits..];
        let unit_len = rest.bytes().take_while(|b| b.is_ascii_alphabetic()).count();
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        let part = match unit {
            "ns" => Some(Duration::from_nanos(n)),
            "us" => Some(Duration::from_micros(n)),
            "ms" => Some(Duration::from_millis(n)),
            "s" => Some(Duration::from_secs(n)),
            "m" => n.checked_mul(60).map(Duration::from_secs),
            "h" => n.checked_mul(3600).map(Duration::from_secs),
            "d" => n.checked_mul(86_400).map(Duration::from_secs),
            "" => {
                return Err(format!(
                    "`{text}` has a number without a unit (ms, s, m, h, ...)"
                ))
            }
            other => {
                return Err(format!(
                    "`{text}` has unknown unit `{other}` (use ns, us, ms, s, m, h or d)"
                ))
            }
        };
        total = part
            .and_then(|p| total.checked_add(p))
            .ok_or_else(|| format!("`{text}` is too long a duration"))?;
    }
    Ok(total)
}

/// Formats a duration in the largest unit that represents it exactly (`10s`, `1500ms`).
pub fn format_duration(d: Duration) -> String {
    let nanos = d.as_nanos();
    for (unit, per) in [
        ("d", 86_400_000_000_000u128),
        ("h", 3_600_000_000_000),
        ("m", 60_000_000_000),
        ("s", 1_000_000_000),
        ("ms", 1_000_000),
        ("us", 1_000),
    ] {
        if nanos != 0 && nanos.is_multiple_of(per) {
            return format!("{}{unit}", nanos / per);
        }
    }
    format!("{nanos}ns")
}

/// Parses a byte count: a plain number of bytes, or a number with one of Cassandra's
/// units (`B`, `KiB`, `MiB`, `GiB`), e.g. `64MiB`.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let s = text.trim();
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let bad = || format!("`{text}` is not a size; write e.g. `1048576`, `512KiB` or `64MiB`");
    if digits == 0 {
        return Err(bad());
    }
    let n: u64 = s[..digits].parse().map_err(|_| bad())?;
    let per: u64 = match s[digits..].trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        _ => return Err(bad()),
    };
    n.checked_mul(per).ok_or_else(bad)
}

/// serde adapter: a byte count written as a number or as a size string (`64MiB`).
pub(crate) mod bytes_str {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(n: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(*n)
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Number(u64),
        Text(String),
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        match Raw::deserialize(d)? {
            Raw::Number(n) => Ok(n),
            Raw::Text(t) => super::parse_bytes(&t).map_err(serde::de::Error::custom),
        }
    }
}

/// A size as Cassandra 5.0 takes its `IntKibibytesBound` keys (`batch_size_warn_threshold`):
/// an integer with the unit `KiB`, `MiB` or `GiB` and no space, at most 2^31 - 1 KiB; returned
/// in bytes. A bare number or a size in bytes is refused, as Cassandra refuses it.
pub fn parse_kib(text: &str) -> Result<u64, String> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let bad = || {
        format!(
            "`{text}` is not a size of whole KiB; write e.g. `5KiB`, `1MiB` (units KiB, MiB, GiB)"
        )
    };
    let n: u64 = text[..digits].parse().map_err(|_| bad())?;
    let kib = match &text[digits..] {
        "KiB" => Some(n),
        "MiB" => n.checked_mul(1 << 10),
        "GiB" => n.checked_mul(1 << 20),
        _ => return Err(bad()),
    };
    match kib {
        Some(k) if k <= i32::MAX as u64 => Ok(k * 1024),
        _ => Err(format!("`{text}` is more than {} KiB", i32::MAX)),
    }
}

/// serde adapter: a byte count kept from a KiB size string (`5KiB`, see [`parse_kib`]),
/// written back in KiB.
mod kib_str {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(n: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{}KiB", n / 1024))
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Number(u64),
        Text(String),
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        match Raw::deserialize(d)? {
            Raw::Number(n) => Err(serde::de::Error::custom(format!(
                "`{n}` has no unit; write a size such as `{n}KiB` (units KiB, MiB, GiB)"
            ))),
            Raw::Text(t) => super::parse_kib(&t).map_err(serde::de::Error::custom),
        }
    }
}

/// serde adapter: a map of names to durations written as strings.
mod duration_map {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(
        m: &BTreeMap<String, Duration>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_map(m.iter().map(|(k, d)| (k, super::format_duration(*d))))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<String, Duration>, D::Error> {
        let text = BTreeMap::<String, String>::deserialize(d)?;
        text.into_iter()
            .map(|(k, v)| {
                super::parse_duration(&v)
                    .map(|d| (k, d))
                    .map_err(serde::de::Error::custom)
            })
            .collect()
    }
}

/// serde adapter: durations as strings such as `"10s"`.
mod duration_str {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format_duration(*d))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(d)?;
        super::parse_duration(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_document_is_all_defaults() {
        assert_eq!(Config::from_yaml("").unwrap(), Config::default());
        assert_eq!(Config::load(None).unwrap(), Config::default());
    }

    #[test]
    fn encryption_at_rest_needs_a_key_file_when_enabled() {
        let c = Config::from_yaml("encryption_at_rest: {enabled: true, key_file: /k}\n").unwrap();
        assert_eq!(c.encryption_at_rest.key_file(), Some(Path::new("/k")));
        let off = Config::from_yaml("encryption_at_rest: {key_file: /k}\n").unwrap();
        assert_eq!(off.encryption_at_rest.key_file(), None);
        let e = Config::from_yaml("encryption_at_rest: {enabled: true}\n").unwrap_err();
        assert!(e.to_string().contains("encryption_at_rest.key_file"), "{e}");
        assert!(Config::from_yaml("encryption_at_rest: {enabled: true, key: x}\n").is_err());
    }

    #[test]
    fn defaults_are_the_documented_ones() {
        let c = Config::default();
        assert_eq!(c.listen.to_string(), "127.0.0.1:9042");
        assert_eq!(c.data_dir, PathBuf::from("./data"));
        assert_eq!(c.max_frame_bytes, 256 << 20);
        assert_eq!(c.request_timeout, Duration::from_secs(10));
        assert_eq!(c.commitlog_sync, CommitlogSync::Periodic);
        assert_eq!(c.cluster_name, "Peregrine Cluster");
    }

    #[test]
    fn tls_problems_come_with_the_others_and_name_their_section() {
        let e = Config::from_yaml(
            "max_connections: 0\n\
             client_encryption_options: {enabled: true, keystore: /nonexistent/node.pem}\n\
             proxy: {upstream_encryption_options: {enabled: true, store_type: JKS}}\n",
        )
        .unwrap_err();
        assert_eq!(e.problems.len(), 2, "{e}");
        assert!(
            e.problems[1].contains("`proxy.upstream_encryption_options.store_type` is `JKS`"),
            "{e}"
        );
        let e = Config::from_yaml(
            "client_encryption_options: {enabled: true, keystore: /nonexistent/node.pem}\n",
        )
        .unwrap_err();
        assert!(
            e.problems[0].starts_with(
                "`client_encryption_options`: cannot read `keystore` /nonexistent/node.pem"
            ),
            "{e}"
        );
        let c = Config::from_yaml(
            "client_encryption_options: {enabled: false, keystore: /nonexistent/node.pem}\n",
        );
        assert!(c.is_ok(), "a disabled section reads no file");
    }

    #[test]
    fn scan_lane_keys_parse_and_bad_ones_are_named() {
        let c = Config::from_yaml(
            "scan_threads: 3\nscan_queue: 0\nscan_rows_per_second: 5000\n\
             scan_role_rows_per_second: {analytics: 100, admin: 0}\n",
        )
        .unwrap();
        assert_eq!(
            (c.scan_threads, c.scan_queue, c.scan_rows_per_second),
            (3, 0, 5000)
        );
        assert_eq!(c.scan_role_rows_per_second.get("analytics"), Some(&100));
        let d = Config::default();
        assert_eq!(
            (d.scan_threads, d.scan_queue, d.scan_rows_per_second),
            (2, 64, 0)
        );
        let e = Config::from_yaml(
            "scan_threads: 0\nscan_queue: 100000\nscan_rows_per_second: -5\n\
             scan_role_rows_per_second: {analytics: fast}\n",
        )
        .unwrap_err();
        let all = e.problems.join("\n");
        assert_eq!(e.problems.len(), 4, "{all}");
        assert!(all.contains("`scan_rows_per_second`"), "{all}");
        assert!(all.contains("`scan_role_rows_per_second`"), "{all}");
        assert!(
            all.contains("`scan_threads` is 0 but must be between 1 and 256"),
            "{all}"
        );
        assert!(
            all.contains("`scan_queue` is 100000 but must be at most 65536"),
            "{all}"
        );
    }

    #[test]
    fn audit_logging_options_take_cassandras_block_and_report_every_problem() {
        let dir = std::env::temp_dir().join(format!("peregrine-audit-cfg-{}", std::process::id()));
        let c = Config::from_yaml(&format!(
            "audit_logging_options:\n  enabled: true\n  logger:\n    - class_name: FileAuditLogger\n  \
             audit_logs_dir: {}\n  excluded_keyspaces: system, system_schema\n  \
             roll_cycle: DAILY\n  max_log_size: 1073741824\n  block: true\n",
            dir.display()
        ))
        .unwrap();
        assert!(c.audit_logging_options.enabled);
        assert_eq!(c.audit_logging_options.roll_cycle, "DAILY");
        assert!(
            dir.join("audit.log").exists(),
            "checked writable at start-up"
        );
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            !Config::default().audit_logging_options.enabled,
            "off by default"
        );
        let e = Config::from_yaml(
            "audit_logging_options:\n  enabled: true\n  logger: BinAuditLogger\n  \
             roll_cycle: WEEKLY\n  included_categories: DDL,BOGUS\n  archive_command: /bin/x\n",
        )
        .unwrap_err();
        let all = e.problems.join("\n");
        for word in ["BinAuditLogger", "WEEKLY", "BOGUS", "archive_command"] {
            assert!(all.contains(word), "{word} missing in {all}");
        }
        let e = Config::from_yaml("audit_logging_options:\n  nope: 1\n").unwrap_err();
        assert!(e.problems[0].contains("nope"), "{:?}", e.problems);
    }

    #[test]
    fn every_key_parses() {
        let c = Config::from_yaml(
            "listen: 0.0.0.0:19042\ndata_dir: /var/lib/peregrine\nmax_frame_bytes: 1048576\n\
             max_connections: 10\nmax_streams_per_connection: 128\nrequest_timeout: 500ms\n\
             commitlog_sync: batch\ncommitlog_sync_period: 2m\n\
             authenticator: AllowAllAuthenticator\ncluster_name: Test\n",
        )
        .unwrap();
        assert_eq!(c.listen.port(), 19042);
        assert_eq!(c.max_streams_per_connection, 128);
        assert_eq!(c.request_timeout, Duration::from_millis(500));
        assert_eq!(c.commitlog_sync, CommitlogSync::Batch);
        assert_eq!(c.commitlog_sync_period, Duration::from_secs(120));
    }

    #[test]
    fn failure_policies_take_cassandras_values() {
        let c = Config::from_yaml(
            "disk_failure_policy: best_effort\ncommit_failure_policy: stop_commit\n",
        )
        .unwrap();
        assert_eq!(c.disk_failure_policy, DiskFailurePolicy::BestEffort);
        assert_eq!(c.commit_failure_policy, CommitFailurePolicy::StopCommit);
        let c = Config::from_yaml("disk_failure_policy: stop_paranoid\n").unwrap();
        assert_eq!(c.disk_failure_policy, DiskFailurePolicy::StopParanoid);
        assert_eq!(c.commit_failure_policy, CommitFailurePolicy::Stop);
        // Each key takes only its own values, as Cassandra's.
        let e = Config::from_yaml(
            "disk_failure_policy: stop_commit\ncommit_failure_policy: best_effort\n",
        )
        .unwrap_err();
        assert_eq!(e.problems.len(), 2, "{e}");
    }

    #[test]
    fn connection_limits_take_cassandras_sizes() {
        let c = Config::from_yaml(
            "native_transport_max_request_data_in_flight: 64MiB\n\
             native_transport_max_request_data_in_flight_per_ip: 1048576\n\
             max_response_backlog_bytes: 512KiB\n\
             native_transport_max_concurrent_connections_per_ip: 3\n\
             handshake_timeout: 2s\nnative_transport_idle_timeout: 30s\n",
        )
        .unwrap();
        assert_eq!(c.native_transport_max_request_data_in_flight, 64 << 20);
        assert_eq!(
            c.native_transport_max_request_data_in_flight_per_ip,
            1 << 20
        );
        assert_eq!(c.max_response_backlog_bytes, 512 << 10);
        assert_eq!(c.native_transport_max_concurrent_connections_per_ip, 3);
        assert_eq!(c.handshake_timeout, Duration::from_secs(2));
        assert_eq!(c.native_transport_idle_timeout, Duration::from_secs(30));
        let e = Config::from_yaml(
            "native_transport_max_request_data_in_flight: 64 parsecs\n\
             native_transport_max_concurrent_connections_per_ip: 0\nhandshake_timeout: 0s\n",
        )
        .unwrap_err();
        assert_eq!(e.problems.len(), 3, "{e}");
    }

    #[test]
    fn batch_size_thresholds_take_cassandras_kib_sizes() {
        let c = Config::default();
        assert_eq!(c.batch_size_warn_threshold, 5 << 10);
        assert_eq!(c.batch_size_fail_threshold, 50 << 10);
        assert_eq!(
            (c.tombstone_warn_threshold, c.tombstone_failure_threshold),
            (1000, 100_000)
        );
        let c = Config::from_yaml("tombstone_warn_threshold: 5\ntombstone_failure_threshold: 20\n")
            .unwrap();
        assert_eq!(
            (c.tombstone_warn_threshold, c.tombstone_failure_threshold),
            (5, 20)
        );
        let c =
            Config::from_yaml("batch_size_warn_threshold: 1KiB\nbatch_size_fail_threshold: 2MiB\n")
                .unwrap();
        assert_eq!(c.batch_size_warn_threshold, 1 << 10);
        assert_eq!(c.batch_size_fail_threshold, 2 << 20);
        // As Cassandra 5.0: a unit is required and bytes are below the key's least unit.
        let e =
            Config::from_yaml("batch_size_warn_threshold: 5\nbatch_size_fail_threshold: 2048B\n")
                .unwrap_err();
        assert_eq!(e.problems.len(), 2, "{e}");
        assert!(e.to_string().contains("`5` has no unit"), "{e}");
        assert!(parse_kib("2147483648KiB").is_err());
        assert!(parse_kib("5 KiB").is_err());
    }

    #[test]
    fn all_problems_are_reported_at_once() {
        let e = Config::from_yaml(
            "listen: not-an-address\nbogus_key: 1\nrequest_timeout: 10 parsecs\n\
             commitlog_sync: sometimes\nmax_connections: 0\n",
        )
        .unwrap_err();
        assert_eq!(e.problems.len(), 5, "{e}");
        assert!(e.to_string().contains("max_connections"), "{e}");
        let text = e.to_string();
        assert!(text.contains("bogus_key"), "{text}");
        assert!(text.contains("`listen`"), "{text}");
        assert!(text.contains("request_timeout"), "{text}");
        assert!(text.contains("sometimes"), "{text}");
    }

    #[test]
    fn range_checks_are_collected() {
        let e = Config::from_yaml(
            "max_connections: 0\nmax_streams_per_connection: 40000\nrequest_timeout: 0s\n\
             cluster_name: ''\nmax_frame_bytes: 10\n",
        )
        .unwrap_err();
        assert_eq!(e.problems.len(), 5, "{e}");
    }

    #[test]
    fn durations_parse_and_format() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert!(parse_duration("10").is_err());
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("5 fortnights").is_err());
        assert!(parse_duration("99999999999999999999d").is_err());
        assert_eq!(format_duration(Duration::from_millis(1500)), "1500ms");
        assert_eq!(format_duration(Duration::from_secs(120)), "2m");
    }

    #[test]
    fn auth_keys_are_cassandras() {
        let c = Config::from_yaml(
            "authenticator: PasswordAuthenticator\nauthorizer: CassandraAuthorizer\n\
             role_manager: CassandraRoleManager\nauth_default_superuser_password: s3cret\n\
             auth_login_max_failures: 3\nauth_login_failure_window: 5s\n",
        )
        .unwrap();
        assert_eq!(c.authenticator, Authenticator::PasswordAuthenticator);
        assert_eq!(c.authorizer, Authorizer::CassandraAuthorizer);
        assert_eq!(c.auth_default_superuser_password.as_deref(), Some("s3cret"));
        assert_eq!(c.auth_login_failure_window, Duration::from_secs(5));
        let e = Config::from_yaml("authorizer: CassandraAuthorizer\n").unwrap_err();
        assert!(
            e.to_string()
                .contains("AllowAllAuthenticator can't be used"),
            "{e}"
        );
        let e =
            Config::from_yaml("authenticator: PasswordAuthenticator\nupstream: [127.0.0.1:9042]\n")
                .unwrap_err();
        assert!(e.to_string().contains("proxy mode"), "{e}");
        assert!(Config::from_yaml("authorizer: SomethingElse\n").is_err());
    }

    #[test]
    fn proxy_section_parses() {
        let c = Config::from_yaml(
            "upstream: [127.0.0.1:9042, 10.0.0.6:9042]\nproxy:\n  cache_bytes: 1024\n  \
             max_staleness: 250ms\n  exclude: [ks.audit]\n  table_max_staleness:\n    ks.users: 5s\n  \
             serve_stale_on_upstream_error: [ks.users, other.*]\n",
        )
        .unwrap();
        assert_eq!(c.upstream.len(), 2);
        assert_eq!(c.proxy.cache_bytes, 1024);
        assert_eq!(c.proxy.max_staleness, Duration::from_millis(250));
        assert_eq!(c.proxy.exclude, vec!["ks.audit".to_string()]);
        assert_eq!(
            c.proxy.serve_stale_on_upstream_error,
            vec!["ks.users".to_string(), "other.*".to_string()]
        );
        assert_eq!(
            c.proxy.table_max_staleness.get("ks.users"),
            Some(&Duration::from_secs(5))
        );
        let e = Config::from_yaml("proxy:\n  bogus: 1\n").unwrap_err();
        assert!(e.to_string().contains("bogus"), "{e}");
        let e = Config::from_yaml("proxy:\n  exclude: [nodot]\n").unwrap_err();
        assert!(e.to_string().contains("nodot"), "{e}");
    }

    #[test]
    fn admin_off_loopback_needs_credentials() {
        let e = Config::from_yaml("admin_listen: 0.0.0.0:7199\n").unwrap_err();
        assert!(e.to_string().contains("off loopback"), "{e}");
        let e = Config::from_yaml("admin_username: ops\n").unwrap_err();
        assert!(e.to_string().contains("go together"), "{e}");
        let c = Config::from_yaml(
            "admin_listen: 0.0.0.0:7199\nadmin_username: ops\nadmin_password: pw\n",
        )
        .unwrap();
        assert_eq!(c.admin_listen.map(|a| a.port()), Some(7199));
        assert!(Config::from_yaml("admin_listen: 127.0.0.1:17199\n").is_ok());
        assert!(Config::from_yaml("admin_listen: 0.0.0.0:7199\nadmin_enabled: false\n").is_ok());
    }

    #[test]
    fn serialized_config_round_trips() {
        let c = Config::default();
        let text = serde_yaml::to_string(&c).unwrap();
        assert_eq!(Config::from_yaml(&text).unwrap(), c);
    }
}
