//! Test-only helpers for end-to-end muxer tests with real ffmpeg: a temporary
//! directory, a check that names the Debian package when a tool is missing, the
//! ffmpeg command that makes a short H.264+AAC FLV, and a tiny FLV *file* reader
//! (9-byte header, then tags) that turns the file into [`Tracks`] and [`Sample`]s
//! with the crate's own FLV adapter and track learner.

use std::path::{Path, PathBuf};
use std::process::Command;

use bytes::Bytes;

use crate::flv_adapter::{audio_frame, video_frame};
use crate::sample::{Sample, TrackKind, Tracks, VideoConfig};
use crate::track_info::{self, TrackInfo};

/// A directory under the system temp dir, removed on drop.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    pub(crate) fn new(name: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let path =
            std::env::temp_dir().join(format!("strom-media-{name}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&path).unwrap();
        Self(path)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `tool` (from Debian's `ffmpeg` package) with `args` and returns its
/// output; panics naming the package when the tool is not installed.
pub(crate) fn run_ffmpeg_tool(tool: &str, args: &[&str]) -> std::process::Output {
    match Command::new(tool).args(args).output() {
        Ok(output) => output,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            panic!("`{tool}` not found: install the Debian package `ffmpeg`")
        }
        Err(e) => panic!("running {tool}: {e}"),
    }
}

/// Runs `ffmpeg -v error -y ARGS` and panics with its stderr on failure.
pub(crate) fn ffmpeg(args: &[&str]) {
    let all: Vec<&str> = ["-v", "error", "-y", "-nostdin"]
        .into_iter()
        .chain(args.iter().copied())
        .collect();
    let output = run_ffmpeg_tool("ffmpeg", &all);
    assert!(
        output.status.success(),
        "ffmpeg {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Writes `dir/out.flv`: 4 s of 320x240 25 fps libx264 (GOP 25, B-frames) and
/// AAC (a sine, 44.1 kHz mono), as ffmpeg's FLV muxer produces them.
pub(crate) fn make_h264_aac_flv(dir: &Path) -> PathBuf {
    let path = dir.join("out.flv");
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc=size=320x240:rate=25",
        "-f",
        "lavfi",
        "-i",
        "sine",
        "-c:v",
        "libx264",
        "-g",
        "25",
        "-c:a",
        "aac",
        "-t",
        "4",
        "-f",
        "flv",
        path.to_str().unwrap(),
    ]);
    path
}

/// Reads an FLV file into tracks (from the sequence headers) and samples in file
/// order through the FLV adapter and the track learner: dts = timestamp × 90,
/// pts = (timestamp + composition time) × 90, keyframe from the video tag's frame
/// type. Script tags are skipped.
pub(crate) fn read_flv(path: impl AsRef<Path>) -> (Tracks, Vec<Sample>) {
    let mut tracks = Tracks::default();
    let mut samples = Vec::new();
    for (tag_type, timestamp_ms, body) in flv_tags(path) {
        let dts = i64::from(timestamp_ms) * 90;
        let (frame, kind) = match tag_type {
            8 => (audio_frame(&body, dts).unwrap(), TrackKind::Audio),
            9 => (video_frame(&body, dts).unwrap(), TrackKind::Video),
            _ => continue,
        };
        if frame.config {
            match track_info::learn(&frame).expect("a codec configuration") {
                TrackInfo::Video(info) => {
                    if let Some(track) = info.into_track() {
                        tracks.video = Some(track);
                    }
                }
                TrackInfo::Audio(info) => tracks.audio = info.decoder,
            }
        } else if frame.is_sample() {
            samples.push(Sample {
                kind,
                dts: frame.dts,
                pts: frame.pts,
                keyframe: frame.keyframe,
                data: frame.payload,
            });
        }
    }
    (tracks, samples)
}

/// Every tag of an FLV file in file order: (tag type, timestamp ms, body as a slice
/// of the file).
pub(crate) fn flv_tags(path: impl AsRef<Path>) -> Vec<(u8, u32, Bytes)> {
    let data = Bytes::from(std::fs::read(path.as_ref()).unwrap());
    assert_eq!(&data[..3], b"FLV", "not an FLV file");
    let header_size = u32::from_be_bytes(data[5..9].try_into().unwrap()) as usize;
    let mut pos = header_size + 4; // PreviousTagSize0
    let mut tags = Vec::new();
    while pos + 11 <= data.len() {
        let size = u24(&data[pos + 1..pos + 4]) as usize;
        let timestamp_ms = u24(&data[pos + 4..pos + 7]) | (u32::from(data[pos + 7]) << 24);
        tags.push((
            data[pos] & 0x1f,
            timestamp_ms,
            data.slice(pos + 11..pos + 11 + size),
        ));
        pos += 11 + size + 4; // tag header, body, PreviousTagSize
    }
    tags
}

fn u24(b: &[u8]) -> u32 {
    (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2])
}

#[test]
fn reads_ffmpeg_flv() {
    let dir = TempDir::new("read-flv");
    let (tracks, samples) = read_flv(make_h264_aac_flv(dir.path()));
    let video = tracks.video.as_ref().unwrap();
    assert_eq!((video.width, video.height), (320, 240));
    assert!(matches!(video.config, VideoConfig::H264 { .. }));
    assert_eq!(
        tracks.audio.as_ref().unwrap().config.sampling_frequency(),
        44_100
    );
    let video: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.kind == TrackKind::Video)
        .collect();
    assert_eq!(video.len(), 100);
    assert!(video[0].keyframe && video[25].keyframe && !video[1].keyframe);
    assert!(video.iter().any(|s| s.pts != s.dts), "B-frames expected");
    assert!(samples.iter().any(|s| s.kind == TrackKind::Audio));
}
