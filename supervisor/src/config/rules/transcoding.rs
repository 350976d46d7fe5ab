//! `Transcoding`: ABR ladders made from published streams by the transcoder worker.
//!
//! ```json
//! "Transcoding": {"max_concurrent": 4, "ladders": [
//!   {"app": "live", "renditions": [
//!     {"name": "480p", "width": 854, "height": 480, "video_bitrate": 1200,
//!      "max_fps": 30, "profile": "main", "preset": "veryfast", "audio": "passthrough"},
//!     {"name": "240p", "width": 426, "height": 240, "video_bitrate": 400,
//!      "audio": {"bitrate": 64, "channels": 1}}]}]}
//! ```
//!
//! `stream` (optional) narrows a ladder to one stream, and beats its app's ladder.
//! `source_rendition` (default true) makes the source the top rendition of the ABR group
//! `app/<stream>_abr` that lists it and its renditions.
//! Bitrates are kbit/s; `profile` defaults to `main`, `preset` to `veryfast`, `audio` to
//! `passthrough`, `max_concurrent` to 4, `cpu_budget_percent` (percent of one core, the
//! running transcodes' sum) to 75% of the machine's cores.

use super::super::error::FieldError;
use super::fields::{check_media_name, each, in_range, unique};
use serde::Deserialize;
use serde_json::Value;
use strom_ipc::transcode_rules::{Ladder, RenditionAudio, RenditionSpec, TranscodingSettings};

/// Renditions one ladder may have: each is an encoder in the stream's ffmpeg.
const MAX_RENDITIONS: usize = 8;
const PROFILES: [&str; 3] = ["baseline", "main", "high"];
const PRESETS: [&str; 9] = [
    "ultrafast",
    "superfast",
    "veryfast",
    "faster",
    "fast",
    "medium",
    "slow",
    "slower",
    "veryslow",
];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTranscoding {
    max_concurrent: Option<u32>,
    cpu_budget_percent: Option<u32>,
    #[serde(default)]
    ladders: Vec<RawLadder>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLadder {
    app: String,
    #[serde(default)]
    stream: String,
    renditions: Vec<RawRendition>,
    source_rendition: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRendition {
    name: String,
    width: u32,
    height: u32,
    video_bitrate: u32,
    max_fps: Option<u32>,
    profile: Option<String>,
    preset: Option<String>,
    audio: Option<Value>,
}

impl RawTranscoding {
    pub(super) fn validate(self) -> Result<TranscodingSettings, FieldError> {
        let max_concurrent = self
            .max_concurrent
            .map(|n| in_range("max_concurrent", n, 1..=256))
            .transpose()?
            .unwrap_or(TranscodingSettings::default().max_concurrent);
        let ladders = each(self.ladders, "ladders", RawLadder::validate)?;
        unique(&ladders, "ladders", "stream", |l| {
            format!("{}/{}", l.app, l.stream)
        })?;
        Ok(TranscodingSettings {
            max_concurrent,
            cpu_budget_percent: self
                .cpu_budget_percent
                .map(|p| in_range("cpu_budget_percent", p, 1..=102_400))
                .transpose()?,
            ladders,
        })
    }
}

impl RawLadder {
    fn validate(self) -> Result<Ladder, FieldError> {
        check_media_name("app", &self.app)?;
        if !self.stream.is_empty() {
            check_media_name("stream", &self.stream)?;
        }
        if self.renditions.is_empty() || self.renditions.len() > MAX_RENDITIONS {
            return Err(FieldError::new(
                "renditions",
                format!("must list 1 to {MAX_RENDITIONS} renditions"),
            ));
        }
        let renditions = each(self.renditions, "renditions", RawRendition::validate)?;
        unique(&renditions, "renditions", "name", |r| r.name.clone())?;
        Ok(Ladder {
            app: self.app,
            stream: self.stream,
            renditions,
            source_rendition: self.source_rendition.unwrap_or(true),
        })
    }
}

impl RawRendition {
    fn validate(self) -> Result<RenditionSpec, FieldError> {
        let name_ok = !self.name.is_empty()
            && self.name.len() <= 32
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-');
        if !name_ok {
            return Err(FieldError::new(
                "name",
                format!("{:?}: 1 to 32 ASCII letters, digits or '-'", self.name),
            ));
        }
        let even = |field: &str, value: u32| {
            let value = in_range(field, value, 16..=7680)?;
            if value % 2 == 1 {
                return Err(FieldError::new(field, "must be even (4:2:0 video)"));
            }
            Ok(value)
        };
        let one_of = |field: &str, value: Option<String>, allowed: &[&str], default: &str| {
            let value = value.unwrap_or_else(|| default.to_owned());
            if allowed.contains(&value.as_str()) {
                Ok(value)
            } else {
                let message = format!("{value:?}: expected one of {}", allowed.join(", "));
                Err(FieldError::new(field, message))
            }
        };
        Ok(RenditionSpec {
            width: even("width", self.width)?,
            height: even("height", self.height)?,
            video_bitrate_kbps: in_range("video_bitrate", self.video_bitrate, 16..=100_000)?,
            max_fps: self
                .max_fps
                .map(|fps| in_range("max_fps", fps, 1..=120))
                .transpose()?,
            profile: one_of("profile", self.profile, &PROFILES, "main")?,
            preset: one_of("preset", self.preset, &PRESETS, "veryfast")?,
            audio: audio(self.audio)?,
            name: self.name,
        })
    }
}

/// `"passthrough"` or `{"bitrate": kbps, "channels": n}`.
fn audio(value: Option<Value>) -> Result<RenditionAudio, FieldError> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Encode {
        bitrate: u32,
        channels: u8,
    }
    match value {
        None => Ok(RenditionAudio::Passthrough),
        Some(Value::String(s)) if s == "passthrough" => Ok(RenditionAudio::Passthrough),
        Some(object @ Value::Object(_)) => {
            let encode: Encode = serde_json::from_value(object).map_err(|e| {
                FieldError::new(
                    "audio",
                    format!("{e}; expected {{\"bitrate\", \"channels\"}}"),
                )
            })?;
            Ok(RenditionAudio::Encode {
                bitrate_kbps: in_range("audio.bitrate", encode.bitrate, 8..=512)?,
                channels: in_range("audio.channels", u32::from(encode.channels), 1..=2)? as u8,
            })
        }
        Some(other) => Err(FieldError::new(
            "audio",
            format!(
                "{} is not \"passthrough\" or {{\"bitrate\", \"channels\"}}",
                super::fields::kind(&other)
            ),
        )),
    }
}
