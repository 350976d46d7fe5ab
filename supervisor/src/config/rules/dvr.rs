//! `Dvr`: where DVR archives live (`path`, relative to `data_dir` unless absolute),
//! segment length, retention (`max_depth_minutes`, `max_size_mb`, per app or stream in
//! `streams`) and the free-space floor. Which streams are recorded is delivery: `DVR`
//! among a stream's `Delivery` outputs.

use super::super::error::FieldError;
use super::fields::{check_media_name, each, in_range, unique};
use serde::Deserialize;
use strom_ipc::dvr_rules::{DvrLimits, DvrSettings};

/// Deeper than ten years is a typo, not a retention policy.
const MAX_DEPTH_MINUTES: u32 = 10 * 366 * 24 * 60;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDvr {
    path: Option<String>,
    segment_duration_secs: Option<u32>,
    max_depth_minutes: Option<u32>,
    max_size_mb: Option<u64>,
    min_free_space_mb: Option<u64>,
    #[serde(default)]
    streams: Vec<RawDvrLimits>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDvrLimits {
    app: String,
    #[serde(default)]
    stream: String,
    max_depth_minutes: Option<u32>,
    max_size_mb: Option<u64>,
}

impl RawDvr {
    pub(super) fn validate(self) -> Result<DvrSettings, FieldError> {
        let defaults = DvrSettings::default();
        let path = self.path.unwrap_or(defaults.path);
        if path.is_empty() || path.len() > 4096 || path.contains('\0') {
            return Err(FieldError::new("path", "expected a directory path"));
        }
        let segment = self
            .segment_duration_secs
            .unwrap_or(defaults.segment_duration_secs);
        let depth = self.max_depth_minutes.unwrap_or(defaults.max_depth_minutes);
        let streams = each(self.streams, "streams", RawDvrLimits::validate)?;
        unique(&streams, "streams", "stream", |s| {
            format!("{}/{}", s.app, s.stream)
        })?;
        Ok(DvrSettings {
            path,
            segment_duration_secs: in_range("segment_duration_secs", segment, 1..=60)?,
            max_depth_minutes: in_range("max_depth_minutes", depth, 0..=MAX_DEPTH_MINUTES)?,
            max_size_mb: self.max_size_mb.unwrap_or(defaults.max_size_mb),
            min_free_space_mb: self.min_free_space_mb.unwrap_or(defaults.min_free_space_mb),
            streams,
        })
    }
}

impl RawDvrLimits {
    fn validate(self) -> Result<DvrLimits, FieldError> {
        check_media_name("app", &self.app)?;
        if !self.stream.is_empty() {
            check_media_name("stream", &self.stream)?;
        }
        if let Some(depth) = self.max_depth_minutes {
            in_range("max_depth_minutes", depth, 0..=MAX_DEPTH_MINUTES)?;
        }
        Ok(DvrLimits {
            app: self.app,
            stream: self.stream,
            max_depth_minutes: self.max_depth_minutes,
            max_size_mb: self.max_size_mb,
        })
    }
}
