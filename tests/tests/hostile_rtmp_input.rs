//! Hostile RTMP input against the real `strom` binary: messages `rml_rtmp` would overflow
//! its stack on (10,000 levels of nested AMF) or panic on (commands with fewer than three
//! values, interleaved chunk headers) are refused by the rtmp worker's input guards. Only
//! that connection closes: the worker process is the same afterwards (no crash, no
//! restart), and ffmpeg publishes and ffprobe plays as before.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{probe_streams, publish, rtmp_url, wait_live};
use common::{Server, process_alive};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(30);

/// Plain RTMP handshake (C0/C1, S0/S1/S2, C2).
fn handshake(addr: SocketAddr) -> TcpStream {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut c0c1 = vec![3u8];
    c0c1.extend(std::iter::repeat_n(0u8, 8));
    c0c1.extend((0..1528).map(|i| (i * 7 % 256) as u8));
    stream.write_all(&c0c1).unwrap();
    let mut s0s1s2 = vec![0u8; 3073];
    stream.read_exact(&mut s0s1s2).unwrap();
    stream.write_all(&s0s1s2[1..1537]).unwrap();
    stream
}

/// Whether the server closed the connection (rather than the read timing out).
fn closed_by_server(mut stream: TcpStream) -> bool {
    let mut buffer = [0u8; 4096];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

/// One message on chunk stream `csid` (2..=63) in 128-byte chunks.
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

/// AMF0 string.
fn string(text: &str) -> Vec<u8> {
    let mut bytes = vec![0x02];
    bytes.extend((text.len() as u16).to_be_bytes());
    bytes.extend(text.as_bytes());
    bytes
}

/// AMF0 number.
fn number(value: f64) -> Vec<u8> {
    let mut bytes = vec![0x00];
    bytes.extend(value.to_be_bytes());
    bytes
}

/// `connect`, 1, then `levels` nested containers (strict arrays, objects and ECMA
/// arrays in turn), each holding the next.
fn nested_connect(levels: usize) -> Vec<u8> {
    let mut body = string("connect");
    body.extend(number(1.0));
    const CONTAINERS: [&[u8]; 3] = [
        &[0x0A, 0, 0, 0, 1],
        &[0x03, 0, 1, b'a'],
        &[0x08, 0, 0, 0, 1, 0, 1, b'a'],
    ];
    for level in 0..levels {
        body.extend_from_slice(CONTAINERS[level % 3]);
    }
    body.push(0x05);
    body
}

/// Sends `bytes` after a handshake and expects the server to close the connection.
fn refused(addr: SocketAddr, what: &str, bytes: &[u8]) {
    let mut stream = handshake(addr);
    let _ = stream.write_all(bytes);
    assert!(closed_by_server(stream), "{what}: connection closed");
}

#[test]
fn hostile_rtmp_input_closes_the_connection_not_the_worker() {
    let server = Server::start("");
    server.wait_ready();
    let rtmp_pid = server.worker_pid("rtmp");
    let addr: SocketAddr = ([127, 0, 0, 1], server.ports.rtmp).into();

    let nested = nested_connect(10_000);
    assert!(nested.len() < 64 * 1024);
    refused(addr, "nested AMF command", &message(3, 20, 0, &nested));
    refused(addr, "nested AMF data", &message(4, 18, 1, &nested[10..]));

    let mut two_values = string("play");
    two_values.extend(number(1.0));
    refused(
        addr,
        "a command of two values",
        &message(3, 20, 0, &two_values),
    );

    // The first chunk of a 300-byte video message, then another chunk stream's header.
    let mut interleaved = message(6, 9, 1, &[0x17; 300])[..12 + 128].to_vec();
    interleaved.extend(message(4, 9, 1, &[0x27; 50]));
    refused(addr, "interleaved chunk headers", &interleaved);

    // The same worker serves a real publisher and a real player.
    let mut publisher = publish(&rtmp_url(&server, "live/after"));
    wait_live(&server, "live", "after", LIVE).unwrap_or_else(|| {
        panic!(
            "not live; ffmpeg: {}\nlog:\n{}",
            publisher.stop_and_stderr(),
            server.log()
        )
    });
    let streams = probe_streams(&rtmp_url(&server, "live/after"));
    assert_eq!(
        streams,
        ["h264,video,320,240", "aac,audio"],
        "ffprobe saw {streams:?}"
    );

    assert!(process_alive(rtmp_pid), "the rtmp worker is still running");
    assert_eq!(
        server.worker_pid("rtmp"),
        rtmp_pid,
        "the rtmp worker was not restarted; log:\n{}",
        server.log()
    );
    let (_, workers) = server.get("/manage/workers");
    let rtmp = workers
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["kind"] == "rtmp")
        .unwrap();
    assert_eq!(rtmp["restarts"], 0, "{rtmp}");
    let log = server.log();
    assert!(log.contains("input refused"), "the refusals are logged");
    assert!(!log.contains("overflowed its stack"), "log:\n{log}");
}
