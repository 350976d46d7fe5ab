//! Real codec bytes shared by the unit tests and the robustness test: records
//! produced by ffmpeg (libx264, libx265, native aac) and hand-checked headers.

/// Decodes a hex string, ignoring whitespace.
pub(crate) fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    digits
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
        .collect()
}

/// H.264 SPS, High profile level 3.1, 1280x720.
pub(crate) const SPS_HIGH_720P: &str =
    "67 64 00 1f ac d9 40 50 05 bb 01 10 00 00 03 00 10 00 00 03 03 c0 f1 83 19 60";

/// avcC records from ffmpeg/libx264 `-frames:v 2 out.mp4`, with the expected
/// (codec string, width, height, nal length size).
pub(crate) const AVCC: &[(&str, &str, u32, u32)] = &[
    // testsrc 640x360 yuv420p: High, cropped 368 -> 360.
    (
        "0164001effe1001a6764001eacd940a02ff97011000003000100000300320f162d9601000668ebe3cb22c0fdf8f800",
        "avc1.64001e",
        640,
        360,
    ),
    // testsrc 640x360 yuv444p: High 4:4:4 Predictive (chroma_format_idc 3).
    (
        "01f4001effe1001b67f4001e919b281405ff1380880000030008000003019078b16cb001000668ebe3c44844fff8f800",
        "avc1.f4001e",
        640,
        360,
    ),
    // 318x238 Constrained Baseline: cropping on both axes.
    (
        "0142c00dffe100196742c00dd90141feab011000000300100000030320f142a48001000568cb83cb20",
        "avc1.42c00d",
        318,
        238,
    ),
    // 720x576 interlaced (frame_mbs_only_flag = 0).
    (
        "0164001effe100186764001eacd940b424d8088000000300800000190f8a14cb01000668fba3cb22c0fdf8f800",
        "avc1.64001e",
        720,
        576,
    ),
    // 1280x720 yuv422p: High 4:2:2 (chroma_format_idc 2).
    (
        "017a001fffe1001a677a001fbcd9405005bb011000000300100000030320f183196001000668ebe3cb22c0fef8f800",
        "avc1.7a001f",
        1280,
        720,
    ),
    // 1920x1080 High level 4.0.
    (
        "01640028ffe1001b67640028acd940780227e5c044000003000400000300c83c60c65801000768ebe3cb3002c0fdf8f800",
        "avc1.640028",
        1920,
        1080,
    ),
];

/// hvcC records from ffmpeg/libx265 (SEI arrays dropped), with the expected
/// (codec string, width, height).
pub(crate) const HVCC: &[(&str, &str, u32, u32)] = &[
    // 640x360 Main, level 2.1.
    (
        "0101600000009000000000003ff000fcfdf8f800000f03a00001001840010c01ffff01600000030090000003000003003f959809a10001002a42010101600000030090000003000003003fa00502016965959a4932bc05a02000000300200000030321a2000100074401c172b46240",
        "hvc1.1.6.L63.90",
        640,
        360,
    ),
    // 1918x1078 Main 10, main tier, level 4: conformance window on both axes.
    (
        "01022000000090000000000078f000fcfdfafa00000f03a00001001840010c01ffff022000000300900000030000030078959809a10001002d420101022000000300900000030000030078a003c08010e754d96566924caf016808000003000800000300c840a2000100074401c172b46240",
        "hvc1.2.4.L120.90",
        1918,
        1078,
    ),
];

/// AudioSpecificConfigs with (object type, sampling frequency, channel config, codec string).
pub(crate) const ASC: &[(&str, u8, u32, u8, &str)] = &[
    ("12 10", 2, 44_100, 2, "mp4a.40.2"),
    ("11 88", 2, 48_000, 1, "mp4a.40.2"),
    // ffmpeg's FLV sequence header: LC 44.1 kHz mono plus a backward-compatible SBR sync extension.
    ("12 08 56 e5 00", 2, 44_100, 1, "mp4a.40.2"),
    // Explicit HE-AAC: SBR, 24 kHz core, 48 kHz extension, stereo.
    ("2b 11 88 00", 5, 24_000, 2, "mp4a.40.5"),
    // Escaped object type 42 (USAC), 48 kHz stereo.
    ("f9 46 40", 42, 48_000, 2, "mp4a.40.42"),
    // Explicit 24-bit sampling frequency.
    ("17 80 56 22 10", 2, 44_100, 2, "mp4a.40.2"),
];

/// Track fixtures shared by the muxer tests: the first avcC/hvcC vectors at 640x360.
pub(crate) fn h264_track() -> crate::sample::VideoTrack {
    let record = bytes::Bytes::from(hex(AVCC[0].0));
    crate::sample::VideoTrack {
        config: crate::sample::VideoConfig::H264 {
            config: crate::avc::AvcDecoderConfig::parse(&record).unwrap(),
            record,
        },
        width: 640,
        height: 360,
    }
}

pub(crate) fn h265_track() -> crate::sample::VideoTrack {
    let record = bytes::Bytes::from(hex(HVCC[0].0));
    crate::sample::VideoTrack {
        config: crate::sample::VideoConfig::H265 {
            config: crate::hevc::HevcDecoderConfig::parse(&record).unwrap(),
            record,
        },
        width: 640,
        height: 360,
    }
}

/// An AAC track from a hex AudioSpecificConfig (`"1210"`: LC, 44.1 kHz stereo).
pub(crate) fn aac_track(asc: &str) -> crate::sample::AudioTrack {
    let record = bytes::Bytes::from(hex(asc));
    crate::sample::AudioTrack {
        config: crate::sample::AudioConfig::Aac(crate::aac::AacConfig::parse(&record).unwrap()),
        record,
    }
}

/// A 4-byte length-prefixed sample of `nals` (MP4 sample form).
pub(crate) fn length_prefixed(nals: &[&[u8]]) -> bytes::Bytes {
    let mut data = Vec::new();
    for nal in nals {
        data.extend_from_slice(&(nal.len() as u32).to_be_bytes());
        data.extend_from_slice(nal);
    }
    bytes::Bytes::from(data)
}
