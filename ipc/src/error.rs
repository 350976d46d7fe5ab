//! Typed errors of the control channel.

use thiserror::Error;

/// Why a control frame could not be sent or received.
#[derive(Debug, Error)]
pub enum IpcError {
    #[error("control frame of {size} bytes exceeds the maximum of {max} bytes")]
    FrameTooLarge { size: usize, max: usize },
    #[error("control message of {size} bytes exceeds the maximum of {max} bytes")]
    MessageTooLarge { size: usize, max: usize },
    #[error("control frame announces {announced} descriptors but {available} arrived")]
    MissingDescriptors { announced: usize, available: usize },
    #[error("control frame carries {count} descriptors, more than the maximum of {max}")]
    TooManyDescriptors { count: usize, max: usize },
    #[error("control message could not be encoded: {0}")]
    Encode(#[from] bincode::error::EncodeError),
    #[error("control message could not be decoded: {0}")]
    Decode(#[from] bincode::error::DecodeError),
    #[error("control channel I/O failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("control channel closed by the peer")]
    Closed,
    #[error("bad media bus frame: {0}")]
    BadMediaFrame(&'static str),
}
