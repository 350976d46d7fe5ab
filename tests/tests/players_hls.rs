//! Players on strom's HLS outputs: VLC (`cvlc`) plays the fMP4 and the MPEG-TS master
//! playlists of a live stream (ffmpeg publishing over RTMP): recorded through `--sout`,
//! the recording decodes with ffprobe to frames of both tracks over a span that advanced
//! with the run. Bounds are generous (VLC's start-up and buffering vary).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{ffprobe, publish, rtmp_url};
use common::vlc::run_cvlc;
use common::{Server, require_tool, wait_for};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(40);

fn start() -> Server {
    let mut server = Server::prepare("");
    std::fs::write(
        server.path("rules.conf"),
        format!(
            r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
 "Delivery": {{"outputs": ["HLS"], "segment_duration_secs": 2}}}}"#,
            server.ports.rtmp
        ),
    )
    .unwrap();
    server.spawn();
    server.wait_ready();
    server
}

/// Frames ffprobe decodes in `path`'s first stream of `kind` (`v` or `a`).
fn frames(path: &Path, kind: &str) -> u64 {
    ffprobe(&[
        "-select_streams",
        &format!("{kind}:0"),
        "-count_frames",
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

fn duration(path: &Path) -> f64 {
    ffprobe(&[
        "-show_entries",
        "format=duration",
        "-of",
        "csv=p=0",
        path.to_str().unwrap(),
    ])
    .trim()
    .parse()
    .unwrap_or(0.0)
}

/// VLC records `master` for 20 s; the recording holds at least 8 s of video (25 fps) and
/// audio.
fn vlc_plays(server: &Server, master: &str) {
    let home = tempfile::tempdir().unwrap();
    std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = home.path().join("out.ts");
    let sout = format!("#std{{access=file,mux=ts,dst={}}}", out.display());
    let url = format!("http://127.0.0.1:{}/live/vlc/{master}", server.ports.http);
    let mut vlc = run_cvlc(
        home.path(),
        &["--play-and-exit", "--run-time", "20", &url, "--sout", &sout],
    );
    let code = vlc.wait_exit(Duration::from_secs(60));
    let log = vlc.stop_and_stderr();
    let (video, audio, seconds) = (frames(&out, "v"), frames(&out, "a"), duration(&out));
    assert!(
        video >= 200 && audio >= 300 && seconds >= 8.0,
        "{master}: VLC (exit {code:?}) recorded {video} video and {audio} audio frames, \
         {seconds} s\ncvlc: {}\n{}",
        log.lines().rev().take(40).collect::<Vec<_>>().join("\n"),
        server.log()
    );
}

#[test]
fn vlc_plays_hls_fmp4_and_ts() {
    require_tool("curl", "curl");
    let server = start();
    let _publisher = publish(&rtmp_url(&server, "live/vlc"));
    let chunklist = format!(
        "http://127.0.0.1:{}/live/vlc/chunks_fmp4.m3u8",
        server.ports.http
    );
    wait_for(LIVE, "three segments", || {
        let output = std::process::Command::new("curl")
            .args(["-sf", "--max-time", "10", &chunklist])
            .output()
            .ok()?;
        let body = String::from_utf8_lossy(&output.stdout);
        (body.matches("#EXTINF").count() >= 3).then_some(())
    })
    .unwrap_or_else(|| panic!("no playlist; log:\n{}", server.log()));
    vlc_plays(&server, "playlist_fmp4.m3u8");
    vlc_plays(&server, "playlist.m3u8");
}
