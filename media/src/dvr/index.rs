//! The archive index: one line per closed segment, in recording order.
//!
//! ```text
//! v1 <seq> <period> <start_ms> <start_dts> <duration> <bytes> <samples> <width> <height> <vcodec> <acodec> <crc32>
//! v2 <seq> <period> <start_ms> <start_dts> <duration> <bytes> <samples> <width> <height> <vcodec> <acodec> <scte35> <crc32>
//! ```
//!
//! A `v2` line is a segment that starts with SCTE-35 markers: `<scte35>` is their
//! splice_info_sections in base64, comma-separated. Segments without markers are
//! written as `v1` lines, so archives without markers read as before and older
//! archives load unchanged.
//!
//! `start_ms` is the wall-clock time (Unix milliseconds) of the segment's first sample,
//! `start_dts` its 90 kHz decode time and `duration` its length in 90 kHz ticks; codec
//! strings are RFC 6381 (`-` for an absent track); the CRC-32 (hex) covers everything
//! before it on the line. A line that does not parse or whose checksum fails ends the
//! readable index: it can only be the torn tail of an append.

use super::checksum::crc32;
use crate::sample::TIMESCALE;
use base64::Engine;
use bytes::Bytes;

const BASE64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;
/// Markers one index line holds at most (as many as a live segment takes).
const MAX_MARKERS: usize = crate::hls::cues::MAX_MARKERS_PER_SEGMENT;

/// One closed segment of an archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentEntry {
    pub seq: u64,
    /// The recording session (publish) the segment belongs to.
    pub period: u32,
    /// Wall-clock time of the first sample, Unix milliseconds.
    pub start_ms: i64,
    /// Decode time of the first sample, 90 kHz (the stream's own timeline).
    pub start_dts: i64,
    /// 90 kHz ticks.
    pub duration: u64,
    /// Size of the segment file.
    pub bytes: u64,
    pub samples: u32,
    pub width: u32,
    pub height: u32,
    /// RFC 6381 codec strings; empty when the track is absent.
    pub vcodec: String,
    pub acodec: String,
    /// SCTE-35 splice_info_sections the segment starts with (the splice is at its start).
    pub scte35: Vec<Bytes>,
}

impl SegmentEntry {
    /// Wall-clock end, Unix milliseconds.
    pub fn end_ms(&self) -> i64 {
        self.start_ms + self.duration_ms() as i64
    }

    pub fn duration_ms(&self) -> u64 {
        self.duration * 1000 / u64::from(TIMESCALE)
    }

    /// The index line (with its newline).
    pub fn to_line(&self) -> String {
        let dash = |s: &str| {
            if s.is_empty() {
                "-".to_owned()
            } else {
                s.to_owned()
            }
        };
        let version = if self.scte35.is_empty() { 1 } else { 2 };
        let mut body = format!(
            "v{version} {} {} {} {} {} {} {} {} {} {} {}",
            self.seq,
            self.period,
            self.start_ms,
            self.start_dts,
            self.duration,
            self.bytes,
            self.samples,
            self.width,
            self.height,
            dash(&self.vcodec),
            dash(&self.acodec),
        );
        for (n, section) in self.scte35.iter().take(MAX_MARKERS).enumerate() {
            body.push(if n == 0 { ' ' } else { ',' });
            BASE64.encode_string(section, &mut body);
        }
        let crc = crc32(body.as_bytes());
        format!("{body} {crc:08x}\n")
    }

    /// Parses one line (without its newline); `None` when it is not a whole valid line.
    pub fn parse_line(line: &str) -> Option<Self> {
        let (body, crc) = line.rsplit_once(' ')?;
        if crc.len() != 8 || u32::from_str_radix(crc, 16).ok()? != crc32(body.as_bytes()) {
            return None;
        }
        let mut fields = body.split(' ');
        let markers = match fields.next()? {
            "v1" => false,
            "v2" => true,
            _ => return None,
        };
        let mut next = || fields.next();
        let codec = |s: &str| {
            if s == "-" {
                String::new()
            } else {
                s.to_owned()
            }
        };
        let mut entry = Self {
            seq: next()?.parse().ok()?,
            period: next()?.parse().ok()?,
            start_ms: next()?.parse().ok()?,
            start_dts: next()?.parse().ok()?,
            duration: next()?.parse().ok()?,
            bytes: next()?.parse().ok()?,
            samples: next()?.parse().ok()?,
            width: next()?.parse().ok()?,
            height: next()?.parse().ok()?,
            vcodec: codec(next()?),
            acodec: codec(next()?),
            scte35: Vec::new(),
        };
        if markers {
            for section in next()?.split(',').take(MAX_MARKERS) {
                entry.scte35.push(Bytes::from(BASE64.decode(section).ok()?));
            }
        }
        next().is_none().then_some(entry)
    }
}

/// The entries of an index file's text, and the byte length of its valid prefix (what
/// follows it is a torn append).
pub fn parse_index(text: &[u8]) -> (Vec<SegmentEntry>, usize) {
    let mut entries: Vec<SegmentEntry> = Vec::new();
    let mut valid = 0;
    for line in text.split_inclusive(|&b| b == b'\n') {
        let Some(content) = line.strip_suffix(b"\n") else {
            break;
        };
        let Some(entry) = std::str::from_utf8(content)
            .ok()
            .and_then(SegmentEntry::parse_line)
        else {
            break;
        };
        // Sequence numbers only grow; anything else is not this archive's writing.
        if entries.last().is_some_and(|last| last.seq >= entry.seq) {
            break;
        }
        valid += line.len();
        entries.push(entry);
    }
    (entries, valid)
}
