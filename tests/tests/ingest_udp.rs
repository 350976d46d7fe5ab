//! MPEG-TS over UDP in: ffmpeg sends H.264 + AAC in MPEG-TS to a `Cameras` input (unicast
//! and multicast on loopback); the ingest worker (its own process) demuxes it into its
//! hub; ffprobe then reads the stream over RTMP (relayed by the rtmp worker over the
//! media bus) and over HLS (packaged by the packager from the bus), and the API shows
//! the input online with its programs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{Proc, probe_streams, publish_as, rtmp_url, wait_live};
use common::{Server, free_port, wait_for};
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(40);

/// ffmpeg sending a live H.264 + AAC test source as MPEG-TS over UDP to `url`.
fn send_ts(url: &str) -> Proc {
    publish_as(url, "mpegts")
}

fn start(camera_ip: &str, udp_port: u16, parameters: &str) -> Server {
    let server = Server::start("");
    std::fs::write(
        server.path("rules.conf"),
        format!(
            r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}], "duration": 1, "protocols": ["HLS"]}},
 "Cameras": [{{"id": "cam", "ip": "{camera_ip}", "port": {udp_port}, "protocol": "udp", "app": "live", "stream": "cam", "parameters": [{parameters}]}}]}}"#,
            server.ports.rtmp
        ),
    )
    .unwrap();
    server.wait_ready();
    assert_eq!(server.post("/manage/reload_config", "").0, 200);
    server
}

/// The input's entry in `mpeg2ts_status` once it is online.
fn wait_online(server: &Server) -> serde_json::Value {
    wait_for(LIVE, "the input online in mpeg2ts_status", || {
        let (status, body) = server.try_get("/manage/mpeg2ts_status")?;
        let camera = body["Cameras"].as_array()?.first()?.clone();
        (status == 200 && camera["st"] == "online").then_some(camera)
    })
    .unwrap_or_else(|| panic!("input never online; log:\n{}", server.log()))
}

fn plays_over_rtmp_and_hls(server: &Server) {
    wait_live(server, "live", "cam", LIVE)
        .unwrap_or_else(|| panic!("not live; log:\n{}", server.log()));
    // Audio's configuration may follow the first video frames.
    let entry = wait_for(LIVE, "both tracks known", || {
        let (_, body) = server.get("/manage/rtmp_status");
        let entry = body[0]["streams"][0].clone();
        entry["acodec"].is_string().then_some(entry)
    })
    .unwrap_or_else(|| panic!("no audio; log:\n{}", server.log()));
    assert_eq!(entry["protocol"], "MPEGTS", "{entry}");
    assert_eq!(entry["resolution"], "320x240", "{entry}");
    assert!(
        entry["vcodec"].as_str().unwrap().starts_with("avc1."),
        "{entry}"
    );
    assert_eq!(entry["acodec"], "mp4a.40.2", "{entry}");
    let (_, live) = server.get("/manage/live_streams_status");
    let ip = live[0]["streams"][0]["publisher_ip"].clone();
    assert_eq!(ip, "127.0.0.1", "{live}");

    let camera = wait_for(LIVE, "a measured input rate", || {
        let camera = wait_online(server);
        (camera["bw"].as_str()?.parse::<u64>().ok()? > 0).then_some(camera)
    })
    .unwrap_or_else(|| panic!("no rate; log:\n{}", server.log()));
    assert!(
        camera["tr"].as_str().unwrap().parse::<u64>().unwrap() > 0,
        "{camera}"
    );
    let codecs: Vec<&str> = camera["pmts"][0]["streams"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["codec"].as_str())
        .collect();
    assert_eq!(codecs, ["h264", "aac"], "{camera}");

    let rtmp = probe_streams(&rtmp_url(server, "live/cam"));
    assert!(
        rtmp.contains(&"h264,video,320,240".to_owned()),
        "RTMP: {rtmp:?}"
    );
    assert!(
        rtmp.iter().any(|s| s.starts_with("aac,audio")),
        "RTMP: {rtmp:?}"
    );

    let playlist = format!(
        "http://127.0.0.1:{}/live/cam/playlist.m3u8",
        server.ports.http
    );
    let hls = wait_for(LIVE, "HLS of the UDP input", || {
        let streams = probe_streams(&playlist);
        streams
            .contains(&"h264,video,320,240".to_owned())
            .then_some(streams)
    })
    .unwrap_or_else(|| panic!("no HLS; log:\n{}", server.log()));
    assert!(
        hls.iter().any(|s| s.starts_with("aac,audio")),
        "HLS: {hls:?}"
    );
}

#[test]
fn mpegts_over_udp_plays_over_rtmp_and_hls() {
    let port = free_port();
    let server = start("127.0.0.1", port, "");
    let mut sender = send_ts(&format!("udp://127.0.0.1:{port}?pkt_size=1316"));
    plays_over_rtmp_and_hls(&server);
    // The sender is listed as a session of the stream.
    let (_, sessions) = server.get("/manage/sessions");
    let sender_session = sessions
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["type"] == "MPEGTS")
        .unwrap_or_else(|| panic!("{sessions}"))
        .clone();
    assert_eq!(sender_session["stream"], "cam", "{sender_session}");
    assert_eq!(sender_session["client_ip"], "127.0.0.1", "{sender_session}");
    assert!(
        sender_session["bytes_recv"].as_u64().unwrap() > 0,
        "{sender_session}"
    );
    // The sender stops: the input goes offline and the stream ends.
    let _ = sender.stop_and_stderr();
    wait_for(LIVE, "the stream gone after the sender stopped", || {
        let (_, body) = server.get("/manage/rtmp_status");
        (body.as_array().map(Vec::len) == Some(0)).then_some(())
    })
    .unwrap_or_else(|| panic!("still live; log:\n{}", server.log()));
    let (_, status) = server.get("/manage/mpeg2ts_status");
    assert_eq!(status["Cameras"][0]["st"], "offline", "{status}");
    let (_, sessions) = server.get("/manage/sessions");
    assert!(
        !sessions
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["type"] == "MPEGTS"),
        "{sessions}"
    );
    assert!(
        server.log().contains("input stopped sending"),
        "{}",
        server.log()
    );
}

/// MPEG-TS in RTP (RFC 2250, what many encoders and IPTV headends send) is detected and
/// unwrapped per datagram.
#[test]
fn rtp_wrapped_mpegts_plays() {
    let port = free_port();
    let server = start("127.0.0.1", port, "");
    let mut sender = publish_as(
        &format!("rtp://127.0.0.1:{port}?pkt_size=1328"),
        "rtp_mpegts",
    );
    plays_over_rtmp_and_hls(&server);
    let _ = sender.stop_and_stderr();
}

#[test]
fn multicast_mpegts_on_loopback_plays() {
    let port = free_port();
    let group = "239.255.42.7";
    let server = start(
        group,
        port,
        r#"{"name": "interface", "value": "127.0.0.1"}"#,
    );
    let mut sender = send_ts(&format!(
        "udp://{group}:{port}?pkt_size=1316&localaddr=127.0.0.1&ttl=1"
    ));
    plays_over_rtmp_and_hls(&server);
    let _ = sender.stop_and_stderr();
}

/// Garbage at the input's port is counted and logged, never a stream, and the server
/// keeps answering.
#[test]
fn garbage_datagrams_make_no_stream() {
    let port = free_port();
    let server = start("127.0.0.1", port, "");
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut noise = 0x1234_5678u32;
    for _ in 0..2000 {
        let datagram: Vec<u8> = (0..1316)
            .map(|_| {
                noise ^= noise << 13;
                noise ^= noise >> 17;
                noise ^= noise << 5;
                noise as u8
            })
            .collect();
        socket.send_to(&datagram, ("127.0.0.1", port)).unwrap();
    }
    let camera = wait_online(&server);
    assert!(camera["tr"].as_str().unwrap().parse::<u64>().unwrap() > 0);
    assert_eq!(camera["pmts"], serde_json::json!([]), "{camera}");
    let (status, streams) = server.get("/manage/rtmp_status");
    assert_eq!((status, streams), (200, serde_json::json!([])));
}

/// A flood of garbage at one input (as fast as this machine sends it) neither becomes a
/// stream nor disturbs another input's live stream.
#[test]
fn a_garbage_flood_at_one_input_leaves_another_alone() {
    let (good_port, junk_port) = (free_port(), free_port());
    let server = Server::start("");
    std::fs::write(
        server.path("rules.conf"),
        format!(
            r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}], "duration": 1, "protocols": ["HLS"]}},
 "Cameras": [{{"id": "good", "ip": "127.0.0.1", "port": {good_port}, "protocol": "udp", "app": "live", "stream": "good"}},
             {{"id": "junk", "ip": "127.0.0.1", "port": {junk_port}, "protocol": "udp", "app": "live", "stream": "junk"}}]}}"#,
            server.ports.rtmp
        ),
    )
    .unwrap();
    server.wait_ready();
    assert_eq!(server.post("/manage/reload_config", "").0, 200);
    let mut sender = send_ts(&format!("udp://127.0.0.1:{good_port}?pkt_size=1316"));
    wait_live(&server, "live", "good", LIVE)
        .unwrap_or_else(|| panic!("not live; log:\n{}", server.log()));

    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut noise = 0x9e37_79b9u32;
    let mut datagram = vec![0u8; 1316];
    let started = std::time::Instant::now();
    let mut sent = 0u64;
    while started.elapsed() < Duration::from_secs(3) {
        for byte in datagram.iter_mut() {
            noise ^= noise << 13;
            noise ^= noise >> 17;
            noise ^= noise << 5;
            *byte = noise as u8;
        }
        // Every 8th datagram starts like TS, so the demuxer keeps finding sync bytes.
        if sent.is_multiple_of(8) {
            datagram[0] = 0x47;
        }
        if socket.send_to(&datagram, ("127.0.0.1", junk_port)).is_ok() {
            sent += 1;
        }
    }
    eprintln!("sent {sent} garbage datagrams in 3 s");

    let rtmp = probe_streams(&rtmp_url(&server, "live/good"));
    assert!(
        rtmp.contains(&"h264,video,320,240".to_owned()),
        "RTMP: {rtmp:?}"
    );
    let (_, status) = server.get("/manage/mpeg2ts_status");
    let cameras = status["Cameras"].as_array().unwrap();
    let junk = cameras.iter().find(|c| c["id"] == "junk").unwrap();
    assert!(
        junk["tr"].as_str().unwrap().parse::<u64>().unwrap() > 0,
        "{junk}"
    );
    let (_, streams) = server.get("/manage/rtmp_status");
    let names: Vec<&str> = streams[0]["streams"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["strm"].as_str())
        .collect();
    assert_eq!(names, ["good"], "{streams}");
    assert!(sender.running(), "the good input's sender is still sending");
    let _ = sender.stop_and_stderr();
}

/// The body of `url` (curl), empty when it cannot be fetched.
fn fetch(url: &str) -> String {
    let output = std::process::Command::new("curl")
        .args(["-sS", "--max-time", "20", url])
        .output()
        .expect("curl (Debian package curl)");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Whether the first video frame of the segment at `url` is a keyframe (ffprobe).
fn starts_with_keyframe(url: &str) -> bool {
    let first = common::media::ffprobe(&[
        "-select_streams",
        "v:0",
        "-read_intervals",
        "%+#1",
        "-show_entries",
        "frame=key_frame",
        "-of",
        "csv=p=0",
        url,
    ]);
    // ffprobe may end a frame's line with a comma (side data) and print empty lines.
    first
        .lines()
        .map(|line| line.trim().trim_end_matches(','))
        .find(|line| !line.is_empty())
        == Some("1")
}

/// An input joined mid-GOP (added by a reload while its sender runs, and again after its
/// worker is killed; 1 s GOPs, as long as the 1 s segments here): the audio's settings
/// come at once, the video's only with the next keyframe. The stream is still packaged
/// as video, so every HLS segment starts with a keyframe (after the restart it was cut as
/// audio only, at any frame, for as long as the sender ran).
#[test]
fn an_input_joined_mid_gop_is_cut_at_keyframes() {
    let udp_port = free_port();
    let _sender = Proc(
        common::media::test_source()
            .args([
                "-c:v",
                "libx264",
                "-preset",
                "ultrafast",
                "-pix_fmt",
                "yuv420p",
            ])
            .args(["-g", "25", "-keyint_min", "25", "-sc_threshold", "0"])
            .args(["-c:a", "aac", "-b:a", "64k", "-t", "120", "-f", "mpegts"])
            .arg(format!("udp://127.0.0.1:{udp_port}?pkt_size=1316"))
            .spawn()
            .expect("ffmpeg (Debian package ffmpeg)"),
    );
    let server = start("127.0.0.1", udp_port, "");
    let base = format!("http://127.0.0.1:{}/live/cam", server.ports.http);
    let listed = |count: usize| {
        wait_for(Duration::from_secs(60), "HLS segments", || {
            let chunks = fetch(&format!("{base}/chunks.m3u8"));
            let segments: Vec<String> = chunks
                .lines()
                .filter(|line| !line.is_empty() && !line.starts_with('#'))
                .map(str::to_owned)
                .collect();
            (segments.len() >= count).then_some(segments)
        })
        .unwrap_or_else(|| panic!("no segments; log:\n{}", server.log()))
    };
    listed(2);
    // A restarted ingest worker joins the sender mid-GOP again.
    let ingest = server.worker_pid("ingest");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(ingest),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let segments = listed(6);
    for segment in &segments {
        let url = format!("{base}/{segment}");
        assert!(
            starts_with_keyframe(&url),
            "{segment} does not start with a keyframe; log:\n{}",
            server.log()
        );
    }
    assert!(
        !server.log().contains("packaged as audio only"),
        "{}",
        server.log()
    );
}
