//! WebRTC end to end in Debian's headless Chromium (tests/browser/webrtc.mjs driving
//! webrtc.html, served from its own origin so every request is cross-origin):
//! - WHEP plays an RTMP-published H.264+AAC stream: frames decoded, Opus audio
//!   received; the session is listed as `WebRTC` in `sessions` and `/metrics` while it
//!   plays, and `DELETE` of its URL ends it; a WHEP viewer starts an on-demand pull;
//! - WHIP from Chromium's fake camera and microphone, with the app's login as a Bearer
//!   token: live in `live_streams_status` (protocol `WEBRTC`), ffprobe reads H.264 and
//!   AAC over RTMP and HLS; without the token the offer is refused with 401;
//! - with UDP off (`"udp": false`) WHEP plays over ICE-TCP, and `sessions/delete` ends
//!   the session;
//! - a stream whose playback is protected for WebRTC refuses WHEP without a signature
//!   (403) and plays with one; CORS preflights are answered and expose `Location`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::browser::{require_browser, run_script, webrtc_page};
use common::media::{probe_streams, publish, rtmp_url, wait_live};
use common::signing::{now, signature, url_encoded};
use common::{Server, curl_raw, free_port, wait_for};
use std::process::{Command, Stdio};
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(40);
/// A minimal offer: enough to reach the gate, which decides before the SDP is parsed.
const OFFER: &str = "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n";

/// A server with WebRTC on a free ICE port, RTMP and HLS, and `extra` rules keys.
fn server_with(extra: &str) -> Server {
    server_with_ice(extra, "")
}

/// [`server_with`] with `ice` keys added to `WebRtcSettings`; `{RTMP}` in `extra` is the
/// server's RTMP port.
fn server_with_ice(extra: &str, ice_keys: &str) -> Server {
    let metrics_port = free_port();
    let server = Server::start(&format!(
        "metrics_listen_interfaces = 127.0.0.1\nmetrics_port = {metrics_port}"
    ));
    server.wait_ready();
    let ice = free_port();
    server.apply_rules(&format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {rtmp}}}]}},
 "Delivery": {{"outputs": ["HLS"], "segment_duration_secs": 1}},
 "WebRtcSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {ice}}}]{ice_keys}}}{extra}}}"#,
        rtmp = server.ports.rtmp,
        extra = extra.replace("{RTMP}", &server.ports.rtmp.to_string()),
    ));
    server
}

fn endpoint(server: &Server, path: &str) -> String {
    format!("http://127.0.0.1:{}/{path}", server.ports.http)
}

fn post_offer(url: &str, extra: &[&str]) -> (u16, String) {
    let mut args = vec![
        "-X",
        "POST",
        "-H",
        "Content-Type: application/sdp",
        "--data-binary",
        OFFER,
    ];
    args.extend_from_slice(extra);
    args.push(url);
    curl_raw(&args)
}

fn webrtc_sessions(server: &Server) -> Vec<serde_json::Value> {
    let (_, sessions) = server.get("/manage/sessions");
    sessions
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|s| s["type"] == "WebRTC")
        .collect()
}

#[test]
fn whep_plays_an_rtmp_stream_with_opus_audio_and_delete_ends_it() {
    require_browser(&[]);
    // `pull/cam` is pulled from `live/cam` when someone wants it: a WHEP viewer starts it.
    let server = server_with(
        r#", "RtmpPullSources": [{"app": "pull", "stream": "cam",
            "url": "rtmp://127.0.0.1:{RTMP}/live/cam", "mode": "on_demand"}]"#,
    );
    let _publisher = publish(&rtmp_url(&server, "live/cam"));
    wait_live(&server, "live", "cam", LIVE).unwrap_or_else(|| panic!("{}", server.log()));
    let page = webrtc_page();
    let whep = endpoint(&server, "live/cam/whep.stream");
    let player_page = page.clone();
    let player = std::thread::spawn(move || {
        run_script("webrtc.mjs", &[&player_page, "whep", &whep, "10"], 90)
    });

    let listed = wait_for(LIVE, "a WebRTC session listed", || {
        webrtc_sessions(&server).pop()
    })
    .unwrap_or_else(|| panic!("no WebRTC session in sessions; log:\n{}", server.log()));
    assert_eq!(listed["app"], "live");
    assert_eq!(listed["stream"], "cam");
    assert_eq!(listed["client_ip"], "127.0.0.1");
    let metrics_port = std::fs::read_to_string(server.path("strom.conf"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("metrics_port = ").map(str::to_owned))
        .unwrap();
    let metrics = Command::new("curl")
        .args(["-s", &format!("http://127.0.0.1:{metrics_port}/metrics")])
        .output()
        .unwrap();
    let metrics = String::from_utf8_lossy(&metrics.stdout);
    assert!(
        metrics.contains("strom_sessions{type=\"WebRTC\"} 1"),
        "metrics count the WebRTC viewer:\n{metrics}"
    );

    let result = player
        .join()
        .unwrap()
        .unwrap_or_else(|e| panic!("{e}\nlog:\n{}", server.log()));
    assert_eq!(result["ok"], true, "{result}\nlog:\n{}", server.log());
    assert_eq!(result["postStatus"], 201, "{result}");
    let video = &result["last"]["video"];
    assert_eq!(video["codec"], "video/H264", "{result}");
    assert!(
        video["framesDecoded"].as_u64().unwrap_or(0) >= 60,
        "video frames decoded: {result}"
    );
    assert_eq!(
        (video["frameWidth"].as_u64(), video["frameHeight"].as_u64()),
        (Some(320), Some(240)),
        "{result}"
    );
    assert!(
        result["last"]["renderedFrames"].as_u64().unwrap_or(0) >= 60,
        "frames shown: {result}"
    );
    let audio = &result["last"]["audio"];
    assert_eq!(
        audio["codec"], "audio/opus",
        "AAC reaches the browser as Opus: {result}"
    );
    assert!(
        audio["packets"].as_u64().unwrap_or(0) >= 100,
        "Opus packets received: {result}"
    );
    assert!(
        audio["totalSamplesReceived"].as_u64().unwrap_or(0) >= 48_000,
        "audio decoded: {result}"
    );
    assert_eq!(result["deleteStatus"], 200, "{result}");
    assert_eq!(result["last"]["iceProtocol"], "udp", "{result}");

    wait_for(Duration::from_secs(10), "the deleted session gone", || {
        webrtc_sessions(&server).is_empty().then_some(())
    })
    .unwrap_or_else(|| panic!("DELETE did not end the session; log:\n{}", server.log()));
    let resource = result["resource"].as_str().unwrap();
    let (status, _) = curl_raw(&["-X", "DELETE", resource]);
    assert_eq!(status, 404, "a session ends once");
    assert!(
        server.log().contains("webrtc session ended by DELETE"),
        "{}",
        server.log()
    );
    sent_by_stroms_rtp_path(&server);

    // A WHEP viewer is a reader like any other: it starts the on-demand pull.
    assert!(
        !common::media::is_live(&server, "pull", "cam"),
        "not pulled before"
    );
    let pulled = endpoint(&server, "pull/cam/whep.stream");
    let result = run_script("webrtc.mjs", &[&page, "whep", &pulled, "4"], 60)
        .unwrap_or_else(|e| panic!("{e}\nlog:\n{}", server.log()));
    assert_eq!(
        result["ok"],
        true,
        "on-demand pull: {result}\nlog:\n{}",
        server.log()
    );
    assert!(
        result["last"]["video"]["framesDecoded"]
            .as_u64()
            .unwrap_or(0)
            >= 30,
        "the pulled stream plays: {result}"
    );
}

#[test]
fn whip_from_chromium_is_live_over_rtmp_and_hls_with_audio() {
    require_browser(&[]);
    let server = Server::start("");
    server.wait_ready();
    let ice = free_port();
    server.apply_rules(&format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}],
   "apps": [{{"app": "live", "login": "pub", "password": "s3cret"}}]}},
 "Delivery": {{"outputs": ["HLS"], "segment_duration_secs": 1}},
 "WebRtcSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {ice}}}]}}}}"#,
        server.ports.rtmp
    ));
    let whip = endpoint(&server, "live/cam/whip.stream");
    let (status, answer) = post_offer(&whip, &[]);
    assert_eq!(status, 401, "no token: {answer}");
    assert!(
        answer
            .to_ascii_lowercase()
            .contains("www-authenticate: bearer"),
        "{answer}"
    );
    let (status, answer) = post_offer(&whip, &["-H", "Authorization: Bearer pub:wrong"]);
    assert_eq!(status, 401, "wrong token: {answer}");

    let page = webrtc_page();
    let script = common::browser::browser_dir().join("webrtc.mjs");
    let publisher = Command::new("timeout")
        .args(["120", "node"])
        .arg(script)
        .args([&page, "whip", &whip, "40", "pub:s3cret"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    let entry = wait_live(&server, "live", "cam", LIVE)
        .unwrap_or_else(|| panic!("the WHIP publisher never went live; log:\n{}", server.log()));
    let (_, status) = server.get("/manage/live_streams_status");
    let listed = status.to_string();
    assert!(
        listed.contains("\"WEBRTC\""),
        "live_streams_status names the protocol: {listed}"
    );
    assert_eq!(entry["resolution"], "640x360", "{entry}");
    // One owner per name, whatever the protocol: a second WHIP publisher is refused.
    let (status, answer) = post_offer(&whip, &["-H", "Authorization: Bearer pub:s3cret"]);
    assert_eq!(status, 409, "the name is taken: {answer}");
    let has_audio = |streams: &[String]| {
        // ffprobe prints codec_name before codec_type whatever the order asked.
        streams.iter().any(|s| s.starts_with("h264,video"))
            && streams.iter().any(|s| s.starts_with("aac,audio"))
    };
    let rtmp = wait_for(LIVE, "RTMP with audio", || {
        let streams = probe_streams(&rtmp_url(&server, "live/cam"));
        has_audio(&streams).then_some(streams)
    });
    assert!(
        rtmp.is_some(),
        "ffprobe over RTMP: {:?}; log:\n{}",
        probe_streams(&rtmp_url(&server, "live/cam")),
        server.log()
    );
    let hls_url = endpoint(&server, "live/cam/playlist.m3u8");
    let hls = wait_for(LIVE, "HLS with audio", || {
        let streams = probe_streams(&hls_url);
        has_audio(&streams).then_some(streams)
    });
    assert!(
        hls.is_some(),
        "ffprobe over HLS: {:?}",
        probe_streams(&hls_url)
    );

    let output = publisher.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let result: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap_or(""))
        .unwrap_or_else(|e| {
            panic!(
                "webrtc.mjs: {e}\n{stdout}\n{}",
                String::from_utf8_lossy(&output.stderr)
            )
        });
    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(result["last"]["video"]["codec"], "video/H264", "{result}");
    assert_eq!(result["last"]["audio"]["codec"], "audio/opus", "{result}");
    assert_eq!(result["deleteStatus"], 200, "{result}");
    wait_for(
        Duration::from_secs(15),
        "the stream gone after DELETE",
        || (!common::media::is_live(&server, "live", "cam")).then_some(()),
    )
    .unwrap_or_else(|| {
        panic!(
            "the stream outlived its WHIP session; log:\n{}",
            server.log()
        )
    });
}

#[test]
fn whep_plays_over_ice_tcp_when_udp_is_off_and_sessions_delete_ends_it() {
    require_browser(&[]);
    let server = server_with_ice("", r#", "udp": false"#);
    let _publisher = publish(&rtmp_url(&server, "live/cam"));
    wait_live(&server, "live", "cam", LIVE).unwrap_or_else(|| panic!("{}", server.log()));
    let page = webrtc_page();
    let whep = endpoint(&server, "live/cam/whep.stream");
    let player =
        std::thread::spawn(move || run_script("webrtc.mjs", &[&page, "whep", &whep, "8"], 60));

    // Once media flows, the API ends the session like any other.
    let playing = wait_for(LIVE, "the TCP viewer receiving media", || {
        let session = webrtc_sessions(&server).pop()?;
        (session["bytes_sent"].as_u64()? > 100_000).then_some(session)
    })
    .unwrap_or_else(|| panic!("no WebRTC session sending media; log:\n{}", server.log()));
    let (status, answer) = server.post("/manage/sessions/delete", &format!("[{}]", playing["id"]));
    assert_eq!(status, 200, "{answer}");
    wait_for(
        Duration::from_secs(10),
        "the session ended by sessions/delete",
        || webrtc_sessions(&server).is_empty().then_some(()),
    )
    .unwrap_or_else(|| panic!("sessions/delete did not end it; log:\n{}", server.log()));
    sent_by_stroms_rtp_path(&server);

    let result = player
        .join()
        .unwrap()
        .unwrap_or_else(|e| panic!("{e}\nlog:\n{}", server.log()));
    assert_eq!(result["ok"], true, "{result}\nlog:\n{}", server.log());
    assert_eq!(
        result["first"]["iceProtocol"], "tcp",
        "ICE-TCP carried it: {result}"
    );
    assert!(
        result["first"]["video"]["framesDecoded"]
            .as_u64()
            .unwrap_or(0)
            >= 10,
        "frames decoded over TCP: {result}"
    );
    assert_eq!(
        result["deleteStatus"], 404,
        "already ended by the API: {result}"
    );
    assert!(
        server.log().contains("webrtc sessions ended by request"),
        "{}",
        server.log()
    );
}

#[test]
fn protected_whep_needs_a_signature_and_cors_exposes_location() {
    require_browser(&[]);
    let key = "webrtc-key";
    let server = server_with(&format!(
        r#", "PlaybackProtection": [{{"app": "live", "keys": ["{key}"], "protocols": ["WEBRTC"]}}]"#
    ));
    let _publisher = publish(&rtmp_url(&server, "live/tv"));
    wait_live(&server, "live", "tv", LIVE).unwrap_or_else(|| panic!("{}", server.log()));
    let whep = endpoint(&server, "live/tv/whep.stream");

    let (status, preflight) = curl_raw(&[
        "-X",
        "OPTIONS",
        "-H",
        "Origin: http://player.example",
        "-H",
        "Access-Control-Request-Method: POST",
        "-H",
        "Access-Control-Request-Headers: content-type",
        &whep,
    ]);
    let preflight = preflight.to_ascii_lowercase();
    assert_eq!(status, 204, "{preflight}");
    assert!(
        preflight.contains("access-control-allow-origin: *"),
        "{preflight}"
    );
    assert!(
        preflight.contains("access-control-allow-methods: post, patch, delete, options"),
        "{preflight}"
    );
    assert!(
        preflight.contains("access-control-expose-headers: location"),
        "{preflight}"
    );

    let (status, refused) = post_offer(&whep, &[]);
    assert_eq!(status, 403, "unsigned WHEP: {refused}");
    assert!(
        refused.contains(r#""error":"forbidden""#),
        "no detail: {refused}"
    );
    let (status, refused) = post_offer(&format!("{whep}?wmsAuthSign=bm9wZQ%3D%3D"), &[]);
    assert_eq!(status, 403, "a bad signature: {refused}");
    // HLS is not protected here: the protection names WebRTC only.
    let (status, _) = curl_raw(&[&endpoint(&server, "live/tv/playlist.m3u8")]);
    assert_eq!(status, 200);

    let signed = format!(
        "{whep}?wmsAuthSign={}",
        url_encoded(&signature("127.0.0.1", key, now() - 5, 20))
    );
    let page = webrtc_page();
    let result = run_script("webrtc.mjs", &[&page, "whep", &signed, "4"], 60)
        .unwrap_or_else(|e| panic!("{e}\nlog:\n{}", server.log()));
    assert_eq!(result["ok"], true, "{result}\nlog:\n{}", server.log());
    assert!(
        result["last"]["video"]["framesDecoded"]
            .as_u64()
            .unwrap_or(0)
            > 0,
        "the signed viewer plays: {result}"
    );
    assert!(
        server.log().contains("playback refused"),
        "{}",
        server.log()
    );
}

/// Chromium negotiates AES-GCM SRTP, so strom's own RTP path (not str0m's) sent the
/// viewer: its session's closing log line says so.
fn sent_by_stroms_rtp_path(server: &Server) {
    wait_for(
        Duration::from_secs(10),
        "the viewer's closing log line",
        || {
            server
                .log()
                .lines()
                .any(|line| {
                    line.contains("webrtc session closed") && line.contains("rtp_path=\"strom\"")
                })
                .then_some(())
        },
    )
    .unwrap_or_else(|| panic!("no viewer sent by strom's RTP path; log:\n{}", server.log()));
}
