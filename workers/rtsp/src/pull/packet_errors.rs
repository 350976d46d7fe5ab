//! Which errors of retina's demuxer a pull survives. retina reports a packet it cannot
//! depacketize or validate (an FU-A fragment without its start, as a camera or VLC
//! sends when a session begins mid-frame; a bad NAL header; an unexpected SSRC) and
//! then goes on with the next packet: its depacketizer discards the broken access unit
//! and restores its state for exactly this. Ending the pull there would unpublish the
//! stream, and restart every player and packager, for one lost frame. Everything else
//! (the connection read or write failing, RTSP framing, a failed keep-alive, a
//! timeout) is fatal: the session cannot go on.
//!
//! retina's error type is opaque: its kind shows only in its `Debug` form, which names
//! the variant. A packet-level error that retina cannot recover from itself ends its
//! demuxer, which the pull then sees as the end of the session.

use std::time::Duration;
use strom_stream::StreamKey;
use strom_worker_runtime::log_limit::LogLimit;

/// The `Debug` form of retina's per-packet errors starts with one of these.
const PACKET_ERRORS: [&str; 2] = ["RtpPacketError {", "PacketError {"];

/// Whether the session may go on after `error`.
pub fn recoverable(error: &retina::Error) -> bool {
    recoverable_kind(&format!("{error:?}"))
}

fn recoverable_kind(debug: &str) -> bool {
    PACKET_ERRORS.iter().any(|kind| debug.starts_with(kind))
}

/// The warnings about skipped packets of one pull: a source that keeps sending bad
/// packets is reported a few times a minute, with the count of the ones not logged.
pub struct SkippedPackets {
    limit: LogLimit,
}

impl Default for SkippedPackets {
    fn default() -> Self {
        Self {
            limit: LogLimit::new(3, Duration::from_secs(60)),
        }
    }
}

impl SkippedPackets {
    pub fn report(&self, key: &StreamKey, error: &retina::Error) {
        if let Some(suppressed) = self.limit.check() {
            // retina's message goes on with lines of context; the first says what.
            let text = error.to_string();
            let what = text.lines().next().unwrap_or_default();
            tracing::warn!(stream = %key, error = what, suppressed, "RTSP pull: bad packet skipped");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_errors_are_recoverable_and_the_rest_fatal() {
        for debug in [
            "RtpPacketError { conn_ctx: ConnectionContext { .. }, description: \"FU-A has start bit unset while no frag in progress\" }",
            "PacketError { conn_ctx: .., description: \"bad RTP header\" }",
        ] {
            assert!(recoverable_kind(debug), "{debug}");
        }
        for debug in [
            "RtspReadError { conn_ctx: .., source: Kind(ConnectionReset) }",
            "RtspFramingError { description: \"PacketError {\" }",
            "RtspResponseError { status: 454, .. }",
            "WriteError { .. }",
            "UdpRecvError { .. }",
            "ConnectError(Os { code: 111 })",
            "Timeout",
            "FailedPrecondition(\"no connection\")",
            "",
        ] {
            assert!(!recoverable_kind(debug), "{debug}");
        }
    }
}
