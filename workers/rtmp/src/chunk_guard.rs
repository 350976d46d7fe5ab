//! Enforces `max_message_bytes` before `rml_rtmp` sees the bytes.
//!
//! `rml_rtmp`'s chunk deserializer reserves room for a whole message as soon as its first
//! chunk arrives (up to the 16 MiB a header can announce), so a client could make the
//! server reserve far more than it sends. This guard follows the chunk stream the way the
//! deserializer does (header formats, per-chunk-stream header state, extended timestamps,
//! the client's chunk size), keeps no payload, and refuses a header announcing a message
//! over the limit.

use std::collections::HashMap;

const EXTENDED: u32 = 0x00FF_FFFF;
const TYPE_SET_CHUNK_SIZE: u8 = 1;
/// Chunk streams a client may use (each costs a few bytes of state here).
const MAX_CHUNK_STREAMS: usize = 1024;

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum GuardError {
    #[error("message of {length} bytes is over the limit of {limit} bytes")]
    TooLarge { length: u32, limit: u32 },
    #[error("chunk header continues chunk stream {0}, which never started")]
    NoPreviousHeader(u32),
    #[error("more than {MAX_CHUNK_STREAMS} chunk streams")]
    TooManyChunkStreams,
}

#[derive(Debug, Clone, Copy, Default)]
struct Header {
    timestamp_field: u32,
    length: u32,
    type_id: u8,
}

#[derive(Debug, Clone, Copy)]
enum Stage {
    Header,
    Payload { left: usize },
}

pub struct ChunkGuard {
    limit: u32,
    chunk_size: usize,
    headers: HashMap<u32, Header>,
    csid: u32,
    current: Header,
    /// Bytes of the message in progress (one at a time, as in `rml_rtmp`).
    progress: usize,
    stage: Stage,
    /// The header being collected (at most 3 + 11 + 4 bytes).
    head: Vec<u8>,
    /// The payload of a SetChunkSize in progress.
    chunk_size_bytes: Vec<u8>,
}

fn basic_len(first: u8) -> usize {
    match first & 0x3F {
        0 => 2,
        1 => 3,
        _ => 1,
    }
}

fn message_header_len(format: u8) -> usize {
    match format {
        0 => 11,
        1 => 7,
        2 => 3,
        _ => 0,
    }
}

impl ChunkGuard {
    pub fn new(limit: u32) -> Self {
        Self {
            limit,
            chunk_size: 128,
            headers: HashMap::new(),
            csid: 0,
            current: Header::default(),
            progress: 0,
            stage: Stage::Header,
            head: Vec::with_capacity(18),
            chunk_size_bytes: Vec::with_capacity(4),
        }
    }

    /// Follows `bytes`; an error means the connection must be closed.
    pub fn inspect(&mut self, mut input: &[u8]) -> Result<(), GuardError> {
        while !input.is_empty() {
            match self.stage {
                Stage::Payload { left } => {
                    let take = left.min(input.len());
                    if self.current.type_id == TYPE_SET_CHUNK_SIZE
                        && self.chunk_size_bytes.len() < 4
                    {
                        let wanted = (4 - self.chunk_size_bytes.len()).min(take);
                        self.chunk_size_bytes.extend_from_slice(&input[..wanted]);
                    }
                    input = &input[take..];
                    self.progress += take;
                    if left > take {
                        self.stage = Stage::Payload { left: left - take };
                    } else {
                        self.end_chunk();
                    }
                }
                Stage::Header => loop {
                    let need = self.header_len()?;
                    if self.head.len() >= need {
                        self.start_chunk()?;
                        break;
                    }
                    if input.is_empty() {
                        return Ok(());
                    }
                    let take = (need - self.head.len()).min(input.len());
                    self.head.extend_from_slice(&input[..take]);
                    input = &input[take..];
                },
            }
        }
        Ok(())
    }

    fn parse_csid(&self) -> u32 {
        match basic_len(self.head[0]) {
            2 => 64 + u32::from(self.head[1]),
            3 => 64 + u32::from(self.head[1]) + u32::from(self.head[2]) * 256,
            _ => u32::from(self.head[0] & 0x3F),
        }
    }

    /// How many header bytes this chunk has, as far as can be told from `head` so far.
    fn header_len(&self) -> Result<usize, GuardError> {
        let Some(&first) = self.head.first() else {
            return Ok(1);
        };
        let basic = basic_len(first);
        let format = first >> 6;
        let message = message_header_len(format);
        if self.head.len() < basic + message {
            return Ok(basic + message);
        }
        let timestamp_field = if format <= 2 {
            let m = &self.head[basic..];
            u32::from_be_bytes([0, m[0], m[1], m[2]])
        } else {
            let csid = self.parse_csid();
            self.headers
                .get(&csid)
                .ok_or(GuardError::NoPreviousHeader(csid))?
                .timestamp_field
        };
        Ok(basic + message + if timestamp_field >= EXTENDED { 4 } else { 0 })
    }

    fn start_chunk(&mut self) -> Result<(), GuardError> {
        let basic = basic_len(self.head[0]);
        let format = self.head[0] >> 6;
        let csid = self.parse_csid();
        let mut header = if format == 0 {
            Header::default()
        } else {
            *self
                .headers
                .get(&csid)
                .ok_or(GuardError::NoPreviousHeader(csid))?
        };
        if format <= 2 {
            let m = &self.head[basic..];
            header.timestamp_field = u32::from_be_bytes([0, m[0], m[1], m[2]]);
            if format <= 1 {
                let length = u32::from_be_bytes([0, m[3], m[4], m[5]]);
                if length > self.limit {
                    return Err(GuardError::TooLarge {
                        length,
                        limit: self.limit,
                    });
                }
                header.length = length;
                header.type_id = m[6];
            }
        }
        if !self.headers.contains_key(&csid) && self.headers.len() >= MAX_CHUNK_STREAMS {
            return Err(GuardError::TooManyChunkStreams);
        }
        self.head.clear();
        self.csid = csid;
        self.current = header;
        let left = (header.length as usize)
            .saturating_sub(self.progress)
            .min(self.chunk_size);
        if left == 0 {
            self.end_chunk();
        } else {
            self.stage = Stage::Payload { left };
        }
        Ok(())
    }

    fn end_chunk(&mut self) {
        self.headers.insert(self.csid, self.current);
        self.stage = Stage::Header;
        if self.progress >= self.current.length as usize {
            if self.current.type_id == TYPE_SET_CHUNK_SIZE
                && let Ok(bytes) = <[u8; 4]>::try_from(self.chunk_size_bytes.as_slice())
            {
                self.chunk_size = (u32::from_be_bytes(bytes) & 0x7FFF_FFFF).max(1) as usize;
            }
            self.progress = 0;
            self.chunk_size_bytes.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rml_rtmp::chunk_io::ChunkSerializer;
    use rml_rtmp::messages::{MessagePayload, RtmpMessage};
    use rml_rtmp::time::RtmpTimestamp;

    fn payload(type_id: u8, timestamp: u32, len: usize, stream: u32) -> MessagePayload {
        let mut message = MessagePayload::new();
        message.type_id = type_id;
        message.timestamp = RtmpTimestamp::new(timestamp);
        message.message_stream_id = stream;
        message.data = bytes::Bytes::from((0..len).map(|i| (i % 199) as u8).collect::<Vec<u8>>());
        message
    }

    /// What ffmpeg sends: a chunk size change, then media of every size, with compressed
    /// headers and extended timestamps; fed in awkward pieces.
    #[test]
    fn follows_real_chunk_streams_and_stops_only_oversized_messages() {
        let mut serializer = ChunkSerializer::new();
        let mut wire = Vec::new();
        let chunk_size = RtmpMessage::SetChunkSize { size: 4096 }
            .into_message_payload(RtmpTimestamp::new(0), 0)
            .unwrap();
        wire.extend(
            serializer
                .serialize(&chunk_size, false, false)
                .unwrap()
                .bytes,
        );
        serializer
            .set_max_chunk_size(4096, RtmpTimestamp::new(0))
            .unwrap();
        let mut timestamp = 0xFF_FF00u32;
        for i in 0..200usize {
            timestamp = timestamp.wrapping_add(40);
            let len = [0, 1, 127, 128, 4095, 4096, 4097, 20_000][i % 8];
            for message in [payload(9, timestamp, len, 1), payload(8, timestamp, 300, 1)] {
                wire.extend(serializer.serialize(&message, false, false).unwrap().bytes);
            }
        }
        for piece in [1usize, 3, 7, 64, 1000, 1 << 20] {
            let mut guard = ChunkGuard::new(20_000);
            for part in wire.chunks(piece) {
                guard.inspect(part).unwrap();
            }
            assert!(matches!(guard.stage, Stage::Header));
            assert!(guard.head.is_empty());
        }
        let mut strict = ChunkGuard::new(10_000);
        assert_eq!(
            strict.inspect(&wire),
            Err(GuardError::TooLarge {
                length: 20_000,
                limit: 10_000
            })
        );
    }

    #[test]
    fn an_announced_giant_is_refused_before_its_payload() {
        let mut guard = ChunkGuard::new(8 * 1024 * 1024);
        let header = [0x04, 0, 0, 0, 0xFF, 0xFF, 0xFF, 9, 1, 0, 0, 0];
        assert!(matches!(
            guard.inspect(&header),
            Err(GuardError::TooLarge { .. })
        ));
        let mut guard = ChunkGuard::new(1000);
        assert_eq!(guard.inspect(&[0xC5]), Err(GuardError::NoPreviousHeader(5)));
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut noise = crate::test_noise::Noise::new(0x2545_f491);
        for _ in 0..200 {
            let mut guard = ChunkGuard::new(1 << 20);
            let _ = guard.inspect(&noise.bytes(4096));
        }
    }
}
