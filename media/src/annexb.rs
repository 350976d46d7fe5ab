//! Length-prefixed NAL units (the AVCC/HVCC framing used by FLV and MP4) and
//! their conversion to Annex B byte streams (start codes) for MPEG-TS; plus
//! key-frame detection on NAL unit types. Works for H.264 and H.265 alike.

use crate::ParseError;

const START_CODE: [u8; 4] = [0, 0, 0, 1];

/// Iterator over the NAL units of a length-prefixed frame; yields one error and
/// stops if a length field is malformed or runs past the end.
#[derive(Debug, Clone)]
pub struct NalUnits<'a> {
    rest: &'a [u8],
    length_size: u8,
}

/// The NAL units of `frame`, each prefixed by a big-endian length of
/// `nal_length_size` bytes (1..=4, from the decoder configuration record).
pub fn nal_units(frame: &[u8], nal_length_size: u8) -> NalUnits<'_> {
    NalUnits {
        rest: frame,
        length_size: nal_length_size,
    }
}

impl<'a> Iterator for NalUnits<'a> {
    type Item = Result<&'a [u8], ParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let rest = std::mem::take(&mut self.rest);
        if !(1..=4).contains(&self.length_size) {
            return Some(Err(ParseError::Invalid("NAL length size")));
        }
        let Some((len, body)) = rest.split_at_checked(usize::from(self.length_size)) else {
            return Some(Err(ParseError::Truncated("NAL length")));
        };
        let len = len.iter().fold(0usize, |n, &b| (n << 8) | usize::from(b));
        let Some((nal, tail)) = body.split_at_checked(len) else {
            return Some(Err(ParseError::Truncated("NAL unit")));
        };
        self.rest = tail;
        Some(Ok(nal))
    }
}

/// Appends `nal` to `out` behind a four-byte start code.
pub fn write_nal(nal: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&START_CODE);
    out.extend_from_slice(nal);
}

/// Appends the NAL units of a length-prefixed `frame` to `out` in Annex B form,
/// skipping empty NAL units. On error `out` is left as it was.
pub fn to_annexb(frame: &[u8], nal_length_size: u8, out: &mut Vec<u8>) -> Result<(), ParseError> {
    let start = out.len();
    out.reserve(frame.len());
    for nal in nal_units(frame, nal_length_size) {
        match nal {
            Ok([]) => {}
            Ok(nal) => write_nal(nal, out),
            Err(e) => {
                out.truncate(start);
                return Err(e);
            }
        }
    }
    Ok(())
}

/// Whether an H.264 frame holds an IDR slice (NAL type 5). Malformed framing
/// counts only the NAL units before the damage.
pub fn contains_idr(frame: &[u8], nal_length_size: u8) -> bool {
    nal_units(frame, nal_length_size)
        .map_while(Result::ok)
        .any(|nal| nal.first().is_some_and(|b| b & 0x1f == 5))
}

/// Whether an H.265 frame holds an IRAP picture (NAL types 16..=23: BLA, IDR, CRA).
pub fn contains_hevc_irap(frame: &[u8], nal_length_size: u8) -> bool {
    nal_units(frame, nal_length_size)
        .map_while(Result::ok)
        .any(|nal| {
            nal.first()
                .is_some_and(|b| (16..=23).contains(&((b >> 1) & 0x3f)))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_vectors::hex;

    #[test]
    fn converts_to_annexb() {
        let cases: &[(&str, u8, Result<&str, ParseError>)] = &[
            (
                "00000002 0910 00000003 65aabb",
                4,
                Ok("00000001 0910 00000001 65aabb"),
            ),
            ("0002 0910 0001 41", 2, Ok("00000001 0910 00000001 41")),
            ("02 0910 01 41", 1, Ok("00000001 0910 00000001 41")),
            ("000002 0910", 3, Ok("00000001 0910")),
            ("00000000 00000001 41", 4, Ok("00000001 41")),
            ("", 4, Ok("")),
            (
                "00000002 0910 00000009 65",
                4,
                Err(ParseError::Truncated("NAL unit")),
            ),
            (
                "00000002 0910 0000",
                4,
                Err(ParseError::Truncated("NAL length")),
            ),
            ("02 0910", 0, Err(ParseError::Invalid("NAL length size"))),
            ("02 0910", 5, Err(ParseError::Invalid("NAL length size"))),
        ];
        for (input, size, want) in cases {
            let mut out = vec![0xee];
            let got = to_annexb(&hex(input), *size, &mut out);
            match want {
                Ok(want) => {
                    assert_eq!(got, Ok(()), "{input}");
                    assert_eq!(out[1..], hex(want)[..], "{input}");
                }
                Err(e) => {
                    assert_eq!(got, Err(*e), "{input}");
                    assert_eq!(out, [0xee], "{input}");
                }
            }
        }
    }

    #[test]
    fn detects_key_frames() {
        let cases: &[(&str, bool, bool)] = &[
            // AUD, SPS, PPS, IDR slice
            (
                "00000002 0910 00000002 6764 00000002 68eb 00000002 6588",
                true,
                false,
            ),
            // AUD, non-IDR slice
            ("00000002 0910 00000002 419a", false, false),
            // HEVC AUD, IDR_W_RADL (19), CRA (21), TRAIL_R (1)
            ("00000003 460150 00000002 2601", false, true),
            ("00000002 2a01", false, true),
            ("00000002 0201", false, false),
            // IDR behind a damaged length is not seen.
            ("00000009 0910 00000002 6588", false, false),
        ];
        for (input, idr, irap) in cases {
            assert_eq!(contains_idr(&hex(input), 4), *idr, "{input}");
            assert_eq!(contains_hevc_irap(&hex(input), 4), *irap, "{input}");
        }
    }
}
