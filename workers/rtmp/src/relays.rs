//! Streams whose producer is another worker (an MPEG-TS, SRT or RIST ingest, ...),
//! played and re-published by this worker like its own.
//!
//! The supervisor's registry says which streams other workers produce. A relay (a bus
//! subscription feeding the stream into this worker's hub, `strom_stream::bus`) runs
//! while the stream has readers here (RTMP players, pushes) or a re-publishing rule
//! wants it, and stops when neither is true any more. Streams the rtmp worker produces
//! itself are never relayed back into it.

use crate::republish::matches;
use crate::shared::Shared;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use strom_ipc::WorkerKind;
use strom_ipc::bus::StreamLocation;
use strom_stream::bus::subscriber::{Relay, feed};
use strom_stream::{HubEvent, StreamKey};
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

pub struct Relays {
    shared: Arc<Shared>,
    state: Mutex<State>,
    shutdown: CancellationToken,
}

impl Relays {
    /// Starts following the hub's demand.
    pub fn start(shared: Arc<Shared>, shutdown: CancellationToken) -> Arc<Self> {
        let relays = Arc::new(Self {
            shared,
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
            .filter(|l| l.producer != WorkerKind::Rtmp)
            .filter(|l| strom_ipc::names::check_pair(&l.app, &l.stream).is_ok())
            .map(|l| (StreamKey::new(l.app.clone(), l.stream.clone()), l))
            .collect();
        locked(&self.state).remote = remote;
        self.reconcile();
    }

    /// Starts the relays that are wanted and not running, stops those no longer wanted.
    pub fn reconcile(&self) {
        let rules = self.shared.rules();
        let hub = &self.shared.streams;
        let mut state = locked(&self.state);
        let wanted: HashMap<StreamKey, StreamLocation> = state
            .remote
            .iter()
            .filter(|(key, _)| {
                hub.reader_count(key) > 0 || rules.republish.iter().any(|rule| matches(rule, key))
            })
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
                Arc::clone(&self.shared.ids),
                stop.clone(),
            ));
            state.running.insert(key, (location, stop));
        }
    }
}

/// Reconciles when a stream gains its first reader or loses its last.
async fn follow(relays: Arc<Relays>) {
    let mut events = relays.shared.streams.events().listen();
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
