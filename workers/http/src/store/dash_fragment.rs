//! A track's DASH segment: its fragment of the muxed fMP4 segment (a byte range), with
//! the `mfhd` sequence number made the track's own. The muxed segment numbers its two
//! fragments one after the other (video 2k+1, audio 2k+2), as HLS players read both in
//! one file and VLC takes any gap for a discontinuity. A DASH representation sees one
//! track's fragments only: served as they are, it would count 1, 3, 5, and VLC 3 rebased
//! its clock on every segment and stalled on live DASH at 6 s segments. The renumbered
//! copy is made once per segment and track, at its first request, and shared by every
//! later one.

use super::segment::Segment;
use bytes::{Bytes, BytesMut};
use std::ops::Range;

/// Where a fragment's `mfhd` sequence number lies: after the `moof` header (8 bytes), the
/// `mfhd` header (8) and its version and flags (4).
const MFHD_SEQUENCE: Range<usize> = 20..24;

/// The DASH segment of one track (`audio` or video) of `segment`: `None` when the
/// segment has no fragment of that track.
pub fn dash_fragment(segment: &Segment, audio: bool) -> Option<Bytes> {
    let parts = segment.entry.dash?;
    let track = if audio { parts.audio } else { parts.video }?;
    let start = track.offset as usize;
    let end = start.checked_add(track.len as usize)?;
    // An index read from disk may name any range.
    if end > segment.m4s.len() {
        return None;
    }
    let slot = &segment.dash[usize::from(audio)];
    let fragment =
        slot.get_or_init(|| renumbered(&segment.m4s.slice(start..end), segment.entry.sequence));
    Some(fragment.clone())
}

/// `fragment` with its `mfhd` sequence number set to `sequence + 1` (segment numbers
/// count from 0, fragment numbers from 1); the fragment itself, shared and not copied,
/// when it does not open with a `moof` whose first box is its `mfhd`.
fn renumbered(fragment: &Bytes, sequence: u64) -> Bytes {
    let moof = fragment.get(4..8) == Some(&b"moof"[..]);
    let mfhd = fragment.get(12..16) == Some(&b"mfhd"[..]);
    if !(moof && mfhd && fragment.len() >= MFHD_SEQUENCE.end) {
        return fragment.clone();
    }
    let mut copy = BytesMut::from(&fragment[..]);
    let number = sequence.wrapping_add(1) as u32;
    copy[MFHD_SEQUENCE].copy_from_slice(&number.to_be_bytes());
    copy.freeze()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A `moof` with an `mfhd` numbered `number` and a byte of body after it.
    fn moof(number: u32) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&25u32.to_be_bytes());
        out.extend_from_slice(b"moof");
        out.extend_from_slice(&16u32.to_be_bytes());
        out.extend_from_slice(b"mfhd");
        out.extend_from_slice(&[0, 0, 0, 0]);
        out.extend_from_slice(&number.to_be_bytes());
        out.push(0xaa);
        out
    }

    #[test]
    fn a_fragment_gets_its_segment_number_and_keeps_the_rest() {
        let fragment = Bytes::from(moof(7));
        let out = renumbered(&fragment, 41);
        assert_eq!(&out[MFHD_SEQUENCE], &42u32.to_be_bytes());
        assert_eq!(out.len(), fragment.len());
        assert_eq!(out[..20], fragment[..20]);
        assert_eq!(out[24..], fragment[24..]);
    }

    #[test]
    fn what_is_not_a_moof_with_its_mfhd_first_is_served_as_it_is() {
        for bytes in [
            b"tiny".to_vec(),
            [&moof(3)[..12], b"traf", &moof(3)[16..]].concat(),
            [&moof(3)[..4], b"mdat", &moof(3)[8..]].concat(),
            moof(3)[..22].to_vec(),
        ] {
            let fragment = Bytes::from(bytes);
            assert_eq!(renumbered(&fragment, 9), fragment);
        }
    }
}
