//! MPEG-TS out over SRT, RIST and UDP (`TsOutputs`), for a stream published over RTMP:
//! ffmpeg reads 10 s from strom's SRT listener (choosing the stream with `streamid`,
//! with and without a passphrase) and decodes 10 s received from a RIST push (through
//! `ristreceiver`) and a UDP push, without an error; `srt-live-transmit` receives strom's SRT push; `srt_sender_stats`
//! has non-zero send counters in strict types; SRT viewers are sessions and
//! `sessions/delete` ends exactly the chosen one; a constant-rate UDP output keeps its
//! mux rate.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{Proc, publish, rtmp_url, wait_live};
use common::{Server, free_port, require_tool, wait_for};
use std::net::UdpSocket;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const LIVE: Duration = Duration::from_secs(40);
const PASSPHRASE: &str = "out-secret-0123";

/// A server with `outputs` (JSON entries of `TsOutputs`) and `live/tv` published.
fn start(outputs: &str) -> (Server, Proc) {
    let server = Server::start("");
    server.apply_rules(&format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
 "Delivery": {{"outputs": []}},
 "TsOutputs": [{outputs}]}}"#,
        server.ports.rtmp
    ));
    let publisher = publish(&rtmp_url(&server, "live/tv"));
    wait_live(&server, "live", "tv", LIVE)
        .unwrap_or_else(|| panic!("not live; log:\n{}", server.log()));
    (server, publisher)
}

/// ffmpeg reads 10 s of `url` and must finish without a single error line.
fn decodes_ten_seconds(server: &Server, url: &str, input_options: &[&str]) {
    require_tool("ffmpeg", "ffmpeg");
    let output = Command::new("timeout")
        .args(["60", "ffmpeg", "-hide_banner", "-nostdin", "-v", "error"])
        .args(input_options)
        .args(["-i", url, "-t", "10", "-f", "null", "-"])
        .output()
        .unwrap();
    assert!(
        output.status.success() && output.stderr.is_empty(),
        "{url}: {}\nlog:\n{}",
        String::from_utf8_lossy(&output.stderr),
        server.log()
    );
}

fn srt_url(port: u16, stream_id: &str, passphrase: Option<&str>) -> String {
    let mut url = format!("srt://127.0.0.1:{port}?mode=caller&streamid={stream_id}");
    if let Some(passphrase) = passphrase {
        url.push_str(&format!("&passphrase={passphrase}"));
    }
    url
}

fn srt_sessions(server: &Server) -> Vec<serde_json::Value> {
    let (_, sessions) = server.get("/manage/sessions");
    sessions
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["type"] == "SRT")
        .cloned()
        .collect()
}

#[test]
fn srt_listeners_serve_streams_by_streamid_with_stats_and_sessions() {
    let (open_port, secret_port) = (free_port(), free_port());
    let (server, _publisher) = start(&format!(
        r#"{{"id": "open", "protocol": "srt", "mode": "listen", "ip": "127.0.0.1", "port": {open_port}}},
           {{"id": "secret", "protocol": "srt", "mode": "listen", "ip": "127.0.0.1", "port": {secret_port},
             "app": "live", "stream": "tv", "parameters": [{{"name": "passphrase", "value": "{PASSPHRASE}"}}]}}"#
    ));
    decodes_ten_seconds(
        &server,
        &srt_url(open_port, "#!::r=live/tv,m=request", None),
        &[],
    );
    decodes_ten_seconds(&server, &srt_url(secret_port, "", Some(PASSPHRASE)), &[]);

    // Two viewers: stats with send counters, two sessions, one of them deleted.
    let viewer = || {
        quiet(
            Command::new("ffmpeg")
                .args(["-hide_banner", "-nostdin", "-v", "error", "-i"])
                .arg(srt_url(open_port, "#!::r=live/tv,m=request", None))
                .args(["-f", "null", "-"]),
        )
    };
    let (mut first, mut second) = (viewer(), viewer());
    let stats = wait_for(LIVE, "two SRT senders sending", || {
        let (_, body) = server.try_get("/manage/srt_sender_stats")?;
        let senders = body["SrtSenders"].as_array()?.clone();
        (senders.len() == 2
            && senders
                .iter()
                .all(|s| s["stats"]["send"]["bytesSent"].as_i64() > Some(10_000)))
        .then_some(senders)
    })
    .unwrap_or_else(|| panic!("no sender stats; log:\n{}", server.log()));
    let entry = &stats[0];
    assert_eq!(entry["state"], "connected", "{entry}");
    assert!(
        entry["id"].as_str().unwrap().starts_with("127.0.0.1:"),
        "{entry}"
    );
    let send = &entry["stats"]["send"];
    for field in [
        "bytesSent",
        "bytesRetransmitted",
        "bytesDropped",
        "NAKsReceived",
    ] {
        assert!(send[field].is_i64(), "{field}: {entry}");
    }
    assert!(send["mbpsRate"].is_f64(), "{entry}");
    assert!(send["packetsSent"].as_i64() > Some(10), "{entry}");
    assert!(entry["stats"]["link"]["rtt"].is_f64(), "{entry}");
    assert!(
        entry["stats"]["link"]["mbpsMaxBandwidth"].is_i64(),
        "{entry}"
    );
    assert!(entry["stats"]["window"]["flight"].is_i64(), "{entry}");
    assert!(entry["stats"]["time"].is_i64(), "{entry}");

    let sessions = wait_for(LIVE, "two SRT sessions", || {
        let sessions = srt_sessions(&server);
        (sessions.len() == 2).then_some(sessions)
    })
    .unwrap_or_else(|| panic!("{:?}", srt_sessions(&server)));
    assert_eq!(sessions[0]["stream"], "tv");
    assert!(sessions[0]["dropped_frames"].is_u64(), "{:?}", sessions[0]);
    assert_eq!(sessions[0]["client_ip"], "127.0.0.1");
    let id = sessions[0]["id"].as_u64().unwrap();
    assert_eq!(
        server.post("/manage/sessions/delete", &format!("[{id}]")).0,
        200
    );
    wait_for(LIVE, "one SRT session left", || {
        let left = srt_sessions(&server);
        (left.len() == 1 && left[0]["id"].as_u64() != Some(id)).then_some(())
    })
    .unwrap_or_else(|| panic!("{:?}", srt_sessions(&server)));
    let ended = first.wait_exit(Duration::from_secs(20)).is_some()
        || second.wait_exit(Duration::from_secs(1)).is_some();
    assert!(ended, "the deleted viewer's ffmpeg ended");
    assert!(
        first.running() != second.running(),
        "exactly one viewer is still playing"
    );

    // A caller that names no stream, or a stream in publish mode, is refused.
    let refused = Command::new("timeout")
        .args([
            "20",
            "ffmpeg",
            "-hide_banner",
            "-nostdin",
            "-v",
            "error",
            "-i",
        ])
        .arg(srt_url(open_port, "#!::r=live/tv,m=publish", None))
        .args(["-t", "1", "-f", "null", "-"])
        .output()
        .unwrap();
    assert!(
        !refused.status.success(),
        "a publish-mode caller is refused"
    );
}

#[test]
fn srt_push_reaches_srt_live_transmit() {
    require_tool("srt-live-transmit", "srt-tools");
    let (srt_port, udp_port) = (free_port(), free_port());
    // srt-live-transmit listens for strom's push and hands the TS to a local UDP port.
    let receiver = bind_receiver(udp_port);
    let _relay = quiet(
        Command::new("srt-live-transmit")
            .arg(format!("srt://:{srt_port}?mode=listener"))
            .arg(format!("udp://127.0.0.1:{udp_port}")),
    );
    let (server, _publisher) = start(&format!(
        r#"{{"id": "push", "protocol": "srt", "mode": "push", "ip": "127.0.0.1", "port": {srt_port},
             "app": "live", "stream": "tv"}}"#
    ));
    let ts = receive_ts(&receiver, 600_000, Duration::from_secs(40));
    assert!(
        ts.len() > 200_000,
        "{} bytes; log:\n{}",
        ts.len(),
        server.log()
    );
    probe_file(&server, &ts);
}

#[test]
fn rist_and_udp_pushes_decode() {
    require_tool("ristreceiver", "rist-tools");
    let (rist_port, relay_port, udp_port) = (free_port() & !1, free_port(), free_port());
    let (relayed, direct) = (bind_receiver(relay_port), bind_receiver(udp_port));
    // ristreceiver listens for strom's RIST push and hands the TS to a local UDP port.
    let _relay = quiet(
        Command::new("ristreceiver")
            .args(["-v", "3", "-i"])
            .arg(format!("rist://@127.0.0.1:{rist_port}"))
            .arg("-o")
            .arg(format!("udp://127.0.0.1:{relay_port}")),
    );
    let (server, _publisher) = start(&format!(
        r#"{{"id": "rist", "protocol": "rist", "mode": "push", "ip": "127.0.0.1", "port": {rist_port},
             "app": "live", "stream": "tv", "parameters": [{{"name": "rist-stats-interval", "value": "1"}}]}},
           {{"id": "udp", "protocol": "udp", "mode": "push", "ip": "127.0.0.1", "port": {udp_port},
             "app": "live", "stream": "tv"}}"#
    ));
    // Both captured at once, 10 s each.
    let captures: Vec<(&str, Vec<u8>)> = std::thread::scope(|scope| {
        let running: Vec<_> = [("RIST", &relayed), ("UDP", &direct)]
            .into_iter()
            .map(|(name, socket)| {
                let capture =
                    scope.spawn(|| receive_ts(socket, usize::MAX, Duration::from_secs(10)));
                (name, capture)
            })
            .collect();
        running
            .into_iter()
            .map(|(name, capture)| (name, capture.join().unwrap()))
            .collect()
    });
    for (name, ts) in captures {
        // Joined mid-stream: from the first table on, which precedes a keyframe.
        let ts = clean_start(ts);
        assert!(
            ts.len() > 200_000,
            "{name}: {} bytes; log:\n{}",
            ts.len(),
            server.log()
        );
        probe_file(&server, &ts);
    }
    let item = wait_for(LIVE, "RIST sender stats", || {
        let (_, body) = server.try_get("/manage/rist_sender_stats")?;
        let item = body.as_array()?.first()?.clone();
        item.get("sender-stats").is_some().then_some(item)
    })
    .unwrap_or_else(|| panic!("no RIST sender stats; log:\n{}", server.log()));
    assert!(item["sender-stats"].is_object(), "{item}");
}

/// `command` running without input or output, killed when dropped.
fn quiet(command: &mut Command) -> Proc {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Proc(child)
}

fn bind_receiver(port: u16) -> UdpSocket {
    let socket = UdpSocket::bind(("127.0.0.1", port)).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(1)))
        .unwrap();
    socket
}

/// `ts` from its first PAT packet on.
fn clean_start(ts: Vec<u8>) -> Vec<u8> {
    let first = ts
        .chunks(188)
        .position(|p| p.len() == 188 && p[0] == 0x47 && p[1] & 0x1f == 0 && p[2] == 0)
        .unwrap_or(0);
    ts[first * 188..].to_vec()
}

#[test]
fn constant_rate_udp_keeps_its_mux_rate() {
    const MUX_RATE: u64 = 2_000_000;
    let udp_port = free_port();
    let receiver = bind_receiver(udp_port);
    let (server, _publisher) = start(&format!(
        r#"{{"id": "cbr", "protocol": "udp", "mode": "push", "ip": "127.0.0.1", "port": {udp_port},
             "app": "live", "stream": "tv", "parameters": [{{"name": "mux_rate", "value": "{MUX_RATE}"}}]}}"#
    ));
    // Wait for the output to run, then measure 10 s of it.
    receive_ts(&receiver, 100_000, LIVE);
    let mut buffer = [0u8; 2048];
    let (mut bytes, mut nulls, mut packets) = (0u64, 0u64, 0u64);
    let start = Instant::now();
    let mut first_pcr: Option<(u64, u64)> = None;
    let mut last_pcr: Option<(u64, u64)> = None;
    while start.elapsed() < Duration::from_secs(10) {
        let Ok(len) = receiver.recv(&mut buffer) else {
            continue;
        };
        assert_eq!(len % 188, 0, "whole packets only");
        for packet in buffer[..len].chunks(188) {
            let pid = u16::from_be_bytes([packet[1] & 0x1f, packet[2]]);
            nulls += u64::from(pid == 0x1fff);
            if packet[3] & 0x20 != 0 && packet[4] >= 7 && packet[5] & 0x10 != 0 {
                let pcr = pcr_27mhz(&packet[6..12]);
                first_pcr.get_or_insert((packets, pcr));
                last_pcr = Some((packets, pcr));
            }
            packets += 1;
        }
        bytes += len as u64;
    }
    let elapsed = start.elapsed().as_secs_f64();
    let measured = bytes as f64 * 8.0 / elapsed;
    let error = (measured - MUX_RATE as f64).abs() / MUX_RATE as f64;
    assert!(
        error < 0.01,
        "measured {measured:.0} bit/s for {MUX_RATE} ({:.2}% off)",
        error * 100.0
    );
    assert!(
        nulls > 0,
        "a 2 Mbit/s mux of a lighter stream carries null packets"
    );
    // The PCRs are exact for the rate: bytes between two PCRs over their distance.
    let ((first_index, first), (last_index, last)) = (first_pcr.unwrap(), last_pcr.unwrap());
    let pcr_rate =
        (last_index - first_index) as f64 * 188.0 * 8.0 * 27_000_000.0 / (last - first) as f64;
    assert!(
        (pcr_rate - MUX_RATE as f64).abs() / (MUX_RATE as f64) < 0.001,
        "PCRs say {pcr_rate:.0} bit/s; log:\n{}",
        server.log()
    );
}

fn pcr_27mhz(field: &[u8]) -> u64 {
    let base = (u64::from(field[0]) << 25)
        | (u64::from(field[1]) << 17)
        | (u64::from(field[2]) << 9)
        | (u64::from(field[3]) << 1)
        | (u64::from(field[4]) >> 7);
    base * 300 + ((u64::from(field[4] & 1) << 8) | u64::from(field[5]))
}

/// Datagrams from `socket` until `limit` bytes or `within` passed.
fn receive_ts(socket: &UdpSocket, limit: usize, within: Duration) -> Vec<u8> {
    let deadline = Instant::now() + within;
    let mut ts = Vec::new();
    let mut buffer = [0u8; 2048];
    while ts.len() < limit && Instant::now() < deadline {
        if let Ok(len) = socket.recv(&mut buffer) {
            ts.extend_from_slice(&buffer[..len]);
        }
    }
    ts
}

/// ffprobe finds H.264 320x240 and AAC in `ts`, and ffmpeg decodes it cleanly.
fn probe_file(server: &Server, ts: &[u8]) {
    let path = server.path("received.ts");
    std::fs::write(&path, ts).unwrap();
    let path = path.to_str().unwrap();
    let mut streams = common::media::probe_streams(path);
    streams.sort();
    streams.dedup();
    assert!(
        streams.contains(&"h264,video,320,240".to_owned())
            && streams.contains(&"aac,audio".to_owned()),
        "{streams:?}"
    );
    let output = Command::new("ffmpeg")
        .args([
            "-hide_banner",
            "-nostdin",
            "-v",
            "error",
            "-i",
            path,
            "-f",
            "null",
            "-",
        ])
        .output()
        .unwrap();
    assert!(
        output.status.success() && output.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
