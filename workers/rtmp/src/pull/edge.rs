//! Edge mode (`Edge` rules): when a stream of an edge app gets its first reader (an RTMP
//! player, the packager subscribing for an HLS viewer, or the ingest worker subscribing
//! for an SRT viewer) and nobody publishes it here, pull it from the rule's origins, tried
//! in order (the next one when a pull fails), and drop the pull `idle_grace_secs` after
//! the last reader left. No per-stream config: the pulled URL is the origin plus
//! `<app>/<stream>`.
//!
//! One task per demanded stream; it ends when its stream has no readers left, when its
//! rule goes away (reload), or with the worker. An explicit `RtmpPullSources` entry of
//! the stream wins over the edge rule, and so does a stream another worker of this server
//! produces (an SRT ingest of the edge app: the relay feeds it in, nothing is pulled).
//! Which pulls run is decided in [`strom_stream::gate::edge_pulls`], as for the ingest
//! worker's pulls from SRT origins; rules with SRT origins are the ingest worker's.

use crate::client::session::{PLAYER_FLASH_VERSION, Setup};
use crate::client::traffic::Traffic;
use crate::pull::ingest::{PullEnd, pull};
use crate::shared::Shared;
use std::sync::Arc;
use std::time::{Duration, Instant};
use strom_ipc::rules::{EdgeRule, PullMode, PullSource};
use strom_stream::gate::edge_pulls::{EdgePull, EdgePulls};
use strom_worker_runtime::backoff::Backoff;
use tokio_util::sync::CancellationToken;

/// Edge pulls running at most (each is a connection to an origin).
pub const MAX_EDGE_PULLS: usize = 1000;
/// Bound on each connection step and each write to an origin.
const STEP_LIMIT: Duration = Duration::from_secs(10);

/// Starts pulling the streams of RTMP edge rules that readers of the worker's hub ask for.
pub fn start(shared: Arc<Shared>, shutdown: CancellationToken) -> Arc<EdgePulls> {
    let rules = {
        let shared = Arc::clone(&shared);
        Box::new(move || shared.rules())
    };
    let hub = shared.streams.clone();
    let launch = Box::new(move |pulls: &Arc<EdgePulls>, pull: EdgePull| {
        tracing::info!(stream = %pull.key, origins = ?pull.rule.origins, "edge: pulling on demand");
        tokio::spawn(run(Arc::clone(&shared), Arc::clone(pulls), pull));
    });
    EdgePulls::start(
        hub,
        strom_ipc::WorkerKind::Rtmp,
        |rule| !rule.is_srt(),
        MAX_EDGE_PULLS,
        shutdown,
        rules,
        launch,
    )
}

/// Pulls `key` from the rule's origins, one after the other, until it has no readers.
async fn run(shared: Arc<Shared>, pulls: Arc<EdgePulls>, edge_pull: EdgePull) {
    let EdgePull {
        key,
        rule,
        id,
        stop,
    } = edge_pull;
    let shared = &shared;
    let setup = Setup {
        limit: STEP_LIMIT,
        flash_version: PLAYER_FLASH_VERSION,
        traffic: Arc::new(Traffic::default()),
        counters: Arc::clone(&shared.counters),
    };
    let mut events = shared.streams.events().listen();
    let mut backoff = Backoff::default();
    let mut origin = 0;
    while let Some(base) = rule.origins.get(origin) {
        let source = PullSource {
            app: key.app.clone(),
            stream: key.stream.clone(),
            url: EdgeRule::url(base, &key.app, &key.stream),
            mode: PullMode::OnDemand,
            idle_grace_secs: rule.idle_grace_secs,
            rtsp_transport: Default::default(),
        };
        let started = Instant::now();
        match pull(shared, &source, &key, &setup, &mut events, &stop).await {
            Ok(PullEnd::Stopped) => break,
            Ok(PullEnd::Idle) => {
                tracing::info!(stream = %key, url = %source.url, grace_secs = rule.idle_grace_secs, "edge: no viewers left: pull dropped");
                origin = 0;
                backoff.reset();
            }
            Err(_) if stop.is_cancelled() => break,
            Err(error) => {
                origin = (origin + 1) % rule.origins.len();
                tracing::warn!(stream = %key, url = %source.url, %error, next = %rule.origins[origin], "edge: pull failed; trying the next origin");
                if origin == 0 {
                    // Every origin failed once: wait before the next round.
                    let delay = backoff.after(started.elapsed());
                    tokio::select! {
                        () = stop.cancelled() => break,
                        () = tokio::time::sleep(delay) => {}
                    }
                }
            }
        }
        if pulls.finish(&key, id) {
            break;
        }
    }
    if stop.is_cancelled() {
        pulls.finish(&key, id);
    }
    tracing::info!(stream = %key, "edge: pull ended");
}
