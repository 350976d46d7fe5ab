//! Turning a publisher's RTMP messages into stream frames, and learning the codecs from
//! their sequence headers (for `rtmp_status`: resolution, RFC 6381 codec strings).

use crate::frame::{FrameKind, MediaFrame};
use crate::hub::Stream;
use bytes::Bytes;
use rml_amf0::Amf0Value;
use rml_rtmp::sessions::StreamMetadata;
use std::collections::HashMap;
use strom_media::ParseError;
use strom_media::aac::AacConfig;
use strom_media::avc::AvcDecoderConfig;
use strom_media::flv::{AudioCodec, AudioPacket, AudioTag, VideoCodec, VideoPacket, VideoTag};
use strom_media::hevc::HevcDecoderConfig;

pub fn video_frame(
    stream: &Stream,
    payload: Bytes,
    timestamp: u32,
) -> Result<MediaFrame, ParseError> {
    let tag = VideoTag::parse(&payload, timestamp)?;
    let sequence_header = tag.is_sequence_header();
    if let VideoPacket::SequenceHeader(record) = &tag.packet {
        learn_video(stream, tag.codec, record);
    }
    let composition_ms = (tag.pts_ms() - i64::from(timestamp)).clamp(-0x80_0000, 0x7F_FFFF) as i32;
    Ok(MediaFrame::new(
        FrameKind::Video,
        timestamp,
        tag.is_keyframe(),
        sequence_header,
        payload,
    )
    .with_composition(composition_ms))
}

pub fn audio_frame(
    stream: &Stream,
    payload: Bytes,
    timestamp: u32,
) -> Result<MediaFrame, ParseError> {
    let tag = AudioTag::parse(&payload, timestamp)?;
    let sequence_header = tag.is_sequence_header();
    match (&tag.codec, &tag.packet) {
        (AudioCodec::Aac, AudioPacket::AacSequenceHeader(config)) => {
            if let Ok(config) = AacConfig::parse(config) {
                let codec = config.codec_string();
                stream.set_codecs(|c| c.acodec = codec);
            }
        }
        (AudioCodec::Mp3, _) => stream.set_codecs(|c| c.acodec = "mp4a.40.34".to_owned()),
        _ => {}
    }
    Ok(MediaFrame::new(
        FrameKind::Audio,
        timestamp,
        false,
        sequence_header,
        payload,
    ))
}

fn learn_video(stream: &Stream, codec: VideoCodec, record: &Bytes) {
    let learned = match codec {
        VideoCodec::H264 => AvcDecoderConfig::parse(record).ok().map(|config| {
            let size = config
                .sps_info()
                .map(|sps| (sps.width, sps.height))
                .unwrap_or_default();
            (config.codec_string(), size)
        }),
        VideoCodec::H265 => HevcDecoderConfig::parse(record).ok().map(|config| {
            let size = config
                .sps_info()
                .map(|sps| (sps.width, sps.height))
                .unwrap_or_default();
            (config.codec_string(), size)
        }),
        VideoCodec::Av1 => Some(("av01".to_owned(), (0, 0))),
        VideoCodec::Vp9 => Some(("vp09".to_owned(), (0, 0))),
        _ => None,
    };
    if let Some((codec, (width, height))) = learned {
        stream.set_codecs(|c| {
            c.vcodec = codec;
            if width > 0 {
                c.width = width;
                c.height = height;
            }
        });
    }
}

/// `onMetaData` for players, rebuilt from what the publisher's `@setDataFrame` said.
pub fn metadata_frame(metadata: &StreamMetadata) -> MediaFrame {
    let mut properties = HashMap::new();
    let mut number = |key: &str, value: Option<f64>| {
        if let Some(value) = value {
            properties.insert(key.to_owned(), Amf0Value::Number(value));
        }
    };
    number("width", metadata.video_width.map(f64::from));
    number("height", metadata.video_height.map(f64::from));
    number("videocodecid", metadata.video_codec_id.map(f64::from));
    number("videodatarate", metadata.video_bitrate_kbps.map(f64::from));
    number("framerate", metadata.video_frame_rate.map(f64::from));
    number("audiocodecid", metadata.audio_codec_id.map(f64::from));
    number("audiodatarate", metadata.audio_bitrate_kbps.map(f64::from));
    number("audiosamplerate", metadata.audio_sample_rate.map(f64::from));
    number("audiochannels", metadata.audio_channels.map(f64::from));
    if let Some(stereo) = metadata.audio_is_stereo {
        properties.insert("stereo".to_owned(), Amf0Value::Boolean(stereo));
    }
    if let Some(encoder) = &metadata.encoder {
        properties.insert("encoder".to_owned(), Amf0Value::Utf8String(encoder.clone()));
    }
    let values = vec![
        Amf0Value::Utf8String("onMetaData".to_owned()),
        Amf0Value::Object(properties),
    ];
    let payload = rml_amf0::serialize(&values).unwrap_or_default();
    MediaFrame::new(FrameKind::Metadata, 0, false, false, Bytes::from(payload))
}
