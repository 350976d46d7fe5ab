//! The management API's guard against browsers acting for someone else: cross-site
//! requests (a page on another origin posting `no-cors` `text/plain` bodies that create
//! re-publishing rules or start a drain) and DNS rebinding (a page whose own name now
//! resolves to this server, reading the answers).
//!
//! Every request passes here before any handler, whatever the token setting (a token in
//! a console's URL does not stop a forged request that reuses the browser's page):
//!
//! - its `Host` must name the listener: the local address of the accepted connection
//!   (any port), `localhost` when that address is loopback, or a name of
//!   `management_allowed_hosts`; otherwise 421 Misdirected Request. A rebinding page
//!   always sends its own name, so it never gets an answer. A request without `Host`
//!   comes from no browser and passes (`GET /health` passes too: load balancers send
//!   whatever `Host` their check is written with, and it answers nothing secret);
//! - an `Origin` must be the API's own (`http[s]://<Host>`, so the web console at
//!   `/console/` keeps working) or one of `management_allowed_origins`; otherwise 403.
//!   `Sec-Fetch-Site: cross-site` without an allowed `Origin` is refused the same way
//!   (top-level navigations and `no-cors` reads carry no `Origin` on GET).
//!
//! Requests without `Origin` (curl, panels and monitoring calling from servers) are
//! served as before. Allowed origins get CORS headers, and their preflights are answered,
//! so a panel served elsewhere can call the API from the browser.

use crate::config::origin::{
    AllowedHosts, Host, Origin, default_port, parse_origin, split_host_port,
};
use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, Response, StatusCode, header};
use std::net::{IpAddr, SocketAddr};

use super::RateLimitedLog;

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The `Host` header names neither this listener nor an allowed host.
    Host(String),
    /// The `Origin` header is neither the API's own nor an allowed one.
    Origin(String),
    /// `Sec-Fetch-Site: cross-site` from an origin that is not allowed.
    CrossSite,
}

/// What the guard decided for a request that may go on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Same origin, or no `Origin` at all: served as is.
    Pass,
    /// A page on an allowed origin: served with CORS headers for it.
    AllowedOrigin(HeaderValue),
}

/// The settings of the guard, shared by a listener's connections.
#[derive(Debug)]
pub struct CrossSite {
    allowed_origins: Vec<Origin>,
    allowed_hosts: AllowedHosts,
    /// The listener speaks HTTPS: its own origin is `https://...`.
    https: bool,
    host_log: RateLimitedLog,
    origin_log: RateLimitedLog,
}

/// How long a browser may cache a preflight's answer.
const PREFLIGHT_MAX_AGE: &str = "600";

impl CrossSite {
    pub fn new(allowed_origins: Vec<Origin>, allowed_hosts: AllowedHosts, https: bool) -> Self {
        Self {
            allowed_origins,
            allowed_hosts,
            https,
            host_log: RateLimitedLog::new(std::time::Duration::from_secs(10)),
            origin_log: RateLimitedLog::new(std::time::Duration::from_secs(10)),
        }
    }

    /// Decides on a request that arrived on a connection whose local address is `local`.
    pub fn check(
        &self,
        method: &Method,
        path: &str,
        headers: &HeaderMap,
        local: SocketAddr,
    ) -> Result<Verdict, Refusal> {
        let host = match headers.get(header::HOST) {
            None => None,
            Some(value) => {
                let text = value.to_str().unwrap_or_default();
                match split_host_port(text) {
                    Ok(parsed) => Some(parsed),
                    Err(_) => return Err(Refusal::Host(printable(value))),
                }
            }
        };
        let health = *method == Method::GET && path == "/health";
        if let Some((name, _)) = &host
            && !health
            && !self.host_allowed(name, local.ip())
        {
            return Err(Refusal::Host(
                headers.get(header::HOST).map(printable).unwrap_or_default(),
            ));
        }
        if let Some(value) = headers.get(header::ORIGIN) {
            let origin = value.to_str().ok().and_then(|text| parse_origin(text).ok());
            let Some(origin) = origin else {
                return Err(Refusal::Origin(printable(value)));
            };
            if self.allowed_origins.contains(&origin) {
                return Ok(Verdict::AllowedOrigin(value.clone()));
            }
            if !self.is_own(&origin, host.as_ref(), local) {
                return Err(Refusal::Origin(printable(value)));
            }
            return Ok(Verdict::Pass);
        }
        let cross_site = headers
            .get("sec-fetch-site")
            .is_some_and(|value| value.as_bytes().eq_ignore_ascii_case(b"cross-site"));
        if cross_site && !health {
            return Err(Refusal::CrossSite);
        }
        Ok(Verdict::Pass)
    }

    fn host_allowed(&self, host: &Host, local: IpAddr) -> bool {
        let local = local.to_canonical();
        match host {
            Host::Ip(ip) if ip.to_canonical() == local => return true,
            Host::Name(name) if name == "localhost" && local.is_loopback() => return true,
            _ => {}
        }
        match &self.allowed_hosts {
            AllowedHosts::Any => true,
            AllowedHosts::Listed(hosts) => hosts.contains(host),
        }
    }

    /// Whether `origin` is the API's own: this listener's scheme, and the host and port
    /// the request was sent to (its `Host`, already checked, or the local address).
    fn is_own(
        &self,
        origin: &Origin,
        host: Option<&(Host, Option<u16>)>,
        local: SocketAddr,
    ) -> bool {
        let scheme = if self.https { "https" } else { "http" };
        if origin.scheme != scheme {
            return false;
        }
        match host {
            Some((name, port)) => {
                origin.host == *name && origin.port == port.unwrap_or_else(|| default_port(scheme))
            }
            None => {
                origin.host == Host::Ip(local.ip().to_canonical()) && origin.port == local.port()
            }
        }
    }

    /// The answer to a refused request, with one WARN line per kind at most every 10 s.
    pub fn refuse(&self, refusal: &Refusal, peer: SocketAddr, path: &str) -> Response<Body> {
        let (code, status, error, log) = match refusal {
            Refusal::Host(host) => (
                StatusCode::MISDIRECTED_REQUEST,
                "MisdirectedRequest",
                format!(
                    "Host {host:?} does not name this server; add it to management_allowed_hosts in strom.conf if clients reach the API by that name"
                ),
                &self.host_log,
            ),
            Refusal::Origin(origin) => (
                StatusCode::FORBIDDEN,
                "Forbidden",
                format!(
                    "cross-site request from Origin {origin:?} refused; add the origin to management_allowed_origins in strom.conf if a page there may use the API"
                ),
                &self.origin_log,
            ),
            Refusal::CrossSite => (
                StatusCode::FORBIDDEN,
                "Forbidden",
                "cross-site request (Sec-Fetch-Site: cross-site) refused".to_owned(),
                &self.origin_log,
            ),
        };
        if let Some(suppressed) = log.note() {
            tracing::warn!(%peer, path, refused_since_last_line = suppressed, "management request refused: {error}");
        }
        let body = serde_json::json!({ "status": status, "error": error }).to_string();
        let mut response = Response::new(Body::from(body));
        *response.status_mut() = code;
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        response
    }
}

/// The answer to a CORS preflight (`OPTIONS` with `Access-Control-Request-Method`) from
/// an allowed origin; `None` for any other request.
pub fn preflight(
    method: &Method,
    headers: &HeaderMap,
    origin: &HeaderValue,
) -> Option<Response<Body>> {
    if *method != Method::OPTIONS || !headers.contains_key(header::ACCESS_CONTROL_REQUEST_METHOD) {
        return None;
    }
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::NO_CONTENT;
    let out = response.headers_mut();
    add_cors(out, origin);
    out.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, DELETE"),
    );
    out.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("Content-Type"),
    );
    out.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static(PREFLIGHT_MAX_AGE),
    );
    Some(response)
}

/// Lets the allowed `origin` read the answer.
pub fn add_cors(headers: &mut HeaderMap, origin: &HeaderValue) {
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
    headers.append(header::VARY, HeaderValue::from_static("Origin"));
}

/// A header value for a log line and an error body: printable ASCII, at most 100 bytes.
fn printable(value: &HeaderValue) -> String {
    let mut text: String = value
        .as_bytes()
        .iter()
        .map(|&b| {
            if b.is_ascii_graphic() || b == b' ' {
                b as char
            } else {
                '?'
            }
        })
        .collect();
    text.truncate(100);
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::origin::parse_host_list;

    fn local() -> SocketAddr {
        "127.0.0.1:8082".parse().unwrap()
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    fn plain() -> CrossSite {
        CrossSite::new(Vec::new(), AllowedHosts::default(), false)
    }

    fn post(guard: &CrossSite, pairs: &[(&'static str, &str)]) -> Result<Verdict, Refusal> {
        guard.check(&Method::POST, "/manage/drain", &headers(pairs), local())
    }

    #[test]
    fn hosts_of_the_listener_pass_others_are_refused() {
        let guard = plain();
        for host in ["127.0.0.1:8082", "127.0.0.1", "localhost:8082", "LOCALHOST"] {
            assert_eq!(post(&guard, &[("host", host)]), Ok(Verdict::Pass), "{host}");
        }
        assert_eq!(post(&guard, &[]), Ok(Verdict::Pass), "no Host: no browser");
        for host in [
            "evil.example",
            "evil.example:8082",
            "127.0.0.2:8082",
            "[::1]:8082",
            "a b",
        ] {
            assert!(
                matches!(post(&guard, &[("host", host)]), Err(Refusal::Host(_))),
                "{host}"
            );
        }
        // IPv6 listener, and a v4 client on a dual-stack socket.
        let v6: SocketAddr = "[::1]:8082".parse().unwrap();
        let ok = |host: &str, at: SocketAddr| {
            guard.check(
                &Method::GET,
                "/manage/workers",
                &headers(&[("host", host)]),
                at,
            )
        };
        assert_eq!(ok("[::1]:8082", v6), Ok(Verdict::Pass));
        assert_eq!(ok("[::1]", v6), Ok(Verdict::Pass));
        assert_eq!(ok("localhost", v6), Ok(Verdict::Pass));
        let mapped: SocketAddr = "[::ffff:10.0.0.7]:8082".parse().unwrap();
        assert_eq!(ok("10.0.0.7:8082", mapped), Ok(Verdict::Pass));
        // `localhost` only where the listener is loopback.
        let public: SocketAddr = "10.0.0.7:8082".parse().unwrap();
        assert!(ok("localhost", public).is_err());
        // Load balancers' health checks.
        assert_eq!(
            guard.check(
                &Method::GET,
                "/health",
                &headers(&[("host", "lb.internal")]),
                local()
            ),
            Ok(Verdict::Pass)
        );
    }

    #[test]
    fn configured_hosts_pass() {
        let guard = CrossSite::new(
            Vec::new(),
            parse_host_list("media.example.com").unwrap(),
            false,
        );
        assert_eq!(
            post(&guard, &[("host", "Media.Example.com:443")]),
            Ok(Verdict::Pass)
        );
        assert!(post(&guard, &[("host", "evil.example")]).is_err());
        let any = CrossSite::new(Vec::new(), AllowedHosts::Any, false);
        assert_eq!(post(&any, &[("host", "evil.example")]), Ok(Verdict::Pass));
    }

    #[test]
    fn only_the_own_or_an_allowed_origin_passes() {
        let guard = plain();
        let own = [
            ("host", "127.0.0.1:8082"),
            ("origin", "http://127.0.0.1:8082"),
        ];
        assert_eq!(post(&guard, &own), Ok(Verdict::Pass));
        let console = [
            ("host", "localhost:8082"),
            ("origin", "http://localhost:8082"),
            ("sec-fetch-site", "same-origin"),
        ];
        assert_eq!(post(&guard, &console), Ok(Verdict::Pass));
        for origin in [
            "http://evil.example",
            "null",
            "https://127.0.0.1:8082",
            "http://127.0.0.1:8081",
            "http://localhost:8082",
        ] {
            let refused = post(&guard, &[("host", "127.0.0.1:8082"), ("origin", origin)]);
            assert!(matches!(refused, Err(Refusal::Origin(_))), "{origin}");
        }
        assert_eq!(
            post(
                &guard,
                &[("host", "127.0.0.1:8082"), ("sec-fetch-site", "cross-site")]
            ),
            Err(Refusal::CrossSite)
        );
        assert_eq!(
            post(
                &guard,
                &[("host", "127.0.0.1:8082"), ("sec-fetch-site", "none")]
            ),
            Ok(Verdict::Pass)
        );
        let https = CrossSite::new(Vec::new(), AllowedHosts::default(), true);
        let own_https = [("host", "127.0.0.1"), ("origin", "https://127.0.0.1:443")];
        assert_eq!(post(&https, &own_https), Ok(Verdict::Pass));

        let panel = parse_origin("https://panel.example.com").unwrap();
        let allowing = CrossSite::new(vec![panel], AllowedHosts::default(), false);
        let from_panel = [
            ("host", "127.0.0.1:8082"),
            ("origin", "https://panel.example.com"),
            ("sec-fetch-site", "cross-site"),
        ];
        assert!(matches!(
            post(&allowing, &from_panel),
            Ok(Verdict::AllowedOrigin(_))
        ));
        // An allowed origin does not excuse a foreign Host (rebinding from the panel's
        // own name is still a rebinding).
        let foreign = [
            ("host", "evil.example"),
            ("origin", "https://panel.example.com"),
        ];
        assert!(matches!(post(&allowing, &foreign), Err(Refusal::Host(_))));
    }

    #[test]
    fn refusals_are_json_with_their_status() {
        let guard = plain();
        let peer: SocketAddr = "192.0.2.1:5000".parse().unwrap();
        let response = guard.refuse(&Refusal::Host("evil.example".into()), peer, "/manage/drain");
        assert_eq!(response.status(), StatusCode::MISDIRECTED_REQUEST);
        let response = guard.refuse(&Refusal::CrossSite, peer, "/manage/drain");
        assert_eq!(response.status(), StatusCode::FORBIDDEN);
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
        let origin = HeaderValue::from_static("https://panel.example.com");
        let preflight_headers = headers(&[("access-control-request-method", "POST")]);
        let answer = preflight(&Method::OPTIONS, &preflight_headers, &origin).unwrap();
        assert_eq!(answer.status(), StatusCode::NO_CONTENT);
        assert_eq!(
            answer.headers()[header::ACCESS_CONTROL_ALLOW_ORIGIN],
            "https://panel.example.com"
        );
        assert!(preflight(&Method::POST, &preflight_headers, &origin).is_none());
    }
}
