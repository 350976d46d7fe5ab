//! The worker-wide count of UDP port pairs RTSP connections hold (`max_udp_pairs`):
//! each pair is two descriptors, and without a total a crowd of connections each
//! setting up its share could run the worker out of descriptors and get it restarted,
//! dropping every RTSP client.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Pairs bound now, all connections together.
#[derive(Debug, Default)]
pub struct UdpBudget {
    bound: Arc<AtomicUsize>,
}

/// One pair's place in the budget, given back when dropped (with its connection).
#[derive(Debug)]
pub struct UdpPlace {
    bound: Arc<AtomicUsize>,
}

impl UdpBudget {
    /// A place for one more pair, unless `limit` pairs are bound already.
    pub fn take(&self, limit: usize) -> Option<UdpPlace> {
        self.bound
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |bound| {
                (bound < limit).then_some(bound + 1)
            })
            .ok()?;
        Some(UdpPlace {
            bound: Arc::clone(&self.bound),
        })
    }

    /// Pairs bound now.
    #[cfg(test)]
    pub fn bound(&self) -> usize {
        self.bound.load(Ordering::Acquire)
    }
}

impl Drop for UdpPlace {
    fn drop(&mut self) {
        self.bound.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::UdpBudget;

    #[test]
    fn places_stop_at_the_limit_and_come_back() {
        let budget = UdpBudget::default();
        let places: Vec<_> = (0..3).filter_map(|_| budget.take(3)).collect();
        assert_eq!(places.len(), 3);
        assert!(budget.take(3).is_none());
        assert!(budget.take(0).is_none());
        drop(places);
        assert_eq!(budget.bound(), 0);
        assert!(budget.take(3).is_some());
    }
}
