//! Where segments begin and end (sans IO): a segment starts at a video keyframe (any
//! frame of an audio-only stream) and is cut at the first one after the segment length,
//! at a codec change and when the publisher changes (a new period). A track whose
//! configuration arrives while a segment is open joins it (its samples follow its
//! configuration; the segment file takes its configurations when it closes). Its wall-clock start
//! is the period's anchor (arrival time of its first frame) plus media time, re-anchored
//! when the two drift apart by more than [`MAX_DRIFT_MS`].
//!
//! SCTE-35 markers: a splice marker cuts the open segment at the next keyframe, as the
//! live HLS packager does, and the segment that starts there keeps the marker's section
//! (its index entry carries it), so the archive's playlists put the break where the
//! live playlist did. Which sections splice, and how many one segment takes, is the
//! live playlist's [`CueTracker`] decision.

use bytes::Bytes;
use strom_media::dvr::SegmentEntry;
use strom_media::frame::{Codec, Frame, Track};
use strom_media::hls::cues::{CueStyle, CueTracker};
use strom_media::mpeg_audio::MpegAudioConfig;
use strom_media::sample::{Sample, TrackKind, VideoConfig};
use strom_media::track_builder::TrackBuilder;

/// A segment that reaches this size without a keyframe is closed anyway; recording
/// resumes at the next keyframe.
const MAX_SEGMENT_BYTES: u64 = 256 * 1024 * 1024;
const MAX_DRIFT_MS: i64 = 1000;
/// Frame durations assumed for the end of a period's last segment until measured.
const DEFAULT_VIDEO_TICKS: i64 = 3000;
const DEFAULT_AUDIO_TICKS: i64 = 1920;

/// What the writer does next.
#[derive(Debug, PartialEq)]
pub enum Cut {
    /// Close the open segment with these facts and configuration frames.
    Close(SegmentEntry, Vec<(Codec, Bytes)>),
    /// Start a segment carrying [`Cutter::configs`].
    Begin,
    /// Append this sample to the open segment.
    Sample(Sample),
}

struct Open {
    first_dts: i64,
    start_ms: i64,
    bytes: u64,
    /// The SCTE-35 sections the segment starts with.
    scte35: Vec<Bytes>,
}

pub struct Cutter {
    segment_ticks: i64,
    tracks: TrackBuilder,
    /// The configuration frames of the current video and audio tracks.
    configs: Vec<(Codec, Bytes)>,
    generation: Option<u32>,
    period: u32,
    /// `(wall ms, dts)` that maps the period's media time to wall-clock time.
    anchor: Option<(i64, i64)>,
    open: Option<Open>,
    /// Last dts and frame duration of video and audio (for a segment's end).
    last: [(Option<i64>, i64); 2],
    /// SCTE-35 splice markers waiting for the next segment to start.
    cues: CueTracker,
    /// A marker came: the open segment ends at the next place a segment may start.
    cut_next: bool,
}

impl Cutter {
    pub fn new(segment_secs: u32, first_period: u32) -> Self {
        Self {
            segment_ticks: i64::from(segment_secs) * 90_000,
            tracks: TrackBuilder::default(),
            configs: Vec::new(),
            generation: None,
            period: first_period,
            anchor: None,
            open: None,
            last: [(None, DEFAULT_VIDEO_TICKS), (None, DEFAULT_AUDIO_TICKS)],
            cues: CueTracker::new(CueStyle::default()),
            cut_next: false,
        }
    }

    /// Takes a SCTE-35 section (a frame of [`Codec::Scte35`]): a splice cuts the open
    /// segment at the next keyframe, and the segment that starts there keeps it.
    pub fn marker(&mut self, section: &[u8]) {
        if self.cues.marker(section) {
            self.cut_next = true;
        }
    }

    /// The configuration frames a new segment carries.
    pub fn configs(&self) -> &[(Codec, Bytes)] {
        &self.configs
    }

    /// Takes `frame` of publisher `generation`, arrived at `now_ms`; calls `emit` with
    /// what to do, in order.
    pub fn push(
        &mut self,
        frame: &Frame,
        generation: u32,
        now_ms: i64,
        emit: &mut impl FnMut(Cut),
    ) {
        if self.generation.is_some_and(|g| g != generation) {
            self.close(None, emit);
            self.period += 1;
            self.anchor = None;
            self.tracks = TrackBuilder::default();
            self.configs.clear();
            self.last = [(None, DEFAULT_VIDEO_TICKS), (None, DEFAULT_AUDIO_TICKS)];
        }
        self.generation = Some(generation);
        if frame.config {
            self.configure(frame, emit);
            return;
        }
        if frame.codec == Codec::Mp3 {
            // MP3 has no configuration frames: its frames' headers are its
            // configuration, kept as a record like an AudioSpecificConfig.
            let Some(mp3) = MpegAudioConfig::of_frame(&frame.payload) else {
                return;
            };
            let record = mp3.record();
            let known = self
                .configs
                .iter()
                .any(|(codec, kept)| *codec == Codec::Mp3 && kept[..] == record[..]);
            if !known {
                let record = Bytes::copy_from_slice(&record);
                let mut config = Frame::neutral(Track::Audio, Codec::Mp3, frame.dts, record);
                config.config = true;
                self.configure(&config, emit);
            }
        }
        let Some(sample) = self.tracks.accept_frame(frame.clone()) else {
            return;
        };
        let has_video = self.tracks.tracks.video.is_some();
        let starts_here = !has_video || (sample.kind == TrackKind::Video && sample.keyframe);
        if let Some(open) = &self.open {
            let long_enough = sample.dts - open.first_dts >= self.segment_ticks;
            if starts_here && (long_enough || self.cut_next) {
                self.close(Some(sample.dts), emit);
            } else if open.bytes > MAX_SEGMENT_BYTES {
                self.close(None, emit);
                if !starts_here {
                    return;
                }
            }
        }
        if self.open.is_none() {
            if !starts_here {
                return;
            }
            let start_ms = self.wall_clock(sample.dts, now_ms);
            self.cues.segment_started();
            self.cut_next = false;
            let scte35 = self
                .cues
                .sections_of_current()
                .into_iter()
                .map(Bytes::copy_from_slice)
                .collect();
            self.open = Some(Open {
                first_dts: sample.dts,
                start_ms,
                bytes: 0,
                scte35,
            });
            emit(Cut::Begin);
        }
        let slot = usize::from(sample.kind == TrackKind::Audio);
        if let (Some(previous), _) = self.last[slot]
            && sample.dts > previous
        {
            self.last[slot].1 = sample.dts - previous;
        }
        self.last[slot].0 = Some(sample.dts);
        if let Some(open) = self.open.as_mut() {
            open.bytes += sample.data.len() as u64;
        }
        emit(Cut::Sample(sample));
    }

    /// Takes a configuration frame: a new one joins the open segment, a changed one
    /// closes it (a segment is decodable with the configurations it closes with).
    fn configure(&mut self, frame: &Frame, emit: &mut impl FnMut(Cut)) {
        let slot = self
            .configs
            .iter()
            .position(|(codec, _)| codec.track() == Some(frame.track));
        if let Some(i) = slot {
            if self.configs[i].0 == frame.codec && self.configs[i].1 == frame.payload {
                return;
            }
            // A change: the open segment ends with the configuration it was made with.
            self.close(None, emit);
            self.configs.remove(i);
        }
        self.tracks.accept_frame(frame.clone());
        self.configs.push((frame.codec, frame.payload.clone()));
    }

    /// The writer could not start or write the segment: the next one starts at the next
    /// place a segment may start.
    pub fn abandon(&mut self) {
        self.open = None;
    }

    /// The facts of the open segment when recording ends.
    pub fn finish(&mut self) -> Option<(SegmentEntry, Vec<(Codec, Bytes)>)> {
        let open = self.open.take()?;
        Some((self.facts(&open, None), self.configs.clone()))
    }

    fn close(&mut self, next_dts: Option<i64>, emit: &mut impl FnMut(Cut)) {
        if let Some(open) = self.open.take() {
            emit(Cut::Close(
                self.facts(&open, next_dts),
                self.configs.clone(),
            ));
        }
    }

    fn wall_clock(&mut self, dts: i64, now_ms: i64) -> i64 {
        let (anchor_ms, anchor_dts) = *self.anchor.get_or_insert((now_ms, dts));
        let mapped = anchor_ms + (dts - anchor_dts) / 90;
        if (mapped - now_ms).abs() > MAX_DRIFT_MS {
            self.anchor = Some((now_ms, dts));
            return now_ms;
        }
        mapped
    }

    fn facts(&self, open: &Open, next_dts: Option<i64>) -> SegmentEntry {
        let end = next_dts.unwrap_or_else(|| {
            self.last
                .iter()
                .filter_map(|(dts, ticks)| dts.map(|d| d + ticks))
                .max()
                .unwrap_or(open.first_dts)
        });
        let tracks = &self.tracks.tracks;
        let vcodec = tracks.video.as_ref().map(|v| match &v.config {
            VideoConfig::H264 { config, .. } => config.codec_string(),
            VideoConfig::H265 { config, .. } => config.codec_string(),
        });
        SegmentEntry {
            seq: 0,
            period: self.period,
            start_ms: open.start_ms,
            start_dts: open.first_dts,
            duration: (end - open.first_dts).max(0) as u64,
            bytes: 0,
            samples: 0,
            width: tracks.video.as_ref().map_or(0, |v| v.width),
            height: tracks.video.as_ref().map_or(0, |v| v.height),
            vcodec: vcodec.unwrap_or_default(),
            acodec: tracks
                .audio
                .as_ref()
                .map(|a| a.config.codec_string())
                .unwrap_or_default(),
            scte35: open.scte35.clone(),
        }
    }
}
