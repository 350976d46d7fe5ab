//! Where an outgoing RTMP connection goes: host, port and whether it is RTMPS, and the
//! `rtmp://host[:port]/app/stream` URLs of pulled sources.

use std::fmt;

pub const RTMP_PORT: u16 = 1935;
pub const RTMPS_PORT: u16 = 443;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// A host name or an IP address (IPv6 without brackets).
    pub host: String,
    pub port: u16,
    /// RTMPS: RTMP inside TLS.
    pub tls: bool,
}

impl Endpoint {
    /// The `tcUrl` of a connect to `app` (which may carry its `?query`).
    pub fn tc_url(&self, app: &str) -> String {
        format!("{self}/{app}")
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.tls { "rtmps" } else { "rtmp" };
        if self.host.contains(':') {
            write!(f, "{scheme}://[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{scheme}://{}:{}", self.host, self.port)
        }
    }
}

/// A parsed `rtmp://host[:port]/app/stream`: the app is the first path segment (with its
/// `?query` if it has one), the stream everything after it (with its query), as ffmpeg and
/// librtmp split such URLs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RtmpUrl {
    pub endpoint: Endpoint,
    pub app: String,
    pub stream: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not an rtmp://host[:port]/app/stream URL ({why}): {url:?}")]
pub struct UrlError {
    url: String,
    why: &'static str,
}

impl RtmpUrl {
    pub fn parse(url: &str) -> Result<Self, UrlError> {
        let bad = |why| UrlError {
            url: url.to_owned(),
            why,
        };
        let (tls, rest) = if let Some(rest) = url.strip_prefix("rtmp://") {
            (false, rest)
        } else if let Some(rest) = url.strip_prefix("rtmps://") {
            (true, rest)
        } else {
            return Err(bad("scheme"));
        };
        let (authority, path) = rest.split_once('/').ok_or_else(|| bad("no app"))?;
        let (host, port) = split_authority(authority).ok_or_else(|| bad("host or port"))?;
        let (app, stream) = path.split_once('/').ok_or_else(|| bad("no stream"))?;
        if app.is_empty() || stream.is_empty() {
            return Err(bad("empty app or stream"));
        }
        Ok(Self {
            endpoint: Endpoint {
                host: host.to_owned(),
                port: port.unwrap_or(if tls { RTMPS_PORT } else { RTMP_PORT }),
                tls,
            },
            app: app.to_owned(),
            stream: stream.to_owned(),
        })
    }
}

/// `host`, `host:port`, `[v6]`, `[v6]:port`; `None` when malformed.
pub fn split_authority(authority: &str) -> Option<(&str, Option<u16>)> {
    let (host, port) = match authority.strip_prefix('[') {
        Some(bracketed) => {
            let (host, after) = bracketed.split_once(']')?;
            match after {
                "" => (host, None),
                _ => (host, Some(after.strip_prefix(':')?)),
            }
        }
        None => match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        },
    };
    if host.is_empty() {
        return None;
    }
    let port = match port {
        None => None,
        Some(port) => Some(port.parse::<u16>().ok().filter(|&p| p != 0)?),
    };
    Some((host, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_pull_urls() {
        let url = RtmpUrl::parse("rtmp://origin.example:1936/live/cam?token=1").unwrap();
        assert_eq!(url.endpoint.host, "origin.example");
        assert_eq!((url.endpoint.port, url.endpoint.tls), (1936, false));
        assert_eq!(
            (url.app.as_str(), url.stream.as_str()),
            ("live", "cam?token=1")
        );
        let url = RtmpUrl::parse("rtmps://[::1]/app?x=1/a/b").unwrap();
        assert_eq!(url.endpoint.host, "::1");
        assert_eq!((url.endpoint.port, url.endpoint.tls), (443, true));
        assert_eq!((url.app.as_str(), url.stream.as_str()), ("app?x=1", "a/b"));
        assert_eq!(url.endpoint.tc_url(&url.app), "rtmps://[::1]:443/app?x=1");
        assert_eq!(
            RtmpUrl::parse("rtmp://h/live").map(|_| ()).unwrap_err().why,
            "no stream"
        );
        for bad in [
            "http://h/a/b",
            "rtmp://h:0/a/b",
            "rtmp://h:x/a/b",
            "rtmp:///a/b",
            "rtmp://h/a/",
        ] {
            assert!(RtmpUrl::parse(bad).is_err(), "{bad}");
        }
    }
}
