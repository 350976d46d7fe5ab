//! Re-publishing: pushing live streams to other RTMP servers by rule (`rules.conf`,
//! owner 0, and the management API, owner 1).
//!
//! A rule matches the streams of `src_app` named `src_stream`, or all of them (present
//! and future) when `src_stream` is empty. There is one push per (rule, live stream): the
//! set of pushes is recomputed from the rules and the hub's live streams whenever either
//! changes (new rules, a publish or unpublish announced on the hub's events). A push
//! whose rule is gone or changed, or whose source stopped, is stopped; one that is wanted
//! and missing is started.

mod destination;
mod forward;
mod login;
mod push;
mod status;

use crate::shared::Shared;
use status::PushStatus;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use strom_ipc::rules::RepublishRule;
use strom_ipc::status::RepublishStatus;
use strom_stream::HubEvent;
use strom_stream::StreamKey;
use strom_worker_runtime::sync::locked;
use tokio::sync::broadcast::Receiver;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

pub struct Republisher {
    inner: Arc<Inner>,
}

struct Inner {
    shared: Arc<Shared>,
    rules: Mutex<Vec<RepublishRule>>,
    pushes: Mutex<HashMap<(String, StreamKey), Push>>,
    shutdown: CancellationToken,
}

struct Push {
    status: Arc<PushStatus>,
    stop: CancellationToken,
}

impl Republisher {
    /// Starts pushing by `rules` and follows the hub's publishes until `shutdown`.
    pub fn start(
        shared: Arc<Shared>,
        rules: Vec<RepublishRule>,
        shutdown: CancellationToken,
    ) -> Self {
        // Listen before the first reconcile, so no publish falls in between.
        let events = shared.streams.events().listen();
        let inner = Arc::new(Inner {
            shared,
            rules: Mutex::new(rules),
            pushes: Mutex::new(HashMap::new()),
            shutdown,
        });
        inner.reconcile();
        tokio::spawn(follow(Arc::clone(&inner), events));
        Self { inner }
    }

    /// Replaces the rules (a reload, or an API create or delete).
    pub fn apply(&self, rules: &[RepublishRule]) {
        *locked(&self.inner.rules) = rules.to_vec();
        self.inner.reconcile();
    }

    /// Every active push, ordered by rule and source stream.
    pub fn stats(&self) -> Vec<RepublishStatus> {
        let mut stats: Vec<RepublishStatus> = locked(&self.inner.pushes)
            .values()
            .map(|push| push.status.report())
            .collect();
        stats.sort_by(|a, b| (&a.rule_id, &a.src_stream).cmp(&(&b.rule_id, &b.src_stream)));
        stats
    }
}

pub(crate) fn matches(rule: &RepublishRule, key: &StreamKey) -> bool {
    rule.src_app == key.app && (rule.src_stream.is_empty() || rule.src_stream == key.stream)
}

impl Inner {
    fn reconcile(&self) {
        let rules = locked(&self.rules).clone();
        let mut wanted: HashMap<(String, StreamKey), (RepublishRule, String)> = HashMap::new();
        for stream in self.shared.streams.live() {
            let Some(publisher) = stream.publisher() else {
                continue;
            };
            for rule in rules.iter().filter(|rule| matches(rule, &stream.key)) {
                wanted.insert(
                    (rule.id.clone(), stream.key.clone()),
                    (rule.clone(), publisher.query.clone()),
                );
            }
        }
        let mut pushes = locked(&self.pushes);
        pushes.retain(|key, push| {
            let keep = wanted
                .get(key)
                .is_some_and(|(rule, _)| *rule == push.status.rule);
            if !keep {
                push.stop.cancel();
            }
            keep
        });
        for (key, (rule, query)) in wanted {
            if pushes.contains_key(&key) {
                continue;
            }
            let source = key.1.clone();
            let destination = destination::destination(&rule, &source.stream, &query);
            let status = Arc::new(PushStatus::new(rule, source, destination.stream.clone()));
            let stop = self.shutdown.child_token();
            tokio::spawn(push::run(
                Arc::clone(&self.shared),
                Arc::clone(&status),
                destination,
                stop.clone(),
            ));
            pushes.insert(key, Push { status, stop });
        }
    }
}

/// Recomputes the pushes whenever a stream is published or unpublished.
async fn follow(inner: Arc<Inner>, mut events: Receiver<HubEvent>) {
    loop {
        let event = tokio::select! {
            () = inner.shutdown.cancelled() => break,
            event = events.recv() => event,
        };
        match event {
            Ok(HubEvent::Published(_) | HubEvent::Unpublished(_)) | Err(RecvError::Lagged(_)) => {
                inner.reconcile()
            }
            Ok(HubEvent::Demand(_) | HubEvent::NoDemand(_) | HubEvent::TracksKnown(_)) => {}
            Err(RecvError::Closed) => break,
        }
    }
}
