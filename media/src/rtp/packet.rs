//! Reading an RTP packet (RFC 3550 section 5.1): the fixed header, CSRCs, header
//! extension and padding skipped, the payload as a zero-copy slice.

use crate::error::ParseError;
use bytes::Bytes;

/// An RTP packet as received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RtpPacket {
    pub marker: bool,
    pub payload_type: u8,
    pub sequence: u16,
    pub timestamp: u32,
    pub ssrc: u32,
    pub payload: Bytes,
}

/// Parses `data` as an RTP version 2 packet.
pub fn parse(data: &Bytes) -> Result<RtpPacket, ParseError> {
    let header: [u8; 12] = data
        .get(..12)
        .and_then(|h| h.try_into().ok())
        .ok_or(ParseError::Truncated("RTP header"))?;
    if header[0] >> 6 != 2 {
        return Err(ParseError::Unsupported("RTP version"));
    }
    let padding = header[0] & 0x20 != 0;
    let extension = header[0] & 0x10 != 0;
    let csrc_count = usize::from(header[0] & 0x0f);
    let mut start = 12 + 4 * csrc_count;
    if extension {
        let words = data
            .get(start + 2..start + 4)
            .ok_or(ParseError::Truncated("RTP header extension"))?;
        start += 4 + 4 * usize::from(u16::from_be_bytes([words[0], words[1]]));
    }
    let mut end = data.len();
    if padding {
        let pad = usize::from(*data.last().ok_or(ParseError::Truncated("RTP padding"))?);
        end = end
            .checked_sub(pad)
            .ok_or(ParseError::Invalid("RTP padding"))?;
    }
    if start > end {
        return Err(ParseError::Truncated("RTP packet"));
    }
    Ok(RtpPacket {
        marker: header[1] & 0x80 != 0,
        payload_type: header[1] & 0x7f,
        sequence: u16::from_be_bytes([header[2], header[3]]),
        timestamp: u32::from_be_bytes([header[4], header[5], header[6], header[7]]),
        ssrc: u32::from_be_bytes([header[8], header[9], header[10], header[11]]),
        payload: data.slice(start..end),
    })
}
