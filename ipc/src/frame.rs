//! Sans-io framing of control messages.
//!
//! A frame is a 5-byte header (payload length as big-endian `u32`, then the number of
//! file descriptors that travel with the frame as `u8`) followed by a bincode payload.
//! The length is checked against [`MAX_FRAME_SIZE`] before anything is allocated, so a
//! confused or hostile peer cannot make the reader reserve more than that.

use crate::error::IpcError;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Largest payload a control frame may carry.
pub const MAX_FRAME_SIZE: usize = 16 * 1024 * 1024;
/// Most descriptors one frame may carry (a worker's listeners fit many times over).
pub const MAX_FDS_PER_FRAME: usize = 32;
/// Bytes of the frame header.
pub const HEADER_LEN: usize = 5;

fn bincode_config() -> impl bincode::config::Config {
    bincode::config::standard()
        .with_big_endian()
        .with_limit::<MAX_FRAME_SIZE>()
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

/// A complete frame split off the front of a read buffer.
#[derive(Debug)]
pub struct RawFrame {
    pub fd_count: usize,
    pub payload: Vec<u8>,
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
    let fd_count = usize::from(buffer[4]);
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
    Ok(Some(RawFrame { fd_count, payload }))
}

/// Decodes a payload produced by [`encode`].
pub fn decode<T: DeserializeOwned>(payload: &[u8]) -> Result<T, IpcError> {
    let (message, _read) = bincode::serde::decode_from_slice(payload, bincode_config())?;
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

    #[test]
    fn garbage_payload_is_a_decode_error_not_a_panic() {
        let result: Result<(String, Vec<u64>), _> = decode(&[0xfb, 0xff, 0xff, 0xff, 0xff]);
        assert!(result.is_err());
    }
}
