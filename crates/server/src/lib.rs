//! The CQL front end of Peregrine: everything async and process-level.
//!
//! It accepts native-protocol connections (v3, v4, v5 with segments, LZ4/Snappy compression),
//! does the handshake (OPTIONS, STARTUP, REGISTER), keeps many requests in flight per connection
//! and answers them out of order, pushes EVENTs, and hands every other request to a
//! [`Backend`]. It also holds the process configuration.
//!
//! It is **not** where statements are parsed or executed (that is the `Backend`: the `local`
//! crate's `LocalBackend` on the embedded engine in standalone mode, the `proxy` crate's
//! `ProxyBackend` in proxy mode; both depend on this crate, never the other way round, and the
//! binary picks one), it does not decode envelopes by hand (`proto::Deframer` does, for every
//! read loop), and it prints nothing: it logs through `tracing` and the binary decides where
//! logs go.
//!
//! # Module map
//!
//! | module | what it holds |
//! |---|---|
//! | [`config`] | [`Config`]: every key, its default, validation that reports all problems at once |
//! | [`backend`] | the [`Backend`] trait (the seam to the engine / proxy) and [`ConnState`] |
//! | [`clients`] | the live connections (for `system_views.clients`) |
//! | `server` | [`run`]: the accept loop, `max_connections`, shutdown with a grace period |
//! | `cores` | `thread_per_core`: one pinned single-threaded runtime per CPU, connections assigned round robin |
//! | `conn` | one connection's read loop: framing (through `proto::Deframer`), version negotiation, handshake, dispatch |
//! | `writer` | the one task per connection that writes: batching, v5 segment packing, events |
//! | `response` | a `Response` to the bytes of one envelope (in the request task) |
//! | `streams` | lock-free set of stream ids in flight, `max_streams_per_connection` |
//! | [`events`] | the broadcast bus behind REGISTER / EVENT |
//! | [`audit`] | the audit log (`audit_logging_options`): Cassandra's entry types, filters and `FileAuditLogger` lines, written by a thread to a rotating file |
//! | [`admin`] | the admin HTTP endpoint: `/metrics` and the `nodetool` commands |
//! | [`metrics`] | sharded counters and latency histograms, the Prometheus text writer |
//! | [`tls`] | `client_encryption_options` and the proxy's upstream TLS on rustls: PEM loading, the optional-mode sniff, reload on file change or SIGHUP |
//!
//! # Invariants
//!
//! - Only a connection's writer task writes to its socket; executors return values.
//! - Every length read off the network is bounded before allocation: envelope bodies by
//!   `max_frame_bytes` (checked on the header), requests in flight by
//!   `max_streams_per_connection`, connections by `max_connections`. Output waiting for a
//!   client that does not read is bounded too: past 8 MiB the connection stops reading requests
//!   until the writer catches up.
//! - No lock is shared between connections on the request path; per-connection state is a
//!   mutex touched only by that connection's requests, stream ids are atomic bits.
//! - A request error answers ERROR on its stream and keeps the connection; a framing error
//!   answers ProtocolError and closes it.

pub mod admin;
pub mod audit;
pub mod backend;
pub mod clients;
pub mod config;
mod conn;
mod cores;
pub mod events;
mod limits;
pub mod metrics;
mod response;
mod server;
mod streams;
pub mod tls;
mod writer;

pub use backend::{Backend, ConnState, Now, Reply, RequestFlags};
pub use config::Config;
pub use conn::CQL_VERSION;
pub use events::EventBus;
pub use server::{run, run_with_admin, run_with_events};
