//! Server playlists end to end: a playlist file schedules MP4 files (made here by
//! ffmpeg) and a live RTMP stream (published by ffmpeg) into one output stream,
//! `tv/channel`, which ffmpeg records over RTMP and `server_playlist_status` reports
//! phase by phase; a missing live source is replaced by the default stream and takes
//! over again when published; edits of the playlist file apply while the output goes
//! on, a broken file is rejected; bad input (a missing file, overlapping blocks) is a
//! state in the API; scheduled SCTE-35 markers go into the output; hls.js in Chromium
//! plays across switches without a stall; HLS marks discontinuities exactly where the
//! codec parameters change.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::browser::{require_browser, run_script, serve_player};
use common::media::{Proc, ffprobe, play, rtmp_url, wait_live};
use common::{Server, free_port, require_tool, wait_for};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// 25 fps: one frame.
const FRAME_SECS: f64 = 0.040;

/// A server whose rules.conf follows `playlist.json` every 500 ms.
fn start() -> Server {
    start_with_segments(2)
}

/// [`start`] with HLS segments of `segment_secs`.
fn start_with_segments(segment_secs: u32) -> Server {
    let mut server = prepare_with_segments(segment_secs);
    server.spawn();
    server.wait_ready();
    server
}

/// [`start_with_segments`]'s configuration, not started yet.
fn prepare_with_segments(segment_secs: u32) -> Server {
    let server = Server::prepare("");
    let rules = format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}], "duration": {segment_secs}, "protocols": ["HLS"]}},
            "ServerPlaylists": {{"Path": "playlist.json", "SyncInterval": 500}}}}"#,
        server.ports.rtmp
    );
    std::fs::write(server.path("rules.conf"), rules).unwrap();
    server
}

/// An MP4 file of `secs` seconds like the live publisher's: 320x240 at 25 fps, H.264
/// with a 1 s GOP, AAC at 44.1 kHz.
fn make_clip(path: &Path, secs: u32, pattern: &str) {
    make_sized_clip(path, secs, pattern, "320x240");
}

/// [`make_clip`] at another picture size (other codec parameters).
fn make_sized_clip(path: &Path, secs: u32, pattern: &str, size: &str) {
    require_tool("ffmpeg", "ffmpeg");
    let status = Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-y"])
        .args([
            "-f",
            "lavfi",
            "-i",
            &format!("{pattern}=size={size}:rate=25"),
        ])
        .args(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100"])
        .args(["-t", &secs.to_string()])
        .args([
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-g",
            "25",
            "-pix_fmt",
            "yuv420p",
        ])
        .args(["-c:a", "aac", "-b:a", "64k"])
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success(), "ffmpeg could not make {}", path.display());
}

/// ffmpeg publishing `clip` over RTMP at real time, as it is (so with the codec
/// parameters of the files made by [`make_clip`]).
fn publish_clip(clip: &Path, url: &str) -> Proc {
    Proc(
        Command::new("ffmpeg")
            .args(["-hide_banner", "-loglevel", "error", "-re", "-i"])
            .arg(clip)
            .args(["-c", "copy", "-f", "flv", url])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

/// Unix seconds as RFC 3339 UTC.
fn rfc3339(unix: i64) -> String {
    let (days, rest) = (unix.div_euclid(86_400), unix.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// The status entry of `tv/channel`.
fn channel_status(server: &Server, stream: &str) -> Option<Value> {
    let (status, body) = server.try_get("/manage/server_playlist_status")?;
    assert_eq!(status, 200, "{body}");
    body.as_array()?
        .iter()
        .find(|e| e["stream"] == stream)
        .cloned()
}

/// Waits until `tv/channel`'s status satisfies `check`; fails with the last status.
fn wait_status(
    server: &Server,
    limit: Duration,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    let mut last = Value::Null;
    wait_for(limit, what, || {
        last = channel_status(server, "tv/channel")?;
        check(&last).then(|| last.clone())
    })
    .unwrap_or_else(|| panic!("{what}: last status {last}; log:\n{}", server.log()))
}

fn write_playlist(server: &Server, playlist: &Value) {
    // Written whole under another name and renamed: the reader never sees half a file.
    let temp = server.path("playlist.json.tmp");
    std::fs::write(&temp, playlist.to_string()).unwrap();
    std::fs::rename(temp, server.path("playlist.json")).unwrap();
}

/// `pts_time,dts_time` of every packet of `kind` (`v` or `a`) in `file`.
fn packet_times(file: &Path, kind: &str) -> Vec<f64> {
    ffprobe(&[
        "-select_streams",
        kind,
        "-show_entries",
        "packet=dts_time",
        "-of",
        "csv=p=0",
        file.to_str().unwrap(),
    ])
    .lines()
    .filter_map(|l| l.trim().trim_end_matches(',').parse().ok())
    .collect()
}

/// [MP4 10 s, live RTMP 10 s, MP4 10 s]: ffmpeg decodes the recorded output without an
/// error, video timestamps go up by one frame all along (no gap, no overlap at the
/// switches), audio timestamps only go up, the status names each phase's block and
/// source, and HLS gets no discontinuity (the sources share their codec parameters).
#[test]
fn a_schedule_of_file_live_file_plays_as_one_continuous_stream() {
    let server = start();
    let clip = server.path("clip.mp4");
    make_clip(&clip, 10, "testsrc");
    // The live source: the same encoding, published over RTMP at real time.
    let source = server.path("source.mp4");
    make_clip(&source, 40, "testsrc2");
    let _live = publish_clip(&source, &rtmp_url(&server, "live/src"));
    wait_live(&server, "live", "src", Duration::from_secs(30))
        .unwrap_or_else(|| panic!("live/src not live; log:\n{}", server.log()));

    let t0 = unix_now() + 5;
    let clip_path = clip.display().to_string();
    let vod = |id: &str, at: i64| {
        serde_json::json!({"Id": id, "Start": rfc3339(at),
            "Streams": [{"Type": "vod", "Source": clip_path, "Duration": 10000}]})
    };
    let playlist = serde_json::json!({"Tasks": [{
    "Stream": "tv/channel",
    "DefaultStream": {"Type": "vod", "Source": "clip.mp4"},
    "Blocks": [
        vod("first", t0),
        {"Id": "live", "Start": rfc3339(t0 + 10),
         "Streams": [{"Type": "live", "Source": "live/src", "Duration": 10000}]},
        vod("last", t0 + 20),
    ]}]});
    write_playlist(&server, &playlist);
    wait_live(&server, "tv", "channel", Duration::from_secs(30))
        .unwrap_or_else(|| panic!("tv/channel not live; log:\n{}", server.log()));

    // Record the output over RTMP from before the first block to after the last.
    let recording = server.path("recording.ts");
    let recorder_secs = (t0 + 32 - unix_now()).max(30);
    let mut recorder = Proc(
        Command::new("ffmpeg")
            .args(["-hide_banner", "-loglevel", "error", "-y", "-i"])
            .arg(rtmp_url(&server, "tv/channel"))
            .args([
                "-t",
                &recorder_secs.to_string(),
                "-map",
                "0",
                "-c",
                "copy",
                "-f",
                "mpegts",
            ])
            .arg(&recording)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );

    let phase = Duration::from_secs(15);
    let first = wait_status(&server, phase, "first block", |s| s["block_id"] == "first");
    assert_eq!(first["main_stream"], clip_path.as_str(), "{first}");
    assert_eq!(first["main_stream_type"], "vod", "{first}");
    assert_eq!(first["main_stream_duration"], 10000, "{first}");
    assert_eq!(first["block_duration"], 10000, "{first}");
    assert!(first.get("default_stream").is_none(), "{first}");
    let live = wait_status(&server, phase, "live block", |s| s["block_id"] == "live");
    assert_eq!(live["main_stream"], "live/src", "{live}");
    assert_eq!(live["main_stream_type"], "live", "{live}");
    // Read ahead of its block, the live source plays from the block's start.
    std::thread::sleep(Duration::from_secs(2));
    let live = channel_status(&server, "tv/channel").unwrap();
    assert!(
        live.get("default_stream").is_none(),
        "the live source plays: {live}; log:\n{}",
        server.log()
    );
    let last = wait_status(&server, phase, "last block", |s| s["block_id"] == "last");
    assert_eq!(last["main_stream_type"], "vod", "{last}");

    let exit = recorder.wait_exit(Duration::from_secs(60));
    let recorder_errors = recorder.stop_and_stderr();
    assert_eq!(
        exit,
        Some(0),
        "recorder: {recorder_errors}; log:\n{}",
        server.log()
    );

    // Decoded whole: no decoding error.
    let decode = Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-i"])
        .arg(&recording)
        .args(["-f", "null", "-"])
        .output()
        .unwrap();
    let decode_errors = String::from_utf8_lossy(&decode.stderr);
    assert!(
        decode.status.success() && decode_errors.trim().is_empty(),
        "decoding the output: {decode_errors}"
    );

    let video = packet_times(&recording, "v");
    let audio = packet_times(&recording, "a");
    let span = video.last().unwrap_or(&0.0) - video.first().unwrap_or(&0.0);
    assert!(span > 29.0, "{span:.2} s of video recorded");
    let (widest, at) = video
        .windows(2)
        .map(|w| (w[1] - w[0], w[0]))
        .fold((f64::MIN, 0.0), |a, b| if b.0 > a.0 { b } else { a });
    let narrowest = video
        .windows(2)
        .map(|w| w[1] - w[0])
        .fold(f64::MAX, f64::min);
    // RTMP carries milliseconds: a frame is 40 ms, give or take the rounding.
    assert!(
        widest <= FRAME_SECS + 0.0015 && narrowest > 0.0,
        "video decode-time steps from {narrowest:.4} s to {widest:.4} s (at {at:.3} s of {:.3} .. {:.3})",
        video[0],
        video[video.len() - 1]
    );
    assert!(audio.len() > 1000, "{} audio packets", audio.len());
    assert!(
        audio.windows(2).all(|w| w[1] > w[0]),
        "audio decode times go back"
    );

    // HLS of the same output: no discontinuity, the codec parameters never changed.
    let base = format!("http://127.0.0.1:{}/tv/channel", server.ports.http);
    let master = curl_text(&format!("{base}/playlist.m3u8"));
    let chunklist = master
        .lines()
        .find(|l| !l.starts_with('#') && !l.is_empty())
        .unwrap_or_else(|| panic!("no chunklist in {master:?}; log:\n{}", server.log()));
    let media = curl_text(&format!("{base}/{chunklist}"));
    assert!(media.contains("#EXTINF"), "{media}");
    assert!(
        !media.contains("#EXT-X-DISCONTINUITY\n"),
        "a discontinuity without a codec change:\n{media}"
    );
}

fn curl_text(url: &str) -> String {
    require_tool("curl", "curl");
    let output = Command::new("curl")
        .args(["-sS", "--max-time", "10", url])
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The default stream stands in for a live source that is not published and hands
/// back when it is; a playlist edit applies while the output plays on; a broken file is
/// rejected; a missing file and overlapping blocks show in the status.
#[test]
fn the_default_stream_fills_in_and_edits_apply_without_interruption() {
    let server = start();
    let filler = server.path("filler.mp4");
    make_clip(&filler, 4, "testsrc2");
    let filler_path = filler.display().to_string();
    let now = unix_now();
    let waiting = serde_json::json!({"Tasks": [{
        "Stream": "tv/channel",
        "DefaultStream": {"Type": "vod", "Source": "filler.mp4"},
        "Blocks": [{"Id": "wait", "Start": rfc3339(now - 1),
                    "Streams": [{"Type": "live", "Source": "live/late", "Duration": 600000}]}]}]});
    write_playlist(&server, &waiting);
    let limit = Duration::from_secs(30);
    let filling = wait_status(&server, limit, "default stream plays", |s| {
        s["default_stream"] == filler_path.as_str()
    });
    assert_eq!(filling["block_id"], "wait", "{filling}");
    assert_eq!(filling["main_stream"], "live/late", "{filling}");
    assert_eq!(filling["default_stream_type"], "vod", "{filling}");
    assert!(
        (3900..=4100).contains(&filling["default_stream_duration"].as_u64().unwrap_or(0)),
        "{filling}"
    );
    wait_live(&server, "tv", "channel", limit)
        .unwrap_or_else(|| panic!("tv/channel not live; log:\n{}", server.log()));
    let mut player = play(&rtmp_url(&server, "tv/channel"));

    // The live source comes: it takes over.
    // The same codec parameters as the filler: no new timeline, players play on.
    let late = server.path("late.mp4");
    make_clip(&late, 30, "testsrc");
    let mut publisher = publish_clip(&late, &rtmp_url(&server, "live/late"));
    wait_live(&server, "live", "late", limit)
        .unwrap_or_else(|| panic!("live/late not live; log:\n{}", server.log()));
    let published = Instant::now();
    let back = wait_status(&server, limit, "live source takes over", |s| {
        s.get("default_stream").is_none()
    });
    eprintln!(
        "live source played {:?} after it was live",
        published.elapsed()
    );
    assert_eq!(back["main_stream_type"], "live", "{back}");

    // It drops: the default stream again.
    publisher.stop_and_stderr();
    let dropped = Instant::now();
    wait_status(&server, limit, "default after the drop", |s| {
        s["default_stream"] == filler_path.as_str()
    });
    eprintln!(
        "default stream played {:?} after the publisher left",
        dropped.elapsed()
    );

    // An edit: now a block whose file is missing and an ad break in 2 s, and a second
    // task whose blocks overlap. Both play their default stream and say why.
    let now = unix_now();
    let edited = serde_json::json!({"Tasks": [
        {"Stream": "tv/channel",
         "DefaultStream": {"Type": "vod", "Source": "filler.mp4"},
         "Blocks": [{"Id": "edited", "Start": rfc3339(now - 1),
                     "Streams": [{"Type": "vod", "Source": "missing.mp4", "Duration": 600000}]}],
         "Scte35Markers": [{"Type": "Out", "Start": rfc3339(now + 2), "Duration": 30000}]},
        {"Stream": "tv/overlap",
         "DefaultStream": {"Type": "vod", "Source": "filler.mp4"},
         "Blocks": [
            {"Id": "a", "Start": rfc3339(now), "Streams": [{"Type": "vod", "Source": "filler.mp4", "Duration": 60000}]},
            {"Id": "b", "Start": rfc3339(now + 30), "Streams": [{"Type": "vod", "Source": "filler.mp4", "Duration": 60000}]}]}]});
    write_playlist(&server, &edited);
    let missing = wait_status(&server, limit, "edited schedule", |s| {
        s["block_id"] == "edited"
    });
    assert!(
        missing["error"]
            .as_str()
            .unwrap_or("")
            .contains("missing.mp4"),
        "{missing}"
    );
    let missing = wait_status(&server, limit, "default for the missing file", |s| {
        s["default_stream"] == filler_path.as_str()
    });
    assert_eq!(missing["main_stream_type"], "vod", "{missing}");
    let overlap = wait_for(limit, "overlap status", || {
        channel_status(&server, "tv/overlap").filter(|s| s["default_stream"].is_string())
    })
    .unwrap_or_else(|| panic!("no tv/overlap status; log:\n{}", server.log()));
    assert!(
        overlap["error"].as_str().unwrap_or("").contains("overlap"),
        "{overlap}"
    );

    // The scheduled marker went into the output.
    let marker = wait_for(limit, "scheduled SCTE-35 marker", || {
        let (_, groups) = server.try_get("/manage/live_streams_status")?;
        groups
            .as_array()?
            .iter()
            .filter(|g| g["app"] == "tv")
            .flat_map(|g| g["streams"].as_array().cloned().unwrap_or_default())
            .find(|s| s["strm"] == "channel")
            .and_then(|s| s["scte35_events"].get(0).cloned())
    })
    .unwrap_or_else(|| panic!("no marker in tv/channel; log:\n{}", server.log()));
    assert_eq!(marker["type"], "out", "{marker}");
    assert_eq!(marker["duration"], 30.0, "{marker}");

    // A broken file: rejected, the schedule in effect goes on.
    std::fs::write(server.path("playlist.json"), "{\"Tasks\": [").unwrap();
    wait_for(limit, "rejection logged", || {
        server
            .log()
            .contains("server playlist file rejected")
            .then_some(())
    })
    .unwrap_or_else(|| panic!("broken file not rejected; log:\n{}", server.log()));
    std::thread::sleep(Duration::from_secs(1));
    let kept = channel_status(&server, "tv/channel").unwrap();
    assert_eq!(kept["block_id"], "edited", "{kept}");

    // The output never stopped: the RTMP player of it is still playing.
    assert!(
        player.running(),
        "the player of tv/channel ended; log:\n{}",
        server.log()
    );
}

/// hls.js in headless Chromium plays the output while it switches between a file and
/// a live stream every 4 s: playback never stalls (its time advances at every sample,
/// twice a second, for 10 s) and hls.js reports no fatal error.
#[test]
fn hls_js_plays_across_switches_without_a_stall() {
    require_browser(&["hls.js/dist/hls.min.js"]);
    let server = start_with_segments(1);
    let clip = server.path("clip.mp4");
    make_clip(&clip, 5, "testsrc");
    let source = server.path("source.mp4");
    make_clip(&source, 90, "testsrc2");
    let _live = publish_clip(&source, &rtmp_url(&server, "live/src"));
    wait_live(&server, "live", "src", Duration::from_secs(30))
        .unwrap_or_else(|| panic!("live/src not live; log:\n{}", server.log()));
    let t0 = unix_now() + 1;
    let blocks: Vec<Value> = (0..20)
        .map(|i| {
            let (kind, source) = if i % 2 == 0 {
                ("vod", "clip.mp4")
            } else {
                ("live", "live/src")
            };
            serde_json::json!({"Id": format!("b{i}"), "Start": rfc3339(t0 + 4 * i),
                "Streams": [{"Type": kind, "Source": source, "Duration": 4000}]})
        })
        .collect();
    write_playlist(
        &server,
        &serde_json::json!({"Tasks": [{"Stream": "tv/channel", "Blocks": blocks}]}),
    );
    let playlist = format!(
        "http://127.0.0.1:{}/tv/channel/playlist.m3u8",
        server.ports.http
    );
    wait_for(Duration::from_secs(40), "a few segments", || {
        let master = curl_text(&playlist);
        let chunklist = master
            .lines()
            .find(|l| !l.starts_with('#') && !l.is_empty())?;
        let media = curl_text(&format!(
            "http://127.0.0.1:{}/tv/channel/{chunklist}",
            server.ports.http
        ));
        (media.matches("#EXTINF").count() >= 4).then_some(())
    })
    .unwrap_or_else(|| panic!("no HLS of tv/channel; log:\n{}", server.log()));

    let page_port = free_port();
    let page = format!("http://127.0.0.1:{page_port}");
    serve_player(page_port);
    let url = format!("{page}/index.html?src={playlist}");
    let screenshot = server.path("screenshot.png");
    let result = run_script("play.mjs", &[&url, &screenshot.to_string_lossy()], 90)
        .unwrap_or_else(|e| panic!("{e}"));
    let context = || format!("hls.js: {result}\nstrom log:\n{}", server.log());
    assert_eq!(result["started"], true, "{}", context());
    assert_eq!(
        result["fatalErrors"].as_array().map_or(1, Vec::len),
        0,
        "{}",
        context()
    );
    let times: Vec<f64> = result["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["currentTime"].as_f64())
        .collect();
    assert!(times.len() >= 15, "{}", context());
    // Sampled every 0.5 s: a sample that moved less than 0.1 s saw playback stop.
    let stalled: Vec<_> = times.windows(2).filter(|w| w[1] - w[0] < 0.1).collect();
    assert!(stalled.is_empty(), "stalled at {stalled:?}: {}", context());
    assert_eq!(result["videoWidth"], 320, "{}", context());
}

/// Files of two picture sizes alternate every 4 s: HLS marks a discontinuity exactly
/// where the size (the codec parameters) changes, and nowhere else.
#[test]
fn hls_discontinuities_only_where_codec_parameters_change() {
    let server = start_with_segments(1);
    make_clip(&server.path("big.mp4"), 5, "testsrc");
    make_sized_clip(&server.path("small.mp4"), 5, "testsrc2", "160x120");
    let t0 = unix_now() + 1;
    let block = |id: &str, at: i64, file: &str| {
        serde_json::json!({"Id": id, "Start": rfc3339(at),
            "Streams": [{"Type": "vod", "Source": file, "Duration": 4000}]})
    };
    let playlist = serde_json::json!({"Tasks": [{"Stream": "tv/channel", "Loop": true,
        "Blocks": [block("big", t0, "big.mp4"), block("small", t0 + 4, "small.mp4")]}]});
    write_playlist(&server, &playlist);
    let base = format!("http://127.0.0.1:{}/tv/channel", server.ports.http);
    // Wait for a window that holds both sizes: at least two switches.
    let media = wait_for(Duration::from_secs(60), "segments of both sizes", || {
        let master = curl_text(&format!("{base}/playlist.m3u8"));
        let chunklist = master
            .lines()
            .find(|l| !l.starts_with('#') && !l.is_empty())?;
        let media = curl_text(&format!("{base}/{chunklist}"));
        (media.matches("#EXT-X-DISCONTINUITY\n").count() >= 2).then_some(media)
    })
    .unwrap_or_else(|| panic!("no switches in HLS; log:\n{}", server.log()));
    // Each segment's picture width, and whether a discontinuity tag precedes it.
    let mut segments: Vec<(bool, String)> = Vec::new();
    let mut discontinuity = false;
    for line in media.lines() {
        if line == "#EXT-X-DISCONTINUITY" {
            discontinuity = true;
        } else if !line.starts_with('#') && !line.is_empty() {
            let width = ffprobe(&[
                "-show_entries",
                "stream=width",
                "-select_streams",
                "v",
                "-of",
                "csv=p=0",
                &format!("{base}/{line}"),
            ]);
            let width = width.lines().next().unwrap_or_default().trim().to_owned();
            segments.push((discontinuity, width));
            discontinuity = false;
        }
    }
    eprintln!("segments (discontinuity, width): {segments:?}");
    for pair in segments.windows(2) {
        let changed = pair[0].1 != pair[1].1;
        assert_eq!(
            pair[1].0, changed,
            "a discontinuity must come exactly where the size changes: {segments:?}\n{media}"
        );
    }
}

/// Issue 31 item 12 (in part): a playlist `Source` naming a file that is no MP4 (here a
/// stand-in for a secret one) is a state in the API, and neither that state nor the log
/// echoes any bytes of the file.
#[test]
fn a_source_that_is_no_mp4_echoes_none_of_its_bytes() {
    let server = start();
    let secret = server.path("not-a-movie.mp4");
    std::fs::write(&secret, "root:x:0:0:root:/root:/bin/bash\nhunter2-secret\n").unwrap();
    let now = unix_now();
    let playlist = serde_json::json!({"Tasks": [{
        "Stream": "tv/channel",
        "Blocks": [{"Id": "leak", "Start": rfc3339(now - 1),
                    "Streams": [{"Type": "vod", "Source": secret.display().to_string(), "Duration": 600000}]}]}]});
    write_playlist(&server, &playlist);
    let refused = wait_status(&server, Duration::from_secs(30), "the file refused", |s| {
        s["error"]
            .as_str()
            .is_some_and(|e| e.contains("not-a-movie.mp4"))
    });
    let log = server.log();
    for part in [":x:0", "root:", "bash", "hunter2"] {
        assert!(!refused.to_string().contains(part), "{part} in {refused}");
        assert!(!log.contains(part), "{part} in the log:\n{log}");
    }
}

/// A playlist file in the commercial server's own form: `SyncInterval` beside `Tasks`
/// and a block `Start` without a zone, read in the server's local time zone (here
/// `TZ=STROM-3`, UTC+3 with no daylight saving time). Read as UTC, the block would start
/// three hours from now and the default stream would play instead.
#[test]
fn the_commercial_servers_playlist_file_plays_in_local_time() {
    let mut server = prepare_with_segments(2);
    server.spawn_with_env(&[("TZ", "STROM-3")]);
    server.wait_ready();
    make_clip(&server.path("filler.mp4"), 4, "testsrc2");
    make_clip(&server.path("show.mp4"), 4, "testsrc");
    // Local wall-clock time one second ago, as `YYYY-MM-DD HH:MM:SS`.
    let local_now = rfc3339(unix_now() + 3 * 3600 - 1)
        .replace('T', " ")
        .replace('Z', "");
    let playlist = serde_json::json!({"SyncInterval": 3600, "Tasks": [{
        "Stream": "tv/channel",
        "DefaultStream": {"Type": "vod", "Source": "filler.mp4"},
        "Blocks": [{"Id": "local", "Start": local_now,
                    "Streams": [{"Type": "vod", "Source": "show.mp4", "Duration": 600000, "Loop": true}]}]}]});
    write_playlist(&server, &playlist);
    let limit = Duration::from_secs(30);
    let playing = wait_status(&server, limit, "the zone-less block plays now", |s| {
        s["block_id"] == "local" && s.get("default_stream").is_none()
    });
    assert_eq!(
        playing["main_stream"],
        server.path("show.mp4").display().to_string(),
        "{playing}"
    );
    wait_live(&server, "tv", "channel", limit)
        .unwrap_or_else(|| panic!("tv/channel not live; log:\n{}", server.log()));
    let log = server.log();
    assert!(!log.contains("server playlist file rejected"), "{log}");
}

/// Issue 31 item 12: `vod` sources are confined to the media directory (by default the
/// playlist file's directory): a playlist naming a file outside it (absolute or through
/// `..`) is rejected whole with the field and the reason, nothing of it plays, and a
/// file inside it does.
#[test]
fn sources_outside_the_media_directory_are_refused() {
    let server = start();
    make_clip(&server.path("inside.mp4"), 4, "testsrc");
    for outside in ["/etc/passwd", "../outside.mp4"] {
        let playlist = serde_json::json!({"Tasks": [{
            "Stream": "tv/channel",
            "DefaultStream": {"Type": "vod", "Source": "inside.mp4"},
            "Blocks": [{"Id": "escape", "Start": rfc3339(unix_now() - 1),
                        "Streams": [{"Type": "vod", "Source": outside, "Duration": 600000}]}]}]});
        write_playlist(&server, &playlist);
        wait_for(Duration::from_secs(30), "the playlist rejected", || {
            let log = server.log();
            log.lines()
                .any(|l| {
                    l.contains("server playlist file rejected")
                        && l.contains("Streams[0].Source")
                        && l.contains(&format!("{outside:?}"))
                })
                .then_some(())
        })
        .unwrap_or_else(|| panic!("{outside} not refused; log:\n{}", server.log()));
        assert_eq!(channel_status(&server, "tv/channel"), None, "{outside}");
    }
    let log = server.log();
    assert!(!log.contains("root:"), "{log}");
    // Inside the directory (by an absolute path too) plays.
    let inside = server.path("inside.mp4").display().to_string();
    let playlist = serde_json::json!({"Tasks": [{
        "Stream": "tv/channel",
        "Blocks": [{"Id": "inside", "Start": rfc3339(unix_now() - 1),
                    "Streams": [{"Type": "vod", "Source": inside, "Duration": 600000, "Loop": true}]}]}]});
    write_playlist(&server, &playlist);
    wait_status(
        &server,
        Duration::from_secs(30),
        "the inside file plays",
        |s| s["block_id"] == "inside" && s["error"].is_null(),
    );
}
