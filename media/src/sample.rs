//! What the HLS muxers consume: the tracks of a stream and its timed samples.
//!
//! Times are 90 kHz ticks, 64-bit and unwrapped (see DESIGN.md). Video sample data is
//! length-prefixed NAL units exactly as FLV/RTMP carries them (AVCC/HVCC form, NAL length
//! size from the decoder configuration); audio sample data is raw AAC frames without ADTS.

use crate::aac::AacConfig;
use crate::avc::AvcDecoderConfig;
use crate::hevc::HevcDecoderConfig;
use bytes::Bytes;

/// 90 kHz, the clock of MPEG-TS and of strom's pipeline.
pub const TIMESCALE: u32 = 90_000;

#[derive(Debug, Clone, PartialEq)]
pub enum VideoConfig {
    H264 {
        config: AvcDecoderConfig,
        /// The avcC record as received (for the fMP4 `avcC` box).
        record: Bytes,
    },
    H265 {
        config: HevcDecoderConfig,
        /// The hvcC record as received (for the fMP4 `hvcC` box).
        record: Bytes,
    },
}

impl VideoConfig {
    pub fn nal_length_size(&self) -> u8 {
        match self {
            VideoConfig::H264 { config, .. } => config.nal_length_size,
            VideoConfig::H265 { config, .. } => config.nal_length_size,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct VideoTrack {
    pub config: VideoConfig,
    pub width: u32,
    pub height: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AudioTrack {
    pub config: AacConfig,
    /// The AudioSpecificConfig as received (for the fMP4 `esds` box).
    pub record: Bytes,
}

/// The tracks of a stream; either may be absent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tracks {
    pub video: Option<VideoTrack>,
    pub audio: Option<AudioTrack>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrackKind {
    Video,
    Audio,
}

/// One access unit (video) or AAC frame (audio).
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub kind: TrackKind,
    /// Decode time, 90 kHz.
    pub dts: i64,
    /// Presentation time, 90 kHz (video may be later than dts; audio: equal).
    pub pts: i64,
    /// A video random access point (IDR/IRAP); always false for audio.
    pub keyframe: bool,
    pub data: Bytes,
}
