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

use crate::client::backoff::Backoff;
use crate::client::session::{PLAYER_FLASH_VERSION, Setup};
use crate::client::traffic::Traffic;
use crate::pull::ingest::{PullEnd, pull};
use crate::shared::Shared;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use strom_ipc::rules::{EdgeRule, PullMode, PullSource, Rules};
use strom_stream::{HubEvent, StreamKey};
use strom_worker_runtime::sync::locked;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

/// Edge pulls running at most (each is a connection to an origin).
pub const MAX_EDGE_PULLS: usize = 1000;
/// Bound on each connection step and each write to an origin.
const STEP_LIMIT: Duration = Duration::from_secs(10);

struct Running {
    /// Tells this task's entry from a later one of the same stream.
    id: u64,
    rule: EdgeRule,
    stop: CancellationToken,
}

pub struct Edges {
    shared: Arc<Shared>,
    running: Mutex<HashMap<StreamKey, Running>>,
    /// Streams other workers of this server produce (from the registry): not pulled.
    produced_elsewhere: Mutex<HashSet<StreamKey>>,
    next_id: AtomicU64,
    shutdown: CancellationToken,
}

/// Whether `key` is pulled by its edge rule: an edge app, and no explicit pulled source.
fn edge_rule<'a>(rules: &'a Rules, key: &StreamKey) -> Option<&'a EdgeRule> {
    let explicit = rules
        .pull_sources
        .iter()
        .any(|p| p.app == key.app && p.stream == key.stream);
    rules.edge_for(&key.app).filter(|_| !explicit)
}

impl Edges {
    /// Starts following the hub's demand.
    pub fn start(shared: Arc<Shared>, shutdown: CancellationToken) -> Arc<Self> {
        let edges = Arc::new(Self {
            shared,
            running: Mutex::default(),
            produced_elsewhere: Mutex::default(),
            next_id: AtomicU64::new(1),
            shutdown,
        });
        tokio::spawn(follow(Arc::clone(&edges)));
        edges
    }

    /// New rules: stops the pulls whose rule changed or went away (a stream still
    /// watched is pulled again by its new rule at once).
    pub fn apply(self: &Arc<Self>) {
        let rules = self.shared.rules();
        let mut again = Vec::new();
        locked(&self.running).retain(|key, pull| {
            let keep = edge_rule(&rules, key) == Some(&pull.rule);
            if !keep {
                pull.stop.cancel();
                again.push(key.clone());
            }
            keep
        });
        for key in again {
            self.demand(&key);
        }
    }

    /// The supervisor's registry: remembers what other workers produce.
    pub fn apply_registry(&self, locations: &[strom_ipc::bus::StreamLocation]) {
        *locked(&self.produced_elsewhere) = locations
            .iter()
            .filter(|l| l.producer != strom_ipc::WorkerKind::Rtmp)
            .map(|l| StreamKey::new(l.app.clone(), l.stream.clone()))
            .collect();
    }

    /// `key` got its first reader: pull it when an edge rule covers it and nobody
    /// publishes it here.
    fn demand(self: &Arc<Self>, key: &StreamKey) {
        let rules = self.shared.rules();
        let Some(rule) = edge_rule(&rules, key) else {
            return;
        };
        if self.shared.streams.reader_count(key) == 0 {
            return;
        }
        let published = self
            .shared
            .streams
            .get(key)
            .is_some_and(|stream| stream.publisher().is_some())
            || locked(&self.produced_elsewhere).contains(key);
        let mut running = locked(&self.running);
        if published || running.contains_key(key) {
            return;
        }
        if running.len() >= MAX_EDGE_PULLS {
            // Viewers name streams: a flood of made-up names must not become a flood of
            // connections to the origins.
            strom_worker_runtime::limited_log!(warn, 5, Duration::from_secs(10); stream = %key, max = MAX_EDGE_PULLS, "edge: not pulling: too many edge pulls running");
            return;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let stop = self.shutdown.child_token();
        tracing::info!(stream = %key, origins = ?rule.origins, "edge: pulling on demand");
        tokio::spawn(run(
            Arc::clone(self),
            key.clone(),
            rule.clone(),
            id,
            stop.clone(),
        ));
        running.insert(
            key.clone(),
            Running {
                id,
                rule: rule.clone(),
                stop,
            },
        );
    }

    /// Ends task `id` of `key` unless its stream has readers again (`false`: go on). The
    /// check and the removal happen under the lock that [`Edges::demand`] takes, so a
    /// reader arriving meanwhile either keeps this task or starts a new one.
    fn finish(&self, key: &StreamKey, id: u64) -> bool {
        let mut running = locked(&self.running);
        if self.shared.streams.reader_count(key) > 0 && running.get(key).is_some_and(|r| r.id == id)
        {
            return false;
        }
        if running.get(key).is_some_and(|r| r.id == id) {
            running.remove(key);
        }
        true
    }
}

/// Starts pulls on demand.
async fn follow(edges: Arc<Edges>) {
    let mut events = edges.shared.streams.events().listen();
    loop {
        let event = tokio::select! {
            () = edges.shutdown.cancelled() => return,
            event = events.recv() => event,
        };
        match event {
            Ok(HubEvent::Demand(key)) => edges.demand(&key),
            Ok(_) => {}
            Err(RecvError::Lagged(missed)) => {
                tracing::warn!(
                    missed,
                    "edge: hub events missed; players of missed streams wait for the next demand"
                )
            }
            Err(RecvError::Closed) => return,
        }
    }
}

/// Pulls `key` from the rule's origins, one after the other, until it has no readers.
async fn run(edges: Arc<Edges>, key: StreamKey, rule: EdgeRule, id: u64, stop: CancellationToken) {
    let shared = &edges.shared;
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
        if edges.finish(&key, id) {
            break;
        }
    }
    if stop.is_cancelled() {
        edges.finish(&key, id);
    }
    tracing::info!(stream = %key, "edge: pull ended");
}
