//! `ServerPlaylists`: the server playlist file, how often it is read again and the one
//! directory its files are read from (`{"Path": "playlist.json", "SyncInterval": 5000,
//! "MediaDirectory": "/srv/media"}`). The file's own schema is the ingest worker's
//! (`workers/mpegts/src/playout/schedule.rs`, README "Server playlists").

use super::super::error::FieldError;
use super::fields::in_range;
use serde::Deserialize;
use std::path::{Component, Path, PathBuf};
use strom_ipc::rules::ServerPlaylistSettings;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawServerPlaylists {
    #[serde(rename = "Path")]
    path: String,
    #[serde(rename = "SyncInterval", default)]
    sync_interval: Option<u32>,
    #[serde(rename = "MediaDirectory", default)]
    media_directory: Option<String>,
}

const DEFAULT_SYNC_INTERVAL_MS: u32 = 5_000;
const SYNC_INTERVAL_MS: std::ops::RangeInclusive<u32> = 100..=3_600_000;

impl RawServerPlaylists {
    /// `rules_dir` resolves a relative `Path`.
    pub(super) fn validate(self, rules_dir: &Path) -> Result<ServerPlaylistSettings, FieldError> {
        if self.path.is_empty() {
            return Err(FieldError::new("Path", "must not be empty"));
        }
        let interval = self.sync_interval.unwrap_or(DEFAULT_SYNC_INTERVAL_MS);
        let interval = in_range("SyncInterval", interval, SYNC_INTERVAL_MS)?;
        let path = rules_dir.join(PathBuf::from(self.path));
        // Files are confined to this directory, so `..` would only blur which one it is.
        let media_dir = match self.media_directory {
            Some(dir) if dir.is_empty() => {
                return Err(FieldError::new("MediaDirectory", "must not be empty"));
            }
            Some(dir)
                if Path::new(&dir)
                    .components()
                    .any(|c| c == Component::ParentDir) =>
            {
                return Err(FieldError::new("MediaDirectory", "must not contain `..`"));
            }
            Some(dir) => rules_dir.join(dir),
            None => path.parent().map(Path::to_path_buf).unwrap_or_default(),
        };
        Ok(ServerPlaylistSettings {
            path,
            sync_interval_ms: interval,
            media_dir,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use std::path::Path;

    #[test]
    fn server_playlists_resolve_against_the_rules_file() {
        let rules = parse(
            r#"{"ServerPlaylists": {"Path": "playlist.json"}}"#,
            Path::new("/etc/strom/rules.conf"),
        )
        .unwrap();
        let settings = rules.server_playlists.unwrap();
        assert_eq!(settings.path, Path::new("/etc/strom/playlist.json"));
        assert_eq!(settings.sync_interval_ms, 5_000);
        assert_eq!(settings.media_dir, Path::new("/etc/strom"));
        let rules = parse(
            r#"{"ServerPlaylists": {"Path": "p/playlist.json", "MediaDirectory": "media"}}"#,
            Path::new("/etc/strom/rules.conf"),
        )
        .unwrap();
        let settings = rules.server_playlists.unwrap();
        assert_eq!(settings.media_dir, Path::new("/etc/strom/media"));
        for (text, field) in [
            (
                r#"{"ServerPlaylists": {"Path": ""}}"#,
                "ServerPlaylists.Path",
            ),
            (
                r#"{"ServerPlaylists": {"Path": "p", "SyncInterval": 5}}"#,
                "ServerPlaylists.SyncInterval",
            ),
            (r#"{"ServerPlaylists": {"Path": "p", "X": 1}}"#, "X"),
            (
                r#"{"ServerPlaylists": {"Path": "p", "MediaDirectory": "/srv/../etc"}}"#,
                "ServerPlaylists.MediaDirectory",
            ),
            (
                r#"{"ServerPlaylists": {"Path": "p", "MediaDirectory": ""}}"#,
                "ServerPlaylists.MediaDirectory",
            ),
        ] {
            let error = parse(text, Path::new("rules.conf"))
                .unwrap_err()
                .to_string();
            assert!(error.contains(field), "{text}: {error}");
        }
    }
}
