//! Where a transcoder's input sits in time. Both directions anchor on the first input pts,
//! count the samples they have taken in since, and compare each new input's pts with where
//! that count says it should be. Outputs are then timed by the count alone, so their pts
//! advance by exactly one frame each, free of the input's rounding (FLV's milliseconds)
//! and jitter.
//!
//! What the comparison says:
//! - more than 100 ms off either way (a publisher restart, a long gap): re-anchor on the
//!   new pts, the caller drops its half-filled frame;
//! - later by at least the caller's threshold (a lost frame, a slow clock): the caller
//!   fills the gap (silence, Opus concealment) so the count catches up;
//! - earlier by at least the threshold (a duplicated frame, a fast clock): the caller drops
//!   that many samples of the new input;
//! - otherwise in step.

/// pts are in 90 kHz ticks.
pub(crate) const TICKS_PER_SECOND: i64 = 90_000;
/// Beyond 100 ms off, the input is on a new time line rather than late or early.
pub(crate) const REANCHOR_TICKS: i64 = TICKS_PER_SECOND / 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Placement {
    /// The first input, or one more than 100 ms off: the count restarts at its pts.
    Anchored,
    /// Where the count says, give or take the threshold.
    InStep,
    /// Later than the count says by this many samples: fill them before this input.
    Gap(u32),
    /// Earlier than the count says by this many samples: drop that many of this input.
    Overlap(u32),
}

#[derive(Debug)]
pub(crate) struct Timeline {
    /// None until the first input.
    anchor: Option<i64>,
    /// The rate the count is in.
    rate: u32,
    /// Samples per channel taken in since the anchor.
    samples: u64,
}

impl Timeline {
    pub(crate) fn new(rate: u32) -> Self {
        Self {
            anchor: None,
            rate,
            samples: 0,
        }
    }

    pub(crate) fn is_anchored(&self) -> bool {
        self.anchor.is_some()
    }

    /// Restarts the count at `pts`, counting in `rate` from now on.
    pub(crate) fn reanchor(&mut self, pts: i64, rate: u32) {
        self.anchor = Some(pts);
        self.rate = rate;
        self.samples = 0;
    }

    /// Compares an input's pts with the count; re-anchors on the first input and on jumps.
    /// `threshold` (samples) keeps the input's own rounding from causing fills and drops.
    pub(crate) fn place(&mut self, pts: i64, threshold: u32) -> Placement {
        let placement = self.classify(pts, threshold);
        if placement == Placement::Anchored {
            self.reanchor(pts, self.rate);
        }
        placement
    }

    /// What [`place`](Self::place) would say, changing nothing.
    pub(crate) fn classify(&self, pts: i64, threshold: u32) -> Placement {
        let Some(anchor) = self.anchor else {
            return Placement::Anchored;
        };
        let expected = ticks_after(anchor, i128::from(self.samples), self.rate);
        let off = i128::from(pts) - i128::from(expected);
        if off.abs() > i128::from(REANCHOR_TICKS) {
            return Placement::Anchored;
        }
        // |off| <= 9000 ticks, so this is at most 0.1 s of samples and fits a u32.
        let samples = (off.unsigned_abs() * u128::from(self.rate) / 90_000) as u32;
        match off {
            _ if samples < threshold.max(1) => Placement::InStep,
            off if off > 0 => Placement::Gap(samples),
            _ => Placement::Overlap(samples),
        }
    }

    /// Counts samples taken in (decoded input and fills, not dropped samples).
    pub(crate) fn advance(&mut self, samples: usize) {
        self.samples = self.samples.saturating_add(samples as u64);
    }
}

/// The pts `samples` (at `rate`) after `anchor`; `samples` may be negative. Saturates
/// rather than overflows on absurd pts from the network.
pub(crate) fn ticks_after(anchor: i64, samples: i128, rate: u32) -> i64 {
    let ticks = (samples * i128::from(TICKS_PER_SECOND)).div_euclid(i128::from(rate.max(1)));
    (i128::from(anchor) + ticks).clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_inputs_against_the_count() {
        let mut timeline = Timeline::new(48_000);
        assert!(!timeline.is_anchored());
        assert_eq!(timeline.classify(1_000, 120), Placement::Anchored);
        assert!(!timeline.is_anchored());
        assert_eq!(timeline.place(1_000, 120), Placement::Anchored);
        timeline.advance(960);
        // 960 samples = 1800 ticks: in step, also a tick or two off.
        assert_eq!(timeline.place(2_800, 120), Placement::InStep);
        assert_eq!(timeline.place(2_801, 120), Placement::InStep);
        // One 20 ms packet lost: 960 samples to fill.
        assert_eq!(timeline.place(4_600, 120), Placement::Gap(960));
        // A repeated packet: 960 samples to drop.
        assert_eq!(timeline.place(1_000, 120), Placement::Overlap(960));
        // Past 100 ms either way: a new time line.
        assert_eq!(timeline.place(2_800 + 9_001, 120), Placement::Anchored);
        assert_eq!(timeline.classify(11_801 + 100, 120), Placement::InStep);
        timeline.advance(960);
        assert_eq!(timeline.place(11_801 - 9_000, 120), Placement::Anchored);
    }

    #[test]
    fn absurd_pts_saturate_instead_of_overflowing() {
        let mut timeline = Timeline::new(44_100);
        assert_eq!(timeline.place(i64::MAX, 512), Placement::Anchored);
        timeline.advance(usize::MAX);
        assert_eq!(timeline.place(i64::MIN, 512), Placement::Anchored);
        assert_eq!(ticks_after(i64::MAX, 1 << 100, 48_000), i64::MAX);
        assert_eq!(ticks_after(0, -1024, 48_000), -1920);
        assert_eq!(ticks_after(0, 1024, 44_100), 2089);
    }
}
