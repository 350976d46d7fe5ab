//! `rules.conf`: the JSON document of everything that can change at run time (RTMP
//! settings, re-publishing rules, MPEG-TS/SRT/RIST inputs), read into raw serde structs
//! and validated into [`strom_ipc::rules::Rules`], which workers trust as they are.
//!
//! Schema (every top-level key is optional; unknown keys are errors at every level):
//!
//! ```json
//! {
//!   "RtmpSettings": {
//!     "interfaces": [{"ip": "*", "port": 1935}],
//!     "login": "", "password": "",
//!     "duration": 6,
//!     "protocols": ["HLS", "ICECAST", "MPEGTS", "RTMP"],
//!     "apps": [{"app": "live", "login": "", "password": "", "duration": 4,
//!               "protocols": ["HLS"],
//!               "publish_control": {"password": "...", "handler_url": "https://...",
//!                                   "handler_timeout_ms": 3000}}],
//!     "abr": [{"app": "live", "stream": "abr",
//!              "streams": [{"app": "live", "stream": "hi"}, {"app": "live", "stream": "lo"}]}],
//!     "limits": {"max_connections": 10000, "handshake_timeout_secs": 10,
//!                "publisher_idle_timeout_secs": 10, "max_message_bytes": 8388608,
//!                "play_coalesce_ms": 100, "max_publishers": 1000, "max_players": 10000,
//!                "max_connections_per_ip": 1000, "player_wait_timeout_secs": 30,
//!                "unpublish_grace_secs": 10}
//!   },
//!   "RtmpRepublishRules": [{"id": "to-cdn", "src_app": "live", "src_stream": "",
//!     "dest_addr": "cdn.example.com", "dest_port": 1935, "dest_app": "ingest",
//!     "dest_stream": "", "auth_schema": "NONE"}],
//!   "Cameras": [{"id": "cam1", "ip": "0.0.0.0", "port": 9000, "protocol": "srt",
//!                "receive_mode": "listen", "parameters": [{"name": "latency", "value": "200"}],
//!                "app": "live", "stream": "cam1"}],
//!   "RtmpPullSources": [{"app": "live", "stream": "pulled",
//!                        "url": "rtmp://origin.example.com:1935/live/cam",
//!                        "mode": "always", "idle_grace_secs": 30}]
//! }
//! ```
//!
//! Omitted parts of `RtmpSettings` take [`RtmpSettings::default`]; an explicitly empty
//! `interfaces` list means no RTMP listener. The `hash` of an `RtmpSettings` node and a
//! top-level `CamerasHash` are accepted and ignored, because panel documents are shaped
//! like the management API's settings responses, which carry them. A re-publishing rule
//! without an `id` gets `cfg-<position, from 1>`. A pulled source's `mode` is `always`
//! (default) or `on_demand`; `idle_grace_secs` (default 30) only matters on demand.

use super::error::{ConfigError, FieldError};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Map, Value};
use std::fmt::Display;
use std::net::IpAddr;
use std::ops::RangeInclusive;
use std::path::Path;
use strom_ipc::rules::{
    AbrGroup, AppSettings, AuthSchema, CameraSettings, OutputProtocol, PublishControl, PullMode,
    PullSource, RepublishRule, RtmpInterface, RtmpLimits, RtmpSettings, RuleOwner, Rules,
    StreamRef,
};

/// Largest `rules.conf` accepted. Validated rules encode to no more bytes than their
/// JSON, so with the API's own limits (see `api::republish` and `api::publish_control`)
/// a worker's hello stays far below the control channel's message limit
/// (`strom_ipc::frame::MAX_MESSAGE_SIZE`): the size of the configuration never decides
/// whether a worker can start.
pub const MAX_RULES_BYTES: u64 = 64 * 1024 * 1024;

/// Reads and validates `path`.
pub fn load(path: &Path) -> Result<Rules, ConfigError> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(MAX_RULES_BYTES + 1).read_to_string(&mut text))
        .map_err(|error| ConfigError::io(path, error))?;
    if text.len() as u64 > MAX_RULES_BYTES {
        let error = std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than the limit of {MAX_RULES_BYTES} bytes"),
        );
        return Err(ConfigError::io(path, error));
    }
    parse(&text, path)
}

/// Validates `text`; `path` only names the source in errors.
pub fn parse(text: &str, path: &Path) -> Result<Rules, ConfigError> {
    let raw: RawRules = serde_json::from_str(text).map_err(|e| ConfigError::json(path, &e))?;
    raw.validate().map_err(|e| e.in_file(path))
}

/// Validates one re-publishing rule given as JSON (a `rules.conf` entry or the body of
/// `POST /manage/rtmp/republish`). An `id` field in `raw` is accepted and ignored: the
/// rule gets `id`. The error names the offending field, e.g. `dest_port: expected a port
/// number or numeric string, got true`.
pub fn validate_republish_rule(
    raw: Value,
    owner: RuleOwner,
    id: String,
) -> Result<RepublishRule, String> {
    republish_rule(raw, owner, id).map_err(|e| e.to_string())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRules {
    #[serde(rename = "RtmpSettings", default)]
    rtmp: RawRtmpSettings,
    /// Kept as JSON so that [`republish_rule`] can name the field of any error.
    #[serde(rename = "RtmpRepublishRules", default)]
    republish: Vec<Value>,
    #[serde(rename = "Cameras", default)]
    cameras: Vec<RawCamera>,
    #[serde(rename = "CamerasHash", default)]
    _cameras_hash: Option<IgnoredAny>,
    #[serde(rename = "RtmpPullSources", default)]
    pull_sources: Vec<RawPullSource>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPullSource {
    app: String,
    stream: String,
    url: String,
    mode: Option<String>,
    idle_grace_secs: Option<u32>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawRtmpSettings {
    interfaces: Option<Vec<RawInterface>>,
    #[serde(default)]
    login: String,
    #[serde(default)]
    password: String,
    duration: Option<u32>,
    protocols: Option<Vec<String>>,
    #[serde(default)]
    apps: Vec<RawApp>,
    #[serde(default)]
    abr: Vec<RawAbr>,
    #[serde(default)]
    limits: RawLimits,
    #[serde(rename = "hash", default)]
    _hash: Option<IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInterface {
    ip: String,
    port: u16,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawApp {
    app: String,
    #[serde(default)]
    login: String,
    #[serde(default)]
    password: String,
    duration: Option<u32>,
    protocols: Option<Vec<String>>,
    publish_control: Option<RawPublishControl>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPublishControl {
    password: String,
    handler_url: Option<String>,
    handler_timeout_ms: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAbr {
    app: String,
    stream: String,
    streams: Vec<RawStreamRef>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStreamRef {
    app: String,
    stream: String,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawLimits {
    max_connections: Option<u32>,
    handshake_timeout_secs: Option<u32>,
    publisher_idle_timeout_secs: Option<u32>,
    max_message_bytes: Option<u32>,
    play_coalesce_ms: Option<u32>,
    max_publishers: Option<u32>,
    max_players: Option<u32>,
    max_connections_per_ip: Option<u32>,
    player_wait_timeout_secs: Option<u32>,
    unpublish_grace_secs: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCamera {
    id: String,
    ip: String,
    port: u16,
    protocol: String,
    receive_mode: Option<String>,
    #[serde(default)]
    parameters: Vec<RawParameter>,
    app: Option<String>,
    stream: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawParameter {
    name: String,
    value: String,
}

const DURATION_SECS: RangeInclusive<u32> = 1..=60;
const HANDLER_TIMEOUT_MS: RangeInclusive<u32> = 100..=60_000;
const DEFAULT_HANDLER_TIMEOUT_MS: u32 = 3000;

impl RawRules {
    fn validate(self) -> Result<Rules, FieldError> {
        let rtmp = self.rtmp.validate().map_err(|e| e.under("RtmpSettings"))?;
        let mut republish = Vec::with_capacity(self.republish.len());
        for (i, raw) in self.republish.into_iter().enumerate() {
            let at = format!("RtmpRepublishRules[{i}]");
            let id = match raw.get("id") {
                None | Some(Value::Null) => format!("cfg-{}", i + 1),
                Some(Value::String(id)) if id.is_empty() => format!("cfg-{}", i + 1),
                Some(Value::String(id)) => {
                    // The id is a path segment of `/manage/rtmp/republish/<id>`.
                    check_name("id", id).map_err(|e| e.under(&at))?;
                    id.clone()
                }
                Some(other) => {
                    let message = format!("expected a string, got {}", kind(other));
                    return Err(FieldError::new("id", message).under(&at));
                }
            };
            republish.push(republish_rule(raw, RuleOwner::Config, id).map_err(|e| e.under(&at))?);
        }
        unique(&republish, "RtmpRepublishRules", "id", |rule| {
            rule.id.clone()
        })?;
        let cameras = each(self.cameras, "Cameras", RawCamera::validate)?;
        unique(&cameras, "Cameras", "id", |camera| camera.id.clone())?;
        unique(&cameras, "Cameras", "stream", |c| {
            format!("{}/{}", c.app, c.stream)
        })?;
        let pull_sources = each(
            self.pull_sources,
            "RtmpPullSources",
            RawPullSource::validate,
        )?;
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
        Ok(Rules {
            rtmp,
            republish,
            cameras,
            pull_sources,
        })
    }
}

impl RawRtmpSettings {
    fn validate(self) -> Result<RtmpSettings, FieldError> {
        let defaults = RtmpSettings::default();
        let interfaces = match self.interfaces {
            None => defaults.interfaces,
            Some(list) => each(list, "interfaces", RawInterface::validate)?,
        };
        unique(&interfaces, "interfaces", "port", |i| {
            format!("{}:{}", i.ip, i.port)
        })?;
        check_credentials(&self.login, &self.password)?;
        let duration = match self.duration {
            None => defaults.duration,
            Some(duration) => in_range("duration", duration, DURATION_SECS)?,
        };
        let protocols = match self.protocols {
            None => defaults.protocols,
            Some(names) => protocols("protocols", names)?,
        };
        let apps = each(self.apps, "apps", RawApp::validate)?;
        unique(&apps, "apps", "app", |app| app.app.clone())?;
        let abr = each(self.abr, "abr", RawAbr::validate)?;
        unique(&abr, "abr", "stream", |g| format!("{}/{}", g.app, g.stream))?;
        let limits = self.limits.validate().map_err(|e| e.under("limits"))?;
        Ok(RtmpSettings {
            interfaces,
            login: self.login,
            password: self.password,
            duration,
            protocols,
            apps,
            abr,
            limits,
        })
    }
}

impl RawInterface {
    fn validate(self) -> Result<RtmpInterface, FieldError> {
        if self.ip != "*" && self.ip.parse::<IpAddr>().is_err() {
            let message = format!("expected \"*\" or an IP address, got {:?}", self.ip);
            return Err(FieldError::new("ip", message));
        }
        if self.port == 0 {
            return Err(FieldError::new("port", "must be 1..=65535, got 0"));
        }
        Ok(RtmpInterface {
            ip: self.ip,
            port: self.port,
        })
    }
}

impl RawApp {
    fn validate(self) -> Result<AppSettings, FieldError> {
        check_media_name("app", &self.app)?;
        check_credentials(&self.login, &self.password)?;
        let publish_control = match self.publish_control {
            None => None,
            Some(raw) => Some(raw.validate().map_err(|e| e.under("publish_control"))?),
        };
        Ok(AppSettings {
            app: self.app,
            login: self.login,
            password: self.password,
            duration: self
                .duration
                .map(|d| in_range("duration", d, DURATION_SECS))
                .transpose()?,
            protocols: self
                .protocols
                .map(|names| protocols("protocols", names))
                .transpose()?,
            publish_control,
        })
    }
}

impl RawPublishControl {
    fn validate(self) -> Result<PublishControl, FieldError> {
        if self.password.is_empty() {
            return Err(FieldError::new("password", "must not be empty"));
        }
        if let Some(url) = &self.handler_url {
            check_http_url("handler_url", url)?;
        }
        let timeout = self
            .handler_timeout_ms
            .unwrap_or(DEFAULT_HANDLER_TIMEOUT_MS);
        Ok(PublishControl {
            password: self.password,
            handler_url: self.handler_url,
            handler_timeout_ms: in_range("handler_timeout_ms", timeout, HANDLER_TIMEOUT_MS)?,
        })
    }
}

impl RawAbr {
    fn validate(self) -> Result<AbrGroup, FieldError> {
        check_media_name("app", &self.app)?;
        check_media_name("stream", &self.stream)?;
        if self.streams.is_empty() {
            return Err(FieldError::new("streams", "must list at least one stream"));
        }
        let streams = each(self.streams, "streams", |raw| {
            check_media_name("app", &raw.app)?;
            check_media_name("stream", &raw.stream)?;
            Ok(StreamRef {
                app: raw.app,
                stream: raw.stream,
            })
        })?;
        if let Some(i) = streams
            .iter()
            .position(|s| s.app == self.app && s.stream == self.stream)
        {
            let message = "the ABR stream cannot be one of its own renditions";
            return Err(FieldError::new(format!("streams[{i}]"), message));
        }
        unique(&streams, "streams", "stream", |s| {
            format!("{}/{}", s.app, s.stream)
        })?;
        Ok(AbrGroup {
            app: self.app,
            stream: self.stream,
            streams,
        })
    }
}

impl RawLimits {
    fn validate(self) -> Result<RtmpLimits, FieldError> {
        let defaults = RtmpLimits::default();
        let limit = |field, value: Option<u32>, default, range| {
            in_range(field, value.unwrap_or(default), range)
        };
        Ok(RtmpLimits {
            max_connections: limit(
                "max_connections",
                self.max_connections,
                defaults.max_connections,
                1..=1_000_000,
            )?,
            handshake_timeout_secs: limit(
                "handshake_timeout_secs",
                self.handshake_timeout_secs,
                defaults.handshake_timeout_secs,
                1..=300,
            )?,
            publisher_idle_timeout_secs: limit(
                "publisher_idle_timeout_secs",
                self.publisher_idle_timeout_secs,
                defaults.publisher_idle_timeout_secs,
                1..=3600,
            )?,
            // An RTMP message length is a 24-bit field.
            max_message_bytes: limit(
                "max_message_bytes",
                self.max_message_bytes,
                defaults.max_message_bytes,
                1024..=0xFF_FFFF,
            )?,
            play_coalesce_ms: limit(
                "play_coalesce_ms",
                self.play_coalesce_ms,
                defaults.play_coalesce_ms,
                0..=500,
            )?,
            max_publishers: limit(
                "max_publishers",
                self.max_publishers,
                defaults.max_publishers,
                1..=1_000_000,
            )?,
            max_players: limit(
                "max_players",
                self.max_players,
                defaults.max_players,
                1..=1_000_000,
            )?,
            max_connections_per_ip: limit(
                "max_connections_per_ip",
                self.max_connections_per_ip,
                defaults.max_connections_per_ip,
                1..=1_000_000,
            )?,
            player_wait_timeout_secs: limit(
                "player_wait_timeout_secs",
                self.player_wait_timeout_secs,
                defaults.player_wait_timeout_secs,
                1..=86_400,
            )?,
            unpublish_grace_secs: limit(
                "unpublish_grace_secs",
                self.unpublish_grace_secs,
                defaults.unpublish_grace_secs,
                0..=86_400,
            )?,
        })
    }
}

impl RawCamera {
    fn validate(self) -> Result<CameraSettings, FieldError> {
        check_name("id", &self.id)?;
        let receive_mode = match (self.protocol.as_str(), self.receive_mode.as_deref()) {
            ("udp", None | Some("")) => "",
            ("udp", Some(_)) => {
                let message = "only srt and rist inputs have a receive mode";
                return Err(FieldError::new("receive_mode", message));
            }
            ("srt" | "rist", None) => "listen",
            ("srt" | "rist", Some(mode @ ("listen" | "pull"))) => mode,
            ("srt" | "rist", Some(other)) => {
                let message = format!("expected \"listen\" or \"pull\", got {other:?}");
                return Err(FieldError::new("receive_mode", message));
            }
            (other, _) => {
                let message = format!("expected \"udp\", \"srt\" or \"rist\", got {other:?}");
                return Err(FieldError::new("protocol", message));
            }
        };
        // A pulled input names the remote side, which may be a host name; otherwise `ip`
        // is the local address to receive on.
        if receive_mode == "pull" {
            if self.ip.is_empty() || self.ip.chars().any(char::is_whitespace) {
                let message = format!("expected a host name or IP address, got {:?}", self.ip);
                return Err(FieldError::new("ip", message));
            }
        } else if self.ip.parse::<IpAddr>().is_err() {
            let message = format!("expected an IP address, got {:?}", self.ip);
            return Err(FieldError::new("ip", message));
        }
        if self.port == 0 {
            return Err(FieldError::new("port", "must be 1..=65535, got 0"));
        }
        let parameters = each(self.parameters, "parameters", |p| match p.name.is_empty() {
            true => Err(FieldError::new("name", "must not be empty")),
            false => Ok((p.name, p.value)),
        })?;
        let app = self.app.unwrap_or_else(|| "live".to_owned());
        check_media_name("app", &app)?;
        let stream = self.stream.unwrap_or_else(|| self.id.clone());
        check_media_name("stream", &stream)?;
        Ok(CameraSettings {
            id: self.id,
            ip: self.ip,
            port: self.port,
            protocol: self.protocol,
            receive_mode: receive_mode.to_owned(),
            parameters,
            app,
            stream,
        })
    }
}

const IDLE_GRACE_SECS: RangeInclusive<u32> = 0..=86_400;
const DEFAULT_IDLE_GRACE_SECS: u32 = 30;

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
fn check_rtmp_url(field: &str, url: &str) -> Result<(), FieldError> {
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

/// The fields of spec 2.5; `id` is accepted but the caller decides it.
const REPUBLISH_FIELDS: [&str; 14] = [
    "id",
    "src_app",
    "src_stream",
    "dest_addr",
    "dest_port",
    "dest_app",
    "dest_stream",
    "dest_app_params",
    "dest_stream_params",
    "auth_schema",
    "dest_login",
    "dest_password",
    "keep_src_stream_params",
    "ssl",
];

/// Field by field rather than through serde, so that every error names its field.
fn republish_rule(raw: Value, owner: RuleOwner, id: String) -> Result<RepublishRule, FieldError> {
    let Value::Object(mut fields) = raw else {
        let message = format!("expected an object of rule fields, got {}", kind(&raw));
        return Err(FieldError::new("", message));
    };
    if let Some(unknown) = fields
        .keys()
        .find(|k| !REPUBLISH_FIELDS.contains(&k.as_str()))
    {
        let message = format!(
            "unknown field; expected one of {}",
            REPUBLISH_FIELDS.join(", ")
        );
        return Err(FieldError::new(unknown.as_str(), message));
    }
    let src_app = required(&mut fields, "src_app")?;
    check_media_name("src_app", &src_app)?;
    let src_stream = string(&mut fields, "src_stream")?;
    if !src_stream.is_empty() {
        check_media_name("src_stream", &src_stream)?;
    }
    let dest_addr = required(&mut fields, "dest_addr")?;
    if dest_addr
        .chars()
        .any(|c| c.is_whitespace() || c.is_control())
    {
        let message = format!("expected a host name, IP address or URL, got {dest_addr:?}");
        return Err(FieldError::new("dest_addr", message));
    }
    let dest_port = match fields.remove("dest_port") {
        None | Some(Value::Null) => return Err(FieldError::new("dest_port", "required")),
        Some(value) => port(&value).map_err(|message| FieldError::new("dest_port", message))?,
    };
    let dest_app = required(&mut fields, "dest_app")?;
    // An empty destination stream follows the source name, which is only known per stream
    // when the rule covers a whole app.
    let dest_stream = string(&mut fields, "dest_stream")?;
    if dest_stream.is_empty() && !src_stream.is_empty() {
        return Err(FieldError::new(
            "dest_stream",
            "required when src_stream is set",
        ));
    }
    let auth_schema = match string(&mut fields, "auth_schema")?.as_str() {
        "" => AuthSchema::None,
        name => AuthSchema::from_name(name).ok_or_else(|| {
            let message = format!(
                "unknown scheme {name:?}; expected NONE, NIMBLE (or STROM), AKAMAI, \
                 LIMELIGHT or PERISCOPE"
            );
            FieldError::new("auth_schema", message)
        })?,
    };
    let rule = RepublishRule {
        id,
        owner,
        src_app,
        src_stream,
        dest_addr,
        dest_port,
        dest_app,
        dest_stream,
        dest_app_params: string(&mut fields, "dest_app_params")?,
        dest_stream_params: string(&mut fields, "dest_stream_params")?,
        auth_schema,
        dest_login: string(&mut fields, "dest_login")?,
        dest_password: string(&mut fields, "dest_password")?,
        keep_src_stream_params: boolean(&mut fields, "keep_src_stream_params")?,
        ssl: boolean(&mut fields, "ssl")?,
    };
    check_republish_sizes(&rule)?;
    Ok(rule)
}

/// Longest re-publishing rule id, in bytes.
pub const MAX_RULE_ID_BYTES: usize = 256;
/// Longest address, app, stream, login or password of a re-publishing rule, in bytes.
pub const MAX_RULE_FIELD_BYTES: usize = 1024;
/// Longest `dest_app_params` or `dest_stream_params`, in bytes.
pub const MAX_RULE_PARAMS_BYTES: usize = 4096;

/// Every string of a rule is bounded, so 1000 API rules stay a few MiB in every message
/// that carries the rules.
fn check_republish_sizes(rule: &RepublishRule) -> Result<(), FieldError> {
    let fields = [
        ("id", &rule.id, MAX_RULE_ID_BYTES),
        ("src_app", &rule.src_app, MAX_RULE_FIELD_BYTES),
        ("src_stream", &rule.src_stream, MAX_RULE_FIELD_BYTES),
        ("dest_addr", &rule.dest_addr, MAX_RULE_FIELD_BYTES),
        ("dest_app", &rule.dest_app, MAX_RULE_FIELD_BYTES),
        ("dest_stream", &rule.dest_stream, MAX_RULE_FIELD_BYTES),
        (
            "dest_app_params",
            &rule.dest_app_params,
            MAX_RULE_PARAMS_BYTES,
        ),
        (
            "dest_stream_params",
            &rule.dest_stream_params,
            MAX_RULE_PARAMS_BYTES,
        ),
        ("dest_login", &rule.dest_login, MAX_RULE_FIELD_BYTES),
        ("dest_password", &rule.dest_password, MAX_RULE_FIELD_BYTES),
    ];
    match fields
        .into_iter()
        .find(|(_, value, max)| value.len() > *max)
    {
        Some((field, value, max)) => Err(FieldError::new(
            field,
            format!("{} bytes long; the limit is {max} bytes", value.len()),
        )),
        None => Ok(()),
    }
}

/// An optional string field; absent and `null` are empty.
fn string(fields: &mut Map<String, Value>, name: &str) -> Result<String, FieldError> {
    match fields.remove(name) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s),
        Some(other) => {
            let message = format!("expected a string, got {}", kind(&other));
            Err(FieldError::new(name, message))
        }
    }
}

fn required(fields: &mut Map<String, Value>, name: &str) -> Result<String, FieldError> {
    if fields.get(name).is_none_or(Value::is_null) {
        return Err(FieldError::new(name, "required"));
    }
    let value = string(fields, name)?;
    if value.is_empty() {
        return Err(FieldError::new(name, "must not be empty"));
    }
    Ok(value)
}

fn boolean(fields: &mut Map<String, Value>, name: &str) -> Result<bool, FieldError> {
    match fields.remove(name) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(b),
        Some(other) => {
            let message = format!("expected true or false, got {}", kind(&other));
            Err(FieldError::new(name, message))
        }
    }
}

/// A port as a JSON number or, as the spec's create example sends it, a numeric string.
fn port(value: &Value) -> Result<u16, String> {
    let number = match value {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => match s.trim().parse::<u64>() {
            Ok(n) => Some(n),
            Err(_) => {
                return Err(format!(
                    "expected a port number or numeric string, got {s:?}"
                ));
            }
        },
        other => {
            let got = kind(other);
            return Err(format!(
                "expected a port number or numeric string, got {got}"
            ));
        }
    };
    number
        .and_then(|n| u16::try_from(n).ok())
        .filter(|&n| n != 0)
        .ok_or_else(|| format!("must be 1..=65535, got {value}"))
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// App and stream names are URL path segments.
pub(crate) fn check_name(field: &str, name: &str) -> Result<(), FieldError> {
    if name.is_empty() {
        return Err(FieldError::new(field, "must not be empty"));
    }
    if name
        .chars()
        .any(|c| c == '/' || c.is_whitespace() || c.is_control())
    {
        let message = format!("{name:?} must not contain '/' or whitespace");
        return Err(FieldError::new(field, message));
    }
    Ok(())
}

/// An application or stream name: the one rule of [`strom_ipc::names`], because such a
/// name ends up in URLs and in paths under `run_dir`.
pub(crate) fn check_media_name(field: &str, name: &str) -> Result<(), FieldError> {
    // The common mistakes keep their plain messages.
    check_name(field, name)?;
    let kind = if field.ends_with("stream") {
        strom_ipc::names::NameKind::Stream
    } else {
        strom_ipc::names::NameKind::App
    };
    strom_ipc::names::check(kind, name).map_err(|e| FieldError::new(field, e.to_string()))
}

/// Half a set of credentials would lock every publisher out or let every one in.
fn check_credentials(login: &str, password: &str) -> Result<(), FieldError> {
    match (login.is_empty(), password.is_empty()) {
        (false, true) => Err(FieldError::new("password", "must be set when login is")),
        (true, false) => Err(FieldError::new("login", "must be set when password is")),
        _ => Ok(()),
    }
}

pub(crate) fn check_http_url(field: &str, url: &str) -> Result<(), FieldError> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    if rest.is_none_or(str::is_empty) {
        let message = format!("expected an http:// or https:// URL, got {url:?}");
        return Err(FieldError::new(field, message));
    }
    Ok(())
}

fn in_range(field: &str, value: u32, range: RangeInclusive<u32>) -> Result<u32, FieldError> {
    if range.contains(&value) {
        return Ok(value);
    }
    let message = format!("must be {}..={}, got {value}", range.start(), range.end());
    Err(FieldError::new(field, message))
}

fn protocols(field: &str, names: Vec<String>) -> Result<Vec<OutputProtocol>, FieldError> {
    let mut protocols = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        let at = format!("{field}[{i}]");
        let Some(protocol) = OutputProtocol::from_name(name) else {
            let known: Vec<&str> = OutputProtocol::ALL.iter().map(|p| p.as_str()).collect();
            let message = format!("unknown protocol {name:?}; expected {}", known.join(", "));
            return Err(FieldError::new(at, message));
        };
        if protocols.contains(&protocol) {
            return Err(FieldError::new(at, format!("{name:?} is listed twice")));
        }
        protocols.push(protocol);
    }
    Ok(protocols)
}

/// Validates every element, placing errors under `name[i]`.
pub(crate) fn each<R, T>(
    list: Vec<R>,
    name: &str,
    validate: impl Fn(R) -> Result<T, FieldError>,
) -> Result<Vec<T>, FieldError> {
    list.into_iter()
        .enumerate()
        .map(|(i, raw)| validate(raw).map_err(|e| e.under(&format!("{name}[{i}]"))))
        .collect()
}

/// Rejects the second of two elements with the same `key`, blaming `name[i].field`.
pub(crate) fn unique<T, K: PartialEq + Display>(
    items: &[T],
    name: &str,
    field: &str,
    key: impl Fn(&T) -> K,
) -> Result<(), FieldError> {
    let keys: Vec<K> = items.iter().map(key).collect();
    for (i, k) in keys.iter().enumerate() {
        if let Some(j) = keys[..i].iter().position(|other| other == k) {
            let message = format!("\"{k}\" is already used by {name}[{j}]");
            return Err(FieldError::new(format!("{name}[{i}].{field}"), message));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse_ok(text: &str) -> Rules {
        parse(text, Path::new("rules.conf")).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn error(text: &str) -> ConfigError {
        match parse(text, Path::new("rules.conf")) {
            Ok(rules) => panic!("{text} was accepted: {rules:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn defaults() {
        for text in ["{}", "{\"RtmpSettings\": {}}", " { } \n"] {
            assert_eq!(parse_ok(text), Rules::default(), "{text}");
        }
        let no_rtmp = parse_ok(r#"{"RtmpSettings": {"interfaces": []}}"#);
        assert!(no_rtmp.rtmp.interfaces.is_empty());
    }

    #[test]
    fn packaged_file_is_valid() {
        let rules = parse_ok(include_str!("../../../packaging/rules.conf"));
        assert_eq!(rules.rtmp.interfaces[0].ip, "127.0.0.1");
    }

    #[test]
    fn every_key() {
        let text = r#"{
          "RtmpSettings": {
            "hash": "abc",
            "interfaces": [{"ip": "*", "port": 1935}, {"ip": "::1", "port": 1936}],
            "login": "pub", "password": "pw", "duration": 4,
            "protocols": ["HLS", "RTMP"],
            "apps": [
              {"app": "live", "login": "a", "password": "b", "duration": 2,
               "protocols": ["ICECAST"],
               "publish_control": {"password": "sign", "handler_url": "https://h/x",
                                   "handler_timeout_ms": 500}},
              {"app": "other", "publish_control": {"password": "s"}}
            ],
            "abr": [{"app": "live", "stream": "abr",
                     "streams": [{"app": "live", "stream": "hi"}, {"app": "live", "stream": "lo"}]}],
            "limits": {"max_connections": 5, "handshake_timeout_secs": 3,
                       "publisher_idle_timeout_secs": 20, "max_message_bytes": 65536}
          },
          "RtmpRepublishRules": [
            {"id": "mine", "src_app": "live", "src_stream": "s", "dest_addr": "cdn.example.com",
             "dest_port": "1935", "dest_app": "in", "dest_stream": "d", "dest_app_params": "ap",
             "dest_stream_params": "sp", "auth_schema": "AKAMAI", "dest_login": "l",
             "dest_password": "p", "keep_src_stream_params": true, "ssl": true},
            {"src_app": "live", "dest_addr": "10.0.0.1", "dest_port": 1935, "dest_app": "in"}
          ],
          "Cameras": [
            {"id": "cam1", "ip": "239.0.0.1", "port": 5000, "protocol": "udp"},
            {"id": "cam2", "ip": "0.0.0.0", "port": 9000, "protocol": "srt",
             "parameters": [{"name": "latency", "value": "200"}], "app": "in", "stream": "c2"},
            {"id": "cam3", "ip": "src.example.com", "port": 9001, "protocol": "rist",
             "receive_mode": "pull"}
          ],
          "CamerasHash": "x",
          "RtmpPullSources": [
            {"app": "live", "stream": "p1", "url": "rtmp://origin.example:1936/live/cam?t=1",
             "mode": "on_demand", "idle_grace_secs": 5},
            {"app": "live", "stream": "p2", "url": "rtmps://[::1]/app/s"}
          ]
        }"#;
        let rules = parse_ok(text);
        let rtmp = &rules.rtmp;
        assert_eq!(
            rtmp.interfaces[1],
            RtmpInterface {
                ip: "::1".into(),
                port: 1936
            }
        );
        assert_eq!(
            (rtmp.login.as_str(), rtmp.password.as_str(), rtmp.duration),
            ("pub", "pw", 4)
        );
        assert_eq!(rtmp.protocols, [OutputProtocol::Hls, OutputProtocol::Rtmp]);
        assert_eq!(
            rtmp.apps[0],
            AppSettings {
                app: "live".into(),
                login: "a".into(),
                password: "b".into(),
                duration: Some(2),
                protocols: Some(vec![OutputProtocol::Icecast]),
                publish_control: Some(PublishControl {
                    password: "sign".into(),
                    handler_url: Some("https://h/x".into()),
                    handler_timeout_ms: 500,
                }),
            }
        );
        let other = &rtmp.apps[1];
        assert_eq!((other.duration, other.protocols.as_ref()), (None, None));
        let control = other.publish_control.as_ref().unwrap();
        assert_eq!(
            (control.handler_url.as_ref(), control.handler_timeout_ms),
            (None, 3000)
        );
        assert_eq!(
            rtmp.abr[0].streams[1],
            StreamRef {
                app: "live".into(),
                stream: "lo".into()
            }
        );
        assert_eq!(
            rtmp.limits,
            RtmpLimits {
                max_connections: 5,
                handshake_timeout_secs: 3,
                publisher_idle_timeout_secs: 20,
                max_message_bytes: 65536,
                ..RtmpLimits::default()
            }
        );
        let [first, second] = &rules.republish[..] else {
            panic!("{:?}", rules.republish)
        };
        assert_eq!(
            *first,
            RepublishRule {
                id: "mine".into(),
                owner: RuleOwner::Config,
                src_app: "live".into(),
                src_stream: "s".into(),
                dest_addr: "cdn.example.com".into(),
                dest_port: 1935,
                dest_app: "in".into(),
                dest_stream: "d".into(),
                dest_app_params: "ap".into(),
                dest_stream_params: "sp".into(),
                auth_schema: AuthSchema::Akamai,
                dest_login: "l".into(),
                dest_password: "p".into(),
                keep_src_stream_params: true,
                ssl: true,
            }
        );
        assert_eq!((second.id.as_str(), second.dest_port), ("cfg-2", 1935));
        assert_eq!(
            (second.dest_stream.as_str(), second.auth_schema),
            ("", AuthSchema::None)
        );
        assert!(!second.ssl && !second.keep_src_stream_params);
        let cams = &rules.cameras;
        assert_eq!(
            cams[0],
            CameraSettings {
                id: "cam1".into(),
                ip: "239.0.0.1".into(),
                port: 5000,
                protocol: "udp".into(),
                receive_mode: String::new(),
                parameters: vec![],
                app: "live".into(),
                stream: "cam1".into(),
            }
        );
        assert_eq!(
            (cams[1].receive_mode.as_str(), cams[1].app.as_str()),
            ("listen", "in")
        );
        assert_eq!(
            cams[1].parameters,
            [("latency".to_owned(), "200".to_owned())]
        );
        assert_eq!(cams[2].receive_mode, "pull");
        assert_eq!(
            rules.pull_sources[0],
            PullSource {
                app: "live".into(),
                stream: "p1".into(),
                url: "rtmp://origin.example:1936/live/cam?t=1".into(),
                mode: PullMode::OnDemand,
                idle_grace_secs: 5,
            }
        );
        let second = &rules.pull_sources[1];
        assert_eq!(
            (second.mode, second.idle_grace_secs),
            (PullMode::Always, 30)
        );
    }

    #[test]
    fn json_errors_carry_line_and_column() {
        let cases = [
            (
                "{\n  \"RtmpSettings\": {\n    \"duration\": 4,,\n",
                "rules.conf:3:19: invalid JSON: ",
            ),
            (
                "{\"RtmpSettings\": {\"duration\": \"4\"}}",
                "rules.conf:1:33: invalid type: string",
            ),
            (
                "{\"RtmpSettings\": {\"durtion\": 4}}",
                "rules.conf:1:27: unknown field `durtion`",
            ),
            ("{\n\"Extra\": 1}", "rules.conf:2:7: unknown field `Extra`"),
            (
                "{\"Cameras\": [{\"id\": \"c\"}]}",
                "rules.conf:1:24: missing field `ip`",
            ),
            (
                "",
                "rules.conf:1:0: invalid JSON: EOF while parsing a value",
            ),
        ];
        for (text, expected) in cases {
            let message = error(text).to_string();
            assert!(message.starts_with(expected), "{text}: {message}");
        }
        let error = error("{\n  \"RtmpSettings\": {\n    \"duration\": 4,,\n");
        assert_eq!((error.line(), error.column()), (Some(3), Some(19)));
    }

    #[test]
    fn semantic_errors_name_the_json_path() {
        let rule = r#""src_app": "live", "dest_addr": "h", "dest_port": 1935, "dest_app": "a""#;
        let cases = [
            (
                r#"{"RtmpSettings": {"duration": 0}}"#,
                "RtmpSettings.duration: must be 1..=60, got 0",
            ),
            (
                r#"{"RtmpSettings": {"apps": [{"app": "a"}, {"app": "b", "duration": 61}]}}"#,
                "RtmpSettings.apps[1].duration: must be 1..=60, got 61",
            ),
            (
                r#"{"RtmpSettings": {"apps": [{"app": "a"}, {"app": "a"}]}}"#,
                "RtmpSettings.apps[1].app: \"a\" is already used by apps[0]",
            ),
            (
                r#"{"RtmpSettings": {"apps": [{"app": "a/b"}]}}"#,
                "RtmpSettings.apps[0].app: \"a/b\" must not contain '/'",
            ),
            (
                r#"{"RtmpPullSources": [{"app": "live", "stream": "..", "url": "rtmp://h/a/b"}]}"#,
                "RtmpPullSources[0].stream: stream name starts with '.'",
            ),
            (
                r#"{"RtmpSettings": {"apps": [{"app": ""}]}}"#,
                "RtmpSettings.apps[0].app: must not be empty",
            ),
            (
                r#"{"RtmpSettings": {"apps": [{"app": "a", "publish_control": {"password": ""}}]}}"#,
                "RtmpSettings.apps[0].publish_control.password: must not be empty",
            ),
            (
                r#"{"RtmpSettings": {"apps": [{"app": "a", "publish_control": {"password": "p", "handler_url": "ftp://x"}}]}}"#,
                "RtmpSettings.apps[0].publish_control.handler_url: expected an http",
            ),
            (
                r#"{"RtmpSettings": {"apps": [{"app": "a", "protocols": ["HLS", "DASH"]}]}}"#,
                "RtmpSettings.apps[0].protocols[1]: unknown protocol \"DASH\"; expected HLS, ICECAST, MPEGTS, RTMP",
            ),
            (
                r#"{"RtmpSettings": {"protocols": ["HLS", "HLS"]}}"#,
                "RtmpSettings.protocols[1]: \"HLS\" is listed twice",
            ),
            (
                r#"{"RtmpSettings": {"login": "x"}}"#,
                "RtmpSettings.password: must be set when login is",
            ),
            (
                r#"{"RtmpSettings": {"interfaces": [{"ip": "localhost", "port": 1935}]}}"#,
                "RtmpSettings.interfaces[0].ip: expected \"*\" or an IP address",
            ),
            (
                r#"{"RtmpSettings": {"interfaces": [{"ip": "*", "port": 0}]}}"#,
                "RtmpSettings.interfaces[0].port: must be 1..=65535",
            ),
            (
                r#"{"RtmpSettings": {"interfaces": [{"ip": "*", "port": 1}, {"ip": "*", "port": 1}]}}"#,
                "RtmpSettings.interfaces[1].port: \"*:1\" is already used",
            ),
            (
                r#"{"RtmpSettings": {"abr": [{"app": "l", "stream": "a", "streams": []}]}}"#,
                "RtmpSettings.abr[0].streams: must list at least one stream",
            ),
            (
                r#"{"RtmpSettings": {"abr": [{"app": "l", "stream": "a", "streams": [{"app": "l", "stream": "a"}]}]}}"#,
                "RtmpSettings.abr[0].streams[0]: the ABR stream cannot",
            ),
            (
                r#"{"RtmpSettings": {"limits": {"max_message_bytes": 16777216}}}"#,
                "RtmpSettings.limits.max_message_bytes: must be 1024..=16777215",
            ),
            (
                r#"{"RtmpSettings": {"limits": {"handshake_timeout_secs": 0}}}"#,
                "RtmpSettings.limits.handshake_timeout_secs: must be 1..=300",
            ),
            (
                &format!(
                    r#"{{"RtmpRepublishRules": [{{{rule}}}, {{{rule}, "auth_schema": "BASIC"}}]}}"#
                ),
                "RtmpRepublishRules[1].auth_schema: unknown scheme \"BASIC\"",
            ),
            (
                &format!(
                    r#"{{"RtmpRepublishRules": [{{{rule}, "id": "x"}}, {{{rule}, "id": "x"}}]}}"#
                ),
                "RtmpRepublishRules[1].id: \"x\" is already used by RtmpRepublishRules[0]",
            ),
            (
                &format!(r#"{{"RtmpRepublishRules": [{{{rule}, "id": 5}}]}}"#),
                "RtmpRepublishRules[0].id: expected a string, got a number",
            ),
            (
                r#"{"RtmpRepublishRules": [7]}"#,
                "RtmpRepublishRules[0]: expected an object of rule fields, got a number",
            ),
            (
                r#"{"Cameras": [{"id": "c", "ip": "1.2.3.4", "port": 1, "protocol": "http"}]}"#,
                "Cameras[0].protocol: expected \"udp\", \"srt\" or \"rist\", got \"http\"",
            ),
            (
                r#"{"Cameras": [{"id": "c", "ip": "1.2.3.4", "port": 1, "protocol": "udp", "receive_mode": "pull"}]}"#,
                "Cameras[0].receive_mode: only srt and rist",
            ),
            (
                r#"{"Cameras": [{"id": "c", "ip": "1.2.3.4", "port": 1, "protocol": "srt", "receive_mode": "call"}]}"#,
                "Cameras[0].receive_mode: expected \"listen\" or \"pull\"",
            ),
            (
                r#"{"Cameras": [{"id": "c", "ip": "host", "port": 1, "protocol": "srt"}]}"#,
                "Cameras[0].ip: expected an IP address",
            ),
            (
                r#"{"Cameras": [{"id": "", "ip": "1.2.3.4", "port": 1, "protocol": "udp"}]}"#,
                "Cameras[0].id: must not be empty",
            ),
            (
                r#"{"Cameras": [{"id": "c", "ip": "1.2.3.4", "port": 1, "protocol": "udp", "parameters": [{"name": "", "value": ""}]}]}"#,
                "Cameras[0].parameters[0].name: must not be empty",
            ),
            (
                r#"{"Cameras": [{"id": "c", "ip": "1.2.3.4", "port": 1, "protocol": "udp"}, {"id": "c", "ip": "1.2.3.4", "port": 2, "protocol": "udp"}]}"#,
                "Cameras[1].id: \"c\" is already used by Cameras[0]",
            ),
            (
                r#"{"Cameras": [{"id": "c", "ip": "1.2.3.4", "port": 1, "protocol": "udp"}, {"id": "d", "ip": "1.2.3.4", "port": 2, "protocol": "udp", "stream": "c"}]}"#,
                "Cameras[1].stream: \"live/c\" is already used by Cameras[0]",
            ),
            (
                r#"{"RtmpPullSources": [{"app": "live", "stream": "p", "url": "http://h/a/b"}]}"#,
                "RtmpPullSources[0].url: expected rtmp://host[:port]/app/stream, got \"http://h/a/b\": the scheme",
            ),
            (
                r#"{"RtmpPullSources": [{"app": "live", "stream": "p", "url": "rtmp://h/app"}]}"#,
                "RtmpPullSources[0].url: expected rtmp://host[:port]/app/stream, got \"rtmp://h/app\": no app and stream",
            ),
            (
                r#"{"RtmpPullSources": [{"app": "live", "stream": "p", "url": "rtmp://h:0/a/b"}]}"#,
                "RtmpPullSources[0].url: expected rtmp://host[:port]/app/stream, got \"rtmp://h:0/a/b\": bad port",
            ),
            (
                r#"{"RtmpPullSources": [{"app": "live", "stream": "p", "url": "rtmp://:1935/a/b"}]}"#,
                "RtmpPullSources[0].url: expected rtmp://host[:port]/app/stream, got \"rtmp://:1935/a/b\": no host",
            ),
            (
                r#"{"RtmpPullSources": [{"app": "live", "stream": "p", "url": "rtmp://h/a/b", "mode": "lazy"}]}"#,
                "RtmpPullSources[0].mode: expected \"always\" or \"on_demand\", got \"lazy\"",
            ),
            (
                r#"{"RtmpPullSources": [{"app": "live", "stream": "p", "url": "rtmp://h/a/b", "idle_grace_secs": 86401}]}"#,
                "RtmpPullSources[0].idle_grace_secs: must be 0..=86400",
            ),
            (
                r#"{"RtmpPullSources": [{"app": "live", "stream": "p", "url": "rtmp://h/a/b"}, {"app": "live", "stream": "p", "url": "rtmp://h/a/c"}]}"#,
                "RtmpPullSources[1].stream: \"live/p\" is already used by RtmpPullSources[0]",
            ),
            (
                r#"{"Cameras": [{"id": "c", "ip": "1.2.3.4", "port": 1, "protocol": "udp", "stream": "p"}], "RtmpPullSources": [{"app": "live", "stream": "p", "url": "rtmp://h/a/b"}]}"#,
                "RtmpPullSources[0].stream: \"live/p\" is already the stream of an MPEG-TS input",
            ),
        ];
        for (text, expected) in cases {
            let error = error(text);
            let message = error.to_string();
            assert!(
                message.starts_with(&format!("rules.conf: {expected}")),
                "{text}: {message}"
            );
            assert_eq!(
                (error.line(), error.path()),
                (None, Path::new("rules.conf"))
            );
        }
    }

    #[test]
    fn republish_rule_fields() {
        let base = json!({"src_app": "live", "dest_addr": "h", "dest_port": 1935, "dest_app": "a"});
        let with = |key: &str, value: Value| {
            let mut body = base.clone();
            body[key] = value;
            validate_republish_rule(body, RuleOwner::Api, "id1".into())
        };
        let ok =
            |key: &str, value: Value| with(key, value).unwrap_or_else(|e| panic!("{key}: {e}"));
        assert_eq!(ok("dest_port", json!("1936")).dest_port, 1936);
        assert_eq!(ok("dest_port", json!(" 443 ")).dest_port, 443);
        assert_eq!(ok("dest_port", json!(1937)).dest_port, 1937);
        assert_eq!(
            ok("auth_schema", json!("STROM")).auth_schema,
            AuthSchema::Native
        );
        assert_eq!(
            ok("auth_schema", json!("NIMBLE")).auth_schema,
            AuthSchema::Native
        );
        assert_eq!(
            ok("auth_schema", json!("PERISCOPE")).auth_schema,
            AuthSchema::Periscope
        );
        assert_eq!(ok("auth_schema", Value::Null).auth_schema, AuthSchema::None);
        let rule = ok("id", json!("ignored"));
        assert_eq!((rule.id.as_str(), rule.owner), ("id1", RuleOwner::Api));

        let errors = [
            (
                "dest_port",
                json!("abc"),
                "dest_port: expected a port number or numeric string, got \"abc\"",
            ),
            (
                "dest_port",
                json!(true),
                "dest_port: expected a port number or numeric string, got a boolean",
            ),
            ("dest_port", json!(0), "dest_port: must be 1..=65535, got 0"),
            (
                "dest_port",
                json!("70000"),
                "dest_port: must be 1..=65535, got \"70000\"",
            ),
            (
                "dest_port",
                json!(-1),
                "dest_port: must be 1..=65535, got -1",
            ),
            (
                "dest_port",
                json!(1.5),
                "dest_port: must be 1..=65535, got 1.5",
            ),
            ("dest_port", Value::Null, "dest_port: required"),
            (
                "auth_schema",
                json!("nimble"),
                "auth_schema: unknown scheme \"nimble\"",
            ),
            (
                "auth_schema",
                json!(1),
                "auth_schema: expected a string, got a number",
            ),
            ("src_app", json!(""), "src_app: must not be empty"),
            ("dest_addr", Value::Null, "dest_addr: required"),
            ("dest_addr", json!("a b"), "dest_addr: expected a host name"),
            (
                "src_stream",
                json!("s"),
                "dest_stream: required when src_stream is set",
            ),
            (
                "ssl",
                json!("true"),
                "ssl: expected true or false, got a string",
            ),
            (
                "keep_src_stream_params",
                json!(1),
                "keep_src_stream_params: expected true or false",
            ),
            (
                "owner",
                json!(1),
                "owner: unknown field; expected one of id, src_app",
            ),
        ];
        for (key, value, expected) in errors {
            let message = with(key, value.clone()).unwrap_err();
            assert!(message.starts_with(expected), "{key} = {value}: {message}");
        }
        let message = validate_republish_rule(json!([]), RuleOwner::Api, "x".into()).unwrap_err();
        assert_eq!(message, "expected an object of rule fields, got an array");
    }

    #[test]
    fn republish_rule_strings_are_bounded() {
        let base = json!({"src_app": "live", "dest_addr": "h", "dest_port": 1935, "dest_app": "a"});
        let with = |key: &str, len: usize| {
            let mut body = base.clone();
            body[key] = json!("x".repeat(len));
            validate_republish_rule(body, RuleOwner::Api, "id1".into())
        };
        for (key, max) in [
            ("dest_addr", MAX_RULE_FIELD_BYTES),
            ("dest_app", MAX_RULE_FIELD_BYTES),
            ("dest_login", MAX_RULE_FIELD_BYTES),
            ("dest_password", MAX_RULE_FIELD_BYTES),
            ("dest_app_params", MAX_RULE_PARAMS_BYTES),
            ("dest_stream_params", MAX_RULE_PARAMS_BYTES),
        ] {
            assert!(with(key, max).is_ok(), "{key} at its limit");
            assert_eq!(
                with(key, max + 1).unwrap_err(),
                format!("{key}: {} bytes long; the limit is {max} bytes", max + 1)
            );
        }
        let long_id = "i".repeat(MAX_RULE_ID_BYTES + 1);
        let text = format!(
            r#"{{"RtmpRepublishRules": [{{"id": "{long_id}", "src_app": "live", "dest_addr": "h", "dest_port": 1, "dest_app": "a"}}]}}"#
        );
        let error = parse(&text, Path::new("rules.conf"))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("RtmpRepublishRules[0].id: 257 bytes long"),
            "{error}"
        );
    }

    #[test]
    fn an_oversized_rules_file_is_refused_before_parsing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rules.conf");
        let file = std::fs::File::create(&path).unwrap();
        file.set_len(MAX_RULES_BYTES + 1).unwrap();
        let error = load(&path).unwrap_err().to_string();
        assert!(error.contains("larger than the limit"), "{error}");
    }

    #[test]
    fn load_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rules.conf");
        let error = load(&path).unwrap_err();
        assert_eq!(error.path(), path);
        std::fs::write(&path, r#"{"RtmpSettings": {"duration": 10}}"#).unwrap();
        assert_eq!(load(&path).unwrap().rtmp.duration, 10);
    }
}
