//! Muxing one archive segment for a player (blocking file IO: run it off the async
//! threads): as an MPEG-TS segment, an fMP4 media segment, or the fMP4 init segment of
//! its codec configuration. The file is read once; samples are slices of it. A segment
//! that starts with SCTE-35 markers carries them on the TS's SCTE-35 PID.

use bytes::Bytes;
use std::io;
use std::path::Path;
use strom_media::dvr::{SegmentEntry, read_segment, segment_file_name};
use strom_media::fmp4::{Fragmenter, init_segment};
use strom_media::sample::{Sample, TrackKind};
use strom_media::ts::TsMuxer;

/// A segment file larger than this is not read (the recorder closes segments at
/// 256 MiB; the rest is room for the header and the sample table).
pub const MAX_SEGMENT_FILE: u64 = 260 * 1024 * 1024;

/// fMP4 decode times of period `p` start at `p` times this (2^40 ticks: 141 days), so
/// that they only grow over a playlist that spans periods: every period's own times
/// start near 0 again, and ffmpeg's fMP4 HLS reader drops fragments whose times go back
/// even across `#EXT-X-DISCONTINUITY`. MPEG-TS, whose 33-bit times cannot carry that
/// offset, is put on the wall clock instead ([`ts_offset`]).
pub const FMP4_PERIOD_SPAN: i64 = 1 << 40;

/// What MPEG-TS adds to the decode times of `entry`'s period so that they grow across
/// periods too (ffmpeg seeks into a later period by its times; with every period's times
/// starting near 0 again it finds nothing there): the period's times are mapped to the
/// wall clock (90 kHz, modulo 2^33 in the packets) where its first segment still in
/// `archive` was recorded. A later publish starts later on the wall clock than the
/// earlier one ended (unless a publisher sent faster than real time), and the offset is
/// the same for every segment of a period whichever is asked for.
pub fn ts_offset(archive: &[SegmentEntry], entry: &SegmentEntry) -> i64 {
    let first = archive.partition_point(|e| e.period < entry.period);
    let anchor = archive
        .get(first)
        .filter(|e| e.period == entry.period)
        .unwrap_or(entry);
    anchor
        .start_ms
        .saturating_mul(90)
        .saturating_sub(anchor.start_dts)
}

/// What to make of a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Output {
    Ts,
    Fmp4,
    Init,
}

#[derive(Debug, thiserror::Error)]
pub enum MuxError {
    /// The segment is gone (cleanup) or is not the one the index names.
    #[error("segment not in the archive")]
    Gone,
    #[error("reading the segment: {0}")]
    Read(#[from] io::Error),
    #[error("segment data out of bounds")]
    OutOfBounds,
    #[error("muxing: {0}")]
    Mux(String),
}

/// Muxes `entry` of the archive in `dir`. `next` is the segment after it when it
/// continues the same timeline (its start closes the last video sample's duration).
/// `ts_offset` is what [`ts_offset`] gives for it.
pub fn mux(
    dir: &Path,
    entry: &SegmentEntry,
    next: Option<&SegmentEntry>,
    output: Output,
    ts_offset: i64,
) -> Result<Bytes, MuxError> {
    if entry.bytes > MAX_SEGMENT_FILE {
        return Err(MuxError::Mux(format!("segment of {} bytes", entry.bytes)));
    }
    let path = dir.join(segment_file_name(entry.seq));
    let contents = read_segment(&path).map_err(gone_if_missing)?;
    let tracks = contents.tracks();
    if output == Output::Init {
        return init_segment(&tracks)
            .map(Bytes::from)
            .map_err(|e| MuxError::Mux(e.to_string()));
    }
    let offset = match output {
        Output::Fmp4 => i64::from(entry.period) * FMP4_PERIOD_SPAN,
        Output::Ts => ts_offset,
        Output::Init => 0,
    };
    let file = read_whole(&path, entry.bytes)?;
    let samples = contents
        .samples
        .iter()
        .map(|record| {
            let start = usize::try_from(record.offset).map_err(|_| MuxError::OutOfBounds)?;
            let end = start
                .checked_add(record.size as usize)
                .filter(|end| *end <= file.len())
                .ok_or(MuxError::OutOfBounds)?;
            Ok(Sample {
                kind: record.kind,
                dts: record.dts.saturating_add(offset),
                pts: record.pts.saturating_add(offset),
                keyframe: record.keyframe,
                data: file.slice(start..end),
            })
        })
        .collect::<Result<Vec<_>, MuxError>>()?;
    let payload: usize = samples.iter().map(|s| s.data.len()).sum();
    let mut out = Vec::with_capacity(payload + payload / 8 + 4096);
    if output == Output::Ts {
        // A segment that starts a break carries its sections on a SCTE-35 PID, as the
        // live TS segment did.
        let markers: Vec<&[u8]> = entry.scte35.iter().map(|m| &m[..]).collect();
        TsMuxer::new(&tracks)
            .write_segment_with_metadata(&tracks, &markers, &[], &samples, &mut out)
            .map_err(|e| MuxError::Mux(e.to_string()))?;
    } else {
        let next_video = next
            .filter(|_| tracks.video.is_some())
            .map(|n| n.start_dts.saturating_add(offset))
            .filter(|dts| {
                let last = samples.iter().rev().find(|s| s.kind == TrackKind::Video);
                last.is_some_and(|s| s.dts < *dts)
            });
        // A segment that starts a break carries its sections as `emsg` boxes (SCTE
        // 214-3) before the `moof`, as the live fMP4 segment did.
        let markers: Vec<&[u8]> = entry.scte35.iter().map(|m| &m[..]).collect();
        let first_id = ((entry.seq & u64::from(u32::MAX)) as u32)
            .wrapping_mul(64)
            .wrapping_add(32);
        let start = entry.start_dts.saturating_add(offset);
        strom_media::fmp4::emsg::write_scte35_emsgs(&markers, start, first_id, &mut out);
        let moof_at = out.len();
        Fragmenter::new()
            .fragment(&tracks, &samples, next_video, None, &mut out)
            .map_err(|e| MuxError::Mux(e.to_string()))?;
        number_fragment(out.get_mut(moof_at..).unwrap_or_default(), entry.seq);
    }
    Ok(Bytes::from(out))
}

/// Gives the fragment the archive's segment number as its `mfhd` sequence number (a
/// fresh fragmenter numbers every segment 1; players that check want them to grow).
/// The `moof` comes first and its `mfhd` first in it: sequence number at bytes 20-23.
fn number_fragment(fragment: &mut [u8], seq: u64) {
    if fragment.len() >= 24 && &fragment[4..8] == b"moof" && &fragment[12..16] == b"mfhd" {
        let number = (seq & u64::from(u32::MAX)) as u32;
        fragment[20..24].copy_from_slice(&number.to_be_bytes());
    }
}

/// The segment file, which must be `len` bytes long: another length means it was
/// replaced since the index was read (the archive was emptied and numbering began
/// again), and it is not the segment the index named.
fn read_whole(path: &Path, len: u64) -> Result<Bytes, MuxError> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).map_err(gone_if_missing)?;
    if file.metadata()?.len() != len {
        return Err(MuxError::Gone);
    }
    let mut data = Vec::with_capacity(len as usize);
    file.read_to_end(&mut data)?;
    if data.len() as u64 != len {
        return Err(MuxError::Gone);
    }
    Ok(Bytes::from(data))
}

fn gone_if_missing(error: io::Error) -> MuxError {
    match error.kind() {
        io::ErrorKind::NotFound => MuxError::Gone,
        _ => MuxError::Read(error),
    }
}
