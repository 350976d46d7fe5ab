//! Progressive MP4 plans decoded back with `mp4-atom` (box order, tables pointing at the
//! right bytes, `stco`/`co64`, range reads), and a real H.264 + AAC recording from
//! ffmpeg exported from two source files and checked with ffprobe/ffmpeg.

use mp4_atom::{Decode, FourCC, Ftyp, Moov, StszSamples, Trak};

use super::*;
use crate::sample::{Sample, TrackKind, Tracks};
use crate::test_flv::{TempDir, make_h264_aac_flv, read_flv, run_ffmpeg_tool};
use crate::test_vectors::{ASC, aac_track, h264_track};

fn h264_aac() -> Tracks {
    Tracks {
        video: Some(h264_track()),
        audio: Some(aac_track(ASC[0].0)),
    }
}

/// Builds the virtual file in memory from `sources`.
fn assemble(plan: &Mp4Plan, sources: &[Vec<u8>], start: u64, end_inclusive: u64) -> Vec<u8> {
    let mut out = Vec::new();
    for read in plan.reads(start, end_inclusive) {
        match read {
            Read::Header(bytes) => out.extend_from_slice(&bytes),
            Read::File { file, offset, len } => {
                let offset = offset as usize;
                out.extend_from_slice(&sources[file as usize][offset..offset + len as usize]);
            }
        }
    }
    out
}

/// Decodes `ftyp`, `moov` and the `mdat` header; returns them with the `mdat` body's
/// offset and declared length.
fn parse(file: &[u8]) -> (Ftyp, Moov, u64, u64) {
    let mut buf = file;
    let ftyp = Ftyp::decode(&mut buf).unwrap();
    let moov = Moov::decode(&mut buf).unwrap();
    let header_at = (file.len() - buf.len()) as u64;
    let size = u32::from_be_bytes(buf[..4].try_into().unwrap());
    assert_eq!(&buf[4..8], b"mdat", "mdat follows moov");
    let (header_len, box_len) = match size {
        1 => (16, u64::from_be_bytes(buf[8..16].try_into().unwrap())),
        size => (8, u64::from(size)),
    };
    (ftyp, moov, header_at + header_len, box_len - header_len)
}

/// Every sample of `trak` as (offset, size) in the file, from `stsc`, `stsz` and the
/// chunk offsets.
fn sample_locations(trak: &Trak) -> Vec<(u64, u32)> {
    let stbl = &trak.mdia.minf.stbl;
    let chunks: Vec<u64> = match (&stbl.stco, &stbl.co64) {
        (Some(stco), None) => stco.entries.iter().map(|&o| u64::from(o)).collect(),
        (None, Some(co64)) => co64.entries.clone(),
        other => panic!("exactly one of stco/co64: {other:?}"),
    };
    let sizes: Vec<u32> = match &stbl.stsz.samples {
        StszSamples::Identical { count, size } => vec![*size; *count as usize],
        StszSamples::Different { sizes } => sizes.clone(),
    };
    let mut locations = Vec::new();
    let mut sizes = sizes.into_iter();
    let entries = &stbl.stsc.entries;
    for (index, &chunk_offset) in chunks.iter().enumerate() {
        let chunk = index as u32 + 1;
        let entry = entries
            .iter()
            .rev()
            .find(|e| e.first_chunk <= chunk)
            .unwrap();
        let mut offset = chunk_offset;
        for _ in 0..entry.samples_per_chunk {
            let size = sizes.next().unwrap();
            locations.push((offset, size));
            offset += u64::from(size);
        }
    }
    assert!(sizes.next().is_none(), "stsz has samples no chunk holds");
    locations
}

/// Interleaved synthetic samples over two source files whose bytes say which sample
/// they are; a gap in file 1 keeps pieces from coalescing there.
fn synthetic() -> (Vec<ExportSample>, Vec<Vec<u8>>) {
    let mut sources = vec![Vec::new(), Vec::new()];
    let mut samples = Vec::new();
    for i in 0..60u32 {
        let file = u32::from(i >= 30);
        let source = &mut sources[file as usize];
        if i == 45 {
            source.extend_from_slice(b"gap");
        }
        let (kind, time) = if i % 3 == 2 {
            (TrackKind::Audio, i64::from(i / 3) * 2090)
        } else {
            (TrackKind::Video, i64::from(i - i / 3) * 3000)
        };
        let size = 10 + i % 7;
        samples.push(ExportSample {
            kind,
            dts: time,
            pts: if kind == TrackKind::Video {
                time + 3000
            } else {
                time
            },
            keyframe: kind == TrackKind::Video && i % 30 == 0,
            size,
            file,
            offset: source.len() as u64,
        });
        source.extend(std::iter::repeat_n(i as u8, size as usize));
    }
    (samples, sources)
}

#[test]
fn moov_before_mdat_and_tables_point_at_each_sample() {
    let (samples, sources) = synthetic();
    let plan = plan(&h264_aac(), &samples, None).unwrap();
    let data_len: u64 = samples.iter().map(|s| u64::from(s.size)).sum();
    assert_eq!(plan.total_len, plan.header.len() as u64 + data_len);
    assert_eq!(plan.pieces.iter().map(|p| p.len).sum::<u64>(), data_len);
    // File 0 is one run, file 1 two (the gap).
    assert_eq!(plan.pieces.len(), 3, "{:?}", plan.pieces);

    let file = assemble(&plan, &sources, 0, plan.total_len - 1);
    assert_eq!(file.len() as u64, plan.total_len);
    let (ftyp, moov, mdat_at, mdat_len) = parse(&file);
    assert_eq!(mdat_at, plan.header.len() as u64);
    assert_eq!(mdat_at + mdat_len, plan.total_len);
    assert_eq!(ftyp.major_brand, FourCC::new(b"isom"));
    for brand in [b"isom", b"iso2", b"avc1", b"mp41"] {
        assert!(ftyp.compatible_brands.contains(&FourCC::new(brand)));
    }
    assert_eq!(moov.trak.len(), 2);
    for trak in &moov.trak {
        let kind = match trak.tkhd.track_id {
            1 => TrackKind::Video,
            2 => TrackKind::Audio,
            other => panic!("track id {other}"),
        };
        let expected: Vec<&ExportSample> = samples.iter().filter(|s| s.kind == kind).collect();
        let locations = sample_locations(trak);
        assert_eq!(locations.len(), expected.len());
        for ((offset, size), sample) in locations.iter().zip(&expected) {
            assert_eq!(*size, sample.size);
            let bytes = &file[*offset as usize..(*offset + u64::from(*size)) as usize];
            let index = samples.iter().position(|s| s == *sample).unwrap();
            assert!(bytes.iter().all(|&b| b == index as u8), "{kind:?} {index}");
        }
        assert!(trak.mdia.minf.stbl.co64.is_none());
    }
    // Audio every third sample: 20 one-sample chunks between video pairs.
    let video = &moov.trak[0].mdia.minf.stbl;
    assert_eq!(video.stss.as_ref().unwrap().entries, [1, 21]);
    assert_eq!(video.stts.entries.len(), 1);
    assert_eq!(video.ctts.as_ref().unwrap().entries[0].sample_offset, 3000);
}

#[test]
fn range_reads_match_the_whole_file() {
    let (samples, sources) = synthetic();
    let plan = plan(&h264_aac(), &samples, None).unwrap();
    let whole = assemble(&plan, &sources, 0, plan.total_len - 1);
    let header = plan.header.len() as u64;
    let last = plan.total_len - 1;
    for (start, end) in [
        (0, 0),
        (0, header - 1),
        (header - 3, header + 5),
        (header + 1, last),
        (100, 200),
        (last, last),
        (header + 300, last + 1000),
    ] {
        let part = assemble(&plan, &sources, start, end);
        let end = end.min(last);
        assert_eq!(part, whole[start as usize..=end as usize], "{start}-{end}");
    }
    assert_eq!(plan.reads(10, 5).count(), 0);
    assert_eq!(plan.reads(plan.total_len, plan.total_len + 10).count(), 0);
}

#[test]
fn co64_and_large_mdat_past_4_gib() {
    // Planning never reads the data: 2 GiB video samples are just numbers. An audio
    // frame between them makes each its own chunk, the third one past 4 GiB.
    const BIG: u64 = 1 << 31;
    let samples = |count: i64| -> Vec<ExportSample> {
        (0..count)
            .flat_map(|i| {
                let at = i as u64 * (BIG + 100);
                [
                    ExportSample {
                        kind: TrackKind::Video,
                        dts: i * 3000,
                        pts: i * 3000,
                        keyframe: true,
                        size: BIG as u32,
                        file: 0,
                        offset: at,
                    },
                    ExportSample {
                        kind: TrackKind::Audio,
                        dts: i * 3000,
                        pts: i * 3000,
                        keyframe: false,
                        size: 100,
                        file: 0,
                        offset: at + BIG,
                    },
                ]
            })
            .collect()
    };
    let plan = plan(&h264_aac(), &samples(3), None).unwrap();
    assert_eq!(plan.pieces.len(), 1);
    assert_eq!(plan.total_len, plan.header.len() as u64 + 3 * (BIG + 100));
    // The header holds everything but the mdat body; decode it with the 64-bit size.
    let (_, moov, mdat_at, mdat_len) = parse(&plan.header);
    assert_eq!(mdat_at, plan.header.len() as u64);
    assert_eq!(mdat_len, 3 * (BIG + 100));
    let header = plan.header.len() as u64;
    for (trak, first) in moov.trak.iter().zip([header, header + BIG]) {
        let stbl = &trak.mdia.minf.stbl;
        assert!(stbl.stco.is_none());
        let step = BIG + 100;
        assert_eq!(
            stbl.co64.as_ref().unwrap().entries,
            [first, first + step, first + 2 * step]
        );
    }

    // One of each: every chunk starts below 4 GiB, stco stays.
    let plan = super::plan(&h264_aac(), &samples(1), None).unwrap();
    let (_, moov, ..) = parse(&plan.header);
    for trak in &moov.trak {
        assert!(trak.mdia.minf.stbl.stco.is_some() && trak.mdia.minf.stbl.co64.is_none());
    }
}

#[test]
fn edit_list_starts_playback_at_play_from() {
    let (samples, _) = synthetic();
    // Video keyframe at 0 (pts 3000); play from 0.5 s.
    let plan = plan(&h264_aac(), &samples, Some(45_000)).unwrap();
    let (_, moov, ..) = parse(&plan.header);
    let video = &moov.trak[0];
    let elst = &video.edts.as_ref().unwrap().elst.as_ref().unwrap().entries;
    assert_eq!(elst.len(), 1);
    assert_eq!(elst[0].media_time, Some(45_000));
    // 40 video samples at 3000 ticks, first presented at 3000: ends at 123000 ticks.
    assert_eq!(elst[0].segment_duration, 867, "78000 ticks, rounded to ms");
    assert_eq!(moov.mvhd.duration, video.tkhd.duration);
    // The audio ends at 0.46 s: nothing of it is presented from 0.5 s, so no track.
    assert_eq!(moov.trak.len(), 1);

    // Playing from before the video's first frame: an empty edit first.
    let plan = super::plan(&h264_aac(), &samples, Some(0)).unwrap();
    let (_, moov, ..) = parse(&plan.header);
    let elst = &moov.trak[0]
        .edts
        .as_ref()
        .unwrap()
        .elst
        .as_ref()
        .unwrap()
        .entries;
    assert_eq!(elst.len(), 2, "{elst:?}");
    assert_eq!(elst[0].media_time, None);
    assert_eq!(elst[0].segment_duration, 3000 / 90);
    assert_eq!(elst[1].media_time, Some(3000));
}

#[test]
fn refuses_what_mp4_cannot_hold() {
    let (samples, _) = synthetic();
    assert_eq!(
        plan(&h264_aac(), &[], None).unwrap_err(),
        ExportError::NoSamples
    );
    let video_only = Tracks {
        video: Some(h264_track()),
        audio: None,
    };
    assert_eq!(
        plan(&video_only, &samples, None).unwrap_err(),
        ExportError::MissingTrack(TrackKind::Audio)
    );
    let mut backwards = samples.clone();
    backwards[3].dts = -100_000;
    assert_eq!(
        plan(&h264_aac(), &backwards, None).unwrap_err(),
        ExportError::Timestamp("decode times go backwards")
    );
    // Nothing presented from a time after the end.
    assert_eq!(
        plan(&h264_aac(), &samples, Some(10 * 90_000)).unwrap_err(),
        ExportError::NoSamples
    );
}

/// Writes a real recording's samples into two source files (split mid-stream) and the
/// exported MP4 from a plan, as a DVR export would.
fn export_to_file(
    dir: &std::path::Path,
    tracks: &Tracks,
    samples: &[Sample],
    play_from: Option<i64>,
) -> std::path::PathBuf {
    let mut sources = vec![Vec::new(), Vec::new()];
    let mut exported = Vec::new();
    for (i, sample) in samples.iter().enumerate() {
        let file = u32::from(i >= samples.len() / 2);
        let source = &mut sources[file as usize];
        exported.push(ExportSample {
            kind: sample.kind,
            dts: sample.dts,
            pts: sample.pts,
            keyframe: sample.keyframe,
            size: sample.data.len() as u32,
            file,
            offset: source.len() as u64,
        });
        source.extend_from_slice(&sample.data);
    }
    let plan = plan(tracks, &exported, play_from).unwrap();
    let file = assemble(&plan, &sources, 0, plan.total_len - 1);
    let path = dir.join("export.mp4");
    std::fs::write(&path, file).unwrap();
    path
}

fn ffprobe_duration(path: &std::path::Path) -> f64 {
    let probe = run_ffmpeg_tool(
        "ffprobe",
        &[
            "-v",
            "error",
            "-show_entries",
            "format=duration",
            "-of",
            "csv=p=0",
            path.to_str().unwrap(),
        ],
    );
    let err = String::from_utf8_lossy(&probe.stderr);
    assert!(probe.status.success() && err.is_empty(), "ffprobe: {err}");
    let out = String::from_utf8_lossy(&probe.stdout);
    out.trim()
        .parse()
        .unwrap_or_else(|_| panic!("duration {out:?}"))
}

fn assert_decodes_cleanly(path: &std::path::Path) {
    let decode = run_ffmpeg_tool(
        "ffmpeg",
        &[
            "-v",
            "error",
            "-i",
            path.to_str().unwrap(),
            "-f",
            "null",
            "-",
        ],
    );
    let err = String::from_utf8_lossy(&decode.stderr);
    assert!(decode.status.success() && err.is_empty(), "ffmpeg: {err}");
}

#[test]
fn ffmpeg_reads_an_exported_recording() {
    let dir = TempDir::new("mp4-export");
    let (tracks, samples) = read_flv(make_h264_aac_flv(dir.path()));
    assert!(samples.len() > 200, "{} samples", samples.len());

    let whole = export_to_file(dir.path(), &tracks, &samples, None);
    let duration = ffprobe_duration(&whole);
    assert!((duration - 4.0).abs() < 0.1, "whole: {duration} s");
    assert_decodes_cleanly(&whole);

    // From the keyframe at 2 s, playing from 2.4 s: the caller's snap.
    let from_keyframe = samples
        .iter()
        .position(|s| s.kind == TrackKind::Video && s.keyframe && s.dts >= 2 * 90_000)
        .unwrap();
    let tail = export_to_file(
        dir.path(),
        &tracks,
        &samples[from_keyframe..],
        Some(216_000),
    );
    let duration = ffprobe_duration(&tail);
    assert!((duration - 1.6).abs() < 0.1, "tail: {duration} s");
    assert_decodes_cleanly(&tail);
    let first_frame = run_ffmpeg_tool(
        "ffprobe",
        &[
            "-v",
            "error",
            "-select_streams",
            "v",
            "-show_entries",
            "frame=pts_time",
            "-of",
            "csv=p=0",
            tail.to_str().unwrap(),
        ],
    );
    // csv prints "0.000000," and, for some builds, an empty section line after it.
    let out = String::from_utf8_lossy(&first_frame.stdout);
    let first: f64 = out
        .split([',', '\n'])
        .next()
        .and_then(|time| time.trim().parse().ok())
        .unwrap_or_else(|| panic!("first frame time {out:?}"));
    assert!(first.abs() < 0.05, "first shown frame at {first} s");
}
