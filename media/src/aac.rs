//! AAC: the AudioSpecificConfig (ISO/IEC 14496-3 §1.6.2.1) that FLV AAC sequence
//! headers carry (object type incl. the escape, sampling frequency by index or
//! explicit, channel configuration, explicit SBR/PS signalling), the RFC 6381
//! `mp4a.40.N` string, and the 7-byte ADTS header MPEG-TS needs before each frame.

use crate::ParseError;
use crate::bits::BitReader;
use crate::codec_string;

/// Sampling frequencies by `sampling_frequency_index`; 13 and 14 are reserved,
/// 15 means an explicit 24-bit frequency follows.
pub const SAMPLING_FREQUENCIES: [u32; 13] = [
    96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350,
];

const EXPLICIT_FREQUENCY: u8 = 15;

/// A parsed AudioSpecificConfig.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AacConfig {
    /// The signalled audio object type: 2 LC, 5 SBR (HE-AAC), 29 PS (HE-AAC v2), ...
    pub object_type: u8,
    /// 0..=12, or 15 when the frequency was given explicitly.
    pub sampling_frequency_index: u8,
    /// The (core) sampling frequency in Hz.
    pub sampling_frequency: u32,
    /// 1..=6 that many channels, 7 for 7.1 (8 channels), 0 defined in-band.
    pub channel_config: u8,
    /// The underlying object type, which differs from `object_type` only with
    /// explicit SBR/PS signalling (object type 5 or 29 over usually 2).
    pub core_object_type: u8,
    /// The SBR output sampling frequency with explicit SBR/PS signalling.
    pub extension_sampling_frequency: Option<u32>,
}

impl AacConfig {
    /// Parses an AudioSpecificConfig; trailing fields (GASpecificConfig,
    /// backward-compatible extensions) are ignored.
    pub fn parse(data: &[u8]) -> Result<Self, ParseError> {
        let mut r = BitReader::new(data);
        let object_type = read_object_type(&mut r)?;
        let (sampling_frequency_index, sampling_frequency) = read_frequency(&mut r)?;
        let channel_config = r.read_bits(4)? as u8;
        let (core_object_type, extension_sampling_frequency) = if matches!(object_type, 5 | 29) {
            let (_, extension) = read_frequency(&mut r)?;
            (read_object_type(&mut r)?, Some(extension))
        } else {
            (object_type, None)
        };
        Ok(Self {
            object_type,
            sampling_frequency_index,
            sampling_frequency,
            channel_config,
            core_object_type,
            extension_sampling_frequency,
        })
    }

    /// The RFC 6381 codec string, e.g. `mp4a.40.2`.
    pub fn codec_string(&self) -> String {
        codec_string::mp4a(self.object_type)
    }

    /// Output channel count, if the channel configuration defines one.
    pub fn channel_count(&self) -> Option<u8> {
        match self.channel_config {
            1..=6 => Some(self.channel_config),
            7 => Some(8),
            _ => None,
        }
    }
}

fn read_object_type(r: &mut BitReader<'_>) -> Result<u8, ParseError> {
    match r.read_bits(5)? as u8 {
        31 => Ok(32 + r.read_bits(6)? as u8),
        object_type => Ok(object_type),
    }
}

fn read_frequency(r: &mut BitReader<'_>) -> Result<(u8, u32), ParseError> {
    let index = r.read_bits(4)? as u8;
    if index == EXPLICIT_FREQUENCY {
        return Ok((index, r.read_bits(24)?));
    }
    let frequency = SAMPLING_FREQUENCIES.get(usize::from(index));
    Ok((
        index,
        *frequency.ok_or(ParseError::Invalid("AAC sampling frequency index"))?,
    ))
}

/// Writes the 7-byte ADTS header (MPEG-4, no CRC) for one raw AAC frame of
/// `payload_len` bytes. ADTS can only describe object types 1..=4 (by the core
/// object type, so HE-AAC is signalled implicitly), tabled frequencies and
/// frames up to 8191 bytes including the header.
pub fn write_adts_header(
    config: &AacConfig,
    payload_len: usize,
    out: &mut [u8; 7],
) -> Result<(), ParseError> {
    if !(1..=4).contains(&config.core_object_type) {
        return Err(ParseError::Unsupported("object type in ADTS"));
    }
    if usize::from(config.sampling_frequency_index) >= SAMPLING_FREQUENCIES.len() {
        return Err(ParseError::Unsupported(
            "explicit sampling frequency in ADTS",
        ));
    }
    if config.channel_config > 7 {
        return Err(ParseError::Unsupported("channel configuration in ADTS"));
    }
    let frame_len = payload_len
        .checked_add(7)
        .filter(|&len| len < 1 << 13)
        .ok_or(ParseError::Unsupported("ADTS frame longer than 8191 bytes"))?;
    let profile = config.core_object_type - 1;
    let (freq, channels) = (config.sampling_frequency_index, config.channel_config);
    *out = [
        0xff,
        0xf1, // sync, MPEG-4, layer 0, no CRC
        (profile << 6) | (freq << 2) | (channels >> 2),
        ((channels & 3) << 6) | (frame_len >> 11) as u8,
        (frame_len >> 3) as u8,
        ((frame_len as u8 & 7) << 5) | 0x1f, // buffer fullness 0x7ff: VBR
        0xfc,                                // ... and one raw data block
    ];
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_vectors::{ASC, hex};

    #[test]
    fn parses_configs() {
        for (input, object_type, frequency, channels, codec) in ASC {
            let config = AacConfig::parse(&hex(input)).unwrap();
            assert_eq!(
                (
                    config.object_type,
                    config.sampling_frequency,
                    config.channel_config
                ),
                (*object_type, *frequency, *channels),
                "{input}"
            );
            assert_eq!(config.codec_string(), *codec);
        }
        let lc = AacConfig::parse(&hex("12 10")).unwrap();
        assert_eq!(
            lc,
            AacConfig {
                object_type: 2,
                sampling_frequency_index: 4,
                sampling_frequency: 44_100,
                channel_config: 2,
                core_object_type: 2,
                extension_sampling_frequency: None,
            }
        );
        let he = AacConfig::parse(&hex("2b 11 88 00")).unwrap();
        assert_eq!(
            (he.core_object_type, he.extension_sampling_frequency),
            (2, Some(48_000))
        );
        assert_eq!(
            AacConfig::parse(&hex("17 80 56 22 10"))
                .unwrap()
                .sampling_frequency_index,
            15
        );
    }

    #[test]
    fn rejects_bad_configs() {
        let cases: &[(&str, ParseError)] = &[
            ("", ParseError::Truncated("bitstream")),
            ("12", ParseError::Truncated("bitstream")),
            ("f9", ParseError::Truncated("bitstream")),
            ("16 90", ParseError::Invalid("AAC sampling frequency index")),
        ];
        for (input, err) in cases {
            assert_eq!(AacConfig::parse(&hex(input)), Err(*err), "{input}");
        }
    }

    #[test]
    fn writes_adts_headers() {
        let cases: &[(&str, usize, Result<&str, ParseError>)] = &[
            // What ffmpeg's ADTS muxer writes for LC 44.1 kHz stereo.
            ("12 10", 338, Ok("fff1 5080 2b3f fc")),
            ("12 10", 408, Ok("fff1 5080 33ff fc")),
            ("11 88", 0, Ok("fff1 4c40 00ff fc")),
            ("2b 11 88 00", 8184, Ok("fff1 5883 ffff fc")),
            (
                "2b 11 88 00",
                8185,
                Err(ParseError::Unsupported("ADTS frame longer than 8191 bytes")),
            ),
            (
                "17 80 56 22 10",
                10,
                Err(ParseError::Unsupported(
                    "explicit sampling frequency in ADTS",
                )),
            ),
            (
                "f9 46 40",
                10,
                Err(ParseError::Unsupported("object type in ADTS")),
            ),
        ];
        for (config, len, want) in cases {
            let mut out = [0; 7];
            let got = write_adts_header(&AacConfig::parse(&hex(config)).unwrap(), *len, &mut out);
            assert_eq!(got.map(|()| out.to_vec()), want.map(hex), "{config} {len}");
        }
        let mut out = [0; 7];
        let bad_channels = AacConfig {
            channel_config: 8,
            ..AacConfig::parse(&hex("12 10")).unwrap()
        };
        assert!(write_adts_header(&bad_channels, 1, &mut out).is_err());
        assert_eq!(usize::MAX.checked_add(7), None);
        let huge = write_adts_header(
            &AacConfig::parse(&hex("12 10")).unwrap(),
            usize::MAX,
            &mut out,
        );
        assert!(huge.is_err());
    }
}
