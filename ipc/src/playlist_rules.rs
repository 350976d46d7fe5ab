//! `ServerPlaylists` of `rules.conf`: where the server playlist file is and how often it
//! is read again. The ingest worker plays the file's tasks out.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerPlaylistSettings {
    /// The playlist file (JSON), absolute (the supervisor resolves a relative `Path`
    /// against the directory of `rules.conf`).
    pub path: PathBuf,
    /// How often the file is read again, in milliseconds.
    pub sync_interval_ms: u32,
    /// The only directory `vod` sources are read from (`MediaDirectory`, absolute):
    /// relative sources resolve under it, and a source outside it (`..`, another absolute
    /// path) makes the playlist file invalid. Defaults to the playlist file's directory.
    pub media_dir: PathBuf,
}
