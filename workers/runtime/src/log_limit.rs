//! Rate limits for log lines a client can trigger at will (dropped connections, failing
//! accepts), so a flood of bad clients cannot turn into a flood of log lines.
//!
//! Each call site owns a [`LogLimit`] (usually a `static`): at most `burst` lines per
//! window pass; the rest are counted, and the next line that passes reports how many were
//! suppressed since the last one.

use crate::sync::locked;
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Debug)]
struct Window {
    started: Option<Instant>,
    passed: u32,
    suppressed: u64,
}

/// One call site's budget of log lines.
#[derive(Debug)]
pub struct LogLimit {
    burst: u32,
    window: Duration,
    state: Mutex<Window>,
}

impl LogLimit {
    pub const fn new(burst: u32, window: Duration) -> Self {
        Self {
            burst,
            window,
            state: Mutex::new(Window {
                started: None,
                passed: 0,
                suppressed: 0,
            }),
        }
    }

    /// `Some(suppressed)` when a line may be written now, with the number of lines held
    /// back since the last one that was written; `None` when this one must be dropped.
    pub fn check(&self) -> Option<u64> {
        self.check_at(Instant::now())
    }

    fn check_at(&self, now: Instant) -> Option<u64> {
        let mut state = locked(&self.state);
        let started = *state.started.get_or_insert(now);
        if now.duration_since(started) >= self.window {
            state.started = Some(now);
            state.passed = 0;
        }
        if state.passed >= self.burst {
            state.suppressed += 1;
            return None;
        }
        state.passed += 1;
        Some(std::mem::take(&mut state.suppressed))
    }
}

#[doc(hidden)]
pub use tracing as __tracing;

/// Writes a log line through a `static` [`LogLimit`] of the call site:
/// `limited_log!(warn, 5, Duration::from_secs(10); addr = %addr, "accept failed")`.
#[macro_export]
macro_rules! limited_log {
    ($level:ident, $burst:expr, $window:expr; $($rest:tt)+) => {{
        static LIMIT: $crate::log_limit::LogLimit = $crate::log_limit::LogLimit::new($burst, $window);
        if let Some(suppressed) = LIMIT.check() {
            $crate::log_limit::__tracing::$level!(suppressed, $($rest)+);
        }
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_passes_then_lines_are_counted_and_reported_later() {
        let limit = LogLimit::new(3, Duration::from_secs(10));
        let start = Instant::now();
        let passed: Vec<_> = (0..100).map(|_| limit.check_at(start)).collect();
        assert_eq!(passed[..3], [Some(0), Some(0), Some(0)]);
        assert!(passed[3..].iter().all(Option::is_none));
        let later = start + Duration::from_secs(11);
        assert_eq!(
            limit.check_at(later),
            Some(97),
            "the next line says what was held back"
        );
        assert_eq!(limit.check_at(later), Some(0));
    }
}
