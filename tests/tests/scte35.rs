//! SCTE-35 ad markers end to end: `advertizer/scte35_out?duration=10` on a live RTMP
//! stream puts an `#EXT-X-DATERANGE` with `SCTE35-OUT` (decoded by strom's parser and
//! by the independent Python `threefive`) on a segment that starts with a keyframe and
//! carries the section on a `scte_35` PID; the auto-return closes it with `SCTE35-IN`
//! and the same ID. The `cue` style counts the break with `#EXT-X-CUE-OUT-CONT` and
//! `scte35_in` ends it. A marker carried out over a UDP TS output into a UDP input comes
//! out in that stream's HLS too, and ffprobe sees the `scte_35` stream in the UDP output.
//! Unknown and unconfigured streams are refused.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{Proc, publish, rtmp_url, wait_live};
use common::{Server, free_port, wait_for};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;
use strom_media::scte35::{self, SpliceInfo};

const LIVE: Duration = Duration::from_secs(40);

fn start(udp_port: u16) -> Server {
    start_with(udp_port, free_port())
}

/// [`start`] with a second UDP output of `live/hop` to `capture_port` on 127.0.0.1.
fn start_with(udp_port: u16, capture_port: u16) -> Server {
    let server = Server::start("");
    server.apply_rules(&format!(
            r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {rtmp}}}]}},
 "Delivery": {{"outputs": ["HLS"], "segment_duration_secs": 2}},
 "AdInsertion": [{{"app": "live", "time_sync": "scte35"}},
                 {{"app": "live", "stream": "cued", "time_sync": "scte35", "hls_tags": "cue"}},
                 {{"app": "live", "stream": "plain", "time_sync": "none"}},
                 {{"app": "relay", "time_sync": "scte35", "hls_tags": "cue"}}],
 "TsOutputs": [{{"id": "hop", "protocol": "udp", "mode": "push", "ip": "127.0.0.1", "port": {udp_port},
                 "app": "live", "stream": "hop"}},
               {{"id": "capture", "protocol": "udp", "mode": "push", "ip": "127.0.0.1", "port": {capture_port},
                 "app": "live", "stream": "hop"}}],
 "Cameras": [{{"id": "back", "ip": "127.0.0.1", "port": {udp_port}, "protocol": "udp", "app": "relay", "stream": "hop"}}]}}"#,
            rtmp = server.ports.rtmp
        ));
    server
}

fn http_text(server: &Server, path: &str) -> Option<String> {
    let output = Command::new("curl")
        .args(["-sf", "--max-time", "10"])
        .arg(format!("http://127.0.0.1:{}/{path}", server.ports.http))
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The stream's media playlist (MPEG-TS) once it lists a segment.
fn chunklist(server: &Server, app: &str, stream: &str) -> Option<String> {
    let master = http_text(server, &format!("{app}/{stream}/playlist.m3u8"))?;
    let uri = master
        .lines()
        .find(|l| !l.starts_with('#') && !l.is_empty())?;
    http_text(server, &format!("{app}/{stream}/{uri}"))
}

/// Waits until the playlist of `app/stream` has a line containing `needle`; the
/// playlist.
fn wait_tag(server: &Server, app: &str, stream: &str, needle: &str, limit: Duration) -> String {
    wait_for(limit, needle, || {
        chunklist(server, app, stream).filter(|p| p.contains(needle))
    })
    .unwrap_or_else(|| {
        panic!(
            "no {needle} in {app}/{stream}: {:?}\nlog:\n{}",
            chunklist(server, app, stream),
            server.log()
        )
    })
}

fn post(server: &Server, path: &str) -> (u16, serde_json::Value) {
    server.post(path, "")
}

/// The Python interpreter of the venv `scripts/test.sh` prepares with `threefive`.
fn threefive_python() -> PathBuf {
    let python = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/pytools/bin/python3");
    assert!(
        python.exists(),
        "{} is missing: run scripts/test.sh, which creates it with `python3 -m venv` \
         (Debian package python3-venv) and `pip install threefive` (PyPI)",
        python.display()
    );
    python
}

/// threefive's reading of a hex section: (out_of_network, break duration seconds).
fn threefive_decode(hex: &str) -> (bool, f64) {
    let script = format!(
        "import threefive\nc = threefive.Cue('{hex}')\nc.decode()\nprint(c.command.out_of_network_indicator, c.command.break_duration)"
    );
    let output = Command::new(threefive_python())
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let mut words = text.split_whitespace();
    (
        words.next() == Some("True"),
        words.next().and_then(|w| w.parse().ok()).unwrap_or(-1.0),
    )
}

fn attribute<'a>(line: &'a str, name: &str) -> &'a str {
    let start = line.find(&format!("{name}=")).unwrap() + name.len() + 1;
    let rest = &line[start..];
    let rest = rest.strip_prefix('"').map_or(rest, |r| r);
    let end = rest.find(['"', ',']).unwrap_or(rest.len());
    &rest[..end]
}

/// ffprobe's view of a segment: its streams' codec names and whether the first video
/// frame is a keyframe.
fn probe_segment(server: &Server, app: &str, stream: &str, uri: &str) -> (String, bool) {
    let path = server.path("segment.ts");
    let output = Command::new("curl")
        .args(["-sf", "--max-time", "10", "-o"])
        .arg(&path)
        .arg(format!(
            "http://127.0.0.1:{}/{app}/{stream}/{uri}",
            server.ports.http
        ))
        .output()
        .unwrap();
    assert!(output.status.success());
    let path = path.to_str().unwrap();
    let streams =
        common::media::ffprobe(&["-show_entries", "stream=codec_name", "-of", "csv=p=0", path]);
    let first_key = common::media::ffprobe(&[
        "-select_streams",
        "v",
        "-show_entries",
        "frame=key_frame",
        "-read_intervals",
        "%+#1",
        "-of",
        "csv=p=0",
        path,
    ]);
    (streams, first_key.trim().starts_with('1'))
}

#[test]
fn daterange_out_with_auto_return_decodes_and_splices_at_a_keyframe() {
    let server = start(free_port());
    let _publisher = publish(&rtmp_url(&server, "live/ad"));
    wait_live(&server, "live", "ad", LIVE).unwrap();
    wait_tag(&server, "live", "ad", "#EXTINF", LIVE);
    let (status, body) = post(&server, "/manage/advertizer/scte35_out/live/ad?duration=10");
    assert_eq!(
        (status, body["status"].as_str()),
        (200, Some("Ok")),
        "{body}"
    );

    let playlist = wait_tag(
        &server,
        "live",
        "ad",
        "SCTE35-OUT=",
        Duration::from_secs(10),
    );
    let lines: Vec<&str> = playlist.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains("SCTE35-OUT="))
        .unwrap();
    let out_line = lines[at];
    assert!(out_line.contains("PLANNED-DURATION=10.000"), "{out_line}");
    let id = attribute(out_line, "ID").to_owned();
    let hex = attribute(out_line, "SCTE35-OUT");
    let section = scte35::from_hex(hex).unwrap();
    let info = SpliceInfo::parse(&section).unwrap();
    let insert = info.splice_insert().unwrap();
    assert!(insert.out_of_network);
    assert_eq!(insert.break_duration.map(|d| d.duration), Some(900_000));
    let (out_of_network, seconds) = threefive_decode(hex);
    assert!(
        out_of_network && (seconds - 10.0).abs() < 0.001,
        "threefive: {out_of_network} {seconds}"
    );
    // The break starts on a segment that begins with a keyframe and carries the section.
    let uri = lines[at..].iter().find(|l| !l.starts_with('#')).unwrap();
    let (streams, keyframe_first) = probe_segment(&server, "live", "ad", uri);
    assert!(keyframe_first, "the splice segment starts with a keyframe");
    assert!(streams.contains("scte_35"), "{streams}");

    // The stream's status lists the marker.
    let (_, status) = server.get("/manage/live_streams_status");
    let events = &status[0]["streams"][0]["scte35_events"];
    assert_eq!(events[0]["type"], "out", "{status}");
    assert_eq!(events[0]["duration"], 10.0, "{status}");
    assert_eq!(events[0]["event_id"], insert.event_id, "{status}");

    // Auto-return after 10 s: the in with the same ID.
    let playlist = wait_tag(&server, "live", "ad", "SCTE35-IN=", Duration::from_secs(30));
    let in_line = playlist.lines().find(|l| l.contains("SCTE35-IN=")).unwrap();
    assert_eq!(attribute(in_line, "ID"), id);
    let back =
        SpliceInfo::parse(&scte35::from_hex(attribute(in_line, "SCTE35-IN")).unwrap()).unwrap();
    assert!(!back.splice_insert().unwrap().out_of_network);
    assert!(playlist.contains("#EXT-X-PROGRAM-DATE-TIME:"));

    // Refusals: an unknown stream is 404, a stream without time_sync scte35 409.
    assert_eq!(
        post(&server, "/manage/advertizer/scte35_out/live/nothing").0,
        404
    );
    let _plain = publish(&rtmp_url(&server, "live/plain"));
    wait_live(&server, "live", "plain", LIVE).unwrap();
    let (status, body) = post(
        &server,
        "/manage/advertizer/scte35_out/live/plain?duration=5",
    );
    assert_eq!(status, 409, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("not configured"),
        "{body}"
    );
}

#[test]
fn cue_tags_count_the_break_until_scte35_in() {
    let server = start(free_port());
    let _publisher = publish(&rtmp_url(&server, "live/cued"));
    wait_live(&server, "live", "cued", LIVE).unwrap();
    wait_tag(&server, "live", "cued", "#EXTINF", LIVE);
    assert_eq!(
        post(
            &server,
            "/manage/advertizer/scte35_out/live/cued?duration=60"
        )
        .0,
        200
    );
    wait_tag(
        &server,
        "live",
        "cued",
        "#EXT-X-CUE-OUT:60.000",
        Duration::from_secs(10),
    );
    let playlist = wait_tag(
        &server,
        "live",
        "cued",
        "#EXT-X-CUE-OUT-CONT:",
        Duration::from_secs(20),
    );
    let elapsed: Vec<f64> = playlist
        .lines()
        .filter_map(|l| l.strip_prefix("#EXT-X-CUE-OUT-CONT:"))
        .map(|v| v.split('/').next().unwrap().parse().unwrap())
        .collect();
    let later = wait_tag(
        &server,
        "live",
        "cued",
        "#EXT-X-CUE-OUT-CONT:",
        Duration::from_secs(20),
    );
    let later_elapsed: f64 = later
        .lines()
        .filter_map(|l| l.strip_prefix("#EXT-X-CUE-OUT-CONT:"))
        .map(|v| v.split('/').next().unwrap().parse::<f64>().unwrap())
        .fold(0.0, f64::max);
    wait_for(
        Duration::from_secs(20),
        "CONT elapsed times advance",
        || {
            let now = chunklist(&server, "live", "cued")?;
            let newest = now
                .lines()
                .filter_map(|l| l.strip_prefix("#EXT-X-CUE-OUT-CONT:"))
                .map(|v| v.split('/').next().unwrap().parse::<f64>().unwrap())
                .fold(0.0, f64::max);
            (newest > later_elapsed.max(elapsed[0])).then_some(())
        },
    )
    .unwrap_or_else(|| panic!("elapsed did not advance: {later}"));
    assert_eq!(
        post(&server, "/manage/advertizer/scte35_in/live/cued").0,
        200
    );
    wait_tag(
        &server,
        "live",
        "cued",
        "#EXT-X-CUE-IN",
        Duration::from_secs(15),
    );
}

#[test]
fn markers_travel_through_a_udp_ts_output_into_an_input() {
    let (udp_port, capture_port) = (free_port(), free_port());
    let capture = std::net::UdpSocket::bind(("127.0.0.1", capture_port)).unwrap();
    capture
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let server = start_with(udp_port, capture_port);
    let _publisher: Proc = publish(&rtmp_url(&server, "live/hop"));
    wait_live(&server, "live", "hop", LIVE).unwrap();
    // The UDP output of live/hop feeds the input relay/hop.
    wait_live(&server, "relay", "hop", LIVE)
        .unwrap_or_else(|| panic!("relay/hop not live; log:\n{}", server.log()));
    wait_tag(&server, "relay", "hop", "#EXTINF", LIVE);
    assert_eq!(
        post(
            &server,
            "/manage/advertizer/scte35_out/live/hop?duration=30"
        )
        .0,
        200
    );
    // The input's stream has the marker from its MPEG-TS: its own cue-style tags.
    wait_tag(
        &server,
        "relay",
        "hop",
        "#EXT-X-CUE-OUT:30.000",
        Duration::from_secs(15),
    );
}
