//! Track learning over real records: the codec strings, sizes and rates the
//! management API and playlists show.

use super::*;
use crate::flv_adapter::{audio_frame, video_frame};
use crate::frame::{SourceForm, Track};
use crate::test_vectors::{ASC, AVCC, HVCC, hex};

fn config(codec: Codec, record: &str) -> Frame {
    Frame {
        track: codec.track().unwrap_or(Track::Data),
        codec,
        dts: 0,
        pts: 0,
        keyframe: false,
        config: true,
        control: false,
        payload: Bytes::from(hex(record)),
        form: SourceForm::Neutral,
    }
}

fn video_info(frame: &Frame) -> VideoInfo {
    match learn(frame) {
        Some(TrackInfo::Video(info)) => info,
        other => panic!("not video: {other:?}"),
    }
}

fn audio_info(frame: &Frame) -> AudioInfo {
    match learn(frame) {
        Some(TrackInfo::Audio(info)) => info,
        other => panic!("not audio: {other:?}"),
    }
}

#[test]
fn video_records() {
    for (codec, vectors) in [(Codec::H264, AVCC), (Codec::H265, HVCC)] {
        for &(record, codec_string, width, height) in vectors {
            let info = video_info(&config(codec, record));
            assert_eq!(
                (info.codec, &*info.codec_string, info.width, info.height),
                (codec, codec_string, width, height)
            );
            let track = info.into_track().unwrap();
            assert_eq!((track.width, track.height), (width, height));
            let (VideoConfig::H264 { record: kept, .. } | VideoConfig::H265 { record: kept, .. }) =
                track.config;
            assert_eq!(kept, hex(record));
        }
    }
    for (codec, want) in [(Codec::Av1, "av01"), (Codec::Vp9, "vp09")] {
        let info = video_info(&config(codec, "81080c00"));
        assert_eq!((&*info.codec_string, info.width), (want, 0));
        assert_eq!(info.into_track(), None, "not packaged");
    }
}

#[test]
fn audio_records() {
    for &(asc, object_type, rate, channels, codec_string) in ASC {
        let info = audio_info(&config(Codec::Aac, asc));
        assert_eq!(&*info.codec_string, codec_string);
        let aac = info.decoder.as_ref().unwrap();
        assert_eq!(aac.config.aac().unwrap().object_type, object_type);
        assert_eq!(aac.config.sampling_frequency(), rate);
        assert_eq!(aac.record, hex(asc));
        assert_eq!(
            info.sample_rate,
            aac.config
                .aac()
                .unwrap()
                .extension_sampling_frequency
                .unwrap_or(rate)
        );
        assert_eq!(info.channels, channels);
    }
    assert_eq!(
        audio_info(&config(Codec::Aac, "2b 11 88 00")).sample_rate,
        48_000
    );
    assert_eq!(&*audio_info(&config(Codec::Opus, "")).codec_string, "opus");
}

#[test]
fn from_flv_bodies() {
    // What rtmp_status shows for a legacy AVC + AAC publisher (the e2e tests' 320x240).
    let avcc = AVCC[0].0;
    let frame = video_frame(&Bytes::from(hex(&format!("17 00 000000 {avcc}"))), 0).unwrap();
    assert_eq!(&*video_info(&frame).codec_string, "avc1.64001e");
    let frame = audio_frame(&Bytes::from(hex("af 00 1208 56e500")), 0).unwrap();
    assert_eq!(&*audio_info(&frame).codec_string, "mp4a.40.2");
    // MP3 has no configuration record: any frame names it, without allocating.
    let frame = audio_frame(&Bytes::from(hex("2f fffb")), 0).unwrap();
    let info = audio_info(&frame);
    assert!(matches!(info.codec_string, Cow::Borrowed("mp4a.40.34")));
    // Media frames and broken records teach nothing.
    let frame = video_frame(&Bytes::from(hex("17 01 000000 00000001 65")), 0).unwrap();
    assert_eq!(learn(&frame), None);
    assert_eq!(learn(&config(Codec::H264, "01")), None);
    assert_eq!(learn(&config(Codec::Aac, "")), None);
    assert_eq!(learn(&config(Codec::Unknown, "01")), None);
}
