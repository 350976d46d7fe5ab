//! Big-endian byte cursor over a `Bytes` buffer for the decoder configuration
//! record parsers: fixed-size reads and zero-copy sub-slices, all bounds-checked.

use bytes::Bytes;

use crate::ParseError;

pub(crate) struct Cursor<'a> {
    buf: &'a Bytes,
    pos: usize,
    what: &'static str,
}

impl<'a> Cursor<'a> {
    /// `what` names the structure in [`ParseError::Truncated`].
    pub(crate) fn new(buf: &'a Bytes, what: &'static str) -> Self {
        Self { buf, pos: 0, what }
    }

    pub(crate) fn array<const N: usize>(&mut self) -> Result<[u8; N], ParseError> {
        let end = self.end(N)?;
        let out = self
            .buf
            .get(self.pos..end)
            .and_then(|s| <[u8; N]>::try_from(s).ok());
        self.pos = end;
        out.ok_or(ParseError::Truncated(self.what))
    }

    pub(crate) fn u8(&mut self) -> Result<u8, ParseError> {
        self.array::<1>().map(|[b]| b)
    }

    pub(crate) fn u16(&mut self) -> Result<u16, ParseError> {
        self.array().map(u16::from_be_bytes)
    }

    /// The next `n` bytes as a zero-copy slice of the buffer.
    pub(crate) fn bytes(&mut self, n: usize) -> Result<Bytes, ParseError> {
        let end = self.end(n)?;
        let out = self.buf.slice(self.pos..end);
        self.pos = end;
        Ok(out)
    }

    fn end(&self, n: usize) -> Result<usize, ParseError> {
        self.pos
            .checked_add(n)
            .filter(|&end| end <= self.buf.len())
            .ok_or(ParseError::Truncated(self.what))
    }
}
