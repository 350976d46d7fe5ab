//! Low-Latency HLS end to end, ffmpeg publishing over RTMP to a stream whose `Delivery`
//! outputs include `LLHLS` (2 s segments, the default 334 ms part target):
//! - the fMP4 chunklist carries `#EXT-X-SERVER-CONTROL`, `#EXT-X-PART-INF`, parts (CMAF
//!   chunks, none longer than the part target) and an `#EXT-X-PRELOAD-HINT`;
//! - a blocking reload for the next segment (`_HLS_msn` = last + 1) does not answer while
//!   the playlist lacks that segment, and its answer lists it; one too far ahead gets 400;
//! - a delta update (`_HLS_skip=YES`) replaces the oldest segments with `#EXT-X-SKIP`;
//! - 30 fps with 2 s keyframes (RTMP's millisecond timestamps): every complete segment
//!   listed with parts has 6 of them (no one-frame part at its end), only the segments
//!   starting within 3 target durations of the end list parts, and malformed delivery
//!   directives (`_HLS_part` without `_HLS_msn`, non-numeric values) get 400;
//! - a plain chunklist request is answered when the next part is out (a fresh first
//!   playlist for players placing their live edge);
//! - with the publisher gone, a blocking reload for a segment that never comes gets 503
//!   (after 3 target durations).
//!
//! hls.js playing it with `lowLatencyMode` is in `browser.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{ffmpeg, publish, rtmp_url};
use common::{Server, require_tool, wait_for};
use std::process::Command;
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(40);

fn start() -> Server {
    let mut server = Server::prepare("");
    std::fs::write(
        server.path("rules.conf"),
        format!(
            r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
 "Delivery": {{"outputs": ["HLS", "LLHLS"], "segment_duration_secs": 2}}}}"#,
            server.ports.rtmp
        ),
    )
    .unwrap();
    server.spawn();
    server.wait_ready();
    server
}

/// ffmpeg publishing 30 fps with a keyframe every 2 s (60 frames, no scene cuts) and
/// AAC for 60 s to `live/<stream>` over RTMP.
fn publish_thirty_fps(server: &Server, stream: &str) -> common::media::Proc {
    ffmpeg(&format!(
        "-hide_banner -loglevel error -re -f lavfi -i testsrc=size=320x240:rate=30 \
         -f lavfi -i sine=frequency=440:sample_rate=44100 -c:v libx264 -preset ultrafast \
         -tune zerolatency -g 60 -sc_threshold 0 -pix_fmt yuv420p -c:a aac -b:a 64k -t 60 \
         -f flv {}",
        rtmp_url(server, &format!("live/{stream}"))
    ))
}

/// GET with curl: status and body (bytes).
fn get(url: &str) -> (u16, Vec<u8>) {
    require_tool("curl", "curl");
    let output = Command::new("curl")
        .args(["-sS", "--max-time", "20", "-w", "\n%{http_code}", url])
        .output()
        .unwrap();
    let body = output.stdout;
    let split = body.iter().rposition(|b| *b == b'\n').unwrap_or(0);
    let code = String::from_utf8_lossy(&body[split..]).trim().parse();
    (code.unwrap_or(0), body[..split].to_vec())
}

fn text(url: &str) -> (u16, String) {
    let (status, body) = get(url);
    (status, String::from_utf8_lossy(&body).into_owned())
}

fn tag<'a>(playlist: &'a str, name: &str) -> Option<&'a str> {
    playlist.lines().find_map(|l| l.strip_prefix(name))
}

/// Sequence number of the last complete segment a playlist lists.
fn last_segment(playlist: &str) -> u64 {
    let first: u64 = tag(playlist, "#EXT-X-MEDIA-SEQUENCE:")
        .unwrap()
        .parse()
        .unwrap();
    let skipped: u64 =
        tag(playlist, "#EXT-X-SKIP:SKIPPED-SEGMENTS=").map_or(0, |n| n.parse().unwrap());
    first + skipped + playlist.matches("#EXTINF").count() as u64 - 1
}

/// `(duration, uri, independent)` of every `#EXT-X-PART`.
fn parts(playlist: &str) -> Vec<(f64, String, bool)> {
    playlist
        .lines()
        .filter_map(|l| l.strip_prefix("#EXT-X-PART:"))
        .map(|attributes| {
            let duration = attributes
                .split(',')
                .find_map(|a| a.strip_prefix("DURATION="))
                .unwrap()
                .parse()
                .unwrap();
            let uri = attributes.split('"').nth(1).unwrap().to_owned();
            (duration, uri, attributes.contains("INDEPENDENT=YES"))
        })
        .collect()
}

#[test]
fn ll_hls_parts_blocking_reloads_and_delta_updates() {
    let server = start();
    let mut publisher = publish(&rtmp_url(&server, "live/ll"));
    let base = format!("http://127.0.0.1:{}/live/ll", server.ports.http);
    let chunklist = wait_for(LIVE, "fMP4 master playlist", || {
        let (status, body) = text(&format!("{base}/playlist_fmp4.m3u8"));
        let uri = body.lines().find(|l| l.starts_with("chunks"))?;
        (status == 200).then(|| format!("{base}/{uri}"))
    })
    .unwrap_or_else(|| panic!("no master playlist; log:\n{}", server.log()));
    assert!(chunklist.contains("?sid="), "{chunklist}");
    let playlist = wait_for(LIVE, "LL-HLS playlist with parts", || {
        let (status, body) = text(&chunklist);
        (status == 200 && body.matches("#EXTINF").count() >= 2 && !parts(&body).is_empty())
            .then_some(body)
    })
    .unwrap_or_else(|| panic!("no playlist with parts; log:\n{}", server.log()));

    assert_eq!(tag(&playlist, "#EXT-X-VERSION:"), Some("9"), "{playlist}");
    assert_eq!(
        tag(&playlist, "#EXT-X-SERVER-CONTROL:"),
        Some("CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=1.002,CAN-SKIP-UNTIL=12.0"),
        "{playlist}"
    );
    assert_eq!(
        tag(&playlist, "#EXT-X-PART-INF:"),
        Some("PART-TARGET=0.334")
    );
    let hint = tag(&playlist, "#EXT-X-PRELOAD-HINT:").unwrap_or_else(|| panic!("{playlist}"));
    assert!(hint.starts_with("TYPE=PART,URI=\"part_"), "{hint}");
    let listed = parts(&playlist);
    for (duration, uri, _) in &listed {
        assert!(*duration > 0.0 && *duration <= 0.334, "{uri}: {duration} s");
        assert!(uri.starts_with("part_") && uri.contains("?sid="), "{uri}");
    }
    assert!(listed.iter().any(|(_, _, independent)| *independent));
    // A part is a CMAF chunk (no styp); the whole segment opens with its styp.
    let (status, part) = get(&format!("{base}/{}", listed[0].1));
    assert_eq!(status, 200);
    assert_eq!(&part[4..8], b"moof");
    let last = last_segment(&playlist);
    let (status, segment) = get(&format!("{base}/seg_{last}.m4s"));
    assert_eq!(status, 200);
    assert_eq!(&segment[4..8], b"styp");

    // Blocking reload for the segment after the last one: it does not answer before
    // the playlist holds that segment, and then lists it.
    let (_, now) = text(&chunklist);
    let next = last_segment(&now) + 1;
    let blocked_url = format!("{chunklist}&_HLS_msn={next}");
    let blocked = std::thread::spawn(move || text(&blocked_url));
    let mut seen_waiting = false;
    let plain = wait_for(LIVE, "blocked reload answered", || {
        let done = blocked.is_finished();
        let (_, plain) = text(&chunklist);
        let listed = plain.contains(&format!("seg_{next}.m4s"));
        // Unanswered, and the playlist (read after) still without the segment: the
        // request was held while the segment did not exist.
        if !done && !listed {
            seen_waiting = true;
        }
        if done {
            return Some(plain);
        }
        std::thread::sleep(Duration::from_millis(50));
        None
    })
    .unwrap_or_else(|| panic!("blocking reload never answered; log:\n{}", server.log()));
    let (status, answer) = blocked.join().unwrap();
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains(&format!("seg_{next}.m4s")), "{answer}");
    assert!(plain.contains(&format!("seg_{next}.m4s")));
    assert!(seen_waiting, "the blocking reload was answered at once");

    // Too far ahead: 400 at once.
    let (status, _) = text(&format!("{chunklist}&_HLS_msn={}", next + 5));
    assert_eq!(status, 400);

    // A delta update, once the playlist is long enough to have segments to skip.
    let full = wait_for(LIVE, "10 segments listed", || {
        let (_, body) = text(&chunklist);
        (body.matches("#EXTINF").count() >= 10).then_some(body)
    })
    .unwrap_or_else(|| panic!("no 10-segment playlist; log:\n{}", server.log()));
    let latest = last_segment(&full);
    let (status, delta) = text(&format!("{chunklist}&_HLS_msn={latest}&_HLS_skip=YES"));
    assert_eq!(status, 200);
    let skipped: usize = tag(&delta, "#EXT-X-SKIP:SKIPPED-SEGMENTS=")
        .unwrap_or_else(|| panic!("no EXT-X-SKIP:\n{delta}"))
        .parse()
        .unwrap();
    assert!(skipped > 0);
    assert!(delta.matches("#EXTINF").count() < full.matches("#EXTINF").count());
    assert!(last_segment(&delta) >= latest);

    // The publisher gone, nothing more comes: a reload blocked on the next segment
    // gets 503 after 3 target durations (the playlist ends only after 15 s).
    publisher.stop_and_stderr();
    let settled = wait_for(LIVE, "the last segment flushed", || {
        let (_, before) = text(&chunklist);
        std::thread::sleep(Duration::from_millis(2500));
        let (_, after) = text(&chunklist);
        (last_segment(&before) == last_segment(&after)).then_some(after)
    })
    .unwrap();
    let next = last_segment(&settled) + 1;
    let (status, body) = text(&format!("{chunklist}&_HLS_msn={next}"));
    assert_eq!(status, 503, "{body}\nlog:\n{}", server.log());
}

/// The parts each complete segment of `playlist` lists, by sequence number.
fn parts_per_segment(playlist: &str) -> std::collections::BTreeMap<u64, usize> {
    let mut counts = std::collections::BTreeMap::new();
    let mut pending = 0;
    for line in playlist.lines() {
        if line.starts_with("#EXT-X-PART:") {
            pending += 1;
        } else if let Some(number) = line.strip_prefix("seg_").and_then(|l| l.split('.').next()) {
            counts.insert(number.parse().unwrap(), std::mem::take(&mut pending));
        }
    }
    counts
}

#[test]
fn thirty_fps_segments_have_six_parts_and_bad_directives_get_400() {
    let server = start();
    let mut publisher = publish_thirty_fps(&server, "thirty");
    let chunklist = format!(
        "http://127.0.0.1:{}/live/thirty/chunks_fmp4.m3u8",
        server.ports.http
    );
    let mut counts = std::collections::BTreeMap::new();
    let mut reloads = 0;
    wait_for(LIVE, "8 segments with parts", || {
        let (status, body) = text(&chunklist);
        if status == 200 {
            reloads += 1;
            let listed = parts_per_segment(&body);
            // Parts only for the segments that start within 6 s of the end (pending
            // parts included): at most 3 segments of 2 s.
            let with_parts = listed.values().filter(|n| **n > 0).count();
            assert!(with_parts <= 3, "{with_parts} segments with parts:\n{body}");
            counts.extend(listed.into_iter().filter(|(_, n)| *n > 0));
        }
        std::thread::sleep(Duration::from_millis(300));
        (counts.len() >= 8).then_some(())
    })
    .unwrap_or_else(|| panic!("{counts:?} after {reloads} reloads; log:\n{}", server.log()));
    // The first segment may start mid-way (the publisher's first keyframe); the others
    // are 60 frames of 2 s: six parts of 10 frames (334 ms target).
    let later: Vec<_> = counts.iter().skip(1).map(|(_, n)| *n).collect();
    assert!(
        later.iter().all(|n| *n == 6),
        "parts per segment: {counts:?}"
    );

    assert!(
        !server.log().contains("keyframes are further apart"),
        "2 s keyframes in 2 s segments are not too far apart"
    );
    for bad in ["_HLS_part=1", "_HLS_msn=abc", "_HLS_msn=3&_HLS_part=x"] {
        let (status, body) = text(&format!("{chunklist}?{bad}"));
        assert_eq!(status, 400, "{bad}: {body}");
    }
    let (status, _) = text(&chunklist);
    assert_eq!(status, 200);
    publisher.stop_and_stderr();
}

/// `part_<msn>_<index>` of a part URI (query and all).
fn part_numbers(uri: &str) -> (u64, usize) {
    let name = uri.split('?').next().unwrap();
    let (msn, index) = name
        .strip_prefix("part_")
        .and_then(|n| n.strip_suffix(".m4s"))
        .and_then(|n| n.split_once('_'))
        .unwrap_or_else(|| panic!("not a part URI: {uri}"));
    (msn.parse().unwrap(), index.parse().unwrap())
}

/// A preload hint names the next part before strom knows where the next keyframe
/// falls; when a keyframe ends the segment first, the hinted part (the one past the
/// segment's last) never comes. Players that requested it (Shaka, gohlslib) must get the
/// media that follows, the next segment's first part, not a 404 (which Shaka took as
/// fatal in the player matrix). The request is answered the same whether a hint named
/// it or not, so the test asks for it after the segment ended.
#[test]
fn the_part_past_the_end_of_a_segment_is_the_next_segments_first_part() {
    let server = start();
    let mut publisher = publish_thirty_fps(&server, "hinted");
    let base = format!("http://127.0.0.1:{}/live/hinted", server.ports.http);
    let chunklist = format!("{base}/chunks_fmp4.m3u8");
    // A complete segment listed with its parts, and the next segment's first part.
    let (msn, count) = wait_for(LIVE, "a segment with parts followed by a part", || {
        let (status, body) = text(&chunklist);
        std::thread::sleep(Duration::from_millis(200));
        if status != 200 {
            return None;
        }
        let listed: Vec<_> = parts(&body)
            .into_iter()
            .map(|(_, uri, _)| part_numbers(&uri))
            .collect();
        let ended = parts_per_segment(&body);
        ended.iter().rev().find_map(|(msn, count)| {
            (*count > 0 && listed.contains(&(msn + 1, 0))).then_some((*msn, *count))
        })
    })
    .unwrap_or_else(|| panic!("no segment with parts; log:\n{}", server.log()));
    let (status, past) = get(&format!("{base}/part_{msn}_{count}.m4s"));
    assert_eq!(
        status,
        200,
        "part_{msn}_{count}, past segment {msn}'s {count} parts: {}",
        String::from_utf8_lossy(&past)
    );
    let (status, next) = get(&format!("{base}/part_{}_0.m4s", msn + 1));
    assert_eq!(status, 200);
    assert!(
        !past.is_empty() && past == next,
        "part_{msn}_{count} is not segment {}'s first part ({} vs {} bytes)",
        msn + 1,
        past.len(),
        next.len()
    );
    // Further past the end is no part at all.
    let (status, _) = get(&format!("{base}/part_{msn}_{}.m4s", count + 1));
    assert_eq!(status, 404);
    publisher.stop_and_stderr();
}

/// A plain chunklist request (no `_HLS_msn`, what a player's first load is) is answered
/// when the next part is out, so that the playlist a player places its live edge from
/// is fresh: asked twice in a row, the second answer lists a newer part than the first,
/// every time (without the hold, both usually list the same last part).
#[test]
fn a_plain_chunklist_request_is_answered_with_the_next_part() {
    let server = start();
    let mut publisher = publish_thirty_fps(&server, "fresh");
    let chunklist = format!(
        "http://127.0.0.1:{}/live/fresh/chunks_fmp4.m3u8",
        server.ports.http
    );
    let last_part = |body: &str| parts(body).last().map(|(_, uri, _)| part_numbers(uri));
    wait_for(LIVE, "a chunklist with parts", || {
        let (status, body) = text(&chunklist);
        std::thread::sleep(Duration::from_millis(200));
        (status == 200 && last_part(&body).is_some()).then_some(())
    })
    .unwrap_or_else(|| panic!("no LL chunklist; log:\n{}", server.log()));
    for round in 0..5 {
        let (first_status, first) = text(&chunklist);
        let (second_status, second) = text(&chunklist);
        assert_eq!((first_status, second_status), (200, 200), "round {round}");
        let (first, second) = (last_part(&first), last_part(&second));
        assert!(
            second > first,
            "round {round}: the second plain request listed {second:?}, the first {first:?}"
        );
    }
    publisher.stop_and_stderr();
}

/// Keyframes every 4 s on a 2 s LL-HLS stream: segments follow the keyframes, and strom
/// says so once per publisher, naming the fix; 2 s keyframes (the other tests) never
/// trigger it.
#[test]
fn keyframes_further_apart_than_the_segment_target_are_logged_once() {
    let server = start();
    let mut publisher = ffmpeg(&format!(
        "-hide_banner -loglevel error -re -f lavfi -i testsrc=size=320x240:rate=30 \
         -c:v libx264 -preset ultrafast -tune zerolatency -g 120 -sc_threshold 0 \
         -pix_fmt yuv420p -t 60 -f flv {}",
        rtmp_url(&server, "live/sparse")
    ));
    let chunklist = format!(
        "http://127.0.0.1:{}/live/sparse/chunks_fmp4.m3u8",
        server.ports.http
    );
    const WARNING: &str = "keyframes are further apart than its segment target";
    wait_for(LIVE, "3 segments", || {
        let (status, body) = text(&chunklist);
        std::thread::sleep(Duration::from_millis(300));
        (status == 200 && body.matches("#EXTINF").count() >= 3).then_some(())
    })
    .unwrap_or_else(|| panic!("no segments; log:\n{}", server.log()));
    let log = server.log();
    let lines: Vec<&str> = log.lines().filter(|l| l.contains(WARNING)).collect();
    assert_eq!(lines.len(), 1, "{lines:?}\n{log}");
    assert!(
        lines[0].contains("live/sparse") && lines[0].contains("keyframe interval"),
        "{}",
        lines[0]
    );
    publisher.stop_and_stderr();
}
