//! [`TsFeed`] against real media: a transport stream ffmpeg (Debian package `ffmpeg`)
//! wrote is demuxed into frames, published, and read back by two receivers, one of
//! which loses a whole GOP; both outputs must demux without continuity errors and
//! decode in ffmpeg without an error.

use crate::shared_frame::SharedFrame;
use crate::ts_feed::TsFeed;
use bytes::BytesMut;
use std::process::Command;
use strom_media::frame::{Frame, Track};
use strom_media::ts_demux::{DemuxEvent, TsDemuxer};

fn run(tool: &str, args: &[&str]) -> std::process::Output {
    Command::new(tool).args(args).output().unwrap_or_else(|e| {
        panic!("{tool} could not run ({e}): install the Debian package `ffmpeg`")
    })
}

fn ffmpeg_h264_aac(path: &std::path::Path) {
    let output = run(
        "ffmpeg",
        &[
            "-v",
            "error",
            "-y",
            "-nostdin",
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=320x240:rate=25",
            "-f",
            "lavfi",
            "-i",
            "sine=frequency=1000",
            "-t",
            "3",
            "-c:v",
            "libx264",
            "-g",
            "25",
            "-c:a",
            "aac",
            "-f",
            "mpegts",
            path.to_str().unwrap(),
        ],
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn demux(ts: &[u8]) -> (Vec<Frame>, Vec<DemuxEvent>) {
    let mut demuxer = TsDemuxer::new(None);
    demuxer.push(ts);
    demuxer.flush();
    let frames = std::iter::from_fn(|| demuxer.next_frame()).collect();
    let events = std::iter::from_fn(|| demuxer.next_event()).collect();
    (frames, events)
}

#[test]
fn receivers_get_decodable_streams_with_continuous_counters_across_a_lost_gop() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source.ts");
    ffmpeg_h264_aac(&source);
    let (frames, _) = demux(&std::fs::read(&source).unwrap());
    let shared: Vec<SharedFrame> = frames.into_iter().map(|f| SharedFrame::new(f, 7)).collect();
    let keyframes: Vec<usize> = shared
        .iter()
        .enumerate()
        .filter(|(_, f)| f.frame.track == Track::Video && f.frame.keyframe && !f.frame.config)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(keyframes.len(), 3, "one keyframe per second");

    let (mut whole, mut lossy) = (TsFeed::new(), TsFeed::new());
    let (mut whole_out, mut lossy_out) = (BytesMut::new(), BytesMut::new());
    for (i, frame) in shared.iter().enumerate() {
        whole.push(frame, &mut whole_out);
        // The second GOP is lost by the slow receiver, as the hub drops it (its
        // configuration frames came first and are kept).
        let lost = (keyframes[1]..keyframes[2]).contains(&i) && !frame.frame.config;
        if !lost {
            lossy.push(frame, &mut lossy_out);
        }
    }
    assert!(lossy_out.len() < whole_out.len() * 3 / 4);
    for (name, out) in [("whole", &whole_out), ("lossy", &lossy_out)] {
        // A receiver starts with its own tables: PAT on PID 0, then the PMT.
        assert_eq!(&out[..4], &[0x47, 0x40, 0x00, 0x10], "{name}");
        let (frames, events) = demux(out);
        assert!(
            !events.iter().any(|e| matches!(
                e,
                DemuxEvent::ContinuityError { .. }
                    | DemuxEvent::MalformedPes { .. }
                    | DemuxEvent::BadSection { .. }
            )),
            "{name}: {events:?}"
        );
        let video = frames
            .iter()
            .filter(|f| f.track == Track::Video && f.is_sample())
            .count();
        let expected = if name == "whole" { 75 } else { 50 };
        assert_eq!(video, expected, "{name}");
        let path = dir.path().join(format!("{name}.ts"));
        std::fs::write(&path, out).unwrap();
        let decoded = run(
            "ffmpeg",
            &[
                "-v",
                "error",
                "-nostdin",
                "-i",
                path.to_str().unwrap(),
                "-f",
                "null",
                "-",
            ],
        );
        assert!(decoded.status.success());
        assert_eq!(
            String::from_utf8_lossy(&decoded.stderr),
            "",
            "{name} decodes cleanly"
        );
    }
}

#[test]
fn frames_are_rendered_once_for_all_receivers_and_nothing_before_a_keyframe() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source.ts");
    ffmpeg_h264_aac(&source);
    let (frames, _) = demux(&std::fs::read(&source).unwrap());
    let shared: Vec<SharedFrame> = frames.into_iter().map(|f| SharedFrame::new(f, 1)).collect();
    let first_key = shared
        .iter()
        .position(|f| f.frame.keyframe && !f.frame.config)
        .unwrap();
    let mut first = TsFeed::new();
    let mut out = BytesMut::new();
    for frame in &shared {
        first.push(frame, &mut out);
    }
    // A receiver that joins after the first keyframe (configuration frames only, as
    // the hub's headers) writes nothing until the next keyframe, then renders nothing:
    // the packets are already in the frames.
    let mut late = TsFeed::new();
    let mut late_out = BytesMut::new();
    for frame in shared.iter().filter(|f| f.frame.config) {
        late.push(frame, &mut late_out);
    }
    assert!(late_out.is_empty());
    let second_key = shared
        .iter()
        .skip(first_key + 1)
        .position(|f| f.frame.keyframe && f.frame.track == Track::Video && !f.frame.config)
        .unwrap()
        + first_key
        + 1;
    assert_eq!(late.push(&shared[second_key - 1], &mut late_out), 0);
    let before = shared[second_key].mpegts(|_| None).unwrap().clone();
    let written = late.push(&shared[second_key], &mut late_out);
    // Own PAT and PMT, then the shared packets (counters aside).
    assert_eq!(written, 2 * 188 + before.len());
    assert!(std::ptr::eq(
        shared[second_key].mpegts(|_| None).unwrap().as_ptr(),
        before.as_ptr()
    ));
}

/// CRC-32/MPEG-2, for the test's own section.
fn crc32_mpeg2(data: &[u8]) -> u32 {
    data.iter().fold(0xffff_ffff, |mut crc, &byte| {
        crc ^= u32::from(byte) << 24;
        for _ in 0..8 {
            crc = if crc & 0x8000_0000 != 0 {
                (crc << 1) ^ 0x04c1_1db7
            } else {
                crc << 1
            };
        }
        crc
    })
}

#[test]
fn scte35_markers_pass_through_on_their_own_pid_with_the_cuei_descriptor() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source.ts");
    ffmpeg_h264_aac(&source);
    let (frames, _) = demux(&std::fs::read(&source).unwrap());
    // A splice_info_section (splice_null) with its CRC.
    let mut section = vec![
        0xfc, 0x30, 0x12, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xf0, 0, 0, 0, 0, 0,
    ];
    section.extend_from_slice(&crc32_mpeg2(&section).to_be_bytes());
    let mut shared: Vec<SharedFrame> = Vec::new();
    for (i, frame) in frames.into_iter().enumerate() {
        if i == 40 {
            shared.push(SharedFrame::new(
                Frame {
                    track: Track::Data,
                    codec: strom_media::frame::Codec::Scte35,
                    dts: frame.dts,
                    pts: frame.dts,
                    keyframe: false,
                    config: false,
                    control: false,
                    payload: bytes::Bytes::from(section.clone()),
                    form: strom_media::frame::SourceForm::Neutral,
                },
                1,
            ));
        }
        shared.push(SharedFrame::new(frame, 1));
    }
    let mut feed = TsFeed::new();
    let mut out = BytesMut::new();
    for frame in &shared {
        feed.push(frame, &mut out);
    }
    assert!(
        out.windows(6)
            .any(|w| w == [0x05, 0x04, b'C', b'U', b'E', b'I']),
        "CUEI registration in the PMT"
    );
    let (frames, events) = demux(&out);
    assert!(
        !events.iter().any(|e| matches!(
            e,
            DemuxEvent::ContinuityError { .. } | DemuxEvent::BadSection { .. }
        )),
        "{events:?}"
    );
    let markers: Vec<&Frame> = frames
        .iter()
        .filter(|f| f.codec == strom_media::frame::Codec::Scte35)
        .collect();
    assert_eq!(markers.len(), 1);
    assert_eq!(markers[0].payload[..], section[..]);
    assert_eq!(
        frames
            .iter()
            .filter(|f| f.track == Track::Video && f.is_sample())
            .count(),
        75
    );
}
