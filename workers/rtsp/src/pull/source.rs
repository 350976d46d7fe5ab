//! The life of one pulled RTSP source: pull always, or only while its stream has
//! players here; reconnect with backoff (1 s doubling to 10 s, back to 1 s after a
//! session that stayed up); end when the source leaves the rules or the worker stops.

use super::session::{self, SessionEnd};
use crate::shared::Shared;
use std::sync::Arc;
use std::time::{Duration, Instant};
use strom_ipc::rules::{PullMode, PullSource};
use strom_stream::{HubEvent, StreamKey};
use tokio::sync::broadcast::Receiver;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

const FIRST_DELAY: Duration = Duration::from_secs(1);
const MAX_DELAY: Duration = Duration::from_secs(10);
/// A session that lasted this long was healthy: the next failure starts over.
const HEALTHY: Duration = Duration::from_secs(10);

pub async fn run(shared: Arc<Shared>, source: PullSource, stop: CancellationToken) {
    let key = StreamKey::new(source.app.clone(), source.stream.clone());
    let shown = session::without_credentials(&source.url);
    // Listen before looking at the stream, so no player arrives unseen in between.
    let mut events = shared.hub.events().listen();
    let mut delay = FIRST_DELAY;
    tracing::info!(stream = %key, url = %shown, mode = source.mode.as_str(), "pulled RTSP source configured");
    loop {
        if source.mode == PullMode::OnDemand
            && !wait_for_demand(&shared, &key, &mut events, &stop).await
        {
            break;
        }
        let started = Instant::now();
        match session::pull(&shared, &source, &key, &mut events, &stop).await {
            Ok(SessionEnd::Stopped) => break,
            Ok(SessionEnd::Idle) => {
                tracing::info!(stream = %key, url = %shown, "no players left: RTSP pull dropped");
                delay = FIRST_DELAY;
            }
            Err(_) if stop.is_cancelled() => break,
            Err(error) => {
                if started.elapsed() >= HEALTHY {
                    delay = FIRST_DELAY;
                }
                tracing::warn!(stream = %key, url = %shown, %error, ?delay, "RTSP pull failed; retrying");
                tokio::select! {
                    () = stop.cancelled() => break,
                    () = tokio::time::sleep(delay) => {}
                }
                delay = (delay * 2).min(MAX_DELAY);
            }
        }
    }
    tracing::info!(stream = %key, url = %shown, "pulled RTSP source stopped");
}

/// Waits until `key` has a reader; `false` when stopped first.
async fn wait_for_demand(
    shared: &Shared,
    key: &StreamKey,
    events: &mut Receiver<HubEvent>,
    stop: &CancellationToken,
) -> bool {
    loop {
        if shared.hub.reader_count(key) > 0 {
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
