//! Streams whose producer is another worker, read in this worker like its own: the
//! rtmp worker plays and re-publishes an SRT ingest, the ingest worker sends an RTMP
//! publish out over SRT.
//!
//! The supervisor's registry says which streams other workers produce. A relay (a bus
//! subscription feeding the stream into this worker's hub, [`super::subscriber`]) runs
//! while the stream has readers here or the worker's own rules want it (a re-publishing
//! rule, a TS output: the `wanted` predicate), and stops when neither is true any more.
//! Streams the worker produces itself are never relayed back into it.

use super::subscriber::{Relay, feed};
use crate::{Hub, HubEvent, StreamKey};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use strom_ipc::WorkerKind;
use strom_ipc::bus::StreamLocation;
use strom_worker_runtime::SessionIds;
use strom_worker_runtime::sync::locked;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

#[derive(Default)]
struct State {
    /// Streams other workers produce, by name.
    remote: HashMap<StreamKey, StreamLocation>,
    /// Running relays and the location each one reads.
    running: HashMap<StreamKey, (StreamLocation, CancellationToken)>,
}

/// Whether the worker's rules want a stream relayed even without readers.
pub type Wanted = Box<dyn Fn(&StreamKey) -> bool + Send + Sync>;

pub struct Relays {
    hub: Hub,
    ids: Arc<SessionIds>,
    /// The worker this runs in: its own streams are not relayed.
    own: WorkerKind,
    wanted: Wanted,
    state: Mutex<State>,
    shutdown: CancellationToken,
}

impl Relays {
    /// Starts following `hub`'s demand.
    pub fn start(
        hub: Hub,
        ids: Arc<SessionIds>,
        own: WorkerKind,
        wanted: Wanted,
        shutdown: CancellationToken,
    ) -> Arc<Self> {
        let relays = Arc::new(Self {
            hub,
            ids,
            own,
            wanted,
            state: Mutex::default(),
            shutdown,
        });
        tokio::spawn(follow(Arc::clone(&relays)));
        relays
    }

    /// The registry changed: remember what other workers produce and reconcile.
    pub fn apply_registry(&self, locations: Vec<StreamLocation>) {
        let remote = locations
            .into_iter()
            .filter(|l| l.producer != self.own)
            .filter(|l| strom_ipc::names::check_pair(&l.app, &l.stream).is_ok())
            .map(|l| (StreamKey::new(l.app.clone(), l.stream.clone()), l))
            .collect();
        locked(&self.state).remote = remote;
        self.reconcile();
    }

    /// Starts the relays that are wanted and not running, stops those no longer wanted.
    pub fn reconcile(&self) {
        let hub = &self.hub;
        let mut state = locked(&self.state);
        let wanted: HashMap<StreamKey, StreamLocation> = state
            .remote
            .iter()
            .filter(|(key, _)| hub.reader_count(key) > 0 || (self.wanted)(key))
            .map(|(key, location)| (key.clone(), location.clone()))
            .collect();
        state.running.retain(|key, (location, stop)| {
            let keep = wanted.get(key) == Some(location);
            if !keep {
                tracing::info!(stream = %key, producer = %location.producer, "relay stopped");
                stop.cancel();
            }
            keep
        });
        for (key, location) in wanted {
            if state.running.contains_key(&key) {
                continue;
            }
            let stop = self.shutdown.child_token();
            tracing::info!(stream = %key, producer = %location.producer, "relaying stream from another worker");
            tokio::spawn(feed(
                hub.clone(),
                Relay {
                    key: key.clone(),
                    bus_path: location.bus_path.clone(),
                    producer: location.producer.to_string(),
                },
                Arc::clone(&self.ids),
                stop.clone(),
            ));
            state.running.insert(key, (location, stop));
        }
    }
}

/// Reconciles when a stream gains its first reader or loses its last.
async fn follow(relays: Arc<Relays>) {
    let mut events = relays.hub.events().listen();
    loop {
        let event = tokio::select! {
            () = relays.shutdown.cancelled() => return,
            event = events.recv() => event,
        };
        match event {
            Ok(HubEvent::Demand(_) | HubEvent::NoDemand(_)) | Err(RecvError::Lagged(_)) => {
                relays.reconcile();
            }
            Ok(_) => {}
            Err(RecvError::Closed) => return,
        }
    }
}
