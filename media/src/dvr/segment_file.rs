//! One segment file of an archive.
//!
//! ```text
//! "STRMDVR2"                 magic
//! sample payloads, back to back, in arrival order
//! configurations: per frame u8 codec, u32 BE length, bytes
//! sample table: 17 bytes per sample (see `encode_record`)
//! trailer (32 bytes): u64 BE configurations offset, u64 BE table offset,
//!                     u32 BE sample count, u32 BE CRC-32 of configurations and table,
//!                     "STRMEND2"
//! ```
//!
//! The configuration frames (`avcC`/`hvcC` records, the AudioSpecificConfig) make every
//! segment decodable on its own: a codec change starts a new segment. They are written
//! when the segment closes, so a track whose configuration arrives after the segment
//! began (audio learned from its first frame, after the first video keyframe) joins the
//! segment instead of cutting it. A file without a valid trailer was never closed and is
//! not part of the archive.

use super::checksum::crc32;
use crate::frame::{Codec, Frame, Track};
use crate::sample::{TrackKind, Tracks};
use crate::track_builder::TrackBuilder;
use bytes::Bytes;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

pub const MAGIC: &[u8; 8] = b"STRMDVR2";
pub const TRAILER_MAGIC: &[u8; 8] = b"STRMEND2";
pub const TRAILER_LEN: u64 = 32;
/// Where the first payload starts.
pub const DATA_START: u64 = MAGIC.len() as u64;
pub const RECORD_LEN: usize = 17;
/// Configuration frames one segment may carry, and the size of each: far above any real
/// decoder configuration, a bound for reading a damaged file.
pub const MAX_CONFIGS: usize = 8;
pub const MAX_CONFIG_BYTES: usize = 1 << 20;

/// One sample of a segment: where its payload lies in the file and its times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleRecord {
    pub kind: TrackKind,
    pub keyframe: bool,
    /// 90 kHz.
    pub dts: i64,
    pub pts: i64,
    /// Offset of the payload in the segment file.
    pub offset: u64,
    pub size: u32,
}

/// A segment's configuration and sample table.
#[derive(Debug, Clone)]
pub struct SegmentContents {
    /// The configuration frames the segment starts with (codec, record).
    pub configs: Vec<(Codec, Bytes)>,
    pub samples: Vec<SampleRecord>,
}

impl SegmentContents {
    /// The muxer tracks the configuration frames describe.
    pub fn tracks(&self) -> Tracks {
        tracks_of(&self.configs)
    }
}

/// The muxer tracks of configuration frames.
pub fn tracks_of(configs: &[(Codec, Bytes)]) -> Tracks {
    let mut builder = TrackBuilder::default();
    for (codec, record) in configs {
        let Some(track) = codec.track() else { continue };
        let mut frame = Frame::neutral(track, *codec, 0, record.clone());
        frame.config = true;
        builder.accept_frame(frame);
    }
    builder.tracks
}

/// The configurations, sample table and trailer appended when the segment closes, at
/// `tail_offset` (the end of the payloads).
pub fn encode_tail(
    configs: &[(Codec, Bytes)],
    records: &[SampleRecord],
    tail_offset: u64,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + records.len() * RECORD_LEN + TRAILER_LEN as usize);
    for (codec, record) in configs.iter().take(MAX_CONFIGS) {
        out.push(codec.to_u8());
        out.extend_from_slice(&(record.len() as u32).to_be_bytes());
        out.extend_from_slice(record);
    }
    let table_offset = tail_offset + out.len() as u64;
    for record in records {
        encode_record(record, &mut out);
    }
    let crc = crc32(&out);
    out.extend_from_slice(&tail_offset.to_be_bytes());
    out.extend_from_slice(&table_offset.to_be_bytes());
    out.extend_from_slice(&(records.len() as u32).to_be_bytes());
    out.extend_from_slice(&crc.to_be_bytes());
    out.extend_from_slice(TRAILER_MAGIC);
    out
}

/// `u8 flags (bit 0 audio, bit 1 keyframe), i64 dts, i32 pts - dts, u32 size`; the
/// offset is implied: payloads lie back to back from the end of the header.
fn encode_record(record: &SampleRecord, out: &mut Vec<u8>) {
    let flags = u8::from(record.kind == TrackKind::Audio) | (u8::from(record.keyframe) << 1);
    out.push(flags);
    out.extend_from_slice(&record.dts.to_be_bytes());
    let offset = (record.pts - record.dts).clamp(i64::from(i32::MIN), i64::from(i32::MAX));
    out.extend_from_slice(&(offset as i32).to_be_bytes());
    out.extend_from_slice(&record.size.to_be_bytes());
}

fn invalid(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why.to_owned())
}

/// Reads a closed segment's configuration and sample table (not the payloads).
pub fn read_segment(path: &Path) -> io::Result<SegmentContents> {
    let file = File::open(path)?;
    let len = file.metadata()?.len();
    read_segment_at(&file, len)
}

/// [`read_segment`] of a segment file's bytes.
pub fn parse_segment(bytes: &[u8]) -> io::Result<SegmentContents> {
    read_segment_at(bytes, bytes.len() as u64)
}

/// Positioned reads: of a file (the archive) or of bytes (tests, fuzzing).
trait ReadAt {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
}

impl ReadAt for File {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        FileExt::read_exact_at(self, buf, offset)
    }
}

impl ReadAt for [u8] {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let start = usize::try_from(offset).map_err(|_| invalid("offset beyond the data"))?;
        let source = self
            .get(start..)
            .and_then(|rest| rest.get(..buf.len()))
            .ok_or_else(|| invalid("read beyond the data"))?;
        buf.copy_from_slice(source);
        Ok(())
    }
}

fn read_segment_at(file: &(impl ReadAt + ?Sized), len: u64) -> io::Result<SegmentContents> {
    if len < DATA_START + TRAILER_LEN {
        return Err(invalid("segment too short"));
    }
    let mut trailer = [0u8; TRAILER_LEN as usize];
    file.read_exact_at(&mut trailer, len - TRAILER_LEN)?;
    if &trailer[24..] != TRAILER_MAGIC {
        return Err(invalid("segment was never closed"));
    }
    let configs_offset = u64::from_be_bytes(be_array(&trailer[0..8]));
    let table_offset = u64::from_be_bytes(be_array(&trailer[8..16]));
    let count = u64::from(u32::from_be_bytes(be_array(&trailer[16..20])));
    let crc = u32::from_be_bytes(be_array(&trailer[20..24]));
    let table_len = count * RECORD_LEN as u64;
    let tail_end = len - TRAILER_LEN;
    if configs_offset < DATA_START
        || table_offset < configs_offset
        || table_offset - configs_offset > (MAX_CONFIGS * (5 + MAX_CONFIG_BYTES)) as u64
        || table_offset.checked_add(table_len) != Some(tail_end)
    {
        return Err(invalid("trailer does not fit the file"));
    }
    let mut magic = [0u8; 8];
    file.read_exact_at(&mut magic, 0)?;
    if &magic != MAGIC {
        return Err(invalid("not a strom DVR segment"));
    }
    let mut tail = vec![0u8; (tail_end - configs_offset) as usize];
    file.read_exact_at(&mut tail, configs_offset)?;
    if crc32(&tail) != crc {
        return Err(invalid("segment tail checksum mismatch"));
    }
    let (configs, table) = tail.split_at((table_offset - configs_offset) as usize);
    let configs = parse_configs(configs)?;
    let samples = parse_records(table, DATA_START, configs_offset)?;
    Ok(SegmentContents { configs, samples })
}

fn be_array<const N: usize>(bytes: &[u8]) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&bytes[..N]);
    out
}

fn parse_configs(mut header: &[u8]) -> io::Result<Vec<(Codec, Bytes)>> {
    let mut configs = Vec::new();
    while !header.is_empty() {
        if header.len() < 5 || configs.len() == MAX_CONFIGS {
            return Err(invalid("bad configuration header"));
        }
        let codec = Codec::from_u8(header[0]);
        let len = u32::from_be_bytes(be_array(&header[1..5])) as usize;
        if len > MAX_CONFIG_BYTES || header.len() < 5 + len {
            return Err(invalid("bad configuration record length"));
        }
        configs.push((codec, Bytes::copy_from_slice(&header[5..5 + len])));
        header = &header[5 + len..];
    }
    Ok(configs)
}

fn parse_records(table: &[u8], data_start: u64, data_end: u64) -> io::Result<Vec<SampleRecord>> {
    let mut samples = Vec::with_capacity(table.len() / RECORD_LEN);
    let mut offset = data_start;
    for raw in table.chunks_exact(RECORD_LEN) {
        let size = u32::from_be_bytes(be_array(&raw[13..17]));
        let dts = i64::from_be_bytes(be_array(&raw[1..9]));
        let composition = i32::from_be_bytes(be_array(&raw[9..13]));
        let record = SampleRecord {
            kind: if raw[0] & 1 == 1 {
                TrackKind::Audio
            } else {
                TrackKind::Video
            },
            keyframe: raw[0] & 2 == 2,
            dts,
            pts: dts + i64::from(composition),
            offset,
            size,
        };
        offset += u64::from(size);
        if offset > data_end {
            return Err(invalid("sample beyond the data"));
        }
        samples.push(record);
    }
    Ok(samples)
}

/// A track's place in [`Track`] terms.
pub fn track_of(kind: TrackKind) -> Track {
    match kind {
        TrackKind::Video => Track::Video,
        TrackKind::Audio => Track::Audio,
    }
}
