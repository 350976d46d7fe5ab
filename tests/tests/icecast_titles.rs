//! Icecast titles as timed metadata, end to end: `icecast_metadata` on an RTMP stream
//! (H.264 + AAC, `HLS` and `ICECAST` delivery) puts the title into the stream at the
//! rtmp worker, so an RTMP player (ffprobe) sees a `StreamTitle` format tag (and no extra
//! stream), new HLS TS segments carry it as a `timed_id3` stream (the tag's bytes in the
//! segment), fMP4 segments as an ID3 `emsg` box, Icecast listeners get it in their ICY
//! blocks and `icecast_stream_info` reports it. A later title replaces it everywhere;
//! unknown streams are 404 and bad bodies 400.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{ffprobe, publish, rtmp_url, wait_live};
use common::{Server, wait_for};
use std::process::Command;
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(40);

fn http_bytes(server: &Server, path: &str, extra: &[&str]) -> Option<Vec<u8>> {
    let output = Command::new("curl")
        .args(["-s", "--max-time", "10"])
        .args(extra)
        .arg(format!("http://127.0.0.1:{}/{path}", server.ports.http))
        .output()
        .ok()?;
    // curl ends endless responses (Icecast) at --max-time: keep what came.
    (!output.stdout.is_empty()).then_some(output.stdout)
}

fn http_text(server: &Server, path: &str) -> Option<String> {
    http_bytes(server, path, &["-f"]).map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// The URIs of the TS media playlist's segments, oldest first.
fn segments(server: &Server) -> Vec<String> {
    segments_of(server, "playlist.m3u8")
}

/// The segment URIs of the media playlist that the multivariant `playlist` lists.
fn segments_of(server: &Server, playlist: &str) -> Vec<String> {
    let Some(master) = http_text(server, &format!("live/radio/{playlist}")) else {
        return Vec::new();
    };
    let Some(chunklist) = master
        .lines()
        .find(|l| !l.starts_with('#') && !l.is_empty())
    else {
        return Vec::new();
    };
    http_text(server, &format!("live/radio/{chunklist}"))
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The `StreamTitle` ffprobe reads from the RTMP stream's format tags.
fn rtmp_title(server: &Server) -> String {
    let url = rtmp_url(server, "live/radio");
    let out = ffprobe(&["-show_entries", "format_tags", "-of", "default", &url]);
    out.lines()
        .find_map(|l| l.strip_prefix("TAG:StreamTitle="))
        .unwrap_or_default()
        .to_owned()
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn titles_reach_rtmp_players_hls_and_icecast_listeners() {
    let server = Server::start("");
    server.apply_rules(&format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
 "Delivery": {{"outputs": ["HLS", "ICECAST"], "segment_duration_secs": 1}}}}"#,
        server.ports.rtmp
    ));
    let _publisher = publish(&rtmp_url(&server, "live/radio"));
    wait_live(&server, "live", "radio", LIVE).unwrap();
    wait_for(LIVE, "HLS segments", || {
        (!segments(&server).is_empty()).then_some(())
    })
    .unwrap_or_else(|| panic!("no HLS segments; log:\n{}", server.log()));

    // Errors: unknown stream, bad body.
    let (status, body) = server.post(
        "/manage/icecast_metadata/live/nothing",
        r#"{"streamtitle": "x"}"#,
    );
    assert_eq!(status, 404, "{body}");
    let (status, body) = server.post("/manage/icecast_metadata/live/radio", r#"{"title": 1}"#);
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("streamtitle"),
        "{body}"
    );

    let (status, body) = server.post(
        "/manage/icecast_metadata/live/radio",
        r#"{"streamtitle": "Song A", "streamurl": "https://radio.example"}"#,
    );
    assert_eq!(status, 200, "{body}");

    // (a) An RTMP player that joins now gets onMetaData with StreamTitle.
    let title = wait_for(LIVE, "StreamTitle over RTMP", || {
        Some(rtmp_title(&server)).filter(|t| t == "Song A")
    });
    assert!(
        title.is_some(),
        "ffprobe saw no StreamTitle=Song A over RTMP: {:?}\nlog:\n{}",
        rtmp_title(&server),
        server.log()
    );

    // Metadata only: no stream of its own (as a data message stamped later than 0
    // would make one, breaking `ffmpeg -c copy` into MP4).
    let streams = common::media::probe_streams(&rtmp_url(&server, "live/radio"));
    assert!(
        streams
            .iter()
            .all(|s| !s.starts_with("subtitle") && !s.starts_with("data")),
        "{streams:?}"
    );

    // (b) New HLS TS segments carry it as timed ID3.
    let before = segments(&server);
    let segment = wait_for(LIVE, "a new segment with the ID3 tag", || {
        let fresh: Vec<String> = segments(&server)
            .into_iter()
            .filter(|s| !before.contains(s))
            .collect();
        let uri = fresh.first()?;
        let bytes = http_bytes(&server, &format!("live/radio/{uri}"), &["-f"])?;
        contains(&bytes, b"Song A").then_some(bytes)
    })
    .unwrap_or_else(|| panic!("no segment with the title; log:\n{}", server.log()));
    assert!(
        contains(&segment, b"ID3\x04"),
        "an ID3v2.4 tag in the segment"
    );
    assert!(contains(&segment, b"TIT2"));
    assert!(contains(&segment, b"https://radio.example"));
    let path = server.path("titled.ts");
    std::fs::write(&path, &segment).unwrap();
    let probed = ffprobe(&[
        "-show_entries",
        "stream=codec_name",
        "-of",
        "default",
        path.to_str().unwrap(),
    ]);
    assert!(probed.contains("codec_name=timed_id3"), "{probed}");
    assert!(probed.contains("codec_name=h264"), "{probed}");

    // fMP4 segments carry it as an ID3 `emsg` box; ffmpeg still reads them cleanly.
    let fmp4 = wait_for(LIVE, "an fMP4 segment with the title", || {
        let uri = segments_of(&server, "playlist_fmp4.m3u8").pop()?;
        let bytes = http_bytes(&server, &format!("live/radio/{uri}"), &["-f"])?;
        contains(&bytes, b"Song A").then_some(bytes)
    })
    .unwrap_or_else(|| panic!("no fMP4 segment with the title; log:\n{}", server.log()));
    assert!(contains(&fmp4, b"emsg"));
    assert!(contains(&fmp4, b"https://aomedia.org/emsg/ID3"));
    let url = format!(
        "http://127.0.0.1:{}/live/radio/playlist_fmp4.m3u8",
        server.ports.http
    );
    let decoded = Command::new("timeout")
        .args(["30", "ffmpeg", "-hide_banner", "-nostdin", "-v", "error"])
        .args(["-i", &url, "-t", "2", "-f", "null", "-"])
        .output()
        .unwrap();
    let errors = String::from_utf8_lossy(&decoded.stderr);
    assert!(
        decoded.status.success() && errors.trim().is_empty(),
        "{errors}"
    );

    // (c) Icecast: listeners that ask get the title in their first block; the info
    // reports it.
    let icy = http_bytes(
        &server,
        "live/radio/icecast.stream",
        &["--max-time", "4", "-H", "Icy-MetaData: 1"],
    )
    .unwrap_or_default();
    assert!(
        contains(
            &icy,
            b"StreamTitle='Song A';StreamUrl='https://radio.example';"
        ),
        "{} bytes without the title",
        icy.len()
    );
    let (_, info) = server.get("/manage/icecast_stream_info/live/radio");
    assert_eq!(info["streamtitle"], "Song A", "{info}");

    // A new title replaces it everywhere.
    let (status, body) = server.post(
        "/manage/icecast_metadata/live/radio",
        r#"{"streamtitle": "Song B"}"#,
    );
    assert_eq!(status, 200, "{body}");
    wait_for(LIVE, "StreamTitle Song B over RTMP", || {
        Some(rtmp_title(&server)).filter(|t| t == "Song B")
    })
    .unwrap_or_else(|| panic!("RTMP still says {:?}", rtmp_title(&server)));
    wait_for(LIVE, "Song B in icecast_stream_info", || {
        let (_, info) = server.get("/manage/icecast_stream_info/live/radio");
        (info["streamtitle"] == "Song B").then_some(())
    })
    .unwrap();
}
