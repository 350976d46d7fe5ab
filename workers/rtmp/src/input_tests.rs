//! Hostile input on real sockets: what `rml_rtmp` would overflow its stack on, panic on
//! or keep state for is refused by the input guards, closing only that connection,
//! while publishing and playing go on in the same process. The server here runs
//! `connection::serve` per connection and counts connection tasks that panicked; the
//! client side runs [`RtmpClient`] against a server that answers with hostile messages.

use crate::chunk_guard::MAX_CREATE_STREAM;
use crate::client::session::{PUBLISHER_FLASH_VERSION, RtmpClient, Setup};
use crate::client::traffic::Traffic;
use crate::component_tests::{Media, TestClient};
use crate::shared::Shared;
use bytes::Bytes;
use rml_amf0::Amf0Value;
use rml_rtmp::chunk_io::{ChunkDeserializer, ChunkSerializer};
use rml_rtmp::handshake::{Handshake, HandshakeProcessResult, PeerType};
use rml_rtmp::messages::RtmpMessage;
use rml_rtmp::time::RtmpTimestamp;
use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use strom_ipc::messages::WorkerEvent;
use strom_ipc::rules::Rules;
use strom_stream::StreamKey;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Bound on every single wait; generous, never a speed assertion.
const WAIT: Duration = Duration::from_secs(30);

async fn within<T>(what: &str, work: impl Future<Output = T>) -> T {
    match tokio::time::timeout(WAIT, work).await {
        Ok(value) => value,
        Err(_) => panic!("timed out after {WAIT:?}: {what}"),
    }
}

/// `connection::serve` for every connection on a loopback port; counts the connection
/// tasks that panicked.
struct Server {
    addr: SocketAddr,
    shared: Arc<Shared>,
    panics: Arc<AtomicUsize>,
    shutdown: CancellationToken,
    _events: mpsc::Receiver<WorkerEvent>,
}

impl Server {
    async fn start() -> Self {
        let (shared, events) = Shared::for_tests(Rules::default());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shutdown = CancellationToken::new();
        let panics = Arc::new(AtomicUsize::new(0));
        let stop = shutdown.clone();
        let counted = Arc::clone(&panics);
        let accepting = Arc::clone(&shared);
        tokio::spawn(async move {
            let shared = accepting;
            loop {
                let (stream, peer) = tokio::select! {
                    () = stop.cancelled() => break,
                    accepted = listener.accept() => accepted.expect("accept"),
                };
                let guard = shared.counters.open_connection();
                let task = tokio::spawn(crate::connection::serve(
                    stream,
                    peer,
                    Arc::clone(&shared),
                    guard,
                    stop.clone(),
                ));
                let counted = Arc::clone(&counted);
                tokio::spawn(async move {
                    if let Err(e) = task.await
                        && e.is_panic()
                    {
                        counted.fetch_add(1, Ordering::SeqCst);
                    }
                });
            }
        });
        Self {
            addr,
            shared,
            panics,
            shutdown,
            _events: events,
        }
    }

    fn panics(&self) -> usize {
        self.panics.load(Ordering::SeqCst)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// A TCP connection that has done the client's side of the handshake.
async fn handshaken(addr: SocketAddr) -> TcpStream {
    let mut socket = within("tcp connect", TcpStream::connect(addr))
        .await
        .unwrap();
    socket.set_nodelay(true).unwrap();
    let mut handshake = Handshake::new(PeerType::Client);
    let c0_c1 = handshake.generate_outbound_p0_and_p1().unwrap();
    socket.write_all(&c0_c1).await.unwrap();
    let mut buffer = vec![0u8; 8192];
    within("rtmp handshake", async {
        loop {
            let read = socket.read(&mut buffer).await.unwrap();
            assert!(read > 0, "closed during the handshake");
            match handshake.process_bytes(&buffer[..read]).unwrap() {
                HandshakeProcessResult::InProgress { response_bytes } => {
                    socket.write_all(&response_bytes).await.unwrap();
                }
                HandshakeProcessResult::Completed { response_bytes, .. } => {
                    socket.write_all(&response_bytes).await.unwrap();
                    return;
                }
            }
        }
    })
    .await;
    socket
}

/// One message on chunk stream `csid` (2..=63) in 128-byte chunks, the size a client
/// starts with.
fn message(csid: u8, type_id: u8, stream_id: u32, body: &[u8]) -> Vec<u8> {
    let length = (body.len() as u32).to_be_bytes();
    let mut bytes = vec![csid, 0, 0, 0, length[1], length[2], length[3], type_id];
    bytes.extend(stream_id.to_le_bytes());
    for (i, piece) in body.chunks(128).enumerate() {
        if i > 0 {
            bytes.push(0xC0 | csid);
        }
        bytes.extend(piece);
    }
    bytes
}

#[derive(Clone, Copy, Debug)]
enum Nesting {
    Objects,
    StrictArrays,
    EcmaArrays,
    Mixed,
}

/// `connect`, 1, then `levels` containers each holding the next (without their ends: the
/// decoder recurses on its way in).
fn nested_connect(nesting: Nesting, levels: usize) -> Vec<u8> {
    let mut body = rml_amf0::serialize(&vec![
        Amf0Value::Utf8String("connect".into()),
        Amf0Value::Number(1.0),
    ])
    .unwrap();
    const OBJECT: &[u8] = &[0x03, 0, 1, b'a'];
    const STRICT: &[u8] = &[0x0A, 0, 0, 0, 1];
    const ECMA: &[u8] = &[0x08, 0, 0, 0, 1, 0, 1, b'a'];
    for level in 0..levels {
        body.extend_from_slice(match nesting {
            Nesting::Objects => OBJECT,
            Nesting::StrictArrays => STRICT,
            Nesting::EcmaArrays => ECMA,
            Nesting::Mixed => [OBJECT, STRICT, ECMA][level % 3],
        });
    }
    body.push(0x05);
    body
}

/// Reads until the server closes the connection; the bytes it sent.
async fn read_until_closed(socket: &mut TcpStream) -> Vec<u8> {
    let mut received = Vec::new();
    let mut buffer = vec![0u8; 64 * 1024];
    within("the server closing the connection", async {
        loop {
            match socket.read(&mut buffer).await {
                Ok(0) => return,
                Ok(n) => received.extend_from_slice(&buffer[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return,
                Err(e) => panic!("read: {e}"),
            }
        }
    })
    .await;
    received
}

/// A publisher and a player on the same server still work.
async fn publish_and_play(server: &Server, stream: &str) {
    let addr = server.addr;
    let mut player = TestClient::player(addr, stream).await;
    let key = StreamKey {
        app: "live".to_owned(),
        stream: stream.to_owned(),
    };
    within("the player subscribed", async {
        while server
            .shared
            .streams
            .get(&key)
            .map(|stream| stream.reader_drops())
            .unwrap_or_default()
            .is_empty()
        {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await;
    let mut publisher = TestClient::publisher(addr, stream).await;
    let header = Media::Audio(0, Bytes::from_static(&[0xAF, 0x00, 0x12, 0x10]));
    let frame = Media::Audio(23, Bytes::from_static(&[0xAF, 0x01, 0x21, 0x10, 0x04]));
    publisher.send_media(&header).await;
    publisher.send_media(&frame).await;
    assert_eq!(player.next_media().await, header);
    assert_eq!(player.next_media().await, frame);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deeply_nested_amf_is_refused_and_the_server_keeps_serving() {
    let server = Server::start().await;
    for (nesting, levels) in [
        (Nesting::Objects, 10_000),
        (Nesting::StrictArrays, 10_000),
        // 8 bytes a level: 8,000 levels stay under the 64 KiB command limit.
        (Nesting::EcmaArrays, 8_000),
        (Nesting::Mixed, 10_000),
    ] {
        let mut socket = handshaken(server.addr).await;
        let body = nested_connect(nesting, levels);
        assert!(
            body.len() < 64 * 1024,
            "{nesting:?}: a command the guard reads"
        );
        let _ = socket.write_all(&message(3, 20, 0, &body)).await;
        read_until_closed(&mut socket).await;
        // The same nesting in a data message (type 18) and an AMF3 command (type 17).
        let mut socket = handshaken(server.addr).await;
        let _ = socket.write_all(&message(4, 18, 1, &body)).await;
        read_until_closed(&mut socket).await;
        let mut socket = handshaken(server.addr).await;
        let amf3 = [&[0u8][..], &body].concat();
        let _ = socket.write_all(&message(3, 17, 0, &amf3)).await;
        read_until_closed(&mut socket).await;
    }
    assert_eq!(server.panics(), 0);
    publish_and_play(&server, "after-nesting").await;
    assert_eq!(server.panics(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_with_fewer_than_three_values_are_refused() {
    let server = Server::start().await;
    let short = [
        vec![Amf0Value::Utf8String("play".into()), Amf0Value::Number(1.0)],
        vec![Amf0Value::Utf8String("connect".into())],
        vec![],
    ];
    for values in short {
        let body = rml_amf0::serialize(&values).unwrap();
        let mut socket = handshaken(server.addr).await;
        let _ = socket.write_all(&message(3, 20, 0, &body)).await;
        read_until_closed(&mut socket).await;
    }
    // An @setDataFrame without its values (the server session indexes them).
    let body = rml_amf0::serialize(&vec![Amf0Value::Utf8String("@setDataFrame".into())]).unwrap();
    let mut socket = handshaken(server.addr).await;
    let _ = socket.write_all(&message(4, 18, 1, &body)).await;
    read_until_closed(&mut socket).await;
    assert_eq!(server.panics(), 0, "no connection task panicked");
    publish_and_play(&server, "after-short-commands").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interleaved_chunk_headers_mid_message_are_refused() {
    let server = Server::start().await;
    // The first chunk of a 300-byte video message on chunk stream 6...
    let video = message(6, 9, 1, &[0x17; 300]);
    let first_chunk = &video[..12 + 128];
    let cases = [
        // ...then a shorter message on chunk stream 4 (rml_rtmp underflows and panics),
        message(4, 9, 1, &[0x27; 50]),
        // a new type 0 header on the same chunk stream,
        message(6, 20, 0, &[0x05; 20]),
        // a longer message on another chunk stream (rml_rtmp would mix the two).
        message(5, 8, 1, &[0xAF; 600]),
    ];
    for case in cases {
        let mut socket = handshaken(server.addr).await;
        let mut bytes = first_chunk.to_vec();
        bytes.extend(case);
        let _ = socket.write_all(&bytes).await;
        read_until_closed(&mut socket).await;
    }
    assert_eq!(server.panics(), 0, "no connection task panicked");
    publish_and_play(&server, "after-interleaving").await;
}

fn command(name: &str, transaction: f64, object: Amf0Value) -> RtmpMessage {
    RtmpMessage::Amf0Command {
        command_name: name.to_owned(),
        transaction_id: transaction,
        command_object: object,
        additional_arguments: vec![],
    }
}

/// `_result` answers to `createStream` (transaction ids from 2) in what the server sent.
fn create_stream_results(received: &[u8]) -> usize {
    let mut deserializer = ChunkDeserializer::new();
    let mut results = 0;
    let mut input = received;
    while let Ok(Some(payload)) = deserializer.get_next_message(input) {
        input = &[];
        match payload.to_rtmp_message() {
            Ok(RtmpMessage::SetChunkSize { size }) => {
                deserializer.set_max_chunk_size(size as usize).unwrap();
            }
            Ok(RtmpMessage::Amf0Command {
                command_name,
                transaction_id,
                ..
            }) if command_name == "_result" && transaction_id >= 2.0 => results += 1,
            _ => {}
        }
    }
    results
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_stream_flood_is_cut_at_the_cap() {
    let server = Server::start().await;
    let mut serializer = ChunkSerializer::new();
    let mut send = |message: RtmpMessage| {
        let payload = message
            .into_message_payload(RtmpTimestamp::new(0), 0)
            .unwrap();
        serializer.serialize(&payload, false, false).unwrap().bytes
    };
    let app = HashMap::from([("app".to_owned(), Amf0Value::Utf8String("live".into()))]);
    let mut flood = send(command("connect", 1.0, Amf0Value::Object(app)));
    for i in 0..100_000 {
        flood.extend(send(command(
            "createStream",
            f64::from(2 + i),
            Amf0Value::Null,
        )));
    }
    let socket = handshaken(server.addr).await;
    let (mut reader, mut writer) = socket.into_split();
    // Written while the answers are read, as a flooding client would.
    let writing = tokio::spawn(async move {
        for piece in flood.chunks(64 * 1024) {
            if writer.write_all(piece).await.is_err() {
                return;
            }
        }
    });
    let mut received = Vec::new();
    let mut buffer = vec![0u8; 64 * 1024];
    within("the server closing the flooding connection", async {
        loop {
            match reader.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(n) => received.extend_from_slice(&buffer[..n]),
            }
        }
    })
    .await;
    writing.abort();
    let answered = create_stream_results(&received);
    assert!(
        answered <= MAX_CREATE_STREAM as usize,
        "{answered} createStream commands answered"
    );
    assert_eq!(server.panics(), 0);
    publish_and_play(&server, "after-flood").await;
}

// ---------------------------------------------------------------------------------------
// The client side: pushes and pulls read what remote servers send through the same guard.

/// Accepts one connection, does the server's side of the handshake, sends `hostile`.
async fn hostile_server(hostile: Vec<u8>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut handshake = Handshake::new(PeerType::Server);
        let mut buffer = vec![0u8; 8192];
        loop {
            let read = socket.read(&mut buffer).await.unwrap();
            if read == 0 {
                return;
            }
            match handshake.process_bytes(&buffer[..read]).unwrap() {
                HandshakeProcessResult::InProgress { response_bytes } => {
                    socket.write_all(&response_bytes).await.unwrap();
                }
                HandshakeProcessResult::Completed { response_bytes, .. } => {
                    socket.write_all(&response_bytes).await.unwrap();
                    break;
                }
            }
        }
        let _ = socket.write_all(&hostile).await;
        // Keep the connection open until the client hangs up.
        while matches!(socket.read(&mut buffer).await, Ok(n) if n > 0) {}
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_server_cannot_crash_a_push_or_pull() {
    let (shared, _events) = Shared::for_tests(Rules::default());
    let two_values = rml_amf0::serialize(&vec![
        Amf0Value::Utf8String("_result".into()),
        Amf0Value::Number(1.0),
    ])
    .unwrap();
    let mut deep = rml_amf0::serialize(&vec![
        Amf0Value::Utf8String("_result".into()),
        Amf0Value::Number(1.0),
    ])
    .unwrap();
    for _ in 0..12_000 {
        deep.extend([0x0A, 0, 0, 0, 1]);
    }
    let mut interleaved = message(6, 9, 1, &[0x17; 300])[..12 + 128].to_vec();
    interleaved.extend(message(4, 9, 1, &[0x27; 50]));
    for (what, hostile) in [
        ("a two-value command", message(3, 20, 0, &two_values)),
        ("deep nesting", message(3, 20, 0, &deep)),
        ("interleaved chunks", interleaved),
        (
            "a giant message",
            vec![0x03, 0, 0, 0, 0xFF, 0xFF, 0xFF, 9, 1, 0, 0, 0],
        ),
    ] {
        let addr = hostile_server(hostile).await;
        let setup = Setup {
            limit: WAIT,
            flash_version: PUBLISHER_FLASH_VERSION,
            traffic: Arc::new(Traffic::default()),
            counters: Arc::clone(&shared.counters),
        };
        let client = tokio::spawn(async move {
            let socket = TcpStream::connect(addr).await.unwrap();
            let mut client =
                RtmpClient::start(Box::new(socket), format!("rtmp://{addr}/live"), setup).await?;
            client.connect("live").await
        });
        match within(what, client).await {
            Ok(Err(crate::client::error::ClientError::Protocol(why))) => {
                assert!(why.contains("input refused"), "{what}: {why}")
            }
            Ok(other) => panic!("{what}: expected a refusal, got {other:?}"),
            Err(e) => panic!("{what}: the client task failed: {e}"),
        }
    }
}
