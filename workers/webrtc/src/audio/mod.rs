//! Audio between the codecs WebRTC speaks and the ones the other outputs speak: AAC to
//! Opus once per played stream, Opus to AAC for WHIP publishers.
//!
//! This file owns the types both directions share: the encoded frame handed out
//! ([`EncodedAudio`]) and the error ([`AudioError`]). The transcoders live in
//! `aac_to_opus.rs` and `opus_to_aac.rs`; `timeline.rs` places their output in time,
//! `resample.rs` brings AAC's rates to Opus's 48 kHz (the AudioSpecificConfig is read
//! by `strom_media::aac`).

mod aac_to_opus;
mod opus_to_aac;
mod resample;
mod timeline;

pub use aac_to_opus::AacToOpus;
pub use opus_to_aac::OpusToAac;

/// One encoded audio frame with its presentation time in 90 kHz ticks.
#[derive(Debug, Clone)]
pub struct EncodedAudio {
    pub data: bytes::Bytes,
    pub pts: i64,
    /// samples per channel in the frame
    pub samples: u32,
}

/// What a transcoder has had to do to keep its output in step with its input, for
/// metrics and logs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TranscodeStats {
    /// Frames that could not be decoded (or encoded) and were skipped.
    pub errors: u64,
    /// New time lines after pts jumps of more than 100 ms.
    pub reanchors: u64,
    /// Samples per channel dropped: half-filled frames at re-anchors, input that came
    /// earlier than its place, in-flight samples of a restarted encoder.
    pub dropped_samples: u64,
    /// Samples per channel made up for input that came later than its place (silence
    /// from AAC, packet-loss concealment from Opus).
    pub filled_samples: u64,
}

/// Why a transcoder could not start or could not handle one frame. A frame's error leaves
/// the transcoder usable: the next frame is handled as if the bad one had been lost.
#[derive(Debug, thiserror::Error)]
pub enum AudioError {
    #[error("AudioSpecificConfig: {0}")]
    Config(String),
    #[error("unsupported audio: {0}")]
    Unsupported(String),
    #[error("AAC decoder: {0}")]
    AacDecode(String),
    #[error("AAC encoder: {0}")]
    AacEncode(String),
    #[error("Opus decoder: {0}")]
    OpusDecode(String),
    #[error("Opus encoder: {0}")]
    OpusEncode(String),
    #[error("resampler: {0}")]
    Resample(String),
}

/// Samples per channel in one Opus frame of 20 ms at 48 kHz, the frame WebRTC players expect.
pub(crate) const OPUS_FRAME_SAMPLES: usize = 960;
/// Opus always runs at 48 kHz here; so does the AAC made from it.
pub(crate) const RATE_48K: u32 = 48_000;

#[cfg(test)]
pub(crate) mod test_support;
