//! The JSON shapes of the API, exactly as deployed clients parse them.
//!
//! Names, nesting and types follow the spec, odd ones included: `bandwidth` and
//! `publish_time` of stream entries are strings of digits, and `SysInfo.scl` is a string
//! holding a decimal (a deployed exporter reads it with a strict string type).
//! Stream entries omit fields that do not apply (codecs of a missing track, the
//! resolution of an audio-only stream) rather than sending `""`.

use serde::Serialize;
use sha2::{Digest, Sha256};
use strom_ipc::rules::{RepublishRule, RtmpSettings, RuleOwner};
use strom_ipc::status::{DvrArchive, LiveStream, RepublishStatus, SessionInfo};

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[allow(non_snake_case)]
pub struct ServerStatus {
    pub Connections: u64,
    pub OutRate: u64,
    pub SysInfo: SysInfo,
    /// Monitoring templates read these at the top level (`$.RamCacheSize`).
    pub RamCacheSize: u64,
    pub FileCacheSize: u64,
    pub MaxRamCacheSize: u64,
    pub MaxFileCacheSize: u64,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[allow(non_snake_case)]
pub struct SysInfo {
    pub ap: u64,
    /// CPU load 0..1 as a decimal string, see [`format_load`].
    pub scl: String,
    pub tpms: u64,
    pub fpms: u64,
    pub tsss: u64,
    pub fsss: u64,
    pub RamCacheSize: u64,
    pub FileCacheSize: u64,
    pub MaxRamCacheSize: u64,
    pub MaxFileCacheSize: u64,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AppGroup {
    pub app: String,
    pub streams: Vec<StreamEntry>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct StreamEntry {
    pub strm: String,
    pub bandwidth: String,
    /// `None` (omitted) while no video track reports a size (audio-only streams).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolution: Option<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub vcodec: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub acodec: String,
    pub protocol: String,
    pub publish_time: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub publisher_ip: Option<String>,
    /// strom's addition to `live_streams_status`: the latest SCTE-35 markers (omitted
    /// when the stream carried none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scte35_events: Vec<Scte35EventEntry>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Scte35EventEntry {
    pub time: i64,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_id: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration: Option<f64>,
}

/// Decimals `scl` is sent with: two are finer than any load-balancing decision needs and
/// keep float noise (`0.30000000000000004`) out of the string.
const LOAD_DECIMALS: usize = 2;

/// `SysInfo.scl`: the load rounded to [`LOAD_DECIMALS`] places, trailing zeros (and a
/// bare point) trimmed: `0.42`, `0.5`, `1`, `0`. Anything not finite reads as `0`.
pub fn format_load(load: f64) -> String {
    let load = if load.is_finite() { load } else { 0.0 };
    let fixed = format!("{load:.LOAD_DECIMALS$}");
    let trimmed = fixed.trim_end_matches('0').trim_end_matches('.');
    match trimmed {
        "" | "-0" => "0".to_owned(),
        other => other.to_owned(),
    }
}

/// `<width>x<height>`, or `None` when the stream has no video size to report.
fn resolution(width: u32, height: u32) -> Option<String> {
    (width > 0 && height > 0).then(|| format!("{width}x{height}"))
}

/// Groups streams by app (apps and streams sorted by name, so output is stable).
/// `with_sources` adds `source_url`/`publisher_ip` (live_streams_status).
pub fn group_streams(mut streams: Vec<LiveStream>, with_sources: bool) -> Vec<AppGroup> {
    streams.sort_by(|a, b| (&a.app, &a.stream).cmp(&(&b.app, &b.stream)));
    let mut groups: Vec<AppGroup> = Vec::new();
    for stream in streams {
        let entry = StreamEntry {
            strm: stream.stream,
            bandwidth: stream.bandwidth_bps.to_string(),
            resolution: resolution(stream.width, stream.height),
            vcodec: stream.vcodec,
            acodec: stream.acodec,
            protocol: stream.protocol,
            publish_time: stream.publish_time.to_string(),
            source_url: stream.source_url.filter(|_| with_sources),
            publisher_ip: stream.publisher_ip.filter(|_| with_sources),
            scte35_events: if with_sources {
                stream
                    .scte35
                    .into_iter()
                    .map(|e| Scte35EventEntry {
                        time: e.time,
                        kind: e.kind,
                        event_id: e.event_id,
                        duration: e.duration_secs,
                    })
                    .collect()
            } else {
                Vec::new()
            },
        };
        match groups.last_mut() {
            Some(group) if group.app == stream.app => group.streams.push(entry),
            _ => groups.push(AppGroup {
                app: stream.app,
                streams: vec![entry],
            }),
        }
    }
    groups
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Session {
    pub id: u64,
    pub app: String,
    pub stream: String,
    #[serde(rename = "type")]
    pub protocol: String,
    pub bytes_recv: u64,
    pub bytes_sent: u64,
    pub created: i64,
    pub last_access: i64,
    pub client_ip: String,
    pub user_agent: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ppv_id: Option<String>,
    /// strom's addition: frames a player lost by falling behind (RTMP players); absent
    /// for sessions without a live queue (HLS viewers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dropped_frames: Option<u64>,
}

impl From<SessionInfo> for Session {
    fn from(s: SessionInfo) -> Self {
        Self {
            id: s.id,
            app: s.app,
            stream: s.stream,
            protocol: s.protocol,
            bytes_recv: s.bytes_recv,
            bytes_sent: s.bytes_sent,
            created: s.created,
            last_access: s.last_access,
            client_ip: s.client_ip,
            user_agent: s.user_agent,
            ppv_id: s.ppv_id,
            dropped_frames: s.dropped_frames,
        }
    }
}

/// `{"RtmpSettings":{...}}` with a `hash` that changes whenever the settings do.
pub fn rtmp_settings(settings: &RtmpSettings) -> serde_json::Value {
    use serde_json::json;
    let protocols = |list: &[strom_ipc::rules::OutputProtocol]| -> Vec<&'static str> {
        list.iter().map(|p| p.as_str()).collect()
    };
    let apps: Vec<serde_json::Value> = settings
        .apps
        .iter()
        .map(|app| {
            let mut value = json!({
                "app": app.app,
                "login": app.login,
                "password": app.password,
                "duration": app.duration.unwrap_or(settings.duration),
                "protocols": protocols(app.protocols.as_deref().unwrap_or(&settings.protocols)),
                "publish_control": app.publish_control.is_some(),
            });
            if let (Some(control), Some(object)) = (&app.publish_control, value.as_object_mut()) {
                object.insert(
                    "publish_control_handler_url".into(),
                    json!(control.handler_url.clone().unwrap_or_default()),
                );
            }
            value
        })
        .collect();
    let abr: Vec<serde_json::Value> = settings
        .abr
        .iter()
        .map(|group| {
            json!({
                "app": group.app,
                "stream": group.stream,
                "streams": group.streams.iter().map(|s| json!({"app": s.app, "stream": s.stream})).collect::<Vec<_>>(),
            })
        })
        .collect();
    let mut body = json!({
        "interfaces": settings.interfaces.iter().map(|i| json!({"ip": i.ip, "port": i.port})).collect::<Vec<_>>(),
        "login": settings.login,
        "password": settings.password,
        "duration": settings.duration,
        "protocols": protocols(&settings.protocols),
        "apps": apps,
        "abr": abr,
    });
    let digest = Sha256::digest(body.to_string().as_bytes());
    let hash = u64::from_be_bytes([
        digest[0], digest[1], digest[2], digest[3], digest[4], digest[5], digest[6], digest[7],
    ]);
    if let Some(object) = body.as_object_mut() {
        object.insert("hash".into(), json!(hash.to_string()));
    }
    json!({ "RtmpSettings": body })
}

/// API owner number: 0 for the configured side, 1 for rules made through the API.
pub fn owner_number(owner: RuleOwner) -> u8 {
    match owner {
        RuleOwner::Config => 0,
        RuleOwner::Api => 1,
    }
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Rule {
    pub id: String,
    pub src_app: String,
    pub src_stream: String,
    pub dest_addr: String,
    pub dest_port: u16,
    pub dest_app: String,
    pub dest_stream: String,
    pub dest_app_params: String,
    pub dest_stream_params: String,
    pub auth_schema: &'static str,
    pub dest_login: String,
    pub dest_password: String,
    pub keep_src_stream_params: bool,
    pub ssl: bool,
}

impl From<&RepublishRule> for Rule {
    fn from(r: &RepublishRule) -> Self {
        Self {
            id: r.id.clone(),
            src_app: r.src_app.clone(),
            src_stream: r.src_stream.clone(),
            dest_addr: r.dest_addr.clone(),
            dest_port: r.dest_port,
            dest_app: r.dest_app.clone(),
            dest_stream: r.dest_stream.clone(),
            dest_app_params: r.dest_app_params.clone(),
            dest_stream_params: r.dest_stream_params.clone(),
            auth_schema: r.auth_schema.as_str(),
            dest_login: r.dest_login.clone(),
            dest_password: r.dest_password.clone(),
            keep_src_stream_params: r.keep_src_stream_params,
            ssl: r.ssl,
        }
    }
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RepublishStat {
    pub rule_id: String,
    pub state: String,
    pub session_duration: u64,
    pub bandwidth: u64,
    pub bytes_recv: u64,
    pub bytes_sent: u64,
    pub owner: u8,
    pub retry_count: u64,
    pub src_app: String,
    pub src_stream: String,
    pub dest_addr: String,
    pub dest_port: u16,
    pub dest_app: String,
    pub dest_stream: String,
}

impl From<RepublishStatus> for RepublishStat {
    fn from(s: RepublishStatus) -> Self {
        Self {
            rule_id: s.rule_id,
            state: s.state,
            session_duration: s.session_duration_secs,
            bandwidth: s.bandwidth_bps,
            bytes_recv: s.bytes_recv,
            bytes_sent: s.bytes_sent,
            owner: owner_number(s.owner),
            retry_count: s.retry_count,
            src_app: s.src_app,
            src_stream: s.src_stream,
            dest_addr: s.dest_addr,
            dest_port: s.dest_port,
            dest_app: s.dest_app,
            dest_stream: s.dest_stream,
        }
    }
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TimelineItem {
    pub start: i64,
    pub duration: u64,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Archive {
    pub size: u64,
    pub bandwidth: u64,
    pub resolution: String,
    pub acodec: String,
    pub vcodec: String,
    pub path: String,
    pub space_available: u64,
    pub periods: u64,
    pub stream: String,
    pub duration: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Vec<TimelineItem>>,
}

impl From<DvrArchive> for Archive {
    fn from(a: DvrArchive) -> Self {
        Self {
            size: a.size,
            bandwidth: a.bandwidth,
            resolution: a.resolution,
            acodec: a.acodec,
            vcodec: a.vcodec,
            path: a.path,
            space_available: a.space_available,
            periods: a.periods,
            stream: format!("{}/{}", a.app, a.stream),
            duration: a.duration,
            timeline: a.timeline.map(|items| {
                items
                    .into_iter()
                    .map(|(start, duration)| TimelineItem { start, duration })
                    .collect()
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(app: &str, name: &str) -> LiveStream {
        LiveStream {
            app: app.into(),
            stream: name.into(),
            bandwidth_bps: 1_234_567,
            width: 1280,
            height: 720,
            vcodec: "avc1.64001f".into(),
            acodec: "mp4a.40.2".into(),
            protocol: "RTMP".into(),
            publish_time: 1_700_000_000,
            source_url: None,
            publisher_ip: Some("10.0.0.1".into()),
            scte35: Vec::new(),
        }
    }

    #[test]
    fn stream_entries_use_digit_strings_and_group_by_app() {
        let groups = group_streams(
            vec![
                stream("live", "b"),
                stream("other", "x"),
                stream("live", "a"),
            ],
            false,
        );
        let json = serde_json::to_value(&groups).unwrap();
        assert_eq!(json[0]["app"], "live");
        assert_eq!(json[0]["streams"][0]["strm"], "a");
        assert_eq!(json[0]["streams"][0]["bandwidth"], "1234567");
        assert_eq!(json[0]["streams"][0]["publish_time"], "1700000000");
        assert_eq!(json[0]["streams"][0]["resolution"], "1280x720");
        assert!(json[0]["streams"][0].get("publisher_ip").is_none());
        assert_eq!(json[1]["app"], "other");
        let with_sources =
            serde_json::to_value(group_streams(vec![stream("live", "a")], true)).unwrap();
        assert_eq!(with_sources[0]["streams"][0]["publisher_ip"], "10.0.0.1");
        assert!(with_sources[0]["streams"][0].get("source_url").is_none());
    }

    #[test]
    fn tracks_a_stream_lacks_are_omitted_not_empty() {
        let mut video_only = stream("live", "v");
        video_only.acodec = String::new();
        let mut audio_only = stream("live", "a");
        audio_only.vcodec = String::new();
        audio_only.width = 0;
        audio_only.height = 0;
        let json = serde_json::to_value(group_streams(vec![video_only, audio_only], true)).unwrap();
        let audio = &json[0]["streams"][0];
        assert_eq!(audio["strm"], "a");
        assert_eq!(audio["acodec"], "mp4a.40.2");
        assert!(audio.get("vcodec").is_none(), "{audio}");
        assert!(audio.get("resolution").is_none(), "{audio}");
        let video = &json[0]["streams"][1];
        assert_eq!(video["strm"], "v");
        assert!(video.get("acodec").is_none(), "{video}");
        assert_eq!(video["vcodec"], "avc1.64001f");
        assert_eq!(video["resolution"], "1280x720");
    }

    #[test]
    fn server_status_sends_the_load_as_a_decimal_string() {
        assert_eq!(format_load(0.42), "0.42");
        assert_eq!(format_load(0.1 + 0.2), "0.3");
        assert_eq!(format_load(0.5), "0.5");
        assert_eq!(format_load(0.004), "0");
        assert_eq!(format_load(0.0), "0");
        assert_eq!(format_load(1.0), "1");
        assert_eq!(format_load(0.999), "1");
        assert_eq!(format_load(f64::NAN), "0");
        let sys = SysInfo {
            ap: 4,
            scl: format_load(0.1 + 0.2),
            tpms: 0,
            fpms: 0,
            tsss: 0,
            fsss: 0,
            RamCacheSize: 0,
            FileCacheSize: 0,
            MaxRamCacheSize: 0,
            MaxFileCacheSize: 0,
        };
        let json = serde_json::to_value(&sys).unwrap();
        assert_eq!(json["scl"], serde_json::json!("0.3"));
    }

    #[test]
    fn rtmp_settings_hash_follows_the_settings() {
        let mut settings = RtmpSettings::default();
        let first = rtmp_settings(&settings);
        assert_eq!(first["RtmpSettings"]["interfaces"][0]["ip"], "*");
        assert_eq!(first["RtmpSettings"]["interfaces"][0]["port"], 1935);
        assert_eq!(first["RtmpSettings"]["protocols"][0], "HLS");
        assert!(first["RtmpSettings"]["hash"].is_string());
        assert_eq!(first, rtmp_settings(&settings));
        settings.duration = 4;
        assert_ne!(
            first["RtmpSettings"]["hash"],
            rtmp_settings(&settings)["RtmpSettings"]["hash"]
        );
    }
}
