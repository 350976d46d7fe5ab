//! A raw RTMP client for hostile-client tests: a real handshake, then commands built with
//! `rml_rtmp`'s serializer and sent in whatever order a test wants (two publishes on one
//! connection, a play of a stream that never appears), with replies searched as bytes.

use rml_amf0::Amf0Value;
use rml_rtmp::chunk_io::ChunkSerializer;
use rml_rtmp::messages::RtmpMessage;
use rml_rtmp::time::RtmpTimestamp;
use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

pub struct RawRtmp {
    pub stream: TcpStream,
    serializer: ChunkSerializer,
    transaction: f64,
    /// Everything the server sent after the handshake.
    pub received: Vec<u8>,
    pub closed: bool,
}

impl RawRtmp {
    /// Connects and completes the plain handshake (C0/C1, S0/S1/S2, C2).
    pub fn handshake(addr: SocketAddr) -> std::io::Result<Self> {
        let mut stream = TcpStream::connect(addr)?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        let mut c0c1 = vec![3u8];
        c0c1.extend(std::iter::repeat_n(0u8, 8));
        c0c1.extend((0..1528).map(|i| (i * 7 % 256) as u8));
        stream.write_all(&c0c1)?;
        let mut s0s1s2 = vec![0u8; 3073];
        stream.read_exact(&mut s0s1s2)?;
        stream.write_all(&s0s1s2[1..1537])?;
        Ok(Self {
            stream,
            serializer: ChunkSerializer::new(),
            transaction: 1.0,
            received: Vec::new(),
            closed: false,
        })
    }

    pub fn send(&mut self, message: RtmpMessage, message_stream_id: u32) {
        let payload = message
            .into_message_payload(RtmpTimestamp::new(0), message_stream_id)
            .unwrap();
        let packet = self.serializer.serialize(&payload, false, false).unwrap();
        // The server may already have hung up: the test reads the outcome.
        let _ = self.stream.write_all(&packet.bytes);
    }

    /// An FLV video tag body (a VideoData message) on the published stream.
    pub fn video(&mut self, tag: &[u8]) {
        let data = tag.to_vec().into();
        self.send(RtmpMessage::VideoData { data }, 1);
    }

    pub fn command(&mut self, name: &str, object: Amf0Value, args: Vec<Amf0Value>, msid: u32) {
        self.transaction += 1.0;
        let message = RtmpMessage::Amf0Command {
            command_name: name.to_owned(),
            transaction_id: self.transaction,
            command_object: object,
            additional_arguments: args,
        };
        self.send(message, msid);
    }

    /// `connect` as a publisher (ffmpeg's `type: nonprivate`) or a player.
    pub fn connect(&mut self, app: &str, publisher: bool) {
        let mut properties = HashMap::new();
        properties.insert("app".to_owned(), Amf0Value::Utf8String(app.to_owned()));
        properties.insert(
            "flashVer".to_owned(),
            Amf0Value::Utf8String("FMLE/3.0 (strom tests)".to_owned()),
        );
        if publisher {
            properties.insert(
                "type".to_owned(),
                Amf0Value::Utf8String("nonprivate".to_owned()),
            );
        }
        self.transaction = 0.0;
        self.command("connect", Amf0Value::Object(properties), vec![], 0);
        // The server answers commands in order only once it has accepted the connection
        // (a publish sent earlier is refused with "Can't publish before connecting").
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.closed
            && Instant::now() < deadline
            && !contains(&self.received, b"NetConnection.Connect.")
        {
            self.read_some(deadline);
        }
        self.command("createStream", Amf0Value::Null, vec![], 0);
    }

    pub fn publish(&mut self, stream: &str) {
        let args = vec![
            Amf0Value::Utf8String(stream.to_owned()),
            Amf0Value::Utf8String("live".to_owned()),
        ];
        self.command("publish", Amf0Value::Null, args, 1);
    }

    pub fn play(&mut self, stream: &str) {
        let args = vec![Amf0Value::Utf8String(stream.to_owned())];
        self.command("play", Amf0Value::Null, args, 1);
    }

    /// Reads until `text` has arrived (true), the server hung up or `limit` passed.
    pub fn wait_for_text(&mut self, text: &str, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            if contains(&self.received, text.as_bytes()) {
                return true;
            }
            if self.closed || Instant::now() >= deadline {
                return false;
            }
            self.read_some(deadline);
        }
    }

    /// Reads until the server hangs up (true) or `limit` passes.
    pub fn wait_closed(&mut self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while !self.closed && Instant::now() < deadline {
            self.read_some(deadline);
        }
        self.closed
    }

    fn read_some(&mut self, deadline: Instant) {
        let left = deadline.saturating_duration_since(Instant::now());
        let _ = self
            .stream
            .set_read_timeout(Some(left.max(Duration::from_millis(1))));
        let mut buffer = [0u8; 8192];
        match self.stream.read(&mut buffer) {
            Ok(0) => self.closed = true,
            Ok(n) => self.received.extend_from_slice(&buffer[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => self.closed = true,
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// A publisher that connected, published `app/stream` and saw `NetStream.Publish.Start`.
pub fn raw_publisher(addr: SocketAddr, app: &str, stream: &str) -> RawRtmp {
    let mut client = RawRtmp::handshake(addr).unwrap();
    client.connect(app, true);
    client.publish(stream);
    assert!(
        client.wait_for_text("NetStream.Publish.Start", Duration::from_secs(10)),
        "publish of {app}/{stream} not started; got {:?}",
        String::from_utf8_lossy(&client.received)
    );
    client
}
