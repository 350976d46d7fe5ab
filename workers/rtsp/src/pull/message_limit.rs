//! What an RTSP source may make the rtsp worker hold while retina reads it. retina keeps
//! a message's head and body whole until they are complete, with no limit of its own: a
//! source answering with a 10 MB header left the worker 50 MB larger. The relay between
//! the source and retina ([`super::relay`]) passes every byte from the source through a
//! [`MessageLimit`], which follows the framing (RTSP messages, and `$`-framed
//! interleaved packets, bounded by their 16-bit length) and fails the connection when a
//! message head passes [`MAX_HEAD`] or announces a body over [`MAX_BODY`].

/// The largest RTSP message head (status line and headers) accepted from a source.
pub const MAX_HEAD: usize = 64 * 1024;
/// The largest message body (`Content-Length`, an SDP in practice) accepted.
pub const MAX_BODY: u64 = 1024 * 1024;

#[derive(Debug)]
enum State {
    /// Between messages.
    Start,
    /// The 3 bytes after `$`: channel and length; `have` of them seen.
    FrameHeader { header: [u8; 3], have: usize },
    /// A message head so far (at most [`MAX_HEAD`] bytes).
    Head(Vec<u8>),
    /// Bytes of a body or an interleaved packet still to pass.
    Skip(u64),
}

/// Follows the byte stream from a source; see the module.
#[derive(Debug)]
pub struct MessageLimit {
    state: State,
}

impl Default for MessageLimit {
    fn default() -> Self {
        Self {
            state: State::Start,
        }
    }
}

impl MessageLimit {
    /// Takes the next bytes from the source: `Err` (why) when they break a limit.
    pub fn feed(&mut self, mut data: &[u8]) -> Result<(), String> {
        while let Some((&first, rest)) = data.split_first() {
            match &mut self.state {
                State::Start => {
                    data = rest;
                    match first {
                        b'$' => {
                            self.state = State::FrameHeader {
                                header: [0; 3],
                                have: 0,
                            }
                        }
                        // Line ends between messages are tolerated, as retina does.
                        b'\r' | b'\n' => {}
                        _ => self.state = State::Head(vec![first]),
                    }
                }
                State::FrameHeader { header, have } => {
                    header[*have] = first;
                    *have += 1;
                    data = rest;
                    if *have == header.len() {
                        let length = u16::from_be_bytes([header[1], header[2]]);
                        self.state = State::Skip(u64::from(length));
                    }
                }
                State::Head(head) => {
                    // Up to the end of the head, or what fits under the limit.
                    let room = MAX_HEAD + 1 - head.len();
                    let take = data.len().min(room);
                    let before = head.len();
                    head.extend_from_slice(&data[..take]);
                    match head_end(head, before.saturating_sub(3)) {
                        Some(end) => {
                            let body = content_length(&head[..end])?;
                            if body > MAX_BODY {
                                return Err(format!(
                                    "a body of {body} bytes (more than {MAX_BODY})"
                                ));
                            }
                            data = &data[end - before..];
                            self.state = State::Skip(body);
                        }
                        None if head.len() > MAX_HEAD => {
                            return Err(format!("a message head longer than {MAX_HEAD} bytes"));
                        }
                        None => data = &data[take..],
                    }
                }
                State::Skip(left) => {
                    let take = usize::try_from(*left).unwrap_or(usize::MAX).min(data.len());
                    *left -= take as u64;
                    data = &data[take..];
                }
            }
            if matches!(self.state, State::Skip(0)) {
                self.state = State::Start;
            }
        }
        Ok(())
    }
}

/// Where the head in `head` ends (just past its blank line), looking from `from`.
fn head_end(head: &[u8], from: usize) -> Option<usize> {
    (from..head.len()).find_map(|i| {
        let tail = &head[i..];
        if tail.starts_with(b"\r\n\r\n") {
            Some(i + 4)
        } else if tail.starts_with(b"\n\n") {
            Some(i + 2)
        } else {
            None
        }
    })
}

/// The `Content-Length` of a head (0 without one).
fn content_length(head: &[u8]) -> Result<u64, String> {
    for line in head.split(|&b| b == b'\n') {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        if !line[..colon]
            .trim_ascii()
            .eq_ignore_ascii_case(b"content-length")
        {
            continue;
        }
        return std::str::from_utf8(line[colon + 1..].trim_ascii())
            .ok()
            .and_then(|value| value.parse().ok())
            .ok_or_else(|| "a Content-Length that is no number".to_owned());
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fed_in(chunk: usize, stream: &[u8]) -> Result<(), String> {
        let mut limit = MessageLimit::default();
        stream.chunks(chunk).try_for_each(|part| limit.feed(part))
    }

    #[test]
    fn responses_bodies_and_interleaved_packets_pass_in_any_chunks() {
        let sdp = "v=0\r\ns=x\r\n";
        let mut stream = format!(
            "RTSP/1.0 200 OK\r\nCSeq: 1\r\nPublic: DESCRIBE\r\n\r\n\
             RTSP/1.0 200 OK\r\nCSeq: 2\r\ncontent-length: {}\r\n\r\n{sdp}",
            sdp.len()
        )
        .into_bytes();
        // An interleaved packet whose payload looks like a huge head.
        stream.extend_from_slice(&[b'$', 0, 0xff, 0xff]);
        stream.extend(std::iter::repeat_n(b'A', 0xffff));
        stream.extend_from_slice(b"RTSP/1.0 200 OK\nCSeq: 3\n\n");
        for chunk in [1, 3, 7, 1000, stream.len()] {
            assert_eq!(fed_in(chunk, &stream), Ok(()), "chunks of {chunk}");
        }
    }

    #[test]
    fn a_huge_head_or_body_fails() {
        let mut head = b"RTSP/1.0 200 OK\r\nX-Junk: ".to_vec();
        head.extend(std::iter::repeat_n(b'a', 10 * 1024 * 1024));
        for chunk in [1000, 64 * 1024] {
            let error = fed_in(chunk, &head).unwrap_err();
            assert!(error.contains("head longer"), "{error}");
        }
        let body = b"RTSP/1.0 200 OK\r\nContent-Length: 10485760\r\n\r\n";
        assert!(fed_in(5, body).unwrap_err().contains("body of 10485760"));
        let bad = b"RTSP/1.0 200 OK\r\nContent-Length: lots\r\n\r\n";
        assert!(fed_in(5, bad).is_err());
        // A head of exactly the limit passes.
        let mut exact = b"RTSP/1.0 200 OK\r\nX: ".to_vec();
        exact.extend(std::iter::repeat_n(b'a', MAX_HEAD - exact.len() - 4));
        exact.extend_from_slice(b"\r\n\r\n");
        assert_eq!(exact.len(), MAX_HEAD);
        assert_eq!(fed_in(4096, &exact), Ok(()));
    }
}
