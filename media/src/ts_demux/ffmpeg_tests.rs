//! Demuxing transport streams written by real ffmpeg (Debian package `ffmpeg`;
//! the tests fail naming it when it is missing): H.264 + AAC and H.265 + AAC,
//! 2 s at 25 fps with a keyframe every 25 frames, 320x240.

use super::*;
use crate::test_flv::{TempDir, ffmpeg};
use crate::track_info::{self, TrackInfo};

/// Runs `ffmpeg -f lavfi -i testsrc2=size=320x240:rate=25 -f lavfi -i
/// sine=frequency=1000 -t 2 -c:v <video...> -g 25 -c:a aac -f mpegts out.ts`
/// and demuxes the file in 1316-byte (7 × 188) pushes, as UDP datagrams.
fn demux_ffmpeg(name: &str, video: &[&str]) -> (Vec<Frame>, Vec<DemuxEvent>) {
    let dir = TempDir::new(name);
    let path = dir.path().join("out.ts");
    let mut args = vec![
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=320x240:rate=25",
        "-f",
        "lavfi",
        "-i",
        "sine=frequency=1000",
        "-t",
        "2",
        "-c:v",
    ];
    args.extend_from_slice(video);
    args.extend_from_slice(&["-g", "25", "-c:a", "aac", "-f", "mpegts"]);
    let path_str = path.to_str().unwrap();
    args.push(path_str);
    ffmpeg(&args);
    let ts = std::fs::read(&path).unwrap();
    let mut demuxer = TsDemuxer::new(None);
    let mut frames = Vec::new();
    for datagram in ts.chunks(7 * PACKET_SIZE) {
        demuxer.push(strip_rtp(datagram));
        frames.extend(std::iter::from_fn(|| demuxer.next_frame()));
    }
    demuxer.flush();
    frames.extend(std::iter::from_fn(|| demuxer.next_frame()));
    let events = std::iter::from_fn(|| demuxer.next_event()).collect();
    (frames, events)
}

fn check(frames: &[Frame], events: &[DemuxEvent], codec: Codec, prefix: &str) {
    assert!(
        !events.iter().any(|e| matches!(
            e,
            DemuxEvent::ContinuityError { .. }
                | DemuxEvent::MalformedPes { .. }
                | DemuxEvent::BadSection { .. }
                | DemuxEvent::TimestampJump { .. }
        )),
        "{events:?}"
    );
    let video: Vec<&Frame> = frames.iter().filter(|f| f.track == Track::Video).collect();
    assert!(video[0].config, "config first");
    assert_eq!(video.iter().filter(|f| f.config).count(), 1);
    let Some(TrackInfo::Video(info)) = track_info::learn(video[0]) else {
        panic!("video config does not learn");
    };
    assert_eq!(info.codec, codec);
    assert!(
        info.codec_string.starts_with(prefix),
        "{}",
        info.codec_string
    );
    assert_eq!((info.width, info.height), (320, 240));
    let samples: Vec<&&Frame> = video.iter().filter(|f| f.is_sample()).collect();
    assert_eq!(samples.len(), 50);
    let keys: Vec<usize> = samples
        .iter()
        .enumerate()
        .filter(|(_, f)| f.keyframe)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(keys, [0, 25]);
    assert!(samples.windows(2).all(|w| w[1].dts > w[0].dts));
    assert!(samples.iter().all(|f| f.pts >= f.dts && f.codec == codec));
    // Length-prefixed NAL units that cover the payload exactly.
    for f in &samples {
        let nals: Vec<_> = crate::annexb::nal_units(&f.payload, 4).collect();
        assert!(nals.iter().all(|n| n.as_ref().is_ok_and(|n| !n.is_empty())));
    }

    let audio: Vec<&Frame> = frames.iter().filter(|f| f.track == Track::Audio).collect();
    assert!(audio[0].config);
    let Some(TrackInfo::Audio(info)) = track_info::learn(audio[0]) else {
        panic!("audio config does not learn");
    };
    assert_eq!(info.codec_string, "mp4a.40.2");
    assert_eq!(info.sample_rate, 44_100);
    let samples: Vec<&&Frame> = audio.iter().filter(|f| f.is_sample()).collect();
    // 2 s at 44.1 kHz: 86 frames, give or take priming and the last one.
    assert!((84..=90).contains(&samples.len()), "{}", samples.len());
    assert!(
        samples
            .windows(2)
            .all(|w| (2080..=2100).contains(&(w[1].dts - w[0].dts)))
    );
    assert!(samples.iter().all(|f| f.payload.first() != Some(&0xff)));
}

#[test]
fn demuxes_ffmpeg_h264_aac() {
    let (frames, events) = demux_ffmpeg("tsdemux-h264", &["libx264"]);
    check(&frames, &events, Codec::H264, "avc1.");
}

#[test]
fn demuxes_ffmpeg_h265_aac() {
    let (frames, events) = demux_ffmpeg(
        "tsdemux-h265",
        &[
            "libx265",
            "-x265-params",
            "keyint=25:min-keyint=25:scenecut=0:bframes=0:log-level=error",
        ],
    );
    check(&frames, &events, Codec::H265, "hvc1.");
}
