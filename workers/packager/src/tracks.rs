//! Turning bus frames (FLV tag bodies with 90 kHz times) into the packager's tracks and
//! samples.

use bytes::Bytes;
use strom_ipc::bus::{BusTrack, MediaHeader};
use strom_media::aac::AacConfig;
use strom_media::avc::AvcDecoderConfig;
use strom_media::flv::{AudioCodec, AudioPacket, AudioTag, VideoCodec, VideoPacket, VideoTag};
use strom_media::hevc::HevcDecoderConfig;
use strom_media::sample::{AudioTrack, Sample, TrackKind, Tracks, VideoConfig, VideoTrack};

#[derive(Debug, Default)]
pub struct TrackBuilder {
    pub tracks: Tracks,
    /// Bumped whenever a codec configuration changes (a new fMP4 init segment).
    pub config_version: u32,
}

impl TrackBuilder {
    /// Learns codec configurations; returns a sample for media frames.
    pub fn accept(&mut self, header: &MediaHeader, payload: &Bytes) -> Option<Sample> {
        match header.track {
            BusTrack::Video => {
                let tag = VideoTag::parse(payload, 0).ok()?;
                match tag.packet {
                    VideoPacket::SequenceHeader(record) => {
                        self.learn_video(tag.codec, record);
                        None
                    }
                    VideoPacket::Frame { data, .. } if self.tracks.video.is_some() => {
                        Some(Sample {
                            kind: TrackKind::Video,
                            dts: header.dts,
                            pts: header.pts,
                            keyframe: header.keyframe,
                            data,
                        })
                    }
                    _ => None,
                }
            }
            BusTrack::Audio => {
                let tag = AudioTag::parse(payload, 0).ok()?;
                match (tag.codec, tag.packet) {
                    (AudioCodec::Aac, AudioPacket::AacSequenceHeader(record)) => {
                        let config = AacConfig::parse(&record).ok()?;
                        let track = AudioTrack { config, record };
                        if self.tracks.audio.as_ref() != Some(&track) {
                            self.tracks.audio = Some(track);
                            self.config_version += 1;
                        }
                        None
                    }
                    (AudioCodec::Aac, AudioPacket::Frame(data)) if self.tracks.audio.is_some() => {
                        Some(Sample {
                            kind: TrackKind::Audio,
                            dts: header.dts,
                            pts: header.dts,
                            keyframe: false,
                            data,
                        })
                    }
                    _ => None,
                }
            }
            BusTrack::Metadata => None,
        }
    }

    fn learn_video(&mut self, codec: VideoCodec, record: Bytes) {
        let track = match codec {
            VideoCodec::H264 => AvcDecoderConfig::parse(&record).ok().map(|config| {
                let (width, height) = config
                    .sps_info()
                    .map(|s| (s.width, s.height))
                    .unwrap_or_default();
                VideoTrack {
                    config: VideoConfig::H264 { config, record },
                    width,
                    height,
                }
            }),
            VideoCodec::H265 => HevcDecoderConfig::parse(&record).ok().map(|config| {
                let (width, height) = config
                    .sps_info()
                    .map(|s| (s.width, s.height))
                    .unwrap_or_default();
                VideoTrack {
                    config: VideoConfig::H265 { config, record },
                    width,
                    height,
                }
            }),
            _ => None,
        };
        match track {
            Some(track) if self.tracks.video.as_ref() != Some(&track) => {
                self.tracks.video = Some(track);
                self.config_version += 1;
            }
            Some(_) => {}
            None => tracing::warn!(?codec, "video codec not packaged for HLS"),
        }
    }
}
