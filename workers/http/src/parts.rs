//! Low-Latency HLS partial segments of one stream: the parts of its latest segments and
//! of the segment being built, by media sequence number, held in memory only (a
//! restarted delivery worker serves whole segments until new parts come).
//!
//! A part is one CMAF chunk (a `moof` + `mdat` per track, video then audio) of the
//! segment being built. The whole segment is muxed on its own when it ends (an `styp`,
//! then one fragment per track), so it is not the concatenation of its parts: DASH
//! serves each track's fragment of the whole segment as a byte range of it, which a
//! segment made of per-part fragments would not have.

use bytes::Bytes;
use std::collections::VecDeque;

/// Segments whose parts stay fetchable (the playlist lists those of the last 3 target
/// durations; a player that read an older playlist may still ask for the others).
const SEGMENTS_WITH_PARTS: u64 = 6;
/// Parts held for one segment at most: a segment cannot last longer than 60 s (the
/// largest segment duration) plus slack; with a 0.1 s part target that is 600 parts.
const MAX_PARTS_PER_SEGMENT: usize = 1024;

#[derive(Debug, Clone)]
pub struct Part {
    pub bytes: Bytes,
    pub duration_secs: f64,
    pub independent: bool,
}

/// The parts of one LL-HLS stream.
#[derive(Debug, Default)]
pub struct PartLists {
    /// `PART-TARGET` in seconds; `None`: the stream is not delivered as LL-HLS.
    part_target_secs: Option<f64>,
    /// Parts per media sequence number, oldest first (the last may be the segment
    /// being built).
    lists: VecDeque<(u64, Vec<Part>)>,
    /// Program date-time (Unix ms) of the first part of each segment in `lists`.
    dates: VecDeque<i64>,
}

impl PartLists {
    pub fn part_target_secs(&self) -> Option<f64> {
        self.part_target_secs
    }

    /// Turns LL-HLS on (`Some(part target)`) or off (dropping every part).
    pub fn set_part_target(&mut self, secs: Option<f64>) {
        self.part_target_secs = secs;
        if secs.is_none() {
            self.lists.clear();
            self.dates.clear();
        }
    }

    /// Adds the next part of segment `msn`; its index in the segment, `None` when the
    /// stream is not LL-HLS or the segment has too many parts already.
    pub fn add(&mut self, msn: u64, part: Part, date_ms: i64) -> Option<usize> {
        self.part_target_secs?;
        if self.lists.back().is_none_or(|(last, _)| *last != msn) {
            // A segment that never ended (its publisher's timeline broke) goes.
            while self.lists.back().is_some_and(|(last, _)| *last >= msn) {
                self.lists.pop_back();
                self.dates.pop_back();
            }
            self.lists.push_back((msn, Vec::new()));
            self.dates.push_back(date_ms);
        }
        let (_, parts) = self.lists.back_mut()?;
        if parts.len() >= MAX_PARTS_PER_SEGMENT {
            return None;
        }
        parts.push(part);
        Some(parts.len() - 1)
    }

    /// Drops the parts of segment `msn` and later (the segment being built was
    /// abandoned: it will not be listed whole).
    pub fn discard_from(&mut self, msn: u64) {
        while self.lists.back().is_some_and(|(last, _)| *last >= msn) {
            self.lists.pop_back();
            self.dates.pop_back();
        }
    }

    /// Keeps the parts of the segments before `next_msn` that are recent enough.
    pub fn prune(&mut self, next_msn: u64) {
        let oldest = next_msn.saturating_sub(SEGMENTS_WITH_PARTS);
        while self.lists.front().is_some_and(|(msn, _)| *msn < oldest) {
            self.lists.pop_front();
            self.dates.pop_front();
        }
    }

    pub fn of(&self, msn: u64) -> &[Part] {
        self.lists
            .iter()
            .find(|(m, _)| *m == msn)
            .map_or(&[], |(_, parts)| parts.as_slice())
    }

    /// Program date-time of segment `msn`'s first part.
    pub fn date_of(&self, msn: u64) -> Option<i64> {
        let index = self.lists.iter().position(|(m, _)| *m == msn)?;
        self.dates.get(index).copied()
    }

    pub fn get(&self, msn: u64, index: usize) -> Option<Bytes> {
        self.of(msn).get(index).map(|p| p.bytes.clone())
    }

    /// The part that a request for part `index` of segment `msn` is answered with, while
    /// segment `building` is being built: that part itself, except for the part just past
    /// the last one of a segment that ended, which is the first part of the next
    /// segment. `EXT-X-PRELOAD-HINT` names the next part before the server knows where
    /// the next keyframe falls: when one ends the segment, the hinted part is the next
    /// segment's first (players such as Shaka and gohlslib take a hinted part that never
    /// comes as a fatal error; the bytes carry their own `tfdt`, so they land in place).
    pub fn answering(&self, msn: u64, index: usize, building: u64) -> (u64, usize) {
        let parts = self.of(msn).len();
        let past_an_ended_segment = msn < building && index > 0 && index == parts;
        if past_an_ended_segment {
            (msn + 1, 0)
        } else {
            (msn, index)
        }
    }

    /// The latest part: its segment's sequence number and its index there.
    pub fn last(&self) -> Option<(u64, usize)> {
        let (msn, parts) = self.lists.back()?;
        Some((*msn, parts.len().checked_sub(1)?))
    }

    pub fn bytes(&self) -> u64 {
        self.lists
            .iter()
            .flat_map(|(_, parts)| parts)
            .map(|p| p.bytes.len() as u64)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(n: u8) -> Part {
        Part {
            bytes: Bytes::from(vec![n]),
            duration_secs: 0.5,
            independent: n == 0,
        }
    }

    #[test]
    fn the_part_hinted_past_an_ended_segment_is_the_next_segments_first() {
        let mut lists = PartLists::default();
        lists.set_part_target(Some(0.5));
        for n in 0..3 {
            lists.add(7, part(n), 0);
        }
        // Segment 7 is still being built: part 3 is its next part.
        assert_eq!(lists.answering(7, 3, 7), (7, 3));
        // A keyframe ended it after 3 parts: the hinted part 3 is segment 8's part 0.
        assert_eq!(lists.answering(7, 3, 8), (8, 0));
        assert_eq!(lists.answering(7, 1, 8), (7, 1));
        assert_eq!(lists.answering(7, 4, 8), (7, 4), "not a hinted part: 404");
        assert_eq!(lists.answering(5, 1, 8), (5, 1), "parts pruned: 404");
    }

    #[test]
    fn parts_are_numbered_per_segment_and_pruned() {
        let mut lists = PartLists::default();
        assert_eq!(lists.add(3, part(0), 0), None, "not LL-HLS");
        lists.set_part_target(Some(0.5));
        assert_eq!(lists.add(3, part(0), 10), Some(0));
        assert_eq!(lists.add(3, part(1), 10), Some(1));
        assert_eq!(lists.add(4, part(0), 20), Some(0));
        assert_eq!(lists.last(), Some((4, 0)));
        assert_eq!(lists.get(3, 1).as_deref(), Some(&[1u8][..]));
        assert_eq!(lists.date_of(4), Some(20));
        lists.discard_from(4);
        assert_eq!(lists.last(), Some((3, 1)));
        for msn in 4..20 {
            lists.add(msn, part(0), 0);
        }
        lists.prune(20);
        assert!(lists.of(3).is_empty() && lists.of(13).is_empty());
        assert_eq!(lists.of(14).len(), 1);
        lists.set_part_target(None);
        assert_eq!(lists.last(), None);
    }
}
