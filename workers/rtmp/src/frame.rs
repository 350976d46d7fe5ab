//! Hub frames as RTMP sends them: the FLV tag body (the publisher's own bytes when the
//! stream came in over RTMP, the FLV adapter's rendering otherwise), its message type
//! and millisecond timestamp, and its chunked form shared by every player. Timed
//! metadata (a stream title) goes out as an AMF0 data message `onMetaData` with
//! `StreamTitle` and `StreamUrl` ([`strom_media::timed_metadata::flv_data_body`]).

use crate::chunking::{
    COMMON_STREAM_ID, CSID_AUDIO, CSID_DATA, CSID_VIDEO, OUTGOING_CHUNK_SIZE, TYPE_AUDIO,
    TYPE_DATA_AMF0, TYPE_VIDEO, chunk_message,
};
use bytes::Bytes;
use strom_media::frame::{Codec, Track};
use strom_media::{flv_adapter, timed_metadata};
use strom_stream::SharedFrame;

/// FLV times are milliseconds; the neutral frame's are 90 kHz.
pub const TICKS_PER_MS: i64 = 90;

/// The RTMP view of a hub frame.
pub trait RtmpFrame {
    /// The RTMP timestamp: milliseconds, wrapping at 32 bits as RTMP's do.
    fn timestamp_ms(&self) -> u32;
    /// Stream metadata (`onMetaData`) or a title, sent as an AMF0 data message.
    fn is_metadata(&self) -> bool;
    /// The FLV tag body (or AMF0 data); `None` for a frame RTMP cannot carry.
    fn flv_body(&self) -> Option<&Bytes>;
    /// The frame as RTMP chunks for a player whose play stream has `stream_id`; `None`
    /// for a frame RTMP cannot carry (it is skipped).
    fn chunked_for(&self, stream_id: u32) -> Option<Bytes>;
}

impl RtmpFrame for SharedFrame {
    fn timestamp_ms(&self) -> u32 {
        // A title's `onMetaData` is stamped 0 like the publisher's: players read a data
        // message at 0 as metadata only (ffmpeg makes any other time a subtitle stream,
        // which breaks `-c copy` into MP4). Its place among the media keeps it in order.
        if self.frame.codec == Codec::TimedMetadata {
            return 0;
        }
        // Truncation is the wrap: an RTMP publisher's unwrapped times come back exactly.
        self.frame.dts.div_euclid(TICKS_PER_MS) as u32
    }

    fn is_metadata(&self) -> bool {
        matches!(self.frame.codec, Codec::AmfData | Codec::TimedMetadata)
    }

    fn flv_body(&self) -> Option<&Bytes> {
        self.container(|frame| match frame.track {
            Track::Video | Track::Audio => flv_adapter::to_body(frame).ok(),
            Track::Data if frame.codec == Codec::AmfData => Some(frame.payload.clone()),
            Track::Data if frame.codec == Codec::TimedMetadata => {
                timed_metadata::flv_data_body(frame)
            }
            // Other timeline data (SCTE-35) has no RTMP form here.
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

#[cfg(test)]
mod tests {
    use super::*;
    use strom_media::id3::StreamTitle;

    #[test]
    fn a_title_goes_out_as_on_metadata_stamped_zero() {
        let title = StreamTitle {
            title: "Song A".into(),
            url: "http://u".into(),
        };
        let shared = SharedFrame::new(timed_metadata::frame(&title, 90_000 * 5), 1);
        assert!(shared.is_metadata());
        assert_eq!(shared.timestamp_ms(), 0);
        let body = shared.flv_body().unwrap();
        assert!(body.starts_with(b"\x02\x00\x0aonMetaData\x08"));
        let chunked = shared.chunked_for(COMMON_STREAM_ID).unwrap();
        // Basic header (fmt 0, data csid), timestamp 0, length, type 18 (AMF0 data).
        assert_eq!(chunked[0], CSID_DATA);
        assert_eq!(&chunked[1..4], &[0, 0, 0]);
        assert_eq!(chunked[7], TYPE_DATA_AMF0);
        let mut garbage = timed_metadata::frame(&title, 0);
        garbage.payload = Bytes::from_static(b"not id3");
        assert!(SharedFrame::new(garbage, 1).chunked_for(1).is_none());
    }
}
