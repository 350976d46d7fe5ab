//! [`Mp4Plan::reads`]: what to read for a byte range of a planned MP4 (HTTP ranges).

use bytes::Bytes;

use super::progressive::Mp4Plan;

/// One step of producing a byte range of the file: bytes of the header, or bytes of a
/// source file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    Header(Bytes),
    File { file: u32, offset: u64, len: u64 },
}

impl Read {
    pub fn len(&self) -> u64 {
        match self {
            Read::Header(bytes) => bytes.len() as u64,
            Read::File { len, .. } => *len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Mp4Plan {
    /// The reads that produce bytes `start..=end_inclusive` of the file, in order. The
    /// range is clipped to the file; an empty or inverted one yields nothing.
    pub fn reads(&self, start: u64, end_inclusive: u64) -> Reads<'_> {
        let end = end_inclusive.saturating_add(1).min(self.total_len);
        let header_len = self.header.len() as u64;
        // The first piece that ends after `start`.
        let piece = self
            .piece_ends
            .partition_point(|&piece_end| header_len + piece_end <= start);
        Reads {
            plan: self,
            position: start.min(end),
            end,
            piece,
        }
    }
}

/// Iterator of [`Read`]s; see [`Mp4Plan::reads`].
#[derive(Debug)]
pub struct Reads<'a> {
    plan: &'a Mp4Plan,
    /// Next byte of the file to produce.
    position: u64,
    /// One past the last byte to produce.
    end: u64,
    /// Index of the piece holding `position` once past the header.
    piece: usize,
}

impl Iterator for Reads<'_> {
    type Item = Read;

    fn next(&mut self) -> Option<Read> {
        if self.position >= self.end {
            return None;
        }
        let header_len = self.plan.header.len() as u64;
        if self.position < header_len {
            let to = self.end.min(header_len);
            // Both below the header's length, which is a usize.
            let bytes = self.plan.header.slice(self.position as usize..to as usize);
            self.position = to;
            return Some(Read::Header(bytes));
        }
        let piece = self.plan.pieces.get(self.piece)?;
        let piece_end = header_len + *self.plan.piece_ends.get(self.piece)?;
        let piece_start = piece_end - piece.len;
        let to = self.end.min(piece_end);
        let skip = self.position - piece_start;
        let read = Read::File {
            file: piece.file,
            offset: piece.offset + skip,
            len: to - self.position,
        };
        self.position = to;
        self.piece += 1;
        Some(read)
    }
}
