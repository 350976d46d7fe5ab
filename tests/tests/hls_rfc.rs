//! HLS as RFC 8216 wants it, end to end with ffmpeg publishing over RTMP:
//! - a publisher whose keyframe spacing grows from 2 s to 3.3 s mid-stream: every
//!   chunklist served has the same `#EXT-X-TARGETDURATION` and no `#EXTINF` rounds above
//!   it (segments are cut between keyframes when a keyframe interval exceeds it);
//! - OBS's defaults (keyframes every 250 frames at 30 fps, B-frames) under the default
//!   6 s segment duration: every segment is one whole GOP starting with a keyframe, and
//!   `#EXT-X-TARGETDURATION` is 9 (the GOP rounded up) on every reload;
//! - a 10 s publish yields 10 s of HLS (the last partial segment is flushed), the
//!   playlist ends with `#EXT-X-ENDLIST` once the stream is gone for good (the DASH
//!   manifest gets its `mediaPresentationDuration`), and a new publish then starts a
//!   new playlist.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{Proc, ffprobe, rtmp_url};
use common::{Server, require_tool, wait_for};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const LIVE: Duration = Duration::from_secs(40);

/// A server whose streams are HLS and DASH with segments of `duration` seconds.
fn start(extra: &str, duration: u32) -> Server {
    let mut server = Server::prepare(extra);
    std::fs::write(
        server.path("rules.conf"),
        format!(
            r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
 "Delivery": {{"outputs": ["HLS", "DASH"], "segment_duration_secs": {duration}}}}}"#,
            server.ports.rtmp
        ),
    )
    .unwrap();
    server.spawn();
    server.wait_ready();
    server
}

/// ffmpeg publishing H.264 + AAC for `seconds`, keyframes where `keyframes` (an
/// ffmpeg `-force_key_frames` expression) says and nowhere else.
fn publish(url: &str, seconds: u32, keyframes: &str) -> Proc {
    require_tool("ffmpeg", "ffmpeg");
    let child = Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-re"])
        .args(["-f", "lavfi", "-i", "testsrc=size=320x240:rate=25"])
        .args(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100"])
        .args([
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-tune",
            "zerolatency",
        ])
        .args(["-g", "1000", "-sc_threshold", "0", "-pix_fmt", "yuv420p"])
        .args(["-force_key_frames", keyframes])
        .args(["-c:a", "aac", "-b:a", "64k", "-t", &seconds.to_string()])
        .args(["-f", "flv", url])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    Proc(child)
}

fn text(url: &str) -> (u16, String) {
    require_tool("curl", "curl");
    let output = Command::new("curl")
        .args(["-sS", "--max-time", "10", "-w", "\n%{http_code}", url])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_owned())
}

/// The chunklist URLs (TS and fMP4) of `app/stream`, once its masters answer.
fn chunklists(server: &Server, path: &str) -> Vec<String> {
    let base = format!("http://127.0.0.1:{}/{path}", server.ports.http);
    ["playlist.m3u8", "playlist_fmp4.m3u8"]
        .iter()
        .map(|master| {
            wait_for(LIVE, "master playlist", || {
                let (status, body) = text(&format!("{base}/{master}"));
                let uri = body.lines().find(|l| l.starts_with("chunks"))?;
                (status == 200).then(|| format!("{base}/{uri}"))
            })
            .unwrap_or_else(|| panic!("no {master}; log:\n{}", server.log()))
        })
        .collect()
}

fn tag<'a>(playlist: &'a str, name: &str) -> Option<&'a str> {
    playlist.lines().find_map(|l| l.strip_prefix(name))
}

/// The `#EXTINF` durations of a media playlist, by segment URI (without the query).
fn extinfs(playlist: &str) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    let mut lines = playlist.lines();
    while let Some(line) = lines.next() {
        if let Some(value) = line.strip_prefix("#EXTINF:") {
            let duration: f64 = value.trim_end_matches(',').parse().unwrap();
            let uri = lines.next().unwrap_or_default();
            out.push((uri.split('?').next().unwrap().to_owned(), duration));
        }
    }
    out
}

#[test]
fn target_duration_holds_when_the_keyframe_interval_grows() {
    let server = start("", 2);
    // Keyframes every 2 s for 12 s, then every 3.3 s (longer than the target duration).
    let keyframes = "expr:if(lt(t,12),gte(t,n_forced*2),gte(t,12+(n_forced-6)*3.3))";
    let mut publisher = publish(&rtmp_url(&server, "live/gop"), 34, keyframes);
    let urls = chunklists(&server, "live/gop");
    let began = Instant::now();
    let mut targets = std::collections::BTreeSet::new();
    let mut segments = std::collections::BTreeMap::new();
    let mut served = 0;
    let mut dependent_seen = false;
    while publisher.running() && began.elapsed() < Duration::from_secs(60) {
        for url in &urls {
            let (status, playlist) = text(url);
            if status != 200 {
                continue;
            }
            served += 1;
            let target = tag(&playlist, "#EXT-X-TARGETDURATION:")
                .unwrap_or_else(|| panic!("no target duration:\n{playlist}"));
            targets.insert(target.parse::<u32>().unwrap());
            dependent_seen |= !playlist.contains("#EXT-X-INDEPENDENT-SEGMENTS");
            for (uri, duration) in extinfs(&playlist) {
                segments.insert(uri, duration);
            }
        }
        std::thread::sleep(Duration::from_millis(700));
    }
    let stderr = publisher.stop_and_stderr();
    assert!(served > 40, "only {served} chunklists served");
    assert_eq!(
        targets.len(),
        1,
        "EXT-X-TARGETDURATION changed: {targets:?}; log:\n{}",
        server.log()
    );
    let target = *targets.first().unwrap();
    assert_eq!(target, 2, "the configured segment duration");
    let too_long: Vec<_> = segments
        .iter()
        .filter(|(_, d)| d.round() as u32 > target)
        .collect();
    assert!(
        too_long.is_empty(),
        "segments over the target duration {target}: {too_long:?}"
    );
    // The 3.3 s interval did come, and was handled by cutting between keyframes.
    assert!(
        dependent_seen,
        "no segment was cut between keyframes; segments: {segments:?}; ffmpeg: {stderr}"
    );
    let ts = segments.keys().filter(|u| u.ends_with(".ts")).count();
    assert!(ts >= 14, "{segments:?}");
}

#[test]
fn a_ten_second_publish_yields_ten_seconds_and_then_an_endlist() {
    // ENDLIST comes halfway through the grace time.
    let server = start("hls_stream_grace = 12", 4);
    let mut publisher = publish(
        &rtmp_url(&server, "live/tail"),
        10,
        "expr:gte(t,n_forced*1)",
    );
    let urls = chunklists(&server, "live/tail");
    assert_eq!(
        publisher.wait_exit(LIVE),
        Some(0),
        "ffmpeg publishing failed"
    );
    for url in &urls {
        let playlist = wait_for(LIVE, "ENDLIST", || {
            let (status, playlist) = text(url);
            (status == 200 && playlist.contains("#EXT-X-ENDLIST")).then_some(playlist)
        })
        .unwrap_or_else(|| panic!("no ENDLIST at {url}; log:\n{}", server.log()));
        assert!(playlist.ends_with("#EXT-X-ENDLIST\n"), "{playlist}");
        let total: f64 = extinfs(&playlist).iter().map(|(_, d)| d).sum();
        assert!(
            (9.5..=10.6).contains(&total),
            "{total:.3} s of HLS from a 10 s publish:\n{playlist}"
        );
    }
    // Ended, the playlist reads as a whole presentation of 10 s.
    let master = format!(
        "http://127.0.0.1:{}/live/tail/playlist_fmp4.m3u8",
        server.ports.http
    );
    let duration: f64 = ffprobe(&[
        "-show_entries",
        "format=duration",
        "-of",
        "csv=p=0",
        &master,
    ])
    .trim()
    .parse()
    .unwrap_or_else(|e| panic!("ffprobe gave no duration ({e}); log:\n{}", server.log()));
    assert!((9.5..=10.6).contains(&duration), "ffprobe: {duration} s");
    // The DASH manifest says the presentation is over.
    let (status, mpd) = text(&format!(
        "http://127.0.0.1:{}/live/tail/manifest.mpd",
        server.ports.http
    ));
    assert_eq!(status, 200, "{mpd}");
    assert!(
        mpd.contains("mediaPresentationDuration=") && !mpd.contains("minimumUpdatePeriod"),
        "{mpd}"
    );
    let (_, ended) = text(&urls[0]);
    let last_sequence: u64 = tag(&ended, "#EXT-X-MEDIA-SEQUENCE:")
        .unwrap()
        .parse()
        .unwrap();

    // Back after the playlist ended: a new playlist, numbered on.
    let _again = publish(
        &rtmp_url(&server, "live/tail"),
        30,
        "expr:gte(t,n_forced*1)",
    );
    let fresh = wait_for(LIVE, "a new playlist", || {
        let (status, playlist) = text(&urls[0]);
        (status == 200 && !playlist.contains("#EXT-X-ENDLIST")).then_some(playlist)
    })
    .unwrap_or_else(|| panic!("no new playlist; log:\n{}", server.log()));
    assert!(!fresh.contains("#EXT-X-DISCONTINUITY\n"), "{fresh}");
    let sequence: u64 = tag(&fresh, "#EXT-X-MEDIA-SEQUENCE:")
        .unwrap()
        .parse()
        .unwrap();
    assert!(sequence > last_sequence, "{ended}\n{fresh}");
}

/// The first video packet's flags in each of `uris` (TS segments under `base`).
fn first_video_flags(base: &str, uri: &str) -> String {
    let probed = ffprobe(&[
        "-select_streams",
        "v:0",
        "-show_entries",
        "packet=flags",
        "-read_intervals",
        "%+#1",
        "-of",
        "csv=p=0",
        &format!("{base}/{uri}"),
    ]);
    probed.lines().next().unwrap_or_default().to_owned()
}

#[test]
fn obs_default_keyframes_make_whole_gop_segments() {
    let server = start("", 6);
    // OBS "0 (auto)": x264 with a 250-frame keyframe interval at 30 fps, B-frames.
    let mut publisher = common::media::ffmpeg(&format!(
        "-hide_banner -loglevel error -re -f lavfi -i testsrc=size=320x240:rate=30 \
         -f lavfi -i sine=frequency=440:sample_rate=44100 -c:v libx264 -preset ultrafast \
         -g 250 -bf 2 -r 30 -pix_fmt yuv420p -c:a aac -b:a 64k -t 60 -f flv {}",
        rtmp_url(&server, "live/obs")
    ));
    let urls = chunklists(&server, "live/obs");
    let base = format!("http://127.0.0.1:{}/live/obs", server.ports.http);
    let mut targets = std::collections::BTreeSet::new();
    let mut segments = std::collections::BTreeMap::new();
    let mut reloads = 0;
    let began = Instant::now();
    while segments.len() < 8 && began.elapsed() < Duration::from_secs(70) {
        for url in &urls {
            let (status, playlist) = text(url);
            if status != 200 {
                continue;
            }
            reloads += 1;
            let target = tag(&playlist, "#EXT-X-TARGETDURATION:")
                .unwrap_or_else(|| panic!("no target duration:\n{playlist}"));
            targets.insert(target.parse::<u32>().unwrap());
            assert!(
                playlist.contains("#EXT-X-INDEPENDENT-SEGMENTS"),
                "{playlist}"
            );
            for (uri, duration) in extinfs(&playlist) {
                segments.insert(uri, duration);
            }
        }
        std::thread::sleep(Duration::from_millis(1000));
    }
    let stderr = publisher.stop_and_stderr();
    assert!(reloads > 20, "only {reloads} reloads; ffmpeg: {stderr}");
    assert_eq!(
        targets.into_iter().collect::<Vec<_>>(),
        vec![9],
        "EXT-X-TARGETDURATION over {reloads} reloads; log:\n{}",
        server.log()
    );
    let ts: Vec<_> = segments
        .iter()
        .filter(|(u, _)| u.ends_with(".ts"))
        .collect();
    assert!(ts.len() >= 4, "{segments:?}");
    for (uri, duration) in &ts {
        // One GOP each: 250 frames, 8.33 s.
        assert!(
            (8.2..8.5).contains(*duration),
            "{uri}: {duration} s; segments: {segments:?}"
        );
        let flags = first_video_flags(&base, uri);
        assert!(
            flags.starts_with('K'),
            "{uri} starts with a {flags:?} packet"
        );
    }
}
