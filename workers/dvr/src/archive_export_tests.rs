//! What the export selects from an archive: the keyframe at or before the start, the end
//! bound, periods on one growing timeline, tracks that join later, and the errors.

use crate::archive_export::ArchiveExport;
use crate::archives::Archives;
use crate::export::{ExportSource, SelectError};
use bytes::Bytes;
use std::sync::Arc;
use strom_media::dvr::SegmentEntry;
use strom_media::frame::Codec;
use strom_media::sample::{Sample, TrackKind};
use strom_stream::StreamKey;

const AVCC: &[u8] = &[
    0x01, 0x64, 0x00, 0x1f, 0xff, 0xe1, 0x00, 0x04, 0x67, 0x64, 0x00, 0x1f, 0x01, 0x00, 0x04, 0x68,
    0xee, 0x3c, 0x80,
];
const ASC: &[u8] = &[0x12, 0x10];
const T0_MS: i64 = 1_700_000_000_000;

fn sample(kind: TrackKind, dts: i64, keyframe: bool) -> Sample {
    Sample {
        kind,
        dts,
        pts: dts,
        keyframe,
        data: Bytes::from_static(&[0, 0, 0, 1, 0x65]),
    }
}

/// One segment of `seconds` from `dts` (a keyframe each second, audio every 0.5 s),
/// recorded at wall clock `start_ms`.
fn segment(archives: &Archives, period: u32, start_ms: i64, dts: i64, seconds: i64, audio: bool) {
    let archive = archives.open(&StreamKey::new("live", "cam")).unwrap();
    let mut configs = vec![(Codec::H264, Bytes::from_static(AVCC))];
    if audio {
        configs.push((Codec::Aac, Bytes::from_static(ASC)));
    }
    let mut open = archive.begin(&configs).unwrap();
    for tick in 0..seconds * 2 {
        let at = dts + tick * 45_000;
        open.push(&sample(TrackKind::Video, at, tick % 2 == 0))
            .unwrap();
        if audio {
            open.push(&sample(TrackKind::Audio, at, false)).unwrap();
        }
    }
    let facts = SegmentEntry {
        seq: 0,
        period,
        start_ms,
        start_dts: dts,
        duration: (seconds * 90_000) as u64,
        bytes: 0,
        samples: 0,
        width: 0,
        height: 0,
        vcodec: String::new(),
        acodec: String::new(),
        scte35: Vec::new(),
    };
    archive.commit(open, facts).unwrap();
}

fn export(dir: &std::path::Path) -> ArchiveExport {
    ArchiveExport {
        archives: Arc::new(Archives::new(dir.to_path_buf())),
    }
}

#[test]
fn a_range_starts_at_the_keyframe_before_it_and_plays_from_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let source = export(dir.path());
    segment(&source.archives, 1, T0_MS, 0, 4, true);
    segment(&source.archives, 1, T0_MS + 4000, 360_000, 4, true);
    let start = T0_MS / 1000 + 2; // 2.0 s in: a keyframe
    let picked = source
        .select("live", "cam", Some(start), Some(start + 3))
        .unwrap();
    assert_eq!(picked.samples[0].dts, 0, "rebased to the keyframe");
    assert!(picked.samples[0].keyframe);
    let last = picked.samples.last().unwrap().dts;
    assert!(last < 3 * 90_000, "nothing at or after the end: {last}");
    assert_eq!(picked.play_from, None, "the keyframe is the start itself");
    assert!(picked.tracks.audio.is_some() && picked.tracks.video.is_some());
    let late = source
        .select("live", "cam", Some(T0_MS / 1000 + 5), None)
        .unwrap();
    assert_eq!(late.files.len(), 1, "only the second segment");
    assert_eq!(late.samples.len(), 12, "3 s of video and audio from 5 s");
}

#[test]
fn periods_share_one_growing_timeline_even_when_media_ran_ahead_of_the_clock() {
    let dir = tempfile::tempdir().unwrap();
    let source = export(dir.path());
    // Period 1 claims 4 s of media but the next publish began 3.5 s after it started.
    segment(&source.archives, 1, T0_MS, 0, 4, false);
    segment(&source.archives, 2, T0_MS + 3500, 900_000, 2, false);
    let picked = source.select("live", "cam", None, None).unwrap();
    let dts: Vec<i64> = picked.samples.iter().map(|s| s.dts).collect();
    assert!(dts.windows(2).all(|w| w[0] < w[1]), "{dts:?}");
    // A real gap stays a gap.
    segment(&source.archives, 3, T0_MS + 60_000, 0, 2, false);
    let picked = source.select("live", "cam", None, None).unwrap();
    let last = picked.samples.last().unwrap().dts;
    assert!(last >= 60 * 90_000, "{last}");
}

#[test]
fn a_track_that_joins_later_stays_and_a_changed_one_ends_the_export() {
    let dir = tempfile::tempdir().unwrap();
    let source = export(dir.path());
    segment(&source.archives, 1, T0_MS, 0, 2, false);
    segment(&source.archives, 1, T0_MS + 2000, 180_000, 2, true);
    let picked = source.select("live", "cam", None, None).unwrap();
    assert!(picked.tracks.audio.is_some());
    assert_eq!(picked.files.len(), 2);
}

#[test]
fn empty_inverted_and_unknown_ranges_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let source = export(dir.path());
    segment(&source.archives, 1, T0_MS, 0, 2, false);
    let t0 = T0_MS / 1000;
    assert_eq!(
        source.select("live", "cam", Some(t0 + 10), Some(t0)).err(),
        Some(SelectError::Inverted)
    );
    assert_eq!(
        source.select("live", "cam", Some(t0 + 100), None).err(),
        Some(SelectError::Empty)
    );
    assert_eq!(
        source.select("live", "other", None, None).err(),
        Some(SelectError::NotFound)
    );
    assert_eq!(
        source.select("..", "cam", None, None).err(),
        Some(SelectError::NotFound)
    );
}
