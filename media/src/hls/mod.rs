//! HLS building blocks: cutting samples into segments, rendering playlists, and the
//! SCTE-35 break tags ([`cues`]).

pub mod cues;
pub mod datetime;
pub mod playlist;
pub mod segmenter;
