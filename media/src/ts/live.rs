//! Live MPEG-TS outputs (SRT, RIST, UDP, `mpegts.stream`): one sample at a time, with
//! the PAT and PMT repeated where a receiver may start.
//!
//! A frame is rendered once and its packets are shared by every viewer of a stream, so
//! the rendering must not depend on which viewer (with which muxer) got there first:
//! the PMT version is derived from the program's streams instead of counted, and the
//! continuity counters written here are placeholders that each viewer's
//! [`super::continuity::Continuity`] rewrites. Tables go before every video keyframe,
//! and in a stream without video before the first audio frame of every half second.
//! SCTE-35 sections pass through on their own PID, which the PMT lists (with the `CUEI`
//! registration descriptor) once the stream carried a marker.

use super::{Layout, TsMuxer};
use crate::ParseError;
use crate::sample::{Sample, TrackKind, Tracks};

/// How often an audio-only stream repeats its tables: every 500 ms, in 90 kHz ticks.
const AUDIO_TABLES_INTERVAL: i64 = 45_000;

impl Layout {
    /// A PMT version that only the program's streams decide (H.264 or H.265 video, AAC
    /// or MPEG audio or none, SCTE-35 or not), so independent renderers write the same
    /// table.
    fn live_version(self) -> u8 {
        let video = match self.video_stream_type {
            None => 0,
            Some(super::STREAM_TYPE_H264) => 1,
            Some(_) => 2,
        };
        let audio = match self.audio_stream_type {
            None => 0,
            Some(super::STREAM_TYPE_AAC_ADTS) => 1,
            Some(_) => 2,
        };
        (video * 6 + audio * 2 + u8::from(self.scte35)) & 0x1f
    }
}

impl TsMuxer {
    /// A muxer for live outputs (see the module docs).
    pub fn live(tracks: &Tracks) -> Self {
        let mut muxer = Self::new(tracks);
        muxer.pmt_version = muxer.layout.live_version();
        muxer
    }

    /// Appends a PAT and a PMT describing `tracks`, and the SCTE-35 PID (with the
    /// `CUEI` registration descriptor) when `scte35`.
    pub fn write_tables(&mut self, tracks: &Tracks, scte35: bool, out: &mut Vec<u8>) {
        self.layout = Layout {
            scte35,
            ..Layout::of(tracks)
        };
        self.pmt_version = self.layout.live_version();
        self.write_psi(out);
    }

    /// Appends `sample` as one PES, preceded by the tables when
    /// [`tables_precede`] says a receiver may start there. Fails like
    /// [`TsMuxer::write_segment`], appending nothing.
    pub fn write_live_sample(
        &mut self,
        tracks: &Tracks,
        scte35: bool,
        sample: &Sample,
        out: &mut Vec<u8>,
    ) -> Result<(), ParseError> {
        let start = out.len();
        let result = self.write_live_inner(tracks, scte35, sample, out);
        if result.is_err() {
            out.truncate(start);
        }
        result
    }

    fn write_live_inner(
        &mut self,
        tracks: &Tracks,
        scte35: bool,
        sample: &Sample,
        out: &mut Vec<u8>,
    ) -> Result<(), ParseError> {
        if tables_precede(tracks, sample) {
            self.write_tables(tracks, scte35, out);
        } else {
            self.layout = Layout {
                scte35,
                ..Layout::of(tracks)
            };
        }
        let pcr_pid = self.layout.pcr_pid();
        match sample.kind {
            TrackKind::Video => {
                let video = tracks
                    .video
                    .as_ref()
                    .ok_or(ParseError::Invalid("video sample without a video track"))?;
                self.write_video(video, sample, pcr_pid == super::VIDEO_PID, out)
            }
            TrackKind::Audio => {
                let audio = tracks
                    .audio
                    .as_ref()
                    .ok_or(ParseError::Invalid("audio sample without an audio track"))?;
                let group = std::slice::from_ref(sample);
                self.write_audio(audio, group, pcr_pid == super::AUDIO_PID, out)
            }
        }
    }
}

impl TsMuxer {
    /// Appends one SCTE-35 `splice_info_section` (whole, CRC included, at most 4096
    /// bytes) on [`super::SCTE35_PID`].
    pub fn write_scte35(&mut self, section: &[u8], out: &mut Vec<u8>) {
        let section = section.get(..section.len().min(4096)).unwrap_or_default();
        super::psi::write_whole_section(super::SCTE35_PID, section, &mut self.cc.scte35, out);
    }
}

/// Whether the tables go before `sample`: a video keyframe, or in a stream without
/// video the audio frame that starts a new half second.
pub fn tables_precede(tracks: &Tracks, sample: &Sample) -> bool {
    match sample.kind {
        TrackKind::Video => sample.keyframe,
        TrackKind::Audio if tracks.video.is_some() => false,
        TrackKind::Audio => {
            let (frequency, samples) = tracks.audio.as_ref().map_or((0, 0), |a| {
                (
                    i64::from(a.config.sampling_frequency()),
                    i64::from(a.config.frame_samples()),
                )
            });
            let frame = if frequency > 0 {
                samples * i64::from(crate::sample::TIMESCALE) / frequency
            } else {
                AUDIO_TABLES_INTERVAL
            };
            sample.dts.rem_euclid(AUDIO_TABLES_INTERVAL) < frame.max(1)
        }
    }
}
