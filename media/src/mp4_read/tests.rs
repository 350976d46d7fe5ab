//! The MP4 reader on a real file (`tiny.mp4`: one second of ffmpeg's `testsrc` at
//! 64x48, 10 fps, libx264 with a GOP of 5 and B-frames, and a 48 kHz AAC sine, made by
//! `ffmpeg -f lavfi -i testsrc=size=64x48:rate=10 -f lavfi -i sine=sample_rate=48000
//! -t 1 -c:v libx264 -g 5 -bf 2 -c:a aac -b:a 32k tiny.mp4`), on one of another codec
//! (`mp4v.mp4`: MPEG-4 part 2 video, `-c:v mpeg4` at 64x48 and 5 fps for 1 s) and on
//! broken ones.
#![allow(clippy::unwrap_used)]

use super::*;
use std::io::Cursor;

const TINY: &[u8] = include_bytes!("tiny.mp4");

#[test]
fn a_real_file_indexes_in_decode_order_with_its_configs() {
    let index = Mp4Index::open(&mut Cursor::new(TINY)).unwrap();
    let video = index.video.as_ref().unwrap();
    assert_eq!(video.codec, Codec::H264);
    assert_eq!(video.record[0], 1, "an avcC record starts with version 1");
    let audio = index.audio.as_ref().unwrap();
    assert_eq!(audio.codec, Codec::Aac);
    assert!(audio.record.len() >= 2, "an AudioSpecificConfig");
    let videos: Vec<_> = index
        .samples
        .iter()
        .filter(|s| s.track == Track::Video)
        .collect();
    assert_eq!(videos.len(), 10);
    assert_eq!(videos.iter().filter(|s| s.keyframe).count(), 2);
    assert!(videos[0].keyframe);
    // The edit list takes the reorder delay off: the first picture shows at 0.
    let first_pts = videos.iter().map(|s| s.pts).min().unwrap();
    assert_eq!(first_pts, 0);
    assert!(index.samples.windows(2).all(|w| w[0].dts <= w[1].dts));
    let audios = index.samples.len() - videos.len();
    assert!((47..=49).contains(&audios), "{audios} audio frames");
    assert!(
        (index.duration - 90_000).abs() < 9_000,
        "{}",
        index.duration
    );

    let mut file = Cursor::new(TINY);
    let frame = index.read(&mut file, videos[0]).unwrap();
    assert!(frame.keyframe && frame.codec == Codec::H264);
    // Length-prefixed NAL units that exactly fill the sample.
    let mut rest = &frame.payload[..];
    while rest.len() >= 4 {
        let len = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        rest = &rest[4 + len..];
    }
    assert!(rest.is_empty());
    assert_eq!(index.config_frames(0).len(), 2);
}

#[test]
fn broken_files_are_errors_not_panics() {
    assert!(matches!(
        Mp4Index::open(&mut Cursor::new(b"not an mp4 at all".to_vec())),
        Err(Mp4ReadError::Corrupt(_))
    ));
    // Cut anywhere, a file fails cleanly or (cut after moov) still bounds-checks.
    for cut in (0..TINY.len()).step_by(97) {
        let _ = Mp4Index::open(&mut Cursor::new(&TINY[..cut]));
    }
    // Bytes flipped inside moov.
    let moov = TINY.windows(4).position(|w| w == b"moov").unwrap();
    for at in (moov..TINY.len().min(moov + 3000)).step_by(13) {
        let mut bent = TINY.to_vec();
        bent[at] ^= 0xff;
        let _ = Mp4Index::open(&mut Cursor::new(bent));
    }
}

#[test]
fn errors_about_a_file_that_is_no_mp4_echo_none_of_its_bytes() {
    // A server playlist may name any file: what the error says reaches the API.
    let secret = b"root:x:0:0:root:/root:/bin/bash\nsecret-line\n".to_vec();
    let error = Mp4Index::open(&mut Cursor::new(secret)).unwrap_err();
    let text = error.to_string();
    for part in ["root", "x:0", "secret", "bash"] {
        assert!(!text.contains(part), "{text}");
    }
}

#[test]
fn another_codec_is_named_as_unsupported() {
    let error = Mp4Index::open(&mut Cursor::new(include_bytes!("mp4v.mp4"))).unwrap_err();
    assert!(
        matches!(&error, Mp4ReadError::Unsupported(name) if name.contains("mp4v")),
        "{error}"
    );
}
