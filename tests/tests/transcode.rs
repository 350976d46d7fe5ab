//! Live transcoding (issue 44): a `Transcoding` ladder makes renditions of a live RTMP
//! source, published as `<stream>_<name>`; ffprobe reads each at its size and with its
//! audio over RTMP and HLS, with keyframes where the source has them; the ABR group
//! `<stream>_abr` lists the source and its renditions in one HLS master playlist and
//! one DASH manifest, and hls.js and dash.js in Chromium switch between them; the ffmpeg process
//! of a transcode killed with `kill -9` comes back with its renditions while the source
//! plays on; a source that stops and comes back at another size is transcoded again;
//! sources without H.264/H.265 video (AV1 over Enhanced RTMP, audio only) are refused
//! once with a log line, and stay live untranscoded; a rendition plays over every
//! output (RTSP, SRT, LL-HLS, DASH, WHEP in Chromium) and records in the DVR like any
//! stream; within one publish (MPEG-TS over UDP), a corrupted stretch of video and a
//! change from 640x360 to 1280x720 leave the renditions going at their sizes, with
//! ffmpeg's complaints in the log.
//! `/manage/transcodes`, `/metrics` and the web console's stream page show each
//! transcode.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::browser::{
    DASH_JS, playback_problems, require_browser, run_script, serve_player, webrtc_page,
};
use common::media::{ffmpeg, ffprobe, wait_live};
use common::{Server, curl_text, free_port, wait_for};
use std::process::Command;
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(60);

fn start() -> Server {
    start_with(Server::start(""))
}

/// `server` (started) with the ladder's rules applied.
fn start_with(server: Server) -> Server {
    server.apply_rules(&format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
 "Delivery": {{"outputs": ["HLS", "DASH"], "segment_duration_secs": 2}},
 "Transcoding": {{"ladders": [{{"app": "live", "renditions": [
   {{"name": "mid", "width": 854, "height": 480, "video_bitrate": 1000, "preset": "ultrafast"}},
   {{"name": "low", "width": 426, "height": 240, "video_bitrate": 300, "preset": "ultrafast",
     "max_fps": 15, "audio": {{"bitrate": 48, "channels": 1}}}}]}}]}}}}"#,
        server.ports.rtmp
    ));
    server
}

/// A 1280x720 30 fps source with a keyframe every 2 s and stereo AAC, as `live/<stream>`
/// (the ladder: the source passed through as 720p, 480p and 240p).
fn publish_source(server: &Server, stream: &str) -> common::media::Proc {
    publish_sized(server, stream, "1280x720")
}

/// [`publish_source`] at `size`.
fn publish_sized(server: &Server, stream: &str, size: &str) -> common::media::Proc {
    ffmpeg(&format!(
        "-hide_banner -loglevel error -re -f lavfi -i testsrc2=size={size}:rate=30 \
         -f lavfi -i sine=frequency=440:sample_rate=48000 -c:v libx264 -preset ultrafast \
         -g 60 -pix_fmt yuv420p -c:a aac -ac 2 -b:a 96k -t 300 -f flv rtmp://127.0.0.1:{}/live/{stream}",
        server.ports.rtmp
    ))
}

/// ffprobe's `width,height` of the first video stream and `codec,channels` of the first
/// audio stream of `url`.
fn probe(url: &str) -> (String, String) {
    let video = ffprobe(&[
        "-select_streams",
        "v:0",
        "-show_entries",
        "stream=width,height",
        "-of",
        "csv=p=0",
        url,
    ]);
    let audio = ffprobe(&[
        "-select_streams",
        "a:0",
        "-show_entries",
        "stream=codec_name,channels",
        "-of",
        "csv=p=0",
        url,
    ]);
    (
        video.lines().next().unwrap_or_default().to_owned(),
        audio.lines().next().unwrap_or_default().to_owned(),
    )
}

/// The presentation times (s) of the keyframes in the first 6 s of `url`.
fn keyframe_times(url: &str) -> Vec<f64> {
    ffprobe(&[
        "-select_streams",
        "v:0",
        "-skip_frame",
        "nokey",
        "-read_intervals",
        "%+6",
        "-show_entries",
        "frame=pts_time",
        "-of",
        "csv=p=0",
        url,
    ])
    .lines()
    .filter_map(|l| l.trim().trim_end_matches(',').parse().ok())
    .collect()
}

#[test]
fn a_ladder_publishes_renditions_that_play_over_rtmp_and_hls() {
    let metrics_port = free_port();
    let server = start_with(Server::start(&format!(
        "metrics_listen_interfaces = 127.0.0.1\nmetrics_port = {metrics_port}"
    )));
    let _source = publish_source(&server, "src");
    for stream in ["src", "src_mid", "src_low"] {
        wait_live(&server, "live", stream, LIVE)
            .unwrap_or_else(|| panic!("{stream} not live\n{}", server.log()));
    }
    let rtmp = |stream: &str| format!("rtmp://127.0.0.1:{}/live/{stream}", server.ports.rtmp);
    let hls = |stream: &str| {
        format!(
            "http://127.0.0.1:{}/live/{stream}/playlist.m3u8",
            server.ports.http
        )
    };
    assert_eq!(probe(&rtmp("src_mid")), ("854,480".into(), "aac,2".into()));
    assert_eq!(probe(&rtmp("src_low")), ("426,240".into(), "aac,1".into()));
    assert_eq!(probe(&rtmp("src")), ("1280,720".into(), "aac,2".into()));
    let hls_low = wait_for(LIVE, "the low rendition over HLS", || {
        let probed = probe(&hls("src_low"));
        (!probed.0.is_empty()).then_some(probed)
    })
    .unwrap_or_else(|| panic!("no HLS of src_low\n{}", server.log()));
    assert_eq!(hls_low, ("426,240".into(), "aac,1".into()));

    // The API shows the transcode running, with frames in and out and its CPU.
    let transcodes = wait_for(LIVE, "a running transcode with frames", || {
        let (_, list) = server.get("/manage/transcodes");
        let ready = list[0]["state"] == "running"
            && list[0]["renditions"][1]["frames"].as_u64().unwrap_or(0) > 30;
        ready.then_some(list)
    })
    .unwrap_or_else(|| panic!("no running transcode listed\n{}", server.log()));
    let transcode = &transcodes[0];
    assert_eq!(
        (&transcode["app"], &transcode["stream"]),
        (&"live".into(), &"src".into())
    );
    assert!(transcode["pid"].as_u64().is_some(), "{transcode}");
    assert!(
        transcode["input_fps"].as_f64().unwrap_or(0.0) > 5.0,
        "{transcode}"
    );
    assert!(
        transcode["cpu_percent"].as_f64().unwrap_or(0.0) > 0.0,
        "{transcode}"
    );
    let low = &transcode["renditions"][1];
    assert_eq!(
        (&low["stream"], &low["width"]),
        (&"src_low".into(), &426.into())
    );
    assert!(low["speed"].as_f64().unwrap_or(0.0) > 0.3, "{transcode}");
    // And /metrics the same.
    let (status, metrics) = curl_text(&format!("http://127.0.0.1:{metrics_port}/metrics"));
    assert_eq!(status, 200, "{metrics}");
    assert!(
        metrics.contains(r#"strom_transcode_running{app="live",stream="src"} 1"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(
            r#"strom_transcode_rendition_frames{app="live",stream="src",rendition="low"}"#
        ),
        "{metrics}"
    );

    // Keyframes where the source has them: every 2 s, on the same times.
    let source = keyframe_times(&rtmp("src"));
    let mid = keyframe_times(&rtmp("src_mid"));
    assert!(source.len() >= 2 && mid.len() >= 2, "{source:?} {mid:?}");
    let step = |times: &[f64]| times[1] - times[0];
    assert!((step(&source) - 2.0).abs() < 0.1, "source {source:?}");
    assert!((step(&mid) - 2.0).abs() < 0.1, "rendition {mid:?}");
    let phase = |times: &[f64]| times[0].rem_euclid(2.0);
    let apart = (phase(&source) - phase(&mid)).abs();
    assert!(
        !(0.05..=1.95).contains(&apart),
        "source {source:?} rendition {mid:?}"
    );
}

#[test]
fn a_killed_transcode_comes_back_and_the_source_plays_on() {
    let server = start();
    let _source = publish_source(&server, "kept");
    for stream in ["kept", "kept_mid"] {
        wait_live(&server, "live", stream, LIVE)
            .unwrap_or_else(|| panic!("{stream} not live\n{}", server.log()));
    }
    // This server's transcodes: their sockets are in its run directory.
    let sockets = format!("unix:{}", server.path("run").join("transcode").display());
    let pgrep = || {
        let out = Command::new("pgrep")
            .args(["-f", &sockets])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.trim().parse::<i32>().ok())
            .collect::<Vec<_>>()
    };
    let publish_time = source_publish_time(&server, "kept");
    let before = pgrep();
    assert_eq!(before.len(), 1, "one ffmpeg per transcode: {before:?}");
    Command::new("kill")
        .args(["-9", &before[0].to_string()])
        .status()
        .unwrap();
    wait_for(LIVE, "a new ffmpeg", || {
        let now = pgrep();
        (now.len() == 1 && now[0] != before[0]).then_some(())
    })
    .unwrap_or_else(|| panic!("the transcode did not restart\n{}", server.log()));
    assert!(
        server.log().contains("transcode failed; restarting"),
        "{}",
        server.log()
    );
    let (_, transcodes) = server.get("/manage/transcodes");
    assert!(
        transcodes[0]["restarts"].as_u64().unwrap_or(0) >= 1,
        "{transcodes}"
    );
    assert!(
        transcodes[0]["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("ffmpeg exited")),
        "{transcodes}"
    );
    // The rendition is live again, and the source never stopped.
    let rtmp = format!("rtmp://127.0.0.1:{}/live/kept_mid", server.ports.rtmp);
    wait_for(LIVE, "the rendition back", || {
        let (video, _) = probe(&rtmp);
        (video == "854,480").then_some(())
    })
    .unwrap_or_else(|| panic!("no rendition after the restart\n{}", server.log()));
    // The source kept its one publish all along.
    assert_eq!(source_publish_time(&server, "kept"), publish_time);
}

/// The `publish_time` of `live/<stream>` in `live_streams_status`.
fn source_publish_time(server: &Server, stream: &str) -> String {
    let (_, groups) = server.get("/manage/live_streams_status");
    groups
        .as_array()
        .into_iter()
        .flatten()
        .filter(|group| group["app"] == "live")
        .flat_map(|group| group["streams"].as_array().cloned().unwrap_or_default())
        .find(|entry| entry["strm"] == stream)
        .and_then(|entry| entry["publish_time"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("live/{stream} not listed: {groups}"))
}

/// The ABR group of a transcoded stream: `live/src_abr` lists the source (the top
/// rendition) and both renditions with their sizes, in HLS and DASH, and hls.js and
/// dash.js play it while their page forces a level switch every 2.5 s.
#[test]
fn the_source_and_its_renditions_form_an_abr_group_that_hls_js_and_dash_js_switch_in() {
    require_browser(&[
        "hls.js/dist/hls.min.js",
        DASH_JS.trim_start_matches("node_modules/"),
    ]);
    let page_port = free_port();
    let page_origin = format!("http://127.0.0.1:{page_port}");
    let server = start_with(Server::start(&format!(
        "access_control_allow_origin = {page_origin}"
    )));
    serve_player(page_port);
    let _source = publish_source(&server, "src");
    let base = format!("http://127.0.0.1:{}/live/src_abr", server.ports.http);
    let master = wait_for(LIVE, "a master with three ready variants", || {
        let (status, master) = curl_text(&format!("{base}/playlist.m3u8"));
        let uris: Vec<&str> = master
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .collect();
        let ready = status == 200
            && uris.len() == 3
            && uris.iter().all(|uri| {
                let (status, media) = curl_text(&format!("{base}/{uri}"));
                status == 200 && media.matches("#EXTINF").count() >= 2
            });
        ready.then_some(master)
    })
    .unwrap_or_else(|| panic!("no ABR master\n{}", server.log()));
    for resolution in ["1280x720", "854x480", "426x240"] {
        assert!(
            master.contains(&format!("RESOLUTION={resolution}")),
            "{master}"
        );
    }
    // One timeline: the renditions' segments start where the source's do (the same
    // keyframes, `-copyts`), so a player switching between them lands on a boundary.
    let variants: Vec<String> = master
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|uri| resolve(&format!("{base}/"), uri))
        .collect();
    let starts: Vec<Vec<f64>> = variants.iter().map(|v| segment_starts(v)).collect();
    for (variant, times) in variants.iter().zip(&starts).skip(1) {
        let (first, last) = (starts[0][0], starts[0][starts[0].len() - 1]);
        let within: Vec<f64> = times
            .iter()
            .copied()
            .filter(|t| (first - 0.05..=last + 0.05).contains(t))
            .collect();
        let matched = within
            .iter()
            .filter(|t| starts[0].iter().any(|s| (*s - **t).abs() < 0.05))
            .count();
        assert!(
            matched >= 2 && matched == within.len(),
            "segment starts of {variant} {times:?} against the source's {:?}",
            starts[0]
        );
    }
    let (status, mpd) = curl_text(&format!("{base}/manifest.mpd"));
    assert_eq!(status, 200, "{mpd}");
    for size in [
        r#"width="1280" height="720""#,
        r#"width="854" height="480""#,
        r#"width="426" height="240""#,
    ] {
        assert!(mpd.contains(size), "{mpd}");
    }

    let origins = (
        page_origin.as_str(),
        format!("http://127.0.0.1:{}", server.ports.http),
    );
    let mut problems =
        switching_problems(&format!("index.html?src={base}/playlist.m3u8"), &origins);
    problems.extend(switching_problems(
        &format!("dash.html?src={base}/manifest.mpd"),
        &origins,
    ));
    assert!(
        problems.is_empty(),
        "players on the ABR group: {problems:?}\nstrom log:\n{}",
        server.log()
    );
}

/// `reference` resolved against the URL `base` (which ends in `/` for a directory),
/// dot segments removed, as a player resolves playlist URIs.
fn resolve(base: &str, reference: &str) -> String {
    let (origin, path) = base
        .split_once("://")
        .and_then(|(scheme, rest)| {
            rest.find('/')
                .map(|at| (format!("{scheme}://{}", &rest[..at]), &rest[at..]))
        })
        .unwrap_or_else(|| panic!("not an absolute URL: {base}"));
    let joined = if reference.starts_with('/') {
        reference.to_owned()
    } else {
        format!("{}{reference}", &path[..=path.rfind('/').unwrap()])
    };
    let (joined, query) = match joined.split_once('?') {
        Some((path, query)) => (path.to_owned(), format!("?{query}")),
        None => (joined, String::new()),
    };
    let mut segments: Vec<&str> = Vec::new();
    for segment in joined.split('/').skip(1) {
        match segment {
            ".." => {
                segments.pop();
            }
            "." => {}
            other => segments.push(other),
        }
    }
    format!("{origin}/{}{query}", segments.join("/"))
}

/// The PTS of the first video packet of each segment a media playlist lists.
fn segment_starts(media: &str) -> Vec<f64> {
    let (status, playlist) = curl_text(media);
    assert_eq!(status, 200, "{media}: {playlist}");
    let starts: Vec<f64> = playlist
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|uri| {
            let segment = resolve(media, uri);
            let out = ffprobe(&[
                "-select_streams",
                "v:0",
                "-show_entries",
                "packet=pts_time",
                "-read_intervals",
                "%+#1",
                "-of",
                "csv=p=0",
                &segment,
            ]);
            out.lines()
                .find_map(|l| l.trim().trim_end_matches(',').parse().ok())
                .unwrap_or_else(|| panic!("no video packet in {segment}: {out:?}"))
        })
        .collect();
    assert!(starts.len() >= 2, "{media}:\n{playlist}");
    starts
}

/// What went wrong when the player page `page` (with `src`) played the ABR group from
/// `origins` (page, stream), switching level every 2.5 s: it must play 5 s, see three
/// levels, show at least two picture sizes and never stall longer than a segment.
fn switching_problems(page: &str, (page_origin, stream_origin): &(&str, String)) -> Vec<String> {
    let shots = tempfile::tempdir().unwrap();
    let url = format!("{page_origin}/{page}&switch=2500");
    let shot = shots.path().join("abr.png");
    let result = match run_script("play.mjs", &[&url, &shot.to_string_lossy()], 90) {
        Ok(result) => result,
        Err(e) => return vec![format!("{page}: {e}")],
    };
    // The picture size changes with the level: the 320x240 check is not for this page.
    let mut problems: Vec<String> = playback_problems(&result, 5.0, stream_origin, page_origin)
        .into_iter()
        .filter(|p| !p.starts_with("video is"))
        .collect();
    if result["levels"] != 3 {
        problems.push(format!("{} levels, not 3", result["levels"]));
    }
    let widths: Vec<u64> = result["widthsSeen"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_u64()).collect())
        .unwrap_or_default();
    if widths.len() < 2 {
        problems.push(format!("video widths played: {widths:?}"));
    }
    // No stall longer than one segment (2 s) across the switches: currentTime, sampled
    // every 0.5 s, never stands still that long.
    let samples: Vec<(f64, f64)> = result["samples"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| Some((s["t"].as_f64()?, s["currentTime"].as_f64()?)))
                .collect()
        })
        .unwrap_or_default();
    let mut still_since = samples.first().map(|s| s.0);
    for pair in samples.windows(2) {
        if pair[1].1 > pair[0].1 {
            still_since = Some(pair[1].0);
        } else if let Some(since) = still_since
            && pair[1].0 - since > 2.0
        {
            problems.push(format!("stalled over 2 s from {since} s"));
            break;
        }
    }
    problems
        .into_iter()
        .map(|p| format!("{page}: {p} ({result})"))
        .collect()
}

/// A source that stops and comes back at another resolution: its transcode ends with
/// it, starts again with the new publisher, and the renditions keep their sizes.
#[test]
fn a_source_that_comes_back_at_another_size_is_transcoded_again() {
    let server = start();
    let mut first = publish_source(&server, "again");
    let rtmp = format!("rtmp://127.0.0.1:{}/live/again_low", server.ports.rtmp);
    wait_for(LIVE, "the first rendition", || {
        (probe(&rtmp).0 == "426,240").then_some(())
    })
    .unwrap_or_else(|| panic!("no rendition\n{}", server.log()));
    first.stop_and_stderr();
    wait_for(LIVE, "the transcode gone with its source", || {
        let (_, list) = server.get("/manage/transcodes");
        list.as_array().is_some_and(Vec::is_empty).then_some(())
    })
    .unwrap_or_else(|| panic!("the transcode outlived its source\n{}", server.log()));
    let _second = publish_sized(&server, "again", "640x360");
    wait_for(LIVE, "the rendition of the new publisher", || {
        let (_, list) = server.get("/manage/transcodes");
        let running = list[0]["state"] == "running";
        (running && probe(&rtmp).0 == "426,240").then_some(())
    })
    .unwrap_or_else(|| panic!("no rendition after the source came back\n{}", server.log()));
    let (_, list) = server.get("/manage/transcodes");
    assert_eq!(
        list[0]["restarts"], 0,
        "a new source, not a failure: {list}"
    );
}

/// With the running transcodes over `cpu_budget_percent`, a second source is refused
/// with a log line naming the bound, and only the first is transcoded.
#[test]
fn a_source_past_the_cpu_budget_is_refused_out_loud() {
    let server = Server::start("");
    server.apply_rules(&format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
 "Delivery": {{"outputs": ["HLS"], "segment_duration_secs": 2}},
 "Transcoding": {{"cpu_budget_percent": 1, "ladders": [{{"app": "live", "renditions": [
   {{"name": "low", "width": 320, "height": 180, "video_bitrate": 250, "preset": "ultrafast"}}]}}]}}}}"#,
        server.ports.rtmp
    ));
    let _first = publish_source(&server, "one");
    wait_for(LIVE, "the first transcode over 1% CPU", || {
        let (_, list) = server.get("/manage/transcodes");
        (list[0]["cpu_percent"].as_f64().unwrap_or(0.0) > 1.0).then_some(())
    })
    .unwrap_or_else(|| panic!("no busy transcode\n{}", server.log()));
    let _second = publish_source(&server, "two");
    wait_live(&server, "live", "two", LIVE).unwrap_or_else(|| panic!("two not live"));
    let refusal = wait_for(Duration::from_secs(20), "the refusal", || {
        server
            .log()
            .lines()
            .find(|l| l.contains("transcode refused") && l.contains("live/two"))
            .map(str::to_owned)
    })
    .unwrap_or_else(|| panic!("no refusal logged\n{}", server.log()));
    assert!(refusal.contains("cpu_budget_percent"), "{refusal}");
    let (_, list) = server.get("/manage/transcodes");
    let streams: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["stream"].as_str())
        .collect();
    assert_eq!(streams, ["one"], "{list}");
}

/// The web console's page of a transcoded stream shows its ladder: each rendition at its
/// size, linked to the rendition's own page.
#[test]
fn the_console_shows_the_ladder_on_the_stream_page() {
    require_browser(&[]);
    let server = start();
    let _source = publish_source(&server, "shown");
    wait_for(LIVE, "a running transcode", || {
        let (_, list) = server.get("/manage/transcodes");
        (list[0]["state"] == "running").then_some(())
    })
    .unwrap_or_else(|| panic!("no running transcode\n{}", server.log()));
    let console = format!("http://127.0.0.1:{}/console/", server.ports.management);
    let shots = tempfile::tempdir().unwrap();
    let shot = shots.path().join("console.png");
    let result = run_script(
        "console.mjs",
        &[
            &console,
            "-",
            "live/shown",
            &shot.to_string_lossy(),
            "--ladder",
        ],
        120,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let rows: Vec<&str> = result["ladder"]
        .as_array()
        .map(|rows| rows.iter().filter_map(|r| r.as_str()).collect())
        .unwrap_or_default();
    assert_eq!(rows.len(), 2, "{result}");
    assert!(rows[0].starts_with("shown_mid854x480"), "{rows:?}");
    assert!(rows[1].starts_with("shown_low426x240"), "{rows:?}");
}

/// Sources the transcoder cannot take (AV1 over Enhanced RTMP, which ffmpeg is not
/// given; audio without video) are refused once, out loud, with no restart loop, and
/// stay live themselves.
#[test]
fn sources_without_h26x_video_are_refused_once_and_stay_live() {
    let server = start();
    // av1C (profile 0, level 8, 8-bit 4:2:0 with a sequence header OBU), then a frame:
    // Enhanced RTMP SequenceStart and CodedFrames of FourCC `av01`.
    let mut av1 = common::raw_rtmp::raw_publisher(
        std::net::SocketAddr::from(([127, 0, 0, 1], server.ports.rtmp)),
        "live",
        "av1cam",
    );
    let mut sequence_start = vec![0x80 | 0x10];
    sequence_start.extend_from_slice(b"av01");
    sequence_start.extend_from_slice(&[
        0x81, 0x08, 0x0c, 0x00, 0x0a, 0x0b, 0x00, 0x00, 0x00, 0x24, 0xc6, 0xab, 0xdf, 0x3e, 0xfe,
        0x24, 0x04,
    ]);
    av1.video(&sequence_start);
    let mut keyframe = vec![0x80 | 0x10 | 1];
    keyframe.extend_from_slice(b"av01");
    keyframe.extend_from_slice(&[
        0x12, 0x00, 0x0a, 0x0b, 0x00, 0x00, 0x00, 0x24, 0xc6, 0xab, 0x32,
    ]);
    av1.video(&keyframe);
    let _audio_only = ffmpeg(&format!(
        "-hide_banner -loglevel error -re -f lavfi -i sine=frequency=440:sample_rate=48000 \
         -c:a aac -b:a 96k -t 300 -f flv rtmp://127.0.0.1:{}/live/radio",
        server.ports.rtmp
    ));
    for (stream, why) in [("av1cam", "Av1"), ("radio", "no video")] {
        let refusal = wait_for(LIVE, "the refusal", || {
            let (_, list) = server.get("/manage/transcodes");
            list.as_array()?
                .iter()
                .find(|t| t["stream"] == stream && t["state"] == "refused")
                .cloned()
        })
        .unwrap_or_else(|| panic!("live/{stream} not refused\n{}", server.log()));
        assert!(
            refusal["last_error"]
                .as_str()
                .unwrap_or_default()
                .contains(why),
            "{refusal}"
        );
        let line = server
            .log()
            .lines()
            .find(|l| l.contains("transcode refused") && l.contains(&format!("live/{stream}")))
            .map(str::to_owned);
        assert!(
            line.is_some_and(|l| l.contains(why)),
            "no refusal logged\n{}",
            server.log()
        );
    }
    // No restart loop: the refusals stand, and the sources are still live (the AV1
    // publisher keeps sending, or strom would end its idle publish).
    for _ in 0..30 {
        av1.video(&keyframe);
        std::thread::sleep(Duration::from_millis(200));
    }
    let (_, list) = server.get("/manage/transcodes");
    for transcode in list.as_array().unwrap() {
        assert_eq!(transcode["state"], "refused", "{list}");
        assert_eq!(transcode["restarts"], 0, "{list}");
    }
    let (_, live) = server.get("/manage/live_streams_status");
    for stream in ["av1cam", "radio"] {
        let listed = live.as_array().unwrap().iter().any(|app| {
            app["streams"]
                .as_array()
                .is_some_and(|s| s.iter().any(|s| s["strm"] == stream))
        });
        assert!(
            listed,
            "live/{stream} is no longer live: {live}\n{}",
            server.log()
        );
        let starts = server
            .log()
            .matches(&format!("stream=live/{stream} pid="))
            .count();
        assert!(
            starts <= 1,
            "live/{stream}: ffmpeg started {starts} times\n{}",
            server.log()
        );
    }
}

/// A rendition is a stream like any other: ffprobe reads it at its size over RTSP, SRT,
/// LL-HLS, DASH and from the DVR (a DVR rule names it), and Chromium plays it over WHEP.
#[test]
fn a_rendition_plays_over_every_output_and_records_in_the_dvr() {
    require_browser(&[]);
    let server = Server::start("");
    let (rtsp, srt, ice) = (free_port(), free_port(), free_port());
    server.apply_rules(&format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {rtmp}}}]}},
 "RtspSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {rtsp}}}]}},
 "WebRtcSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {ice}}}]}},
 "TsOutputs": [{{"id": "viewers", "protocol": "srt", "mode": "listen", "ip": "127.0.0.1", "port": {srt}}}],
 "Delivery": {{"outputs": ["HLS", "LLHLS", "DASH"], "segment_duration_secs": 2,
   "streams": [{{"app": "live", "stream": "src_low", "outputs": ["HLS", "LLHLS", "DASH", "DVR"]}}]}},
 "Dvr": {{"segment_duration_secs": 2, "min_free_space_mb": 0}},
 "Transcoding": {{"ladders": [{{"app": "live", "renditions": [
   {{"name": "low", "width": 426, "height": 240, "video_bitrate": 300, "preset": "ultrafast"}}]}}]}}}}"#,
        rtmp = server.ports.rtmp
    ));
    let _source = publish_source(&server, "src");
    wait_live(&server, "live", "src_low", LIVE)
        .unwrap_or_else(|| panic!("src_low not live\n{}", server.log()));
    let http = |path: &str| format!("http://127.0.0.1:{}/live/src_low/{path}", server.ports.http);
    let outputs = [
        ("RTSP", format!("rtsp://127.0.0.1:{rtsp}/live/src_low")),
        (
            "SRT",
            format!("srt://127.0.0.1:{srt}?mode=caller&streamid=#!::r=live/src_low,m=request"),
        ),
        ("LL-HLS", http("playlist_fmp4.m3u8")),
        ("DASH", http("manifest.mpd")),
        ("DVR", http("playlist_dvr.m3u8")),
    ];
    for (name, url) in &outputs {
        let probed = wait_for(LIVE, name, || {
            let probed = probe(url);
            (!probed.0.is_empty()).then_some(probed)
        })
        .unwrap_or_else(|| panic!("{name}: nothing read from {url}\n{}", server.log()));
        assert_eq!(probed.0, "426,240", "{name} ({url})");
        assert_eq!(probed.1, "aac,2", "{name} ({url})");
    }

    let whep = http("whep.stream");
    let result = run_script("webrtc.mjs", &[&webrtc_page(), "whep", &whep, "6"], 90)
        .unwrap_or_else(|e| panic!("{e}\nlog:\n{}", server.log()));
    assert_eq!(result["ok"], true, "{result}\nlog:\n{}", server.log());
    let video = &result["last"]["video"];
    assert!(
        video["framesDecoded"].as_u64().unwrap_or(0) >= 30,
        "WHEP frames decoded: {result}"
    );
    assert_eq!(
        (video["frameWidth"].as_u64(), video["frameHeight"].as_u64()),
        (Some(426), Some(240)),
        "{result}"
    );
}

/// `seconds` of a `size` test source with AAC as an MPEG-TS file (keyframes every 2 s).
fn ts_clip(path: &std::path::Path, size: &str, seconds: u32) {
    let status = Command::new("ffmpeg")
        .args([
            "-hide_banner",
            "-loglevel",
            "error",
            "-y",
            "-f",
            "lavfi",
            "-i",
        ])
        .arg(format!("testsrc2=size={size}:rate=30:duration={seconds}"))
        .args(["-f", "lavfi", "-i"])
        .arg(format!(
            "sine=frequency=440:sample_rate=48000:duration={seconds}"
        ))
        .args([
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-g",
            "60",
            "-pix_fmt",
            "yuv420p",
            "-c:a",
            "aac",
            "-ac",
            "2",
            "-f",
            "mpegts",
        ])
        .arg(path)
        .status()
        .unwrap();
    assert!(
        status.success(),
        "ffmpeg could not write {}",
        path.display()
    );
}

/// Overwrites part of the payload of every 5th video packet (PID 0x100, not a PES
/// start) in the middle third of an MPEG-TS file: slices that no longer decode.
fn corrupt_video(path: &std::path::Path) -> usize {
    let mut ts = std::fs::read(path).unwrap();
    let packets = ts.len() / 188;
    let mut corrupted = 0;
    for index in (packets / 3..packets * 2 / 3).step_by(5) {
        let packet = &mut ts[index * 188..(index + 1) * 188];
        let pid = (u16::from(packet[1] & 0x1f) << 8) | u16::from(packet[2]);
        let pes_start = packet[1] & 0x40 != 0;
        let adaptation = packet[3] & 0x20 != 0;
        if packet[0] == 0x47 && pid == 0x100 && !pes_start && !adaptation {
            packet[40..160].fill(0xa5);
            corrupted += 1;
        }
    }
    std::fs::write(path, ts).unwrap();
    corrupted
}

#[test]
fn a_corrupted_stretch_and_a_size_change_within_one_publish_keep_the_renditions_going() {
    let server = Server::start("");
    let camera = free_port();
    server.apply_rules(&format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {rtmp}}}]}},
 "Delivery": {{"outputs": ["HLS"], "segment_duration_secs": 2}},
 "Cameras": [{{"id": "cam", "ip": "127.0.0.1", "port": {camera}, "protocol": "udp", "app": "live", "stream": "cam"}}],
 "Transcoding": {{"ladders": [{{"app": "live", "renditions": [
   {{"name": "low", "width": 426, "height": 240, "video_bitrate": 300, "preset": "ultrafast"}}]}}]}}}}"#,
        rtmp = server.ports.rtmp
    ));
    let small = server.path("small.ts");
    let large = server.path("large.ts");
    ts_clip(&small, "640x360", 14);
    ts_clip(&large, "1280x720", 40);
    assert!(corrupt_video(&small) > 20, "too little to corrupt");
    let list = server.path("clips.txt");
    std::fs::write(
        &list,
        format!("file '{}'\nfile '{}'\n", small.display(), large.display()),
    )
    .unwrap();
    // One publish: the two clips back to back on one continuous timeline.
    let _sender = ffmpeg(&format!(
        "-hide_banner -loglevel error -re -f concat -safe 0 -i {} -c copy -f mpegts \
         udp://127.0.0.1:{camera}?pkt_size=1316",
        list.display()
    ));
    let rtmp = format!("rtmp://127.0.0.1:{}/live/cam_low", server.ports.rtmp);
    wait_for(LIVE, "the rendition of the 640x360 part", || {
        (probe(&rtmp).0 == "426,240").then_some(())
    })
    .unwrap_or_else(|| panic!("no rendition\n{}", server.log()));
    wait_live(&server, "live", "cam", LIVE).unwrap_or_else(|| panic!("{}", server.log()));
    wait_for(LIVE, "the source at 1280x720", || {
        let entry = wait_live(&server, "live", "cam", Duration::from_secs(1))?;
        (entry["resolution"] == "1280x720").then_some(())
    })
    .unwrap_or_else(|| panic!("the source never changed size\n{}", server.log()));
    let frames = || {
        let (_, list) = server.get("/manage/transcodes");
        list[0]["renditions"][0]["frames"].as_u64().unwrap_or(0)
    };
    let at_change = frames();
    wait_for(LIVE, "rendition frames of the 1280x720 part", || {
        (frames() > at_change + 90).then_some(())
    })
    .unwrap_or_else(|| panic!("the rendition stopped after the change\n{}", server.log()));
    assert_eq!(probe(&rtmp).0, "426,240", "the rendition keeps its size");
    let (_, list) = server.get("/manage/transcodes");
    assert_eq!(list[0]["state"], "running", "{list}");
    let complaints = server
        .log()
        .lines()
        .filter(|l| l.contains("transcoder ffmpeg says") && l.contains("live/cam"))
        .count();
    assert!(
        complaints > 0,
        "ffmpeg's decoding errors are not in the log\n{}",
        server.log()
    );
}
