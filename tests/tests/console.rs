//! The web console (`/console/` on the management port) end to end: a real strom with a
//! management token, an ffmpeg RTMP publisher, and Debian's headless Chromium driven by
//! `tests/browser/console.mjs` as a user would drive it. The console says it needs the
//! token, says a wrong one is refused, accepts the right one, lists the seven workers,
//! reloads rules.conf with its button, lists the live stream (protocol, codecs,
//! resolution, publisher), and on the stream's page plays it with hls.js, then dash.js, then over WebRTC (WHEP)
//! (the players served by strom itself), with `currentTime` advancing and frames decoded, and
//! shows its publish and play URLs; its Disconnect button ends a session, and the DVR
//! page's link downloads the recording as an MP4. Every API call the page made once it
//! had the token was signed, and the API still refuses unsigned calls: the console's
//! files are the only thing served without it. A second test checks that against a
//! server without a token the console works at once (its banner says so, it lists the
//! workers and its reload button works).
//!
//! Needs the Debian packages `chromium`, `nodejs` and `ffmpeg`, and
//! `npm ci --prefix tests/browser` (playwright-core; scripts/test.sh does all of it).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::browser::{require_browser, run_script};
use common::media::{publish, rtmp_url, wait_live};
use common::{Server, curl_raw, delivery_rules, wait_for};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const TOKEN: &str = "console-token";
const LIVE: Duration = Duration::from_secs(40);

/// Runs `console.mjs` against `server`'s console; the JSON it printed.
fn drive_console(server: &Server, token: &str, stream: &str, screenshot: &Path) -> Value {
    require_browser(&[]);
    let console = format!("http://127.0.0.1:{}/console/", server.ports.management);
    let screenshot = screenshot.to_string_lossy();
    run_script("console.mjs", &[&console, token, stream, &screenshot], 150)
        .unwrap_or_else(|e| panic!("{e}\nstrom log:\n{}", server.log()))
}

/// curl's status code and content type for `url`, without following redirects, and the
/// `Location` it was sent to, if any.
fn head(url: &str) -> (u16, String, String) {
    let output = Command::new("curl")
        .args(["-s", "-o", "/dev/null", "--max-time", "10"])
        .args(["-w", "%{http_code}|%{content_type}|%{redirect_url}", url])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let mut parts = text.splitn(3, '|');
    let code = parts.next().unwrap_or("0").parse().unwrap_or(0);
    let content_type = parts.next().unwrap_or_default().to_owned();
    (
        code,
        content_type,
        parts.next().unwrap_or_default().to_owned(),
    )
}

/// What is wrong with one playback the console's player did.
fn playback_problems(name: &str, played: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    if played.get("failed").is_some() {
        return vec![format!("{name}: never played: {played}")];
    }
    if played["fatalErrors"] != serde_json::json!([]) {
        problems.push(format!("{name}: errors {}", played["fatalErrors"]));
    }
    // 8 s of wall time: a stalling player would gain next to nothing.
    let (start, end) = (&played["start"], &played["end"]);
    if end.as_f64().unwrap_or(0.0) - start.as_f64().unwrap_or(0.0) < 3.0 {
        problems.push(format!("{name}: currentTime only went {start} -> {end}"));
    }
    if played["frames"].as_u64().unwrap_or(0) <= played["framesAtStart"].as_u64().unwrap_or(0) {
        problems.push(format!("{name}: no frame decoded: {played}"));
    }
    if played["videoWidth"] != 320 || played["videoHeight"] != 240 {
        problems.push(format!("{name}: video is not 320x240: {played}"));
    }
    problems
}

fn texts(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|item| {
                    item.as_str()
                        .map_or_else(|| item.to_string(), str::to_owned)
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn console_lists_a_live_stream_and_plays_it_with_hls_and_dash() {
    let mut server = Server::prepare(&format!("management_token = {TOKEN}"));
    let mut rules = delivery_rules(server.ports.rtmp, &["HLS", "DASH", "DVR"], 1);
    rules["Dvr"] = serde_json::json!({"segment_duration_secs": 2, "min_free_space_mb": 0});
    rules["WebRtcSettings"] =
        serde_json::json!({"interfaces": [{"ip": "127.0.0.1", "port": common::free_port()}]});
    std::fs::write(server.path("rules.conf"), rules.to_string()).unwrap();
    server.spawn();
    server.wait_ready();
    let management = format!("http://127.0.0.1:{}", server.ports.management);

    // The console's files load without the token; `/` leads to them.
    let (code, content_type, _) = head(&format!("{management}/console/"));
    assert_eq!(
        (code, content_type.as_str()),
        (200, "text/html; charset=utf-8")
    );
    let (code, content_type, _) = head(&format!("{management}/console/hls-1.7.4.min.js"));
    assert_eq!(
        (code, content_type.as_str()),
        (200, "text/javascript; charset=utf-8")
    );
    let (code, _, location) = head(&format!("{management}/"));
    assert_eq!(code, 303);
    assert_eq!(location, format!("{management}/console/"));
    // The API does not: unsigned or wrongly signed calls are refused as before, the
    // console's own endpoint included.
    for path in [
        "/manage/server_status",
        "/manage/live_streams_status",
        "/manage/stream_urls/live/b",
        "/manage/server_status?salt=1&hash=AAAAAAAAAAAAAAAAAAAAAA%3D%3D",
    ] {
        let (code, _, _) = head(&format!("{management}{path}"));
        assert_eq!(code, 403, "{path} without a valid signature");
    }

    let _publisher = publish(&rtmp_url(&server, "live/b"));
    wait_live(&server, "live", "b", LIVE)
        .unwrap_or_else(|| panic!("stream not live; log:\n{}", server.log()));
    // The players start at once: let a few segments exist first.
    let manifest = format!("http://127.0.0.1:{}/live/b/manifest.mpd", server.ports.http);
    wait_for(LIVE, "a manifest with three segments", || {
        let output = Command::new("curl")
            .args(["-s", "--max-time", "10", &manifest])
            .output()
            .ok()?;
        (String::from_utf8_lossy(&output.stdout)
            .matches("<S ")
            .count()
            >= 6)
            .then_some(())
    })
    .unwrap_or_else(|| panic!("no DASH manifest; log:\n{}", server.log()));

    let shots = tempfile::tempdir().unwrap();
    let screenshot = std::env::var_os("STROM_CONSOLE_SCREENSHOT")
        .map_or_else(|| shots.path().join("console.png"), PathBuf::from);
    let result = drive_console(&server, TOKEN, "live/b", &screenshot);

    let mut problems = Vec::new();
    let banner = |key: &str| result[key].as_str().unwrap_or_default().to_owned();
    if !banner("withoutToken").contains("needs its management token") {
        problems.push(format!("without a token: {}", result["withoutToken"]));
    }
    if !banner("wrongToken").contains("refused the token") {
        problems.push(format!("wrong token: {}", result["wrongToken"]));
    }
    if !banner("rightToken").contains("accepted") {
        problems.push(format!("right token: {}", result["rightToken"]));
    }
    let requests = texts(&result["apiRequests"]);
    if requests.is_empty() || requests.iter().any(|q| !q.contains("hash=")) {
        problems.push(format!(
            "API calls with the token not all signed: {requests:?}"
        ));
    }
    let workers = texts(&result["workers"]);
    if workers.len() != 7 || workers.iter().any(|w| !w.contains("ready")) {
        problems.push(format!("workers listed: {workers:?}"));
    }
    if result["reload"] != "Reload rules.conf: done" {
        problems.push(format!("reload button: {}", result["reload"]));
    }
    let row = texts(&result["streamRow"]).join(" | ");
    for expected in ["live/b", "RTMP", "avc1", "mp4a", "320x240", "127.0.0.1"] {
        if !row.contains(expected) {
            problems.push(format!("stream row has no {expected}: {row}"));
        }
    }
    problems.extend(playback_problems("HLS", &result["hls"]));
    problems.extend(playback_problems("DASH", &result["dash"]));
    problems.extend(playback_problems("WHEP", &result["whep"]));
    if result["hls"]["version"] != "1.7.4" || result["dash"]["version"] != "5.2.1" {
        problems.push("the players are not the embedded hls.js 1.7.4 and dash.js 5.2.1".into());
    }
    let urls = |kind: &str| -> Vec<String> {
        result["urls"][kind]
            .as_array()
            .map(|list| list.iter().map(|pair| texts(pair).join(" ")).collect())
            .unwrap_or_default()
    };
    let (rtmp, http) = (server.ports.rtmp, server.ports.http);
    let publish_urls = urls("publish");
    if !publish_urls.contains(&format!("RTMP rtmp://127.0.0.1:{rtmp}/live/b")) {
        problems.push(format!("publish URLs: {publish_urls:?}"));
    }
    let play_urls = urls("play");
    for expected in [
        format!("HLS http://127.0.0.1:{http}/live/b/playlist.m3u8"),
        format!("DASH http://127.0.0.1:{http}/live/b/manifest.mpd"),
        format!("WHEP http://127.0.0.1:{http}/live/b/whep.stream"),
        format!("RTMP rtmp://127.0.0.1:{rtmp}/live/b"),
    ] {
        if !play_urls.contains(&expected) {
            problems.push(format!("no {expected} among the play URLs {play_urls:?}"));
        }
    }
    if !result["details"]
        .as_str()
        .is_some_and(|d| d.contains("live"))
    {
        problems.push(format!("stream details: {}", result["details"]));
    }
    let sessions = texts(&result["sessions"]).join("\n");
    // The test's own curl polls are sessions too: look for the browser's.
    if !sessions.contains("HeadlessChrome") {
        problems.push(format!("the player's session is not listed: {sessions}"));
    }
    // The session the console disconnected is gone.
    let notice = result["disconnect"].as_str().unwrap_or_default();
    match notice
        .strip_prefix("Disconnect session ")
        .and_then(|rest| rest.strip_suffix(": done"))
        .and_then(|id| id.parse::<u64>().ok())
    {
        Some(id) => {
            let (_, sessions) = server.get("/manage/sessions");
            let listed = sessions.as_array().unwrap().iter().any(|s| s["id"] == id);
            if listed {
                problems.push(format!("session {id} still listed after Disconnect"));
            }
        }
        None => problems.push(format!("disconnect: {}", result["disconnect"])),
    }
    // The DVR page's export link downloads an MP4 of the archive.
    let export = &result["export"];
    if export["box"] != "ftyp" || export["bytes"].as_u64().unwrap_or(0) < 10_000 {
        problems.push(format!("MP4 export: {export}"));
    }
    // The link lands in the download history: it carries a short-lived signature of that
    // one export (`expires`, `sig`), not a salt and hash valid for every endpoint forever.
    let url = export["url"].as_str().unwrap_or_default();
    let lasting = url.contains("salt=") || url.contains("hash=");
    if lasting || !url.contains("expires=") || !url.contains("sig=") {
        problems.push(format!(
            "the export link is not signed for itself alone: {url}"
        ));
    }
    if let Some((_, query)) = url.split_once('?') {
        // Its signature opens neither another export nor another endpoint.
        let other = url.replacen("/export_mp4/", "/export_mp4/x", 1);
        let status = format!(
            "http://127.0.0.1:{}/manage/server_status?{query}",
            server.ports.management
        );
        for reused in [other, status] {
            let (code, _) = curl_raw(&[&reused]);
            if code != 403 {
                problems.push(format!(
                    "the export link's signature opened {reused}: {code}"
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "the console in Chromium: {problems:#?}\n{result}\nstrom log:\n{}",
        server.log()
    );
}

#[test]
fn console_works_at_once_against_a_server_without_a_token() {
    let server = Server::start("");
    server.wait_ready();
    let shots = tempfile::tempdir().unwrap();
    let result = drive_console(&server, "-", "-", &shots.path().join("open.png"));
    assert!(
        result["withoutToken"]
            .as_str()
            .is_some_and(|b| b.contains("has no management token")),
        "{result}"
    );
    let workers = texts(&result["workers"]);
    assert_eq!(workers.len(), 7, "{result}");
    assert_eq!(result["reload"], "Reload rules.conf: done", "{result}");
}
