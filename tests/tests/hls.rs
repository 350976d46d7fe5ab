//! HLS end to end: ffmpeg publishes over RTMP, the packager worker (another process,
//! through the media bus) serves MPEG-TS and fMP4 HLS that ffprobe/ffmpeg play; viewer
//! sessions; discontinuities; crashes of either worker.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{ffprobe, play, publish, wait_live};
use common::{Server, wait_for};
use std::process::Command;
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(40);

fn start() -> Server {
    let server = Server::start("access_control_allow_origin = https://player.example");
    std::fs::write(
        server.path("rules.conf"),
        format!(r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}], "duration": 1, "protocols": ["HLS"]}}}}"#, server.ports.rtmp),
    )
    .unwrap();
    server.wait_ready();
    assert_eq!(server.post("/manage/reload_config", "").0, 200);
    server
}

fn http(server: &Server, path: &str) -> String {
    format!("http://127.0.0.1:{}/{path}", server.ports.http)
}

/// GET with curl: status, headers (lowercased names) and body.
fn get(url: &str, extra: &[&str]) -> (u16, String, Vec<u8>) {
    common::require_tool("curl", "curl");
    // `-I` prints the headers itself; otherwise `-D -` puts them before the body.
    let dump: &[&str] = if extra.contains(&"-I") {
        &[]
    } else {
        &["-D", "-"]
    };
    let output = Command::new("curl")
        .args(["-sS", "--max-time", "10"])
        .args(dump)
        .args(extra)
        .arg(url)
        .output()
        .unwrap();
    let raw = output.stdout;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|p| p + 4)
        .unwrap_or(raw.len());
    let head = String::from_utf8_lossy(&raw[..split]).to_lowercase();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, head, raw[split..].to_vec())
}

fn text(url: &str) -> (u16, String) {
    let (status, _, body) = get(url, &[]);
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// Waits until the master playlist answers 200 and its chunklist lists `min` segments.
fn wait_playlist(server: &Server, stream: &str, min: usize) -> (String, String) {
    wait_for(LIVE, "hls playlist", || {
        let (status, master) = text(&http(server, &format!("live/{stream}/playlist.m3u8")));
        if status != 200 {
            return None;
        }
        let chunklist = master
            .lines()
            .find(|l| !l.starts_with('#') && !l.is_empty())?
            .to_owned();
        let (status, media) = text(&http(server, &format!("live/{stream}/{chunklist}")));
        (status == 200 && media.matches("#EXTINF").count() >= min).then_some((chunklist, media))
    })
    .unwrap_or_else(|| panic!("no HLS playlist; log:\n{}", server.log()))
}

fn decode_errors(url: &str, seconds: &str) -> String {
    common::require_tool("ffmpeg", "ffmpeg");
    let output = Command::new("timeout")
        .args([
            "60", "ffmpeg", "-v", "error", "-i", url, "-t", seconds, "-f", "null", "-",
        ])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "ffmpeg failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn ts_and_fmp4_variants_play_in_ffmpeg() {
    let server = start();
    let _publisher = publish(&common::media::rtmp_url(&server, "live/cam"));
    wait_live(&server, "live", "cam", LIVE).unwrap();
    let (_, media) = wait_playlist(&server, "cam", 3);
    assert!(media.contains("#EXT-X-PROGRAM-DATE-TIME:"));
    assert!(!media.contains("#EXT-X-ENDLIST"));
    let (_, master) = text(&http(&server, "live/cam/playlist.m3u8"));
    assert!(master.contains("CODECS=\"avc1.42"), "{master}");
    assert!(master.contains("mp4a.40.2"));
    assert!(master.contains("RESOLUTION=320x240"));
    for playlist in ["playlist.m3u8", "playlist_fmp4.m3u8"] {
        let url = http(&server, &format!("live/cam/{playlist}"));
        let streams = ffprobe(&[
            "-show_entries",
            "stream=codec_type,codec_name,width,height",
            "-of",
            "csv=p=0",
            &url,
        ]);
        let streams: Vec<&str> = streams.lines().map(|l| l.trim_end_matches(',')).collect();
        assert!(
            streams.contains(&"h264,video,320,240"),
            "{playlist}: {streams:?}"
        );
        assert!(streams.contains(&"aac,audio"), "{playlist}: {streams:?}");
        let errors = decode_errors(&url, "10");
        assert!(
            errors.trim().is_empty(),
            "{playlist} decoding errors: {errors}"
        );
    }
    let (_, fmp4) = text(&http(&server, "live/cam/playlist_fmp4.m3u8"));
    let chunklist = fmp4.lines().find(|l| l.starts_with("chunks_fmp4")).unwrap();
    let (_, media) = text(&http(&server, &format!("live/cam/{chunklist}")));
    assert!(media.contains("#EXT-X-MAP:URI=\"init_"), "{media}");
}

#[test]
fn delivery_headers_ranges_and_unknown_streams() {
    let server = start();
    let _publisher = publish(&common::media::rtmp_url(&server, "live/h"));
    let (chunklist, media) = wait_playlist(&server, "h", 1);
    let (status, head, _) = get(&http(&server, &format!("live/h/{chunklist}")), &[]);
    assert_eq!(status, 200);
    assert!(head.contains("content-type: application/vnd.apple.mpegurl"));
    assert!(head.contains("cache-control: no-cache"));
    assert!(head.contains("access-control-allow-origin: https://player.example"));
    let segment = media.lines().find(|l| l.starts_with("seg_")).unwrap();
    let url = http(&server, &format!("live/h/{segment}"));
    let (status, head, body) = get(&url, &[]);
    assert_eq!(status, 200);
    assert!(head.contains("content-type: video/mp2t"));
    assert!(head.contains("immutable"));
    assert_eq!(body[0], 0x47, "an MPEG-TS segment");
    let (status, head, part) = get(&url, &["-H", "Range: bytes=188-375"]);
    assert_eq!(status, 206);
    assert_eq!(part, body[188..376]);
    assert!(head.contains(&format!("content-range: bytes 188-375/{}", body.len())));
    let (status, head, empty) = get(&url, &["-I"]);
    assert_eq!(status, 200);
    assert!(empty.is_empty());
    assert!(head.contains(&format!("content-length: {}", body.len())));
    assert_eq!(get(&url, &["-H", "Range: bytes=99999999-"]).0, 416);
    assert_eq!(get(&http(&server, "live/nope/playlist.m3u8"), &[]).0, 404);
    assert_eq!(get(&http(&server, "live/h/seg_999999.ts"), &[]).0, 404);
    let (status, head, _) = get(&http(&server, "live/h/playlist.m3u8"), &["-X", "OPTIONS"]);
    assert_eq!(status, 204);
    assert!(head.contains("access-control-allow-methods"));
}

#[test]
fn deleting_an_hls_session_gets_403_while_others_continue() {
    let server = start();
    let _publisher = publish(&common::media::rtmp_url(&server, "live/v"));
    wait_playlist(&server, "v", 1);
    let chunklist_of = |master: &str| {
        master
            .lines()
            .find(|l| l.starts_with("chunks"))
            .unwrap()
            .to_owned()
    };
    let (_, first) = text(&http(&server, "live/v/playlist.m3u8"));
    let (_, second) = text(&http(&server, "live/v/playlist.m3u8"));
    let (first, second) = (chunklist_of(&first), chunklist_of(&second));
    assert_ne!(first, second, "each viewer gets its own session");
    let (_, sessions) = server.get("/manage/sessions");
    let hls: Vec<&serde_json::Value> = sessions
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["type"] == "HLS")
        .collect();
    // The `sid` is an unguessable token, not the API's id: the two viewers' sessions are
    // the two newest, the first viewer's the older of them.
    let mut ids: Vec<u64> = hls
        .iter()
        .filter(|s| s["stream"] == "v")
        .filter_map(|s| s["id"].as_u64())
        .collect();
    ids.sort_unstable();
    assert!(ids.len() >= 2, "{sessions}");
    let id = ids[ids.len() - 2];
    for sid in [&first, &second] {
        let token = sid.rsplit_once("sid=").unwrap().1;
        assert!(token.len() > 20 && token.parse::<u128>().is_ok(), "{sid}");
        assert!(ids.iter().all(|id| token != id.to_string()), "{sid}");
    }
    assert!(hls.iter().any(|s| s["id"] == id
        && s["app"] == "live"
        && s["stream"] == "v"
        && s["client_ip"] == "127.0.0.1"));
    let (_, media) = text(&http(&server, &format!("live/v/{first}")));
    let segment = media
        .lines()
        .find(|l| l.starts_with("seg_"))
        .unwrap()
        .to_owned();
    assert_eq!(
        server.post("/manage/sessions/delete", &format!("{{\"data\":[{id}]}}")),
        (200, serde_json::json!({"status": "Ok"}))
    );
    assert_eq!(get(&http(&server, &format!("live/v/{first}")), &[]).0, 403);
    assert_eq!(
        get(&http(&server, &format!("live/v/{segment}")), &[]).0,
        403
    );
    assert_eq!(get(&http(&server, &format!("live/v/{second}")), &[]).0, 200);
    let other_sid = second.rsplit_once("sid=").unwrap().1;
    let other_segment = format!("{}sid={other_sid}", segment.split("sid=").next().unwrap());
    assert_eq!(
        get(&http(&server, &format!("live/v/{other_segment}")), &[]).0,
        200
    );
    let (_, sessions) = server.get("/manage/sessions");
    assert!(sessions.as_array().unwrap().iter().all(|s| s["id"] != id));
}

fn media_sequence(media: &str) -> u64 {
    media
        .lines()
        .find_map(|l| l.strip_prefix("#EXT-X-MEDIA-SEQUENCE:"))
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn a_publisher_restart_inserts_a_discontinuity() {
    let server = start();
    let mut publisher = publish(&common::media::rtmp_url(&server, "live/d"));
    let (chunklist, media) = wait_playlist(&server, "d", 2);
    let before = media_sequence(&media);
    drop(publisher);
    wait_for(LIVE, "stream gone", || {
        (!common::media::is_live(&server, "live", "d")).then_some(())
    })
    .unwrap();
    publisher = publish(&common::media::rtmp_url(&server, "live/d"));
    let after = wait_for(LIVE, "discontinuity", || {
        let (status, media) = text(&http(&server, &format!("live/d/{chunklist}")));
        (status == 200 && media.contains("#EXT-X-DISCONTINUITY\n")).then_some(media)
    })
    .unwrap_or_else(|| panic!("no discontinuity; log:\n{}", server.log()));
    assert!(
        media_sequence(&after) >= before,
        "media sequence went back: {before} -> {after}"
    );
    drop(publisher);
}

#[test]
fn worker_crashes_keep_hls_and_rtmp_viewers_served() {
    let server = start();
    let mut publisher = publish(&common::media::rtmp_url(&server, "live/c"));
    let (chunklist, media) = wait_playlist(&server, "c", 2);
    let mut rtmp_player = play(&common::media::rtmp_url(&server, "live/c"));
    wait_for(LIVE, "rtmp player", || {
        server
            .get("/manage/sessions")
            .1
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["type"] == "RTMP")
            .then_some(())
    })
    .unwrap();

    // kill -9 the packager: playlists come back (restored from disk), RTMP sees nothing.
    let packager = server.worker_pid("packager");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(packager),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let killed = std::time::Instant::now();
    wait_for(Duration::from_secs(10), "playlist again", || {
        (text(&http(&server, &format!("live/c/{chunklist}"))).0 == 200).then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "playlist not served after packager restart; log:\n{}",
            server.log()
        )
    });
    eprintln!(
        "playlist served again {:?} after SIGKILL of the packager",
        killed.elapsed()
    );
    assert!(rtmp_player.running(), "the RTMP player did not notice");

    // kill -9 the rtmp worker: the packager keeps serving what it has.
    let listed: Vec<String> = media
        .lines()
        .filter(|l| l.starts_with("seg_"))
        .map(str::to_owned)
        .collect();
    let rtmp = server.worker_pid("rtmp");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(rtmp),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let (status, _) = text(&http(&server, &format!("live/c/{chunklist}")));
    assert_eq!(status, 200);
    let (_, now) = text(&http(&server, &format!("live/c/{chunklist}")));
    for segment in now.lines().filter(|l| l.starts_with("seg_")) {
        assert_eq!(
            get(
                &http(&server, &format!("live/c/{segment}")),
                &["-o", "/dev/null"]
            )
            .0,
            200,
            "{segment} listed but missing"
        );
    }
    let _ = listed;
    // The encoder lost its connection; it comes back on the same URL.
    let _ = publisher.wait_exit(Duration::from_secs(20));
    server.wait_ready();
    publisher = publish(&common::media::rtmp_url(&server, "live/c"));
    let after = wait_for(LIVE, "continued with a discontinuity", || {
        let (status, media) = text(&http(&server, &format!("live/c/{chunklist}")));
        (status == 200
            && media.contains("#EXT-X-DISCONTINUITY\n")
            && media.lines().last().is_some_and(|l| l.starts_with("seg_")))
        .then_some(media)
    })
    .unwrap_or_else(|| panic!("no continuation; log:\n{}", server.log()));
    assert!(media_sequence(&after) >= media_sequence(&now));
    drop(publisher);
    drop(rtmp_player);
}

#[test]
fn https_playback() {
    let mut server = Server::prepare("");
    let ssl_port = common::free_port();
    let dir = server.dir.path().to_path_buf();
    common::self_signed_certificate(&dir, "localhost", "cert.pem", "key.pem");
    let conf = std::fs::read_to_string(dir.join("strom.conf")).unwrap();
    std::fs::write(dir.join("strom.conf"), format!("{conf}ssl_port = {ssl_port}\nssl_certificate = cert.pem\nssl_certificate_key = key.pem\n")).unwrap();
    std::fs::write(
        dir.join("rules.conf"),
        format!(r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}], "duration": 1}}}}"#, server.ports.rtmp),
    )
    .unwrap();
    server.spawn();
    server.wait_ready();
    let _publisher = publish(&common::media::rtmp_url(&server, "live/tls"));
    wait_playlist(&server, "tls", 2);
    let url = format!("https://127.0.0.1:{ssl_port}/live/tls/playlist.m3u8");
    let (status, _, _) = get(&url, &["-k"]);
    assert_eq!(status, 200);
    let errors = decode_errors(&url, "3");
    assert!(errors.trim().is_empty(), "https decoding errors: {errors}");
}

#[test]
fn idle_hls_sessions_expire_after_the_configured_time() {
    let server = Server::start("hls_session_timeout = 5");
    std::fs::write(
        server.path("rules.conf"),
        format!(r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}], "duration": 1}}}}"#, server.ports.rtmp),
    )
    .unwrap();
    server.wait_ready();
    assert_eq!(server.post("/manage/reload_config", "").0, 200);
    let _publisher = publish(&common::media::rtmp_url(&server, "live/e"));
    wait_playlist(&server, "e", 1);
    let (_, master) = text(&http(&server, "live/e/playlist.m3u8"));
    assert!(master.contains("?sid="), "{master}");
    let id: u64 = server
        .get("/manage/sessions")
        .1
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["type"] == "HLS" && s["stream"] == "e")
        .and_then(|s| s["id"].as_u64())
        .unwrap();
    let listed = |server: &Server| {
        server
            .get("/manage/sessions")
            .1
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["id"] == id)
    };
    assert!(listed(&server));
    wait_for(Duration::from_secs(30), "idle session expired", || {
        (!listed(&server)).then_some(())
    })
    .expect("an idle HLS session ends after hls_session_timeout");
}

/// A playlist asked for as soon as the publish starts, before the first segment is cut
/// (4 s segments here), is held until there is one and answered 200, not 404 "no such
/// stream": a newcomer who opens the URL at once must not think the server broken.
#[test]
fn a_playlist_asked_before_the_first_segment_waits_for_it() {
    let mut server = Server::prepare("");
    std::fs::write(
        server.path("rules.conf"),
        format!(
            r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
                "Delivery": {{"outputs": ["HLS"], "segment_duration_secs": 4}}}}"#,
            server.ports.rtmp
        ),
    )
    .unwrap();
    server.spawn();
    server.wait_ready();
    let _publisher = publish(&common::media::rtmp_url(&server, "live/fresh"));
    wait_live(&server, "live", "fresh", LIVE)
        .unwrap_or_else(|| panic!("not live; log:\n{}", server.log()));
    let (status, _, body) = get(
        &http(&server, "live/fresh/playlist.m3u8"),
        &["--max-time", "30"],
    );
    let body = String::from_utf8_lossy(&body);
    assert_eq!(status, 200, "{body}\nlog:\n{}", server.log());
    assert!(body.contains("#EXT-X-STREAM-INF"), "{body}");
    // A name that is not live is still answered 404 at once.
    let (status, _, _) = get(&http(&server, "live/absent/playlist.m3u8"), &[]);
    assert_eq!(status, 404);
}
