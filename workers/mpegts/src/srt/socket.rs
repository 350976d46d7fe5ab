//! SRT sockets: options ([`SrtOptions`], from `Cameras` parameters), errors
//! ([`SrtError`]), the listening socket ([`SrtListener`]: bind or take over a lent UDP
//! socket, accept with a timeout through libsrt's epoll) and the connected socket
//! ([`SrtSocket`]: accepted, caller or rendezvous; message send/receive, stats, state).
//! Everything is live mode (`SRTT_LIVE`). Handles are closed on drop.

use super::ffi::{self, SRTSOCKET};
use super::handshakes::{self, Handshakes};
use super::stats::SrtStats;
use libc::{c_int, c_void};
use socket2::SockAddr;
use std::ffi::CStr;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, BorrowedFd, IntoRawFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, AtomicI64, Ordering};
use std::time::{Duration, Instant};

/// Longest `SRTO_STREAMID` libsrt accepts.
const MAX_STREAM_ID: usize = 512;
/// `SRTO_PASSPHRASE` length bounds (bytes).
const PASSPHRASE_LEN: std::ops::RangeInclusive<usize> = 10..=79;

#[derive(Debug, thiserror::Error)]
pub enum SrtError {
    /// Bad options (names the parameter or option).
    #[error("srt: {0}")]
    Config(String),
    /// A libsrt call failed; `message` is `srt_getlasterror_str()`.
    #[error("srt {call}: {message}")]
    Call { call: &'static str, message: String },
    /// The peer is gone, or the socket is broken or closed.
    #[error("srt connection closed")]
    Closed,
}

/// Options of an SRT input, set on the socket before bind/connect.
#[derive(Debug, Clone, Default)]
pub struct SrtOptions {
    /// `SRTO_LATENCY` in milliseconds.
    pub latency_ms: Option<u32>,
    /// `SRTO_PASSPHRASE`, 10..=79 bytes.
    pub passphrase: Option<String>,
    /// `SRTO_PBKEYLEN`: 16, 24 or 32.
    pub pbkeylen: Option<u32>,
    /// `SRTO_MAXBW` in bytes per second (-1: infinite, 0: relative to input rate).
    pub maxbw: Option<i64>,
    /// `SRTO_STREAMID` (caller side), at most 512 bytes.
    pub stream_id: Option<String>,
}

impl SrtOptions {
    /// From `Cameras` parameters (name, value): `latency`, `passphrase`, `pbkeylen`,
    /// `maxbw`, `streamid` (names compared ASCII case-insensitively); unknown names are
    /// ignored, an empty `passphrase`/`streamid` means none, bad values give
    /// [`SrtError::Config`] naming the parameter.
    pub fn from_parameters(parameters: &[(String, String)]) -> Result<Self, SrtError> {
        let mut options = SrtOptions::default();
        for (name, value) in parameters {
            let value_trimmed = value.trim();
            let name = name.trim().to_ascii_lowercase();
            match name.as_str() {
                "latency" => options.latency_ms = Some(parse_number(&name, value_trimmed)?),
                "pbkeylen" => options.pbkeylen = Some(parse_number(&name, value_trimmed)?),
                "maxbw" => options.maxbw = Some(parse_number(&name, value_trimmed)?),
                "passphrase" => {
                    options.passphrase = (!value.is_empty()).then(|| value.clone());
                }
                "streamid" => options.stream_id = (!value.is_empty()).then(|| value.clone()),
                _ => {}
            }
        }
        options.validate()?;
        Ok(options)
    }

    fn validate(&self) -> Result<(), SrtError> {
        if let Some(latency) = self.latency_ms
            && c_int::try_from(latency).is_err()
        {
            return Err(SrtError::Config(format!(
                "latency {latency} ms is out of range"
            )));
        }
        if let Some(passphrase) = &self.passphrase
            && !PASSPHRASE_LEN.contains(&passphrase.len())
        {
            return Err(SrtError::Config(format!(
                "passphrase must be 10 to 79 bytes long, got {}",
                passphrase.len()
            )));
        }
        if let Some(pbkeylen) = self.pbkeylen
            && ![16, 24, 32].contains(&pbkeylen)
        {
            return Err(SrtError::Config(format!(
                "pbkeylen must be 16, 24 or 32, got {pbkeylen}"
            )));
        }
        if let Some(maxbw) = self.maxbw
            && maxbw < -1
        {
            return Err(SrtError::Config(format!(
                "maxbw must be -1, 0 or a rate in bytes/s, got {maxbw}"
            )));
        }
        if let Some(stream_id) = &self.stream_id
            && stream_id.len() > MAX_STREAM_ID
        {
            return Err(SrtError::Config(format!(
                "streamid must be at most {MAX_STREAM_ID} bytes, got {}",
                stream_id.len()
            )));
        }
        Ok(())
    }

    /// Live mode first (setting `SRTO_TRANSTYPE` resets the other options), then the
    /// options common to listeners and callers.
    fn apply(&self, sock: SRTSOCKET) -> Result<(), SrtError> {
        self.validate()?;
        set_int(
            sock,
            ffi::SRTO_TRANSTYPE,
            ffi::SRTT_LIVE,
            "setsockflag SRTO_TRANSTYPE",
        )?;
        if let Some(latency) = self.latency_ms {
            let latency = c_int::try_from(latency).unwrap_or(c_int::MAX);
            set_int(sock, ffi::SRTO_LATENCY, latency, "setsockflag SRTO_LATENCY")?;
        }
        if let Some(passphrase) = &self.passphrase {
            set_bytes(
                sock,
                ffi::SRTO_PASSPHRASE,
                passphrase.as_bytes(),
                "setsockflag SRTO_PASSPHRASE",
            )?;
        }
        if let Some(pbkeylen) = self.pbkeylen {
            let pbkeylen = c_int::try_from(pbkeylen).unwrap_or(c_int::MAX);
            set_int(
                sock,
                ffi::SRTO_PBKEYLEN,
                pbkeylen,
                "setsockflag SRTO_PBKEYLEN",
            )?;
        }
        if let Some(maxbw) = self.maxbw {
            set_option(sock, ffi::SRTO_MAXBW, &maxbw, "setsockflag SRTO_MAXBW")?;
        }
        Ok(())
    }

    fn apply_stream_id(&self, sock: SRTSOCKET) -> Result<(), SrtError> {
        if let Some(stream_id) = &self.stream_id {
            set_bytes(
                sock,
                ffi::SRTO_STREAMID,
                stream_id.as_bytes(),
                "setsockflag SRTO_STREAMID",
            )?;
        }
        Ok(())
    }
}

fn parse_number<T: std::str::FromStr>(name: &str, value: &str) -> Result<T, SrtError> {
    value
        .parse()
        .map_err(|_| SrtError::Config(format!("parameter {name}: bad number {value:?}")))
}

/// A listening SRT socket in live mode (`SRTT_LIVE`, message API), closed on drop.
///
/// Thread safety: the handle is a plain integer into libsrt's socket table and libsrt
/// serialises access to its sockets internally, so the type is `Send + Sync` (derived
/// automatically from its integer fields; see the note on [`SrtSocket`]).
pub struct SrtListener {
    sock: SRTSOCKET,
    /// libsrt epoll set holding `sock` for `SRT_EPOLL_IN`, used by [`Self::accept`].
    eid: c_int,
    /// What libsrt's listen callback reports to ([`Self::watch_handshakes`]); dropped
    /// after the listener is closed (fields drop after `Drop::drop`), so the callback
    /// never sees it freed.
    handshakes: Option<Arc<Handshakes>>,
}

impl SrtListener {
    /// Takes over a duplicate of `udp` (an already bound UDP socket): the fd is
    /// `dup`ed and the duplicate handed to `srt_bind_acquire` (libsrt closes the fd it
    /// acquires), so the caller's socket stays open and usable. `options` are set on
    /// the listener before binding and are inherited by accepted sockets.
    pub fn bind_acquire(
        udp: BorrowedFd<'_>,
        options: &SrtOptions,
        backlog: i32,
    ) -> Result<Self, SrtError> {
        let owned = Owned::create(options)?;
        let dup = udp.try_clone_to_owned().map_err(|e| SrtError::Call {
            call: "dup",
            message: e.to_string(),
        })?;
        // libsrt's receive thread expects a blocking socket: on a non-blocking one (the
        // worker runtime adopts lent sockets non-blocking for tokio) it spins on EAGAIN
        // and burns a core. The flag belongs to the open file, which every copy of this
        // socket shares; nothing else reads an SRT socket.
        socket2::SockRef::from(&dup)
            .set_nonblocking(false)
            .map_err(|e| SrtError::Call {
                call: "fcntl",
                message: e.to_string(),
            })?;
        // SAFETY: `owned.0` is a socket we created; `dup` is an open UDP fd we own.
        // libsrt only calls getsockname/setsockopt on it and keeps it on success.
        let rc = unsafe { ffi::srt_bind_acquire(owned.0, dup.as_raw_fd()) };
        check(rc, "bind_acquire")?;
        // libsrt owns the duplicate now and closes it with the listener's multiplexer.
        let _ = dup.into_raw_fd();
        Self::listen(owned, backlog)
    }

    /// Binds `addr` itself and listens with `backlog` (for tests, and where no UDP
    /// socket is lent).
    pub fn bind(addr: SocketAddr, options: &SrtOptions, backlog: i32) -> Result<Self, SrtError> {
        let owned = Owned::create(options)?;
        bind_addr(owned.0, addr)?;
        Self::listen(owned, backlog)
    }

    fn listen(owned: Owned, backlog: i32) -> Result<Self, SrtError> {
        // Non-blocking accept: readiness comes from epoll, and a second thread racing
        // for the same connection gets SRT_EASYNCRCV instead of blocking forever.
        set_int(owned.0, ffi::SRTO_RCVSYN, 0, "setsockflag SRTO_RCVSYN")?;
        // SAFETY: plain integer arguments on a socket we own.
        let rc = unsafe { ffi::srt_listen(owned.0, backlog.max(1)) };
        check(rc, "listen")?;
        // SAFETY: no arguments.
        let eid = unsafe { ffi::srt_epoll_create() };
        check(eid, "epoll_create")?;
        let events: c_int = ffi::SRT_EPOLL_IN | ffi::SRT_EPOLL_ERR;
        // SAFETY: `events` outlives the call, which only reads it.
        let rc = unsafe { ffi::srt_epoll_add_usock(eid, owned.0, &events) };
        if let Err(e) = check(rc, "epoll_add_usock") {
            // SAFETY: `eid` was created above and is released once.
            unsafe { ffi::srt_epoll_release(eid) };
            return Err(e);
        }
        Ok(SrtListener {
            sock: owned.into_inner(),
            eid,
            handshakes: None,
        })
    }

    /// Reports every caller's handshake to `handshakes` (libsrt's listen callback), which
    /// may refuse it before libsrt checks its passphrase.
    pub fn watch_handshakes(&mut self, handshakes: Arc<Handshakes>) -> Result<(), SrtError> {
        let opaque = Arc::as_ptr(&handshakes).cast_mut().cast::<c_void>();
        // Kept before the callback is installed: it must outlive every call.
        self.handshakes = Some(handshakes);
        // SAFETY: `opaque` points to the `Handshakes` this listener holds until after
        // `srt_close` (libsrt stops calling the hook once the listener is closed);
        // `on_handshake` matches `srt_listen_callback_fn`.
        let rc =
            unsafe { ffi::srt_listen_callback(self.sock, Some(handshakes::on_handshake), opaque) };
        check(rc, "listen_callback").map(|_| ())
    }

    /// Waits up to `timeout` for a caller: `Ok(None)` on timeout, else the accepted
    /// (blocking) socket and the caller's address.
    pub fn accept(&self, timeout: Duration) -> Result<Option<(SrtSocket, SocketAddr)>, SrtError> {
        let deadline = Instant::now() + timeout;
        loop {
            let remaining = deadline.saturating_duration_since(Instant::now());
            let mut ready = [ffi::SRT_EPOLL_EVENT::default(); 1];
            // SAFETY: `ready` is a valid, writable array of the length passed; `eid`
            // is this listener's epoll set, alive until drop.
            let n = unsafe {
                ffi::srt_epoll_uwait(
                    self.eid,
                    ready.as_mut_ptr(),
                    1,
                    i64::from(millis(remaining)),
                )
            };
            if n < 0 {
                let error = last_error("epoll_uwait");
                if error.0 == ffi::SRT_ETIMEOUT {
                    return Ok(None);
                }
                return Err(error.1);
            }
            if n > 0
                && let Some(accepted) = self.try_accept()?
            {
                return Ok(Some(accepted));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            if n > 0 {
                // Ready but nothing to accept (another thread took it, or an error
                // event): don't spin.
                std::thread::sleep(Duration::from_millis(5).min(remaining));
            }
        }
    }

    fn try_accept(&self) -> Result<Option<(SrtSocket, SocketAddr)>, SrtError> {
        let mut accepted = ffi::SRT_INVALID_SOCK;
        // SAFETY: `storage`/`len` come from socket2 and describe a zeroed
        // sockaddr_storage; socklen_t and c_int are both 32-bit, and libsrt writes at
        // most `len` bytes and the written length back.
        let result = unsafe {
            SockAddr::try_init(|storage, len| {
                accepted = ffi::srt_accept(self.sock, storage.cast(), len.cast::<c_int>());
                Ok(())
            })
        };
        let Ok(((), peer)) = result else {
            return Ok(None);
        };
        if accepted == ffi::SRT_INVALID_SOCK {
            let (code, error) = last_error("accept");
            return match code {
                ffi::SRT_EASYNCRCV | ffi::SRT_ETIMEOUT => Ok(None),
                _ => Err(error),
            };
        }
        let owned = Owned(accepted);
        // Accepted sockets inherit the listener's non-blocking mode: make them blocking
        // (recv waits with SRTO_RCVTIMEO).
        set_int(owned.0, ffi::SRTO_RCVSYN, 1, "setsockflag SRTO_RCVSYN")?;
        set_int(owned.0, ffi::SRTO_SNDSYN, 1, "setsockflag SRTO_SNDSYN")?;
        let Some(peer) = peer.as_socket() else {
            return Err(SrtError::Call {
                call: "accept",
                message: "caller address is not IPv4/IPv6".into(),
            });
        };
        Ok(Some((SrtSocket::from_owned(owned), peer)))
    }

    pub fn local_addr(&self) -> Result<SocketAddr, SrtError> {
        sock_name(self.sock, "getsockname", ffi::srt_getsockname)
    }
}

impl Drop for SrtListener {
    fn drop(&mut self) {
        // SAFETY: `eid` and `sock` were created by this listener and are released
        // exactly once, here.
        unsafe {
            ffi::srt_epoll_release(self.eid);
            ffi::srt_close(self.sock);
        }
    }
}

/// A connected SRT socket (accepted, caller or rendezvous), closed on drop.
///
/// Thread safety: `Send + Sync`, derived automatically because the handle is an
/// integer (`AtomicI32`) rather than a pointer. That is sound because libsrt's API is
/// thread-safe: every call looks the handle up in its global socket table under a lock
/// and holds a reference while it works, so concurrent `recv`/`send`/`stats`/`close`
/// from several threads are allowed (a `recv` blocked in one thread is woken with an
/// error by `srt_close` in another), and a closed or unknown handle only makes calls
/// fail with `SRT_EINVSOCK`.
pub struct SrtSocket {
    sock: AtomicI32,
    /// The `SRTO_RCVTIMEO` last set (ms), to skip the option call when unchanged.
    rcv_timeout_ms: AtomicI64,
}

impl SrtSocket {
    fn from_owned(owned: Owned) -> Self {
        SrtSocket {
            sock: AtomicI32::new(owned.into_inner()),
            rcv_timeout_ms: AtomicI64::new(i64::MIN),
        }
    }

    /// Caller mode: connects to `addr`, blocking up to `timeout` (`SRTO_CONNTIMEO`).
    pub fn connect(
        addr: SocketAddr,
        options: &SrtOptions,
        timeout: Duration,
    ) -> Result<Self, SrtError> {
        Self::dial(None, addr, options, timeout)
    }

    /// Rendezvous mode: binds `local` and connects to `remote` (`SRTO_RENDEZVOUS`),
    /// blocking up to `timeout`.
    pub fn rendezvous(
        local: SocketAddr,
        remote: SocketAddr,
        options: &SrtOptions,
        timeout: Duration,
    ) -> Result<Self, SrtError> {
        Self::dial(Some(local), remote, options, timeout)
    }

    /// Caller (`local` `None`) or rendezvous from `local`: connects to `remote`.
    fn dial(
        local: Option<SocketAddr>,
        remote: SocketAddr,
        options: &SrtOptions,
        timeout: Duration,
    ) -> Result<Self, SrtError> {
        let owned = Owned::create(options)?;
        options.apply_stream_id(owned.0)?;
        if local.is_some() {
            set_int(
                owned.0,
                ffi::SRTO_RENDEZVOUS,
                1,
                "setsockflag SRTO_RENDEZVOUS",
            )?;
        }
        set_int(
            owned.0,
            ffi::SRTO_CONNTIMEO,
            millis(timeout),
            "setsockflag SRTO_CONNTIMEO",
        )?;
        if let Some(local) = local {
            bind_addr(owned.0, local)?;
        }
        connect_addr(owned.0, remote)?;
        Ok(Self::from_owned(owned))
    }

    /// libsrt's handle of this socket (an accepted one: the one the listen callback
    /// named).
    pub(super) fn handle(&self) -> SRTSOCKET {
        self.sock.load(Ordering::Acquire)
    }

    /// The stream id the caller set (`SRTO_STREAMID`), "" if none (or closed).
    pub fn stream_id(&self) -> String {
        let mut buf = [0u8; MAX_STREAM_ID + 1];
        let mut len = buf.len() as c_int;
        // SAFETY: `buf` is writable for `len` bytes; libsrt copies at most `len` bytes
        // and stores the copied length in `len`.
        let rc = unsafe {
            ffi::srt_getsockflag(
                self.handle(),
                ffi::SRTO_STREAMID,
                buf.as_mut_ptr().cast::<c_void>(),
                &mut len,
            )
        };
        if rc == ffi::SRT_ERROR {
            return String::new();
        }
        let len = usize::try_from(len).unwrap_or(0).min(buf.len());
        let id = &buf[..len];
        // Stop at a NUL should libsrt count the terminator.
        let id = id.split(|&b| b == 0).next().unwrap_or_default();
        String::from_utf8_lossy(id).into_owned()
    }

    /// Receives one message into `buf` (live mode: up to 1456 bytes; give at least
    /// 1456), waiting up to `timeout`: `Ok(Some(n))`, `Ok(None)` on timeout,
    /// `Err(SrtError::Closed)` once the peer is gone or the socket broken or closed.
    pub fn recv(&self, buf: &mut [u8], timeout: Duration) -> Result<Option<usize>, SrtError> {
        let sock = self.handle();
        if sock == ffi::SRT_INVALID_SOCK {
            return Err(SrtError::Closed);
        }
        let timeout_ms = i64::from(millis(timeout));
        if self.rcv_timeout_ms.swap(timeout_ms, Ordering::AcqRel) != timeout_ms
            && let Err(e) = set_int(
                sock,
                ffi::SRTO_RCVTIMEO,
                millis(timeout),
                "setsockflag SRTO_RCVTIMEO",
            )
        {
            self.rcv_timeout_ms.store(i64::MIN, Ordering::Release);
            return Err(self.closed_or(e));
        }
        let len = c_int::try_from(buf.len()).unwrap_or(c_int::MAX);
        // SAFETY: `buf` is writable for `len` bytes and libsrt writes at most `len`.
        let n = unsafe { ffi::srt_recvmsg(sock, buf.as_mut_ptr().cast(), len) };
        if n == ffi::SRT_ERROR {
            let (code, error) = last_error("recvmsg");
            return match code {
                ffi::SRT_EASYNCRCV | ffi::SRT_ETIMEOUT => Ok(None),
                ffi::SRT_ECONNLOST | ffi::SRT_ENOCONN | ffi::SRT_EINVSOCK => Err(SrtError::Closed),
                _ => Err(self.closed_or(error)),
            };
        }
        match usize::try_from(n) {
            Ok(0) if self.is_gone() => Err(SrtError::Closed),
            Ok(n) => Ok(Some(n.min(buf.len()))),
            Err(_) => Err(self.closed_or(SrtError::Call {
                call: "recvmsg",
                message: format!("unexpected result {n}"),
            })),
        }
    }

    /// Sends one message (at most 1316 bytes recommended in live mode).
    pub fn send(&self, data: &[u8]) -> Result<(), SrtError> {
        let sock = self.handle();
        if sock == ffi::SRT_INVALID_SOCK {
            return Err(SrtError::Closed);
        }
        let Ok(len) = c_int::try_from(data.len()) else {
            return Err(SrtError::Config(format!(
                "message of {} bytes is too large",
                data.len()
            )));
        };
        // SAFETY: `data` is readable for `len` bytes; libsrt copies it.
        let n = unsafe { ffi::srt_sendmsg(sock, data.as_ptr().cast(), len, -1, 0) };
        if n == ffi::SRT_ERROR {
            let (code, error) = last_error("sendmsg");
            return match code {
                ffi::SRT_ECONNLOST | ffi::SRT_ENOCONN | ffi::SRT_EINVSOCK => Err(SrtError::Closed),
                _ => Err(self.closed_or(error)),
            };
        }
        Ok(())
    }

    /// `srt_bistats(clear = 0, instantaneous = 1)`.
    pub fn stats(&self) -> Result<SrtStats, SrtError> {
        let sock = self.handle();
        if sock == ffi::SRT_INVALID_SOCK {
            return Err(SrtError::Closed);
        }
        let mut raw = ffi::SRT_TRACEBSTATS::default();
        // SAFETY: `raw` is a writable SRT_TRACEBSTATS whose layout the layout check
        // proves identical to the header's.
        let rc = unsafe { ffi::srt_bistats(sock, &mut raw, 0, 1) };
        if rc == ffi::SRT_ERROR {
            let (code, error) = last_error("bistats");
            return Err(if code == ffi::SRT_EINVSOCK {
                SrtError::Closed
            } else {
                error
            });
        }
        Ok(SrtStats::from_raw(&raw))
    }

    /// Closes the socket now (a `recv` blocked in another thread returns
    /// [`SrtError::Closed`]); idempotent; drop closes too.
    pub fn close(&self) {
        let sock = self.sock.swap(ffi::SRT_INVALID_SOCK, Ordering::AcqRel);
        if sock != ffi::SRT_INVALID_SOCK {
            // SAFETY: the swap hands the handle to exactly one closer.
            unsafe { ffi::srt_close(sock) };
        }
    }

    /// The peer's address (`srt_getpeername`). Reliable on accepted sockets; Debian's
    /// libsrt 1.5.1 returns no IP address for caller and rendezvous sockets, which
    /// gives an [`SrtError::Call`] (the caller knows the address it connected to).
    pub fn peer_addr(&self) -> Result<SocketAddr, SrtError> {
        sock_name(self.handle(), "getpeername", ffi::srt_getpeername)
    }

    /// "init", "opened", "listening", "connecting", "connected", "broken", "closing",
    /// "closed" or "nonexist" (`srt_getsockstate`); "closed" after [`Self::close`].
    pub fn state(&self) -> &'static str {
        let sock = self.handle();
        if sock == ffi::SRT_INVALID_SOCK {
            return "closed";
        }
        state_name(raw_state(sock))
    }

    /// Whether the connection is over: closed here, or broken (the peer said goodbye, or
    /// sent nothing for libsrt's peer idle timeout) or closed by libsrt.
    pub fn is_gone(&self) -> bool {
        let sock = self.handle();
        sock == ffi::SRT_INVALID_SOCK
            || matches!(
                raw_state(sock),
                ffi::SRTS_BROKEN | ffi::SRTS_CLOSING | ffi::SRTS_CLOSED | ffi::SRTS_NONEXIST
            )
    }

    fn closed_or(&self, error: SrtError) -> SrtError {
        if self.is_gone() {
            SrtError::Closed
        } else {
            error
        }
    }
}

impl Drop for SrtSocket {
    fn drop(&mut self) {
        self.close();
    }
}

fn raw_state(sock: SRTSOCKET) -> c_int {
    // SAFETY: integer argument; an unknown handle gives SRTS_NONEXIST.
    unsafe { ffi::srt_getsockstate(sock) }
}

pub(super) fn state_name(state: c_int) -> &'static str {
    match state {
        ffi::SRTS_INIT => "init",
        ffi::SRTS_OPENED => "opened",
        ffi::SRTS_LISTENING => "listening",
        ffi::SRTS_CONNECTING => "connecting",
        ffi::SRTS_CONNECTED => "connected",
        ffi::SRTS_BROKEN => "broken",
        ffi::SRTS_CLOSING => "closing",
        ffi::SRTS_CLOSED => "closed",
        ffi::SRTS_NONEXIST => "nonexist",
        _ => "unknown",
    }
}

/// A socket being set up: closed on drop unless handed on with [`Owned::into_inner`].
struct Owned(SRTSOCKET);

impl Owned {
    /// A new socket in live mode with `options` applied.
    fn create(options: &SrtOptions) -> Result<Self, SrtError> {
        options.validate()?;
        super::startup();
        // SAFETY: no arguments.
        let sock = unsafe { ffi::srt_create_socket() };
        if sock == ffi::SRT_INVALID_SOCK {
            return Err(last_error("create_socket").1);
        }
        let owned = Owned(sock);
        options.apply(owned.0)?;
        Ok(owned)
    }

    fn into_inner(self) -> SRTSOCKET {
        let sock = self.0;
        std::mem::forget(self);
        sock
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        // SAFETY: the handle was created by us and is closed once, here.
        unsafe { ffi::srt_close(self.0) };
    }
}

/// Milliseconds for libsrt's `int` timeouts: rounded up, at most `c_int::MAX`.
fn millis(duration: Duration) -> c_int {
    let ms = duration.as_nanos().div_ceil(1_000_000);
    c_int::try_from(ms).unwrap_or(c_int::MAX)
}

/// The calling thread's last libsrt error: its code and an [`SrtError::Call`].
fn last_error(call: &'static str) -> (c_int, SrtError) {
    // SAFETY: a null errno_loc is allowed; the string is libsrt's thread-local buffer,
    // valid until the next libsrt call on this thread, and copied before that.
    let (code, message) = unsafe {
        let code = ffi::srt_getlasterror(std::ptr::null_mut());
        let text = ffi::srt_getlasterror_str();
        let message = if text.is_null() {
            format!("error {code}")
        } else {
            CStr::from_ptr(text).to_string_lossy().into_owned()
        };
        (code, message)
    };
    (code, SrtError::Call { call, message })
}

fn check(rc: c_int, call: &'static str) -> Result<c_int, SrtError> {
    if rc == ffi::SRT_ERROR {
        Err(last_error(call).1)
    } else {
        Ok(rc)
    }
}

fn set_option<T: Copy>(
    sock: SRTSOCKET,
    opt: c_int,
    value: &T,
    call: &'static str,
) -> Result<(), SrtError> {
    let len = size_of::<T>() as c_int;
    // SAFETY: `value` is readable for size_of::<T>() bytes, the length passed; libsrt
    // copies the value. Callers pass the C type the option documents (int or int64_t).
    let rc = unsafe { ffi::srt_setsockflag(sock, opt, (value as *const T).cast(), len) };
    check(rc, call).map(drop)
}

fn set_int(sock: SRTSOCKET, opt: c_int, value: c_int, call: &'static str) -> Result<(), SrtError> {
    set_option(sock, opt, &value, call)
}

fn set_bytes(
    sock: SRTSOCKET,
    opt: c_int,
    value: &[u8],
    call: &'static str,
) -> Result<(), SrtError> {
    let Ok(len) = c_int::try_from(value.len()) else {
        return Err(SrtError::Config(format!("{call}: value too long")));
    };
    // SAFETY: `value` is readable for `len` bytes; libsrt copies them (string options
    // take a length, no NUL terminator).
    let rc = unsafe { ffi::srt_setsockflag(sock, opt, value.as_ptr().cast(), len) };
    check(rc, call).map(drop)
}

fn bind_addr(sock: SRTSOCKET, addr: SocketAddr) -> Result<(), SrtError> {
    let addr = SockAddr::from(addr);
    // SAFETY: `addr` points to an initialised sockaddr of `addr.len()` bytes.
    let rc = unsafe { ffi::srt_bind(sock, addr.as_ptr().cast(), addr.len() as c_int) };
    check(rc, "bind").map(drop)
}

fn connect_addr(sock: SRTSOCKET, addr: SocketAddr) -> Result<(), SrtError> {
    let addr = SockAddr::from(addr);
    // SAFETY: `addr` points to an initialised sockaddr of `addr.len()` bytes.
    let rc = unsafe { ffi::srt_connect(sock, addr.as_ptr().cast(), addr.len() as c_int) };
    check(rc, "connect").map(drop)
}

type NameFn = unsafe extern "C" fn(SRTSOCKET, *mut libc::sockaddr, *mut c_int) -> c_int;

fn sock_name(sock: SRTSOCKET, call: &'static str, name: NameFn) -> Result<SocketAddr, SrtError> {
    let mut rc = 0;
    // SAFETY: `storage`/`len` describe socket2's zeroed sockaddr_storage (socklen_t
    // and c_int are both 32-bit); libsrt writes at most `len` bytes and the length.
    let result = unsafe {
        SockAddr::try_init(|storage, len| {
            rc = name(sock, storage.cast(), len.cast::<c_int>());
            Ok(())
        })
    };
    let ((), addr) = result.map_err(|e| SrtError::Call {
        call,
        message: e.to_string(),
    })?;
    check(rc, call)?;
    addr.as_socket().ok_or_else(|| SrtError::Call {
        call,
        message: "not an IPv4/IPv6 address".into(),
    })
}
