//! The configured pulled sources of one protocol (`RtmpPullSources` entries whose URL is
//! the protocol's): one task per source pulls always, or only while its stream has readers
//! here (players, the packager's and other workers' relays, pushes); it retries a failed
//! pull after [`Backoff`]'s delay and ends when the source leaves the rules or the worker
//! stops. A changed source is stopped and started again; the others go on undisturbed.

use super::attempt::attempt;
use super::{PullEnd, Puller};
use crate::events::HubEvent;
use crate::hub::Hub;
use crate::key::StreamKey;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use strom_ipc::rules::{PullMode, PullSource};
use strom_worker_runtime::backoff::Backoff;
use strom_worker_runtime::sync::locked;
use tokio::sync::broadcast::Receiver;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

/// The pulled sources one protocol runs.
pub struct PullSources {
    hub: Hub,
    puller: Arc<dyn Puller>,
    running: Mutex<HashMap<StreamKey, (PullSource, CancellationToken)>>,
    shutdown: CancellationToken,
}

impl PullSources {
    /// Runs the sources of `sources` that `puller` takes, until `shutdown`.
    pub fn start(
        hub: Hub,
        puller: Arc<dyn Puller>,
        sources: &[PullSource],
        shutdown: CancellationToken,
    ) -> Self {
        let pulls = Self {
            hub,
            puller,
            running: Mutex::default(),
            shutdown,
        };
        pulls.apply(sources);
        pulls
    }

    /// Starts new and changed sources, stops removed and changed ones.
    pub fn apply(&self, sources: &[PullSource]) {
        let sources: Vec<&PullSource> = (sources.iter())
            .filter(|source| self.puller.takes(source))
            .collect();
        let mut running = locked(&self.running);
        running.retain(|_, (source, stop)| {
            let keep = sources.contains(&&*source);
            if !keep {
                stop.cancel();
            }
            keep
        });
        for source in sources {
            let key = StreamKey::new(source.app.clone(), source.stream.clone());
            if running.contains_key(&key) {
                continue;
            }
            let stop = self.shutdown.child_token();
            tokio::spawn(run(
                self.hub.clone(),
                Arc::clone(&self.puller),
                key.clone(),
                source.clone(),
                stop.clone(),
            ));
            running.insert(key, (source.clone(), stop));
        }
    }

    /// Sources running now.
    pub fn count(&self) -> usize {
        locked(&self.running).len()
    }
}

/// The life of one source.
async fn run(
    hub: Hub,
    puller: Arc<dyn Puller>,
    key: StreamKey,
    source: PullSource,
    stop: CancellationToken,
) {
    let protocol = puller.protocol();
    let url = puller.shown(&source.url);
    // Listen before looking at the stream, so no reader arrives unseen in between.
    let mut events = hub.events().listen();
    let mut backoff = Backoff::default();
    tracing::info!(stream = %key, %url, protocol, mode = source.mode.as_str(), "pulled source configured");
    loop {
        if source.mode == PullMode::OnDemand
            && !wait_for_demand(&hub, &key, &mut events, &stop).await
        {
            break;
        }
        let started = Instant::now();
        match attempt(&hub, &*puller, &key, source.clone(), None, &stop).await {
            PullEnd::Stopped => break,
            PullEnd::Idle => {
                tracing::info!(stream = %key, %url, protocol, grace_secs = source.idle_grace_secs, "no players left: pull dropped");
                backoff.reset();
            }
            PullEnd::Failed(_) if stop.is_cancelled() => break,
            PullEnd::Failed(error) => {
                let delay = backoff.after(started.elapsed());
                tracing::warn!(stream = %key, %url, %error, ?delay, "{protocol} pull failed; retrying");
                tokio::select! {
                    () = stop.cancelled() => break,
                    () = tokio::time::sleep(delay) => {}
                }
            }
        }
    }
    tracing::info!(stream = %key, %url, protocol, "pulled source stopped");
}

/// Waits until `key` has a reader; `false` when stopped first.
async fn wait_for_demand(
    hub: &Hub,
    key: &StreamKey,
    events: &mut Receiver<HubEvent>,
    stop: &CancellationToken,
) -> bool {
    loop {
        if hub.reader_count(key) > 0 {
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
