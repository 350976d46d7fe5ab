//! Turning a publisher's RTMP messages into neutral frames through the FLV adapter:
//! 32-bit millisecond timestamps unwrapped onto the 90 kHz clock, the FLV body kept as
//! the frame's container form so RTMP players get exactly what the publisher sent.

use bytes::Bytes;
use rml_amf0::Amf0Value;
use rml_rtmp::sessions::StreamMetadata;
use std::collections::HashMap;
use strom_media::ParseError;
use strom_media::flv_adapter;
use strom_media::frame::Frame;

use crate::frame::TICKS_PER_MS;

/// Unwraps one publisher's 32-bit RTMP timestamps into a 64-bit timeline.
#[derive(Debug, Default)]
pub struct PublishClock {
    last: Option<u32>,
    wraps: i64,
}

impl PublishClock {
    /// 90 kHz decode time of a message stamped `timestamp` milliseconds.
    pub fn dts(&mut self, timestamp: u32) -> i64 {
        if let Some(last) = self.last
            && timestamp < last
            && last - timestamp > u32::MAX / 2
        {
            self.wraps = self.wraps.saturating_add(1);
        }
        self.last = Some(timestamp);
        // Saturating: a peer that keeps jumping across the wrap (tens of millions of
        // messages) must not overflow the clock.
        self.wraps
            .saturating_mul(1 << 32)
            .saturating_add(i64::from(timestamp))
            .saturating_mul(TICKS_PER_MS)
    }
}

/// A video message as a frame; the body stays its container form.
pub fn video_frame(
    clock: &mut PublishClock,
    body: &Bytes,
    timestamp: u32,
) -> Result<Frame, ParseError> {
    flv_adapter::video_frame(body, clock.dts(timestamp))
}

/// An audio message as a frame; the body stays its container form.
pub fn audio_frame(
    clock: &mut PublishClock,
    body: &Bytes,
    timestamp: u32,
) -> Result<Frame, ParseError> {
    flv_adapter::audio_frame(body, clock.dts(timestamp))
}

/// `onMetaData` for players, rebuilt from what the publisher's `@setDataFrame` said. It
/// is stamped 0, as players get it before the media.
pub fn metadata_frame(metadata: &StreamMetadata) -> Frame {
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
    flv_adapter::data_frame(&Bytes::from(payload), 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rtmp_timestamps_unwrap_across_the_32_bit_wrap() {
        let mut clock = PublishClock::default();
        assert_eq!(clock.dts(u32::MAX - 10), i64::from(u32::MAX - 10) * 90);
        assert_eq!(clock.dts(5), ((1i64 << 32) + 5) * 90);
        assert_eq!(
            clock.dts(3),
            ((1i64 << 32) + 3) * 90,
            "small steps back are no wrap"
        );
    }

    /// A peer whose timestamps keep jumping across the wrap ends at the end of the
    /// range instead of overflowing.
    #[test]
    fn endless_wraps_saturate() {
        let mut clock = PublishClock {
            last: Some(u32::MAX),
            wraps: (i64::MAX >> 32) - 1,
        };
        assert_eq!(clock.dts(0), i64::MAX);
        assert_eq!(clock.dts(u32::MAX), i64::MAX);
        assert_eq!(clock.dts(0), i64::MAX);
        clock.wraps = i64::MAX;
        assert_eq!(clock.dts(u32::MAX), i64::MAX);
        assert_eq!(clock.dts(0), i64::MAX);
    }
}
