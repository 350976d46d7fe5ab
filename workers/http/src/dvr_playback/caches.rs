//! What DVR playback keeps between requests: parsed archive indexes (re-read when the
//! file changes: appended by the recorder, replaced by cleanup) and recently muxed
//! segments (viewers of one timeshift window ask for the same ones), both bounded.

use super::segments::Output;
use bytes::Bytes;
use std::collections::{HashMap, VecDeque};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use strom_media::dvr::{INDEX_FILE, SegmentEntry, read_archive};

/// Archives whose parsed index is kept; past it the cache starts over.
const MAX_INDEXES: usize = 256;
/// Bytes of muxed segments kept, all archives together.
pub const MUXED_BUDGET: usize = 64 * 1024 * 1024;

/// Identifies one version of an index file: a rename gives another inode, an append
/// another length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    inode: u64,
    len: u64,
    modified_ns: i128,
}

#[derive(Debug, Default)]
pub struct Indexes {
    parsed: HashMap<PathBuf, (Stamp, Arc<Vec<SegmentEntry>>)>,
}

impl Indexes {
    /// The archive in `dir` (blocking: a `stat`, and a read when it changed); empty
    /// when there is none.
    pub fn read(&mut self, dir: &Path) -> io::Result<Arc<Vec<SegmentEntry>>> {
        let meta = match std::fs::metadata(dir.join(INDEX_FILE)) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                self.parsed.remove(dir);
                return Ok(Arc::default());
            }
            Err(e) => return Err(e),
        };
        let stamp = Stamp {
            inode: meta.ino(),
            len: meta.len(),
            modified_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
        };
        if let Some((known, entries)) = self.parsed.get(dir)
            && *known == stamp
        {
            return Ok(Arc::clone(entries));
        }
        let entries = Arc::new(read_archive(dir)?);
        if self.parsed.len() >= MAX_INDEXES {
            self.parsed.clear();
        }
        self.parsed
            .insert(dir.to_path_buf(), (stamp, Arc::clone(&entries)));
        Ok(entries)
    }
}

/// A muxed segment: the archive, the segment (its number and wall-clock start, which
/// tell a segment from a later one with the same number after the archive was
/// emptied) and the output.
pub type MuxedKey = (PathBuf, u64, i64, Output);

/// Oldest-first eviction within [`MUXED_BUDGET`].
#[derive(Debug, Default)]
pub struct Muxed {
    kept: HashMap<MuxedKey, Bytes>,
    order: VecDeque<MuxedKey>,
    bytes: usize,
}

impl Muxed {
    pub fn get(&self, key: &MuxedKey) -> Option<Bytes> {
        self.kept.get(key).cloned()
    }

    pub fn put(&mut self, key: MuxedKey, bytes: Bytes) {
        // One segment may take a quarter of the budget: a huge one would evict
        // everything else for itself.
        if bytes.len() > MUXED_BUDGET / 4 || self.kept.contains_key(&key) {
            return;
        }
        self.bytes += bytes.len();
        self.order.push_back(key.clone());
        self.kept.insert(key, bytes);
        while self.bytes > MUXED_BUDGET {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            if let Some(gone) = self.kept.remove(&oldest) {
                self.bytes -= gone.len();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn muxed_segments_stay_within_the_budget_oldest_out_first() {
        let mut muxed = Muxed::default();
        let key = |n: u64| (PathBuf::from("a"), n, 0, Output::Ts);
        let quarter = Bytes::from(vec![0u8; MUXED_BUDGET / 4]);
        for n in 0..5 {
            muxed.put(key(n), quarter.clone());
        }
        assert!(muxed.get(&key(0)).is_none());
        assert!((1..5).all(|n| muxed.get(&key(n)).is_some()));
        assert_eq!(muxed.bytes, MUXED_BUDGET);
        muxed.put(key(9), Bytes::from(vec![0u8; MUXED_BUDGET / 4 + 1]));
        assert!(muxed.get(&key(9)).is_none(), "too big to keep");
    }
}
