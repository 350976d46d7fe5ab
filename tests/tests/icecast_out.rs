//! Icecast listeners of an RTMP stream (H.264 + AAC, `ICECAST` among its delivery
//! outputs): `icecast.stream` is AAC with ICY headers (ffprobe's format tags);
//! `icecast_metadata` sets the title, which ffmpeg (it asks for metadata) logs and
//! `icecast_stream_info` reports; a listener that does not ask gets clean ADTS audio
//! without metadata blocks; listeners are sessions of type ICECAST.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{ffprobe, publish, rtmp_url, wait_live};
use common::{Server, wait_for};
use std::process::Command;
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(40);

#[test]
fn rtmp_audio_goes_out_as_icecast_with_icy_metadata() {
    let server = Server::start("");
    server.apply_rules(&format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
 "Delivery": {{"outputs": ["HLS", "ICECAST"], "segment_duration_secs": 1}}}}"#,
        server.ports.rtmp
    ));
    let _publisher = publish(&rtmp_url(&server, "live/radio"));
    wait_live(&server, "live", "radio", LIVE).unwrap();
    let url = format!(
        "http://127.0.0.1:{}/live/radio/icecast.stream",
        server.ports.http
    );
    let probed = wait_for(LIVE, "ffprobe reads icecast.stream", || {
        let out = ffprobe(&[
            "-show_entries",
            "stream=codec_name:format_tags",
            "-of",
            "default",
            &url,
        ]);
        out.contains("codec_name=aac").then_some(out)
    })
    .unwrap_or_else(|| panic!("no AAC from icecast.stream; log:\n{}", server.log()));
    assert!(probed.contains("TAG:icy-name=live/radio"), "{probed}");
    assert!(probed.contains("TAG:icy-br="), "{probed}");

    // The title: set through the API, logged by ffmpeg from the ICY blocks.
    let (status, body) = server.post(
        "/manage/icecast_metadata/live/radio",
        r#"{"streamtitle": "Song A", "streamurl": "https://radio.example"}"#,
    );
    assert_eq!(status, 200, "{body}");
    let output = Command::new("timeout")
        .args(["30", "ffmpeg", "-hide_banner", "-nostdin", "-v", "verbose"])
        .args(["-i", &url, "-t", "3", "-f", "null", "-"])
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(
        log.contains("Song A"),
        "ffmpeg did not log the title:\n{log}"
    );
    let (_, info) = server.get("/manage/icecast_stream_info/live/radio");
    assert_eq!(info["streamtitle"], "Song A", "{info}");
    assert_eq!(info["icy-name"], "live/radio", "{info}");
    assert!(info["icy-br"].is_u64(), "{info}");
    let (status, _) = server.get("/manage/icecast_stream_info/live/nothing");
    assert_eq!(status, 404);

    // Without Icy-MetaData: ADTS audio only, no metadata blocks.
    let raw = Command::new("curl")
        .args(["-s", "--max-time", "3", &url])
        .output()
        .unwrap()
        .stdout;
    assert!(raw.len() > 10_000, "{} bytes", raw.len());
    assert_eq!(
        (raw[0], raw[1] & 0xf0),
        (0xff, 0xf0),
        "starts with an ADTS sync word"
    );
    assert!(
        !raw.windows(11).any(|w| w == b"StreamTitle"),
        "a listener that did not ask got metadata"
    );

    // Listeners are sessions.
    let _listener = common::media::play(&url);
    wait_for(LIVE, "an ICECAST session", || {
        let (_, sessions) = server.get("/manage/sessions");
        sessions
            .as_array()?
            .iter()
            .any(|s| s["type"] == "ICECAST")
            .then_some(())
    })
    .unwrap_or_else(|| panic!("no ICECAST session; log:\n{}", server.log()));
}
