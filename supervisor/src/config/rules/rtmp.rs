//! `RtmpSettings`: the RTMP listener (interfaces, publishing credentials, per-app
//! publish control, limits). Its legacy delivery keys (`duration`, `protocols`,
//! `apps[].duration/protocols`, `abr`) are validated here and kept as written, because the
//! management API echoes them; [`super::delivery`] turns them into delivery settings.

use super::super::error::FieldError;
use super::delivery::{DURATION_SECS, RawAbr};
use super::fields::{check_credentials, check_http_url, check_media_name, each, in_range, unique};
use serde::Deserialize;
use serde::de::IgnoredAny;
use std::net::IpAddr;
use std::ops::RangeInclusive;
use strom_ipc::rules::{
    AppSettings, OutputProtocol, PublishControl, RtmpInterface, RtmpLimits, RtmpSettings,
};

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRtmpSettings {
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
pub(super) struct RawInterface {
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
pub(super) struct RawPublishControl {
    password: String,
    handler_url: Option<String>,
    handler_timeout_ms: Option<u32>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawLimits {
    max_connections: Option<u32>,
    handshake_timeout_secs: Option<u32>,
    publisher_idle_timeout_secs: Option<u32>,
    max_message_bytes: Option<u32>,
    play_coalesce_ms: Option<u32>,
    play_nodelay: Option<bool>,
    max_publishers: Option<u32>,
    max_players: Option<u32>,
    max_connections_per_ip: Option<u32>,
    player_wait_timeout_secs: Option<u32>,
    unpublish_grace_secs: Option<u32>,
}

const HANDLER_TIMEOUT_MS: RangeInclusive<u32> = 100..=60_000;
const DEFAULT_HANDLER_TIMEOUT_MS: u32 = 3000;

impl RawRtmpSettings {
    pub(super) fn validate(self) -> Result<RtmpSettings, FieldError> {
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
    pub(super) fn validate(self) -> Result<RtmpInterface, FieldError> {
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
    pub(super) fn validate(self) -> Result<PublishControl, FieldError> {
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
            play_nodelay: self.play_nodelay.unwrap_or(defaults.play_nodelay),
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
