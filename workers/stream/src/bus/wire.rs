//! Neutral frames to bus headers and back (the wire format is `strom_ipc::bus`).

use bytes::Bytes;
use strom_ipc::bus::{BusTrack, MediaHeader};
use strom_media::flv_adapter::FlvForm;
use strom_media::frame::{Codec, Frame, SourceForm, Track};

use crate::SharedFrame;

/// The header that carries `shared` over the bus (its payload follows it).
pub fn header_for(shared: &SharedFrame) -> MediaHeader {
    let frame = &shared.frame;
    MediaHeader {
        track: match frame.track {
            Track::Video => BusTrack::Video,
            Track::Audio => BusTrack::Audio,
            Track::Data => BusTrack::Data,
        },
        codec: frame.codec.to_u8(),
        keyframe: frame.keyframe,
        config: frame.config,
        control: frame.control,
        payload_len: frame.payload.len() as u32,
        dts: frame.dts,
        pts: frame.pts,
        generation: shared.generation,
        source_form: match frame.form {
            SourceForm::Flv(form) => Some(form.to_bytes()),
            SourceForm::Neutral => None,
        },
    }
}

/// The frame a header and its payload describe. A source form this build cannot read
/// leaves the frame neutral (a re-emitter then writes the container's canonical form).
pub fn frame_from(header: &MediaHeader, payload: Bytes) -> Frame {
    Frame {
        track: match header.track {
            BusTrack::Video => Track::Video,
            BusTrack::Audio => Track::Audio,
            BusTrack::Data => Track::Data,
        },
        codec: Codec::from_u8(header.codec),
        dts: header.dts,
        pts: header.pts,
        keyframe: header.keyframe,
        config: header.config,
        control: header.control,
        payload,
        form: header
            .source_form
            .and_then(|bytes| FlvForm::from_bytes(bytes).ok())
            .map_or(SourceForm::Neutral, SourceForm::Flv),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strom_media::flv_adapter;

    #[test]
    fn flv_frames_cross_the_bus_unchanged() {
        let body = Bytes::from_static(&[0x17, 0x01, 0x00, 0x00, 0x28, 0, 0, 0, 2, 0x65, 0x88]);
        let frame = flv_adapter::video_frame(&body, 9000).unwrap();
        let shared = SharedFrame::new(frame.clone(), 42);
        let header = header_for(&shared);
        assert_eq!(header.generation, 42);
        let again = frame_from(&header, frame.payload.clone());
        assert_eq!(again, frame);
        assert_eq!(flv_adapter::to_body(&again).unwrap(), body, "byte for byte");
    }
}
