//! MPEG-TS over HTTP out: a stream published over RTMP with `MPEGTS` among its delivery
//! outputs plays from `http://host:port/<app>/<stream>/mpegts.stream`: ffprobe sees
//! H.264 320x240 and AAC, ffmpeg decodes 10 s of it without an error, each viewer is a
//! session of type `MPEGTS` and `sessions/delete` ends exactly the chosen one.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{Proc, probe_streams, publish, rtmp_url, wait_live};
use common::{Server, curl, require_tool, wait_for};
use std::process::{Command, Stdio};
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(40);

fn start() -> Server {
    let server = Server::start("");
    server.apply_rules(&format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
 "Delivery": {{"outputs": ["HLS"], "segment_duration_secs": 1,
   "apps": [{{"app": "live", "outputs": ["HLS", "MPEGTS"]}}]}}}}"#,
        server.ports.rtmp
    ));
    server
}

fn stream_url(server: &Server, app: &str, stream: &str) -> String {
    format!(
        "http://127.0.0.1:{}/{app}/{stream}/mpegts.stream",
        server.ports.http
    )
}

/// The MPEGTS sessions of `sessions`, by id.
fn ts_sessions(server: &Server) -> Vec<serde_json::Value> {
    let (_, sessions) = server.get("/manage/sessions");
    sessions
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["type"] == "MPEGTS")
        .cloned()
        .collect()
}

#[test]
fn mpegts_stream_plays_decodes_and_its_viewers_are_sessions() {
    let server = start();
    let _publisher = publish(&rtmp_url(&server, "live/tv"));
    let _other = publish(&rtmp_url(&server, "other/tv"));
    wait_live(&server, "live", "tv", LIVE)
        .unwrap_or_else(|| panic!("not live; log:\n{}", server.log()));
    let url = stream_url(&server, "live", "tv");
    let mut seen = Vec::new();
    let streams = wait_for(LIVE, "ffprobe reads mpegts.stream", || {
        seen = probe_streams(&url);
        // ffprobe lists a TS program's streams twice (program and stream sections).
        seen.dedup();
        seen.sort();
        seen.dedup();
        (seen.len() == 2).then(|| seen.clone())
    })
    .unwrap_or_else(|| panic!("streams {seen:?}; log:\n{}", server.log()));
    assert!(
        streams.contains(&"h264,video,320,240".to_owned()),
        "{streams:?}"
    );
    assert!(streams.contains(&"aac,audio".to_owned()), "{streams:?}");

    // 10 s decoded without a single error line.
    require_tool("ffmpeg", "ffmpeg");
    let decoded = Command::new("timeout")
        .args(["60", "ffmpeg", "-hide_banner", "-nostdin", "-v", "error"])
        .args(["-i", &url, "-t", "10", "-f", "null", "-"])
        .output()
        .unwrap();
    assert!(decoded.status.success(), "{decoded:?}");
    assert_eq!(String::from_utf8_lossy(&decoded.stderr), "");

    // Unknown streams, bad names and streams without MPEGTS delivery are 404.
    wait_live(&server, "other", "tv", LIVE).unwrap();
    for url in [
        stream_url(&server, "live", "nothing"),
        stream_url(&server, "other", "tv"),
        stream_url(&server, "..", "tv"),
    ] {
        let (status, body) = curl(&["-m", "5", &url]);
        assert_eq!(status, 404, "{url}: {body}");
    }

    // Two viewers, two sessions; deleting one ends that response only.
    let viewer = |name: &str| {
        Proc(
            Command::new("curl")
                .args(["-s", "-o", "/dev/null", "-A", name, &url])
                .stdin(Stdio::null())
                .spawn()
                .unwrap(),
        )
    };
    let (mut first, mut second) = (viewer("first"), viewer("second"));
    let sessions = wait_for(LIVE, "two MPEGTS sessions with bytes", || {
        let sessions = ts_sessions(&server);
        (sessions.len() == 2 && sessions.iter().all(|s| s["bytes_sent"].as_u64() > Some(0)))
            .then_some(sessions)
    })
    .unwrap_or_else(|| {
        panic!(
            "sessions: {:?}; log:\n{}",
            ts_sessions(&server),
            server.log()
        )
    });
    let chosen = sessions
        .iter()
        .find(|s| s["user_agent"] == "first")
        .unwrap();
    assert_eq!(chosen["client_ip"], "127.0.0.1");
    assert_eq!(
        (chosen["app"].clone(), chosen["stream"].clone()),
        ("live".into(), "tv".into())
    );
    let id = chosen["id"].as_u64().unwrap();
    assert_eq!(
        server.post("/manage/sessions/delete", &format!("[{id}]")).0,
        200
    );
    assert!(
        first.wait_exit(Duration::from_secs(20)).is_some(),
        "the deleted viewer's response ended"
    );
    let left = ts_sessions(&server);
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0]["user_agent"], "second");
    assert!(second.running());
}
