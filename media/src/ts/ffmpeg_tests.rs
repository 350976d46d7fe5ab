//! End-to-end tests with real ffmpeg (Debian package `ffmpeg`): streams that
//! ffmpeg encodes are muxed into two HLS segments split at a keyframe, and
//! `ffprobe`/`ffmpeg` must see the right streams and decode each segment, and
//! their concatenation, without a single error.
//!
//! - H.264 + AAC: from an FLV written by ffmpeg (libx264 with B-frames, so PTS ≠ DTS),
//!   read with [`read_flv`]; also muxed as video only and as audio only.
//! - H.265 + AAC: libx265 writes a raw Annex B stream (`-f hevc`, no B-frames, so
//!   PTS = DTS = frame × 3600); its VPS/SPS/PPS become an `hvcC` record and are
//!   stripped from the samples, as are its AUDs, so the muxer inserts both again.
//!   The audio is the AAC of the FLV above.

use std::collections::HashMap;
use std::path::Path;

use bytes::Bytes;

use super::access_unit::HEVC;
use super::tests::{check_continuity, pes_packets};
use super::*;
use crate::hevc::HevcDecoderConfig;
use crate::test_flv::{TempDir, ffmpeg, make_h264_aac_flv, read_flv, run_ffmpeg_tool};

/// Muxes `samples` into two segments split before the first keyframe at or after
/// 2 s, writes them (and their concatenation) to `dir`, and checks them with
/// ffprobe and ffmpeg. `probe` lists substrings `ffprobe -show_streams` must print.
fn check_segments(dir: &Path, name: &str, tracks: &Tracks, samples: &[Sample], probe: &[&str]) {
    let split = samples
        .iter()
        .position(|s| s.kind == TrackKind::Video && s.keyframe && s.dts >= 2 * 90_000)
        .unwrap_or_else(|| {
            // Audio only: split where the video keyframe would be.
            samples.iter().position(|s| s.dts >= 2 * 90_000).unwrap()
        });
    let mut muxer = TsMuxer::new(tracks);
    let mut segments = Vec::new();
    for part in [&samples[..split], &samples[split..]] {
        let mut out = Vec::new();
        muxer.write_segment(tracks, part, &mut out).unwrap();
        segments.push(out);
    }
    let both = segments.concat();
    check_continuity(&both, &mut HashMap::new());
    // Every frame arrives, in its own PES (video) or in a group (audio).
    let pes = pes_packets(&both);
    let video = samples
        .iter()
        .filter(|s| s.kind == TrackKind::Video)
        .count();
    assert_eq!(pes.iter().filter(|p| p.pid == VIDEO_PID).count(), video);

    let files = [
        (format!("{name}-1.ts"), &segments[0]),
        (format!("{name}-2.ts"), &segments[1]),
        (format!("{name}-both.ts"), &both),
    ];
    for (file, data) in files {
        let path = dir.join(&file);
        std::fs::write(&path, data).unwrap();
        let path = path.to_str().unwrap();
        let probed = run_ffmpeg_tool("ffprobe", &["-v", "error", "-show_streams", path]);
        let stdout = String::from_utf8_lossy(&probed.stdout);
        let stderr = String::from_utf8_lossy(&probed.stderr);
        assert!(
            probed.status.success() && stderr.is_empty(),
            "ffprobe {file}: {stderr}"
        );
        for want in probe {
            assert!(
                stdout.contains(want),
                "ffprobe {file}: no {want} in\n{stdout}"
            );
        }
        let decoded = run_ffmpeg_tool(
            "ffmpeg",
            &["-v", "error", "-nostdin", "-i", path, "-f", "null", "-"],
        );
        let stderr = String::from_utf8_lossy(&decoded.stderr);
        assert!(
            decoded.status.success() && stderr.is_empty(),
            "ffmpeg {file}: {stderr}"
        );
    }

    // All frames of the concatenation decode.
    let path = dir.join(format!("{name}-both.ts"));
    for (kind, stream) in [(TrackKind::Video, "v"), (TrackKind::Audio, "a")] {
        let want = samples.iter().filter(|s| s.kind == kind).count();
        if want == 0 {
            continue;
        }
        let counted = run_ffmpeg_tool(
            "ffprobe",
            &[
                "-v",
                "error",
                "-count_frames",
                "-select_streams",
                stream,
                "-show_entries",
                "stream=nb_read_frames",
                "-of",
                "csv=p=0",
                path.to_str().unwrap(),
            ],
        );
        // The stream is listed under its program and on its own.
        let stdout = String::from_utf8_lossy(&counted.stdout);
        let got: Vec<&str> = stdout.lines().filter(|l| !l.is_empty()).collect();
        let want = want.to_string();
        assert_eq!(got, [&want, &want], "{name} {stream} frames");
    }
}

fn only(tracks: &Tracks, samples: &[Sample], video: bool, audio: bool) -> (Tracks, Vec<Sample>) {
    let tracks = Tracks {
        video: tracks.video.clone().filter(|_| video),
        audio: tracks.audio.clone().filter(|_| audio),
    };
    let samples = samples
        .iter()
        .filter(|s| match s.kind {
            TrackKind::Video => video,
            TrackKind::Audio => audio,
        })
        .cloned()
        .collect();
    (tracks, samples)
}

#[test]
fn h264_aac_segments_decode_in_ffmpeg() {
    let dir = TempDir::new("ts-h264");
    let (tracks, samples) = read_flv(make_h264_aac_flv(dir.path()));
    assert!(samples.iter().any(|s| s.pts != s.dts), "B-frames expected");
    let video = ["codec_name=h264", "width=320", "height=240"];
    let audio = ["codec_name=aac", "sample_rate=44100"];
    let cases: [(&str, bool, bool, Vec<&str>); 3] = [
        ("av", true, true, [&video[..], &audio[..]].concat()),
        ("video", true, false, video.to_vec()),
        ("audio", false, true, audio.to_vec()),
    ];
    for (name, with_video, with_audio, probe) in cases {
        let (tracks, samples) = only(&tracks, &samples, with_video, with_audio);
        check_segments(dir.path(), name, &tracks, &samples, &probe);
    }
}

/// Splits an Annex B byte stream into NAL units (start codes of 3 or 4 bytes).
fn annexb_nals(data: &[u8]) -> Vec<&[u8]> {
    let mut starts = Vec::new();
    let mut i = 0;
    while i + 3 <= data.len() {
        if data[i..i + 3] == [0, 0, 1] {
            starts.push(i + 3);
            i += 3;
        } else {
            i += 1;
        }
    }
    starts
        .iter()
        .enumerate()
        .map(|(n, &start)| {
            let mut end = starts.get(n + 1).map_or(data.len(), |&next| next - 3);
            while end > start && data[end - 1] == 0 {
                end -= 1; // the leading zero of a 4-byte start code
            }
            &data[start..end]
        })
        .collect()
}

/// Removes emulation prevention bytes (00 00 03 -> 00 00).
fn rbsp(nal: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut zeros = 0;
    for &b in nal {
        if zeros >= 2 && b == 3 {
            zeros = 0;
            continue;
        }
        zeros = if b == 0 { zeros + 1 } else { 0 };
        out.push(b);
    }
    out
}

/// An `hvcC` record for one VPS, SPS and PPS; the general profile, tier and
/// level come from the SPS, the rest is 4:2:0 8-bit with 4-byte NAL lengths.
fn hvcc(vps: &[u8], sps: &[u8], pps: &[u8]) -> Bytes {
    let sps_rbsp = rbsp(sps);
    let mut record = vec![1];
    record.extend_from_slice(&sps_rbsp[3..15]); // general_profile_tier_level
    record.extend_from_slice(&[0xf0, 0x00, 0xfc, 0xfd, 0xf8, 0xf8, 0x00, 0x00, 0x0f, 3]);
    for nal in [vps, sps, pps] {
        record.push(0x80 | ((nal[0] >> 1) & 0x3f));
        record.extend_from_slice(&1u16.to_be_bytes());
        record.extend_from_slice(&(nal.len() as u16).to_be_bytes());
        record.extend_from_slice(nal);
    }
    Bytes::from(record)
}

#[test]
fn h265_aac_segments_decode_in_ffmpeg() {
    let dir = TempDir::new("ts-h265");
    let hevc_path = dir.path().join("out.hevc");
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc=size=320x240:rate=25",
        "-t",
        "4",
        "-c:v",
        "libx265",
        "-x265-params",
        "keyint=25:min-keyint=25:bframes=0:aud=1:log-level=error",
        "-f",
        "hevc",
        hevc_path.to_str().unwrap(),
    ]);
    let stream = std::fs::read(&hevc_path).unwrap();
    let nal_type = |nal: &[u8]| (nal[0] >> 1) & 0x3f;
    let nals = annexb_nals(&stream);
    let find = |t| *nals.iter().find(|n| nal_type(n) == t).unwrap();
    let record = hvcc(find(32), find(33), find(34));
    let config = HevcDecoderConfig::parse(&record).unwrap();
    let sps = config.sps_info().unwrap();
    assert_eq!((sps.width, sps.height), (320, 240));
    let video_track = VideoTrack {
        config: VideoConfig::H265 { config, record },
        width: sps.width,
        height: sps.height,
    };

    // Access units start at each AUD; drop AUDs and parameter sets.
    let mut video = Vec::new();
    for nal in nals {
        let t = nal_type(nal);
        if t == HEVC.aud_type {
            video.push((Vec::new(), false));
            continue;
        }
        let Some((data, keyframe)) = video.last_mut() else {
            continue;
        };
        *keyframe |= (16..=23).contains(&t);
        if !(32..=34).contains(&t) {
            data.extend_from_slice(&(nal.len() as u32).to_be_bytes());
            data.extend_from_slice(nal);
        }
    }
    assert_eq!(video.len(), 100);
    assert_eq!(video.iter().filter(|(_, key)| *key).count(), 4);
    let mut samples: Vec<Sample> = video
        .into_iter()
        .enumerate()
        .map(|(i, (data, keyframe))| Sample {
            kind: TrackKind::Video,
            dts: i as i64 * 3600,
            pts: i as i64 * 3600,
            keyframe,
            data: Bytes::from(data),
        })
        .collect();

    let (flv_tracks, flv_samples) = read_flv(make_h264_aac_flv(dir.path()));
    samples.extend(
        flv_samples
            .into_iter()
            .filter(|s| s.kind == TrackKind::Audio),
    );
    samples.sort_by_key(|s| s.dts); // stable: video first on equal dts
    let tracks = Tracks {
        video: Some(video_track),
        audio: flv_tracks.audio,
    };
    let probe = [
        "codec_name=hevc",
        "width=320",
        "height=240",
        "codec_name=aac",
    ];
    check_segments(dir.path(), "hevc", &tracks, &samples, &probe);
}
