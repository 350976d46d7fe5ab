//! The gate, end to end with real clients: a live name has one owner whatever protocol
//! asks for it (RTMP, SRT, RTSP, Icecast publishers against each other: the intruder is
//! refused and the owner's HLS goes on after it left); an SRT caller needs the app's
//! publisher login (`u=`/`s=` in its streamid); RTSP play of a protected stream needs a
//! `wmsAuthSign` in the URL; SCTE-35 cues and titles on an RTSP-published stream are
//! answered as for RTMP.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{Proc, probe_streams, publish, publish_coded, rtmp_url, wait_live};
use common::signing::{self, url_encoded};
use common::{Server, free_port, require_tool, wait_for};
use std::process::{Command, Stdio};
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(40);
const REFUSED: Duration = Duration::from_secs(30);
const ICECAST_PASSWORD: &str = "hackme";

/// The ingest protocols whose publishers the gate admits.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Ingest {
    Rtmp,
    Srt,
    Rtsp,
    Icecast,
}

const ALL: [Ingest; 4] = [Ingest::Rtmp, Ingest::Srt, Ingest::Rtsp, Ingest::Icecast];

struct Ports {
    srt: u16,
    rtsp: u16,
}

/// A server that takes every ingest protocol into app `live` and packages HLS, with
/// app `secure` requiring the login `alice`/`wonder` (stated in the `Access` key, apart
/// from `RtmpSettings`), an SRT listener for both apps,
/// SCTE-35 on `live`, and playback protection on app `paid`.
fn start() -> (Server, Ports) {
    let ports = Ports {
        srt: free_port(),
        rtsp: free_port(),
    };
    let mut server = Server::prepare("");
    let rules = format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {rtmp}}}]}},
 "Access": {{"apps": [{{"app": "secure", "login": "alice", "password": "wonder"}}]}},
 "RtspSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {rtsp}}}],
      "limits": {{"player_wait_timeout_secs": 5}}}},
 "Cameras": [{{"id": "srt-in", "ip": "127.0.0.1", "port": {srt}, "protocol": "srt",
      "receive_mode": "listen", "app": "live", "stream": "default"}}],
 "IcecastSources": [{{"app": "live", "password": "{ICECAST_PASSWORD}"}}],
 "AdInsertion": [{{"app": "live", "time_sync": "scte35"}}],
 "PlaybackProtection": [{{"app": "paid", "keys": ["k3y"]}}],
 "Delivery": {{"outputs": ["HLS", "ICECAST"], "segment_duration_secs": 1}}}}"#,
        rtmp = server.ports.rtmp,
        rtsp = ports.rtsp,
        srt = ports.srt,
    );
    std::fs::write(server.path("rules.conf"), rules).unwrap();
    server.spawn();
    server.wait_ready();
    (server, ports)
}

fn srt_url(port: u16, app_stream: &str, extra: &str) -> String {
    let stream_id = format!("#!::r={app_stream},m=publish{extra}");
    format!(
        "srt://127.0.0.1:{port}?pkt_size=1316&streamid={}",
        url_encoded(&stream_id)
    )
}

/// ffmpeg publishing a live test picture of `size` (and a tone) to `url` as `format`
/// (`rtsp` over TCP, `flv`, `mpegts`), or only the tone as AAC for Icecast.
fn publisher(protocol: Ingest, server: &Server, ports: &Ports, name: &str, size: &str) -> Proc {
    require_tool("ffmpeg", "ffmpeg");
    let mut command = Command::new("ffmpeg");
    command.args(["-hide_banner", "-nostats", "-loglevel", "error", "-re"]);
    if protocol != Ingest::Icecast {
        command.args(["-f", "lavfi", "-i", &format!("testsrc=size={size}:rate=25")]);
    }
    command.args(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100"]);
    if protocol != Ingest::Icecast {
        command.args([
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-tune",
            "zerolatency",
        ]);
        command.args([
            "-g", "25", "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "64k",
        ]);
    }
    command.args(["-t", "120"]);
    match protocol {
        Ingest::Rtmp => command.args(["-f", "flv", &rtmp_url(server, name)]),
        Ingest::Srt => command.args(["-f", "mpegts", &srt_url(ports.srt, name, "")]),
        Ingest::Rtsp => command.args([
            "-f",
            "rtsp",
            "-rtsp_transport",
            "tcp",
            &format!("rtsp://127.0.0.1:{}/{name}", ports.rtsp),
        ]),
        // AAC: the packager takes ADTS sources into HLS.
        Ingest::Icecast => command.args([
            "-c:a",
            "aac",
            "-b:a",
            "128k",
            "-content_type",
            "audio/aac",
            "-f",
            "adts",
            &format!(
                "icecast://source:{ICECAST_PASSWORD}@127.0.0.1:{}/{name}",
                server.ports.http
            ),
        ]),
    };
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    Proc(child)
}

fn hls(server: &Server, name: &str) -> String {
    format!(
        "http://127.0.0.1:{}/{name}/playlist.m3u8",
        server.ports.http
    )
}

/// What ffprobe sees of the stream's HLS output, once it has both its tracks.
fn hls_streams(server: &Server, name: &str, video: bool) -> Option<Vec<String>> {
    let streams = probe_streams(&hls(server, name));
    // Lines read `codec,type[,width,height]`.
    let complete = streams.iter().any(|s| s.contains(",audio"))
        && (!video || streams.iter().any(|s| s.contains(",video")));
    complete.then_some(streams)
}

/// The owner publishes `live/<name>` over `owner`; every other protocol tries to take
/// the name and is refused; the owner's HLS still shows the owner's picture afterwards.
fn owner_keeps_its_name(owner: Ingest) {
    let (server, ports) = start();
    let name = format!("live/{}", format!("{owner:?}").to_lowercase());
    let stream = name.trim_start_matches("live/");
    let _owner = publisher(owner, &server, &ports, &name, "320x240");
    let video = owner != Ingest::Icecast;
    let before = wait_for(LIVE, "the owner's HLS", || {
        hls_streams(&server, &name, video)
    })
    .unwrap_or_else(|| panic!("{owner:?} owner not on HLS; log:\n{}", server.log()));
    if video {
        assert!(before.iter().any(|s| s.contains("320,240")), "{before:?}");
    }
    for intruder in ALL.into_iter().filter(|p| *p != owner) {
        let mut attempt = publisher(intruder, &server, &ports, &name, "640x480");
        assert!(
            attempt.wait_exit(REFUSED).is_some(),
            "a {intruder:?} publisher of {name}, live over {owner:?}, was not refused; log:\n{}",
            server.log()
        );
    }
    let log = server.log();
    assert!(
        log.contains("is already being published") || log.contains("the name is taken"),
        "the refusals are logged; log:\n{log}"
    );
    // The intruders are gone: the owner's stream is still live and still the owner's.
    let after = wait_for(LIVE, "HLS after the intruders", || {
        hls_streams(&server, &name, video)
    })
    .unwrap_or_else(|| panic!("HLS of {name} gone after the intruders; log:\n{log}"));
    if video {
        assert!(
            after.iter().any(|s| s.contains("320,240")),
            "the intruder's 640x480 picture reached HLS: {after:?}"
        );
        assert!(!after.iter().any(|s| s.contains("640,480")), "{after:?}");
    }
    assert!(
        !video || wait_live(&server, "live", stream, LIVE).is_some(),
        "{name} is no longer listed live"
    );
}

#[test]
fn an_rtmp_stream_cannot_be_taken_over() {
    owner_keeps_its_name(Ingest::Rtmp);
}

#[test]
fn an_srt_stream_cannot_be_taken_over() {
    owner_keeps_its_name(Ingest::Srt);
}

#[test]
fn an_rtsp_stream_cannot_be_taken_over() {
    owner_keeps_its_name(Ingest::Rtsp);
}

#[test]
fn an_icecast_stream_cannot_be_taken_over() {
    owner_keeps_its_name(Ingest::Icecast);
}

#[test]
fn srt_callers_need_the_apps_publisher_login() {
    let (server, ports) = start();
    for (extra, what) in [("", "no login"), (",u=alice,s=guess", "a wrong password")] {
        let mut caller = publish_coded(
            &srt_url(ports.srt, "secure/viasrt", extra),
            "mpegts",
            "libx264",
        );
        assert!(
            caller.wait_exit(REFUSED).is_some(),
            "an SRT caller with {what} was not refused; log:\n{}",
            server.log()
        );
    }
    // The same login holds for RTMP publishers (Adobe auth).
    let mut rtmp = publish(&rtmp_url(&server, "secure/viartmp"));
    assert!(
        rtmp.wait_exit(REFUSED).is_some(),
        "an RTMP publisher without the login was not refused; log:\n{}",
        server.log()
    );
    assert!(
        server.log().contains("publish refused: bad credentials"),
        "{}",
        server.log()
    );
    let (_, streams) = server.get("/manage/rtmp_status");
    assert!(
        !streams.to_string().contains("viasrt") && !streams.to_string().contains("viartmp"),
        "{streams}"
    );
    let _caller = publish_coded(
        &srt_url(ports.srt, "secure/viasrt", ",u=alice,s=wonder"),
        "mpegts",
        "libx264",
    );
    wait_live(&server, "secure", "viasrt", LIVE).unwrap_or_else(|| {
        panic!(
            "the SRT caller with the login is not live; log:\n{}",
            server.log()
        )
    });
    wait_for(LIVE, "HLS of the SRT publisher", || {
        hls_streams(&server, "secure/viasrt", true)
    })
    .unwrap_or_else(|| panic!("{}", server.log()));
}

/// A `wmsAuthSign` for a viewer at 127.0.0.1 with key `k3y`, valid ten minutes.
fn play_signature() -> String {
    signing::signature("127.0.0.1", "k3y", signing::now(), 10)
}

fn probe_rtsp(url: &str) -> Vec<String> {
    probe_streams(url)
}

#[test]
fn rtsp_play_of_a_protected_stream_needs_a_signature() {
    let (server, ports) = start();
    let _publisher = publish_coded(&rtmp_url(&server, "paid/tv"), "flv", "libx264");
    wait_live(&server, "paid", "tv", LIVE).unwrap_or_else(|| panic!("{}", server.log()));
    let url = format!("rtsp://127.0.0.1:{}/paid/tv", ports.rtsp);
    assert!(
        probe_rtsp(&url).is_empty(),
        "unsigned RTSP play of a protected stream was served"
    );
    assert!(
        server.log().contains("rtsp play refused"),
        "{}",
        server.log()
    );
    let signed = format!("{url}?wmsAuthSign={}", url_encoded(&play_signature()));
    let streams = wait_for(LIVE, "signed RTSP play", || {
        Some(probe_rtsp(&signed)).filter(|s| s.iter().any(|l| l.contains(",video")))
    })
    .unwrap_or_else(|| panic!("signed RTSP play refused; log:\n{}", server.log()));
    assert!(streams.iter().any(|s| s.contains("320,240")), "{streams:?}");
}

#[test]
fn stream_requests_on_an_rtsp_published_stream_are_answered() {
    let (server, ports) = start();
    let _publisher = publisher(Ingest::Rtsp, &server, &ports, "live/cam", "320x240");
    wait_live(&server, "live", "cam", LIVE).unwrap_or_else(|| panic!("{}", server.log()));
    let (status, body) = server.post("/manage/advertizer/scte35_out/live/cam?duration=10", "");
    assert_eq!(
        (status, body["status"].as_str()),
        (200, Some("Ok")),
        "{body}"
    );
    let (status, body) = server.post("/manage/advertizer/scte35_in/live/cam", "");
    assert_eq!(
        (status, body["status"].as_str()),
        (200, Some("Ok")),
        "{body}"
    );
    let (status, body) = server.post(
        "/manage/icecast_metadata/live/cam",
        r#"{"streamtitle": "On air"}"#,
    );
    assert_eq!(status, 200, "{body}");
    // Not live: 404 as for RTMP, not a 500 from a worker that has no handler.
    let (status, _) = server.post("/manage/advertizer/scte35_out/live/absent?duration=10", "");
    assert_eq!(status, 404);
}

/// A server whose camera `cams/door` is an on-demand RTSP pull from `source`'s RTSP
/// listener, packaged as HLS.
fn on_demand_server(source_rtsp: u16) -> Server {
    let mut server = Server::prepare("");
    let rules = format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
 "Delivery": {{"outputs": ["HLS"], "segment_duration_secs": 1}},
 "RtmpPullSources": [{{"app": "cams", "stream": "door", "mode": "on_demand", "idle_grace_secs": 2,
      "url": "rtsp://127.0.0.1:{source_rtsp}/live/src"}}]}}"#,
        server.ports.rtmp
    );
    std::fs::write(server.path("rules.conf"), rules).unwrap();
    server.spawn();
    server.wait_ready();
    server
}

#[test]
fn rtmp_players_and_hls_requests_start_an_rtsp_on_demand_pull() {
    let (source, source_ports) = start();
    let _camera = publisher(Ingest::Rtmp, &source, &source_ports, "live/src", "320x240");
    wait_live(&source, "live", "src", LIVE).unwrap_or_else(|| panic!("{}", source.log()));

    // An RTMP player asks first: the rtsp worker's pull starts for it.
    let server = on_demand_server(source_ports.rtsp);
    assert!(
        !common::media::is_live(&server, "cams", "door"),
        "pulled before any demand"
    );
    let played = probe_streams(&rtmp_url(&server, "cams/door"));
    assert!(
        played.iter().any(|s| s.contains(",video")),
        "an RTMP player did not get the on-demand RTSP pull: {played:?}\n{}",
        server.log()
    );
    drop(server);

    // An HLS request asks first on a fresh server.
    let server = on_demand_server(source_ports.rtsp);
    let streams = wait_for(LIVE, "HLS of the on-demand pull", || {
        hls_streams(&server, "cams/door", true)
    })
    .unwrap_or_else(|| {
        panic!(
            "HLS did not start the on-demand RTSP pull\n{}",
            server.log()
        )
    });
    assert!(streams.iter().any(|s| s.contains("320,240")), "{streams:?}");
    assert!(
        server.log().contains("RTSP pull connected"),
        "{}",
        server.log()
    );
}
