//! A real browser: Debian's headless Chromium, driven by playwright-core
//! (`tests/browser/play.mjs`), plays strom's HLS with hls.js from a page served on another
//! origin (CORS): hls.js exposes the `#EXT-X-DATERANGE` of an SCTE-35 break, plays both
//! renditions of an ABR group, switching between them, and in `lowLatencyMode` plays
//! LL-HLS parts at the live edge (its `hls.latency` is measured; the figure itself is a
//! benchmark's, a test on a busy machine must not fail on it). Plain playback of every
//! output by hls.js, dash.js and Shaka Player is the player matrix's
//! (`tests/tests/player_matrix.rs`).
//!
//! Needs the Debian packages `chromium` and `nodejs` (with npm), and
//! `npm ci --prefix tests/browser` (scripts/test.sh does all three).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::browser::{DASH_JS, playback_problems, require_browser, run_script, serve_player};
use common::media::{publish, rtmp_url, wait_live};
use common::{Server, curl_text, free_port, require_tool, wait_for};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(40);

/// Fails the test, naming what to install, unless Chromium, node and the npm packages
/// are there.
fn require_browser_tools() {
    require_browser(&[
        "hls.js/dist/hls.min.js",
        DASH_JS.trim_start_matches("node_modules/"),
    ]);
}

/// Waits until `master` answers and its first media playlist lists `min` segments.
fn wait_playlist(server: &Server, master: &str, min: usize) {
    require_tool("curl", "curl");
    let base = format!("http://127.0.0.1:{}/live/b", server.ports.http);
    wait_for(LIVE, "hls playlist", || {
        let (status, body) = curl_text(&format!("{base}/{master}"));
        if status != 200 {
            return None;
        }
        let media = body
            .lines()
            .find(|l| !l.starts_with('#') && !l.is_empty())?;
        let (status, media) = curl_text(&format!("{base}/{media}"));
        (status == 200 && media.matches("#EXTINF").count() >= min).then_some(())
    })
    .unwrap_or_else(|| panic!("no {master} with {min} segments; log:\n{}", server.log()));
}

/// Plays `playlist` in Chromium from the player page; the JSON that play.mjs printed.
fn play_in_browser(page: &str, playlist: &str, screenshot: &Path) -> serde_json::Value {
    play_in_browser_with(page, playlist, "", screenshot)
}

/// [`play_in_browser`] with more page parameters (`&switch=<ms>`).
fn play_in_browser_with(
    page: &str,
    playlist: &str,
    parameters: &str,
    screenshot: &Path,
) -> serde_json::Value {
    play_page(
        &format!("{page}/index.html?src={playlist}{parameters}"),
        screenshot,
    )
}

/// Opens the player page `url` in Chromium; the JSON that play.mjs printed.
fn play_page(url: &str, screenshot: &Path) -> serde_json::Value {
    run_script("play.mjs", &[url, &screenshot.to_string_lossy()], 90)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// What is wrong with one playback, if anything.
fn problems(result: &serde_json::Value, stream_origin: &str, page_origin: &str) -> Vec<String> {
    let mut problems = playback_problems(result, 5.0, stream_origin, page_origin);
    if result["levels"].as_u64().unwrap_or(0) < 1 {
        problems.push("hls.js parsed no level".to_owned());
    }
    problems
}

/// A strom whose delivery port lets the player page's origin in (CORS), on the rules
/// `rules` makes from the RTMP port, and the player page served from another port:
/// the server, the page's origin and the stream origin.
fn start_with_player(rules: impl FnOnce(u16) -> String) -> (Server, String, String) {
    require_browser_tools();
    let page_port = free_port();
    let page_origin = format!("http://127.0.0.1:{page_port}");
    let mut server = Server::prepare(&format!("access_control_allow_origin = {page_origin}"));
    std::fs::write(server.path("rules.conf"), rules(server.ports.rtmp)).unwrap();
    server.spawn();
    server.wait_ready();
    let stream_origin = format!("http://127.0.0.1:{}", server.ports.http);
    serve_player(page_port);
    (server, page_origin, stream_origin)
}

/// hls.js sees an SCTE-35 break: the `#EXT-X-DATERANGE` strom writes for
/// `advertizer/scte35_out` shows up in hls.js's level details with its `SCTE35-OUT`
/// and `PLANNED-DURATION`, while playback runs without a fatal error.
#[test]
fn hls_js_exposes_scte35_dateranges_while_playing() {
    let (server, page_origin, stream_origin) = start_with_player(|rtmp| {
        format!(
            r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
 "Delivery": {{"outputs": ["HLS"], "segment_duration_secs": 1}},
 "AdInsertion": [{{"app": "live", "time_sync": "scte35"}}]}}"#,
            rtmp
        )
    });
    let _publisher = publish(&rtmp_url(&server, "live/b"));
    wait_live(&server, "live", "b", LIVE)
        .unwrap_or_else(|| panic!("stream not live; log:\n{}", server.log()));
    wait_playlist(&server, "playlist.m3u8", 3);
    let (status, body) = server.post("/manage/advertizer/scte35_out/live/b?duration=60", "");
    assert_eq!(status, 200, "{body}");
    // The break is in the playlist before the browser loads it.
    wait_for(LIVE, "a DATERANGE in the playlist", || {
        let (_, master) = curl_text(&format!("{stream_origin}/live/b/playlist.m3u8"));
        let media = master
            .lines()
            .find(|l| !l.starts_with('#') && !l.is_empty())?;
        let (_, media) = curl_text(&format!("{stream_origin}/live/b/{media}"));
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

/// ffmpeg publishing a `size` H.264 + AAC test source at `bitrate` to `url`.
fn publish_rendition(url: &str, size: &str, bitrate: &str) -> common::media::Proc {
    require_tool("ffmpeg", "ffmpeg");
    let child = Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-re"])
        .args(["-f", "lavfi", "-i", &format!("testsrc=size={size}:rate=25")])
        .args(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100"])
        .args([
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-tune",
            "zerolatency",
        ])
        .args(["-g", "25", "-b:v", bitrate, "-pix_fmt", "yuv420p"])
        .args(["-c:a", "aac", "-b:a", "64k", "-t", "120", "-f", "flv", url])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    common::media::Proc(child)
}

/// An ABR group of two renditions (320x240 and 160x120) behind `live/abr`: hls.js in
/// Chromium gets a master with two levels, and when the page forces the other level
/// every 2.5 s (`hls.nextLevel`), loads fragments of both and plays both (the video
/// size changes), without a fatal error.
#[test]
fn hls_js_switches_between_abr_renditions() {
    let (server, page_origin, stream_origin) = start_with_player(|rtmp| {
        format!(
            r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
 "Delivery": {{"outputs": ["HLS"], "segment_duration_secs": 1,
   "abr": [{{"app": "live", "stream": "abr",
     "streams": [{{"app": "live", "stream": "hi"}}, {{"app": "live", "stream": "lo"}}]}}]}}}}"#,
            rtmp
        )
    });
    let _hi = publish_rendition(&rtmp_url(&server, "live/hi"), "320x240", "600k");
    let _lo = publish_rendition(&rtmp_url(&server, "live/lo"), "160x120", "150k");
    let master_url = format!("{stream_origin}/live/abr/playlist.m3u8");
    let master = wait_for(LIVE, "an ABR master with both renditions", || {
        let (status, master) = curl_text(&master_url);
        let uris: Vec<&str> = master
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .collect();
        if status != 200 || uris.len() != 2 {
            return None;
        }
        let ready = uris.iter().all(|uri| {
            let url = format!("{stream_origin}/live/abr/{uri}");
            let (status, media) = curl_text(&url);
            status == 200 && media.matches("#EXTINF").count() >= 3
        });
        ready.then_some(master)
    })
    .unwrap_or_else(|| {
        panic!(
            "no ABR master with two ready renditions; log:\n{}",
            server.log()
        )
    });
    assert!(master.contains("RESOLUTION=320x240"), "{master}");
    assert!(master.contains("RESOLUTION=160x120"), "{master}");
    assert!(master.contains("AVERAGE-BANDWIDTH="), "{master}");
    let shots = tempfile::tempdir().unwrap();
    let result = play_in_browser_with(
        &page_origin,
        &master_url,
        "&switch=2500",
        &shots.path().join("abr.png"),
    );
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
    let advanced = result["end"].as_f64().unwrap_or(0.0) - result["start"].as_f64().unwrap_or(0.0);
    if advanced < 5.0 {
        problems.push(format!("currentTime advanced {advanced:.2} s"));
    }
    if result["levels"] != 2 {
        problems.push(format!("{} levels, not 2", result["levels"]));
    }
    for level in ["0", "1"] {
        if result["fragLevels"][level].as_u64().unwrap_or(0) == 0 {
            problems.push(format!("no fragment of level {level} loaded"));
        }
    }
    let switched: Vec<u64> = result["levelsSwitched"]
        .as_array()
        .map(|l| l.iter().filter_map(|v| v.as_u64()).collect())
        .unwrap_or_default();
    if !(switched.contains(&0) && switched.contains(&1)) {
        problems.push(format!("levels played: {switched:?}"));
    }
    let widths = &result["widthsSeen"];
    let seen = |w: u64| widths.as_array().is_some_and(|a| a.iter().any(|v| v == w));
    if !(seen(320) && seen(160)) {
        problems.push(format!("video widths played: {widths}"));
    }
    assert!(
        problems.is_empty(),
        "hls.js ABR in Chromium: {problems:?}\n{result}\nstrom log:\n{}",
        server.log()
    );
}

/// hls.js with `lowLatencyMode` plays an LL-HLS stream (`LLHLS` among its `Delivery`
/// outputs, 2 s segments, 500 ms parts): it loads parts (hls.js does so only while it
/// plays at the live edge) and measures a live latency (`hls.latency`: live edge minus
/// playback position). The latency figure is measured in `bench/`, not asserted here: a
/// busy CI machine once took 4.25 s where an idle one takes about 2 s.
#[test]
fn hls_js_low_latency_mode_plays_ll_hls_parts_near_the_live_edge() {
    let (server, page_origin, stream_origin) = start_with_player(|rtmp| {
        format!(
            r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
 "Delivery": {{"outputs": ["HLS", "LLHLS"], "segment_duration_secs": 2}}}}"#,
            rtmp
        )
    });
    let _publisher = publish(&rtmp_url(&server, "live/b"));
    wait_live(&server, "live", "b", LIVE)
        .unwrap_or_else(|| panic!("stream not live; log:\n{}", server.log()));
    wait_playlist(&server, "playlist_fmp4.m3u8", 3);
    let shots = tempfile::tempdir().unwrap();
    let result = play_in_browser_with(
        &page_origin,
        &format!("{stream_origin}/live/b/playlist_fmp4.m3u8"),
        "&lowLatency=1",
        &shots.path().join("llhls.png"),
    );
    let mut problems = problems(&result, &stream_origin, &page_origin);
    if result["partsLoaded"].as_u64().unwrap_or(0) == 0 {
        problems.push("hls.js loaded no part".to_owned());
    }
    let mut latencies: Vec<f64> = result["latencies"]
        .as_array()
        .map(|a| a.iter().filter_map(serde_json::Value::as_f64).collect())
        .unwrap_or_default();
    latencies.sort_by(f64::total_cmp);
    let median = latencies.get(latencies.len() / 2).copied();
    let last = result["latency"].as_f64();
    eprintln!("hls.js LL-HLS latency: last {last:?} s, median {median:?} s of {latencies:?}");
    match (last, median) {
        (Some(last), Some(_)) if last > 0.0 => {}
        _ => problems.push(format!(
            "hls.latency not measured: last {last:?}, median {median:?}"
        )),
    }
    assert!(
        problems.is_empty(),
        "hls.js LL-HLS in Chromium: {problems:?}\n{result}\nstrom log:\n{}",
        server.log()
    );
}

/// dash.js joining a stream whose manifest lists its first 2 s segment plays on at once
/// (issue 32): `timeShiftBufferDepth` was the listed 6 s, no more than the presentation
/// delay, and dash.js stalled 6-12 s on an empty DVR window (`INVALID_DVR_WINDOW`).
#[test]
fn dash_js_joins_a_fresh_stream_and_plays_on() {
    let (server, page_origin, stream_origin) = start_with_player(|rtmp| {
        format!(
            r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
 "Delivery": {{"outputs": ["HLS", "DASH"], "segment_duration_secs": 2}}}}"#,
            rtmp
        )
    });
    let _publisher = publish(&rtmp_url(&server, "live/f"));
    let manifest = format!("{stream_origin}/live/f/manifest.mpd");
    wait_for(LIVE, "a manifest with a segment", || {
        let (status, body) = curl_text(&manifest);
        (status == 200 && body.contains("<S ")).then_some(())
    })
    .unwrap_or_else(|| panic!("no DASH manifest; log:\n{}", server.log()));
    let shots = tempfile::tempdir().unwrap();
    let result = play_page(
        &format!("{page_origin}/dash.html?src={manifest}"),
        &shots.path().join("dash.png"),
    );
    let problems = problems(&result, &stream_origin, &page_origin);
    assert!(
        problems.is_empty(),
        "dash.js joining a fresh stream: {problems:?}\n{result}\nstrom log:\n{}",
        server.log()
    );
}
