//! The Low-Latency HLS side of a packaged stream: its parts ([`crate::parts`]), its
//! LL-HLS media playlist (full or delta update), where the playlist stands for blocking
//! reloads ([`LlPosition`]) and the version that changes with every segment or part,
//! which those reloads wait on.

use super::LL_PLAYLIST_WINDOW;
use super::playlist::{SESSION_PLACEHOLDER, SESSION_QUERY, listed_entries};
use super::state::StreamState;
use super::stream::HlsStream;
use crate::parts::Part;
use bytes::Bytes;
use std::sync::atomic::Ordering;
use strom_media::hls::low_latency::{LowLatency, PartEntry, ll_media_playlist};
use strom_worker_runtime::sync::locked;

/// Where a stream's LL-HLS playlist stands, for blocking playlist reloads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LlPosition {
    /// Sequence number of the last complete segment.
    pub last_segment: Option<u64>,
    /// The segment being built (its parts follow the last complete one).
    pub building: u64,
    /// The latest part: its segment and its index there.
    pub last_part: Option<(u64, usize)>,
    pub target_duration: u32,
    pub part_target_secs: f64,
    /// The playlist has ended (`#EXT-X-ENDLIST`): nothing more will come.
    pub closed: bool,
}

/// Cache slots of the LL-HLS playlists in `StreamState::rendered`.
const FULL: usize = 2;
const DELTA: usize = 3;

impl HlsStream {
    /// Delivers the stream as LL-HLS with parts of `secs` (`None`: plain HLS).
    pub fn set_part_target(&self, secs: Option<f64>) {
        let mut state = locked(&self.state);
        if state.parts.part_target_secs() == secs {
            return;
        }
        state.parts.set_part_target(secs);
        state.rendered = Default::default();
        self.ram.store(state.ram_bytes(), Ordering::Relaxed);
        drop(state);
        self.bump();
    }

    pub fn part_target_secs(&self) -> Option<f64> {
        locked(&self.state).parts.part_target_secs()
    }

    /// Adds the next part of the segment being built, whose media starts at `date_ms`
    /// (the date its segment will be listed with, when it is the segment's first part);
    /// its sequence number and index.
    pub fn add_part(
        &self,
        bytes: Bytes,
        duration_secs: f64,
        independent: bool,
        date_ms: i64,
    ) -> Option<(u64, usize)> {
        let mut state = locked(&self.state);
        let msn = state.meta.next_sequence;
        let part = Part {
            bytes,
            duration_secs,
            independent,
        };
        let index = state.parts.add(msn, part, date_ms)?;
        state.rendered[FULL] = None;
        state.rendered[DELTA] = None;
        self.ram.store(state.ram_bytes(), Ordering::Relaxed);
        drop(state);
        self.bump();
        Some((msn, index))
    }

    /// Drops the parts of the segment being built (its timeline broke before it ended).
    pub fn discard_pending_parts(&self) {
        let mut state = locked(&self.state);
        let next = state.meta.next_sequence;
        state.parts.discard_from(next);
        state.rendered[FULL] = None;
        state.rendered[DELTA] = None;
        self.ram.store(state.ram_bytes(), Ordering::Relaxed);
    }

    /// Whether parts of the segment being built may be listed: the segments before it
    /// use its init segment (`init_id`) and no discontinuity comes before it (the
    /// playlist shows both only with a whole segment).
    pub fn parts_may_follow(&self, init_id: u64) -> bool {
        let state = locked(&self.state);
        !state.pending_discontinuity
            && state
                .segments
                .back()
                .is_some_and(|s| s.entry.init_id == init_id)
    }

    /// Part `index` of segment `msn`, or the part a preload hint past the end of an ended
    /// segment stands for ([`PartLists::answering`]).
    ///
    /// [`PartLists::answering`]: crate::parts::PartLists::answering
    pub fn part(&self, msn: u64, index: usize) -> Option<Bytes> {
        let state = locked(&self.state);
        let (msn, index) = state.parts.answering(msn, index, state.meta.next_sequence);
        state.parts.get(msn, index)
    }

    /// The part a request for part `index` of segment `msn` waits for and gets.
    pub fn answering_part(&self, msn: u64, index: usize) -> (u64, usize) {
        let state = locked(&self.state);
        state.parts.answering(msn, index, state.meta.next_sequence)
    }

    /// Where the LL-HLS playlist stands; `None` for a stream that is not LL-HLS.
    pub fn ll_position(&self) -> Option<LlPosition> {
        let state = locked(&self.state);
        let part_target_secs = state.parts.part_target_secs()?;
        Some(LlPosition {
            last_segment: state.segments.back().map(|s| s.entry.sequence),
            building: state.meta.next_sequence,
            last_part: state.parts.last(),
            target_duration: state.meta.target_duration.max(1),
            part_target_secs,
            closed: self.closed(&state),
        })
    }

    /// A receiver that sees every new segment or part.
    pub fn watch_version(&self) -> tokio::sync::watch::Receiver<u64> {
        tokio::sync::watch::Sender::subscribe(&self.version)
    }

    fn bump(&self) {
        self.version.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// The LL-HLS media playlist (fMP4), whole or as a delta update (`skip`).
    pub fn media_ll(&self, session: Option<u128>, skip: bool) -> String {
        let mut state = locked(&self.state);
        let slot = if skip { DELTA } else { FULL };
        let template = match &state.rendered[slot] {
            Some(template) => template,
            None => {
                let rendered = render_ll(&state, skip);
                state.rendered[slot].insert(rendered)
            }
        };
        let mut text = match session {
            Some(session) => template.replace(SESSION_PLACEHOLDER, &session.to_string()),
            None => template.replace(SESSION_QUERY, ""),
        };
        if self.closed(&state) {
            // Nothing more comes: no part to hint at.
            text = text
                .lines()
                .filter(|l| !l.starts_with("#EXT-X-PRELOAD-HINT"))
                .flat_map(|l| [l, "\n"])
                .collect();
            text.push_str("#EXT-X-ENDLIST\n");
        }
        text
    }
}

fn part_entries(state: &StreamState, msn: u64) -> Vec<PartEntry> {
    state
        .parts
        .of(msn)
        .iter()
        .enumerate()
        .map(|(index, part)| PartEntry {
            duration_secs: part.duration_secs,
            independent: part.independent,
            uri: format!("part_{msn}_{index}.m4s{SESSION_QUERY}"),
        })
        .collect()
}

fn render_ll(state: &StreamState, skip: bool) -> String {
    let (entries, discontinuity_sequence) = listed_entries(state, true, LL_PLAYLIST_WINDOW);
    let segment_parts: Vec<Vec<PartEntry>> = entries
        .iter()
        .map(|e| part_entries(state, e.sequence))
        .collect();
    let building = state.meta.next_sequence;
    let pending = part_entries(state, building);
    let low_latency = LowLatency {
        part_target_secs: state.parts.part_target_secs().unwrap_or(1.0),
        segment_parts: &segment_parts,
        pending: &pending,
        pending_date_ms: state.parts.date_of(building),
        preload_hint: Some(format!(
            "part_{building}_{}.m4s{SESSION_QUERY}",
            pending.len()
        )),
        skip,
    };
    ll_media_playlist(
        &entries,
        state.meta.target_duration,
        discontinuity_sequence,
        &low_latency,
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::super::{Limits, SegmentFacts, Store};
    use super::*;
    use std::time::Duration;

    fn segment(hls: &HlsStream) -> u64 {
        hls.add_segment(
            2.0,
            0,
            1,
            Bytes::from_static(b"ts"),
            Bytes::from_static(b"m4s"),
            SegmentFacts {
                independent: true,
                ..SegmentFacts::default()
            },
            Vec::new(),
        )
    }

    #[test]
    fn parts_follow_their_segment_and_wake_blocked_requests() {
        let dir = tempfile::tempdir().unwrap();
        let limits = Limits {
            max_ram_bytes: u64::MAX,
            grace: Duration::from_secs(3600),
        };
        let store = Store::new(dir.path(), limits);
        let hls = store.get_or_create("live", "ll").unwrap();
        assert!(hls.ll_position().is_none());
        hls.set_part_target(Some(0.5));
        hls.add_init(1, Bytes::from_static(b"init"));
        assert!(!hls.parts_may_follow(1), "no segment listed before");
        assert_eq!(segment(&hls), 0);
        assert!(hls.parts_may_follow(1));
        assert!(!hls.parts_may_follow(2), "a new init segment comes whole");

        let mut version = hls.watch_version();
        assert_eq!(
            hls.add_part(Bytes::from_static(b"p0"), 0.5, true, 1_795_238_400_000),
            Some((1, 0))
        );
        assert!(version.has_changed().unwrap());
        version.borrow_and_update();
        let text = hls.media_ll(Some(7), false);
        assert!(
            text.contains(
                "#EXT-X-PART:DURATION=0.50000,URI=\"part_1_0.m4s?sid=7\",INDEPENDENT=YES\n"
            )
        );
        assert!(text.ends_with("#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"part_1_1.m4s?sid=7\"\n"));
        let position = hls.ll_position().unwrap();
        assert_eq!(
            (position.last_segment, position.building, position.last_part),
            (Some(0), 1, Some((1, 0)))
        );

        assert_eq!(segment(&hls), 1);
        assert!(version.has_changed().unwrap());
        let text = hls.media_ll(None, false);
        assert!(text.find("part_1_0.m4s") < text.find("seg_1.m4s"), "{text}");
        assert!(text.contains("URI=\"part_2_0.m4s\""));
        assert_eq!(hls.part(1, 0).as_deref(), Some(&b"p0"[..]));

        // A timeline that broke mid-segment: its parts go.
        assert_eq!(
            hls.add_part(Bytes::from_static(b"p1"), 0.5, true, 1_795_238_400_500),
            Some((2, 0))
        );
        hls.discard_pending_parts();
        assert!(hls.part(2, 0).is_none());
        hls.set_part_target(None);
        assert!(hls.ll_position().is_none() && hls.part(1, 0).is_none());
    }
}
