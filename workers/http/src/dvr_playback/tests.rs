//! DVR playback against archives written with the real archive writer: windows cover
//! the span asked for, numbering survives a sliding window, and the playlists with
//! their muxed segments (MPEG-TS and fMP4) decode end to end with ffmpeg.

#![allow(clippy::unwrap_used)]

use super::playlists::{self, Clock, MediaOptions};
use super::segments::{self, Output};
use super::urls::Window;
use std::path::{Path, PathBuf};
use std::process::Command;
use strom_media::dvr::{ArchiveWriter, SegmentEntry, read_archive, testing};

/// Wall clock of the first recorded sample: 2023-11-14T22:13:20Z.
const T0_MS: i64 = 1_700_000_000_000;
/// The second period starts this long after the first (the gap between publishes).
const SECOND_PERIOD_MS: i64 = 60_000;

fn tool(name: &str) -> Command {
    let probe = Command::new(name).arg("-version").output();
    if probe.is_err() {
        panic!("`{name}` not found: install the Debian package `ffmpeg`");
    }
    Command::new(name)
}

/// An archive of two periods (the same 6 s each, a minute apart) in `dir/archive`.
fn recorded_archive(dir: &Path) -> PathBuf {
    let recorded = testing::encoded_stream(dir).unwrap();
    let archive = dir.join("archive");
    let (mut writer, _) = ArchiveWriter::open(&archive).unwrap();
    testing::record_period(&mut writer, &recorded, 1, T0_MS, 2).unwrap();
    testing::record_period(&mut writer, &recorded, 2, T0_MS + SECOND_PERIOD_MS, 2).unwrap();
    archive
}

fn finished(target_secs: u32) -> Clock {
    Clock {
        now_ms: T0_MS + 3_600_000,
        recording: false,
        target_secs,
    }
}

/// Writes the playlist of `window` and every segment it names into `out`, as the
/// packager serves them.
fn serve_into(archive_dir: &Path, window: Window, fmp4: bool, out: &Path) -> PathBuf {
    let archive = read_archive(archive_dir).unwrap();
    let clock = finished(playlists::target_duration(&archive, 2));
    let (range, closed) = playlists::select(&archive, window, clock);
    let text = playlists::media_playlist(
        &archive,
        range,
        MediaOptions {
            fmp4,
            session: None,
            target_secs: clock.target_secs,
            closed,
            start_at_first: false,
            cue_style: Default::default(),
        },
    );
    std::fs::create_dir_all(out).unwrap();
    for line in text.lines() {
        let name = line
            .strip_prefix("#EXT-X-MAP:URI=\"")
            .map(|l| l.trim_end_matches('"'))
            .or_else(|| (!line.starts_with('#')).then_some(line));
        let Some(name) = name else { continue };
        let file = super::urls::DvrFile::parse(name).unwrap();
        let (seq, output) = match file {
            super::urls::DvrFile::Segment { seq, fmp4: false } => (seq, Output::Ts),
            super::urls::DvrFile::Segment { seq, fmp4: true } => (seq, Output::Fmp4),
            super::urls::DvrFile::Init { seq } => (seq, Output::Init),
            other => panic!("{other:?} in a media playlist"),
        };
        let index = archive.iter().position(|e| e.seq == seq).unwrap();
        let next = archive
            .get(index + 1)
            .filter(|n| !playlists::boundary(&archive[index], n));
        let offset = segments::ts_offset(&archive, &archive[index]);
        let bytes = segments::mux(archive_dir, &archive[index], next, output, offset).unwrap();
        std::fs::write(out.join(name), bytes).unwrap();
    }
    let playlist = out.join("chunks.m3u8");
    std::fs::write(&playlist, &text).unwrap();
    playlist
}

/// Decodes the playlist with ffmpeg (errors fail the test) and returns the number of
/// video frames and the decoded duration in seconds.
fn decode(playlist: &Path) -> (u64, f64) {
    decode_with(playlist, &[])
}

fn decode_with(playlist: &Path, input_options: &[&str]) -> (u64, f64) {
    let output = tool("ffmpeg")
        .args(["-v", "error", "-nostdin"])
        .args(input_options)
        .arg("-i")
        .arg(playlist)
        .args(["-f", "null", "-", "-progress", "pipe:1"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let playlist_text = std::fs::read_to_string(playlist).unwrap();
    assert!(
        output.status.success() && stderr.trim().is_empty(),
        "ffmpeg failed on\n{playlist_text}\n{stderr}"
    );
    let last = |key: &str| {
        stdout
            .lines()
            .filter_map(|l| l.strip_prefix(key))
            .next_back()
            .unwrap_or_else(|| panic!("no {key} in ffmpeg's progress: {stdout}"))
            .trim()
            .to_owned()
    };
    let frames: u64 = last("frame=").parse().unwrap();
    let out_time_us: f64 = last("out_time_us=").parse().unwrap();
    (frames, out_time_us / 1e6)
}

#[test]
fn the_whole_archive_decodes_end_to_end_as_ts_and_fmp4() {
    let dir = tempfile::tempdir().unwrap();
    let archive = recorded_archive(dir.path());
    let entries = read_archive(&archive).unwrap();
    assert_eq!(entries.len(), 6, "three 2 s segments per period");
    for fmp4 in [false, true] {
        let out = dir.path().join(if fmp4 { "fmp4" } else { "ts" });
        let playlist = serve_into(&archive, Window::Whole, fmp4, &out);
        let text = std::fs::read_to_string(&playlist).unwrap();
        assert_eq!(text.matches("#EXT-X-DISCONTINUITY\n").count(), 1, "{text}");
        assert_eq!(
            text.matches("#EXT-X-PROGRAM-DATE-TIME:").count(),
            6,
            "{text}"
        );
        assert!(text.contains("#EXT-X-PROGRAM-DATE-TIME:2023-11-14T22:13:20.000Z\n"));
        assert!(text.contains("#EXT-X-PROGRAM-DATE-TIME:2023-11-14T22:14:20.000Z\n"));
        assert!(text.ends_with("#EXT-X-ENDLIST\n"), "{text}");
        if fmp4 {
            let maps: Vec<&str> = text
                .lines()
                .filter(|l| l.starts_with("#EXT-X-MAP"))
                .collect();
            assert_eq!(
                maps,
                [
                    "#EXT-X-MAP:URI=\"dvr_init_1.mp4\"",
                    "#EXT-X-MAP:URI=\"dvr_init_4.mp4\""
                ],
                "a new init segment at the second period"
            );
            let fragment = std::fs::read(out.join("dvr_5.m4s")).unwrap();
            assert_eq!(&fragment[12..16], b"mfhd");
            assert_eq!(
                fragment[20..24],
                5u32.to_be_bytes(),
                "numbered by the archive"
            );
        }
        // fMP4 times grow across periods (`FMP4_PERIOD_SPAN`); without `-copyts` the
        // ffmpeg CLI pulls the jump back to the end of the first period, where the
        // first period's audio ends a few milliseconds after its video.
        let options: &[&str] = if fmp4 { &["-copyts"] } else { &[] };
        let (frames, _) = decode_with(&playlist, options);
        assert_eq!(frames, 300, "both periods, every frame ({text})");
    }
}

/// The first video packet's decode time (seconds) of each TS segment of `playlist`.
fn first_video_dts(playlist: &Path) -> Vec<f64> {
    let text = std::fs::read_to_string(playlist).unwrap();
    let dir = playlist.parent().unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|name| {
            let output = tool("ffprobe")
                .args(["-v", "error", "-select_streams", "v:0"])
                .args([
                    "-show_entries",
                    "packet=dts_time",
                    "-read_intervals",
                    "%+#1",
                ])
                .args(["-of", "csv=p=0"])
                .arg(dir.join(name))
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&output.stdout);
            let first = text
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or_default();
            first
                .trim()
                .trim_end_matches(',')
                .parse()
                .unwrap_or_else(|e| panic!("{name}: {e}: {text:?} {output:?}"))
        })
        .collect()
}

/// MPEG-TS times continue across publishes (each period on the wall clock), so ffmpeg
/// seeks into the second period.
#[test]
fn ts_times_grow_across_periods_and_ffmpeg_seeks_into_a_later_one() {
    let dir = tempfile::tempdir().unwrap();
    let archive = recorded_archive(dir.path());
    let playlist = serve_into(&archive, Window::Whole, false, &dir.path().join("ts"));
    let starts = first_video_dts(&playlist);
    assert_eq!(starts.len(), 6);
    assert!(
        starts.windows(2).all(|w| w[1] > w[0]),
        "segment start times: {starts:?}"
    );
    // The second publish starts a minute after the first, on the wall clock.
    let gap = starts[3] - starts[2];
    assert!((55.0..57.0).contains(&gap), "{starts:?}");
    // 9 s: ffmpeg reads from the segment holding it (8-10 s, the second period's second)
    // on; the times it trims by are the wall clock's, a minute on, so it trims nothing.
    let (frames, _) = decode_with(&playlist, &["-ss", "9"]);
    assert_eq!(frames, 100, "frames decoded from 9 s of 12 s");
}

#[test]
fn a_range_decodes_to_the_span_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let archive = recorded_archive(dir.path());
    // The second period from its 2nd second, for 3 s: its segments 2 and 3 (2-6 s).
    let start = (T0_MS + SECOND_PERIOD_MS + 2000) / 1000;
    let window = Window::Range {
        start,
        duration: Some(3),
    };
    for fmp4 in [false, true] {
        let out = dir.path().join(format!("range-{fmp4}"));
        let playlist = serve_into(&archive, window, fmp4, &out);
        let text = std::fs::read_to_string(&playlist).unwrap();
        assert!(text.contains("#EXT-X-MEDIA-SEQUENCE:5\n"), "{text}");
        assert!(!text.contains("#EXT-X-DISCONTINUITY\n"), "{text}");
        let (frames, seconds) = decode(&playlist);
        assert_eq!(frames, 100, "two 2 s segments ({text})");
        assert!((3.5..4.5).contains(&seconds), "{seconds} s decoded");
    }
}

/// Index entries of 2 s segments: 15 in period 1 from `T0_MS`, 10 in period 2 from
/// `T0_MS + 60 s`.
fn synthetic_archive() -> Vec<SegmentEntry> {
    let entry = |seq: u64, period: u32, start_ms: i64, start_dts: i64| SegmentEntry {
        seq,
        period,
        start_ms,
        start_dts,
        duration: 180_000,
        bytes: 500_000,
        samples: 100,
        width: 1280,
        height: 720,
        vcodec: "avc1.64001f".into(),
        acodec: "mp4a.40.2".into(),
        scte35: Vec::new(),
    };
    let first = (0..15).map(|i| entry(1 + i, 1, T0_MS + i as i64 * 2000, i as i64 * 180_000));
    let second = (0..10).map(|i| {
        entry(
            16 + i,
            2,
            T0_MS + SECOND_PERIOD_MS + i as i64 * 2000,
            i as i64 * 180_000,
        )
    });
    first.chain(second).collect()
}

fn seqs(archive: &[SegmentEntry], range: std::ops::Range<usize>) -> Vec<u64> {
    archive[range].iter().map(|e| e.seq).collect()
}

#[test]
fn windows_select_the_segments_that_overlap_them() {
    let archive = synthetic_archive();
    let live = Clock {
        now_ms: T0_MS + SECOND_PERIOD_MS + 20_500,
        recording: true,
        target_secs: 6,
    };
    let (all, closed) = playlists::select(&archive, Window::Whole, live);
    assert_eq!((all, closed), (0..25, false), "live: no ENDLIST");
    let (_, closed) = playlists::select(
        &archive,
        Window::Whole,
        Clock {
            recording: false,
            ..live
        },
    );
    assert!(closed, "nothing records it any more");

    // 10 s from T0 + 10 s: segments starting at 10, 12, 14, 16, 18 s.
    let range = Window::Range {
        start: T0_MS / 1000 + 10,
        duration: Some(10),
    };
    let (picked, closed) = playlists::select(&archive, range, live);
    assert_eq!(seqs(&archive, picked), [6, 7, 8, 9, 10]);
    assert!(closed, "a range that ended in the past is final");
    // Over the gap: the end of period 1 and the start of period 2.
    let across = Window::Range {
        start: T0_MS / 1000 + 27,
        duration: Some(36),
    };
    let (picked, _) = playlists::select(&archive, across, live);
    assert_eq!(seqs(&archive, picked), [14, 15, 16, 17]);
    let open = Window::Range {
        start: (T0_MS + SECOND_PERIOD_MS) / 1000 + 15,
        duration: None,
    };
    let (picked, closed) = playlists::select(&archive, open, live);
    assert_eq!((seqs(&archive, picked), closed), (vec![23, 24, 25], false));

    // The 6 s that end 10 s before now (T0 + 70.5 s): 64.5 - 70.5 s into period 2.
    let shifted = Window::Timeshift {
        shift: 10,
        depth: 6,
    };
    let (picked, closed) = playlists::select(&archive, shifted, live);
    assert_eq!(
        (seqs(&archive, picked), closed),
        (vec![18, 19, 20, 21], false)
    );
    // Once the stream stopped, it ends when the shifted window passes the archive's end.
    let stopped = Clock {
        recording: false,
        ..live
    };
    assert!(!playlists::select(&archive, shifted, stopped).1);
    let later = Clock {
        now_ms: live.now_ms + 20_000,
        ..stopped
    };
    assert!(playlists::select(&archive, shifted, later).1);
    // Nothing before the archive.
    let before = Window::Range {
        start: T0_MS / 1000 - 100,
        duration: Some(50),
    };
    assert!(playlists::select(&archive, before, live).0.is_empty());
}

fn media(archive: &[SegmentEntry], range: std::ops::Range<usize>, fmp4: bool) -> String {
    playlists::media_playlist(
        archive,
        range,
        MediaOptions {
            fmp4,
            session: Some(42),
            target_secs: 6,
            closed: false,
            start_at_first: false,
            cue_style: Default::default(),
        },
    )
}

#[test]
fn a_sliding_window_keeps_the_numbers_of_the_segments_it_keeps() {
    let mut archive = synthetic_archive();
    let text = media(&archive, 13..18, true);
    assert!(text.contains("#EXT-X-MEDIA-SEQUENCE:14\n#EXT-X-DISCONTINUITY-SEQUENCE:0\n"));
    assert!(text.contains("\n#EXT-X-DISCONTINUITY\n#EXT-X-MAP:URI=\"dvr_init_16.mp4?sid=42\"\n"));
    assert!(
        text.contains("#EXT-X-MAP:URI=\"dvr_init_1.mp4?sid=42\"\n"),
        "{text}"
    );
    assert!(text.contains("\ndvr_14.m4s?sid=42\n"));
    assert!(!text.contains("ENDLIST"));
    // One segment later, past the discontinuity: the same numbers for the same segments.
    let slid = media(&archive, 15..19, true);
    assert!(
        slid.contains("#EXT-X-MEDIA-SEQUENCE:16\n#EXT-X-DISCONTINUITY-SEQUENCE:1\n"),
        "{slid}"
    );
    assert!(!slid.contains("#EXT-X-DISCONTINUITY\n"));
    // Cleanup removed period 1: segment 16 keeps discontinuity number 1.
    archive.drain(..15);
    let cleaned = media(&archive, 0..4, false);
    assert!(
        cleaned.contains("#EXT-X-MEDIA-SEQUENCE:16\n#EXT-X-DISCONTINUITY-SEQUENCE:1\n"),
        "{cleaned}"
    );
    assert!(cleaned.contains("\ndvr_16.ts?sid=42\n") && !cleaned.contains("MAP"));
    assert!(
        cleaned.contains("#EXT-X-PROGRAM-DATE-TIME:2023-11-14T22:14:20.000Z\n#EXTINF:2.000,\n")
    );
}

#[test]
fn target_duration_and_master_playlist_follow_the_archive() {
    let mut archive = synthetic_archive();
    // Fixed by the configuration whatever the segments, as they land.
    assert_eq!(playlists::target_duration(&archive, 6), 12);
    assert_eq!(playlists::target_duration(&archive[..1], 6), 12);
    assert_eq!(playlists::target_duration(&[], 2), 12);
    assert_eq!(playlists::target_duration(&archive, 10), 20);
    archive[3].duration = 7 * 90_000 + 1;
    assert_eq!(
        playlists::target_duration(&archive, 2),
        12,
        "a 7 s GOP fits"
    );
    archive[3].duration = 13 * 90_000 + 1;
    assert_eq!(
        playlists::target_duration(&archive, 6),
        14,
        "beyond: rounded up"
    );
    let master = playlists::master_playlist(&archive[..5], false, "chunks_dvr.m3u8?sid=7");
    assert_eq!(
        master,
        "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-INDEPENDENT-SEGMENTS\n\
         #EXT-X-STREAM-INF:BANDWIDTH=2200000,RESOLUTION=1280x720,CODECS=\"avc1.64001f,mp4a.40.2\"\n\
         chunks_dvr.m3u8?sid=7\n"
    );
}

#[test]
fn a_segment_gone_from_the_archive_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let archive = synthetic_archive();
    assert!(matches!(
        segments::mux(dir.path(), &archive[0], None, Output::Ts, 0),
        Err(segments::MuxError::Gone)
    ));
}

/// A segment that starts with a splice marker gets the live playlist's DATERANGE; the
/// break's auto-return 6 s later gets the in with the same ID, in a window that starts
/// after the out too; the marker's period ends the break, the next period has none.
#[test]
fn archived_markers_become_the_live_playlists_dateranges() {
    use strom_media::scte35::{BreakDuration, SpliceInfo};
    let mut archive = synthetic_archive();
    let out = SpliceInfo::insert(
        3,
        true,
        None,
        Some(BreakDuration {
            auto_return: true,
            duration: 6 * 90_000,
        }),
    )
    .encode();
    archive[4].scte35 = vec![bytes::Bytes::from(out.clone())];
    let whole = media(&archive, 0..25, false);
    let out_tag = format!(
        "#EXT-X-DATERANGE:ID=\"splice-3-{}\",START-DATE=\"{}\",PLANNED-DURATION=6.000,SCTE35-OUT={}\n#EXTINF:2.000,\ndvr_5.ts",
        archive[4].start_ms,
        strom_media::hls::datetime::iso8601_utc(archive[4].start_ms),
        strom_media::scte35::to_hex(&out)
    );
    assert!(whole.contains(&out_tag), "{whole}");
    let in_line = |playlist: &str| {
        let lines: Vec<&str> = playlist.lines().collect();
        let at = lines.iter().position(|l| l.contains("SCTE35-IN=")).unwrap();
        (lines[at].to_owned(), lines[at + 2].to_owned())
    };
    let (tag, uri) = in_line(&whole);
    assert!(
        tag.contains(&format!("ID=\"splice-3-{}\"", archive[4].start_ms)),
        "{tag}"
    );
    assert!(tag.contains(",DURATION=6.000,"), "{tag}");
    assert_eq!(uri, "dvr_8.ts?sid=42", "three 2 s segments after the out");
    assert_eq!(whole.matches("#EXT-X-DATERANGE").count(), 2, "{whole}");
    // A window of segments 7..: the in, without the out before it.
    let later = media(&archive, 6..25, false);
    assert_eq!(in_line(&later), (tag, uri));
    assert!(!later.contains("SCTE35-OUT"), "{later}");
    // Without markers, no tags.
    assert!(!media(&synthetic_archive(), 0..25, false).contains("DATERANGE"));
}
