//! The control connection and what follows a schema change.
//!
//! One control connection to the upstream, REGISTERed for SCHEMA_CHANGE and kept open while
//! the backend lives ([`ProxyBackend::relay_upstream_events`]): each event invalidates what it
//! names and is relayed to the proxy's registered clients, except the events of DDL that went
//! through this proxy (the front end announced those already). The same invalidation runs for
//! the schema changes, TRUNCATEs and unknown statements answered through the proxy
//! (`after_statement`). After DDL answered by one node, the proxy waits (bounded) until the
//! other upstream nodes report the same schema version, as a driver would.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, PoisonError, Weak};
use std::time::{Duration, Instant};

use proto::frame::ProtocolVersion;
use proto::request::{Query, QueryParams, Request};
use proto::response::{
    Event, Response, ResultBody, SchemaChange, SchemaChangeTarget, SchemaChangeType,
};
use proto::types::Value;
use server::EventBus;

use crate::classify::{Class, TableRef};
use crate::forward::decoded_rows;
use crate::upstream::{Connection, Events, UpstreamError};
use crate::{Ctx, ProxyBackend};

/// How often the control connection is checked with OPTIONS (a silent upstream is replaced).
const CONTROL_PING: Duration = Duration::from_secs(5);

/// A control connection that answered nothing for this long is replaced.
const CONTROL_SILENT: Duration = Duration::from_secs(30);

/// Pause between attempts to open the control connection.
const CONTROL_RETRY: Duration = Duration::from_secs(1);

/// How long a schema change answered through this proxy suppresses the same upstream event.
const OWN_DDL_WINDOW: Duration = Duration::from_secs(10);

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

impl ProxyBackend {
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

    /// Opens and registers a control connection on the first upstream node that accepts,
    /// starting at `*next`. `None` when none does (or no login is known yet).
    async fn open_control(&self, next: &mut usize) -> Option<(Arc<Connection>, Events)> {
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
                self.settings.tls.as_ref(),
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

    /// A schema change, answered through the proxy or pushed by the upstream: invalidates
    /// what it names and forgets statements of what was dropped or altered. An altered table's
    /// statements must be prepared again by the client: Cassandra forgets them when columns
    /// change, and repairing the UNPREPARED here would hand a v4 client that skips result
    /// metadata rows of a shape it does not know. (An ALTER of options only costs the client
    /// one UNPREPARED and a PREPARE.)
    fn schema_changed(&self, sc: &SchemaChange) {
        match &sc.target {
            SchemaChangeTarget::Table { keyspace, name } => {
                self.cache.invalidate_table(keyspace, name);
                self.forget_clustering(|t| t.keyspace == *keyspace && t.table == *name);
                if sc.change != SchemaChangeType::Created {
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

    /// Invalidation for TRUNCATE, DDL and unknown statements.
    pub(crate) fn after_statement(&self, class: &Class, resp: &Response) {
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

    /// After a schema change answered by `up`'s node: waits until every upstream node this
    /// proxy sends requests to reports that node's schema version, as a driver does after DDL
    /// (the client's driver cannot: it sees only proxies), so the next request cannot reach a
    /// node that does not know the change yet. A lagging node that does not accept a TCP
    /// connection is down (a driver skips the nodes it sees down): not waited for. At most
    /// `proxy.schema_agreement_wait`; then the answer goes back anyway.
    pub(crate) async fn await_schema_agreement(&self, up: &Connection) {
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
        let resp = self.send(up, &q, deadline, &Ctx::default()).await.ok()?;
        decoded_rows(&resp, up.version())?.decode_rows().ok()
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
                    // The queue overflowed (bounded: upstream::EVENT_QUEUE): some change may
                    // have been missed, as when the connection was reopened.
                    let dropped = rx.take_dropped();
                    if dropped > 0 {
                        b.metrics.events_dropped.fetch_add(dropped, std::sync::atomic::Ordering::Relaxed);
                        tracing::warn!("{dropped} upstream event(s) dropped (queue full); invalidating the whole cache");
                        b.cache.invalidate_all();
                    }
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
