//! `Cluster`: this server's membership in a cluster registry on etcd (see
//! `crate::cluster`). Optional: without it the server is on its own.
//!
//! ```json
//! "Cluster": {"server_id": "origin-1",
//!             "etcd_endpoints": ["http://10.0.0.5:2379", "http://10.0.0.6:2379"],
//!             "advertise": ["rtmp://10.0.0.1:1935", "srt://10.0.0.1:9000"],
//!             "lease_ttl_secs": 5, "key_prefix": "/strom/"}
//! ```

use super::super::error::FieldError;
use super::edge::{check_origin, check_srt_origin};
use super::fields::in_range;
use serde::Deserialize;
use std::ops::RangeInclusive;
use strom_ipc::cluster::ClusterSettings;
use strom_ipc::rules::is_srt_origin;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCluster {
    server_id: String,
    etcd_endpoints: Vec<String>,
    #[serde(default)]
    advertise: Vec<String>,
    lease_ttl_secs: Option<u32>,
    key_prefix: Option<String>,
}

/// A lease under 2 s would expire between keep-alives on a busy machine; past a minute
/// a dead origin's streams stay unreachable for too long.
const LEASE_TTL_SECS: RangeInclusive<u32> = 2..=60;
const DEFAULT_LEASE_TTL_SECS: u32 = 5;
const DEFAULT_KEY_PREFIX: &str = "/strom/";
const MAX_ENDPOINTS: usize = 16;
const MAX_ADVERTISED: usize = 8;
const MAX_ID_LEN: usize = 64;
const MAX_PREFIX_LEN: usize = 128;

impl RawCluster {
    pub(super) fn validate(self) -> Result<ClusterSettings, FieldError> {
        let id = &self.server_id;
        if id.is_empty()
            || id.len() > MAX_ID_LEN
            || !id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        {
            let message = format!("{id:?}: 1 to {MAX_ID_LEN} characters of A-Z a-z 0-9 . _ -");
            return Err(FieldError::new("server_id", message));
        }
        if self.etcd_endpoints.is_empty() || self.etcd_endpoints.len() > MAX_ENDPOINTS {
            let message = format!("1..={MAX_ENDPOINTS} endpoints are needed");
            return Err(FieldError::new("etcd_endpoints", message));
        }
        for (i, endpoint) in self.etcd_endpoints.iter().enumerate() {
            check_endpoint(endpoint).map_err(|why| {
                let message = format!("expected http://host:port, got {endpoint:?}: {why}");
                FieldError::new(format!("etcd_endpoints[{i}]"), message)
            })?;
        }
        if self.advertise.len() > MAX_ADVERTISED {
            let message = format!("at most {MAX_ADVERTISED} URLs");
            return Err(FieldError::new("advertise", message));
        }
        for (i, url) in self.advertise.iter().enumerate() {
            let field = format!("advertise[{i}]");
            if is_srt_origin(url) {
                check_srt_origin(&field, url)?;
            } else {
                check_origin(&field, url)?;
            }
        }
        let prefix = self
            .key_prefix
            .unwrap_or_else(|| DEFAULT_KEY_PREFIX.to_owned());
        if prefix.is_empty()
            || prefix.len() > MAX_PREFIX_LEN
            || prefix.chars().any(char::is_control)
        {
            let message = format!("1 to {MAX_PREFIX_LEN} characters, no control characters");
            return Err(FieldError::new("key_prefix", message));
        }
        let ttl = self.lease_ttl_secs.unwrap_or(DEFAULT_LEASE_TTL_SECS);
        Ok(ClusterSettings {
            server_id: self.server_id,
            etcd_endpoints: self.etcd_endpoints,
            advertise: self.advertise,
            lease_ttl_secs: in_range("lease_ttl_secs", ttl, LEASE_TTL_SECS)?,
            key_prefix: prefix,
        })
    }
}

/// `http://host:port`: etcd's client URL (TLS to etcd is not supported yet).
fn check_endpoint(endpoint: &str) -> Result<(), &'static str> {
    let rest = endpoint
        .strip_prefix("http://")
        .ok_or("the scheme must be http")?;
    let rest = rest.trim_end_matches('/');
    let (host, port) = rest.rsplit_once(':').ok_or("a port is needed")?;
    if host.is_empty() || host.contains(['/', '@', ' ', '?']) {
        return Err("bad host");
    }
    match port.parse::<u16>() {
        Ok(port) if port != 0 => Ok(()),
        _ => Err("bad port"),
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use std::path::Path;

    fn error_of(text: &str) -> String {
        match parse(text, Path::new("rules.conf")) {
            Ok(_) => String::new(),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_cluster_block_validates_with_defaults() {
        let rules = parse(
            r#"{"Cluster": {"server_id": "origin-1", "etcd_endpoints": ["http://127.0.0.1:2379"],
                "advertise": ["rtmp://10.0.0.1:1935", "srt://10.0.0.1:9000?latency=200"]}}"#,
            Path::new("rules.conf"),
        )
        .unwrap();
        let cluster = rules.cluster.unwrap();
        assert_eq!(cluster.server_id, "origin-1");
        assert_eq!(cluster.lease_ttl_secs, 5);
        assert_eq!(cluster.key_prefix, "/strom/");
        assert_eq!(cluster.advertise.len(), 2);
        let alone = parse("{}", Path::new("rules.conf")).unwrap();
        assert!(alone.cluster.is_none());
    }

    #[test]
    fn bad_cluster_blocks_name_the_field() {
        for (text, expected) in [
            (
                r#"{"Cluster": {"server_id": "a b", "etcd_endpoints": ["http://e:2379"]}}"#,
                "Cluster.server_id",
            ),
            (
                r#"{"Cluster": {"server_id": "a", "etcd_endpoints": []}}"#,
                "Cluster.etcd_endpoints",
            ),
            (
                r#"{"Cluster": {"server_id": "a", "etcd_endpoints": ["https://e:2379"]}}"#,
                "Cluster.etcd_endpoints[0]: expected http://host:port",
            ),
            (
                r#"{"Cluster": {"server_id": "a", "etcd_endpoints": ["http://e"]}}"#,
                "a port is needed",
            ),
            (
                r#"{"Cluster": {"server_id": "a", "etcd_endpoints": ["http://e:1"], "advertise": ["http://x"]}}"#,
                "Cluster.advertise[0]",
            ),
            (
                r#"{"Cluster": {"server_id": "a", "etcd_endpoints": ["http://e:1"], "lease_ttl_secs": 1}}"#,
                "Cluster.lease_ttl_secs",
            ),
            (
                r#"{"Cluster": {"server_id": "a", "etcd_endpoints": ["http://e:1"], "key_prefix": ""}}"#,
                "Cluster.key_prefix",
            ),
            (
                r#"{"Cluster": {"server_id": "a", "etcd_endpoints": ["http://e:1"], "ttl": 3}}"#,
                "ttl",
            ),
        ] {
            let error = error_of(text);
            assert!(error.contains(expected), "{text}: {error}");
        }
    }
}
