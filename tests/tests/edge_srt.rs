//! Edge mode for SRT viewers: ffmpeg publishes `live/x` to an origin; an edge (an `Edge`
//! rule for `live`, a `TsOutputs` SRT listener) does not carry it until ffmpeg calls the
//! edge's SRT listener with `streamid=#!::r=live/x,m=request`. That request starts the
//! edge's pull from the origin and the viewer receives the stream as decodable MPEG-TS
//! (H.264 320x240 and AAC); `live_streams_status` shows the origin as `source_url`. When
//! the viewer has left, the edge drops the pull after the rule's grace. A viewer of a
//! stream no origin has is closed after the edge's wait.
//!
//! Edges also pull over SRT: with `srt://` origins, an HLS viewer, an RTMP player and an
//! RTSP player of the edge each start a pull from the origin's SRT output listener, and
//! the pulls are dropped when the viewers are gone.

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
    Server::with_rules("", rules)
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
    assert_released(
        &edge,
        pulls_on_edge,
        &[
            "edge: SRT viewer asks for the stream; waiting for the pull",
            "edge: pulling on demand",
            "edge: stream arrived for the SRT viewer",
            "relay stopped",
            "edge: no viewers left: pull dropped",
        ],
    );

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

/// An edge whose rule pulls over SRT: its origin serves `live` on an SRT output
/// listener (`TsOutputs` in `listen` mode), which the edge calls with streamid
/// `#!::r=live/<name>,m=request,strom=pull`.
fn srt_edge_of(origin_srt_port: u16, rtsp_port: u16) -> Server {
    // HLS viewers hold a stream for the session timeout after their last request.
    Server::with_rules(
        "hls_session_timeout = 5",
        &r#"{"RtmpSettings": {"interfaces": [{"ip": "127.0.0.1", "port": {rtmp}}]},
            "RtspSettings": {"interfaces": [{"ip": "127.0.0.1", "port": RTSP}]},
            "Delivery": {"outputs": ["HLS"], "segment_duration_secs": 1},
            "Edge": [{"apps": ["live"], "idle_grace_secs": GRACE,
                      "origins": ["srt://127.0.0.1:ORIGIN?latency=200"]}]}"#
            .replace("GRACE", &GRACE_SECS.to_string())
            .replace("ORIGIN", &origin_srt_port.to_string())
            .replace("RTSP", &rtsp_port.to_string()),
    )
}

fn pulls_over_srt(edge: &Server) -> bool {
    edge.try_get("/manage/live_streams_status")
        .is_some_and(|(_, live)| live.to_string().contains("\"source_url\":\"srt://"))
}

#[test]
fn an_edge_pulls_over_srt_for_hls_rtmp_and_rtsp_viewers() {
    require_tool("ffmpeg", "ffmpeg");
    require_tool("ffprobe", "ffmpeg");
    let origin_srt = free_port();
    let origin = server(
        &r#"{"RtmpSettings": {"interfaces": [{"ip": "127.0.0.1", "port": {rtmp}}]},
            "Delivery": {"outputs": []},
            "TsOutputs": [{"id": "edges", "protocol": "srt", "mode": "listen",
                           "ip": "127.0.0.1", "port": SRT}]}"#
            .replace("SRT", &origin_srt.to_string()),
    );
    let _publisher = publish(&rtmp_url(&origin, "live/x"));
    wait_live(&origin, "live", "x", LIVE)
        .unwrap_or_else(|| panic!("not live on the origin; log:\n{}", origin.log()));
    let rtsp_port = free_port();
    let edge = srt_edge_of(origin_srt, rtsp_port);
    assert!(!pulls_over_srt(&edge), "the edge pulls before any viewer");

    // An HLS viewer's playlist request is the demand: the edge pulls over SRT.
    let playlist = format!("http://127.0.0.1:{}/live/x/playlist.m3u8", edge.ports.http);
    let streams = wait_for(LIVE, "HLS of the SRT-pulled stream", || {
        let mut streams = probe_streams(&playlist);
        streams.sort();
        streams.dedup();
        streams
            .iter()
            .any(|s| s.starts_with("h264,video,320,240"))
            .then_some(streams)
    })
    .unwrap_or_else(|| panic!("no HLS through the SRT edge; edge log:\n{}", edge.log()));
    assert!(
        streams.iter().any(|s| s.starts_with("aac,audio")),
        "{streams:?}"
    );
    let source =
        format!("\"source_url\":\"srt://127.0.0.1:{origin_srt}?streamid=#!::r=live/x,m=request\"");
    let (_, live) = edge.get("/manage/live_streams_status");
    assert!(
        live.to_string().contains(&source),
        "no {source} in {live}; edge log:\n{}",
        edge.log()
    );

    // An RTMP player of another stream of the app starts its own SRT pull.
    let _second = publish(&rtmp_url(&origin, "live/y"));
    wait_live(&origin, "live", "y", LIVE)
        .unwrap_or_else(|| panic!("not live on the origin; log:\n{}", origin.log()));
    let played = wait_for(LIVE, "RTMP play of an SRT-pulled stream", || {
        let streams = probe_streams(&rtmp_url(&edge, "live/y"));
        streams
            .iter()
            .any(|s| s.starts_with("h264,video,320,240"))
            .then_some(())
    });
    assert!(
        played.is_some(),
        "the RTMP player got nothing; edge log:\n{}",
        edge.log()
    );

    // So does an RTSP player (its DESCRIBE waits for the stream).
    let _third = publish(&rtmp_url(&origin, "live/z"));
    wait_live(&origin, "live", "z", LIVE)
        .unwrap_or_else(|| panic!("not live on the origin; log:\n{}", origin.log()));
    let rtsp = format!("rtsp://127.0.0.1:{rtsp_port}/live/z");
    let described = wait_for(LIVE, "RTSP play of an SRT-pulled stream", || {
        let streams = probe_streams(&rtsp);
        streams
            .iter()
            .any(|s| s.starts_with("h264,video,320,240"))
            .then_some(())
    });
    assert!(
        described.is_some(),
        "the RTSP player got nothing; edge log:\n{}",
        edge.log()
    );

    // Without viewers, the pulls are dropped after the grace.
    assert_released(
        &edge,
        pulls_over_srt,
        &[
            "edge: pulling on demand over SRT",
            "edge: SRT origin connected",
            "edge: no viewers left: pull dropped",
        ],
    );
}

/// Waits until `edge` no longer `pulls`, then checks that its log tells the story.
fn assert_released(edge: &Server, pulls: fn(&Server) -> bool, story: &[&str]) {
    let released = wait_for(Duration::from_secs(60), "edge pulls released", || {
        (!pulls(edge)).then_some(())
    });
    assert!(
        released.is_some(),
        "the edge still pulls; log:\n{}",
        edge.log()
    );
    let log = edge.log();
    for line in story {
        assert!(log.contains(line), "no {line:?} in the edge log:\n{log}");
    }
}
