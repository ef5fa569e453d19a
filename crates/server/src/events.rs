//! Server-pushed EVENTs: one broadcast bus per server, filtered per connection.
//!
//! A connection subscribes when it first sends REGISTER; its writer task receives every event
//! and forwards the kinds the connection registered for (stream -1). A connection that falls
//! more than [`BUS_CAPACITY`] events behind loses the oldest ones (logged), which is how
//! Cassandra behaves under pressure too: events are hints, drivers re-read the schema.

use std::sync::Arc;

use proto::response::Event;
use tokio::sync::broadcast;

/// Events buffered per subscriber before the slowest one starts losing them.
pub const BUS_CAPACITY: usize = 1024;

/// The kinds of event a connection can REGISTER for, as a bit set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EventKinds(u8);

impl EventKinds {
    pub const TOPOLOGY_CHANGE: EventKinds = EventKinds(1);
    pub const STATUS_CHANGE: EventKinds = EventKinds(2);
    pub const SCHEMA_CHANGE: EventKinds = EventKinds(4);

    /// Parses one REGISTER entry; `None` for an unknown type.
    pub fn from_name(name: &str) -> Option<EventKinds> {
        match name {
            "TOPOLOGY_CHANGE" => Some(Self::TOPOLOGY_CHANGE),
            "STATUS_CHANGE" => Some(Self::STATUS_CHANGE),
            "SCHEMA_CHANGE" => Some(Self::SCHEMA_CHANGE),
            _ => None,
        }
    }

    /// The kind of one event.
    pub fn of(event: &Event) -> EventKinds {
        match event {
            Event::TopologyChange { .. } => Self::TOPOLOGY_CHANGE,
            Event::StatusChange { .. } => Self::STATUS_CHANGE,
            Event::SchemaChange(_) => Self::SCHEMA_CHANGE,
        }
    }

    pub fn union(self, other: EventKinds) -> EventKinds {
        EventKinds(self.0 | other.0)
    }

    pub fn contains(self, other: EventKinds) -> bool {
        self.0 & other.0 == other.0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// The server-wide event bus. Cloning is cheap (shares the channel).
#[derive(Clone)]
pub struct EventBus {
    tx: broadcast::Sender<Arc<Event>>,
}

impl Default for EventBus {
    fn default() -> Self {
        EventBus::new()
    }
}

impl EventBus {
    pub fn new() -> Self {
        EventBus {
            tx: broadcast::channel(BUS_CAPACITY).0,
        }
    }

    /// Sends `event` to every subscribed connection (none subscribed is not an error).
    pub fn publish(&self, event: Event) {
        let _ = self.tx.send(Arc::new(event));
    }

    /// Every event published from now on (the front end subscribes each registered
    /// connection; the proxy's tests listen here too).
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.tx.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse_and_combine() {
        let k = EventKinds::from_name("SCHEMA_CHANGE")
            .unwrap()
            .union(EventKinds::from_name("STATUS_CHANGE").unwrap());
        assert!(k.contains(EventKinds::SCHEMA_CHANGE));
        assert!(!k.contains(EventKinds::TOPOLOGY_CHANGE));
        assert!(EventKinds::from_name("schema_change").is_none());
        assert!(EventKinds::default().is_empty());
    }
}
