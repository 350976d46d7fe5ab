//! PES packet headers (ISO/IEC 13818-1 §2.4.3.6) and their 33-bit PTS/DTS
//! fields. Timestamps come in as strom's unwrapped 64-bit 90 kHz ticks and are
//! written modulo 2^33, as the field is.

use crate::ParseError;

/// stream_id of the first MPEG video stream (H.264 and H.265 alike).
pub(crate) const VIDEO_STREAM_ID: u8 = 0xe0;
/// stream_id of the first MPEG audio stream (AAC in ADTS).
pub(crate) const AUDIO_STREAM_ID: u8 = 0xc0;

/// 2^33 - 1: PTS, DTS and the PCR base are 33-bit counters.
const TIMESTAMP_MASK: i64 = (1 << 33) - 1;

/// `ticks` modulo 2^33, also for negative times (two's complement masking
/// equals Euclidean remainder for a power of two).
pub(crate) fn wrap33(ticks: i64) -> u64 {
    (ticks & TIMESTAMP_MASK) as u64
}

const PTS_ONLY: u8 = 0b0010;
const PTS_WITH_DTS: u8 = 0b0011;
const DTS: u8 = 0b0001;

/// Appends a PES header for `stream_id` with PTS, and DTS when it differs
/// from the PTS. `payload_len` is `None` for an unbounded PES
/// (PES_packet_length 0, allowed for video only) or the exact number of
/// payload bytes that will follow.
pub(crate) fn write_pes_header(
    stream_id: u8,
    pts: i64,
    dts: i64,
    payload_len: Option<usize>,
    out: &mut Vec<u8>,
) -> Result<(), ParseError> {
    let with_dts = dts != pts;
    let header_data_len: u8 = if with_dts { 10 } else { 5 };
    let packet_len = match payload_len {
        None => 0,
        Some(len) => len
            .checked_add(3 + usize::from(header_data_len))
            .and_then(|n| u16::try_from(n).ok())
            .ok_or(ParseError::Unsupported(
                "PES packet longer than 65535 bytes",
            ))?,
    };
    let [len_hi, len_lo] = packet_len.to_be_bytes();
    out.extend_from_slice(&[
        0x00,
        0x00,
        0x01,
        stream_id,
        len_hi,
        len_lo,
        0x84, // marker '10', not scrambled, data_alignment_indicator
        if with_dts { 0xc0 } else { 0x80 },
        header_data_len,
    ]);
    if with_dts {
        write_timestamp(PTS_WITH_DTS, pts, out);
        write_timestamp(DTS, dts, out);
    } else {
        write_timestamp(PTS_ONLY, pts, out);
    }
    Ok(())
}

/// The 5-byte PTS/DTS field: a 4-bit prefix, then the 33 bits in groups of
/// 3, 15 and 15, each followed by a marker bit.
fn write_timestamp(prefix: u8, ticks: i64, out: &mut Vec<u8>) {
    let t = wrap33(ticks);
    out.extend_from_slice(&[
        (prefix << 4) | ((t >> 29) & 0x0e) as u8 | 1,
        (t >> 22) as u8,
        ((t >> 14) & 0xfe) as u8 | 1,
        (t >> 7) as u8,
        ((t << 1) & 0xfe) as u8 | 1,
    ]);
}

/// Reads a 5-byte PTS/DTS field back (tests only).
#[cfg(test)]
pub(crate) fn read_timestamp(b: &[u8]) -> u64 {
    (u64::from(b[0] & 0x0e) << 29)
        | (u64::from(b[1]) << 22)
        | (u64::from(b[2] & 0xfe) << 14)
        | (u64::from(b[3]) << 7)
        | (u64::from(b[4]) >> 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_vectors::hex;

    #[test]
    fn timestamps_round_trip_and_wrap() {
        const WRAP: i64 = 1 << 33;
        let cases: &[(i64, u64)] = &[
            (0, 0),
            (1, 1),
            (90_000, 90_000),
            (0x1_2345_6789, 0x1_2345_6789),
            ((1 << 32) + 3, (1 << 32) + 3),
            (WRAP - 1, (1 << 33) - 1),
            (WRAP, 0),
            (WRAP + 5, 5),
            (3 * WRAP + 7, 7),
            (-1, (1 << 33) - 1),
            (-WRAP, 0),
            (i64::MAX, (1 << 33) - 1),
            (i64::MIN, 0),
        ];
        for &(ticks, want) in cases {
            let mut out = Vec::new();
            write_timestamp(PTS_ONLY, ticks, &mut out);
            assert_eq!(out.len(), 5);
            assert_eq!(out[0] >> 4, PTS_ONLY, "{ticks}");
            assert_eq!(
                [out[0] & 1, out[2] & 1, out[4] & 1],
                [1, 1, 1],
                "markers {ticks}"
            );
            assert_eq!(read_timestamp(&out), want, "{ticks}");
            assert_eq!(wrap33(ticks), want, "{ticks}");
        }
    }

    #[test]
    fn headers() {
        type Case = (
            u8,
            i64,
            i64,
            Option<usize>,
            Result<&'static str, ParseError>,
        );
        let cases: &[Case] = &[
            // The timestamp bytes match ffmpeg's for DTS 126000 (`11 0007 d861`).
            (
                0xe0,
                126_000,
                122_400,
                None,
                Ok("000001 e0 0000 84 c0 0a 31 0007 d861 11 0007 bc41"),
            ),
            (
                0xe0,
                90_000,
                90_000,
                None,
                Ok("000001 e0 0000 84 80 05 21 0005 bf21"),
            ),
            (
                0xc0,
                0,
                0,
                Some(100),
                Ok("000001 c0 006c 84 80 05 21 0001 0001"),
            ),
            (
                0xc0,
                0,
                0,
                Some(65_527),
                Ok("000001 c0 ffff 84 80 05 21 0001 0001"),
            ),
            (
                0xc0,
                0,
                0,
                Some(65_528),
                Err(ParseError::Unsupported(
                    "PES packet longer than 65535 bytes",
                )),
            ),
            (
                0xc0,
                0,
                0,
                Some(usize::MAX),
                Err(ParseError::Unsupported(
                    "PES packet longer than 65535 bytes",
                )),
            ),
        ];
        for (stream_id, pts, dts, len, want) in cases {
            let mut out = Vec::new();
            let got = write_pes_header(*stream_id, *pts, *dts, *len, &mut out).map(|()| out);
            assert_eq!(got, want.map(hex), "{pts} {dts} {len:?}");
        }
    }
}
