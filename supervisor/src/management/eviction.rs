//! Making room on a full listener: the open connections that are not serving a request
//! (idle, or a request head still arriving), so that a new client can take the place of
//! the oldest of them instead of being refused.
//!
//! The metrics listener uses it: its places are few (16), and connections that send
//! nothing from a handful of addresses (each under the per-address cap) would otherwise
//! hold every place until their idle timeout and refuse every scrape. A connection that
//! is handling or answering a request is never taken; the oldest idle one goes first, so
//! a flood of new connections closes its own older ones before a scraper that has just
//! connected.

use super::watch::{Phase, Watch};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use strom_ipc::sync::locked;
use tokio_util::sync::CancellationToken;

/// One open connection: its phase, and the token that closes it.
#[derive(Debug)]
struct Open {
    watch: Weak<Watch>,
    close: CancellationToken,
}

/// The open connections of a listener, oldest first. Each holds one of the listener's
/// places, so the table is bounded by its connection cap.
#[derive(Debug, Default)]
pub struct Eviction {
    next: AtomicU64,
    open: Mutex<BTreeMap<u64, Open>>,
}

/// A connection's entry; removed when dropped (the connection ended).
#[derive(Debug)]
pub struct Registration {
    eviction: Arc<Eviction>,
    id: u64,
}

impl Drop for Registration {
    fn drop(&mut self) {
        locked(&self.eviction.open).remove(&self.id);
    }
}

impl Eviction {
    /// Registers a connection; the token is cancelled when it is evicted.
    pub fn register(self: &Arc<Self>, watch: &Arc<Watch>) -> (Registration, CancellationToken) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let close = CancellationToken::new();
        locked(&self.open).insert(
            id,
            Open {
                watch: Arc::downgrade(watch),
                close: close.clone(),
            },
        );
        let registration = Registration {
            eviction: Arc::clone(self),
            id,
        };
        (registration, close)
    }

    /// Closes the oldest connection not serving a request; `false` when every one is.
    pub fn evict_oldest_idle(&self) -> bool {
        let mut open = locked(&self.open);
        let victim = open.iter().find_map(|(id, entry)| {
            let watch = entry.watch.upgrade()?;
            matches!(watch.phase(), Phase::Idle | Phase::Head).then_some(*id)
        });
        let Some(id) = victim.and_then(|id| open.remove(&id)) else {
            return false;
        };
        id.close.cancel();
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn watch() -> Arc<Watch> {
        Arc::new(Watch::new(Duration::from_secs(5), Duration::from_secs(5)))
    }

    #[test]
    fn the_oldest_connection_not_serving_a_request_goes_first() {
        let eviction = Arc::new(Eviction::default());
        let (busy, idle_old, idle_new) = (watch(), watch(), watch());
        let (_r1, busy_close) = eviction.register(&busy);
        let (_r2, old_close) = eviction.register(&idle_old);
        let (_r3, new_close) = eviction.register(&idle_new);
        busy.request_started();
        assert!(eviction.evict_oldest_idle());
        assert!(old_close.is_cancelled() && !busy_close.is_cancelled());
        assert!(!new_close.is_cancelled());
        assert!(eviction.evict_oldest_idle());
        assert!(new_close.is_cancelled());
        assert!(!eviction.evict_oldest_idle(), "only a busy one is left");
        assert!(!busy_close.is_cancelled());
    }

    #[test]
    fn ended_connections_leave_the_table() {
        let eviction = Arc::new(Eviction::default());
        let idle = watch();
        let (registration, close) = eviction.register(&idle);
        drop(registration);
        assert!(!eviction.evict_oldest_idle());
        assert!(!close.is_cancelled());
    }
}
