//! DVR playlists from an archive's index (sans IO): which segments a window covers,
//! where discontinuities fall, and the master and media playlist texts.
//!
//! Numbering stays stable across reloads of a sliding playlist: the media sequence is
//! the archive's segment number of the first listed segment, and each segment's
//! discontinuity number counts the discontinuities before it, the ones cleanup already
//! removed estimated by the period number of the oldest segment kept (each period
//! begins with one); a codec change inside a period that cleanup removed is the one
//! case where a player sees the numbers move.
//!
//! SCTE-35 breaks: segments that start with markers (the recorder cut them there) get
//! the tags the live playlist gave them, written by the live playlist's own
//! [`CueTracker`] replayed over the archive.

use super::urls::Window;
use std::fmt::Write;
use std::ops::Range;
use strom_media::dvr::SegmentEntry;
use strom_media::hls::cues::{CueStyle, CueTracker};
use strom_media::hls::datetime::iso8601_utc;

/// Decode times of consecutive segments of one period further apart than this (90 kHz)
/// are a jump in the stream's timeline: a discontinuity.
const MAX_DTS_GAP: i64 = 90_000;

/// A segment starts a new discontinuity (and, in fMP4, a new init segment) after
/// `previous`: another period (publish), another codec configuration, a hole in the
/// numbering (segments removed from the middle) or a jump in the decode times.
pub fn boundary(previous: &SegmentEntry, next: &SegmentEntry) -> bool {
    let expected_dts = previous.start_dts.saturating_add(previous.duration as i64);
    previous.period != next.period
        || previous.vcodec != next.vcodec
        || previous.acodec != next.acodec
        || (previous.width, previous.height) != (next.width, next.height)
        || next.seq != previous.seq + 1
        || (next.start_dts - expected_dts).abs() > MAX_DTS_GAP
}

/// What the playlists know of the stream's recording right now.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    /// Wall clock, Unix milliseconds.
    pub now_ms: i64,
    /// Whether the stream may still add segments (published, and recorded).
    pub recording: bool,
    /// `#EXT-X-TARGETDURATION`, seconds.
    pub target_secs: u32,
}

/// The target duration of an archive's playlists, which RFC 8216 §6.2.1 forbids to
/// change between reloads of a live playlist: fixed from the configuration as the
/// longest segment the recorder makes. It cuts at the first keyframe past the configured
/// length, so a segment lasts less than twice that length while keyframes come at least
/// as often, and one keyframe interval when they come less often: twice the configured
/// length, at least [`LONGEST_AUTO_LIMIT`] (12 s: OBS's 250-frame keyframe interval fits
/// down to 24 fps). Only a segment longer still (keyframes further apart than that) raises
/// it, to that segment rounded up.
///
/// [`LONGEST_AUTO_LIMIT`]: strom_media::hls::segmenter::LONGEST_AUTO_LIMIT
pub fn target_duration(archive: &[SegmentEntry], configured_secs: u32) -> u32 {
    let longest = archive.iter().map(|e| e.duration).max().unwrap_or(0);
    let longest_secs = longest.div_ceil(u64::from(strom_media::sample::TIMESCALE));
    u32::try_from(longest_secs)
        .unwrap_or(u32::MAX)
        .max(configured_secs.saturating_mul(2))
        .max(strom_media::hls::segmenter::LONGEST_AUTO_LIMIT)
}

/// The segments of `archive` (indices) that overlap the window, and whether the
/// playlist is final (`#EXT-X-ENDLIST`: nothing will be added to it).
pub fn select(archive: &[SegmentEntry], window: Window, clock: Clock) -> (Range<usize>, bool) {
    let last_end = archive.last().map_or(i64::MIN, SegmentEntry::end_ms);
    let (from_ms, to_ms, closed) = match window {
        Window::Whole => (i64::MIN, i64::MAX, !clock.recording),
        Window::Range { start, duration } => {
            let from = start.saturating_mul(1000);
            match duration {
                None => (from, i64::MAX, !clock.recording),
                Some(secs) => {
                    let to = from.saturating_add(secs.saturating_mul(1000));
                    // The segment open at the end is committed within a target
                    // duration or two of it.
                    let settled = i64::from(clock.target_secs) * 2000;
                    let past = to <= last_end || to.saturating_add(settled) <= clock.now_ms;
                    (from, to, past || !clock.recording)
                }
            }
        }
        Window::Timeshift { shift, depth } => {
            let to = clock.now_ms.saturating_sub(shift.saturating_mul(1000));
            let from = to.saturating_sub(depth.saturating_mul(1000));
            (from, to, !clock.recording && to >= last_end)
        }
    };
    let first = archive.partition_point(|e| e.end_ms() <= from_ms);
    let end = first + archive[first..].partition_point(|e| e.start_ms < to_ms);
    (first..end, closed)
}

/// How a media playlist is rendered.
#[derive(Debug, Clone, Copy)]
pub struct MediaOptions {
    pub fmp4: bool,
    pub session: Option<u128>,
    pub target_secs: u32,
    /// `#EXT-X-ENDLIST`.
    pub closed: bool,
    /// `#EXT-X-START:TIME-OFFSET=0`: play from the first segment (a range the viewer
    /// asked to start at a time), not from the live edge.
    pub start_at_first: bool,
    /// How SCTE-35 breaks are tagged (the stream's live playlist style).
    pub cue_style: CueStyle,
}

fn session_query(session: Option<u128>) -> String {
    session.map(|id| format!("?sid={id}")).unwrap_or_default()
}

/// The number of the segment whose configuration the run of `archive[index]` (the
/// segments since the last boundary) starts with: its fMP4 init segment is named after
/// it, so the `#EXT-X-MAP` URI stays the same while a window slides over the run.
fn run_start(archive: &[SegmentEntry], index: usize) -> u64 {
    let mut first = index;
    while first > 0 && !boundary(&archive[first - 1], &archive[first]) {
        first -= 1;
    }
    archive[first].seq
}

/// The SCTE-35 tags before each segment of `archive[range]`: the live playlist's
/// [`CueTracker`] replayed from the archive's first marker (so a break opened before
/// the window closes in it, and auto-returns where live had them), a fresh one per
/// period as live has one per publisher.
fn cue_tags(archive: &[SegmentEntry], range: Range<usize>, style: CueStyle) -> Vec<Vec<String>> {
    let mut tags = vec![Vec::new(); range.len()];
    let replayed = archive.get(..range.end).unwrap_or_default();
    let Some(first) = replayed.iter().position(|e| !e.scte35.is_empty()) else {
        return tags;
    };
    let mut cues = CueTracker::new(style);
    let mut period = replayed[first].period;
    for (index, entry) in replayed.iter().enumerate().skip(first) {
        if entry.period != period {
            cues = CueTracker::new(style);
            period = entry.period;
        }
        for section in &entry.scte35 {
            cues.marker(section);
        }
        cues.segment_started();
        let segment_tags = cues.tags_for(entry.start_dts, entry.start_ms);
        if let Some(slot) = index
            .checked_sub(range.start)
            .and_then(|at| tags.get_mut(at))
        {
            *slot = segment_tags;
        }
    }
    tags
}

/// The media playlist of `archive[range]`.
pub fn media_playlist(
    archive: &[SegmentEntry],
    range: Range<usize>,
    options: MediaOptions,
) -> String {
    let version = if options.fmp4 { 7 } else { 3 };
    let query = session_query(options.session);
    let first_seq = archive.get(range.start).map_or(0, |e| e.seq);
    let removed_periods = archive.first().map_or(0, |e| e.period.saturating_sub(1));
    // The boundary at the first listed segment counts: that segment carries its number.
    let discontinuities_before = (1..=range.start.min(archive.len().saturating_sub(1)))
        .filter(|&i| boundary(&archive[i - 1], &archive[i]))
        .count();
    let mut out = format!(
        "#EXTM3U\n#EXT-X-VERSION:{version}\n#EXT-X-TARGETDURATION:{}\n#EXT-X-MEDIA-SEQUENCE:{first_seq}\n#EXT-X-DISCONTINUITY-SEQUENCE:{}\n#EXT-X-INDEPENDENT-SEGMENTS\n",
        options.target_secs,
        u64::from(removed_periods) + discontinuities_before as u64,
    );
    if options.start_at_first {
        out.push_str("#EXT-X-START:TIME-OFFSET=0,PRECISE=YES\n");
    }
    let cues = cue_tags(archive, range.clone(), options.cue_style);
    for (index, cue_tags) in range.clone().zip(cues) {
        let entry = &archive[index];
        let starts_run = index == range.start || boundary(&archive[index - 1], entry);
        if starts_run && index != range.start {
            out.push_str("#EXT-X-DISCONTINUITY\n");
        }
        if starts_run && options.fmp4 {
            let init = run_start(archive, index);
            let _ = writeln!(out, "#EXT-X-MAP:URI=\"dvr_init_{init}.mp4{query}\"");
        }
        let secs = entry.duration as f64 / f64::from(strom_media::sample::TIMESCALE);
        let extension = if options.fmp4 { "m4s" } else { "ts" };
        let _ = writeln!(
            out,
            "#EXT-X-PROGRAM-DATE-TIME:{}",
            iso8601_utc(entry.start_ms)
        );
        for tag in cue_tags {
            out.push_str(&tag);
            out.push('\n');
        }
        let _ = write!(
            out,
            "#EXTINF:{secs:.3},\ndvr_{}.{extension}{query}\n",
            entry.seq,
        );
    }
    if options.closed {
        out.push_str("#EXT-X-ENDLIST\n");
    }
    out
}

/// The master playlist of a window: one variant whose facts (peak bandwidth, largest
/// picture, codecs) are those of the segments it covers.
pub fn master_playlist(segments: &[SegmentEntry], fmp4: bool, media_uri: &str) -> String {
    let version = if fmp4 { 7 } else { 3 };
    let peak = segments
        .iter()
        .filter(|e| e.duration > 0)
        .map(|e| e.bytes.saturating_mul(8 * 90_000) / e.duration)
        .max()
        .unwrap_or(0);
    // MPEG-TS packetization adds about a tenth to the payload.
    let bandwidth = if fmp4 { peak } else { peak / 10 * 11 }.max(1);
    let mut out = format!(
        "#EXTM3U\n#EXT-X-VERSION:{version}\n#EXT-X-INDEPENDENT-SEGMENTS\n#EXT-X-STREAM-INF:BANDWIDTH={bandwidth}"
    );
    if let Some(largest) = segments
        .iter()
        .filter(|e| e.width > 0 && e.height > 0)
        .max_by_key(|e| u64::from(e.width) * u64::from(e.height))
    {
        let _ = write!(out, ",RESOLUTION={}x{}", largest.width, largest.height);
    }
    let mut codecs: Vec<&str> = Vec::new();
    for codec in segments
        .iter()
        .map(|e| e.vcodec.as_str())
        .chain(segments.iter().map(|e| e.acodec.as_str()))
    {
        // The index is ours, but a quote would end the attribute: such a string is left out.
        if !codec.is_empty() && !codec.contains('"') && !codecs.contains(&codec) {
            codecs.push(codec);
        }
    }
    if !codecs.is_empty() {
        let _ = write!(out, ",CODECS=\"{}\"", codecs.join(","));
    }
    let _ = write!(out, "\n{media_uri}\n");
    out
}
