//! The output timeline of a playout: every source's frames are moved onto one
//! continuous, monotonic 90 kHz timeline. Pure: frames in, frames out.
//!
//! A new source ([`Timeline::begin`]) starts at its first video keyframe (its first audio
//! frame when it has no video); frames before it are dropped. That keyframe is placed
//! right where the previous source's video ended (its last frame plus one frame
//! duration), so the video has no gap and no overlap at a switch; the new source's
//! first audio frames that would overlap the previous audio are dropped (a gap of less
//! than one audio frame). After that a track's frames go out only with increasing
//! decode times.

use strom_media::frame::{Frame, Track};

/// A frame step is taken as real only below this (a source's timestamp jump is not).
const MAX_STEP: i64 = 90_000;
/// Before any frame of a track: 25 fps video, 1024-sample AAC at 48 kHz.
const VIDEO_STEP: i64 = 3_600;
const AUDIO_STEP: i64 = 1_920;

#[derive(Debug, Clone, Copy)]
struct TrackClock {
    last: Option<i64>,
    step: i64,
    /// The first frame of this track since the source began.
    fresh: bool,
}

impl TrackClock {
    fn new(step: i64) -> Self {
        Self {
            last: None,
            step,
            fresh: true,
        }
    }

    fn end(&self) -> Option<i64> {
        self.last.map(|last| last + self.step)
    }

    /// Whether a frame at `dts` may go out, and if so takes it.
    fn take(&mut self, dts: i64) -> bool {
        if let Some(last) = self.last {
            let floor = if self.fresh {
                // Three quarters of a step: rounding of the source's times is no overlap.
                last + self.step - self.step / 4
            } else {
                last + 1
            };
            if dts < floor {
                return false;
            }
            if !self.fresh && dts.saturating_sub(last) < MAX_STEP {
                self.step = dts - last;
            }
        }
        self.fresh = false;
        self.last = Some(dts);
        true
    }
}

/// Where a switch stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for the new source's first frame to start at (a video keyframe when
    /// `video`, else an audio frame).
    Starting {
        video: bool,
    },
    Playing,
}

#[derive(Debug, Clone)]
pub struct Timeline {
    /// Added to a source time to get the output time.
    offset: i64,
    phase: Phase,
    video: TrackClock,
    audio: TrackClock,
}

/// A frame on the output timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapped {
    pub frame: Frame,
    /// The first frame of the source that began last.
    pub first: bool,
}

impl Default for Timeline {
    fn default() -> Self {
        Self {
            offset: 0,
            phase: Phase::Starting { video: true },
            video: TrackClock::new(VIDEO_STEP),
            audio: TrackClock::new(AUDIO_STEP),
        }
    }
}

impl Timeline {
    /// A new source follows; `video` says whether it has video to start at.
    pub fn begin(&mut self, video: bool) {
        self.phase = Phase::Starting { video };
        self.video.fresh = true;
        self.audio.fresh = true;
    }

    /// Whether the source that began last has not started yet.
    pub fn starting(&self) -> bool {
        matches!(self.phase, Phase::Starting { .. })
    }

    /// The output time the next source starts at: the end of the video (audio that ran
    /// ahead of it loses its overlap in the new source instead), or the end of the
    /// audio when there is no video or the video stopped long before it.
    pub fn next_start(&self) -> i64 {
        match (self.video.end(), self.audio.end()) {
            (Some(video), Some(audio)) if audio - video < MAX_STEP => video,
            (Some(video), None) => video,
            (_, Some(audio)) => audio,
            (None, None) => 0,
        }
    }

    /// `frame` (a sample or a data frame of the current source) on the output
    /// timeline; `None` when it is dropped.
    pub fn map(&mut self, mut frame: Frame) -> Option<Mapped> {
        let first = match self.phase {
            Phase::Starting { video } => {
                let starts = if video {
                    frame.track == Track::Video && frame.keyframe
                } else {
                    frame.track == Track::Audio
                };
                if !starts {
                    return None;
                }
                self.offset = self.next_start().saturating_sub(frame.dts);
                self.phase = Phase::Playing;
                true
            }
            Phase::Playing => false,
        };
        frame.dts = frame.dts.saturating_add(self.offset);
        frame.pts = frame.pts.saturating_add(self.offset);
        let taken = match frame.track {
            Track::Video => self.video.take(frame.dts),
            Track::Audio => self.audio.take(frame.dts),
            Track::Data => true,
        };
        taken.then_some(Mapped { frame, first })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use bytes::Bytes;
    use strom_media::frame::Codec;

    fn video(dts: i64, key: bool) -> Frame {
        Frame {
            keyframe: key,
            pts: dts + 7_200,
            ..Frame::neutral(Track::Video, Codec::H264, dts, Bytes::new())
        }
    }

    fn audio(dts: i64) -> Frame {
        Frame::neutral(Track::Audio, Codec::Aac, dts, Bytes::new())
    }

    /// Plays `frames` as one source; the output decode times per track.
    fn play(timeline: &mut Timeline, frames: Vec<Frame>) -> (Vec<i64>, Vec<i64>) {
        let (mut v, mut a) = (Vec::new(), Vec::new());
        for frame in frames {
            if let Some(mapped) = timeline.map(frame) {
                match mapped.frame.track {
                    Track::Video => v.push(mapped.frame.dts),
                    _ => a.push(mapped.frame.dts),
                }
            }
        }
        (v, a)
    }

    /// A source at `base` (its own clock): `frames` of 25 fps video with a keyframe
    /// every 10 frames from frame `lead` on, and 48 kHz AAC, in decode order.
    fn source(base: i64, frames: i64, lead: i64) -> Vec<Frame> {
        let mut out: Vec<Frame> = (0..frames)
            .map(|n| video(base + n * 3_600, n >= lead && (n - lead) % 10 == 0))
            .collect();
        out.extend((0..frames * 3_600 / 1_920).map(|k| audio(base + k * 1_920)));
        out.sort_by_key(|f| (f.dts, f.track != Track::Video));
        out
    }

    #[test]
    fn switches_leave_no_video_gap_and_stay_monotonic() {
        let mut timeline = Timeline::default();
        timeline.begin(true);
        let (v1, a1) = play(&mut timeline, source(1_000_000, 30, 0));
        assert_eq!(v1[0], 0);
        // A live source far away on its own clock, joined 3 frames before a keyframe.
        timeline.begin(true);
        let (v2, a2) = play(&mut timeline, source(-77_777, 30, 3));
        assert_eq!(v2[0], v1.last().unwrap() + 3_600, "no gap, no overlap");
        // Back to a file.
        timeline.begin(true);
        let (v3, a3) = play(&mut timeline, source(0, 20, 0));
        assert_eq!(v3[0], v2.last().unwrap() + 3_600);
        let all_video: Vec<_> = [v1, v2, v3].concat();
        assert!(
            all_video.windows(2).all(|w| w[1] - w[0] == 3_600),
            "{all_video:?}"
        );
        let all_audio: Vec<_> = [a1, a2, a3].concat();
        assert!(all_audio.windows(2).all(|w| w[1] > w[0]));
        let widest = all_audio.windows(2).map(|w| w[1] - w[0]).max().unwrap();
        assert!(widest < 2 * 1_920, "an audio gap under one frame: {widest}");
    }

    #[test]
    fn frames_before_the_first_keyframe_and_going_back_are_dropped() {
        let mut timeline = Timeline::default();
        timeline.begin(true);
        assert!(timeline.map(audio(0)).is_none());
        assert!(timeline.map(video(0, false)).is_none());
        let first = timeline.map(video(3_600, true)).unwrap();
        assert!(first.first && first.frame.dts == 0 && first.frame.pts == 7_200);
        assert!(
            timeline.map(video(3_600, false)).is_none(),
            "not increasing"
        );
        assert!(!timeline.map(video(7_200, false)).unwrap().first);
        // An audio-only source starts at its first audio frame.
        timeline.begin(false);
        let mapped = timeline.map(audio(500)).unwrap();
        assert_eq!(mapped.frame.dts, 7_200);
    }
}
