//! The MP4 export socket between the supervisor and the dvr worker
//! ([`crate::contract::dvr_export_path`]).
//!
//! Exports do not travel on the control channel: a file is far larger than a control
//! frame, and the supervisor must stream it without holding it. Per connection:
//!
//! 1. the supervisor writes one [`ExportRequest`] as a JSON line (at most
//!    [`MAX_REQUEST_LINE`] bytes with its `\n`);
//! 2. the worker answers one [`ExportAnswer`] as a JSON line;
//! 3. then exactly [`ExportAnswer::length`] body bytes (the MP4, or the range of it)
//!    and closes. A body that ends early means the export failed midway.
//!
//! The supervisor maps `status` to the HTTP status as is (200, 206, 400, 404, 416, 500,
//! 503).

use serde::{Deserialize, Serialize};

/// Longest request line the worker reads, `\n` included.
pub const MAX_REQUEST_LINE: usize = 8 * 1024;

/// What to export: `app/stream` between `start` and `end` (Unix seconds UTC, either
/// open), optionally only an HTTP byte range of the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportRequest {
    pub app: String,
    pub stream: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<i64>,
    /// The HTTP `Range` header as the client sent it (`bytes=0-1023`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<String>,
}

/// The worker's answer, before the body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportAnswer {
    /// An HTTP status: 200 whole file, 206 a range, 400 bad request (empty or inverted
    /// time range, bad names), 404 no recording there, 416 range not satisfiable, 500
    /// archive failure, 503 too many exports at once.
    pub status: u16,
    /// Body bytes that follow the answer line.
    pub length: u64,
    /// Size of the whole MP4 (0 when there is none).
    pub total: u64,
    /// First and last byte of the range sent (206).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<u64>,
    /// Why there is no body (status 400 and up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl ExportAnswer {
    /// An answer without a body.
    pub fn failure(status: u16, error: impl Into<String>) -> Self {
        Self {
            status,
            length: 0,
            total: 0,
            first: None,
            last: None,
            error: Some(error.into()),
        }
    }
}
