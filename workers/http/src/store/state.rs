//! One stream's state behind its lock ([`StreamState`]): the segments held, their
//! init segments ([`InitSegments`]), the playlist-level metadata, the LL-HLS parts and
//! the rendered playlists cached between changes.

use super::segment::{Segment, StreamMeta};
use super::{LL_PLAYLIST_WINDOW, PLAYLIST_WINDOW};
use bytes::Bytes;
use std::collections::{HashMap, VecDeque};
use std::time::Instant;

#[derive(Debug, Default)]
pub(super) struct StreamState {
    pub(super) meta: StreamMeta,
    pub(super) segments: VecDeque<Segment>,
    pub(super) inits: HashMap<u64, InitSegments>,
    /// The next segment follows a break in the timeline.
    pub(super) pending_discontinuity: bool,
    /// Media playlists (TS, fMP4, LL-HLS, LL-HLS delta update) rendered once per
    /// segment (or part) change, with a session placeholder: a chunklist request only
    /// fills in its session id.
    pub(super) rendered: [Option<String>; 4],
    /// Low-Latency HLS parts (none unless the stream is delivered as LL-HLS).
    pub(super) parts: crate::parts::PartLists,
    /// Since when the stream has no producer (`None` while it is packaged).
    pub(super) ended: Option<Instant>,
}

impl StreamState {
    /// Drops the oldest segment, keeping the playlist's discontinuity count right.
    pub(super) fn pop_front(&mut self) -> Option<Segment> {
        let old = self.segments.pop_front()?;
        if old.entry.discontinuity {
            self.meta.discontinuity_sequence = self.meta.discontinuity_sequence.saturating_add(1);
        }
        self.rendered = Default::default();
        Some(old)
    }

    pub(super) fn ram_bytes(&self) -> u64 {
        self.segments
            .iter()
            .map(|s| (s.ts.len() + s.m4s.len()) as u64)
            .sum::<u64>()
            + self.inits.values().map(InitSegments::len).sum::<u64>()
            + self.parts.bytes()
    }

    /// Segments the media playlists list.
    pub(super) fn window(&self) -> usize {
        match self.parts.part_target_secs() {
            Some(_) => LL_PLAYLIST_WINDOW,
            None => PLAYLIST_WINDOW,
        }
    }

    pub(super) fn sync_meta(&mut self) -> StreamMeta {
        self.meta.segments = self.segments.iter().map(|s| s.entry.clone()).collect();
        self.meta.clone()
    }
}

/// The init segments of one timeline and codec configuration.
#[derive(Debug, Clone, Default)]
pub struct InitSegments {
    /// Both tracks (HLS fMP4).
    pub muxed: Bytes,
    /// The video track alone (DASH).
    pub video: Option<Bytes>,
    /// The audio track alone (DASH).
    pub audio: Option<Bytes>,
}

impl InitSegments {
    pub(super) fn len(&self) -> u64 {
        [Some(&self.muxed), self.video.as_ref(), self.audio.as_ref()]
            .into_iter()
            .flatten()
            .map(|b| b.len() as u64)
            .sum()
    }
}
