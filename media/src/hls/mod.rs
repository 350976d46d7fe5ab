//! HLS building blocks: cutting samples into segments and rendering playlists.

pub mod datetime;
pub mod playlist;
pub mod segmenter;
