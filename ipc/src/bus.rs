//! The media bus wire format: how a producer worker streams a live stream's frames to a
//! subscriber worker over a Unix socket.
//!
//! The subscriber sends one [`Subscribe`] (a control frame, bincode); the producer then
//! sends media frames: a fixed 34-byte header followed by the payload. The payload (a
//! neutral frame's payload: length-prefixed NAL units, raw audio frames, whole sections
//! or AMF0 data) is written from the producer's shared buffer with a vectored write and
//! read into one buffer on the other side: one copy per frame per subscriber, no
//! per-frame serialization.
//!
//! ```text
//! media frame: u8 track | u8 flags | u8 codec | u8 0 | u32 payload length
//!              | i64 dts | i64 pts | u32 generation | [u8; 6] source form | payload
//! flags: bit 0 keyframe, 1 configuration, 2 control, 3 source form present
//! ```
//! Times are 90 kHz ticks, unwrapped. `codec` is `strom_media::frame::Codec::to_u8`
//! (unknown numbers read as an unknown codec, so a newer producer does not break an
//! older subscriber). The source form is `strom_media::flv_adapter::FlvForm::to_bytes`
//! when the producer took the frame from FLV: a subscriber that re-emits FLV (the rtmp
//! worker playing another worker's RTMP stream) rebuilds the publisher's exact bytes.
//! `generation` changes when a new publisher takes over the stream, which is where HLS
//! inserts a discontinuity.

use crate::error::IpcError;
use serde::{Deserialize, Serialize};

/// Largest media payload accepted from the bus.
pub const MAX_BUS_PAYLOAD: usize = 16 * 1024 * 1024;
pub const MEDIA_HEADER_LEN: usize = 34;
/// Length of the source form at the end of the header.
pub const SOURCE_FORM_LEN: usize = 6;

const KEYFRAME: u8 = 1;
const CONFIG: u8 = 1 << 1;
const CONTROL: u8 = 1 << 2;
const HAS_FORM: u8 = 1 << 3;

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
    /// Timeline data: stream metadata, SCTE-35, timed metadata.
    Data,
}

/// The fixed part of a media frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MediaHeader {
    pub track: BusTrack,
    /// `strom_media::frame::Codec::to_u8`.
    pub codec: u8,
    pub keyframe: bool,
    /// A codec configuration record rather than media.
    pub config: bool,
    /// An in-track signal muxers skip (end of sequence, Enhanced RTMP metadata).
    pub control: bool,
    pub payload_len: u32,
    pub dts: i64,
    pub pts: i64,
    pub generation: u32,
    /// How the producer's container framed the frame, when it came from one.
    pub source_form: Option<[u8; SOURCE_FORM_LEN]>,
}

impl MediaHeader {
    pub fn encode(&self) -> [u8; MEDIA_HEADER_LEN] {
        let mut out = [0u8; MEDIA_HEADER_LEN];
        out[0] = match self.track {
            BusTrack::Video => 0,
            BusTrack::Audio => 1,
            BusTrack::Data => 2,
        };
        out[1] = [
            (self.keyframe, KEYFRAME),
            (self.config, CONFIG),
            (self.control, CONTROL),
            (self.source_form.is_some(), HAS_FORM),
        ]
        .into_iter()
        .filter(|(set, _)| *set)
        .fold(0, |flags, (_, bit)| flags | bit);
        out[2] = self.codec;
        out[4..8].copy_from_slice(&self.payload_len.to_be_bytes());
        out[8..16].copy_from_slice(&self.dts.to_be_bytes());
        out[16..24].copy_from_slice(&self.pts.to_be_bytes());
        out[24..28].copy_from_slice(&self.generation.to_be_bytes());
        if let Some(form) = self.source_form {
            out[28..].copy_from_slice(&form);
        }
        out
    }

    pub fn decode(bytes: &[u8; MEDIA_HEADER_LEN]) -> Result<Self, IpcError> {
        let track = match bytes[0] {
            0 => BusTrack::Video,
            1 => BusTrack::Audio,
            2 => BusTrack::Data,
            _ => return Err(IpcError::BadMediaFrame("unknown track")),
        };
        let flags = bytes[1];
        if flags & !(KEYFRAME | CONFIG | CONTROL | HAS_FORM) != 0 {
            return Err(IpcError::BadMediaFrame("unknown flags"));
        }
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
        let source_form = (flags & HAS_FORM != 0).then(|| {
            let mut form = [0u8; SOURCE_FORM_LEN];
            form.copy_from_slice(&bytes[28..]);
            form
        });
        Ok(Self {
            track,
            codec: bytes[2],
            keyframe: flags & KEYFRAME != 0,
            config: flags & CONFIG != 0,
            control: flags & CONTROL != 0,
            payload_len,
            dts: i64_at(8),
            pts: i64_at(16),
            generation: u32::from_be_bytes([bytes[24], bytes[25], bytes[26], bytes[27]]),
            source_form,
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

    fn header() -> MediaHeader {
        MediaHeader {
            track: BusTrack::Video,
            codec: 1,
            keyframe: true,
            config: false,
            control: false,
            payload_len: 1234,
            dts: (1i64 << 33) + 5,
            pts: -90,
            generation: 7,
            source_form: Some([2, 0x17, 1, 0, 0, 0]),
        }
    }

    #[test]
    fn media_headers_round_trip_and_reject_nonsense() {
        let header = header();
        assert_eq!(MediaHeader::decode(&header.encode()).unwrap(), header);
        let neutral = MediaHeader {
            source_form: None,
            control: true,
            config: true,
            track: BusTrack::Data,
            codec: 9,
            ..header
        };
        assert_eq!(MediaHeader::decode(&neutral.encode()).unwrap(), neutral);
        let mut bad = header.encode();
        bad[0] = 9;
        assert!(MediaHeader::decode(&bad).is_err());
        let mut flags = header.encode();
        flags[1] |= 0x80;
        assert!(MediaHeader::decode(&flags).is_err());
        let mut huge = header.encode();
        huge[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(MediaHeader::decode(&huge).is_err());
    }

    /// The exact bytes on the wire: a subscriber built from another version of strom
    /// must read them the same way.
    #[test]
    fn golden_media_header() {
        let golden: [u8; MEDIA_HEADER_LEN] = [
            0x00, 0x09, 0x01, 0x00, // video, keyframe + source form, H.264
            0x00, 0x00, 0x04, 0xd2, // payload length 1234
            0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x05, // dts 2^33 + 5
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xa6, // pts -90
            0x00, 0x00, 0x00, 0x07, // generation 7
            0x02, 0x17, 0x01, 0x00, 0x00, 0x00, // FLV form: 2 bytes, 17 01
        ];
        assert_eq!(header().encode(), golden);
        assert_eq!(MediaHeader::decode(&golden).unwrap(), header());
        let aac_config: [u8; MEDIA_HEADER_LEN] = [
            0x01, 0x02, 0x05, 0x00, 0x00, 0x00, 0x00, 0x02, 0, 0, 0, 0, 0, 0, 0x0b, 0xb8, 0, 0, 0,
            0, 0, 0, 0x0b, 0xb8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0,
        ];
        assert_eq!(
            MediaHeader::decode(&aac_config).unwrap(),
            MediaHeader {
                track: BusTrack::Audio,
                codec: 5,
                keyframe: false,
                config: true,
                control: false,
                payload_len: 2,
                dts: 3000,
                pts: 3000,
                generation: 1,
                source_form: None,
            }
        );
    }
}
