//! `export_mp4`: the MP4 comes from the dvr worker's export socket
//! ([`strom_ipc::dvr_export`]) and is streamed to the HTTP client as it arrives; the
//! supervisor never holds the file nor touches media.

use crate::api::error::ApiError;
use axum::body::Body;
use axum::body::Bytes;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use std::path::Path;
use std::time::Duration;
use strom_ipc::FailureKind;
use strom_ipc::dvr_export::{ExportAnswer, ExportRequest};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

/// Time the worker has to select and plan the export (a long range reads a large
/// index) before the API gives up.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);
/// Longest answer line read from the worker.
const MAX_ANSWER_LINE: u64 = 64 * 1024;
/// Bytes per body chunk handed to the HTTP connection.
const BODY_CHUNK: usize = 256 * 1024;

/// Asks the dvr worker under `run_dir` for the export and turns its answer into the
/// HTTP response.
pub async fn export(run_dir: &Path, request: ExportRequest) -> Result<Response, ApiError> {
    let filename = filename(&request);
    let (answer, body) = tokio::time::timeout(ANSWER_TIMEOUT, ask(run_dir, &request))
        .await
        .map_err(|_| {
            ApiError::from_worker(
                FailureKind::Unavailable,
                "the dvr worker did not answer the export in time",
            )
        })??;
    let error = answer.error.clone().unwrap_or_default();
    let mut response = match answer.status {
        200 | 206 => Response::new(Body::from_stream(body_stream(body, answer.length))),
        416 => {
            let body = json!({"status": "RangeNotSatisfiable", "error": error});
            let mut response = axum::Json(body).into_response();
            response.headers_mut().insert(
                header::CONTENT_RANGE,
                header_value(format!("bytes */{}", answer.total)),
            );
            *response.status_mut() = StatusCode::RANGE_NOT_SATISFIABLE;
            return Ok(response);
        }
        400 => return Err(ApiError::bad_request(error)),
        404 => return Err(ApiError::not_found(error)),
        503 => return Err(ApiError::from_worker(FailureKind::Unavailable, &error)),
        _ => return Err(ApiError::internal(error)),
    };
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("video/mp4"));
    headers.insert(
        header::CONTENT_LENGTH,
        header_value(answer.length.to_string()),
    );
    headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    headers.insert(
        header::CONTENT_DISPOSITION,
        header_value(format!("attachment; filename=\"{filename}\"")),
    );
    if let (206, Some(first), Some(last)) = (answer.status, answer.first, answer.last) {
        headers.insert(
            header::CONTENT_RANGE,
            header_value(format!("bytes {first}-{last}/{}", answer.total)),
        );
        *response.status_mut() = StatusCode::PARTIAL_CONTENT;
    }
    Ok(response)
}

/// `<app>_<stream>_<start>-<end>.mp4`; an open bound is `first` or `last`. Names are
/// checked by the worker (no quotes or slashes reach a 200).
fn filename(request: &ExportRequest) -> String {
    let bound =
        |time: Option<i64>, open: &str| time.map_or_else(|| open.to_owned(), |t| t.to_string());
    format!(
        "{}_{}_{}-{}.mp4",
        request.app,
        request.stream,
        bound(request.start, "first"),
        bound(request.end, "last")
    )
}

fn header_value(value: String) -> HeaderValue {
    HeaderValue::try_from(value).unwrap_or_else(|_| HeaderValue::from_static("invalid"))
}

/// Sends the request and reads the answer line; the reader is left at the body.
async fn ask(
    run_dir: &Path,
    request: &ExportRequest,
) -> Result<(ExportAnswer, BufReader<UnixStream>), ApiError> {
    let path = strom_ipc::contract::dvr_export_path(run_dir);
    let unavailable = |e: std::io::Error| {
        ApiError::from_worker(
            FailureKind::Unavailable,
            &format!("the dvr worker's export socket {}: {e}", path.display()),
        )
    };
    let mut socket = UnixStream::connect(&path).await.map_err(unavailable)?;
    let mut line = serde_json::to_vec(request)
        .map_err(|e| ApiError::internal(format!("export request: {e}")))?;
    line.push(b'\n');
    socket.write_all(&line).await.map_err(unavailable)?;

    let mut socket = BufReader::new(socket);
    let mut answer = Vec::with_capacity(256);
    (&mut socket)
        .take(MAX_ANSWER_LINE)
        .read_until(b'\n', &mut answer)
        .await
        .map_err(unavailable)?;
    let answer: ExportAnswer = serde_json::from_slice(&answer).map_err(|e| {
        ApiError::internal(format!("the dvr worker's export answer is unreadable: {e}"))
    })?;
    Ok((answer, socket))
}

/// Exactly `length` bytes from `body`, in chunks; a body that ends early is an error
/// (`UnexpectedEof`), so the HTTP connection is cut rather than ending like a complete
/// file.
fn body_stream<R: AsyncRead + Unpin + Send + 'static>(
    body: R,
    length: u64,
) -> impl futures_util::Stream<Item = std::io::Result<Bytes>> + Send {
    futures_util::stream::try_unfold((body, length), |(mut body, remaining)| async move {
        if remaining == 0 {
            return Ok(None);
        }
        let want = usize::try_from(remaining)
            .unwrap_or(BODY_CHUNK)
            .min(BODY_CHUNK);
        let mut chunk = vec![0; want];
        body.read_exact(&mut chunk).await?;
        Ok(Some((Bytes::from(chunk), (body, remaining - want as u64))))
    })
}

#[cfg(test)]
mod tests;
