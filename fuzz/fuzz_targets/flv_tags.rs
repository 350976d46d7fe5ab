//! FLV audio/video tag bodies as publishers send them over RTMP (legacy and Enhanced).
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use strom_media::flv::{AudioTag, VideoTag};

fuzz_target!(|data: &[u8]| {
    let payload = Bytes::copy_from_slice(data);
    if let Ok(tag) = VideoTag::parse(&payload, 1000) {
        let _ = (tag.is_keyframe(), tag.is_sequence_header(), tag.pts_ms());
    }
    if let Ok(tag) = AudioTag::parse(&payload, 1000) {
        let _ = tag.is_sequence_header();
    }
});
