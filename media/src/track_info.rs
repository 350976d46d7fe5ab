//! Learning a track's parameters from its frames: the one place that turns a
//! configuration record (`avcC`, `hvcC`, `av1C`, `vpcC`, AudioSpecificConfig) into
//! an RFC 6381 codec string, a picture size, a sample rate and channel count, and the
//! parsed configuration a muxer needs. Every worker learns tracks through here.

use std::borrow::Cow;

use bytes::Bytes;

use crate::aac::AacConfig;
use crate::avc::AvcDecoderConfig;
use crate::frame::{Codec, Frame};
use crate::hevc::HevcDecoderConfig;
use crate::mpeg_audio::MpegAudioConfig;
use crate::sample::{AudioConfig, AudioTrack, VideoConfig, VideoTrack};

/// What a frame taught about its track.
#[derive(Debug, Clone, PartialEq)]
pub enum TrackInfo {
    Video(VideoInfo),
    Audio(AudioInfo),
}

#[derive(Debug, Clone, PartialEq)]
pub struct VideoInfo {
    pub codec: Codec,
    /// RFC 6381 (`avc1.64001f`, `hvc1.1.6.L93.B0`); `av01`/`vp09` without details.
    pub codec_string: Cow<'static, str>,
    /// Picture size from the SPS; 0 when the record has none or it did not parse.
    pub width: u32,
    pub height: u32,
    /// The parsed record, for codecs strom packages (H.264, H.265).
    pub decoder: Option<VideoConfig>,
}

impl VideoInfo {
    /// The track a muxer needs, for codecs strom packages.
    pub fn into_track(self) -> Option<VideoTrack> {
        Some(VideoTrack {
            config: self.decoder?,
            width: self.width,
            height: self.height,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct AudioInfo {
    pub codec: Codec,
    /// RFC 6381 (`mp4a.40.2`, `mp4a.40.34` for MP3, `opus`, `ac-3`).
    pub codec_string: Cow<'static, str>,
    /// Output sample rate in Hz (the SBR rate for explicit HE-AAC); 0 when unknown.
    pub sample_rate: u32,
    /// 0 when unknown or defined in-band.
    pub channels: u8,
    /// The parsed configuration and the record, for codecs strom packages (AAC; MP3
    /// from a configuration frame).
    pub decoder: Option<AudioTrack>,
}

/// Learns from `frame`: configuration frames, and any frame of a codec that has no
/// configuration record (MP3, AC-3). `None` for other frames and records that do not
/// parse. Media frames of configured codecs return `None` without allocating.
pub fn learn(frame: &Frame) -> Option<TrackInfo> {
    match frame.codec {
        Codec::Mp3 => return Some(mp3(frame)),
        Codec::Ac3 => return Some(audio(Codec::Ac3, "ac-3")),
        _ if !frame.config => return None,
        _ => {}
    }
    let record = &frame.payload;
    Some(match frame.codec {
        Codec::H264 => {
            let config = AvcDecoderConfig::parse(record).ok()?;
            let (width, height) = config
                .sps_info()
                .map(|sps| (sps.width, sps.height))
                .unwrap_or_default();
            video(
                Codec::H264,
                config.codec_string().into(),
                (width, height),
                Some(VideoConfig::H264 {
                    config,
                    record: record.clone(),
                }),
            )
        }
        Codec::H265 => {
            let config = HevcDecoderConfig::parse(record).ok()?;
            let (width, height) = config
                .sps_info()
                .map(|sps| (sps.width, sps.height))
                .unwrap_or_default();
            video(
                Codec::H265,
                config.codec_string().into(),
                (width, height),
                Some(VideoConfig::H265 {
                    config,
                    record: record.clone(),
                }),
            )
        }
        Codec::Av1 => video(Codec::Av1, "av01".into(), (0, 0), None),
        Codec::Vp9 => video(Codec::Vp9, "vp09".into(), (0, 0), None),
        Codec::Aac => aac(record)?,
        Codec::Opus => audio(Codec::Opus, "opus"),
        _ => return None,
    })
}

fn video(
    codec: Codec,
    codec_string: Cow<'static, str>,
    (width, height): (u32, u32),
    decoder: Option<VideoConfig>,
) -> TrackInfo {
    TrackInfo::Video(VideoInfo {
        codec,
        codec_string,
        width,
        height,
        decoder,
    })
}

fn audio(codec: Codec, codec_string: &'static str) -> TrackInfo {
    TrackInfo::Audio(AudioInfo {
        codec,
        codec_string: Cow::Borrowed(codec_string),
        sample_rate: 0,
        channels: 0,
        decoder: None,
    })
}

/// An MP3 frame, or the configuration record a DVR segment keeps for MP3 (only that
/// makes a muxer track: live outputs do not package MP3).
fn mp3(frame: &Frame) -> TrackInfo {
    let Some(config) = MpegAudioConfig::of_frame(&frame.payload) else {
        return audio(Codec::Mp3, MpegAudioConfig::CODEC_STRING);
    };
    TrackInfo::Audio(AudioInfo {
        codec: Codec::Mp3,
        codec_string: Cow::Borrowed(MpegAudioConfig::CODEC_STRING),
        sample_rate: config.sample_rate,
        channels: config.channels,
        decoder: frame.config.then(|| AudioTrack {
            config: AudioConfig::Mp3(config),
            record: frame.payload.clone(),
        }),
    })
}

fn aac(record: &Bytes) -> Option<TrackInfo> {
    let config = AacConfig::parse(record).ok()?;
    Some(TrackInfo::Audio(AudioInfo {
        codec: Codec::Aac,
        codec_string: config.codec_string().into(),
        sample_rate: config
            .extension_sampling_frequency
            .unwrap_or(config.sampling_frequency),
        channels: config.channel_count().unwrap_or_default(),
        decoder: Some(AudioTrack {
            config: AudioConfig::Aac(config),
            record: record.clone(),
        }),
    }))
}

#[cfg(test)]
#[path = "track_info_tests.rs"]
mod tests;
