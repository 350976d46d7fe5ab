//! DVR playback end to end, independent of the recorder: an archive written with the
//! archive writer (two periods of real H.264+AAC, ten minutes apart) is served by the
//! packager of a real strom; ffmpeg plays `playlist_dvr.m3u8` (MPEG-TS) and
//! `playlist_fmp4_dvr.m3u8` over HTTP; range and timeshift playlists list the span they
//! name; the viewer session is listed and, once deleted, gets 403; a protected stream's
//! DVR playlists need a signature and its media the signed session.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::Server;
use std::process::Command;
use strom_media::dvr::{ArchiveWriter, testing};

/// Seconds between the starts of the two periods.
const GAP_SECS: i64 = 600;

fn http(server: &Server, path: &str) -> String {
    format!("http://127.0.0.1:{}/{path}", server.ports.http)
}

/// GET with curl: the status and the body.
fn get(url: &str) -> (u16, String) {
    common::require_tool("curl", "curl");
    let output = Command::new("curl")
        .args(["-sS", "--max-time", "30", "-w", "\n%{http_code}", url])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_owned())
}

/// A server whose data directory holds an archive of `live/cam`; returns it and the
/// wall-clock start of the first period (Unix seconds), twenty minutes ago.
fn server_with_archive(extra_rules: &str) -> (Server, i64) {
    let mut server = Server::prepare("");
    std::fs::write(
        server.path("rules.conf"),
        format!(
            r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}], "protocols": ["HLS"]}},
                "Dvr": {{"segment_duration_secs": 2, "min_free_space_mb": 0}}{extra_rules}}}"#,
            server.ports.rtmp
        ),
    )
    .unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let t0 = now - 2 * GAP_SECS;
    common::require_tool("ffmpeg", "ffmpeg");
    let recorded = testing::encoded_stream(server.dir.path()).unwrap();
    let (mut writer, _) = ArchiveWriter::open(&server.path("data/dvr/live/cam")).unwrap();
    testing::record_period(&mut writer, &recorded, 1, t0 * 1000, 2).unwrap();
    testing::record_period(&mut writer, &recorded, 2, (t0 + GAP_SECS) * 1000, 2).unwrap();
    drop(writer);
    server.spawn();
    server.wait_ready();
    (server, t0)
}

/// The media playlist URI a master playlist points at.
fn chunklist(master: &str) -> String {
    master
        .lines()
        .find(|l| !l.starts_with('#') && !l.is_empty())
        .unwrap_or_else(|| panic!("no variant in {master}"))
        .to_owned()
}

/// The archive segment numbers a media playlist lists.
fn listed(media: &str) -> Vec<u64> {
    media
        .lines()
        .filter_map(|l| l.strip_prefix("dvr_"))
        .filter_map(|l| l.split(['.', '?']).next()?.parse().ok())
        .collect()
}

/// Decodes `url` with ffmpeg (input options first); returns the video frames decoded.
fn decoded_frames(server: &Server, url: &str, input_options: &[&str]) -> u64 {
    common::require_tool("ffmpeg", "ffmpeg");
    let output = Command::new("timeout")
        .args(["120", "ffmpeg", "-v", "error", "-nostdin"])
        .args(input_options)
        .args(["-i", url, "-f", "null", "-", "-progress", "pipe:1"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stderr.trim().is_empty(),
        "ffmpeg on {url}: {stderr}\nlog:\n{}",
        server.log()
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("frame="))
        .next_back()
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn the_archive_plays_as_hls_in_every_window_with_sessions() {
    let (server, t0) = server_with_archive("");

    // The whole archive, MPEG-TS: a session, both periods, a discontinuity between.
    let (status, master) = get(&http(&server, "live/cam/playlist_dvr.m3u8"));
    assert_eq!(status, 200, "{master}\nlog:\n{}", server.log());
    assert!(
        master.contains("RESOLUTION=320x240,CODECS=\"avc1."),
        "{master}"
    );
    let chunks = chunklist(&master);
    assert!(chunks.starts_with("chunks_dvr.m3u8?sid="), "{master}");
    let (status, media) = get(&http(&server, &format!("live/cam/{chunks}")));
    assert_eq!(status, 200, "{media}");
    assert_eq!(listed(&media), [1, 2, 3, 4, 5, 6], "{media}");
    assert_eq!(
        media.matches("#EXT-X-DISCONTINUITY\n").count(),
        1,
        "{media}"
    );
    assert_eq!(media.matches("#EXT-X-PROGRAM-DATE-TIME:").count(), 6);
    assert!(
        media.ends_with("#EXT-X-ENDLIST\n"),
        "not published: the archive is final\n{media}"
    );
    let frames = decoded_frames(&server, &http(&server, "live/cam/playlist_dvr.m3u8"), &[]);
    assert_eq!(frames, 300, "every frame of both periods");

    // fMP4: its times grow across periods (see the packager's DVR segments).
    let (status, master) = get(&http(&server, "live/cam/playlist_fmp4_dvr.m3u8"));
    assert_eq!(status, 200, "{master}");
    let (_, media) = get(&http(&server, &format!("live/cam/{}", chunklist(&master))));
    assert_eq!(
        media.matches("#EXT-X-MAP:URI=\"dvr_init_").count(),
        2,
        "{media}"
    );
    let url = http(&server, "live/cam/playlist_fmp4_dvr.m3u8");
    assert_eq!(decoded_frames(&server, &url, &["-copyts"]), 300);

    // A range: the second period from its 2nd second for 3 s (its segments 2 and 3).
    let start = t0 + GAP_SECS + 2;
    let range = format!("live/cam/playlist_dvr_range-{start}-3.m3u8");
    let (status, master) = get(&http(&server, &range));
    assert_eq!(status, 200, "{master}");
    let chunks = chunklist(&master);
    assert!(chunks.starts_with(&format!("chunks_dvr_range-{start}-3.m3u8?sid=")));
    let (_, media) = get(&http(&server, &format!("live/cam/{chunks}")));
    assert_eq!(listed(&media), [5, 6], "{media}");
    assert!(media.ends_with("#EXT-X-ENDLIST\n"));
    assert_eq!(decoded_frames(&server, &http(&server, &range), &[]), 100);
    // An open end: from the same start on.
    let (_, master) = get(&http(
        &server,
        &format!("live/cam/playlist_dvr_range-{start}-now.m3u8"),
    ));
    let (_, media) = get(&http(&server, &format!("live/cam/{}", chunklist(&master))));
    assert_eq!(listed(&media), [5, 6], "{media}");

    // A timeshift whose window (500 s ending 300 s after the second period started,
    // minutes of slack either way) holds only the second period.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let shift = now - (t0 + GAP_SECS + 300);
    let (status, master) = get(&http(
        &server,
        &format!("live/cam/playlist_dvr_timeshift-{shift}-500.m3u8"),
    ));
    assert_eq!(status, 200, "{master}");
    let (_, media) = get(&http(&server, &format!("live/cam/{}", chunklist(&master))));
    assert_eq!(listed(&media), [4, 5, 6], "{media}");

    // A window with nothing in it, an unknown stream, a bad name: 404.
    let before = t0 - 1000;
    let empty = format!("live/cam/playlist_dvr_range-{before}-10.m3u8");
    assert_eq!(get(&http(&server, &empty)).0, 404);
    assert_eq!(get(&http(&server, "live/nothing/playlist_dvr.m3u8")).0, 404);
    assert_eq!(get(&http(&server, "live/..%2F/playlist_dvr.m3u8")).0, 404);
    assert_eq!(get(&http(&server, "live/cam/dvr_99.ts")).0, 404);

    // The session is an HLS session; deleted, its next requests get 403.
    let (_, master) = get(&http(&server, "live/cam/playlist_dvr.m3u8"));
    let chunks = chunklist(&master);
    assert!(chunks.contains("sid="), "{chunks}");
    // The newest HLS session of live/cam (the `sid` is a token, not the API's id).
    let id: u64 = server
        .get("/manage/sessions")
        .1
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["type"] == "HLS" && s["stream"] == "cam")
        .filter_map(|s| s["id"].as_u64())
        .max()
        .unwrap();
    let (_, media) = get(&http(&server, &format!("live/cam/{chunks}")));
    let segment = media
        .lines()
        .find(|l| l.starts_with("dvr_"))
        .unwrap()
        .to_owned();
    assert_eq!(get(&http(&server, &format!("live/cam/{segment}"))).0, 200);
    let (_, sessions) = server.get("/manage/sessions");
    assert!(
        sessions.as_array().unwrap().iter().any(|s| s["id"] == id
            && s["type"] == "HLS"
            && s["app"] == "live"
            && s["stream"] == "cam"),
        "{sessions}"
    );
    assert_eq!(
        server.post("/manage/sessions/delete", &format!("[{id}]")),
        (200, serde_json::json!({"status": "Ok"}))
    );
    assert_eq!(get(&http(&server, &format!("live/cam/{chunks}"))).0, 403);
    assert_eq!(get(&http(&server, &format!("live/cam/{segment}"))).0, 403);
}

const KEY: &str = "dvr-key";

/// A `wmsAuthSign` for 127.0.0.1 signed now, valid 20 minutes (`M/D/YYYY h:mm:ss AM|PM`
/// server time, UTC).
fn signature() -> String {
    let signed_at = common::signing::now() - 5;
    common::signing::url_encoded(&common::signing::signature("127.0.0.1", KEY, signed_at, 20))
}

#[test]
fn a_protected_archive_plays_only_signed_and_in_its_session() {
    let protection = format!(r#", "PlaybackProtection": [{{"app": "live", "keys": ["{KEY}"]}}]"#);
    let (server, _) = server_with_archive(&protection);
    let master = http(&server, "live/cam/playlist_dvr.m3u8");
    assert_eq!(get(&master).0, 403, "unsigned");
    let (status, text) = get(&format!("{master}?wmsAuthSign={}", signature()));
    assert_eq!(status, 200, "{text}\nlog:\n{}", server.log());
    let chunks = chunklist(&text);
    assert!(chunks.contains("?sid="), "{text}");
    let (status, media) = get(&http(&server, &format!("live/cam/{chunks}")));
    assert_eq!(status, 200, "{media}");
    let segment = media.lines().find(|l| l.starts_with("dvr_")).unwrap();
    assert_eq!(get(&http(&server, &format!("live/cam/{segment}"))).0, 200);
    // Without the session: refused.
    let bare = chunks.split('?').next().unwrap();
    assert_eq!(get(&http(&server, &format!("live/cam/{bare}"))).0, 403);
    let bare_segment = segment.split('?').next().unwrap();
    assert_eq!(
        get(&http(&server, &format!("live/cam/{bare_segment}"))).0,
        403
    );
}
