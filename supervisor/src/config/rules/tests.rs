//! `rules.conf` as a whole: defaults, every key, and the error of every section naming
//! its file, line or JSON path.

use super::*;
use serde_json::json;
use strom_ipc::rules::{
    AbrGroup, AppDelivery, AppSettings, AuthSchema, CameraSettings, DashAddressing, DeliveryOutput,
    DeliverySettings, OutputProtocol, PublishControl, PullMode, PullSource, RepublishRule,
    RtmpInterface, RtmpLimits, RuleOwner, StreamDelivery, StreamRef,
};

fn parse_ok(text: &str) -> Rules {
    parse(text, Path::new("rules.conf")).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn error(text: &str) -> ConfigError {
    match parse(text, Path::new("rules.conf")) {
        Ok(rules) => panic!("{text} was accepted: {rules:?}"),
        Err(e) => e,
    }
}

#[test]
fn defaults() {
    for text in ["{}", "{\"RtmpSettings\": {}}", " { } \n"] {
        assert_eq!(parse_ok(text), Rules::default(), "{text}");
    }
    let no_rtmp = parse_ok(r#"{"RtmpSettings": {"interfaces": []}}"#);
    assert!(no_rtmp.rtmp.interfaces.is_empty());
}

#[test]
fn packaged_file_is_valid() {
    let rules = parse_ok(include_str!("../../../../packaging/rules.conf"));
    assert_eq!(rules.rtmp.interfaces[0].ip, "127.0.0.1");
}

#[test]
fn every_key() {
    let text = r#"{
      "RtmpSettings": {
        "hash": "abc",
        "interfaces": [{"ip": "*", "port": 1935}, {"ip": "::1", "port": 1936}],
        "login": "pub", "password": "pw", "duration": 4,
        "protocols": ["HLS", "RTMP"],
        "apps": [
          {"app": "live", "login": "a", "password": "b", "duration": 2,
           "protocols": ["ICECAST"],
           "publish_control": {"password": "sign", "handler_url": "https://h/x",
                               "handler_timeout_ms": 500}},
          {"app": "other", "publish_control": {"password": "s"}}
        ],
        "abr": [{"app": "live", "stream": "abr",
                 "streams": [{"app": "live", "stream": "hi"}, {"app": "live", "stream": "lo"}]}],
        "limits": {"max_connections": 5, "handshake_timeout_secs": 3,
                   "publisher_idle_timeout_secs": 20, "max_message_bytes": 65536, "play_nodelay": true}
      },
      "RtmpRepublishRules": [
        {"id": "mine", "src_app": "live", "src_stream": "s", "dest_addr": "cdn.example.com",
         "dest_port": "1935", "dest_app": "in", "dest_stream": "d", "dest_app_params": "ap",
         "dest_stream_params": "sp", "auth_schema": "AKAMAI", "dest_login": "l",
         "dest_password": "p", "keep_src_stream_params": true, "ssl": true},
        {"src_app": "live", "dest_addr": "10.0.0.1", "dest_port": 1935, "dest_app": "in"}
      ],
      "Cameras": [
        {"id": "cam1", "ip": "239.0.0.1", "port": 5000, "protocol": "udp"},
        {"id": "cam2", "ip": "0.0.0.0", "port": 9000, "protocol": "srt",
         "parameters": [{"name": "latency", "value": "200"}], "app": "in", "stream": "c2"},
        {"id": "cam3", "ip": "src.example.com", "port": 9001, "protocol": "rist",
         "receive_mode": "pull"}
      ],
      "CamerasHash": "x",
      "RtmpPullSources": [
        {"app": "live", "stream": "p1", "url": "rtmp://origin.example:1936/live/cam?t=1",
         "mode": "on_demand", "idle_grace_secs": 5},
        {"app": "live", "stream": "p2", "url": "rtmps://[::1]/app/s"}
      ]
    }"#;
    let rules = parse_ok(text);
    let rtmp = &rules.rtmp;
    assert_eq!(
        rtmp.interfaces[1],
        RtmpInterface {
            ip: "::1".into(),
            port: 1936
        }
    );
    assert_eq!(
        (rtmp.login.as_str(), rtmp.password.as_str(), rtmp.duration),
        ("pub", "pw", 4)
    );
    assert_eq!(rtmp.protocols, [OutputProtocol::Hls, OutputProtocol::Rtmp]);
    assert_eq!(
        rtmp.apps[0],
        AppSettings {
            app: "live".into(),
            login: "a".into(),
            password: "b".into(),
            duration: Some(2),
            protocols: Some(vec![OutputProtocol::Icecast]),
            publish_control: Some(PublishControl {
                password: "sign".into(),
                handler_url: Some("https://h/x".into()),
                handler_timeout_ms: 500,
            }),
        }
    );
    let other = &rtmp.apps[1];
    assert_eq!((other.duration, other.protocols.as_ref()), (None, None));
    let control = other.publish_control.as_ref().unwrap();
    assert_eq!(
        (control.handler_url.as_ref(), control.handler_timeout_ms),
        (None, 3000)
    );
    assert_eq!(
        rtmp.abr[0].streams[1],
        StreamRef {
            app: "live".into(),
            stream: "lo".into()
        }
    );
    assert_eq!(
        rtmp.limits,
        RtmpLimits {
            max_connections: 5,
            handshake_timeout_secs: 3,
            publisher_idle_timeout_secs: 20,
            max_message_bytes: 65536,
            play_nodelay: true,
            ..RtmpLimits::default()
        }
    );
    let [first, second] = &rules.republish[..] else {
        panic!("{:?}", rules.republish)
    };
    assert_eq!(
        *first,
        RepublishRule {
            id: "mine".into(),
            owner: RuleOwner::Config,
            src_app: "live".into(),
            src_stream: "s".into(),
            dest_addr: "cdn.example.com".into(),
            dest_port: 1935,
            dest_app: "in".into(),
            dest_stream: "d".into(),
            dest_app_params: "ap".into(),
            dest_stream_params: "sp".into(),
            auth_schema: AuthSchema::Akamai,
            dest_login: "l".into(),
            dest_password: "p".into(),
            keep_src_stream_params: true,
            ssl: true,
        }
    );
    assert_eq!((second.id.as_str(), second.dest_port), ("cfg-2", 1935));
    assert_eq!(
        (second.dest_stream.as_str(), second.auth_schema),
        ("", AuthSchema::None)
    );
    assert!(!second.ssl && !second.keep_src_stream_params);
    let cams = &rules.cameras;
    assert_eq!(
        cams[0],
        CameraSettings {
            id: "cam1".into(),
            ip: "239.0.0.1".into(),
            port: 5000,
            protocol: "udp".into(),
            receive_mode: String::new(),
            parameters: vec![],
            app: "live".into(),
            stream: "cam1".into(),
        }
    );
    assert_eq!(
        (cams[1].receive_mode.as_str(), cams[1].app.as_str()),
        ("listen", "in")
    );
    assert_eq!(
        cams[1].parameters,
        [("latency".to_owned(), "200".to_owned())]
    );
    assert_eq!(cams[2].receive_mode, "pull");
    assert_eq!(
        rules.pull_sources[0],
        PullSource {
            app: "live".into(),
            stream: "p1".into(),
            url: "rtmp://origin.example:1936/live/cam?t=1".into(),
            mode: PullMode::OnDemand,
            idle_grace_secs: 5,
            rtsp_transport: Default::default(),
        }
    );
    let second = &rules.pull_sources[1];
    assert_eq!(
        (second.mode, second.idle_grace_secs),
        (PullMode::Always, 30)
    );
}

#[test]
fn json_errors_carry_line_and_column() {
    let cases = [
        (
            "{\n  \"RtmpSettings\": {\n    \"duration\": 4,,\n",
            "rules.conf:3:19: invalid JSON: ",
        ),
        (
            "{\"RtmpSettings\": {\"duration\": \"4\"}}",
            "rules.conf:1:33: invalid type: string",
        ),
        (
            "{\"RtmpSettings\": {\"durtion\": 4}}",
            "rules.conf:1:27: unknown field `durtion`",
        ),
        ("{\n\"Extra\": 1}", "rules.conf:2:7: unknown field `Extra`"),
        (
            "{\"Cameras\": [{\"id\": \"c\"}]}",
            "rules.conf:1:24: missing field `ip`",
        ),
        (
            "",
            "rules.conf:1:0: invalid JSON: EOF while parsing a value",
        ),
    ];
    for (text, expected) in cases {
        let message = error(text).to_string();
        assert!(message.starts_with(expected), "{text}: {message}");
    }
    let error = error("{\n  \"RtmpSettings\": {\n    \"duration\": 4,,\n");
    assert_eq!((error.line(), error.column()), (Some(3), Some(19)));
}

#[test]
fn semantic_errors_name_the_json_path() {
    let rule = r#""src_app": "live", "dest_addr": "h", "dest_port": 1935, "dest_app": "a""#;
    let cases = [
        (
            r#"{"RtmpSettings": {"duration": 0}}"#,
            "RtmpSettings.duration: must be 1..=60, got 0",
        ),
        (
            r#"{"RtmpSettings": {"apps": [{"app": "a"}, {"app": "b", "duration": 61}]}}"#,
            "RtmpSettings.apps[1].duration: must be 1..=60, got 61",
        ),
        (
            r#"{"RtmpSettings": {"apps": [{"app": "a"}, {"app": "a"}]}}"#,
            "RtmpSettings.apps[1].app: \"a\" is already used by apps[0]",
        ),
        (
            r#"{"RtmpSettings": {"apps": [{"app": "a/b"}]}}"#,
            "RtmpSettings.apps[0].app: \"a/b\" must not contain '/'",
        ),
        (
            r#"{"RtmpPullSources": [{"app": "live", "stream": "..", "url": "rtmp://h/a/b"}]}"#,
            "RtmpPullSources[0].stream: stream name starts with '.'",
        ),
        (
            r#"{"RtmpSettings": {"apps": [{"app": ""}]}}"#,
            "RtmpSettings.apps[0].app: must not be empty",
        ),
        (
            r#"{"RtmpSettings": {"apps": [{"app": "a", "publish_control": {"password": ""}}]}}"#,
            "RtmpSettings.apps[0].publish_control.password: must not be empty",
        ),
        (
            r#"{"RtmpSettings": {"apps": [{"app": "a", "publish_control": {"password": "p", "handler_url": "ftp://x"}}]}}"#,
            "RtmpSettings.apps[0].publish_control.handler_url: expected an http",
        ),
        (
            r#"{"RtmpSettings": {"apps": [{"app": "a", "protocols": ["HLS", "DASH"]}]}}"#,
            "RtmpSettings.apps[0].protocols[1]: unknown protocol \"DASH\"; expected HLS, ICECAST, MPEGTS, RTMP",
        ),
        (
            r#"{"RtmpSettings": {"protocols": ["HLS", "HLS"]}}"#,
            "RtmpSettings.protocols[1]: \"HLS\" is listed twice",
        ),
        (
            r#"{"RtmpSettings": {"login": "x"}}"#,
            "RtmpSettings.password: must be set when login is",
        ),
        (
            r#"{"RtmpSettings": {"interfaces": [{"ip": "localhost", "port": 1935}]}}"#,
            "RtmpSettings.interfaces[0].ip: expected \"*\" or an IP address",
        ),
        (
            r#"{"RtmpSettings": {"interfaces": [{"ip": "*", "port": 0}]}}"#,
            "RtmpSettings.interfaces[0].port: must be 1..=65535",
        ),
        (
            r#"{"RtmpSettings": {"interfaces": [{"ip": "*", "port": 1}, {"ip": "*", "port": 1}]}}"#,
            "RtmpSettings.interfaces[1].port: \"*:1\" is already used",
        ),
        (
            r#"{"RtmpSettings": {"abr": [{"app": "l", "stream": "a", "streams": []}]}}"#,
            "RtmpSettings.abr[0].streams: must list at least one stream",
        ),
        (
            r#"{"RtmpSettings": {"abr": [{"app": "l", "stream": "a", "streams": [{"app": "l", "stream": "a"}]}]}}"#,
            "RtmpSettings.abr[0].streams[0]: the ABR stream cannot",
        ),
        (
            r#"{"RtmpSettings": {"limits": {"max_message_bytes": 16777216}}}"#,
            "RtmpSettings.limits.max_message_bytes: must be 1024..=16777215",
        ),
        (
            r#"{"RtmpSettings": {"limits": {"handshake_timeout_secs": 0}}}"#,
            "RtmpSettings.limits.handshake_timeout_secs: must be 1..=300",
        ),
        (
            &format!(
                r#"{{"RtmpRepublishRules": [{{{rule}}}, {{{rule}, "auth_schema": "BASIC"}}]}}"#
            ),
            "RtmpRepublishRules[1].auth_schema: unknown scheme \"BASIC\"",
        ),
        (
            &format!(r#"{{"RtmpRepublishRules": [{{{rule}, "id": "x"}}, {{{rule}, "id": "x"}}]}}"#),
            "RtmpRepublishRules[1].id: \"x\" is already used by RtmpRepublishRules[0]",
        ),
        (
            &format!(r#"{{"RtmpRepublishRules": [{{{rule}, "id": 5}}]}}"#),
            "RtmpRepublishRules[0].id: expected a string, got a number",
        ),
        (
            r#"{"RtmpRepublishRules": [7]}"#,
            "RtmpRepublishRules[0]: expected an object of rule fields, got a number",
        ),
        (
            r#"{"Cameras": [{"id": "c", "ip": "1.2.3.4", "port": 1, "protocol": "http"}]}"#,
            "Cameras[0].protocol: expected \"udp\", \"srt\" or \"rist\", got \"http\"",
        ),
        (
            r#"{"Cameras": [{"id": "c", "ip": "1.2.3.4", "port": 1, "protocol": "udp", "receive_mode": "pull"}]}"#,
            "Cameras[0].receive_mode: only srt and rist",
        ),
        (
            r#"{"Cameras": [{"id": "c", "ip": "1.2.3.4", "port": 1, "protocol": "srt", "receive_mode": "call"}]}"#,
            "Cameras[0].receive_mode: expected \"listen\" or \"pull\"",
        ),
        (
            r#"{"Cameras": [{"id": "c", "ip": "1.2.3.4", "port": 1, "protocol": "srt", "receive_mode": "rendezvous"}]}"#,
            "Cameras[0].parameters: a rendezvous input needs the parameter local_ip",
        ),
        (
            r#"{"Cameras": [{"id": "c", "ip": "1.2.3.4", "port": 1, "protocol": "srt", "parameters": [{"name": "idle_timeout_secs", "value": "0"}]}]}"#,
            "Cameras[0].parameters[0].value: idle_timeout_secs: expected an integer (seconds) in 1..=3600",
        ),
        (
            r#"{"Cameras": [{"id": "c", "ip": "1.2.3.4", "port": 1, "protocol": "rist", "receive_mode": "rendezvous"}]}"#,
            "Cameras[0].receive_mode: expected \"listen\" or \"pull\"",
        ),
        (
            r#"{"Cameras": [{"id": "c", "ip": "host", "port": 1, "protocol": "srt"}]}"#,
            "Cameras[0].ip: expected an IP address",
        ),
        (
            r#"{"Cameras": [{"id": "", "ip": "1.2.3.4", "port": 1, "protocol": "udp"}]}"#,
            "Cameras[0].id: must not be empty",
        ),
        (
            r#"{"Cameras": [{"id": "c", "ip": "1.2.3.4", "port": 1, "protocol": "udp", "parameters": [{"name": "", "value": ""}]}]}"#,
            "Cameras[0].parameters[0].name: must not be empty",
        ),
        (
            r#"{"Cameras": [{"id": "c", "ip": "1.2.3.4", "port": 1, "protocol": "udp"}, {"id": "c", "ip": "1.2.3.4", "port": 2, "protocol": "udp"}]}"#,
            "Cameras[1].id: \"c\" is already used by Cameras[0]",
        ),
        (
            r#"{"Cameras": [{"id": "c", "ip": "1.2.3.4", "port": 1, "protocol": "udp"}, {"id": "d", "ip": "1.2.3.4", "port": 2, "protocol": "udp", "stream": "c"}]}"#,
            "Cameras[1].stream: \"live/c\" is already used by Cameras[0]",
        ),
        (
            r#"{"RtmpPullSources": [{"app": "live", "stream": "p", "url": "http://h/a/b"}]}"#,
            "RtmpPullSources[0].url: expected rtmp://host[:port]/app/stream, got \"http://h/a/b\": the scheme",
        ),
        (
            r#"{"RtmpPullSources": [{"app": "live", "stream": "p", "url": "rtmp://h/app"}]}"#,
            "RtmpPullSources[0].url: expected rtmp://host[:port]/app/stream, got \"rtmp://h/app\": no app and stream",
        ),
        (
            r#"{"RtmpPullSources": [{"app": "live", "stream": "p", "url": "rtmp://h:0/a/b"}]}"#,
            "RtmpPullSources[0].url: expected rtmp://host[:port]/app/stream, got \"rtmp://h:0/a/b\": bad port",
        ),
        (
            r#"{"RtmpPullSources": [{"app": "live", "stream": "p", "url": "rtmp://:1935/a/b"}]}"#,
            "RtmpPullSources[0].url: expected rtmp://host[:port]/app/stream, got \"rtmp://:1935/a/b\": no host",
        ),
        (
            r#"{"RtmpPullSources": [{"app": "live", "stream": "p", "url": "rtmp://h/a/b", "mode": "lazy"}]}"#,
            "RtmpPullSources[0].mode: expected \"always\" or \"on_demand\", got \"lazy\"",
        ),
        (
            r#"{"RtmpPullSources": [{"app": "live", "stream": "p", "url": "rtmp://h/a/b", "idle_grace_secs": 86401}]}"#,
            "RtmpPullSources[0].idle_grace_secs: must be 0..=86400",
        ),
        (
            r#"{"RtmpPullSources": [{"app": "live", "stream": "p", "url": "rtmp://h/a/b"}, {"app": "live", "stream": "p", "url": "rtmp://h/a/c"}]}"#,
            "RtmpPullSources[1].stream: \"live/p\" is already used by RtmpPullSources[0]",
        ),
        (
            r#"{"Cameras": [{"id": "c", "ip": "1.2.3.4", "port": 1, "protocol": "udp", "stream": "p"}], "RtmpPullSources": [{"app": "live", "stream": "p", "url": "rtmp://h/a/b"}]}"#,
            "RtmpPullSources[0].stream: \"live/p\" is already the stream of an MPEG-TS input",
        ),
    ];
    for (text, expected) in cases {
        let error = error(text);
        let message = error.to_string();
        assert!(
            message.starts_with(&format!("rules.conf: {expected}")),
            "{text}: {message}"
        );
        assert_eq!(
            (error.line(), error.path()),
            (None, Path::new("rules.conf"))
        );
    }
}

#[test]
fn republish_rule_fields() {
    let base = json!({"src_app": "live", "dest_addr": "h", "dest_port": 1935, "dest_app": "a"});
    let with = |key: &str, value: Value| {
        let mut body = base.clone();
        body[key] = value;
        validate_republish_rule(body, RuleOwner::Api, "id1".into())
    };
    let ok = |key: &str, value: Value| with(key, value).unwrap_or_else(|e| panic!("{key}: {e}"));
    assert_eq!(ok("dest_port", json!("1936")).dest_port, 1936);
    assert_eq!(ok("dest_port", json!(" 443 ")).dest_port, 443);
    assert_eq!(ok("dest_port", json!(1937)).dest_port, 1937);
    assert_eq!(
        ok("auth_schema", json!("STROM")).auth_schema,
        AuthSchema::Native
    );
    assert_eq!(
        ok("auth_schema", json!("NIMBLE")).auth_schema,
        AuthSchema::Native
    );
    assert_eq!(
        ok("auth_schema", json!("PERISCOPE")).auth_schema,
        AuthSchema::Periscope
    );
    assert_eq!(ok("auth_schema", Value::Null).auth_schema, AuthSchema::None);
    let rule = ok("id", json!("ignored"));
    assert_eq!((rule.id.as_str(), rule.owner), ("id1", RuleOwner::Api));

    let errors = [
        (
            "dest_port",
            json!("abc"),
            "dest_port: expected a port number or numeric string, got \"abc\"",
        ),
        (
            "dest_port",
            json!(true),
            "dest_port: expected a port number or numeric string, got a boolean",
        ),
        ("dest_port", json!(0), "dest_port: must be 1..=65535, got 0"),
        (
            "dest_port",
            json!("70000"),
            "dest_port: must be 1..=65535, got \"70000\"",
        ),
        (
            "dest_port",
            json!(-1),
            "dest_port: must be 1..=65535, got -1",
        ),
        (
            "dest_port",
            json!(1.5),
            "dest_port: must be 1..=65535, got 1.5",
        ),
        ("dest_port", Value::Null, "dest_port: required"),
        (
            "auth_schema",
            json!("nimble"),
            "auth_schema: unknown scheme \"nimble\"",
        ),
        (
            "auth_schema",
            json!(1),
            "auth_schema: expected a string, got a number",
        ),
        ("src_app", json!(""), "src_app: must not be empty"),
        ("dest_addr", Value::Null, "dest_addr: required"),
        ("dest_addr", json!("a b"), "dest_addr: expected a host name"),
        (
            "src_stream",
            json!("s"),
            "dest_stream: required when src_stream is set",
        ),
        (
            "ssl",
            json!("true"),
            "ssl: expected true or false, got a string",
        ),
        (
            "keep_src_stream_params",
            json!(1),
            "keep_src_stream_params: expected true or false",
        ),
        (
            "owner",
            json!(1),
            "owner: unknown field; expected one of id, src_app",
        ),
    ];
    for (key, value, expected) in errors {
        let message = with(key, value.clone()).unwrap_err();
        assert!(message.starts_with(expected), "{key} = {value}: {message}");
    }
    let message = validate_republish_rule(json!([]), RuleOwner::Api, "x".into()).unwrap_err();
    assert_eq!(message, "expected an object of rule fields, got an array");
}

#[test]
fn republish_rule_strings_are_bounded() {
    let base = json!({"src_app": "live", "dest_addr": "h", "dest_port": 1935, "dest_app": "a"});
    let with = |key: &str, len: usize| {
        let mut body = base.clone();
        body[key] = json!("x".repeat(len));
        validate_republish_rule(body, RuleOwner::Api, "id1".into())
    };
    for (key, max) in [
        ("dest_addr", MAX_RULE_FIELD_BYTES),
        ("dest_app", MAX_RULE_FIELD_BYTES),
        ("dest_login", MAX_RULE_FIELD_BYTES),
        ("dest_password", MAX_RULE_FIELD_BYTES),
        ("dest_app_params", MAX_RULE_PARAMS_BYTES),
        ("dest_stream_params", MAX_RULE_PARAMS_BYTES),
    ] {
        assert!(with(key, max).is_ok(), "{key} at its limit");
        assert_eq!(
            with(key, max + 1).unwrap_err(),
            format!("{key}: {} bytes long; the limit is {max} bytes", max + 1)
        );
    }
    let long_id = "i".repeat(MAX_RULE_ID_BYTES + 1);
    let text = format!(
        r#"{{"RtmpRepublishRules": [{{"id": "{long_id}", "src_app": "live", "dest_addr": "h", "dest_port": 1, "dest_app": "a"}}]}}"#
    );
    let error = parse(&text, Path::new("rules.conf"))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("RtmpRepublishRules[0].id: 257 bytes long"),
        "{error}"
    );
}

#[test]
fn an_oversized_rules_file_is_refused_before_parsing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rules.conf");
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(MAX_RULES_BYTES + 1).unwrap();
    let error = load(&path).unwrap_err().to_string();
    assert!(error.contains("larger than the limit"), "{error}");
}

#[test]
fn load_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rules.conf");
    let error = load(&path).unwrap_err();
    assert_eq!(error.path(), path);
    std::fs::write(&path, r#"{"RtmpSettings": {"duration": 10}}"#).unwrap();
    assert_eq!(load(&path).unwrap().rtmp.duration, 10);
}
#[test]
fn legacy_rtmp_settings_become_delivery_settings() {
    let rules = parse_ok(
        r#"{"RtmpSettings": {"duration": 4, "protocols": ["RTMP", "HLS", "ICECAST"],
            "apps": [{"app": "a", "protocols": ["RTMP"]}, {"app": "b", "duration": 2},
                     {"app": "c", "login": "l", "password": "p"}],
            "abr": [{"app": "a", "stream": "abr", "streams": [{"app": "a", "stream": "hi"}]}]}}"#,
    );
    assert_eq!(
        rules.delivery,
        DeliverySettings {
            outputs: vec![DeliveryOutput::Hls, DeliveryOutput::Icecast],
            segment_duration_secs: 4,
            part_target_ms: 334,
            dash_segment_addressing: DashAddressing::Timeline,
            apps: vec![
                AppDelivery {
                    app: "a".into(),
                    outputs: Some(vec![]),
                    segment_duration_secs: None,
                    dash_segment_addressing: None,
                },
                AppDelivery {
                    app: "b".into(),
                    outputs: None,
                    segment_duration_secs: Some(2),
                    dash_segment_addressing: None,
                },
            ],
            streams: vec![],
            abr: rules.rtmp.abr.clone(),
        }
    );
    assert!(!rules.delivery.for_stream("a", "s").has(DeliveryOutput::Hls));
    assert_eq!(rules.delivery.for_stream("b", "s").segment_duration_secs, 2);
    assert_eq!(rules.delivery.for_stream("c", "s").segment_duration_secs, 4);
}

#[test]
fn dash_segment_addressing_is_timeline_unless_set_globally_per_app_or_per_stream() {
    let rules = parse_ok(
        r#"{"Delivery": {"outputs": ["DASH"], "dash_segment_addressing": "number",
              "apps": [{"app": "tl", "dash_segment_addressing": "timeline"}],
              "streams": [{"app": "tl", "stream": "n", "dash_segment_addressing": "number"}]}}"#,
    );
    let addressing = |app, stream| {
        rules
            .delivery
            .for_stream(app, stream)
            .dash_segment_addressing
    };
    assert_eq!(addressing("live", "s"), DashAddressing::Number);
    assert_eq!(addressing("tl", "s"), DashAddressing::Timeline);
    assert_eq!(addressing("tl", "n"), DashAddressing::Number);
    assert_eq!(
        parse_ok("{}").delivery.dash_segment_addressing,
        DashAddressing::Timeline
    );
    let message =
        error(r#"{"Delivery": {"apps": [{"app": "a", "dash_segment_addressing": "list"}]}}"#)
            .to_string();
    assert!(message.contains("dash_segment_addressing"), "{message}");
}

#[test]
fn a_delivery_key_replaces_the_legacy_delivery_whole() {
    let rules = parse_ok(
        r#"{"RtmpSettings": {"duration": 4, "protocols": ["ICECAST"],
                             "apps": [{"app": "live", "duration": 3}]},
            "Delivery": {"outputs": ["HLS", "DASH", "LLHLS", "ICECAST", "MPEGTS", "DVR", "SCTE35"],
              "apps": [{"app": "live", "outputs": ["DASH"]}],
              "streams": [{"app": "live", "stream": "s", "outputs": ["HLS"], "segment_duration_secs": 2}],
              "abr": [{"app": "live", "stream": "abr", "streams": [{"app": "live", "stream": "s"}]}]}}"#,
    );
    // The API's view of RtmpSettings is unchanged.
    assert_eq!(rules.rtmp.duration, 4);
    assert_eq!(rules.rtmp.protocols, [OutputProtocol::Icecast]);
    let delivery = &rules.delivery;
    assert_eq!(delivery.outputs, DeliveryOutput::ALL);
    assert_eq!(delivery.segment_duration_secs, 6);
    assert_eq!(
        delivery.streams,
        [StreamDelivery {
            app: "live".into(),
            stream: "s".into(),
            outputs: Some(vec![DeliveryOutput::Hls]),
            segment_duration_secs: Some(2),
            dash_segment_addressing: None,
        }]
    );
    let app = delivery.for_stream("live", "other");
    assert_eq!(
        (app.outputs, app.segment_duration_secs),
        (&[DeliveryOutput::Dash][..], 6)
    );
    let stream = delivery.for_stream("live", "s");
    assert_eq!(
        (stream.outputs, stream.segment_duration_secs),
        (&[DeliveryOutput::Hls][..], 2)
    );
    assert_eq!(
        delivery
            .abr_group("live", "abr")
            .map(|g: &AbrGroup| g.streams.len()),
        Some(1)
    );
    assert_eq!(
        parse_ok(r#"{"Delivery": {}}"#).delivery,
        DeliverySettings::default()
    );
}

#[test]
fn delivery_errors_name_the_json_path() {
    let cases = [
        (
            r#"{"Delivery": {"outputs": ["HLS", "FLV"]}}"#,
            "Delivery.outputs[1]: unknown output \"FLV\"; expected HLS, DASH, LLHLS, ICECAST, MPEGTS, DVR, SCTE35",
        ),
        (
            r#"{"Delivery": {"segment_duration_secs": 0}}"#,
            "Delivery.segment_duration_secs: must be 1..=60, got 0",
        ),
        (
            r#"{"Delivery": {"part_target_ms": 50}}"#,
            "Delivery.part_target_ms: must be 100..=1000, got 50",
        ),
        (
            r#"{"Delivery": {"apps": [{"app": "a"}, {"app": "a"}]}}"#,
            "Delivery.apps[1].app: \"a\" is already used by apps[0]",
        ),
        (
            r#"{"Delivery": {"streams": [{"app": "a", "stream": "s", "outputs": ["DASH", "DASH"]}]}}"#,
            "Delivery.streams[0].outputs[1]: \"DASH\" is listed twice",
        ),
        (
            r#"{"Delivery": {"abr": [{"app": "l", "stream": "a", "streams": []}]}}"#,
            "Delivery.abr[0].streams: must list at least one stream",
        ),
        (
            r#"{"Cameras": [{"id": "a", "ip": "0.0.0.0", "port": 5000, "protocol": "udp"}, {"id": "b", "ip": "0.0.0.0", "port": 5000, "protocol": "srt"}]}"#,
            "Cameras[1].port: \"0.0.0.0:5000\" is already used by Cameras[0]",
        ),
    ];
    for (text, expected) in cases {
        let message = error(text).to_string();
        assert!(
            message.starts_with(&format!("rules.conf: {expected}")),
            "{text}: {message}"
        );
    }
    let message = error(r#"{"Delivery": {"outputs": [], "extra": 1}}"#).to_string();
    assert!(message.contains("unknown field `extra`"), "{message}");
}

#[test]
fn transcoding_ladders_are_validated() {
    use strom_ipc::transcode_rules::RenditionAudio;
    let rules = parse_ok(
        r#"{"Transcoding": {"max_concurrent": 2, "ladders": [
             {"app": "live", "renditions": [
               {"name": "480p", "width": 854, "height": 480, "video_bitrate": 1200},
               {"name": "low", "width": 426, "height": 240, "video_bitrate": 300,
                "max_fps": 15, "profile": "baseline", "preset": "ultrafast",
                "audio": {"bitrate": 64, "channels": 1}}]}]}}"#,
    );
    let settings = &rules.transcoding;
    assert_eq!(settings.max_concurrent, 2);
    assert_eq!(settings.cpu_budget_percent, None, "75% of the cores");
    let ladder = settings.ladder_for("live", "cam").unwrap();
    let (high, low) = (&ladder.renditions[0], &ladder.renditions[1]);
    assert_eq!(
        (
            &high.profile[..],
            &high.preset[..],
            high.audio,
            high.max_fps
        ),
        ("main", "veryfast", RenditionAudio::Passthrough, None)
    );
    assert_eq!(
        low.audio,
        RenditionAudio::Encode {
            bitrate_kbps: 64,
            channels: 1
        }
    );
    assert_eq!(parse_ok("{}").transcoding.max_concurrent, 4);
    let budget = parse_ok(r#"{"Transcoding": {"cpu_budget_percent": 150, "ladders": []}}"#);
    assert_eq!(budget.transcoding.cpu_budget_percent, Some(150));
    let message = error(r#"{"Transcoding": {"cpu_budget_percent": 0}}"#).to_string();
    assert!(
        message.contains("Transcoding.cpu_budget_percent"),
        "{message}"
    );
    let rendition = |fields: &str| {
        format!(
            r#"{{"Transcoding": {{"ladders": [{{"app": "live", "renditions": [{{"name": "r", "width": 640, "height": 360, "video_bitrate": 800{fields}}}]}}]}}}}"#
        )
    };
    for (fields, field) in [
        (r#", "width": 641"#, "width"),
        (r#", "preset": "turbo""#, "preset"),
        (r#", "profile": "high10""#, "profile"),
        (r#", "audio": "copy""#, "audio"),
        (
            r#", "audio": {"bitrate": 64, "channels": 6}"#,
            "audio.channels",
        ),
        (r#", "max_fps": 0"#, "max_fps"),
    ] {
        let text =
            rendition(fields).replacen(r#""width": 640, "#, "", usize::from(field == "width"));
        let message = error(&text).to_string();
        assert!(
            message.contains(&format!("Transcoding.ladders[0].renditions[0].{field}")),
            "{fields}: {message}"
        );
    }
    let bad_name = rendition("").replace(r#""name": "r""#, r#""name": "a b""#);
    assert!(error(&bad_name).to_string().contains("name"));
}
