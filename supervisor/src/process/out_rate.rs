//! `OutRate` averaged over a window of heartbeats rather than one second.
//!
//! A one-second sample of a worker's byte counter swings with segment and GOP bursts (an
//! HLS viewer fetches a whole segment at once), and load balancers pick servers by this
//! figure. Each worker's heartbeat loop keeps the `(instant, bytes_sent)` of its last
//! heartbeats and reports bytes sent across [`WINDOW`] divided by the time they span;
//! `server_status` sums the workers' rates.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Span `OutRate` is averaged over (documented in the README).
pub const WINDOW: Duration = Duration::from_secs(10);
/// Bound on kept samples whatever the heartbeat pace (one a second fills about 11).
const MAX_SAMPLES: usize = 64;

/// Recent `(instant, bytes_sent)` readings of one worker process.
#[derive(Debug, Default)]
pub struct OutRateWindow {
    samples: VecDeque<(Instant, u64)>,
}

impl OutRateWindow {
    /// Records a heartbeat's counter and returns the averaged rate in bits per second
    /// (0 until two readings exist).
    pub fn record(&mut self, at: Instant, bytes_sent: u64) -> u64 {
        // A counter that went back (a new process) makes older readings meaningless.
        if self
            .samples
            .back()
            .is_some_and(|&(_, last)| bytes_sent < last)
        {
            self.samples.clear();
        }
        self.samples.push_back((at, bytes_sent));
        // Keep the newest reading at least WINDOW old as the base, so the average covers the
        // whole window rather than slightly less of it.
        while self.samples.len() > 2
            && self
                .samples
                .get(1)
                .is_some_and(|&(second, _)| at.saturating_duration_since(second) >= WINDOW)
        {
            self.samples.pop_front();
        }
        while self.samples.len() > MAX_SAMPLES {
            self.samples.pop_front();
        }
        self.rate_bps()
    }

    /// Bits per second between the oldest and newest kept reading.
    pub fn rate_bps(&self) -> u64 {
        let (Some(&(first_at, first)), Some(&(last_at, last))) =
            (self.samples.front(), self.samples.back())
        else {
            return 0;
        };
        let seconds = last_at.saturating_duration_since(first_at).as_secs_f64();
        if seconds < 0.001 {
            return 0;
        }
        (last.saturating_sub(first) as f64 * 8.0 / seconds) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MBIT: u64 = 1_000_000;

    #[test]
    fn bursty_seconds_average_over_the_window() {
        let start = Instant::now();
        let mut window = OutRateWindow::default();
        let mut sent = 0u64;
        let mut rate = window.record(start, sent);
        assert_eq!(rate, 0, "one reading has no rate");
        // Nine quiet seconds at 1 Mbit/s, then one 31 Mbit burst: 4 Mbit/s over ten seconds.
        for second in 1..=10u64 {
            sent += if second == 10 {
                31 * MBIT / 8
            } else {
                MBIT / 8
            };
            rate = window.record(start + Duration::from_secs(second), sent);
        }
        assert_eq!(rate, 4 * MBIT, "not the last second's 31 Mbit/s");
    }

    #[test]
    fn old_readings_leave_the_window() {
        let start = Instant::now();
        let mut window = OutRateWindow::default();
        let mut sent = 0u64;
        window.record(start, sent);
        // Twenty seconds at 8 Mbit/s, then ten at 2 Mbit/s: only the last ten count.
        for second in 1..=30u64 {
            sent += if second <= 20 { MBIT } else { MBIT / 4 };
            window.record(start + Duration::from_secs(second), sent);
        }
        assert_eq!(window.rate_bps(), 2 * MBIT);
        assert!(
            window.samples.len() <= 11,
            "{} samples kept",
            window.samples.len()
        );
    }

    #[test]
    fn a_missed_heartbeat_widens_the_span_not_the_rate() {
        let start = Instant::now();
        let mut window = OutRateWindow::default();
        window.record(start, 0);
        window.record(start + Duration::from_secs(1), MBIT / 8);
        // Three seconds until the next answer, at the same 1 Mbit/s.
        let rate = window.record(start + Duration::from_secs(4), MBIT / 2);
        assert_eq!(rate, MBIT);
    }

    #[test]
    fn a_counter_that_goes_back_starts_over() {
        let start = Instant::now();
        let mut window = OutRateWindow::default();
        window.record(start, 10 * MBIT);
        window.record(start + Duration::from_secs(1), 20 * MBIT);
        assert_eq!(window.record(start + Duration::from_secs(2), 5), 0);
        assert_eq!(
            window.record(start + Duration::from_secs(3), 5 + MBIT / 8),
            MBIT
        );
    }

    #[test]
    fn samples_stay_bounded_at_any_pace() {
        let start = Instant::now();
        let mut window = OutRateWindow::default();
        for tick in 0..1000u64 {
            window.record(start + Duration::from_millis(tick), tick);
        }
        assert!(window.samples.len() <= MAX_SAMPLES);
    }
}
