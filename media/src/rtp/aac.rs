//! AAC in RTP per RFC 3640, `mpeg4-generic` in mode AAC-hbr (sizelength 13,
//! indexlength 3): one access unit per packet behind a one-entry AU-header section. A
//! frame larger than a packet is fragmented (RFC 3640 3.2.3: every fragment carries the
//! whole AU's size, the marker is on the last).

use super::{Prefix, RtpPayload};
use bytes::Bytes;

/// The largest AU whose size fits the 13-bit `sizelength` field.
pub const MAX_AU_BYTES: usize = (1 << 13) - 1;

/// The RTP payloads of one raw AAC frame; `None` when it is too large for AAC-hbr.
pub fn packetize_aac(frame: &Bytes, max_payload: usize) -> Option<Vec<RtpPayload>> {
    if frame.len() > MAX_AU_BYTES || frame.is_empty() {
        return None;
    }
    // AU-headers-length in bits (one 16-bit header), then size << 3 | index 0.
    let size = (frame.len() as u16) << 3;
    let [high, low] = size.to_be_bytes();
    let prefix = Prefix::new(&[0x00, 0x10, high, low]);
    let piece = max_payload.saturating_sub(4).max(1);
    let mut out = Vec::new();
    let mut at = 0;
    while at < frame.len() {
        let end = (at + piece).min(frame.len());
        out.push(RtpPayload {
            prefix,
            body: frame.slice(at..end),
            marker: end == frame.len(),
        });
        at = end;
    }
    Some(out)
}
