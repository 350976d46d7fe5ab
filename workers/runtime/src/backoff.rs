//! Delays between reconnection attempts of pushes and pulls, whatever the protocol: 1 s
//! doubling to 10 s, back to 1 s after a session that stayed up for a while.

use std::time::Duration;

const FIRST: Duration = Duration::from_secs(1);
const MAX: Duration = Duration::from_secs(10);
/// A session that lasted this long was healthy: the next failure starts over.
const HEALTHY: Duration = Duration::from_secs(10);

#[derive(Debug)]
pub struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self { next: FIRST }
    }
}

impl Backoff {
    /// The delay before the next attempt, after a session that was up for `lasted`.
    pub fn after(&mut self, lasted: Duration) -> Duration {
        if lasted >= HEALTHY {
            self.next = FIRST;
        }
        let delay = self.next;
        self.next = (self.next * 2).min(MAX);
        delay
    }

    pub fn reset(&mut self) {
        self.next = FIRST;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_to_the_cap_and_resets_after_a_healthy_session() {
        let mut backoff = Backoff::default();
        let delays: Vec<u64> = (0..6)
            .map(|_| backoff.after(Duration::ZERO).as_secs())
            .collect();
        assert_eq!(delays, [1, 2, 4, 8, 10, 10]);
        assert_eq!(backoff.after(Duration::from_secs(60)).as_secs(), 1);
        assert_eq!(backoff.after(Duration::ZERO).as_secs(), 2);
        backoff.reset();
        assert_eq!(backoff.after(Duration::ZERO).as_secs(), 1);
    }
}
