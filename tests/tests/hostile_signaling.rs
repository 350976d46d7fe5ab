//! Hostile WHEP/WHIP signaling against the packager (the delivery port's proxy to the
//! webrtc worker): what a signaling request may make the packager hold is bounded
//! before its body is read. With WebRTC off a huge declared body is answered 404 at
//! once; with WebRTC on a body declared over `max_sdp_bytes` 413 at once; one address's
//! slow requests past its byte budget 503 (with `Retry-After`), the rest cut at
//! `http_header_timeout` (408), while other addresses and HLS viewers are served and the
//! packager's peak memory stays far below what the bodies would take; and under a low
//! descriptor limit, offers waiting for a stream that is not live are capped (503 past
//! the cap) so that HLS keeps serving and nothing in the server runs out of descriptors.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::http::keep_alive_get;
use common::media::{Proc, publish, rtmp_url, wait_live};
use common::{Server, connect_from, curl_raw, free_port, require_tool, strom_bin, wait_for};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

const LIVE: Duration = Duration::from_secs(40);
/// A real offer from Chromium (video and audio, recvonly).
const CHROMIUM_OFFER: &str = include_str!("webrtc/chromium_whep_offer.sdp");
/// The packager's byte budget for one client address's pending signaling requests
/// (`workers/http/src/webrtc_proxy/limits.rs`, `PER_ADDRESS_BYTES`).
const PER_ADDRESS_BYTES: usize = 1024 * 1024;

/// Rules with HLS and WebRTC on the loopback ICE port `ice`, `limits` as given.
fn webrtc_rules(server: &Server, ice: u16, limits: &str) -> String {
    format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
 "Delivery": {{"outputs": ["HLS"], "segment_duration_secs": 1}},
 "WebRtcSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {ice}}}], "limits": {{{limits}}}}}}}"#,
        server.ports.rtmp
    )
}

/// Sends a request head (and `body`, possibly only part of what `Content-Length`
/// declares) in one write; write errors are ignored (a refused request's connection
/// may be closed while its body is still being sent).
fn send(stream: &mut TcpStream, method: &str, path: &str, headers: &str, body: &[u8]) {
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/sdp\r\n{headers}\r\n"
    )
    .into_bytes();
    request.extend_from_slice(body);
    let _ = stream.write_all(&request);
}

/// The answer on `stream`: status, head (lowercase) and body; `None` when the
/// connection ended or timed out without a complete head.
fn answer(stream: &TcpStream) -> Option<(u16, String, String)> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if line == "\r\n" {
            break;
        }
        head.push_str(&line.to_ascii_lowercase());
    }
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some((status, head, String::from_utf8_lossy(&body).into_owned()))
}

/// A connection from `source` with a 30 s read timeout (a guard against a hang: every
/// answer the tests wait for comes within the server's own timeouts).
fn client(source: &str, port: u16) -> TcpStream {
    let stream = connect_from(source, port);
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream
        .set_write_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream
}

/// The packager's peak resident memory (`VmHWM`), bytes.
fn peak_rss(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb * 1024
}

fn media_sequence(playlist: &str) -> Option<u64> {
    playlist
        .lines()
        .find_map(|l| l.strip_prefix("#EXT-X-MEDIA-SEQUENCE:"))
        .and_then(|n| n.trim().parse().ok())
}

/// An HLS viewer on its own kept-alive connection from `source`, once the playlist of
/// `live/tv` is there; its media sequence number.
struct Viewer {
    stream: TcpStream,
    reader: BufReader<TcpStream>,
}

impl Viewer {
    fn connect(server: &Server, source: &str) -> (Self, u64) {
        let stream = client(source, server.ports.http);
        let reader = BufReader::new(stream.try_clone().unwrap());
        let mut viewer = Viewer { stream, reader };
        let first = wait_for(LIVE, "the HLS viewer's playlist", || viewer.playlist())
            .unwrap_or_else(|| panic!("no playlist; log:\n{}", server.log()));
        (viewer, first)
    }

    /// The media sequence number of a 200 answer.
    fn playlist(&mut self) -> Option<u64> {
        let (status, body) = keep_alive_get(
            &mut self.stream,
            &mut self.reader,
            "/live/tv/chunks.m3u8",
            "viewer",
        );
        (status == 200).then(|| media_sequence(&body)).flatten()
    }

    /// Waits until the playlist moves past `first` (segments are still being cut).
    fn moves_past(&mut self, server: &Server, first: u64) {
        wait_for(LIVE, "the HLS playlist moving on", || {
            let now = self.playlist()?;
            (now > first).then_some(())
        })
        .unwrap_or_else(|| panic!("HLS stopped at {first}; log:\n{}", server.log()));
    }
}

/// Waits until every worker (the webrtc worker included) reports ready.
fn wait_all_ready(server: &Server, count: usize) {
    wait_for(LIVE, "every worker ready", || {
        let (_, workers) = server.try_get("/manage/workers")?;
        let workers = workers.as_array()?;
        (workers.len() == count && workers.iter().all(|w| w["state"] == "ready")).then_some(())
    })
    .unwrap_or_else(|| panic!("workers not ready; log:\n{}", server.log()));
}

#[test]
fn with_webrtc_off_a_huge_declared_body_is_refused_unread() {
    let server = Server::start("");
    server.wait_ready();
    let port = server.ports.http;
    // Only the head: a server that waits for the 10 MB first never answers.
    for path in ["/live/cam/whep.stream", "/live/cam/whip.stream"] {
        let mut stream = client("127.0.0.1", port);
        send(
            &mut stream,
            "POST",
            path,
            "Content-Length: 10000000\r\n",
            b"",
        );
        let (status, _, body) = answer(&stream)
            .unwrap_or_else(|| panic!("no answer to {path}; log:\n{}", server.log()));
        assert_eq!(status, 404, "{path}: {body}");
        assert!(body.contains("WebRTC is not enabled"), "{body}");
    }
    // A chunked body that never comes.
    let mut stream = client("127.0.0.1", port);
    send(
        &mut stream,
        "POST",
        "/live/cam/whep.stream",
        "Transfer-Encoding: chunked\r\n",
        b"",
    );
    let (status, _, body) = answer(&stream).expect("an answer to a chunked offer");
    assert_eq!(status, 404, "{body}");
}

/// WebRTC on (1,000 sessions per address), every worker ready, `live/tv` published over
/// RTMP and an HLS viewer from 127.0.0.7 on it: the publisher (kept for the test), the
/// viewer and its first answer.
fn live_with_webrtc(server: &Server) -> (Proc, Viewer, u64) {
    let ice = free_port();
    server.apply_rules(&webrtc_rules(server, ice, r#""max_sessions_per_ip": 1000"#));
    wait_all_ready(server, common::WORKER_KINDS.len());
    let publisher = publish(&rtmp_url(server, "live/tv"));
    wait_live(server, "live", "tv", LIVE).unwrap_or_else(|| panic!("{}", server.log()));
    let (viewer, first) = Viewer::connect(server, "127.0.0.7");
    (publisher, viewer, first)
}

#[test]
fn signaling_budgets_refuse_early_and_hls_keeps_serving() {
    // The server's own limit (inherited) must fit the floods' sockets too.
    let (_, hard) =
        nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).unwrap();
    nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE, hard, hard).unwrap();
    // Slow bodies are cut after 10 s (http_header_timeout).
    let server = Server::start("http_header_timeout = 10");
    server.wait_ready();
    let (_publisher, mut viewer, first) = live_with_webrtc(&server);
    let port = server.ports.http;
    let packager = server.worker_pid("packager");

    let peak_before = peak_rss(packager);
    let rss_before = common::rss(packager);

    // 600 clients from 20 addresses declaring 1 MiB bodies and sending half: before
    // these limits the packager buffered each (600 of them took it from 208 to 767 MB).
    let half = vec![b'a'; 512 * 1024];
    let mut oversized = Vec::new();
    for i in 0..600 {
        let mut stream = client(&format!("127.0.1.{}", 1 + i % 20), port);
        send(
            &mut stream,
            "POST",
            "/live/tv/whep.stream",
            "Content-Length: 1048576\r\n",
            &half,
        );
        oversized.push(stream);
    }
    // 60 slow offers from one address, each declaring 30,000 bytes and sending 1,000:
    // the address's budget admits as many as fit, the rest are refused at once.
    let declared = 30_000;
    let mut slow = Vec::new();
    for _ in 0..60 {
        let mut stream = client("127.0.2.1", port);
        send(
            &mut stream,
            "POST",
            "/live/tv/whep.stream",
            &format!("Content-Length: {declared}\r\n"),
            &[b'v'; 1000],
        );
        slow.push(stream);
    }

    // Meanwhile another address signals normally and HLS serves.
    let (status, answer_sdp) = curl_raw(&[
        "--interface",
        "127.0.2.2",
        "-X",
        "POST",
        "-H",
        "Content-Type: application/sdp",
        "--data-binary",
        CHROMIUM_OFFER,
        &format!("http://127.0.0.1:{port}/live/tv/whep.stream"),
    ]);
    assert_eq!(status, 201, "another address's offer: {answer_sdp}");
    assert!(
        viewer.playlist().is_some(),
        "HLS while signaling is flooded"
    );

    let mut statuses = std::collections::BTreeMap::new();
    for stream in &oversized {
        let status = answer(stream).map_or(0, |(status, _, _)| status);
        *statuses.entry(status).or_insert(0) += 1;
    }
    let admitted = PER_ADDRESS_BYTES / declared;
    let (mut refused, mut cut, mut other) = (0, 0, Vec::new());
    for stream in &slow {
        match answer(stream) {
            Some((503, head, _)) if head.contains("retry-after:") => refused += 1,
            Some((408, _, _)) => cut += 1,
            answer => other.push(answer),
        }
    }
    let peak_after = peak_rss(packager);
    let rss_after = common::rss(packager);
    eprintln!(
        "packager RSS {} -> {} MB, peak {} -> {} MB",
        rss_before >> 20,
        rss_after >> 20,
        peak_before >> 20,
        peak_after >> 20
    );
    assert_eq!(
        statuses,
        [(413, 600)].into_iter().collect(),
        "every oversized body refused on its head (0: no answer)"
    );
    assert!(other.is_empty(), "unexpected answers: {other:?}");
    assert_eq!(
        (refused, cut),
        (60 - admitted, admitted),
        "past the address's budget: 503 with Retry-After; the admitted ones cut at the timeout (408)"
    );
    // A quarter of what 600 bodies of 1 MiB would take.
    assert!(
        peak_after.saturating_sub(peak_before) < 150 << 20,
        "the packager's peak memory grew by {} MB",
        (peak_after - peak_before) >> 20
    );
    drop(oversized);
    // A declared body over max_sdp_bytes (32768 by default): 413 on the head alone, at
    // once (a server waiting for the body would never answer).
    let mut stream = client("127.0.0.1", port);
    send(
        &mut stream,
        "POST",
        "/live/tv/whep.stream",
        "Content-Length: 10000000\r\n",
        b"",
    );
    let (status, _, body) = answer(&stream).expect("an answer to an oversized offer");
    assert_eq!(status, 413, "{body}");

    viewer.moves_past(&server, first);
    assert_eq!(
        server.worker_pid("packager"),
        packager,
        "packager restarted"
    );
}

/// Descriptors the process `pid` has open.
fn open_descriptors(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|dir| dir.count())
        .unwrap_or(0)
}

/// An offer for `/live/absent<i>`, a stream that is not live.
fn send_offer(stream: &mut TcpStream, i: usize) {
    send(
        stream,
        "POST",
        &format!("/live/absent{i}/whep.stream"),
        &format!("Content-Length: {}\r\n", CHROMIUM_OFFER.len()),
        CHROMIUM_OFFER.as_bytes(),
    );
}

/// The answers to a round of offers for streams that are not live.
#[derive(Debug, Default)]
struct Tally {
    /// Admitted: answered 404 by the worker once its wait for the stream ended.
    not_live: usize,
    /// 503 (with `Retry-After`): too many signaling requests pending.
    pending_cap: usize,
    /// 503 (with `Retry-After`): no descriptor slot for the socket to the worker.
    no_descriptor: usize,
    other: Vec<Option<(u16, String)>>,
}

fn tally(offers: &[TcpStream]) -> Tally {
    let mut tally = Tally::default();
    for stream in offers {
        match answer(stream) {
            Some((404, _, body)) if body.contains("not live") => tally.not_live += 1,
            Some((503, head, body)) if head.contains("retry-after:") => {
                if body.contains("pending") {
                    tally.pending_cap += 1;
                } else if body.contains("no descriptor") {
                    tally.no_descriptor += 1;
                } else {
                    tally.other.push(Some((503, body)));
                }
            }
            answer => tally
                .other
                .push(answer.map(|(status, _, body)| (status, body))),
        }
    }
    tally
}

#[test]
fn pending_offers_under_a_low_descriptor_limit_leave_hls_serving() {
    /// strom's descriptor limit: a budget of 192 per worker, 48 pending signaling
    /// requests (a quarter of it).
    const NOFILE: u32 = 256;
    const MAX_PENDING: usize = 48;
    /// Offers for streams that are not live (each waits 8 s in the webrtc worker).
    const OFFERS: usize = 120;
    /// Idle connections and offers of the second round: with the viewer, 171 of the
    /// budget's 192 places, so about 21 sockets to the worker fit.
    const IDLE: usize = 140;
    const ROUND_TWO: usize = 30;
    require_tool("prlimit", "util-linux");
    let mut server = Server::prepare("");
    let log = std::fs::File::create(server.log_path()).unwrap();
    let child = Command::new("prlimit")
        .arg(format!("--nofile={NOFILE}:{NOFILE}"))
        .arg("--")
        .arg(strom_bin())
        .arg("run")
        .arg("--config")
        .arg(server.path("strom.conf"))
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    server.child = Some(child);
    server.wait_ready();
    let (_publisher, mut viewer, first) = live_with_webrtc(&server);
    let port = server.ports.http;
    let packager = server.worker_pid("packager");

    let baseline = open_descriptors(packager);

    // Round 1, past the pending cap: from four addresses, so that no address's own
    // budget is what refuses them.
    let mut offers: Vec<TcpStream> = (0..OFFERS)
        .map(|i| client(&format!("127.0.4.{}", 1 + i % 4), port))
        .collect();
    for (i, stream) in offers.iter_mut().enumerate() {
        send_offer(stream, i);
    }
    // While they are pending: the viewer plays on, and a new HLS client is served.
    assert!(viewer.playlist().is_some(), "HLS while offers are pending");
    let (status, _) = curl_raw(&[
        "--interface",
        "127.0.0.8",
        &format!("http://127.0.0.1:{port}/live/tv/playlist.m3u8"),
    ]);
    assert_eq!(status, 200, "a new HLS client while offers are pending");
    let round = tally(&offers);
    eprintln!("past the pending cap: {round:?}");
    assert!(
        round.other.is_empty() && round.no_descriptor == 0,
        "{round:?}; log:\n{}",
        server.log()
    );
    assert!(
        round.not_live <= MAX_PENDING && round.pending_cap >= OFFERS - MAX_PENDING,
        "{round:?}"
    );
    drop(offers);
    wait_for(LIVE, "the offers' descriptors closed", || {
        (open_descriptors(packager) <= baseline + 4).then_some(())
    })
    .unwrap_or_else(|| panic!("descriptors left open: {}", open_descriptors(packager)));

    // Round 2, past the descriptor budget: idle connections and the offers' own take
    // all but a few slots before the offers are sent, so the sockets to the worker run
    // out first.
    let idle: Vec<TcpStream> = (0..IDLE).map(|_| client("127.0.5.1", port)).collect();
    let mut offers: Vec<TcpStream> = (0..ROUND_TWO)
        .map(|i| client(&format!("127.0.6.{}", 1 + i % 4), port))
        .collect();
    wait_for(LIVE, "the connections accepted", || {
        (open_descriptors(packager) >= baseline + IDLE + ROUND_TWO).then_some(())
    })
    .unwrap_or_else(|| panic!("connections not accepted; log:\n{}", server.log()));
    for (i, stream) in offers.iter_mut().enumerate() {
        send_offer(stream, OFFERS + i);
    }
    assert!(viewer.playlist().is_some(), "HLS with the budget used up");
    let round = tally(&offers);
    eprintln!("past the descriptor budget: {round:?}");
    assert!(
        round.other.is_empty() && round.pending_cap == 0,
        "{round:?}; log:\n{}",
        server.log()
    );
    assert!(
        round.no_descriptor >= 1 && round.not_live + round.no_descriptor == ROUND_TWO,
        "{round:?}"
    );
    drop(idle);
    viewer.moves_past(&server, first);
    let log = server.log();
    assert!(
        !log.contains("Too many open files") && !log.contains("descriptors exhausted"),
        "the server ran out of descriptors:\n{log}"
    );
    assert!(log.contains("WHEP/WHIP signaling requests capped"), "{log}");
    assert_eq!(
        server.worker_pid("packager"),
        packager,
        "packager restarted"
    );
}
