//! The stream ids in flight on one connection.
//!
//! The reader marks a stream busy when it dispatches a request; the request task frees it just
//! *before* handing its response to the writer (freeing it after could let the client reuse the
//! id, having read the response, while the bit is still set). Lock-free: one bit per possible
//! id in atomic words, plus a counter for the per-connection limit.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::config::MAX_STREAM_IDS;

/// Why a stream could not be marked busy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The id is negative (reserved for server events) or already has a request in flight.
    Busy,
    /// `max_streams_per_connection` requests are already in flight.
    TooMany,
}

pub(crate) struct InFlight {
    bits: Box<[AtomicU64]>,
    count: AtomicU32,
    max: u32,
}

impl InFlight {
    pub(crate) fn new(max: u32) -> Self {
        InFlight {
            bits: (0..MAX_STREAM_IDS / 64)
                .map(|_| AtomicU64::new(0))
                .collect(),
            count: AtomicU32::new(0),
            max,
        }
    }

    /// Marks `stream` busy. Called by the connection's reader only.
    pub(crate) fn acquire(&self, stream: i16) -> Result<(), Refused> {
        let Ok(id) = u16::try_from(stream) else {
            return Err(Refused::Busy);
        };
        if self.count.load(Ordering::Acquire) >= self.max {
            return Err(Refused::TooMany);
        }
        let (word, bit) = (usize::from(id / 64), 1u64 << (id % 64));
        if self.bits[word].fetch_or(bit, Ordering::AcqRel) & bit != 0 {
            return Err(Refused::Busy);
        }
        self.count.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Frees a stream marked by `acquire`.
    pub(crate) fn release(&self, stream: i16) {
        let Ok(id) = u16::try_from(stream) else {
            return;
        };
        let (word, bit) = (usize::from(id / 64), 1u64 << (id % 64));
        if self.bits[word].fetch_and(!bit, Ordering::AcqRel) & bit != 0 {
            self.count.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Requests in flight now.
    pub(crate) fn count(&self) -> u32 {
        self.count.load(Ordering::Acquire)
    }

    #[cfg(test)]
    pub(crate) fn in_flight(&self) -> u32 {
        self.count.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_and_negative_ids_are_refused() {
        let f = InFlight::new(10);
        assert_eq!(f.acquire(5), Ok(()));
        assert_eq!(f.acquire(5), Err(Refused::Busy));
        assert_eq!(f.acquire(-1), Err(Refused::Busy));
        f.release(5);
        assert_eq!(f.acquire(5), Ok(()));
        assert_eq!(f.in_flight(), 1);
    }

    #[test]
    fn limit_counts_in_flight_streams() {
        let f = InFlight::new(2);
        assert_eq!(f.acquire(0), Ok(()));
        assert_eq!(f.acquire(32767), Ok(()));
        assert_eq!(f.acquire(1), Err(Refused::TooMany));
        f.release(0);
        f.release(0); // double release is harmless
        assert_eq!(f.in_flight(), 1);
        assert_eq!(f.acquire(1), Ok(()));
    }
}
