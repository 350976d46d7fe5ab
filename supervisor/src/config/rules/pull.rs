//! `RtmpPullSources`: streams the rtmp worker pulls from other servers.

use super::super::error::FieldError;
use super::fields::{check_media_name, each, in_range, unique};
use serde::Deserialize;
use std::ops::RangeInclusive;
use strom_ipc::rules::{CameraSettings, PullMode, PullSource};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPullSource {
    app: String,
    stream: String,
    url: String,
    mode: Option<String>,
    idle_grace_secs: Option<u32>,
}

const IDLE_GRACE_SECS: RangeInclusive<u32> = 0..=86_400;
const DEFAULT_IDLE_GRACE_SECS: u32 = 30;

/// Validates `RtmpPullSources`: one source per stream, and none that is already the
/// stream of an MPEG-TS input.
pub(super) fn validate_all(
    list: Vec<RawPullSource>,
    cameras: &[CameraSettings],
) -> Result<Vec<PullSource>, FieldError> {
    let pull_sources = each(list, "RtmpPullSources", RawPullSource::validate)?;
    unique(&pull_sources, "RtmpPullSources", "stream", |p| {
        format!("{}/{}", p.app, p.stream)
    })?;
    // Two producers of one stream: the second would be refused for ever.
    if let Some((i, source)) = pull_sources.iter().enumerate().find(|(_, p)| {
        cameras
            .iter()
            .any(|c| c.app == p.app && c.stream == p.stream)
    }) {
        let message = format!(
            "\"{}/{}\" is already the stream of an MPEG-TS input (Cameras)",
            source.app, source.stream
        );
        return Err(FieldError::new(
            format!("RtmpPullSources[{i}].stream"),
            message,
        ));
    }
    Ok(pull_sources)
}

impl RawPullSource {
    fn validate(self) -> Result<PullSource, FieldError> {
        check_media_name("app", &self.app)?;
        check_media_name("stream", &self.stream)?;
        check_rtmp_url("url", &self.url)?;
        let mode = match self.mode.as_deref() {
            None | Some("always") => PullMode::Always,
            Some("on_demand") => PullMode::OnDemand,
            Some(other) => {
                let message = format!("expected \"always\" or \"on_demand\", got {other:?}");
                return Err(FieldError::new("mode", message));
            }
        };
        let grace = self.idle_grace_secs.unwrap_or(DEFAULT_IDLE_GRACE_SECS);
        Ok(PullSource {
            app: self.app,
            stream: self.stream,
            url: self.url,
            mode,
            idle_grace_secs: in_range("idle_grace_secs", grace, IDLE_GRACE_SECS)?,
        })
    }
}

/// `rtmp://host[:port]/app/stream` (or `rtmps://`): a host, an app and a stream name.
pub(super) fn check_rtmp_url(field: &str, url: &str) -> Result<(), FieldError> {
    let bad = |why: &str| {
        let message = format!("expected rtmp://host[:port]/app/stream, got {url:?}: {why}");
        Err(FieldError::new(field, message))
    };
    let Some(rest) = url
        .strip_prefix("rtmp://")
        .or_else(|| url.strip_prefix("rtmps://"))
    else {
        return bad("the scheme must be rtmp or rtmps");
    };
    if rest.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return bad("no whitespace allowed");
    }
    let Some((authority, path)) = rest.split_once('/') else {
        return bad("no app and stream");
    };
    let (host, port) = match authority.strip_prefix('[') {
        // `[v6]` or `[v6]:port`
        Some(bracketed) => match bracketed.split_once(']') {
            Some((host, "")) => (host, None),
            Some((host, port)) => (host, Some(port.strip_prefix(':').unwrap_or(port))),
            None => return bad("unclosed '['"),
        },
        None => match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        },
    };
    if host.is_empty() {
        return bad("no host");
    }
    if let Some(port) = port
        && !matches!(port.parse::<u16>(), Ok(p) if p != 0)
    {
        return bad("bad port");
    }
    match path.split_once('/') {
        Some((app, stream)) if !app.is_empty() && !stream.is_empty() => Ok(()),
        _ => bad("no app and stream"),
    }
}
