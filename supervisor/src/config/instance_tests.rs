//! Tests of strom.conf parsing and validation (`instance.rs`), kept beside it so that file stays readable.

use super::*;
use std::net::Ipv6Addr;

const PATH: &str = "/etc/strom/strom.conf";

fn parse_ok(text: &str) -> InstanceConfig {
    parse(text, Path::new(PATH)).unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

#[test]
fn defaults() {
    let config = parse_ok("# nothing but comments\n\n   \n");
    assert_eq!(
        config,
        InstanceConfig::defaults(Path::new(PATH), Path::new("/etc/strom"))
    );
    assert_eq!(config.port, 8081);
    assert_eq!(config.listen_interfaces, vec![ListenAddress::Any]);
    assert_eq!(config.management_listen_interfaces, None);
    assert_eq!(config.management_port, 8082);
    assert_eq!(config.rules_path, Path::new("/etc/strom/rules.conf"));
    assert_eq!(config.data_dir, Path::new("/var/lib/strom"));
    assert_eq!(config.run_dir, Path::new("/run/strom"));
    assert_eq!(config.logging, "info");
    assert_eq!(
        (config.ram_cache_size_mb, config.file_cache_size_mb),
        (512, 10240)
    );
}

#[test]
fn every_key() {
    let v4 = |a, b, c, d| ListenAddress::Ip(IpAddr::V4(Ipv4Addr::new(a, b, c, d)));
    let text = "\
        port = 8000\n\
        listen_interfaces = 127.0.0.1, ::1\n\
        ssl_port = 8443\n\
        ssl_certificate = tls/cert.pem\n\
        ssl_certificate_key = /keys/key.pem\n\
        management_listen_interfaces = *\n\
        management_port = 9000\n\
        management_token = s3cr#t   # the # inside the token stays\n\
        rules_path = ../rules.json\n\
        data_dir = data\n\
        run_dir = /tmp/run\n\
        logging = info,strom=debug\n\
        panel_url = https://panel.example.com/rules\n\
        drm_settings_path = drm.json\n\
        max_ram_cache_size = 64\n\
        max_file_cache_size = 100\n\
        access_control_allow_origin = *\n\
        hls_stream_grace = 5\n\
        icecast_burst_size = 131072\n\
        management_header_timeout = 2\n\
        management_idle_timeout = 3\n\
        management_body_timeout = 4\n\
        management_max_connections = 5\n\
        management_max_connections_per_ip = 7\n\
        http_max_connections = 8\n\
        http_max_connections_per_ip = 9\n\
        http_header_timeout = 11\n\
        management_worker_timeout = 6\n\
        management_ssl_certificate = api-cert.pem\n\
        management_ssl_certificate_key = /keys/api-key.pem\n\
        management_allowed_origins = https://panel.example.com, http://10.0.0.5:8080/\n\
        management_allowed_hosts = media.example.com, [2001:db8::1]\n\
        metrics_listen_interfaces = 127.0.0.1\n\
        metrics_port = 9200\n\
        metrics_token = m3tr1cs\n";
    let config = parse_ok(text);
    let expected = InstanceConfig {
        path: PathBuf::from(PATH),
        port: 8000,
        listen_interfaces: vec![
            v4(127, 0, 0, 1),
            ListenAddress::Ip(Ipv6Addr::LOCALHOST.into()),
        ],
        ssl_port: Some(8443),
        ssl_certificate: Some("/etc/strom/tls/cert.pem".into()),
        ssl_certificate_key: Some("/keys/key.pem".into()),
        management_listen_interfaces: Some(vec![ListenAddress::Any]),
        management_port: 9000,
        management_token: Some("s3cr#t".into()),
        rules_path: "/etc/strom/../rules.json".into(),
        data_dir: "/etc/strom/data".into(),
        run_dir: "/tmp/run".into(),
        logging: "info,strom=debug".into(),
        panel_url: Some("https://panel.example.com/rules".into()),
        drm_settings_path: Some("/etc/strom/drm.json".into()),
        ram_cache_size_mb: 64,
        file_cache_size_mb: 100,
        access_control_allow_origin: Some("*".into()),
        hls_session_timeout_secs: 60,
        hls_stream_grace_secs: 5,
        icecast_burst_bytes: 131_072,
        ndi_discovery_interfaces: None,
        http_limits: strom_ipc::messages::HttpLimits {
            max_connections: 8,
            max_connections_per_ip: 9,
            header_timeout_secs: 11,
        },
        management: ManagementServer {
            header_timeout_secs: 2,
            idle_timeout_secs: 3,
            body_timeout_secs: 4,
            max_connections: 5,
            max_connections_per_ip: 7,
            worker_timeout_secs: 6,
            ssl_certificate: Some("/etc/strom/api-cert.pem".into()),
            ssl_certificate_key: Some("/keys/api-key.pem".into()),
            allowed_origins: vec![
                super::super::origin::parse_origin("https://panel.example.com:443").unwrap(),
                super::super::origin::parse_origin("http://10.0.0.5:8080").unwrap(),
            ],
            allowed_hosts: parse_host_list("media.example.com, 2001:db8::1").unwrap(),
        },
        metrics: MetricsSettings {
            listen_interfaces: Some(vec![v4(127, 0, 0, 1)]),
            port: 9200,
            token: Some("m3tr1cs".into()),
        },
    };
    assert_eq!(config, expected);
    assert!(!format!("{config:?}").contains("m3tr1cs"));
    // The printed settings read back as the same configuration, except the tokens.
    let printed = config.effective_settings();
    assert!(printed.contains("management_token = <set>\n"), "{printed}");
    assert!(printed.contains("metrics_token = <set>\n"), "{printed}");
    assert!(!printed.contains("s3cr") && !printed.contains("m3tr"));
    let reread = parse_ok(
        &printed
            .replace("management_token = <set>", "management_token = s3cr#t")
            .replace("metrics_token = <set>", "metrics_token = m3tr1cs"),
    );
    assert_eq!(reread, expected);
}

#[test]
fn effective_settings_comment_unset_options() {
    let printed = parse_ok("").effective_settings();
    assert!(printed.contains("\n# ssl_port = (unset)\n"), "{printed}");
    assert!(
        printed.contains("\n# management_token = (unset)\n"),
        "{printed}"
    );
    assert_eq!(parse_ok(&printed), parse_ok(""));
}

#[test]
fn comments_and_whitespace() {
    let cases = [
        ("port=9", 9),
        ("  port   =   9   ", 9),
        ("port = 9 # trailing comment", 9),
        ("port = 9\t# after a tab", 9),
        ("# port = 1\nport = 9", 9),
        ("\u{feff}port = 9\r\n", 9),
    ];
    for (text, port) in cases {
        assert_eq!(parse_ok(text).port, port, "{text:?}");
    }
    assert_eq!(
        parse_ok("management_token = a#b")
            .management_token
            .as_deref(),
        Some("a#b")
    );
}

#[test]
fn listen_addresses() {
    let ip = |s: &str| ListenAddress::Ip(s.parse().unwrap());
    let cases: [(&str, Vec<ListenAddress>); 4] = [
        ("*", vec![ListenAddress::Any]),
        ("10.0.0.1", vec![ip("10.0.0.1")]),
        (
            "10.0.0.1 ,[::1], fe80::1",
            vec![ip("10.0.0.1"), ip("::1"), ip("fe80::1")],
        ),
        ("::", vec![ip("::")]),
    ];
    for (value, expected) in cases {
        let config = parse_ok(&format!("management_listen_interfaces = {value}"));
        assert_eq!(
            config.management_listen_interfaces,
            Some(expected),
            "{value}"
        );
    }
    let addrs = socket_addrs(&[ListenAddress::Any, ip("::1")], 80);
    assert_eq!(
        addrs,
        ["0.0.0.0:80".parse().unwrap(), "[::1]:80".parse().unwrap()]
    );
}

#[test]
fn errors_name_line_and_key() {
    let cases = [
        (
            "\n\nport = abc",
            "3: key 'port': expected a port number 1-65535, got \"abc\"",
        ),
        (
            "port = 0",
            "1: key 'port': expected a port number 1-65535, got \"0\"",
        ),
        (
            "port = 70000",
            "1: key 'port': expected a port number 1-65535",
        ),
        ("port 8081", "1: expected `key = value`"),
        (
            "\nmanagement_allowed_origins = panel.example.com",
            "2: key 'management_allowed_origins': expected an origin such as",
        ),
        (
            "management_allowed_origins = https://a.example/panel",
            "1: key 'management_allowed_origins': expected scheme://host[:port] without a path",
        ),
        (
            "management_allowed_hosts = a.example:8082",
            "1: key 'management_allowed_hosts': expected a host name without a port",
        ),
        (
            "management_allowed_hosts = a b",
            "1: key 'management_allowed_hosts': expected host names or addresses",
        ),
        ("# c\n= 5", "2: unknown key ''"),
        ("prot = 1", "1: unknown key 'prot' (did you mean 'port'"),
        ("colour = red", "1: unknown key 'colour'"),
        (
            "port = 1\n\nport = 2",
            "3: key 'port' is already set on line 1",
        ),
        (
            "management_token =",
            "1: key 'management_token': empty value",
        ),
        (
            "management_token = # no token",
            "1: key 'management_token': empty value",
        ),
        (
            "listen_interfaces = *, 127.0.0.1",
            "1: key 'listen_interfaces': \"*\" cannot be",
        ),
        (
            "listen_interfaces = 1.2.3.4,",
            "1: key 'listen_interfaces': expected \"*\" or comma-separated IP addresses",
        ),
        (
            "listen_interfaces = localhost",
            "1: key 'listen_interfaces': expected \"*\" or comma-separated IP addresses, got \"localhost\"",
        ),
        (
            "listen_interfaces = ::1, [::1]",
            "1: key 'listen_interfaces': [::1] is listed twice",
        ),
        (
            "logging = info strom=debug",
            "1: key 'logging': expected a tracing filter",
        ),
        (
            "panel_url = ftp://x",
            "1: key 'panel_url': expected an http:// or https:// URL",
        ),
        (
            "panel_url = https://",
            "1: key 'panel_url': expected an http://",
        ),
        (
            "max_ram_cache_size = -1",
            "1: key 'max_ram_cache_size': expected a size",
        ),
        (
            "max_file_cache_size = 0",
            "1: key 'max_file_cache_size': expected a size",
        ),
        (
            "hls_stream_grace = 0",
            "1: key 'hls_stream_grace': expected seconds 1-86400",
        ),
        (
            "icecast_burst_size = 524289",
            "1: key 'icecast_burst_size': expected bytes 0-524288",
        ),
        (
            "management_header_timeout = 0",
            "1: key 'management_header_timeout': expected seconds 1-3600",
        ),
        (
            "management_max_connections = 0",
            "1: key 'management_max_connections': expected a number 1-65536",
        ),
        (
            "management_ssl_certificate = c",
            "1: key 'management_ssl_certificate': HTTPS for the management API also needs management_ssl_certificate_key",
        ),
        (
            "\nmanagement_ssl_certificate_key = k",
            "2: key 'management_ssl_certificate_key': HTTPS for the management API also needs management_ssl_certificate",
        ),
        (
            "access_control_allow_origin = a\u{7}",
            "1: key 'access_control_allow_origin'",
        ),
        (
            "\nssl_port = 443",
            "2: key 'ssl_port': HTTPS also needs ssl_certificate and ssl_certificate_key",
        ),
        (
            "ssl_certificate_key = k",
            "1: key 'ssl_certificate_key': the certificate also needs ssl_certificate",
        ),
        (
            "ssl_port = 8081\nssl_certificate = c\nssl_certificate_key = k",
            "1: key 'ssl_port': 8081 is also the HTTP port",
        ),
        (
            "management_listen_interfaces = *\nmanagement_port = 8081",
            "2: key 'management_port': port 8081 is also the HTTP",
        ),
        (
            "port = 8082\nmanagement_listen_interfaces = ::1",
            "2: key 'management_listen_interfaces': port 8082",
        ),
        (
            "metrics_port = 0",
            "1: key 'metrics_port': expected a port number 1-65535",
        ),
        (
            "metrics_listen_interfaces = localhost",
            "1: key 'metrics_listen_interfaces': expected \"*\" or comma-separated IP addresses",
        ),
        (
            "metrics_token = two words",
            "1: key 'metrics_token': expected printable ASCII without spaces",
        ),
        (
            "metrics_listen_interfaces = *\nmetrics_port = 8081",
            "2: key 'metrics_port': port 8081 is also the HTTP delivery port",
        ),
        (
            "management_listen_interfaces = 127.0.0.1\nmanagement_port = 9108\n\
             listen_interfaces = 10.0.0.1\nmetrics_listen_interfaces = 127.0.0.1",
            "4: key 'metrics_listen_interfaces': port 9108 is also the management API port",
        ),
        (
            "metrics_tokn = x",
            "1: unknown key 'metrics_tokn' (did you mean",
        ),
    ];
    for (text, expected) in cases {
        let error = parse(text, Path::new("packaging/strom.conf"))
            .unwrap_err()
            .to_string();
        let expected = format!("packaging/strom.conf:{expected}");
        assert!(error.starts_with(&expected), "{text:?}: {error}");
    }
    // Different interfaces may share a port.
    let config = parse_ok(
        "listen_interfaces = 10.0.0.1\nmanagement_listen_interfaces = 127.0.0.1\nmanagement_port = 8081",
    );
    assert_eq!(config.management_port, 8081);
}

#[test]
fn metrics_listener_is_off_by_default() {
    let config = parse_ok("");
    assert_eq!(config.metrics.listen_interfaces, None);
    assert_eq!(config.metrics.port, 9108);
    assert_eq!(config.metrics.token, None);
    // Another interface may use a taken port.
    let config = parse_ok(
        "listen_interfaces = 10.0.0.1\nmetrics_listen_interfaces = 127.0.0.1\nmetrics_port = 8081",
    );
    assert_eq!(config.metrics.port, 8081);
}

#[test]
fn error_accessors() {
    let error = parse("port = 1\nport = 2", Path::new(PATH)).unwrap_err();
    assert_eq!(
        (error.path(), error.line(), error.key()),
        (Path::new(PATH), Some(2), Some("port"))
    );
}

#[test]
fn load_resolves_against_the_file_directory() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("strom.conf");
    std::fs::write(&path, "data_dir = ../var/data\n").unwrap();
    let config = load(&path).unwrap();
    assert_eq!(config.data_dir, dir.path().join("../var/data"));
    assert_eq!(config.rules_path, dir.path().join("rules.conf"));

    let missing = dir.path().join("absent.conf");
    let error = load(&missing).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with(&format!("{}: cannot read:", missing.display()))
    );
    assert_eq!(error.path(), missing);
}

#[test]
fn packaged_file_is_valid() {
    let text = include_str!("../../../packaging/strom.conf");
    let config = parse(text, Path::new("/src/packaging/strom.conf")).unwrap();
    assert_eq!(config.data_dir, Path::new("/src/packaging/../var/data"));
}
