//! H.264 and H.265 in MPEG-TS: a PES payload is one access unit in Annex B form.
//! [`VideoState::convert`] rewrites it into MP4-sample form (4-byte lengths),
//! dropping access unit delimiters and parameter sets, which it keeps instead
//! (one SPS, PPS and for H.265 VPS: the latest of each) to build the `avcC` /
//! `hvcC` record that goes out as a config frame before the first sample and
//! again whenever a parameter set changes. Samples before the first record are
//! dropped: nothing could decode them.

use bytes::{BufMut, Bytes, BytesMut};

use crate::bits::BitReader;
use crate::hevc::HevcSpsInfo;
use crate::sps::SpsInfo;

/// Which of the two NAL-based codecs a stream carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NalCodec {
    H264,
    H265,
}

/// What one NAL unit is, for the conversion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Delimiter,
    Vps,
    Sps,
    Pps,
    Key,
    Other,
}

impl NalCodec {
    fn kind(self, nal: &[u8]) -> Kind {
        let Some(&first) = nal.first() else {
            return Kind::Other;
        };
        match self {
            NalCodec::H264 => match first & 0x1f {
                9 => Kind::Delimiter,
                7 => Kind::Sps,
                8 => Kind::Pps,
                5 => Kind::Key,
                _ => Kind::Other,
            },
            NalCodec::H265 => match (first >> 1) & 0x3f {
                35 => Kind::Delimiter,
                32 => Kind::Vps,
                33 => Kind::Sps,
                34 => Kind::Pps,
                16..=21 => Kind::Key,
                _ => Kind::Other,
            },
        }
    }
}

/// The result of converting one access unit.
#[derive(Debug, Default)]
pub(crate) struct Converted {
    /// A new decoder configuration record, to send before the sample.
    pub config: Option<Bytes>,
    /// The sample and whether it is a keyframe.
    pub sample: Option<(Bytes, bool)>,
}

/// Parameter sets and output buffer of one video stream.
#[derive(Debug, Default)]
pub(crate) struct VideoState {
    vps: Vec<u8>,
    sps: Vec<u8>,
    pps: Vec<u8>,
    /// A parameter set changed since the last record went out.
    dirty: bool,
    /// A record went out: samples may follow.
    configured: bool,
    out: BytesMut,
}

impl VideoState {
    pub fn convert(&mut self, codec: NalCodec, annexb: &[u8]) -> Converted {
        self.out.clear();
        self.out.reserve(annexb.len());
        let mut keyframe = false;
        for nal in annexb_nals(annexb) {
            let kind = codec.kind(nal);
            let stored = match kind {
                Kind::Delimiter => continue,
                Kind::Vps => &mut self.vps,
                Kind::Sps => &mut self.sps,
                Kind::Pps => &mut self.pps,
                Kind::Key | Kind::Other => {
                    let Ok(len) = u32::try_from(nal.len()) else {
                        continue;
                    };
                    keyframe |= kind == Kind::Key;
                    self.out.put_u32(len);
                    self.out.extend_from_slice(nal);
                    continue;
                }
            };
            // Records hold 16-bit lengths.
            if stored.as_slice() != nal && nal.len() <= usize::from(u16::MAX) {
                stored.clear();
                stored.extend_from_slice(nal);
                self.dirty = true;
            }
        }
        let mut converted = Converted::default();
        if self.dirty {
            let record = match codec {
                NalCodec::H264 => avcc(&self.sps, &self.pps),
                NalCodec::H265 => hvcc(&self.vps, &self.sps, &self.pps),
            };
            if let Some(record) = record {
                self.dirty = false;
                self.configured = true;
                converted.config = Some(record);
            }
        }
        if self.configured && !self.out.is_empty() {
            converted.sample = Some((self.out.split().freeze(), keyframe));
        }
        converted
    }
}

/// The NAL units of an Annex B byte stream (3- or 4-byte start codes; trailing
/// zero bytes trimmed; bytes before the first start code ignored).
pub(crate) fn annexb_nals(data: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut next = find_start(data, 0);
    std::iter::from_fn(move || {
        let start = next?;
        next = find_start(data, start);
        let end = next.map_or(data.len(), |n| n - 3);
        let mut nal = data.get(start..end).unwrap_or_default();
        while let Some((0, rest)) = nal.split_last() {
            nal = rest;
        }
        Some(nal)
    })
}

/// The index after the first `00 00 01` at or after `from`.
fn find_start(data: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while let Some(&[a, b, c]) = data.get(i..i + 3) {
        if c > 1 {
            i += 3;
        } else if a == 0 && b == 0 && c == 1 {
            return Some(i + 3);
        } else {
            i += 1;
        }
    }
    None
}

/// An `avcC` record (ISO/IEC 14496-15 §5.3.3.1) for one SPS and PPS, with
/// 4-byte NAL lengths and, for High profiles, the chroma/bit depth extension.
pub(crate) fn avcc(sps: &[u8], pps: &[u8]) -> Option<Bytes> {
    if pps.is_empty() {
        return None;
    }
    let info = SpsInfo::parse(sps).ok()?;
    let (&[_, profile, compatibility, level], _) = sps.split_first_chunk::<4>()?;
    let mut record = Vec::with_capacity(16 + sps.len() + pps.len());
    record.extend_from_slice(&[1, profile, compatibility, level, 0xff, 0xe1]);
    push_nal(&mut record, sps)?;
    record.push(1);
    push_nal(&mut record, pps)?;
    if matches!(profile, 100 | 110 | 122 | 144) {
        record.extend_from_slice(&[
            0xfc | (info.chroma_format_idc & 0x03),
            0xf8 | (info.bit_depth_luma.saturating_sub(8) & 0x07),
            0xf8 | (info.bit_depth_chroma.saturating_sub(8) & 0x07),
            0,
        ]);
    }
    Some(Bytes::from(record))
}

/// An `hvcC` record (ISO/IEC 14496-15 §8.3.3.1) for one VPS, SPS and PPS, with
/// the general profile/tier/level copied from the SPS and 4-byte NAL lengths.
pub(crate) fn hvcc(vps: &[u8], sps: &[u8], pps: &[u8]) -> Option<Bytes> {
    if vps.is_empty() || pps.is_empty() {
        return None;
    }
    let info = HevcSpsInfo::parse(sps).ok()?;
    let mut r = BitReader::rbsp(sps.get(2..)?);
    let first = r.read_u8().ok()?; // VPS id, max_sub_layers_minus1, nesting
    let mut ptl = [0u8; 12];
    for b in &mut ptl {
        *b = r.read_u8().ok()?;
    }
    let temporal_layers = ((first >> 1) & 0x07) + 1;
    let nested = first & 0x01;
    let mut record = Vec::with_capacity(40 + vps.len() + sps.len() + pps.len());
    record.push(1);
    record.extend_from_slice(&ptl);
    record.extend_from_slice(&[
        0xf0, // min_spatial_segmentation_idc 0
        0x00,
        0xfc, // parallelismType 0
        0xfc | (info.chroma_format_idc & 0x03),
        0xf8 | (info.bit_depth_luma.saturating_sub(8) & 0x07),
        0xf8 | (info.bit_depth_chroma.saturating_sub(8) & 0x07),
        0x00, // avgFrameRate 0
        0x00,
        (temporal_layers << 3) | (nested << 2) | 0x03,
        3, // numOfArrays
    ]);
    for (nal_type, nal) in [(32u8, vps), (33, sps), (34, pps)] {
        record.push(0x80 | nal_type);
        record.extend_from_slice(&1u16.to_be_bytes());
        push_nal(&mut record, nal)?;
    }
    Some(Bytes::from(record))
}

fn push_nal(record: &mut Vec<u8>, nal: &[u8]) -> Option<()> {
    record.extend_from_slice(&u16::try_from(nal.len()).ok()?.to_be_bytes());
    record.extend_from_slice(nal);
    Some(())
}
