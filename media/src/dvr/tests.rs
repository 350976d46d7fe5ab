//! The archive format round-trips, and start-up reconciliation repairs what a crash
//! leaves behind.

use super::*;
use crate::frame::Codec;
use crate::sample::{Sample, TrackKind};
use bytes::Bytes;
use std::fs;

fn facts(period: u32, start_ms: i64, start_dts: i64) -> SegmentEntry {
    SegmentEntry {
        seq: 0,
        period,
        start_ms,
        start_dts,
        duration: 2 * 90_000,
        bytes: 0,
        samples: 0,
        width: 640,
        height: 360,
        vcodec: "avc1.64001e".into(),
        acodec: "mp4a.40.2".into(),
        scte35: Vec::new(),
    }
}

fn sample(kind: TrackKind, dts: i64, keyframe: bool, fill: u8, len: usize) -> Sample {
    Sample {
        kind,
        dts,
        pts: dts + if kind == TrackKind::Video { 3000 } else { 0 },
        keyframe,
        data: Bytes::from(vec![fill; len]),
    }
}

fn write_segment(writer: &mut ArchiveWriter, period: u32, start_dts: i64) -> SegmentEntry {
    let configs = vec![(Codec::Aac, Bytes::from_static(&[0x12, 0x10]))];
    let mut segment = writer.begin(&configs).unwrap();
    segment
        .push(&sample(TrackKind::Video, start_dts, true, 1, 100))
        .unwrap();
    segment
        .push(&sample(TrackKind::Audio, start_dts + 10, false, 2, 20))
        .unwrap();
    segment
        .push(&sample(TrackKind::Video, start_dts + 3000, false, 3, 50))
        .unwrap();
    writer
        .commit(
            segment,
            facts(period, 1_700_000_000_000 + start_dts / 90, start_dts),
        )
        .unwrap()
}

#[test]
fn segments_round_trip_through_the_index_and_their_files() {
    let dir = tempfile::tempdir().unwrap();
    let (mut writer, report) = ArchiveWriter::open(dir.path()).unwrap();
    assert!(!report.repaired_anything());
    assert_eq!(writer.next_period(), 1);
    let first = write_segment(&mut writer, 1, 0);
    let second = write_segment(&mut writer, 1, 180_000);
    assert_eq!((first.seq, second.seq), (1, 2));
    assert_eq!(writer.next_period(), 2);
    assert_eq!(
        read_archive(dir.path()).unwrap(),
        vec![first.clone(), second]
    );

    let contents = read_segment(&dir.path().join(segment_file_name(first.seq))).unwrap();
    assert_eq!(contents.configs[0].0, Codec::Aac);
    assert!(contents.tracks().audio.is_some(), "the AAC config parses");
    assert_eq!(contents.samples.len(), 3);
    let bytes = fs::read(dir.path().join(segment_file_name(first.seq))).unwrap();
    for (record, (fill, len)) in contents.samples.iter().zip([(1u8, 100), (2, 20), (3, 50)]) {
        let payload = &bytes[record.offset as usize..][..record.size as usize];
        assert_eq!(payload, vec![fill; len].as_slice());
    }
    assert_eq!(contents.samples[0].pts, 3000);
    assert!(contents.samples[0].keyframe && !contents.samples[2].keyframe);
    assert_eq!(contents.samples[1].kind, TrackKind::Audio);
}

#[test]
fn a_crash_loses_only_the_open_segment_and_a_torn_index_line() {
    let dir = tempfile::tempdir().unwrap();
    let (mut writer, _) = ArchiveWriter::open(dir.path()).unwrap();
    let kept = write_segment(&mut writer, 1, 0);
    // The segment being written when the process died: data, no trailer, no index line.
    let mut open = writer.begin(&[]).unwrap();
    open.push(&sample(TrackKind::Video, 180_000, true, 9, 1000))
        .unwrap();
    std::mem::forget(open);
    drop(writer);
    // And a torn append of the index.
    let index = dir.path().join(INDEX_FILE);
    let mut text = fs::read(&index).unwrap();
    text.extend_from_slice(b"v1 7 1 17000");
    fs::write(&index, &text).unwrap();

    let (mut writer, report) = ArchiveWriter::open(dir.path()).unwrap();
    assert_eq!(report.torn_index_bytes, 12);
    assert_eq!(report.removed_files, 1, "the open segment is removed");
    assert_eq!(writer.entries(), std::slice::from_ref(&kept));
    let names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    // Recording resumes with fresh numbers and the next period.
    assert_eq!(writer.next_period(), 2);
    let next = write_segment(&mut writer, 2, 900_000);
    assert!(next.seq > kept.seq + 1);
    assert_eq!(read_archive(dir.path()).unwrap().len(), 2);
}

#[test]
fn entries_whose_file_is_damaged_or_missing_are_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let (mut writer, _) = ArchiveWriter::open(dir.path()).unwrap();
    let a = write_segment(&mut writer, 1, 0);
    let b = write_segment(&mut writer, 1, 180_000);
    let c = write_segment(&mut writer, 1, 360_000);
    drop(writer);
    fs::remove_file(dir.path().join(segment_file_name(a.seq))).unwrap();
    let path_b = dir.path().join(segment_file_name(b.seq));
    let len = fs::metadata(&path_b).unwrap().len();
    fs::OpenOptions::new()
        .write(true)
        .open(&path_b)
        .unwrap()
        .set_len(len - 5)
        .unwrap();
    let (writer, report) = ArchiveWriter::open(dir.path()).unwrap();
    assert_eq!(report.dropped_entries, 2);
    assert_eq!(writer.entries(), std::slice::from_ref(&c));
    assert_eq!(read_archive(dir.path()).unwrap(), vec![c]);
    assert!(
        read_segment(&path_b).is_err(),
        "a cut segment does not read"
    );
}

#[test]
fn removal_rewrites_the_index_before_deleting_files() {
    let dir = tempfile::tempdir().unwrap();
    let (mut writer, _) = ArchiveWriter::open(dir.path()).unwrap();
    let entries: Vec<_> = (0..4)
        .map(|i| write_segment(&mut writer, 1 + i / 2, i64::from(i) * 180_000))
        .collect();
    let (count, bytes) = writer.remove(|e| e.period == 1).unwrap();
    assert_eq!(count, 2);
    assert_eq!(bytes, entries[0].bytes + entries[1].bytes);
    assert_eq!(read_archive(dir.path()).unwrap(), entries[2..].to_vec());
    assert!(!dir.path().join(segment_file_name(entries[0].seq)).exists());
    // Appends go on in the rewritten index.
    let more = write_segment(&mut writer, 3, 900_000);
    assert_eq!(read_archive(dir.path()).unwrap().last(), Some(&more));
}

#[test]
fn index_lines_survive_only_whole_and_in_order() {
    let entry = facts(3, 1_700_000_000_000, -5);
    let line = entry.to_line();
    assert_eq!(
        SegmentEntry::parse_line(line.trim_end()),
        Some(entry.clone())
    );
    let flipped = line.replacen(" 3 ", " 4 ", 1);
    assert_eq!(SegmentEntry::parse_line(flipped.trim_end()), None);
    let audio_only = SegmentEntry {
        vcodec: String::new(),
        ..entry.clone()
    };
    assert_eq!(
        SegmentEntry::parse_line(audio_only.to_line().trim_end()),
        Some(audio_only)
    );
    // Markers make a v2 line; a line without them stays v1 (what older archives hold).
    assert!(line.starts_with("v1 "), "{line}");
    let marked = SegmentEntry {
        scte35: vec![
            Bytes::from_static(&[0xfc, 0x30, 0x11]),
            Bytes::from_static(b"\xfc\x30 second"),
        ],
        ..entry.clone()
    };
    let marked_line = marked.to_line();
    assert!(marked_line.starts_with("v2 "), "{marked_line}");
    assert!(
        marked_line.contains(" mp4a.40.2 /DAR,/DAgc2Vjb25k "),
        "{marked_line}"
    );
    assert_eq!(
        SegmentEntry::parse_line(marked_line.trim_end()),
        Some(marked.clone())
    );
    // A v1 line written before markers existed reads as a segment without them.
    let old = "v1 9 3 1700000000000 -5 180000 0 0 640 360 avc1.64001e mp4a.40.2";
    let old = format!("{old} {:08x}", checksum::crc32(old.as_bytes()));
    assert_eq!(
        SegmentEntry::parse_line(&old).map(|e| e.scte35),
        Some(Vec::new())
    );
    let both = format!("{line}{}", SegmentEntry { seq: 10, ..marked }.to_line());
    assert_eq!(index::parse_index(both.as_bytes()).0.len(), 2);
    let twice = format!("{line}{line}");
    assert_eq!(index::parse_index(twice.as_bytes()).0.len(), 1);
    assert_eq!(index::parse_index(b"\0\0\0\0").0, Vec::new());
}
