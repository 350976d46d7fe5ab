//! The DVR archive format, shared by the dvr worker that writes it and the readers that
//! serve it (the packager's DVR playlists, the MP4 export).
//!
//! An archive is one directory per stream holding:
//!
//! - **segment files** `<seq>.seg` ([`segment_file`]): the sample payloads in arrival
//!   order (MP4-sample form, exactly as the stream carried them) and, once the segment
//!   is closed, its codec configuration frames, a table of the samples (track, times,
//!   keyframe flag, size) and a trailer that locates them;
//! - the **index** `index` ([`index`]): one checksummed text line per closed segment (its
//!   sequence number, period, wall-clock start, 90 kHz start and duration, size and codec
//!   facts): about 100 bytes per segment, so days of recording index in a few megabytes
//!   while the per-sample tables stay in the segments that own them.
//!
//! Crash safety ([`archive`]): a segment's data, table and trailer are written and
//! fsynced, then the directory is fsynced, and only then is the index line naming it
//! appended and fsynced. A crash at any point loses at most the segment being written;
//! on start-up the writer reconciles the index with the files (a torn last line is cut,
//! entries whose file is missing or the wrong size are dropped, files the index does not
//! name are deleted). Removal (cleanup, retention) rewrites the index through a
//! temporary file and a rename first and deletes the files after, so a crash in between
//! leaves only orphans for the next reconcile.

pub mod archive;
mod checksum;
pub mod index;
pub mod segment_file;
#[doc(hidden)]
pub mod testing;
#[cfg(test)]
mod tests;

pub use archive::{ArchiveWriter, OpenSegment, Reconciled, read_archive};
pub use index::SegmentEntry;
pub use index::parse_index;
pub use segment_file::{SampleRecord, SegmentContents, parse_segment, read_segment};

/// The archive's index file name.
pub const INDEX_FILE: &str = "index";
/// Suffix of segment files.
pub const SEGMENT_SUFFIX: &str = ".seg";

/// The file name of segment `seq`.
pub fn segment_file_name(seq: u64) -> String {
    format!("{seq:012}{SEGMENT_SUFFIX}")
}
