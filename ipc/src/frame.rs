//! Sans-io framing of control messages.
//!
//! A frame is a 5-byte header (payload length as big-endian `u32`, then a flags byte)
//! followed by a bincode payload. The flags byte holds the number of file descriptors
//! that travel with the frame (low 7 bits, at most [`MAX_FDS_PER_FRAME`]) and
//! [`MORE_FRAGMENTS`]. The length is checked against [`MAX_FRAME_SIZE`] before anything
//! is allocated, so a confused or hostile peer cannot make the reader reserve more than
//! that for one frame.
//!
//! A message whose encoding is larger than one frame (a worker's hello with a big
//! configuration, say) travels as several consecutive frames: every frame but the last
//! has [`MORE_FRAGMENTS`] set, only the first carries descriptors, and the receiver
//! concatenates the payloads ([`crate::channel::ControlReader`] does it, up to a limit of
//! [`MAX_MESSAGE_SIZE`] or less). A message that fits one frame is encoded exactly as
//! before fragments existed, so old frames stay decodable. Configuration size therefore
//! never decides whether a worker can start: every piece of configuration is bounded
//! (see the README's limits) far below [`MAX_MESSAGE_SIZE`].

use crate::error::IpcError;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Largest payload a control frame may carry.
pub const MAX_FRAME_SIZE: usize = 16 * 1024 * 1024;
/// Largest message (all fragments together) a reader accepts unless told less.
pub const MAX_MESSAGE_SIZE: usize = 256 * 1024 * 1024;
/// Most descriptors one frame may carry (a worker's listeners fit many times over).
pub const MAX_FDS_PER_FRAME: usize = 32;
/// Bytes of the frame header.
pub const HEADER_LEN: usize = 5;
/// Flag in the header's descriptor byte: another fragment of this message follows.
pub const MORE_FRAGMENTS: u8 = 0x80;

fn bincode_config() -> impl bincode::config::Config {
    bincode::config::standard()
        .with_big_endian()
        .with_limit::<MAX_FRAME_SIZE>()
}

/// For messages assembled from fragments: the peer had to send more than one frame's
/// worth of bytes to get this larger allocation limit.
fn message_config() -> impl bincode::config::Config {
    bincode::config::standard()
        .with_big_endian()
        .with_limit::<MAX_MESSAGE_SIZE>()
}

/// Serializes `message` into one frame that announces `fd_count` descriptors.
pub fn encode<T: Serialize>(message: &T, fd_count: usize) -> Result<Vec<u8>, IpcError> {
    if fd_count > MAX_FDS_PER_FRAME {
        return Err(IpcError::TooManyDescriptors {
            count: fd_count,
            max: MAX_FDS_PER_FRAME,
        });
    }
    let mut frame = vec![0u8; HEADER_LEN];
    let payload_len = bincode::serde::encode_into_std_write(message, &mut frame, bincode_config())?;
    if payload_len > MAX_FRAME_SIZE {
        return Err(IpcError::FrameTooLarge {
            size: payload_len,
            max: MAX_FRAME_SIZE,
        });
    }
    let len = u32::try_from(payload_len).map_err(|_| IpcError::FrameTooLarge {
        size: payload_len,
        max: MAX_FRAME_SIZE,
    })?;
    frame[..4].copy_from_slice(&len.to_be_bytes());
    // fd_count <= MAX_FDS_PER_FRAME < 256, checked above.
    frame[4] = fd_count as u8;
    Ok(frame)
}

/// Serializes `message` into one frame, or into several fragments (concatenated in the
/// returned buffer) when it is larger than [`MAX_FRAME_SIZE`]; the first carries the
/// `fd_count` descriptors.
pub fn encode_message<T: Serialize>(message: &T, fd_count: usize) -> Result<Vec<u8>, IpcError> {
    if fd_count > MAX_FDS_PER_FRAME {
        return Err(IpcError::TooManyDescriptors {
            count: fd_count,
            max: MAX_FDS_PER_FRAME,
        });
    }
    let payload = bincode::serde::encode_to_vec(message, bincode_config())?;
    if payload.len() > MAX_MESSAGE_SIZE {
        return Err(IpcError::MessageTooLarge {
            size: payload.len(),
            max: MAX_MESSAGE_SIZE,
        });
    }
    let fragments = payload.len().div_ceil(MAX_FRAME_SIZE).max(1);
    let mut frames = Vec::with_capacity(payload.len() + fragments * HEADER_LEN);
    let mut chunks = payload.chunks(MAX_FRAME_SIZE).peekable();
    let mut first = true;
    loop {
        let chunk = chunks.next().unwrap_or_default();
        let more = chunks.peek().is_some();
        // chunk.len() <= MAX_FRAME_SIZE < u32::MAX; fd_count <= MAX_FDS_PER_FRAME < 0x80.
        frames.extend_from_slice(&(chunk.len() as u32).to_be_bytes());
        let fds = if first { fd_count as u8 } else { 0 };
        frames.push(if more { fds | MORE_FRAGMENTS } else { fds });
        frames.extend_from_slice(chunk);
        first = false;
        if !more {
            return Ok(frames);
        }
    }
}

/// A complete frame split off the front of a read buffer.
#[derive(Debug)]
pub struct RawFrame {
    pub fd_count: usize,
    pub payload: Vec<u8>,
    /// [`MORE_FRAGMENTS`] was set: this is a fragment and the message continues in the
    /// next frame.
    pub more: bool,
}

/// Takes one complete frame off the front of `buffer`, or `None` when more bytes are needed.
pub fn split_frame(buffer: &mut Vec<u8>) -> Result<Option<RawFrame>, IpcError> {
    if buffer.len() < HEADER_LEN {
        return Ok(None);
    }
    let len = u32::from_be_bytes([buffer[0], buffer[1], buffer[2], buffer[3]]) as usize;
    if len > MAX_FRAME_SIZE {
        return Err(IpcError::FrameTooLarge {
            size: len,
            max: MAX_FRAME_SIZE,
        });
    }
    let more = buffer[4] & MORE_FRAGMENTS != 0;
    let fd_count = usize::from(buffer[4] & !MORE_FRAGMENTS);
    if fd_count > MAX_FDS_PER_FRAME {
        return Err(IpcError::TooManyDescriptors {
            count: fd_count,
            max: MAX_FDS_PER_FRAME,
        });
    }
    if buffer.len() < HEADER_LEN + len {
        return Ok(None);
    }
    let payload = buffer[HEADER_LEN..HEADER_LEN + len].to_vec();
    buffer.drain(..HEADER_LEN + len);
    Ok(Some(RawFrame {
        fd_count,
        payload,
        more,
    }))
}

/// Decodes a payload produced by [`encode`].
pub fn decode<T: DeserializeOwned>(payload: &[u8]) -> Result<T, IpcError> {
    let (message, _read) = bincode::serde::decode_from_slice(payload, bincode_config())?;
    Ok(message)
}

/// Decodes the concatenated payloads of a fragmented message.
pub fn decode_message<T: DeserializeOwned>(payload: &[u8]) -> Result<T, IpcError> {
    if payload.len() <= MAX_FRAME_SIZE {
        return decode(payload);
    }
    let (message, _read) = bincode::serde::decode_from_slice(payload, message_config())?;
    Ok(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_waits_for_complete_frames() {
        let frame = encode(&("hello".to_string(), 42u64), 2).unwrap();
        let mut buffer = frame[..3].to_vec();
        assert!(split_frame(&mut buffer).unwrap().is_none());
        buffer.extend_from_slice(&frame[3..frame.len() - 1]);
        assert!(split_frame(&mut buffer).unwrap().is_none());
        buffer.push(frame[frame.len() - 1]);
        buffer.extend_from_slice(&frame);
        let first = split_frame(&mut buffer).unwrap().unwrap();
        assert_eq!(first.fd_count, 2);
        let decoded: (String, u64) = decode(&first.payload).unwrap();
        assert_eq!(decoded, ("hello".to_string(), 42));
        assert!(split_frame(&mut buffer).unwrap().is_some());
        assert!(buffer.is_empty());
    }

    #[test]
    fn rejects_oversized_length_before_allocating() {
        let mut buffer = vec![0xff, 0xff, 0xff, 0xff, 0];
        assert!(matches!(
            split_frame(&mut buffer),
            Err(IpcError::FrameTooLarge { .. })
        ));
    }

    #[test]
    fn rejects_too_many_descriptors() {
        assert!(encode(&1u8, MAX_FDS_PER_FRAME + 1).is_err());
        let mut buffer = vec![0, 0, 0, 1, 200, 0];
        assert!(matches!(
            split_frame(&mut buffer),
            Err(IpcError::TooManyDescriptors { .. })
        ));
    }

    /// Takes every frame off `buffer` and joins the fragments of one message.
    fn reassemble(buffer: &mut Vec<u8>) -> (Vec<u8>, Vec<usize>, usize) {
        let (mut payload, mut fd_counts, mut frames) = (Vec::new(), Vec::new(), 0);
        while let Some(raw) = split_frame(buffer).unwrap() {
            frames += 1;
            fd_counts.push(raw.fd_count);
            payload.extend_from_slice(&raw.payload);
            if !raw.more {
                break;
            }
        }
        (payload, fd_counts, frames)
    }

    #[test]
    fn small_messages_are_one_frame_exactly_as_before() {
        let message = ("hello".to_string(), 42u64);
        assert_eq!(
            encode_message(&message, 3).unwrap(),
            encode(&message, 3).unwrap()
        );
    }

    #[test]
    fn large_messages_travel_as_fragments_and_reassemble() {
        let message: Vec<String> = (0..40_000).map(|i| format!("{i:0>1000}")).collect();
        let mut buffer = encode_message(&message, 2).unwrap();
        assert!(buffer.len() > 2 * MAX_FRAME_SIZE);
        assert!(encode(&message, 2).is_err(), "one frame cannot hold it");
        let (payload, fd_counts, frames) = reassemble(&mut buffer);
        assert_eq!(frames, 3);
        assert_eq!(
            fd_counts,
            vec![2, 0, 0],
            "descriptors travel with the first"
        );
        assert!(buffer.is_empty());
        let decoded: Vec<String> = decode_message(&payload).unwrap();
        assert_eq!(decoded, message);
    }

    #[test]
    fn garbage_payload_is_a_decode_error_not_a_panic() {
        let result: Result<(String, Vec<u64>), _> = decode(&[0xfb, 0xff, 0xff, 0xff, 0xff]);
        assert!(result.is_err());
    }
}
