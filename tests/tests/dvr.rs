//! DVR end to end: ffmpeg publishes over RTMP, the dvr worker (its own process, reading
//! the stream over the media bus) records it; `dvr_status` shows the periods, the
//! packager serves the archive as HLS that ffmpeg decodes, `export_mp4` gives an MP4
//! ffprobe reads (with range requests), a `kill -9` of the dvr worker loses at most the
//! open segment, and `cleanup_archive` removes old content.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{Proc, ffprobe, rtmp_url, wait_live};
use common::{Server, require_tool, wait_for};
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Segments are cut at the first keyframe after this long (1 s GOPs).
const SEGMENT_SECS: u64 = 2;

fn start() -> Server {
    let server = Server::start("");
    let rules = format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
            "Delivery": {{"outputs": ["HLS", "DVR"], "segment_duration_secs": 2}},
            "Dvr": {{"segment_duration_secs": {SEGMENT_SECS}, "min_free_space_mb": 0}}}}"#,
        server.ports.rtmp
    );
    std::fs::write(server.path("rules.conf"), rules).unwrap();
    server.wait_ready();
    assert_eq!(server.post("/manage/reload_config", "").0, 200);
    server
}

/// ffmpeg publishing `seconds` of H.264 + AAC (25 fps, 1 s GOP) in real time.
fn publish_for(server: &Server, stream: &str, seconds: u32) -> Proc {
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
        .args([
            "-g", "25", "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "64k",
        ])
        .args(["-t", &seconds.to_string(), "-f", "flv"])
        .arg(rtmp_url(server, &format!("live/{stream}")))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    Proc(child)
}

fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn archive(server: &Server, stream: &str) -> Option<Value> {
    let (status, list) = server.get(&format!("/manage/dvr_status/live/{stream}?timeline=true"));
    assert_eq!(status, 200, "{list}");
    list.as_array()?.first().cloned()
}

fn field(archive: &Value, name: &str) -> i64 {
    archive[name]
        .as_i64()
        .unwrap_or_else(|| panic!("{name} is not an integer in {archive}"))
}

/// Waits for a publisher to finish and the stream to leave `rtmp_status`.
fn finish(server: &Server, mut publisher: Proc, stream: &str) {
    assert_eq!(
        publisher.wait_exit(Duration::from_secs(90)),
        Some(0),
        "publisher of {stream} failed: {}",
        publisher.stop_and_stderr()
    );
    let gone = wait_for(Duration::from_secs(20), "stream gone", || {
        (!common::media::is_live(server, "live", stream)).then_some(())
    });
    assert!(gone.is_some(), "{stream} still live\n{}", server.log());
}

fn curl_bytes(args: &[&str]) -> (u16, Vec<u8>) {
    require_tool("curl", "curl");
    let output = Command::new("curl")
        .args(["-sS", "--max-time", "60", "-w", "\n%{http_code}"])
        .args(args)
        .output()
        .unwrap();
    let raw = output.stdout;
    let split = raw.iter().rposition(|&b| b == b'\n').unwrap();
    let status = String::from_utf8_lossy(&raw[split + 1..])
        .parse()
        .unwrap_or(0);
    (status, raw[..split].to_vec())
}

/// The seconds of media the media playlist behind the master playlist `url` lists.
fn listed_seconds(url: &str) -> f64 {
    let (status, master) = curl_bytes(&[url]);
    let master = String::from_utf8(master).unwrap();
    assert_eq!(status, 200, "{url}: {master}");
    let media = master
        .lines()
        .find(|l| !l.starts_with('#') && l.contains(".m3u8"))
        .unwrap_or_else(|| panic!("no media playlist in {master}"));
    let base = &url[..url.rfind('/').unwrap() + 1];
    let (status, playlist) = curl_bytes(&[&format!("{base}{media}")]);
    let playlist = String::from_utf8(playlist).unwrap();
    assert_eq!(status, 200, "{playlist}");
    playlist
        .lines()
        .filter_map(|l| l.strip_prefix("#EXTINF:"))
        .map(|l| {
            l.trim_end_matches(',')
                .split(',')
                .next()
                .unwrap()
                .parse::<f64>()
                .unwrap()
        })
        .sum()
}

/// Top-level MP4 box types in order.
fn top_level_boxes(mp4: &[u8]) -> Vec<String> {
    let mut boxes = Vec::new();
    let mut at = 0usize;
    while at + 8 <= mp4.len() {
        let mut size = u32::from_be_bytes(mp4[at..at + 4].try_into().unwrap()) as u64;
        let kind = String::from_utf8_lossy(&mp4[at + 4..at + 8]).into_owned();
        if size == 1 {
            size = u64::from_be_bytes(mp4[at + 8..at + 16].try_into().unwrap());
        }
        boxes.push(kind);
        if size < 8 {
            break;
        }
        at += size as usize;
    }
    boxes
}

/// ffmpeg decodes `input` to the end without a decoding error.
fn decodes_cleanly(input: &str) -> String {
    let output = Command::new("ffmpeg")
        .args([
            "-hide_banner",
            "-v",
            "error",
            "-i",
            input,
            "-f",
            "null",
            "-",
        ])
        .output()
        .unwrap();
    let errors = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "ffmpeg failed on {input}: {errors}"
    );
    errors
}

fn ffprobe_duration(path: &str) -> f64 {
    ffprobe(&[
        "-v",
        "error",
        "-show_entries",
        "format=duration",
        "-of",
        "csv=p=0",
        path,
    ])
    .trim()
    .parse()
    .unwrap()
}

#[test]
fn records_two_periods_survives_a_kill_exports_and_cleans_up() {
    let server = start();
    let show = publish_for(&server, "show", 30);
    let cam = publish_for(&server, "cam", 45);
    assert!(wait_live(&server, "live", "show", Duration::from_secs(20)).is_some());
    assert!(wait_live(&server, "live", "cam", Duration::from_secs(20)).is_some());

    // The first period of `show` ends and is closed.
    finish(&server, show, "show");
    let first = wait_for(Duration::from_secs(20), "first period closed", || {
        let show = archive(&server, "show")?;
        (field(&show, "duration") >= 27).then_some(show)
    });
    assert!(
        first.is_some(),
        "{:?}\n{}",
        archive(&server, "show"),
        server.log()
    );

    // kill -9 of the dvr worker while it records `cam` (and between the periods of
    // `show`): what was listed before the kill stays, recording resumes after the restart.
    let before = archive(&server, "cam").expect("cam is being recorded");
    let recorded_before = field(&before, "duration");
    assert!(recorded_before >= 6, "{before}\n{}", server.log());
    let dvr = server.worker_pid("dvr");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(dvr),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let restarted = wait_for(Duration::from_secs(20), "dvr worker restarted", || {
        let (_, workers) = server.try_get("/manage/workers")?;
        workers.as_array()?.iter().find(|w| {
            w["kind"] == "dvr" && w["state"] == "ready" && w["pid"].as_i64() != Some(i64::from(dvr))
        })?;
        Some(())
    });
    assert!(restarted.is_some(), "{}", server.log());
    let after_restart = archive(&server, "cam").expect("the archive outlives the kill");
    assert!(
        field(&after_restart, "duration") >= recorded_before,
        "lost recorded content: before {before}, after {after_restart}"
    );

    // The second period of `show`, after a gap.
    let show = publish_for(&server, "show", 20);
    finish(&server, cam, "cam");
    let cam_archive = wait_for(Duration::from_secs(20), "cam recorded again", || {
        let cam = archive(&server, "cam")?;
        (field(&cam, "duration") >= recorded_before + 8).then_some(cam)
    })
    .unwrap_or_else(|| panic!("recording did not resume after the kill\n{}", server.log()));
    assert!(
        field(&cam_archive, "periods") >= 2,
        "the restart starts a period: {cam_archive}"
    );
    finish(&server, show, "show");

    let show = wait_for(Duration::from_secs(20), "both periods closed", || {
        let show = archive(&server, "show")?;
        (field(&show, "periods") == 2 && field(&show, "duration") >= 45).then_some(show)
    })
    .unwrap_or_else(|| panic!("{:?}\n{}", archive(&server, "show"), server.log()));
    let timeline = show["timeline"].as_array().unwrap();
    assert_eq!(timeline.len(), 2, "{show}");
    let (first_start, first_duration) = (
        field(&timeline[0], "start"),
        field(&timeline[0], "duration"),
    );
    let (second_start, second_duration) = (
        field(&timeline[1], "start"),
        field(&timeline[1], "duration"),
    );
    assert!(
        (27..=33).contains(&first_duration),
        "first period {first_duration} s: {show}"
    );
    assert!(
        (17..=23).contains(&second_duration),
        "second period {second_duration} s: {show}"
    );
    assert!(
        second_start >= first_start + first_duration,
        "periods overlap: {show}"
    );
    assert!(
        (now_secs() - first_start) < 300,
        "start is not a Unix time: {show}"
    );
    assert_eq!(show["stream"], "live/show");
    assert_eq!(show["resolution"], "320x240");
    assert!(
        show["vcodec"].as_str().unwrap().starts_with("avc1"),
        "{show}"
    );
    assert!(
        show["acodec"].as_str().unwrap().starts_with("mp4a"),
        "{show}"
    );
    assert!(field(&show, "size") > 0 && field(&show, "bandwidth") > 0);
    assert!(field(&show, "space_available") > 0);
    assert!(std::path::Path::new(show["path"].as_str().unwrap()).is_dir());
    let without_timeline = server.get("/manage/dvr_status").1;
    assert_eq!(
        without_timeline.as_array().unwrap().len(),
        2,
        "{without_timeline}"
    );
    assert!(
        without_timeline[0].get("timeline").is_none(),
        "{without_timeline}"
    );

    // Playback from the archive: the whole of it decodes; a range and a timeshift
    // window hold the span asked for, within a segment either way.
    let hls = |path: &str| format!("http://127.0.0.1:{}/live/show/{path}", server.ports.http);
    decodes_cleanly(&hls("playlist_dvr.m3u8"));
    let range_start = first_start + 10;
    let span = listed_seconds(&hls(&format!("playlist_dvr_range-{range_start}-10.m3u8")));
    assert!(
        (10.0 - SEGMENT_SECS as f64 - 1.0..=10.0 + SEGMENT_SECS as f64 + 1.0).contains(&span),
        "range lists {span} s"
    );
    let shift = now_secs() - (second_start + 15);
    let span = listed_seconds(&hls(&format!("playlist_dvr_timeshift-{shift}-8.m3u8")));
    assert!(
        (8.0 - SEGMENT_SECS as f64 - 1.0..=8.0 + SEGMENT_SECS as f64 + 1.0).contains(&span),
        "timeshift lists {span} s"
    );

    // Export: 10 s from the middle of the first period.
    let work = tempfile::tempdir().unwrap();
    let mp4 = work.path().join("clip.mp4");
    let (start, end) = (first_start + 8, first_start + 18);
    let export = server.url(&format!(
        "/manage/dvr/export_mp4/live/show?start={start}&end={end}"
    ));
    let (status, body) = curl_bytes(&[&export]);
    assert_eq!(
        status,
        200,
        "{}\n{}",
        String::from_utf8_lossy(&body),
        server.log()
    );
    std::fs::write(&mp4, &body).unwrap();
    let boxes = top_level_boxes(&body);
    let moov = boxes.iter().position(|b| b == "moov");
    let mdat = boxes.iter().position(|b| b == "mdat");
    assert!(
        moov.is_some() && moov < mdat,
        "moov must come before mdat: {boxes:?}"
    );
    let duration = ffprobe_duration(mp4.to_str().unwrap());
    assert!(
        (9.0..=11.0).contains(&duration),
        "export lasts {duration} s, not 10 s within a GOP"
    );
    decodes_cleanly(mp4.to_str().unwrap());
    let (status, part) = curl_bytes(&["-r", "100-1099", &export]);
    assert_eq!(status, 206);
    assert_eq!(
        part,
        body[100..1100].to_vec(),
        "the range is the same bytes"
    );
    let (status, _) = curl_bytes(&[&server.url(&format!(
        "/manage/dvr/export_mp4/live/show?start={end}&end={start}"
    ))]);
    assert_eq!(status, 400, "an inverted range is a client error");
    let (status, _) = curl_bytes(&[&server.url("/manage/dvr/export_mp4/live/nothing")]);
    assert_eq!(status, 404);
    // The archive that lived through the kill exports whole and clean.
    let whole = work.path().join("cam.mp4");
    let (status, body) = curl_bytes(&[&server.url("/manage/dvr/export_mp4/live/cam")]);
    assert_eq!(
        status,
        200,
        "{}\n{}",
        String::from_utf8_lossy(&body[..body.len().min(2000)]),
        server.log()
    );
    std::fs::write(&whole, body).unwrap();
    decodes_cleanly(whole.to_str().unwrap());

    // Cleanup: keep the last minute; the oldest segments are older than that by now.
    let oldest_end = first_start + SEGMENT_SECS as i64 * 2;
    let wait = (oldest_end + 62 - now_secs()).max(0) as u64;
    std::thread::sleep(Duration::from_secs(wait));
    let (status, reply) = server.post("/manage/dvr/cleanup_archive/live/show?target_depth=1", "");
    assert_eq!(
        (status, reply["status"].as_str()),
        (200, Some("Ok")),
        "{reply}"
    );
    let cleaned = archive(&server, "show").unwrap();
    assert!(
        field(&cleaned, "size") < field(&show, "size"),
        "nothing removed: {cleaned}"
    );
    assert!(
        field(&cleaned, "duration") < field(&show, "duration"),
        "{cleaned}"
    );
    let (status, reply) = server.post(
        "/manage/dvr/cleanup_archive/live/nothing?target_depth=1",
        "",
    );
    assert_eq!(
        (status, reply["status"].as_str()),
        (200, Some("Not found")),
        "{reply}"
    );
}

/// Recording reads the stream core, not RTMP: an MPEG-TS over UDP input is recorded and
/// exports like an RTMP publish.
#[test]
fn a_udp_mpegts_input_is_recorded_too() {
    let server = Server::start("");
    let port = common::free_port();
    let rules = format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
            "Delivery": {{"outputs": ["DVR"]}},
            "Dvr": {{"segment_duration_secs": {SEGMENT_SECS}, "min_free_space_mb": 0}},
            "Cameras": [{{"id": "cam", "ip": "127.0.0.1", "port": {port}, "protocol": "udp",
                          "app": "live", "stream": "udp"}}]}}"#,
        server.ports.rtmp
    );
    std::fs::write(server.path("rules.conf"), rules).unwrap();
    server.wait_ready();
    assert_eq!(server.post("/manage/reload_config", "").0, 200);
    let mut sender =
        common::media::publish_as(&format!("udp://127.0.0.1:{port}?pkt_size=1316"), "mpegts");
    let recorded = wait_for(Duration::from_secs(40), "UDP input recorded", || {
        let udp = archive(&server, "udp")?;
        (field(&udp, "duration") >= 6).then_some(udp)
    });
    let _ = sender.stop_and_stderr();
    let recorded = recorded.unwrap_or_else(|| panic!("{}", server.log()));
    assert!(
        recorded["vcodec"].as_str().unwrap().starts_with("avc1"),
        "{recorded}"
    );
    let work = tempfile::tempdir().unwrap();
    let mp4 = work.path().join("udp.mp4");
    let (status, body) = curl_bytes(&[&server.url("/manage/dvr/export_mp4/live/udp")]);
    assert_eq!(status, 200, "{}", server.log());
    std::fs::write(&mp4, body).unwrap();
    decodes_cleanly(mp4.to_str().unwrap());
    let streams = ffprobe(&[
        "-v",
        "error",
        "-show_entries",
        "stream=codec_name",
        "-of",
        "csv=p=0",
        mp4.to_str().unwrap(),
    ]);
    assert!(
        streams.contains("h264") && streams.contains("aac"),
        "{streams} {recorded}\n{}",
        server.log()
    );
}

/// Descriptors the process `pid` has open.
fn descriptors(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |dir| dir.count())
}

/// Paths under `dir` whose name contains `part`.
fn paths_named(dir: &std::path::Path, part: &str) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().contains(part))
            {
                found.push(path.clone());
            }
            if path.is_dir() {
                pending.push(path);
            }
        }
    }
    found
}

/// Issue 31 item 3: names published without media leave no archive directory and no
/// descriptor in the dvr worker, an archive is open only while it records, and
/// `cleanup_archive` removing everything removes its directory.
#[test]
fn names_without_media_leave_no_archive_and_archives_close_after_recording_and_cleanup() {
    const NAMES: usize = 40;
    let server = start();
    let dvr = server.worker_pid("dvr");
    let baseline = descriptors(dvr);
    let addr: std::net::SocketAddr = format!("127.0.0.1:{}", server.ports.rtmp).parse().unwrap();
    let squatters: Vec<_> = (0..NAMES)
        .map(|n| common::raw_rtmp::raw_publisher(addr, "live", &format!("nomedia{n}")))
        .collect();
    wait_for(
        Duration::from_secs(40),
        "the dvr worker reading every name",
        || {
            let log = server.log();
            let reading = log
                .lines()
                .filter(|l| l.contains("DVR recording") && l.contains("live/nomedia"))
                .count();
            (reading >= NAMES).then_some(())
        },
    )
    .unwrap_or_else(|| {
        panic!(
            "the dvr worker did not read the names; log:\n{}",
            server.log()
        )
    });
    assert_eq!(
        paths_named(&server.path("data"), "nomedia"),
        Vec::<std::path::PathBuf>::new(),
        "archive directories for names without media"
    );
    drop(squatters);
    // Once the names are gone the worker holds what it held before.
    let settled = wait_for(Duration::from_secs(40), "dvr descriptors back", || {
        (descriptors(dvr) <= baseline + 5).then_some(())
    });
    assert!(
        settled.is_some(),
        "dvr worker descriptors {baseline} -> {}",
        descriptors(dvr)
    );

    // A real recording: its archive is there, and closed once the stream ended.
    let publisher = publish_for(&server, "real", 4);
    finish(&server, publisher, "real");
    let listed = wait_for(Duration::from_secs(30), "the recording listed", || {
        archive(&server, "real").filter(|a| field(a, "size") > 0)
    });
    assert!(
        listed.is_some(),
        "no archive of live/real; log:\n{}",
        server.log()
    );
    let (status, _) = server.get("/manage/dvr_status");
    assert_eq!(status, 200);
    let closed = wait_for(Duration::from_secs(40), "the archive closed", || {
        (descriptors(dvr) <= baseline + 5).then_some(())
    });
    assert!(
        closed.is_some(),
        "dvr worker descriptors {baseline} -> {} after recording",
        descriptors(dvr)
    );

    // Cleaning up everything frees the archive's directory too, not only its segments.
    assert_eq!(paths_named(&server.path("data"), "real").len(), 1);
    let (status, reply) = server.post("/manage/dvr/cleanup_archive/live/real", "");
    assert_eq!(
        (status, reply["status"].as_str()),
        (200, Some("Ok")),
        "{reply}"
    );
    assert_eq!(
        paths_named(&server.path("data"), "real"),
        Vec::<std::path::PathBuf>::new(),
        "the archive directory is left after removing everything"
    );
    assert!(archive(&server, "real").is_none());
    let (status, reply) = server.post("/manage/dvr/cleanup_archive/live/real", "");
    assert_eq!(
        (status, reply["status"].as_str()),
        (200, Some("Not found")),
        "{reply}"
    );
    assert_eq!(server.worker_pid("dvr"), dvr);
}
