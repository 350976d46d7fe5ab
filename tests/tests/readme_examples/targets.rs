//! What a media example talks to: its addresses moved to the test server's free ports
//! (only ports the shipped configuration listens on are allowed, so a doc that names
//! any other fails), and the stream a publish example makes live.

use serde_json::Value;

/// The shipped ports and the free ones the test server uses instead.
pub struct PortMap(pub Vec<(u16, u16)>);

impl PortMap {
    /// `command` with every `127.0.0.1:<shipped port>` moved to the test server's port.
    /// Panics on a loopback port the shipped configuration does not listen on.
    pub fn rewrite(&self, command: &str, shown: &str) -> String {
        const HOST: &str = "127.0.0.1:";
        let mut out = String::with_capacity(command.len());
        let mut rest = command;
        while let Some(at) = rest.find(HOST) {
            let (before, after) = rest.split_at(at + HOST.len());
            out.push_str(before);
            let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            let port: u16 = after[..digits]
                .parse()
                .unwrap_or_else(|_| panic!("{shown}: no port after {HOST}"));
            let moved = self
                .0
                .iter()
                .find(|(shipped, _)| *shipped == port)
                .unwrap_or_else(|| {
                    panic!("{shown}: port {port} is not one the shipped configuration listens on")
                })
                .1;
            out.push_str(&moved.to_string());
            rest = &after[digits..];
        }
        out.push_str(rest);
        out
    }
}

/// The URL a command sends to or reads from: its last argument, unquoted.
pub fn last_url(command: &str) -> String {
    command
        .split_whitespace()
        .last()
        .unwrap_or_default()
        .trim_matches(|c| c == '"' || c == '\'')
        .to_owned()
}

/// `app/stream` that publishing to `url` (as written in the docs, shipped ports) makes
/// live: the URL's path for RTMP, RTSP and Icecast, the `streamid` of an SRT caller, else
/// the shipped `Cameras` entry on the URL's port.
pub fn published_stream(url: &str, rules: &Value, shown: &str) -> String {
    let (scheme, rest) = url
        .split_once("://")
        .unwrap_or_else(|| panic!("{shown}: no URL at the end"));
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let (authority, query) = match authority.split_once('?') {
        Some((authority, query)) => (authority, query),
        None => (authority, path.split_once('?').map_or("", |(_, q)| q)),
    };
    let path = path.split('?').next().unwrap_or_default();
    match scheme {
        "rtmp" | "rtsp" | "icecast" => path.to_owned(),
        "srt" | "udp" | "rist" => {
            let stream_id = query
                .split('&')
                .find_map(|pair| pair.strip_prefix("streamid="))
                .map(percent_decode);
            if let Some(resource) = stream_id.as_deref().and_then(|id| {
                id.strip_prefix("#!::")?
                    .split(',')
                    .find_map(|pair| pair.strip_prefix("r="))
            }) {
                return resource.to_owned();
            }
            let port: u64 = authority
                .rsplit(':')
                .next()
                .and_then(|p| p.parse().ok())
                .unwrap_or_else(|| panic!("{shown}: no port in {url}"));
            let entry = rules["Cameras"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|c| c["port"] == port && c["protocol"] == scheme)
                .unwrap_or_else(|| {
                    panic!("{shown}: the shipped rules.conf has no {scheme} input on port {port}")
                });
            format!(
                "{}/{}",
                entry["app"].as_str().unwrap(),
                entry["stream"].as_str().unwrap()
            )
        }
        other => panic!("{shown}: no publish check for {other}:// URLs"),
    }
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn urls_name_their_streams_and_ports_move() {
    let rules = serde_json::json!({"Cameras": [
        {"protocol": "udp", "port": 5000, "app": "live", "stream": "udp"}]});
    let cases = [
        ("rtmp://127.0.0.1:1935/live/test", "live/test"),
        ("icecast://source:pw@127.0.0.1:8081/radio/one", "radio/one"),
        ("udp://127.0.0.1:5000?pkt_size=1316", "live/udp"),
        (
            "srt://127.0.0.1:9000?streamid=%23%21%3A%3Ar%3Dlive%2Fcam%2Cm%3Dpublish",
            "live/cam",
        ),
    ];
    for (url, stream) in cases {
        assert_eq!(published_stream(url, &rules, url), stream);
    }
    let map = PortMap(vec![(1935, 20001), (5000, 20002)]);
    assert_eq!(
        map.rewrite("a rtmp://127.0.0.1:1935/x \"udp://127.0.0.1:5000?p=1\"", ""),
        "a rtmp://127.0.0.1:20001/x \"udp://127.0.0.1:20002?p=1\""
    );
    assert_eq!(last_url("ffmpeg -i x 'srt://h:1?a=b'"), "srt://h:1?a=b");
}
