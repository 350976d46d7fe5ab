//! `AdInsertion`: which apps or streams take SCTE-35 cues from the API (`time_sync`
//! `scte35`, spec §4 #19-20) and how HLS playlists show breaks (`hls_tags`).

use super::super::error::FieldError;
use super::fields::{check_media_name, each, unique};
use serde::Deserialize;
use strom_ipc::rules::{AdInsertionSettings, HlsCueTags, TimeSync};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAdInsertion {
    app: String,
    /// Empty or absent: every stream of the app.
    #[serde(default)]
    stream: String,
    time_sync: String,
    hls_tags: Option<String>,
}

/// Validates `AdInsertion`: at most one entry per app and per stream.
pub(super) fn validate_all(
    list: Vec<RawAdInsertion>,
) -> Result<Vec<AdInsertionSettings>, FieldError> {
    let entries = each(list, "AdInsertion", RawAdInsertion::validate)?;
    unique(&entries, "AdInsertion", "stream", |a| {
        format!("{}/{}", a.app, a.stream)
    })?;
    Ok(entries)
}

impl RawAdInsertion {
    fn validate(self) -> Result<AdInsertionSettings, FieldError> {
        check_media_name("app", &self.app)?;
        if !self.stream.is_empty() {
            check_media_name("stream", &self.stream)?;
        }
        let time_sync = match self.time_sync.as_str() {
            "scte35" => TimeSync::Scte35,
            "none" => TimeSync::None,
            other => {
                let message = format!("expected \"scte35\" or \"none\", got {other:?}");
                return Err(FieldError::new("time_sync", message));
            }
        };
        let hls_tags = match self.hls_tags.as_deref() {
            None | Some("daterange") => HlsCueTags::DateRange,
            Some("cue") => HlsCueTags::Cue,
            Some("splicepoint") => HlsCueTags::SplicePoint,
            Some(other) => {
                let message =
                    format!("expected \"daterange\", \"cue\" or \"splicepoint\", got {other:?}");
                return Err(FieldError::new("hls_tags", message));
            }
        };
        Ok(AdInsertionSettings {
            app: self.app,
            stream: self.stream,
            time_sync,
            hls_tags,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use std::path::Path;
    use strom_ipc::rules::{HlsCueTags, TimeSync};

    #[test]
    fn entries_parse_and_streams_beat_their_app() {
        let rules = parse(
            r#"{"AdInsertion": [
                {"app": "live", "time_sync": "scte35"},
                {"app": "live", "stream": "news", "time_sync": "scte35", "hls_tags": "cue"},
                {"app": "live", "stream": "quiet", "time_sync": "none"}]}"#,
            Path::new("rules.conf"),
        )
        .unwrap();
        assert!(rules.scte35_enabled("live", "any"));
        assert!(!rules.scte35_enabled("live", "quiet"));
        assert!(!rules.scte35_enabled("other", "any"));
        let news = rules.ad_insertion_for("live", "news").unwrap();
        assert_eq!(
            (news.time_sync, news.hls_tags),
            (TimeSync::Scte35, HlsCueTags::Cue)
        );
        assert_eq!(
            rules.ad_insertion_for("live", "x").unwrap().hls_tags,
            HlsCueTags::DateRange
        );
    }

    #[test]
    fn bad_entries_name_the_field() {
        for (text, expected) in [
            (
                r#"[{"app": "live", "time_sync": "clock"}]"#,
                "AdInsertion[0].time_sync",
            ),
            (
                r#"[{"app": "live", "time_sync": "scte35", "hls_tags": "x"}]"#,
                "AdInsertion[0].hls_tags",
            ),
            (
                r#"[{"app": "../x", "time_sync": "scte35"}]"#,
                "AdInsertion[0].app",
            ),
            (
                r#"[{"app": "a", "time_sync": "scte35"}, {"app": "a", "time_sync": "none"}]"#,
                "AdInsertion[1].stream",
            ),
        ] {
            let text = format!(r#"{{"AdInsertion": {text}}}"#);
            let error = parse(&text, Path::new("rules.conf"))
                .unwrap_err()
                .to_string();
            assert!(error.contains(expected), "{text}: {error}");
        }
    }
}
