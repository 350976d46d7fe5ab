//! The wall-clock dates of a timeline's segments and parts (`#EXT-X-PROGRAM-DATE-TIME`,
//! the DASH period anchor): one anchor taken from the server's clock when the timeline's
//! first segment or part is dated, then the media timestamps from there.
//!
//! Dating each segment by its arrival instead makes successive dates differ from the
//! `#EXTINF` durations by the arrival jitter, and a segment's date changes between the
//! playlist that lists it in parts (dated when its first part came) and the one that
//! lists it whole (dated when it ended). Players that place segments by their dates
//! (Shaka Player) then move the media by a few milliseconds at every segment and reset
//! their decoder, dropping the parts that follow until the next keyframe.

/// How far the media-derived date may drift from the arrival-derived one before the
/// clock is anchored again (a publisher whose clock runs off, a long stall of its
/// connection): far beyond jitter, short of what would confuse a viewer.
const MAX_DRIFT_MS: i64 = 5_000;

/// A timeline's clock: the media time (90 kHz) at a wall-clock instant.
#[derive(Debug, Default, Clone, Copy)]
pub struct MediaClock {
    anchor: Option<(i64, i64)>,
}

impl MediaClock {
    /// The date (Unix milliseconds) of the media at `dts` (90 kHz), given `arrival_ms`, the
    /// date the server's clock suggests for it (now minus the media's duration).
    pub fn date_of(&mut self, dts: i64, arrival_ms: i64) -> i64 {
        if let Some((anchor_ms, anchor_dts)) = self.anchor {
            let date = anchor_ms.saturating_add(dts.saturating_sub(anchor_dts) / 90);
            if date.abs_diff(arrival_ms) <= MAX_DRIFT_MS as u64 {
                return date;
            }
            tracing::debug!(
                drift_ms = date.saturating_sub(arrival_ms),
                "media clock anchored again"
            );
        }
        self.anchor = Some((arrival_ms, dts));
        arrival_ms
    }
}

/// The server's clock, Unix milliseconds.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_follow_the_media_time_not_the_arrival_jitter() {
        let mut clock = MediaClock::default();
        assert_eq!(clock.date_of(900_000, 1_000_000), 1_000_000);
        // Two seconds of media later, arriving 8 ms late, then 11 ms early.
        assert_eq!(clock.date_of(1_080_000, 1_002_008), 1_002_000);
        assert_eq!(clock.date_of(1_260_000, 1_003_989), 1_004_000);
        // A part inside that segment: its date is the media's, whenever it came.
        assert_eq!(clock.date_of(1_305_000, 1_004_700), 1_004_500);
    }

    #[test]
    fn a_drift_beyond_the_limit_anchors_the_clock_again() {
        let mut clock = MediaClock::default();
        clock.date_of(0, 1_000_000);
        // The publisher stalled 7 s: the media arrives that much later than its time.
        assert_eq!(clock.date_of(180_000, 1_009_000), 1_009_000);
        assert_eq!(clock.date_of(360_000, 1_011_050), 1_011_000);
    }
}
