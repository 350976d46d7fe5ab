//! Which streams are transcoded: those the registry lists that a `Transcoding` ladder
//! covers, except renditions themselves (what this worker produces is never a source),
//! up to `max_concurrent` at once and while the running transcodes' ffmpeg use less CPU
//! than `cpu_budget_percent`; a source past either bound is refused with a log line and
//! taken when the registry next changes (a running transcode ends, a source comes). Each source is relayed from its producer
//! over the media bus into this worker's hub, where its [`Job`] reads it.

use crate::job::Job;
use crate::status::JobStatus;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use strom_ipc::WorkerKind;
use strom_ipc::bus::StreamLocation;
use strom_ipc::rules::Rules;
use strom_ipc::transcode_rules::Ladder;
use strom_stream::bus::subscriber::{Relay, feed};
use strom_stream::{Hub, StreamKey};
use strom_worker_runtime::SessionIds;
use strom_worker_runtime::sync::locked;
use tokio_util::sync::CancellationToken;

pub struct Jobs {
    hub: Hub,
    ids: Arc<SessionIds>,
    socket_dir: PathBuf,
    ffmpeg: PathBuf,
    rules: Mutex<Arc<Rules>>,
    /// The latest registry, applied again when the rules change.
    registry: Mutex<Vec<StreamLocation>>,
    running: Mutex<HashMap<StreamKey, Running>>,
    /// Sources refused for the bound, logged once each until they run or leave.
    refused: Mutex<Vec<StreamKey>>,
    shutdown: CancellationToken,
}

struct Running {
    location: StreamLocation,
    ladder: Ladder,
    stop: CancellationToken,
    status: Arc<JobStatus>,
}

impl Jobs {
    pub fn new(
        hub: Hub,
        ids: Arc<SessionIds>,
        rules: Rules,
        socket_dir: PathBuf,
        ffmpeg: PathBuf,
        shutdown: CancellationToken,
    ) -> Arc<Self> {
        Arc::new(Self {
            hub,
            ids,
            socket_dir,
            ffmpeg,
            rules: Mutex::new(Arc::new(rules)),
            registry: Mutex::new(Vec::new()),
            running: Mutex::new(HashMap::new()),
            refused: Mutex::new(Vec::new()),
            shutdown,
        })
    }

    pub fn set_rules(self: &Arc<Self>, rules: Arc<Rules>) {
        *locked(&self.rules) = rules;
        let registry = locked(&self.registry).clone();
        self.apply_registry(registry);
    }

    /// Starts transcoding sources that appeared and stops those that are gone (or
    /// whose ladder changed: they start again with the new one).
    pub fn apply_registry(self: &Arc<Self>, locations: Vec<StreamLocation>) {
        *locked(&self.registry) = locations.clone();
        let rules = Arc::clone(&locked(&self.rules));
        let settings = &rules.transcoding;
        let wanted: Vec<(StreamKey, StreamLocation, Ladder)> = locations
            .into_iter()
            .filter(|l| l.producer != WorkerKind::Transcoder)
            .filter(|l| strom_ipc::names::check_pair(&l.app, &l.stream).is_ok())
            .filter_map(|l| {
                let ladder = settings.ladder_for(&l.app, &l.stream)?.clone();
                Some((StreamKey::new(l.app.clone(), l.stream.clone()), l, ladder))
            })
            .collect();
        let mut running = locked(&self.running);
        running.retain(|key, job| {
            let keep = wanted
                .iter()
                .any(|(k, l, ladder)| k == key && *l == job.location && *ladder == job.ladder);
            if !keep {
                job.stop.cancel();
            }
            keep
        });
        let mut refused = locked(&self.refused);
        refused.retain(|key| wanted.iter().any(|(k, ..)| k == key));
        // What the running transcodes use, once: those started below have used nothing yet.
        let budget = settings
            .cpu_budget_percent
            .map_or_else(default_budget, f64::from);
        let used: f64 = running.values().map(|job| job.status.cpu_percent()).sum();
        for (key, location, ladder) in wanted {
            if running.contains_key(&key) {
                continue;
            }
            if running.len() >= settings.max_concurrent as usize {
                if !refused.contains(&key) {
                    tracing::warn!(stream = %key, max_concurrent = settings.max_concurrent, "transcode refused: Transcoding.max_concurrent transcodes run already");
                    refused.push(key);
                }
                continue;
            }
            if used >= budget {
                if !refused.contains(&key) {
                    tracing::warn!(stream = %key, cpu_percent = used, cpu_budget_percent = budget, "transcode refused: the running transcodes use Transcoding.cpu_budget_percent already");
                    refused.push(key);
                }
                continue;
            }
            refused.retain(|k| *k != key);
            let stop = self.shutdown.child_token();
            let status = self.start(&key, &location, &ladder, stop.clone());
            running.insert(
                key,
                Running {
                    location,
                    ladder,
                    stop,
                    status,
                },
            );
        }
    }

    fn start(
        &self,
        key: &StreamKey,
        location: &StreamLocation,
        ladder: &Ladder,
        stop: CancellationToken,
    ) -> Arc<JobStatus> {
        tokio::spawn(feed(
            self.hub.clone(),
            Relay::of(key.clone(), location),
            Arc::clone(&self.ids),
            stop.clone(),
        ));
        let job = Job {
            hub: self.hub.clone(),
            ids: Arc::clone(&self.ids),
            key: key.clone(),
            renditions: ladder.renditions.clone(),
            socket_dir: self.socket_dir.clone(),
            ffmpeg: self.ffmpeg.clone(),
            status: Arc::new(JobStatus::new(key.clone(), ladder.renditions.clone())),
        };
        let status = Arc::clone(&job.status);
        tokio::spawn(job.run(stop));
        status
    }

    /// Every running transcode as the API shows it, in stream order.
    pub fn status(&self) -> Vec<serde_json::Value> {
        let running = locked(&self.running);
        let mut keys: Vec<&StreamKey> = running.keys().collect();
        keys.sort_by_key(|k| (k.app.clone(), k.stream.clone()));
        keys.into_iter()
            .filter_map(|key| running.get(key))
            .map(|job| job.status.to_json())
            .collect()
    }
}

/// 75% of the machine's cores, in percent of one core.
fn default_budget() -> f64 {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    cores as f64 * 75.0
}
