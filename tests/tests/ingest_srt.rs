//! MPEG-TS over SRT in: ffmpeg calls strom's SRT listener (with a passphrase; the
//! stream chosen by `streamid`), a wrong passphrase is refused, H.265 works too, and
//! strom calls `srt-live-transmit` in listener mode. The stream plays over RTMP and HLS;
//! `srt_receiver_stats` and `sessions` show the caller; `sessions/delete` ends it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{Proc, probe_streams, publish_coded, rtmp_url, wait_live};
use common::{Server, free_port, require_tool, wait_for};
use std::process::{Command, Stdio};
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(40);
const PASSPHRASE: &str = "0123456789abcdef";

/// ffmpeg sending a live test source as MPEG-TS to `url` (`codec` libx264 or libx265).
fn send(url: &str, codec: &str) -> Proc {
    publish_coded(url, "mpegts", codec)
}

fn start(cameras: &str) -> Server {
    let server = Server::start("");
    std::fs::write(
        server.path("rules.conf"),
        format!(
            r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}], "duration": 1, "protocols": ["HLS"]}},
 "Cameras": [{cameras}]}}"#,
            server.ports.rtmp
        ),
    )
    .unwrap();
    server.wait_ready();
    assert_eq!(server.post("/manage/reload_config", "").0, 200);
    server
}

fn listener_camera(port: u16) -> String {
    format!(
        r#"{{"id": "srt-in", "ip": "127.0.0.1", "port": {port}, "protocol": "srt", "receive_mode": "listen", "app": "live", "stream": "default",
  "parameters": [{{"name": "passphrase", "value": "{PASSPHRASE}"}}, {{"name": "latency", "value": "120"}}]}}"#
    )
}

/// The caller URL: `streamid` `#!::r=live/<stream>,m=publish`, URL-encoded.
fn caller_url(port: u16, stream: &str, passphrase: &str) -> String {
    format!(
        "srt://127.0.0.1:{port}?passphrase={passphrase}&pkt_size=1316&streamid=%23%21%3A%3Ar%3Dlive%2F{stream}%2Cm%3Dpublish"
    )
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

fn hls_streams(server: &Server, stream: &str, wanted: &str) -> Vec<String> {
    let playlist = format!(
        "http://127.0.0.1:{}/live/{stream}/playlist.m3u8",
        server.ports.http
    );
    wait_for(LIVE, "HLS of the SRT input", || {
        let streams = probe_streams(&playlist);
        streams
            .iter()
            .any(|s| s.starts_with(wanted))
            .then_some(streams)
    })
    .unwrap_or_else(|| panic!("no HLS; log:\n{}", server.log()))
}

#[test]
fn srt_caller_with_passphrase_plays_and_is_listed() {
    let port = free_port();
    let server = start(&listener_camera(port));
    let mut sender = send(&caller_url(port, "cam", PASSPHRASE), "libx264");
    let entry = wait_tracks(&server, "cam");
    assert_eq!(entry["protocol"], "SRT", "{entry}");
    assert_eq!(entry["resolution"], "320x240", "{entry}");
    let rtmp = probe_streams(&rtmp_url(&server, "live/cam"));
    assert!(
        rtmp.contains(&"h264,video,320,240".to_owned()),
        "RTMP: {rtmp:?}"
    );
    let hls = hls_streams(&server, "cam", "h264,video,320,240");
    assert!(
        hls.iter().any(|s| s.starts_with("aac,audio")),
        "HLS: {hls:?}"
    );

    // libsrt's statistics, in the shape deployed clients parse with strict types.
    let receiver = wait_for(LIVE, "SRT receiver stats", || {
        let (status, body) = server.try_get("/manage/srt_receiver_stats")?;
        let receiver = body["SrtReceivers"].as_array()?.first()?.clone();
        (status == 200 && receiver["stats"]["recv"]["packetsReceived"].as_i64()? > 100)
            .then_some(receiver)
    })
    .unwrap_or_else(|| panic!("no SRT stats; log:\n{}", server.log()));
    let stats = &receiver["stats"];
    // The input's listener address, the stream, and the caller apart.
    assert_eq!(receiver["id"], format!("127.0.0.1:{port}"), "{receiver}");
    assert_eq!(receiver["stream"], "live/cam", "{receiver}");
    let peer = receiver["peer"].as_str().unwrap();
    assert!(
        peer.starts_with("127.0.0.1:") && peer != format!("127.0.0.1:{port}"),
        "{receiver}"
    );
    assert_eq!(receiver["state"], "connected", "{receiver}");
    assert!(stats["time"].is_i64(), "{stats}");
    for field in ["flow", "congestion", "flight"] {
        assert!(stats["window"][field].is_i64(), "{field}: {stats}");
    }
    let rtt = stats["link"]["rtt"].as_f64().unwrap();
    assert!(
        stats["link"]["rtt"].is_f64() && (0.0..1000.0).contains(&rtt),
        "{stats}"
    );
    assert!(stats["link"]["mbpsBandwidth"].is_f64(), "{stats}");
    assert!(stats["link"]["mbpsMaxBandwidth"].is_i64(), "{stats}");
    for field in [
        "packetsReceived",
        "packetsReceivedRetransmitted",
        "packetsLost",
        "packetsDropped",
        "packetsBelated",
        "NAKsSent",
        "bytesReceived",
        "bytesLost",
        "bytesDropped",
    ] {
        assert!(stats["recv"][field].is_i64(), "{field}: {stats}");
    }
    let rate = stats["recv"]["mbpsRate"].as_f64().unwrap();
    assert!(stats["recv"]["mbpsRate"].is_f64() && rate < 50.0, "{stats}");

    // The passphrase is never shown by the API: masked in settings and status alike,
    // still a string, and no answer carries it.
    for path in ["/manage/mpeg2ts_settings", "/manage/mpeg2ts_status"] {
        let (_, body) = server.get(path);
        let parameters = body["Cameras"][0]["parameters"].as_array().unwrap();
        let passphrase = parameters
            .iter()
            .find(|p| p["name"] == "passphrase")
            .unwrap_or_else(|| panic!("{path}: {body}"));
        assert_eq!(passphrase["value"], "********", "{path}: {body}");
        let latency = parameters.iter().find(|p| p["name"] == "latency").unwrap();
        assert_eq!(latency["value"], "120", "{path}: {body}");
        assert!(!body.to_string().contains(PASSPHRASE), "{path}: {body}");
    }

    // The caller is a session; deleting it disconnects it and ends the stream.
    let (_, sessions) = server.get("/manage/sessions");
    let session = sessions
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["type"] == "SRT")
        .unwrap_or_else(|| panic!("{sessions}"))
        .clone();
    assert_eq!(
        (session["app"].clone(), session["stream"].clone()),
        ("live".into(), "cam".into())
    );
    let id = session["id"].as_u64().unwrap();
    assert_eq!(
        server.post("/manage/sessions/delete", &format!("[{id}]")).0,
        200
    );
    wait_for(LIVE, "the SRT caller gone", || {
        let (_, body) = server.get("/manage/srt_receiver_stats");
        (body["SrtReceivers"].as_array()?.is_empty()).then_some(())
    })
    .unwrap_or_else(|| panic!("caller still connected; log:\n{}", server.log()));
    let _ = sender.stop_and_stderr();
}

#[test]
fn a_wrong_passphrase_is_refused() {
    let port = free_port();
    let server = start(&listener_camera(port));
    let mut sender = send(
        &caller_url(port, "intruder", "wrong-passphrase-0"),
        "libx264",
    );
    let exited = sender.wait_exit(Duration::from_secs(30));
    assert!(
        matches!(exited, Some(code) if code != 0),
        "ffmpeg with a wrong passphrase: {exited:?}"
    );
    let (_, body) = server.get("/manage/rtmp_status");
    assert_eq!(body, serde_json::json!([]));
    let (_, stats) = server.get("/manage/srt_receiver_stats");
    assert_eq!(stats["SrtReceivers"], serde_json::json!([]));
}

#[test]
fn h265_over_srt_plays_over_hls() {
    let port = free_port();
    let server = start(&listener_camera(port));
    let mut sender = send(&caller_url(port, "hevc", PASSPHRASE), "libx265");
    let entry = wait_tracks(&server, "hevc");
    assert!(
        entry["vcodec"].as_str().unwrap().starts_with("hvc1")
            || entry["vcodec"].as_str().unwrap().starts_with("hev1"),
        "{entry}"
    );
    let hls = hls_streams(&server, "hevc", "hevc,video,320,240");
    assert!(
        hls.iter().any(|s| s.starts_with("aac,audio")),
        "HLS: {hls:?}"
    );
    let _ = sender.stop_and_stderr();
}

#[test]
fn strom_pulls_from_srt_live_transmit() {
    require_tool("srt-live-transmit", "srt-tools");
    let (udp_port, srt_port) = (free_port(), free_port());
    let mut relay = srt_live_transmit(&[
        &format!("udp://127.0.0.1:{udp_port}"),
        &format!("srt://127.0.0.1:{srt_port}?mode=listener"),
    ]);
    let server = start(&format!(
        r#"{{"id": "pull", "ip": "127.0.0.1", "port": {srt_port}, "protocol": "srt", "receive_mode": "pull", "app": "live", "stream": "pulled"}}"#
    ));
    let mut sender = send(
        &format!("udp://127.0.0.1:{udp_port}?pkt_size=1316"),
        "libx264",
    );
    let entry = wait_tracks(&server, "pulled");
    assert_eq!(entry["protocol"], "SRT", "{entry}");
    let rtmp = probe_streams(&rtmp_url(&server, "live/pulled"));
    assert!(
        rtmp.contains(&"h264,video,320,240".to_owned()),
        "RTMP: {rtmp:?}"
    );
    let _ = sender.stop_and_stderr();
    let _ = relay.stop_and_stderr();
}

/// `srt-live-transmit` with `args` (Debian package srt-tools), killed when dropped.
fn srt_live_transmit(args: &[&str]) -> Proc {
    require_tool("srt-live-transmit", "srt-tools");
    Proc(
        Command::new("srt-live-transmit")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    )
}

/// The text at `url` (curl), empty when it cannot be fetched.
fn fetch(url: &str) -> String {
    let output = Command::new("curl")
        .args(["-s", "--max-time", "5", url])
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The media playlist of `live/<stream>`, through its master playlist.
fn chunklist(server: &Server, stream: &str) -> String {
    let base = format!("http://127.0.0.1:{}/live/{stream}", server.ports.http);
    let master = fetch(&format!("{base}/playlist.m3u8"));
    match master
        .lines()
        .find(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        Some(media) => fetch(&format!("{base}/{media}")),
        None => String::new(),
    }
}

/// kill -9 of the ingest worker during an SRT push: the caller (srt-live-transmit, which
/// reconnects) is back on the air without anyone doing anything, HLS goes on with a
/// discontinuity, and an RTMP player of another stream notices nothing.
#[test]
fn an_ingest_crash_during_an_srt_push_heals_itself() {
    require_tool("srt-live-transmit", "srt-tools");
    let (srt_port, udp_port) = (free_port(), free_port());
    let server = start(&listener_camera(srt_port));
    let mut rtmp_publisher = common::media::publish(&rtmp_url(&server, "live/other"));
    wait_live(&server, "live", "other", LIVE).expect("RTMP stream live");
    let mut rtmp_player = common::media::play(&rtmp_url(&server, "live/other"));
    let mut caller = srt_live_transmit(&[
        "-a:yes",
        &format!("udp://127.0.0.1:{udp_port}"),
        &format!("srt://127.0.0.1:{srt_port}?passphrase={PASSPHRASE}"),
    ]);
    let mut sender = send(
        &format!("udp://127.0.0.1:{udp_port}?pkt_size=1316"),
        "libx264",
    );
    wait_tracks(&server, "default");
    wait_for(LIVE, "HLS segments before the crash", || {
        chunklist(&server, "default")
            .contains("#EXTINF")
            .then_some(())
    })
    .unwrap_or_else(|| panic!("no HLS; log:\n{}", server.log()));

    let ingest = server.worker_pid("ingest");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(ingest),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    wait_for(LIVE, "a new ingest worker", || {
        let (_, workers) = server.try_get("/manage/workers")?;
        let pid = workers
            .as_array()?
            .iter()
            .find(|w| w["kind"] == "ingest" && w["state"] == "ready")?["pid"]
            .as_i64()?;
        (pid as i32 != ingest).then_some(())
    })
    .unwrap_or_else(|| panic!("ingest not restarted; log:\n{}", server.log()));
    wait_for(
        LIVE,
        "the SRT caller back and the stream live again",
        || {
            let (_, stats) = server.try_get("/manage/srt_receiver_stats")?;
            let back = !stats["SrtReceivers"].as_array()?.is_empty();
            (back && common::media::is_live(&server, "live", "default")).then_some(())
        },
    )
    .unwrap_or_else(|| panic!("caller did not come back; log:\n{}", server.log()));
    wait_for(LIVE, "HLS continuing after a discontinuity", || {
        let media = chunklist(&server, "default");
        let after = media.split("#EXT-X-DISCONTINUITY").nth(1)?;
        after.contains("#EXTINF").then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "no discontinuity in {}; log:\n{}",
            chunklist(&server, "default"),
            server.log()
        )
    });
    assert!(
        rtmp_player.running(),
        "the RTMP player of another stream noticed"
    );
    assert!(
        rtmp_publisher.running(),
        "the RTMP publisher of another stream noticed"
    );
    let _ = sender.stop_and_stderr();
    let _ = caller.stop_and_stderr();
}

#[test]
fn rendezvous_with_srt_live_transmit() {
    require_tool("srt-live-transmit", "srt-tools");
    let (udp_port, tool_port, our_port) = (free_port(), free_port(), free_port());
    let mut peer = srt_live_transmit(&[
        &format!("udp://127.0.0.1:{udp_port}"),
        &format!("srt://127.0.0.1:{our_port}?mode=rendezvous&port={tool_port}"),
    ]);
    let server = start(&format!(
        r#"{{"id": "rv", "ip": "127.0.0.1", "port": {tool_port}, "protocol": "srt", "receive_mode": "rendezvous", "app": "live", "stream": "met",
  "parameters": [{{"name": "local_ip", "value": "127.0.0.1"}}, {{"name": "local_port", "value": "{our_port}"}}]}}"#
    ));
    let mut sender = send(
        &format!("udp://127.0.0.1:{udp_port}?pkt_size=1316"),
        "libx264",
    );
    let entry = wait_tracks(&server, "met");
    assert_eq!(entry["protocol"], "SRT", "{entry}");
    let _ = sender.stop_and_stderr();
    let _ = peer.stop_and_stderr();
}
