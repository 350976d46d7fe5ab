//! Where the cutter starts and ends segments and periods.

use super::cutter::{Cut, Cutter};
use bytes::Bytes;
use strom_media::frame::{Codec, Frame, Track};

/// An avcC record (High profile, level 3.1) with one SPS and one PPS.
const AVCC: &[u8] = &[
    0x01, 0x64, 0x00, 0x1f, 0xff, 0xe1, 0x00, 0x04, 0x67, 0x64, 0x00, 0x1f, 0x01, 0x00, 0x04, 0x68,
    0xee, 0x3c, 0x80,
];
const ASC: &[u8] = &[0x12, 0x10];

fn config(codec: Codec, record: &'static [u8]) -> Frame {
    let track = codec.track().unwrap_or(Track::Video);
    let mut frame = Frame::neutral(track, codec, 0, Bytes::from_static(record));
    frame.config = true;
    frame
}

fn video(dts: i64, keyframe: bool) -> Frame {
    let mut frame = Frame::neutral(
        Track::Video,
        Codec::H264,
        dts,
        Bytes::from_static(&[0, 0, 0, 1, 0x65]),
    );
    frame.keyframe = keyframe;
    frame
}

fn audio(dts: i64) -> Frame {
    Frame::neutral(
        Track::Audio,
        Codec::Aac,
        dts,
        Bytes::from_static(&[0xde, 0xad]),
    )
}

/// Feeds frames of `generation` and returns what the cutter decided, compactly:
/// `B` begin, `S<dts>` sample, `C<period>:<start_dts>+<duration>` close.
fn run(cutter: &mut Cutter, frames: &[Frame], generation: u32) -> Vec<String> {
    let mut out = Vec::new();
    for frame in frames {
        cutter.push(
            frame,
            generation,
            1_700_000_000_000 + frame.dts / 90,
            &mut |cut| {
                out.push(match cut {
                    Cut::Begin => "B".to_owned(),
                    Cut::Sample(s) => format!("S{}", s.dts),
                    Cut::Close(e, _) => format!("C{}:{}+{}", e.period, e.start_dts, e.duration),
                });
            },
        );
    }
    out
}

#[test]
fn segments_start_at_keyframes_after_the_segment_length() {
    let mut cutter = Cutter::new(2, 1);
    let frames = [
        config(Codec::H264, AVCC),
        config(Codec::Aac, ASC),
        audio(0),
        video(0, false),
        video(90_000, true),
        audio(90_000),
        video(180_000, false),
        video(270_000, true),
        video(360_000, true),
    ];
    let cuts = run(&mut cutter, &frames, 7);
    assert_eq!(
        cuts,
        [
            "B",
            "S90000",
            "S90000",
            "S180000",
            "C1:90000+180000",
            "B",
            "S270000",
            "S360000"
        ],
        "nothing before the first keyframe; a keyframe 1 s in does not cut, one 2 s in does"
    );
    let (last, configs) = cutter.finish().unwrap();
    assert_eq!(configs.len(), 2);
    // Its end: the last video frame plus the video frame spacing measured.
    assert_eq!((last.start_dts, last.duration), (270_000, 180_000));
    assert_eq!(last.vcodec, "avc1.64001f");
    assert_eq!(last.acodec, "mp4a.40.2");
    assert_eq!(
        cutter.configs().len(),
        2,
        "a segment carries both configurations"
    );
}

#[test]
fn a_new_publisher_closes_the_period_and_a_codec_change_the_segment() {
    let mut cutter = Cutter::new(6, 3);
    let first = run(
        &mut cutter,
        &[
            config(Codec::H264, AVCC),
            video(0, true),
            video(3000, false),
        ],
        1,
    );
    assert_eq!(first, ["B", "S0", "S3000"]);
    // Another publisher: the open segment ends the period; the new one waits for its
    // configuration and a keyframe.
    let second = run(
        &mut cutter,
        &[
            video(100, true),
            config(Codec::H264, AVCC),
            video(200, true),
        ],
        2,
    );
    assert_eq!(second, ["C3:0+6000", "B", "S200"]);
    // The same configuration again changes nothing; another one closes the segment.
    let same = run(
        &mut cutter,
        &[config(Codec::H264, AVCC), video(3200, false)],
        2,
    );
    assert_eq!(same, ["S3200"]);
    // A track that joins does not cut: its samples follow its configuration.
    let joined = run(&mut cutter, &[config(Codec::Aac, ASC), audio(6200)], 2);
    assert_eq!(joined, ["S6200"]);
    assert_eq!(cutter.configs().len(), 2);
    const OTHER_ASC: &[u8] = &[0x11, 0x90];
    let changed = run(
        &mut cutter,
        &[
            config(Codec::Aac, OTHER_ASC),
            audio(8000),
            video(9000, true),
        ],
        2,
    );
    assert_eq!(
        changed,
        ["C4:200+7920", "B", "S9000"],
        "a changed configuration cuts; audio waits for the next keyframe"
    );
}

#[test]
fn an_audio_only_stream_starts_anywhere() {
    let mut cutter = Cutter::new(1, 1);
    let frames = [
        config(Codec::Aac, ASC),
        audio(0),
        audio(45_000),
        audio(90_000),
    ];
    assert_eq!(
        run(&mut cutter, &frames, 1),
        ["B", "S0", "S45000", "C1:0+90000", "B", "S90000"]
    );
}

/// A SCTE-35 splice cuts at the next keyframe, short of the segment length, and the
/// segment that starts there carries the section; a section that does not splice
/// neither cuts nor is kept.
#[test]
fn a_splice_marker_cuts_at_the_next_keyframe_and_stays_with_its_segment() {
    use strom_media::scte35::SpliceInfo;
    let mut cutter = Cutter::new(6, 1);
    let first = run(
        &mut cutter,
        &[
            config(Codec::H264, AVCC),
            video(0, true),
            video(3000, false),
        ],
        1,
    );
    assert_eq!(first, ["B", "S0", "S3000"]);
    let out = SpliceInfo::insert(5, true, None, None).encode();
    cutter.marker(b"not a section");
    cutter.marker(&out);
    let mut closed = Vec::new();
    for frame in [
        video(6000, false),
        video(90_000, true),
        video(93_000, false),
    ] {
        cutter.push(&frame, 1, 1_700_000_000_000, &mut |cut| {
            if let Cut::Close(entry, _) = cut {
                closed.push(entry);
            }
        });
    }
    assert_eq!(closed.len(), 1, "cut at the keyframe 1 s in");
    assert_eq!((closed[0].start_dts, closed[0].duration), (0, 90_000));
    assert!(closed[0].scte35.is_empty());
    let (spliced, _) = cutter.finish().unwrap();
    assert_eq!(spliced.start_dts, 90_000);
    assert_eq!(spliced.scte35, [Bytes::from(out)]);
}

/// MP3 has no configuration frames: the cutter makes one from the frames' headers, so
/// the segment carries the track's record; a new bit rate goes on in the segment, a new
/// sample rate closes it.
#[test]
fn mp3_frames_make_their_own_configuration() {
    let mp3 = |dts: i64, header: &'static [u8]| {
        Frame::neutral(Track::Audio, Codec::Mp3, dts, Bytes::from_static(header))
    };
    // MPEG-1 layer III 44.1 kHz at 128 and 160 kbit/s, then 48 kHz.
    let (k128, k160, k48) = (
        &[0xff, 0xfb, 0x90, 0x64, 0, 0][..],
        &[0xff, 0xfb, 0xa0, 0x64, 0, 0][..],
        &[0xff, 0xfb, 0x94, 0x64, 0, 0][..],
    );
    let mut cutter = Cutter::new(2, 0);
    let cuts = run(
        &mut cutter,
        &[
            mp3(0, k128),
            mp3(2351, k160),
            mp3(4702, k48),
            mp3(6862, k48),
        ],
        1,
    );
    assert_eq!(
        cuts,
        ["B", "S0", "S2351", "C0:0+4702", "B", "S4702", "S6862"]
    );
    assert_eq!(cutter.configs().len(), 1);
    let (codec, record) = &cutter.configs()[0];
    assert_eq!(*codec, Codec::Mp3);
    let config = strom_media::mpeg_audio::MpegAudioConfig::of_frame(record).unwrap();
    assert_eq!((config.sample_rate, config.frame_samples()), (48_000, 1152));
    // Bytes that are no MPEG audio frame are not recorded.
    assert!(run(&mut cutter, &[mp3(9000, &[0x49, 0x44, 0x33, 3])], 1).is_empty());
}
