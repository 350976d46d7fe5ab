//! Bytes an outgoing connection sent and received, and its measured send rate, shared
//! between the connection task and status queries.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use strom_worker_runtime::sync::locked;

/// The rate is measured over windows at least this long.
const WINDOW: Duration = Duration::from_secs(1);
/// A measurement older than this is stale: nothing was sent since.
const STALE: Duration = Duration::from_secs(3);

#[derive(Debug, Default)]
pub struct Traffic {
    sent: AtomicU64,
    received: AtomicU64,
    meter: Mutex<RateMeter>,
}

impl Traffic {
    pub fn add_sent(&self, bytes: u64) {
        self.sent.fetch_add(bytes, Ordering::Relaxed);
        locked(&self.meter).add(bytes, Instant::now());
    }

    pub fn add_received(&self, bytes: u64) {
        self.received.fetch_add(bytes, Ordering::Relaxed);
    }

    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    pub fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }

    /// Bits per second sent over the last complete window; 0 when nothing is being sent.
    pub fn send_rate_bps(&self) -> u64 {
        locked(&self.meter).rate_bps(Instant::now())
    }
}

#[derive(Debug, Default)]
struct RateMeter {
    window_start: Option<Instant>,
    window_bytes: u64,
    /// End of the last complete window and its rate.
    measured: Option<(Instant, u64)>,
}

impl RateMeter {
    fn add(&mut self, bytes: u64, now: Instant) {
        let start = *self.window_start.get_or_insert(now);
        self.window_bytes += bytes;
        let elapsed = now.duration_since(start);
        if elapsed >= WINDOW {
            let rate = (self.window_bytes as f64 * 8.0 / elapsed.as_secs_f64()) as u64;
            self.measured = Some((now, rate));
            self.window_start = Some(now);
            self.window_bytes = 0;
        }
    }

    fn rate_bps(&self, now: Instant) -> u64 {
        match self.measured {
            Some((at, rate)) if now.duration_since(at) < STALE => rate,
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_bits_per_second_over_whole_windows() {
        let mut meter = RateMeter::default();
        let t0 = Instant::now();
        meter.add(1000, t0);
        assert_eq!(meter.rate_bps(t0), 0, "no complete window yet");
        meter.add(1000, t0 + Duration::from_millis(500));
        meter.add(500, t0 + Duration::from_secs(2));
        // 2500 bytes over 2 s.
        assert_eq!(meter.rate_bps(t0 + Duration::from_secs(2)), 10_000);
        assert_eq!(meter.rate_bps(t0 + Duration::from_secs(6)), 0, "stale");
    }
}
