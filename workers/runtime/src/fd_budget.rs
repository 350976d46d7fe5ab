//! A worker's descriptor budget for connections.
//!
//! A worker needs descriptors for more than its clients' sockets: bus links to other
//! workers, files (DVR, HLS mirrors), SRT and UDP sockets, the control channel. When
//! connections take them all, `accept` fails with `EMFILE` and everything else the
//! worker does fails too. So at start a worker keeps [`reserved`] descriptors of its
//! `RLIMIT_NOFILE` aside and accepts at most the rest as connections: past that, a new
//! connection is closed right after it is accepted (logged, rate-limited), and the
//! open ones go on. Should `accept` fail for lack of descriptors anyway while the
//! worker serves at least half its budget, that is a full worker, not a broken one:
//! it backs off and keeps serving instead of being reported unhealthy. Descriptors a
//! request makes the worker open besides its connection (the packager's socket to the
//! webrtc worker) take a slot of the same budget
//! ([`crate::counters::WorkerCounters::take_descriptor`]).

use std::io;

/// The soft `RLIMIT_NOFILE` of this process (the supervisor raised it to the hard limit,
/// workers inherit it).
pub fn nofile_limit() -> io::Result<u64> {
    let (soft, _hard) = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)?;
    Ok(soft)
}

/// Descriptors kept for everything but connections: an eighth of the limit, at least 64
/// and at most 1,024.
pub fn reserved(limit: u64) -> u64 {
    (limit / 8).clamp(64, 1024)
}

/// Connections a worker with a descriptor limit of `limit` accepts at most (at least 16,
/// so that a tiny limit still serves someone).
pub fn connection_budget(limit: u64) -> u64 {
    limit.saturating_sub(reserved(limit)).max(16)
}

/// The budget of this process, logged once; `u64::MAX` when the limit is unknown or
/// unlimited.
pub fn this_process() -> u64 {
    match nofile_limit() {
        Ok(limit) if limit < u64::from(u32::MAX) => {
            let budget = connection_budget(limit);
            tracing::info!(
                descriptor_limit = limit,
                reserved = reserved(limit),
                max_connections = budget,
                "connections capped to fit the descriptor limit"
            );
            budget
        }
        Ok(_) => u64::MAX,
        Err(e) => {
            tracing::warn!(error = %e, "descriptor limit unknown: connections not capped by it");
            u64::MAX
        }
    }
}

/// The budget of this process as [`this_process`] computes it, without logging: for
/// caps sized from it (the packager's pending signaling requests).
pub fn of_this_process() -> u64 {
    match nofile_limit() {
        Ok(limit) if limit < u64::from(u32::MAX) => connection_budget(limit),
        _ => u64::MAX,
    }
}

/// Whether `error` is running out of descriptors (the process's or the system's).
pub fn is_exhaustion(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_leaves_a_reserve_at_every_limit() {
        assert_eq!(connection_budget(256), 192);
        assert_eq!(connection_budget(1024), 896);
        assert_eq!(connection_budget(20_000), 20_000 - 1024);
        assert_eq!(connection_budget(1_048_576), 1_048_576 - 1024);
        assert_eq!(
            connection_budget(40),
            16,
            "a tiny limit still serves someone"
        );
        assert!(nofile_limit().unwrap() > 0);
        assert!(is_exhaustion(&io::Error::from_raw_os_error(libc::EMFILE)));
        assert!(!is_exhaustion(&io::Error::from_raw_os_error(libc::EBADF)));
    }
}
