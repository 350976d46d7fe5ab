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
}
