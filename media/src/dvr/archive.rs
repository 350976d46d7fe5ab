//! Writing an archive directory crash-safely, and reading its index.
//!
//! One [`ArchiveWriter`] per archive at a time (the dvr worker holds it); readers in
//! other processes only read: the index is appended whole lines at a time and replaced
//! by rename, so a reader sees either the old or the new index, plus at most a torn last
//! line that it ignores.

use super::index::{SegmentEntry, parse_index};
use super::segment_file::{DATA_START, MAGIC, SampleRecord, encode_tail};
use super::{INDEX_FILE, SEGMENT_SUFFIX, segment_file_name};
use crate::frame::Codec;
use crate::sample::Sample;
use bytes::Bytes;
use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

const INDEX_TEMP: &str = "index.tmp";
/// Segment payloads are written through a buffer this large: a few writes per second
/// per stream, not one per frame.
const WRITE_BUFFER: usize = 256 * 1024;

/// What start-up reconciliation repaired.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Reconciled {
    /// Bytes of a torn index append that were cut.
    pub torn_index_bytes: u64,
    /// Index entries whose segment file was missing or had the wrong size.
    pub dropped_entries: usize,
    /// Segment files no index entry named (the segment open at a crash), deleted.
    pub removed_files: usize,
}

impl Reconciled {
    pub fn repaired_anything(&self) -> bool {
        *self != Self::default()
    }
}

pub struct ArchiveWriter {
    dir: PathBuf,
    index: File,
    entries: Vec<SegmentEntry>,
    next_seq: u64,
}

/// The segments of the archive in `dir` as its index lists them (empty when there is
/// no archive); a torn last line is ignored.
pub fn read_archive(dir: &Path) -> io::Result<Vec<SegmentEntry>> {
    match fs::read(dir.join(INDEX_FILE)) {
        Ok(text) => Ok(parse_index(&text).0),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

fn segment_seq(name: &str) -> Option<u64> {
    name.strip_suffix(SEGMENT_SUFFIX)?.parse().ok()
}

impl ArchiveWriter {
    /// Opens (creating) the archive in `dir` and reconciles its index with its files.
    pub fn open(dir: &Path) -> io::Result<(Self, Reconciled)> {
        let created = !dir.exists();
        fs::create_dir_all(dir)?;
        if created && let Some(parent) = dir.parent() {
            sync_dir(parent)?;
        }
        let mut report = Reconciled::default();
        let text = match fs::read(dir.join(INDEX_FILE)) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        let (listed, valid) = parse_index(&text);
        report.torn_index_bytes = (text.len() - valid) as u64;
        let mut entries = Vec::with_capacity(listed.len());
        for entry in listed {
            let path = dir.join(segment_file_name(entry.seq));
            match fs::metadata(&path) {
                Ok(meta) if meta.len() == entry.bytes => entries.push(entry),
                _ => report.dropped_entries += 1,
            }
        }
        let mut index_was_rewritten = false;
        if report.torn_index_bytes > 0 || report.dropped_entries > 0 {
            write_index(dir, &entries)?;
            index_was_rewritten = true;
        }
        let named: HashSet<u64> = entries.iter().map(|e| e.seq).collect();
        let mut highest_seen = entries.last().map_or(0, |e| e.seq);
        for item in fs::read_dir(dir)? {
            let item = item?;
            let name = item.file_name();
            let Some(name) = name.to_str() else { continue };
            if name == INDEX_TEMP {
                fs::remove_file(item.path())?;
                continue;
            }
            if let Some(seq) = segment_seq(name) {
                highest_seen = highest_seen.max(seq);
                if !named.contains(&seq) {
                    fs::remove_file(item.path())?;
                    report.removed_files += 1;
                }
            }
        }
        if report.removed_files > 0 || index_was_rewritten {
            sync_dir(dir)?;
        }
        let index = OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(INDEX_FILE))?;
        if text.is_empty() {
            sync_dir(dir)?;
        }
        Ok((
            Self {
                dir: dir.to_path_buf(),
                index,
                entries,
                next_seq: highest_seen + 1,
            },
            report,
        ))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn entries(&self) -> &[SegmentEntry] {
        &self.entries
    }

    /// The period number a new recording session gets.
    pub fn next_period(&self) -> u32 {
        self.entries.last().map_or(1, |e| e.period + 1)
    }

    /// Starts the next segment, carrying `configs` (the codec configuration frames;
    /// [`OpenSegment::set_configs`] replaces them until it is committed).
    pub fn begin(&mut self, configs: &[(Codec, Bytes)]) -> io::Result<OpenSegment> {
        let seq = self.next_seq;
        self.next_seq += 1;
        let path = self.dir.join(segment_file_name(seq));
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)?;
        let mut file = BufWriter::with_capacity(WRITE_BUFFER, file);
        file.write_all(MAGIC)?;
        Ok(OpenSegment {
            file,
            path,
            seq,
            configs: configs.to_vec(),
            records: Vec::new(),
            written: DATA_START,
        })
    }

    /// Closes `segment` and adds it to the index: data and table fsynced, then the
    /// directory, then the index line. `facts` fills the entry (its `seq`, `bytes` and
    /// `samples` are taken from the segment).
    pub fn commit(
        &mut self,
        segment: OpenSegment,
        facts: SegmentEntry,
    ) -> io::Result<SegmentEntry> {
        let OpenSegment {
            mut file,
            seq,
            configs,
            records,
            written,
            ..
        } = segment;
        file.write_all(&encode_tail(&configs, &records, written))?;
        let file = file.into_inner().map_err(|e| e.into_error())?;
        file.sync_data()?;
        let bytes = file.metadata()?.len();
        drop(file);
        sync_dir(&self.dir)?;
        let entry = SegmentEntry {
            seq,
            bytes,
            samples: records.len() as u32,
            ..facts
        };
        self.index.write_all(entry.to_line().as_bytes())?;
        self.index.sync_data()?;
        self.entries.push(entry.clone());
        Ok(entry)
    }

    /// Removes every segment `remove` picks: the index is rewritten without them first
    /// (temporary file, fsync, rename, directory fsync), then their files are deleted.
    /// Returns how many segments and bytes went.
    pub fn remove(&mut self, remove: impl Fn(&SegmentEntry) -> bool) -> io::Result<(usize, u64)> {
        let (gone, kept): (Vec<SegmentEntry>, Vec<SegmentEntry>) =
            self.entries.drain(..).partition(|e| remove(e));
        self.entries = kept;
        if gone.is_empty() {
            return Ok((0, 0));
        }
        write_index(&self.dir, &self.entries)?;
        self.index = OpenOptions::new()
            .append(true)
            .open(self.dir.join(INDEX_FILE))?;
        let mut bytes = 0;
        for entry in &gone {
            bytes += entry.bytes;
            match fs::remove_file(self.dir.join(segment_file_name(entry.seq))) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        sync_dir(&self.dir)?;
        Ok((gone.len(), bytes))
    }
}

/// Replaces the index with `entries` atomically.
fn write_index(dir: &Path, entries: &[SegmentEntry]) -> io::Result<()> {
    let temp = dir.join(INDEX_TEMP);
    let mut file = BufWriter::new(File::create(&temp)?);
    for entry in entries {
        file.write_all(entry.to_line().as_bytes())?;
    }
    let file = file.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    fs::rename(&temp, dir.join(INDEX_FILE))?;
    sync_dir(dir)
}

/// The segment being written.
pub struct OpenSegment {
    file: BufWriter<File>,
    path: PathBuf,
    seq: u64,
    configs: Vec<(Codec, Bytes)>,
    records: Vec<SampleRecord>,
    written: u64,
}

impl OpenSegment {
    /// The configuration frames the segment is closed with (a track that joined).
    pub fn set_configs(&mut self, configs: &[(Codec, Bytes)]) {
        self.configs = configs.to_vec();
    }

    /// Appends a sample's payload.
    pub fn push(&mut self, sample: &Sample) -> io::Result<()> {
        let size = u32::try_from(sample.data.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "sample over 4 GiB"))?;
        self.file.write_all(&sample.data)?;
        self.records.push(SampleRecord {
            kind: sample.kind,
            keyframe: sample.keyframe,
            dts: sample.dts,
            pts: sample.pts,
            offset: self.written,
            size,
        });
        self.written += u64::from(size);
        Ok(())
    }

    pub fn records(&self) -> &[SampleRecord] {
        &self.records
    }

    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Deletes the unfinished segment (nothing in it, or the stream went away mid-way
    /// with nothing worth keeping).
    pub fn discard(self) -> io::Result<()> {
        drop(self.file);
        fs::remove_file(&self.path)
    }
}
