//! SCTE-35 ad breaks in HLS media playlists: which tags go before which segment.
//!
//! A `splice_insert` marker arrives just before the keyframe it splices at; the
//! packager cuts a segment there ([`super::segmenter::Segmenter::cut_at_next_start`]), so
//! the break starts exactly at a segment boundary. The segment that starts at the
//! splice gets the out tag; segments inside the break get the continuation tag (`cue`
//! style); the segment that starts at the in marker, or the first one that starts
//! after the break duration ran out (auto-return), gets the in tag. Styles:
//!
//! - [`CueStyle::DateRange`]: `#EXT-X-DATERANGE` with `SCTE35-OUT` / `SCTE35-IN` (the
//!   section in hex), `PLANNED-DURATION`, one `ID` for the pair (RFC 8216 §4.3.2.7.1;
//!   the playlists always carry `#EXT-X-PROGRAM-DATE-TIME`).
//! - [`CueStyle::Cue`]: `#EXT-X-CUE-OUT:<duration>`, `#EXT-X-CUE-OUT-CONT:<elapsed>/<duration>`,
//!   `#EXT-X-CUE-IN`.
//! - [`CueStyle::SplicePoint`]: `#EXT-X-SPLICEPOINT-SCTE35:<base64 section>` at the out
//!   and at the in.
//!
//! A `time_signal` whose segmentation descriptor starts or ends an ad break is a break
//! edge just like a `splice_insert` ([`crate::ad_break`]); other commands and
//! segmentation types (programme, chapter, splice_null) pass through TS but make no tags.

use super::datetime::iso8601_utc;
use crate::ad_break::{self, BreakSignal};
use crate::scte35::{self, SpliceInfo};
use base64::Engine;

/// 90 kHz ticks per second.
const TICKS: f64 = 90_000.0;
/// Splice markers one segment start takes at most: a source that sends more (a flood of
/// sections between two keyframes) cannot grow a playlist entry without bound.
pub const MAX_MARKERS_PER_SEGMENT: usize = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CueStyle {
    #[default]
    DateRange,
    Cue,
    SplicePoint,
}

#[derive(Debug, Clone)]
struct Marker {
    signal: BreakSignal,
    section: Vec<u8>,
}

#[derive(Debug, Clone)]
struct OpenBreak {
    /// The out that opened it (its id, form and planned duration).
    signal: BreakSignal,
    start_dts: i64,
    start_ms: i64,
}

/// The breaks of one stream's timeline.
#[derive(Debug, Default)]
pub struct CueTracker {
    style: CueStyle,
    /// Markers seen, for the next segment to start.
    awaiting: Vec<Marker>,
    /// Markers the segment being built started with.
    current: Vec<Marker>,
    open: Option<OpenBreak>,
}

impl CueTracker {
    pub fn new(style: CueStyle) -> Self {
        Self {
            style,
            ..Self::default()
        }
    }

    /// Takes a marker's section; `true` when it splices (the segmenter should cut at the
    /// next place a segment may start). Sections that do not parse are ignored.
    pub fn marker(&mut self, section: &[u8]) -> bool {
        let Some(signal) = SpliceInfo::parse(section)
            .ok()
            .and_then(|info| ad_break::break_signal(&info))
        else {
            return false;
        };
        if self.awaiting.len() < MAX_MARKERS_PER_SEGMENT {
            self.awaiting.push(Marker {
                signal,
                section: section.to_vec(),
            });
        }
        true
    }

    /// A new segment started: the markers seen so far belong to its start.
    pub fn segment_started(&mut self) {
        self.current = std::mem::take(&mut self.awaiting);
    }

    /// Whether markers wait for the segment being built or the next one (the TS segment
    /// then carries them).
    pub fn sections_of_current(&self) -> Vec<&[u8]> {
        self.current.iter().map(|m| m.section.as_slice()).collect()
    }

    /// The tag lines of a finished segment that started at `start_dts` (90 kHz) at
    /// wall-clock `start_ms`.
    pub fn tags_for(&mut self, start_dts: i64, start_ms: i64) -> Vec<String> {
        let mut tags = Vec::new();
        let markers = std::mem::take(&mut self.current);
        let mut closed = false;
        for marker in &markers {
            if marker.signal.out {
                // A new out while a break is open closes the old one first.
                if self.open.is_some() {
                    self.close(start_dts, start_ms, None, &mut tags);
                }
                let duration = marker.signal.duration;
                self.open = Some(OpenBreak {
                    signal: marker.signal,
                    start_dts,
                    start_ms,
                });
                tags.push(self.out_tag(marker, start_ms, duration));
                closed = false;
            } else if self.open.is_some() {
                self.close(start_dts, start_ms, Some(marker), &mut tags);
                closed = true;
            }
        }
        if markers.is_empty() && !closed {
            self.continue_or_return(start_dts, start_ms, &mut tags);
        }
        tags
    }

    fn out_tag(&self, marker: &Marker, start_ms: i64, duration: Option<u64>) -> String {
        let event_id = marker.signal.event_id;
        let seconds = duration.map(|d| d as f64 / TICKS);
        match self.style {
            CueStyle::DateRange => {
                let planned = seconds
                    .map(|s| format!(",PLANNED-DURATION={s:.3}"))
                    .unwrap_or_default();
                format!(
                    "#EXT-X-DATERANGE:ID=\"{}\",START-DATE=\"{}\"{planned},SCTE35-OUT={}",
                    range_id(event_id, start_ms),
                    iso8601_utc(start_ms),
                    scte35::to_hex(&marker.section)
                )
            }
            CueStyle::Cue => match seconds {
                Some(s) => format!("#EXT-X-CUE-OUT:{s:.3}"),
                None => "#EXT-X-CUE-OUT".to_owned(),
            },
            CueStyle::SplicePoint => splicepoint(&marker.section),
        }
    }

    /// Inside an open break: the continuation tag, or the return once its duration ran
    /// out (auto-return).
    fn continue_or_return(&mut self, start_dts: i64, start_ms: i64, tags: &mut Vec<String>) {
        let Some(open) = &self.open else {
            return;
        };
        // Saturating: a producer's times may jump anywhere in i64.
        let elapsed = start_dts.saturating_sub(open.start_dts).max(0) as u64;
        if open.signal.duration.is_some_and(|d| elapsed >= d) {
            self.close(start_dts, start_ms, None, tags);
            return;
        }
        if self.style == CueStyle::Cue {
            let elapsed = elapsed as f64 / TICKS;
            tags.push(match open.signal.duration {
                Some(d) => format!("#EXT-X-CUE-OUT-CONT:{elapsed:.3}/{:.3}", d as f64 / TICKS),
                None => format!("#EXT-X-CUE-OUT-CONT:{elapsed:.3}"),
            });
        }
    }

    /// Ends the open break at a segment starting at `start_dts`/`start_ms`, with the in
    /// marker that came or one built for an auto-return.
    fn close(
        &mut self,
        start_dts: i64,
        start_ms: i64,
        marker: Option<&Marker>,
        tags: &mut Vec<String>,
    ) {
        let Some(open) = self.open.take() else {
            return;
        };
        let section = match marker {
            Some(marker) => marker.section.clone(),
            None => ad_break::closing_section(&open.signal, u64::try_from(start_dts).ok()),
        };
        tags.push(match self.style {
            CueStyle::DateRange => format!(
                "#EXT-X-DATERANGE:ID=\"{}\",START-DATE=\"{}\",END-DATE=\"{}\",DURATION={:.3},SCTE35-IN={}",
                range_id(open.signal.event_id, open.start_ms),
                iso8601_utc(open.start_ms),
                iso8601_utc(start_ms),
                start_dts.saturating_sub(open.start_dts).max(0) as f64 / TICKS,
                scte35::to_hex(&section)
            ),
            CueStyle::Cue => "#EXT-X-CUE-IN".to_owned(),
            CueStyle::SplicePoint => splicepoint(&section),
        });
    }
}

/// The DATERANGE `ID` of a break: its event id and start, unique in a playlist even
/// when a new publisher counts event ids from 1 again.
fn range_id(event_id: u32, start_ms: i64) -> String {
    format!("splice-{event_id}-{start_ms}")
}

fn splicepoint(section: &[u8]) -> String {
    format!(
        "#EXT-X-SPLICEPOINT-SCTE35:{}",
        base64::engine::general_purpose::STANDARD.encode(section)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scte35::BreakDuration;

    fn out(id: u32, seconds: Option<u64>) -> Vec<u8> {
        let duration = seconds.map(|s| BreakDuration {
            auto_return: true,
            duration: s * 90_000,
        });
        SpliceInfo::insert(id, true, Some(0), duration).encode()
    }

    /// Segments of 2 s from `first` on: (start dts, start ms).
    fn segment(n: i64) -> (i64, i64) {
        (n * 180_000, 1_795_000_000_000 + n * 2000)
    }

    #[test]
    fn dateranges_open_and_close_with_one_id() {
        let mut cues = CueTracker::new(CueStyle::DateRange);
        assert!(cues.marker(&out(5, Some(10))));
        cues.segment_started();
        let (dts, ms) = segment(1);
        let tags = cues.tags_for(dts, ms);
        assert_eq!(tags.len(), 1);
        assert!(
            tags[0].starts_with("#EXT-X-DATERANGE:ID=\"splice-5-1795000002000\",START-DATE=\"")
        );
        assert!(tags[0].contains(",PLANNED-DURATION=10.000,SCTE35-OUT=0xFC"));
        let hex = tags[0].rsplit('=').next().unwrap();
        let section = scte35::from_hex(hex).unwrap();
        assert!(
            SpliceInfo::parse(&section)
                .unwrap()
                .splice_insert()
                .unwrap()
                .out_of_network
        );
        // Inside the break nothing; 10 s later the auto-return.
        for n in 2..6 {
            cues.segment_started();
            let (dts, ms) = segment(n);
            assert!(cues.tags_for(dts, ms).is_empty(), "segment {n}");
        }
        cues.segment_started();
        let (dts, ms) = segment(6);
        let tags = cues.tags_for(dts, ms);
        assert_eq!(tags.len(), 1, "{tags:?}");
        assert!(tags[0].contains("ID=\"splice-5-1795000002000\""));
        assert!(tags[0].contains(",DURATION=10.000,SCTE35-IN=0xFC"));
        cues.segment_started();
        assert!(cues.tags_for(segment(7).0, segment(7).1).is_empty());
    }

    #[test]
    fn time_signal_breaks_make_the_same_dateranges() {
        use crate::ad_break::time_signal;
        let mut cues = CueTracker::new(CueStyle::DateRange);
        let opening = time_signal(77, 0x34, Some(0), Some(30 * 90_000)).encode();
        assert!(cues.marker(&opening));
        cues.segment_started();
        let tags = cues.tags_for(segment(1).0, segment(1).1);
        assert_eq!(tags.len(), 1, "{tags:?}");
        assert!(tags[0].contains("ID=\"splice-77-1795000002000\""));
        assert!(tags[0].contains(&format!(
            ",PLANNED-DURATION=30.000,SCTE35-OUT={}",
            scte35::to_hex(&opening)
        )));
        cues.segment_started();
        assert!(cues.tags_for(segment(2).0, segment(2).1).is_empty());
        // The end signal closes it early, carried as it came.
        let closing = time_signal(77, 0x35, Some(0), None).encode();
        assert!(cues.marker(&closing));
        cues.segment_started();
        let tags = cues.tags_for(segment(3).0, segment(3).1);
        assert_eq!(tags.len(), 1, "{tags:?}");
        assert!(tags[0].contains(",DURATION=4.000,"));
        assert!(tags[0].ends_with(&format!("SCTE35-IN={}", scte35::to_hex(&closing))));
        // A programme start is no break: no cut, no tag.
        assert!(!cues.marker(&time_signal(78, 0x10, Some(0), None).encode()));
    }

    #[test]
    fn cue_tags_count_the_break_and_an_in_marker_ends_it() {
        let mut cues = CueTracker::new(CueStyle::Cue);
        cues.marker(&out(1, Some(30)));
        cues.segment_started();
        assert_eq!(
            cues.tags_for(segment(0).0, segment(0).1),
            ["#EXT-X-CUE-OUT:30.000"]
        );
        cues.segment_started();
        assert_eq!(
            cues.tags_for(segment(1).0, segment(1).1),
            ["#EXT-X-CUE-OUT-CONT:2.000/30.000"]
        );
        cues.segment_started();
        assert_eq!(
            cues.tags_for(segment(2).0, segment(2).1),
            ["#EXT-X-CUE-OUT-CONT:4.000/30.000"]
        );
        assert!(cues.marker(&SpliceInfo::insert(1, false, Some(0), None).encode()));
        cues.segment_started();
        assert_eq!(cues.tags_for(segment(3).0, segment(3).1), ["#EXT-X-CUE-IN"]);
        cues.segment_started();
        assert!(cues.tags_for(segment(4).0, segment(4).1).is_empty());
        // Not a marker, or not a splice: no cut, no tags.
        assert!(!cues.marker(b"garbage"));
        let null = SpliceInfo {
            pts_adjustment: 0,
            tier: 0xfff,
            command: crate::scte35::SpliceCommand::Null,
            descriptors: Vec::new(),
        };
        assert!(!cues.marker(&null.encode()));
    }

    /// A break opened at one end of the time range and continued or closed at the other
    /// (times jumping, found by the fuzz target `muxing`) is counted without overflow.
    #[test]
    fn breaks_across_the_whole_time_range_do_not_overflow() {
        for style in [CueStyle::Cue, CueStyle::DateRange] {
            let mut cues = CueTracker::new(style);
            cues.marker(&out(1, None));
            cues.segment_started();
            assert_eq!(cues.tags_for(i64::MIN, 0).len(), 1);
            cues.segment_started();
            let tags = cues.tags_for(0, 2000);
            if style == CueStyle::Cue {
                assert_eq!(tags.len(), 1, "{tags:?}");
            }
            cues.marker(&SpliceInfo::insert(1, false, Some(0), None).encode());
            cues.segment_started();
            assert_eq!(cues.tags_for(i64::MAX, 4000).len(), 1);
        }
        // An auto-return reached by a jump across the range.
        let mut cues = CueTracker::new(CueStyle::Cue);
        cues.marker(&out(2, Some(10)));
        cues.segment_started();
        cues.tags_for(i64::MIN, 0);
        cues.segment_started();
        assert_eq!(cues.tags_for(i64::MAX, 2000), ["#EXT-X-CUE-IN"]);
    }

    #[test]
    fn a_flood_of_markers_is_capped_per_segment() {
        let mut cues = CueTracker::new(CueStyle::SplicePoint);
        for id in 0..100 {
            cues.marker(&out(id, None));
        }
        cues.segment_started();
        assert_eq!(cues.sections_of_current().len(), MAX_MARKERS_PER_SEGMENT);
    }

    #[test]
    fn splicepoints_carry_the_sections_in_base64() {
        let mut cues = CueTracker::new(CueStyle::SplicePoint);
        let section = out(2, None);
        cues.marker(&section);
        cues.segment_started();
        assert_eq!(cues.sections_of_current(), [section.as_slice()]);
        let tags = cues.tags_for(segment(0).0, segment(0).1);
        let encoded = tags[0].strip_prefix("#EXT-X-SPLICEPOINT-SCTE35:").unwrap();
        assert_eq!(
            base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .unwrap(),
            section
        );
    }
}
