//! Password guessing on source logins (issue 31 item 11): after a burst of failed Icecast
//! source, RTSP publisher, RTMP publisher logins and SRT passphrases, the guessing address
//! is refused even with the right password for a while, and other addresses are not
//! affected.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use base64::Engine;
use common::media::{is_live, publish, publish_as};
use common::{Server, connect_from, free_port, require_tool, wait_for};
use std::io::{Read, Write};
use std::process::{Command, Stdio};
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

const SRT_PASSPHRASE: &str = "right-srt-passphrase";

/// One SRT call from `source` to `port` with the URL parameters `params`
/// (`srt-live-transmit` as a caller bound to `source`, relaying a UDP port nobody sends
/// to): its first line saying how the handshake ended (`REJECT ...`, `SRT target
/// connected`, or `Connection was broken` when the server closed it at once), or ""
/// when it said none within 20 s. The caller is stopped then
/// (srt-live-transmit does not exit on a refusal).
fn srt_call(source: &str, port: u16, params: &str) -> String {
    require_tool("srt-live-transmit", "srt-tools");
    let input = format!("udp://127.0.0.1:{}", free_port());
    let url = format!("srt://127.0.0.1:{port}?mode=caller&adapter={source}&{params}");
    let mut child = Command::new("srt-live-transmit")
        .args(["-a:no", &input, &url])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (lines, outcome) = std::sync::mpsc::channel();
    for pipe in [
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .flatten()
    {
        let lines = lines.clone();
        std::thread::spawn(move || {
            for line in std::io::BufRead::lines(std::io::BufReader::new(pipe)).map_while(Result::ok)
            {
                if ["REJECT", "connected", "broken"]
                    .iter()
                    .any(|w| line.contains(w))
                {
                    let _ = lines.send(line);
                }
            }
        });
    }
    let said = outcome
        .recv_timeout(Duration::from_secs(20))
        .unwrap_or_default();
    let _ = child.kill();
    let _ = child.wait();
    said
}

/// The parameters of a caller publishing `live/cam` with `passphrase`.
fn passphrase(passphrase: &str) -> String {
    format!("passphrase={passphrase}&streamid=#!::r=live/cam,m=publish")
}

/// Whether an SRT caller from `source` is connected (listed by `srt_receiver_stats`).
fn srt_connected_from(server: &Server, source: &str) -> bool {
    let (_, stats) = server.get("/manage/srt_receiver_stats");
    stats["SrtReceivers"]
        .as_array()
        .is_some_and(|list| list.iter().any(|r| r.to_string().contains(source)))
}

/// SRT passphrases: libsrt refuses a wrong one inside its handshake; those refusals count
/// as failed logins, and then even the right passphrase is refused from that address.
#[test]
fn guessed_srt_passphrases_lock_the_guesser_out() {
    let port = free_port();
    let server = Server::start("");
    server.apply_rules(&format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
 "Delivery": {{"outputs": []}},
 "Cameras": [{{"id": "srt-in", "ip": "127.0.0.1", "port": {port}, "protocol": "srt", "receive_mode": "listen",
   "app": "live", "stream": "cam", "parameters": [{{"name": "passphrase", "value": "{SRT_PASSPHRASE}"}}]}}]}}"#,
        server.ports.rtmp
    ));
    // libsrt's own refusal names the passphrase; strom's (in libsrt's listen callback,
    // before the passphrase is checked) does not.
    for guess in 0..GUESSES {
        let said = srt_call(
            "127.0.0.1",
            port,
            &passphrase(&format!("wrong-guess-{guess:04}")),
        );
        let expected = if guess < 10 {
            "Incorrect passphrase"
        } else {
            "REJECT"
        };
        assert!(said.contains(expected), "guess {guess}: {said:?}");
        assert_eq!(
            said.contains("passphrase"),
            guess < 10,
            "guess {guess} (10 are checked): {said:?}; log:\n{}",
            server.log()
        );
    }
    let said = srt_call("127.0.0.1", port, &passphrase(SRT_PASSPHRASE));
    assert!(
        said.contains("REJECT") && !said.contains("passphrase"),
        "the SRT guesser got in with the right passphrase: {said:?}; log:\n{}",
        server.log()
    );
    assert!(!srt_connected_from(&server, "127.0.0.1"));
    let log = server.log();
    let lines = |text: &str| log.lines().filter(|l| l.contains(text)).count();
    assert!(
        lines("wrong or missing passphrase") >= 1 && lines("wrong or missing passphrase") <= 6,
        "failures logged, rate limited:\n{log}"
    );
    assert!(
        lines("too many failed logins from this address") >= 1,
        "{log}"
    );

    // Another address with the right passphrase connects.
    let said = srt_call("127.0.0.2", port, &passphrase(SRT_PASSPHRASE));
    assert!(
        said.contains("connected"),
        "another address is refused: {said:?}; log:\n{}",
        server.log()
    );
}

/// SRT logins in the streamid (`u=`/`s=`, for an app with a publisher login) are
/// throttled like every source login: after 10 wrong ones the address is refused even
/// with the right one; another address gets in.
#[test]
fn guessed_srt_stream_id_logins_lock_the_guesser_out() {
    let port = free_port();
    let server = Server::start("");
    server.apply_rules(&format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}],
                              "apps": [{{"app": "secure", "login": "enc", "password": "s3cret"}}]}},
 "Delivery": {{"outputs": []}},
 "Cameras": [{{"id": "srt-in", "ip": "127.0.0.1", "port": {port}, "protocol": "srt", "receive_mode": "listen",
   "app": "secure", "stream": "cam"}}]}}"#,
        server.ports.rtmp
    ));
    let login = |password: &str| format!("streamid=#!::r=secure/cam,m=publish,u=enc,s={password}");
    // ffmpeg publishing from 127.0.0.1: libsrt accepts it, the publish gate refuses the
    // login and closes the connection, and ffmpeg fails.
    let guess = |password: &str| {
        let url = format!("srt://127.0.0.1:{port}?pkt_size=1316&{}", login(password));
        let mut ffmpeg = publish_as(&url, "mpegts");
        let exited = ffmpeg.wait_exit(Duration::from_secs(30));
        assert!(
            matches!(exited, Some(c) if c != 0),
            "a publisher with {password:?}: {exited:?}; log:\n{}",
            server.log()
        );
    };
    for n in 0..GUESSES {
        guess(&format!("guess{n}"));
    }
    guess("s3cret");
    assert!(
        server
            .log()
            .contains("SRT publisher refused: too many failed logins from this address"),
        "the right login was checked; log:\n{}",
        server.log()
    );
    assert!(!srt_connected_from(&server, "127.0.0.1"));
    let _other = std::thread::spawn(move || srt_call("127.0.0.2", port, &login("s3cret")));
    wait_for(
        Duration::from_secs(20),
        "the other address publishing",
        || srt_connected_from(&server, "127.0.0.2").then_some(()),
    )
    .unwrap_or_else(|| panic!("another address is refused; log:\n{}", server.log()));
}
