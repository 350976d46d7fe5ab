//! H.264 sequence parameter set parsing, far enough for the facts a streaming
//! server needs: profile/constraints/level (for the RFC 6381 `avc1` string),
//! chroma format, bit depth, the cropped picture size, and from the VUI the reorder
//! depth ([`crate::sps_vui`]).

use crate::ParseError;
use crate::bits::BitReader;
use crate::codec_string;

/// What an H.264 SPS says about the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpsInfo {
    pub profile_idc: u8,
    /// constraint_set0..5 flags and reserved bits, as the byte after profile_idc.
    pub constraint_flags: u8,
    pub level_idc: u8,
    /// 0 monochrome, 1 4:2:0, 2 4:2:2, 3 4:4:4.
    pub chroma_format_idc: u8,
    pub bit_depth_luma: u8,
    pub bit_depth_chroma: u8,
    /// false for interlaced (field or MBAFF) coding.
    pub frame_mbs_only: bool,
    /// Display width in pixels, after frame cropping.
    pub width: u32,
    /// Display height in pixels, after frame cropping.
    pub height: u32,
    /// The VUI's `max_num_reorder_frames`: frames that may come before a frame in
    /// decoding order and after it in output order. `None` when the SPS does not say
    /// (or its VUI cannot be read, which the rest of the SPS does not depend on).
    pub max_num_reorder_frames: Option<u32>,
}

/// Profiles whose SPS carries chroma format, bit depth and scaling matrices.
const HIGH_PROFILES: [u8; 13] = [100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135];

impl SpsInfo {
    /// Parses an SPS NAL unit, including its one-byte NAL header (type 7),
    /// without start code or length prefix.
    pub fn parse(nal: &[u8]) -> Result<Self, ParseError> {
        let (&header, rbsp) = nal.split_first().ok_or(ParseError::Truncated("SPS"))?;
        if header & 0x1f != 7 {
            return Err(ParseError::Invalid("SPS NAL unit type"));
        }
        let mut r = BitReader::rbsp(rbsp);
        let profile_idc = r.read_u8()?;
        let constraint_flags = r.read_u8()?;
        let level_idc = r.read_u8()?;
        r.read_ue()?; // seq_parameter_set_id
        let (mut chroma_format_idc, mut separate_colour_plane) = (1, false);
        let (mut bit_depth_luma, mut bit_depth_chroma) = (8, 8);
        if HIGH_PROFILES.contains(&profile_idc) {
            chroma_format_idc = small(r.read_ue()?, 3, "chroma_format_idc")?;
            if chroma_format_idc == 3 {
                separate_colour_plane = r.read_bit()?;
            }
            bit_depth_luma = 8 + small(r.read_ue()?, 6, "bit_depth_luma")?;
            bit_depth_chroma = 8 + small(r.read_ue()?, 6, "bit_depth_chroma")?;
            r.read_bit()?; // qpprime_y_zero_transform_bypass_flag
            if r.read_bit()? {
                let lists = if chroma_format_idc == 3 { 12 } else { 8 };
                for i in 0..lists {
                    if r.read_bit()? {
                        skip_scaling_list(&mut r, if i < 6 { 16 } else { 64 })?;
                    }
                }
            }
        }
        r.read_ue()?; // log2_max_frame_num_minus4
        match r.read_ue()? {
            0 => {
                r.read_ue()?; // log2_max_pic_order_cnt_lsb_minus4
            }
            1 => {
                r.read_bit()?; // delta_pic_order_always_zero_flag
                r.read_se()?; // offset_for_non_ref_pic
                r.read_se()?; // offset_for_top_to_bottom_field
                let cycle = small(r.read_ue()?, 255, "num_ref_frames_in_pic_order_cnt_cycle")?;
                for _ in 0..cycle {
                    r.read_se()?;
                }
            }
            2 => {}
            _ => return Err(ParseError::Invalid("pic_order_cnt_type")),
        }
        r.read_ue()?; // max_num_ref_frames
        r.read_bit()?; // gaps_in_frame_num_value_allowed_flag
        let width_mbs = u64::from(r.read_ue()?) + 1;
        let height_map_units = u64::from(r.read_ue()?) + 1;
        let frame_mbs_only = r.read_bit()?;
        if !frame_mbs_only {
            r.read_bit()?; // mb_adaptive_frame_field_flag
        }
        r.read_bit()?; // direct_8x8_inference_flag
        let mut crop = [0u64; 4]; // left, right, top, bottom
        if r.read_bit()? {
            for c in &mut crop {
                *c = u64::from(r.read_ue()?);
            }
        }
        let field_factor = if frame_mbs_only { 1 } else { 2 };
        let (crop_unit_x, crop_unit_y) = match (separate_colour_plane, chroma_format_idc) {
            (true, _) | (false, 0) => (1, field_factor),
            (false, 1) => (2, 2 * field_factor),
            (false, 2) => (2, field_factor),
            (false, _) => (1, field_factor),
        };
        let max_num_reorder_frames = match r.read_bit() {
            Ok(true) => crate::sps_vui::max_num_reorder_frames(&mut r)
                .ok()
                .flatten(),
            _ => None,
        };
        let [left, right, top, bottom] = crop;
        let width = cropped(width_mbs * 16, crop_unit_x * (left + right))?;
        let height = cropped(
            field_factor * height_map_units * 16,
            crop_unit_y * (top + bottom),
        )?;
        Ok(Self {
            profile_idc,
            constraint_flags,
            level_idc,
            chroma_format_idc,
            bit_depth_luma,
            bit_depth_chroma,
            frame_mbs_only,
            width,
            height,
            max_num_reorder_frames,
        })
    }

    /// The RFC 6381 codec string, e.g. `avc1.64001f`.
    pub fn codec_string(&self) -> String {
        codec_string::avc1(self.profile_idc, self.constraint_flags, self.level_idc)
    }

    /// What in this stream many browsers, phones and TVs cannot decode (their hardware
    /// decoders take 8-bit 4:2:0, High profile at most), if anything: 4:4:4 or 4:2:2
    /// chroma, or more than 8 bits per sample. libx264 encodes 4:4:4 when its input is
    /// RGB or 4:4:4 (ffmpeg's `testsrc`), unless told `-pix_fmt yuv420p`.
    pub fn browser_trouble(&self) -> Option<String> {
        let chroma = match self.chroma_format_idc {
            2 => Some("4:2:2 chroma"),
            3 => Some("4:4:4 chroma"),
            _ => None,
        };
        let depth = self.bit_depth_luma.max(self.bit_depth_chroma);
        match (chroma, depth > 8) {
            (None, false) => None,
            (Some(chroma), false) => Some(chroma.to_owned()),
            (None, true) => Some(format!("{depth}-bit samples")),
            (Some(chroma), true) => Some(format!("{chroma} at {depth} bits")),
        }
    }
}

/// `value` as a u8 if it is at most `max`.
pub(crate) fn small(value: u32, max: u8, what: &'static str) -> Result<u8, ParseError> {
    u8::try_from(value)
        .ok()
        .filter(|&v| v <= max)
        .ok_or(ParseError::Invalid(what))
}

/// `full - crop` as a non-zero u32 size.
pub(crate) fn cropped(full: u64, crop: u64) -> Result<u32, ParseError> {
    full.checked_sub(crop)
        .filter(|&size| size > 0)
        .and_then(|size| u32::try_from(size).ok())
        .ok_or(ParseError::Invalid("picture size or cropping"))
}

fn skip_scaling_list(r: &mut BitReader<'_>, size: usize) -> Result<(), ParseError> {
    let (mut last_scale, mut next_scale) = (8i64, 8i64);
    for _ in 0..size {
        if next_scale != 0 {
            next_scale = (last_scale + i64::from(r.read_se()?)).rem_euclid(256);
        }
        if next_scale != 0 {
            last_scale = next_scale;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_vectors::{SPS_HIGH_720P, hex};

    /// MSB-first bit writer for hand-built SPS test vectors.
    #[derive(Default)]
    struct BitWriter {
        bits: Vec<bool>,
    }

    impl BitWriter {
        fn bits(&mut self, value: u64, n: u32) -> &mut Self {
            self.bits.extend((0..n).rev().map(|i| value >> i & 1 == 1));
            self
        }
        fn ue(&mut self, value: u64) -> &mut Self {
            let n = 64 - (value + 1).leading_zeros();
            self.bits(0, n - 1).bits(value + 1, n)
        }
        fn se(&mut self, value: i64) -> &mut Self {
            self.ue(if value > 0 {
                2 * value as u64 - 1
            } else {
                2 * value.unsigned_abs()
            })
        }
        fn bytes(&mut self) -> Vec<u8> {
            self.bits(1, 1); // rbsp_stop_one_bit
            self.bits
                .chunks(8)
                .map(|c| c.iter().fold(0, |b, &bit| b << 1 | u8::from(bit)) << (8 - c.len()))
                .collect()
        }
    }

    #[test]
    fn parses_real_sps() {
        let sps = SpsInfo::parse(&hex(SPS_HIGH_720P)).unwrap();
        assert_eq!(
            sps,
            SpsInfo {
                profile_idc: 100,
                constraint_flags: 0,
                level_idc: 31,
                chroma_format_idc: 1,
                bit_depth_luma: 8,
                bit_depth_chroma: 8,
                frame_mbs_only: true,
                width: 1280,
                height: 720,
                max_num_reorder_frames: Some(2),
            }
        );
        assert_eq!(sps.codec_string(), "avc1.64001f");
    }

    /// A High 4:4:4 SPS with every scaling list present (exercising the
    /// nextScale == 0 shortcut), POC type 1 and interlaced cropping.
    #[test]
    fn parses_scaling_lists_and_poc_type_1() {
        let mut w = BitWriter::default();
        w.bits(0x67, 8).bits(244, 8).bits(0, 8).bits(40, 8).ue(0);
        w.ue(3).bits(0, 1).ue(2).ue(2).bits(0, 1).bits(1, 1);
        for i in 0..12 {
            w.bits(1, 1);
            if i % 2 == 0 {
                w.se(-8); // nextScale 0: the list ends at once
            } else {
                for j in 0..if i < 6 { 16 } else { 64 } {
                    w.se(if j % 2 == 0 { 5 } else { -3 });
                }
            }
        }
        w.ue(0)
            .ue(1)
            .bits(1, 1)
            .se(-2)
            .se(1)
            .ue(3)
            .se(1)
            .se(-1)
            .se(7);
        w.ue(4)
            .bits(0, 1)
            .ue(119)
            .ue(33)
            .bits(0, 1)
            .bits(1, 1)
            .bits(1, 1);
        w.bits(1, 1).ue(4).ue(4).ue(2).ue(3);
        let sps = SpsInfo::parse(&w.bytes()).unwrap();
        assert_eq!(
            (
                sps.chroma_format_idc,
                sps.bit_depth_luma,
                sps.frame_mbs_only
            ),
            (3, 10, false)
        );
        assert_eq!((sps.width, sps.height), (1920 - 8, 1088 - 2 * 5));
        assert_eq!(
            sps.browser_trouble().as_deref(),
            Some("4:4:4 chroma at 10 bits")
        );
    }

    #[test]
    fn only_8_bit_4_2_0_is_no_trouble_for_browsers() {
        let mut sps = SpsInfo::parse(&hex(SPS_HIGH_720P)).unwrap();
        assert_eq!(sps.browser_trouble(), None);
        sps.chroma_format_idc = 3;
        assert_eq!(sps.browser_trouble().as_deref(), Some("4:4:4 chroma"));
        sps.chroma_format_idc = 2;
        assert_eq!(sps.browser_trouble().as_deref(), Some("4:2:2 chroma"));
        sps.chroma_format_idc = 1;
        sps.bit_depth_luma = 10;
        assert_eq!(sps.browser_trouble().as_deref(), Some("10-bit samples"));
        sps.bit_depth_luma = 8;
        sps.chroma_format_idc = 0;
        assert_eq!(sps.browser_trouble(), None, "monochrome decodes as 4:2:0");
    }

    #[test]
    fn parses_ffmpeg_records() {
        for (record, codec, width, height) in crate::test_vectors::AVCC {
            let record = hex(record);
            let sps_len = usize::from(u16::from_be_bytes([record[6], record[7]]));
            let sps = SpsInfo::parse(&record[8..8 + sps_len]).unwrap();
            assert_eq!(
                (sps.codec_string().as_str(), sps.width, sps.height),
                (*codec, *width, *height)
            );
            // libx264's defaults: B-frames with a pyramid, so two frames of reorder;
            // Baseline has no B-frames.
            let reorder = if sps.profile_idc == 66 { 0 } else { 2 };
            assert_eq!(sps.max_num_reorder_frames, Some(reorder), "{codec}");
        }
    }

    #[test]
    fn rejects_bad_input() {
        let cases: &[(&str, ParseError)] = &[
            ("", ParseError::Truncated("SPS")),
            ("68 64001f", ParseError::Invalid("SPS NAL unit type")),
            ("67 64001f", ParseError::Truncated("bitstream")),
            // High profile with chroma_format_idc 4.
            ("67 64001f 8a", ParseError::Invalid("chroma_format_idc")),
        ];
        for (input, err) in cases {
            assert_eq!(SpsInfo::parse(&hex(input)), Err(*err), "{input}");
        }
        // Cropping larger than the picture.
        let mut w = BitWriter::default();
        w.bits(0x67, 8)
            .bits(66, 8)
            .bits(0, 8)
            .bits(30, 8)
            .ue(0)
            .ue(0)
            .ue(2)
            .ue(1)
            .bits(0, 1);
        w.ue(0)
            .ue(0)
            .bits(1, 1)
            .bits(1, 1)
            .bits(1, 1)
            .ue(9)
            .ue(0)
            .ue(0)
            .ue(0);
        assert_eq!(
            SpsInfo::parse(&w.bytes()),
            Err(ParseError::Invalid("picture size or cropping"))
        );
    }
}
