//! What DASH needs of the store: where each track's fragment lies in a segment
//! ([`DashParts`], [`DashTrack`], persisted with the segment's metadata) and what a
//! manifest lists of a stream ([`DashListing`]). A leaf: plain data.

use serde::{Deserialize, Serialize};

/// A segment's tracks as DASH serves them: each track's fragment is a byte range of the
/// fMP4 segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DashParts {
    pub video: Option<DashTrack>,
    pub audio: Option<DashTrack>,
    /// The DASH period the segment belongs to (a run of segments with one timeline and
    /// init segment) starts at this wall-clock time (Unix ms) and media time (90 kHz).
    pub period_ms: i64,
    pub period_time: i64,
}

/// One track's fragment in a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DashTrack {
    /// `tfdt` and duration, in `timescale`.
    pub start: u64,
    pub duration: u64,
    pub timescale: u32,
    /// Byte range in the fMP4 segment.
    pub offset: u32,
    pub len: u32,
}

/// What a DASH manifest lists of a stream.
#[derive(Debug, Clone, Default)]
pub struct DashListing {
    /// Sequence number, init segment id and parts of each segment in the live window.
    pub segments: Vec<(u64, u64, DashParts)>,
    pub codecs: String,
    pub width: u32,
    pub height: u32,
    pub frame_rate: Option<f64>,
    pub target_duration: u32,
    /// The stream is gone for good (its HLS playlists have `#EXT-X-ENDLIST`).
    pub ended: bool,
    /// Its `availabilityStartTime` (Unix ms), once it has had DASH parts.
    pub epoch_ms: Option<i64>,
    /// SCTE-35 sections (base64) of the listed segments, by sequence number, in order.
    pub scte35: Vec<(u64, String)>,
}
