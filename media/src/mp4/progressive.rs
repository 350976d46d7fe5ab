//! [`plan`]: the layout of a progressive MP4 (`ftyp`, `moov`, `mdat`) over samples that
//! stay in their source files.
//!
//! Times: the movie timescale is 1000 (`mvhd`, `tkhd`, `elst` segment durations); each
//! track keeps its own (90 kHz video, the sample rate for audio), with media time 0 at its
//! first sample's decode time. Playback begins at `play_from` through an edit list per
//! track: an empty edit while a track has not started yet, then the media from the
//! media time presented at `play_from` (or at the track's start) to its end. The caller
//! starts the video at the keyframe at or before `play_from`; the frames between the two
//! are decoded but not shown.

use bytes::{BufMut, Bytes, BytesMut};
use mp4_atom::{Co64, Edts, Elst, ElstEntry, Encode, FourCC, Ftyp, Moov, Mvhd, Stco, Trak};

use super::tables::{self, Tables, TrackSamples};
use super::{ExportError, ExportSample, MAX_EXPORT_SAMPLES};
use crate::fmp4::init::{audio_timescale, audio_trak, video_trak};
use crate::fmp4::{AUDIO_TRACK_ID, VIDEO_TRACK_ID};
use crate::sample::{TIMESCALE, TrackKind, Tracks, VideoConfig};

/// Timescale of `mvhd`, `tkhd` durations and edit list segment durations.
const MOVIE_TIMESCALE: u32 = 1000;
/// Duration of a lone video sample, 90 kHz (1/30 s).
const LONE_VIDEO_DURATION: u32 = TIMESCALE / 30;

/// A progressive MP4 as a virtual file: [`header`](Self::header) then the
/// [`pieces`](Self::pieces) in order, [`total_len`](Self::total_len) bytes in all.
#[derive(Debug, Clone)]
pub struct Mp4Plan {
    /// `ftyp`, `moov` and the `mdat` box header.
    pub header: Bytes,
    /// The `mdat` body: runs of source bytes, contiguous runs coalesced.
    pub pieces: Vec<Piece>,
    /// Length of the whole file.
    pub total_len: u64,
    /// End of each piece relative to the start of the `mdat` body, for range lookups.
    pub(super) piece_ends: Vec<u64>,
}

/// `len` bytes of source file `file` from `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    pub file: u32,
    pub offset: u64,
    pub len: u64,
}

/// Lays out a progressive MP4 of `samples` (in source-file order; the `mdat` keeps it)
/// with the codec configurations of `tracks`, presented from `play_from` (90 kHz pts;
/// `None`: the first video sample's, or the first audio sample's without video).
pub fn plan(
    tracks: &Tracks,
    samples: &[ExportSample],
    play_from: Option<i64>,
) -> Result<Mp4Plan, ExportError> {
    if samples.len() > MAX_EXPORT_SAMPLES {
        return Err(ExportError::TooManySamples(samples.len()));
    }
    let mut video = TrackSamples::default();
    let mut audio = TrackSamples::default();
    let mut pieces: Vec<Piece> = Vec::new();
    let mut piece_ends: Vec<u64> = Vec::new();
    let mut mdat_len = 0u64;
    let mut previous_kind = None;
    for sample in samples {
        let track = match sample.kind {
            TrackKind::Video if tracks.video.is_some() => &mut video,
            TrackKind::Audio if tracks.audio.is_some() => &mut audio,
            kind => return Err(ExportError::MissingTrack(kind)),
        };
        track.push(sample, mdat_len, previous_kind == Some(sample.kind));
        previous_kind = Some(sample.kind);
        let len = u64::from(sample.size);
        mdat_len += len;
        match (pieces.last_mut(), piece_ends.last_mut()) {
            (Some(piece), Some(end))
                if piece.file == sample.file
                    && piece.offset.checked_add(piece.len) == Some(sample.offset) =>
            {
                piece.len += len;
                *end = mdat_len;
            }
            _ if len == 0 => {}
            _ => {
                pieces.push(Piece {
                    file: sample.file,
                    offset: sample.offset,
                    len,
                });
                piece_ends.push(mdat_len);
            }
        }
    }

    let play_from = match play_from.or(video.first_pts()).or(audio.first_pts()) {
        Some(time) => time,
        None => return Err(ExportError::NoSamples),
    };
    let mut traks = Vec::new();
    if let (Some(track), false) = (&tracks.video, video.is_empty()) {
        let trak = video_trak(track)?;
        let tables = tables::build(&video, TIMESCALE, LONE_VIDEO_DURATION, true)?;
        traks.extend(presented(trak, TIMESCALE, tables, play_from)?);
    }
    if let (Some(track), false) = (&tracks.audio, audio.is_empty()) {
        let timescale = audio_timescale(&track.config)?;
        let trak = audio_trak(track)?;
        let tables = tables::build(&audio, timescale, track.config.frame_samples(), false)?;
        traks.extend(presented(trak, timescale, tables, play_from)?);
    }
    if traks.is_empty() {
        return Err(ExportError::NoSamples);
    }

    let header = header(tracks, traks, mdat_len)?;
    Ok(Mp4Plan {
        total_len: header.len() as u64 + mdat_len,
        header,
        pieces,
        piece_ends,
    })
}

/// A track with its tables, the chunk offsets relative to the `mdat` body.
struct PlannedTrak {
    trak: Trak,
    chunk_offsets: Vec<u64>,
}

/// `trak` with its sample tables, durations and the edit list that starts it at
/// `play_from`; `None` when nothing of it is presented from then on.
fn presented(
    mut trak: Trak,
    timescale: u32,
    tables: Tables,
    play_from: i64,
) -> Result<Option<PlannedTrak>, ExportError> {
    let play_from = tables::rescale(play_from, timescale).saturating_sub(tables.first_dts);
    let media_start = tables.media_end.min(tables.first_presented).max(play_from);
    let presented = tables.media_end.saturating_sub(media_start);
    if presented <= 0 {
        return Ok(None);
    }
    let empty = to_movie(media_start.saturating_sub(play_from), timescale);
    let segment = to_movie(presented, timescale);
    let mut entries = Vec::new();
    if empty > 0 {
        entries.push(ElstEntry {
            segment_duration: empty,
            media_time: None,
            media_rate: 1.into(),
        });
    }
    entries.push(ElstEntry {
        segment_duration: segment,
        media_time: Some(u64::try_from(media_start).unwrap_or(0)),
        media_rate: 1.into(),
    });
    trak.edts = Some(Edts {
        elst: Some(Elst { entries }),
    });
    trak.tkhd.duration = empty + segment;
    let mdia = &mut trak.mdia;
    mdia.mdhd.duration = tables.media_duration;
    let stbl = &mut mdia.minf.stbl;
    stbl.stts = tables.stts;
    stbl.ctts = tables.ctts;
    stbl.stss = tables.stss;
    stbl.stsz = tables.stsz;
    stbl.stsc = tables.stsc;
    Ok(Some(PlannedTrak {
        trak,
        chunk_offsets: tables.chunk_offsets,
    }))
}

/// A duration in `timescale` ticks (non-negative) in movie ticks, rounded.
fn to_movie(duration: i64, timescale: u32) -> u64 {
    let duration = u128::try_from(duration).unwrap_or(0);
    let ticks = (duration * u128::from(MOVIE_TIMESCALE) + u128::from(timescale / 2))
        / u128::from(timescale.max(1));
    u64::try_from(ticks).unwrap_or(u64::MAX)
}

/// `ftyp`, `moov` with final chunk offsets (`stco`, or `co64` when an offset passes
/// 4 GiB), and the `mdat` header for a body of `mdat_len` bytes.
fn header(tracks: &Tracks, traks: Vec<PlannedTrak>, mdat_len: u64) -> Result<Bytes, ExportError> {
    let mut compatible_brands = vec![FourCC::new(b"isom"), FourCC::new(b"iso2")];
    match tracks.video.as_ref().map(|video| &video.config) {
        Some(VideoConfig::H264 { .. }) => compatible_brands.push(FourCC::new(b"avc1")),
        Some(VideoConfig::H265 { .. }) => compatible_brands.push(FourCC::new(b"hvc1")),
        None => {}
    }
    compatible_brands.push(FourCC::new(b"mp41"));
    let ftyp = Ftyp {
        major_brand: FourCC::new(b"isom"),
        minor_version: 0x200,
        compatible_brands,
    };
    let mut ftyp_bytes = Vec::new();
    ftyp.encode(&mut ftyp_bytes)?;

    let duration = traks
        .iter()
        .map(|planned| planned.trak.tkhd.duration)
        .max()
        .unwrap_or(0);
    let offsets: Vec<Vec<u64>> = traks.iter().map(|t| t.chunk_offsets.clone()).collect();
    let mut moov = Moov {
        mvhd: Mvhd {
            timescale: MOVIE_TIMESCALE,
            duration,
            rate: 1.into(),
            volume: 1.into(),
            next_track_id: AUDIO_TRACK_ID.max(VIDEO_TRACK_ID) + 1,
            ..Default::default()
        },
        trak: traks.into_iter().map(|planned| planned.trak).collect(),
        ..Default::default()
    };

    let mdat_header = mdat_header(mdat_len);
    let last_chunk = offsets.iter().flatten().copied().max().unwrap_or(0);
    // The moov's size does not depend on the offsets' values, only on their width:
    // measure it with relative offsets, then write the real ones.
    let mut wide = false;
    set_chunk_offsets(&mut moov, &offsets, 0, wide);
    let mut base = ftyp_bytes.len() as u64 + moov_len(&moov)? + mdat_header.len() as u64;
    if base + last_chunk > u64::from(u32::MAX) {
        wide = true;
        set_chunk_offsets(&mut moov, &offsets, 0, wide);
        base = ftyp_bytes.len() as u64 + moov_len(&moov)? + mdat_header.len() as u64;
    }
    set_chunk_offsets(&mut moov, &offsets, base, wide);

    let mut out = BytesMut::from(&ftyp_bytes[..]);
    let mut moov_bytes = Vec::new();
    moov.encode(&mut moov_bytes)?;
    out.put_slice(&moov_bytes);
    out.put_slice(&mdat_header);
    debug_assert_eq!(out.len() as u64, base);
    Ok(out.freeze())
}

fn moov_len(moov: &Moov) -> Result<u64, ExportError> {
    let mut buffer = Vec::new();
    moov.encode(&mut buffer)?;
    Ok(buffer.len() as u64)
}

/// Writes `base + offset` for every chunk of every track, as `co64` when `wide`, else
/// `stco` (whose entries the caller has checked to fit 32 bits).
fn set_chunk_offsets(moov: &mut Moov, offsets: &[Vec<u64>], base: u64, wide: bool) {
    for (trak, offsets) in moov.trak.iter_mut().zip(offsets) {
        let stbl = &mut trak.mdia.minf.stbl;
        let absolute = offsets.iter().map(|offset| base + offset);
        if wide {
            stbl.stco = None;
            stbl.co64 = Some(Co64 {
                entries: absolute.collect(),
            });
        } else {
            stbl.co64 = None;
            stbl.stco = Some(Stco {
                entries: absolute
                    .map(|offset| u32::try_from(offset).unwrap_or(u32::MAX))
                    .collect(),
            });
        }
    }
}

/// The `mdat` box header: 32-bit size, or size 1 and a 64-bit size past 4 GiB.
fn mdat_header(body_len: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(16);
    match u32::try_from(body_len + 8) {
        Ok(size) => {
            out.extend_from_slice(&size.to_be_bytes());
            out.extend_from_slice(b"mdat");
        }
        Err(_) => {
            out.extend_from_slice(&1u32.to_be_bytes());
            out.extend_from_slice(b"mdat");
            out.extend_from_slice(&(body_len + 16).to_be_bytes());
        }
    }
    out
}
