//! SRT outputs: a listener on the socket the supervisor lends, whose callers each get a
//! stream (`streamid` `#!::r=app/stream,m=request`, or the output's own `app/stream`),
//! and a push that calls a remote listener and calls again with backoff.
//!
//! libsrt blocks, so every connection sends from its own thread: it waits for the next
//! frame ([`Follower`]), and sends its TS packets in messages of 7 packets (1316
//! bytes). A receiver that does not keep up fills libsrt's send buffer; the thread then
//! waits in `srt_sendmsg`, its hub reader fills and loses whole GOPs, and nobody else
//! notices.
//!
//! A caller is released when it is gone or when its stream has not been live for the
//! output's `player_wait_timeout_secs` ([`caller_watch`]).
//!
//! A strom edge's pull (streamid key `strom=pull`) of a stream that is not live here and
//! that nothing here starts is refused in the handshake (`SRT_REJX_NOTFOUND`), so the
//! edge tries its next origin at once.
//!
//! A caller of a stream of an `Edge` app that is not live here makes the relays read it
//! from the rtmp worker, which pulls it from the origins on that demand; the caller waits
//! for it up to [`EDGE_WAIT`] and is closed if it does not come.

use super::caller_watch;
use super::follow::Follower;
use super::{SrtSender, source};
use crate::shared::MpegTsShared;
use crate::srt::accepting::accept_callers;
use crate::srt::handshakes::StreamIdFilter;
use crate::srt::{SrtOptions, SrtSocket};
use crate::srt_connections::SocketBytes;
use bytes::BytesMut;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};
use strom_ipc::rules::TsOutputSettings;
use strom_stream::{Queue, Reading, SessionEntry, StreamKey};
use strom_worker_runtime::InheritedUdpSocket;
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;

/// How long the accept loop waits in libsrt before looking at its stop token.
const POLL: Duration = Duration::from_millis(250);
/// Callers one output listener serves at once unless `max_callers` says otherwise.
const DEFAULT_MAX_CALLERS: usize = 100;
/// Seven TS packets: what one SRT live-mode message carries.
const MESSAGE: usize = 7 * 188;
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(10);
/// How long a caller of a stream of an edge app waits for the stream to arrive.
pub const EDGE_WAIT: Duration = Duration::from_secs(15);
/// How often that wait looks at the hub.
const EDGE_WAIT_STEP: Duration = Duration::from_millis(100);

fn options_of(output: &TsOutputSettings) -> Option<SrtOptions> {
    SrtOptions::from_parameters(&output.parameters)
        .inspect_err(|e| tracing::error!(output = %output.id, error = %e, "SRT output not started"))
        .ok()
}

/// The stream a caller of `output` gets: the output's own, else the one it asks for.
fn stream_for(output: &TsOutputSettings, stream_id: &str) -> Result<StreamKey, String> {
    if !output.app.is_empty() {
        return Ok(source(output));
    }
    crate::srt::stream_id::requested(stream_id, "request")?
        .ok_or_else(|| "no stream named (streamid #!::r=app/stream,m=request)".to_owned())
}

/// Refuses another strom's edge pull (streamid key `strom=pull`) of a stream that is not
/// live here and that nothing here starts, in the handshake, so the edge's call fails at
/// once and it tries its next origin. Other callers are never refused here: they wait for
/// their stream ([`caller_watch`]).
fn not_found(output: &TsOutputSettings, shared: &Arc<MpegTsShared>) -> StreamIdFilter {
    let (output, shared) = (output.clone(), Arc::clone(shared));
    Box::new(move |stream_id: &str| {
        let (mark, pull) = strom_ipc::rules::SRT_PULL_MARK;
        crate::srt::stream_id::value(stream_id, mark).as_deref() == Some(pull)
            && stream_for(&output, stream_id).is_ok_and(|key| shared.gate.cannot_start(&key))
    })
}

/// Serves callers on the lent socket until `stop`.
pub fn listen(
    inherited: Arc<InheritedUdpSocket>,
    output: TsOutputSettings,
    shared: Arc<MpegTsShared>,
    stop: CancellationToken,
    runtime: Handle,
) {
    let Some(options) = options_of(&output) else {
        return;
    };
    let limit = output
        .parameter("max_callers")
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_MAX_CALLERS);
    let wait = caller_watch::player_wait(output.parameter("player_wait_timeout_secs"));
    let name = format!("output {}", output.id);
    accept_callers(
        &inherited,
        &options,
        64,
        &name,
        &stop,
        Some(not_found(&output, &shared)),
        |socket, peer, stream_id| {
            let key = match stream_for(&output, &stream_id) {
                Ok(key) => key,
                Err(why) => {
                    tracing::warn!(output = %output.id, %peer, %stream_id, %why, "SRT viewer refused");
                    return;
                }
            };
            let signature = crate::srt::stream_id::value(&stream_id, "s");
            let access =
                strom_stream::Access::new(strom_stream::Protocol::Srt, key.clone(), peer.ip())
                    .with_signature(signature);
            let reading = match shared.gate.admit_reader(&access) {
                Ok(reading) => reading,
                Err(refusal) => {
                    tracing::warn!(output = %output.id, %peer, stream = %key, %refusal, "SRT viewer refused");
                    return;
                }
            };
            if shared.outputs.callers_of(&output.id) >= limit {
                tracing::warn!(output = %output.id, %peer, limit, "SRT viewer refused: too many callers");
                return;
            }
            let sender = register(&shared, &output, key, socket, peer, &stop);
            tracing::info!(output = %output.id, %peer, stream = %sender.key, session = sender.session_id, "SRT viewer connected");
            // Without the watch a caller of a stream that is not live is never released.
            caller_watch::spawn(&runtime, shared.hub.clone(), Arc::clone(&sender), wait);
            let (shared, runtime) = (Arc::clone(&shared), runtime.clone());
            crate::threads::spawn_thread("srt-out-viewer", move || {
                send(&shared, &sender, &runtime, Some(&reading));
                tracing::info!(peer = %sender.peer, stream = %sender.key, session = sender.session_id, "SRT viewer gone");
            });
        },
    );
}

/// Calls the remote listener of a push output until `stop`, again after every end.
pub fn push(
    output: TsOutputSettings,
    shared: Arc<MpegTsShared>,
    stop: CancellationToken,
    runtime: Handle,
) {
    crate::srt::startup();
    let Some(options) = options_of(&output) else {
        return;
    };
    let mut backoff = FIRST_BACKOFF;
    while !stop.is_cancelled() {
        // `ip` may be a host name: resolved again for every call (this thread may block).
        let remote = (output.ip.as_str(), output.port)
            .to_socket_addrs()
            .ok()
            .and_then(|mut addrs| addrs.next());
        match remote.map(|remote| {
            (
                remote,
                SrtSocket::connect(remote, &options, Duration::from_secs(3)),
            )
        }) {
            Some((remote, Ok(socket))) => {
                backoff = FIRST_BACKOFF;
                let sender = register(&shared, &output, source(&output), socket, remote, &stop);
                tracing::info!(output = %output.id, %remote, stream = %sender.key, "SRT push connected");
                send(&shared, &sender, &runtime, None);
                tracing::info!(output = %output.id, %remote, "SRT push ended");
            }
            Some((remote, Err(e))) => {
                tracing::debug!(output = %output.id, %remote, error = %e, "SRT push: connect failed")
            }
            None => {
                tracing::warn!(output = %output.id, host = %output.ip, "SRT push: host not resolved")
            }
        }
        let until = Instant::now() + backoff;
        while Instant::now() < until && !stop.is_cancelled() {
            std::thread::sleep(POLL.min(backoff));
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

fn register(
    shared: &Arc<MpegTsShared>,
    output: &TsOutputSettings,
    key: StreamKey,
    socket: SrtSocket,
    peer: SocketAddr,
    stop: &CancellationToken,
) -> Arc<SrtSender> {
    let sender = Arc::new(SrtSender {
        session_id: shared.ids.next_id(),
        output: output.id.clone(),
        key,
        peer,
        socket: Arc::new(socket),
        stop: stop.child_token(),
    });
    shared.outputs.add_srt(Arc::clone(&sender));
    sender
}

/// Sends `sender`'s stream until the connection or the output ends: a viewer that
/// called in, admitted by the gate (`viewer`), or the operator's own output to its
/// destination. A viewer of a stream of an edge app that is not live waits for it first.
fn send(
    shared: &Arc<MpegTsShared>,
    sender: &Arc<SrtSender>,
    runtime: &Handle,
    viewer: Option<&Reading>,
) {
    let edge_wait = viewer.is_some();
    let (id, ip, kill) = (sender.session_id, sender.peer.ip(), sender.stop.clone());
    let bytes = Arc::new(SocketBytes(Arc::clone(&sender.socket)));
    // A viewer's session is its reader's; the operator's own output holds its own.
    let (reader, _held) = match viewer {
        Some(reading) => {
            let session = SessionEntry::reader(id, "SRT", reading, ip, kill).metered(bytes);
            let session = shared.gate.sessions().open(session);
            (shared.gate.read(reading, Queue, session), None)
        }
        None => {
            let session = SessionEntry::new(id, "SRT", &sender.key, ip, kill).metered(bytes);
            let session = shared.gate.sessions().open(session);
            let reader = (shared.hub).own_reader(&sender.key, Queue, id);
            let _ = session.dropped.set(Arc::clone(&reader.dropped));
            (reader, Some(session))
        }
    };
    let mut follower = Follower::start(reader, &sender.stop, runtime);
    let arrived = !edge_wait
        || shared.rules().edge_for(&sender.key.app).is_none()
        || wait_for_edge_stream(shared, sender);
    let mut packets = BytesMut::with_capacity(64 * 1024);
    'frames: while arrived && follower.next_packets(&mut packets) {
        for message in packets.chunks(MESSAGE) {
            if sender.socket.send(message).is_err() {
                break 'frames;
            }
        }
        shared.counters.add_sent(packets.len() as u64);
        packets.clear();
    }
    drop(follower);
    sender.socket.close();
    shared.outputs.remove_srt(sender.session_id);
}

/// Whether the stream of `sender` (of an edge app) is live here, waiting up to
/// [`EDGE_WAIT`] for the pull its demand started (the caller's hub reader makes the relays
/// read it from the rtmp worker).
fn wait_for_edge_stream(shared: &Arc<MpegTsShared>, sender: &SrtSender) -> bool {
    let live = || {
        shared
            .hub
            .get(&sender.key)
            .is_some_and(|stream| stream.publisher().is_some())
    };
    if live() {
        return true;
    }
    let (key, session) = (&sender.key, sender.session_id);
    tracing::info!(stream = %key, session, peer = %sender.peer, "edge: SRT viewer asks for the stream; waiting for the pull");
    let started = Instant::now();
    while started.elapsed() < EDGE_WAIT {
        if sender.stop.is_cancelled() {
            return false;
        }
        std::thread::sleep(EDGE_WAIT_STEP);
        if live() {
            tracing::info!(stream = %key, session, waited_ms = started.elapsed().as_millis() as u64, "edge: stream arrived for the SRT viewer");
            return true;
        }
    }
    tracing::warn!(stream = %key, session, peer = %sender.peer, wait_secs = EDGE_WAIT.as_secs(), "edge: stream did not arrive; SRT viewer closed");
    false
}
