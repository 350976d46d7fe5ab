//! The one fact strom reads from an H.264 SPS's VUI (ITU-T H.264 Annex E.1.1):
//! `max_num_reorder_frames` of the bitstream restriction, which says how many frames
//! may precede a frame in decoding order and follow it in output order. Producers that
//! receive presentation times only (RTP) derive decode times from it.

use crate::ParseError;
use crate::bits::BitReader;

/// `aspect_ratio_idc` meaning an explicit sample aspect ratio follows.
const EXTENDED_SAR: u32 = 255;

/// Reads `vui_parameters()` from `r` (placed just after `vui_parameters_present_flag`)
/// up to the bitstream restriction; `None` when the SPS has none.
pub(crate) fn max_num_reorder_frames(r: &mut BitReader<'_>) -> Result<Option<u32>, ParseError> {
    if r.read_bit()? && r.read_bits(8)? == EXTENDED_SAR {
        r.skip_bits(32)?; // sar_width, sar_height
    }
    if r.read_bit()? {
        r.skip_bits(1)?; // overscan_appropriate_flag
    }
    if r.read_bit()? {
        r.skip_bits(4)?; // video_format, video_full_range_flag
        if r.read_bit()? {
            r.skip_bits(24)?; // colour_primaries, transfer, matrix
        }
    }
    if r.read_bit()? {
        r.read_ue()?; // chroma_sample_loc_type_top_field
        r.read_ue()?; // chroma_sample_loc_type_bottom_field
    }
    if r.read_bit()? {
        r.skip_bits(65)?; // num_units_in_tick, time_scale, fixed_frame_rate_flag
    }
    let nal_hrd = r.read_bit()?;
    if nal_hrd {
        skip_hrd(r)?;
    }
    let vcl_hrd = r.read_bit()?;
    if vcl_hrd {
        skip_hrd(r)?;
    }
    if nal_hrd || vcl_hrd {
        r.skip_bits(1)?; // low_delay_hrd_flag
    }
    r.skip_bits(1)?; // pic_struct_present_flag
    if !r.read_bit()? {
        return Ok(None);
    }
    r.skip_bits(1)?; // motion_vectors_over_pic_boundaries_flag
    for _ in 0..4 {
        // max_bytes_per_pic_denom, max_bits_per_mb_denom, log2_max_mv_length_*
        r.read_ue()?;
    }
    Ok(Some(r.read_ue()?))
}

/// Skips `hrd_parameters()` (E.1.2).
fn skip_hrd(r: &mut BitReader<'_>) -> Result<(), ParseError> {
    let cpb_count = r.read_ue()?.saturating_add(1);
    if cpb_count > 32 {
        return Err(ParseError::Invalid("cpb_cnt_minus1"));
    }
    r.skip_bits(8)?; // bit_rate_scale, cpb_size_scale
    for _ in 0..cpb_count {
        r.read_ue()?; // bit_rate_value_minus1
        r.read_ue()?; // cpb_size_value_minus1
        r.skip_bits(1)?; // cbr_flag
    }
    r.skip_bits(20) // four 5-bit delay and length fields
}
