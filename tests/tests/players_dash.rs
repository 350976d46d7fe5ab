//! Mainstream players on strom's live DASH (issue 32): VLC and GStreamer join a fresh
//! stream and go on decoding it over more than three segments. VLC stopped after two
//! segments once; GStreamer 1.22's dashdemux decoded nothing while
//! `availabilityStartTime` was 1970 (it joins a live timeline at about twice the time
//! since `availabilityStartTime`). At the shipped 6 s segments (issue 45), VLC plays DASH
//! on with each representation's fragments numbered without gaps, and remuxes HLS fMP4
//! (how VLC records or restreams). No latency bound: only that frames come, and keep
//! coming. (dash.js and Shaka: tests/tests/browser.rs; ffmpeg: tests/tests/dash.rs.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{ffprobe, publish, rtmp_url};
use common::vlc::run_cvlc;
use common::{Server, require_tool, wait_for};
use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(40);
/// Frames of more than three 2 s segments of the 25 fps test source.
const FRAMES: usize = 3 * 2 * 25 + 1;

/// A server delivering HLS and DASH in 2 s segments, with `live/p` published and its
/// manifest listing a segment; the manifest's URL.
fn start_published() -> (Server, common::media::Proc, String) {
    start_published_with(2, 1)
}

/// [`start_published`] with `segment_secs` segments, once the manifest lists `segments`.
fn start_published_with(
    segment_secs: u32,
    segments: usize,
) -> (Server, common::media::Proc, String) {
    start_published_addressed(segment_secs, segments, "timeline")
}

/// [`start_published_with`] with `dash_segment_addressing` set to `addressing`.
fn start_published_addressed(
    segment_secs: u32,
    segments: usize,
    addressing: &str,
) -> (Server, common::media::Proc, String) {
    let mut server = Server::prepare("");
    let mut rules = common::delivery_rules(server.ports.rtmp, &["HLS", "DASH"], segment_secs);
    rules["Delivery"]["dash_segment_addressing"] = addressing.into();
    std::fs::write(server.path("rules.conf"), rules.to_string()).unwrap();
    server.spawn();
    server.wait_ready();
    let publisher = publish(&rtmp_url(&server, "live/p"));
    let url = format!("http://127.0.0.1:{}/live/p/manifest.mpd", server.ports.http);
    require_tool("curl", "curl");
    wait_for(LIVE, "a DASH manifest", || {
        let out = Command::new("curl")
            .args(["-sf", "--max-time", "5", &url])
            .output()
            .ok()?;
        // The video's timeline: one `<S` per segment (its audio lists as many). A
        // number-addressed manifest has no timeline: any manifest will do.
        let text = String::from_utf8_lossy(&out.stdout);
        let listed = text.matches("<S ").count() / 2;
        (listed >= segments || (addressing == "number" && text.contains(" duration=\"")))
            .then_some(())
    })
    .unwrap_or_else(|| panic!("no manifest; log:\n{}", server.log()));
    (server, publisher, url)
}

/// At the shipped 6 s segments, with the manifest three segments long (VLC joins behind
/// the newest): VLC plays on, and each DASH representation's fragments are numbered
/// without gaps. The muxed fMP4 segment numbers its video and audio fragments one after
/// the other (HLS reads both); served as they were, a representation counted 1, 3, 5 and
/// VLC logged a "Fragment sequence discontinuity" and rebased its clock on every segment.
/// Played by wall clock, not `--run-time`: VLC's run time is input time, which for a
/// live window starts at the window's first segment, not where VLC joined (that is what
/// made VLC seem to stop after 3 s at 6 s segments).
#[test]
fn vlc_plays_live_dash_at_six_second_segments_with_unbroken_fragment_numbers() {
    let (server, _publisher, url) = start_published_with(6, 3);
    let (home, out, sout) = vlc_recording();
    let mut vlc = run_cvlc(home.path(), &["-vv", &url, "--sout", &sout]);
    // 20 s of wall clock: VLC is expected to be still playing.
    let exit = vlc.wait_exit(Duration::from_secs(20));
    let stderr = vlc.stop_and_stderr();
    assert!(
        exit.is_none(),
        "VLC stopped: {stderr}\nlog:\n{}",
        server.log()
    );
    // VLC expects the first fragment to be numbered 0, whatever the stream: one line at
    // the start is VLC's, any further one a gap in a representation's numbers.
    let gaps: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("Fragment sequence discontinuity"))
        .collect();
    assert!(
        gaps.len() <= 2,
        "fragment numbers with gaps (video and audio may each log their first): {gaps:?}"
    );
    let frames = video_frames(&out);
    // Over 6 s of the 25 fps source in 20 s of playing: generous for a busy machine.
    assert!(
        frames > 6 * 25,
        "VLC played {frames} frames: {stderr}\nlog:\n{}",
        server.log()
    );
}

#[test]
fn vlc_plays_live_dash_on() {
    let (server, _publisher, url) = start_published();
    let (home, out, sout) = vlc_recording();
    let mut vlc = run_cvlc(
        home.path(),
        &["--play-and-exit", "--run-time", "20", &url, "--sout", &sout],
    );
    let exit = vlc.wait_exit(Duration::from_secs(60));
    let stderr = vlc.stop_and_stderr();
    assert!(exit.is_some(), "VLC still running: {stderr}");
    assert!(
        out.exists(),
        "VLC wrote nothing: {stderr}\nlog:\n{}",
        server.log()
    );
    // Decoded by ffprobe: frames of over three segments.
    let frames = video_frames(&out);
    assert!(
        frames >= FRAMES,
        "VLC played {frames} frames: {stderr}\nlog:\n{}",
        server.log()
    );
}

/// VLC remuxing HLS fMP4 to MPEG-TS (`--sout '#std{...mux=ts...}'`) at the shipped 6 s
/// segments, joining a stream three segments old: it writes the stream for as long as it
/// runs. With `--run-time 20` it had written nothing and exited at once: VLC's run time
/// is input time, and the fMP4 timestamps of a stream joined late are already past 20 s
/// (ffmpeg's own fMP4 HLS joined late also ends VLC within a second).
#[test]
fn vlc_remuxes_hls_fmp4_at_six_second_segments() {
    let (server, _publisher, manifest) = start_published_with(6, 3);
    let url = manifest.replace("manifest.mpd", "playlist_fmp4.m3u8");
    let (home, out, sout) = vlc_recording();
    let mut vlc = run_cvlc(home.path(), &[&url, "--sout", &sout]);
    let exit = vlc.wait_exit(Duration::from_secs(15));
    let stderr = vlc.stop_and_stderr();
    assert!(
        exit.is_none(),
        "VLC stopped: {stderr}\nlog:\n{}",
        server.log()
    );
    let frames = video_frames(&out);
    assert!(
        frames > 5 * 25,
        "VLC remuxed {frames} frames: {stderr}\nlog:\n{}",
        server.log()
    );
}

/// A home for VLC (writable by the user it runs as), the file it records to, and the
/// `--sout` that records there as VLC's demuxer hands the stream on: what it played,
/// without a display.
fn vlc_recording() -> (tempfile::TempDir, std::path::PathBuf, String) {
    let home = tempfile::tempdir().unwrap();
    std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = home.path().join("out.ts");
    let sout = format!("#std{{access=file,mux=ts,dst={}}}", out.display());
    (home, out, sout)
}

/// The video frames ffprobe decodes in the file at `path` (0 when it reads none).
fn video_frames(path: &std::path::Path) -> usize {
    ffprobe(&[
        "-v",
        "error",
        "-count_frames",
        "-select_streams",
        "v:0",
        "-show_entries",
        "stream=nb_read_frames",
        "-of",
        "csv=p=0",
        path.to_str().unwrap(),
    ])
    .lines()
    .find_map(|l| l.trim().trim_end_matches(',').parse().ok())
    .unwrap_or(0)
}

/// `pts: H:MM:SS.NNNNNNNNN` of a fakesink's `last-message` line, in seconds.
fn pts_secs(line: &str) -> Option<f64> {
    let pts = line.split("pts: ").nth(1)?.split([',', ' ', ')']).next()?;
    let mut parts = pts.split(':');
    let (h, m, s) = (parts.next()?, parts.next()?, parts.next()?);
    Some(h.parse::<f64>().ok()? * 3600.0 + m.parse::<f64>().ok()? * 60.0 + s.parse::<f64>().ok()?)
}

#[test]
fn gstreamer_plays_live_dash_on() {
    let (server, _publisher, url) = start_published();
    gstreamer_decodes(&server, &url);
}

/// GStreamer 1.22's dashdemux joins a live `SegmentTimeline` behind the window of a
/// stream older than it (its seek formula adds the first listed segment's start to the
/// stream's age) and decodes nothing once the stream is about two minutes old. With
/// `dash_segment_addressing` `number` (`SegmentTemplate@duration`, no timeline) it
/// computes the segment from the clock and plays, at the shipped 6 s segments.
#[test]
fn gstreamer_joins_a_two_minute_old_stream_by_segment_number() {
    let (server, _publisher, url) = start_published_addressed(6, 1, "number");
    let published = std::time::Instant::now();
    let manifest = Command::new("curl").args(["-sf", &url]).output().unwrap();
    let manifest = String::from_utf8_lossy(&manifest.stdout);
    assert!(
        manifest.contains(" duration=\"540000\"/>") && !manifest.contains("<SegmentTimeline>"),
        "{manifest}"
    );
    std::thread::sleep(Duration::from_secs(120).saturating_sub(published.elapsed()));
    gstreamer_decodes(&server, &url);
}

/// GStreamer's `playbin` on `url` for 25 s decodes frames of more than three 2 s
/// segments' worth, over at least 6 s of media.
fn gstreamer_decodes(server: &Server, url: &str) {
    require_tool(
        "gst-launch-1.0",
        "gstreamer1.0-tools gstreamer1.0-plugins-good gstreamer1.0-plugins-bad gstreamer1.0-libav",
    );
    // playbin picks dashdemux, qtdemux and the decoders; the video sink reports each
    // decoded frame (`-v` prints its last-message).
    let output = Command::new("timeout")
        .args(["25", "gst-launch-1.0", "-v", "playbin"])
        .arg(format!("uri={url}"))
        .arg("video-sink=fakesink name=vsink sync=true silent=false")
        .arg("audio-sink=fakesink sync=true")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let frames: Vec<f64> = stdout
        .lines()
        .filter(|l| l.contains("vsink: last-message = chain"))
        .filter_map(pts_secs)
        .collect();
    let span = frames.iter().copied().fold(f64::NAN, f64::max)
        - frames.iter().copied().fold(f64::NAN, f64::min);
    assert!(
        frames.len() >= FRAMES && span >= 6.0,
        "GStreamer decoded {} frames over {span} s:\n{}\n{}\nlog:\n{}",
        frames.len(),
        stdout.lines().rev().take(20).collect::<Vec<_>>().join("\n"),
        String::from_utf8_lossy(&output.stderr),
        server.log()
    );
}
