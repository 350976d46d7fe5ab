use super::*;
use crate::aac::{AacConfig, write_adts_header};
use crate::test_flv::{TempDir, ffmpeg, run_ffmpeg_tool};

/// MPEG-1 layer III, 128 kbit/s, 44.1 kHz: 417-byte frames of 1152 samples.
fn mp3_frame(fill: u8) -> Vec<u8> {
    let mut frame = vec![0xff, 0xfb, 0x90, 0x64];
    frame.resize(417, fill);
    frame
}

fn id3_tag(body_len: usize) -> Vec<u8> {
    let mut tag = b"ID3\x04\x00\x00".to_vec();
    tag.extend((0..4).rev().map(|i| ((body_len >> (7 * i)) & 0x7f) as u8));
    tag.resize(10 + body_len, 0xff);
    tag
}

fn deframe(format: AudioFormat, input: &[u8], chunk: usize) -> (Vec<Frame>, AudioDeframer) {
    let mut deframer = AudioDeframer::new(format);
    let mut frames = Vec::new();
    for piece in input.chunks(chunk) {
        deframer.push(piece, &mut frames);
    }
    (frames, deframer)
}

#[test]
fn mp3_frames_after_an_id3_tag_and_garbage_are_timed_by_their_samples() {
    let mut input = id3_tag(3000);
    input.extend_from_slice(b"garbage \xff\xfb with a stray sync");
    for i in 0..10 {
        input.extend(mp3_frame(i));
    }
    for chunk in [1, 7, 416, 4096] {
        let (frames, deframer) = deframe(AudioFormat::Mpeg, &input, chunk);
        assert_eq!(frames.len(), 10, "chunk {chunk}");
        for (i, frame) in frames.iter().enumerate() {
            assert_eq!(frame.codec, Codec::Mp3);
            assert_eq!(frame.track, Track::Audio);
            assert_eq!(&frame.payload[..], &mp3_frame(i as u8)[..]);
            assert_eq!(frame.dts, (i as i64 * 1152 * 90_000) / 44_100);
        }
        assert_eq!(deframer.skipped_bytes(), 28, "chunk {chunk}");
    }
}

#[test]
fn adts_gives_a_config_frame_then_raw_frames() {
    let config = AacConfig::parse(&[0x12, 0x10]).unwrap(); // LC, 44.1 kHz, stereo
    let mut input = Vec::new();
    for i in 0..5u8 {
        let body = vec![i; 100 + usize::from(i)];
        let mut header = [0; 7];
        write_adts_header(&config, body.len(), &mut header).unwrap();
        input.extend_from_slice(&header);
        input.extend_from_slice(&body);
    }
    let (frames, _) = deframe(AudioFormat::Adts, &input, 33);
    assert_eq!(frames.len(), 6);
    assert!(frames[0].config);
    assert_eq!(&frames[0].payload[..], &[0x12, 0x10]);
    for (i, frame) in frames[1..].iter().enumerate() {
        assert!(!frame.config);
        assert_eq!(frame.codec, Codec::Aac);
        assert_eq!(frame.payload.len(), 100 + i);
        assert_eq!(frame.dts, (i as i64 * 1024 * 90_000) / 44_100);
    }
}

#[test]
fn garbage_makes_no_frames_and_stays_bounded() {
    let mut garbage = Vec::new();
    for i in 0..200_000u32 {
        garbage.push(if i % 3 == 0 { 0xff } else { (i % 251) as u8 });
    }
    for format in [AudioFormat::Mpeg, AudioFormat::Adts] {
        let (frames, deframer) = deframe(format, &garbage, 1500);
        assert!(frames.len() < 3, "{format:?}: {} frames", frames.len());
        assert!(deframer.buffer.len() <= MAX_BUFFER);
        assert!(deframer.skipped_bytes() > 190_000);
    }
}

#[test]
fn content_types() {
    assert_eq!(
        AudioFormat::from_content_type("audio/mpeg"),
        Some(AudioFormat::Mpeg)
    );
    assert_eq!(
        AudioFormat::from_content_type("Audio/AACP; charset=x"),
        Some(AudioFormat::Adts)
    );
    assert_eq!(AudioFormat::from_content_type("application/ogg"), None);
}

/// Every packet ffprobe counts in an ffmpeg-made stream is one frame here.
#[test]
fn ffmpeg_mp3_and_adts_streams_deframe_to_ffprobes_packets() {
    let dir = TempDir::new("audio-stream");
    for (name, args, format) in [
        (
            "sine.mp3",
            ["-c:a", "libmp3lame", "-b:a", "128k", "-f", "mp3"],
            AudioFormat::Mpeg,
        ),
        (
            "sine.aac",
            ["-c:a", "aac", "-b:a", "96k", "-f", "adts"],
            AudioFormat::Adts,
        ),
    ] {
        let path = dir.path().join(name);
        let path = path.to_str().unwrap();
        let mut all = vec!["-f", "lavfi", "-i", "sine=frequency=440:duration=3"];
        all.extend(args);
        all.push(path);
        ffmpeg(&all);
        let output = run_ffmpeg_tool(
            "ffprobe",
            &[
                "-v",
                "error",
                "-count_packets",
                "-select_streams",
                "a:0",
                "-show_entries",
                "stream=nb_read_packets",
                "-of",
                "csv=p=0",
                path,
            ],
        );
        let packets: usize = String::from_utf8_lossy(&output.stdout)
            .trim()
            .parse()
            .unwrap();
        let bytes = std::fs::read(path).unwrap();
        let (frames, _) = deframe(format, &bytes, 1000);
        let media = frames.iter().filter(|f| !f.config).count();
        // ffmpeg's MP3 muxer starts with an Xing/Info frame that ffprobe does not count.
        let expected = if format == AudioFormat::Mpeg {
            packets + 1
        } else {
            packets
        };
        assert_eq!(media, expected, "{name}");
        let last = frames.last().unwrap();
        assert!(
            (2 * 90_000..4 * 90_000).contains(&last.dts),
            "{name}: last frame at {}",
            last.dts
        );
    }
}
