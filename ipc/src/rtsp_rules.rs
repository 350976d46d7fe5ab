//! The RTSP server's settings (`RtspSettings` in `rules.conf`) as the rtsp worker
//! receives them: where it listens and the bounds it keeps clients within.

use crate::interface::RtmpInterface;
use serde::{Deserialize, Serialize};

/// The RTSP server. The default listens nowhere: RTSP is on only when `rules.conf` has an
/// `RtspSettings` key (whose own default interface is `*:554`, the standard port).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RtspSettings {
    pub interfaces: Vec<RtmpInterface>,
    /// Where RTSP over TLS (`rtsps://`) listens, with the delivery certificate
    /// (`ssl_certificate`); empty: no rtsps listener.
    pub tls_interfaces: Vec<RtmpInterface>,
    pub limits: RtspLimits,
}

/// Bounds on what RTSP clients can make the server hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RtspLimits {
    /// Open RTSP connections in all; connections past it are closed at once.
    pub max_connections: u32,
    /// Open RTSP connections from one client address.
    pub max_connections_per_ip: u32,
    /// A connection that sends nothing (no request, no RTCP) for this long is closed;
    /// announced to clients as the session timeout so they send keep-alives in time.
    pub session_timeout_secs: u32,
    /// Largest request head (request line and headers) and body a client may send.
    pub max_request_bytes: u32,
    /// How long a player's DESCRIBE waits for a stream that is not live yet.
    pub player_wait_timeout_secs: u32,
    /// A request (head and body) must be complete this long after the connection opened
    /// or after its first byte, whichever is later: bytes trickled in do not extend it.
    pub request_timeout_secs: u32,
    /// UDP port pairs (two descriptors each) that all connections together may have
    /// bound; past it a UDP SETUP gets 461 (clients fall back to TCP).
    pub max_udp_pairs: u32,
}

impl Default for RtspLimits {
    fn default() -> Self {
        Self {
            max_connections: 10_000,
            max_connections_per_ip: 1_000,
            session_timeout_secs: 60,
            max_request_bytes: 16 * 1024,
            player_wait_timeout_secs: 10,
            request_timeout_secs: 10,
            max_udp_pairs: 4096,
        }
    }
}
