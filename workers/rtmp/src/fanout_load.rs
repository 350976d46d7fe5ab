//! How long a fan-out group gathers frames before it writes them: `play_coalesce_ms` while
//! the worker has time to spare, longer as fan-out takes more of it.
//!
//! Every pass over a group's players costs about the same whatever it carries (a system
//! call per player), so under load the way to serve more players is fewer, fuller passes.
//! All groups add the (wall-clock) time their passes take to one [`FanoutLoad`]; once
//! fan-out has taken more than [`BUSY_HIGH`] of the last window on the runtime's threads
//! (a pass takes longer on a core that other work saturates, too), each group stretches its gather
//! window by a quarter per pass (up to [`MAX_GATHER`]), and shrinks it again below
//! [`BUSY_LOW`]. Delay then grows with load instead of CPU: the worker keeps serving
//! every player at full rate, with frames a little later, where a server writing every
//! frame to every player runs out of core.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use strom_worker_runtime::sync::locked;

/// Fan-out's share of a window above which groups gather longer.
pub const BUSY_HIGH: f64 = 0.7;
/// Fan-out's share below which they gather less.
pub const BUSY_LOW: f64 = 0.55;
/// The longest a frame waits for a pass, however loaded the worker.
pub const MAX_GATHER: Duration = Duration::from_millis(100);
const WINDOW: Duration = Duration::from_millis(250);

/// The worker-wide time spent in fan-out passes.
pub struct FanoutLoad {
    /// The runtime's worker threads: passes on several threads share the cores.
    threads: u32,
    busy_nanos: AtomicU64,
    window_start: Mutex<Instant>,
    /// The last window's busy share, in millionths.
    share_millionths: AtomicU32,
}

impl Default for FanoutLoad {
    fn default() -> Self {
        let threads = tokio::runtime::Handle::try_current()
            .map_or(1, |runtime| runtime.metrics().num_workers());
        Self {
            threads: u32::try_from(threads.max(1)).unwrap_or(u32::MAX),
            busy_nanos: AtomicU64::new(0),
            window_start: Mutex::new(Instant::now()),
            share_millionths: AtomicU32::new(0),
        }
    }
}

impl FanoutLoad {
    /// Records a pass that took `spent`; closes the window when it is over.
    pub fn record(&self, spent: Duration) {
        let nanos = u64::try_from(spent.as_nanos()).unwrap_or(u64::MAX);
        self.busy_nanos.fetch_add(nanos, Ordering::Relaxed);
        let mut start = locked(&self.window_start);
        let elapsed = start.elapsed();
        if elapsed >= WINDOW {
            let busy = self.busy_nanos.swap(0, Ordering::Relaxed) as f64;
            let capacity = elapsed.as_nanos() as f64 * f64::from(self.threads);
            let share = (busy / capacity).min(1.0);
            self.share_millionths
                .store((share * 1e6) as u32, Ordering::Relaxed);
            *start = Instant::now();
        }
    }

    /// Fan-out's share of the last window (0 to 1).
    pub fn busy_share(&self) -> f64 {
        f64::from(self.share_millionths.load(Ordering::Relaxed)) / 1e6
    }

    /// The next gather window of a group that gathered `current`, never below `floor`
    /// (`play_coalesce_ms`).
    pub fn next_gather(&self, current: Duration, floor: Duration) -> Duration {
        let share = self.busy_share();
        let next = if share > BUSY_HIGH {
            (current + current / 4).max(Duration::from_millis(1))
        } else if share < BUSY_LOW {
            current - current / 4
        } else {
            current
        };
        next.clamp(floor, MAX_GATHER.max(floor))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_with_share(share: f64) -> FanoutLoad {
        let load = FanoutLoad::default();
        load.share_millionths
            .store((share * 1e6) as u32, Ordering::Relaxed);
        load
    }

    #[test]
    fn an_idle_worker_gathers_only_the_configured_window() {
        let load = load_with_share(0.0);
        let floor = Duration::from_millis(2);
        let mut gather = Duration::from_millis(80);
        for _ in 0..50 {
            gather = load.next_gather(gather, floor);
        }
        assert_eq!(gather, floor);
    }

    #[test]
    fn a_busy_worker_gathers_longer_up_to_the_limit() {
        let load = load_with_share(0.8);
        let floor = Duration::from_millis(2);
        let mut gather = floor;
        let mut previous = gather;
        for _ in 0..5 {
            gather = load.next_gather(gather, floor);
            assert!(gather > previous, "{gather:?} after {previous:?}");
            previous = gather;
        }
        for _ in 0..100 {
            gather = load.next_gather(gather, floor);
        }
        assert_eq!(gather, MAX_GATHER);
    }

    #[test]
    fn between_the_thresholds_the_window_holds_and_zero_can_grow() {
        let steady = load_with_share(0.6);
        let window = Duration::from_millis(7);
        assert_eq!(steady.next_gather(window, Duration::ZERO), window);
        let busy = load_with_share(0.9);
        assert!(busy.next_gather(Duration::ZERO, Duration::ZERO) > Duration::ZERO);
    }

    #[test]
    fn a_configured_window_above_the_limit_is_kept() {
        let load = load_with_share(0.0);
        let floor = Duration::from_millis(300);
        assert_eq!(load.next_gather(floor, floor), floor);
    }

    #[test]
    fn passes_fill_the_window_share() {
        let load = FanoutLoad::default();
        *locked(&load.window_start) = Instant::now() - WINDOW;
        load.record(WINDOW / 2);
        let share = load.busy_share();
        assert!(share > 0.3 && share <= 0.5, "{share}");
    }
}
