//! ID3 tags as timed metadata frames carry them (stream titles, from the bus or any
//! producer): parse any bytes, render what parses as an RTMP `onMetaData` body and
//! encode it again; the encoded tag must parse.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use strom_media::frame::{Codec, Frame, SourceForm, Track};
use strom_media::{id3, timed_metadata};

fuzz_target!(|data: &[u8]| {
    if let Ok(title) = id3::parse(data) {
        let again = id3::encode(&title);
        assert!(id3::parse(&again).is_ok(), "an encoded tag parses");
    }
    let frame = Frame {
        track: Track::Data,
        codec: Codec::TimedMetadata,
        dts: 0,
        pts: 0,
        keyframe: false,
        config: false,
        control: false,
        payload: Bytes::copy_from_slice(data),
        form: SourceForm::Neutral,
    };
    let _ = timed_metadata::flv_data_body(&frame);
});
