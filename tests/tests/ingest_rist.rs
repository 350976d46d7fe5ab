//! MPEG-TS over RIST in: ffmpeg (librist) sends to strom's listening RIST input, and
//! strom calls `ristsender` in listen mode (`pull`). The stream plays over RTMP and HLS
//! with `protocol` `RIST`; `rist_receiver_stats` passes librist's stats JSON through
//! for inputs with `rist-stats-interval`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{Proc, probe_streams, publish_as, rtmp_url, wait_live};
use common::{Server, free_port, require_tool, wait_for};
use std::process::{Command, Stdio};
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(40);

fn start(cameras: &str) -> Server {
    let server = Server::start("");
    server.apply_rules(&format!(
            r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}], "duration": 1, "protocols": ["HLS"]}},
 "Cameras": [{cameras}]}}"#,
            server.ports.rtmp
        ));
    server
}

fn wait_tracks(server: &Server, stream: &str) -> serde_json::Value {
    wait_live(server, "live", stream, LIVE)
        .unwrap_or_else(|| panic!("{stream} not live; log:\n{}", server.log()));
    wait_for(LIVE, "both tracks known", || {
        let (_, body) = server.get("/manage/rtmp_status");
        let streams = body[0]["streams"].as_array()?.clone();
        let entry = streams.into_iter().find(|s| s["strm"] == stream)?;
        entry["acodec"].is_string().then_some(entry)
    })
    .unwrap_or_else(|| panic!("no audio; log:\n{}", server.log()))
}

#[test]
fn ffmpeg_sends_to_a_listening_rist_input_that_plays_with_stats() {
    let port = free_port();
    let server = start(&format!(
        r#"{{"id": "rist-in", "ip": "127.0.0.1", "port": {port}, "protocol": "rist", "receive_mode": "listen", "app": "live", "stream": "rist",
  "parameters": [{{"name": "buffer", "value": "300"}}, {{"name": "rist-stats-interval", "value": "1"}}]}}"#
    ));
    let mut sender = publish_as(&format!("rist://127.0.0.1:{port}?buffer=300"), "mpegts");
    let entry = wait_tracks(&server, "rist");
    assert_eq!(entry["protocol"], "RIST", "{entry}");
    assert_eq!(entry["resolution"], "320x240", "{entry}");
    let rtmp = probe_streams(&rtmp_url(&server, "live/rist"));
    assert!(
        rtmp.contains(&"h264,video,320,240".to_owned()),
        "RTMP: {rtmp:?}"
    );
    let playlist = format!(
        "http://127.0.0.1:{}/live/rist/playlist.m3u8",
        server.ports.http
    );
    let hls = wait_for(LIVE, "HLS of the RIST input", || {
        let streams = probe_streams(&playlist);
        streams
            .iter()
            .any(|s| s.starts_with("h264,video,320,240"))
            .then_some(streams)
    })
    .unwrap_or_else(|| panic!("no HLS; log:\n{}", server.log()));
    assert!(
        hls.iter().any(|s| s.starts_with("aac,audio")),
        "HLS: {hls:?}"
    );

    // librist's own stats JSON, passed through.
    let item = wait_for(LIVE, "RIST receiver stats", || {
        let (status, body) = server.try_get("/manage/rist_receiver_stats")?;
        let item = body.as_array()?.first()?.clone();
        let received = item["receiver-stats"]["flowinstant"]["stats"]["received"].as_u64()?;
        (status == 200 && received > 0).then_some(item)
    })
    .unwrap_or_else(|| panic!("no RIST stats; log:\n{}", server.log()));
    assert!(
        item["receiver-stats"]["flowinstant"]["flow_id"].is_u64(),
        "{item}"
    );
    // Each item names the input it belongs to.
    assert_eq!(item["id"], "rist-in", "{item}");

    let (_, status) = server.get("/manage/mpeg2ts_status");
    let camera = &status["Cameras"][0];
    assert_eq!(camera["st"], "online", "{status}");

    // The sender is listed as a session of type RIST.
    let (_, sessions) = server.get("/manage/sessions");
    let session = sessions
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["type"] == "RIST")
        .unwrap_or_else(|| panic!("{sessions}"));
    assert_eq!(session["client_ip"], "127.0.0.1", "{session}");
    assert!(session["bytes_recv"].as_u64().unwrap() > 0, "{session}");
    let _ = sender.stop_and_stderr();
}

#[test]
fn strom_pulls_from_a_listening_ristsender() {
    require_tool("ristsender", "rist-tools");
    let (udp_port, rist_port) = (free_port(), free_port());
    let _relay = Proc(
        Command::new("ristsender")
            .args(["-i", &format!("udp://127.0.0.1:{udp_port}")])
            .args(["-o", &format!("rist://@127.0.0.1:{rist_port}?buffer=300")])
            .args(["-v", "3", "-S", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let server = start(&format!(
        r#"{{"id": "pull", "ip": "127.0.0.1", "port": {rist_port}, "protocol": "rist", "receive_mode": "pull", "app": "live", "stream": "pulled",
  "parameters": [{{"name": "buffer", "value": "300"}}]}}"#
    ));
    let mut sender = publish_as(
        &format!("udp://127.0.0.1:{udp_port}?pkt_size=1316"),
        "mpegts",
    );
    let entry = wait_tracks(&server, "pulled");
    assert_eq!(entry["protocol"], "RIST", "{entry}");
    let rtmp = probe_streams(&rtmp_url(&server, "live/pulled"));
    assert!(
        rtmp.contains(&"h264,video,320,240".to_owned()),
        "RTMP: {rtmp:?}"
    );
    // Without rist-stats-interval no stats are produced.
    let (_, stats) = server.get("/manage/rist_receiver_stats");
    assert_eq!(stats, serde_json::json!([]), "{stats}");
    let _ = sender.stop_and_stderr();
}
