//! Elementary audio byte streams to frames: what an Icecast source sends, MP3 as bare
//! MPEG audio frames ([`crate::mpeg_audio`]) or AAC as ADTS frames. The stream has no
//! timestamps: frames are timed by the samples before them (90 kHz, from zero).
//!
//! - **Sync**: a frame is taken where a header parses and, unless the previous frame
//!   ended exactly there, the header after it parses too (so one stray `0xFF` in
//!   garbage cannot desynchronize the stream). Bytes before a frame are skipped and
//!   counted in [`AudioDeframer::skipped_bytes`].
//! - **ID3v2 tags** (ffmpeg's MP3 muxer and many encoders start with one) are skipped
//!   whole, however long, without buffering them.
//! - **AAC**: an AudioSpecificConfig config frame first and whenever the ADTS header
//!   says something else; media frames carry the raw data without the ADTS header.
//! - **Bounds**: at most [`MAX_BUFFER`] bytes are held; frames are zero-copy slices of
//!   the buffer.

use crate::frame::{Codec, Frame, Track};
use crate::mpeg_audio;
use crate::ts_demux::adts::parse_adts;
use bytes::{Buf, Bytes, BytesMut};

/// The most bytes held while looking for a frame (an ADTS frame is at most 8191).
pub const MAX_BUFFER: usize = 32 * 1024;
/// Samples per AAC raw data block.
const AAC_BLOCK_SAMPLES: u64 = 1024;
const ID3_HEADER_LEN: usize = 10;

/// How the source's bytes are framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AudioFormat {
    /// MPEG audio frames (MP3, also MP2): `audio/mpeg`.
    Mpeg,
    /// AAC in ADTS: `audio/aac`, `audio/aacp`.
    Adts,
}

impl AudioFormat {
    /// The format of an Icecast `Content-Type` (parameters ignored); `None` when the
    /// type carries neither.
    pub fn from_content_type(content_type: &str) -> Option<Self> {
        let essence = content_type.split(';').next().unwrap_or("").trim();
        match essence.to_ascii_lowercase().as_str() {
            "audio/mpeg" | "audio/mp3" | "audio/mpeg3" | "audio/x-mpeg" => Some(Self::Mpeg),
            "audio/aac" | "audio/aacp" | "audio/x-aac" => Some(Self::Adts),
            _ => None,
        }
    }

    pub fn codec(self) -> Codec {
        match self {
            Self::Mpeg => Codec::Mp3,
            Self::Adts => Codec::Aac,
        }
    }
}

/// A frame found at the start of the buffer.
struct Found {
    len: usize,
    /// The payload's range within the frame.
    body: std::ops::Range<usize>,
    sample_rate: u32,
    samples: u64,
    /// AAC: the AudioSpecificConfig the header implies.
    asc: Option<[u8; 2]>,
}

pub struct AudioDeframer {
    format: AudioFormat,
    buffer: BytesMut,
    /// Bytes of an ID3v2 tag still to skip.
    tag_left: usize,
    /// The previous frame ended at the start of the buffer.
    in_sync: bool,
    /// The timeline: time of the first frame at the current sample rate, and the
    /// samples since then.
    base_dts: i64,
    sample_rate: u32,
    samples: u64,
    asc: Option<[u8; 2]>,
    skipped: u64,
}

impl AudioDeframer {
    pub fn new(format: AudioFormat) -> Self {
        Self {
            format,
            buffer: BytesMut::with_capacity(8 * 1024),
            tag_left: 0,
            in_sync: false,
            base_dts: 0,
            sample_rate: 0,
            samples: 0,
            asc: None,
            skipped: 0,
        }
    }

    /// Bytes that were neither a frame nor an ID3 tag.
    pub fn skipped_bytes(&self) -> u64 {
        self.skipped
    }

    /// The time of the next frame, 90 kHz.
    pub fn next_dts(&self) -> i64 {
        self.dts()
    }

    /// Takes `input` and appends the frames it completes to `out`.
    pub fn push(&mut self, mut input: &[u8], out: &mut Vec<Frame>) {
        while !input.is_empty() {
            if self.tag_left > 0 {
                let skip = self.tag_left.min(input.len());
                self.tag_left -= skip;
                input = &input[skip..];
                continue;
            }
            let room = MAX_BUFFER - self.buffer.len();
            let (now, later) = input.split_at(input.len().min(room));
            self.buffer.extend_from_slice(now);
            input = later;
            self.drain(out);
            if self.buffer.len() >= MAX_BUFFER {
                // Nothing in a full buffer was a frame: give up on its first half.
                self.skip(MAX_BUFFER / 2);
            }
        }
    }

    fn drain(&mut self, out: &mut Vec<Frame>) {
        loop {
            if self.tag_left > 0 {
                let skip = self.tag_left.min(self.buffer.len());
                self.buffer.advance(skip);
                self.tag_left -= skip;
                if self.tag_left > 0 {
                    return;
                }
                continue;
            }
            let Some(start) = self.buffer.iter().position(|&b| b == 0xff || b == b'I') else {
                let all = self.buffer.len();
                self.skip(all);
                return;
            };
            if start > 0 {
                self.skip(start);
            }
            if self.buffer.starts_with(b"ID3") {
                match id3_tag_len(&self.buffer) {
                    Some(len) => {
                        self.tag_left = len;
                        self.in_sync = false;
                        continue;
                    }
                    None if self.buffer.len() < ID3_HEADER_LEN => return,
                    None => {
                        self.skip(1);
                        continue;
                    }
                }
            }
            if self.buffer.first() == Some(&b'I') {
                if self.buffer.len() < 3 && b"ID3".starts_with(&self.buffer) {
                    return;
                }
                self.skip(1);
                continue;
            }
            match self.frame_at_start() {
                Step::Frame(found) => self.emit(found, out),
                Step::NeedMore => return,
                Step::NotAFrame => {
                    self.in_sync = false;
                    self.skip(1);
                }
            }
        }
    }

    fn frame_at_start(&self) -> Step {
        let Some(found) = self.parse(&self.buffer) else {
            let needed = match self.format {
                AudioFormat::Mpeg => 4,
                // An ADTS header may parse only once the whole frame is here.
                AudioFormat::Adts => adts_declared_len(&self.buffer).unwrap_or(7),
            };
            return if self.buffer.len() < needed && plausible_start(self.format, &self.buffer) {
                Step::NeedMore
            } else {
                Step::NotAFrame
            };
        };
        if self.buffer.len() < found.len {
            return Step::NeedMore;
        }
        if self.in_sync {
            return Step::Frame(found);
        }
        let next = &self.buffer[found.len..];
        match self.parse(next) {
            Some(_) => Step::Frame(found),
            None if next.len() < 4 || (self.format == AudioFormat::Adts && next.len() < 8192) => {
                if plausible_start(self.format, next) {
                    Step::NeedMore
                } else {
                    Step::NotAFrame
                }
            }
            None => Step::NotAFrame,
        }
    }

    fn parse(&self, data: &[u8]) -> Option<Found> {
        match self.format {
            AudioFormat::Mpeg => {
                let header = mpeg_audio::parse_header(data)?;
                Some(Found {
                    len: header.frame_len,
                    body: 0..header.frame_len,
                    sample_rate: header.sample_rate,
                    samples: u64::from(header.samples),
                    asc: None,
                })
            }
            AudioFormat::Adts => {
                let frame = parse_adts(data)?;
                Some(Found {
                    len: frame.end,
                    body: frame.start..frame.end,
                    sample_rate: frame.sampling_frequency,
                    samples: AAC_BLOCK_SAMPLES * u64::from(frame.blocks),
                    asc: Some(frame.asc),
                })
            }
        }
    }

    fn emit(&mut self, found: Found, out: &mut Vec<Frame>) {
        if found.sample_rate != self.sample_rate {
            self.base_dts = self.dts();
            self.samples = 0;
            self.sample_rate = found.sample_rate;
        }
        let dts = self.dts();
        let codec = self.format.codec();
        if let Some(asc) = found.asc.filter(|asc| Some(*asc) != self.asc) {
            self.asc = Some(asc);
            out.push(Frame {
                config: true,
                ..audio_frame(codec, dts, Bytes::copy_from_slice(&asc))
            });
        }
        let mut whole = self.buffer.split_to(found.len).freeze();
        out.push(audio_frame(codec, dts, whole.split_off(found.body.start)));
        self.samples += found.samples;
        self.in_sync = true;
    }

    fn dts(&self) -> i64 {
        if self.sample_rate == 0 {
            return self.base_dts;
        }
        let elapsed = u128::from(self.samples) * 90_000 / u128::from(self.sample_rate);
        self.base_dts
            .saturating_add(i64::try_from(elapsed).unwrap_or(i64::MAX))
    }

    fn skip(&mut self, count: usize) {
        let count = count.min(self.buffer.len());
        self.buffer.advance(count);
        self.skipped += count as u64;
    }
}

enum Step {
    Frame(Found),
    NeedMore,
    NotAFrame,
}

fn audio_frame(codec: Codec, dts: i64, payload: Bytes) -> Frame {
    Frame::neutral(Track::Audio, codec, dts, payload)
}

/// Whether `data` could still become a frame header once more bytes arrive.
fn plausible_start(format: AudioFormat, data: &[u8]) -> bool {
    match data {
        [] | [0xff] => true,
        [0xff, b1, ..] => match format {
            AudioFormat::Mpeg => b1 & 0xe0 == 0xe0,
            AudioFormat::Adts => b1 & 0xf6 == 0xf0,
        },
        _ => false,
    }
}

/// The frame length an ADTS header declares, read before the frame is all here.
fn adts_declared_len(data: &[u8]) -> Option<usize> {
    let &[_, _, _, b3, b4, b5] = data.first_chunk::<6>()?;
    Some((usize::from(b3 & 0x03) << 11) | (usize::from(b4) << 3) | usize::from(b5 >> 5))
}

/// The whole length of the ID3v2 tag at the start of `data` (header, body, footer).
fn id3_tag_len(data: &[u8]) -> Option<usize> {
    let header = data.first_chunk::<ID3_HEADER_LEN>()?;
    let size = &header[6..10];
    if !header.starts_with(b"ID3") || header[3] == 0xff || size.iter().any(|b| b & 0x80 != 0) {
        return None;
    }
    let body = size
        .iter()
        .fold(0usize, |acc, &b| (acc << 7) | usize::from(b));
    let footer = if header[5] & 0x10 != 0 { 10 } else { 0 };
    Some(ID3_HEADER_LEN + body + footer)
}

#[cfg(test)]
mod tests;
