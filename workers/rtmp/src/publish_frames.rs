//! Turning a publisher's RTMP messages into stream frames, and learning the codecs from
//! their sequence headers (for `rtmp_status`: resolution, RFC 6381 codec strings)
//! through the FLV adapter and the shared track learner in `strom_media`.

use crate::frame::{FrameKind, MediaFrame};
use crate::hub::Stream;
use bytes::Bytes;
use rml_amf0::Amf0Value;
use rml_rtmp::sessions::StreamMetadata;
use std::collections::HashMap;
use strom_media::ParseError;
use strom_media::flv_adapter;
use strom_media::frame::Frame;
use strom_media::track_info::{self, TrackInfo};

/// FLV times are milliseconds; the neutral frame's are 90 kHz.
const TICKS_PER_MS: i64 = 90;

pub fn video_frame(
    stream: &Stream,
    payload: Bytes,
    timestamp: u32,
) -> Result<MediaFrame, ParseError> {
    let frame = flv_adapter::video_frame(&payload, i64::from(timestamp) * TICKS_PER_MS)?;
    learn(stream, &frame);
    // Players get the composition time of coded frames only (sequence headers and
    // control packets present at their decode time).
    let composition_ms = if frame.is_sample() {
        (frame.composition_offset() / TICKS_PER_MS).clamp(-0x80_0000, 0x7F_FFFF) as i32
    } else {
        0
    };
    Ok(MediaFrame::new(
        FrameKind::Video,
        timestamp,
        frame.keyframe,
        frame.config,
        payload,
    )
    .with_composition(composition_ms))
}

pub fn audio_frame(
    stream: &Stream,
    payload: Bytes,
    timestamp: u32,
) -> Result<MediaFrame, ParseError> {
    let frame = flv_adapter::audio_frame(&payload, i64::from(timestamp) * TICKS_PER_MS)?;
    learn(stream, &frame);
    Ok(MediaFrame::new(
        FrameKind::Audio,
        timestamp,
        false,
        frame.config,
        payload,
    ))
}

/// Records what `frame` teaches about the stream's codecs (for `rtmp_status`).
fn learn(stream: &Stream, frame: &Frame) {
    match track_info::learn(frame) {
        Some(TrackInfo::Video(info)) => stream.set_codecs(|c| {
            c.vcodec = info.codec_string.into_owned();
            if info.width > 0 {
                c.width = info.width;
                c.height = info.height;
            }
        }),
        // MP3 is learned from every frame: assign only on change, no per-frame String.
        Some(TrackInfo::Audio(info)) => stream.set_codecs(|c| {
            if c.acodec != info.codec_string {
                c.acodec = info.codec_string.into_owned();
            }
        }),
        None => {}
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
