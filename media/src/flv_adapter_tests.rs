//! FLV adapter tests: byte-identical round trips over hand-made and ffmpeg bodies,
//! canonical headers for frames from other producers, and errors.

use super::*;
use crate::test_flv::{TempDir, flv_tags, make_h264_aac_flv};
use crate::test_vectors::{ASC, AVCC, HVCC, hex};

/// (video?, body, codec, keyframe, config, control, composition ms, payload).
type Body = (
    bool,
    &'static str,
    Codec,
    bool,
    bool,
    bool,
    i64,
    &'static str,
);

/// Every body the FLV parser tests and the rtmp component test
/// `enhanced_rtmp_hevc_and_av1_pass_through_byte_identical` use.
#[rustfmt::skip]
const BODIES: &[Body] = &[
    // Legacy AVC, as ffmpeg's FLV muxer writes them.
    (true, "17 00 000000 0164000d", Codec::H264, false, true, false, 0, "0164000d"),
    (true, "17 01 000050 00000002ae06", Codec::H264, true, false, false, 80, "00000002ae06"),
    (true, "27 01 0000a0 000001a9", Codec::H264, false, false, false, 160, "000001a9"),
    (true, "27 01 ffffd8 aa", Codec::H264, false, false, false, -40, "aa"),
    (true, "17 02 000000", Codec::H264, false, false, true, 0, ""),
    // A non-zero time on a sequence header is kept as it came.
    (true, "17 00 000005 01", Codec::H264, false, true, false, 5, "01"),
    // Disposable inter frame (type 3), generated key frame (type 4).
    (true, "37 01 000000 bb", Codec::H264, false, false, false, 0, "bb"),
    (true, "47 01 000028 bb", Codec::H264, false, false, false, 40, "bb"),
    // Legacy HEVC with codec id 12.
    (true, "1c 00 000000 01", Codec::H265, false, true, false, 0, "01"),
    (true, "2c 01 000028 bb", Codec::H265, false, false, false, 40, "bb"),
    // Other legacy codecs pass their body through.
    (true, "22 0102", Codec::Unknown, false, false, false, 0, "0102"),
    // Enhanced RTMP.
    (true, "90 68766331 0101", Codec::H265, false, true, false, 0, "0101"),
    (true, "91 68766331 000028 cc", Codec::H265, true, false, false, 40, "cc"),
    (true, "a1 61766331 ffffff dd", Codec::H264, false, false, false, -1, "dd"),
    (true, "a3 68766331 ee", Codec::H265, false, false, false, 0, "ee"),
    (true, "91 61763031 0a0b", Codec::Av1, true, false, false, 0, "0a0b"),
    (true, "90 76703039 01", Codec::Vp9, false, true, false, 0, "01"),
    (true, "92 61763031", Codec::Av1, false, false, true, 0, ""),
    (true, "84 68766331 02", Codec::H265, false, false, true, 0, "02"),
    (true, "95 61763031 80", Codec::Av1, false, false, true, 0, "80"),
    (true, "d1 68766331 01", Codec::H265, false, false, true, 0, "01"),
    (true, "91 61626364 ff", Codec::Unknown, true, false, false, 0, "ff"),
    // The component test's HEVC stream (times 80, 40, -40; CodedFramesX) and AV1.
    (true, "91 68766331 000050 00000005 2601af0940", Codec::H265, true, false, false, 80, "00000005 2601af0940"),
    (true, "a1 68766331 000028 00000004 0201d011", Codec::H265, false, false, false, 40, "00000004 0201d011"),
    (true, "a1 68766331 ffffd8 00000004 0001e022", Codec::H265, false, false, false, -40, "00000004 0001e022"),
    (true, "a3 68766331 00000002 0201", Codec::H265, false, false, false, 0, "00000002 0201"),
    (true, "90 61763031 81080c00 0a0b00000024c6abdf3efe2404", Codec::Av1, false, true, false, 0, "81080c00 0a0b00000024c6abdf3efe2404"),
    (true, "91 61763031 12000a0b00000024c6ab32", Codec::Av1, true, false, false, 0, "12000a0b00000024c6ab32"),
    (true, "a1 61763031 1200 3210 abcdef", Codec::Av1, false, false, false, 0, "1200 3210 abcdef"),
    // Audio.
    (false, "af 00 1208 56e500", Codec::Aac, false, true, false, 0, "120856e500"),
    (false, "af 00 1210", Codec::Aac, false, true, false, 0, "1210"),
    (false, "af 01 de02", Codec::Aac, false, false, false, 0, "de02"),
    (false, "af 01 21100460", Codec::Aac, false, false, false, 0, "21100460"),
    (false, "af 01", Codec::Aac, false, false, false, 0, ""),
    (false, "ae 01 de02", Codec::Aac, false, false, false, 0, "de02"),
    (false, "2f fffb", Codec::Mp3, false, false, false, 0, "fffb"),
    (false, "e2 fff3", Codec::Mp3, false, false, false, 0, "fff3"),
    (false, "b2 0102", Codec::Unknown, false, false, false, 0, "0102"),
];

fn parse(video: bool, body: &Bytes, dts: i64) -> Result<Frame, ParseError> {
    if video {
        video_frame(body, dts)
    } else {
        audio_frame(body, dts)
    }
}

#[test]
fn bodies_round_trip_byte_identical() {
    for &(video, input, codec, keyframe, config, control, cts, payload) in BODIES {
        let body = Bytes::from(hex(input));
        let frame = parse(video, &body, 9000).unwrap();
        let track = if video { Track::Video } else { Track::Audio };
        assert_eq!(
            (
                frame.track,
                frame.codec,
                frame.keyframe,
                frame.config,
                frame.control
            ),
            (track, codec, keyframe, config, control),
            "{input}"
        );
        assert_eq!((frame.dts, frame.pts), (9000, 9000 + cts * 90), "{input}");
        assert_eq!(frame.payload, hex(payload), "{input}");
        // Zero-copy: the payload is the tail of the body.
        assert_eq!(
            frame.payload.as_ptr_range().end,
            body.as_ptr_range().end,
            "{input}"
        );
        assert_eq!(to_body(&frame).unwrap(), body, "{input}");
        let header = header(&frame).unwrap();
        assert_eq!(
            [header.as_slice(), &frame.payload].concat(),
            body.to_vec(),
            "{input}"
        );
    }
}

#[test]
fn long_component_test_bodies_round_trip() {
    let big: Vec<u8> = (0..9000u32).map(|i| (i * 7 + 3) as u8).collect();
    for prefix in ["91 68766331 000000", "a1 61763031", "af 01"] {
        let body = Bytes::from([hex(prefix), big.clone()].concat());
        let frame = parse(prefix != "af 01", &body, 0).unwrap();
        assert_eq!(frame.payload, big);
        assert_eq!(to_body(&frame).unwrap(), body);
    }
}

#[test]
fn records_round_trip_in_both_headers() {
    for (record, ..) in AVCC.iter().chain(HVCC) {
        for prefix in ["17 00 000000", "1c 00 000000", "90 68766331", "90 61766331"] {
            let body = Bytes::from([hex(prefix), hex(record)].concat());
            let frame = video_frame(&body, 0).unwrap();
            assert!(frame.config && frame.payload == hex(record));
            assert_eq!(to_body(&frame).unwrap(), body);
        }
    }
    for (asc, ..) in ASC {
        let body = Bytes::from([hex("af 00"), hex(asc)].concat());
        let frame = audio_frame(&body, 0).unwrap();
        assert!(frame.config && frame.payload == hex(asc));
        assert_eq!(to_body(&frame).unwrap(), body);
    }
}

#[test]
fn ffmpeg_capture_round_trips_every_tag() {
    let dir = TempDir::new("flv-adapter");
    let tags = flv_tags(make_h264_aac_flv(dir.path()));
    let (mut video, mut audio, mut data, mut reordered) = (0, 0, 0, 0);
    for (tag_type, timestamp_ms, body) in tags {
        let dts = i64::from(timestamp_ms) * 90;
        let frame = match tag_type {
            8 => {
                audio += 1;
                audio_frame(&body, dts).unwrap()
            }
            9 => {
                video += 1;
                let frame = video_frame(&body, dts).unwrap();
                let tag = VideoTag::parse(&body, timestamp_ms).unwrap();
                assert_eq!(frame.keyframe, tag.is_keyframe());
                if frame.is_sample() {
                    assert_eq!(frame.pts, tag.pts_ms() * 90);
                }
                reordered += usize::from(frame.pts != frame.dts);
                frame
            }
            _ => {
                data += 1;
                data_frame(&body, dts)
            }
        };
        assert_eq!(to_body(&frame).unwrap(), body, "tag type {tag_type}");
    }
    assert!(video >= 101, "sequence header and 100 frames");
    assert!(audio > 100 && data == 1 && reordered > 0);
}

#[test]
fn neutral_frames_get_canonical_headers() {
    let neutral = |codec, keyframe, config, pts| Frame {
        track: codec_track(codec),
        codec,
        dts: 900,
        pts,
        keyframe,
        config,
        control: false,
        payload: Bytes::from_static(&[0xaa, 0xbb]),
        form: SourceForm::Neutral,
    };
    #[rustfmt::skip]
    let cases = [
        (neutral(Codec::H264, false, true, 900), "17 00 000000 aabb"),
        (neutral(Codec::H264, true, false, 4500), "17 01 000028 aabb"),
        (neutral(Codec::H264, false, false, 0), "27 01 fffff6 aabb"),
        (neutral(Codec::H265, false, true, 900), "90 68766331 aabb"),
        (neutral(Codec::H265, true, false, 4500), "91 68766331 000028 aabb"),
        (neutral(Codec::Av1, false, false, 900), "a1 61763031 aabb"),
        (neutral(Codec::Vp9, false, true, 900), "90 76703039 aabb"),
        (neutral(Codec::Aac, false, true, 900), "af 00 aabb"),
        (neutral(Codec::Aac, false, false, 900), "af 01 aabb"),
        (neutral(Codec::Mp3, false, false, 900), "2f aabb"),
        (neutral(Codec::AmfData, false, false, 900), "aabb"),
    ];
    for (frame, want) in cases {
        let body = to_body(&frame).unwrap();
        assert_eq!(body, hex(want), "{:?}", frame.codec);
        if frame.codec == Codec::AmfData {
            assert_eq!(body.as_ptr(), frame.payload.as_ptr(), "data is not copied");
            continue;
        }
        // Parsing the canonical body gives the frame back (with its FLV form).
        let back = parse(frame.track == Track::Video, &body, frame.dts).unwrap();
        assert_eq!(
            Frame {
                form: SourceForm::Neutral,
                ..back
            },
            frame
        );
    }
    for codec in [
        Codec::Opus,
        Codec::Ac3,
        Codec::Scte35,
        Codec::TimedMetadata,
        Codec::Unknown,
    ] {
        assert_eq!(
            to_body(&neutral(codec, false, false, 900)),
            Err(ParseError::Unsupported("codec in FLV")),
            "{codec:?}"
        );
    }
    let mut eos = neutral(Codec::H264, false, false, 900);
    eos.control = true;
    assert!(to_body(&eos).is_err());
}

fn codec_track(codec: Codec) -> Track {
    codec.track().unwrap_or(Track::Data)
}

#[test]
fn composition_time_out_of_range_is_an_error() {
    let mut frame = video_frame(&Bytes::from(hex("17 01 7fffff aa")), 0).unwrap();
    assert_eq!(frame.pts, 0x7f_ffff * 90);
    assert!(to_body(&frame).is_ok());
    frame.pts += 90;
    assert_eq!(
        to_body(&frame),
        Err(ParseError::Invalid("FLV composition time"))
    );
    frame.pts = i64::MIN;
    assert!(to_body(&frame).is_err());
}

#[test]
fn truncated_and_unsupported_bodies_are_errors() {
    let cases: &[(bool, &str, ParseError)] = &[
        (true, "", ParseError::Truncated("video tag header")),
        (true, "17", ParseError::Truncated("AVC video packet header")),
        (
            true,
            "17 01 0000",
            ParseError::Truncated("AVC video packet header"),
        ),
        (
            true,
            "17 03 000000",
            ParseError::Unsupported("AVC packet type"),
        ),
        (
            true,
            "91 6176",
            ParseError::Truncated("Enhanced RTMP video FourCC"),
        ),
        (
            true,
            "91 61766331 00",
            ParseError::Truncated("Enhanced RTMP composition time"),
        ),
        (
            true,
            "96 61766331",
            ParseError::Unsupported("Enhanced RTMP video packet type"),
        ),
        (false, "", ParseError::Truncated("audio tag header")),
        (false, "af", ParseError::Truncated("AAC packet type")),
        (false, "af 02", ParseError::Unsupported("AAC packet type")),
        (
            false,
            "90 4f707573",
            ParseError::Unsupported("Enhanced RTMP audio"),
        ),
    ];
    for &(video, input, err) in cases {
        assert_eq!(
            parse(video, &Bytes::from(hex(input)), 0),
            Err(err),
            "{input}"
        );
    }
    // Every prefix of every body parses or errs, and what parses rebuilds itself.
    for &(video, input, ..) in BODIES {
        let body = hex(input);
        for end in 0..=body.len() {
            let prefix = Bytes::copy_from_slice(&body[..end]);
            if let Ok(frame) = parse(video, &prefix, 0) {
                assert_eq!(to_body(&frame).unwrap(), prefix, "{input} [..{end}]");
            }
        }
    }
}

#[test]
fn form_bytes_round_trip() {
    for &(video, input, ..) in BODIES {
        let frame = parse(video, &Bytes::from(hex(input)), 0).unwrap();
        let SourceForm::Flv(form) = frame.form else {
            panic!("FLV frames keep their form")
        };
        assert_eq!(FlvForm::from_bytes(form.to_bytes()), Ok(form), "{input}");
    }
    assert_eq!(
        FlvForm::from_bytes([6, 0, 0, 0, 0, 0]),
        Err(ParseError::Invalid("FLV form length"))
    );
}
