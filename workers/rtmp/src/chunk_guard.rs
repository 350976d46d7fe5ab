//! Checks the chunk stream a peer sends before `rml_rtmp` sees the bytes.
//!
//! `rml_rtmp` 0.8.0 trusts its input in ways a hostile peer can exploit:
//!
//! - its chunk deserializer reserves room for a whole message as soon as the first chunk
//!   arrives (up to the 16 MiB a header can announce);
//! - it keeps one message in progress for the whole connection, not one per chunk
//!   stream: a chunk of another chunk stream (or a new type 0/1 header) in the middle of
//!   a message is appended to it, and when the new header announces fewer bytes than are
//!   already buffered, `length - buffered` underflows and the reservation panics;
//! - a type 1/2/3 header whose extended timestamp is below `0xFFFFFF` underflows
//!   `timestamp - 0xFFFFFF` (a panic where overflow checks are on);
//! - commands (types 20 and 17) are decoded with `rml_amf0`, which recurses without a
//!   depth limit (a stack overflow aborts the process), and then split with
//!   `drain(..3)`, which panics when the command has fewer than three values; data
//!   messages (18 and 15) go through the same decoder, and the server session indexes
//!   the values of an `@setDataFrame` without checking that there are any.
//!
//! The guard follows the chunk stream exactly as the deserializer does (header formats,
//! per-chunk-stream header state, extended timestamps, the peer's chunk size, one
//! message at a time) and refuses, before the bytes go any further: a message over
//! `max_message_bytes`; any chunk other than the continuation (type 3, same chunk
//! stream) of a message in progress; such extended timestamps. It reassembles only the
//! messages `rml_rtmp` decodes as AMF (and SetChunkSize), at most
//! `max_amf_message_bytes` each, checks them with the non-recursive
//! [`amf_guard::scan`](crate::amf_guard::scan), and counts `createStream` commands
//! (each makes the server session keep a stream). Media payloads are never buffered.

use crate::amf_guard::{self, AmfError, AmfLimits, Top};
use std::collections::HashMap;

const EXTENDED: u32 = 0x00FF_FFFF;
const TYPE_SET_CHUNK_SIZE: u8 = 1;
const TYPE_AMF3_DATA: u8 = 15;
const TYPE_AMF3_COMMAND: u8 = 17;
const TYPE_AMF0_DATA: u8 = 18;
const TYPE_AMF0_COMMAND: u8 = 20;
/// Chunk streams a peer may use (each costs a few bytes of state here and in rml_rtmp).
const MAX_CHUNK_STREAMS: usize = 1024;
/// The largest chunk size `rml_rtmp` accepts.
const MAX_CHUNK_SIZE: u32 = 0x7FFF_FFFF;
/// Commands and data messages larger than this are refused (encoders send a few hundred
/// bytes; `onMetaData` with every field is about 1 KB).
pub const MAX_AMF_MESSAGE_BYTES: u32 = 64 * 1024;
/// `onCuePoint` messages kept between two reads at most (more in one read are dropped).
pub const MAX_PENDING_CUE_POINTS: usize = 16;
/// `createStream` commands a client may send on one connection (ffmpeg and OBS send one).
pub const MAX_CREATE_STREAM: u32 = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuardLimits {
    /// Any message larger than this is refused at its header.
    pub max_message_bytes: u32,
    /// Commands, data messages and SetChunkSize larger than this are refused.
    pub max_amf_message_bytes: u32,
    pub amf: AmfLimits,
    /// `createStream` commands allowed; `None` for a server's input (a client's guard).
    pub max_create_stream: Option<u32>,
    /// Refuse an `@setDataFrame` data message with fewer than three values (the server
    /// session indexes them unchecked).
    pub set_data_frame: bool,
}

impl GuardLimits {
    /// What a client may send to strom's RTMP server.
    pub fn server(max_message_bytes: u32) -> Self {
        Self {
            max_message_bytes,
            max_amf_message_bytes: MAX_AMF_MESSAGE_BYTES.min(max_message_bytes),
            amf: AmfLimits::default(),
            max_create_stream: Some(MAX_CREATE_STREAM),
            set_data_frame: true,
        }
    }

    /// What a remote server may send to strom's pushes and pulls.
    pub fn client(max_message_bytes: u32) -> Self {
        Self {
            max_create_stream: None,
            set_data_frame: false,
            ..Self::server(max_message_bytes)
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GuardError {
    #[error("message of {length} bytes is over the limit of {limit} bytes")]
    TooLarge { length: u32, limit: u32 },
    #[error(
        "message of type {type_id} and {length} bytes is over the limit of {limit} bytes for commands and data"
    )]
    TooLargeToCheck {
        type_id: u8,
        length: u32,
        limit: u32,
    },
    #[error("chunk header continues chunk stream {0}, which never started")]
    NoPreviousHeader(u32),
    #[error("more than {MAX_CHUNK_STREAMS} chunk streams")]
    TooManyChunkStreams,
    #[error(
        "a type {format} chunk on chunk stream {csid} interrupts the message in progress on chunk stream {current} (interleaved messages are not supported)"
    )]
    Interleaved { format: u8, csid: u32, current: u32 },
    #[error("extended timestamp {0:#x} below 0xFFFFFF on a compressed chunk header")]
    ExtendedTimestamp(u32),
    #[error("SetChunkSize without a size")]
    ShortChunkSize,
    #[error("SetChunkSize to {0} bytes")]
    BadChunkSize(u32),
    #[error("malformed AMF in a message of type {type_id}: {error}")]
    Amf { type_id: u8, error: AmfError },
    #[error("command with {0} values (name, transaction id and command object are required)")]
    CommandTooShort(usize),
    #[error("@setDataFrame with {0} values (a name and the values are required)")]
    DataFrameTooShort(usize),
    #[error("more than {0} createStream commands")]
    TooManyStreams(u32),
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
    limits: GuardLimits,
    chunk_size: usize,
    headers: HashMap<u32, Header>,
    /// The chunk stream of the chunk being read (or read last).
    csid: u32,
    current: Header,
    /// Bytes of the message in progress (one at a time, as in `rml_rtmp`); 0 between
    /// messages.
    progress: usize,
    stage: Stage,
    /// The header being collected (at most 3 + 11 + 4 bytes).
    head: Vec<u8>,
    /// Whether the message in progress is kept in `payload` to be checked.
    buffering: bool,
    payload: Vec<u8>,
    create_streams: u32,
    /// The AMF0 values of the first `connect` command, until taken.
    connect: Option<Vec<u8>>,
    connect_seen: bool,
    /// `onCuePoint` data messages (whole AMF payloads), until taken; at most
    /// [`MAX_PENDING_CUE_POINTS`].
    cue_points: Vec<Vec<u8>>,
    /// Once refused, always refused.
    failed: Option<GuardError>,
    #[cfg(test)]
    messages: Vec<(u8, usize)>,
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

fn checked_type(type_id: u8) -> bool {
    matches!(
        type_id,
        TYPE_SET_CHUNK_SIZE
            | TYPE_AMF3_DATA
            | TYPE_AMF3_COMMAND
            | TYPE_AMF0_DATA
            | TYPE_AMF0_COMMAND
    )
}

impl ChunkGuard {
    pub fn new(limits: GuardLimits) -> Self {
        Self {
            limits,
            chunk_size: 128,
            headers: HashMap::new(),
            csid: 0,
            current: Header::default(),
            progress: 0,
            stage: Stage::Header,
            head: Vec::with_capacity(18),
            buffering: false,
            payload: Vec::new(),
            create_streams: 0,
            connect: None,
            connect_seen: false,
            cue_points: Vec::new(),
            failed: None,
            #[cfg(test)]
            messages: Vec::new(),
        }
    }

    /// Follows `input`; an error means the connection must be closed (and every later
    /// call fails the same way).
    pub fn inspect(&mut self, input: &[u8]) -> Result<(), GuardError> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        let outcome = self.follow(input);
        if let Err(error) = &outcome {
            self.failed = Some(error.clone());
            self.payload = Vec::new();
        }
        outcome
    }

    /// The AMF0 values of the first `connect` command, once it has been seen.
    pub fn take_connect(&mut self) -> Option<Vec<u8>> {
        self.connect.take()
    }

    /// The `onCuePoint` data messages seen since the last call (SCTE-35 cues from
    /// encoders; `rml_rtmp` drops them).
    pub fn take_cue_points(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.cue_points)
    }

    fn follow(&mut self, mut input: &[u8]) -> Result<(), GuardError> {
        while !input.is_empty() {
            match self.stage {
                Stage::Payload { left } => {
                    let take = left.min(input.len());
                    if self.buffering {
                        self.payload.extend_from_slice(&input[..take]);
                    }
                    input = &input[take..];
                    self.progress += take;
                    if left > take {
                        self.stage = Stage::Payload { left: left - take };
                    } else {
                        self.end_chunk()?;
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
        let continuing = self.progress > 0;
        if continuing && (format != 3 || csid != self.csid) {
            return Err(GuardError::Interleaved {
                format,
                csid,
                current: self.csid,
            });
        }
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
                header.length = u32::from_be_bytes([0, m[3], m[4], m[5]]);
                header.type_id = m[6];
            }
        }
        if !continuing {
            if format != 0 && header.timestamp_field >= EXTENDED {
                let e = &self.head[self.head.len() - 4..];
                let extended = u32::from_be_bytes([e[0], e[1], e[2], e[3]]);
                if extended < EXTENDED {
                    return Err(GuardError::ExtendedTimestamp(extended));
                }
            }
            if header.length > self.limits.max_message_bytes {
                return Err(GuardError::TooLarge {
                    length: header.length,
                    limit: self.limits.max_message_bytes,
                });
            }
            self.buffering = checked_type(header.type_id);
            if self.buffering && header.length > self.limits.max_amf_message_bytes {
                return Err(GuardError::TooLargeToCheck {
                    type_id: header.type_id,
                    length: header.length,
                    limit: self.limits.max_amf_message_bytes,
                });
            }
            self.payload.clear();
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
            self.end_chunk()
        } else {
            self.stage = Stage::Payload { left };
            Ok(())
        }
    }

    fn end_chunk(&mut self) -> Result<(), GuardError> {
        self.headers.insert(self.csid, self.current);
        self.stage = Stage::Header;
        if self.progress < self.current.length as usize {
            return Ok(());
        }
        #[cfg(test)]
        self.messages.push((self.current.type_id, self.progress));
        self.progress = 0;
        if !self.buffering {
            return Ok(());
        }
        self.buffering = false;
        let payload = std::mem::take(&mut self.payload);
        let checked = self.message(self.current.type_id, &payload);
        self.payload = payload;
        self.payload.clear();
        checked
    }

    /// Checks one complete message of a [`checked_type`].
    fn message(&mut self, type_id: u8, payload: &[u8]) -> Result<(), GuardError> {
        let amf = |bytes| {
            amf_guard::scan(bytes, self.limits.amf)
                .map_err(|error| GuardError::Amf { type_id, error })
        };
        match type_id {
            TYPE_SET_CHUNK_SIZE => {
                let size = payload
                    .first_chunk::<4>()
                    .map(|b| u32::from_be_bytes(*b))
                    .ok_or(GuardError::ShortChunkSize)?;
                if size == 0 || size > MAX_CHUNK_SIZE {
                    return Err(GuardError::BadChunkSize(size));
                }
                self.chunk_size = size as usize;
            }
            TYPE_AMF0_DATA | TYPE_AMF3_DATA => {
                let scanned = amf(payload)?;
                if self.limits.set_data_frame
                    && scanned.first == Some(Top::String(b"@setDataFrame"))
                    && scanned.values < 3
                {
                    return Err(GuardError::DataFrameTooShort(scanned.values));
                }
                let cue_point = scanned.first == Some(Top::String(b"onCuePoint"))
                    || (scanned.first == Some(Top::String(b"@setDataFrame"))
                        && scanned.second == Some(Top::String(b"onCuePoint")));
                if cue_point
                    && type_id == TYPE_AMF0_DATA
                    && self.cue_points.len() < MAX_PENDING_CUE_POINTS
                {
                    self.cue_points.push(payload.to_vec());
                }
            }
            _ => {
                // rml_rtmp drops the leading 0 of an AMF3 command and reads AMF0.
                let values = match payload {
                    [0, rest @ ..] if type_id == TYPE_AMF3_COMMAND => rest,
                    _ => payload,
                };
                let scanned = amf(values)?;
                if scanned.values < 3 {
                    return Err(GuardError::CommandTooShort(scanned.values));
                }
                match scanned.first {
                    Some(Top::String(b"createStream")) => {
                        if let Some(limit) = self.limits.max_create_stream {
                            self.create_streams += 1;
                            if self.create_streams > limit {
                                return Err(GuardError::TooManyStreams(limit));
                            }
                        }
                    }
                    Some(Top::String(b"connect")) if !self.connect_seen => {
                        self.connect_seen = true;
                        self.connect = Some(values.to_vec());
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "chunk_guard_tests.rs"]
mod tests;
