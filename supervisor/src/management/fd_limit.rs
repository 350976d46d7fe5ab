//! The supervisor's descriptor budget.
//!
//! At start the soft `RLIMIT_NOFILE` is raised to the hard limit (workers inherit it).
//! Management connections then get at most `limit - RESERVED_FDS - listeners`
//! descriptors, so what the supervisor needs besides them always remains:
//!
//! | what | descriptors |
//! |---|---|
//! | stdio, tokio's epoll, eventfd and signal pipe, the log | about 10 |
//! | each listening socket (RTMP, HTTP, HTTPS, management) | 1 each, counted apart |
//! | each worker: control socket, pidfd | 2 × 4 |
//! | each worker start: socketpair, exec pipe, `/dev/null` | 5 × 4 (all may restart at once) |
//! | a reload: new listeners bound before the old close, the files it reads | a few plus the new listeners |
//! | `sync_panel_settings` fetch, `sysinfo` reading `/proc` | a few |
//!
//! That is well under [`RESERVED_FDS`]; the rest is the margin.

use std::io;

/// Descriptors kept for everything but management connections and listening sockets.
pub const RESERVED_FDS: u64 = 128;

/// Raises the soft descriptor limit to the hard limit; returns the soft limit in force.
pub fn raise_nofile_limit() -> io::Result<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into the struct we own; no other memory.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: setrlimit reads the struct we own; raising the soft limit up to the
        // hard limit needs no privilege.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit = raised;
        } else {
            tracing::warn!(error = %io::Error::last_os_error(), soft = limit.rlim_cur, "could not raise the descriptor limit");
        }
    }
    Ok(limit.rlim_cur)
}

/// The management connection cap that fits a descriptor limit of `limit` with
/// `listeners` listening sockets: `configured`, or less when the limit is low (at
/// least 1).
pub fn connection_cap(configured: u32, limit: u64, listeners: usize) -> usize {
    let spare = limit
        .saturating_sub(RESERVED_FDS)
        .saturating_sub(listeners as u64);
    let cap = u64::from(configured).min(spare).max(1);
    usize::try_from(cap).unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_leaves_the_reserve_free() {
        assert_eq!(connection_cap(256, 1_048_576, 6), 256);
        // The classic 1024 limit: 256 fits.
        assert_eq!(connection_cap(256, 1024, 6), 256);
        // A tiny limit lowers the cap so that the reserve stays free.
        assert_eq!(connection_cap(256, 300, 6), 300 - 128 - 6);
        assert_eq!(connection_cap(256, 100, 6), 1);
    }

    #[test]
    fn raising_the_limit_reaches_the_hard_limit() {
        let soft = raise_nofile_limit().unwrap();
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: as in raise_nofile_limit.
        assert_eq!(
            unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) },
            0
        );
        assert_eq!(soft, limit.rlim_cur);
        assert_eq!(limit.rlim_cur, limit.rlim_max);
    }
}
