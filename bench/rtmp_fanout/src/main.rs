//! `rtmp-fanout`: an RTMP (and RTSP) fan-out load generator. It opens `--players` RTMP
//! play connections (RTSP ones, TCP interleaved, for an `rtsp://` URL: see [`rtsp`]) to
//! one stream from a single process (tokio, one task per player, started at
//! `--ramp-per-sec`), then, after `--warmup-secs`, measures for `--measure-secs`: bytes and
//! audio/video messages per player, per-player delivery delay, and (with `--server-pid`)
//! the CPU time and RSS of the server's process tree. It prints one JSON object.
//!
//! Cost of the generator itself. Only `--probes` players (50, spread evenly) read every
//! message as it arrives; the others set SO_RCVLOWAT (`--lowat-bytes`, 8 KiB ≈ 110 ms of a
//! 600 kbps stream) once playing, so the kernel wakes them a few times a second instead of
//! once per RTMP message. That keeps one core of generator well ahead of one core of server.
//! The server still sends every message as it goes; on loopback its core does less kernel
//! work waking readers (the same for every server measured).
//!
//! Server cost. `--server-pid` roots (and all their descendants, so strom's supervisor and
//! workers, nginx's master and worker) are sampled from `/proc`: utime+stime before the
//! first connection and at both ends of the window, VmRSS before the first connection and
//! at the end. `--ksoftirqd-core N` adds `ksoftirqd/N`, where the kernel moves network work
//! of the server's core under load. Per-player figures divide by the connected players.
//!
//! Server segments. At both ends of the window `ss -ti` (iproute2) sums the kernel's
//! `data_segs_out` and `bytes_sent` over the server's established connections (local port
//! of `--url`; the end sample one second early, before the players hang up):
//! `server_data_segs_per_player_sec` and `server_bytes_per_seg`. On loopback
//! most of a server's CPU per player is the kernel's work per segment (sending, and the
//! players' receive and ACKs, which run on the server's core), so this is the figure that
//! explains CPU per player-second: servers that send as many segments pay about as much.
//!
//! Delivery delay. For every audio/video message that arrives inside the window a probe
//! player records `offset = arrival wall clock − (publisher start + RTMP timestamp)`.
//! Within one player, a constant part of that offset (the clock offset between publisher
//! and player, the server rebasing timestamps, encoder latency) is the same for every
//! message, so the player's minimum offset is subtracted: `delay = offset − min(offset)`.
//! The reported p50/p99 are taken over all messages of all players and therefore measure
//! how much later than its best-case message the server delivers a message — queueing in
//! the server and the sockets — not the absolute glass-to-glass latency. With
//! `--publisher-start-ms` the un-normalized median is reported as well
//! (`abs_delay_p50_ms`), which is meaningful only when the server forwards the
//! publisher's timestamps unchanged.
//!
//! Full rate. A player is at full rate when it received at least `--full-rate-fraction`
//! (0.95) of the expected bytes in the window; expected is `--expected-kbps` × window when
//! given, otherwise the median connected player's bytes.
//!
//! Nothing read from the network is unwrapped: a malformed or closed connection ends that
//! player with its error counted in `errors`.

mod rtsp;

use anyhow::{Context, Result, bail};
use clap::Parser;
use rml_rtmp::handshake::{Handshake, HandshakeProcessResult, PeerType};
use rml_rtmp::sessions::{
    ClientSession, ClientSessionConfig, ClientSessionEvent, ClientSessionResult,
};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use strom_bench_rtmp_fanout::{
    core_busy_pct, core_ticks, ksoftirqd_pid, percentile, proc_stat, round1, sample_tree, tick_hz,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{Instant, sleep_until, timeout_at};

#[derive(Parser, Debug)]
#[command(about = "RTMP fan-out load generator (many play connections, bytes and delay)")]
struct Args {
    /// `rtmp://host[:port]/app/stream`, or `rtsp://host:port/app/stream` for RTSP players.
    #[arg(long)]
    url: String,
    /// Number of play connections.
    #[arg(long, default_value_t = 100)]
    players: usize,
    /// New connections per second while ramping up.
    #[arg(long, default_value_t = 200.0)]
    ramp_per_sec: f64,
    /// Seconds between the last connection start and the measurement window.
    #[arg(long, default_value_t = 5)]
    warmup_secs: u64,
    /// Length of the measurement window.
    #[arg(long, default_value_t = 20)]
    measure_secs: u64,
    /// Expected stream rate; without it the median player's bytes are the expectation.
    #[arg(long)]
    expected_kbps: Option<f64>,
    /// Fraction of the expected bytes a player needs to count as served at full rate.
    #[arg(long, default_value_t = 0.95)]
    full_rate_fraction: f64,
    /// Server process to sample (with all its descendants); repeatable or comma-separated.
    #[arg(long, value_delimiter = ',')]
    server_pid: Vec<u32>,
    /// Players (spread evenly over the ramp) that are delay probes: they read every message
    /// as it arrives. The others only count, with SO_RCVLOWAT so that they wake up once per
    /// `--lowat-bytes` and the generator stays far from saturating its core.
    #[arg(long, default_value_t = 50)]
    probes: usize,
    /// SO_RCVLOWAT of the counting (non-probe) players once playing; 0 reads eagerly.
    #[arg(long, default_value_t = 8192)]
    lowat_bytes: u32,
    /// Add the kernel's softirq thread of this core (`ksoftirqd/N`) to the server's CPU: under
    /// load the kernel moves the network work of the server's core there.
    #[arg(long)]
    ksoftirqd_core: Option<usize>,
    /// Wall clock (Unix ms) at which the publisher started, for `abs_delay_p50_ms`.
    #[arg(long)]
    publisher_start_ms: Option<i64>,
}

/// Where to connect and what to play.
struct Target {
    addr: String,
    app: String,
    stream: String,
    tc_url: String,
    /// Set for RTSP players: the URL they DESCRIBE.
    rtsp_url: Option<String>,
}

fn parse_url(url: &str) -> Result<Target> {
    if let Some(rest) = url.strip_prefix("rtsp://") {
        let (host, _) = rest.split_once('/').context("the URL needs /app/stream")?;
        if !host.contains(':') {
            bail!("the RTSP URL needs a port");
        }
        return Ok(Target {
            addr: host.to_string(),
            app: String::new(),
            stream: String::new(),
            tc_url: String::new(),
            rtsp_url: Some(url.to_string()),
        });
    }
    let rest = url
        .strip_prefix("rtmp://")
        .context("the URL must start with rtmp://")?;
    let (host, path) = rest.split_once('/').context("the URL needs /app/stream")?;
    let (app, stream) = path.split_once('/').context("the URL needs /app/stream")?;
    if host.is_empty() || app.is_empty() || stream.is_empty() {
        bail!("the URL needs a host, an app and a stream");
    }
    let addr = if host.contains(':') {
        host.to_string()
    } else {
        format!("{host}:1935")
    };
    Ok(Target {
        tc_url: format!("rtmp://{addr}/{app}"),
        addr,
        app: app.to_string(),
        stream: stream.to_string(),
        rtsp_url: None,
    })
}

/// The measurement window and the clock reference shared by every player.
#[derive(Clone, Copy)]
pub(crate) struct Window {
    pub(crate) start: Instant,
    end: Instant,
    publisher_start_us: i64,
    pub(crate) lowat_bytes: u32,
}

#[derive(Default)]
pub(crate) struct Stats {
    pub(crate) connected: bool,
    pub(crate) probe: bool,
    pub(crate) bytes_total: u64,
    pub(crate) bytes_window: u64,
    video: u64,
    audio: u64,
    /// `arrival − (publisher start + timestamp)` in µs, for messages inside the window.
    offsets: Vec<i64>,
    error: Option<String>,
}

fn unix_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

async fn player(target: Arc<Target>, start: Instant, window: Window, probe: bool) -> Stats {
    sleep_until(start).await;
    let mut stats = Stats {
        probe,
        ..Stats::default()
    };
    let played = async {
        match &target.rtsp_url {
            Some(url) => rtsp::play(&target.addr, url, window, &mut stats).await,
            None => play(&target, window, &mut stats).await,
        }
    };
    match timeout_at(window.end, played).await {
        Err(_) if stats.connected => {} // the window is over: the normal end
        Err(_) => stats.error = Some("no NetStream.Play.Start by the end of the window".into()),
        Ok(Ok(())) => stats.error = Some("server closed the connection".into()),
        Ok(Err(e)) => stats.error = Some(format!("{e:#}")),
    }
    stats
}

async fn play(target: &Target, window: Window, stats: &mut Stats) -> Result<()> {
    let mut sock = TcpStream::connect(&target.addr).await.context("connect")?;
    sock.set_nodelay(true)?;
    let mut handshake = Handshake::new(PeerType::Client);
    sock.write_all(&handshake.generate_outbound_p0_and_p1()?)
        .await?;
    let mut buf = vec![0u8; 16 * 1024];
    let leftover = loop {
        let n = sock.read(&mut buf).await.context("handshake read")?;
        if n == 0 {
            bail!("closed during the handshake");
        }
        stats.bytes_total += n as u64;
        match handshake.process_bytes(&buf[..n]).context("handshake")? {
            HandshakeProcessResult::InProgress { response_bytes } => {
                sock.write_all(&response_bytes).await?;
            }
            HandshakeProcessResult::Completed {
                response_bytes,
                remaining_bytes,
            } => {
                sock.write_all(&response_bytes).await?;
                break remaining_bytes;
            }
        }
    };

    let mut config = ClientSessionConfig::new();
    config.tc_url = Some(target.tc_url.clone());
    let (mut session, mut results) = ClientSession::new(config).context("session")?;
    results.push(session.request_connection(target.app.clone())?);
    results.extend(session.handle_input(&leftover).context("rtmp")?);
    let mut out = Vec::new();
    handle(
        &mut session,
        results,
        target,
        window,
        Instant::now(),
        stats,
        &mut out,
    )?;
    let mut lowat_set = stats.probe || window.lowat_bytes == 0;
    loop {
        if stats.connected && !lowat_set {
            set_rcvlowat(&sock, window.lowat_bytes)?;
            lowat_set = true;
        }
        if !out.is_empty() {
            sock.write_all(&out).await?;
            out.clear();
        }
        let n = sock.read(&mut buf).await.context("read")?;
        if n == 0 {
            return Ok(());
        }
        let now = Instant::now();
        stats.bytes_total += n as u64;
        if now >= window.start {
            stats.bytes_window += n as u64;
        }
        let results = session.handle_input(&buf[..n]).context("rtmp")?;
        handle(&mut session, results, target, window, now, stats, &mut out)?;
    }
}

/// Wakes the reader only once `bytes` are queued (Linux SO_RCVLOWAT): a counting player
/// then costs one read per `bytes`, not one per RTMP message.
pub(crate) fn set_rcvlowat(sock: &TcpStream, bytes: u32) -> Result<()> {
    use std::os::fd::AsRawFd;
    let value = libc::c_int::try_from(bytes)?;
    // SAFETY: a plain setsockopt on a descriptor `sock` owns, with a c_int it points to.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVLOWAT,
            (&raw const value).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error()).context("SO_RCVLOWAT");
    }
    Ok(())
}

fn handle(
    session: &mut ClientSession,
    results: Vec<ClientSessionResult>,
    target: &Target,
    window: Window,
    now: Instant,
    stats: &mut Stats,
    out: &mut Vec<u8>,
) -> Result<()> {
    let in_window = now >= window.start;
    let arrival_us = if in_window { unix_us() } else { 0 };
    for result in results {
        let timestamp = match result {
            ClientSessionResult::OutboundResponse(packet) => {
                out.extend_from_slice(&packet.bytes);
                continue;
            }
            ClientSessionResult::RaisedEvent(event) => match event {
                ClientSessionEvent::ConnectionRequestAccepted => {
                    let play = session.request_playback(target.stream.clone())?;
                    if let ClientSessionResult::OutboundResponse(packet) = play {
                        out.extend_from_slice(&packet.bytes);
                    }
                    continue;
                }
                ClientSessionEvent::ConnectionRequestRejected { description } => {
                    bail!("connect rejected: {description}")
                }
                ClientSessionEvent::PlaybackRequestAccepted => {
                    stats.connected = true;
                    continue;
                }
                ClientSessionEvent::VideoDataReceived { timestamp, .. } => {
                    stats.video += u64::from(in_window);
                    timestamp
                }
                ClientSessionEvent::AudioDataReceived { timestamp, .. } => {
                    stats.audio += u64::from(in_window);
                    timestamp
                }
                _ => continue,
            },
            ClientSessionResult::UnhandleableMessageReceived(_) => continue,
        };
        if in_window && stats.probe {
            let sent_us = window.publisher_start_us + i64::from(timestamp.value) * 1000;
            stats.offsets.push(arrival_us - sent_us);
        }
    }
    Ok(())
}

/// The window's segments are counted this long before its end, while every player is
/// still connected (`--measure-secs` is at least 10).
const SEGMENTS_BEFORE_END: Duration = Duration::from_secs(1);

/// TCP data segments and payload bytes the server sent on its established connections.
struct SentSegments {
    segments: u64,
    bytes: u64,
}

/// [`SentSegments`] so far on the connections from local `port`, summed from the kernel's
/// per-socket counters as `ss -ti` shows them (`data_segs_out`, `bytes_sent`); `None`
/// without `ss` (Debian package iproute2), which the report then shows as null.
fn sent_segments(port: u16) -> Option<SentSegments> {
    let filter = format!("( sport = :{port} )");
    let output = match std::process::Command::new("ss")
        .args(["-tinH", "state", "established", &filter])
        .output()
    {
        Ok(output) if output.status.success() => output,
        _ => {
            eprintln!(
                "rtmp-fanout: `ss` failed (install the Debian package iproute2): no segment counts"
            );
            return None;
        }
    };
    let mut sent = SentSegments {
        segments: 0,
        bytes: 0,
    };
    for field in String::from_utf8_lossy(&output.stdout).split_whitespace() {
        let counter = |name: &str| field.strip_prefix(name).and_then(|v| v.parse::<u64>().ok());
        if let Some(segments) = counter("data_segs_out:") {
            sent.segments += segments;
        } else if let Some(bytes) = counter("bytes_sent:") {
            sent.bytes += bytes;
        }
    }
    Some(sent)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let args = Args::parse();
    let target = Arc::new(parse_url(&args.url)?);
    if args.players == 0 || args.ramp_per_sec <= 0.0 || args.measure_secs == 0 {
        bail!("--players, --ramp-per-sec and --measure-secs must be positive");
    }
    let tick_hz = tick_hz();
    let me = [std::process::id()];
    let softirq_pid = args.ksoftirqd_core.and_then(ksoftirqd_pid);
    let softirq_ticks = || softirq_pid.and_then(proc_stat).map_or(0, |(_, t)| t);

    let t0 = Instant::now();
    let base = sample_tree(&args.server_pid);
    let ramp = Duration::from_secs_f64(args.players as f64 / args.ramp_per_sec);
    let start = t0 + ramp + Duration::from_secs(args.warmup_secs);
    let window = Window {
        start,
        end: start + Duration::from_secs(args.measure_secs),
        publisher_start_us: args.publisher_start_ms.unwrap_or(0) * 1000,
        lowat_bytes: args.lowat_bytes,
    };
    let tasks: Vec<_> = (0..args.players)
        .map(|i| {
            let at = t0 + Duration::from_secs_f64(i as f64 / args.ramp_per_sec);
            let probe = i % (args.players / args.probes.max(1)).max(1) == 0;
            tokio::spawn(player(target.clone(), at, window, probe))
        })
        .collect();

    let server_port = target
        .addr
        .rsplit(':')
        .next()
        .and_then(|port| port.parse::<u16>().ok());
    sleep_until(window.start).await;
    let segments_start = tokio::task::spawn_blocking(move || server_port.and_then(sent_segments));
    let (k1, s1, g1, c1) = (
        softirq_ticks(),
        sample_tree(&args.server_pid),
        sample_tree(&me),
        core_ticks(),
    );
    // The players hang up at the window's end: count their segments just before.
    sleep_until(window.end - SEGMENTS_BEFORE_END).await;
    let segments_end = tokio::task::spawn_blocking(move || server_port.and_then(sent_segments));
    sleep_until(window.end).await;
    let (k2, s2, g2, c2) = (
        softirq_ticks(),
        sample_tree(&args.server_pid),
        sample_tree(&me),
        core_ticks(),
    );
    let segments = match (segments_start.await, segments_end.await) {
        (Ok(Some(start)), Ok(Some(end))) => Some(SentSegments {
            segments: end.segments.saturating_sub(start.segments),
            bytes: end.bytes.saturating_sub(start.bytes),
        }),
        _ => None,
    };

    let mut players = Vec::with_capacity(tasks.len());
    for task in tasks {
        match timeout_at(window.end + Duration::from_secs(10), task).await {
            Ok(Ok(stats)) => players.push(stats),
            _ => players.push(Stats {
                error: Some("player task did not finish".into()),
                ..Stats::default()
            }),
        }
    }

    let secs = args.measure_secs as f64;
    let segment_secs = (secs - SEGMENTS_BEFORE_END.as_secs_f64()).max(1.0);
    let connected: Vec<&Stats> = players.iter().filter(|p| p.connected).collect();
    let mut window_bytes: Vec<u64> = connected.iter().map(|p| p.bytes_window).collect();
    window_bytes.sort_unstable();
    let median = window_bytes
        .get(window_bytes.len() / 2)
        .copied()
        .unwrap_or(0);
    let (expected, source) = match args.expected_kbps {
        Some(kbps) => ((kbps * 125.0 * secs) as u64, "expected_kbps"),
        None => (median, "median_player"),
    };
    let full_rate = connected
        .iter()
        .filter(|p| {
            expected > 0 && p.bytes_window as f64 >= args.full_rate_fraction * expected as f64
        })
        .count();

    let mut delays = Vec::new();
    let mut raw = Vec::new();
    for p in &players {
        if let Some(min) = p.offsets.iter().min() {
            delays.extend(p.offsets.iter().map(|o| (o - min) as u64));
            raw.extend(p.offsets.iter().copied());
        }
    }
    delays.sort_unstable();
    raw.sort_unstable();
    let abs_p50 = match args.publisher_start_ms {
        Some(_) if !raw.is_empty() => Some(round1(raw[raw.len() / 2] as f64 / 1000.0)),
        _ => None,
    };
    let mut errors: BTreeMap<String, usize> = BTreeMap::new();
    for e in players.iter().filter_map(|p| p.error.as_ref()) {
        *errors.entry(e.clone()).or_default() += 1;
    }

    let kbps = |b: u64| round1(b as f64 * 8.0 / 1000.0 / secs);
    let softirq_secs = k2.saturating_sub(k1) as f64 / tick_hz;
    let cpu_secs = s2.ticks.saturating_sub(s1.ticks) as f64 / tick_hz + softirq_secs;
    let sampled = !args.server_pid.is_empty() && s2.procs > 0;
    let per_player =
        |v: f64| (sampled && !connected.is_empty()).then(|| v / connected.len() as f64);
    let report = json!({
        "players": args.players,
        "players_connected": connected.len(),
        "players_with_media": players.iter().filter(|p| p.video + p.audio > 0).count(),
        "players_failed": players.iter().filter(|p| p.error.is_some()).count(),
        "players_full_rate": full_rate,
        "expected_bytes": expected,
        "expected_source": source,
        "median_kbps": kbps(median),
        "min_kbps": kbps(window_bytes.first().copied().unwrap_or(0)),
        "delay_p50_ms": percentile(&delays, 0.50),
        "delay_p99_ms": percentile(&delays, 0.99),
        "delay_max_ms": percentile(&delays, 1.0),
        "abs_delay_p50_ms": abs_p50,
        "delay_samples": delays.len(),
        "delay_probes": players.iter().filter(|p| p.probe && p.connected).count(),
        "video_msgs": players.iter().map(|p| p.video).sum::<u64>(),
        "audio_msgs": players.iter().map(|p| p.audio).sum::<u64>(),
        "bytes_window_total": players.iter().map(|p| p.bytes_window).sum::<u64>(),
        "bytes_total": players.iter().map(|p| p.bytes_total).sum::<u64>(),
        "measure_secs": args.measure_secs,
        "server_procs": sampled.then_some(s2.procs),
        "server_cpu_pct": sampled.then(|| round1(cpu_secs / secs * 100.0)),
        "ksoftirqd_cpu_pct": softirq_pid.map(|_| round1(softirq_secs / secs * 100.0)),
        "server_cpu_ms_per_player_sec": per_player(cpu_secs * 1000.0 / secs).map(|v| (v * 1000.0).round() / 1000.0),
        "server_data_segs_per_player_sec": segments.as_ref().and_then(|s| per_player(s.segments as f64 / segment_secs)).map(round1),
        "server_bytes_per_seg": segments.as_ref().filter(|s| s.segments > 0).map(|s| s.bytes / s.segments),
        "server_rss_base_kb": sampled.then_some(base.rss_kb),
        "server_rss_end_kb": sampled.then_some(s2.rss_kb),
        "server_rss_per_player_kb": per_player(s2.rss_kb as f64 - base.rss_kb as f64).map(round1),
        "core_busy_pct": core_busy_pct(&c1, &c2),
        "gen_cpu_pct": round1(g2.ticks.saturating_sub(g1.ticks) as f64 / tick_hz / secs * 100.0),
        "errors": errors,
    });
    println!("{report}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let t = parse_url("rtmp://127.0.0.1:19350/live/bench").unwrap();
        assert_eq!(
            (t.addr.as_str(), t.app.as_str(), t.stream.as_str()),
            ("127.0.0.1:19350", "live", "bench")
        );
        assert_eq!(t.tc_url, "rtmp://127.0.0.1:19350/live");
        assert_eq!(
            parse_url("rtmp://localhost/a/b/c").unwrap().addr,
            "localhost:1935"
        );
        assert_eq!(parse_url("rtmp://localhost/a/b/c").unwrap().stream, "b/c");
        for bad in ["http://h/a/b", "rtmp://h/a", "rtmp://h//b", "rtmp:///a/b"] {
            assert!(parse_url(bad).is_err(), "{bad}");
        }
    }
}

#[cfg(test)]
mod segment_tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn segments_sent_from_a_port_are_counted() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut client = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        let before = sent_segments(port).expect("ss (iproute2) runs");
        for _ in 0..5 {
            server.write_all(&[7; 1000]).unwrap();
            let mut buf = [0; 1000];
            client.read_exact(&mut buf).unwrap();
        }
        let after = sent_segments(port).unwrap();
        assert!(
            after.segments >= before.segments + 5,
            "{} -> {}",
            before.segments,
            after.segments
        );
        assert_eq!(after.bytes - before.bytes, 5000);
    }
}
