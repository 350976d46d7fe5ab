//! `webrtc-fanout`: a WebRTC fan-out load generator. It starts `--viewers` WebRTC viewers
//! of one stream from a single process (tokio, one task per viewer, started at
//! `--ramp-per-sec`), each a str0m `Rtc` of its own as a full ICE agent with its own UDP
//! socket. Against strom (WHEP, the default) a viewer POSTs a recvonly offer (video, and
//! audio unless `--no-audio`) to the WHEP endpoint (`--url`) and applies the answer; with
//! `--janus-mountpoint N` it watches mountpoint N of Janus's streaming plugin instead,
//! through the Janus REST API at `--url` (create a session, attach the plugin, `watch`,
//! the offer from the session's long poll, str0m's answer back with `start`): the peer
//! server bench/webrtc_fanout/run.sh compares with. HTTP is plain HTTP/1.1 over a
//! `TcpStream`, one connection per request. The viewer then connects (ICE, DTLS, SRTP)
//! and receives everything a browser would: str0m decrypts and depacketizes every packet
//! into frames and sends the receiver's RTCP (receiver reports, NACKs, transport-wide
//! feedback) back, so the server does all the work a real viewer costs it. At the end
//! every viewer ends its session (WHEP: DELETE; Janus: destroy).
//!
//! After `--warmup-secs` it measures for `--measure-secs`, per viewer: UDP bytes and
//! packets, video and audio frames, video frames that were not contiguous (lost
//! packets), and the delay of every video frame; per run: the time to first frame (from
//! the first signaling request to the first whole video frame, over the whole run), and
//! with `--server-pid` the CPU time and RSS of the server's process tree (the same
//! sampling as `rtmp-fanout`) and the datagrams the kernel dropped for a full receive
//! buffer or found no send room for (`/proc/net/snmp`, machine-wide). It prints one JSON
//! object whose keys match `rtmp-fanout`'s where the figure is the same, so
//! bench/webrtc_fanout/run.sh judges both the same way.
//!
//! Delay. For every video frame inside the window: `offset = arrival wall clock − RTP
//! media time`; the viewer's minimum offset is subtracted (the server rebases the
//! timestamps per viewer, so only the variation means anything): how much later than
//! its best-case frame a frame arrived, queueing in the server and the sockets.
//!
//! Full rate. A viewer is at full rate when it received at least `--full-rate-fraction`
//! (0.95) of the expected bytes and of the expected video frames in the window; expected
//! is `--expected-kbps` / `--expected-fps` × window when given, otherwise the median
//! connected viewer's.
//!
//! Loss and slow viewers (issue 43). With `--loss PCT` every viewer but the first
//! `--clean-viewers` drops that share of the datagrams it receives, at random, once it is
//! connected, before str0m sees them (as a lossy last mile would): str0m asks for the
//! missing packets again (NACK) and the report's `lossy` group says how many frames
//! those viewers still decoded against the `clean` ones. With `--stall-viewers N` the
//! last N viewers stop reading their socket (given a small receive buffer, so that it
//! fills and the kernel drops) for `--stall-secs` from one second into the window, then
//! read again: the `stalled` group counts their frames after the stall, and the `clean`
//! group shows what the stall cost everyone else.
//!
//! Nothing read from the network is unwrapped: a failed viewer ends with its error
//! counted in `errors`.
// serde_json::json! of the report nests deeper than the default 128.
#![recursion_limit = "256"]

use anyhow::{Context, Result, bail};
use clap::Parser;
use serde_json::json;
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use str0m::change::{SdpAnswer, SdpOffer};
use str0m::format::Codec;
use str0m::media::{Direction, MediaKind};
use str0m::net::{Protocol, Receive};
use str0m::{Candidate, Event, IceConnectionState, Input, Output, Rtc};
use strom_bench_rtmp_fanout::{
    core_busy_pct, core_ticks, ksoftirqd_pid, percentile, proc_stat, round1, sample_tree, tick_hz,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket};
use tokio::time::{Instant, sleep_until, timeout_at};

#[derive(Parser, Debug)]
#[command(about = "WHEP fan-out load generator (many str0m viewers of one stream)")]
struct Args {
    /// The WHEP endpoint (`http://host:port/<app>/<stream>/whep.stream`), or with
    /// `--janus-mountpoint` Janus's REST base (`http://host:port/janus`).
    #[arg(long)]
    url: String,
    /// Watch this mountpoint of Janus's streaming plugin instead of playing over WHEP.
    #[arg(long)]
    janus_mountpoint: Option<u64>,
    /// Number of viewers.
    #[arg(long, default_value_t = 100)]
    viewers: usize,
    /// New viewers per second while ramping up.
    #[arg(long, default_value_t = 50.0)]
    ramp_per_sec: f64,
    /// Seconds between the last viewer's start and the measurement window.
    #[arg(long, default_value_t = 5)]
    warmup_secs: u64,
    /// Length of the measurement window.
    #[arg(long, default_value_t = 10)]
    measure_secs: u64,
    /// Expected stream rate on the wire (SRTP included); default: the median viewer's.
    #[arg(long)]
    expected_kbps: Option<f64>,
    /// Expected video frame rate; default: the median viewer's.
    #[arg(long)]
    expected_fps: Option<f64>,
    /// Fraction of the expected bytes and frames a viewer needs to count as at full rate.
    #[arg(long, default_value_t = 0.95)]
    full_rate_fraction: f64,
    /// Server process to sample (with all its descendants); repeatable or comma-separated.
    #[arg(long, value_delimiter = ',')]
    server_pid: Vec<u32>,
    /// Add the kernel's softirq thread of this core (`ksoftirqd/N`) to the server's CPU.
    #[arg(long)]
    ksoftirqd_core: Option<usize>,
    /// Offer video only (the default offers audio too, as browsers do).
    #[arg(long)]
    no_audio: bool,
    /// The viewers' UDP sockets bind to this address.
    #[arg(long, default_value = "127.0.0.1")]
    local_ip: IpAddr,
    /// SO_RCVBUF of each viewer's socket: room for the GOP sent at once to a joining
    /// viewer while the generator's core is busy.
    #[arg(long, default_value_t = 1 << 20)]
    rcvbuf_bytes: u32,
    /// Percent of the received datagrams each lossy viewer drops (0 to 50).
    #[arg(long, default_value_t = 0.0)]
    loss: f64,
    /// The first this many viewers lose nothing (the reference for the lossy ones).
    #[arg(long, default_value_t = 0)]
    clean_viewers: usize,
    /// The last this many viewers stop reading their socket for a while.
    #[arg(long, default_value_t = 0)]
    stall_viewers: usize,
    /// How long a stalled viewer does not read, from one second into the window.
    #[arg(long, default_value_t = 3)]
    stall_secs: u64,
}

/// What a viewer does to the datagrams it receives.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Behaviour {
    /// Reads everything.
    Clean,
    /// Drops this fraction of the datagrams at random.
    Lossy(f64),
    /// Reads nothing between these instants.
    Stalled(Instant, Instant),
}

impl Behaviour {
    fn group(self) -> &'static str {
        match self {
            Behaviour::Clean => "clean",
            Behaviour::Lossy(_) => "lossy",
            Behaviour::Stalled(..) => "stalled",
        }
    }
}

/// Where the WHEP endpoint is.
struct Target {
    addr: String,
    host: String,
    path: String,
}

fn parse_url(url: &str, janus: bool) -> Result<Target> {
    let rest = url
        .strip_prefix("http://")
        .context("the URL must start with http://")?;
    let (host, path) = rest.split_once('/').context("the URL needs a path")?;
    if host.is_empty() || !(janus || path.ends_with("whep.stream")) {
        bail!("the URL needs a host and a .../whep.stream path");
    }
    let addr = if host.contains(':') {
        host.to_string()
    } else {
        format!("{host}:80")
    };
    Ok(Target {
        addr,
        host: host.to_string(),
        path: format!("/{path}"),
    })
}

/// The measurement window, shared by every viewer.
#[derive(Clone, Copy)]
struct Window {
    start: Instant,
    end: Instant,
    /// When the viewers hang up: a little after the window, so that no DELETE is served
    /// inside it.
    hangup: Instant,
}

#[derive(Clone, Copy)]
struct Options {
    janus_mountpoint: Option<u64>,
    audio: bool,
    local_ip: IpAddr,
    rcvbuf_bytes: u32,
    behaviour: Behaviour,
}

#[derive(Default)]
struct Stats {
    /// ICE and DTLS connected.
    connected: bool,
    /// The signaling: the WHEP POST, or Janus's requests up to its `start`.
    post_us: Option<u64>,
    connect_us: Option<u64>,
    /// From the first signaling request to the first whole video frame.
    first_frame_us: Option<u64>,
    bytes_window: u64,
    packets_window: u64,
    video_window: u64,
    audio_window: u64,
    /// Video frames in the window that did not follow the previous one (packets lost).
    gaps_window: u64,
    video_total: u64,
    audio_total: u64,
    /// `arrival − media time` in µs, for video frames inside the window.
    offsets: Vec<i64>,
    error: Option<String>,
    deleted: bool,
    /// Datagrams this viewer dropped on purpose (`--loss`).
    dropped: u64,
    /// A stalled viewer's video frames after its stall, in the window.
    video_after_stall: u64,
    stall_end: Option<Instant>,
    group: &'static str,
}

fn unix_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// A response of the tiny HTTP/1.1 client below.
struct HttpResponse {
    status: u16,
    location: Option<String>,
    body: Vec<u8>,
}

/// One request on its own connection (`Connection: close`), the response read to EOF;
/// `body` is `(content type, body)`.
async fn http(
    target: &Target,
    method: &str,
    path: &str,
    body: Option<(&str, &str)>,
) -> Result<HttpResponse> {
    let mut sock = TcpStream::connect(&target.addr).await.context("connect")?;
    sock.set_nodelay(true)?;
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nUser-Agent: webrtc-fanout\r\nConnection: close\r\n",
        target.host
    );
    if let Some((content_type, body)) = body {
        request.push_str(&format!(
            "Content-Type: {content_type}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ));
    } else {
        request.push_str("Content-Length: 0\r\n\r\n");
    }
    sock.write_all(request.as_bytes()).await?;
    let mut response = Vec::new();
    sock.read_to_end(&mut response).await.context("read")?;
    parse_response(&response)
}

fn parse_response(response: &[u8]) -> Result<HttpResponse> {
    let split = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .context("no end of the response head")?;
    let head = std::str::from_utf8(&response[..split]).context("response head")?;
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse().ok())
        .context("no status")?;
    let mut location = None;
    let mut length = None;
    let mut chunked = false;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("location") {
            location = Some(value.to_string());
        } else if name.eq_ignore_ascii_case("content-length") {
            length = value.parse::<usize>().ok();
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.eq_ignore_ascii_case("chunked");
        }
    }
    let mut body = response[split + 4..].to_vec();
    if chunked {
        body = dechunk(&body)?;
    } else if let Some(length) = length {
        body.truncate(length);
    }
    Ok(HttpResponse {
        status,
        location,
        body,
    })
}

/// A chunked body (RFC 9112, 7.1) as one piece; trailers are ignored.
fn dechunk(mut rest: &[u8]) -> Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line_end = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .context("chunk size line")?;
        let size_text = std::str::from_utf8(&rest[..line_end]).context("chunk size")?;
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16).context("chunk size")?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Ok(body);
        }
        body.extend_from_slice(rest.get(..size).context("short chunk")?);
        rest = rest.get(size + 2..).context("short chunk")?;
    }
}

/// SO_RCVBUF (SO_RCVBUFFORCE when allowed: root may go past `net.core.rmem_max`).
fn set_rcvbuf(socket: &UdpSocket, bytes: u32) -> Result<()> {
    use std::os::fd::AsRawFd;
    let value = libc::c_int::try_from(bytes)?;
    for option in [libc::SO_RCVBUFFORCE, libc::SO_RCVBUF] {
        // SAFETY: a plain setsockopt on a descriptor `socket` owns, with a c_int it
        // points to.
        let rc = unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                option,
                (&raw const value).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if rc == 0 {
            return Ok(());
        }
    }
    Err(std::io::Error::last_os_error()).context("SO_RCVBUF")
}

async fn viewer(target: Arc<Target>, at: Instant, window: Window, options: Options) -> Stats {
    sleep_until(at).await;
    let mut stats = Stats {
        group: options.behaviour.group(),
        stall_end: match options.behaviour {
            Behaviour::Stalled(_, until) => Some(until),
            _ => None,
        },
        ..Stats::default()
    };
    let mut location = None;
    let played = play(&target, window, options, &mut stats, &mut location);
    match timeout_at(window.hangup, played).await {
        Err(_) if stats.connected => {} // the window is over: the normal end
        Err(_) => stats.error = Some("not connected by the end of the window".into()),
        Ok(Ok(())) => stats.error = Some("the server closed the session".into()),
        Ok(Err(e)) => stats.error = Some(format!("{e:#}")),
    }
    if let Some(location) = location {
        let path = match location.strip_prefix("http://") {
            Some(rest) => rest
                .find('/')
                .map_or("/".to_string(), |i| rest[i..].to_string()),
            None => location,
        };
        stats.deleted = match options.janus_mountpoint {
            None => delete_session(&target, &path).await,
            Some(_) => janus(&target, &path, json!({"janus": "destroy"}))
                .await
                .is_ok(),
        };
    }
    stats
}

/// Ends a WHEP session; whether the server said so. Every viewer hangs up at once, and
/// the server refuses signaling from one address past its pending limit (503): such a
/// DELETE is tried again, so that no session outlives the step and loads the next one
/// until its silence timeout ends it.
async fn delete_session(target: &Target, path: &str) -> bool {
    for _ in 0..50 {
        match http(target, "DELETE", path, None).await {
            Ok(HttpResponse { status: 200, .. }) => return true,
            Ok(HttpResponse {
                status: 503 | 429, ..
            })
            | Err(_) => {
                let jitter = rand::random::<u64>() % 200;
                tokio::time::sleep(Duration::from_millis(100 + jitter)).await;
            }
            Ok(_) => return false,
        }
    }
    false
}

/// A Janus REST request; its JSON reply, an error for `"janus": "error"`.
async fn janus(
    target: &Target,
    path: &str,
    mut body: serde_json::Value,
) -> Result<serde_json::Value> {
    body["transaction"] = json!("t");
    let response = http(
        target,
        "POST",
        path,
        Some(("application/json", &body.to_string())),
    )
    .await?;
    let reply: serde_json::Value = serde_json::from_slice(&response.body).context("Janus reply")?;
    if reply["janus"] == "error" {
        bail!("Janus: {}", reply["error"]);
    }
    Ok(reply)
}

/// Watches `mountpoint` of Janus's streaming plugin: a session and a plugin handle, the
/// plugin's offer from the session's long poll, `rtc`'s answer back with `start`.
/// Returns the session's path (to destroy it at the end).
async fn janus_watch(target: &Target, mountpoint: u64, rtc: &mut Rtc) -> Result<String> {
    let created = janus(target, &target.path, json!({"janus": "create"})).await?;
    let session = format!("{}/{}", target.path, created["data"]["id"]);
    let attached = janus(
        target,
        &session,
        json!({"janus": "attach", "plugin": "janus.plugin.streaming"}),
    )
    .await?;
    let handle = format!("{session}/{}", attached["data"]["id"]);
    janus(
        target,
        &handle,
        json!({"janus": "message", "body": {"request": "watch", "id": mountpoint}}),
    )
    .await?;
    let offer = loop {
        let response = http(target, "GET", &format!("{session}?maxev=5"), None).await?;
        let events: serde_json::Value =
            serde_json::from_slice(&response.body).context("Janus event")?;
        let events = match events {
            serde_json::Value::Array(events) => events,
            event => vec![event],
        };
        if let Some(sdp) = events.iter().find_map(|e| e["jsep"]["sdp"].as_str()) {
            break SdpOffer::from_sdp_string(sdp).context("Janus offer")?;
        }
    };
    let answer = rtc.sdp_api().accept_offer(offer).context("Janus offer")?;
    janus(
        target,
        &handle,
        json!({"janus": "message", "body": {"request": "start"},
               "jsep": {"type": "answer", "sdp": answer.to_sdp_string()}}),
    )
    .await?;
    Ok(session)
}

async fn play(
    target: &Target,
    window: Window,
    options: Options,
    stats: &mut Stats,
    location: &mut Option<String>,
) -> Result<()> {
    let socket = UdpSocket::bind((options.local_ip, 0))
        .await
        .context("bind")?;
    let rcvbuf = match options.behaviour {
        // Small enough to fill within the stall (the kernel doubles it).
        Behaviour::Stalled(..) => 32 * 1024,
        _ => options.rcvbuf_bytes,
    };
    set_rcvbuf(&socket, rcvbuf)?;
    let local = socket.local_addr()?;
    let mut rtc = Rtc::builder().build(std::time::Instant::now());
    rtc.add_local_candidate(Candidate::host(local, "udp").context("candidate")?);
    let posted = Instant::now();
    if let Some(mountpoint) = options.janus_mountpoint {
        *location = Some(
            janus_watch(target, mountpoint, &mut rtc)
                .await
                .context("Janus")?,
        );
        stats.post_us = Some(micros(posted.elapsed()));
    } else {
        whep(target, options, &mut rtc, stats, location).await?;
    }

    let mut buf = vec![0u8; 2048];
    let timer = tokio::time::sleep_until(Instant::now());
    tokio::pin!(timer);
    loop {
        let next = loop {
            match rtc.poll_output().context("rtc")? {
                Output::Timeout(at) => break at,
                Output::Transmit(transmit) => {
                    if transmit.proto == Protocol::Udp {
                        let _ = socket.try_send_to(&transmit.contents, transmit.destination);
                    }
                }
                Output::Event(event) => {
                    if event_of(event, window, posted, stats)? {
                        return Ok(());
                    }
                }
            }
        };
        timer.as_mut().reset(Instant::from_std(next));
        let stalled_until = match options.behaviour {
            Behaviour::Stalled(from, until) if (from..until).contains(&Instant::now()) => {
                Some(until)
            }
            _ => None,
        };
        if let Some(until) = stalled_until {
            // Not reading: the socket's buffer fills and the kernel drops the rest.
            tokio::select! {
                () = sleep_until(until) => {}
                () = &mut timer => {
                    rtc.handle_input(Input::Timeout(std::time::Instant::now())).context("rtc")?;
                }
            }
            continue;
        }
        tokio::select! {
            received = socket.recv_from(&mut buf) => {
                let (n, source): (usize, SocketAddr) = received.context("receive")?;
                let now = Instant::now();
                if let Behaviour::Lossy(share) = options.behaviour
                    && stats.connected
                    && rand::random::<f64>() < share
                {
                    stats.dropped += 1;
                    continue;
                }
                if now >= window.start && now < window.end {
                    stats.bytes_window += n as u64;
                    stats.packets_window += 1;
                }
                if let Ok(receive) = Receive::new(Protocol::Udp, source, local, &buf[..n]) {
                    // A packet str0m refuses is dropped, as a browser would.
                    let _ = rtc.handle_input(Input::Receive(now.into_std(), receive));
                }
            }
            () = &mut timer => {
                rtc.handle_input(Input::Timeout(std::time::Instant::now())).context("rtc")?;
            }
        }
    }
}

/// The WHEP offer and answer: a recvonly offer POSTed, the answer applied.
async fn whep(
    target: &Target,
    options: Options,
    rtc: &mut Rtc,
    stats: &mut Stats,
    location: &mut Option<String>,
) -> Result<()> {
    let mut api = rtc.sdp_api();
    api.add_media(MediaKind::Video, Direction::RecvOnly, None, None, None);
    if options.audio {
        api.add_media(MediaKind::Audio, Direction::RecvOnly, None, None, None);
    }
    let (offer, pending) = api.apply().context("no offer")?;
    let posted = Instant::now();
    let sdp = offer.to_sdp_string();
    let response = http(
        target,
        "POST",
        &target.path,
        Some(("application/sdp", &sdp)),
    )
    .await
    .context("POST")?;
    stats.post_us = Some(micros(posted.elapsed()));
    if response.status != 201 {
        let body = String::from_utf8_lossy(&response.body);
        bail!(
            "POST: {} {}",
            response.status,
            body.chars().take(100).collect::<String>()
        );
    }
    *location = response.location;
    let answer = std::str::from_utf8(&response.body).context("answer")?;
    let answer = SdpAnswer::from_sdp_string(answer).context("answer")?;
    rtc.sdp_api()
        .accept_answer(pending, answer)
        .context("answer")?;
    Ok(())
}

/// Counts one str0m event; `true` when the session is over.
fn event_of(event: Event, window: Window, posted: Instant, stats: &mut Stats) -> Result<bool> {
    match event {
        Event::Connected => {
            stats.connected = true;
            stats.connect_us = Some(micros(posted.elapsed()));
        }
        Event::IceConnectionStateChange(IceConnectionState::Disconnected) => {
            bail!("ICE disconnected")
        }
        Event::Closed => return Ok(true),
        Event::MediaData(data) => {
            let now = Instant::now();
            let video = data.params.spec().codec == Codec::H264;
            if video {
                stats.video_total += 1;
                stats
                    .first_frame_us
                    .get_or_insert_with(|| micros(now - posted));
            } else {
                stats.audio_total += 1;
            }
            if now >= window.start && now < window.end {
                if video {
                    stats.video_window += 1;
                    if stats.stall_end.is_some_and(|end| now >= end) {
                        stats.video_after_stall += 1;
                    }
                    stats.gaps_window += u64::from(!data.contiguous);
                    let media_us = i64::try_from(data.time.as_micros()).unwrap_or(i64::MAX);
                    stats.offsets.push(unix_us() - media_us);
                } else {
                    stats.audio_window += 1;
                }
            }
        }
        _ => {}
    }
    Ok(false)
}

/// The kernel's UDP counters (`/proc/net/snmp`, every socket of the machine):
/// `(RcvbufErrors, SndbufErrors)`, datagrams dropped because a receive buffer was full
/// or a send found no room.
fn udp_drops() -> Option<(u64, u64)> {
    let snmp = std::fs::read_to_string("/proc/net/snmp").ok()?;
    let mut lines = snmp.lines().filter(|l| l.starts_with("Udp:"));
    let names: Vec<&str> = lines.next()?.split_whitespace().collect();
    let values: Vec<u64> = lines
        .next()?
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    let get = |name: &str| {
        let i = names.iter().position(|n| *n == name)?;
        values.get(i.checked_sub(1)?).copied()
    };
    Some((get("RcvbufErrors")?, get("SndbufErrors")?))
}

/// The median of `values` (0 when empty).
fn median(mut values: Vec<u64>) -> u64 {
    values.sort_unstable();
    values.get(values.len() / 2).copied().unwrap_or(0)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let args = Args::parse();
    let target = Arc::new(parse_url(&args.url, args.janus_mountpoint.is_some())?);
    if args.viewers == 0 || args.ramp_per_sec <= 0.0 || args.measure_secs == 0 {
        bail!("--viewers, --ramp-per-sec and --measure-secs must be positive");
    }
    if !(0.0..=50.0).contains(&args.loss) {
        bail!("--loss is a percentage from 0 to 50");
    }
    if args.clean_viewers + args.stall_viewers > args.viewers {
        bail!("--clean-viewers and --stall-viewers add up to more than --viewers");
    }
    let tick_hz = tick_hz();
    let me = [std::process::id()];
    let softirq_pid = args.ksoftirqd_core.and_then(ksoftirqd_pid);
    let softirq_ticks = || softirq_pid.and_then(proc_stat).map_or(0, |(_, t)| t);
    let options = Options {
        janus_mountpoint: args.janus_mountpoint,
        audio: !args.no_audio,
        local_ip: args.local_ip,
        rcvbuf_bytes: args.rcvbuf_bytes,
        behaviour: Behaviour::Clean,
    };

    let t0 = Instant::now();
    let base = sample_tree(&args.server_pid);
    let ramp = Duration::from_secs_f64(args.viewers as f64 / args.ramp_per_sec);
    let start = t0 + ramp + Duration::from_secs(args.warmup_secs);
    let end = start + Duration::from_secs(args.measure_secs);
    let window = Window {
        start,
        end,
        hangup: end + Duration::from_millis(500),
    };
    let stall_from = start + Duration::from_secs(1);
    let stall = Behaviour::Stalled(
        stall_from,
        stall_from + Duration::from_secs(args.stall_secs),
    );
    let tasks: Vec<_> = (0..args.viewers)
        .map(|i| {
            let at = t0 + Duration::from_secs_f64(i as f64 / args.ramp_per_sec);
            let behaviour = if i >= args.viewers - args.stall_viewers {
                stall
            } else if i >= args.clean_viewers && args.loss > 0.0 {
                Behaviour::Lossy(args.loss / 100.0)
            } else {
                Behaviour::Clean
            };
            let options = Options {
                behaviour,
                ..options
            };
            tokio::spawn(viewer(target.clone(), at, window, options))
        })
        .collect();

    sleep_until(window.start).await;
    let drops_start = udp_drops();
    let (k1, s1, g1, c1) = (
        softirq_ticks(),
        sample_tree(&args.server_pid),
        sample_tree(&me),
        core_ticks(),
    );
    sleep_until(window.end).await;
    let drops_end = udp_drops();
    let (k2, s2, g2, c2) = (
        softirq_ticks(),
        sample_tree(&args.server_pid),
        sample_tree(&me),
        core_ticks(),
    );

    let mut viewers = Vec::with_capacity(tasks.len());
    for task in tasks {
        match timeout_at(window.hangup + Duration::from_secs(15), task).await {
            Ok(Ok(stats)) => viewers.push(stats),
            _ => viewers.push(Stats {
                error: Some("viewer task did not finish".into()),
                ..Stats::default()
            }),
        }
    }

    let secs = args.measure_secs as f64;
    let connected: Vec<&Stats> = viewers.iter().filter(|v| v.connected).collect();
    let median_bytes = median(connected.iter().map(|v| v.bytes_window).collect());
    let median_frames = median(connected.iter().map(|v| v.video_window).collect());
    let (expected_bytes, bytes_source) = match args.expected_kbps {
        Some(kbps) => ((kbps * 125.0 * secs) as u64, "expected_kbps"),
        None => (median_bytes, "median_viewer"),
    };
    let expected_frames = match args.expected_fps {
        Some(fps) => (fps * secs) as u64,
        None => median_frames,
    };
    let fraction = args.full_rate_fraction;
    let full_rate = connected
        .iter()
        .filter(|v| {
            expected_bytes > 0
                && v.bytes_window as f64 >= fraction * expected_bytes as f64
                && v.video_window as f64 >= fraction * expected_frames as f64
        })
        .count();

    let mut delays = Vec::new();
    for v in &viewers {
        if let Some(min) = v.offsets.iter().min() {
            delays.extend(v.offsets.iter().map(|o| (o - min) as u64));
        }
    }
    delays.sort_unstable();
    let sorted = |values: Vec<u64>| {
        let mut values = values;
        values.sort_unstable();
        values
    };
    let first_frames = sorted(viewers.iter().filter_map(|v| v.first_frame_us).collect());
    let posts = sorted(viewers.iter().filter_map(|v| v.post_us).collect());
    let connects = sorted(viewers.iter().filter_map(|v| v.connect_us).collect());
    let mut errors: BTreeMap<String, usize> = BTreeMap::new();
    for e in viewers.iter().filter_map(|v| v.error.as_ref()) {
        *errors.entry(e.clone()).or_default() += 1;
    }
    let window_bytes: Vec<u64> = sorted(connected.iter().map(|v| v.bytes_window).collect());
    let window_frames: Vec<u64> = sorted(connected.iter().map(|v| v.video_window).collect());
    let packets: u64 = connected.iter().map(|v| v.packets_window).sum();
    let bytes: u64 = connected.iter().map(|v| v.bytes_window).sum();

    let kbps = |b: u64| round1(b as f64 * 8.0 / 1000.0 / secs);
    let fps = |f: u64| round1(f as f64 / secs);
    let softirq_secs = k2.saturating_sub(k1) as f64 / tick_hz;
    let cpu_secs = s2.ticks.saturating_sub(s1.ticks) as f64 / tick_hz + softirq_secs;
    let sampled = !args.server_pid.is_empty() && s2.procs > 0;
    let per_viewer = |v: f64| (!connected.is_empty()).then(|| v / connected.len() as f64);
    let per_viewer_sampled = |v: f64| if sampled { per_viewer(v) } else { None };
    // Per behaviour: how many viewers, their video frames and gaps in the window, the
    // delay p99 of their frames; the stalled viewers' frames after the stall.
    let mut groups = serde_json::Map::new();
    for name in ["clean", "lossy", "stalled"] {
        let members: Vec<&Stats> = viewers.iter().filter(|v| v.group == name).collect();
        if members.is_empty() {
            continue;
        }
        let frames = sorted(members.iter().map(|v| v.video_window).collect());
        let mut group_delays = Vec::new();
        for v in &members {
            if let Some(min) = v.offsets.iter().min() {
                group_delays.extend(v.offsets.iter().map(|o| (o - min) as u64));
            }
        }
        group_delays.sort_unstable();
        groups.insert(
            name.to_owned(),
            json!({
                "viewers": members.len(),
                "connected": members.iter().filter(|v| v.connected).count(),
                "min_video_frames": frames.first().copied().unwrap_or(0),
                "max_video_frames": frames.last().copied().unwrap_or(0),
                "video_gaps": members.iter().map(|v| v.gaps_window).sum::<u64>(),
                "datagrams_dropped": members.iter().map(|v| v.dropped).sum::<u64>(),
                "min_video_after_stall": members.iter().map(|v| v.video_after_stall).min(),
                "delay_p99_ms": percentile(&group_delays, 0.99),
            }),
        );
    }
    let mut report = json!({
        "players": args.viewers,
        "players_connected": connected.len(),
        "players_with_media": viewers.iter().filter(|v| v.video_total + v.audio_total > 0).count(),
        "players_failed": viewers.iter().filter(|v| v.error.is_some()).count(),
        "players_full_rate": full_rate,
        "players_deleted": viewers.iter().filter(|v| v.deleted).count(),
        "expected_bytes": expected_bytes,
        "expected_frames": expected_frames,
        "expected_source": bytes_source,
        "median_kbps": kbps(median_bytes),
        "min_kbps": kbps(window_bytes.first().copied().unwrap_or(0)),
        "median_fps": fps(median_frames),
        "min_fps": fps(window_frames.first().copied().unwrap_or(0)),
        "video_frames": viewers.iter().map(|v| v.video_window).sum::<u64>(),
        "audio_frames": viewers.iter().map(|v| v.audio_window).sum::<u64>(),
        "players_with_audio": viewers.iter().filter(|v| v.audio_total > 0).count(),
        "video_gaps": viewers.iter().map(|v| v.gaps_window).sum::<u64>(),
        "udp_rcvbuf_errors": drops_start.zip(drops_end).map(|(a, b)| b.0.saturating_sub(a.0)),
        "udp_sndbuf_errors": drops_start.zip(drops_end).map(|(a, b)| b.1.saturating_sub(a.1)),
        "packets_per_player_sec": per_viewer(packets as f64 / secs).map(round1),
        "bytes_per_packet": (packets > 0).then(|| bytes / packets),
        "first_frame_p50_ms": percentile(&first_frames, 0.50),
        "first_frame_p95_ms": percentile(&first_frames, 0.95),
        "first_frame_max_ms": percentile(&first_frames, 1.0),
        "post_p50_ms": percentile(&posts, 0.50),
        "connect_p50_ms": percentile(&connects, 0.50),
        "connect_max_ms": percentile(&connects, 1.0),
        "delay_p50_ms": percentile(&delays, 0.50),
        "delay_p99_ms": percentile(&delays, 0.99),
        "delay_max_ms": percentile(&delays, 1.0),
        "delay_samples": delays.len(),
        "measure_secs": args.measure_secs,
        "server_procs": sampled.then_some(s2.procs),
        "server_cpu_pct": sampled.then(|| round1(cpu_secs / secs * 100.0)),
        "ksoftirqd_cpu_pct": softirq_pid.map(|_| round1(softirq_secs / secs * 100.0)),
        "server_cpu_ms_per_player_sec": per_viewer_sampled(cpu_secs * 1000.0 / secs).map(|v| (v * 1000.0).round() / 1000.0),
        "server_rss_base_kb": sampled.then_some(base.rss_kb),
        "server_rss_end_kb": sampled.then_some(s2.rss_kb),
        "server_rss_per_player_kb": per_viewer_sampled(s2.rss_kb as f64 - base.rss_kb as f64).map(round1),
        "core_busy_pct": core_busy_pct(&c1, &c2),
        "gen_cpu_pct": round1(g2.ticks.saturating_sub(g1.ticks) as f64 / tick_hz / secs * 100.0),
        "errors": errors,
    });
    report["groups"] = serde_json::Value::Object(groups);
    println!("{report}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let t = parse_url("http://127.0.0.1:18481/live/bench/whep.stream", false).unwrap();
        assert_eq!(
            (t.addr.as_str(), t.host.as_str(), t.path.as_str()),
            (
                "127.0.0.1:18481",
                "127.0.0.1:18481",
                "/live/bench/whep.stream"
            )
        );
        assert_eq!(
            parse_url("http://localhost/a/b/whep.stream", false)
                .unwrap()
                .addr,
            "localhost:80"
        );
        for bad in [
            "https://h/a/b/whep.stream",
            "http://h/a/b/playlist.m3u8",
            "http:///a/b/whep.stream",
        ] {
            assert!(parse_url(bad, false).is_err(), "{bad}");
        }
        assert_eq!(
            parse_url("http://127.0.0.1:8088/janus", true).unwrap().path,
            "/janus"
        );
    }

    #[test]
    fn responses() {
        let r = parse_response(
            b"HTTP/1.1 201 Created\r\nlocation: /live/b/whep.stream/1-ab\r\ncontent-length: 3\r\n\r\nv=0 and more",
        )
        .unwrap();
        assert_eq!(r.status, 201);
        assert_eq!(r.location.as_deref(), Some("/live/b/whep.stream/1-ab"));
        assert_eq!(r.body, b"v=0");
        assert!(parse_response(b"HTTP/1.1 200 OK\r\n").is_err());
        let chunked = parse_response(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{\"a\"\r\n3;x=y\r\n:1}\r\n0\r\n\r\n",
        )
        .unwrap();
        assert_eq!(chunked.body, b"{\"a\":1}");
        assert!(
            parse_response(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n9\r\nab")
                .is_err()
        );
    }

    #[test]
    fn udp_counters_are_read() {
        assert!(udp_drops().is_some());
    }

    #[test]
    fn medians() {
        assert_eq!(median(vec![]), 0);
        assert_eq!(median(vec![3, 1, 2]), 2);
    }
}
