//! MP4 export of recordings: a small server on the dvr worker's export socket
//! (`run_dir/bus/dvr-export.sock`, [`strom_ipc::contract::dvr_export_path`]) that the
//! supervisor's `GET /manage/dvr/export_mp4/<app>/<stream>` streams from.
//!
//! Protocol ([`strom_ipc::dvr_export`]): the client writes one JSON line
//! `{"app","stream","start"?,"end"?,"range"?}` (at most 8 KiB, within
//! [`REQUEST_TIMEOUT`]); the server answers one JSON line
//! `{"status":200|206|400|404|416|500|503,"length","total","first"?,"last"?,"error"?}`
//! and then exactly `length` bytes of MP4 and closes.
//!
//! The archive is behind [`ExportSource`]: it picks the samples of a time range and
//! says which files they lie in; [`strom_media::mp4::plan`] lays the MP4 out over them
//! and [`body`] copies the pieces from the files to the socket off the runtime, never
//! holding more than a few chunks of it. At most [`MAX_CONCURRENT_EXPORTS`] run at once.

mod body;
mod connection;
mod range;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use strom_media::mp4::ExportSample;
use strom_media::sample::Tracks;
use tokio::net::UnixListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// Exports served at once; more are answered 503 (each holds a blocking thread and a
/// plan whose tables can reach tens of MB for a long range).
pub const MAX_CONCURRENT_EXPORTS: usize = 4;
/// Time the client has to send its request line.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// The recordings, as the export sees them. The archive implements it.
pub trait ExportSource: Send + Sync + 'static {
    /// The samples of `app/stream` recorded between `start` and `end` (Unix seconds UTC;
    /// `None`: open), snapped to the video keyframe at or before `start`, with their
    /// source files and the pts to play from. Runs on a blocking thread.
    fn select(
        &self,
        app: &str,
        stream: &str,
        start: Option<i64>,
        end: Option<i64>,
    ) -> Result<Selection, SelectError>;
}

/// What an export is made of.
#[derive(Debug, Clone)]
pub struct Selection {
    /// Codec configurations; every sample must have been recorded with them.
    pub tracks: Tracks,
    /// Samples in the order they lie in the files (`file` indexes `files`).
    pub samples: Vec<ExportSample>,
    pub files: Vec<PathBuf>,
    /// 90 kHz pts where playback begins (the requested start); `None`: the first sample.
    pub play_from: Option<i64>,
}

/// Why there is nothing to export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SelectError {
    /// No recording of that stream (404).
    NotFound,
    /// A recording, but nothing in the time range (400).
    Empty,
    /// `end` before `start` (400).
    Inverted,
    /// The archive could not be read (500).
    Io(String),
}

/// The source until recording lands: no stream has a recording.
#[derive(Debug, Default)]
pub struct NoRecordings;

impl ExportSource for NoRecordings {
    fn select(
        &self,
        _: &str,
        _: &str,
        _: Option<i64>,
        _: Option<i64>,
    ) -> Result<Selection, SelectError> {
        Err(SelectError::NotFound)
    }
}

/// Binds the export socket under `run_dir` (replacing a stale one) and serves exports
/// from `source` in a task until `shutdown`; the error names the socket.
pub fn start(
    run_dir: &Path,
    source: Arc<dyn ExportSource>,
    shutdown: CancellationToken,
) -> Result<(), String> {
    let path = strom_ipc::contract::dvr_export_path(run_dir);
    let listener = strom_worker_runtime::bus::bind(&path)
        .map_err(|e| format!("MP4 export socket {}: {e}", path.display()))?;
    tokio::spawn(serve(listener, source, shutdown));
    Ok(())
}

/// Serves exports on `listener` until `shutdown`. Exports under way finish.
pub async fn serve(
    listener: UnixListener,
    source: Arc<dyn ExportSource>,
    shutdown: CancellationToken,
) {
    let slots = Arc::new(Semaphore::new(MAX_CONCURRENT_EXPORTS));
    loop {
        let accepted = tokio::select! {
            () = shutdown.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((socket, _)) => {
                tokio::spawn(connection::serve(
                    socket,
                    Arc::clone(&source),
                    Arc::clone(&slots),
                ));
            }
            Err(e) => {
                strom_worker_runtime::limited_log!(warn, 5, Duration::from_secs(10); error = %e, "export accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}
