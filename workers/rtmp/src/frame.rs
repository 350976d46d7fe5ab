//! One media message of a live stream as it travels from a publisher to its players.

use crate::chunking::{
    COMMON_STREAM_ID, CSID_AUDIO, CSID_DATA, CSID_VIDEO, OUTGOING_CHUNK_SIZE, TYPE_AUDIO,
    TYPE_DATA_AMF0, TYPE_VIDEO, chunk_message,
};
use bytes::Bytes;
use std::sync::OnceLock;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameKind {
    Video,
    Audio,
    /// `onMetaData` as an AMF0 data message.
    Metadata,
}

/// A frame shared by reference between all players of a stream.
#[derive(Debug)]
pub struct MediaFrame {
    pub kind: FrameKind,
    /// RTMP timestamp in milliseconds, as the publisher sent it.
    pub timestamp: u32,
    /// A video keyframe: a safe place for a player to start or resume.
    pub keyframe: bool,
    /// Codec configuration (AVC/HEVC/AV1 sequence start, AAC config).
    pub sequence_header: bool,
    /// The FLV tag body, untouched (Enhanced RTMP passes through as is).
    pub payload: Bytes,
    /// Video composition time offset (pts - dts), milliseconds.
    pub composition_ms: i32,
    /// Decode and presentation time in 90 kHz ticks, unwrapped; set by the stream.
    pub dts: i64,
    pub pts: i64,
    /// Identifies the publisher that produced the frame; a change marks a discontinuity.
    pub generation: u32,
    /// The chunked form for the common stream id, built by the first player that needs it.
    chunked: OnceLock<Bytes>,
}

impl MediaFrame {
    pub fn new(
        kind: FrameKind,
        timestamp: u32,
        keyframe: bool,
        sequence_header: bool,
        payload: Bytes,
    ) -> Self {
        Self {
            kind,
            timestamp,
            keyframe,
            sequence_header,
            payload,
            composition_ms: 0,
            dts: 0,
            pts: 0,
            generation: 0,
            chunked: OnceLock::new(),
        }
    }

    pub fn with_composition(mut self, composition_ms: i32) -> Self {
        self.composition_ms = composition_ms;
        self
    }

    fn wire_ids(&self) -> (u8, u8) {
        match self.kind {
            FrameKind::Video => (CSID_VIDEO, TYPE_VIDEO),
            FrameKind::Audio => (CSID_AUDIO, TYPE_AUDIO),
            FrameKind::Metadata => (CSID_DATA, TYPE_DATA_AMF0),
        }
    }

    /// The frame as RTMP chunks for a player whose play stream has `stream_id`.
    pub fn chunked_for(&self, stream_id: u32) -> Bytes {
        let (csid, type_id) = self.wire_ids();
        if stream_id == COMMON_STREAM_ID {
            return self
                .chunked
                .get_or_init(|| {
                    chunk_message(
                        csid,
                        type_id,
                        stream_id,
                        self.timestamp,
                        &self.payload,
                        OUTGOING_CHUNK_SIZE,
                    )
                })
                .clone();
        }
        chunk_message(
            csid,
            type_id,
            stream_id,
            self.timestamp,
            &self.payload,
            OUTGOING_CHUNK_SIZE,
        )
    }
}
