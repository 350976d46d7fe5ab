//! Cutting a live sample sequence into HLS segments: at a video keyframe once the target
//! duration is reached (any sample for audio-only streams).

use crate::sample::{Sample, TrackKind};

/// A finished segment's samples (interleaved by arrival) and its span.
#[derive(Debug, Clone, PartialEq)]
pub struct CutSegment {
    pub samples: Vec<Sample>,
    /// dts of the first sample, 90 kHz.
    pub start: i64,
    /// dts where the next segment starts (the cut point), 90 kHz.
    pub end: i64,
}

impl CutSegment {
    pub fn duration_secs(&self) -> f64 {
        self.end.saturating_sub(self.start).max(0) as f64 / 90_000.0
    }
}

#[derive(Debug)]
pub struct Segmenter {
    target: i64,
    /// Whether the stream has video; then cuts wait for keyframes.
    video: bool,
    /// A segment longer than this is cut at the next sample anyway (no keyframes coming).
    hard_limit: i64,
    pending: Vec<Sample>,
    start: Option<i64>,
    /// Cut at the next place a segment may start, whatever the duration (a splice).
    cut_next: bool,
}

impl Segmenter {
    pub fn new(target_secs: u32, video: bool) -> Self {
        let target = i64::from(target_secs.max(1)) * 90_000;
        Self {
            target,
            video,
            hard_limit: target * 4,
            pending: Vec::new(),
            start: None,
            cut_next: false,
        }
    }

    /// Adds a sample; returns the segment that ends where this sample begins, if any.
    /// Samples before the first keyframe of a video stream are dropped: a segment must
    /// start with one.
    pub fn push(&mut self, sample: Sample) -> Option<CutSegment> {
        let starts_segment = !self.video || (sample.kind == TrackKind::Video && sample.keyframe);
        let Some(start) = self.start else {
            if starts_segment {
                self.start = Some(sample.dts);
                self.pending.push(sample);
            }
            return None;
        };
        // Saturating: a producer's times may jump anywhere in i64.
        let elapsed = sample.dts.saturating_sub(start);
        let cut = (starts_segment && (elapsed >= self.target || (self.cut_next && elapsed > 0)))
            || (self.video && elapsed >= self.hard_limit && sample.kind == TrackKind::Video);
        if !cut {
            self.pending.push(sample);
            return None;
        }
        let end = sample.dts;
        self.cut_next = false;
        let samples = std::mem::take(&mut self.pending);
        self.start = Some(sample.dts);
        self.pending.push(sample);
        Some(CutSegment {
            samples,
            start,
            end,
        })
    }

    /// Cuts at the next sample that may start a segment, however short the segment
    /// being built is (an SCTE-35 splice point: the break starts on a boundary).
    pub fn cut_at_next_start(&mut self) {
        self.cut_next = true;
    }

    /// Whether a segment is being built.
    pub fn started(&self) -> bool {
        self.start.is_some()
    }

    /// Drops what is pending (the publisher went away mid-segment).
    pub fn reset(&mut self) {
        self.pending.clear();
        self.start = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn video(dts: i64, keyframe: bool) -> Sample {
        Sample {
            kind: TrackKind::Video,
            dts,
            pts: dts,
            keyframe,
            data: Bytes::new(),
        }
    }

    fn audio(dts: i64) -> Sample {
        Sample {
            kind: TrackKind::Audio,
            dts,
            pts: dts,
            keyframe: false,
            data: Bytes::new(),
        }
    }

    #[test]
    fn cuts_at_the_first_keyframe_after_the_target() {
        let mut segmenter = Segmenter::new(2, true);
        assert!(
            segmenter.push(video(0, false)).is_none(),
            "dropped: no keyframe yet"
        );
        let mut cuts = Vec::new();
        for i in 0..200 {
            let dts = 90_000 + i * 3_600; // 25 fps
            if let Some(cut) = segmenter.push(video(dts, i % 30 == 0)) {
                cuts.push(cut);
            }
            if let Some(cut) = segmenter.push(audio(dts + 100)) {
                cuts.push(cut);
            }
        }
        assert!(!cuts.is_empty());
        for cut in &cuts {
            assert!(cut.samples[0].keyframe);
            assert!(cut.duration_secs() >= 2.0);
            assert!(
                (cut.duration_secs() - 2.4).abs() < 0.01,
                "30-frame GOPs at 25 fps: {}",
                cut.duration_secs()
            );
        }
    }

    #[test]
    fn a_splice_cuts_at_the_next_keyframe_however_short_the_segment() {
        let mut segmenter = Segmenter::new(6, true);
        assert!(segmenter.push(video(0, true)).is_none());
        assert!(segmenter.push(video(3_600, false)).is_none());
        segmenter.cut_at_next_start();
        assert!(
            segmenter.push(video(7_200, false)).is_none(),
            "not a keyframe"
        );
        let cut = segmenter.push(video(10_800, true)).unwrap();
        assert_eq!((cut.start, cut.end, cut.samples.len()), (0, 10_800, 3));
        // Back to the target duration afterwards.
        assert!(segmenter.push(video(14_400, true)).is_none());
        assert!(segmenter.started());
    }

    /// Times that jump across the whole range (a hostile or broken producer) cut
    /// segments without overflowing; a huge jump forward cuts, one back does not.
    #[test]
    fn times_at_the_ends_of_the_range_do_not_overflow() {
        let mut segmenter = Segmenter::new(2, true);
        assert!(segmenter.push(video(i64::MIN, true)).is_none());
        let cut = segmenter.push(video(i64::MAX, true)).unwrap();
        assert_eq!((cut.start, cut.end), (i64::MIN, i64::MAX));
        assert_eq!(cut.duration_secs(), i64::MAX as f64 / 90_000.0);
        assert!(segmenter.push(video(i64::MIN, true)).is_none());
        let cut = CutSegment {
            samples: Vec::new(),
            start: i64::MAX,
            end: i64::MIN,
        };
        assert_eq!(cut.duration_secs(), 0.0);
    }

    #[test]
    fn audio_only_cuts_on_duration() {
        let mut segmenter = Segmenter::new(1, false);
        let cuts: Vec<_> = (0..200)
            .filter_map(|i| segmenter.push(audio(i * 1_920)))
            .collect();
        assert!(cuts.len() >= 3);
        assert!(
            cuts.iter()
                .all(|c| c.duration_secs() >= 1.0 && c.duration_secs() < 1.1)
        );
    }
}
