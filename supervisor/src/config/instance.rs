//! `strom.conf`: the instance settings that need a restart to change (ports, paths,
//! management API, caches, logging).
//!
//! The format is `key = value` lines. `#` starts a comment at the start of a line or after
//! whitespace, so a value such as a token may contain `#` as long as it does not follow a
//! space. Blank lines are ignored and keys and values are trimmed. No key takes an empty
//! value: leave the key out (or comment it) to get its default. A line without `=`, an
//! unknown key, a key given twice and a bad value are errors naming the line and the key.
//!
//! Relative paths (`rules_path`, `data_dir`, `run_dir`, `ssl_certificate`,
//! `ssl_certificate_key`, `management_ssl_certificate`, `management_ssl_certificate_key`,
//! `drm_settings_path`, and the default `rules.conf`) are resolved
//! against the absolute directory that contains `strom.conf`, so that the packaged file
//! runs from a checkout and the result does not depend on a later change of directory.
//!
//! Over 800 lines on purpose: it is one table of keys, each with its parser, default and
//! message; split by key it would scatter what an operator reads as one list.

use super::error::ConfigError;
use super::origin::{AllowedHosts, Origin, parse_host_list, parse_origin_list};
use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceConfig {
    /// The file the settings came from, as given, for messages.
    pub path: PathBuf,
    /// HTTP delivery port (HLS, Icecast).
    pub port: u16,
    /// Where HTTP and HTTPS delivery listen.
    pub listen_interfaces: Vec<ListenAddress>,
    /// HTTPS delivery port; set together with the certificate and key.
    pub ssl_port: Option<u16>,
    /// PEM certificate chain for HTTPS and rtsps; re-read by `reload_ssl_certificates`.
    pub ssl_certificate: Option<PathBuf>,
    /// PEM private key for HTTPS.
    pub ssl_certificate_key: Option<PathBuf>,
    /// `None`: the management API is not served at all, as the spec requires.
    pub management_listen_interfaces: Option<Vec<ListenAddress>>,
    pub management_port: u16,
    /// `None`: management requests are not authenticated.
    pub management_token: Option<String>,
    /// The run-time rules (`rules.conf`), re-read on reload.
    pub rules_path: PathBuf,
    /// Persistent data: DVR archives and file cache.
    pub data_dir: PathBuf,
    /// Sockets and pid files that do not outlive the process.
    pub run_dir: PathBuf,
    /// tracing `EnvFilter` directive, e.g. `info,strom=debug`.
    pub logging: String,
    /// Control panel to fetch rules from (`sync_panel_settings`).
    pub panel_url: Option<String>,
    /// HLS encryption keys; `None`: no DRM.
    pub drm_settings_path: Option<PathBuf>,
    /// RAM the packager may spend on segments, in MiB (`max_ram_cache_size`).
    pub ram_cache_size_mb: u64,
    /// Disk the DVR may spend, in MiB (`max_file_cache_size`).
    pub file_cache_size_mb: u64,
    /// `Access-Control-Allow-Origin` for HTTP delivery, so browsers on other origins can
    /// play.
    pub access_control_allow_origin: Option<String>,
    /// Seconds an HLS viewer may go without a request before its session ends
    /// (`hls_session_timeout`).
    pub hls_session_timeout_secs: u32,
    /// Seconds the packager keeps an unpublished stream's HLS segments (memory and the
    /// `run_dir/hls` mirror) before freeing them (`hls_stream_grace`).
    pub hls_stream_grace_secs: u32,
    /// Bytes of the latest audio a new Icecast listener of an audio-only stream gets at
    /// once (`icecast_burst_size`, like icecast2's `burst-size`).
    pub icecast_burst_bytes: u32,
    /// Interfaces the ingest worker browses for NDI sources over mDNS
    /// (`ndi_discovery_interfaces`); `None`: no discovery, nothing listens on 5353.
    pub ndi_discovery_interfaces: Option<Vec<ListenAddress>>,
    /// Bounds on the HTTP delivery port's connections (`http_max_connections`,
    /// `http_max_connections_per_ip`, `http_header_timeout`).
    pub http_limits: strom_ipc::messages::HttpLimits,
    /// How the management listener treats its connections (`management_*` keys).
    pub management: ManagementServer,
    /// The Prometheus `/metrics` listener (`metrics_*` keys).
    pub metrics: MetricsSettings,
}

/// Where and how `/metrics` is served. Off unless `metrics_listen_interfaces` is set.
#[derive(Clone, PartialEq, Eq)]
pub struct MetricsSettings {
    /// `None`: no metrics listener at all (`metrics_listen_interfaces`).
    pub listen_interfaces: Option<Vec<ListenAddress>>,
    /// `metrics_port`, default 9108.
    pub port: u16,
    /// `Some`: every scrape needs `Authorization: Bearer <token>` (`metrics_token`).
    pub token: Option<String>,
}

impl Default for MetricsSettings {
    fn default() -> Self {
        Self {
            listen_interfaces: None,
            port: 9108,
            token: None,
        }
    }
}

/// Keeps the token out of logs and `{:?}` output.
impl fmt::Debug for MetricsSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetricsSettings")
            .field("listen_interfaces", &self.listen_interfaces)
            .field("port", &self.port)
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .finish()
    }
}

/// Bounds and TLS of the management API's connections: a client that connects and
/// trickles (slowloris), idles, or opens thousands of connections holds a bounded share
/// of the supervisor, which also needs descriptors to restart workers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManagementServer {
    /// A request head must be complete this long after its first byte
    /// (`management_header_timeout`).
    pub header_timeout_secs: u32,
    /// A connection with no request in progress, or whose client stopped reading the
    /// answer, is closed after this long (`management_idle_timeout`).
    pub idle_timeout_secs: u32,
    /// A request body must be complete this long after the handler starts reading it
    /// (`management_body_timeout`).
    pub body_timeout_secs: u32,
    /// Open management connections at most; more are accepted and closed at once
    /// (`management_max_connections`).
    pub max_connections: u32,
    /// Open management connections at most from one client address
    /// (`management_max_connections_per_ip`), so one client cannot take every place.
    pub max_connections_per_ip: u32,
    /// How long the API waits for each worker's answer (`management_worker_timeout`).
    pub worker_timeout_secs: u32,
    /// PEM certificate chain: set together with the key, the API speaks only HTTPS
    /// (`management_ssl_certificate`).
    pub ssl_certificate: Option<PathBuf>,
    /// PEM private key (`management_ssl_certificate_key`).
    pub ssl_certificate_key: Option<PathBuf>,
    /// Pages on these origins may call the API from a browser
    /// (`management_allowed_origins`); any other `Origin` is refused.
    pub allowed_origins: Vec<Origin>,
    /// `Host` names the API answers besides its own addresses
    /// (`management_allowed_hosts`); any other is refused (DNS rebinding).
    pub allowed_hosts: AllowedHosts,
}

impl Default for ManagementServer {
    fn default() -> Self {
        Self {
            header_timeout_secs: 10,
            idle_timeout_secs: 30,
            body_timeout_secs: 10,
            max_connections: 256,
            max_connections_per_ip: 32,
            worker_timeout_secs: 3,
            ssl_certificate: None,
            ssl_certificate_key: None,
            allowed_origins: Vec::new(),
            allowed_hosts: AllowedHosts::default(),
        }
    }
}

/// An address to listen on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListenAddress {
    /// `*`: every IPv4 interface (0.0.0.0). Write `::` for every IPv6 interface.
    Any,
    Ip(IpAddr),
}

impl fmt::Display for ListenAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListenAddress::Any => f.write_str("*"),
            ListenAddress::Ip(ip) => ip.fmt(f),
        }
    }
}

/// The socket addresses to bind for `list` on `port`; `Any` is the IPv4 wildcard
/// `0.0.0.0`.
pub fn socket_addrs(list: &[ListenAddress], port: u16) -> Vec<SocketAddr> {
    list.iter()
        .map(|address| match address {
            ListenAddress::Any => SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), port),
            ListenAddress::Ip(ip) => SocketAddr::new(*ip, port),
        })
        .collect()
}

/// Every key `strom.conf` accepts.
const KEYS: [&str; 37] = [
    "port",
    "listen_interfaces",
    "ssl_port",
    "ssl_certificate",
    "ssl_certificate_key",
    "management_listen_interfaces",
    "management_port",
    "management_token",
    "rules_path",
    "data_dir",
    "run_dir",
    "logging",
    "panel_url",
    "drm_settings_path",
    "max_ram_cache_size",
    "max_file_cache_size",
    "access_control_allow_origin",
    "hls_session_timeout",
    "hls_stream_grace",
    "icecast_burst_size",
    "http_max_connections",
    "http_max_connections_per_ip",
    "http_header_timeout",
    "management_header_timeout",
    "management_idle_timeout",
    "management_body_timeout",
    "management_max_connections",
    "management_max_connections_per_ip",
    "management_worker_timeout",
    "management_ssl_certificate",
    "management_ssl_certificate_key",
    "management_allowed_origins",
    "management_allowed_hosts",
    "ndi_discovery_interfaces",
    "metrics_listen_interfaces",
    "metrics_port",
    "metrics_token",
];

/// Upper bound of the cache sizes (1 PiB): keeps the byte count far from overflowing.
const MAX_CACHE_MB: u64 = 1 << 30;
/// icecast2's default `burst-size`: players with a 2-4 s pre-buffer start at once.
const DEFAULT_ICECAST_BURST_BYTES: u32 = 65_536;
/// The largest burst: all the audio a stream keeps for it
/// (`strom_stream::audio_history::MAX_AUDIO_BURST_BYTES`).
const MAX_ICECAST_BURST_BYTES: u32 = 512 * 1024;

/// Reads and validates `path`.
pub fn load(path: &Path) -> Result<InstanceConfig, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|error| ConfigError::io(path, error))?;
    parse(&text, path)
}

/// Validates `text` as the contents of `path`; relative paths in it are resolved against
/// the directory of `path`.
pub fn parse(text: &str, path: &Path) -> Result<InstanceConfig, ConfigError> {
    let base = std::path::absolute(path)
        .unwrap_or_else(|_| path.to_owned())
        .parent()
        .map(Path::to_owned)
        .unwrap_or_default();
    let mut config = InstanceConfig::defaults(path, &base);
    let mut lines: BTreeMap<&'static str, usize> = BTreeMap::new();
    for (index, raw) in text.trim_start_matches('\u{feff}').lines().enumerate() {
        let line = index + 1;
        let content = strip_comment(raw).trim();
        if content.is_empty() {
            continue;
        }
        let Some((key, value)) = content.split_once('=') else {
            return Err(ConfigError::MissingEquals {
                path: path.to_owned(),
                line,
            });
        };
        let (key, value) = (key.trim(), value.trim());
        let Some(known) = KEYS.into_iter().find(|k| *k == key) else {
            return Err(ConfigError::UnknownKey {
                path: path.to_owned(),
                line,
                key: key.to_owned(),
                suggestions: KEYS.into_iter().filter(|k| looks_like(key, k)).collect(),
            });
        };
        if let Some(&first_line) = lines.get(known) {
            return Err(ConfigError::DuplicateKey {
                path: path.to_owned(),
                line,
                key: known.to_owned(),
                first_line,
            });
        }
        lines.insert(known, line);
        let value_error = |message: String| ConfigError::Value {
            path: path.to_owned(),
            line,
            key: known.to_owned(),
            message,
        };
        if value.is_empty() {
            return Err(value_error(
                "empty value; leave the key out to use the default".to_owned(),
            ));
        }
        config.set(known, value, &base).map_err(value_error)?;
    }
    config.check_consistency(&lines)?;
    Ok(config)
}

/// Cuts a `#` comment that starts the line or follows whitespace.
fn strip_comment(line: &str) -> &str {
    let mut previous = ' ';
    for (at, c) in line.char_indices() {
        if c == '#' && previous.is_whitespace() {
            return &line[..at];
        }
        previous = c;
    }
    line
}

/// Whether `key` is plausibly a misspelling of `valid`.
fn looks_like(key: &str, valid: &str) -> bool {
    let key = key.to_ascii_lowercase();
    (key.len() >= 3 && valid.contains(&key)) || edit_distance(&key, valid) <= 2
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

impl InstanceConfig {
    fn defaults(path: &Path, base: &Path) -> Self {
        Self {
            path: path.to_owned(),
            port: 8081,
            listen_interfaces: vec![ListenAddress::Any],
            ssl_port: None,
            ssl_certificate: None,
            ssl_certificate_key: None,
            management_listen_interfaces: None,
            management_port: 8082,
            management_token: None,
            rules_path: base.join("rules.conf"),
            data_dir: PathBuf::from("/var/lib/strom"),
            run_dir: PathBuf::from("/run/strom"),
            logging: "info".to_owned(),
            panel_url: None,
            drm_settings_path: None,
            ram_cache_size_mb: 512,
            file_cache_size_mb: 10240,
            access_control_allow_origin: None,
            hls_session_timeout_secs: 60,
            hls_stream_grace_secs: 30,
            icecast_burst_bytes: DEFAULT_ICECAST_BURST_BYTES,
            ndi_discovery_interfaces: None,
            http_limits: strom_ipc::messages::HttpLimits::default(),
            management: ManagementServer::default(),
            metrics: MetricsSettings::default(),
        }
    }

    /// Applies one non-empty `value`; the error is the message without file and line.
    fn set(&mut self, key: &str, value: &str, base: &Path) -> Result<(), String> {
        let path = || base.join(value);
        match key {
            "port" => self.port = parse_port(value)?,
            "listen_interfaces" => self.listen_interfaces = parse_addresses(value)?,
            "ssl_port" => self.ssl_port = Some(parse_port(value)?),
            "ssl_certificate" => self.ssl_certificate = Some(path()),
            "ssl_certificate_key" => self.ssl_certificate_key = Some(path()),
            "management_listen_interfaces" => {
                self.management_listen_interfaces = Some(parse_addresses(value)?);
            }
            "management_port" => self.management_port = parse_port(value)?,
            "management_token" => self.management_token = Some(value.to_owned()),
            "rules_path" => self.rules_path = path(),
            "data_dir" => self.data_dir = path(),
            "run_dir" => self.run_dir = path(),
            "logging" => {
                let allowed = |c: char| c.is_ascii_alphanumeric() || "_=,:.-".contains(c);
                if !value.chars().all(allowed) {
                    return Err(format!(
                        "expected a tracing filter such as \"info\" or \"info,strom=debug\" \
                         (letters, digits and _=,:.-), got {value:?}"
                    ));
                }
                self.logging = value.to_owned();
            }
            "panel_url" => {
                let rest = value
                    .strip_prefix("http://")
                    .or_else(|| value.strip_prefix("https://"));
                if rest.is_none_or(str::is_empty) {
                    return Err(format!(
                        "expected an http:// or https:// URL, got {value:?}"
                    ));
                }
                self.panel_url = Some(value.to_owned());
            }
            "drm_settings_path" => self.drm_settings_path = Some(path()),
            "max_ram_cache_size" => self.ram_cache_size_mb = parse_megabytes(value)?,
            "max_file_cache_size" => self.file_cache_size_mb = parse_megabytes(value)?,
            "access_control_allow_origin" => {
                // It is sent verbatim as a header value.
                if !value.chars().all(|c| c.is_ascii_graphic() || c == ' ') {
                    return Err(format!(
                        "expected \"*\" or an origin such as \"https://example.com\", got {value:?}"
                    ));
                }
                self.access_control_allow_origin = Some(value.to_owned());
            }
            "hls_session_timeout" => {
                self.hls_session_timeout_secs = match value.parse::<u32>() {
                    Ok(secs) if (5..=86_400).contains(&secs) => secs,
                    _ => return Err(format!("expected seconds 5-86400, got {value:?}")),
                }
            }
            "hls_stream_grace" => {
                self.hls_stream_grace_secs = match value.parse::<u32>() {
                    Ok(secs) if (1..=86_400).contains(&secs) => secs,
                    _ => return Err(format!("expected seconds 1-86400, got {value:?}")),
                }
            }
            "icecast_burst_size" => {
                self.icecast_burst_bytes = match value.parse::<u32>() {
                    Ok(bytes) if bytes <= MAX_ICECAST_BURST_BYTES => bytes,
                    _ => {
                        return Err(format!(
                            "expected bytes 0-{MAX_ICECAST_BURST_BYTES}, got {value:?}"
                        ));
                    }
                }
            }
            "management_header_timeout" => {
                self.management.header_timeout_secs = parse_seconds(value, 1..=3_600)?;
            }
            "management_idle_timeout" => {
                self.management.idle_timeout_secs = parse_seconds(value, 1..=86_400)?;
            }
            "management_body_timeout" => {
                self.management.body_timeout_secs = parse_seconds(value, 1..=3_600)?;
            }
            "management_worker_timeout" => {
                self.management.worker_timeout_secs = parse_seconds(value, 1..=60)?;
            }
            "management_max_connections" => {
                self.management.max_connections = match value.parse::<u32>() {
                    Ok(count) if (1..=65_536).contains(&count) => count,
                    _ => return Err(format!("expected a number 1-65536, got {value:?}")),
                }
            }
            "management_max_connections_per_ip" => {
                self.management.max_connections_per_ip = parse_count(value, 1..=65_536)?;
            }
            "http_max_connections" => {
                self.http_limits.max_connections = parse_count(value, 1..=10_000_000)?;
            }
            "http_max_connections_per_ip" => {
                self.http_limits.max_connections_per_ip = parse_count(value, 1..=10_000_000)?;
            }
            "http_header_timeout" => {
                self.http_limits.header_timeout_secs = parse_seconds(value, 1..=3_600)?;
            }
            "management_ssl_certificate" => self.management.ssl_certificate = Some(path()),
            "management_ssl_certificate_key" => {
                self.management.ssl_certificate_key = Some(path());
            }
            "management_allowed_origins" => {
                self.management.allowed_origins = parse_origin_list(value)?;
            }
            "management_allowed_hosts" => {
                self.management.allowed_hosts = parse_host_list(value)?;
            }
            "ndi_discovery_interfaces" => {
                self.ndi_discovery_interfaces = Some(parse_addresses(value)?);
            }
            "metrics_listen_interfaces" => {
                self.metrics.listen_interfaces = Some(parse_addresses(value)?);
            }
            "metrics_port" => self.metrics.port = parse_port(value)?,
            "metrics_token" => {
                // Sent by Prometheus as `Authorization: Bearer <token>`: one header word.
                if !value.chars().all(|c| c.is_ascii_graphic()) {
                    return Err(
                        "expected printable ASCII without spaces (it travels in an HTTP header)"
                            .to_owned(),
                    );
                }
                self.metrics.token = Some(value.to_owned());
            }
            _ => return Err("unknown key".to_owned()),
        }
        Ok(())
    }

    /// Checks settings that depend on each other; `lines` maps the keys present to their
    /// lines.
    fn check_consistency(&self, lines: &BTreeMap<&'static str, usize>) -> Result<(), ConfigError> {
        let error = |key: &str, message: String| ConfigError::Value {
            path: self.path.clone(),
            line: lines.get(key).copied().unwrap_or_default(),
            key: key.to_owned(),
            message,
        };
        const TLS: [&str; 3] = ["ssl_port", "ssl_certificate", "ssl_certificate_key"];
        // Without ssl_port the certificate may serve rtsps alone (`RtspSettings`
        // `tls_interfaces`, checked against the rules at start and reload).
        let https = lines.contains_key("ssl_port");
        let wanted = if https { &TLS[..] } else { &TLS[1..] };
        let missing: Vec<&str> = wanted
            .iter()
            .copied()
            .filter(|k| !lines.contains_key(k))
            .collect();
        if let Some(present) = wanted.iter().copied().find(|k| lines.contains_key(k))
            && !missing.is_empty()
        {
            let what = if https { "HTTPS" } else { "the certificate" };
            return Err(error(
                present,
                format!("{what} also needs {}", missing.join(" and ")),
            ));
        }
        const MANAGEMENT_TLS: [&str; 2] = [
            "management_ssl_certificate",
            "management_ssl_certificate_key",
        ];
        match MANAGEMENT_TLS.map(|k| lines.contains_key(k)) {
            [true, false] => {
                return Err(error(
                    MANAGEMENT_TLS[0],
                    format!(
                        "HTTPS for the management API also needs {}",
                        MANAGEMENT_TLS[1]
                    ),
                ));
            }
            [false, true] => {
                return Err(error(
                    MANAGEMENT_TLS[1],
                    format!(
                        "HTTPS for the management API also needs {}",
                        MANAGEMENT_TLS[0]
                    ),
                ));
            }
            _ => {}
        }
        if self.ssl_port == Some(self.port) {
            return Err(error(
                "ssl_port",
                format!("{} is also the HTTP port", self.port),
            ));
        }
        if let Some(metrics) = &self.metrics.listen_interfaces {
            let key = if lines.contains_key("metrics_port") {
                "metrics_port"
            } else {
                "metrics_listen_interfaces"
            };
            let delivery = overlap(metrics, &self.listen_interfaces);
            let management = self
                .management_listen_interfaces
                .as_deref()
                .is_some_and(|management| overlap(metrics, management));
            for (taken, other, name) in [
                (delivery, Some(self.port), "HTTP delivery"),
                (delivery, self.ssl_port, "HTTPS delivery"),
                (management, Some(self.management_port), "management API"),
            ] {
                if taken && other == Some(self.metrics.port) {
                    return Err(error(
                        key,
                        format!(
                            "port {} is also the {name} port on the same interface",
                            self.metrics.port
                        ),
                    ));
                }
            }
        }
        if let Some(management) = &self.management_listen_interfaces
            && overlap(management, &self.listen_interfaces)
        {
            let key = if lines.contains_key("management_port") {
                "management_port"
            } else {
                "management_listen_interfaces"
            };
            for (other, name) in [(Some(self.port), "HTTP"), (self.ssl_port, "HTTPS")] {
                if other == Some(self.management_port) {
                    return Err(error(
                        key,
                        format!(
                            "port {} is also the {name} delivery port on the same interface",
                            self.management_port
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Every setting as `key = value` lines, for `strom check-config`. Unset options are
    /// commented out; the token is shown as `<set>`.
    pub fn effective_settings(&self) -> String {
        fn list(addresses: &[ListenAddress]) -> String {
            let names: Vec<String> = addresses.iter().map(ToString::to_string).collect();
            names.join(", ")
        }
        fn show<T: fmt::Display>(out: &mut String, key: &str, value: Option<T>) {
            // Writing to a String cannot fail.
            let _ = match value {
                Some(value) => writeln!(out, "{key} = {value}"),
                None => writeln!(out, "# {key} = (unset)"),
            };
        }
        let mut out = format!("# effective settings of {}\n", self.path.display());
        show(&mut out, "port", Some(self.port));
        show(
            &mut out,
            "listen_interfaces",
            Some(list(&self.listen_interfaces)),
        );
        show(&mut out, "ssl_port", self.ssl_port);
        show(
            &mut out,
            "ssl_certificate",
            self.ssl_certificate.as_ref().map(|p| p.display()),
        );
        let key = self.ssl_certificate_key.as_ref().map(|p| p.display());
        show(&mut out, "ssl_certificate_key", key);
        let management = self.management_listen_interfaces.as_deref().map(list);
        show(&mut out, "management_listen_interfaces", management);
        show(&mut out, "management_port", Some(self.management_port));
        show(
            &mut out,
            "management_token",
            self.management_token.as_ref().map(|_| "<set>"),
        );
        show(&mut out, "rules_path", Some(self.rules_path.display()));
        show(&mut out, "data_dir", Some(self.data_dir.display()));
        show(&mut out, "run_dir", Some(self.run_dir.display()));
        show(&mut out, "logging", Some(&self.logging));
        show(&mut out, "panel_url", self.panel_url.as_ref());
        show(
            &mut out,
            "drm_settings_path",
            self.drm_settings_path.as_ref().map(|p| p.display()),
        );
        show(&mut out, "max_ram_cache_size", Some(self.ram_cache_size_mb));
        show(
            &mut out,
            "max_file_cache_size",
            Some(self.file_cache_size_mb),
        );
        let origin = self.access_control_allow_origin.as_ref();
        show(&mut out, "access_control_allow_origin", origin);
        show(
            &mut out,
            "hls_session_timeout",
            Some(self.hls_session_timeout_secs),
        );
        show(
            &mut out,
            "hls_stream_grace",
            Some(self.hls_stream_grace_secs),
        );
        show(
            &mut out,
            "icecast_burst_size",
            Some(self.icecast_burst_bytes),
        );
        let http = &self.http_limits;
        show(&mut out, "http_max_connections", Some(http.max_connections));
        show(
            &mut out,
            "http_max_connections_per_ip",
            Some(http.max_connections_per_ip),
        );
        show(
            &mut out,
            "http_header_timeout",
            Some(http.header_timeout_secs),
        );
        let ndi = self.ndi_discovery_interfaces.as_deref().map(list);
        show(&mut out, "ndi_discovery_interfaces", ndi);
        let m = &self.management;
        show(
            &mut out,
            "management_header_timeout",
            Some(m.header_timeout_secs),
        );
        show(
            &mut out,
            "management_idle_timeout",
            Some(m.idle_timeout_secs),
        );
        show(
            &mut out,
            "management_body_timeout",
            Some(m.body_timeout_secs),
        );
        show(
            &mut out,
            "management_max_connections",
            Some(m.max_connections),
        );
        show(
            &mut out,
            "management_max_connections_per_ip",
            Some(m.max_connections_per_ip),
        );
        show(
            &mut out,
            "management_worker_timeout",
            Some(m.worker_timeout_secs),
        );
        let certificate = m.ssl_certificate.as_ref().map(|p| p.display());
        show(&mut out, "management_ssl_certificate", certificate);
        let key = m.ssl_certificate_key.as_ref().map(|p| p.display());
        show(&mut out, "management_ssl_certificate_key", key);
        let origins: Vec<String> = m.allowed_origins.iter().map(ToString::to_string).collect();
        let origins = (!origins.is_empty()).then(|| origins.join(", "));
        show(&mut out, "management_allowed_origins", origins);
        let hosts = (m.allowed_hosts != AllowedHosts::default()).then_some(&m.allowed_hosts);
        show(&mut out, "management_allowed_hosts", hosts);
        let metrics = self.metrics.listen_interfaces.as_deref().map(list);
        show(&mut out, "metrics_listen_interfaces", metrics);
        show(&mut out, "metrics_port", Some(self.metrics.port));
        let token = self.metrics.token.as_ref().map(|_| "<set>");
        show(&mut out, "metrics_token", token);
        out
    }
}

fn parse_port(value: &str) -> Result<u16, String> {
    match value.parse::<u16>() {
        Ok(port) if port != 0 => Ok(port),
        _ => Err(format!("expected a port number 1-65535, got {value:?}")),
    }
}

fn parse_seconds(value: &str, range: std::ops::RangeInclusive<u32>) -> Result<u32, String> {
    match value.parse::<u32>() {
        Ok(secs) if range.contains(&secs) => Ok(secs),
        _ => Err(format!(
            "expected seconds {}-{}, got {value:?}",
            range.start(),
            range.end()
        )),
    }
}

fn parse_count(value: &str, range: std::ops::RangeInclusive<u32>) -> Result<u32, String> {
    match value.parse::<u32>() {
        Ok(count) if range.contains(&count) => Ok(count),
        _ => Err(format!(
            "expected a number {}-{}, got {value:?}",
            range.start(),
            range.end()
        )),
    }
}

fn parse_megabytes(value: &str) -> Result<u64, String> {
    match value.parse::<u64>() {
        Ok(size) if (1..=MAX_CACHE_MB).contains(&size) => Ok(size),
        _ => Err(format!(
            "expected a size in megabytes 1-{MAX_CACHE_MB}, got {value:?}"
        )),
    }
}

/// `*`, or comma-separated IPv4/IPv6 addresses (IPv6 optionally in brackets).
fn parse_addresses(value: &str) -> Result<Vec<ListenAddress>, String> {
    if value == "*" {
        return Ok(vec![ListenAddress::Any]);
    }
    let mut addresses = Vec::new();
    for item in value.split(',').map(str::trim) {
        let bare = item
            .strip_prefix('[')
            .and_then(|rest| rest.strip_suffix(']'))
            .unwrap_or(item);
        let address = match bare.parse() {
            Ok(ip) => ListenAddress::Ip(ip),
            // Mixing them would make the specific binds collide with the wildcard.
            Err(_) if item == "*" => return Err("\"*\" cannot be combined with addresses".into()),
            Err(_) => {
                return Err(format!(
                    "expected \"*\" or comma-separated IP addresses, got {item:?}"
                ));
            }
        };
        if addresses.contains(&address) {
            return Err(format!("{item} is listed twice"));
        }
        addresses.push(address);
    }
    Ok(addresses)
}

/// Whether binding the same port on both lists would collide.
fn overlap(a: &[ListenAddress], b: &[ListenAddress]) -> bool {
    let any = |list: &[ListenAddress]| {
        list.iter().any(|address| match address {
            ListenAddress::Any => true,
            ListenAddress::Ip(ip) => ip.is_unspecified(),
        })
    };
    any(a) || any(b) || a.iter().any(|address| b.contains(address))
}

#[cfg(test)]
#[path = "instance_tests.rs"]
mod tests;
