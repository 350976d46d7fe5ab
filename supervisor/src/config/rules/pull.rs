//! `RtmpPullSources`: streams pulled from other servers, over RTMP by the rtmp worker and
//! over RTSP (IP cameras) by the rtsp worker.

use super::super::error::FieldError;
use super::fields::{check_media_name, each, in_range, unique};
use serde::Deserialize;
use std::ops::RangeInclusive;
use strom_ipc::rules::{CameraSettings, PullMode, PullSource, RtspTransport};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPullSource {
    app: String,
    stream: String,
    url: String,
    mode: Option<String>,
    idle_grace_secs: Option<u32>,
    /// RTSP sources: `tcp` (default) or `udp`.
    transport: Option<String>,
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
        let rtsp = self.url.starts_with("rtsp://") || self.url.starts_with("rtsps://");
        if rtsp {
            check_rtsp_url("url", &self.url)?;
        } else {
            check_rtmp_url("url", &self.url)?;
        }
        let rtsps = self.url.starts_with("rtsps://");
        let rtsp_transport = match (self.transport.as_deref(), rtsp) {
            (None | Some("tcp"), _) => RtspTransport::Tcp,
            (Some("udp"), true) if rtsps => {
                return Err(FieldError::new(
                    "transport",
                    "rtsps:// sources take only \"tcp\" (RTP interleaved in the TLS connection; UDP would travel unencrypted and SRTP is not supported)",
                ));
            }
            (Some("udp"), true) => RtspTransport::Udp,
            (Some("udp"), false) => {
                return Err(FieldError::new(
                    "transport",
                    "only RTSP sources take a transport",
                ));
            }
            (Some(other), _) => {
                let message = format!("expected \"tcp\" or \"udp\", got {other:?}");
                return Err(FieldError::new("transport", message));
            }
        };
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
            rtsp_transport,
        })
    }
}

/// `rtsp://[user:pass@]host[:port]/path` or `rtsps://...`: a host and no whitespace.
fn check_rtsp_url(field: &str, url: &str) -> Result<(), FieldError> {
    let bad = |why: &str| {
        let message =
            format!("expected rtsp[s]://[user:pass@]host[:port]/path, got {url:?}: {why}");
        Err(FieldError::new(field, message))
    };
    let Some(rest) = url
        .strip_prefix("rtsp://")
        .or_else(|| url.strip_prefix("rtsps://"))
    else {
        return bad("the scheme must be rtsp or rtsps");
    };
    if url.len() > 2048 {
        return bad("longer than 2048 bytes");
    }
    if rest.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return bad("no whitespace allowed");
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    check_authority(host_port).or_else(|why| bad(&why))
}

/// `host[:port]` or `[v6][:port]` of a URL: a host, and a port, when one is given,
/// which must be a number 1-65535 (`99999` or `5x4` would otherwise reach the worker,
/// which could only fail at connect time, over and over).
fn check_authority(authority: &str) -> Result<(), String> {
    let (host, port) = match authority.strip_prefix('[') {
        // `[v6]` or `[v6]:port`
        Some(bracketed) => match bracketed.split_once(']') {
            Some((host, "")) => (host, None),
            Some((host, rest)) => match rest.strip_prefix(':') {
                Some(port) => (host, Some(port)),
                None => return Err(format!("text after ']': {rest:?}")),
            },
            None => return Err("unclosed '['".to_owned()),
        },
        None => match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        },
    };
    if host.is_empty() {
        return Err("no host".to_owned());
    }
    match port {
        Some(digits)
            if !matches!(digits.parse::<u16>(), Ok(port) if port != 0)
                || !digits.bytes().all(|b| b.is_ascii_digit()) =>
        {
            Err(format!("bad port {digits:?} (expected 1-65535)"))
        }
        _ => Ok(()),
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
    if let Err(why) = check_authority(authority) {
        return bad(&why);
    }
    match path.split_once('/') {
        Some((app, stream)) if !app.is_empty() && !stream.is_empty() => Ok(()),
        _ => bad("no app and stream"),
    }
}

#[cfg(test)]
mod rtsp_tests {
    use strom_ipc::rules::RtspTransport;

    fn sources(json: &str) -> Result<Vec<strom_ipc::rules::PullSource>, String> {
        let text = format!(r#"{{"RtmpPullSources": [{json}]}}"#);
        super::super::parse(&text, std::path::Path::new("rules.conf"))
            .map(|rules| rules.pull_sources)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn rtsp_sources_take_a_transport_and_credentials() {
        let parsed = sources(
            r#"{"app": "live", "stream": "cam", "url": "rtsp://u:p@192.0.2.1/Streaming/101", "transport": "udp"}"#,
        )
        .unwrap();
        assert!(parsed[0].is_rtsp());
        assert_eq!(parsed[0].rtsp_transport, RtspTransport::Udp);
        let parsed =
            sources(r#"{"app": "live", "stream": "cam", "url": "rtsp://cam:8554/x"}"#).unwrap();
        assert_eq!(parsed[0].rtsp_transport, RtspTransport::Tcp);
        let parsed =
            sources(r#"{"app": "live", "stream": "cam", "url": "rtsps://u:p@cam:322/x"}"#).unwrap();
        assert!(parsed[0].is_rtsp(), "rtsps is pulled by the rtsp worker");
        assert_eq!(parsed[0].rtsp_transport, RtspTransport::Tcp);
    }

    #[test]
    fn bad_ports_are_named_and_passwords_not_quoted() {
        let error =
            sources(r#"{"app": "live", "stream": "c", "url": "rtsp://admin:hunter2@cam:99999/x"}"#)
                .unwrap_err();
        assert!(error.contains("RtmpPullSources[0].url"), "{error}");
        assert!(error.contains("bad port \"99999\""), "{error}");
        assert!(!error.contains("hunter2"), "{error}");
        assert!(error.contains("rtsp://admin:***@cam:99999/x"), "{error}");
        let parsed =
            sources(r#"{"app": "live", "stream": "c", "url": "rtsp://[2001:db8::1]:554/x"}"#)
                .unwrap();
        assert!(parsed[0].is_rtsp());
    }

    #[test]
    fn rtsps_sources_refuse_udp() {
        let error = sources(
            r#"{"app": "live", "stream": "c", "url": "rtsps://cam/x", "transport": "udp"}"#,
        )
        .unwrap_err();
        assert!(error.contains("RtmpPullSources[0].transport"), "{error}");
        assert!(error.contains("rtsps://"), "{error}");
    }

    #[test]
    fn bad_rtsp_sources_name_their_field() {
        for (json, field) in [
            (
                r#"{"app": "live", "stream": "c", "url": "rtsps:///x"}"#,
                "url",
            ),
            (
                r#"{"app": "live", "stream": "c", "url": "rtsp:///x"}"#,
                "url",
            ),
            (
                r#"{"app": "live", "stream": "c", "url": "rtsp://cam/a b"}"#,
                "url",
            ),
            (
                r#"{"app": "live", "stream": "c", "url": "rtsp://u:p@cam:99999/x"}"#,
                "url",
            ),
            (
                r#"{"app": "live", "stream": "c", "url": "rtsp://cam:5x4/x"}"#,
                "url",
            ),
            (
                r#"{"app": "live", "stream": "c", "url": "rtsp://[::1]x/x"}"#,
                "url",
            ),
            (
                r#"{"app": "live", "stream": "c", "url": "rtmp://h:+80/a/b"}"#,
                "url",
            ),
            (
                r#"{"app": "live", "stream": "c", "url": "rtsp://cam/x", "transport": "sctp"}"#,
                "transport",
            ),
            (
                r#"{"app": "live", "stream": "c", "url": "rtmp://h/a/b", "transport": "udp"}"#,
                "transport",
            ),
        ] {
            let error = sources(json).unwrap_err();
            assert!(
                error.contains(&format!("RtmpPullSources[0].{field}")),
                "{json}: {error}"
            );
        }
    }
}
