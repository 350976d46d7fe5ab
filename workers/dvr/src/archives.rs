//! The archives under the DVR root: an archive in use is open once, shared by its
//! recorder, the API's cleanup and retention through one lock, so removal never races a
//! commit. It stays open (its index descriptor) only while something holds it: the
//! recorder of a live stream, or one API call or retention round, which open archives
//! one at a time; the table keeps only weak references. Without that every name ever
//! published kept a descriptor, across restarts too, until the worker ran out. Every
//! call does file IO: callers on the async runtime use `spawn_blocking`.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
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

/// How often [`Archives::open`] tries when a cleanup removes the directory meanwhile.
const OPEN_TRIES: usize = 3;

/// An archive's directory and its writer while someone holds it.
type OpenWriter = (PathBuf, Weak<Mutex<ArchiveWriter>>);

pub struct Archives {
    root: Mutex<PathBuf>,
    /// The archives open now (held by someone), by stream.
    open: Mutex<HashMap<StreamKey, OpenWriter>>,
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

    /// The archive of `key` as long as a holder keeps it open (the one already open, if
    /// any), created if it does not exist; reconciled when opened.
    pub fn open(&self, key: &StreamKey) -> io::Result<SharedArchive> {
        strom_ipc::names::check_pair(&key.app, &key.stream)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        if let Some(archive) = self.held(key) {
            return Ok(archive);
        }
        let dir = self.root().join(&key.app).join(&key.stream);
        // A cleanup may remove the directory between this open and the table below
        // (see `remove_if_empty`): then it is opened again, so nothing records into a
        // directory that is gone.
        for _ in 0..OPEN_TRIES {
            if let Some(archive) = self.open_at(key, &dir)? {
                return Ok(archive);
            }
        }
        Err(io::Error::other("DVR archive removed while it was opened"))
    }

    /// One try of [`Archives::open`]: `None` when the directory went meanwhile.
    fn open_at(&self, key: &StreamKey, dir: &Path) -> io::Result<Option<SharedArchive>> {
        let (writer, report) = match ArchiveWriter::open(dir) {
            Ok(opened) => opened,
            // The app directory went between its creation and the stream's.
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        if report.repaired_anything() {
            tracing::warn!(
                stream = %key,
                torn_index_bytes = report.torn_index_bytes,
                dropped_entries = report.dropped_entries,
                removed_files = report.removed_files,
                "DVR archive reconciled after an unclean stop"
            );
        }
        let mut open = locked(&self.open);
        // Opened meanwhile by another caller: use that one (one writer per archive).
        if let Some((dir, writer)) = open
            .get(key)
            .and_then(|(d, w)| Some((d.clone(), w.upgrade()?)))
        {
            return Ok(Some(SharedArchive { dir, writer }));
        }
        // Removal happens under this lock, so a directory here now stays until the
        // writer is let go.
        if !dir.is_dir() {
            return Ok(None);
        }
        open.retain(|_, (_, writer)| writer.strong_count() > 0);
        let writer = Arc::new(Mutex::new(writer));
        open.insert(key.clone(), (dir.to_path_buf(), Arc::downgrade(&writer)));
        Ok(Some(SharedArchive {
            dir: dir.to_path_buf(),
            writer,
        }))
    }

    /// Removes the archive of `key` when it has no segment left and nobody holds it
    /// (a recorder keeps its own), with its app directory if that is empty then:
    /// otherwise every name ever published and cleaned up kept a directory. `true`
    /// when it went.
    pub fn remove_if_empty(&self, key: &StreamKey) -> io::Result<bool> {
        let open = locked(&self.open);
        if open
            .get(key)
            .is_some_and(|(_, writer)| writer.strong_count() > 0)
        {
            return Ok(false);
        }
        let app_dir = self.root().join(&key.app);
        let dir = app_dir.join(&key.stream);
        if !dir.is_dir() {
            return Ok(false);
        }
        // Opened (so reconciled) to read its index: anything listed is kept.
        let (writer, _) = ArchiveWriter::open(&dir)?;
        let empty = writer.entries().is_empty();
        drop(writer);
        if !empty {
            return Ok(false);
        }
        fs::remove_dir_all(&dir)?;
        // Only when empty: another stream of the app may be there.
        if fs::remove_dir(&app_dir).is_err() {
            tracing::debug!(app = %key.app, "DVR app directory kept: not empty");
        }
        Ok(true)
    }

    /// The archive of `key` if someone holds it open now.
    fn held(&self, key: &StreamKey) -> Option<SharedArchive> {
        let open = locked(&self.open);
        let (dir, writer) = open.get(key)?;
        Some(SharedArchive {
            dir: dir.clone(),
            writer: writer.upgrade()?,
        })
    }

    /// Archives open now (for tests: descriptors held).
    #[cfg(test)]
    pub fn open_count(&self) -> usize {
        locked(&self.open)
            .values()
            .filter(|(_, writer)| writer.strong_count() > 0)
            .count()
    }

    /// The archive of `app/stream` if one exists on disk.
    pub fn existing(&self, app: &str, stream: &str) -> io::Result<Option<SharedArchive>> {
        if strom_ipc::names::check_pair(app, stream).is_err() {
            return Ok(None);
        }
        let key = StreamKey::new(app.to_owned(), stream.to_owned());
        if let Some(archive) = self.held(&key) {
            return Ok(Some(archive));
        }
        if self.root().join(app).join(stream).is_dir() {
            return self.open(&key).map(Some);
        }
        Ok(None)
    }

    /// Every archive on disk (`<root>/<app>/<stream>/`) by name, sorted, without opening
    /// any: callers open them one at a time ([`Archives::existing`]) and let each go.
    pub fn keys(&self) -> io::Result<Vec<StreamKey>> {
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
                if !stream.path().is_dir()
                    || strom_ipc::names::check_pair(&app_name, &stream_name).is_err()
                {
                    continue;
                }
                found.push(StreamKey::new(app_name.clone(), stream_name));
            }
        }
        found.sort_by(|a, b| (&a.app, &a.stream).cmp(&(&b.app, &b.stream)));
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn archives_stay_open_only_while_held() {
        let root = tempfile::tempdir().unwrap();
        let archives = Archives::new(root.path().to_path_buf());
        let key = StreamKey::new("live", "cam");
        // Nothing is created for a name that is only asked about.
        assert!(archives.existing("live", "cam").unwrap().is_none());
        assert!(!root.path().join("live").exists());
        let held = archives.open(&key).unwrap();
        assert_eq!(archives.open_count(), 1);
        // Others share the open one while it is held.
        let again = archives.existing("live", "cam").unwrap().unwrap();
        assert!(Arc::ptr_eq(&held.writer, &again.writer));
        drop((held, again));
        assert_eq!(archives.open_count(), 0, "let go: its descriptor is closed");
        // Many archives listed and looked at one by one: none left open.
        for n in 0..50 {
            drop(
                archives
                    .open(&StreamKey::new("live", format!("s{n}")))
                    .unwrap(),
            );
        }
        let keys = archives.keys().unwrap();
        assert_eq!(keys.len(), 51);
        for key in &keys {
            assert!(archives.existing(&key.app, &key.stream).unwrap().is_some());
        }
        assert_eq!(archives.open_count(), 0);
    }

    #[test]
    fn an_empty_archive_nobody_holds_is_removed_with_its_directories() {
        let root = tempfile::tempdir().unwrap();
        let archives = Archives::new(root.path().to_path_buf());
        let cam = StreamKey::new("live", "cam");
        let other = StreamKey::new("live", "other");
        let held = archives.open(&cam).unwrap();
        drop(archives.open(&other).unwrap());
        // Held (a recorder): kept.
        assert!(!archives.remove_if_empty(&cam).unwrap());
        drop(held);
        assert!(archives.remove_if_empty(&cam).unwrap());
        assert!(!root.path().join("live/cam").exists());
        assert!(root.path().join("live").is_dir(), "another stream is there");
        assert!(archives.remove_if_empty(&other).unwrap());
        assert!(!root.path().join("live").exists());
        // Nothing there: nothing created.
        assert!(!archives.remove_if_empty(&cam).unwrap());
        assert!(!root.path().join("live").exists());
        // And it can be recorded again.
        drop(archives.open(&cam).unwrap());
        assert!(root.path().join("live/cam").is_dir());
    }
}
