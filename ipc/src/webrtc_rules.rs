//! WebRTC's settings (`WebRtcSettings` in `rules.conf`) as the webrtc worker receives
//! them: the ICE port, the addresses it advertises and the bounds it keeps clients within.

use crate::interface::RtmpInterface;
use serde::{Deserialize, Serialize};

/// WebRTC (WHEP playback, WHIP publishing). The default is off: WebRTC is on only when
/// `rules.conf` has a `WebRtcSettings` key (whose own default interface is `*:8189`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebRtcSettings {
    /// Where ICE listens: one UDP socket per entry, and an ICE-TCP listener on the same
    /// address when `tcp` is on. Signaling (WHEP/WHIP) is on the HTTP delivery port.
    pub interfaces: Vec<RtmpInterface>,
    /// Addresses put in the answers' ICE candidates instead of the interfaces' own (a
    /// server behind 1:1 NAT names its public address here); empty: the interfaces'
    /// addresses, or the address the signaling request came in on for `*`.
    pub public_addresses: Vec<String>,
    /// Whether ICE over UDP is offered (off: ICE-TCP only, for sites whose firewalls
    /// pass TCP alone).
    pub udp: bool,
    /// Whether ICE-TCP candidates are offered too (RFC 6544, passive).
    pub tcp: bool,
    pub limits: WebRtcLimits,
}

/// Bounds on what WebRTC clients can make the server hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebRtcLimits {
    /// Open WebRTC sessions (players and publishers) in all.
    pub max_sessions: u32,
    /// Open WebRTC sessions from one client address.
    pub max_sessions_per_ip: u32,
    /// Largest SDP offer or trickle body a client may send, bytes.
    pub max_sdp_bytes: u32,
    /// A session whose ICE has not connected this long after its offer is closed.
    pub connect_timeout_secs: u32,
    /// Send and receive buffer asked for on each shared ICE UDP socket, bytes (the kernel
    /// caps it at `net.core.wmem_max` / `rmem_max`).
    pub socket_buffer_bytes: u32,
    /// How far back a viewer's retransmissions (NACK, RTX) reach, milliseconds: the
    /// per-viewer cache holds references to the stream's shared packets of this long.
    pub retransmission_window_ms: u32,
}

impl Default for WebRtcLimits {
    fn default() -> Self {
        Self {
            max_sessions: 10_000,
            max_sessions_per_ip: 100,
            max_sdp_bytes: 32 * 1024,
            connect_timeout_secs: 15,
            // About 0.4 s of 1,000 viewers' 650 kbit/s: a burst of every viewer's
            // packets of one keyframe fits.
            socket_buffer_bytes: 8 * 1024 * 1024,
            // A few round trips of a distant viewer: later than that, a resent packet
            // comes after its frame was due.
            retransmission_window_ms: 1000,
        }
    }
}
