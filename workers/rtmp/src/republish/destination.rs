//! Where a rule pushes one source stream: the endpoint from `dest_addr`/`dest_port`/`ssl`,
//! the app with `dest_app_params` (`app?params`), and the stream name (the source's own
//! when `dest_stream` is empty) with `dest_stream_params` and, with
//! `keep_src_stream_params`, the source publisher's stream query (`stream?params`).

use crate::client::endpoint::{Endpoint, split_authority};
use strom_ipc::rules::RepublishRule;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    pub endpoint: Endpoint,
    /// The app without any query (the Limelight digest covers it).
    pub app: String,
    /// `app` plus `?dest_app_params` when set.
    pub app_with_params: String,
    /// The stream name without query, for status.
    pub stream: String,
    /// The name given to `publish`: stream plus its query.
    pub stream_with_params: String,
}

impl Destination {
    /// The app query for a `connect` that also carries `auth` (`authmod=...`).
    pub fn connect_app(&self, auth: Option<&str>) -> String {
        match auth {
            None => self.app_with_params.clone(),
            Some(auth) => join_query(&self.app_with_params, auth),
        }
    }
}

/// The destination of `rule` for source stream `source_stream` published with
/// `source_query`.
pub fn destination(rule: &RepublishRule, source_stream: &str, source_query: &str) -> Destination {
    let (host, scheme_tls) = host_of(&rule.dest_addr);
    let app = rule.dest_app.clone();
    let app_with_params = join_query(&app, trim_query(&rule.dest_app_params));
    let stream = if rule.dest_stream.is_empty() {
        source_stream.to_owned()
    } else {
        rule.dest_stream.clone()
    };
    let mut stream_with_params = join_query(&stream, trim_query(&rule.dest_stream_params));
    if rule.keep_src_stream_params {
        stream_with_params = join_query(&stream_with_params, source_query);
    }
    Destination {
        endpoint: Endpoint {
            host,
            port: rule.dest_port,
            tls: rule.ssl || scheme_tls,
        },
        app,
        app_with_params,
        stream,
        stream_with_params,
    }
}

/// The host of `dest_addr`, which may be a bare host or IP, or a URL
/// (`rtmp[s]://host[:port][/...]`; `rtmps` implies TLS). The port always comes from
/// `dest_port`.
fn host_of(dest_addr: &str) -> (String, bool) {
    let (rest, tls) = if let Some(rest) = dest_addr.strip_prefix("rtmps://") {
        (rest, true)
    } else if let Some(rest) = dest_addr.strip_prefix("rtmp://") {
        (rest, false)
    } else {
        (dest_addr, false)
    };
    let authority = rest.split('/').next().unwrap_or_default();
    // A bare IPv6 address has several colons and no port.
    if authority.matches(':').count() > 1 && !authority.starts_with('[') {
        return (authority.to_owned(), tls);
    }
    let host = split_authority(authority).map_or(authority, |(host, _)| host);
    (host.to_owned(), tls)
}

fn trim_query(params: &str) -> &str {
    params.strip_prefix('?').unwrap_or(params)
}

/// `name?query`, or `name?a&query` when `name` already has one.
fn join_query(name: &str, query: &str) -> String {
    if query.is_empty() {
        name.to_owned()
    } else if name.contains('?') {
        format!("{name}&{query}")
    } else {
        format!("{name}?{query}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strom_ipc::rules::{AuthSchema, RuleOwner};

    fn rule() -> RepublishRule {
        RepublishRule {
            id: "r".into(),
            owner: RuleOwner::Api,
            src_app: "live".into(),
            src_stream: String::new(),
            dest_addr: "edge.example".into(),
            dest_port: 1936,
            dest_app: "in".into(),
            dest_stream: String::new(),
            dest_app_params: String::new(),
            dest_stream_params: String::new(),
            auth_schema: AuthSchema::None,
            dest_login: String::new(),
            dest_password: String::new(),
            keep_src_stream_params: false,
            ssl: false,
        }
    }

    #[test]
    fn the_stream_name_follows_the_source_unless_set() {
        let d = destination(&rule(), "cam", "a=1");
        assert_eq!(d.endpoint.to_string(), "rtmp://edge.example:1936");
        assert_eq!(
            (d.app_with_params.as_str(), d.stream_with_params.as_str()),
            ("in", "cam")
        );
        let mut named = rule();
        named.dest_stream = "out".into();
        assert_eq!(destination(&named, "cam", "").stream_with_params, "out");
    }

    #[test]
    fn parameters_are_appended_as_queries() {
        let mut r = rule();
        r.dest_app_params = "?key=1".into();
        r.dest_stream_params = "token=x".into();
        r.keep_src_stream_params = true;
        let d = destination(&r, "cam", "a=1&b=2");
        assert_eq!(d.app_with_params, "in?key=1");
        assert_eq!(d.stream_with_params, "cam?token=x&a=1&b=2");
        assert_eq!(d.stream, "cam");
        assert_eq!(
            d.connect_app(Some("authmod=adobe&user=u")),
            "in?key=1&authmod=adobe&user=u"
        );
        r.dest_app_params.clear();
        let d = destination(&r, "cam", "");
        assert_eq!(d.connect_app(Some("authmod=adobe")), "in?authmod=adobe");
        assert_eq!(d.stream_with_params, "cam?token=x");
    }

    #[test]
    fn dest_addr_may_be_a_url_or_an_ipv6_address() {
        let mut r = rule();
        r.dest_addr = "rtmps://ingest.example:443/app".into();
        let d = destination(&r, "s", "");
        assert_eq!(
            (d.endpoint.host.as_str(), d.endpoint.tls),
            ("ingest.example", true)
        );
        assert_eq!(d.endpoint.port, 1936, "dest_port decides");
        r.dest_addr = "::1".into();
        assert_eq!(destination(&r, "s", "").endpoint.host, "::1");
        r.dest_addr = "[::1]".into();
        assert_eq!(destination(&r, "s", "").endpoint.host, "::1");
        r.dest_addr = "10.0.0.1".into();
        r.ssl = true;
        let d = destination(&r, "s", "");
        assert_eq!(
            (d.endpoint.host.as_str(), d.endpoint.tls),
            ("10.0.0.1", true)
        );
    }
}
