//! Timed ID3 metadata in HLS TS segments: the PMT entry and descriptors Apple's spec
//! asks for, one private_stream_1 PES per tag with its PTS, placed before the first
//! sample decoded at or after it, and ffprobe reading the stream as `timed_id3`.

use std::collections::HashMap;

use super::pes::read_timestamp;
use super::tests::{check_continuity, packets};
use super::timed_id3::{METADATA_DESCRIPTOR, metadata_pointer_descriptor};
use super::*;
use crate::id3::{self, StreamTitle};
use crate::test_flv::{TempDir, make_h264_aac_flv, read_flv, run_ffmpeg_tool};
use crate::test_vectors::{aac_track, h264_track, length_prefixed};

fn tag(title: &str) -> Vec<u8> {
    id3::encode(&StreamTitle {
        title: title.into(),
        url: "http://radio.example".into(),
    })
}

fn sample(kind: TrackKind, dts: i64, keyframe: bool) -> Sample {
    Sample {
        kind,
        dts,
        pts: dts,
        keyframe,
        data: match kind {
            TrackKind::Video => length_prefixed(&[&[0x65, 0x88, 0x84]]),
            TrackKind::Audio => bytes::Bytes::from_static(&[0x21, 0x10, 0x04]),
        },
    }
}

#[test]
fn tags_go_out_as_pes_on_their_own_pid_listed_in_the_pmt() {
    let tracks = Tracks {
        video: Some(h264_track()),
        audio: Some(aac_track("1210")),
    };
    let samples: Vec<Sample> = (0..6)
        .map(|i| {
            let kind = if i % 2 == 0 {
                TrackKind::Video
            } else {
                TrackKind::Audio
            };
            sample(kind, i * 3000, i == 0)
        })
        .collect();
    let (a, b) = (tag("Song A"), tag("Song B"));
    let timed: [(i64, &[u8]); 2] = [(0, &a), (7000, &b)];
    let mut muxer = TsMuxer::new(&tracks);
    let mut ts = Vec::new();
    muxer
        .write_segment_with_metadata(&tracks, &[], &timed, &samples, &mut ts)
        .unwrap();
    let all = packets(&ts);

    // The PMT: the metadata pointer in the program loop, stream_type 0x15 on 0x103
    // with the metadata descriptor.
    let section = &all[1].payload[1..];
    let len = usize::from(u16::from_be_bytes([section[1], section[2]]) & 0xfff);
    assert_eq!(psi::crc32_mpeg2(&section[..3 + len]), 0);
    let info_len = usize::from(u16::from_be_bytes([section[10], section[11]]) & 0xfff);
    assert_eq!(
        &section[12..12 + info_len],
        &metadata_pointer_descriptor(PROGRAM_NUMBER)[..]
    );
    let es = &section[12 + info_len..3 + len - 4];
    let id3_entry = es
        .windows(5)
        .position(|w| {
            w[0] == STREAM_TYPE_METADATA && u16::from_be_bytes([w[1], w[2]]) & 0x1fff == ID3_PID
        })
        .expect("an ID3 stream in the PMT");
    let descriptors = &es[id3_entry + 5..];
    assert_eq!(usize::from(es[id3_entry + 4]), METADATA_DESCRIPTOR.len());
    assert_eq!(
        &descriptors[..METADATA_DESCRIPTOR.len()],
        &METADATA_DESCRIPTOR[..]
    );

    // One PES per tag, private_stream_1, PTS only, the tag whole; placed before the
    // first sample decoded at or after it.
    let order: Vec<u16> = all
        .iter()
        .filter(|p| p.unit_start && (VIDEO_PID..=ID3_PID).contains(&p.pid))
        .map(|p| p.pid)
        .collect();
    assert_eq!(
        order,
        [
            ID3_PID, VIDEO_PID, AUDIO_PID, VIDEO_PID, ID3_PID, AUDIO_PID, VIDEO_PID, AUDIO_PID
        ],
        "{order:x?}"
    );
    let id3: Vec<&[u8]> = all
        .iter()
        .filter(|p| p.pid == ID3_PID)
        .map(|p| p.payload)
        .collect();
    assert_eq!(id3.len(), 2, "each tag fits one packet");
    for (raw, (pts, want)) in id3.iter().zip(timed) {
        assert_eq!(raw[..4], [0, 0, 1, 0xbd]);
        assert_eq!(
            usize::from(u16::from_be_bytes([raw[4], raw[5]])),
            3 + 5 + want.len()
        );
        assert_eq!((raw[7], raw[8]), (0x80, 5), "PTS only");
        assert_eq!(read_timestamp(&raw[9..14]), pts as u64);
        assert_eq!(&raw[14..14 + want.len()], want);
    }

    // Later segments keep listing the PID; counters run on.
    let mut next = Vec::new();
    muxer.write_segment(&tracks, &samples, &mut next).unwrap();
    let section = &packets(&next)[1].payload[1..];
    assert!(
        section
            .windows(METADATA_DESCRIPTOR.len())
            .any(|w| w == METADATA_DESCRIPTOR)
    );
    check_continuity(&[ts, next].concat(), &mut HashMap::new());
}

#[test]
fn ffprobe_reads_a_timed_id3_stream() {
    let dir = TempDir::new("ts-id3");
    let (tracks, samples) = read_flv(make_h264_aac_flv(dir.path()));
    let song = tag("Song A");
    let timed: [(i64, &[u8]); 1] = [(samples[0].dts + 9000, &song)];
    let mut ts = Vec::new();
    TsMuxer::new(&tracks)
        .write_segment_with_metadata(&tracks, &[], &timed, &samples, &mut ts)
        .unwrap();
    let path = dir.path().join("id3.ts");
    std::fs::write(&path, &ts).unwrap();
    let probed = run_ffmpeg_tool(
        "ffprobe",
        &[
            "-v",
            "error",
            "-show_entries",
            "stream=codec_name",
            "-show_packets",
            "-show_data",
            "-select_streams",
            "d",
            path.to_str().unwrap(),
        ],
    );
    let stdout = String::from_utf8_lossy(&probed.stdout);
    let stderr = String::from_utf8_lossy(&probed.stderr);
    assert!(probed.status.success() && stderr.is_empty(), "{stderr}");
    assert!(stdout.contains("codec_name=timed_id3"), "{stdout}");
    assert!(
        stdout.contains("Song A"),
        "the tag in the packet data:\n{stdout}"
    );
}
