//! `GET /manage/stream_urls/{app}/{stream}` (strom's own addition, used by the web
//! console): the publish and play URLs of one stream for every protocol the rules in
//! force enable, so that nobody has to work ports and URL shapes out of `rules.conf`.
//!
//! The host in the URLs is the one the caller reached the management API by (its `Host`
//! header, or the request's authority over HTTP/2): strom cannot know which of its names or addresses a client can reach, and
//! the caller just showed one that works. Secrets (SRT passphrases, publishing
//! logins) are never put into URLs; an entry says when one is needed, and `notes` says
//! what applies to the stream as a whole (signed playback).
//!
//! An app or stream name outside the name rule (`strom_ipc::names`) is answered 400:
//! no URL could ever carry it.

use crate::api::ApiState;
use crate::api::error::ApiError;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::uri::Authority;
use axum::http::{HeaderMap, Uri};
use serde::Serialize;
use strom_ipc::rules::{DeliveryOutput, ProtectedProtocol, RtmpInterface, Rules};

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct StreamUrls {
    app: String,
    stream: String,
    /// Where an encoder sends the stream.
    publish: Vec<StreamUrl>,
    /// Where a player reads it.
    play: Vec<StreamUrl>,
    /// What a client needs beyond the URLs: protocols whose players must sign their
    /// URL (`wmsAuthSign`, `PlaybackProtection` in rules.conf). Empty when nothing.
    notes: Vec<String>,
}

#[derive(Debug, PartialEq, Serialize, utoipa::ToSchema)]
pub struct StreamUrl {
    /// `RTMP`, `SRT`, `RTSP`, `RTSPS`, `HLS`, `HLS fMP4`, `LL-HLS`, `DASH`, `DVR HLS`
    /// (the whole recording), `WHIP` and `WHEP` (WebRTC).
    protocol: &'static str,
    url: String,
    /// What else the client needs (a passphrase, a login), when something does.
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<&'static str>,
}

#[utoipa::path(get, path = "/manage/stream_urls/{app}/{stream}", params(("app" = String, Path), ("stream" = String, Path)), responses((status = 200, body = StreamUrls), (status = 400, body = crate::api::shapes::ErrorBody)))]
pub async fn get(
    State(state): State<ApiState>,
    Path((app, stream)): Path<(String, String)>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Json<StreamUrls>, ApiError> {
    strom_ipc::names::check_pair(&app, &stream)
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    // HTTP/2 requests name the host in the URI's authority instead of a Host header.
    let authority = headers
        .get(axum::http::header::HOST)
        .and_then(|value| value.to_str().ok())
        .or_else(|| uri.authority().map(Authority::as_str));
    let host = authority.map_or("127.0.0.1", host_of);
    let instance = &state.supervisor.instance;
    let delivery = Delivery {
        http_port: instance.port,
        https_port: instance.ssl_port,
    };
    let rules = state.supervisor.rules();
    let (publish, play) = urls(&rules, &delivery, host, &app, &stream);
    let notes = notes(&rules, &app, &stream);
    Ok(Json(StreamUrls {
        app,
        stream,
        publish,
        play,
        notes,
    }))
}

/// The stream-wide notes: which players must sign their URLs.
fn notes(rules: &Rules, app: &str, stream: &str) -> Vec<String> {
    let signed: Vec<&str> = ProtectedProtocol::ALL
        .into_iter()
        .filter(|protocol| rules.protection_for(app, stream, *protocol).is_some())
        .map(ProtectedProtocol::as_str)
        .collect();
    if signed.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "playback is protected for {} (PlaybackProtection): players add a wmsAuthSign signature to the URL (HLS and DASH count as HLS)",
        signed.join(", ")
    )]
}

/// The HTTP delivery ports (strom.conf `port` and `ssl_port`).
struct Delivery {
    http_port: u16,
    https_port: Option<u16>,
}

/// `Host` without its port (`[::1]:8080` -> `[::1]`, `example.com:8080` -> `example.com`).
fn host_of(header: &str) -> &str {
    match header.rfind(':') {
        Some(colon) if !header[colon..].contains(']') => &header[..colon],
        _ => header,
    }
}

/// Publish and play URLs of `app/stream` on `host`.
fn urls(
    rules: &Rules,
    delivery: &Delivery,
    host: &str,
    app: &str,
    stream: &str,
) -> (Vec<StreamUrl>, Vec<StreamUrl>) {
    let path = format!("{}/{}", segment(app), segment(stream));
    let login = rules
        .access
        .publisher_login(app)
        .map(|_| "publishing needs the login of rules.conf");
    let mut publish = Vec::new();
    let mut play = Vec::new();
    for port in ports(&rules.rtmp.interfaces) {
        let url = format!("rtmp://{host}:{port}/{path}");
        publish.push(entry("RTMP", url.clone(), login));
        play.push(entry("RTMP", url, None));
    }
    let srt = |port: u16, mode: &str, note: Option<&'static str>| {
        let id = segment(&format!("#!::r={app}/{stream},m={mode}"));
        entry("SRT", format!("srt://{host}:{port}?streamid={id}"), note)
    };
    let passphrase_note = |passphrase: Option<&str>| {
        passphrase.map(|_| "add the listener's passphrase (&passphrase=...)")
    };
    for camera in rules.cameras.iter().filter(|c| {
        c.protocol.eq_ignore_ascii_case("srt") && c.receive_mode.eq_ignore_ascii_case("listen")
    }) {
        // A listener's passphrase stands for the app's login; without one, callers
        // give the login in the streamid.
        let note = match camera.parameter("passphrase") {
            Some(passphrase) => passphrase_note(Some(passphrase)),
            None => login.map(|_| {
                "publishing needs the login of rules.conf: add ,u=<login>,s=<password> to the streamid"
            }),
        };
        publish.push(srt(camera.port, "publish", note));
    }
    for output in rules.ts_outputs.iter().filter(|o| {
        o.protocol.eq_ignore_ascii_case("srt")
            && o.mode.eq_ignore_ascii_case("listen")
            && (o.app.is_empty() || (o.app == app && o.stream == stream))
    }) {
        let note = passphrase_note(output.parameter("passphrase"));
        play.push(srt(output.port, "request", note));
    }
    for (scheme, protocol, interfaces) in [
        ("rtsp", "RTSP", &rules.rtsp.interfaces),
        ("rtsps", "RTSPS", &rules.rtsp.tls_interfaces),
    ] {
        for port in ports(interfaces) {
            let url = format!("{scheme}://{host}:{port}/{path}");
            publish.push(entry(protocol, url.clone(), login));
            play.push(entry(protocol, url, None));
        }
    }
    let outputs = rules.delivery.for_stream(app, stream);
    let http = [
        (DeliveryOutput::Hls, "HLS", "playlist.m3u8"),
        (DeliveryOutput::Hls, "HLS fMP4", "playlist_fmp4.m3u8"),
        (DeliveryOutput::LlHls, "LL-HLS", "playlist_fmp4.m3u8"),
        (DeliveryOutput::Dash, "DASH", "manifest.mpd"),
        (DeliveryOutput::Dvr, "DVR HLS", "playlist_dvr.m3u8"),
    ];
    let bases = std::iter::once(format!("http://{host}:{}", delivery.http_port)).chain(
        delivery
            .https_port
            .map(|port| format!("https://{host}:{port}")),
    );
    let webrtc = !rules.webrtc.interfaces.is_empty();
    let bearer = login.map(|_| "send the publishing login as a Bearer token (login:password)");
    for base in bases {
        for (output, protocol, file) in http {
            if outputs.has(output) {
                play.push(entry(protocol, format!("{base}/{path}/{file}"), None));
            }
        }
        if webrtc {
            publish.push(entry("WHIP", format!("{base}/{path}/whip.stream"), bearer));
            play.push(entry("WHEP", format!("{base}/{path}/whep.stream"), None));
        }
    }
    (publish, play)
}

fn entry(protocol: &'static str, url: String, note: Option<&'static str>) -> StreamUrl {
    StreamUrl {
        protocol,
        url,
        note,
    }
}

/// The distinct ports of `interfaces`, in order (one URL per port: the host is the same).
fn ports(interfaces: &[RtmpInterface]) -> Vec<u16> {
    let mut ports: Vec<u16> = Vec::new();
    for interface in interfaces {
        if !ports.contains(&interface.port) {
            ports.push(interface.port);
        }
    }
    ports
}

/// `text` percent-encoded for a URL path segment or query value.
fn segment(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use strom_ipc::rules::{CameraSettings, StreamDelivery};

    fn urls_of(list: &[StreamUrl]) -> Vec<(&str, &str)> {
        list.iter().map(|u| (u.protocol, u.url.as_str())).collect()
    }

    #[test]
    fn host_loses_its_port_but_not_ipv6_brackets() {
        assert_eq!(host_of("example.com:8080"), "example.com");
        assert_eq!(host_of("example.com"), "example.com");
        assert_eq!(host_of("[::1]:8080"), "[::1]");
        assert_eq!(host_of("[::1]"), "[::1]");
    }

    #[test]
    fn every_enabled_protocol_gets_its_urls() {
        let mut rules = Rules::default();
        rules.rtmp.interfaces = vec![
            RtmpInterface {
                ip: "*".into(),
                port: 1935,
            },
            RtmpInterface {
                ip: "::".into(),
                port: 1935,
            },
        ];
        rules.cameras.push(CameraSettings {
            id: "cams".into(),
            ip: "0.0.0.0".into(),
            port: 9000,
            protocol: "srt".into(),
            receive_mode: "listen".into(),
            parameters: vec![("passphrase".into(), "0123456789abcdef".into())],
            app: "live".into(),
            stream: "cam".into(),
        });
        rules.rtsp.interfaces = vec![RtmpInterface {
            ip: "*".into(),
            port: 8554,
        }];
        rules.webrtc.interfaces = vec![RtmpInterface {
            ip: "*".into(),
            port: 8189,
        }];
        rules.delivery.streams.push(StreamDelivery {
            app: "live".into(),
            stream: "b c".into(),
            outputs: Some(vec![
                DeliveryOutput::Hls,
                DeliveryOutput::Dash,
                DeliveryOutput::Dvr,
            ]),
            segment_duration_secs: None,
            dash_segment_addressing: None,
        });
        let delivery = Delivery {
            http_port: 8081,
            https_port: None,
        };
        let (publish, play) = urls(&rules, &delivery, "media.example", "live", "b c");
        assert_eq!(
            urls_of(&publish),
            [
                ("RTMP", "rtmp://media.example:1935/live/b%20c"),
                (
                    "SRT",
                    "srt://media.example:9000?streamid=%23%21%3A%3Ar%3Dlive%2Fb%20c%2Cm%3Dpublish"
                ),
                ("RTSP", "rtsp://media.example:8554/live/b%20c"),
                ("WHIP", "http://media.example:8081/live/b%20c/whip.stream"),
            ]
        );
        assert!(publish[1].note.is_some(), "the passphrase is not given out");
        assert!(!publish[1].url.contains("0123456789abcdef"));
        assert_eq!(
            urls_of(&play),
            [
                ("RTMP", "rtmp://media.example:1935/live/b%20c"),
                ("RTSP", "rtsp://media.example:8554/live/b%20c"),
                ("HLS", "http://media.example:8081/live/b%20c/playlist.m3u8"),
                (
                    "HLS fMP4",
                    "http://media.example:8081/live/b%20c/playlist_fmp4.m3u8"
                ),
                ("DASH", "http://media.example:8081/live/b%20c/manifest.mpd"),
                (
                    "DVR HLS",
                    "http://media.example:8081/live/b%20c/playlist_dvr.m3u8"
                ),
                ("WHEP", "http://media.example:8081/live/b%20c/whep.stream"),
            ]
        );
    }

    #[test]
    fn protected_playback_and_srt_logins_are_noted() {
        let mut rules = Rules::default();
        assert!(notes(&rules, "live", "cam").is_empty());
        rules.protection.push(strom_ipc::rules::PlaybackProtection {
            app: "live".into(),
            stream: String::new(),
            keys: vec!["k".into()],
            protocols: vec![ProtectedProtocol::Hls, ProtectedProtocol::Rtmp],
            ppv_max_sessions: None,
            skew_secs: 60,
        });
        let noted = notes(&rules, "live", "cam");
        assert_eq!(noted.len(), 1);
        assert!(
            noted[0].contains("HLS, RTMP") && noted[0].contains("wmsAuthSign"),
            "{noted:?}"
        );
        assert!(notes(&rules, "other", "cam").is_empty());

        // An SRT listener without a passphrase, for an app with a publisher login.
        rules.access.login = "enc".into();
        rules.access.password = "secret".into();
        rules.cameras.push(CameraSettings {
            id: "srt".into(),
            ip: "0.0.0.0".into(),
            port: 9000,
            protocol: "srt".into(),
            receive_mode: "listen".into(),
            parameters: Vec::new(),
            app: "live".into(),
            stream: "cam".into(),
        });
        let delivery = Delivery {
            http_port: 80,
            https_port: None,
        };
        let (publish, _) = urls(&rules, &delivery, "h", "live", "cam");
        let srt = publish.iter().find(|u| u.protocol == "SRT").unwrap();
        assert!(
            srt.note
                .is_some_and(|note| note.contains("u=<login>,s=<password>")),
            "{srt:?}"
        );
        assert!(!srt.url.contains("secret"));
    }

    #[test]
    fn https_delivery_adds_https_playlists() {
        let delivery = Delivery {
            http_port: 80,
            https_port: Some(443),
        };
        let (_, play) = urls(&Rules::default(), &delivery, "h", "a", "s");
        let hls: Vec<_> = play
            .iter()
            .filter(|u| u.protocol == "HLS")
            .map(|u| u.url.as_str())
            .collect();
        assert_eq!(
            hls,
            [
                "http://h:80/a/s/playlist.m3u8",
                "https://h:443/a/s/playlist.m3u8"
            ]
        );
    }
}
