//! Icecast sources and the DVR (radio archives): an AAC and an MP3 source are both
//! recorded. The MP3 archive plays back over HLS (MPEG-TS with MPEG audio, stream type
//! 0x03) in ffmpeg, VLC and hls.js in Chromium, and exports as an MP4 (an `mp4a` sample
//! entry of object type 0x6B) that ffmpeg and VLC decode; the AAC one exports as AAC.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::browser::{playback_problems, require_browser, run_script, serve_player};
use common::media::{Proc, ffmpeg, ffprobe};
use common::vlc::run_cvlc;
use common::{Server, curl, curl_text, free_port, wait_for};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(40);
const PASSWORD: &str = "hackme";

/// ffmpeg sending a live sine to `mount` as an Icecast source, coded by `encoder` in
/// `format` as `content_type`.
fn source(server: &Server, mount: &str, encoder: &str, format: &str, content_type: &str) -> Proc {
    ffmpeg(&format!(
        "-hide_banner -loglevel error -re -f lavfi -i sine=frequency=440:sample_rate=44100 \
         -c:a {encoder} -b:a 128k -t 120 -content_type {content_type} -f {format} \
         icecast://source:{PASSWORD}@127.0.0.1:{}{mount}",
        server.ports.http
    ))
}

fn archive(server: &Server, stream: &str) -> Option<Value> {
    let (status, list) = server.get(&format!("/manage/dvr_status/radio/{stream}"));
    assert_eq!(status, 200, "{list}");
    list.as_array()?.first().cloned()
}

/// The first media playlist of `master` (under `radio/<stream>/`) once it lists
/// `min` segments.
fn dvr_playlist(server: &Server, stream: &str, master: &str, min: usize) -> String {
    let base = format!("http://127.0.0.1:{}/radio/{stream}", server.ports.http);
    let fetch = || {
        let (status, body) = curl_text(&format!("{base}/{master}"));
        let media = body
            .lines()
            .find(|l| !l.starts_with('#') && !l.is_empty())?
            .to_owned();
        (status == 200).then_some(())?;
        let (status, media) = curl_text(&format!("{base}/{media}"));
        (status == 200 && media.matches("#EXTINF").count() >= min).then_some(media)
    };
    wait_for(LIVE, "DVR segments", fetch)
        .unwrap_or_else(|| panic!("no {master} with {min} segments\n{}", server.log()))
}

/// ffmpeg decodes `input_args` (`-i <input>` and options) to raw audio without an
/// error or warning, and at least 4 s of 44.1 kHz 16-bit audio comes out.
fn decodes_without_error(input_args: &[&str]) {
    let decoded = Command::new("ffmpeg")
        .args(["-hide_banner", "-v", "warning"])
        .args(input_args)
        .args(["-f", "s16le", "-"])
        .output()
        .unwrap();
    assert!(
        decoded.status.success() && decoded.stderr.is_empty(),
        "ffmpeg {input_args:?}: {}",
        String::from_utf8_lossy(&decoded.stderr)
    );
    assert!(
        decoded.stdout.len() >= 4 * 44_100 * 2,
        "{} bytes from {input_args:?}",
        decoded.stdout.len()
    );
}

#[test]
fn icecast_aac_and_mp3_are_recorded_and_play_back() {
    require_browser(&["hls.js/dist/hls.min.js"]);
    let page_port = free_port();
    let page_origin = format!("http://127.0.0.1:{page_port}");
    let mut server = Server::prepare(&format!("access_control_allow_origin = {page_origin}"));
    std::fs::write(
        server.path("rules.conf"),
        format!(
            r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
 "Delivery": {{"outputs": ["ICECAST", "DVR"]}},
 "Dvr": {{"segment_duration_secs": 2, "min_free_space_mb": 0}},
 "IcecastSources": [{{"app": "radio", "password": "{PASSWORD}"}}]}}"#,
            server.ports.rtmp
        ),
    )
    .unwrap();
    server.spawn();
    server.wait_ready();
    serve_player(page_port);
    let mut aac = source(&server, "/radio/aac", "aac", "adts", "audio/aac");
    let mut mp3 = source(&server, "/radio/mp3", "libmp3lame", "mp3", "audio/mpeg");

    let recorded = wait_for(LIVE, "the AAC source recorded", || {
        archive(&server, "aac").filter(|a| a["size"].as_i64().unwrap_or(0) > 0)
    });
    assert!(
        recorded.is_some(),
        "AAC: {}\n{}",
        aac.stop_and_stderr(),
        server.log()
    );
    let work = tempfile::tempdir().unwrap();
    let export = |stream: &str| {
        let mp4 = work.path().join(format!("{stream}.mp4"));
        let (status, _) = curl(&[
            "-o",
            mp4.to_str().unwrap(),
            &server.url(&format!("/manage/dvr/export_mp4/radio/{stream}")),
        ]);
        assert_eq!(status, 200, "{}", server.log());
        mp4.to_str().unwrap().to_owned()
    };
    let codec =
        |path: &str| ffprobe(&["-show_entries", "stream=codec_name", "-of", "csv=p=0", path]);
    assert_eq!(codec(&export("aac")).trim(), "aac", "{}", server.log());

    // MP3 over HLS from the archive: three segments listed, MPEG audio in MPEG-TS.
    let playlist = dvr_playlist(&server, "mp3", "playlist_dvr.m3u8", 3);
    assert!(mp3.running(), "{}", mp3.stop_and_stderr());
    let status =
        archive(&server, "mp3").unwrap_or_else(|| panic!("no MP3 archive\n{}", server.log()));
    assert!(status["size"].as_i64().unwrap_or(0) > 0, "{status}");
    let hls = format!(
        "http://127.0.0.1:{}/radio/mp3/playlist_dvr.m3u8",
        server.ports.http
    );
    let probed = ffprobe(&[
        "-show_entries",
        "stream=codec_name,sample_rate",
        "-of",
        "csv=p=0",
        &hls,
    ]);
    // (ffprobe prints the program's stream and the stream itself.)
    let streams: Vec<&str> = probed.lines().filter(|l| !l.is_empty()).collect();
    assert!(
        !streams.is_empty() && streams.iter().all(|s| *s == "mp3,44100"),
        "{probed}\n{playlist}"
    );
    // ffmpeg decodes 4 s of it without an error.
    decodes_without_error(&["-i", &hls, "-t", "4"]);

    // The MP4 export: MP3 in `mp4a`, which ffmpeg decodes to the end without an error.
    let mp4 = export("mp3");
    assert_eq!(codec(&mp4).trim(), "mp3", "{}", server.log());
    let tag = ffprobe(&[
        "-show_entries",
        "stream=codec_tag_string",
        "-of",
        "csv=p=0",
        &mp4,
    ]);
    assert_eq!(tag.trim(), "mp4a");
    decodes_without_error(&["-i", &mp4]);

    // VLC decodes the export and the HLS playback to a file (its audio file output).
    let home = tempfile::tempdir().unwrap();
    std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::set_permissions(work.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::set_permissions(&mp4, std::fs::Permissions::from_mode(0o644)).unwrap();
    for (name, input) in [("export", mp4.as_str()), ("hls", hls.as_str())] {
        let out = work.path().join(format!("vlc_{name}.raw"));
        let out_arg = format!("--audiofile-file={}", out.display());
        let mut vlc = run_cvlc(
            home.path(),
            &["--aout", "afile", &out_arg, "--play-and-exit", input],
        );
        let decoded = wait_for(Duration::from_secs(30), "VLC's audio", || {
            let len = std::fs::metadata(&out).map_or(0, |m| m.len());
            (len >= 2 * 44_100 * 2).then_some(len)
        });
        let stderr = vlc.stop_and_stderr();
        assert!(decoded.is_some(), "VLC decoded no 2 s of {name}: {stderr}");
    }

    // hls.js in Chromium plays the archive from another origin.
    let page = format!("{page_origin}/index.html?src={hls}");
    let shot = work.path().join("mp3.png");
    let result = run_script("play.mjs", &[&page, &shot.to_string_lossy()], 90)
        .unwrap_or_else(|e| panic!("{e}"));
    let stream_origin = format!("http://127.0.0.1:{}", server.ports.http);
    let problems: Vec<String> = playback_problems(&result, 5.0, &stream_origin, &page_origin)
        .into_iter()
        .filter(|p| !p.starts_with("video is"))
        .collect();
    assert!(problems.is_empty(), "hls.js: {problems:?}\n{result}");
}
