//! FLV as an adapter of the neutral [`Frame`]: an RTMP audio/video message payload
//! (FLV tag body, legacy or Enhanced RTMP) to a frame, and a frame back to a body.
//!
//! Parsing reuses [`crate::flv`] (so errors are the same) and slices the body: the
//! frame's payload is the codec data after the tag header, never a copy. What the
//! neutral fields cannot say (legacy vs Enhanced header, frame type bits, packet type,
//! the audio format byte) is kept in a small [`FlvForm`], so that
//! `to_body(from_body(b)) == b` byte for byte: RTMP players must receive exactly
//! what the publisher sent. The composition time is not kept there: it is
//! `pts - dts`, and written back from them.
//!
//! Frames from other producers ([`SourceForm::Neutral`]) get a canonical header:
//! legacy FLV for H.264, AAC and MP3 (what every player reads), Enhanced RTMP v1 for
//! H.265, AV1 and VP9.

use bytes::{Bytes, BytesMut};

use crate::ParseError;
use crate::flv::{AudioCodec, AudioTag, VideoCodec, VideoPacket, VideoTag};
pub use crate::flv_form::FlvForm;
use crate::flv_form::PREFIX_MAX;
use crate::frame::{Codec, Frame, SourceForm, Track};

/// The longest tag header written: Enhanced RTMP byte, FourCC, composition time.
const HEADER_MAX: usize = PREFIX_MAX + 3;
const MS: i64 = 90;

/// An FLV tag header built for a frame: write it, then the frame's payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlvHeader {
    bytes: [u8; HEADER_MAX],
    len: u8,
}

impl FlvHeader {
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// Sign-extends a 24-bit big-endian composition time.
fn si24([a, b, c]: [u8; 3]) -> i32 {
    i32::from_be_bytes([a, b, c, 0]) >> 8
}

fn video_codec(codec: VideoCodec) -> Codec {
    match codec {
        VideoCodec::H264 => Codec::H264,
        VideoCodec::H265 => Codec::H265,
        VideoCodec::Av1 => Codec::Av1,
        VideoCodec::Vp9 => Codec::Vp9,
        VideoCodec::Legacy(_) | VideoCodec::FourCc(_) => Codec::Unknown,
    }
}

/// An RTMP video message payload decoded at `dts` (90 kHz) as a frame.
pub fn video_frame(body: &Bytes, dts: i64) -> Result<Frame, ParseError> {
    let tag = VideoTag::parse(body, 0)?;
    let avc_like = matches!(tag.codec, VideoCodec::H264 | VideoCodec::H265);
    // Where the codec data starts, and whether a composition time precedes it:
    // legacy AVC/HEVC always carry packet type and time; Enhanced RTMP only on
    // AVC/HEVC CodedFrames (packet type 1; CodedFramesX, 3, has none).
    let (prefix_len, cts) = match (&tag.packet, tag.enhanced) {
        (_, false) if avc_like => (2, true),
        (_, false) => (1, false),
        (VideoPacket::Frame { .. }, true) => {
            (5, avc_like && body.first().is_some_and(|b| b & 0x0f == 1))
        }
        (_, true) => (5, false),
    };
    let composition_ms = match (cts, body.get(prefix_len..prefix_len + 3)) {
        (true, Some(&[a, b, c])) => si24([a, b, c]),
        (true, _) => return Err(ParseError::Truncated("FLV composition time")),
        (false, _) => 0,
    };
    let start = prefix_len + if cts { 3 } else { 0 };
    let control = matches!(
        tag.packet,
        VideoPacket::EndOfSequence | VideoPacket::Metadata(_)
    ) || (tag.enhanced && matches!(tag.packet, VideoPacket::Other(_)));
    Ok(Frame {
        track: Track::Video,
        codec: video_codec(tag.codec),
        dts,
        pts: dts.saturating_add(i64::from(composition_ms) * MS),
        keyframe: tag.is_keyframe(),
        config: tag.is_sequence_header(),
        control,
        payload: body.slice(start.min(body.len())..),
        form: SourceForm::Flv(FlvForm::new(body, prefix_len, cts)),
    })
}

/// An RTMP audio message payload decoded at `dts` (90 kHz) as a frame.
pub fn audio_frame(body: &Bytes, dts: i64) -> Result<Frame, ParseError> {
    let tag = AudioTag::parse(body, 0)?;
    let (codec, prefix_len) = match tag.codec {
        AudioCodec::Aac => (Codec::Aac, 2),
        AudioCodec::Mp3 => (Codec::Mp3, 1),
        AudioCodec::Other(_) => (Codec::Unknown, 1),
    };
    Ok(Frame {
        track: Track::Audio,
        codec,
        dts,
        pts: dts,
        keyframe: false,
        config: tag.is_sequence_header(),
        control: false,
        payload: body.slice(prefix_len.min(body.len())..),
        form: SourceForm::Flv(FlvForm::new(body, prefix_len, false)),
    })
}

/// An RTMP AMF0 data message (`onMetaData`, `@setDataFrame`) as a data frame.
pub fn data_frame(body: &Bytes, dts: i64) -> Frame {
    Frame {
        track: Track::Data,
        codec: Codec::AmfData,
        dts,
        pts: dts,
        keyframe: false,
        config: false,
        control: false,
        payload: body.clone(),
        form: SourceForm::Neutral,
    }
}

/// The FLV tag header for `frame`: its own form if it came from FLV, else canonical.
pub fn header(frame: &Frame) -> Result<FlvHeader, ParseError> {
    let prefix = match frame.form {
        SourceForm::Flv(form) => form,
        SourceForm::Neutral => canonical(frame)?,
    };
    let mut out = FlvHeader {
        bytes: [0; HEADER_MAX],
        len: prefix.len,
    };
    let len = usize::from(prefix.len);
    out.bytes[..len].copy_from_slice(prefix.prefix());
    if prefix.cts {
        // FLV times are milliseconds: the offset between the two millisecond times.
        let ms = frame.pts.div_euclid(MS) - frame.dts.div_euclid(MS);
        let ms = i32::try_from(ms)
            .ok()
            .filter(|ms| (-0x80_0000..=0x7f_ffff).contains(ms))
            .ok_or(ParseError::Invalid("FLV composition time"))?;
        out.bytes[len..len + 3].copy_from_slice(&ms.to_be_bytes()[1..]);
        out.len += 3;
    }
    Ok(out)
}

/// `frame` as an RTMP message payload. Data frames and header-less bodies are
/// returned without copying; others cost one buffer, built once per frame and
/// shared by every player (or write [`header`] and the payload straight out).
pub fn to_body(frame: &Frame) -> Result<Bytes, ParseError> {
    let header = header(frame)?;
    if header.len == 0 {
        return Ok(frame.payload.clone());
    }
    let mut out = BytesMut::with_capacity(header.as_slice().len() + frame.payload.len());
    out.extend_from_slice(header.as_slice());
    out.extend_from_slice(&frame.payload);
    Ok(out.freeze())
}

/// The header a frame from a non-FLV producer gets.
fn canonical(frame: &Frame) -> Result<FlvForm, ParseError> {
    if frame.control {
        return Err(ParseError::Unsupported(
            "FLV control frame without FLV form",
        ));
    }
    // FLV frame type: 1 key (also on configuration), 2 inter.
    let frame_type: u8 = if frame.keyframe || frame.config { 1 } else { 2 };
    let packet_type = u8::from(!frame.config);
    let enhanced = |fourcc: &[u8; 4], cts: bool| {
        let mut prefix = [0; PREFIX_MAX];
        prefix[0] = 0x80 | (frame_type << 4) | packet_type;
        prefix[1..].copy_from_slice(fourcc);
        FlvForm {
            prefix,
            len: 5,
            cts,
        }
    };
    let legacy = |bytes: &[u8], cts: bool| {
        let mut prefix = [0; PREFIX_MAX];
        prefix[..bytes.len()].copy_from_slice(bytes);
        FlvForm {
            prefix,
            len: bytes.len() as u8,
            cts,
        }
    };
    Ok(match frame.codec {
        Codec::H264 => legacy(&[(frame_type << 4) | 7, packet_type], true),
        Codec::H265 => enhanced(b"hvc1", !frame.config),
        Codec::Av1 => enhanced(b"av01", false),
        Codec::Vp9 => enhanced(b"vp09", false),
        // Sound format 10, 44.1 kHz, 16 bit, stereo: what the spec says AAC must signal.
        Codec::Aac => legacy(&[0xaf, packet_type], false),
        Codec::Mp3 if !frame.config => legacy(&[0x2f], false),
        Codec::AmfData => legacy(&[], false),
        _ => return Err(ParseError::Unsupported("codec in FLV")),
    })
}

#[cfg(test)]
#[path = "flv_adapter_tests.rs"]
mod tests;
