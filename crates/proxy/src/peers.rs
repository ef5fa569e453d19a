//! Watching the other proxies, so that drivers hear `STATUS_CHANGE` events for them.
//!
//! Drivers learn the peer proxies from `system.peers` and REGISTER for `STATUS_CHANGE` on one
//! of them (their control connection). Each proxy probes every peer once per interval: a TCP
//! connect and a v4 OPTIONS frame that must be answered SUPPORTED, each step bounded by
//! [`PROBE_TIMEOUT`]. A peer starts as UP (that is what drivers assume after reading
//! `system.peers`); [`FAILURES_FOR_DOWN`] failed probes in a row publish `DOWN` once, and the
//! first good probe after that publishes `UP` once.
//!
//! This is not failure detection for the data path (the proxy forwards to the upstream, never
//! to its peers) and not `TOPOLOGY_CHANGE`: the proxy list is static configuration.
//!
//! # Invariants
//! - Events for a peer alternate `DOWN`, `UP`, `DOWN`, ... and the first one is `DOWN`.
//! - The address in an event is the peer's address as configured, the one `system.peers`
//!   reports as `rpc_address` / `native_port`.
//! - The watcher never keeps its owner alive: it ends at the first tick after the owner is gone.

use std::net::SocketAddr;
use std::sync::{Arc, PoisonError, Weak};
use std::time::Duration;

use proto::frame::{Opcode, ProtocolVersion, HEADER_LEN, RESPONSE_BIT};
use proto::response::Event;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::{JoinHandle, JoinSet};

use server::EventBus;

use crate::ProxyBackend;

/// How often each peer is probed.
pub(super) const PROBE_INTERVAL: Duration = Duration::from_secs(1);
/// Bound on each step of a probe: connecting, then the OPTIONS exchange.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);
/// Failed probes in a row after which a peer is announced DOWN (one lost probe is not enough).
const FAILURES_FOR_DOWN: u32 = 2;
/// Largest SUPPORTED body accepted (a real one is a few hundred bytes).
const MAX_SUPPORTED_BYTES: usize = 64 * 1024;

/// Why a probe failed.
#[derive(Debug, thiserror::Error)]
enum ProbeError {
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("answered opcode {opcode:#04x} (version byte {version:#04x}, stream {stream}) to OPTIONS instead of SUPPORTED")]
    NotSupported {
        version: u8,
        stream: i16,
        opcode: u8,
    },
    #[error(
        "announced a SUPPORTED body of {0} bytes, more than the {MAX_SUPPORTED_BYTES} accepted"
    )]
    BodyTooLong(usize),
}

/// What one peer is known as, and the transition a probe result causes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PeerState {
    up: bool,
    failures: u32,
}

impl PeerState {
    fn new() -> Self {
        PeerState {
            up: true,
            failures: 0,
        }
    }

    /// Records one probe result; `Some("DOWN" | "UP")` when that changes what is announced.
    fn observe(&mut self, ok: bool) -> Option<&'static str> {
        if ok {
            self.failures = 0;
            if self.up {
                return None;
            }
            self.up = true;
            return Some("UP");
        }
        self.failures = self.failures.saturating_add(1);
        if self.up && self.failures >= FAILURES_FOR_DOWN {
            self.up = false;
            return Some("DOWN");
        }
        None
    }
}

/// Starts watching `peers` (see the module docs), publishing their status changes on `bus`
/// while `owner` lives. Aborting the returned handle stops every probe at once. Must run
/// inside a tokio runtime.
pub(super) fn watch<T: Send + Sync + 'static>(
    owner: Weak<T>,
    peers: Vec<SocketAddr>,
    bus: EventBus,
    interval: Duration,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        // Dropping the set (when this task is aborted) aborts the per-peer tasks too.
        let mut set = JoinSet::new();
        for peer in peers {
            set.spawn(watch_one(owner.clone(), peer, bus.clone(), interval));
        }
        while set.join_next().await.is_some() {}
    })
}

async fn watch_one<T>(owner: Weak<T>, peer: SocketAddr, bus: EventBus, interval: Duration) {
    let mut state = PeerState::new();
    let mut tick = tokio::time::interval(interval);
    // A probe may take up to twice PROBE_TIMEOUT: do not fire a burst after a slow one.
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if owner.strong_count() == 0 {
            return;
        }
        let result = probe(peer, PROBE_TIMEOUT).await;
        if let Err(e) = &result {
            tracing::debug!("probe of peer proxy {peer} failed: {e}");
        }
        let Some(change) = state.observe(result.is_ok()) else {
            continue;
        };
        if owner.strong_count() == 0 {
            return;
        }
        match &result {
            Err(e) => tracing::info!("peer proxy {peer} is DOWN ({e})"),
            Ok(()) => tracing::info!("peer proxy {peer} is UP"),
        }
        bus.publish(Event::StatusChange {
            change: change.to_string(),
            addr: peer,
        });
    }
}

/// One probe: connect, send OPTIONS (v4, stream 0), expect a SUPPORTED answer.
async fn probe(peer: SocketAddr, timeout: Duration) -> Result<(), ProbeError> {
    let mut sock = tokio::time::timeout(timeout, TcpStream::connect(peer))
        .await
        .map_err(|_| ProbeError::Timeout(timeout))??;
    tokio::time::timeout(timeout, options_exchange(&mut sock))
        .await
        .map_err(|_| ProbeError::Timeout(timeout))?
}

async fn options_exchange(sock: &mut TcpStream) -> Result<(), ProbeError> {
    let v4 = ProtocolVersion::V4.as_u8();
    let options = [v4, 0, 0, 0, Opcode::Options as u8, 0, 0, 0, 0];
    sock.write_all(&options).await?;
    let mut header = [0u8; HEADER_LEN];
    sock.read_exact(&mut header).await?;
    let version = header[0];
    let stream = i16::from_be_bytes([header[2], header[3]]);
    let opcode = header[4];
    if version != (v4 | RESPONSE_BIT) || stream != 0 || opcode != Opcode::Supported as u8 {
        return Err(ProbeError::NotSupported {
            version,
            stream,
            opcode,
        });
    }
    let len = u32::from_be_bytes([header[5], header[6], header[7], header[8]]) as usize;
    if len > MAX_SUPPORTED_BYTES {
        return Err(ProbeError::BodyTooLong(len));
    }
    // Read (and discard) the body so the peer sees an orderly close, not a reset.
    let mut body = vec![0u8; len];
    sock.read_exact(&mut body).await?;
    Ok(())
}

impl ProxyBackend {
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
        let task = watch(Arc::downgrade(self), peers, bus, PROBE_INTERVAL);
        if let Some(old) = self
            .peer_watch
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replace(task)
        {
            old.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use tokio::net::TcpListener;
    use tokio::sync::broadcast;

    #[test]
    fn two_failures_announce_down_once_and_one_success_announces_up() {
        let mut s = PeerState::new();
        assert_eq!(s.observe(true), None);
        assert_eq!(s.observe(false), None);
        assert_eq!(s.observe(true), None, "one lost probe is not DOWN");
        assert_eq!(s.observe(false), None);
        assert_eq!(s.observe(false), Some("DOWN"));
        assert_eq!(s.observe(false), None);
        assert_eq!(s.observe(false), None);
        assert_eq!(s.observe(true), Some("UP"));
        assert_eq!(s.observe(true), None);
    }

    /// A fake peer: answers every OPTIONS with a SUPPORTED frame until aborted.
    fn fake_peer(listener: TcpListener) -> JoinHandle<()> {
        tokio::spawn(async move {
            let mut conns = JoinSet::new();
            loop {
                let Ok((mut sock, _)) = listener.accept().await else {
                    return;
                };
                conns.spawn(async move {
                    let mut header = [0u8; HEADER_LEN];
                    while sock.read_exact(&mut header).await.is_ok() {
                        assert_eq!(header[4], Opcode::Options as u8);
                        // SUPPORTED with an empty string multimap.
                        let mut answer = vec![0x84, 0, header[2], header[3], 0x06, 0, 0, 0, 2];
                        answer.extend_from_slice(&[0, 0]);
                        if sock.write_all(&answer).await.is_err() {
                            return;
                        }
                    }
                });
            }
        })
    }

    async fn next_status(rx: &mut broadcast::Receiver<Arc<Event>>) -> (String, SocketAddr) {
        let ev = tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .expect("a status event within 5 s")
            .expect("the bus is open");
        match &*ev {
            Event::StatusChange { change, addr } => (change.clone(), *addr),
            other => panic!("unexpected event {other:?}"),
        }
    }

    #[tokio::test]
    async fn peer_going_away_and_coming_back_publishes_down_then_up() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let peer = fake_peer(listener);
        let bus = EventBus::new();
        let mut rx = bus.subscribe();
        let owner = Arc::new(());
        let interval = Duration::from_millis(50);
        let watcher = watch(Arc::downgrade(&owner), vec![addr], bus.clone(), interval);

        // A healthy peer announces nothing (it starts as UP).
        tokio::time::sleep(interval * 6).await;
        assert!(matches!(
            rx.try_recv(),
            Err(broadcast::error::TryRecvError::Empty)
        ));

        peer.abort();
        let _ = peer.await;
        assert_eq!(next_status(&mut rx).await, ("DOWN".to_string(), addr));

        let listener = TcpListener::bind(addr).await.unwrap();
        let peer = fake_peer(listener);
        assert_eq!(next_status(&mut rx).await, ("UP".to_string(), addr));
        // Announced once, not on every good probe.
        tokio::time::sleep(interval * 6).await;
        assert!(matches!(
            rx.try_recv(),
            Err(broadcast::error::TryRecvError::Empty)
        ));

        // The watcher ends once its owner is gone.
        drop(owner);
        tokio::time::timeout(Duration::from_secs(5), watcher)
            .await
            .expect("the watcher ends after its owner is dropped")
            .unwrap();
        peer.abort();
    }

    #[tokio::test]
    async fn a_peer_answering_something_else_is_down() {
        // Accepts and answers an ERROR frame: a port that is open is not enough.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                let mut header = [0u8; HEADER_LEN];
                if sock.read_exact(&mut header).await.is_ok() {
                    let _ = sock.write_all(&[0x84, 0, 0, 0, 0x00, 0, 0, 0, 0]).await;
                }
            }
        });
        let err = probe(addr, PROBE_TIMEOUT).await.unwrap_err();
        assert!(matches!(err, ProbeError::NotSupported { opcode: 0, .. }));
        server.abort();
    }
}
