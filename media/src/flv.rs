//! FLV tag *payloads* as carried in RTMP audio (message type 8) and video (type 9)
//! messages: the tag header byte(s) that precede codec data, for legacy FLV
//! (AVC codec id 7, HEVC codec id 12 as some encoders send, AAC, MP3) and
//! Enhanced RTMP v1 video (ex-header bit, FourCC `avc1`/`hvc1`/`av01`/`vp09`).
//!
//! Codec bodies are zero-copy [`Bytes::slice`]s of the message payload. Enhanced
//! RTMP v2 multitrack/ModEx video and ex-header audio (sound format 9) are
//! reported as [`ParseError::Unsupported`].

use bytes::Bytes;

use crate::ParseError;

/// Video codec named by a legacy codec id or an Enhanced RTMP FourCC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VideoCodec {
    H264,
    H265,
    Av1,
    Vp9,
    /// Another legacy FLV codec id (2 Sorenson H.263, 4 VP6, ...).
    Legacy(u8),
    /// Another Enhanced RTMP FourCC.
    FourCc([u8; 4]),
}

/// FLV video frame type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameType {
    /// 1: key frame (a seekable frame; also used on sequence headers).
    Key,
    /// 2: inter frame.
    Inter,
    /// 3 disposable inter, 4 generated key frame, 5 video info/command, or reserved.
    Other(u8),
}

impl FrameType {
    fn from_bits(bits: u8) -> Self {
        match bits {
            1 => Self::Key,
            2 => Self::Inter,
            n => Self::Other(n),
        }
    }
}

/// What a video tag carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VideoPacket {
    /// Decoder configuration record (`avcC`, `hvcC`, `av1C`, `vpcC`).
    SequenceHeader(Bytes),
    /// Coded frame data: length-prefixed NAL units for H.264/H.265, OBUs for AV1.
    /// The presentation time is the tag's timestamp plus `composition_time_ms`.
    Frame {
        composition_time_ms: i32,
        data: Bytes,
    },
    EndOfSequence,
    /// Enhanced RTMP metadata (AMF-encoded, e.g. `colorInfo`).
    Metadata(Bytes),
    /// Anything else: bodies of other legacy codecs, command frames,
    /// Enhanced RTMP MPEG2TSSequenceStart.
    Other(Bytes),
}

/// A parsed RTMP video message payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VideoTag {
    /// The RTMP timestamp (decode time) in milliseconds.
    pub timestamp_ms: u32,
    pub codec: VideoCodec,
    pub frame_type: FrameType,
    /// Whether the tag used the Enhanced RTMP ex-header.
    pub enhanced: bool,
    pub packet: VideoPacket,
}

const SEQUENCE_START: u8 = 0;
const CODED_FRAMES: u8 = 1;
const SEQUENCE_END: u8 = 2;
const CODED_FRAMES_X: u8 = 3;
const METADATA: u8 = 4;
const MPEG2TS_SEQUENCE_START: u8 = 5;

impl VideoTag {
    /// Parses an RTMP video message payload received with `timestamp_ms`.
    pub fn parse(payload: &Bytes, timestamp_ms: u32) -> Result<Self, ParseError> {
        let &first = payload
            .first()
            .ok_or(ParseError::Truncated("video tag header"))?;
        let (codec, frame_type, enhanced, packet) = if first & 0x80 != 0 {
            let frame_type = FrameType::from_bits((first >> 4) & 0x07);
            let (codec, packet) = parse_enhanced(payload, first & 0x0f, frame_type)?;
            (codec, frame_type, true, packet)
        } else {
            let (codec, packet) = parse_legacy(payload, first & 0x0f)?;
            (codec, FrameType::from_bits(first >> 4), false, packet)
        };
        Ok(Self {
            timestamp_ms,
            codec,
            frame_type,
            enhanced,
            packet,
        })
    }

    /// A key frame carrying coded data (not a sequence header).
    pub fn is_keyframe(&self) -> bool {
        self.frame_type == FrameType::Key && matches!(self.packet, VideoPacket::Frame { .. })
    }

    pub fn is_sequence_header(&self) -> bool {
        matches!(self.packet, VideoPacket::SequenceHeader(_))
    }

    /// Presentation time in milliseconds: timestamp plus composition time offset.
    pub fn pts_ms(&self) -> i64 {
        let cts = match self.packet {
            VideoPacket::Frame {
                composition_time_ms,
                ..
            } => composition_time_ms,
            _ => 0,
        };
        i64::from(self.timestamp_ms) + i64::from(cts)
    }
}

/// Sign-extends a 24-bit big-endian composition time.
fn si24([a, b, c]: [u8; 3]) -> i32 {
    i32::from_be_bytes([a, b, c, 0]) >> 8
}

fn parse_legacy(payload: &Bytes, codec_id: u8) -> Result<(VideoCodec, VideoPacket), ParseError> {
    let codec = match codec_id {
        7 => VideoCodec::H264,
        12 => VideoCodec::H265,
        id => {
            return Ok((
                VideoCodec::Legacy(id),
                VideoPacket::Other(payload.slice(1..)),
            ));
        }
    };
    let Some(&[packet_type, c0, c1, c2]) = payload.get(1..5) else {
        return Err(ParseError::Truncated("AVC video packet header"));
    };
    let body = payload.slice(5..);
    let packet = match packet_type {
        0 => VideoPacket::SequenceHeader(body),
        1 => VideoPacket::Frame {
            composition_time_ms: si24([c0, c1, c2]),
            data: body,
        },
        2 => VideoPacket::EndOfSequence,
        _ => return Err(ParseError::Unsupported("AVC packet type")),
    };
    Ok((codec, packet))
}

fn parse_enhanced(
    payload: &Bytes,
    packet_type: u8,
    frame_type: FrameType,
) -> Result<(VideoCodec, VideoPacket), ParseError> {
    if packet_type > MPEG2TS_SEQUENCE_START {
        return Err(ParseError::Unsupported("Enhanced RTMP video packet type"));
    }
    let Some(&[a, b, c, d]) = payload.get(1..5) else {
        return Err(ParseError::Truncated("Enhanced RTMP video FourCC"));
    };
    let codec = match &[a, b, c, d] {
        b"avc1" => VideoCodec::H264,
        b"hvc1" => VideoCodec::H265,
        b"av01" => VideoCodec::Av1,
        b"vp09" => VideoCodec::Vp9,
        _ => VideoCodec::FourCc([a, b, c, d]),
    };
    let body = payload.slice(5..);
    // A command frame carries a one-byte command instead of video.
    if frame_type == FrameType::Other(5) && packet_type != METADATA {
        return Ok((codec, VideoPacket::Other(body)));
    }
    let packet = match packet_type {
        SEQUENCE_START => VideoPacket::SequenceHeader(body),
        CODED_FRAMES if matches!(codec, VideoCodec::H264 | VideoCodec::H265) => {
            let Some(&[c0, c1, c2]) = body.get(..3) else {
                return Err(ParseError::Truncated("Enhanced RTMP composition time"));
            };
            VideoPacket::Frame {
                composition_time_ms: si24([c0, c1, c2]),
                data: body.slice(3..),
            }
        }
        CODED_FRAMES | CODED_FRAMES_X => VideoPacket::Frame {
            composition_time_ms: 0,
            data: body,
        },
        SEQUENCE_END => VideoPacket::EndOfSequence,
        METADATA => VideoPacket::Metadata(body),
        _ => VideoPacket::Other(body),
    };
    Ok((codec, packet))
}

/// Audio codec named by the legacy FLV sound format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AudioCodec {
    /// Sound format 10.
    Aac,
    /// Sound formats 2 and 14 (MP3 8 kHz).
    Mp3,
    Other(u8),
}

/// What an audio tag carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AudioPacket {
    /// AAC AudioSpecificConfig (AACPacketType 0).
    AacSequenceHeader(Bytes),
    /// A raw AAC access unit, an MP3 frame, or another codec's body.
    Frame(Bytes),
}

/// A parsed RTMP audio message payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AudioTag {
    /// The RTMP timestamp in milliseconds.
    pub timestamp_ms: u32,
    pub codec: AudioCodec,
    pub packet: AudioPacket,
}

impl AudioTag {
    /// Parses an RTMP audio message payload received with `timestamp_ms`.
    pub fn parse(payload: &Bytes, timestamp_ms: u32) -> Result<Self, ParseError> {
        let &first = payload
            .first()
            .ok_or(ParseError::Truncated("audio tag header"))?;
        let (codec, packet) = match first >> 4 {
            10 => {
                let &packet_type = payload
                    .get(1)
                    .ok_or(ParseError::Truncated("AAC packet type"))?;
                let body = payload.slice(2..);
                let packet = match packet_type {
                    0 => AudioPacket::AacSequenceHeader(body),
                    1 => AudioPacket::Frame(body),
                    _ => return Err(ParseError::Unsupported("AAC packet type")),
                };
                (AudioCodec::Aac, packet)
            }
            9 => return Err(ParseError::Unsupported("Enhanced RTMP audio")),
            2 | 14 => (AudioCodec::Mp3, AudioPacket::Frame(payload.slice(1..))),
            format => (
                AudioCodec::Other(format),
                AudioPacket::Frame(payload.slice(1..)),
            ),
        };
        Ok(Self {
            timestamp_ms,
            codec,
            packet,
        })
    }

    pub fn is_sequence_header(&self) -> bool {
        matches!(self.packet, AudioPacket::AacSequenceHeader(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_vectors::hex;

    fn frame(cts: i32, data: &str) -> VideoPacket {
        VideoPacket::Frame {
            composition_time_ms: cts,
            data: Bytes::from(hex(data)),
        }
    }

    #[test]
    fn video_tags() {
        use FrameType::*;
        use VideoCodec::*;
        let seq = |s: &str| VideoPacket::SequenceHeader(Bytes::from(hex(s)));
        let other = |s: &str| VideoPacket::Other(Bytes::from(hex(s)));
        #[rustfmt::skip]
        let cases: &[(&str, VideoCodec, FrameType, bool, VideoPacket)] = &[
            // Legacy AVC, as ffmpeg's FLV muxer writes them.
            ("17 00 000000 0164000d", H264, Key, false, seq("0164000d")),
            ("17 01 000050 00000002ae06", H264, Key, false, frame(80, "00000002ae06")),
            ("27 01 0000a0 000001a9", H264, Inter, false, frame(160, "000001a9")),
            ("27 01 ffffd8 aa", H264, Inter, false, frame(-40, "aa")),
            ("17 02 000000", H264, Key, false, VideoPacket::EndOfSequence),
            // Legacy HEVC with codec id 12.
            ("1c 00 000000 01", H265, Key, false, seq("01")),
            ("2c 01 000028 bb", H265, Inter, false, frame(40, "bb")),
            // Other legacy codecs pass their body through.
            ("22 0102", Legacy(2), Inter, false, other("0102")),
            // Enhanced RTMP.
            ("90 68766331 0101", H265, Key, true, seq("0101")),
            ("91 68766331 000028 cc", H265, Key, true, frame(40, "cc")),
            ("a1 61766331 ffffff dd", H264, Inter, true, frame(-1, "dd")),
            ("a3 68766331 ee", H265, Inter, true, frame(0, "ee")),
            ("91 61763031 0a0b", Av1, Key, true, frame(0, "0a0b")),
            ("90 76703039 01", Vp9, Key, true, seq("01")),
            ("92 61763031", Av1, Key, true, VideoPacket::EndOfSequence),
            ("84 68766331 02", H265, Other(0), true, VideoPacket::Metadata(Bytes::from(hex("02")))),
            ("95 61763031 80", Av1, Key, true, other("80")),
            ("d1 68766331 01", H265, Other(5), true, other("01")),
            ("91 61626364 ff", FourCc(*b"abcd"), Key, true, frame(0, "ff")),
        ];
        for (input, codec, frame_type, enhanced, packet) in cases {
            let tag = VideoTag::parse(&Bytes::from(hex(input)), 1000).unwrap();
            let want = VideoTag {
                timestamp_ms: 1000,
                codec: *codec,
                frame_type: *frame_type,
                enhanced: *enhanced,
                packet: packet.clone(),
            };
            assert_eq!(tag, want, "{input}");
        }
    }

    #[test]
    fn video_errors() {
        let cases: &[(&str, ParseError)] = &[
            ("", ParseError::Truncated("video tag header")),
            (
                "17 01 0000",
                ParseError::Truncated("AVC video packet header"),
            ),
            ("17 03 000000", ParseError::Unsupported("AVC packet type")),
            (
                "91 6176",
                ParseError::Truncated("Enhanced RTMP video FourCC"),
            ),
            (
                "91 61766331 00",
                ParseError::Truncated("Enhanced RTMP composition time"),
            ),
            (
                "96 61766331",
                ParseError::Unsupported("Enhanced RTMP video packet type"),
            ),
            (
                "97 61766331",
                ParseError::Unsupported("Enhanced RTMP video packet type"),
            ),
        ];
        for (input, err) in cases {
            assert_eq!(
                VideoTag::parse(&Bytes::from(hex(input)), 0),
                Err(*err),
                "{input}"
            );
        }
    }

    #[test]
    fn helpers_and_zero_copy() {
        let payload = Bytes::from(hex("17 01 000050 00000002 aabb"));
        let tag = VideoTag::parse(&payload, 40).unwrap();
        assert!(tag.is_keyframe() && !tag.is_sequence_header());
        assert_eq!(tag.pts_ms(), 120);
        let VideoPacket::Frame { data, .. } = &tag.packet else {
            panic!("not a frame")
        };
        assert_eq!(data.as_ptr(), payload[5..].as_ptr());

        let header = VideoTag::parse(&Bytes::from(hex("17 00 000000 01")), 0).unwrap();
        assert!(header.is_sequence_header() && !header.is_keyframe());
        let inter = VideoTag::parse(&Bytes::from(hex("27 01 000000 01")), 0).unwrap();
        assert!(!inter.is_keyframe());
    }

    #[test]
    fn audio_tags() {
        use AudioCodec::*;
        let cases: &[(&str, AudioCodec, AudioPacket)] = &[
            (
                "af 00 1208 56e500",
                Aac,
                AudioPacket::AacSequenceHeader(Bytes::from(hex("120856e500"))),
            ),
            (
                "af 01 de02",
                Aac,
                AudioPacket::Frame(Bytes::from(hex("de02"))),
            ),
            ("af 01", Aac, AudioPacket::Frame(Bytes::new())),
            ("2f fffb", Mp3, AudioPacket::Frame(Bytes::from(hex("fffb")))),
            ("e2 fff3", Mp3, AudioPacket::Frame(Bytes::from(hex("fff3")))),
            (
                "b2 0102",
                Other(11),
                AudioPacket::Frame(Bytes::from(hex("0102"))),
            ),
        ];
        for (input, codec, packet) in cases {
            let tag = AudioTag::parse(&Bytes::from(hex(input)), 7).unwrap();
            assert_eq!(
                tag,
                AudioTag {
                    timestamp_ms: 7,
                    codec: *codec,
                    packet: packet.clone()
                }
            );
            assert_eq!(tag.is_sequence_header(), input.starts_with("af 00"));
        }
        let errors: &[(&str, ParseError)] = &[
            ("", ParseError::Truncated("audio tag header")),
            ("af", ParseError::Truncated("AAC packet type")),
            ("af 02", ParseError::Unsupported("AAC packet type")),
            (
                "90 4f707573",
                ParseError::Unsupported("Enhanced RTMP audio"),
            ),
        ];
        for (input, err) in errors {
            assert_eq!(
                AudioTag::parse(&Bytes::from(hex(input)), 0),
                Err(*err),
                "{input}"
            );
        }
    }
}
