//! Cutting the segment being built into LL-HLS parts as its samples arrive: a part ends
//! at the first video frame (any sample, without video) that would take it past the part
//! target, and is muxed as one CMAF chunk (a `moof` + `mdat` per track, video then
//! audio) on the same timeline (`tfdt`) as the whole segment. The segment's last part
//! ends where the segment is cut.

use bytes::Bytes;
use strom_media::fmp4::Fragmenter;
use strom_media::sample::{Sample, TrackKind, Tracks};

/// A part ready for the playlist.
#[derive(Debug, Clone)]
pub struct MuxedPart {
    pub bytes: Bytes,
    /// dts of the part's first sample, 90 kHz.
    pub start: i64,
    pub duration_secs: f64,
    pub independent: bool,
}

#[derive(Debug)]
pub struct PartCutter {
    /// The part target, 90 kHz.
    target: i64,
    samples: Vec<Sample>,
    /// dts of the part's first sample.
    start: Option<i64>,
    /// The latest video (audio-only: audio) sample's dts and the intervals before it,
    /// latest first.
    last: Option<i64>,
    intervals: [Option<i64>; 3],
    fragmenter: Fragmenter,
}

impl PartCutter {
    pub fn new(target: i64) -> Self {
        Self {
            target: target.max(1),
            samples: Vec::new(),
            start: None,
            last: None,
            intervals: [None; 3],
            fragmenter: Fragmenter::new(),
        }
    }

    /// Adds a sample of the segment being built; returns the part that ends where it
    /// begins, if the part target is reached.
    pub fn push(&mut self, tracks: &Tracks, sample: &Sample) -> Option<MuxedPart> {
        let has_video = tracks.video.is_some();
        let paced = !has_video || sample.kind == TrackKind::Video;
        let mut cut = None;
        if paced {
            if let Some(last) = self.last {
                self.intervals.rotate_right(1);
                self.intervals[0] = Some(sample.dts.saturating_sub(last)).filter(|i| *i > 0);
            }
            self.last = Some(sample.dts);
            // The next frame is expected after the shortest of the latest intervals:
            // millisecond timestamps (RTMP) make 30 fps 33, 33, 34 ms, and the longest
            // would end every segment's first part a frame early, leaving a one-frame
            // part at the segment's end.
            let interval = self.intervals.iter().flatten().min().copied();
            let next_would_end = sample.dts.saturating_add(interval.unwrap_or_default());
            if let Some(start) = self.start
                && next_would_end.saturating_sub(start) > self.target
            {
                cut = self.finish(tracks, sample.dts);
            }
        }
        if self.start.is_none() {
            self.start = Some(sample.dts);
        }
        self.samples.push(sample.clone());
        cut
    }

    /// Ends the part being built at `end` (90 kHz: where the segment is cut, or where
    /// the next part starts).
    pub fn finish(&mut self, tracks: &Tracks, end: i64) -> Option<MuxedPart> {
        let start = self.start.take()?;
        let samples = std::mem::take(&mut self.samples);
        let has_video = tracks.video.is_some();
        let independent = !has_video
            || samples
                .first()
                .is_some_and(|s| s.kind == TrackKind::Video && s.keyframe);
        let mut out = Vec::with_capacity(samples.iter().map(|s| s.data.len()).sum::<usize>() + 512);
        for (kind, next) in [
            (TrackKind::Video, has_video.then_some(end)),
            (TrackKind::Audio, None),
        ] {
            if let Err(e) = self
                .fragmenter
                .fragment_track(tracks, kind, &samples, next, &mut out)
            {
                tracing::warn!(error = %e, ?kind, "LL-HLS part not muxed");
                return None;
            }
        }
        if out.is_empty() {
            return None;
        }
        Some(MuxedPart {
            bytes: Bytes::from(out),
            start,
            duration_secs: end.saturating_sub(start).max(0) as f64 / 90_000.0,
            independent,
        })
    }

    /// Forgets the part being built (its segment was abandoned).
    pub fn clear(&mut self) {
        self.samples.clear();
        self.start = None;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use strom_media::aac::AacConfig;
    use strom_media::sample::AudioTrack;

    /// AAC-LC, 48 kHz, stereo.
    fn audio_only() -> Tracks {
        let record = Bytes::from_static(&[0x11, 0x90]);
        Tracks {
            video: None,
            audio: Some(AudioTrack {
                config: strom_media::sample::AudioConfig::Aac(AacConfig::parse(&record).unwrap()),
                record,
            }),
        }
    }

    fn audio(dts: i64) -> Sample {
        Sample {
            kind: TrackKind::Audio,
            dts,
            pts: dts,
            keyframe: false,
            data: Bytes::from_static(&[0x21, 0x10, 0x04]),
        }
    }

    /// 1920-tick AAC frames (48 kHz) under a 0.5 s target: parts of whole frames, none
    /// longer than the target, each a CMAF chunk.
    #[test]
    fn parts_stay_within_the_target() {
        let tracks = audio_only();
        let mut cutter = PartCutter::new(45_000);
        let parts: Vec<_> = (0..100)
            .filter_map(|i| cutter.push(&tracks, &audio(i * 1_920)))
            .collect();
        assert!(parts.len() >= 3);
        for part in &parts {
            assert!(part.duration_secs <= 0.5 && part.duration_secs > 0.45);
            assert!(part.independent);
            assert_eq!(&part.bytes[4..8], b"moof");
        }
        let last = cutter.finish(&tracks, 100 * 1_920).unwrap();
        assert!(last.duration_secs > 0.0);
        assert!(cutter.finish(&tracks, 0).is_none());
    }

    /// 30 fps with millisecond timestamps (33, 33, 34 ms) and 2 s segments under a 0.5 s
    /// part target: four parts of 15 frames each, no one-frame part at the end.
    #[test]
    fn millisecond_jitter_leaves_no_tail_part() {
        let tracks = audio_only();
        let mut cutter = PartCutter::new(45_000);
        let mut parts = Vec::new();
        for frame in 0..60i64 {
            let dts = ((frame * 1_000 + 15) / 30) * 90; // rounded to milliseconds
            parts.extend(cutter.push(&tracks, &audio(dts)));
        }
        parts.extend(cutter.finish(&tracks, 180_000));
        let durations: Vec<f64> = parts.iter().map(|p| p.duration_secs).collect();
        assert_eq!(durations, vec![0.5; 4]);
    }
}
