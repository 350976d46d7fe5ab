//! Cutting a live sample sequence into HLS segments under a fixed target duration.
//!
//! Two durations drive the cuts: the configured segment duration (`target`: cut at the
//! first keyframe once it is reached) and the playlist's `#EXT-X-TARGETDURATION`
//! (`limit`), which RFC 8216 forbids to change and which no segment may exceed once
//! rounded.
//!
//! Video segments start at keyframes. The limit is either given (a playlist that has one
//! already) or decided at the first cut, as the packagers that play everywhere do: the
//! configured duration, or the first segment's keyframe spacing rounded up when that is
//! longer (OBS's default "auto" keyframe interval is 250 frames, 8.3 s at 30 fps: each
//! segment is then one GOP of 8.3 s under a target duration of 9 s), at most
//! [`LONGEST_AUTO_LIMIT`]. So that no later segment exceeds it whatever the publisher's
//! keyframe spacing does:
//!
//! - at a keyframe before the configured duration, the segment is cut already when
//!   waiting for the next keyframe (one more keyframe interval like the last) would take
//!   it past the limit: keyframe spacing that changes mid-stream shortens segments
//!   instead of lengthening them;
//! - only a keyframe interval longer than the limit (longer than any before the first
//!   cut, or than [`LONGEST_AUTO_LIMIT`]) gets no keyframe in time at all: the segment is
//!   cut at the last video frame within the limit, and the next segment does not start
//!   with a keyframe ([`CutSegment::independent`] is false; the playlists then stop
//!   claiming `#EXT-X-INDEPENDENT-SEGMENTS`). The target duration stays as RFC 8216
//!   §6.2.1 requires; such segments are fragile in players, which docs/hls-dash.md says.
//!
//! Audio-only streams are cut at any sample once the configured duration is reached.
//! [`Segmenter::flush`] ends the segment being built (a publisher that stopped).

use crate::sample::{Sample, TrackKind};

/// A segment may last up to the limit plus this (just under half a second: `EXTINF`
/// values are rounded to the nearest second and printed with three decimals).
const ROUNDING_SLACK: i64 = 44_900;
/// A video frame this late (video paused, audio going on) lets a segment that reaches
/// the limit be cut at an audio sample.
const VIDEO_GAP: i64 = 22_500;
/// The longest target duration decided from the publisher's keyframe spacing (unless the
/// configured duration is longer): 250 frames at 24 fps (10.4 s) fit, and the first
/// segment still comes before a playlist request made at the start gives up (15 s).
pub const LONGEST_AUTO_LIMIT: u32 = 12;
/// How far past a whole second (90 kHz) a keyframe spacing must be to round the decided
/// limit up to the next second.
const ROUND_UP_FROM: i64 = 9_000;
/// Duration given to the last sample of a flushed segment when its track had only one.
const LONE_VIDEO_DURATION: i64 = 3_600;
const LONE_AUDIO_DURATION: i64 = 1_920;

/// A finished segment's samples (interleaved by arrival) and its span.
#[derive(Debug, Clone, PartialEq)]
pub struct CutSegment {
    pub samples: Vec<Sample>,
    /// dts of the first sample, 90 kHz.
    pub start: i64,
    /// dts where the next segment starts (the cut point), 90 kHz.
    pub end: i64,
    /// The segment starts with a video keyframe (or has no video): it decodes without
    /// the segments before it.
    pub independent: bool,
}

impl CutSegment {
    pub fn duration_secs(&self) -> f64 {
        self.end.saturating_sub(self.start).max(0) as f64 / 90_000.0
    }
}

/// The latest sample time of one track and the interval before it.
#[derive(Debug, Default, Clone, Copy)]
struct TrackClock {
    last: Option<i64>,
    interval: Option<i64>,
}

impl TrackClock {
    fn tick(&mut self, dts: i64) {
        if let Some(last) = self.last {
            self.interval = Some(dts.saturating_sub(last)).filter(|i| *i > 0);
        }
        self.last = Some(dts);
    }

    /// Where the latest sample ends: its dts plus the interval before it.
    fn end(&self, lone: i64) -> Option<i64> {
        self.last
            .map(|last| last.saturating_add(self.interval.unwrap_or(lone)))
    }
}

#[derive(Debug)]
pub struct Segmenter {
    /// The configured segment duration, 90 kHz: a keyframe past it cuts.
    target: i64,
    /// The playlist's target duration, 90 kHz: no segment rounds above it. `None` until
    /// the first cut decides it (see [`Segmenter::with_open_limit`]).
    limit: Option<i64>,
    /// The longest keyframe interval seen before the limit was decided, 90 kHz.
    longest_gop: i64,
    /// Whether the stream has video; then cuts wait for keyframes.
    video: bool,
    pending: Vec<Sample>,
    start: Option<i64>,
    /// The segment being built starts with a keyframe (or the stream has no video).
    independent: bool,
    /// Cut at the next place a segment may start, whatever the duration (a splice).
    cut_next: bool,
    /// dts of the latest video keyframe and the keyframe interval before it.
    keyframes: TrackClock,
    video_clock: TrackClock,
    audio_clock: TrackClock,
}

impl Segmenter {
    /// Cuts at keyframes once `target_secs` is reached, never making a segment longer
    /// than `limit_secs` (the playlist's target duration, at least `target_secs`).
    pub fn new(target_secs: u32, limit_secs: u32, video: bool) -> Self {
        let mut segmenter = Self::with_open_limit(target_secs, video);
        segmenter.limit = Some((i64::from(limit_secs) * 90_000).max(segmenter.target));
        segmenter
    }

    /// Cuts at keyframes once `target_secs` is reached, under a limit decided at the first
    /// cut: `target_secs`, or the keyframe spacing seen until then (the first segment's
    /// length) rounded up to whole seconds when longer, at most [`LONGEST_AUTO_LIMIT`]
    /// (or `target_secs` when that is longer). Audio-only streams get `target_secs`.
    pub fn with_open_limit(target_secs: u32, video: bool) -> Self {
        let target = i64::from(target_secs.max(1)) * 90_000;
        Self {
            target,
            limit: (!video).then_some(target),
            longest_gop: 0,
            video,
            pending: Vec::new(),
            start: None,
            independent: true,
            cut_next: false,
            keyframes: TrackClock::default(),
            video_clock: TrackClock::default(),
            audio_clock: TrackClock::default(),
        }
    }

    /// Adds a sample; returns the segment that ends where this sample begins, if any.
    /// Samples before the first keyframe of a video stream are dropped: a segment must
    /// start with one.
    pub fn push(&mut self, sample: Sample) -> Option<CutSegment> {
        let keyframe = sample.kind == TrackKind::Video && sample.keyframe;
        let starts_segment = !self.video || keyframe;
        if keyframe {
            self.keyframes.tick(sample.dts);
            if self.limit.is_none() {
                let gop = self.keyframes.interval.unwrap_or_default();
                self.longest_gop = self.longest_gop.max(gop);
            }
        }
        match sample.kind {
            TrackKind::Video => self.video_clock.tick(sample.dts),
            TrackKind::Audio => self.audio_clock.tick(sample.dts),
        }
        let Some(start) = self.start else {
            if starts_segment {
                self.start = Some(sample.dts);
                self.independent = true;
                self.pending.push(sample);
            }
            return None;
        };
        // Saturating: a producer's times may jump anywhere in i64.
        let elapsed = sample.dts.saturating_sub(start);
        let next_keyframe_too_late = self.video
            && self.keyframes.interval.is_some_and(|gop| {
                elapsed.saturating_add(gop) > self.current_limit().saturating_add(ROUNDING_SLACK)
            });
        // Before the first cut, keyframes are awaited up to the longest limit possible.
        let longest = self
            .limit
            .unwrap_or_else(|| self.cap())
            .saturating_add(ROUNDING_SLACK);
        let at_start = starts_segment
            && elapsed > 0
            && (elapsed >= self.target || self.cut_next || next_keyframe_too_late);
        // No keyframe came in time: cut at the last frame that keeps the segment within
        // the limit (or at an audio sample when video frames stopped coming).
        let forced = self.video
            && !starts_segment
            && match sample.kind {
                TrackKind::Video => {
                    let interval = self.video_clock.interval.unwrap_or(LONE_VIDEO_DURATION);
                    elapsed.saturating_add(interval) > longest
                }
                TrackKind::Audio => {
                    let interval = self.audio_clock.interval.unwrap_or(LONE_AUDIO_DURATION);
                    let video_overdue = self
                        .video_clock
                        .end(LONE_VIDEO_DURATION)
                        .is_none_or(|due| sample.dts.saturating_sub(due) > VIDEO_GAP);
                    video_overdue && elapsed.saturating_add(interval) > longest
                }
            };
        if !at_start && !forced {
            self.pending.push(sample);
            return None;
        }
        let end = sample.dts;
        self.decide_limit(elapsed);
        self.cut_next = false;
        let samples = std::mem::take(&mut self.pending);
        let independent = std::mem::replace(&mut self.independent, at_start);
        self.start = Some(sample.dts);
        self.pending.push(sample);
        Some(CutSegment {
            samples,
            start,
            end,
            independent,
        })
    }

    /// Ends the segment being built where its last samples end (the publisher stopped:
    /// its last seconds are not lost). The next sample starts afresh, as at the start.
    pub fn flush(&mut self) -> Option<CutSegment> {
        let start = self.start.take()?;
        let samples = std::mem::take(&mut self.pending);
        let ends = [
            self.video_clock.end(LONE_VIDEO_DURATION),
            self.audio_clock.end(LONE_AUDIO_DURATION),
        ];
        let limit = self.limit.unwrap_or_else(|| self.cap());
        let longest = start.saturating_add(limit.saturating_add(ROUNDING_SLACK));
        let end = ends
            .into_iter()
            .flatten()
            .max()
            .unwrap_or(start)
            .clamp(start, longest.max(start));
        self.decide_limit(end.saturating_sub(start));
        let independent = std::mem::replace(&mut self.independent, true);
        self.cut_next = false;
        self.keyframes = TrackClock::default();
        self.video_clock = TrackClock::default();
        self.audio_clock = TrackClock::default();
        (!samples.is_empty()).then_some(CutSegment {
            samples,
            start,
            end,
            independent,
        })
    }

    /// The limit in force: the decided one, or (before the first cut) the configured
    /// duration or the keyframe spacing seen so far, rounded up.
    fn current_limit(&self) -> i64 {
        self.limit
            .unwrap_or_else(|| self.auto_limit(self.longest_gop))
    }

    /// The longest limit the first cut may decide.
    fn cap(&self) -> i64 {
        self.target.max(i64::from(LONGEST_AUTO_LIMIT) * 90_000)
    }

    /// `target`, or `span` rounded up to whole seconds when longer, within the cap. A
    /// tenth of a second over a whole second (timestamp jitter) does not round up: it
    /// still rounds down in `EXTINF`.
    fn auto_limit(&self, span: i64) -> i64 {
        let rounded_up = span.saturating_add(90_000 - ROUND_UP_FROM) / 90_000 * 90_000;
        rounded_up.clamp(self.target, self.cap())
    }

    /// Fixes the limit at the first cut, from the keyframe spacing and the length of the
    /// segment cut (`span`, 90 kHz).
    fn decide_limit(&mut self, span: i64) {
        if self.limit.is_none() {
            self.limit = Some(self.auto_limit(self.longest_gop.max(span)));
        }
    }

    /// The playlist's target duration in seconds: fixed once a segment was cut (or
    /// given), until then what it would be now.
    pub fn limit_secs(&self) -> u32 {
        u32::try_from(self.current_limit() / 90_000).unwrap_or(u32::MAX)
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
        let mut segmenter = Segmenter::new(2, 2, true);
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
        let mut segmenter = Segmenter::new(6, 6, true);
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
        let mut segmenter = Segmenter::new(2, 2, true);
        assert!(segmenter.push(video(i64::MIN, true)).is_none());
        let cut = segmenter.push(video(i64::MAX, true)).unwrap();
        assert_eq!((cut.start, cut.end), (i64::MIN, i64::MAX));
        assert_eq!(cut.duration_secs(), i64::MAX as f64 / 90_000.0);
        assert!(segmenter.push(video(i64::MIN, true)).is_none());
        let cut = CutSegment {
            samples: Vec::new(),
            start: i64::MAX,
            end: i64::MIN,
            independent: true,
        };
        assert_eq!(cut.duration_secs(), 0.0);
    }

    #[test]
    fn audio_only_cuts_on_duration() {
        let mut segmenter = Segmenter::new(1, 1, false);
        let cuts: Vec<_> = (0..200)
            .filter_map(|i| segmenter.push(audio(i * 1_920)))
            .collect();
        assert!(cuts.len() >= 3);
        assert!(
            cuts.iter()
                .all(|c| c.duration_secs() >= 1.0 && c.duration_secs() < 1.1)
        );
    }

    /// Keyframes every `gop` ticks at 25 fps, with audio between, from `from` for
    /// `frames` video frames; the segments cut.
    fn feed(segmenter: &mut Segmenter, from: i64, frames: i64, gop: i64) -> Vec<CutSegment> {
        let mut cuts = Vec::new();
        for i in 0..frames {
            let dts = from + i * 3_600;
            cuts.extend(segmenter.push(video(dts, (i * 3_600) % gop == 0)));
            cuts.extend(segmenter.push(audio(dts + 100)));
        }
        cuts
    }

    fn rounded(cut: &CutSegment) -> u32 {
        format!("{:.3}", cut.duration_secs())
            .parse::<f64>()
            .unwrap()
            .round() as u32
    }

    /// A publisher whose keyframe spacing grows from 2 s to 3.2 s: no segment rounds
    /// above the target duration fixed at the start; segments stay on keyframes while
    /// the spacing fits and are cut between keyframes (not independent) when it does not.
    #[test]
    fn longer_keyframe_spacing_never_exceeds_the_limit() {
        let mut segmenter = Segmenter::new(2, 2, true);
        let mut cuts = feed(&mut segmenter, 0, 250, 180_000);
        assert!(cuts.iter().all(|c| c.independent && rounded(c) == 2));
        let later = feed(&mut segmenter, 250 * 3_600, 400, 288_000);
        assert!(
            later.iter().any(|c| !c.independent),
            "cut between keyframes"
        );
        assert!(later.iter().filter(|c| c.independent).count() >= 4);
        cuts.extend(later);
        for cut in &cuts {
            assert!(rounded(cut) <= 2, "{} s", cut.duration_secs());
            assert_eq!(cut.independent, cut.samples[0].keyframe);
        }
        // Spacing that fits the limit but not a multiple of the configured duration:
        // cut early at a keyframe rather than late.
        let mut segmenter = Segmenter::new(6, 6, true);
        let cuts = feed(&mut segmenter, 0, 500, 360_000);
        assert!(cuts.len() > 3);
        assert!(
            cuts.iter()
                .all(|c| c.independent && (c.duration_secs() - 4.0).abs() < 0.01),
            "{:?}",
            cuts.iter()
                .map(CutSegment::duration_secs)
                .collect::<Vec<_>>()
        );
    }

    /// OBS's defaults: keyframes every 250 frames at 30 fps (8.33 s) under a configured
    /// 6 s (or 2 s) duration: each segment is one GOP starting with its keyframe, under a
    /// target duration of 9 s decided at the first cut.
    #[test]
    fn long_gops_make_one_segment_each_under_a_decided_limit() {
        for configured in [2, 6] {
            let mut segmenter = Segmenter::with_open_limit(configured, true);
            assert_eq!(segmenter.limit_secs(), configured);
            let mut cuts = Vec::new();
            for i in 0..2_000i64 {
                let dts = i * 3_000 + i % 3 * 30; // millisecond jitter
                cuts.extend(segmenter.push(video(dts, i % 250 == 0)));
                cuts.extend(segmenter.push(audio(dts + 100)));
            }
            assert_eq!(cuts.len(), 7, "{configured} s");
            assert_eq!(segmenter.limit_secs(), 9);
            for cut in &cuts {
                assert!(cut.independent && cut.samples[0].keyframe);
                assert!((cut.duration_secs() - 8.333).abs() < 0.01);
                assert!(rounded(cut) <= 9);
            }
        }
    }

    /// Keyframe spacing shorter than the configured duration keeps the configured limit;
    /// spacing beyond the cap is cut between keyframes at the cap.
    #[test]
    fn the_decided_limit_follows_the_first_segment_within_bounds() {
        // 4 s keyframes under 6 s: cut at each (waiting for 8 s would pass 6 s).
        let mut segmenter = Segmenter::with_open_limit(6, true);
        let cuts = feed(&mut segmenter, 0, 500, 360_000);
        assert_eq!(segmenter.limit_secs(), 6);
        assert!(cuts.iter().all(|c| c.independent && rounded(c) == 4));
        // 2 s keyframes under 6 s: 6 s.
        let mut segmenter = Segmenter::with_open_limit(6, true);
        let cuts = feed(&mut segmenter, 0, 500, 180_000);
        assert_eq!(segmenter.limit_secs(), 6);
        assert!(cuts.iter().all(|c| c.independent && rounded(c) == 6));
        // 20 s keyframes: cut at 12 s (the cap), not independent after.
        let mut segmenter = Segmenter::with_open_limit(6, true);
        let cuts = feed(&mut segmenter, 0, 1_000, 1_800_000);
        assert_eq!(segmenter.limit_secs(), LONGEST_AUTO_LIMIT);
        assert!(cuts.iter().all(|c| rounded(c) <= 12));
        assert!(cuts.iter().any(|c| !c.independent));
        // A GOP longer than the first after the limit is decided: cut at the limit.
        let mut segmenter = Segmenter::with_open_limit(6, true);
        let mut cuts = feed(&mut segmenter, 0, 300, 720_000);
        assert_eq!(segmenter.limit_secs(), 8);
        cuts.extend(feed(&mut segmenter, 300 * 3_600, 600, 1_080_000));
        assert!(cuts.iter().all(|c| rounded(c) <= 8));
        assert!(cuts.iter().any(|c| !c.independent));
        // Audio only: the configured duration.
        assert_eq!(Segmenter::with_open_limit(4, false).limit_secs(), 4);
    }

    /// The segment being built when the publisher stops is not lost: it ends where its
    /// last frame ends.
    #[test]
    fn flush_ends_the_segment_being_built() {
        let mut segmenter = Segmenter::new(2, 2, true);
        let cuts = feed(&mut segmenter, 0, 60, 90_000);
        assert_eq!(cuts.len(), 1);
        let tail = segmenter.flush().unwrap();
        // The last audio frame (100 ticks after the last video frame) ends last.
        assert_eq!((tail.start, tail.end), (180_000, 60 * 3_600 + 100));
        assert_eq!(tail.samples.len(), 20);
        assert!(tail.independent);
        assert!(segmenter.flush().is_none());
        assert!(!segmenter.started());
        assert!(segmenter.push(video(0, false)).is_none());
        assert!(!segmenter.started(), "a new start waits for a keyframe");
    }
}
