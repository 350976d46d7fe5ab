//! Failed SRT passphrases count as failed source logins (issue 31 item 11), through the
//! worker's login throttle ([`SOURCE_LOGINS`]), as RTMP, RTSP and Icecast logins do.
//!
//! libsrt checks a caller's passphrase itself, inside its handshake, and refuses a wrong
//! or missing one without telling the application. What it does tell is the listen
//! callback (`srt_listen_callback`), called for every caller's handshake before that
//! check, with the caller's address and the handle of the socket the caller would get.
//! So, on a listener with a passphrase:
//! - a caller from an address the throttle locks out is refused in the callback, before
//!   its passphrase is checked (right or wrong);
//! - every other handshake is noted, and the notes are settled ([`settle`]) at the next
//!   handshake and after every accept poll: a socket that was accepted passed; one that
//!   libsrt closed without it being accepted was refused, which is a failed login. (libsrt keeps no reject reason on the
//!   listener's side; a listener with a passphrase refuses callers over credentials and
//!   little else.)
//!
//! A listener may also refuse callers by their streamid before they are accepted
//! ([`StreamIdFilter`]): an SRT output tells another strom's edge pull of a stream it
//! does not have "not found" (`SRT_REJX_NOTFOUND`) in the handshake, so the edge's call
//! fails at once instead of connecting to nothing. Without a passphrase nothing is
//! noted or counted.
//!
//! Success is left to whoever checks the rest of the caller's credentials (the publish
//! gate), so that a right passphrase does not wipe the failures of `u=`/`s=` guesses.
//! The notes are bounded ([`MAX_PENDING`] in all, [`MAX_PENDING_PER_ADDRESS`] from one
//! address); past that a handshake is refused. Log lines are rate limited.
//!
//! [`settle`]: Handshakes::settle

use super::ffi::{self, SRTSOCKET};
use libc::{c_char, c_int, c_void, sockaddr};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use strom_worker_runtime::limited_log;
use strom_worker_runtime::login_throttle::{LoginThrottle, SOURCE_LOGINS, client_key};
use strom_worker_runtime::sync::locked;

/// Handshakes waiting to be settled at most (per listener): a listener's backlog is 16,
/// and a settle runs every accept poll (250 ms), so this is only reached by a flood.
pub const MAX_PENDING: usize = 1024;
/// Unsettled handshakes (connected, not accepted yet) one address may have: no real
/// caller makes more at once.
pub const MAX_PENDING_PER_ADDRESS: usize = 8;
/// A note of a socket that is neither accepted nor closed after this long is dropped
/// without counting (a handshake libsrt never finished).
const STALE: Duration = Duration::from_secs(30);
/// `SRT_REJX_UNAUTHORIZED` (`<srt/access_control.h>`): what a refused caller is told.
const REJECT_UNAUTHORIZED: c_int = 1401;
/// `SRT_REJX_NOTFOUND`: what a caller refused by the [`StreamIdFilter`] is told.
const REJECT_NOT_FOUND: c_int = 1404;

/// Whether to refuse a caller, by its streamid, as asking for what is not here.
pub type StreamIdFilter = Box<dyn Fn(&str) -> bool + Send + Sync>;

#[derive(Debug, Clone, Copy)]
struct Pending {
    sock: SRTSOCKET,
    ip: IpAddr,
    at: Instant,
}

/// The handshakes of one listener not settled yet.
pub struct Handshakes {
    throttle: &'static LoginThrottle,
    /// Names the listener in log lines.
    listener: String,
    pending: Mutex<Vec<Pending>>,
    /// Whether failed handshakes are failed logins (the listener has a passphrase).
    counts_logins: bool,
    not_found: Option<StreamIdFilter>,
}

impl std::fmt::Debug for Handshakes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handshakes")
            .field("listener", &self.listener)
            .field("counts_logins", &self.counts_logins)
            .field("filters_streams", &self.not_found.is_some())
            .finish_non_exhaustive()
    }
}

/// What happened to a noted handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Still going (or connected and waiting for `srt_accept`).
    Open,
    /// Closed by libsrt before it was accepted: refused.
    Refused,
}

fn outcome(state: c_int) -> Outcome {
    match state {
        ffi::SRTS_BROKEN | ffi::SRTS_CLOSING | ffi::SRTS_CLOSED | ffi::SRTS_NONEXIST => {
            Outcome::Refused
        }
        _ => Outcome::Open,
    }
}

impl Handshakes {
    pub fn new(listener: &str) -> Self {
        Self::with_throttle(listener, &SOURCE_LOGINS)
    }

    fn with_throttle(listener: &str, throttle: &'static LoginThrottle) -> Self {
        Self {
            throttle,
            listener: listener.to_owned(),
            pending: Mutex::new(Vec::new()),
            counts_logins: true,
            not_found: None,
        }
    }

    /// Failed handshakes count as failed logins only when `passphrase` (libsrt refuses
    /// callers over credentials only then).
    pub fn counting_logins(mut self, passphrase: bool) -> Self {
        self.counts_logins = passphrase;
        self
    }

    /// Callers whose streamid `filter` refuses are told "not found" in the handshake.
    pub fn refusing_streams(mut self, filter: Option<StreamIdFilter>) -> Self {
        self.not_found = filter;
        self
    }

    /// Whether the callback has anything to do for this listener.
    pub fn is_needed(&self) -> bool {
        self.counts_logins || self.not_found.is_some()
    }

    /// Whether the filter refuses a caller asking for `stream_id`.
    fn refuses_stream(&self, stream_id: &str) -> bool {
        let refused = self
            .not_found
            .as_ref()
            .is_some_and(|filter| filter(stream_id));
        if refused {
            limited_log!(info, 5, Duration::from_secs(10); listener = %self.listener, %stream_id, "SRT caller refused: not found (the stream is not live here and nothing here starts it)");
        }
        refused
    }

    /// A caller's handshake reached the listener: `false` refuses it (locked out, or too
    /// many unsettled). Earlier handshakes are settled first: libsrt handles handshakes
    /// one at a time and closes a refused socket before it answers, so every guess is
    /// counted before the next is checked, however fast they come.
    fn admit(&self, sock: SRTSOCKET, ip: IpAddr) -> bool {
        self.settle(None);
        self.admit_settled(sock, ip)
    }

    fn admit_settled(&self, sock: SRTSOCKET, ip: IpAddr) -> bool {
        if !self.throttle.allows(ip) {
            limited_log!(warn, 5, Duration::from_secs(10); listener = %self.listener, %ip, "SRT caller refused: too many failed logins from this address");
            return false;
        }
        let mut pending = locked(&self.pending);
        let key = client_key(ip);
        if pending.len() >= MAX_PENDING
            || pending.iter().filter(|p| client_key(p.ip) == key).count() >= MAX_PENDING_PER_ADDRESS
        {
            limited_log!(warn, 5, Duration::from_secs(10); listener = %self.listener, %ip, "SRT caller refused: too many handshakes at once");
            return false;
        }
        pending.push(Pending {
            sock,
            ip,
            at: Instant::now(),
        });
        true
    }

    /// Settles the notes after an accept poll: `accepted` (if any) passed; the sockets
    /// libsrt closed unaccepted count as failed logins of their addresses.
    pub fn settle(&self, accepted: Option<SRTSOCKET>) {
        self.settle_with(accepted, |sock| {
            // SAFETY: an integer argument; an unknown handle gives SRTS_NONEXIST.
            outcome(unsafe { ffi::srt_getsockstate(sock) })
        });
    }

    fn settle_with(&self, accepted: Option<SRTSOCKET>, state: impl Fn(SRTSOCKET) -> Outcome) {
        let now = Instant::now();
        let mut refused = Vec::new();
        locked(&self.pending).retain(|p| {
            if Some(p.sock) == accepted {
                return false;
            }
            match state(p.sock) {
                Outcome::Refused => {
                    refused.push(p.ip);
                    false
                }
                Outcome::Open => now.duration_since(p.at) < STALE,
            }
        });
        for ip in refused {
            let locked_out = self.throttle.failed(ip);
            limited_log!(warn, 5, Duration::from_secs(10); listener = %self.listener, %ip, locked_out, "SRT caller refused: wrong or missing passphrase");
        }
    }

    /// Handshakes noted and not settled (for tests).
    #[cfg(test)]
    fn pending(&self) -> usize {
        locked(&self.pending).len()
    }
}

/// The caller's IP address from libsrt's `sockaddr` (IPv4 or IPv6).
///
/// # Safety
/// `peer` is null or points to a `sockaddr_in` or `sockaddr_in6` as its family says.
unsafe fn peer_ip(peer: *const sockaddr) -> Option<IpAddr> {
    if peer.is_null() {
        return None;
    }
    // SAFETY: non-null, and every sockaddr starts with its family.
    let family = c_int::from(unsafe { (*peer).sa_family });
    match family {
        libc::AF_INET => {
            // SAFETY: the family says this is a sockaddr_in.
            let v4 = unsafe { &*peer.cast::<libc::sockaddr_in>() };
            Some(IpAddr::V4(Ipv4Addr::from(u32::from_be(v4.sin_addr.s_addr))))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says this is a sockaddr_in6.
            let v6 = unsafe { &*peer.cast::<libc::sockaddr_in6>() };
            Some(IpAddr::V6(Ipv6Addr::from(v6.sin6_addr.s6_addr)))
        }
        _ => None,
    }
}

/// A C string libsrt handed over, as text (lossy; empty for null).
///
/// # Safety
/// `text` is null or points to a NUL-terminated string that lives for the call.
unsafe fn c_text(text: *const c_char) -> String {
    if text.is_null() {
        return String::new();
    }
    // SAFETY: non-null and NUL-terminated, as promised above.
    unsafe { std::ffi::CStr::from_ptr(text) }
        .to_string_lossy()
        .into_owned()
}

/// libsrt's listen callback; `opaque` is the listener's [`Handshakes`].
///
/// # Safety
/// libsrt calls it with the `opaque` given to `srt_listen_callback` (a `Handshakes` the
/// listener keeps alive until it is closed) and a valid peer address. It must not
/// unwind: nothing in it panics (`locked` survives poisoning).
pub unsafe extern "C" fn on_handshake(
    opaque: *mut c_void,
    ns: SRTSOCKET,
    _hs_version: c_int,
    peer: *const sockaddr,
    stream_id: *const c_char,
) -> c_int {
    // SAFETY: see above: the listener passes a pointer to its live `Handshakes`.
    let Some(handshakes) = (unsafe { opaque.cast::<Handshakes>().as_ref() }) else {
        return 0;
    };
    // SAFETY: libsrt passes the caller's streamid, NUL-terminated, or null.
    if handshakes.not_found.is_some() && handshakes.refuses_stream(&unsafe { c_text(stream_id) }) {
        // SAFETY: `ns` is the socket libsrt is creating for this caller.
        unsafe { ffi::srt_setrejectreason(ns, REJECT_NOT_FOUND) };
        return -1;
    }
    if !handshakes.counts_logins {
        return 0;
    }
    // SAFETY: libsrt passes the caller's address.
    let Some(ip) = (unsafe { peer_ip(peer) }) else {
        return 0;
    };
    if handshakes.admit(ns, ip) {
        return 0;
    }
    // SAFETY: `ns` is the socket libsrt is creating for this caller.
    unsafe { ffi::srt_setrejectreason(ns, REJECT_UNAUTHORIZED) };
    -1
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use std::collections::HashMap;

    static THROTTLE: LoginThrottle =
        LoginThrottle::new(3, Duration::from_secs(60), Duration::from_secs(60));

    #[test]
    fn refused_handshakes_count_and_lock_the_address_out() {
        let handshakes = Handshakes::with_throttle("test", &THROTTLE);
        let guesser: IpAddr = "10.9.0.1".parse().unwrap();
        let other: IpAddr = "10.9.0.2".parse().unwrap();
        let mut states = HashMap::new();
        for sock in 1..=3 {
            assert!(handshakes.admit_settled(sock, guesser));
            states.insert(sock, Outcome::Open);
        }
        assert!(handshakes.admit_settled(10, other));
        states.insert(10, Outcome::Open);
        // Nothing settled while they are open.
        handshakes.settle_with(None, |s| states[&s]);
        assert_eq!(handshakes.pending(), 4);
        // The guesser's three were closed by libsrt; the other one was accepted.
        for sock in 1..=3 {
            states.insert(sock, Outcome::Refused);
        }
        handshakes.settle_with(Some(10), |s| states[&s]);
        assert_eq!(handshakes.pending(), 0);
        assert!(
            !handshakes.admit_settled(4, guesser),
            "locked out before any check"
        );
        assert!(handshakes.admit_settled(11, other));
    }

    #[test]
    fn a_filtered_streamid_is_refused_before_any_note() {
        static OPEN: LoginThrottle =
            LoginThrottle::new(3, Duration::from_secs(60), Duration::from_secs(60));
        let handshakes = Handshakes::with_throttle("test", &OPEN)
            .counting_logins(false)
            .refusing_streams(Some(Box::new(|id: &str| id.contains("strom=pull"))));
        assert!(handshakes.is_needed());
        assert!(handshakes.refuses_stream("#!::r=live/x,m=request,strom=pull"));
        assert!(!handshakes.refuses_stream("#!::r=live/x,m=request"));
        assert_eq!(handshakes.pending(), 0);
        let plain = Handshakes::with_throttle("test", &OPEN).counting_logins(false);
        assert!(!plain.is_needed() && !plain.refuses_stream("#!::r=live/x,strom=pull"));
    }

    #[test]
    fn c_text_reads_null_and_strings() {
        // SAFETY: null is allowed; the literal is NUL-terminated and static.
        let (none, some) = unsafe { (c_text(std::ptr::null()), c_text(c"#!::r=a/b".as_ptr())) };
        assert_eq!((none.as_str(), some.as_str()), ("", "#!::r=a/b"));
    }

    #[test]
    fn the_notes_are_bounded() {
        static OPEN: LoginThrottle =
            LoginThrottle::new(3, Duration::from_secs(60), Duration::from_secs(60));
        let handshakes = Handshakes::with_throttle("test", &OPEN);
        let burst: IpAddr = "10.9.1.1".parse().unwrap();
        for sock in 0..MAX_PENDING_PER_ADDRESS as SRTSOCKET {
            assert!(handshakes.admit_settled(sock, burst));
        }
        assert!(
            !handshakes.admit_settled(-1, burst),
            "a burst from one address"
        );
        // An IPv6 /64 is one address.
        let net = |n: u32| {
            IpAddr::V6(std::net::Ipv6Addr::new(
                0x2001, 0xdb8, 0, 0, 0, 0, 0, n as u16,
            ))
        };
        for n in 0..MAX_PENDING_PER_ADDRESS as u32 {
            assert!(handshakes.admit_settled(100 + n as SRTSOCKET, net(n)));
        }
        assert!(!handshakes.admit_settled(-2, net(99)));
        for n in 0u32.. {
            if handshakes.pending() == MAX_PENDING {
                break;
            }
            let ip = IpAddr::V4(std::net::Ipv4Addr::from(0x0a0a_0000 + n));
            assert!(handshakes.admit_settled(1000 + n as SRTSOCKET, ip));
        }
        assert!(
            !handshakes.admit_settled(-5, "10.11.0.1".parse().unwrap()),
            "the table is full"
        );
        handshakes.settle_with(None, |_| Outcome::Open);
        assert_eq!(handshakes.pending(), MAX_PENDING);
    }

    #[test]
    fn addresses_come_from_sockaddrs() {
        let v4 = socket2::SockAddr::from("192.0.2.7:9000".parse::<std::net::SocketAddr>().unwrap());
        let v6 = socket2::SockAddr::from(
            "[2001:db8::5]:9000"
                .parse::<std::net::SocketAddr>()
                .unwrap(),
        );
        // SAFETY: both point to sockaddrs of their family.
        unsafe {
            assert_eq!(
                peer_ip(v4.as_ptr().cast()),
                Some("192.0.2.7".parse().unwrap())
            );
            assert_eq!(
                peer_ip(v6.as_ptr().cast()),
                Some("2001:db8::5".parse().unwrap())
            );
            assert_eq!(peer_ip(std::ptr::null()), None);
        }
    }
}
