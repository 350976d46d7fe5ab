//! The RTMP worker end to end: ffmpeg publishes, ffprobe/ffmpeg/rtmpdump play, with
//! credentials, publish control, session control and hostile input.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use common::media::{ffprobe, is_live, play, probe_streams, publish, rtmp_url, wait_live};
use common::{Server, require_tool, wait_for};
use md5::{Digest, Md5};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(30);

fn start_with_rules(rtmp_settings_extra: &str) -> Server {
    let server = Server::start("");
    let rules = format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}], "duration": 6, "protocols": ["HLS"]{rtmp_settings_extra}}}}}"#,
        server.ports.rtmp
    );
    std::fs::write(server.path("rules.conf"), rules).unwrap();
    server.wait_ready();
    assert_eq!(server.post("/manage/reload_config", "").0, 200);
    server
}

fn player_session_ids(server: &Server) -> Vec<u64> {
    let (_, sessions) = server.get("/manage/sessions");
    sessions
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["type"] == "RTMP")
        .map(|s| s["id"].as_u64().unwrap())
        .collect()
}

#[test]
fn ffmpeg_publishes_and_real_players_read_it() {
    let server = Server::start("");
    server.wait_ready();
    let _publisher = publish(&rtmp_url(&server, "live/cam"));
    let entry = wait_live(&server, "live", "cam", LIVE)
        .unwrap_or_else(|| panic!("not live; log:\n{}", server.log()));
    assert_eq!(entry["resolution"], "320x240");
    assert!(
        entry["vcodec"].as_str().unwrap().starts_with("avc1.42"),
        "ultrafast x264 is Constrained Baseline: {entry}"
    );
    assert_eq!(entry["acodec"], "mp4a.40.2");
    assert_eq!(entry["protocol"], "RTMP");
    assert!(
        entry["bandwidth"]
            .as_str()
            .unwrap()
            .chars()
            .all(|c| c.is_ascii_digit())
    );
    assert!(
        entry["publish_time"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
            > 1_600_000_000
    );
    assert!(
        entry.get("publisher_ip").is_none(),
        "rtmp_status has no publisher_ip"
    );
    let (_, live) = server.get("/manage/live_streams_status");
    assert_eq!(live[0]["streams"][0]["publisher_ip"], "127.0.0.1");

    // ffprobe over RTMP: the right codecs and resolution, no phantom streams.
    let streams = probe_streams(&rtmp_url(&server, "live/cam"));
    assert_eq!(
        streams,
        ["h264,video,320,240", "aac,audio"],
        "ffprobe saw {streams:?}"
    );

    // A player joining mid-stream gets a keyframe first.
    let first = ffprobe(&[
        "-select_streams",
        "v",
        "-read_intervals",
        "%+#1",
        "-show_entries",
        "frame=key_frame,pict_type",
        "-of",
        "csv=p=0",
        &rtmp_url(&server, "live/cam"),
    ]);
    assert_eq!(
        first.lines().next().map(str::trim),
        Some("1,I"),
        "first video frame: {first:?}"
    );

    // librtmp (rtmpdump) reads it too.
    require_tool("rtmpdump", "rtmpdump");
    let dump = server.path("dump.flv");
    let _ = Command::new("timeout")
        .args([
            "20",
            "rtmpdump",
            "--live",
            "-B",
            "3",
            "-r",
            &rtmp_url(&server, "live/cam"),
            "-o",
        ])
        .arg(&dump)
        .output()
        .unwrap();
    let dumped = probe_streams(dump.to_str().unwrap());
    assert_eq!(
        dumped,
        ["h264,video,320,240", "aac,audio"],
        "rtmpdump file: {dumped:?}"
    );

    // server_status counts the publisher and sums what players were sent.
    let (_, status) = server.get("/manage/server_status");
    assert!(status["Connections"].as_u64().unwrap() >= 1);
}

#[test]
fn a_second_publisher_is_refused_and_the_first_keeps_going() {
    let server = Server::start("");
    server.wait_ready();
    let mut first = publish(&rtmp_url(&server, "live/one"));
    let before = wait_live(&server, "live", "one", LIVE).unwrap();
    let mut second = publish(&rtmp_url(&server, "live/one"));
    let code = second.wait_exit(Duration::from_secs(20));
    assert!(
        matches!(code, Some(c) if c != 0),
        "second publisher must fail, got {code:?}"
    );
    assert!(server.log().contains("already being published"));
    assert!(first.running(), "first publisher still streaming");
    let after = wait_live(&server, "live", "one", LIVE).unwrap();
    assert_eq!(before["publish_time"], after["publish_time"]);
    let streams = probe_streams(&rtmp_url(&server, "live/one"));
    assert_eq!(streams[0], "h264,video,320,240");
}

#[test]
fn publishing_with_credentials() {
    let server = start_with_rules(r#", "login": "enc", "password": "s3cret""#);
    let port = server.ports.rtmp;
    let mut wrong = publish(&format!("rtmp://enc:nope@127.0.0.1:{port}/live/auth"));
    assert!(
        matches!(wrong.wait_exit(Duration::from_secs(20)), Some(c) if c != 0),
        "wrong password must fail"
    );
    let mut none = publish(&format!("rtmp://127.0.0.1:{port}/live/auth"));
    assert!(
        matches!(none.wait_exit(Duration::from_secs(20)), Some(c) if c != 0),
        "no credentials must fail"
    );
    assert!(!is_live(&server, "live", "auth"));
    assert!(
        server.log().contains("authentication failed"),
        "log:\n{}",
        server.log()
    );

    let mut right = publish(&format!("rtmp://enc:s3cret@127.0.0.1:{port}/live/auth"));
    wait_live(&server, "live", "auth", LIVE).unwrap_or_else(|| {
        panic!(
            "right credentials rejected: {}\nlog:\n{}",
            right.stop_and_stderr(),
            server.log()
        )
    });
    // Playing needs no credentials.
    assert_eq!(
        probe_streams(&rtmp_url(&server, "live/auth"))[0],
        "h264,video,320,240"
    );
}

fn publish_sign(id: &str, app: &str, stream: &str, password: &str) -> String {
    let sign = STANDARD.encode(Md5::digest(
        format!("{id}/{app}/{stream}{password}").as_bytes(),
    ));
    let text = format!("id={id}&sign={sign}");
    let encoded = STANDARD.encode(text);
    encoded
        .replace('+', "%2B")
        .replace('/', "%2F")
        .replace('=', "%3D")
}

#[test]
fn publish_control_signs_lists_and_denies_across_worker_restarts() {
    let server =
        start_with_rules(r#", "apps": [{"app": "sec", "publish_control": {"password": "pcpw"}}]"#);
    let port = server.ports.rtmp;
    let url = |id: &str, password: &str| {
        format!(
            "rtmp://127.0.0.1:{port}/sec?publishsign={}/cam",
            publish_sign(id, "sec", "cam", password)
        )
    };
    let mut bad = publish(&url("pub7", "wrong"));
    assert!(
        matches!(bad.wait_exit(Duration::from_secs(20)), Some(c) if c != 0),
        "bad signature must fail"
    );

    let mut good = publish(&url("pub7", "pcpw"));
    wait_live(&server, "sec", "cam", LIVE)
        .unwrap_or_else(|| panic!("signed publish failed; log:\n{}", server.log()));
    let (_, status) = server.get("/manage/publish_control/status");
    let entry = &status["PublishControlStatus"][0];
    assert_eq!(entry["id"], "pub7");
    assert_eq!(entry["ip"], "127.0.0.1");
    assert_eq!(entry["stream"], "sec/cam");
    assert!(entry["key"].is_string());

    let (code, body) = server.post(
        "/manage/publish_control/deny",
        r#"{"PublishControlDenyRequest":["pub7"]}"#,
    );
    assert_eq!(
        (code, body),
        (
            200,
            serde_json::json!({"PublishControlDenyResponse": {"status": "success"}})
        )
    );
    assert!(
        good.wait_exit(Duration::from_secs(20)).is_some(),
        "denied publisher disconnected"
    );
    let mut again = publish(&url("pub7", "pcpw"));
    assert!(
        matches!(again.wait_exit(Duration::from_secs(20)), Some(c) if c != 0),
        "denied id refused"
    );

    // The deny list survives an rtmp worker crash.
    let old = server.worker_pid("rtmp");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(old),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    wait_for(Duration::from_secs(10), "rtmp worker back", || {
        let pid = server.worker_pid("rtmp");
        (pid != 0 && pid != old).then_some(())
    })
    .unwrap();
    server.wait_ready();
    let mut after_restart = publish(&url("pub7", "pcpw"));
    assert!(
        matches!(after_restart.wait_exit(Duration::from_secs(20)), Some(c) if c != 0),
        "still denied after restart"
    );
    // Another id still publishes.
    let _other = publish(&url("pub8", "pcpw"));
    wait_live(&server, "sec", "cam", LIVE).expect("another id publishes");
}

#[test]
fn deleting_a_session_disconnects_exactly_that_player() {
    let server = Server::start("");
    server.wait_ready();
    let _publisher = publish(&rtmp_url(&server, "live/s"));
    wait_live(&server, "live", "s", LIVE).unwrap();
    let mut first = play(&rtmp_url(&server, "live/s"));
    let ids = wait_for(LIVE, "first player session", || {
        let ids = player_session_ids(&server);
        (ids.len() == 1).then_some(ids)
    })
    .unwrap();
    let mut second = play(&rtmp_url(&server, "live/s"));
    let both = wait_for(LIVE, "two player sessions", || {
        let ids = player_session_ids(&server);
        (ids.len() == 2).then_some(ids)
    })
    .unwrap();
    let (_, sessions) = server.get("/manage/sessions");
    for session in sessions.as_array().unwrap() {
        assert_eq!(session["type"], "RTMP");
        assert_eq!(session["app"], "live");
        assert_eq!(session["stream"], "s");
        assert_eq!(session["client_ip"], "127.0.0.1");
        assert!(
            session["user_agent"].as_str().unwrap().len() > 3,
            "flashVer as user agent: {session}"
        );
        assert!(session["created"].is_i64() && session["last_access"].is_i64());
        assert!(session["bytes_sent"].is_u64() && session["bytes_recv"].is_u64());
        assert!(session["id"].as_u64().unwrap() < (1u64 << 53));
    }
    let target = ids[0];
    let other = *both.iter().find(|id| **id != target).unwrap();
    assert_eq!(
        server.post("/manage/sessions/delete", &format!("[{target}]")),
        (200, serde_json::json!({"status": "Ok"}))
    );
    wait_for(Duration::from_secs(10), "session gone", || {
        (player_session_ids(&server) == vec![other]).then_some(())
    })
    .unwrap_or_else(|| panic!("sessions now {:?}", player_session_ids(&server)));
    assert!(
        first.wait_exit(Duration::from_secs(20)).is_some(),
        "deleted player disconnected"
    );
    let sent = |server: &Server| -> u64 {
        let (_, sessions) = server.get("/manage/sessions");
        sessions[0]["bytes_sent"].as_u64().unwrap()
    };
    let before = sent(&server);
    wait_for(Duration::from_secs(10), "other player still fed", || {
        (sent(&server) > before).then_some(())
    })
    .expect("the other player keeps receiving");
    assert!(second.running());
}

/// Plain RTMP handshake (C0/C1, S0/S1/S2, C2).
fn handshake(addr: std::net::SocketAddr) -> TcpStream {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut c0c1 = vec![3u8];
    c0c1.extend(std::iter::repeat_n(0u8, 8));
    c0c1.extend((0..1528).map(|i| (i * 7 % 256) as u8));
    stream.write_all(&c0c1).unwrap();
    let mut s0s1s2 = vec![0u8; 3073];
    stream.read_exact(&mut s0s1s2).unwrap();
    stream.write_all(&s0s1s2[1..1537]).unwrap();
    stream
}

fn closed_by_server(mut stream: TcpStream) -> bool {
    let mut buffer = [0u8; 4096];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

#[test]
fn garbage_and_truncated_chunks_drop_only_that_connection() {
    let server = Server::start("");
    server.wait_ready();
    let _publisher = publish(&rtmp_url(&server, "live/g"));
    wait_live(&server, "live", "g", LIVE).unwrap();
    let mut player = play(&rtmp_url(&server, "live/g"));
    wait_for(LIVE, "player", || {
        (player_session_ids(&server).len() == 1).then_some(())
    })
    .unwrap();
    let addr: std::net::SocketAddr = ([127, 0, 0, 1], server.ports.rtmp).into();

    // Random bytes after a valid handshake.
    let mut garbage = handshake(addr);
    let mut state = 0x9e37_79b9u32;
    let noise: Vec<u8> = (0..8192)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state as u8
        })
        .collect();
    let _ = garbage.write_all(&noise);
    assert!(
        closed_by_server(garbage),
        "garbage connection closed by the server"
    );

    // A chunk header announcing a 1000-byte command, then the connection ends.
    let mut truncated = handshake(addr);
    truncated
        .write_all(&[0x03, 0, 0, 0, 0, 0x03, 0xE8, 0x14, 0, 0, 0, 0, 0x02, 0x00])
        .unwrap();
    drop(truncated);

    // Garbage instead of a handshake.
    let mut no_handshake = TcpStream::connect(addr).unwrap();
    no_handshake
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let _ = no_handshake.write_all(&[0xFF; 3000]);
    assert!(closed_by_server(no_handshake), "bad handshake closed");

    assert!(
        server.log().contains("rtmp connection dropped"),
        "the drop is logged"
    );
    let sent = || -> u64 {
        server.get("/manage/sessions").1[0]["bytes_sent"]
            .as_u64()
            .unwrap()
    };
    let before = sent();
    wait_for(Duration::from_secs(10), "player still fed", || {
        (sent() > before).then_some(())
    })
    .expect("player continues");
    assert!(player.running());
    assert!(is_live(&server, "live", "g"));
}

#[test]
fn a_silent_publisher_is_closed_and_connections_are_capped() {
    let server =
        start_with_rules(r#", "limits": {"publisher_idle_timeout_secs": 2, "max_connections": 3}"#);
    let publisher = publish(&rtmp_url(&server, "live/idle"));
    wait_live(&server, "live", "idle", LIVE).unwrap();
    // Freeze the encoder: its connection stays open but no media arrives.
    let pid = nix::unistd::Pid::from_raw(publisher.0.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).unwrap();
    wait_for(Duration::from_secs(20), "idle publisher closed", || {
        (!is_live(&server, "live", "idle")).then_some(())
    })
    .unwrap_or_else(|| panic!("silent publisher kept; log:\n{}", server.log()));
    assert!(
        server.log().contains("publisher sent no media"),
        "the reason is logged"
    );
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT).unwrap();
    drop(publisher);

    // max_connections 3: the fourth connection is closed without a handshake answer.
    let addr: std::net::SocketAddr = ([127, 0, 0, 1], server.ports.rtmp).into();
    let open: Vec<TcpStream> = (0..3).map(|_| handshake(addr)).collect();
    wait_for(Duration::from_secs(10), "three connections counted", || {
        (server.get("/manage/server_status").1["Connections"].as_u64() >= Some(3)).then_some(())
    })
    .unwrap();
    let mut fourth = TcpStream::connect(addr).unwrap();
    fourth
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let _ = fourth.write_all(&[3u8; 1537]);
    assert!(
        closed_by_server(fourth),
        "connection over the limit refused"
    );
    assert!(server.log().contains("connection limit reached"));
    drop(open);
}

/// ffmpeg's `testsrc` through libx264 without `-pix_fmt` is H.264 4:4:4 (High 4:4:4
/// Predictive), which many browsers, phones and TVs cannot decode: the publish is
/// accepted, and the log says once for that stream what is wrong and which ffmpeg option
/// fixes it. A 4:2:0 stream beside it gets no such line.
#[test]
fn a_stream_browsers_cannot_decode_is_named_once_with_the_fix() {
    let server = start_with_rules("");
    let url = rtmp_url(&server, "live/rgb");
    let _rgb = common::media::ffmpeg(&format!(
        "-hide_banner -loglevel error -re -f lavfi -i testsrc=size=320x240:rate=25 \
         -c:v libx264 -preset ultrafast -g 25 -t 60 -f flv {url}"
    ));
    let _yuv = publish(&rtmp_url(&server, "live/yuv"));
    wait_live(&server, "live", "rgb", LIVE).unwrap_or_else(|| panic!("{}", server.log()));
    wait_live(&server, "live", "yuv", LIVE).unwrap_or_else(|| panic!("{}", server.log()));
    let warned = |log: &str| {
        log.lines()
            .filter(|l| l.contains("-pix_fmt yuv420p") && l.contains("4:4:4 chroma"))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let lines = wait_for(LIVE, "the 4:4:4 warning", || {
        Some(warned(&server.log())).filter(|l| !l.is_empty())
    })
    .unwrap_or_else(|| panic!("no warning for live/rgb:\n{}", server.log()));
    assert!(lines[0].contains("live/rgb"), "{lines:?}");
    // Let more keyframes (each with its SPS) pass: still one line.
    std::thread::sleep(Duration::from_secs(3));
    let log = server.log();
    assert_eq!(warned(&log).len(), 1, "{:?}", warned(&log));
    assert!(
        !log.lines()
            .any(|l| l.contains("-pix_fmt") && l.contains("live/yuv")),
        "a 4:2:0 stream was warned about:\n{log}"
    );
}
