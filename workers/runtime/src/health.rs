//! Whether a worker can still do its job: a worker whose accept loops have failed without
//! a break for [`UNHEALTHY_AFTER`] (descriptors leaked, usually) answers its heartbeat
//! with a failure, and the supervisor restarts it instead of leaving a process that
//! reports ready while refusing everyone. Running out of descriptors while serving at
//! least half of the connection budget is not reported: that worker is full, and a
//! restart would drop everyone it serves ([`crate::fd_budget`]).

use crate::sync::locked;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long accepting may fail without a single success before the worker is unhealthy.
pub const UNHEALTHY_AFTER: Duration = Duration::from_secs(5);

#[derive(Debug, Default)]
struct Failing {
    since: Option<Instant>,
    last_error: String,
}

#[derive(Debug, Default)]
pub struct AcceptHealth {
    failing: Mutex<Failing>,
}

impl AcceptHealth {
    pub fn accepted(&self) {
        let mut failing = locked(&self.failing);
        if failing.since.is_some() {
            failing.since = None;
            tracing::info!("accepting connections again");
        }
    }

    pub fn failed(&self, error: &std::io::Error) {
        let mut failing = locked(&self.failing);
        failing.since.get_or_insert_with(Instant::now);
        failing.last_error = error.to_string();
    }

    /// Why the worker is unhealthy, if it is.
    pub fn problem(&self) -> Option<String> {
        self.problem_at(Instant::now())
    }

    fn problem_at(&self, now: Instant) -> Option<String> {
        let failing = locked(&self.failing);
        let since = failing.since?;
        let failing_for = now.saturating_duration_since(since);
        (failing_for >= UNHEALTHY_AFTER).then(|| {
            format!(
                "accepting connections has failed for {} s: {}",
                failing_for.as_secs(),
                failing.last_error
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_sustained_failure_is_unhealthy_and_one_success_heals() {
        let health = AcceptHealth::default();
        let emfile = std::io::Error::from_raw_os_error(24);
        let start = Instant::now();
        health.failed(&emfile);
        assert_eq!(health.problem_at(start + Duration::from_secs(1)), None);
        health.failed(&emfile);
        let problem = health.problem_at(start + UNHEALTHY_AFTER + Duration::from_secs(1));
        assert!(problem.is_some_and(|p| p.contains("failed for") && p.contains("(os error 24)")));
        health.accepted();
        assert_eq!(health.problem_at(start + UNHEALTHY_AFTER * 3), None);
    }
}
