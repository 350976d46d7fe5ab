//! Headless Chromium for the end-to-end tests: the playwright-core scripts of
//! `tests/browser/` (`play.mjs`, `console.mjs`), what they need, running one, and the
//! static server of the player pages (on their own origin).

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use super::require_tool;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// dash.js's browser build, under `tests/browser`.
pub const DASH_JS: &str = "node_modules/dashjs/dist/modern/umd/dash.all.min.js";
/// Shaka Player's browser build, under `tests/browser`.
pub const SHAKA_JS: &str = "node_modules/shaka-player/dist/shaka-player.compiled.js";
/// mux.js (Shaka's MPEG-TS transmuxer), under `tests/browser`.
pub const MUX_JS: &str = "node_modules/mux.js/dist/mux.min.js";

/// `tests/browser`: the scripts, player pages and their npm packages.
pub fn browser_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("browser")
}

/// Fails the test, naming what to install, unless Chromium, node, playwright-core and
/// the other files `needed` under `tests/browser/node_modules` are there.
pub fn require_browser(needed: &[&str]) {
    require_tool("chromium", "chromium");
    require_tool("node", "nodejs");
    let modules = browser_dir().join("node_modules");
    for needed in needed.iter().chain(&["playwright-core/package.json"]) {
        assert!(
            modules.join(needed).exists(),
            "{} is missing: run `npm ci --prefix tests/browser` (scripts/test.sh does)",
            modules.join(needed).display()
        );
    }
}

/// Runs `node tests/browser/<script> <args>` for at most `limit_secs`; the JSON line it
/// printed last, or what went wrong with its output.
pub fn run_script(
    script: &str,
    args: &[&str],
    limit_secs: u32,
) -> Result<serde_json::Value, String> {
    let started = Instant::now();
    let output = Command::new("timeout")
        .arg(limit_secs.to_string())
        .arg("node")
        .arg(browser_dir().join(script))
        .args(args)
        .output()
        .map_err(|e| format!("running node: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return Err(format!(
            "{script} {args:?} failed ({}):\n{stdout}\n{stderr}",
            output.status
        ));
    }
    let line = stdout.lines().last().unwrap_or_default();
    let result = serde_json::from_str(line)
        .map_err(|e| format!("{script} printed no JSON ({e}):\n{stdout}\n{stderr}"))?;
    eprintln!("{script} {args:?} ({:?}): {result}", started.elapsed());
    Ok(result)
}

/// The WebRTC test page (`webrtc.html`, driven by `webrtc.mjs`) served on its own
/// origin; its URL.
pub fn webrtc_page() -> String {
    let port = super::free_port();
    serve_player(port);
    format!("http://127.0.0.1:{port}/webrtc.html")
}

/// A static HTTP server on its own port (so its own origin) serving the player page and
/// hls.js; a thread per connection, because Chromium opens connections it may never use.
pub fn serve_player(port: u16) {
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
        "/dash.html" => Some((browser_dir().join("dash.html"), "text/html")),
        "/dash.all.min.js" => Some((browser_dir().join(DASH_JS), "text/javascript")),
        "/shaka.html" => Some((browser_dir().join("shaka.html"), "text/html")),
        "/shaka-player.compiled.js" => Some((browser_dir().join(SHAKA_JS), "text/javascript")),
        "/mux.min.js" => Some((browser_dir().join(MUX_JS), "text/javascript")),
        "/webrtc.html" => Some((browser_dir().join("webrtc.html"), "text/html")),
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

/// What is wrong with one playback that play.mjs reported, if anything: it never started,
/// a fatal player error, `currentTime` advanced less than `min_played_secs`, the page and
/// the stream not on the origins set up (CORS), or a picture that is not 320x240.
pub fn playback_problems(
    result: &serde_json::Value,
    min_played_secs: f64,
    stream_origin: &str,
    page_origin: &str,
) -> Vec<String> {
    let mut problems = Vec::new();
    if result["started"] != true {
        problems.push("playback never started".to_owned());
    }
    if result["fatalErrors"]
        .as_array()
        .is_some_and(|e| !e.is_empty())
    {
        problems.push(format!("fatal errors: {}", result["fatalErrors"]));
    }
    let start = result["start"].as_f64().unwrap_or(0.0);
    let end = result["end"].as_f64().unwrap_or(0.0);
    if end - start < min_played_secs {
        problems.push(format!(
            "currentTime advanced {:.2} s ({start:.2} -> {end:.2}) in {:.1} s of wall time; samples {}",
            end - start,
            result["wallSeconds"].as_f64().unwrap_or(0.0),
            result["samples"]
        ));
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
