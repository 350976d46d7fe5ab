//! Rendering a stream's state as HLS media playlists: the listed window and its
//! discontinuity sequence, the URIs with the session placeholder that a request fills
//! in, and the bandwidths a master playlist announces.

use super::PLAYLIST_WINDOW;
use super::state::StreamState;
use strom_media::hls::playlist::{SegmentEntry, media_playlist};

/// Stands for the viewer's session id in a cached media playlist.
pub(super) const SESSION_PLACEHOLDER: &str = "{sid}";
/// The query that carries it; removed for a viewer without a session.
pub(super) const SESSION_QUERY: &str = "?sid={sid}";

pub(super) fn chunklist(fmp4: bool) -> &'static str {
    if fmp4 {
        "chunks_fmp4.m3u8"
    } else {
        "chunks.m3u8"
    }
}

pub(super) fn session_query(session: Option<u128>) -> String {
    session.map(|id| format!("?sid={id}")).unwrap_or_default()
}

pub(super) fn render_media(state: &StreamState, fmp4: bool) -> String {
    let (entries, discontinuity_sequence) = listed_entries(state, fmp4, PLAYLIST_WINDOW);
    media_playlist(
        &entries,
        state.meta.target_duration,
        discontinuity_sequence,
        if fmp4 { 7 } else { 3 },
    )
}

/// The last `window` segments as a media playlist lists them, and the playlist's
/// discontinuity sequence.
pub(super) fn listed_entries(
    state: &StreamState,
    fmp4: bool,
    window: usize,
) -> (Vec<SegmentEntry>, u64) {
    let start = state.segments.len().saturating_sub(window);
    // Timeline breaks before the first listed segment (its own included: a playlist
    // never opens with a discontinuity tag) are counted, not listed.
    let discontinuity_sequence = state.meta.discontinuity_sequence.saturating_add(
        state
            .segments
            .iter()
            .take(start + 1)
            .filter(|s| s.entry.discontinuity)
            .count() as u64,
    );
    let entries: Vec<SegmentEntry> = state
        .segments
        .iter()
        .skip(start)
        .map(|s| SegmentEntry {
            sequence: s.entry.sequence,
            duration_secs: s.entry.duration_secs,
            program_date_time_ms: s.entry.program_date_time_ms,
            discontinuity: s.entry.discontinuity,
            map_uri: fmp4.then(|| format!("init_{}.mp4{SESSION_QUERY}", s.entry.init_id)),
            tags: s.entry.tags.clone(),
            independent: s.entry.independent,
            uri: format!(
                "seg_{}.{}{SESSION_QUERY}",
                s.entry.sequence,
                if fmp4 { "m4s" } else { "ts" }
            ),
        })
        .collect();
    (entries, discontinuity_sequence)
}

/// Peak and average bits per second of the segments held, in one format.
pub(super) fn bandwidths(state: &StreamState, fmp4: bool) -> (u64, u64) {
    let (mut peak, mut bits, mut seconds) = (0u64, 0f64, 0f64);
    for segment in &state.segments {
        let bytes = if fmp4 { &segment.m4s } else { &segment.ts };
        let duration = segment.entry.duration_secs.max(0.1);
        let segment_bits = bytes.len() as f64 * 8.0;
        peak = peak.max((segment_bits / duration) as u64);
        bits += segment_bits;
        seconds += duration;
    }
    let average = if seconds > 0.0 {
        (bits / seconds) as u64
    } else {
        0
    };
    (peak, average)
}
