//! Messages strom sends itself rather than through `rml_rtmp`: `onStatus` refusals (which
//! `rml_rtmp` would word as a generic `_error`) and the play-start data messages, on chunk
//! streams `rml_rtmp` never uses.

use crate::chunking::{CSID_DATA, OUTGOING_CHUNK_SIZE, TYPE_DATA_AMF0, chunk_message};
use bytes::Bytes;
use rml_amf0::Amf0Value;
use std::collections::HashMap;

const CSID_STATUS: u8 = 10;
/// The chunk stream `rml_rtmp` sends AMF0 data messages on.
pub const RML_DATA_CSID: u8 = 3;
const TYPE_COMMAND_AMF0: u8 = 20;

pub fn on_status(stream_id: u32, level: &str, code: &str, description: &str) -> Bytes {
    let mut info = HashMap::new();
    info.insert("level".to_owned(), Amf0Value::Utf8String(level.to_owned()));
    info.insert("code".to_owned(), Amf0Value::Utf8String(code.to_owned()));
    info.insert(
        "description".to_owned(),
        Amf0Value::Utf8String(description.to_owned()),
    );
    let values = vec![
        Amf0Value::Utf8String("onStatus".to_owned()),
        Amf0Value::Number(0.0),
        Amf0Value::Null,
        Amf0Value::Object(info),
    ];
    let payload = rml_amf0::serialize(&values).unwrap_or_default();
    chunk_message(
        CSID_STATUS,
        TYPE_COMMAND_AMF0,
        stream_id,
        0,
        &payload,
        OUTGOING_CHUNK_SIZE,
    )
}

/// `|RtmpSampleAccess` at timestamp 0, as Flash servers send it. (`onStatus
/// NetStream.Data.Start` as a data message is left out: ffmpeg turns it into a phantom
/// data stream.)
pub fn play_start_data(stream_id: u32) -> Bytes {
    let sample_access = vec![
        Amf0Value::Utf8String("|RtmpSampleAccess".to_owned()),
        Amf0Value::Boolean(false),
        Amf0Value::Boolean(false),
    ];
    let payload = rml_amf0::serialize(&sample_access).unwrap_or_default();
    chunk_message(
        CSID_DATA,
        TYPE_DATA_AMF0,
        stream_id,
        0,
        &payload,
        OUTGOING_CHUNK_SIZE,
    )
}
