//! Component tests: the real connection code (`connection::serve`, the hub, the fan-out,
//! the sinks and the chunker) on loopback sockets, driven by `rml_rtmp` client sessions
//! as publishers and players.

use crate::service::RtmpWorker;
use crate::shared::Shared;
use bytes::{BufMut, Bytes, BytesMut};
use rml_rtmp::handshake::{Handshake, HandshakeProcessResult, PeerType};
use rml_rtmp::sessions::{
    ClientSession, ClientSessionConfig, ClientSessionEvent, ClientSessionResult,
    PublishRequestType, StreamMetadata,
};
use rml_rtmp::time::RtmpTimestamp;
use std::collections::VecDeque;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use strom_ipc::messages::{WorkerEvent, WorkerReply, WorkerRequest};
use strom_ipc::rules::Rules;
use strom_media::flv::{AudioTag, VideoTag};
use strom_stream::StreamKey;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

/// Bound on every single wait for the server; generous, never a speed assertion.
pub(crate) const WAIT: Duration = Duration::from_secs(30);

pub(crate) async fn within<T>(what: &str, limit: Duration, work: impl Future<Output = T>) -> T {
    match tokio::time::timeout(limit, work).await {
        Ok(value) => value,
        Err(_) => panic!("timed out after {limit:?}: {what}"),
    }
}

fn hex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text.bytes().filter(u8::is_ascii_hexdigit).collect();
    digits
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
        .collect()
}

// ---------------------------------------------------------------------------------------
// The server under test.

/// `connection::serve` for every connection accepted on a loopback port.
pub(crate) struct TestServer {
    pub(crate) addr: SocketAddr,
    pub(crate) shared: Arc<Shared>,
    pub(crate) worker: RtmpWorker,
    events: mpsc::Receiver<WorkerEvent>,
    shutdown: CancellationToken,
}

impl TestServer {
    pub(crate) async fn start() -> Self {
        Self::with_rules(Rules::default()).await
    }

    pub(crate) async fn with_rules(rules: Rules) -> Self {
        let (shared, events) = Shared::for_tests(rules);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shutdown = CancellationToken::new();
        let accepting = Arc::clone(&shared);
        let stop = shutdown.clone();
        tokio::spawn(async move {
            loop {
                let (stream, peer) = tokio::select! {
                    () = stop.cancelled() => break,
                    accepted = listener.accept() => accepted.expect("accept"),
                };
                let guard = accepting.counters.open_connection();
                tokio::spawn(crate::connection::serve(
                    stream,
                    peer,
                    Arc::clone(&accepting),
                    guard,
                    stop.clone(),
                ));
            }
        });
        Self {
            addr,
            worker: RtmpWorker::for_tests(Arc::clone(&shared)),
            shared,
            events,
            shutdown,
        }
    }

    pub(crate) fn key(stream: &str) -> StreamKey {
        StreamKey {
            app: "live".to_owned(),
            stream: stream.to_owned(),
        }
    }

    /// `(player id, frames dropped)` of every player of `live/<stream>`, in the order they
    /// subscribed.
    pub(crate) fn player_drops(&self, stream: &str) -> Vec<(u64, u64)> {
        self.shared
            .streams
            .get(&Self::key(stream))
            .map(|stream| stream.reader_drops())
            .unwrap_or_default()
    }

    /// Polls until `live/<stream>` has `count` players.
    pub(crate) async fn wait_for_players(&self, stream: &str, count: usize) -> Vec<(u64, u64)> {
        within("players subscribed", WAIT, async {
            loop {
                let players = self.player_drops(stream);
                if players.len() >= count {
                    return players;
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        })
        .await
    }

    pub(crate) async fn live_streams(&self) -> Vec<strom_ipc::status::LiveStream> {
        // Stream lists are the gate's answer, as the worker behind its gate gives it.
        match self.shared.gate.answer(&WorkerRequest::ListStreams) {
            Some(WorkerReply::Streams(mut streams)) => {
                streams.sort_by(|a, b| a.stream.cmp(&b.stream));
                streams
            }
            other => panic!("ListStreams answered {other:?}"),
        }
    }

    pub(crate) fn events(&mut self) -> Vec<WorkerEvent> {
        let mut events = Vec::new();
        while let Ok(event) = self.events.try_recv() {
            events.push(event);
        }
        events
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

// ---------------------------------------------------------------------------------------
// A small RTMP client on `rml_rtmp`'s client session.

/// A media message as a player received it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Media {
    Video(u32, Bytes),
    Audio(u32, Bytes),
    Metadata(StreamMetadata),
}

pub(crate) struct TestClient {
    socket: TcpStream,
    session: ClientSession,
    /// Session events other than media, in arrival order.
    events: VecDeque<ClientSessionEvent>,
    /// Media events, kept apart so that waiting for a command never loses media.
    media: VecDeque<Media>,
    buffer: Vec<u8>,
}

impl TestClient {
    async fn connect(addr: SocketAddr) -> Self {
        Self::connect_with_receive_buffer(addr, None).await
    }

    /// Connects with a fixed (small) socket receive buffer, which keeps the kernel from
    /// absorbing megabytes for a player that does not read.
    async fn connect_with_receive_buffer(addr: SocketAddr, receive_buffer: Option<u32>) -> Self {
        let socket = TcpSocket::new_v4().unwrap();
        if let Some(size) = receive_buffer {
            socket.set_recv_buffer_size(size).unwrap();
        }
        let mut socket = within("tcp connect", WAIT, socket.connect(addr))
            .await
            .expect("tcp connect");
        socket.set_nodelay(true).unwrap();
        let mut handshake = Handshake::new(PeerType::Client);
        let c0_c1 = handshake.generate_outbound_p0_and_p1().unwrap();
        socket.write_all(&c0_c1).await.unwrap();
        let mut buffer = vec![0u8; 64 * 1024];
        let leftover = within("rtmp handshake", WAIT, async {
            loop {
                let read = socket.read(&mut buffer).await.expect("handshake read");
                assert!(read > 0, "server closed during the handshake");
                match handshake.process_bytes(&buffer[..read]).expect("handshake") {
                    HandshakeProcessResult::InProgress { response_bytes } => {
                        socket.write_all(&response_bytes).await.unwrap();
                    }
                    HandshakeProcessResult::Completed {
                        response_bytes,
                        remaining_bytes,
                    } => {
                        socket.write_all(&response_bytes).await.unwrap();
                        return remaining_bytes;
                    }
                }
            }
        })
        .await;
        let (session, initial) = ClientSession::new(ClientSessionConfig::new()).unwrap();
        let mut client = Self {
            socket,
            session,
            events: VecDeque::new(),
            media: VecDeque::new(),
            buffer,
        };
        client.apply(initial).await;
        if !leftover.is_empty() {
            client.input(&leftover).await;
        }
        client
    }

    async fn apply(&mut self, results: Vec<ClientSessionResult>) {
        for result in results {
            match result {
                ClientSessionResult::OutboundResponse(packet) => {
                    self.socket.write_all(&packet.bytes).await.expect("write");
                }
                ClientSessionResult::RaisedEvent(event) => match event {
                    ClientSessionEvent::VideoDataReceived { timestamp, data } => {
                        self.media.push_back(Media::Video(timestamp.value, data))
                    }
                    ClientSessionEvent::AudioDataReceived { timestamp, data } => {
                        self.media.push_back(Media::Audio(timestamp.value, data))
                    }
                    ClientSessionEvent::StreamMetadataReceived { metadata } => {
                        self.media.push_back(Media::Metadata(metadata))
                    }
                    ClientSessionEvent::AcknowledgementReceived { .. } => {}
                    other => self.events.push_back(other),
                },
                ClientSessionResult::UnhandleableMessageReceived(_) => {}
            }
        }
    }

    async fn input(&mut self, bytes: &[u8]) {
        let results = self
            .session
            .handle_input(bytes)
            .expect("the client session could not parse what the server sent");
        self.apply(results).await;
    }

    async fn send(&mut self, result: Result<ClientSessionResult, impl std::fmt::Debug>) {
        let result = result.expect("client session request");
        self.apply(vec![result]).await;
    }

    /// Reads once from the socket; `false` when the server closed the connection.
    async fn read_some(&mut self) -> bool {
        let mut buffer = std::mem::take(&mut self.buffer);
        let read = match self.socket.read(&mut buffer).await {
            Ok(read) => read,
            // The server closed with unread bytes of ours (a refused client).
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => 0,
            Err(e) => panic!("read: {e}"),
        };
        if read > 0 {
            self.input(&buffer[..read]).await;
        }
        self.buffer = buffer;
        read > 0
    }

    /// The next non-media event that `wanted` accepts (others are kept).
    async fn expect_event(
        &mut self,
        what: &str,
        wanted: impl Fn(&ClientSessionEvent) -> bool,
    ) -> ClientSessionEvent {
        within(what, WAIT, async {
            loop {
                if let Some(index) = self.events.iter().position(&wanted) {
                    return self.events.remove(index).unwrap();
                }
                assert!(
                    self.read_some().await,
                    "connection closed while waiting for {what}; events: {:?}",
                    self.events
                );
            }
        })
        .await
    }

    pub(crate) async fn next_media(&mut self) -> Media {
        within("a media message", WAIT, async {
            loop {
                if let Some(media) = self.media.pop_front() {
                    return media;
                }
                assert!(
                    self.read_some().await,
                    "connection closed while waiting for media"
                );
            }
        })
        .await
    }

    pub(crate) async fn media_messages(&mut self, count: usize) -> Vec<Media> {
        let mut received = Vec::with_capacity(count);
        while received.len() < count {
            received.push(self.next_media().await);
        }
        received
    }

    /// Reads until the server closes the connection.
    async fn expect_closed(&mut self) {
        within("the server closing the connection", WAIT, async {
            while self.read_some().await {}
        })
        .await
    }

    async fn connect_app(&mut self, app: &str) {
        let request = self.session.request_connection(app.to_owned());
        self.send(request).await;
        self.expect_event("connect accepted", |e| {
            matches!(e, ClientSessionEvent::ConnectionRequestAccepted)
        })
        .await;
    }

    async fn request_publish(&mut self, stream: &str) {
        let request = self
            .session
            .request_publishing(stream.to_owned(), PublishRequestType::Live);
        self.send(request).await;
    }

    async fn publish(&mut self, stream: &str) {
        self.request_publish(stream).await;
        self.expect_event("publish accepted", |e| {
            matches!(e, ClientSessionEvent::PublishRequestAccepted)
        })
        .await;
    }

    async fn play(&mut self, stream: &str) {
        let request = self.session.request_playback(stream.to_owned());
        self.send(request).await;
        self.expect_event("play accepted", |e| {
            matches!(e, ClientSessionEvent::PlaybackRequestAccepted)
        })
        .await;
    }

    async fn connected(addr: SocketAddr) -> Self {
        let mut client = Self::connect(addr).await;
        client.connect_app("live").await;
        client
    }

    pub(crate) async fn publisher(addr: SocketAddr, stream: &str) -> Self {
        let mut client = Self::connected(addr).await;
        client.publish(stream).await;
        client
    }

    pub(crate) async fn player(addr: SocketAddr, stream: &str) -> Self {
        let mut client = Self::connected(addr).await;
        client.play(stream).await;
        client
    }

    pub(crate) async fn send_media(&mut self, media: &Media) {
        let sent = match media {
            Media::Video(ts, data) => {
                self.session
                    .publish_video_data(data.clone(), RtmpTimestamp::new(*ts), false)
            }
            Media::Audio(ts, data) => {
                self.session
                    .publish_audio_data(data.clone(), RtmpTimestamp::new(*ts), false)
            }
            Media::Metadata(metadata) => self.session.publish_metadata(metadata),
        };
        self.send(sent).await;
    }

    async fn send_all(&mut self, media: &[Media]) {
        for message in media {
            self.send_media(message).await;
        }
    }
}

// ---------------------------------------------------------------------------------------
// Media payloads.

/// hvcC of a 640x360 HEVC Main stream from ffmpeg/libx265 (`strom_media`'s test vector).
const HVCC_640X360: &str = "0101600000009000000000003ff000fcfdf8f800000f03a00001001840010c01ffff01600000030090000003000003003f959809a10001002a42010101600000030090000003000003003fa00502016965959a4932bc05a02000000300200000030321a2000100074401c172b46240";

/// An avcC record (High profile, level 3.1) with one SPS and one PPS.
const AVCC: &str = "0164001fffe100046764001f01000468ee3c80";

/// Enhanced RTMP video: ex-header bit, frame type, packet type, FourCC, body.
fn enhanced_video(frame_type: u8, packet_type: u8, fourcc: &[u8; 4], body: &[u8]) -> Bytes {
    let mut payload = BytesMut::new();
    payload.put_u8(0x80 | (frame_type << 4) | packet_type);
    payload.put_slice(fourcc);
    payload.put_slice(body);
    payload.freeze()
}

/// Enhanced RTMP CodedFrames for HEVC: composition time, then length-prefixed NAL units.
fn hevc_frame(keyframe: bool, composition_time: i32, nal: &[u8]) -> Bytes {
    let mut body = Vec::new();
    body.extend_from_slice(&composition_time.to_be_bytes()[1..]);
    body.extend_from_slice(&(nal.len() as u32).to_be_bytes());
    body.extend_from_slice(nal);
    enhanced_video(if keyframe { 1 } else { 2 }, 1, b"hvc1", &body)
}

/// Legacy FLV AVC video: `0x17`/`0x27`, AVC packet type, composition time, body.
fn avc_video(keyframe: bool, packet_type: u8, body: &[u8]) -> Bytes {
    let mut payload = BytesMut::new();
    payload.put_u8(if keyframe { 0x17 } else { 0x27 });
    payload.put_u8(packet_type);
    payload.put_slice(&[0, 0, 0]);
    payload.put_slice(body);
    payload.freeze()
}

fn aac(packet_type: u8, body: &[u8]) -> Bytes {
    let mut payload = vec![0xAF, packet_type];
    payload.extend_from_slice(body);
    Bytes::from(payload)
}

fn pattern(seed: u32, len: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(2_654_435_761).max(1);
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state as u8
        })
        .collect()
}

fn video_messages(media: &[Media]) -> Vec<(u32, Bytes)> {
    media
        .iter()
        .filter_map(|m| match m {
            Media::Video(ts, data) => Some((*ts, data.clone())),
            _ => None,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// 1. Enhanced RTMP passes through untouched, and its codecs reach the status.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enhanced_rtmp_hevc_and_av1_pass_through_byte_identical() {
    let mut server = TestServer::start().await;
    let addr = server.addr;

    let mut metadata = StreamMetadata::new();
    metadata.video_width = Some(640);
    metadata.video_height = Some(360);
    metadata.video_frame_rate = Some(25.0);
    metadata.encoder = Some("strom component test".to_owned());
    let hevc_header = enhanced_video(1, 0, b"hvc1", &hex(HVCC_640X360));
    let hevc: Vec<Media> = vec![
        Media::Metadata(metadata.clone()),
        Media::Video(0, hevc_header.clone()),
        Media::Audio(0, aac(0, &[0x12, 0x10])),
        // IDR_W_RADL (type 19) with composition time 80.
        Media::Video(0, hevc_frame(true, 80, &[0x26, 0x01, 0xAF, 0x09, 0x40])),
        Media::Audio(23, aac(1, &[0x21, 0x10, 0x04, 0x60])),
        Media::Video(40, hevc_frame(false, 40, &[0x02, 0x01, 0xD0, 0x11])),
        // A negative composition time survives the 24-bit field.
        Media::Video(80, hevc_frame(false, -40, &[0x00, 0x01, 0xE0, 0x22])),
        // CodedFramesX (packet type 3): no composition time.
        Media::Video(
            120,
            enhanced_video(2, 3, b"hvc1", &[0, 0, 0, 2, 0x02, 0x01]),
        ),
        Media::Video(160, hevc_frame(true, 0, &pattern(7, 9000))),
    ];
    // av1C: marker and version, profile 0 level 8, 8 bit 4:2:0, then a sequence header OBU.
    let av1_header = enhanced_video(1, 0, b"av01", &hex("81080c00 0a0b00000024c6abdf3efe2404"));
    let av1: Vec<Media> = vec![
        Media::Video(1000, av1_header.clone()),
        Media::Video(
            1000,
            enhanced_video(1, 1, b"av01", &hex("12000a0b00000024c6ab32")),
        ),
        Media::Video(
            1033,
            enhanced_video(2, 1, b"av01", &hex("1200 3210 abcdef")),
        ),
        Media::Video(1066, enhanced_video(2, 1, b"av01", &pattern(11, 5000))),
    ];

    // Players that wait for the publishers get the messages live, in publish order.
    let mut hevc_player = TestClient::player(addr, "hevc").await;
    let mut av1_player = TestClient::player(addr, "av1").await;
    server.wait_for_players("hevc", 1).await;
    server.wait_for_players("av1", 1).await;
    let mut hevc_publisher = TestClient::publisher(addr, "hevc").await;
    let mut av1_publisher = TestClient::publisher(addr, "av1").await;
    hevc_publisher.send_all(&hevc).await;
    av1_publisher.send_all(&av1).await;

    let received = hevc_player.media_messages(hevc.len()).await;
    assert_eq!(received, hevc, "HEVC stream as the live player got it");
    let video = video_messages(&received);
    assert_eq!(video[0], (0, hevc_header.clone()), "sequence start first");
    let first_frame = VideoTag::parse(&video[1].1, video[1].0).unwrap();
    assert!(first_frame.is_keyframe(), "then the keyframe");
    assert_eq!(first_frame.pts_ms(), 80);
    let received = av1_player.media_messages(av1.len()).await;
    assert_eq!(received, av1, "AV1 stream as the live player got it");
    let video = video_messages(&received);
    assert_eq!(video[0], (1000, av1_header.clone()));
    assert!(
        VideoTag::parse(&video[1].1, video[1].0)
            .unwrap()
            .is_keyframe()
    );
    // The neutral frame's FLV adapter rebuilds every body byte for byte: the guard for
    // building player messages from frames instead of passing bodies through.
    for (ts, body) in video_messages(&hevc)
        .into_iter()
        .chain(video_messages(&av1))
    {
        let frame = strom_media::flv_adapter::video_frame(&body, i64::from(ts) * 90).unwrap();
        assert_eq!(strom_media::flv_adapter::to_body(&frame).unwrap(), body);
    }

    // A player that joins now starts from the cache: metadata and sequence headers, then
    // the last GOP, byte-identical too.
    let mut late = TestClient::player(addr, "hevc").await;
    let mut expected = vec![
        Media::Metadata(metadata.clone()),
        hevc[1].clone(),
        hevc[2].clone(),
    ];
    expected.push(hevc[8].clone());
    assert_eq!(late.media_messages(expected.len()).await, expected);
    let mut late_av1 = TestClient::player(addr, "av1").await;
    let expected = vec![
        av1[0].clone(),
        av1[1].clone(),
        av1[2].clone(),
        av1[3].clone(),
    ];
    assert_eq!(late_av1.media_messages(expected.len()).await, expected);

    // The codecs reach the stream and the worker's status answer.
    let stream = server
        .shared
        .streams
        .live()
        .into_iter()
        .find(|s| s.key.stream == "hevc")
        .expect("hevc is live");
    let codecs = stream.codecs();
    assert!(codecs.vcodec.starts_with("hvc1."), "{codecs:?}");
    assert_eq!(codecs.vcodec, "hvc1.1.6.L63.90");
    let status = server.live_streams().await;
    assert_eq!(status.len(), 2, "{status:?}");
    let (av1_status, hevc_status) = (&status[0], &status[1]);
    assert_eq!(av1_status.stream, "av1");
    assert_eq!(av1_status.vcodec, "av01");
    assert_eq!(hevc_status.stream, "hevc");
    assert_eq!(hevc_status.vcodec, "hvc1.1.6.L63.90");
    assert_eq!(hevc_status.acodec, "mp4a.40.2");
    assert_eq!((hevc_status.width, hevc_status.height), (640, 360));
    assert_eq!(hevc_status.protocol, "RTMP");
    assert_eq!(hevc_status.publisher_ip.as_deref(), Some("127.0.0.1"));

    let events = server.events();
    for stream in ["hevc", "av1"] {
        assert!(
            events.contains(&WorkerEvent::StreamPublished {
                app: "live".to_owned(),
                stream: stream.to_owned(),
            }),
            "{events:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// 2. Timestamps above 0xFFFFFF, on messages longer than one chunk.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extended_timestamps_survive_multi_chunk_messages() {
    let server = TestServer::start().await;
    let addr = server.addr;
    let mut player = TestClient::player(addr, "ext").await;
    server.wait_for_players("ext", 1).await;
    let mut publisher = TestClient::publisher(addr, "ext").await;

    let base = 0x0100_0000u32;
    let mut sent = vec![
        // Just below the limit, the limit itself, then above it.
        Media::Video(0x00FF_FFD7, avc_video(true, 0, &hex(AVCC))),
        Media::Video(0x00FF_FFFF, avc_video(true, 1, &pattern(1, 4096 * 2 - 5))),
    ];
    for n in 0..24u32 {
        let ts = base + n * 40;
        let len = 4096 + 1 + (n as usize * 1531) % 12_000;
        sent.push(Media::Video(
            ts,
            avc_video(n.is_multiple_of(8), 1, &pattern(n + 100, len)),
        ));
        sent.push(Media::Audio(
            ts + 3,
            aac(1, &pattern(n + 500, 4200 + n as usize)),
        ));
    }
    // Far above: close to the 32-bit end.
    sent.push(Media::Video(
        0xFFFF_0000,
        avc_video(true, 1, &pattern(9, 20_000)),
    ));
    publisher.send_all(&sent).await;

    let received = player.media_messages(sent.len()).await;
    for (index, (got, want)) in received.iter().zip(&sent).enumerate() {
        assert_eq!(got, want, "message {index}");
    }
    for message in &received {
        match message {
            Media::Video(ts, data) => {
                VideoTag::parse(data, *ts).unwrap();
            }
            Media::Audio(ts, data) => {
                AudioTag::parse(data, *ts).unwrap();
            }
            Media::Metadata(_) => panic!("no metadata was sent"),
        }
    }
}

// ---------------------------------------------------------------------------------------
// 3. A player that stops reading costs the publisher and the other players nothing.

const SLOW_FRAME_BYTES: usize = 16 * 1024;
const KEYFRAME_EVERY: u32 = 30;
/// Frames the publisher may be ahead of the fast player (well below the player queue, so
/// the fast player can never be dropped).
const FAST_WINDOW: u32 = 64;

/// What the publisher of the slow-player scenario sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Track {
    /// AVC with a keyframe every `KEYFRAME_EVERY` frames.
    Video,
    /// AAC only: no keyframes at all.
    AudioOnly,
}

impl Track {
    pub(crate) fn header(self) -> Media {
        match self {
            Track::Video => Media::Video(0, avc_video(true, 0, &hex(AVCC))),
            Track::AudioOnly => Media::Audio(0, aac(0, &[0x12, 0x10])),
        }
    }

    /// Frame `index`, with its number in the first four bytes of the codec body.
    pub(crate) fn frame(self, index: u32) -> Media {
        let mut body = index.to_be_bytes().to_vec();
        body.extend_from_slice(&pattern(index, SLOW_FRAME_BYTES - 9));
        match self {
            Track::Video => Media::Video(index * 40, avc_video(self.resumes_at(index), 1, &body)),
            Track::AudioOnly => Media::Audio(index * 21, aac(1, &body)),
        }
    }

    /// Where a player that fell behind may start again.
    fn resumes_at(self, index: u32) -> bool {
        match self {
            Track::Video => index.is_multiple_of(KEYFRAME_EVERY),
            Track::AudioOnly => true,
        }
    }

    /// The number of a numbered frame, `None` for the sequence header; panics on anything
    /// that is not exactly a message the publisher sent.
    pub(crate) fn number(self, media: &Media) -> Option<u32> {
        if *media == self.header() {
            return None;
        }
        let index = match (self, media) {
            (Track::Video, Media::Video(ts, data)) => {
                let tag = VideoTag::parse(data, *ts).expect("a complete FLV video tag");
                assert!(!tag.is_sequence_header());
                u32::from_be_bytes(data[5..9].try_into().unwrap())
            }
            (Track::AudioOnly, Media::Audio(ts, data)) => {
                let tag = AudioTag::parse(data, *ts).expect("a complete FLV audio tag");
                assert!(!tag.is_sequence_header());
                u32::from_be_bytes(data[2..6].try_into().unwrap())
            }
            _ => panic!("unexpected message {media:?}"),
        };
        assert_eq!(*media, self.frame(index), "frame {index} arrived changed");
        Some(index)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_player_drops_whole_gops_without_blocking_anyone() {
    slow_player_scenario(Track::Video).await;
}

/// Audio-only streams have no keyframes: a player that fell behind must resume anyway.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_player_of_an_audio_only_stream_resumes() {
    slow_player_scenario(Track::AudioOnly).await;
}

/// A slow and a fast player of one stream: the slow one stops reading while the publisher
/// sends large frames, then reads again.
async fn slow_player_scenario(track: Track) {
    let server = TestServer::start().await;
    let addr = server.addr;

    // The slow player plays first (its id is the one subscribed alone), then stops reading.
    // A small receive buffer disables autotuning: the kernel holds little for it.
    let mut slow = TestClient::connect_with_receive_buffer(addr, Some(16 * 1024)).await;
    slow.connect_app("live").await;
    slow.play("slow").await;
    let slow_id = server.wait_for_players("slow", 1).await[0].0;
    let mut fast = TestClient::player(addr, "slow").await;
    let players = server.wait_for_players("slow", 2).await;
    let fast_id = players.iter().find(|(id, _)| *id != slow_id).unwrap().0;

    // The fast player reads everything and reports how many numbered frames it has.
    let (fast_progress, mut fast_seen) = watch::channel(0u32);
    let stop = CancellationToken::new();
    let stop_fast = stop.clone();
    let fast_task = tokio::spawn(async move {
        assert_eq!(fast.next_media().await, track.header());
        let mut next = 0u32;
        loop {
            let media = tokio::select! {
                () = stop_fast.cancelled() => return next,
                media = fast.next_media() => media,
            };
            let index = track
                .number(&media)
                .expect("no header again for a fast player");
            assert_eq!(index, next, "the fast player missed or reordered frames");
            next += 1;
            fast_progress.send_replace(next);
        }
    });

    let mut publisher = TestClient::publisher(addr, "slow").await;
    publisher.send_media(&track.header()).await;

    // Publish (paced only by the fast player) until the slow player has dropped frames.
    let mut sent = 0u32;
    within(
        "the publisher pushing until the slow player drops (publisher blocked?)",
        Duration::from_secs(120),
        async {
            loop {
                let behind = sent.saturating_sub(FAST_WINDOW);
                fast_seen
                    .wait_for(|seen| *seen >= behind)
                    .await
                    .expect("the fast player task ended");
                publisher.send_media(&track.frame(sent)).await;
                sent += 1;
                if sent.is_multiple_of(16) {
                    let drops = server.player_drops("slow");
                    let slow_drops = drops.iter().find(|(id, _)| *id == slow_id).unwrap().1;
                    if slow_drops > 0 {
                        break;
                    }
                    assert!(sent < 50_000, "the slow player never dropped a frame");
                }
            }
        },
    )
    .await;

    // The slow player reads again and reports when it resumed after a gap.
    let (resumed_tx, resumed) = watch::channel(false);
    let stop_slow = stop.clone();
    let slow_task = tokio::spawn(async move {
        let mut received = Vec::new();
        loop {
            let media = tokio::select! {
                () = stop_slow.cancelled() => break,
                media = slow.next_media() => media,
            };
            // A keyframe right after a repeated header, with frames missing before it.
            let header_before = received.last().is_some_and(|m| track.number(m).is_none());
            let last_number = received.iter().rev().find_map(|m| track.number(m));
            if let (true, Some(number), Some(last)) =
                (header_before, track.number(&media), last_number)
                && number > last + 1
            {
                resumed_tx.send_replace(true);
            }
            received.push(media);
        }
        received
    });

    within(
        "the publisher pushing until the slow player resumes (publisher blocked?)",
        Duration::from_secs(120),
        async {
            while !*resumed.borrow() {
                let behind = sent.saturating_sub(FAST_WINDOW);
                fast_seen
                    .wait_for(|seen| *seen >= behind)
                    .await
                    .expect("the fast player task ended");
                publisher.send_media(&track.frame(sent)).await;
                sent += 1;
                assert!(sent < 100_000, "the slow player never resumed");
            }
        },
    )
    .await;
    let total = sent;

    // The fast player got every frame, in order, and was never dropped.
    within(
        "the fast player receiving every frame",
        WAIT,
        fast_seen.wait_for(|seen| *seen >= total),
    )
    .await
    .expect("the fast player task ended");
    let drops = server.player_drops("slow");
    let fast_drops = drops.iter().find(|(id, _)| *id == fast_id).unwrap().1;
    let slow_drops = drops.iter().find(|(id, _)| *id == slow_id).unwrap().1;
    assert_eq!(fast_drops, 0);
    assert!(slow_drops > 0);
    // The API lists each player's drops with its session.
    let sessions = server.shared.gate.sessions().list();
    let dropped = |id: u64| {
        sessions
            .iter()
            .find(|s| s.id == id)
            .and_then(|s| s.dropped_frames)
    };
    assert_eq!(dropped(fast_id), Some(0));
    assert!(
        dropped(slow_id) >= Some(slow_drops),
        "{:?}",
        dropped(slow_id)
    );

    stop.cancel();
    let received = within("the slow player task", WAIT, slow_task)
        .await
        .unwrap();
    let fast_frames = within("the fast player task", WAIT, fast_task)
        .await
        .unwrap();
    assert_eq!(fast_frames, total);

    // Everything the slow player got is whole frames, in order; every gap is followed by
    // the sequence header, then a keyframe.
    assert_eq!(received[0], track.header());
    let mut last: Option<u32> = None;
    let mut gaps = 0;
    for (position, media) in received.iter().enumerate().skip(1) {
        let Some(number) = track.number(media) else {
            let following = received.get(position + 1).and_then(|m| track.number(m));
            if let Some(following) = following {
                assert!(
                    track.resumes_at(following),
                    "a repeated sequence header is followed by a keyframe, not {following}"
                );
            }
            continue;
        };
        let expected = last.map_or(0, |last| last + 1);
        if number != expected {
            gaps += 1;
            assert!(number > expected, "frame {number} after {last:?}");
            assert!(
                track.number(&received[position - 1]).is_none(),
                "frames {expected}..{number} missing without a sequence header before {number}"
            );
            assert!(
                track.resumes_at(number),
                "resumed on frame {number}, not a keyframe"
            );
        }
        last = Some(number);
    }
    assert!(
        gaps > 0,
        "the slow player dropped {slow_drops} frames but saw no gap"
    );
    drop(publisher);
}

// ---------------------------------------------------------------------------------------
// 4. A second publisher of a live stream is refused; the first one carries on.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_publisher_of_a_stream_gets_bad_name() {
    let mut server = TestServer::start().await;
    let addr = server.addr;
    let mut first = TestClient::publisher(addr, "dup").await;
    let header = Media::Video(0, avc_video(true, 0, &hex(AVCC)));
    let frame = |index: u32| {
        Media::Video(
            index * 40,
            avc_video(index.is_multiple_of(10), 1, &pattern(index, 300)),
        )
    };
    first.send_media(&header).await;
    first.send_media(&frame(0)).await;
    first.send_media(&frame(1)).await;
    let mut player = TestClient::player(addr, "dup").await;
    assert_eq!(
        player.media_messages(3).await,
        vec![header.clone(), frame(0), frame(1)]
    );

    let mut second = TestClient::connected(addr).await;
    second.request_publish("dup").await;
    let refusal = second
        .expect_event("the publish refusal", |e| {
            matches!(e, ClientSessionEvent::UnhandleableOnStatusCode { .. })
        })
        .await;
    assert_eq!(
        refusal,
        ClientSessionEvent::UnhandleableOnStatusCode {
            code: "NetStream.Publish.BadName".to_owned()
        }
    );
    second.expect_closed().await;

    // The first publisher is still the publisher and its player still receives.
    for index in 2..40 {
        first.send_media(&frame(index)).await;
    }
    let received = player.media_messages(38).await;
    assert_eq!(received, (2..40).map(frame).collect::<Vec<_>>());
    let status = server.live_streams().await;
    assert_eq!(status.len(), 1, "{status:?}");
    assert_eq!(status[0].stream, "dup");
    let publishers = server.shared.gate.answer(&WorkerRequest::ListPublishers);
    assert!(
        matches!(&publishers, Some(WorkerReply::Publishers(p)) if p.len() == 1),
        "{publishers:?}"
    );
    let events = server.events();
    assert_eq!(
        events,
        vec![WorkerEvent::StreamPublished {
            app: "live".to_owned(),
            stream: "dup".to_owned(),
        }],
        "one publish, no unpublish"
    );

    // When the first publisher leaves, the name is free again.
    drop(first);
    within("the stream being released", WAIT, async {
        while !server.live_streams().await.is_empty() {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await;
    let mut third = TestClient::publisher(addr, "dup").await;
    third.send_media(&header).await;
}

/// An encoder's `onCuePoint` (a data message `rml_rtmp` itself drops) becomes a SCTE-35
/// marker frame in the stream, in order with the media.
#[tokio::test]
async fn on_cue_points_become_scte35_markers() {
    use rml_amf0::Amf0Value;
    use rml_rtmp::chunk_io::ChunkSerializer;
    use rml_rtmp::messages::RtmpMessage;
    use strom_media::scte35::SpliceInfo;

    let server = TestServer::start().await;
    let mut publisher = TestClient::publisher(server.addr, "cued").await;
    let key = StreamKey::new("live", "cued");
    let mut reader = (server.shared.streams).own_reader(&key, strom_stream::Queue, 9_999);
    let frames = &mut reader.frames;
    publisher
        .send_media(&Media::Video(0, avc_video(true, 0, &hex(AVCC))))
        .await;
    publisher
        .send_media(&Media::Video(40, avc_video(true, 1, &pattern(1, 300))))
        .await;
    let mut cue = std::collections::HashMap::new();
    cue.insert("name".to_owned(), Amf0Value::Utf8String("cue-out".into()));
    cue.insert("duration".to_owned(), Amf0Value::Number(15.0));
    let message = RtmpMessage::Amf0Data {
        values: vec![
            Amf0Value::Utf8String("onCuePoint".into()),
            Amf0Value::Object(cue),
        ],
    }
    .into_message_payload(RtmpTimestamp::new(80), 1)
    .unwrap();
    // One chunk of its own (under the default chunk size) on a chunk stream of its own.
    let mut serializer = ChunkSerializer::new();
    let packet = serializer.serialize(&message, true, false).unwrap();
    publisher.socket.write_all(&packet.bytes).await.unwrap();
    let marker = within("the marker frame", WAIT, async {
        loop {
            let frame = frames.recv().await.expect("reader open");
            if frame.frame.codec == strom_media::frame::Codec::Scte35 {
                return frame;
            }
        }
    })
    .await;
    assert_eq!(
        marker.frame.dts,
        40 * 90,
        "stamped with the latest media time"
    );
    let info = SpliceInfo::parse(&marker.frame.payload).unwrap();
    let insert = info.splice_insert().unwrap();
    assert!(insert.out_of_network);
    assert_eq!(insert.break_duration.map(|d| d.duration), Some(15 * 90_000));
}

/// Every connection keeps its task's allocation for its whole life, the size of the
/// `serve` future: with thousands of players it is most of a player's memory. It was
/// 7.5 KiB while the handshake's read buffer lived in it.
#[tokio::test]
async fn a_connection_task_stays_under_4_kib() {
    let (shared, _events) = Shared::for_tests(Rules::default());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let client = tokio::net::TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    let (stream, peer) = listener.accept().await.unwrap();
    let guard = shared.counters.open_connection();
    let serving = crate::connection::serve(
        stream,
        peer,
        Arc::clone(&shared),
        guard,
        CancellationToken::new(),
    );
    let size = std::mem::size_of_val(&serving);
    assert!(size <= 4096, "the connection future is {size} bytes");
    drop(serving);
    drop(client);
}
