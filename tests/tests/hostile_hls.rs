//! HLS delivery under hostile or careless clients: floods of master playlist requests with
//! huge User-Agents, names that try to leave the URL space, and streams that end and
//! must not be held forever.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::http::keep_alive_get;
use common::media::{is_live, publish, rtmp_url};
use common::{Server, rss, wait_for};
use std::io::BufReader;
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(40);
/// The packager's cap on sessions per client address (workers/http viewers.rs).
const MAX_SESSIONS_PER_CLIENT: usize = 64;

fn start(extra: &str) -> Server {
    let server = Server::start(extra);
    std::fs::write(
        server.path("rules.conf"),
        format!(
            r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}], "duration": 1, "protocols": ["HLS"]}}}}"#,
            server.ports.rtmp
        ),
    )
    .unwrap();
    server.wait_ready();
    assert_eq!(server.post("/manage/reload_config", "").0, 200);
    server
}

fn http(server: &Server, path: &str) -> String {
    format!("http://127.0.0.1:{}/{path}", server.ports.http)
}

/// GET with curl: status and body. `extra` goes before the URL.
fn get(url: &str, extra: &[&str]) -> (u16, String) {
    common::require_tool("curl", "curl");
    let output = Command::new("curl")
        .args(["-sS", "--max-time", "10", "-w", "\n%{http_code}"])
        .args(extra)
        .arg(url)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_owned())
}

/// Waits until the master playlist answers and its chunklist lists `min` segments;
/// returns the chunklist. Asks from 127.0.0.3, so its sessions do not count against
/// 127.0.0.1's.
fn wait_playlist(server: &Server, stream: &str, min: usize) -> String {
    let from = ["--interface", "127.0.0.3"];
    wait_for(LIVE, "hls playlist", || {
        let url = http(server, &format!("live/{stream}/playlist.m3u8"));
        let (status, master) = get(&url, &from);
        if status != 200 {
            return None;
        }
        let chunklist = master.lines().find(|l| l.starts_with("chunks"))?.to_owned();
        let (status, media) = get(&http(server, &format!("live/{stream}/{chunklist}")), &from);
        (status == 200 && media.matches("#EXTINF").count() >= min).then_some(media)
    })
    .unwrap_or_else(|| panic!("no HLS playlist; log:\n{}", server.log()))
}

fn session_id(master: &str) -> Option<u128> {
    master
        .lines()
        .find(|l| l.starts_with("chunks"))?
        .rsplit_once("sid=")?
        .1
        .parse()
        .ok()
}

/// 3,000 master playlist requests with a 60 KB User-Agent from one address: the packager
/// keeps at most its per-client cap of sessions with a cut User-Agent, its memory barely
/// grows, every request still gets a playable playlist, and a viewer from another
/// address (and the flooding address's first viewers) stay listed.
#[test]
fn a_flood_of_sessions_with_huge_user_agents_stays_bounded() {
    let server = start("");
    let _publisher = publish(&rtmp_url(&server, "live/ua"));
    // A full window, so the segments held no longer grow while memory is measured.
    wait_playlist(&server, "ua", 6);
    let (status, other) = get(
        &http(&server, "live/ua/playlist.m3u8"),
        &["--interface", "127.0.0.2", "-A", "another viewer"],
    );
    assert_eq!(status, 200, "{other}");
    assert!(
        session_id(&other).is_some(),
        "the other viewer has a session"
    );

    let packager = server.worker_pid("packager");
    let before = rss(packager);
    let user_agent = format!("Mozilla/5.0 {}", "x".repeat(60 * 1024));
    let stream = TcpStream::connect(("127.0.0.1", server.ports.http)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.set_nodelay(true).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    let mut with_session = 0;
    let flood = std::time::Instant::now();
    for i in 0..3_000 {
        let (status, master) = keep_alive_get(
            &mut writer,
            &mut reader,
            "/live/ua/playlist.m3u8",
            &user_agent,
        );
        assert_eq!(status, 200, "request {i}: {master}");
        let chunklist = master
            .lines()
            .find(|l| l.starts_with("chunks"))
            .unwrap_or_else(|| panic!("request {i}: no chunklist in {master}"));
        if session_id(&master).is_some() {
            with_session += 1;
        } else {
            assert_eq!(chunklist, "chunks.m3u8", "no session, no sid");
        }
    }
    // A viewer past the cap still plays: its chunklist and segments are served.
    let (status, media) = keep_alive_get(&mut writer, &mut reader, "/live/ua/chunks.m3u8", "x");
    assert_eq!(status, 200);
    let segment = media.lines().find(|l| l.starts_with("seg_")).unwrap();
    assert!(!segment.contains("sid="), "{segment}");
    assert_eq!(
        get(
            &http(&server, &format!("live/ua/{segment}")),
            &["-o", "/dev/null"]
        )
        .0,
        200
    );
    let after = rss(packager);
    eprintln!(
        "packager RSS {} KiB -> {} KiB; {with_session} of 3000 got a session in {:?}",
        before / 1024,
        after / 1024,
        flood.elapsed()
    );
    assert_eq!(
        with_session,
        MAX_SESSIONS_PER_CLIENT,
        "log:\n{}",
        server.log()
    );
    assert!(
        after < before + 20 * 1024 * 1024,
        "packager RSS grew from {before} to {after} bytes"
    );

    let (_, sessions) = server.get("/manage/sessions");
    let hls: Vec<&serde_json::Value> = sessions
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["type"] == "HLS")
        .collect();
    let local = hls.iter().filter(|s| s["client_ip"] == "127.0.0.1").count();
    // All the sessions it got are still listed: none was evicted for a later one.
    assert_eq!(
        local, MAX_SESSIONS_PER_CLIENT,
        "{local} sessions of 127.0.0.1"
    );
    assert!(
        hls.iter()
            .any(|s| s["user_agent"] == "another viewer" && s["client_ip"] == "127.0.0.2"),
        "the other address's viewer is still listed"
    );
    for session in &hls {
        let agent = session["user_agent"].as_str().unwrap();
        assert!(
            agent.len() <= 256,
            "user agent of {} bytes kept",
            agent.len()
        );
    }
}

/// A stream that is unpublished and does not come back is freed after
/// `hls_stream_grace`: its playlist and segments answer 404 and its directory in
/// `run_dir/hls` is gone. Hostile names in URLs answer 404 without a lookup.
#[test]
fn an_ended_stream_is_freed_after_the_grace_time() {
    let server = start("hls_stream_grace = 2");
    let mut publisher = publish(&rtmp_url(&server, "live/gone"));
    let media = wait_playlist(&server, "gone", 2);
    let segment = media
        .lines()
        .find(|l| l.starts_with("seg_"))
        .unwrap()
        .to_owned();
    let segment_url = http(&server, &format!("live/gone/{segment}"));
    assert_eq!(get(&segment_url, &["-o", "/dev/null"]).0, 200);
    let dir = server.path("run/hls/live/gone");
    assert!(
        dir.join("index.json").exists(),
        "mirrored to {}",
        dir.display()
    );

    for path in [
        "live/..%2Fgone/playlist.m3u8",
        "live/%2E%2E/gone/playlist.m3u8",
        "../run/hls/live/gone/index.json",
        ".hidden/gone/playlist.m3u8",
        "live/.gone/playlist.m3u8",
        "live/gone%00/playlist.m3u8",
    ] {
        let (status, body) = get(&http(&server, path), &["--path-as-is"]);
        assert_eq!(status, 404, "{path}: {body}");
    }
    let long = format!("live/{}/playlist.m3u8", "a".repeat(129));
    assert_eq!(get(&http(&server, &long), &[]).0, 404);

    let _ = publisher.stop_and_stderr();
    wait_for(LIVE, "stream gone", || {
        (!is_live(&server, "live", "gone")).then_some(())
    })
    .unwrap();
    let playlist_url = http(&server, "live/gone/playlist.m3u8");
    wait_for(Duration::from_secs(30), "ended stream freed", || {
        (get(&playlist_url, &[]).0 == 404
            && get(&segment_url, &["-o", "/dev/null"]).0 == 404
            && !dir.exists())
        .then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "ended stream still served or on disk ({} exists: {}); log:\n{}",
            dir.display(),
            dir.exists(),
            server.log()
        )
    });
    assert!(
        !server.path("run/hls/live").exists(),
        "the empty app directory is gone too"
    );
    // The same name published again is served afresh.
    publisher = publish(&rtmp_url(&server, "live/gone"));
    let media = wait_playlist(&server, "gone", 1);
    assert!(media.contains("#EXT-X-MEDIA-SEQUENCE:0\n"), "{media}");
    drop(publisher);
}
