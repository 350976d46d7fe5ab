//! H.265: the decoder configuration record (`hvcC`, ISO/IEC 14496-15 §8.3.3)
//! with its VPS/SPS/PPS arrays as zero-copy slices, the general
//! profile/tier/level behind the RFC 6381 `hvc1` string, and SPS parsing up to
//! the picture size (conformance window applied) and bit depth. Parsing stops
//! there: later SPS fields (VUI, range extensions) are not read.

use bytes::Bytes;

use crate::ParseError;
use crate::annexb::write_nal;
use crate::bits::BitReader;
use crate::codec_string;
use crate::cursor::Cursor;
use crate::sps::{cropped, small};

const VPS: u8 = 32;
const SPS: u8 = 33;
const PPS: u8 = 34;

/// The general profile, tier and level (`profile_tier_level` without sub-layers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HevcProfile {
    pub profile_space: u8,
    pub high_tier: bool,
    /// 1 Main, 2 Main 10, 3 Main Still Picture, 4 Range Extensions, ...
    pub profile_idc: u8,
    pub compatibility_flags: u32,
    /// The 48 bits from general_progressive_source_flag on.
    pub constraint_flags: [u8; 6],
    /// 30 × the level number (93 = level 3.1).
    pub level_idc: u8,
}

impl HevcProfile {
    /// Reads the 12-byte general part shared by `hvcC` and `profile_tier_level()`.
    fn read(r: &mut BitReader<'_>) -> Result<Self, ParseError> {
        let first = r.read_u8()?;
        let compatibility_flags = r.read_bits(32)?;
        let mut constraint_flags = [0; 6];
        for b in &mut constraint_flags {
            *b = r.read_u8()?;
        }
        Ok(Self {
            profile_space: first >> 6,
            high_tier: first & 0x20 != 0,
            profile_idc: first & 0x1f,
            compatibility_flags,
            constraint_flags,
            level_idc: r.read_u8()?,
        })
    }

    /// The RFC 6381 codec string, e.g. `hvc1.1.6.L93.B0`.
    pub fn codec_string(&self) -> String {
        codec_string::hvc1(
            self.profile_space,
            self.high_tier,
            self.profile_idc,
            self.compatibility_flags,
            &self.constraint_flags,
            self.level_idc,
        )
    }
}

/// A parsed `hvcC` record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HevcDecoderConfig {
    pub profile: HevcProfile,
    /// 0 monochrome, 1 4:2:0, 2 4:2:2, 3 4:4:4.
    pub chroma_format_idc: u8,
    pub bit_depth_luma: u8,
    pub bit_depth_chroma: u8,
    /// Bytes in each NAL unit length prefix of the frames: 1, 2 or 4.
    pub nal_length_size: u8,
    /// Parameter sets, each a complete NAL unit with its two-byte header.
    /// Other arrays (SEI) are skipped.
    pub vps: Vec<Bytes>,
    pub sps: Vec<Bytes>,
    pub pps: Vec<Bytes>,
}

impl HevcDecoderConfig {
    /// Parses an `hvcC` record (e.g. the body of an Enhanced RTMP `hvc1` sequence start).
    pub fn parse(record: &Bytes) -> Result<Self, ParseError> {
        let mut c = Cursor::new(record, "hvcC record");
        let header: [u8; 23] = c.array()?;
        let [version, ptl @ .., _, _, _, _, _, _, _, _, _, _] = header;
        if version > 1 {
            return Err(ParseError::Unsupported("hvcC version"));
        }
        let profile = HevcProfile::read(&mut BitReader::new(&ptl))?;
        let [
            ..,
            chroma,
            luma,
            chroma_depth,
            _,
            _,
            length_size,
            array_count,
        ] = header;
        let nal_length_size = (length_size & 0x03) + 1;
        if nal_length_size == 3 {
            return Err(ParseError::Invalid("hvcC NAL length size"));
        }
        let mut config = Self {
            profile,
            chroma_format_idc: chroma & 0x03,
            bit_depth_luma: (luma & 0x07) + 8,
            bit_depth_chroma: (chroma_depth & 0x07) + 8,
            nal_length_size,
            vps: Vec::new(),
            sps: Vec::new(),
            pps: Vec::new(),
        };
        for _ in 0..array_count {
            let nal_type = c.u8()? & 0x3f;
            for _ in 0..c.u16()? {
                let len = c.u16()?;
                let nal = c.bytes(usize::from(len))?;
                match nal_type {
                    VPS => config.vps.push(nal),
                    SPS => config.sps.push(nal),
                    PPS => config.pps.push(nal),
                    _ => {}
                }
            }
        }
        Ok(config)
    }

    /// The RFC 6381 codec string, e.g. `hvc1.1.6.L93.B0`.
    pub fn codec_string(&self) -> String {
        self.profile.codec_string()
    }

    /// Parses the first SPS (picture size, bit depth).
    pub fn sps_info(&self) -> Result<HevcSpsInfo, ParseError> {
        HevcSpsInfo::parse(
            self.sps
                .first()
                .ok_or(ParseError::Invalid("hvcC without SPS"))?,
        )
    }

    /// Appends all VPS, SPS then PPS to `out` with start codes.
    pub fn write_annexb_parameter_sets(&self, out: &mut Vec<u8>) {
        for nal in self.vps.iter().chain(&self.sps).chain(&self.pps) {
            write_nal(nal, out);
        }
    }
}

/// What an H.265 SPS says about the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HevcSpsInfo {
    pub profile: HevcProfile,
    pub chroma_format_idc: u8,
    pub bit_depth_luma: u8,
    pub bit_depth_chroma: u8,
    /// Display width in pixels, after the conformance window.
    pub width: u32,
    /// Display height in pixels, after the conformance window.
    pub height: u32,
    /// `sps_max_num_reorder_pics` of the highest sub-layer: pictures that may come
    /// before a picture in decoding order and after it in output order.
    pub max_num_reorder_pics: u32,
}

impl HevcSpsInfo {
    /// Parses an SPS NAL unit, including its two-byte NAL header (type 33),
    /// without start code or length prefix.
    pub fn parse(nal: &[u8]) -> Result<Self, ParseError> {
        let Some(([header, _], rbsp)) = nal.split_first_chunk::<2>() else {
            return Err(ParseError::Truncated("HEVC SPS"));
        };
        if (header >> 1) & 0x3f != SPS {
            return Err(ParseError::Invalid("HEVC SPS NAL unit type"));
        }
        let mut r = BitReader::rbsp(rbsp);
        r.skip_bits(4)?; // sps_video_parameter_set_id
        let sub_layers = r.read_bits(3)?; // sps_max_sub_layers_minus1
        r.skip_bits(1)?; // sps_temporal_id_nesting_flag
        let profile = HevcProfile::read(&mut r)?;
        let mut present = [(false, false); 7];
        for p in present.iter_mut().take(sub_layers as usize) {
            *p = (r.read_bit()?, r.read_bit()?);
        }
        if sub_layers > 0 {
            r.skip_bits(2 * (8 - sub_layers))?; // reserved_zero_2bits
        }
        for &(profile_present, level_present) in present.iter().take(sub_layers as usize) {
            r.skip_bits(if profile_present { 88 } else { 0 } + if level_present { 8 } else { 0 })?;
        }
        r.read_ue()?; // sps_seq_parameter_set_id
        let chroma_format_idc = small(r.read_ue()?, 3, "chroma_format_idc")?;
        let separate_colour_plane = chroma_format_idc == 3 && r.read_bit()?;
        let full_width = u64::from(r.read_ue()?);
        let full_height = u64::from(r.read_ue()?);
        let mut window = [0u64; 4]; // left, right, top, bottom
        if r.read_bit()? {
            for w in &mut window {
                *w = u64::from(r.read_ue()?);
            }
        }
        let (sub_width, sub_height) = match (separate_colour_plane, chroma_format_idc) {
            (false, 1) => (2, 2),
            (false, 2) => (2, 1),
            _ => (1, 1),
        };
        let [left, right, top, bottom] = window;
        let bit_depth_luma = 8 + small(r.read_ue()?, 8, "bit_depth_luma")?;
        let bit_depth_chroma = 8 + small(r.read_ue()?, 8, "bit_depth_chroma")?;
        r.read_ue()?; // log2_max_pic_order_cnt_lsb_minus4
        // sps_sub_layer_ordering_info_present_flag: one entry per sub-layer, else one
        // for all; the last one is the highest sub-layer's.
        let first = if r.read_bit()? { 0 } else { sub_layers };
        let mut max_num_reorder_pics = 0;
        for _ in first..=sub_layers {
            r.read_ue()?; // sps_max_dec_pic_buffering_minus1
            max_num_reorder_pics = r.read_ue()?;
            r.read_ue()?; // sps_max_latency_increase_plus1
        }
        Ok(Self {
            profile,
            chroma_format_idc,
            bit_depth_luma,
            bit_depth_chroma,
            width: cropped(full_width, sub_width * (left + right))?,
            height: cropped(full_height, sub_height * (top + bottom))?,
            max_num_reorder_pics,
        })
    }

    /// The RFC 6381 codec string, e.g. `hvc1.1.6.L93.B0`.
    pub fn codec_string(&self) -> String {
        self.profile.codec_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_vectors::{HVCC, hex};

    #[test]
    fn parses_ffmpeg_records() {
        for (record, codec, width, height) in HVCC {
            let record = Bytes::from(hex(record));
            let config = HevcDecoderConfig::parse(&record).unwrap();
            assert_eq!(config.codec_string(), *codec);
            assert_eq!(config.nal_length_size, 4);
            assert_eq!(
                (config.vps.len(), config.sps.len(), config.pps.len()),
                (1, 1, 1)
            );
            let sps = config.sps_info().unwrap();
            assert_eq!((sps.width, sps.height), (*width, *height), "{codec}");
            assert_eq!(sps.profile, config.profile);
            assert_eq!(sps.codec_string(), *codec);
            assert_eq!(
                (sps.chroma_format_idc, sps.bit_depth_luma),
                (1, config.bit_depth_luma)
            );
            let mut out = Vec::new();
            config.write_annexb_parameter_sets(&mut out);
            assert_eq!(out.get(..6), Some(&[0, 0, 0, 1, 0x40, 0x01][..]));
        }
    }

    #[test]
    fn hand_built_records() {
        let header = "01 016000000090000000000000 f000 fc fd f8 f8 0000 0f";
        /// NAL length size, SPS, VPS and PPS counts.
        type Counts = Result<(u8, usize, usize, usize), ParseError>;
        let cases: &[(String, Counts)] = &[
            (format!("{header} 00"), Ok((4, 0, 0, 0))),
            // Two SPS in one array, an SEI array that is skipped, a PPS.
            (
                format!(
                    "{header} 03 a1 0002 0003 4201aa 0002 4201 27 0001 0002 4e01 22 0001 0001 44"
                ),
                Ok((4, 2, 0, 1)),
            ),
            (
                format!("{header} 01 20 0002 0001 40"),
                Err(ParseError::Truncated("hvcC record")),
            ),
            (
                header.replacen("01 ", "02 ", 1) + " 00",
                Err(ParseError::Unsupported("hvcC version")),
            ),
            (
                header.replace("0f", "0e") + " 00",
                Err(ParseError::Invalid("hvcC NAL length size")),
            ),
            (
                "01 0160".to_string(),
                Err(ParseError::Truncated("hvcC record")),
            ),
        ];
        for (input, want) in cases {
            let got = HevcDecoderConfig::parse(&Bytes::from(hex(input)))
                .map(|c| (c.nal_length_size, c.sps.len(), c.vps.len(), c.pps.len()));
            assert_eq!(got, *want, "{input}");
        }
    }

    #[test]
    fn rejects_bad_sps() {
        let cases: &[(&str, ParseError)] = &[
            ("", ParseError::Truncated("HEVC SPS")),
            ("42", ParseError::Truncated("HEVC SPS")),
            ("4401 c172", ParseError::Invalid("HEVC SPS NAL unit type")),
            ("4201 01 01600000", ParseError::Truncated("bitstream")),
        ];
        for (input, err) in cases {
            assert_eq!(HevcSpsInfo::parse(&hex(input)), Err(*err), "{input}");
        }
    }
}
