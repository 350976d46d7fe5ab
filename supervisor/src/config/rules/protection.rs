//! `PlaybackProtection`: signed playback (`wmsAuthSign`) per app (`stream` empty or
//! absent) or per stream, with its keys, the protocols it guards, the pay-per-view limit
//! and the clock skew it tolerates.

use super::super::error::FieldError;
use super::fields::{check_media_name, each, in_range, unique};
use serde::Deserialize;
use strom_ipc::rules::{PlaybackProtection, ProtectedProtocol};

/// Keys per entry at most (rotation needs two or three).
const MAX_KEYS: usize = 16;
const DEFAULT_SKEW_SECS: u32 = 60;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawProtection {
    app: String,
    #[serde(default)]
    stream: String,
    keys: Vec<String>,
    /// Absent: every protocol.
    protocols: Option<Vec<String>>,
    ppv_max_sessions: Option<u32>,
    skew_secs: Option<u32>,
}

/// Validates `PlaybackProtection`: at most one entry per app and per stream.
pub(super) fn validate_all(
    list: Vec<RawProtection>,
) -> Result<Vec<PlaybackProtection>, FieldError> {
    let entries = each(list, "PlaybackProtection", RawProtection::validate)?;
    unique(&entries, "PlaybackProtection", "stream", |p| {
        format!("{}/{}", p.app, p.stream)
    })?;
    Ok(entries)
}

impl RawProtection {
    fn validate(self) -> Result<PlaybackProtection, FieldError> {
        check_media_name("app", &self.app)?;
        if !self.stream.is_empty() {
            check_media_name("stream", &self.stream)?;
        }
        if self.keys.is_empty() || self.keys.len() > MAX_KEYS {
            let message = format!("expected 1 to {MAX_KEYS} keys, got {}", self.keys.len());
            return Err(FieldError::new("keys", message));
        }
        if let Some(i) = self.keys.iter().position(|k| k.is_empty() || k.len() > 256) {
            return Err(FieldError::new(
                format!("keys[{i}]"),
                "expected 1 to 256 characters",
            ));
        }
        let protocols = match self.protocols {
            None => ProtectedProtocol::ALL.to_vec(),
            Some(names) => names
                .iter()
                .enumerate()
                .map(|(i, name)| {
                    ProtectedProtocol::ALL
                        .into_iter()
                        .find(|p| p.as_str() == name)
                        .ok_or_else(|| {
                            FieldError::new(
                                format!("protocols[{i}]"),
                                format!(
                                    "expected HLS, MPEGTS, RTMP, SRT, ICECAST, RTSP or WEBRTC, got {name:?}"
                                ),
                            )
                        })
                })
                .collect::<Result<_, _>>()?,
        };
        if let Some(max) = self.ppv_max_sessions {
            in_range("ppv_max_sessions", max, 1..=100_000)?;
        }
        let skew_secs = self.skew_secs.unwrap_or(DEFAULT_SKEW_SECS);
        in_range("skew_secs", skew_secs, 0..=3600)?;
        Ok(PlaybackProtection {
            app: self.app,
            stream: self.stream,
            keys: self.keys,
            protocols,
            ppv_max_sessions: self.ppv_max_sessions,
            skew_secs,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use std::path::Path;
    use strom_ipc::rules::ProtectedProtocol;

    #[test]
    fn entries_parse_and_streams_beat_their_app() {
        let rules = parse(
            r#"{"PlaybackProtection": [
                {"app": "live", "keys": ["k1", "k2"], "ppv_max_sessions": 2},
                {"app": "live", "stream": "free", "keys": ["k"], "protocols": ["SRT"]}]}"#,
            Path::new("rules.conf"),
        )
        .unwrap();
        let hls = rules
            .protection_for("live", "x", ProtectedProtocol::Hls)
            .unwrap();
        assert_eq!(
            (hls.keys.len(), hls.ppv_max_sessions, hls.skew_secs),
            (2, Some(2), 60)
        );
        assert!(
            rules
                .protection_for("live", "free", ProtectedProtocol::Hls)
                .is_none()
        );
        assert!(
            rules
                .protection_for("live", "free", ProtectedProtocol::Srt)
                .is_some()
        );
        assert!(
            rules
                .protection_for("vod", "x", ProtectedProtocol::Rtmp)
                .is_none()
        );
    }

    #[test]
    fn bad_entries_name_the_field() {
        for (entry, expected) in [
            (
                r#"{"app": "live", "keys": []}"#,
                "PlaybackProtection[0].keys",
            ),
            (
                r#"{"app": "live", "keys": [""]}"#,
                "PlaybackProtection[0].keys[0]",
            ),
            (
                r#"{"app": "live", "keys": ["k"], "protocols": ["FTP"]}"#,
                "PlaybackProtection[0].protocols[0]",
            ),
            (
                r#"{"app": "live", "keys": ["k"], "ppv_max_sessions": 0}"#,
                "PlaybackProtection[0].ppv_max_sessions",
            ),
            (
                r#"{"app": "live", "keys": ["k"], "skew_secs": 7200}"#,
                "PlaybackProtection[0].skew_secs",
            ),
            (
                r#"{"app": "a/b", "keys": ["k"]}"#,
                "PlaybackProtection[0].app",
            ),
        ] {
            let text = format!(r#"{{"PlaybackProtection": [{entry}]}}"#);
            let error = parse(&text, Path::new("rules.conf"))
                .unwrap_err()
                .to_string();
            assert!(error.contains(expected), "{entry}: {error}");
        }
    }
}
