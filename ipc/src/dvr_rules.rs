//! DVR settings (`Dvr` in `rules.conf`): where archives live, how long segments are, and
//! how much each archive and the disk may hold. Which streams are recorded is delivery
//! (`DVR` among a stream's `Delivery` outputs).

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DvrSettings {
    /// The archive root; a relative path is under the instance's `data_dir`.
    pub path: String,
    /// Segments are cut at the first keyframe after this long.
    pub segment_duration_secs: u32,
    /// Every archive keeps at most this many minutes (0: no limit).
    pub max_depth_minutes: u32,
    /// Every archive keeps at most this many megabytes (0: no limit).
    pub max_size_mb: u64,
    /// When the archive filesystem has less free space than this, the oldest segments
    /// of all archives go first.
    pub min_free_space_mb: u64,
    /// Limits of particular apps or streams (a stream's entry beats its app's).
    pub streams: Vec<DvrLimits>,
}

impl Default for DvrSettings {
    fn default() -> Self {
        Self {
            path: "dvr".to_owned(),
            segment_duration_secs: 6,
            max_depth_minutes: 0,
            max_size_mb: 0,
            min_free_space_mb: 1024,
            streams: Vec::new(),
        }
    }
}

/// Limits for an app (empty `stream`) or one stream; `None` keeps the global value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DvrLimits {
    pub app: String,
    pub stream: String,
    pub max_depth_minutes: Option<u32>,
    pub max_size_mb: Option<u64>,
}

impl DvrSettings {
    /// The archive root for an instance whose data lives in `data_dir`.
    pub fn root(&self, data_dir: &Path) -> PathBuf {
        data_dir.join(&self.path)
    }

    /// The archive directory of `app/stream` (names already checked by the caller).
    pub fn archive_dir(&self, data_dir: &Path, app: &str, stream: &str) -> PathBuf {
        self.root(data_dir).join(app).join(stream)
    }

    /// `(max_depth_minutes, max_size_mb)` of `app/stream`, 0 meaning unlimited.
    pub fn limits_for(&self, app: &str, stream: &str) -> (u32, u64) {
        let of_app = self.streams.iter().filter(|s| s.app == app);
        let own = of_app.clone().find(|s| s.stream == stream);
        let app_wide = of_app.clone().find(|s| s.stream.is_empty());
        let depth = own
            .and_then(|s| s.max_depth_minutes)
            .or_else(|| app_wide.and_then(|s| s.max_depth_minutes))
            .unwrap_or(self.max_depth_minutes);
        let size = own
            .and_then(|s| s.max_size_mb)
            .or_else(|| app_wide.and_then(|s| s.max_size_mb))
            .unwrap_or(self.max_size_mb);
        (depth, size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_limit_beats_its_app_which_beats_the_global_one() {
        let settings = DvrSettings {
            max_depth_minutes: 60,
            max_size_mb: 100,
            streams: vec![
                DvrLimits {
                    app: "live".into(),
                    stream: String::new(),
                    max_depth_minutes: Some(30),
                    max_size_mb: None,
                },
                DvrLimits {
                    app: "live".into(),
                    stream: "cam".into(),
                    max_depth_minutes: None,
                    max_size_mb: Some(5),
                },
            ],
            ..DvrSettings::default()
        };
        assert_eq!(settings.limits_for("live", "cam"), (30, 5));
        assert_eq!(settings.limits_for("live", "other"), (30, 100));
        assert_eq!(settings.limits_for("vod", "cam"), (60, 100));
        assert_eq!(
            settings.archive_dir(Path::new("/data"), "live", "cam"),
            Path::new("/data/dvr/live/cam")
        );
    }
}
