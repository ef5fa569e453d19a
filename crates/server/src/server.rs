//! The listener: accepts connections, enforces `max_connections`, and shuts down cleanly.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use proto::error::DbError;
use proto::frame::ProtocolVersion;
use proto::response::Response;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::admin::{self, Admin};
use crate::audit::AuditLog;
use crate::backend::Backend;
use crate::config::Config;
use crate::conn::{self, Accepted, Shared};
use crate::cores::Cores;
use crate::events::EventBus;
use crate::limits::Limits;
use crate::metrics;
use crate::response::encode;
use crate::tls::{self, ServerTls, Transport};

/// How long a connection over the limit may take to send its first header before it is
/// closed without an answer.
const REJECT_READ_TIMEOUT: Duration = Duration::from_secs(1);

/// Serves CQL on `listener` until `shutdown` is cancelled, then stops accepting, gives
/// in-flight requests up to `config.request_timeout` to finish, closes every connection and
/// calls `backend.shutdown()`.
///
/// The caller binds the listener (tests bind `127.0.0.1:0`). Events go to a bus private to this
/// server; use [`run_with_events`] to publish events from outside (proxy mode).
pub async fn run<B: Backend>(
    config: Config,
    listener: TcpListener,
    backend: Arc<B>,
    shutdown: CancellationToken,
) {
    run_with_events(config, listener, backend, shutdown, EventBus::new()).await;
}

/// [`run`] with a caller-supplied event bus (for events that do not come from a backend
/// response, such as an upstream cluster's topology changes).
pub async fn run_with_events<B: Backend>(
    config: Config,
    listener: TcpListener,
    backend: Arc<B>,
    shutdown: CancellationToken,
    events: EventBus,
) {
    run_with_admin(config, listener, backend, shutdown, events, None).await;
}

/// [`run_with_events`], also serving the admin endpoint (`/metrics`, nodetool) on `admin`
/// when given (the caller binds it, as it binds the CQL listener).
pub async fn run_with_admin<B: Backend>(
    config: Config,
    listener: TcpListener,
    backend: Arc<B>,
    shutdown: CancellationToken,
    events: EventBus,
    admin: Option<TcpListener>,
) {
    let tls = match ServerTls::load(&config.client_encryption_options) {
        Ok(tls) => tls,
        Err(e) => {
            // `Config::validate` read the same files at start-up; they broke since.
            tracing::error!("client_encryption_options: {e}; not serving");
            return;
        }
    };
    if let Some(tls) = &tls {
        tokio::spawn(tls::watch(
            tls.clone(),
            config.tls_reload_interval,
            shutdown.clone(),
        ));
    }
    let handshake_timeout = config.handshake_timeout;
    let grace = config.request_timeout;
    let limit = Arc::new(Semaphore::new(config.max_connections));
    let max_connections = config.max_connections;
    let limits = Limits::new(&config);
    let host = listener.local_addr().unwrap_or(config.listen);
    let audit = AuditLog::new(&config.audit_logging_options, host);
    let shared = Arc::new(Shared {
        config,
        backend,
        events,
        limits: limits.clone(),
        audit: audit.clone(),
    });
    // `nodetool disablebinary` closes the CQL port and its connections; `enablebinary`
    // binds it again. The backend failing (`disk_failure_policy: stop`) does the same while
    // it says why (`fault`), as Cassandra's `stop` stops its transports: drivers fail over or
    // surface it instead of getting errors from a node that cannot serve.
    let (binary, mut binary_changes) = watch::channel(true);
    let (fault, mut fault_changes) = watch::channel(None::<String>);
    tokio::spawn(watch_health(
        shared.backend.clone(),
        fault,
        shutdown.clone(),
    ));
    if let Some(admin) = admin {
        let state = Arc::new(Admin::new(
            shared.backend.clone(),
            shared.config.clone(),
            binary.clone(),
            fault_changes.clone(),
            audit.clone(),
        ));
        tokio::spawn(admin::serve(admin, state, shutdown.clone()));
    }
    let address = listener.local_addr().ok();
    let mut listener = Some(listener);
    let mut clients = shutdown.child_token();
    let metrics = metrics::global();
    let tracker = TaskTracker::new();
    let cores = match shared.config.thread_per_core.then(Cores::start).transpose() {
        Ok(cores) => cores,
        Err(e) => {
            tracing::error!(
                "thread_per_core: cannot start the per-core runtimes: {e}; not serving"
            );
            return;
        }
    };
    if let Some(cores) = &cores {
        tracing::info!(
            "thread_per_core: connections served on {} pinned runtime threads",
            cores.len()
        );
    }
    let next_id = AtomicU64::new(1);
    let mut backoff = Duration::from_millis(5);
    // Whether the port is closed because the backend failed (rather than by the operator).
    let mut closed_by_fault = false;
    loop {
        let enabled = *binary_changes.borrow_and_update();
        let why = fault_changes.borrow_and_update().clone();
        match (&listener, enabled, &why) {
            (Some(_), true, Some(why)) => {
                tracing::error!(
                    "native transport stopped: {why}; client connections closed and new ones refused until the store serves again"
                );
                listener = None;
                clients.cancel();
                closed_by_fault = true;
            }
            (Some(_), false, _) => {
                tracing::info!("native transport stopped (nodetool disablebinary or drain)");
                listener = None;
                clients.cancel();
                closed_by_fault = false;
            }
            (None, true, None) => {
                match address.map(TcpListener::bind) {
                    Some(bind) => match bind.await {
                        Ok(l) => {
                            if closed_by_fault {
                                tracing::warn!(
                                    "native transport started again: the store serves again"
                                );
                            } else {
                                tracing::info!(
                                    "native transport started again (nodetool enablebinary)"
                                );
                            }
                            listener = Some(l);
                            clients = shutdown.child_token();
                            closed_by_fault = false;
                        }
                        Err(e) if closed_by_fault => {
                            // Nobody asked for the port to close: keep trying to serve again.
                            tracing::warn!("cannot listen again after the store recovered: {e}; retrying in 1s");
                            tokio::select! {
                                _ = shutdown.cancelled() => break,
                                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                            }
                            continue;
                        }
                        Err(e) => {
                            tracing::warn!("enablebinary: cannot listen again: {e}");
                            binary.send_replace(false);
                        }
                    },
                    None => tracing::warn!("enablebinary: the CQL listener's address is unknown"),
                }
            }
            (None, false, _) => closed_by_fault = false,
            _ => {}
        }
        let Some(open) = &listener else {
            tokio::select! {
                biased;
                _ = shutdown.cancelled() => break,
                _ = binary_changes.changed() => {}
                _ = fault_changes.changed() => {}
            }
            continue;
        };
        let accepted = tokio::select! {
            biased;
            _ = shutdown.cancelled() => break,
            _ = binary_changes.changed() => continue,
            _ = fault_changes.changed() => continue,
            r = open.accept() => r,
        };
        let (socket, addr) = match accepted {
            Ok(a) => {
                backoff = Duration::from_millis(5);
                a
            }
            Err(e) => {
                // Typically EMFILE: back off instead of spinning, keep serving.
                tracing::warn!("accept failed: {e}; retrying in {backoff:?}");
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = binary_changes.changed() => {}
                    _ = fault_changes.changed() => {}
                    _ = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(Duration::from_secs(1));
                continue;
            }
        };
        // Responses are small and latency matters more than packet count; the writer batches.
        let _ = socket.set_nodelay(true);
        let id = next_id.fetch_add(1, Ordering::Relaxed);
        let Ok(permit) = limit.clone().try_acquire_owned() else {
            metrics.connections_refused_total.add(1);
            tracing::warn!(
                "connection from {addr} refused: {max_connections} connections open (max_connections)"
            );
            let why = format!(
                "Too many connections: this server accepts at most {max_connections} (max_connections)"
            );
            tracker.spawn(reject(socket, tls.clone(), addr, why));
            continue;
        };
        let admitted = match limits.admit(addr.ip()) {
            Ok(a) => a,
            Err(open) => {
                metrics.connections_refused_total.add(1);
                tracing::warn!(
                    "connection from {addr} refused: {open} connections open from {} (native_transport_max_concurrent_connections_per_ip)",
                    addr.ip()
                );
                let why = format!(
                    "Too many connections from {}: this server accepts at most {} per client address (native_transport_max_concurrent_connections_per_ip)",
                    addr.ip(),
                    limits.max_connections_per_ip().unwrap_or(open)
                );
                tracker.spawn(reject(socket, tls.clone(), addr, why));
                continue;
            }
        };
        tracing::debug!("connection {id} from {addr} accepted");
        let shared = shared.clone();
        let shutdown = clients.clone();
        let tls = tls.clone();
        let counted = metrics::OpenConnection::new();
        let mut accepted = Accepted {
            addr,
            id,
            admitted,
            handshake_deadline: Instant::now() + handshake_timeout,
            tls: None,
        };
        let serve = move |socket: TcpStream| async move {
            let deadline = accepted.handshake_deadline;
            let transport = tokio::select! {
                _ = shutdown.cancelled() => return,
                r = tokio::time::timeout_at(deadline, tls::accept(socket, tls.as_deref())) => r,
            };
            match transport {
                Ok(Ok(Transport::Plain(s))) => {
                    conn::serve(shared, s.into_split(), accepted, shutdown).await
                }
                Ok(Ok(Transport::Tls(s))) => {
                    let session = s.get_ref().1;
                    accepted.tls = session
                        .protocol_version()
                        .zip(session.negotiated_cipher_suite())
                        .map(|(v, c)| (tls::protocol_name(v), tls::cipher_suite_name(c)));
                    conn::serve(shared, tokio::io::split(*s), accepted, shutdown).await
                }
                Ok(Err(e)) => tracing::info!("connection {id} from {addr} closed: {e}"),
                Err(_) => tracing::info!(
                    "connection {id} from {addr} closed: no TLS handshake within {handshake_timeout:?} (handshake_timeout)"
                ),
            }
            drop(permit);
            drop(counted);
        };
        match &cores {
            Some(cores) => cores.serve(socket, &tracker, serve),
            None => {
                tokio::spawn(tracker.track_future(serve(socket)));
            }
        }
    }
    drop(listener);
    tracker.close();
    tracing::info!(
        "shutting down: waiting up to {grace:?} for {} connections",
        tracker.len()
    );
    if tokio::time::timeout(grace, tracker.wait()).await.is_err() {
        tracing::warn!(
            "{} connections still busy after {grace:?}; closing them",
            tracker.len()
        );
    }
    shared.backend.shutdown().await;
    // Every entry queued so far reaches the file before the process exits.
    let _ = tokio::task::spawn_blocking(move || audit.disable()).await;
}

/// How often the accept loop asks the backend whether it can serve ([`Backend::unavailable`]).
const HEALTH_POLL: Duration = Duration::from_millis(100);

/// Publishes [`Backend::unavailable`] on `fault` whenever it changes, until `shutdown`.
async fn watch_health<B: Backend>(
    backend: Arc<B>,
    fault: watch::Sender<Option<String>>,
    shutdown: CancellationToken,
) {
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(HEALTH_POLL) => {}
        }
        let now = backend.unavailable();
        fault.send_if_modified(|current| {
            let changed = *current != now;
            if changed {
                current.clone_from(&now);
            }
            changed
        });
    }
}

/// Answers the first request of a connection over the limit with an error in the client's
/// version (if it is one we speak), then closes; over TLS when the port speaks it.
async fn reject(socket: TcpStream, tls: Option<Arc<ServerTls>>, addr: SocketAddr, message: String) {
    let accepted = tokio::time::timeout(REJECT_READ_TIMEOUT, tls::accept(socket, tls.as_deref()));
    match accepted.await {
        Ok(Ok(Transport::Plain(s))) => reject_on(s, addr, message).await,
        Ok(Ok(Transport::Tls(s))) => reject_on(*s, addr, message).await,
        _ => tracing::debug!("refused connection from {addr} closed during the TLS handshake"),
    }
}

async fn reject_on<S: AsyncRead + AsyncWrite + Unpin>(
    mut socket: S,
    addr: SocketAddr,
    message: String,
) {
    let mut header = [0u8; 9];
    let mut n = 0;
    let read = async {
        while n < 4 {
            match socket.read(&mut header[n..]).await {
                Ok(0) | Err(_) => return false,
                Ok(k) => n += k,
            }
        }
        true
    };
    if !matches!(
        tokio::time::timeout(REJECT_READ_TIMEOUT, read).await,
        Ok(true)
    ) {
        return;
    }
    let Some(version) = ProtocolVersion::from_u8(header[0] & 0x7f) else {
        return;
    };
    let stream = i16::from_be_bytes([header[2], header[3]]);
    let err = DbError::Overloaded { message };
    let frame = encode(version, None, stream, &Response::Error(err));
    if socket.write_all(&frame).await.is_ok() {
        let _ = socket.shutdown().await;
        // Drain briefly so the close is a FIN, not an RST that could discard the error.
        let mut sink = [0u8; 1024];
        let drain = async { while matches!(socket.read(&mut sink).await, Ok(k) if k > 0) {} };
        let _ = tokio::time::timeout(REJECT_READ_TIMEOUT, drain).await;
    }
    tracing::debug!("refused connection from {addr} closed");
}
