//! SCTE-35 ad markers end to end: `advertizer/scte35_out?duration=10` on a live RTMP
//! stream puts an `#EXT-X-DATERANGE` with `SCTE35-OUT` (decoded by strom's parser and
//! by the independent Python `threefive`) on a segment that starts with a keyframe and
//! carries the section on a `scte_35` PID; the auto-return closes it with `SCTE35-IN`
//! and the same ID. The `cue` style counts the break with `#EXT-X-CUE-OUT-CONT` and
//! `scte35_in` ends it. A marker carried out over a UDP TS output into a UDP input comes
//! out in that stream's HLS too, and ffprobe sees the `scte_35` stream in the UDP output.
//! Unknown and unconfigured streams are refused. The same marker is a DASH `EventStream`
//! event (SCTE 214) in the MPD, and the DVR archive keeps it: its playlists carry the
//! DATERANGE, its TS segment the `scte_35` stream, and both outlive a `kill -9` of the
//! dvr worker (the marker is in the archive's index on disk). An out asked for as a
//! `time_signal` (segmentation descriptor 0x34, its end 0x35) is carried the same way,
//! and as an `emsg` box in the live and DVR fMP4 segments (threefive reads each).

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

/// threefive's reading of a section (hex or base64): (out_of_network, break duration
/// seconds).
fn threefive_decode(section: &str) -> (bool, f64) {
    let (command_type, out_of_network, seconds) = threefive_command(section);
    assert_eq!(command_type, 5, "splice_insert");
    (out_of_network, seconds)
}

/// threefive's reading of a section: (splice_command_type, out_of_network, break
/// duration seconds).
fn threefive_command(section: &str) -> (u8, bool, f64) {
    let text = threefive_print(
        section,
        "c.command.command_type, c.command.out_of_network_indicator, c.command.break_duration",
    );
    let mut words = text.split_whitespace();
    (
        words.next().and_then(|w| w.parse().ok()).unwrap_or(0xff),
        words.next() == Some("True"),
        words.next().and_then(|w| w.parse().ok()).unwrap_or(-1.0),
    )
}

/// What threefive prints for `fields` (Python expressions of the decoded cue `c`).
fn threefive_print(section: &str, fields: &str) -> String {
    let script =
        format!("import threefive\nc = threefive.Cue('{section}')\nc.decode()\nprint({fields})");
    let output = Command::new(threefive_python())
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
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

/// The value of XML attribute `name` in `element`.
fn xml_attribute(element: &str, name: &str) -> Option<u64> {
    let start = element.find(&format!(" {name}=\""))? + name.len() + 3;
    element[start..].split('"').next()?.parse().ok()
}

/// The start times of the video representation's `SegmentTimeline` in `mpd`.
fn video_segment_starts(mpd: &str) -> Vec<u64> {
    let video = &mpd[mpd.find("contentType=\"video\"").unwrap()..];
    let timeline = &video[..video.find("</SegmentTimeline>").unwrap()];
    let mut starts = Vec::new();
    let mut next = 0;
    for s in timeline.split("<S ").skip(1) {
        let start = xml_attribute(&format!(" {s}"), "t").unwrap_or(next);
        starts.push(start);
        next = start + xml_attribute(&format!(" {s}"), "d").unwrap();
    }
    starts
}

/// The DVR media playlist of `live/<stream>` (MPEG-TS) once it has a line with `needle`.
fn dvr_playlist(server: &Server, stream: &str, needle: &str, limit: Duration) -> String {
    let fetch = || {
        let master = http_text(server, &format!("live/{stream}/playlist_dvr.m3u8"))?;
        let uri = master
            .lines()
            .find(|l| !l.starts_with('#') && !l.is_empty())?;
        http_text(server, &format!("live/{stream}/{uri}"))
    };
    wait_for(limit, needle, || fetch().filter(|p| p.contains(needle))).unwrap_or_else(|| {
        panic!(
            "no {needle} in the DVR playlist: {:?}\nlog:\n{}",
            fetch(),
            server.log()
        )
    })
}

/// The DATERANGE line with `SCTE35-OUT` of `playlist` and the URI of its segment.
fn out_range(playlist: &str) -> (String, String) {
    let lines: Vec<&str> = playlist.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("#EXT-X-DATERANGE:") && l.contains("SCTE35-OUT="))
        .unwrap_or_else(|| panic!("no SCTE35-OUT DATERANGE: {playlist}"));
    let uri = lines[at..].iter().find(|l| !l.starts_with('#')).unwrap();
    (lines[at].to_owned(), (*uri).to_owned())
}

/// A server with HLS, DASH and the DVR at 2 s segments and SCTE-35 on `live`, and an
/// RTMP publisher of `live/<stream>` whose first segment is live and archived.
fn publish_recorded(stream: &str) -> (Server, Proc) {
    let server = Server::start("");
    server.apply_rules(&format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
 "Delivery": {{"outputs": ["HLS", "DASH", "DVR"], "segment_duration_secs": 2}},
 "Dvr": {{"segment_duration_secs": 2, "min_free_space_mb": 0}},
 "AdInsertion": [{{"app": "live", "time_sync": "scte35"}}]}}"#,
        server.ports.rtmp
    ));
    let publisher = publish(&rtmp_url(&server, &format!("live/{stream}")));
    wait_live(&server, "live", stream, LIVE).unwrap();
    wait_tag(&server, "live", stream, "#EXTINF", LIVE);
    dvr_playlist(&server, stream, "#EXTINF", LIVE);
    (server, publisher)
}

#[test]
fn markers_are_dash_events_and_stay_in_the_dvr_archive() {
    use base64::Engine;
    let (server, _publisher) = publish_recorded("kept");
    let (status, body) = post(
        &server,
        "/manage/advertizer/scte35_out/live/kept?duration=6",
    );
    assert_eq!(status, 200, "{body}");

    // DASH: an Event of the SCTE 214 scheme at the start of a video segment, carrying
    // the splice_insert in base64.
    let mpd = wait_for(Duration::from_secs(15), "an MPD Event", || {
        http_text(&server, "live/kept/manifest.mpd").filter(|m| m.contains("<Event "))
    })
    .unwrap_or_else(|| {
        panic!(
            "no Event in {:?}\nlog:\n{}",
            http_text(&server, "live/kept/manifest.mpd"),
            server.log()
        )
    });
    let stream = &mpd[mpd.find("<EventStream ").unwrap()..];
    let stream = &stream[..stream.find("</EventStream>").unwrap()];
    assert!(
        stream.contains("schemeIdUri=\"urn:scte:scte35:2014:xml+bin\" timescale=\"90000\""),
        "{stream}"
    );
    let event = &stream[stream.find("<Event ").unwrap()..];
    let time = xml_attribute(event, "presentationTime").unwrap();
    assert_eq!(
        xml_attribute(event, "duration"),
        Some(6 * 90_000),
        "{event}"
    );
    assert!(
        video_segment_starts(&mpd).contains(&time),
        "the event is at a video segment's start: {time} in {mpd}"
    );
    let binary = event
        .split("<Binary>")
        .nth(1)
        .and_then(|b| b.split("</Binary>").next())
        .unwrap();
    assert!(
        event.contains("<Signal xmlns=\"http://www.scte.org/schemas/35/2016\"><Binary>"),
        "{event}"
    );
    let section = base64::engine::general_purpose::STANDARD
        .decode(binary)
        .unwrap();
    let info = SpliceInfo::parse(&section).unwrap();
    assert!(info.splice_insert().unwrap().out_of_network);
    let (command_type, out_of_network, seconds) = threefive_command(binary);
    assert_eq!(
        (command_type, out_of_network, seconds),
        (5, true, 6.0),
        "threefive"
    );

    // DVR: the archive's playlist has the live playlist's DATERANGE, and the segment it
    // is on carries the section on a SCTE-35 PID.
    let playlist = dvr_playlist(&server, "kept", "SCTE35-OUT=", Duration::from_secs(20));
    let (range, uri) = out_range(&playlist);
    assert!(range.contains("PLANNED-DURATION=6.000"), "{range}");
    let hex = attribute(&range, "SCTE35-OUT");
    assert_eq!(scte35::from_hex(hex).unwrap(), section, "the same section");
    assert_eq!(threefive_decode(hex), (true, 6.0));
    let (streams, keyframe_first) = probe_segment(&server, "live", "kept", &uri);
    assert!(streams.contains("scte_35"), "{streams}");
    assert!(
        keyframe_first,
        "the DVR segment of the splice starts with a keyframe"
    );

    // The auto-return 6 s later closes the break with the same ID.
    let id = attribute(&range, "ID").to_owned();
    let closed = dvr_playlist(&server, "kept", "SCTE35-IN=", Duration::from_secs(30));
    let in_line = closed
        .lines()
        .find(|l| l.contains("SCTE35-IN="))
        .unwrap()
        .to_owned();
    assert_eq!(attribute(&in_line, "ID"), id, "{closed}");

    // Persisted: the archive's index on disk names the marker, and after a kill -9 of
    // the dvr worker the playlist still has the break.
    let (_, status) = server.get("/manage/dvr_status/live/kept");
    let dir = PathBuf::from(status[0]["path"].as_str().unwrap());
    let index = std::fs::read_to_string(dir.join("index")).unwrap();
    assert!(
        index.lines().any(|l| l.starts_with("v2 ")),
        "no marker line in the index: {index}"
    );
    let dvr = server.worker_pid("dvr");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(dvr),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    wait_for(Duration::from_secs(20), "dvr worker restarted", || {
        let (_, workers) = server.try_get("/manage/workers")?;
        workers.as_array()?.iter().find(|w| {
            w["kind"] == "dvr" && w["state"] == "ready" && w["pid"].as_i64() != Some(i64::from(dvr))
        })?;
        Some(())
    })
    .unwrap_or_else(|| panic!("the dvr worker did not restart\n{}", server.log()));
    // Recording resumed (a new period) and the archive still holds the break.
    let after = dvr_playlist(
        &server,
        "kept",
        "#EXT-X-DISCONTINUITY\n",
        Duration::from_secs(30),
    );
    assert_eq!(out_range(&after), (range, uri));
    assert!(after.contains(&in_line), "{after}");
}

/// threefive's reading of a time_signal (hex or base64): (splice_command_type, its
/// first segmentation descriptor's type id, its segmentation duration in seconds).
fn threefive_signal(section: &str) -> (u8, u8, f64) {
    let text = threefive_print(
        section,
        "c.command.command_type, c.descriptors[0].segmentation_type_id, c.descriptors[0].segmentation_duration",
    );
    let mut words = text.split_whitespace();
    (
        words.next().and_then(|w| w.parse().ok()).unwrap_or(0xff),
        words.next().and_then(|w| w.parse().ok()).unwrap_or(0xff),
        words.next().and_then(|w| w.parse().ok()).unwrap_or(-1.0),
    )
}

/// The bytes at `path` on the server's HTTP port.
fn http_bytes(server: &Server, path: &str) -> Vec<u8> {
    let output = Command::new("curl")
        .args(["-sf", "--max-time", "10"])
        .arg(format!("http://127.0.0.1:{}/{path}", server.ports.http))
        .output()
        .unwrap();
    assert!(output.status.success(), "GET {path} failed");
    output.stdout
}

/// The `message_data` of every top-level version 1 `emsg` box of `segment` with the
/// SCTE-35 scheme (SCTE 214-3), with the box's `event_duration`.
fn scte35_emsgs(segment: &[u8]) -> Vec<(u32, Vec<u8>)> {
    let mut found = Vec::new();
    let mut at = 0;
    while at + 8 <= segment.len() {
        let size = u32::from_be_bytes(segment[at..at + 4].try_into().unwrap()) as usize;
        if size < 8 || at + size > segment.len() {
            break;
        }
        let body = &segment[at..at + size];
        if &body[4..8] == b"emsg" && body[8] == 1 {
            let duration = u32::from_be_bytes(body[24..28].try_into().unwrap());
            let strings = &body[32..];
            let scheme_end = strings.iter().position(|b| *b == 0).unwrap();
            let value_end = scheme_end
                + 1
                + strings[scheme_end + 1..]
                    .iter()
                    .position(|b| *b == 0)
                    .unwrap();
            if &strings[..scheme_end] == b"urn:scte:scte35:2013:bin" {
                found.push((duration, strings[value_end + 1..].to_vec()));
            }
        }
        at += size;
    }
    found
}

/// The media playlist that `master` (a path under `live/<stream>/`) lists first, once it
/// has a line containing `needle`.
fn media_playlist(server: &Server, stream: &str, master: &str, needle: &str) -> String {
    let fetch = || {
        let master = http_text(server, &format!("live/{stream}/{master}"))?;
        let uri = master
            .lines()
            .find(|l| !l.starts_with('#') && !l.is_empty())?;
        http_text(server, &format!("live/{stream}/{uri}"))
    };
    wait_for(Duration::from_secs(30), needle, || {
        fetch().filter(|p| p.contains(needle))
    })
    .unwrap_or_else(|| {
        panic!(
            "no {needle} in {master}: {:?}\nlog:\n{}",
            fetch(),
            server.log()
        )
    })
}

/// An out asked for as a `time_signal` (the form most ad-decision systems send) is
/// carried like a splice_insert: DATERANGE `SCTE35-OUT`/`SCTE35-IN` in live and DVR
/// HLS, a DASH event, and an `emsg` box in the live and the DVR fMP4 segment; threefive
/// reads each as a time_signal with a Provider Placement Opportunity descriptor.
#[test]
fn time_signal_breaks_reach_every_hls_dash_and_fmp4_form_live_and_in_the_dvr() {
    use base64::Engine;
    let (server, _publisher) = publish_recorded("signal");
    let (status, body) = post(
        &server,
        "/manage/advertizer/scte35_out/live/signal?command=splice",
    );
    assert_eq!(status, 400, "an unknown command: {body}");
    let (status, body) = post(
        &server,
        "/manage/advertizer/scte35_out/live/signal?duration=6&command=time_signal",
    );
    assert_eq!(status, 200, "{body}");

    // Live HLS (MPEG-TS): the DATERANGE on a segment that starts with a keyframe and
    // carries the section on a SCTE-35 PID.
    let playlist = wait_tag(
        &server,
        "live",
        "signal",
        "SCTE35-OUT=",
        Duration::from_secs(20),
    );
    let (range, uri) = out_range(&playlist);
    assert!(range.contains("PLANNED-DURATION=6.000"), "{range}");
    let hex = attribute(&range, "SCTE35-OUT");
    let section = scte35::from_hex(hex).unwrap();
    assert_eq!(threefive_signal(hex), (6, 0x34, 6.0), "threefive on {hex}");
    let (streams, keyframe_first) = probe_segment(&server, "live", "signal", &uri);
    assert!(streams.contains("scte_35"), "{streams}");
    assert!(
        keyframe_first,
        "the splice's segment starts with a keyframe"
    );

    // Live HLS (fMP4): the same DATERANGE, and its segment opens with the section in
    // an `emsg` lasting the break.
    let fmp4 = media_playlist(&server, "signal", "playlist_fmp4.m3u8", "SCTE35-OUT=");
    let (fmp4_range, fmp4_uri) = out_range(&fmp4);
    assert_eq!(attribute(&fmp4_range, "SCTE35-OUT"), hex);
    let segment = http_bytes(&server, &format!("live/signal/{fmp4_uri}"));
    assert_eq!(
        scte35_emsgs(&segment),
        [(6 * 90_000, section.clone())],
        "the live fMP4 segment's emsg"
    );

    // DASH: an event with the break's duration, the section in base64.
    let mpd = wait_for(Duration::from_secs(15), "an MPD Event", || {
        http_text(&server, "live/signal/manifest.mpd").filter(|m| m.contains("<Event "))
    })
    .unwrap_or_else(|| panic!("no Event in the MPD\nlog:\n{}", server.log()));
    let event = &mpd[mpd.find("<Event ").unwrap()..];
    assert_eq!(
        xml_attribute(event, "duration"),
        Some(6 * 90_000),
        "{event}"
    );
    let binary = event
        .split("<Binary>")
        .nth(1)
        .and_then(|b| b.split("</Binary>").next())
        .unwrap();
    assert_eq!(
        base64::engine::general_purpose::STANDARD
            .decode(binary)
            .unwrap(),
        section
    );
    assert_eq!(
        threefive_signal(binary),
        (6, 0x34, 6.0),
        "threefive on the MPD"
    );

    // The auto-return: an end signal (Provider Placement Opportunity End) with the ID.
    let closed = wait_tag(
        &server,
        "live",
        "signal",
        "SCTE35-IN=",
        Duration::from_secs(30),
    );
    let in_line = closed.lines().find(|l| l.contains("SCTE35-IN=")).unwrap();
    assert_eq!(
        attribute(in_line, "ID"),
        attribute(&range, "ID"),
        "{closed}"
    );
    let (command, type_id, _) = threefive_signal(attribute(in_line, "SCTE35-IN"));
    assert_eq!((command, type_id), (6, 0x35), "{in_line}");

    // DVR: the archive's TS and fMP4 playlists have the DATERANGE, and its fMP4 segment
    // the emsg.
    let archived = dvr_playlist(&server, "signal", "SCTE35-OUT=", Duration::from_secs(20));
    assert_eq!(attribute(&out_range(&archived).0, "SCTE35-OUT"), hex);
    let archived = media_playlist(&server, "signal", "playlist_fmp4_dvr.m3u8", "SCTE35-OUT=");
    let (dvr_range, dvr_uri) = out_range(&archived);
    assert_eq!(attribute(&dvr_range, "SCTE35-OUT"), hex);
    let segment = http_bytes(&server, &format!("live/signal/{dvr_uri}"));
    assert_eq!(
        scte35_emsgs(&segment),
        [(6 * 90_000, section)],
        "the DVR fMP4 segment's emsg"
    );
    assert!(
        segment.windows(4).any(|w| w == b"moof"),
        "the emsg comes before the fragment"
    );
}
