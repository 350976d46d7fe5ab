//! Hub frames as RTMP sends them: the FLV tag body (the publisher's own bytes when the
//! stream came in over RTMP, the FLV adapter's rendering otherwise), its message type
//! and millisecond timestamp, and its chunked form shared by every player.

use crate::chunking::{
    COMMON_STREAM_ID, CSID_AUDIO, CSID_DATA, CSID_VIDEO, OUTGOING_CHUNK_SIZE, TYPE_AUDIO,
    TYPE_DATA_AMF0, TYPE_VIDEO, chunk_message,
};
use bytes::Bytes;
use strom_media::flv_adapter;
use strom_media::frame::{Codec, Track};
use strom_stream::SharedFrame;

/// FLV times are milliseconds; the neutral frame's are 90 kHz.
pub const TICKS_PER_MS: i64 = 90;

/// The RTMP view of a hub frame.
pub trait RtmpFrame {
    /// The RTMP timestamp: milliseconds, wrapping at 32 bits as RTMP's do.
    fn timestamp_ms(&self) -> u32;
    /// Stream metadata (`onMetaData`), sent as an AMF0 data message.
    fn is_metadata(&self) -> bool;
    /// The FLV tag body (or AMF0 data); `None` for a frame RTMP cannot carry.
    fn flv_body(&self) -> Option<&Bytes>;
    /// The frame as RTMP chunks for a player whose play stream has `stream_id`; `None`
    /// for a frame RTMP cannot carry (it is skipped).
    fn chunked_for(&self, stream_id: u32) -> Option<Bytes>;
}

impl RtmpFrame for SharedFrame {
    fn timestamp_ms(&self) -> u32 {
        // Truncation is the wrap: an RTMP publisher's unwrapped times come back exactly.
        self.frame.dts.div_euclid(TICKS_PER_MS) as u32
    }

    fn is_metadata(&self) -> bool {
        self.frame.codec == Codec::AmfData
    }

    fn flv_body(&self) -> Option<&Bytes> {
        self.container(|frame| match frame.track {
            Track::Video | Track::Audio => flv_adapter::to_body(frame).ok(),
            Track::Data if frame.codec == Codec::AmfData => Some(frame.payload.clone()),
            // Other timeline data (SCTE-35, ID3) has no RTMP form here.
            Track::Data => None,
        })
    }

    fn chunked_for(&self, stream_id: u32) -> Option<Bytes> {
        let (csid, type_id) = match self.frame.track {
            Track::Video => (CSID_VIDEO, TYPE_VIDEO),
            Track::Audio => (CSID_AUDIO, TYPE_AUDIO),
            Track::Data if self.is_metadata() => (CSID_DATA, TYPE_DATA_AMF0),
            Track::Data => return None,
        };
        let chunk = |body: &Bytes| {
            chunk_message(
                csid,
                type_id,
                stream_id,
                self.timestamp_ms(),
                body,
                OUTGOING_CHUNK_SIZE,
            )
        };
        if stream_id == COMMON_STREAM_ID {
            return self.wire(|shared| shared.flv_body().map(chunk)).cloned();
        }
        self.flv_body().map(chunk)
    }
}

/// A hub frame for tests: `track` at `ms` milliseconds with an empty neutral payload.
#[cfg(test)]
pub fn test_frame(
    track: Track,
    ms: u32,
    keyframe: bool,
    config: bool,
    generation: u32,
) -> SharedFrame {
    use strom_media::frame::{Frame, SourceForm};
    let codec = match track {
        Track::Video => Codec::H264,
        Track::Audio => Codec::Aac,
        Track::Data => Codec::AmfData,
    };
    let dts = i64::from(ms) * TICKS_PER_MS;
    let frame = Frame {
        track,
        codec,
        dts,
        pts: dts,
        keyframe,
        config,
        control: false,
        payload: Bytes::new(),
        form: SourceForm::Neutral,
    };
    SharedFrame::new(frame, generation)
}
