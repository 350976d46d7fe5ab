//! Why an outgoing RTMP connection failed or ended.

use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot resolve or reach {endpoint}: {source}")]
    Connect {
        endpoint: String,
        source: std::io::Error,
    },
    #[error("{step} took longer than {limit:?}")]
    Timeout { step: &'static str, limit: Duration },
    #[error("tls: {0}")]
    Tls(String),
    #[error("handshake failed: {0}")]
    Handshake(String),
    #[error("rtmp protocol error: {0}")]
    Protocol(String),
    #[error("the server closed the connection")]
    Closed,
    /// The server rejected `connect`; the description carries authentication challenges.
    #[error("connect rejected: {0}")]
    Rejected(String),
    /// An `onStatus` error code in answer to `publish` or `play`, or while streaming.
    #[error("refused with {0}")]
    Refused(String),
    #[error("authentication failed: {0}")]
    AuthFailed(String),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}

impl ClientError {
    pub fn protocol(error: impl std::fmt::Display) -> Self {
        ClientError::Protocol(error.to_string())
    }
}
