//! Live transcoding (`Transcoding`): the ABR ladders the transcoder worker makes from
//! published streams, per app or per stream, and the bound on concurrent transcodes.
//! A rendition of `app/stream` is published as `app/<stream>_<name>`.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TranscodingSettings {
    /// Transcodes running at once at most; a source past it is refused with a log line.
    pub max_concurrent: u32,
    pub ladders: Vec<Ladder>,
}

impl Default for TranscodingSettings {
    fn default() -> Self {
        Self {
            max_concurrent: 4,
            ladders: Vec::new(),
        }
    }
}

/// The renditions made of one app's streams (`stream` empty) or of one stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ladder {
    pub app: String,
    pub stream: String,
    pub renditions: Vec<RenditionSpec>,
}

/// One encoded rendition (H.264 with libx264).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenditionSpec {
    /// Appended to the source's stream name: `<stream>_<name>`.
    pub name: String,
    pub width: u32,
    pub height: u32,
    /// kbit/s.
    pub video_bitrate_kbps: u32,
    /// Frames per second at most; the source's rate when it is lower or unset.
    pub max_fps: Option<u32>,
    /// H.264 profile: `baseline`, `main` or `high`.
    pub profile: String,
    /// x264 preset: `ultrafast` .. `veryslow`.
    pub preset: String,
    pub audio: RenditionAudio,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RenditionAudio {
    /// The source's audio as it is.
    Passthrough,
    /// AAC at `bitrate_kbps` with `channels`.
    Encode { bitrate_kbps: u32, channels: u8 },
}

impl TranscodingSettings {
    /// The ladder of `app/stream`: its own entry, else its app's.
    pub fn ladder_for(&self, app: &str, stream: &str) -> Option<&Ladder> {
        let of_app = self.ladders.iter().filter(|l| l.app == app);
        of_app
            .clone()
            .find(|l| l.stream == stream)
            .or_else(|| of_app.clone().find(|l| l.stream.is_empty()))
    }
}

/// The stream name a rendition of `stream` is published as.
pub fn rendition_stream(stream: &str, rendition: &str) -> String {
    format!("{stream}_{rendition}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ladder(app: &str, stream: &str, name: &str) -> Ladder {
        Ladder {
            app: app.into(),
            stream: stream.into(),
            renditions: vec![RenditionSpec {
                name: name.into(),
                width: 640,
                height: 360,
                video_bitrate_kbps: 800,
                max_fps: None,
                profile: "main".into(),
                preset: "veryfast".into(),
                audio: RenditionAudio::Passthrough,
            }],
        }
    }

    #[test]
    fn a_stream_ladder_beats_its_apps() {
        let settings = TranscodingSettings {
            max_concurrent: 2,
            ladders: vec![ladder("live", "", "app"), ladder("live", "main", "own")],
        };
        let name = |stream| {
            settings
                .ladder_for("live", stream)
                .map(|l| &l.renditions[0].name[..])
        };
        assert_eq!(name("main"), Some("own"));
        assert_eq!(name("other"), Some("app"));
        assert_eq!(settings.ladder_for("vod", "main"), None);
        assert_eq!(rendition_stream("main", "360p"), "main_360p");
    }
}
