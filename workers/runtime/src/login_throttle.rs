//! Throttling of failed source logins per client address (Icecast source passwords,
//! RTSP publisher Digest, RTMP publisher `authmod=adobe`): after [`MAX_FAILURES`] failed
//! attempts within [`WINDOW`], the address's next attempts are refused without being
//! checked for [`LOCKOUT`]. Without it one client could try thousands of passwords a
//! second.
//!
//! Each worker process has one table ([`SOURCE_LOGINS`]), shared by its protocols. An
//! IPv6 client counts by its /64 (one subscriber's network), as the session caps do. The
//! table holds at most [`MAX_CLIENTS`] addresses: past that, entries whose window and
//! lockout are over are dropped, then the oldest, so a flood of addresses costs bounded
//! memory (and at worst forgets some counts early).

use crate::sync::locked;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failed attempts one address may make within [`WINDOW`].
pub const MAX_FAILURES: u32 = 10;
/// The window failures are counted in.
pub const WINDOW: Duration = Duration::from_secs(60);
/// How long an address that made too many is refused.
pub const LOCKOUT: Duration = Duration::from_secs(60);
/// Addresses tracked at most.
pub const MAX_CLIENTS: usize = 10_000;

/// The worker's table of failed source logins.
pub static SOURCE_LOGINS: LoginThrottle = LoginThrottle::new(MAX_FAILURES, WINDOW, LOCKOUT);

#[derive(Debug, Clone, Copy)]
struct Entry {
    window_start: Instant,
    failures: u32,
    locked_until: Option<Instant>,
}

impl Entry {
    fn over(&self, now: Instant, window: Duration) -> bool {
        now.duration_since(self.window_start) >= window
            && self.locked_until.is_none_or(|until| now >= until)
    }
}

/// Failed logins per client address.
#[derive(Debug)]
pub struct LoginThrottle {
    max_failures: u32,
    window: Duration,
    lockout: Duration,
    clients: Mutex<BTreeMap<IpAddr, Entry>>,
}

/// The key an address counts under: itself, or its /64 for IPv6.
pub fn client_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => IpAddr::V6((u128::from(v6) & !((1u128 << 64) - 1)).into()),
        v4 => v4,
    }
}

impl LoginThrottle {
    pub const fn new(max_failures: u32, window: Duration, lockout: Duration) -> Self {
        Self {
            max_failures,
            window,
            lockout,
            clients: Mutex::new(BTreeMap::new()),
        }
    }

    /// Whether `ip` may try a login now (`false` while it is locked out).
    pub fn allows(&self, ip: IpAddr) -> bool {
        self.allows_at(ip, Instant::now())
    }

    /// Counts a failed login of `ip`; `true` when it locks the address out (log it once).
    pub fn failed(&self, ip: IpAddr) -> bool {
        self.failed_at(ip, Instant::now())
    }

    /// Forgets `ip`'s failures after a successful login.
    pub fn succeeded(&self, ip: IpAddr) {
        locked(&self.clients).remove(&client_key(ip));
    }

    fn allows_at(&self, ip: IpAddr, now: Instant) -> bool {
        locked(&self.clients)
            .get(&client_key(ip))
            .and_then(|entry| entry.locked_until)
            .is_none_or(|until| now >= until)
    }

    fn failed_at(&self, ip: IpAddr, now: Instant) -> bool {
        let mut clients = locked(&self.clients);
        let key = client_key(ip);
        if !clients.contains_key(&key) && clients.len() >= MAX_CLIENTS {
            clients.retain(|_, entry| !entry.over(now, self.window));
            if clients.len() >= MAX_CLIENTS
                && let Some(oldest) = clients
                    .iter()
                    .min_by_key(|(_, entry)| entry.window_start)
                    .map(|(key, _)| *key)
            {
                clients.remove(&oldest);
            }
        }
        let entry = clients.entry(key).or_insert(Entry {
            window_start: now,
            failures: 0,
            locked_until: None,
        });
        if entry.over(now, self.window) {
            *entry = Entry {
                window_start: now,
                failures: 0,
                locked_until: None,
            };
        }
        entry.failures = entry.failures.saturating_add(1);
        if entry.failures >= self.max_failures && entry.locked_until.is_none_or(|u| now >= u) {
            entry.locked_until = Some(now + self.lockout);
            // A new window starts with the lockout: its failures count afresh after it.
            entry.window_start = now;
            entry.failures = 0;
            return true;
        }
        false
    }

    #[cfg(test)]
    fn tracked(&self) -> usize {
        locked(&self.clients).len()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn an_address_is_locked_out_after_its_failures_and_let_in_after_the_lockout() {
        let throttle = LoginThrottle::new(3, Duration::from_secs(60), Duration::from_secs(30));
        let start = Instant::now();
        let guesser = ip("10.0.0.1");
        assert!(!throttle.failed_at(guesser, start));
        assert!(!throttle.failed_at(guesser, start));
        assert!(throttle.allows_at(guesser, start));
        assert!(
            throttle.failed_at(guesser, start),
            "the third failure locks it out"
        );
        assert!(!throttle.allows_at(guesser, start + Duration::from_secs(29)));
        // Others are not affected.
        assert!(throttle.allows_at(ip("10.0.0.2"), start));
        // An IPv4 address through a dual-stack socket is the same client.
        assert!(!throttle.allows_at(ip("::ffff:10.0.0.1"), start));
        assert!(throttle.allows_at(guesser, start + Duration::from_secs(30)));
    }

    #[test]
    fn failures_spread_over_windows_do_not_add_up_and_success_forgets_them() {
        let throttle = LoginThrottle::new(3, Duration::from_secs(60), Duration::from_secs(30));
        let start = Instant::now();
        let user = ip("2001:db8::1");
        throttle.failed_at(user, start);
        throttle.failed_at(user, start);
        assert!(!throttle.failed_at(user, start + Duration::from_secs(61)));
        throttle.succeeded(ip("2001:db8::2"));
        assert_eq!(throttle.tracked(), 0, "an IPv6 /64 is one client");
        assert!(!throttle.failed_at(user, start + Duration::from_secs(62)));
        assert!(throttle.allows_at(user, start + Duration::from_secs(62)));
    }

    #[test]
    fn the_table_stays_bounded() {
        let throttle = LoginThrottle::new(3, Duration::from_secs(60), Duration::from_secs(30));
        let start = Instant::now();
        for n in 0..(MAX_CLIENTS as u32 + 500) {
            throttle.failed_at(IpAddr::V4(n.into()), start);
        }
        assert_eq!(throttle.tracked(), MAX_CLIENTS);
    }
}
