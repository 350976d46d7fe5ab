//! Unwrapping MPEG-TS carried over RTP (RFC 2250, SMPTE 2022-2): [`strip_rtp`]
//! finds the transport packets behind an RTP header, so a UDP worker can feed
//! plain and RTP-wrapped datagrams alike to [`super::TsDemuxer::push`].

/// RTP payload type of MPEG-2 transport streams (RFC 3551); 96..=127 are dynamic.
const PT_MP2T: u8 = 33;
const FIXED_HEADER: usize = 12;

/// The TS part of a UDP datagram: the datagram itself when it starts with a sync
/// byte (plain TS, usually 7 × 188 bytes), the payload after the RTP header when it
/// carries one (version 2, payload type 33 or dynamic, CSRCs and header extension
/// skipped, padding removed) and that payload starts with 0x47; otherwise the
/// datagram unchanged (the demuxer resynchronises on its own).
pub fn strip_rtp(datagram: &[u8]) -> &[u8] {
    rtp_payload(datagram).unwrap_or(datagram)
}

fn rtp_payload(datagram: &[u8]) -> Option<&[u8]> {
    let (&first, &second) = (datagram.first()?, datagram.get(1)?);
    if first == super::SYNC_BYTE || first >> 6 != 2 || datagram.len() < FIXED_HEADER {
        return None;
    }
    let payload_type = second & 0x7f;
    if payload_type != PT_MP2T && !(96..=127).contains(&payload_type) {
        return None;
    }
    let mut start = FIXED_HEADER + 4 * usize::from(first & 0x0f);
    if first & 0x10 != 0 {
        // Header extension: 16-bit profile, 16-bit length in 32-bit words.
        let words = datagram.get(start + 2..start + 4)?;
        start += 4 + 4 * usize::from(u16::from_be_bytes([words[0], words[1]]));
    }
    let mut end = datagram.len();
    if first & 0x20 != 0 {
        // Padding: the last byte counts the padding bytes, itself included.
        end = end.checked_sub(usize::from(*datagram.last()?))?;
    }
    let payload = datagram.get(start..end)?;
    (payload.first() == Some(&super::SYNC_BYTE)).then_some(payload)
}
