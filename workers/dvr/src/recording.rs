//! Which streams are recorded: those the registry lists whose delivery includes `DVR`.
//! Each is relayed from its producer over the media bus into this worker's hub and read
//! by a recorder ([`crate::recorder`]) while it is listed; when it leaves the registry
//! (the publisher stopped) its recorder closes the period's last segment.

use crate::archives::Archives;
use crate::recorder::{Committed, record};
use crate::retention::enforce_limits;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use strom_ipc::WorkerKind;
use strom_ipc::bus::StreamLocation;
use strom_ipc::rules::{DeliveryOutput, Rules};
use strom_stream::bus::subscriber::{Relay, feed};
use strom_stream::{Hub, StreamKey};
use strom_worker_runtime::SessionIds;
use strom_worker_runtime::clock::unix_now_ms;
use strom_worker_runtime::sync::locked;
use tokio_util::sync::CancellationToken;

pub struct Recording {
    hub: Hub,
    archives: Arc<Archives>,
    ids: Arc<SessionIds>,
    data_dir: PathBuf,
    rules: Mutex<Arc<Rules>>,
    /// The latest registry, applied again when the rules change.
    registry: Mutex<Vec<StreamLocation>>,
    running: Mutex<HashMap<StreamKey, (StreamLocation, CancellationToken)>>,
    shutdown: CancellationToken,
}

impl Recording {
    pub fn new(
        archives: Arc<Archives>,
        rules: Rules,
        data_dir: PathBuf,
        ids: Arc<SessionIds>,
        shutdown: CancellationToken,
    ) -> Arc<Self> {
        Arc::new(Self {
            hub: Hub::default(),
            archives,
            ids,
            data_dir,
            rules: Mutex::new(Arc::new(rules)),
            registry: Mutex::new(Vec::new()),
            running: Mutex::new(HashMap::new()),
            shutdown,
        })
    }

    pub fn rules(&self) -> Arc<Rules> {
        Arc::clone(&locked(&self.rules))
    }

    pub fn set_rules(self: &Arc<Self>, rules: Rules) {
        self.archives.set_root(rules.dvr.root(&self.data_dir));
        *locked(&self.rules) = Arc::new(rules);
        let registry = locked(&self.registry).clone();
        self.apply_registry(registry);
    }

    /// Starts recording streams that appeared and stops those that are gone.
    pub fn apply_registry(self: &Arc<Self>, locations: Vec<StreamLocation>) {
        *locked(&self.registry) = locations.clone();
        let rules = self.rules();
        let wanted: HashMap<StreamKey, StreamLocation> = locations
            .into_iter()
            .filter(|l| {
                rules
                    .delivery
                    .for_stream(&l.app, &l.stream)
                    .has(DeliveryOutput::Dvr)
            })
            .filter(|l| strom_ipc::names::check_pair(&l.app, &l.stream).is_ok())
            .map(|l| (StreamKey::new(l.app.clone(), l.stream.clone()), l))
            .collect();
        let mut running = locked(&self.running);
        running.retain(|key, (location, stop)| {
            let keep = wanted.get(key) == Some(location);
            if !keep {
                stop.cancel();
            }
            keep
        });
        for (key, location) in wanted {
            if running.contains_key(&key) {
                continue;
            }
            let stop = self.shutdown.child_token();
            running.insert(key.clone(), (location.clone(), stop.clone()));
            tokio::spawn(Arc::clone(self).run(key, location, stop));
        }
    }

    async fn run(
        self: Arc<Self>,
        key: StreamKey,
        location: StreamLocation,
        stop: CancellationToken,
    ) {
        // The recording's place among the stream's readers, left when it ends.
        let reader = self
            .hub
            .own_reader(&key, strom_stream::Queue, self.ids.next_id());
        if location.producer != WorkerKind::Dvr {
            let relay = Relay::of(key.clone(), &location);
            tokio::spawn(feed(
                self.hub.clone(),
                relay,
                Arc::clone(&self.ids),
                stop.clone(),
            ));
        }
        let segment_secs = self.rules().dvr.segment_duration_secs;
        let retention = Arc::clone(&self);
        let committed: Committed = Arc::new(move |key, _entry| {
            let (depth, size_mb) = retention.rules().dvr.limits_for(&key.app, &key.stream);
            if let Ok(archive) = retention.archives.open(key) {
                match enforce_limits(
                    &archive,
                    depth,
                    size_mb.saturating_mul(1024 * 1024),
                    unix_now_ms(),
                ) {
                    Ok((0, _)) => {}
                    Ok((segments, bytes)) => {
                        tracing::info!(stream = %key, segments, bytes, "DVR retention removed old segments")
                    }
                    Err(e) => tracing::warn!(stream = %key, error = %e, "DVR retention failed"),
                }
            }
        });
        let archives = Arc::clone(&self.archives);
        record(key, reader.frames, archives, segment_secs, committed, stop).await;
    }
}
