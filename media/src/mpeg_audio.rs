//! MPEG audio frame headers (ISO/IEC 11172-3 §2.4.2.3, 13818-3; MPEG 2.5 as LAME
//! writes it): the four bytes before every MP3 (and MP1/MP2) frame say how long the
//! frame is and how many samples it holds, which is all an elementary MP3 stream
//! (an Icecast source) needs to be cut into frames and timed.

/// What one MPEG audio frame header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MpegAudioHeader {
    /// The whole frame, header included, in bytes.
    pub frame_len: usize,
    pub sample_rate: u32,
    /// Samples per channel in the frame: 384, 1152 or 576.
    pub samples: u32,
}

/// What an MPEG audio stream's frames share, the configuration of its track: version,
/// layer, sample rate and channels (not the bit rate, which may change every frame).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MpegAudioConfig {
    /// The header's version bits: 3 MPEG-1, 2 MPEG-2, 0 MPEG-2.5.
    pub version: u8,
    /// 1, 2 or 3.
    pub layer: u8,
    pub sample_rate: u32,
    /// 1 (mono) or 2.
    pub channels: u8,
}

impl MpegAudioConfig {
    /// How HLS `CODECS` names MP3 (Apple's HLS authoring spec, hls.js).
    pub const CODEC_STRING: &'static str = "mp4a.40.34";

    /// The configuration of the frame whose header starts `data`; `None` without a
    /// sync word or with a reserved version, layer or sample rate.
    pub fn of_frame(data: &[u8]) -> Option<Self> {
        let &[b0, b1, b2, b3] = data.first_chunk::<4>()?;
        if b0 != 0xff || b1 & 0xe0 != 0xe0 {
            return None;
        }
        let version = (b1 >> 3) & 0x03;
        let layer_bits = (b1 >> 1) & 0x03;
        let rate_index = usize::from((b2 >> 2) & 0x03);
        if version == 1 || layer_bits == 0 || rate_index == 3 {
            return None;
        }
        let base_rate = [44_100, 48_000, 32_000][rate_index];
        Some(Self {
            version,
            layer: 4 - layer_bits,
            sample_rate: match version {
                3 => base_rate,
                2 => base_rate / 2,
                _ => base_rate / 4,
            },
            // channel_mode 3 is single channel.
            channels: if b3 >> 6 == 3 { 1 } else { 2 },
        })
    }

    /// The track's configuration record (what a segment file keeps for it): a frame
    /// header reduced to the fields [`Self::of_frame`] reads, bit rate and padding zero.
    pub fn record(&self) -> [u8; 4] {
        let rate_index = match self.sample_rate * [4, 0, 2, 1][usize::from(self.version & 3)] {
            48_000 => 1,
            32_000 => 2,
            _ => 0,
        };
        let channel_mode = if self.channels == 1 { 3 } else { 0 };
        [
            0xff,
            0xe0 | (self.version << 3) | ((4 - self.layer.clamp(1, 3)) << 1) | 1,
            rate_index << 2,
            channel_mode << 6,
        ]
    }

    /// Samples per channel in a frame.
    pub fn frame_samples(&self) -> u32 {
        match (self.layer, self.version) {
            (1, _) => 384,
            (2, _) | (3, 3) => 1152,
            _ => 576,
        }
    }

    /// MPEG-1 audio (ISO/IEC 11172-3) rather than MPEG-2/2.5 (13818-3).
    pub fn mpeg1(&self) -> bool {
        self.version == 3
    }
}

/// Bit rates in kbit/s by index 1..=14, for MPEG-1 layers I, II, III and for MPEG-2/2.5
/// layer I and layers II/III.
const BITRATES: [[u16; 14]; 5] = [
    [
        32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448,
    ],
    [
        32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384,
    ],
    [
        32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320,
    ],
    [
        32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256,
    ],
    [8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
];

/// Parses the header at the start of `data`; `None` without a sync word, with a
/// reserved field, or with the free-format bit rate (its length is not in the header).
pub fn parse_header(data: &[u8]) -> Option<MpegAudioHeader> {
    let config = MpegAudioConfig::of_frame(data)?;
    let b2 = *data.get(2)?;
    let bitrate_index = usize::from(b2 >> 4);
    let padding = usize::from((b2 >> 1) & 0x01);
    if bitrate_index == 0 || bitrate_index == 15 {
        return None;
    }
    let table = match (config.mpeg1(), config.layer) {
        (true, 1) => 0,
        (true, 2) => 1,
        (true, _) => 2,
        (false, 1) => 3,
        (false, _) => 4,
    };
    let bitrate = u32::from(BITRATES[table][bitrate_index - 1]) * 1000;
    let sample_rate = config.sample_rate;
    let frame_len = match config.layer {
        1 => (12 * bitrate / sample_rate) as usize * 4 + padding * 4,
        2 => (144 * bitrate / sample_rate) as usize + padding,
        _ if config.mpeg1() => (144 * bitrate / sample_rate) as usize + padding,
        _ => (72 * bitrate / sample_rate) as usize + padding,
    };
    Some(MpegAudioHeader {
        frame_len,
        sample_rate,
        samples: config.frame_samples(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_survives_its_record() {
        // MPEG-1 layer III 44.1 kHz joint stereo; MPEG-2 layer III 24 kHz mono;
        // MPEG-2.5 layer III 8 kHz stereo.
        for (header, rate, channels, samples) in [
            ([0xff, 0xfb, 0x90, 0x64], 44_100, 2, 1152),
            ([0xff, 0xf3, 0x84, 0xc4], 24_000, 1, 576),
            ([0xff, 0xe3, 0x88, 0x04], 8_000, 2, 576),
        ] {
            let config = MpegAudioConfig::of_frame(&header).unwrap();
            assert_eq!(
                (
                    config.layer,
                    config.sample_rate,
                    config.channels,
                    config.frame_samples()
                ),
                (3, rate, channels, samples),
                "{header:x?}"
            );
            assert_eq!(MpegAudioConfig::of_frame(&config.record()), Some(config));
        }
        assert_eq!(
            MpegAudioConfig::of_frame(&[0xff, 0xfb, 0x9c, 0]),
            None,
            "reserved rate"
        );
        assert_eq!(
            MpegAudioConfig::of_frame(&[0x49, 0x44, 0x33, 3]),
            None,
            "ID3, no sync"
        );
    }

    #[test]
    fn common_headers() {
        // MPEG-1 layer III, 128 kbit/s, 44.1 kHz, no padding: 417 bytes.
        assert_eq!(
            parse_header(&[0xff, 0xfb, 0x90, 0x64]),
            Some(MpegAudioHeader {
                frame_len: 417,
                sample_rate: 44_100,
                samples: 1152
            })
        );
        // The same with padding: 418.
        assert_eq!(
            parse_header(&[0xff, 0xfb, 0x92, 0x64]).map(|h| h.frame_len),
            Some(418)
        );
        // MPEG-2 layer III, 64 kbit/s, 22.05 kHz: 576 samples, 208 bytes.
        let header = parse_header(&[0xff, 0xf3, 0x80, 0xc4]).unwrap_or_else(|| panic!("mpeg2"));
        assert_eq!((header.samples, header.sample_rate), (576, 22_050));
        assert_eq!(header.frame_len, 208);
        // MPEG-1 layer II, 192 kbit/s, 48 kHz: 576 bytes.
        assert_eq!(
            parse_header(&[0xff, 0xfd, 0xa4, 0x00]).map(|h| (h.frame_len, h.samples)),
            Some((576, 1152))
        );
    }

    #[test]
    fn reserved_and_free_format_headers_are_refused() {
        assert_eq!(parse_header(&[0xff, 0xfb, 0x00, 0x64]), None, "free format");
        assert_eq!(
            parse_header(&[0xff, 0xfb, 0xf0, 0x64]),
            None,
            "bad bit rate"
        );
        assert_eq!(
            parse_header(&[0xff, 0xfb, 0x9c, 0x64]),
            None,
            "reserved rate"
        );
        assert_eq!(
            parse_header(&[0xff, 0xeb, 0x90, 0x64]),
            None,
            "reserved version"
        );
        assert_eq!(
            parse_header(&[0xff, 0xf9, 0x90, 0x64]),
            None,
            "reserved layer"
        );
        assert_eq!(parse_header(&[0xff, 0xfb, 0x90]), None, "short");
        assert_eq!(parse_header(&[0x00, 0xfb, 0x90, 0x64]), None, "no sync");
    }
}
