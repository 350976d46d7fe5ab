//! MPEG-DASH live end to end: ffmpeg publishes over RTMP, the packager serves
//! `manifest.mpd` (dynamic, isoff-live, `SegmentTemplate` + `SegmentTimeline`) from the
//! same fMP4 segments as HLS; ffprobe and ffmpeg read it; viewer sessions of type `DASH`
//! get 403 after `sessions/delete`; an ABR group is one manifest with a representation
//! per member; a stream without `DASH` in its outputs has no manifest. (dash.js in
//! Chromium: tests/tests/browser.rs.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{ffprobe, probe_streams, publish, rtmp_url};
use common::{Server, require_tool, wait_for};
use std::process::Command;
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(40);

fn start(delivery: &str) -> Server {
    let mut server = Server::prepare("");
    std::fs::write(
        server.path("rules.conf"),
        format!(
            r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
 "Delivery": {delivery}}}"#,
            server.ports.rtmp
        ),
    )
    .unwrap();
    server.spawn();
    server.wait_ready();
    server
}

/// GET with curl: status and body.
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

fn url(server: &Server, path: &str) -> String {
    format!("http://127.0.0.1:{}/{path}", server.ports.http)
}

/// Waits until the manifest at `path` lists `min` segments per representation. Like a
/// player, it follows the manifest's `<Location>` (its session) once it has one.
fn wait_manifest(server: &Server, path: &str, min: usize) -> String {
    let mut location = url(server, path);
    wait_for(LIVE, "dash manifest", || {
        let (status, body) = text(&location);
        if let Some(next) = body
            .split("<Location>")
            .nth(1)
            .and_then(|rest| rest.split('<').next())
        {
            let base = path.rsplit_once('/').map_or("", |(dir, _)| dir);
            location = url(server, &format!("{base}/{next}"));
        }
        let representations = body.matches("<Representation ").count().max(1);
        (status == 200 && body.matches("<S ").count() >= min * representations).then_some(body)
    })
    .unwrap_or_else(|| panic!("no manifest at {path}; log:\n{}", server.log()))
}

fn attribute<'a>(xml: &'a str, name: &str) -> Option<&'a str> {
    let start = xml.find(&format!(" {name}=\""))? + name.len() + 3;
    xml[start..].split('"').next()
}

#[test]
fn ffprobe_reads_the_live_manifest_and_sessions_are_dash() {
    let server = start(r#"{"outputs": ["HLS", "DASH"], "segment_duration_secs": 2}"#);
    let _publisher = publish(&rtmp_url(&server, "live/d"));
    let manifest = wait_manifest(&server, "live/d/manifest.mpd", 3);
    for expected in [
        "type=\"dynamic\"",
        "profiles=\"urn:mpeg:dash:profile:isoff-live:2011\"",
        "availabilityStartTime=\"",
        "timeShiftBufferDepth=\"PT",
        "minimumUpdatePeriod=\"PT2.000S\"",
        "<UTCTiming schemeIdUri=\"urn:mpeg:dash:utc:direct:2014\"",
        "<SegmentTimeline>",
        "contentType=\"video\"",
        "contentType=\"audio\"",
        "codecs=\"avc1.42",
        "codecs=\"mp4a.40.2\"",
        "width=\"320\" height=\"240\" frameRate=\"25\"",
        "<Location>manifest.mpd?sid=",
    ] {
        assert!(manifest.contains(expected), "{expected}:\n{manifest}");
    }
    // The segments the manifest names are there, one track each.
    let media = attribute(&manifest, "media").unwrap().replace("&amp;", "&");
    let start: u64 = attribute(&manifest, "startNumber")
        .unwrap()
        .parse()
        .unwrap();
    let segment = media.replace("$Number$", &start.to_string());
    let (status, body) = text(&url(&server, &format!("live/d/{segment}")));
    assert_eq!(status, 200, "{segment}");
    assert!(!body.is_empty());

    let manifest_url = url(&server, "live/d/manifest.mpd");
    let streams = probe_streams(&manifest_url);
    assert!(
        streams.contains(&"h264,video,320,240".to_owned()),
        "{streams:?}; log:\n{}",
        server.log()
    );
    assert!(streams.contains(&"aac,audio".to_owned()), "{streams:?}");
    require_tool("ffmpeg", "ffmpeg");
    let output = Command::new("timeout")
        .args(["60", "ffmpeg", "-v", "error", "-i", &manifest_url])
        .args(["-t", "4", "-f", "null", "-"])
        .output()
        .unwrap();
    let errors = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && errors.trim().is_empty(),
        "ffmpeg: {errors}"
    );

    // The session the manifest opened is a DASH session; deleted, it gets 403.
    let sid: u128 = manifest
        .split("manifest.mpd?sid=")
        .nth(1)
        .and_then(|rest| rest.split('<').next())
        .unwrap()
        .parse()
        .unwrap();
    let (_, sessions) = server.get("/manage/sessions");
    // The `sid` is a token, not the API's id: the manifest fetched first opened the
    // oldest DASH session of d (ffprobe and ffmpeg opened theirs later).
    let id = sessions
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["type"] == "DASH" && s["stream"] == "d")
        .filter_map(|s| s["id"].as_u64())
        .min()
        .unwrap_or_else(|| panic!("no DASH session: {sessions}"));
    let again = url(&server, &format!("live/d/manifest.mpd?sid={sid}"));
    assert_eq!(text(&again).0, 200);
    let (_, sessions_after) = server.get("/manage/sessions");
    let dash_sessions = |list: &serde_json::Value| {
        list.as_array()
            .unwrap()
            .iter()
            .filter(|s| s["type"] == "DASH")
            .count()
    };
    assert_eq!(
        dash_sessions(&sessions_after),
        dash_sessions(&sessions),
        "an update with its session opens none"
    );
    assert_eq!(
        server.post("/manage/sessions/delete", &format!("[{id}]")),
        (200, serde_json::json!({"status": "Ok"}))
    );
    assert_eq!(text(&again).0, 403);
    assert_eq!(text(&url(&server, &format!("live/d/{segment}"))).0, 403);
    assert_eq!(text(&manifest_url).0, 200, "a new viewer still plays");
}

#[test]
fn abr_groups_are_representations_and_dash_follows_the_outputs() {
    let server = start(
        r#"{"outputs": ["HLS"], "segment_duration_secs": 1,
            "apps": [{"app": "tv", "outputs": ["HLS", "DASH"]}],
            "abr": [{"app": "tv", "stream": "abr",
                     "streams": [{"app": "tv", "stream": "a"}, {"app": "tv", "stream": "b"}]}]}"#,
    );
    let _a = publish(&rtmp_url(&server, "tv/a"));
    let _b = publish(&rtmp_url(&server, "tv/b"));
    let _hls_only = publish(&rtmp_url(&server, "live/h"));
    let manifest = wait_for(LIVE, "an ABR manifest with both members", || {
        let manifest = wait_manifest(&server, "tv/abr/manifest.mpd", 2);
        (manifest.matches("dash_v_$Number$").count() == 2).then_some(manifest)
    })
    .unwrap_or_else(|| panic!("no ABR manifest with both members; log:\n{}", server.log()));
    assert_eq!(
        manifest.matches("contentType=\"video\"").count(),
        1,
        "{manifest}"
    );
    assert!(
        manifest.contains("media=\"../../tv/a/dash_v_$Number$.m4s?sid="),
        "{manifest}"
    );
    assert!(
        manifest.contains("media=\"../../tv/b/dash_v_$Number$.m4s?sid="),
        "{manifest}"
    );
    assert_eq!(manifest.matches("dash_a_$Number$").count(), 1, "{manifest}");
    let streams = ffprobe(&[
        "-show_entries",
        "stream=codec_type",
        "-of",
        "csv=p=0",
        &url(&server, "tv/abr/manifest.mpd"),
    ]);
    assert!(
        streams.lines().filter(|l| l.trim() == "video").count() >= 2,
        "{streams}"
    );
    // HLS only: segments, but no manifest.
    wait_for(LIVE, "live/h packaged", || {
        (text(&url(&server, "live/h/playlist.m3u8")).0 == 200).then_some(())
    })
    .unwrap_or_else(|| panic!("live/h not packaged; log:\n{}", server.log()));
    assert_eq!(text(&url(&server, "live/h/manifest.mpd")).0, 404);
}

/// One representation's timeline: its id, content type, timescale and `($Number$, t, d)`
/// of each segment.
struct Timeline {
    id: String,
    audio: bool,
    timescale: u64,
    segments: Vec<(u64, u64, u64)>,
}

/// The timelines of `xml` (strom writes one `SegmentTemplate` per representation, `t`
/// only where a segment does not follow the previous one, no `r`).
fn timelines(xml: &str) -> Vec<Timeline> {
    let mut out = Vec::new();
    for set in xml.split("<AdaptationSet ").skip(1) {
        let audio = set.contains("contentType=\"audio\"");
        for representation in set.split("<Representation ").skip(1) {
            let representation = &format!(" {representation}");
            let number =
                |name| -> u64 { attribute(representation, name).unwrap().parse().unwrap() };
            let (timescale, mut next) = (number("timescale"), number("startNumber"));
            let mut end = 0;
            let mut segments = Vec::new();
            for s in representation.split("<S ").skip(1) {
                let element = s.split("/>").next().unwrap();
                let element = format!(" {element}");
                let t = attribute(&element, "t").map_or(end, |t| t.parse().unwrap());
                let d: u64 = attribute(&element, "d").unwrap().parse().unwrap();
                segments.push((next, t, d));
                (next, end) = (next + 1, t + d);
            }
            out.push(Timeline {
                id: attribute(representation, "id").unwrap().to_owned(),
                audio,
                timescale,
                segments,
            });
        }
    }
    out
}

/// `PT<seconds>S` as seconds.
fn duration_secs(xml: &str, name: &str) -> f64 {
    let value = attribute(xml, name).unwrap_or_else(|| panic!("no {name} in {xml}"));
    value
        .strip_prefix("PT")
        .and_then(|v| v.strip_suffix('S'))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{name}={value}"))
}

/// Issue 32, items 6-8, on a live manifest: from the first segments on, the DVR window
/// (`timeShiftBufferDepth`) is a full window deep, beyond the presentation delay and an
/// update period (dash.js stalled while it was the listed 6 s); every timeline goes on
/// without overlap, audio by whole AAC frames with no gap either (its durations were
/// RTMP's rounded milliseconds); a segment keeps its number, start and duration from
/// one update to the next (players that map positions through the numbers); the
/// period starts near `availabilityStartTime`, not decades after it.
#[test]
fn the_live_timeline_is_deep_gapless_and_stable() {
    let server = start(r#"{"outputs": ["HLS", "DASH"], "segment_duration_secs": 2}"#);
    let _publisher = publish(&rtmp_url(&server, "live/t"));
    let first = wait_manifest(&server, "live/t/manifest.mpd", 1);
    let depth = duration_secs(&first, "timeShiftBufferDepth");
    let delay = duration_secs(&first, "suggestedPresentationDelay");
    let update = duration_secs(&first, "minimumUpdatePeriod");
    assert!(depth >= 12.0, "a full window of 6 x 2 s:\n{first}");
    assert!(depth > delay + update, "{first}");
    assert!(duration_secs(&first, "start") < 60.0, "{first}");
    assert!(!first.contains("availabilityStartTime=\"1970"), "{first}");

    // Later: more segments, some of the first ones perhaps gone.
    let later = wait_for(LIVE, "four more segments", || {
        let later = wait_manifest(&server, "live/t/manifest.mpd", 1);
        let newest = |xml: &str| timelines(xml)[0].segments.last().map(|s| s.0);
        (newest(&later) >= newest(&first).map(|n| n + 4)).then_some(later)
    })
    .unwrap_or_else(|| panic!("the manifest does not go on; log:\n{}", server.log()));
    let (before, after) = (timelines(&first), timelines(&later));
    assert_eq!(before.len(), 2, "video and audio:\n{first}");
    assert!(after.iter().any(|t| t.audio), "{later}");
    for timeline in before.iter().chain(&after) {
        let segments = &timeline.segments;
        assert!(!segments.is_empty(), "{}", timeline.id);
        for pair in segments.windows(2) {
            let ((_, t0, d0), (_, t1, _)) = (pair[0], pair[1]);
            assert!(t1 >= t0 + d0, "{} overlaps: {segments:?}", timeline.id);
            if timeline.audio {
                assert_eq!(t1, t0 + d0, "audio gap: {segments:?}");
            }
        }
        if timeline.audio {
            assert_eq!(timeline.timescale, 44_100);
            assert!(
                segments.iter().all(|(_, _, d)| d % 1024 == 0),
                "whole AAC frames: {segments:?}"
            );
        }
    }
    for old in &before {
        let new = after.iter().find(|t| t.id == old.id).unwrap();
        let common: Vec<_> = old
            .segments
            .iter()
            .filter(|(n, _, _)| new.segments.iter().any(|s| s.0 == *n))
            .collect();
        for segment in &common {
            assert!(
                new.segments.contains(segment),
                "{}: {segment:?} changed: {:?}",
                old.id,
                new.segments
            );
        }
        assert!(
            new.segments.first().unwrap().0 >= old.segments.first().unwrap().0,
            "numbers only go forward"
        );
    }
}
