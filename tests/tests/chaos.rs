//! Chaos: real clients of every worker keep running while workers are killed with
//! SIGKILL one after another, one is frozen with SIGSTOP past the heartbeat deadline, and
//! finally the supervisor itself is killed with SIGKILL.
//!
//! Two streams, one per producing worker: `live/tv` published over RTMP (rtmp worker) and
//! `live/cam` sent as MPEG-TS over UDP (ingest worker). Each is read by every kind of
//! client, so every (producer, server) pair of workers is covered:
//!
//! | client | of tv: producer, server | of cam: producer, server |
//! |---|---|---|
//! | raw RTMP player (media timestamps) | rtmp, rtmp | ingest, rtmp |
//! | HLS viewer (playlist + every listed segment) | rtmp, packager | ingest, packager |
//! | `mpegts.stream` over HTTP | rtmp, packager | ingest, packager |
//! | UDP MPEG-TS output (`TsOutputs` push) | rtmp, ingest | ingest, ingest |
//!
//! Every client records every read (time, bytes, RTMP timestamp), so the measurements are
//! per client and complete, not sampled. For each event a client whose producer and
//! server both survive must lose nothing: no disconnect, bytes keep arriving, no gap
//! between arrivals over [`UNAFFECTED_ARRIVAL_GAP`] and (RTMP) no media timestamp gap
//! over [`UNAFFECTED_TS_GAP_MS`]. A client of the killed worker must get the documented
//! behaviour: HLS never answers 404 for a segment its playlist listed and continues with
//! `#EXT-X-DISCONTINUITY`; RTMP and HTTP clients that reconnect play again. Thresholds
//! are generous (a loaded 2-core CI machine); the exact figures are printed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::media::{Proc, rtmp_url, wait_live};
use common::raw_rtmp::RawRtmp;
use common::{Server, free_port, process_alive, require_tool, wait_for};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use rml_rtmp::chunk_io::ChunkDeserializer;
use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const LIVE: Duration = Duration::from_secs(40);
/// A client of a surviving worker pair: longest time without receiving anything.
const UNAFFECTED_ARRIVAL_GAP: Duration = Duration::from_secs(3);
/// HLS segments are 1 s long and fetched when listed: longest time without a new one.
const UNAFFECTED_HLS_GAP: Duration = Duration::from_secs(6);
/// RTMP players of a surviving stream: largest jump between consecutive timestamps of a
/// track (frames dropped for a slow reader would show as a jump).
const UNAFFECTED_TS_GAP_MS: i64 = 2000;
/// A client of the killed worker plays again within this.
const RECOVERY: Duration = Duration::from_secs(40);
/// How long a hung worker may take to be killed and replaced (the deadline is ~2.5 s).
const HUNG_REPLACED_WITHIN: Duration = Duration::from_secs(10);
/// `management_worker_timeout` of the test server.
const API_WORKER_TIMEOUT_SECS: u64 = 2;
/// Every management request answers within the worker timeout plus this.
const API_SLACK: Duration = Duration::from_secs(3);

// ---------------------------------------------------------------------------------------
// Recording what each client receives.

#[derive(Clone, Copy)]
struct Sample {
    at: Instant,
    bytes: u64,
    /// RTMP: (message type, timestamp in ms) of an audio or video message.
    ts: Option<(u8, u32)>,
    /// First sample of a new connection (timestamps restart).
    fresh: bool,
}

#[derive(Default)]
struct Log {
    samples: Vec<Sample>,
    /// Connection ends, failures and non-200 answers: (when, what).
    breaks: Vec<(Instant, String)>,
    /// HLS: a segment the playlist listed answered 404.
    missing: Vec<(Instant, String)>,
    /// HLS: segments first seen right after `#EXT-X-DISCONTINUITY`.
    discontinuities: Vec<(Instant, String)>,
    next_fresh: bool,
}

impl Log {
    fn sample(&mut self, bytes: u64, ts: Option<(u8, u32)>) {
        let fresh = std::mem::take(&mut self.next_fresh);
        self.samples.push(Sample {
            at: Instant::now(),
            bytes,
            ts,
            fresh,
        });
    }

    fn broke(&mut self, what: String) {
        self.next_fresh = true;
        self.breaks.push((Instant::now(), what));
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Rtmp,
    Hls,
    HttpTs,
    Udp,
}

struct Client {
    name: String,
    kind: Kind,
    /// The workers it depends on: the stream's producer and the worker serving it.
    producer: &'static str,
    server: &'static str,
    log: Arc<Mutex<Log>>,
}

impl Client {
    fn depends_on(&self, worker: &str) -> bool {
        self.producer == worker || self.server == worker
    }

    fn bytes_since(&self, from: Instant) -> u64 {
        let log = self.log.lock().unwrap();
        log.samples
            .iter()
            .filter(|s| s.at >= from)
            .map(|s| s.bytes)
            .sum()
    }

    fn stats(&self, from: Instant, to: Instant) -> Stats {
        let log = self.log.lock().unwrap();
        let mut stats = Stats {
            bytes: 0,
            reads: 0,
            max_arrival_gap: Duration::ZERO,
            max_ts_gap_ms: 0,
            breaks: log
                .breaks
                .iter()
                .filter(|(at, _)| (from..=to).contains(at))
                .map(|(_, what)| what.clone())
                .collect(),
            missing: log
                .missing
                .iter()
                .filter(|(at, _)| (from..=to).contains(at))
                .map(|(_, what)| what.clone())
                .collect(),
            discontinuities: log
                .discontinuities
                .iter()
                .filter(|(at, _)| (from..=to).contains(at))
                .count(),
        };
        let mut last_arrival = from;
        let mut last_ts: [Option<u32>; 2] = [None, None];
        for sample in log.samples.iter().filter(|s| (from..=to).contains(&s.at)) {
            stats.bytes += sample.bytes;
            stats.reads += 1;
            stats.max_arrival_gap = stats.max_arrival_gap.max(sample.at - last_arrival);
            last_arrival = sample.at;
            if sample.fresh {
                last_ts = [None, None];
            }
            if let Some((kind, ts)) = sample.ts {
                let track = usize::from(kind == 9);
                if let Some(previous) = last_ts[track] {
                    let gap = (i64::from(ts) - i64::from(previous)).abs();
                    stats.max_ts_gap_ms = stats.max_ts_gap_ms.max(gap);
                }
                last_ts[track] = Some(ts);
            }
        }
        stats.max_arrival_gap = stats
            .max_arrival_gap
            .max(to.saturating_duration_since(last_arrival));
        stats
    }
}

struct Stats {
    bytes: u64,
    reads: u64,
    max_arrival_gap: Duration,
    max_ts_gap_ms: i64,
    breaks: Vec<String>,
    missing: Vec<String>,
    discontinuities: usize,
}

// ---------------------------------------------------------------------------------------
// The clients. Each runs in its own thread until `stop`, reconnecting after every end.

fn spawn_client(
    clients: &mut Vec<Client>,
    stop: &Arc<AtomicBool>,
    name: &str,
    kind: Kind,
    (producer, server): (&'static str, &'static str),
    run: impl FnOnce(Arc<Mutex<Log>>, Arc<AtomicBool>) + Send + 'static,
) {
    let log = Arc::new(Mutex::new(Log::default()));
    let (thread_log, thread_stop) = (Arc::clone(&log), Arc::clone(stop));
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || run(thread_log, thread_stop))
        .unwrap();
    clients.push(Client {
        name: name.to_owned(),
        kind,
        producer,
        server,
        log,
    });
}

/// A raw RTMP player of `app/stream`: every audio/video message is a sample with its
/// timestamp. Reconnects when the connection ends or stays silent for 5 s.
fn rtmp_player(addr: SocketAddr, app: &str, stream: &str, log: &Mutex<Log>, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let Ok(mut client) = RawRtmp::handshake(addr) else {
            log.lock().unwrap().broke("handshake failed".into());
            std::thread::sleep(Duration::from_millis(200));
            continue;
        };
        client.connect(app, false);
        client.play(stream);
        let mut pending = std::mem::take(&mut client.received);
        let mut deserializer = ChunkDeserializer::new();
        let _ = client
            .stream
            .set_read_timeout(Some(Duration::from_millis(200)));
        let mut last_media = Instant::now();
        let mut buffer = vec![0u8; 64 * 1024];
        let why = 'connection: loop {
            // Every complete message in what arrived so far.
            loop {
                let message = match deserializer.get_next_message(&pending) {
                    Ok(message) => message,
                    Err(e) => break 'connection format!("bad chunk stream: {e:?}"),
                };
                pending.clear();
                let Some(message) = message else { break };
                match message.type_id {
                    1 if message.data.len() >= 4 => {
                        let size = u32::from_be_bytes([
                            message.data[0],
                            message.data[1],
                            message.data[2],
                            message.data[3],
                        ]) & 0x7fff_ffff;
                        let _ = deserializer.set_max_chunk_size(size as usize);
                    }
                    8 | 9 => {
                        last_media = Instant::now();
                        // Decoder configuration (AVC/AAC sequence headers) may carry an
                        // older timestamp than the media after it: not part of the timeline.
                        let data = &message.data;
                        let config = data.len() >= 2
                            && data[1] == 0
                            && ((message.type_id == 9 && data[0] & 0x0f == 7)
                                || (message.type_id == 8 && data[0] >> 4 == 10));
                        let ts = (!config).then_some((message.type_id, message.timestamp.value));
                        log.lock().unwrap().sample(data.len() as u64, ts);
                    }
                    _ => {}
                }
            }
            if stop.load(Ordering::Relaxed) {
                return;
            }
            if last_media.elapsed() > Duration::from_secs(5) {
                break 'connection "no media for 5 s".to_owned();
            }
            match client.stream.read(&mut buffer) {
                Ok(0) => break 'connection "closed by the server".to_owned(),
                Ok(n) => pending.extend_from_slice(&buffer[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => break 'connection format!("read failed: {e}"),
            }
        };
        log.lock().unwrap().broke(why);
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// One HTTP/1.0 GET: status and body (`None` when the connection failed).
fn http_get(port: u16, path: &str) -> Option<(u16, Vec<u8>)> {
    let mut stream =
        TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(5)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).ok()?;
    let head_end = raw.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let status = std::str::from_utf8(&raw[..head_end])
        .ok()?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some((status, raw[head_end..].to_vec()))
}

/// An HLS viewer: opens a session with the master playlist, polls its chunklist and
/// fetches every listed segment once. Each segment is a sample; a listed segment that
/// answers 404 is recorded as missing.
fn hls_viewer(port: u16, app: &str, stream: &str, log: &Mutex<Log>, stop: &AtomicBool) {
    let base = format!("/{app}/{stream}/");
    let mut chunklist: Option<String> = None;
    let mut fetched: HashSet<String> = HashSet::new();
    let mut discontinuous: HashSet<String> = HashSet::new();
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(250));
        let Some(list) = chunklist.clone() else {
            match http_get(port, &format!("{base}playlist.m3u8")) {
                Some((200, body)) => {
                    chunklist = String::from_utf8_lossy(&body)
                        .lines()
                        .find(|l| !l.is_empty() && !l.starts_with('#'))
                        .map(str::to_owned);
                }
                Some((status, _)) => log
                    .lock()
                    .unwrap()
                    .broke(format!("master playlist {status}")),
                None => log
                    .lock()
                    .unwrap()
                    .broke("master playlist: connection failed".into()),
            }
            continue;
        };
        let media = match http_get(port, &format!("{base}{list}")) {
            Some((200, body)) => String::from_utf8_lossy(&body).into_owned(),
            Some((status, _)) => {
                log.lock().unwrap().broke(format!("chunklist {status}"));
                if status == 403 || status == 404 {
                    chunklist = None;
                }
                continue;
            }
            None => {
                log.lock()
                    .unwrap()
                    .broke("chunklist: connection failed".into());
                continue;
            }
        };
        let mut after_discontinuity = false;
        for line in media.lines() {
            if line == "#EXT-X-DISCONTINUITY" {
                after_discontinuity = true;
                continue;
            }
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let segment = line.to_owned();
            if after_discontinuity && discontinuous.insert(segment.clone()) {
                log.lock()
                    .unwrap()
                    .discontinuities
                    .push((Instant::now(), segment.clone()));
            }
            after_discontinuity = false;
            if fetched.contains(&segment) {
                continue;
            }
            match http_get(port, &format!("{base}{segment}")) {
                Some((200, body)) => {
                    fetched.insert(segment);
                    log.lock().unwrap().sample(body.len() as u64, None);
                }
                Some((404, _)) => {
                    fetched.insert(segment.clone());
                    log.lock().unwrap().missing.push((Instant::now(), segment));
                }
                Some((status, _)) => log.lock().unwrap().broke(format!("{segment}: {status}")),
                None => log
                    .lock()
                    .unwrap()
                    .broke(format!("{segment}: connection failed")),
            }
        }
    }
}

/// A viewer of `mpegts.stream`: one endless response, every read a sample; reconnects.
fn http_ts_viewer(port: u16, app: &str, stream: &str, log: &Mutex<Log>, stop: &AtomicBool) {
    let path = format!("/{app}/{stream}/mpegts.stream");
    while !stop.load(Ordering::Relaxed) {
        let why = 'connection: {
            let Ok(mut socket) =
                TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(5))
            else {
                break 'connection "connect failed".to_owned();
            };
            let _ = socket.set_read_timeout(Some(Duration::from_millis(200)));
            if write!(socket, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").is_err() {
                break 'connection "request not sent".to_owned();
            }
            let mut head = Vec::new();
            let mut buffer = vec![0u8; 64 * 1024];
            let mut last_data = Instant::now();
            loop {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                if last_data.elapsed() > Duration::from_secs(5) {
                    break 'connection "no data for 5 s".to_owned();
                }
                match socket.read(&mut buffer) {
                    Ok(0) => break 'connection "closed by the server".to_owned(),
                    Ok(n) => {
                        last_data = Instant::now();
                        let mut body = &buffer[..n];
                        if !head.ends_with(b"\r\n\r\n") {
                            // Still in the response head.
                            let mut taken = 0;
                            for &byte in body {
                                head.push(byte);
                                taken += 1;
                                if head.ends_with(b"\r\n\r\n") {
                                    break;
                                }
                            }
                            body = &body[taken..];
                            let text = String::from_utf8_lossy(&head).into_owned();
                            let status = text.lines().next().unwrap_or_default();
                            if head.ends_with(b"\r\n\r\n")
                                && status.split_whitespace().nth(1) != Some("200")
                            {
                                break 'connection format!("answered {status}");
                            }
                        }
                        if !body.is_empty() {
                            log.lock().unwrap().sample(body.len() as u64, None);
                        }
                    }
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) => {}
                    Err(e) => break 'connection format!("read failed: {e}"),
                }
            }
        };
        log.lock().unwrap().broke(why);
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// The receiver of a `TsOutputs` UDP push: every datagram is a sample.
fn udp_receiver(socket: &UdpSocket, log: &Mutex<Log>, stop: &AtomicBool) {
    socket
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut buffer = [0u8; 2048];
    while !stop.load(Ordering::Relaxed) {
        if let Ok(n) = socket.recv(&mut buffer) {
            log.lock().unwrap().sample(n as u64, None);
        }
    }
}

// ---------------------------------------------------------------------------------------
// The server, its publishers and the events.

/// ffmpeg sending a live H.264 + AAC test source (1 s GOP) to `url` as `format`, for
/// longer than the test runs (the shared helper stops after 120 s). With `noisy` the
/// picture is noise, about 2 Mbit/s: a stopped reader's socket buffers (about 200 KB)
/// fill within the heartbeat deadline, so a producer that blocked on a full bus socket
/// would show as a gap for everybody else.
fn encoder(url: &str, format: &str, noisy: bool) -> Proc {
    require_tool("ffmpeg", "ffmpeg");
    let source = if noisy {
        "testsrc=size=320x240:rate=25,noise=alls=60:allf=t+u"
    } else {
        "testsrc=size=320x240:rate=25"
    };
    let child = Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-re"])
        .args(["-f", "lavfi", "-i", source])
        .args(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100"])
        .args([
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-tune",
            "zerolatency",
        ])
        .args(["-g", "25", "-pix_fmt", "yuv420p"])
        .args(["-c:a", "aac", "-b:a", "64k", "-t", "900", "-f", format, url])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Proc(child)
}

struct Ports {
    udp_in: u16,
    udp_out_tv: u16,
    udp_out_cam: u16,
}

/// A server whose rules deliver `live/*` as HLS and `mpegts.stream`, take `live/cam` from
/// UDP and push both streams out as UDP MPEG-TS.
fn start_server() -> (Server, Ports) {
    let ports = Ports {
        udp_in: free_port(),
        udp_out_tv: free_port(),
        udp_out_cam: free_port(),
    };
    let mut server = Server::prepare(&format!(
        "management_worker_timeout = {API_WORKER_TIMEOUT_SECS}"
    ));
    std::fs::write(
        server.path("rules.conf"),
        format!(
            r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {rtmp}}}]}},
 "Delivery": {{"outputs": ["HLS"], "segment_duration_secs": 1,
   "apps": [{{"app": "live", "outputs": ["HLS", "MPEGTS"]}}]}},
 "Cameras": [{{"id": "cam", "ip": "127.0.0.1", "port": {udp_in}, "protocol": "udp", "app": "live", "stream": "cam"}}],
 "TsOutputs": [
   {{"id": "out-tv", "protocol": "udp", "mode": "push", "ip": "127.0.0.1", "port": {out_tv}, "app": "live", "stream": "tv"}},
   {{"id": "out-cam", "protocol": "udp", "mode": "push", "ip": "127.0.0.1", "port": {out_cam}, "app": "live", "stream": "cam"}}]}}"#,
            rtmp = server.ports.rtmp,
            udp_in = ports.udp_in,
            out_tv = ports.udp_out_tv,
            out_cam = ports.udp_out_cam,
        ),
    )
    .unwrap();
    server.spawn();
    server.wait_ready();
    (server, ports)
}

fn workers(server: &Server) -> Vec<serde_json::Value> {
    match http_get(server.ports.management, "/manage/workers") {
        Some((200, body)) => serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// `(pid, state)` of worker `kind` as `/manage/workers` shows it.
fn worker_entry(server: &Server, kind: &str) -> Option<(i32, String)> {
    workers(server)
        .into_iter()
        .find(|w| w["kind"] == kind)
        .map(|w| {
            (
                w["pid"].as_i64().unwrap_or_default() as i32,
                w["state"].as_str().unwrap_or_default().to_owned(),
            )
        })
}

/// Waits until `kind` runs as a process other than `old` and is ready; its new pid.
fn wait_replaced(server: &Server, kind: &str, old: i32, limit: Duration) -> Option<i32> {
    wait_for(limit, "worker replaced", || {
        match worker_entry(server, kind) {
            Some((pid, state)) if pid != 0 && pid != old && state == "ready" => Some(pid),
            _ => None,
        }
    })
}

struct Chaos {
    server: Server,
    clients: Vec<Client>,
    stop: Arc<AtomicBool>,
    tv: Proc,
    _cam: Proc,
}

impl Drop for Chaos {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn setup() -> Chaos {
    let (server, ports) = start_server();
    let tv = encoder(&rtmp_url(&server, "live/tv"), "flv", true);
    let cam = encoder(
        &format!("udp://127.0.0.1:{}?pkt_size=1316", ports.udp_in),
        "mpegts",
        false,
    );
    for stream in ["tv", "cam"] {
        wait_live(&server, "live", stream, LIVE)
            .unwrap_or_else(|| panic!("live/{stream} not live; log:\n{}", server.log()));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let mut clients = Vec::new();
    let rtmp: SocketAddr = ([127, 0, 0, 1], server.ports.rtmp).into();
    let http = server.ports.http;
    for (stream, producer) in [("tv", "rtmp"), ("cam", "ingest")] {
        spawn_client(
            &mut clients,
            &stop,
            &format!("rtmp-player/{stream}"),
            Kind::Rtmp,
            (producer, "rtmp"),
            move |log, stop| rtmp_player(rtmp, "live", stream, &log, &stop),
        );
        spawn_client(
            &mut clients,
            &stop,
            &format!("hls-viewer/{stream}"),
            Kind::Hls,
            (producer, "packager"),
            move |log, stop| hls_viewer(http, "live", stream, &log, &stop),
        );
        spawn_client(
            &mut clients,
            &stop,
            &format!("mpegts.stream/{stream}"),
            Kind::HttpTs,
            (producer, "packager"),
            move |log, stop| http_ts_viewer(http, "live", stream, &log, &stop),
        );
        let port = if stream == "tv" {
            ports.udp_out_tv
        } else {
            ports.udp_out_cam
        };
        let socket = UdpSocket::bind(("127.0.0.1", port)).unwrap();
        spawn_client(
            &mut clients,
            &stop,
            &format!("udp-ts-out/{stream}"),
            Kind::Udp,
            (producer, "ingest"),
            move |log, stop| udp_receiver(&socket, &log, &stop),
        );
    }
    let started = Instant::now();
    for client in &clients {
        wait_for(LIVE, &client.name, || {
            (client.bytes_since(started) > 0 && !client.log.lock().unwrap().samples.is_empty())
                .then_some(())
        })
        .unwrap_or_else(|| {
            panic!(
                "{} received nothing; breaks {:?}; log:\n{}",
                client.name,
                client.log.lock().unwrap().breaks,
                server.log()
            )
        });
    }
    // A settled baseline before the first event.
    std::thread::sleep(Duration::from_secs(2));
    Chaos {
        server,
        clients,
        stop,
        tv,
        _cam: cam,
    }
}

impl Chaos {
    /// Waits until every client of `worker` received something after `since` (it plays
    /// again); how long each took.
    fn wait_recovered(&self, worker: &str, since: Instant) -> Vec<(String, Duration)> {
        let mut recovered = Vec::new();
        for client in self.clients.iter().filter(|c| c.depends_on(worker)) {
            let minimum = if client.kind == Kind::Hls { 1 } else { 4096 };
            wait_for(RECOVERY, &client.name, || {
                // Counted from the connection that follows a break (what a dead process
                // left in the socket buffer is not playing again).
                let last_break = client.log.lock().unwrap().breaks.last().map(|b| b.0);
                let from = last_break.map_or(since, |at| at.max(since));
                (client.bytes_since(from) >= minimum).then_some(())
            })
            .unwrap_or_else(|| {
                panic!(
                    "{} did not play again within {RECOVERY:?} after the {worker} event; breaks {:?}; log:\n{}",
                    client.name,
                    client.log.lock().unwrap().breaks,
                    self.server.log()
                )
            });
            let first = client
                .log
                .lock()
                .unwrap()
                .samples
                .iter()
                .find(|s| s.at >= since)
                .map(|s| s.at - since)
                .unwrap_or_default();
            recovered.push((client.name.clone(), first));
        }
        recovered
    }

    /// Prints every client's figures for `[from, to]` and checks them: clients that do not
    /// depend on `worker` lost nothing; HLS viewers never got 404 for a listed segment.
    fn check(&self, event: &str, worker: &str, from: Instant, to: Instant) -> Vec<String> {
        let mut failures = Vec::new();
        eprintln!("== {event}: window {:.1} s", (to - from).as_secs_f64());
        for client in &self.clients {
            let stats = client.stats(from, to);
            let affected = client.depends_on(worker);
            eprintln!(
                "   {:<22} {:<10} bytes {:>9}  reads {:>5}  largest arrival gap {:>6.0} ms  largest ts gap {:>5} ms  breaks {}  404s {}  discontinuities {}{}",
                client.name,
                if affected { "AFFECTED" } else { "unaffected" },
                stats.bytes,
                stats.reads,
                stats.max_arrival_gap.as_secs_f64() * 1000.0,
                stats.max_ts_gap_ms,
                stats.breaks.len(),
                stats.missing.len(),
                stats.discontinuities,
                if stats.breaks.is_empty() {
                    String::new()
                } else {
                    format!("  {:?}", stats.breaks)
                },
            );
            if !stats.missing.is_empty() {
                failures.push(format!(
                    "{event}: {} got 404 for listed segments {:?}",
                    client.name, stats.missing
                ));
            }
            if affected {
                continue;
            }
            let gap_limit = if client.kind == Kind::Hls {
                UNAFFECTED_HLS_GAP
            } else {
                UNAFFECTED_ARRIVAL_GAP
            };
            if !stats.breaks.is_empty() {
                failures.push(format!(
                    "{event}: {} (does not depend on {worker}) was interrupted: {:?}",
                    client.name, stats.breaks
                ));
            }
            if stats.max_arrival_gap > gap_limit {
                failures.push(format!(
                    "{event}: {} (does not depend on {worker}) received nothing for {:?}",
                    client.name, stats.max_arrival_gap
                ));
            }
            if stats.max_ts_gap_ms > UNAFFECTED_TS_GAP_MS {
                failures.push(format!(
                    "{event}: {} (does not depend on {worker}) has a {} ms timestamp gap",
                    client.name, stats.max_ts_gap_ms
                ));
            }
        }
        failures
    }

    /// `kill -9` of `worker`: replaced at once, its clients play again, the others lose
    /// nothing.
    fn kill_worker(&mut self, worker: &str) -> Vec<String> {
        let old = self.server.worker_pid(worker);
        let from = Instant::now() - Duration::from_secs(1);
        let killed = Instant::now();
        kill(Pid::from_raw(old), Signal::SIGKILL).unwrap();
        let new = wait_replaced(&self.server, worker, old, Duration::from_secs(20))
            .unwrap_or_else(|| panic!("{worker} not replaced; log:\n{}", self.server.log()));
        let replaced = killed.elapsed();
        if worker == "rtmp" {
            // The encoder lost its connection: it publishes again, as an encoder would.
            self.tv = encoder(&rtmp_url(&self.server, "live/tv"), "flv", true);
            wait_live(&self.server, "live", "tv", LIVE)
                .unwrap_or_else(|| panic!("tv not live again; log:\n{}", self.server.log()));
        }
        let recovered = self.wait_recovered(worker, killed);
        // Keep watching the others for a while after the restart too.
        let settle = killed + replaced + Duration::from_secs(4);
        std::thread::sleep(settle.saturating_duration_since(Instant::now()));
        let to = Instant::now();
        eprintln!(
            "== kill -9 {worker} (pid {old}): replaced by pid {new} after {:.0} ms; its clients played again after {}",
            replaced.as_secs_f64() * 1000.0,
            recovered
                .iter()
                .map(|(name, after)| format!("{name} {:.0} ms", after.as_secs_f64() * 1000.0))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let mut failures = self.check(&format!("kill -9 {worker}"), worker, from, to);
        // HLS continues the same playlist with a discontinuity after the break.
        for client in self
            .clients
            .iter()
            .filter(|c| c.kind == Kind::Hls && c.depends_on(worker))
        {
            let seen = wait_for(RECOVERY, "a discontinuity", || {
                (client.stats(killed, Instant::now()).discontinuities > 0).then_some(())
            });
            if seen.is_none() {
                failures.push(format!(
                    "kill -9 {worker}: {} saw no #EXT-X-DISCONTINUITY after the restart",
                    client.name
                ));
            }
        }
        failures
    }
}

#[test]
fn killing_each_worker_leaves_the_other_workers_clients_untouched() {
    require_tool("curl", "curl");
    let mut chaos = setup();
    let mut failures = Vec::new();
    for worker in ["packager", "ingest", "rtmp", "dvr"] {
        failures.extend(chaos.kill_worker(worker));
    }
    failures.extend(stop_a_worker(&chaos, "packager"));
    assert!(
        failures.is_empty(),
        "{} failures:\n{}\nlog:\n{}",
        failures.len(),
        failures.join("\n"),
        chaos.server.log()
    );
}

/// SIGSTOP of `worker` past the heartbeat deadline: `/manage/workers` shows it
/// `unresponsive`, it is killed and replaced, every management request meanwhile answers
/// within its timeout, and the other workers' clients lose nothing. Then SIGCONT.
fn stop_a_worker(chaos: &Chaos, worker: &str) -> Vec<String> {
    let server = &chaos.server;
    let mut failures = Vec::new();
    let old = server.worker_pid(worker);
    let from = Instant::now() - Duration::from_secs(1);
    let api_done = Arc::new(AtomicBool::new(false));
    // Every endpoint that asks workers (and the cached ones), asked over and over.
    let api = {
        let done = Arc::clone(&api_done);
        let port = server.ports.management;
        std::thread::spawn(move || {
            let paths = [
                "/manage/workers",
                "/manage/server_status",
                "/manage/sessions",
                "/manage/rtmp_status",
                "/manage/live_streams_status",
                "/manage/mpeg2ts_status",
                "/manage/srt_receiver_stats",
                "/manage/dvr_status",
                "/manage/icecast_stream_info/live/tv",
            ];
            let mut answers: Vec<(&str, u16, Duration)> = Vec::new();
            while !done.load(Ordering::Relaxed) {
                for path in paths {
                    let asked = Instant::now();
                    let status = http_get(port, path).map_or(0, |(status, _)| status);
                    answers.push((path, status, asked.elapsed()));
                }
            }
            answers
        })
    };
    kill(Pid::from_raw(old), Signal::SIGSTOP).unwrap();
    let stopped = Instant::now();
    let mut unresponsive_after = None;
    let mut states = Vec::new();
    let replaced = wait_for(HUNG_REPLACED_WITHIN, "the stopped worker replaced", || {
        let (pid, state) = worker_entry(server, worker)?;
        if states.last() != Some(&(pid, state.clone())) {
            states.push((pid, state.clone()));
        }
        if pid == old && state == "unresponsive" && unresponsive_after.is_none() {
            unresponsive_after = Some(stopped.elapsed());
        }
        (pid != 0 && pid != old && state == "ready").then_some(pid)
    });
    let replaced_after = stopped.elapsed();
    // The old process is gone by now (killed while stopped); SIGCONT is harmless either way.
    let continued = kill(Pid::from_raw(old), Signal::SIGCONT);
    let old_alive = process_alive(old);
    let recovered = chaos.wait_recovered(worker, stopped + replaced_after);
    std::thread::sleep(Duration::from_secs(3));
    api_done.store(true, Ordering::Relaxed);
    let answers = api.join().unwrap();
    let to = Instant::now();
    eprintln!(
        "== SIGSTOP {worker} (pid {old}): states seen {states:?}; unresponsive after {:?}; replaced by {replaced:?} after {:.0} ms; SIGCONT to the old pid: {continued:?}; old process alive: {old_alive}",
        unresponsive_after.map(|d| format!("{:.0} ms", d.as_secs_f64() * 1000.0)),
        replaced_after.as_secs_f64() * 1000.0,
    );
    eprintln!(
        "   its clients played again after {}",
        recovered
            .iter()
            .map(|(name, after)| format!("{name} {:.0} ms", after.as_secs_f64() * 1000.0))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let limit = Duration::from_secs(API_WORKER_TIMEOUT_SECS) + API_SLACK;
    let mut paths: Vec<&str> = answers.iter().map(|(path, _, _)| *path).collect();
    paths.dedup();
    paths.sort_unstable();
    paths.dedup();
    for path in paths {
        let of_path: Vec<_> = answers.iter().filter(|(p, _, _)| *p == path).collect();
        let slowest = of_path.iter().map(|(_, _, d)| *d).max().unwrap_or_default();
        let mut codes: Vec<u16> = of_path.iter().map(|(_, code, _)| *code).collect();
        codes.sort_unstable();
        codes.dedup();
        eprintln!(
            "   API {path:<38} {:>4} requests, slowest {:>5.0} ms, statuses {codes:?}",
            of_path.len(),
            slowest.as_secs_f64() * 1000.0
        );
        if slowest > limit || codes.contains(&0) {
            failures.push(format!(
                "SIGSTOP {worker}: {path} took {slowest:?} (limit {limit:?}) or got no answer: {codes:?}"
            ));
        }
    }
    if replaced.is_none() {
        failures.push(format!(
            "SIGSTOP {worker}: not replaced within {HUNG_REPLACED_WITHIN:?}"
        ));
    }
    if unresponsive_after.is_none() {
        failures.push(format!(
            "SIGSTOP {worker}: /manage/workers never showed it unresponsive: {states:?}"
        ));
    }
    if old_alive {
        failures.push(format!(
            "SIGSTOP {worker}: the hung process {old} still runs"
        ));
    }
    failures.extend(chaos.check(&format!("SIGSTOP {worker}"), worker, from, to));
    failures
}

/// `kill -9` of the supervisor (with one worker frozen by SIGSTOP, which can read
/// nothing): every worker dies with it, and a new supervisor on the same configuration
/// starts on the same ports and serves.
#[test]
fn a_killed_supervisor_leaves_no_worker_and_a_new_one_starts_clean() {
    require_tool("curl", "curl");
    let (mut server, ports) = start_server();
    let pids: Vec<i32> = workers(&server)
        .iter()
        .map(|w| w["pid"].as_i64().unwrap() as i32)
        .collect();
    assert_eq!(pids.len(), 7);
    let dvr = server.worker_pid("dvr");
    kill(Pid::from_raw(dvr), Signal::SIGSTOP).unwrap();
    let killed = Instant::now();
    server.signal(Signal::SIGKILL);
    // Reaped (killed by a signal: no exit code).
    let _ = server.wait_exit(Duration::from_secs(10));
    let gone = wait_for(Duration::from_secs(10), "every worker gone", || {
        pids.iter().all(|pid| !process_alive(*pid)).then_some(())
    });
    let gone_after = killed.elapsed();
    let survivors: Vec<i32> = pids.iter().copied().filter(|p| process_alive(*p)).collect();
    for pid in &survivors {
        let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
    }
    eprintln!(
        "== kill -9 supervisor: workers {pids:?} (dvr {dvr} stopped) all gone after {:.0} ms; survivors {survivors:?}",
        gone_after.as_secs_f64() * 1000.0
    );
    assert!(
        gone.is_some(),
        "workers {survivors:?} outlived the supervisor; log:\n{}",
        server.log()
    );

    // Same directory, same config, same ports.
    let restarted = Instant::now();
    server.spawn();
    server.wait_ready();
    let ready_after = restarted.elapsed();
    let _tv = encoder(&rtmp_url(&server, "live/tv"), "flv", true);
    let _cam = encoder(
        &format!("udp://127.0.0.1:{}?pkt_size=1316", ports.udp_in),
        "mpegts",
        false,
    );
    for stream in ["tv", "cam"] {
        wait_live(&server, "live", stream, LIVE)
            .unwrap_or_else(|| panic!("live/{stream} not live; log:\n{}", server.log()));
    }
    let playlist = wait_for(LIVE, "an HLS playlist", || {
        match http_get(server.ports.http, "/live/tv/playlist.m3u8") {
            Some((200, body)) => Some(body),
            _ => None,
        }
    });
    eprintln!(
        "== new supervisor on the same config: ready after {:.0} ms, RTMP and UDP inputs live, HLS served: {}",
        ready_after.as_secs_f64() * 1000.0,
        playlist.is_some()
    );
    assert!(
        playlist.is_some(),
        "no HLS after the restart; log:\n{}",
        server.log()
    );
    assert!(
        !server.log().contains("Address already in use"),
        "a port was still taken; log:\n{}",
        server.log()
    );
}
