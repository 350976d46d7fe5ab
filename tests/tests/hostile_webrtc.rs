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
    assert!(
        !answer.contains("PointerOffset") && !answer.contains("0x"),
        "the parser's detail (addresses of the server's memory) stays in the log: {answer}"
    );
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
        &delivery_url(&server, "live/nothing/whep.stream"),
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

/// A server with WebRTC on a loopback ICE port (returned), `limits` as given (JSON
/// members) and `apps` added to the RTMP settings.
fn webrtc_server(apps: &str, limits: &str) -> (Server, u16) {
    let server = Server::start("");
    server.wait_ready();
    let ice = free_port();
    server.apply_rules(&format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]{apps}}},
 "Delivery": {{"outputs": ["HLS"], "segment_duration_secs": 1}},
 "WebRtcSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {ice}}}], "limits": {{{limits}}}}}}}"#,
        server.ports.rtmp
    ));
    (server, ice)
}

/// `http://127.0.0.1:<delivery port>/<path>`.
fn delivery_url(server: &Server, path: &str) -> String {
    format!("http://127.0.0.1:{}/{path}", server.ports.http)
}

/// A STUN binding request whose USERNAME is `username`, framed for ICE-TCP (RFC 4571):
/// what a peer sends first on a connection. Its integrity is not valid, which only the
/// session (not the routing of the connection) checks.
fn framed_binding_request(username: &str) -> Vec<u8> {
    let padded = username.len().div_ceil(4) * 4;
    let mut message = vec![0x00, 0x01];
    message.extend_from_slice(&((4 + padded) as u16).to_be_bytes());
    message.extend_from_slice(&[0x21, 0x12, 0xa4, 0x42]);
    message.extend_from_slice(&[7; 12]);
    message.extend_from_slice(&6u16.to_be_bytes());
    message.extend_from_slice(&(username.len() as u16).to_be_bytes());
    message.extend_from_slice(username.as_bytes());
    message.resize(20 + 4 + padded, 0);
    let mut framed = (message.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(&message);
    framed
}

/// The value of the first `a=<attribute>:` line of an SDP.
fn sdp_attribute(sdp: &str, attribute: &str) -> String {
    let prefix = format!("a={attribute}:");
    sdp.lines()
        .find_map(|line| line.trim().strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {prefix} in {sdp}"))
        .to_owned()
}

/// The `Location` header of a `curl -i` answer.
fn location(answer: &str) -> String {
    answer
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("location")
                .then(|| value.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("no Location in {answer}"))
}

/// Whether the server has closed `tcp` (end of stream or reset); reads what it sends.
fn closed_by_server(tcp: &mut TcpStream) -> bool {
    use std::io::Read;
    tcp.set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    let mut buffer = [0u8; 2048];
    loop {
        match tcp.read(&mut buffer) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return false;
            }
            Err(_) => return true,
        }
    }
}

fn count_closed(connections: &mut [TcpStream]) -> usize {
    connections
        .iter_mut()
        .map(closed_by_server)
        .filter(|&closed| closed)
        .count()
}

fn webrtc_session_ids(server: &Server) -> Vec<u64> {
    let (_, sessions) = server.get("/manage/sessions");
    sessions
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["type"] == "WebRTC")
        .filter_map(|s| s["id"].as_u64())
        .collect()
}

/// One offer, then 30 ICE-TCP connections naming its ufrag from one address: the address
/// holds 8 (its cap at `max_sessions_per_ip` 2) and the session 4 of them; those go idle
/// and are closed while the session lives, and new ones end with the session.
#[test]
fn ice_tcp_connections_are_capped_and_end_idle_or_with_their_session() {
    let (server, ice) = webrtc_server(
        "",
        r#""max_sessions_per_ip": 2, "connect_timeout_secs": 120"#,
    );
    // A WHIP offer needs no live stream; Chromium's recvonly offer is answered all the same.
    let whip = delivery_url(&server, "live/tcp/whip.stream");
    let (status, answer) = post(&whip, "application/sdp", CHROMIUM_OFFER);
    assert_eq!(status, 201, "{answer}");
    let username = format!(
        "{}:{}",
        sdp_attribute(&answer, "ice-ufrag"),
        sdp_attribute(CHROMIUM_OFFER, "ice-ufrag")
    );
    let request = framed_binding_request(&username);
    let mut connections: Vec<TcpStream> = (0..30)
        .map(|_| {
            let mut tcp = TcpStream::connect(("127.0.0.1", ice)).unwrap();
            let _ = tcp.write_all(&request);
            tcp
        })
        .collect();
    // 22 over the address's cap and 4 over the session's are closed; 4 stay.
    wait_for(
        Duration::from_secs(30),
        "connections over the caps closed",
        || (count_closed(&mut connections) == 26).then_some(()),
    )
    .unwrap_or_else(|| {
        panic!(
            "{} of 30 closed, 26 expected; log:\n{}",
            count_closed(&mut connections),
            server.log()
        )
    });
    // Idle (one binding request, then nothing): closed while the session is still open.
    wait_for(Duration::from_secs(60), "idle connections closed", || {
        (count_closed(&mut connections) == 30).then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "idle ICE-TCP connections stayed open ({} of 30 closed)",
            count_closed(&mut connections)
        )
    });
    assert_eq!(
        webrtc_session_ids(&server).len(),
        1,
        "the session itself is still open"
    );

    // Fresh connections of the session end when it does.
    let mut fresh: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut tcp = TcpStream::connect(("127.0.0.1", ice)).unwrap();
            let _ = tcp.write_all(&request);
            tcp
        })
        .collect();
    let resource = location(&answer);
    let (status, _) = curl_raw(&[
        "-X",
        "DELETE",
        &format!("http://127.0.0.1:{}{resource}", server.ports.http),
    ]);
    assert_eq!(status, 200, "DELETE of the session");
    wait_for(
        Duration::from_secs(30),
        "connections closed with the session",
        || (count_closed(&mut fresh) == 2).then_some(()),
    )
    .unwrap_or_else(|| panic!("ICE-TCP connections outlived their session"));
    assert!(webrtc_session_ids(&server).is_empty());
}

/// Offers sent before a stream goes live wait for it holding their places: with
/// `max_sessions_per_ip` 2, four of six concurrent offers are refused at once.
#[test]
fn offers_waiting_for_their_stream_count_against_the_limits() {
    let (server, _ice) = webrtc_server(
        "",
        r#""max_sessions_per_ip": 2, "connect_timeout_secs": 30"#,
    );
    let whep = delivery_url(&server, "live/later/whep.stream");
    let offers: Vec<_> = (0..6)
        .map(|_| {
            let whep = whep.clone();
            std::thread::spawn(move || post(&whep, "application/sdp", CHROMIUM_OFFER).0)
        })
        .collect();
    // The stream goes live while the offers wait (up to 8 s) for it.
    let _publisher = publish(&rtmp_url(&server, "live/later"));
    let statuses: Vec<u16> = offers.into_iter().map(|o| o.join().unwrap()).collect();
    let refused = statuses.iter().filter(|&&s| s == 503).count();
    let answered = statuses.iter().filter(|&&s| s == 201).count();
    eprintln!("offers answered {statuses:?}");
    assert_eq!(
        refused,
        4,
        "all but max_sessions_per_ip refused: {statuses:?}\n{}",
        server.log()
    );
    assert!(answered <= 2, "{statuses:?}");
    assert!(webrtc_session_ids(&server).len() <= 2);
}

/// WHIP Bearer logins share the source-login throttle: after 10 wrong guesses the
/// right login is refused too, and the refusals are not one log line each.
#[test]
fn whip_password_guessing_is_throttled() {
    let (server, _ice) = webrtc_server(
        r#", "apps": [{"app": "live", "login": "pub", "password": "s3cret"}]"#,
        "",
    );
    let whip = delivery_url(&server, "live/guess/whip.stream");
    let offer = |token: &str| {
        curl_raw(&[
            "-X",
            "POST",
            "-H",
            "Content-Type: application/sdp",
            "-H",
            &format!("Authorization: Bearer {token}"),
            "--data-binary",
            CHROMIUM_OFFER,
            &whip,
        ])
        .0
    };
    for guess in 0..12 {
        assert_eq!(offer(&format!("pub:guess{guess}")), 401);
    }
    assert_eq!(
        offer("pub:s3cret"),
        401,
        "the right password from a locked-out address is refused unchecked"
    );
    let log = server.log();
    assert!(
        log.contains("too many failed logins"),
        "the lockout is logged: {log}"
    );
    let refusal_lines = log.matches("whip publish refused").count();
    assert!(
        refusal_lines < 13,
        "refusals are rate-limited ({refusal_lines} lines for 13)"
    );
    // Another stream's publisher from elsewhere is not affected: the lockout is per
    // address, and this one is the only one the test has; the session table is empty.
    assert!(webrtc_session_ids(&server).is_empty());
}

/// A WHIP publisher whose browser goes away without DELETE loses its stream and its
/// session, so the name can be published again.
#[test]
fn a_whip_publisher_that_vanishes_loses_its_name() {
    require_browser(&[]);
    let (server, _ice) = webrtc_server("", "");
    let whip = delivery_url(&server, "live/gone/whip.stream");
    let page = webrtc_page();
    let result = run_script("webrtc.mjs", &[&page, "whip", &whip, "4", "", "vanish"], 60)
        .unwrap_or_else(|e| panic!("{e}\nlog:\n{}", server.log()));
    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(result["postStatus"], 201, "{result}");
    assert!(result["deleteStatus"].is_null(), "no DELETE was sent");
    wait_for(
        Duration::from_secs(60),
        "the vanished publisher dropped",
        || {
            (!common::media::is_live(&server, "live", "gone")
                && webrtc_session_ids(&server).is_empty())
            .then_some(())
        },
    )
    .unwrap_or_else(|| {
        panic!(
            "the vanished WHIP publisher still holds its name; log:\n{}",
            server.log()
        )
    });
    let (status, answer) = post(&whip, "application/sdp", CHROMIUM_OFFER);
    assert_eq!(status, 201, "the name is free again: {answer}");
}
