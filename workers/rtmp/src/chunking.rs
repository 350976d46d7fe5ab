//! Serializing media messages into RTMP chunks once, for every player at the same time.
//!
//! Players of a stream share one outgoing chunk size and almost always the same message
//! stream id, so a frame's chunked bytes are identical for all of them: they are built once
//! and shared as `Bytes`. Every message starts with a type-0 header (absolute timestamp),
//! so the bytes do not depend on what was sent before on the chunk stream. Media uses chunk
//! stream ids that `rml_rtmp` never uses (it uses 2 to 6), so the two serializers never
//! disagree about header compression state.

use bytes::{BufMut, Bytes, BytesMut};

/// Chunk size strom announces to every client (`SetChunkSize` from the session config).
pub const OUTGOING_CHUNK_SIZE: u32 = 4096;
/// Message stream id that almost every client gets for its play stream.
pub const COMMON_STREAM_ID: u32 = 1;

pub const CSID_VIDEO: u8 = 7;
pub const CSID_AUDIO: u8 = 8;
pub const CSID_DATA: u8 = 9;

pub const TYPE_AUDIO: u8 = 8;
pub const TYPE_VIDEO: u8 = 9;
pub const TYPE_DATA_AMF0: u8 = 18;

const EXTENDED_TIMESTAMP: u32 = 0x00FF_FFFF;

/// Chunks one message. `csid` must be in 2..=63 (one-byte basic header).
pub fn chunk_message(
    csid: u8,
    type_id: u8,
    stream_id: u32,
    timestamp: u32,
    payload: &[u8],
    chunk_size: u32,
) -> Bytes {
    let chunk_size = chunk_size.max(1) as usize;
    let extended = timestamp >= EXTENDED_TIMESTAMP;
    let chunks = payload.len().div_ceil(chunk_size).max(1);
    let mut out = BytesMut::with_capacity(payload.len() + 12 + 4 + (chunks - 1) * 5);
    out.put_u8(csid & 0x3F);
    let header_timestamp = if extended {
        EXTENDED_TIMESTAMP
    } else {
        timestamp
    };
    out.put_uint(u64::from(header_timestamp), 3);
    out.put_uint(payload.len() as u64, 3);
    out.put_u8(type_id);
    out.put_u32_le(stream_id);
    if extended {
        out.put_u32(timestamp);
    }
    let mut pieces = payload.chunks(chunk_size);
    if let Some(first) = pieces.next() {
        out.put_slice(first);
    }
    for piece in pieces {
        out.put_u8(0xC0 | (csid & 0x3F));
        // Type-3 chunks repeat the extended timestamp, as Flash and ffmpeg expect.
        if extended {
            out.put_u32(timestamp);
        }
        out.put_slice(piece);
    }
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rml_rtmp::chunk_io::ChunkDeserializer;

    #[test]
    fn rml_reads_back_what_we_chunk() {
        for (timestamp, len) in [
            (0u32, 0usize),
            (40, 100),
            (1000, 4096),
            (77, 10_000),
            (0x0100_0000, 9000),
        ] {
            let payload: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let bytes = chunk_message(CSID_VIDEO, TYPE_VIDEO, 1, timestamp, &payload, 4096);
            let mut reader = ChunkDeserializer::new();
            reader.set_max_chunk_size(4096).unwrap();
            let message = reader
                .get_next_message(&bytes)
                .unwrap()
                .expect("one whole message");
            assert_eq!(message.type_id, TYPE_VIDEO);
            assert_eq!(message.message_stream_id, 1);
            assert_eq!(message.timestamp.value, timestamp);
            assert_eq!(&message.data[..], &payload[..]);
            assert!(reader.get_next_message(&[]).unwrap().is_none());
        }
    }

    #[test]
    fn consecutive_messages_on_one_chunk_stream_stay_independent() {
        let mut reader = ChunkDeserializer::new();
        reader.set_max_chunk_size(128).unwrap();
        let first = chunk_message(CSID_AUDIO, TYPE_AUDIO, 1, 10, &[1; 300], 128);
        let second = chunk_message(CSID_AUDIO, TYPE_AUDIO, 1, 33, &[2; 5], 128);
        let mut all = first.to_vec();
        all.extend_from_slice(&second);
        let a = reader.get_next_message(&all).unwrap().unwrap();
        let b = reader.get_next_message(&[]).unwrap().unwrap();
        assert_eq!((a.timestamp.value, a.data.len()), (10, 300));
        assert_eq!((b.timestamp.value, &b.data[..]), (33, &[2u8; 5][..]));
    }
}
