//! A real browser: Debian's headless Chromium, driven by playwright-core
//! (`tests/browser/play.mjs`), plays strom's HLS with hls.js from a page served on another
//! origin (CORS), for 10 s of wall time, with `currentTime` advancing and no fatal hls.js
//! error; once for the MPEG-TS master playlist and once for the fMP4 one. A second test
//! checks that hls.js exposes the `#EXT-X-DATERANGE` of an SCTE-35 break.
//!
//! Needs the Debian packages `chromium` and `nodejs` (with npm), and
//! `npm ci --prefix tests/browser` (scripts/test.sh does all three).
//! `STROM_BROWSER_SCREENSHOT=path.png` keeps a screenshot of each player.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{publish, rtmp_url, wait_live};
use common::{Server, free_port, require_tool, rules_json, wait_for};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const LIVE: Duration = Duration::from_secs(40);

fn browser_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("browser")
}

/// Fails the test, naming what to install, unless Chromium, node and the npm packages
/// are there.
fn require_browser_tools() {
    require_tool("chromium", "chromium");
    require_tool("node", "nodejs");
    let modules = browser_dir().join("node_modules");
    for needed in ["hls.js/dist/hls.min.js", "playwright-core/package.json"] {
        assert!(
            modules.join(needed).exists(),
            "{} is missing: run `npm ci --prefix tests/browser` (scripts/test.sh does)",
            modules.join(needed).display()
        );
    }
}

/// A static HTTP server on its own port (so its own origin) serving the player page and
/// hls.js; a thread per connection, because Chromium opens connections it may never use.
fn serve_player(port: u16) {
    let listener = TcpListener::bind(("127.0.0.1", port)).unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || serve_file(stream));
        }
    });
}

fn serve_file(mut stream: TcpStream) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let mut request = Vec::new();
    let mut buf = [0u8; 4096];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    let request = String::from_utf8_lossy(&request);
    let target = request.split_whitespace().nth(1).unwrap_or("/");
    let path = target.split('?').next().unwrap_or("/");
    if path == "/favicon.ico" {
        let _ = stream.write_all(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
        return;
    }
    let file = match path {
        "/" | "/index.html" => Some((browser_dir().join("index.html"), "text/html")),
        "/hls.min.js" => Some((
            browser_dir().join("node_modules/hls.js/dist/hls.min.js"),
            "text/javascript",
        )),
        _ => None,
    };
    let (status, content_type, body) =
        match file.and_then(|(p, t)| Some((t, std::fs::read(p).ok()?))) {
            Some((content_type, body)) => ("200 OK", content_type, body),
            None => ("404 Not Found", "text/plain", b"not found".to_vec()),
        };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&body);
}

/// GET with curl: status and body.
fn fetch(url: &str) -> (u16, String) {
    let output = Command::new("curl")
        .args(["-sS", "--max-time", "10", "-w", "\n%{http_code}", url])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_owned())
}

/// Waits until `master` answers and its first media playlist lists `min` segments.
fn wait_playlist(server: &Server, master: &str, min: usize) {
    require_tool("curl", "curl");
    let base = format!("http://127.0.0.1:{}/live/b", server.ports.http);
    wait_for(LIVE, "hls playlist", || {
        let (status, body) = fetch(&format!("{base}/{master}"));
        if status != 200 {
            return None;
        }
        let media = body
            .lines()
            .find(|l| !l.starts_with('#') && !l.is_empty())?;
        let (status, media) = fetch(&format!("{base}/{media}"));
        (status == 200 && media.matches("#EXTINF").count() >= min).then_some(())
    })
    .unwrap_or_else(|| panic!("no {master} with {min} segments; log:\n{}", server.log()));
}

/// Plays `playlist` in Chromium from the player page; the JSON that play.mjs printed.
fn play_in_browser(page: &str, playlist: &str, screenshot: &Path) -> serde_json::Value {
    let url = format!("{page}/index.html?src={playlist}");
    let started = Instant::now();
    let output = Command::new("timeout")
        .args(["90", "node"])
        .arg(browser_dir().join("play.mjs"))
        .arg(&url)
        .arg(screenshot)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "play.mjs {url} failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    let line = stdout.lines().last().unwrap_or_default();
    let result: serde_json::Value = serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("play.mjs printed no JSON ({e}):\n{stdout}\n{stderr}"));
    eprintln!("{playlist} in Chromium ({:?}): {result}", started.elapsed());
    result
}

/// What is wrong with one playback, if anything.
fn problems(result: &serde_json::Value, stream_origin: &str, page_origin: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if result["started"] != true {
        problems.push("playback never started".to_owned());
    }
    let fatal = result["fatalErrors"].as_array().map_or(0, Vec::len);
    if fatal > 0 {
        problems.push(format!("fatal errors: {}", result["fatalErrors"]));
    }
    let start = result["start"].as_f64().unwrap_or(0.0);
    let end = result["end"].as_f64().unwrap_or(0.0);
    if end - start < 5.0 {
        problems.push(format!(
            "currentTime advanced {:.2} s ({start:.2} -> {end:.2}) in {:.1} s of wall time; samples {}",
            end - start,
            result["wallSeconds"].as_f64().unwrap_or(0.0),
            result["samples"]
        ));
    }
    if result["levels"].as_u64().unwrap_or(0) < 1 {
        problems.push("hls.js parsed no level".to_owned());
    }
    if result["playlistOrigin"] != stream_origin || result["pageOrigin"] != page_origin {
        problems.push(format!(
            "not cross-origin as set up: playlist {} page {}",
            result["playlistOrigin"], result["pageOrigin"]
        ));
    }
    if result["videoWidth"] != 320 || result["videoHeight"] != 240 {
        problems.push(format!(
            "video is {}x{}, not 320x240",
            result["videoWidth"], result["videoHeight"]
        ));
    }
    problems
}

#[test]
fn hls_js_in_chromium_plays_ts_and_fmp4_from_another_origin() {
    require_browser_tools();
    let page_port = free_port();
    let page_origin = format!("http://127.0.0.1:{page_port}");
    let mut server = Server::prepare(&format!("access_control_allow_origin = {page_origin}"));
    std::fs::write(server.path("rules.conf"), rules_json(server.ports.rtmp, 1)).unwrap();
    server.spawn();
    server.wait_ready();
    let stream_origin = format!("http://127.0.0.1:{}", server.ports.http);
    serve_player(page_port);

    let _publisher = publish(&rtmp_url(&server, "live/b"));
    wait_live(&server, "live", "b", LIVE)
        .unwrap_or_else(|| panic!("stream not live; log:\n{}", server.log()));
    // hls.js starts three target durations behind the live edge: let it find them.
    wait_playlist(&server, "playlist.m3u8", 3);
    wait_playlist(&server, "playlist_fmp4.m3u8", 3);

    let shots = tempfile::tempdir().unwrap();
    let keep = std::env::var_os("STROM_BROWSER_SCREENSHOT").map(PathBuf::from);
    let mut failures = Vec::new();
    for (name, master) in [("ts", "playlist.m3u8"), ("fmp4", "playlist_fmp4.m3u8")] {
        let screenshot = shots.path().join(format!("{name}.png"));
        let playlist = format!("{stream_origin}/live/b/{master}");
        let result = play_in_browser(&page_origin, &playlist, &screenshot);
        if let Some(keep) = &keep {
            let target = if name == "ts" {
                keep.clone()
            } else {
                keep.with_extension(format!("{name}.png"))
            };
            std::fs::copy(&screenshot, &target).unwrap();
            eprintln!("screenshot of the {name} player: {}", target.display());
        }
        let nonfatal = &result["nonFatalErrors"];
        if nonfatal.as_array().is_some_and(|e| !e.is_empty()) {
            eprintln!("{master}: non-fatal hls.js errors (allowed): {nonfatal}");
        }
        for problem in problems(&result, &stream_origin, &page_origin) {
            failures.push(format!("{master}: {problem}"));
        }
    }
    assert!(
        failures.is_empty(),
        "hls.js in Chromium:\n{}\nstrom log:\n{}",
        failures.join("\n"),
        server.log()
    );
}

/// hls.js sees an SCTE-35 break: the `#EXT-X-DATERANGE` strom writes for
/// `advertizer/scte35_out` shows up in hls.js's level details with its `SCTE35-OUT`
/// and `PLANNED-DURATION`, while playback runs without a fatal error.
#[test]
fn hls_js_exposes_scte35_dateranges_while_playing() {
    require_browser_tools();
    let page_port = free_port();
    let page_origin = format!("http://127.0.0.1:{page_port}");
    let mut server = Server::prepare(&format!("access_control_allow_origin = {page_origin}"));
    std::fs::write(
        server.path("rules.conf"),
        format!(
            r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
 "Delivery": {{"outputs": ["HLS"], "segment_duration_secs": 1}},
 "AdInsertion": [{{"app": "live", "time_sync": "scte35"}}]}}"#,
            server.ports.rtmp
        ),
    )
    .unwrap();
    server.spawn();
    server.wait_ready();
    let stream_origin = format!("http://127.0.0.1:{}", server.ports.http);
    serve_player(page_port);
    let _publisher = publish(&rtmp_url(&server, "live/b"));
    wait_live(&server, "live", "b", LIVE)
        .unwrap_or_else(|| panic!("stream not live; log:\n{}", server.log()));
    wait_playlist(&server, "playlist.m3u8", 3);
    let (status, body) = server.post("/manage/advertizer/scte35_out/live/b?duration=60", "");
    assert_eq!(status, 200, "{body}");
    // The break is in the playlist before the browser loads it.
    wait_for(LIVE, "a DATERANGE in the playlist", || {
        let (_, master) = fetch(&format!("{stream_origin}/live/b/playlist.m3u8"));
        let media = master
            .lines()
            .find(|l| !l.starts_with('#') && !l.is_empty())?;
        let (_, media) = fetch(&format!("{stream_origin}/live/b/{media}"));
        media.contains("SCTE35-OUT=").then_some(())
    })
    .unwrap_or_else(|| panic!("no DATERANGE; log:\n{}", server.log()));
    let shots = tempfile::tempdir().unwrap();
    let result = play_in_browser(
        &page_origin,
        &format!("{stream_origin}/live/b/playlist.m3u8"),
        &shots.path().join("ad.png"),
    );
    let problems = problems(&result, &stream_origin, &page_origin);
    assert!(problems.is_empty(), "{problems:?}\n{result}");
    let ranges = result["dateRanges"].as_object().unwrap();
    let break_range = ranges
        .values()
        .find(|attr| attr.get("SCTE35-OUT").is_some())
        .unwrap_or_else(|| panic!("hls.js saw no SCTE35-OUT DATERANGE: {result}"));
    assert_eq!(break_range["PLANNED-DURATION"], "60.000", "{break_range}");
    assert!(
        break_range["SCTE35-OUT"]
            .as_str()
            .unwrap()
            .starts_with("0xFC"),
        "{break_range}"
    );
}
