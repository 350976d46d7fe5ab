//! `/metrics` end to end: strom with the metrics listener and a bearer token, one RTMP
//! stream published by ffmpeg, and Debian's real `prometheus` scraping it every second
//! with the token; Prometheus's own query API must then report the stream live and the
//! target up. Requests without the token get 401. Idle connections, from one address or
//! from several, do not block scrapes. A scrape that asks for the text format 0.0.4 gets
//! it, and `promtool check metrics` accepts it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{Proc, publish, rtmp_url, wait_live};
use common::{Server, free_port, refused, require_tool, wait_for};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::Duration;

const TOKEN: &str = "metrics-test-token-7f3a9c";

/// curl `url` with extra `args`: HTTP status, `Content-Type` and body (any format).
fn fetch(url: &str, args: &[&str]) -> Option<(u16, String, String)> {
    let output = Command::new("curl")
        .args([
            "-sS",
            "--max-time",
            "10",
            "-w",
            "\n%{http_code} %{content_type}",
        ])
        .args(args)
        .arg(url)
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    let (body, trailer) = text.rsplit_once('\n')?;
    let (code, content_type) = trailer.split_once(' ').unwrap_or((trailer, ""));
    Some((code.parse().ok()?, content_type.to_owned(), body.to_owned()))
}

/// The value of the first sample of an instant query, as Prometheus prints it.
fn query(prometheus: u16, promql: &str) -> Option<String> {
    let url = format!("http://127.0.0.1:{prometheus}/api/v1/query");
    let (code, _, body) = fetch(
        &url,
        &["-G", "--data-urlencode", &format!("query={promql}")],
    )?;
    if code != 200 {
        return None;
    }
    let answer: serde_json::Value = serde_json::from_str(&body).ok()?;
    answer["data"]["result"][0]["value"][1]
        .as_str()
        .map(str::to_owned)
}

fn prometheus_config(metrics_port: u16) -> String {
    format!(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
         scrape_configs:\n  - job_name: strom\n    authorization:\n      type: Bearer\n      credentials: {TOKEN}\n    static_configs:\n      - targets: ['127.0.0.1:{metrics_port}']\n"
    )
}

#[test]
fn prometheus_scrapes_strom_with_a_bearer_token() {
    require_tool("prometheus", "prometheus");
    require_tool("curl", "curl");
    let metrics_port = free_port();
    let server = Server::start(&format!(
        "metrics_listen_interfaces = 127.0.0.1\nmetrics_port = {metrics_port}\nmetrics_token = {TOKEN}"
    ));
    server.wait_ready();
    let metrics_url = format!("http://127.0.0.1:{metrics_port}/metrics");

    // Only the interface the config names listens.
    let elsewhere: SocketAddr = format!("127.0.0.2:{metrics_port}").parse().unwrap();
    assert!(
        refused(elsewhere),
        "metrics listener on an unnamed interface"
    );

    // No token, a wrong token, another scheme: 401.
    let bearer = format!("Authorization: Bearer {TOKEN}");
    for args in [
        vec![],
        vec!["-H", "Authorization: Bearer wrong-token"],
        vec!["-u", "user:pass"],
    ] {
        let (code, _, _) = fetch(&metrics_url, &args).expect("metrics listener answers");
        assert_eq!(code, 401, "{args:?}");
    }
    // OpenMetrics only when asked for; curl's `*/*` gets the text format 0.0.4.
    let openmetrics = "Accept: application/openmetrics-text; version=1.0.0";
    let (code, content_type, text) =
        fetch(&metrics_url, &["-H", &bearer, "-H", openmetrics]).unwrap();
    assert_eq!(code, 200, "{text}");
    assert!(
        content_type.starts_with("application/openmetrics-text"),
        "{content_type}"
    );
    assert!(text.ends_with("# EOF\n"), "{text}");
    assert!(text.contains("# TYPE strom_bytes_sent counter\n"), "{text}");
    let (code, content_type, text) = fetch(&metrics_url, &["-H", &bearer]).unwrap();
    assert_eq!(code, 200, "{text}");
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    assert!(!text.contains("# EOF"), "{text}");
    assert!(
        text.contains("# TYPE strom_bytes_sent_total counter\n"),
        "{text}"
    );
    assert!(text.contains("strom_streams_live 0\n"), "{text}");
    assert!(
        text.contains("strom_worker_state{worker=\"rtmp\",state=\"ready\"} 1\n"),
        "{text}"
    );

    let mut publisher = publish(&rtmp_url(&server, "live/cam"));
    if wait_live(&server, "live", "cam", Duration::from_secs(30)).is_none() {
        panic!(
            "stream never went live; ffmpeg: {}\nlog:\n{}",
            publisher.stop_and_stderr(),
            server.log()
        );
    }

    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(&config, prometheus_config(metrics_port)).unwrap();
    let prometheus_port = free_port();
    let log = std::fs::File::create(dir.path().join("prometheus.log")).unwrap();
    let _prometheus = Proc(
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{prometheus_port}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("starting prometheus"),
    );
    let prometheus_log = || std::fs::read_to_string(dir.path().join("prometheus.log")).unwrap();

    let live = wait_for(Duration::from_secs(60), "strom_streams_live = 1", || {
        query(prometheus_port, "strom_streams_live").filter(|value| value == "1")
    });
    assert!(
        live.is_some(),
        "Prometheus never saw strom_streams_live 1; prometheus log:\n{}\nstrom log:\n{}",
        prometheus_log(),
        server.log()
    );

    let targets_url = format!("http://127.0.0.1:{prometheus_port}/api/v1/targets");
    let health = wait_for(Duration::from_secs(30), "scrape target up", || {
        let (_, _, body) = fetch(&targets_url, &[])?;
        let targets: serde_json::Value = serde_json::from_str(&body).ok()?;
        let target = &targets["data"]["activeTargets"][0];
        (target["health"] == "up").then(|| target.clone())
    });
    assert!(
        health.is_some(),
        "target not up; log:\n{}",
        prometheus_log()
    );
    assert_eq!(
        query(prometheus_port, "up{job=\"strom\"}").as_deref(),
        Some("1")
    );

    // The stream's bitrate and the API latencies (wait_ready asked /manage/workers)
    // arrive through the same scrape.
    let bitrate = query(
        prometheus_port,
        "strom_stream_ingest_bytes_per_second{app=\"live\",stream=\"cam\",protocol=\"RTMP\"}",
    );
    assert!(bitrate.is_some(), "no bitrate series");
    let requests = query(
        prometheus_port,
        "sum(strom_api_request_duration_seconds_count{route=\"/manage/workers\"})",
    );
    assert!(
        requests
            .and_then(|count| count.parse::<f64>().ok())
            .is_some_and(|count| count >= 1.0),
        "no management API latency recorded"
    );
    drop(publisher);
}

/// `promtool check metrics` (Prometheus's own linter, which reads the text format 0.0.4)
/// passes on a live scrape asked for as `text/plain; version=0.0.4`, with a stream live
/// and an SRT input connected so that every metric family has series.
#[test]
fn promtool_accepts_a_live_text_format_scrape() {
    require_tool("promtool", "prometheus");
    require_tool("curl", "curl");
    let metrics_port = free_port();
    let srt_port = free_port();
    let server = Server::start(&format!(
        "metrics_listen_interfaces = 127.0.0.1\nmetrics_port = {metrics_port}"
    ));
    server.apply_rules(&format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}], "duration": 1, "protocols": ["HLS"]}},
 "Cameras": [{{"id": "srt-in", "ip": "0.0.0.0", "port": {srt_port}, "protocol": "srt", "receive_mode": "listen",
   "app": "live", "stream": "srt", "parameters": []}}]}}"#,
        server.ports.rtmp
    ));
    let mut rtmp = publish(&rtmp_url(&server, "live/cam"));
    let mut srt = common::media::publish_coded(
        &format!("srt://127.0.0.1:{srt_port}?pkt_size=1316"),
        "mpegts",
        "libx264",
    );
    for stream in ["cam", "srt"] {
        wait_live(&server, "live", stream, Duration::from_secs(40))
            .unwrap_or_else(|| panic!("{stream} not live; log:\n{}", server.log()));
    }
    let metrics_url = format!("http://127.0.0.1:{metrics_port}/metrics");
    let text = wait_for(Duration::from_secs(30), "a scrape with SRT series", || {
        let (code, content_type, text) =
            fetch(&metrics_url, &["-H", "Accept: text/plain; version=0.0.4"])?;
        (code == 200
            && content_type.starts_with("text/plain; version=0.0.4")
            && text.contains("strom_srt_receiver_connected{")
            && text.contains("strom_stream_ingest_bytes_per_second{"))
        .then_some(text)
    })
    .unwrap_or_else(|| panic!("no scrape with SRT series; log:\n{}", server.log()));
    let output = common::run_with_input(
        Command::new("promtool").args(["check", "metrics"]),
        text.as_bytes(),
    );
    assert!(
        output.status.success(),
        "promtool check metrics failed:\n{}{}\nscrape:\n{text}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let _ = srt.stop_and_stderr();
    let _ = rtmp.stop_and_stderr();
}

/// Issue 31 item 12 (in part): idle connections from one address cannot take every place
/// of the metrics listener; a scrape from another address is answered.
#[test]
fn idle_connections_from_one_address_do_not_block_scrapes() {
    require_tool("curl", "curl");
    let metrics_port = free_port();
    let server = Server::start(&format!(
        "metrics_listen_interfaces = 127.0.0.1\nmetrics_port = {metrics_port}"
    ));
    server.wait_ready();
    let metrics_url = format!("http://127.0.0.1:{metrics_port}/metrics");
    // Sixteen connections that never send a byte (the listener's whole cap).
    let idle: Vec<std::net::TcpStream> = (0..16)
        .map(|_| std::net::TcpStream::connect(("127.0.0.1", metrics_port)).unwrap())
        .collect();
    let scraped = fetch(&metrics_url, &["--interface", "127.0.0.2"]);
    assert!(
        matches!(scraped, Some((200, _, _))),
        "a scrape from another address while 16 idle connections are open: {scraped:?}; log:\n{}",
        server.log()
    );
    drop(idle);
}

/// Issue 31 item 12: idle connections from several addresses (each within the cap of 4
/// per address) fill all 16 places; a scrape is still answered, at once rather than after
/// their idle timeout: it takes the place of the oldest idle connection.
#[test]
fn idle_connections_from_many_addresses_do_not_block_scrapes() {
    require_tool("curl", "curl");
    let metrics_port = free_port();
    // An idle timeout far longer than curl waits: only making room can answer it.
    let server = Server::start(&format!(
        "metrics_listen_interfaces = 127.0.0.1\nmetrics_port = {metrics_port}\n\
         management_idle_timeout = 60\nmanagement_header_timeout = 60"
    ));
    server.wait_ready();
    let metrics_url = format!("http://127.0.0.1:{metrics_port}/metrics");
    let mut idle: Vec<std::net::TcpStream> = (1..=4)
        .flat_map(|n| (0..4).map(move |_| format!("127.0.0.{n}")))
        .map(|source| common::connect_from(&source, metrics_port))
        .collect();
    for round in 0..3 {
        let scraped = fetch(&metrics_url, &["--interface", "127.0.0.5"]);
        assert!(
            matches!(scraped, Some((200, _, _))),
            "scrape {round} while 16 idle connections from 4 addresses are open: {scraped:?}; log:\n{}",
            server.log()
        );
        // The flood goes on: the evicted place is taken again.
        idle.push(common::connect_from("127.0.0.6", metrics_port));
    }
    // The oldest idle connection was the one closed; the newest is still open.
    let state = |stream: &mut std::net::TcpStream| {
        stream
            .set_read_timeout(Some(Duration::from_secs(1)))
            .unwrap();
        let mut byte = [0u8; 1];
        match std::io::Read::read(stream, &mut byte) {
            Ok(0) => "closed",
            Ok(_) => "answered",
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                "open"
            }
            Err(_) => "closed",
        }
    };
    assert_eq!(state(&mut idle[0]), "closed", "the oldest idle connection");
    let newest = idle.len() - 1;
    assert_eq!(
        state(&mut idle[newest]),
        "open",
        "the newest idle connection"
    );
    drop(idle);
}
