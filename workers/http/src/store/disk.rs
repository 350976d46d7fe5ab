//! The disk mirror of the store, `run_dir/hls/<app>/<stream>/`: the only way a path is
//! built from a name ([`stream_dir`], [`app_dir`]), the file names of segments, init
//! segments, the index and freed directories, a stream's files ([`Disk`]), atomic
//! writes, and the index read back as untrusted bytes ([`parse_index`]).

use super::segment::StreamMeta;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use strom_ipc::names::{self, NameError};

/// The playlist index in a stream's directory.
pub(super) const INDEX: &str = "index.json";
/// Directories of freed streams are renamed to `<root>/.gone-<n>` (a name no stream can
/// have) and deleted from there; a restart deletes leftovers.
pub(super) const TRASH_PREFIX: &str = ".gone-";

/// The directory of `app/stream` under `root`: the only way a stream's path is built.
/// Names that `strom_ipc::names` refuses (`..`, `/`, empty, hidden, too long, ...) get
/// no path at all.
pub fn stream_dir(root: &Path, app: &str, stream: &str) -> Result<PathBuf, NameError> {
    names::check_pair(app, stream)?;
    Ok(root.join(app).join(stream))
}

/// The directory of an application under `root`, for a checked name only.
pub fn app_dir(root: &Path, app: &str) -> Result<PathBuf, NameError> {
    names::check_app(app)?;
    Ok(root.join(app))
}

/// The files a stream has in its directory, by name, with their sizes.
#[derive(Debug, Default)]
pub(super) struct Disk {
    /// The stream was freed: nothing is written any more.
    pub(super) removed: bool,
    pub(super) files: HashMap<String, u64>,
}

/// The files of init segment `id`: both tracks, video alone, audio alone.
pub(super) fn init_names(id: u64) -> [String; 3] {
    [
        format!("init_{id}.mp4"),
        format!("init_{id}_video.mp4"),
        format!("init_{id}_audio.mp4"),
    ]
}

pub(super) fn write_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let temporary = path.with_extension("part");
    std::fs::write(&temporary, bytes)?;
    std::fs::rename(&temporary, path)
}

/// Sequence numbers no stream reaches (a segment a second for 285 million years); an
/// index with larger ones is corrupt, and counting on from them could overflow.
const MAX_SEQUENCE: u64 = 1 << 53;

/// A stream directory's `index.json` as a previous process left it. Whatever is on disk
/// is read as untrusted bytes (a crash, a full disk or an operator may have changed it):
/// besides the JSON, the sequence numbers must be ones the store can count on from.
pub fn parse_index(bytes: &[u8]) -> std::io::Result<StreamMeta> {
    let invalid = |why: String| std::io::Error::new(std::io::ErrorKind::InvalidData, why);
    let meta: StreamMeta = serde_json::from_slice(bytes).map_err(|e| invalid(e.to_string()))?;
    if meta.next_sequence > MAX_SEQUENCE || meta.discontinuity_sequence > MAX_SEQUENCE {
        return Err(invalid(format!(
            "sequence numbers over {MAX_SEQUENCE} (next {}, discontinuities {})",
            meta.next_sequence, meta.discontinuity_sequence
        )));
    }
    if let Some(segment) = meta
        .segments
        .iter()
        .find(|s| s.sequence >= meta.next_sequence)
    {
        return Err(invalid(format!(
            "segment {} listed at or after the next sequence number {}",
            segment.sequence, meta.next_sequence
        )));
    }
    Ok(meta)
}
