//! `cluster-load`: a light RTMP publisher load generator for the cluster registry's
//! benchmark (bench/cluster/claims.sh). From one process (tokio, one task per publisher)
//! it opens `--per-target` publish connections to each `--target`
//! (`rtmp://host:port/app`), started at `--rate` per second over all targets together
//! (round-robin: publisher i goes to target i mod T and publishes `<prefix><i>`). Each
//! one does the RTMP handshake, `connect`, `createStream` and `publish` (live), then sends
//! the AVC sequence header and the keyframe read from `--flv` (the first of each in the
//! file: the script makes a one-frame 64x64 H.264 FLV with ffmpeg), and the keyframe again
//! every `--keyframe-secs` so that the server's publisher idle timeout never ends it. Every
//! publisher hangs up `--hold-secs` after the last one started, or at SIGINT/SIGTERM
//! (then publishers not started yet are not started).
//!
//! `--events FILE` gets one JSON line per publisher as soon as its publish is answered:
//! `{"stream", "target", "started_ms", "accepted_ms"}` (Unix milliseconds: the connection's
//! start and the `NetStream.Publish.Start`), or `"refused"`/`"error"` instead of
//! `accepted_ms`. The script joins them with what an edge's registry shows. At the end a
//! JSON summary goes to stdout: publishers accepted, refused, failed and ended early by
//! the server, and the p50/p99 of connection start to publish accepted.
//!
//! Nothing read from the network is unwrapped: a malformed or closed connection ends that
//! publisher with its error counted.

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use clap::Parser;
use rml_rtmp::handshake::{Handshake, HandshakeProcessResult, PeerType};
use rml_rtmp::sessions::{
    ClientSession, ClientSessionConfig, ClientSessionEvent, ClientSessionResult, PublishRequestType,
};
use rml_rtmp::time::RtmpTimestamp;
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{Instant, sleep_until, timeout};

#[derive(Parser, Debug)]
#[command(about = "Many light RTMP publishers (cluster registry benchmark)")]
struct Args {
    /// `rtmp://host:port/app`; repeatable (or comma-separated): publishers are spread
    /// over the targets round-robin.
    #[arg(long = "target", required = true, value_delimiter = ',')]
    targets: Vec<String>,
    /// Publishers per target.
    #[arg(long, default_value_t = 100)]
    per_target: usize,
    /// New publishes per second, all targets together.
    #[arg(long, default_value_t = 100.0)]
    rate: f64,
    /// Stream names are this prefix and the publisher's index.
    #[arg(long, default_value = "s")]
    prefix: String,
    /// An FLV file whose first AVC sequence header and first keyframe every publisher sends.
    #[arg(long)]
    flv: PathBuf,
    /// Seconds between a publisher's keyframes.
    #[arg(long, default_value_t = 4.0)]
    keyframe_secs: f64,
    /// Seconds every publisher stays after the last one started.
    #[arg(long, default_value_t = 30)]
    hold_secs: u64,
    /// Seconds a publish may take to be answered.
    #[arg(long, default_value_t = 20)]
    answer_timeout_secs: u64,
    /// JSON lines, one per publisher, as its publish is answered.
    #[arg(long)]
    events: Option<PathBuf>,
}

/// Where one target's publishers connect.
struct Target {
    addr: String,
    app: String,
    tc_url: String,
}

fn parse_target(url: &str) -> Result<Target> {
    let rest = url
        .strip_prefix("rtmp://")
        .context("a target must start with rtmp://")?;
    let (host, app) = rest.split_once('/').context("a target needs /app")?;
    let app = app.trim_end_matches('/');
    if host.is_empty() || app.is_empty() || app.contains('/') {
        bail!("a target is rtmp://host[:port]/app, got {url}");
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
    })
}

/// The two video messages every publisher sends (FLV video tag bodies).
struct Media {
    sequence_header: Bytes,
    keyframe: Bytes,
}

/// The first AVC sequence header and the first AVC keyframe of an FLV file.
fn read_flv(path: &PathBuf) -> Result<Media> {
    let data = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    if data.len() < 13 || &data[..3] != b"FLV" {
        bail!("{} is not an FLV file", path.display());
    }
    let header_len = u32::from_be_bytes([data[5], data[6], data[7], data[8]]) as usize;
    let mut at = header_len + 4;
    let (mut sequence_header, mut keyframe) = (None, None);
    while at + 11 <= data.len() && (sequence_header.is_none() || keyframe.is_none()) {
        let kind = data[at];
        let size = u32::from_be_bytes([0, data[at + 1], data[at + 2], data[at + 3]]) as usize;
        let body = data
            .get(at + 11..at + 11 + size)
            .context("FLV tag cut short")?;
        // Video, AVC (codec 7): packet type 0 is the sequence header, 1 NAL units;
        // frame type 1 is a keyframe.
        if kind == 9 && body.len() > 5 && body[0] & 0x0f == 7 {
            match body[1] {
                0 if sequence_header.is_none() => {
                    sequence_header = Some(Bytes::copy_from_slice(body))
                }
                1 if body[0] >> 4 == 1 && keyframe.is_none() => {
                    keyframe = Some(Bytes::copy_from_slice(body))
                }
                _ => {}
            }
        }
        at += 11 + size + 4;
    }
    Ok(Media {
        sequence_header: sequence_header.context("no AVC sequence header in the FLV")?,
        keyframe: keyframe.context("no AVC keyframe in the FLV")?,
    })
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// How a publisher's publish was answered.
enum Answer {
    Accepted,
    Refused(String),
}

/// How a publisher ended.
#[derive(Default)]
struct Outcome {
    /// Connection start to publish accepted, in microseconds.
    accepted_us: Option<u64>,
    refused: Option<String>,
    error: Option<String>,
    /// Accepted, then ended by the server before the hold was over.
    ended_early: bool,
}

struct Publisher {
    index: usize,
    target_index: usize,
    stream: String,
    target: Rc<Target>,
    media: Rc<Media>,
    keyframe_every: Duration,
    answer_timeout: Duration,
    events: Rc<Events>,
    /// Turns true at SIGINT/SIGTERM: every publisher ends.
    stop: tokio::sync::watch::Receiver<bool>,
}

/// The `--events` file, lines written as publishes are answered.
struct Events(Option<Mutex<std::io::BufWriter<std::fs::File>>>);

impl Events {
    fn write(&self, line: &serde_json::Value) {
        if let Some(file) = &self.0
            && let Ok(mut file) = file.lock()
        {
            let _ = writeln!(file, "{line}");
        }
    }

    fn flush(&self) {
        if let Some(file) = &self.0
            && let Ok(mut file) = file.lock()
        {
            let _ = file.flush();
        }
    }
}

/// Socket, session and the bytes the session wants sent.
struct Connection {
    sock: TcpStream,
    session: ClientSession,
    out: Vec<u8>,
    buf: Vec<u8>,
}

impl Connection {
    /// Queues the session's packets and returns its events.
    fn absorb(&mut self, results: Vec<ClientSessionResult>) -> Vec<ClientSessionEvent> {
        let mut events = Vec::new();
        for result in results {
            match result {
                ClientSessionResult::OutboundResponse(packet) => {
                    self.out.extend_from_slice(&packet.bytes)
                }
                ClientSessionResult::RaisedEvent(event) => events.push(event),
                ClientSessionResult::UnhandleableMessageReceived(_) => {}
            }
        }
        events
    }

    async fn flush(&mut self) -> Result<()> {
        if !self.out.is_empty() {
            self.sock.write_all(&self.out).await?;
            self.out.clear();
        }
        Ok(())
    }

    /// Reads once; `None` when the server closed the connection.
    async fn read(&mut self) -> Result<Option<Vec<ClientSessionEvent>>> {
        let n = self.sock.read(&mut self.buf).await.context("read")?;
        if n == 0 {
            return Ok(None);
        }
        let results = self.session.handle_input(&self.buf[..n]).context("rtmp")?;
        Ok(Some(self.absorb(results)))
    }

    fn send_video(&mut self, data: Bytes, ms: u32) -> Result<()> {
        let packet = self
            .session
            .publish_video_data(data, RtmpTimestamp::new(ms), false)?;
        if let ClientSessionResult::OutboundResponse(packet) = packet {
            self.out.extend_from_slice(&packet.bytes);
        }
        Ok(())
    }
}

async fn connect(target: &Target) -> Result<Connection> {
    let mut sock = TcpStream::connect(&target.addr).await.context("connect")?;
    sock.set_nodelay(true)?;
    let mut handshake = Handshake::new(PeerType::Client);
    sock.write_all(&handshake.generate_outbound_p0_and_p1()?)
        .await?;
    let mut buf = vec![0u8; 4096];
    let leftover = loop {
        let n = sock.read(&mut buf).await.context("handshake read")?;
        if n == 0 {
            bail!("closed during the handshake");
        }
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
    let (session, results) = ClientSession::new(config).context("session")?;
    let mut connection = Connection {
        sock,
        session,
        out: Vec::new(),
        buf,
    };
    let mut events = connection.absorb(results);
    let request = connection.session.request_connection(target.app.clone())?;
    events.extend(connection.absorb(vec![request]));
    let more = connection.session.handle_input(&leftover).context("rtmp")?;
    events.extend(connection.absorb(more));
    if !events.is_empty() {
        bail!("unexpected events before connect was answered");
    }
    Ok(connection)
}

/// Connects and publishes `stream`; the connection once the server answered.
async fn publish(publisher: &Publisher) -> Result<(Connection, Answer)> {
    let mut connection = connect(&publisher.target).await?;
    loop {
        connection.flush().await?;
        let Some(events) = connection.read().await? else {
            bail!("closed before the publish was answered");
        };
        for event in events {
            match event {
                ClientSessionEvent::ConnectionRequestAccepted => {
                    let request = connection
                        .session
                        .request_publishing(publisher.stream.clone(), PublishRequestType::Live)?;
                    connection.absorb(vec![request]);
                }
                ClientSessionEvent::ConnectionRequestRejected { description } => {
                    return Ok((
                        connection,
                        Answer::Refused(format!("connect: {description}")),
                    ));
                }
                ClientSessionEvent::PublishRequestAccepted => {
                    return Ok((connection, Answer::Accepted));
                }
                ClientSessionEvent::UnhandleableOnStatusCode { code } => {
                    return Ok((connection, Answer::Refused(code)));
                }
                _ => {}
            }
        }
    }
}

async fn run_publisher(mut publisher: Publisher, at: Instant, end: Instant) -> Outcome {
    let mut stop = publisher.stop.clone();
    tokio::select! {
        () = sleep_until(at) => {}
        _ = stop.wait_for(|stop| *stop) => return Outcome {
            error: Some("not started: stopped by a signal".into()),
            ..Outcome::default()
        },
    }
    let started = Instant::now();
    let started_ms = unix_ms();
    let mut outcome = Outcome::default();
    let base = json!({
        "stream": publisher.stream,
        "target": publisher.target_index,
        "index": publisher.index,
        "started_ms": started_ms,
    });
    let answered = timeout(publisher.answer_timeout, publish(&publisher)).await;
    let mut connection = match answered {
        Err(_) => {
            outcome.error = Some("no answer to the publish in time".into());
            let mut line = base;
            line["error"] = json!("timeout");
            publisher.events.write(&line);
            return outcome;
        }
        Ok(Err(e)) => {
            outcome.error = Some(format!("{e:#}"));
            let mut line = base;
            line["error"] = json!(format!("{e:#}"));
            publisher.events.write(&line);
            return outcome;
        }
        Ok(Ok((_, Answer::Refused(code)))) => {
            let mut line = base;
            line["refused"] = json!(code);
            publisher.events.write(&line);
            outcome.refused = Some(code);
            return outcome;
        }
        Ok(Ok((connection, Answer::Accepted))) => connection,
    };
    outcome.accepted_us = Some(u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX));
    let mut line = base;
    line["accepted_ms"] = json!(unix_ms());
    publisher.events.write(&line);

    let media = Rc::clone(&publisher.media);
    let clock = Instant::now();
    let ended = async {
        connection.send_video(media.sequence_header.clone(), 0)?;
        connection.send_video(media.keyframe.clone(), 0)?;
        connection.flush().await?;
        let mut ticks =
            tokio::time::interval_at(clock + publisher.keyframe_every, publisher.keyframe_every);
        loop {
            tokio::select! {
                () = sleep_until(end) => return anyhow::Ok(false),
                _ = publisher.stop.wait_for(|stop| *stop) => return anyhow::Ok(false),
                _ = ticks.tick() => {
                    let ms = u32::try_from(clock.elapsed().as_millis()).unwrap_or(u32::MAX);
                    connection.send_video(media.keyframe.clone(), ms)?;
                }
                read = connection.read() => {
                    if read?.is_none() {
                        return Ok(true);
                    }
                }
            }
            connection.flush().await?;
        }
    };
    match ended.await {
        Ok(early) => outcome.ended_early = early,
        Err(e) => {
            outcome.ended_early = true;
            outcome.error = Some(format!("{e:#}"));
        }
    }
    outcome
}

fn percentile_ms(sorted: &[u64], q: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let i = ((sorted.len() as f64 * q) as usize).min(last);
    Some((sorted[i] as f64 / 100.0).round() / 10.0)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let args = Args::parse();
    if args.per_target == 0 || args.rate <= 0.0 || args.keyframe_secs <= 0.0 {
        bail!("--per-target, --rate and --keyframe-secs must be positive");
    }
    let targets: Vec<Rc<Target>> = (args.targets.iter())
        .map(|t| parse_target(t).map(Rc::new))
        .collect::<Result<_>>()?;
    let media = Rc::new(read_flv(&args.flv)?);
    let events = Rc::new(Events(match &args.events {
        Some(path) => Some(Mutex::new(std::io::BufWriter::new(
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
        ))),
        None => None,
    }));
    let total = args.per_target * targets.len();
    let t0 = Instant::now();
    let ramp = Duration::from_secs_f64(total as f64 / args.rate);
    let end = t0 + ramp + Duration::from_secs(args.hold_secs);
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let local = tokio::task::LocalSet::new();
    let outcomes = local
        .run_until(async {
            let tasks: Vec<_> = (0..total)
                .map(|i| {
                    let target_index = i % targets.len();
                    let publisher = Publisher {
                        index: i,
                        target_index,
                        stream: format!("{}{i}", args.prefix),
                        target: Rc::clone(&targets[target_index]),
                        media: Rc::clone(&media),
                        keyframe_every: Duration::from_secs_f64(args.keyframe_secs),
                        answer_timeout: Duration::from_secs(args.answer_timeout_secs),
                        events: Rc::clone(&events),
                        stop: stop_rx.clone(),
                    };
                    let at = t0 + Duration::from_secs_f64(i as f64 / args.rate);
                    tokio::task::spawn_local(run_publisher(publisher, at, end))
                })
                .collect();
            let flusher = {
                let events = Rc::clone(&events);
                tokio::task::spawn_local(async move {
                    loop {
                        tokio::time::sleep(Duration::from_millis(500)).await;
                        events.flush();
                    }
                })
            };
            tokio::task::spawn_local(async move {
                stop_signal().await;
                eprintln!("cluster-load: stopped by a signal: every publisher hangs up");
                let _ = stop_tx.send(true);
            });
            let mut outcomes = Vec::with_capacity(total);
            for task in tasks {
                outcomes.push(task.await.unwrap_or_else(|e| Outcome {
                    error: Some(format!("task: {e}")),
                    ..Outcome::default()
                }));
            }
            flusher.abort();
            outcomes
        })
        .await;
    events.flush();

    let mut accepted: Vec<u64> = outcomes.iter().filter_map(|o| o.accepted_us).collect();
    accepted.sort_unstable();
    let mut errors: std::collections::BTreeMap<String, usize> = Default::default();
    for o in &outcomes {
        if let Some(e) = o.refused.as_ref().or(o.error.as_ref()) {
            *errors.entry(e.clone()).or_default() += 1;
        }
    }
    let report = json!({
        "publishers": total,
        "targets": targets.len(),
        "rate_per_sec": args.rate,
        "ramp_secs": (ramp.as_secs_f64() * 10.0).round() / 10.0,
        "accepted": accepted.len(),
        "refused": outcomes.iter().filter(|o| o.refused.is_some()).count(),
        "failed": outcomes.iter().filter(|o| o.accepted_us.is_none() && o.refused.is_none()).count(),
        "ended_early": outcomes.iter().filter(|o| o.ended_early).count(),
        "accept_p50_ms": percentile_ms(&accepted, 0.5),
        "accept_p99_ms": percentile_ms(&accepted, 0.99),
        "errors": errors,
    });
    println!("{report}");
    Ok(())
}

/// SIGINT or SIGTERM.
async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}
