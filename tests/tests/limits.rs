//! Limits on what clients can make the HTTP delivery port and the management API spend
//! (issue: reliability and hostile input): slowloris floods leave real requests
//! answered, connection caps per address and in all, request heads that are too large
//! (431) or too slow (closed after the header timeout). Figures are printed, bounds are
//! generous (shared, noisy machines).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::Server;
use socket2::{Domain, Socket, Type};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Attackers come from this loopback address, the real client from 127.0.0.1.
const ATTACKER: [u8; 4] = [127, 0, 0, 2];

fn raise_descriptor_limit() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard).unwrap();
}

/// A TCP connection to `port` from the attacker's address.
fn connect_from_attacker(port: u16) -> std::io::Result<TcpStream> {
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None)?;
    socket.bind(&SocketAddr::from((ATTACKER, 0)).into())?;
    socket.connect(&SocketAddr::from(([127, 0, 0, 1], port)).into())?;
    Ok(socket.into())
}

/// A plain GET from 127.0.0.1; the status code and how long the answer took.
fn timed_get(port: u16, path: &str) -> (u16, Duration) {
    let started = Instant::now();
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    (status, started.elapsed())
}

/// Whether the server closes `stream` (EOF or reset) within `limit`.
fn closed_within(stream: &mut TcpStream, limit: Duration) -> Option<Duration> {
    let started = Instant::now();
    stream.set_read_timeout(Some(limit)).unwrap();
    let mut buffer = [0u8; 4096];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) if started.elapsed() < limit => return Some(started.elapsed()),
            Ok(0) | Err(_) => return None,
            Ok(_) => {}
        }
    }
}

#[test]
fn slowloris_on_the_delivery_and_management_ports_leaves_real_requests_answered() {
    raise_descriptor_limit();
    let server = Server::start("");
    server.wait_ready();
    let (http, api) = (server.ports.http, server.ports.management);
    let mut trickling = Vec::new();
    for port in [http, api] {
        for _ in 0..1000 {
            match connect_from_attacker(port) {
                Ok(mut stream) => {
                    let _ = stream.write_all(b"GET / HTTP/1.1\r\nX-Slow: ");
                    trickling.push(stream);
                }
                Err(e) => panic!("attacker connection failed: {e}"),
            }
        }
    }
    // Keep trickling one byte per connection while the real client asks.
    let mut worst = (Duration::ZERO, Duration::ZERO);
    for round in 0..3 {
        for stream in &mut trickling {
            let _ = stream.write_all(b"a");
        }
        let (status, took) = timed_get(http, "/live/none/playlist.m3u8");
        assert_eq!(status, 404, "delivery port, round {round}");
        worst.0 = worst.0.max(took);
        let (status, took) = timed_get(api, "/manage/server_status");
        assert_eq!(status, 200, "management port, round {round}");
        worst.1 = worst.1.max(took);
    }
    eprintln!(
        "slowloris: 1000 trickling connections per port; slowest real answer: delivery {:?}, management {:?}",
        worst.0, worst.1
    );
    assert!(
        worst.0 < Duration::from_secs(5) && worst.1 < Duration::from_secs(5),
        "{worst:?}"
    );
    assert!(
        server
            .log()
            .contains("management connection refused: too many open connections from this address"),
        "the management per-address cap is logged"
    );
}

#[test]
fn connection_caps_per_address_refuse_the_extra_connection_and_log_it() {
    let server = Server::start(
        "http_max_connections_per_ip = 4\nmanagement_max_connections_per_ip = 4\nhttp_header_timeout = 60\nmanagement_header_timeout = 60",
    );
    server.wait_ready();
    for (port, line) in [
        (server.ports.http, "http connection refused"),
        (
            server.ports.management,
            "management connection refused: too many open connections from this address",
        ),
    ] {
        let _held: Vec<TcpStream> = (0..4)
            .map(|_| connect_from_attacker(port).unwrap())
            .collect();
        std::thread::sleep(Duration::from_millis(300));
        let mut fifth = connect_from_attacker(port).unwrap();
        let closed = closed_within(&mut fifth, Duration::from_secs(10));
        assert!(
            closed.is_some(),
            "port {port}: the fifth connection was kept"
        );
        let (status, _) = timed_get(port, "/manage/server_status");
        assert_ne!(status, 0, "port {port}: another address is still served");
        assert!(server.log().contains(line), "no {line:?} in the log");
    }
}

#[test]
fn oversized_and_slow_request_heads_are_refused() {
    let server = Server::start("http_header_timeout = 2\nmanagement_header_timeout = 2");
    server.wait_ready();
    for port in [server.ports.http, server.ports.management] {
        // A 200 KiB header, sent as a client would trickle it in 4 KiB pieces (all at
        // once, the server's first read may take more than its limit): 431.
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut reader = stream.try_clone().unwrap();
        let answer = std::thread::spawn(move || {
            let mut answer = Vec::new();
            let _ = reader.read_to_end(&mut answer);
            answer
        });
        let _ = stream.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nX-Huge: ");
        for _ in 0..50 {
            if stream.write_all(&[b'a'; 4096]).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let _ = stream.write_all(b"\r\n\r\n");
        let answer = answer.join().unwrap();
        let text = String::from_utf8_lossy(&answer);
        assert!(text.starts_with("HTTP/1.1 431"), "port {port}: {text:?}");

        // A head that never ends: closed after the header timeout.
        let mut slow = TcpStream::connect(("127.0.0.1", port)).unwrap();
        slow.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n").unwrap();
        let closed = closed_within(&mut slow, Duration::from_secs(15));
        eprintln!("port {port}: an unfinished head was closed after {closed:?} (timeout 2 s)");
        assert!(closed.is_some(), "port {port}: an unfinished head was kept");
    }
}
