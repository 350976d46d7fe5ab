//! The media bus wire format: how a producer worker streams a live stream's frames to a
//! subscriber worker over a Unix socket.
//!
//! The subscriber sends one [`Subscribe`] (a control frame, bincode); the producer then
//! sends media frames: a fixed 28-byte header followed by the payload. The payload (an
//! FLV tag body, exactly as RTMP carried it) is written from the producer's shared buffer
//! with a vectored write and read into one buffer on the other side: one copy per frame
//! per subscriber, no per-frame serialization.
//!
//! ```text
//! media frame: u8 track | u8 flags | u16 0 | u32 payload length | i64 dts | i64 pts | u32 generation | payload
//! ```
//! Times are 90 kHz ticks, unwrapped. `generation` changes when a new publisher takes
//! over the stream, which is where HLS inserts a discontinuity.

use crate::error::IpcError;
use serde::{Deserialize, Serialize};

/// Largest media payload accepted from the bus.
pub const MAX_BUS_PAYLOAD: usize = 16 * 1024 * 1024;
pub const MEDIA_HEADER_LEN: usize = 28;

/// The first and only message a subscriber sends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subscribe {
    pub app: String,
    pub stream: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BusTrack {
    Video,
    Audio,
    /// `onMetaData`.
    Metadata,
}

/// The fixed part of a media frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MediaHeader {
    pub track: BusTrack,
    pub keyframe: bool,
    pub sequence_header: bool,
    pub payload_len: u32,
    pub dts: i64,
    pub pts: i64,
    pub generation: u32,
}

impl MediaHeader {
    pub fn encode(&self) -> [u8; MEDIA_HEADER_LEN] {
        let mut out = [0u8; MEDIA_HEADER_LEN];
        out[0] = match self.track {
            BusTrack::Video => 0,
            BusTrack::Audio => 1,
            BusTrack::Metadata => 2,
        };
        out[1] = u8::from(self.keyframe) | (u8::from(self.sequence_header) << 1);
        out[4..8].copy_from_slice(&self.payload_len.to_be_bytes());
        out[8..16].copy_from_slice(&self.dts.to_be_bytes());
        out[16..24].copy_from_slice(&self.pts.to_be_bytes());
        out[24..28].copy_from_slice(&self.generation.to_be_bytes());
        out
    }

    pub fn decode(bytes: &[u8; MEDIA_HEADER_LEN]) -> Result<Self, IpcError> {
        let track = match bytes[0] {
            0 => BusTrack::Video,
            1 => BusTrack::Audio,
            2 => BusTrack::Metadata,
            _ => return Err(IpcError::BadMediaFrame("unknown track")),
        };
        let payload_len = u32::from_be_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
        if payload_len as usize > MAX_BUS_PAYLOAD {
            return Err(IpcError::FrameTooLarge {
                size: payload_len as usize,
                max: MAX_BUS_PAYLOAD,
            });
        }
        let i64_at = |at: usize| {
            let mut raw = [0u8; 8];
            raw.copy_from_slice(&bytes[at..at + 8]);
            i64::from_be_bytes(raw)
        };
        Ok(Self {
            track,
            keyframe: bytes[1] & 1 != 0,
            sequence_header: bytes[1] & 2 != 0,
            payload_len,
            dts: i64_at(8),
            pts: i64_at(16),
            generation: u32::from_be_bytes([bytes[24], bytes[25], bytes[26], bytes[27]]),
        })
    }
}

/// Where subscribers find a live stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamLocation {
    pub app: String,
    pub stream: String,
    pub producer: crate::WorkerKind,
    pub bus_path: std::path::PathBuf,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_headers_round_trip_and_reject_nonsense() {
        let header = MediaHeader {
            track: BusTrack::Video,
            keyframe: true,
            sequence_header: false,
            payload_len: 1234,
            dts: (1i64 << 33) + 5,
            pts: -90,
            generation: 7,
        };
        assert_eq!(MediaHeader::decode(&header.encode()).unwrap(), header);
        let mut bad = header.encode();
        bad[0] = 9;
        assert!(MediaHeader::decode(&bad).is_err());
        let mut huge = header.encode();
        huge[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(MediaHeader::decode(&huge).is_err());
    }
}
