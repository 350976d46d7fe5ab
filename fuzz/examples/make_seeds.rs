//! Writes the seed corpora of the targets whose seeds are made by strom's own code
//! (signatures by the signing functions, indexes by the packager's store, frames by the
//! FLV adapter from the ffmpeg capture, server replies by `rml_rtmp`'s server session)
//! or copied from real files, into `fuzz/corpus/<target>/`:
//!
//! ```sh
//! cd fuzz && cargo run --example make_seeds
//! ```
//!
//! Seeds are deterministic where the code is (the Adobe salt and nonces are random per
//! process, so those seeds differ from run to run, as a real server's would).
#![allow(dead_code, unused_imports, clippy::unwrap_used, clippy::expect_used)]

#[path = "../../supervisor/src/config/mod.rs"]
mod config;

#[path = "../../workers/rtmp/src/auth"]
mod auth {
    pub mod adobe;
    mod query;
    pub use query::{param, split_query};
}

use auth::adobe::{AdobeAuth, Verdict, expected_response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use rml_rtmp::handshake::{Handshake, HandshakeProcessResult, PeerType};
use rml_rtmp::sessions::{
    ClientSession, ClientSessionConfig, ClientSessionEvent, ClientSessionResult,
    PublishRequestType, ServerSession, ServerSessionConfig, ServerSessionEvent,
    ServerSessionResult,
};
use rml_rtmp::time::RtmpTimestamp;
use std::path::{Path, PathBuf};
use std::time::Duration;
use strom_media::flv_adapter;
use strom_media::frame::Frame;
use strom_media::scte35::{BreakDuration, SpliceInfo};
use strom_worker_http::fuzzing::{Limits, SegmentFacts, Store};
use strom_worker_runtime::{play_signature, publish_sign};

fn corpus(target: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(target: &str, name: &str, bytes: &[u8]) {
    std::fs::write(corpus(target).join(name), bytes).unwrap();
}

fn repo(path: &str) -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)).unwrap()
}

fn prefixed(first: u8, rest: &[u8]) -> Vec<u8> {
    let mut out = vec![first];
    out.extend_from_slice(rest);
    out
}

fn main() {
    rtmp_handshake();
    signatures();
    http_range_and_paths();
    let frames = capture_frames();
    muxing(&frames);
    dvr_archive(&frames);
    config_files();
    hls_index();
    client_replies();
}

/// ffmpeg's C0+C1, its whole handshake, and the handshake with the start of its chunk
/// stream, in big and in small reads.
fn rtmp_handshake() {
    let publish = repo("fuzz/corpus/rtmp_server_input/ffmpeg-publish");
    let play = repo("fuzz/corpus/rtmp_server_input/ffprobe-play");
    write(
        "rtmp_handshake",
        "ffmpeg-c0c1",
        &prefixed(0x81, &publish[..1537]),
    );
    write(
        "rtmp_handshake",
        "ffmpeg-c0c1c2",
        &prefixed(0x81, &publish[..3073]),
    );
    write(
        "rtmp_handshake",
        "ffmpeg-handshake-and-connect",
        &prefixed(0x83, &publish[..3400]),
    );
    write(
        "rtmp_handshake",
        "ffprobe-small-reads",
        &prefixed(0x05, &play[..3300]),
    );
}

/// Lines: query, app, stream, password or key, client address, now (Unix s), skew.
fn signatures() {
    let lines = |query: &str, now: i64| format!("{query}\nlive\ncam\nsecret\n10.0.0.1\n{now}\n30");
    // publishsign, unbound and bound to the address.
    for (name, ip) in [("publishsign", ""), ("publishsign-ip", "10.0.0.1")] {
        let sign = publish_sign::signature("pub1", "live", "cam", "secret", ip);
        let mut text = format!("id=pub1&sign={sign}");
        if !ip.is_empty() {
            text.push_str(&format!("&ip={ip}"));
        }
        let value = STANDARD
            .encode(text)
            .replace('+', "%2B")
            .replace('=', "%3D");
        let query = format!("cam?publishsign={value}");
        let params = auth::split_query(&query).1;
        let sign = auth::param(&params, "publishsign");
        assert_eq!(
            publish_sign::verify(sign, "live", "cam", "secret", "10.0.0.1"),
            Ok("pub1".to_owned())
        );
        write("signatures", name, lines(&query, 0).as_bytes());
    }
    // wmsAuthSign: by address, by pay-per-view id with the stream prefix.
    let time = "11/21/2026 4:05:09 AM";
    let now = 1_795_233_909 + 60;
    let by_ip = play_signature::hash("10.0.0.1", "secret", time, "20", "");
    let fields = format!("server_time={time}&hash_value={by_ip}&validminutes=20");
    let value = STANDARD.encode(fields);
    let keys = [String::from("secret")];
    let check = |stream| play_signature::SignatureCheck {
        keys: &keys,
        client_ip: "10.0.0.1".parse().unwrap(),
        stream,
        now_unix: now,
        skew_secs: 30,
    };
    assert!(play_signature::verify(Some(&value), &check("live/cam")).is_ok());
    write(
        "signatures",
        "wmsauthsign-ip",
        lines(&format!("cam?wmsAuthSign={value}"), now).as_bytes(),
    );
    let by_id = play_signature::hash("ppv7", "secret", time, "20", "live/c");
    let fields =
        format!("server_time={time}&hash_value={by_id}&validminutes=20&strm_len=6&id=ppv7");
    let value = STANDARD.encode(fields).replace('=', "%3D");
    let query = format!("a=1&wmsAuthSign={value}&b");
    let from_query = play_signature::query_value(&query, "wmsAuthSign");
    let signed = play_signature::verify(from_query.as_deref(), &check("live/cam")).unwrap();
    assert_eq!(signed.ppv_id.as_deref(), Some("ppv7"));
    write(
        "signatures",
        "wmsauthsign-ppv",
        lines(&format!("a=1&wmsAuthSign={value}&b"), now).as_bytes(),
    );
    // The Adobe challenge, answered as a client would (the salt is this process's).
    let adobe = AdobeAuth::default();
    let step2 = auth::split_query("live?authmod=adobe&user=bob").1;
    let Verdict::Reject(challenge) = adobe.check(&step2, "bob", "secret") else {
        panic!("challenged")
    };
    let query = challenge.rsplit_once('?').unwrap().1;
    let params = auth::split_query(&format!("x?{query}")).1;
    let salt = auth::param(&params, "salt").unwrap();
    let opaque = auth::param(&params, "opaque").unwrap();
    let response = expected_response("bob", salt, "secret", opaque, "c0ffee00");
    let answer = format!(
        "live?authmod=adobe&user=bob&challenge=c0ffee00&response={response}&opaque={opaque}"
    );
    let params = auth::split_query(&answer).1;
    assert_eq!(adobe.check(&params, "bob", "secret"), Verdict::Accept);
    write("signatures", "adobe-response", lines(&answer, 0).as_bytes());
    write(
        "signatures",
        "adobe-identify",
        lines("live?authmod=adobe&user=bob", 0).as_bytes(),
    );
}

/// Lines: Range, body length, request target.
fn http_range_and_paths() {
    let seeds: [(&str, &str); 6] = [
        (
            "range-head",
            "bytes=0-187\n18800\n/live/cam/seg_12.ts?sid=5",
        ),
        ("range-suffix", "bytes=-500\n18800\n/live/cam/seg_12.m4s"),
        (
            "range-open",
            "bytes=1000-\n1200\n/live/cam/init_65537.mp4?sid=1",
        ),
        ("range-multi", "bytes=0-1,5-9\n100\n/live/cam/playlist.m3u8"),
        (
            "chunklist",
            "\n0\n/live/cam/chunks_fmp4.m3u8?sid=18446744073709551615",
        ),
        ("traversal", "bytes=0-0\n1\n/../etc/passwd"),
    ];
    for (name, text) in seeds {
        write("http_range_and_paths", name, text.as_bytes());
    }
}

/// The frames of ffmpeg's publish (H.264 and AAC, configuration first) as the rtmp
/// worker makes them: its messages through `rml_rtmp`'s server session, each body
/// through the FLV adapter at the message's time.
fn capture_frames() -> Vec<Frame> {
    let capture = repo("fuzz/corpus/rtmp_server_input/ffmpeg-publish");
    let mut handshake = Handshake::new(PeerType::Server);
    let HandshakeProcessResult::Completed {
        remaining_bytes, ..
    } = handshake.process_bytes(&capture).unwrap()
    else {
        panic!("the capture holds the whole handshake")
    };
    let (mut session, _) = ServerSession::new(ServerSessionConfig::new()).unwrap();
    let mut frames = Vec::new();
    // Read by read, requests accepted in between (as the worker does).
    for read in remaining_bytes.chunks(256) {
        let mut results: Vec<_> = session
            .handle_input(read)
            .unwrap()
            .into_iter()
            .rev()
            .collect();
        while let Some(result) = results.pop() {
            let ServerSessionResult::RaisedEvent(event) = result else {
                continue;
            };
            match event {
                ServerSessionEvent::ConnectionRequested { request_id, .. }
                | ServerSessionEvent::PublishStreamRequested { request_id, .. } => {
                    results.extend(
                        session
                            .accept_request(request_id)
                            .unwrap()
                            .into_iter()
                            .rev(),
                    );
                }
                ServerSessionEvent::VideoDataReceived {
                    data, timestamp, ..
                } => frames.push(flv_adapter::video_frame(
                    &data,
                    i64::from(timestamp.value) * 90,
                )),
                ServerSessionEvent::AudioDataReceived {
                    data, timestamp, ..
                } => frames.push(flv_adapter::audio_frame(
                    &data,
                    i64::from(timestamp.value) * 90,
                )),
                _ => {}
            }
        }
    }
    eprintln!("capture: {} media messages", frames.len());
    frames.into_iter().filter_map(Result::ok).collect()
}

/// An archive the DVR writer made from the capture: its index and each of its segment
/// files, in the `dvr_archive` target's format (u16 index length, index, segment).
fn dvr_archive(frames: &[Frame]) {
    use strom_media::dvr::{ArchiveWriter, SegmentEntry, segment_file_name};
    use strom_media::track_builder::TrackBuilder;
    let dir = std::env::temp_dir().join(format!("strom-dvr-seeds-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (mut writer, _) = ArchiveWriter::open(&dir).unwrap();
    let mut tracks = TrackBuilder::default();
    let mut configs = Vec::new();
    let mut open = None;
    let mut first_dts = 0;
    for frame in frames {
        if frame.config {
            configs.push((frame.codec, frame.payload.clone()));
        }
        let Some(sample) = tracks.accept_frame(frame.clone()) else {
            continue;
        };
        if open.is_none() {
            if !sample.keyframe {
                continue;
            }
            first_dts = sample.dts;
            open = Some(writer.begin(&configs).unwrap());
        }
        open.as_mut().unwrap().push(&sample).unwrap();
        if sample.dts - first_dts > 90_000 {
            let facts = SegmentEntry {
                seq: 0,
                period: 1,
                start_ms: 1_700_000_000_000 + first_dts / 90,
                start_dts: first_dts,
                duration: (sample.dts - first_dts) as u64,
                bytes: 0,
                samples: 0,
                width: 320,
                height: 240,
                vcodec: "avc1.42c00d".into(),
                acodec: "mp4a.40.2".into(),
                scte35: Vec::new(),
            };
            writer.commit(open.take().unwrap(), facts).unwrap();
        }
    }
    let index = std::fs::read(dir.join("index")).unwrap();
    for entry in writer.entries().iter().take(3) {
        let segment = std::fs::read(dir.join(segment_file_name(entry.seq))).unwrap();
        let mut seed = (index.len() as u16).to_be_bytes().to_vec();
        seed.extend_from_slice(&index);
        seed.extend_from_slice(&segment);
        write("dvr_archive", &format!("archive-{}", entry.seq), &seed);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// One frame in the `muxing` target's format, times absolute.
fn encode_frame(frame: &Frame, out: &mut Vec<u8>) {
    let header = frame.codec.to_u8()
        | u8::from(frame.keyframe) << 4
        | u8::from(frame.config) << 5
        | u8::from(frame.control) << 6;
    out.push(header);
    out.push(0x1f);
    out.extend_from_slice(&frame.dts.to_be_bytes());
    out.extend_from_slice(&frame.pts.to_be_bytes());
    let payload = &frame.payload[..frame.payload.len().min(0xffff)];
    out.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    out.extend_from_slice(payload);
}

fn muxing(frames: &[Frame]) {
    assert!(
        frames.iter().any(|f| f.config),
        "configuration in the capture"
    );
    // 1 s segments, DATERANGE cues; the capture's media three times over (about 1.3 s
    // each, two keyframes), so segments are cut.
    let mut all = vec![0xc1];
    for frame in frames.iter().filter(|f| f.config) {
        encode_frame(frame, &mut all);
    }
    for repeat in 0..3 {
        for frame in frames.iter().filter(|f| !f.config) {
            let offset = repeat * 120_000;
            let later = Frame {
                dts: frame.dts + offset,
                pts: frame.pts + offset,
                ..frame.clone()
            };
            encode_frame(&later, &mut all);
        }
    }
    write("muxing", "ffmpeg-h264-aac", &all);
    // SCTE-35 breaks (an out with a duration, then an in) between the keyframes, in each
    // cue style; and the same with the times jumping across the range.
    let marker = |dts: i64, out: bool| Frame {
        track: strom_media::frame::Track::Data,
        codec: strom_media::frame::Codec::Scte35,
        dts,
        pts: dts,
        keyframe: false,
        config: false,
        control: false,
        payload: Bytes::from(
            SpliceInfo::insert(
                7,
                out,
                u64::try_from(dts).ok(),
                Some(BreakDuration {
                    auto_return: true,
                    duration: 90_000,
                }),
            )
            .encode(),
        ),
        form: strom_media::frame::SourceForm::Neutral,
    };
    for (name, settings, jump) in [
        ("ffmpeg-scte35-daterange", 0x81, 0),
        ("ffmpeg-scte35-cue", 0x01, 0),
        ("ffmpeg-scte35-splicepoint", 0x41, 0),
        ("ffmpeg-scte35-wild-times", 0x01, i64::MIN + 1_000_000),
    ] {
        let mut out = vec![settings];
        for frame in frames.iter().filter(|f| f.config) {
            encode_frame(frame, &mut out);
        }
        for repeat in 0..4i64 {
            let offset = if repeat == 3 { jump } else { repeat * 120_000 };
            encode_frame(&marker(offset + 50_000, repeat % 2 == 0), &mut out);
            for frame in frames.iter().filter(|f| !f.config) {
                let later = Frame {
                    dts: frame.dts.wrapping_add(offset),
                    pts: frame.pts.wrapping_add(offset),
                    ..frame.clone()
                };
                encode_frame(&later, &mut out);
            }
        }
        write("muxing", name, &out);
    }
    // Regression: a break opened by a segment at i64::MIN and continued at 0 (it
    // overflowed the break's elapsed time).
    let mut out = vec![0x01];
    for frame in frames.iter().filter(|f| f.config) {
        encode_frame(frame, &mut out);
    }
    encode_frame(&marker(0, true), &mut out);
    let key = frames.iter().find(|f| f.keyframe && !f.config).unwrap();
    for dts in [i64::MIN, 0, 90_000, 180_000] {
        encode_frame(
            &Frame {
                dts,
                pts: dts,
                ..key.clone()
            },
            &mut out,
        );
    }
    write("muxing", "scte35-break-across-the-range", &out);
    // The same frames at times near the ends of i64 and across a jump back.
    let mut wild = vec![0x42];
    for (n, frame) in frames.iter().enumerate() {
        let offset = if n % 2 == 0 {
            i64::MAX - 90_000 * 4
        } else {
            -90_000
        };
        let shifted = Frame {
            dts: frame.dts.wrapping_add(offset),
            pts: frame.pts.wrapping_add(offset),
            ..frame.clone()
        };
        encode_frame(&shifted, &mut wild);
    }
    write("muxing", "ffmpeg-wild-times", &wild);
    // Audio only.
    let mut audio = vec![0x01];
    for frame in frames
        .iter()
        .filter(|f| f.codec == strom_media::frame::Codec::Aac)
    {
        encode_frame(frame, &mut audio);
    }
    write("muxing", "ffmpeg-aac-only", &audio);
}

fn config_files() {
    write(
        "config_files",
        "packaging-rules.conf",
        &repo("packaging/rules.conf"),
    );
    write(
        "config_files",
        "packaging-strom.conf",
        &repo("packaging/strom.conf"),
    );
    // The documented rules.conf examples (docs/configuration.md since the reference left
    // the README): its ```json blocks that the supervisor accepts as rules.conf (the
    // others are API answers).
    let readme = String::from_utf8(repo("docs/configuration.md")).unwrap();
    let mut n = 0;
    for block in readme.split("```json\n").skip(1) {
        let Some((json, _)) = block.split_once("```") else {
            continue;
        };
        if let Err(e) = config::rules::parse(json, Path::new("rules.conf")) {
            eprintln!("README block not taken: {e}");
            continue;
        }
        n += 1;
        write("config_files", &format!("readme-{n}.json"), json.as_bytes());
    }
}

/// Indexes the packager's store wrote: segments with a discontinuity, SCTE-35 tags and
/// two init segments, and one past the playlist window.
fn hls_index() {
    let run_dir = std::env::temp_dir().join(format!("strom-seeds-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&run_dir);
    let store = Store::new(
        &run_dir,
        Limits {
            max_ram_bytes: u64::MAX,
            grace: Duration::from_secs(30),
        },
    );
    let hls = store.get_or_create("live", "cam").unwrap();
    let facts = || SegmentFacts {
        codecs: String::from("avc1.64001f,mp4a.40.2"),
        width: 1280,
        height: 720,
        frame_rate: Some(25.0),
        independent: true,
        dash: None,
        scte35: Vec::new(),
    };
    hls.add_init(1 << 16 | 1, Bytes::from_static(b"init"));
    let index = || std::fs::read(run_dir.join("hls/live/cam/index.json")).unwrap();
    for n in 0..3 {
        let ts = Bytes::from(vec![0x47; 188 * (n + 1)]);
        hls.add_segment(
            6.006,
            1_795_000_000_000 + n as i64 * 6006,
            1 << 16 | 1,
            ts.clone(),
            ts,
            facts(),
            Vec::new(),
        );
    }
    let three = String::from_utf8(index()).unwrap();
    write(
        "hls_index",
        "three-segments",
        &prefixed(4, &[three.as_bytes(), b"\x47\x40\x00\x10"].concat()),
    );
    // Regressions: numbers the store cannot count on from (they overflowed).
    let at_max = three.replace(
        "\"next_sequence\":3",
        "\"next_sequence\":18446744073709551615",
    );
    write(
        "hls_index",
        "next-sequence-at-max",
        &prefixed(0, at_max.as_bytes()),
    );
    let at_max = three
        .replace(
            "\"discontinuity_sequence\":0",
            "\"discontinuity_sequence\":18446744073709551615",
        )
        .replace("\"discontinuity\":false", "\"discontinuity\":true");
    write(
        "hls_index",
        "discontinuities-at-max",
        &prefixed(0, at_max.as_bytes()),
    );
    hls.mark_discontinuity();
    hls.add_init(2 << 16 | 1, Bytes::from_static(b"init2"));
    let tags = vec![
        "#EXT-X-CUE-OUT:DURATION=30".to_owned(),
        "#EXT-X-DATERANGE:ID=\"1\",START-DATE=\"2026-11-21T04:05:09.000Z\",PLANNED-DURATION=30"
            .to_owned(),
    ];
    for n in 0..10 {
        let ts = Bytes::from(vec![0x47; 188]);
        let tags = if n == 0 { tags.clone() } else { Vec::new() };
        hls.add_segment(
            2.0,
            1_795_000_100_000 + n * 2000,
            2 << 16 | 1,
            ts.clone(),
            ts,
            facts(),
            tags,
        );
    }
    write(
        "hls_index",
        "window-discontinuity-cues",
        &prefixed(0, &index()),
    );
    let _ = std::fs::remove_dir_all(&run_dir);
}

/// What a server wrote to a client, exchanged in memory until both are quiet: the
/// server accepts (or rejects with `reject`) the connect, accepts the publish or play,
/// and for a play sends the capture's media.
fn server_replies(push: bool, app: &str, reject: Option<&str>, media: &[Frame]) -> Vec<u8> {
    let mut client_handshake = Handshake::new(PeerType::Client);
    let mut server_handshake = Handshake::new(PeerType::Server);
    let c0c1 = client_handshake.generate_outbound_p0_and_p1().unwrap();
    let mut wire = Vec::new();
    let HandshakeProcessResult::InProgress {
        response_bytes: s0s1s2,
    } = server_handshake.process_bytes(&c0c1).unwrap()
    else {
        panic!()
    };
    wire.extend_from_slice(&s0s1s2);
    let HandshakeProcessResult::Completed {
        response_bytes: c2, ..
    } = client_handshake.process_bytes(&s0s1s2).unwrap()
    else {
        panic!()
    };
    let HandshakeProcessResult::Completed { .. } = server_handshake.process_bytes(&c2).unwrap()
    else {
        panic!()
    };
    let (mut server, server_initial) = ServerSession::new(ServerSessionConfig::new()).unwrap();
    let mut config = ClientSessionConfig::new();
    config.tc_url = Some(format!("rtmp://127.0.0.1:1935/{app}"));
    let (mut client, client_initial) = ClientSession::new(config).unwrap();
    let mut to_server: Vec<u8> = Vec::new();
    let mut to_client: Vec<u8> = Vec::new();
    for result in server_initial {
        if let ServerSessionResult::OutboundResponse(packet) = result {
            to_client.extend_from_slice(&packet.bytes);
        }
    }
    let mut client_results = client_initial;
    client_results.push(client.request_connection(app.to_owned()).unwrap());
    let mut play_stream_id = None;
    for _ in 0..20 {
        for result in std::mem::take(&mut client_results) {
            match result {
                ClientSessionResult::OutboundResponse(packet) => {
                    to_server.extend_from_slice(&packet.bytes)
                }
                ClientSessionResult::RaisedEvent(ClientSessionEvent::ConnectionRequestAccepted) => {
                    let request = if push {
                        client.request_publishing("cam".to_owned(), PublishRequestType::Live)
                    } else {
                        client.request_playback("cam".to_owned())
                    };
                    client_results.push(request.unwrap());
                }
                _ => {}
            }
        }
        if !to_server.is_empty() {
            let mut results = server
                .handle_input(&std::mem::take(&mut to_server))
                .unwrap();
            while let Some(result) = results.pop() {
                match result {
                    ServerSessionResult::OutboundResponse(packet) => {
                        to_client.extend_from_slice(&packet.bytes)
                    }
                    ServerSessionResult::RaisedEvent(event) => match event {
                        ServerSessionEvent::ConnectionRequested { request_id, .. } => {
                            let answer = match reject {
                                Some(description) => server.reject_request(
                                    request_id,
                                    "NetConnection.Connect.Rejected",
                                    description,
                                ),
                                None => server.accept_request(request_id),
                            };
                            results.extend(answer.unwrap().into_iter().rev());
                        }
                        ServerSessionEvent::PublishStreamRequested { request_id, .. } => {
                            results.extend(
                                server.accept_request(request_id).unwrap().into_iter().rev(),
                            );
                        }
                        ServerSessionEvent::PlayStreamRequested {
                            request_id,
                            stream_id,
                            ..
                        } => {
                            results.extend(
                                server.accept_request(request_id).unwrap().into_iter().rev(),
                            );
                            play_stream_id = Some(stream_id);
                        }
                        _ => {}
                    },
                    ServerSessionResult::UnhandleableMessageReceived(_) => {}
                }
            }
        }
        if let Some(stream_id) = play_stream_id.take() {
            for frame in media.iter().take(40) {
                let body = flv_adapter::to_body(frame).unwrap();
                let at = RtmpTimestamp::new((frame.dts / 90) as u32);
                let packet = match frame.track {
                    strom_media::frame::Track::Video => {
                        server.send_video_data(stream_id, body, at, false)
                    }
                    _ => server.send_audio_data(stream_id, body, at, false),
                };
                to_client.extend_from_slice(&packet.unwrap().bytes);
            }
        }
        if to_client.is_empty() {
            break;
        }
        let bytes = std::mem::take(&mut to_client);
        wire.extend_from_slice(&bytes);
        client_results.extend(client.handle_input(&bytes).unwrap());
    }
    wire
}

fn client_replies() {
    let frames = capture_frames();
    // Mode: bit 0 push, bits 1-2 auth (0 none, 1 Adobe, 2 Limelight), bit 7 big reads.
    write(
        "client_replies",
        "push-accepted",
        &prefixed(0x81, &server_replies(true, "live", None, &[])),
    );
    write(
        "client_replies",
        "pull-with-media",
        &prefixed(0x80, &server_replies(false, "live", None, &frames)),
    );
    let adobe = AdobeAuth::default();
    let Verdict::Reject(need_auth) = adobe.check(&[], "bob", "secret") else {
        panic!()
    };
    write(
        "client_replies",
        "push-adobe-need-auth",
        &prefixed(0x83, &server_replies(true, "live", Some(&need_auth), &[])),
    );
    let identify = auth::split_query("live?authmod=adobe&user=bob").1;
    let Verdict::Reject(challenge) = adobe.check(&identify, "bob", "secret") else {
        panic!()
    };
    write(
        "client_replies",
        "push-adobe-challenge",
        &prefixed(
            0x83,
            &server_replies(true, "live?authmod=adobe&user=bob", Some(&challenge), &[]),
        ),
    );
    write(
        "client_replies",
        "adobe-challenge-text",
        &prefixed(0x02, challenge.as_bytes()),
    );
    let llnw =
        "[ AccessManager.Reject ] : [ authmod=llnw ] : ?reason=needauth&user=bob&nonce=N0nce";
    write(
        "client_replies",
        "llnw-challenge-text",
        &prefixed(0x04, llnw.as_bytes()),
    );
    let answer = br#"{"PublishAuthResponse":[{"seq":7,"status":"success"}]}"#;
    write("client_replies", "handler-answer", &prefixed(0x00, answer));
}
