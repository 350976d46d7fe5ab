//! Hostile WebRTC clients against the webrtc worker, then a real viewer: malformed,
//! oversized and mistyped offers, requests to unknown sessions and methods that do not
//! apply, garbage on the ICE port over UDP and TCP, offers past the per-address session
//! limit, and sessions that never connect (closed after `connect_timeout_secs`). The
//! worker is never restarted and Chromium still plays over WHEP afterwards.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::browser::{require_browser, run_script, webrtc_page};
use common::media::{publish, rtmp_url, wait_live};
use common::{Server, curl_raw, free_port, wait_for};
use std::io::Write;
use std::net::{TcpStream, UdpSocket};
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(40);
/// A real offer from Chromium (video and audio, recvonly): the server accepts it and
/// waits for an ICE connection that never comes.
const CHROMIUM_OFFER: &str = include_str!("webrtc/chromium_whep_offer.sdp");

fn post(url: &str, content_type: &str, body: &str) -> (u16, String) {
    curl_raw(&[
        "-X",
        "POST",
        "-H",
        &format!("Content-Type: {content_type}"),
        "--data-binary",
        body,
        url,
    ])
}

#[test]
fn hostile_webrtc_clients_leave_the_worker_serving() {
    require_browser(&[]);
    let server = Server::start("");
    server.wait_ready();
    let ice = free_port();
    server.apply_rules(&format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
 "Delivery": {{"outputs": ["HLS"], "segment_duration_secs": 1}},
 "WebRtcSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {ice}}}],
   "limits": {{"max_sessions_per_ip": 2, "max_sdp_bytes": 16384, "connect_timeout_secs": 2}}}}}}"#,
        server.ports.rtmp
    ));
    let _publisher = publish(&rtmp_url(&server, "live/cam"));
    wait_live(&server, "live", "cam", LIVE).unwrap_or_else(|| panic!("{}", server.log()));
    let worker = server.worker_pid("webrtc");
    let base = format!("http://127.0.0.1:{}/live/cam", server.ports.http);
    let whep = format!("{base}/whep.stream");

    // Bad requests, each with its own clear answer.
    let (status, answer) = post(&whep, "application/sdp", "v=0\r\nthis is not sdp\r\n");
    assert_eq!(status, 400, "a malformed offer: {answer}");
    assert!(answer.contains("bad offer"), "{answer}");
    let (status, answer) = post(&whep, "text/plain", CHROMIUM_OFFER);
    assert_eq!(status, 415, "not application/sdp: {answer}");
    let (status, answer) = post(&whep, "application/sdp", &"a".repeat(64 * 1024));
    assert_eq!(status, 413, "over max_sdp_bytes: {answer}");
    let (status, _) = curl_raw(&["-X", "DELETE", &format!("{whep}/1-00")]);
    assert_eq!(status, 404, "an unknown session");
    let (status, _) = curl_raw(&[
        "-X",
        "PATCH",
        "-H",
        "Content-Type: application/trickle-ice-sdpfrag",
        "--data-binary",
        "a=candidate:1 1 udp 1 127.0.0.1 9 typ host",
        &format!("{whep}/1-00"),
    ]);
    assert_eq!(status, 404, "trickle for an unknown session");
    let (status, answer) = curl_raw(&["-X", "GET", &whep]);
    assert_eq!(status, 405, "GET of an endpoint: {answer}");
    assert!(
        answer.to_ascii_lowercase().contains("allow: post, options"),
        "{answer}"
    );
    let (status, _) = post(
        &format!(
            "http://127.0.0.1:{}/live/nothing/whep.stream",
            server.ports.http
        ),
        "application/sdp",
        CHROMIUM_OFFER,
    );
    assert_eq!(status, 404, "a stream that is not live");
    let (status, _) = post(
        &format!(
            "http://127.0.0.1:{}/live/a%2F..%2Fb/whep.stream",
            server.ports.http
        ),
        "application/sdp",
        CHROMIUM_OFFER,
    );
    assert_eq!(status, 404, "a name that is not a name");

    // Garbage on the ICE port: datagrams no session asked for, and TCP connections that
    // send junk frames, a frame longer than they send, or nothing.
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut junk = vec![0u8; 1200];
    for i in 0..2000u32 {
        junk.iter_mut()
            .enumerate()
            .for_each(|(j, b)| *b = (i as usize * 31 + j * 7) as u8);
        // Every fourth one looks like STUN (magic cookie) with a made-up username.
        if i % 4 == 0 {
            junk[0] = 0;
            junk[1] = 1;
            junk[4..8].copy_from_slice(&[0x21, 0x12, 0xa4, 0x42]);
        }
        let len = 20 + (i as usize % 1100);
        let _ = udp.send_to(&junk[..len], ("127.0.0.1", ice));
    }
    let mut idle = Vec::new();
    for i in 0..20 {
        let mut tcp = TcpStream::connect(("127.0.0.1", ice)).unwrap();
        match i % 3 {
            0 => {
                let _ = tcp.write_all(&[0x00, 0x10]);
                let _ = tcp.write_all(&[0xde; 16]);
            }
            1 => {
                let _ = tcp.write_all(&[0xff, 0xff, 1, 2, 3]);
            }
            _ => {}
        }
        idle.push(tcp);
    }

    // Offers that never connect: two per address at most, each closed after 2 s.
    let (first, answer) = post(&whep, "application/sdp", CHROMIUM_OFFER);
    assert_eq!(first, 201, "{answer}");
    assert!(
        answer.contains("a=ice-lite"),
        "strom answers as an ICE-lite agent: {answer}"
    );
    let (second, _) = post(&whep, "application/sdp", CHROMIUM_OFFER);
    assert_eq!(second, 201);
    let (third, answer) = post(&whep, "application/sdp", CHROMIUM_OFFER);
    assert_eq!(third, 503, "past max_sessions_per_ip: {answer}");
    wait_for(
        Duration::from_secs(20),
        "unconnected sessions closed",
        || {
            server
                .log()
                .matches("ICE did not connect in time")
                .count()
                .ge(&2)
                .then_some(())
        },
    )
    .unwrap_or_else(|| {
        panic!(
            "sessions that never connected stayed; log:\n{}",
            server.log()
        )
    });
    drop(idle);

    assert_eq!(
        server.worker_pid("webrtc"),
        worker,
        "the worker was not restarted"
    );
    let page = webrtc_page();
    let result = run_script("webrtc.mjs", &[&page, "whep", &whep, "4"], 60)
        .unwrap_or_else(|e| panic!("{e}\nlog:\n{}", server.log()));
    assert_eq!(result["ok"], true, "{result}\nlog:\n{}", server.log());
    assert!(
        result["last"]["video"]["framesDecoded"]
            .as_u64()
            .unwrap_or(0)
            >= 30,
        "a real viewer still plays: {result}"
    );
}
