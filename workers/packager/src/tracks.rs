//! Turning bus frames into the packager's tracks and samples: the bus payload (still an
//! FLV tag body until the bus carries the codec) becomes a neutral frame through the
//! media crate's FLV adapter, and tracks are learned by the shared track learner.

use bytes::Bytes;
use strom_ipc::bus::{BusTrack, MediaHeader};
use strom_media::flv_adapter;
use strom_media::frame::{Codec, Frame, Track};
use strom_media::sample::{Sample, TrackKind, Tracks, VideoConfig};
use strom_media::track_info::{self, TrackInfo};

#[derive(Debug, Default)]
pub struct TrackBuilder {
    pub tracks: Tracks,
    /// Bumped whenever a codec configuration changes (a new fMP4 init segment).
    pub config_version: u32,
}

impl TrackBuilder {
    /// Learns codec configurations; returns a sample for media frames.
    pub fn accept(&mut self, header: &MediaHeader, payload: &Bytes) -> Option<Sample> {
        let mut frame = match header.track {
            BusTrack::Video => flv_adapter::video_frame(payload, header.dts).ok()?,
            BusTrack::Audio => flv_adapter::audio_frame(payload, header.dts).ok()?,
            BusTrack::Metadata => return None,
        };
        // The producer's header is authoritative: its times are unwrapped.
        if frame.track == Track::Video {
            frame.pts = header.pts;
            frame.keyframe = header.keyframe;
        }
        self.accept_frame(frame)
    }

    /// Learns from configuration frames; returns a sample for media frames of a
    /// packaged track's codec.
    pub fn accept_frame(&mut self, frame: Frame) -> Option<Sample> {
        if frame.config || frame.codec == Codec::Mp3 {
            self.learn(&frame);
            return None;
        }
        if !frame.is_sample() {
            return None;
        }
        let kind = match frame.track {
            Track::Video if Some(frame.codec) == self.video_codec() => TrackKind::Video,
            Track::Audio if frame.codec == Codec::Aac && self.tracks.audio.is_some() => {
                TrackKind::Audio
            }
            _ => return None,
        };
        Some(Sample {
            kind,
            dts: frame.dts,
            pts: frame.pts,
            keyframe: frame.keyframe,
            data: frame.payload,
        })
    }

    fn video_codec(&self) -> Option<Codec> {
        self.tracks.video.as_ref().map(|v| match v.config {
            VideoConfig::H264 { .. } => Codec::H264,
            VideoConfig::H265 { .. } => Codec::H265,
        })
    }

    fn learn(&mut self, frame: &Frame) {
        match track_info::learn(frame) {
            Some(TrackInfo::Audio(info)) => {
                // Only AAC is packaged; MP3 streams get video-only renditions.
                if let Some(track) = info.decoder
                    && self.tracks.audio.as_ref() != Some(&track)
                {
                    self.tracks.audio = Some(track);
                    self.config_version += 1;
                }
            }
            Some(TrackInfo::Video(info)) => {
                let codec = info.codec;
                match info.into_track() {
                    Some(track) if self.tracks.video.as_ref() != Some(&track) => {
                        self.tracks.video = Some(track);
                        self.config_version += 1;
                    }
                    Some(_) => {}
                    None => tracing::warn!(?codec, "video codec not packaged for HLS"),
                }
            }
            None if frame.track == Track::Video => {
                tracing::warn!(codec = ?frame.codec, "video codec not packaged for HLS");
            }
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An avcC record (High profile, level 3.1) with one SPS and one PPS.
    const AVCC: &[u8] = &[
        0x01, 0x64, 0x00, 0x1f, 0xff, 0xe1, 0x00, 0x04, 0x67, 0x64, 0x00, 0x1f, 0x01, 0x00, 0x04,
        0x68, 0xee, 0x3c, 0x80,
    ];

    fn header(track: BusTrack, keyframe: bool, dts: i64, pts: i64) -> MediaHeader {
        MediaHeader {
            track,
            keyframe,
            sequence_header: false,
            payload_len: 0,
            dts,
            pts,
            generation: 1,
        }
    }

    fn body(prefix: &[u8], rest: &[u8]) -> Bytes {
        Bytes::from([prefix, rest].concat())
    }

    #[test]
    fn learns_tracks_and_passes_samples_with_bus_times() {
        let mut builder = TrackBuilder::default();
        let video = header(BusTrack::Video, true, 900, 4500);
        let nal = [0, 0, 0, 1, 0x65];
        // Frames before their configuration are not packaged.
        assert_eq!(
            builder.accept(&video, &body(&[0x17, 1, 0, 0, 0], &nal)),
            None
        );
        assert_eq!(
            builder.accept(&video, &body(&[0x17, 0, 0, 0, 0], AVCC)),
            None
        );
        assert_eq!(builder.config_version, 1);
        assert!(matches!(
            builder.tracks.video.as_ref().map(|v| &v.config),
            Some(VideoConfig::H264 { .. })
        ));
        // The same record again is no new configuration.
        builder.accept(&video, &body(&[0x17, 0, 0, 0, 0], AVCC));
        assert_eq!(builder.config_version, 1);
        // The bus header's times and keyframe flag win over the FLV body's.
        let sample = builder
            .accept(&video, &body(&[0x27, 1, 0, 0, 0x28], &nal))
            .unwrap();
        assert_eq!(
            (sample.kind, sample.dts, sample.pts, sample.keyframe),
            (TrackKind::Video, 900, 4500, true)
        );
        assert_eq!(sample.data, &nal[..]);
        // Control packets and other codecs' frames are not samples.
        assert_eq!(
            builder.accept(&video, &body(&[0x17, 2, 0, 0, 0], &[])),
            None
        );
        let av1 = body(&[0x91, b'a', b'v', b'0', b'1'], &[0x12, 0]);
        assert_eq!(builder.accept(&video, &av1), None);

        let audio = header(BusTrack::Audio, false, 1800, 1800);
        assert_eq!(builder.accept(&audio, &body(&[0xaf, 1], &[0xde])), None);
        assert_eq!(
            builder.accept(&audio, &body(&[0xaf, 0], &[0x12, 0x10])),
            None
        );
        assert_eq!(builder.config_version, 2);
        let sample = builder.accept(&audio, &body(&[0xaf, 1], &[0xde])).unwrap();
        assert_eq!(
            (sample.kind, sample.dts, sample.pts, sample.keyframe),
            (TrackKind::Audio, 1800, 1800, false)
        );
        // MP3 is not packaged; metadata and broken bodies are skipped.
        assert_eq!(builder.accept(&audio, &body(&[0x2f], &[0xff, 0xfb])), None);
        let metadata = header(BusTrack::Metadata, false, 0, 0);
        assert_eq!(builder.accept(&metadata, &body(&[2], &[])), None);
        assert_eq!(builder.accept(&video, &Bytes::new()), None);
        assert_eq!(builder.config_version, 2);
    }

    #[test]
    fn unpackaged_video_codecs_learn_no_track() {
        let mut builder = TrackBuilder::default();
        let video = header(BusTrack::Video, true, 0, 0);
        let av1c = body(&[0x90, b'a', b'v', b'0', b'1'], &[0x81, 0x08, 0x0c, 0x00]);
        assert_eq!(builder.accept(&video, &av1c), None);
        assert_eq!(
            builder.accept(&video, &body(&[0x17, 0, 0, 0, 0], &[1])),
            None
        );
        assert_eq!((builder.tracks.video, builder.config_version), (None, 0));
    }
}
