//! The H.264 decoder configuration record (`avcC`, ISO/IEC 14496-15 §5.3.3) that
//! FLV sequence headers and MP4 sample entries carry: profile, level, NAL length
//! size and the parameter sets, as zero-copy slices of the record.

use bytes::Bytes;

use crate::ParseError;
use crate::annexb::write_nal;
use crate::codec_string;
use crate::cursor::Cursor;
use crate::sps::SpsInfo;

/// A parsed `avcC` record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AvcDecoderConfig {
    pub profile_idc: u8,
    /// The constraint flags byte (`profile_compatibility`).
    pub profile_compatibility: u8,
    pub level_idc: u8,
    /// Bytes in each NAL unit length prefix of the frames: 1, 2 or 4.
    pub nal_length_size: u8,
    /// Sequence parameter sets, each a complete NAL unit with header.
    pub sps: Vec<Bytes>,
    /// Picture parameter sets, each a complete NAL unit with header.
    pub pps: Vec<Bytes>,
}

impl AvcDecoderConfig {
    /// Parses an `avcC` record (e.g. the body of an FLV AVC sequence header).
    /// Trailing bytes (the High-profile extension) are ignored.
    pub fn parse(record: &Bytes) -> Result<Self, ParseError> {
        let mut c = Cursor::new(record, "avcC record");
        let [
            version,
            profile_idc,
            profile_compatibility,
            level_idc,
            length_size,
        ] = c.array()?;
        if version != 1 {
            return Err(ParseError::Unsupported("avcC version"));
        }
        let nal_length_size = (length_size & 0x03) + 1;
        if nal_length_size == 3 {
            return Err(ParseError::Invalid("avcC NAL length size"));
        }
        let sps_count = c.u8()? & 0x1f;
        let sps = (0..sps_count)
            .map(|_| nal(&mut c))
            .collect::<Result<_, _>>()?;
        let pps_count = c.u8()?;
        let pps = (0..pps_count)
            .map(|_| nal(&mut c))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            profile_idc,
            profile_compatibility,
            level_idc,
            nal_length_size,
            sps,
            pps,
        })
    }

    /// The RFC 6381 codec string, e.g. `avc1.64001f`.
    pub fn codec_string(&self) -> String {
        codec_string::avc1(self.profile_idc, self.profile_compatibility, self.level_idc)
    }

    /// Parses the first SPS (picture size, chroma format, bit depth).
    pub fn sps_info(&self) -> Result<SpsInfo, ParseError> {
        SpsInfo::parse(
            self.sps
                .first()
                .ok_or(ParseError::Invalid("avcC without SPS"))?,
        )
    }

    /// Appends all SPS then all PPS to `out` with start codes, as an MPEG-TS
    /// packager puts them before each IDR access unit.
    pub fn write_annexb_parameter_sets(&self, out: &mut Vec<u8>) {
        for nal in self.sps.iter().chain(&self.pps) {
            write_nal(nal, out);
        }
    }
}

/// A 16-bit-length-prefixed NAL unit.
fn nal(c: &mut Cursor<'_>) -> Result<Bytes, ParseError> {
    let len = c.u16()?;
    c.bytes(usize::from(len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_vectors::{AVCC, hex};

    #[test]
    fn parses_ffmpeg_records() {
        for (record, codec, width, height) in AVCC {
            let record = Bytes::from(hex(record));
            let config = AvcDecoderConfig::parse(&record).unwrap();
            assert_eq!(config.codec_string(), *codec);
            assert_eq!(config.nal_length_size, 4);
            assert_eq!((config.sps.len(), config.pps.len()), (1, 1));
            assert_eq!(config.sps[0].as_ptr(), record[8..].as_ptr(), "zero-copy");
            let sps = config.sps_info().unwrap();
            assert_eq!((sps.width, sps.height), (*width, *height), "{codec}");
            assert_eq!(sps.codec_string(), *codec);
        }
    }

    #[test]
    fn hand_built_records() {
        /// NAL length size, SPS count, PPS count.
        type Counts = Result<(u8, usize, usize), ParseError>;
        let cases: &[(&str, Counts)] = &[
            (
                "01 42c01e fd e1 0002 6742 02 0001 68 0002 68ce",
                Ok((2, 1, 2)),
            ),
            ("01 42c01e fc e0 00", Ok((1, 0, 0))),
            ("01 42c01e ff e2 0001 67 0001 67 00 ffff", Ok((4, 2, 0))),
            (
                "00 42c01e ff e0 00",
                Err(ParseError::Unsupported("avcC version")),
            ),
            (
                "01 42c01e fe e0 00",
                Err(ParseError::Invalid("avcC NAL length size")),
            ),
            (
                "01 42c01e ff e1 0005 6742",
                Err(ParseError::Truncated("avcC record")),
            ),
            (
                "01 42c01e ff e1 0001 67",
                Err(ParseError::Truncated("avcC record")),
            ),
            ("01 42c0", Err(ParseError::Truncated("avcC record"))),
        ];
        for (input, want) in cases {
            let got = AvcDecoderConfig::parse(&Bytes::from(hex(input)))
                .map(|c| (c.nal_length_size, c.sps.len(), c.pps.len()));
            assert_eq!(got, *want, "{input}");
        }
    }

    #[test]
    fn writes_parameter_sets() {
        let config =
            AvcDecoderConfig::parse(&Bytes::from(hex("01 42c01e ff e1 0002 6742 01 0002 68ce")))
                .unwrap();
        let mut out = Vec::new();
        config.write_annexb_parameter_sets(&mut out);
        assert_eq!(out, hex("00000001 6742 00000001 68ce"));
        let empty = AvcDecoderConfig::parse(&Bytes::from(hex("01 42c01e ff e0 00"))).unwrap();
        assert_eq!(
            empty.sps_info(),
            Err(ParseError::Invalid("avcC without SPS"))
        );
    }
}
