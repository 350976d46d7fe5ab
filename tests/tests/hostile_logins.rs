//! Password guessing on source logins (issue 31 item 11): after a burst of failed Icecast
//! source, RTSP publisher and RTMP publisher logins, the guessing address is refused even
//! with the right password for a while, and other addresses are not affected.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use base64::Engine;
use common::media::{is_live, publish};
use common::{Server, connect_from, free_port};
use std::io::{Read, Write};

use std::time::Duration;

/// More failures than the throttle lets through (10 per minute).
const GUESSES: usize = 12;

fn basic(user: &str, password: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
}

/// The status line of an Icecast source request from `source` with `password`.
fn icecast_source(source: &str, port: u16, password: &str) -> String {
    let mut stream = connect_from(source, port);
    let head = format!(
        "PUT /radio/guess HTTP/1.1\r\nAuthorization: Basic {}\r\nContent-Type: audio/mpeg\r\n\r\n",
        basic("source", password)
    );
    stream.write_all(head.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let mut byte = [0u8; 1];
    // The first line is enough (an accepted source's connection stays open).
    while !answer.ends_with(b"\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => answer.push(byte[0]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&answer).trim().to_owned()
}

/// The status code of an RTSP ANNOUNCE of `secure/cam` from `source` with Basic
/// credentials `password`.
fn rtsp_announce(source: &str, port: u16, password: &str) -> u16 {
    let sdp = "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=x\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n\
               m=video 0 RTP/AVP 96\r\na=rtpmap:96 H264/90000\r\na=control:streamid=0\r\n";
    let request = format!(
        "ANNOUNCE rtsp://127.0.0.1/secure/cam RTSP/1.0\r\nCSeq: 1\r\nAuthorization: Basic {}\r\n\
         Content-Type: application/sdp\r\nContent-Length: {}\r\n\r\n{sdp}",
        basic("enc", password),
        sdp.len()
    );
    let mut stream = connect_from(source, port);
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = [0u8; 12];
    stream.read_exact(&mut answer).unwrap();
    String::from_utf8_lossy(&answer[9..12]).parse().unwrap()
}

#[test]
fn guessed_source_passwords_lock_the_guesser_out() {
    let rtsp_port = free_port();
    let server = Server::start("");
    server.apply_rules(&format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}],
                              "apps": [{{"app": "secure", "login": "enc", "password": "s3cret"}}]}},
 "Delivery": {{"outputs": ["HLS", "ICECAST"]}},
 "IcecastSources": [{{"app": "radio", "password": "right-password"}}],
 "RtspSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {rtsp_port}}}]}}}}"#,
        server.ports.rtmp
    ));
    let http = server.ports.http;

    // Icecast sources.
    for guess in 0..GUESSES {
        let status = icecast_source("127.0.0.1", http, &format!("guess-{guess}"));
        assert!(status.starts_with("HTTP/1.0 401"), "{status}");
    }
    let status = icecast_source("127.0.0.1", http, "right-password");
    assert!(
        status.starts_with("HTTP/1.0 401"),
        "the guesser got in with the right password: {status}"
    );
    let status = icecast_source("127.0.0.2", http, "right-password");
    assert!(
        status.starts_with("HTTP/1.0 200"),
        "another address is refused: {status}; log:\n{}",
        server.log()
    );

    // RTSP publishers.
    for guess in 0..GUESSES {
        assert_eq!(
            rtsp_announce("127.0.0.1", rtsp_port, &format!("guess-{guess}")),
            401
        );
    }
    assert_eq!(
        rtsp_announce("127.0.0.1", rtsp_port, "s3cret"),
        401,
        "the RTSP guesser got in with the right password"
    );
    assert_eq!(rtsp_announce("127.0.0.2", rtsp_port, "s3cret"), 200);

    // RTMP publishers (ffmpeg does the authmod=adobe exchange, one guess per run).
    let port = server.ports.rtmp;
    for guess in 0..GUESSES {
        let mut wrong = publish(&format!(
            "rtmp://enc:guess{guess}@127.0.0.1:{port}/secure/cam"
        ));
        assert!(
            matches!(wrong.wait_exit(Duration::from_secs(20)), Some(c) if c != 0),
            "a wrong password was taken"
        );
    }
    let mut right = publish(&format!("rtmp://enc:s3cret@127.0.0.1:{port}/secure/cam"));
    let exited = right.wait_exit(Duration::from_secs(20));
    assert!(
        matches!(exited, Some(c) if c != 0),
        "the RTMP guesser got in with the right password: {exited:?}"
    );
    assert!(!is_live(&server, "secure", "cam"));
}
