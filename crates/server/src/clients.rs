//! The live client connections of this process, for `system_views.clients` and
//! `system_views.queries`.
//!
//! A connection is listed from its STARTUP on until its [`ConnState`] is dropped (the socket
//! closed and its last request answered). The registry is touched only when a connection starts
//! or ends, never per request, so its one lock is not on the request path.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

use crate::backend::ConnState;

fn registry() -> &'static Mutex<BTreeMap<u64, Weak<ConnState>>> {
    static REGISTRY: OnceLock<Mutex<BTreeMap<u64, Weak<ConnState>>>> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

/// Lists `conn` until it is dropped.
pub fn register(conn: &Arc<ConnState>) {
    registry()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(conn.id(), Arc::downgrade(conn));
}

/// Removes connection `id` (its `ConnState`'s drop does this).
pub(crate) fn forget(id: u64) {
    registry()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(&id);
}

/// The connections open now, by connection number.
pub fn list() -> Vec<Arc<ConnState>> {
    registry()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .values()
        .filter_map(Weak::upgrade)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::frame::ProtocolVersion;

    #[test]
    fn a_connection_is_listed_until_dropped() {
        let addr = "127.0.0.1:5000".parse().unwrap();
        let conn = Arc::new(ConnState::new(
            u64::MAX - 7,
            ProtocolVersion::V4,
            addr,
            None,
            Vec::new(),
        ));
        register(&conn);
        assert!(list().iter().any(|c| c.id() == u64::MAX - 7));
        drop(conn);
        assert!(!list().iter().any(|c| c.id() == u64::MAX - 7));
        assert!(!registry().lock().unwrap().contains_key(&(u64::MAX - 7)));
    }
}
