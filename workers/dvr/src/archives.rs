//! The archives under the DVR root: each opened (and reconciled) once, then shared by
//! its recorder, the API's cleanup and retention through one lock, so removal never
//! races a commit. Every call does file IO: callers on the async runtime use
//! `spawn_blocking`.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use strom_media::dvr::{ArchiveWriter, OpenSegment, SegmentEntry};
use strom_stream::StreamKey;
use strom_worker_runtime::sync::locked;

/// One archive, shared.
#[derive(Clone)]
pub struct SharedArchive {
    dir: PathBuf,
    writer: Arc<Mutex<ArchiveWriter>>,
}

impl SharedArchive {
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn next_period(&self) -> u32 {
        locked(&self.writer).next_period()
    }

    pub fn begin(
        &self,
        configs: &[(strom_media::frame::Codec, bytes::Bytes)],
    ) -> io::Result<OpenSegment> {
        locked(&self.writer).begin(configs)
    }

    pub fn commit(&self, segment: OpenSegment, facts: SegmentEntry) -> io::Result<SegmentEntry> {
        locked(&self.writer).commit(segment, facts)
    }

    /// Removes the segments `remove` picks; `(segments, bytes)` removed.
    pub fn remove(&self, remove: impl Fn(&SegmentEntry) -> bool) -> io::Result<(usize, u64)> {
        locked(&self.writer).remove(remove)
    }

    /// A copy of the index.
    pub fn entries(&self) -> Vec<SegmentEntry> {
        locked(&self.writer).entries().to_vec()
    }

    /// The oldest segment's wall-clock start, if any.
    pub fn oldest_start_ms(&self) -> Option<i64> {
        locked(&self.writer).entries().first().map(|e| e.start_ms)
    }
}

pub struct Archives {
    root: Mutex<PathBuf>,
    open: Mutex<HashMap<StreamKey, SharedArchive>>,
}

impl Archives {
    pub fn new(root: PathBuf) -> Self {
        Self {
            root: Mutex::new(root),
            open: Mutex::new(HashMap::new()),
        }
    }

    pub fn root(&self) -> PathBuf {
        locked(&self.root).clone()
    }

    /// A new root (the `Dvr.path` changed): archives are opened there from now on.
    pub fn set_root(&self, root: PathBuf) {
        let mut current = locked(&self.root);
        if *current != root {
            tracing::info!(root = %root.display(), "DVR archive root changed");
            *current = root;
            locked(&self.open).clear();
        }
    }

    /// The archive of `key`, created if it does not exist; reconciled on first open.
    pub fn open(&self, key: &StreamKey) -> io::Result<SharedArchive> {
        strom_ipc::names::check_pair(&key.app, &key.stream)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        if let Some(archive) = locked(&self.open).get(key) {
            return Ok(archive.clone());
        }
        let dir = self.root().join(&key.app).join(&key.stream);
        let (writer, report) = ArchiveWriter::open(&dir)?;
        if report.repaired_anything() {
            tracing::warn!(
                stream = %key,
                torn_index_bytes = report.torn_index_bytes,
                dropped_entries = report.dropped_entries,
                removed_files = report.removed_files,
                "DVR archive reconciled after an unclean stop"
            );
        }
        let archive = SharedArchive {
            dir,
            writer: Arc::new(Mutex::new(writer)),
        };
        Ok(locked(&self.open)
            .entry(key.clone())
            .or_insert(archive)
            .clone())
    }

    /// The archive of `app/stream` if one exists on disk.
    pub fn existing(&self, app: &str, stream: &str) -> io::Result<Option<SharedArchive>> {
        if strom_ipc::names::check_pair(app, stream).is_err() {
            return Ok(None);
        }
        let key = StreamKey::new(app.to_owned(), stream.to_owned());
        if locked(&self.open).contains_key(&key) || self.root().join(app).join(stream).is_dir() {
            return self.open(&key).map(Some);
        }
        Ok(None)
    }

    /// Every archive on disk (`<root>/<app>/<stream>/`), opened, sorted by name.
    pub fn all(&self) -> io::Result<Vec<(StreamKey, SharedArchive)>> {
        let root = self.root();
        let mut found = Vec::new();
        let apps = match fs::read_dir(&root) {
            Ok(apps) => apps,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(found),
            Err(e) => return Err(e),
        };
        for app in apps.flatten() {
            let Ok(app_name) = app.file_name().into_string() else {
                continue;
            };
            let Ok(streams) = fs::read_dir(app.path()) else {
                continue;
            };
            for stream in streams.flatten() {
                let Ok(stream_name) = stream.file_name().into_string() else {
                    continue;
                };
                if !stream.path().is_dir() {
                    continue;
                }
                if let Some(archive) = self.existing(&app_name, &stream_name)? {
                    found.push((StreamKey::new(app_name.clone(), stream_name), archive));
                }
            }
        }
        found.sort_by(|a, b| (&a.0.app, &a.0.stream).cmp(&(&b.0.app, &b.0.stream)));
        Ok(found)
    }
}

/// Free bytes for unprivileged writers on the filesystem of `path` (0 when unknown).
pub fn space_available(path: &Path) -> u64 {
    let mut probe = path.to_path_buf();
    while !probe.exists() {
        if !probe.pop() {
            return 0;
        }
    }
    match nix::sys::statvfs::statvfs(&probe) {
        Ok(stats) => stats.blocks_available() * stats.fragment_size(),
        Err(_) => 0,
    }
}
