//! Options of a RIST receiver or sender ([`RistOptions`]) from `Cameras` parameters, and
//! the librist URL they make (`rist://@ip:port?...` to listen, `rist://host:port?...` to
//! call).

use super::RistError;
use super::ffi;
use libc::c_int;
use std::time::Duration;

/// Longest `secret` librist keeps (`RIST_MAX_STRING_SHORT` less the NUL).
const MAX_SECRET: usize = 127;
/// Longest `buffer` accepted, in milliseconds.
const MAX_BUFFER_MS: u32 = 30_000;
/// Longest `rist-stats-interval` accepted, in seconds.
const MAX_STATS_INTERVAL_S: u64 = 3_600;

/// The RIST profile. `Main` is the default, as for `ristsender`/`ristreceiver` and
/// ffmpeg's librist protocol; `Simple` uses two UDP ports (`port` and `port + 1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RistProfile {
    Simple,
    #[default]
    Main,
}

impl RistProfile {
    pub(super) fn raw(self) -> c_int {
        match self {
            RistProfile::Simple => ffi::RIST_PROFILE_SIMPLE,
            RistProfile::Main => ffi::RIST_PROFILE_MAIN,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RistOptions {
    pub profile: RistProfile,
    /// Recovery buffer in milliseconds (librist URL `buffer`; librist's default 1000).
    pub buffer_ms: Option<u32>,
    /// Pre-shared encryption secret (librist URL `secret`).
    pub secret: Option<String>,
    /// AES key size, 128 or 256 (librist URL `aes-type`); 128 when only `secret` is set.
    pub aes_type: Option<u32>,
    /// How often librist reports stats; `None`: no stats.
    pub stats_interval: Option<Duration>,
    /// librist's log level for this context (`rist-logging`).
    pub log_level: c_int,
}

impl Default for RistOptions {
    fn default() -> Self {
        Self {
            profile: RistProfile::Main,
            buffer_ms: None,
            secret: None,
            aes_type: None,
            stats_interval: None,
            log_level: ffi::RIST_LOG_WARN,
        }
    }
}

impl RistOptions {
    /// From `Cameras` parameters (name, value): `profile` (`simple`/`main`, or 0/1),
    /// `buffer` (ms), `secret`, `aes-type` (128/256), `rist-stats-interval` (seconds),
    /// `rist-logging` (`disable`, `error`, `warn` (default), `notice`, `info`,
    /// `debug`). Names are compared ASCII case-insensitively; unknown ones are ignored;
    /// bad values give [`RistError::Config`] naming the parameter.
    pub fn from_parameters(parameters: &[(String, String)]) -> Result<Self, RistError> {
        let mut options = RistOptions::default();
        for (name, value) in parameters {
            let name = name.trim().to_ascii_lowercase();
            let value = value.trim();
            let bad = || RistError::Config(format!("{name}: invalid value {value:?}"));
            match name.as_str() {
                "profile" => {
                    options.profile = match value.to_ascii_lowercase().as_str() {
                        "simple" | "0" => RistProfile::Simple,
                        "main" | "1" => RistProfile::Main,
                        _ => return Err(bad()),
                    }
                }
                "buffer" => {
                    let ms: u32 = value.parse().map_err(|_| bad())?;
                    if ms > MAX_BUFFER_MS {
                        return Err(bad());
                    }
                    options.buffer_ms = Some(ms);
                }
                // An empty secret means none.
                "secret" if !value.is_empty() => {
                    check_secret(value)?;
                    options.secret = Some(value.to_owned());
                }
                "aes-type" => {
                    options.aes_type = match value {
                        "128" => Some(128),
                        "256" => Some(256),
                        _ => return Err(bad()),
                    }
                }
                "rist-stats-interval" => {
                    let seconds: u64 = value.parse().map_err(|_| bad())?;
                    if !(1..=MAX_STATS_INTERVAL_S).contains(&seconds) {
                        return Err(bad());
                    }
                    options.stats_interval = Some(Duration::from_secs(seconds));
                }
                "rist-logging" => {
                    options.log_level = match value.to_ascii_lowercase().as_str() {
                        "disable" | "none" | "off" => ffi::RIST_LOG_DISABLE,
                        "error" => ffi::RIST_LOG_ERROR,
                        "warn" | "warning" => ffi::RIST_LOG_WARN,
                        "notice" => ffi::RIST_LOG_NOTICE,
                        "info" => ffi::RIST_LOG_INFO,
                        "debug" => ffi::RIST_LOG_DEBUG,
                        _ => return Err(bad()),
                    }
                }
                _ => {}
            }
        }
        if options.aes_type.is_some() && options.secret.is_none() {
            return Err(RistError::Config("aes-type needs a secret".into()));
        }
        Ok(options)
    }

    /// The librist URL of a peer at `host:port`: `rist://@host:port` when `listen`,
    /// `rist://host:port` otherwise (IPv6 addresses in brackets), with `buffer`,
    /// `secret` and `aes-type` as URL parameters.
    pub fn url(&self, host: &str, port: u16, listen: bool) -> String {
        let host = if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]")
        } else {
            host.to_owned()
        };
        let mut url = format!("rist://{}{host}:{port}", if listen { "@" } else { "" });
        let mut params = Vec::new();
        if let Some(ms) = self.buffer_ms {
            params.push(format!("buffer={ms}"));
        }
        if let Some(secret) = &self.secret {
            params.push(format!("secret={secret}"));
            params.push(format!("aes-type={}", self.aes_type.unwrap_or(128)));
        }
        if !params.is_empty() {
            url.push('?');
            url.push_str(&params.join("&"));
        }
        url
    }

    /// The stats interval in milliseconds as librist takes it.
    pub(super) fn stats_interval_ms(&self) -> Option<c_int> {
        self.stats_interval
            .map(|interval| c_int::try_from(interval.as_millis()).unwrap_or(c_int::MAX))
    }
}

/// A secret goes into the URL as is: 1..=127 printable ASCII characters, none of which
/// would end the parameter (`&`, `#`) or be taken for URL syntax.
fn check_secret(secret: &str) -> Result<(), RistError> {
    let fits = secret.len() <= MAX_SECRET
        && secret
            .bytes()
            .all(|b| b.is_ascii_graphic() && !b"&#?=%/@[]".contains(&b));
    if fits {
        Ok(())
    } else {
        Err(RistError::Config(format!(
            "secret must be 1 to {MAX_SECRET} printable ASCII characters without & # ? = % / @ [ ]"
        )))
    }
}
