//! Which exposition format a scrape gets: OpenMetrics 1.0 only when its `Accept` asks
//! for it at least as much as for the Prometheus text format 0.0.4; everyone else
//! (`text/plain; version=0.0.4`, `*/*`, no `Accept`, what `promtool` and older scrapers
//! parse) gets the text format. [`to_text`] turns the OpenMetrics text that
//! `prometheus-client` writes into the text format: the two differ only in the names of
//! counters' `# HELP`/`# TYPE` lines (OpenMetrics names the family `x`, its sample
//! `x_total`; the text format names both `x_total`), `unknown` spelled `untyped`, and
//! the `# EOF` and `# UNIT` lines that only OpenMetrics has.

use std::collections::HashSet;

/// OpenMetrics 1.0 text.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// Prometheus text format 0.0.4.
pub const TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    OpenMetrics,
    Text,
}

impl Format {
    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => OPENMETRICS,
            Format::Text => TEXT,
        }
    }
}

/// The format for a request's `Accept` header (all of its values joined by `,`).
pub fn negotiate(accept: Option<&str>) -> Format {
    let Some(accept) = accept else {
        return Format::Text;
    };
    let (mut openmetrics, mut text) = (0.0f32, 0.0f32);
    for range in accept.split(',') {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        let q = parts
            .filter_map(|p| p.trim().strip_prefix("q="))
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        match media.as_str() {
            "application/openmetrics-text" => openmetrics = openmetrics.max(q),
            "text/plain" | "text/*" | "*/*" => text = text.max(q),
            _ => {}
        }
    }
    if openmetrics > 0.0 && openmetrics >= text {
        Format::OpenMetrics
    } else {
        Format::Text
    }
}

/// The Prometheus text format 0.0.4 of an OpenMetrics exposition.
pub fn to_text(openmetrics: &str) -> String {
    let counters: HashSet<&str> = openmetrics
        .lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .filter_map(|rest| rest.strip_suffix(" counter"))
        .collect();
    let mut text = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let descriptor = ["# HELP ", "# TYPE "]
            .into_iter()
            .find_map(|prefix| Some((prefix, line.strip_prefix(prefix)?)));
        match descriptor {
            Some((prefix, rest)) => {
                let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
                let tail = if prefix == "# TYPE " && tail == "unknown" {
                    "untyped"
                } else {
                    tail
                };
                let suffix = if counters.contains(name) {
                    "_total"
                } else {
                    ""
                };
                text.push_str(&format!("{prefix}{name}{suffix} {tail}\n"));
            }
            None => {
                text.push_str(line);
                text.push('\n');
            }
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openmetrics_only_when_asked_for_first() {
        // What Prometheus 2.x sends by default: OpenMetrics preferred.
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(negotiate(Some(prometheus)), Format::OpenMetrics);
        assert_eq!(
            negotiate(Some("application/openmetrics-text; version=1.0.0")),
            Format::OpenMetrics
        );
        for text in [
            None,
            Some("text/plain; version=0.0.4"),
            Some("*/*"),
            Some(""),
            Some("text/plain;version=0.0.4;q=1,application/openmetrics-text;q=0.5"),
            Some("application/openmetrics-text;q=0"),
            Some("application/json"),
        ] {
            assert_eq!(negotiate(text), Format::Text, "{text:?}");
        }
    }

    #[test]
    fn counters_are_named_by_their_samples_and_eof_goes() {
        let openmetrics = "# HELP strom_bytes_sent Bytes sent.\n# TYPE strom_bytes_sent counter\nstrom_bytes_sent_total 1024\n\
             # HELP strom_connections Open.\n# TYPE strom_connections gauge\nstrom_connections 4\n\
             # HELP strom_x Other.\n# TYPE strom_x unknown\n# UNIT strom_x seconds\nstrom_x 1\n# EOF\n";
        assert_eq!(
            to_text(openmetrics),
            "# HELP strom_bytes_sent_total Bytes sent.\n# TYPE strom_bytes_sent_total counter\nstrom_bytes_sent_total 1024\n\
             # HELP strom_connections Open.\n# TYPE strom_connections gauge\nstrom_connections 4\n\
             # HELP strom_x Other.\n# TYPE strom_x untyped\nstrom_x 1\n"
        );
    }
}
