//! One elementary stream of the selected program: what its stream_type maps to
//! and the per-PID state (continuity counter, PES or section reassembly, video
//! parameter sets, the last AudioSpecificConfig sent).

use super::pes::PesAssembler;
use super::psi::EsInfo;
use super::section::SectionAssembler;
use super::video::{NalCodec, VideoState};
use crate::frame::Codec;

/// How the demuxer handles a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamKind {
    Video(NalCodec),
    Aac,
    /// MPEG-1/2 audio, passed through one PES at a time.
    Mp3,
    /// AC-3, passed through one PES at a time.
    Ac3,
    /// SCTE-35 splice_info_sections.
    Scte35,
    /// Not demuxed (reported once).
    Ignored,
}

impl StreamKind {
    pub fn of(info: &EsInfo) -> Self {
        match info.stream_type {
            0x1b => StreamKind::Video(NalCodec::H264),
            0x24 => StreamKind::Video(NalCodec::H265),
            0x0f => StreamKind::Aac,
            0x03 | 0x04 => StreamKind::Mp3,
            0x81 => StreamKind::Ac3,
            0x06 if info.ac3_descriptor => StreamKind::Ac3,
            0x86 => StreamKind::Scte35,
            _ => StreamKind::Ignored,
        }
    }

    pub fn codec(self) -> Option<Codec> {
        Some(match self {
            StreamKind::Video(NalCodec::H264) => Codec::H264,
            StreamKind::Video(NalCodec::H265) => Codec::H265,
            StreamKind::Aac => Codec::Aac,
            StreamKind::Mp3 => Codec::Mp3,
            StreamKind::Ac3 => Codec::Ac3,
            StreamKind::Scte35 => Codec::Scte35,
            StreamKind::Ignored => return None,
        })
    }
}

impl EsInfo {
    /// The codec frames of this stream carry; `None` for streams not demuxed.
    pub fn codec(&self) -> Option<Codec> {
        StreamKind::of(self).codec()
    }

    /// A short name for logs and the management API: `h264`, `h265`, `aac`,
    /// `mp3`, `ac3`, `scte35`, or `unknown` for streams not demuxed.
    pub fn codec_name(&self) -> &'static str {
        match self.codec() {
            Some(Codec::H264) => "h264",
            Some(Codec::H265) => "h265",
            Some(Codec::Aac) => "aac",
            Some(Codec::Mp3) => "mp3",
            Some(Codec::Ac3) => "ac3",
            Some(Codec::Scte35) => "scte35",
            _ => "unknown",
        }
    }
}

/// Demuxing state of one elementary stream.
#[derive(Debug)]
pub(crate) struct Stream {
    pub info: EsInfo,
    pub kind: StreamKind,
    /// The last continuity counter seen on a packet with payload.
    pub cc: Option<u8>,
    pub pes: PesAssembler,
    pub sections: SectionAssembler,
    pub video: VideoState,
    /// The AudioSpecificConfig last sent (AAC).
    pub asc: Option<[u8; 2]>,
    /// The last decode time, for PES without timestamps.
    pub last_dts: i64,
}

impl Stream {
    pub fn new(info: EsInfo) -> Self {
        Self {
            info,
            kind: StreamKind::of(&info),
            cc: None,
            pes: PesAssembler::default(),
            sections: SectionAssembler::default(),
            video: VideoState::default(),
            asc: None,
            last_dts: 0,
        }
    }
}
