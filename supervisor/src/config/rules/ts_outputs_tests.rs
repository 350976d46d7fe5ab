//! `TsOutputs`: what each protocol and mode accepts, the defaults, and the JSON path and
//! reason of every refusal.

use super::*;
use strom_ipc::rules::TsOutputSettings;

fn outputs(entries: &str) -> Result<Vec<TsOutputSettings>, String> {
    let text = format!(r#"{{"TsOutputs": [{entries}]}}"#);
    parse(&text, Path::new("rules.conf"))
        .map(|rules| rules.ts_outputs)
        .map_err(|e| e.to_string())
}

fn output(
    id: &str,
    protocol: &str,
    mode: &str,
    address: (&str, u16),
    parameters: &[(&str, &str)],
    source: (&str, &str),
) -> TsOutputSettings {
    TsOutputSettings {
        id: id.to_owned(),
        protocol: protocol.to_owned(),
        mode: mode.to_owned(),
        ip: address.0.to_owned(),
        port: address.1,
        parameters: parameters
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect(),
        app: source.0.to_owned(),
        stream: source.1.to_owned(),
    }
}

#[test]
fn good_outputs_of_every_protocol_and_mode() {
    let cases: Vec<(&str, TsOutputSettings)> = vec![
        (
            r#"{"id": "out1", "app": "live", "stream": "tv", "protocol": "srt", "mode": "listen",
                "ip": "0.0.0.0", "port": 9000, "parameters": [
                  {"name": "latency", "value": "200"}, {"name": "passphrase", "value": "0123456789"},
                  {"name": "pbkeylen", "value": "32"}, {"name": "maxbw", "value": "0"},
                  {"name": "max_callers", "value": "1000"}]}"#,
            output(
                "out1",
                "srt",
                "listen",
                ("0.0.0.0", 9000),
                &[
                    ("latency", "200"),
                    ("passphrase", "0123456789"),
                    ("pbkeylen", "32"),
                    ("maxbw", "0"),
                    ("max_callers", "1000"),
                ],
                ("live", "tv"),
            ),
        ),
        (
            r#"{"protocol": "srt", "mode": "listen", "ip": "::", "port": 9001}"#,
            output("ts-1", "srt", "listen", ("::", 9001), &[], ("", "")),
        ),
        (
            r#"{"protocol": "srt", "ip": "cdn.example.com", "port": 9002, "app": "live",
                "stream": "tv", "parameters": [{"name": "latency", "value": "60000"},
                {"name": "maxbw", "value": "1250000"}]}"#,
            output(
                "ts-1",
                "srt",
                "push",
                ("cdn.example.com", 9002),
                &[("latency", "60000"), ("maxbw", "1250000")],
                ("live", "tv"),
            ),
        ),
        (
            r#"{"id": "r", "protocol": "rist", "mode": "listen", "ip": "127.0.0.1", "port": 9003,
                "app": "live", "stream": "tv", "parameters": [
                  {"name": "profile", "value": "main"}, {"name": "buffer", "value": "30000"},
                  {"name": "secret", "value": "s3cr!t~"}, {"name": "aes-type", "value": "256"},
                  {"name": "rist-stats-interval", "value": "3600"},
                  {"name": "rist-logging", "value": "notice"}]}"#,
            output(
                "r",
                "rist",
                "listen",
                ("127.0.0.1", 9003),
                &[
                    ("profile", "main"),
                    ("buffer", "30000"),
                    ("secret", "s3cr!t~"),
                    ("aes-type", "256"),
                    ("rist-stats-interval", "3600"),
                    ("rist-logging", "notice"),
                ],
                ("live", "tv"),
            ),
        ),
        (
            r#"{"protocol": "rist", "mode": "push", "ip": "2001:db8::1", "port": 9004,
                "app": "a", "stream": "b", "parameters": [{"name": "profile", "value": "simple"}]}"#,
            output(
                "ts-1",
                "rist",
                "push",
                ("2001:db8::1", 9004),
                &[("profile", "simple")],
                ("a", "b"),
            ),
        ),
        (
            r#"{"protocol": "udp", "ip": "239.1.1.1", "port": 5000, "app": "live", "stream": "tv",
                "parameters": [{"name": "ttl", "value": "16"},
                  {"name": "interface", "value": "192.168.1.10"},
                  {"name": "mux_rate", "value": "5000000"}, {"name": "pkt_size", "value": "1316"}]}"#,
            output(
                "ts-1",
                "udp",
                "push",
                ("239.1.1.1", 5000),
                &[
                    ("ttl", "16"),
                    ("interface", "192.168.1.10"),
                    ("mux_rate", "5000000"),
                    ("pkt_size", "1316"),
                ],
                ("live", "tv"),
            ),
        ),
        (
            r#"{"protocol": "udp", "mode": "push", "ip": "10.0.0.2", "port": 65535, "app": "live",
                "stream": "tv", "parameters": [{"name": "pkt_size", "value": "188"}]}"#,
            output(
                "ts-1",
                "udp",
                "push",
                ("10.0.0.2", 65535),
                &[("pkt_size", "188")],
                ("live", "tv"),
            ),
        ),
    ];
    for (entry, expected) in cases {
        assert_eq!(outputs(entry), Ok(vec![expected]), "{entry}");
    }
}

#[test]
fn ids_default_to_the_position_and_listeners_may_share_ports_elsewhere() {
    let list = outputs(
        r#"{"protocol": "srt", "mode": "listen", "ip": "127.0.0.1", "port": 9000},
           {"id": "x", "protocol": "srt", "mode": "listen", "ip": "127.0.0.2", "port": 9000},
           {"protocol": "srt", "ip": "127.0.0.1", "port": 9000, "app": "live", "stream": "tv"},
           {"protocol": "rist", "mode": "listen", "ip": "::", "port": 9001, "app": "l", "stream": "s"},
           {"protocol": "srt", "mode": "listen", "ip": "0.0.0.0", "port": 9001}"#,
    )
    .unwrap();
    let ids: Vec<&str> = list.iter().map(|o| o.id.as_str()).collect();
    assert_eq!(ids, ["ts-1", "x", "ts-3", "ts-4", "ts-5"]);
    // A pulled camera does not listen.
    let text = r#"{"Cameras": [{"id": "c", "ip": "src.example.com", "port": 9000, "protocol": "srt",
                                "receive_mode": "pull"}],
                   "TsOutputs": [{"protocol": "srt", "mode": "listen", "ip": "0.0.0.0", "port": 9000}]}"#;
    assert_eq!(parse_ok(text).ts_outputs.len(), 1);
}

fn parse_ok(text: &str) -> Rules {
    parse(text, Path::new("rules.conf")).unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[test]
fn bad_outputs_name_the_path_and_the_reason() {
    const SRT_LISTEN: &str =
        r#""protocol": "srt", "mode": "listen", "ip": "0.0.0.0", "port": 9000"#;
    const RIST_PUSH: &str =
        r#""protocol": "rist", "ip": "10.0.0.1", "port": 9000, "app": "live", "stream": "tv""#;
    const UDP_PUSH: &str =
        r#""protocol": "udp", "ip": "10.0.0.1", "port": 5000, "app": "live", "stream": "tv""#;
    let parameter = |base: &str, name: &str, value: &str| {
        format!(r#"{{{base}, "parameters": [{{"name": "{name}", "value": "{value}"}}]}}"#)
    };
    let cases: Vec<(String, &str)> = vec![
        (
            r#"{"protocol": "http", "ip": "1.2.3.4", "port": 1, "app": "a", "stream": "b"}"#.into(),
            "TsOutputs[0].protocol: expected \"srt\", \"rist\" or \"udp\", got \"http\"",
        ),
        (
            r#"{"ip": "1.2.3.4", "port": 1}"#.into(),
            "missing field `protocol`",
        ),
        (
            r#"{"protocol": "srt", "ip": "1.2.3.4", "app": "a", "stream": "b"}"#.into(),
            "missing field `port`",
        ),
        (
            r#"{"protocol": "udp", "mode": "listen", "ip": "1.2.3.4", "port": 1, "app": "a", "stream": "b"}"#.into(),
            "TsOutputs[0].mode: a udp output only pushes",
        ),
        (
            r#"{"protocol": "srt", "mode": "call", "ip": "1.2.3.4", "port": 1, "app": "a", "stream": "b"}"#.into(),
            "TsOutputs[0].mode: expected \"listen\" or \"push\", got \"call\"",
        ),
        (
            r#"{"protocol": "srt", "mode": "listen", "ip": "host.example", "port": 1}"#.into(),
            "TsOutputs[0].ip: expected an IP address to listen on",
        ),
        (
            r#"{"protocol": "rist", "mode": "listen", "ip": "239.0.0.1", "port": 1, "app": "a", "stream": "b"}"#.into(),
            "TsOutputs[0].ip: expected an IP address to listen on",
        ),
        (
            r#"{"protocol": "udp", "ip": "dest.example", "port": 1, "app": "a", "stream": "b"}"#.into(),
            "TsOutputs[0].ip: expected a destination IP address",
        ),
        (
            r#"{"protocol": "srt", "ip": "", "port": 1, "app": "a", "stream": "b"}"#.into(),
            "TsOutputs[0].ip: expected a destination host name or IP address",
        ),
        (
            r#"{"protocol": "srt", "mode": "listen", "ip": "0.0.0.0", "port": 0}"#.into(),
            "TsOutputs[0].port: must be 1..=65535, got 0",
        ),
        (
            r#"{"protocol": "srt", "mode": "listen", "ip": "0.0.0.0", "port": 65536}"#.into(),
            "65536",
        ),
        (
            r#"{"protocol": "srt", "ip": "h", "port": 1}"#.into(),
            "TsOutputs[0].app: must be set (only an srt listener may leave app and stream",
        ),
        (
            r#"{"protocol": "rist", "mode": "listen", "ip": "0.0.0.0", "port": 1}"#.into(),
            "TsOutputs[0].app: must be set",
        ),
        (
            format!("{{{SRT_LISTEN}, \"stream\": \"tv\"}}"),
            "TsOutputs[0].app: must be set when stream is",
        ),
        (
            format!("{{{SRT_LISTEN}, \"app\": \"live\"}}"),
            "TsOutputs[0].stream: must be set when app is",
        ),
        (
            format!("{{{SRT_LISTEN}, \"app\": \"live\", \"stream\": \"a b\"}}"),
            "TsOutputs[0].stream: \"a b\" must not contain",
        ),
        (
            format!("{{{SRT_LISTEN}, \"app\": \".hidden\", \"stream\": \"tv\"}}"),
            "TsOutputs[0].app: application name starts with '.'",
        ),
        (
            format!("{{{SRT_LISTEN}, \"id\": \"\"}}"),
            "TsOutputs[0].id: must not be empty",
        ),
        (
            format!("{{{SRT_LISTEN}, \"colour\": \"red\"}}"),
            "unknown field `colour`",
        ),
        (
            format!(r#"{{"id": "ts-2", {UDP_PUSH}}}, {{{UDP_PUSH}}}"#),
            "TsOutputs[1].id: \"ts-2\" is already used by TsOutputs[0]",
        ),
        // Parameters.
        (
            parameter(SRT_LISTEN, "ttl", "5"),
            "TsOutputs[0].parameters[0].name: unknown parameter \"ttl\" for srt; expected one of latency, passphrase, pbkeylen, maxbw, max_callers, player_wait_timeout_secs",
        ),
        (
            parameter(RIST_PUSH, "latency", "5"),
            "TsOutputs[0].parameters[0].name: unknown parameter \"latency\" for rist; expected one of profile, buffer, secret, aes-type, rist-stats-interval, rist-logging",
        ),
        (
            parameter(UDP_PUSH, "latency", "5"),
            "TsOutputs[0].parameters[0].name: unknown parameter \"latency\" for udp; expected one of ttl, interface, mux_rate, pkt_size",
        ),
        (
            format!(
                r#"{{{SRT_LISTEN}, "parameters": [{{"name": "latency", "value": "1"}}, {{"name": "latency", "value": "2"}}]}}"#
            ),
            "TsOutputs[0].parameters[1].name: \"latency\" is already used by parameters[0]",
        ),
        (
            format!(r#"{{{SRT_LISTEN}, "parameters": [{{"name": "latency", "value": 200}}]}}"#),
            "invalid type: integer `200`, expected a string",
        ),
        (
            parameter(SRT_LISTEN, "latency", "60001"),
            "TsOutputs[0].parameters[0].value: latency: expected an integer (ms) in 0..=60000, got \"60001\"",
        ),
        (
            parameter(SRT_LISTEN, "latency", "-1"),
            "TsOutputs[0].parameters[0].value: latency:",
        ),
        (
            parameter(SRT_LISTEN, "passphrase", "short"),
            "TsOutputs[0].parameters[0].value: passphrase: must be 10..=79 characters, got 5",
        ),
        (
            parameter(SRT_LISTEN, "passphrase", &"x".repeat(80)),
            "TsOutputs[0].parameters[0].value: passphrase: must be 10..=79 characters, got 80",
        ),
        (
            parameter(SRT_LISTEN, "pbkeylen", "20"),
            "TsOutputs[0].parameters[0].value: pbkeylen: expected one of 16, 24, 32, got \"20\"",
        ),
        (
            parameter(SRT_LISTEN, "maxbw", "-1"),
            "TsOutputs[0].parameters[0].value: maxbw: expected an integer >= 0",
        ),
        (
            parameter(SRT_LISTEN, "max_callers", "0"),
            "TsOutputs[0].parameters[0].value: max_callers: expected an integer in 1..=1000, got \"0\"",
        ),
        (
            parameter(
                r#""protocol": "srt", "ip": "h", "port": 1, "app": "a", "stream": "b""#,
                "max_callers",
                "5",
            ),
            "TsOutputs[0].parameters[0].name: max_callers is only for an srt output in listen mode",
        ),
        (
            parameter(SRT_LISTEN, "player_wait_timeout_secs", "301"),
            "TsOutputs[0].parameters[0].value: player_wait_timeout_secs: expected an integer (seconds) in 1..=300, got \"301\"",
        ),
        (
            parameter(RIST_PUSH, "profile", "advanced"),
            "TsOutputs[0].parameters[0].value: profile: expected one of simple, main, got \"advanced\"",
        ),
        (
            parameter(RIST_PUSH, "buffer", "30001"),
            "TsOutputs[0].parameters[0].value: buffer: expected an integer (ms) in 0..=30000",
        ),
        (
            parameter(RIST_PUSH, "secret", ""),
            "TsOutputs[0].parameters[0].value: secret: expected 1..=127 printable ASCII",
        ),
        (
            parameter(RIST_PUSH, "secret", "a&b"),
            "TsOutputs[0].parameters[0].value: secret: expected 1..=127 printable ASCII",
        ),
        (
            parameter(RIST_PUSH, "secret", "caf\u{e9}"),
            "TsOutputs[0].parameters[0].value: secret:",
        ),
        (
            parameter(RIST_PUSH, "secret", &"s".repeat(128)),
            "TsOutputs[0].parameters[0].value: secret:",
        ),
        (
            parameter(RIST_PUSH, "aes-type", "192"),
            "TsOutputs[0].parameters[0].value: aes-type: expected one of 128, 256",
        ),
        (
            parameter(RIST_PUSH, "aes-type", "128"),
            "TsOutputs[0].parameters: aes-type needs the parameter secret",
        ),
        (
            parameter(RIST_PUSH, "rist-stats-interval", "0"),
            "TsOutputs[0].parameters[0].value: rist-stats-interval: expected an integer (seconds) in 1..=3600",
        ),
        (
            parameter(RIST_PUSH, "rist-logging", "verbose"),
            "TsOutputs[0].parameters[0].value: rist-logging: expected one of disable, error, warn, notice, info, debug",
        ),
        (
            parameter(UDP_PUSH, "ttl", "256"),
            "TsOutputs[0].parameters[0].value: ttl: expected an integer in 1..=255",
        ),
        (
            parameter(UDP_PUSH, "interface", "::1"),
            "TsOutputs[0].parameters[0].value: interface: expected an IPv4 address, got \"::1\"",
        ),
        (
            parameter(UDP_PUSH, "mux_rate", "99999"),
            "TsOutputs[0].parameters[0].value: mux_rate: expected an integer (bits per second) in 100000..=1000000000",
        ),
        (
            parameter(UDP_PUSH, "pkt_size", "1500"),
            "TsOutputs[0].parameters[0].value: pkt_size: expected 1316 or a multiple of 188",
        ),
        (
            parameter(UDP_PUSH, "pkt_size", "200"),
            "TsOutputs[0].parameters[0].value: pkt_size:",
        ),
        (
            parameter(UDP_PUSH, "pkt_size", "0"),
            "TsOutputs[0].parameters[0].value: pkt_size:",
        ),
        // Listening sockets.
        (
            format!(
                r#"{{{SRT_LISTEN}}}, {{"protocol": "rist", "mode": "listen", "ip": "0.0.0.0", "port": 9000, "app": "a", "stream": "b"}}"#
            ),
            "TsOutputs[1].port: \"0.0.0.0:9000\" collides with the listening socket of TsOutputs[0]",
        ),
        (
            format!(
                r#"{{{SRT_LISTEN}}}, {{"protocol": "srt", "mode": "listen", "ip": "10.1.2.3", "port": 9000}}"#
            ),
            "TsOutputs[1].port: \"10.1.2.3:9000\" collides with the listening socket of TsOutputs[0]",
        ),
        (
            r#"{"protocol": "srt", "mode": "listen", "ip": "::1", "port": 9000},
               {"protocol": "srt", "mode": "listen", "ip": "0:0::1", "port": 9000}"#
                .into(),
            "TsOutputs[1].port: \"[::1]:9000\" collides with the listening socket of TsOutputs[0]",
        ),
    ];
    for (entries, expected) in cases {
        match outputs(&entries) {
            Ok(list) => panic!("{entries} was accepted: {list:?}"),
            Err(message) => assert!(
                message.contains(expected),
                "{entries}\n  gave {message}\n  not {expected}"
            ),
        }
    }
}

#[test]
fn listening_outputs_do_not_take_the_socket_of_a_listening_input() {
    let cases = [
        (
            r#"{"id": "c", "ip": "0.0.0.0", "port": 9000, "protocol": "udp"}"#,
            r#"{"protocol": "srt", "mode": "listen", "ip": "127.0.0.1", "port": 9000}"#,
            "TsOutputs[0].port: \"127.0.0.1:9000\" collides with the listening socket of Cameras[0]",
        ),
        (
            r#"{"id": "c", "ip": "127.0.0.1", "port": 9000, "protocol": "rist"}"#,
            r#"{"protocol": "srt", "mode": "listen", "ip": "0.0.0.0", "port": 9000}"#,
            "TsOutputs[0].port: \"0.0.0.0:9000\" collides with the listening socket of Cameras[0]",
        ),
        (
            r#"{"id": "c", "ip": "::", "port": 9000, "protocol": "srt"}"#,
            r#"{"protocol": "rist", "mode": "listen", "ip": "::1", "port": 9000, "app": "a", "stream": "b"}"#,
            "TsOutputs[0].port: \"[::1]:9000\" collides with the listening socket of Cameras[0]",
        ),
    ];
    for (camera, output, expected) in cases {
        let text = format!(r#"{{"Cameras": [{camera}], "TsOutputs": [{output}]}}"#);
        match parse(&text, Path::new("rules.conf")) {
            Ok(rules) => panic!("{text} was accepted: {rules:?}"),
            Err(e) => assert!(e.to_string().contains(expected), "{text}\n  gave {e}"),
        }
    }
    // Other ports, the other address family, and outputs that push do not collide.
    let text = r#"{"Cameras": [{"id": "c", "ip": "0.0.0.0", "port": 9000, "protocol": "udp"}],
        "TsOutputs": [
          {"protocol": "srt", "mode": "listen", "ip": "0.0.0.0", "port": 9001},
          {"protocol": "srt", "mode": "listen", "ip": "::", "port": 9000},
          {"protocol": "udp", "ip": "127.0.0.1", "port": 9000, "app": "a", "stream": "b"}]}"#;
    assert_eq!(parse_ok(text).ts_outputs.len(), 3);
}

#[test]
fn the_readme_rules_example_is_valid() {
    // The reference moved from README.md to docs/configuration.md (issue 34).
    let readme = include_str!("../../../../docs/configuration.md");
    let section = &readme[readme
        .find("\n## rules.conf")
        .expect("a rules.conf section")..];
    let start = section.find("```json\n").expect("a JSON example") + "```json\n".len();
    let example = &section[start..start + section[start..].find("```").unwrap()];
    let rules = parse_ok(example);
    let ids: Vec<&str> = rules.ts_outputs.iter().map(|o| o.id.as_str()).collect();
    assert_eq!(ids, ["out1", "iptv"]);
}
