//! Media segments: one `moof` (an `mfhd`, then a `traf` per track with samples: `tfhd`,
//! `tfdt`, one `trun`) and one `mdat`; or, per track, a fragment of that track alone
//! ([`Fragmenter::fragment_track`]).

use bytes::Bytes;
use mp4_atom::{
    Atom, Encode, Header, Mdat, Mfhd, Moof, Tfdt, Tfhd, Traf, Trun, TrunEntry, TrunSamples,
};

use super::init::audio_timescale;
use super::{AUDIO_TRACK_ID, Fmp4Error, VIDEO_TRACK_ID};
use crate::sample::{Sample, TIMESCALE, TrackKind, Tracks};

/// `sample_depends_on` = 2 (an I-frame), `sample_is_non_sync_sample` = 0.
const SYNC_SAMPLE: u32 = 0x0200_0000;
/// `sample_depends_on` = 1, `sample_is_non_sync_sample` = 1.
const NON_SYNC_SAMPLE: u32 = 0x0101_0000;
/// Duration of a lone video sample with no later one to go by: 1/30 s.
const DEFAULT_VIDEO_DURATION: i64 = 3000;
/// Audio whose timestamps and sample count part by more than 1/`RESYNC_DIVISOR` s (a
/// gap in the encoder's output, a jump in its timestamps) starts again from its
/// timestamp; smaller differences are timestamp rounding (RTMP's milliseconds).
const RESYNC_DIVISOR: i64 = 10;

/// Writes the media segments of one stream, numbering them from 1 (`mfhd`).
#[derive(Debug, Clone)]
pub struct Fragmenter {
    sequence_number: u32,
    /// Where the audio track's next fragment starts (audio timescale): the previous
    /// one's start plus its sample count, so that fragments follow each other exactly
    /// (a DASH `SegmentTimeline` needs each start >= the previous start + duration).
    audio_next: Option<i64>,
}

impl Default for Fragmenter {
    fn default() -> Self {
        Self::new()
    }
}

/// The samples of one track in a segment, ready for its `traf`.
struct Run<'a> {
    track_id: u32,
    base_media_decode_time: u64,
    entries: Vec<TrunEntry>,
    /// Flags every sample shares, put in `tfhd` instead of the `trun`.
    default_flags: Option<u32>,
    data: Vec<&'a Bytes>,
    /// Audio: where the run ends (its start plus its sample count).
    audio_end: Option<i64>,
}

impl Fragmenter {
    pub fn new() -> Self {
        Self {
            sequence_number: 1,
            audio_next: None,
        }
    }

    /// The `mfhd` sequence number the next segment gets.
    pub fn sequence_number(&self) -> u32 {
        self.sequence_number
    }

    /// Appends one media segment to `out`: a `moof` with a `traf` per track that has
    /// samples here (video, then audio; a track without samples is left out), then one
    /// `mdat` holding the video then the audio data.
    ///
    /// Per track, in `samples` order (interleaving of the kinds does not matter; decode
    /// times must not decrease): video: `tfdt` = the first sample's dts (90 kHz), sample
    /// durations = dts deltas (the last one `next_video_dts` minus its dts, or the
    /// previous duration when that is `None`, or 1/30 s for a lone sample); audio: one
    /// frame (1024 AAC, 1152/576 MP3 samples) per sample, `tfdt` = where the previous audio
    /// fragment ended (its dts, rounded to the sample rate, for the first fragment or
    /// after a drift of over 0.1 s: `next_audio_dts` is not needed);
    /// composition offsets (pts - dts, version 1 signed; left out when all are 0) and
    /// sample flags (video: sync on keyframes, non-sync otherwise; audio: all sync, via
    /// `tfhd`). `next_*_dts` is the dts of the track's first sample in the next
    /// segment (90 kHz), which keeps consecutive segments gapless.
    ///
    /// On error nothing is appended and the sequence number is not used up.
    pub fn fragment(
        &mut self,
        tracks: &Tracks,
        samples: &[Sample],
        next_video_dts: Option<i64>,
        next_audio_dts: Option<i64>,
        out: &mut Vec<u8>,
    ) -> Result<(), Fmp4Error> {
        let mut runs = Vec::new();
        for (kind, next_dts) in [
            (TrackKind::Video, next_video_dts),
            (TrackKind::Audio, next_audio_dts),
        ] {
            let track: Vec<&Sample> = samples.iter().filter(|s| s.kind == kind).collect();
            if track.is_empty() {
                continue;
            }
            let clock = track_clock(tracks, kind)?;
            runs.push(run(kind, clock, &track, next_dts, self.audio_next)?);
        }
        if runs.is_empty() {
            return Err(Fmp4Error::NoSamples);
        }

        let start = out.len();
        let written = self.write(&runs, out);
        if written.is_err() {
            out.truncate(start);
        } else {
            self.sequence_number = self.sequence_number.wrapping_add(1);
            if let Some(next) = runs.iter().find_map(|r| r.audio_end) {
                self.audio_next = Some(next);
            }
        }
        written
    }

    /// Appends one fragment of the samples of `kind` alone (a `moof` with one `traf`,
    /// then its `mdat`: a CMAF fragment) and returns where it lies on the track's
    /// timeline; `Ok(None)`, with nothing appended, when no sample is of that kind.
    /// Timing as in [`Fragmenter::fragment`], `next_dts` standing for the track's
    /// `next_*_dts`. On error nothing is appended and the sequence number is not used up.
    pub fn fragment_track(
        &mut self,
        tracks: &Tracks,
        kind: TrackKind,
        samples: &[Sample],
        next_dts: Option<i64>,
        out: &mut Vec<u8>,
    ) -> Result<Option<TrackSpan>, Fmp4Error> {
        let track: Vec<&Sample> = samples.iter().filter(|s| s.kind == kind).collect();
        if track.is_empty() {
            return Ok(None);
        }
        let clock = track_clock(tracks, kind)?;
        let run = run(kind, clock, &track, next_dts, self.audio_next)?;
        let span = TrackSpan {
            start: run.base_media_decode_time,
            duration: run
                .entries
                .iter()
                .map(|e| u64::from(e.duration.unwrap_or_default()))
                .sum(),
            timescale: clock.timescale,
        };
        let start = out.len();
        match self.write(std::slice::from_ref(&run), out) {
            Ok(()) => {
                self.sequence_number = self.sequence_number.wrapping_add(1);
                if let Some(next) = run.audio_end {
                    self.audio_next = Some(next);
                }
                Ok(Some(span))
            }
            Err(e) => {
                out.truncate(start);
                Err(e)
            }
        }
    }

    fn write(&self, runs: &[Run<'_>], out: &mut Vec<u8>) -> Result<(), Fmp4Error> {
        let mdat_len = runs
            .iter()
            .flat_map(|r| &r.data)
            .try_fold(0usize, |len, d| len.checked_add(d.len()))
            .ok_or(Fmp4Error::TooLarge("mdat"))?;
        // The moof's size does not depend on the offsets: measure it with zeros.
        let moof_len = {
            let mut scratch = Vec::new();
            self.moof(runs, &[0; 2]).encode(&mut scratch)?;
            scratch.len()
        };
        let mdat_header = Header {
            kind: Mdat::KIND,
            size: Some(mdat_len),
        };
        let mut header = Vec::with_capacity(16);
        mdat_header.encode(&mut header)?;

        let mut offsets = [0i32; 2];
        let mut offset = moof_len + header.len();
        for (slot, run) in offsets.iter_mut().zip(runs) {
            *slot = i32::try_from(offset).map_err(|_| Fmp4Error::TooLarge("trun data offset"))?;
            offset += run.data.iter().map(|d| d.len()).sum::<usize>();
        }

        out.reserve(moof_len + header.len() + mdat_len);
        self.moof(runs, &offsets).encode(out)?;
        out.extend_from_slice(&header);
        for data in runs.iter().flat_map(|r| &r.data) {
            out.extend_from_slice(data);
        }
        Ok(())
    }

    fn moof(&self, runs: &[Run<'_>], offsets: &[i32; 2]) -> Moof {
        Moof {
            mfhd: Mfhd {
                sequence_number: self.sequence_number,
            },
            traf: runs
                .iter()
                .zip(offsets)
                .map(|(run, &data_offset)| Traf {
                    tfhd: Tfhd {
                        track_id: run.track_id,
                        default_sample_flags: run.default_flags,
                        default_base_is_moof: true,
                        ..Default::default()
                    },
                    tfdt: Some(Tfdt {
                        base_media_decode_time: run.base_media_decode_time,
                    }),
                    trun: vec![Trun {
                        data_offset: Some(data_offset),
                        samples: TrunSamples::Explicit(run.entries.clone()),
                    }],
                    ..Default::default()
                })
                .collect(),
        }
    }
}

/// Where one track's fragment lies on the track's own timeline (what a DASH
/// `SegmentTimeline` lists): its `tfdt` and the sum of its sample durations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrackSpan {
    pub start: u64,
    pub duration: u64,
    /// Ticks per second of the track (90000 for video, the sample rate for audio).
    pub timescale: u32,
}

/// A track's id and clock.
#[derive(Debug, Clone, Copy)]
struct TrackClock {
    track_id: u32,
    /// Ticks per second (90000 for video, the sample rate for audio).
    timescale: u32,
    /// Audio: samples per frame (1024 AAC, 1152 or 576 MP3). Every audio sample lasts
    /// this long in the track's timescale, whatever its rounded container timestamp says.
    audio_frame: i64,
}

fn track_clock(tracks: &Tracks, kind: TrackKind) -> Result<TrackClock, Fmp4Error> {
    match kind {
        TrackKind::Video => {
            tracks.video.as_ref().ok_or(Fmp4Error::MissingTrack(kind))?;
            Ok(TrackClock {
                track_id: VIDEO_TRACK_ID,
                timescale: TIMESCALE,
                audio_frame: 0,
            })
        }
        TrackKind::Audio => {
            let audio = tracks.audio.as_ref().ok_or(Fmp4Error::MissingTrack(kind))?;
            Ok(TrackClock {
                track_id: AUDIO_TRACK_ID,
                timescale: audio_timescale(&audio.config)?,
                audio_frame: i64::from(audio.config.frame_samples()),
            })
        }
    }
}

/// Converts a 90 kHz time to `timescale`, rounding to the nearest tick.
fn rescale(time: i64, timescale: u32) -> Result<i64, Fmp4Error> {
    if timescale == TIMESCALE {
        return Ok(time);
    }
    let half = i128::from(TIMESCALE / 2);
    let scaled = (i128::from(time) * i128::from(timescale) + half).div_euclid(TIMESCALE.into());
    i64::try_from(scaled).map_err(|_| Fmp4Error::Timestamp("time out of range"))
}

/// Where an audio run whose first sample's dts is `first` (audio timescale) starts:
/// where the previous one ended, unless the two differ by more than rounding.
fn audio_start(first: i64, previous_end: Option<i64>, clock: TrackClock) -> i64 {
    let tolerance = (i64::from(clock.timescale) / RESYNC_DIVISOR).max(clock.audio_frame);
    match previous_end {
        Some(end) if first.abs_diff(end) <= tolerance.unsigned_abs() => end,
        _ => first,
    }
}

fn run<'a>(
    kind: TrackKind,
    clock: TrackClock,
    samples: &[&'a Sample],
    next_dts: Option<i64>,
    audio_next: Option<i64>,
) -> Result<Run<'a>, Fmp4Error> {
    let TrackClock {
        track_id,
        timescale,
        audio_frame,
    } = clock;
    let times = samples
        .iter()
        .map(|s| rescale(s.dts, timescale))
        .collect::<Result<Vec<_>, _>>()?;
    let next = next_dts.map(|t| rescale(t, timescale)).transpose()?;
    let first = times.first().copied().unwrap_or_default();
    let first = match kind {
        TrackKind::Video => first,
        TrackKind::Audio => audio_start(first, audio_next, clock),
    };
    let base_media_decode_time =
        u64::try_from(first).map_err(|_| Fmp4Error::Timestamp("negative decode time"))?;

    let mut entries = Vec::with_capacity(samples.len());
    let mut previous = None;
    for (i, (sample, &dts)) in samples.iter().zip(&times).enumerate() {
        let duration = match (kind, times.get(i + 1).copied().or(next), previous) {
            (TrackKind::Audio, _, _) => audio_frame,
            (TrackKind::Video, Some(later), _) => later
                .checked_sub(dts)
                .ok_or(Fmp4Error::Timestamp("time out of range"))?,
            (TrackKind::Video, None, Some(previous)) => previous,
            (TrackKind::Video, None, None) => DEFAULT_VIDEO_DURATION,
        };
        if duration < 0 {
            return Err(Fmp4Error::Timestamp("decreasing decode time"));
        }
        previous = Some(duration);
        let cts = rescale(sample.pts, timescale)?
            .checked_sub(dts)
            .and_then(|cts| i32::try_from(cts).ok())
            .ok_or(Fmp4Error::Timestamp("composition offset out of range"))?;
        entries.push(TrunEntry {
            duration: Some(
                u32::try_from(duration)
                    .map_err(|_| Fmp4Error::Timestamp("sample duration out of range"))?,
            ),
            size: Some(
                u32::try_from(sample.data.len()).map_err(|_| Fmp4Error::TooLarge("sample"))?,
            ),
            flags: match kind {
                TrackKind::Video if sample.keyframe => Some(SYNC_SAMPLE),
                TrackKind::Video => Some(NON_SYNC_SAMPLE),
                TrackKind::Audio => None,
            },
            cts: Some(i64::from(cts)),
        });
    }
    if entries.iter().all(|e| e.cts == Some(0)) {
        for entry in &mut entries {
            entry.cts = None;
        }
    }
    Ok(Run {
        track_id,
        base_media_decode_time,
        entries,
        default_flags: (kind == TrackKind::Audio).then_some(SYNC_SAMPLE),
        data: samples.iter().map(|s| &s.data).collect(),
        audio_end: (kind == TrackKind::Audio).then(|| {
            let frames = i64::try_from(samples.len()).unwrap_or(i64::MAX);
            first.saturating_add(frames.saturating_mul(audio_frame))
        }),
    })
}
