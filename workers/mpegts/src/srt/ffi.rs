//! Hand-written declarations of the part of libsrt 1.5.1's C API (`<srt/srt.h>`,
//! Debian package `libsrt-openssl-dev`) the wrapper uses: functions, constants and the
//! `SRT_TRACEBSTATS` / `SRT_EPOLL_EVENT` structs. No bindgen: the layout check
//! (`csrc/srt_layout.c`, compared in `tests.rs`) proves sizes, offsets and constant
//! values against the installed header.

#![allow(
    non_snake_case,
    non_camel_case_types,
    dead_code,
    clippy::upper_case_acronyms
)]

use libc::{c_char, c_int, c_void, sockaddr};

/// `SRTSOCKET` (an `int` handle into libsrt's socket table, not a system fd).
pub type SRTSOCKET = c_int;
/// `UDPSOCKET` on POSIX: a system fd.
pub type UDPSOCKET = c_int;

pub const SRT_INVALID_SOCK: SRTSOCKET = -1;
pub const SRT_ERROR: c_int = -1;

// SRT_SOCKOPT values (srt.h `enum SRT_SOCKOPT`).
pub const SRTO_SNDSYN: c_int = 1;
pub const SRTO_RCVSYN: c_int = 2;
pub const SRTO_RENDEZVOUS: c_int = 12;
pub const SRTO_SNDTIMEO: c_int = 13;
pub const SRTO_RCVTIMEO: c_int = 14;
pub const SRTO_MAXBW: c_int = 16;
pub const SRTO_LATENCY: c_int = 23;
pub const SRTO_PASSPHRASE: c_int = 26;
pub const SRTO_PBKEYLEN: c_int = 27;
pub const SRTO_CONNTIMEO: c_int = 36;
pub const SRTO_STREAMID: c_int = 46;
pub const SRTO_TRANSTYPE: c_int = 50;

// SRT_TRANSTYPE.
pub const SRTT_LIVE: c_int = 0;

// SRT_SOCKSTATUS (srt_getsockstate).
pub const SRTS_INIT: c_int = 1;
pub const SRTS_OPENED: c_int = 2;
pub const SRTS_LISTENING: c_int = 3;
pub const SRTS_CONNECTING: c_int = 4;
pub const SRTS_CONNECTED: c_int = 5;
pub const SRTS_BROKEN: c_int = 6;
pub const SRTS_CLOSING: c_int = 7;
pub const SRTS_CLOSED: c_int = 8;
pub const SRTS_NONEXIST: c_int = 9;

// SRT_EPOLL_OPT.
pub const SRT_EPOLL_IN: c_int = 0x1;
pub const SRT_EPOLL_ERR: c_int = 0x8;

// SRT_ERRNO values (srt_getlasterror).
pub const SRT_ECONNLOST: c_int = 2001;
pub const SRT_ENOCONN: c_int = 2002;
pub const SRT_EINVSOCK: c_int = 5004;
pub const SRT_EASYNCRCV: c_int = 6002;
pub const SRT_ETIMEOUT: c_int = 6003;

/// `SRT_EPOLL_EVENT` (`struct SRT_EPOLL_EVENT_STR`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct SRT_EPOLL_EVENT {
    pub fd: SRTSOCKET,
    pub events: c_int,
}

/// `SRT_TRACEBSTATS` (`struct CBytePerfMon`), every field in the header's order.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct SRT_TRACEBSTATS {
    // global measurements
    pub msTimeStamp: i64,
    pub pktSentTotal: i64,
    pub pktRecvTotal: i64,
    pub pktSndLossTotal: c_int,
    pub pktRcvLossTotal: c_int,
    pub pktRetransTotal: c_int,
    pub pktSentACKTotal: c_int,
    pub pktRecvACKTotal: c_int,
    pub pktSentNAKTotal: c_int,
    pub pktRecvNAKTotal: c_int,
    pub usSndDurationTotal: i64,
    pub pktSndDropTotal: c_int,
    pub pktRcvDropTotal: c_int,
    pub pktRcvUndecryptTotal: c_int,
    pub byteSentTotal: u64,
    pub byteRecvTotal: u64,
    pub byteRcvLossTotal: u64,
    pub byteRetransTotal: u64,
    pub byteSndDropTotal: u64,
    pub byteRcvDropTotal: u64,
    pub byteRcvUndecryptTotal: u64,
    // local measurements
    pub pktSent: i64,
    pub pktRecv: i64,
    pub pktSndLoss: c_int,
    pub pktRcvLoss: c_int,
    pub pktRetrans: c_int,
    pub pktRcvRetrans: c_int,
    pub pktSentACK: c_int,
    pub pktRecvACK: c_int,
    pub pktSentNAK: c_int,
    pub pktRecvNAK: c_int,
    pub mbpsSendRate: f64,
    pub mbpsRecvRate: f64,
    pub usSndDuration: i64,
    pub pktReorderDistance: c_int,
    pub pktRcvAvgBelatedTime: f64,
    pub pktRcvBelated: i64,
    pub pktSndDrop: c_int,
    pub pktRcvDrop: c_int,
    pub pktRcvUndecrypt: c_int,
    pub byteSent: u64,
    pub byteRecv: u64,
    pub byteRcvLoss: u64,
    pub byteRetrans: u64,
    pub byteSndDrop: u64,
    pub byteRcvDrop: u64,
    pub byteRcvUndecrypt: u64,
    // instant measurements
    pub usPktSndPeriod: f64,
    pub pktFlowWindow: c_int,
    pub pktCongestionWindow: c_int,
    pub pktFlightSize: c_int,
    pub msRTT: f64,
    pub mbpsBandwidth: f64,
    pub byteAvailSndBuf: c_int,
    pub byteAvailRcvBuf: c_int,
    pub mbpsMaxBW: f64,
    pub byteMSS: c_int,
    pub pktSndBuf: c_int,
    pub byteSndBuf: c_int,
    pub msSndBuf: c_int,
    pub msSndTsbPdDelay: c_int,
    pub pktRcvBuf: c_int,
    pub byteRcvBuf: c_int,
    pub msRcvBuf: c_int,
    pub msRcvTsbPdDelay: c_int,
    pub pktSndFilterExtraTotal: c_int,
    pub pktRcvFilterExtraTotal: c_int,
    pub pktRcvFilterSupplyTotal: c_int,
    pub pktRcvFilterLossTotal: c_int,
    pub pktSndFilterExtra: c_int,
    pub pktRcvFilterExtra: c_int,
    pub pktRcvFilterSupply: c_int,
    pub pktRcvFilterLoss: c_int,
    pub pktReorderTolerance: c_int,
    // new in 1.5.0
    pub pktSentUniqueTotal: i64,
    pub pktRecvUniqueTotal: i64,
    pub byteSentUniqueTotal: u64,
    pub byteRecvUniqueTotal: u64,
    pub pktSentUnique: i64,
    pub pktRecvUnique: i64,
    pub byteSentUnique: u64,
    pub byteRecvUnique: u64,
}

/// `srt_listen_callback_fn`: called for each caller's handshake on a listener.
pub type srt_listen_callback_fn = unsafe extern "C" fn(
    opaq: *mut c_void,
    ns: SRTSOCKET,
    hsversion: c_int,
    peeraddr: *const sockaddr,
    streamid: *const c_char,
) -> c_int;

#[link(name = "srt")]
unsafe extern "C" {
    pub fn srt_listen_callback(
        lsn: SRTSOCKET,
        hook_fn: Option<srt_listen_callback_fn>,
        hook_opaque: *mut c_void,
    ) -> c_int;
    pub fn srt_setrejectreason(sock: SRTSOCKET, value: c_int) -> c_int;
    pub fn srt_startup() -> c_int;
    pub fn srt_setloglevel(ll: c_int);
    pub fn srt_create_socket() -> SRTSOCKET;
    pub fn srt_bind(u: SRTSOCKET, name: *const sockaddr, namelen: c_int) -> c_int;
    pub fn srt_bind_acquire(u: SRTSOCKET, sys_udp_sock: UDPSOCKET) -> c_int;
    pub fn srt_listen(u: SRTSOCKET, backlog: c_int) -> c_int;
    pub fn srt_accept(u: SRTSOCKET, addr: *mut sockaddr, addrlen: *mut c_int) -> SRTSOCKET;
    pub fn srt_connect(u: SRTSOCKET, name: *const sockaddr, namelen: c_int) -> c_int;
    pub fn srt_close(u: SRTSOCKET) -> c_int;
    pub fn srt_getpeername(u: SRTSOCKET, name: *mut sockaddr, namelen: *mut c_int) -> c_int;
    pub fn srt_getsockname(u: SRTSOCKET, name: *mut sockaddr, namelen: *mut c_int) -> c_int;
    pub fn srt_getsockflag(
        u: SRTSOCKET,
        opt: c_int,
        optval: *mut c_void,
        optlen: *mut c_int,
    ) -> c_int;
    pub fn srt_setsockflag(u: SRTSOCKET, opt: c_int, optval: *const c_void, optlen: c_int)
    -> c_int;
    pub fn srt_sendmsg(
        u: SRTSOCKET,
        buf: *const c_char,
        len: c_int,
        ttl: c_int,
        inorder: c_int,
    ) -> c_int;
    pub fn srt_recvmsg(u: SRTSOCKET, buf: *mut c_char, len: c_int) -> c_int;
    pub fn srt_getlasterror_str() -> *const c_char;
    pub fn srt_getlasterror(errno_loc: *mut c_int) -> c_int;
    pub fn srt_bistats(
        u: SRTSOCKET,
        perf: *mut SRT_TRACEBSTATS,
        clear: c_int,
        instantaneous: c_int,
    ) -> c_int;
    pub fn srt_getsockstate(u: SRTSOCKET) -> c_int;
    pub fn srt_epoll_create() -> c_int;
    pub fn srt_epoll_add_usock(eid: c_int, u: SRTSOCKET, events: *const c_int) -> c_int;
    pub fn srt_epoll_uwait(
        eid: c_int,
        fds_set: *mut SRT_EPOLL_EVENT,
        fds_size: c_int,
        ms_timeout: i64,
    ) -> c_int;
    pub fn srt_epoll_release(eid: c_int) -> c_int;
}
