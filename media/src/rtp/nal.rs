//! H.264 (RFC 6184) and H.265 (RFC 7798) packetization of a length-prefixed access unit:
//! a NAL unit that fits goes alone (single NAL unit packet), a larger one is split into
//! fragmentation units (FU-A, H.265 FU). Parameter sets given by the caller go first
//! (before a keyframe), so players that join late or miss a change of parameters decode.

use super::{Prefix, RtpPayload};
use crate::error::ParseError;
use bytes::Bytes;

const H264_FU_A: u8 = 28;
const H265_FU: u8 = 49;

/// Splits `sample` (NAL units each behind a big-endian length of `length_size` bytes)
/// into its NAL units, as zero-copy slices; empty units are skipped.
pub fn split_nal_units(sample: &Bytes, length_size: u8) -> Result<Vec<Bytes>, ParseError> {
    let size = usize::from(length_size);
    if !matches!(size, 1 | 2 | 4) {
        return Err(ParseError::Invalid("NAL length size"));
    }
    let mut units = Vec::new();
    let mut at = 0;
    while at < sample.len() {
        let Some(prefix) = sample.get(at..at + size) else {
            return Err(ParseError::Truncated("NAL unit length"));
        };
        let len = prefix
            .iter()
            .fold(0usize, |len, byte| (len << 8) | usize::from(*byte));
        at += size;
        let end = at
            .checked_add(len)
            .filter(|end| *end <= sample.len())
            .ok_or(ParseError::Truncated("NAL unit"))?;
        if len > 0 {
            units.push(sample.slice(at..end));
        }
        at = end;
    }
    Ok(units)
}

/// The RTP payloads of one H.264 access unit; the last carries the marker bit.
pub fn packetize_h264(
    sample: &Bytes,
    length_size: u8,
    parameter_sets: &[Bytes],
    max_payload: usize,
) -> Result<Vec<RtpPayload>, ParseError> {
    let units = split_nal_units(sample, length_size)?;
    let mut out = Vec::new();
    for nal in parameter_sets.iter().chain(&units) {
        let Some(&first) = nal.first() else { continue };
        if nal.len() <= max_payload {
            out.push(single(nal.clone()));
            continue;
        }
        let indicator = (first & 0xe0) | H264_FU_A;
        let nal_type = first & 0x1f;
        fragment(
            &nal.slice(1..),
            max_payload.saturating_sub(2),
            &mut out,
            |start, end| {
                let header = (u8::from(start) << 7) | (u8::from(end) << 6) | nal_type;
                Prefix::new(&[indicator, header])
            },
        );
    }
    mark_last(&mut out);
    Ok(out)
}

/// The RTP payloads of one H.265 access unit; the last carries the marker bit.
pub fn packetize_h265(
    sample: &Bytes,
    length_size: u8,
    parameter_sets: &[Bytes],
    max_payload: usize,
) -> Result<Vec<RtpPayload>, ParseError> {
    let units = split_nal_units(sample, length_size)?;
    let mut out = Vec::new();
    for nal in parameter_sets.iter().chain(&units) {
        if nal.len() < 2 {
            continue;
        }
        if nal.len() <= max_payload {
            out.push(single(nal.clone()));
            continue;
        }
        let nal_type = (nal[0] >> 1) & 0x3f;
        // The payload header is the NAL header with the type replaced by 49 (FU).
        let payload_header = [(nal[0] & 0x81) | (H265_FU << 1), nal[1]];
        fragment(
            &nal.slice(2..),
            max_payload.saturating_sub(3),
            &mut out,
            |start, end| {
                let header = (u8::from(start) << 7) | (u8::from(end) << 6) | nal_type;
                Prefix::new(&[payload_header[0], payload_header[1], header])
            },
        );
    }
    mark_last(&mut out);
    Ok(out)
}

fn single(nal: Bytes) -> RtpPayload {
    RtpPayload {
        prefix: Prefix::default(),
        body: nal,
        marker: false,
    }
}

/// Cuts `rest` into pieces of at most `piece` bytes, each behind `prefix(start, end)`.
fn fragment(
    rest: &Bytes,
    piece: usize,
    out: &mut Vec<RtpPayload>,
    prefix: impl Fn(bool, bool) -> Prefix,
) {
    let piece = piece.max(1);
    let mut at = 0;
    while at < rest.len() {
        let end = (at + piece).min(rest.len());
        out.push(RtpPayload {
            prefix: prefix(at == 0, end == rest.len()),
            body: rest.slice(at..end),
            marker: false,
        });
        at = end;
    }
}

fn mark_last(out: &mut [RtpPayload]) {
    if let Some(last) = out.last_mut() {
        last.marker = true;
    }
}
