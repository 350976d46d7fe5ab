//! RTP for the neutral frame: packetization of H.264 (RFC 6184), H.265 (RFC 7798) and
//! AAC (RFC 3640, `mpeg4-generic` AAC-hbr) into RTP payloads and back
//! ([`depacketize`]), the fixed RTP header ([`header`], [`packet`]), RTCP sender reports
//! and the SDP that describes the payloads ([`sdp`] out, [`announce`] in). Sans-io:
//! callers own sockets, sequence numbers and clocks.
//!
//! A payload is a small prefix (FU or AU headers, built here) and a zero-copy slice of
//! the frame, so a sender writes header, prefix and slice without copying the media.

mod aac;
pub mod announce;
pub mod depacketize;
pub mod header;
mod nal;
pub mod packet;
pub mod rtcp;
pub mod sdp;
#[cfg(test)]
mod tests;

pub use aac::packetize_aac;
pub use nal::{packetize_h264, packetize_h265};

use bytes::Bytes;

/// Bytes of RTP payload per packet, chosen so that a packet with its RTP header (12),
/// a UDP (8) and an IPv4 or IPv6 header (20/40) fits a 1500-byte Ethernet MTU.
pub const MAX_PAYLOAD: usize = 1400;

/// The bytes in front of a payload's slice: at most an FU indicator and header (H.264:
/// 2, H.265: 3) or the AU-header section of one AAC access unit (4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Prefix {
    bytes: [u8; 4],
    len: u8,
}

impl Prefix {
    pub fn new(bytes: &[u8]) -> Self {
        let mut prefix = Self::default();
        let len = bytes.len().min(4);
        prefix.bytes[..len].copy_from_slice(&bytes[..len]);
        prefix.len = len as u8;
        prefix
    }

    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// One RTP packet's payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RtpPayload {
    pub prefix: Prefix,
    /// A slice of the frame's payload.
    pub body: Bytes,
    /// The RTP marker bit: the last packet of an access unit (video) or of an AU (AAC).
    pub marker: bool,
}

impl RtpPayload {
    pub fn len(&self) -> usize {
        self.prefix.as_slice().len() + self.body.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
