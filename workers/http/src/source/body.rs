//! How an Icecast source's body is framed: `Transfer-Encoding: chunked`, a
//! `Content-Length`, or (what Icecast encoders send) neither, read as an unbounded
//! stream until the source hangs up. Sans-io; chunk sizes only count down, they never
//! size a buffer.

use strom_media::icy_request::SourceRequest;

/// The longest chunk-size line accepted (size, extensions, CRLF).
const MAX_SIZE_LINE: usize = 256;

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    #[error("bad Content-Length {0:?}")]
    Length(String),
    #[error("unsupported Transfer-Encoding {0:?}")]
    Encoding(String),
    #[error("malformed chunked body")]
    Chunk,
}

#[derive(Debug)]
pub enum Transfer {
    Unbounded,
    Length(u64),
    Chunked(Chunked),
}

#[derive(Debug, Default)]
pub struct Chunked {
    state: ChunkState,
    line: Vec<u8>,
}

#[derive(Debug, Default, PartialEq, Eq)]
enum ChunkState {
    #[default]
    Size,
    Data(u64),
    /// The CRLF after a chunk's data: bytes still to skip.
    DataEnd(u8),
    Trailer,
    Done,
}

impl Transfer {
    pub fn of(request: &SourceRequest) -> Result<Self, BodyError> {
        if let Some(encoding) = request.header("transfer-encoding") {
            return if encoding.eq_ignore_ascii_case("chunked") {
                Ok(Self::Chunked(Chunked::default()))
            } else {
                Err(BodyError::Encoding(encoding.chars().take(32).collect()))
            };
        }
        match request.header("content-length") {
            Some(length) => length
                .parse()
                .map(Self::Length)
                .map_err(|_| BodyError::Length(length.chars().take(32).collect())),
            None => Ok(Self::Unbounded),
        }
    }

    /// Appends the payload in `input` to `out`; `Ok(true)` once the body has ended
    /// (bytes after its end are ignored).
    pub fn decode(&mut self, mut input: &[u8], out: &mut Vec<u8>) -> Result<bool, BodyError> {
        match self {
            Self::Unbounded => {
                out.extend_from_slice(input);
                Ok(false)
            }
            Self::Length(left) => {
                let take = input
                    .len()
                    .min(usize::try_from(*left).unwrap_or(usize::MAX));
                out.extend_from_slice(&input[..take]);
                *left -= take as u64;
                Ok(*left == 0)
            }
            Self::Chunked(chunked) => {
                while !input.is_empty() && chunked.state != ChunkState::Done {
                    input = chunked.step(input, out)?;
                }
                Ok(chunked.state == ChunkState::Done)
            }
        }
    }
}

impl Chunked {
    fn step<'a>(&mut self, input: &'a [u8], out: &mut Vec<u8>) -> Result<&'a [u8], BodyError> {
        match &mut self.state {
            ChunkState::Size | ChunkState::Trailer => {
                let Some(end) = input.iter().position(|&b| b == b'\n') else {
                    self.push_line(input)?;
                    return Ok(&[]);
                };
                self.push_line(&input[..end])?;
                let line = std::mem::take(&mut self.line);
                let line = line.strip_suffix(b"\r").unwrap_or(&line);
                self.state = if self.state == ChunkState::Trailer {
                    if line.is_empty() {
                        ChunkState::Done
                    } else {
                        ChunkState::Trailer
                    }
                } else {
                    let size = line.split(|&b| b == b';').next().unwrap_or_default();
                    let size = std::str::from_utf8(size).map_err(|_| BodyError::Chunk)?;
                    match u64::from_str_radix(size.trim(), 16) {
                        Ok(0) => ChunkState::Trailer,
                        Ok(n) => ChunkState::Data(n),
                        Err(_) => return Err(BodyError::Chunk),
                    }
                };
                Ok(&input[end + 1..])
            }
            ChunkState::Data(left) => {
                let take = input
                    .len()
                    .min(usize::try_from(*left).unwrap_or(usize::MAX));
                out.extend_from_slice(&input[..take]);
                *left -= take as u64;
                if *left == 0 {
                    self.state = ChunkState::DataEnd(2);
                }
                Ok(&input[take..])
            }
            ChunkState::DataEnd(left) => {
                let expected: &[u8] = if *left == 2 { b"\r\n" } else { b"\n" };
                let take = input.len().min(usize::from(*left));
                if input[..take] != expected[..take] {
                    return Err(BodyError::Chunk);
                }
                *left -= take as u8;
                if *left == 0 {
                    self.state = ChunkState::Size;
                }
                Ok(&input[take..])
            }
            ChunkState::Done => Ok(&[]),
        }
    }

    fn push_line(&mut self, part: &[u8]) -> Result<(), BodyError> {
        if self.line.len() + part.len() > MAX_SIZE_LINE {
            return Err(BodyError::Chunk);
        }
        self.line.extend_from_slice(part);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strom_media::icy_request::parse_head;

    fn transfer(head: &str) -> Result<Transfer, BodyError> {
        let (request, _) = parse_head(head.as_bytes()).unwrap().unwrap();
        Transfer::of(&request)
    }

    fn decode_in_pieces(transfer: &mut Transfer, body: &[u8], piece: usize) -> (Vec<u8>, bool) {
        let mut out = Vec::new();
        let mut ended = false;
        for part in body.chunks(piece) {
            ended = transfer.decode(part, &mut out).unwrap();
        }
        (out, ended)
    }

    #[test]
    fn chunked_bodies_decode_in_any_pieces() {
        let body = b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: y\r\n\r\nignored";
        for piece in [1, 2, 3, 7, 100] {
            let mut t =
                transfer("PUT /a/b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n").unwrap();
            let (out, ended) = decode_in_pieces(&mut t, body, piece);
            assert_eq!(
                (out.as_slice(), ended),
                (&b"hello world"[..], true),
                "{piece}"
            );
        }
    }

    #[test]
    fn length_and_unbounded_bodies() {
        let mut t = transfer("PUT /a/b HTTP/1.1\r\nContent-Length: 4\r\n\r\n").unwrap();
        assert_eq!(
            decode_in_pieces(&mut t, b"abcdef", 3),
            (b"abcd".to_vec(), true)
        );
        let mut t = transfer("SOURCE /a/b ICE/1.0\r\n\r\n").unwrap();
        assert_eq!(
            decode_in_pieces(&mut t, b"abcdef", 4),
            (b"abcdef".to_vec(), false)
        );
    }

    #[test]
    fn malformed_bodies_are_errors() {
        assert!(matches!(
            transfer("PUT /a/b HTTP/1.1\r\nContent-Length: x\r\n\r\n"),
            Err(BodyError::Length(_))
        ));
        assert!(matches!(
            transfer("PUT /a/b HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n"),
            Err(BodyError::Encoding(_))
        ));
        for bad in [&b"zz\r\n"[..], b"2\r\nabXY", &[b'1'; 300]] {
            let mut t =
                transfer("PUT /a/b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n").unwrap();
            assert_eq!(
                t.decode(bad, &mut Vec::new()),
                Err(BodyError::Chunk),
                "{bad:?}"
            );
        }
    }
}
