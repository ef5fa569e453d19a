//! Bounds on what clients may hold of the node: connections per client address, and request
//! bytes read but not answered yet, node-wide and per address (Cassandra's
//! `native_transport_max_concurrent_connections_per_ip`,
//! `native_transport_max_request_data_in_flight` and `..._per_ip`).
//!
//! Request bytes are counted as Cassandra counts them: the envelope body of each request, from
//! the moment it is read until its answer is handed to the connection's writer. A request that
//! takes a budget past its bound is still served (so one large request never deadlocks); the
//! connection then reads nothing more until the budget is back under its bound
//! ([`Limits::room`]). A client that asked for `THROW_ON_OVERLOAD` at STARTUP gets Overloaded
//! for that request instead ([`Limits::try_take`]).
//!
//! Answers have their own bound, per connection, in the writer (`max_response_backlog_bytes`).

use std::collections::HashMap;
use std::net::IpAddr;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::Notify;

use crate::config::Config;

/// One counted quantity with a bound, and a wake-up for those waiting for it to drop.
#[derive(Default)]
struct Budget {
    used: AtomicU64,
    freed: Notify,
}

impl Budget {
    fn over(&self, max: u64) -> bool {
        self.used.load(Ordering::Acquire) > max
    }

    /// Takes `n` if that stays within `max` (or nothing is taken yet, so one request larger
    /// than the bound still passes alone).
    fn try_take(&self, n: u64, max: u64) -> bool {
        let mut cur = self.used.load(Ordering::Acquire);
        loop {
            if cur != 0 && cur.saturating_add(n) > max {
                return false;
            }
            match self
                .used
                .compare_exchange_weak(cur, cur + n, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return true,
                Err(now) => cur = now,
            }
        }
    }

    /// Gives `n` back; wakes waiters only when the budget was over `max` (nobody waits
    /// otherwise, and the wake-up takes a lock).
    fn give(&self, n: u64, max: u64) {
        if self.used.fetch_sub(n, Ordering::AcqRel) > max {
            self.freed.notify_waiters();
        }
    }
}

/// What one client address holds.
#[derive(Default)]
pub(crate) struct Address {
    connections: AtomicUsize,
    bytes: Budget,
}

/// The node's limits and counters, shared by the listener and every connection.
pub(crate) struct Limits {
    max_connections_per_ip: Option<usize>,
    max_bytes: u64,
    max_bytes_per_ip: u64,
    bytes: Budget,
    addresses: Mutex<HashMap<IpAddr, Arc<Address>>>,
}

/// A connection's place in its address's count; dropping it gives the place back.
pub(crate) struct Admitted {
    limits: Arc<Limits>,
    ip: IpAddr,
    address: Arc<Address>,
}

impl Limits {
    pub(crate) fn new(config: &Config) -> Arc<Limits> {
        Arc::new(Limits {
            max_connections_per_ip: usize::try_from(
                config.native_transport_max_concurrent_connections_per_ip,
            )
            .ok(),
            max_bytes: config.native_transport_max_request_data_in_flight,
            max_bytes_per_ip: config.native_transport_max_request_data_in_flight_per_ip,
            bytes: Budget::default(),
            addresses: Mutex::new(HashMap::new()),
        })
    }

    /// Counts a new connection from `ip`, or `Err(open)` when `ip` already has the most
    /// connections allowed (`open` of them).
    pub(crate) fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<Admitted, usize> {
        let mut map = self
            .addresses
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let address = map.entry(ip).or_default().clone();
        let open = address.connections.load(Ordering::Acquire);
        if matches!(self.max_connections_per_ip, Some(max) if open >= max) {
            return Err(open);
        }
        address.connections.fetch_add(1, Ordering::AcqRel);
        Ok(Admitted {
            limits: self.clone(),
            ip,
            address,
        })
    }

    /// The most connections one address may open, if bounded.
    pub(crate) fn max_connections_per_ip(&self) -> Option<usize> {
        self.max_connections_per_ip
    }

    /// Takes `n` request bytes whatever the bounds (the request is served; the connection then
    /// waits in [`Limits::room`]).
    pub(crate) fn take(&self, address: &Address, n: u64) {
        self.bytes.used.fetch_add(n, Ordering::AcqRel);
        address.bytes.used.fetch_add(n, Ordering::AcqRel);
    }

    /// Takes `n` request bytes only if both bounds allow it (`THROW_ON_OVERLOAD` clients).
    pub(crate) fn try_take(&self, address: &Address, n: u64) -> bool {
        if !self.bytes.try_take(n, self.max_bytes) {
            return false;
        }
        if !address.bytes.try_take(n, self.max_bytes_per_ip) {
            self.bytes.give(n, self.max_bytes);
            return false;
        }
        true
    }

    /// Gives back bytes taken by [`Limits::take`] or [`Limits::try_take`].
    pub(crate) fn give(&self, address: &Address, n: u64) {
        if n > 0 {
            address.bytes.give(n, self.max_bytes_per_ip);
            self.bytes.give(n, self.max_bytes);
        }
    }

    /// True while the node or `address` holds more request bytes than its bound.
    pub(crate) fn over(&self, address: &Address) -> bool {
        self.bytes.over(self.max_bytes) || address.bytes.over(self.max_bytes_per_ip)
    }

    /// Returns once neither the node nor `address` is over its bound.
    pub(crate) async fn room(&self, address: &Address) {
        loop {
            let mut node = pin!(self.bytes.freed.notified());
            let mut own = pin!(address.bytes.freed.notified());
            // Registered before the check, so a release between the check and the wait wakes us.
            node.as_mut().enable();
            own.as_mut().enable();
            if !self.over(address) {
                return;
            }
            tokio::select! {
                _ = node => {}
                _ = own => {}
            }
        }
    }
}

impl Admitted {
    pub(crate) fn address(&self) -> &Arc<Address> {
        &self.address
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut map = self
            .limits
            .addresses
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if self.address.connections.fetch_sub(1, Ordering::AcqRel) == 1 {
            // Last connection of the address: forget it (its request bytes are all given back,
            // since every request of a connection is answered before the connection ends).
            map.remove(&self.ip);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;
    use std::time::Duration;

    fn limits(per_ip: i64, bytes: u64, bytes_per_ip: u64) -> Arc<Limits> {
        Limits::new(&Config {
            native_transport_max_concurrent_connections_per_ip: per_ip,
            native_transport_max_request_data_in_flight: bytes,
            native_transport_max_request_data_in_flight_per_ip: bytes_per_ip,
            ..Config::default()
        })
    }

    #[test]
    fn connections_per_address_are_counted_and_given_back() {
        let l = limits(2, 1 << 20, 1 << 20);
        let a = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
        let b = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));
        let first = l.admit(a).unwrap();
        let _second = l.admit(a).unwrap();
        assert_eq!(l.admit(a).err(), Some(2));
        let _other = l.admit(b).unwrap();
        drop(first);
        assert!(l.admit(a).is_ok());
    }

    #[test]
    fn request_bytes_bound_the_node_and_the_address() {
        let l = limits(-1, 1000, 600);
        let a = l.admit(IpAddr::V4(Ipv4Addr::LOCALHOST)).unwrap();
        let b = l.admit(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))).unwrap();
        assert!(l.try_take(a.address(), 500));
        assert!(!l.try_take(a.address(), 200), "address bound");
        assert!(l.try_take(b.address(), 500));
        assert!(!l.try_take(b.address(), 1), "node bound");
        l.give(a.address(), 500);
        assert!(l.try_take(b.address(), 100));
        // One request over the bound passes when nothing else is held.
        l.give(b.address(), 600);
        assert!(l.try_take(a.address(), 5000));
        assert!(l.over(a.address()));
    }

    #[tokio::test]
    async fn room_waits_for_bytes_to_be_given_back() {
        let l = limits(-1, 1000, 1000);
        let a = l.admit(IpAddr::V4(Ipv4Addr::LOCALHOST)).unwrap();
        l.take(a.address(), 1500);
        let waiter = {
            let (l, addr) = (l.clone(), a.address().clone());
            tokio::spawn(async move { l.room(&addr).await })
        };
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        l.give(a.address(), 1500);
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("room() returns once the bytes are back")
            .unwrap();
    }
}
