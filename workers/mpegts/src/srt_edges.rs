//! Edge mode over SRT (`Edge` rules whose origins are `srt://`): when a stream of such an
//! app gets its first reader in this worker's hub (the delivery worker or the rtmp worker
//! subscribing for their viewers, an SRT viewer of a TS output) and nobody produces it on
//! this server, it is pulled from the rule's origins, tried in order: an SRT call with
//! streamid `#!::r=<app>/<stream>,m=request,strom=pull`, which an origin's SRT output
//! listener answers with the stream as MPEG-TS, or refuses in the handshake
//! (`SRT_REJX_NOTFOUND`) when it does not have the stream and cannot start it (then the
//! next origin is tried without a wait). The pull is dropped `idle_grace_secs` after the
//! last reader left, as the rtmp worker does for RTMP origins: which pulls run, the
//! failover and the waits are the pull supervisor's for both
//! ([`strom_stream::pulls::edges`]); this worker supplies how one origin is pulled.
//!
//! libsrt blocks, so each pull runs on a blocking thread, polling its stop token.

use crate::input_status::InputStatus;
use crate::shared::MpegTsShared;
use crate::srt::{SrtOptions, SrtSocket};
use crate::ts_input::TsInput;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};
use strom_ipc::WorkerKind;
use strom_ipc::rules::{EdgeRule, PullSource, srt_origin_parts, srt_pull_request_id};
use strom_stream::StreamKey;
use strom_stream::pulls::{EdgePulls, PullEnd, PullJob, Puller, Pulling};
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

/// How the ingest worker pulls one stream from one SRT origin: a call on a blocking
/// thread (libsrt blocks) that feeds the MPEG-TS it receives into the hub.
struct SrtPuller {
    shared: Arc<MpegTsShared>,
}

impl Puller for SrtPuller {
    fn protocol(&self) -> &'static str {
        "SRT"
    }

    /// Configured pulled sources are RTMP and RTSP URLs; SRT is pulled for edges only.
    fn takes(&self, _source: &PullSource) -> bool {
        false
    }

    fn pull(&self, job: PullJob) -> Pulling {
        let shared = Arc::clone(&self.shared);
        Box::pin(async move {
            let PullJob {
                key,
                source,
                origin,
                stop,
            } = job;
            let origin = origin.unwrap_or_else(|| source.url.clone());
            let pulling = tokio::task::spawn_blocking(move || {
                crate::srt::startup();
                pull_from(&shared, &origin, &source.url, &key, &stop)
            });
            pulling
                .await
                .unwrap_or_else(|e| PullEnd::Failed(format!("the pull's thread failed: {e}")))
        })
    }
}

/// Starts pulling the streams of SRT edge rules that readers of the worker's hub ask for.
pub fn start(shared: Arc<MpegTsShared>, shutdown: CancellationToken) -> Arc<EdgePulls> {
    let rules = {
        let shared = Arc::clone(&shared);
        Box::new(move || shared.rules())
    };
    let hub = shared.hub.clone();
    EdgePulls::start(
        hub,
        WorkerKind::Ingest,
        EdgeRule::is_srt,
        MAX_SRT_EDGE_PULLS,
        shutdown,
        rules,
        Arc::new(SrtPuller { shared }),
    )
}

/// One call to `origin` for `key`, feeding what it sends into the hub until it ends.
fn pull_from(
    shared: &Arc<MpegTsShared>,
    origin: &str,
    url: &str,
    key: &StreamKey,
    stop: &CancellationToken,
) -> PullEnd {
    let (address, mut parameters) = srt_origin_parts(origin);
    parameters.push((
        "streamid".into(),
        srt_pull_request_id(&key.app, &key.stream),
    ));
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
    let end = receive(shared, &socket, remote, url, key, stop);
    socket.close();
    end
}

fn receive(
    shared: &Arc<MpegTsShared>,
    socket: &SrtSocket,
    remote: SocketAddr,
    url: &str,
    key: &StreamKey,
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
    let mut buffer = vec![0u8; MESSAGE_BUFFER];
    let mut last_data: Option<Instant> = None;
    let started = Instant::now();
    let end = loop {
        if stop.is_cancelled() {
            break PullEnd::Stopped;
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
