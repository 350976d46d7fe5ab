//! The fixed 12-byte RTP header (RFC 3550 section 5.1): no padding, extension or CSRCs.

/// Bytes of [`write`]'s header.
pub const LEN: usize = 12;

/// The RTP header of one packet.
pub fn write(
    marker: bool,
    payload_type: u8,
    sequence: u16,
    timestamp: u32,
    ssrc: u32,
) -> [u8; LEN] {
    let mut header = [0u8; LEN];
    header[0] = 0x80;
    header[1] = (u8::from(marker) << 7) | (payload_type & 0x7f);
    header[2..4].copy_from_slice(&sequence.to_be_bytes());
    header[4..8].copy_from_slice(&timestamp.to_be_bytes());
    header[8..12].copy_from_slice(&ssrc.to_be_bytes());
    header
}
