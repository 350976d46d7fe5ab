//! What the HLS muxers consume: the tracks of a stream and its timed samples.
//!
//! Times are 90 kHz ticks, 64-bit and unwrapped (see DESIGN.md). Video sample data is
//! length-prefixed NAL units exactly as FLV/RTMP carries them (AVCC/HVCC form, NAL length
//! size from the decoder configuration); audio sample data is raw AAC frames without ADTS,
//! or whole MP3 frames (header included).

use crate::aac::AacConfig;
use crate::avc::AvcDecoderConfig;
use crate::hevc::HevcDecoderConfig;
use crate::mpeg_audio::MpegAudioConfig;
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
    pub config: AudioConfig,
    /// AAC: the AudioSpecificConfig as received (for the fMP4 `esds` box); MP3: the
    /// configuration record [`MpegAudioConfig::record`] describes.
    pub record: Bytes,
}

/// The audio codecs the muxers write: AAC everywhere, MP3 (MPEG-1/2 audio layer III,
/// the radio codec) where the DVR records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AudioConfig {
    Aac(AacConfig),
    Mp3(MpegAudioConfig),
}

impl AudioConfig {
    /// The sampling frequency (AAC: the core one): the audio track's timescale.
    pub fn sampling_frequency(&self) -> u32 {
        match self {
            AudioConfig::Aac(aac) => aac.sampling_frequency,
            AudioConfig::Mp3(mp3) => mp3.sample_rate,
        }
    }

    /// Samples per channel in one frame (one audio sample of a track).
    pub fn frame_samples(&self) -> u32 {
        match self {
            AudioConfig::Aac(_) => 1024,
            AudioConfig::Mp3(mp3) => mp3.frame_samples(),
        }
    }

    /// The RFC 6381 codec string (`mp4a.40.2`, `mp4a.40.34` for MP3 as HLS names it).
    pub fn codec_string(&self) -> String {
        match self {
            AudioConfig::Aac(aac) => aac.codec_string(),
            AudioConfig::Mp3(_) => MpegAudioConfig::CODEC_STRING.to_owned(),
        }
    }

    pub fn channel_count(&self) -> Option<u8> {
        match self {
            AudioConfig::Aac(aac) => aac.channel_count(),
            AudioConfig::Mp3(mp3) => Some(mp3.channels),
        }
    }

    /// The AAC configuration, when the track is AAC.
    pub fn aac(&self) -> Option<&AacConfig> {
        match self {
            AudioConfig::Aac(aac) => Some(aac),
            AudioConfig::Mp3(_) => None,
        }
    }
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
