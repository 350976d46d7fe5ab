//! Edge pulls, the same in both workers that pull for `Edge` rules (the rtmp worker for
//! RTMP origins, the ingest worker for SRT ones): a stream is pulled when it gets a reader
//! here, its app has an edge rule for this worker, and nobody produces it on this server;
//! at most `max` pulls run; the stream's holder by the cluster registry is tried first
//! ([`crate::cluster`]), then the rule's origins in order (the next one when a pull
//! fails, a [`Backoff`] wait after a round of failures), and a name the registry knows
//! nobody holds waits for its watch instead of probing the origins; a pull ends when its stream
//! has had no reader for the rule's grace, or its rule changed. The workers only say
//! which rules are theirs and how one origin is pulled ([`Puller`]).

use super::attempt::attempt;
use super::{PullEnd, Puller};
use crate::cluster::Resolution;
use crate::demand::{DemandWatch, Unwatched};
use crate::events::HubEvent;
use crate::hub::Hub;
use crate::key::StreamKey;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use strom_ipc::WorkerKind;
use strom_ipc::bus::StreamLocation;
use strom_ipc::rules::{EdgeRule, PullMode, PullSource, Rules};
use strom_worker_runtime::backoff::Backoff;
use strom_worker_runtime::sync::locked;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

struct Running {
    /// Tells this pull's entry from a later one of the same stream.
    id: u64,
    rule: EdgeRule,
    stop: CancellationToken,
}

/// A pull [`EdgePulls::begin`] admitted, run until `stop`.
struct EdgePull {
    key: StreamKey,
    rule: EdgeRule,
    id: u64,
    stop: CancellationToken,
}

/// The rules in force.
pub type RulesInForce = Box<dyn Fn() -> Arc<Rules> + Send + Sync>;

pub struct EdgePulls {
    hub: Hub,
    rules: RulesInForce,
    puller: Arc<dyn Puller>,
    /// The worker pulling; streams other workers produce are not pulled.
    own: WorkerKind,
    /// Whether an edge rule is pulled by this worker (its origins' protocol).
    ours: fn(&EdgeRule) -> bool,
    max: usize,
    running: Mutex<HashMap<StreamKey, Running>>,
    /// Streams other workers of this server produce (from the registry).
    produced_elsewhere: Mutex<HashSet<StreamKey>>,
    next_id: AtomicU64,
    shutdown: CancellationToken,
}

impl EdgePulls {
    /// Starts following the demand of `hub` until `shutdown`: each stream that gets a
    /// reader and that a rule of ours covers is pulled by `puller`.
    pub fn start(
        hub: Hub,
        own: WorkerKind,
        ours: fn(&EdgeRule) -> bool,
        max: usize,
        shutdown: CancellationToken,
        rules: RulesInForce,
        puller: Arc<dyn Puller>,
    ) -> Arc<Self> {
        let pulls = Arc::new(Self {
            hub,
            rules,
            puller,
            own,
            ours,
            max,
            running: Mutex::default(),
            produced_elsewhere: Mutex::default(),
            next_id: AtomicU64::new(1),
            shutdown,
        });
        follow(&pulls);
        pulls
    }

    /// New rules: stops the pulls whose rule changed or went away (a stream still read
    /// is pulled again by its new rule at once).
    pub fn apply(self: &Arc<Self>) {
        for key in self.stop_changed(&(self.rules)()) {
            self.demand(&key);
        }
    }

    /// `key` got a reader: pulls it when a rule of ours covers it and nobody produces it.
    fn demand(self: &Arc<Self>, key: &StreamKey) {
        if let Some(pull) = self.begin(&(self.rules)(), key) {
            let protocol = self.puller.protocol();
            let origins: Vec<String> = (pull.rule.origins.iter())
                .map(|origin| {
                    self.puller
                        .shown(&EdgeRule::url(origin, &key.app, &key.stream))
                })
                .collect();
            tracing::info!(stream = %key, ?origins, "edge: pulling on demand over {protocol}");
            tokio::spawn(run(Arc::clone(self), pull));
        }
    }

    /// The edge rule this worker pulls `key` by: an edge app whose rule is ours, and no
    /// explicit pulled source of the stream (which wins).
    fn rule_for<'a>(&self, rules: &'a Rules, key: &StreamKey) -> Option<&'a EdgeRule> {
        let explicit = rules
            .pull_sources
            .iter()
            .any(|p| p.app == key.app && p.stream == key.stream);
        rules
            .edge_for(&key.app)
            .filter(|rule| !explicit && (self.ours)(rule))
    }

    /// The supervisor's registry: remembers what other workers produce.
    pub fn apply_registry(&self, locations: &[StreamLocation]) {
        *locked(&self.produced_elsewhere) = locations
            .iter()
            .filter(|l| l.producer != self.own)
            .map(|l| StreamKey::new(l.app.clone(), l.stream.clone()))
            .collect();
    }

    /// The pull to start for `key`, when a rule of ours covers it, it still has readers,
    /// nobody produces it here and no pull of it runs.
    fn begin(&self, rules: &Rules, key: &StreamKey) -> Option<EdgePull> {
        let rule = self.rule_for(rules, key)?;
        if self.hub.reader_count(key) == 0 {
            return None;
        }
        let published = self
            .hub
            .get(key)
            .is_some_and(|stream| stream.publisher().is_some())
            || locked(&self.produced_elsewhere).contains(key);
        let mut running = locked(&self.running);
        if published || running.contains_key(key) {
            return None;
        }
        if running.len() >= self.max {
            // Viewers name streams: a flood of made-up names must not become a flood of
            // connections to the origins.
            strom_worker_runtime::limited_log!(warn, 5, Duration::from_secs(10); stream = %key, max = self.max, "edge: not pulling: too many edge pulls running");
            return None;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let stop = self.shutdown.child_token();
        running.insert(
            key.clone(),
            Running {
                id,
                rule: rule.clone(),
                stop: stop.clone(),
            },
        );
        Some(EdgePull {
            key: key.clone(),
            rule: rule.clone(),
            id,
            stop,
        })
    }

    /// Ends pull `id` of `key` unless its stream has readers again (`false`: go on). The
    /// check and the removal happen under the lock [`EdgePulls::begin`] takes, so a
    /// reader arriving meanwhile either keeps this pull or starts a new one.
    fn finish(&self, key: &StreamKey, id: u64) -> bool {
        let mut running = locked(&self.running);
        let ours = running.get(key).is_some_and(|r| r.id == id);
        if ours && !self.shutdown.is_cancelled() && self.hub.reader_count(key) > 0 {
            return false;
        }
        if ours {
            running.remove(key);
        }
        true
    }

    /// Stops the pulls whose rule changed or went away and returns their streams.
    fn stop_changed(&self, rules: &Rules) -> Vec<StreamKey> {
        let mut stopped = Vec::new();
        locked(&self.running).retain(|key, pull| {
            let keep = self.rule_for(rules, key) == Some(&pull.rule);
            if !keep {
                pull.stop.cancel();
                stopped.push(key.clone());
            }
            keep
        });
        stopped
    }
}

/// Pulls each stream of `pulls`' hub that gets its first reader, until shutdown.
fn follow(pulls: &Arc<EdgePulls>) {
    let mut events = pulls.hub.events().listen();
    let pulls = Arc::clone(pulls);
    tokio::spawn(async move {
        loop {
            let event = tokio::select! {
                () = pulls.shutdown.cancelled() => return,
                event = events.recv() => event,
            };
            match event {
                Ok(HubEvent::Demand(key)) => pulls.demand(&key),
                Ok(_) => {}
                Err(RecvError::Lagged(missed)) => {
                    tracing::warn!(
                        missed,
                        "edge: hub events missed; readers of missed streams wait for the next demand"
                    )
                }
                Err(RecvError::Closed) => return,
            }
        }
    });
}

/// What waiting for a name's registration ended with.
enum Registration {
    /// The registry changed: resolve again.
    Changed,
    /// No reader for the rule's grace.
    Idle,
    Stopped,
}

/// Waits, while `key` has readers, for the registry to change (a name nobody holds is
/// not probed at the origins: it is pulled from its holder once one registers it).
async fn wait_for_registration(
    pulls: &EdgePulls,
    key: &StreamKey,
    rule: &EdgeRule,
    stop: &CancellationToken,
) -> Registration {
    let mut changes = pulls.hub.cluster().changes();
    changes.mark_unchanged();
    if pulls.hub.cluster().resolve(key, rule.is_srt()) != Resolution::Unregistered {
        return Registration::Changed;
    }
    let mut events = pulls.hub.events().listen();
    let grace = Duration::from_secs(u64::from(rule.idle_grace_secs));
    let mut demand = DemandWatch::new(&pulls.hub, key, &mut events, true, grace);
    tokio::select! {
        () = stop.cancelled() => Registration::Stopped,
        changed = changes.changed() => match changed {
            Ok(()) => Registration::Changed,
            Err(_) => Registration::Stopped,
        },
        unwatched = demand.wait() => match unwatched {
            Unwatched::Idle => Registration::Idle,
            Unwatched::Closed => Registration::Stopped,
        },
    }
}

/// The origins to try for `key`, in order: its holder's advertised URL by the cluster
/// registry, then the rule's `origins`; `None` while the registry is current and
/// nobody holds the name.
fn round_of(pulls: &EdgePulls, key: &StreamKey, rule: &EdgeRule) -> Option<Vec<String>> {
    let mut round = Vec::with_capacity(rule.origins.len() + 1);
    match pulls.hub.cluster().resolve(key, rule.is_srt()) {
        Resolution::Unregistered => return None,
        Resolution::Holder { url: Some(url), .. } => round.push(url),
        Resolution::Holder { url: None, .. } | Resolution::Unknown => {}
    }
    for origin in &rule.origins {
        if !round.contains(origin) {
            round.push(origin.clone());
        }
    }
    Some(round)
}

/// Says where the registry sends the pull of `key`, when it names a holder.
fn log_holder(pulls: &EdgePulls, key: &StreamKey, rule: &EdgeRule) {
    match pulls.hub.cluster().resolve(key, rule.is_srt()) {
        Resolution::Holder {
            url: Some(url),
            server,
        } => {
            let url = pulls
                .puller
                .shown(&EdgeRule::url(&url, &key.app, &key.stream));
            tracing::info!(stream = %key, %server, %url, "edge: the cluster registry names the holder");
        }
        Resolution::Holder { url: None, server } => {
            let protocol = pulls.puller.protocol();
            tracing::warn!(stream = %key, %server, "edge: the holder advertises no {protocol} URL; trying the origins");
        }
        Resolution::Unregistered | Resolution::Unknown => {}
    }
}

/// Returns when the registry changes what `round` would be.
async fn round_changed(
    pulls: &EdgePulls,
    key: &StreamKey,
    rule: &EdgeRule,
    round: &[String],
    registry: &mut tokio::sync::watch::Receiver<u64>,
) {
    loop {
        if registry.changed().await.is_err() {
            return std::future::pending().await;
        }
        if round_of(pulls, key, rule).as_deref() != Some(round) {
            return;
        }
    }
}

/// Pulls the stream from its holder (by the cluster registry) and the rule's origins,
/// one after the other, until it has had no readers for the rule's grace, its rule
/// changes or the worker stops.
async fn run(pulls: Arc<EdgePulls>, pull: EdgePull) {
    let EdgePull {
        key,
        rule,
        id,
        stop,
    } = pull;
    let mut backoff = Backoff::default();
    'pulling: loop {
        let Some(round) = round_of(&pulls, &key, &rule) else {
            tracing::info!(stream = %key, "edge: no server holds the stream in the cluster registry: waiting for one");
            match wait_for_registration(&pulls, &key, &rule, &stop).await {
                Registration::Changed => continue,
                Registration::Stopped => break,
                Registration::Idle => {
                    if pulls.finish(&key, id) {
                        break;
                    }
                    continue;
                }
            }
        };
        log_holder(&pulls, &key, &rule);
        let mut registry = pulls.hub.cluster().changes();
        registry.mark_unchanged();
        let started = Instant::now();
        for (position, base) in round.iter().enumerate() {
            let source = PullSource {
                app: key.app.clone(),
                stream: key.stream.clone(),
                url: EdgeRule::url(base, &key.app, &key.stream),
                mode: PullMode::OnDemand,
                idle_grace_secs: rule.idle_grace_secs,
                rtsp_transport: Default::default(),
            };
            let url = pulls.puller.shown(&source.url);
            let end = attempt(
                &pulls.hub,
                &*pulls.puller,
                &key,
                source,
                Some(base.clone()),
                &stop,
            )
            .await;
            match end {
                PullEnd::Stopped => break 'pulling,
                PullEnd::Idle => {
                    tracing::info!(stream = %key, %url, grace_secs = rule.idle_grace_secs, "edge: no viewers left: pull dropped");
                    backoff.reset();
                    if pulls.finish(&key, id) {
                        break 'pulling;
                    }
                    continue 'pulling;
                }
                PullEnd::Failed(_) if stop.is_cancelled() => break 'pulling,
                PullEnd::Failed(error) => {
                    let next = round.get(position + 1).unwrap_or(&round[0]);
                    let next = (pulls.puller).shown(&EdgeRule::url(next, &key.app, &key.stream));
                    tracing::warn!(stream = %key, %url, %error, %next, "edge: pull failed; trying the next origin");
                }
            }
            if pulls.finish(&key, id) {
                break 'pulling;
            }
            if registry.has_changed().unwrap_or(false)
                && round_of(&pulls, &key, &rule).as_ref() != Some(&round)
            {
                registry.mark_unchanged();
                // A new holder (or none): start over from it, without a wait.
                continue 'pulling;
            }
        }
        // Every origin failed once: wait before the next round, or less when the
        // registry names a new holder meanwhile.
        let delay = backoff.after(started.elapsed());
        tokio::select! {
            () = stop.cancelled() => break,
            () = tokio::time::sleep(delay) => {}
            () = round_changed(&pulls, &key, &rule, &round, &mut registry) => {}
        }
    }
    pulls.finish(&key, id);
    tracing::info!(stream = %key, "edge: pull ended");
}
