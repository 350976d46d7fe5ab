//! Timed metadata frames: stream titles (Icecast's `StreamTitle`/`StreamUrl`) as neutral
//! [`Frame`]s of codec [`Codec::TimedMetadata`] whose payload is an ID3v2.4 tag
//! ([`crate::id3`]), and their FLV/RTMP form: an AMF0 data message `onMetaData` with an
//! ECMA array `{StreamTitle, StreamUrl}` (what ffmpeg shows as format tags).

use bytes::Bytes;

use crate::frame::{Codec, Frame, Track};
use crate::id3::{self, StreamTitle};

/// The timed metadata frame carrying `title` at `dts` (90 kHz; `pts` the same).
pub fn frame(title: &StreamTitle, dts: i64) -> Frame {
    Frame::neutral(
        Track::Data,
        Codec::TimedMetadata,
        dts,
        Bytes::from(id3::encode(title)),
    )
}

/// The title a timed metadata frame carries; `None` for other frames and for tags
/// without one.
pub fn title_of(frame: &Frame) -> Option<StreamTitle> {
    if frame.codec != Codec::TimedMetadata {
        return None;
    }
    id3::parse(&frame.payload).ok()
}

/// AMF0 type markers used here.
const AMF_STRING: u8 = 0x02;
const AMF_ECMA_ARRAY: u8 = 0x08;
const AMF_OBJECT_END: [u8; 3] = [0, 0, 0x09];

/// A timed metadata frame as an RTMP AMF0 data message body (`onMetaData` with
/// `StreamTitle` and `StreamUrl`); `None` when it carries no title.
pub fn flv_data_body(frame: &Frame) -> Option<Bytes> {
    let title = title_of(frame)?;
    let mut out = Vec::with_capacity(64 + title.title.len() + title.url.len());
    amf_string(b"onMetaData", &mut out);
    out.push(AMF_ECMA_ARRAY);
    out.extend_from_slice(&2u32.to_be_bytes());
    for (key, value) in [("StreamTitle", &title.title), ("StreamUrl", &title.url)] {
        amf_key(key.as_bytes(), &mut out);
        amf_string(id3::clipped(value).as_bytes(), &mut out);
    }
    out.extend_from_slice(&AMF_OBJECT_END);
    Some(Bytes::from(out))
}

/// A property name: u16 length and bytes (names here are short constants).
fn amf_key(key: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&(key.len() as u16).to_be_bytes());
    out.extend_from_slice(key);
}

/// An AMF0 string value (clipped text is far below its 65,535-byte limit).
fn amf_string(value: &[u8], out: &mut Vec<u8>) {
    let value = &value[..value.len().min(usize::from(u16::MAX))];
    out.push(AMF_STRING);
    amf_key(value, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_title_frame_renders_as_on_metadata() {
        let title = StreamTitle {
            title: "Song A".into(),
            url: "https://radio.example".into(),
        };
        let f = frame(&title, 90_000);
        assert_eq!(
            (f.track, f.codec, f.pts),
            (Track::Data, Codec::TimedMetadata, 90_000)
        );
        assert_eq!(title_of(&f), Some(title));
        let body = flv_data_body(&f).unwrap();
        let mut want = b"\x02\x00\x0aonMetaData\x08\x00\x00\x00\x02".to_vec();
        want.extend_from_slice(b"\x00\x0bStreamTitle\x02\x00\x06Song A");
        want.extend_from_slice(b"\x00\x09StreamUrl\x02\x00\x15https://radio.example");
        want.extend_from_slice(b"\x00\x00\x09");
        assert_eq!(&body[..], &want[..]);
        let mut other = f.clone();
        other.codec = Codec::Scte35;
        assert!(flv_data_body(&other).is_none());
        other.codec = Codec::TimedMetadata;
        other.payload = Bytes::from_static(b"garbage");
        assert!(flv_data_body(&other).is_none());
    }
}
