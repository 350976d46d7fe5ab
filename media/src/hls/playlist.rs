//! Rendering HLS playlists (RFC 8216): the master playlist with one variant per stream
//! and live media playlists with program date times and discontinuities.
//!
//! `#EXT-X-INDEPENDENT-SEGMENTS` is written only when it is true of every segment the
//! playlist covers: a segment cut between keyframes (a keyframe interval longer than the
//! target duration, see [`super::segmenter`]) needs the one before it.

use super::datetime::iso8601_utc;
use std::fmt::Write;

/// One variant of a master playlist.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    /// Peak bits per second of a segment.
    pub bandwidth: u64,
    /// Bits per second over the segments held (`AVERAGE-BANDWIDTH`).
    pub average_bandwidth: Option<u64>,
    /// Video frames per second (`FRAME-RATE`), for video variants.
    pub frame_rate: Option<f64>,
    pub resolution: Option<(u32, u32)>,
    /// RFC 6381 codec strings, comma-separated.
    pub codecs: String,
    pub uri: String,
}

/// The master playlist; `independent`: every segment of every variant starts with a
/// keyframe.
pub fn master_playlist(variants: &[Variant], version: u8, independent: bool) -> String {
    let mut out = format!("#EXTM3U\n#EXT-X-VERSION:{version}\n");
    if independent {
        out.push_str("#EXT-X-INDEPENDENT-SEGMENTS\n");
    }
    for variant in variants {
        let bandwidth = variant.bandwidth.max(1);
        let _ = write!(out, "#EXT-X-STREAM-INF:BANDWIDTH={bandwidth}");
        if let Some(average) = variant.average_bandwidth.filter(|a| *a > 0) {
            // The average never exceeds the peak.
            let _ = write!(out, ",AVERAGE-BANDWIDTH={}", average.min(bandwidth));
        }
        if let Some((width, height)) = variant.resolution.filter(|(w, h)| *w > 0 && *h > 0) {
            let _ = write!(out, ",RESOLUTION={width}x{height}");
        }
        if let Some(rate) = variant.frame_rate.filter(|r| r.is_finite() && *r > 0.0) {
            let _ = write!(out, ",FRAME-RATE={rate:.3}");
        }
        if !variant.codecs.is_empty() {
            let _ = write!(out, ",CODECS=\"{}\"", variant.codecs);
        }
        let _ = write!(out, "\n{}\n", variant.uri);
    }
    out
}

/// A segment as a media playlist lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentEntry {
    pub sequence: u64,
    pub duration_secs: f64,
    pub program_date_time_ms: i64,
    /// A discontinuity precedes this segment (new publisher, new timeline).
    pub discontinuity: bool,
    /// URI of the init segment in force (fMP4 only).
    pub map_uri: Option<String>,
    /// Tag lines that go right before the segment's `#EXTINF` (SCTE-35 breaks).
    pub tags: Vec<String>,
    /// The segment starts with a keyframe (or has no video).
    pub independent: bool,
    pub uri: String,
}

/// A live media playlist (`#EXT-X-ENDLIST` is the caller's: it depends on the time).
/// `target_duration_secs` is fixed for the life of the playlist; a longer segment (none
/// should be) raises it rather than break the rule that no segment exceeds it.
pub fn media_playlist(
    entries: &[SegmentEntry],
    target_duration_secs: u32,
    discontinuity_sequence: u64,
    version: u8,
) -> String {
    let longest = entries
        .iter()
        .map(|e| e.duration_secs.round() as u32)
        .max()
        .unwrap_or(0);
    let target = target_duration_secs.max(longest).max(1);
    let media_sequence = entries.first().map(|e| e.sequence).unwrap_or(0);
    let mut out = format!(
        "#EXTM3U\n#EXT-X-VERSION:{version}\n#EXT-X-TARGETDURATION:{target}\n#EXT-X-MEDIA-SEQUENCE:{media_sequence}\n#EXT-X-DISCONTINUITY-SEQUENCE:{discontinuity_sequence}\n"
    );
    if entries.iter().all(|e| e.independent) {
        out.push_str("#EXT-X-INDEPENDENT-SEGMENTS\n");
    }
    let mut current_map: Option<&str> = None;
    for (index, entry) in entries.iter().enumerate() {
        if entry.discontinuity && index > 0 {
            out.push_str("#EXT-X-DISCONTINUITY\n");
        }
        if let Some(map) = entry.map_uri.as_deref()
            && current_map != Some(map)
        {
            let _ = writeln!(out, "#EXT-X-MAP:URI=\"{map}\"");
            current_map = Some(map);
        }
        let _ = writeln!(
            out,
            "#EXT-X-PROGRAM-DATE-TIME:{}",
            iso8601_utc(entry.program_date_time_ms)
        );
        for tag in &entry.tags {
            out.push_str(tag);
            out.push('\n');
        }
        let _ = write!(out, "#EXTINF:{:.3},\n{}\n", entry.duration_secs, entry.uri);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(sequence: u64, discontinuity: bool) -> SegmentEntry {
        SegmentEntry {
            sequence,
            duration_secs: 2.0,
            program_date_time_ms: 1_795_238_400_000 + sequence as i64 * 2000,
            discontinuity,
            map_uri: None,
            tags: Vec::new(),
            independent: true,
            uri: format!("seg_{sequence}.ts"),
        }
    }

    #[test]
    fn media_playlists_carry_sequence_dates_and_discontinuities() {
        let text = media_playlist(&[entry(7, false), entry(8, false), entry(9, true)], 2, 3, 3);
        assert!(text.starts_with("#EXTM3U\n"));
        assert!(text.contains("#EXT-X-MEDIA-SEQUENCE:7\n"));
        assert!(text.contains("#EXT-X-DISCONTINUITY-SEQUENCE:3\n"));
        assert_eq!(text.matches("#EXT-X-DISCONTINUITY\n").count(), 1);
        assert!(text.find("#EXT-X-DISCONTINUITY\n") < text.find("seg_9.ts"));
        assert!(text.find("seg_8.ts") < text.find("#EXT-X-DISCONTINUITY\n"));
        assert_eq!(
            text.matches("#EXT-X-PROGRAM-DATE-TIME:2026-11-21T").count(),
            3
        );
        assert!(!text.contains("ENDLIST"));
        assert!(text.contains("#EXT-X-INDEPENDENT-SEGMENTS\n"));
    }

    #[test]
    fn a_segment_cut_between_keyframes_drops_the_independence_claim() {
        let mut entries = vec![entry(1, false), entry(2, false)];
        entries[1].independent = false;
        let text = media_playlist(&entries, 2, 0, 3);
        assert!(!text.contains("INDEPENDENT"), "{text}");
    }

    #[test]
    fn fmp4_playlists_repeat_the_map_when_it_changes() {
        let mut entries = vec![entry(1, false), entry(2, false), entry(3, true)];
        entries[0].map_uri = Some("init_1.mp4".into());
        entries[1].map_uri = Some("init_1.mp4".into());
        entries[2].map_uri = Some("init_2.mp4".into());
        let text = media_playlist(&entries, 2, 0, 7);
        assert_eq!(text.matches("#EXT-X-MAP").count(), 2);
    }

    #[test]
    fn master_lists_codecs_and_resolution() {
        let text = master_playlist(
            &[Variant {
                bandwidth: 800_000,
                average_bandwidth: Some(650_000),
                frame_rate: Some(25.0),
                resolution: Some((640, 360)),
                codecs: "avc1.42c01e,mp4a.40.2".into(),
                uri: "chunks.m3u8?session=5".into(),
            }],
            3,
            true,
        );
        assert!(text.contains("#EXT-X-INDEPENDENT-SEGMENTS\n"));
        assert!(text.contains("#EXT-X-STREAM-INF:BANDWIDTH=800000,AVERAGE-BANDWIDTH=650000,RESOLUTION=640x360,FRAME-RATE=25.000,CODECS=\"avc1.42c01e,mp4a.40.2\"\nchunks.m3u8?session=5\n"));
    }
}
