//! Edge mode for SRT viewers: ffmpeg publishes `live/x` to an origin; an edge (an `Edge`
//! rule for `live`, a `TsOutputs` SRT listener) does not carry it until ffmpeg calls the
//! edge's SRT listener with `streamid=#!::r=live/x,m=request`. That request starts the
//! edge's pull from the origin and the viewer receives the stream as decodable MPEG-TS
//! (H.264 320x240 and AAC); `live_streams_status` shows the origin as `source_url`. When
//! the viewer has left, the edge drops the pull after the rule's grace. A viewer of a
//! stream no origin has is closed after the edge's wait.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{Proc, probe_streams, publish, rtmp_url, wait_live};
use common::{Server, free_port, require_tool, wait_for};
use std::process::{Command, Stdio};
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(40);
const GRACE_SECS: u64 = 3;

/// A strom instance with `rules` (`{rtmp}` stands for its RTMP port).
fn server(rules: &str) -> Server {
    let mut server = Server::prepare("");
    let rules = rules.replace("{rtmp}", &server.ports.rtmp.to_string());
    std::fs::write(server.path("rules.conf"), rules).unwrap();
    server.spawn();
    server.wait_ready();
    server
}

fn pulls_on_edge(edge: &Server) -> bool {
    edge.try_get("/manage/rtmp_status")
        .is_some_and(|(_, status)| status.to_string().contains("\"x\""))
}

#[test]
fn srt_viewer_of_an_edge_starts_the_pull_and_gets_the_stream() {
    require_tool("ffmpeg", "ffmpeg");
    require_tool("ffprobe", "ffmpeg");
    let origin = server(
        r#"{"RtmpSettings": {"interfaces": [{"ip": "127.0.0.1", "port": {rtmp}}]},
            "Delivery": {"outputs": []}}"#,
    );
    let _publisher = publish(&rtmp_url(&origin, "live/x"));
    wait_live(&origin, "live", "x", LIVE)
        .unwrap_or_else(|| panic!("not live on the origin; log:\n{}", origin.log()));

    let srt_port = free_port();
    let edge = server(
        &r#"{"RtmpSettings": {"interfaces": [{"ip": "127.0.0.1", "port": {rtmp}}]},
            "Delivery": {"outputs": []},
            "Edge": [{"apps": ["live"], "idle_grace_secs": GRACE,
                      "origins": ["rtmp://127.0.0.1:ORIGIN"]}],
            "TsOutputs": [{"id": "viewers", "protocol": "srt", "mode": "listen",
                           "ip": "127.0.0.1", "port": SRT}]}"#
            .replace("GRACE", &GRACE_SECS.to_string())
            .replace("ORIGIN", &origin.ports.rtmp.to_string())
            .replace("SRT", &srt_port.to_string()),
    );
    assert!(!pulls_on_edge(&edge), "the edge pulls before any viewer");

    // The SRT viewer: 8 s of the stream into a file.
    let received = edge.path("received.ts");
    let mut viewer = Proc(
        Command::new("timeout")
            .args([
                "60",
                "ffmpeg",
                "-hide_banner",
                "-nostdin",
                "-v",
                "error",
                "-i",
            ])
            .arg(format!(
                "srt://127.0.0.1:{srt_port}?mode=caller&streamid=#!::r=live/x,m=request"
            ))
            .args(["-t", "8", "-c", "copy", "-f", "mpegts", "-y"])
            .arg(&received)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );

    // While it watches, the edge pulls from the origin and says so.
    let source = format!(
        "\"source_url\":\"rtmp://127.0.0.1:{}/live/x\"",
        origin.ports.rtmp
    );
    let shown = wait_for(LIVE, "source_url on the edge", || {
        let (_, live) = edge.try_get("/manage/live_streams_status")?;
        live.to_string().contains(&source).then_some(())
    });
    assert!(
        shown.is_some(),
        "no {source} on the edge; log:\n{}",
        edge.log()
    );

    let code = viewer.wait_exit(Duration::from_secs(70));
    let stderr = viewer.stop_and_stderr();
    assert_eq!(
        code,
        Some(0),
        "the SRT viewer failed: {stderr}\nlog:\n{}",
        edge.log()
    );
    let received = received.to_str().unwrap();
    let mut streams = probe_streams(received);
    streams.sort();
    streams.dedup();
    assert!(
        streams.contains(&"h264,video,320,240".to_owned())
            && streams.contains(&"aac,audio".to_owned()),
        "{streams:?}; log:\n{}",
        edge.log()
    );
    let decoded = Command::new("ffmpeg")
        .args(["-hide_banner", "-nostdin", "-v", "error", "-i", received])
        .args(["-f", "null", "-"])
        .output()
        .unwrap();
    assert!(
        decoded.status.success() && decoded.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&decoded.stderr)
    );

    // The viewer is gone: the relay stops and the pull is dropped after the grace.
    let released = wait_for(Duration::from_secs(30), "edge pull released", || {
        (!pulls_on_edge(&edge)).then_some(())
    });
    assert!(
        released.is_some(),
        "the edge still pulls; log:\n{}",
        edge.log()
    );
    let log = edge.log();
    for line in [
        "edge: SRT viewer asks for the stream; waiting for the pull",
        "edge: pulling on demand",
        "edge: stream arrived for the SRT viewer",
        "relay stopped",
        "edge: no viewers left: pull dropped",
    ] {
        assert!(log.contains(line), "no {line:?} in the edge log:\n{log}");
    }

    // A stream no origin has: the viewer is closed after the edge wait (15 s).
    let _missing = Proc(
        Command::new("ffmpeg")
            .args(["-hide_banner", "-nostdin", "-v", "error", "-i"])
            .arg(format!(
                "srt://127.0.0.1:{srt_port}?mode=caller&streamid=#!::r=live/none,m=request"
            ))
            .args(["-f", "null", "-"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let closed = wait_for(
        Duration::from_secs(40),
        "viewer of a missing stream closed",
        || {
            edge.log()
                .contains("edge: stream did not arrive; SRT viewer closed")
                .then_some(())
        },
    );
    assert!(
        closed.is_some(),
        "the viewer was not closed; log:\n{}",
        edge.log()
    );
}
