//! One outgoing RTMP connection driven by an `rml_rtmp` client session: `connect` to an
//! app, then `publish` (a push) or `play` (a pull) one stream, then frames out or media
//! events in.
//!
//! The session's packets are written in the order it produced them (its chunk header
//! compression depends on that). Reading and the frame queue are awaited together in
//! [`RtmpClient::next`], so a push keeps acknowledging and answering pings while it sends.
//! Media goes out with full (type 0) chunk headers: a timestamp that jumps (sequence
//! headers repeated after a GOP drop) can never confuse the peer's header decompression.

use crate::chunk_guard::{ChunkGuard, GuardLimits};
use crate::client::endpoint::Endpoint;
use crate::client::error::ClientError;
use crate::client::handshake::handshake;
use crate::client::traffic::Traffic;
use crate::client::transport::{self, BoxedIo};
use crate::frame::RtmpFrame;
use bytes::Bytes;
use rml_amf0::Amf0Value;
use rml_rtmp::sessions::{
    ClientSession, ClientSessionConfig, ClientSessionEvent, ClientSessionResult,
    PublishRequestType, StreamMetadata,
};
use rml_rtmp::time::RtmpTimestamp;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;
use strom_media::frame::Track;
use strom_stream::{FrameReceiver, SharedFrame};
use strom_worker_runtime::WorkerCounters;
use strom_worker_runtime::counters::ConnectionGuard;
use tokio::io::{AsyncReadExt, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio::time::Instant;

const READ_BUFFER: usize = 16 * 1024;
/// Outgoing chunk size announced after the connect.
const CHUNK_SIZE: u32 = 4096;
/// Session events held until the caller takes them; beyond this the oldest are dropped
/// (only a server flooding commands gets there: media is taken as it arrives).
const MAX_EVENTS: usize = 4096;
/// Largest message a remote server may send (the server's default `max_message_bytes`).
const MAX_MESSAGE_BYTES: u32 = 8 * 1024 * 1024;
/// What pushes announce themselves as (encoders send `FMLE/3.0`).
pub const PUBLISHER_FLASH_VERSION: &str = "FMLE/3.0 (compatible; strom)";

/// What every outgoing connection needs besides its endpoint.
#[derive(Clone)]
pub struct Setup {
    /// Bounds every step (TCP connect, handshake, connect, publish/play) and every write.
    pub limit: Duration,
    pub flash_version: &'static str,
    /// This connection's (or its push's) byte counts.
    pub traffic: Arc<Traffic>,
    /// The worker's totals (`server_status`).
    pub counters: Arc<WorkerCounters>,
}

/// What the server sent that the caller acts on.
#[derive(Debug, PartialEq)]
pub enum ServerEvent {
    Metadata(StreamMetadata),
    Video {
        timestamp: u32,
        data: Bytes,
    },
    Audio {
        timestamp: u32,
        data: Bytes,
    },
    /// An `onStatus` code other than the start of play or publish.
    Status(String),
}

/// What [`RtmpClient::next`] saw first.
pub enum Next {
    Frame(Arc<SharedFrame>),
    /// The frame queue was closed.
    FramesEnded,
    Event(ServerEvent),
}

pub struct RtmpClient {
    reader: ReadHalf<BoxedIo>,
    writer: WriteHalf<BoxedIo>,
    session: ClientSession,
    /// Checks what the server sends before the session parses it: message sizes, the
    /// chunk stream as rml_rtmp follows it, AMF depth and shape (see `chunk_guard`).
    guard: ChunkGuard,
    buffer: Vec<u8>,
    events: VecDeque<ClientSessionEvent>,
    setup: Setup,
    /// A write was interrupted half-way: the chunk stream is corrupt, write nothing more.
    broken: bool,
    _guard: ConnectionGuard,
}

impl RtmpClient {
    /// Connects to `endpoint` and performs the handshake; `tc_url` goes into `connect`.
    pub async fn open(
        endpoint: &Endpoint,
        tc_url: String,
        setup: Setup,
    ) -> Result<Self, ClientError> {
        let io = transport::open(endpoint, setup.limit).await?;
        Self::start(io, tc_url, setup).await
    }

    /// The handshake and session over an already connected stream.
    pub async fn start(mut io: BoxedIo, tc_url: String, setup: Setup) -> Result<Self, ClientError> {
        let guard = setup.counters.open_connection();
        let (leftover, sent, received) = tokio::time::timeout(setup.limit, handshake(&mut io))
            .await
            .map_err(|_| ClientError::Timeout {
                step: "handshake",
                limit: setup.limit,
            })??;
        setup.traffic.add_sent(sent);
        setup.traffic.add_received(received);
        setup.counters.add_sent(sent);
        setup.counters.add_received(received);
        let mut config = ClientSessionConfig::new();
        config.tc_url = Some(tc_url);
        config.flash_version = setup.flash_version.to_owned();
        config.chunk_size = CHUNK_SIZE;
        let (session, initial) = ClientSession::new(config).map_err(ClientError::protocol)?;
        let (reader, writer) = tokio::io::split(io);
        let mut client = Self {
            reader,
            writer,
            session,
            guard: ChunkGuard::new(GuardLimits::client(MAX_MESSAGE_BYTES)),
            buffer: vec![0; READ_BUFFER],
            events: VecDeque::new(),
            setup,
            broken: false,
            _guard: guard,
        };
        client.apply(initial).await?;
        if !leftover.is_empty() {
            client.handle(&leftover).await?;
        }
        Ok(client)
    }

    /// `connect` to `app` (with its `?query`); a rejection carries the server's description.
    pub async fn connect(&mut self, app: &str) -> Result<(), ClientError> {
        let request = self
            .session
            .request_connection(app.to_owned())
            .map_err(ClientError::protocol)?;
        self.apply(vec![request]).await?;
        self.wait_for("connect", |event| match event {
            ClientSessionEvent::ConnectionRequestAccepted => Some(Ok(())),
            ClientSessionEvent::ConnectionRequestRejected { description } => {
                Some(Err(ClientError::Rejected(description.clone())))
            }
            _ => None,
        })
        .await
    }

    /// `createStream` + `publish` (live) of `stream` (with its `?query`).
    pub async fn publish(&mut self, stream: &str) -> Result<(), ClientError> {
        let request = self
            .session
            .request_publishing(stream.to_owned(), PublishRequestType::Live)
            .map_err(ClientError::protocol)?;
        self.apply(vec![request]).await?;
        self.wait_for("publish", |event| match event {
            ClientSessionEvent::PublishRequestAccepted => Some(Ok(())),
            ClientSessionEvent::UnhandleableOnStatusCode { code } if is_error_code(code) => {
                Some(Err(ClientError::Refused(code.clone())))
            }
            _ => None,
        })
        .await
    }

    /// `createStream` + `play` of `stream`. Media that arrives before `NetStream.Play.Start`
    /// is kept for [`RtmpClient::next`].
    pub async fn play(&mut self, stream: &str) -> Result<(), ClientError> {
        let request = self
            .session
            .request_playback(stream.to_owned())
            .map_err(ClientError::protocol)?;
        self.apply(vec![request]).await?;
        self.wait_for("play", |event| match event {
            ClientSessionEvent::PlaybackRequestAccepted => Some(Ok(())),
            ClientSessionEvent::UnhandleableOnStatusCode { code } if is_error_code(code) => {
                Some(Err(ClientError::Refused(code.clone())))
            }
            _ => None,
        })
        .await
    }

    /// Sends one frame of the published stream at `timestamp` (milliseconds).
    pub async fn send(&mut self, frame: &SharedFrame, timestamp: u32) -> Result<(), ClientError> {
        let at = RtmpTimestamp::new(timestamp);
        // Frames RTMP cannot carry (timeline data other than metadata) are not sent.
        let Some(body) = frame.flv_body() else {
            return Ok(());
        };
        let packet = match frame.frame.track {
            Track::Video => self.session.publish_video_data(body.clone(), at, true),
            Track::Audio => self.session.publish_audio_data(body.clone(), at, true),
            // A title (timed metadata) has no `@setDataFrame` form here: not pushed.
            Track::Data if frame.frame.codec != strom_media::frame::Codec::AmfData => {
                return Ok(());
            }
            Track::Data => match parse_metadata(body) {
                Some(metadata) => self.session.publish_metadata(&metadata),
                None => return Ok(()),
            },
        }
        .map_err(ClientError::protocol)?;
        self.apply(vec![packet]).await
    }

    /// The next server event or, with `frames`, the next frame to send, whichever comes
    /// first. Cancel-safe between packets (an interrupted write marks the client broken).
    pub async fn next(
        &mut self,
        mut frames: Option<&mut FrameReceiver>,
    ) -> Result<Next, ClientError> {
        loop {
            while let Some(event) = self.events.pop_front() {
                if let Some(event) = server_event(event) {
                    return Ok(Next::Event(event));
                }
            }
            let read = match frames.as_deref_mut() {
                Some(frames) => tokio::select! {
                    frame = frames.recv() => {
                        return Ok(frame.map_or(Next::FramesEnded, Next::Frame));
                    }
                    read = self.reader.read(&mut self.buffer) => read?,
                },
                None => self.reader.read(&mut self.buffer).await?,
            };
            self.consume(read).await?;
        }
    }

    /// Ends the publish or play politely (`deleteStream`) and closes the connection.
    pub async fn close(mut self) {
        if self.broken {
            return;
        }
        let mut results = self.session.stop_publishing().unwrap_or_default();
        results.extend(self.session.stop_playback().unwrap_or_default());
        let limit = Duration::from_secs(1);
        let _ = tokio::time::timeout(limit, self.apply(results)).await;
        let _ = tokio::time::timeout(limit, self.writer.shutdown()).await;
    }

    async fn wait_for<T>(
        &mut self,
        step: &'static str,
        mut pick: impl FnMut(&ClientSessionEvent) -> Option<Result<T, ClientError>>,
    ) -> Result<T, ClientError> {
        let limit = self.setup.limit;
        let deadline = Instant::now() + limit;
        loop {
            let mut index = 0;
            while index < self.events.len() {
                if let Some(outcome) = pick(&self.events[index]) {
                    self.events.remove(index);
                    return outcome;
                }
                index += 1;
            }
            let read = tokio::time::timeout_at(deadline, self.reader.read(&mut self.buffer))
                .await
                .map_err(|_| ClientError::Timeout { step, limit })??;
            self.consume(read).await?;
        }
    }

    /// Accounts for and processes `read` bytes just read into the buffer.
    async fn consume(&mut self, read: usize) -> Result<(), ClientError> {
        if read == 0 {
            return Err(ClientError::Closed);
        }
        self.setup.traffic.add_received(read as u64);
        self.setup.counters.add_received(read as u64);
        let buffer = std::mem::take(&mut self.buffer);
        let handled = self.handle(&buffer[..read]).await;
        self.buffer = buffer;
        handled
    }

    async fn handle(&mut self, bytes: &[u8]) -> Result<(), ClientError> {
        self.guard
            .inspect(bytes)
            .map_err(|e| ClientError::Protocol(format!("input refused: {e}")))?;
        let results = self
            .session
            .handle_input(bytes)
            .map_err(ClientError::protocol)?;
        self.apply(results).await
    }

    async fn apply(&mut self, results: Vec<ClientSessionResult>) -> Result<(), ClientError> {
        for result in results {
            match result {
                ClientSessionResult::OutboundResponse(packet) => self.write(&packet.bytes).await?,
                ClientSessionResult::RaisedEvent(event) => {
                    if self.events.len() >= MAX_EVENTS {
                        self.events.pop_front();
                    }
                    self.events.push_back(event);
                }
                ClientSessionResult::UnhandleableMessageReceived(_) => {}
            }
        }
        Ok(())
    }

    async fn write(&mut self, bytes: &[u8]) -> Result<(), ClientError> {
        if self.broken {
            return Err(ClientError::Protocol(
                "an earlier write was interrupted".to_owned(),
            ));
        }
        self.broken = true;
        let limit = self.setup.limit;
        tokio::time::timeout(limit, async {
            self.writer.write_all(bytes).await?;
            self.writer.flush().await
        })
        .await
        .map_err(|_| ClientError::Timeout {
            step: "write",
            limit,
        })??;
        self.broken = false;
        self.setup.traffic.add_sent(bytes.len() as u64);
        self.setup.counters.add_sent(bytes.len() as u64);
        Ok(())
    }
}

fn server_event(event: ClientSessionEvent) -> Option<ServerEvent> {
    Some(match event {
        ClientSessionEvent::StreamMetadataReceived { metadata } => ServerEvent::Metadata(metadata),
        ClientSessionEvent::VideoDataReceived { timestamp, data } => ServerEvent::Video {
            timestamp: timestamp.value,
            data,
        },
        ClientSessionEvent::AudioDataReceived { timestamp, data } => ServerEvent::Audio {
            timestamp: timestamp.value,
            data,
        },
        ClientSessionEvent::UnhandleableOnStatusCode { code } => ServerEvent::Status(code),
        _ => return None,
    })
}

/// `onStatus` codes that mean the publish or play failed or ended badly.
pub fn is_error_code(code: &str) -> bool {
    const FAILURES: [&str; 10] = [
        "Failed",
        "BadName",
        "BadAuth",
        "Rejected",
        "Denied",
        "StreamNotFound",
        "Unauthorized",
        "InvalidArg",
        "Error",
        "Closed",
    ];
    FAILURES.iter().any(|failure| code.ends_with(failure))
}

/// The properties of an `onMetaData` data message (as the hub keeps it).
fn parse_metadata(payload: &[u8]) -> Option<StreamMetadata> {
    let values = rml_amf0::deserialize(&mut std::io::Cursor::new(payload)).ok()?;
    let properties = values.into_iter().find_map(|value| match value {
        Amf0Value::Object(properties) => Some(properties),
        _ => None,
    })?;
    let mut metadata = StreamMetadata::new();
    metadata.apply_metadata_values(properties);
    Some(metadata)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::publish_frames::metadata_frame;

    #[test]
    fn error_codes() {
        for code in [
            "NetStream.Publish.BadName",
            "NetStream.Publish.BadAuth",
            "NetStream.Play.StreamNotFound",
            "NetStream.Publish.Rejected",
            "NetConnection.Connect.Failed",
        ] {
            assert!(is_error_code(code), "{code}");
        }
        for code in [
            "NetStream.Play.Reset",
            "NetStream.Publish.Idle",
            "NetStream.Play.Start",
        ] {
            assert!(!is_error_code(code), "{code}");
        }
    }

    #[test]
    fn metadata_survives_the_hub_form() {
        let mut metadata = StreamMetadata::new();
        metadata.video_width = Some(320);
        metadata.video_height = Some(240);
        metadata.audio_sample_rate = Some(44100);
        metadata.encoder = Some("x".to_owned());
        let frame = metadata_frame(&metadata);
        assert_eq!(parse_metadata(&frame.payload), Some(metadata));
        assert_eq!(parse_metadata(b"\x02garbage"), None);
    }
}
