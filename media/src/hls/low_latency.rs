//! Rendering Low-Latency HLS media playlists (draft-pantos-hls-rfc8216bis): the
//! segments of [`super::playlist::media_playlist`] plus `#EXT-X-SERVER-CONTROL`,
//! `#EXT-X-PART-INF`, the `#EXT-X-PART`s of the latest segments and of the segment being
//! built, an `#EXT-X-PRELOAD-HINT` for the next part, and delta updates (`#EXT-X-SKIP`).
//!
//! The numbers the issue fixes: `PART-HOLD-BACK` is 3 part targets (the draft's
//! minimum), `CAN-SKIP-UNTIL` 6 target durations (likewise), and parts are listed for
//! the segments that start within 3 target durations of the playlist's end, pending
//! parts included (the draft drops parts further than that).

use super::datetime::iso8601_utc;
use super::playlist::SegmentEntry;
use std::fmt::Write;

/// `EXT-X-VERSION` of LL-HLS playlists: 9 for `EXT-X-SKIP`.
pub const LL_HLS_VERSION: u8 = 9;

/// One partial segment as the playlist lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct PartEntry {
    pub duration_secs: f64,
    /// The part starts with a keyframe (or has no video).
    pub independent: bool,
    pub uri: String,
}

/// What an LL-HLS playlist adds to the segments.
#[derive(Debug, Clone, PartialEq)]
pub struct LowLatency<'a> {
    /// `PART-TARGET`, seconds.
    pub part_target_secs: f64,
    /// The parts of each segment in `entries`, same order (empty: no parts held).
    pub segment_parts: &'a [Vec<PartEntry>],
    /// Parts of the segment being built (after the last complete one).
    pub pending: &'a [PartEntry],
    /// Program date-time of the segment being built (its first part), Unix ms.
    pub pending_date_ms: Option<i64>,
    /// URI of the next part (`EXT-X-PRELOAD-HINT`), `None` once the playlist ends.
    pub preload_hint: Option<String>,
    /// The client asked for a delta update (`_HLS_skip=YES`).
    pub skip: bool,
}

/// How many leading segments a delta update leaves out: those followed by at least
/// `can_skip_until` seconds of segments (the skip boundary).
pub fn skippable(entries: &[SegmentEntry], can_skip_until: f64) -> usize {
    let mut after: f64 = entries.iter().map(|e| e.duration_secs).sum();
    let mut count = 0;
    for entry in entries {
        after -= entry.duration_secs;
        if after < can_skip_until {
            break;
        }
        count += 1;
    }
    count
}

/// A live LL-HLS media playlist (`#EXT-X-ENDLIST` is the caller's).
pub fn ll_media_playlist(
    entries: &[SegmentEntry],
    target_duration_secs: u32,
    discontinuity_sequence: u64,
    low_latency: &LowLatency<'_>,
) -> String {
    let longest = entries
        .iter()
        .map(|e| e.duration_secs.round() as u32)
        .max()
        .unwrap_or(0);
    let target = target_duration_secs.max(longest).max(1);
    let can_skip_until = f64::from(target) * 6.0;
    let part_target = low_latency.part_target_secs;
    let media_sequence = entries.first().map(|e| e.sequence).unwrap_or(0);
    let mut out = format!(
        "#EXTM3U\n#EXT-X-VERSION:{LL_HLS_VERSION}\n#EXT-X-TARGETDURATION:{target}\n#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK={:.3},CAN-SKIP-UNTIL={can_skip_until:.1}\n#EXT-X-PART-INF:PART-TARGET={part_target:.3}\n#EXT-X-MEDIA-SEQUENCE:{media_sequence}\n#EXT-X-DISCONTINUITY-SEQUENCE:{discontinuity_sequence}\n",
        part_target * 3.0
    );
    if entries.iter().all(|e| e.independent) {
        out.push_str("#EXT-X-INDEPENDENT-SEGMENTS\n");
    }
    let skipped = if low_latency.skip {
        skippable(entries, can_skip_until)
    } else {
        0
    };
    if skipped > 0 {
        let _ = writeln!(out, "#EXT-X-SKIP:SKIPPED-SEGMENTS={skipped}");
    }
    // Parts are listed for the segments that start within 3 target durations of the
    // playlist's end, the parts of the segment being built included: the draft removes
    // parts further than that (a segment's parts go together).
    let mut parts_from = entries.len();
    let mut tail: f64 = low_latency.pending.iter().map(|p| p.duration_secs).sum();
    while let Some(previous) = parts_from.checked_sub(1) {
        let with = tail + entries[previous].duration_secs;
        // A millisecond of slack: durations are sums of 90 kHz ticks.
        if with > f64::from(target) * 3.0 + 0.001 {
            break;
        }
        tail = with;
        parts_from = previous;
    }
    let mut current_map: Option<&str> = None;
    for (index, entry) in entries.iter().enumerate().skip(skipped) {
        if entry.discontinuity && index > skipped {
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
        if index >= parts_from
            && let Some(parts) = low_latency.segment_parts.get(index)
        {
            write_parts(&mut out, parts);
        }
        let _ = write!(out, "#EXTINF:{:.3},\n{}\n", entry.duration_secs, entry.uri);
    }
    if !low_latency.pending.is_empty()
        && let Some(date) = low_latency.pending_date_ms
    {
        let _ = writeln!(out, "#EXT-X-PROGRAM-DATE-TIME:{}", iso8601_utc(date));
    }
    write_parts(&mut out, low_latency.pending);
    if let Some(hint) = &low_latency.preload_hint {
        let _ = writeln!(out, "#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"{hint}\"");
    }
    out
}

fn write_parts(out: &mut String, parts: &[PartEntry]) {
    for part in parts {
        let _ = write!(
            out,
            "#EXT-X-PART:DURATION={:.5},URI=\"{}\"",
            part.duration_secs, part.uri
        );
        if part.independent {
            out.push_str(",INDEPENDENT=YES");
        }
        out.push('\n');
    }
}

/// An `#EXT-X-RENDITION-REPORT` line for another rendition of an ABR group.
pub fn rendition_report(uri: &str, last_msn: u64, last_part: u64) -> String {
    format!("#EXT-X-RENDITION-REPORT:URI=\"{uri}\",LAST-MSN={last_msn},LAST-PART={last_part}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(sequence: u64) -> SegmentEntry {
        SegmentEntry {
            sequence,
            duration_secs: 2.0,
            program_date_time_ms: 1_795_238_400_000 + sequence as i64 * 2000,
            discontinuity: false,
            map_uri: Some("init_1.mp4".into()),
            tags: Vec::new(),
            independent: true,
            uri: format!("seg_{sequence}.m4s"),
        }
    }

    fn parts(sequence: u64, count: usize) -> Vec<PartEntry> {
        (0..count)
            .map(|i| PartEntry {
                duration_secs: 0.5,
                independent: i == 0,
                uri: format!("part_{sequence}_{i}.m4s"),
            })
            .collect()
    }

    #[test]
    fn lists_server_control_parts_and_the_preload_hint() {
        let entries: Vec<_> = (0..10).map(entry).collect();
        let segment_parts: Vec<_> = (0..10).map(|s| parts(s, 4)).collect();
        let pending = parts(10, 2);
        let low_latency = LowLatency {
            part_target_secs: 0.5,
            segment_parts: &segment_parts,
            pending: &pending,
            pending_date_ms: Some(1_795_238_420_000),
            preload_hint: Some("part_10_2.m4s".into()),
            skip: false,
        };
        let text = ll_media_playlist(&entries, 2, 0, &low_latency);
        assert!(text.contains("#EXT-X-VERSION:9\n"));
        assert!(text.contains(
            "#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=1.500,CAN-SKIP-UNTIL=12.0\n"
        ));
        assert!(text.contains("#EXT-X-PART-INF:PART-TARGET=0.500\n"));
        // Parts within 6 s (3 target durations) of the end: the pending second and the
        // last 2 segments; segment 7 starts 7 s from the end.
        assert!(!text.contains("part_7_"), "{text}");
        assert!(
            text.contains("#EXT-X-PART:DURATION=0.50000,URI=\"part_8_0.m4s\",INDEPENDENT=YES\n")
        );
        assert!(text.contains("#EXT-X-PART:DURATION=0.50000,URI=\"part_10_1.m4s\"\n"));
        assert!(text.ends_with("#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"part_10_2.m4s\"\n"));
        assert!(text.find("part_9_3.m4s") < text.find("seg_9.m4s"));
        assert!(!text.contains("EXT-X-SKIP"));
    }

    /// No pending part: segments whose start lies within 3 target durations of the end
    /// are listed with their parts, the others (the fourth from last) without.
    #[test]
    fn parts_stop_three_target_durations_from_the_end() {
        let listed = |duration_secs: f64| {
            let entries: Vec<_> = (0..6)
                .map(|s| SegmentEntry {
                    duration_secs,
                    ..entry(s)
                })
                .collect();
            let segment_parts: Vec<_> = (0..6).map(|s| parts(s, 4)).collect();
            let low_latency = LowLatency {
                part_target_secs: 0.5,
                segment_parts: &segment_parts,
                pending: &[],
                pending_date_ms: None,
                preload_hint: None,
                skip: false,
            };
            let text = ll_media_playlist(&entries, 2, 0, &low_latency);
            (0..6)
                .filter(|s| text.contains(&format!("part_{s}_0.m4s")))
                .collect::<Vec<_>>()
        };
        assert_eq!(listed(2.0), vec![3, 4, 5]);
        assert_eq!(listed(1.98), vec![3, 4, 5]);
        assert_eq!(listed(2.033), vec![4, 5]);
    }

    #[test]
    fn delta_updates_skip_segments_before_the_skip_boundary() {
        let entries: Vec<_> = (0..10).map(entry).collect();
        let low_latency = LowLatency {
            part_target_secs: 0.5,
            segment_parts: &[],
            pending: &[],
            pending_date_ms: None,
            preload_hint: None,
            skip: true,
        };
        // 10 segments of 2 s, boundary 12 s: the first 4 are followed by 12 s or more.
        assert_eq!(skippable(&entries, 12.0), 4);
        let text = ll_media_playlist(&entries, 2, 0, &low_latency);
        assert!(text.contains("#EXT-X-MEDIA-SEQUENCE:0\n"));
        assert!(text.contains("#EXT-X-SKIP:SKIPPED-SEGMENTS=4\n"));
        assert!(!text.contains("seg_3.m4s") && text.contains("seg_4.m4s"));
        assert_eq!(text.matches("#EXT-X-MAP").count(), 1);
        assert_eq!(skippable(&entries[..6], 12.0), 0);
    }
}
