//! `dvr_status` entries from an archive's index.

use crate::archives::{SharedArchive, space_available};
use strom_ipc::status::DvrArchive;
use strom_media::dvr::SegmentEntry;
use strom_stream::StreamKey;

/// The recording sessions of an index: `(start ms, end ms)` per period, in order.
pub fn periods(entries: &[SegmentEntry]) -> Vec<(i64, i64)> {
    let mut periods: Vec<(u32, i64, i64)> = Vec::new();
    for entry in entries {
        match periods.last_mut() {
            Some((period, _, end)) if *period == entry.period => *end = (*end).max(entry.end_ms()),
            _ => periods.push((entry.period, entry.start_ms, entry.end_ms())),
        }
    }
    periods
        .into_iter()
        .map(|(_, start, end)| (start, end))
        .collect()
}

pub fn archive_status(key: &StreamKey, archive: &SharedArchive, timeline: bool) -> DvrArchive {
    let entries = archive.entries();
    let size: u64 = entries.iter().map(|e| e.bytes).sum();
    let duration_ms: u64 = entries.iter().map(SegmentEntry::duration_ms).sum();
    let duration = duration_ms / 1000;
    let periods = periods(&entries);
    let latest_video = entries.iter().rev().find(|e| !e.vcodec.is_empty());
    let latest_audio = entries.iter().rev().find(|e| !e.acodec.is_empty());
    DvrArchive {
        app: key.app.clone(),
        stream: key.stream.clone(),
        size,
        // The spec's "size divided by duration": bytes per second.
        bandwidth: (size * 1000).checked_div(duration_ms).unwrap_or(0),
        resolution: latest_video
            .filter(|e| e.width > 0)
            .map(|e| format!("{}x{}", e.width, e.height))
            .unwrap_or_default(),
        acodec: latest_audio.map(|e| e.acodec.clone()).unwrap_or_default(),
        vcodec: latest_video.map(|e| e.vcodec.clone()).unwrap_or_default(),
        path: archive.dir().display().to_string(),
        space_available: space_available(archive.dir()),
        duration,
        timeline: timeline.then(|| {
            periods
                .iter()
                .map(|&(start, end)| (start / 1000, ((end - start).max(0) / 1000) as u64))
                .collect()
        }),
        periods: periods.len() as u64,
    }
}
