//! RTSP 1.0 (RFC 2326) messages on a connection, sans-io: requests (request line,
//! headers, a `Content-Length` body) and the interleaved binary frames (`$`, channel,
//! 16-bit length, payload) that share the TCP stream with them. [`parse`] takes bytes as
//! they arrive and returns each complete message; everything a client sends is bounded:
//! a request head and body by the configured limit, a frame by its 16-bit length.

use bytes::{Buf, Bytes, BytesMut};

/// At most this many headers in one request (a real client sends a dozen).
const MAX_HEADERS: usize = 64;

/// Why the bytes on a connection are not RTSP; the connection is dropped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MessageError {
    #[error("request larger than {0} bytes")]
    TooLarge(usize),
    #[error("malformed request: {0}")]
    Malformed(&'static str),
}

/// A request from the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    pub uri: String,
    headers: Vec<(String, String)>,
    pub body: Bytes,
}

impl Request {
    /// The value of header `name` (case-insensitive), trimmed.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// Replaces the value of header `name` (case-insensitive), or adds it.
    pub fn set_header(&mut self, name: &str, value: String) {
        match self
            .headers
            .iter_mut()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
        {
            Some((_, old)) => *old = value,
            None => self.headers.push((name.to_owned(), value)),
        }
    }

    /// `CSeq`, echoed in the response; a request without one gets `0`.
    pub fn cseq(&self) -> &str {
        self.header("CSeq").unwrap_or("0")
    }
}

/// One message from the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incoming {
    Request(Request),
    /// An interleaved frame (RTCP receiver reports of a TCP player).
    Interleaved {
        channel: u8,
        payload: Bytes,
    },
}

/// Takes the next complete message off the front of `buffer`; `Ok(None)` when more
/// bytes are needed. `max_request_bytes` bounds a request's head and body together.
pub fn parse(
    buffer: &mut BytesMut,
    max_request_bytes: usize,
) -> Result<Option<Incoming>, MessageError> {
    match buffer.first() {
        None => Ok(None),
        Some(b'$') => Ok(interleaved(buffer)),
        Some(_) => request(buffer, max_request_bytes),
    }
}

fn interleaved(buffer: &mut BytesMut) -> Option<Incoming> {
    let [_, channel, high, low] = *buffer.get(..4)? else {
        return None;
    };
    let len = usize::from(u16::from_be_bytes([high, low]));
    if buffer.len() < 4 + len {
        return None;
    }
    buffer.advance(4);
    let payload = buffer.split_to(len).freeze();
    Some(Incoming::Interleaved { channel, payload })
}

fn request(buffer: &mut BytesMut, max: usize) -> Result<Option<Incoming>, MessageError> {
    let Some(head_len) = find_head_end(buffer) else {
        if buffer.len() > max {
            return Err(MessageError::TooLarge(max));
        }
        return Ok(None);
    };
    if head_len > max {
        return Err(MessageError::TooLarge(max));
    }
    let head = std::str::from_utf8(&buffer[..head_len])
        .map_err(|_| MessageError::Malformed("request head is not UTF-8"))?;
    let mut lines = head.split("\r\n").filter(|line| !line.is_empty());
    let request_line = lines
        .next()
        .ok_or(MessageError::Malformed("empty request"))?;
    let mut parts = request_line.split(' ');
    let (Some(method), Some(uri), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(MessageError::Malformed("request line"));
    };
    if version != "RTSP/1.0"
        || method.is_empty()
        || !method.bytes().all(|b| b.is_ascii_uppercase() || b == b'_')
    {
        return Err(MessageError::Malformed("request line"));
    }
    let mut headers = Vec::new();
    for line in lines {
        if headers.len() == MAX_HEADERS {
            return Err(MessageError::Malformed("too many headers"));
        }
        let (name, value) = line
            .split_once(':')
            .ok_or(MessageError::Malformed("header without a colon"))?;
        headers.push((name.trim().to_owned(), value.trim().to_owned()));
    }
    let mut request = Request {
        method: method.to_owned(),
        uri: uri.to_owned(),
        headers,
        body: Bytes::new(),
    };
    let body_len = match request.header("Content-Length") {
        None => 0,
        Some(text) => text
            .parse::<usize>()
            .map_err(|_| MessageError::Malformed("Content-Length"))?,
    };
    if body_len > max - head_len {
        return Err(MessageError::TooLarge(max));
    }
    let total = head_len + 4 + body_len;
    if buffer.len() < total {
        return Ok(None);
    }
    buffer.advance(head_len + 4);
    request.body = buffer.split_to(body_len).freeze();
    Ok(Some(Incoming::Request(request)))
}

/// The length of the head before the blank line that ends it.
fn find_head_end(buffer: &[u8]) -> Option<usize> {
    buffer.windows(4).position(|window| window == b"\r\n\r\n")
}

/// A response: status line, `CSeq`, `headers`, and `body` with its length.
pub fn response(status: u16, cseq: &str, headers: &[(&str, String)], body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "RTSP/1.0 {status} {}\r\nCSeq: {cseq}\r\nServer: strom\r\n",
        reason(status)
    );
    for (name, value) in headers {
        out.push_str(name);
        out.push_str(": ");
        out.push_str(value);
        out.push_str("\r\n");
    }
    if !body.is_empty() {
        out.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        415 => "Unsupported Media Type",
        454 => "Session Not Found",
        455 => "Method Not Valid in This State",
        459 => "Aggregate Operation Not Allowed",
        461 => "Unsupported Transport",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(bytes: &[u8], max: usize) -> Result<Vec<Incoming>, MessageError> {
        let mut buffer = BytesMut::from(bytes);
        let mut out = Vec::new();
        while let Some(message) = parse(&mut buffer, max)? {
            out.push(message);
        }
        Ok(out)
    }

    #[test]
    fn requests_and_interleaved_frames_share_the_stream() {
        let wire = b"OPTIONS rtsp://h/live/cam RTSP/1.0\r\nCSeq: 1\r\nuser-agent: x\r\n\r\n\
            $\x01\x00\x03abcANNOUNCE rtsp://h/a/b RTSP/1.0\r\nCSeq: 2\r\nContent-Length: 3\r\n\r\nv=0";
        let messages = parse_all(wire, 4096).unwrap();
        assert_eq!(messages.len(), 3);
        let Incoming::Request(options) = &messages[0] else {
            panic!()
        };
        assert_eq!((options.method.as_str(), options.cseq()), ("OPTIONS", "1"));
        assert_eq!(options.header("User-Agent"), Some("x"));
        assert_eq!(
            messages[1],
            Incoming::Interleaved {
                channel: 1,
                payload: Bytes::from_static(b"abc")
            }
        );
        let Incoming::Request(announce) = &messages[2] else {
            panic!()
        };
        assert_eq!(announce.body.as_ref(), b"v=0");
    }

    #[test]
    fn partial_messages_wait_for_more_bytes() {
        let wire = b"DESCRIBE rtsp://h/live/cam RTSP/1.0\r\nCSeq: 2\r\n\r\n";
        for cut in 0..wire.len() {
            let mut buffer = BytesMut::from(&wire[..cut]);
            assert_eq!(parse(&mut buffer, 4096), Ok(None), "cut at {cut}");
        }
        let mut buffer = BytesMut::from(&b"$\x00\x01"[..]);
        assert_eq!(parse(&mut buffer, 4096), Ok(None));
    }

    #[test]
    fn oversized_and_malformed_requests_are_errors() {
        let endless = vec![b'A'; 5000];
        assert_eq!(parse_all(&endless, 4096), Err(MessageError::TooLarge(4096)));
        let big_body = b"ANNOUNCE rtsp://h/a/b RTSP/1.0\r\nContent-Length: 99999\r\n\r\n";
        assert_eq!(parse_all(big_body, 4096), Err(MessageError::TooLarge(4096)));
        for bad in [
            &b"GET / HTTP/1.1\r\n\r\n"[..],
            b"OPTIONS rtsp://h RTSP/1.0\r\nno colon\r\n\r\n",
            b"OPTIONS rtsp://h RTSP/1.0\r\nContent-Length: -1\r\n\r\n",
            b"\xff\xfe RTSP/1.0\r\n\r\n",
        ] {
            assert!(
                matches!(parse_all(bad, 4096), Err(MessageError::Malformed(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn responses_carry_cseq_and_body_length() {
        let text = response(200, "3", &[("Session", "12;timeout=60".into())], b"v=0\r\n");
        let text = String::from_utf8(text).unwrap();
        assert!(text.starts_with("RTSP/1.0 200 OK\r\nCSeq: 3\r\n"));
        assert!(text.contains("Session: 12;timeout=60\r\n"));
        assert!(text.ends_with("Content-Length: 5\r\n\r\nv=0\r\n"));
    }
}
