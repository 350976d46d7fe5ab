//! A raw HTTP/2 client for hostile-client tests: the connection preface and frames
//! written byte by byte (RFC 9113 §4, HPACK literals without Huffman coding, RFC 7541
//! §6.2.2), so that a test can send what no well-behaved client would (resets right
//! after requests, header blocks without end, more streams than the server allows),
//! and the server's frames read back by type.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
pub const HEADERS: u8 = 0x1;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const GOAWAY: u8 = 0x7;
pub const CONTINUATION: u8 = 0x9;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
/// RST_STREAM error codes.
pub const REFUSED_STREAM: u32 = 0x7;
pub const CANCEL: u32 = 0x8;

/// One frame the server sent.
#[derive(Debug, Clone)]
pub struct Frame {
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
    pub payload: Vec<u8>,
}

impl Frame {
    /// The error code of a RST_STREAM or GOAWAY.
    pub fn error_code(&self) -> Option<u32> {
        let at = match self.kind {
            RST_STREAM => 0,
            GOAWAY => 4,
            _ => return None,
        };
        let bytes = self.payload.get(at..at + 4)?;
        Some(u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    }
}

pub struct RawH2 {
    pub stream: TcpStream,
    received: Vec<u8>,
    pub closed: bool,
}

impl RawH2 {
    /// Connects, sends the preface and an empty SETTINGS frame.
    pub fn connect(port: u16) -> Self {
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let mut client = Self {
            stream,
            received: Vec::new(),
            closed: false,
        };
        client.write(PREFACE);
        client.frame(SETTINGS, 0, 0, &[]);
        client
    }

    /// Writes bytes; a server that hung up is seen by the reads.
    pub fn write(&mut self, bytes: &[u8]) {
        if self.stream.write_all(bytes).is_err() {
            self.closed = true;
        }
    }

    pub fn frame(&mut self, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
        self.write(&encode_frame(kind, flags, stream, payload));
    }

    /// A complete GET of `path` on stream `id` (odd, increasing).
    pub fn get(&mut self, id: u32, path: &str) {
        self.frame(
            HEADERS,
            END_HEADERS | END_STREAM,
            id,
            &request_block(path, &[]),
        );
    }

    pub fn reset(&mut self, id: u32, code: u32) {
        self.frame(RST_STREAM, 0, id, &code.to_be_bytes());
    }

    /// Reads frames until `done` says enough, the server hangs up or `limit` passes;
    /// returns every frame read.
    pub fn read_until(
        &mut self,
        limit: Duration,
        mut done: impl FnMut(&[Frame]) -> bool,
    ) -> Vec<Frame> {
        let deadline = Instant::now() + limit;
        let mut frames = Vec::new();
        let mut buffer = [0u8; 65536];
        loop {
            while let Some(frame) = self.next_frame() {
                frames.push(frame);
            }
            if done(&frames) || self.closed || Instant::now() >= deadline {
                return frames;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let _ = self
                .stream
                .set_read_timeout(Some(left.max(Duration::from_millis(1))));
            match self.stream.read(&mut buffer) {
                Ok(0) => self.closed = true,
                Ok(n) => self.received.extend_from_slice(&buffer[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(_) => self.closed = true,
            }
        }
    }

    fn next_frame(&mut self) -> Option<Frame> {
        let header = self.received.get(..9)?;
        let length =
            usize::from(header[0]) << 16 | usize::from(header[1]) << 8 | usize::from(header[2]);
        if self.received.len() < 9 + length {
            return None;
        }
        let frame = Frame {
            kind: header[3],
            flags: header[4],
            stream: u32::from_be_bytes([header[5], header[6], header[7], header[8]]) & 0x7fff_ffff,
            payload: self.received[9..9 + length].to_vec(),
        };
        self.received.drain(..9 + length);
        Some(frame)
    }
}

pub fn encode_frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let length = payload.len();
    let mut frame = vec![
        (length >> 16) as u8,
        (length >> 8) as u8,
        length as u8,
        kind,
        flags,
    ];
    frame.extend_from_slice(&stream.to_be_bytes());
    frame.extend_from_slice(payload);
    frame
}

/// An HPACK header block for `GET http://127.0.0.1<path>` plus `extra` headers, all as
/// literals without indexing (no Huffman coding).
pub fn request_block(path: &str, extra: &[(&str, &str)]) -> Vec<u8> {
    // Static table: 2 `:method: GET`, 6 `:scheme: http`; names 1 `:authority`, 4 `:path`.
    let mut block = vec![0x82, 0x86];
    literal_with_name_index(&mut block, 1, "127.0.0.1");
    literal_with_name_index(&mut block, 4, path);
    for (name, value) in extra {
        block.push(0x00);
        string(&mut block, name);
        string(&mut block, value);
    }
    block
}

fn literal_with_name_index(block: &mut Vec<u8>, index: u8, value: &str) {
    block.push(index);
    string(block, value);
}

/// An HPACK string literal: its length as a 7-bit-prefix integer, then the bytes.
fn string(block: &mut Vec<u8>, text: &str) {
    let mut length = text.len();
    if length < 127 {
        block.push(length as u8);
    } else {
        block.push(127);
        length -= 127;
        while length >= 128 {
            block.push((length % 128) as u8 | 0x80);
            length /= 128;
        }
        block.push(length as u8);
    }
    block.extend_from_slice(text.as_bytes());
}
