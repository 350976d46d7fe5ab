//! RTSP players that SETUP the stream's URL itself, without a DESCRIBE, get the stream
//! as MPEG-TS over RTP (RFC 2250): VLC (`cvlc`, whose `rtsp://` client without live555
//! is its SAT>IP module) records an RTMP-published stream headless over UDP, kept alive
//! past the session timeout by its `OPTIONS`, and ffprobe reads the recording as H.264 +
//! AAC; hand-written clients check the packets over TCP interleaved and UDP (payload
//! type 33, whole TS packets, a PAT first, ffmpeg decodes them cleanly), that the player
//! is an RTSP session that `sessions/delete` ends, and that a silent UDP player times out.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{Proc, ffprobe, publish, rtmp_url, wait_live};
use common::vlc::run_cvlc;
use common::{Server, free_port, require_tool, wait_for};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(30);

/// A server with RTMP and an RTSP listener on `rtsp_port`; RTSP sessions time out after
/// 6 s without a request (VLC's `OPTIONS` keep-alive then comes every second).
fn start(rtsp_port: u16) -> Server {
    let mut server = Server::prepare("");
    let rules = format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}], "duration": 2}},
            "RtspSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {rtsp_port}}}],
                              "limits": {{"player_wait_timeout_secs": 3, "session_timeout_secs": 6}}}}}}"#,
        server.ports.rtmp
    );
    std::fs::write(server.path("rules.conf"), rules).unwrap();
    server.spawn();
    server.wait_ready();
    server
}

/// A server with `live/cam` published over RTMP (H.264 320x240 + AAC, 1 s GOP).
fn start_published() -> (Server, Proc, u16) {
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
    (server, publisher, rtsp_port)
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

/// `codec_name,codec_type[,width,height]` of the streams in a file, and its duration.
fn probe_file(path: &Path) -> (Vec<String>, f64) {
    let path = path.to_str().unwrap();
    let streams = ffprobe(&[
        "-show_entries",
        "stream=codec_name,codec_type,width,height",
        "-of",
        "csv=p=0",
        path,
    ])
    .lines()
    .map(|l| l.trim().trim_end_matches(',').to_owned())
    .filter(|l| !l.is_empty())
    .collect();
    let duration = ffprobe(&["-show_entries", "format=duration", "-of", "csv=p=0", path])
        .trim()
        .parse()
        .unwrap_or(0.0);
    (streams, duration)
}

/// What ffmpeg reports while decoding the streams `map` selects (empty when they
/// decode cleanly).
fn decoding_errors(path: &Path, map: &str) -> String {
    require_tool("ffmpeg", "ffmpeg");
    let decoded = Command::new("ffmpeg")
        .args(["-hide_banner", "-v", "error", "-i"])
        .arg(path)
        .args(["-map", map, "-f", "null", "-"])
        .output()
        .unwrap();
    let errors = String::from_utf8_lossy(&decoded.stderr).trim().to_owned();
    match decoded.status.success() {
        true => errors,
        false => format!("ffmpeg failed: {errors}"),
    }
}

/// The AAC frames ffprobe decodes in a file.
fn audio_frames(path: &Path) -> u64 {
    ffprobe(&[
        "-select_streams",
        "a:0",
        "-count_frames",
        "-show_entries",
        "stream=nb_read_frames",
        "-of",
        "csv=p=0",
        path.to_str().unwrap(),
    ])
    // The stream is listed again under its program: the first line counts.
    .lines()
    .find_map(|l| l.trim().trim_end_matches(',').parse().ok())
    .unwrap_or(0)
}

/// `cvlc` recording `url` into `out` for `seconds` ([`cvlc`]: as `nobody` when root).
fn vlc_record(url: &str, out: &Path, home: &Path, seconds: u32) -> Proc {
    let sout = format!("#std{{access=file,mux=ts,dst={}}}", out.display());
    let seconds = seconds.to_string();
    run_cvlc(
        home,
        &[
            "--play-and-exit",
            "--run-time",
            &seconds,
            url,
            "--sout",
            &sout,
        ],
    )
}

#[test]
fn vlc_records_an_rtmp_stream_played_over_rtsp() {
    let (server, _publisher, rtsp_port) = start_published();
    let home = tempfile::tempdir().unwrap();
    std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = home.path().join("out.ts");
    let url = format!("rtsp://127.0.0.1:{rtsp_port}/live/cam");

    // Longer than the session timeout: the UDP player lives by VLC's keep-alive.
    let mut vlc = vlc_record(&url, &out, home.path(), 14);
    let player = wait_for(LIVE, "VLC's RTSP session", || {
        let (_, sessions) = server.get("/manage/sessions");
        sessions
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["type"] == "RTSP")
            .cloned()
    })
    .unwrap_or_else(|| {
        panic!(
            "no RTSP session: {}\n{}",
            vlc.stop_and_stderr(),
            server.log()
        )
    });
    assert_eq!(
        (player["app"].as_str(), player["stream"].as_str()),
        (Some("live"), Some("cam"))
    );
    assert_eq!(player["client_ip"], "127.0.0.1");
    let code = vlc.wait_exit(Duration::from_secs(60));
    let log = vlc.stop_and_stderr();
    assert_eq!(code, Some(0), "cvlc: {log}\n{}", server.log());

    let (streams, duration) = probe_file(&out);
    assert!(
        streams.contains(&"h264,video,320,240".to_owned())
            && streams.iter().any(|s| s.starts_with("aac,audio")),
        "VLC's recording has {streams:?}\ncvlc: {log}\n{}",
        server.log()
    );
    assert!(
        (9.0..=20.0).contains(&duration),
        "VLC recorded {duration} s of a 14 s run\ncvlc: {log}\n{}",
        server.log()
    );
    // Video only, and the decoders' complaints only: VLC re-times what it records by
    // its input clock (the null muxer sees DTS jitter) and cuts the last AAC frame
    // short when --run-time ends it.
    let errors = decoding_errors(&out, "0:v");
    let errors: Vec<&str> = errors
        .lines()
        .filter(|l| !l.starts_with("[null @"))
        .collect();
    assert!(errors.is_empty(), "VLC's recorded video: {errors:?}");
    let audio_frames = audio_frames(&out);
    assert!(
        audio_frames as f64 >= duration * 44_100.0 / 1024.0 * 0.8,
        "{audio_frames} AAC frames in {duration} s"
    );
    wait_for(Duration::from_secs(20), "VLC's session ended", || {
        rtsp_sessions(&server).is_empty().then_some(())
    })
    .unwrap_or_else(|| panic!("sessions left {:?}", rtsp_sessions(&server)));
}

/// Reads one response head (and its body) from `socket`.
fn read_response(socket: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        socket.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .map_or(0, |n| n.trim().parse::<usize>().unwrap());
    let mut body = vec![0u8; length];
    socket.read_exact(&mut body).unwrap();
    head
}

/// The next interleaved packet: channel and payload.
fn read_interleaved(socket: &mut TcpStream) -> (u8, Vec<u8>) {
    let mut prefix = [0u8; 4];
    socket.read_exact(&mut prefix).unwrap();
    assert_eq!(prefix[0], b'$', "interleaved data only after PLAY");
    let mut packet = vec![0u8; usize::from(u16::from_be_bytes([prefix[2], prefix[3]]))];
    socket.read_exact(&mut packet).unwrap();
    (prefix[1], packet)
}

fn pid(ts_packet: &[u8]) -> u16 {
    u16::from_be_bytes([ts_packet[1] & 0x1f, ts_packet[2]])
}

#[test]
fn a_setup_of_the_stream_url_plays_mpeg_ts_over_rtp() {
    let (server, _publisher, rtsp_port) = start_published();
    let url = format!("rtsp://127.0.0.1:{rtsp_port}/live/cam");
    let mut socket = connect(rtsp_port, Duration::from_secs(20));
    let setup = request(
        &mut socket,
        &format!(
            "SETUP {url} RTSP/1.0\r\nCSeq: 1\r\nTransport: RTP/AVP/TCP;unicast;interleaved=4-5\r\n\r\n"
        ),
    );
    assert!(
        setup.starts_with("RTSP/1.0 200 OK"),
        "{setup}\n{}",
        server.log()
    );
    assert!(
        setup.contains("Transport: RTP/AVP/TCP;unicast;interleaved=4-5"),
        "{setup}"
    );
    let session = session_of(&setup);
    // SAT>IP clients PLAY a URL of their own making; the session is what counts.
    let play = request(
        &mut socket,
        &format!(
            "PLAY rtsp://127.0.0.1:{rtsp_port}/stream=0 RTSP/1.0\r\nCSeq: 2\r\nSession: {session}\r\n\r\n"
        ),
    );
    assert!(play.starts_with("RTSP/1.0 200 OK"), "{play}");

    let mut ts = Vec::new();
    let mut sequence: Option<u16> = None;
    while ts.len() < 400 * 1024 {
        let (channel, packet) = read_interleaved(&mut socket);
        if channel == 5 {
            assert_eq!(
                packet[1], 200,
                "RTCP on the second channel: a sender report"
            );
            continue;
        }
        assert_eq!(channel, 4);
        assert_eq!(packet[1], 33, "payload type 33 (MP2T), no marker");
        let this = u16::from_be_bytes([packet[2], packet[3]]);
        if let Some(last) = sequence {
            assert_eq!(this, last.wrapping_add(1), "consecutive sequence numbers");
        }
        sequence = Some(this);
        let payload = &packet[12..];
        assert!(
            !payload.is_empty() && payload.len() % 188 == 0 && payload.len() <= 7 * 188,
            "whole TS packets, at most 7: {} bytes",
            payload.len()
        );
        assert!(payload.chunks(188).all(|p| p[0] == 0x47), "TS sync bytes");
        if ts.is_empty() {
            assert_eq!(pid(payload), 0, "the stream starts with a PAT");
        }
        ts.extend_from_slice(payload);
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("played.ts");
    std::fs::write(&file, &ts).unwrap();
    let (streams, _) = probe_file(&file);
    assert!(
        streams.contains(&"h264,video,320,240".to_owned())
            && streams.iter().any(|s| s.starts_with("aac,audio")),
        "the MPEG-TS over RTP has {streams:?}"
    );
    let errors = decoding_errors(&file, "0");
    assert!(errors.is_empty(), "decoding errors: {errors}");

    let ids = rtsp_sessions(&server);
    assert_eq!(ids.len(), 1, "one RTSP player: {ids:?}");
    assert_eq!(
        server.post("/manage/sessions/delete", &format!("[{}]", ids[0])),
        (200, serde_json::json!({"status": "Ok"}))
    );
    let mut rest = Vec::new();
    let closed = socket.read_to_end(&mut rest);
    assert!(
        closed.is_ok(),
        "the deleted player's connection closed: {closed:?}"
    );
    wait_for(Duration::from_secs(10), "no RTSP session", || {
        rtsp_sessions(&server).is_empty().then_some(())
    })
    .unwrap_or_else(|| panic!("sessions left {:?}", rtsp_sessions(&server)));
}

#[test]
fn an_mpeg_ts_setup_of_an_unknown_stream_is_not_found() {
    let rtsp_port = free_port();
    let server = start(rtsp_port);
    let mut socket = connect(rtsp_port, Duration::from_secs(20));
    let answer = request(
        &mut socket,
        &format!(
            "SETUP rtsp://127.0.0.1:{rtsp_port}/live/nothing RTSP/1.0\r\nCSeq: 0\r\nTransport: RTP/AVP;unicast;client_port=9000-9001\r\n\r\n"
        ),
    );
    assert!(
        answer.starts_with("RTSP/1.0 404"),
        "{answer}\n{}",
        server.log()
    );
    assert!(answer.contains("CSeq: 0"), "{answer}");
}

#[test]
fn a_udp_mpeg_ts_player_without_keep_alive_times_out() {
    let (server, _publisher, rtsp_port) = start_published();
    let media = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    media
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let port = media.local_addr().unwrap().port();
    let mut socket = connect(rtsp_port, Duration::from_secs(30));
    let setup = request(
        &mut socket,
        &format!(
            "SETUP rtsp://127.0.0.1:{rtsp_port}/live/cam RTSP/1.0\r\nCSeq: 0\r\nTransport: RTP/AVP;unicast;client_port={port}-{}\r\n\r\n",
            port + 1
        ),
    );
    assert!(
        setup.starts_with("RTSP/1.0 200 OK"),
        "{setup}\n{}",
        server.log()
    );
    assert!(setup.contains(";server_port="), "{setup}");
    let session = setup
        .lines()
        .find_map(|l| l.strip_prefix("Session: "))
        .unwrap()
        .to_owned();
    assert!(session.ends_with(";timeout=6"), "{session}");
    let session = session.split(';').next().unwrap();
    let play = request(
        &mut socket,
        &format!(
            "PLAY rtsp://127.0.0.1:{rtsp_port}/stream=0 RTSP/1.0\r\nCSeq: 1\r\nSession: {session}\r\n\r\n"
        ),
    );
    assert!(play.starts_with("RTSP/1.0 200 OK"), "{play}");

    let mut packet = [0u8; 2048];
    let len = media.recv(&mut packet).unwrap();
    assert_eq!(packet[1], 33, "MPEG-TS over RTP on the client's RTP port");
    assert_eq!((len - 12) % 188, 0, "whole TS packets");
    assert_eq!(pid(&packet[12..]), 0, "a PAT first");
    wait_for(LIVE, "an RTSP session", || {
        (rtsp_sessions(&server).len() == 1).then_some(())
    })
    .unwrap_or_else(|| panic!("no RTSP session\n{}", server.log()));

    // No requests and no RTCP from this player: the session times out.
    let mut rest = Vec::new();
    let closed = socket.read_to_end(&mut rest);
    assert!(closed.is_ok(), "the idle player was dropped: {closed:?}");
    wait_for(Duration::from_secs(10), "no RTSP session", || {
        rtsp_sessions(&server).is_empty().then_some(())
    })
    .unwrap_or_else(|| panic!("sessions left {:?}", rtsp_sessions(&server)));
}

/// A control connection to the RTSP port whose reads give up after `patience`.
fn connect(rtsp_port: u16, patience: Duration) -> TcpStream {
    let socket = TcpStream::connect(("127.0.0.1", rtsp_port)).unwrap();
    socket.set_read_timeout(Some(patience)).unwrap();
    socket
}

/// Sends one request and reads its response.
fn request(socket: &mut TcpStream, text: &str) -> String {
    socket.write_all(text.as_bytes()).unwrap();
    read_response(socket)
}

/// The session id of a SETUP response.
fn session_of(response: &str) -> String {
    response
        .lines()
        .find_map(|l| l.strip_prefix("Session: "))
        .and_then(|s| s.split(';').next())
        .unwrap_or_else(|| panic!("no session in {response}"))
        .to_owned()
}

#[test]
fn mp2t_transports_and_describe_less_track_setups_play() {
    let (server, _publisher, rtsp_port) = start_published();
    let url = format!("rtsp://127.0.0.1:{rtsp_port}/live/cam");
    let open = || connect(rtsp_port, Duration::from_secs(20));

    // A client that DESCRIBEs, then asks for the stream as MPEG-TS.
    let mut socket = open();
    let describe = request(
        &mut socket,
        &format!("DESCRIBE {url} RTSP/1.0\r\nCSeq: 1\r\n\r\n"),
    );
    assert!(describe.starts_with("RTSP/1.0 200 OK"), "{describe}");
    let setup = request(
        &mut socket,
        &format!(
            "SETUP {url} RTSP/1.0\r\nCSeq: 2\r\nTransport: MP2T/RTP/TCP;unicast;interleaved=0-1\r\n\r\n"
        ),
    );
    assert!(
        setup.starts_with("RTSP/1.0 200 OK"),
        "{setup}\n{}",
        server.log()
    );
    assert!(
        setup.contains("Transport: MP2T/RTP/TCP;unicast;interleaved=0-1"),
        "{setup}"
    );
    let play = request(
        &mut socket,
        &format!(
            "PLAY {url} RTSP/1.0\r\nCSeq: 3\r\nSession: {}\r\n\r\n",
            session_of(&setup)
        ),
    );
    assert!(play.starts_with("RTSP/1.0 200 OK"), "{play}");
    let (channel, packet) = read_interleaved(&mut socket);
    assert_eq!((channel, packet[1]), (0, 33), "MPEG-TS over RTP");
    assert_eq!(pid(&packet[12..]), 0, "a PAT first");
    drop(socket);

    // A client that knows the layout and SETUPs the video track without a DESCRIBE.
    let mut socket = open();
    let setup = request(
        &mut socket,
        &format!(
            "SETUP {url}/trackID=0 RTSP/1.0\r\nCSeq: 1\r\nTransport: RTP/AVP/TCP;unicast;interleaved=0-1\r\n\r\n"
        ),
    );
    assert!(
        setup.starts_with("RTSP/1.0 200 OK"),
        "{setup}\n{}",
        server.log()
    );
    let play = request(
        &mut socket,
        &format!(
            "PLAY {url} RTSP/1.0\r\nCSeq: 2\r\nSession: {}\r\n\r\n",
            session_of(&setup)
        ),
    );
    assert!(play.starts_with("RTSP/1.0 200 OK"), "{play}");
    let (channel, packet) = read_interleaved(&mut socket);
    assert_eq!(
        (channel, packet[1] & 0x7f),
        (0, 96),
        "H.264 over RTP on the video track's payload type"
    );
}
