//! Edge mode over SRT (`Edge` rules whose origins are `srt://`): when a stream of such an
//! app gets its first reader in this worker's hub (the delivery worker or the rtmp worker
//! subscribing for their viewers, an SRT viewer of a TS output) and nobody produces it on
//! this server, it is pulled from the rule's origins, tried in order: an SRT call with
//! streamid `#!::r=<app>/<stream>,m=request`, which an origin's SRT output listener
//! answers with the stream as MPEG-TS. The pull is dropped `idle_grace_secs` after the
//! last reader left, as the rtmp worker does for RTMP origins; which pulls run is
//! decided for both in [`strom_stream::gate::edge_pulls`].
//!
//! libsrt blocks, so each pull runs on its own thread, polling its stop token.

use crate::input_status::InputStatus;
use crate::shared::MpegTsShared;
use crate::srt::{SrtOptions, SrtSocket};
use crate::ts_input::TsInput;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};
use strom_ipc::WorkerKind;
use strom_ipc::rules::{EdgeRule, srt_origin_parts, srt_request_id};
use strom_stream::StreamKey;
use strom_stream::gate::edge_pulls::{EdgePull, EdgePulls};
use tokio_util::sync::CancellationToken;

/// SRT edge pulls running at most (each is a thread and a connection to an origin).
pub const MAX_SRT_EDGE_PULLS: usize = 256;
/// How long an origin may take to answer a call.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long a pull waits for its first media: longer than an origin's own wait for a
/// stream that is not live yet (15 s), so the origin's answer decides.
const FIRST_MEDIA_WAIT: Duration = Duration::from_secs(20);
/// A pulled stream that sends nothing for this long has ended at the origin.
const MEDIA_GAP: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(250);
const MESSAGE_BUFFER: usize = 1500;
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// How one pull from one origin ended.
enum PullEnd {
    /// The worker or the rule stopped it.
    Stopped,
    /// No reader for the rule's grace.
    Idle,
    /// The origin refused, sent nothing, or the stream ended there.
    Failed(String),
}

/// Starts pulling the streams of SRT edge rules that readers of the worker's hub ask for.
pub fn start(shared: Arc<MpegTsShared>, shutdown: CancellationToken) -> Arc<EdgePulls> {
    let rules = {
        let shared = Arc::clone(&shared);
        Box::new(move || shared.rules())
    };
    let hub = shared.hub.clone();
    let launch = Box::new(move |pulls: &Arc<EdgePulls>, pull: EdgePull| {
        let key = &pull.key;
        tracing::info!(stream = %key, origins = ?pull.rule.origins.iter().map(|o| EdgeRule::url(o, &key.app, &key.stream)).collect::<Vec<_>>(), "edge: pulling on demand over SRT");
        let (key, id) = (pull.key.clone(), pull.id);
        let (thread_shared, thread_pulls) = (Arc::clone(&shared), Arc::clone(pulls));
        let spawned = std::thread::Builder::new()
            .name("srt-edge-pull".into())
            .spawn(move || run(&thread_shared, &thread_pulls, &pull));
        if let Err(e) = spawned {
            tracing::error!(stream = %key, error = %e, "edge: no thread for an SRT pull");
            pulls.forget(&key, id);
        }
    });
    EdgePulls::start(
        hub,
        WorkerKind::Ingest,
        EdgeRule::is_srt,
        MAX_SRT_EDGE_PULLS,
        shutdown,
        rules,
        launch,
    )
}

/// Pulls the stream from the rule's origins, one after the other, until it has no
/// readers.
fn run(shared: &Arc<MpegTsShared>, pulls: &EdgePulls, pull: &EdgePull) {
    crate::srt::startup();
    let EdgePull {
        key,
        rule,
        id,
        stop,
    } = pull;
    let mut origin = 0;
    let mut backoff = FIRST_BACKOFF;
    while let Some(base) = rule.origins.get(origin) {
        let url = EdgeRule::url(base, &key.app, &key.stream);
        match pull_from(shared, base, &url, key, rule, stop) {
            PullEnd::Stopped => break,
            PullEnd::Idle => {
                tracing::info!(stream = %key, %url, grace_secs = rule.idle_grace_secs, "edge: no viewers left: pull dropped");
                origin = 0;
                backoff = FIRST_BACKOFF;
            }
            PullEnd::Failed(error) => {
                origin = (origin + 1) % rule.origins.len();
                let next = EdgeRule::url(&rule.origins[origin], &key.app, &key.stream);
                tracing::warn!(stream = %key, %url, %error, %next, "edge: pull failed; trying the next origin");
                if origin == 0 {
                    // Every origin failed once: wait before the next round.
                    let until = Instant::now() + backoff;
                    while Instant::now() < until && !stop.is_cancelled() {
                        std::thread::sleep(POLL);
                    }
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        }
        if stop.is_cancelled() || pulls.finish(key, *id) {
            break;
        }
    }
    pulls.finish(key, *id);
    tracing::info!(stream = %key, "edge: pull ended");
}

/// One call to `origin` for `key`, feeding what it sends into the hub until it ends.
fn pull_from(
    shared: &Arc<MpegTsShared>,
    origin: &str,
    url: &str,
    key: &StreamKey,
    rule: &EdgeRule,
    stop: &CancellationToken,
) -> PullEnd {
    let (address, mut parameters) = srt_origin_parts(origin);
    parameters.push(("streamid".into(), srt_request_id(&key.app, &key.stream)));
    let options = match SrtOptions::from_parameters(&parameters) {
        Ok(options) => options,
        Err(e) => return PullEnd::Failed(e.to_string()),
    };
    // The origin may be a host name: resolved again for every call (this thread may block).
    let remote = match address.to_socket_addrs().map(|mut addrs| addrs.next()) {
        Ok(Some(remote)) => remote,
        Ok(None) | Err(_) => return PullEnd::Failed(format!("{address} not resolved")),
    };
    let socket = match SrtSocket::connect(remote, &options, CONNECT_TIMEOUT) {
        Ok(socket) => socket,
        Err(e) => return PullEnd::Failed(e.to_string()),
    };
    tracing::info!(stream = %key, %url, "edge: SRT origin connected");
    let end = receive(shared, &socket, remote, url, key, rule, stop);
    socket.close();
    end
}

fn receive(
    shared: &Arc<MpegTsShared>,
    socket: &SrtSocket,
    remote: SocketAddr,
    url: &str,
    key: &StreamKey,
    rule: &EdgeRule,
    stop: &CancellationToken,
) -> PullEnd {
    let mut input = TsInput::new(
        format!("edge {key}"),
        key.clone(),
        "SRT",
        Arc::new(InputStatus::default()),
        shared.hub.clone(),
        Arc::clone(&shared.ids),
    )
    .with_source_url(url.to_owned());
    let grace = Duration::from_secs(u64::from(rule.idle_grace_secs));
    let mut buffer = vec![0u8; MESSAGE_BUFFER];
    let mut last_data: Option<Instant> = None;
    let started = Instant::now();
    let mut unread_since: Option<Instant> = None;
    let end = loop {
        if stop.is_cancelled() {
            break PullEnd::Stopped;
        }
        if shared.hub.reader_count(key) > 0 {
            unread_since = None;
        } else if unread_since.get_or_insert_with(Instant::now).elapsed() >= grace {
            break PullEnd::Idle;
        }
        match socket.recv(&mut buffer, POLL) {
            Ok(Some(len)) => {
                last_data = Some(Instant::now());
                shared.counters.add_received(len as u64);
                input.feed(&buffer[..len], remote);
            }
            Ok(None) => {
                let silent = match last_data {
                    Some(at) => at.elapsed() >= MEDIA_GAP,
                    None => started.elapsed() >= FIRST_MEDIA_WAIT,
                };
                if silent {
                    break PullEnd::Failed("no media".into());
                }
            }
            Err(e) => break PullEnd::Failed(format!("connection ended: {e}")),
        }
    };
    input.stopped();
    end
}
