//! Test support (not an API): archives written from an FLV file the way the recorder
//! writes a live stream, for the tests of the readers (the packager's DVR playback, its
//! end-to-end test, the MP4 export) that need genuinely decodable media on disk.

use super::{ArchiveWriter, SegmentEntry};
use crate::flv_adapter::{audio_frame, video_frame};
use crate::frame::Codec;
use crate::sample::{Sample, TrackKind};
use crate::track_builder::TrackBuilder;
use bytes::Bytes;
use std::io;

/// A stream as it reaches the recorder: configuration frames, learned tracks, samples.
pub struct Recorded {
    pub configs: Vec<(Codec, Bytes)>,
    pub builder: TrackBuilder,
    pub samples: Vec<Sample>,
}

fn invalid(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why.to_owned())
}

/// 6 s of 320x240 25 fps H.264 (a keyframe every second, B-frames) and AAC encoded by
/// ffmpeg (Debian package `ffmpeg`) in `dir`, read as the recorder receives it.
pub fn encoded_stream(dir: &std::path::Path) -> io::Result<Recorded> {
    let path = dir.join("encoded.flv");
    let output = std::process::Command::new("ffmpeg")
        .args(["-v", "error", "-y", "-nostdin", "-f", "lavfi", "-i"])
        .arg("testsrc=size=320x240:rate=25")
        .args(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100"])
        .args([
            "-c:v", "libx264", "-g", "25", "-c:a", "aac", "-t", "6", "-f", "flv",
        ])
        .arg(&path)
        .output()
        .map_err(|e| io::Error::new(e.kind(), format!("ffmpeg (Debian package ffmpeg): {e}")))?;
    if !output.status.success() {
        return Err(invalid(&String::from_utf8_lossy(&output.stderr)));
    }
    read_flv(Bytes::from(std::fs::read(&path)?))
}

/// The frames of an FLV file's bytes, through the FLV adapter and the track builder.
pub fn read_flv(data: Bytes) -> io::Result<Recorded> {
    let header = data
        .get(5..9)
        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .ok_or_else(|| invalid("not an FLV file"))?;
    let mut pos = header + 4;
    let mut recorded = Recorded {
        configs: Vec::new(),
        builder: TrackBuilder::default(),
        samples: Vec::new(),
    };
    while pos + 11 <= data.len() {
        let tag = &data[pos..pos + 11];
        let size = u32::from_be_bytes([0, tag[1], tag[2], tag[3]]) as usize;
        let ms = u32::from_be_bytes([tag[7], tag[4], tag[5], tag[6]]);
        let body = data
            .get(pos + 11..pos + 11 + size)
            .map(|_| data.slice(pos + 11..pos + 11 + size))
            .ok_or_else(|| invalid("truncated FLV tag"))?;
        let dts = i64::from(ms) * 90;
        let frame = match tag[0] & 0x1f {
            8 => Some(audio_frame(&body, dts).map_err(|e| invalid(&e.to_string()))?),
            9 => Some(video_frame(&body, dts).map_err(|e| invalid(&e.to_string()))?),
            _ => None,
        };
        pos += 11 + size + 4;
        let Some(frame) = frame else { continue };
        if frame.config {
            recorded.configs.push((frame.codec, frame.payload.clone()));
        }
        if let Some(sample) = recorded.builder.accept_frame(frame) {
            recorded.samples.push(sample);
        }
    }
    Ok(recorded)
}

/// Writes `recorded` as one period of `period`: segments of `keyframes_per_segment`
/// keyframes each from the first keyframe, wall clock from `start_ms`.
pub fn record_period(
    writer: &mut ArchiveWriter,
    recorded: &Recorded,
    period: u32,
    start_ms: i64,
    keyframes_per_segment: usize,
) -> io::Result<()> {
    let Recorded {
        configs,
        builder,
        samples,
    } = recorded;
    let is_key = |s: &Sample| s.kind == TrackKind::Video && s.keyframe;
    let first_key = samples
        .iter()
        .position(is_key)
        .ok_or_else(|| invalid("no keyframe"))?;
    let samples = &samples[first_key..];
    let base = samples[0].dts;
    let mut cuts: Vec<usize> = samples
        .iter()
        .enumerate()
        .filter(|(_, s)| is_key(s))
        .map(|(i, _)| i)
        .step_by(keyframes_per_segment.max(1))
        .collect();
    cuts.push(samples.len());
    let codecs = crate::fmp4::codecs(&builder.tracks);
    let (vcodec, acodec) = codecs.split_once(',').unwrap_or((&codecs, ""));
    let (width, height) = builder
        .tracks
        .video
        .as_ref()
        .map_or((0, 0), |v| (v.width, v.height));
    for pair in cuts.windows(2) {
        let part = &samples[pair[0]..pair[1]];
        let mut segment = writer.begin(configs)?;
        for sample in part {
            segment.push(sample)?;
        }
        let start_dts = part[0].dts;
        let last_dts = part.last().map_or(start_dts, |s| s.dts);
        let end_dts = samples.get(pair[1]).map_or(last_dts + 3600, |s| s.dts);
        let facts = SegmentEntry {
            seq: 0,
            period,
            start_ms: start_ms + (start_dts - base) / 90,
            start_dts,
            duration: (end_dts - start_dts) as u64,
            bytes: 0,
            samples: 0,
            width,
            height,
            vcodec: vcodec.to_owned(),
            acodec: acodec.to_owned(),
            scte35: Vec::new(),
        };
        writer.commit(segment, facts)?;
    }
    Ok(())
}
