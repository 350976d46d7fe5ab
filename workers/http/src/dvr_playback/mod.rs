//! DVR playback: HLS playlists and segments served from a stream's DVR archive (the dvr
//! worker records it; `strom_media::dvr` is the format).
//!
//! [`urls`] names what can be asked for; [`playlists`] turns the archive's index into
//! master and media playlists (a window of it: everything, a UTC range, a timeshift);
//! [`segments`] muxes one archive segment into MPEG-TS or fMP4 on request, off the async
//! threads, at most [`MAX_CONCURRENT_MUXES`] at a time; [`caches`] keeps parsed indexes
//! and recently muxed segments. HTTP routing, viewer sessions and playback protection
//! are the live HLS ones (`crate::http`).

pub mod caches;
pub mod playlists;
pub mod segments;
#[cfg(test)]
mod tests;
pub mod urls;

use bytes::Bytes;
use caches::{Indexes, Muxed};
use segments::{MuxError, Output};
use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use strom_ipc::bus::StreamLocation;
use strom_ipc::rules::{DeliveryOutput, Rules};
use strom_media::dvr::SegmentEntry;
use strom_worker_runtime::sync::locked;
use tokio::sync::Semaphore;

/// Segments muxed at once (each holds its file and its output in memory); more
/// requests wait their turn.
pub const MAX_CONCURRENT_MUXES: usize = 4;

pub struct DvrPlayback {
    /// The instance's `data_dir`: archives are under `Dvr.path` there.
    data_dir: PathBuf,
    /// Streams the supervisor's registry lists as published: their archives may grow.
    published: Mutex<HashSet<(String, String)>>,
    indexes: Arc<Mutex<Indexes>>,
    muxed: Arc<Mutex<Muxed>>,
    mux_slots: Semaphore,
}

impl DvrPlayback {
    pub fn new(data_dir: PathBuf) -> Self {
        Self {
            data_dir,
            published: Mutex::default(),
            indexes: Arc::default(),
            muxed: Arc::default(),
            mux_slots: Semaphore::new(MAX_CONCURRENT_MUXES),
        }
    }

    /// A new registry of live streams from the supervisor.
    pub fn apply_registry(&self, locations: &[StreamLocation]) {
        *locked(&self.published) = locations
            .iter()
            .map(|l| (l.app.clone(), l.stream.clone()))
            .collect();
    }

    /// Whether `app/stream` may still add segments to its archive: it is published
    /// and its delivery records it.
    pub fn recording(&self, rules: &Rules, app: &str, stream: &str) -> bool {
        rules
            .delivery
            .for_stream(app, stream)
            .has(DeliveryOutput::Dvr)
            && locked(&self.published).contains(&(app.to_owned(), stream.to_owned()))
    }

    /// The archive directory of `app/stream`; the names must have passed
    /// `strom_ipc::names::check_pair`.
    pub fn archive_dir(&self, rules: &Rules, app: &str, stream: &str) -> PathBuf {
        rules.dvr.archive_dir(&self.data_dir, app, stream)
    }

    /// The archive's index (empty when there is none).
    pub async fn archive(&self, dir: &Path) -> io::Result<Arc<Vec<SegmentEntry>>> {
        let indexes = Arc::clone(&self.indexes);
        let dir = dir.to_path_buf();
        tokio::task::spawn_blocking(move || locked(&indexes).read(&dir))
            .await
            .map_err(io::Error::other)?
    }

    /// Segment `seq` of the archive in `dir` (whose index is `archive`) as `output`.
    pub async fn segment(
        &self,
        dir: &Path,
        archive: &[SegmentEntry],
        seq: u64,
        output: Output,
    ) -> Result<Bytes, MuxError> {
        let index = archive
            .binary_search_by_key(&seq, |e| e.seq)
            .map_err(|_| MuxError::Gone)?;
        let entry = archive[index].clone();
        let key = (dir.to_path_buf(), entry.seq, entry.start_ms, output);
        if let Some(bytes) = locked(&self.muxed).get(&key) {
            return Ok(bytes);
        }
        let next = archive
            .get(index + 1)
            .filter(|next| !playlists::boundary(&entry, next))
            .cloned();
        let _slot = self
            .mux_slots
            .acquire()
            .await
            .map_err(|_| MuxError::Mux("shutting down".to_owned()))?;
        let dir = dir.to_path_buf();
        let ts_offset = segments::ts_offset(archive, &entry);
        let bytes = tokio::task::spawn_blocking(move || {
            segments::mux(&dir, &entry, next.as_ref(), output, ts_offset)
        })
        .await
        .map_err(|e| MuxError::Mux(e.to_string()))??;
        locked(&self.muxed).put(key, bytes.clone());
        Ok(bytes)
    }
}
