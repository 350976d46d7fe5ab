//! One frame of a played stream as WebRTC viewers are sent it: its RTP payloads, cut
//! once per stream by the feed and shared by every viewer, and its number in the feed.
//! A leaf: the feed makes these, the fan-out and each viewer's core send them.

use std::sync::Arc;

/// RTP payload bytes per packet: with the RTP header (12), the viewer's MID extension
/// (up to 12) and the SRTP tag (at most 16), a packet stays within str0m's 1150-byte
/// datagram target, which leaves room for TURN and VPN headers on a 1500-byte path.
pub const MAX_RTP_PAYLOAD: usize = 1100;

/// One frame as viewers send it.
#[derive(Debug)]
pub struct FeedFrame {
    /// The frame's number in the feed (from 0), so that a joining viewer's shard
    /// starts right after the GOP the viewer was sent.
    pub seq: u64,
    pub video: bool,
    pub keyframe: bool,
    /// Presentation time, 90 kHz.
    pub pts: i64,
    /// The frame's RTP payloads in order; a video frame's last one carries the marker.
    pub payloads: Vec<Arc<[u8]>>,
}

impl FeedFrame {
    /// The payload bytes, for the feed's bound on the GOP it keeps.
    pub fn bytes(&self) -> usize {
        self.payloads.iter().map(|p| p.len()).sum()
    }
}
