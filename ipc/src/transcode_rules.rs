//! Live transcoding (`Transcoding`): the ABR ladders the transcoder worker makes from
//! published streams, per app or per stream, and the bound on concurrent transcodes.
//! A rendition of `app/stream` is published as `app/<stream>_<name>`.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TranscodingSettings {
    /// Transcodes running at once at most; a source past it is refused with a log line.
    pub max_concurrent: u32,
    /// The CPU (percent of one core, summed over the running transcodes' ffmpeg) past
    /// which a new source is refused; `None`: 75% of the machine's cores.
    pub cpu_budget_percent: Option<u32>,
    pub ladders: Vec<Ladder>,
}

impl Default for TranscodingSettings {
    fn default() -> Self {
        Self {
            max_concurrent: 4,
            cpu_budget_percent: None,
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
    /// The source itself is the top rendition of the ABR group (passed through, not
    /// encoded again).
    pub source_rendition: bool,
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
        crate::scoped::entry_for(&self.ladders, app, stream, |l| (&l.app, &l.stream))
    }
}

/// The stream name a rendition of `stream` is published as.
pub fn rendition_stream(stream: &str, rendition: &str) -> String {
    format!("{stream}_{rendition}")
}

/// What the ABR group of a transcoded `stream` is called: its master playlist and DASH
/// manifest are `app/<stream>_abr/...`.
pub const ABR_SUFFIX: &str = "_abr";

impl TranscodingSettings {
    /// The members of the ABR group `app/stream` names when `stream` is
    /// `<source>_abr` and a ladder covers the source: the source (when it is the top
    /// rendition), then each rendition in the ladder's order (stream names in `app`).
    pub fn abr_members(&self, app: &str, stream: &str) -> Option<Vec<String>> {
        let source = stream.strip_suffix(ABR_SUFFIX).filter(|s| !s.is_empty())?;
        let ladder = self.ladder_for(app, source)?;
        let renditions = ladder
            .renditions
            .iter()
            .map(|r| rendition_stream(source, &r.name));
        Some(
            ladder
                .source_rendition
                .then(|| source.to_owned())
                .into_iter()
                .chain(renditions)
                .collect(),
        )
    }
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
            source_rendition: true,
        }
    }

    #[test]
    fn a_stream_ladder_beats_its_apps() {
        let settings = TranscodingSettings {
            max_concurrent: 2,
            cpu_budget_percent: None,
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

    #[test]
    fn a_transcoded_stream_has_an_abr_group_of_its_renditions() {
        let mut settings = TranscodingSettings {
            max_concurrent: 2,
            cpu_budget_percent: None,
            ladders: vec![ladder("live", "", "360p")],
        };
        let members = settings.abr_members("live", "cam_abr").unwrap();
        assert_eq!(members, ["cam", "cam_360p"]);
        settings.ladders[0].source_rendition = false;
        assert_eq!(
            settings.abr_members("live", "cam_abr").unwrap(),
            ["cam_360p"]
        );
        assert_eq!(settings.abr_members("live", "cam"), None);
        assert_eq!(settings.abr_members("live", "_abr"), None);
        assert_eq!(settings.abr_members("other", "cam_abr"), None);
    }
}
