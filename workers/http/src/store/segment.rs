//! One segment and what is known of it: its bytes in both formats ([`Segment`]), its
//! playlist metadata ([`SegmentMeta`], persisted in the stream's index), what the
//! packager hands over with it ([`SegmentFacts`]) and the playlist-level facts of its
//! stream ([`StreamMeta`], the index itself).

use super::dash_listing::DashParts;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// One finished segment in both formats.
#[derive(Debug, Clone)]
pub struct Segment {
    pub entry: SegmentMeta,
    pub ts: Bytes,
    pub m4s: Bytes,
    /// Each track's DASH fragment (video, audio), renumbered, made at its first request
    /// ([`super::dash_fragment`]).
    pub dash: [std::sync::OnceLock<Bytes>; 2],
}

/// What the playlists need to know about a segment (persisted as JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SegmentMeta {
    pub sequence: u64,
    pub duration_secs: f64,
    pub program_date_time_ms: i64,
    pub discontinuity: bool,
    pub init_id: u64,
    /// Playlist tags before the segment (SCTE-35 breaks); absent in older indexes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The segment starts with a keyframe; absent (true) in older indexes.
    #[serde(default = "independent_by_default")]
    pub independent: bool,
    /// Where its tracks' fragments lie (DASH); absent in older indexes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dash: Option<DashParts>,
    /// The SCTE-35 splice_info_sections the segment starts with (base64), for DASH
    /// `EventStream`s; absent in older indexes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scte35: Vec<String>,
}

fn independent_by_default() -> bool {
    true
}

/// What the packager knows of a segment besides its bytes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SegmentFacts {
    /// RFC 6381 codec strings of the stream, comma-separated.
    pub codecs: String,
    pub width: u32,
    pub height: u32,
    /// Video frames per second over the segment.
    pub frame_rate: Option<f64>,
    /// The segment starts with a keyframe (or has no video).
    pub independent: bool,
    pub dash: Option<DashParts>,
    /// The SCTE-35 sections the segment starts with (base64).
    pub scte35: Vec<String>,
}

/// Playlist-level facts (persisted).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamMeta {
    pub codecs: String,
    pub width: u32,
    pub height: u32,
    pub bandwidth: u64,
    /// `#EXT-X-TARGETDURATION`: fixed when the playlist starts (RFC 8216 forbids a
    /// change), kept across publishers and packager restarts.
    pub target_duration: u32,
    /// Video frames per second, from the latest segment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame_rate: Option<f64>,
    pub discontinuity_sequence: u64,
    pub next_sequence: u64,
    pub segments: Vec<SegmentMeta>,
    /// The DASH `availabilityStartTime` (Unix ms): where the stream's first DASH period
    /// started, kept for its life (across publishers and packager restarts), as a
    /// manifest's must not change from one update to the next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dash_epoch_ms: Option<i64>,
}
