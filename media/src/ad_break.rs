//! What a SCTE-35 section means for an ad break, whichever command carries it: a
//! `splice_insert` (out of network or back) or a `time_signal` whose segmentation
//! descriptor names the start or end of an ad break (SCTE 35 §10.3.3.1, Table 23), the
//! form most ad-decision systems now send. HLS playlists, DASH events and `emsg` boxes
//! are all driven by this one reading, so both forms are carried alike.
//!
//! The segmentation types read as breaks are the ones about advertising: Break,
//! Provider and Distributor Advertisement, Provider and Distributor Placement
//! Opportunity, Provider and Distributor Ad Block (each a start/end pair). Programme,
//! chapter, credit, overlay and promo signals are not ad breaks: they pass through
//! MPEG-TS but open no break.

use crate::scte35::{Descriptor, SegmentationDescriptor, SpliceCommand, SpliceInfo};

/// Segmentation types that start an ad break; each one's end is the next type id.
const BREAK_STARTS: [u8; 7] = [0x22, 0x30, 0x32, 0x34, 0x36, 0x44, 0x46];
/// `segmentation_type_id` Provider Placement Opportunity Start: what strom itself
/// signals when asked for a `time_signal` out (its end is 0x35).
pub const PLACEMENT_OPPORTUNITY_START: u8 = 0x34;

/// An ad break's edge as a section signals it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakSignal {
    pub event_id: u32,
    /// Leaving the programme (true) or returning to it.
    pub out: bool,
    /// The planned length of the break (90 kHz), when the out gives one.
    pub duration: Option<u64>,
    /// The segmentation type of a `time_signal`'s descriptor; `None` for a
    /// `splice_insert`.
    pub segmentation_type: Option<u8>,
}

/// The break edge `info` signals, if any: a splice_insert that is not cancelled, or a
/// time_signal with an ad-break segmentation descriptor that is not cancelled (the
/// first such descriptor when it has several).
pub fn break_signal(info: &SpliceInfo) -> Option<BreakSignal> {
    match &info.command {
        SpliceCommand::Insert(insert) if !insert.cancel => Some(BreakSignal {
            event_id: insert.event_id,
            out: insert.out_of_network,
            duration: insert
                .break_duration
                .filter(|_| insert.out_of_network)
                .map(|d| d.duration),
            segmentation_type: None,
        }),
        SpliceCommand::TimeSignal(_) => info.descriptors.iter().find_map(|d| match d {
            Descriptor::Segmentation(s) if !s.cancel => segmentation_edge(s),
            _ => None,
        }),
        _ => None,
    }
}

fn segmentation_edge(s: &SegmentationDescriptor) -> Option<BreakSignal> {
    let out = if BREAK_STARTS.contains(&s.type_id) {
        true
    } else if s
        .type_id
        .checked_sub(1)
        .is_some_and(|start| BREAK_STARTS.contains(&start))
    {
        false
    } else {
        return None;
    };
    Some(BreakSignal {
        event_id: s.event_id,
        out,
        duration: s.duration.filter(|_| out),
        segmentation_type: Some(s.type_id),
    })
}

/// A `time_signal` at `splice_time` (90 kHz; `None`: now) with one segmentation
/// descriptor of `type_id` for `event_id`, with a planned `duration` (90 kHz) when given.
pub fn time_signal(
    event_id: u32,
    type_id: u8,
    splice_time: Option<u64>,
    duration: Option<u64>,
) -> SpliceInfo {
    SpliceInfo {
        pts_adjustment: 0,
        tier: 0xfff,
        command: SpliceCommand::TimeSignal(splice_time),
        descriptors: vec![Descriptor::Segmentation(SegmentationDescriptor {
            event_id,
            cancel: false,
            duration,
            // No UPID.
            upid_type: 0,
            upid: Vec::new(),
            type_id,
            segment_num: 0,
            segments_expected: 0,
        })],
    }
}

/// The section that ends the break `out` opened, at `splice_time`: a time_signal with
/// the matching end type for a time_signal break, a splice_insert in otherwise.
pub fn closing_section(out: &BreakSignal, splice_time: Option<u64>) -> Vec<u8> {
    match out.segmentation_type {
        Some(start) => time_signal(out.event_id, start.wrapping_add(1), splice_time, None),
        None => SpliceInfo::insert(out.event_id, false, splice_time, None),
    }
    .encode()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scte35::BreakDuration;

    #[test]
    fn time_signal_breaks_read_like_splice_inserts() {
        let out =
            SpliceInfo::parse(&time_signal(9, 0x34, Some(1000), Some(900_000)).encode()).unwrap();
        assert_eq!(
            break_signal(&out),
            Some(BreakSignal {
                event_id: 9,
                out: true,
                duration: Some(900_000),
                segmentation_type: Some(0x34),
            })
        );
        let back = SpliceInfo::parse(&time_signal(9, 0x35, Some(2000), None).encode()).unwrap();
        assert_eq!(
            break_signal(&back).map(|s| (s.out, s.event_id)),
            Some((false, 9))
        );
        let insert = SpliceInfo::insert(
            4,
            true,
            None,
            Some(BreakDuration {
                auto_return: true,
                duration: 90_000,
            }),
        );
        assert_eq!(
            break_signal(&insert).map(|s| (s.out, s.duration)),
            Some((true, Some(90_000)))
        );
    }

    #[test]
    fn programme_signals_and_cancels_are_not_breaks() {
        for type_id in [0x10, 0x11, 0x20, 0x38, 0x3c, 0x50] {
            let info = time_signal(1, type_id, None, None);
            assert_eq!(break_signal(&info), None, "type {type_id:#x}");
        }
        let mut cancelled = time_signal(1, 0x30, None, None);
        if let Descriptor::Segmentation(s) = &mut cancelled.descriptors[0] {
            s.cancel = true;
        }
        assert_eq!(break_signal(&cancelled), None);
        let bare = SpliceInfo {
            descriptors: Vec::new(),
            ..time_signal(1, 0x30, None, None)
        };
        assert_eq!(break_signal(&bare), None);
    }

    #[test]
    fn a_break_closes_in_the_form_it_opened() {
        let out = break_signal(&time_signal(3, 0x30, None, Some(90))).unwrap();
        let close = SpliceInfo::parse(&closing_section(&out, Some(5))).unwrap();
        assert_eq!(close.command, SpliceCommand::TimeSignal(Some(5)));
        assert_eq!(
            break_signal(&close).map(|s| (s.out, s.segmentation_type)),
            Some((false, Some(0x31)))
        );
        let insert_out = break_signal(&SpliceInfo::insert(3, true, None, None)).unwrap();
        let close = SpliceInfo::parse(&closing_section(&insert_out, None)).unwrap();
        assert!(close.splice_insert().is_some_and(|i| !i.out_of_network));
    }
}
