//! The protocol-neutral media frame every producer turns its input into and every
//! reader consumes: track, codec, 90 kHz times, keyframe and configuration flags,
//! and a payload in MP4-sample form. Protocols are adapters around it (see
//! [`crate::flv_adapter`]); only they know a container.
//!
//! # On the media bus
//!
//! The bus header (`strom_ipc::bus::MediaHeader`) carries every field: `track`, `codec`
//! ([`Codec::to_u8`]), `keyframe`, `config` and `control` as flag bits, `dts` and `pts`,
//! and `form` as [`crate::flv_adapter::FlvForm::to_bytes`] when the frame came from FLV;
//! the payload follows the header. `form` only matters when the reading worker
//! re-emits the same container (RTMP players of a stream published over RTMP elsewhere
//! get the publisher's bytes). The mapping lives in `strom_stream::bus::wire`.

use bytes::Bytes;

use crate::flv_form::FlvForm;

/// 90 kHz, the clock of every [`Frame`] (same as [`crate::sample::TIMESCALE`]).
pub const CLOCK_HZ: u32 = 90_000;

/// Which elementary stream of a live stream a frame belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Track {
    Video,
    Audio,
    /// Timeline data: stream metadata, SCTE-35 markers, timed metadata.
    Data,
}

/// What the payload is coded as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Codec {
    H264,
    H265,
    Av1,
    Vp9,
    Aac,
    Mp3,
    Opus,
    Ac3,
    /// Whole SCTE-35 `splice_info_section`s.
    Scte35,
    /// ID3 or similar timed metadata (Icecast titles, ...).
    TimedMetadata,
    /// AMF0 script data (`onMetaData`): FLV/RTMP data messages, passed through.
    AmfData,
    /// A codec this crate does not decode (legacy FLV Sorenson/VP6, Speex, G.711,
    /// an unknown Enhanced RTMP FourCC): the payload is passed through as is.
    Unknown,
}

impl Codec {
    /// The track this codec belongs on; `None` for [`Codec::Unknown`], whose track
    /// only the container knows.
    pub fn track(self) -> Option<Track> {
        match self {
            Codec::H264 | Codec::H265 | Codec::Av1 | Codec::Vp9 => Some(Track::Video),
            Codec::Aac | Codec::Mp3 | Codec::Opus | Codec::Ac3 => Some(Track::Audio),
            Codec::Scte35 | Codec::TimedMetadata | Codec::AmfData => Some(Track::Data),
            Codec::Unknown => None,
        }
    }

    /// The codec's number in the bus header (stable: never renumber, only append).
    pub fn to_u8(self) -> u8 {
        match self {
            Codec::Unknown => 0,
            Codec::H264 => 1,
            Codec::H265 => 2,
            Codec::Av1 => 3,
            Codec::Vp9 => 4,
            Codec::Aac => 5,
            Codec::Mp3 => 6,
            Codec::Opus => 7,
            Codec::Ac3 => 8,
            Codec::Scte35 => 9,
            Codec::TimedMetadata => 10,
            Codec::AmfData => 11,
        }
    }

    /// Inverse of [`Codec::to_u8`]; numbers from a newer peer read as `Unknown`.
    pub fn from_u8(n: u8) -> Self {
        match n {
            1 => Codec::H264,
            2 => Codec::H265,
            3 => Codec::Av1,
            4 => Codec::Vp9,
            5 => Codec::Aac,
            6 => Codec::Mp3,
            7 => Codec::Opus,
            8 => Codec::Ac3,
            9 => Codec::Scte35,
            10 => Codec::TimedMetadata,
            11 => Codec::AmfData,
            _ => Codec::Unknown,
        }
    }
}

/// How the producer's container framed this frame, kept so the adapter of the same
/// container can rebuild it byte for byte. Adapters for other containers ignore it;
/// frames from other producers carry `Neutral` and get a container's canonical form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SourceForm {
    #[default]
    Neutral,
    Flv(FlvForm),
}

/// One access unit, audio frame, configuration record or data item of a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub track: Track,
    pub codec: Codec,
    /// Decode time, 90 kHz, unwrapped.
    pub dts: i64,
    /// Presentation time, 90 kHz; equals `dts` except for reordered video.
    pub pts: i64,
    /// A video random access point: a reader may start or resume here. Audio frames
    /// leave it false (each one decodes alone; readers start at a video keyframe).
    pub keyframe: bool,
    /// A codec configuration record rather than media: `avcC`, `hvcC`, `av1C`,
    /// `vpcC` or an AudioSpecificConfig. Learned by [`crate::track_info`].
    pub config: bool,
    /// Not media but an in-track signal the producer sent (end of sequence, Enhanced
    /// RTMP metadata or command): muxers skip it, same-container re-emitters keep it.
    pub control: bool,
    /// MP4-sample form: length-prefixed NAL units (as FLV carries them), AV1 OBUs,
    /// raw audio frames without ADTS, whole sections; a zero-copy slice of the input.
    pub payload: Bytes,
    pub form: SourceForm,
}

impl Frame {
    /// A frame with `pts` = `dts`, no flags and no container form: what producers of
    /// audio and data frames (Icecast sources, titles) make.
    pub fn neutral(track: Track, codec: Codec, dts: i64, payload: Bytes) -> Self {
        Self {
            track,
            codec,
            dts,
            pts: dts,
            keyframe: false,
            config: false,
            control: false,
            payload,
            form: SourceForm::Neutral,
        }
    }

    /// A media sample (not configuration, not a control signal).
    pub fn is_sample(&self) -> bool {
        !self.config && !self.control
    }

    /// `pts - dts`, 90 kHz.
    pub fn composition_offset(&self) -> i64 {
        self.pts - self.dts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codec_numbers_round_trip_and_stay_stable() {
        use Codec::*;
        let all = [
            Unknown,
            H264,
            H265,
            Av1,
            Vp9,
            Aac,
            Mp3,
            Opus,
            Ac3,
            Scte35,
            TimedMetadata,
            AmfData,
        ];
        for (n, codec) in all.into_iter().enumerate() {
            assert_eq!(codec.to_u8() as usize, n, "{codec:?} renumbered");
            assert_eq!(Codec::from_u8(codec.to_u8()), codec);
        }
        assert_eq!(Codec::from_u8(200), Unknown);
        assert_eq!(H265.track(), Some(Track::Video));
        assert_eq!(Opus.track(), Some(Track::Audio));
        assert_eq!(Scte35.track(), Some(Track::Data));
        assert_eq!(Unknown.track(), None);
    }
}
