//! `Cameras`: MPEG-TS inputs over UDP, SRT and RIST. Those that listen (`udp`, and
//! `srt`/`rist` with receive mode `listen`) are bound by the supervisor and lent to the
//! ingest worker (`crate::listeners`).

use super::super::error::FieldError;
use super::fields::{check_media_name, check_name, each, unique};
use serde::Deserialize;
use std::net::IpAddr;
use strom_ipc::rules::CameraSettings;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCamera {
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

/// Validates the `Cameras` list: ids and streams are unique, and so is the local
/// address of every input that listens (two would fight over one socket).
pub(super) fn validate_all(list: Vec<RawCamera>) -> Result<Vec<CameraSettings>, FieldError> {
    let cameras = each(list, "Cameras", RawCamera::validate)?;
    unique(&cameras, "Cameras", "id", |camera| camera.id.clone())?;
    unique(&cameras, "Cameras", "stream", |c| {
        format!("{}/{}", c.app, c.stream)
    })?;
    let listening: Vec<Option<String>> = cameras
        .iter()
        .map(|c| {
            (!matches!(c.receive_mode.as_str(), "pull" | "rendezvous"))
                .then(|| format!("{}:{}", c.ip, c.port))
        })
        .collect();
    for (i, key) in listening.iter().enumerate() {
        let Some(key) = key else { continue };
        if let Some(j) = listening[..i].iter().position(|k| k.as_ref() == Some(key)) {
            let message = format!("\"{key}\" is already used by Cameras[{j}]");
            return Err(FieldError::new(format!("Cameras[{i}].port"), message));
        }
    }
    Ok(cameras)
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
            ("srt", Some("rendezvous")) => "rendezvous",
            ("srt" | "rist", Some(other)) => {
                let message = format!(
                    "expected \"listen\" or \"pull\" (\"rendezvous\" for srt), got {other:?}"
                );
                return Err(FieldError::new("receive_mode", message));
            }
            (other, _) => {
                let message = format!("expected \"udp\", \"srt\" or \"rist\", got {other:?}");
                return Err(FieldError::new("protocol", message));
            }
        };
        // A pulled input names the remote side, which may be a host name; otherwise `ip`
        // is the local address to receive on.
        if receive_mode == "rendezvous" {
            // The worker binds the local side itself: its address must be named.
            let local = self.parameters.iter().find(|p| p.name == "local_ip");
            if local.is_none_or(|p| p.value.parse::<IpAddr>().is_err()) {
                let message = "a rendezvous input needs the parameter local_ip (an IP address)";
                return Err(FieldError::new("parameters", message));
            }
        }
        if matches!(receive_mode, "pull" | "rendezvous") {
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
        let protocol = self.protocol.as_str();
        let parameters = each(self.parameters, "parameters", |p| match p.name.is_empty() {
            true => Err(FieldError::new("name", "must not be empty")),
            false => check_parameter(protocol, &p.name, &p.value).map(|()| (p.name, p.value)),
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

/// Checks the parameters whose values strom reads itself (the others go to libsrt,
/// librist or the socket as they are).
fn check_parameter(protocol: &str, name: &str, value: &str) -> Result<(), FieldError> {
    match (protocol, name) {
        ("srt", "idle_timeout_secs") => match value.parse::<u64>() {
            Ok(1..=3600) => Ok(()),
            _ => Err(FieldError::new(
                "value",
                format!(
                    "idle_timeout_secs: expected an integer (seconds) in 1..=3600, got {value:?}"
                ),
            )),
        },
        _ => Ok(()),
    }
}
