//! The life of one pulled source: pull always, or only while its stream has players
//! (RTMP players, bus subscribers such as the packager, pushes); retry a failed pull with
//! backoff; end when the source is removed from the rules or the worker stops.

use crate::client::session::{PLAYER_FLASH_VERSION, Setup};
use crate::client::traffic::Traffic;
use crate::pull::ingest::{PullEnd, pull};
use crate::shared::Shared;
use std::sync::Arc;
use std::time::{Duration, Instant};
use strom_ipc::rules::{PullMode, PullSource};
use strom_stream::HubEvent;
use strom_stream::StreamKey;
use strom_worker_runtime::backoff::Backoff;
use tokio::sync::broadcast::Receiver;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

/// Bound on each connection step and each write to the source.
const STEP_LIMIT: Duration = Duration::from_secs(10);

pub async fn run(shared: Arc<Shared>, source: PullSource, stop: CancellationToken) {
    let key = StreamKey {
        app: source.app.clone(),
        stream: source.stream.clone(),
    };
    let setup = Setup {
        limit: STEP_LIMIT,
        flash_version: PLAYER_FLASH_VERSION,
        traffic: Arc::new(Traffic::default()),
        counters: Arc::clone(&shared.counters),
    };
    let url = &source.url;
    // Listen before looking at the stream, so no player arrives unseen in between.
    let mut events = shared.streams.events().listen();
    let mut backoff = Backoff::default();
    tracing::info!(stream = %key, %url, mode = source.mode.as_str(), "pulled source configured");
    loop {
        if source.mode == PullMode::OnDemand
            && !wait_for_demand(&shared, &key, &mut events, &stop).await
        {
            break;
        }
        let started = Instant::now();
        match pull(&shared, &source, &key, &setup, &mut events, &stop).await {
            Ok(PullEnd::Stopped) => break,
            Ok(PullEnd::Idle) => {
                tracing::info!(stream = %key, %url, grace_secs = source.idle_grace_secs, "no players left: pull dropped");
                backoff.reset();
            }
            Err(_) if stop.is_cancelled() => break,
            Err(error) => {
                let delay = backoff.after(started.elapsed());
                tracing::warn!(stream = %key, %url, %error, ?delay, "pull failed; retrying");
                tokio::select! {
                    () = stop.cancelled() => break,
                    () = tokio::time::sleep(delay) => {}
                }
            }
        }
    }
    tracing::info!(stream = %key, %url, "pulled source stopped");
}

/// Waits until `key` has a player; `false` when stopped first.
async fn wait_for_demand(
    shared: &Shared,
    key: &StreamKey,
    events: &mut Receiver<HubEvent>,
    stop: &CancellationToken,
) -> bool {
    loop {
        if shared.streams.reader_count(key) > 0 {
            return true;
        }
        tokio::select! {
            () = stop.cancelled() => return false,
            event = events.recv() => {
                if let Err(RecvError::Closed) = event {
                    return false;
                }
            }
        }
    }
}
