//! One `trak` of an MP4 file: its codec configuration and its sample table (`stts`,
//! `ctts`, `stss`, `stsc`, `stsz`, `stco`/`co64`) expanded into [`SampleRef`]s with
//! 90 kHz times. Every count and offset is checked before it sizes anything: a corrupt
//! table is an error, never a huge allocation or a read past the file.

use super::{MAX_SAMPLE_BYTES, MAX_SAMPLES, Mp4ReadError, SampleRef, TrackConfig};
use crate::frame::{CLOCK_HZ, Codec, Track};
use bytes::Bytes;
use mp4_atom::{Atom, Codec as Entry, StszSamples, Trak};

/// The codec of a video or sound track; `None` for other tracks (text, data, hints).
pub(super) fn track_config(trak: &Trak) -> Result<Option<TrackConfig>, Mp4ReadError> {
    let track = match &trak.mdia.hdlr.handler.to_string()[..] {
        "vide" => Track::Video,
        "soun" => Track::Audio,
        _ => return Ok(None),
    };
    let entry = trak
        .mdia
        .minf
        .stbl
        .stsd
        .codecs
        .first()
        .ok_or_else(|| Mp4ReadError::corrupt("a track without a sample description"))?;
    let mut record = Vec::new();
    let codec = match entry {
        Entry::Avc1(avc1) => {
            avc1.avcc.encode_body(&mut record)?;
            Codec::H264
        }
        Entry::Avc3(avc3) => {
            avc3.avcc.encode_body(&mut record)?;
            Codec::H264
        }
        Entry::Hvc1(hvc1) => {
            hvc1.hvcc.encode_body(&mut record)?;
            Codec::H265
        }
        Entry::Hev1(hev1) => {
            hev1.hvcc.encode_body(&mut record)?;
            Codec::H265
        }
        Entry::Mp4a(mp4a) => {
            let config = &mp4a.esds.es_desc.dec_config;
            // 0x40: MPEG-4 audio (AAC); 0x66..=0x68: MPEG-2 AAC profiles.
            if !matches!(config.object_type_indication, 0x40 | 0x66..=0x68) {
                return Err(Mp4ReadError::Unsupported(format!(
                    "mp4a object type 0x{:02x}",
                    config.object_type_indication
                )));
            }
            let specific = config
                .dec_specific
                .as_ref()
                .ok_or_else(|| Mp4ReadError::corrupt("AAC without an AudioSpecificConfig"))?;
            record = if specific.raw.is_empty() {
                let bits = (u16::from(specific.profile) << 11)
                    | (u16::from(specific.freq_index) << 7)
                    | (u16::from(specific.chan_conf) << 3);
                bits.to_be_bytes().to_vec()
            } else {
                specific.raw.clone()
            };
            Codec::Aac
        }
        Entry::Unknown(kind, _) => return Err(Mp4ReadError::Unsupported(kind.to_string())),
        other => {
            let name = format!("{other:?}");
            let name = name.split('(').next().unwrap_or("unknown").to_lowercase();
            return Err(Mp4ReadError::Unsupported(name));
        }
    };
    Ok(Some(TrackConfig {
        track,
        codec,
        record: Bytes::from(record),
    }))
}

impl From<mp4_atom::Error> for Mp4ReadError {
    fn from(error: mp4_atom::Error) -> Self {
        Mp4ReadError::corrupt(error.to_string())
    }
}

fn timescale(trak: &Trak) -> Result<u64, Mp4ReadError> {
    match trak.mdia.mdhd.timescale {
        0 => Err(Mp4ReadError::corrupt("a track with timescale 0")),
        n => Ok(u64::from(n)),
    }
}

/// `ticks` of `scale` in 90 kHz (saturating: a corrupt table gives odd times, never an
/// overflow).
fn to_clock(ticks: i128, scale: u64) -> i64 {
    let clock = ticks.saturating_mul(i128::from(CLOCK_HZ)) / i128::from(scale);
    clock.clamp(i128::from(i64::MIN / 4), i128::from(i64::MAX / 4)) as i64
}

/// The duration of the track's last sample, 90 kHz (0 when unknown).
pub(super) fn last_duration(trak: &Trak) -> i64 {
    let delta = trak
        .mdia
        .minf
        .stbl
        .stts
        .entries
        .last()
        .map_or(0, |e| i64::from(e.sample_delta));
    timescale(trak).map_or(0, |scale| to_clock(i128::from(delta), scale))
}

/// The media time the edit list starts the presentation at (`elst` of ffmpeg's files:
/// the encoder delay of AAC, the reorder delay of B-frames), in track ticks.
fn edit_start(trak: &Trak) -> i64 {
    trak.edts
        .as_ref()
        .and_then(|edts| edts.elst.as_ref())
        .and_then(|elst| elst.entries.iter().find_map(|e| e.media_time))
        .map_or(0, |t| i64::try_from(t).unwrap_or(0))
}

/// The samples of `trak` in decode order, bounds-checked against `file_len`.
pub(super) fn samples(
    trak: &Trak,
    track: Track,
    file_len: u64,
) -> Result<Vec<SampleRef>, Mp4ReadError> {
    let stbl = &trak.mdia.minf.stbl;
    let scale = timescale(trak)?;
    let sizes: Vec<u32> = match &stbl.stsz.samples {
        StszSamples::Identical { count, size } => {
            // Every sample takes at least one byte of the file: a table cannot claim
            // more samples than that (nor size the index by a claim alone).
            if *count as usize > MAX_SAMPLES || u64::from(*count) > file_len {
                return Err(Mp4ReadError::corrupt(format!(
                    "{count} samples in a file of {file_len} bytes"
                )));
            }
            vec![*size; *count as usize]
        }
        StszSamples::Different { sizes } => sizes.clone(),
    };
    let count = sizes.len();
    if count > MAX_SAMPLES {
        return Err(Mp4ReadError::corrupt(format!(
            "more than {MAX_SAMPLES} samples"
        )));
    }
    let timed: u64 = stbl
        .stts
        .entries
        .iter()
        .map(|e| u64::from(e.sample_count))
        .sum();
    if timed != count as u64 {
        return Err(Mp4ReadError::corrupt(format!(
            "stts times {timed} samples, stsz sizes {count}"
        )));
    }
    let offsets = chunk_offsets(trak)?;
    let shift = edit_start(trak);
    let mut out = Vec::with_capacity(count);
    let mut dts: i64 = 0;
    let mut deltas = stbl
        .stts
        .entries
        .iter()
        .flat_map(|e| std::iter::repeat_n(e.sample_delta, e.sample_count as usize));
    let mut composition = stbl.ctts.iter().flat_map(|ctts| {
        ctts.entries
            .iter()
            .flat_map(|e| std::iter::repeat_n(e.sample_offset, e.sample_count as usize))
    });
    let sync = stbl.stss.as_ref().map(|stss| &stss.entries);
    let mut next_sync = 0usize;
    let mut placement = Placement::new(&stbl.stsc.entries, &offsets);
    for (index, size) in sizes.into_iter().enumerate() {
        if size > MAX_SAMPLE_BYTES {
            return Err(Mp4ReadError::corrupt(format!(
                "a sample of {size} bytes is over the limit of {MAX_SAMPLE_BYTES}"
            )));
        }
        let offset = placement
            .next(size)
            .ok_or_else(|| Mp4ReadError::corrupt("stsc/stco place fewer samples than stsz"))?;
        if offset.saturating_add(u64::from(size)) > file_len {
            return Err(Mp4ReadError::corrupt(format!(
                "sample {index} at {offset} runs past the end of the file"
            )));
        }
        let cts = composition.next().unwrap_or(0);
        let keyframe = match sync {
            None => true,
            Some(entries) => {
                // stss lists 1-based sample numbers in increasing order.
                while entries
                    .get(next_sync)
                    .is_some_and(|&n| (n as usize) < index + 1)
                {
                    next_sync += 1;
                }
                entries.get(next_sync) == Some(&((index + 1) as u32))
            }
        };
        // An empty sample has nothing to play; its time still passes.
        if size > 0 {
            out.push(SampleRef {
                track,
                offset,
                size,
                dts: to_clock(i128::from(dts) - i128::from(shift), scale),
                pts: to_clock(i128::from(dts) + i128::from(cts) - i128::from(shift), scale),
                keyframe,
            });
        }
        dts += i64::from(deltas.next().unwrap_or(0));
    }
    Ok(out)
}

fn chunk_offsets(trak: &Trak) -> Result<Vec<u64>, Mp4ReadError> {
    let stbl = &trak.mdia.minf.stbl;
    match (&stbl.stco, &stbl.co64) {
        (Some(stco), _) => Ok(stco.entries.iter().map(|&o| u64::from(o)).collect()),
        (None, Some(co64)) => Ok(co64.entries.clone()),
        (None, None) => Err(Mp4ReadError::corrupt("a track without chunk offsets")),
    }
}

/// Walks `stsc` runs over the chunk offsets: where each next sample lies.
struct Placement<'a> {
    runs: &'a [mp4_atom::StscEntry],
    offsets: &'a [u64],
    run: usize,
    chunk: usize,
    started: bool,
    left_in_chunk: u32,
    position: u64,
}

impl<'a> Placement<'a> {
    fn new(runs: &'a [mp4_atom::StscEntry], offsets: &'a [u64]) -> Self {
        Self {
            runs,
            offsets,
            run: 0,
            chunk: 0,
            started: false,
            left_in_chunk: 0,
            position: 0,
        }
    }

    /// The offset of the next sample (of `size` bytes); `None` past the last chunk.
    fn next(&mut self, size: u32) -> Option<u64> {
        while self.left_in_chunk == 0 {
            if self.started {
                self.chunk += 1;
            }
            self.started = true;
            self.position = *self.offsets.get(self.chunk)?;
            // stsc chunk numbers are 1-based; a run lasts until the next one's first.
            while self
                .runs
                .get(self.run + 1)
                .is_some_and(|next| next.first_chunk as usize <= self.chunk + 1)
            {
                self.run += 1;
            }
            self.left_in_chunk = self.runs.get(self.run)?.samples_per_chunk;
        }
        let at = self.position;
        self.position = self.position.saturating_add(u64::from(size));
        self.left_in_chunk -= 1;
        Some(at)
    }
}
