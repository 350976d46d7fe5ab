//! `RtspSettings`: the RTSP server's listening interfaces and limits. Without the key
//! there is no RTSP listener; with it, `interfaces` defaults to `*:554`, the standard
//! RTSP port (which needs privileges: the shipped rules use a high port).
//! `tls_interfaces` (RTSP over TLS, `rtsps://`) is empty unless given; an entry without
//! a port listens on 322, the IANA rtsps port.

use super::super::error::FieldError;
use super::fields::{each, in_range, unique};
use super::rtmp::RawInterface;
use serde::Deserialize;
use std::net::IpAddr;
use strom_ipc::rtsp_rules::{RtspLimits, RtspSettings};
use strom_ipc::rules::RtmpInterface;

/// The port RTSP listens on when `interfaces` is left out.
const STANDARD_PORT: u16 = 554;
/// The port of a `tls_interfaces` entry that names none (IANA `rtsps`).
const STANDARD_TLS_PORT: u16 = 322;

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRtspSettings {
    #[serde(default)]
    interfaces: Option<Vec<RawInterface>>,
    #[serde(default)]
    tls_interfaces: Vec<RawTlsInterface>,
    #[serde(default)]
    limits: RawRtspLimits,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTlsInterface {
    ip: String,
    port: Option<u16>,
}

impl RawTlsInterface {
    fn validate(self) -> Result<RtmpInterface, FieldError> {
        if self.ip != "*" && self.ip.parse::<IpAddr>().is_err() {
            let message = format!("expected \"*\" or an IP address, got {:?}", self.ip);
            return Err(FieldError::new("ip", message));
        }
        match self.port.unwrap_or(STANDARD_TLS_PORT) {
            0 => Err(FieldError::new("port", "must be 1..=65535, got 0")),
            port => Ok(RtmpInterface { ip: self.ip, port }),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawRtspLimits {
    max_connections: Option<u32>,
    max_connections_per_ip: Option<u32>,
    session_timeout_secs: Option<u32>,
    max_request_bytes: Option<u32>,
    player_wait_timeout_secs: Option<u32>,
    request_timeout_secs: Option<u32>,
    max_udp_pairs: Option<u32>,
}

impl RawRtspSettings {
    pub(super) fn validate(self) -> Result<RtspSettings, FieldError> {
        let interfaces = match self.interfaces {
            None => vec![RtmpInterface {
                ip: "*".to_owned(),
                port: STANDARD_PORT,
            }],
            Some(list) => each(list, "interfaces", RawInterface::validate)?,
        };
        unique(&interfaces, "interfaces", "port", |i| {
            format!("{}:{}", i.ip, i.port)
        })?;
        let tls_interfaces = each(
            self.tls_interfaces,
            "tls_interfaces",
            RawTlsInterface::validate,
        )?;
        unique(&tls_interfaces, "tls_interfaces", "port", |i| {
            format!("{}:{}", i.ip, i.port)
        })?;
        // One port cannot speak both plain RTSP and RTSP over TLS.
        if let Some((i, tls)) = tls_interfaces
            .iter()
            .enumerate()
            .find(|(_, tls)| interfaces.iter().any(|plain| plain.port == tls.port))
        {
            let message = format!(
                "port {} is already a plain RTSP port (interfaces)",
                tls.port
            );
            return Err(FieldError::new(
                format!("tls_interfaces[{i}].port"),
                message,
            ));
        }
        let limits = self.limits.validate().map_err(|e| e.under("limits"))?;
        Ok(RtspSettings {
            interfaces,
            tls_interfaces,
            limits,
        })
    }
}

impl RawRtspLimits {
    fn validate(self) -> Result<RtspLimits, FieldError> {
        let defaults = RtspLimits::default();
        let limit = |field, value: Option<u32>, default, range| {
            in_range(field, value.unwrap_or(default), range)
        };
        Ok(RtspLimits {
            max_connections: limit(
                "max_connections",
                self.max_connections,
                defaults.max_connections,
                1..=1_000_000,
            )?,
            max_connections_per_ip: limit(
                "max_connections_per_ip",
                self.max_connections_per_ip,
                defaults.max_connections_per_ip,
                1..=1_000_000,
            )?,
            session_timeout_secs: limit(
                "session_timeout_secs",
                self.session_timeout_secs,
                defaults.session_timeout_secs,
                5..=3600,
            )?,
            // Room for a long request line and a dozen headers; SDP bodies (ANNOUNCE) fit.
            max_request_bytes: limit(
                "max_request_bytes",
                self.max_request_bytes,
                defaults.max_request_bytes,
                1024..=1024 * 1024,
            )?,
            player_wait_timeout_secs: limit(
                "player_wait_timeout_secs",
                self.player_wait_timeout_secs,
                defaults.player_wait_timeout_secs,
                1..=300,
            )?,
            request_timeout_secs: limit(
                "request_timeout_secs",
                self.request_timeout_secs,
                defaults.request_timeout_secs,
                1..=3600,
            )?,
            max_udp_pairs: limit(
                "max_udp_pairs",
                self.max_udp_pairs,
                defaults.max_udp_pairs,
                0..=1_000_000,
            )?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<RtspSettings, FieldError> {
        serde_json::from_str::<RawRtspSettings>(json)
            .map_err(|e| FieldError::new("json", e.to_string()))?
            .validate()
    }

    #[test]
    fn defaults_listen_on_the_standard_port() {
        let settings = parse("{}").unwrap();
        assert_eq!(settings.interfaces.len(), 1);
        assert_eq!(settings.interfaces[0].port, 554);
        assert_eq!(settings.limits, RtspLimits::default());
        assert!(settings.tls_interfaces.is_empty(), "no rtsps unless asked");
    }

    #[test]
    fn tls_interfaces_default_to_the_rtsps_port() {
        let settings =
            parse(r#"{"tls_interfaces": [{"ip": "*"}, {"ip": "127.0.0.1", "port": 8322}]}"#)
                .unwrap();
        let ports: Vec<u16> = settings.tls_interfaces.iter().map(|i| i.port).collect();
        assert_eq!(ports, [322, 8322]);
        let error = parse(
            r#"{"interfaces": [{"ip": "*", "port": 8554}], "tls_interfaces": [{"ip": "*", "port": 8554}]}"#,
        )
        .unwrap_err();
        assert!(error.to_string().contains("tls_interfaces"), "{error}");
        let error = parse(r#"{"tls_interfaces": [{"ip": "here"}]}"#).unwrap_err();
        assert!(
            error.to_string().contains("tls_interfaces[0].ip"),
            "{error}"
        );
    }

    #[test]
    fn bad_values_name_their_field() {
        let error = parse(r#"{"limits": {"session_timeout_secs": 1}}"#).unwrap_err();
        assert!(
            error.to_string().contains("limits.session_timeout_secs"),
            "{error}"
        );
        let error = parse(r#"{"limits": {"request_timeout_secs": 0}}"#).unwrap_err();
        assert!(
            error.to_string().contains("limits.request_timeout_secs"),
            "{error}"
        );
        let error = parse(r#"{"limits": {"max_udp_pairs": 1000001}}"#).unwrap_err();
        assert!(
            error.to_string().contains("limits.max_udp_pairs"),
            "{error}"
        );
        let limits = parse(r#"{"limits": {"request_timeout_secs": 3, "max_udp_pairs": 0}}"#)
            .unwrap()
            .limits;
        assert_eq!((limits.request_timeout_secs, limits.max_udp_pairs), (3, 0));
        let error = parse(r#"{"interfaces": [{"ip": "nowhere", "port": 8554}]}"#).unwrap_err();
        assert!(error.to_string().contains("interfaces[0].ip"), "{error}");
        assert!(
            parse(r#"{"port": 8554}"#).is_err(),
            "unknown keys are errors"
        );
    }
}
