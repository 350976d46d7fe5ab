//! RTSP end to end: ffmpeg publishes over RTSP (TCP interleaved and UDP, with and
//! without credentials) and the stream plays over RTSP, RTMP and HLS; a stream published
//! over RTMP plays over RTSP (TCP and UDP) in ffprobe and ffmpeg; players and publishers
//! are sessions that `sessions/delete` ends one by one; a second strom pulls the first
//! one's RTSP output (credentials, TCP and UDP) and serves it over HLS, reconnecting when
//! the source comes back; garbage and unknown streams cost only their own connection.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{Proc, ffprobe, publish, rtmp_url, wait_live};
use common::{Server, free_port, require_tool, wait_for};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(30);

/// A server with RTMP and an RTSP listener on `rtsp_port`; app `secure` takes
/// publishers with login `user` and password `pw` only, app `signed` those with a
/// `publishsign` of password `s3cret`; HLS chunks of 2 s.
fn start(rtsp_port: u16) -> Server {
    let mut server = Server::prepare("");
    let rules = format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}], "duration": 2,
                              "apps": [{{"app": "secure", "login": "user", "password": "pw"}},
                                       {{"app": "signed", "publish_control": {{"password": "s3cret"}}}}]}},
            "RtspSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {rtsp_port}}}],
                              "limits": {{"player_wait_timeout_secs": 3}}}}}}"#,
        server.ports.rtmp
    );
    std::fs::write(server.path("rules.conf"), rules).unwrap();
    server.spawn();
    server.wait_ready();
    server
}

/// ffmpeg publishing the live test source (H.264 + AAC) to `url` over `transport`.
fn publish_rtsp(url: &str, transport: &str) -> Proc {
    publish_rtsp_coded(url, transport, "libx264")
}

/// [`publish_rtsp`] with another video encoder (`libx265`).
fn publish_rtsp_coded(url: &str, transport: &str, video_codec: &str) -> Proc {
    require_tool("ffmpeg", "ffmpeg");
    let child = Command::new("ffmpeg")
        .args(["-hide_banner", "-nostats", "-loglevel", "error", "-re"])
        .args(["-f", "lavfi", "-i", "testsrc=size=320x240:rate=25"])
        .args(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100"])
        .args([
            "-c:v",
            video_codec,
            "-preset",
            "ultrafast",
            "-tune",
            "zerolatency",
        ])
        .args([
            "-g", "25", "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "64k", "-t", "120",
        ])
        .args(["-f", "rtsp", "-rtsp_transport", transport, url])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    Proc(child)
}

/// The RTSP sessions listed, with whether each is a publisher (no `dropped_frames`).
fn rtsp_session_list(server: &Server) -> Vec<serde_json::Value> {
    let (_, sessions) = server.get("/manage/sessions");
    sessions
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["type"] == "RTSP")
        .cloned()
        .collect()
}

fn rtsp_sessions(server: &Server) -> Vec<u64> {
    let (_, sessions) = server.get("/manage/sessions");
    sessions
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["type"] == "RTSP")
        .map(|s| s["id"].as_u64().unwrap())
        .collect()
}

/// `codec_name,codec_type[,width,height]` of the streams ffprobe reads over `transport`.
fn probe(url: &str, transport: &str) -> Vec<String> {
    ffprobe(&[
        "-rtsp_transport",
        transport,
        "-show_entries",
        "stream=codec_type,codec_name,width,height",
        "-of",
        "csv=p=0",
        url,
    ])
    .lines()
    .map(|l| l.trim().trim_end_matches(',').to_owned())
    .filter(|l| !l.is_empty())
    .collect()
}

/// ffmpeg decoding `seconds` of `url` over `transport`, errors to stderr.
fn decode(url: &str, transport: &str, seconds: u32) -> Proc {
    require_tool("ffmpeg", "ffmpeg");
    let child = Command::new("ffmpeg")
        .args(["-hide_banner", "-nostats", "-loglevel", "error"])
        .args(["-rtsp_transport", transport, "-i", url])
        .args(["-t", &seconds.to_string(), "-f", "null", "-"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    Proc(child)
}

/// Sends `bytes` on a new connection and reads what comes back until it closes.
fn exchange(port: u16, bytes: &[u8]) -> String {
    let mut socket = TcpStream::connect(("127.0.0.1", port)).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let _ = socket.write_all(bytes);
    let mut answer = Vec::new();
    let _ = socket.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

#[test]
fn rtmp_stream_plays_over_rtsp_tcp_and_udp() {
    let rtsp_port = free_port();
    let server = start(rtsp_port);
    let mut publisher = publish(&rtmp_url(&server, "live/cam"));
    wait_live(&server, "live", "cam", LIVE).unwrap_or_else(|| {
        panic!(
            "not live: {}\n{}",
            publisher.stop_and_stderr(),
            server.log()
        )
    });
    let url = format!("rtsp://127.0.0.1:{rtsp_port}/live/cam");
    for transport in ["tcp", "udp"] {
        let streams = probe(&url, transport);
        assert!(
            streams.contains(&"h264,video,320,240".to_owned())
                && streams.iter().any(|s| s.starts_with("aac,audio")),
            "ffprobe over RTSP/{transport} sees {streams:?}\n{}",
            server.log()
        );
    }

    // A player to delete, then one per transport that decodes 10 s.
    let mut doomed = decode(&url, "tcp", 60);
    let doomed_id = wait_for(LIVE, "first RTSP session", || {
        let ids = rtsp_sessions(&server);
        (ids.len() == 1).then(|| ids[0])
    })
    .unwrap_or_else(|| panic!("no RTSP session\n{}", server.log()));
    let mut over_tcp = decode(&url, "tcp", 10);
    let mut over_udp = decode(&url, "udp", 10);
    wait_for(LIVE, "three RTSP sessions", || {
        (rtsp_sessions(&server).len() == 3).then_some(())
    })
    .unwrap_or_else(|| panic!("sessions {:?}\n{}", rtsp_sessions(&server), server.log()));
    let (_, sessions) = server.get("/manage/sessions");
    for session in sessions
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["type"] == "RTSP")
    {
        assert_eq!(
            (session["app"].as_str(), session["stream"].as_str()),
            (Some("live"), Some("cam"))
        );
        assert_eq!(session["client_ip"], "127.0.0.1");
        assert!(
            session["user_agent"].as_str().unwrap().contains("Lavf"),
            "{session}"
        );
    }
    assert_eq!(
        server.post("/manage/sessions/delete", &format!("[{doomed_id}]")),
        (200, serde_json::json!({"status": "Ok"}))
    );
    assert!(
        doomed.wait_exit(Duration::from_secs(20)).is_some(),
        "the deleted player was disconnected"
    );
    wait_for(Duration::from_secs(5), "two sessions left", || {
        let ids = rtsp_sessions(&server);
        (ids.len() == 2 && !ids.contains(&doomed_id)).then_some(())
    })
    .unwrap_or_else(|| panic!("sessions {:?}", rtsp_sessions(&server)));
    for (name, player) in [("tcp", &mut over_tcp), ("udp", &mut over_udp)] {
        let code = player.wait_exit(LIVE);
        let errors = player.stop_and_stderr();
        assert_eq!(
            code,
            Some(0),
            "ffmpeg over RTSP/{name}: {errors}\n{}",
            server.log()
        );
        assert!(
            errors.trim().is_empty(),
            "decoding errors over RTSP/{name}: {errors}"
        );
    }

    // Repeated UDP SETUPs cannot take a port pair each without bound.
    let mut requests = format!("DESCRIBE {url} RTSP/1.0\r\nCSeq: 1\r\n\r\n");
    for cseq in 2..22 {
        requests.push_str(&format!(
            "SETUP {url}/trackID=0 RTSP/1.0\r\nCSeq: {cseq}\r\nTransport: RTP/AVP;unicast;client_port=40000-40001\r\n\r\n"
        ));
    }
    requests.push_str(&format!("TEARDOWN {url} RTSP/1.0\r\nCSeq: 99\r\n\r\n"));
    let answer = exchange(rtsp_port, requests.as_bytes());
    assert_eq!(
        answer.matches("RTSP/1.0 200 OK").count(),
        1 + 16 + 1,
        "{answer}"
    );
    assert_eq!(answer.matches("RTSP/1.0 461").count(), 4, "{answer}");
}

/// `codec_name,codec_type` lines ffprobe reads at a URL, retried until both codecs show.
fn probe_until_both(url: &str, extra: &[&str]) -> Vec<String> {
    wait_for(LIVE, "ffprobe sees video and audio", || {
        let mut args: Vec<&str> = extra.to_vec();
        args.extend([
            "-show_entries",
            "stream=codec_type,codec_name",
            "-of",
            "csv=p=0",
            url,
        ]);
        let lines: Vec<String> = ffprobe(&args)
            .lines()
            .map(|l| l.trim().trim_end_matches(',').to_owned())
            .collect();
        (lines.iter().any(|l| l == "h264,video") && lines.iter().any(|l| l == "aac,audio"))
            .then_some(lines)
    })
    .unwrap_or_default()
}

#[test]
fn ffmpeg_publishes_over_rtsp_and_it_plays_everywhere() {
    let rtsp_port = free_port();
    let server = start(rtsp_port);
    let rtsp = |path: &str| format!("rtsp://127.0.0.1:{rtsp_port}/{path}");
    let mut over_tcp = publish_rtsp(&rtsp("live/tcpcam"), "tcp");
    let mut over_udp = publish_rtsp(&rtsp("live/udpcam"), "udp");
    let mut hevc = publish_rtsp_coded(&rtsp("live/hevc"), "tcp", "libx265");
    for stream in ["tcpcam", "udpcam"] {
        let entry = wait_live(&server, "live", stream, LIVE).unwrap_or_else(|| {
            panic!(
                "{stream} not live: {} {}\n{}",
                over_tcp.stop_and_stderr(),
                over_udp.stop_and_stderr(),
                server.log()
            )
        });
        assert_eq!(entry["protocol"], "RTSP", "{entry}");
    }
    for (what, url, extra) in [
        (
            "RTSP/TCP",
            rtsp("live/tcpcam"),
            vec!["-rtsp_transport", "tcp"],
        ),
        (
            "RTSP/UDP",
            rtsp("live/udpcam"),
            vec!["-rtsp_transport", "udp"],
        ),
        ("RTMP", rtmp_url(&server, "live/tcpcam"), vec![]),
        ("RTMP", rtmp_url(&server, "live/udpcam"), vec![]),
        (
            "HLS",
            format!(
                "http://127.0.0.1:{}/live/tcpcam/playlist.m3u8",
                server.ports.http
            ),
            vec![],
        ),
    ] {
        let streams = probe_until_both(&url, &extra);
        assert!(
            !streams.is_empty(),
            "{what} at {url} lacks H.264 + AAC\n{}",
            server.log()
        );
    }

    // H.265 (RFC 7798) in and out.
    wait_live(&server, "live", "hevc", LIVE).unwrap_or_else(|| {
        panic!(
            "H.265 not live: {}\n{}",
            hevc.stop_and_stderr(),
            server.log()
        )
    });
    let hevc_url = rtsp("live/hevc");
    let seen = wait_for(LIVE, "H.265 over RTSP", || {
        let streams = probe(&hevc_url, "tcp");
        streams
            .contains(&"hevc,video,320,240".to_owned())
            .then_some(streams)
    });
    assert!(
        seen.is_some(),
        "H.265 over RTSP: {:?}\n{}",
        probe(&hevc_url, "tcp"),
        server.log()
    );
    drop(hevc);

    // Both publishers are RTSP sessions; deleting one ends exactly that publish.
    // (The H.265 publisher's session ends with its connection.)
    let publishers = wait_for(LIVE, "two RTSP publishers", || {
        let ids: Vec<u64> = rtsp_session_list(&server)
            .iter()
            .filter(|s| s["dropped_frames"].is_null())
            .map(|s| s["id"].as_u64().unwrap())
            .collect();
        (ids.len() == 2).then_some(ids)
    })
    .unwrap_or_else(|| panic!("{:?}", rtsp_session_list(&server)));
    let (_, status) = server.get("/manage/publish_control/status");
    assert_eq!(status.to_string().matches("live/").count(), 2, "{status}");
    let doomed = *publishers.iter().min().unwrap();
    assert_eq!(
        server.post("/manage/sessions/delete", &format!("[{doomed}]")),
        (200, serde_json::json!({"status": "Ok"}))
    );
    wait_for(Duration::from_secs(20), "one publisher left", || {
        let left: Vec<u64> = rtsp_sessions(&server);
        (left.len() == 1 && !left.contains(&doomed)).then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "sessions {:?}\n{}",
            rtsp_session_list(&server),
            server.log()
        )
    });
    assert!(
        over_tcp.wait_exit(LIVE).is_some() || over_udp.wait_exit(LIVE).is_some(),
        "the deleted publisher's ffmpeg stopped"
    );

    // Credentials: wrong ones are refused, right ones (Digest, which ffmpeg prefers) pass.
    let mut wrong = publish_rtsp(
        &format!("rtsp://user:nope@127.0.0.1:{rtsp_port}/secure/cam"),
        "tcp",
    );
    let code = wrong.wait_exit(LIVE);
    assert!(
        matches!(code, Some(c) if c != 0),
        "a wrong password is refused: {code:?}"
    );
    let errors = wrong.stop_and_stderr();
    assert!(errors.contains("401"), "ffmpeg says 401: {errors}");
    let mut none = publish_rtsp(&rtsp("secure/cam"), "tcp");
    assert!(
        matches!(none.wait_exit(LIVE), Some(c) if c != 0),
        "no credentials: refused"
    );
    let mut right = publish_rtsp(
        &format!("rtsp://user:pw@127.0.0.1:{rtsp_port}/secure/cam"),
        "tcp",
    );
    wait_live(&server, "secure", "cam", LIVE).unwrap_or_else(|| {
        panic!(
            "right credentials: {}\n{}",
            right.stop_and_stderr(),
            server.log()
        )
    });
}

/// `publishsign` (percent-encoded) for `id` publishing `signed/<stream>` from anywhere.
fn publishsign(id: &str, stream: &str) -> String {
    use base64::Engine;
    use md5::Digest;
    let engine = base64::engine::general_purpose::STANDARD;
    let sign = engine.encode(md5::Md5::digest(
        format!("{id}/signed/{stream}s3cret").as_bytes(),
    ));
    engine
        .encode(format!("id={id}&sign={sign}"))
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[test]
fn signed_rtsp_publishers_are_listed_and_denied() {
    let rtsp_port = free_port();
    let server = start(rtsp_port);
    let mut unsigned = publish_rtsp(
        &format!("rtsp://127.0.0.1:{rtsp_port}/signed/nosign"),
        "tcp",
    );
    assert!(
        matches!(unsigned.wait_exit(LIVE), Some(c) if c != 0),
        "an unsigned publisher is refused"
    );
    let url = format!(
        "rtsp://127.0.0.1:{rtsp_port}/signed/cam?publishsign={}",
        publishsign("pub1", "cam")
    );
    let mut signed = publish_rtsp(&url, "tcp");
    wait_live(&server, "signed", "cam", LIVE).unwrap_or_else(|| {
        panic!(
            "signed publisher not live: {}\n{}",
            signed.stop_and_stderr(),
            server.log()
        )
    });
    let (_, status) = server.get("/manage/publish_control/status");
    let entry = status["PublishControlStatus"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["stream"] == "signed/cam")
        .unwrap_or_else(|| panic!("{status}"))
        .clone();
    assert_eq!(
        (entry["id"].as_str(), entry["ip"].as_str()),
        (Some("pub1"), Some("127.0.0.1"))
    );
    let (code, body) = server.post(
        "/manage/publish_control/deny",
        r#"{"PublishControlDenyRequest": ["pub1"]}"#,
    );
    assert_eq!(code, 200, "{body}");
    assert!(
        signed.wait_exit(LIVE).is_some(),
        "the denied publisher was disconnected\n{}",
        server.log()
    );
    let mut again = publish_rtsp(&url, "tcp");
    assert!(
        matches!(again.wait_exit(LIVE), Some(c) if c != 0),
        "a denied id is refused\n{}",
        server.log()
    );
    assert!(
        server.log().contains("publisher id pub1 is denied"),
        "{}",
        server.log()
    );
}

/// The JSON of `live_streams_status` on `server`.
fn live_streams(server: &Server) -> String {
    server
        .try_get("/manage/live_streams_status")
        .map(|(_, body)| body.to_string())
        .unwrap_or_default()
}

#[test]
fn a_second_strom_pulls_rtsp_and_reconnects() {
    let origin_rtsp = free_port();
    let origin = start(origin_rtsp);
    let mut publisher = publish(&rtmp_url(&origin, "live/src"));
    wait_live(&origin, "live", "src", LIVE)
        .unwrap_or_else(|| panic!("origin not live: {}", publisher.stop_and_stderr()));

    // The edge pulls it twice: over TCP, and over UDP with credentials in the URL (as
    // cameras need; given when challenged, never shown in logs or status).
    let mut edge = Server::prepare("");
    let source = format!("rtsp://127.0.0.1:{origin_rtsp}/live/src");
    let rules = format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}], "duration": 2}},
            "RtmpPullSources": [
              {{"app": "live", "stream": "cam", "url": "{source}"}},
              {{"app": "live", "stream": "cam_udp", "url": "rtsp://viewer:secret@127.0.0.1:{origin_rtsp}/live/src",
                "transport": "udp"}}]}}"#,
        edge.ports.rtmp
    );
    std::fs::write(edge.path("rules.conf"), rules).unwrap();
    edge.spawn();
    edge.wait_ready();
    for stream in ["cam", "cam_udp"] {
        let entry = wait_live(&edge, "live", stream, LIVE)
            .unwrap_or_else(|| panic!("{stream} not pulled\n{}\n{}", edge.log(), origin.log()));
        assert_eq!(entry["protocol"], "RTSP", "{entry}");
    }
    let shown = format!("\"source_url\":\"{source}\"");
    assert!(
        live_streams(&edge).contains(&shown),
        "{shown} in {}",
        live_streams(&edge)
    );
    assert!(
        !live_streams(&edge).contains("secret"),
        "credentials never shown"
    );
    let hls = format!(
        "http://127.0.0.1:{}/live/cam/playlist.m3u8",
        edge.ports.http
    );
    assert!(
        !probe_until_both(&hls, &[]).is_empty(),
        "the pulled stream over HLS\n{}",
        edge.log()
    );

    // The source goes away and comes back: the pull follows.
    drop(publisher);
    wait_for(LIVE, "the pulled stream gone", || {
        (!live_streams(&edge).contains("\"cam\"")).then_some(())
    })
    .unwrap_or_else(|| panic!("still live: {}\n{}", live_streams(&edge), edge.log()));
    let _publisher = publish(&rtmp_url(&origin, "live/src"));
    wait_live(&edge, "live", "cam", Duration::from_secs(60))
        .unwrap_or_else(|| panic!("the pull did not reconnect\n{}", edge.log()));
    assert!(
        edge.log().contains("RTSP pull failed; retrying"),
        "{}",
        edge.log()
    );
}

#[test]
fn unknown_streams_and_garbage_cost_only_their_connection() {
    let rtsp_port = free_port();
    let server = start(rtsp_port);
    let answer = exchange(
        rtsp_port,
        b"OPTIONS rtsp://127.0.0.1/live/none RTSP/1.0\r\nCSeq: 1\r\n\r\n\
          DESCRIBE rtsp://127.0.0.1/live/none RTSP/1.0\r\nCSeq: 2\r\n\r\n\
          PLAY rtsp://127.0.0.1/live/none RTSP/1.0\r\nCSeq: 3\r\nSession: 99\r\n\r\n\
          TEARDOWN rtsp://127.0.0.1/live/none RTSP/1.0\r\nCSeq: 4\r\n\r\n",
    );
    assert!(
        answer.contains("CSeq: 1") && answer.contains("Public: OPTIONS, DESCRIBE"),
        "{answer}"
    );
    assert!(
        answer.contains("RTSP/1.0 404 Not Found\r\nCSeq: 2"),
        "{answer}"
    );
    assert!(
        answer.contains("RTSP/1.0 454 Session Not Found\r\nCSeq: 3"),
        "{answer}"
    );
    assert!(answer.contains("RTSP/1.0 200 OK\r\nCSeq: 4"), "{answer}");

    assert_eq!(
        exchange(rtsp_port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
        "",
        "not RTSP: closed"
    );
    let endless = vec![b'A'; 64 * 1024];
    assert_eq!(
        exchange(rtsp_port, &endless),
        "",
        "an oversized request: closed"
    );
    let answer = exchange(
        rtsp_port,
        b"OPTIONS * RTSP/1.0\r\nCSeq: 7\r\n\r\nTEARDOWN * RTSP/1.0\r\nCSeq: 8\r\n\r\n",
    );
    assert!(
        answer.contains("CSeq: 7"),
        "the server still answers: {answer}\n{}",
        server.log()
    );
}
