//! Web origins and host names as the management API compares them: the values of
//! `management_allowed_origins` and `management_allowed_hosts`, and the `Origin` and
//! `Host` headers of requests (see `crate::management::cross_site`).
//!
//! Only `std`: the fuzz target `config_files` compiles this module by path.

use std::fmt;
use std::net::IpAddr;

/// A web origin, normalised so that two spellings of one origin compare equal: the scheme
/// and host in lower case, the port always explicit (`https://a.example` is
/// `https://a.example:443`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Origin {
    /// `http` or `https`.
    pub scheme: &'static str,
    pub host: Host,
    pub port: u16,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}:{}", self.scheme, self.host, self.port)
    }
}

/// The host part of an origin or of a `Host` header.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    Ip(IpAddr),
    /// A DNS name in lower case, without a trailing dot.
    Name(String),
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
            Host::Ip(ip) => ip.fmt(f),
            Host::Name(name) => f.write_str(name),
        }
    }
}

/// The default port of `scheme`.
pub fn default_port(scheme: &str) -> u16 {
    if scheme == "https" { 443 } else { 80 }
}

/// Parses `scheme://host[:port]` (a trailing `/` is tolerated in configuration, where it
/// is a common way of writing an origin; browsers never send one).
pub fn parse_origin(text: &str) -> Result<Origin, String> {
    let lower = text.trim().to_ascii_lowercase();
    let (scheme, rest) = if let Some(rest) = lower.strip_prefix("https://") {
        ("https", rest)
    } else if let Some(rest) = lower.strip_prefix("http://") {
        ("http", rest)
    } else {
        return Err(format!(
            "expected an origin such as \"https://panel.example.com\" (http or https), got {text:?}"
        ));
    };
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    if authority.contains(['/', '?', '#', '@']) {
        return Err(format!(
            "expected scheme://host[:port] without a path, query or login, got {text:?}"
        ));
    }
    let (host, port) =
        split_host_port(authority).map_err(|why| format!("{why} in origin {text:?}"))?;
    Ok(Origin {
        scheme,
        host,
        port: port.unwrap_or_else(|| default_port(scheme)),
    })
}

/// Parses a `Host` header value or a configured host name: `name`, `name:port`, an IPv4
/// address, `[v6]` or `[v6]:port`; a bare IPv6 address is accepted too (configuration).
pub fn split_host_port(text: &str) -> Result<(Host, Option<u16>), String> {
    let (host, port) = if let Some(bracketed) = text.strip_prefix('[') {
        let Some((inside, after)) = bracketed.split_once(']') else {
            return Err("unclosed '['".to_owned());
        };
        let ip: std::net::Ipv6Addr = inside
            .parse()
            .map_err(|_| format!("{inside:?} is not an IPv6 address"))?;
        let port = match after {
            "" => None,
            _ => Some(after.strip_prefix(':').ok_or("text after ']'")?),
        };
        (Host::Ip(IpAddr::V6(ip)), port)
    } else if let Ok(ip) = text.parse::<std::net::Ipv6Addr>() {
        (Host::Ip(IpAddr::V6(ip)), None)
    } else {
        let (name, port) = match text.split_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (text, None),
        };
        (parse_name(name)?, port)
    };
    let port = match port {
        None => None,
        Some(digits) => match digits.parse::<u16>() {
            Ok(port) if port != 0 && digits.bytes().all(|b| b.is_ascii_digit()) => Some(port),
            _ => return Err(format!("bad port {digits:?}")),
        },
    };
    Ok((host, port))
}

/// An IPv4 address or a DNS name (letters, digits, `-`, `_`, dots; a trailing dot is
/// dropped).
fn parse_name(text: &str) -> Result<Host, String> {
    if let Ok(ip) = text.parse::<std::net::Ipv4Addr>() {
        return Ok(Host::Ip(IpAddr::V4(ip)));
    }
    let name = text.strip_suffix('.').unwrap_or(text).to_ascii_lowercase();
    let label_ok = |label: &str| {
        !label.is_empty()
            && label.len() <= 63
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    if name.is_empty() || name.len() > 253 || !name.split('.').all(label_ok) {
        return Err(format!("{text:?} is not a host name or address"));
    }
    Ok(Host::Name(name))
}

/// `management_allowed_origins`: comma-separated origins.
pub fn parse_origin_list(value: &str) -> Result<Vec<Origin>, String> {
    let mut origins = Vec::new();
    for item in value.split(',').map(str::trim) {
        let origin = parse_origin(item)?;
        if origins.contains(&origin) {
            return Err(format!("{item} is listed twice"));
        }
        origins.push(origin);
    }
    Ok(origins)
}

/// `management_allowed_hosts`: `*` (any `Host`), or comma-separated host names or
/// addresses, without ports (a name is accepted on every port: the port a client sees
/// can differ behind a proxy or NAT).
pub fn parse_host_list(value: &str) -> Result<AllowedHosts, String> {
    if value == "*" {
        return Ok(AllowedHosts::Any);
    }
    let mut hosts = Vec::new();
    for item in value.split(',').map(str::trim) {
        if item == "*" {
            return Err("\"*\" cannot be combined with names".to_owned());
        }
        let host = match split_host_port(item) {
            Ok((host, None)) => host,
            Ok((_, Some(_))) => {
                return Err(format!(
                    "expected a host name without a port (every port is accepted), got {item:?}"
                ));
            }
            Err(why) => return Err(format!("expected host names or addresses: {why}")),
        };
        if hosts.contains(&host) {
            return Err(format!("{item} is listed twice"));
        }
        hosts.push(host);
    }
    Ok(AllowedHosts::Listed(hosts))
}

/// Which `Host` headers the management API answers besides its own addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowedHosts {
    /// `management_allowed_hosts = *`: the check is off.
    Any,
    Listed(Vec<Host>),
}

impl Default for AllowedHosts {
    fn default() -> Self {
        AllowedHosts::Listed(Vec::new())
    }
}

impl fmt::Display for AllowedHosts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AllowedHosts::Any => f.write_str("*"),
            AllowedHosts::Listed(hosts) => {
                let names: Vec<String> = hosts.iter().map(ToString::to_string).collect();
                f.write_str(&names.join(", "))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_normalise_case_and_default_ports() {
        let a = parse_origin("HTTPS://Panel.Example.com").unwrap();
        assert_eq!(a, parse_origin("https://panel.example.com:443/").unwrap());
        assert_eq!(a.to_string(), "https://panel.example.com:443");
        let v6 = parse_origin("http://[::1]:8082").unwrap();
        assert_eq!(v6.host, Host::Ip("::1".parse().unwrap()));
        assert_eq!(v6.port, 8082);
        for bad in [
            "panel.example.com",
            "ftp://a",
            "https://a/path",
            "https://u@a",
            "https://a:99999",
            "https://a:5x4",
            "https://",
            "null",
            "https://[::1",
        ] {
            assert!(parse_origin(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn host_headers_with_and_without_ports() {
        let ip = |text: &str| Host::Ip(text.parse().unwrap());
        assert_eq!(
            split_host_port("127.0.0.1:8082").unwrap(),
            (ip("127.0.0.1"), Some(8082))
        );
        assert_eq!(split_host_port("[::1]").unwrap(), (ip("::1"), None));
        assert_eq!(split_host_port("[::1]:80").unwrap(), (ip("::1"), Some(80)));
        assert_eq!(
            split_host_port("LocalHost.").unwrap(),
            (Host::Name("localhost".into()), None)
        );
        for bad in ["", "a b", "[::1]x", "a:", "a:+1", "evil.example:0", "a..b"] {
            assert!(split_host_port(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn host_lists() {
        assert_eq!(parse_host_list("*").unwrap(), AllowedHosts::Any);
        let listed = parse_host_list("media.example.com, 203.0.113.5, ::1").unwrap();
        assert_eq!(listed.to_string(), "media.example.com, 203.0.113.5, [::1]");
        assert!(parse_host_list("a.example:8082").is_err());
        assert!(parse_host_list("a, *").is_err());
        assert!(parse_host_list("a, A").is_err());
        assert!(parse_origin_list("https://a, https://A:443").is_err());
    }
}
