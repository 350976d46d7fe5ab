//! `WebRtcSettings`: WebRTC's ICE port, the addresses its candidates advertise and its
//! limits. Without the key there is no WebRTC; with it, `interfaces` defaults to
//! `*:8189` (UDP unless `udp` is false, and TCP for ICE-TCP unless `tcp` is false).

use super::super::error::FieldError;
use super::fields::{each, in_range, unique};
use super::rtmp::RawInterface;
use serde::Deserialize;
use std::net::IpAddr;
use strom_ipc::rules::RtmpInterface;
use strom_ipc::webrtc_rules::{WebRtcLimits, WebRtcSettings};

/// The ICE port when `interfaces` is left out (the port WebRTC servers commonly use).
const DEFAULT_PORT: u16 = 8189;

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWebRtcSettings {
    #[serde(default)]
    interfaces: Option<Vec<RawInterface>>,
    #[serde(default)]
    public_addresses: Vec<String>,
    udp: Option<bool>,
    tcp: Option<bool>,
    #[serde(default)]
    limits: RawWebRtcLimits,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawWebRtcLimits {
    max_sessions: Option<u32>,
    max_sessions_per_ip: Option<u32>,
    max_sdp_bytes: Option<u32>,
    connect_timeout_secs: Option<u32>,
    socket_buffer_bytes: Option<u32>,
    retransmission_window_ms: Option<u32>,
}

impl RawWebRtcSettings {
    pub(super) fn validate(self) -> Result<WebRtcSettings, FieldError> {
        let interfaces = match self.interfaces {
            None => vec![RtmpInterface {
                ip: "*".to_owned(),
                port: DEFAULT_PORT,
            }],
            Some(list) => each(list, "interfaces", RawInterface::validate)?,
        };
        if interfaces.is_empty() {
            return Err(FieldError::new(
                "interfaces",
                "needs at least one entry (leave WebRtcSettings out to turn WebRTC off)",
            ));
        }
        unique(&interfaces, "interfaces", "port", |i| {
            format!("{}:{}", i.ip, i.port)
        })?;
        for (i, address) in self.public_addresses.iter().enumerate() {
            match address.parse::<IpAddr>() {
                Ok(ip) if !ip.is_unspecified() => {}
                _ => {
                    return Err(FieldError::new(
                        format!("public_addresses[{i}]"),
                        format!("expected an IP address, got {address:?}"),
                    ));
                }
            }
        }
        let (udp, tcp) = (self.udp.unwrap_or(true), self.tcp.unwrap_or(true));
        if !udp && !tcp {
            return Err(FieldError::new(
                "udp",
                "udp and tcp cannot both be false (leave WebRtcSettings out to turn WebRTC off)",
            ));
        }
        let limits = self.limits.validate().map_err(|e| e.under("limits"))?;
        Ok(WebRtcSettings {
            interfaces,
            public_addresses: self.public_addresses,
            udp,
            tcp,
            limits,
        })
    }
}

impl RawWebRtcLimits {
    fn validate(self) -> Result<WebRtcLimits, FieldError> {
        let defaults = WebRtcLimits::default();
        let limit = |field, value: Option<u32>, default, range| {
            in_range(field, value.unwrap_or(default), range)
        };
        Ok(WebRtcLimits {
            max_sessions: limit(
                "max_sessions",
                self.max_sessions,
                defaults.max_sessions,
                1..=1_000_000,
            )?,
            max_sessions_per_ip: limit(
                "max_sessions_per_ip",
                self.max_sessions_per_ip,
                defaults.max_sessions_per_ip,
                1..=1_000_000,
            )?,
            // Browsers' offers with every codec and extension are 5-10 KB.
            max_sdp_bytes: limit(
                "max_sdp_bytes",
                self.max_sdp_bytes,
                defaults.max_sdp_bytes,
                4096..=1024 * 1024,
            )?,
            connect_timeout_secs: limit(
                "connect_timeout_secs",
                self.connect_timeout_secs,
                defaults.connect_timeout_secs,
                1..=300,
            )?,
            socket_buffer_bytes: limit(
                "socket_buffer_bytes",
                self.socket_buffer_bytes,
                defaults.socket_buffer_bytes,
                65_536..=1024 * 1024 * 1024,
            )?,
            retransmission_window_ms: limit(
                "retransmission_window_ms",
                self.retransmission_window_ms,
                defaults.retransmission_window_ms,
                100..=10_000,
            )?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<WebRtcSettings, FieldError> {
        serde_json::from_str::<RawWebRtcSettings>(json)
            .map_err(|e| FieldError::new("json", e.to_string()))?
            .validate()
    }

    #[test]
    fn defaults_listen_on_8189_with_tcp() {
        let settings = parse("{}").unwrap();
        assert_eq!(settings.interfaces.len(), 1);
        assert_eq!(settings.interfaces[0].port, 8189);
        assert!(settings.tcp);
        assert!(settings.public_addresses.is_empty());
        assert_eq!(settings.limits, WebRtcLimits::default());
    }

    #[test]
    fn bad_values_name_their_field() {
        let error = parse(r#"{"public_addresses": ["example.com"]}"#).unwrap_err();
        assert!(error.to_string().contains("public_addresses[0]"), "{error}");
        let error = parse(r#"{"public_addresses": ["0.0.0.0"]}"#).unwrap_err();
        assert!(error.to_string().contains("public_addresses[0]"), "{error}");
        let error = parse(r#"{"interfaces": []}"#).unwrap_err();
        assert!(error.to_string().contains("interfaces"), "{error}");
        let error = parse(r#"{"limits": {"max_sdp_bytes": 10}}"#).unwrap_err();
        assert!(
            error.to_string().contains("limits.max_sdp_bytes"),
            "{error}"
        );
        let error = parse(r#"{"limits": {"socket_buffer_bytes": 1024}}"#).unwrap_err();
        assert!(
            error.to_string().contains("limits.socket_buffer_bytes"),
            "{error}"
        );
        let sized = parse(r#"{"limits": {"socket_buffer_bytes": 1048576}}"#).unwrap();
        assert_eq!(sized.limits.socket_buffer_bytes, 1_048_576);
        assert_eq!(sized.limits.retransmission_window_ms, 1000, "the default");
        let window = parse(r#"{"limits": {"retransmission_window_ms": 3000}}"#).unwrap();
        assert_eq!(window.limits.retransmission_window_ms, 3000);
        for out_of_range in [0, 99, 10_001] {
            let json = format!(r#"{{"limits": {{"retransmission_window_ms": {out_of_range}}}}}"#);
            let error = parse(&json).unwrap_err();
            assert!(
                error
                    .to_string()
                    .contains("limits.retransmission_window_ms"),
                "{error}"
            );
        }
        assert!(parse(r#"{"port": 1}"#).is_err(), "unknown keys are errors");
        let error = parse(r#"{"udp": false, "tcp": false}"#).unwrap_err();
        assert!(error.to_string().contains("udp"), "{error}");
        assert!(!parse(r#"{"udp": false}"#).unwrap().udp);
        let settings =
            parse(r#"{"interfaces": [{"ip": "127.0.0.1", "port": 9189}], "tcp": false, "public_addresses": ["203.0.113.5"]}"#)
                .unwrap();
        assert_eq!(settings.interfaces[0].port, 9189);
        assert!(!settings.tcp);
    }
}
