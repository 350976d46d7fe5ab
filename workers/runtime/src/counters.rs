//! Lock-free running totals a worker reports with every heartbeat.

use std::sync::atomic::{AtomicU64, Ordering};
use strom_ipc::status::Counters;

#[derive(Debug, Default)]
pub struct WorkerCounters {
    connections: AtomicU64,
    bytes_sent: AtomicU64,
    bytes_received: AtomicU64,
    ram_cache_bytes: AtomicU64,
    file_cache_bytes: AtomicU64,
    /// Descriptors that requests hold besides their connections' sockets (the packager's
    /// socket to the webrtc worker per signaling request). They are not connections (the
    /// heartbeat does not report them), but the accept loops count them with the
    /// connections against the descriptor budget ([`crate::fd_budget`]): a descriptor a
    /// client can make the worker open must never eat the reserve kept for files.
    request_descriptors: AtomicU64,
    /// Whether the worker's accept loops work (reported through the heartbeat).
    pub accept_health: crate::health::AcceptHealth,
}

impl WorkerCounters {
    /// Counts a connection as open until the guard is dropped.
    pub fn open_connection(self: &std::sync::Arc<Self>) -> ConnectionGuard {
        self.connections.fetch_add(1, Ordering::Relaxed);
        ConnectionGuard {
            counters: std::sync::Arc::clone(self),
        }
    }

    /// Connections open right now (their guards alive).
    pub fn open_connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }

    /// Takes a slot of `budget` for one more descriptor a request opens, when the open
    /// connections and the descriptors requests already hold leave one; `None` when the
    /// budget is used up (the request is refused instead of failing with `EMFILE`).
    pub fn take_descriptor(self: &std::sync::Arc<Self>, budget: u64) -> Option<DescriptorGuard> {
        let connections = self.connections.load(Ordering::Relaxed);
        self.request_descriptors
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
                (connections.saturating_add(held) < budget).then_some(held + 1)
            })
            .ok()?;
        Some(DescriptorGuard {
            counters: std::sync::Arc::clone(self),
        })
    }

    /// Descriptors counted against the budget now: open connections and the
    /// descriptors requests hold ([`Self::take_descriptor`]).
    pub fn descriptors_in_use(&self) -> u64 {
        self.connections
            .load(Ordering::Relaxed)
            .saturating_add(self.request_descriptors.load(Ordering::Relaxed))
    }

    pub fn add_sent(&self, bytes: u64) {
        self.bytes_sent.fetch_add(bytes, Ordering::Relaxed);
    }

    pub fn add_received(&self, bytes: u64) {
        self.bytes_received.fetch_add(bytes, Ordering::Relaxed);
    }

    pub fn set_ram_cache_bytes(&self, bytes: u64) {
        self.ram_cache_bytes.store(bytes, Ordering::Relaxed);
    }

    pub fn set_file_cache_bytes(&self, bytes: u64) {
        self.file_cache_bytes.store(bytes, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> Counters {
        Counters {
            connections: self.connections.load(Ordering::Relaxed),
            bytes_sent: self.bytes_sent.load(Ordering::Relaxed),
            bytes_received: self.bytes_received.load(Ordering::Relaxed),
            ram_cache_bytes: self.ram_cache_bytes.load(Ordering::Relaxed),
            file_cache_bytes: self.file_cache_bytes.load(Ordering::Relaxed),
        }
    }
}

/// Keeps one connection counted while it lives.
#[derive(Debug)]
pub struct ConnectionGuard {
    counters: std::sync::Arc<WorkerCounters>,
}

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        self.counters.connections.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Keeps one request descriptor counted while it lives.
#[derive(Debug)]
pub struct DescriptorGuard {
    counters: std::sync::Arc<WorkerCounters>,
}

impl Drop for DescriptorGuard {
    fn drop(&mut self) {
        self.counters
            .request_descriptors
            .fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn connections_are_counted_while_guards_live() {
        let counters = Arc::new(WorkerCounters::default());
        let first = counters.open_connection();
        let second = counters.open_connection();
        counters.add_sent(10);
        assert_eq!(counters.snapshot().connections, 2);
        drop(first);
        drop(second);
        let snapshot = counters.snapshot();
        assert_eq!(snapshot.connections, 0);
        assert_eq!(snapshot.bytes_sent, 10);
    }

    #[test]
    fn request_descriptors_share_the_budget_with_connections() {
        let counters = Arc::new(WorkerCounters::default());
        let _connection = counters.open_connection();
        let slot = counters.take_descriptor(3).unwrap();
        let _second = counters.take_descriptor(3).unwrap();
        assert!(
            counters.take_descriptor(3).is_none(),
            "1 connection + 2 slots"
        );
        assert_eq!(counters.descriptors_in_use(), 3);
        assert_eq!(
            counters.snapshot().connections,
            1,
            "slots are not connections"
        );
        drop(slot);
        assert!(counters.take_descriptor(3).is_some());
    }
}
