//! Video access units for MPEG-TS: a length-prefixed H.264/H.265 sample in
//! Annex B form, with an access unit delimiter first and, on keyframes that
//! carry no SPS, the parameter sets of the decoder configuration.

use crate::ParseError;
use crate::annexb::{nal_units, write_nal};
use crate::sample::{Sample, VideoConfig};

/// What the access unit writer needs to know of a codec's NAL units.
pub(super) struct NalCodec {
    hevc: bool,
    pub(super) aud_type: u8,
    sps_type: u8,
    /// The access unit delimiter to insert, without start code.
    pub(super) aud: &'static [u8],
}

impl NalCodec {
    fn nal_type(&self, header: u8) -> u8 {
        if self.hevc {
            (header >> 1) & 0x3f
        } else {
            header & 0x1f
        }
    }
}

/// H.264: AUD with primary_pic_type 7 (any slice type) and its stop bit.
pub(super) const AVC: NalCodec = NalCodec {
    hevc: false,
    aud_type: 9,
    sps_type: 7,
    aud: &[0x09, 0xf0],
};
/// H.265: AUD (layer 0, temporal id 1) with pic_type 2 (any) and its stop bit.
pub(super) const HEVC: NalCodec = NalCodec {
    hevc: true,
    aud_type: 35,
    sps_type: 33,
    aud: &[0x46, 0x01, 0x50],
};

/// Appends the access unit of a length-prefixed video sample in Annex B form:
/// AUD, parameter sets on keyframes without an in-band SPS, then the NAL units.
/// Returns whether the sample held any NAL unit; if not, nothing is appended.
pub(super) fn write_access_unit(
    config: &VideoConfig,
    sample: &Sample,
    out: &mut Vec<u8>,
) -> Result<bool, ParseError> {
    let codec = match config {
        VideoConfig::H264 { .. } => &AVC,
        VideoConfig::H265 { .. } => &HEVC,
    };
    let nal_type = |header| codec.nal_type(header);
    let (aud_type, sps_type) = (codec.aud_type, codec.sps_type);
    let length_size = config.nal_length_size();
    // First pass: validate the framing, find the first NAL type and any SPS.
    let mut first_type = None;
    let mut has_sps = false;
    for nal in nal_units(&sample.data, length_size) {
        let Some(&header) = nal?.first() else {
            continue;
        };
        let t = nal_type(header);
        first_type.get_or_insert(t);
        has_sps |= t == sps_type;
    }
    let Some(first_type) = first_type else {
        return Ok(false);
    };
    let mut nals = nal_units(&sample.data, length_size)
        .map_while(Result::ok)
        .filter(|nal| !nal.is_empty())
        .peekable();
    match nals.next_if(|_| first_type == aud_type) {
        Some(own_aud) => write_nal(own_aud, out),
        None => write_nal(codec.aud, out),
    }
    if sample.keyframe && !has_sps {
        match config {
            VideoConfig::H264 { config, .. } => config.write_annexb_parameter_sets(out),
            VideoConfig::H265 { config, .. } => config.write_annexb_parameter_sets(out),
        }
    }
    for nal in nals {
        if nal.first().is_some_and(|&b| nal_type(b) != aud_type) {
            write_nal(nal, out);
        }
    }
    Ok(true)
}
