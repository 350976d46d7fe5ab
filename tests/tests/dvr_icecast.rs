//! Icecast sources and the DVR: an AAC source is recorded (its archive grows and
//! exports as AAC), an MP3 source, which the archive cannot hold (its segments are muxed
//! as MPEG-TS/fMP4 from H.264, H.265 and AAC only), is refused out loud: a warning
//! naming the stream and the codec, and no archive at all instead of an empty one.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{Proc, ffmpeg, ffprobe};
use common::{Server, curl, wait_for};
use serde_json::Value;
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

#[test]
fn icecast_aac_is_recorded_and_mp3_is_refused_out_loud() {
    let server = Server::start("");
    server.apply_rules(&format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
 "Delivery": {{"outputs": ["ICECAST", "DVR"]}},
 "Dvr": {{"segment_duration_secs": 2, "min_free_space_mb": 0}},
 "IcecastSources": [{{"app": "radio", "password": "{PASSWORD}"}}]}}"#,
        server.ports.rtmp
    ));
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
    let mp4 = work.path().join("aac.mp4");
    let (status, _) = curl(&[
        "-o",
        mp4.to_str().unwrap(),
        &server.url("/manage/dvr/export_mp4/radio/aac"),
    ]);
    assert_eq!(status, 200, "{}", server.log());
    let streams = ffprobe(
        &["-show_entries", "stream=codec_name", "-of", "csv=p=0"]
            .into_iter()
            .chain([mp4.to_str().unwrap()])
            .collect::<Vec<_>>(),
    );
    assert_eq!(streams.trim(), "aac", "{}", server.log());

    let warned = wait_for(LIVE, "the MP3 refusal", || {
        let log = server.log();
        log.lines()
            .find(|l| {
                l.contains("WARN") && l.contains("DVR cannot record") && l.contains("radio/mp3")
            })
            .map(str::to_owned)
    })
    .unwrap_or_else(|| panic!("MP3: {}\n{}", mp3.stop_and_stderr(), server.log()));
    assert!(warned.contains("Mp3"), "{warned}");
    assert!(mp3.running(), "{}", mp3.stop_and_stderr());
    assert_eq!(archive(&server, "mp3"), None, "no empty MP3 archive");
    let (_, all) = server.get("/manage/dvr_status");
    assert!(!all.to_string().contains("\"mp3\""), "{all}");
}
