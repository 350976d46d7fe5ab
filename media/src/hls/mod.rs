//! HLS building blocks: cutting samples into segments, rendering playlists (Low-Latency
//! HLS in [`low_latency`]), and the SCTE-35 break tags ([`cues`]).

pub mod cues;
pub mod datetime;
pub mod low_latency;
pub mod playlist;
pub mod segmenter;
