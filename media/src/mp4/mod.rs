//! Progressive (non-fragmented) MP4 files, laid out without copying sample data: the
//! DVR's MP4 export.
//!
//! [`plan`] turns a list of samples that already lie in some source files (the DVR
//! archive) into an [`Mp4Plan`]: the bytes of `ftyp` + `moov` + the `mdat` header, built
//! in memory, and the `mdat` body as [`Piece`]s, runs of source-file bytes to copy in
//! order. The file is `moov` before `mdat` ("fast start"), so a browser plays it while
//! it downloads. [`Mp4Plan::reads`] maps a byte range of that virtual file to what to
//! read, for HTTP range requests.
//!
//! Track layout is the one of [`crate::fmp4`] (same sample entries, built by the same
//! code): video track id 1 at 90 kHz, audio track id 2 at the AAC sampling frequency.
//! Sample data stays in the order of the source files (audio and video interleaved as
//! they arrived), so an export reads each source file front to back; every run of
//! consecutive samples of one track is a chunk.

mod progressive;
mod reads;
mod tables;
#[cfg(test)]
mod tests;

pub use progressive::{Mp4Plan, Piece, plan};
pub use reads::{Read, Reads};

use crate::sample::TrackKind;

/// Most samples one export may hold: about 14 hours of 30 fps video with 48 kHz AAC.
/// The sample tables of the `moov` are built in memory (some 20 bytes per sample), so
/// this bounds what one request can make the server allocate.
pub const MAX_EXPORT_SAMPLES: usize = 4_000_000;

/// One sample of an export, where its bytes already lie.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExportSample {
    pub kind: TrackKind,
    /// Decode time, 90 kHz ([`crate::sample::TIMESCALE`]).
    pub dts: i64,
    /// Presentation time, 90 kHz.
    pub pts: i64,
    /// A video random access point; ignored for audio.
    pub keyframe: bool,
    /// Bytes of the sample in MP4 sample form: length-prefixed NAL units (the length
    /// size of the track's `avcC`/`hvcC`) or a raw AAC frame.
    pub size: u32,
    /// Index into the caller's list of source files.
    pub file: u32,
    /// Where the sample's bytes start in that file.
    pub offset: u64,
}

/// Why no MP4 could be planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExportError {
    /// No samples at all, or none that is presented at or after the play-from time.
    #[error("no samples to export")]
    NoSamples,
    /// More than [`MAX_EXPORT_SAMPLES`] samples.
    #[error("{0} samples: an export holds at most {MAX_EXPORT_SAMPLES}")]
    TooManySamples(usize),
    /// Samples of a kind whose track is absent from the tracks given.
    #[error("samples for a missing {0:?} track")]
    MissingTrack(TrackKind),
    /// A codec configuration that cannot be put in a sample entry.
    #[error("invalid codec configuration: {0}")]
    Config(String),
    /// Times MP4 cannot express: decode times going backwards, durations or
    /// composition offsets out of range.
    #[error("invalid timestamps: {0}")]
    Timestamp(&'static str),
    /// `mp4-atom` refused to encode a box.
    #[error("mp4 encoding: {0}")]
    Encode(String),
}

impl From<crate::fmp4::Fmp4Error> for ExportError {
    fn from(err: crate::fmp4::Fmp4Error) -> Self {
        ExportError::Config(err.to_string())
    }
}

impl From<mp4_atom::Error> for ExportError {
    fn from(err: mp4_atom::Error) -> Self {
        ExportError::Encode(err.to_string())
    }
}
