//! The cluster registry on etcd (`Cluster` in `rules.conf`): one lease per server, kept
//! alive from here; `servers/<id>` and a create-if-absent claim `streams/<app>/<stream>`
//! per stream produced here, all under that lease, so a dead server loses every key at
//! once when its lease expires and nothing is ever refreshed key by key; a watched copy
//! of the whole registry, sent to every worker ([`push`]), from which the gate refuses a
//! name another server holds and edges find a stream's holder.
//!
//! etcd is never on the media path: a publish is admitted or refused from the workers'
//! copy, and claimed afterwards ([`claims`]); a claim lost to a race makes the loser's
//! worker end its publisher when the copy says who won. While etcd is unreachable, media
//! flows, edges use the last copy, publishes are admitted unclaimed, and when it is back
//! every live stream is claimed again: a name claimed meanwhile by another server stays
//! theirs (etcd orders the claims; the later one loses).

mod claims;
mod copy;
mod keys;
mod push;
mod session;

use copy::RegistryCopy;
use std::collections::{BTreeSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use strom_ipc::WorkerKind;
use strom_ipc::cluster::ClusterSettings;
use strom_ipc::sync::locked;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

/// What the registry needs of the supervisor, which holds it (the supervisor's state
/// implements it; this module does not import the state).
pub trait Host: Send + Sync + 'static {
    /// The streams this server claims: live here, and not of one of its `Edge` apps
    /// (those it pulls from their holder).
    fn claimable(&self) -> BTreeSet<(String, String)>;
    /// Wakes when [`Host::claimable`] may have changed.
    fn claimable_changes(&self) -> watch::Receiver<u64>;
    /// The worker of `kind`, which gets the registry's copy.
    fn worker(&self, kind: WorkerKind) -> &Arc<crate::process::table::WorkerHandle>;
}

/// Samples kept for the latency percentiles.
const SAMPLES: usize = 1024;

/// Latencies in milliseconds, the last [`SAMPLES`].
#[derive(Debug, Default, Clone)]
pub struct Samples(VecDeque<f64>);

impl Samples {
    fn add(&mut self, duration: Duration) {
        if self.0.len() == SAMPLES {
            self.0.pop_front();
        }
        self.0.push_back(duration.as_secs_f64() * 1000.0);
    }

    /// The `q` quantile (0..=1) in milliseconds; 0 without samples.
    pub fn quantile(&self, q: f64) -> f64 {
        let mut sorted: Vec<f64> = self.0.iter().copied().collect();
        sorted.sort_by(f64::total_cmp);
        let index = ((sorted.len() as f64 - 1.0) * q).round() as usize;
        sorted.get(index).copied().unwrap_or(0.0)
    }

    pub fn last(&self) -> f64 {
        self.0.back().copied().unwrap_or(0.0)
    }
}

/// What the API and `/metrics` show of the registry.
#[derive(Debug, Default, Clone)]
pub struct Status {
    pub connected: bool,
    pub lease_id: i64,
    /// Streams this server holds in the registry.
    pub claims: usize,
    /// Claims of this server's streams that another server held already.
    pub lost_claims: u64,
    /// Client publishes the workers refused because another server holds the name.
    pub refused_publishes: u64,
    /// The last reason the registry was unreachable.
    pub last_error: Option<String>,
    /// A claim's transaction, sent to committed.
    pub claim_ms: Samples,
    /// This server's committed claim to its arrival through the watch: how late every
    /// server's copy is behind etcd.
    pub watch_lag_ms: Samples,
}

/// What the manager, the session and the pusher share.
struct Shared {
    status: Mutex<Status>,
    copy: Mutex<RegistryCopy>,
    /// The settings in force (`None`: no `Cluster` block).
    settings: watch::Sender<Option<ClusterSettings>>,
    push: mpsc::Sender<push::Push>,
    refused: AtomicU64,
}

/// The supervisor's handle on the registry.
pub struct Cluster {
    shared: Arc<Shared>,
    pushes: Mutex<Option<mpsc::Receiver<push::Push>>>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster").finish_non_exhaustive()
    }
}

/// Pushes queued for the workers at most (each is a batch of changes).
const PUSH_QUEUE: usize = 256;

impl Cluster {
    pub fn new(settings: Option<ClusterSettings>) -> Self {
        let (push, pushes) = mpsc::channel(PUSH_QUEUE);
        Self {
            shared: Arc::new(Shared {
                status: Mutex::default(),
                copy: Mutex::default(),
                settings: watch::Sender::new(settings),
                push,
                refused: AtomicU64::new(0),
            }),
            pushes: Mutex::new(Some(pushes)),
        }
    }

    /// Starts following the settings (connecting to etcd while there are some) and
    /// pushing the copy to the workers, until `stop`.
    pub fn start(&self, host: Arc<dyn Host>, stop: CancellationToken) {
        let Some(pushes) = locked(&self.pushes).take() else {
            return;
        };
        tokio::spawn(push::run(
            Arc::clone(&self.shared),
            Arc::clone(&host),
            pushes,
        ));
        tokio::spawn(session::manage(Arc::clone(&self.shared), host, stop));
    }

    /// New rules: a changed `Cluster` block reconnects with it (or leaves the registry).
    pub fn configure(&self, settings: Option<ClusterSettings>) {
        self.shared.settings.send_if_modified(|current| {
            let changed = *current != settings;
            *current = settings;
            changed
        });
    }

    /// A worker (re)started: it gets the whole copy.
    pub fn worker_ready(&self, kind: WorkerKind) {
        if self.shared.push.try_send(push::Push::Ready(kind)).is_err() {
            tracing::warn!(worker = %kind, "cluster: copy for a started worker not queued");
        }
    }

    /// A worker refused a publish of a name another server holds.
    pub fn publish_refused(&self) {
        self.shared.refused.fetch_add(1, Ordering::Relaxed);
    }

    pub fn settings(&self) -> Option<ClusterSettings> {
        self.shared.settings.borrow().clone()
    }

    pub fn status(&self) -> Status {
        let mut status = locked(&self.shared.status).clone();
        status.refused_publishes = self.shared.refused.load(Ordering::Relaxed);
        status
    }

    pub fn copy(&self) -> RegistrySnapshot {
        let copy = locked(&self.shared.copy);
        RegistrySnapshot {
            servers: copy.servers.clone().into_iter().collect(),
            streams: (copy.streams.iter())
                .map(|((app, stream), holder)| (app.clone(), stream.clone(), holder.clone()))
                .collect(),
        }
    }
}

/// The copy as the API lists it.
pub struct RegistrySnapshot {
    pub servers: Vec<(String, Vec<String>)>,
    pub streams: Vec<(String, String, String)>,
}
