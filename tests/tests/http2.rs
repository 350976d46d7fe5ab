//! HTTP/2 on the delivery port (issue 47), with curl as the client:
//! - h2c with prior knowledge on the plain port and h2 by ALPN on the TLS port serve the
//!   HLS master and media playlists, segments, LL-HLS blocking reloads and parts, DASH
//!   and WHEP signaling, while HTTP/1.1 on the same ports answers as before;
//! - Chromium negotiates h2 over TLS and plays LL-HLS in hls.js and Shaka Player (both in
//!   `lowLatencyMode`) and DASH in dash.js over it;
//! - hostile HTTP/2 clients (raw frames, `common::h2_raw`) are bounded per connection and
//!   per stream: more streams than allowed are refused, a rapid-reset storm ends its
//!   connection, an oversized header block and a CONTINUATION flood are refused,
//!   readers that never read hold shared references to a segment (flow control), not
//!   copies, an idle connection is closed after `http_header_timeout`; through all of it, other
//!   clients are served by the same delivery worker.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::browser::{
    DASH_JS, SHAKA_JS, playback_problems, require_browser, run_script, serve_player,
};
use common::h2_raw::{
    CONTINUATION, GOAWAY, HEADERS, REFUSED_STREAM, RST_STREAM, RawH2, request_block,
};
use common::media::{publish, rtmp_url};
use common::{Server, free_port, require_tool, wait_for};
use std::process::Command;
use std::time::{Duration, Instant};

const LIVE: Duration = Duration::from_secs(40);

/// A server with RTMP, HLS + LL-HLS + DASH in 2 s segments, WebRTC, an HTTPS port with a
/// self-signed certificate (returned), and `extra` strom.conf lines.
fn start(extra: &str) -> (Server, u16) {
    let mut server = Server::prepare(extra);
    let ssl_port = free_port();
    let dir = server.dir.path().to_path_buf();
    common::self_signed_certificate(&dir, "localhost", "cert.pem", "key.pem");
    let conf = std::fs::read_to_string(dir.join("strom.conf")).unwrap();
    std::fs::write(
        dir.join("strom.conf"),
        format!("{conf}ssl_port = {ssl_port}\nssl_certificate = cert.pem\nssl_certificate_key = key.pem\n"),
    )
    .unwrap();
    let ice = free_port();
    std::fs::write(
        dir.join("rules.conf"),
        format!(
            r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
 "WebRtcSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {ice}}}]}},
 "Delivery": {{"outputs": ["HLS", "LLHLS", "DASH"], "segment_duration_secs": 2}}}}"#,
            server.ports.rtmp
        ),
    )
    .unwrap();
    server.spawn();
    server.wait_ready();
    (server, ssl_port)
}

/// curl with `args` before `url`: the HTTP version it spoke, the status and the body.
fn curl(args: &[&str], url: &str) -> (String, u16, String) {
    require_tool("curl", "curl");
    let output = Command::new("curl")
        .args([
            "-sS",
            "--max-time",
            "20",
            "-w",
            "\n%{http_version} %{http_code}",
        ])
        .args(args)
        .arg(url)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let (body, tail) = text.rsplit_once('\n').unwrap_or(("", &text));
    let (version, status) = tail.split_once(' ').unwrap_or(("", "0"));
    (
        version.to_owned(),
        status.trim().parse().unwrap_or(0),
        body.to_owned(),
    )
}

const H2C: &[&str] = &["--http2-prior-knowledge"];

/// The first line of `playlist` that is a URI (not a tag).
fn first_uri(playlist: &str) -> Option<&str> {
    playlist
        .lines()
        .find(|l| !l.starts_with('#') && !l.trim().is_empty())
}

#[test]
fn h2c_and_h2_over_tls_serve_hls_ll_hls_dash_and_whep_as_http1_does() {
    let (server, ssl_port) = start("");
    let _publisher = publish(&rtmp_url(&server, "live/cam"));
    let plain = format!("http://127.0.0.1:{}/live/cam", server.ports.http);
    let chunklist = wait_for(LIVE, "an LL-HLS playlist with 2 segments over h2c", || {
        let (version, status, master) = curl(H2C, &format!("{plain}/playlist_fmp4.m3u8"));
        if status != 200 {
            return None;
        }
        assert_eq!(version, "2", "h2c prior knowledge");
        let url = format!("{plain}/{}", first_uri(&master)?);
        let (_, status, media) = curl(H2C, &url);
        (status == 200 && media.matches("#EXTINF").count() >= 2).then_some(url)
    })
    .unwrap_or_else(|| panic!("no LL-HLS playlist over h2c\n{}", server.log()));

    // A blocking reload for the next segment, held and answered over HTTP/2.
    let (_, _, media) = curl(H2C, &chunklist);
    let sequence: u64 = media
        .lines()
        .find_map(|l| l.strip_prefix("#EXT-X-MEDIA-SEQUENCE:"))
        .unwrap()
        .parse()
        .unwrap();
    let next = sequence + media.matches("#EXTINF").count() as u64;
    let (version, status, held) = curl(H2C, &format!("{chunklist}&_HLS_msn={next}"));
    assert_eq!((version.as_str(), status), ("2", 200), "{held}");
    assert!(held.contains(&format!("seg_{next}.m4s")), "{held}");
    let part = held
        .lines()
        .filter_map(|l| l.strip_prefix("#EXT-X-PART:"))
        .filter_map(|a| a.split('"').nth(1))
        .next_back()
        .unwrap_or_else(|| panic!("no part listed: {held}"));
    for path in [
        part.to_owned(),
        format!("seg_{next}.m4s"),
        "manifest.mpd".to_owned(),
        "playlist.m3u8".to_owned(),
    ] {
        let (version, status, _) = curl(H2C, &format!("{plain}/{path}"));
        assert_eq!((version.as_str(), status), ("2", 200), "{path} over h2c");
    }

    // TLS: ALPN picks h2 for a client that offers it, HTTP/1.1 for one that does not.
    let tls = format!("https://127.0.0.1:{ssl_port}/live/cam/playlist_fmp4.m3u8");
    let (version, status, _) = curl(&["-k", "--http2"], &tls);
    assert_eq!((version.as_str(), status), ("2", 200), "h2 by ALPN");
    let (version, status, _) = curl(&["-k", "--http1.1"], &tls);
    assert_eq!(
        (version.as_str(), status),
        ("1.1", 200),
        "HTTP/1.1 over TLS"
    );
    let (version, status, _) = curl(&["--http1.1"], &format!("{plain}/playlist.m3u8"));
    assert_eq!(
        (version.as_str(), status),
        ("1.1", 200),
        "HTTP/1.1 in the clear"
    );

    // WHEP signaling over HTTP/2: the offer reaches the webrtc worker, the answer and
    // its Location come back.
    let offer = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/webrtc/chromium_whep_offer.sdp"
    );
    let (version, status, answer) = curl(
        &[
            "--http2-prior-knowledge",
            "-X",
            "POST",
            "-H",
            "Content-Type: application/sdp",
            "--data-binary",
            &format!("@{offer}"),
            "-D",
            "/dev/stderr",
        ],
        &format!("{plain}/whep.stream"),
    );
    assert_eq!(
        (version.as_str(), status),
        ("2", 201),
        "WHEP over h2c: {answer}"
    );
    assert!(answer.starts_with("v=0"), "{answer}");
}

/// The delivery worker's pid, to show that hostile clients did not restart it.
fn delivery_pid(server: &Server) -> i32 {
    server.worker_pid("packager")
}

#[test]
fn hostile_http2_clients_are_bounded_and_others_are_still_served() {
    let (server, _) = start("http_header_timeout = 3");
    let _publisher = publish(&rtmp_url(&server, "live/cam"));
    let port = server.ports.http;
    let playlist = format!("http://127.0.0.1:{port}/live/cam/playlist.m3u8");
    wait_for(LIVE, "the stream over h2c", || {
        (curl(H2C, &playlist).1 == 200).then_some(())
    })
    .unwrap_or_else(|| panic!("no playlist\n{}", server.log()));
    let pid = delivery_pid(&server);

    // More streams than allowed: 150 LL-HLS reloads held for a segment two ahead, on
    // one connection; the ones past 100 are refused by the protocol.
    let (_, _, media) = curl(
        H2C,
        &format!("http://127.0.0.1:{port}/live/cam/chunks_fmp4.m3u8"),
    );
    let sequence: u64 = media
        .lines()
        .find_map(|l| l.strip_prefix("#EXT-X-MEDIA-SEQUENCE:"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not an LL-HLS playlist: {media}"));
    let ahead = sequence + media.matches("#EXTINF").count() as u64 + 1;
    let held = format!("/live/cam/chunks_fmp4.m3u8?_HLS_msn={ahead}");
    let mut greedy = RawH2::connect(port);
    for n in 0..150u32 {
        greedy.get(2 * n + 1, &held);
    }
    let frames = greedy.read_until(Duration::from_secs(20), |frames| {
        frames
            .iter()
            .filter(|f| f.kind == RST_STREAM && f.error_code() == Some(REFUSED_STREAM))
            .count()
            >= 50
    });
    let refused = frames
        .iter()
        .filter(|f| f.kind == RST_STREAM && f.error_code() == Some(REFUSED_STREAM))
        .count();
    assert!(
        refused >= 50,
        "streams past 100 refused: {refused} ({} frames)",
        frames.len()
    );
    assert_eq!(
        curl(H2C, &playlist).1,
        200,
        "served while a connection holds 100 streams"
    );
    drop(greedy);

    // Rapid reset: requests cancelled as soon as they are sent. The connection ends
    // (GOAWAY, or hung up) long before the storm's end.
    let mut storm = RawH2::connect(port);
    let mut sent = 0u32;
    while sent < 20_000 && !storm.closed {
        let id = 2 * sent + 1;
        storm.get(id, "/live/cam/playlist.m3u8");
        storm.reset(id, common::h2_raw::CANCEL);
        sent += 1;
    }
    let frames = storm.read_until(Duration::from_secs(10), |frames| {
        frames.iter().any(|f| f.kind == GOAWAY)
    });
    assert!(
        storm.closed || frames.iter().any(|f| f.kind == GOAWAY),
        "a rapid-reset storm of {sent} streams was served to the end"
    );
    assert_eq!(
        curl(H2C, &playlist).1,
        200,
        "served after a rapid-reset storm"
    );

    // A 100 KiB header block (HEADERS + CONTINUATION) is refused, not buffered.
    let mut large = RawH2::connect(port);
    let value = "x".repeat(100 * 1024);
    let block = request_block("/live/cam/playlist.m3u8", &[("x-large", &value)]);
    let chunks: Vec<&[u8]> = block.chunks(16 * 1024).collect();
    for (i, chunk) in chunks.iter().enumerate() {
        let kind = if i == 0 { HEADERS } else { CONTINUATION };
        let end = if i + 1 == chunks.len() { 0x4 | 0x1 } else { 0 };
        large.frame(kind, end, 1, chunk);
    }
    let frames = large.read_until(Duration::from_secs(10), |frames| {
        frames.iter().any(|f| {
            f.stream == 1 && (f.kind == HEADERS || f.kind == RST_STREAM) || f.kind == GOAWAY
        })
    });
    let answer = frames
        .iter()
        .find(|f| f.stream == 1 && (f.kind == HEADERS || f.kind == RST_STREAM) || f.kind == GOAWAY);
    match answer {
        // A response: `:status` 431, a literal (the static table has no 431), its value
        // plain or Huffman-coded ("431" is 0x69 0x90 then padding).
        Some(f) if f.kind == HEADERS => assert!(
            f.payload.windows(3).any(|w| w == b"431")
                || f.payload.windows(4).any(|w| w == [0x83, 0x69, 0x90, 0xff]),
            "oversized headers answered {:?}",
            f.payload
        ),
        Some(_) => {}
        None => assert!(
            large.closed,
            "oversized headers neither refused nor answered"
        ),
    }

    // A CONTINUATION flood: a header block that never ends.
    let mut flood = RawH2::connect(port);
    flood.frame(
        HEADERS,
        0,
        1,
        &request_block("/live/cam/playlist.m3u8", &[]),
    );
    let filler = vec![0x40u8; 16 * 1024];
    let mut flooded = 0usize;
    while flooded < 64 * 1024 * 1024 && !flood.closed {
        flood.frame(CONTINUATION, 0, 1, &filler);
        flooded += filler.len();
    }
    let frames = flood.read_until(Duration::from_secs(10), |frames| {
        frames.iter().any(|f| f.kind == GOAWAY)
    });
    assert!(
        flood.closed || frames.iter().any(|f| f.kind == GOAWAY),
        "a CONTINUATION flood of {flooded} bytes was taken in"
    );

    // Readers that stop reading: 5 connections each ask for one segment on 100 streams
    // and never read a byte. Flow control holds what the server sends (64 KiB per
    // connection); the rest waits in the send buffers as shared references to the one
    // segment in memory, not 500 copies, and everyone else is served meanwhile.
    let (_, _, listed) = curl(
        H2C,
        &format!("http://127.0.0.1:{port}/live/cam/chunks_fmp4.m3u8"),
    );
    let segment = first_uri(&listed)
        .unwrap_or_else(|| panic!("no segment in {listed}"))
        .to_owned();
    let (_, status, body) = curl(H2C, &format!("http://127.0.0.1:{port}/live/cam/{segment}"));
    assert_eq!(status, 200, "segment {segment}");
    let segment_length = body.len();
    let before = common::rss(pid);
    let stalled: Vec<RawH2> = (0..5)
        .map(|_| {
            let mut reader = RawH2::connect(port);
            for n in 0..100u32 {
                reader.get(2 * n + 1, &format!("/live/cam/{segment}"));
            }
            reader
        })
        .collect();
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        curl(H2C, &playlist).1,
        200,
        "served while 500 streams are not read"
    );
    let grown = common::rss(pid).saturating_sub(before);
    assert!(
        grown < 64 * 1024 * 1024,
        "500 unread responses of a {segment_length}-byte segment grew the delivery worker by {grown} bytes"
    );
    drop(stalled);

    // An idle connection (preface and settings, then nothing, not even a PING
    // acknowledged) is told to go away after http_header_timeout (3 s here), like an
    // idle HTTP/1.1 keep-alive, and dropped a few seconds later.
    let mut idle = RawH2::connect(port);
    let opened = Instant::now();
    let frames = idle.read_until(Duration::from_secs(30), |frames| {
        frames.iter().any(|f| f.kind == GOAWAY)
    });
    let told = opened.elapsed();
    assert!(
        frames.iter().any(|f| f.kind == GOAWAY) && told >= Duration::from_secs(2),
        "an idle HTTP/2 connection: {frames:?} after {told:?}"
    );
    idle.read_until(Duration::from_secs(30), |_| false);
    assert!(
        idle.closed,
        "an idle HTTP/2 connection was kept 30 s after its GOAWAY"
    );

    assert_eq!(curl(H2C, &playlist).1, 200);
    assert_eq!(delivery_pid(&server), pid, "the delivery worker restarted");
}

/// Chromium, which offers h2 by ALPN to an HTTPS origin, plays LL-HLS in hls.js and
/// Shaka Player and DASH in dash.js from the TLS port, and every request of it went over
/// HTTP/2.
#[test]
fn chromium_plays_ll_hls_and_dash_over_h2() {
    require_browser(&[
        "hls.js/dist/hls.min.js",
        DASH_JS.trim_start_matches("node_modules/"),
        SHAKA_JS.trim_start_matches("node_modules/"),
    ]);
    let page_port = free_port();
    let page_origin = format!("http://127.0.0.1:{page_port}");
    let (server, ssl_port) = start(&format!("access_control_allow_origin = {page_origin}"));
    serve_player(page_port);
    let _publisher = publish(&rtmp_url(&server, "live/cam"));
    let stream_origin = format!("https://127.0.0.1:{ssl_port}");
    wait_for(LIVE, "two segments over h2", || {
        let (_, status, media) = curl(
            &["-k", "--http2"],
            &format!("{stream_origin}/live/cam/chunks_fmp4.m3u8"),
        );
        (status == 200 && media.matches("#EXTINF").count() >= 2).then_some(())
    })
    .unwrap_or_else(|| panic!("no playlist over h2\n{}", server.log()));
    let shots = tempfile::tempdir().unwrap();
    let mut problems = Vec::new();
    for (name, page) in [
        (
            "hls.js LL-HLS",
            format!("index.html?src={stream_origin}/live/cam/playlist_fmp4.m3u8&lowLatency=1"),
        ),
        (
            "Shaka Player LL-HLS",
            format!("shaka.html?src={stream_origin}/live/cam/playlist_fmp4.m3u8&lowLatency=1"),
        ),
        (
            "dash.js",
            format!("dash.html?src={stream_origin}/live/cam/manifest.mpd"),
        ),
    ] {
        let shot = shots.path().join("h2.png");
        let url = format!("{page_origin}/{page}");
        match run_script("play.mjs", &[&url, &shot.to_string_lossy()], 90) {
            Ok(result) => {
                for problem in playback_problems(&result, 5.0, &stream_origin, &page_origin) {
                    problems.push(format!("{name}: {problem}"));
                }
                if result["protocols"] != serde_json::json!(["h2"]) {
                    problems.push(format!("{name}: protocols {}", result["protocols"]));
                }
            }
            Err(e) => problems.push(format!("{name}: {e}")),
        }
    }
    assert!(problems.is_empty(), "{problems:?}\nlog:\n{}", server.log());
}
