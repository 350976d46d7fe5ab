//! Turning neutral frames into muxer tracks and samples (HLS, fMP4 and live MPEG-TS
//! outputs): tracks are learned from configuration frames by [`crate::track_info`],
//! media frames of a muxed codec (H.264, H.265, AAC; MP3 once a configuration frame
//! made it a track, which only the DVR does) become samples.

use crate::frame::{Codec, Frame, Track};
use crate::sample::{AudioConfig, Sample, TrackKind, Tracks, VideoConfig};
use crate::track_info::{self, TrackInfo};

#[derive(Debug, Default)]
pub struct TrackBuilder {
    pub tracks: Tracks,
    /// Bumped whenever a codec configuration changes (a new fMP4 init segment).
    pub config_version: u32,
    /// A video codec whose configuration arrived but that no muxer here writes (AV1,
    /// VP9, or a record that did not parse); taken by [`Self::take_unmuxed_video`].
    unmuxed_video: Option<Codec>,
}

impl TrackBuilder {
    /// Learns from configuration frames; returns a sample for media frames of a
    /// packaged track's codec.
    pub fn accept_frame(&mut self, frame: Frame) -> Option<Sample> {
        let mp3_track = self.audio_codec() == Some(Codec::Mp3);
        if frame.config || (frame.codec == Codec::Mp3 && !mp3_track) {
            self.learn(&frame);
            return None;
        }
        if !frame.is_sample() {
            return None;
        }
        let kind = match frame.track {
            Track::Video if Some(frame.codec) == self.video_codec() => TrackKind::Video,
            Track::Audio if Some(frame.codec) == self.audio_codec() => TrackKind::Audio,
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

    /// The video codec last seen that cannot be muxed, once (for the caller's log line).
    pub fn take_unmuxed_video(&mut self) -> Option<Codec> {
        self.unmuxed_video.take()
    }

    fn audio_codec(&self) -> Option<Codec> {
        self.tracks.audio.as_ref().map(|a| match a.config {
            AudioConfig::Aac(_) => Codec::Aac,
            AudioConfig::Mp3(_) => Codec::Mp3,
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
                // AAC, and MP3 from a configuration frame (the DVR's, made by
                // [`crate::mpeg_audio::MpegAudioConfig::record`]): live MP3 streams
                // carry no configuration frames and get video-only renditions.
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
                    None => self.unmuxed_video = Some(codec),
                }
            }
            None if frame.track == Track::Video => self.unmuxed_video = Some(frame.codec),
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    /// An avcC record (High profile, level 3.1) with one SPS and one PPS.
    const AVCC: &[u8] = &[
        0x01, 0x64, 0x00, 0x1f, 0xff, 0xe1, 0x00, 0x04, 0x67, 0x64, 0x00, 0x1f, 0x01, 0x00, 0x04,
        0x68, 0xee, 0x3c, 0x80,
    ];

    fn frame(codec: Codec, keyframe: bool, dts: i64, pts: i64, payload: &[u8]) -> Frame {
        Frame {
            track: codec.track().unwrap_or(Track::Video),
            codec,
            dts,
            pts,
            keyframe,
            config: false,
            control: false,
            payload: Bytes::copy_from_slice(payload),
            form: crate::frame::SourceForm::Neutral,
        }
    }

    fn config(codec: Codec, payload: &[u8]) -> Frame {
        Frame {
            config: true,
            ..frame(codec, codec.track() == Some(Track::Video), 0, 0, payload)
        }
    }

    #[test]
    fn learns_tracks_and_passes_samples_with_frame_times() {
        let mut builder = TrackBuilder::default();
        let nal = [0, 0, 0, 1, 0x65];
        // Frames before their configuration are not packaged.
        assert_eq!(
            builder.accept_frame(frame(Codec::H264, true, 900, 4500, &nal)),
            None
        );
        assert_eq!(builder.accept_frame(config(Codec::H264, AVCC)), None);
        assert_eq!(builder.config_version, 1);
        assert!(matches!(
            builder.tracks.video.as_ref().map(|v| &v.config),
            Some(VideoConfig::H264 { .. })
        ));
        // The same record again is no new configuration.
        builder.accept_frame(config(Codec::H264, AVCC));
        assert_eq!(builder.config_version, 1);
        let sample = builder
            .accept_frame(frame(Codec::H264, true, 900, 4500, &nal))
            .unwrap();
        assert_eq!(
            (sample.kind, sample.dts, sample.pts, sample.keyframe),
            (TrackKind::Video, 900, 4500, true)
        );
        assert_eq!(sample.data, &nal[..]);
        // Control frames and other codecs' frames are not samples.
        let end_of_sequence = Frame {
            control: true,
            ..frame(Codec::H264, false, 1000, 1000, &[])
        };
        assert_eq!(builder.accept_frame(end_of_sequence), None);
        assert_eq!(
            builder.accept_frame(frame(Codec::Av1, true, 900, 900, &[0x12, 0])),
            None
        );

        let aac = frame(Codec::Aac, false, 1800, 1800, &[0xde]);
        assert_eq!(builder.accept_frame(aac.clone()), None);
        assert_eq!(
            builder.accept_frame(config(Codec::Aac, &[0x12, 0x10])),
            None
        );
        assert_eq!(builder.config_version, 2);
        let sample = builder.accept_frame(aac).unwrap();
        assert_eq!(
            (sample.kind, sample.dts, sample.pts, sample.keyframe),
            (TrackKind::Audio, 1800, 1800, false)
        );
        // MP3 is not packaged; metadata and SCTE-35 are no samples.
        assert_eq!(
            builder.accept_frame(frame(Codec::Mp3, false, 0, 0, &[0xff, 0xfb, 0x90, 0x64])),
            None
        );
        assert_eq!(
            builder.accept_frame(frame(Codec::AmfData, false, 0, 0, &[2])),
            None
        );
        assert_eq!(
            builder.accept_frame(frame(Codec::Scte35, false, 0, 0, &[0xfc])),
            None
        );
        assert_eq!(builder.config_version, 2);
    }

    #[test]
    fn unpackaged_video_codecs_learn_no_track() {
        let mut builder = TrackBuilder::default();
        assert_eq!(
            builder.accept_frame(config(Codec::Av1, &[0x81, 0x08, 0x0c, 0x00])),
            None
        );
        assert_eq!(builder.accept_frame(config(Codec::H264, &[1])), None);
        assert_eq!(builder.take_unmuxed_video(), Some(Codec::H264));
        assert_eq!(builder.take_unmuxed_video(), None);
        assert_eq!((builder.tracks.video, builder.config_version), (None, 0));
    }
}
