//! `Edge`: edge mode. Any stream of the listed apps that a viewer asks for (an RTMP play,
//! an HLS playlist) and that is not live here is pulled on demand from the origins, tried
//! in order, and dropped `idle_grace_secs` after its last viewer left. Origins are RTMP(S)
//! or SRT, all of one rule alike: one worker runs a rule's failover.

use super::super::error::FieldError;
use super::fields::{check_media_name, each, in_range};
use super::pull::check_rtmp_url;
use serde::Deserialize;
use std::ops::RangeInclusive;
use strom_ipc::rules::{EdgeRule, is_srt_origin, srt_origin_parts};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawEdge {
    apps: Vec<String>,
    origins: Vec<String>,
    idle_grace_secs: Option<u32>,
}

const IDLE_GRACE_SECS: RangeInclusive<u32> = 0..=86_400;
const DEFAULT_IDLE_GRACE_SECS: u32 = 30;
/// Origins one rule may list: failover walks them in order.
const MAX_ORIGINS: usize = 16;

/// Validates `Edge`: each app in at most one rule.
/// An explicit `RtmpPullSources` entry of an edge app's stream wins for that stream.
pub(super) fn validate_all(list: Vec<RawEdge>) -> Result<Vec<EdgeRule>, FieldError> {
    let edges = each(list, "Edge", RawEdge::validate)?;
    for (i, edge) in edges.iter().enumerate() {
        for (a, app) in edge.apps.iter().enumerate() {
            let earlier = edges[..i]
                .iter()
                .position(|other| other.apps.contains(app))
                .or_else(|| edge.apps[..a].contains(app).then_some(i));
            if let Some(j) = earlier {
                let message = format!("\"{app}\" is already used by Edge[{j}]");
                return Err(FieldError::new(format!("Edge[{i}].apps[{a}]"), message));
            }
        }
    }
    Ok(edges)
}

impl RawEdge {
    fn validate(self) -> Result<EdgeRule, FieldError> {
        if self.apps.is_empty() {
            return Err(FieldError::new("apps", "at least one app is needed"));
        }
        for (i, app) in self.apps.iter().enumerate() {
            check_media_name(&format!("apps[{i}]"), app)?;
        }
        if self.origins.is_empty() || self.origins.len() > MAX_ORIGINS {
            let message = format!(
                "1..={MAX_ORIGINS} origins are needed, got {}",
                self.origins.len()
            );
            return Err(FieldError::new("origins", message));
        }
        let srt = is_srt_origin(&self.origins[0]);
        for (i, origin) in self.origins.iter().enumerate() {
            let field = format!("origins[{i}]");
            if is_srt_origin(origin) != srt {
                let message = "all origins of a rule are RTMP(S) or all are SRT";
                return Err(FieldError::new(field, message));
            }
            if srt {
                check_srt_origin(&field, origin)?;
            } else {
                check_origin(&field, origin)?;
            }
        }
        let grace = self.idle_grace_secs.unwrap_or(DEFAULT_IDLE_GRACE_SECS);
        Ok(EdgeRule {
            apps: self.apps,
            origins: self.origins,
            idle_grace_secs: in_range("idle_grace_secs", grace, IDLE_GRACE_SECS)?,
        })
    }
}

/// `rtmp://host[:port]` or `rtmp://host[:port]/app` (or `rtmps://`).
pub(super) fn check_origin(field: &str, origin: &str) -> Result<(), FieldError> {
    let bad = |why: &str| {
        let message = format!("expected rtmp://host[:port][/app], got {origin:?}: {why}");
        Err(FieldError::new(field, message))
    };
    let Some((_, rest)) = origin.split_once("://") else {
        return bad("the scheme must be rtmp or rtmps");
    };
    let path = rest.split_once('/').map_or("", |(_, path)| path);
    let path = path.trim_end_matches('/');
    if path.contains('/') || path.contains('?') {
        return bad("at most an app after the host");
    }
    if !path.is_empty() && check_media_name("app", path).is_err() {
        return bad("bad app name");
    }
    match check_rtmp_url(field, &EdgeRule::url(origin, "app", "stream")) {
        Ok(()) => Ok(()),
        Err(e) => bad(e
            .message
            .rsplit_once(": ")
            .map_or("bad URL", |(_, why)| why)),
    }
}

/// SRT options an origin's query may set, and the range of each value's length or value.
const SRT_PASSPHRASE_LEN: RangeInclusive<usize> = 10..=79;
const SRT_LATENCY_MS: RangeInclusive<u32> = 0..=60_000;

/// `srt://host:port[?passphrase=..&latency=..]`.
pub(super) fn check_srt_origin(field: &str, origin: &str) -> Result<(), FieldError> {
    let bad = |why: String| {
        let message =
            format!("expected srt://host:port[?passphrase=..&latency=..], got {origin:?}: {why}");
        Err(FieldError::new(field, message))
    };
    let (address, parameters) = srt_origin_parts(origin);
    let Some((host, port)) = address.rsplit_once(':') else {
        return bad("a port is needed".into());
    };
    if host.is_empty() || host.contains(['/', '@', ' ']) {
        return bad("bad host".into());
    }
    if !port.parse::<u16>().is_ok_and(|port| port != 0) {
        return bad("bad port".into());
    }
    for (name, value) in parameters {
        match name.as_str() {
            "passphrase" if SRT_PASSPHRASE_LEN.contains(&value.len()) => {}
            "passphrase" => return bad("the passphrase must be 10 to 79 bytes".into()),
            "latency"
                if value
                    .parse::<u32>()
                    .is_ok_and(|ms| SRT_LATENCY_MS.contains(&ms)) => {}
            "latency" => return bad("latency must be 0..=60000 ms".into()),
            other => return bad(format!("unknown option {other:?}")),
        }
    }
    Ok(())
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
    fn an_edge_rule_validates_with_defaults() {
        let rules = parse(
            r#"{"Edge": [{"apps": ["live"], "origins": ["rtmp://o1:1935", "rtmp://o2/live"]}]}"#,
            Path::new("rules.conf"),
        )
        .unwrap();
        let edge = rules.edge_for("live").unwrap();
        assert_eq!(edge.idle_grace_secs, 30);
        assert_eq!(
            strom_ipc::rules::EdgeRule::url(&edge.origins[0], "live", "cam"),
            "rtmp://o1:1935/live/cam"
        );
        assert_eq!(
            strom_ipc::rules::EdgeRule::url(&edge.origins[1], "live", "cam"),
            "rtmp://o2/live/cam"
        );
        assert!(rules.edge_for("other").is_none());
        assert!(!edge.is_srt());
    }

    #[test]
    fn an_srt_edge_rule_validates() {
        let rules = parse(
            r#"{"Edge": [{"apps": ["live"], "origins": ["srt://o1:9000?latency=200", "srt://o2:9000?passphrase=0123456789"]}]}"#,
            Path::new("rules.conf"),
        )
        .unwrap();
        assert!(rules.edge_for("live").unwrap().is_srt());
    }

    #[test]
    fn bad_edge_rules_name_the_field() {
        for (text, expected) in [
            (
                r#"{"Edge": [{"apps": [], "origins": ["rtmp://o"]}]}"#,
                "Edge[0].apps",
            ),
            (
                r#"{"Edge": [{"apps": ["live"], "origins": []}]}"#,
                "Edge[0].origins",
            ),
            (
                r#"{"Edge": [{"apps": ["live"], "origins": ["http://o"]}]}"#,
                "Edge[0].origins[0]",
            ),
            (
                r#"{"Edge": [{"apps": ["live"], "origins": ["rtmp://o/a/b"]}]}"#,
                "Edge[0].origins[0]",
            ),
            (
                r#"{"Edge": [{"apps": ["live"], "origins": ["rtmp://o:0"]}]}"#,
                "Edge[0].origins[0]",
            ),
            (
                r#"{"Edge": [{"apps": ["live"], "origins": ["rtmp://o"]}, {"apps": ["live"], "origins": ["rtmp://p"]}]}"#,
                "Edge[1].apps[0]: \"live\" is already used by Edge[0]",
            ),
            (
                r#"{"Edge": [{"apps": ["live"], "origins": ["rtmp://o"], "idle_grace_secs": 86401}]}"#,
                "Edge[0].idle_grace_secs",
            ),
            (
                r#"{"Edge": [{"apps": ["live"], "origins": ["rtmp://o"], "mode": "x"}]}"#,
                "mode",
            ),
            (
                r#"{"Edge": [{"apps": ["live"], "origins": ["srt://o:9000", "rtmp://o"]}]}"#,
                "Edge[0].origins[1]: all origins of a rule are RTMP(S) or all are SRT",
            ),
            (
                r#"{"Edge": [{"apps": ["live"], "origins": ["srt://o"]}]}"#,
                "a port is needed",
            ),
            (
                r#"{"Edge": [{"apps": ["live"], "origins": ["srt://o:9000?passphrase=short"]}]}"#,
                "10 to 79 bytes",
            ),
            (
                r#"{"Edge": [{"apps": ["live"], "origins": ["srt://o:9000?mode=listener"]}]}"#,
                "unknown option \"mode\"",
            ),
        ] {
            let error = error_of(text);
            assert!(error.contains(expected), "{text}: {error}");
        }
    }
}
