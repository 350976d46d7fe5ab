//! Streams whose producer is another worker, read in this worker like its own: the
//! rtmp worker plays and re-publishes an SRT ingest, the ingest worker sends an RTMP
//! publish out over SRT.
//!
//! The supervisor's registry says which streams other workers produce. A relay (a bus
//! subscription feeding the stream into this worker's hub, [`super::subscriber`]) runs
//! while the stream has readers here or the worker's own rules want it (a re-publishing
//! rule, a TS output: the `wanted` predicate), and stops when neither is true any more.
//! Streams the worker produces itself are never relayed back into it.
//!
//! A worker may also relay streams the registry does not list yet ([`Unlisted`]): the
//! ingest worker reads a stream of an `Edge` app that its SRT viewers ask for from the
//! rtmp worker, whose on-demand pull that bus subscription (a reader there) starts.

use super::subscriber::{Relay, feed};
use crate::{Hub, HubEvent, StreamKey};
use std::collections::{HashMap, HashSet};
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
    /// Every stream the registry lists, this worker's own included.
    listed: HashSet<StreamKey>,
    /// Running relays and the location each one reads.
    running: HashMap<StreamKey, (StreamLocation, CancellationToken)>,
}

/// Whether the worker's rules want a stream relayed even without readers.
pub type Wanted = Box<dyn Fn(&StreamKey) -> bool + Send + Sync>;

/// Where to read a stream that has readers here but that the registry does not list
/// (`None`: nowhere, it is not relayed).
pub type Unlisted = Box<dyn Fn(&StreamKey) -> Option<StreamLocation> + Send + Sync>;

pub struct Relays {
    hub: Hub,
    ids: Arc<SessionIds>,
    /// The worker this runs in: its own streams are not relayed.
    own: WorkerKind,
    wanted: Wanted,
    unlisted: Option<Unlisted>,
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
        Self::start_with_unlisted(hub, ids, own, wanted, None, shutdown)
    }

    /// [`Relays::start`], also relaying streams with readers here that the registry does
    /// not list, from where `unlisted` says.
    pub fn start_with_unlisted(
        hub: Hub,
        ids: Arc<SessionIds>,
        own: WorkerKind,
        wanted: Wanted,
        unlisted: Option<Unlisted>,
        shutdown: CancellationToken,
    ) -> Arc<Self> {
        let relays = Arc::new(Self {
            hub,
            ids,
            own,
            wanted,
            unlisted,
            state: Mutex::default(),
            shutdown,
        });
        tokio::spawn(follow(Arc::clone(&relays)));
        relays
    }

    /// The registry changed: remember what other workers produce and reconcile.
    pub fn apply_registry(&self, locations: Vec<StreamLocation>) {
        let listed = locations
            .iter()
            .map(|l| StreamKey::new(l.app.clone(), l.stream.clone()))
            .collect();
        let remote = locations
            .into_iter()
            .filter(|l| l.producer != self.own)
            .filter(|l| strom_ipc::names::check_pair(&l.app, &l.stream).is_ok())
            .map(|l| (StreamKey::new(l.app.clone(), l.stream.clone()), l))
            .collect();
        {
            let mut state = locked(&self.state);
            state.remote = remote;
            state.listed = listed;
        }
        self.reconcile();
    }

    /// Starts the relays that are wanted and not running, stops those no longer wanted.
    pub fn reconcile(&self) {
        let hub = &self.hub;
        let mut state = locked(&self.state);
        let mut wanted: HashMap<StreamKey, StreamLocation> = state
            .remote
            .iter()
            .filter(|(key, _)| hub.reader_count(key) > 0 || (self.wanted)(key))
            .map(|(key, location)| (key.clone(), location.clone()))
            .collect();
        if let Some(unlisted) = &self.unlisted {
            for key in hub.read() {
                if state.listed.contains(&key) || published_here(hub, &key) {
                    continue;
                }
                if let Some(location) = unlisted(&key).filter(|l| l.producer != self.own) {
                    wanted.insert(key, location);
                }
            }
        }
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
                Relay::of(key.clone(), &location),
                Arc::clone(&self.ids),
                stop.clone(),
            ));
            state.running.insert(key, (location, stop));
        }
    }
}

/// Whether a publisher of this worker (not a relay) has `key`.
fn published_here(hub: &Hub, key: &StreamKey) -> bool {
    hub.get(key)
        .and_then(|stream| stream.publisher())
        .is_some_and(|publisher| publisher.relayed_from.is_none())
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use std::path::PathBuf;

    fn location(key: &StreamKey, producer: WorkerKind) -> StreamLocation {
        StreamLocation {
            app: key.app.clone(),
            stream: key.stream.clone(),
            producer,
            bus_path: PathBuf::from(format!("/nonexistent/{producer}.sock")),
        }
    }

    fn running(relays: &Relays) -> HashMap<StreamKey, StreamLocation> {
        locked(&relays.state)
            .running
            .iter()
            .map(|(key, (location, _))| (key.clone(), location.clone()))
            .collect()
    }

    /// Relays of the ingest worker with streams of `edge/*` read from the rtmp worker.
    fn edge_relays(hub: &Hub, shutdown: &CancellationToken) -> Arc<Relays> {
        Relays::start_with_unlisted(
            hub.clone(),
            Arc::new(SessionIds::new(1)),
            WorkerKind::Ingest,
            Box::new(|_| false),
            Some(Box::new(|key: &StreamKey| {
                (key.app == "edge").then(|| location(key, WorkerKind::Rtmp))
            })),
            shutdown.clone(),
        )
    }

    #[tokio::test]
    async fn unlisted_streams_with_readers_are_relayed_while_read() {
        let (hub, shutdown) = (Hub::default(), CancellationToken::new());
        let relays = edge_relays(&hub, &shutdown);
        let (edge, other) = (StreamKey::new("edge", "x"), StreamKey::new("live", "y"));
        let _edge_reader = hub.subscribe(&edge, 1);
        let _other_reader = hub.subscribe(&other, 2);
        relays.reconcile();
        let relayed = running(&relays);
        assert_eq!(
            relayed.len(),
            1,
            "only the edge stream: {:?}",
            relayed.keys()
        );
        assert_eq!(relayed[&edge], location(&edge, WorkerKind::Rtmp));

        // Listed by the registry later (the pull went live): the same relay goes on.
        relays.apply_registry(vec![location(&edge, WorkerKind::Rtmp)]);
        assert_eq!(running(&relays)[&edge], location(&edge, WorkerKind::Rtmp));
        relays.apply_registry(Vec::new());
        assert!(running(&relays).contains_key(&edge));

        // The last reader leaves: the relay stops.
        hub.leave(&edge, 1);
        relays.reconcile();
        assert!(running(&relays).is_empty());
        shutdown.cancel();
    }

    #[tokio::test]
    async fn streams_produced_here_are_not_relayed_as_unlisted() {
        let (hub, shutdown) = (Hub::default(), CancellationToken::new());
        let relays = edge_relays(&hub, &shutdown);
        let key = StreamKey::new("edge", "own");
        relays.apply_registry(vec![location(&key, WorkerKind::Ingest)]);
        let _reader = hub.subscribe(&key, 1);
        relays.reconcile();
        assert!(running(&relays).is_empty());
        shutdown.cancel();
    }

    #[tokio::test]
    async fn without_unlisted_only_the_registry_is_relayed() {
        let (hub, shutdown) = (Hub::default(), CancellationToken::new());
        let relays = Relays::start(
            hub.clone(),
            Arc::new(SessionIds::new(1)),
            WorkerKind::Ingest,
            Box::new(|_| false),
            shutdown.clone(),
        );
        let _reader = hub.subscribe(&StreamKey::new("edge", "x"), 1);
        relays.reconcile();
        assert!(running(&relays).is_empty());
        shutdown.cancel();
    }
}
