//! The sample tables of one track of a progressive MP4: what [`TrackSamples`] gathers
//! while the `mdat` is laid out, turned into `stts`, `ctts`, `stss`, `stsz`, `stsc` and
//! the chunk offsets (relative to the `mdat` body until the header size is known).

use mp4_atom::{Ctts, CttsEntry, Stsc, StscEntry, Stss, Stsz, StszSamples, Stts, SttsEntry};

use super::{ExportError, ExportSample};
use crate::sample::TIMESCALE;

/// One track's samples in `mdat` order, as the layout meets them.
#[derive(Debug, Default)]
pub(super) struct TrackSamples {
    dts: Vec<i64>,
    pts: Vec<i64>,
    sizes: Vec<u32>,
    /// 1-based numbers of the random access points (`stss`).
    sync: Vec<u32>,
    chunks: Vec<Chunk>,
}

#[derive(Debug, Clone, Copy)]
struct Chunk {
    /// Offset in the `mdat` body.
    offset: u64,
    samples: u32,
}

impl TrackSamples {
    pub(super) fn is_empty(&self) -> bool {
        self.dts.is_empty()
    }

    pub(super) fn first_pts(&self) -> Option<i64> {
        self.pts.iter().copied().min()
    }

    /// Adds `sample`, whose bytes start at `mdat_offset` in the `mdat` body. It opens a
    /// new chunk unless the previous sample of the `mdat` belonged to this track.
    pub(super) fn push(&mut self, sample: &ExportSample, mdat_offset: u64, continues_chunk: bool) {
        self.dts.push(sample.dts);
        self.pts.push(sample.pts);
        self.sizes.push(sample.size);
        if sample.keyframe {
            // Fits: the caller caps an export at MAX_EXPORT_SAMPLES.
            self.sync
                .push(u32::try_from(self.dts.len()).unwrap_or(u32::MAX));
        }
        match self.chunks.last_mut() {
            Some(chunk) if continues_chunk => chunk.samples += 1,
            _ => self.chunks.push(Chunk {
                offset: mdat_offset,
                samples: 1,
            }),
        }
    }
}

/// A track's sample tables and times, in the track's timescale.
#[derive(Debug)]
pub(super) struct Tables {
    pub stts: Stts,
    pub ctts: Option<Ctts>,
    pub stss: Option<Stss>,
    pub stsz: Stsz,
    pub stsc: Stsc,
    /// Chunk offsets relative to the start of the `mdat` body.
    pub chunk_offsets: Vec<u64>,
    /// Sum of the sample durations (`mdhd`).
    pub media_duration: u64,
    /// Decode time of the first sample, which is media time 0.
    pub first_dts: i64,
    /// Presentation time of the earliest presented sample, in media time.
    pub first_presented: i64,
    /// End of the last presented sample, in media time.
    pub media_end: i64,
}

/// Builds the tables of `samples` in `timescale`. `default_duration` is the duration of
/// a lone sample (no neighbour to measure it by). Random access points go to `stss`
/// when `sync_table` is set (video); without `stss` every sample is one (audio).
pub(super) fn build(
    samples: &TrackSamples,
    timescale: u32,
    default_duration: u32,
    sync_table: bool,
) -> Result<Tables, ExportError> {
    let dts = samples
        .dts
        .iter()
        .map(|&t| rescale(t, timescale))
        .collect::<Vec<_>>();
    let first_dts = *dts.first().ok_or(ExportError::NoSamples)?;

    let mut stts: Vec<SttsEntry> = Vec::new();
    let mut ctts: Vec<CttsEntry> = Vec::new();
    let mut previous_duration = None;
    let mut media_duration = 0u64;
    let mut first_presented = i64::MAX;
    let mut media_end = i64::MIN;
    for (i, (&decode, &presentation)) in dts.iter().zip(&samples.pts).enumerate() {
        let duration = match dts.get(i + 1) {
            Some(&next) => u32::try_from(i128::from(next) - i128::from(decode)).map_err(|_| {
                if next < decode {
                    ExportError::Timestamp("decode times go backwards")
                } else {
                    ExportError::Timestamp("gap between samples too long")
                }
            })?,
            None => previous_duration.unwrap_or(default_duration),
        };
        previous_duration = Some(duration);
        media_duration += u64::from(duration);
        match stts.last_mut() {
            Some(entry) if entry.sample_delta == duration => entry.sample_count += 1,
            _ => stts.push(SttsEntry {
                sample_count: 1,
                sample_delta: duration,
            }),
        }

        let presentation = rescale(presentation, timescale);
        let offset = i32::try_from(i128::from(presentation) - i128::from(decode))
            .map_err(|_| ExportError::Timestamp("composition offset out of range"))?;
        match ctts.last_mut() {
            Some(entry) if entry.sample_offset == i64::from(offset) => entry.sample_count += 1,
            _ => ctts.push(CttsEntry {
                sample_count: 1,
                sample_offset: offset.into(),
            }),
        }
        // Offsets within i32 of decode times that are at most u32 apart: i128 cannot
        // overflow, and the end of a real recording fits an i64 again.
        let start = i128::from(presentation) - i128::from(first_dts);
        let end = start + i128::from(duration);
        first_presented = first_presented.min(i64::try_from(start).unwrap_or(i64::MAX));
        media_end = media_end.max(i64::try_from(end).unwrap_or(i64::MAX));
    }
    let all_offsets_zero = ctts.iter().all(|entry| entry.sample_offset == 0);

    let sizes = &samples.sizes;
    let stsz = match sizes.first() {
        Some(&size) if sizes.iter().all(|&s| s == size) => StszSamples::Identical {
            count: u32::try_from(sizes.len()).unwrap_or(u32::MAX),
            size,
        },
        _ => StszSamples::Different {
            sizes: sizes.clone(),
        },
    };

    let mut stsc: Vec<StscEntry> = Vec::new();
    for (i, chunk) in samples.chunks.iter().enumerate() {
        if stsc
            .last()
            .is_none_or(|entry| entry.samples_per_chunk != chunk.samples)
        {
            stsc.push(StscEntry {
                first_chunk: u32::try_from(i + 1).unwrap_or(u32::MAX),
                samples_per_chunk: chunk.samples,
                sample_description_index: 1,
            });
        }
    }

    Ok(Tables {
        stts: Stts { entries: stts },
        ctts: (!all_offsets_zero).then_some(Ctts { entries: ctts }),
        stss: sync_table.then(|| Stss {
            entries: samples.sync.clone(),
        }),
        stsz: Stsz { samples: stsz },
        stsc: Stsc { entries: stsc },
        chunk_offsets: samples.chunks.iter().map(|chunk| chunk.offset).collect(),
        media_duration,
        first_dts,
        first_presented,
        media_end,
    })
}

/// Converts a 90 kHz time to `timescale`, rounding to the nearest tick.
pub(super) fn rescale(time: i64, timescale: u32) -> i64 {
    if timescale == TIMESCALE {
        return time;
    }
    let half = i128::from(TIMESCALE / 2);
    let scaled = (i128::from(time) * i128::from(timescale) + half).div_euclid(TIMESCALE.into());
    // |time| * timescale / 90000 is below |time| for any timescale under 90 kHz and at
    // most ~2.2 |time| for the highest AAC rate, so this only saturates on absurd input.
    i64::try_from(scaled).unwrap_or(if scaled < 0 { i64::MIN } else { i64::MAX })
}
