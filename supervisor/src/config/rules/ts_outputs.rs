//! `TsOutputs`: live streams sent out as MPEG-TS over SRT, RIST and UDP by the ingest
//! worker. An `srt` output in `listen` mode is bound by the supervisor and lent to the
//! ingest worker (`crate::listeners`), like a listening SRT input; a `rist` listener is
//! bound by the worker itself (librist cannot adopt a lent socket).
//!
//! Every parameter value is a string, checked here so that the worker can trust it;
//! which parameters a protocol takes is [`allowed_parameters`].

use super::super::error::FieldError;
use super::fields::{check_media_name, check_name, each, unique};
use serde::Deserialize;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::ops::RangeInclusive;
use strom_ipc::rules::{CameraSettings, TsOutputSettings};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTsOutput {
    id: Option<String>,
    app: Option<String>,
    stream: Option<String>,
    protocol: String,
    mode: Option<String>,
    ip: String,
    port: u16,
    #[serde(default)]
    parameters: Vec<RawParameter>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawParameter {
    name: String,
    value: String,
}

const SRT_PARAMETERS: &[&str] = &[
    "latency",
    "passphrase",
    "pbkeylen",
    "maxbw",
    "max_callers",
    "player_wait_timeout_secs",
];
const RIST_PARAMETERS: &[&str] = &[
    "profile",
    "buffer",
    "secret",
    "aes-type",
    "rist-stats-interval",
    "rist-logging",
];
const UDP_PARAMETERS: &[&str] = &["ttl", "interface", "mux_rate", "pkt_size"];

/// The parameters an output of `protocol` takes.
fn allowed_parameters(protocol: &str) -> &'static [&'static str] {
    match protocol {
        "srt" => SRT_PARAMETERS,
        "rist" => RIST_PARAMETERS,
        _ => UDP_PARAMETERS,
    }
}

/// Characters a RIST secret cannot hold: it travels in a `rist://` URL's query.
const RIST_SECRET_FORBIDDEN: &[char] = &['&', '#', '?', '=', '%', '/', '@', '[', ']'];

/// Validates the `TsOutputs` list: ids are unique, and no listening output shares a
/// socket with another one or with a listening `Cameras` input.
pub(super) fn validate_all(
    list: Vec<RawTsOutput>,
    cameras: &[CameraSettings],
) -> Result<Vec<TsOutputSettings>, FieldError> {
    let outputs: Vec<TsOutputSettings> = list
        .into_iter()
        .enumerate()
        .map(|(i, raw)| {
            raw.validate(i + 1)
                .map_err(|e| e.under(&format!("TsOutputs[{i}]")))
        })
        .collect::<Result<_, _>>()?;
    unique(&outputs, "TsOutputs", "id", |output| output.id.clone())?;
    let cameras: Vec<(String, Option<IpAddr>, u16)> = cameras
        .iter()
        .enumerate()
        .filter(|(_, c)| !matches!(c.receive_mode.as_str(), "pull" | "rendezvous"))
        .map(|(j, c)| (format!("Cameras[{j}]"), c.ip.parse().ok(), c.port))
        .collect();
    let mut listening = cameras;
    for (i, output) in outputs.iter().enumerate() {
        if output.mode != "listen" {
            continue;
        }
        // Validation made `ip` an address for every output that listens.
        let ip = output.ip.parse::<IpAddr>().ok();
        if let Some((owner, ..)) = listening
            .iter()
            .find(|(_, other, port)| *port == output.port && same_socket(ip, *other))
        {
            let address = ip.map_or_else(
                || format!("{}:{}", output.ip, output.port),
                |ip| SocketAddr::new(ip, output.port).to_string(),
            );
            let message = format!("\"{address}\" collides with the listening socket of {owner}");
            return Err(FieldError::new(format!("TsOutputs[{i}].port"), message));
        }
        listening.push((format!("TsOutputs[{i}]"), ip, output.port));
    }
    Ok(outputs)
}

/// Whether sockets bound to `a` and `b` on one UDP port would collide: the same address,
/// or a wildcard of the same family (IPv6 listeners are bound v6-only).
fn same_socket(a: Option<IpAddr>, b: Option<IpAddr>) -> bool {
    let (Some(a), Some(b)) = (a, b) else {
        return false;
    };
    a == b || (a.is_ipv4() == b.is_ipv4() && (a.is_unspecified() || b.is_unspecified()))
}

impl RawTsOutput {
    /// `position` counts from 1 and names an output without an `id`.
    fn validate(self, position: usize) -> Result<TsOutputSettings, FieldError> {
        let id = self.id.unwrap_or_else(|| format!("ts-{position}"));
        check_name("id", &id)?;
        let protocol = self.protocol.as_str();
        if !matches!(protocol, "srt" | "rist" | "udp") {
            let message = format!("expected \"srt\", \"rist\" or \"udp\", got {protocol:?}");
            return Err(FieldError::new("protocol", message));
        }
        let mode = match (protocol, self.mode.as_deref()) {
            (_, None | Some("push")) => "push",
            ("srt" | "rist", Some("listen")) => "listen",
            ("udp", Some(other)) => {
                let message = format!("a udp output only pushes: expected \"push\", got {other:?}");
                return Err(FieldError::new("mode", message));
            }
            (_, Some(other)) => {
                let message = format!("expected \"listen\" or \"push\", got {other:?}");
                return Err(FieldError::new("mode", message));
            }
        };
        check_address(protocol, mode, &self.ip)?;
        if self.port == 0 {
            return Err(FieldError::new("port", "must be 1..=65535, got 0"));
        }
        let app = self.app.unwrap_or_default();
        let stream = self.stream.unwrap_or_default();
        let callers_choose = protocol == "srt" && mode == "listen";
        match (app.is_empty(), stream.is_empty()) {
            (true, true) if callers_choose => {}
            (true, true) => {
                let message =
                    "must be set (only an srt listener may leave app and stream to its callers)";
                return Err(FieldError::new("app", message));
            }
            (true, false) => return Err(FieldError::new("app", "must be set when stream is")),
            (false, true) => return Err(FieldError::new("stream", "must be set when app is")),
            (false, false) => {
                check_media_name("app", &app)?;
                check_media_name("stream", &stream)?;
            }
        }
        let parameters = each(self.parameters, "parameters", |p| {
            check_parameter(protocol, mode, &p.name, &p.value)?;
            Ok((p.name, p.value))
        })?;
        unique(&parameters, "parameters", "name", |(name, _)| name.clone())?;
        if parameters.iter().any(|(name, _)| name == "aes-type")
            && !parameters.iter().any(|(name, _)| name == "secret")
        {
            let message = "aes-type needs the parameter secret";
            return Err(FieldError::new("parameters", message));
        }
        Ok(TsOutputSettings {
            id,
            protocol: self.protocol,
            mode: mode.to_owned(),
            ip: self.ip,
            port: self.port,
            parameters,
            app,
            stream,
        })
    }
}

/// A listener binds `ip`, which must be a unicast or wildcard address; a pusher sends to
/// it, a host name allowed except for udp.
fn check_address(protocol: &str, mode: &str, ip: &str) -> Result<(), FieldError> {
    let address = ip.parse::<IpAddr>();
    if mode == "listen" {
        match address {
            Ok(address) if !address.is_multicast() => Ok(()),
            _ => {
                let message = format!("expected an IP address to listen on, got {ip:?}");
                Err(FieldError::new("ip", message))
            }
        }
    } else if protocol == "udp" {
        match address {
            Ok(address) if !address.is_unspecified() => Ok(()),
            _ => {
                let message = format!("expected a destination IP address, got {ip:?}");
                Err(FieldError::new("ip", message))
            }
        }
    } else if ip.is_empty()
        || ip.chars().any(|c| c.is_whitespace() || c.is_control())
        || address.is_ok_and(|a| a.is_unspecified())
    {
        let message = format!("expected a destination host name or IP address, got {ip:?}");
        Err(FieldError::new("ip", message))
    } else {
        Ok(())
    }
}

/// Checks one parameter; errors are placed under `name` (unknown or misplaced) or
/// `value`.
fn check_parameter(protocol: &str, mode: &str, name: &str, value: &str) -> Result<(), FieldError> {
    let bad = |why: String| Err(FieldError::new("value", format!("{name}: {why}")));
    let number = |range: RangeInclusive<u64>, unit: &str| match value.parse::<u64>() {
        Ok(n) if range.contains(&n) => Ok(()),
        _ => bad(format!(
            "expected an integer{unit} in {}..={}, got {value:?}",
            range.start(),
            range.end()
        )),
    };
    let one_of = |allowed: &[&str]| {
        if allowed.contains(&value) {
            Ok(())
        } else {
            bad(format!(
                "expected one of {}, got {value:?}",
                allowed.join(", ")
            ))
        }
    };
    match (protocol, name) {
        ("srt", "latency") => number(0..=60_000, " (ms)"),
        ("srt", "passphrase") => match value.chars().count() {
            10..=79 => Ok(()),
            n => bad(format!("must be 10..=79 characters, got {n}")),
        },
        ("srt", "pbkeylen") => one_of(&["16", "24", "32"]),
        ("srt", "maxbw") => match value.parse::<i64>() {
            Ok(n) if n >= 0 => Ok(()),
            _ => bad(format!(
                "expected an integer >= 0 (bytes per second), got {value:?}"
            )),
        },
        ("srt", "max_callers") if mode != "listen" => Err(FieldError::new(
            "name",
            "max_callers is only for an srt output in listen mode",
        )),
        ("srt", "max_callers") => number(1..=1000, ""),
        ("srt", "player_wait_timeout_secs") if mode != "listen" => Err(FieldError::new(
            "name",
            "player_wait_timeout_secs is only for an srt output in listen mode",
        )),
        ("srt", "player_wait_timeout_secs") => number(1..=300, " (seconds)"),
        ("rist", "profile") => one_of(&["simple", "main"]),
        ("rist", "buffer") => number(0..=30_000, " (ms)"),
        ("rist", "secret") => {
            let printable = value.chars().all(|c| c.is_ascii_graphic());
            let forbidden = value.chars().any(|c| RIST_SECRET_FORBIDDEN.contains(&c));
            if (1..=127).contains(&value.len()) && printable && !forbidden {
                Ok(())
            } else {
                bad(
                    "expected 1..=127 printable ASCII characters, without spaces or any of \
                     & # ? = % / @ [ ]"
                        .to_owned(),
                )
            }
        }
        ("rist", "aes-type") => one_of(&["128", "256"]),
        ("rist", "rist-stats-interval") => number(1..=3600, " (seconds)"),
        ("rist", "rist-logging") => {
            one_of(&["disable", "error", "warn", "notice", "info", "debug"])
        }
        ("udp", "ttl") => number(1..=255, ""),
        ("udp", "interface") => match value.parse::<Ipv4Addr>() {
            Ok(_) => Ok(()),
            Err(_) => bad(format!("expected an IPv4 address, got {value:?}")),
        },
        ("udp", "mux_rate") => number(100_000..=1_000_000_000, " (bits per second)"),
        ("udp", "pkt_size") => match value.parse::<u32>() {
            Ok(size) if size > 0 && size <= 1316 && size % 188 == 0 => Ok(()),
            _ => bad(format!(
                "expected 1316 or a multiple of 188 up to it, got {value:?}"
            )),
        },
        _ => {
            let message = format!(
                "unknown parameter {name:?} for {protocol}; expected one of {}",
                allowed_parameters(protocol).join(", ")
            );
            Err(FieldError::new("name", message))
        }
    }
}
